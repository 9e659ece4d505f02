/*
 * estimate.c - the fast closed-form estimate of a plan (estimate.h).
 */
#include "workloads/estimate.h"

#include <math.h>

#include "workloads/accounting.h"
#include "workloads/builder.h"
#include "workloads/closedform.h"
#include "workloads/costmodel.h"

/* One layer and one micro-batch of the probe, and what lies outside the
 * layers (estimate.h names them). */
struct probe_sums {
  double F, B, R, A, X, Z, K;    /* per layer and micro-batch */
  double Zdp;                    /* of Z, what runs on the data-parallel
                                    stream (reduce-scatters) */
  double P;                      /* Tensor3D's overlapped all-reduces */
  double embed, head, head_x, Zh; /* per micro-batch, first/last stage */
  struct task optim;             /* the optimizer step (one kernel) */
};

static void probe_sums(const struct graph *g, const struct graph_layout *l,
                       const struct cluster *c, enum dtype dt, int attn,
                       long zero, struct probe_sums *s)
{
  const struct program *pr = &g->prog[0];
  long coord[PD_COUNT] = {0};
  long rank = layout_rank(l, coord);
  /* Outside the layers, the forward's kernels before the first layer and
   * the backward's after the last one are the embedding's (first stage),
   * the others the output layer's and the loss's (last stage). */
  bool seen[PH_COUNT] = {false};
  for (long i = 0; i < pr->n; i++) {
    const struct task *t = &pr->tasks[i];
    bool layer = t->layer >= 0;
    if (layer)
      seen[t->phase] = true;
    if (t->kind == TK_KERNEL) {
      double x = cost_kernel(&c->gpu, dt, attn, t, NULL);
      if (t->phase == PH_OPT)
        s->optim = *t;
      else if (!layer)
        *(seen[t->phase] == (t->phase == PH_FWD) ? &s->head : &s->embed) += x;
      else {
        *(t->phase == PH_FWD ? &s->F : t->phase == PH_BWD ? &s->B : &s->R) += x;
        if (t->op == KK_ATTN || t->op == KK_ATTN_BWD)
          s->A += x;
      }
      continue;
    }
    if (t->kind != TK_COLL)
      continue;
    double x = closed_form_coll_s(c, l, rank, (enum group_kind)t->group,
                                  (enum coll_op)t->op, t->bytes);
    if (t->stream == ST_COMPUTE)
      *(layer ? &s->X : &s->head_x) += x;
    else if (t->stream == ST_CP)
      s->K += x;
    else if (t->stream == ST_T3)
      *(layer ? &s->P : &s->head_x) += x;
    else if (t->group == GK_T3Z || (zero == 3 && t->phase != PH_OPT)) {
      *(layer ? &s->Z : &s->Zh) += x;
      if (layer && t->stream == ST_DP)
        s->Zdp += x;
    }
    /* Other gradient reductions are counted per stage below. */
  }
}

/* The rank of stage `s`'s first GPU. */
static long stage_rank(const struct graph_layout *l, long s)
{
  long coord[PD_COUNT] = {0};
  coord[PD_PP] = s;
  return layout_rank(l, coord);
}

/* Data-parallel gradient reduction of stage `s` after its last backward:
 * its time and what of it is exposed past `hide` seconds of backward. */
static double grad_reduction(const struct model *m, const struct plan *p,
                             const struct cluster *c,
                             const struct graph_layout *l, long s,
                             double hide)
{
  if (p->zero == 3 && p->pp == 1)
    return 0; /* inside the layers' side streams */
  long rank = stage_rank(l, s);
  double ge = dtype_bytes(p->grad_dtype), e = model_act_bytes(m);
  double xp = p->ep > 1 ? stage_expert_params_rank(m, p, s) : 0;
  double dense = stage_params_rank(m, p, s) - xp;
  if (p->zero == 3) {
    /* FSDP2 under PP (builder_zero.c, fsdp_pp_pass): the stage's units
     * reduce-scattered one after the other after the last backward, the
     * compute stream waiting for each (HSDP: the last unit's all-reduce
     * across replicas after them; the copy-ins are the caller's). */
    bool hsdp = p->hsdp && p->hsdp < p->dp;
    enum group_kind gs = hsdp ? GK_SHARD : layout_grad_group(l);
    enum group_kind xs = p->cp > 1 ? GK_EDPCP : GK_EDP;
    double d = closed_form_coll_s(c, l, rank, gs, CO_REDUCE_SCATTER,
                                  dense * ge);
    if (xp > 0)
      d += closed_form_coll_s(c, l, rank, xs, CO_REDUCE_SCATTER, xp * ge);
    if (hsdp) {
      double lp = layer_params_rank(m, p->tp, p->ep);
      d += closed_form_coll_s(c, l, rank, GK_REPL, CO_ALLREDUCE,
                              lp * ge / (double)layout_shard(l));
    }
    (void)hide;
    return d;
  }
  enum coll_op op = p->zero ? CO_REDUCE_SCATTER : CO_ALLREDUCE;
  enum group_kind gg = layout_grad_group(l);
  enum group_kind xg = p->cp > 1 ? GK_EDPCP : GK_EDP;
  double d = closed_form_coll_s(c, l, rank, gg, op, dense * ge);
  if (xp > 0)
    d += closed_form_coll_s(c, l, rank, xg, op, xp * ge);
  double exposed = d;
  /* Megatron's distributed optimizer keeps one bucket beyond the first
   * stage (builder_compress.c, bld_bucket_limit). */
  double bucket = p->shard_impl == SI_MEGATRON && s > 0 ? INFINITY
                                                        : p->bucket_bytes;
  if (p->overlap_grad) {
    /* Hidden behind the backward as far as it lasts; the last bucket's
     * reduction starts when the backward ends. */
    double last = closed_form_coll_s(c, l, rank, gg, op,
                                     fmin(bucket, dense * ge));
    exposed = fmax(fmax(0, d - hide), last);
  }
  if (p->zero) { /* the updated parameters gathered after the step, or
                    at the next forward, where the first bucket's shows */
    double g = p->overlap_param_gather ? fmin(bucket / ge, dense) : dense;
    exposed += closed_form_coll_s(c, l, rank, gg, CO_ALLGATHER, g * e) +
               (xp > 0 ? closed_form_coll_s(c, l, rank, xg, CO_ALLGATHER,
                                            xp * e)
                       : 0);
  }
  return exposed;
}

/* Layers not all alike (model.h, model_layer_kind): make the probe's one
 * layer of the kind most of the model's layers are, and drop the MTP
 * modules (NEEDSWORK: a probe per kind, weighted by its layers). */
static void probe_common_kind(const struct model *m, struct model *pm)
{
  long n[LAYER_KINDS], best = 0;
  layer_kind_counts(m, 0, m->layers, n);
  for (int k = 1; k < LAYER_KINDS; k++)
    if (n[k] > n[best])
      best = k;
  pm->dense_layers = 0;
  pm->moe_every = 1;
  if (!(best & LAYER_KIND_MOE)) {
    pm->experts = pm->topk = 1;
    pm->moe_ffn = pm->shared_ffn = pm->expert_groups = pm->topk_groups = 0;
  }
  if (!(best & LAYER_KIND_LOCAL))
    pm->window = pm->attn_chunk = pm->full_every = 0;
  else
    pm->full_every = 0;
  pm->mtp_layers = 0;
}

/* Over 100 lines: the closed form's terms one after the other (layer
 * time, pipeline transfers, accumulation passes, per-stage sums, the
 * bubble, the data-parallel tail), each using the ones before; split, the
 * pieces would pass a dozen partial sums.  NEEDSWORK: a struct of them. */
int estimate_plan(const struct model *m, const struct plan *p,
                  const struct cluster *c, enum dtype dt, int attn,
                  struct estimate *out, struct weft_err *err)
{
  struct model pm = *m;
  struct plan pp = *p;
  pm.layers = 1;
  if (!model_layers_alike(m))
    probe_common_kind(m, &pm);
  pp.pp = 1;
  pp.vchunks = 1;
  pp.schedule = SCHED_1F1B;
  pp.microbatches = 1;
  pp.global_batch = pp.micro_batch * pp.dp;
  pp.first_layers = pp.last_layers = 0;
  pp.split_units = false;
  struct graph *g = build_graph(&pm, &pp, err);
  if (!g)
    return err->code ? err->code : WEFT_EINVAL;
  struct graph_layout l;
  plan_layout(p, &l);
  struct probe_sums s = {0};
  probe_sums(g, &l, c, dt, attn, p->zero, &s);
  graph_free(g);
  /* FSDP2 under PP gathers once per step, beside the first micro-batch's
   * forward, and reduces after the last backward (grad_reduction): the
   * probe's per-micro-batch gathers and reduce-scatters are not the
   * layers'.  Nor are its copy-outs (forward and backward) and copy-ins,
   * memory-bound passes of 2 x the unit's bytes: under PP the copy-out
   * runs once per step, in the first forward, and the copy-in before the
   * step's reduce-scatter (the tail below).  xo_*: per unit and
   * micro-batch, what to take off the probe's compute (negative). */
  bool fsdp_pp = p->zero == 3 && p->pp > 1;
  double xo_emb = 0, xo_layer = 0, xo_head = 0, xo_bwd = 0;
  if (fsdp_pp)
    s.Z = s.Zdp = s.Zh = 0;
  if (fsdp_pp && layout_shard(&l) * p->cp > 1) {
    double pe, pl, ph, e = model_act_bytes(m), ge = dtype_bytes(p->grad_dtype);
    build_unit_params(m, p, &pe, &pl, &ph);
    if (p->ep > 1) /* the experts: no copies (builder.c, ctx_init) */
      pl -= layer_expert_params_rank(m, p->tp, p->ep);
    double u[3] = {pe, pl, ph}, x[3], bw[3];
    for (int k = 0; k < 3; k++) {
      struct task t = {.kind = TK_KERNEL, .op = KK_ELEMWISE,
                       .stream = ST_COMPUTE, .phase = PH_FWD};
      t.bytes = 2 * u[k] * e;
      double cout = u[k] > 0 ? cost_kernel(&c->gpu, dt, attn, &t, NULL) : 0;
      t.phase = PH_BWD;
      t.bytes = 2 * u[k] * ge;
      double in = u[k] > 0 ? cost_kernel(&c->gpu, dt, attn, &t, NULL) : 0;
      x[k] = cout / (double)p->microbatches - 2 * cout - in;
      bw[k] = cout + in;
    }
    xo_emb = x[0];
    xo_layer = x[1];
    xo_head = x[2];
    xo_bwd = bw[1];
  }

  double work = s.F + s.B + s.R;
  /* Tensor3D's all-reduces of K pieces: the last piece's are exposed, the
   * others hide behind the next pieces' computation as far as it lasts. */
  double k = (double)p->pieces;
  double pexp = s.P / k + (k - 1) / k * fmax(0, s.P - work);
  double layer_t = work + s.X + pexp + fmax(0, s.Z - work) +
                   fmax(0, s.K - s.A);
  double v = (double)p->vchunks, mb = (double)p->microbatches;
  double p2p = 0;
  if (p->pp > 1)
    p2p = closed_form_send_s(c, stage_rank(&l, 0), stage_rank(&l, 1),
                             build_p2p_bytes(m, p));
  double probe_params = stage_params_rank(&pm, &pp, 0);
  /* Gradient accumulation after the first micro-batch of each chunk
   * (autograd; the probe's one micro-batch has none): a pass per layer,
   * and over the embedding and the output layer on their stages, spread
   * over the micro-batches.  (buffer: in the probe's every backward.) */
  bool every;
  double acc_b = build_accum_bytes(m, p, &every), a_emb = 0, a_layer = 0,
         a_head = 0, a_last = 0; /* a_last: the last micro-batch's, per layer */
  double share = (double)(p->microbatches - 1) / (double)p->microbatches;
  if (fsdp_pp) {
    /* FSDP2's unsharded accumulation (fsdp_pp_pass): an upcast after the
     * first micro-batch when the reduce dtype differs, an add after each
     * later one; per micro-batch on average. */
    double e = model_act_bytes(m), ge = dtype_bytes(p->grad_dtype);
    double first = ge != e ? e + ge : 0, later = ge != e ? 2 * ge + e : 3 * e;
    acc_b = (first + (double)(p->microbatches - 1) * later) /
            (double)p->microbatches;
    share = 1;
  }
  if (acc_b > 0 && (fsdp_pp || (!every && p->zero < 3)) && p->t3[0] == 0 &&
      (fsdp_pp || p->microbatches > 1)) {
    double pe, pl, ph;
    build_unit_params(m, p, &pe, &pl, &ph);
    struct task acc = {.kind = TK_KERNEL, .op = KK_ELEMWISE,
                     .stream = ST_COMPUTE, .phase = PH_BWD};
    acc.bytes = acc_b * pe;
    a_emb = share * cost_kernel(&c->gpu, dt, attn, &acc, NULL);
    acc.bytes = acc_b * pl;
    a_last = cost_kernel(&c->gpu, dt, attn, &acc, NULL);
    a_layer = share * a_last;
    acc.bytes = acc_b * ph;
    a_head = ph > 0 ? share * cost_kernel(&c->gpu, dt, attn, &acc, NULL) : 0;
  }
  double t_max = 0, c_max = 0, tail = 0, tail_d = 0, tail_o = 0;
  for (long st = 0; st < p->pp; st++) {
    double L = 0;
    for (long ch = 0; ch < p->vchunks; ch++) {
      long first, count;
      plan_chunk_layers(p, m, st, ch, &first, &count);
      L += (double)count;
    }
    double comp = L * (work + a_layer + xo_layer),
           t = L * (layer_t + a_layer + xo_layer);
    if (st == 0) {
      comp += s.embed + a_emb + xo_emb;
      t += s.embed + a_emb + xo_emb + fmax(0, s.Zh - s.embed - s.head);
    }
    if (st == p->pp - 1) {
      comp += s.head + a_head + xo_head;
      t += s.head + a_head + xo_head + s.head_x;
    }
    if (p->pp > 1 && p->blocking_p2p)
      t += 2 * v * p2p;
    if (t > t_max) {
      t_max = t;
      c_max = comp;
    }
    /* The step's bytes in proportion of the parameters held. */
    struct task opt = s.optim;
    if (probe_params > 0)
      opt.bytes *= stage_params_rank(m, p, st) / probe_params;
    double o = opt.bytes > 0 ? cost_kernel(&c->gpu, dt, attn, &opt, NULL) : 0;
    /* The reduction shares the data-parallel stream with the layers'
     * own reduce-scatters (ZeRO-3, Tensor3D's Z), which take their part
     * of the backward first. */
    double d = grad_reduction(m, p, c, &l, st,
                              fmax(0, L / v * (s.B + s.R - s.Zdp + a_last -
                                               xo_bwd)));
    if (fsdp_pp) { /* the copy-ins before the reduce-scatters */
      struct task in = {.kind = TK_KERNEL, .op = KK_ELEMWISE,
                        .stream = ST_COMPUTE, .phase = PH_BWD};
      in.bytes = 2 * dtype_bytes(p->grad_dtype) *
                 stage_params_rank(m, p, st);
      d += cost_kernel(&c->gpu, dt, attn, &in, NULL);
    }
    if (d + o > tail) {
      tail = d + o;
      tail_d = d;
      tail_o = o;
    }
  }
  double bubble = (double)(p->pp - 1) / v * t_max;
  if (p->pp > 1 && !p->blocking_p2p) /* through the pipeline and back */
    bubble += 2 * (double)(p->pp - 1) * p2p;
  out->iteration_s = mb * t_max + bubble + tail;
  out->compute_s = mb * c_max + tail_o;
  out->exposed_s = mb * (t_max - c_max) + tail_d;
  out->bubble_s = bubble;
  return 0;
}
