/*
 * test_te_fp8.c - a Llama 2 7B layer in FP8 with delayed scaling at TP 1,
 * kernel by kernel against Transformer Engine's code as builder_layer.c
 * lists it (te_* there): exact bytes of the FP8 norms and their
 * transposes, the projection's and FC2's input casts, the weights'
 * transposes (FP8 parameters) or cast-transposes (BF16 parameters) on the
 * first micro-batch only, and the amax reduction at the end of each
 * chunk's forward and backward.
 */
#include <criterion/criterion.h>
#include <math.h>

#include "tests/plan_helpers.h"

/* Llama 2 7B, 2 layers, on 2 GPUs (DP 2), 2 micro-batches of one 4096-
 * token sequence; fp8_params as given. */
static struct graph *te_graph(const char *fp8_params, const char *pp,
                              long gpus, struct model *m, struct plan *p)
{
  return build_layers("llama2-7b", 2, gpus,
                      KV("dtype", "fp8", "global_batch", "4", "zero", "1",
                         "shard_impl", "megatron", "fp8_params", fp8_params,
                         "pp", pp),
                      m, p);
}

/* The compute kernels and collectives of `layer`, micro-batch `mb`, phase
 * `ph`, in program order, into out[] (at most max); returns how many. */
static long layer_tasks(const struct program *pg, long layer, long mb, int ph,
                        const struct task **out, long max)
{
  long n = 0;
  for (long i = 0; i < pg->n; i++) {
    const struct task *t = &pg->tasks[i];
    if (t->layer != layer || t->mb != mb || t->phase != ph ||
        t->stream != ST_COMPUTE)
      continue;
    cr_assert(n < max, "more than %ld tasks", max);
    out[n++] = t;
  }
  return n;
}

static void kernel_is(const struct task *t, int op, double bytes,
                      const char *what)
{
  cr_assert(t->kind == TK_KERNEL && t->op == op, "%s: op %d, kind %d", what,
            t->op, t->kind);
  cr_assert(fabs(t->bytes - bytes) <= 1e-12 * bytes,
            "%s: %.17g bytes, not %.17g", what, t->bytes, bytes);
}

static void amax_is(const struct task *const *t, double n)
{
  kernel_is(t[0], KK_ELEMWISE, 2 * 4 * n, "torch.cat of the amaxes");
  cr_assert(t[1]->kind == TK_COLL && t[1]->op == CO_ALLREDUCE &&
            t[1]->group == GK_DPCP && t[1]->bytes == 4 * n,
            "the amax all-reduce: %g bytes", t[1]->bytes);
  kernel_is(t[2], KK_ELEMWISE, 2 * 4 * 1024 * n + 4 * n,
            "fused_amax_and_scale_update_after_reduction");
}

/* The forward of the first and last layer, first and second micro-batch,
 * FP8 parameters: every kernel and its bytes. */
Test(te_fp8, layer_forward_kernels)
{
  struct model m;
  struct plan p;
  struct graph *g = te_graph("yes", "1", 2, &m, &p);
  const double T = 4096, h = 4096, f = 11008, e = 2;
  const double lp = 4 * h * h + 3 * h * f + 2 * h; /* 202,383,360 */
  const struct program *pg = &g->prog[0];
  const struct task *t[64];
  for (long mb = 0; mb < 2; mb++) {
    long n = layer_tasks(pg, 0, mb, PH_FWD, t, 64), k = 0;
    if (mb == 0) /* the FP8 weights' transposes after the gather */
      kernel_is(t[k++], KK_ELEMWISE, (1 + 1) * lp, "weight transposes");
    kernel_is(t[k++], KK_NORM, (e + 1) * T * h, "norm1 writing FP8");
    kernel_is(t[k++], KK_ELEMWISE, 2 * T * h, "norm1's FP8 transpose");
    kernel_is(t[k++], KK_GEMM, e * (T * h + h * 3 * h + T * 3 * h), "QKV");
    kernel_is(t[k++], KK_ELEMWISE, 2 * e * 2 * T * h, "RoPE on q and k");
    cr_assert_eq(t[k++]->op, KK_ATTN);
    kernel_is(t[k++], KK_ELEMWISE, (e + 2) * T * h, "proj's input cast");
    kernel_is(t[k++], KK_GEMM, e * (T * h + h * h + T * h), "proj");
    kernel_is(t[k++], KK_ELEMWISE, 3 * e * T * h, "residual");
    kernel_is(t[k++], KK_NORM, (e + 1) * T * h, "norm2 writing FP8");
    kernel_is(t[k++], KK_ELEMWISE, 2 * T * h, "norm2's FP8 transpose");
    kernel_is(t[k++], KK_GEMM, e * (T * h + h * 2 * f + T * 2 * f), "FC1");
    kernel_is(t[k++], KK_ELEMWISE, 3 * e * T * f, "SwiGLU (BF16)");
    kernel_is(t[k++], KK_ELEMWISE, (e + 2) * T * f, "FC2's input cast");
    kernel_is(t[k++], KK_GEMM, e * (T * f + f * h + T * h), "FC2");
    kernel_is(t[k++], KK_ELEMWISE, 3 * e * T * h, "residual");
    cr_assert_eq(k, n, "layer 0, micro-batch %ld: %ld tasks, not %ld", mb, n,
                 k);
    /* The last layer of the chunk ends the forward with the amax
     * reduction of its 2 layers x 4 GEMMs x 3 tensors. */
    n = layer_tasks(pg, 1, mb, PH_FWD, t, 64);
    cr_assert_eq(n, k + 3);
    amax_is(t + n - 3, 2 * 4 * 3);
  }
  graph_free(g);
}

/* The backward: each linear's output gradient cast in both orientations
 * (read 2, write 1 + 1), and the amax reduction of 2 tensors per GEMM
 * after the chunk's first layer. */
Test(te_fp8, layer_backward_casts)
{
  struct model m;
  struct plan p;
  struct graph *g = te_graph("yes", "1", 2, &m, &p);
  const double T = 4096, h = 4096, f = 11008;
  const double grads[] = {T * h, T * 2 * f, T * h, T * 3 * h};
  const struct program *pg = &g->prog[0];
  const struct task *t[64];
  for (long l = 0; l < 2; l++) {
    long n = layer_tasks(pg, l, 1, PH_BWD, t, 64), casts = 0;
    for (long i = 0; i < n; i++)
      if (t[i]->kind == TK_KERNEL && t[i]->op == KK_ELEMWISE &&
          casts < 4 && t[i]->bytes == 4 * grads[casts])
        casts++;
    cr_assert_eq(casts, 4, "layer %ld: %ld gradient casts in order", l,
                 casts);
    if (l == 0)
      amax_is(t + n - 3, 2 * 4 * 2);
    else
      cr_assert_neq(t[n - 2]->kind, TK_COLL);
  }
  graph_free(g);
}

/* BF16 parameters: a cast-transpose of each weight on the first
 * micro-batch (read 2, write 1 + 1). */
Test(te_fp8, bf16_weights_cast_once)
{
  struct model m;
  struct plan p;
  struct graph *g = te_graph("no", "1", 2, &m, &p);
  const double h = 4096, f = 11008;
  const double lp = 4 * h * h + 3 * h * f + 2 * h;
  const struct task *t[64];
  layer_tasks(&g->prog[0], 1, 0, PH_FWD, t, 64);
  kernel_is(t[0], KK_ELEMWISE, (2 + 1 + 1) * lp, "weight cast-transposes");
  layer_tasks(&g->prog[0], 1, 1, PH_FWD, t, 64);
  cr_assert_eq(t[0]->op, KK_NORM, "no weight cast on micro-batch 1");
  graph_free(g);
}

/* Pipeline stages each end their own chunk's forward with the reduction
 * over their own layers (one layer per stage here); one GPU per stage
 * reduces over no one: the kernels, no all-reduce. */
Test(te_fp8, amax_per_stage)
{
  struct model m;
  struct plan p;
  struct graph *g = te_graph("no", "2", 2, &m, &p);
  const struct task *t[64];
  for (long s = 0; s < 2; s++) {
    long n = layer_tasks(&g->prog[s], s, 0, PH_FWD, t, 64);
    kernel_is(t[n - 2], KK_ELEMWISE, 2 * 4 * 4 * 3, "torch.cat");
    kernel_is(t[n - 1], KK_ELEMWISE, 2 * 4 * 1024 * 12 + 4 * 12,
              "the amax update");
    for (long i = 0; i < g->prog[s].n; i++)
      cr_assert(g->prog[s].tasks[i].kind != TK_COLL ||
                g->prog[s].tasks[i].group != GK_DPCP);
  }
  graph_free(g);
}

/* Sequence parallelism at TP 2: the LayerNormLinear norms write FP8 rows
 * only and the all-gather carries FP8 (T x h bytes), the transposes of
 * the gathered inputs come in the backward (before each norm's backward
 * here); the row-parallel layers' output gradients are cast on the local
 * rows (read 2, write 1), gathered in FP8 and transposed (read 1, write
 * 1), in place of a BF16 gather and a cast-transpose of T x h; QKV's and
 * FC1's saved FP8 inputs are gathered again for their weight gradients,
 * T x h bytes each. */
Test(te_fp8, sequence_parallel_gathers_fp8)
{
  struct model m;
  struct plan p;
  struct graph *g = build_layers("llama2-7b", 2, 2,
                                 KV("dtype", "fp8", "global_batch", "2",
                                    "tp", "2", "sp", "yes", "async_tp_grad",
                                    "no"),
                                 &m, &p);
  const double T = 4096, h = 4096, e = 2, Tl = T / 2;
  const struct task *t[64];
  long n = layer_tasks(&g->prog[0], 0, 0, PH_FWD, t, 64), norms = 0;
  for (long i = 0; i + 1 < n; i++) {
    if (t[i]->op != KK_NORM || t[i]->kind != TK_KERNEL)
      continue;
    kernel_is(t[i], KK_NORM, (e + 1) * Tl * h, "norm writing FP8 rows");
    cr_assert(t[i + 1]->kind == TK_COLL && t[i + 1]->op == CO_ALLGATHER &&
              t[i + 1]->group == GK_TP && t[i + 1]->bytes == T * h,
              "the FP8 all-gather after norm %ld: %g bytes", norms,
              t[i + 1]->bytes);
    norms++;
  }
  cr_assert_eq(norms, 2);
  n = layer_tasks(&g->prog[0], 0, 0, PH_BWD, t, 64);
  long gathers = 0, inputs = 0, before_norm = 0;
  for (long i = 1; i + 1 < n; i++) {
    if (t[i]->kind == TK_COLL && t[i]->op == CO_ALLGATHER &&
        t[i + 1]->op == KK_GEMM) {
      /* QKV's and FC1's saved FP8 inputs gathered again, 1 byte an
       * element, before their data gradients (builder_layer.c,
       * sp_regather_bytes) */
      cr_assert_eq(t[i]->bytes, T * h, "an FP8 input gather");
      inputs++;
    } else if (t[i]->kind == TK_COLL && t[i]->op == CO_ALLGATHER) {
      cr_assert_eq(t[i]->bytes, T * h, "an FP8 gradient gather");
      kernel_is(t[i - 1], KK_ELEMWISE, (e + 1) * Tl * h, "the local cast");
      kernel_is(t[i + 1], KK_ELEMWISE, 2 * T * h, "the gathered transpose");
      gathers++;
    }
    if (t[i + 1]->kind == TK_KERNEL && t[i + 1]->op == KK_NORM &&
        t[i]->kind == TK_KERNEL && t[i]->bytes == 2 * T * h)
      before_norm++;
  }
  cr_assert_eq(gathers, 2, "proj and FC2: %ld", gathers);
  cr_assert_eq(inputs, 2, "QKV and FC1: %ld", inputs);
  cr_assert_eq(before_norm, 2, "the gathered norm outputs' transposes");
  graph_free(g);
}

/* The optimizer step's copy back (builder.c, stage_fp8_weights): with FP8
 * parameters the distributed optimizer writes the linear weights' shards
 * in FP8 (TE's cast_master_weights_to_fp8: read 4, write 1), one byte an
 * element fewer than the 16-bit copy of the other parameters. */
Test(te_fp8, optimizer_writes_fp8_shards)
{
  struct model m;
  struct plan p;
  const double h = 4096, f = 11008;
  const double lin = 4 * h * h + 3 * h * f; /* a layer's linear weights */
  double opt[2] = {0, 0};
  const char *f8[2] = {"no", "yes"};
  for (int k = 0; k < 2; k++) {
    struct graph *g = te_graph(f8[k], "1", 2, &m, &p);
    const struct program *pg = &g->prog[0];
    long n = 0;
    for (long i = 0; i < pg->n; i++)
      if (pg->tasks[i].kind == TK_KERNEL && pg->tasks[i].op == KK_OPTIM) {
        opt[k] = pg->tasks[i].bytes;
        n++;
      }
    cr_assert_eq(n, 1);
    graph_free(g);
  }
  /* 2 layers, their shard over DP 2 */
  cr_assert(fabs(opt[0] - opt[1] - 2 * lin / 2) <= 1e-12 * opt[0],
            "%.17g - %.17g", opt[0], opt[1]);
}

/* The amax all-reduce spans TP, DP and CP (Megatron's
 * get_amax_reduction_group(with_context_parallel=True)): at TP 2 x DP 2,
 * 4 bytes a tensor over TP and then over DP (builder_layer.c,
 * te_amax_update); at TP 2 x DP 1 over TP alone. */
Test(te_fp8, amax_group_spans_tp)
{
  const char *dps[2] = {"2", "1"};
  for (int k = 0; k < 2; k++) {
    struct model m;
    struct plan p;
    struct graph *g = build_layers("llama2-7b", 2, k ? 2 : 4,
                                   KV("dtype", "fp8", "global_batch", "4",
                                      "tp", "2", "dp", dps[k]),
                                   &m, &p);
    const struct task *t[64];
    long n = layer_tasks(&g->prog[0], 1, 0, PH_FWD, t, 64);
    double amax = 4 * 4 * 3 * 2; /* 4 GEMMs x 3 tensors, 2 layers */
    long i = n - (k ? 3 : 4);
    kernel_is(t[i], KK_ELEMWISE, 2 * amax, "torch.cat");
    cr_assert(t[i + 1]->kind == TK_COLL && t[i + 1]->op == CO_ALLREDUCE &&
              t[i + 1]->group == GK_TP && t[i + 1]->bytes == amax);
    if (!k)
      cr_assert(t[i + 2]->kind == TK_COLL && t[i + 2]->op == CO_ALLREDUCE &&
                t[i + 2]->group == GK_DPCP && t[i + 2]->bytes == amax);
    kernel_is(t[n - 1], KK_ELEMWISE, 2 * 1024 * amax + amax,
              "the amax update");
    graph_free(g);
  }
}
