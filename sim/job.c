/*
 * job.c - one training job from resolved settings to its figures
 * (job.h).  The order of the steps is the order of the errors a user
 * sees: the size check, the kernel table, the graph, the trace
 * selection, the platform, the replay, the traces, the baseline.
 */
#include "sim/job.h"

#include <math.h>
#include <string.h>

#include "sim/base/names.h"
#include "sim/base/units.h"
#include "sim/commands.h"
#include "sim/platload.h"
#include "sim/symmetry.h"
#include "traces/trace.h"
#include "workloads/accounting.h"
#include "workloads/builder.h"

void job_spec_init(struct job_spec *s, const struct workload *w,
                   const struct cluster *c)
{
  memset(s, 0, sizeof *s);
  s->w = w;
  s->c = c;
  engine_params_default(&s->ep);
  s->ep.dtype = w->model.dtype;
  s->ep.attn_kernel = w->plan.attn_kernel;
  s->ep.comm_contention = w->plan.comm_contention;
  s->ep.host_op_s = w->plan.host_op_s;
}

int job_check_size(const struct workload *w, bool force, struct weft_err *err)
{
  struct graph_estimate e;
  build_estimate(&w->model, &w->plan, &e);
  if (force || e.bytes <= WEFT_MAX_GRAPH_BYTES)
    return 0;
  char a[32], b[32];
  return weft_errf(err, WEFT_ELIMIT, "the task graph of this job would take "
                   "about %s (%.3g tasks), above the limit of %s; use fewer "
                   "micro-batches or layers per stage, or --force",
                   units_fmt_human(e.bytes, UNIT_SIZE, a, sizeof a), e.tasks,
                   units_fmt_human(WEFT_MAX_GRAPH_BYTES, UNIT_SIZE, b,
                                   sizeof b));
}

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

static void record_part(void *ctx, long src, long dst, double bytes,
                        double s, double e)
{
  const struct tracing *t = ctx;
  trace_add_flow_part(t->tr, src, dst,
                      cluster_node_of(t->c, (int)src) ==
                          cluster_node_of(t->c, (int)dst),
                      bytes, s, e);
}

/* The trace selection (--trace-ranks, --trace-window, --trace-level). */
static int trace_options(const struct job_trace *jt, struct trace *tr,
                         struct weft_err *err)
{
  double t0 = 0, t1 = INFINITY;
  int lv = TRACE_ALL;
  if (jt->window) {
    char a[64];
    const char *colon = strchr(jt->window, ':');
    size_t n = colon ? (size_t)(colon - jt->window) : 0;
    if (!colon || n >= sizeof a)
      return weft_errf(err, WEFT_EINVAL, "--trace-window: '%s' is not "
                       "T0:T1, such as 1s:2.5s", jt->window);
    memcpy(a, jt->window, n);
    a[n] = '\0';
    if (units_parse(a, UNIT_TIME, &t0, err) ||
        units_parse(colon + 1, UNIT_TIME, &t1, err))
      return weft_err_prefix(err, "--trace-window");
  }
  if (jt->level &&
      names_choice(jt->level, (const char *const[]){"all", "comm", NULL},
                   &lv, err))
    return weft_err_prefix(err, "--trace-level");
  return trace_select(tr, jt->ranks, t0, t1, (enum trace_level)lv, err);
}

/* The engine's symmetric shortcuts (symmetry.h) that replaying every
 * rank and every flow turns off for the job of `g` (whole-node
 * collectives in closed form too when `closed_off`): their names into
 * what[size], the ranks and the ranks the shortcuts would simulate; false
 * when the job would take none. */
static bool shortcuts_lost(const struct job_spec *s, const struct graph *g,
                           const struct engine_params *ep, bool closed_off,
                           char *what, size_t size, long *out_nranks,
                           long *out_nsim)
{
  const struct cluster *c = s->c;
  const struct graph_layout *L = &g->layout;
  struct symmetry sy;
  symmetry_decide(L, c, ep->force_flows, false, &sy);
  bool closed = closed_off && !ep->force_flows && c->nvl_oversub == 1 &&
                L->tp == c->gpus_per_node && L->order[0] == PD_TP;
  long nranks = layout_ranks(L), nsim = 0;
  int node0 = cluster_node_of(c, 0);
  for (long r = 0; r < nranks; r += sy.rank_step)
    nsim += !sy.replicas || cluster_node_of(c, (int)r) == node0;
  /* Rings emit one node's flows over three nodes or more (coll.h). */
  sy.fabric = sy.fabric && nranks >= 3 * (long)c->gpus_per_node;
  if (nsim == nranks && !sy.fabric && !closed)
    return false;
  what[0] = '\0';
  const char *names[4] = {sy.tp ? "TP symmetry" : NULL,
                          sy.replicas ? "replica symmetry" : NULL,
                          sy.fabric ? "rings as one node's flows" : NULL,
                          closed ? "whole-node collectives in closed form"
                                 : NULL};
  for (int i = 0; i < 4; i++)
    if (names[i]) {
      if (what[0])
        strncat(what, ", ", size - strlen(what) - 1);
      strncat(what, names[i], size - strlen(what) - 1);
    }
  *out_nranks = nranks;
  *out_nsim = nsim;
  return true;
}

/* What tracing costs the replay of `g` (issue 40, item 8): a trace needs
 * every rank's tasks and every flow, so the engine's symmetric shortcuts
 * (symmetry.h) and whole-node collectives in closed form are off.  When
 * the job would have taken any, say so through jt->note: which, and how
 * many ranks are simulated instead of how many. */
static void trace_note(const struct job_spec *s, const struct graph *g,
                       const struct engine_params *ep)
{
  const struct job_trace *jt = &s->trace;
  char what[160];
  long nranks, nsim;
  if (!jt->note || ep->no_symmetry ||
      !shortcuts_lost(s, g, ep, true, what, sizeof what, &nranks, &nsim))
    return;
  char msg[512];
  snprintf(msg, sizeof msg, "tracing replays every rank and every flow, "
           "so this job's shortcuts are off (%s): %ld ranks simulated "
           "instead of %ld, each collective as its flows, whatever "
           "--trace-ranks keeps; expect a replay many times slower (the "
           "figures agree with an untraced run's)", what, nranks, nsim);
  jt->note(msg);
}

/* What stragglers, per-GPU variation and links down cost the replay of
 * `g` (issue 41, item 2): ranks that
 * differ cannot stand for one another, so the engine's symmetric
 * shortcuts are off (engine.c); say so through jt->note when the job
 * would have taken any.  Tracing says it already. */
static void straggler_note(const struct job_spec *s, const struct graph *g,
                           const struct engine_params *ep)
{
  const struct job_trace *jt = &s->trace;
  char what[160];
  long nranks, nsim;
  if (!jt->note || ep->no_symmetry || jt->paje || jt->chrome ||
      !cluster_has_stragglers(s->c) ||
      !shortcuts_lost(s, g, ep, false, what, sizeof what, &nranks, &nsim))
    return;
  char msg[512];
  snprintf(msg, sizeof msg, "slow_gpu, slow_nic, gpu_sigma and down_links "
           "make the ranks differ, so this job's shortcuts are off (%s): %ld ranks "
           "simulated instead of %ld; expect a slower replay", what, nranks,
           nsim);
  jt->note(msg);
}

/* Replay `g` with the engine settings `ep`, writing the traces asked
 * for. */
static int simulate(const struct job_spec *s, const struct graph *g,
                    struct engine_params *ep, struct engine_result *res,
                    struct weft_err *err)
{
  const struct job_trace *jt = &s->trace;
  struct trace *tr = NULL;
  struct tracing tracing = {NULL, s->c};
  if (jt->paje || jt->chrome) {
    trace_note(s, g, ep);
    tracing.tr = tr = trace_new(g);
    for (long r = 0; r < layout_ranks(&g->layout); r++)
      trace_set_node(tr, r, cluster_node_of(s->c, (int)r));
    /* Chrome's "memory GB" counter for the ranks of the most loaded
     * stage, from the accounting's terms (issue 40, item 7). */
    struct memory mem;
    memory_per_gpu(&s->w->model, &s->w->plan, s->c->gpu.hbm_bytes, &mem);
    double act = mem.peak_inflight > 0 ? mem.activations /
                                             (double)mem.peak_inflight
                                       : 0;
    trace_set_memory(tr, mem.stage,
                     mem.total - mem.activations - mem.transient, act,
                     mem.transient);
    int rc = trace_options(jt, tr, err);
    if (rc) {
      trace_free(tr);
      return rc;
    }
    ep->on_task = record;
    ep->on_flow = record_flow;
    ep->on_flow_part = record_part;
    ep->part_ranks = trace_kept(tr);
    ep->ctx = &tracing;
  }
  straggler_note(s, g, ep);
  int rc = 0;
  if (!s->platform_loaded) {
    platload_boot(0);
    rc = platload_cluster(s->c, err);
  }
  if (!rc)
    rc = engine_run(g, s->c, ep, res, err);
  if (!rc && tr)
    rc = trace_write(tr, jt->paje, jt->chrome, err);
  trace_free(tr);
  ep->on_task = NULL;
  ep->on_flow = NULL;
  ep->on_flow_part = NULL;
  ep->part_ranks = NULL;
  ep->ctx = NULL;
  return rc;
}

/* The same job without gradient compression, replayed on the loaded
 * platform with the settings `ep` (no hooks): its iteration time in
 * *out_s (0 when it failed) and its data-parallel model. */
static void baseline(const struct job_spec *s, const struct engine_params *ep,
                     double *out_s, struct ddp_model *out_ddp,
                     struct weft_err *err)
{
  struct plan bp = s->w->plan;
  bp.compress = CM_NONE;
  struct graph *bg = build_graph(&s->w->model, &bp, err);
  struct engine_result bres = {0};
  if (bg && !engine_run(bg, s->c, ep, &bres, err)) {
    *out_s = bres.iteration_s;
    closed_form_ddp(bg, s->c, ep->dtype, out_ddp);
  }
  engine_result_free(&bres);
  graph_free(bg);
}

int job_run(const struct job_spec *s, struct job_result *out,
            struct weft_err *err)
{
  const struct workload *w = s->w;
  struct cost_table *table = NULL;
  struct graph *g = NULL;
  struct engine_result res = {0};
  struct engine_params ep = s->ep;
  int rc = job_check_size(w, s->force, err);
  if (!rc && s->kernel_table &&
      !(table = cost_table_read(s->kernel_table, err)))
    rc = err->code ? err->code : WEFT_EINVAL;
  if (!rc && !(g = build_graph(&w->model, &w->plan, err)))
    rc = err->code ? err->code : WEFT_EINVAL;
  if (rc)
    goto out;
  ep.table = table;
  struct engine_params bep = ep; /* the baseline's: no hooks */
  bep.on_progress = NULL;
  rc = simulate(s, g, &ep, &res, err);
  if (rc)
    goto out;
  /* With gradient compression, the same job without it, for the
   * speedup (a second replay on the loaded platform). */
  double base_s = 0;
  struct ddp_model base_ddp = {0};
  if (w->plan.compress != CM_NONE) {
    baseline(s, &bep, &base_s, &base_ddp, err);
    if (!base_s) {
      rc = err->code ? err->code : WEFT_EINVAL;
      goto out;
    }
  }
  report_fill(&out->r, w, s->c, g, &res, ep.dtype, cli_wall_s() - s->t0_s);
  res = (struct engine_result){0}; /* the report owns it now */
  out->r.base_iteration_s = base_s;
  out->r.base_ddp = base_ddp;
  out->r.collective = coll_algo_name(ep.algo);
  out->r.fidelity = fidelity_name(ep.fidelity);
  out->r.every_rank = ep.no_symmetry;
  out->r.kernel_table = s->kernel_table != NULL;
out:
  engine_result_free(&res);
  graph_free(g);
  cost_table_free(table);
  return rc;
}

void job_result_release(struct job_result *r)
{
  engine_result_free(&r->r.res);
}
