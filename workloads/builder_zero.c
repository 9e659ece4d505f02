/*
 * builder_zero.c - sharded data parallelism: ZeRO-1/2's parameter
 * buckets and their all-gathers after the optimizer step, and ZeRO-3 as
 * the ideal implementation, PyTorch FSDP (1 and 2, HSDP), DeepSpeed
 * (now and 2021) and Megatron-FSDP issue it: a pass over units whose parameters are gathered
 * ahead and whose gradients are reduced right after their backward.
 */
#include "workloads/builder_int.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "sim/base/xalloc.h"
#include "workloads/accounting.h"

/* A unit of a ZeRO-1/2 parameter bucket. */
struct punit {
  long layer;      /* -1: embedding, -2: output layer and final norm */
  double params;
  int bucket;
};

/* ZeRO-1/2's parameter buckets of chunk `ch` (the gradient buckets): the
 * chunk's units in forward order (embedding, layers, output layer) with
 * their dense parameters and the bucket they fall in, numbered in forward
 * order; *nunits units (the caller frees the array). */
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
  double lim = bld_bucket_limit(c, ch), acc = 0;
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
void bld_gather_buckets(struct ctx *c, long ch, int phase, long after,
                        long *gather)
{
  int n;
  struct punit *u = param_buckets(c, ch, &n);
  for (int i = 0; i < n; i++) {
    if (gather)
      gather[i] = -1;
    if (i > 0 && u[i].bucket == u[i - 1].bucket)
      continue;
    /* FP8 parameters (plan.h, fp8_params) are gathered in FP8: a layer's
     * at 1 byte per parameter (its norms, a few in 10^4, too), the
     * embedding's and the output layer's at the model's width. */
    bool f8 = c->p->fp8_params && c->m->dtype == DTYPE_FP8;
    double bytes = 0;
    for (int j = i; j < n && u[j].bucket == u[i].bucket; j++)
      bytes += u[j].params * (f8 && u[j].layer >= 0 ? 1 : c->e);
    long x = bld_coll(c, CO_ALLGATHER, layout_grad_group(&c->g->layout), ST_AG,
                      phase, u[i].layer >= 0 ? u[i].layer : -1, bytes);
    if (gather)
      gather[i] = x;
    if (after >= 0)
      graph_dep(c->g, c->s, after);
  }
  free(u);
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
enum group_kind bld_expert_group(const struct plan *p, long *n)
{
  *n = plan_edp(p); /* with etp set, EDP over the folded groups (plan.h) */
  return p->cp > 1 ? GK_EDPCP : GK_EDP;
}

/* The tensors of a unit's dense parameters per rank, in module order, in
 * elements: a layer's weights as layer.h lists them (SwiGLU's FC1 as its
 * gate and up tensors), what an MoE layer holds beyond its attention and
 * norms (router, experts outside EP) as one tensor; the embedding and the
 * output layer as one each.  The sum is the unit's params. */
enum { UNIT_TENSORS_MAX = LAYER_WEIGHTS_MAX + 4 };
static int unit_tensors(const struct ctx *c, const struct unit *u,
                        double *out)
{
  if (u->kind != UNIT_LAYER) {
    out[0] = u->params;
    return 1;
  }
  const struct layer_desc *d = &c->ld;
  int n = 0;
  for (int i = 0; i < d->nw; i++) {
    const struct lweight *w = &d->w[i];
    if (w->routed || w->role == LW_ROUTER)
      continue;
    double per = lweight_elems_rank(d, w, c->t, 1) / w->tensors;
    for (int k = 0; k < w->tensors; k++)
      out[n++] = per;
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
    i = bld_coll(c, CO_ALLGATHER, gk, ST_AG, phase, layer, b[k] * c->e);
    if (after >= 0)
      graph_dep(c->g, c->s, after);
    if (sync && c->last_compute >= 0)
      graph_dep(c->g, c->s, c->last_compute);
  }
  enum group_kind xg = bld_expert_group(c->p, &nx);
  if (u->xparams > 0 && nx > 1) {
    i = bld_coll(c, CO_ALLGATHER, xg, ST_AG, phase, layer, u->xparams * c->e);
    if (after >= 0)
      graph_dep(c->g, c->s, after);
  }
  return i;
}

/* DeepSpeed's open gradient bucket over a pass. */
struct reducer {
  double acc;       /* elements waiting in the bucket */
  long last;        /* the previous bucket's reduction (FSDP2: unit's) */
  double tensors;   /* DeepSpeed 2021: parameters in the bucket */
  long shard;       /* and the ranks each is reduce-scattered over */
};

/* Reduce a unit's gradients: one reduce-scatter per unit (ideal, FSDP;
 * FSDP2 first copies them into its reduce-scatter buffer), or DeepSpeed's
 * buckets of reduce_bucket_size elements (flush: the pass is over). */
static void reduce_grads(struct ctx *c, struct reducer *r,
                         const struct unit *un, long w, enum group_kind gk,
                         bool flush)
{
  enum shard_impl si = c->p->shard_impl;
  long layer = un ? unit_layer(un) : -1;
  if (!deepspeed(si)) {
    if (!un)
      return;
    long after = w;
    if (si == SI_FSDP2) {
      /* post_backward: the compute stream first waits for the previous
       * group's reduce-scatter, whose input FSDP2 frees then
       * (comm_ctx.reduce_scatter_state, "wait on the previous
       * reduce-scatter to bound memory usage"), then _chunk_cat copies
       * the gradients into the new input (foreach_reduce; read at
       * pytorch/pytorch 002a76f, _fsdp_param_group.py, and 010ae4a,
       * _fsdp_collectives.py). */
      bld_wait_for(c, r->last);
      after = bld_kernel(c, KK_ELEMWISE, PH_BWD, layer, 0,
                         2 * un->params * c->grad_e);
    }
    r->last = bld_grad_coll(c, CO_REDUCE_SCATTER, gk, layer,
                            un->params * c->grad_e, after);
    return;
  }
  if (un) {
    r->acc += un->params;
    if (si == SI_DEEPSPEED_2021) {
      /* Parameters: a layer's tensors; the word (and GPT's position)
       * embedding; the final norm (GPT: and its bias), and the output
       * layer unless tied. */
      double ten[UNIT_TENSORS_MAX];
      bool gpt = c->m->gpt_style;
      r->tensors += un->kind == UNIT_LAYER ? unit_tensors(c, un, ten)
                    : un->kind == UNIT_EMBED
                        ? 1 + gpt
                        : 1 + gpt + !model_tied(c->m);
    }
  }
  if (r->acc <= 0 || (!flush && r->acc < SHARD_REDUCE_ELEMS))
    return;
  bool old = si == SI_DEEPSPEED_2021;
  /* 2021: the host waits for the previous bucket's reduction before it
   * reduces this one, so the computation it issues next waits too
   * (stage3.py reduce_ipg_grads: reduction_stream.synchronize()).  Each
   * parameter of the bucket is then reduce-scattered on its own
   * (average_tensor -> reduce_gradients_at_owner ->
   * partition_parameters.py _reduce_scatter_gradient, reduce_scatter
   * being on by default), the host building a list of one narrow view per
   * rank and PyTorch's ProcessGroupNCCL::reduce_scatter copying the list
   * into one flat input: two host operations per rank and parameter.  One
   * collective of the bucket's bytes stands for them here; the flattening
   * copies, on the reduction stream, are not counted. */
  if (old)
    bld_wait_for(c, r->last);
  r->last = bld_grad_coll(c, CO_REDUCE_SCATTER, gk, layer,
                          r->acc * c->grad_e, w);
  if (old && r->tensors > 0)
    graph_host(c->g, c->s, r->last,
               (uint32_t)fmin(2.0 * (double)r->shard * r->tensors, 1e9),
               false);
  r->acc = 0;
  r->tensors = 0;
}

/* Run a unit's forward, or its backward, returning the backward's last
 * task (-1 for a forward). */
static long run_unit(struct ctx *c, const struct unit *un, bool fwd)
{
  if (fwd) {
    if (un->kind == UNIT_EMBED)
      c->ops->embed_fwd(c);
    else if (un->kind == UNIT_LAYER)
      c->ops->layer_fwd(c, un->layer, PH_FWD);
    else
      c->ops->loss_fwd(c);
    return -1;
  }
  return un->kind == UNIT_EMBED   ? c->ops->embed_bwd(c)
         : un->kind == UNIT_LAYER ? c->ops->layer_bwd(c, un->layer)
                                  : c->ops->loss_bwd(c);
}

/* DeepSpeed ZeRO-3 as v0.3.16 to v0.5.x ran it (2021; read at the tags
 * in microsoft/DeepSpeed: runtime/zero/stage3.py, PartitionedParameter-
 * Coordinator, and runtime/zero/partition_parameters.py):
 * - Each module's forward (and backward) pre-hook fetches its parameters
 *   (fetch_sub_module) and blocks: it waits for their gathers and every
 *   gather in flight, then calls torch.cuda.synchronize(), so the GPU
 *   drains, gradient reductions in flight included
 *   (_synchronize_communication).  Parameters below the persistence
 *   threshold (1e5 elements) stay whole and need no fetch.
 * - Right after, still before the module's computation is issued, it
 *   prefetches the parameters that come next in the recorded module order
 *   until stage3_prefetch_bucket_size (5e7) elements
 *   (prefetch_next_sub_modules, get_params_to_prefetch): their gathers
 *   then run beside that computation.  A prefetched parameter is ready at
 *   its module's fetch, which syncs only when something is in flight.
 * - Each parameter is gathered alone (_allgather_param): torch.zeros of
 *   the whole tensor, torch.cuda.synchronize(), one narrow view per rank
 *   in a Python loop, and torch.distributed.all_gather over that list,
 *   which PyTorch's ProcessGroupNCCL runs into a flat buffer of its own
 *   and copies back into the views one by one: per gather two host
 *   operations per rank of the group (the view, the copy's launch), and
 *   on the GPU the zeroing (2 bytes per element) and the copy back (read
 *   and write): counted as one 6-byte-per-element kernel on the compute
 *   stream after the gather, whose copies the fetch waits for.
 * With full recomputation, the backward pass fetches each layer's
 * parameters for the recomputed forward, and its backward finds them
 * still gathered (their reuse distance is below max_reuse_distance, 1e9
 * elements), so it fetches nothing.  Prefetching in the backward pass is
 * taken to work as in the forward one (the recorded trace order is the
 * forward's; a mismatch disables it, which would make the backward
 * slower still). */
enum { DS21_TENSORS = 3 };
struct ds21_item {
  long layer;  /* -1: the embedding or the loss unit */
  int w;       /* the module's weight (layer.h index), -1: a whole unit */
  int unit;    /* position of its unit in the pass */
  int nt;
  double elems[DS21_TENSORS];
};
struct ds21 {
  struct ds21_item *it;
  int n;
  int avail;   /* items [0, avail) are gathered and waited for */
  int issued;  /* items [0, issued) have their gathers issued */
  long last;   /* the last gather issued */
  int unit;    /* the unit now running */
  int hook_phase; /* the phase whose linear steps fetch */
  long shard;
  enum group_kind gk;
  const struct reducer *red;
};

static void ds21_add(struct ds21_item *it, int *n, long layer, int w, int unit,
                     const double *elems, int nt)
{
  struct ds21_item x = {layer, w, unit, 0, {0}};
  for (int k = 0; k < nt; k++)
    if (elems[k] >= SHARD_PERSIST_ELEMS && x.nt < DS21_TENSORS)
      x.elems[x.nt++] = elems[k];
  if (x.nt)
    it[(*n)++] = x;
}

/* A layer's fetched modules, in the order its steps run in the pass:
 * each linear step's weight tensors and the bias after it. */
static void ds21_layer(const struct ctx *c, struct ds21_item *it, int *n,
                       long layer, int unit, bool reverse)
{
  const struct layer_desc *d = &c->ld;
  for (int j = 0; j < d->ns; j++) {
    const struct lstep *st = &d->st[reverse ? d->ns - 1 - j : j];
    if (st->kind != LS_LINEAR)
      continue;
    const struct lweight *w = &d->w[st->w];
    if (w->routed || w->role == LW_ROUTER)
      continue;
    double e[DS21_TENSORS];
    int nt = 0;
    double per = lweight_elems_rank(d, w, c->t, 1) / w->tensors;
    for (int k = 0; k < w->tensors && nt < DS21_TENSORS; k++)
      e[nt++] = per;
    if (st->w + 1 < d->nw && !lweight_matrix(&d->w[st->w + 1]) &&
        d->w[st->w + 1].role == w->role && nt < DS21_TENSORS)
      e[nt++] = lweight_elems_rank(d, &d->w[st->w + 1], c->t, 1);
    ds21_add(it, n, layer, st->w, unit, e, nt);
  }
}

/* Gather item i's tensors, each after a host synchronization and the
 * host's list building (above). */
static void ds21_gather(struct ctx *c, struct ds21 *z, int i, int phase)
{
  const struct ds21_item *x = &z->it[i];
  for (int k = 0; k < x->nt; k++) {
    long g = bld_coll(c, CO_ALLGATHER, z->gk, ST_AG, phase, x->layer,
                      x->elems[k] * c->e);
    if (c->last_compute >= 0)
      graph_dep(c->g, c->s, c->last_compute);
    if (z->last >= 0)
      graph_dep(c->g, c->s, z->last);
    graph_host(c->g, c->s, g, (uint32_t)fmin(2.0 * (double)z->shard, 1e9),
               true);
    z->last = g;
  }
  z->issued = i + 1;
}

/* The fetch of item i, then the prefetch after it. */
static void ds21_fetch(struct ctx *c, struct ds21 *z, int i, int phase)
{
  if (i < z->avail)
    return;
  if (i >= z->issued)
    for (int k = z->issued; k <= i; k++)
      ds21_gather(c, z, k, phase);
  /* Everything in flight is waited for, the reductions too. */
  bld_wait_for(c, z->last);
  if (z->red && z->red->last >= 0)
    bld_wait_for(c, z->red->last);
  for (int k = z->avail; k < z->issued; k++) {
    double el = 0;
    for (int t = 0; t < z->it[k].nt; t++)
      el += z->it[k].elems[t];
    bld_kernel(c, KK_ELEMWISE, phase, z->it[k].layer, 0, 6 * el * c->e);
  }
  z->avail = z->issued;
  double acc = 0;
  int k = z->issued;
  while (k < z->n && acc < SHARD_PREFETCH_ELEMS) {
    for (int t = 0; t < z->it[k].nt; t++)
      acc += z->it[k].elems[t];
    ds21_gather(c, z, k++, phase);
  }
}

/* The linear steps' hook: fetch the module of weight w of `layer`, if it
 * is one, searched for in the running unit. */
static void ds21_pre_linear(struct ctx *c, long layer, int w, int phase)
{
  struct ds21 *z = c->ds21;
  if (!z || phase != z->hook_phase)
    return;
  for (int i = z->avail > 0 ? z->avail - 1 : 0; i < z->n; i++) {
    if (z->it[i].unit > z->unit)
      break;
    if (z->it[i].unit == z->unit && z->it[i].layer == layer &&
        z->it[i].w == w) {
      ds21_fetch(c, z, i, phase);
      return;
    }
  }
}

static void ds21_pass(struct ctx *c, const struct unit *u, int n, bool fwd,
                      long shard, enum group_kind gk)
{
  const struct plan *p = c->p;
  bool full = p->recompute == RECOMP_FULL;
  int phase = fwd ? PH_FWD : PH_BWD;
  struct ds21 z = {.n = 0, .last = -1, .shard = shard, .gk = gk,
                   .hook_phase = fwd ? PH_FWD : full ? PH_RECOMP : PH_BWD};
  z.it = xcalloc((size_t)n * (LAYER_WEIGHTS_MAX + 1) + 1, sizeof *z.it);
  for (int k = 0; k < n; k++) {
    const struct unit *un = &u[fwd ? k : n - 1 - k];
    if (un->kind == UNIT_LAYER)
      ds21_layer(c, z.it, &z.n, un->layer, k, !fwd && !full);
    else
      ds21_add(z.it, &z.n, -1, -1, k, &un->params, 1);
  }
  struct reducer red = {0, -1, 0, shard};
  z.red = &red;
  c->ds21 = shard > 1 ? &z : NULL;
  c->pre_linear = shard > 1 ? ds21_pre_linear : NULL;
  long w = -1;
  for (int k = 0; k < n; k++) {
    const struct unit *un = &u[fwd ? k : n - 1 - k];
    z.unit = k;
    if (shard > 1 && un->kind != UNIT_LAYER)
      for (int i = z.avail; i < z.n && z.it[i].unit <= k; i++)
        if (z.it[i].unit == k)
          ds21_fetch(c, &z, i, phase);
    long nx;
    enum group_kind xg = bld_expert_group(p, &nx);
    if (un->xparams > 0 && nx > 1)
      bld_wait_for(c, bld_coll(c, CO_ALLGATHER, xg, ST_AG, phase,
                               unit_layer(un), un->xparams * c->e));
    if (fwd) {
      run_unit(c, un, true);
      continue;
    }
    w = run_unit(c, un, false);
    if (shard > 1)
      reduce_grads(c, &red, un, w, gk, false);
    if (un->xparams > 0 && nx > 1)
      bld_grad_coll(c, CO_REDUCE_SCATTER, xg, un->layer,
                    un->xparams * dtype_bytes(p->grad_dtype), w);
  }
  if (!fwd && shard > 1)
    reduce_grads(c, &red, NULL, w, gk, true);
  c->ds21 = NULL;
  c->pre_linear = NULL;
  free(z.it);
}

/* Megatron-FSDP (plan.h, SI_MEGATRON_FSDP[_UB]), as Megatron-Core runs it
 * with data_parallel_sharding_strategy optim_grads_params (read at
 * NVIDIA/Megatron-LM d98e8a6, megatron/core/distributed/fsdp/:
 * mcore_fsdp_adapter.py, and src/megatron_fsdp/ megatron_fsdp.py
 * _register_fsdp_hooks, param_and_grad_buffer.py AllGatherPipeline and
 * GradReducePipeline):
 * - FSDP units are the Transformer layers (the adapter's fsdp_unit_modules:
 *   TransformerLayer).  A unit's parameters are buckets by dtype (FP8
 *   parameters apart from the BF16 norms) gathered together in one NCCL
 *   group (_get_parameter_groups, bucket_to_bucket_group).  The embedding,
 *   the final norm and the output layer are no unit's: they share one
 *   BF16 bucket (grouped by attributes, not by module), which the
 *   embedding's pre-forward hook gathers once per step and nothing releases
 *   (release_bucket: "Non-unit modules should remain persistently
 *   allocated").
 * - Each unit is gathered in its pre-forward hook and again in its
 *   pre-backward hook (_post_forward releases it after its forward, unless
 *   recomputing), with the next units in pass order prefetched
 *   (all_gather_params): while the prefetched elements stay below
 *   suggested_AG_prefetch_size, half of max(1e9, 2 x a unit's mean
 *   elements) (_init_fsdp_param_and_grad_buffer: "Cap to 1B elements" takes
 *   the max), or, with fsdp_double_buffer (forced by nccl_ub), only the next
 *   unit, two units being all the buffers hold.  The gather stream first
 *   waits for the compute stream (all_gather_stream.wait_stream), so a
 *   gather issued before unit i runs waits for the units before it.
 * - In the backward, after the wait, FP8 parameters (Float8Tensor, delayed
 *   scaling) get their transpose (all_gather_and_wait_parameters_ready ->
 *   fp8_create_transpose_cache -> TE post_all_gather_processing ->
 *   _create_transpose: read 1, write 1 per element) on the compute stream,
 *   every micro-batch; keep_fp8_transpose_cache keeps its storage, not the
 *   kernel.
 * - A unit's weight gradients (TE writes param.grad unless
 *   gradient_accumulation_fusion, which NeMo turns off for FSDP) are copied
 *   into the unsharded gradient bucket (_grad_acc: main_grad.copy_, read 2,
 *   write grad_dtype) and the bucket reduce-scattered every micro-batch
 *   (grad_reduce_every_bprop) at grad_dtype (main_grads_dtype None: the
 *   parameters' BF16); before each, the compute stream waits for the
 *   oldest reductions while those queued exceed suggested_RS_queue_capacity
 *   elements (wait_for_previous_grad_reduce; with double buffering the
 *   queue is trimmed to two units on the reduction stream instead), and at
 *   the end of each backward for all of them (_root_post_backward ->
 *   GradReducePipeline.reset).
 * - All-gathers and reduce-scatters go through one communicator (the
 *   DP x CP group; a separate all-gather group only with Megatron-LM's
 *   --create-all-gather-group, not modelled), whose NCCL kernels run in
 *   launch order whatever their streams (docs/runtime_schedule.md): one
 *   stream here, in the order the hooks issue them.
 * Not counted: the pre-scaling of BF16 gradients on the reduction stream
 * (gradient_reduce_preprocessing: mul_ unless average_in_collective) and the
 * accumulation of the reduced shard (local_grad += reduced_grad), both on
 * the reduction stream, where weft runs no kernels; NCCL user buffers'
 * smaller SM footprint (symmetric kernels) is not distinguished from
 * NCCL's default kernels. */
struct mfsdp {
  long *ag;          /* the gather of each layer unit in this pass, or -1 */
  long *rsq;         /* the reduce-scatters queued, oldest first */
  double *rsq_el;    /* and their elements */
  int nq;
  double prefetch_el; /* suggested_AG_prefetch_size */
  double queue_el;    /* suggested_RS_queue_capacity */
  bool dbuf;          /* fsdp_double_buffer */
  enum group_kind gk;
};

/* Bytes of one unit's gather: FP8 parameters at 1 byte, the rest (norms,
 * biases) at the model's width. */
static double mfsdp_unit_bytes(const struct ctx *c)
{
  const struct plan *p = c->p;
  double lin = 0;
  if (p->fp8_params && c->m->dtype == DTYPE_FP8)
    lin = layer_linear_params_rank(c->m, p);
  return lin + (c->lp - lin) * 2;
}

/* Gather layer unit k (index into the pass's layers) unless it is issued;
 * the gather waits for the computation issued so far. */
static void mfsdp_gather(struct ctx *c, struct mfsdp *z, const struct unit *u,
                         int k, int phase)
{
  if (z->ag[k] >= 0)
    return;
  z->ag[k] = bld_coll(c, CO_ALLGATHER, z->gk, ST_DP, phase, u[k].layer,
                      mfsdp_unit_bytes(c));
  if (c->last_compute >= 0)
    graph_dep(c->g, c->s, c->last_compute);
}

/* The pre-forward (pre-backward) hook of layer unit k of nl: gather it and
 * prefetch the next ones in pass order (dir +1 forward, -1 backward). */
static void mfsdp_unshard(struct ctx *c, struct mfsdp *z, const struct unit *u,
                          int nl, int k, int dir, int phase)
{
  mfsdp_gather(c, z, u, k, phase);
  double pref = 0;
  int units = 1;
  for (int j = k + dir; j >= 0 && j < nl; j += dir) {
    if (pref >= z->prefetch_el || (z->dbuf && ++units > 2))
      break;
    mfsdp_gather(c, z, u, j, phase);
    pref += c->lp;
  }
}

/* Reduce-scatter `el` elements of gradients ready after task `after`,
 * first trimming the queue as GradReducePipeline does. */
static void mfsdp_reduce(struct ctx *c, struct mfsdp *z, long layer,
                         double el, long after)
{
  /* reduce_gradients: wait_for_previous_grad_reduce(capacity), an
   * event.wait() on the compute stream for the oldest; the reductions run
   * in order, so the newest of those dropped stands for them all */
  double q = 0;
  for (int i = 0; i < z->nq; i++)
    q += z->rsq_el[i];
  int drop = 0;
  while (q > z->queue_el && drop < z->nq)
    q -= z->rsq_el[drop++];
  if (drop > 0)
    bld_wait_for(c, z->rsq[drop - 1]);
  /* then _enforce_double_buffer_limit: the newest one kept beside this
   * one, the others waited for on the reduction stream itself */
  if (z->dbuf && z->nq - drop > 1)
    drop = z->nq - 1;
  memmove(z->rsq, z->rsq + drop, (size_t)(z->nq - drop) * sizeof *z->rsq);
  memmove(z->rsq_el, z->rsq_el + drop,
          (size_t)(z->nq - drop) * sizeof *z->rsq_el);
  z->nq -= drop;
  long r = bld_grad_coll(c, CO_REDUCE_SCATTER, z->gk, layer,
                         el * c->grad_e, after);
  z->rsq[z->nq] = r;
  z->rsq_el[z->nq++] = el;
}

/* The unit's gradients copied into the unsharded bucket (none with fused
 * accumulation: TE writes into it); returns the last task before the
 * reduction. */
static long mfsdp_grad_copy(struct ctx *c, long layer, double params, long w)
{
  if (c->p->grad_accum == GA_FUSED)
    return w;
  return bld_kernel(c, KK_ELEMWISE, PH_BWD, layer, 0,
                    (model_act_bytes(c->m) + c->grad_e) * params);
}

static void mfsdp_pass(struct ctx *c, const struct unit *u, int n, bool fwd)
{
  const struct plan *p = c->p;
  long shard = layout_shard(&c->g->layout) * p->cp;
  int phase = fwd ? PH_FWD : PH_BWD;
  /* The layer units apart, in forward order, and the non-unit bucket. */
  struct unit *lu = xcalloc((size_t)n, sizeof *lu);
  int nl = 0;
  double nonunit = 0;
  for (int k = 0; k < n; k++) {
    if (u[k].kind == UNIT_LAYER)
      lu[nl++] = u[k];
    else
      nonunit += u[k].params;
  }
  double sugg = fmax(1e9, 2 * c->lp);
  struct mfsdp z = {.prefetch_el = floor(sugg / 2), .queue_el = sugg,
                    .dbuf = p->shard_impl == SI_MEGATRON_FSDP_UB,
                    .gk = layout_grad_group(&c->g->layout)};
  z.ag = xcalloc((size_t)nl + 1, sizeof *z.ag);
  z.rsq = xcalloc((size_t)nl + 2, sizeof *z.rsq);
  z.rsq_el = xcalloc((size_t)nl + 2, sizeof *z.rsq_el);
  for (int k = 0; k < nl; k++)
    z.ag[k] = -1;
  bool sharded = shard > 1;
  bool f8 = p->fp8_params && c->m->dtype == DTYPE_FP8;
  long w = -1;
  int li = fwd ? 0 : nl - 1;
  for (int k = 0; k < n; k++) {
    const struct unit *un = &u[fwd ? k : n - 1 - k];
    if (un->kind != UNIT_LAYER) {
      /* The non-unit bucket: gathered at the step's first forward, before
       * the embedding (or the output layer on a later stage) runs. */
      if (fwd && sharded && c->mb == 0 && k == 0 && nonunit > 0) {
        long g0 = bld_coll(c, CO_ALLGATHER, z.gk, ST_DP, phase, -1,
                           nonunit * c->e);
        if (c->last_compute >= 0)
          graph_dep(c->g, c->s, c->last_compute);
        bld_wait_for(c, g0);
      }
      if (fwd) {
        run_unit(c, un, true);
      } else {
        w = run_unit(c, un, false);
        /* Its bucket is reduced once all its gradients are there: after
         * the embedding's (or the last non-unit's) backward. */
        bool last = true;
        for (int j = k + 1; j < n; j++)
          last = last && u[n - 1 - j].kind == UNIT_LAYER;
        if (sharded && last)
          mfsdp_reduce(c, &z, -1, nonunit,
                       mfsdp_grad_copy(c, -1, nonunit, w));
      }
      continue;
    }
    if (sharded) {
      mfsdp_unshard(c, &z, lu, nl, li, fwd ? 1 : -1, phase);
      bld_wait_for(c, z.ag[li]);
    }
    if (!fwd && f8) /* the FP8 transposes after the gather */
      bld_kernel(c, KK_ELEMWISE, PH_BWD, un->layer, 0,
                 2 * layer_linear_params_rank(c->m, p));
    if (fwd) {
      run_unit(c, un, true);
    } else {
      w = run_unit(c, un, false);
      if (sharded)
        mfsdp_reduce(c, &z, un->layer, un->params,
                     mfsdp_grad_copy(c, un->layer, un->params, w));
    }
    li += fwd ? 1 : -1;
  }
  /* The end of the backward: every reduction waited for. */
  if (!fwd && sharded && z.nq > 0)
    bld_wait_for(c, z.rsq[z.nq - 1]);
  free(z.ag);
  free(z.rsq);
  free(z.rsq_el);
  free(lu);
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
  if (p->shard_impl == SI_DEEPSPEED_2021 && !hsdp) {
    ds21_pass(c, u, n, fwd, shard, gk);
    return;
  }
  if (shard_impl_mfsdp(p->shard_impl)) {
    mfsdp_pass(c, u, n, fwd);
    return;
  }
  /* Units gathered ahead of the computation: two (prefetch), none when
   * each gather waits for the computation before it (DeepSpeed 2021 with
   * HSDP, which it did not have).  The gather two units ahead waits for
   * the whole computation of the unit before it.  FSDP2's own bound is
   * looser: in the forward its all-gather streams wait for the copy-out
   * of the unit two back (wait_for_unshard, comm_ctx.all_gather_state;
   * pytorch/pytorch 002a76f), in the backward for nothing but the CPU's
   * issue (_backward_prefetch, one unit ahead).  NEEDSWORK: FSDP2's
   * gathers could start up to one unit's computation earlier. */
  int ahead = p->shard_impl == SI_DEEPSPEED_2021 ? 0 : 2;
  long ag[3] = {-1, -1, -1}; /* ring of the gathers in flight */
  struct reducer red = {0, -1, 0, shard};
  bool fsdp2 = p->shard_impl == SI_FSDP2 && shard > 1;
  long w = -1, ar = -1;
  for (int k = 0; k < n && k < ahead; k++) {
    int u_i = fwd ? k : n - 1 - k;
    ag[k % 3] = shard > 1 ? gather(c, &u[u_i], phase, gk, -1) : -1;
  }
  for (int k = 0; k < n; k++) {
    int u_i = fwd ? k : n - 1 - k;
    const struct unit *un = &u[u_i];
    if (!ahead)
      ag[k % 3] = shard > 1 ? gather(c, un, phase, gk, -1) : -1;
    bld_wait_for(c, ag[k % 3]);
    if (p->shard_impl == SI_FSDP2 && shard > 1) /* copy-out of the gather */
      bld_kernel(c, KK_ELEMWISE, phase, unit_layer(un), 0,
                 2 * un->params * c->e);
    if (fwd) {
      run_unit(c, un, true);
    } else {
      w = run_unit(c, un, false);
      if (shard > 1)
        reduce_grads(c, &red, un, w, gk, false);
      long nx;
      enum group_kind xg = bld_expert_group(p, &nx);
      if (un->xparams > 0 && nx > 1) {
        long x = bld_grad_coll(c, CO_REDUCE_SCATTER, xg, un->layer,
                               un->xparams * grad_e, w);
        /* FSDP2's expert group shares the root's comm_ctx, so the next
         * post_backward waits for this one too; on the one in-order
         * reduction stream the later of the two stands for both. */
        if (fsdp2)
          red.last = x;
      }
      if (hsdp) {
        ar = bld_grad_coll(c, CO_ALLREDUCE, GK_REPL, unit_layer(un),
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
  /* FSDP2's root post-backward callback, at the end of each backward
   * (is_last_backward, True unless the caller clears it): every group's
   * finalize_backward makes the compute stream wait for its post-reduce
   * event (recorded after its reduce-scatter, or after its HSDP
   * all-reduce) and the root for the last reduce-scatter
   * (_fsdp_state.py, _root_post_backward_final_callback). */
  if (!fwd && fsdp2) {
    bld_wait_for(c, red.last);
    bld_wait_for(c, ar);
  }
}

/* FSDP2 under pipeline parallelism, as torchtitan runs it and PyTorch's
 * pipelining drives it (plan.c admits ZeRO-3 with PP for shard_impl fsdp2
 * only):
 * - torchtitan shards the stage's modules with reshard_after_forward False
 *   when PP is on (pytorch/torchtitan b5bcd76, distributed/fsdp.py
 *   get_fsdp_reshard_after_forward_policy: "default" is `not pp_enabled`,
 *   "to avoid per-microbatch all-gathers"; the final norm and output layer
 *   are never resharded after forward, PP or not).  A unit's all-gather
 *   thus runs in the chunk's first forward (micro-batch 0, prefetched as
 *   without PP: zero3_pass) and FSDP's later pre-forward and pre-backward
 *   unshards find it unsharded and issue nothing
 *   (_fsdp_param_group.py, unshard: "if self.is_unsharded: return").
 * - PyTorch's pipelining runs every micro-batch's backward with
 *   set_is_last_backward(False), set_reshard_after_backward(False) and
 *   set_requires_gradient_sync(False) (torch/distributed/pipelining/
 *   stage.py at 0138610, backward_maybe_with_nosync), so nothing is
 *   reduced or resharded in a backward; the unsharded gradient
 *   accumulates: FSDP2's
 *   post_backward upcasts the first micro-batch's BF16 gradient to the
 *   reduce dtype (_fsdp_param.py, to_accumulated_grad_if_needed: a cast,
 *   2 + 4 bytes per parameter with an FP32 reduce dtype) and adds each
 *   later one into it (accumulate_unsharded_grad_if_needed: += , 4 + 2 +
 *   4); with the reduce dtype equal to the parameters' there is no
 *   upcast, and autograd's AccumulateGrad adds each later gradient in
 *   place (3 transfers of 2 bytes).  One pass per unit after its backward
 *   on the compute stream, where the hook runs.
 * - After the chunk's last backward the schedule's REDUCE_GRAD action
 *   (schedules.py at pytorch/pytorch 00722e6, _add_reduce_grad: "just
 *   after the last backward-like" action of each stage; stage.py
 *   perform_reduce_grad, _post_backward at 0138610; older releases did
 *   the same in backward_maybe_with_nosync when last_backward) sets the
 *   three flags back and calls post_backward on every FSDP state in
 *   module order (embedding, layers, output layer): each reshards its
 *   unit, makes the compute stream wait for the previous reduce-scatter
 *   ("wait_event(self.comm_ctx.reduce_scatter_state.event)", which frees
 *   the one reduce-scatter input FSDP keeps), copies its gradients into
 *   the reduce-scatter input on the compute stream (foreach_reduce,
 *   _chunk_cat) and reduce-scatters it at the reduce dtype on the
 *   reduce-scatter stream (HSDP: then all-reduces its shard over the
 *   replicas).  The root's final callback makes the compute stream wait
 *   for the last of them, so the chunk's reductions are exposed back to
 *   back: once per step instead of once per micro-batch.
 * The prefetch and the ring of gathers are zero3_pass's; shard groups,
 * expert groups and HSDP as there. */
static void fsdp_pp_pass(struct ctx *c, const struct unit *u, int n,
                         const struct pass *ps)
{
  const struct plan *p = c->p;
  if (ps->fwd && c->mb == 0) { /* the chunk's gathers */
    zero3_pass(c, u, n, true);
    return;
  }
  for (int k = 0; k < n && ps->fwd; k++)
    run_unit(c, &u[k], true);
  if (ps->fwd)
    return;
  bool upcast = c->grad_e != c->e;
  double acc_b = c->mb == 0 ? (upcast ? c->e + c->grad_e : 0)
                            : (upcast ? 2 * c->grad_e + c->e : 3 * c->e);
  for (int k = n - 1; k >= 0; k--) {
    const struct unit *un = &u[k];
    run_unit(c, un, false);
    double el = un->params + un->xparams;
    if (acc_b > 0 && el > 0)
      bld_kernel(c, KK_ELEMWISE, PH_BWD, unit_layer(un), 0, acc_b * el);
  }
  if (!ps->last)
    return;
  bool hsdp = p->hsdp && p->hsdp < p->dp;
  long shard = layout_shard(&c->g->layout) * p->cp, nx;
  enum group_kind gk = hsdp ? GK_SHARD : layout_grad_group(&c->g->layout);
  enum group_kind xg = bld_expert_group(p, &nx);
  long rs = -1, ar = -1;
  for (int k = 0; k < n; k++) {
    const struct unit *un = &u[k];
    long layer = unit_layer(un);
    for (int x = 0; x < 2; x++) {
      double el = x ? un->xparams : un->params;
      if (el <= 0 || (x ? nx : shard) < 2)
        continue;
      bld_wait_for(c, rs);
      long in = bld_kernel(c, KK_ELEMWISE, PH_BWD, layer, 0,
                           2 * el * c->grad_e);
      rs = bld_grad_coll(c, CO_REDUCE_SCATTER, x ? xg : gk, layer,
                         el * c->grad_e, in);
      if (hsdp && !x)
        ar = bld_grad_coll(c, CO_ALLREDUCE, GK_REPL, layer,
                           el * c->grad_e / (double)shard, rs);
    }
  }
  bld_wait_for(c, rs);
  bld_wait_for(c, ar);
}

/* ZeRO-3 / FSDP: either pass of a chunk over its units. */
void bld_zero3_body(struct ctx *c, const struct pass *ps)
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
  if (c->p->pp > 1)
    fsdp_pp_pass(c, u, n, ps);
  else
    zero3_pass(c, u, n, ps->fwd);
  free(u);
}
