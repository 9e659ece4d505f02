/*
 * test_layer.c - the layer description (workloads/layer.h) against the
 * closed forms of its users: a layer's parameters (GPT 12h^2 + 13h,
 * Llama's), per-rank shares under TP and EP, the GEMM shapes of split
 * weights, the step sequence, and what the builder's Megatron and
 * Tensor3D passes make of it.
 */
#include <criterion/criterion.h>
#include <math.h>

#include "workloads/accounting.h"
#include "workloads/layer.h"
#include "tests/plan_helpers.h"

#define EQ(a, b) cr_assert(fabs((double)(a) - (double)(b)) <= 1e-9 * fabs((double)(b)), "%.17g != %.17g", (double)(a), (double)(b))

static double sum(const struct layer_desc *d, double t, double ep)
{
  double n = 0;
  for (int i = 0; i < d->nw; i++)
    n += lweight_elems_rank(d, &d->w[i], t, ep);
  return n;
}

Test(layer, gpt_params_closed_form)
{
  struct model m;
  cr_assert_eq(model_from_preset(&m, "gpt-1.7b", NULL), 0);
  struct layer_desc d;
  layer_describe(&m, &d);
  double h = (double)m.hidden;
  /* Megatron-LM Eq. (2) per layer: 12 h^2 + 13 h. */
  EQ(sum(&d, 1, 1), 12 * h * h + 13 * h);
  EQ(layer_params(&m), 12 * h * h + 13 * h);
  /* On a TP rank: the matrices and the column-parallel biases (QKV 3h,
   * FC1 4h) split, the norms (4h) and row-parallel biases (2h) whole. */
  EQ(sum(&d, 4, 1), 12 * h * h / 4 + 7 * h / 4 + 6 * h);
  EQ(layer_params_rank(&m, 4, 1), 12 * h * h / 4 + 7 * h / 4 + 6 * h);
  cr_assert_eq(d.nw, 12); /* six matrices and vectors, each with a bias */
}

Test(layer, llama_params_closed_form)
{
  struct model m;
  cr_assert_eq(model_from_preset(&m, "llama3-8b", NULL), 0);
  struct layer_desc d;
  layer_describe(&m, &d);
  /* 4096 x (4096 + 2 x 1024) + 4096^2 + 3 x 4096 x 14336 + 2 x 4096 */
  EQ(sum(&d, 1, 1), 218112000.0);
  EQ(layer_params(&m), 218112000.0);
  /* SwiGLU's FC1 is one matrix held as two tensors. */
  for (int i = 0; i < d.nw; i++)
    if (d.w[i].role == LW_FFN && d.w[i].split == LW_COL)
      cr_assert_eq(d.w[i].tensors, 2);
}

Test(layer, gemm_shapes_of_split_weights)
{
  struct lweight col = {.in = 4096, .out = 6144, .split = LW_COL};
  struct lweight row = {.in = 14336, .out = 4096, .split = LW_ROW};
  struct lweight rep = {.in = 4096, .out = 8, .split = LW_REPL};
  double n, k;
  lweight_gemm_nk(&col, 4, &n, &k);
  EQ(n, 1536);
  EQ(k, 4096);
  lweight_gemm_nk(&row, 4, &n, &k);
  EQ(n, 4096);
  EQ(k, 3584);
  lweight_gemm_nk(&rep, 4, &n, &k);
  EQ(n, 8);
  EQ(k, 4096);
  EQ(lweight_rc_rank(&col, 4), 4096 + 1536);
  EQ(lweight_rc_rank(&row, 4), 3584 + 4096);
}

/* Every routed weight, the GPT-style experts' FC2 bias included, is split
 * over EP; the router is held whole by every rank. */
Test(layer, moe_experts_split_over_ep)
{
  struct model m;
  cr_assert_eq(model_from_preset(&m, "gpt-1.7b", NULL), 0);
  m.experts = 8;
  m.topk = 2;
  struct layer_desc d;
  layer_describe(&m, &d);
  double h = (double)m.hidden, f = (double)m.ffn, E = 8;
  double expert = h * f + f + f * h + h; /* FC1, its bias, FC2, its bias */
  double dense = 12 * h * h + 13 * h - expert;
  EQ(layer_params(&m), dense + E * expert + h * E);
  EQ(layer_expert_params_rank(&m, 2, 4),
     E / 4 * ((h * f + f + f * h) / 2 + h));
  EQ(layer_params_rank(&m, 2, 4), sum(&d, 2, 4));
}

/* The forward's steps: a norm, the attention's linears around the core
 * inside a TP region, a norm, the FFN's linears around the activation
 * (with the router and the token exchanges of an MoE layer). */
Test(layer, step_sequence)
{
  struct model m;
  cr_assert_eq(model_from_preset(&m, "mixtral-8x7b", NULL), 0);
  struct layer_desc d;
  layer_describe(&m, &d);
  enum lstep_kind want[] = {LS_FP8_CASTS, LS_NORM, LS_TP_IN, LS_LINEAR,
                            LS_ROPE, LS_ATTN, LS_LINEAR, LS_TP_OUT, LS_RESID,
                            LS_NORM, LS_TP_IN, LS_LINEAR, LS_A2A,
                            LS_LINEAR, LS_ACT, LS_LINEAR, LS_A2A,
                            LS_TP_OUT, LS_RESID};
  cr_assert_eq(d.ns, (int)(sizeof want / sizeof *want));
  for (int i = 0; i < d.ns; i++)
    cr_assert_eq(d.st[i].kind, want[i], "step %d", i);
  const char *lin[] = {"qkv", "proj", "router", "fc1", "fc2"};
  int k = 0;
  for (int i = 0; i < d.ns; i++)
    if (d.st[i].kind == LS_LINEAR)
      cr_assert_str_eq(d.w[d.st[i].w].name, lin[k++]);
  cr_assert_eq(k, 5);
}

/* Model FLOPs from the description equal Megatron-LM's closed form
 * 72 B s l h^2 (1 + s/(6h) + V/(12 l h)) for GPT. */
Test(layer, model_flops_closed_form)
{
  struct model m;
  cr_assert_eq(model_from_preset(&m, "gpt-1.7b", NULL), 0);
  double B = 512, s = (double)m.seq, l = (double)m.layers,
         h = (double)m.hidden, V = (double)m.vocab;
  EQ(model_flops_per_iter(&m, 512),
     72 * B * s * l * h * h * (1 + s / (6 * h) + V / (12 * l * h)));
}

/* Qwen3's layer (qwen3-32b: hidden 5120, 64 heads of 128, so Q is 8192
 * wide, not hidden; 8 KV heads; FFN 25600): QKV 5120 x (8192 + 2 x 1024),
 * the projection 8192 x 5120, two norms of 5120, q_norm and k_norm of 128
 * each, SwiGLU 3 x 5120 x 25600. */
Test(layer, qwen3_params_closed_form)
{
  struct model m;
  cr_assert_eq(model_from_preset(&m, "qwen3-32b", NULL), 0);
  struct layer_desc d;
  layer_describe(&m, &d);
  double want = 5120.0 * (8192 + 2048) + 8192.0 * 5120 + 2 * 5120 + 2 * 128 +
                3 * 5120.0 * 25600;
  EQ(want, 487598336.0);
  EQ(layer_params(&m), want);
  EQ(sum(&d, 1, 1), want);
  /* On 4 TP ranks the matrices split, the four norms stay whole. */
  EQ(layer_params_rank(&m, 4, 1),
     (want - 2 * 5120 - 2 * 128) / 4 + 2 * 5120 + 2 * 128);
  int proj = -1, qn = -1;
  for (int i = 0; i < d.nw; i++) {
    if (d.w[i].role == LW_ATTN && d.w[i].split == LW_ROW)
      proj = i;
    if (d.w[i].role == LW_NORM && d.w[i].out == 128)
      qn = i;
  }
  cr_assert(proj >= 0 && qn >= 0);
  EQ(d.w[proj].in, 8192);
  EQ(d.w[proj].out, 5120);
  cr_assert_eq(d.w[qn].split, LW_REPL);
  /* The q/k norm runs after the QKV GEMM and before RoPE. */
  enum lstep_kind want_st[] = {LS_FP8_CASTS, LS_NORM, LS_TP_IN, LS_LINEAR,
                               LS_QK_NORM, LS_ROPE, LS_ATTN, LS_LINEAR};
  for (int i = 0; i < (int)(sizeof want_st / sizeof *want_st); i++)
    cr_assert_eq(d.st[i].kind, want_st[i], "step %d", i);
}

/* Model FLOPs with a head dimension that is not hidden/heads: every
 * linear's 2 T in out, and QK^T and PV over heads x head_dim (8192), not
 * hidden (5120): 4 T s (a d) per layer; the logits 2 T h V; x 3. */
Test(layer, flops_with_head_dim_apart)
{
  struct model m;
  cr_assert_eq(model_from_preset(&m, "qwen3-32b", NULL), 0);
  double B = 16, s = (double)m.seq, T = B * s, l = (double)m.layers;
  double linear = 5120.0 * (8192 + 2048) + 8192.0 * 5120 + 3 * 5120.0 * 25600;
  double want = 3 * (l * (4 * T * s * 64 * 128 + 2 * T * linear) +
                     2 * T * 5120 * 151936.0);
  EQ(model_flops_per_iter(&m, 16), want);
  /* The same model with head_dim left to hidden/heads (80) has less
   * attention: the difference is 3 l 4 T s (8192 - 5120) plus the
   * QKV and projection GEMMs' difference. */
  struct model x = m;
  x.head_dim = 0;
  cr_assert_eq(model_head_dim(&x), 80);
  double lin_x = 5120.0 * (5120 + 2 * 640) + 5120.0 * 5120 +
                 3 * 5120.0 * 25600;
  EQ(model_flops_per_iter(&x, 16),
     3 * (l * (4 * T * s * 5120 + 2 * T * lin_x) + 2 * T * 5120 * 151936.0));
}

/* Qwen2's QKV bias: Q, K and V's biases (h + 2 kv) on a model that has
 * no other bias, split with QKV's output features; GPT without it loses
 * exactly those 3h. */
Test(layer, qkv_bias_params)
{
  struct model m;
  struct weft_err err = {0};
  cr_assert_eq(model_from_preset(&m, "llama3-8b", NULL), 0);
  cr_assert_eq(model_set(&m, MK_QKV_BIAS, "yes", "--qkv-bias", &err), 0,
               "%s", err.msg);
  EQ(layer_params(&m), 218112000.0 + 4096 + 2 * 1024);
  EQ(layer_params_rank(&m, 4, 1),
     (218112000.0 - 2 * 4096) / 4 + 2 * 4096 + (4096 + 2 * 1024) / 4.0);
  struct layer_desc d;
  layer_describe(&m, &d);
  int biases = 0;
  for (int i = 0; i < d.nw; i++)
    if (!lweight_matrix(&d.w[i]) && d.w[i].role == LW_ATTN) {
      biases++;
      cr_assert_eq(d.w[i].split, LW_COL);
      EQ(d.w[i].out, 4096 + 2 * 1024);
    }
  cr_assert_eq(biases, 1);
  struct model g;
  cr_assert_eq(model_from_preset(&g, "gpt-1.7b", NULL), 0);
  cr_assert_eq(model_set(&g, MK_QKV_BIAS, "no", "--qkv-bias", &err), 0);
  double h = (double)g.hidden;
  EQ(layer_params(&g), 12 * h * h + 13 * h - 3 * h);
}

/* Tying: an untied GPT gains the output layer's V h, a tied Llama loses
 * it; the positions and norms do not move. */
Test(layer, tied_and_untied_embeddings)
{
  struct model m, g;
  struct weft_err err = {0};
  cr_assert_eq(model_from_preset(&m, "llama3-8b", NULL), 0);
  double before = model_params(&m), Vh = 128256.0 * 4096;
  cr_assert_eq(model_set(&m, MK_TIED, "yes", "--tied", &err), 0);
  EQ(model_params(&m), before - Vh);
  EQ(output_params(&m), 0);
  cr_assert_eq(model_from_preset(&g, "gpt-1.7b", NULL), 0);
  before = model_params(&g);
  cr_assert_eq(model_set(&g, MK_TIED, "no", "--tied", &err), 0);
  EQ(model_params(&g), before + 51200.0 * 2304);
}

/* What the builders make of a head dimension apart: the graph's model
 * FLOPs (forward and backward) equal the closed form above for Megatron's
 * 1D TP with fused and unfused attention (Tensor3D's graphs count more
 * than the closed form for every model, head_dim or not), and the
 * stages' parameters sum to the model's (q/k norms included). */
Test(layer, builders_with_head_dim_apart, .timeout = 120)
{
  const char *const *kvs[] = {
      KV("tp", "2", "pp", "2", "global_batch", "8"),
      KV("tp", "2", "pp", "2", "global_batch", "8", "attention", "unfused"),
  };
  const int phases = (1 << PH_FWD) | (1 << PH_BWD);
  for (size_t i = 0; i < sizeof kvs / sizeof *kvs; i++) {
    struct model m;
    struct plan p;
    struct graph *g = build_layers("qwen3-32b", 4, 4, kvs[i], &m, &p);
    double mf = model_flops_per_iter(&m, p.global_batch);
    double gm = graph_total_flops(g, phases);
    cr_assert(fabs(gm - mf) <= 1e-9 * mf, "case %zu: %.17g vs %.17g", i, gm,
              mf);
    double params = 0;
    for (long st = 0; st < p.pp; st++)
      params += stage_params_rank(&m, &p, st) * (double)p.tp;
    /* TP-replicated norms counted tp times: take them out */
    params -= (double)(p.tp - 1) * (double)m.layers * (2 * 5120.0 + 2 * 128) +
              (double)(p.tp - 1) * 5120;
    cr_assert(fabs(params - model_params(&m)) <= 1e-9 * model_params(&m),
              "case %zu: %.17g vs %.17g", i, params, model_params(&m));
    graph_free(g);
  }
}

/* Qwen3's q/k norm kernels: per layer and micro-batch, a norm over the
 * rank's (heads + kv_heads) / t rows of head_dim per token, 2 e bytes per
 * element forward and 3 e backward, as the hidden-size norms; the graph
 * without qk_norm has exactly those bytes less. */
Test(layer, qk_norm_kernel_bytes)
{
  double bytes[2];
  struct model m;
  struct plan p;
  for (int on = 0; on < 2; on++) {
    struct graph *g = build_layers("qwen3-8b", 2, 2,
                                   KV("tp", "2", "global_batch", "1"), &m, &p);
    graph_free(g);
    m.qk_norm = on;
    struct weft_err err = {0};
    g = build_graph(&m, &p, &err);
    cr_assert(g, "%s", err.msg);
    bytes[on] = 0;
    const struct program *pr = &g->prog[0];
    for (long i = 0; i < pr->n; i++) {
      const struct task *t = &pr->tasks[i];
      if (t->kind == TK_KERNEL && t->op == KK_NORM && t->layer == 0 &&
          t->mb == 0)
        bytes[on] += t->bytes;
    }
    graph_free(g);
  }
  double T = (double)m.seq, e = 2, rows = T * (32 + 8) / 2;
  EQ(bytes[1] - bytes[0], (2 + 3) * e * rows * 128);
}
