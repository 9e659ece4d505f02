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
 * default is the style's behaviour.
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
  MK_QK_NORM, MK_TIED, MK_COUNT
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

#endif
