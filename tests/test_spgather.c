/*
 * test_spgather.c - with sequence parallelism, the backward of a
 * column-parallel linear gathers its saved input shard again for the
 * weight gradient (builder_layer.c, sp_regather_bytes; Megatron-LM's
 * LinearWithGradAccumulationAndAsyncCommunication.backward, Transformer
 * Engine's LayerNormLinear/Linear backward): per layer, QKV's and FC1's
 * inputs, the forward's bytes (BF16 T x h, FP8 1 byte an element), with
 * or without recomputation; the output layer's input too; none without
 * SP, none where torchtitan's DTensor keeps the gathered input; and a
 * replay in which, with async_tp_grad, each gather runs beside its data
 * gradient and the iteration shortens by the closed form of the overlap.
 */
#include <criterion/criterion.h>
#include <math.h>

#include "sim/engine.h"
#include "sim/platload.h"
#include "tests/engine_helpers.h"
#include "tests/plan_helpers.h"

#define REL(a, b, tol)                                                         \
  cr_assert(fabs((double)(a) - (double)(b)) <= (tol) * fabs((double)(b)),      \
            "%.17g != %.17g", (double)(a), (double)(b))

/* Llama 3 8B: 8192 tokens, hidden 4096; T x h in BF16. */
#define T_H (8192.0 * 4096)

/* Llama 3 8B, 2 layers, TP 8 (one micro-batch of 8192 tokens), with the
 * settings kv after TP's. */
static struct graph *tp8(const char *const *kv, struct model *m,
                         struct plan *p)
{
  const char *all[32] = {"tp", "8", "global_batch", "1"};
  int n = 4;
  for (int i = 0; kv[i]; i++)
    all[n++] = kv[i];
  all[n] = NULL;
  return build_layers("llama3-8b", 2, 8, all, m, p);
}

/* The backward all-gathers over TP of layer `l`, micro-batch 0, that come
 * just before a data-gradient GEMM of role `role` (graph_role's name:
 * "qkv", "fc1", "lm_head"), on any stream; their bytes in *out_bytes. */
static long input_gathers(const struct graph *g, long l, const char *role,
                          double *out_bytes)
{
  const struct program *pr = &g->prog[0];
  long n = 0;
  *out_bytes = 0;
  for (long i = 0; i + 1 < pr->n; i++) {
    const struct task *t = &pr->tasks[i], *x = &pr->tasks[i + 1];
    if (t->kind != TK_COLL || t->op != CO_ALLGATHER || t->group != GK_TP ||
        t->phase != PH_BWD || t->layer != l || t->mb != 0)
      continue;
    if (x->kind != TK_KERNEL || x->op != KK_GEMM ||
        x->role != graph_role(role, false, GP_DGRAD))
      continue;
    *out_bytes += t->bytes;
    n++;
  }
  return n;
}

/* One gather each before QKV's and FC1's data gradients, `bytes` each. */
static void layer_gathers_are(const struct graph *g, long l, double bytes)
{
  double b;
  cr_assert_eq(input_gathers(g, l, "qkv", &b), 1, "layer %ld QKV", l);
  REL(b, bytes, 1e-15);
  cr_assert_eq(input_gathers(g, l, "fc1", &b), 1, "layer %ld FC1", l);
  REL(b, bytes, 1e-15);
}

Test(spgather, bf16_per_layer_and_total)
{
  struct model m;
  struct plan p;
  struct graph *sp = tp8(KV("sp", "yes"), &m, &p);
  for (long l = 0; l < 2; l++)
    layer_gathers_are(sp, l, 2 * T_H);
  /* A layer's backward: the projection's and FC2's output gradients and
   * QKV's and FC1's inputs; forward: QKV's and FC1's inputs. */
  long n;
  REL(coll_sum(sp, 0, CO_ALLGATHER, GK_TP, PH_BWD, 1, 0, &n), 4 * 2 * T_H,
      1e-15);
  cr_assert_eq(n, 4);
  REL(coll_sum(sp, 0, CO_ALLGATHER, GK_TP, PH_FWD, 1, 0, &n), 2 * 2 * T_H,
      1e-15);
  cr_assert_eq(n, 2);
  /* The output layer's input (T x h, BF16), before its data gradient. */
  double b;
  cr_assert_eq(input_gathers(sp, -1, "lm_head", &b), 1);
  REL(b, 2 * T_H, 1e-15);
  graph_free(sp);
  /* Without SP the input is whole on every rank: nothing gathered. */
  struct graph *no = tp8(KV("sp", "no"), &m, &p);
  cr_assert_eq(coll_sum(no, 0, CO_ALLGATHER, GK_TP, -1, -2, -2, &n), 0);
  cr_assert_eq(n, 0);
  graph_free(no);
}

/* Recomputation reruns the forward's gathers (full) or none (selective),
 * and the backward gathers the inputs again either way: the rerun linears
 * save the local shard, as the first run did. */
Test(spgather, recomputation_keeps_it)
{
  struct model m;
  struct plan p;
  const char *modes[2] = {"full", "selective"};
  for (int k = 0; k < 2; k++) {
    struct graph *g = tp8(KV("sp", "yes", "recompute", modes[k]), &m, &p);
    layer_gathers_are(g, 1, 2 * T_H);
    long n;
    REL(coll_sum(g, 0, CO_ALLGATHER, GK_TP, PH_BWD, 1, 0, &n), 4 * 2 * T_H,
        1e-15);
    cr_assert_eq(n, 4);
    coll_sum(g, 0, CO_ALLGATHER, GK_TP, PH_RECOMP, 1, 0, &n);
    cr_assert_eq(n, k == 0 ? 2 : 0, "%s", modes[k]);
    graph_free(g);
  }
}

/* FP8 (delayed scaling): the LayerNormLinear saved its norm's FP8 rows;
 * they are gathered again, 1 byte an element, like the forward. */
Test(spgather, fp8_moves_one_byte_an_element)
{
  struct model m;
  struct plan p;
  struct graph *g = tp8(KV("sp", "yes", "dtype", "fp8"), &m, &p);
  layer_gathers_are(g, 1, T_H);
  /* the output layer stays BF16 (Megatron's own ColumnParallelLinear) */
  double b;
  cr_assert_eq(input_gathers(g, -1, "lm_head", &b), 1);
  REL(b, 2 * T_H, 1e-15);
  graph_free(g);
}

/* TE's userbuffers bulk overlap carries the gather itself (builder_tpo.c,
 * bld_tpo_bulk): one per linear, not two. */
Test(spgather, userbuffers_gather_once)
{
  struct model m;
  struct plan p;
  struct graph *g = tp8(KV("sp", "yes", "tp_comm_overlap", "te"), &m, &p);
  long n;
  coll_sum(g, 0, CO_ALLGATHER, GK_TP, PH_BWD, 1, 0, &n);
  cr_assert_eq(n, 2); /* QKV's and FC1's, beside their data gradients */
  const struct program *pr = &g->prog[0];
  for (long i = 0; i < pr->n; i++) {
    const struct task *t = &pr->tasks[i];
    if (t->kind == TK_COLL && t->op == CO_ALLGATHER && t->layer == 1 &&
        t->phase == PH_BWD && t->mb == 0)
      cr_assert_eq(t->stream, ST_T3);
  }
  graph_free(g);
}

/* torchtitan's DTensor saves the gathered input: no gather in the
 * backward, except the one its op-level selective checkpointing
 * recomputes (the all-gather is outside its save list). */
Test(spgather, torchtitan_dtensor)
{
  struct model m;
  struct plan p;
  double b;
  struct graph *g = tp8(KV("sp", "yes", "mem_framework", "torchtitan"), &m,
                        &p);
  cr_assert_eq(input_gathers(g, 1, "qkv", &b), 0);
  cr_assert_eq(input_gathers(g, 1, "fc1", &b), 0);
  cr_assert_eq(input_gathers(g, -1, "lm_head", &b), 0);
  graph_free(g);
  g = tp8(KV("sp", "yes", "mem_framework", "torchtitan", "recompute",
             "selective", "selective", "ops"),
          &m, &p);
  layer_gathers_are(g, 1, 2 * T_H);
  cr_assert_eq(input_gathers(g, -1, "lm_head", &b), 0);
  graph_free(g);
}

/* ---- a replay on one DGX H100 ---- */

static struct cluster node;

static double replay(const struct graph *g)
{
  return replay_on(&node, g, false);
}

/* Task i of g alone on a TP 8 graph of its own. */
static double alone(const struct graph *g, long i)
{
  return task_alone(&node, g, i, false);
}

/* Without async_tp_grad every gather, GEMM and reduce-scatter of a
 * column-parallel linear's backward runs in turn; with it, the input's
 * gather runs beside the data gradient and the input gradient's reduce-
 * scatter beside the weight gradient (the output layer's too),
 * so each pair takes the longer of the two, and the iteration is the
 * blocking one less what the pairs save (no contention). */
Test(spgather, async_replay_closed_form)
{
  load_dgx_h100_node(&node);
  struct model m;
  struct plan p;
  struct graph *off = tp8(KV("sp", "yes", "async_tp_grad", "no"), &m, &p);
  struct graph *on = tp8(KV("sp", "yes", "async_tp_grad", "yes"), &m, &p);
  const struct program *pr = &on->prog[0];
  double save = 0;
  long ag = 0, rs = 0;
  for (long i = 0; i + 1 < pr->n; i++) {
    const struct task *t = &pr->tasks[i];
    if (t->kind != TK_COLL || t->stream != ST_CP)
      continue;
    double c = alone(on, i), k = alone(on, i + 1);
    cr_assert(c > 0 && k > 0);
    save += c + k - fmax(c, k);
    ag += t->op == CO_ALLGATHER;
    rs += t->op == CO_REDUCE_SCATTER;
  }
  cr_assert_eq(ag, 2 * 2 + 1); /* QKV, FC1 of 2 layers; the output layer */
  cr_assert_eq(rs, 2 * 2 + 1); /* and the output layer's input gradient */
  REL(replay(on), replay(off) - save, 1e-9);
  graph_free(off);
  graph_free(on);
}

/* SP exists only in Megatron's code that runs these collectives
 * asynchronously, so SP at TP > 1 turns async_tp_grad on unless given
 * (plan_resolve); torchtitan's DTensor and TP 1 keep it off. */
Test(spgather, async_by_default_under_sp)
{
  struct model m;
  struct plan p;
  struct graph *g = tp8(KV("sp", "yes"), &m, &p);
  cr_assert(p.async_tp_grad, "SP at TP 8: async by default");
  graph_free(g);
  g = tp8(KV("sp", "yes", "async_tp_grad", "no"), &m, &p);
  cr_assert(!p.async_tp_grad, "an explicit no is kept");
  graph_free(g);
  g = tp8(KV("sp", "no"), &m, &p);
  cr_assert(!p.async_tp_grad, "no SP: Megatron-LM v2.5's blocking default");
  graph_free(g);
  g = tp8(KV("sp", "yes", "mem_framework", "torchtitan"), &m, &p);
  cr_assert(!p.async_tp_grad, "torchtitan's DTensor");
  graph_free(g);
}
