/*
 * test_moe.c - expert parallelism: all-to-all volumes of token dispatch and
 * combine, expert gradient reduction, FLOPs, and refused combinations.
 */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>

#include "workloads/accounting.h"
#include "tests/plan_helpers.h"

#define REL(a, b) cr_assert(fabs((double)(a) - (double)(b)) <= 1e-9 * fabs((double)(b)) + 1e-9, "%.17g != %.17g", (double)(a), (double)(b))

Test(moe, dispatch_and_combine_volumes)
{
  struct model m;
  struct plan p;
  struct graph *g = build("mixtral-8x7b", 64, KV("tp", "2", "pp", "4", "ep",
                          "8", "global_batch", "64", "recompute", "full"),
                          &m, &p);
  /* One all-to-all buffer: tokens x top-k x hidden, 2 bytes. */
  double S = 4096.0 * 2 * 4096 * 2;
  long n;
  REL(coll_sum(g, 1, CO_ALLTOALL, GK_EP, PH_FWD, 9, 3, &n), 2 * S);
  cr_assert_eq(n, 2);
  REL(coll_sum(g, 1, CO_ALLTOALL, GK_EP, PH_BWD, 9, 3, NULL), 2 * S);
  REL(coll_sum(g, 1, CO_ALLTOALL, GK_EP, PH_RECOMP, 9, 3, NULL), 2 * S);
  /* What leaves a rank per dispatch: tokens x hidden x top-k x (EP-1)/EP. */
  double leaving = S * (8 - 1) / 8.0;
  REL(leaving, 4096.0 * 4096 * 2 * 7 / 8 * 2);
  graph_free(g);
}

Test(moe, expert_gradients_over_the_ranks_holding_the_same_experts)
{
  struct model m;
  struct plan p;
  struct graph *g = build("mixtral-8x7b", 64, KV("tp", "2", "pp", "2", "ep",
                          "4", "global_batch", "32"), &m, &p);
  /* DP 16 = 4 EP groups of 4: expert grads reduced over 4 replicas. */
  double lx = layer_expert_params_rank(&m, 2, 4);
  REL(lx, 8.0 / 4 * 3 * 4096 * 14336 / 2);
  long n;
  REL(coll_sum(g, 0, CO_ALLREDUCE, GK_EDP, PH_BWD, -2, -2, &n), 16 * lx * 2);
  cr_assert_eq(n, 16); /* one per layer of the stage */
  /* Dense parameters go through the usual buckets. */
  double dense = stage_params_rank(&m, &p, 0) - 16 * lx;
  REL(coll_sum(g, 0, CO_ALLREDUCE, GK_DP, PH_BWD, -2, -2, NULL), dense * 2);
  graph_free(g);
}

Test(moe, flops_are_the_model_flops)
{
  struct model m;
  struct plan p;
  struct graph *g = build("mixtral-8x7b", 64, KV("tp", "2", "pp", "4", "ep",
                          "8", "global_batch", "64"), &m, &p);
  /* The router runs on every TP rank (replicated, as in Megatron-LM): the
   * graph has (TP - 1) extra copies of its 3 x 2 T h E FLOPs per layer. */
  double model = model_flops_per_iter(&m, 64);
  double T = 64.0 * 4096, router = 3 * 2 * T * 4096 * 8 * 32;
  REL(graph_total_flops(g, (1 << PH_FWD) | (1 << PH_BWD)), model + router);
  graph_free(g);
}

Test(moe, imbalance_slows_the_experts_not_the_count)
{
  struct model m;
  struct plan p;
  struct graph *g = build("mixtral-8x7b", 16, KV("ep", "8", "global_batch",
                          "16", "moe_imbalance", "1.5"), &m, &p);
  cr_assert_gt(graph_total_flops(g, 0xf), model_flops_per_iter(&m, 16));
  graph_free(g);
}

Test(moe, bad_combinations)
{
  refused("gpt-1.7b", KV("ep", "2", "global_batch", "64"), 32,
          "--ep: expert parallelism needs an MoE model (experts > 1)");
  refused("mixtral-8x7b", KV("ep", "3", "global_batch", "48"), 24,
          "--ep: EP 3 does not divide 8 experts");
  refused("mixtral-8x7b", KV("ep", "8", "tp", "4", "global_batch", "64"), 16,
          "--ep: EP 8 does not divide DP 4 (expert parallelism is carved out "
          "of data parallelism)");
  refused("mixtral-8x7b", KV("ep", "2", "hsdp", "2", "global_batch", "64"),
          16, "--ep: expert parallelism with HSDP is not supported yet");
  refused("mixtral-8x7b", KV("moe_imbalance", "0.5", "global_batch", "64"), 16,
          "--moe_imbalance: '0.5' is below the minimum of 1");
}

Test(moe, with_context_parallelism)
{
  /* DP 4 x CP 2: experts split over EP 2, expert gradients reduced over the
   * 2 x 2 ranks holding the same experts (EDP x CP). */
  struct model m;
  struct plan p;
  struct graph *g = build("mixtral-8x7b", 16, KV("tp", "2", "cp", "2", "ep",
                          "2", "global_batch", "8"), &m, &p);
  double lx = layer_expert_params_rank(&m, 2, 2);
  long n;
  REL(coll_sum(g, 0, CO_ALLREDUCE, GK_EDPCP, PH_BWD, -2, -2, &n), 32 * lx * 2);
  cr_assert_eq(n, 32);
  graph_free(g);
}

Test(moe, with_zero)
{
  /* DP 8 = 2 EP groups of 4: dense parameters sharded over 8, experts over
   * the 2 ranks holding them. */
  for (int z = 1; z <= 3; z++) {
    struct model m;
    struct plan p;
    char zs[2] = {(char)('0' + z), 0};
    struct graph *g = build("mixtral-8x7b", 8, KV("ep", "4", "zero", zs,
                            "global_batch", "8", "micro_batch", "1"), &m, &p);
    double X = stage_expert_params_rank(&m, &p, 0);
    double D = stage_params_rank(&m, &p, 0) - X;
    double rounds = z == 3 ? 2 : 1; /* gathers per iteration */
    REL(coll_sum(g, 0, CO_ALLGATHER, GK_DP, -1, -2, -2, NULL), rounds * 2 * D);
    REL(coll_sum(g, 0, CO_ALLGATHER, GK_EDP, -1, -2, -2, NULL), rounds * 2 * X);
    REL(coll_sum(g, 0, CO_REDUCE_SCATTER, GK_DP, -1, -2, -2, NULL), 2 * D);
    REL(coll_sum(g, 0, CO_REDUCE_SCATTER, GK_EDP, -1, -2, -2, NULL), 2 * X);
    struct memory mem;
    memory_per_gpu(&m, &p, 80e9, &mem);
    REL(mem.optimizer, 12 * (D / 8 + X / 2));
    graph_free(g);
  }
}

/* A rank's local experts run as grouped GEMMs (Megatron-core's GroupedMLP):
 * with 8 experts over EP 2, four groups of a quarter of the routed rows
 * each in the forward and data-gradient GEMMs, a quarter of the rows as
 * each group's reduction in the weight gradients; four per pass, whose
 * FLOPs are those of the one GEMM they replace. */
Test(moe, local_experts_run_as_grouped_gemms)
{
  struct model m;
  struct plan p;
  struct graph *g = build("mixtral-8x7b", 16, KV("ep", "2", "tp", "2",
                          "global_batch", "8"), &m, &p);
  double rows = 4096.0 * 2, F = 14336.0 / 2, h = 4096;
  const struct program *pr = &g->prog[0];
  long n[PH_COUNT] = {0}, dense = 0;
  double fl = 0;
  for (long i = 0; i < pr->n; i++) {
    const struct task *t = &pr->tasks[i];
    if (t->kind != TK_KERNEL || t->layer != 0 || t->mb != 0)
      continue;
    dense += t->op == KK_GEMM && (t->m == rows || t->k == rows);
    if (t->op != KK_GGEMM)
      continue;
    n[t->phase]++;
    fl += t->flops;
    cr_assert_eq(t->batch, 4);
    cr_assert(t->m == rows / 4 || t->k == rows / 4, "%u %u %u", t->m, t->n,
              t->k);
  }
  cr_assert_eq(n[PH_FWD], 2);
  cr_assert_eq(n[PH_BWD], 4);
  cr_assert_eq(dense, 0);
  /* gate+up (2F) and down (F): 3 GEMMs of 2 x rows x F x h, forward and
   * twice backward. */
  REL(fl, 3 * 3 * 2 * rows * F * h);
  graph_free(g);
  /* One expert per rank: plain GEMMs, as before. */
  g = build("mixtral-8x7b", 16, KV("ep", "8", "global_batch", "16"), &m, &p);
  for (long i = 0; i < g->prog[0].n; i++)
    cr_assert_neq(g->prog[0].tasks[i].op == KK_GGEMM &&
                      g->prog[0].tasks[i].kind == TK_KERNEL, 1);
  graph_free(g);
}
