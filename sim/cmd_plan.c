/*
 * cmd_plan.c - `weft plan [WORKLOAD.xml] [flags]`: search the plans of a
 * model on a cluster.  Every combination of tensor, pipeline, context,
 * expert and data parallelism, schedule, micro-batch, recomputation and
 * sharding (ZeRO-1, FSDP, HSDP over a node) that the plan settings allow is
 * checked (plan_resolve), those that do not fit in the GPU's memory are
 * dropped (memory_per_gpu), the rest ranked by the closed-form estimate
 * (workloads/estimate.h), and the most promising simulated, best first,
 * until --top plans are done or --budget is spent.  A plan setting given
 * as a flag or in the workload file fixes that dimension.
 *
 * Simulations run in children forked after the platform is loaded (one
 * load, SimGrid's one engine per process in each child), up to -j at once
 * through the process pool (sim/pool.h); each sends its result back on its
 * standard output.  Interrupted (SIGINT, SIGTERM), it kills and reaps the
 * children and prints no table.  The table lists the
 * simulated plans by simulated time, then the others by estimate, and says
 * how far the closed-form ranking departed from the simulated one
 * (Spearman's rank correlation over the simulated plans).
 */
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "sim/base/units.h"
#include "sim/base/xalloc.h"
#include "sim/commands.h"
#include "sim/engine.h"
#include "sim/platload.h"
#include "sim/pool.h"
#include "sim/report.h"
#include "workloads/accounting.h"
#include "workloads/builder.h"
#include "workloads/estimate.h"
#include "workloads/workload.h"

/* The keys of the options below (opts_get), one per entry. */
enum plan_opt {
  PLAN_BUDGET, PLAN_TOP, PLAN_JOBS, PLAN_SHOW, PLAN_FAMILY, PLAN_GRID_MAX,
  PLAN_JSON, PLAN_COUNT
};

static const struct opt plan_opts[] = {
    [PLAN_BUDGET] = {"budget", 0, OPT_VALUE, "TIME",
      "wall time for simulating the most promising plans (default 60s; 0: "
      "rank by the closed form only)"},
    [PLAN_TOP] = {"top", 0, OPT_VALUE, "N",
      "simulate at most N plans (default 32)"},
    [PLAN_JOBS] = {"jobs", 'j', OPT_VALUE, "N",
      "simulations at once (default: the cores online)"},
    [PLAN_SHOW] = {"show", 0, OPT_VALUE, "N",
      "plans listed (default 20; 0: all that fit)"},
    [PLAN_FAMILY] = {"family", 0, OPT_VALUE, "NAME",
      "which plans: megatron (1D TP with PP, CP, EP and sharding), tensor3d "
      "(3D grids with DP, PP when given) or all (default all)"},
    [PLAN_GRID_MAX] = {"grid-max", 0, OPT_VALUE, "N",
      "Tensor3D grids of at most N GPUs (default: the NVLink domain; the "
      "engine simulates grids that span nodes rank by rank, minutes each at "
      "1024 GPUs)"},
    [PLAN_JSON] = {"json", 0, OPT_FLAG, NULL,
      "print one JSON object instead of the table"},
    [PLAN_COUNT] = {NULL, 0, 0, NULL, NULL},
};
OPTS_CHECK_TABLE(plan_opts, PLAN_COUNT);

const struct opts_spec cmd_plan_spec = {
    "plan", POS_WORKLOAD, "WORKLOAD.xml",
    OPTS_CATALOG | OPTS_CLUSTER | OPTS_WORKLOAD, plan_opts,
    "Searches the plans of a model on a cluster: every combination of TP\n"
    "(powers of two up to the NVLink domain), PP (divisors of the layers and\n"
    "powers of two), CP (for sequences of 4096 tokens and more), EP (MoE\n"
    "models), micro-batch 1-16, 1F1B or interleaved:2/4, recomputation\n"
    "none/selective/full and sharding (none, ZeRO-1, FSDP, HSDP over a node),\n"
    "with sequence parallelism whenever TP > 1, and Tensor3D grids (GX x GY x\n"
    "GZ powers of two up to --grid-max GPUs, by default the NVLink domain,\n"
    "with 1, 2 or 4 pieces, DP and ZeRO-1; pipelines only with --pp).  A plan\n"
    "setting given as a flag or in the workload file fixes that dimension.\n"
    "Plans that do not fit in memory are dropped; the others are ranked by a\n"
    "closed-form estimate (thousands per second), then the most promising\n"
    "simulated, best estimate first, within --top and --budget.  The global\n"
    "batch is required.  With an ample budget the result is reproducible; a\n"
    "budget that binds makes it depend on the machine's speed.",
    "  weft plan --model llama3-70b --cluster dgx-h100 --gpus 1024 \\\n"
    "      --global-batch 512\n"
    "  weft plan --model gpt3-175b --gpus 1024 --global-batch 1536 --tp 8 \\\n"
    "      --budget 5m --json\n"};

enum { SHARD_NONE, SHARD_ZERO1, SHARD_FSDP, SHARD_HSDP, SHARD_USER };
enum { FAM_ALL, FAM_MEGATRON, FAM_TENSOR3D };
enum sim_status { SIM_NONE, SIM_OK, SIM_FAILED, SIM_CUT, SIM_TOO_BIG };

/* One candidate: what the search varied, and what came of it. */
struct cand {
  long tp, pp, cp, ep, mb, v; /* v: 0 for 1F1B, else interleaved:v */
  long t3[3], pieces;        /* a Tensor3D grid (t3[0] 0: 1D TP) */
  int recompute, shard;
  double est_s, est_exposed, mem;
  long est_rank;             /* 1-based */
  enum sim_status sim;
  double sim_s, tflops, sim_exposed;
  char why[160];             /* a failed simulation's message */
};

/* What a child sends back. */
struct sim_msg {
  int ok;
  double iteration_s, tflops, exposed_s;
  char err[160];
};

/* The plan of candidate `k` on top of the user's `base`. */
static int cand_plan(const struct plan *base, const struct model *m,
                     const struct cluster *c, long node_gpus,
                     const struct cand *k, struct plan *out,
                     struct weft_err *err)
{
  *out = *base;
  struct plan *p = out;
  p->tp = k->tp;
  for (int i = 0; i < 3; i++)
    p->t3[i] = k->t3[i];
  p->pieces = k->pieces;
  p->pp = k->pp;
  p->cp = k->cp;
  p->ep = k->ep;
  p->micro_batch = k->mb;
  if (!base->set[PK_SCHEDULE]) {
    p->schedule = k->v ? SCHED_INTERLEAVED : SCHED_1F1B;
    p->vchunks = k->v ? k->v : 1;
  }
  p->recompute = (enum recompute)k->recompute;
  if (!base->set[PK_SP])
    p->sp = k->tp > 1 && !k->t3[0];
  if (k->shard != SHARD_USER) {
    p->zero = k->shard == SHARD_ZERO1 ? 1 : k->shard >= SHARD_FSDP ? 3 : 0;
    p->fsdp = k->shard >= SHARD_FSDP;
    p->hsdp = 0;
    if (k->shard == SHARD_HSDP)
      p->hsdp = node_gpus / (k->tp * k->cp);
  }
  if (!base->set[PK_DP])
    p->dp = 0;
  /* On an uneven last rack, groups that would straddle two racks'
   * NVLink domains are refused as `weft run` refuses them. */
  int rc = plan_resolve(p, m, c->gpus, err);
  return rc ? rc : workload_check_racks(p, c, "gpus", err);
}

/* Values of one dimension: the user's, or the list. */
static int dim_values(bool fixed, long user, const long *list, int n,
                      long *out)
{
  if (fixed) {
    out[0] = user;
    return 1;
  }
  memcpy(out, list, (size_t)n * sizeof *out);
  return n;
}

struct search {
  const struct workload *w;
  const struct cluster *c;
  long node_gpus;  /* GPUs of one NVLink domain */
  int family;      /* FAM_* */
  long grid_max;   /* Tensor3D grids of at most this many GPUs */
  struct cand *k;
  long n, cap;
  long tried, valid, fit;
  double least_mem;  /* of the valid plans, bytes per GPU */
  double est_wall_s;
};

static void try_cand(struct search *s, struct cand *k)
{
  struct plan p;
  struct weft_err err = {0};
  s->tried++;
  if (cand_plan(&s->w->plan, &s->w->model, s->c, s->node_gpus, k, &p,
                &err))
    return;
  s->valid++;
  struct memory mem;
  memory_per_gpu(&s->w->model, &p, s->c->gpu.hbm_bytes, &mem);
  if (s->valid == 1 || mem.total < s->least_mem)
    s->least_mem = mem.total;
  if (!mem.fits)
    return;
  struct estimate e;
  if (estimate_plan(&s->w->model, &p, s->c, s->w->model.dtype, p.attn_kernel,
                    &e, &err))
    return;
  s->fit++;
  k->est_s = e.iteration_s;
  k->est_exposed = e.exposed_s;
  k->mem = mem.total;
  if (s->n == s->cap) {
    s->cap = s->cap ? 2 * s->cap : 256;
    s->k = xrealloc(s->k, (size_t)s->cap * sizeof *s->k);
  }
  s->k[s->n++] = *k;
}

/* Every combination the settings allow.  Over 100 lines on purpose: the
 * nested loops, one per plan dimension, are the order in which plans are
 * tried, which breaks ties in the ranking and so must read in one place.
 * NEEDSWORK: a table of dimensions with an odometer would be shorter. */
static void enumerate(struct search *s)
{
  const struct plan *b = &s->w->plan;
  const struct model *m = &s->w->model;
  long gpus = s->c->gpus;
  long pps[160], cps[5], eps[8], mbs[5], vs[3], rcs[3], shs[4];
  long list[160];
  int n = 0;
  /* The tensor splits: Megatron's 1D TP (powers of two up to the NVLink
   * domain), and Tensor3D grids of powers of two up to --grid-max GPUs,
   * each with 1, 2 or 4 pieces. */
  struct tsplit { long tp, t3[3], pieces; } *ts = NULL;
  int nts = 0, cap = 0;
#define ADD_SPLIT(...)                                                     \
  do {                                                                     \
    if (nts == cap)                                                        \
      ts = xrealloc(ts, (size_t)(cap = cap ? 2 * cap : 64) * sizeof *ts);  \
    ts[nts++] = (struct tsplit){__VA_ARGS__};                              \
  } while (0)
  if (!b->set[PK_TENSOR3D] && !b->set[PK_PIECES] &&
      s->family != FAM_TENSOR3D) {
    if (b->set[PK_TP]) /* the degree asked for, wherever it reaches */
      ADD_SPLIT(b->tp, {0, 0, 0}, 1);
    else
      for (long t = 1; t <= s->node_gpus && t <= 64 && t <= gpus; t *= 2)
        ADD_SPLIT(t, {0, 0, 0}, 1);
  }
  static const long piece_list[] = {1, 2, 4};
  long gmax = s->grid_max;
  for (long gx = 1; gx <= gmax; gx *= 2)
    for (long gy = 1; gx * gy <= gmax; gy *= 2)
      for (long gz = 1; gx * gy * gz <= gmax && gx * gy * gz <= gpus;
           gz *= 2) {
        long T = gx * gy * gz;
        if (T < 2 || (b->set[PK_TP] && T != b->tp) || b->set[PK_TENSOR3D] ||
            s->family == FAM_MEGATRON)
          continue;
        for (int i = 0; i < 3; i++)
          if (!b->set[PK_PIECES] || piece_list[i] == b->pieces)
            ADD_SPLIT(T, {gx, gy, gz}, piece_list[i]);
      }
  if (b->set[PK_TENSOR3D] && s->family != FAM_MEGATRON)
    for (int i = 0; i < (b->set[PK_PIECES] ? 1 : 3); i++)
      ADD_SPLIT(b->t3[0] * b->t3[1] * b->t3[2],
                {b->t3[0], b->t3[1], b->t3[2]},
                b->set[PK_PIECES] ? b->pieces : piece_list[i]);
#undef ADD_SPLIT
  n = 0;
  for (long d = 1; d <= m->layers && d <= 128 && n < 160; d++)
    if (m->layers % d == 0 || (d & (d - 1)) == 0)
      list[n++] = d;
  int npp = dim_values(b->set[PK_PP], b->pp, list, n, pps);
  n = 0;
  for (long c = 1; c <= 16; c *= 2)
    if (c == 1 || (m->seq % (2 * c) == 0 && m->seq / c >= 2048))
      list[n++] = c;
  int ncp = dim_values(b->set[PK_CP], b->cp, list, n, cps);
  n = 0;
  for (long e = 1; e <= 64 && e <= m->experts; e *= 2)
    if (m->experts % e == 0)
      list[n++] = e;
  int nep = dim_values(b->set[PK_EP], b->ep, list, n, eps);
  static const long mb_list[] = {1, 2, 4, 8, 16};
  int nmb = dim_values(b->set[PK_MICRO_BATCH], b->micro_batch, mb_list, 5, mbs);
  static const long rc_list[] = {RECOMP_NONE, RECOMP_SELECTIVE, RECOMP_FULL};
  int nrc = dim_values(b->set[PK_RECOMPUTE], b->recompute, rc_list, 3, rcs);
  static const long sh_list[] = {SHARD_NONE, SHARD_ZERO1, SHARD_FSDP,
                                 SHARD_HSDP};
  bool sh_fixed = b->set[PK_ZERO] || b->set[PK_FSDP] || b->set[PK_HSDP];
  int nsh = dim_values(sh_fixed, SHARD_USER, sh_list, 4, shs);
  for (int i = 0; i < nts; i++)
    for (int j = 0; j < ncp; j++)
      for (int q = 0; q < npp; q++) {
        bool g3 = ts[i].t3[0] > 0;
        /* Tensor3D: no CP; pipelines only when asked for. */
        if (g3 && (cps[j] > 1 || (pps[q] > 1 && !b->set[PK_PP])))
          continue;
        long mp = ts[i].tp * cps[j] * pps[q];
        if (mp > gpus || gpus % mp != 0)
          continue;
        static const long v_list[] = {0, 2, 4};
        long user_v = b->schedule == SCHED_INTERLEAVED ? b->vchunks : 0;
        int nv = b->set[PK_SCHEDULE] ? dim_values(true, user_v, v_list, 1, vs)
                 : pps[q] > 1       ? dim_values(false, 0, v_list, 3, vs)
                                    : dim_values(true, 0, v_list, 1, vs);
        for (int e = 0; e < nep; e++)
          for (int u = 0; u < nmb; u++)
            for (int x = 0; x < nv; x++)
              for (int r = 0; r < nrc; r++)
                for (int z = 0; z < nsh; z++) {
                  long in_node = s->node_gpus / (ts[i].tp * cps[j]);
                  if (shs[z] == SHARD_HSDP &&
                      (in_node < 2 || in_node >= gpus / mp))
                    continue; /* no DP ranks to shard over in a node, or
                                 no other node: FSDP */
                  if (g3 && (eps[e] > 1 || shs[z] >= SHARD_FSDP ||
                             mbs[u] % ts[i].pieces != 0))
                    continue; /* what Tensor3D does not combine with */
                  if (shs[z] != SHARD_NONE && shs[z] != SHARD_USER &&
                      gpus / mp * cps[j] < 2)
                    continue; /* nothing to shard over: as unsharded */
                  struct cand k = {.tp = ts[i].tp, .pp = pps[q],
                                   .cp = cps[j], .ep = eps[e], .mb = mbs[u],
                                   .v = vs[x], .recompute = (int)rcs[r],
                                   .shard = (int)shs[z],
                                   .t3 = {ts[i].t3[0], ts[i].t3[1],
                                          ts[i].t3[2]},
                                   .pieces = ts[i].pieces};
                  try_cand(s, &k);
                }
      }
  free(ts);
}

static void cand_text(const struct cand *k, long dp, char *buf, size_t size)
{
  static const char *rc[] = {"none", "selective", "full"};
  static const char *sh[] = {"", " zero-1", " fsdp", " hsdp", ""};
  size_t n;
  if (k->t3[0])
    n = (size_t)snprintf(buf, size, "3D %ldx%ldx%ld k%ld PP %ld DP %ld",
                         k->t3[0], k->t3[1], k->t3[2], k->pieces, k->pp, dp);
  else
    n = (size_t)snprintf(buf, size, "TP %ld PP %ld DP %ld", k->tp, k->pp,
                         dp);
  if (k->cp > 1 && n < size)
    n += (size_t)snprintf(buf + n, size - n, " CP %ld", k->cp);
  if (k->ep > 1 && n < size)
    n += (size_t)snprintf(buf + n, size - n, " EP %ld", k->ep);
  if (n < size)
    n += (size_t)snprintf(buf + n, size - n, " mb %ld", k->mb);
  if (k->v && n < size)
    n += (size_t)snprintf(buf + n, size - n, " interleaved:%ld", k->v);
  if (n < size)
    snprintf(buf + n, size - n, " %s%s", rc[k->recompute], sh[k->shard]);
}

/* One simulation given to the pool; freed when the pool hands it back. */
struct job {
  long cand;
  struct workload wk; /* the job the child simulates */
  const struct cluster *c;
};

/* In the child (sim/pool.h): simulate the job and send the result on
 * standard output; returns the exit status. */
static int child_main(void *task)
{
  const struct job *j = task;
  const struct workload *wk = &j->wk;
  struct sim_msg msg = {0};
  struct weft_err err = {0};
  struct job_spec spec;
  job_spec_init(&spec, wk, j->c);
  spec.platform_loaded = true; /* by cmd_plan, before the pool forks */
  struct job_result res;
  if (!job_run(&spec, &res, &err)) {
    msg.ok = 1;
    msg.iteration_s = res.r.iteration_s;
    msg.tflops = res.r.hw_flops_per_gpu / 1e12;
    msg.exposed_s = res.r.res.exposed_s;
    job_result_release(&res);
  }
  if (!msg.ok)
    snprintf(msg.err, sizeof msg.err, "%s", err.msg);
  ssize_t put = write(STDOUT_FILENO, &msg, sizeof msg);
  return put == (ssize_t)sizeof msg ? 0 : 1;
}

/* What simulate_all's pool callbacks share. */
struct sims {
  struct search *s;
  long next, want, done;
  double t0, budget_s;
  bool tty;
};

/* The pool's next task: the next candidate that can be simulated; those
 * that cannot are marked on the way. */
static int next_sim(void *ctx, pool_child_fn **out_run, void **out_task,
                    struct weft_err *unused)
{
  struct sims *m = ctx;
  struct search *s = m->s;
  while (m->next < m->want) {
    struct cand *k = &s->k[m->next];
    struct job *j = xmalloc(sizeof *j);
    j->cand = m->next++;
    j->wk = *s->w;
    j->c = s->c;
    struct weft_err err = {0};
    int bad = cand_plan(&s->w->plan, &s->w->model, s->c, s->node_gpus,
                        k, &j->wk.plan, &err);
    if (!bad && !job_check_size(&j->wk, false, &err)) {
      *out_run = child_main;
      *out_task = j;
      return 1;
    }
    free(j);
    k->sim = bad ? SIM_FAILED : SIM_TOO_BIG;
    snprintf(k->why, sizeof k->why, "%s", err.msg);
  }
  return 0;
}

static int done_sim(void *ctx, void *task, const struct pool_result *r,
                    struct weft_err *unused)
{
  struct sims *m = ctx;
  struct job *j = task;
  struct cand *k = &m->s->k[j->cand];
  free(j);
  if (r->err_len) /* what the simulation said, as if it had said it here */
    fwrite(r->err, 1, r->err_len, stderr);
  if (r->end == POOL_CUT || r->end == POOL_STOPPED) {
    k->sim = SIM_CUT;
    return 0;
  }
  struct sim_msg msg = {0};
  bool whole = r->end == POOL_EXITED && r->out_len == sizeof msg;
  if (whole)
    memcpy(&msg, r->out, sizeof msg);
  if (whole && msg.ok) {
    k->sim = SIM_OK;
    k->sim_s = msg.iteration_s;
    k->tflops = msg.tflops;
    k->sim_exposed = msg.exposed_s;
  } else {
    k->sim = SIM_FAILED;
    snprintf(k->why, sizeof k->why, "%s",
             whole ? msg.err : "the simulation died");
  }
  m->done++;
  return 0;
}

static void tick_sim(void *ctx, int running)
{
  struct sims *m = ctx;
  if (m->tty)
    fprintf(stderr, "\rweft: %ld of %ld plans simulated, %.0f s of the "
            "%.0f s budget\033[K", m->done, m->want, cli_wall_s() - m->t0,
            m->budget_s);
}

/* Simulate the candidates in order (best estimate first) until `top` are
 * done or `budget_s` is spent; `jobs` at once.  Returns 0, the signal that
 * stopped it (positive), or an error. */
static int simulate_all(struct search *s, long top, double budget_s,
                        long jobs, bool tty, struct weft_err *err)
{
  if (top <= 0 || budget_s <= 0)
    return 0;
  struct sims m = {s, 0, top < s->n ? top : s->n, 0, cli_wall_s(), budget_s,
                   tty};
  struct pool_opts po = {(int)jobs, 0, budget_s, 1 << 20};
  struct pool_ops ops = {next_sim, done_sim, tick_sim};
  int rc = pool_run(&po, &ops, &m, err);
  if (tty)
    fprintf(stderr, "\r\033[K");
  return rc;
}

/* Best estimate first; ties by the plan's dimensions, so that the order
 * never depends on qsort. */
static int cmp_est(const void *a, const void *b)
{
  const struct cand *x = a, *y = b;
  if (x->est_s != y->est_s)
    return x->est_s < y->est_s ? -1 : 1;
  const long kx[] = {x->tp, x->pp, x->cp, x->ep, x->mb, x->v, x->recompute,
                     x->shard, x->t3[0], x->t3[1], x->t3[2], x->pieces};
  const long ky[] = {y->tp, y->pp, y->cp, y->ep, y->mb, y->v, y->recompute,
                     y->shard, y->t3[0], y->t3[1], y->t3[2], y->pieces};
  for (int i = 0; i < 12; i++)
    if (kx[i] != ky[i])
      return kx[i] < ky[i] ? -1 : 1;
  return 0;
}

/* Simulated plans first, by simulated time; then the others by estimate. */
static int cmp_final(const void *a, const void *b)
{
  const struct cand *x = a, *y = b;
  bool sx = x->sim == SIM_OK, sy = y->sim == SIM_OK;
  if (sx != sy)
    return sx ? -1 : 1;
  if (sx && x->sim_s != y->sim_s)
    return x->sim_s < y->sim_s ? -1 : 1;
  return x->est_rank < y->est_rank ? -1 : x->est_rank > y->est_rank;
}

/* How the closed-form ranking compares with the simulated one over the
 * simulated plans (the array is in final order: simulated ones first). */
struct agreement {
  long n;              /* plans simulated */
  double spearman;     /* rank correlation (NAN under 2 plans) */
  long first_sim_rank; /* where the estimate's first choice came (0: not
                          simulated) */
  long best_est_rank;  /* the simulated best's rank by estimate */
  double err_min, err_med, err_max; /* (estimate - simulated) / simulated */
};

static int cmp_double(const void *a, const void *b)
{
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

static void agreement(const struct cand *k, long n, struct agreement *a)
{
  memset(a, 0, sizeof *a);
  a->spearman = NAN;
  while (a->n < n && k[a->n].sim == SIM_OK)
    a->n++;
  if (!a->n)
    return;
  a->best_est_rank = k[0].est_rank;
  /* Ranks by estimate among the simulated: sort their estimate ranks. */
  long *er = xcalloc((size_t)a->n, sizeof *er);
  double *err = xcalloc((size_t)a->n, sizeof *err);
  for (long i = 0; i < a->n; i++) {
    er[i] = k[i].est_rank;
    err[i] = (k[i].est_s - k[i].sim_s) / k[i].sim_s;
    if (k[i].est_rank == 1)
      a->first_sim_rank = i + 1;
  }
  double d2 = 0;
  for (long i = 0; i < a->n; i++) {
    long r = 1; /* rank of er[i] among the simulated estimate ranks */
    for (long j = 0; j < a->n; j++)
      r += er[j] < er[i];
    d2 += (double)((r - (i + 1)) * (r - (i + 1)));
  }
  double N = (double)a->n;
  if (a->n >= 2)
    a->spearman = 1 - 6 * d2 / (N * (N * N - 1));
  qsort(err, (size_t)a->n, sizeof *err, cmp_double);
  a->err_min = err[0];
  a->err_max = err[a->n - 1];
  a->err_med = a->n % 2 ? err[a->n / 2]
                        : (err[a->n / 2 - 1] + err[a->n / 2]) / 2;
  free(er);
  free(err);
}

static const char *status_name(enum sim_status st)
{
  static const char *n[] = {"estimated", "simulated", "failed", "cut",
                            "too big"};
  return n[st];
}

static long cand_dp(const struct search *s, const struct cand *k)
{
  return s->c->gpus / (k->tp * k->pp * k->cp);
}

static void print_text(const struct search *s, long show,
                       const struct agreement *a, double budget_s,
                       double sim_wall)
{
  const struct workload *w = s->w;
  printf("%s on %d x %s (%s), global batch %ld: %ld plans tried, %ld valid, "
         "%ld fit in %.0f GB; ranked by the closed form in %.2f s\n",
         w->model.name, s->c->gpus, s->c->gpu.name, s->c->name,
         w->plan.global_batch, s->tried, s->valid, s->fit,
         s->c->gpu.hbm_bytes / 1e9, s->est_wall_s);
  printf("%ld simulated in %.1f s (budget %.0f s)\n\n", a->n, sim_wall,
         budget_s);
  printf("%4s  %-52s %10s %11s %8s %9s %9s %8s\n", "rank", "plan",
         "estimate_s", "simulated_s", "TFLOP/s", "memory_GB", "exposed_s",
         "est_rank");
  long rows = show > 0 && show < s->n ? show : s->n;
  for (long i = 0; i < rows; i++) {
    const struct cand *k = &s->k[i];
    char text[128];
    cand_text(k, cand_dp(s, k), text, sizeof text);
    if (k->sim == SIM_OK)
      printf("%4ld  %-52s %10.4f %11.4f %8.1f %9.1f %9.4f %8ld\n", i + 1,
             text, k->est_s, k->sim_s, k->tflops, k->mem / 1e9,
             k->sim_exposed, k->est_rank);
    else
      printf("%4s  %-52s %10.4f %11s %8s %9.1f %9.4f %8ld\n", "-", text,
             k->est_s, status_name(k->sim), "", k->mem / 1e9, k->est_exposed,
             k->est_rank);
  }
  if (rows < s->n)
    printf("  ... %ld more (--show 0 lists them all)\n", s->n - rows);
  printf("\n");
  if (a->n >= 2) {
    /* The first choice was not simulated (cut by the budget, failed, too
     * big): say so, rather than "came #0". */
    char first[64] = "";
    for (long i = 0; i < s->n && a->first_sim_rank == 0; i++)
      if (s->k[i].est_rank == 1)
        snprintf(first, sizeof first, "its first choice was not simulated "
                 "(%s)", s->k[i].sim == SIM_CUT ? "cut by the budget"
                 : status_name(s->k[i].sim));
    if (!first[0])
      snprintf(first, sizeof first, "its first choice came #%ld",
               a->first_sim_rank);
    printf("closed form against simulation over the %ld simulated plans: "
           "Spearman rank correlation %.3f; %s, the simulated best was #%ld "
           "by estimate; estimate error median %+.1f %%, from %+.1f to "
           "%+.1f %%\n", a->n, a->spearman, first, a->best_est_rank,
           100 * a->err_med, 100 * a->err_min, 100 * a->err_max);
  }
  const struct cand *b = &s->k[0];
  if (b->t3[0])
    printf("best: --tensor3d %ld,%ld,%ld --overdecompose %ld --pp %ld "
           "--micro-batch %ld", b->t3[0], b->t3[1], b->t3[2], b->pieces,
           b->pp, b->mb);
  else
    printf("best: --tp %ld --pp %ld --cp %ld --ep %ld --micro-batch %ld",
           b->tp, b->pp, b->cp, b->ep, b->mb);
  if (b->v)
    printf(" --schedule interleaved:%ld", b->v);
  static const char *rc[] = {"none", "selective", "full"};
  printf(" --recompute %s", rc[b->recompute]);
  if (b->tp > 1 && !b->t3[0] && !w->plan.set[PK_SP])
    printf(" --sp yes");
  if (b->shard == SHARD_ZERO1)
    printf(" --zero 1");
  else if (b->shard == SHARD_FSDP)
    printf(" --fsdp yes");
  else if (b->shard == SHARD_HSDP)
    printf(" --hsdp %ld", s->node_gpus / (b->tp * b->cp));
  printf("  (%s)\n", b->sim == SIM_OK ? "simulated" : "by estimate only");
}

static void json_num(const char *key, double v, const char *sep)
{
  if (isfinite(v))
    printf("\"%s\": %.9g%s", key, v, sep);
  else
    printf("\"%s\": null%s", key, sep);
}

static void print_json(const struct search *s, long show,
                       const struct agreement *a, double budget_s)
{
  const struct workload *w = s->w;
  static const char *rc[] = {"none", "selective", "full"};
  static const char *sh[] = {"none", "zero-1", "fsdp", "hsdp", "as given"};
  printf("{\"model\": \"%s\", \"cluster\": \"%s\", \"gpus\": %d, "
         "\"global_batch\": %ld, \"tried\": %ld, \"valid\": %ld, \"fit\": %ld, "
         "\"simulated\": %ld, ", w->model.name, s->c->name, s->c->gpus,
         w->plan.global_batch, s->tried, s->valid, s->fit, a->n);
  json_num("budget_s", budget_s, ", ");
  json_num("spearman", a->n >= 2 ? a->spearman : NAN, ", ");
  printf("\"first_choice_simulated_rank\": %ld, \"best_estimate_rank\": %ld, "
         "\"plans\": [", a->first_sim_rank, a->best_est_rank);
  long rows = show > 0 && show < s->n ? show : s->n;
  for (long i = 0; i < rows; i++) {
    const struct cand *k = &s->k[i];
    printf("%s\n  {\"rank\": %ld, \"tp\": %ld, \"pp\": %ld, \"dp\": %ld, "
           "\"cp\": %ld, \"ep\": %ld, \"micro_batch\": %ld, \"schedule\": ",
           i ? "," : "", k->sim == SIM_OK ? i + 1 : 0, k->tp, k->pp,
           cand_dp(s, k), k->cp, k->ep, k->mb);
    if (k->v)
      printf("\"interleaved:%ld\"", k->v);
    else
      printf("\"1f1b\"");
    if (k->t3[0])
      printf(", \"tensor3d\": \"%ld,%ld,%ld\", \"pieces\": %ld", k->t3[0],
             k->t3[1], k->t3[2], k->pieces);
    else
      printf(", \"tensor3d\": null, \"pieces\": 1");
    printf(", \"recompute\": \"%s\", \"sharding\": \"%s\", \"status\": "
           "\"%s\", \"estimate_rank\": %ld, ", rc[k->recompute],
           sh[k->shard], status_name(k->sim), k->est_rank);
    json_num("estimate_s", k->est_s, ", ");
    json_num("simulated_s", k->sim == SIM_OK ? k->sim_s : NAN, ", ");
    json_num("tflops_per_gpu", k->sim == SIM_OK ? k->tflops : NAN, ", ");
    json_num("exposed_comm_s", k->sim == SIM_OK ? k->sim_exposed
                                                : k->est_exposed, ", ");
    json_num("memory_per_gpu_bytes", k->mem, "}");
  }
  printf("\n]}\n");
}

static int parse_long(const char *flag, const char *v, long min, long max,
                      long dflt, long *out)
{
  if (!v) {
    *out = dflt;
    return 0;
  }
  struct weft_err err = {0};
  if (units_parse_int(v, min, max, out, &err))
    return cli_usage("--%s: %s", flag, err.msg);
  return 0;
}

/* The search's own options (--budget, --top, --jobs, --show, --grid-max,
 * --family), each checked; returns 0 or the exit status of a bad one. */
struct plan_opts {
  double budget;
  long top, jobs, show, grid_max;
  int family;
};

static int plan_options(const struct opts *o, struct plan_opts *po)
{
  long cores = sysconf(_SC_NPROCESSORS_ONLN);
  po->budget = 60;
  const char *bv = opts_get(o, PLAN_BUDGET);
  if (bv) {
    struct weft_err err = {0};
    char *end;
    po->budget = strtod(bv, &end); /* a bare number is seconds */
    if ((end == bv || *end) && units_parse(bv, UNIT_TIME, &po->budget, &err))
      po->budget = -1;
    if (!(po->budget >= 0))
      return cli_usage("--budget: %s", err.code ? err.msg
                                                : "a time of 0 or more");
  }
  int rc = parse_long("top", opts_get(o, PLAN_TOP), 0, 100000,
                      32, &po->top);
  if (!rc)
    rc = parse_long("jobs", opts_get(o, PLAN_JOBS), 1, 64,
                    cores < 1 ? 1 : cores > 64 ? 64 : cores, &po->jobs);
  if (!rc)
    rc = parse_long("show", opts_get(o, PLAN_SHOW), 0,
                    1000000, 20, &po->show);
  if (!rc)
    rc = parse_long("grid-max", opts_get(o, PLAN_GRID_MAX), 2,
                    WEFT_MAX_DEGREE, 0, &po->grid_max);
  if (rc)
    return rc;
  po->family = FAM_ALL;
  const char *fv = opts_get(o, PLAN_FAMILY);
  if (fv) {
    static const char *const fams[] = {"all", "megatron", "tensor3d"};
    po->family = -1;
    for (int i = 0; i < 3; i++)
      if (strcmp(fv, fams[i]) == 0)
        po->family = i;
    if (po->family < 0)
      return cli_usage("--family: '%s' is not megatron, tensor3d or all", fv);
  }
  return 0;
}

/* No plan came out of the search: say why (the settings given rule out
 * every plan, or none fits in memory); returns the exit status. */
static int no_plan(const struct search *s, const struct workload *w,
                   const struct cluster *c)
{
  struct weft_err err = {0};
  if (!s->valid) { /* the settings given rule out every plan: say why */
    struct plan p = w->plan;
    if (plan_resolve(&p, &w->model, c->gpus, &err))
      return cli_fail(&err);
    fprintf(stderr, "weft: no valid plan\n");
    return 1;
  }
  fprintf(stderr, "weft: none of the %ld valid plans fits in the %.0f GB "
          "of a %s: the least needs %.1f GB per GPU (fix fewer settings, "
          "or give the job more GPUs)\n", s->valid, c->gpu.hbm_bytes / 1e9,
          c->gpu.name, s->least_mem / 1e9);
  return 1;
}

/* Simulate the best `po->top` plans within the budget on the cluster's
 * platform.  Returns 0, or the exit status of a failure or a stop. */
static int simulate_top(struct search *s, struct cluster *c,
                        const struct plan_opts *po)
{
  struct weft_err err = {0};
  /* SimGrid sets a SIGINT handler of its own when it starts, one that
   * exits through its cleanup; this process keeps its own disposition
   * (the pool catches SIGINT while children run, and the default kills
   * quietly before and after). */
  struct sigaction old_int;
  sigaction(SIGINT, NULL, &old_int);
  platload_boot(0);
  sigaction(SIGINT, &old_int, NULL);
  if (platload_cluster(c, &err))
    return cli_fail(&err);
  int stop = simulate_all(s, po->top, po->budget, po->jobs,
                          isatty(STDERR_FILENO), &err);
  if (!stop)
    return 0;
  if (stop < 0)
    return cli_fail(&err);
  long simulated = 0;
  for (long i = 0; i < s->n; i++)
    simulated += s->k[i].sim == SIM_OK;
  fprintf(stderr, "weft: plan stopped by %s after %ld plans simulated\n",
          stop == SIGINT ? "SIGINT" : "SIGTERM", simulated);
  return 128 + stop;
}

int cmd_plan(int argc, char **argv)
{
  struct opts o;
  int code;
  if (cli_parse(&cmd_plan_spec, argc, argv, &o, &code))
    return code;
  struct plan_opts po;
  int rc = plan_options(&o, &po);
  if (rc)
    return rc;
  struct workload w;
  struct catalog *cat;
  struct cluster c;
  struct weft_err err = {0};
  if (opts_workload_hw(&o, "selene", &w, &cat, &c, &err))
    return cli_fail(&err);
  if (w.plan.compress != CM_NONE) {
    catalog_free(cat);
    return cli_usage("--compress: weft plan ranks plans without gradient "
                     "compression; run the plan it finds with --compress");
  }
  if (w.plan.global_batch < 1) {
    catalog_free(cat);
    return cli_usage("the global batch is required (--global-batch or "
                     "global_batch= in the workload file)");
  }
  struct search s = {.w = &w, .c = &c, .family = po.family,
                     .grid_max = po.grid_max};
  s.node_gpus = c.nvl_rack > c.gpus_per_node ? c.nvl_rack : c.gpus_per_node;
  if (!s.grid_max)
    s.grid_max = s.node_gpus;
  double t0 = cli_wall_s();
  enumerate(&s);
  s.est_wall_s = cli_wall_s() - t0;
  if (s.n)
    qsort(s.k, (size_t)s.n, sizeof *s.k, cmp_est);
  for (long i = 0; i < s.n; i++)
    s.k[i].est_rank = i + 1;
  if (!s.n) {
    rc = no_plan(&s, &w, &c);
    free(s.k);
    catalog_free(cat);
    return rc;
  }
  double t1 = cli_wall_s();
  if (po.top > 0 && po.budget > 0)
    rc = simulate_top(&s, &c, &po);
  if (!rc) {
    double sim_wall = cli_wall_s() - t1;
    qsort(s.k, (size_t)s.n, sizeof *s.k, cmp_final);
    struct agreement a;
    agreement(s.k, s.n, &a);
    if (opts_get(&o, PLAN_JSON))
      print_json(&s, po.show, &a, po.budget);
    else
      print_text(&s, po.show, &a, po.budget, sim_wall);
  }
  free(s.k);
  catalog_free(cat);
  return rc;
}
