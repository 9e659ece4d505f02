/*
 * workload.h - a scenario: model, plan and cluster, from a workload file
 * and flags.
 *
 *   <workload>
 *     <model preset="gpt3-175b"/>                 model settings (model.h)
 *       (or <model config="config.json" seq="4096"/>: a Hugging Face
 *        config.json, relative to the workload file; hfconfig.h)
 *     <plan tp="8" pp="8" global_batch="1536"     plan settings (plan.h)
 *           schedule="interleaved:2" recompute="full"/>
 *     <cluster preset="selene" gpus="1024"/>      cluster settings (cluster.h)
 *   </workload>
 *
 * Flags override the file: --model NAME (or --model FILE.json) and every
 * model, plan and cluster
 * setting as --name-with-dashes (--layers, --tp, --global-batch, --gpus...).
 */
#ifndef WEFT_WORKLOAD_H
#define WEFT_WORKLOAD_H

#include "platforms/cluster.h"
#include "workloads/hfconfig.h"
#include "workloads/model.h"
#include "workloads/plan.h"

struct workload {
  char name[WEFT_MAX_NAME];
  struct model model;
  bool have_model;
  bool model_is_config;    /* read from a config.json (hfconfig.h) */
  struct hfconfig_note hf; /* what that reading left to check or say */
  struct plan plan;
  struct cluster_desc cluster;
  bool have_cluster;
};

void workload_init(struct workload *w);

/* Start a model of no preset, named "custom": bf16, dense, GELU FFN, GPT
 * style; layers, hidden, heads, ffn, vocab and seq are left for the
 * caller to set (model_check refuses the model until they are). */
void workload_custom_model(struct workload *w);

/* Read a workload file; inline hardware of its <cluster> goes into `cat`. */
int workload_read_file(struct workload *w, struct catalog *cat,
                       const char *path, struct weft_err *err) WEFT_WUR;

/* Apply flag --name=value.  Returns 0, an error, or 1 when `name` is not a
 * workload flag (the caller may know it). */
int workload_flag(struct workload *w, const char *name, const char *value,
                  struct weft_err *err) WEFT_WUR;

/* On a cluster with an uneven last rack (cluster.h, last_node_gpus),
 * whether plan p places its TP groups and its expert groups (EP, expert
 * TP, the dispatchers' TP x EP) inside racks, each group's collectives in
 * one NVLink domain as weft times them; 0, or an error naming the GPU
 * count's origin (`gpus_origin`) and the first group that straddles two
 * racks.  Any plan passes on other clusters.  workload_resolve calls it. */
int workload_check_racks(const struct plan *p, const struct cluster *c,
                         const char *gpus_origin,
                         struct weft_err *err) WEFT_WUR;

/* Check everything and resolve the cluster and the plan against each
 * other.  `default_cluster` is used when no cluster was given. */
int workload_resolve(struct workload *w, const struct catalog *cat,
                     const char *default_cluster, struct cluster *out_cluster,
                     struct weft_err *err) WEFT_WUR;

/* The same, leaving the plan unresolved (for a search over plans). */
int workload_resolve_hw(struct workload *w, const struct catalog *cat,
                        const char *default_cluster,
                        struct cluster *out_cluster,
                        struct weft_err *err) WEFT_WUR;

#endif
