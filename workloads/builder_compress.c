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
 * Each step of a hook is one task of the compute stream standing for the
 * kernels it launches (their bytes, their number: the cost model charges
 * a launch each; their views and slices: under the host clock, engine.h
 * host_op_s, one host operation per kernel and per view), counted from
 * the code that runs them: PowerSGD from PyTorch's powerSGD_hook (per
 * matrix, Gram-Schmidt per column: powersgd_steps), Top-K with a
 * one-block torch.topk (topk_steps), signSGD from the paper's hook and
 * bit2byte packing (sign_steps); Agarwal et al.'s code
 * (uw-mad-dash/GradCompressionUtility) registers these.  The other
 * methods are one kernel per step, n elements of e bytes in the bucket,
 * N ranks:
 *   fp16      encode n (e + 2), all-reduce 2n, decode n (2 + e);
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
  double h = c->h, t = c->t, V = (double)model_vocab_rows(c->m), rc = 0,
         mat = 0, n;
  double nmat = 0, nvec = 0;
  if (u == BU_LAYER) {
    for (int i = 0; i < c->ld.nw; i++) {
      const struct lweight *w = &c->ld.w[i];
      double k = w->tensors > 0 ? w->tensors : 1;
      if (lweight_matrix(w)) {
        rc += lweight_rc_rank(w, t);
        mat += lweight_elems_rank(&c->ld, w, t, 1);
        nmat += k;
      } else {
        nvec += k;
      }
    }
    n = c->lp;
  } else if (u == BU_HEAD) {
    n = c->head;
    nvec = c->m->gpt_style ? 2 : 1; /* the final norm's weight (and bias) */
    if (n > final_norm_params(c->m)) { /* an output layer of its own */
      rc = V / t + h;
      mat = V / t * h;
      nmat = 1;
    }
  } else {
    n = c->emb;
    rc = V / t + h + (c->m->gpt_style ? (double)c->m->seq + h : 0);
    mat = n;
    nmat = c->m->gpt_style ? 2 : 1; /* word (and position) embedding */
  }
  *acc += n * c->grad_e;
  c->bk_rc += rc;
  c->bk_vec += n - mat;
  c->bk_nmat += nmat;
  c->bk_nvec += nvec;
}

/* A one-kernel step of `bytes` (none when 0): fp16, EF-signSGD, QSGD. */
static struct cstep one_kernel(double bytes)
{
  return (struct cstep){.bytes = bytes, .launches = bytes > 0 ? 1 : 0};
}

/* One step of a compressed bucket's hook: one task on the compute stream
 * for all its kernels (the cost model charges each launch, costmodel.c
 * compress_time), and under the host clock one host operation per kernel
 * and per view (engine.h, host_op_s), the host synchronizing first when
 * the step asks. */
static long compress_kernel(struct ctx *c, const struct cstep *st)
{
  if (st->launches <= 0)
    return -1;
  struct task t = {.kind = TK_KERNEL, .op = KK_COMPRESS, .stream = ST_COMPUTE,
                   .phase = PH_BWD, .layer = -1, .bytes = st->bytes};
  if (st->launches > 1)
    t.batch = (uint32_t)fmin(st->launches, 4294967295.0);
  if (st->select > 0) {
    /* bytes per element read by one-block radix select: 8 e / 2 passes
     * over e-byte keys (RADIX_BITS 2) and gatherTopK's pass */
    double sel = floor(st->select);
    t.m = (uint32_t)floor(sel / 4294967296.0);
    t.k = (uint32_t)(sel - (double)t.m * 4294967296.0);
    t.n = (uint32_t)((4 * c->grad_e + 1) * c->grad_e);
  }
  long i = bld_add(c, &t);
  double extra = st->launches - 1 + st->views;
  if (extra > 0 || st->sync)
    graph_host(c->g, c->s, i, (uint32_t)fmin(extra, 1e9), st->sync);
  return i;
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
  if (q->mid.launches > 0) {
    long k = compress_kernel(c, &q->mid);
    q->wait = dp_coll(c, CO_ALLREDUCE, q->coll2_bytes, k);
    q->mid.launches = 0;
    return;
  }
  compress_kernel(c, &q->dec[0]);
  compress_kernel(c, &q->dec[1]);
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
    if (!c->cq[i].done && (!mids_only || c->cq[i].mid.launches > 0))
      compress_continue(c, &c->cq[i]);
}

/* The whole queue, after the backward. */
void bld_compress_drain(struct ctx *c)
{
  for (int pass = 0; pass < 2; pass++)
    compress_advance(c, false);
  c->n_cq = 0;
}

/* Bytes of PyTorch's _orthogonalize (Gram-Schmidt) over matrices of
 * `rows` rows in all and r columns, per column i: torch.norm reads the
 * column, the division reads and writes it (3 L e), and while j = r-1-i
 * columns are left, col * rest (L e + 2 L j e), torch.sum over dim 0
 * (L j e), the sum times col (L e + L j e) and rest -= it (3 L j e):
 * L e (3 r + 2 (r - 1) + 7 r (r - 1) / 2) in all. */
static double orth_bytes(double rows, double r, double e)
{
  return rows * e * (3 * r + 2 * (r - 1) + 3.5 * r * (r - 1));
}

/* PowerSGD as PyTorch's powerSGD_hook runs it (torch/distributed/
 * algorithms/ddp_comm_hooks/powerSGD_hook.py as stored at commit 00c22ce:
 * one matrix at a time, Gram-Schmidt with epsilon 1e-8; what Agarwal et
 * al.'s main_ddp_final.py registers, start_powerSGD_iter 3, error
 * feedback and warm start on.  Later versions batch the matrices of one
 * shape and orthogonalize with torch.linalg.qr above rank 2: not
 * modelled), per bucket of T = M + V parameter tensors, M matrices
 * compressed at rank r (min_compression_rate 2 holds for every matrix
 * whose sides exceed 4 r, as in the studies' models: not tested per
 * matrix) and V others all-reduced whole:
 * - the hook: input.add_(error) (3 e n), torch.clone (2 e n), each tensor
 *   viewed as a matrix (2 T views), P and Q sliced and viewed (4 M),
 *   torch.cat of the V others (one kernel, T views: its list of views), each
 *   Q orthogonalized (warm start), P = M Q for each matrix;
 * - after the first all-reduce: its result divided and copied back to each
 *   of the V tensors (1 + V kernels, 2 V views), each P orthogonalized,
 *   Q = M^T P for each matrix (M views: the transposes);
 * - after the second: Q divided, M = P Q^T for each matrix (M views),
 *   torch.cuda.synchronize(device), then the error input_cp - input
 *   (3 e n).
 * _orthogonalize per matrix of r columns launches 3 kernels per column
 * (torch.norm, + epsilon, the division) and 4 more for each column but
 * the last (col * rest, torch.sum, the product, the subtraction):
 * 7 r - 4, and slices 2 r - 1 views.  The bytes of the three products
 * read M and the thin factors: e (M + r rc) each (rc: rows + columns);
 * Gram-Schmidt's, orth_bytes, half of rc for the Qs (columns) and half
 * for the Ps (rows), the split per matrix not being kept. */
static void powersgd_steps(const struct ctx *c, double n, struct cstep *enc,
                           struct cbucket *q)
{
  double e = c->grad_e, r = c->p->compress_param, vec = c->bk_vec;
  double mat = n - vec, rc = c->bk_rc, M = c->bk_nmat, V = c->bk_nvec;
  double T = M + V, orth = M * (7 * r - 4), orth_views = M * (2 * r - 1);
  bool others = V > 0;
  *enc = (struct cstep){
      .bytes = 3 * e * n + 2 * e * n + (others ? 2 * e * vec : 0) +
               orth_bytes(rc / 2, r, e) + e * (mat + r * rc),
      .launches = 2 + (others ? 1 : 0) + orth + M,
      .views = 2 * T + 4 * M + V + orth_views};
  q->mid = (struct cstep){
      .bytes = (others ? 4 * e * vec : 0) + orth_bytes(rc / 2, r, e) +
               e * (mat + r * rc),
      .launches = (others ? 1 + V : 0) + orth + M,
      .views = 2 * V + orth_views + M};
  q->coll2_bytes = e * r * rc / 2;
  q->dec[0] = (struct cstep){.bytes = 2 * e * r * rc / 2 + e * (mat + r * rc),
                             .launches = 1 + M, .views = M};
  q->dec[1] = (struct cstep){.bytes = 3 * e * n, .launches = 1, .sync = true};
}

/* Top-K (and Random-K) as a DDP hook per bucket, the steps of the
 * paper's GlobalTopKReducer (uw-mad-dash/GradCompressionUtility,
 * gradient_reducers.py; the body of main_ddp_final.py's
 * topk_single_call_reducer is not in the stored code) with weft's error
 * feedback:
 * - error added (3 e n), abs (2 e n), torch.topk(sorted=False) over the
 *   bucket, one thread block per slice (costmodel.c compress_time), the
 *   values gathered (8-byte indices read: k (8 + 2 e)), the error kept
 *   (copy 2 e n, the k kept zeroed: k (8 + e)): 6 kernels; Random-K draws
 *   k indices (one kernel, 8 k) instead of abs and topk: 5;
 * - all_gather of values and of indices into lists of N tensors:
 *   ProcessGroupNCCL copies each rank's part out of the flat output, 2 N
 *   copies (2 N k (e + 4));
 * - torch.zeros (n e), then for each rank its values divided by N (2 k e)
 *   and added at its indices (index_put_ with accumulate: k (8 + 3 e)):
 *   1 + 2 N kernels, two slices per rank.
 * Not counted: GlobalTopKReducer's per-tensor boolean masks (a host sync
 * per tensor and rank), and index_put_'s sort of the indices. */
static void topk_steps(const struct ctx *c, double n, double N, double k,
                       bool top, struct cstep *enc, struct cbucket *q)
{
  double e = c->grad_e;
  *enc = (struct cstep){
      .bytes = 3 * e * n + (top ? 2 * e * n : 8 * k) + k * (8 + 2 * e) +
               2 * e * n + k * (8 + e),
      .launches = top ? 6 : 5,
      .select = top ? n : 0};
  q->dec[0] = (struct cstep){
      .bytes = 2 * N * k * (e + 4) + n * e + N * k * (8 + 5 * e),
      .launches = 2 * N + 1 + 2 * N,
      .views = 2 * N};
}

/* signSGD with majority vote as the paper's hook encode_decode_signsgd
 * (main_ddp_final.py) and SignCompressor (gradient_reducers.py, bit2byte's
 * packing kernels) run it, per bucket:
 * - packing: torch.sign (2 e n), zeros of the padding, torch.cat (2 e n),
 *   to int32 (e n + 4 n), bit2byte.packing (4 n + n/8): 5 kernels, 2 views;
 * - all_gather into a list: N copies out (2 N n/8);
 * - for each rank unpacking: torch.ones (4 n), bit2byte.unpacking (n/8 +
 *   4 n), add_(-1) (8 n), the negation (8 n), float() (4 n + e n): 5
 *   kernels and 4 views; the N - 1 sums into the first (3 e n each); the
 *   sign of the sum (2 e n). */
static void sign_steps(const struct ctx *c, double n, double N,
                       struct cstep *enc, struct cbucket *q)
{
  double e = c->grad_e;
  *enc = (struct cstep){.bytes = 5 * e * n + 8 * n + n / 8, .launches = 5,
                        .views = 2};
  q->dec[0] = (struct cstep){
      .bytes = 2 * N * n / 8 + N * ((28 + e) * n + n / 8) +
               (N - 1) * 3 * e * n + 2 * e * n,
      .launches = N + 5 * N + (N - 1) + 1,
      .views = 4 * N};
}

static void compress_bucket(struct ctx *c, double acc, long after)
{
  const struct plan *p = c->p;
  double e = c->grad_e, n = acc / e, N = (double)(p->dp * p->cp);
  double vec = c->bk_vec, rc = c->bk_rc;
  double R = p->compress_param, F = p->compress_param;
  double k = ceil(F * n);
  compress_advance(c, true); /* the previous buckets' turn */
  bld_wait_for(c, after);
  struct cbucket q = {.wait = -1};
  struct cstep enc = {0};
  double wire = 0;
  enum coll_op op = CO_ALLGATHER;
  switch (p->compress) {
  case CM_FP16:
    enc = one_kernel(n * (e + 2));
    op = CO_ALLREDUCE;
    wire = 2 * n;
    q.dec[0] = one_kernel(n * (2 + e));
    break;
  case CM_POWERSGD:
    powersgd_steps(c, n, &enc, &q);
    op = CO_ALLREDUCE;
    wire = e * R * rc / 2 + e * vec;
    break;
  case CM_TOPK:
  case CM_RANDOMK:
    topk_steps(c, n, N, k, p->compress == CM_TOPK, &enc, &q);
    wire = N * k * (e + 4);
    break;
  case CM_SIGN:
    sign_steps(c, n, N, &enc, &q);
    wire = N * n / 8;
    break;
  case CM_EFSIGN:
    enc = one_kernel(3 * e * n + e * n + (n * e + n / 8) + 2 * e * n);
    wire = N * (n / 8 + 4);
    q.dec[0] = one_kernel(N * (n / 8 + 4) + n * e);
    break;
  default: /* CM_QSGD */
    enc = one_kernel(2 * e * n + n * R / 8);
    wire = N * (n * R / 8 + 4);
    q.dec[0] = one_kernel(N * (n * R / 8 + 4) + n * e);
    break;
  }
  long w = compress_kernel(c, &enc);
  q.wait = dp_coll(c, op, wire, w >= 0 ? w : after);
  if (c->n_cq < c->cq_cap)
    c->cq[c->n_cq++] = q;
  else /* no room: finish it in place */
    while (!q.done)
      compress_continue(c, &q);
  c->bk_rc = c->bk_vec = c->bk_nmat = c->bk_nvec = 0;
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
