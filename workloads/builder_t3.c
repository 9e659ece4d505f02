/*
 * builder_t3.c - Tensor3D (plan.h): the layer, embedding and loss
 * passes of 3D tensor parallelism, gathered in bld_t3_ops.
 *
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
 * and a piece's next operation waits for its own all-reduce only.
 */
#include "workloads/builder_int.h"

/* A layer pass's view of the grid. */
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
  bld_wait_for(c, s->ready[j]);
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
  s->ag = bld_coll(c, CO_ALLGATHER, GK_T3Z, ST_AG, phase, l,
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
    bld_kernel(c, kk, phase, l, 0, bytes_per_row * s->R);
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
    bld_attention(c, phase, l, bwd);
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
      bld_wait_for(c, ag);
    bld_gemm(c, phase, l, s->R, out / gout, in / gin);
    if (gin > 1) {
      s->ready[j] = bld_coll(c, CO_ALLREDUCE, tr ? GK_T3Y : GK_T3X, ST_T3,
                             phase, l, c->e * s->R * out / gout);
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
      bld_wait_for(c, ag);
    bld_gemm(c, PH_BWD, l, s->R, in / gin, out / gout); /* data gradient */
    if (gout > 1) {
      s->ready[j] = bld_coll(c, CO_ALLREDUCE, tr ? GK_T3X : GK_T3Y, ST_T3,
                             PH_BWD, l, c->e * s->R * in / gin);
      graph_dep(c->g, c->s, c->last_compute);
    }
    /* weight gradient */
    w = bld_gemm(c, PH_BWD, l, in / gin, out / gout, s->R);
  }
  if (s->gz > 1)
    w = bld_grad_coll(c, CO_REDUCE_SCATTER, GK_T3Z, l,
                      c->grad_e * in / gin * out / gout, c->last_compute);
  return w;
}

/* The next linear step after step i in the direction `dir` (+1 forward,
 * -1 backward), or NULL. */
static const struct lweight *next_linear(const struct layer_desc *d, int i,
                                         int dir)
{
  for (int j = i + dir; j >= 0 && j < d->ns; j += dir)
    if (d->st[j].kind == LS_LINEAR)
      return &d->w[d->st[j].w];
  return NULL;
}

/* Gather the weight of the next linear step after step i, if any. */
static void t3_prefetch(struct ctx *c, struct t3s *s, int phase, long l,
                        int i, int dir)
{
  const struct lweight *w = next_linear(&c->ld, i, dir);
  if (w)
    t3_gather(c, s, phase, l, w->in, w->out, w->split == LW_ROW);
}

/* The layer's steps (layer.h) as Tensor3D runs them: the residual
 * stream's kernels on h/GX channels, the activation's on f/GY, each
 * linear reducing inside itself (the TP steps are Megatron's) while the
 * next linear's weight block is gathered; no MoE or FP8 steps (plan.c
 * refuses them with Tensor3D).  Backward runs the steps in reverse and
 * returns the task the layer's gradient waits for. */
static void t3_layer_fwd(struct ctx *c, long l, int phase)
{
  const struct layer_desc *d = &c->ld;
  struct t3s s;
  t3_init(c, &s);
  double e = c->e, h = c->h, G = c->gates, f = c->f;
  t3_prefetch(c, &s, phase, l, -1, 1);
  long ag = s.ag;
  for (int i = 0; i < d->ns; i++) {
    const struct lstep *st = &d->st[i];
    const struct lweight *w = st->w >= 0 ? &d->w[st->w] : NULL;
    switch (st->kind) {
    case LS_NORM:
      t3_elem(c, &s, KK_NORM, phase, l, e * 2 * h / s.gx);
      break;
    case LS_LINEAR:
      t3_prefetch(c, &s, phase, l, i, 1);
      t3_linear_fwd(c, &s, phase, l, w->in, w->out, w->split == LW_ROW, ag);
      ag = s.ag;
      break;
    case LS_QK_NORM: /* q and k of the rank's heads/GY */
      t3_elem(c, &s, KK_NORM, phase, l, e * 2 * (c->a * c->d + c->kv) / s.gy);
      break;
    case LS_ROPE: /* Q (heads x head_dim) and K of the rank's heads/GY */
      t3_elem(c, &s, KK_ELEMWISE, phase, l,
              e * 2 * (c->a * c->d + c->kv) / s.gy);
      break;
    case LS_ATTN:
      t3_attention(c, &s, phase, l, false);
      break;
    case LS_RESID:
      t3_elem(c, &s, KK_ELEMWISE, phase, l, e * 3 * h / s.gx);
      break;
    case LS_ACT:
      t3_elem(c, &s, KK_ELEMWISE, phase, l, e * (G + 1) * f / s.gy);
      break;
    default:
      break;
    }
  }
}

static long t3_layer_bwd(struct ctx *c, long l)
{
  if (c->p->recompute == RECOMP_FULL)
    t3_layer_fwd(c, l, PH_RECOMP);
  const int B = PH_BWD;
  const struct layer_desc *d = &c->ld;
  struct t3s s;
  t3_init(c, &s);
  double e = c->e, h = c->h, G = c->gates, f = c->f;
  t3_prefetch(c, &s, B, l, d->ns, -1);
  long ag = s.ag, last = -1;
  for (int i = d->ns - 1; i >= 0; i--) {
    const struct lstep *st = &d->st[i];
    const struct lweight *w = st->w >= 0 ? &d->w[st->w] : NULL;
    switch (st->kind) {
    case LS_NORM:
      t3_elem(c, &s, KK_NORM, B, l, e * 3 * h / s.gx);
      break;
    case LS_LINEAR:
      t3_prefetch(c, &s, B, l, i, -1);
      last = t3_linear_bwd(c, &s, l, w->in, w->out, w->split == LW_ROW, ag);
      ag = s.ag;
      break;
    case LS_QK_NORM:
      t3_elem(c, &s, KK_NORM, B, l, e * 3 * (c->a * c->d + c->kv) / s.gy);
      break;
    case LS_ROPE:
      t3_elem(c, &s, KK_ELEMWISE, B, l, e * 2 * (c->a * c->d + c->kv) / s.gy);
      break;
    case LS_ATTN:
      if (c->p->recompute == RECOMP_SELECTIVE)
        t3_attention(c, &s, PH_RECOMP, l, false);
      t3_attention(c, &s, B, l, true);
      break;
    case LS_RESID:
      t3_elem(c, &s, KK_ELEMWISE, B, l, e * 3 * h / s.gx);
      break;
    case LS_ACT:
      t3_elem(c, &s, KK_ELEMWISE, B, l, e * (2 * G + 1) * f / s.gy);
      break;
    default:
      break;
    }
  }
  return last;
}

/* The embedding: a vocabulary/GY x h/GX block of the table, sharded over
 * Z; partial lookups summed over Y. */
static void t3_embed_fwd(struct ctx *c)
{
  struct t3s s;
  t3_init(c, &s);
  double e = c->e, V = (double)model_vocab_rows(c->m), h = c->h;
  t3_gather(c, &s, PH_FWD, -1, h, V, true);
  bld_wait_for(c, s.ag);
  bld_kernel(c, KK_EMBED, PH_FWD, -1, 0,
             e * c->T * h / s.gx * (c->m->gpt_style ? 3 : 1));
  if (s.gy > 1)
    bld_coll(c, CO_ALLREDUCE, GK_T3Y, ST_COMPUTE, PH_FWD, -1,
             e * c->T * h / s.gx);
  bld_kernel(c, KK_ELEMWISE, PH_FWD, -1, 0, e * 2 * c->T * h / s.gx);
}

static long t3_embed_bwd(struct ctx *c)
{
  struct t3s s;
  t3_init(c, &s);
  double V = (double)model_vocab_rows(c->m), h = c->h;
  long w = bld_kernel(c, KK_EMBED, PH_BWD, -1, 0, c->e * 2 * c->T * h / s.gx);
  if (s.gz > 1)
    w = bld_grad_coll(c, CO_REDUCE_SCATTER, GK_T3Z, -1,
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
  double e = c->e, V = (double)model_vocab_rows(c->m), h = c->h, t = c->t;
  double Vl = V / (s.gx * s.gy);
  bld_kernel(c, KK_NORM, PH_FWD, -1, 0, e * 2 * c->T * h / s.gx);
  if (s.gx > 1)
    bld_coll(c, CO_ALLGATHER, GK_T3X, ST_COMPUTE, PH_FWD, -1, e * c->T * h);
  if (s.gz > 1) {
    bld_coll(c, CO_ALLGATHER, GK_T3Z, ST_COMPUTE, PH_FWD, -1, e * Vl * h);
  }
  bld_gemm(c, PH_FWD, -1, c->T, Vl, h);
  c->t = s.gx * s.gy; /* the loss's logits per rank: T V / (GX GY) */
  bld_loss_kernel(c, PH_FWD);
  c->t = t;
  for (int i = 0; i < 3; i++) {
    if (s.gx > 1)
      bld_coll(c, CO_ALLREDUCE, GK_T3X, ST_COMPUTE, PH_FWD, -1, 4 * c->T);
    if (s.gy > 1)
      bld_coll(c, CO_ALLREDUCE, GK_T3Y, ST_COMPUTE, PH_FWD, -1, 4 * c->T);
  }
}

static long t3_loss_bwd(struct ctx *c)
{
  struct t3s s;
  t3_init(c, &s);
  double e = c->e, V = (double)model_vocab_rows(c->m), h = c->h, t = c->t;
  double Vl = V / (s.gx * s.gy);
  c->t = s.gx * s.gy;
  bld_loss_kernel(c, PH_BWD);
  c->t = t;
  if (s.gz > 1)
    bld_coll(c, CO_ALLGATHER, GK_T3Z, ST_COMPUTE, PH_BWD, -1, e * Vl * h);
  bld_gemm(c, PH_BWD, -1, c->T, h, Vl);
  long w = bld_gemm(c, PH_BWD, -1, Vl, h, c->T);
  if (s.gz > 1)
    w = bld_grad_coll(c, CO_REDUCE_SCATTER, GK_T3Z, -1, c->grad_e * Vl * h,
                      c->last_compute);
  /* The input gradient summed over the vocabulary's X x Y split, each X
   * rank keeping its h/GX channels. */
  if (s.gy > 1)
    bld_coll(c, CO_ALLREDUCE, GK_T3Y, ST_COMPUTE, PH_BWD, -1, e * c->T * h);
  if (s.gx > 1)
    bld_coll(c, CO_REDUCE_SCATTER, GK_T3X, ST_COMPUTE, PH_BWD, -1,
             e * c->T * h);
  bld_kernel(c, KK_NORM, PH_BWD, -1, 0, e * 3 * c->T * h / s.gx);
  return w;
}

/* Tensor3D's pipeline transfers carry each rank's own h/GX channels (no
 * scatter/gather), and its weight gradients are reduce-scattered over Z
 * after every backward, with no accumulation pass. */
const struct layer_ops bld_t3_ops = {
  .layer_fwd = t3_layer_fwd, .layer_bwd = t3_layer_bwd,
  .embed_fwd = t3_embed_fwd, .embed_bwd = t3_embed_bwd,
  .loss_fwd = t3_loss_fwd, .loss_bwd = t3_loss_bwd,
  .p2p_scatter_gather = false, .accumulate = false,
};
