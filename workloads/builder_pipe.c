/*
 * builder_pipe.c - a stage's passes over its chunks and their
 * pipeline transfers: the chunk driver (bld_chunk_pass) receives a
 * pass's input from the neighbouring virtual stage, runs the pass's body
 * (the forward and backward bodies here, ZeRO-3's in builder_zero.c) and
 * sends its output on; the receive and send on their own streams, with
 * Megatron's scatter/gather and optionally blocking.
 */
#include "workloads/builder_int.h"

#include <stdlib.h>
#include <string.h>

#include "sim/base/xalloc.h"

/* What a combined 1F1B step records of each of its passes while they are
 * built (bld_combined_pass): the pass's tasks, and per layer, in the order
 * the pass runs them, its first task, its end, and where a dense layer's
 * attention and feed-forward sub-blocks meet (-1: not seen). */
struct weave {
  long begin, end;
  long nl;
  long *ls, *le, *mark;
  bool in_layer;
};

/* Layer bookkeeping of the pass bodies below (no-ops outside a combined
 * step). */
static void weave_layer_begin(struct ctx *c)
{
  struct weave *w = c->weave;
  if (!w)
    return;
  w->ls[w->nl] = c->g->prog[c->s].n;
  w->mark[w->nl] = -1;
  w->in_layer = true;
}

static void weave_layer_end(struct ctx *c)
{
  struct weave *w = c->weave;
  if (!w)
    return;
  w->le[w->nl++] = c->g->prog[c->s].n;
  w->in_layer = false;
}

void bld_weave_layer(struct ctx *c, bool begin)
{
  if (begin)
    weave_layer_begin(c);
  else
    weave_layer_end(c);
}

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

/* Receive a pass's input from virtual stage vs + `peer` (-1: the previous,
 * +1: the next); the next computation waits for it. */
static void recv(struct ctx *c, int peer, int phase)
{
  struct task t = {.kind = TK_RECV, .stream = ST_PP_RECV,
                   .phase = (uint8_t)phase, .peer = (int8_t)peer,
                   .layer = -1, .bytes = p2p_bytes(c)};
  bld_wait_for(c, bld_add(c, &t));
  /* Scatter/gather: rebuild the full tensor over NVLink. */
  if (c->t > 1 && !c->p->sp && c->ops->p2p_scatter_gather)
    bld_coll(c, CO_ALLGATHER, GK_TP, ST_COMPUTE, phase, -1, c->e * c->T * c->h);
}

/* Send a pass's output to virtual stage vs + `peer`, once the computation
 * issued so far is done. */
static void send(struct ctx *c, int peer, int phase)
{
  struct task t = {.kind = TK_SEND, .stream = ST_PP_SEND,
                   .phase = (uint8_t)phase, .peer = (int8_t)peer,
                   .layer = -1, .bytes = p2p_bytes(c)};
  long i = bld_add(c, &t);
  graph_dep(c->g, c->s, c->last_compute);
  /* Blocking: the next computation waits until the transfer is done, as
   * Megatron-LM 2021 waited on its batched send/recv. */
  if (c->p->blocking_p2p)
    bld_wait_for(c, i);
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
  bld_gather_buckets(c, c->chunk, PH_FWD, -1, ag);
  return ag;
}

/* The forward pass of a chunk: embed, layers, and the loss on the last
 * virtual stage. */
void bld_forward_body(struct ctx *c, const struct pass *ps)
{
  long *ag = ps->ag, vs = ps->vs, first = ps->first, count = ps->count;
  int k = 0;
  if (vs == 0) {
    if (ag)
      bld_wait_for(c, ag[k++]);
    c->ops->embed_fwd(c);
  }
  for (long l = first; l < first + count; l++) {
    if (ag)
      bld_wait_for(c, ag[k++]);
    weave_layer_begin(c);
    c->ops->layer_fwd(c, l, PH_FWD);
    weave_layer_end(c);
  }
  if (vs == c->vlast) {
    if (ag)
      bld_wait_for(c, ag[k++]);
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
  return bld_kernel(c, KK_ELEMWISE, PH_BWD, layer, 0, c->accum_b * params);
}

/* The backward pass of a chunk: the loss on the last virtual stage,
 * layers, embedding.  On its chunk's last backward (`last`), gradients go
 * into buckets reduced as they fill when overlapped (`overlap`), and
 * expert gradients are reduced layer by layer. */
void bld_backward_body(struct ctx *c, const struct pass *ps)
{
  const struct plan *p = c->p;
  long vs = ps->vs, first = ps->first, count = ps->count;
  bool last = ps->last, overlap = ps->overlap, accum = ps->accum;
  double acc = 0, lim = bld_bucket_limit(c, c->chunk);
  if (vs == c->vlast) {
    long w = accumulate(c, accum, -1, c->head, c->ops->loss_bwd(c));
    bld_bucket_add(c, &acc, BU_HEAD);
    if (overlap && acc >= lim)
      bld_flush_bucket(c, &acc, w);
  }
  long nx;
  enum group_kind xg = bld_expert_group(p, &nx);
  for (long l = first + count - 1; l >= first; l--) {
    weave_layer_begin(c);
    bld_layer_select(c, l); /* c->lp and c->lx are layer l's */
    long w = accumulate(c, accum, l, c->lp + c->lx, c->ops->layer_bwd(c, l));
    bld_bucket_add(c, &acc, BU_LAYER);
    if (overlap && acc >= lim)
      bld_flush_bucket(c, &acc, w);
    if (c->lx > 0 && p->zero < 3 && (overlap || (!p->overlap_grad && last)) &&
        nx > 1) {
      long x = bld_grad_coll(c, p->zero ? CO_REDUCE_SCATTER : CO_ALLREDUCE, xg,
                             l, c->lx * c->grad_e, w);
      c->g->prog[c->s].tasks[x].mb = -1;
    }
    weave_layer_end(c);
  }
  if (vs == 0) {
    long w = accumulate(c, accum, -1, c->emb, c->ops->embed_bwd(c));
    bld_bucket_add(c, &acc, BU_EMB);
    if (overlap)
      bld_flush_bucket(c, &acc, w);
  }
  if (overlap)
    bld_flush_bucket(c, &acc, c->last_compute);
}

/* The chunk driver: one pass of a chunk between its pipeline transfers.
 * A forward pass receives from the previous virtual stage and sends to
 * the next, a backward pass the other way; the first and last virtual
 * stages have no neighbour on one side. */
void bld_chunk_pass(struct ctx *c, struct pass *ps, pass_body *body)
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

/* ---- Combined 1F1B: the MoE all-to-all overlap ----
 *
 * Megatron-Core's --overlap-moe-expert-parallel-comm (NVIDIA/Megatron-LM
 * at d98e8a6, 2026-08; plan.h, a2a_overlap) runs a steady-state forward
 * and backward of two micro-batches as one step
 * (pipeline_parallel/combined_1f1b.py, combined_forward_backward_step).
 * Each layer is cut into nodes (models/common/model_chunk_schedule_plan.py,
 * TransformerLayerSchedulePlan; models/gpt/fine_grained_callables.py):
 * pre_dispatch_computation (attention, the MLP norm, shared experts, the
 * router, the permutation), moe_dispatch (the all-to-alls), mlp (the
 * expert-TP gather, the experts, the reduce-scatter), moe_combine (the
 * all-to-all, the unpermutation and the residual add); a dense layer is
 * attention and MLP.  Dispatch and combine run on a communication stream
 * (pipeline_parallel/utils.py, get_comm_stream), the others on the compute
 * stream, and each node of a micro-batch waits for the one before it
 * through the micro-batch's CUDA event (ScheduleNode.stream_acquire_
 * context: event.wait, run, event.record).  TransformerModelChunkSchedule
 * Plan.run pairs forward layer i with backward layer n - 1 - i (the
 * backward's i-th in its own order) after the forward's embedding and the
 * backward's loss, and TransformerLayerSchedulePlan.run issues, per pair:
 *
 *   comm:    combine_bwd(B)  dispatch_fwd(F) dispatch_bwd(B)  combine_fwd(F)
 *   compute: pre_dispatch_fwd(F)  mlp_bwd(B)  mlp_fwd(F)  pre_dispatch_bwd(B)
 *
 * so that one micro-batch's all-to-all runs beside the other's compute;
 * layers left over when the passes differ in layers run alone, the
 * backward's first; then the forward's loss and the backward's embedding.
 *
 * weft builds the two passes as usual, one after the other, recording
 * each layer's tasks, then reorders the step's tasks in that issue order
 * (a stream runs its tasks in program order) and moves each layer's runs
 * of EP all-to-alls from the compute stream to ST_EP, where they wait for
 * their own micro-batch's compute before them and its compute after them
 * waits for them: the events above.  An MoE layer's nodes are cut at its
 * two runs of all-to-alls (builder_moe.c: the forward's shared experts,
 * router kernels and permutation before the first, the expert-TP gather
 * and sort after it; the backward's the other way); a dense layer's at
 * its attention's residual add (bld_weave_step).  The unpermutation, the
 * shared experts' add and the residual add that Megatron runs on the
 * communication stream after the combine's all-to-all
 * (submodule_combine_forward) run on the compute stream (a GPU runs one
 * kernel at a time in weft, engine.h; beside pre_dispatch_bwd they would
 * share its SMs), right after the pair's pre_dispatch_bwd and before the
 * next pair's combine_bwd, whose kernels follow them on Megatron's
 * communication stream; likewise the backward's combine kernels (the
 * residual's and the unpermutation's backward) before its all-to-all.
 * The MTP layer (at most one, as Megatron asserts) is the chunk's last
 * layer in the step, its output layer and loss (mtp_post_process) after
 * its combine, the model's output layer and loss (post_process) after it
 * (builder_layer.c, loss_fwd and loss_bwd; model_chunk_schedule_plan.py
 * appends the mtp module's layers to the decoder's).  Kernels,
 * collectives and bytes are those of the two passes built alone; only
 * their order and the all-to-alls' stream change.  With
 * --delay-wgrad-compute (plan.h, delay_wgrad) the backward's mlp and
 * pre_dispatch nodes run their weight gradients (TE's backward_dw,
 * TransformerLayerNode.backward_dw, which records no event) after the
 * rest of the node, and the all-to-all after each waits for the rest
 * only. */

void bld_weave_step(struct ctx *c, int step, bool bwd)
{
  struct weave *w = c->weave;
  if (!w->in_layer || w->mark[w->nl] >= 0)
    return;
  /* the attention block's residual add, the first LS_RESID (layer.c) */
  int rb = 0;
  while (rb < c->ld.ns && c->ld.st[rb].kind != LS_RESID)
    rb++;
  if (step == (bwd ? rb : rb + 1))
    w->mark[w->nl] = c->g->prog[c->s].n;
}

/* One of the step's runs of tasks, [lo, hi) in the order built; `part`
 * of a backward compute node under delay_wgrad: 0 all its tasks, 1 all
 * but its weight gradients (and what follows them), 2 the rest. */
struct span {
  long lo, hi;
  bool comm;
  int part;
};

/* A weight-gradient GEMM (graph.h, graph_role). */
static bool wgrad(const struct task *t)
{
  return t->kind == TK_KERNEL && (t->op == KK_GEMM || t->op == KK_GGEMM) &&
         t->role && t->role >> 6 == GP_WGRAD;
}

static bool ep_a2a(const struct task *t)
{
  return t->kind == TK_COLL && t->op == CO_ALLTOALL &&
         t->stream == ST_COMPUTE &&
         (t->group == GK_EP || t->group == GK_EPX || t->group == GK_EPN);
}

/* Layer k of pass w cut into its nodes' spans, in the pass's order:
 * forward pre_dispatch, dispatch, mlp, combine, and the combine's kernels
 * (which join the next node); backward the combine's kernels, combine,
 * mlp, dispatch, pre_dispatch.  Odd slots are the all-to-alls. */
static void layer_slots(const struct program *pr, const struct weave *w,
                        long k, bool fwd, struct span out[5])
{
  long ls = w->ls[k], le = w->le[k], run[2][2], nr = 0;
  for (long i = ls; i < le; i++) {
    if (!ep_a2a(&pr->tasks[i]))
      continue;
    long j = i;
    while (j < le && ep_a2a(&pr->tasks[j]))
      j++;
    if (nr < 2) {
      run[nr][0] = i;
      run[nr][1] = j;
    }
    nr++;
    i = j - 1;
  }
  for (int s = 0; s < 5; s++)
    out[s] = (struct span){le, le, s % 2 == 1, 0};
  if (nr == 2) {
    long cut[6] = {ls, run[0][0], run[0][1], run[1][0], run[1][1], le};
    for (int s = 0; s < 5; s++) {
      out[s].lo = cut[s];
      out[s].hi = cut[s + 1];
    }
    return;
  }
  /* A dense layer (or, never with the dispatchers refused otherwise, an
   * MoE layer without its two runs): attention and MLP, or the whole
   * layer in one node. */
  long mk = w->mark[k] > ls && w->mark[k] < le ? w->mark[k] : -1;
  int a = fwd ? 0 : 4, f = 2;
  if (mk < 0) {
    out[a] = (struct span){ls, le, false, 0};
    return;
  }
  out[fwd ? a : f] = (struct span){ls, mk, false, 0};
  out[fwd ? f : a] = (struct span){mk, le, false, 0};
}

/* Append span `sp` (if not empty) to the step's order. */
static void put(struct span *order, long *n, struct span sp)
{
  if (sp.hi > sp.lo)
    order[(*n)++] = sp;
}

/* The step's spans in Megatron's issue order (above); returns how many. */
static long weave_order(const struct program *pr, const struct weave *f,
                        const struct weave *b, bool delay, struct span *order)
{
  long n = 0, nf = f->nl, nb = b->nl, both = nf < nb ? nf : nb;
  struct span fs[5], bs[5];
  /* the forward's input and embedding, the backward's input and loss */
  put(order, &n, (struct span){f->begin, nf ? f->ls[0] : f->end, false,
                               0});
  put(order, &n, (struct span){b->begin, nb ? b->ls[0] : b->end, false,
                               0});
  long ftail = -1; /* where the last forward layer's combine kernels start */
  struct span lateb = {0, 0, false, 0}; /* a pre_dispatch's backward_dw */
  for (long i = 0; i < both; i++) {
    layer_slots(pr, b, i, false, bs);
    layer_slots(pr, f, i, true, fs);
    put(order, &n, bs[0]);
    /* --delay-wgrad-compute: the previous pre_dispatch's backward_dw
     * after this combine_bwd's kernels (which Megatron runs on the
     * communication stream, after the dgrad's event) */
    if (lateb.hi > lateb.lo)
      put(order, &n, lateb);
    lateb.hi = lateb.lo;
    put(order, &n, bs[1]); /* combine_bwd */
    if (ftail >= 0)
      put(order, &n, (struct span){ftail, fs[0].lo, false, 0});
    put(order, &n, fs[0]); /* pre_dispatch_fwd */
    if (delay) { /* mlp's backward_dw right after its dgrad */
      bs[2].part = 1;
      put(order, &n, bs[2]); /* mlp_bwd */
      bs[2].part = 2;
    }
    put(order, &n, bs[2]); /* mlp_bwd (the rest) */
    put(order, &n, fs[1]); /* dispatch_fwd */
    put(order, &n, bs[3]); /* dispatch_bwd */
    put(order, &n, fs[2]); /* mlp_fwd */
    put(order, &n, fs[3]); /* combine_fwd */
    if (delay) {
      bs[4].part = 1;
      lateb = bs[4];
      lateb.part = 2;
    }
    put(order, &n, bs[4]); /* pre_dispatch_bwd */
    /* combine_fwd's kernels (unpermutation, shared experts' add,
     * residual), which Megatron runs on the communication stream after
     * the all-to-all, beside pre_dispatch_bwd and before the next pair's
     * combine_bwd (that stream's order) */
    put(order, &n, fs[4]);
    ftail = fs[4].hi;
  }
  if (lateb.hi > lateb.lo) /* the last one: before the loss and sends */
    put(order, &n, lateb);
  for (long i = both; i < nb; i++) {
    layer_slots(pr, b, i, false, bs);
    for (int s = 0; s < 5; s++)
      put(order, &n, bs[s]);
  }
  for (long i = both; i < nf; i++) {
    layer_slots(pr, f, i, true, fs);
    if (ftail >= 0)
      put(order, &n, (struct span){ftail, fs[0].lo, false, 0});
    for (int s = 0; s < 4; s++)
      put(order, &n, fs[s]);
    ftail = fs[4].lo;
  }
  /* the forward's loss (or its send), the backward's embedding and send */
  put(order, &n, (struct span){ftail >= 0 ? ftail : f->end, f->end, false,
                               0});
  put(order, &n, (struct span){nb ? b->le[nb - 1] : b->end, b->end, false,
                               0});
  return n;
}

/* The pass's compute-stream task before `i` (from `lo`; not a weight
 * gradient when `skip_wgrad`) or from `i` on (to `hi`), -1 when none. */
static long compute_near(const struct program *pr, long i, long lo, long hi,
                         bool before, bool skip_wgrad)
{
  if (before) {
    for (long j = i - 1; j >= lo; j--)
      if (pr->tasks[j].stream == ST_COMPUTE &&
          !(skip_wgrad && wgrad(&pr->tasks[j])))
        return j;
    return -1;
  }
  for (long j = i; j < hi; j++)
    if (pr->tasks[j].stream == ST_COMPUTE)
      return j;
  return -1;
}

/* Build pass `ps` of a combined step, recording it in *w. */
static void record_pass(struct ctx *c, struct pass *ps, struct weave *w)
{
  long n = ps->count + c->m->mtp_layers + 1; /* the MTP layers' too */
  *w = (struct weave){.begin = c->g->prog[c->s].n};
  w->ls = xcalloc((size_t)n, sizeof *w->ls);
  w->le = xcalloc((size_t)n, sizeof *w->le);
  w->mark = xcalloc((size_t)n, sizeof *w->mark);
  c->chunk = ps->chunk;
  c->mb = ps->mb;
  c->weave = w;
  bld_chunk_pass(c, ps, ps->fwd ? bld_forward_body : bld_backward_body);
  c->weave = NULL;
  w->end = c->g->prog[c->s].n;
}

static void weave_free(struct weave *w)
{
  free(w->ls);
  free(w->le);
  free(w->mark);
}

int bld_combined_pass(struct ctx *c, struct pass *f, struct pass *b,
                      struct weft_err *err)
{
  struct graph *g = c->g;
  struct program *pr = &g->prog[c->s];
  long n_dp0 = c->n_dp;
  struct weave wf, wb;
  record_pass(c, f, &wf);
  record_pass(c, b, &wb);
  long begin = wf.begin, n = pr->n - begin;
  int rc = 0;
  /* The order, and where each all-to-all run waits and is waited for. */
  struct span *order = xcalloc((size_t)(12 * (wf.nl + wb.nl) + 8),
                               sizeof *order);
  bool delay = c->p->delay_wgrad;
  long no = weave_order(pr, &wf, &wb, delay, order);
  long *extra = xmalloc((size_t)n * sizeof *extra), *pos, *perm;
  bool *ep = xcalloc((size_t)n, sizeof *ep);
  for (long i = 0; i < n; i++)
    extra[i] = -1;
  for (long k = 0; k < no; k++) {
    if (!order[k].comm)
      continue;
    const struct weave *w = order[k].lo < wb.begin ? &wf : &wb;
    long lo = order[k].lo, hi = order[k].hi;
    for (long i = lo; i < hi; i++)
      ep[i - begin] = true;
    extra[lo - begin] = compute_near(pr, lo, w->begin, w->end, true, delay);
    long next = compute_near(pr, hi, w->begin, w->end, false, false);
    if (next >= 0)
      extra[next - begin] = hi - 1;
  }
  /* Copy the step out, then add it again in the new order. */
  struct task *tk = xmalloc((size_t)n * sizeof *tk);
  if (n > 0)
    memcpy(tk, pr->tasks + begin, (size_t)n * sizeof *tk);
  long d0 = n ? tk[0].dep0 : pr->ndeps, nd = pr->ndeps - d0;
  uint32_t *dep = xmalloc((size_t)(nd + 1) * sizeof *dep);
  if (nd > 0) /* pr->deps may still be NULL */
    memcpy(dep, pr->deps + d0, (size_t)nd * sizeof *dep);
  uint32_t *host = NULL;
  if (pr->host) {
    host = xmalloc((size_t)n * sizeof *host);
    memcpy(host, pr->host + begin, (size_t)n * sizeof *host);
  }
  perm = xmalloc((size_t)n * sizeof *perm);
  pos = xmalloc((size_t)n * sizeof *pos);
  for (long i = 0; i < n; i++)
    pos[i] = -1;
  long m = 0;
  for (long k = 0; k < no && !rc; k++) {
    /* a late node: its tasks before its last compute task that is not a
     * weight gradient, less the weight gradients; then the rest */
    long lo = order[k].lo, hi = order[k].hi, cut = hi;
    int part = order[k].part;
    if (part) {
      long lc = compute_near(pr, hi, lo, hi, true, true);
      cut = lc >= 0 ? lc + 1 : lo;
    }
    for (long i = lo; i < hi && !rc; i++) {
      bool early = i < cut && !wgrad(&pr->tasks[i]);
      if ((part == 1 && !early) || (part == 2 && early))
        continue;
      if (pos[i - begin] >= 0)
        rc = -1;
      pos[i - begin] = begin + m;
      perm[m++] = i - begin;
    }
  }
  if (rc || m != n) {
    rc = weft_errf(err, WEFT_EINVAL, "stage %ld: internal error: the "
                   "combined step of micro-batches %d and %d covers %ld of "
                   "its %ld tasks", c->s, f->mb, b->mb, m, n);
    goto out;
  }
  pr->n = begin;
  pr->ndeps = d0;
  for (long j = 0; j < n && !rc; j++) {
    struct task t = tk[perm[j]];
    if (ep[perm[j]])
      t.stream = ST_EP;
    long at = graph_add(g, c->s, &t);
    if (host)
      pr->host[at] = host[perm[j]];
    for (uint32_t q = 0; q <= t.ndep && !rc; q++) {
      long on = q < t.ndep ? (long)dep[t.dep0 - d0 + q] : extra[perm[j]];
      if (on < 0)
        continue;
      on = on < begin ? on : pos[on - begin];
      if (on >= at)
        rc = weft_errf(err, WEFT_EINVAL, "stage %ld: internal error: the "
                       "combined step orders task %ld before %ld", c->s, at,
                       on);
      else
        graph_dep(g, c->s, on);
    }
  }
  /* What the context holds of the step's tasks, renumbered. */
  for (long i = n_dp0; i < c->n_dp; i++)
    if (c->dp_tasks[i] >= begin)
      c->dp_tasks[i] = pos[c->dp_tasks[i] - begin];
  for (int k = 0; k < c->npending; k++)
    if (c->pending[k] >= begin)
      c->pending[k] = pos[c->pending[k] - begin];
  long lc = compute_near(pr, pr->n, begin, pr->n, true, false);
  if (lc >= 0)
    c->last_compute = lc;
out:
  free(pos);
  free(perm);
  free(host);
  free(dep);
  free(tk);
  free(ep);
  free(extra);
  free(order);
  weave_free(&wf);
  weave_free(&wb);
  return rc;
}
