/*
 * builder_tpo.c - tensor-parallel communication overlapped with the GEMMs
 * around it, as Megatron-Core's --tp-comm-overlap runs it through
 * Transformer Engine's userbuffers (plan.h, enum tp_overlap).  The Megatron
 * layer (builder_layer.c) calls three entry points where a linear layer
 * meets a TP collective; with the setting off they emit exactly the tasks
 * the layer emitted before them (all-gather or reduce-scatter on the
 * compute stream, one GEMM).
 *
 * What Transformer Engine overlaps with what (read at TE d0067d0,
 * 2026-08: pytorch/module/base.py initialize_ub, its default method per
 * GEMM; module/linear.py and layernorm_linear.py, which GEMM uses which;
 * common/comm_gemm_overlap/comm_gemm_overlap.cpp, how):
 *   - ring_exchange (qkv_fprop, fc1_fprop, proj_dgrad, fc2_dgrad): the
 *     sequence-parallel all-gather before a column-parallel GEMM (forward)
 *     or of the output gradient before a row-parallel data gradient
 *     (backward) becomes TP - 1 point-to-point steps around the TP ring
 *     (split_overlap_ag): step i runs the GEMM on the rows of chunk i while
 *     chunk i + 1 arrives from the previous rank, by copy engine (use_ce)
 *     with no SM margin (set_sm_margin false), so the GEMM keeps every SM;
 *     each piece's GEMM waits for its chunk.  The buffer is FP8 when the
 *     model is (fp8_buf: the layers of layers_all_gather_overlap);
 *   - pipeline (proj_fprop, fc2_fprop): a row-parallel GEMM split into
 *     num_splits = 4 pieces along its output features (split_overlap_rs),
 *     each piece's rows reduce-scattered by a userbuffers kernel on
 *     num_sm = 16 SMs as soon as the piece is done; the GEMM pieces run on
 *     the SMs left (set_sm_margin: _math_sms = SMs - num_sm);
 *   - bulk (qkv_dgrad, fc1_dgrad, qkv_wgrad, fc1_wgrad): in the backward
 *     of a column-parallel layer with SP, the saved input (kept sharded)
 *     is all-gathered for the weight gradient beside the data-gradient
 *     GEMM, and the data gradient is reduce-scattered beside the
 *     weight-gradient GEMM (bulk_overlap), each communication on 16 SMs
 *     that its GEMM gives up (TE's defaults; NeMo's configuration reserves
 *     none, tpo_cfgs below).  The all-gather is in FP8 when the model is.
 *   - proj_wgrad and fc2_wgrad reuse the output gradient gathered for the
 *     data gradient ("external" overlap is only for MXFP8).
 * Megatron-Core turns on all four (model_parallel_config.py:
 * tp_comm_overlap_ag, _rs, tp_comm_bulk_dgrad, _wgrad default True;
 * tp_comm_overlap_rs_dgrad False) and leaves the configuration to TE's
 * defaults unless --tp-comm-overlap-cfg is given (NeMo and Megatron-Bridge
 * give theirs: tpo_cfgs).  PyTorch's async TP (produce_rs and the torch
 * branch of bld_tpo_ag_gemm) pipelines the same all-gathers by pulling
 * shards and splits its reduce-scatters by destination rank.
 *
 * How it is built: the communication goes on stream ST_T3 (Tensor3D's
 * stream for activation collectives that overlap computation; a rank runs
 * either 1D TP or Tensor3D, never both), the pieces of a split GEMM are
 * GEMMs of their own shape on the compute stream (the cost model's
 * efficiency drops for them, as it does on the GPU), and a GEMM beside a
 * communication kernel that holds SMs carries them in task.sms_held, which
 * workloads/costmodel.c honours.  A MoE layer's feed-forward block keeps
 * its token exchange and blocking collectives (builder_layer.c calls the
 * entry points for attention and dense feed-forward blocks only).
 * NEEDSWORK: the userbuffers kernels are timed as NCCL's collectives of
 * the same bytes; the HBM bandwidth the copies take from a GEMM beside
 * them, and the SMs a communication kernel without margin occupies while
 * it runs, are not modelled; TE issues the pieces of a split GEMM on 3
 * compute streams round robin (PyTorch on 2), so that one piece's last
 * wave can overlap the next piece's first: weft runs them one after the
 * other, each with its own wave quantization, an upper bound on the
 * splitting's cost; the userbuffers themselves take memory that
 * accounting.c does not count.
 */
#include "workloads/builder_int.h"

/* How each overlapped GEMM's communication runs, per configuration
 * (TE's ub_cfgs).  Only what differs between the ones weft offers: the
 * SMs a communication kernel takes from its GEMM (num_sm when
 * set_sm_margin, else 0), the splits of the pipelined reduce-scatter, and
 * whether that reduce-scatter's buffer is FP8 in an FP8 model (fp8_buf).
 * The ring exchanges take no SMs from their GEMMs in either (num_sm 1 by
 * copy engine, no margin). */
struct tpo_cfg {
  int8_t rs_sms[2];   /* proj_fprop, fc2_fprop (pipeline) */
  int8_t dgrad_sms[2], wgrad_sms[2]; /* qkv, fc1 (bulk) */
  int splits;         /* num_splits of the pipelined reduce-scatters */
  bool rs_fp8;        /* their buffers in FP8 when the model is */
};

static const struct tpo_cfg tpo_cfgs[] = {
    /* TE initialize_ub get_default_config: "num_sm": 16, "num_splits": 4,
     * "set_sm_margin": True for pipeline and bulk; "fp8_buf" only for the
     * all-gathers (layers_all_gather_overlap). */
    [TPO_TE] = {{16, 16}, {16, 16}, {16, 16}, 4, false},
    /* NeMo's userbuffers_fp8_h100_h8192_tp4_mbs1_seqlen8192 (and its bf16
     * twin; NeMo 0594a70, llm/recipes/tp_overlap_configs/userbuffers.py,
     * Llama 3 70B's on H100): bulk overlaps without SM margin, proj_fprop
     * on 24 SMs and fc2_fprop on 16 with margin, 4 splits, FP8 buffers. */
    [TPO_NEMO] = {{24, 16}, {0, 0}, {0, 0}, 4, true},
    /* PyTorch's async TP: copies by copy engine, no SMs reserved; its
     * reduce-scatter is split by ranks, not by this table. */
    [TPO_TORCH] = {{0, 0}, {0, 0}, {0, 0}, 1, false},
};

static bool torch_tp(const struct ctx *c)
{
  return c->p->tp_overlap == TPO_TORCH;
}

static const struct tpo_cfg *cfg(const struct ctx *c)
{
  return &tpo_cfgs[c->p->tp_overlap];
}

bool bld_tpo_on(const struct ctx *c)
{
  return c->p->tp_overlap != TPO_NONE && c->t > 1 && c->p->sp;
}

/* Bytes per element of an all-gathered activation: FP8 buffers when the
 * model computes its linear layers in FP8 (initialize_ub: fp8_buf for the
 * layers of layers_all_gather_overlap), else the activations' width. */
static double ag_elem_bytes(const struct ctx *c)
{
  return c->m->dtype == DTYPE_FP8 ? 1 : c->e;
}

/* The collectives of builder_layer.c as they were (sp_gather, tp_reduce),
 * for the setting off. */
static void gather_blocking(struct ctx *c, int phase, long layer)
{
  if (c->t > 1 && c->p->sp)
    bld_coll(c, CO_ALLGATHER, GK_TP, ST_COMPUTE, phase, layer,
             c->e * c->T * c->h);
}

static void reduce_blocking(struct ctx *c, int phase, long layer)
{
  if (c->t > 1)
    bld_coll(c, c->p->sp ? CO_REDUCE_SCATTER : CO_ALLREDUCE, GK_TP, ST_COMPUTE,
             phase, layer, c->e * c->T * c->h);
}

/* A GEMM on the SMs a communication kernel beside it leaves. */
static long gemm_held(struct ctx *c, int phase, long layer, double M, double N,
                      double K, int held)
{
  long i = bld_gemm(c, phase, layer, M, N, K);
  c->g->prog[c->s].tasks[i].sms_held = (int8_t)held;
  return i;
}

/* A collective on the overlap stream that starts after task `after`. */
static long coll_after(struct ctx *c, enum coll_op op, int phase, long layer,
                       double bytes, long after)
{
  long x = bld_coll(c, op, GK_TP, ST_T3, phase, layer, bytes);
  if (after >= 0)
    graph_dep(c->g, c->s, after);
  return x;
}

/* PyTorch's fused matmul-reduce-scatter (_pipelined_produce_and_all2all,
 * scatter along the tokens): at step s = 1 .. TP - 1 the GEMM computes the
 * rows of rank + s, which that rank then pulls; the rank's own rows last;
 * then a sum of the TP partial results (reads TP chunks, writes one). */
static long produce_rs(struct ctx *c, int phase, long layer, double M,
                       double N, double K)
{
  long t = c->p->tp, x = -1;
  double chunk = c->e * c->T * c->h / (double)t;
  for (long s = 1; s < t; s++) {
    long g = bld_gemm(c, phase, layer, M / (double)t, N, K);
    x = coll_after(c, CO_SENDRECV, phase, layer, chunk, g);
  }
  long g = bld_gemm(c, phase, layer, M / (double)t, N, K);
  bld_wait_for(c, x);
  bld_kernel(c, KK_ELEMWISE, phase, layer, 0, chunk * (double)(t + 1));
  return g;
}

long bld_tpo_ag_gemm(struct ctx *c, int phase, long layer, double M, double N,
                     double K, bld_cast_fn *cast, double cast_elems)
{
  if (!bld_tpo_on(c)) {
    gather_blocking(c, phase, layer);
    if (cast)
      cast(c, layer, cast_elems);
    return bld_gemm(c, phase, layer, M, N, K);
  }
  long t = c->p->tp, prev = -1, g = -1;
  /* TE quantizes the local shard, then exchanges FP8 chunks. */
  if (cast)
    cast(c, layer, cast_elems / (double)t);
  double chunk = ag_elem_bytes(c) * c->T * c->h / (double)t;
  /* PyTorch first copies the local shard into its symmetric-memory buffer
   * (_pipelined_multi_all_gather_and_consume: "mv", read and write). */
  if (torch_tp(c))
    bld_kernel(c, KK_ELEMWISE, phase, layer, 0, 2 * chunk);
  for (long i = 0; i < t; i++) {
    long x = -1;
    if (i + 1 < t) /* chunk i + 1 arrives while piece i computes */
      x = coll_after(c, CO_SENDRECV, phase, layer, chunk,
                     i == 0 ? c->last_compute : -1);
    bld_wait_for(c, prev);
    g = bld_gemm(c, phase, layer, M / (double)t, N, K);
    prev = x;
  }
  return g;
}

long bld_tpo_gemm_rs(struct ctx *c, int phase, long layer, enum tpo_linear which,
                     double M, double N, double K)
{
  if (!bld_tpo_on(c)) {
    long g = bld_gemm(c, phase, layer, M, N, K);
    reduce_blocking(c, phase, layer);
    return g;
  }
  if (torch_tp(c))
    return produce_rs(c, phase, layer, M, N, K);
  const struct tpo_cfg *f = cfg(c);
  double e = f->rs_fp8 && c->m->dtype == DTYPE_FP8 ? 1 : c->e;
  double piece = e * c->T * c->h / f->splits;
  int held = f->rs_sms[which == TPO_FC2];
  long g = -1, rs = -1;
  for (int i = 0; i < f->splits; i++) {
    g = gemm_held(c, phase, layer, M, N / f->splits, K, held);
    rs = coll_after(c, CO_REDUCE_SCATTER, phase, layer, piece, g);
  }
  bld_wait_for(c, rs); /* the stream's order: every piece is reduced */
  return g;
}

long bld_tpo_bulk(struct ctx *c, long layer, enum tpo_linear which, double M,
                  double N, double K)
{
  if (!bld_tpo_on(c)) {
    bld_gemm(c, PH_BWD, layer, M, N, K);
    long w = bld_gemm(c, PH_BWD, layer, K, N, M);
    reduce_blocking(c, PH_BWD, layer);
    return w;
  }
  if (torch_tp(c)) {
    produce_rs(c, PH_BWD, layer, M, N, K);
    return bld_gemm(c, PH_BWD, layer, K, N, M);
  }
  /* The saved input, sharded with SP, gathered for the weight gradient. */
  long ag = coll_after(c, CO_ALLGATHER, PH_BWD, layer,
                       ag_elem_bytes(c) * c->T * c->h, c->last_compute);
  int i = which == TPO_FC1;
  long d = gemm_held(c, PH_BWD, layer, M, N, K, cfg(c)->dgrad_sms[i]);
  long rs = coll_after(c, CO_REDUCE_SCATTER, PH_BWD, layer,
                       c->e * c->T * c->h, d);
  bld_wait_for(c, ag);
  long w = gemm_held(c, PH_BWD, layer, K, N, M, cfg(c)->wgrad_sms[i]);
  bld_wait_for(c, rs);
  return w;
}

/* ---- The layer's steps (layer.h) that meet a TP collective ---- */

/* A linear step's weight that the overlap splits: split `sp` over TP,
 * not an expert's (a MoE layer's feed-forward block keeps its own
 * collectives), and built as [out x in] when a weight gradient is built
 * by the bulk overlap. */
static const struct lweight *overlapped(const struct ctx *c,
                                        const struct lstep *st,
                                        enum lw_split sp)
{
  if (st->kind != LS_LINEAR || st->w < 0)
    return NULL;
  const struct lweight *w = &c->ld.w[st->w];
  if (w->split != sp || w->routed ||
      (w->role == LW_FFN && model_is_moe(c->m)))
    return NULL;
  return w;
}

/* Token rows of a dense linear's GEMM (builder_layer.c, linear_rows). */
static double rows(const struct ctx *c, const struct lweight *w)
{
  return w->role == LW_FFN ? c->T * c->topk : c->T;
}

int bld_tpo_fwd(struct ctx *c, const struct lstep *st, int left, int phase,
                long layer)
{
  if (!bld_tpo_on(c) || left < 2)
    return 0;
  const struct lweight *w;
  double N, K;
  if (st[0].kind == LS_TP_IN && (w = overlapped(c, &st[1], LW_COL))) {
    lweight_gemm_nk(w, c->t, &N, &K);
    bld_tpo_ag_gemm(c, phase, layer, rows(c, w), N, K, NULL, 0);
    return 2;
  }
  if (st[1].kind == LS_TP_OUT && (w = overlapped(c, &st[0], LW_ROW))) {
    lweight_gemm_nk(w, c->t, &N, &K);
    bld_tpo_gemm_rs(c, phase, layer, w->role == LW_FFN ? TPO_FC2 : TPO_PROJ,
                    rows(c, w), N, K);
    return 2;
  }
  return 0;
}

int bld_tpo_bwd(struct ctx *c, const struct lstep *st, int before, long layer,
                bld_cast_fn *cast, long *out_wgrad)
{
  if (!bld_tpo_on(c) || before < 1)
    return 0;
  const struct lweight *w;
  double N, K, M;
  if (st[0].kind == LS_TP_OUT && (w = overlapped(c, &st[-1], LW_ROW))) {
    /* the output gradient gathered, then the data gradient, as
     * step_bwd's LS_TP_OUT and LS_LINEAR */
    lweight_gemm_nk(w, c->t, &N, &K);
    M = rows(c, w);
    bld_tpo_ag_gemm(c, PH_BWD, layer, M, K, N, w->cast ? cast : NULL, M * N);
    *out_wgrad = w->wgrad_in_out ? bld_gemm(c, PH_BWD, layer, K, N, M)
                                 : bld_gemm(c, PH_BWD, layer, N, K, M);
    return 2;
  }
  if (st[-1].kind == LS_TP_IN && (w = overlapped(c, &st[0], LW_COL)) &&
      !w->wgrad_in_out) {
    lweight_gemm_nk(w, c->t, &N, &K);
    M = rows(c, w);
    if (w->cast)
      cast(c, layer, M * N);
    *out_wgrad = bld_tpo_bulk(c, layer, w->role == LW_FFN ? TPO_FC1 : TPO_QKV,
                              M, K, N);
    return 2;
  }
  return 0;
}
