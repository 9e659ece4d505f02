/*
 * cmd_run.c - `weft run [WORKLOAD.xml] [flags]`: simulate one training
 * iteration and report where the time goes (or --json).
 *
 * With no workload file and no setting at all (options such as --json or
 * --breakdown only), a built-in demo job: GPT 18.4B (Megatron Table 1) on
 * 64 A100 of Selene, TP 4 x PP 2 x DP 8, interleaved 1F1B, full
 * recomputation.  Any setting leaves the demo out: the job is then the
 * settings given and the documented defaults of the others, never a mix
 * of the demo's and the user's (issue 40).
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "sim/base/units.h"
#include "sim/base/xalloc.h"
#include "sim/commands.h"
#include "sim/job.h"
#include "sim/report.h"
#include "workloads/goodput.h"

/* The keys of the options below (opts_get), one per entry. */
enum run_opt {
  RUN_JSON, RUN_BREAKDOWN, RUN_PAJE, RUN_CHROME, RUN_COLLECTIVE, RUN_FIDELITY,
  RUN_EVERY_RANK, RUN_TRACE_RANKS, RUN_TRACE_WINDOW, RUN_TRACE_LEVEL,
  RUN_KERNEL_TABLE, RUN_FORCE, RUN_MUST_FIT, RUN_DRY_RUN, RUN_ITERATIONS,
  /* failures, checkpoints and goodput (workloads/goodput.h) */
  RUN_TRAIN_DAYS, RUN_TRAIN_TOKENS, RUN_CKPT_MODE,
  RUN_CKPT_INTERVAL, RUN_CKPT_COPY_BW, RUN_RESTART_TIME, RUN_FAIL_RATES,
  RUN_APART,
  RUN_COUNT
};

static const struct opt run_opts[] = {
    [RUN_JSON] = {"json", 0, OPT_FLAG, NULL,
      "print one JSON object instead of the summary"},
    [RUN_BREAKDOWN] = {"breakdown", 0, OPT_FLAG, NULL,
      "add each pipeline stage's time (compute, communication by kind "
      "exposed and overlapped, idle) and the critical path of the iteration, "
      "in text and JSON"},
    [RUN_PAJE] = {"paje", 0, OPT_VALUE, "FILE",
      "write a Paje trace (ViTE, pj_dump)"},
    [RUN_CHROME] = {"chrome", 0, OPT_VALUE, "FILE",
      "write a Chrome trace (Perfetto)"},
    [RUN_COLLECTIVE] = {"collective", 0, OPT_VALUE, "ALGO",
      "collective algorithm (weft list collectives)"},
    [RUN_FIDELITY] = {"fidelity", 0, OPT_VALUE, "flow|step|auto",
      "fidelity of ring collectives"},
    [RUN_EVERY_RANK] = {"every-rank", 0, OPT_FLAG, NULL,
      "simulate every rank and every flow of a symmetric job (the check of "
      "the symmetric shortcuts)"},
    [RUN_TRACE_RANKS] = {"trace-ranks", 0, OPT_VALUE, "LIST",
      "trace only these ranks (0-7,64)"},
    [RUN_TRACE_WINDOW] = {"trace-window", 0, OPT_VALUE, "T0:T1",
      "trace only what overlaps this simulated time window (1s:2.5s)"},
    [RUN_TRACE_LEVEL] = {"trace-level", 0, OPT_VALUE, "all|comm",
      "trace every task, or collectives and transfers only"},
    [RUN_KERNEL_TABLE] = {"kernel-table", 0, OPT_VALUE, "FILE",
      "measured kernel times (CSV)"},
    [RUN_FORCE] = {"force", 0, OPT_FLAG, NULL,
      "simulate a job whose task graph exceeds the memory limit"},
    [RUN_MUST_FIT] = {"must-fit", 0, OPT_FLAG, NULL,
      "exit with status 3 when the job does not fit in GPU memory (the "
      "summary or JSON is printed all the same; fits_in_memory says it)"},
    [RUN_DRY_RUN] = {"dry-run", 'n', OPT_FLAG, NULL,
      "check the settings and print the job in one line, without "
      "simulating it"},
    [RUN_TRAIN_DAYS] = {"train-days", 0, OPT_VALUE, "DAYS",
      "report the goodput of a run of this many wall-clock days: expected "
      "interruptions, time lost to rework, checkpoints and restarts, the "
      "effective training time and the best checkpoint interval (needs "
      "--storage-bw)"},
    [RUN_TRAIN_TOKENS] = {"train-tokens", 0, OPT_VALUE, "N",
      "the same for a run that must train N tokens (15.6e12) at the "
      "simulated rate"},
    [RUN_CKPT_MODE] = {"ckpt-mode", 0, OPT_VALUE, "sync|async",
      "checkpoints block training for the write (sync, the default) or "
      "for a copy to host memory (async)"},
    [RUN_CKPT_INTERVAL] = {"ckpt-interval", 0, OPT_VALUE, "TIME",
      "training time between checkpoints (default: the interval that "
      "maximizes the effective training time)"},
    [RUN_CKPT_COPY_BW] = {"ckpt-copy-bw", 0, OPT_VALUE, "BW",
      "async: each GPU's copy of its checkpoint share to host memory "
      "(default 64GBps, PCIe Gen5 x16 one way)"},
    [RUN_RESTART_TIME] = {"restart-time", 0, OPT_VALUE, "TIME",
      "time from an interruption to training again, checkpoint loaded "
      "(default 10m, an assumption)"},
    [RUN_FAIL_RATES] = {"fail-rates", 0, OPT_VALUE, "NAME",
      "failure rates per part (default llama3: Llama 3 405B's 419 "
      "interruptions in 54 days on 16,384 H100)"},
    [RUN_ITERATIONS] = {"iterations", 0, OPT_VALUE, "N",
      "with gpu_sigma or diurnal: replay N iterations, the GPUs' speeds "
      "drawn from gpu_seed, gpu_seed + 1, ..., the clock of the day "
      "advancing by each iteration's time; print the iteration time's "
      "spread"},
    [RUN_APART] = {"iterations-apart", 0, OPT_VALUE, "K",
      "with --iterations and diurnal: the iterations replayed are K apart, "
      "each standing for K in a row (the clock advances K times its time; "
      "default 1)"},
    [RUN_COUNT] = {NULL, 0, 0, NULL, NULL},
};
OPTS_CHECK_TABLE(run_opts, RUN_COUNT);

const struct opts_spec cmd_run_spec = {
    "run", POS_WORKLOAD, "WORKLOAD.xml",
    OPTS_CATALOG | OPTS_CLUSTER | OPTS_WORKLOAD, run_opts,
    "Simulates one training iteration and prints its time, throughput, the\n"
    "time split into compute, communication and bubbles, energy and memory.\n"
    "Settings come from the workload file, then the flags, in order.  The\n"
    "default cluster is selene (DGX A100 80GB nodes, 8 HDR NICs each, a\n"
    "non-blocking fat tree), which sets every figure: name another with\n"
    "--cluster.  A job needs a model (--model NAME, a workload file, or a\n"
    "custom model's --layers, --hidden, --heads, --ffn, --vocab and --seq)\n"
    "and --global-batch; unset settings take the defaults below.  With no\n"
    "workload and no settings (options only): a demo job (GPT 18.4B on 64\n"
    "A100, TP 4, PP 2, interleaved:2, full recomputation, global batch 128).",
    "  weft run\n"
    "  weft run --model llama3-8b --cluster dgx-h100 --gpus 8 --cp 2 \\\n"
    "      --global-batch 128 --recompute selective\n"
    "  weft run job.xml --tp 8 --json\n"};

/* The demo job: settings the user's flags apply on top of. */
static const char *const demo[][2] = {
    {"model", "gpt-18.4b"}, {"gpus", "64"}, {"tp", "4"}, {"pp", "2"},
    {"global-batch", "128"}, {"schedule", "interleaved:2"},
    {"recompute", "full"}};

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
static int run_params(const struct opts *o, struct engine_params *ep)
{
  const char *algo = opts_get(o, RUN_COLLECTIVE);
  const char *fid = opts_get(o, RUN_FIDELITY);
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
  ep->no_symmetry = opts_get(o, RUN_EVERY_RANK) != NULL;
  ep->breakdown = opts_get(o, RUN_BREAKDOWN) != NULL;
  return 0;
}

/* What tracing costs (job.h), on stderr. */
static void trace_note(const char *msg)
{
  fprintf(stderr, "weft: note: %s\n", msg);
}

/* A quantity option: *out keeps its default when the option is absent. */
static int gp_quantity(const struct opts *o, int key, const char *flag,
                       enum unit_kind kind, double max, double *out)
{
  const char *v = opts_get(o, key);
  struct weft_err err = {0};
  if (v && units_parse_pos(v, kind, max, out, &err))
    return cli_usage("--%s: %s", flag, err.msg);
  return 0;
}

int cmd_run_goodput_args(const struct opts *o, const struct cluster *c,
                         struct gp_args *g)
{
  *g = (struct gp_args){0};
  g->in.mode = CKPT_SYNC;
  g->in.copy_bw_Bps = 64e9; /* PCIe 5.0 x16, one way: NVIDIA's H100 SXM
                               datasheet gives 128 GB/s both ways */
  g->in.restart_s = 600;    /* an assumption: Llama 3 gives no figure */
  const char *days = opts_get(o, RUN_TRAIN_DAYS);
  const char *tokens = opts_get(o, RUN_TRAIN_TOKENS);
  const char *mode = opts_get(o, RUN_CKPT_MODE);
  const char *rates = opts_get(o, RUN_FAIL_RATES);
  struct weft_err err = {0};
  if (days && tokens)
    return cli_usage("--train-days and --train-tokens: give one run length, "
                     "not both");
  if (days && units_parse_real(days, 1e-6, 36500, &g->days, &err))
    return cli_usage("--train-days: %s", err.msg);
  if (tokens && units_parse_real(tokens, 1, 1e18, &g->tokens, &err))
    return cli_usage("--train-tokens: %s", err.msg);
  g->on = days || tokens;
  if (mode) {
    if (strcmp(mode, "sync") == 0)
      g->in.mode = CKPT_SYNC;
    else if (strcmp(mode, "async") == 0)
      g->in.mode = CKPT_ASYNC;
    else
      return cli_usage("--ckpt-mode: '%s' is not sync or async", mode);
  }
  int rc;
  if ((rc = gp_quantity(o, RUN_CKPT_INTERVAL, "ckpt-interval", UNIT_TIME,
                        1e10, &g->in.interval_s)) ||
      (rc = gp_quantity(o, RUN_CKPT_COPY_BW, "ckpt-copy-bw", UNIT_BW, 1e18,
                        &g->in.copy_bw_Bps)))
    return rc;
  const char *restart = opts_get(o, RUN_RESTART_TIME);
  if (restart && (units_parse(restart, UNIT_TIME, &g->in.restart_s, &err) ||
                  g->in.restart_s > 1e9))
    return cli_usage("--restart-time: %s", err.msg[0] ? err.msg
                     : "longer than 1e9 s");
  g->t = fail_table_named(rates ? rates : "llama3");
  if (!g->t)
    return cli_usage("--fail-rates: unknown table '%s' (llama3)", rates);
  if (!g->on) {
    static const int need_run[] = {RUN_CKPT_MODE,
                                   RUN_CKPT_INTERVAL, RUN_CKPT_COPY_BW,
                                   RUN_RESTART_TIME, RUN_FAIL_RATES};
    for (size_t i = 0; i < sizeof need_run / sizeof *need_run; i++)
      if (opts_get(o, need_run[i]))
        return cli_usage("--%s: needs a run length, --train-days or "
                         "--train-tokens", run_opts[need_run[i]].name);
    return 0;
  }
  g->in.storage_bw_Bps = c->storage_bw_Bps; /* a platform setting */
  if (!(g->in.storage_bw_Bps > 0))
    return cli_usage("--%s: needs --storage-bw (storage_bw of the cluster), "
                     "the storage tier's write bandwidth (no default; Llama "
                     "3's Tectonic sustains 2TBps)",
                     days ? "train-days" : "train-tokens");
  if (opts_get(o, RUN_CKPT_COPY_BW) && g->in.mode != CKPT_ASYNC)
    return cli_usage("--ckpt-copy-bw: only with --ckpt-mode async");
  return 0;
}

int cmd_run_goodput_eval(struct gp_args *g, const struct run_args *a,
                         const struct report *r, struct goodput *out)
{
  double rates[FP_COUNT], units[FP_COUNT];
  fail_rates(g->t, rates);
  goodput_units(&a->c, units);
  g->in.mtbf_s = goodput_mtbf_s(rates, units);
  g->in.ckpt_bytes = goodput_checkpoint_bytes(model_params(&a->w.model));
  g->in.ranks = a->w.plan.gpus;
  g->in.wall_s = g->days * 86400;
  g->in.work_s = g->tokens > 0 ? g->tokens / r->tokens_per_s : 0;
  struct weft_err err = {0};
  if (goodput_eval(&g->in, out, &err))
    return cli_fail(&err);
  return 0;
}

static void gp_print(FILE *f, const struct gp_args *g,
                     const struct run_args *a, const struct goodput *gp)
{
  double units[FP_COUNT];
  goodput_units(&a->c, units);
  char b[32], c[32], d[32];
  if (g->days > 0)
    fprintf(f, "  goodput over %.6g days (wall clock)", g->days);
  else
    fprintf(f, "  goodput of %.4g tokens (%.4g days of training)",
            g->tokens, gp->work_s / 86400);
  fprintf(f, ", failure rates %s\n", g->t->name);
  fprintf(f, "    MTBF %.4g h: %.0f GPUs, %.0f NICs, %.0f switches and "
          "cables, %.0f hosts\n", gp->mtbf_s / 3600, units[FP_GPU],
          units[FP_NIC], units[FP_NET], units[FP_HOST]);
  fprintf(f, "    checkpoint %s (%s per GPU) written in %.4g s at %s/s; "
          "%s\n", units_fmt_human(gp->ckpt_bytes, UNIT_SIZE, b, sizeof b),
          units_fmt_human(gp->ckpt_bytes / (double)a->w.plan.gpus, UNIT_SIZE,
                          c, sizeof c),
          gp->write_s,
          units_fmt_human(g->in.storage_bw_Bps, UNIT_SIZE, d, sizeof d),
          gp->mode == CKPT_ASYNC ? "async: training waits for the copy to "
                                   "host memory"
                                 : "sync: training waits for the write");
  fprintf(f, "    interval %.4g s of training (optimal %.4g s; Young %.4g "
          "s, Daly %.4g s), blocking %.4g s, restart %.4g s\n",
          gp->interval_s, gp->optimal_s, gp->young_s, gp->daly_s,
          gp->block_s, gp->restart_in_s);
  fprintf(f, "    interruptions %.1f expected; lost to rework %.4g h, "
          "checkpoints %.4g h, restarts %.4g h\n", gp->interruptions,
          gp->rework_s / 3600, gp->checkpoint_s / 3600,
          gp->restart_s / 3600);
  fprintf(f, "    effective training time %.1f %% (%.4g h of %.4g h)\n",
          100 * gp->efficiency, gp->work_s / 3600, gp->wall_s / 3600);
}

int cmd_run_args(int argc, char **argv, struct run_args *out,
                 int *exit_code)
{
  struct opts *o = &out->o;
  if (cli_parse(&cmd_run_spec, argc, argv, o, exit_code))
    return 1;
  if (!o->positional && o->n_set == 0 && !o->cluster && o->n_catalogs == 0) {
    for (int i = (int)(sizeof demo / sizeof *demo) - 1; i >= 0; i--)
      opts_prepend(o, demo[i][0], demo[i][1]);
    if (!o->cluster)
      o->cluster = "selene";
  }
  struct weft_err err = {0};
  if (opts_workload(o, "selene", &out->w, &out->cat, &out->c, &err)) {
    *exit_code = cli_fail(&err);
    return 1;
  }
  struct job_spec *s = &out->spec;
  job_spec_init(s, &out->w, &out->c);
  *exit_code = run_params(o, &s->ep);
  if (*exit_code) {
    catalog_free(out->cat);
    return 1;
  }
  s->kernel_table = opts_get(o, RUN_KERNEL_TABLE);
  s->force = opts_get(o, RUN_FORCE) != NULL;
  s->trace = (struct job_trace){
      opts_get(o, RUN_PAJE), opts_get(o, RUN_CHROME),
      opts_get(o, RUN_TRACE_RANKS), opts_get(o, RUN_TRACE_WINDOW),
      opts_get(o, RUN_TRACE_LEVEL), o->quiet ? NULL : trace_note};
  return 0;
}

void cmd_run_args_release(struct run_args *a)
{
  catalog_free(a->cat);
}

static int cmp_double(const void *a, const void *b)
{
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

/* One more replay of a's job on the loaded platform: its iteration
 * time in *out_s; an error is printed and its exit code returned. */
static int replay(struct run_args *a, double *out_s)
{
  struct job_result res;
  struct weft_err err = {0};
  if (job_run(&a->spec, &res, &err))
    return cli_fail(&err);
  *out_s = res.r.res.iteration_s;
  job_result_release(&res);
  return 0;
}

/* "HH:MM" of `hour` (hours since midnight of the first day) into buf. */
static const char *clock_fmt(double hour, char *buf, size_t size)
{
  long m = (long)floor(fmod(hour, 24) * 60 + 0.5) % (24 * 60);
  snprintf(buf, size, "%02ld:%02ld", m / 60, m % 60);
  return buf;
}

/* --iterations N: the job's first iteration is in `first`; replay
 * N - 1 more with the GPUs' speeds drawn from the next seeds (issue 41,
 * item 2: per-GPU variation) and at the clock of the day each starts at
 * (diurnal: the clock advances by `apart` times each iteration's time),
 * and once without variation, and print the spread of the iteration time
 * and the throughput the mean loses. */
static int iterations(struct run_args *a, long n, long apart, double first)
{
  double *t = xcalloc((size_t)n, sizeof *t);
  unsigned long seed0 = a->c.gpu_seed;
  double sigma = a->c.gpu_sigma, even = 0;
  double hour = a->c.diurnal_hour, slow0 = a->c.diurnal_slow;
  double fmin = slow0, fmax = slow0;
  int rc = 0;
  t[0] = first;
  a->spec.platform_loaded = true;
  a->spec.trace.note = NULL; /* said once */
  a->spec.ep.on_progress = NULL;
  for (long i = 1; i < n && !rc; i++) {
    a->c.gpu_seed = seed0 + (unsigned long)i;
    hour += (double)apart * t[i - 1] / 3600;
    a->c.diurnal_slow = cluster_diurnal_factor(&a->c, hour);
    fmin = fmin < a->c.diurnal_slow ? fmin : a->c.diurnal_slow;
    fmax = fmax > a->c.diurnal_slow ? fmax : a->c.diurnal_slow;
    rc = replay(a, &t[i]);
  }
  a->c.gpu_seed = seed0;
  a->c.gpu_sigma = 0;
  a->c.diurnal_slow = 1;
  if (!rc)
    rc = replay(a, &even);
  a->c.gpu_sigma = sigma;
  a->c.diurnal_slow = slow0;
  if (!rc) {
    double sum = 0;
    for (long i = 0; i < n; i++)
      sum += t[i];
    qsort(t, (size_t)n, sizeof *t, cmp_double);
    double med = n % 2 ? t[n / 2] : (t[n / 2 - 1] + t[n / 2]) / 2;
    double mean = sum / (double)n;
    char what[256] = "", h0[8], h1[8];
    int w = 0;
    if (sigma > 0)
      w = snprintf(what, sizeof what, ", gpu_seed %lu to %lu, GPU speeds of "
                   "sigma %.3g %%", seed0, seed0 + (unsigned long)n - 1,
                   100 * sigma);
    char every[48] = "";
    if (apart > 1)
      snprintf(every, sizeof every, " (one in %ld)", apart);
    if (a->c.diurnal > 0)
      snprintf(what + w, sizeof what - (size_t)w, ", clock %s to %s%s, "
               "kernels at %.4f to %.4f times their time (diurnal %.3g %%)",
               clock_fmt(a->c.diurnal_hour, h0, sizeof h0),
               clock_fmt(hour, h1, sizeof h1), every, fmin, fmax,
               100 * a->c.diurnal);
    printf("  iterations       %ld%s: min %.4f s, median %.4f s, mean %.4f "
           "s, max %.4f s\n", n, what, t[0], med, mean, t[n - 1]);
    printf("    without variation %.4f s: the mean loses %.2f %% of its "
           "throughput\n", even, 100 * (1 - even / mean));
  }
  free(t);
  return rc;
}

/* --iterations' count, 0 when not given, and --iterations-apart's in
 * *apart (1 when not given); a usage error is printed and -1 returned. */
static long iterations_arg(const struct run_args *a, long *apart)
{
  const char *v = opts_get(&a->o, RUN_ITERATIONS);
  const char *k = opts_get(&a->o, RUN_APART);
  *apart = 1;
  if (k) {
    char *end = NULL;
    errno = 0;
    *apart = strtol(k, &end, 10);
    if (end == k || *end || errno || *apart < 1 || *apart > 1000000) {
      cli_usage("--iterations-apart: '%s' is not a whole number from 1 to "
                "1000000", k);
      return -1;
    }
    if (!v || !(a->c.diurnal > 0)) {
      cli_usage("--iterations-apart: it spaces the iterations over the "
                "day's clock: give --iterations and --diurnal too");
      return -1;
    }
  }
  if (!v)
    return 0;
  char *end = NULL;
  errno = 0;
  long n = strtol(v, &end, 10);
  if (end == v || *end || errno || n < 1 || n > 1000) {
    cli_usage("--iterations: '%s' is not a whole number from 1 to 1000", v);
    return -1;
  }
  if (a->c.gpu_sigma <= 0 && !(a->c.diurnal > 0)) {
    cli_usage("--iterations: the iterations differ only by the GPUs' "
              "drawn speeds and the clock of the day: give --gpu-sigma or "
              "--diurnal too");
    return -1;
  }
  if (opts_get(&a->o, RUN_JSON) || a->spec.trace.paje ||
      a->spec.trace.chrome) {
    cli_usage("--iterations: not with --json, --paje or --chrome (one "
              "iteration's figures)");
    return -1;
  }
  return n;
}

int cmd_run(int argc, char **argv)
{
  double t0 = cli_wall_s();
  struct run_args a;
  int rc;
  if (cmd_run_args(argc, argv, &a, &rc))
    return rc;
  struct gp_args gpa;
  if ((rc = cmd_run_goodput_args(&a.o, &a.c, &gpa))) {
    cmd_run_args_release(&a);
    return rc;
  }
  a.spec.t0_s = t0;
  if (opts_get(&a.o, RUN_DRY_RUN)) {
    /* The settings resolved (model, plan against the cluster): what a
     * newcomer can check before a long run, and the README check runs
     * its examples with. */
    const struct plan *p = &a.w.plan;
    printf("%s on %ld x %s (%s): TP %ld, PP %ld, DP %ld, CP %ld, EP %ld, "
           "micro-batch %ld, global batch %ld; not simulated (--dry-run)\n",
           a.w.model.name, p->gpus, a.c.gpu.name, a.c.name, p->tp, p->pp,
           p->dp, p->cp, p->ep, p->micro_batch, p->global_batch);
    cmd_run_args_release(&a);
    return 0;
  }
  long apart;
  long niter = iterations_arg(&a, &apart);
  if (niter < 0) {
    cmd_run_args_release(&a);
    return 2;
  }
  bool tty = isatty(STDERR_FILENO);
  if (tty)
    a.spec.ep.on_progress = show_progress;
  struct job_result res;
  struct weft_err err = {0};
  rc = job_run(&a.spec, &res, &err);
  if (tty)
    fprintf(stderr, "\r\033[K"); /* clear the progress line */
  if (rc) {
    rc = cli_fail(&err);
  } else {
    struct goodput gp;
    if (gpa.on && (rc = cmd_run_goodput_eval(&gpa, &a, &res.r, &gp)) == 0) {
      res.r.goodput = &gp;
      res.r.fail_rates = gpa.t->name;
    }
    if (rc == 0 && opts_get(&a.o, RUN_JSON))
      report_print_json(stdout, &res.r);
    else if (rc == 0)
      report_print_text(stdout, &res.r);
    if (rc == 0 && gpa.on && !opts_get(&a.o, RUN_JSON))
      gp_print(stdout, &gpa, &a, &gp);
    double first = res.r.res.iteration_s;
    if (!res.r.mem.fits && opts_get(&a.o, RUN_MUST_FIT)) {
      fprintf(stderr, "weft: --must-fit: the job does not fit in GPU memory\n");
      rc = 3;
    }
    job_result_release(&res);
    if (niter > 1 && !rc)
      rc = iterations(&a, niter, apart, first);
  }
  cmd_run_args_release(&a);
  return rc;
}
