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
 * positions, RMSNorm, no biases and an untied output layer.
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
  MK_SEQ, MK_DTYPE, MK_EXPERTS, MK_TOPK, MK_STYLE, MK_COUNT
};

struct model {
  char name[WEFT_MAX_NAME];
  long layers, hidden, heads, kv_heads, ffn, vocab, seq;
  enum ffn_kind ffn_kind;
  enum dtype dtype; /* of weights and activations in compute */
  long experts;     /* 1: dense; > 1: an MoE FFN in every layer */
  long topk;        /* experts per token (1 when dense) */
  bool gpt_style;   /* see above */
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

/* Check the settings against each other (heads divide hidden, kv_heads
 * divide heads, topk <= experts, ...).  Messages name the setting's origin. */
int model_check(const struct model *m, struct weft_err *err) WEFT_WUR;

/* Derived sizes. */
static inline long model_head_dim(const struct model *m)
{
  return m->hidden / m->heads;
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

static inline bool model_is_moe(const struct model *m)
{
  return m->experts > 1;
}

#endif
