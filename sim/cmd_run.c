/*
 * cmd_run.c - `weft run [WORKLOAD.xml] [flags]`: simulate one training
 * iteration and report where the time goes (or --json).
 *
 * With no workload, a built-in scenario: GPT 18.4B (Megatron Table 1) on
 * 64 A100 of Selene, TP 4 x PP 2 x DP 8, interleaved 1F1B, full
 * recomputation.
 */
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "sim/base/units.h"
#include "sim/engine.h"
#include "sim/platload.h"
#include "sim/workload_opts.h"
#include "workloads/accounting.h"
#include "traces/trace.h"
#include "workloads/builder.h"

static void record(void *ctx, long rank, long task, double s, double e)
{
  trace_add(ctx, rank, task, s, e);
}

static int gpus_per_node;

static void record_flow(void *ctx, long src, long dst, double bytes,
                        double s, double e)
{
  trace_add_flow(ctx, src, dst, src / gpus_per_node == dst / gpus_per_node,
                 bytes, s, e);
}

static const char *const default_args[] = {
    "run", "--model", "gpt-18.4b", "--cluster", "selene", "--gpus", "64",
    "--tp", "4", "--pp", "2", "--global-batch", "128", "--schedule",
    "interleaved:2", "--recompute", "full"};

static double wall(void)
{
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

int cmd_run(int argc, char **argv)
{
  double t0 = wall();
  static const char *const own[] = {"json", "kernel-table", "paje",
                                    "chrome", "collective", "fidelity", NULL};
  const char *vals[] = {NULL, NULL, NULL, NULL, NULL, NULL, NULL};
  /* --json takes no value: strip it before the generic parser sees it. */
  bool json = false;
  char *args[256];
  int n = 0;
  for (int i = 0; i < argc && n < 255; i++) {
    if (strcmp(argv[i], "--json") == 0)
      json = true;
    else
      args[n++] = argv[i];
  }
  /* No model and no workload file: the demo job, with the given flags on
   * top of it (weft run --collective tree, weft run --gpus 128, ...). */
  bool scenario = false;
  for (int i = 1; i < n; i++) {
    if (strcmp(args[i], "--model") == 0 || strncmp(args[i], "--model=", 8) == 0)
      scenario = true;
    else if (args[i][0] != '-' && strcmp(args[i - 1], "-o") != 0 &&
             (i == 1 || strncmp(args[i - 1], "--", 2) != 0 ||
              strchr(args[i - 1], '=')))
      scenario = true; /* a positional workload file */
  }
  if (!scenario) {
    size_t nd = sizeof default_args / sizeof *default_args;
    if (n - 1 + nd < 255) {
      memmove(args + nd, args + 1, sizeof *args * (size_t)(n - 1));
      for (size_t i = 0; i < nd; i++)
        args[i] = (char *)default_args[i];
      n += (int)nd - 1;
    }
  }
  args[n] = NULL;
  struct workload w;
  struct catalog *cat;
  struct cluster c;
  struct weft_err err = {0};
  int usage;
  if (workload_opts_resolve(n, args, "run", own, vals, &w, &cat, &c, &err,
                            &usage))
    return usage ? cli_usage("%s", err.msg) : cli_fail(&err);
  struct engine_params ep;
  engine_params_default(&ep);
  ep.dtype = w.model.dtype;
  if (vals[4]) {
    int a = coll_algo_from_name(vals[4]);
    if (a < 0) {
      catalog_free(cat);
      return cli_usage("--collective: unknown algorithm '%s' (see weft list "
                       "collectives)", vals[4]);
    }
    ep.algo = (enum coll_algo)a;
  }
  if (vals[5]) {
    int f = fidelity_from_name(vals[5]);
    if (f < 0) {
      catalog_free(cat);
      return cli_usage("--fidelity: '%s' is not flow, step or auto", vals[5]);
    }
    ep.fidelity = (enum fidelity)f;
  }
  struct cost_table *table = NULL;
  int rc = 0;
  if (vals[1] && !(table = cost_table_read(vals[1], &err)))
    rc = 1;
  ep.table = table;
  struct graph *g = rc ? NULL : build_graph(&w.model, &w.plan, &err);
  struct engine_result res;
  struct trace *tr = NULL;
  if (!rc && !g)
    rc = 1;
  if (!rc && (vals[2] || vals[3])) {
    tr = trace_new(g);
    ep.on_task = record;
    gpus_per_node = c.gpus_per_node;
    ep.on_flow = record_flow;
    ep.ctx = tr;
  }
  if (!rc) {
    platload_boot(0);
    if (platload_cluster(&c, &err) || engine_run(g, &c, &ep, &res, &err))
      rc = 1;
  }
  if (!rc && vals[2] && trace_write_paje(tr, vals[2], &err))
    rc = 1;
  if (!rc && vals[3] && trace_write_chrome(tr, vals[3], &err))
    rc = 1;
  trace_free(tr);
  if (rc) {
    graph_free(g);
    cost_table_free(table);
    catalog_free(cat);
    return cli_fail(&err);
  }
  struct memory mem;
  memory_per_gpu(&w.model, &w.plan, c.gpu.hbm_bytes, &mem);
  double gpus = (double)w.plan.gpus, T = res.iteration_s;
  double hw = graph_total_flops(g, GRAPH_ALL_PHASES) / (T * gpus);
  double model = model_flops_per_iter(&w.model, w.plan.global_batch) /
                 (T * gpus);
  double peak = c.gpu.peak_flops[ep.dtype];
  double tokens = g->tokens / T;
  /* Energy of the GPUs (boards only): idle power all along, plus the
   * difference to TDP while kernels run (a linear model; communication and
   * host, switch and cooling power are left out). */
  double energy = gpus * (c.gpu.idle_w * T +
                          (c.gpu.max_w - c.gpu.idle_w) * res.compute_s);
  double sim_wall = wall() - t0;
  if (json) {
    printf("{\"model\": \"%s\", \"gpus\": %ld, \"tp\": %ld, \"pp\": %ld, "
           "\"dp\": %ld, \"cp\": %ld, \"ep\": %ld, \"zero\": %d, "
           "\"iteration_time_s\": %.9g, \"tflops_per_gpu\": "
           "%.6g, \"model_tflops_per_gpu\": %.6g, \"mfu\": %.6g, "
           "\"tokens_per_s\": %.6g, \"compute_s\": %.9g, "
           "\"overlapped_comm_s\": %.9g, \"exposed_comm_s\": %.9g, "
           "\"idle_s\": %.9g, \"memory_per_gpu_bytes\": %.0f, "
           "\"fits_in_memory\": %s, \"gpu_energy_j\": %.6g, "
           "\"gpu_energy_per_token_j\": %.6g, \"kernels\": %ld, "
           "\"flows\": %ld, \"sim_wall_s\": %.3f}\n",
           w.model.name, w.plan.gpus, w.plan.tp, w.plan.pp, w.plan.dp,
           w.plan.cp, w.plan.ep, w.plan.zero, T,
           hw / 1e12, model / 1e12, model / peak, tokens, res.compute_s,
           res.overlapped_s, res.exposed_s, res.idle_s, mem.total,
           mem.fits ? "true" : "false", energy, energy / g->tokens,
           res.kernels, res.flows, sim_wall);
  } else {
    char a[32], b[32], extra[96] = "";
    int n = 0;
    if (w.plan.cp > 1)
      n += snprintf(extra + n, sizeof extra - (size_t)n, ", CP %ld", w.plan.cp);
    if (w.plan.ep > 1)
      n += snprintf(extra + n, sizeof extra - (size_t)n, ", EP %ld", w.plan.ep);
    if (w.plan.hsdp)
      n += snprintf(extra + n, sizeof extra - (size_t)n, ", HSDP %ld",
                    w.plan.hsdp);
    else if (w.plan.fsdp)
      n += snprintf(extra + n, sizeof extra - (size_t)n, ", FSDP");
    else if (w.plan.zero)
      n += snprintf(extra + n, sizeof extra - (size_t)n, ", ZeRO-%d",
                    w.plan.zero);
    if (w.plan.sp)
      snprintf(extra + n, sizeof extra - (size_t)n, ", SP");
    printf("%s on %ld x %s (%s): TP %ld, PP %ld, DP %ld%s, micro-batch %ld, "
           "global batch %ld, %s, recompute %s\n", w.model.name, w.plan.gpus,
           c.gpu.name, c.name, w.plan.tp, w.plan.pp, w.plan.dp, extra,
           w.plan.micro_batch, w.plan.global_batch,
           w.plan.schedule == SCHED_INTERLEAVED ? "interleaved 1F1B"
                                                 : sched_name(w.plan.schedule),
           recompute_name(w.plan.recompute));
    printf("  iteration        %10.4f s   %.0f tokens/s\n", T, tokens);
    printf("  per GPU          %10.1f TFLOP/s (Megatron count)   %.1f model "
           "TFLOP/s   MFU %.1f %%\n", hw / 1e12, model / 1e12,
           100 * model / peak);
    printf("  compute          %10.4f s  %5.1f %%\n", res.compute_s,
           100 * res.compute_s / T);
    printf("  comm overlapped  %10.4f s  %5.1f %%\n", res.overlapped_s,
           100 * res.overlapped_s / T);
    printf("  comm exposed     %10.4f s  %5.1f %%\n", res.exposed_s,
           100 * res.exposed_s / T);
    printf("  idle (bubbles)   %10.4f s  %5.1f %%\n", res.idle_s,
           100 * res.idle_s / T);
    printf("  GPU energy       %10.4g kJ  %.3g J per token (idle power, TDP "
           "while computing)\n", energy / 1e3, energy / g->tokens);
    printf("  memory per GPU   %10s of %s: %s\n",
           units_fmt_human(mem.total, UNIT_SIZE, a, sizeof a),
           units_fmt_human(mem.capacity, UNIT_SIZE, b, sizeof b),
           mem.fits ? "fits" : "does NOT fit");
    printf("  simulated %ld kernels and %ld flows in %.2f s\n", res.kernels,
           res.flows, sim_wall);
  }
  graph_free(g);
  cost_table_free(table);
  catalog_free(cat);
  return 0;
}
