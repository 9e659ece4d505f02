/*
 * hfconfig.h - a model from a Hugging Face config.json.
 *
 * `weft run --model path/to/config.json` (or <model config="..."/> in a
 * workload file) reads the config.json that a model repository on the
 * Hugging Face Hub publishes and maps its fields onto weft's model settings
 * (model.h) through the text API, model_key_from_name + model_set, as flags
 * would.  Architectures read: LlamaForCausalLM, MistralForCausalLM,
 * MixtralForCausalLM, Qwen2ForCausalLM, Qwen3ForCausalLM,
 * Qwen3MoeForCausalLM, DeepseekV3ForCausalLM, GptOssForCausalLM, and the
 * Llama 4 text model (Llama4ForConditionalGeneration's text_config, or
 * Llama4ForCausalLM).  The meaning of every field, and what a field leaves
 * implicit, is taken from transformers' configuration_<model>.py and
 * modeling_<model>.py (cited in hfconfig.c).
 *
 * Three kinds of field:
 *  - cost fields are mapped onto a setting, or refused naming the field and
 *    the file when weft cannot honour the value ("mlp_bias true", an
 *    irregular layer_types pattern, a setting this weft does not have);
 *  - fields known not to change the cost (rope_theta, rms_norm_eps, token
 *    ids, initializer_range, ...) are ignored silently;
 *  - any other field is named in `note->unknown`, for a warning, so that a
 *    config of a newer transformers still loads.
 * The training sequence length is not in a config.json (max_position_
 * embeddings is the context limit of inference), so the model's `seq` is
 * left 0 and the caller must ask for it (--seq, seq=).
 *
 * json-c is confined to hfconfig.c.
 */
#ifndef WEFT_HFCONFIG_H
#define WEFT_HFCONFIG_H

#include <stddef.h>

#include "sim/base/err.h"
#include "workloads/model.h"

struct hfconfig_note {
  /* The model is exact only for sequences of at most `seq_limit` tokens
   * (0: any): a sliding window or an attention chunk that this weft has no
   * setting for equals full attention while the sequence fits in it.
   * `seq_limit_why` names the file, the field and the mechanism. */
  long seq_limit;
  char seq_limit_why[WEFT_ERR_MAX];
  char path[WEFT_MAX_ORIGIN]; /* the file read */
  /* Fields neither mapped nor known to be harmless, "a, b, c" ("" none). */
  char unknown[WEFT_ERR_MAX];
};

/* Read the config.json at `path` into `*m` (replacing it whole: settings
 * not in the file are weft's defaults, the model's name is the config's
 * _name_or_path or else the file's name) and `*note`.  Errors name the file
 * and the field: "PATH: field 'mlp_bias': ...".  `m` and `note` are not
 * touched on failure. */
int hfconfig_read(struct model *m, struct hfconfig_note *note,
                  const char *path, struct weft_err *err) WEFT_WUR;

/* The same from `len` bytes of `text` (no NUL needed); `path` names it in
 * messages and the model. */
int hfconfig_read_text(struct model *m, struct hfconfig_note *note,
                       const char *path, const char *text, size_t len,
                       struct weft_err *err) WEFT_WUR;

/* Whether a --model value names a config file rather than a preset: it ends
 * in ".json" or holds a '/'. */
bool hfconfig_is_path(const char *value);

#endif
