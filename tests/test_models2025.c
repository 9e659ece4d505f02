/*
 * test_models2025.c - the model settings of 2024-26 (issue 38 item 2):
 * each new preset's total and active parameters against its published
 * figure, multi-head latent attention's and sliding-window attention's
 * FLOPs and bytes against closed forms, shared plus routed expert FLOPs,
 * weft's model FLOPs against Megatron-LM's num_floating_point_operations,
 * layer kinds, and the refusals of inconsistent settings.
 */
#include <criterion/criterion.h>
#include <math.h>
#include <string.h>

#include "workloads/accounting.h"
#include "workloads/builder.h"
#include "workloads/costmodel.h"
#include "workloads/layer.h"
#include "tests/plan_helpers.h"

#define EQ(a, b) cr_assert(fabs((double)(a) - (double)(b)) <= 1e-12 * fabs((double)(b)), "%.17g != %.17g", (double)(a), (double)(b))
#define NEAR(a, b, rel) cr_assert(fabs((double)(a) - (double)(b)) <= (rel) * fabs((double)(b)), "%.17g is not within %g of %.17g", (double)(a), (double)(rel), (double)(b))

static struct model get(const char *name)
{
  struct model m;
  cr_assert_eq(model_from_preset(&m, name, NULL), 0, "%s", name);
  struct weft_err err = {0};
  cr_assert_eq(model_check(&m, &err), 0, "%s: %s", name, err.msg);
  return m;
}

/* Resolve the plan kv (name/value pairs) for model m on `gpus` GPUs. */
static int test_plan(struct plan *p, const struct model *m, long gpus,
                     const char *const *kv, struct weft_err *err)
{
  plan_init(p);
  for (int i = 0; kv[i]; i += 2) {
    int rc = plan_set(p, plan_key_from_name(kv[i]), kv[i + 1], kv[i], err);
    if (rc)
      return rc;
  }
  return plan_resolve(p, m, gpus, err);
}

/* ---- Published totals ---- */

/* DeepSeek-V3 Technical Report (arXiv:2412.19437), abstract: "671B total
 * parameters with 37B activated for each token"; Sec. 4.2 (footnote on
 * Hugging Face): 685B in the released checkpoint = 671B of the main
 * model + 14B of the MTP module (which holds its own copies of the
 * embedding and head, 1.85B, that weft shares with the main model).
 * 37B is rounded to the billion and counts what a token computes with:
 * the main model less the unused routed experts and the input embedding
 * (a lookup), 36.63 B, which rounds to 37 B; weft's active count keeps the
 * embedding (37.55 B). */
Test(models2025, deepseek_v3_totals)
{
  struct model m = get("deepseek-v3");
  double h = 7168, E = 129280 * h;
  double main = model_params(&m) - mtp_params(&m);
  NEAR(main, 671e9, 0.01);
  /* exact: 3 dense + 58 MoE layers, embedding, head, final norm */
  double attn = h * 1536 + 1536 + h * 576 + 512 + 1536 * 128 * 192.0 +
                512 * 128 * 256.0 + 128 * 128 * h;
  double moe = attn + 2 * h + h * 256 + 256 * 3 * h * 2048 + 3 * h * 2048;
  double dense = attn + 2 * h + 3 * h * 18432;
  EQ(main, 3 * dense + 58 * moe + 2 * E + h);
  EQ(mtp_params(&m), moe + 3 * h + 2 * h * h);
  /* the MTP module's active part: its layer less its idle experts */
  double mtp_active = moe - 248 * 3 * h * 2048 + 3 * h + 2 * h * h;
  double active = model_active_params(&m) - mtp_active;
  EQ(active, 3 * dense + 58 * (moe - 248 * 3 * h * 2048) + 2 * E + h);
  cr_assert(fabs(active - E - 37e9) <= 0.5e9, "active %.4g", active - E);
}

/* Qwen3-30B-A3B model card (huggingface.co/Qwen/Qwen3-30B-A3B): "30.5B
 * in total and 3.3B activated"; Qwen3-235B-A22B: "235B in total and 22B
 * activated". */
Test(models2025, qwen3_moe_totals)
{
  struct model m = get("qwen3-30b-a3b");
  NEAR(model_params(&m), 30.5e9, 0.01);
  NEAR(model_active_params(&m), 3.3e9, 0.02); /* 3.353 B: "3.3B" */
  m = get("qwen3-235b-a22b");
  NEAR(model_params(&m), 235e9, 0.01);
  NEAR(model_active_params(&m), 22e9, 0.01);
}

/* gpt-oss-120b & gpt-oss-20b Model Card (arXiv:2508.10925), Table 1:
 * 116.83B total, 5.13B active; 20.91B total, 3.61B active.  Its active
 * counts leave out the embedding (the unembedding is in): 5.13 = 0.96
 * attention + 4/128 x 114.71 MLP + 0.58 unembedding. */
Test(models2025, gpt_oss_totals)
{
  struct model m = get("gpt-oss-120b");
  double E = 201088 * 2880.0;
  NEAR(model_params(&m), 116.83e9, 0.001);
  NEAR(model_active_params(&m) - E, 5.13e9, 0.005);
  m = get("gpt-oss-20b");
  NEAR(model_params(&m), 20.91e9, 0.001);
  NEAR(model_active_params(&m) - E, 3.61e9, 0.005);
}

/* Llama 4 model card (huggingface.co/meta-llama/Llama-4-Scout-17B-16E):
 * 17B activated, 109B total, the vision encoder included, which weft does
 * not model: the text model is 107.77 B (1.1 % less). */
Test(models2025, llama4_scout_totals)
{
  struct model m = get("llama4-scout");
  double h = 5120;
  double layer = h * (5120 + 2 * 1024) + 5120 * h + 2 * h + h * 16 +
                 16 * 3 * h * 8192 + 3 * h * 8192;
  EQ(model_params(&m), 48 * layer + 2 * 202048 * h + h);
  NEAR(model_params(&m), 109e9, 0.015);
  NEAR(model_active_params(&m), 17e9, 0.015);
}

/* ---- Layer kinds ---- */

Test(models2025, layer_kinds)
{
  struct model m = get("deepseek-v3");
  cr_assert_not(model_layer_moe(&m, 2));
  cr_assert(model_layer_moe(&m, 3));
  cr_assert(model_layer_moe(&m, 61)); /* the MTP layer, like the last */
  cr_assert_not(model_layers_alike(&m));
  long n[LAYER_KINDS];
  layer_kind_counts(&m, 0, 61, n);
  cr_assert_eq(n[0], 3);
  cr_assert_eq(n[LAYER_KIND_MOE], 58);
  m = get("gpt-oss-20b"); /* sliding, full, sliding, ... */
  cr_assert_eq(model_layer_span(&m, 0), SPAN_WINDOW);
  cr_assert_eq(model_layer_span(&m, 1), SPAN_FULL);
  m = get("llama4-scout"); /* chunked, x3, then full */
  cr_assert_eq(model_layer_span(&m, 2), SPAN_CHUNK);
  cr_assert_eq(model_layer_span(&m, 3), SPAN_FULL);
  /* moe_every: the last layer of each group, as transformers decides */
  m = get("mixtral-8x7b");
  struct weft_err err = {0};
  cr_assert_eq(model_set(&m, MK_MOE_EVERY, "2", "--moe-every", &err), 0);
  cr_assert_not(model_layer_moe(&m, 0));
  cr_assert(model_layer_moe(&m, 1));
  struct layer_desc d;
  layer_describe_at(&m, 0, &d);
  cr_assert_eq(d.experts, 1);
  EQ(model_params(&m), 16 * layer_params_kind(&m, 0) +
                           16 * layer_params_kind(&m, LAYER_KIND_MOE) +
                           2 * 32000 * 4096.0 + 4096);
}

/* ---- Window pairs ---- */

Test(models2025, window_and_chunk_pairs)
{
  struct model m = get("gpt-oss-20b");
  /* min(i + 1, w) keys per query: s w - w (w - 1) / 2 when s >= w */
  EQ(model_layer_pairs(&m, 0, 4096), 4096 * 128.0 - 128 * 127 / 2.0);
  EQ(model_layer_pairs(&m, 0, 100), 100 * 101 / 2.0); /* shorter: causal */
  EQ(model_layer_pairs(&m, 1, 4096), 4096 * 4097 / 2.0);
  struct model s = get("llama4-scout");
  /* chunks of 8192: two whole ones and 100 tokens */
  EQ(model_layer_pairs(&s, 0, 16484), 2 * 8192 * 8193 / 2.0 + 100 * 101 / 2.0);
}

/* ---- FLOPs ---- */

/* Megatron-LM's num_floating_point_operations
 * (megatron/training/training.py, transformer_flops, at d98e8a6 of
 * 2026-08), written out for one global batch of B sequences: MLA or GQA
 * attention, dense and MoE layers with shared experts, MTP modules, the
 * logits over the padded vocabulary.  args: q_lora (0: none), kv_lora
 * (0: GQA), nope (qk_head_dim), rope (qk_pos_emb_head_dim), v, kv_ch and
 * groups for GQA. */
struct mg {
  double h, a, L, dense_layers, ffn, moe_ffn, shared, topk, V, s, mtp;
  double q_lora, kv_lora, nope, rope, v, kv_ch, groups;
};

static double megatron_flops(const struct mg *g, double B)
{
  double T = B * g->s, ss = B * g->s * g->s;
  double moe_layers = g->L - g->dense_layers + g->mtp; /* last is MoE */
  double dense_layers = g->dense_layers, layers = g->L + g->mtp;
  double attn, core;
  if (g->kv_lora > 0) {
    double q_term = g->q_lora > 0
                        ? g->q_lora * (g->h + g->a * (g->nope + g->rope) + 1)
                        : g->h * g->a * (g->nope + g->rope);
    attn = 3 * 2 * (q_term + g->kv_lora * (g->h + g->a * (g->nope + g->v) + 1) +
                    g->h * g->rope + g->a * g->v * g->h);
    core = 3 * 2 * (g->a * (g->nope + g->rope) / 2 + g->a * g->v / 2);
  } else {
    double q = g->kv_ch * g->a, k = g->kv_ch * g->groups;
    attn = 3 * 2 * (g->h * (q + k + k) + q * g->h);
    core = 3 * 2 * q / 2 * 2;
  }
  double mlp = 3 * 2 * g->h *
               (g->ffn * 3 * dense_layers +
                g->moe_ffn * g->topk * 3 * moe_layers + g->shared * 3 * moe_layers);
  double mtp = 3 * 2 * g->mtp * (3 * g->h + 2 * g->h * g->h);
  double logit = 3 * 2 * g->h * g->V * (g->mtp + 1);
  return T * (mlp + attn * layers + mtp + logit) + ss * core * layers;
}

/* weft counts what Megatron's formula does but for three conventions of
 * its own, each added back here: the attention core over the full s x s
 * square (Megatron 2021; the formula since halves it for the causal mask),
 * the router's GEMM (h x experts, left out by the formula), and no FLOPs
 * for MLA's latent norms and the MTP norms (the formula's "+ 1" and "3h"
 * terms). */
Test(models2025, deepseek_v3_flops_megatron)
{
  struct model m = get("deepseek-v3");
  struct mg g = {.h = 7168, .a = 128, .L = 61, .dense_layers = 3,
                 .ffn = 18432, .moe_ffn = 2048, .shared = 2048, .topk = 8,
                 .V = 129280, .s = 4096, .mtp = 1, .q_lora = 1536,
                 .kv_lora = 512, .nope = 128, .rope = 64, .v = 128};
  double B = 16, T = B * g.s, moe_layers = 58 + 1;
  double want = megatron_flops(&g, B);
  double core_half = 3 * 2 * B * g.s * g.s * (g.a * 192 / 2 + g.a * 128 / 2) *
                     (g.L + g.mtp);
  want += core_half;                                    /* full square */
  want += 3 * 2 * T * g.h * 256 * moe_layers;           /* router */
  want -= 3 * 2 * T * (1536 + 512) * (g.L + g.mtp);      /* latent norms */
  want -= 3 * 2 * T * 3 * g.h * g.mtp;                  /* MTP norms */
  NEAR(model_flops_per_iter(&m, 16), want, 1e-12);
}

Test(models2025, qwen3_moe_flops_megatron)
{
  struct model m = get("qwen3-235b-a22b");
  struct mg g = {.h = 4096, .a = 64, .L = 94, .ffn = 12288, .moe_ffn = 1536,
                 .topk = 8, .V = 151936, .s = 4096, .kv_ch = 128,
                 .groups = 4};
  double B = 8, T = B * g.s;
  double want = megatron_flops(&g, B);
  want += 3 * 2 * B * g.s * g.s * g.a * 128 * g.L; /* full square */
  want += 3 * 2 * T * g.h * 128 * g.L;             /* router */
  NEAR(model_flops_per_iter(&m, 8), want, 1e-12);
}

/* Shared plus routed experts: a DeepSeek MoE layer's FFN FLOPs are top-k
 * routed experts' and the shared expert's SwiGLU MLPs, 6 h f T each
 * (forward), over every token. */
Test(models2025, shared_plus_routed_flops)
{
  struct model m = get("deepseek-v3");
  struct model d = m;
  d.shared_ffn = 0;
  double T = 4096, h = 7168;
  double with = layer_fwd_flops(&m, 10, T, 4096);
  double without = layer_fwd_flops(&d, 10, T, 4096);
  EQ(with - without, 2 * T * 3 * h * 2048);
  /* routed: top-8 of 2048, and the router */
  struct model r = d;
  r.topk = 1;
  EQ(without - layer_fwd_flops(&r, 10, T, 4096), 7 * 2 * T * 3 * h * 2048);
  /* a dense layer of DeepSeek: the 18432-wide FFN, no router */
  struct layer_desc ld;
  layer_describe_at(&m, 0, &ld);
  EQ(ld.ffn, 18432);
  EQ(ld.shared, 0);
}

/* Sliding window FLOPs: the core scales by the window's pairs. */
Test(models2025, window_flops)
{
  struct model m = get("gpt-oss-20b");
  double T = 4096, s = 4096, q = 64 * 64.0;
  double full = layer_fwd_flops(&m, 1, T, s);
  double win = layer_fwd_flops(&m, 0, T, s);
  double core = 4 * T * s * q;
  double ratio = (s * 128 - 128 * 127 / 2.0) / (s * (s + 1) / 2);
  EQ(full - win, core * (1 - ratio));
}

/* ---- The builder's kernels ---- */

/* Sum of the forward attention kernels' FLOPs and bytes of one micro-
 * batch, by layer. */
static void attn_kernels(const struct model *m, const char *const *kv,
                         long layer, double *flops, double *bytes)
{
  struct plan p;
  struct weft_err err = {0};
  cr_assert_eq(test_plan(&p, m, 8, kv, &err), 0, "%s", err.msg);
  struct graph *g = build_graph(m, &p, &err);
  cr_assert_not_null(g, "%s", err.msg);
  *flops = *bytes = 0;
  const struct program *pr = &g->prog[0];
  for (long i = 0; i < pr->n; i++) {
    const struct task *t = &pr->tasks[i];
    if (t->op == KK_ATTN && t->kind == TK_KERNEL && t->layer == layer &&
        t->mb == 0 && t->phase == PH_FWD) {
      *flops += t->flops;
      *bytes += t->bytes;
    }
  }
  graph_free(g);
}

/* MLA's attention kernel: QK^T over heads of nope + rope, PV over heads of
 * v_dim, 2 b s^2 a (dqk + dv) FLOPs split over TP; reads Q, K (a x dqk
 * each) and V, writes O (a x dv each). */
Test(models2025, mla_attention_kernel)
{
  struct model m = get("deepseek-v3");
  struct weft_err err = {0};
  cr_assert_eq(model_set(&m, MK_LAYERS, "4", "t", &err), 0);
  cr_assert_eq(model_set(&m, MK_MTP_LAYERS, "0", "t", &err), 0);
  cr_assert_eq(model_set(&m, MK_SEQ, "1024", "t", &err), 0);
  const char *kv[] = {"tp", "2", "ep", "4", "global_batch", "4", NULL};
  double f, b, s = 1024, a = 128, t = 2, e = 2;
  attn_kernels(&m, kv, 3, &f, &b);
  EQ(f, 2 * s * s * a * (192 + 128) / t);
  EQ(b, e * s * a * (192 + 192 + 128 + 128) / t);
}

/* A sliding window's kernel: the full layer's FLOPs times the pairs ratio,
 * the same bytes. */
Test(models2025, window_attention_kernel)
{
  struct model m = get("gpt-oss-20b");
  struct weft_err err = {0};
  cr_assert_eq(model_set(&m, MK_LAYERS, "2", "t", &err), 0);
  const char *kv[] = {"ep", "8", "global_batch", "8", NULL};
  double f0, b0, f1, b1, s = 4096, q = 64 * 64.0, kvw = 8 * 64.0, e = 2;
  attn_kernels(&m, kv, 0, &f0, &b0);
  attn_kernels(&m, kv, 1, &f1, &b1);
  EQ(f1, 4 * s * s * q);
  EQ(f0, 4 * s * s * q * (s * 128 - 128 * 127 / 2.0) / (s * (s + 1) / 2));
  EQ(b0, e * (2 * s * q + 2 * s * kvw));
  EQ(b1, b0);
}

/* DeepSeek-V3 under the plan of the issue (TP 2, PP 8, EP 64 on 1024
 * GPUs): the last stage holds the MTP module besides its layers, its
 * layer's experts split over EP and the rest over TP as the other layers;
 * eh_proj column-parallel. */
Test(models2025, deepseek_v3_mtp_on_last_stage)
{
  struct model m = get("deepseek-v3"), n = m;
  n.mtp_layers = 0;
  struct plan p;
  struct weft_err err = {0};
  const char *kv[] = {"tp", "2", "pp", "8", "ep", "64", "sp", "yes",
                      "global_batch", "1024", NULL};
  cr_assert_eq(test_plan(&p, &m, 1024, kv, &err), 0, "%s", err.msg);
  double h = 7168;
  double moe = layer_params_rank_kind(&m, LAYER_KIND_MOE, 2, 64);
  EQ(stage_params_rank(&m, &p, 7) - stage_params_rank(&n, &p, 7),
     moe + 3 * h + 2 * h * h / 2);
  EQ(stage_params_rank(&m, &p, 0), stage_params_rank(&n, &p, 0));
  EQ(stage_expert_params_rank(&m, &p, 7) - stage_expert_params_rank(&n, &p, 7),
     256 / 64.0 * 3 * h * 2048 / 2);
  struct memory mm, mn;
  memory_per_gpu(&m, &p, 80e9, &mm);
  memory_per_gpu(&n, &p, 80e9, &mn);
  cr_assert_geq(mm.total, mn.total);
}

/* ---- Refusals ---- */

static void bad(const char *preset, const char *key, const char *value,
                const char *msg)
{
  struct model m = get(preset);
  struct weft_err err = {0};
  char origin[64];
  snprintf(origin, sizeof origin, "--%s", key);
  cr_assert_eq(model_set(&m, model_key_from_name(key), value, origin, &err), 0,
               "%s", err.msg);
  cr_assert_eq(model_check(&m, &err), WEFT_EINVAL, "%s %s", key, value);
  cr_assert_str_eq(err.msg, msg);
}

Test(models2025, refusals)
{
  bad("llama3-8b", "shared_ffn", "1024", "model 'llama3-8b': moe_ffn, "
      "shared_ffn, dense_layers, moe_every and expert_groups need an MoE "
      "model (experts > 1)");
  bad("llama3-8b", "q_lora", "512", "--q_lora: q_lora, rope_dim, nope_dim "
      "and v_dim are multi-head latent attention's; set kv_lora to turn it "
      "on");
  bad("llama3-8b", "kv_lora", "512", "--kv_lora: multi-head latent "
      "attention has as many KV heads as heads, no QKV bias, no q/k norm "
      "and the llama style");
  bad("gpt-oss-20b", "attn_chunk", "8192", "model 'gpt-oss-20b': a sliding "
      "window and chunked attention exclude each other");
  bad("deepseek-v3", "topk_groups", "9", "model 'deepseek-v3': 8 expert "
      "groups must divide 256 experts, and topk_groups (9) be 1 to the "
      "groups and hold the top-8 experts");
  bad("deepseek-v3", "dense_layers", "61", "--dense_layers: 61 dense layers "
      "leave no MoE layer of 61");
  bad("llama3-8b", "full_every", "2", "--full_every: full_every needs a "
      "window or attn_chunk");
}

/* MLA's activations (Korthikanti et al.'s accounting, accounting.c): per
 * token Q and K 2 a (nope + rope) bytes each, V and the projection's input
 * 2 a v_dim each, the latent q and kv 4 (q_lora + kv_lora + rope); the
 * routed experts' FFN per copy, the shared expert's once, the routed
 * copies of the FC1 input and mask, the flash kernel's log-sum-exp.  The
 * largest kind of layer counts (DeepSeek-V3's MoE layers). */
Test(models2025, mla_moe_activations)
{
  struct model m = get("deepseek-v3");
  struct plan p;
  struct weft_err err = {0};
  const char *kv[] = {"ep", "8", "global_batch", "8", NULL};
  cr_assert_eq(test_plan(&p, &m, 8, kv, &err), 0, "%s", err.msg);
  double h = 7168, a = 128, s = 4096;
  double repl = 10 * h + 4 * (1536 + 512 + 64) + 7 * 3 * h;
  double split = 2 * a * 192 * 2 + 2 * a * 128 * 2 +
                 8 * (2 * 2048 * 2 + 2 * 2048) + (2 * 2048 * 2 + 2 * 2048);
  /* no dropout in a llama-style model: Megatron's framework drops the
   * masks, the ZeRO accounting (the default) keeps Korthikanti's */
  EQ(layer_activation_bytes(&m, &p), s * (repl + split + 4 * a));
}

/* The window's kernel time: its work (the window's pairs) at the rate of a
 * sequence as long as the window (costmodel.c, attn_time); a full layer's
 * at its sequence's.  On the H100's default kernel, forward. */
Test(models2025, window_kernel_time)
{
  struct weft_err err = {0};
  struct catalog *cat = catalog_builtin(&err);
  cr_assert(cat, "%s", err.msg);
  const struct gpu_spec *g = catalog_gpu(cat, "H100-SXM");
  cr_assert(g);
  double s = 4096, q = 64 * 64.0, full = 4 * s * s * q;
  double w = full * (s * 128 - 128 * 127 / 2.0) / (s * (s + 1) / 2);
  struct task tw = {.kind = TK_KERNEL, .op = KK_ATTN, .m = 4096, .n = 128,
                    .k = 64, .batch = 64, .flops = w, .bytes = 1};
  struct task tf = tw;
  tf.n = 4096;
  tf.flops = full;
  /* (the same launch overhead in both) */
  NEAR(cost_kernel(g, DTYPE_BF16, -1, &tw, NULL) -
           cost_kernel(g, DTYPE_BF16, -1, &tf, NULL),
       w / 2 / cost_attn_rate(g, -1, false, 128, 64, true) -
           full / 2 / cost_attn_rate(g, -1, false, 4096, 64, true),
       1e-9);
  catalog_free(cat);
}

/* Forward GEMM FLOPs (plain and grouped) of one micro-batch by layer. */
static double gemm_flops(const struct graph *g, long stage, long layer)
{
  double f = 0;
  const struct program *pr = &g->prog[stage];
  for (long i = 0; i < pr->n; i++) {
    const struct task *t = &pr->tasks[i];
    if (t->kind == TK_KERNEL && (t->op == KK_GEMM || t->op == KK_GGEMM) &&
        t->layer == layer && t->mb == 0 && t->phase == PH_FWD)
      f += t->flops;
  }
  return f;
}

/* The builder's GEMMs of a DeepSeek layer equal the accounting's linear
 * FLOPs (layer_fwd_flops less the attention core): MLA's five linears
 * over the rank's tokens, the router, the routed experts over top-k
 * copies, the shared expert over every token; a dense layer its 18432-wide
 * FFN; the MTP module its layer and eh_proj (2h -> h). */
Test(models2025, builder_gemms_match_accounting)
{
  struct model m = get("deepseek-v3");
  struct plan p;
  struct weft_err err = {0};
  cr_assert_eq(model_set(&m, MK_LAYERS, "4", "t", &err), 0);
  cr_assert_eq(model_set(&m, MK_SEQ, "256", "t", &err), 0);
  const char *kv[] = {"ep", "8", "global_batch", "8", NULL};
  cr_assert_eq(test_plan(&p, &m, 8, kv, &err), 0, "%s", err.msg);
  struct graph *g = build_graph(&m, &p, &err);
  cr_assert(g, "%s", err.msg);
  double T = 256, s = 256, a = 128, core = 2 * T * s * a * (192 + 128);
  EQ(gemm_flops(g, 0, 0), layer_fwd_flops(&m, 0, T, s) - core);
  EQ(gemm_flops(g, 0, 3), layer_fwd_flops(&m, 3, T, s) - core);
  double h = 7168;
  EQ(gemm_flops(g, 0, 4), layer_fwd_flops(&m, 4, T, s) - core +
                              2 * T * 2 * h * h);
  graph_free(g);
}
