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

#include "sim/base/xalloc.h"

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
    c->ops->layer_fwd(c, l, PH_FWD);
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
