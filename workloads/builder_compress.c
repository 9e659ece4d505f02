/*
 * builder_compress.c - data-parallel gradient buckets (ZeRO 0 to 2):
 * what a bucket holds, when it is reduced (as it fills, or all after the
 * backward), and its compression (plan.h, enum compress).
 *
 * Compression runs as PyTorch DDP runs a communication hook: per bucket,
 * when its last gradient is ready, the encoding kernels on the compute
 * stream (they take their turn with the backward's kernels), the
 * collective on the data-parallel stream; the hook's continuation
 * (decoding, and PowerSGD's second half: orthogonalize P, Q = M^T P,
 * all-reduce Q, then M = P Q^T) runs when the collective is done, which
 * the graph places at the next bucket's turn (and after the backward for
 * the last ones), on the compute stream and waiting for the collective.
 * Byte counts per method (n elements of e bytes in the bucket, N ranks,
 * k = F n kept):
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
 *             N (n B/8 + 4) read, n e written.
 */
#include "workloads/builder_int.h"

#include <math.h>

#include "workloads/accounting.h"

static bool compressing(const struct ctx *c)
{
  return c->p->compress != CM_NONE && c->p->zero == 0 &&
         c->p->dp * c->p->cp > 1;
}

void bld_bucket_add(struct ctx *c, double *acc, enum bucket_unit u)
{
  double h = c->h, t = c->t, V = (double)model_vocab_rows(c->m), rc = 0, mat = 0, n;
  if (u == BU_LAYER) {
    for (int i = 0; i < c->ld.nw; i++) {
      const struct lweight *w = &c->ld.w[i];
      if (lweight_matrix(w)) {
        rc += lweight_rc_rank(w, t);
        mat += lweight_elems_rank(&c->ld, w, t, 1);
      }
    }
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
  return bytes > 0 ? bld_kernel(c, KK_COMPRESS, PH_BWD, -1, 0, bytes) : -1;
}

/* A data-parallel bucket's reduction, which belongs to no micro-batch. */
static long dp_coll(struct ctx *c, enum coll_op op, double bytes, long after)
{
  long i = bld_grad_coll(c, op, layout_grad_group(&c->g->layout), -1, bytes,
                         after);
  c->g->prog[c->s].tasks[i].mb = -1;
  return i;
}

/* Run the continuation of queued bucket `q` that its last collective
 * allows: PowerSGD's middle step (then its second all-reduce), or the
 * decoding. */
static void compress_continue(struct ctx *c, struct cbucket *q)
{
  bld_wait_for(c, q->wait);
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
void bld_compress_drain(struct ctx *c)
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
  bld_wait_for(c, after);
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
double bld_bucket_limit(const struct ctx *c, long chunk)
{
  const struct plan *p = c->p;
  if (p->shard_impl == SI_MEGATRON && (c->s > 0 || chunk > 0 ||
                                       !p->overlap_grad))
    return INFINITY;
  return p->bucket_bytes;
}

/* A chunk's gradient buckets fill with its units in backward order (loss
 * and output layer, layers, embedding).  Reduce the open one: compressed,
 * reduce-scattered under ZeRO 1 and 2, else all-reduced; nothing without
 * data parallelism. */
void bld_flush_bucket(struct ctx *c, double *acc, long after)
{
  if (*acc <= 0 || c->p->dp * c->p->cp < 2)
    return;
  if (compressing(c))
    compress_bucket(c, *acc, after);
  else /* ZeRO 1 and 2 reduce-scatter: each rank updates its shard only */
    dp_coll(c, c->p->zero ? CO_REDUCE_SCATTER : CO_ALLREDUCE, *acc, after);
  *acc = 0;
}

/* Without overlap: all buckets after the whole backward pass, in backward
 * order. */
void bld_late_buckets(struct ctx *c)
{
  const struct plan *p = c->p;
  for (long ch = p->vchunks - 1; ch >= 0; ch--) {
    long first, count;
    plan_chunk_layers(p, c->m, c->s, ch, &first, &count);
    long vs = ch * p->pp + c->s;
    double acc = 0, lim = bld_bucket_limit(c, ch);
    if (vs == c->vlast)
      bld_bucket_add(c, &acc, BU_HEAD);
    for (long l = count - 1; l >= 0; l--) {
      bld_bucket_add(c, &acc, BU_LAYER);
      if (acc >= lim)
        bld_flush_bucket(c, &acc, c->last_compute);
    }
    if (vs == 0)
      bld_bucket_add(c, &acc, BU_EMB);
    bld_flush_bucket(c, &acc, c->last_compute);
  }
}
