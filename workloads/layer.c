/*
 * layer.c - the description of a Transformer layer (layer.h).
 */
#include "workloads/layer.h"

#include <assert.h>

static int add_weight(struct layer_desc *d, struct lweight w)
{
  assert(d->nw < LAYER_WEIGHTS_MAX);
  d->w[d->nw] = w;
  return d->nw++;
}

static void add_step(struct layer_desc *d, enum lstep_kind k, int w)
{
  assert(d->ns < LAYER_STEPS_MAX);
  d->st[d->ns++] = (struct lstep){.kind = k, .w = w};
}

/* A norm (weight, and bias for GPT) on the residual stream. */
static void add_norm(struct layer_desc *d, const char *name,
                     const char *bias, double h, bool gpt)
{
  add_weight(d, (struct lweight){.name = name, .role = LW_NORM, .out = h,
                                 .split = LW_REPL, .tensors = 1});
  if (gpt)
    add_weight(d, (struct lweight){.name = bias, .role = LW_NORM, .out = h,
                                   .split = LW_REPL, .tensors = 1});
  add_step(d, LS_NORM, -1);
}

/* A linear layer of `in` x `out` features and, for GPT, its bias (split
 * with the output features when column-parallel, replicated when
 * row-parallel), and its step. */
static void add_linear(struct layer_desc *d, struct lweight w, bool bias,
                       const char *bias_name)
{
  int i = add_weight(d, w);
  if (bias)
    add_weight(d, (struct lweight){.name = bias_name, .role = w.role,
                                   .out = w.out,
                                   .split = w.split == LW_COL ? LW_COL
                                                              : LW_REPL,
                                   .tensors = 1, .routed = w.routed});
  add_step(d, LS_LINEAR, i);
}

/* Qwen3's RMSNorm of each head of q and of k (Qwen3Attention.q_norm and
 * k_norm in transformers' models/qwen3/modeling_qwen3.py: one weight of
 * head_dim elements each, shared by the heads), after the QKV GEMM and
 * before RoPE. */
static void add_qk_norm(struct layer_desc *d, double head_dim)
{
  add_weight(d, (struct lweight){.name = "q_norm", .role = LW_NORM,
                                 .out = head_dim, .split = LW_REPL,
                                 .tensors = 1});
  add_weight(d, (struct lweight){.name = "k_norm", .role = LW_NORM,
                                 .out = head_dim, .split = LW_REPL,
                                 .tensors = 1});
  add_step(d, LS_QK_NORM, -1);
}

void layer_describe(const struct model *m, struct layer_desc *d)
{
  double h = (double)m->hidden, f = (double)m->ffn;
  /* Q is heads x head_dim wide, K and V kv_heads x head_dim each; the
   * projection maps the heads back to the hidden size. */
  double q = (double)model_q_dim(m);
  double qkv = q + 2.0 * (double)model_kv_dim(m);
  int gates = m->ffn_kind == FFN_SWIGLU ? 2 : 1;
  bool gpt = m->gpt_style, moe = model_is_moe(m);
  *d = (struct layer_desc){.experts = (double)m->experts};
  add_step(d, LS_FP8_CASTS, -1);
  /* Attention block. */
  add_norm(d, "norm1", "norm1.bias", h, gpt);
  add_step(d, LS_TP_IN, -1);
  add_linear(d, (struct lweight){.name = "qkv", .role = LW_ATTN, .in = h,
                                 .out = qkv, .split = LW_COL, .tensors = 1,
                                 .cast = true},
             model_qkv_bias(m), "qkv.bias");
  if (m->qk_norm)
    add_qk_norm(d, (double)model_head_dim(m));
  if (!gpt) /* GPT: learned positions, added to the embedding */
    add_step(d, LS_ROPE, -1);
  add_step(d, LS_ATTN, -1);
  add_linear(d, (struct lweight){.name = "proj", .role = LW_ATTN, .in = q,
                                 .out = h, .split = LW_ROW, .tensors = 1,
                                 .cast = true, .wgrad_in_out = true},
             gpt, "proj.bias");
  add_step(d, LS_TP_OUT, -1);
  add_step(d, LS_RESID, -1);
  /* Feed-forward block, routed over experts in an MoE layer. */
  add_norm(d, "norm2", "norm2.bias", h, gpt);
  add_step(d, LS_TP_IN, -1);
  if (moe) {
    add_linear(d, (struct lweight){.name = "router", .role = LW_ROUTER,
                                   .in = h, .out = (double)m->experts,
                                   .split = LW_REPL, .tensors = 1},
               false, NULL);
    add_step(d, LS_A2A, -1); /* dispatch */
  }
  add_linear(d, (struct lweight){.name = "fc1", .role = LW_FFN, .in = h,
                                 .out = gates * f, .split = LW_COL,
                                 .tensors = gates, .routed = moe,
                                 .cast = true},
             gpt, "fc1.bias");
  add_step(d, LS_ACT, -1);
  add_linear(d, (struct lweight){.name = "fc2", .role = LW_FFN, .in = f,
                                 .out = h, .split = LW_ROW, .tensors = 1,
                                 .routed = moe, .cast = true,
                                 .wgrad_in_out = true},
             gpt, "fc2.bias");
  if (moe)
    add_step(d, LS_A2A, -1); /* combine */
  add_step(d, LS_TP_OUT, -1);
  add_step(d, LS_RESID, -1);
}

double lweight_elems(const struct layer_desc *d, const struct lweight *w)
{
  double n = lweight_matrix(w) ? w->in * w->out : w->out;
  return w->routed ? d->experts * n : n;
}

double lweight_elems_rank(const struct layer_desc *d, const struct lweight *w,
                          double t, double ep)
{
  double n = lweight_matrix(w) ? w->in * w->out : w->out;
  if (w->split != LW_REPL)
    n /= t;
  return w->routed ? n * d->experts / ep : n;
}

double lweight_rc_rank(const struct lweight *w, double t)
{
  switch (w->split) {
  case LW_COL:
    return w->in + w->out / t;
  case LW_ROW:
    return w->in / t + w->out;
  default:
    return w->in + w->out;
  }
}

void lweight_gemm_nk(const struct lweight *w, double t, double *n, double *k)
{
  *n = w->split == LW_COL ? w->out / t : w->out;
  *k = w->split == LW_ROW ? w->in / t : w->in;
}
