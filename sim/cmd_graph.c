/*
 * cmd_graph.c - `weft graph [WORKLOAD.xml] [flags] [-o FILE]`: build the
 * task graph of one iteration and write it (traces/README.md), with a
 * summary of its size, FLOPs and memory on stderr.
 */
#include <stdio.h>
#include <string.h>

#include "sim/base/units.h"
#include "sim/commands.h"
#include "workloads/accounting.h"
#include "workloads/builder.h"

/* The keys of the options below (opts_get), one per entry. */
enum graph_opt {
  GRAPH_OUTPUT, GRAPH_FORCE, GRAPH_COUNT
};

static const struct opt graph_opts[] = {
    [GRAPH_OUTPUT] = {"output", 'o', OPT_VALUE, "FILE",
      "where to write the graph (default: standard output)"},
    [GRAPH_FORCE] = {"force", 0, OPT_FLAG, NULL,
      "build a graph that exceeds the memory limit"},
    [GRAPH_COUNT] = {NULL, 0, 0, NULL, NULL},
};
OPTS_CHECK_TABLE(graph_opts, GRAPH_COUNT);

const struct opts_spec cmd_graph_spec = {
    "graph", POS_WORKLOAD, "WORKLOAD.xml",
    OPTS_CATALOG | OPTS_CLUSTER | OPTS_WORKLOAD, graph_opts,
    "Writes the task graph of one training iteration (one program per\n"
    "pipeline stage; the format is in traces/README.md) and prints its size,\n"
    "FLOPs and memory per GPU on standard error.  The default cluster is\n"
    "selene (DGX A100 80GB).",
    "  weft graph --model gpt-1.7b --gpus 8 --tp 2 --global-batch 16 -o g.txt\n"};

int cmd_graph(int argc, char **argv)
{
  struct opts o;
  int code;
  if (cli_parse(&cmd_graph_spec, argc, argv, &o, &code))
    return code;
  struct workload w;
  struct catalog *cat;
  struct cluster c;
  struct weft_err err = {0};
  if (opts_workload(&o, "selene", &w, &cat, &c, &err))
    return cli_fail(&err);
  const char *out = opts_get(&o, GRAPH_OUTPUT);
  if (!out)
    out = "-";
  struct graph *g = NULL;
  int rc = 0;
  if (job_check_size(&w, opts_get(&o, GRAPH_FORCE), &err) ||
      !(g = build_graph(&w.model, &w.plan, &err)) ||
      graph_write(g, out, &err))
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
