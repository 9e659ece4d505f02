/*
 * test_async_dgrad.c - Megatron-LM's asynchronous input-gradient
 * reduction (plan async_tp_grad; builder_layer.c, async_linear_bwd): the
 * graph holds the same GEMMs and collective bytes with it as without (with
 * SP, plus the input's all-gather), the collectives leave the compute
 * stream, and a replay's iteration is the unoverlapped one less, per
 * column-parallel linear, what running the collective beside its
 * weight-gradient GEMM saves: min(collective, GEMM) without contention, and
 * with it the GEMM on the SMs the NCCL kernel leaves while both run.
 */
#include <criterion/criterion.h>
#include <math.h>
#include <string.h>

#include "sim/engine.h"
#include "sim/platload.h"
#include "tests/engine_helpers.h"
#include "tests/plan_helpers.h"
#include "workloads/stack.h"

#define REL(a, b, tol)                                                         \
  cr_assert(fabs((double)(a) - (double)(b)) <= (tol) * fabs((double)(b)),      \
            "%.17g != %.17g", (double)(a), (double)(b))

/* Llama 3 8B, 2 layers, TP 8 on one node, one micro-batch of 8192 tokens;
 * `on`: async_tp_grad; `sp`: sequence parallelism. */
static struct graph *graph_of(bool on, bool sp, struct model *m,
                              struct plan *p)
{
  const char *const kv[] = {"tp", "8", "global_batch", "1", "sp",
                            sp ? "yes" : "no", "async_tp_grad",
                            on ? "yes" : "no", NULL};
  return build_layers("llama3-8b", 2, 8, kv, m, p);
}

/* Sum of GEMM FLOPs (what 0) or count of tasks (1) of layer l, phase ph. */
static double layer_sum(const struct graph *g, int what, long l, int ph)
{
  double s = 0;
  const struct program *pr = &g->prog[0];
  for (long i = 0; i < pr->n; i++) {
    const struct task *t = &pr->tasks[i];
    if (t->layer != l || t->phase != ph)
      continue;
    if (what == 1)
      s += 1;
    else if (t->kind == TK_KERNEL && t->op == KK_GEMM)
      s += t->flops;
  }
  return s;
}

Test(async_dgrad, same_work_collectives_off_the_compute_stream)
{
  struct model m;
  struct plan p;
  struct graph *off = graph_of(false, false, &m, &p);
  struct graph *on = graph_of(true, false, &m, &p);
  double act = 2.0 * 8192 * 4096; /* T x h, 2 bytes */
  for (long l = 0; l < 2; l++)
    for (int ph = PH_FWD; ph <= PH_BWD; ph++) {
      REL(layer_sum(on, 0, l, ph), layer_sum(off, 0, l, ph), 1e-15);
      cr_assert_eq(layer_sum(on, 1, l, ph), layer_sum(off, 1, l, ph));
    }
  /* Backward: the all-reduces of QKV's and FC1's input gradients, 2 per
   * layer, the same bytes, now on the side stream and not before them. */
  long n_off, n_on;
  REL(coll_sum(on, 0, CO_ALLREDUCE, GK_TP, PH_BWD, 1, 0, &n_on), 2 * act,
      1e-15);
  REL(coll_sum(off, 0, CO_ALLREDUCE, GK_TP, PH_BWD, 1, 0, &n_off), 2 * act,
      1e-15);
  cr_assert_eq(n_on, 2);
  cr_assert_eq(n_off, 2);
  long side = 0;
  const struct program *pr = &on->prog[0];
  for (long i = 0; i < pr->n; i++) {
    const struct task *t = &pr->tasks[i];
    if (t->kind != TK_COLL || t->group != GK_TP || t->layer < 0)
      continue; /* (the embedding's and the loss's stay as they were) */
    bool bwd_ar = t->phase == PH_BWD && t->op == CO_ALLREDUCE;
    cr_assert_eq(t->stream, bwd_ar ? ST_CP : ST_COMPUTE);
    side += bwd_ar;
    if (bwd_ar) { /* the weight gradient follows it on the compute stream */
      const struct task *w = &pr->tasks[i + 1];
      cr_assert_eq(w->op, KK_GEMM);
      cr_assert_eq(w->stream, ST_COMPUTE);
      cr_assert_eq(w->role >> 6, GP_WGRAD, "role %d", w->role);
    }
  }
  cr_assert_eq(side, 2 * 2);
  graph_free(off);
  graph_free(on);
}

Test(async_dgrad, sp_gathers_the_input_again)
{
  struct model m;
  struct plan p;
  struct graph *off = graph_of(false, true, &m, &p);
  struct graph *on = graph_of(true, true, &m, &p);
  double act = 2.0 * 8192 * 4096;
  long n;
  REL(layer_sum(on, 0, 1, PH_BWD), layer_sum(off, 0, 1, PH_BWD), 1e-15);
  /* the reduce-scatters unchanged; QKV's and FC1's inputs gathered again */
  REL(coll_sum(on, 0, CO_REDUCE_SCATTER, GK_TP, PH_BWD, 1, 0, &n), 2 * act,
      1e-15);
  cr_assert_eq(n, 2);
  /* The output gradients of the projection and FC2, and the inputs of
   * QKV and FC1: without the setting too (builder_layer.c,
   * sp_regather_bytes), blocking the compute stream there. */
  REL(coll_sum(off, 0, CO_ALLGATHER, GK_TP, PH_BWD, 1, 0, &n), 4 * act,
      1e-15);
  cr_assert_eq(n, 4);
  REL(coll_sum(on, 0, CO_ALLGATHER, GK_TP, PH_BWD, 1, 0, &n), 4 * act,
      1e-15);
  cr_assert_eq(n, 4);
  /* Where they run: the inputs' gathers just before a data gradient, on
   * the compute stream without the setting, beside it with it. */
  for (int k = 0; k < 2; k++) {
    const struct program *pr = &(k ? on : off)->prog[0];
    long side = 0, blocking = 0;
    for (long i = 0; i + 1 < pr->n; i++) {
      const struct task *t = &pr->tasks[i];
      if (t->kind != TK_COLL || t->op != CO_ALLGATHER || t->layer != 1 ||
          t->phase != PH_BWD || t->mb != 0)
        continue;
      side += t->stream == ST_CP;
      blocking += t->stream == ST_COMPUTE;
      if (t->stream == ST_CP || pr->tasks[i + 1].op == KK_GEMM)
        cr_assert_eq(pr->tasks[i + 1].role >> 6, GP_DGRAD);
    }
    cr_assert_eq(side, k ? 2 : 0);
    cr_assert_eq(blocking, k ? 2 : 4);
  }
  graph_free(off);
  graph_free(on);
}

/* With TE's userbuffers overlap the bulk overlap takes these linears: the
 * setting changes nothing in the layers (no double counting).  The output
 * layer, Megatron's own ColumnParallelLinear, gathers its input again
 * beside its data gradient with the setting. */
Test(async_dgrad, userbuffers_take_precedence)
{
  const char *const a[] = {"tp", "8", "global_batch", "1", "sp", "yes",
                           "tp_comm_overlap", "te", NULL};
  const char *const b[] = {"tp", "8", "global_batch", "1", "sp", "yes",
                           "tp_comm_overlap", "te", "async_tp_grad", "yes",
                           NULL};
  struct model m;
  struct plan p;
  struct graph *ga = build_layers("llama3-8b", 2, 8, a, &m, &p);
  struct graph *gb = build_layers("llama3-8b", 2, 8, b, &m, &p);
  cr_assert_eq(ga->prog[0].n, gb->prog[0].n);
  for (long i = 0; i < ga->prog[0].n; i++) {
    const struct task *x = &ga->prog[0].tasks[i], *y = &gb->prog[0].tasks[i];
    bool head_ag = x->kind == TK_COLL && x->op == CO_ALLGATHER &&
                   x->layer == -1 && x->phase == PH_BWD &&
                   x->stream != y->stream;
    if (head_ag)
      cr_assert(x->stream == ST_COMPUTE && y->stream == ST_CP);
    else
      cr_assert_eq(x->stream, y->stream);
    cr_assert_eq(x->op, y->op);
    cr_assert_eq(x->bytes, y->bytes);
  }
  graph_free(ga);
  graph_free(gb);
}

Test(async_dgrad, stacks)
{
  struct plan p;
  struct weft_err err = {0};
  plan_init(&p);
  cr_assert_eq(stack_apply(&p, "megatron-core", "t", &err), 0, "%s", err.msg);
  cr_assert(p.async_tp_grad);
  plan_init(&p);
  cr_assert_eq(stack_apply(&p, "megatron-2021", "t", &err), 0, "%s", err.msg);
  cr_assert(!p.async_tp_grad); /* v2.5 all-reduces synchronously */
  plan_init(&p);
  cr_assert(!p.async_tp_grad); /* off by default */
}

Test(async_dgrad, bad_value)
{
  refused("llama3-8b", KV("async_tp_grad", "maybe"), 8,
          "--async_tp_grad: 'maybe' is not yes or no");
}

/* ---- replays on one DGX H100 ---- */

static struct cluster node;

/* One DGX H100 node, booted as the platform (engine_helpers.h). */
static void load_node(void) { load_dgx_h100_node(&node); }

static double replay(const struct graph *g, bool contention)
{
  return replay_on(&node, g, contention);
}

/* Task t of graph g alone on a TP 8 graph of its own. */
static double alone(const struct graph *g, long i)
{
  return task_alone(&node, g, i, true);
}

/* NCCL's CTAs for a collective this large (sim/engine.c, COMM_CTAS). */
#define CTAS 24

/* Without contention, each all-reduce beside its weight gradient saves
 * min(all-reduce, GEMM); with it, the GEMM runs on SMs - 24 SMs (its
 * waves of 128 x 128 tiles on them: slowdown s) while the all-reduce
 * runs, so the step takes AR + (1 - AR / Ts) wg, Ts = (wg - launch) s +
 * launch, or AR if that is longer. */
static void check_replay(bool contention)
{
  load_node();
  struct model m;
  struct plan p;
  struct graph *off = graph_of(false, false, &m, &p);
  struct graph *on = graph_of(true, false, &m, &p);
  double save = 0;
  long n = 0;
  const struct program *pr = &on->prog[0];
  for (long i = 0; i < pr->n; i++) {
    const struct task *t = &pr->tasks[i];
    if (t->kind != TK_COLL || t->stream != ST_CP)
      continue;
    const struct task *w = &pr->tasks[i + 1];
    double ar = alone(on, i), wg = alone(on, i + 1), step;
    cr_assert(ar > 0 && wg > 0);
    if (!contention) {
      step = fmax(ar, wg);
    } else {
      double S = node.gpu.sms, L = node.gpu.launch_s;
      double tiles = ceil(w->m / 128.0) * ceil(w->n / 128.0);
      double s = ceil(tiles / (S - CTAS)) / ceil(tiles / S);
      double Ts = (wg - L) * s + L;
      step = ar < Ts ? ar + (1 - ar / Ts) * wg : ar;
    }
    save += ar + wg - step;
    n++;
  }
  cr_assert_eq(n, 2 * 2 + 1); /* and the output layer's */
  cr_assert(save > 0);
  REL(replay(on, contention), replay(off, contention) - save, 1e-9);
  graph_free(off);
  graph_free(on);
}

Test(async_dgrad, replay_without_contention) { check_replay(false); }

Test(async_dgrad, replay_with_contention) { check_replay(true); }
