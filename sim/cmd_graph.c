/*
 * cmd_graph.c - `weft graph [WORKLOAD.xml] [flags] [-o FILE]`: build the
 * task graph of one iteration and write it (traces/README.md), with a
 * summary of its size, FLOPs and memory on stderr.
 */
#include <stdio.h>
#include <string.h>

#include "sim/base/units.h"
#include "sim/workload_opts.h"
#include "workloads/accounting.h"
#include "workloads/builder.h"

int cmd_graph(int argc, char **argv)
{
  static const char *const own[] = {"output", NULL};
  const char *vals[] = {NULL, NULL};
  struct workload w;
  struct catalog *cat;
  struct cluster c;
  struct weft_err err = {0};
  int usage;
  if (workload_opts_resolve(argc, argv, "graph", own, vals, &w, &cat, &c,
                            &err, &usage))
    return usage ? cli_usage("%s", err.msg) : cli_fail(&err);
  const char *out = vals[0] ? vals[0] : "-";
  struct graph *g = build_graph(&w.model, &w.plan, &err);
  int rc = 0;
  if (!g || graph_write(g, out, &err))
    rc = cli_fail(&err);
  if (!rc) {
    struct memory mem;
    memory_per_gpu(&w.model, &w.plan, c.gpu.hbm_bytes, &mem);
    char a[32], b[32], d[32], e[32];
    fprintf(stderr, "weft: %s on %ld GPUs (TP %ld, PP %ld, DP %ld): %ld "
            "stage programs, %ld tasks; %s model FLOPs, %s with "
            "recomputation; %s per GPU of %s (%s)\n", w.model.name,
            w.plan.gpus, w.plan.tp, w.plan.pp, w.plan.dp, g->stages,
            graph_total_tasks(g),
            units_fmt_human(model_flops_per_iter(&w.model,
                                                 w.plan.global_batch),
                            UNIT_NONE, a, sizeof a),
            units_fmt_human(graph_total_flops(g, GRAPH_ALL_PHASES), UNIT_NONE, b, sizeof b),
            units_fmt_human(mem.total, UNIT_SIZE, d, sizeof d),
            units_fmt_human(mem.capacity, UNIT_SIZE, e, sizeof e),
            mem.fits ? "fits" : "does NOT fit");
  }
  graph_free(g);
  catalog_free(cat);
  return rc;
}
