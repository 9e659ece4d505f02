/*
 * test_model_fault.c - bad models and plans get the exact message.
 */
#include <criterion/criterion.h>
#include <stdio.h>

#include "workloads/model.h"
#include "workloads/plan.h"

static struct model get(const char *name)
{
  struct model m;
  cr_assert_eq(model_from_preset(&m, name, NULL), 0);
  return m;
}

Test(model_fault, unknown_preset_lists_the_known)
{
  struct model m;
  struct weft_err err = {0};
  cr_assert_eq(model_from_preset(&m, "gpt-5", &err), WEFT_ENOTFOUND);
  cr_assert_str_eq(err.msg, "unknown model 'gpt-5'; known models: gpt-1.7b, "
                   "gpt-3.6b, gpt-7.5b, gpt-18.4b, gpt-39.1b, gpt-76.1b, "
                   "gpt-145.6b, gpt-310.1b, gpt-529.6b, gpt-1008b, gpt3-175b, "
                   "llama2-7b, llama2-13b, llama2-70b, llama3-8b, llama3-70b, "
                   "llama3-405b, mixtral-8x7b, qwen3-8b, qwen3-32b, "
                   "mixtral-8x22b, deepseek-v3, qwen3-30b-a3b, "
                   "qwen3-235b-a22b, gpt-oss-20b, gpt-oss-120b, "
                   "llama4-scout");
}

static void bad_set(const char *key, const char *value, int code,
                    const char *msg)
{
  struct model m = get("gpt-1.7b");
  struct weft_err err = {0};
  char origin[64];
  snprintf(origin, sizeof origin, "--%s", key);
  cr_assert_eq(model_set(&m, model_key_from_name(key), value, origin, &err),
               code, "%s", err.msg);
  cr_assert_str_eq(err.msg, msg);
}

Test(model_fault, bad_values)
{
  bad_set("layers", "0", WEFT_EINVAL, "--layers: '0' is below the minimum of 1");
  bad_set("layers", "100000", WEFT_ELIMIT,
          "--layers: '100000' exceeds the limit of 4096");
  bad_set("hidden", "4k", WEFT_EINVAL, "--hidden: '4k' is not an integer");
  bad_set("heads", "-8", WEFT_EINVAL, "--heads: '-8' is below the minimum of 1");
  bad_set("ffn-kind", "relu", WEFT_EINVAL, "--ffn-kind: 'relu' is not gelu or "
          "swiglu");
  bad_set("dtype", "int4", WEFT_EINVAL, "--dtype: 'int4' is not fp32, tf32, "
          "bf16, fp16 or fp8");
  bad_set("dtype", "tf32", WEFT_EINVAL, "--dtype: tf32 is a math mode, not a "
          "storage type; use fp32");
  bad_set("seq", "NaN", WEFT_EINVAL, "--seq: 'NaN' is not an integer");
  bad_set("moe-every", "0", WEFT_EINVAL,
          "--moe-every: '0' is below the minimum of 1");
  bad_set("window", "-128", WEFT_EINVAL,
          "--window: '-128' is below the minimum of 0");
  bad_set("vocab_pad", "0", WEFT_EINVAL,
          "--vocab_pad: '0' is below the minimum of 1");
  bad_set("mtp_layers", "65", WEFT_ELIMIT,
          "--mtp_layers: '65' exceeds the limit of 64");
}

Test(model_fault, inconsistent_models)
{
  struct model m = get("gpt-1.7b");
  struct weft_err err = {0};
  cr_assert_eq(model_set(&m, MK_HEADS, "25", "--heads", &err), 0);
  cr_assert_eq(model_check(&m, &err), WEFT_EINVAL);
  cr_assert_str_eq(err.msg, "--heads: 25 heads do not divide hidden size 2304");
  m = get("llama3-8b");
  cr_assert_eq(model_set(&m, MK_KV_HEADS, "5", "x.xml:3: <model> attribute "
                         "'kv_heads'", &err), 0);
  cr_assert_eq(model_check(&m, &err), WEFT_EINVAL);
  cr_assert_str_eq(err.msg, "x.xml:3: <model> attribute 'kv_heads': 5 KV heads "
                   "do not divide 32 heads");
  m = get("mixtral-8x7b");
  cr_assert_eq(model_set(&m, MK_TOPK, "9", "--topk", &err), 0);
  cr_assert_eq(model_check(&m, &err), WEFT_EINVAL);
  cr_assert_str_eq(err.msg, "--topk: top-9 routing needs at least 9 experts, "
                   "the model has 8");
}

/* Resolve a plan given as flag pairs on `gpus` GPUs; expect `msg`. */
static void bad_plan(const char *model, long gpus, const char *const *kv,
                     int code, const char *msg)
{
  struct model m = get(model);
  struct plan p;
  plan_init(&p);
  struct weft_err err = {0};
  int rc = 0;
  for (int i = 0; kv[i] && !rc; i += 2) {
    char origin[64];
    snprintf(origin, sizeof origin, "--%s", kv[i]);
    rc = plan_set(&p, plan_key_from_name(kv[i]), kv[i + 1], origin, &err);
  }
  if (!rc)
    rc = plan_resolve(&p, &m, gpus, &err);
  cr_assert_eq(rc, code, "%s", err.msg);
  cr_assert_str_eq(err.msg, msg);
}

#define KV(...) ((const char *const[]){__VA_ARGS__, NULL})

Test(model_fault, plans_that_do_not_divide)
{
  bad_plan("gpt-1.7b", 32, KV("tp", "3", "global-batch", "512"), WEFT_EINVAL,
           "--tp: TP 3 x PP 1 x CP 1 = 3 does not divide 32 GPUs");
  bad_plan("gpt-1.7b", 32, KV("tp", "8", "dp", "8", "global-batch", "512"),
           WEFT_EINVAL, "--dp: TP 8 x PP 1 x CP 1 x DP 8 = 64 GPUs, but the "
           "cluster has 32");
  bad_plan("gpt-1.7b", 64, KV("tp", "16", "global-batch", "512"), WEFT_EINVAL,
           "--tp: TP 16 does not divide 24 attention heads");
  bad_plan("llama3-70b", 128, KV("tp", "16", "global-batch", "512"),
           WEFT_EINVAL, "--tp: TP 16 does not divide 8 KV heads");
  bad_plan("gpt-1.7b", 32, KV("global-batch", "500"), WEFT_EINVAL,
           "--global-batch: global batch 500 is not a multiple of micro-batch "
           "1 x DP 32");
  bad_plan("gpt-1.7b", 32, KV("pp", "32", "global-batch", "512"), WEFT_EINVAL,
           "--pp: PP 32 exceeds the 24 layers");
  bad_plan("gpt-1.7b", 32, KV("pp", "4", "schedule", "interleaved:4",
                              "global-batch", "512"), WEFT_EINVAL,
           "--schedule: PP 4 x 4 chunks do not divide 24 layers "
           "(first_stage_layers, last_stage_layers or account_embedding_loss "
           "allow an uneven split)");
  /* Uneven splits that cannot be made. */
  bad_plan("gpt-1.7b", 32, KV("pp", "4", "schedule", "interleaved:2",
                              "first-stage-layers", "5", "global-batch",
                              "512"), WEFT_EINVAL,
           "--first-stage-layers: the other 3 stages do not divide the "
           "remaining 19 layers");
  bad_plan("gpt-1.7b", 32, KV("pp", "4", "schedule", "interleaved:2",
                              "first-stage-layers", "3", "last-stage-layers",
                              "5", "global-batch", "512"), WEFT_EINVAL,
           "--first-stage-layers: stage 0's 3 layers do not divide into 2 "
           "chunks");
  bad_plan("gpt-1.7b", 32, KV("pp", "4", "schedule", "interleaved:4",
                              "account-embedding-loss", "yes", "global-batch",
                              "512"), WEFT_EINVAL,
           "--account-embedding-loss: 24 layers with the embedding and the "
           "loss do not split evenly into 16 virtual stages");
  bad_plan("gpt-1.7b", 32, KV("pp", "4", "first-stage-layers", "20",
                              "last-stage-layers", "10", "global-batch",
                              "512"), WEFT_EINVAL,
           "--first-stage-layers: 24 layers leave -6 for the other 2 stages");
  bad_plan("gpt-1.7b", 32, KV("pp", "4", "schedule", "interleaved:2",
                              "global-batch", "40"), WEFT_EINVAL,
           "--schedule: the interleaved schedule needs the micro-batches per "
           "pipeline (5) to be a multiple of PP 4, or a group size: "
           "interleaved:2:5 runs them as one group");
  bad_plan("gpt-1.7b", 32, KV("sp", "yes", "global-batch", "512"),
           WEFT_EINVAL, "--sp: sequence parallelism needs TP > 1");
  bad_plan("gpt-1.7b", 32, KV("tp", "2"), WEFT_EINVAL,
           "plan: global batch is required (set global_batch= or "
           "--global-batch)");
  bad_plan("gpt-1.7b", 32, KV("schedule", "zb-h1"), WEFT_EINVAL,
           "--schedule: 'zb-h1' is not gpipe, 1f1b or interleaved:V");
  bad_plan("gpt-1.7b", 32, KV("recompute", "most"), WEFT_EINVAL,
           "--recompute: 'most' is not none, selective or full");
  bad_plan("gpt-1.7b", 32, KV("order", "tp-dp-dp-pp"), WEFT_EINVAL,
           "--order: 'tp-dp-dp-pp' is not an order of tp, cp, dp and pp such "
           "as tp-cp-dp-pp");
  bad_plan("gpt-1.7b", 32, KV("bucket", "25"), WEFT_EINVAL,
           "--bucket: '25' has no unit; expected a size such as 80GiB");
  bad_plan("gpt-1.7b", 32, KV("grad-dtype", "fp8"), WEFT_EINVAL,
           "--grad-dtype: 'fp8' is not bf16, fp16 or fp32");
  bad_plan("gpt-1.7b", 32, KV("p2p", "eager"), WEFT_EINVAL,
           "--p2p: 'eager' is not async or blocking");
  bad_plan("gpt-1.7b", 32, KV("attention", "paged"), WEFT_EINVAL,
           "--attention: 'paged' is not flash, unfused, flash2, flash3, cudnn or sdpa");
  bad_plan("gpt-1.7b", 32, KV("micro-batch", "0"), WEFT_EINVAL,
           "--micro-batch: '0' is below the minimum of 1");
  bad_plan("gpt-1.7b", 32, KV("global-batch", "99999999999"), WEFT_ELIMIT,
           "--global-batch: '99999999999' exceeds the limit of 16777216");
}
