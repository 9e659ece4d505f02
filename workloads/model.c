/*
 * model.c - model presets and settings.
 *
 * Preset sources: the GPT models of Megatron-LM Table 1 (Narayanan et al.,
 * SC21; rows MEG21-T1-* of calibration.csv: sequence 2048, vocabulary 51200,
 * FFN 4h); GPT-3 175B (Brown et al. 2020, Table 2.1, with Megatron's padded
 * vocabulary of 51200); Llama 2 (Touvron et al. 2023, Table 1 and the
 * released configs: 7B/13B multi-head, 70B GQA with 8 KV heads, vocabulary
 * 32000, sequence 4096); Llama 3 (Llama Team 2024, Table 3: 8B, 70B, 405B,
 * 8 KV heads, vocabulary 128256, sequence 8192); Mixtral 8x7B (Jiang et al.
 * 2024, Table 1: 8 experts, top-2, FFN 14336, 8 KV heads).
 *
 * Presets of 2025 from the published Hugging Face configs (config.json,
 * fields in parentheses): Qwen3-8B and Qwen3-32B
 * (huggingface.co/Qwen/Qwen3-8B/blob/main/config.json and
 * Qwen/Qwen3-32B: num_hidden_layers, hidden_size, num_attention_heads,
 * num_key_value_heads, head_dim 128, intermediate_size, vocab_size 151936,
 * attention_bias false, tie_word_embeddings false; Qwen3's attention
 * normalizes q and k per head, Qwen3Attention.q_norm/k_norm in
 * transformers' models/qwen3/modeling_qwen3.py) with the 4096-token
 * sequence of Qwen3's general pre-training stage (Qwen3 Technical Report,
 * arXiv:2505.09388, Sec. 3.2); Mixtral-8x22B
 * (huggingface.co/mistralai/Mixtral-8x22B-v0.1/blob/main/config.json:
 * 56 layers, hidden 6144, 48 heads, 8 KV heads, intermediate 16384,
 * num_local_experts 8, num_experts_per_tok 2, vocab_size 32768 of the
 * v3 tokenizer, untied; the first community conversion,
 * mistral-community/Mixtral-8x22B-v0.1, has 32000, 0.01 B fewer
 * parameters) with the 4096-token sequence of the mixtral-8x7b preset.
 *
 * Mixture-of-experts presets of 2025 (config.json fields in parentheses):
 * DeepSeek-V3 (huggingface.co/deepseek-ai/DeepSeek-V3/blob/main/config.json,
 * and inference/configs/config_671B.json in github.com/deepseek-ai/
 * DeepSeek-V3: num_hidden_layers 61, hidden_size 7168, num_attention_heads
 * 128, intermediate_size 18432 of the first_k_dense_replace 3 dense layers,
 * moe_intermediate_size 2048, n_routed_experts 256, num_experts_per_tok 8,
 * n_shared_experts 1, n_group 8, topk_group 4, q_lora_rank 1536,
 * kv_lora_rank 512, qk_rope_head_dim 64, qk_nope_head_dim 128, v_head_dim
 * 128, vocab_size 129280, num_nextn_predict_layers 1, untied; its
 * 4096-token pre-training sequence, DeepSeek-V3 Technical Report,
 * arXiv:2412.19437, Sec. 4.2 "we set the maximum sequence length to 4K
 * during pre-training"); Qwen3-30B-A3B and Qwen3-235B-A22B
 * (huggingface.co/Qwen/Qwen3-30B-A3B/blob/main/config.json, and
 * Qwen/Qwen3-235B-A22B: num_hidden_layers 48 / 94, hidden_size 2048 /
 * 4096, num_attention_heads 32 / 64, num_key_value_heads 4, head_dim 128,
 * intermediate_size 6144 / 12288, moe_intermediate_size 768 / 1536,
 * num_experts 128, num_experts_per_tok 8, decoder_sparse_step 1,
 * mlp_only_layers [], vocab 151936, untied) with the 4096 tokens of the
 * dense Qwen3 presets; gpt-oss-20b and gpt-oss-120b
 * (huggingface.co/openai/gpt-oss-120b/blob/main/config.json and
 * openai/gpt-oss-20b: num_hidden_layers 36 / 24, num_local_experts 128 /
 * 32, hidden_size 2880, intermediate_size 2880, head_dim 64,
 * num_attention_heads 64, num_key_value_heads 8, num_experts_per_tok 4,
 * sliding_window 128 with layer_types alternating sliding_attention and
 * full_attention, attention_bias true, vocab_size 201088, untied, and
 * initial_context_length 4096, the sequence before YaRN's extension).
 * Not modelled in gpt-oss: the output projection's, experts' and router's
 * biases and the per-head attention sinks (36 x (2880 + 128 x 8640 + 128
 * + 64) = 39.9 M of 116.8 B in gpt-oss-120b, 0.03 %).  Llama 4 Scout
 * (huggingface.co/meta-llama/Llama-4-Scout-17B-16E/blob/main/config.json,
 * text_config: num_hidden_layers 48, hidden_size 5120,
 * num_attention_heads 40, num_key_value_heads 8, head_dim 128,
 * intermediate_size 8192 of an expert and of the shared expert
 * (transformers' Llama4TextMoe.shared_expert), intermediate_size_mlp
 * 16384 of a dense layer (none: interleave_moe_layer_step 1),
 * num_local_experts 16, num_experts_per_tok 1, vocab_size 202048,
 * attention_chunk_size 8192 on the RoPE layers, every 4th layer NoPE with
 * full attention (no_rope_layers), untied); sequence 8192, one attention
 * chunk: Meta's Llama 4 announcement (ai.meta.com/blog/
 * llama-4-multimodal-intelligence) gives 256K for Scout's pre- and
 * post-training long-context stages and no length for the bulk of
 * pre-training (set --seq 262144 for the former).  The vision encoder is
 * not modelled.
 */
#include "workloads/model.h"

#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "sim/base/names.h"
#include "sim/base/units.h"

#define GPT(nm, l, h, a)                                                       \
  {.name = nm, .layers = l, .hidden = h, .heads = a, .kv_heads = a,            \
   .ffn = 4 * (h), .vocab = 51200, .seq = 2048, .ffn_kind = FFN_GELU,          \
   .dtype = DTYPE_BF16, .experts = 1, .topk = 1, .gpt_style = true}
#define LLAMA(nm, l, h, a, kv, f, v, s)                                        \
  {.name = nm, .layers = l, .hidden = h, .heads = a, .kv_heads = kv,           \
   .ffn = f, .vocab = v, .seq = s, .ffn_kind = FFN_SWIGLU,                     \
   .dtype = DTYPE_BF16, .experts = 1, .topk = 1, .gpt_style = false}

#define QWEN3(nm, l, h, a, f)                                                  \
  {.name = nm, .layers = l, .hidden = h, .heads = a, .kv_heads = 8,            \
   .ffn = f, .vocab = 151936, .seq = 4096, .ffn_kind = FFN_SWIGLU,             \
   .dtype = DTYPE_BF16, .experts = 1, .topk = 1, .gpt_style = false,           \
   .head_dim = 128, .qk_norm = true, .tied = MO_NO}

/* Qwen3's MoE models: 4 KV heads, 128 experts of which 8 per token,
 * every layer MoE (decoder_sparse_step 1, mlp_only_layers empty). */
#define QWEN3_MOE(nm, l, h, a, f, mf)                                          \
  {.name = nm, .layers = l, .hidden = h, .heads = a, .kv_heads = 4,            \
   .ffn = f, .vocab = 151936, .seq = 4096, .ffn_kind = FFN_SWIGLU,             \
   .dtype = DTYPE_BF16, .experts = 128, .topk = 8, .gpt_style = false,         \
   .head_dim = 128, .qk_norm = true, .tied = MO_NO, .moe_ffn = mf}

/* GPT-OSS: hidden 2880, 64 heads of 64, 8 KV heads, experts of 2880,
 * top-4, a 128-token window on every other layer, biases on Q, K, V. */
#define GPT_OSS(nm, l, e)                                                      \
  {.name = nm, .layers = l, .hidden = 2880, .heads = 64, .kv_heads = 8,        \
   .ffn = 2880, .vocab = 201088, .seq = 4096, .ffn_kind = FFN_SWIGLU,          \
   .dtype = DTYPE_BF16, .experts = e, .topk = 4, .gpt_style = false,           \
   .head_dim = 64, .qkv_bias = MO_YES, .tied = MO_NO, .window = 128,           \
   .full_every = 2}

static const struct model presets[] = {
    GPT("gpt-1.7b", 24, 2304, 24),      GPT("gpt-3.6b", 30, 3072, 32),
    GPT("gpt-7.5b", 36, 4096, 32),      GPT("gpt-18.4b", 40, 6144, 48),
    GPT("gpt-39.1b", 48, 8192, 64),     GPT("gpt-76.1b", 60, 10240, 80),
    GPT("gpt-145.6b", 80, 12288, 96),   GPT("gpt-310.1b", 96, 16384, 128),
    GPT("gpt-529.6b", 105, 20480, 128), GPT("gpt-1008b", 128, 25600, 160),
    GPT("gpt3-175b", 96, 12288, 96),
    LLAMA("llama2-7b", 32, 4096, 32, 32, 11008, 32000, 4096),
    LLAMA("llama2-13b", 40, 5120, 40, 40, 13824, 32000, 4096),
    LLAMA("llama2-70b", 80, 8192, 64, 8, 28672, 32000, 4096),
    LLAMA("llama3-8b", 32, 4096, 32, 8, 14336, 128256, 8192),
    LLAMA("llama3-70b", 80, 8192, 64, 8, 28672, 128256, 8192),
    LLAMA("llama3-405b", 126, 16384, 128, 8, 53248, 128256, 8192),
    {.name = "mixtral-8x7b", .layers = 32, .hidden = 4096, .heads = 32,
     .kv_heads = 8, .ffn = 14336, .vocab = 32000, .seq = 4096,
     .ffn_kind = FFN_SWIGLU, .dtype = DTYPE_BF16, .experts = 8, .topk = 2,
     .gpt_style = false},
    QWEN3("qwen3-8b", 36, 4096, 32, 12288),
    QWEN3("qwen3-32b", 64, 5120, 64, 25600),
    {.name = "mixtral-8x22b", .layers = 56, .hidden = 6144, .heads = 48,
     .kv_heads = 8, .ffn = 16384, .vocab = 32768, .seq = 4096,
     .ffn_kind = FFN_SWIGLU, .dtype = DTYPE_BF16, .experts = 8, .topk = 2,
     .gpt_style = false, .tied = MO_NO},
    {.name = "deepseek-v3", .layers = 61, .hidden = 7168, .heads = 128,
     .kv_heads = 128, .ffn = 18432, .vocab = 129280, .seq = 4096,
     .ffn_kind = FFN_SWIGLU, .dtype = DTYPE_BF16, .experts = 256, .topk = 8,
     .gpt_style = false, .tied = MO_NO, .moe_ffn = 2048, .shared_ffn = 2048,
     .dense_layers = 3, .expert_groups = 8, .topk_groups = 4, .q_lora = 1536,
     .kv_lora = 512, .rope_dim = 64, .nope_dim = 128, .v_dim = 128,
     .mtp_layers = 1},
    QWEN3_MOE("qwen3-30b-a3b", 48, 2048, 32, 6144, 768),
    QWEN3_MOE("qwen3-235b-a22b", 94, 4096, 64, 12288, 1536),
    GPT_OSS("gpt-oss-20b", 24, 32),
    GPT_OSS("gpt-oss-120b", 36, 128),
    {.name = "llama4-scout", .layers = 48, .hidden = 5120, .heads = 40,
     .kv_heads = 8, .ffn = 16384, .vocab = 202048, .seq = 8192,
     .ffn_kind = FFN_SWIGLU, .dtype = DTYPE_BF16, .experts = 16, .topk = 1,
     .gpt_style = false, .head_dim = 128, .tied = MO_NO, .moe_ffn = 8192,
     .shared_ffn = 8192, .attn_chunk = 8192, .full_every = 4},
};

#define N_PRESETS ((int)(sizeof presets / sizeof *presets))

int model_preset_count(void) { return N_PRESETS; }

const struct model *model_preset(int i)
{
  return i >= 0 && i < N_PRESETS ? &presets[i] : NULL;
}

int model_from_preset(struct model *m, const char *name,
                      struct weft_err *err)
{
  for (int i = 0; i < N_PRESETS; i++)
    if (strcasecmp(presets[i].name, name) == 0) {
      *m = presets[i];
      for (int k = 0; k < MK_COUNT; k++)
        snprintf(m->origin[k], sizeof m->origin[k], "model '%s'",
                 presets[i].name);
      return 0;
    }
  char known[1024] = "", hint[96] = "";
  int bd = 0;
  for (int i = 0; i < N_PRESETS; i++) {
    size_t n = strlen(known);
    snprintf(known + n, sizeof known - n, "%s%s", i ? ", " : "",
             presets[i].name);
    int d = names_distance(name, presets[i].name);
    if (names_close(name, presets[i].name) && (!hint[0] || d < bd)) {
      snprintf(hint, sizeof hint, " (did you mean '%s'?)", presets[i].name);
      bd = d;
    }
  }
  return weft_errf(err, WEFT_ENOTFOUND, "unknown model '%s'%s; known models: "
                   "%s", name, hint, known);
}

static const struct {
  const char *name;
  long min, max; /* for integer keys */
  const char *help; /* meaning, for the help (defaults: the preset's) */
} keys[MK_COUNT] = {
    [MK_LAYERS] = {"layers", 1, WEFT_MAX_LAYERS, "Transformer layers"},
    [MK_HIDDEN] = {"hidden", 1, WEFT_MAX_HIDDEN, "hidden size"},
    [MK_HEADS] = {"heads", 1, WEFT_MAX_HEADS, "attention heads"},
    [MK_KV_HEADS] = {"kv_heads", 1, WEFT_MAX_HEADS,
        "key/value heads (grouped-query attention; default: heads)"},
    [MK_FFN] = {"ffn", 1, 16 * WEFT_MAX_HIDDEN, "FFN hidden size"},
    [MK_FFN_KIND] = {"ffn_kind", 0, 0,
        "FFN: gelu (two matrices) or swiglu (three)"},
    [MK_VOCAB] = {"vocab", 1, WEFT_MAX_VOCAB, "vocabulary size"},
    [MK_SEQ] = {"seq", 1, WEFT_MAX_SEQ, "sequence length in tokens"},
    [MK_DTYPE] = {"dtype", 0, 0,
        "precision of weights, activations and GEMMs (fp8: the linear layers'"
        " GEMMs, as Transformer Engine)"},
    [MK_EXPERTS] = {"experts", 1, WEFT_MAX_EXPERTS,
        "experts per MoE layer (1: dense)"},
    [MK_TOPK] = {"topk", 1, WEFT_MAX_EXPERTS,
        "experts each token is routed to"},
    [MK_STYLE] = {"style", 0, 0,
        "gpt (LayerNorm, learned positions, tied embedding) or llama "
        "(RMSNorm, RoPE, untied)"},
    [MK_HEAD_DIM] = {"head_dim", 1, WEFT_MAX_HIDDEN,
        "width of an attention head (default: hidden/heads)"},
    [MK_QKV_BIAS] = {"qkv_bias", 0, 0,
        "biases on Q, K and V (Qwen2; default: the style's)"},
    [MK_QK_NORM] = {"qk_norm", 0, 0,
        "RMSNorm over each head of q and k (Qwen3; default: no)"},
    [MK_TIED] = {"tied", 0, 0,
        "output layer tied to the embedding (default: the style's)"},
    [MK_MOE_FFN] = {"moe_ffn", 1, 16 * WEFT_MAX_HIDDEN,
        "inner size of one routed expert (default: ffn)"},
    [MK_SHARED_FFN] = {"shared_ffn", 0, 16 * WEFT_MAX_HIDDEN,
        "inner size of the shared experts together (default: 0, none)"},
    [MK_DENSE_LAYERS] = {"dense_layers", 0, WEFT_MAX_LAYERS,
        "the first N layers have a dense FFN (default: 0)"},
    [MK_MOE_EVERY] = {"moe_every", 1, WEFT_MAX_LAYERS,
        "every Nth layer is MoE, the others dense (default: 1)"},
    [MK_EXPERT_GROUPS] = {"expert_groups", 0, WEFT_MAX_EXPERTS,
        "groups of experts for group-limited routing (default: 0, none)"},
    [MK_TOPK_GROUPS] = {"topk_groups", 0, WEFT_MAX_EXPERTS,
        "groups a token's experts come from (default: 0, any)"},
    [MK_Q_LORA] = {"q_lora", 0, WEFT_MAX_HIDDEN,
        "MLA: rank of the query's down-projection (0: none)"},
    [MK_KV_LORA] = {"kv_lora", 0, WEFT_MAX_HIDDEN,
        "multi-head latent attention's KV rank (default: 0, off)"},
    [MK_ROPE_DIM] = {"rope_dim", 1, WEFT_MAX_HIDDEN,
        "MLA: rotary part of a query/key head (default: 64)"},
    [MK_NOPE_DIM] = {"nope_dim", 1, WEFT_MAX_HIDDEN,
        "MLA: non-rotary part of a query/key head (default: head_dim)"},
    [MK_V_DIM] = {"v_dim", 1, WEFT_MAX_HIDDEN,
        "MLA: width of a value head (default: head_dim)"},
    [MK_MTP_LAYERS] = {"mtp_layers", 0, 64,
        "multi-token-prediction modules (default: 0)"},
    [MK_WINDOW] = {"window", 0, WEFT_MAX_SEQ,
        "sliding-window attention width in tokens (default: 0, full)"},
    [MK_FULL_EVERY] = {"full_every", 0, WEFT_MAX_LAYERS,
        "with a window or chunks, every Nth layer attends fully (0: none)"},
    [MK_ATTN_CHUNK] = {"attn_chunk", 0, WEFT_MAX_SEQ,
        "chunked attention: tokens attend within chunks of N (0: off)"},
    [MK_VOCAB_PAD] = {"vocab_pad", 1, 1L << 20,
        "embedding rows padded to a multiple of N (default: 1)"},
};

int model_key_from_name(const char *name)
{
  return names_index(name, keys, MK_COUNT, sizeof keys[0]);
}

const char *model_key_name(enum model_key k) { return keys[k].name; }
const char *model_key_help(enum model_key k) { return keys[k].help; }

const char *model_key_hint(enum model_key k)
{
  switch (k) {
  case MK_FFN_KIND: return "gelu|swiglu";
  case MK_DTYPE: return "fp32|bf16|fp16|fp8";
  case MK_STYLE: return "gpt|llama";
  case MK_QKV_BIAS: case MK_QK_NORM: case MK_TIED: return "yes|no";
  default: return "N";
  }
}

int model_set(struct model *m, enum model_key k, const char *value,
              const char *origin, struct weft_err *err)
{
  int rc = 0;
  long v = 0;
  switch (k) {
  case MK_FFN_KIND: {
    int i;
    rc = names_choice(value, (const char *const[]){"gelu", "swiglu", NULL}, &i,
                      err);
    if (!rc)
      m->ffn_kind = i ? FFN_SWIGLU : FFN_GELU;
    break;
  }
  case MK_DTYPE: {
    enum dtype t;
    if (!dtype_from_name(value, &t))
      rc = weft_errf(err, WEFT_EINVAL, "'%s' is not fp32, tf32, bf16, fp16 "
                     "or fp8", value);
    else if (t == DTYPE_TF32)
      rc = weft_errf(err, WEFT_EINVAL, "tf32 is a math mode, not a storage "
                     "type; use fp32");
    else
      m->dtype = t;
    break;
  }
  case MK_STYLE: {
    int i;
    rc = names_choice(value, (const char *const[]){"gpt", "llama", NULL}, &i,
                      err);
    if (!rc)
      m->gpt_style = i == 0;
    break;
  }
  case MK_QKV_BIAS: case MK_QK_NORM: case MK_TIED: {
    int i;
    rc = names_choice(value, (const char *const[]){"yes", "no", NULL}, &i,
                      err);
    if (rc)
      break;
    if (k == MK_QK_NORM)
      m->qk_norm = i == 0;
    else
      *(k == MK_TIED ? &m->tied : &m->qkv_bias) = i == 0 ? MO_YES : MO_NO;
    break;
  }
  default:
    rc = units_parse_int(value, keys[k].min, keys[k].max, &v, err);
    if (rc)
      break;
    switch (k) {
    case MK_LAYERS: m->layers = v; break;
    case MK_HIDDEN: m->hidden = v; break;
    case MK_HEADS:
      /* Multi-head attention stays multi-head unless KV heads are set. */
      if (!m->set[MK_KV_HEADS] && m->kv_heads == m->heads)
        m->kv_heads = v;
      m->heads = v;
      break;
    case MK_KV_HEADS: m->kv_heads = v; break;
    case MK_FFN: m->ffn = v; break;
    case MK_VOCAB: m->vocab = v; break;
    case MK_SEQ: m->seq = v; break;
    case MK_EXPERTS: m->experts = v; break;
    case MK_TOPK: m->topk = v; break;
    case MK_HEAD_DIM: m->head_dim = v; break;
    case MK_MOE_FFN: m->moe_ffn = v; break;
    case MK_SHARED_FFN: m->shared_ffn = v; break;
    case MK_DENSE_LAYERS: m->dense_layers = v; break;
    case MK_MOE_EVERY: m->moe_every = v; break;
    case MK_EXPERT_GROUPS: m->expert_groups = v; break;
    case MK_TOPK_GROUPS: m->topk_groups = v; break;
    case MK_Q_LORA: m->q_lora = v; break;
    case MK_KV_LORA: m->kv_lora = v; break;
    case MK_ROPE_DIM: m->rope_dim = v; break;
    case MK_NOPE_DIM: m->nope_dim = v; break;
    case MK_V_DIM: m->v_dim = v; break;
    case MK_MTP_LAYERS: m->mtp_layers = v; break;
    case MK_WINDOW: m->window = v; break;
    case MK_FULL_EVERY: m->full_every = v; break;
    case MK_ATTN_CHUNK: m->attn_chunk = v; break;
    case MK_VOCAB_PAD: m->vocab_pad = v; break;
    default: break;
    }
  }
  if (rc)
    return weft_err_prefix(err, origin);
  m->set[k] = true;
  snprintf(m->origin[k], sizeof m->origin[k], "%s", origin);
  return 0;
}

/* The settings of models of 2024-26 against each other. */
static int model_check_new(const struct model *m, struct weft_err *err)
{
  bool moe = model_is_moe(m);
  if (!moe && (m->set[MK_MOE_FFN] || m->shared_ffn > 0 ||
               m->dense_layers > 0 || m->moe_every > 1 ||
               m->expert_groups > 0))
    return weft_errf(err, WEFT_EINVAL, "%s: moe_ffn, shared_ffn, "
                     "dense_layers, moe_every and expert_groups need an MoE "
                     "model (experts > 1)",
                     m->origin[m->set[MK_MOE_FFN] ? MK_MOE_FFN : MK_EXPERTS]);
  if (m->dense_layers >= m->layers && moe)
    return weft_errf(err, WEFT_EINVAL, "%s: %ld dense layers leave no MoE "
                     "layer of %ld", m->origin[MK_DENSE_LAYERS],
                     m->dense_layers, m->layers);
  if (m->expert_groups > 0 &&
      (m->experts % m->expert_groups != 0 || m->topk_groups < 1 ||
       m->topk_groups > m->expert_groups ||
       m->topk > m->topk_groups * (m->experts / m->expert_groups)))
    return weft_errf(err, WEFT_EINVAL, "%s: %ld expert groups must divide "
                     "%ld experts, and topk_groups (%ld) be 1 to the groups "
                     "and hold the top-%ld experts",
                     m->origin[MK_EXPERT_GROUPS], m->expert_groups,
                     m->experts, m->topk_groups, m->topk);
  if (m->topk_groups > 0 && m->expert_groups == 0)
    return weft_errf(err, WEFT_EINVAL, "%s: topk_groups needs expert_groups",
                     m->origin[MK_TOPK_GROUPS]);
  bool mla_set = m->q_lora > 0 || m->set[MK_ROPE_DIM] ||
                 m->set[MK_NOPE_DIM] || m->set[MK_V_DIM];
  if (mla_set && !model_mla(m))
    return weft_errf(err, WEFT_EINVAL, "%s: q_lora, rope_dim, nope_dim and "
                     "v_dim are multi-head latent attention's; set kv_lora "
                     "to turn it on", m->origin[m->q_lora > 0 ? MK_Q_LORA
                                                : MK_KV_LORA]);
  if (model_mla(m) && (m->kv_heads != m->heads || m->qkv_bias == MO_YES ||
                       m->qk_norm || m->gpt_style))
    return weft_errf(err, WEFT_EINVAL, "%s: multi-head latent attention "
                     "has as many KV heads as heads, no QKV bias, no q/k "
                     "norm and the llama style", m->origin[MK_KV_LORA]);
  if (m->mtp_layers > 0 && m->gpt_style)
    return weft_errf(err, WEFT_EINVAL, "%s: multi-token prediction needs "
                     "the llama style", m->origin[MK_MTP_LAYERS]);
  if (m->window > 0 && m->attn_chunk > 0)
    return weft_errf(err, WEFT_EINVAL, "%s: a sliding window and chunked "
                     "attention exclude each other", m->origin[MK_WINDOW]);
  if (m->full_every > 0 && m->window == 0 && m->attn_chunk == 0)
    return weft_errf(err, WEFT_EINVAL, "%s: full_every needs a window or "
                     "attn_chunk", m->origin[MK_FULL_EVERY]);
  return 0;
}

int model_check(const struct model *m, struct weft_err *err)
{
  if (m->layers < 1 || m->hidden < 1 || m->heads < 1 || m->seq < 1 ||
      m->vocab < 1 || m->ffn < 1)
    return weft_errf(err, WEFT_EINVAL, "model '%s' is incomplete: layers, "
                     "hidden, heads, ffn, vocab and seq are required",
                     m->name);
  if (m->head_dim == 0 && m->hidden % m->heads != 0)
    return weft_errf(err, WEFT_EINVAL, "%s: %ld heads do not divide hidden "
                     "size %ld", m->origin[MK_HEADS], m->heads, m->hidden);
  if (m->kv_heads > m->heads || m->heads % m->kv_heads != 0)
    return weft_errf(err, WEFT_EINVAL, "%s: %ld KV heads do not divide %ld "
                     "heads", m->origin[MK_KV_HEADS], m->kv_heads, m->heads);
  if (m->topk > m->experts)
    return weft_errf(err, WEFT_EINVAL, "%s: top-%ld routing needs at least "
                     "%ld experts, the model has %ld", m->origin[MK_TOPK],
                     m->topk, m->topk, m->experts);
  return model_check_new(m, err);
}

/* Layer i's MoE FFN.  transformers decides it so: Qwen3-MoE
 * (models/qwen3_moe/modeling_qwen3_moe.py, Qwen3MoeDecoderLayer: not in
 * mlp_only_layers and (layer_idx + 1) % decoder_sparse_step == 0), Llama 4
 * (configuration_llama4.py: moe_layers = range(interleave_moe_layer_step
 * - 1, layers, step), the same rule); DeepSeek-V3 (modeling_deepseek.py,
 * DeepseekV3DecoderLayer: layer_idx >= first_k_dense_replace and
 * layer_idx % moe_layer_freq == 0, the same for its moe_layer_freq 1). */
bool model_layer_moe(const struct model *m, long i)
{
  if (!model_is_moe(m))
    return false;
  if (i >= m->layers) /* an MTP module's layer: like the last one */
    i = m->layers - 1;
  if (i < m->dense_layers)
    return false;
  long n = m->moe_every > 1 ? m->moe_every : 1;
  return (i + 1) % n == 0;
}

/* Layer i's attention span.  GPT-OSS (config.json layer_types: sliding,
 * full, sliding, ...: full where (i + 1) % 2 == 0); Llama 4
 * (modeling_llama4.py: use_rope = no_rope_layers[i], default
 * int((i + 1) % no_rope_layer_interval != 0) with interval 4; the
 * attention_chunk_size mask applies to the RoPE layers, the NoPE ones
 * attend fully).  An MTP layer attends fully. */
enum attn_span model_layer_span(const struct model *m, long i)
{
  if ((m->window <= 0 && m->attn_chunk <= 0) || i >= m->layers)
    return SPAN_FULL;
  if (m->full_every > 0 && (i + 1) % m->full_every == 0)
    return SPAN_FULL;
  return m->attn_chunk > 0 ? SPAN_CHUNK : SPAN_WINDOW;
}

/* Causal pairs of s queries over the keys at most w back, the query's own
 * included (gpt-oss's reference, gpt_oss/torch/model.py sdpa: keys with
 * i - j >= sliding_window are masked; FlashAttention's window_size
 * (w - 1, 0), flash_attn_interface.py): min(i + 1, w) keys for query i. */
static double window_pairs(double s, double w)
{
  return s <= w ? s * (s + 1) / 2 : s * w - w * (w - 1) / 2;
}

double model_layer_pairs(const struct model *m, long i, double s)
{
  switch (model_layer_span(m, i)) {
  case SPAN_WINDOW:
    return window_pairs(s, (double)m->window);
  case SPAN_CHUNK: { /* causal within each chunk of c tokens */
    double c = (double)m->attn_chunk, n = (double)(long)(s / c), r = s - n * c;
    return n * c * (c + 1) / 2 + r * (r + 1) / 2;
  }
  default:
    return s * (s + 1) / 2;
  }
}

bool model_layers_alike(const struct model *m)
{
  int k0 = model_layer_kind(m, 0);
  for (long i = 1; i < m->layers + m->mtp_layers; i++)
    if (model_layer_kind(m, i) != k0)
      return false;
  return true;
}
