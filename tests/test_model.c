/*
 * test_model.c - presets, parameter counts (Megatron-LM Eq. 2 and published
 * sizes) and model settings.
 */
#include <criterion/criterion.h>
#include <math.h>
#include <string.h>

#include "workloads/accounting.h"
#include "workloads/model.h"

static struct model get(const char *name)
{
  struct model m;
  struct weft_err err = {0};
  cr_assert_eq(model_from_preset(&m, name, &err), 0, "%s", err.msg);
  cr_assert_eq(model_check(&m, &err), 0, "%s", err.msg);
  return m;
}

/* MEG21-T1-01..10: params_b, layers, hidden, heads. */
static const struct {
  const char *name;
  double params_b;
  long l, h, a;
} table1[] = {
    {"gpt-1.7b", 1.7, 24, 2304, 24},      {"gpt-3.6b", 3.6, 30, 3072, 32},
    {"gpt-7.5b", 7.5, 36, 4096, 32},      {"gpt-18.4b", 18.4, 40, 6144, 48},
    {"gpt-39.1b", 39.1, 48, 8192, 64},    {"gpt-76.1b", 76.1, 60, 10240, 80},
    {"gpt-145.6b", 145.6, 80, 12288, 96}, {"gpt-310.1b", 310.1, 96, 16384, 128},
    {"gpt-529.6b", 529.6, 105, 20480, 128},
    {"gpt-1008b", 1008.0, 128, 25600, 160},
};

Test(model, megatron_eq2_parameter_counts)
{
  for (size_t i = 0; i < 10; i++) {
    struct model m = get(table1[i].name);
    cr_assert_eq(m.layers, table1[i].l);
    cr_assert_eq(m.hidden, table1[i].h);
    cr_assert_eq(m.heads, table1[i].a);
    double l = (double)m.layers, h = (double)m.hidden, V = 51200, s = 2048;
    double eq2 = 12 * l * h * h * (1 + 13 / (12 * h) + (V + s) / (12 * l * h));
    /* Eq. (2) leaves out the final LayerNorm (2h). */
    double p = model_params(&m);
    cr_assert(fabs(p - 2 * h - eq2) <= 1e-9 * eq2, "%s: %.17g vs %.17g",
              m.name, p - 2 * h, eq2);
    /* And the Table 1 sizes, to the digit given. */
    cr_assert(fabs(p / 1e9 - table1[i].params_b) < 0.05 + 0.0005 *
              table1[i].params_b, "%s: %.2fB", m.name, p / 1e9);
  }
}

Test(model, published_sizes_of_other_presets)
{
  /* Llama 2 (6.74, 13.0, 69.0 B), Llama 3 (8.03, 70.6, 405.9 B), Mixtral
   * 8x7B (46.7 B), GPT-3 (175 B with Megatron's 51200-token vocabulary). */
  const struct { const char *n; double b, tol; } s[] = {
      {"llama2-7b", 6.74, 0.01},  {"llama2-13b", 13.02, 0.01},
      {"llama2-70b", 68.98, 0.01}, {"llama3-8b", 8.03, 0.01},
      {"llama3-70b", 70.55, 0.01}, {"llama3-405b", 405.85, 0.01},
      {"mixtral-8x7b", 46.70, 0.01}, {"gpt3-175b", 174.6, 0.1}};
  for (size_t i = 0; i < sizeof s / sizeof *s; i++) {
    struct model m = get(s[i].n);
    cr_assert(fabs(model_params(&m) / 1e9 - s[i].b) <= s[i].tol, "%s: %.3fB",
              s[i].n, model_params(&m) / 1e9);
  }
}

Test(model, gqa_and_swiglu_shapes)
{
  struct model m = get("llama3-70b");
  cr_assert_eq(model_head_dim(&m), 128);
  cr_assert_eq(model_kv_dim(&m), 1024);
  cr_assert_eq(m.ffn_kind, FFN_SWIGLU);
  cr_assert_not(m.gpt_style);
  struct model x = get("mixtral-8x7b");
  cr_assert(model_is_moe(&x));
  cr_assert_eq(x.topk, 2);
}

Test(model, settings_override_presets)
{
  struct model m = get("gpt3-175b");
  struct weft_err err = {0};
  cr_assert_eq(model_set(&m, model_key_from_name("kv-heads"), "8", "--kv-heads",
                         &err), 0);
  cr_assert_eq(model_set(&m, MK_FFN_KIND, "swiglu", "--ffn-kind", &err), 0);
  cr_assert_eq(model_set(&m, MK_DTYPE, "fp8", "--dtype", &err), 0);
  cr_assert_eq(m.kv_heads, 8);
  cr_assert_eq(m.dtype, DTYPE_FP8);
  cr_assert_eq(model_check(&m, &err), 0, "%s", err.msg);
  cr_assert_str_eq(m.origin[MK_KV_HEADS], "--kv-heads");
}

Test(model, model_flops_formula)
{
  /* 72 B s l h^2 (1 + s/(6h) + V/(12 l h)) for GPT. */
  for (size_t i = 0; i < 10; i++) {
    struct model m = get(table1[i].name);
    double B = 1024, s = 2048, l = (double)m.layers, h = (double)m.hidden;
    double V = 51200;
    double want = 72 * B * s * l * h * h * (1 + s / (6 * h) + V / (12 * l * h));
    double got = model_flops_per_iter(&m, 1024);
    cr_assert(fabs(got - want) <= 1e-9 * want, "%s", m.name);
  }
}

/* The 2025 presets against their model cards, within 1 %: Qwen3-8B 8.2 B
 * and Qwen3-32B 32.8 B ("Number of Parameters", huggingface.co/Qwen/
 * Qwen3-8B and Qwen/Qwen3-32B), Mixtral 8x22B 141 B of which 39 B active
 * (mistral.ai/news/mixtral-8x22b: "39B active parameters out of 141B"). */
Test(model, published_totals_and_active_of_2025_presets)
{
  const struct { const char *n; double total, active; } s[] = {
      {"qwen3-8b", 8.2, 8.2},
      {"qwen3-32b", 32.8, 32.8},
      {"mixtral-8x22b", 141, 39}};
  for (size_t i = 0; i < sizeof s / sizeof *s; i++) {
    struct model m = get(s[i].n);
    double t = model_params(&m) / 1e9, a = model_active_params(&m) / 1e9;
    cr_assert(fabs(t / s[i].total - 1) <= 0.01, "%s: %.3f B", s[i].n, t);
    cr_assert(fabs(a / s[i].active - 1) <= 0.01, "%s: %.3f B active",
              s[i].n, a);
  }
}

#define EQ_REL(a, b)                                                          \
  cr_assert(fabs((a) - (b)) <= 1e-9 * fabs(b), "%.17g != %.17g", (a), (b))

/* Active parameters: the routed experts counted top-k of E times. */
Test(model, active_params_closed_form)
{
  struct model m = get("mixtral-8x7b");
  double l = 32, h = 4096, f = 14336, E = 8, k = 2;
  double expert = 3 * h * f;
  EQ_REL(model_params(&m) - model_active_params(&m), l * (E - k) * expert);
  struct model d = get("llama3-8b");
  cr_assert_eq(model_active_params(&d), model_params(&d));
}

Test(model, head_dim_and_qwen3_shapes)
{
  struct model m = get("qwen3-32b");
  cr_assert_eq(model_head_dim(&m), 128);
  cr_assert_eq(model_q_dim(&m), 8192);
  cr_assert_eq(model_kv_dim(&m), 1024);
  cr_assert(m.qk_norm);
  cr_assert_not(model_tied(&m));
  cr_assert_not(model_qkv_bias(&m));
  /* head_dim frees heads from dividing hidden. */
  struct weft_err err = {0};
  cr_assert_eq(model_set(&m, MK_HEADS, "40", "--heads", &err), 0);
  cr_assert_eq(model_set(&m, MK_KV_HEADS, "8", "--kv-heads", &err), 0);
  cr_assert_eq(model_check(&m, &err), 0, "%s", err.msg);
  cr_assert_eq(model_q_dim(&m), 40 * 128);
  /* The defaults follow the style. */
  struct model g = get("gpt-1.7b");
  cr_assert(model_tied(&g) && model_qkv_bias(&g) && !g.qk_norm);
  cr_assert_eq(model_head_dim(&g), 96);
  cr_assert_eq(model_set(&g, MK_QK_NORM, "maybe", "--qk-norm", &err),
               WEFT_EINVAL);
}
