/*
 * builder_moe.c - the MoE layer's token exchange as Megatron-Core runs it
 * (plan.h, enum moe_dispatcher): the router's kernels, the permutation of
 * the routed copies, the dispatcher's collectives and their inverses, and
 * the expert capacity.  builder_layer.c calls in at its router, dispatch
 * and combine steps (layer.h, LS_A2A) and for the experts' rows; the
 * grouped GEMMs stay there.
 *
 * Sources (NVIDIA/Megatron-LM, megatron/core/transformer/moe/):
 *   moe_layer.py MoELayer.forward: route, dispatch, experts, combine, on
 *     the layer's input as it comes: with TP, sequence-parallel shards
 *     (so the layer's own TP all-gather and reduce-scatter do not run);
 *   router.py TopKRouter: the gating GEMM (the router weight of layer.h)
 *     and moe_utils.topk_routing_with_score_function: top-k of the
 *     logits, softmax over the k in FP32, the scatter into a routing map
 *     (bool) and probabilities (FP32) of tokens x experts; the aux-loss
 *     scores (compute_routing_scores_for_aux_loss: softmax over all the
 *     experts in FP32, tokens per expert) and switch_load_balancing_loss;
 *   moe_utils.permute: tokens.index_select(0, sorted_indices), a gather of
 *     the routed rows; unpermute: the rows weighted by their probabilities,
 *     then scatter_add into the tokens; sort_chunks_by_idxs, the second
 *     permutation by local expert after the all-to-all;
 *   token_dispatcher.py MoEAlltoAllTokenDispatcher: all_to_all of the
 *     permuted tokens and of their FP32 probabilities over EP, then with
 *     expert TP (its default size is TP: training/arguments.py) the
 *     all-gather of both over it, sort_chunks_by_idxs when a rank holds
 *     several experts; combine: the inverse, with a reduce-scatter;
 *   MoEAllGatherTokenDispatcher: all-gather of the tokens, routing map and
 *     probabilities over tp_ep_group (pg_collection.tp_ep: the expert
 *     generator's "tp-ep" groups of parallel_state.py, expert TP x EP
 *     ranks, whose tp_size is the expert TP's, TP unless --etp), "if
 *     self.tp_size > 1 or self.ep_size > 1", each rank permuting its local
 *     experts' rows of the gathered tokens; combine: moe_utils.unpermute
 *     into the gathered shape (torch.zeros then scatter_add), and a
 *     reduce-scatter over tp_ep of the tokens cast to the probabilities'
 *     FP32 (hidden_states.to(self.local_probs.dtype)), cast back;
 *   MoEFlexTokenDispatcher with _DeepepManager, over tp_ep_group as well:
 *     _initialize_metadata expands the routing map and probabilities to
 *     [tokens, tp_size x ep_size, local experts] ("replicated across TP
 *     group since each TP ranks in a TP group should receive the same
 *     tokens"), with router_topk = tp_size x topk and num_experts =
 *     tp_size x experts; DeepEP's fused dispatch
 *     and combine (deepseek-ai/DeepEP README: internode kernels send a
 *     token over RDMA once per destination node, to the GPU of the same
 *     local index, which forwards it over NVLink to every GPU of the node
 *     that holds one of its experts; combine reduces in the node first),
 *     with the token's top-k indices (int64) and weights (FP32); permute
 *     after the dispatch, on the receiving rank;
 *   moe_utils.get_capacity and apply_router_token_dropping: an expert's
 *     capacity is ceil(tokens x top-k / experts x capacity factor); rows
 *     beyond it are dropped, and --moe-pad-expert-input-to-capacity pads
 *     every expert to it.
 *
 * Closed forms used (per token of the rank, n of them per micro-batch:
 * the sequence-parallel shard T / TP, or T with TP 1; e bytes per
 * element, h hidden, E experts, k top-k):
 *   routed rows sent per token: k dropless; k min(1, cf) with a capacity
 *     factor (even routing: an expert's share n k / E is over capacity only
 *     when cf < 1); E ceil(n k cf / E) / n padded;
 *   local rows (allgather, deepep): t rows per routed row sent, t the
 *     expert TP: each row goes to the t ETP ranks of its expert's EP rank;
 *   allgather over the t EP ranks of tp_ep: gathered t EP n tokens of
 *     e h + E (bool map) + 4 E (FP32 probabilities) bytes, reduce-scatter
 *     of t EP n tokens of 4 h bytes;
 *   DeepEP's copies: the EP group spans N = EP / g nodes of g EP ranks
 *     (t g ranks of tp_ep),
 *     each of E / N experts; with node-limited routing to M' = min(M, N)
 *     nodes (M' = N without a limit) and the k experts uniformly among
 *     those nodes' X = M' E / N experts, a block of b experts is missed
 *     with probability P(X, b) = C(X - b, k) / C(X, k), so a token goes to
 *     D = M' (1 - P(X, E/N)) nodes and R = t M' g (1 - P(X, E/EP)) ranks
 *     on average; its RDMA buffer is D copies, its NVLink buffer R copies,
 *     each with t k int64 indices and FP32 weights.
 */
#include "workloads/builder_int.h"

#include <math.h>

/* Bytes of a routing probability (FP32 in every dispatcher) and of a
 * top-k index (int64, torch.topk's). */
#define PROB_B 4.0
#define INDEX_B 8.0

bool bld_moe_core(const struct ctx *c)
{
  return c->p->moe_dispatcher != MD_BASIC && model_is_moe(c->m);
}

/* The probability that k experts drawn uniformly among x miss a block of
 * b of them: C(x - b, k) / C(x, k). */
static double miss(double x, double b, double k)
{
  double q = 1;
  for (double i = 0; i < k; i++)
    q *= x - b - i > 0 ? (x - b - i) / (x - i) : 0;
  return q;
}

/* Routed rows the rank sends per micro-batch of n tokens (above). */
static double sent_rows(const struct model *m, const struct plan *p, double n)
{
  double k = (double)m->topk, E = (double)m->experts, cf = p->moe_capacity;
  if (cf <= 0)
    return n * k;
  if (p->moe_pad)
    return E * ceil(n * k * cf / E);
  return n * k * (cf < 1 ? cf : 1);
}

void build_moe_dispatch(const struct model *m, const struct plan *p,
                        double n, struct moe_dispatch *out)
{
  double e = model_act_bytes(m), h = (double)m->hidden,
         k = (double)m->topk, E = (double)m->experts, ep = (double)p->ep,
         t = (double)plan_etp(p); /* expert TP (plan.h, etp) */
  double rows = sent_rows(m, p, n);
  *out = (struct moe_dispatch){.n = n, .rows = rows};
  out->permute_B = 2 * e * h * rows + 2 * PROB_B * rows;
  out->unpermute_B = 4 * e * h * rows + PROB_B * rows;
  switch (p->moe_dispatcher) {
  case MD_BASIC:
    out->a2a_B = e * n * k * h;
    out->permute_B = out->unpermute_B = 0;
    out->leave_B = out->a2a_B * (ep - 1) / ep;
    break;
  case MD_ALLTOALL:
    out->a2a_B = e * h * rows;
    out->probs_B = PROB_B * rows;
    out->etp_B = t > 1 ? t * (e * h + PROB_B) * rows : 0;
    out->sort_B = E / ep > 1 ? 2 * e * h * t * rows : 0;
    out->leave_B = (out->a2a_B + out->probs_B) * (ep - 1) / ep;
    break;
  case MD_ALLGATHER: {
    /* Over the tp_ep group of t x ep ranks, n tokens each: the rank's
     * local experts take t rows per routed row sent (t ETP ranks' shards,
     * each routed row on one EP rank). */
    double g = t * ep, local = t * rows;
    out->ag_B = g * n * (e * h + E * (1 + PROB_B));
    out->rs_B = g * n * h * PROB_B;
    out->permute_B = 2 * e * h * local + 2 * PROB_B * local;
    /* unpermute into the gathered tokens' restore_shape (torch.zeros,
     * then scatter_add: e h per gathered token more), the cast to the
     * probabilities' FP32 before the reduce-scatter (e + 4 per gathered
     * element) and back after it (4 + e per own element) */
    out->unpermute_B = 4 * e * h * local + PROB_B * local + g * n * h * e +
                       (g > 1 ? g * n * h * (e + PROB_B) + n * h * (PROB_B + e)
                              : 0);
    out->leave_B = n * (e * h + E * (1 + PROB_B)) * (g - 1);
    break;
  }
  case MD_DEEPEP: {
    double g = (double)(p->ep_node > 0 ? p->ep_node : p->ep), N = ep / g;
    double Mn = p->moe_max_nodes > 0 && (double)p->moe_max_nodes < N
                    ? (double)p->moe_max_nodes : N;
    double X = Mn * E / N;
    /* With expert TP t the group is tp_ep, t g ranks a node: a token
     * reaches the same nodes and the t ETP ranks of each EP rank it
     * reaches, with t k indices and weights (MoEFlexTokenDispatcher:
     * router_topk = tp_size x topk over tp_size x experts). */
    out->nodes = Mn * (1 - miss(X, E / N, k));
    out->ranks = t * Mn * g * (1 - miss(X, E / ep, k));
    double meta = (INDEX_B + PROB_B) * t * k; /* top-k indices, weights */
    out->rdma_B = N > 1 ? n * out->nodes * (e * h + meta) : 0;
    out->nvl_B = t * g > 1 ? n * out->ranks * (e * h + meta) : 0;
    out->net_B = out->rdma_B * (N - 1) / N;
    /* received copies (n R per rank) in, routed rows out: t per row sent,
     * as with allgather */
    double local = t * rows;
    out->permute_B = e * h * (n * out->ranks + local) + 2 * PROB_B * local;
    out->unpermute_B = e * h * (local + n * out->ranks) + PROB_B * local +
                       2 * e * h * local;
    out->leave_B = out->net_B +
                   (t * g > 1 ? out->nvl_B * (t * g - 1) / (t * g) : 0);
    break;
  }
  }
}

/* The group of the expert-TP gathers: Megatron-Core's tp_group of the
 * dispatcher is the expert TP group (pg_collection.expt_tp); with etp
 * unset it is the TP group, named as before. */
static enum group_kind etp_group(const struct ctx *c)
{
  return c->p->etp > 0 ? GK_ETP : GK_TP;
}

/* The group of the allgather and flex dispatchers: Megatron-Core's
 * tp_ep_group (token_dispatcher.py, MoETokenDispatcher.__init__:
 * pg_collection.tp_ep, parallel_state.py's expert generator "tp-ep"
 * groups, expert TP x EP); with expert TP 1 the EP group, named as
 * before. */
static enum group_kind tpep_group(const struct ctx *c)
{
  return plan_etp(c->p) > 1 ? GK_TPEP : GK_EP;
}

/* Whether the allgather dispatcher communicates: MoEAllGatherTokenDispatcher
 * gathers and reduce-scatters "if self.tp_size > 1 or self.ep_size > 1". */
static bool tpep_comm(const struct ctx *c)
{
  return plan_etp(c->p) > 1 || c->p->ep > 1;
}

/* The tokens of a micro-batch that enter the MoE block on this rank. */
static double moe_tokens(const struct ctx *c)
{
  return bld_moe_core(c) ? c->T_local : c->T;
}

double bld_moe_router_rows(const struct ctx *c)
{
  return moe_tokens(c);
}

/* The experts' rows on the busiest rank: the rank's routed copies (with
 * expert TP, the t ranks' copies gathered: T k in all), the busiest
 * expert's share times the imbalance, capped at capacity; padded, every
 * expert's capacity.  With MoE parallel folding (plan.h, etp) the gather
 * runs over ETP ranks of n = T / TP tokens each: the T of these forms is
 * ETP x n. */
double bld_moe_ffn_rows(const struct ctx *c)
{
  if (!model_is_moe(c->m))
    return c->T * c->topk;
  double T = c->p->etp > 0 ? (double)c->p->etp * moe_tokens(c) : c->T;
  double cf = c->p->moe_capacity;
  if (cf <= 0)
    return T * c->topk * c->p->moe_imbalance;
  if (c->p->moe_pad) {
    double n = moe_tokens(c), E = (double)c->m->experts;
    return T / n * E * ceil(n * c->topk * cf / E);
  }
  double f = c->p->moe_imbalance < cf ? c->p->moe_imbalance : cf;
  return T * c->topk * f;
}

/* Megatron-Core runs an MoE layer's shared experts before its router:
 * MoELayer.forward calls shared_experts_compute on the pre-MLP norm's
 * output, then route and preprocess (moe/moe_layer.py, custom_forward);
 * the combined 1F1B step does the same in its pre_dispatch node
 * (models/gpt/fine_grained_callables.py, submodule_pre_dispatch_forward),
 * and postprocess adds their output to the combined tokens.  layer.c
 * lists the shared block after the combine (where weft's basic exchange
 * runs it); here its steps, the TP_IN before its FC1 to the TP_OUT after
 * its FC2, move to just after the pre-MLP norm, before the router's
 * (skipped) TP_IN.  The backward, in reverse, runs them after the
 * router's, as autograd does (they were recorded first). */
void bld_moe_order(struct ctx *c)
{
  struct layer_desc *d = &c->ld;
  if (!bld_moe_core(c) || d->shared <= 0 || d->experts <= 1)
    return;
  int router = -1, comb = -1, end = -1;
  for (int i = 0; i < d->ns; i++) {
    if (d->st[i].kind == LS_LINEAR && d->w[d->st[i].w].role == LW_ROUTER)
      router = i;
    if (d->st[i].kind == LS_A2A)
      comb = i;
    if (d->st[i].kind == LS_TP_OUT)
      end = i;
  }
  /* norm2, TP_IN, router, ..., combine, TP_IN, shared ..., TP_OUT */
  if (router < 2 || comb < router || end <= comb + 1 ||
      d->st[router - 1].kind != LS_TP_IN ||
      d->st[comb + 1].kind != LS_TP_IN)
    return;
  struct lstep tmp[LAYER_STEPS_MAX];
  int n = 0, at = router - 1;
  if (c->p->moe_shared_overlap) {
    /* the layer's steps without the shared block, which follows them
     * past ns for the exchange to run (shx_steps) */
    for (int i = 0; i <= comb; i++)
      tmp[n++] = d->st[i];
    for (int i = end + 1; i < d->ns; i++)
      tmp[n++] = d->st[i];
    int ns = n;
    for (int i = comb + 1; i <= end; i++)
      tmp[n++] = d->st[i];
    for (int i = 0; i < n; i++)
      d->st[i] = tmp[i];
    d->ns = ns;
    return;
  }
  for (int i = 0; i < at; i++)
    tmp[n++] = d->st[i];
  for (int i = comb + 1; i <= end; i++)
    tmp[n++] = d->st[i];
  for (int i = at; i <= comb; i++)
    tmp[n++] = d->st[i];
  for (int i = end + 1; i < d->ns; i++)
    tmp[n++] = d->st[i];
  for (int i = 0; i < n; i++)
    d->st[i] = tmp[i];
}

/* The alltoall dispatcher after its all-to-alls: the received rows (and
 * their probabilities) all-gathered over expert TP, then sorted by local
 * expert; dispatch and shx_dispatch. */
static void a2a_dispatch_tail(struct ctx *c, const struct moe_dispatch *d,
                              int phase, long l)
{
  if (d->etp_B > 0)
    bld_coll(c, CO_ALLGATHER, etp_group(c), ST_COMPUTE, phase, l, d->etp_B);
  if (d->sort_B > 0)
    bld_kernel(c, KK_ELEMWISE, phase, l, 0, d->sort_B);
}

/* The alltoall dispatcher before its combine all-to-all: the rows sorted
 * back, then reduce-scattered over expert TP, the tokens only (the
 * dispatch gathers their probabilities too); combine and shx_combine. */
static void a2a_combine_head(struct ctx *c, const struct moe_dispatch *d,
                             int phase, long l)
{
  if (d->sort_B > 0)
    bld_kernel(c, KK_ELEMWISE, phase, l, 0, d->sort_B);
  if (d->etp_B > 0)
    bld_coll(c, CO_REDUCE_SCATTER, etp_group(c), ST_COMPUTE, phase, l,
             d->etp_B - (double)plan_etp(c->p) * PROB_B * d->rows);
}

/* ---- --moe-shared-expert-overlap (plan.h, moe_shared_overlap) ----
 *
 * Megatron-Core (moe/shared_experts.py, SharedExpertMLP with
 * moe_shared_expert_overlap; moe/token_dispatcher.py) runs the shared
 * experts on their own CUDA stream (SharedExpertMLP.stream) from inside
 * the dispatcher, and the all-to-alls on NCCL's stream (all_to_all with
 * use_nccl_stream: async_op, then handle.wait(), so the compute stream
 * waits for each).  MoEAlltoAllTokenDispatcher, forward:
 *   dispatch_preprocess: pre_forward_comm, the SP all-gather of the
 *     block's input (reduce-free copy without SP) on the shared stream
 *     after the router, then the permutation;
 *   token_dispatch: the tokens' all-to-all, linear_fc1_forward_and_act on
 *     the shared stream ("Forward launch order: tokens A2A -> shared
 *     experts fc1 -> probs A2A"), the probabilities' all-to-all;
 *   token_combine: the combine's all-to-all, linear_fc2_forward and
 *     post_forward_comm (SP reduce-scatter, all-reduce without SP) on the
 *     shared stream;
 *   combine_postprocess: the unpermutation, then the shared output added.
 * MoEFlexTokenDispatcher (deepep) issues pre_forward_comm and FC1 after
 * its dispatch.  The backward (autograd runs each op's backward on its
 * forward's stream; the sequence numbers the code sets launch the
 * all-to-alls first): the combine's backward all-to-all beside the
 * gather of the shared output's gradient and FC2's gradients; the
 * dispatch's backward all-to-all beside the activation's and FC1's
 * gradients ("Backward launch order: probs A2A -> tokens A2A -> shared
 * experts fc1") and their reduce-scatter.
 * In weft a GPU runs one kernel at a time (engine.h): the all-to-alls go
 * on ST_EP after the compute before them, the shared experts' kernels on
 * the compute stream while they run, the compute that needs an
 * all-to-all's output waits for it; the shared experts' TP collectives go
 * on ST_CP beside the compute (as async_tp_grad's, builder_layer.c,
 * whose NEEDSWORK applies), the add (forward) or the rest of the layer's
 * backward (the router's first; strictly only the norm's needs it)
 * waiting for them. */
static bool shx_on(const struct ctx *c)
{
  return c->p->moe_shared_overlap && bld_moe_core(c) && c->ld.shared > 0 &&
         c->ld.experts > 1;
}

/* The shared block's steps, TP_IN, FC1, activation, FC2, TP_OUT, after
 * the layer's (bld_moe_order). */
static const struct lstep *shx_steps(const struct ctx *c)
{
  return &c->ld.st[c->ld.ns];
}

/* A TP collective of the shared experts on ST_CP, after the compute
 * issued so far: `gather` the SP all-gather (none without SP), else the
 * SP reduce-scatter (all-reduce without SP); -1 when none runs. */
static long shx_coll(struct ctx *c, bool gather, int phase, long l)
{
  if (c->t <= 1 || (gather && !c->p->sp))
    return -1;
  enum coll_op op = gather ? CO_ALLGATHER
                    : c->p->sp ? CO_REDUCE_SCATTER : CO_ALLREDUCE;
  long x = bld_coll(c, op, GK_TP, ST_CP, phase, l, c->e * c->T * c->h);
  if (c->last_compute >= 0)
    graph_dep(c->g, c->s, c->last_compute);
  return x;
}

/* An all-to-all of the exchange on ST_EP after the compute issued so far
 * (`after_compute`) or after the one before it on ST_EP only. */
static long shx_a2a(struct ctx *c, enum group_kind gk, int phase, long l,
                    double bytes, bool after_compute)
{
  long x = bld_coll(c, CO_ALLTOALL, gk, ST_EP, phase, l, bytes);
  if (after_compute && c->last_compute >= 0)
    graph_dep(c->g, c->s, c->last_compute);
  return x;
}

/* The dispatch forward (or the combine's backward) with the shared
 * experts beside it: forward, their gather, FC1 and activation; backward,
 * the gather of their output's gradient and FC2's gradients; the compute
 * after it waits for the all-to-alls. */
static void shx_dispatch(struct ctx *c, const struct moe_dispatch *d,
                         int phase, long l)
{
  bool bwd = phase == PH_BWD;
  const struct lstep *sh = shx_steps(c);
  long g = -1, a = -1;
  switch (c->p->moe_dispatcher) {
  case MD_ALLTOALL:
    g = shx_coll(c, true, phase, l); /* pre_forward_comm, or the RS's
                                        backward */
    bld_kernel(c, KK_ELEMWISE, phase, l, 0, d->permute_B);
    if (c->p->ep > 1)
      a = shx_a2a(c, GK_EP, phase, l, d->a2a_B, true);
    break;
  case MD_DEEPEP:
    if (d->rdma_B > 0)
      a = shx_a2a(c, GK_EPX, phase, l, d->rdma_B, true);
    if (d->nvl_B > 0)
      a = shx_a2a(c, GK_EPN, phase, l, d->nvl_B, a < 0);
    g = shx_coll(c, true, phase, l);
    break;
  default:
    break;
  }
  bld_wait_for(c, g);
  if (!bwd) {
    bld_step_fwd(c, &sh[1], phase, l); /* FC1 */
    bld_step_fwd(c, &sh[2], phase, l); /* activation */
  } else {
    bld_step_bwd(c, &sh[3], l);        /* FC2's gradients */
  }
  if (c->p->moe_dispatcher == MD_ALLTOALL && c->p->ep > 1)
    a = shx_a2a(c, GK_EP, phase, l, d->probs_B, false);
  bld_wait_for(c, a);
  switch (c->p->moe_dispatcher) {
  case MD_ALLTOALL:
    a2a_dispatch_tail(c, d, phase, l);
    break;
  case MD_DEEPEP:
    bld_kernel(c, KK_ELEMWISE, phase, l, 0, d->permute_B);
    break;
  default:
    break;
  }
}

/* The combine forward (or the dispatch's backward) with the shared
 * experts beside it: forward, FC2 and the reduce-scatter of their
 * output, which the add waits for; backward, the activation's and FC1's
 * gradients and their input gradient's reduce-scatter, which the rest of
 * the layer waits for. */
static void shx_combine(struct ctx *c, const struct moe_dispatch *d,
                        int phase, long l)
{
  bool bwd = phase == PH_BWD;
  const struct lstep *sh = shx_steps(c);
  long a = -1;
  switch (c->p->moe_dispatcher) {
  case MD_ALLTOALL:
    a2a_combine_head(c, d, phase, l);
    if (c->p->ep > 1)
      a = shx_a2a(c, GK_EP, phase, l, d->a2a_B, true);
    break;
  case MD_DEEPEP:
    bld_kernel(c, KK_ELEMWISE, phase, l, 0, d->unpermute_B);
    if (d->nvl_B > 0)
      a = shx_a2a(c, GK_EPN, phase, l, d->n * d->ranks * c->e * c->h, true);
    if (d->rdma_B > 0)
      a = shx_a2a(c, GK_EPX, phase, l, d->n * d->nodes * c->e * c->h,
                  a < 0);
    break;
  default:
    break;
  }
  if (!bwd) {
    bld_step_fwd(c, &sh[3], phase, l); /* FC2 */
  } else {
    bld_step_bwd(c, &sh[2], l);        /* the activation's gradient */
    bld_step_bwd(c, &sh[1], l);        /* FC1's gradients */
  }
  /* post_forward_comm, or the input gradient's (pre_forward_comm's
   * backward): SP reduce-scatter, all-reduce without SP */
  long r = shx_coll(c, false, phase, l);
  bld_wait_for(c, a);
  if (c->p->moe_dispatcher == MD_ALLTOALL)
    bld_kernel(c, KK_ELEMWISE, phase, l, 0, d->unpermute_B);
  bld_wait_for(c, r);
}

bool bld_moe_skips_tp(const struct ctx *c, const struct lstep *st)
{
  long i = st - c->ld.st;
  /* The shared experts' own gather, after the combine (layer.c): only
   * where the block runs on the sequence-parallel shards; otherwise the
   * block's input is gathered already. */
  if (st->kind == LS_TP_IN && i > 0 && c->ld.st[i - 1].kind == LS_A2A)
    return !bld_moe_core(c);
  if (!bld_moe_core(c))
    return false;
  if (st->kind == LS_TP_IN)
    return i + 1 < c->ld.ns && c->ld.st[i + 1].kind == LS_LINEAR &&
           c->ld.w[c->ld.st[i + 1].w].role == LW_ROUTER;
  return st->kind == LS_TP_OUT && i > 0 && c->ld.st[i - 1].kind == LS_A2A;
}

/* Whether LS_A2A step `st` is the dispatch (the layer's first) rather
 * than the combine. */
static bool is_dispatch(const struct ctx *c, const struct lstep *st)
{
  for (const struct lstep *s = c->ld.st; s < st; s++)
    if (s->kind == LS_A2A)
      return false;
  return true;
}

/* The router's kernels after its gating GEMM over n tokens
 * (topk_routing_with_score_function, Megatron's default softmax after the
 * top-k, and the aux loss), as one memory-bound kernel each way:
 *   forward: top-k of the logits (read e E, write e k + 8 k), softmax of
 *     the k to FP32 (read e k, write 4 k), routing map and probabilities
 *     scattered (write E + 4 E), aux-loss softmax over E (read e E, write
 *     4 E), tokens per expert (read E), probabilities summed (read 4 E);
 *   backward: the two softmaxes' (read 4 + 4, write e per element), the
 *     scatter's gather (4 k + 4 k) and top-k's scatter (write e E). */
static void router_kernels(struct ctx *c, int phase, long l, bool bwd)
{
  double e = c->e, E = (double)c->m->experts, k = c->topk,
         n = moe_tokens(c);
  double per = bwd ? (8 + e) * k + (8 + e) * E + 8 * k + e * E
                   : (e + 8) * k + e * E + (e + 4) * k + 5 * E +
                         (e + 4) * E + E + 4 * E;
  bld_kernel(c, KK_ELEMWISE, phase, l, 0, n * per);
}

/* The dispatch, forward (or the combine's backward, which moves the same
 * bytes the same way): collectives on the compute stream, as Megatron
 * issues them (NCCL's stream, waited for by the next kernel). */
static void dispatch(struct ctx *c, const struct moe_dispatch *d, int phase,
                     long l)
{
  switch (c->p->moe_dispatcher) {
  case MD_ALLTOALL:
    bld_kernel(c, KK_ELEMWISE, phase, l, 0, d->permute_B);
    if (c->p->ep > 1) {
      bld_coll(c, CO_ALLTOALL, GK_EP, ST_COMPUTE, phase, l, d->a2a_B);
      bld_coll(c, CO_ALLTOALL, GK_EP, ST_COMPUTE, phase, l, d->probs_B);
    }
    a2a_dispatch_tail(c, d, phase, l);
    break;
  case MD_ALLGATHER:
    if (tpep_comm(c))
      bld_coll(c, CO_ALLGATHER, tpep_group(c), ST_COMPUTE, phase, l,
               d->ag_B);
    bld_kernel(c, KK_ELEMWISE, phase, l, 0, d->permute_B);
    break;
  case MD_DEEPEP:
    if (d->rdma_B > 0)
      bld_coll(c, CO_ALLTOALL, GK_EPX, ST_COMPUTE, phase, l, d->rdma_B);
    if (d->nvl_B > 0)
      bld_coll(c, CO_ALLTOALL, GK_EPN, ST_COMPUTE, phase, l, d->nvl_B);
    bld_kernel(c, KK_ELEMWISE, phase, l, 0, d->permute_B);
    break;
  default:
    break;
  }
}

/* The combine, forward (or the dispatch's backward). */
static void combine(struct ctx *c, const struct moe_dispatch *d, int phase,
                    long l)
{
  switch (c->p->moe_dispatcher) {
  case MD_ALLTOALL:
    a2a_combine_head(c, d, phase, l);
    if (c->p->ep > 1)
      bld_coll(c, CO_ALLTOALL, GK_EP, ST_COMPUTE, phase, l, d->a2a_B);
    bld_kernel(c, KK_ELEMWISE, phase, l, 0, d->unpermute_B);
    break;
  case MD_ALLGATHER:
    bld_kernel(c, KK_ELEMWISE, phase, l, 0, d->unpermute_B);
    if (tpep_comm(c))
      bld_coll(c, CO_REDUCE_SCATTER, tpep_group(c), ST_COMPUTE, phase, l,
               d->rs_B);
    break;
  case MD_DEEPEP: /* the tokens back, without the top-k metadata */
    bld_kernel(c, KK_ELEMWISE, phase, l, 0, d->unpermute_B);
    if (d->nvl_B > 0)
      bld_coll(c, CO_ALLTOALL, GK_EPN, ST_COMPUTE, phase, l,
               d->n * d->ranks * c->e * c->h);
    if (d->rdma_B > 0)
      bld_coll(c, CO_ALLTOALL, GK_EPX, ST_COMPUTE, phase, l,
               d->n * d->nodes * c->e * c->h);
    break;
  default:
    break;
  }
}

void bld_moe_exchange(struct ctx *c, const struct lstep *st, int phase,
                      long l)
{
  struct moe_dispatch d;
  build_moe_dispatch(c->m, c->p, moe_tokens(c), &d);
  bool bwd = phase == PH_BWD, first = is_dispatch(c, st);
  if (first && !bwd)
    router_kernels(c, phase, l, false);
  /* Backward runs the steps in reverse: the combine's backward dispatches
   * the output gradients, the dispatch's backward combines the inputs'. */
  if (first != bwd)
    (shx_on(c) ? shx_dispatch : dispatch)(c, &d, phase, l);
  else
    (shx_on(c) ? shx_combine : combine)(c, &d, phase, l);
  /* MoELayer.postprocess: output + shared_expert_output, read 2, write 1
   * element a token's hidden value (its backward passes the gradient to
   * both, no kernel) */
  if (!first && !bwd && c->ld.shared > 0)
    bld_kernel(c, KK_ELEMWISE, phase, l, 0, 3 * c->e * d.n * c->h);
  if (first && bwd)
    router_kernels(c, phase, l, true);
}
