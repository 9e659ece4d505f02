/*
 * test_tensor3d.c - Tensor3D (plan.h, builder.c): the bytes of every
 * collective of a layer against their closed forms, over-decomposition,
 * the degenerate grids (sharded data parallelism, a 1D split), FLOPs and
 * activation memory, and the settings it is refused with.
 */
#include <criterion/criterion.h>
#include <math.h>

#include "workloads/accounting.h"
#include "tests/plan_helpers.h"

#define REL(a, b) cr_assert(fabs((double)(a) - (double)(b)) <= 1e-9 * fabs((double)(b)) + 1e-9, "%.17g != %.17g", (double)(a), (double)(b))

/* GPT 1.7B: h 2304, FFN 9216 (GELU: one gate), 24 heads of 96, seq 2048. */
static const double h = 2304, f = 9216, S = 2048, e = 2;

/* Sum of the four linear layers' weight elements of one layer. */
static double linear_elems(void)
{
  return h * 3 * h + h * h + h * f + f * h;
}

Test(tensor3d, layer_collectives_equal_their_closed_forms)
{
  /* A 2 x 3 x 2 grid (TP 12), micro-batch 2: T = 4096 rows per GPU. */
  struct model m;
  struct plan p;
  struct graph *g = build("gpt-1.7b", 12, KV("tensor3d", "2,3,2",
                          "micro_batch", "2", "global_batch", "4"), &m, &p);
  cr_assert_eq(p.tp, 12);
  cr_assert_eq(p.microbatches, 1);
  double gx = 2, gy = 3, T = 2 * S;
  long n;
  /* Forward: the weight blocks gathered over Z, in x out / (GX GY) each;
   * outputs all-reduced over X for the plain layers (QKV, FC1: T x out /
   * GY) and over Y for the transposed ones (projection, FC2: T x h / GX). */
  REL(coll_sum(g, 0, CO_ALLGATHER, GK_T3Z, PH_FWD, 0, 0, &n),
      e * linear_elems() / (gx * gy));
  cr_assert_eq(n, 4);
  REL(coll_sum(g, 0, CO_ALLREDUCE, GK_T3X, PH_FWD, 0, 0, &n),
      e * T * (3 * h + f) / gy);
  cr_assert_eq(n, 2);
  REL(coll_sum(g, 0, CO_ALLREDUCE, GK_T3Y, PH_FWD, 0, 0, &n),
      e * T * 2 * h / gx);
  cr_assert_eq(n, 2);
  /* Backward: gathered again; data gradients all-reduced over the
   * out-group (Y for QKV and FC1: T x h / GX; X for the projection and
   * FC2: T x in / GY); weight gradients reduce-scattered over Z. */
  REL(coll_sum(g, 0, CO_ALLGATHER, GK_T3Z, PH_BWD, 0, 0, NULL),
      e * linear_elems() / (gx * gy));
  REL(coll_sum(g, 0, CO_ALLREDUCE, GK_T3Y, PH_BWD, 0, 0, NULL),
      e * T * 2 * h / gx);
  REL(coll_sum(g, 0, CO_ALLREDUCE, GK_T3X, PH_BWD, 0, 0, NULL),
      e * T * (h + f) / gy);
  REL(coll_sum(g, 0, CO_REDUCE_SCATTER, GK_T3Z, PH_BWD, 0, -2, &n),
      dtype_bytes(p.grad_dtype) * linear_elems() / (gx * gy));
  cr_assert_eq(n, 4);
  /* No Megatron TP collective anywhere. */
  REL(coll_sum(g, 0, CO_ALLREDUCE, GK_TP, -1, -2, -2, NULL), 0);
  graph_free(g);
}

Test(tensor3d, pieces_split_the_all_reduces_not_their_sum)
{
  struct model m;
  struct plan p1, p4;
  struct graph *g1 = build("gpt-1.7b", 8, KV("tensor3d", "2,2,2",
                           "micro_batch", "4", "global_batch", "8"), &m, &p1);
  struct graph *g4 = build("gpt-1.7b", 8, KV("tensor3d", "2,2,2",
                           "micro_batch", "4", "global_batch", "8",
                           "overdecompose", "4"), &m, &p4);
  const enum group_kind gk[2] = {GK_T3X, GK_T3Y};
  for (int i = 0; i < 2; i++) {
    long n1, n4;
    double b1 = coll_sum(g1, 0, CO_ALLREDUCE, gk[i], -1, 0, 0, &n1);
    double b4 = coll_sum(g4, 0, CO_ALLREDUCE, gk[i], -1, 0, 0, &n4);
    REL(b4, b1);
    cr_assert_eq(n4, 4 * n1);
  }
  /* Weights are gathered and reduced once per pass, not per piece. */
  long a1, a4;
  REL(coll_sum(g4, 0, CO_ALLGATHER, GK_T3Z, -1, 0, 0, &a4),
      coll_sum(g1, 0, CO_ALLGATHER, GK_T3Z, -1, 0, 0, &a1));
  cr_assert_eq(a4, a1);
  /* The pieces' all-reduces run on their own stream. */
  const struct program *pr = &g4->prog[0];
  for (long i = 0; i < pr->n; i++) {
    const struct task *t = &pr->tasks[i];
    if (t->kind == TK_COLL && t->layer >= 0 &&
        (t->group == GK_T3X || t->group == GK_T3Y))
      cr_assert_eq(t->stream, ST_T3);
  }
  graph_free(g1);
  graph_free(g4);
}

Test(tensor3d, degenerate_grids)
{
  struct model m;
  struct plan p;
  /* GX = GY = 1: sharded data parallelism: whole weights gathered over Z
   * and their gradients reduce-scattered, no activation all-reduce. */
  struct graph *g = build("gpt-1.7b", 4, KV("tensor3d", "1,1,4",
                          "global_batch", "4"), &m, &p);
  long n;
  REL(coll_sum(g, 0, CO_ALLGATHER, GK_T3Z, PH_FWD, 0, 0, NULL),
      e * linear_elems());
  REL(coll_sum(g, 0, CO_REDUCE_SCATTER, GK_T3Z, PH_BWD, 0, 0, NULL),
      dtype_bytes(p.grad_dtype) * linear_elems());
  coll_sum(g, 0, CO_ALLREDUCE, GK_T3X, -1, -2, -2, &n);
  cr_assert_eq(n, 0);
  coll_sum(g, 0, CO_ALLREDUCE, GK_T3Y, -1, -2, -2, &n);
  cr_assert_eq(n, 0);
  graph_free(g);
  /* GY = GZ = 1: a 1D split of every layer's input features over X: all
   * its collectives are over X (no gather, no Y group). */
  g = build("gpt-1.7b", 4, KV("tensor3d", "4,1,1", "global_batch", "4"), &m,
            &p);
  const struct program *pr = &g->prog[0];
  long nx = 0;
  for (long i = 0; i < pr->n; i++) {
    const struct task *t = &pr->tasks[i];
    if (t->kind != TK_COLL || t->group == GK_DP)
      continue;
    cr_assert_eq(t->group, GK_T3X, "a collective over group %d", t->group);
    nx++;
  }
  cr_assert_gt(nx, 0);
  graph_free(g);
}

/* GEMM FLOPs of the layers, summed over the job's ranks. */
static double layer_gemm_flops(const struct graph *g)
{
  double fl = 0;
  long ranks = layout_ranks(&g->layout) / g->layout.pp;
  for (long s = 0; s < g->stages; s++)
    for (long i = 0; i < g->prog[s].n; i++) {
      const struct task *t = &g->prog[s].tasks[i];
      if (t->kind == TK_KERNEL && t->op == KK_GEMM && t->batch <= 1 &&
          t->layer >= 0)
        fl += t->flops * (double)ranks;
    }
  return fl;
}

Test(tensor3d, linear_flops_and_activations)
{
  /* The linear layers' work of the job is the same however it is split. */
  struct model m;
  struct plan p3, p1;
  struct graph *g3 = build("gpt-1.7b", 16, KV("tensor3d", "2,2,2",
                           "global_batch", "16"), &m, &p3);
  struct graph *g1 = build("gpt-1.7b", 16, KV("tp", "8",
                           "global_batch", "16"), &m, &p1);
  REL(layer_gemm_flops(g3), layer_gemm_flops(g1));
  graph_free(g3);
  graph_free(g1);
  /* Activations per layer: Korthikanti's tensors outside the tensor
   * regions (10 h per token) on h/GX channels, those inside (24 h for
   * GPT: Q, K, V, projection input, FFN) on /GY, flash attention's
   * log-sum-exp (4 bytes per head and token) on heads/GY. */
  double a = 24, b = 1;
  REL(layer_activation_bytes(&m, &p3),
      S * b * (10 * h / 2 + (2 * h + 4 * h + 2 * h + 2 * f + 2 * f + 4 * a) / 2));
}

Test(tensor3d, pipeline_transfers_carry_the_ranks_own_channels)
{
  /* Each rank sends its h/GX channels of its own rows; nothing is
   * gathered over the grid after a receive (1D TP's scatter/gather). */
  struct model m;
  struct plan p;
  struct graph *g = build("gpt-1.7b", 16, KV("tensor3d", "2,2,2", "pp", "2",
                          "micro_batch", "2", "global_batch", "4"), &m, &p);
  for (long st = 0; st < 2; st++) {
    const struct program *pr = &g->prog[st];
    for (long i = 0; i < pr->n; i++) {
      const struct task *t = &pr->tasks[i];
      if (t->kind == TK_SEND || t->kind == TK_RECV)
        REL(t->bytes, e * 2 * S * h / 2);
      cr_assert(!(t->kind == TK_COLL && t->group == GK_TP),
                "a TP collective in a Tensor3D graph");
    }
  }
  graph_free(g);
}

Test(tensor3d, refused_settings)
{
  refused("gpt-1.7b", KV("tensor3d", "2,2", "global_batch", "8"), 8,
          "--tensor3d: '2,2' is not GX,GY,GZ (three degrees, such as 2,2,2)");
  refused("gpt-1.7b", KV("tensor3d", "2,,2,2", "global_batch", "8"), 8,
          "--tensor3d: '2,,2,2' is not GX,GY,GZ (three degrees, such as "
          "2,2,2)");
  refused("gpt-1.7b", KV("tensor3d", "2,2,2,", "global_batch", "8"), 8,
          "--tensor3d: '2,2,2,' is not GX,GY,GZ (three degrees, such as "
          "2,2,2)");
  refused("gpt-1.7b", KV("tensor3d", "2,2,2", "compress", "fp16",
          "global_batch", "8"), 8, "--tensor3d: Tensor3D does not combine "
          "with gradient compression");
  refused("gpt-1.7b", KV("tensor3d", "2,2,2", "tp", "4", "global_batch", "8"),
          8, "--tensor3d: a grid of 2 x 2 x 2 is TP 8, not 4");
  refused("gpt-1.7b", KV("tensor3d", "2,2,2", "sp", "yes", "global_batch",
          "8"), 8, "--tensor3d: Tensor3D does not combine with sequence "
          "parallelism");
  refused("gpt-1.7b", KV("tensor3d", "2,2,2", "fsdp", "yes", "global_batch",
          "8"), 8, "--tensor3d: Tensor3D does not combine with ZeRO-2/3 or "
          "FSDP (Z shards the weights already)");
  refused("gpt-1.7b", KV("tensor3d", "1,5,1", "global_batch", "8"), 5,
          "--tensor3d: GY 5 does not divide 2304 hidden size");
  refused("gpt-1.7b", KV("tensor3d", "2,2,2", "micro_batch", "2",
          "overdecompose", "4", "global_batch", "16"), 8,
          "--overdecompose: 4 pieces do not divide micro-batch 2");
  refused("gpt-1.7b", KV("overdecompose", "2", "global_batch", "8"), 8,
          "--overdecompose: over-decomposition applies to Tensor3D "
          "(--tensor3d)");
  refused("gpt-1.7b", KV("tensor3d", "2,2,2", "global_batch", "6"), 16,
          "--global_batch: global batch 6 is not a multiple of micro-batch 1 "
          "x DP 2 x GZ 2");
}
