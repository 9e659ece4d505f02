/*
 * model.h - Transformer model descriptions: presets, XML and flags.
 *
 * A model is a decoder-only Transformer: `layers` blocks of attention (with
 * `heads` query heads and `kv_heads` key/value heads: GQA when fewer) and a
 * feed-forward network of inner size `ffn` (a GELU MLP with biases, as GPT,
 * or SwiGLU without, as Llama), optionally a mixture of `experts` FFNs of
 * which each token uses `topk`.  GPT-style models (Megatron-LM) have learned
 * position embeddings, LayerNorm with bias, biased linear layers and an
 * output layer tied to the embedding; Llama-style models use rotary
 * positions, RMSNorm, no biases and an untied output layer.  Models of
 * 2024-26 depart from both: a head dimension that is not hidden/heads
 * (Qwen3: hidden 4096, 32 heads of 128 at 8B, 64 heads of 128 at 32B),
 * biases on Q, K and V alone (Qwen2), RMSNorm of each head's q and k
 * (Qwen3), and tying chosen per model; each is a setting of its own whose
 * default is the style's behaviour.  Mixture-of-experts models of 2024-26
 * have fine-grained experts narrower than the dense FFN (moe_ffn), shared
 * experts every token runs (shared_ffn), dense layers first (dense_layers)
 * or between MoE layers (moe_every), and group-limited routing; DeepSeek's
 * multi-head latent attention compresses Q and KV through low-rank
 * projections (q_lora, kv_lora) with query/key heads of a rotary and a
 * non-rotary part and value heads of their own width; DeepSeek-V3 adds
 * multi-token-prediction modules (mtp_layers); GPT-OSS and Mistral attend
 * within a sliding window, Llama 4 within chunks, on all layers or all but
 * every full_every-th.  Each is off by default, so that a model's layers
 * are all alike unless a setting makes them differ (model_layer_kind).
 * Settings come from a preset, then a file, then flags, like clusters.
 */
#ifndef WEFT_MODEL_H
#define WEFT_MODEL_H

#include <stdbool.h>

#include "platforms/catalog.h"
#include "sim/base/bounds.h"
#include "sim/base/err.h"

enum ffn_kind { FFN_GELU, FFN_SWIGLU };

enum model_key {
  MK_LAYERS, MK_HIDDEN, MK_HEADS, MK_KV_HEADS, MK_FFN, MK_FFN_KIND, MK_VOCAB,
  MK_SEQ, MK_DTYPE, MK_EXPERTS, MK_TOPK, MK_STYLE, MK_HEAD_DIM, MK_QKV_BIAS,
  MK_QK_NORM, MK_TIED,
  /* Models of 2024-26 (all off by default; model.c's keys[] says each): */
  MK_MOE_FFN, MK_SHARED_FFN, MK_DENSE_LAYERS, MK_MOE_EVERY, MK_EXPERT_GROUPS,
  MK_TOPK_GROUPS, MK_Q_LORA, MK_KV_LORA, MK_ROPE_DIM, MK_NOPE_DIM, MK_V_DIM,
  MK_MTP_LAYERS, MK_WINDOW, MK_FULL_EVERY, MK_ATTN_CHUNK, MK_VOCAB_PAD,
  MK_COUNT
};

/* A yes/no setting whose default follows the style (gpt or llama). */
enum model_opt { MO_STYLE, MO_YES, MO_NO };

struct model {
  char name[WEFT_MAX_NAME];
  long layers, hidden, heads, kv_heads, ffn, vocab, seq;
  enum ffn_kind ffn_kind;
  enum dtype dtype; /* of weights and activations in compute */
  long experts;     /* 1: dense; > 1: an MoE FFN in every layer */
  long topk;        /* experts per token (1 when dense) */
  bool gpt_style;   /* see above */
  long head_dim;    /* width of a head; 0: hidden / heads */
  enum model_opt qkv_bias; /* biases of Q, K, V (default: GPT's) */
  bool qk_norm;     /* RMSNorm over head_dim on q and k (Qwen3) */
  enum model_opt tied; /* output layer tied to the embedding (default:
                          GPT tied, Llama untied) */
  /* Mixture of experts beyond one expert FFN per layer (0: off). */
  long moe_ffn;       /* a routed expert's inner size (0: ffn) */
  long shared_ffn;    /* the shared experts' inner size together */
  long dense_layers;  /* the first N layers dense (FFN `ffn`) */
  long moe_every;     /* every Nth layer MoE, the last of each N (0, 1:
                         every layer) */
  long expert_groups, topk_groups; /* group-limited routing */
  /* Multi-head latent attention (on when kv_lora > 0). */
  long q_lora, kv_lora, rope_dim, nope_dim, v_dim;
  long mtp_layers;    /* multi-token-prediction modules */
  /* Local attention (0: off): a causal window of `window` tokens, or
   * chunks of `attn_chunk` tokens, on the layers that full_every leaves
   * local. */
  long window, full_every, attn_chunk;
  long vocab_pad;     /* embedding rows padded to a multiple (0, 1: none) */
  bool set[MK_COUNT];
  char origin[MK_COUNT][WEFT_MAX_ORIGIN]; /* where each setting came from */
};

/* The number of model presets and the i-th one (in `weft list` order). */
int model_preset_count(void);
const struct model *model_preset(int i);
/* A preset by name (case-insensitive); WEFT_ENOTFOUND lists the names. */
int model_from_preset(struct model *m, const char *name,
                      struct weft_err *err) WEFT_WUR;

/* The key of an attribute or flag name ("kv_heads" or "kv-heads"), or -1. */
int model_key_from_name(const char *name);
const char *model_key_name(enum model_key k);
/* The form of its value, for the help: "N", "gelu|swiglu". */
const char *model_key_hint(enum model_key k);
/* Its meaning, one line for the help. */
const char *model_key_help(enum model_key k);

/* Set one setting from text; `origin` prefixes any error. */
int model_set(struct model *m, enum model_key k, const char *value,
              const char *origin, struct weft_err *err) WEFT_WUR;

/* Check the settings against each other (heads divide hidden unless
 * head_dim is set, kv_heads
 * divide heads, topk <= experts, ...).  Messages name the setting's origin. */
int model_check(const struct model *m, struct weft_err *err) WEFT_WUR;

/* Derived sizes. */
static inline long model_head_dim(const struct model *m)
{
  if (m->head_dim > 0)
    return m->head_dim;
  return m->heads > 0 ? m->hidden / m->heads : 0; /* 0: not yet set */
}
/* Width of Q, and of the attention's output: heads x head_dim (hidden
 * unless the head dimension is set apart). */
static inline long model_q_dim(const struct model *m)
{
  return m->heads * model_head_dim(m);
}
static inline long model_kv_dim(const struct model *m) /* K or V width */
{
  return m->kv_heads * model_head_dim(m);
}
/* Bytes of an activation element: 2 when the linear layers compute in FP8
 * (activations, residuals and their communication stay BF16, as in
 * Transformer Engine), else the model's element size. */
static inline double model_act_bytes(const struct model *m)
{
  return m->dtype == DTYPE_FP8 ? 2.0 : dtype_bytes(m->dtype);
}

static inline bool model_opt_on(enum model_opt o, bool style_default)
{
  return o == MO_STYLE ? style_default : o == MO_YES;
}
/* Q, K and V have biases: GPT (every linear), or set (Qwen2). */
static inline bool model_qkv_bias(const struct model *m)
{
  return model_opt_on(m->qkv_bias, m->gpt_style);
}
/* The output layer is the embedding's matrix. */
static inline bool model_tied(const struct model *m)
{
  return model_opt_on(m->tied, m->gpt_style);
}

static inline bool model_is_moe(const struct model *m)
{
  return m->experts > 1;
}

/* Multi-head latent attention (DeepSeek-V2/V3). */
static inline bool model_mla(const struct model *m) { return m->kv_lora > 0; }

/* MLA's head widths: the query/key head is nope_dim + rope_dim wide, the
 * value head v_dim (DeepSeek's qk_head_dim and v_head_dim); without MLA
 * both are head_dim. */
static inline long model_rope_dim(const struct model *m)
{
  return m->rope_dim > 0 ? m->rope_dim : 64;
}
static inline long model_qk_head_dim(const struct model *m)
{
  if (!model_mla(m))
    return model_head_dim(m);
  return (m->nope_dim > 0 ? m->nope_dim : model_head_dim(m)) +
         model_rope_dim(m);
}
static inline long model_v_head_dim(const struct model *m)
{
  if (!model_mla(m))
    return model_head_dim(m);
  return m->v_dim > 0 ? m->v_dim : model_head_dim(m);
}

/* Inner size of one routed expert. */
static inline long model_moe_ffn(const struct model *m)
{
  return m->moe_ffn > 0 ? m->moe_ffn : m->ffn;
}

/* The vocabulary as the embedding and output layer hold it: padded to a
 * multiple of vocab_pad (Megatron-LM's _vocab_size_with_padding,
 * megatron/training/tokenizer/tokenizer.py, pads to
 * make_vocab_size_divisible_by x TP; weft pads to vocab_pad alone). */
static inline long model_vocab_rows(const struct model *m)
{
  long q = m->vocab_pad > 1 ? m->vocab_pad : 1;
  return (m->vocab + q - 1) / q * q;
}

/* Layer i (0-based; i >= layers: the i - layers'th MTP module's layer) has
 * a routed-expert FFN: MoE models, past the first dense_layers, the last
 * of every moe_every; an MTP layer is MoE when the last layer is (as
 * Megatron-LM's num_floating_point_operations counts it). */
bool model_layer_moe(const struct model *m, long i);

/* How layer i attends. */
enum attn_span { SPAN_FULL, SPAN_WINDOW, SPAN_CHUNK };
enum attn_span model_layer_span(const struct model *m, long i);

/* Query-key pairs a sequence of `s` tokens computes in layer i's causal
 * attention: s (s + 1) / 2 with full attention, fewer in a window or
 * chunks. */
double model_layer_pairs(const struct model *m, long i, double s);

/* A layer's kind: which of the model's layer descriptions it has.  Layers
 * of one kind are alike; a model whose layers are all alike has kind 0
 * only. */
enum { LAYER_KIND_MOE = 1, LAYER_KIND_LOCAL = 2, LAYER_KINDS = 4 };
static inline int model_layer_kind(const struct model *m, long i)
{
  return (model_layer_moe(m, i) ? LAYER_KIND_MOE : 0) |
         (model_layer_span(m, i) != SPAN_FULL ? LAYER_KIND_LOCAL : 0);
}
/* Whether every layer (MTP's included) is of the same kind. */
bool model_layers_alike(const struct model *m);

#endif
