/*
 * report.h - the results of one simulated iteration, derived once from the
 * replay and the workload (throughput, MFU, energy, memory) and printed as
 * the text summary or the JSON object of `weft run`.  Text, JSON and the
 * results columns of `weft sweep` read the same numbers; the JSON's fields
 * are the one table of sim/report_fields.h.  Part of the command layer: it
 * prints.
 */
#ifndef WEFT_REPORT_H
#define WEFT_REPORT_H

#include <stdio.h>

#include "platforms/cluster.h"
#include "sim/engine.h"
#include "sim/graph/graph.h"
#include "sim/report_fields.h"
#include "workloads/accounting.h"
#include "workloads/closedform.h"
#include "workloads/goodput.h"
#include "workloads/workload.h"

struct report {
  const struct workload *w;    /* borrowed: the job as resolved */
  const struct cluster *c;     /* borrowed */
  struct engine_result res;    /* the replay's */
  struct memory mem;           /* per GPU, the most loaded stage */
  double gpus, iteration_s;
  double hw_flops_per_gpu;     /* FLOP/s, Megatron's count (with
                                  recomputation) */
  double model_flops_per_gpu;  /* FLOP/s, the model's FLOPs only */
  double peak_flops;           /* of the GPU in the compute type */
  double tokens_per_s;
  double tokens;               /* per iteration */
  /* GPU energy (boards only), all GPUs, the sum of four terms: kernels
   * other than the memory-bound ones at the board's power while computing
   * (TDP, or less under power_cap or clock; cluster.h active_w), the
   * memory-bound kernels (norms, elementwise, embedding, loss) at mem_w,
   * exposed communication at comm_w and idle time (bubbles, waiting for
   * peers) at idle power; report.c gives the sources. */
  double energy_j;
  double e_kernel_j, e_mem_j, e_comm_j, e_idle_j; /* its terms */
  double mem_bound_s; /* per GPU: the memory-bound kernels' time (mean) */
  /* The scale-out fabric's energy (0 on one node): every NIC port and
   * switch of the job's fabric at idle power all along, plus the
   * difference to full power for the time its traffic keeps it busy (the
   * closed form's bytes over the port's bandwidth; a port's full power is
   * line rate both ways, and the traffic is symmetric, so a byte sent and
   * received keeps one port-direction pair busy once).  have_nic_power and
   * have_switch say whether the catalog gave their figures. */
  double nic_energy_j, switch_energy_j;
  bool have_nic_power, have_switch;
  long nic_ports, switches;
  double cost_per_mtoken;      /* from gpu_hour_price; 0 when not given */
  struct closed_form cf;       /* the literature's estimate */
  double sim_wall_s;           /* wall time of the whole command */
  /* Compute time by family of kernel, seconds per GPU (they sum to
   * res.compute_s): GEMMs, attention, memory-bound kernels (norms,
   * element-wise, embedding, loss), the optimizer step. */
  double gemm_s, attention_s, memory_bound_s, optimizer_s;
  /* When the job does not fit: the first single change, in the order of
   * report.c's fit_changes, that would ("--recompute full"), with the
   * memory it would take; empty when it fits or none does. */
  char fit_hint[64];
  double fit_hint_bytes;
  /* Gradient compression (plan.h, enum compress): the encoding and
   * decoding kernels' time per GPU, Agarwal et al.'s model of this run
   * and its data-parallel bytes (closedform.h), and the same run without
   * compression, simulated by the caller (base_iteration_s 0 when not). */
  double codec_s;
  struct ddp_model ddp, base_ddp;
  double base_iteration_s;
  /* The engine settings of the run (set by the caller, for the JSON). */
  const char *collective, *fidelity;
  bool every_rank, kernel_table;
  /* Failures, checkpoints and goodput of a long run (--train-days,
   * --train-tokens; workloads/goodput.h), set by weft run; NULL: not
   * asked, and the JSON has no goodput object. */
  const struct goodput *goodput;
  const char *fail_rates;      /* the failure-rate table's name */
  /* The iteration time over seeded replays (a sweep's `iterations`,
   * sim/cmd_sweep.c); NULL: one iteration, and the JSON has no
   * iterations object. */
  const struct iter_stats *iters;
  /* Print held_by_rank and held_by_rank_s at the top level (a sweep's
   * columns), from res.path: needs engine_params.breakdown and
   * stragglers (engine.h); weft run prints them under --breakdown's
   * critical_path only. */
  bool held_cols;
};

/* The spread of the iteration time over n replays of one job, the GPUs'
 * speeds drawn from gpu_seed, gpu_seed + 1, ... (sim/cmd_sweep.c). */
struct iter_stats {
  long n;
  unsigned long seed0;     /* the first replay's gpu_seed */
  double min_s, median_s, mean_s, max_s;
  double p90_s, p99_s;     /* nearest rank: the ceil(p n)-th smallest */
  double even_s;           /* the same job without variation (gpu_sigma 0) */
};

/* The version of --json's layout (the README's table of its fields). */
#define REPORT_JSON_SCHEMA 2

/* The fields of the JSON object, from the one table of them
 * (sim/report_fields.h): RF_<ID> indexes report_fields. */
enum report_type { RT_NUM, RT_LONG, RT_BOOL, RT_STR, RT_WORD, RT_SETTING,
                   RT_HOOK };
enum report_kind { RK_COL, RK_LEAD, RK_NOCOL };
#define REPORT_FIELD_ID(id, name, type, fmt, kind, when, value) RF_##id,
enum report_field { REPORT_FIELDS(REPORT_FIELD_ID) RF_COUNT };
#undef REPORT_FIELD_ID

struct report_field_info {
  const char *name;       /* dotted: "memory.total_bytes" */
  enum report_type type;  /* how it is printed (report_fields.h) */
  const char *fmt;        /* printf format of RT_NUM, else NULL */
  enum report_kind kind;  /* RK_COL: a column of report_columns */
};
extern const struct report_field_info report_fields[RF_COUNT];

/* Derive the metrics of a replay of `g` (built from w) on `c`, computing
 * in `dtype`.  w and c stay borrowed by *out. */
void report_fill(struct report *out, const struct workload *w,
                 const struct cluster *c, const struct graph *g,
                 const struct engine_result *res, enum dtype dtype,
                 double sim_wall_s);

/* A JSON number with printf format `fmt`, or null when it is not finite
 * (JSON has no inf or NaN), after `sep` and the key. */
void report_json_num(FILE *f, const char *sep, const char *key,
                     const char *fmt, double v);

/* The columns of a sweep's results (weft sweep): every scalar of the JSON
 * object without --breakdown, by its flattened key ("memory.total_bytes",
 * "inputs.plan.tp"), in the object's order, the conditional ones
 * (memory.fit_hint, memory.fit_hint_bytes) included: the RK_COL rows of
 * the field table.  Left out: the wall time (sim_wall_s), which differs
 * from run to run, and the leading model, gpus, tp, pp, dp, cp, ep, zero
 * and shard_impl, which repeat inputs.* (and would clash with a study's
 * own columns).  NULL-terminated; test_report checks it against the JSON
 * both ways. */
extern const char *const report_columns[];

/* The summary of `weft run`, and its JSON object (one line). */
void report_print_text(FILE *f, const struct report *r);
void report_print_json(FILE *f, const struct report *r);

#endif
