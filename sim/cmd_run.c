/*
 * cmd_run.c - `weft run [WORKLOAD.xml] [flags]`: simulate one training
 * iteration and report where the time goes (or --json).
 *
 * With no workload file and no --model, a built-in scenario with the given
 * flags on top: GPT 18.4B (Megatron Table 1) on 64 A100 of Selene, TP 4 x
 * PP 2 x DP 8, interleaved 1F1B, full recomputation.
 */
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "sim/base/names.h"
#include "sim/base/units.h"
#include "sim/commands.h"
#include "sim/engine.h"
#include "sim/platload.h"
#include "sim/report.h"
#include "traces/trace.h"
#include "workloads/builder.h"

static const struct opt run_opts[] = {
    {"json", 0, OPT_FLAG, NULL, "print one JSON object instead of the summary"},
    {"breakdown", 0, OPT_FLAG, NULL, "add each pipeline stage's time (compute, "
     "communication by kind exposed and overlapped, idle) and the critical "
     "path of the iteration, in text and JSON"},
    {"paje", 0, OPT_VALUE, "FILE", "write a Paje trace (ViTE, pj_dump)"},
    {"chrome", 0, OPT_VALUE, "FILE", "write a Chrome trace (Perfetto)"},
    {"collective", 0, OPT_VALUE, "ALGO",
     "collective algorithm (weft list collectives)"},
    {"fidelity", 0, OPT_VALUE, "flow|step|auto", "fidelity of ring collectives"},
    {"every-rank", 0, OPT_FLAG, NULL, "simulate every rank and every flow of "
     "a symmetric job (the check of the symmetric shortcuts)"},
    {"trace-ranks", 0, OPT_VALUE, "LIST", "trace only these ranks (0-7,64)"},
    {"trace-window", 0, OPT_VALUE, "T0:T1",
     "trace only what overlaps this simulated time window (1s:2.5s)"},
    {"trace-level", 0, OPT_VALUE, "all|comm",
     "trace every task, or collectives and transfers only"},
    {"kernel-table", 0, OPT_VALUE, "FILE", "measured kernel times (CSV)"},
    {"force", 0, OPT_FLAG, NULL, "simulate a job whose task graph exceeds the "
     "memory limit"},
    {NULL, 0, 0, NULL, NULL},
};

const struct opts_spec cmd_run_spec = {
    "run", POS_WORKLOAD, "WORKLOAD.xml",
    OPTS_CATALOG | OPTS_CLUSTER | OPTS_WORKLOAD, run_opts,
    "Simulates one training iteration and prints its time, throughput, the\n"
    "time split into compute, communication and bubbles, energy and memory.\n"
    "Settings come from the workload file, then the flags, in order.  The\n"
    "default cluster is selene (DGX A100 80GB nodes, 8 HDR NICs each, a\n"
    "non-blocking fat tree), which sets every figure: name another with\n"
    "--cluster.  With no arguments at all: a demo job (GPT 18.4B on 64 A100,\n"
    "TP 4, PP 2, interleaved:2, full recomputation, global batch 128).",
    "  weft run\n"
    "  weft run --model llama3-8b --cluster dgx-h100 --gpus 8 --cp 2 \\\n"
    "      --global-batch 128 --recompute selective\n"
    "  weft run job.xml --tp 8 --json\n"};

/* The demo job: settings the user's flags apply on top of. */
static const char *const demo[][2] = {
    {"model", "gpt-18.4b"}, {"gpus", "64"}, {"tp", "4"}, {"pp", "2"},
    {"global-batch", "128"}, {"schedule", "interleaved:2"},
    {"recompute", "full"}};

/* Trace hooks: every task and flow goes to the trace. */
struct tracing {
  struct trace *tr;
  const struct cluster *c;
};

static void record(void *ctx, long rank, long task, double s, double e)
{
  const struct tracing *t = ctx;
  trace_add(t->tr, rank, task, s, e);
}

static void record_flow(void *ctx, long src, long dst, double bytes,
                        double s, double e)
{
  const struct tracing *t = ctx;
  trace_add_flow(t->tr, src, dst,
                 cluster_node_of(t->c, (int)src) == cluster_node_of(t->c, (int)dst),
                 bytes, s, e);
}

/* Progress on a terminal: one line on stderr, rewritten in place. */
static void show_progress(void *ctx, double sim_s, long done, long total,
                          double wall_s)
{
  (void)ctx;
  double f = total > 0 ? (double)done / (double)total : 0;
  fprintf(stderr, "\rweft: %.1f %% of the tasks, %.4g s simulated, %.0f s "
          "wall", 100 * f, sim_s, wall_s);
  if (f > 0.01)
    fprintf(stderr, ", about %.0f s left", wall_s * (1 - f) / f);
  fprintf(stderr, "\033[K");
}

/* The engine parameters from the command's options; a usage error is
 * printed and its exit code returned. */
static int run_params(const struct opts *o, const struct workload *w,
                      struct engine_params *ep)
{
  engine_params_default(ep);
  ep->dtype = w->model.dtype;
  ep->attn_kernel = w->plan.attn_kernel;
  const char *algo = opts_get(&cmd_run_spec, o, "collective");
  const char *fid = opts_get(&cmd_run_spec, o, "fidelity");
  if (algo) {
    int a = coll_algo_from_name(algo);
    if (a < 0)
      return cli_usage("--collective: unknown algorithm '%s' (see weft list "
                       "collectives)", algo);
    ep->algo = (enum coll_algo)a;
  }
  if (fid) {
    int f = fidelity_from_name(fid);
    if (f < 0)
      return cli_usage("--fidelity: '%s' is not flow, step or auto", fid);
    ep->fidelity = (enum fidelity)f;
  }
  ep->no_symmetry = opts_get(&cmd_run_spec, o, "every-rank") != NULL;
  ep->breakdown = opts_get(&cmd_run_spec, o, "breakdown") != NULL;
  return 0;
}

/* The trace selection options (--trace-ranks, --trace-window,
 * --trace-level). */
static int trace_options(const struct opts *o, struct trace *tr,
                         struct weft_err *err)
{
  const char *ranks = opts_get(&cmd_run_spec, o, "trace-ranks");
  const char *window = opts_get(&cmd_run_spec, o, "trace-window");
  const char *level = opts_get(&cmd_run_spec, o, "trace-level");
  double t0 = 0, t1 = INFINITY;
  int lv = TRACE_ALL;
  if (window) {
    char a[64];
    const char *colon = strchr(window, ':');
    size_t n = colon ? (size_t)(colon - window) : 0;
    if (!colon || n >= sizeof a)
      return weft_errf(err, WEFT_EINVAL, "--trace-window: '%s' is not "
                       "T0:T1, such as 1s:2.5s", window);
    memcpy(a, window, n);
    a[n] = '\0';
    if (units_parse(a, UNIT_TIME, &t0, err) ||
        units_parse(colon + 1, UNIT_TIME, &t1, err))
      return weft_err_prefix(err, "--trace-window");
  }
  if (level && names_choice(level, (const char *const[]){"all", "comm", NULL},
                            &lv, err))
    return weft_err_prefix(err, "--trace-level");
  return trace_select(tr, ranks, t0, t1, (enum trace_level)lv, err);
}

/* Replay `g` on `c`, writing the traces asked for. */
static int simulate(const struct opts *o, const struct graph *g,
                    const struct cluster *c, struct engine_params *ep,
                    struct engine_result *res, struct weft_err *err)
{
  const char *paje = opts_get(&cmd_run_spec, o, "paje");
  const char *chrome = opts_get(&cmd_run_spec, o, "chrome");
  struct trace *tr = NULL;
  struct tracing tracing = {NULL, c};
  if (paje || chrome) {
    tracing.tr = tr = trace_new(g);
    int rc = trace_options(o, tr, err);
    if (rc) {
      trace_free(tr);
      return rc;
    }
    ep->on_task = record;
    ep->on_flow = record_flow;
    ep->ctx = &tracing;
  }
  bool tty = isatty(STDERR_FILENO);
  if (tty)
    ep->on_progress = show_progress;
  platload_boot(0);
  int rc = platload_cluster(c, err);
  if (!rc)
    rc = engine_run(g, c, ep, res, err);
  if (tty)
    fprintf(stderr, "\r\033[K"); /* clear the progress line */
  if (!rc && tr)
    rc = trace_write(tr, paje, chrome, err);
  trace_free(tr);
  return rc;
}

int cmd_run(int argc, char **argv)
{
  double t0 = cli_wall_s();
  struct opts o;
  int code;
  if (cli_parse(&cmd_run_spec, argc, argv, &o, &code))
    return code;
  if (!o.positional && !opts_has(&o, "model")) {
    for (int i = (int)(sizeof demo / sizeof *demo) - 1; i >= 0; i--)
      opts_prepend(&o, demo[i][0], demo[i][1]);
    if (!o.cluster)
      o.cluster = "selene";
  }
  struct workload w;
  struct catalog *cat;
  struct cluster c;
  struct weft_err err = {0};
  if (opts_workload(&o, "selene", &w, &cat, &c, &err))
    return cli_fail(&err);
  struct engine_params ep;
  struct cost_table *table = NULL;
  struct graph *g = NULL;
  struct engine_result res = {0};
  const char *table_file = opts_get(&cmd_run_spec, &o, "kernel-table");
  int rc = run_params(&o, &w, &ep);
  if (rc)
    goto out;
  if (cli_check_size(&w, opts_get(&cmd_run_spec, &o, "force"), &err) ||
      (table_file && !(table = cost_table_read(table_file, &err))) ||
      !(g = build_graph(&w.model, &w.plan, &err))) {
    rc = cli_fail(&err);
    goto out;
  }
  ep.table = table;
  if (simulate(&o, g, &c, &ep, &res, &err)) {
    rc = cli_fail(&err);
    goto out;
  }
  /* With gradient compression, the same job without it, for the
   * speedup (a second replay on the loaded platform). */
  double base_s = 0;
  struct ddp_model base_ddp = {0};
  if (w.plan.compress != CM_NONE) {
    struct plan bp = w.plan;
    bp.compress = CM_NONE;
    struct graph *bg = build_graph(&w.model, &bp, &err);
    struct engine_params bep;
    struct engine_result bres = {0};
    if (bg && !run_params(&o, &w, &bep)) {
      bep.table = table;
      if (!engine_run(bg, &c, &bep, &bres, &err)) {
        base_s = bres.iteration_s;
        closed_form_ddp(bg, &c, bep.dtype, &base_ddp);
      }
      engine_result_free(&bres);
    }
    graph_free(bg);
    if (!base_s) {
      rc = cli_fail(&err);
      goto out;
    }
  }
  struct report r;
  report_fill(&r, &w, &c, g, &res, ep.dtype, cli_wall_s() - t0);
  r.base_iteration_s = base_s;
  r.base_ddp = base_ddp;
  r.collective = coll_algo_name(ep.algo);
  r.fidelity = fidelity_name(ep.fidelity);
  r.every_rank = ep.no_symmetry;
  r.kernel_table = opts_get(&cmd_run_spec, &o, "kernel-table") != NULL;
  if (opts_get(&cmd_run_spec, &o, "json"))
    report_print_json(stdout, &r);
  else
    report_print_text(stdout, &r);
out:
  engine_result_free(&res);
  graph_free(g);
  cost_table_free(table);
  catalog_free(cat);
  return rc;
}
