/*
 * accounting.c - closed forms for parameters, FLOPs and memory.
 */
#include "workloads/accounting.h"

#include <math.h>
#include <stdlib.h>

#include "workloads/layer.h"
#include "workloads/schedule.h"

/* One layer's parameters by how they are held (layer.h): split by TP
 * (all experts' copies of the routed ones), replicated on every TP rank,
 * and the routed experts' part of each (split over EP). */
struct parts {
  double split, repl, xsplit, xrepl;
};

static struct parts kind_parts(const struct model *m, int kind)
{
  struct layer_desc d;
  layer_describe_kind(m, kind, &d);
  struct parts p = {0};
  for (int i = 0; i < d.nw; i++) {
    const struct lweight *w = &d.w[i];
    double n = lweight_elems(&d, w);
    bool repl = w->split == LW_REPL;
    if (repl)
      p.repl += n;
    else
      p.split += n;
    if (w->routed && repl)
      p.xrepl += n;
    else if (w->routed)
      p.xsplit += n;
  }
  return p;
}

double layer_params_kind(const struct model *m, int kind)
{
  struct parts p = kind_parts(m, kind);
  return p.split + p.repl;
}

double layer_params(const struct model *m)
{
  return layer_params_kind(m, model_layer_kind(m, 0));
}

void layer_kind_counts(const struct model *m, long first, long count,
                       long out[LAYER_KINDS])
{
  for (int k = 0; k < LAYER_KINDS; k++)
    out[k] = 0;
  if (model_layers_alike(m)) { /* the common case, in O(1) */
    out[model_layer_kind(m, 0)] = count;
    return;
  }
  for (long i = first; i < first + count; i++)
    out[model_layer_kind(m, i)]++;
}

/* Parameters of the MTP modules besides their layers (DeepSeek-V3 Sec.
 * 2.2; Megatron-Core multi_token_prediction.py, MultiTokenPredictionLayer:
 * enorm and hnorm over h each, eh_proj 2h -> h, the final layernorm h;
 * the embedding and output head are the main model's, shared). */
static double mtp_extra_params(const struct model *m)
{
  double h = (double)m->hidden;
  return (double)m->mtp_layers * (3 * h + 2 * h * h);
}

double mtp_params(const struct model *m)
{
  double n = mtp_extra_params(m);
  for (long j = 0; j < m->mtp_layers; j++)
    n += layer_params_kind(m, model_layer_kind(m, m->layers + j));
  return n;
}

/* The routed experts' share of `p` on one rank. */
static double expert_share(const struct parts *p, long tp, long ep)
{
  return p->xsplit / (double)tp / (double)ep + p->xrepl / (double)ep;
}

double layer_expert_params_rank_kind(const struct model *m, int kind,
                                     long tp, long ep)
{
  struct parts p = kind_parts(m, kind);
  return expert_share(&p, tp, ep);
}

double layer_params_rank_kind(const struct model *m, int kind, long tp,
                              long ep)
{
  struct parts p = kind_parts(m, kind);
  return (p.split - p.xsplit) / (double)tp + (p.repl - p.xrepl) +
         expert_share(&p, tp, ep);
}

double layer_expert_params_rank(const struct model *m, long tp, long ep)
{
  return layer_expert_params_rank_kind(m, model_layer_kind(m, 0), tp, ep);
}

double layer_params_rank(const struct model *m, long tp, long ep)
{
  return layer_params_rank_kind(m, model_layer_kind(m, 0), tp, ep);
}

/* The sum of f over layers [first, first + count) by kind. */
static double sum_layers(const struct model *m, long first, long count,
                         double (*f)(const struct model *, int, long, long),
                         long tp, long ep)
{
  long n[LAYER_KINDS];
  layer_kind_counts(m, first, count, n);
  double s = 0;
  for (int k = 0; k < LAYER_KINDS; k++)
    if (n[k] > 0)
      s += (double)n[k] * f(m, k, tp, ep);
  return s;
}

double mtp_params_rank(const struct model *m, long tp, long ep,
                       bool experts_only)
{
  double h = (double)m->hidden, mtp = (double)m->mtp_layers;
  /* norms replicated, eh_proj column-parallel */
  double n = experts_only ? 0 : mtp * (3 * h + 2 * h * h / (double)tp);
  for (long j = 0; j < m->mtp_layers; j++) {
    int k = model_layer_kind(m, m->layers + j);
    n += experts_only ? layer_expert_params_rank_kind(m, k, tp, ep)
                      : layer_params_rank_kind(m, k, tp, ep);
  }
  return n;
}

double embedding_params(const struct model *m)
{
  double e = (double)model_vocab_rows(m) * (double)m->hidden;
  if (m->gpt_style)
    e += (double)m->seq * (double)m->hidden; /* learned positions */
  return e;
}

double output_params(const struct model *m)
{
  return model_tied(m) ? 0.0
                       : (double)model_vocab_rows(m) * (double)m->hidden;
}

double final_norm_params(const struct model *m)
{
  return (m->gpt_style ? 2.0 : 1.0) * (double)m->hidden;
}

static double kind_params(const struct model *m, int kind, long tp, long ep)
{
  (void)tp;
  (void)ep;
  return layer_params_kind(m, kind);
}

double model_params(const struct model *m)
{
  return sum_layers(m, 0, m->layers, kind_params, 1, 1) +
         embedding_params(m) + output_params(m) + final_norm_params(m) +
         mtp_params(m);
}

/* The routed experts' parameters a token does not use in a layer. */
static double kind_idle(const struct model *m, int kind, long tp, long ep)
{
  (void)tp;
  (void)ep;
  struct parts p = kind_parts(m, kind);
  return (p.xsplit + p.xrepl) * (1 - (double)m->topk / (double)m->experts);
}

/* Parameters a token passes through: the routed experts' copies counted
 * top-k of `experts` times (the figure model cards give as "active"). */
double model_active_params(const struct model *m)
{
  if (!model_is_moe(m)) /* dense */
    return model_params(m);
  return model_params(m) - sum_layers(m, 0, m->layers + m->mtp_layers,
                                      kind_idle, 1, 1);
}

static double experts_at(const struct model *m, const struct plan *p,
                         long stage, long tp);

double stage_params_rank(const struct model *m, const struct plan *p,
                         long stage)
{
  double n = 0, t = (double)p->tp;
  for (long c = 0; c < p->vchunks; c++) {
    long first, count;
    plan_chunk_layers(p, m, stage, c, &first, &count);
    n += sum_layers(m, first, count, layer_params_rank_kind, p->tp, p->ep);
  }
  if (stage == 0) {
    n += (double)model_vocab_rows(m) * (double)m->hidden / t;
    if (m->gpt_style)
      n += (double)m->seq * (double)m->hidden;
  }
  if (stage == p->pp - 1) {
    n += final_norm_params(m);
    /* The output layer: its own weights (untied, as Llama), or the tied
     * copy of the embedding that Megatron keeps on the last stage (tied,
     * as GPT, pp > 1). */
    if (!model_tied(m) || p->pp > 1)
      n += (double)model_vocab_rows(m) * (double)m->hidden / t;
    /* The MTP modules: on the last stage, after the output layer, as
     * Megatron-Core places them (gpt_model.py, mtp_process on the last
     * pipeline stage). */
    n += mtp_params_rank(m, p->tp, p->ep, false);
  }
  /* MoE parallel folding: the experts' share at ETP in place of TP's */
  if (p->etp > 0 && p->etp != p->tp)
    n += experts_at(m, p, stage, p->etp) - experts_at(m, p, stage, p->tp);
  return n;
}

/* The routed experts' parameters of `stage` on one rank, split over tp. */
static double experts_at(const struct model *m, const struct plan *p,
                         long stage, long tp)
{
  double n = 0;
  for (long c = 0; c < p->vchunks; c++) {
    long first, count;
    plan_chunk_layers(p, m, stage, c, &first, &count);
    n += sum_layers(m, first, count, layer_expert_params_rank_kind, tp,
                    p->ep);
  }
  if (stage == p->pp - 1)
    n += mtp_params_rank(m, tp, p->ep, true);
  return n;
}

double stage_expert_params_rank(const struct model *m, const struct plan *p,
                                long stage)
{
  /* MoE parallel folding: the experts split over ETP, not TP (plan.h) */
  return experts_at(m, p, stage, plan_etp(p));
}

/* Forward model FLOPs of layer i over T tokens of sequences of s: every
 * linear layer's 2 T in out, a routed expert's over the tokens routed to
 * it (T x top-k in all), and QK^T and PV over the full square, each
 * head's query/key and value widths (heads x head_dim: hidden unless
 * set), scaled for a window or chunks by the pairs it attends against a
 * full causal mask's. */
double layer_fwd_flops(const struct model *m, long i, double T, double s)
{
  struct layer_desc d;
  layer_describe_at(m, i, &d);
  double a = (double)m->heads;
  double qk = (double)model_qk_head_dim(m), v = (double)model_v_head_dim(m);
  double core = model_mla(m) ? 2 * T * s * a * (qk + v)
                             : 4 * T * s * (double)model_q_dim(m);
  if (model_layer_span(m, i) != SPAN_FULL)
    core *= model_layer_pairs(m, i, s) / (s * (s + 1) / 2);
  double f = core;
  for (int k = 0; k < d.nw; k++) {
    const struct lweight *w = &d.w[k];
    if (lweight_matrix(w))
      f += 2 * (w->routed ? (double)m->topk * T : T) * w->in * w->out;
  }
  return f;
}

double model_flops_per_iter(const struct model *m, long global_batch)
{
  double B = (double)global_batch, s = (double)m->seq, h = (double)m->hidden;
  double T = B * s, fwd = 0;
  if (model_layers_alike(m)) {
    fwd = (double)(m->layers + m->mtp_layers) * layer_fwd_flops(m, 0, T, s);
  } else {
    for (long i = 0; i < m->layers + m->mtp_layers; i++)
      fwd += layer_fwd_flops(m, i, T, s);
  }
  /* The logits, and each MTP module's own (Megatron-LM's
   * num_floating_point_operations: padded_vocab_size x (mtp_num_layers +
   * 1)) and its eh_proj (2h -> h). */
  double V = (double)model_vocab_rows(m), mtp = (double)m->mtp_layers;
  fwd += 2 * T * h * V * (1 + mtp) + mtp * 2 * T * 2 * h * h;
  return 3 * fwd;
}

static double op_sac_layer_bytes(const struct model *m, const struct plan *p);

static double kind_activation_bytes(const struct model *m,
                                    const struct plan *p, int kind);

/* Layers not all alike: the largest of their kinds' (an upper bound on the
 * stage's; NEEDSWORK: count each in-flight layer's own). */
double layer_activation_bytes(const struct model *m, const struct plan *p)
{
  if (model_layers_alike(m))
    return kind_activation_bytes(m, p, model_layer_kind(m, 0));
  double most = 0;
  long n[LAYER_KINDS];
  layer_kind_counts(m, 0, m->layers, n);
  for (int k = 0; k < LAYER_KINDS; k++) {
    double x = n[k] > 0 ? kind_activation_bytes(m, p, k) : 0;
    if (x > most)
      most = x;
  }
  return most;
}

static double kind_activation_bytes(const struct model *m,
                                    const struct plan *p, int kind)
{
  /* Context parallelism keeps 1/cp of the sequence on each rank. */
  double s = (double)m->seq / (double)p->cp, b = (double)p->micro_batch;
  double h = (double)m->hidden, a = (double)m->heads, t = (double)p->tp;
  bool moe = (kind & LAYER_KIND_MOE) != 0;
  double kv = (double)model_kv_dim(m);
  double f = (double)(moe ? model_moe_ffn(m) : m->ffn);
  double q = (double)model_q_dim(m), k = moe ? (double)m->topk : 1;
  double gates = m->ffn_kind == FFN_SWIGLU ? 2.0 : 1.0;
  /* Korthikanti et al. Sec. 4.1 per token: outside the tensor-parallel
   * regions 10h (LayerNorm inputs 4h, QKV and FC1 inputs 2h each, two
   * dropout masks h each); inside, Q 2h, K and V 2kv each, projection input
   * 2h (Q and the projection input are heads x head_dim wide: h unless
   * head_dim is set), FFN activations 2f per gate and 2f after the activation (24h for GPT),
   * and the attention scores 5 a s (softmax 2, its dropout mask 1, its
   * dropout output 2 bytes per score). */
  double repl = 10 * h;
  double split = 2 * q + 4 * kv + 2 * q + k * (2 * f * gates + 2 * f);
  if (model_mla(m)) {
    /* MLA: Q and K a x (nope + rope), V and the projection's input a x
     * v_dim, inside TP; the latent q and kv (down-projection outputs and
     * their norms' outputs, the up-projections' inputs: 4 bytes per
     * element) on every TP rank, counted with the replicated part. */
    double dqk = (double)model_qk_head_dim(m), dv = (double)model_v_head_dim(m);
    double lat = (double)(m->q_lora + m->kv_lora + model_rope_dim(m));
    split = 2 * a * dqk + 2 * a * dqk + 2 * a * dv + 2 * a * dv +
            k * (2 * f * gates + 2 * f);
    repl += 4 * lat;
  }
  /* Shared experts: their FC1 output and activation, on every token. */
  if (moe && m->shared_ffn > 0)
    split += 2 * (double)m->shared_ffn * gates + 2 * (double)m->shared_ffn;
  if (k > 1)
    repl += (k - 1) * 3 * h; /* routed copies of the FC1 input and mask */
  /* Unfused attention keeps the scores (Korthikanti's 5as term); a fused
   * flash-style kernel keeps only its output and the FP32 log-sum-exp of
   * each row (4 bytes per head and token). */
  double scores = p->unfused_attention ? 5 * a * s : 4 * a;
  double per_token;
  if (p->t3[0] > 0) {
    /* Tensor3D: the residual stream's tensors hold h/GX channels, the
     * attention's and the FFN's those split over Y (builder_t3.c). */
    double gx = (double)p->t3[0], gy = (double)p->t3[1];
    per_token = p->recompute == RECOMP_FULL ? 2 * h / gx
                : p->recompute == RECOMP_SELECTIVE ? repl / gx + split / gy
                : repl / gx + (split + scores) / gy;
    return s * b * per_token;
  }
  switch (p->recompute) {
  case RECOMP_FULL:
    per_token = 2 * h / (p->sp ? t : 1);
    break;
  case RECOMP_SELECTIVE:
    if (p->sel_ops) /* torchtitan's op policy: what it saves */
      return op_sac_layer_bytes(m, p);
    per_token = repl / (p->sp ? t : 1) + split / t;
    break;
  default:
    per_token = repl / (p->sp ? t : 1) + (split + scores) / t;
  }
  return s * b * per_token;
}

/* Peak over the schedule of the layers' worth of micro-batch activations
 * held by `stage`. */
static double peak_layers_inflight(const struct model *m, const struct plan *p,
                                   long stage, long *out_inflight)
{
  long n;
  struct sched_op *ops = schedule_for_plan(p, stage, &n);
  double cur = 0, peak = 0;
  long in = 0, peak_in = 0;
  for (long i = 0; i < n; i++) {
    long first, count;
    plan_chunk_layers(p, m, stage, ops[i].chunk, &first, &count);
    (void)first;
    cur += ops[i].fwd ? (double)count : -(double)count;
    in += ops[i].fwd ? 1 : -1;
    if (cur > peak) {
      peak = cur;
      peak_in = in;
    }
  }
  free(ops);
  *out_inflight = peak_in;
  return peak;
}

/* The NCCL communicators on which a GPU of `stage` runs collectives, and
 * its pipeline peers (accounting.h); *a2a_peers: the peers of its
 * all-to-alls.
 *
 * An MoE job on a Megatron-Core dispatcher (plan.h, moe_dispatcher other
 * than basic) runs on the process groups parallel_state.py makes for it
 * (initialize_model_parallel, the expert RankGenerator "tp-ep-dp-pp"),
 * each its own torch.distributed group and so its own NCCL communicator,
 * created when a collective first runs on it (ProcessGroupNCCL's lazy
 * init), even where it holds the same ranks as another:
 *   alltoall: the EP group's all-to-alls (pg_collection.ep) and, with an
 *     expert TP t > 1, the gathers and reduce-scatters over the expert TP
 *     group (pg_collection.expt_tp: _EXPERT_TENSOR_PARALLEL_GROUP, distinct
 *     from the attention's TP group even when t = TP);
 *   allgather and flex (deepep): the tp_ep group (pg_collection.tp_ep,
 *     _EXPERT_TENSOR_AND_MODEL_PARALLEL_GROUP), of t x EP ranks, when it
 *     holds more than one; nothing runs on the EP group itself;
 *   the experts' gradients and the distributed optimizer's expert shards
 *     over the expert DP group (pg_collection.expt_dp,
 *     _EXPERT_DATA_PARALLEL_GROUP), EDP = plan_edp > 1.
 * An all-to-all is NCCL point-to-point sends and receives to every peer
 * (NCCL's user guide, "Point-to-point communication": all-to-all as
 * ncclSend/ncclRecv to each peer between ncclGroupStart and ncclGroupEnd,
 * as PyTorch's ProcessGroupNCCL::alltoall_base issues it through
 * torch::cuda::nccl::all2all_single_equal_split), so an EP communicator that
 * runs nothing else connects p2p channels to its EP - 1 peers, not a ring
 * (a2a_bytes): a peer in the node over NVLink holds its own buffers, counted
 * as a pipeline peer's (MEM_NCCL_P2P_*); the peers across the network
 * share one pool per communicator and direction (NCCL src/transport/net.cc,
 * sharedNetBuffersInit: p2pnChannels x NCCL_SHARED_STEPS (16) x
 * p2pChunkSize, NCCL_P2P_NET_CHUNKSIZE 128 KiB, src/init.cc; shared unless
 * NCCL_NET_SHARED_BUFFERS=0).  NEEDSWORK: the LL and LL128 buffers of
 * each connection are left out.  NEEDSWORK: DeepEP's own NVLink and RDMA buffers
 * (deep_ep.Buffer, sized by Megatron's fused_a2a.get_buffer from DeepEP's
 * Config size hints) are not counted.  With the basic dispatcher (weft's
 * model before Megatron-Core's), as before: EP and DP / EP x CP rings. */
/* Buffer bytes of an EP communicator that runs only all-to-alls: its
 * peers in the node (EP ranks lie TP x CP ranks apart, ETP apart under
 * folding: plan.h; all in one node when the node size is not known,
 * moe_node_gpus 0) each MEM_NCCL_P2P_CHANNELS Simple buffers, and with
 * peers across nodes NCCL's shared pool, send and receive (above). */
static double a2a_bytes(const struct plan *p)
{
  long stride = p->etp > 0 ? p->etp : p->tp * p->cp, g = p->ep;
  if (p->moe_node_gpus > 0)
    g = p->moe_node_gpus >= stride ? p->moe_node_gpus / stride : 1;
  g = g < p->ep ? g : p->ep;
  double b = (double)(g - 1) * MEM_NCCL_P2P_CHANNELS * MEM_NCCL_P2P_BYTES;
  if (g < p->ep)
    b += 2 * MEM_NCCL_CHANNELS * 16 * 131072.0;
  return b;
}

static void comm_count(const struct model *m, const struct plan *p,
                       const struct graph_layout *l, long stage, long *comms,
                       long *peers, long *a2a_peers)
{
  long n = 0;
  bool core = model_is_moe(m) && p->moe_dispatcher != MD_BASIC;
  *a2a_peers = 0;
  if (p->t3[0] > 0) /* Tensor3D: its X, Y and Z groups */
    n += (p->t3[0] > 1) + (p->t3[1] > 1) + (p->t3[2] > 1);
  else
    n += p->tp > 1;               /* TP */
  n += p->cp > 1;                 /* CP ring attention */
  n += p->dp * p->cp > 1;         /* gradients (DP x CP), ZeRO gathers */
  n += layout_shard(l) < p->dp;   /* HSDP: shard and replica groups */
  if (core) {
    long t = plan_etp(p);
    if (p->moe_dispatcher == MD_ALLTOALL) {
      if (p->ep > 1) {
        n++;                      /* EP, its all-to-alls p2p */
        *a2a_peers = p->ep - 1;
      }
      n += t > 1;                 /* expert TP */
    } else {
      n += t * p->ep > 1;         /* tp_ep */
    }
    n += p->ep > 1 && plan_edp(p) > 1; /* expert DP */
  } else {
    n += p->ep > 1;               /* expert all-to-all */
    n += model_is_moe(m) && p->dp / p->ep * p->cp > 1 && p->ep > 1; /* EDP */
  }
  n += p->pp > 1 && model_tied(m) && (stage == 0 || stage == p->pp - 1);
  *comms = n;
  /* Interleaving wraps the chunks around: every stage talks to both
   * neighbours; otherwise the ends have one.  With two stages both
   * neighbours are the same GPU. */
  if (p->pp == 1)
    *peers = 0;
  else if (p->pp == 2)
    *peers = 1;
  else
    *peers = p->vchunks > 1 || (stage > 0 && stage < p->pp - 1) ? 2 : 1;
}

/* Weights of the linear layers of one layer held by a GPU (the QKV,
 * projection and FFN GEMMs' weights, experts split over EP): what
 * Transformer Engine runs in FP8 and caches (not the embedding, the output
 * layer, the norms, biases or the router, which Megatron-Core keeps in
 * 16 bits: megatron/core/models/gpt/gpt_model.py builds the output layer
 * as tensor_parallel.ColumnParallelLinear, the router as a plain
 * torch.nn.functional.linear in moe/router.py). */
static double layer_linear_weights_rank(const struct model *m, long tp,
                                        long etp, long ep)
{
  double h = (double)m->hidden, f = (double)m->ffn;
  double q = (double)model_q_dim(m);
  double qkv = q + 2.0 * (double)model_kv_dim(m);
  double gates = m->ffn_kind == FFN_SWIGLU ? 2.0 : 1.0;
  double e = (double)m->experts;
  double attn = (h * qkv + q * h) / (double)tp;
  double mlp = e * (h * f * gates + f * h);
  /* MoE parallel folding: the experts over ETP (plan.h, etp) */
  return attn + (model_is_moe(m) ? mlp / (double)etp / (double)ep
                                 : mlp / (double)tp);
}

/* The same for an MoE model's layer of kind `kind`, from its description
 * (layer.h: the linears Transformer Engine runs are those marked cast):
 * the routed experts' FC1 and FC2 at their own inner size
 * (moe_intermediate_size) over ETP x EP, shared experts, MLA's projections
 * and a dense layer's MLP over TP, replicated down-projections whole. */
static double kind_cast_weights_rank(const struct model *m, int kind,
                                     long tp, long etp, long ep)
{
  struct layer_desc d;
  layer_describe_kind(m, kind, &d);
  double n = 0;
  for (int i = 0; i < d.nw; i++) {
    const struct lweight *w = &d.w[i];
    if (w->cast && lweight_matrix(w))
      n += lweight_elems_rank(&d, w, (double)(w->routed ? etp : tp),
                              (double)ep);
  }
  return n;
}

double layer_linear_params_rank(const struct model *m, const struct plan *p)
{
  return layer_linear_weights_rank(m, p->tp, plan_etp(p), p->ep);
}

static double stage_linear_weights_rank(const struct model *m,
                                        const struct plan *p, long stage)
{
  double n = 0, per[LAYER_KINDS];
  for (int k = 0; k < LAYER_KINDS; k++)
    per[k] = -1;
  for (long c = 0; c < p->vchunks; c++) {
    long first, count;
    plan_chunk_layers(p, m, stage, c, &first, &count);
    if (!model_is_moe(m)) { /* dense: as before */
      n += (double)count *
           layer_linear_weights_rank(m, p->tp, plan_etp(p), p->ep);
      continue;
    }
    long kinds[LAYER_KINDS];
    layer_kind_counts(m, first, count, kinds);
    for (int k = 0; k < LAYER_KINDS; k++) {
      if (!kinds[k])
        continue;
      if (per[k] < 0)
        per[k] = kind_cast_weights_rank(m, k, p->tp, plan_etp(p), p->ep);
      n += (double)kinds[k] * per[k];
    }
  }
  return n;
}

/* Bytes of one layer and micro-batch that Korthikanti et al. count for
 * dropout and that a model without dropout (weft's Llama-style models:
 * Llama, Mixtral and their recipes set hidden and attention dropout to 0)
 * never stores: PyTorch's dropout with p = 0 returns its input
 * (aten/src/ATen/native/Dropout.cpp: the fused kernel needs p > 0, the
 * unfused path returns the input when p == 0), so neither the two 1-byte
 * masks of the residual stream (nor those of the routed copies) nor, with
 * unfused attention, the scores' mask and dropout output (3 of the 5 bytes
 * per score) exist.  Full recomputation stores none of them anyway. */
static double dropout_bytes(const struct model *m, const struct plan *p)
{
  if (m->gpt_style || p->recompute == RECOMP_FULL || p->t3[0] > 0)
    return 0;
  double s = (double)m->seq / (double)p->cp, b = (double)p->micro_batch;
  double h = (double)m->hidden, t = (double)p->tp;
  double k = (double)m->topk;
  double masks = (2 + (k > 1 ? k - 1 : 0)) * h / (p->sp ? t : 1);
  if (p->unfused_attention && p->recompute == RECOMP_NONE)
    masks += 3 * (double)m->heads * s / t;
  return s * b * masks;
}

/* Activation bytes of one layer and micro-batch that torchtitan's per-op
 * selective checkpointing keeps (torchtitan
 * distributed/activation_checkpoint.py, SelectiveAC at b5bcd76, 2026-08):
 * the whole block is checkpointed, so its input stays (2h per token, the
 * residual stream); inside it only the outputs of the ops in its save
 * list survive the forward: the attention kernel's (SDPA: the output, 2h,
 * and the FP32 log-sum-exp, 4 bytes per head) and every other matrix
 * multiply, counted in forward order from 1 and the odd ones saved
 * ("Save all compute/comm ops, except every second mm/linear").  The
 * matrix multiplies of torchtitan's Llama block, in order: wq (h; heads x
 * head_dim when that is set apart), wk
 * (kv), wv (kv), wo (h), w1 (f), w3 (f), w2 (h) (models/llama3/model.py;
 * a GELU MLP has w1 and w2 only).  So with SwiGLU wq, wv, w1 and w2 are
 * kept: 8h + 2kv + 2f + 4a bytes per token.  Norms, RoPE, SiLU and the
 * products are recomputed. */
static double op_sac_layer_bytes(const struct model *m, const struct plan *p)
{
  double s = (double)m->seq / (double)p->cp, b = (double)p->micro_batch;
  double h = (double)m->hidden, a = (double)m->heads, t = (double)p->tp;
  double kv = (double)model_kv_dim(m), f = (double)m->ffn;
  double widths[7] = {(double)model_q_dim(m), kv, kv, h, f, f, h};
  int n = 7;
  if (m->ffn_kind != FFN_SWIGLU) {
    widths[5] = h; /* w1 (f), w2 (h) */
    n = 6;
  }
  double kept = 0;
  for (int i = 0; i < n - 1; i++)
    if ((i + 1) % 2 == 1)
      kept += 2 * widths[i];
  /* The last matmul, w2, is row-parallel: its output before the reduction
   * is a full-width partial sum on every TP rank, kept whole when the
   * policy saves it (the 7th matmul of a SwiGLU layer; a GELU layer's 6th
   * is recomputed). */
  double w2 = n % 2 == 1 ? 2 * widths[n - 1] : 0;
  double per_token = 2 * h / (p->sp ? t : 1) + (kept + 2 * h + 4 * a) / t + w2;
  return s * b * per_token;
}

/* Megatron-Core with Transformer Engine (enum mem_framework): what differs
 * from the ZeRO paper's accounting in `x`, the stage's memory so far. */
static void megatron_terms(const struct model *m, const struct plan *p,
                           long stage, double n_layers, struct memory *x)
{
  /* Transformer Engine casts each FP8 linear weight once per iteration and
   * keeps the FP8 copy and its transpose for the later micro-batches
   * (is_first_microbatch, megatron/core/extensions/transformer_engine.py:
   * TELinear.forward passes it unless disable_parameter_transpose_cache);
   * only the linear layers' weights, not the embedding, output layer or
   * norms that the ZeRO accounting counted.  (MXFP8: row- and column-wise
   * copies with a scale per 32 elements.) */
  if (m->dtype == DTYPE_FP8 && p->zero < 3 && !p->fp8_params) {
    double per = p->fp8_recipe == FP8_MXFP8 ? 2 * (1 + 1.0 / 32) : 2;
    double all = stage_params_rank(m, p, stage);
    x->weights += per * (stage_linear_weights_rank(m, p, stage) - all);
  }
  /* The gradient buffer (DistributedDataParallel's main_grad,
   * param_and_grad_buffer.py group_params_for_buffers: FP32 when
   * grad_reduce_in_fp32, else the parameters' dtype) is grad_dtype wide and
   * whole on every rank: the distributed optimizer reduce-scatters into
   * the rank's piece of it but keeps the buffer (ZeRO-1), which the ZeRO
   * accounting already does; nothing to change. */
  if (!(p->recompute == RECOMP_SELECTIVE && p->sel_ops))
    x->activations -= dropout_bytes(m, p) * n_layers; /* none counted */
}

/* torchtitan on FSDP2 (enum mem_framework): what differs from the ZeRO
 * paper's accounting in `x`.  `params` and `xp` are the stage's dense and
 * expert parameters, `N` and `Nx` their shard groups, as in
 * memory_per_gpu. */
static void torchtitan_terms(const struct model *m, const struct plan *p,
                             long stage, double params, double xp, double N,
                             double Nx, struct memory *x)
{
  /* fully_shard with MixedPrecisionPolicy(param_dtype=bf16,
   * reduce_dtype=fp32) (torchtitan distributed/fsdp.py): the sharded
   * parameters stay FP32 and are cast to BF16 when gathered, so there is no
   * separate master copy; their gradients arrive reduced and are kept in
   * the sharded parameter's dtype, FP32; AdamW's exp_avg and exp_avg_sq
   * follow the parameters, FP32.  4 + 4 + 8 bytes per parameter, sharded
   * from ZeRO stage 3, 2 and 1 on as the ZeRO accounting shards them. */
  double w3 = p->zero >= 3, g2 = p->zero >= 2, o1 = p->zero >= 1;
  x->weights = 4 * (params / (w3 ? N : 1) + xp / (w3 ? Nx : 1));
  x->grads = 4 * (params / (g2 ? N : 1) + xp / (g2 ? Nx : 1));
  x->optimizer = 8 * (params / (o1 ? N : 1) + xp / (o1 ? Nx : 1));
  /* (FP8 through torchao's float8 linear layers casts the weights at
   * each use, dynamic scaling, and caches none: no FP8 copy is counted.) */
  /* Activations: torchtitan's Llama has no dropout; its selective mode is
   * the per-op policy, not Megatron's attention-core recomputation. */
  double kept = p->recompute == RECOMP_SELECTIVE && p->t3[0] == 0
                    ? op_sac_layer_bytes(m, p)
                    : layer_activation_bytes(m, p) - dropout_bytes(m, p);
  long inflight;
  x->activations = kept * peak_layers_inflight(m, p, stage, &inflight);
  /* Two moments compete for the peak, both with every stored activation:
   * the loss, at the end of the forward pass, and a layer's backward.
   * The loss (components/loss.py cross_entropy_loss, eager): the BF16
   * logits (2 bytes each) cast to FP32 (4) for log_softmax, whose FP32
   * output (4) the backward keeps; the trainer deletes the logits after the
   * loss (trainer.py: `del pred`), and the backward then holds the kept
   * output, the FP32 gradient from nll_loss and log_softmax's FP32
   * gradient: 12 bytes per logit, the larger of the two (forward: 10). */
  double s = (double)m->seq / (double)p->cp, b = (double)p->micro_batch;
  double loss = stage == p->pp - 1
                    ? 12 * s * b * (double)model_vocab_rows(m) / (double)p->tp
                    : 0;
  /* A layer's backward: its recomputed activations (under selective, what
   * the per-op policy dropped; under full, the whole layer), then FSDP2's
   * buffers as _fsdp_collectives.py allocates them (pytorch/pytorch at
   * 8fc2039):
   * foreach_all_gather allocates the flat all-gather output (the unit's
   * parameters in BF16) on the all-gather copy-in stream, with a BF16 copy
   * of the shard as its input; foreach_all_gather_copy_out copies it into
   * per-parameter unsharded tensors on the compute stream; the flat output
   * is kept until the next all-gather's copy-out, which with the
   * one-unit-ahead prefetch means two of them live at once.  In the
   * backward, foreach_reduce copies the unsharded BF16 gradients into a
   * reduce-scatter input of the reduce dtype (grad_dtype if given, else
   * torchtitan's default mixed_precision_reduce, FP32) on the compute
   * stream and keeps it until the next reduce-scatter: two of them.
   * PyTorch's caching allocator serves a stream from its own blocks
   * (CUDACachingAllocator.cpp: a free block is reused only by the stream
   * it was allocated on), so what the all-gather streams reserved stays
   * reserved beside the compute stream's peak: it adds to either moment. */
  struct plan q = *p;
  q.recompute = RECOMP_NONE;
  double layer_none = layer_activation_bytes(m, &q) - dropout_bytes(m, &q);
  double remat = p->recompute == RECOMP_NONE ? 0 : layer_none - kept;
  if (remat < 0)
    remat = 0;
  double L = layer_params_rank(m, p->tp, p->ep);
  double rs = p->set[PK_GRAD_DTYPE] ? dtype_bytes(p->grad_dtype) : 4;
  double fsdp = 0, side = 0, root = 0;
  if (p->zero >= 3 && p->pp > 1) {
    /* With pipeline parallelism (builder_zero.c, fsdp_pp_pass) torchtitan
     * does not reshard after the forward pass and PyTorch's pipelining
     * neither reshards nor reduces after a backward but the chunk's last:
     * the stage's unsharded BF16 parameters live from the first forward
     * to the step's REDUCE_GRAD, and its unsharded gradients, accumulated
     * in the reduce dtype (_fsdp_param.py unsharded_accumulated_grad),
     * from each unit's first backward to it.  In 1F1B's steady state (and
     * interleaved's) a forward follows a backward, so both are whole
     * beside the most activations (NEEDSWORK: GPipe's peak, at the first
     * backward, holds them as they grow: counted whole, it is over by at
     * most the gradients). */
    double st = params + xp;
    x->weights += 2 * st;
    x->grads += rs * st;
    /* A layer's backward: its fresh BF16 gradient before the hook folds
     * it into the accumulator; no reduce-scatter input until REDUCE_GRAD,
     * when the activations are gone.  The all-gather streams' blocks of
     * the first forward stay reserved (above). */
    double R = output_params(m) / (double)p->tp + final_norm_params(m);
    fsdp = 2 * L;
    side = 2 * (L + (R > L ? R : L)) + 2 * L / N;
  } else if (p->zero >= 3) {
    /* The final norm and output layer, one unit that is never resharded
     * after the forward pass (fsdp.py: "do not reshard_after_forward the
     * last layers by default since FSDP would prefetch them
     * immediately"): its unsharded BF16 parameters stay from the forward
     * to its own backward, so through the loss but not a layer's
     * backward. */
    double R = output_params(m) / (double)p->tp + final_norm_params(m);
    root = 2 * R;
    /* The layer's unsharded parameters and gradients and two
     * reduce-scatter inputs on the compute stream ... */
    fsdp = 2 * L + 2 * L + 2 * rs * L;
    /* ... and on the all-gather streams two flat outputs at once, the
     * largest pair being a layer's beside the output unit's, and the copy
     * of one shard. */
    side = 2 * (L + (R > L ? R : L)) + 2 * L / N;
  }
  double bwd = remat + fsdp;
  x->transient = (loss + root > bwd ? loss + root : bwd) + side;
}

/* Megatron-FSDP (plan.h, shard_impl megatron-fsdp[-ub]; builder_zero.c,
 * mfsdp_pass): what its buffers hold beside the ZeRO-3 shards of `x`
 * (param_and_grad_buffer.py at Megatron-LM d98e8a6).  `params` are the
 * stage's, N the shard group.
 * - The compute weights' shard (model_weight_buffer): FP8 parameters at 1
 *   byte, the rest at 2; the FP32 main weights and Adam's moments are the
 *   ZeRO paper's 12 bytes, the sharded main_grad buffer its gradients.
 * - The embedding, final norm and output layer: one bucket no unit owns,
 *   gathered at the first forward and kept whole for the step.
 * - Gathered units (AllGatherPipeline): the one running and those
 *   prefetched, two with fsdp_double_buffer (FixedPoolAllocator, size 2),
 *   else as many as suggested_AG_prefetch_size lets the hook prefetch.
 * - Unsharded gradient buckets (GradReducePipeline): the one filling and
 *   those queued for reduction, two with double buffering, else as many as
 *   suggested_RS_queue_capacity keeps queued.
 * - FP8 transposes (_create_transpose): the running unit's, or with
 *   keep_fp8_transpose_cache (megatron-fsdp-ub) every layer's, kept from
 *   its first backward (1 byte per linear weight, whole). */
static void mfsdp_terms(const struct model *m, const struct plan *p,
                        long stage, double params, double N, struct memory *x)
{
  double lp = layer_params_rank(m, p->tp, p->ep);
  long first, count;
  plan_chunk_layers(p, m, stage, 0, &first, &count);
  (void)first;
  double L = (double)count; /* PP 1 and one chunk under ZeRO-3 */
  double nonunit = params - L * lp;
  bool f8 = p->fp8_params && m->dtype == DTYPE_FP8;
  double lin = f8 ? layer_linear_params_rank(m, p) : 0;
  double unit_b = lin + 2 * (lp - lin);
  bool dbuf = p->shard_impl == SI_MEGATRON_FSDP_UB;
  x->weights = (L * unit_b + 2 * nonunit) / N + 2 * nonunit;
  double sugg = fmax(1e9, 2 * lp), pref = 0;
  long ahead = 0;
  while (!dbuf && pref < floor(sugg / 2) && ahead < count - 1) {
    ahead++;
    pref += lp;
  }
  double queued = dbuf ? 1 : fmin(floor(sugg / lp), L);
  double gathered = dbuf ? fmin(2, L) : 1 + (double)ahead;
  x->transient += gathered * unit_b + (1 + queued) * lp *
                  dtype_bytes(p->grad_dtype) + (dbuf ? L : 1) * lin;
}

void memory_per_gpu(const struct model *m, const struct plan *p,
                    double hbm_bytes, struct memory *out)
{
  struct memory best = {0};
  double per_layer = layer_activation_bytes(m, p);
  double s = (double)m->seq / (double)p->cp, b = (double)p->micro_batch;
  for (long st = 0; st < p->pp; st++) {
    struct memory x = {0};
    /* ZeRO: stage 1 shards optimizer states, 2 also gradients, 3 also
     * weights, over the shard group (DP x CP unless HSDP); expert
     * parameters over the ranks holding the same experts. */
    double xp = p->ep > 1 ? stage_expert_params_rank(m, p, st) : 0;
    double params = stage_params_rank(m, p, st) - xp;
    struct graph_layout l;
    plan_layout(p, &l);
    double N = (double)(layout_shard(&l) * p->cp);
    double Nx = (double)plan_edp(p); /* expert DP (x CP): plan.h */
    double gb = dtype_bytes(p->grad_dtype);
    x.weights = 2 * (params / (p->zero >= 3 ? N : 1) +
                     xp / (p->zero >= 3 ? Nx : 1));
    /* FP8 linear layers keep an FP8 copy of each weight and of its
     * transpose for the iteration (Transformer Engine's weight cache;
     * MXFP8: row- and column-wise copies with a scale per 32 elements);
     * sharded weights (ZeRO-3) cast each gathered layer instead.  FP8
     * parameters (fp8_params) are the cache: FP8 data and transpose, 2
     * bytes, in place of the BF16 weight. */
    if (m->dtype == DTYPE_FP8 && p->zero < 3 && !p->fp8_params)
      x.weights += (p->fp8_recipe == FP8_MXFP8 ? 2 * (1 + 1.0 / 32) : 2) *
                   (params + xp);
    x.grads = gb * (params / (p->zero >= 2 ? N : 1) +
                    xp / (p->zero >= 2 ? Nx : 1));
    /* Error feedback (PowerSGD, Top-K, Random-K, EF-signSGD) keeps what
     * compression left out: one more gradient copy. */
    if (p->compress == CM_POWERSGD || p->compress == CM_TOPK ||
        p->compress == CM_RANDOMK || p->compress == CM_EFSIGN)
      x.grads *= 2;
    x.optimizer = 12 * (params / (p->zero >= 1 ? N : 1) +
                        xp / (p->zero >= 1 ? Nx : 1));
    long inflight;
    x.activations = per_layer * peak_layers_inflight(m, p, st, &inflight);
    x.peak_inflight = inflight;
    /* The MTP modules' layers on the last stage, for each micro-batch in
     * flight there (NEEDSWORK: the peak's, not the stage's own count). */
    if (st == p->pp - 1 && m->mtp_layers > 0)
      x.activations += (double)m->mtp_layers * per_layer * (double)inflight;
    if (p->recompute == RECOMP_FULL) {
      struct plan q = *p;
      q.recompute = RECOMP_NONE;
      x.transient = layer_activation_bytes(m, &q);
    }
    /* The logits' softmax kept for the loss's backward: FP32 (Korthikanti:
     * 4sbv/t) or in the logits' 16 bits (plan.h, enum cross_entropy). */
    /* (Tensor3D splits the logits over X x Y only.) */
    double vsplit = p->t3[0] > 0 ? (double)(p->t3[0] * p->t3[1])
                                 : (double)p->tp;
    if (st == p->pp - 1)
      x.transient += (p->xent == XENT_FP32 ? 4 : 2) * s * b *
                     (double)model_vocab_rows(m) / vsplit;
    /* Tensor3D over Z: the weight blocks of two linear layers gathered at
     * once (one prefetched), FC1's the largest. */
    if (p->t3[2] > 1)
      x.transient += 2 * dtype_bytes(m->dtype) *
                     (m->ffn_kind == FFN_SWIGLU ? 2.0 : 1.0) *
                     (double)m->ffn * (double)m->hidden / vsplit;
    if (p->zero >= 3 && shard_impl_mfsdp(p->shard_impl))
      mfsdp_terms(m, p, st, params, N, &x);
    else if (p->zero >= 3 && p->pp > 1) {
      /* FSDP2 under PP (builder_zero.c, fsdp_pp_pass): the stage stays
       * gathered for the step, and its gradients accumulate unsharded
       * beside their shards. */
      x.weights += 2 * (params * (1 - 1 / N) + xp * (1 - 1 / Nx));
      x.grads += gb * (params + xp);
    } else if (p->zero >= 3) /* two layers gathered at once (prefetch) */
      x.transient += 2 * 2 * layer_params_rank(m, p->tp, p->ep) * (1 - 1 / N);
    if (p->mem_framework == MF_MEGATRON)
      megatron_terms(m, p, st, peak_layers_inflight(m, p, st, &inflight), &x);
    else if (p->mem_framework == MF_TORCHTITAN)
      torchtitan_terms(m, p, st, params, xp, N, Nx, &x);
    long a2a_peers;
    comm_count(m, p, &l, st, &x.communicators, &x.p2p_peers, &a2a_peers);
    /* an all-to-all communicator: p2p channels to its peers, no ring */
    x.buffers = (double)(x.communicators - (a2a_peers > 0)) *
                    MEM_NCCL_CHANNELS * MEM_NCCL_CONN_BYTES +
                (double)x.p2p_peers * MEM_NCCL_P2P_CHANNELS *
                    MEM_NCCL_P2P_BYTES +
                (a2a_peers > 0 ? a2a_bytes(p) : 0) + MEM_CUBLAS_BYTES;
    if (p->mem_framework != MF_ZERO)
      x.buffers += MEM_CUDA_CONTEXT_BYTES;
    x.shard = p->zero >= 1 ? N : 1;
    x.expert_shard = p->zero >= 1 && xp > 0 ? Nx : 1;
    x.total = x.weights + x.grads + x.optimizer + x.activations +
              x.transient + x.buffers;
    x.stage = st;
    if (st == 0 || x.total > best.total)
      best = x;
  }
  best.capacity = hbm_bytes;
  best.fits = best.total <= hbm_bytes;
  *out = best;
}
