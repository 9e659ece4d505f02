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

/* Multi-head latent attention's linears and latent norms (layer.h), TP
 * entered first: the down-projections, replicated, see every token. */
static void add_mla(const struct model *m, struct layer_desc *d)
{
  double h = (double)m->hidden, a = (double)m->heads;
  double qk = (double)model_qk_head_dim(m), v = (double)model_v_head_dim(m);
  double rope = (double)model_rope_dim(m), nope = qk - rope;
  double ql = (double)m->q_lora, kvl = (double)m->kv_lora;
  int q_down = -1;
  if (m->q_lora > 0)
    q_down = add_weight(d, (struct lweight){.name = "q_down", .role = LW_ATTN,
                                            .in = h, .out = ql,
                                            .split = LW_REPL, .tensors = 1,
                                            .cast = true});
  int kv_down = add_weight(d, (struct lweight){.name = "kv_down",
                                               .role = LW_ATTN, .in = h,
                                               .out = kvl + rope,
                                               .split = LW_REPL,
                                               .tensors = 1, .cast = true});
  if (q_down >= 0) {
    add_step(d, LS_LINEAR, q_down);
    add_weight(d, (struct lweight){.name = "q_norm", .role = LW_NORM,
                                   .out = ql, .split = LW_REPL, .tensors = 1});
  }
  add_step(d, LS_LINEAR, kv_down);
  add_weight(d, (struct lweight){.name = "kv_norm", .role = LW_NORM,
                                 .out = kvl, .split = LW_REPL, .tensors = 1});
  add_step(d, LS_LATENT_NORM, -1);
  add_linear(d, (struct lweight){.name = q_down >= 0 ? "q_up" : "q",
                                 .role = LW_ATTN,
                                 .in = q_down >= 0 ? ql : h, .out = a * qk,
                                 .split = LW_COL, .tensors = 1, .cast = true},
             false, NULL);
  add_linear(d, (struct lweight){.name = "kv_up", .role = LW_ATTN,
                                 .in = kvl, .out = a * (nope + v),
                                 .split = LW_COL, .tensors = 1, .cast = true},
             false, NULL);
}

/* A SwiGLU or GELU MLP of inner size f: FC1, activation, FC2. */
static void add_mlp(const struct model *m, struct layer_desc *d,
                    const char *const names[4], double f, bool routed)
{
  double h = (double)m->hidden;
  int gates = m->ffn_kind == FFN_SWIGLU ? 2 : 1;
  bool gpt = m->gpt_style;
  int w1 = d->nw;
  add_linear(d, (struct lweight){.name = names[0], .role = LW_FFN, .in = h,
                                 .out = gates * f, .split = LW_COL,
                                 .tensors = gates, .routed = routed,
                                 .cast = true},
             gpt, names[1]);
  add_step(d, LS_ACT, w1); /* its FC1: the rows and width it acts on */
  add_linear(d, (struct lweight){.name = names[2], .role = LW_FFN, .in = f,
                                 .out = h, .split = LW_ROW, .tensors = 1,
                                 .routed = routed, .cast = true,
                                 .wgrad_in_out = true},
             gpt, names[3]);
}

void layer_describe_kind(const struct model *m, int kind,
                         struct layer_desc *d)
{
  double h = (double)m->hidden;
  /* Q is heads x head_dim wide, K and V kv_heads x head_dim each; the
   * projection maps the heads' values back to the hidden size. */
  double q = (double)model_q_dim(m);
  double qkv = q + 2.0 * (double)model_kv_dim(m);
  bool gpt = m->gpt_style, moe = (kind & LAYER_KIND_MOE) != 0;
  *d = (struct layer_desc){.experts = moe ? (double)m->experts : 1,
                           .kind = kind};
  d->ffn = (double)(moe ? model_moe_ffn(m) : m->ffn);
  d->shared = moe ? (double)m->shared_ffn : 0;
  add_step(d, LS_FP8_CASTS, -1);
  /* Attention block. */
  add_norm(d, "norm1", "norm1.bias", h, gpt);
  add_step(d, LS_TP_IN, -1);
  if (model_mla(m)) {
    add_mla(m, d);
  } else {
    add_linear(d, (struct lweight){.name = "qkv", .role = LW_ATTN, .in = h,
                                   .out = qkv, .split = LW_COL, .tensors = 1,
                                   .cast = true},
               model_qkv_bias(m), "qkv.bias");
    if (m->qk_norm)
      add_qk_norm(d, (double)model_head_dim(m));
  }
  if (!gpt) /* GPT: learned positions, added to the embedding */
    add_step(d, LS_ROPE, -1);
  add_step(d, LS_ATTN, -1);
  add_linear(d, (struct lweight){.name = "proj", .role = LW_ATTN,
                                 .in = (double)m->heads *
                                       (double)model_v_head_dim(m),
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
  static const char *const mlp[4] = {"fc1", "fc1.bias", "fc2", "fc2.bias"};
  static const char *const shared[4] = {"shared_fc1", "shared_fc1.bias",
                                        "shared_fc2", "shared_fc2.bias"};
  add_mlp(m, d, mlp, d->ffn, moe);
  if (moe)
    add_step(d, LS_A2A, -1); /* combine */
  /* Shared experts (Megatron-Core's SharedExpertMLP, added to the
   * combined output in MoELayer.forward): a TP-split MLP over the block's
   * input, which gathers its sequence-parallel shards itself where the
   * routed path runs on them (builder_moe.c, bld_moe_skips_tp). */
  if (d->shared > 0) {
    add_step(d, LS_TP_IN, -1);
    add_mlp(m, d, shared, d->shared, false);
  }
  add_step(d, LS_TP_OUT, -1);
  add_step(d, LS_RESID, -1);
}

void layer_describe_at(const struct model *m, long i, struct layer_desc *d)
{
  layer_describe_kind(m, model_layer_kind(m, i), d);
}

void layer_describe(const struct model *m, struct layer_desc *d)
{
  layer_describe_at(m, 0, d);
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
