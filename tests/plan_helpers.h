/*
 * plan_helpers.h - shared by the workload tests: build the graph of a
 * preset model under a plan given as name/value pairs, and check that a
 * plan is refused with an exact message.  Header-only (static) so that each
 * test program stays one file plus this.
 */
#ifndef WEFT_TEST_PLAN_HELPERS_H
#define WEFT_TEST_PLAN_HELPERS_H

#include <criterion/criterion.h>
#include <stdio.h>

#include "platforms/catalog.h"
#include "platforms/cluster.h"
#include "sim/engine.h"
#include "sim/platload.h"
#include "workloads/builder.h"

#define KV(...) ((const char *const[]){__VA_ARGS__, NULL})

/* selene with `nodes` nodes of one GPU and one NIC each (no NVLink peers),
 * resolved against the built-in catalog, which *cat receives (the caller
 * frees it). */
static inline struct cluster one_gpu_nodes(struct catalog **cat, int nodes)
{
  struct weft_err err = {0};
  *cat = catalog_builtin(&err);
  cr_assert(*cat, "%s", err.msg);
  struct cluster_desc d;
  cluster_desc_init(&d);
  cr_assert_eq(cluster_desc_preset(&d, "selene", &err), 0);
  char n[16];
  snprintf(n, sizeof n, "%d", nodes);
  cr_assert_eq(cluster_desc_set(&d, CK_GPUS_PER_NODE, "1", "t", 2, &err), 0,
               "%s", err.msg);
  cr_assert_eq(cluster_desc_set(&d, CK_NICS_PER_NODE, "1", "t", 2, &err), 0,
               "%s", err.msg);
  cr_assert_eq(cluster_desc_set(&d, CK_GPUS, n, "t", 2, &err), 0, "%s",
               err.msg);
  struct cluster c;
  cr_assert_eq(cluster_resolve(&d, *cat, &c, &err), 0, "%s", err.msg);
  return c;
}

/* The graph of preset `model`, cut to `layers` layers (0: the preset's),
 * under the plan kv (and model settings in it) on `gpus` GPUs. */
static inline struct graph *build_layers(const char *model, long layers,
                                         long gpus, const char *const *kv,
                                         struct model *m, struct plan *p)
{
  struct weft_err err = {0};
  cr_assert_eq(model_from_preset(m, model, &err), 0, "%s", err.msg);
  if (layers > 0)
    m->layers = layers;
  plan_init(p);
  /* kv: plan settings, and model settings where no plan setting has the
   * name (shared_ffn, ...). */
  for (int i = 0; kv[i]; i += 2) {
    int mk = model_key_from_name(kv[i]);
    if (plan_key_from_name(kv[i]) < 0 && mk >= 0) {
      cr_assert_eq(model_set(m, (enum model_key)mk, kv[i + 1], kv[i], &err),
                   0, "%s", err.msg);
      continue;
    }
    cr_assert_eq(plan_set(p, plan_key_from_name(kv[i]), kv[i + 1], kv[i], &err),
                 0, "%s", err.msg);
  }
  cr_assert_eq(plan_resolve(p, m, gpus, &err), 0, "%s", err.msg);
  struct graph *g = build_graph(m, p, &err);
  cr_assert(g, "%s", err.msg);
  return g;
}

static inline struct graph *build(const char *model, long gpus,
                                  const char *const *kv, struct model *m,
                                  struct plan *p)
{
  return build_layers(model, 0, gpus, kv, m, p);
}

/* Two one-GPU nodes of selene, loaded into SimGrid on the first call (one
 * platform per process; replays may follow one another on it). */
static inline const struct cluster *two_nodes_loaded(void)
{
  static struct cluster two;
  static struct catalog *cat;
  if (!cat) {
    struct weft_err err = {0};
    two = one_gpu_nodes(&cat, 2);
    platload_boot(0);
    cr_assert_eq(platload_cluster(&two, &err), 0, "%s", err.msg);
  }
  return &two;
}

/* Iteration time of one replay of g on c (free_comm: communication takes no
 * time). */
static inline double replay_s(const struct graph *g, const struct cluster *c,
                              bool free_comm)
{
  struct weft_err err = {0};
  struct engine_params ep;
  engine_params_default(&ep);
  ep.free_comm = free_comm;
  struct engine_result res = {0};
  cr_assert_eq(engine_run(g, c, &ep, &res, &err), 0, "%s", err.msg);
  engine_result_free(&res);
  return res.iteration_s;
}

/* The flags kv ("--name value" pairs without dashes) on `gpus` GPUs must be
 * refused with exactly `msg`. */
static inline void refused(const char *model, const char *const *kv,
                           long gpus, const char *msg)
{
  struct model m;
  cr_assert_eq(model_from_preset(&m, model, NULL), 0);
  struct plan p;
  plan_init(&p);
  struct weft_err err = {0};
  int rc = 0;
  for (int i = 0; kv[i] && !rc; i += 2) {
    char o[64]; /* the longest flag, --overlap-moe-expert-parallel-comm */
    snprintf(o, sizeof o, "--%s", kv[i]);
    rc = plan_set(&p, plan_key_from_name(kv[i]), kv[i + 1], o, &err);
  }
  if (!rc)
    rc = plan_resolve(&p, &m, gpus, &err);
  cr_assert_neq(rc, 0, "plan accepted");
  cr_assert_str_eq(err.msg, msg);
}

/* Bytes (and, in *n if not NULL, the number) of the collectives `op` on
 * group `gk` in stage `stage`'s program with the given phase, layer and
 * micro-batch; phase < 0, layer < -1 or mb < -1 match any. */
static inline double coll_sum(const struct graph *g, long stage,
                              enum coll_op op, enum group_kind gk, int phase,
                              long layer, long mb, long *n)
{
  double b = 0;
  long k = 0;
  const struct program *pr = &g->prog[stage];
  for (long i = 0; i < pr->n; i++) {
    const struct task *t = &pr->tasks[i];
    if (t->kind == TK_COLL && t->op == op && t->group == gk &&
        (phase < 0 || t->phase == phase) && (layer < -1 || t->layer == layer) &&
        (mb < -1 || t->mb == mb)) {
      b += t->bytes;
      k++;
    }
  }
  if (n)
    *n = k;
  return b;
}

#endif
