/*
 * layer.h - a Transformer layer described once: its weights (shapes, and
 * how tensor and expert parallelism split them) and the sequence of its
 * forward pass, whose backward runs the same steps in reverse.
 *
 * Everything that depends on a layer's shape reads this description:
 * parameter and memory accounting (accounting.c), the builder's passes
 * (builder_layer.c for Megatron's 1D tensor parallelism, builder_t3.c for
 * Tensor3D, each interpreting the steps its own way), FSDP/DeepSpeed units
 * (builder_zero.c) and DDP buckets with their compression
 * (builder_compress.c).  A new attention or feed-forward block is a new
 * description here plus the kernels of any new step kind.
 *
 * Weights are listed in module order, as Megatron-LM lays a GPT layer out
 * (fused QKV; SwiGLU's gate and up projections one matrix, held as two
 * tensors as Hugging Face models hold them): first norm, QKV, output
 * projection, second norm, router (MoE), FC1, FC2, each followed by its
 * bias where the model has biases (GPT style; Q, K and V alone for Qwen2),
 * and Qwen3's q and k norms after the QKV's.
 *
 * Layers need not be alike (model.h, model_layer_kind): DeepSeek-V3's
 * first three are dense, GPT-OSS alternates a sliding window with full
 * attention, Llama 4 chunks three layers of four.  A description is made
 * per kind of layer.  Multi-head latent attention (DeepSeek-V2/V3) replaces
 * the QKV linear with Megatron-Core's MLASelfAttention
 * (megatron/core/transformer/multi_latent_attention.py): linear_q_down_proj
 * (h -> q_lora) and linear_kv_down_proj (h -> kv_lora + rope_dim), built
 * as TELinear with parallel_mode 'duplicated' (every TP rank holds them
 * whole); q_layernorm and kv_layernorm; linear_q_up_proj (q_lora -> heads x
 * (nope + rope)) and linear_kv_up_proj (kv_lora -> heads x (nope + v)),
 * column-parallel; without q_lora, linear_q_proj (h -> heads x (nope +
 * rope)), column-parallel.  DeepSeek's own code (inference/model.py, MLA)
 * has the same weights: wq_a, q_norm, wq_b, wkv_a, kv_norm, wkv_b, wo.  An
 * MoE layer's shared experts (Megatron-Core SharedExpertMLP, DeepSeek's
 * MoE.shared_experts) are one more TP-split MLP run on every token, listed
 * after the routed experts' combine; the builder runs them where
 * Megatron-Core does (builder_moe.c, bld_moe_order: before the router, or
 * beside the dispatcher with moe_shared_expert_overlap).
 */
#ifndef WEFT_LAYER_H
#define WEFT_LAYER_H

#include <stdbool.h>

#include "workloads/model.h"

/* How tensor parallelism splits a weight. */
enum lw_split {
  LW_REPL, /* every TP rank holds all of it (norms, row-parallel biases,
              the router) */
  LW_COL,  /* column-parallel: its output features split (QKV, FC1, and
              their biases) */
  LW_ROW,  /* row-parallel: its input features split (projection, FC2) */
};

/* What a weight belongs to: the builders run the FFN's linears as
 * (grouped) GEMMs over the routed token rows, the others over the
 * rank's tokens; FSDP units hold the router and the experts as one
 * tensor. */
enum lw_role { LW_NORM, LW_ATTN, LW_ROUTER, LW_FFN };

struct lweight {
  const char *name;
  enum lw_role role;
  /* A matrix maps `in` features to `out`; a vector (norm weight or bias)
   * has in = 0 and `out` elements. */
  double in, out;
  enum lw_split split;
  int tensors;       /* tensors holding it (SwiGLU's FC1: gate and up) */
  bool routed;       /* one copy per routed expert, split over EP */
  bool cast;         /* FP8 models: its backward casts the output gradient
                        (Transformer Engine's linears; the router is a
                        plain BF16 Linear) */
  bool wgrad_in_out; /* its weight gradient is built as [in x out] rather
                        than [out x in] (the row-parallel layers, as weft
                        has always built them): same FLOPs, bytes and time,
                        the cost model being symmetric in M and N */
};

/* The steps of a layer's forward pass.  Each builder gives every kind a
 * forward and a backward; kinds a builder has no use for are no-ops there
 * (Tensor3D reduces inside its linears and runs no MoE or FP8). */
enum lstep_kind {
  LS_FP8_CASTS, /* FP8 weight copies (and MXFP8: the projection input)
                   (builder_layer.c, fp8_fwd_casts) */
  LS_NORM,      /* LayerNorm / RMSNorm on the residual stream */
  LS_TP_IN,     /* entering a tensor-parallel region: SP all-gather;
                   backward: the input gradient's reduction */
  LS_LINEAR,    /* a GEMM with weight `w`; backward: data and weight
                   gradients */
  LS_QK_NORM,   /* RMSNorm over each head of q and of k (Qwen3) */
  LS_ROPE,      /* rotary position embedding of Q and K (models
                   without learned positions) */
  LS_ATTN,      /* the attention core (scores, softmax, values) */
  LS_TP_OUT,    /* leaving it: all-reduce or SP reduce-scatter; backward:
                   SP all-gather */
  LS_RESID,     /* dropout and residual add */
  LS_A2A,       /* MoE token dispatch or combine over EP */
  LS_ACT,       /* the FFN's activation (GELU, or SwiGLU's gate x up) */
  LS_LATENT_NORM, /* MLA: RMSNorm of the compressed q and kv (DeepSeek's
                     q_norm over q_lora, kv_norm over kv_lora) */
};

struct lstep {
  enum lstep_kind kind;
  int w; /* LS_LINEAR: index of its weight */
};

enum { LAYER_WEIGHTS_MAX = 24, LAYER_STEPS_MAX = 32 };

struct layer_desc {
  struct lweight w[LAYER_WEIGHTS_MAX];
  int nw;
  struct lstep st[LAYER_STEPS_MAX];
  int ns;
  double experts; /* experts of the FFN (1 when dense) */
  int kind;       /* the layer kind (model.h, model_layer_kind) */
  double ffn;     /* inner size of its FFN's linears: a routed expert's
                     (MoE) or the dense FFN's */
  double shared;  /* inner size of the shared experts (0: none) */
};

/* Describe a layer of kind `kind` (model_layer_kind) of `m`. */
void layer_describe_kind(const struct model *m, int kind,
                         struct layer_desc *d);
/* Describe layer i of `m` (0-based; i >= layers: an MTP module's). */
void layer_describe_at(const struct model *m, long i, struct layer_desc *d);
/* Describe the first layer of `m` (every layer, when they are alike). */
void layer_describe(const struct model *m, struct layer_desc *d);

static inline bool lweight_matrix(const struct lweight *w) { return w->in > 0; }

/* Elements of weight `w` in a layer (every expert's copy), and on one rank
 * of tensor-parallel degree t and expert-parallel degree ep. */
double lweight_elems(const struct layer_desc *d, const struct lweight *w);
double lweight_elems_rank(const struct layer_desc *d, const struct lweight *w,
                          double t, double ep);

/* A matrix's rows + columns on one TP rank (one expert's copy). */
double lweight_rc_rank(const struct lweight *w, double t);

/* The GEMM of a linear step on one TP rank: its output features N and
 * reduction K (the tokens M are the builder's). */
void lweight_gemm_nk(const struct lweight *w, double t, double *n, double *k);

#endif
