/*
 * test_etp.c - MoE parallel folding (plan.h, etp): Megatron-Core's expert
 * groups (parallel_state.py, RankGenerator over ETP, EP, EDP, PP in the
 * order tp-ep-dp-pp), the alltoall dispatcher's expert-TP collectives,
 * the experts' GEMMs, gradient reduction and memory split over ETP and
 * EDP, and the refused combinations.
 */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "tests/plan_helpers.h"
#include "workloads/accounting.h"

#define REL(a, b) cr_assert(fabs((double)(a) - (double)(b)) <= 1e-9 * fabs((double)(b)) + 1e-9, "%.17g != %.17g", (double)(a), (double)(b))

/* Mixtral-8x7B: h 4096, FFN 14336 (SwiGLU), 8 experts, top-2, BF16; a
 * micro-batch of one 4096-token sequence. */
static const double h = 4096, f = 14336, k = 2, e = 2, T = 4096;

/* The folded groups of rank r: size, slot and leader. */
static void group(const struct graph_layout *l, enum group_kind gk, long r,
                  long n, long slot, long leader)
{
  struct layout_group g;
  layout_group(l, gk, r, &g);
  cr_assert_eq(g.n, n, "gk %d rank %ld: n %ld", gk, r, g.n);
  cr_assert_eq(g.slot, slot, "gk %d rank %ld: slot %ld", gk, r, g.slot);
  cr_assert_eq(g.leader, leader, "gk %d rank %ld: leader %ld", gk, r,
               g.leader);
  for (long i = 0; i < n; i++) {
    long m = layout_member(l, gk, leader, i);
    layout_group(l, gk, m, &g);
    cr_assert_eq(g.slot, i);
    cr_assert_eq(g.leader, leader);
  }
}

/* TP 2, DP 8, PP 2 (16 ranks a stage).  ETP 1, EP 4: Megatron's expert
 * generator gives EP groups [0..3], [4..7], ... and EDP groups [0, 4, 8,
 * 12], [1, 5, 9, 13], ... in each stage (stage 1 from 16).  ETP 2, EP 4:
 * ETP [0, 1], EP [0, 2, 4, 6], EDP [0, 8]. */
Test(etp, megatron_expert_groups)
{
  struct graph_layout l = {.tp = 2, .pp = 2, .dp = 8, .cp = 1, .ep = 4,
                           .vchunks = 1,
                           .order = {PD_TP, PD_CP, PD_DP, PD_PP}, .etp = 1};
  group(&l, GK_ETP, 21, 1, 0, 21);
  group(&l, GK_EP, 21, 4, 1, 20);
  group(&l, GK_EDP, 21, 4, 1, 17);
  group(&l, GK_EDPCP, 21, 4, 1, 17);
  group(&l, GK_TP, 21, 2, 1, 20); /* attention's unchanged */
  group(&l, GK_DP, 21, 8, 2, 17);
  l.etp = 2;
  group(&l, GK_ETP, 13, 2, 1, 12);
  group(&l, GK_EP, 13, 4, 2, 9);
  group(&l, GK_EP, 6, 4, 3, 0);
  group(&l, GK_EDP, 13, 2, 1, 5);
  group(&l, GK_EDP, 29, 2, 1, 21);
  /* unset: GK_ETP is the TP group */
  l.etp = 0;
  group(&l, GK_ETP, 13, 2, 1, 12);
}

/* ETP 1 under TP 2 (EP 8, DP 8): the all-to-all of the shard's routed
 * rows over EP, no expert-TP collective (attention's TP gather alone);
 * the experts see the rank's own s k rows, whole (N = 2 f). */
Test(etp, alltoall_etp1_under_tp2)
{
  struct model m;
  struct plan p;
  struct graph *g = build_layers("mixtral-8x7b", 2, 16, KV("tp", "2", "sp",
                                 "yes", "ep", "8", "etp", "1", "global_batch",
                                 "8", "moe_dispatcher", "alltoall"), &m, &p);
  double s = T / 2, rows = s * k;
  long cnt;
  REL(coll_sum(g, 0, CO_ALLTOALL, GK_EP, PH_FWD, 0, 0, &cnt),
      2 * e * h * rows + 4 * rows);
  cr_assert_eq(cnt, 3);
  REL(coll_sum(g, 0, CO_ALLGATHER, GK_TP, PH_FWD, 0, 0, &cnt), e * T * h);
  cr_assert_eq(cnt, 1);
  cr_assert_eq(coll_sum(g, 0, CO_ALLGATHER, GK_ETP, -1, -2, -2, &cnt), 0);
  cr_assert_eq(cnt, 0);
  struct moe_dispatch d;
  build_moe_dispatch(&m, &p, s, &d);
  cr_assert_eq(d.etp_B, 0);
  cr_assert_eq(d.sort_B, 0); /* one expert a rank */
  /* FC1: s k rows, N = 2 f whole */
  const struct program *pr = &g->prog[0];
  double fc1 = -1;
  for (long i = 0; i < pr->n && fc1 < 0; i++) {
    const struct task *t = &pr->tasks[i];
    if (t->kind == TK_KERNEL && t->layer == 0 && t->mb == 0 &&
        t->phase == PH_FWD && t->n == (uint32_t)(2 * f) && t->k == h)
      fc1 = (double)t->m * (t->op == KK_GGEMM ? t->batch : 1);
  }
  REL(fc1, rows);
  graph_free(g);
}

/* ETP 4 over TP 2 (EP 8, DP 16, 32 GPUs): the received rows and their
 * probabilities all-gathered over the 4 expert-TP ranks (GK_ETP), the
 * tokens reduce-scattered back; bytes per token of the shard. */
Test(etp, alltoall_etp4_over_tp2)
{
  struct model m;
  struct plan p;
  struct graph *g = build_layers("mixtral-8x7b", 2, 32, KV("tp", "2", "sp",
                                 "yes", "ep", "8", "etp", "4", "global_batch",
                                 "16", "moe_dispatcher", "alltoall"), &m, &p);
  double s = T / 2, rows = s * k, t = 4;
  long cnt;
  REL(coll_sum(g, 0, CO_ALLGATHER, GK_ETP, PH_FWD, 0, 0, &cnt) / s,
      t * (e * h + 4) * k);
  cr_assert_eq(cnt, 1);
  REL(coll_sum(g, 0, CO_REDUCE_SCATTER, GK_ETP, PH_FWD, 0, 0, &cnt) / s,
      t * e * h * k);
  cr_assert_eq(cnt, 1);
  /* backward: the same two, the other way round */
  REL(coll_sum(g, 0, CO_ALLGATHER, GK_ETP, PH_BWD, 0, 0, &cnt) / s,
      t * (e * h + 4) * k);
  REL(coll_sum(g, 0, CO_REDUCE_SCATTER, GK_ETP, PH_BWD, 0, 0, &cnt) / s,
      t * e * h * k);
  /* attention's TP collectives stay over TP 2 */
  REL(coll_sum(g, 0, CO_ALLGATHER, GK_TP, PH_FWD, 0, 0, &cnt), e * T * h);
  struct moe_dispatch d;
  build_moe_dispatch(&m, &p, s, &d);
  REL(d.etp_B, t * (e * h + 4) * rows);
  struct graph_layout l;
  plan_layout(&p, &l);
  struct layout_group grp;
  layout_group(&l, GK_ETP, 0, &grp);
  cr_assert_eq(grp.n, 4);
  layout_group(&l, GK_EP, 0, &grp);
  cr_assert_eq(grp.n, 8);
  cr_assert_eq(layout_member(&l, GK_EP, 0, 1), 4);
  graph_free(g);
}

/* The experts' forward GEMM FLOPs of a micro-batch on one rank (EP 4: two
 * local experts, grouped GEMMs): ETP x s k rows through FC1 (2 f / ETP)
 * and FC2 (f / ETP): 6 s k f h whatever ETP, the ETP x EP group's
 * ETP EP s k routed rows' FLOPs divided by ETP x EP. */
Test(etp, expert_flops_per_rank)
{
  const char *etp[] = {"1", "2", "4"};
  for (int i = 0; i < 3; i++) {
    struct model m;
    struct plan p;
    struct graph *g = build_layers("mixtral-8x7b", 2, 16, KV("tp", "2", "sp",
                                   "yes", "ep", "4", "etp", etp[i],
                                   "global_batch", "8", "moe_dispatcher",
                                   "alltoall"), &m, &p);
    double s = T / 2, t = (double)p.etp, ep = 4;
    double total = t * ep * s * k * 2 * 3 * f * h; /* the group's */
    double fl = 0;
    const struct program *pr = &g->prog[0];
    for (long j = 0; j < pr->n; j++) {
      const struct task *x = &pr->tasks[j];
      if (x->kind == TK_KERNEL && x->op == KK_GGEMM && x->layer == 0 &&
          x->mb == 0 && x->phase == PH_FWD)
        fl += x->flops;
    }
    REL(fl, total / (t * ep));
    graph_free(g);
  }
}

/* Expert gradients reduced over EDP = TP x DP / (ETP x EP): TP 2, DP 8,
 * EP 4, ETP 1: 4 ranks (unfolded, DP / EP = 2); one all-reduce a layer of
 * the rank's expert parameters, 3 f h x 8 / (ETP x EP). */
Test(etp, expert_gradients_over_edp)
{
  struct model m;
  struct plan p;
  struct graph *g = build_layers("mixtral-8x7b", 2, 16, KV("tp", "2", "sp",
                                 "yes", "ep", "4", "etp", "1", "global_batch",
                                 "8", "moe_dispatcher", "alltoall"), &m, &p);
  cr_assert_eq(plan_edp(&p), 4);
  struct graph_layout l;
  plan_layout(&p, &l);
  struct layout_group grp;
  layout_group(&l, GK_EDP, 0, &grp);
  cr_assert_eq(grp.n, 4);
  cr_assert_eq(layout_member(&l, GK_EDP, 0, 1), 4);
  long cnt;
  double b = coll_sum(g, 0, CO_ALLREDUCE, GK_EDP, -1, -2, -2, &cnt);
  cr_assert_eq(cnt, 2);
  REL(b, 2 * 8 * 3 * f * h / 4 * dtype_bytes(p.grad_dtype));
  graph_free(g);
  /* unfolded: DP / EP */
  g = build_layers("mixtral-8x7b", 2, 16, KV("tp", "2", "sp", "yes", "ep",
                   "4", "global_batch", "8", "moe_dispatcher", "alltoall"),
                   &m, &p);
  cr_assert_eq(plan_edp(&p), 2);
  REL(coll_sum(g, 0, CO_ALLREDUCE, GK_EDP, -1, -2, -2, &cnt),
      2 * 8 * 3 * f * h / (2 * 4) * dtype_bytes(p.grad_dtype));
  graph_free(g);
}

/* Memory: the experts' parameters divided by ETP x EP, the dense ones by
 * TP as before; with the distributed optimizer (ZeRO-1) the experts'
 * optimizer states sharded over EDP. */
Test(etp, memory_terms)
{
  struct model m;
  struct plan p, q;
  struct graph *g = build_layers("mixtral-8x7b", 2, 16, KV("tp", "2", "sp",
                                 "yes", "ep", "4", "etp", "1", "zero", "1",
                                 "global_batch", "8", "moe_dispatcher",
                                 "alltoall"), &m, &p);
  graph_free(g);
  g = build_layers("mixtral-8x7b", 2, 16, KV("tp", "2", "sp", "yes", "ep",
                   "4", "zero", "1", "global_batch", "8", "moe_dispatcher",
                   "alltoall"), &m, &q);
  graph_free(g);
  double x1 = stage_expert_params_rank(&m, &p, 0);
  double x2 = stage_expert_params_rank(&m, &q, 0);
  REL(x1, 2 * 8 * 3 * f * h / (1 * 4));
  REL(x2, 2 * 8 * 3 * f * h / (2 * 4));
  REL(stage_params_rank(&m, &p, 0) - x1, stage_params_rank(&m, &q, 0) - x2);
  struct memory a, b;
  memory_per_gpu(&m, &p, 80e9, &a);
  memory_per_gpu(&m, &q, 80e9, &b);
  REL(a.expert_shard, 4);
  REL(b.expert_shard, 2);
  /* 12 bytes of optimizer state per parameter: the experts' x1 / 4 against
   * x2 / 2, the dense shard the same */
  REL(a.optimizer - b.optimizer, 12 * (x1 / 4 - x2 / 2));
  REL(a.weights - b.weights, 2 * (x1 - x2));
}

Test(etp, refused)
{
  refused("gpt-1.7b", KV("etp", "1", "global_batch", "8"), 8,
          "--etp: expert tensor parallelism needs an MoE model (experts > 1)");
  refused("mixtral-8x7b", KV("tp", "2", "sp", "yes", "etp", "1",
          "moe_dispatcher", "alltoall", "global_batch", "8"), 8,
          "--etp: expert tensor parallelism is modelled with expert "
          "parallelism (EP > 1; this plan has EP 1)");
  refused("mixtral-8x7b", KV("cp", "2", "ep", "2", "etp", "1",
          "moe_dispatcher", "alltoall", "global_batch", "8"), 8,
          "--etp: expert tensor parallelism with context parallelism is not "
          "modelled (CP 2)");
  refused("mixtral-8x7b", KV("order", "dp-tp-cp-pp", "ep", "2", "etp", "1",
          "moe_dispatcher", "alltoall", "global_batch", "8"), 8,
          "--etp: expert tensor parallelism is modelled with the default "
          "rank order tp-cp-dp-pp (Megatron-Core's expert groups: "
          "etp-ep-edp-pp)");
  refused("mixtral-8x7b", KV("tp", "2", "sp", "yes", "ep", "2", "etp", "3",
          "moe_dispatcher", "alltoall", "global_batch", "8"), 12,
          "--etp: ETP 3 does not divide the experts' FFN size 14336");
  refused("mixtral-8x7b", KV("tp", "2", "sp", "yes", "ep", "8", "etp", "4",
          "moe_dispatcher", "alltoall", "global_batch", "8"), 16,
          "--etp: ETP 4 x EP 8 x PP 1 does not divide the 16 GPUs "
          "(Megatron-Core's expert groups fill each pipeline stage's TP x "
          "DP = 16 ranks)");
  refused("mixtral-8x7b", KV("tp", "2", "sp", "yes", "ep", "2", "etp", "1",
          "global_batch", "8"), 8,
          "--etp: ETP 1 != TP 2 is modelled with --moe-dispatcher alltoall "
          "or allgather only (this plan has basic)");
  refused("mixtral-8x7b", KV("ep", "2", "etp", "2", "moe_dispatcher",
          "deepep", "moe_node_gpus", "8", "global_batch", "8"), 8,
          "--etp: ETP 2 != TP 1 is modelled with --moe-dispatcher alltoall "
          "or allgather only (this plan has deepep)");
  refused("mixtral-8x7b", KV("tp", "2", "sp", "yes", "ep", "2", "etp", "1",
          "zero", "2", "moe_dispatcher", "alltoall", "global_batch", "8"), 8,
          "--etp: expert tensor parallelism is modelled with ZeRO stage 0 "
          "or 1 (this plan has 2)");
  refused("mixtral-8x7b", KV("etp", "0", "global_batch", "8"), 8,
          "--etp: '0' is below the minimum of 1");
}

/* The bytes of layer 0's first forward kernel of micro-batch 0 on stage
 * 0: with FP8, the weights' cast (builder_layer.c, fp8_fwd_casts). */
static double first_cast(const struct graph *g)
{
  const struct program *pr = &g->prog[0];
  for (long j = 0; j < pr->n; j++) {
    const struct task *x = &pr->tasks[j];
    if (x->kind == TK_KERNEL && x->layer == 0 && x->mb == 0 &&
        x->phase == PH_FWD)
      return x->op == KK_ELEMWISE ? x->bytes : -1;
  }
  return -1;
}

/* FP8 (delayed scaling): each weight a rank holds is cast once per
 * iteration, read 2 and write 1 + 1 bytes an element; the routed experts'
 * elements are those of the rank's E / EP = 2 experts split over ETP,
 * 2 x 3 f h / ETP (TP 2, EP 4), the rest the same at every ETP.  With
 * MXFP8, 2 + 2 (1 + 1/32) bytes an element. */
Test(etp, fp8_weight_casts_by_etp)
{
  const char *etp[] = {"1", "2", "4"};
  const char *recipe[] = {"delayed", "mxfp8"};
  for (int r = 0; r < 2; r++) {
    double per = r ? 2 + 2 * (1 + 1.0 / 32) : 4, rest = 0;
    for (int i = 0; i < 3; i++) {
      struct model m;
      struct plan p;
      struct graph *g = build_layers("mixtral-8x7b", 2, 16, KV("tp", "2",
                                     "sp", "yes", "ep", "4", "etp", etp[i],
                                     "dtype", "fp8", "fp8_recipe", recipe[r],
                                     "global_batch", "8", "moe_dispatcher",
                                     "alltoall"), &m, &p);
      double t = (double)p.etp, x = 2 * 3 * f * h / t;
      double b = first_cast(g);
      cr_assert_gt(b, per * x, "the cast covers the experts");
      if (i == 0)
        rest = b / per - x;
      REL(b / per, rest + x);
      graph_free(g);
    }
    /* the rest: attention's QKV and projection over TP 2 (h (h + 2 kv d)
     * + h h) / 2, the router's h E and the two norms' 2 h whole */
    REL(rest, (h * (h + 2 * 8 * 128) + h * h) / 2 + h * 8 + 2 * h);
  }
}

/* Megatron-Core's FP8 weight cache (accounting.c, megatron_terms: an FP8
 * copy and its transpose, 2 bytes, of each linear weight Transformer
 * Engine runs) of an MoE model counts the routed experts at their own
 * inner size, split over ETP x EP.  Qwen3-30B-A3B cut to 2 layers (h 2048,
 * 32 query heads and 4 KV heads of 128, 128 experts of FFN 768), TP 2 and
 * EP 8 on 16 GPUs: per layer QKV 2048 x 5120 and the projection 4096 x
 * 2048 over TP 2, and 16 local experts of 3 x 2048 x 768 over ETP (1, 2);
 * the cache is the FP8 weights less the BF16 run's. */
Test(etp, fp8_weight_cache_of_experts)
{
  const char *etp[] = {"1", "2"};
  for (int i = 0; i < 2; i++) {
    double w[2];
    for (int fp8 = 0; fp8 < 2; fp8++) {
      struct model m;
      struct plan p;
      struct graph *g = build_layers("qwen3-30b-a3b", 2, 16, KV("tp", "2",
                                     "sp", "yes", "ep", "8", "etp", etp[i],
                                     "zero", "1", "shard_impl", "megatron",
                                     "mem_framework", "megatron",
                                     "dtype", fp8 ? "fp8" : "bf16",
                                     "global_batch", "16", "moe_dispatcher",
                                     "alltoall"), &m, &p);
      graph_free(g);
      struct memory x;
      memory_per_gpu(&m, &p, 80e9, &x);
      w[fp8] = x.weights;
    }
    double t = i ? 2 : 1;
    double cast = (2048.0 * 5120 + 4096.0 * 2048) / 2 +
                  16 * 3 * 2048.0 * 768 / t;
    REL(w[1] - w[0], 2 * 2 * cast);
  }
}

/* The communicators of an MoE job on Megatron-Core's dispatchers
 * (accounting.c, comm_count): Mixtral 8x7B on 16 GPUs, TP 2, EP 4, DP 8,
 * ZeRO-1.  alltoall runs on TP, DP, EP (its all-to-alls: p2p channels to
 * its 3 peers, no ring), the expert TP group (a communicator of its own,
 * t = 2) and expert DP (EDP = 2 x 8 / (2 x 4) = 2): 5, four of them
 * rings.  With --etp 1 the expert TP group runs nothing (4, EDP 4).
 * allgather runs on tp_ep (2 x 4 ranks) in place of EP and expert TP: 4
 * rings.  basic keeps weft's count: TP, DP, EP, EDP rings. */
Test(etp, communicators)
{
  double conn = 8 * 512 * 8 * 16 + 120 * 640 * 8 * 8 + (1 << 22);
  double cublas = 33.0 * (1 << 20), ctx = 287047680.0, p2p = 2.0 * (1 << 22);
  double pool = 2 * 32 * 16 * 131072.0;
  struct {
    const char *disp, *etp, *node;
    long comms, rings, peers;
    double pool;
  } c[] = {{"alltoall", NULL, NULL, 5, 4, 3, 0},
           {"alltoall", "1", NULL, 4, 3, 3, 0},
           {"allgather", NULL, NULL, 4, 4, 0, 0},
           {"basic", NULL, NULL, 4, 4, 0, 0},
           /* nodes of 4 GPUs: EP ranks 2 apart, 1 peer in the node, 2
            * across the network sharing NCCL's pool */
           {"alltoall", NULL, "4", 5, 4, 1, pool},
           /* folded, ETP 1: EP ranks 1 apart, all 3 peers in the node */
           {"alltoall", "1", "4", 4, 3, 3, 0}};
  for (size_t i = 0; i < sizeof c / sizeof c[0]; i++) {
    struct model m;
    struct plan p;
    const char *kv[20] = {"tp", "2", "sp", "yes", "ep", "4", "zero", "1",
                          "global_batch", "8", "moe_dispatcher", c[i].disp};
    if (c[i].etp) {
      kv[12] = "etp";
      kv[13] = c[i].etp;
    }
    struct graph *g = build_layers("mixtral-8x7b", 2, 16, kv, &m, &p);
    graph_free(g);
    /* the cluster's node size, as workload.c fills it in */
    p.moe_node_gpus = c[i].node ? atol(c[i].node) : 0;
    struct memory mem;
    memory_per_gpu(&m, &p, 80e9, &mem);
    cr_assert_eq(mem.communicators, c[i].comms, "%s: %ld", c[i].disp,
                 mem.communicators);
    cr_assert_eq(mem.p2p_peers, 0);
    double fw = p.mem_framework != MF_ZERO ? ctx : 0;
    REL(mem.buffers, (double)c[i].rings * 32 * conn +
                         (double)c[i].peers * p2p + c[i].pool + cublas +
                         fw);
  }
}
