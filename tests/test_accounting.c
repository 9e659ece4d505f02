/*
 * test_accounting.c - activation memory equals Korthikanti et al.'s
 * formulas for each recomputation mode, and weights, gradients and
 * optimizer states follow 2 + 2 + 12 bytes per parameter.
 */
#include <criterion/criterion.h>
#include <math.h>

#include "workloads/accounting.h"

#define REL(a, b) cr_assert(fabs((a) - (b)) <= 1e-12 * fabs(b), "%.17g != %.17g", (double)(a), (double)(b))

/* The 22B GPT of Korthikanti et al. Table 4 (KOR22-T4-*): h 6144, a 64,
 * s 2048, b 4, t 8. */
static void k22(struct model *m, struct plan *p, enum recompute r, bool sp)
{
  cr_assert_eq(model_from_preset(m, "gpt-18.4b", NULL), 0);
  m->hidden = 6144;
  m->heads = 64;
  m->kv_heads = 64;
  m->ffn = 4 * 6144;
  plan_init(p);
  p->tp = 8;
  p->micro_batch = 4;
  p->recompute = r;
  p->sp = sp;
  p->unfused_attention = true; /* the attention Korthikanti et al. measured */
}

Test(accounting, korthikanti_per_layer)
{
  struct model m;
  struct plan p;
  double s = 2048, b = 4, h = 6144, a = 64, t = 8;
  double sbh = s * b * h;
  k22(&m, &p, RECOMP_NONE, false);
  REL(layer_activation_bytes(&m, &p), sbh * (10 + 24 / t + 5 * a * s / (h * t)));
  k22(&m, &p, RECOMP_NONE, true);
  REL(layer_activation_bytes(&m, &p), sbh / t * (34 + 5 * a * s / h));
  k22(&m, &p, RECOMP_SELECTIVE, false);
  REL(layer_activation_bytes(&m, &p), sbh * (10 + 24 / t));
  k22(&m, &p, RECOMP_SELECTIVE, true);
  REL(layer_activation_bytes(&m, &p), sbh * 34 / t);
  k22(&m, &p, RECOMP_FULL, false);
  REL(layer_activation_bytes(&m, &p), 2 * sbh);
  k22(&m, &p, RECOMP_NONE, false);
  p.tp = 1;
  REL(layer_activation_bytes(&m, &p), sbh * (34 + 5 * a * s / h));
}

Test(accounting, one_f_one_b_first_stage_holds_all_layers)
{
  /* With 1F1B, stage 0 keeps p micro-batches of L/p layers: L layers. */
  struct model m;
  cr_assert_eq(model_from_preset(&m, "gpt3-175b", NULL), 0);
  struct plan p;
  plan_init(&p);
  p.tp = 8;
  p.pp = 8;
  p.global_batch = 1536;
  p.sp = true;
  p.recompute = RECOMP_SELECTIVE;
  struct weft_err err = {0};
  cr_assert_eq(plan_resolve(&p, &m, 1024, &err), 0, "%s", err.msg);
  struct memory mem;
  memory_per_gpu(&m, &p, 80e9, &mem);
  double sbh = 2048.0 * 1 * 12288;
  cr_assert_eq(mem.stage, 0);
  cr_assert_eq(mem.peak_inflight, 8);
  REL(mem.activations, 96 * sbh * 34 / 8);
  /* GPipe keeps all m = 96 micro-batches. */
  cr_assert_eq(plan_set(&p, PK_SCHEDULE, "gpipe", "x", &err), 0);
  memory_per_gpu(&m, &p, 80e9, &mem);
  REL(mem.activations, 96 * 12 * sbh * 34 / 8);
}

Test(accounting, weights_grads_optimizer)
{
  struct model m;
  cr_assert_eq(model_from_preset(&m, "gpt-1.7b", NULL), 0);
  struct plan p;
  plan_init(&p);
  p.global_batch = 512;
  struct weft_err err = {0};
  cr_assert_eq(plan_resolve(&p, &m, 32, &err), 0, "%s", err.msg);
  struct memory mem;
  memory_per_gpu(&m, &p, 80e9, &mem);
  double P = model_params(&m);
  REL(stage_params_rank(&m, &p, 0), P);
  REL(mem.weights, 2 * P);
  REL(mem.grads, 2 * P);
  REL(mem.optimizer, 12 * P);
  cr_assert(mem.fits);
  /* 16 bytes x 1.7B = 27 GB + activations: does not fit a 16 GB GPU. */
  memory_per_gpu(&m, &p, 16e9, &mem);
  cr_assert_not(mem.fits);
}

Test(accounting, stage_params_sum_to_model)
{
  /* Summed over stages and TP ranks, split weights count once; replicated
   * norms and biases count t times and the tied output copy once more. */
  const char *models[] = {"gpt3-175b", "llama3-70b"};
  for (int i = 0; i < 2; i++) {
    struct model m;
    cr_assert_eq(model_from_preset(&m, models[i], NULL), 0);
    struct plan p;
    plan_init(&p);
    p.pp = 8;
    p.global_batch = 64;
    struct weft_err err = {0};
    cr_assert_eq(plan_resolve(&p, &m, 8, &err), 0, "%s", err.msg);
    double sum = 0;
    for (long s = 0; s < 8; s++)
      sum += stage_params_rank(&m, &p, s);
    double tied = m.gpt_style ? (double)m.vocab * m.hidden : 0;
    REL(sum, model_params(&m) + tied);
  }
}

Test(accounting, flash_attention_keeps_no_scores)
{
  struct model m;
  struct plan p;
  k22(&m, &p, RECOMP_NONE, false);
  p.unfused_attention = false;
  double s = 2048, b = 4, h = 6144, a = 64, t = 8;
  REL(layer_activation_bytes(&m, &p), s * b * (h * (10 + 24 / t) + 4 * a / t));
}

/* The buffers: NCCL's ring buffers per channel of every communicator the
 * stage runs collectives on, Simple buffers per pipeline peer, cuBLAS's
 * workspaces; and the shard factors.  GPT 1.7B, TP 2 x PP 4 x DP 2, ZeRO-1:
 * stage 0 holds the most (the embedding and the most micro-batches in
 * flight) and runs collectives on TP, DP and the embedding group, with one
 * pipeline peer. */
Test(accounting, buffers_and_shard_factors)
{
  struct model m;
  cr_assert_eq(model_from_preset(&m, "gpt-1.7b", NULL), 0);
  struct plan p;
  plan_init(&p);
  p.tp = 2;
  p.pp = 4;
  p.zero = 1;
  p.global_batch = 16;
  struct weft_err err = {0};
  cr_assert_eq(plan_resolve(&p, &m, 16, &err), 0, "%s", err.msg);
  struct memory mem;
  memory_per_gpu(&m, &p, 80e9, &mem);
  cr_assert_eq(mem.stage, 0);
  cr_assert_eq(mem.communicators, 3);
  cr_assert_eq(mem.p2p_peers, 1);
  double conn = 8 * 512 * 8 * 16 + 120 * 640 * 8 * 8 + (1 << 22);
  REL(mem.buffers, 3 * 32 * conn + 2 * (1 << 22) + 33 * (1 << 20));
  REL(mem.shard, 2.0);
  REL(mem.expert_shard, 1.0);
  REL(mem.total, mem.weights + mem.grads + mem.optimizer + mem.activations +
                     mem.transient + mem.buffers);
  /* Interleaved, every stage talks to both neighbours; one GPU, no
   * communicator at all. */
  cr_assert_eq(plan_set(&p, PK_SCHEDULE, "interleaved:2", "x", &err), 0);
  memory_per_gpu(&m, &p, 80e9, &mem);
  cr_assert_eq(mem.p2p_peers, 2);
  /* Two interleaved stages: both neighbours are the same GPU. */
  p.pp = 2;
  cr_assert_eq(plan_resolve(&p, &m, 16, &err), 0, "%s", err.msg);
  memory_per_gpu(&m, &p, 80e9, &mem);
  cr_assert_eq(mem.p2p_peers, 1);
  plan_init(&p);
  p.global_batch = 1;
  cr_assert_eq(plan_resolve(&p, &m, 1, &err), 0, "%s", err.msg);
  memory_per_gpu(&m, &p, 80e9, &mem);
  cr_assert_eq(mem.communicators, 0);
  cr_assert_eq(mem.p2p_peers, 0);
  REL(mem.buffers, 33.0 * (1 << 20));
  REL(mem.shard, 1.0);
}

/* torchtitan's op policy keeps per token the layer's input and FC2's
 * output, q, v, FC1's gate output, attention's output (16-bit) and the
 * log-sum-exp (4 bytes per head): s b (4h + 2h + 2kv + 2f + 2h + 4a). */
Test(accounting, torchtitan_op_policy_activations)
{
  struct model m;
  struct plan p;
  cr_assert_eq(model_from_preset(&m, "llama3-8b", NULL), 0);
  plan_init(&p);
  p.micro_batch = 2;
  p.recompute = RECOMP_SELECTIVE;
  p.sel_ops = true;
  double s = (double)m.seq, h = (double)m.hidden, f = (double)m.ffn;
  double kv = (double)model_kv_dim(&m), a = (double)m.heads;
  REL(layer_activation_bytes(&m, &p),
      s * 2 * (4 * h + 2 * h + 2 * kv + 2 * f + 2 * h + 4 * a));
}

/* A Llama-style model under `framework`, resolved on `gpus` GPUs. */
static void llama(struct model *m, struct plan *p, const char *preset,
                  enum mem_framework framework, long gpus, int zero,
                  enum recompute r)
{
  cr_assert_eq(model_from_preset(m, preset, NULL), 0);
  plan_init(p);
  p->zero = zero;
  p->fsdp = zero >= 3;
  p->micro_batch = 1;
  p->global_batch = gpus;
  p->recompute = r;
  p->mem_framework = framework;
  struct weft_err err = {0};
  cr_assert_eq(plan_resolve(p, m, gpus, &err), 0, "%s", err.msg);
}

/* torchtitan's FSDP2 keeps FP32 sharded parameters (MixedPrecisionPolicy
 * casts them to BF16 when gathered: no master copy), FP32 gradients and
 * FP32 Adam moments: 4 + 4 + 8 bytes per parameter, all over the shard
 * group. */
Test(accounting, torchtitan_fsdp2_states)
{
  struct model m;
  struct plan p;
  llama(&m, &p, "llama3-8b", MF_TORCHTITAN, 8, 3, RECOMP_SELECTIVE);
  struct memory mem;
  memory_per_gpu(&m, &p, 96e9, &mem);
  double P = model_params(&m);
  REL(mem.weights, 4 * P / 8);
  REL(mem.grads, 4 * P / 8);
  REL(mem.optimizer, 8 * P / 8);
  /* The ZeRO accounting of the same plan: 2 + 2 + 12. */
  p.mem_framework = MF_ZERO;
  memory_per_gpu(&m, &p, 96e9, &mem);
  REL(mem.weights, 2 * P / 8);
  REL(mem.optimizer, 12 * P / 8);
}

/* torchtitan's per-op selective checkpointing keeps the block's input,
 * the attention kernel's output and log-sum-exp, and the outputs of wq,
 * wv, w1 and w2 (the odd matrix multiplies in forward order):
 * s b (2h + 2h + 2kv + 2f + 2h + 2h + 4a) per layer. */
Test(accounting, torchtitan_op_sac_activations)
{
  struct model m;
  struct plan p;
  llama(&m, &p, "llama3-8b", MF_TORCHTITAN, 8, 3, RECOMP_SELECTIVE);
  p.micro_batch = 2;
  p.global_batch = 16;
  struct weft_err err = {0};
  cr_assert_eq(plan_resolve(&p, &m, 8, &err), 0, "%s", err.msg);
  struct memory mem;
  memory_per_gpu(&m, &p, 96e9, &mem);
  double s = 8192, b = 2, h = 4096, kv = 1024, f = 14336, a = 32, L = 32;
  REL(mem.activations, L * s * b * (8 * h + 2 * kv + 2 * f + 4 * a));
  /* The eager FP32 loss (12 bytes per logit in its backward) is the
   * larger moment here, with the final norm and output layer gathered in
   * BF16 (never resharded after the forward pass); beside it the
   * all-gather streams' blocks: two flat outputs, the output unit's and a
   * layer's, and one shard's BF16 copy. */
  double V = 128256, N = 8, R = V * h + h, Lp = layer_params(&m);
  REL(mem.transient, 12 * s * b * V + 2 * R + 2 * (Lp + R) + 2 * Lp / N);
}

/* A layer's backward as the larger moment (a 32K vocabulary): what the
 * per-op policy dropped is recomputed (Korthikanti's layer without
 * dropout masks minus what was kept: s b (4h + 2kv + 4f)), and FSDP2
 * holds on the compute stream the layer's unsharded BF16 parameters (2
 * bytes per layer parameter) and gradients (2) and two FP32
 * reduce-scatter inputs (8); beside them, on the all-gather streams, two
 * flat BF16 outputs (two layers': here a layer is larger than the output
 * unit) and a shard's copy (2/N). */
Test(accounting, torchtitan_layer_backward_moment)
{
  struct model m;
  struct plan p;
  llama(&m, &p, "llama2-7b", MF_TORCHTITAN, 8, 3, RECOMP_SELECTIVE);
  struct memory mem;
  memory_per_gpu(&m, &p, 80e9, &mem);
  double s = 4096, b = 1, h = 4096, kv = 4096, f = 11008, V = 32000, N = 8;
  double Lp = layer_params(&m);
  double remat = s * b * (4 * h + 2 * kv + 4 * f);
  double R = V * h + h;
  double bwd = remat + 2 * Lp + 2 * Lp + 8 * Lp;
  double side = 4 * Lp + 2 * Lp / N;
  cr_assert_gt(Lp, R);
  cr_assert_gt(bwd, 12 * s * b * V + 2 * R);
  REL(mem.transient, bwd + side);
  /* A BF16 reduce dtype (grad_dtype given) halves the reduce-scatter
   * inputs. */
  struct weft_err err = {0};
  cr_assert_eq(plan_set(&p, PK_GRAD_DTYPE, "bf16", "x", &err), 0);
  memory_per_gpu(&m, &p, 80e9, &mem);
  REL(mem.transient, bwd - 4 * Lp + side);
  /* The CUDA context counts outside framework zero. */
  double ctx = mem.buffers;
  p.mem_framework = MF_ZERO;
  memory_per_gpu(&m, &p, 80e9, &mem);
  REL(ctx - mem.buffers, 287047680.0);
}

/* Transformer Engine caches the FP8 weight and its transpose of the
 * linear layers only: 2 bytes per QKV, projection and FFN weight, none
 * for the embedding, output layer and norms. */
Test(accounting, megatron_fp8_cache_is_linear_weights)
{
  struct model m;
  struct plan p;
  llama(&m, &p, "llama3-8b", MF_MEGATRON, 8, 1, RECOMP_SELECTIVE);
  m.dtype = DTYPE_FP8;
  struct memory mem;
  memory_per_gpu(&m, &p, 80e9, &mem);
  double h = 4096, kv = 1024, f = 14336, L = 32;
  double linear = L * (h * (h + 2 * kv) + h * h + 3 * h * f);
  REL(mem.weights, 2 * model_params(&m) + 2 * linear);
  p.mem_framework = MF_ZERO; /* the whole model cached */
  memory_per_gpu(&m, &p, 80e9, &mem);
  REL(mem.weights, 4 * model_params(&m));
}

/* A model without dropout stores no dropout masks (PyTorch's dropout with
 * p = 0 returns its input): 2 bytes per token and layer fewer than
 * Korthikanti's count for Llama; GPT keeps them. */
Test(accounting, megatron_no_dropout_masks)
{
  struct model m;
  struct plan p;
  llama(&m, &p, "llama3-8b", MF_MEGATRON, 8, 1, RECOMP_SELECTIVE);
  struct memory mg, zr;
  memory_per_gpu(&m, &p, 80e9, &mg);
  p.mem_framework = MF_ZERO;
  memory_per_gpu(&m, &p, 80e9, &zr);
  REL(zr.activations - mg.activations, 32 * 8192 * 1 * 2 * 4096.0);
  REL(mg.grads, zr.grads);
  REL(mg.optimizer, zr.optimizer);
  cr_assert_eq(model_from_preset(&m, "gpt-1.7b", NULL), 0);
  struct weft_err err = {0};
  cr_assert_eq(plan_resolve(&p, &m, 8, &err), 0, "%s", err.msg);
  memory_per_gpu(&m, &p, 80e9, &zr);
  p.mem_framework = MF_MEGATRON;
  memory_per_gpu(&m, &p, 80e9, &mg);
  REL(mg.activations, zr.activations);
  REL(mg.total, zr.total + MEM_CUDA_CONTEXT_BYTES);
}

/* FP8 parameters (fp8_params) are the FP8 cache: an FP8 model holds 2
 * bytes per weight, as a BF16 one, where FP8 weights beside BF16 ones
 * hold 2 more per parameter of the linear layers (all of them under the
 * ZeRO accounting). */
Test(accounting, fp8_params_replace_the_cache)
{
  struct model m;
  struct plan p;
  struct weft_err err = {0};
  struct memory bf, f8, f8p;
  cr_assert_eq(model_from_preset(&m, "llama3-8b", NULL), 0);
  plan_init(&p);
  p.global_batch = 8;
  p.zero = 1;
  cr_assert_eq(plan_resolve(&p, &m, 8, &err), 0, "%s", err.msg);
  memory_per_gpu(&m, &p, 80e9, &bf);
  m.dtype = DTYPE_FP8;
  memory_per_gpu(&m, &p, 80e9, &f8);
  p.fp8_params = true;
  memory_per_gpu(&m, &p, 80e9, &f8p);
  REL(f8p.weights, bf.weights);
  REL(f8.weights, 2 * bf.weights);
}

/* Under TP the op policy's saved w2 output is a full-width partial sum on
 * every rank (row-parallel, before its reduction); the others split. */
Test(accounting, torchtitan_op_policy_under_tp)
{
  struct model m;
  struct plan p;
  cr_assert_eq(model_from_preset(&m, "llama3-8b", NULL), 0);
  plan_init(&p);
  p.micro_batch = 1;
  p.tp = 2;
  p.recompute = RECOMP_SELECTIVE;
  p.sel_ops = true;
  double s = (double)m.seq, h = (double)m.hidden, f = (double)m.ffn;
  double kv = (double)model_kv_dim(&m), a = (double)m.heads, t = 2;
  REL(layer_activation_bytes(&m, &p),
      s * (2 * h + (2 * h + 2 * kv + 2 * f + 2 * h + 4 * a) / t + 2 * h));
}
