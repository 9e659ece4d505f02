/*
 * test_hfconfig_fault.c - config.json files weft must refuse, and the
 * exact messages: an unknown architecture, values weft cannot honour (each
 * naming the file and the field), malformed JSON.
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "workloads/hfconfig.h"

static char tmpdir[64];
static char path[256];

static void setup(void)
{
  snprintf(tmpdir, sizeof tmpdir, "/tmp/weft-hff-XXXXXX");
  cr_assert_not_null(mkdtemp(tmpdir));
  snprintf(path, sizeof path, "%s/c.json", tmpdir);
}

/* Write `text` to c.json, read it, expect failure with "c.json: " + msg. */
static void refused(const char *text, const char *msg)
{
  FILE *f = fopen(path, "w");
  cr_assert_not_null(f);
  fputs(text, f);
  fclose(f);
  struct model m;
  memset(&m, 0x5a, sizeof m);
  struct model before = m;
  struct hfconfig_note n;
  struct weft_err err = {0};
  cr_assert_neq(hfconfig_read(&m, &n, path, &err), 0, "accepted: %s", text);
  char want[1024];
  snprintf(want, sizeof want, "%s%s", path, msg);
  cr_assert_str_eq(err.msg, want);
  cr_assert(memcmp(&m, &before, sizeof m) == 0, "model touched on failure");
}

#define LLAMA(extra)                                                           \
  "{\"architectures\": [\"LlamaForCausalLM\"], \"hidden_size\": 256, "         \
  "\"num_hidden_layers\": 2, \"num_attention_heads\": 4, "                     \
  "\"intermediate_size\": 512, \"vocab_size\": 1000" extra "}"

TestSuite(hfconfig_fault, .init = setup);

Test(hfconfig_fault, unknown_architecture)
{
  refused("{\"architectures\": [\"GPT2LMHeadModel\"], \"n_embd\": 768}",
          ": field 'architectures': architecture 'GPT2LMHeadModel' is not "
          "supported by this weft; supported: LlamaForCausalLM, "
          "MistralForCausalLM, MixtralForCausalLM, Qwen2ForCausalLM, "
          "Qwen3ForCausalLM, Qwen3MoeForCausalLM, DeepseekV3ForCausalLM, "
          "GptOssForCausalLM, Llama4ForConditionalGeneration, "
          "Llama4ForCausalLM");
  refused("{\"hidden_size\": 4}", ": field 'architectures': expected a list "
          "of one architecture name");
}

Test(hfconfig_fault, mlp_bias_cannot_be_honoured)
{
  refused(LLAMA(", \"mlp_bias\": true"), ": field 'mlp_bias' (biases in the "
          "FFN) is not supported by this weft");
}

Test(hfconfig_fault, activation_not_gated)
{
  refused(LLAMA(", \"hidden_act\": \"relu\""), ": field 'hidden_act': weft's "
          "FFNs are gated (silu or gelu variants); not relu");
}

Test(hfconfig_fault, dropout)
{
  refused(LLAMA(", \"attention_dropout\": 0.1"), ": field "
          "'attention_dropout': weft simulates no dropout; only 0 is "
          "supported");
}

Test(hfconfig_fault, irregular_layer_types)
{
  refused("{\"architectures\": [\"Qwen3ForCausalLM\"], \"hidden_size\": 256, "
          "\"num_hidden_layers\": 3, \"num_attention_heads\": 2, "
          "\"intermediate_size\": 512, \"vocab_size\": 1000, "
          "\"use_sliding_window\": true, \"sliding_window\": 64, "
          "\"layer_types\": [\"full_attention\", \"sliding_attention\", "
          "\"full_attention\"]}",
          ": field 'layer_types': weft's windowed layers follow one period "
          "(every Nth layer full); this pattern is irregular");
}

Test(hfconfig_fault, window_after_full_prefix)
{
  refused("{\"architectures\": [\"Qwen2ForCausalLM\"], \"hidden_size\": 256, "
          "\"num_hidden_layers\": 4, \"num_attention_heads\": 2, "
          "\"intermediate_size\": 512, \"vocab_size\": 1000, "
          "\"use_sliding_window\": true, \"sliding_window\": 64, "
          "\"max_window_layers\": 2}",
          ": field 'max_window_layers': a prefix of full-attention layers "
          "before windowed ones is not supported by this weft");
}

Test(hfconfig_fault, mlp_only_layers_not_a_prefix)
{
  refused("{\"architectures\": [\"Qwen3MoeForCausalLM\"], \"hidden_size\": "
          "256, \"num_hidden_layers\": 4, \"num_attention_heads\": 2, "
          "\"intermediate_size\": 512, \"moe_intermediate_size\": 64, "
          "\"num_experts\": 8, \"num_experts_per_tok\": 2, "
          "\"vocab_size\": 1000, \"mlp_only_layers\": [1, 3]}",
          ": field 'mlp_only_layers': weft's dense layers are the first N "
          "layers; this list is not 0, 1, ..., N-1");
}

Test(hfconfig_fault, deepseek_moe_layer_freq)
{
  refused("{\"architectures\": [\"DeepseekV3ForCausalLM\"], \"hidden_size\": "
          "256, \"num_hidden_layers\": 4, \"num_attention_heads\": 2, "
          "\"intermediate_size\": 512, \"moe_intermediate_size\": 64, "
          "\"n_routed_experts\": 8, \"num_experts_per_tok\": 2, "
          "\"kv_lora_rank\": 32, \"qk_rope_head_dim\": 16, "
          "\"qk_nope_head_dim\": 32, \"v_head_dim\": 32, "
          "\"vocab_size\": 1000, \"moe_layer_freq\": 2}",
          ": field 'moe_layer_freq': only 1 is supported (DeepSeek's MoE "
          "layer is the first of each group, weft's the last)");
}

Test(hfconfig_fault, llama4_moe_layers_not_the_step)
{
  refused("{\"architectures\": [\"Llama4ForCausalLM\"], \"hidden_size\": 256, "
          "\"num_hidden_layers\": 4, \"num_attention_heads\": 2, "
          "\"intermediate_size\": 64, \"intermediate_size_mlp\": 512, "
          "\"num_local_experts\": 4, \"num_experts_per_tok\": 1, "
          "\"vocab_size\": 1000, \"interleave_moe_layer_step\": 2, "
          "\"moe_layers\": [0, 2]}",
          ": field 'moe_layers': weft's MoE layers are every "
          "interleave_moe_layer_step-th layer; this list is not");
}

Test(hfconfig_fault, llama4_text_config_missing)
{
  refused("{\"architectures\": [\"Llama4ForConditionalGeneration\"]}",
          ": field 'text_config' is missing "
          "(Llama4ForConditionalGeneration keeps its text model there)");
}

Test(hfconfig_fault, llama4_nested_field_named_with_its_path)
{
  refused("{\"architectures\": [\"Llama4ForConditionalGeneration\"], "
          "\"text_config\": {\"hidden_size\": 256, \"num_hidden_layers\": 4, "
          "\"num_attention_heads\": 2, \"vocab_size\": 1000, "
          "\"hidden_act\": \"relu\"}}",
          ": field 'text_config.hidden_act': weft's FFNs are gated (silu or "
          "gelu variants); not relu");
}

Test(hfconfig_fault, missing_and_mistyped_fields)
{
  refused("{\"architectures\": [\"LlamaForCausalLM\"], \"hidden_size\": 256}",
          ": field 'num_hidden_layers' is missing");
  refused(LLAMA(", \"num_key_value_heads\": 2.5"), ": field "
          "'num_key_value_heads': expected a whole number");
  refused(LLAMA(", \"tie_word_embeddings\": 1"), ": field "
          "'tie_word_embeddings': expected true or false");
  refused(LLAMA(", \"num_key_value_heads\": -1"), ": field "
          "'num_key_value_heads': out of range");
  /* a value model_set refuses names the field too */
  refused(LLAMA(", \"num_key_value_heads\": 0"), ": field "
          "'num_key_value_heads': '0' is below the minimum of 1");
}

Test(hfconfig_fault, malformed_json)
{
  refused("{\n  \"architectures\": [\"LlamaForCausalLM\"],\n  \"x\": }\n",
          ":3: not valid JSON: unexpected character");
  refused("{\"architectures\": [\"LlamaForCausalLM\"]",
          ":1: not valid JSON: unexpected end of file");
  refused("[1, 2]", ": not a config.json: the top level is not an object");
  refused("{} {}", ": not valid JSON: text after the top-level object");
}

Test(hfconfig_fault, missing_file)
{
  struct model m;
  struct hfconfig_note n;
  struct weft_err err = {0};
  cr_assert_neq(hfconfig_read(&m, &n, "/nonexistent/config.json", &err), 0);
  cr_assert(strstr(err.msg, "/nonexistent/config.json: cannot open"), "%s",
            err.msg);
}
