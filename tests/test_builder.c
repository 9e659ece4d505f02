/*
 * test_builder.c - the task graph against closed forms: FLOPs equal
 * Megatron-LM's Eq. (3) for every configuration of its Table 1; tensor-
 * parallel bytes per layer, pipeline bytes per micro-batch and data-parallel
 * gradient bytes equal the formulas of shared/validation/README.md; sends
 * and receives pair up across stages.
 */
#include <criterion/criterion.h>
#include <math.h>
#include <string.h>

#include "workloads/accounting.h"
#include "tests/plan_helpers.h"

#define ALL ((1 << PH_FWD) | (1 << PH_BWD) | (1 << PH_RECOMP) | (1 << PH_OPT))
#define MODEL_PHASES ((1 << PH_FWD) | (1 << PH_BWD))

/* MEG21-T1-01..10: model, GPUs, TP, PP, global batch; interleaving chunks
 * as Megatron-LM would choose them (2, or 3 where 2 does not divide the
 * layers per stage). */
static const struct {
  const char *model;
  long gpus;
  const char *tp, *pp, *gb, *sched;
} t1[] = {
    {"gpt-1.7b", 32, "1", "1", "512", "1f1b"},
    {"gpt-3.6b", 64, "2", "1", "512", "1f1b"},
    {"gpt-7.5b", 128, "4", "1", "512", "1f1b"},
    {"gpt-18.4b", 256, "8", "1", "1024", "1f1b"},
    {"gpt-39.1b", 512, "8", "2", "1536", "interleaved:2"},
    {"gpt-76.1b", 1024, "8", "4", "1792", "interleaved:3"},
    {"gpt-145.6b", 1536, "8", "8", "2304", "interleaved:2"},
    {"gpt-310.1b", 1920, "8", "16", "2160", "interleaved:2"},
    {"gpt-529.6b", 2520, "8", "35", "2520", "interleaved:3"},
    {"gpt-1008b", 3072, "8", "64", "3072", "interleaved:2"},
};

Test(builder, megatron_eq3_flops_for_table1, .timeout = 120)
{
  for (size_t j = 0; j < 2 * sizeof t1 / sizeof *t1; j++) {
    /* Each configuration with the fused attention kernel and with the
     * unfused batched GEMMs of Megatron-LM 2021. */
    size_t i = j / 2;
    struct model m;
    struct plan p;
    struct graph *g = build(t1[i].model, t1[i].gpus,
                            KV("tp", t1[i].tp, "pp", t1[i].pp, "global_batch",
                               t1[i].gb, "schedule", t1[i].sched, "recompute",
                               "full", "attention", j % 2 ? "unfused" : "flash"),
                            &m, &p);
    double B = (double)p.global_batch, s = (double)m.seq, l = (double)m.layers;
    double h = (double)m.hidden, V = (double)m.vocab;
    double eq3 = 96 * B * s * l * h * h * (1 + s / (6 * h) + V / (16 * l * h));
    double got = graph_total_flops(g, ALL);
    cr_assert(fabs(got - eq3) <= 1e-9 * eq3, "%s: %.17g vs Eq. 3 %.17g",
              t1[i].model, got, eq3);
    double mf = 72 * B * s * l * h * h * (1 + s / (6 * h) + V / (12 * l * h));
    double gm = graph_total_flops(g, MODEL_PHASES);
    cr_assert(fabs(gm - mf) <= 1e-9 * mf, "%s model FLOPs", t1[i].model);
    cr_assert(fabs(gm - model_flops_per_iter(&m, p.global_batch)) <= 1e-9 * mf);
    graph_free(g);
  }
}

Test(builder, tensor_parallel_bytes_per_layer)
{
  struct model m;
  struct plan p;
  struct graph *g = build("gpt3-175b", 64, KV("tp", "8", "pp", "8",
                          "global_batch", "64", "recompute", "full"), &m, &p);
  double bsh2 = 1.0 * 2048 * 12288 * 2; /* b s h elements, 2 bytes */
  long stage = 2, layer = 2 * 12 + 5;
  cr_assert_eq(coll_sum(g, stage, CO_ALLREDUCE, GK_TP, PH_FWD, layer, 3, NULL), 2 * bsh2);
  cr_assert_eq(coll_sum(g, stage, CO_ALLREDUCE, GK_TP, PH_BWD, layer, 3, NULL), 2 * bsh2);
  cr_assert_eq(coll_sum(g, stage, CO_ALLREDUCE, GK_TP, PH_RECOMP, layer, 3, NULL),
               2 * bsh2);
  graph_free(g);
  /* Sequence parallelism: each all-reduce becomes a reduce-scatter plus an
   * all-gather of the same total volume; the backward also gathers QKV's
   * and FC1's inputs again for their weight gradients (builder_layer.c,
   * sp_regather_bytes). */
  g = build("gpt3-175b", 64, KV("tp", "8", "pp", "8", "global_batch", "64",
                                "sp", "yes"), &m, &p);
  cr_assert_eq(coll_sum(g, stage, CO_ALLREDUCE, GK_TP, PH_FWD, layer, 3, NULL), 0);
  cr_assert_eq(coll_sum(g, stage, CO_REDUCE_SCATTER, GK_TP, PH_FWD, layer, 3, NULL),
               2 * bsh2);
  cr_assert_eq(coll_sum(g, stage, CO_ALLGATHER, GK_TP, PH_FWD, layer, 3, NULL), 2 * bsh2);
  cr_assert_eq(coll_sum(g, stage, CO_REDUCE_SCATTER, GK_TP, PH_BWD, layer, 3, NULL),
               2 * bsh2);
  cr_assert_eq(coll_sum(g, stage, CO_ALLGATHER, GK_TP, PH_BWD, layer, 3, NULL), 4 * bsh2);
  graph_free(g);
}

Test(builder, pipeline_bytes_per_microbatch_and_pairing)
{
  struct model m;
  struct plan p;
  struct graph *g = build("gpt3-175b", 256, KV("tp", "8", "pp", "4",
                          "global_batch", "64", "schedule", "interleaved:2"),
                          &m, &p);
  double bsh2 = 2048.0 * 12288 * 2;
  for (long s = 0; s < 4; s++) {
    const struct program *pr = &g->prog[s];
    long sends = 0, recvs = 0;
    for (long i = 0; i < pr->n; i++) {
      const struct task *t = &pr->tasks[i];
      if (t->kind == TK_SEND || t->kind == TK_RECV) {
        /* Scatter/gather: each TP rank carries 1/t of b s h. */
        cr_assert_eq(t->bytes, bsh2 / 8);
        if (t->kind == TK_SEND)
          sends++;
        else
          recvs++;
      }
    }
    /* m = 8 micro-batches x 2 chunks, forward and backward, minus the ends
     * of the virtual pipeline (stage 0 chunk 0, stage 3 chunk 1). */
    long ends = (s == 0 || s == 3) ? 8 : 0;
    cr_assert_eq(sends, 2 * 16 - ends, "stage %ld sends", s);
    cr_assert_eq(recvs, 2 * 16 - ends, "stage %ld receives", s);
  }
  graph_free(g);
  g = build("gpt-1.7b", 4, KV("pp", "4", "global_batch", "8"), &m, &p);
  for (long i = 0; i < g->prog[1].n; i++)
    if (g->prog[1].tasks[i].kind == TK_SEND)
      cr_assert_eq(g->prog[1].tasks[i].bytes, 2048.0 * 2304 * 2);
  graph_free(g);
}

Test(builder, data_parallel_gradient_bytes)
{
  const char *models[] = {"gpt3-175b", "llama3-70b"};
  for (int k = 0; k < 2; k++) {
    struct model m;
    struct plan p;
    struct graph *g = build(models[k], 512, KV("tp", "8", "pp", "4",
                            "global_batch", "64", "bucket", "40MB"), &m, &p);
    for (long s = 0; s < 4; s++) {
      double dp = coll_sum(g, s, CO_ALLREDUCE, GK_DP, PH_BWD, -1, -1, NULL);
      double want = 2 * stage_params_rank(&m, &p, s);
      cr_assert(fabs(dp - want) <= 1e-9 * want, "%s stage %ld: %.17g vs %.17g",
                models[k], s, dp, want);
      /* Buckets overlap the backward pass: the first one is issued before
       * the stage's last backward kernel. */
      long first_dp = -1, last_bwd = -1;
      for (long i = 0; i < g->prog[s].n; i++) {
        const struct task *t = &g->prog[s].tasks[i];
        if (t->kind == TK_COLL && t->group == GK_DP && first_dp < 0)
          first_dp = i;
        if (t->kind == TK_KERNEL && t->phase == PH_BWD)
          last_bwd = i;
      }
      cr_assert(first_dp >= 0 && first_dp < last_bwd);
    }
    graph_free(g);
  }
}

Test(builder, no_overlap_puts_buckets_at_the_end)
{
  struct model m;
  struct plan p;
  struct graph *g = build("gpt-1.7b", 32, KV("global_batch", "64",
                          "overlap_grad", "no"), &m, &p);
  const struct program *pr = &g->prog[0];
  bool seen_dp = false;
  for (long i = 0; i < pr->n; i++) {
    const struct task *t = &pr->tasks[i];
    if (t->kind == TK_COLL && t->group == GK_DP)
      seen_dp = true;
    else if (seen_dp)
      cr_assert(t->kind == TK_KERNEL && t->op == KK_OPTIM,
                "only the optimizer follows the buckets");
  }
  cr_assert(seen_dp);
  graph_free(g);
}

Test(builder, dependencies_point_backwards_and_optimizer_waits)
{
  struct model m;
  struct plan p;
  struct graph *g = build("gpt3-175b", 1024, KV("tp", "8", "pp", "8",
                          "global_batch", "128", "schedule", "interleaved:2"),
                          &m, &p);
  for (long s = 0; s < g->stages; s++) {
    const struct program *pr = &g->prog[s];
    for (long i = 0; i < pr->n; i++)
      for (uint32_t d = 0; d < pr->tasks[i].ndep; d++)
        cr_assert_lt(pr->deps[pr->tasks[i].dep0 + d], (uint32_t)i);
    const struct task *last = &pr->tasks[pr->n - 1];
    cr_assert_eq(last->op, KK_OPTIM);
    long n_dp = 0;
    for (long i = 0; i < pr->n; i++)
      n_dp += pr->tasks[i].kind == TK_COLL && pr->tasks[i].stream == ST_DP;
    cr_assert_eq((long)last->ndep, n_dp, "stage %ld", s);
  }
  /* Tied embeddings: only the first and last stage exchange them. */
  cr_assert_gt(coll_sum(g, 0, CO_ALLREDUCE, GK_EMB, PH_OPT, -1, -1, NULL), 0);
  cr_assert_gt(coll_sum(g, 7, CO_ALLREDUCE, GK_EMB, PH_OPT, -1, -1, NULL), 0);
  cr_assert_eq(coll_sum(g, 3, CO_ALLREDUCE, GK_EMB, PH_OPT, -1, -1, NULL), 0);
  graph_free(g);
}

Test(builder, compact_for_16k_gpus)
{
  struct model m;
  struct plan p;
  struct graph *g = build("llama3-405b", 16384, KV("tp", "8", "pp", "16",
                          "global_batch", "2048"), &m, &p);
  cr_assert_eq(g->stages, 16);
  cr_assert_lt(graph_total_tasks(g), 200000);
  graph_free(g);
}

/* The size estimate made before building, against the graph built: within
 * 10 % in tasks and bytes (it stands guard against jobs too large for the
 * machine; the per-stage extras are bounded, not counted). */
Test(builder, estimate_before_building, .timeout = 120)
{
  const struct {
    const char *model;
    long gpus;
    const char *const *kv;
  } cases[] = {
      {"gpt-1.7b", 8, KV("tp", "2", "pp", "2", "global_batch", "16")},
      {"gpt-7.5b", 64, KV("tp", "4", "pp", "4", "global_batch", "64",
                          "schedule", "interleaved:3", "recompute", "full")},
      {"llama3-8b", 32, KV("tp", "2", "cp", "2", "global_batch", "32",
                           "zero", "3")},
      {"mixtral-8x7b", 64, KV("tp", "2", "pp", "4", "ep", "8",
                              "global_batch", "64")},
      {"gpt-1.7b", 16, KV("global_batch", "64", "overlap_grad", "no",
                          "zero", "1")},
      {"llama3-70b", 256, KV("hsdp", "8", "global_batch", "256")},
  };
  for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
    struct model m;
    struct plan p;
    struct graph *g = build(cases[i].model, cases[i].gpus, cases[i].kv, &m, &p);
    struct graph_estimate e;
    build_estimate(&m, &p, &e);
    double tasks = 0, deps = 0;
    for (long s = 0; s < g->stages; s++) {
      tasks += (double)g->prog[s].n;
      deps += (double)g->prog[s].ndeps;
    }
    double bytes = tasks * BUILD_TASK_BYTES + deps * BUILD_DEP_BYTES;
    cr_assert(fabs(e.tasks - tasks) <= 0.1 * tasks,
              "case %zu: estimate %.0f tasks, built %.0f", i, e.tasks, tasks);
    cr_assert(fabs(e.bytes - bytes) <= 0.1 * bytes,
              "case %zu: estimate %.0f bytes, built %.0f", i, e.bytes, bytes);
    graph_free(g);
  }
}

/* FP8 linear layers (delayed scaling) add Transformer Engine's casts and
 * change nothing else but the LayerNormLinear norms, which write FP8: the
 * BF16 graph's tasks, bytes included (activations and communication stay
 * BF16), the two norms of a layer's forward at 3 bytes per element instead
 * of 4, plus per layer and micro-batch two norm transposes and two input
 * casts (projection, FC2) forward, four gradient casts backward, a weight
 * cast on the first micro-batch, and per micro-batch the amax reduction at
 * the end of the forward and of the backward (two kernels and an
 * all-reduce each; builder_layer.c, te_amax_update). */
Test(builder, fp8_adds_casts_only)
{
  struct model m;
  struct plan p;
  const char *const *kv = KV("tp", "2", "global_batch", "8");
  struct graph *gb = build("llama3-8b", 8, kv, &m, &p);
  struct weft_err err = {0};
  cr_assert_eq(model_set(&m, MK_DTYPE, "fp8", "--dtype", &err), 0, "%s",
               err.msg);
  struct graph *g8 = build_graph(&m, &p, &err);
  cr_assert(g8, "%s", err.msg);
  const struct program *a = &gb->prog[0], *b = &g8->prog[0];
  long j = 0, extra = 0, norms = 0, colls = 0, tp_colls = 0;
  for (long i = 0; i < b->n; i++) {
    const struct task *x = &b->tasks[i];
    const struct task *y = j < a->n ? &a->tasks[j] : NULL;
    if (y && x->kind == y->kind && x->op == y->op && x->flops == y->flops) {
      if (x->bytes == y->bytes) {
        j++;
        continue;
      }
      if (x->kind == TK_KERNEL && x->op == KK_NORM && y->layer >= 0 &&
          x->phase == PH_FWD && x->bytes == y->bytes / 4 * 3) {
        j++;
        norms++;
        continue;
      }
    }
    if (x->kind == TK_COLL) {
      /* the amax all-reduce, over TP and then DP x CP (te_amax_update) */
      cr_assert(x->op == CO_ALLREDUCE &&
                    (x->group == GK_DPCP || x->group == GK_TP) &&
                    x->stream == ST_COMPUTE,
                "task %ld of the FP8 graph is not the amax all-reduce", i);
      colls += x->group == GK_DPCP;
      tp_colls += x->group == GK_TP;
      continue;
    }
    cr_assert(x->kind == TK_KERNEL && x->op == KK_ELEMWISE,
              "task %ld of the FP8 graph is not a cast", i);
    extra++;
  }
  cr_assert_eq(j, a->n, "every BF16 task is in the FP8 graph");
  long L = m.layers, mb = p.microbatches;
  cr_assert_eq(norms, 2 * L * mb, "%ld FP8 norms", norms);
  cr_assert_eq(colls, 2 * mb, "%ld amax all-reduces", colls);
  cr_assert_eq(tp_colls, 2 * mb, "%ld amax all-reduces over TP", tp_colls);
  cr_assert_eq(extra, L * mb * (4 + 4) + L + 4 * mb, "%ld casts", extra);
  graph_free(gb);
  graph_free(g8);
}

/* The MXFP8 recipe against BF16: per layer and micro-batch the
 * projection's input cast forward and four gradient casts backward, and
 * the weights on the first micro-batch, every cast writing both
 * orientations with a scale per 32 elements (read 2, write 2 x 33/32
 * bytes per element); no amax reduction, the norms unchanged; the weight
 * cache grows by the scales. */
Test(builder, mxfp8_casts)
{
  struct model m;
  struct plan p;
  const char *const *kv = KV("tp", "2", "global_batch", "8");
  struct graph *gb = build("llama3-8b", 8, kv, &m, &p);
  struct weft_err err = {0};
  cr_assert_eq(model_set(&m, MK_DTYPE, "fp8", "--dtype", &err), 0, "%s",
               err.msg);
  struct graph *gd = build_graph(&m, &p, &err);
  cr_assert(gd, "%s", err.msg);
  struct plan q = p;
  q.fp8_recipe = FP8_MXFP8;
  struct graph *gx = build_graph(&m, &q, &err);
  cr_assert(gx, "%s", err.msg);
  const struct program *a = &gb->prog[0], *b = &gx->prog[0];
  long L = m.layers, mb = p.microbatches, j = 0, casts = 0;
  double h = (double)m.hidden, T = (double)m.seq * (double)p.micro_batch;
  double both = 2 + 2 * (1 + 1.0 / 32);
  for (long i = 0; i < b->n; i++) {
    const struct task *x = &b->tasks[i];
    const struct task *y = j < a->n ? &a->tasks[j] : NULL;
    if (y && x->kind == y->kind && x->op == y->op && x->flops == y->flops &&
        x->bytes == y->bytes) {
      j++;
      continue;
    }
    cr_assert(x->kind == TK_KERNEL && x->op == KK_ELEMWISE,
              "task %ld of the MXFP8 graph is not a cast", i);
    if (x->phase == PH_FWD && x->bytes == both * T * h / 2)
      casts++; /* the projection's input, T x h / TP elements */
  }
  cr_assert_eq(j, a->n, "every BF16 task is in the MXFP8 graph");
  cr_assert_eq(casts, L * mb, "%ld projection input casts", casts);
  cr_assert_eq(b->n - a->n, L * mb * (1 + 4) + L);
  struct memory md, mx;
  memory_per_gpu(&m, &p, 80e9, &md);
  memory_per_gpu(&m, &q, 80e9, &mx);
  double params = md.weights / 4; /* 2 BF16 + 2 FP8 bytes each */
  cr_assert(fabs(mx.weights - md.weights - params * 2 / 32) <
            1e-9 * md.weights, "%g %g", md.weights, mx.weights);
  graph_free(gb);
  graph_free(gd);
  graph_free(gx);
}

/* Uneven interleaved pipelines (Llama 3 405B: 126 layers on PP 16 with
 * 2 chunks): every layer lands on exactly one virtual stage, the graph's
 * model FLOPs are the model's, and the stages' parameters sum to the
 * model's (TP 1): the uneven layout loses and duplicates nothing. */
Test(builder, uneven_interleaved_layouts, .timeout = 120)
{
  const char *const *kvs[] = {
      KV("pp", "16", "schedule", "interleaved:2", "global_batch", "32",
         "account_embedding_loss", "yes"),
      KV("pp", "16", "schedule", "interleaved:2", "global_batch", "32",
         "first_stage_layers", "6", "last_stage_layers", "8"),
  };
  for (size_t i = 0; i < sizeof kvs / sizeof *kvs; i++) {
    struct model m;
    struct plan p;
    struct graph *g = build("llama3-405b", 16, kvs[i], &m, &p);
    long next = 0;
    for (long v = 0; v < p.pp * p.vchunks; v++) {
      long first, count;
      plan_chunk_layers(&p, &m, v % p.pp, v / p.pp, &first, &count);
      cr_assert_eq(first, next, "case %zu: virtual stage %ld", i, v);
      cr_assert_geq(count, 1);
      next += count;
    }
    cr_assert_eq(next, m.layers);
    long f0, c0, fl, cl;
    plan_chunk_layers(&p, &m, 0, 0, &f0, &c0);
    plan_chunk_layers(&p, &m, p.pp - 1, p.vchunks - 1, &fl, &cl);
    if (i == 0) /* 128 units over 32 virtual stages, the ends one short */
      cr_assert(c0 == 3 && cl == 3, "%ld %ld", c0, cl);
    else        /* stage 0: 6 layers in 2 chunks; the last: 8 */
      cr_assert(c0 == 3 && cl == 4, "%ld %ld", c0, cl);
    double gm = graph_total_flops(g, MODEL_PHASES);
    double mf = model_flops_per_iter(&m, p.global_batch);
    cr_assert(fabs(gm - mf) <= 1e-9 * mf, "case %zu: %.17g vs %.17g", i, gm,
              mf);
    double params = 0;
    for (long s = 0; s < p.pp; s++)
      params += stage_params_rank(&m, &p, s);
    cr_assert(fabs(params - model_params(&m)) <= 1e-9 * model_params(&m),
              "case %zu: %.17g vs %.17g", i, params, model_params(&m));
    struct memory mem;
    memory_per_gpu(&m, &p, 80e9, &mem);
    cr_assert_gt(mem.total, 0);
    graph_free(g);
  }
}

/* The loss's memory-bound kernels per micro-batch on the last stage, by
 * --cross-entropy (plan.h): Megatron-LM's FP32 sequence moves 38 + 14 bytes
 * per 16-bit logit (T x V / t of them), the 16-bit one 16 + 4, the fused
 * kernel 4 + 4 (its measured convention); and the optimizer step moves
 * 28 + 4 + 6 bytes per parameter, + 6 with 16-bit gradients, + 8 with FP16
 * loss scaling (builder.c, optim_bytes). */
static double loss_stage_bytes(const char *xent, const char *dtype,
                               const char *grad, double *optim,
                               double *params, double *logits)
{
  struct model m;
  struct plan p;
  struct weft_err err = {0};
  const char *const *kv = KV("tp", "2", "global_batch", "2",
                             "cross_entropy", xent, "grad_dtype", grad,
                             "grad_accum", "fused");
  cr_assert_eq(model_from_preset(&m, "gpt-1.7b", &err), 0, "%s", err.msg);
  cr_assert_eq(model_set(&m, MK_DTYPE, dtype, "--dtype", &err), 0, "%s",
               err.msg);
  m.layers = 2;
  plan_init(&p);
  for (int i = 0; kv[i]; i += 2)
    cr_assert_eq(plan_set(&p, plan_key_from_name(kv[i]), kv[i + 1], kv[i],
                          &err), 0, "%s", err.msg);
  cr_assert_eq(plan_resolve(&p, &m, 2, &err), 0, "%s", err.msg);
  struct graph *g = build_graph(&m, &p, &err);
  cr_assert(g, "%s", err.msg);
  const struct program *pr = &g->prog[0];
  double loss = 0;
  *optim = 0;
  for (long i = 0; i < pr->n; i++) {
    const struct task *t = &pr->tasks[i];
    if (t->kind != TK_KERNEL)
      continue;
    if (t->layer == -1 && (t->op == KK_LOSS ||
                           (t->op == KK_ELEMWISE && t->bytes > 1e8)))
      loss += t->bytes;
    if (t->op == KK_OPTIM)
      *optim += t->bytes;
  }
  *params = stage_params_rank(&m, &p, 0);
  *logits = 2.0 * 2048 * (double)m.vocab / 2; /* micro-batches x T x V/t */
  graph_free(g);
  return loss;
}

Test(builder, loss_and_optimizer_bytes)
{
  double opt, n, lg;
  double b = loss_stage_bytes("fp32", "fp16", "fp16", &opt, &n, &lg);
  cr_assert_float_eq(b, (38 + 14) * lg, 1e-6 * b);
  cr_assert_float_eq(opt, (28 + 4 + 6 + 6 + 8) * n, 1e-6 * opt);
  b = loss_stage_bytes("16bit", "bf16", "bf16", &opt, &n, &lg);
  cr_assert_float_eq(b, (16 + 4) * lg, 1e-6 * b);
  cr_assert_float_eq(opt, (28 + 4 + 6 + 6) * n, 1e-6 * opt);
  b = loss_stage_bytes("fused", "bf16", "fp32", &opt, &n, &lg);
  cr_assert_float_eq(b, (4 + 4) * lg, 1e-6 * b);
  cr_assert_float_eq(opt, (28 + 4 + 6) * n, 1e-6 * opt);
}

/* The activation's element-wise kernels move what a fused kernel must:
 * SwiGLU forward reads gate and up and writes the product (3 tensors of
 * T x ffn), backward reads gate, up and dy and writes dgate and dup (5);
 * GELU (GPT) 2 and 3. */
static long activation_kernels(const struct graph *g, int phase, double bytes)
{
  long n = 0;
  const struct program *pr = &g->prog[0];
  for (long i = 0; i < pr->n; i++) {
    const struct task *x = &pr->tasks[i];
    n += x->kind == TK_KERNEL && x->op == KK_ELEMWISE && x->phase == phase &&
         x->layer == 0 && x->mb == 0 && x->bytes == bytes;
  }
  return n;
}

Test(builder, activation_bytes)
{
  struct model m;
  struct plan p;
  struct graph *g = build("llama3-8b", 1, KV("global_batch", "2"), &m, &p);
  double T = (double)m.seq * (double)p.micro_batch, f = (double)m.ffn;
  cr_assert_eq(activation_kernels(g, PH_FWD, 2 * 3 * T * f), 1);
  cr_assert_eq(activation_kernels(g, PH_BWD, 2 * 5 * T * f), 1);
  cr_assert_eq(activation_kernels(g, PH_BWD, 2 * 4 * T * f), 0);
  graph_free(g);
  g = build("gpt-1.7b", 1, KV("global_batch", "2"), &m, &p);
  T = (double)m.seq * (double)p.micro_batch;
  f = (double)m.ffn;
  cr_assert_eq(activation_kernels(g, PH_FWD, 2 * 2 * T * f), 1);
  cr_assert_eq(activation_kernels(g, PH_BWD, 2 * 3 * T * f), 1);
  graph_free(g);
}

/* Gradient accumulation over 4 micro-batches of GPT 1.7B (2 layers, TP 2,
 * one stage, FP32 gradients): autograd adds each later micro-batch's
 * gradients in place (3 x 2 bytes per parameter, 3 times per unit); buffer
 * adds every one into the FP32 buffer (4 + 2 + 4, 4 times); fused has no
 * pass.  Counted: the memory-bound backward kernels of exactly those
 * sizes. */
Test(builder, gradient_accumulation_passes)
{
  const char *ga[] = {"autograd", "buffer", "fused"};
  const double per[] = {3 * 2, 4 + 2 + 4, 0};
  const long times[] = {3, 4, 0};
  for (int k = 0; k < 3; k++) {
    struct model m;
    struct plan p;
    struct graph *g = build_layers("gpt-1.7b", 2, 2, KV("tp", "2",
                                   "global_batch", "4", "grad_accum", ga[k],
                                   "grad_dtype", "fp32"), &m, &p);
    double emb, layer, head;
    build_unit_params(&m, &p, &emb, &layer, &head);
    double want[4] = {layer, layer, emb, head}, got[4] = {0};
    long n[4] = {0};
    const struct program *pr = &g->prog[0];
    for (long i = 0; i < pr->n; i++) {
      const struct task *t = &pr->tasks[i];
      if (t->kind != TK_KERNEL || t->op != KK_ELEMWISE ||
          t->phase != PH_BWD)
        continue;
      for (int u = 0; u < 4; u++) {
        bool at = u < 2 ? t->layer == u : t->layer == -1;
        if (at && fabs(t->bytes - per[k] * want[u]) <= 1e-9 * t->bytes) {
          got[u] += t->bytes;
          n[u]++;
          break;
        }
      }
    }
    for (int u = 0; u < 4; u++) {
      cr_assert_eq(n[u], times[k], "%s: unit %d: %ld passes", ga[k], u, n[u]);
      cr_assert_float_eq(got[u], times[k] * per[k] * want[u],
                         1e-9 * (got[u] + 1));
    }
    graph_free(g);
  }
}

/* Memory-bound bytes of layer 0's passes in `phase`: (kernels, bytes). */
static void membound(const struct graph *g, int phase, long *n, double *bytes)
{
  *n = 0;
  *bytes = 0;
  const struct program *pr = &g->prog[0];
  for (long i = 0; i < pr->n; i++) {
    const struct task *t = &pr->tasks[i];
    if (t->kind == TK_KERNEL && t->layer == 0 && t->phase == phase &&
        t->mb == 0 && (t->op == KK_NORM || t->op == KK_ELEMWISE)) {
      (*n)++;
      *bytes += t->bytes;
    }
  }
}

/* A Llama layer's memory-bound work, fused and eager (builder_layer.c's
 * byte counts): fused, per token, two norms 2 x 2e h, RoPE 2e (h + kv),
 * two residuals 2 x 3e h, SwiGLU 3e f; eager, the RMSNorms' ATen ops
 * (24 + 6e) h plus 2 x 8 per row, RoPE (2e + 16)(h + kv), SwiGLU 5e f.  The
 * backward: fused 2 x 3e h, 2e (h + kv), 2 x 3e h, 5e f; eager
 * (44 + 6e) h per norm, RoPE (2e + 16)(h + kv), SwiGLU 9e f. */
Test(builder, llama_layer_fused_and_eager_bytes)
{
  struct model m;
  struct plan p;
  for (int eager = 0; eager < 2; eager++) {
    struct graph *g = build_layers(
        "llama3-8b", 2, 8, KV("global_batch", "8", "fusion",
                              eager ? "eager" : "fused"), &m, &p);
    double T = (double)m.seq, h = (double)m.hidden, f = (double)m.ffn;
    double kv = (double)model_kv_dim(&m), e = 2;
    long n;
    double bytes;
    membound(g, PH_FWD, &n, &bytes);
    double want = eager ? T * (2 * ((24 + 6 * e) * h + 16) +
                               (2 * e + 16) * (h + kv) + 2 * 3 * e * h +
                               5 * e * f)
                        : T * (2 * 2 * e * h + 2 * e * (h + kv) +
                               2 * 3 * e * h + 3 * e * f);
    cr_assert(fabs(bytes - want) <= 1e-9 * want, "%s fwd %.17g vs %.17g",
              eager ? "eager" : "fused", bytes, want);
    cr_assert_eq(n, eager ? 2 * 8 + 6 + 2 + 2 : 2 + 1 + 2 + 1);
    membound(g, PH_BWD, &n, &bytes);
    want = eager ? T * (2 * (44 + 6 * e) * h + (2 * e + 16) * (h + kv) +
                        2 * 3 * e * h + 9 * e * f)
                 : T * (2 * 3 * e * h + 2 * e * (h + kv) + 2 * 3 * e * h +
                        5 * e * f);
    cr_assert(fabs(bytes - want) <= 1e-9 * want, "%s bwd %.17g vs %.17g",
              eager ? "eager" : "fused", bytes, want);
    graph_free(g);
  }
}

/* torchtitan's op-level selective recomputation recomputes every second
 * matmul of a Llama layer, wk, wo and w3 (q, k, v, o, gate, up, down):
 * 2 T h (kv + h + f) FLOPs per layer, with TP splitting each; Megatron's
 * selective recomputation none of them. */
Test(builder, torchtitan_op_policy_recomputes_every_second_matmul)
{
  struct model m;
  struct plan p;
  for (int tp = 1; tp <= 2; tp *= 2) {
    char tps[4];
    snprintf(tps, sizeof tps, "%d", tp);
    struct graph *g = build_layers(
        "llama3-8b", 2, 8, KV("global_batch", "8", "tp", tps, "recompute",
                              "selective", "selective", "ops"), &m, &p);
    double T = (double)m.seq, h = (double)m.hidden, f = (double)m.ffn;
    double kv = (double)model_kv_dim(&m);
    double got = 0;
    const struct program *pr = &g->prog[0];
    for (long i = 0; i < pr->n; i++) {
      const struct task *t = &pr->tasks[i];
      if (t->kind == TK_KERNEL && t->op == KK_GEMM && t->layer == 0 &&
          t->phase == PH_RECOMP && t->mb == 0)
        got += t->flops;
    }
    double want = 2 * T * h * (kv + h + f) / tp;
    cr_assert(fabs(got - want) <= 1e-9 * want, "TP %d: %.17g vs %.17g", tp,
              got, want);
    graph_free(g);
  }
}
