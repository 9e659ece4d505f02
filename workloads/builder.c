/*
 * builder.c - the task graph of one training iteration (see builder.h).
 *
 * Invariant: every dependency added names a task added earlier to the same
 * program (graph.h), so the graph is acyclic by construction.
 */
#include "workloads/builder.h"

#include <assert.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sim/base/bounds.h"
#include "sim/base/xalloc.h"
#include "workloads/accounting.h"
#include "workloads/schedule.h"

struct ctx;

/* The passes of one kind of tensor parallelism over a layer, the embedding
 * and the loss, chosen once per stage (ctx_init): Megatron's 1D TP or
 * Tensor3D.  A backward returns the task its weight gradients are final
 * after. */
struct layer_ops {
  void (*layer_fwd)(struct ctx *c, long layer, int phase);
  long (*layer_bwd)(struct ctx *c, long layer);
  void (*embed_fwd)(struct ctx *c);
  long (*embed_bwd)(struct ctx *c);
  void (*loss_fwd)(struct ctx *c);
  long (*loss_bwd)(struct ctx *c);
  bool p2p_scatter_gather; /* with TP > 1 and no SP, a received tensor is
                              all-gathered over TP (Megatron's scatter/
                              gather of pipeline transfers) */
  bool accumulate;         /* weight gradients take an accumulation pass
                              over micro-batches (build_accum_bytes) */
};

/* The most tasks one compute task waits for besides the compute stream's
 * order: at most a blocking send, a receive, a ring-attention block, a
 * DeepSpeed 2021 bucket and a parameter gather, with room to spare. */
enum { PENDING_MAX = 8 };

struct ctx {
  const struct layer_ops *ops;
  struct graph *g;
  const struct model *m;
  const struct plan *p;
  long s;             /* stage */
  int16_t chunk;
  int32_t mb;
  double e;           /* bytes per activation element */
  double b, S, T, h, t, kv, f, gates, a, d, topk;
  double T_local;     /* tokens per rank outside TP regions (SP: T / t) */
  long pending[PENDING_MAX]; /* tasks the next compute task waits for
                                (wait_for) */
  int npending;
  long last_compute;  /* the last task on the compute stream */
  /* The stage's parameters per rank (build_stage): */
  double lp, lx;      /* dense and expert parameters of a layer */
  double emb;         /* embedding (and GPT's position embedding) */
  double head;        /* output layer and final norm, on the last stage */
  double grad_e;      /* bytes per gradient element */
  long vlast;         /* the last virtual stage */
  long *dp_tasks;     /* gradient reductions the optimizer waits for */
  long n_dp;
  bool *gathered;     /* overlap_param_gather: chunks whose parameters are
                         gathered (build_stage) */
  double accum_b;     /* bytes per parameter of a gradient accumulation
                         pass (0: none), after every micro-batch of a
                         chunk when accum_every, else after the first */
  bool accum_every;
  /* Gradient compression: the open bucket's matrices (sum of rows + cols)
   * and vector elements, and the compressed buckets whose hook is still
   * to finish. */
  double bk_rc, bk_vec;
  struct cbucket {
    long wait;           /* the collective its next step waits for */
    double mid_bytes;    /* PowerSGD's middle step (0: none or done) */
    double coll2_bytes;  /* and its second all-reduce */
    double dec_bytes;    /* the decoding */
    bool done;
  } *cq;
  long n_cq, cq_cap;
};

static long add(struct ctx *c, struct task *t)
{
  t->chunk = c->chunk;
  t->mb = c->mb;
  long i = graph_add(c->g, c->s, t);
  if (t->stream == ST_COMPUTE) {
    for (int k = 0; k < c->npending; k++)
      graph_dep(c->g, c->s, c->pending[k]);
    c->npending = 0;
    c->last_compute = i;
  }
  return i;
}

/* Make the next compute task wait for `task` (none when -1).  The only
 * writer of c->pending. */
static void wait_for(struct ctx *c, long task)
{
  if (task < 0)
    return;
  assert(c->npending < PENDING_MAX);
  c->pending[c->npending++] = task;
}

static long kernel(struct ctx *c, enum kernel_kind kk, int phase, long layer,
                   double flops, double bytes)
{
  struct task t = {.kind = TK_KERNEL, .op = (uint8_t)kk, .stream = ST_COMPUTE,
                   .phase = (uint8_t)phase, .layer = (int32_t)layer,
                   .flops = flops, .bytes = bytes};
  return add(c, &t);
}

/* C[M x N] = A[M x K] @ B[K x N]. */
static long gemm(struct ctx *c, int phase, long layer, double M, double N,
                 double K)
{
  struct task t = {.kind = TK_KERNEL, .op = KK_GEMM, .stream = ST_COMPUTE,
                   .phase = (uint8_t)phase, .layer = (int32_t)layer,
                   .m = (uint32_t)M, .n = (uint32_t)(N + 0.999999),
                   .k = (uint32_t)(K + 0.999999), .batch = 1,
                   .flops = 2 * M * N * K,
                   .bytes = c->e * (M * K + K * N + M * N)};
  return add(c, &t);
}

/* batch x ([M x K] @ [K x N]). */
static long bmm(struct ctx *c, int phase, long layer, double batch, double M,
                double N, double K)
{
  struct task t = {.kind = TK_KERNEL, .op = KK_GEMM, .stream = ST_COMPUTE,
                   .phase = (uint8_t)phase, .layer = (int32_t)layer,
                   .m = (uint32_t)M, .n = (uint32_t)N, .k = (uint32_t)K,
                   .batch = (uint32_t)batch, .flops = 2 * batch * M * N * K,
                   .bytes = c->e * batch * (M * K + K * N + M * N)};
  return add(c, &t);
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
  return add(c, &t);
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
    return gemm(c, phase, layer, M, N, K);
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
    kernel(c, KK_ELEMWISE, phase, layer, 0, e * 2 * sc);    /* softmax */
    kernel(c, KK_ELEMWISE, phase, layer, 0, (e * 2 + 1) * sc); /* dropout */
    return bmm(c, phase, layer, B, S, D, S);                /* P V */
  }
  bmm(c, phase, layer, B, S, S, D);                         /* dP = dO V^T */
  bmm(c, phase, layer, B, S, D, S);                         /* dV = P^T dO */
  kernel(c, KK_ELEMWISE, phase, layer, 0, (e * 2 + 1) * sc); /* dropout */
  kernel(c, KK_ELEMWISE, phase, layer, 0, e * 3 * sc);      /* softmax */
  bmm(c, phase, layer, B, S, D, S);                         /* dQ = dS K */
  return bmm(c, phase, layer, B, S, D, S);                  /* dK = dS^T Q */
}

static long attention_block(struct ctx *c, int phase, long layer, bool bwd);
static long coll(struct ctx *c, enum coll_op op, enum group_kind gk,
                 enum stream st, int phase, long layer, double bytes);

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
      long x = coll(c, CO_SENDRECV, GK_CP, ST_CP, phase, layer,
                    bwd ? 2 * kv : kv);
      if (c->last_compute >= 0)
        graph_dep(c->g, c->s, c->last_compute);
      if (j > 0)
        wait_for(c, prev);
      prev = x;
    } else if (j > 0) {
      wait_for(c, prev);
    }
    w = attention_block(c, phase, layer, bwd);
  }
  return w;
}

static long attention(struct ctx *c, int phase, long layer, bool bwd)
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
  return add(c, &t);
}

static long coll(struct ctx *c, enum coll_op op, enum group_kind gk,
                 enum stream st, int phase, long layer, double bytes)
{
  struct task t = {.kind = TK_COLL, .op = (uint8_t)op, .stream = (uint8_t)st,
                   .phase = (uint8_t)phase, .group = (uint8_t)gk,
                   .layer = (int32_t)layer, .bytes = bytes};
  return add(c, &t);
}

/* A gradient reduction on the data-parallel stream, issued after task
 * `after`, that the optimizer step waits for. */
static long grad_coll(struct ctx *c, enum coll_op op, enum group_kind gk,
                      long layer, double bytes, long after)
{
  long i = coll(c, op, gk, ST_DP, PH_BWD, layer, bytes);
  if (after >= 0)
    graph_dep(c->g, c->s, after);
  c->dp_tasks[c->n_dp++] = i;
  return i;
}

/* The tensor-parallel exchange after a row-parallel GEMM (forward) or a
 * column-parallel data gradient (backward). */
static void tp_reduce(struct ctx *c, int phase, long layer)
{
  if (c->t > 1)
    coll(c, c->p->sp ? CO_REDUCE_SCATTER : CO_ALLREDUCE, GK_TP, ST_COMPUTE,
         phase, layer, c->e * c->T * c->h);
}

/* With sequence parallelism, the all-gather before a column-parallel GEMM
 * (forward) or after a row-parallel data gradient (backward). */
static void sp_gather(struct ctx *c, int phase, long layer)
{
  if (c->t > 1 && c->p->sp)
    coll(c, CO_ALLGATHER, GK_TP, ST_COMPUTE, phase, layer, c->e * c->T * c->h);
}

/* MoE token exchange over the expert-parallel group: each rank's buffer is
 * its routed token copies, tokens x top-k x hidden (nccl-tests all-to-all
 * size; (EP-1)/EP of it leaves the rank). */
static void a2a(struct ctx *c, int phase, long layer)
{
  if (c->p->ep > 1)
    coll(c, CO_ALLTOALL, GK_EP, ST_COMPUTE, phase, layer,
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
    kernel(c, KK_ELEMWISE, phase, l, 0, (2 + fp8_both(c)) * c->lp);
  /* delayed scaling writes the projection's input once (1 byte) */
  kernel(c, KK_ELEMWISE, phase, l, 0,
         (2 + (mxfp8(c) ? MXFP8_BOTH : 1)) * c->T * c->h / c->t);
  if (!mxfp8(c))
    kernel(c, KK_ELEMWISE, phase, l, 0, 64.0 * 4);
}

static void fp8_grad_cast(struct ctx *c, long l, double elements)
{
  if (fp8(c))
    kernel(c, KK_ELEMWISE, PH_BWD, l, 0, (2 + fp8_both(c)) * elements);
}

static void layer_fwd(struct ctx *c, long l, int phase)
{
  double e = c->e, Tl = c->T_local, h = c->h, T = c->T;
  double M = T * c->topk * (model_is_moe(c->m) ? c->p->moe_imbalance : 1);
  fp8_fwd_casts(c, phase, l);
  kernel(c, KK_NORM, phase, l, 0, e * 2 * Tl * h);
  sp_gather(c, phase, l);
  gemm(c, phase, l, T, (h + 2 * c->kv) / c->t, h);
  attention(c, phase, l, false);
  gemm(c, phase, l, T, h, h / c->t);
  tp_reduce(c, phase, l);
  kernel(c, KK_ELEMWISE, phase, l, 0, e * 3 * Tl * h); /* dropout+residual */
  kernel(c, KK_NORM, phase, l, 0, e * 2 * Tl * h);
  sp_gather(c, phase, l);
  if (model_is_moe(c->m)) {
    gemm(c, phase, l, T, (double)c->m->experts, h); /* router */
    a2a(c, phase, l);                               /* dispatch */
  }
  ffn_gemm(c, phase, l, M, c->gates * c->f / c->t, h, false);
  kernel(c, KK_ELEMWISE, phase, l, 0, e * (c->gates + 1) * M * c->f / c->t);
  ffn_gemm(c, phase, l, M, h, c->f / c->t, false);
  if (model_is_moe(c->m))
    a2a(c, phase, l);                               /* combine */
  tp_reduce(c, phase, l);
  kernel(c, KK_ELEMWISE, phase, l, 0, e * 3 * Tl * h);
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
  kernel(c, KK_ELEMWISE, B, l, 0, e * 3 * Tl * h);
  sp_gather(c, B, l);
  if (model_is_moe(c->m))
    a2a(c, B, l); /* combine's backward */
  fp8_grad_cast(c, l, M * h);
  ffn_gemm(c, B, l, M, F, h, false);   /* FC2 data gradient */
  ffn_gemm(c, B, l, F, h, M, true);    /* FC2 weight gradient */
  /* Activation backward: reads dy and the G inputs, writes their G
   * gradients (GELU: x, dy -> dx; SwiGLU: gate, up, dy -> dgate, dup). */
  kernel(c, KK_ELEMWISE, B, l, 0, e * (2 * G + 1) * M * c->f / t);
  fp8_grad_cast(c, l, M * G * F);
  ffn_gemm(c, B, l, M, h, G * F, false); /* FC1 data gradient */
  ffn_gemm(c, B, l, G * F, h, M, true);  /* FC1 weight gradient */
  if (model_is_moe(c->m)) {
    a2a(c, B, l); /* dispatch's backward */
    double E = (double)c->m->experts;
    gemm(c, B, l, T, h, E);
    gemm(c, B, l, E, h, T);
  }
  tp_reduce(c, B, l);
  kernel(c, KK_NORM, B, l, 0, e * 3 * Tl * h);
  kernel(c, KK_ELEMWISE, B, l, 0, e * 3 * Tl * h);
  sp_gather(c, B, l);
  fp8_grad_cast(c, l, T * h);
  gemm(c, B, l, T, h / t, h);          /* projection data gradient */
  gemm(c, B, l, h / t, h, T);          /* projection weight gradient */
  if (c->p->recompute == RECOMP_SELECTIVE)
    attention(c, PH_RECOMP, l, false);
  attention(c, B, l, true);
  double qkv = (h + 2 * c->kv) / t;
  fp8_grad_cast(c, l, T * qkv);
  gemm(c, B, l, T, h, qkv);            /* QKV data gradient */
  long last = gemm(c, B, l, qkv, h, T); /* QKV weight gradient */
  tp_reduce(c, B, l);
  kernel(c, KK_NORM, B, l, 0, e * 3 * Tl * h);
  return last;
}

static void embed_fwd(struct ctx *c)
{
  double e = c->e;
  kernel(c, KK_EMBED, PH_FWD, -1, 0, e * c->T * c->h * (c->m->gpt_style ? 3 : 1));
  /* Vocabulary-parallel embedding: partial lookups summed over TP. */
  tp_reduce(c, PH_FWD, -1);
  kernel(c, KK_ELEMWISE, PH_FWD, -1, 0, e * 2 * c->T_local * c->h);
}

static long embed_bwd(struct ctx *c)
{
  sp_gather(c, PH_BWD, -1);
  return kernel(c, KK_EMBED, PH_BWD, -1, 0, c->e * 2 * c->T * c->h);
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
static void loss_kernel(struct ctx *c, enum phase ph)
{
  double e = c->e, n = c->T * (double)c->m->vocab / (double)c->t;
  bool bwd = ph == PH_BWD;
  switch (c->p->xent) {
  case XENT_FUSED:
    kernel(c, KK_LOSS, ph, -1, 0, 2 * e * n);
    break;
  case XENT_16BIT:
    kernel(c, KK_ELEMWISE, ph, -1, 0, (bwd ? 2 * e : 8 * e) * n);
    break;
  default:
    kernel(c, KK_ELEMWISE, ph, -1, 0, (bwd ? 12 + e : 36 + e) * n);
  }
}

static void loss_fwd(struct ctx *c)
{
  double e = c->e, V = (double)c->m->vocab, t = c->t;
  kernel(c, KK_NORM, PH_FWD, -1, 0, e * 2 * c->T_local * c->h);
  sp_gather(c, PH_FWD, -1);
  gemm(c, PH_FWD, -1, c->T, V / t, c->h);
  loss_kernel(c, PH_FWD);
  /* Vocabulary-parallel cross-entropy: max, target logit, sum of exp. */
  for (int i = 0; t > 1 && i < 3; i++)
    coll(c, CO_ALLREDUCE, GK_TP, ST_COMPUTE, PH_FWD, -1, 4 * c->T);
}

/* Returns the output layer's weight-gradient GEMM. */
static long loss_bwd(struct ctx *c)
{
  double e = c->e, V = (double)c->m->vocab, t = c->t;
  loss_kernel(c, PH_BWD);
  gemm(c, PH_BWD, -1, c->T, c->h, V / t);
  long w = gemm(c, PH_BWD, -1, V / t, c->h, c->T);
  tp_reduce(c, PH_BWD, -1);
  kernel(c, KK_NORM, PH_BWD, -1, 0, e * 3 * c->T_local * c->h);
  return w;
}

static const struct layer_ops megatron_ops = {
  .layer_fwd = layer_fwd, .layer_bwd = layer_bwd,
  .embed_fwd = embed_fwd, .embed_bwd = embed_bwd,
  .loss_fwd = loss_fwd, .loss_bwd = loss_bwd,
  .p2p_scatter_gather = true, .accumulate = true,
};

/* ---- Tensor3D (plan.h) ----------------------------------------------
 * The tensor-parallel block is a GX x GY x GZ grid.  A linear layer of
 * `in` x `out` features holds an in/Gin x out/Gout block (Gin = GX, Gout =
 * GY; a transposed layer swaps them), sharded over Z: before each use the
 * block is all-gathered over Z (on the gather stream, one linear ahead of
 * its GEMM), and after the backward its gradient is reduce-scattered over
 * Z (the data-parallel stream).  Forward: local GEMM on the rank's rows
 * (its micro-batch; the batch splits over DP and Z), then an all-reduce
 * of the output over the in-group.  Backward: the data gradient, then an
 * all-reduce over the out-group; the weight gradient.  QKV and FC1 are
 * plain, the projection and FC2 transposed, so every activation arrives
 * split the way the next linear layer reads it: the residual stream
 * (norms, dropout) holds h/GX channels, attention heads/GY heads and the
 * activation function f/GY channels, each computed alike by the ranks of
 * the other group (AxoNN's expert mode).  With K pieces the rows of a
 * micro-batch are over-decomposed: each operation runs piece by piece,
 * each piece's all-reduce on the t3 stream while the next piece computes,
 * and a piece's next operation waits for its own all-reduce only. */
struct t3s {
  double gx, gy, gz, k, R; /* grid, pieces, rows per piece */
  long ready[64];          /* per piece: what its next computation awaits */
  long ag;                 /* the pending weight gather, or -1 */
};

static void t3_init(const struct ctx *c, struct t3s *s)
{
  s->gx = (double)c->p->t3[0];
  s->gy = (double)c->p->t3[1];
  s->gz = (double)c->p->t3[2];
  s->k = (double)c->p->pieces;
  s->R = c->T / s->k;
  for (int j = 0; j < 64; j++)
    s->ready[j] = -1;
  s->ag = -1;
}

/* The next computation of piece j waits for what piece j sent last. */
static void t3_wait(struct ctx *c, struct t3s *s, int j)
{
  wait_for(c, s->ready[j]);
  s->ready[j] = -1;
}

/* The groups a linear layer's in and out features split over (a
 * transposed layer swaps X and Y). */
static void t3_split(const struct t3s *s, bool tr, double *gin, double *gout)
{
  *gin = tr ? s->gy : s->gx;
  *gout = tr ? s->gx : s->gy;
}

/* Gather the weight block of the next linear layer over Z, after the
 * computation issued so far (one linear ahead). */
static void t3_gather(struct ctx *c, struct t3s *s, int phase, long l,
                      double in, double out, bool tr)
{
  s->ag = -1;
  if (s->gz <= 1)
    return;
  double gin, gout;
  t3_split(s, tr, &gin, &gout);
  s->ag = coll(c, CO_ALLGATHER, GK_T3Z, ST_AG, phase, l,
               c->e * in / gin * out / gout);
  if (c->last_compute >= 0)
    graph_dep(c->g, c->s, c->last_compute);
}

/* One memory-bound kernel per piece, `bytes` per row. */
static void t3_elem(struct ctx *c, struct t3s *s, enum kernel_kind kk,
                    int phase, long l, double bytes_per_row)
{
  for (int j = 0; j < (int)s->k; j++) {
    t3_wait(c, s, j);
    kernel(c, kk, phase, l, 0, bytes_per_row * s->R);
  }
}

/* Attention of each piece on the rank's heads/GY. */
static void t3_attention(struct ctx *c, struct t3s *s, int phase, long l,
                         bool bwd)
{
  double b = c->b, T = c->T, t = c->t;
  c->b = b / s->k;
  c->T = c->b * c->S;
  c->t = s->gy;
  for (int j = 0; j < (int)s->k; j++) {
    t3_wait(c, s, j);
    attention(c, phase, l, bwd);
  }
  c->b = b;
  c->T = T;
  c->t = t;
}

/* Forward of a linear layer, `ag` its gathered weight (or -1). */
static void t3_linear_fwd(struct ctx *c, struct t3s *s, int phase, long l,
                          double in, double out, bool tr, long ag)
{
  double gin, gout;
  t3_split(s, tr, &gin, &gout);
  for (int j = 0; j < (int)s->k; j++) {
    t3_wait(c, s, j);
    if (j == 0)
      wait_for(c, ag);
    gemm(c, phase, l, s->R, out / gout, in / gin);
    if (gin > 1) {
      s->ready[j] = coll(c, CO_ALLREDUCE, tr ? GK_T3Y : GK_T3X, ST_T3, phase,
                         l, c->e * s->R * out / gout);
      graph_dep(c->g, c->s, c->last_compute);
    }
  }
}

/* Backward of a linear layer: per piece the data gradient and its
 * all-reduce over the out-group, and the weight gradient; then the weight
 * gradient's reduce-scatter over Z.  Returns the last task the layer's
 * gradient waits for. */
static long t3_linear_bwd(struct ctx *c, struct t3s *s, long l, double in,
                          double out, bool tr, long ag)
{
  double gin, gout;
  t3_split(s, tr, &gin, &gout);
  long w = -1;
  for (int j = 0; j < (int)s->k; j++) {
    t3_wait(c, s, j);
    if (j == 0)
      wait_for(c, ag);
    gemm(c, PH_BWD, l, s->R, in / gin, out / gout); /* data gradient */
    if (gout > 1) {
      s->ready[j] = coll(c, CO_ALLREDUCE, tr ? GK_T3X : GK_T3Y, ST_T3, PH_BWD,
                         l, c->e * s->R * in / gin);
      graph_dep(c->g, c->s, c->last_compute);
    }
    w = gemm(c, PH_BWD, l, in / gin, out / gout, s->R); /* weight gradient */
  }
  if (s->gz > 1)
    w = grad_coll(c, CO_REDUCE_SCATTER, GK_T3Z, l,
                  c->grad_e * in / gin * out / gout, c->last_compute);
  return w;
}

static void t3_layer_fwd(struct ctx *c, long l, int phase)
{
  struct t3s s;
  t3_init(c, &s);
  double e = c->e, h = c->h, G = c->gates, f = c->f;
  double qkv = h + 2 * c->kv;
  t3_gather(c, &s, phase, l, h, qkv, false);
  long ag = s.ag;
  t3_elem(c, &s, KK_NORM, phase, l, e * 2 * h / s.gx);
  t3_gather(c, &s, phase, l, h, h, true);
  t3_linear_fwd(c, &s, phase, l, h, qkv, false, ag); /* QKV */
  ag = s.ag;
  t3_attention(c, &s, phase, l, false);
  t3_gather(c, &s, phase, l, h, G * f, false);
  t3_linear_fwd(c, &s, phase, l, h, h, true, ag);    /* projection */
  ag = s.ag;
  t3_elem(c, &s, KK_ELEMWISE, phase, l, e * 3 * h / s.gx);
  t3_elem(c, &s, KK_NORM, phase, l, e * 2 * h / s.gx);
  t3_gather(c, &s, phase, l, f, h, true);
  t3_linear_fwd(c, &s, phase, l, h, G * f, false, ag); /* FC1 */
  ag = s.ag;
  t3_elem(c, &s, KK_ELEMWISE, phase, l, e * (G + 1) * f / s.gy);
  t3_linear_fwd(c, &s, phase, l, f, h, true, ag);    /* FC2 */
  t3_elem(c, &s, KK_ELEMWISE, phase, l, e * 3 * h / s.gx);
}

static long t3_layer_bwd(struct ctx *c, long l)
{
  if (c->p->recompute == RECOMP_FULL)
    t3_layer_fwd(c, l, PH_RECOMP);
  const int B = PH_BWD;
  struct t3s s;
  t3_init(c, &s);
  double e = c->e, h = c->h, G = c->gates, f = c->f;
  double qkv = h + 2 * c->kv;
  t3_gather(c, &s, B, l, f, h, true);
  long ag = s.ag;
  t3_elem(c, &s, KK_ELEMWISE, B, l, e * 3 * h / s.gx);
  t3_gather(c, &s, B, l, h, G * f, false);
  t3_linear_bwd(c, &s, l, f, h, true, ag);        /* FC2 */
  ag = s.ag;
  t3_elem(c, &s, KK_ELEMWISE, B, l, e * (2 * G + 1) * f / s.gy);
  t3_gather(c, &s, B, l, h, h, true);
  t3_linear_bwd(c, &s, l, h, G * f, false, ag);   /* FC1 */
  ag = s.ag;
  t3_elem(c, &s, KK_NORM, B, l, e * 3 * h / s.gx);
  t3_elem(c, &s, KK_ELEMWISE, B, l, e * 3 * h / s.gx);
  t3_gather(c, &s, B, l, h, qkv, false);
  t3_linear_bwd(c, &s, l, h, h, true, ag);        /* projection */
  ag = s.ag;
  if (c->p->recompute == RECOMP_SELECTIVE)
    t3_attention(c, &s, PH_RECOMP, l, false);
  t3_attention(c, &s, B, l, true);
  long w = t3_linear_bwd(c, &s, l, h, qkv, false, ag); /* QKV */
  t3_elem(c, &s, KK_NORM, B, l, e * 3 * h / s.gx);
  return w;
}

/* The embedding: a vocabulary/GY x h/GX block of the table, sharded over
 * Z; partial lookups summed over Y. */
static void t3_embed_fwd(struct ctx *c)
{
  struct t3s s;
  t3_init(c, &s);
  double e = c->e, V = (double)c->m->vocab, h = c->h;
  t3_gather(c, &s, PH_FWD, -1, h, V, true);
  wait_for(c, s.ag);
  kernel(c, KK_EMBED, PH_FWD, -1, 0,
         e * c->T * h / s.gx * (c->m->gpt_style ? 3 : 1));
  if (s.gy > 1)
    coll(c, CO_ALLREDUCE, GK_T3Y, ST_COMPUTE, PH_FWD, -1, e * c->T * h / s.gx);
  kernel(c, KK_ELEMWISE, PH_FWD, -1, 0, e * 2 * c->T * h / s.gx);
}

static long t3_embed_bwd(struct ctx *c)
{
  struct t3s s;
  t3_init(c, &s);
  double V = (double)c->m->vocab, h = c->h;
  long w = kernel(c, KK_EMBED, PH_BWD, -1, 0, c->e * 2 * c->T * h / s.gx);
  if (s.gz > 1)
    w = grad_coll(c, CO_REDUCE_SCATTER, GK_T3Z, -1,
                  c->grad_e * V / s.gy * h / s.gx, c->last_compute);
  return w;
}

/* The output layer: the final hidden state all-gathered over X, then a
 * vocabulary-parallel GEMM over the X x Y ranks (V/(GX GY) logits each),
 * whose loss reduces its statistics over X and Y. */
static void t3_loss_fwd(struct ctx *c)
{
  struct t3s s;
  t3_init(c, &s);
  double e = c->e, V = (double)c->m->vocab, h = c->h, t = c->t;
  double Vl = V / (s.gx * s.gy);
  kernel(c, KK_NORM, PH_FWD, -1, 0, e * 2 * c->T * h / s.gx);
  if (s.gx > 1)
    coll(c, CO_ALLGATHER, GK_T3X, ST_COMPUTE, PH_FWD, -1, e * c->T * h);
  if (s.gz > 1) {
    coll(c, CO_ALLGATHER, GK_T3Z, ST_COMPUTE, PH_FWD, -1, e * Vl * h);
  }
  gemm(c, PH_FWD, -1, c->T, Vl, h);
  c->t = s.gx * s.gy; /* the loss's logits per rank: T V / (GX GY) */
  loss_kernel(c, PH_FWD);
  c->t = t;
  for (int i = 0; i < 3; i++) {
    if (s.gx > 1)
      coll(c, CO_ALLREDUCE, GK_T3X, ST_COMPUTE, PH_FWD, -1, 4 * c->T);
    if (s.gy > 1)
      coll(c, CO_ALLREDUCE, GK_T3Y, ST_COMPUTE, PH_FWD, -1, 4 * c->T);
  }
}

static long t3_loss_bwd(struct ctx *c)
{
  struct t3s s;
  t3_init(c, &s);
  double e = c->e, V = (double)c->m->vocab, h = c->h, t = c->t;
  double Vl = V / (s.gx * s.gy);
  c->t = s.gx * s.gy;
  loss_kernel(c, PH_BWD);
  c->t = t;
  if (s.gz > 1)
    coll(c, CO_ALLGATHER, GK_T3Z, ST_COMPUTE, PH_BWD, -1, e * Vl * h);
  gemm(c, PH_BWD, -1, c->T, h, Vl);
  long w = gemm(c, PH_BWD, -1, Vl, h, c->T);
  if (s.gz > 1)
    w = grad_coll(c, CO_REDUCE_SCATTER, GK_T3Z, -1, c->grad_e * Vl * h,
                  c->last_compute);
  /* The input gradient summed over the vocabulary's X x Y split, each X
   * rank keeping its h/GX channels. */
  if (s.gy > 1)
    coll(c, CO_ALLREDUCE, GK_T3Y, ST_COMPUTE, PH_BWD, -1, e * c->T * h);
  if (s.gx > 1)
    coll(c, CO_REDUCE_SCATTER, GK_T3X, ST_COMPUTE, PH_BWD, -1, e * c->T * h);
  kernel(c, KK_NORM, PH_BWD, -1, 0, e * 3 * c->T * h / s.gx);
  return w;
}

/* Tensor3D's pipeline transfers carry each rank's own h/GX channels (no
 * scatter/gather), and its weight gradients are reduce-scattered over Z
 * after every backward, with no accumulation pass. */
static const struct layer_ops t3_ops = {
  .layer_fwd = t3_layer_fwd, .layer_bwd = t3_layer_bwd,
  .embed_fwd = t3_embed_fwd, .embed_bwd = t3_embed_bwd,
  .loss_fwd = t3_loss_fwd, .loss_bwd = t3_loss_bwd,
  .p2p_scatter_gather = false, .accumulate = false,
};

/* Pipeline transfer of one micro-batch's activations (or their gradient). */
double build_p2p_bytes(const struct model *m, const struct plan *p)
{
  double T = (double)p->micro_batch * ((double)m->seq / (double)p->cp);
  double full = model_act_bytes(m) * T * (double)m->hidden;
  /* Tensor3D: each rank's h/GX channels of its own rows (no gather) */
  if (p->t3[0] > 0)
    return full / (double)p->t3[0];
  /* SP split, or scatter/gather */
  return p->tp > 1 ? full / (double)p->tp : full;
}

static double p2p_bytes(const struct ctx *c)
{
  return build_p2p_bytes(c->m, c->p);
}

static void recv(struct ctx *c, int peer, int phase)
{
  struct task t = {.kind = TK_RECV, .stream = ST_PP_RECV,
                   .phase = (uint8_t)phase, .peer = (int8_t)peer,
                   .layer = -1, .bytes = p2p_bytes(c)};
  wait_for(c, add(c, &t));
  /* Scatter/gather: rebuild the full tensor over NVLink. */
  if (c->t > 1 && !c->p->sp && c->ops->p2p_scatter_gather)
    coll(c, CO_ALLGATHER, GK_TP, ST_COMPUTE, phase, -1, c->e * c->T * c->h);
}

static void send(struct ctx *c, int peer, int phase)
{
  struct task t = {.kind = TK_SEND, .stream = ST_PP_SEND,
                   .phase = (uint8_t)phase, .peer = (int8_t)peer,
                   .layer = -1, .bytes = p2p_bytes(c)};
  long i = add(c, &t);
  graph_dep(c->g, c->s, c->last_compute);
  /* Blocking: the next computation waits until the transfer is done, as
   * Megatron-LM 2021 waited on its batched send/recv. */
  if (c->p->blocking_p2p)
    wait_for(c, i);
}

/* ---- Gradient compression (plan.h, enum compress) --------------------
 * As PyTorch DDP runs a communication hook: per bucket, when its last
 * gradient is ready, the encoding kernels on the compute stream (they
 * take their turn with the backward's kernels), the collective on the
 * data-parallel stream; the hook's continuation (decoding, and PowerSGD's
 * second half: orthogonalize P, Q = M^T P, all-reduce Q, then M = P Q^T)
 * runs when the collective is done, which the graph places at the next
 * bucket's turn (and after the backward for the last ones), on the
 * compute stream and waiting for the collective.  Byte counts per method
 * (n elements of e bytes in the bucket, N ranks, k = F n kept):
 *   fp16      encode n (e + 2), all-reduce 2n, decode n (2 + e);
 *   powersgd  error feedback 3 e M (M matrix elements), P = M Q reads M,
 *             all-reduce e R rows, orthogonalize e R^2 rows, Q = M^T P
 *             reads M, all-reduce e R cols, M = P Q^T writes M, error
 *             3 e M; vectors (norms, biases) all-reduced whole;
 *   topk      error feedback 3 e n, selection 5 e n (four radix-select
 *             passes over the 32-bit keys and one of magnitudes, an
 *             assumption: no kernel measurement), the kept values and their
 *             4-byte indices written, k (e + 4) all-gathered from each
 *             rank, decoding zeroes n e, reads N k (e + 4) and adds N k
 *             values in place (2 e each), and the error's update 2 e n;
 *   randomk   as topk without the selection passes (indices drawn);
 *   sign      packing n e + n/8, n/8 all-gathered from each rank, majority
 *             vote over N n/8 into n e;
 *   efsign    error feedback 3 e n, the l1 scale e n, packing, the error
 *             2 e n, n/8 + 4 all-gathered, N n/8 + 4N read, n e written;
 *   qsgd      norm e n, quantizing e n + n B/8, n B/8 + 4 all-gathered,
 *             N (n B/8 + 4) read, n e written. */

static bool compressing(const struct ctx *c)
{
  return c->p->compress != CM_NONE && c->p->zero == 0 &&
         c->p->dp * c->p->cp > 1;
}

/* What a bucket's gradients are, by unit: matrices' rows + cols and
 * elements, vectors' elements (per rank: TP splits as the builder's). */
enum bucket_unit { BU_HEAD, BU_LAYER, BU_EMB };

static void bucket_add(struct ctx *c, double *acc, enum bucket_unit u)
{
  double h = c->h, t = c->t, V = (double)c->m->vocab, rc = 0, mat = 0, n;
  if (u == BU_LAYER) {
    double qkv = (h + 2 * c->kv) / t, G = c->gates, f = c->f;
    rc = (h + qkv) + (h / t + h) + (h + G * f / t) + (f / t + h);
    mat = h * qkv + h * h / t + h * G * f / t + f / t * h;
    n = c->lp;
  } else if (u == BU_HEAD) {
    n = c->head;
    if (n > final_norm_params(c->m)) { /* an output layer of its own */
      rc = V / t + h;
      mat = V / t * h;
    }
  } else {
    n = c->emb;
    rc = V / t + h + (c->m->gpt_style ? (double)c->m->seq + h : 0);
    mat = n;
  }
  *acc += n * c->grad_e;
  c->bk_rc += rc;
  c->bk_vec += n - mat;
}

/* One step of a compressed bucket's continuation. */
static long compress_kernel(struct ctx *c, double bytes)
{
  return bytes > 0 ? kernel(c, KK_COMPRESS, PH_BWD, -1, 0, bytes) : -1;
}

/* A data-parallel bucket's reduction, which belongs to no micro-batch. */
static long dp_coll(struct ctx *c, enum coll_op op, double bytes, long after)
{
  long i = grad_coll(c, op, layout_grad_group(&c->g->layout), -1, bytes,
                     after);
  c->g->prog[c->s].tasks[i].mb = -1;
  return i;
}

/* Run the continuation of queued bucket `q` that its last collective
 * allows: PowerSGD's middle step (then its second all-reduce), or the
 * decoding. */
static void compress_continue(struct ctx *c, struct cbucket *q)
{
  wait_for(c, q->wait);
  if (q->mid_bytes > 0) {
    long k = compress_kernel(c, q->mid_bytes);
    q->wait = dp_coll(c, CO_ALLREDUCE, q->coll2_bytes, k);
    q->mid_bytes = 0;
    return;
  }
  compress_kernel(c, q->dec_bytes);
  q->done = true;
}

/* Advance the queued buckets by one step, oldest first: at the next
 * bucket's turn only PowerSGD's middle steps (so that its second
 * all-reduce overlaps the backward, as the hook's callback lets it), after
 * the backward everything (DDP waits for every bucket's hook before the
 * optimizer). */
static void compress_advance(struct ctx *c, bool mids_only)
{
  for (long i = 0; i < c->n_cq; i++)
    if (!c->cq[i].done && (!mids_only || c->cq[i].mid_bytes > 0))
      compress_continue(c, &c->cq[i]);
}

/* The whole queue, after the backward. */
static void compress_drain(struct ctx *c)
{
  for (int pass = 0; pass < 2; pass++)
    compress_advance(c, false);
  c->n_cq = 0;
}

static void compress_bucket(struct ctx *c, double acc, long after)
{
  const struct plan *p = c->p;
  double e = c->grad_e, n = acc / e, N = (double)(p->dp * p->cp);
  double vec = c->bk_vec, mat = n - vec, rc = c->bk_rc;
  double R = p->compress_param, F = p->compress_param;
  double k = ceil(F * n);
  compress_advance(c, true); /* the previous buckets' turn */
  wait_for(c, after);
  struct cbucket q = {.wait = -1};
  double enc = 0, wire = 0;
  enum coll_op op = CO_ALLGATHER;
  switch (p->compress) {
  case CM_FP16:
    enc = n * (e + 2);
    op = CO_ALLREDUCE;
    wire = 2 * n;
    q.dec_bytes = n * (2 + e);
    break;
  case CM_POWERSGD:
    enc = 3 * e * mat + e * (mat + R * rc);
    op = CO_ALLREDUCE;
    wire = e * R * rc / 2 + e * vec;
    q.mid_bytes = e * R * R * rc / 2 + e * (mat + R * rc);
    q.coll2_bytes = e * R * rc / 2;
    q.dec_bytes = e * (mat + R * rc) + 3 * e * mat;
    break;
  case CM_TOPK:
  case CM_RANDOMK:
    enc = 3 * e * n + (p->compress == CM_TOPK ? 5 * e * n : 8 * k) +
          k * (e + 4);
    wire = N * k * (e + 4);
    q.dec_bytes = n * e + N * k * (e + 4) + 2 * e * N * k + 2 * e * n;
    break;
  case CM_SIGN:
    enc = n * e + n / 8;
    wire = N * n / 8;
    q.dec_bytes = N * n / 8 + n * e;
    break;
  case CM_EFSIGN:
    enc = 3 * e * n + e * n + (n * e + n / 8) + 2 * e * n;
    wire = N * (n / 8 + 4);
    q.dec_bytes = N * (n / 8 + 4) + n * e;
    break;
  default: /* CM_QSGD */
    enc = 2 * e * n + n * R / 8;
    wire = N * (n * R / 8 + 4);
    q.dec_bytes = N * (n * R / 8 + 4) + n * e;
    break;
  }
  long w = compress_kernel(c, enc);
  q.wait = dp_coll(c, op, wire, w >= 0 ? w : after);
  if (c->n_cq < c->cq_cap)
    c->cq[c->n_cq++] = q;
  else /* no room: finish it in place */
    while (!q.done)
      compress_continue(c, &q);
  c->bk_rc = c->bk_vec = 0;
}

/* The gradient bucket size of a chunk: Megatron's distributed optimizer
 * splits only the first stage's first chunk, and only when it overlaps the
 * reduction (DistributedDataParallel: bucket_size None, one bucket). */
static double bucket_limit(const struct ctx *c, long chunk)
{
  const struct plan *p = c->p;
  if (p->shard_impl == SI_MEGATRON && (c->s > 0 || chunk > 0 ||
                                       !p->overlap_grad))
    return INFINITY;
  return p->bucket_bytes;
}

/* ZeRO-1/2's parameter buckets of chunk `ch` (the gradient buckets): the
 * chunk's units in forward order (embedding, layers, output layer) with
 * their dense parameters and the bucket they fall in, numbered in forward
 * order; *n units (the caller frees the array). */
struct punit {
  long layer;      /* -1: embedding, -2: output layer and final norm */
  double params;
  int bucket;
};

static struct punit *param_buckets(const struct ctx *c, long ch, int *nunits)
{
  const struct plan *p = c->p;
  long first, count;
  plan_chunk_layers(p, c->m, c->s, ch, &first, &count);
  struct punit *u = xcalloc((size_t)count + 2, sizeof *u);
  long vs = ch * p->pp + c->s;
  int n = 0;
  if (vs == 0)
    u[n++] = (struct punit){-1, c->emb, 0};
  for (long l = first; l < first + count; l++)
    u[n++] = (struct punit){l, c->lp, 0};
  if (vs == c->vlast)
    u[n++] = (struct punit){-2, c->head, 0};
  /* Filled in backward order, as the gradients arrive. */
  double lim = bucket_limit(c, ch), acc = 0;
  int b = 0;
  for (int i = n - 1; i >= 0; i--) {
    u[i].bucket = b;
    acc += u[i].params * c->grad_e;
    if (acc >= lim && i > 0) {
      b++;
      acc = 0;
    }
  }
  for (int i = 0; i < n; i++)
    u[i].bucket = b - u[i].bucket;
  *nunits = n;
  return u;
}

/* All-gather chunk `ch`'s updated parameters by bucket (forward order);
 * gather[i] (when not NULL: room for the chunk's layers + 2) = the gather
 * unit i waits for when it is its bucket's first unit, else -1.  Each
 * gather waits for `after` (>= 0). */
static void gather_buckets(struct ctx *c, long ch, int phase, long after,
                           long *gather)
{
  int n;
  struct punit *u = param_buckets(c, ch, &n);
  for (int i = 0; i < n; i++) {
    if (gather)
      gather[i] = -1;
    if (i > 0 && u[i].bucket == u[i - 1].bucket)
      continue;
    double params = 0;
    for (int j = i; j < n && u[j].bucket == u[i].bucket; j++)
      params += u[j].params;
    long x = coll(c, CO_ALLGATHER, layout_grad_group(&c->g->layout), ST_AG,
                  phase, u[i].layer >= 0 ? u[i].layer : -1, params * c->e);
    if (gather)
      gather[i] = x;
    if (after >= 0)
      graph_dep(c->g, c->s, after);
  }
  free(u);
}

/* Gradient buckets of one chunk: layers in backward order. */

static void flush_bucket(struct ctx *c, double *acc, long after)
{
  if (*acc <= 0 || c->p->dp * c->p->cp < 2)
    return;
  if (compressing(c))
    compress_bucket(c, *acc, after);
  else /* ZeRO 1 and 2 reduce-scatter: each rank updates its shard only */
    dp_coll(c, c->p->zero ? CO_REDUCE_SCATTER : CO_ALLREDUCE, *acc, after);
  *acc = 0;
}

/* ZeRO-3 / FSDP: a chunk's pass is a list of units (embedding, layers,
 * loss), each with its own parameters: all-gathered before the unit runs
 * (one unit ahead: prefetching, at most two gathered at once), its
 * gradients reduce-scattered right after its backward (and, with HSDP,
 * all-reduced across the replicas of its shard). */
enum unit_kind { UNIT_EMBED, UNIT_LAYER, UNIT_LOSS /* and output layer */ };
struct unit {
  enum unit_kind kind;
  long layer;
  double params;  /* sharded over the shard group */
  double xparams; /* experts: sharded over the ranks holding them */
};

/* The layer a unit's tasks belong to: its own, or -1 (embedding, loss). */
static long unit_layer(const struct unit *u)
{
  return u->kind == UNIT_LAYER ? u->layer : -1;
}

/* DeepSpeed's ZeRO-3, as run now or in 2021 (plan.h). */
static bool deepspeed(enum shard_impl si)
{
  return si == SI_DEEPSPEED || si == SI_DEEPSPEED_2021;
}

/* The group holding the same experts, and its size. */
static enum group_kind expert_group(const struct plan *p, long *n)
{
  *n = p->dp / p->ep * p->cp;
  return p->cp > 1 ? GK_EDPCP : GK_EDP;
}

/* The tensors of a unit's dense parameters per rank, in module order, in
 * elements: a layer's norms, attention and MLP as Megatron-LM lays them
 * out (fused QKV; SwiGLU's gate and up projections apart, as Hugging Face
 * models hold them); what an MoE layer holds beyond its attention (router,
 * shared biases; experts outside EP) as one tensor; the embedding and the
 * output layer as one each.  The sum is the unit's params. */
enum { UNIT_TENSORS_MAX = 16 };
static int unit_tensors(const struct ctx *c, const struct unit *u,
                        double *out)
{
  if (u->kind != UNIT_LAYER) {
    out[0] = u->params;
    return 1;
  }
  double h = c->h, t = c->t, qkv = h + 2 * c->kv, f = c->f;
  bool gpt = c->m->gpt_style, moe = model_is_moe(c->m);
  int n = 0;
  out[n++] = h;                 /* first norm (weight) */
  if (gpt)
    out[n++] = h;               /* its bias */
  out[n++] = h * qkv / t;       /* QKV */
  if (gpt)
    out[n++] = qkv / t;
  out[n++] = h * h / t;         /* output projection */
  if (gpt)
    out[n++] = h;
  out[n++] = h;                 /* second norm */
  if (gpt)
    out[n++] = h;
  if (!moe) {
    for (int k = 0; k < (int)c->gates; k++)
      out[n++] = h * f / t;     /* FC1 (gate, up) */
    if (gpt)
      out[n++] = f * c->gates / t;
    out[n++] = f * h / t;       /* FC2 */
    if (gpt)
      out[n++] = h;
  }
  double sum = 0;
  for (int k = 0; k < n; k++)
    sum += out[k];
  if (u->params - sum > 0.5)
    out[n++] = u->params - sum; /* MoE: router, biases, local experts */
  return n;
}

/* The all-gathers of a unit, in elements: the whole unit (ideal, FSDP),
 * or DeepSpeed's: tensors below the persistence threshold stay whole on
 * every rank; the others one per gather (2021) or coalesced in module
 * order up to the prefetch bucket (a larger tensor alone). */
static int gather_batches(const struct ctx *c, const struct unit *u,
                          double *out)
{
  enum shard_impl si = c->p->shard_impl;
  if (!deepspeed(si)) {
    out[0] = u->params;
    return u->params > 0;
  }
  double ten[UNIT_TENSORS_MAX];
  int nt = unit_tensors(c, u, ten), n = 0;
  double acc = 0;
  for (int k = 0; k < nt; k++) {
    if (ten[k] < SHARD_PERSIST_ELEMS)
      continue;
    if (si == SI_DEEPSPEED_2021) {
      out[n++] = ten[k];
      continue;
    }
    if (acc > 0 && acc + ten[k] > SHARD_PREFETCH_ELEMS) {
      out[n++] = acc;
      acc = 0;
    }
    acc += ten[k];
  }
  if (acc > 0)
    out[n++] = acc;
  return n;
}

/* Gather a unit's parameters; returns the last gather issued (the stream is
 * in order, so waiting for it waits for all), -1 when nothing is gathered.
 * DeepSpeed 2021 launched each gather after torch.cuda.synchronize(): it
 * waits for the computation issued before it. */
static long gather(struct ctx *c, const struct unit *u, int phase,
                   enum group_kind gk, long after)
{
  long layer = unit_layer(u), nx, i = -1;
  double b[UNIT_TENSORS_MAX];
  int nb = gather_batches(c, u, b);
  bool sync = c->p->shard_impl == SI_DEEPSPEED_2021;
  for (int k = 0; k < nb; k++) {
    i = coll(c, CO_ALLGATHER, gk, ST_AG, phase, layer, b[k] * c->e);
    if (after >= 0)
      graph_dep(c->g, c->s, after);
    if (sync && c->last_compute >= 0)
      graph_dep(c->g, c->s, c->last_compute);
  }
  enum group_kind xg = expert_group(c->p, &nx);
  if (u->xparams > 0 && nx > 1) {
    i = coll(c, CO_ALLGATHER, xg, ST_AG, phase, layer, u->xparams * c->e);
    if (after >= 0)
      graph_dep(c->g, c->s, after);
  }
  return i;
}

/* Reduce a unit's gradients: one reduce-scatter per unit (ideal, FSDP;
 * FSDP2 first copies them into its reduce-scatter buffer), or DeepSpeed's
 * buckets of reduce_bucket_size elements (flush: the pass is over). */
struct reducer {
  double acc;       /* elements waiting in the bucket */
  long last;        /* the previous bucket's reduction */
};

static void reduce_grads(struct ctx *c, struct reducer *r, const struct unit *un,
                         long w, enum group_kind gk, bool flush)
{
  enum shard_impl si = c->p->shard_impl;
  long layer = un ? unit_layer(un) : -1;
  if (!deepspeed(si)) {
    if (!un)
      return;
    long after = w;
    if (si == SI_FSDP2) /* _chunk_cat into the reduce-scatter input */
      after = kernel(c, KK_ELEMWISE, PH_BWD, layer, 0,
                     2 * un->params * c->grad_e);
    grad_coll(c, CO_REDUCE_SCATTER, gk, layer, un->params * c->grad_e, after);
    return;
  }
  if (un)
    r->acc += un->params;
  if (r->acc <= 0 || (!flush && r->acc < SHARD_REDUCE_ELEMS))
    return;
  bool old = si == SI_DEEPSPEED_2021;
  /* 2021: the host waits for the previous bucket's reduction before it
   * reduces this one, so the computation it issues next waits too. */
  if (old)
    wait_for(c, r->last);
  r->last = grad_coll(c, old ? CO_ALLREDUCE : CO_REDUCE_SCATTER, gk, layer,
                      r->acc * c->grad_e, w);
  r->acc = 0;
}

static void zero3_pass(struct ctx *c, const struct unit *u, int n, bool fwd)
{
  const struct plan *p = c->p;
  bool hsdp = p->hsdp && p->hsdp < p->dp;
  /* Without HSDP parameters are sharded over data and context parallel
   * ranks together (they hold the same weights). */
  long shard = layout_shard(&c->g->layout) * p->cp;
  enum group_kind gk = hsdp ? GK_SHARD : layout_grad_group(&c->g->layout);
  double grad_e = dtype_bytes(p->grad_dtype);
  int phase = fwd ? PH_FWD : PH_BWD;
  /* Units gathered ahead of the computation: two (prefetch), none when
   * each gather waits for the computation before it (DeepSpeed 2021). */
  int ahead = p->shard_impl == SI_DEEPSPEED_2021 ? 0 : 2;
  long ag[3] = {-1, -1, -1}; /* ring of the gathers in flight */
  struct reducer red = {0, -1};
  long w = -1;
  for (int k = 0; k < n && k < ahead; k++) {
    int u_i = fwd ? k : n - 1 - k;
    ag[k % 3] = shard > 1 ? gather(c, &u[u_i], phase, gk, -1) : -1;
  }
  for (int k = 0; k < n; k++) {
    int u_i = fwd ? k : n - 1 - k;
    const struct unit *un = &u[u_i];
    if (!ahead)
      ag[k % 3] = shard > 1 ? gather(c, un, phase, gk, -1) : -1;
    wait_for(c, ag[k % 3]);
    if (p->shard_impl == SI_FSDP2 && shard > 1) /* copy-out of the gather */
      kernel(c, KK_ELEMWISE, phase, unit_layer(un), 0, 2 * un->params * c->e);
    if (fwd) {
      if (un->kind == UNIT_EMBED)
        c->ops->embed_fwd(c);
      else if (un->kind == UNIT_LAYER)
        c->ops->layer_fwd(c, un->layer, PH_FWD);
      else
        c->ops->loss_fwd(c);
    } else {
      w = un->kind == UNIT_EMBED ? c->ops->embed_bwd(c)
          : un->kind == UNIT_LAYER ? c->ops->layer_bwd(c, un->layer)
                          : c->ops->loss_bwd(c);
      if (shard > 1)
        reduce_grads(c, &red, un, w, gk, false);
      long nx;
      enum group_kind xg = expert_group(p, &nx);
      if (un->xparams > 0 && nx > 1) {
        grad_coll(c, CO_REDUCE_SCATTER, xg, un->layer, un->xparams * grad_e, w);
      }
      if (hsdp) {
        grad_coll(c, CO_ALLREDUCE, GK_REPL, unit_layer(un),
                  un->params * grad_e / (double)shard, w);
      }
    }
    if (ahead && k + ahead < n) {
      int nx = fwd ? k + ahead : n - 1 - k - ahead;
      ag[(k + ahead) % 3] = shard > 1 ? gather(c, &u[nx], phase, gk,
                                               c->last_compute) : -1;
    }
  }
  if (!fwd && shard > 1)
    reduce_grads(c, &red, NULL, w, gk, true);
}

/* The context of stage `stage`: shapes, per-rank parameters, the list of
 * gradient reductions (sized for the worst case of the plan). */
static void ctx_init(struct ctx *c, struct graph *g, const struct model *m,
                     const struct plan *p, long stage)
{
  *c = (struct ctx){.g = g, .m = m, .p = p, .s = stage, .npending = 0,
                    .last_compute = -1};
  c->e = model_act_bytes(m);
  c->b = (double)p->micro_batch;
  c->S = (double)m->seq / (double)p->cp; /* tokens of a sequence on a rank */
  c->T = c->b * c->S;
  c->h = (double)m->hidden;
  c->t = (double)p->tp;
  c->kv = (double)model_kv_dim(m);
  c->f = (double)m->ffn;
  c->gates = m->ffn_kind == FFN_SWIGLU ? 2 : 1;
  c->a = (double)m->heads;
  c->d = (double)model_head_dim(m);
  c->topk = (double)m->topk;
  c->T_local = p->sp ? c->T / c->t : c->T;
  c->vlast = p->pp * p->vchunks - 1;
  c->ops = p->t3[0] > 0 ? &t3_ops : &megatron_ops;
  long max_dp = 4 * (m->layers + 4) + 16;
  if (p->zero == 3)
    max_dp += 4 * (m->layers + 4) * p->microbatches;
  if (p->t3[2] > 1) /* Tensor3D's reduce-scatters over Z, every backward */
    max_dp += 4 * (m->layers + 4) * p->microbatches * p->vchunks;
  if (p->compress != CM_NONE) { /* PowerSGD: two per bucket */
    max_dp *= 2;
    c->cq_cap = 2 * (m->layers + 4) * p->vchunks + 8;
    c->cq = xcalloc((size_t)c->cq_cap, sizeof *c->cq);
  }
  c->dp_tasks = xcalloc((size_t)max_dp, sizeof *c->dp_tasks);
  c->grad_e = dtype_bytes(p->grad_dtype);
  c->accum_b = build_accum_bytes(m, p, &c->accum_every);
  build_unit_params(m, p, &c->emb, &c->lp, &c->head);
  /* With EP, expert gradients are reduced over the ranks holding the same
   * experts, right after each layer's backward of the chunk's last pass. */
  c->lx = p->ep > 1 ? layer_expert_params_rank(m, p->tp, p->ep) : 0;
  if (p->ep > 1)
    c->lp -= c->lx;
}

void build_unit_params(const struct model *m, const struct plan *p,
                       double *emb, double *layer, double *head)
{
  double h = (double)m->hidden, t = (double)p->tp;
  *layer = layer_params_rank(m, p->tp, p->ep);
  *emb = (double)m->vocab * h / t + (m->gpt_style ? (double)m->seq * h : 0);
  double out_layer = (!m->gpt_style || p->pp > 1) ? (double)m->vocab * h / t
                                                  : 0;
  *head = out_layer + final_norm_params(m);
}

double build_accum_bytes(const struct model *m, const struct plan *p,
                         bool *every_microbatch)
{
  double e = model_act_bytes(m), ge = dtype_bytes(p->grad_dtype);
  *every_microbatch = p->grad_accum == GA_BUFFER;
  return p->grad_accum == GA_BUFFER     ? ge + e + ge
         : p->grad_accum == GA_AUTOGRAD ? 3 * e
                                        : 0;
}

/* One op of a stage's schedule: a pass of a chunk, as the chunk driver
 * (chunk_pass) runs it. */
struct pass {
  bool fwd;
  long vs;           /* the chunk's virtual stage */
  long first, count; /* its layers */
  bool last;         /* backward: the chunk's last backward pass */
  bool overlap;      /* backward: buckets reduced as they fill */
  bool accum;        /* backward: weight gradients take an accumulation
                        pass */
  long *ag;          /* forward: per unit, the parameter gather it waits
                        for (-1: none), or NULL (param_gathers) */
};

/* What a pass runs between its receive and its send. */
typedef void pass_body(struct ctx *c, const struct pass *ps);

/* ZeRO-3 / FSDP: either pass of a chunk over its units. */
static void zero3_body(struct ctx *c, const struct pass *ps)
{
  /* The units of this chunk, in forward order. */
  struct unit *u = xcalloc((size_t)ps->count + 2, sizeof *u);
  int n = 0;
  if (ps->vs == 0)
    u[n++] = (struct unit){UNIT_EMBED, -1, c->emb, 0};
  for (long l = ps->first; l < ps->first + ps->count; l++)
    u[n++] = (struct unit){UNIT_LAYER, l, c->lp, c->lx};
  if (ps->vs == c->vlast)
    u[n++] = (struct unit){UNIT_LOSS, -1, c->head, 0};
  zero3_pass(c, u, n, ps->fwd);
  free(u);
}

/* With overlap_param_gather (ZeRO 1 and 2 only, plan.c), the chunk's first
 * forward pass gathers the parameters the last optimizer step updated,
 * bucket by bucket on the gather stream, before its receive; each
 * bucket's first unit waits for its gather (the host runs ahead, so the
 * gathers follow one another from the start).  Returns the gathers per
 * unit (caller frees), or NULL. */
static long *param_gathers(struct ctx *c, long count)
{
  if (!c->gathered || c->gathered[c->chunk])
    return NULL;
  c->gathered[c->chunk] = true;
  long *ag = xcalloc((size_t)count + 2, sizeof *ag);
  gather_buckets(c, c->chunk, PH_FWD, -1, ag);
  return ag;
}

/* The forward pass of a chunk: embed, layers, and the loss on the last
 * virtual stage. */
static void forward_body(struct ctx *c, const struct pass *ps)
{
  long *ag = ps->ag, vs = ps->vs, first = ps->first, count = ps->count;
  int k = 0;
  if (vs == 0) {
    if (ag)
      wait_for(c, ag[k++]);
    c->ops->embed_fwd(c);
  }
  for (long l = first; l < first + count; l++) {
    if (ag)
      wait_for(c, ag[k++]);
    c->ops->layer_fwd(c, l, PH_FWD);
  }
  if (vs == c->vlast) {
    if (ag)
      wait_for(c, ag[k++]);
    c->ops->loss_fwd(c);
  }
}

/* Gradient accumulation after a unit's weight gradients (plan.h, enum
 * grad_accum): an in-place pass over its `params` when `accum`; returns
 * what the unit's gradients are final after. */
static long accumulate(struct ctx *c, bool accum, long layer, double params,
                       long after)
{
  if (!accum || params <= 0 || c->accum_b <= 0)
    return after;
  return kernel(c, KK_ELEMWISE, PH_BWD, layer, 0, c->accum_b * params);
}

/* The backward pass of a chunk: the loss on the last virtual stage,
 * layers, embedding.  On its chunk's last backward (`last`), gradients go
 * into buckets reduced as they fill when overlapped (`overlap`), and
 * expert gradients are reduced layer by layer. */
static void backward_body(struct ctx *c, const struct pass *ps)
{
  const struct plan *p = c->p;
  long vs = ps->vs, first = ps->first, count = ps->count;
  bool last = ps->last, overlap = ps->overlap, accum = ps->accum;
  double acc = 0, lim = bucket_limit(c, c->chunk);
  if (vs == c->vlast) {
    long w = accumulate(c, accum, -1, c->head, c->ops->loss_bwd(c));
    bucket_add(c, &acc, BU_HEAD);
    if (overlap && acc >= lim)
      flush_bucket(c, &acc, w);
  }
  long nx;
  enum group_kind xg = expert_group(p, &nx);
  for (long l = first + count - 1; l >= first; l--) {
    long w = accumulate(c, accum, l, c->lp + c->lx, c->ops->layer_bwd(c, l));
    bucket_add(c, &acc, BU_LAYER);
    if (overlap && acc >= lim)
      flush_bucket(c, &acc, w);
    if (c->lx > 0 && p->zero < 3 && (overlap || (!p->overlap_grad && last)) &&
        nx > 1) {
      long x = grad_coll(c, p->zero ? CO_REDUCE_SCATTER : CO_ALLREDUCE, xg,
                         l, c->lx * c->grad_e, w);
      c->g->prog[c->s].tasks[x].mb = -1;
    }
  }
  if (vs == 0) {
    long w = accumulate(c, accum, -1, c->emb, c->ops->embed_bwd(c));
    bucket_add(c, &acc, BU_EMB);
    if (overlap)
      flush_bucket(c, &acc, w);
  }
  if (overlap)
    flush_bucket(c, &acc, c->last_compute);
}

/* The chunk driver: one pass of a chunk between its pipeline transfers.
 * A forward pass receives from the previous virtual stage and sends to
 * the next, a backward pass the other way; the first and last virtual
 * stages have no neighbour on one side. */
static void chunk_pass(struct ctx *c, struct pass *ps, pass_body *body)
{
  int phase = ps->fwd ? PH_FWD : PH_BWD, from = ps->fwd ? -1 : +1;
  bool has_prev = ps->vs > 0, has_next = ps->vs < c->vlast;
  ps->ag = ps->fwd ? param_gathers(c, ps->count) : NULL;
  if (ps->fwd ? has_prev : has_next)
    recv(c, from, phase);
  body(c, ps);
  if (ps->fwd ? has_next : has_prev)
    send(c, -from, phase);
  free(ps->ag);
  ps->ag = NULL;
}

/* Without overlap: all buckets after the whole backward pass, in backward
 * order. */
static void late_buckets(struct ctx *c)
{
  const struct plan *p = c->p;
  for (long ch = p->vchunks - 1; ch >= 0; ch--) {
    long first, count;
    plan_chunk_layers(p, c->m, c->s, ch, &first, &count);
    long vs = ch * p->pp + c->s;
    double acc = 0, lim = bucket_limit(c, ch);
    if (vs == c->vlast)
      bucket_add(c, &acc, BU_HEAD);
    for (long l = count - 1; l >= 0; l--) {
      bucket_add(c, &acc, BU_LAYER);
      if (acc >= lim)
        flush_bucket(c, &acc, c->last_compute);
    }
    if (vs == 0)
      bucket_add(c, &acc, BU_EMB);
    flush_bucket(c, &acc, c->last_compute);
  }
}

/* Bytes per parameter of a mixed-precision optimizer step, as Megatron-LM's
 * Float16OptimizerWithFloat16Params.step runs it (megatron/optimizer/
 * optimizer.py, v2.5 to Megatron Core), each pass a multi-tensor kernel:
 * 16-bit gradients copied to FP32 main gradients (2 + 4; none when they
 * are FP32 already), with FP16 the unscale and inf check (4 + 4), the
 * gradient norm of --clip-grad 1.0 (4), Adam (read FP32 weight, gradient,
 * momentum and variance, write three: 28), and the FP32 weights copied
 * back to the 16-bit ones (4 + 2; FSDP casts its shard the same way
 * before the gather). */
static double optim_bytes(const struct model *m, const struct plan *p)
{
  double b = 28 + 4 + 6;
  if (p->grad_dtype != DTYPE_FP32)
    b += 6;
  if (m->dtype == DTYPE_FP16)
    b += 8;
  return b;
}

/* After the passes: the tied embedding's all-reduce, the optimizer step
 * once every gradient reduction is done, and ZeRO 1/2's parameter
 * gathers. */
static void optimizer_step(struct ctx *c)
{
  const struct model *m = c->m;
  const struct plan *p = c->p;
  struct graph *g = c->g;
  long stage = c->s;
  /* Tied embedding: first and last stage sum their copies' gradients. */
  if (m->gpt_style && p->pp > 1 && (stage == 0 || stage == p->pp - 1)) {
    long i = coll(c, CO_ALLREDUCE, GK_EMB, ST_DP, PH_OPT, -1,
                  (double)m->vocab * c->h / c->t * c->grad_e);
    graph_dep(g, stage, c->last_compute);
    c->dp_tasks[c->n_dp++] = i;
  }
  double params = stage_params_rank(m, p, stage);
  long shard = layout_shard(&g->layout) * p->cp, nx;
  enum group_kind xg = expert_group(p, &nx);
  double xparams = p->ep > 1 ? stage_expert_params_rank(m, p, stage) : 0;
  double dense = params - xparams;
  long opt = kernel(c, KK_OPTIM, PH_OPT, -1, 0,
                    optim_bytes(m, p) * (p->zero ? dense / (double)shard + xparams / (double)nx
                                  : params));
  for (long i = 0; i < c->n_dp; i++)
    graph_dep(g, stage, c->dp_tasks[i]);
  /* ZeRO 1 and 2: gather the updated parameter shards for the next
   * iteration. */
  if ((p->zero == 1 || p->zero == 2) && p->dp * p->cp > 1) {
    if (p->overlap_param_gather) {
      /* gathered at the next forward pass (forward_op) */
    } else if (p->shard_impl == SI_MEGATRON) {
      for (long ch = 0; ch < p->vchunks; ch++)
        gather_buckets(c, ch, PH_OPT, opt, NULL);
    } else {
      coll(c, CO_ALLGATHER, layout_grad_group(&g->layout), ST_AG, PH_OPT, -1,
           dense * c->e);
      graph_dep(g, stage, opt);
    }
    if (xparams > 0 && nx > 1) {
      coll(c, CO_ALLGATHER, xg, ST_AG, PH_OPT, -1, xparams * c->e);
      graph_dep(g, stage, opt);
    }
  }
}

/* The program of pipeline stage `stage`: its schedule's passes, the
 * gradient reductions and the optimizer step. */
static int build_stage(struct graph *g, const struct model *m,
                       const struct plan *p, long stage, struct weft_err *err)
{
  struct ctx c;
  ctx_init(&c, g, m, p, stage);
  long n_ops;
  struct sched_op *ops = schedule_build(p->schedule, p->pp, p->microbatches,
                                        p->vchunks, stage, &n_ops);
  /* The last backward op of each chunk releases its gradient buckets;
   * the first one's gradients need no accumulation under autograd. */
  long *last_bwd = xcalloc((size_t)p->vchunks, sizeof *last_bwd);
  long *first_bwd = xcalloc((size_t)p->vchunks, sizeof *first_bwd);
  for (long i = n_ops - 1; i >= 0; i--)
    if (!ops[i].fwd)
      first_bwd[ops[i].chunk] = i;
  for (long i = 0; i < n_ops; i++)
    if (!ops[i].fwd)
      last_bwd[ops[i].chunk] = i;
  int rc = 0;
  if (p->overlap_param_gather && p->dp * p->cp > 1)
    c.gathered = xcalloc((size_t)p->vchunks, sizeof *c.gathered);
  pass_body *fwd_body = p->zero == 3 ? zero3_body : forward_body;
  pass_body *bwd_body = p->zero == 3 ? zero3_body : backward_body;
  for (long i = 0; i < n_ops && !rc; i++) {
    const struct sched_op *op = &ops[i];
    c.chunk = op->chunk;
    c.mb = op->mb;
    struct pass ps = {.fwd = op->fwd, .vs = op->chunk * p->pp + stage};
    plan_chunk_layers(p, m, stage, op->chunk, &ps.first, &ps.count);
    ps.last = i == last_bwd[op->chunk];
    ps.overlap = p->overlap_grad && ps.last;
    ps.accum = c.ops->accumulate &&
               (c.accum_every || i != first_bwd[op->chunk]);
    chunk_pass(&c, &ps, op->fwd ? fwd_body : bwd_body);
    if (g->prog[stage].n > WEFT_MAX_TASKS)
      rc = weft_errf(err, WEFT_ELIMIT, "stage %ld has more than %ld tasks; "
                     "use fewer micro-batches or layers per stage", stage,
                     (long)WEFT_MAX_TASKS);
  }
  c.chunk = -1;
  c.mb = -1;
  if (!p->overlap_grad && p->dp * p->cp > 1 && p->zero < 3)
    late_buckets(&c);
  compress_drain(&c);
  optimizer_step(&c);
  free(c.cq);
  free(c.dp_tasks);
  free(c.gathered);
  free(first_bwd);
  free(last_bwd);
  free(ops);
  return rc;
}

struct graph *build_graph(const struct model *m, const struct plan *p,
                          struct weft_err *err)
{
  struct graph *g = graph_new(p->pp);
  plan_layout(p, &g->layout);
  g->tokens = (double)p->global_batch * (double)m->seq;
  snprintf(g->model, sizeof g->model, "%s layers=%ld hidden=%ld heads=%ld "
           "kv_heads=%ld ffn=%ld vocab=%ld seq=%ld experts=%ld topk=%ld",
           m->name, m->layers, m->hidden, m->heads, m->kv_heads, m->ffn,
           m->vocab, m->seq, m->experts, m->topk);
  snprintf(g->plan, sizeof g->plan, "tp=%ld pp=%ld dp=%ld sp=%s "
           "micro_batch=%ld global_batch=%ld schedule=%s v=%ld recompute=%s "
           "zero=%d shard=%ld", p->tp, p->pp, p->dp, p->sp ? "yes" : "no",
           p->micro_batch, p->global_batch, sched_name(p->schedule),
           p->vchunks, recompute_name(p->recompute), p->zero,
           layout_shard(&g->layout));
  for (long s = 0; s < p->pp; s++)
    if (build_stage(g, m, p, s, err)) {
      graph_free(g);
      return NULL;
    }
  return g;
}

/* Tasks and dependencies of a probe: the plan with one micro-batch, no
 * pipeline and `layers` layers. */
static void probe(const struct model *m, const struct plan *p, long layers,
                  double *tasks, double *deps)
{
  struct model pm = *m;
  struct plan pp = *p;
  pm.layers = layers;
  pp.pp = 1;
  pp.vchunks = 1;
  pp.schedule = SCHED_1F1B;
  pp.microbatches = 1;
  pp.global_batch = pp.micro_batch * pp.dp;
  struct weft_err err = {0};
  struct graph *g = build_graph(&pm, &pp, &err);
  *tasks = *deps = 0;
  if (!g)
    return;
  *tasks = (double)g->prog[0].n;
  *deps = (double)g->prog[0].ndeps;
  graph_free(g);
}

void build_estimate(const struct model *m, const struct plan *p,
                    struct graph_estimate *out)
{
  double t1, d1, t2, d2;
  probe(m, p, 1, &t1, &d1);
  probe(m, p, 2, &t2, &d2);
  /* Per layer, forward and backward of one micro-batch; the rest of a
   * probe is per stage (embedding, loss, optimizer, buckets). */
  double lt = t2 - t1, ld = d2 - d1;
  double ct = t1 - lt, cd = d1 - ld;
  double mb = (double)p->microbatches, L = (double)m->layers;
  double pp = (double)p->pp, ops = 2.0 * mb * (double)p->vchunks;
  /* Each op of a stage sends and receives at most once; about one in two
   * transfers adds a dependency. */
  out->tasks = mb * L * lt + pp * (ct + 2 * ops);
  out->deps = mb * L * ld + pp * (cd + ops);
  out->bytes = out->tasks * BUILD_TASK_BYTES + out->deps * BUILD_DEP_BYTES;
}
