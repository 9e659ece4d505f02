/*
 * test_moe_exec.c - Megatron-Core's MoE execution (builder_moe.c): each
 * dispatcher's bytes per token against its closed form, the router and
 * permutation kernels, capacity dropping and padding, DeepEP's node and
 * rank counts and its two groups, and the refused combinations.
 */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "sim/symmetry.h"
#include "workloads/workload.h"
#include "tests/plan_helpers.h"

#define REL(a, b) cr_assert(fabs((double)(a) - (double)(b)) <= 1e-9 * fabs((double)(b)) + 1e-9, "%.17g != %.17g", (double)(a), (double)(b))

/* Mixtral-8x7B: h 4096, 8 experts, top-2, BF16; a micro-batch of one
 * 4096-token sequence. */
static const double h = 4096, E = 8, k = 2, e = 2, n = 4096;

/* Bytes of the kernels of `op` in layer 0, micro-batch 0, phase ph of
 * stage 0 whose bytes are exactly `bytes`: how many. */
static long kernels_of(const struct graph *g, enum kernel_kind op, int ph,
                       double bytes)
{
  long c = 0;
  const struct program *pr = &g->prog[0];
  for (long i = 0; i < pr->n; i++) {
    const struct task *t = &pr->tasks[i];
    c += t->kind == TK_KERNEL && t->op == op && t->layer == 0 &&
         t->mb == 0 && t->phase == ph &&
         fabs(t->bytes - bytes) <= 1e-9 * bytes;
  }
  return c;
}

/* The M of layer 0's forward FC1 GEMM (N = 2 x 14336 / tp), grouped or
 * not (a grouped GEMM's M is per group: times its groups). */
static double fc1_rows(const struct graph *g, double tp)
{
  const struct program *pr = &g->prog[0];
  for (long i = 0; i < pr->n; i++) {
    const struct task *t = &pr->tasks[i];
    if (t->kind == TK_KERNEL && t->layer == 0 && t->mb == 0 &&
        t->phase == PH_FWD && t->n == (uint32_t)(2 * 14336 / tp) &&
        (t->op == KK_GEMM || t->op == KK_GGEMM))
      return (double)t->m * (t->op == KK_GGEMM ? t->batch : 1);
  }
  cr_assert_fail("no FC1 GEMM");
  return 0;
}

/* alltoall: the routed copies and their FP32 probabilities over EP,
 * (EP - 1) / EP of them leaving the rank; the combine sends the tokens
 * back; no TP collective around the block (TP 1). */
Test(moe_exec, alltoall_bytes_per_token)
{
  struct model m;
  struct plan p;
  struct graph *g = build_layers("mixtral-8x7b", 2, 16, KV("ep", "8",
                                 "global_batch", "16", "moe_dispatcher",
                                 "alltoall"), &m, &p);
  long cnt;
  double fwd = coll_sum(g, 0, CO_ALLTOALL, GK_EP, PH_FWD, 0, 0, &cnt);
  cr_assert_eq(cnt, 3); /* tokens, probabilities; tokens back */
  REL(fwd, 2 * e * k * h * n + 4 * k * n);
  REL(coll_sum(g, 0, CO_ALLTOALL, GK_EP, PH_BWD, 0, 0, &cnt), fwd);
  cr_assert_eq(cnt, 3);
  struct moe_dispatch d;
  build_moe_dispatch(&m, &p, n, &d);
  REL(d.leave_B / n, (e * k * h + 4 * k) * 7 / 8);
  /* Router GEMM over the rank's n tokens, E outputs. */
  const struct program *pr = &g->prog[0];
  long router = 0;
  for (long i = 0; i < pr->n; i++)
    router += pr->tasks[i].kind == TK_KERNEL && pr->tasks[i].layer == 0 &&
              pr->tasks[i].mb == 0 && pr->tasks[i].phase == PH_FWD &&
              pr->tasks[i].op == KK_GEMM && pr->tasks[i].n == E &&
              pr->tasks[i].m == n;
  cr_assert_eq(router, 1);
  graph_free(g);
}

/* With TP 2 and SP the block takes the sequence-parallel shard (n = T/2):
 * no TP all-gather before the router nor reduce-scatter after the
 * combine; instead the rows are all-gathered over expert TP (= TP) after
 * the all-to-all and reduce-scattered before it. */
Test(moe_exec, alltoall_with_expert_tp)
{
  struct model m;
  struct plan p;
  struct graph *g = build_layers("mixtral-8x7b", 2, 16, KV("tp", "2", "sp",
                                 "yes", "ep", "8", "global_batch", "8",
                                 "moe_dispatcher", "alltoall"), &m, &p);
  double T = 4096, s = T / 2, rows = s * k, t = 2;
  long cnt;
  REL(coll_sum(g, 0, CO_ALLTOALL, GK_EP, PH_FWD, 0, 0, &cnt),
      2 * e * h * rows + 4 * rows);
  /* attention: e T h gathered; MoE: t (e h + 4) rows */
  REL(coll_sum(g, 0, CO_ALLGATHER, GK_TP, PH_FWD, 0, 0, &cnt),
      e * T * h + t * (e * h + 4) * rows);
  cr_assert_eq(cnt, 2);
  REL(coll_sum(g, 0, CO_REDUCE_SCATTER, GK_TP, PH_FWD, 0, 0, &cnt),
      e * T * h + t * e * h * rows);
  cr_assert_eq(cnt, 2);
  /* the experts see the t ranks' rows: T k */
  REL(fc1_rows(g, 2), T * k);
  graph_free(g);
}

/* The model's group-limited routing bounds DeepEP's nodes when no
 * --moe-max-nodes is given: DeepSeek-V3's 8 groups, top-4, over EP 64 on
 * 8 nodes of 8: at most 4 nodes; over 16 nodes (EP 128), 8 (each group
 * spans two nodes); without groups no limit. */
Test(moe_exec, expert_groups_limit_the_nodes)
{
  const char *ep[] = {"64", "128"};
  const long gpus[] = {64, 128}, want[] = {4, 8};
  for (int i = 0; i < 2; i++) {
    struct model m;
    struct plan p;
    struct graph *g = build_layers("mixtral-8x7b", 2, gpus[i],
        KV("experts", "256", "topk", "8", "expert_groups", "8",
           "topk_groups", "4", "ep", ep[i], "global_batch", ep[i],
           "moe_dispatcher", "deepep", "moe_node_gpus", "8"), &m, &p);
    cr_assert_eq(p.moe_max_nodes, want[i], "EP %s: %ld", ep[i],
                 p.moe_max_nodes);
    graph_free(g);
  }
  struct model m;
  struct plan p;
  struct graph *g = build_layers("mixtral-8x7b", 2, 64,
      KV("experts", "256", "topk", "8", "ep", "64", "global_batch", "64",
         "moe_dispatcher", "deepep", "moe_node_gpus", "8"), &m, &p);
  cr_assert_eq(p.moe_max_nodes, 0);
  graph_free(g);
}

/* Shared experts with TP 2 and SP: where the routed path runs on the SP
 * shards (alltoall) the shared expert gathers the block's input itself
 * and reduce-scatters its output (Megatron-Core's SharedExpertMLP, column
 * and row parallel under sequence parallelism): one TP all-gather and one
 * reduce-scatter of e T h more than without it; under the basic exchange
 * the block's input is gathered already and nothing is added. */
Test(moe_exec, shared_experts_gather_their_input)
{
  const char *disp[] = {"alltoall", "basic"};
  for (int i = 0; i < 2; i++) {
    long cnt[2][2];
    double b[2][2];
    for (int sh = 0; sh < 2; sh++) {
      struct model m;
      struct plan p;
      struct graph *g = build_layers("mixtral-8x7b", 2, 16,
          KV("tp", "2", "sp", "yes", "ep", "8", "global_batch", "8",
             "moe_dispatcher", disp[i], "shared_ffn", sh ? "2048" : "0"),
          &m, &p);
      b[sh][0] = coll_sum(g, 0, CO_ALLGATHER, GK_TP, PH_FWD, 0, 0,
                          &cnt[sh][0]);
      b[sh][1] = coll_sum(g, 0, CO_REDUCE_SCATTER, GK_TP, PH_FWD, 0, 0,
                          &cnt[sh][1]);
      graph_free(g);
    }
    double T = 4096, add = i == 0 ? e * T * h : 0;
    cr_assert_eq(cnt[1][0], cnt[0][0] + (i == 0), "%s", disp[i]);
    REL(b[1][0], b[0][0] + add);
    cr_assert_eq(cnt[1][1], cnt[0][1] + (i == 0), "%s", disp[i]);
    REL(b[1][1], b[0][1] + add);
  }
}

/* allgather: tokens, routing map (bool) and FP32 probabilities of every
 * EP rank gathered; the combine reduce-scatters FP32 tokens. */
Test(moe_exec, allgather_bytes_per_token)
{
  struct model m;
  struct plan p;
  struct graph *g = build_layers("mixtral-8x7b", 2, 16, KV("ep", "8",
                                 "global_batch", "16", "moe_dispatcher",
                                 "allgather"), &m, &p);
  long cnt;
  REL(coll_sum(g, 0, CO_ALLGATHER, GK_EP, PH_FWD, 0, 0, &cnt),
      8 * n * (e * h + E * (1 + 4)));
  cr_assert_eq(cnt, 1);
  REL(coll_sum(g, 0, CO_REDUCE_SCATTER, GK_EP, PH_FWD, 0, 0, &cnt),
      8 * n * h * 4);
  cr_assert_eq(cnt, 1);
  cr_assert_eq(coll_sum(g, 0, CO_ALLTOALL, GK_EP, -1, -2, -2, NULL), 0);
  struct moe_dispatch d;
  build_moe_dispatch(&m, &p, n, &d);
  REL(d.leave_B / n, (e * h + 5 * E) * 7);
  graph_free(g);
}

/* C(a, b) as a double. */
static double choose(double a, double b)
{
  double c = 1;
  for (double i = 1; i <= b; i++)
    c = c * (a - b + i) / i;
  return c;
}

/* DeepEP over 2 nodes of 4 EP ranks, one expert each: a token's 2 experts
 * are on one node with probability 2 C(4, 2) / C(8, 2) = 3/7, so it
 * crosses to 1 x 3/7 + 2 x 4/7 = 11/7 nodes and reaches 2 ranks; RDMA
 * carries each token once per node (with its top-k indices and weights,
 * 12 bytes each), NVLink once per rank. */
Test(moe_exec, deepep_bytes_per_token)
{
  struct model m;
  struct plan p;
  struct graph *g = build_layers("mixtral-8x7b", 2, 16, KV("ep", "8",
                                 "global_batch", "16", "moe_dispatcher",
                                 "deepep", "moe_node_gpus", "4"), &m, &p);
  cr_assert_eq(p.ep_node, 4);
  struct moe_dispatch d;
  build_moe_dispatch(&m, &p, n, &d);
  double D = 1 - 2 * choose(4, 2) / choose(8, 2) + 1;
  REL(d.nodes, 11.0 / 7);
  REL(d.nodes, D);
  REL(d.ranks, 2);
  double meta = 12 * k;
  long cnt;
  REL(coll_sum(g, 0, CO_ALLTOALL, GK_EPX, PH_FWD, 0, 0, &cnt),
      n * D * (e * h + meta) + n * D * e * h);
  cr_assert_eq(cnt, 2);
  REL(coll_sum(g, 0, CO_ALLTOALL, GK_EPN, PH_FWD, 0, 0, &cnt),
      n * 2 * (e * h + meta) + n * 2 * e * h);
  cr_assert_eq(cnt, 2);
  cr_assert_eq(coll_sum(g, 0, CO_ALLTOALL, GK_EP, -1, -2, -2, NULL), 0);
  /* What crosses the network per token: the other node's share. */
  REL(d.net_B / n, D / 2 * (e * h + meta));
  /* Against all-to-all, whose copies leave the node k (N-1)/N times. */
  cr_assert_lt(d.net_B / n, k / 2 * e * h);
  graph_free(g);
}

/* Node-limited routing (DeepSeek-V3: 256 experts, top-8, EP 64 over 8
 * nodes, at most 4 nodes a token): D = 4 (1 - C(96, 8) / C(128, 8)); with
 * one node allowed, every token stays on its node. */
Test(moe_exec, deepep_node_limited_routing)
{
  struct model m;
  cr_assert_eq(model_from_preset(&m, "mixtral-8x7b", NULL), 0);
  m.experts = 256;
  m.topk = 8;
  struct plan p;
  plan_init(&p);
  p.ep = 64;
  p.ep_node = 8;
  p.moe_dispatcher = MD_DEEPEP;
  p.moe_max_nodes = 4;
  struct moe_dispatch d;
  build_moe_dispatch(&m, &p, 1, &d);
  REL(d.nodes, 4 * (1 - choose(96, 8) / choose(128, 8)));
  REL(d.ranks, 32 * (1 - choose(124, 8) / choose(128, 8)));
  cr_assert(d.nodes > 3.6 && d.nodes < 3.7, "%g", d.nodes);
  p.moe_max_nodes = 1;
  build_moe_dispatch(&m, &p, 1, &d);
  REL(d.nodes, 1);
  REL(d.net_B, d.rdma_B * 7 / 8);
}

/* DeepEP's groups: GK_EPN the EP ranks of a node, GK_EPX one per node;
 * the expert-data-parallel group the DP ranks holding the same experts. */
Test(moe_exec, group_sizes)
{
  /* TP 2, DP 16 (EP 8 of them): 2 EP ranks per 4-GPU node... */
  struct graph_layout l = {2, 1, 16, 1, 8, 1, {PD_TP, PD_CP, PD_DP, PD_PP},
                           0, {0, 0, 0}, 2, 0};
  struct layout_group grp;
  long rank = 2 * 5; /* TP 0, DP 5 */
  layout_group(&l, GK_EP, rank, &grp);
  cr_assert_eq(grp.n, 8);
  layout_group(&l, GK_EPN, rank, &grp);
  cr_assert_eq(grp.n, 2);
  cr_assert_eq(grp.slot, 1);
  cr_assert_eq(grp.leader, 2 * 4);
  cr_assert_eq(layout_member(&l, GK_EPN, grp.leader, 1), rank);
  layout_group(&l, GK_EPX, rank, &grp);
  cr_assert_eq(grp.n, 4);
  cr_assert_eq(grp.slot, 2);
  cr_assert_eq(grp.leader, 2 * 1);
  cr_assert_eq(layout_member(&l, GK_EPX, grp.leader, 2), rank);
  cr_assert_eq(layout_member(&l, GK_EPX, grp.leader, 3), 2 * 7);
  layout_group(&l, GK_EDP, rank, &grp);
  cr_assert_eq(grp.n, 2);
  /* ep_node 0: the whole EP group is one node. */
  l.ep_node = 0;
  layout_group(&l, GK_EPN, rank, &grp);
  cr_assert_eq(grp.n, 8);
  layout_group(&l, GK_EPX, rank, &grp);
  cr_assert_eq(grp.n, 1);
}

/* The router's kernels and the permutations: gathers of the routed rows
 * (2 e h per row, and the FP32 probabilities'), the unpermutation's
 * weighting and scatter-add (4 e h per row); with two experts per rank,
 * the second permutation by expert each way. */
Test(moe_exec, permute_bytes)
{
  struct model m;
  struct plan p;
  struct graph *g = build_layers("mixtral-8x7b", 2, 16, KV("ep", "8",
                                 "global_batch", "16", "moe_dispatcher",
                                 "alltoall"), &m, &p);
  double rows = n * k;
  cr_assert_eq(kernels_of(g, KK_ELEMWISE, PH_FWD, 2 * e * h * rows + 8 * rows),
               1);
  cr_assert_eq(kernels_of(g, KK_ELEMWISE, PH_FWD, 4 * e * h * rows + 4 * rows),
               1);
  double router = n * ((e + 8) * k + e * E + (e + 4) * k + 5 * E +
                       (e + 4) * E + E + 4 * E);
  cr_assert_eq(kernels_of(g, KK_ELEMWISE, PH_FWD, router), 1);
  cr_assert_eq(kernels_of(g, KK_ELEMWISE, PH_FWD, 2 * e * h * rows), 0);
  graph_free(g);
  g = build_layers("mixtral-8x7b", 2, 16, KV("ep", "4", "global_batch", "16",
                   "moe_dispatcher", "alltoall"), &m, &p);
  cr_assert_eq(kernels_of(g, KK_ELEMWISE, PH_FWD, 2 * e * h * rows), 2);
  graph_free(g);
}

/* Capacity: an expert takes at most cf x its even share; the busiest
 * expert's imbalance is capped there, the routed rows sent too when cf <
 * 1; padding fills every expert to ceil(n k cf / E). */
Test(moe_exec, capacity_drops_rows)
{
  struct model m;
  struct plan p;
  struct graph *g = build_layers("mixtral-8x7b", 2, 16, KV("ep", "8",
                                 "global_batch", "16", "moe_imbalance", "1.5",
                                 "moe_capacity", "1.25"), &m, &p);
  REL(fc1_rows(g, 1), n * k * 1.25); /* basic dispatcher: rows capped */
  graph_free(g);
  g = build_layers("mixtral-8x7b", 2, 16, KV("ep", "8", "global_batch", "16",
                   "moe_imbalance", "1.5", "moe_capacity", "2",
                   "moe_dispatcher", "alltoall"), &m, &p);
  REL(fc1_rows(g, 1), n * k * 1.5); /* under capacity: nothing dropped */
  graph_free(g);
  g = build_layers("mixtral-8x7b", 2, 16, KV("ep", "8", "global_batch", "16",
                   "moe_capacity", "0.5", "moe_dispatcher", "alltoall"),
                   &m, &p);
  REL(fc1_rows(g, 1), n * k * 0.5);
  REL(coll_sum(g, 0, CO_ALLTOALL, GK_EP, PH_FWD, 0, 0, NULL),
      2 * e * h * n * k * 0.5 + 4 * n * k * 0.5);
  graph_free(g);
  g = build_layers("mixtral-8x7b", 2, 16, KV("ep", "8", "global_batch", "16",
                   "moe_capacity", "0.3", "moe_pad", "yes",
                   "moe_dispatcher", "alltoall"), &m, &p);
  double cap = ceil(n * k * 0.3 / E); /* 308 rows per expert */
  REL(cap, 308);
  REL(fc1_rows(g, 1), E * cap);
  struct moe_dispatch d;
  build_moe_dispatch(&m, &p, n, &d);
  REL(d.rows, E * cap);
  graph_free(g);
}

/* The dispatchers run on the engine: DeepEP's two groups over two
 * one-GPU nodes. */
Test(moe_exec, deepep_replays)
{
  struct model m;
  struct plan p;
  struct graph *g = build_layers("mixtral-8x7b", 1, 2, KV("ep", "2",
                                 "global_batch", "2", "moe_dispatcher",
                                 "deepep", "moe_node_gpus", "1"), &m, &p);
  cr_assert_eq(p.ep_node, 1);
  cr_assert_gt(coll_sum(g, 0, CO_ALLTOALL, GK_EPX, -1, -2, -2, NULL), 0);
  cr_assert_eq(coll_sum(g, 0, CO_ALLTOALL, GK_EPN, -1, -2, -2, NULL), 0);
  const struct cluster *c = two_nodes_loaded();
  double with = replay_s(g, c, false), without = replay_s(g, c, true);
  cr_assert_gt(with, without);
  graph_free(g);
}

Test(moe_exec, refused)
{
  refused("gpt-1.7b", KV("moe_dispatcher", "alltoall", "global_batch", "8"),
          8, "--moe_dispatcher: MoE settings need an MoE model (experts > 1)");
  refused("mixtral-8x7b", KV("moe_pad", "yes", "global_batch", "8"), 8,
          "--moe_pad: padding to capacity needs a capacity factor "
          "(--moe-capacity F)");
  refused("mixtral-8x7b", KV("tp", "2", "moe_dispatcher", "alltoall",
          "global_batch", "8"), 8, "--moe_dispatcher: Megatron-Core's MoE "
          "layer with TP runs on sequence-parallel shards; add --sp yes");
  refused("mixtral-8x7b", KV("tp", "2", "sp", "yes", "cp", "2",
          "moe_dispatcher", "allgather", "global_batch", "8"), 8,
          "--moe_dispatcher: with expert TP > 1, allgather runs over "
          "Megatron-Core's expert TP x EP groups, which fold context "
          "parallelism (CP 2) into expert data parallelism, not modelled; "
          "use alltoall or CP 1");
  refused("mixtral-8x7b", KV("tp", "2", "sp", "yes", "order", "dp-tp-cp-pp",
          "moe_dispatcher", "deepep", "global_batch", "8"), 8,
          "--moe_dispatcher: with expert TP > 1, deepep is modelled with the "
          "default rank order tp-cp-dp-pp (Megatron-Core's expert groups: "
          "tp-ep-dp-pp)");
  refused("mixtral-8x7b", KV("tp", "2", "sp", "yes", "ep", "2",
          "moe_dispatcher", "deepep", "moe_node_gpus", "3", "global_batch",
          "8"), 8, "--moe_node_gpus: expert TP 2 does not divide the 3 GPUs "
          "of a node (deepep over expert TP x EP)");
  refused("mixtral-8x7b", KV("tp", "2", "sp", "yes", "ep", "4", "etp", "1",
          "moe_dispatcher", "deepep", "moe_node_gpus", "8", "global_batch",
          "8"), 8, "--etp: ETP 1 != TP 2 is modelled with --moe-dispatcher "
          "alltoall or allgather only (this plan has deepep)");
  refused("mixtral-8x7b", KV("moe_max_nodes", "2", "global_batch", "8"), 8,
          "--moe_max_nodes: applies to the deepep dispatcher "
          "(--moe-dispatcher deepep)");
  refused("mixtral-8x7b", KV("cp", "2", "ep", "2", "moe_dispatcher", "deepep",
          "moe_node_gpus", "3", "global_batch", "8"), 8,
          "--moe_node_gpus: TP x CP 2 does not divide the 3 GPUs of a node "
          "(deepep)");
  refused("mixtral-8x7b", KV("ep", "4", "moe_dispatcher", "deepep",
          "moe_node_gpus", "3", "global_batch", "8"), 8,
          "--moe_dispatcher: EP 4 is not a multiple of the 3 EP ranks of a "
          "node (deepep)");
  refused("mixtral-8x7b", KV("moe_capacity", "-1", "global_batch", "8"), 8,
          "--moe_capacity: '-1' is negative");
  refused("mixtral-8x7b", KV("moe_dispatcher", "nccl", "global_batch", "8"),
          8, "--moe_dispatcher: 'nccl' is not basic, alltoall, allgather or "
          "deepep");
}

/* Full recomputation replays the MoE layer's forward, its dispatch and
 * combine included; basic set explicitly is the default graph. */
Test(moe_exec, recompute_and_default)
{
  struct model m;
  struct plan p;
  struct graph *g = build_layers("mixtral-8x7b", 2, 16, KV("ep", "8",
                                 "global_batch", "16", "recompute", "full",
                                 "moe_dispatcher", "alltoall"), &m, &p);
  long cnt;
  REL(coll_sum(g, 0, CO_ALLTOALL, GK_EP, PH_RECOMP, 0, 0, &cnt),
      coll_sum(g, 0, CO_ALLTOALL, GK_EP, PH_FWD, 0, 0, NULL));
  cr_assert_eq(cnt, 3);
  graph_free(g);
  struct model m2;
  struct plan p2;
  g = build_layers("mixtral-8x7b", 2, 16, KV("ep", "4", "tp", "2",
                   "global_batch", "16"), &m, &p);
  struct graph *g2 = build_layers("mixtral-8x7b", 2, 16, KV("ep", "4", "tp",
                                  "2", "global_batch", "16", "moe_dispatcher",
                                  "basic"), &m2, &p2);
  cr_assert(graph_equal(g, g2));
  graph_free(g);
  graph_free(g2);
}

/* The layer-0 forward collectives of the allgather dispatcher on stage 0:
 * the gather's and the reduce-scatter's bytes per token of the rank (n of
 * them), over group gk; none over the others. */
static void allgather_per_token(const struct graph *g, enum group_kind gk,
                                double tokens, double *ag, double *rs)
{
  long cnt;
  *ag = coll_sum(g, 0, CO_ALLGATHER, gk, PH_FWD, 0, 0, &cnt) / tokens;
  cr_assert_eq(cnt, 1, "one gather over group %d", gk);
  *rs = coll_sum(g, 0, CO_REDUCE_SCATTER, gk, PH_FWD, 0, 0, &cnt) / tokens;
  cr_assert_eq(cnt, 1, "one reduce-scatter over group %d", gk);
  /* the backward runs the two the other way round */
  REL(coll_sum(g, 0, CO_ALLGATHER, gk, PH_BWD, 0, 0, NULL) / tokens, *ag);
  REL(coll_sum(g, 0, CO_REDUCE_SCATTER, gk, PH_BWD, 0, 0, NULL) / tokens,
      *rs);
}

/* allgather at TP 1, 2 and 4 (MoEAllGatherTokenDispatcher over tp_ep,
 * expert TP = TP): each rank holds n = 4096 / TP sequence-parallel tokens;
 * the gather over TP x EP ranks brings TP EP n tokens of e h + E + 4 E
 * bytes, the reduce-scatter TP EP n of 4 h; the rank's experts run TP n k
 * = 4096 k rows whatever TP (FC1 of N = 2 f / TP). */
Test(moe_exec, allgather_over_tp_ep)
{
  const long tps[] = {1, 2, 4};
  for (int i = 0; i < 3; i++) {
    double t = (double)tps[i], s = n / t, ep = 8;
    char tp[4];
    snprintf(tp, sizeof tp, "%ld", tps[i]);
    struct model m;
    struct plan p;
    struct graph *g = build_layers("mixtral-8x7b", 2, 8 * tps[i],
                                   KV("tp", tp, "sp", t > 1 ? "yes" : "no",
                                      "ep", "8",
                                      "global_batch", "8", "moe_dispatcher",
                                      "allgather"), &m, &p);
    enum group_kind gk = t > 1 ? GK_TPEP : GK_EP;
    double ag, rs;
    allgather_per_token(g, gk, s, &ag, &rs);
    REL(ag, t * ep * (e * h + E + 4 * E));
    REL(rs, t * ep * 4 * h);
    /* Mixtral 8x7B at TP 2: 2 x 8 x (8192 + 40) bytes a token */
    if (t == 2)
      REL(ag, 131712);
    if (t > 1) /* nothing over EP alone, nor over TP (the block's SP) */
      cr_assert_eq(coll_sum(g, 0, CO_ALLGATHER, GK_EP, -1, -2, -2, NULL), 0);
    struct moe_dispatch d;
    build_moe_dispatch(&m, &p, s, &d);
    REL(d.leave_B / s, (e * h + 5 * E) * (t * ep - 1));
    /* the local permutation: t k rows per own token, 2 e h + 8 bytes */
    REL(d.permute_B / s, t * k * (2 * e * h + 8));
    REL(fc1_rows(g, t), n * k);
    struct graph_layout l;
    plan_layout(&p, &l);
    struct layout_group grp;
    layout_group(&l, gk, 3, &grp);
    cr_assert_eq(grp.n, (long)(t * ep));
    cr_assert_eq(grp.leader, 0);
    graph_free(g);
  }
}

/* allgather under MoE parallel folding, ETP != TP (TP 2, EP 8): ETP 1
 * gathers over the EP group alone (8 ranks of n = 2048 tokens), ETP 4
 * over ETP x EP = 32 consecutive ranks; the experts run ETP n k rows. */
Test(moe_exec, allgather_etp_not_tp)
{
  double s = n / 2, ep = 8;
  struct model m;
  struct plan p;
  struct graph *g = build_layers("mixtral-8x7b", 2, 16, KV("tp", "2", "sp",
                                 "yes", "ep", "8", "etp", "1", "global_batch",
                                 "8", "moe_dispatcher", "allgather"), &m, &p);
  double ag, rs;
  allgather_per_token(g, GK_EP, s, &ag, &rs);
  REL(ag, ep * (e * h + 5 * E));
  REL(rs, ep * 4 * h);
  cr_assert_eq(coll_sum(g, 0, CO_ALLGATHER, GK_TPEP, -1, -2, -2, NULL), 0);
  REL(fc1_rows(g, 1), s * k); /* whole experts: N = 2 f */
  graph_free(g);
  g = build_layers("mixtral-8x7b", 2, 32, KV("tp", "2", "sp", "yes", "ep",
                   "8", "etp", "4", "global_batch", "16", "moe_dispatcher",
                   "allgather"), &m, &p);
  allgather_per_token(g, GK_TPEP, s, &ag, &rs);
  REL(ag, 4 * ep * (e * h + 5 * E));
  REL(rs, 4 * ep * 4 * h);
  REL(fc1_rows(g, 4), 4 * s * k);
  struct graph_layout l;
  plan_layout(&p, &l);
  struct layout_group grp;
  layout_group(&l, GK_TPEP, 5, &grp);
  cr_assert_eq(grp.n, 32);
  cr_assert_eq(grp.slot, 5);
  cr_assert_eq(grp.leader, 0);
  cr_assert_eq(layout_member(&l, GK_TPEP, 0, 31), 31);
  graph_free(g);
}

/* DeepEP at TP 2 (MoEFlexTokenDispatcher over tp_ep, 16 ranks), EP 8 over
 * two 8-GPU nodes of 4 EP ranks (8 ranks of tp_ep) each: a token reaches
 * the nodes it would at TP 1 (11/7, as in deepep_bytes_per_token) and the
 * two ETP ranks of each of its 2 EP ranks, R = 4, carrying 2 k int64
 * indices and FP32 weights. */
Test(moe_exec, deepep_over_tp_ep)
{
  struct model m;
  struct plan p;
  struct graph *g = build_layers("mixtral-8x7b", 2, 16, KV("tp", "2", "sp",
                                 "yes", "ep", "8", "global_batch", "8",
                                 "moe_dispatcher", "deepep", "moe_node_gpus",
                                 "8"), &m, &p);
  cr_assert_eq(p.ep_node, 4);
  double s = n / 2, D = 11.0 / 7, R = 4, meta = 12 * 2 * k;
  struct moe_dispatch d;
  build_moe_dispatch(&m, &p, s, &d);
  REL(d.nodes, D);
  REL(d.ranks, R);
  long cnt;
  REL(coll_sum(g, 0, CO_ALLTOALL, GK_EPX, PH_FWD, 0, 0, &cnt) / s,
      D * (e * h + meta) + D * e * h);
  cr_assert_eq(cnt, 2);
  REL(coll_sum(g, 0, CO_ALLTOALL, GK_EPN, PH_FWD, 0, 0, &cnt) / s,
      R * (e * h + meta) + R * e * h);
  cr_assert_eq(cnt, 2);
  REL(d.net_B / s, D / 2 * (e * h + meta));
  REL(d.leave_B / s, D / 2 * (e * h + meta) + R * (e * h + meta) * 7 / 8);
  REL(fc1_rows(g, 2), n * k);
  /* the groups: 8 ranks of a node, one per node over the 2 nodes */
  struct graph_layout l;
  plan_layout(&p, &l);
  struct layout_group grp;
  layout_group(&l, GK_EPN, 11, &grp);
  cr_assert_eq(grp.n, 8);
  cr_assert_eq(grp.leader, 8);
  cr_assert_eq(grp.slot, 3);
  layout_group(&l, GK_EPX, 11, &grp);
  cr_assert_eq(grp.n, 2);
  cr_assert_eq(grp.leader, 3);
  cr_assert_eq(layout_member(&l, GK_EPX, 3, 1), 11);
  graph_free(g);
}

/* With expert TP set equal to TP the allgather and deepep graphs are
 * those of an unset --etp (the same groups, rank for rank). */
Test(moe_exec, tp_ep_etp_equal_tp)
{
  const char *ds[] = {"allgather", "deepep"};
  for (int i = 0; i < 2; i++) {
    struct model m, m2;
    struct plan p, p2;
    struct graph *g = build_layers("mixtral-8x7b", 2, 16, KV("tp", "2", "sp",
                                   "yes", "ep", "8", "global_batch", "8",
                                   "moe_dispatcher", ds[i],
                                   i ? "moe_node_gpus" : "moe_capacity",
                                   i ? "8" : "0"), &m, &p);
    struct graph *g2 = build_layers("mixtral-8x7b", 2, 16, KV("tp", "2",
                                    "sp", "yes", "ep", "8", "etp", "2",
                                    "global_batch", "8", "moe_dispatcher",
                                    ds[i], i ? "moe_node_gpus" : "moe_capacity",
                                    i ? "8" : "0"), &m2, &p2);
    cr_assert(graph_equal(g, g2), "%s", ds[i]);
    graph_free(g);
    graph_free(g2);
  }
}

/* Two selene nodes of 2 GPUs and 2 NICs each, loaded into SimGrid. */
static const struct cluster *two_gpu_nodes_loaded(void)
{
  static struct cluster c;
  struct weft_err err = {0};
  struct catalog *cat = catalog_builtin(&err);
  cr_assert(cat, "%s", err.msg);
  struct cluster_desc d;
  cluster_desc_init(&d);
  cr_assert_eq(cluster_desc_preset(&d, "selene", &err), 0, "%s", err.msg);
  cr_assert_eq(cluster_desc_set(&d, CK_GPUS_PER_NODE, "2", "t", 2, &err), 0);
  cr_assert_eq(cluster_desc_set(&d, CK_NICS_PER_NODE, "2", "t", 2, &err), 0);
  cr_assert_eq(cluster_desc_set(&d, CK_GPUS, "4", "t", 2, &err), 0);
  cr_assert_eq(cluster_resolve(&d, cat, &c, &err), 0, "%s", err.msg);
  catalog_free(cat);
  platload_boot(0);
  cr_assert_eq(platload_cluster(&c, &err), 0, "%s", err.msg);
  return &c;
}

/* TP 2 filling 2-GPU nodes, EP 2 across them: the allgather and deepep
 * dispatchers' collectives over TP x EP take every TP rank, so the
 * TP-symmetric shortcut (one rank per TP block, symmetry.c) is off for
 * them (alltoall keeps it); the replay completes and equals one of every
 * rank and flow (--every-rank) to 1e-9 (the last digits move with the
 * order in which the engine sums). */
Test(moe_exec, tp_ep_replays_every_rank)
{
  const struct cluster *c = two_gpu_nodes_loaded();
  const char *ds[] = {"alltoall", "allgather", "deepep"};
  for (int i = 0; i < 3; i++) {
    struct model m;
    struct plan p;
    struct graph *g = build_layers("mixtral-8x7b", 1, 4, KV("tp", "2", "sp",
                                   "yes", "ep", "2", "global_batch", "2",
                                   "moe_dispatcher", ds[i],
                                   i == 2 ? "moe_node_gpus" : "moe_capacity",
                                   i == 2 ? "2" : "0"), &m, &p);
    struct symmetry sy;
    symmetry_decide(&g->layout, c, false, false, &sy);
    cr_assert_eq(sy.tp, i == 0, "%s", ds[i]);
    struct weft_err err = {0};
    struct engine_params ep;
    engine_params_default(&ep);
    struct engine_result a = {0}, b = {0};
    cr_assert_eq(engine_run(g, c, &ep, &a, &err), 0, "%s", err.msg);
    ep.no_symmetry = true;
    cr_assert_eq(engine_run(g, c, &ep, &b, &err), 0, "%s", err.msg);
    cr_assert_gt(a.iteration_s, 0);
    if (i > 0)
      REL(a.iteration_s, b.iteration_s);
    engine_result_free(&a);
    engine_result_free(&b);
    graph_free(g);
  }
}

/* GB200 NVL72 racks for `gpus` GPUs (an uneven last rack where the trays
 * split evenly over no count of racks). */
static struct cluster nvl72(const char *gpus)
{
  struct weft_err err = {0};
  struct catalog *cat = catalog_builtin(&err);
  cr_assert(cat, "%s", err.msg);
  struct cluster_desc d;
  cluster_desc_init(&d);
  cr_assert_eq(cluster_desc_preset(&d, "gb200-nvl72", &err), 0, "%s",
               err.msg);
  cr_assert_eq(cluster_desc_set(&d, CK_GPUS, gpus, "--gpus", 2, &err), 0);
  struct cluster c;
  cr_assert_eq(cluster_resolve(&d, cat, &c, &err), 0, "%s", err.msg);
  catalog_free(cat);
  return c;
}

/* An uneven last rack places a plan whose TP and expert groups stay in a
 * rack: 100 GPUs (72 + 28), TP 2 with EP 2 (groups of 4 consecutive
 * ranks) pass; EP 10 (10 experts; 20 consecutive ranks) puts ranks 60-79
 * in one group across the two racks; TP 16 on 304 GPUs (4 x 72 + 16)
 * puts ranks 64-79 in one TP group. */
Test(moe_exec, uneven_rack_places_groups)
{
  struct cluster c = nvl72("100");
  cr_assert_eq(c.last_node_gpus, 28);
  struct model m;
  struct plan p;
  struct weft_err err = {0};
  struct graph *g = build_layers("mixtral-8x7b", 1, 100, KV("tp", "2", "ep",
                                 "2", "global_batch", "100"), &m, &p);
  graph_free(g);
  cr_assert_eq(workload_check_racks(&p, &c, "--gpus", &err), 0, "%s",
               err.msg);
  g = build_layers("mixtral-8x7b", 1, 100, KV("experts", "10", "tp", "2",
                   "ep", "10", "global_batch", "100"), &m, &p);
  graph_free(g);
  cr_assert_neq(workload_check_racks(&p, &c, "--gpus", &err), 0);
  cr_assert_str_eq(err.msg, "--gpus: 100 GPUs (72 x 1 in whole racks, 28 "
                   "in a last rack): the EP group of 10 ranks from rank 60 "
                   "spans two racks' NVLink domains; choose degrees whose EP "
                   "groups fit in a rack's 72 GPUs and in the last rack's 28,"
                   " or GPUs that split evenly over racks");
  c = nvl72("304");
  cr_assert_eq(c.nodes, 5);
  cr_assert_eq(c.last_node_gpus, 16);
  plan_init(&p);
  p.tp = 16;
  p.dp = 19;
  p.pp = p.cp = p.ep = p.vchunks = 1;
  cr_assert_neq(workload_check_racks(&p, &c, "--gpus", &err), 0);
  cr_assert_str_eq(err.msg, "--gpus: 304 GPUs (72 x 4 in whole racks, 16 "
                   "in a last rack): the TP group of 16 ranks from rank 64 "
                   "spans two racks' NVLink domains; choose degrees whose TP "
                   "groups fit in a rack's 72 GPUs and in the last rack's 16,"
                   " or GPUs that split evenly over racks");
  p.tp = 8;
  p.dp = 38;
  cr_assert_eq(workload_check_racks(&p, &c, "--gpus", &err), 0);
}

/* A graph file keeps the expert groups: the allgather dispatcher at TP 2
 * (expert TP 2, layout etp 2) and --etp 4 under TP 2 read back with the
 * same layout and tasks. */
Test(moe_exec, graph_file_keeps_expert_groups)
{
  const char *etp[] = {"2", "4"};
  for (int i = 0; i < 2; i++) {
    struct model m;
    struct plan p;
    struct graph *g = build_layers("mixtral-8x7b", 1, 32, KV("tp", "2",
                                   "sp", "yes", "ep", "8", "etp", etp[i],
                                   "global_batch", "16", "moe_dispatcher",
                                   "allgather"), &m, &p);
    cr_assert_eq(g->layout.etp, i ? 4 : 2);
    char path[] = "/tmp/weft-test-moe-graph-XXXXXX";
    int fd = mkstemp(path);
    cr_assert_geq(fd, 0);
    close(fd);
    struct weft_err err = {0};
    cr_assert_eq(graph_write(g, path, &err), 0, "%s", err.msg);
    struct graph *back = graph_read(path, &err);
    unlink(path);
    cr_assert(back, "%s", err.msg);
    cr_assert_eq(back->layout.etp, g->layout.etp);
    cr_assert(graph_equal(g, back));
    graph_free(back);
    graph_free(g);
  }
}

/* The forward GEMM of layer 0, micro-batch 0 whose N and K are given, and
 * the task before it; its M (times its groups). */
static const struct task *gemm_nk(const struct graph *g, double N, double K,
                                  double *M, const struct task **before)
{
  const struct program *pr = &g->prog[0];
  for (long i = 1; i < pr->n; i++) {
    const struct task *t = &pr->tasks[i];
    if (t->kind == TK_KERNEL && t->layer == 0 && t->mb == 0 &&
        t->phase == PH_FWD && t->n == (uint32_t)N && t->k == (uint32_t)K &&
        (t->op == KK_GEMM || t->op == KK_GGEMM)) {
      *M = (double)t->m * (t->op == KK_GGEMM ? t->batch : 1);
      *before = &pr->tasks[i - 1];
      return t;
    }
  }
  cr_assert_fail("no GEMM %g x %g", N, K);
  return NULL;
}

/* FP8 with delayed scaling: the experts' GroupedLinear quantizes the
 * dispatched rows before FC1 (tex.split_quantize, row- and column-wise:
 * read 2, write 1 + 1 bytes an element), and MLA's down-projections
 * (TELinear) each quantize their BF16 input; in BF16 neither runs. */
Test(moe_exec, fp8_casts_grouped_and_mla)
{
  static const char *const disp[] = {"alltoall", "basic"};
  for (int i = 0; i < 2; i++) {
    struct model m;
    struct plan p;
    struct graph *g = build_layers("mixtral-8x7b", 2, 16,
                                   KV("ep", "8", "global_batch", "16",
                                      "moe_dispatcher", disp[i], "dtype",
                                      "fp8"), &m, &p);
    double M;
    const struct task *b;
    gemm_nk(g, 2 * 14336, h, &M, &b);
    REL(M, n * k);
    cr_assert_eq(b->kind, TK_KERNEL, "%s", disp[i]);
    cr_assert_eq(b->op, KK_ELEMWISE);
    REL(b->bytes, (e + 2) * n * k * h);
    graph_free(g);
    g = build_layers("mixtral-8x7b", 2, 16, KV("ep", "8", "global_batch",
                     "16", "moe_dispatcher", disp[i]), &m, &p);
    gemm_nk(g, 2 * 14336, h, &M, &b);
    cr_assert(b->kind != TK_KERNEL || b->bytes != (e + 2) * n * k * h);
    graph_free(g);
  }
  /* DeepSeek-V3's MLA, h 7168: q_down to 1536, kv_down to 512 + 64, over
   * the 4096 tokens of the rank (TP 1). */
  double H = 7168, T = 4096;
  const char *dt[] = {"fp8", "bf16"};
  for (int i = 0; i < 2; i++) {
    struct model m;
    struct plan p;
    struct graph *g = build_layers("deepseek-v3", 4, 8,
                                   KV("ep", "8", "global_batch", "8",
                                      "dense_layers", "1", "mtp_layers", "0",
                                      "moe_dispatcher", "alltoall", "dtype",
                                      dt[i]), &m, &p);
    double M, down[] = {1536, 576};
    for (int j = 0; j < 2; j++) {
      const struct task *b;
      gemm_nk(g, down[j], H, &M, &b);
      REL(M, T);
      bool cast = b->kind == TK_KERNEL && b->op == KK_ELEMWISE &&
                  fabs(b->bytes - (e + 2) * T * H) < 1;
      cr_assert_eq(cast, i == 0, "%s, %g", dt[i], down[j]);
    }
    graph_free(g);
  }
}

/* Index in stage 0's program of layer 0's first forward task of micro-
 * batch 0 matching: a GEMM of N columns (kind TK_KERNEL), or an EP
 * all-to-all (N 0); -1 when none. */
static long first_of(const struct graph *g, double N)
{
  const struct program *pr = &g->prog[0];
  for (long i = 0; i < pr->n; i++) {
    const struct task *t = &pr->tasks[i];
    if (t->layer != 0 || t->mb != 0 || t->phase != PH_FWD)
      continue;
    if (N == 0 ? t->kind == TK_COLL && t->op == CO_ALLTOALL &&
                     t->group == GK_EP
               : t->kind == TK_KERNEL && t->n == (uint32_t)N &&
                     (t->op == KK_GEMM || t->op == KK_GGEMM))
      return i;
  }
  return -1;
}

/* Megatron-Core runs the shared experts before the router
 * (MoELayer.forward: shared_experts_compute, then route) and adds their
 * output to the combined tokens in postprocess (read 2, write 1 element
 * of the rank's T / TP tokens); weft's basic exchange runs them after the
 * combine, adding nothing.  Mixtral with a 2048-wide shared expert, TP 2,
 * SP, EP 8. */
Test(moe_exec, shared_experts_before_the_router)
{
  const char *disp[] = {"alltoall", "basic"};
  double Tl = 4096 / 2;
  for (int i = 0; i < 2; i++) {
    struct model m;
    struct plan p;
    struct graph *g = build_layers("mixtral-8x7b", 2, 16,
        KV("tp", "2", "sp", "yes", "ep", "8", "global_batch", "8",
           "moe_dispatcher", disp[i], "shared_ffn", "2048"), &m, &p);
    long shared = first_of(g, 2 * 2048 / 2), router = first_of(g, E),
         a2a = first_of(g, 0);
    cr_assert(shared >= 0 && router >= 0 && a2a >= 0);
    if (i == 0) {
      cr_assert_lt(shared, router);
      cr_assert_lt(router, a2a);
    } else {
      cr_assert_gt(shared, a2a);
    }
    /* the add: the forward's last kernel of 3 e Tl h bytes before the
     * residual's, under alltoall only */
    cr_assert_eq(kernels_of(g, KK_ELEMWISE, PH_FWD, 3 * e * Tl * h),
                 i == 0 ? 3 : 2, "%s", disp[i]); /* + 2 residual adds */
    graph_free(g);
  }
}

/* --moe-shared-expert-overlap with TP 2 and SP: the shared experts' SP
 * all-gather and reduce-scatter of e T h (forward: their input's gather,
 * their output's reduce-scatter; backward: the output gradient's gather,
 * the input gradient's reduce-scatter) go on their own stream (ST_CP),
 * the same bytes as without the option on the compute stream; the EP
 * all-to-alls on ST_EP. */
Test(moe_exec, shared_overlap_streams)
{
  double T = 4096, b[2][2][2] = {{{0}}};
  long cnt[2][2][2] = {{{0}}};
  for (int v = 0; v < 2; v++) {
    struct model m;
    struct plan p;
    struct graph *g = build_layers("mixtral-8x7b", 2, 16,
        KV("tp", "2", "sp", "yes", "ep", "8", "global_batch", "8",
           "moe_dispatcher", "alltoall", "shared_ffn", "2048",
           "async_tp_grad", "no", /* the other TP collectives stay on the
                                     compute stream */
           "moe_shared_expert_overlap", v ? "yes" : "no"), &m, &p);
    const struct program *pr = &g->prog[0];
    for (long i = 0; i < pr->n; i++) {
      const struct task *t = &pr->tasks[i];
      if (t->kind != TK_COLL || t->layer != 0 || t->mb != 0)
        continue;
      if (t->op == CO_ALLTOALL)
        cr_assert_eq(t->stream, v ? ST_EP : ST_COMPUTE);
      if (t->group != GK_TP || t->stream != (v ? ST_CP : ST_COMPUTE))
        continue;
      int ph = t->phase == PH_BWD, rs = t->op == CO_REDUCE_SCATTER;
      if (v || fabs(t->bytes - e * T * h) < 1) {
        b[v][ph][rs] += t->bytes;
        cnt[v][ph][rs]++;
      }
    }
    graph_free(g);
  }
  for (int ph = 0; ph < 2; ph++)
    for (int rs = 0; rs < 2; rs++) {
      cr_assert_eq(cnt[1][ph][rs], 1, "phase %d rs %d", ph, rs);
      REL(b[1][ph][rs], e * T * h);
      cr_assert_geq(cnt[0][ph][rs], 1);
    }
}
