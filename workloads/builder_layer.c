/*
 * builder_layer.c - the passes of Megatron-LM's GPT layer with 1D
 * tensor parallelism (builder.h describes the kernels), of the embedding
 * and of the loss: GEMMs and grouped GEMMs, attention (fused, unfused, or
 * as ring attention with context parallelism), the TP/SP collectives, the
 * MoE token exchange and the FP8 casts.  bld_megatron_ops gathers them for
 * the stage programs; Tensor3D borrows attention and the loss kernels.
 */
#include "workloads/builder_int.h"

/* batch x ([M x K] @ [K x N]). */
static long bmm(struct ctx *c, int phase, long layer, double batch, double M,
                double N, double K)
{
  struct task t = {.kind = TK_KERNEL, .op = KK_GEMM, .stream = ST_COMPUTE,
                   .phase = (uint8_t)phase, .layer = (int32_t)layer,
                   .m = (uint32_t)M, .n = (uint32_t)N, .k = (uint32_t)K,
                   .batch = (uint32_t)batch, .flops = 2 * batch * M * N * K,
                   .bytes = c->e * batch * (M * K + K * N + M * N)};
  return bld_add(c, &t);
}

/* G groups of [M x K] @ [K x N], each with its own weight: the grouped
 * GEMM (Megatron-core's GroupedMLP, DeepGEMM's m-grouped GEMMs) that runs a
 * rank's local experts in one kernel.  Shapes are per group. */
static long ggemm(struct ctx *c, int phase, long layer, double G, double M,
                  double N, double K)
{
  struct task t = {.kind = TK_KERNEL, .op = KK_GGEMM, .stream = ST_COMPUTE,
                   .phase = (uint8_t)phase, .layer = (int32_t)layer,
                   .m = (uint32_t)(M + 0.999999),
                   .n = (uint32_t)(N + 0.999999),
                   .k = (uint32_t)(K + 0.999999), .batch = (uint32_t)G,
                   .flops = 2 * G * M * N * K,
                   .bytes = c->e * G * (M * K + K * N + M * N)};
  return bld_add(c, &t);
}

/* A GEMM of the feed-forward block over M token rows (tokens along M, or
 * along K when `wgrad`: a weight gradient).  A MoE layer runs it as one
 * grouped GEMM over the rank's experts / EP local experts, each seeing an
 * even share of the routed rows; a dense layer, or one expert per rank, as
 * one GEMM (a one-group grouped GEMM costs the same). */
static long ffn_gemm(struct ctx *c, int phase, long layer, double M, double N,
                     double K, bool wgrad)
{
  long local = model_is_moe(c->m) ? c->m->experts / c->p->ep : 1;
  if (local <= 1)
    return bld_gemm(c, phase, layer, M, N, K);
  double G = (double)local;
  return wgrad ? ggemm(c, phase, layer, G, M, N, K / G)
               : ggemm(c, phase, layer, G, M / G, N, K);
}

/* Attention before FlashAttention (Megatron-LM 2021): scores materialized
 * in HBM, a fused scale-mask-softmax kernel, dropout with a 1-byte mask. */
static long attention_unfused(struct ctx *c, int phase, long layer, bool bwd)
{
  double B = c->b * c->a / c->t, S = c->S, D = c->d, e = c->e;
  double sc = B * S * S; /* scores */
  if (!bwd) {
    bmm(c, phase, layer, B, S, S, D);                       /* Q K^T */
    bld_kernel(c, KK_ELEMWISE, phase, layer, 0, e * 2 * sc);    /* softmax */
    bld_kernel(c, KK_ELEMWISE, phase, layer, 0, (e * 2 + 1) * sc); /* dropout */
    return bmm(c, phase, layer, B, S, D, S);                /* P V */
  }
  bmm(c, phase, layer, B, S, S, D);                         /* dP = dO V^T */
  bmm(c, phase, layer, B, S, D, S);                         /* dV = P^T dO */
  bld_kernel(c, KK_ELEMWISE, phase, layer, 0, (e * 2 + 1) * sc); /* dropout */
  bld_kernel(c, KK_ELEMWISE, phase, layer, 0, e * 3 * sc);      /* softmax */
  bmm(c, phase, layer, B, S, D, S);                         /* dQ = dS K */
  return bmm(c, phase, layer, B, S, D, S);                  /* dK = dS^T Q */
}

static long attention_block(struct ctx *c, int phase, long layer, bool bwd);

/* Ring attention (context parallelism): the rank's queries meet the
 * key/value blocks of every CP rank in turn; while one block is used, the
 * next arrives from the previous rank (stream "cp"), the exchange of block
 * j+1 overlapping the attention on block j.  Causal load balancing (each
 * rank holds chunks i and 2cp-1-i) gives every step the same work: 1/cp of
 * the rank's share.  Backward passes the key/value gradients along with
 * the blocks. */
static long attention_cp(struct ctx *c, int phase, long layer, bool bwd)
{
  long cp = c->p->cp, w = -1, prev = -1;
  double kv = 2 * c->T * c->kv / c->t * c->e; /* K and V of the local part */
  for (long j = 0; j < cp; j++) {
    if (j + 1 < cp) {
      long x = bld_coll(c, CO_SENDRECV, GK_CP, ST_CP, phase, layer,
                        bwd ? 2 * kv : kv);
      if (c->last_compute >= 0)
        graph_dep(c->g, c->s, c->last_compute);
      if (j > 0)
        bld_wait_for(c, prev);
      prev = x;
    } else if (j > 0) {
      bld_wait_for(c, prev);
    }
    w = attention_block(c, phase, layer, bwd);
  }
  return w;
}

long bld_attention(struct ctx *c, int phase, long layer, bool bwd)
{
  if (c->p->cp > 1)
    return attention_cp(c, phase, layer, bwd);
  return attention_block(c, phase, layer, bwd);
}

static long attention_block(struct ctx *c, int phase, long layer, bool bwd)
{
  if (c->p->unfused_attention)
    return attention_unfused(c, phase, layer, bwd);
  double heads = c->a / c->t;
  /* c->S: the local sequence (all of it without CP, one CP rank's share
   * with it, each block being as long as the local part). */
  double flops = 4 * c->b * c->S * c->S * c->h / c->t;
  double q = c->T * c->h / c->t, kv = c->T * c->kv / c->t;
  struct task t = {.kind = TK_KERNEL, .op = bwd ? KK_ATTN_BWD : KK_ATTN,
                   .stream = ST_COMPUTE, .phase = (uint8_t)phase,
                   .layer = (int32_t)layer, .m = (uint32_t)c->S,
                   .n = (uint32_t)c->S, .k = (uint32_t)c->d,
                   .batch = (uint32_t)(c->b * heads),
                   /* Backward: twice the forward matrix FLOPs (Megatron's
                    * count); reads Q, K, V, O, dO, writes dQ, dK, dV. */
                   .flops = bwd ? 2 * flops : flops,
                   .bytes = c->e * (bwd ? 4 * q + 4 * kv : 2 * q + 2 * kv)};
  return bld_add(c, &t);
}

/* The tensor-parallel exchange after a row-parallel GEMM (forward) or a
 * column-parallel data gradient (backward). */
static void tp_reduce(struct ctx *c, int phase, long layer)
{
  if (c->t > 1)
    bld_coll(c, c->p->sp ? CO_REDUCE_SCATTER : CO_ALLREDUCE, GK_TP, ST_COMPUTE,
             phase, layer, c->e * c->T * c->h);
}

/* With sequence parallelism, the all-gather before a column-parallel GEMM
 * (forward) or after a row-parallel data gradient (backward). */
static void sp_gather(struct ctx *c, int phase, long layer)
{
  if (c->t > 1 && c->p->sp)
    bld_coll(c, CO_ALLGATHER, GK_TP, ST_COMPUTE, phase, layer,
             c->e * c->T * c->h);
}

/* MoE token exchange over the expert-parallel group: each rank's buffer is
 * its routed token copies, tokens x top-k x hidden (nccl-tests all-to-all
 * size; (EP-1)/EP of it leaves the rank). */
static void a2a(struct ctx *c, int phase, long layer)
{
  if (c->p->ep > 1)
    bld_coll(c, CO_ALLTOALL, GK_EP, ST_COMPUTE, phase, layer,
             c->e * c->T * c->topk * c->h);
}

/* FP8 linear layers (Transformer Engine): the casts their GEMMs need that
 * no neighbouring kernel does.  Forward: the weights' FP8 copies (and
 * their transposes) once per iteration, on the first micro-batch; the
 * projection's input (attention's BF16 output: read 2, write 1 byte per
 * element; the norms and the activation write their FP8 outputs
 * themselves); the scaling factors' amax update (one small kernel).
 * Backward: every linear layer's output gradient, cast and transposed
 * (read 2, write 1 + 1 bytes per element).  MXFP8 writes the projection's
 * input in both orientations too (its weight gradient needs the
 * column-wise copy) and has no amax kernel. */
static bool fp8(const struct ctx *c) { return c->m->dtype == DTYPE_FP8; }

/* The MXFP8 recipe (plan.h, enum fp8_recipe) writes every operand in both
 * orientations with one 1-byte scale per 32 elements: 2 x (1 + 1/32)
 * bytes per element, and keeps no amax history. */
#define MXFP8_BOTH (2 * (1 + 1.0 / 32))

static bool mxfp8(const struct ctx *c)
{
  return fp8(c) && c->p->fp8_recipe == FP8_MXFP8;
}

/* Bytes written per element cast in both orientations. */
static double fp8_both(const struct ctx *c)
{
  return mxfp8(c) ? MXFP8_BOTH : 2;
}

static void fp8_fwd_casts(struct ctx *c, int phase, long l)
{
  if (!fp8(c))
    return;
  if (phase == PH_FWD && c->mb == 0)
    bld_kernel(c, KK_ELEMWISE, phase, l, 0, (2 + fp8_both(c)) * c->lp);
  /* delayed scaling writes the projection's input once (1 byte) */
  bld_kernel(c, KK_ELEMWISE, phase, l, 0,
             (2 + (mxfp8(c) ? MXFP8_BOTH : 1)) * c->T * c->h / c->t);
  if (!mxfp8(c))
    bld_kernel(c, KK_ELEMWISE, phase, l, 0, 64.0 * 4);
}

static void fp8_grad_cast(struct ctx *c, long l, double elements)
{
  if (fp8(c))
    bld_kernel(c, KK_ELEMWISE, PH_BWD, l, 0, (2 + fp8_both(c)) * elements);
}

static void layer_fwd(struct ctx *c, long l, int phase)
{
  double e = c->e, Tl = c->T_local, h = c->h, T = c->T;
  double M = T * c->topk * (model_is_moe(c->m) ? c->p->moe_imbalance : 1);
  fp8_fwd_casts(c, phase, l);
  bld_kernel(c, KK_NORM, phase, l, 0, e * 2 * Tl * h);
  bld_tpo_ag_gemm(c, phase, l, T, (h + 2 * c->kv) / c->t, h, NULL, 0);
  bld_attention(c, phase, l, false);
  bld_tpo_gemm_rs(c, phase, l, TPO_PROJ, T, h, h / c->t);
  /* dropout and residual */
  bld_kernel(c, KK_ELEMWISE, phase, l, 0, e * 3 * Tl * h);
  bld_kernel(c, KK_NORM, phase, l, 0, e * 2 * Tl * h);
  if (!model_is_moe(c->m)) {
    bld_tpo_ag_gemm(c, phase, l, M, c->gates * c->f / c->t, h, NULL, 0);
    bld_kernel(c, KK_ELEMWISE, phase, l, 0,
               e * (c->gates + 1) * M * c->f / c->t);
    bld_tpo_gemm_rs(c, phase, l, TPO_FC2, M, h, c->f / c->t);
  } else {
    sp_gather(c, phase, l);
    bld_gemm(c, phase, l, T, (double)c->m->experts, h); /* router */
    a2a(c, phase, l);                               /* dispatch */
    ffn_gemm(c, phase, l, M, c->gates * c->f / c->t, h, false);
    bld_kernel(c, KK_ELEMWISE, phase, l, 0,
               e * (c->gates + 1) * M * c->f / c->t);
    ffn_gemm(c, phase, l, M, h, c->f / c->t, false);
    a2a(c, phase, l);                               /* combine */
    tp_reduce(c, phase, l);
  }
  bld_kernel(c, KK_ELEMWISE, phase, l, 0, e * 3 * Tl * h);
}

/* Returns the index of the layer's last weight-gradient GEMM. */
static long layer_bwd(struct ctx *c, long l)
{
  const int B = PH_BWD;
  double e = c->e, Tl = c->T_local, h = c->h, T = c->T, t = c->t;
  double M = T * c->topk * (model_is_moe(c->m) ? c->p->moe_imbalance : 1);
  double F = c->f / t, G = c->gates;
  if (c->p->recompute == RECOMP_FULL)
    layer_fwd(c, l, PH_RECOMP);
  bld_kernel(c, KK_ELEMWISE, B, l, 0, e * 3 * Tl * h);
  if (model_is_moe(c->m)) {
    sp_gather(c, B, l);
    a2a(c, B, l); /* combine's backward */
    fp8_grad_cast(c, l, M * h);
    ffn_gemm(c, B, l, M, F, h, false); /* FC2 data gradient */
  } else {
    bld_tpo_ag_gemm(c, B, l, M, F, h, fp8_grad_cast, M * h);
  }
  ffn_gemm(c, B, l, F, h, M, true);    /* FC2 weight gradient */
  /* Activation backward: reads dy and the G inputs, writes their G
   * gradients (GELU: x, dy -> dx; SwiGLU: gate, up, dy -> dgate, dup). */
  bld_kernel(c, KK_ELEMWISE, B, l, 0, e * (2 * G + 1) * M * c->f / t);
  fp8_grad_cast(c, l, M * G * F);
  if (!model_is_moe(c->m)) {
    bld_tpo_bulk(c, l, TPO_FC1, M, h, G * F); /* FC1 data and weight gradients */
  } else {
    ffn_gemm(c, B, l, M, h, G * F, false); /* FC1 data gradient */
    ffn_gemm(c, B, l, G * F, h, M, true);  /* FC1 weight gradient */
    a2a(c, B, l); /* dispatch's backward */
    double E = (double)c->m->experts;
    bld_gemm(c, B, l, T, h, E);
    bld_gemm(c, B, l, E, h, T);
    tp_reduce(c, B, l);
  }
  bld_kernel(c, KK_NORM, B, l, 0, e * 3 * Tl * h);
  bld_kernel(c, KK_ELEMWISE, B, l, 0, e * 3 * Tl * h);
  /* projection data gradient */
  bld_tpo_ag_gemm(c, B, l, T, h / t, h, fp8_grad_cast, T * h);
  bld_gemm(c, B, l, h / t, h, T);          /* projection weight gradient */
  if (c->p->recompute == RECOMP_SELECTIVE)
    bld_attention(c, PH_RECOMP, l, false);
  bld_attention(c, B, l, true);
  double qkv = (h + 2 * c->kv) / t;
  fp8_grad_cast(c, l, T * qkv);
  long last = bld_tpo_bulk(c, l, TPO_QKV, T, h, qkv); /* QKV data, weight grads */
  bld_kernel(c, KK_NORM, B, l, 0, e * 3 * Tl * h);
  return last;
}

static void embed_fwd(struct ctx *c)
{
  double e = c->e;
  bld_kernel(c, KK_EMBED, PH_FWD, -1, 0,
             e * c->T * c->h * (c->m->gpt_style ? 3 : 1));
  /* Vocabulary-parallel embedding: partial lookups summed over TP. */
  tp_reduce(c, PH_FWD, -1);
  bld_kernel(c, KK_ELEMWISE, PH_FWD, -1, 0, e * 2 * c->T_local * c->h);
}

static long embed_bwd(struct ctx *c)
{
  sp_gather(c, PH_BWD, -1);
  return bld_kernel(c, KK_EMBED, PH_BWD, -1, 0, c->e * 2 * c->T * c->h);
}

/* The loss's kernels over the local logits (T x V/t, e bytes each) in
 * its forward or backward (plan.h, enum cross_entropy).  Megatron-LM's
 * sequences are plain elementwise and row-reduction kernels, which run
 * at memory-bound speed (elemwise):
 *   fp32: cast e+4, max 4, subtract 8, exp 8, sum 4, divide 8 bytes per
 *     logit; backward: multiply 8, cast back 4+e;
 *   16bit: max e, subtract 2e, exp 2e, sum e, divide 2e; backward 2e.
 * fused: one cross-entropy kernel each way, costed as the measured
 * PyTorch cross-entropy at the catalog's loss_eff (which is per 2e bytes
 * per logit each way, the convention it was fitted with). */
void bld_loss_kernel(struct ctx *c, enum phase ph)
{
  double e = c->e, n = c->T * (double)c->m->vocab / (double)c->t;
  bool bwd = ph == PH_BWD;
  switch (c->p->xent) {
  case XENT_FUSED:
    bld_kernel(c, KK_LOSS, ph, -1, 0, 2 * e * n);
    break;
  case XENT_16BIT:
    bld_kernel(c, KK_ELEMWISE, ph, -1, 0, (bwd ? 2 * e : 8 * e) * n);
    break;
  default:
    bld_kernel(c, KK_ELEMWISE, ph, -1, 0, (bwd ? 12 + e : 36 + e) * n);
  }
}

static void loss_fwd(struct ctx *c)
{
  double e = c->e, V = (double)c->m->vocab, t = c->t;
  bld_kernel(c, KK_NORM, PH_FWD, -1, 0, e * 2 * c->T_local * c->h);
  sp_gather(c, PH_FWD, -1);
  bld_gemm(c, PH_FWD, -1, c->T, V / t, c->h);
  bld_loss_kernel(c, PH_FWD);
  /* Vocabulary-parallel cross-entropy: max, target logit, sum of exp. */
  for (int i = 0; t > 1 && i < 3; i++)
    bld_coll(c, CO_ALLREDUCE, GK_TP, ST_COMPUTE, PH_FWD, -1, 4 * c->T);
}

/* Returns the output layer's weight-gradient GEMM. */
static long loss_bwd(struct ctx *c)
{
  double e = c->e, V = (double)c->m->vocab, t = c->t;
  bld_loss_kernel(c, PH_BWD);
  bld_gemm(c, PH_BWD, -1, c->T, c->h, V / t);
  long w = bld_gemm(c, PH_BWD, -1, V / t, c->h, c->T);
  tp_reduce(c, PH_BWD, -1);
  bld_kernel(c, KK_NORM, PH_BWD, -1, 0, e * 3 * c->T_local * c->h);
  return w;
}

const struct layer_ops bld_megatron_ops = {
  .layer_fwd = layer_fwd, .layer_bwd = layer_bwd,
  .embed_fwd = embed_fwd, .embed_bwd = embed_bwd,
  .loss_fwd = loss_fwd, .loss_bwd = loss_bwd,
  .p2p_scatter_gather = true, .accumulate = true,
};
