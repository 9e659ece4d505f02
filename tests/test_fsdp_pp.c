/*
 * test_fsdp_pp.c - FSDP2 with pipeline parallelism, as torchtitan runs it
 * under PyTorch's pipelining (builder_zero.c, fsdp_pp_pass): per stage and
 * step, each unit's parameters all-gathered once (the chunk's first
 * forward) and its gradients reduce-scattered once (after the chunk's last
 * backward), the unsharded gradients accumulated in between, the memory
 * that stays gathered, and the combinations refused.
 */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>

#include "workloads/accounting.h"
#include "tests/plan_helpers.h"

#define REL(a, b) cr_assert(fabs((double)(a) - (double)(b)) <= 1e-9 * fabs((double)(b)) + 1e-9, "%.17g != %.17g", (double)(a), (double)(b))

/* Llama 3 8B cut to 8 layers on 16 GPUs: PP 2, DP 8, micro-batch 1, global
 * batch 32: 4 micro-batches; stage 0 holds the embedding and 4 layers,
 * stage 1 4 layers and the final norm and output layer. */
#define FSDP_PP(...)                                                         \
  KV("fsdp", "yes", "shard_impl", "fsdp2", "pp", "2", "micro_batch", "1",    \
     "global_batch", "32", __VA_ARGS__)

/* Kernels of program `s` on the compute stream in phase `ph`, layer `l`,
 * micro-batch `mb` of exactly `bytes` and no FLOPs (the accumulation and
 * copy-in passes); their indices in *first when not NULL. */
static long passes(const struct graph *g, long s, int ph, long l, long mb,
                   double bytes, long *first)
{
  const struct program *pr = &g->prog[s];
  long n = 0;
  for (long i = 0; i < pr->n; i++) {
    const struct task *t = &pr->tasks[i];
    if (t->kind == TK_KERNEL && t->op == KK_ELEMWISE && t->phase == ph &&
        t->layer == l && t->mb == mb && t->flops == 0 &&
        fabs(t->bytes - bytes) <= 1e-9 * bytes) {
      if (first && n == 0)
        *first = i;
      n++;
    }
  }
  return n;
}

/* Whether task `i` of program `s` depends on task `on`. */
static bool depends(const struct graph *g, long s, long i, long on)
{
  const struct program *pr = &g->prog[s];
  const struct task *t = &pr->tasks[i];
  for (uint32_t k = 0; k < t->ndep; k++)
    if (pr->deps[t->dep0 + k] == (uint32_t)on)
      return true;
  return false;
}

Test(fsdp_pp, gathers_and_reduce_scatters_once_per_step)
{
  struct model m;
  struct plan p;
  struct graph *g = build_layers("llama3-8b", 8, 16,
                                 FSDP_PP("grad_dtype", "fp32"), &m, &p);
  cr_assert_eq(p.microbatches, 4);
  for (long s = 0; s < 2; s++) {
    double P = stage_params_rank(&m, &p, s);
    long n;
    /* BF16 parameters, all gathered in micro-batch 0's forward: the
     * embedding (or output unit) and 4 layers. */
    REL(coll_sum(g, s, CO_ALLGATHER, GK_DP, PH_FWD, -2, 0, &n), 2 * P);
    cr_assert_eq(n, 5);
    REL(coll_sum(g, s, CO_ALLGATHER, GK_DP, -1, -2, -2, &n), 2 * P);
    cr_assert_eq(n, 5);
    /* FP32 gradients, reduce-scattered after the last micro-batch's
     * backward only, unit by unit. */
    REL(coll_sum(g, s, CO_REDUCE_SCATTER, GK_DP, PH_BWD, -2, 3, &n), 4 * P);
    cr_assert_eq(n, 5);
    REL(coll_sum(g, s, CO_REDUCE_SCATTER, GK_DP, -1, -2, -2, &n), 4 * P);
    cr_assert_eq(n, 5);
  }
  graph_free(g);
}

/* Per layer and micro-batch after its backward: micro-batch 0's BF16
 * gradient upcast to FP32 (2 + 4 bytes per parameter), the later ones
 * added into it (4 + 2 + 4); after the last, the copy into the
 * reduce-scatter input (4 + 4), each waiting for the reduce-scatter before
 * it. */
Test(fsdp_pp, fp32_accumulation_and_the_reduce_chain)
{
  struct model m;
  struct plan p;
  struct graph *g = build_layers("llama3-8b", 8, 16,
                                 FSDP_PP("grad_dtype", "fp32"), &m, &p);
  double L = layer_params_rank(&m, 1, 1);
  for (long l = 0; l < 8; l++) {
    long s = l / 4;
    cr_assert_eq(passes(g, s, PH_BWD, l, 0, 6 * L, NULL), 1);
    for (long mb = 1; mb < 4; mb++)
      cr_assert_eq(passes(g, s, PH_BWD, l, mb, 10 * L, NULL), 1);
  }
  /* Stage 0's chain: layer l's copy-in waits for layer l-1's
   * reduce-scatter (the embedding's before layer 0's). */
  long prev_in = -1;
  for (long l = 0; l < 4; l++) {
    long in = -1;
    cr_assert_eq(passes(g, 0, PH_BWD, l, 3, 8 * L, &in), 1);
    const struct program *pr = &g->prog[0];
    long rs = -1;
    for (long i = in + 1; i < pr->n && rs < 0; i++)
      if (pr->tasks[i].kind == TK_COLL &&
          pr->tasks[i].op == CO_REDUCE_SCATTER)
        rs = i;
    cr_assert(rs > in && depends(g, 0, rs, in));
    if (l > 0) {
      long prs = -1;
      for (long i = prev_in + 1; i < pr->n && prs < 0; i++)
        if (pr->tasks[i].kind == TK_COLL &&
            pr->tasks[i].op == CO_REDUCE_SCATTER)
          prs = i;
      cr_assert(depends(g, 0, in, prs), "layer %ld's copy-in", l);
    }
    prev_in = in;
  }
  graph_free(g);
}

/* BF16 reduce dtype: no upcast; autograd's AccumulateGrad adds each later
 * micro-batch's gradient in place (3 x 2 bytes); gradients reduce-scattered
 * in BF16. */
Test(fsdp_pp, bf16_accumulation)
{
  struct model m;
  struct plan p;
  struct graph *g = build_layers("llama3-8b", 8, 16,
                                 FSDP_PP("grad_dtype", "bf16"), &m, &p);
  double L = layer_params_rank(&m, 1, 1);
  cr_assert_eq(passes(g, 1, PH_BWD, 5, 0, 6 * L, NULL), 0);
  cr_assert_eq(passes(g, 1, PH_BWD, 5, 0, 4 * L, NULL), 0);
  for (long mb = 1; mb < 4; mb++)
    cr_assert_eq(passes(g, 1, PH_BWD, 5, mb, 6 * L, NULL), 1);
  REL(coll_sum(g, 1, CO_REDUCE_SCATTER, GK_DP, -1, -2, -2, NULL),
      2 * stage_params_rank(&m, &p, 1));
  graph_free(g);
}

/* Interleaved, two chunks of two layers per stage: each chunk gathers in
 * its own first forward and reduces after its own last backward. */
Test(fsdp_pp, interleaved_chunks_gather_and_reduce_once)
{
  struct model m;
  struct plan p;
  struct graph *g = build_layers("llama3-8b", 8, 16,
                                 FSDP_PP("schedule", "interleaved:2",
                                         "grad_dtype", "fp32"), &m, &p);
  for (long s = 0; s < 2; s++) {
    double P = stage_params_rank(&m, &p, s);
    long n;
    REL(coll_sum(g, s, CO_ALLGATHER, GK_DP, PH_FWD, -2, 0, &n), 2 * P);
    cr_assert_eq(n, 5);
    REL(coll_sum(g, s, CO_ALLGATHER, GK_DP, -1, -2, -2, NULL), 2 * P);
    REL(coll_sum(g, s, CO_REDUCE_SCATTER, GK_DP, -1, -2, 3, &n), 4 * P);
    cr_assert_eq(n, 5);
    REL(coll_sum(g, s, CO_REDUCE_SCATTER, GK_DP, -1, -2, -2, NULL), 4 * P);
  }
  graph_free(g);
}

/* GPipe, and twice the micro-batches under 1F1B: the same bytes per step,
 * where FSDP without PP gathers twice and reduce-scatters once per
 * micro-batch (test_zero.c, fsdp_gathers_per_micro_batch). */
Test(fsdp_pp, bytes_do_not_grow_with_micro_batches)
{
  const char *kv[][2] = {{"gpipe", "32"}, {"1f1b", "64"}};
  for (int k = 0; k < 2; k++) {
    struct model m;
    struct plan p;
    struct graph *g = build_layers("llama3-8b", 8, 16,
                                   KV("fsdp", "yes", "shard_impl", "fsdp2",
                                      "pp", "2", "micro_batch", "1",
                                      "schedule", kv[k][0], "global_batch",
                                      kv[k][1], "grad_dtype", "fp32"),
                                   &m, &p);
    cr_assert_eq(p.microbatches, k ? 8 : 4);
    for (long s = 0; s < 2; s++) {
      double P = stage_params_rank(&m, &p, s);
      long n;
      REL(coll_sum(g, s, CO_ALLGATHER, GK_DP, -1, -2, 0, &n), 2 * P);
      cr_assert_eq(n, 5);
      REL(coll_sum(g, s, CO_ALLGATHER, GK_DP, -1, -2, -2, NULL), 2 * P);
      REL(coll_sum(g, s, CO_REDUCE_SCATTER, GK_DP, -1, -2,
                   p.microbatches - 1, &n), 4 * P);
      cr_assert_eq(n, 5);
      REL(coll_sum(g, s, CO_REDUCE_SCATTER, GK_DP, -1, -2, -2, NULL), 4 * P);
    }
    graph_free(g);
  }
}

/* HSDP (shard groups of 4 of DP 8): gathers and reduce-scatters in the
 * group, each reduced shard all-reduced across the 2 replicas, once. */
Test(fsdp_pp, hsdp_reduces_across_replicas_once)
{
  struct model m;
  struct plan p;
  struct graph *g = build_layers("llama3-8b", 8, 16,
                                 KV("hsdp", "4", "shard_impl", "fsdp2", "pp",
                                    "2", "micro_batch", "1", "global_batch",
                                    "32", "grad_dtype", "fp32"), &m, &p);
  double P = stage_params_rank(&m, &p, 0);
  REL(coll_sum(g, 0, CO_ALLGATHER, GK_SHARD, -1, -2, -2, NULL), 2 * P);
  REL(coll_sum(g, 0, CO_REDUCE_SCATTER, GK_SHARD, -1, -2, -2, NULL), 4 * P);
  long n;
  REL(coll_sum(g, 0, CO_ALLREDUCE, GK_REPL, -1, -2, 3, &n), 4 * P / 4);
  cr_assert_eq(n, 5);
  graph_free(g);
}

/* Memory: the stage's BF16 parameters stay gathered and its gradients
 * accumulate unsharded for the step, beside the shards. */
Test(fsdp_pp, memory_keeps_the_stage_gathered)
{
  struct model m;
  struct plan p;
  struct graph *g = build_layers("llama3-8b", 8, 16,
                                 FSDP_PP("grad_dtype", "fp32"), &m, &p);
  graph_free(g);
  struct memory mem;
  memory_per_gpu(&m, &p, 80e9, &mem);
  double P = stage_params_rank(&m, &p, mem.stage), N = 8;
  /* The ZeRO paper's accounting: the 16-bit copy whole, FP32 gradients
   * sharded plus unsharded. */
  REL(mem.weights, 2 * P);
  REL(mem.grads, 4 * P / N + 4 * P);
  REL(mem.optimizer, 12 * P / N);
  /* torchtitan's: FP32 shards of parameters, gradients and moments, plus
   * the unsharded BF16 parameters and FP32 gradients. */
  g = build_layers("llama3-8b", 8, 16,
                   FSDP_PP("grad_dtype", "fp32", "mem_framework",
                           "torchtitan"), &m, &p);
  graph_free(g);
  memory_per_gpu(&m, &p, 80e9, &mem);
  P = stage_params_rank(&m, &p, mem.stage);
  REL(mem.weights, 4 * P / N + 2 * P);
  REL(mem.grads, 4 * P / N + 4 * P);
  REL(mem.optimizer, 8 * P / N);
}

Test(fsdp_pp, refused_combinations)
{
  refused("llama3-8b", KV("fsdp", "yes", "pp", "4", "global_batch", "64"), 32,
          "--fsdp: ZeRO-3 with pipeline parallelism (PP 4) is modelled as "
          "torchtitan runs it, on FSDP2 (PyTorch's pipelining drives FSDP2 "
          "modules only; DeepSpeed refuses ZeRO-3 with PP); this plan's "
          "shard_impl is ideal: add --shard-impl fsdp2");
  const char *impl[] = {"fsdp1", "deepspeed", "megatron-fsdp"};
  for (int k = 0; k < 3; k++) {
    char msg[400];
    snprintf(msg, sizeof msg, "--shard_impl: ZeRO-3 with pipeline "
             "parallelism (PP 2) is modelled as torchtitan runs it, on FSDP2 "
             "(PyTorch's pipelining drives FSDP2 modules only; DeepSpeed "
             "refuses ZeRO-3 with PP); this plan's shard_impl is %s: add "
             "--shard-impl fsdp2", impl[k]);
    refused("llama3-8b", KV("zero", "3", "shard_impl", impl[k], "pp", "2",
            "global_batch", "64"), 32, msg);
  }
  refused("llama3-8b", KV("zero", "2", "pp", "2", "global_batch", "64"), 32,
          "--zero: ZeRO stage 2 cannot be combined with pipeline parallelism "
          "(PP 2) (DeepSpeed refuses it); use stage 1, or FSDP2 (--fsdp yes "
          "--shard-impl fsdp2, as torchtitan runs it with PP)");
  refused("gpt-1.7b", KV("fsdp", "yes", "shard_impl", "fsdp2", "pp", "2",
          "global_batch", "64"), 32, "--fsdp: FSDP with pipeline parallelism "
          "(PP 2) and an embedding tied to the output layer across stages is "
          "not modelled");
}
