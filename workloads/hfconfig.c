/*
 * hfconfig.c - Hugging Face config.json files as weft models.
 *
 * The JSON library is json-c (Debian's libjson-c-dev, pkg-config json-c,
 * 0.16 in bookworm main): it is in main on every Debian and Ubuntu release
 * weft builds on, is already linked by many base packages (so it costs no
 * new runtime package on most machines), reports the byte offset of a
 * syntax error, keeps integers as int64 apart from doubles (so 4096 and
 * 4096.5 are told apart), and iterates an object's keys in file order,
 * which the unknown-field warning needs.  weft's own sim/base/jsonflat.c
 * reads weft's own small JSON and stays; json-c is confined to this file.
 *
 * Every architecture is read by one function of the table `archs`, which
 * names the fields that change the cost (each mapped onto a model setting
 * or refused) and leaves the rest to the lists of harmless fields.  The
 * meaning of each field, and what a field leaves implicit, is from
 * transformers (src/transformers/models/<model>/configuration_<model>.py
 * and modeling_<model>.py, v4.5x):
 *  - LlamaMLP (and Mistral's, Mixtral's experts, Qwen2/3's, DeepseekV3MLP,
 *    Llama4TextMLP) is gated: down(act(gate(x)) * up(x)), three matrices,
 *    whatever `hidden_act` is; the activation is elementwise and does not
 *    change the cost, so silu and the gelu variants are all weft's swiglu.
 *  - LlamaAttention: q/k/v/o_proj bias = attention_bias; LlamaMLP: bias =
 *    mlp_bias.  Qwen2Attention: q/k/v bias=True always, o_proj bias=False.
 *    Qwen3Attention: q_norm/k_norm (RMSNorm over head_dim) always.
 *  - Qwen3MoeDecoderLayer: MoE when layer_idx not in mlp_only_layers and
 *    (layer_idx + 1) % decoder_sparse_step == 0, else a dense MLP of
 *    intermediate_size; experts of moe_intermediate_size.
 *  - DeepseekV3DecoderLayer: dense DeepseekV3MLP(intermediate_size) for
 *    layer_idx < first_k_dense_replace, else DeepseekV3MoE: n_routed_experts
 *    of moe_intermediate_size and shared experts of moe_intermediate_size *
 *    n_shared_experts; DeepseekV3Attention is MLA (q_lora_rank,
 *    kv_lora_rank, qk_nope/rope_head_dim, v_head_dim).  DeepSeek's own
 *    modeling_deepseek.py also asks layer_idx % moe_layer_freq == 0.
 *  - Llama4TextConfig: moe_layers = range(interleave_moe_layer_step - 1,
 *    L, step) (the last layer of each step), no_rope_layers[i] =
 *    int((i + 1) % no_rope_layer_interval != 0) (interval 4), layer_types
 *    "chunked_attention" where no_rope_layers[i] else "full_attention";
 *    Llama4TextMoe: experts of intermediate_size plus a shared expert
 *    Llama4TextMLP(intermediate_size); dense layers Llama4TextMLP(
 *    intermediate_size_mlp).
 *  - GptOssConfig: layer_types alternate sliding_attention (window
 *    sliding_window) and full_attention; GptOssAttention has biases on
 *    q/k/v/o (attention_bias) and a learned sink per head.
 *
 * A window or chunk that this weft has no setting for is not refused at
 * once: attention limited to W tokens equals full causal attention while
 * the sequence is at most W tokens, so the limit is handed back
 * (hfconfig_note.seq_limit) and checked against the sequence the user
 * gives.
 */
#include "workloads/hfconfig.h"

#include <json-c/json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sim/base/infile.h"
#include "sim/base/xalloc.h"

/* A config.json is a few kB; a file of more is not one. */
#define HF_MAX_BYTES (1L << 20)
#define HF_MAX_SEEN 96

struct rd {
  const char *path;
  struct json_object *obj; /* the object read (text_config for Llama 4) */
  const char *prefix;      /* "" or "text_config." */
  const char *seen[HF_MAX_SEEN]; /* fields of `obj` read */
  int n_seen;
  struct model *m;
  struct hfconfig_note *note;
  struct weft_err *err;
};

/* ---- reading fields ---------------------------------------------------- */

static void mark(struct rd *r, const char *f)
{
  if (r->n_seen < HF_MAX_SEEN)
    r->seen[r->n_seen++] = f;
}

/* The field's value, or NULL when absent or null. */
static struct json_object *get(struct rd *r, const char *f)
{
  struct json_object *v = NULL;
  mark(r, f);
  if (!json_object_object_get_ex(r->obj, f, &v))
    return NULL;
  return v; /* NULL for a JSON null */
}

static int bad(struct rd *r, const char *f, const char *fmt, const char *what)
{
  return weft_errf(r->err, WEFT_EINVAL, "%s: field '%s%s': %s%s", r->path,
                   r->prefix, f, fmt, what ? what : "");
}

/* An integer field; `*have` false (and 0 returned) when absent. */
static int get_long(struct rd *r, const char *f, long *v, bool *have)
{
  struct json_object *o = get(r, f);
  *have = o != NULL;
  if (!o)
    return 0;
  if (!json_object_is_type(o, json_type_int))
    return bad(r, f, "expected a whole number", NULL);
  int64_t x = json_object_get_int64(o);
  if (x < 0 || x > (int64_t)1 << 40)
    return bad(r, f, "out of range", NULL);
  *v = (long)x;
  return 0;
}

static int need_long(struct rd *r, const char *f, long *v)
{
  bool have;
  int rc = get_long(r, f, v, &have);
  if (!rc && !have)
    rc = weft_errf(r->err, WEFT_EINVAL, "%s: field '%s%s' is missing",
                   r->path, r->prefix, f);
  return rc;
}

static int get_bool(struct rd *r, const char *f, bool *v)
{
  struct json_object *o = get(r, f);
  if (!o)
    return 0;
  if (!json_object_is_type(o, json_type_boolean))
    return bad(r, f, "expected true or false", NULL);
  *v = json_object_get_boolean(o);
  return 0;
}

/* ---- setting the model -------------------------------------------------- */

/* Set weft's setting `key` from field `f`; a setting this weft lacks is a
 * refusal that says what the field is. */
static int set(struct rd *r, const char *key, const char *f, const char *what,
               const char *value)
{
  int k = model_key_from_name(key);
  if (k < 0)
    return weft_errf(r->err, WEFT_EINVAL, "%s: field '%s%s' (%s) is not "
                     "supported by this weft", r->path, r->prefix, f, what);
  char origin[WEFT_MAX_ORIGIN];
  snprintf(origin, sizeof origin, "%s: field '%s%s'", r->path, r->prefix, f);
  return model_set(r->m, (enum model_key)k, value, origin, r->err);
}

static int set_long(struct rd *r, const char *key, const char *f,
                    const char *what, long v)
{
  char buf[32];
  snprintf(buf, sizeof buf, "%ld", v);
  return set(r, key, f, what, buf);
}

/* A setting whose default (`dflt`) needs no key: a weft without the key
 * still reads configs that leave it at its default. */
static int set_opt(struct rd *r, const char *key, const char *f,
                   const char *what, long v, long dflt)
{
  if (v == dflt && model_key_from_name(key) < 0)
    return 0;
  return set_long(r, key, f, what, v);
}

static bool have_key(const char *key) { return model_key_from_name(key) >= 0; }

/* Exact only up to `limit` tokens of sequence (see the top of the file). */
static void limit_seq(struct rd *r, long limit, const char *f,
                      const char *what)
{
  if (r->note->seq_limit && r->note->seq_limit <= limit)
    return;
  r->note->seq_limit = limit;
  snprintf(r->note->seq_limit_why, sizeof r->note->seq_limit_why,
           "%s: field '%s%s' (%s of %ld tokens) is not supported by this "
           "weft; it equals full attention only up to --seq %ld", r->path,
           r->prefix, f, what, limit, limit);
}

/* ---- the parts every architecture shares ------------------------------- */

/* The dense Transformer of LlamaModel: sizes, activation, tying. */
static int read_common(struct rd *r)
{
  long layers, hidden, heads, kv, ffn, vocab, hd;
  bool have_kv, have_hd;
  int rc;
  if ((rc = set(r, "style", "architectures", "", "llama")))
    return rc;
  if ((rc = need_long(r, "num_hidden_layers", &layers)) ||
      (rc = need_long(r, "hidden_size", &hidden)) ||
      (rc = need_long(r, "num_attention_heads", &heads)) ||
      (rc = need_long(r, "vocab_size", &vocab)) ||
      (rc = get_long(r, "num_key_value_heads", &kv, &have_kv)) ||
      (rc = get_long(r, "head_dim", &hd, &have_hd)))
    return rc;
  if ((rc = set_long(r, "layers", "num_hidden_layers", "", layers)) ||
      (rc = set_long(r, "hidden", "hidden_size", "", hidden)) ||
      (rc = set_long(r, "heads", "num_attention_heads", "", heads)) ||
      (rc = set_long(r, "vocab", "vocab_size", "", vocab)))
    return rc;
  /* LlamaConfig: num_key_value_heads None means multi-head attention. */
  if (have_kv && (rc = set_long(r, "kv_heads", "num_key_value_heads", "",
                                kv)))
    return rc;
  /* LlamaAttention: head_dim = getattr(config, "head_dim", hidden //
   * heads); set only when it differs, as the presets do. */
  if (have_hd && heads > 0 && hd != hidden / heads &&
      (rc = set_long(r, "head_dim", "head_dim", "", hd)))
    return rc;
  bool have_ffn;
  if ((rc = get_long(r, "intermediate_size", &ffn, &have_ffn)))
    return rc;
  if (have_ffn && (rc = set_long(r, "ffn", "intermediate_size", "", ffn)))
    return rc;
  struct json_object *act = get(r, "hidden_act");
  if (act) {
    const char *a = json_object_get_string(act);
    if (!json_object_is_type(act, json_type_string) ||
        (strcmp(a, "silu") != 0 && strcmp(a, "swish") != 0 &&
         strncmp(a, "gelu", 4) != 0))
      return bad(r, "hidden_act", "weft's FFNs are gated (silu or gelu "
                 "variants); not ", json_object_get_string(act));
  }
  if ((rc = set(r, "ffn_kind", "hidden_act", "", "swiglu")))
    return rc;
  /* Every config class here defaults tie_word_embeddings to False. */
  bool tied = false;
  if ((rc = get_bool(r, "tie_word_embeddings", &tied)))
    return rc;
  if ((rc = set(r, "tied", "tie_word_embeddings", "", tied ? "yes" : "no")))
    return rc;
  /* weft simulates no dropout: a rate of zero is the only one it honours. */
  static const char *const drops[] = {"attention_dropout", "hidden_dropout",
                                      "dropout", NULL};
  for (int i = 0; drops[i]; i++) {
    struct json_object *d = get(r, drops[i]);
    if (d && json_object_get_double(d) != 0.0)
      return bad(r, drops[i], "weft simulates no dropout; only 0 is "
                 "supported", NULL);
  }
  return 0;
}

/* attention_bias of LlamaAttention and its descendants: q, k, v and o.
 * NEEDSWORK: the output projection's bias (hidden values a layer, 0.0001 %
 * of gpt-oss-20b) has no setting in this weft; it is left out, as the
 * gpt-oss presets leave it out (model.c), and set when an `out_bias`
 * setting exists. */
static int read_attention_bias(struct rd *r)
{
  bool b = false;
  int rc = get_bool(r, "attention_bias", &b);
  if (rc || !b)
    return rc;
  if ((rc = set(r, "qkv_bias", "attention_bias", "", "yes")))
    return rc;
  if (!have_key("out_bias"))
    return 0;
  return set(r, "out_bias", "attention_bias",
             "a bias on the attention's output projection", "yes");
}

static int refuse_true(struct rd *r, const char *f, const char *what)
{
  bool b = false;
  int rc = get_bool(r, f, &b);
  if (!rc && b)
    rc = weft_errf(r->err, WEFT_EINVAL, "%s: field '%s%s' (%s) is not "
                   "supported by this weft", r->path, r->prefix, f, what);
  return rc;
}

/* A per-layer pattern: `full[i]` for layers of full attention, the others
 * windowed or chunked.  Returns the period N (full iff (i + 1) % N == 0),
 * 0 when no layer is full, -1 when every layer is full, -2 when irregular. */
static long pattern_period(const bool *full, long n)
{
  long first = -1, nfull = 0;
  for (long i = 0; i < n; i++)
    if (full[i]) {
      nfull++;
      if (first < 0)
        first = i;
    }
  if (nfull == 0)
    return 0;
  if (nfull == n)
    return -1;
  long period = first + 1;
  for (long i = 0; i < n; i++)
    if (full[i] != ((i + 1) % period == 0))
      return -2;
  return period;
}

/* Windowed (or chunked: `chunk`) attention of `width` tokens on the layers
 * that `period` does not make full (0: all of them). */
static int set_window(struct rd *r, const char *f, long width, long period,
                      bool chunk)
{
  const char *key = chunk ? "attn_chunk" : "window";
  const char *what = chunk ? "chunked attention" : "sliding-window attention";
  int rc;
  if (!have_key(key) || (period > 0 && !have_key("full_every"))) {
    limit_seq(r, width, f, what);
    return 0;
  }
  if ((rc = set_long(r, key, f, what, width)))
    return rc;
  if (period > 0)
    rc = set_long(r, "full_every", "layer_types", "full-attention layers "
                  "among windowed ones", period);
  return rc;
}

/* layer_types (GPT-OSS, newer Qwen/Llama configs): "full_attention" or
 * one windowed kind; returns the period as pattern_period, and 0 (every
 * layer windowed, as when the window is a single setting) when absent. */
static int read_layer_types(struct rd *r, long layers, long *out_period)
{
  struct json_object *lt = get(r, "layer_types");
  *out_period = 0;
  if (!lt)
    return 0;
  if (!json_object_is_type(lt, json_type_array) ||
      (long)json_object_array_length(lt) != layers)
    return bad(r, "layer_types", "expected one entry per layer "
               "(num_hidden_layers)", NULL);
  bool *full = xcalloc((size_t)layers, sizeof *full);
  for (long i = 0; i < layers; i++) {
    const char *s = json_object_get_string(json_object_array_get_idx(lt, i));
    full[i] = s && strcmp(s, "full_attention") == 0;
    if (!s || (!full[i] && strcmp(s, "sliding_attention") != 0 &&
               strcmp(s, "chunked_attention") != 0)) {
      free(full);
      return bad(r, "layer_types", "unknown attention type ", s ? s : "?");
    }
  }
  long p = pattern_period(full, layers);
  free(full);
  if (p == -2)
    return bad(r, "layer_types", "weft's windowed layers follow one period "
               "(every Nth layer full); this pattern is irregular", NULL);
  *out_period = p;
  return 0;
}

/* sliding_window with use_sliding_window (Qwen2/3) or alone (Mistral,
 * Mixtral), and layer_types (GPT-OSS). */
static int read_sliding(struct rd *r, bool gated_by_use)
{
  long w = 0, period;
  bool have_w, use = !gated_by_use;
  int rc;
  if ((rc = get_long(r, "sliding_window", &w, &have_w)) ||
      (gated_by_use && (rc = get_bool(r, "use_sliding_window", &use))) ||
      (rc = read_layer_types(r, r->m->layers, &period)))
    return rc;
  mark(r, "max_window_layers");
  if (!have_w || !use || period == -1)
    return 0; /* full attention in every layer */
  if (gated_by_use) {
    /* Qwen2Attention windows layers >= max_window_layers only; a prefix of
     * full layers is no period weft has. */
    long mwl;
    bool have_mwl;
    if ((rc = get_long(r, "max_window_layers", &mwl, &have_mwl)))
      return rc;
    if (have_mwl && mwl > 0 && mwl < r->m->layers)
      return bad(r, "max_window_layers", "a prefix of full-attention layers "
                 "before windowed ones is not supported by this weft", NULL);
    if (have_mwl && mwl >= r->m->layers)
      return 0;
  }
  return set_window(r, "sliding_window", w, period, false);
}

/* The FFN sizes of a model whose MoE layers have experts of `expert_ffn`
 * (field `ef`) and whose dense layers have `dense_ffn` (field `df`);
 * `any_dense` when some layer is dense. */
static int set_ffns(struct rd *r, long dense_ffn, const char *df,
                    long expert_ffn, const char *ef, bool any_dense)
{
  int rc;
  if (have_key("moe_ffn")) {
    if ((rc = set_long(r, "ffn", df, "", dense_ffn)))
      return rc;
    return set_long(r, "moe_ffn", ef, "", expert_ffn);
  }
  /* Without moe_ffn the experts are of size ffn: exact when no layer is
   * dense or the sizes agree. */
  if (any_dense && dense_ffn != expert_ffn)
    return set_long(r, "moe_ffn", ef, "experts smaller than the dense FFN",
                    expert_ffn);
  return set_long(r, "ffn", ef, "", expert_ffn);
}

/* ---- the architectures -------------------------------------------------- */

static int read_llama(struct rd *r)
{
  int rc = read_common(r);
  if (!rc)
    rc = read_attention_bias(r);
  if (!rc)
    rc = refuse_true(r, "mlp_bias", "biases in the FFN");
  if (!rc && !r->m->set[MK_FFN])
    rc = need_long(r, "intermediate_size", &(long){0});
  return rc;
}

static int read_mistral(struct rd *r)
{
  int rc = read_common(r);
  if (!rc && !r->m->set[MK_FFN])
    rc = need_long(r, "intermediate_size", &(long){0});
  return rc ? rc : read_sliding(r, false);
}

/* Mixtral: MistralModel with MixtralSparseMoeBlock (num_local_experts of
 * intermediate_size, top num_experts_per_tok) in every layer. */
static int read_mixtral(struct rd *r)
{
  long e, k;
  int rc = read_mistral(r);
  if (!rc)
    rc = need_long(r, "num_local_experts", &e);
  if (!rc)
    rc = need_long(r, "num_experts_per_tok", &k);
  if (!rc)
    rc = set_long(r, "experts", "num_local_experts", "", e);
  if (!rc)
    rc = set_long(r, "topk", "num_experts_per_tok", "", k);
  return rc;
}

static int read_qwen2(struct rd *r)
{
  int rc = read_common(r);
  if (!rc && !r->m->set[MK_FFN])
    rc = need_long(r, "intermediate_size", &(long){0});
  if (!rc) /* Qwen2Attention: q/k/v_proj bias=True, o_proj bias=False */
    rc = set(r, "qkv_bias", "architectures", "", "yes");
  return rc ? rc : read_sliding(r, true);
}

static int read_qwen3_attention(struct rd *r)
{
  /* Qwen3Config's head_dim defaults to 128, not hidden / heads. */
  int rc;
  if (!get(r, "head_dim") && r->m->hidden != 128 * r->m->heads &&
      (rc = set_long(r, "head_dim", "head_dim", "", 128)))
    return rc;
  if ((rc = read_attention_bias(r)))
    return rc;
  /* Qwen3Attention.q_norm / k_norm: RMSNorm over head_dim. */
  if ((rc = set(r, "qk_norm", "architectures", "", "yes")))
    return rc;
  return read_sliding(r, true);
}

static int read_qwen3(struct rd *r)
{
  int rc = read_common(r);
  if (!rc && !r->m->set[MK_FFN])
    rc = need_long(r, "intermediate_size", &(long){0});
  return rc ? rc : read_qwen3_attention(r);
}

static int read_qwen3_moe(struct rd *r)
{
  long e, k, moe_ffn, ffn, step = 1;
  bool have;
  int rc = read_common(r);
  if (rc || (rc = read_qwen3_attention(r)) ||
      (rc = need_long(r, "num_experts", &e)) ||
      (rc = need_long(r, "num_experts_per_tok", &k)) ||
      (rc = need_long(r, "moe_intermediate_size", &moe_ffn)) ||
      (rc = need_long(r, "intermediate_size", &ffn)) ||
      (rc = get_long(r, "decoder_sparse_step", &step, &have)))
    return rc;
  if (step < 1)
    return bad(r, "decoder_sparse_step", "must be at least 1", NULL);
  /* mlp_only_layers: weft has dense layers only as a prefix. */
  long dense = 0;
  struct json_object *mlp = get(r, "mlp_only_layers");
  if (mlp) {
    if (!json_object_is_type(mlp, json_type_array))
      return bad(r, "mlp_only_layers", "expected a list of layers", NULL);
    long n = (long)json_object_array_length(mlp);
    for (long i = 0; i < n; i++) {
      struct json_object *x = json_object_array_get_idx(mlp, i);
      if (!json_object_is_type(x, json_type_int) ||
          json_object_get_int64(x) != i)
        return bad(r, "mlp_only_layers", "weft's dense layers are the first "
                   "N layers; this list is not 0, 1, ..., N-1", NULL);
    }
    dense = n;
  }
  if (dense > 0 && step > 1)
    return bad(r, "mlp_only_layers", "dense first layers together with "
               "decoder_sparse_step > 1 are not supported by this weft",
               NULL);
  if ((rc = set_long(r, "experts", "num_experts", "", e)) ||
      (rc = set_long(r, "topk", "num_experts_per_tok", "", k)) ||
      (rc = set_ffns(r, ffn, "intermediate_size", moe_ffn,
                     "moe_intermediate_size", dense > 0 || step > 1)) ||
      (rc = set_opt(r, "dense_layers", "mlp_only_layers", "dense first "
                    "layers", dense, 0)))
    return rc;
  return set_opt(r, "moe_every", "decoder_sparse_step", "an MoE layer every "
                 "Nth layer", step, 1);
}

static int read_deepseek_v3(struct rd *r)
{
  long e, k, moe_ffn, ffn, shared = 0, first = 0, freq = 1, groups = 0,
       tgroups = 0, qlora = 0, kvlora, rope, nope, v, mtp = 0;
  bool have;
  int rc = read_common(r);
  if (rc || (rc = read_attention_bias(r)) ||
      (rc = need_long(r, "n_routed_experts", &e)) ||
      (rc = need_long(r, "num_experts_per_tok", &k)) ||
      (rc = need_long(r, "moe_intermediate_size", &moe_ffn)) ||
      (rc = need_long(r, "intermediate_size", &ffn)) ||
      (rc = get_long(r, "n_shared_experts", &shared, &have)) ||
      (rc = get_long(r, "first_k_dense_replace", &first, &have)) ||
      (rc = get_long(r, "moe_layer_freq", &freq, &have)) ||
      (rc = get_long(r, "n_group", &groups, &have)) ||
      (rc = get_long(r, "topk_group", &tgroups, &have)) ||
      (rc = get_long(r, "q_lora_rank", &qlora, &have)) ||
      (rc = need_long(r, "kv_lora_rank", &kvlora)) ||
      (rc = need_long(r, "qk_rope_head_dim", &rope)) ||
      (rc = need_long(r, "qk_nope_head_dim", &nope)) ||
      (rc = need_long(r, "v_head_dim", &v)) ||
      (rc = get_long(r, "num_nextn_predict_layers", &mtp, &have)))
    return rc;
  if (shared > WEFT_MAX_EXPERTS)
    return bad(r, "n_shared_experts", "out of range", NULL);
  /* modeling_deepseek.py: MoE when layer_idx % moe_layer_freq == 0, the
   * first of each group; weft's moe_every makes it the last. */
  if (freq != 1)
    return bad(r, "moe_layer_freq", "only 1 is supported (DeepSeek's MoE "
               "layer is the first of each group, weft's the last)", NULL);
  /* n_group 1 with topk_group 1 is no grouping. */
  if (groups <= 1 && tgroups <= 1)
    groups = tgroups = 0;
  if ((rc = set_long(r, "experts", "n_routed_experts", "", e)) ||
      (rc = set_long(r, "topk", "num_experts_per_tok", "", k)) ||
      (rc = set_ffns(r, ffn, "intermediate_size", moe_ffn,
                     "moe_intermediate_size", first > 0)) ||
      (rc = set_opt(r, "shared_ffn", "n_shared_experts", "shared experts",
                    shared * moe_ffn, 0)) ||
      (rc = set_opt(r, "dense_layers", "first_k_dense_replace", "dense first "
                    "layers", first, 0)) ||
      (rc = set_opt(r, "expert_groups", "n_group", "group-limited routing",
                    groups, 0)) ||
      (rc = set_opt(r, "topk_groups", "topk_group", "group-limited routing",
                    tgroups, 0)) ||
      (rc = set_long(r, "kv_lora", "kv_lora_rank", "multi-head latent "
                     "attention", kvlora)) ||
      (rc = set_opt(r, "q_lora", "q_lora_rank", "multi-head latent "
                    "attention", qlora, 0)) ||
      (rc = set_long(r, "rope_dim", "qk_rope_head_dim", "multi-head latent "
                     "attention", rope)) ||
      (rc = set_long(r, "nope_dim", "qk_nope_head_dim", "multi-head latent "
                     "attention", nope)) ||
      (rc = set_long(r, "v_dim", "v_head_dim", "multi-head latent "
                     "attention", v)))
    return rc;
  return set_opt(r, "mtp_layers", "num_nextn_predict_layers",
                 "multi-token prediction", mtp, 0);
}

/* GPT-OSS: every layer MoE (num_local_experts of intermediate_size, top
 * num_experts_per_tok), windows per layer_types.  NEEDSWORK: its experts'
 * biases (gate_up_proj_bias, down_proj_bias: 0.03 % of gpt-oss-20b's
 * parameters) and the per-head attention sinks are not modelled. */
static int read_gpt_oss(struct rd *r)
{
  long e, k, w, period;
  bool have_w;
  int rc = read_common(r);
  if (rc || (rc = read_attention_bias(r)) ||
      (rc = need_long(r, "num_local_experts", &e)) ||
      (rc = need_long(r, "num_experts_per_tok", &k)) ||
      (rc = need_long(r, "intermediate_size", &(long){0})) ||
      (rc = set_long(r, "experts", "num_local_experts", "", e)) ||
      (rc = set_long(r, "topk", "num_experts_per_tok", "", k)) ||
      (rc = get_long(r, "sliding_window", &w, &have_w)) ||
      (rc = read_layer_types(r, r->m->layers, &period)))
    return rc;
  mark(r, "experts_per_token"); /* the same as num_experts_per_tok */
  if (!have_w || period == -1)
    return 0;
  return set_window(r, "sliding_window", w, period, false);
}

/* The Llama 4 text model (Llama4TextConfig). */
static int read_llama4_text(struct rd *r)
{
  long e, k, ffn, ffn_mlp, step = 1, chunk = 0, interval = 4;
  bool have, have_chunk, qkn = false;
  int rc = read_common(r);
  if (rc || (rc = read_attention_bias(r)) ||
      (rc = need_long(r, "num_local_experts", &e)) ||
      (rc = need_long(r, "num_experts_per_tok", &k)) ||
      (rc = need_long(r, "intermediate_size", &ffn)) ||
      (rc = need_long(r, "intermediate_size_mlp", &ffn_mlp)) ||
      (rc = get_long(r, "interleave_moe_layer_step", &step, &have)) ||
      (rc = get_long(r, "attention_chunk_size", &chunk, &have_chunk)) ||
      (rc = get_long(r, "no_rope_layer_interval", &interval, &have)) ||
      (rc = get_bool(r, "use_qk_norm", &qkn)))
    return rc;
  long layers = r->m->layers;
  if (step < 1 || interval < 1)
    return bad(r, step < 1 ? "interleave_moe_layer_step"
                           : "no_rope_layer_interval", "must be at least 1",
               NULL);
  /* moe_layers, when given, must be the default of the step. */
  struct json_object *ml = get(r, "moe_layers");
  if (ml) {
    long n = json_object_is_type(ml, json_type_array)
                 ? (long)json_object_array_length(ml) : -1;
    bool ok = n == (layers - (step - 1) + step - 1) / step;
    for (long i = 0; ok && i < n; i++)
      ok = json_object_get_int64(json_object_array_get_idx(ml, i)) ==
           step - 1 + i * step;
    if (!ok)
      return bad(r, "moe_layers", "weft's MoE layers are every "
                 "interleave_moe_layer_step-th layer; this list is not",
                 NULL);
  }
  /* Full-attention (NoPE) layers: no_rope_layers[i] == 0. */
  bool *full = xcalloc((size_t)layers, sizeof *full);
  struct json_object *nr = get(r, "no_rope_layers");
  long nnr = nr && json_object_is_type(nr, json_type_array)
                 ? (long)json_object_array_length(nr) : 0;
  if (nr && !json_object_is_type(nr, json_type_array)) {
    free(full);
    return bad(r, "no_rope_layers", "expected a list", NULL);
  }
  if (nnr > 0 && nnr != layers) {
    free(full);
    return bad(r, "no_rope_layers", "expected one entry per layer", NULL);
  }
  for (long i = 0; i < layers; i++)
    full[i] = nnr ? json_object_get_int64(json_object_array_get_idx(nr, i))
                        == 0
                  : (i + 1) % interval == 0;
  long period = pattern_period(full, layers);
  free(full);
  long lt_period;
  if ((rc = read_layer_types(r, layers, &lt_period)))
    return rc;
  if (period == -2)
    return bad(r, "no_rope_layers", "weft's full-attention layers follow one "
               "period (every Nth layer); this pattern is irregular", NULL);
  if (get(r, "layer_types") && lt_period != period)
    return bad(r, "layer_types", "disagrees with no_rope_layers", NULL);
  bool any_dense = step > 1;
  if ((rc = set_long(r, "experts", "num_local_experts", "", e)) ||
      (rc = set_long(r, "topk", "num_experts_per_tok", "", k)) ||
      (rc = set_ffns(r, ffn_mlp, "intermediate_size_mlp", ffn,
                     "intermediate_size", any_dense)) ||
      /* Llama4TextMoe.shared_expert: Llama4TextMLP(intermediate_size). */
      (rc = set_long(r, "shared_ffn", "intermediate_size", "the shared "
                     "expert beside the routed ones", ffn)) ||
      (rc = set_opt(r, "moe_every", "interleave_moe_layer_step", "an MoE "
                    "layer every Nth layer", step, 1)))
    return rc;
  /* use_qk_norm: Llama4TextL2Norm of q and k on the RoPE layers, without
   * weights: elementwise, like the rotary embedding it follows, which weft
   * does not cost apart either; not weft's qk_norm (Qwen3's RMSNorm with
   * weights on every layer), as the llama4-scout preset has it. */
  (void)qkn;
  if (have_chunk && chunk > 0 && period != -1)
    rc = set_window(r, "attention_chunk_size", chunk, period, true);
  return rc;
}

/* ---- fields known not to change the cost ------------------------------- */

/* Position encodings (elementwise), norms' epsilon, initialization, token
 * ids, inference settings, bookkeeping.  quantization_config is how the
 * published weights are stored for inference (DeepSeek-V3's FP8 blocks,
 * gpt-oss's MXFP4 experts); training precision is --dtype.  torch_dtype is
 * the checkpoint's storage type: weft trains in bf16 unless --dtype says
 * otherwise, as its presets do. */
static const char *const harmless[] = {
    "_name_or_path", "architectures", "model_type", "transformers_version",
    "torch_dtype", "dtype", "use_cache", "max_position_embeddings",
    "rope_theta", "rope_scaling", "rope_parameters", "rope_type",
    "partial_rotary_factor", "rope_interleave", "rms_norm_eps",
    "initializer_range", "bos_token_id", "eos_token_id", "pad_token_id",
    "pretraining_tp", "auto_map", "quantization_config",
    "output_router_logits", "router_aux_loss_coef", "router_jitter_noise",
    "aux_loss_alpha", "seq_aux", "norm_topk_prob", "topk_method",
    "scoring_func", "routed_scaling_factor", "ep_size",
    /* GPT-OSS: the clamp of its SwiGLU, YaRN's base context */
    "swiglu_limit", "initial_context_length",
    /* Llama 4: attention temperature of long contexts, cache layout */
    "attn_temperature_tuning", "floor_scale", "attn_scale",
    "cache_implementation", "for_llm_compressor",
    "_attn_implementation_autoset",
    /* Llama 4's multimodal wrapper: the text model is what weft runs */
    "vision_config", "boi_token_index", "eoi_token_index",
    "image_token_index", "text_config",
    NULL};

static bool in_list(const char *f, const char *const *list, int n)
{
  for (int i = 0; n < 0 ? list[i] != NULL : i < n; i++)
    if (strcmp(list[i], f) == 0)
      return true;
  return false;
}

/* Name in note->unknown every field of `obj` neither read nor harmless. */
static void note_unknown(struct rd *r)
{
  json_object_object_foreach(r->obj, key, val) {
    (void)val;
    if (in_list(key, r->seen, r->n_seen) || in_list(key, harmless, -1))
      continue;
    size_t n = strlen(r->note->unknown);
    snprintf(r->note->unknown + n, sizeof r->note->unknown - n, "%s%s%s",
             n ? ", " : "", r->prefix, key);
  }
}

/* ---- the table and the reader ------------------------------------------ */

static const struct {
  const char *arch;
  const char *nested; /* the text model's object, or NULL */
  int (*read)(struct rd *r);
} archs[] = {
    {"LlamaForCausalLM", NULL, read_llama},
    {"MistralForCausalLM", NULL, read_mistral},
    {"MixtralForCausalLM", NULL, read_mixtral},
    {"Qwen2ForCausalLM", NULL, read_qwen2},
    {"Qwen3ForCausalLM", NULL, read_qwen3},
    {"Qwen3MoeForCausalLM", NULL, read_qwen3_moe},
    {"DeepseekV3ForCausalLM", NULL, read_deepseek_v3},
    {"GptOssForCausalLM", NULL, read_gpt_oss},
    {"Llama4ForConditionalGeneration", "text_config", read_llama4_text},
    {"Llama4ForCausalLM", NULL, read_llama4_text},
};
#define N_ARCHS ((int)(sizeof archs / sizeof *archs))

bool hfconfig_is_path(const char *value)
{
  size_t n = strlen(value);
  return strchr(value, '/') || (n > 5 && strcmp(value + n - 5, ".json") == 0);
}

/* The whole file, NUL-terminated; the caller frees it. */
static char *slurp(const char *path, size_t *out_len, struct weft_err *err)
{
  FILE *f = infile_open(path, err);
  if (!f)
    return NULL;
  char *buf = xmalloc(HF_MAX_BYTES + 1);
  size_t n = fread(buf, 1, HF_MAX_BYTES + 1, f);
  bool ioerr = ferror(f);
  fclose(f);
  if (ioerr || n > HF_MAX_BYTES) {
    free(buf);
    weft_errf(err, ioerr ? WEFT_EIO : WEFT_ELIMIT, ioerr ? "%s: read error"
              : "%s: more than %ld bytes: not a config.json", path,
              HF_MAX_BYTES);
    return NULL;
  }
  buf[n] = '\0';
  *out_len = n;
  return buf;
}

static struct json_object *parse(const char *path, const char *buf,
                                 size_t len, struct weft_err *err)
{
  struct json_tokener *tok = json_tokener_new();
  struct json_object *root = json_tokener_parse_ex(tok, buf, (int)len);
  enum json_tokener_error je = json_tokener_get_error(tok);
  size_t end = json_tokener_get_parse_end(tok);
  json_tokener_free(tok);
  if (!root || je != json_tokener_success) {
    int line = 1;
    for (size_t i = 0; i < end && i < len; i++)
      line += buf[i] == '\n';
    json_object_put(root);
    weft_errf(err, WEFT_EINVAL, "%s:%d: not valid JSON: %s", path, line,
              je == json_tokener_success || je == json_tokener_continue
                  ? "unexpected end of file" : json_tokener_error_desc(je));
    return NULL;
  }
  /* Nothing but white space may follow the object. */
  for (size_t i = end; i < len; i++)
    if (buf[i] != ' ' && buf[i] != '\n' && buf[i] != '\r' && buf[i] != '\t') {
      json_object_put(root);
      weft_errf(err, WEFT_EINVAL, "%s: not valid JSON: text after the "
                "top-level object", path);
      return NULL;
    }
  if (!json_object_is_type(root, json_type_object)) {
    json_object_put(root);
    weft_errf(err, WEFT_EINVAL, "%s: not a config.json: the top level is "
              "not an object", path);
    return NULL;
  }
  return root;
}

/* The name: _name_or_path, else the file's name without .json
 * (the directory's name for a plain "config.json"). */
static void model_name(char *out, size_t size, const char *path,
                       struct json_object *root)
{
  struct json_object *np = NULL;
  const char *s = NULL;
  if (json_object_object_get_ex(root, "_name_or_path", &np) &&
      json_object_is_type(np, json_type_string))
    s = json_object_get_string(np);
  if (s && *s) {
    snprintf(out, size, "%s", s);
    return;
  }
  const char *base = strrchr(path, '/');
  base = base ? base + 1 : path;
  size_t n = strlen(base);
  if (n > 5 && strcmp(base + n - 5, ".json") == 0)
    n -= 5;
  if (n == 6 && strncmp(base, "config", 6) == 0 && base != path) {
    const char *end = base - 1, *start = end;
    while (start > path && start[-1] != '/')
      start--;
    if (end > start) {
      snprintf(out, size, "%.*s", (int)(end - start), start);
      return;
    }
  }
  snprintf(out, size, "%.*s", (int)n, base);
}

int hfconfig_read(struct model *m, struct hfconfig_note *note,
                  const char *path, struct weft_err *err)
{
  size_t len = 0;
  char *buf = slurp(path, &len, err);
  if (!buf)
    return err ? err->code : WEFT_EIO;
  int rc = hfconfig_read_text(m, note, path, buf, len, err);
  free(buf);
  return rc;
}

int hfconfig_read_text(struct model *m, struct hfconfig_note *note,
                       const char *path, const char *text, size_t len,
                       struct weft_err *err)
{
  if (len > HF_MAX_BYTES)
    return weft_errf(err, WEFT_ELIMIT, "%s: more than %ld bytes: not a "
                     "config.json", path, HF_MAX_BYTES);
  struct json_object *root = parse(path, text, len, err);
  if (!root)
    return err ? err->code : WEFT_EINVAL;

  int rc = 0;
  struct model nm;
  struct hfconfig_note nn;
  memset(&nm, 0, sizeof nm);
  memset(&nn, 0, sizeof nn);
  /* weft's defaults, as a workload's <model> without a preset. */
  nm.dtype = DTYPE_BF16;
  nm.experts = nm.topk = 1;
  nm.ffn_kind = FFN_SWIGLU;
  for (int k = 0; k < MK_COUNT; k++)
    snprintf(nm.origin[k], sizeof nm.origin[k], "%s", path);
  model_name(nm.name, sizeof nm.name, path, root);

  struct rd r = {.path = path, .obj = root, .prefix = "", .m = &nm,
                 .note = &nn, .err = err};
  struct json_object *av = NULL, *a0 = NULL;
  const char *arch = NULL;
  if (json_object_object_get_ex(root, "architectures", &av) &&
      json_object_is_type(av, json_type_array) &&
      json_object_array_length(av) == 1 &&
      (a0 = json_object_array_get_idx(av, 0)) &&
      json_object_is_type(a0, json_type_string))
    arch = json_object_get_string(a0);
  int which = -1;
  for (int i = 0; arch && i < N_ARCHS; i++)
    if (strcmp(arch, archs[i].arch) == 0)
      which = i;
  if (!arch) {
    rc = weft_errf(err, WEFT_EINVAL, "%s: field 'architectures': expected a "
                   "list of one architecture name", path);
    goto out_put;
  }
  if (which < 0) {
    char known[512] = "";
    for (int i = 0; i < N_ARCHS; i++) {
      size_t n = strlen(known);
      snprintf(known + n, sizeof known - n, "%s%s", i ? ", " : "",
               archs[i].arch);
    }
    rc = weft_errf(err, WEFT_ENOTFOUND, "%s: field 'architectures': "
                   "architecture '%s' is not supported by this weft; "
                   "supported: %s", path, arch, known);
    goto out_put;
  }
  if (archs[which].nested) {
    struct json_object *t = NULL;
    if (!json_object_object_get_ex(root, archs[which].nested, &t) ||
        !json_object_is_type(t, json_type_object)) {
      rc = weft_errf(err, WEFT_EINVAL, "%s: field '%s' is missing (%s keeps "
                     "its text model there)", path, archs[which].nested,
                     arch);
      goto out_put;
    }
    /* The wrapper's own fields: tying is the outer config's. */
    bool tied = false;
    if ((rc = get_bool(&r, "tie_word_embeddings", &tied)))
      goto out_put;
    note_unknown(&r);
    r.obj = t;
    r.prefix = "text_config.";
    r.n_seen = 0;
    if ((rc = archs[which].read(&r)))
      goto out_put;
    rc = set(&r, "tied", "tie_word_embeddings", "", tied ? "yes" : "no");
  } else {
    rc = archs[which].read(&r);
  }
  if (rc)
    goto out_put;
  note_unknown(&r);
  nm.seq = 0; /* not in a config.json: the caller asks for it */
  snprintf(nn.path, sizeof nn.path, "%s", path);
  *m = nm;
  *note = nn;
out_put:
  json_object_put(root);
  return rc;
}
