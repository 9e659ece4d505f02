/*
 * test_hfconfig.c - Hugging Face config.json files read as weft models.
 *
 * Round trips: the published config.json of each architecture
 * (tests/fixtures/hf, sources in tests/fixtures/hf/SOURCES) read into a
 * model equal to weft's preset of that model, compared setting by setting
 * and through the parameter and FLOP counts (accounting.h), which take in
 * every setting, those of this weft and those added later; where weft has
 * no preset, the settings equal the config's values.  Architectures whose
 * settings this weft lacks (MLA, shared experts, output-projection bias)
 * are refused, naming the field; once the settings exist the same fixtures
 * must load and equal the presets, which these tests then check.
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "platforms/catalog.h"
#include "platforms/cluster.h"
#include "workloads/accounting.h"
#include "workloads/hfconfig.h"
#include "workloads/workload.h"

#define FIX WEFT_SOURCE_ROOT "/tests/fixtures/hf/"

static int load(const char *file, struct model *m, struct hfconfig_note *n,
                struct weft_err *err)
{
  return hfconfig_read(m, n, file, err);
}

static struct model read_ok(const char *file, struct hfconfig_note *n)
{
  struct model m;
  struct weft_err err = {0};
  cr_assert_eq(load(file, &m, n, &err), 0, "%s", err.msg);
  cr_assert_str_empty(n->unknown, "%s: fields not read: %s", file,
                      n->unknown);
  cr_assert_eq(m.seq, 0, "a config.json has no training sequence");
  return m;
}

static bool have(const char *key) { return model_key_from_name(key) >= 0; }
static bool have_preset(const char *name)
{
  struct model m;
  struct weft_err err = {0};
  return model_from_preset(&m, name, &err) == 0;
}

/* `m` (from a config, sequence set to the preset's) equals preset `name`
 * in every setting the cost sees. */
static void same_as_preset(struct model m, const char *name)
{
  struct model p;
  struct weft_err err = {0};
  cr_assert_eq(model_from_preset(&p, name, &err), 0, "%s", err.msg);
  m.seq = p.seq;
  cr_assert_eq(model_check(&m, &err), 0, "%s", err.msg);
  cr_assert_eq(m.layers, p.layers, "%s layers", name);
  cr_assert_eq(m.hidden, p.hidden, "%s hidden", name);
  cr_assert_eq(m.heads, p.heads, "%s heads", name);
  cr_assert_eq(m.kv_heads, p.kv_heads, "%s kv_heads", name);
  cr_assert_eq(m.vocab, p.vocab, "%s vocab", name);
  cr_assert_eq(m.ffn_kind, p.ffn_kind, "%s ffn_kind", name);
  cr_assert_eq(m.dtype, p.dtype, "%s dtype", name);
  cr_assert_eq(m.experts, p.experts, "%s experts", name);
  cr_assert_eq(m.topk, p.topk, "%s topk", name);
  cr_assert_eq(m.gpt_style, p.gpt_style, "%s style", name);
  cr_assert_eq(model_head_dim(&m), model_head_dim(&p), "%s head_dim", name);
  cr_assert_eq(model_qkv_bias(&m), model_qkv_bias(&p), "%s qkv_bias", name);
  cr_assert_eq(m.qk_norm, p.qk_norm, "%s qk_norm", name);
  cr_assert_eq(model_tied(&m), model_tied(&p), "%s tied", name);
  /* Counts that see every setting, including ones added after this test */
  cr_assert_eq(model_params(&m), model_params(&p), "%s params %.0f vs %.0f",
               name, model_params(&m), model_params(&p));
  cr_assert_eq(model_active_params(&m), model_active_params(&p),
               "%s active params", name);
  cr_assert_eq(model_flops_per_iter(&m, 16), model_flops_per_iter(&p, 16),
               "%s FLOPs", name);
}

Test(hfconfig, llama3_8b_is_the_preset)
{
  struct hfconfig_note n;
  struct model m = read_ok(FIX "Meta-Llama-3-8B.json", &n);
  cr_assert_str_eq(m.name, "Meta-Llama-3-8B");
  cr_assert_eq(n.seq_limit, 0);
  cr_assert_eq(m.ffn, 14336);
  same_as_preset(m, "llama3-8b");
}

Test(hfconfig, mixtral_8x7b_is_the_preset)
{
  struct hfconfig_note n;
  struct model m = read_ok(FIX "Mixtral-8x7B-v0.1.json", &n);
  cr_assert_eq(n.seq_limit, 0, "sliding_window null: full attention");
  cr_assert_eq(m.ffn, 14336);
  same_as_preset(m, "mixtral-8x7b");
}

Test(hfconfig, qwen3_8b_is_the_preset)
{
  struct hfconfig_note n;
  struct model m = read_ok(FIX "Qwen3-8B.json", &n);
  cr_assert(m.qk_norm, "Qwen3Attention normalizes q and k");
  cr_assert_eq(m.ffn, 12288);
  same_as_preset(m, "qwen3-8b");
}

/* No preset: the config's values, and Mistral's 4096-token window. */
Test(hfconfig, mistral_7b_fields_and_window)
{
  struct hfconfig_note n;
  struct model m = read_ok(FIX "Mistral-7B-v0.1.json", &n);
  cr_assert_eq(m.layers, 32);
  cr_assert_eq(m.hidden, 4096);
  cr_assert_eq(m.heads, 32);
  cr_assert_eq(m.kv_heads, 8);
  cr_assert_eq(m.ffn, 14336);
  cr_assert_eq(m.vocab, 32000);
  cr_assert_eq(m.ffn_kind, FFN_SWIGLU);
  cr_assert(!model_tied(&m) && !model_qkv_bias(&m) && !m.gpt_style);
  if (have("window")) {
    cr_assert_eq(n.seq_limit, 0);
  } else {
    cr_assert_eq(n.seq_limit, 4096);
    cr_assert_str_eq(n.seq_limit_why, FIX "Mistral-7B-v0.1.json: field "
                     "'sliding_window' (sliding-window attention of 4096 "
                     "tokens) is not supported by this weft; it equals full "
                     "attention only up to --seq 4096");
  }
}

/* Qwen2: Q, K and V biased though the config does not say so. */
Test(hfconfig, qwen2_7b_fields)
{
  struct hfconfig_note n;
  struct model m = read_ok(FIX "Qwen2-7B.json", &n);
  cr_assert_eq(m.layers, 28);
  cr_assert_eq(m.hidden, 3584);
  cr_assert_eq(m.heads, 28);
  cr_assert_eq(m.kv_heads, 4);
  cr_assert_eq(m.ffn, 18944);
  cr_assert_eq(m.vocab, 152064);
  cr_assert_eq(model_head_dim(&m), 128);
  cr_assert(model_qkv_bias(&m), "Qwen2Attention: q/k/v bias=True");
  cr_assert(!m.qk_norm && !model_tied(&m));
  cr_assert_eq(n.seq_limit, 0, "use_sliding_window false");
  /* Parameters: Qwen2-7B is 7.62 B (its model card). */
  m.seq = 4096;
  cr_assert(model_params(&m) > 7.61e9 && model_params(&m) < 7.63e9,
            "%.4g", model_params(&m));
}

Test(hfconfig, qwen3_30b_a3b)
{
  struct hfconfig_note n;
  struct model m = read_ok(FIX "Qwen3-30B-A3B.json", &n);
  cr_assert_eq(m.layers, 48);
  cr_assert_eq(m.hidden, 2048);
  cr_assert_eq(m.heads, 32);
  cr_assert_eq(m.kv_heads, 4);
  cr_assert_eq(model_head_dim(&m), 128);
  cr_assert_eq(m.experts, 128);
  cr_assert_eq(m.topk, 8);
  cr_assert(m.qk_norm);
  if (!have("moe_ffn"))
    cr_assert_eq(m.ffn, 768, "every layer MoE: ffn is the experts' size");
  if (have_preset("qwen3-30b-a3b"))
    same_as_preset(m, "qwen3-30b-a3b");
  /* Qwen3-30B-A3B: 30.5 B parameters, 3.3 B active (its model card). */
  m.seq = 4096;
  cr_assert(model_params(&m) > 30.4e9 && model_params(&m) < 30.6e9, "%.4g",
            model_params(&m));
  cr_assert(model_active_params(&m) > 3.2e9 &&
            model_active_params(&m) < 3.4e9, "%.4g",
            model_active_params(&m));
}

/* The three whose settings may be missing: loaded and equal to the preset
 * where this weft has the settings, else refused naming the field. */
static void loads_or_refuses(const char *file, const char *const *keys,
                             const char *preset, const char *refusal)
{
  bool all = true;
  for (int i = 0; keys[i]; i++)
    all = all && have(keys[i]);
  struct model m;
  struct hfconfig_note n;
  struct weft_err err = {0};
  int rc = load(file, &m, &n, &err);
  if (!all) {
    cr_assert_neq(rc, 0, "%s loaded without its settings", file);
    cr_assert_str_eq(err.msg, refusal);
    return;
  }
  cr_assert_eq(rc, 0, "%s", err.msg);
  cr_assert_str_empty(n.unknown, "%s", n.unknown);
  if (have_preset(preset))
    same_as_preset(m, preset);
  else
    cr_log_warn("no preset %s to compare %s with", preset, file);
}

Test(hfconfig, deepseek_v3)
{
  loads_or_refuses(FIX "DeepSeek-V3.json",
                   (const char *const[]){"moe_ffn", "shared_ffn",
                                         "dense_layers", "expert_groups",
                                         "topk_groups", "q_lora", "kv_lora",
                                         "rope_dim", "nope_dim", "v_dim",
                                         "mtp_layers", NULL},
                   "deepseek-v3",
                   FIX "DeepSeek-V3.json: field 'moe_intermediate_size' "
                   "(experts smaller than the dense FFN) is not supported "
                   "by this weft");
}

/* Without window settings the 128-token window is a limit on --seq. */
Test(hfconfig, gpt_oss_20b)
{
  struct hfconfig_note n;
  struct model m = read_ok(FIX "gpt-oss-20b.json", &n);
  cr_assert_eq(m.layers, 24);
  cr_assert_eq(m.hidden, 2880);
  cr_assert_eq(m.heads, 64);
  cr_assert_eq(m.kv_heads, 8);
  cr_assert_eq(m.head_dim, 64, "2880 / 64 heads is 45, not head_dim");
  cr_assert_eq(m.experts, 32);
  cr_assert_eq(m.topk, 4);
  cr_assert_eq(m.ffn, 2880);
  cr_assert(model_qkv_bias(&m), "attention_bias true");
  if (have("window") && have("full_every"))
    cr_assert_eq(n.seq_limit, 0);
  else
    cr_assert_eq(n.seq_limit, 128);
  if (have_preset("gpt-oss-20b"))
    same_as_preset(m, "gpt-oss-20b");
}

Test(hfconfig, llama4_scout)
{
  loads_or_refuses(FIX "Llama-4-Scout-17B-16E.json",
                   (const char *const[]){"moe_ffn", "shared_ffn", "attn_chunk",
                                         "full_every", NULL},
                   "llama4-scout",
                   FIX "Llama-4-Scout-17B-16E.json: field "
                   "'text_config.intermediate_size' (the shared expert beside "
                   "the routed ones) is not supported by this weft");
}

/* ---- small configs written here ---------------------------------------- */

static char tmpdir[64];

static void mkdir_tmp(void)
{
  snprintf(tmpdir, sizeof tmpdir, "/tmp/weft-hf-XXXXXX");
  cr_assert_not_null(mkdtemp(tmpdir));
}

static const char *write_file(const char *name, const char *text)
{
  static char path[256];
  snprintf(path, sizeof path, "%s/%s", tmpdir, name);
  FILE *f = fopen(path, "w");
  cr_assert_not_null(f);
  fputs(text, f);
  fclose(f);
  return path;
}

#define TINY_LLAMA                                                             \
  "\"architectures\": [\"LlamaForCausalLM\"], \"hidden_size\": 256, "          \
  "\"num_hidden_layers\": 2, \"num_attention_heads\": 4, "                     \
  "\"intermediate_size\": 512, \"vocab_size\": 1000"

Test(hfconfig, defaults_of_absent_fields, .init = mkdir_tmp)
{
  struct hfconfig_note n;
  struct model m = read_ok(write_file("tiny.json", "{" TINY_LLAMA "}"), &n);
  cr_assert_str_eq(m.name, "tiny");
  cr_assert_eq(m.kv_heads, 4, "num_key_value_heads absent: multi-head");
  cr_assert(!model_tied(&m), "LlamaConfig: tie_word_embeddings=False");
  cr_assert_eq(m.dtype, DTYPE_BF16);
  cr_assert_eq(m.experts, 1);
}

Test(hfconfig, name_from_name_or_path_or_directory, .init = mkdir_tmp)
{
  struct hfconfig_note n;
  struct model m = read_ok(
      write_file("a.json", "{\"_name_or_path\": \"org/My-Model\", "
                 TINY_LLAMA "}"), &n);
  cr_assert_str_eq(m.name, "org/My-Model");
  char dir[128], path[192];
  snprintf(dir, sizeof dir, "%s/Some-Model-7B", tmpdir);
  cr_assert_eq(mkdir(dir, 0700), 0);
  snprintf(path, sizeof path, "%s/config.json", dir);
  FILE *f = fopen(path, "w");
  fputs("{" TINY_LLAMA "}", f);
  fclose(f);
  m = read_ok(path, &n);
  cr_assert_str_eq(m.name, "Some-Model-7B");
}

Test(hfconfig, tied_and_gelu_and_attention_bias, .init = mkdir_tmp)
{
  struct hfconfig_note n;
  struct model m = read_ok(
      write_file("t.json", "{" TINY_LLAMA ", \"tie_word_embeddings\": true, "
                 "\"hidden_act\": \"gelu_pytorch_tanh\", \"head_dim\": 32}"),
      &n);
  cr_assert(model_tied(&m));
  cr_assert_eq(m.ffn_kind, FFN_SWIGLU, "LlamaMLP is gated whatever the act");
  cr_assert_eq(m.head_dim, 32);
  cr_assert_eq(model_q_dim(&m), 128);
}

/* A field neither read nor known harmless is named, not refused. */
Test(hfconfig, unknown_fields_are_named, .init = mkdir_tmp)
{
  struct model m;
  struct hfconfig_note n;
  struct weft_err err = {0};
  cr_assert_eq(load(write_file("u.json", "{" TINY_LLAMA ", \"rope_theta\": "
                               "1e4, \"fancy_new_thing\": 3, \"another\": "
                               "true}"), &m, &n, &err), 0, "%s", err.msg);
  cr_assert_str_eq(n.unknown, "fancy_new_thing, another");
}

Test(hfconfig, qwen3_moe_dense_prefix, .init = mkdir_tmp)
{
  const char *p = write_file("q.json",
      "{\"architectures\": [\"Qwen3MoeForCausalLM\"], \"hidden_size\": 256, "
      "\"num_hidden_layers\": 4, \"num_attention_heads\": 4, "
      "\"head_dim\": 64, \"intermediate_size\": 512, "
      "\"moe_intermediate_size\": 64, \"num_experts\": 8, "
      "\"num_experts_per_tok\": 2, \"vocab_size\": 1000, "
      "\"mlp_only_layers\": [0, 1]}");
  struct model m;
  struct hfconfig_note n;
  struct weft_err err = {0};
  int rc = load(p, &m, &n, &err);
  if (have("dense_layers") && have("moe_ffn")) {
    cr_assert_eq(rc, 0, "%s", err.msg);
    cr_assert_eq(m.ffn, 512);
  } else {
    cr_assert_neq(rc, 0);
    cr_assert(strstr(err.msg, "is not supported by this weft"), "%s",
              err.msg);
  }
}

/* GPT-OSS-style alternation: windowed, full, windowed, full. */
Test(hfconfig, layer_types_period, .init = mkdir_tmp)
{
  const char *p = write_file("w.json",
      "{\"architectures\": [\"Qwen3ForCausalLM\"], \"hidden_size\": 256, "
      "\"num_hidden_layers\": 4, \"num_attention_heads\": 2, "
      "\"intermediate_size\": 512, \"vocab_size\": 1000, "
      "\"use_sliding_window\": true, \"sliding_window\": 128, "
      "\"max_window_layers\": 0, \"layer_types\": [\"sliding_attention\", "
      "\"full_attention\", \"sliding_attention\", \"full_attention\"]}");
  struct model m;
  struct hfconfig_note n;
  struct weft_err err = {0};
  cr_assert_eq(load(p, &m, &n, &err), 0, "%s", err.msg);
  if (!have("window") || !have("full_every"))
    cr_assert_eq(n.seq_limit, 128);
  else
    cr_assert_eq(n.seq_limit, 0);
}

/* ---- through the workload ---------------------------------------------- */

Test(hfconfig, flag_needs_seq_and_honours_the_window)
{
  struct workload w;
  struct weft_err err = {0};
  struct cluster c;
  struct catalog *cat = catalog_builtin(&err);
  cr_assert_not_null(cat, "%s", err.msg);
  workload_init(&w);
  cr_assert_eq(workload_flag(&w, "model", FIX "Meta-Llama-3-8B.json", &err),
               0, "%s", err.msg);
  cr_assert(w.model_is_config);
  cr_assert_neq(workload_resolve_hw(&w, cat, "selene", &c, &err), 0);
  cr_assert_str_eq(err.msg, FIX "Meta-Llama-3-8B.json: a Hugging Face "
                   "config gives no training sequence length "
                   "(max_position_embeddings is the longest context, not "
                   "the training sequence): give --seq N (seq=\"N\" in the "
                   "workload's <model>)");
  cr_assert_eq(workload_flag(&w, "seq", "8192", &err), 0, "%s", err.msg);
  cr_assert_eq(workload_resolve_hw(&w, cat, "selene", &c, &err), 0, "%s",
               err.msg);
  /* Mistral's window above the sequence: refused while weft has none */
  workload_init(&w);
  cr_assert_eq(workload_flag(&w, "model", FIX "Mistral-7B-v0.1.json", &err),
               0, "%s", err.msg);
  cr_assert_eq(workload_flag(&w, "seq", "8192", &err), 0, "%s", err.msg);
  int rc = workload_resolve_hw(&w, cat, "selene", &c, &err);
  if (have("window"))
    cr_assert_eq(rc, 0, "%s", err.msg);
  else
    cr_assert_str_eq(err.msg, FIX "Mistral-7B-v0.1.json: field "
                     "'sliding_window' (sliding-window attention of 4096 "
                     "tokens) is not supported by this weft; it equals full "
                     "attention only up to --seq 4096 (the sequence is "
                     "8192)");
  /* a preset after the config: a preset again */
  cr_assert_eq(workload_flag(&w, "model", "llama3-8b", &err), 0, "%s",
               err.msg);
  cr_assert(!w.model_is_config);
  cr_assert_eq(w.hf.seq_limit, 0);
  catalog_free(cat);
}

Test(hfconfig, workload_file_config_relative_to_it, .init = mkdir_tmp)
{
  write_file("cfg.json", "{" TINY_LLAMA "}");
  const char *xml = write_file("w.xml",
      "<workload>\n"
      "  <model config=\"cfg.json\" seq=\"1024\" layers=\"4\"/>\n"
      "  <plan global_batch=\"8\"/>\n"
      "</workload>\n");
  struct workload w;
  struct weft_err err = {0};
  struct catalog *cat = catalog_builtin(&err);
  workload_init(&w);
  cr_assert_eq(workload_read_file(&w, cat, xml, &err), 0, "%s", err.msg);
  cr_assert(w.model_is_config);
  cr_assert_eq(w.model.hidden, 256);
  cr_assert_eq(w.model.layers, 4, "the attribute overrides the config");
  cr_assert_eq(w.model.seq, 1024);
  cr_assert_str_eq(w.model.name, "cfg");
  catalog_free(cat);
}

Test(hfconfig, workload_file_preset_and_config, .init = mkdir_tmp)
{
  write_file("cfg.json", "{" TINY_LLAMA "}");
  const char *xml = write_file("w.xml",
      "<workload>\n"
      "  <model preset=\"llama3-8b\" config=\"cfg.json\"/>\n"
      "</workload>\n");
  struct workload w;
  struct weft_err err = {0};
  struct catalog *cat = catalog_builtin(&err);
  workload_init(&w);
  cr_assert_neq(workload_read_file(&w, cat, xml, &err), 0);
  cr_assert(strstr(err.msg, "w.xml:2: <model>: give preset or config, not "
                   "both"), "%s", err.msg);
  catalog_free(cat);
}

Test(hfconfig, is_path)
{
  cr_assert(hfconfig_is_path("config.json"));
  cr_assert(hfconfig_is_path("models/llama"));
  cr_assert(!hfconfig_is_path("llama3-8b"));
  cr_assert(!hfconfig_is_path(".json"));
}
