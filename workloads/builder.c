/*
 * builder.c - the core of the builder (see builder.h): the stage program
 * of one pipeline stage, the primitives that add its tasks, the optimizer
 * step, and the size estimate.  The features live in files
 * of their own, sharing the context through builder_int.h: the Megatron
 * layer (builder_layer.c), Tensor3D (builder_t3.c), the pipeline passes
 * and their transfers (builder_pipe.c), data-parallel gradient buckets and
 * their compression (builder_compress.c), and ZeRO/FSDP/DeepSpeed
 * (builder_zero.c).
 *
 * Invariant: every dependency added names a task added earlier to the same
 * program (graph.h), so the graph is acyclic by construction.
 */
#include "workloads/builder.h"
#include "workloads/builder_int.h"

#include <assert.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sim/base/bounds.h"
#include "sim/base/xalloc.h"
#include "workloads/accounting.h"
#include "workloads/schedule.h"

long bld_add(struct ctx *c, struct task *t)
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
void bld_wait_for(struct ctx *c, long task)
{
  if (task < 0)
    return;
  assert(c->npending < PENDING_MAX);
  c->pending[c->npending++] = task;
}

long bld_kernel(struct ctx *c, enum kernel_kind kk, int phase, long layer,
                double flops, double bytes)
{
  struct task t = {.kind = TK_KERNEL, .op = (uint8_t)kk, .stream = ST_COMPUTE,
                   .phase = (uint8_t)phase, .layer = (int32_t)layer,
                   .flops = flops, .bytes = bytes};
  return bld_add(c, &t);
}

/* C[M x N] = A[M x K] @ B[K x N]. */
long bld_gemm(struct ctx *c, int phase, long layer, double M, double N,
              double K)
{
  struct task t = {.kind = TK_KERNEL, .op = KK_GEMM, .stream = ST_COMPUTE,
                   .phase = (uint8_t)phase, .layer = (int32_t)layer,
                   .m = (uint32_t)M, .n = (uint32_t)(N + 0.999999),
                   .k = (uint32_t)(K + 0.999999), .batch = 1,
                   .flops = 2 * M * N * K,
                   .bytes = c->e * (M * K + K * N + M * N)};
  return bld_add(c, &t);
}

long bld_coll(struct ctx *c, enum coll_op op, enum group_kind gk,
              enum stream st, int phase, long layer, double bytes)
{
  struct task t = {.kind = TK_COLL, .op = (uint8_t)op, .stream = (uint8_t)st,
                   .phase = (uint8_t)phase, .group = (uint8_t)gk,
                   .layer = (int32_t)layer, .bytes = bytes};
  return bld_add(c, &t);
}

/* A gradient reduction on the data-parallel stream, issued after task
 * `after`, that the optimizer step waits for. */
long bld_grad_coll(struct ctx *c, enum coll_op op, enum group_kind gk,
                   long layer, double bytes, long after)
{
  long i = bld_coll(c, op, gk, ST_DP, PH_BWD, layer, bytes);
  if (after >= 0)
    graph_dep(c->g, c->s, after);
  c->dp_tasks[c->n_dp++] = i;
  return i;
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
  c->d = (double)model_qk_head_dim(m);
  c->dv = (double)model_v_head_dim(m);
  /* MLA: K and V per head, every head (kv_up_proj's output). */
  c->vw = model_mla(m) ? c->a * c->dv : c->kv;
  if (model_mla(m))
    c->kv = c->a * c->d;
  c->topk = (double)m->topk;
  c->T_local = p->sp ? c->T / c->t : c->T;
  c->vlast = p->pp * p->vchunks - 1;
  c->ops = p->t3[0] > 0 ? &bld_t3_ops : &bld_megatron_ops;
  layer_describe(m, &c->ld);
  bld_moe_order(c);
  c->alike = model_layers_alike(m);
  c->kind = model_layer_kind(m, 0);
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
  if (p->ep > 1) /* MoE parallel folding: the experts split over ETP */
    c->lx = layer_expert_params_rank(m, plan_etp(p), p->ep);
}

void build_unit_params(const struct model *m, const struct plan *p,
                       double *emb, double *layer, double *head)
{
  double h = (double)m->hidden, t = (double)p->tp;
  *layer = layer_params_rank(m, p->tp, p->ep);
  *emb = (double)model_vocab_rows(m) * h / t + (m->gpt_style ? (double)m->seq * h : 0);
  double out_layer = (!model_tied(m) || p->pp > 1) ? (double)model_vocab_rows(m) * h / t
                                                    : 0;
  *head = out_layer + final_norm_params(m);
  /* The MTP modules run with the output layer (builder_layer.c, mtp_fwd):
   * their gradients join its unit. */
  if (m->mtp_layers > 0)
    *head += mtp_params_rank(m, p->tp, p->ep, false);
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

/* FP8 parameters (plan fp8_params, delayed scaling): the linear layers'
 * weights are Transformer Engine Float8Tensors, and the distributed
 * optimizer's copy back writes their shards in FP8, not 16 bits:
 * Megatron-LM's DistributedOptimizer._copy_main_params_to_model_params
 * (megatron/core/optimizer/distrib_optimizer.py at d98e8a6, with
 * fp8_param_gather) calls fp8_utils.quantize_param_shard, that is TE's
 * cast_master_weights_to_fp8 (tensor/utils.py at d0067d0,
 * _cast_master_weights_to_fp8_delayed_scaling: quantizer.update_quantized
 * of each FP32 master shard into the FP8 bytes of the model weight), read
 * 4, write 1 per element, one byte fewer than the 4 + 2 of optim_bytes.
 * The other parameters (embedding, output layer, norms, biases, router)
 * stay 16-bit and are copied as before.  The elements of the stage's FP8
 * weights on a rank: in *out_dense those split over TP, in *out_routed
 * the routed experts' (over ETP x EP), as layer.h marks them (cast).
 * NEEDSWORK: the function then all-reduces the weights' amaxes (MAX, 4
 * bytes a tensor) over the optimizer's data-parallel group and rewrites
 * the scales with a few multi-tensor kernels; weft leaves those tiny
 * tasks out.  MXFP8 parameters (_cast_master_weights_to_fp8_mxfp8_scaling)
 * write both orientations and their scales: counted as before. */
static void stage_fp8_weights(const struct model *m, const struct plan *p,
                              long stage, double *out_dense,
                              double *out_routed)
{
  double dense = 0, routed = 0;
  struct layer_desc d;
  int kind = -1;
  double kd = 0, kr = 0;
  for (long ch = 0; ch < p->vchunks; ch++) {
    long first, count;
    plan_chunk_layers(p, m, stage, ch, &first, &count);
    for (long l = first; l < first + count; l++) {
      int k = model_layer_kind(m, l);
      if (k != kind) {
        layer_describe_kind(m, k, &d);
        kind = k;
        kd = kr = 0;
        for (int i = 0; i < d.nw; i++) {
          const struct lweight *w = &d.w[i];
          if (!w->cast || !lweight_matrix(w))
            continue;
          if (w->routed)
            kr += lweight_elems_rank(&d, w, (double)plan_etp(p),
                                     (double)p->ep);
          else
            kd += lweight_elems_rank(&d, w, (double)p->tp, (double)p->ep);
        }
      }
      dense += kd;
      routed += kr;
    }
  }
  *out_dense = dense;
  *out_routed = routed;
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
  if (model_tied(m) && p->pp > 1 && (stage == 0 || stage == p->pp - 1)) {
    long i = bld_coll(c, CO_ALLREDUCE, GK_EMB, ST_DP, PH_OPT, -1,
                      (double)model_vocab_rows(m) * c->h / c->t * c->grad_e);
    graph_dep(g, stage, c->last_compute);
    c->dp_tasks[c->n_dp++] = i;
  }
  double params = stage_params_rank(m, p, stage);
  long shard = layout_shard(&g->layout) * p->cp, nx;
  enum group_kind xg = bld_expert_group(p, &nx);
  double xparams = p->ep > 1 ? stage_expert_params_rank(m, p, stage) : 0;
  double dense = params - xparams;
  double updated = p->zero ? dense / (double)shard + xparams / (double)nx
                           : params;
  double bytes = optim_bytes(m, p) * updated;
  if (m->dtype == DTYPE_FP8 && p->fp8_params &&
      p->fp8_recipe == FP8_DELAYED) {
    double f8d, f8x; /* (stage_fp8_weights) */
    stage_fp8_weights(m, p, stage, &f8d, &f8x);
    bytes -= p->zero ? f8d / (double)shard + f8x / (double)nx : f8d + f8x;
  }
  long opt = bld_kernel(c, KK_OPTIM, PH_OPT, -1, 0, bytes);
  for (long i = 0; i < c->n_dp; i++)
    graph_dep(g, stage, c->dp_tasks[i]);
  /* ZeRO 1 and 2: gather the updated parameter shards for the next
   * iteration. */
  if ((p->zero == 1 || p->zero == 2) && p->dp * p->cp > 1) {
    if (p->overlap_param_gather) {
      /* gathered at the next forward pass (param_gathers, builder_pipe.c) */
    } else if (p->shard_impl == SI_MEGATRON) {
      for (long ch = 0; ch < p->vchunks; ch++)
        bld_gather_buckets(c, ch, PH_OPT, opt, NULL);
    } else {
      bld_coll(c, CO_ALLGATHER, layout_grad_group(&g->layout), ST_AG, PH_OPT,
               -1,                dense * c->e);
      graph_dep(g, stage, opt);
    }
    if (xparams > 0 && nx > 1) {
      bld_coll(c, CO_ALLGATHER, xg, ST_AG, PH_OPT, -1, xparams * c->e);
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
  struct sched_op *ops = schedule_for_plan(p, stage, &n_ops);
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
  pass_body *fwd_body = p->zero == 3 ? bld_zero3_body : bld_forward_body;
  pass_body *bwd_body = p->zero == 3 ? bld_zero3_body : bld_backward_body;
  for (long i = 0; i < n_ops && !rc; i++) {
    struct pass ps[2];
    int k = ops[i].merged && i + 1 < n_ops ? 2 : 1;
    for (int j = 0; j < k; j++) {
      const struct sched_op *op = &ops[i + j];
      ps[j] = (struct pass){.fwd = op->fwd, .vs = op->chunk * p->pp + stage,
                            .mb = op->mb, .chunk = op->chunk};
      plan_chunk_layers(p, m, stage, op->chunk, &ps[j].first, &ps[j].count);
      ps[j].last = i + j == last_bwd[op->chunk];
      ps[j].overlap = p->overlap_grad && ps[j].last;
      ps[j].accum = c.ops->accumulate &&
                    (c.accum_every || i + j != first_bwd[op->chunk]);
    }
    if (k == 2) { /* combined 1F1B: one step of two passes */
      rc = bld_combined_pass(&c, &ps[0], &ps[1], err);
      i++;
    } else {
      c.chunk = ps[0].chunk;
      c.mb = ps[0].mb;
      bld_chunk_pass(&c, &ps[0], ps[0].fwd ? fwd_body : bwd_body);
    }
    if (!rc && g->prog[stage].n > WEFT_MAX_TASKS)
      rc = weft_errf(err, WEFT_ELIMIT, "stage %ld has more than %ld tasks; "
                     "use fewer micro-batches or layers per stage", stage,
                     (long)WEFT_MAX_TASKS);
  }
  c.chunk = -1;
  c.mb = -1;
  if (!p->overlap_grad && p->dp * p->cp > 1 && p->zero < 3)
    bld_late_buckets(&c);
  bld_compress_drain(&c);
  optimizer_step(&c);
  free(c.cq);
  free(c.dp_tasks);
  free(c.gathered);
  free(first_bwd);
  free(last_bwd);
  free(ops);
  return rc;
}

/* What the builder does not build yet for the model settings of 2024-26:
 * 0, or a refusal naming the settings. */
static int check_supported(const struct model *m, const struct plan *p,
                           struct weft_err *err)
{
  bool local = m->window > 0 || m->attn_chunk > 0;
  if (!model_layers_alike(m) && p->zero >= 3)
    return weft_errf(err, WEFT_EINVAL, "model '%s': layers that are not "
                     "alike (dense_layers, moe_every, full_every, "
                     "mtp_layers) with ZeRO-3/FSDP are not built yet: its "
                     "units would all be the first layer's", m->name);
  if (p->t3[0] > 0 && (!model_layers_alike(m) || model_mla(m) ||
                       m->mtp_layers > 0 || m->shared_ffn > 0 ||
                       m->vocab_pad > 1))
    return weft_errf(err, WEFT_EINVAL, "model '%s': Tensor3D builds layers "
                     "that are all alike, without MLA, MTP, shared experts "
                     "or vocab_pad", m->name);
  if (local && p->cp > 1)
    return weft_errf(err, WEFT_EINVAL, "model '%s': ring attention (cp "
                     "%ld) over a sliding window or chunks is not built yet",
                     m->name, p->cp);
  return 0;
}

struct graph *build_graph(const struct model *m, const struct plan *p,
                          struct weft_err *err)
{
  if (check_supported(m, p, err))
    return NULL;
  struct graph *g = graph_new(p->pp);
  plan_layout(p, &g->layout);
  g->tokens = (double)p->global_batch * (double)m->seq;
  snprintf(g->model, sizeof g->model, "%s layers=%ld hidden=%ld heads=%ld "
           "kv_heads=%ld ffn=%ld vocab=%ld seq=%ld experts=%ld topk=%ld",
           m->name, m->layers, m->hidden, m->heads, m->kv_heads, m->ffn,
           m->vocab, m->seq, m->experts, m->topk);
  if (m->head_dim > 0) { /* only when set apart: older graphs unchanged */
    size_t n = strlen(g->model);
    snprintf(g->model + n, sizeof g->model - n, " head_dim=%ld", m->head_dim);
  }
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
