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
