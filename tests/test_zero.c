/*
 * test_zero.c - ZeRO stages, FSDP and HSDP: bytes of every collective and
 * memory per GPU against their closed forms (Rajbhandari et al., ZeRO:
 * 2 + 2 + 12 bytes per parameter, split by stage over N data-parallel
 * ranks), and the combinations that are refused.
 */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>

#include "workloads/accounting.h"
#include "tests/plan_helpers.h"

#define REL(a, b) cr_assert(fabs((double)(a) - (double)(b)) <= 1e-9 * fabs((double)(b)) + 1e-9, "%.17g != %.17g", (double)(a), (double)(b))

Test(zero, zero3_gathers_twice_and_reduce_scatters_once)
{
  /* One micro-batch per iteration (4 sequences per GPU, micro-batch 4). */
  struct model m;
  struct plan p;
  struct graph *g = build("gpt-1.7b", 16, KV("zero", "3", "micro_batch", "4",
                          "global_batch", "64"), &m, &p);
  double P = stage_params_rank(&m, &p, 0); /* the whole model, TP 1 PP 1 */
  long n_ag, n_rs;
  REL(coll_sum(g, 0, CO_ALLGATHER, GK_DP, -1, -2, -2, &n_ag), 2 * 2 * P);
  REL(coll_sum(g, 0, CO_REDUCE_SCATTER, GK_DP, -1, -2, -2, &n_rs), 2 * P);
  REL(coll_sum(g, 0, CO_ALLREDUCE, GK_DP, -1, -2, -2, NULL), 0);
  /* Per unit: embedding, 24 layers, loss: gathered for forward and for
   * backward, reduce-scattered once. */
  cr_assert_eq(n_ag, 2 * (24 + 2));
  cr_assert_eq(n_rs, 24 + 2);
  graph_free(g);
}

Test(zero, fsdp_gathers_per_micro_batch)
{
  struct model m;
  struct plan p;
  struct graph *g = build("gpt-1.7b", 16, KV("fsdp", "yes", "global_batch",
                          "64"), &m, &p);
  double P = stage_params_rank(&m, &p, 0);
  REL(coll_sum(g, 0, CO_ALLGATHER, GK_DP, -1, -2, -2, NULL), 2 * 2 * P * 4);
  REL(coll_sum(g, 0, CO_REDUCE_SCATTER, GK_DP, -1, -2, -2, NULL), 2 * P * 4);
  graph_free(g);
}

Test(zero, zero1_and_2_reduce_scatter_then_gather)
{
  const char *stages[] = {"1", "2"};
  for (int k = 0; k < 2; k++) {
    struct model m;
    struct plan p;
    struct graph *g = build("gpt-1.7b", 16, KV("zero", stages[k],
                            "global_batch", "64"), &m, &p);
    double P = stage_params_rank(&m, &p, 0);
    REL(coll_sum(g, 0, CO_REDUCE_SCATTER, GK_DP, -1, -2, -2, NULL), 2 * P);
    REL(coll_sum(g, 0, CO_ALLGATHER, GK_DP, -1, -2, -2, NULL), 2 * P);
    REL(coll_sum(g, 0, CO_ALLREDUCE, GK_DP, -1, -2, -2, NULL), 0);
    graph_free(g);
  }
}

Test(zero, hsdp_shards_inside_groups_and_reduces_across)
{
  struct model m;
  struct plan p;
  struct graph *g = build("gpt-1.7b", 32, KV("hsdp", "8", "micro_batch", "2",
                          "global_batch", "64"), &m, &p);
  cr_assert_eq(g->layout.shard, 8);
  double P = stage_params_rank(&m, &p, 0);
  REL(coll_sum(g, 0, CO_ALLGATHER, GK_SHARD, -1, -2, -2, NULL), 2 * 2 * P);
  REL(coll_sum(g, 0, CO_REDUCE_SCATTER, GK_SHARD, -1, -2, -2, NULL), 2 * P);
  /* Each rank's reduced shard, all-reduced across the 4 replicas. */
  REL(coll_sum(g, 0, CO_ALLREDUCE, GK_REPL, -1, -2, -2, NULL), 2 * P / 8);
  graph_free(g);
}

Test(zero, memory_follows_the_zero_paper)
{
  for (int stage = 0; stage <= 3; stage++) {
    struct model m;
    struct plan p;
    char z[2] = {(char)('0' + stage), 0};
    struct graph *g = build("gpt-1.7b", 64, KV("zero", z, "global_batch",
                            "64"), &m, &p);
    struct memory mem;
    memory_per_gpu(&m, &p, 80e9, &mem);
    double P = model_params(&m), N = 64;
    REL(mem.weights, stage >= 3 ? 2 * P / N : 2 * P);
    REL(mem.grads, stage >= 2 ? 2 * P / N : 2 * P);
    REL(mem.optimizer, stage >= 1 ? 12 * P / N : 12 * P);
    graph_free(g);
  }
}

Test(zero, bad_combinations)
{
  refused("gpt-1.7b", KV("zero", "2", "pp", "2", "global_batch", "64"), 32,
          "--zero: ZeRO stage 2 cannot be combined with pipeline parallelism "
          "(PP 2) (DeepSpeed refuses it); use stage 1, or FSDP2 (--fsdp yes "
          "--shard-impl fsdp2, as torchtitan runs it with PP)");
  refused("gpt-1.7b", KV("fsdp", "yes", "pp", "4", "global_batch", "64"), 32,
          "--fsdp: ZeRO-3 with pipeline parallelism (PP 4) is modelled as "
          "torchtitan runs it, on FSDP2 (PyTorch's pipelining drives FSDP2 "
          "modules only; DeepSpeed refuses ZeRO-3 with PP); this plan's "
          "shard_impl is ideal: add --shard-impl fsdp2");
  refused("gpt-1.7b", KV("hsdp", "12", "global_batch", "64"), 32,
          "--hsdp: shard groups of 12 do not divide DP 32");
  refused("gpt-1.7b", KV("zero", "4"), 32, "--zero: '4' exceeds the limit of 3");
}

/* DeepSpeed ZeRO-3 (plan.h, shard_impl): per layer of GPT 1.7B (h 2304,
 * TP 1), the tensors of at least 1e5 elements are QKV (h x 3h), the
 * projection (h x h), FC1 (h x 4h) and FC2 (4h x h); the biases and norms
 * (<= 4h = 9216 elements) persist and are never gathered.  2021: one
 * gather per tensor; now: coalesced in module order up to 5e7 elements,
 * which here takes them all (12 h^2 = 63.7e6 > 5e7: QKV + projection
 * (21.2e6), then FC1 + FC2 (42.5e6)). */
Test(zero, deepspeed_gathers_by_tensor_and_bucket)
{
  const char *impl[] = {"deepspeed-2021", "deepspeed"};
  const long want[] = {4, 2};
  double h = 2304;
  for (int k = 0; k < 2; k++) {
    struct model m;
    struct plan p;
    struct graph *g = build("gpt-1.7b", 16, KV("zero", "3", "shard_impl",
                            impl[k], "micro_batch", "4", "global_batch", "64"),
                            &m, &p);
    long n;
    double b = coll_sum(g, 0, CO_ALLGATHER, GK_DP, PH_FWD, 5, -2, &n);
    cr_assert_eq(n, want[k], "%s: %ld gathers of layer 5", impl[k], n);
    REL(b, 12 * h * h * 2); /* BF16 */
    /* Gradients: reduce-scattered in buckets of 5e8 elements (2021: each
     * parameter of a bucket on its own, one collective here).  GPT 1.7B's
     * 1.7e9 parameters: the buckets hold everything once. */
    double P = stage_params_rank(&m, &p, 0);
    enum coll_op op = CO_REDUCE_SCATTER;
    long nb;
    REL(coll_sum(g, 0, op, GK_DP, -1, -2, -2, &nb), 2 * P);
    cr_assert_eq(nb, (long)ceil(P / 5e8), "%s: %ld buckets", impl[k], nb);
    graph_free(g);
  }
}

/* DeepSpeed 2021's host work (builder_zero.c, ds21_pass): on 16 ranks
 * every gather of the forward pass comes after a host synchronization and
 * 2 x 16 host operations (a narrow view and a copy per rank); each
 * gathered tensor's zeroing and copy back is one kernel of 6 bytes per
 * BF16 element, 12 x its elements; each bucket's reduce-scatter carries
 * 2 x 16 host operations per parameter of the bucket (GPT 1.7B: 12 per
 * layer: 2 norms and their biases, QKV, projection, FC1, FC2 and their
 * biases; the embedding, the position embedding and the final norm with
 * its bias: 4 more, in one bucket). */
Test(zero, deepspeed_2021_host_work)
{
  struct model m;
  struct plan p;
  struct graph *g = build("gpt-1.7b", 16, KV("zero", "3", "shard_impl",
                          "deepspeed-2021", "micro_batch", "4",
                          "global_batch", "64"), &m, &p);
  const struct program *pr = &g->prog[0];
  double h = 2304, want[] = {3 * h * h, h * h, 4 * h * h, 4 * h * h};
  int found[4] = {0}, gathers = 0;
  double rs_ops = 0;
  for (long i = 0; i < pr->n; i++) {
    const struct task *t = &pr->tasks[i];
    uint32_t hw = graph_host_of(pr, i);
    if (t->kind == TK_COLL && t->op == CO_ALLGATHER && t->phase == PH_FWD &&
        t->layer == 5) {
      cr_assert_eq(hw, GRAPH_HOST_SYNC | 32u, "gather %ld: host %x", i, hw);
      gathers++;
    }
    if (t->kind == TK_COLL && t->op == CO_REDUCE_SCATTER) {
      cr_assert_eq(hw & GRAPH_HOST_SYNC, 0u);
      rs_ops += hw & GRAPH_HOST_OPS;
    }
    if (t->kind == TK_KERNEL && t->op == KK_ELEMWISE && t->phase == PH_FWD &&
        t->layer == 5)
      for (int k = 0; k < 4; k++)
        found[k] += fabs(t->bytes - 12 * want[k]) < 1;
  }
  cr_assert_eq(gathers, 4);
  for (int k = 0; k < 4; k++) /* FC1 and FC2 have the same size */
    cr_assert_eq(found[k], k < 2 ? 1 : 2, "copy of tensor %d: %d", k,
                 found[k]);
  REL(rs_ops, 2 * 16 * (12 * 24 + 4));
  graph_free(g);
}

/* FSDP1 gathers as the ideal model does; FSDP2 adds its copy-out of every
 * gathered unit and the copy-in of every unit's gradients, memory-bound
 * kernels of 2 x their bytes. */
Test(zero, fsdp2_copies_in_and_out)
{
  struct model m;
  struct plan p;
  double base = 0, with = 0;
  long nb = 0, nw = 0;
  const char *impl[] = {"fsdp1", "fsdp2"};
  for (int k = 0; k < 2; k++) {
    struct graph *g = build("gpt-1.7b", 16, KV("fsdp", "yes", "shard_impl",
                            impl[k], "micro_batch", "4", "global_batch",
                            "64"), &m, &p);
    double b = 0;
    long n = 0;
    for (long i = 0; i < g->prog[0].n; i++) {
      const struct task *t = &g->prog[0].tasks[i];
      if (t->kind == TK_KERNEL && t->op == KK_ELEMWISE) {
        b += t->bytes;
        n++;
      }
    }
    *(k ? &with : &base) = b;
    *(k ? &nw : &nb) = n;
    graph_free(g);
  }
  double P = stage_params_rank(&m, &p, 0);
  /* Forward and backward copy-outs at 2 bytes, one copy-in at 2 (BF16
   * gradients), each 2 x (read and write). */
  REL(with - base, 2 * P * 2 * 2 + 2 * P * 2);
  cr_assert_eq(nw - nb, 3 * (24 + 2));
}

Test(zero, shard_impl_refused_where_it_cannot_apply)
{
  refused("gpt-1.7b", KV("shard_impl", "deepspeed", "global_batch", "64"), 32,
          "--shard_impl: shard_impl applies to sharded parameters (ZeRO-3, "
          "FSDP or HSDP); this plan has ZeRO stage 0");
  refused("gpt-1.7b", KV("hsdp", "8", "shard_impl", "deepspeed",
          "global_batch", "64"), 32, "--shard_impl: HSDP is PyTorch FSDP's; "
          "DeepSpeed ZeRO-3 shards over all data-parallel ranks");
  refused("gpt-1.7b", KV("zero", "3", "shard_impl", "megatron",
          "global_batch", "64"), 32, "--shard_impl: megatron is Megatron-LM's "
          "distributed optimizer, ZeRO stage 1; this plan has ZeRO stage 3");
  refused("gpt-1.7b", KV("zero", "3", "shard_impl", "nemo",
          "global_batch", "64"), 32, "--shard_impl: 'nemo' is not ideal, "
          "fsdp1, fsdp2, deepspeed, deepspeed-2021, megatron, megatron-fsdp "
          "or megatron-fsdp-ub");
  refused("gpt-1.7b", KV("overlap_param_gather", "yes", "global_batch", "64"),
          32, "--overlap_param_gather: overlap_param_gather gathers the "
          "parameters that ZeRO-1/2 updates in shards; this plan has ZeRO "
          "stage 0");
  refused("gpt-1.7b", KV("zero", "1", "overlap_param_gather", "yes",
          "overlap_grad", "no", "global_batch", "64"), 32,
          "--overlap_param_gather: overlap_param_gather needs overlap_grad "
          "(Megatron-LM asserts --overlap-grad-reduce with "
          "--overlap-param-gather)");
}

/* Megatron's distributed optimizer on GPT 1.7B (24 layers of 63.7 M
 * parameters, DP 16): buckets of 4e7 parameters in backward order, so each
 * layer closes one (the final norm shares the last layer's), and the
 * embedding its own: 25 reduce-scatters of FP32 gradients (4 bytes per
 * parameter), then 25 gathers of the BF16 parameters. */
Test(zero, megatron_buckets_reduce_scatter_then_gather)
{
  struct model m;
  struct plan p;
  struct graph *g = build("gpt-1.7b", 16, KV("zero", "1", "shard_impl",
                          "megatron", "global_batch", "64"), &m, &p);
  double P = stage_params_rank(&m, &p, 0);
  long n_rs, n_ag;
  REL(p.bucket_bytes, 4e7 * 4);
  REL(coll_sum(g, 0, CO_REDUCE_SCATTER, GK_DP, PH_BWD, -2, -2, &n_rs), 4 * P);
  REL(coll_sum(g, 0, CO_ALLGATHER, GK_DP, PH_OPT, -2, -2, &n_ag), 2 * P);
  cr_assert_eq(n_rs, 25);
  cr_assert_eq(n_ag, 25);
  graph_free(g);
  /* Beyond 40 data-parallel ranks the bucket grows to 1e6 x DP: on 64
   * GPUs, 6.4e7 parameters, so layers pair up below it only once full. */
  g = build("gpt-1.7b", 64, KV("zero", "1", "shard_impl", "megatron",
            "global_batch", "64"), &m, &p);
  REL(p.bucket_bytes, 64e6 * 4);
  graph_free(g);
  /* grad_dtype given: its width. */
  g = build("gpt-1.7b", 16, KV("zero", "1", "shard_impl", "megatron",
            "grad_dtype", "bf16", "global_batch", "64"), &m, &p);
  REL(coll_sum(g, 0, CO_REDUCE_SCATTER, GK_DP, PH_BWD, -2, -2, NULL), 2 * P);
  REL(p.bucket_bytes, 4e7 * 2);
  graph_free(g);
}

/* Later pipeline stages, later model chunks and runs without overlap keep
 * one bucket (Megatron: "not on the critical path"). */
Test(zero, megatron_one_bucket_beyond_the_first_stage)
{
  struct model m;
  struct plan p;
  struct graph *g = build("gpt-1.7b", 32, KV("zero", "1", "shard_impl",
                          "megatron", "pp", "2", "global_batch", "64"), &m, &p);
  long n0, n1;
  coll_sum(g, 0, CO_REDUCE_SCATTER, GK_DP, -1, -2, -2, &n0);
  REL(coll_sum(g, 1, CO_REDUCE_SCATTER, GK_DP, -1, -2, -2, &n1),
      4 * stage_params_rank(&m, &p, 1));
  cr_assert_eq(n0, 13, "stage 0: embedding and 12 layers, %ld", n0);
  cr_assert_eq(n1, 1);
  graph_free(g);
  g = build("gpt-1.7b", 32, KV("zero", "1", "shard_impl", "megatron", "pp",
            "2", "schedule", "interleaved:2", "global_batch", "64"), &m, &p);
  coll_sum(g, 0, CO_REDUCE_SCATTER, GK_DP, -1, -2, -2, &n0);
  cr_assert_eq(n0, 8, "chunk 0 (embedding, 6 layers) split, chunk 1 whole: "
               "%ld", n0);
  graph_free(g);
  g = build("gpt-1.7b", 16, KV("zero", "1", "shard_impl", "megatron",
            "overlap_grad", "no", "global_batch", "64"), &m, &p);
  coll_sum(g, 0, CO_REDUCE_SCATTER, GK_DP, -1, -2, -2, &n0);
  cr_assert_eq(n0, 1);
  graph_free(g);
}

/* Uneven stages (6 layers on the first of 4): each stage gathers exactly
 * its dense parameters, after the step or at the forward. */
Test(zero, megatron_gathers_each_stage_whole_with_uneven_stages)
{
  for (int k = 0; k < 2; k++) {
    struct model m;
    struct plan p;
    struct graph *g = build("gpt-1.7b", 32, KV("tp", "2", "pp", "4", "zero",
                            "1", "shard_impl", "megatron",
                            "first_stage_layers", "6", "overlap_param_gather",
                            k ? "yes" : "no", "global_batch", "64"), &m, &p);
    for (long s = 0; s < 4; s++)
      REL(coll_sum(g, s, CO_ALLGATHER, GK_DP, k ? PH_FWD : PH_OPT, -2, -2,
                   NULL),
          2 * stage_params_rank(&m, &p, s));
    graph_free(g);
  }
}

/* overlap_param_gather: the same gathers, in the first micro-batch's
 * forward pass instead of after the optimizer step, and each bucket's first
 * layer waits for its own. */
Test(zero, overlap_param_gather_moves_the_gathers_to_the_forward)
{
  for (int k = 0; k < 2; k++) {
    struct model m;
    struct plan p;
    struct graph *g = build("gpt-1.7b", 16, k ? KV("zero", "1", "shard_impl",
                            "megatron", "overlap_param_gather", "yes",
                            "global_batch", "64")
                            : KV("zero", "1", "overlap_param_gather", "yes",
                                 "global_batch", "64"), &m, &p);
    double P = stage_params_rank(&m, &p, 0);
    long n_fwd, n_opt;
    REL(coll_sum(g, 0, CO_ALLGATHER, GK_DP, PH_FWD, -2, 0, &n_fwd), 2 * P);
    coll_sum(g, 0, CO_ALLGATHER, GK_DP, PH_OPT, -2, -2, &n_opt);
    cr_assert_eq(n_opt, 0);
    cr_assert_eq(coll_sum(g, 0, CO_ALLGATHER, GK_DP, PH_FWD, -2, 1, NULL), 0,
                 "only the first micro-batch gathers");
    /* Layer 5's first forward kernel waits for the gather of its bucket. */
    const struct program *pr = &g->prog[0];
    long gather = -1, kern = -1;
    for (long i = 0; i < pr->n && kern < 0; i++) {
      const struct task *t = &pr->tasks[i];
      if (t->kind == TK_COLL && t->op == CO_ALLGATHER && t->layer == 5)
        gather = i;
      if (t->kind == TK_KERNEL && t->layer == 5 && t->phase == PH_FWD)
        kern = i;
    }
    if (k == 1) { /* megatron: every layer is a bucket of its own */
      cr_assert_eq(n_fwd, 25);
      cr_assert(gather >= 0 && kern > gather);
      bool waits = false;
      for (uint32_t d = 0; d < pr->tasks[kern].ndep; d++)
        waits |= pr->deps[pr->tasks[kern].dep0 + d] == (uint32_t)gather;
      cr_assert(waits, "layer 5 does not wait for its gather");
    }
    graph_free(g);
  }
}


/* GPT 1.7B with 4 layers, ZeRO-1 as Megatron runs it, on two one-GPU
 * nodes: the iteration with the gathers after the optimizer step and with
 * them at the forward pass.  Free communication: the same time (the
 * gathers only move).  Real communication: the forward hides all but the
 * first bucket's gather. */
static double megatron_time(bool overlap, bool free_comm)
{
  struct model m;
  struct plan p;
  struct graph *g = build_layers("gpt-1.7b", 4, 2, KV("global_batch", "4",
                                 "zero", "1", "shard_impl", "megatron",
                                 "overlap_param_gather", overlap ? "yes" : "no"),
                                 &m, &p);
  double t = replay_s(g, two_nodes_loaded(), free_comm);
  graph_free(g);
  return t;
}

Test(zero, overlap_param_gather_hides_gathers_behind_the_forward)
{
  double a = megatron_time(false, true), b = megatron_time(true, true);
  cr_assert(fabs(a - b) <= 1e-12 * a, "free network: %.17g against %.17g",
            a, b);
  double slow = megatron_time(false, false), fast = megatron_time(true, false);
  cr_assert(fast < slow, "overlapped %.9g s, not below %.9g s", fast, slow);
  cr_assert(fast > a, "the first bucket's gather is exposed: %.9g s, "
            "compute %.9g s", fast, a);
}

/* Megatron-FSDP (builder_zero.c, mfsdp_pass) on Llama 3 8B cut to 4
 * layers, 8 GPUs, 2 micro-batches per rank.  Per micro-batch each layer is
 * gathered for its forward and again for its backward, and its gradients
 * reduce-scattered once; the embedding, final norm and output layer, one
 * bucket, are gathered once per step and reduced every micro-batch. */
static struct graph *mfsdp_build(const char *impl, const char *const *more,
                                  struct model *m, struct plan *p)
{
  const char *kv[32] = {"zero", "3", "shard_impl", impl, "global_batch", "16"};
  int n = 6;
  for (int i = 0; more && more[i]; i++)
    kv[n++] = more[i];
  kv[n] = NULL;
  return build_layers("llama3-8b", 4, 8, kv, m, p);
}

Test(zero, megatron_fsdp_moves_each_parameter_as_the_code_does)
{
  const char *impl[] = {"megatron-fsdp", "megatron-fsdp-ub"};
  for (int k = 0; k < 2; k++) {
    struct model m;
    struct plan p;
    struct graph *g = mfsdp_build(impl[k], NULL, &m, &p);
    double P = stage_params_rank(&m, &p, 0);
    double lp = layer_params_rank(&m, 1, 1), L = 4, M = 2;
    double nonunit = P - L * lp;
    REL(nonunit, 2.0 * 128256 * 4096 + 4096);
    long n_ag, n_rs;
    /* BF16 parameters, BF16 gradients (main_grads_dtype None) */
    REL(coll_sum(g, 0, CO_ALLGATHER, GK_DP, -1, -2, -2, &n_ag),
        M * 2 * L * lp * 2 + nonunit * 2);
    REL(coll_sum(g, 0, CO_REDUCE_SCATTER, GK_DP, -1, -2, -2, &n_rs),
        M * P * 2);
    cr_assert_eq(n_ag, 2 * 2 * 4 + 1);
    cr_assert_eq(n_rs, 2 * (4 + 1));
    /* The non-unit bucket: only the first micro-batch's forward. */
    REL(coll_sum(g, 0, CO_ALLGATHER, GK_DP, PH_FWD, -1, 0, NULL),
        nonunit * 2);
    REL(coll_sum(g, 0, CO_ALLGATHER, GK_DP, PH_FWD, -1, 1, NULL), 0);
    graph_free(g);
  }
}

/* FP8 parameters: the linear weights gathered at 1 byte, the norms at 2;
 * each backward transposes the gathered FP8 weights (read 1, write 1);
 * no once-per-step transpose in the forward. */
Test(zero, megatron_fsdp_gathers_fp8_parameters_and_transposes_them)
{
  struct model m;
  struct plan p;
  struct graph *g = mfsdp_build("megatron-fsdp-ub", KV("dtype", "fp8",
                                "fp8_params", "yes", "grad_accum", "fused"),
                                &m, &p);
  double P = stage_params_rank(&m, &p, 0);
  double lp = layer_params_rank(&m, 1, 1), L = 4, M = 2;
  double lin = layer_linear_params_rank(&m, &p);
  REL(lp - lin, 2 * 4096); /* the two RMSNorms */
  REL(coll_sum(g, 0, CO_ALLGATHER, GK_DP, -1, -2, -2, NULL),
      M * 2 * L * (lin + 2 * (lp - lin)) + (P - L * lp) * 2);
  long tr_b = 0, tr_f = 0;
  const struct program *pr = &g->prog[0];
  for (long i = 0; i < pr->n; i++) {
    const struct task *t = &pr->tasks[i];
    if (t->kind == TK_KERNEL && t->op == KK_ELEMWISE && t->layer >= 0 &&
        t->bytes == 2 * lin)
      *(t->phase == PH_BWD ? &tr_b : &tr_f) += 1;
  }
  cr_assert_eq(tr_b, (long)(M * L));
  cr_assert_eq(tr_f, 0);
  graph_free(g);
}

/* The gradient copy into the unsharded bucket (_grad_acc), unless TE
 * accumulates into it (grad_accum fused): read 2, write grad_dtype. */
Test(zero, megatron_fsdp_copies_gradients_into_the_bucket)
{
  double b[2];
  long n[2];
  struct model m;
  struct plan p;
  for (int k = 0; k < 2; k++) {
    struct graph *g = mfsdp_build("megatron-fsdp", k ? KV("grad_accum",
                                  "buffer", "grad_dtype", "fp32")
                                  : KV("grad_accum", "fused", "grad_dtype",
                                       "fp32"), &m, &p);
    b[k] = 0;
    n[k] = 0;
    const struct program *pr = &g->prog[0];
    for (long i = 0; i < pr->n; i++) {
      const struct task *t = &pr->tasks[i];
      if (t->kind == TK_KERNEL && t->op == KK_ELEMWISE && t->phase == PH_BWD) {
        b[k] += t->bytes;
        n[k]++;
      }
    }
    REL(coll_sum(g, 0, CO_REDUCE_SCATTER, GK_DP, -1, -2, -2, NULL),
        2 * stage_params_rank(&m, &p, 0) * 4);
    graph_free(g);
  }
  REL(b[1] - b[0], 2 * stage_params_rank(&m, &p, 0) * (2 + 4));
  cr_assert_eq(n[1] - n[0], 2 * (4 + 1));
}

/* Prefetch: at the first layer's forward, with double buffering the next
 * layer is gathered too (two units); without, the hook prefetches while
 * fewer than 5e8 elements (half of max(1e9, 2 x 218 M)) are prefetched:
 * three layers of 218 M.  Every gather is on the reduction's stream (one
 * communicator) and waits for the computation issued before it. */
Test(zero, megatron_fsdp_prefetches_as_far_as_its_buffers_allow)
{
  const char *impl[] = {"megatron-fsdp", "megatron-fsdp-ub"};
  long want[] = {4, 2};
  for (int k = 0; k < 2; k++) {
    struct model m;
    struct plan p;
    struct graph *g = mfsdp_build(impl[k], NULL, &m, &p);
    const struct program *pr = &g->prog[0];
    long gathers = 0, first = -1;
    for (long i = 0; i < pr->n && first < 0; i++) {
      const struct task *t = &pr->tasks[i];
      if (t->kind == TK_COLL && t->op == CO_ALLGATHER && t->layer >= 0) {
        cr_assert_eq(t->stream, ST_DP);
        gathers++;
      }
      if (t->kind == TK_KERNEL && t->layer == 0 && t->phase == PH_FWD)
        first = i;
    }
    cr_assert_eq(gathers, want[k], "%s: %ld layers gathered before layer "
                 "0 runs", impl[k], gathers);
    graph_free(g);
  }
}

/* On a free network Megatron-FSDP costs nothing beyond its kernels: in
 * BF16 with TE accumulating into the bucket it has none, and the step is
 * ZeRO-3's as the ideal implementation runs it and the unsharded
 * parameters' (ZeRO-1), to 1e-12. */
static double mfsdp_time(const char *impl, bool free_comm)
{
  struct model m;
  struct plan p;
  struct graph *g = build_layers("gpt-1.7b", 4, 2, KV("global_batch", "4",
                                 "zero", "3", "shard_impl", impl,
                                 "grad_accum", "fused"), &m, &p);
  double t = replay_s(g, two_nodes_loaded(), free_comm);
  graph_free(g);
  return t;
}

Test(zero, megatron_fsdp_on_a_free_network_is_the_ideal_step)
{
  double ideal = mfsdp_time("ideal", true);
  double a = mfsdp_time("megatron-fsdp", true);
  double b = mfsdp_time("megatron-fsdp-ub", true);
  cr_assert(fabs(a - ideal) <= 1e-12 * ideal, "%.17g against %.17g", a, ideal);
  cr_assert(fabs(b - ideal) <= 1e-12 * ideal, "%.17g against %.17g", b, ideal);
  /* ... and the unsharded parameters' step (ZeRO-1: the same sharded
   * optimizer step) */
  struct model m;
  struct plan p;
  struct graph *g = build_layers("gpt-1.7b", 4, 2, KV("global_batch", "4",
                                 "zero", "1", "grad_accum", "fused"), &m, &p);
  double unsharded = replay_s(g, two_nodes_loaded(), true);
  graph_free(g);
  cr_assert(fabs(a - unsharded) <= 1e-12 * unsharded, "%.17g against "
            "%.17g", a, unsharded);
  double real = mfsdp_time("megatron-fsdp-ub", false);
  cr_assert(real > b, "exposed gathers cost time: %.9g s, free %.9g s",
            real, b);
}

/* Memory (accounting.c, mfsdp_terms) on Llama 3 8B, 8 GPUs, FP8
 * parameters: the weights' shard with linear weights at 1 byte, the
 * non-unit bucket whole; in flight: gathered units, gradient buckets, FP8
 * transposes. */
Test(zero, megatron_fsdp_memory_terms)
{
  const char *impl[] = {"megatron-fsdp", "megatron-fsdp-ub"};
  for (int k = 0; k < 2; k++) {
    struct model m;
    struct plan p;
    cr_assert_eq(model_from_preset(&m, "llama3-8b", NULL), 0);
    plan_init(&p);
    const char *kv[] = {"zero", "3", "shard_impl", impl[k], "global_batch",
                        "128", NULL};
    for (int i = 0; kv[i]; i += 2)
      cr_assert_eq(plan_set(&p, plan_key_from_name(kv[i]), kv[i + 1], "t",
                            NULL), 0);
    cr_assert_eq(model_set(&m, model_key_from_name("dtype"), "fp8", "t",
                           NULL), 0);
    cr_assert_eq(plan_set(&p, PK_FP8_PARAMS, "yes", "t", NULL), 0);
    cr_assert_eq(plan_resolve(&p, &m, 8, NULL), 0);
    struct memory mem, ideal;
    memory_per_gpu(&m, &p, 80e9, &mem);
    struct plan q = p;
    q.shard_impl = SI_IDEAL;
    memory_per_gpu(&m, &q, 80e9, &ideal);
    double P = stage_params_rank(&m, &p, 0), N = 8, L = 32;
    double lp = layer_params_rank(&m, 1, 1);
    double lin = layer_linear_params_rank(&m, &p);
    double nonunit = P - L * lp, ub = lin + 2 * (lp - lin);
    REL(mem.weights, (L * ub + 2 * nonunit) / N + 2 * nonunit);
    REL(mem.grads, ideal.grads);
    REL(mem.optimizer, ideal.optimizer);
    /* Ideal: two layers at 2 bytes, less the shard. */
    double base = ideal.transient - 2 * 2 * lp * (1 - 1 / N);
    double extra = k ? 2 * ub + 2 * lp * 2 + L * lin
                     : 4 * ub + 5 * lp * 2 + lin; /* 3 ahead, 4 queued */
    REL(mem.transient, base + extra);
  }
}

Test(zero, megatron_fsdp_refused_where_it_is_not_built)
{
  refused("llama3-8b", KV("hsdp", "4", "shard_impl", "megatron-fsdp",
          "global_batch", "64"), 32, "--shard_impl: megatron-fsdp is "
          "modelled for dense models sharded over all data-parallel ranks; "
          "its HSDP is not built");
  refused("mixtral-8x7b", KV("zero", "3", "shard_impl", "megatron-fsdp-ub",
          "global_batch", "64"), 32, "--shard_impl: megatron-fsdp-ub is "
          "modelled for dense models sharded over all data-parallel ranks; "
          "its expert sharding (MoE) is not built");
}

/* The reduction queue (GradReducePipeline.wait_for_previous_grad_reduce):
 * at Megatron-LM's defaults at most 1e9 elements stay queued, so with
 * Llama 3 8B's 218 M-element layers the compute stream waits for layer
 * 31's reduce-scatter when layer 26's is issued (five queued, 1.09e9):
 * layer 25's backward waits for it.  With double buffering the queue is
 * trimmed on the reduction stream and nothing waits. */
Test(zero, megatron_fsdp_waits_when_the_reduction_queue_is_full)
{
  const char *impl[] = {"megatron-fsdp", "megatron-fsdp-ub"};
  for (int k = 0; k < 2; k++) {
    struct model m;
    struct plan p;
    struct graph *g = build("llama3-8b", 8, KV("zero", "3", "shard_impl",
                            impl[k], "global_batch", "8"), &m, &p);
    const struct program *pr = &g->prog[0];
    long rs31 = -1, k25 = -1;
    for (long i = 0; i < pr->n && k25 < 0; i++) {
      const struct task *t = &pr->tasks[i];
      if (t->kind == TK_COLL && t->op == CO_REDUCE_SCATTER && t->layer == 31)
        rs31 = i;
      if (t->kind == TK_KERNEL && t->layer == 25 && t->phase == PH_BWD)
        k25 = i;
    }
    cr_assert(rs31 >= 0 && k25 > rs31);
    bool waits = false;
    for (uint32_t d = 0; d < pr->tasks[k25].ndep; d++)
      waits |= pr->deps[pr->tasks[k25].dep0 + d] == (uint32_t)rs31;
    cr_assert_eq(waits, k == 0, "%s: layer 25 %s for layer 31's reduction",
                 impl[k], waits ? "waits" : "does not wait");
    graph_free(g);
  }
}

/* FSDP2's bounded reduce-scatter (builder_zero.c, reduce_grads): each
 * unit's post_backward makes the compute stream wait for the previous
 * unit's reduce-scatter before copying its gradients in
 * (_fsdp_param_group.py, post_backward: reduce_scatter_state.event).
 * GPT 1.7B cut to 4 layers of 512 tokens on two one-GPU nodes, one NIC
 * each: a layer's BF16 gradients (127 MB) take longer to reduce-scatter
 * over the NIC than the next unit's backward, so the reduction stream
 * sets the pace: from the end of the last layer's copy-in (in_1; in_0 is
 * the loss unit's), each later copy-in ends one reduce-scatter and one
 * copy-in after the one before, and the last reduce-scatter ends
 *   end(in_1) + sum_{k>0} d(rs_k) + sum_{k>1} d(in_k),
 * with every duration the replay's own. */
struct ztimes {
  double *s, *e;
};

static void z_on_task(void *ctx, long rank, long task, double s, double e)
{
  struct ztimes *t = ctx;
  if (rank == 0) {
    t->s[task] = s;
    t->e[task] = e;
  }
}

Test(zero, fsdp2_copy_in_waits_for_the_previous_reduce_scatter)
{
  struct model m;
  struct plan p;
  struct graph *g = build_layers("gpt-1.7b", 4, 2, KV("fsdp", "yes",
                                 "shard_impl", "fsdp2", "micro_batch", "1",
                                 "global_batch", "2", "seq", "512"), &m, &p);
  const struct cluster *c = two_nodes_loaded();
  const struct program *pr = &g->prog[0];
  struct ztimes tm = {calloc((size_t)pr->n, sizeof(double)),
                      calloc((size_t)pr->n, sizeof(double))};
  struct engine_params ep;
  engine_params_default(&ep);
  ep.on_task = z_on_task;
  ep.ctx = &tm;
  struct engine_result res = {0};
  struct weft_err err = {0};
  cr_assert_eq(engine_run(g, c, &ep, &res, &err), 0, "%s", err.msg);
  engine_result_free(&res);
  /* The reduce-scatters in issue order (loss unit, layers 3..0,
   * embedding) and the copy-in each was issued after. */
  long rs[8], in[8];
  int n = 0;
  for (long i = 0; i < pr->n; i++) {
    const struct task *t = &pr->tasks[i];
    if (t->kind != TK_COLL || t->op != CO_REDUCE_SCATTER)
      continue;
    cr_assert_lt(n, 8);
    rs[n] = i;
    in[n] = -1;
    for (uint32_t d = 0; d < t->ndep; d++) {
      long j = pr->deps[t->dep0 + d];
      const struct task *u = &pr->tasks[j];
      if (u->kind == TK_KERNEL && u->op == KK_ELEMWISE && u->flops == 0 &&
          u->bytes == 2 * t->bytes)
        in[n] = j;
    }
    cr_assert_geq(in[n], 0, "reduce-scatter %d's copy-in", n);
    n++;
  }
  cr_assert_eq(n, 6);
  /* The loss unit holds the final norm alone (tied embedding): its
   * reduce-scatter is short; the chain starts at layer 3's copy-in. */
  double want = tm.e[in[1]];
  for (int k = 1; k < n - 1; k++) {
    want += tm.e[rs[k]] - tm.s[rs[k]];
    if (k > 1) {
      want += tm.e[in[k]] - tm.s[in[k]];
      /* the premise: the unit's backward (the compute task before its
       * copy-in) ends before the previous reduce-scatter does */
      cr_assert_eq(pr->tasks[in[k] - 1].stream, ST_COMPUTE);
      cr_assert_lt(tm.e[in[k] - 1], tm.e[rs[k - 1]], "unit %d", k);
      REL(tm.s[in[k]], tm.e[rs[k - 1]]);
    }
  }
  REL(tm.e[rs[n - 2]], want);
  /* The embedding's backward waits for its gather, which shares the NIC
   * with those reductions: its copy-in starts at the later of the two. */
  REL(tm.s[in[n - 1]], fmax(tm.e[in[n - 1] - 1], tm.e[rs[n - 2]]));
  free(tm.s);
  free(tm.e);
  graph_free(g);
}

/* HSDP under FSDP2: the event a post_backward waits for is recorded right
 * after the reduce-scatter, before the all-reduce over the replicas
 * (_fsdp_collectives.py, foreach_reduce), so a copy-in waits for the
 * previous reduce-scatter and not for its all-reduce; at the end of each
 * backward the root's callback waits for both (finalize_backward), so the
 * next micro-batch's first kernel follows the last of each. */
static bool zdep(const struct program *pr, long i, long on)
{
  const struct task *t = &pr->tasks[i];
  for (uint32_t k = 0; k < t->ndep; k++)
    if (pr->deps[t->dep0 + k] == (uint32_t)on)
      return true;
  return false;
}

Test(zero, fsdp2_hsdp_waits_for_the_reduce_scatter_not_the_all_reduce)
{
  struct model m;
  struct plan p;
  struct graph *g = build_layers("gpt-1.7b", 4, 16, KV("hsdp", "8",
                                 "shard_impl", "fsdp2", "micro_batch", "1",
                                 "global_batch", "32"), &m, &p);
  cr_assert_eq(p.microbatches, 2);
  const struct program *pr = &g->prog[0];
  long rs[8], ar[8], in[8];
  int nr = 0, na = 0;
  long next = -1;
  for (long i = 0; i < pr->n && next < 0; i++) {
    const struct task *t = &pr->tasks[i];
    if (t->mb == 1 && t->stream == ST_COMPUTE) {
      next = i;
      break;
    }
    if (t->kind == TK_COLL && t->op == CO_ALLREDUCE && t->group == GK_REPL) {
      cr_assert_lt(na, 8);
      ar[na++] = i;
    }
    if (t->kind != TK_COLL || t->op != CO_REDUCE_SCATTER)
      continue;
    cr_assert_lt(nr, 8);
    cr_assert_eq(t->group, GK_SHARD);
    rs[nr] = i;
    in[nr] = -1;
    for (uint32_t d = 0; d < t->ndep; d++) {
      long j = pr->deps[t->dep0 + d];
      if (pr->tasks[j].kind == TK_KERNEL && pr->tasks[j].op == KK_ELEMWISE)
        in[nr] = j;
    }
    cr_assert_geq(in[nr], 0);
    nr++;
  }
  cr_assert_eq(nr, 6);
  cr_assert_eq(na, 6);
  cr_assert_geq(next, 0);
  for (int k = 1; k < nr; k++) {
    cr_assert(zdep(pr, in[k], rs[k - 1]), "copy-in %d waits for the "
              "reduce-scatter before it", k);
    cr_assert(!zdep(pr, in[k], ar[k - 1]), "copy-in %d does not wait for "
              "the all-reduce", k);
  }
  cr_assert(!zdep(pr, in[0], ar[0]) && !zdep(pr, in[0], rs[0]));
  cr_assert(zdep(pr, next, rs[nr - 1]) && zdep(pr, next, ar[na - 1]));
  graph_free(g);
}
