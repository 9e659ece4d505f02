/*
 * test_cp.c - context parallelism: ring-attention transfers, FLOPs,
 * gradients over DP x CP, and refused combinations.
 */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>

#include "workloads/accounting.h"
#include "tests/plan_helpers.h"

#define REL(a, b) cr_assert(fabs((double)(a) - (double)(b)) <= 1e-9 * fabs((double)(b)) + 1e-9, "%.17g != %.17g", (double)(a), (double)(b))

Test(cp, ring_attention_moves_2_cp_minus_1_over_cp_of_kv)
{
  const long cps[] = {2, 4, 8};
  for (int i = 0; i < 3; i++) {
    struct model m;
    struct plan p;
    char cp[4];
    snprintf(cp, sizeof cp, "%ld", cps[i]);
    struct graph *g = build("llama3-8b", 4 * cps[i], KV("tp", "4", "cp", cp,
                            "global_batch", "2"), &m, &p);
    /* K and V of the whole sequence, per TP rank: 2 b s kv_dim / t x 2 B. */
    double kv_all = 2.0 * 8192 * 1024 / 4 * 2;
    long n;
    double fwd = coll_sum(g, 0, CO_SENDRECV, GK_CP, PH_FWD, 5, 1, &n);
    REL(fwd, (double)(cps[i] - 1) / (double)cps[i] * kv_all);
    cr_assert_eq(n, cps[i] - 1);
    /* Backward carries the blocks and their gradients. */
    REL(coll_sum(g, 0, CO_SENDRECV, GK_CP, PH_BWD, 5, 1, NULL), 2 * fwd);
    graph_free(g);
  }
}

Test(cp, flops_and_gradients)
{
  struct model m;
  struct plan p;
  struct graph *g = build("llama3-8b", 32, KV("tp", "2", "cp", "4",
                          "global_batch", "8"), &m, &p);
  REL(graph_total_flops(g, (1 << PH_FWD) | (1 << PH_BWD)),
      model_flops_per_iter(&m, 8));
  /* Gradients reduced over DP 4 x CP 4 ranks. */
  REL(coll_sum(g, 0, CO_ALLREDUCE, GK_DPCP, PH_BWD, -2, -2, NULL),
      2 * stage_params_rank(&m, &p, 0));
  REL(coll_sum(g, 0, CO_ALLREDUCE, GK_DP, PH_BWD, -2, -2, NULL), 0);
  graph_free(g);
}

Test(cp, activations_shrink_with_cp)
{
  struct model m;
  struct plan p, q;
  struct graph *g = build("llama3-8b", 8, KV("tp", "2", "global_batch", "4",
                          "attention", "unfused"), &m, &p);
  graph_free(g);
  g = build("llama3-8b", 8, KV("tp", "2", "cp", "4", "global_batch", "1",
                               "attention", "unfused"), &m, &q);
  REL(layer_activation_bytes(&m, &q) * 4, layer_activation_bytes(&m, &p) -
      /* the score term shrinks by cp^2, not cp */
      5.0 * 32 * 8192 * 8192 / 2 * (1 - 1.0 / 4));
  graph_free(g);
}

Test(cp, bad_combinations)
{
  refused("llama3-8b", KV("cp", "3", "global_batch", "8"), 24,
          "--cp: sequence 8192 is not a multiple of 2 x CP 3 (each rank holds "
          "two chunks, for causal load balance)");
  refused("llama3-8b", KV("cp", "5", "global_batch", "8"), 40,
          "--cp: sequence 8192 is not a multiple of 2 x CP 5 (each rank holds "
          "two chunks, for causal load balance)");
}

Test(cp, fsdp_shards_over_dp_and_cp)
{
  struct model m;
  struct plan p;
  struct graph *g = build("llama3-8b", 16, KV("cp", "4", "fsdp", "yes",
                          "global_batch", "4"), &m, &p);
  /* One micro-batch: every unit gathered twice, reduce-scattered once,
   * over the 4 x 4 DP x CP ranks. */
  double P = stage_params_rank(&m, &p, 0);
  REL(coll_sum(g, 0, CO_ALLGATHER, GK_DPCP, -1, -2, -2, NULL), 2 * 2 * P);
  REL(coll_sum(g, 0, CO_REDUCE_SCATTER, GK_DPCP, -1, -2, -2, NULL), 2 * P);
  struct memory mem;
  memory_per_gpu(&m, &p, 80e9, &mem);
  REL(mem.optimizer, 12 * P / 16);
  graph_free(g);
}

Test(cp, hsdp_shards_over_its_group_and_cp)
{
  /* DP 4 in shard groups of 2, CP 2: shards of 2 x 2 ranks, 2 replicas. */
  struct model m;
  struct plan p;
  struct graph *g = build("llama3-8b", 8, KV("cp", "2", "hsdp", "2",
                          "global_batch", "4"), &m, &p);
  double P = stage_params_rank(&m, &p, 0);
  REL(coll_sum(g, 0, CO_ALLGATHER, GK_SHARD, -1, -2, -2, NULL), 2 * 2 * P);
  REL(coll_sum(g, 0, CO_ALLREDUCE, GK_REPL, -1, -2, -2, NULL), 2 * P / 4);
  struct memory mem;
  memory_per_gpu(&m, &p, 80e9, &mem);
  REL(mem.weights, 2 * P / 4);
  graph_free(g);
}
