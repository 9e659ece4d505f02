/*
 * builder_layer.c - the passes of Megatron-LM's GPT layer with 1D
 * tensor parallelism (builder.h describes the kernels), of the embedding
 * and of the loss: GEMMs and grouped GEMMs, attention (fused, unfused, or
 * as ring attention with context parallelism), the TP/SP collectives, the
 * MoE token exchange and the FP8 casts.  A layer's passes run the steps
 * of its description (layer.h) forward, and in reverse for the backward.
 * bld_megatron_ops gathers them for the stage programs; Tensor3D borrows
 * attention and the loss kernels.
 */
#include "workloads/builder_int.h"

#include "workloads/accounting.h"

/* batch x ([M x K] @ [K x N]). */
static long bmm(struct ctx *c, int phase, long layer, double batch, double M,
                double N, double K)
{
  struct task t = {.kind = TK_KERNEL, .op = KK_GEMM, .stream = ST_COMPUTE,
                   .phase = (uint8_t)phase, .layer = (int32_t)layer,
                   .m = (uint32_t)M, .n = (uint32_t)N, .k = (uint32_t)K,
                   .batch = (uint32_t)batch, .flops = 2 * batch * M * N * K,
                   .bytes = c->e * batch * (M * K + K * N + M * N)};
  return bld_add(c, &t);
}

/* G groups of [M x K] @ [K x N], each with its own weight: the grouped
 * GEMM (Megatron-core's GroupedMLP, DeepGEMM's m-grouped GEMMs) that runs a
 * rank's local experts in one kernel.  Shapes are per group. */
static long ggemm(struct ctx *c, int phase, long layer, double G, double M,
                  double N, double K)
{
  struct task t = {.kind = TK_KERNEL, .op = KK_GGEMM, .stream = ST_COMPUTE,
                   .phase = (uint8_t)phase, .layer = (int32_t)layer,
                   .m = (uint32_t)(M + 0.999999),
                   .n = (uint32_t)(N + 0.999999),
                   .k = (uint32_t)(K + 0.999999), .batch = (uint32_t)G,
                   .flops = 2 * G * M * N * K,
                   .bytes = c->e * G * (M * K + K * N + M * N)};
  return bld_add(c, &t);
}

/* A GEMM of the feed-forward block over M token rows (tokens along M, or
 * along K when `wgrad`: a weight gradient).  A MoE layer runs it as one
 * grouped GEMM over the rank's experts / EP local experts, each seeing an
 * even share of the routed rows; a dense layer, or one expert per rank, as
 * one GEMM (a one-group grouped GEMM costs the same). */
static long ffn_gemm(struct ctx *c, int phase, long layer, double M, double N,
                     double K, bool wgrad)
{
  long local = c->ld.experts > 1 ? c->m->experts / c->p->ep : 1;
  if (local <= 1)
    return bld_gemm(c, phase, layer, M, N, K);
  double G = (double)local;
  return wgrad ? ggemm(c, phase, layer, G, M, N, K / G)
               : ggemm(c, phase, layer, G, M / G, N, K);
}

/* ---- Megatron-LM 2021 on PyTorch 1.8 (plan fusion=jit) ----
 *
 * NVIDIA/Megatron-LM v2.5 (the SC21 paper's code; examples/sc21/SRUN.sh
 * runs it in nvcr.io/nvidia/pytorch:20.12-py3, PyTorch 1.8), GPT layer,
 * the kernels that weft's fused layer does not have
 * (analysis/reconcile/megatron2021.md lists every kernel):
 *   the QKV ColumnParallelLinear keeps its bias (skip_bias_add False,
 *     mpu/layers.py) and calls F.linear on the 3-D [s, b, h] input, which
 *     PyTorch 1.8 runs as matmul, then `output += bias` (addmm only for
 *     2-D inputs): read and write 2e per output element; its backward
 *     sums the gradient over the tokens for the bias (read e);
 *   ParallelAttention.forward: the context's
 *     permute(2, 0, 1, 3).contiguous(), a copy of T x h/t (2e); in the
 *     backward, baddbmm's gradients are bmm(...) * alpha
 *     (tools/autograd/derivatives.yaml, baddbmm: batch1 and batch2), two
 *     scalings of T x h/t (2e each), and the gradients of the three
 *     views split_tensor_along_last_dim made are joined by torch.split's
 *     backward, at::cat, into [s, b, 3h/t] (read e, write e);
 *   bias_dropout_add_fused_train (transformer.py, torch.jit.script with
 *     the legacy fuser): one kernel forward, which also writes the 1-byte
 *     dropout mask (symbolic_script.cpp's CUDA lowering of dropout,
 *     rand_like < 1 - p); backward: the fused grad * mask / (1 - p)
 *     (read e + 1, write e) and the bias gradient, the sum over tokens
 *     that autograd makes for attention_bias.expand_as(residual) (read
 *     e), besides the residual's accumulation weft already had;
 *   GeLUFunction.backward (fused_bias_gelu.py) returns `tmp, tmp`: autograd
 *     sums the second over the tokens for the [4h/t] bias (read e).
 * The layer norm (apex's two-pass backward) is weft's norm kernel, whose
 * measured efficiency includes the gamma/beta pass.  Dense GPT layers
 * only; MoE layers and models without biases run as fused. */
static bool jit(const struct ctx *c)
{
  return c->p->jit && c->m->gpt_style && c->ld.experts <= 1;
}

/* Whether linear `w` is the attention's QKV with its bias (jit above). */
static bool jit_qkv(const struct ctx *c, const struct lweight *w)
{
  return jit(c) && w->role == LW_ATTN && w->split == LW_COL &&
         model_qkv_bias(c->m);
}

/* Megatron-LM's scaled_upper_triang_masked_softmax (fused_kernels/
 * scaled_upper_triang_masked_softmax.h, v2.5; FusedScaleMaskSoftmax
 * picks it for a causal mask up to 2048 keys): a warp per row of the
 * [b*np, sq, sk] scores; row i loads only its i + 1 unmasked elements
 * (local_seq = blockIdx.x + 1) and stores the whole row (zeros past the
 * diagonal); the backward loads the output gradient and the softmax output
 * of the same triangle and stores the whole row.  Its task carries the row
 * length as k: the cost model rates it as a row softmax (costmodel.c,
 * SOFTMAX_*_EFF), not at the element-wise ceiling. */
static long jit_softmax(struct ctx *c, int phase, long layer, bool bwd)
{
  double B = c->b * c->a / c->t, S = c->S, e = c->e;
  double tri = B * S * (S + 1) / 2, all = B * S * S;
  struct task t = {.kind = TK_KERNEL, .op = KK_ELEMWISE, .stream = ST_COMPUTE,
                   .phase = (uint8_t)phase, .layer = (int32_t)layer,
                   .k = (uint32_t)S,
                   .bytes = e * ((bwd ? 2 : 1) * tri + all)};
  return bld_add(c, &t);
}

/* Attention before FlashAttention (Megatron-LM 2021): scores materialized
 * in HBM, a fused scale-mask-softmax kernel, dropout with a 1-byte mask. */
static long attention_unfused(struct ctx *c, int phase, long layer, bool bwd)
{
  double B = c->b * c->a / c->t, S = c->S, D = c->d, e = c->e;
  double sc = B * S * S; /* scores */
  double ctx = B * S * D; /* the context, T x h/t */
  if (!bwd) {
    bmm(c, phase, layer, B, S, S, D);                       /* Q K^T */
    if (jit(c))
      jit_softmax(c, phase, layer, false);
    else
      bld_kernel(c, KK_ELEMWISE, phase, layer, 0, e * 2 * sc); /* softmax */
    bld_kernel(c, KK_ELEMWISE, phase, layer, 0, (e * 2 + 1) * sc); /* dropout */
    long pv = bmm(c, phase, layer, B, S, D, S);             /* P V */
    if (!jit(c))
      return pv;
    /* permute(2, 0, 1, 3).contiguous() */
    return bld_kernel(c, KK_ELEMWISE, phase, layer, 0, 2 * e * ctx);
  }
  bmm(c, phase, layer, B, S, S, D);                         /* dP = dO V^T */
  bmm(c, phase, layer, B, S, D, S);                         /* dV = P^T dO */
  bld_kernel(c, KK_ELEMWISE, phase, layer, 0, (e * 2 + 1) * sc); /* dropout */
  if (jit(c))
    jit_softmax(c, phase, layer, true);
  else
    bld_kernel(c, KK_ELEMWISE, phase, layer, 0, e * 3 * sc);    /* softmax */
  bmm(c, phase, layer, B, S, D, S);                         /* dQ = dS K */
  if (jit(c)) /* * alpha */
    bld_kernel(c, KK_ELEMWISE, phase, layer, 0, 2 * e * ctx);
  long dk = bmm(c, phase, layer, B, S, D, S);               /* dK = dS^T Q */
  if (!jit(c))
    return dk;
  bld_kernel(c, KK_ELEMWISE, phase, layer, 0, 2 * e * ctx); /* * alpha */
  /* torch.split's backward: cat of dQ, dK, dV */
  return bld_kernel(c, KK_ELEMWISE, phase, layer, 0, 2 * e * 3 * ctx);
}

static long attention_block(struct ctx *c, int phase, long layer, bool bwd);

/* Ring attention (context parallelism): the rank's queries meet the
 * key/value blocks of every CP rank in turn; while one block is used, the
 * next arrives from the previous rank (stream "cp"), the exchange of block
 * j+1 overlapping the attention on block j.  Causal load balancing (each
 * rank holds chunks i and 2cp-1-i) gives every step the same work: 1/cp of
 * the rank's share.  Backward passes the key/value gradients along with
 * the blocks. */
static long attention_cp(struct ctx *c, int phase, long layer, bool bwd)
{
  long cp = c->p->cp, w = -1, prev = -1;
  /* K and V of the local part */
  double kv = model_mla(c->m) ? c->T * (c->kv + c->vw) / c->t * c->e
                              : 2 * c->T * c->kv / c->t * c->e;
  for (long j = 0; j < cp; j++) {
    if (j + 1 < cp) {
      long x = bld_coll(c, CO_SENDRECV, GK_CP, ST_CP, phase, layer,
                        bwd ? 2 * kv : kv);
      if (c->last_compute >= 0)
        graph_dep(c->g, c->s, c->last_compute);
      if (j > 0)
        bld_wait_for(c, prev);
      prev = x;
    } else if (j > 0) {
      bld_wait_for(c, prev);
    }
    w = attention_block(c, phase, layer, bwd);
  }
  return w;
}

long bld_attention(struct ctx *c, int phase, long layer, bool bwd)
{
  if (c->p->cp > 1)
    return attention_cp(c, phase, layer, bwd);
  return attention_block(c, phase, layer, bwd);
}

static long attention_block(struct ctx *c, int phase, long layer, bool bwd)
{
  if (c->p->unfused_attention)
    return attention_unfused(c, phase, layer, bwd);
  double heads = c->a / c->t;
  /* c->S: the local sequence (all of it without CP, one CP rank's share
   * with it, each block being as long as the local part). */
  /* Q is heads x head_dim wide (the hidden size unless head_dim is set).
   * MLA: QK^T over query/key heads of nope + rope, PV over value heads of
   * v_dim (Megatron-LM's num_floating_point_operations, MLA branch). */
  double qw = c->a * c->d;
  bool mla = model_mla(c->m);
  double flops = mla ? 2 * c->b * c->S * c->S * c->a * (c->d + c->dv) / c->t
                     : 4 * c->b * c->S * c->S * qw / c->t;
  /* A sliding window or chunks: the kernel computes only the blocks of
   * query-key pairs inside them (FlashAttention 2.3's window_size,
   * flash_attn_interface.py, skips the blocks the window masks whole;
   * FlashAttention-3 and cuDNN the same), so its FLOPs and time scale
   * with the pairs attended against the full causal mask's. */
  /* The keys a query block meets: the window's or chunk's (the cost
   * model rates the kernel at that length, costmodel.c attn_time). */
  double keys = c->S;
  enum attn_span span = model_layer_span(c->m, layer);
  if (span != SPAN_FULL) {
    flops *= model_layer_pairs(c->m, layer, c->S) / (c->S * (c->S + 1) / 2);
    double w = (double)(span == SPAN_WINDOW ? c->m->window : c->m->attn_chunk);
    keys = w < keys ? w : keys;
  }
  double q = c->T * qw / c->t, kv = c->T * c->kv / c->t;
  /* Read Q, K, V, write O (forward); MLA's V and O are v_dim a head. */
  double io = mla ? q + kv + c->T * (c->vw + c->a * c->dv) / c->t
                  : 2 * q + 2 * kv;
  struct task t = {.kind = TK_KERNEL, .op = bwd ? KK_ATTN_BWD : KK_ATTN,
                   .stream = ST_COMPUTE, .phase = (uint8_t)phase,
                   .layer = (int32_t)layer, .m = (uint32_t)c->S,
                   .n = (uint32_t)keys, .k = (uint32_t)c->d,
                   .batch = (uint32_t)(c->b * heads),
                   /* Backward: twice the forward matrix FLOPs (Megatron's
                    * count); reads Q, K, V, O, dO, writes dQ, dK, dV. */
                   .flops = bwd ? 2 * flops : flops,
                   .bytes = c->e * (bwd ? 2 * io : io)};
  return bld_add(c, &t);
}

/* The tensor-parallel exchange after a row-parallel GEMM (forward) or a
 * column-parallel data gradient (backward). */
static void tp_reduce(struct ctx *c, int phase, long layer)
{
  if (c->t > 1)
    bld_coll(c, c->p->sp ? CO_REDUCE_SCATTER : CO_ALLREDUCE, GK_TP, ST_COMPUTE,
             phase, layer, c->e * c->T * c->h);
}

/* With sequence parallelism, the all-gather before a column-parallel GEMM
 * (forward) or after a row-parallel data gradient (backward). */
static void sp_gather(struct ctx *c, int phase, long layer)
{
  if (c->t > 1 && c->p->sp)
    bld_coll(c, CO_ALLGATHER, GK_TP, ST_COMPUTE, phase, layer,
             c->e * c->T * c->h);
}

/* MoE token exchange over the expert-parallel group: Megatron-Core's
 * dispatchers in builder_moe.c, or (basic) each rank's buffer is
 * its routed token copies, tokens x top-k x hidden (nccl-tests all-to-all
 * size; (EP-1)/EP of it leaves the rank). */
static void a2a(struct ctx *c, const struct lstep *st, int phase, long layer)
{
  if (bld_moe_core(c))
    bld_moe_exchange(c, st, phase, layer);
  else if (c->p->ep > 1)
    bld_coll(c, CO_ALLTOALL, GK_EP, ST_COMPUTE, phase, layer,
             c->e * c->T * c->topk * c->h);
}

/* FP8 linear layers (Transformer Engine): the casts their GEMMs need that
 * no neighbouring kernel does.  MXFP8 (below): the weights' FP8 copies
 * once per iteration, on the first micro-batch; the projection's input in
 * both orientations; every linear layer's output gradient, cast in both
 * orientations, in the backward.  Delayed scaling: te_* below, kernel by
 * kernel from Transformer Engine's code. */
static bool fp8(const struct ctx *c) { return c->m->dtype == DTYPE_FP8; }

/* The MXFP8 recipe (plan.h, enum fp8_recipe) writes every operand in both
 * orientations with one 1-byte scale per 32 elements: 2 x (1 + 1/32)
 * bytes per element, and keeps no amax history. */
#define MXFP8_BOTH (2 * (1 + 1.0 / 32))

static bool mxfp8(const struct ctx *c)
{
  return fp8(c) && c->p->fp8_recipe == FP8_MXFP8;
}

/* ---- FP8 delayed scaling, as Transformer Engine runs it on Hopper ----
 *
 * NVIDIA/TransformerEngine d0067d0 (2026-08), transformer_engine/pytorch,
 * with Megatron-Core's TE layer spec (megatron/core/models/gpt/
 * gpt_layer_specs.py: linear_qkv and linear_fc1 are
 * TELayerNormColumnParallelLinear, linear_proj and linear_fc2
 * TERowParallelLinear, core_attention TEDotProductAttention in BF16
 * (fp8_dot_product_attention off); the SwiGLU or GELU between FC1 and FC2
 * is Megatron's own bias_swiglu_impl/bias_gelu in BF16,
 * use_te_activation_func off: transformer/mlp.py).  Per layer and
 * micro-batch, forward:
 *   norm (LayerNormLinear): rmsnorm_fwd/layernorm_fwd with the FP8
 *     quantizer, the FULLY_FUSED path for Float8Quantizer (csrc/extensions/
 *     normalization.cpp): the norm writes FP8 (read 2, write 1 byte per
 *     element), then nvte_rmsnorm_fwd "Compute FP8 transpose if required"
 *     (common/normalization/rmsnorm/rmsnorm_api.cpp): an nvte_transpose of
 *     the FP8 output, read 1, write 1, because the input quantizer wants
 *     column-wise data for the weight gradient (layernorm_linear.py,
 *     input_quantizer.set_usage(columnwise=backward_needs_input)) and
 *     Hopper's FP8 GEMM takes only the TN layout (float8_tensor.py: the
 *     "_transpose" buffer unless is_non_tn_fp8_gemm_supported);
 *   the projection's and FC2's inputs (BF16 from attention and from
 *     Megatron's activation): Linear's input_quantizer with row- and
 *     column-wise usage (module/linear.py, "Do not all-gather input
 *     tensor"), one cast-transpose: read 2, write 1 + 1;
 *   the weights: on the first micro-batch (is_first_microbatch, which
 *     Megatron-Core passes; update_workspace in linear.py) a cast-transpose
 *     of each BF16 weight, read 2, write 1 + 1; with FP8 parameters
 *     (fp8_params, NeMo's bf16_with_fp8_mixed fp8_param_gather=True) no
 *     cast, but after each parameter all-gather Megatron's
 *     param_and_grad_buffer.py calls post_all_gather_processing
 *     (tensor/utils.py), which for a Float8Tensor runs _create_transpose:
 *     read 1, write 1 per parameter, once per step;
 * backward: each linear's output gradient, quantize with both usages
 *   (grad_output_preprocess, base.py): read 2, write 1 + 1 (fp8_grad_cast);
 * at the end of the forward of a model chunk (fp8_autocast exit,
 *   quantization.py autocast_exit -> reduce_and_update_fp8_tensors) and of
 *   its backward (the first module's backward, linear.py and
 *   layernorm_linear.py): torch.cat of the amaxes, an all-reduce MAX over
 *   the amax group and tex.fused_amax_and_scale_update_after_reduction
 *   (te_amax_update).
 * Nothing else: attention, RoPE, the residuals and the norms' backward stay
 * BF16; the GEMMs write BF16. */
static bool te_delayed(const struct ctx *c)
{
  return fp8(c) && c->p->fp8_recipe == FP8_DELAYED;
}

/* The FP8 transpose of a norm's output (nvte_transpose after the norm,
 * rmsnorm_api.cpp / layernorm_api.cpp): read 1, write 1 byte per element.
 * With SP at TP > 1 (te_sp_gathered) the norm writes row-wise data only,
 * "All-gather is not supported with FP8 column-wise data"
 * (layernorm_linear.py forward), the all-gather carries FP8, and the
 * backward gathers the saved FP8 rows again (sp_regather_bytes) and
 * transposes the gathered T x h input for the weight gradient
 * (layernorm_linear.py backward: gather_along_first_dim, then
 * update_usage(columnwise_usage=True) on the gathered tensor). */
static void te_fp8_transpose(struct ctx *c, int phase, long l, double elems)
{
  bld_kernel(c, KK_ELEMWISE, phase, l, 0, 2 * elems);
}

/* A linear's BF16 input quantized with both usages: read 2 (e), write
 * 1 + 1 bytes per element (Linear's input_quantizer, linear.py). */
static void te_input_cast(struct ctx *c, int phase, long l, double elems)
{
  bld_kernel(c, KK_ELEMWISE, phase, l, 0, (c->e + 2) * elems);
}

/* Amax history rows that NeMo's bf16_with_fp8_mixed keeps per FP8 tensor
 * (nemo/collections/llm/recipes/precision/mixed_precision.py:
 * fp8_amax_history_len = 1024, fp8_amax_compute_algo = "max"). */
#define TE_AMAX_HISTORY 1024.0

/* The FP8 tensors of the model chunk being built: a TE module keeps, per
 * GEMM, 3 forward (input, weight, output) and 2 backward (output
 * gradient, input gradient) scaling entries (base.py, init_fp8_metadata:
 * num_gemms * 3 and * 2); a routed linear is one GroupedLinear of as many
 * GEMMs as the rank's local experts. */
static double te_chunk_gemms(const struct ctx *c)
{
  long first, count;
  plan_chunk_layers(c->p, c->m, c->s, c->chunk, &first, &count);
  double local = c->p->ep > 1 ? (double)c->m->experts / (double)c->p->ep
                              : (double)c->m->experts;
  double gemms = 0;
  int kind = -1;
  double per = 0;
  struct layer_desc d;
  for (long l = first; l < first + count; l++) {
    int k = model_layer_kind(c->m, l);
    if (k != kind) {
      layer_describe_kind(c->m, k, &d);
      kind = k;
      per = 0;
      for (int i = 0; i < d.nw; i++)
        if (d.w[i].cast)
          per += d.w[i].routed ? local : 1;
    }
    gemms += per;
  }
  return gemms;
}

/* reduce_and_update_fp8_tensors (quantization.py) at the end of a chunk's
 * forward (`fwd`) or backward: torch.cat of the amaxes (read and write 4
 * bytes each), an all-reduce MAX of them over Megatron's amax group
 * (fp8_utils.py get_fp8_context: get_amax_reduction_group(
 * with_context_parallel=True), the tensor-, data- and context-parallel
 * ranks, below; a torch.distributed.all_reduce, so the compute stream
 * waits for it), then one fused kernel that rolls each tensor's amax history and
 * writes its scale (read and write the history, 4 bytes a row).
 * The group is parallel_state.py's _TENSOR_AND_DATA_PARALLEL_GROUP_WITH_CP
 * (get_amax_reduction_group(with_context_parallel=True), tp_only_amax_red
 * off by default): every TP, DP and CP rank of the pipeline stage.  weft
 * runs that one all-reduce as two, over TP and then over DP x CP: the
 * maximum is the same, and a group spanning TP cannot be replayed under
 * TP symmetry, which simulates one rank of each node-wide TP group
 * (sim/engine.c, arrive_coll).  NEEDSWORK: NCCL all-reduces these few KiB
 * over the whole group at once (a tree: a chain through each node's GPUs,
 * a tree across the nodes); two latency-bound all-reduces in turn cost
 * up to one such latency more, where TP and DP x CP share a node. */
static void te_amax_update(struct ctx *c, int phase, long l, bool fwd)
{
  double n = te_chunk_gemms(c) * (fwd ? 3 : 2);
  if (n <= 0)
    return;
  bld_kernel(c, KK_ELEMWISE, phase, l, 0, 2 * 4 * n);
  if (c->t > 1)
    bld_coll(c, CO_ALLREDUCE, GK_TP, ST_COMPUTE, phase, l, 4 * n);
  if (c->p->dp * c->p->cp > 1)
    bld_coll(c, CO_ALLREDUCE, GK_DPCP, ST_COMPUTE, phase, l, 4 * n);
  bld_kernel(c, KK_ELEMWISE, phase, l, 0, 2 * 4 * TE_AMAX_HISTORY * n + 4 * n);
}

/* Whether layer `l` is the first or last of the chunk being built. */
static bool chunk_edge(const struct ctx *c, long l, bool last)
{
  long first, count;
  plan_chunk_layers(c->p, c->m, c->s, c->chunk, &first, &count);
  return l == (last ? first + count - 1 : first);
}

/* Bytes written per element cast in both orientations. */
static double fp8_both(const struct ctx *c)
{
  return mxfp8(c) ? MXFP8_BOTH : 2;
}

/* The weights a rank casts per iteration: the layer's own (c->lp) and,
 * with EP, its routed experts' (c->lx, split over ETP: Transformer
 * Engine's GroupedLinear casts each local expert's weight on the first
 * micro-batch as Linear does, grouped_linear.py; with EP 1, c->lp holds
 * them, split over TP, and c->lx is 0). */
static double fp8_cast_params(const struct ctx *c)
{
  return c->lp + c->lx;
}

static void fp8_fwd_casts(struct ctx *c, int phase, long l)
{
  if (!fp8(c))
    return;
  if (te_delayed(c)) {
    /* (Megatron-FSDP transposes FP8 parameters after every backward
     * gather instead: builder_zero.c, mfsdp_pass.) */
    bool mf8 = c->p->fp8_params && c->p->zero == 3 &&
               shard_impl_mfsdp(c->p->shard_impl);
    if (phase == PH_FWD && c->mb == 0 && !mf8)
      bld_kernel(c, KK_ELEMWISE, phase, l, 0,
                 (c->p->fp8_params ? 1 + 1 : 2 + 2) * fp8_cast_params(c));
    return; /* the projection's input: after attention (step_fwd) */
  }
  if (phase == PH_FWD && c->mb == 0)
    bld_kernel(c, KK_ELEMWISE, phase, l, 0,
               (2 + fp8_both(c)) * fp8_cast_params(c));
  bld_kernel(c, KK_ELEMWISE, phase, l, 0,
             (2 + MXFP8_BOTH) * c->T * c->h / c->t);
}

static void fp8_grad_cast(struct ctx *c, long l, double elements)
{
  if (fp8(c))
    bld_kernel(c, KK_ELEMWISE, PH_BWD, l, 0, (2 + fp8_both(c)) * elements);
}

/* Eager PyTorch (plan fusion=eager) runs RMSNorm, SwiGLU and RoPE as
 * sequences of ATen ops, each a kernel of its own reading and writing
 * HBM; fused kernels (Transformer Engine, Megatron-Core's fusions,
 * torch.compile) run each as one.  Bytes per element of the tensor, e the
 * activation's width, in op order:
 *   RMSNorm forward (pytorch/pytorch aten/src/ATen/native/layer_norm.cpp,
 *     rms_norm_symint, the composite eager path): x.to(float) e+4, pow 8,
 *     mean 4, then per row add eps and rsqrt, x * rsqrt 8, .type_as 4+e,
 *     * weight 2e;
 *   its autograd backward: * weight 2e (and weight's gradient 2e),
 *     type_as 4+e, * rsqrt 8 and the rsqrt's gradient 8, mean's and pow's
 *     8, the two gradients of x summed 12, to(float) 4+e;
 *   SwiGLU (per element of f): silu 2e, * up 3e; backward: mul's two
 *     gradients 3e each, silu's 3e;
 *   RoPE (torchtitan's apply_rotary_emb, per element of Q and of K):
 *     .float() e+4, complex multiply 8, .type_as 4+e; the backward the
 *     same three.
 * A LayerNorm (GPT style) is one kernel in eager PyTorch too
 * (native_layer_norm). */
static void eager_ops(struct ctx *c, int phase, long l, const double *bpe,
                      int n, double elems)
{
  for (int i = 0; i < n; i++)
    bld_kernel(c, KK_ELEMWISE, phase, l, 0, bpe[i] * elems);
}

static bool eager_rms(const struct ctx *c)
{
  return c->p->eager && !c->m->gpt_style;
}

/* A norm over `rows` rows of `width` elements, forward or backward. */
static void norm_rows(struct ctx *c, int phase, long l, double rows,
                      double width, bool bwd)
{
  double e = c->e, n = rows * width;
  if (!eager_rms(c)) {
    bld_kernel(c, KK_NORM, phase, l, 0, e * (bwd ? 3 : 2) * n);
    return;
  }
  if (!bwd) {
    const double fwd[] = {e + 4, 8, 4, 8, 4 + e, 2 * e};
    eager_ops(c, phase, l, fwd, 3, n);
    bld_kernel(c, KK_ELEMWISE, phase, l, 0, 8 * rows); /* add_(eps) */
    bld_kernel(c, KK_ELEMWISE, phase, l, 0, 8 * rows); /* rsqrt */
    eager_ops(c, phase, l, fwd + 3, 3, n);
    return;
  }
  const double b[] = {2 * e, 2 * e, 4 + e, 8, 8, 8, 12, 4 + e};
  eager_ops(c, phase, l, b, 8, n);
}

/* A norm over `rows` rows of the hidden size. */
static void norm_pass(struct ctx *c, int phase, long l, double rows, bool bwd)
{
  norm_rows(c, phase, l, rows, c->h, bwd);
}

/* Qwen3's RMSNorm of the rank's q and k heads (layer.h, LS_QK_NORM): a
 * row per head and token, head_dim wide, like the hidden-size norm. */
static void qk_norm_pass(struct ctx *c, int phase, long l, bool bwd)
{
  double heads = (c->a * c->d + c->kv) / c->d; /* q and k heads */
  norm_rows(c, phase, l, c->T * heads / c->t, c->d, bwd);
}

/* RoPE on the rank's Q and K heads, either way.  MLA rotates the rope_dim
 * part of each query head and the one key part all heads share (DeepSeek's
 * k_pe, from kv_down_proj, on every TP rank). */
static void rope_pass(struct ctx *c, int phase, long l)
{
  double e = c->e, q = c->T * c->a * c->d / c->t, k = c->T * c->kv / c->t;
  if (model_mla(c->m)) {
    double r = (double)model_rope_dim(c->m);
    q = c->T * c->a * r / c->t;
    k = c->T * r;
  }
  if (!c->p->eager) {
    bld_kernel(c, KK_ELEMWISE, phase, l, 0, 2 * e * (q + k));
    return;
  }
  const double ops[] = {e + 4, 8, 4 + e};
  eager_ops(c, phase, l, ops, 3, q);
  eager_ops(c, phase, l, ops, 3, k);
}

/* The token rows of the routed experts: the rank's tokens x top-k
 * (routed copies, times the busiest expert's imbalance). */
static double ffn_rows(const struct ctx *c)
{
  return bld_moe_ffn_rows(c);
}

/* The tensor-parallel split of linear `w`: a routed expert's over ETP
 * (MoE parallel folding, plan.h etp; Megatron-Core's experts.py builds
 * the experts' linears over the expert TP group, pg_collection.expt_tp),
 * the others' over TP. */
static double wsplit(const struct ctx *c, const struct lweight *w)
{
  return w && w->routed && c->p->etp > 0 ? (double)c->p->etp : c->t;
}

/* The token rows of a linear step's GEMM: routed experts' copies, or the
 * rank's tokens (a dense FFN, a shared expert, attention). */
static double linear_rows(const struct ctx *c, const struct lweight *w)
{
  return w->routed                ? ffn_rows(c)
         : w->role == LW_ROUTER ? bld_moe_router_rows(c)
                                : c->T;
}

/* A GEMM of linear `w`: the routed experts' through ffn_gemm (grouped over
 * local experts), the others plain. */
static long linear_gemm(struct ctx *c, const struct lweight *w, int phase,
                        long l, double M, double N, double K, bool wgrad)
{
  long i = w->routed ? ffn_gemm(c, phase, l, M, N, K, wgrad)
                     : bld_gemm(c, phase, l, M, N, K);
  graph_set_role(c->g, c->s, i,
                 graph_role(w->name, w->routed,
                            phase != PH_BWD ? GP_FWD
                            : wgrad         ? GP_WGRAD
                                            : GP_DGRAD));
  return i;
}

/* MLA's norms of the compressed q and kv (layer.h, LS_LATENT_NORM), over
 * every token on each TP rank (the down-projections are replicated). */
static void latent_norm_pass(struct ctx *c, int phase, long l, bool bwd)
{
  double w = (double)(c->m->q_lora + c->m->kv_lora);
  norm_rows(c, phase, l, c->T, w, bwd);
}

/* Whether norm step `st` is a LayerNormLinear's under delayed scaling
 * (te_* above): the next linear is a dense attention or FFN input
 * projection (TELayerNormColumnParallelLinear).  Not an MoE layer's
 * pre-MLP norm, a TENorm writing BF16 for the router (gpt_layer_specs.py,
 * pre_mlp_layernorm with an MoE MLP), whose experts' GroupedLinear
 * quantizes the dispatched rows itself, nor the norm before MLA's
 * down-projections, TELinear (backend.linear()) that quantize their BF16
 * input themselves: te_linear_cast.  Nor eager norms (plan fusion=eager:
 * PyTorch's, not TE's). */
static bool te_norm_fp8(const struct ctx *c, const struct lstep *st)
{
  if (!te_delayed(c) || eager_rms(c))
    return false;
  /* an MoE block's norm, whatever runs first after it (the router, or
   * with Megatron-Core's dispatchers the shared experts: bld_moe_order) */
  for (const struct lstep *x = st + 1;
       x < c->ld.st + c->ld.ns && x->kind != LS_NORM; x++)
    if (x->kind == LS_LINEAR && c->ld.w[x->w].role == LW_ROUTER)
      return false;
  for (const struct lstep *x = st + 1; x < c->ld.st + c->ld.ns; x++) {
    if (x->kind != LS_LINEAR)
      continue;
    const struct lweight *w = &c->ld.w[x->w];
    return w->cast && !w->routed && w->role != LW_ROUTER &&
           w->split == LW_COL;
  }
  return false;
}

/* Whether linear `w` quantizes its BF16 input itself under delayed
 * scaling, a cast-transpose of its rows (te_input_cast: row-wise for the
 * GEMM, column-wise for the weight gradient, the TN layout Hopper needs):
 *   the routed experts' FC1, TE's GroupedLinear (grouped_linear.py,
 *     _GroupedLinear.forward: tex.split_quantize of the dispatched rows
 *     with each GEMM's input quantizer, columnwise usage when the weight
 *     needs a gradient), over the experts' rows after the dispatch;
 *   MLA's down-projections, TELinear in parallel_mode 'duplicated'
 *     (module/linear.py, _Linear.forward: input_quantizer on a BF16
 *     input), each its own cast of the same input;
 *   an MoE layer's shared experts' FC1, TEColumnParallelLinear
 *     (SharedExpertMLP) after the BF16 pre-MLP norm; NEEDSWORK: with SP
 *     TE casts the local rows and gathers them in FP8 (linear.py,
 *     gather_along_first_dim with the quantizer); here the BF16 gather
 *     stays and the gathered rows are cast.
 * FC2's input (Megatron's activation, BF16) is cast at LS_ACT; the dense
 * input projections' by their LayerNormLinear's norm (te_norm_fp8). */
static bool te_linear_cast(const struct ctx *c, const struct lweight *w)
{
  if (!te_delayed(c) || !w->cast)
    return false;
  return (w->routed && w->split == LW_COL) ||
         (w->role == LW_ATTN && w->split == LW_REPL) ||
         (w->role == LW_FFN && w->split == LW_COL && c->ld.experts > 1);
}

/* Whether a LayerNormLinear gathers its input over TP (SP at TP > 1). */
static bool te_sp_gathered(const struct ctx *c)
{
  return c->t > 1 && c->p->sp;
}

/* Whether row-parallel linear `w`'s output gradient is all-gathered in
 * FP8 in its backward (SP at TP > 1, a dense layer): grad_output_preprocess
 * (base.py, "FP8 with all-gather") calls gather_along_first_dim with the
 * quantizer, which casts the local rows (read 2, write 1), gathers the FP8
 * data (1 byte an element) and transposes the gathered T x h for the
 * weight gradient (read 1, write 1), in place of a BF16 gather and a
 * cast-transpose of the gathered rows.  (MoE layers keep the latter.) */
static bool te_grad_gathered(const struct ctx *c, const struct lweight *w)
{
  return te_delayed(c) && te_sp_gathered(c) && c->ld.experts <= 1 &&
         w->cast && !w->routed && w->split == LW_ROW;
}

/* The norm of a LayerNormLinear in FP8: read e, write 1 byte per element
 * (the FULLY_FUSED path, normalization.cpp), then its FP8 transpose
 * unless the output is all-gathered (te_fp8_transpose). */
static void te_norm_fwd(struct ctx *c, int phase, long l, double rows)
{
  bld_kernel(c, KK_NORM, phase, l, 0, (c->e + 1) * rows * c->h);
  if (!te_sp_gathered(c))
    te_fp8_transpose(c, phase, l, rows * c->h);
}

/* ---- A column-parallel linear's input, gathered again in its backward ----
 *
 * With sequence parallelism a column-parallel linear (QKV, FC1, a shared
 * expert's FC1) all-gathers its input over TP in the forward and keeps
 * only the rank's shard for the backward; the weight gradient needs the
 * whole T x h input, so the backward all-gathers it again:
 *   Megatron-LM (megatron/core/tensor_parallel/layers.py at d98e8a6,
 *     LinearWithGradAccumulationAndAsyncCommunication: forward
 *     ctx.save_for_backward(input, weight) with the local input, the
 *     gathered total_input used and dropped; backward, with
 *     ctx.sequence_parallel, dist_all_gather_func(all_gather_buffer,
 *     input, async_op=True) before grad_output.matmul(weight), and
 *     handle.wait() before the weight gradient; the same at cfd2e21, 2022);
 *   Transformer Engine (pytorch/module/layernorm_linear.py at d0067d0:
 *     forward ctx.ln_out_needs_gather = weight.requires_grad and
 *     parallel_mode == "column" and sequence_parallel, ln_out (the local
 *     norm output, FP8 row-wise data when the model is FP8) saved;
 *     backward gather_along_first_dim(ln_out, async_op=True, quantizer)
 *     before the data gradient, or with ub_bulk_dgrad the userbuffers
 *     bulk all-gather (builder_tpo.c, bld_tpo_bulk, which carries it);
 *     linear.py the same for Linear).  In FP8 the gather moves the saved
 *     FP8 rows, 1 byte an element (distributed.py _all_gather_fp8: per-
 *     tensor FP8 gathers row-wise data only,
 *     set_quantizer_usage_for_wgrad_all_gather), and the gathered T x h is
 *     transposed for the weight gradient (update_usage(columnwise_usage=
 *     True) after the wait; te_fp8_transpose in step_bwd's LS_NORM).
 * Recomputation does not spare it: Megatron's full recomputation
 * (tensor_parallel/random.py, CheckpointFunction.backward) reruns the
 * layer's forward, whose linears save the local input again, and its
 * selective recomputation checkpoints the attention core only
 * (CheckpointWithoutOutput / core_attention), not the linears.
 * The bytes are the forward's gather's (step_fwd, LS_TP_IN).  Without
 * --async-tp-grad it blocks the compute stream like weft's other TP
 * collectives, before the data gradient; with it (async_linear_bwd) it
 * runs beside the data-gradient GEMM.
 * torchtitan's DTensor tensor parallelism differs: ColwiseParallel's
 * matmul saves the gathered (replicated) input itself, so its backward
 * gathers nothing, except that its op-level selective checkpointing
 * recomputes the all-gather, which is outside the save list
 * (torchtitan/distributed/activation_checkpoint.py at b5bcd76,
 * _get_default_save_ops: only reduce_scatter_tensor and all_to_all_single
 * are saved "to avoid re-communication"): with sel_ops that recomputed
 * gather stands here. */

/* Whether torchtitan's DTensor keeps the gathered input (above). */
static bool dtensor_keeps_gathered(const struct ctx *c)
{
  return c->p->mem_framework == MF_TORCHTITAN &&
         !(c->p->recompute == RECOMP_SELECTIVE && c->p->sel_ops);
}

/* Whether step i is a column-parallel linear split over TP whose input the
 * TP_IN step just before it gathers (with SP) or whose input gradient it
 * reduces: QKV, FC1, a shared expert's FC1; not MLA's replicated
 * down-projections, the router, or routed experts. */
static bool col_after_tp_in(const struct ctx *c, int i)
{
  if (c->t <= 1 || i < 1)
    return false;
  const struct lstep *st = &c->ld.st[i];
  if (st->kind != LS_LINEAR || st[-1].kind != LS_TP_IN || st->w < 0)
    return false;
  const struct lweight *w = &c->ld.w[st->w];
  return w->split == LW_COL && !w->routed && w->role != LW_ROUTER &&
         wsplit(c, w) == c->t && !bld_moe_skips_tp(c, &st[-1]);
}

/* Bytes of the all-gather of step i's input in its backward (above), 0
 * when there is none: the forward's, 1 byte an element when the norm
 * before wrote FP8 (step_fwd, LS_TP_IN), else e. */
static double sp_regather_bytes(const struct ctx *c, int i)
{
  if (!c->p->sp || !col_after_tp_in(c, i) || dtensor_keeps_gathered(c))
    return 0;
  const struct lstep *st = &c->ld.st[i];
  bool f8 = te_sp_gathered(c) && i >= 2 && st[-2].kind == LS_NORM &&
            te_norm_fp8(c, st - 2);
  return (f8 ? 1 : c->e) * c->T * c->h;
}

void bld_layer_select(struct ctx *c, long layer)
{
  if (c->alike)
    return;
  int k = model_layer_kind(c->m, layer);
  if (k == c->kind)
    return;
  const struct model *m = c->m;
  const struct plan *p = c->p;
  layer_describe_kind(m, k, &c->ld);
  bld_moe_order(c);
  c->kind = k;
  c->lp = layer_params_rank_kind(m, k, p->tp, p->ep);
  c->lx = p->ep > 1 ? layer_expert_params_rank_kind(m, k, p->tp, p->ep) : 0;
  c->lp -= c->lx;
  if (p->ep > 1) /* MoE parallel folding: the experts split over ETP */
    c->lx = layer_expert_params_rank_kind(m, k, plan_etp(p), p->ep);
}

/* Forward of step `st` of layer `l` in `phase` (PH_FWD, PH_RECOMP). */
static void step_fwd(struct ctx *c, const struct lstep *st, int phase, long l)
{
  double e = c->e, Tl = c->T_local, h = c->h;
  const struct lweight *w = st->w >= 0 ? &c->ld.w[st->w] : NULL;
  double N, K;
  switch (st->kind) {
  case LS_FP8_CASTS:
    fp8_fwd_casts(c, phase, l);
    break;
  case LS_NORM:
    if (te_norm_fp8(c, st)) {
      te_norm_fwd(c, phase, l, Tl);
      break;
    }
    norm_pass(c, phase, l, Tl, false);
    break;
  case LS_TP_IN:
    /* a LayerNormLinear's input is gathered in FP8, 1 byte an element */
    if (te_sp_gathered(c) && st > c->ld.st && st[-1].kind == LS_NORM &&
        te_norm_fp8(c, st - 1)) {
      bld_coll(c, CO_ALLGATHER, GK_TP, ST_COMPUTE, phase, l, c->T * h);
      break;
    }
    if (!bld_moe_skips_tp(c, st))
      sp_gather(c, phase, l);
    break;
  case LS_LINEAR:
    if (c->pre_linear)
      c->pre_linear(c, l, st->w, phase);
    lweight_gemm_nk(w, wsplit(c, w), &N, &K);
    if (te_linear_cast(c, w))
      te_input_cast(c, phase, l, linear_rows(c, w) * K);
    linear_gemm(c, w, phase, l, linear_rows(c, w), N, K, false);
    if (jit_qkv(c, w)) /* output += bias */
      bld_kernel(c, KK_ELEMWISE, phase, l, 0, 2 * e * linear_rows(c, w) * N);
    break;
  case LS_QK_NORM:
    qk_norm_pass(c, phase, l, false);
    break;
  case LS_ROPE:
    rope_pass(c, phase, l);
    break;
  case LS_ATTN:
    bld_attention(c, phase, l, false);
    /* the projection's input, heads x v_dim wide */
    if (te_delayed(c))
      te_input_cast(c, phase, l, c->T * c->a * c->dv / c->t);
    break;
  case LS_TP_OUT:
    if (!bld_moe_skips_tp(c, st))
      tp_reduce(c, phase, l);
    break;
  case LS_RESID: /* dropout and residual (jit: and the 1-byte mask) */
    bld_kernel(c, KK_ELEMWISE, phase, l, 0, (e * 3 + (jit(c) ? 1 : 0)) * Tl * h);
    break;
  case LS_A2A:
    a2a(c, st, phase, l);
    break;
  case LS_ACT: {
    /* w: the FC1 it follows (a routed expert's, a dense or shared MLP's) */
    double M = linear_rows(c, w), f = w->out / c->gates, t = wsplit(c, w);
    if (eager_rms(c) && c->gates == 2) {
      const double ops[] = {2 * e, 3 * e};
      eager_ops(c, phase, l, ops, 2, M * f / t);
      break;
    }
    bld_kernel(c, KK_ELEMWISE, phase, l, 0,
               e * (c->gates + 1) * M * f / t);
    /* Megatron's activation writes BF16: FC2 (TERowParallelLinear, or
     * the experts' GroupedLinear) quantizes it */
    if (te_delayed(c))
      te_input_cast(c, phase, l, M * f / t);
    break;
  }
  case LS_LATENT_NORM:
    latent_norm_pass(c, phase, l, false);
    break;
  }
}

/* Backward of step `st`; returns the weight-gradient GEMM of a linear
 * step, -1 for the others. */
static long step_bwd(struct ctx *c, const struct lstep *st, long l)
{
  const int B = PH_BWD;
  double e = c->e, Tl = c->T_local, h = c->h, t = c->t;
  const struct lweight *w = st->w >= 0 ? &c->ld.w[st->w] : NULL;
  switch (st->kind) {
  case LS_FP8_CASTS:
    break;
  case LS_NORM:
    /* the gathered input's transpose (te_fp8_transpose), which TE runs
     * before the LayerNormLinear's weight gradient: here, on the same
     * stream, after it */
    if (te_sp_gathered(c) && te_norm_fp8(c, st))
      te_fp8_transpose(c, B, l, c->T * h);
    norm_pass(c, B, l, Tl, true);
    break;
  case LS_TP_IN:
    if (!bld_moe_skips_tp(c, st))
      tp_reduce(c, B, l);
    break;
  case LS_LINEAR: {
    if (c->pre_linear)
      c->pre_linear(c, l, st->w, B);
    double M = linear_rows(c, w), N, K;
    lweight_gemm_nk(w, wsplit(c, w), &N, &K);
    if (jit_qkv(c, w)) /* the bias's gradient: a sum over the tokens */
      bld_kernel(c, KK_ELEMWISE, B, l, 0, e * M * N);
    if (te_grad_gathered(c, w))
      te_fp8_transpose(c, B, l, M * N); /* of the gathered FP8 gradient */
    else if (w->cast)
      fp8_grad_cast(c, l, M * N);
    /* the input, gathered again for the weight gradient (SP) */
    double ag = sp_regather_bytes(c, (int)(st - c->ld.st));
    if (ag > 0)
      bld_coll(c, CO_ALLGATHER, GK_TP, ST_COMPUTE, B, l, ag);
    linear_gemm(c, w, B, l, M, K, N, false); /* data gradient */
    return w->wgrad_in_out ? linear_gemm(c, w, B, l, K, N, M, true)
                           : linear_gemm(c, w, B, l, N, K, M, true);
  }
  case LS_QK_NORM:
    qk_norm_pass(c, B, l, true);
    break;
  case LS_ROPE:
    rope_pass(c, B, l);
    break;
  case LS_ATTN:
    if (c->p->recompute == RECOMP_SELECTIVE && !c->p->sel_ops)
      bld_attention(c, PH_RECOMP, l, false);
    bld_attention(c, B, l, true);
    break;
  case LS_TP_OUT:
    if (st > c->ld.st && st[-1].kind == LS_LINEAR &&
        te_grad_gathered(c, &c->ld.w[st[-1].w])) {
      bld_kernel(c, KK_ELEMWISE, B, l, 0, (e + 1) * Tl * h); /* local cast */
      bld_coll(c, CO_ALLGATHER, GK_TP, ST_COMPUTE, B, l, c->T * h);
      break;
    }
    if (!bld_moe_skips_tp(c, st))
      sp_gather(c, B, l);
    break;
  case LS_RESID:
    if (jit(c)) {
      /* the fused dropout backward, then the bias's gradient */
      bld_kernel(c, KK_ELEMWISE, B, l, 0, (e * 2 + 1) * Tl * h);
      bld_kernel(c, KK_ELEMWISE, B, l, 0, e * Tl * h);
    }
    bld_kernel(c, KK_ELEMWISE, B, l, 0, e * 3 * Tl * h);
    break;
  case LS_A2A:
    a2a(c, st, B, l);
    break;
  case LS_ACT: {
    /* Reads dy and the G inputs, writes their G gradients (GELU: x, dy ->
     * dx; SwiGLU: gate, up, dy -> dgate, dup). */
    double M = linear_rows(c, w), G = c->gates, f = w->out / G;
    t = wsplit(c, w);
    if (eager_rms(c) && G == 2) {
      const double ops[] = {3 * e, 3 * e, 3 * e};
      eager_ops(c, B, l, ops, 3, M * f / t);
      break;
    }
    bld_kernel(c, KK_ELEMWISE, B, l, 0, e * (2 * G + 1) * M * f / t);
    if (jit(c)) /* GeLUFunction's bias gradient, summed by autograd */
      bld_kernel(c, KK_ELEMWISE, B, l, 0, e * M * f / t);
    break;
  }
  case LS_LATENT_NORM:
    latent_norm_pass(c, B, l, true);
    break;
  }
  return -1;
}

void bld_step_fwd(struct ctx *c, const struct lstep *st, int phase, long l)
{
  step_fwd(c, st, phase, l);
}

long bld_step_bwd(struct ctx *c, const struct lstep *st, long l)
{
  return step_bwd(c, st, l);
}

/* ---- Megatron-LM's asynchronous input-gradient reduction (plan
 * async_tp_grad) ----
 *
 * LinearWithGradAccumulationAndAsyncCommunication.backward (Megatron-LM
 * megatron/mpu/layers.py at cfd2e21, 2022-04, the code of Korthikanti et
 * al. 2022; megatron/core/tensor_parallel/layers.py today, the same
 * order; Transformer Engine's Linear and LayerNormLinear backward without
 * userbuffers issue the same), for a column-parallel linear (QKV, FC1):
 *   with SP: handle = all_gather(input, async_op=True) -- the input was
 *     saved sharded, the weight gradient needs it whole;
 *   grad_input = grad_output.matmul(weight)         -- data gradient;
 *   with SP: handle.wait();
 *   handle = all_reduce(grad_input, async_op=True)  -- SP:
 *     reduce_scatter(sub_grad_input, grad_input, async_op=True);
 *   the weight-gradient GEMM (wgrad_gemm_accum_fp32 or a matmul);
 *   handle.wait() before returning the input gradient.
 * The collectives run on the process group's NCCL stream, which PyTorch's
 * ProcessGroupNCCL makes wait for the current stream's work so far; with
 * CUDA_DEVICE_MAX_CONNECTIONS=1 (which Megatron requires for this) the
 * GPU starts the kernels in issue order, so each collective is running
 * before the GEMM issued after it.  Here: the collective on a stream of
 * its own, after the last compute task; the next compute task waits for
 * it.  The GEMM beside it runs on the SMs and HBM bandwidth its NCCL
 * kernel leaves (sim/engine.c, "contention"), for as long as both run.
 * NEEDSWORK: the collectives go on stream ST_CP, the one stream besides
 * the ones of pipeline, gradient and parameter traffic whose collectives
 * the engine charges NCCL's SMs for; the attention's CP exchanges on it
 * have all completed before a linear's backward starts, so the order of
 * the stream costs nothing, but a trace shows them on "cp" and the
 * closed-form estimate (estimate.c) counts them with the CP exchange.
 * With Transformer Engine's userbuffers overlap (builder_tpo.c) these
 * steps are its bulk overlaps and never reach here. */

/* Whether the backward of linear step `st` (at index i of the layer),
 * with the TP_IN step before it, runs asynchronously. */
static bool async_dgrad(const struct ctx *c, int i)
{
  return c->p->async_tp_grad && col_after_tp_in(c, i);
}

/* A collective over TP beside the compute stream, started after the last
 * compute task. */
static long async_coll(struct ctx *c, enum coll_op op, long l, double bytes)
{
  long x = bld_coll(c, op, GK_TP, ST_CP, PH_BWD, l, bytes);
  if (c->last_compute >= 0)
    graph_dep(c->g, c->s, c->last_compute);
  return x;
}

/* Steps i (the linear) and i - 1 (its TP_IN) backward, as above; returns
 * the weight-gradient GEMM.  The kernels and bytes of step_bwd's LS_LINEAR
 * and LS_TP_IN, and with SP the input's all-gather. */
static long async_linear_bwd(struct ctx *c, int i, long l)
{
  const int B = PH_BWD;
  const struct lstep *st = &c->ld.st[i];
  const struct lweight *w = &c->ld.w[st->w];
  if (c->pre_linear)
    c->pre_linear(c, l, st->w, B);
  double M = linear_rows(c, w), N, K, e = c->e;
  lweight_gemm_nk(w, wsplit(c, w), &N, &K);
  if (jit_qkv(c, w)) /* the bias's gradient: a sum over the tokens */
    bld_kernel(c, KK_ELEMWISE, B, l, 0, e * M * N);
  if (te_grad_gathered(c, w))
    te_fp8_transpose(c, B, l, M * N);
  else if (w->cast)
    fp8_grad_cast(c, l, M * N);
  long ag = -1;
  double agb = sp_regather_bytes(c, i); /* (bld_layer_select, above) */
  if (agb > 0)
    ag = async_coll(c, CO_ALLGATHER, l, agb);
  linear_gemm(c, w, B, l, M, K, N, false); /* data gradient */
  if (ag >= 0)
    bld_wait_for(c, ag);
  long r = async_coll(c, c->p->sp ? CO_REDUCE_SCATTER : CO_ALLREDUCE, l,
                      e * c->T * c->h);
  long wg = w->wgrad_in_out ? linear_gemm(c, w, B, l, K, N, M, true)
                            : linear_gemm(c, w, B, l, N, K, M, true);
  bld_wait_for(c, r);
  return wg;
}

/* The matrices torchtitan multiplies for linear `w`, as it holds them
 * (q, k and v apart; SwiGLU's gate and up apart): their output features,
 * in order.  Returns how many. */
static int linear_pieces(const struct ctx *c, const struct lweight *w,
                         double *out)
{
  if (w->role == LW_ATTN && w->split == LW_COL) {
    out[0] = w->out - 2 * c->kv;
    out[1] = out[2] = c->kv;
    return 3;
  }
  for (int k = 0; k < w->tensors; k++)
    out[k] = w->out / w->tensors;
  return w->tensors;
}

/* torchtitan's op-level selective recomputation (plan.h, sel_ops): before
 * a layer's backward, its forward again for what the policy did not
 * save: every element-wise step, and every second matrix multiply in
 * module order, each a GEMM of its own columns.  Attention's output is
 * saved; collectives and FP8 casts are not redone. */
static void recompute_ops(struct ctx *c, long l)
{
  long mm = 0;
  for (int i = 0; i < c->ld.ns; i++) {
    const struct lstep *st = &c->ld.st[i];
    if (st->kind == LS_NORM || st->kind == LS_QK_NORM ||
        st->kind == LS_ROPE || st->kind == LS_RESID ||
        st->kind == LS_ACT) {
      step_fwd(c, st, PH_RECOMP, l);
      continue;
    }
    if (st->kind != LS_LINEAR)
      continue;
    const struct lweight *w = &c->ld.w[st->w];
    double piece[LAYER_WEIGHTS_MAX], N, K;
    int np = linear_pieces(c, w, piece);
    lweight_gemm_nk(w, wsplit(c, w), &N, &K);
    for (int k = 0; k < np; k++)
      if (++mm % 2 == 0)
        linear_gemm(c, w, PH_RECOMP, l, linear_rows(c, w),
                    w->split == LW_COL ? piece[k] / wsplit(c, w) : N, K,
                    false);
  }
}

/* The layer's steps (layer.h) in order. */
static void layer_fwd(struct ctx *c, long l, int phase)
{
  bld_layer_select(c, l);
  for (int i = 0, k; i < c->ld.ns; i += k) {
    if (c->weave && phase == PH_FWD) /* combined 1F1B (builder_pipe.c) */
      bld_weave_step(c, i, false);
    /* TP communication overlap takes the steps it overlaps */
    k = bld_tpo_fwd(c, &c->ld.st[i], c->ld.ns - i, phase, l);
    if (!k) {
      step_fwd(c, &c->ld.st[i], phase, l);
      k = 1;
    }
  }
  if (te_delayed(c) && phase == PH_FWD && chunk_edge(c, l, true))
    te_amax_update(c, PH_FWD, l, true);
}

/* The steps in reverse; returns the layer's last weight-gradient GEMM. */
static long layer_bwd(struct ctx *c, long l)
{
  bld_layer_select(c, l);
  if (c->p->recompute == RECOMP_FULL)
    layer_fwd(c, l, PH_RECOMP);
  else if (c->p->recompute == RECOMP_SELECTIVE && c->p->sel_ops)
    recompute_ops(c, l);
  long last = -1;
  for (int i = c->ld.ns - 1, k; i >= 0; i -= k) {
    long w = -1;
    if (c->weave) /* combined 1F1B (builder_pipe.c) */
      bld_weave_step(c, i, true);
    k = bld_tpo_bwd(c, &c->ld.st[i], i, l, fp8_grad_cast, &w);
    if (!k && async_dgrad(c, i)) {
      w = async_linear_bwd(c, i, l);
      k = 2;
    }
    if (!k) {
      w = step_bwd(c, &c->ld.st[i], l);
      k = 1;
    }
    if (w >= 0)
      last = w;
  }
  if (te_delayed(c) && chunk_edge(c, l, false))
    te_amax_update(c, PH_BWD, l, false);
  return last;
}

static void embed_fwd(struct ctx *c)
{
  double e = c->e;
  bld_kernel(c, KK_EMBED, PH_FWD, -1, 0,
             e * c->T * c->h * (c->m->gpt_style ? 3 : 1));
  /* Vocabulary-parallel embedding: partial lookups summed over TP. */
  tp_reduce(c, PH_FWD, -1);
  bld_kernel(c, KK_ELEMWISE, PH_FWD, -1, 0, e * 2 * c->T_local * c->h);
}

static long embed_bwd(struct ctx *c)
{
  sp_gather(c, PH_BWD, -1);
  return bld_kernel(c, KK_EMBED, PH_BWD, -1, 0, c->e * 2 * c->T * c->h);
}

/* The loss's kernels over the local logits (T x V/t, e bytes each) in
 * its forward or backward (plan.h, enum cross_entropy).  Megatron-LM's
 * sequences are plain elementwise and row-reduction kernels, which run
 * at memory-bound speed (elemwise):
 *   fp32: cast e+4, max 4, subtract 8, exp 8, sum 4, divide 8 bytes per
 *     logit; backward: multiply 8, cast back 4+e;
 *   16bit: max e, subtract 2e, exp 2e, sum e, divide 2e; backward 2e.
 * fused: one cross-entropy kernel each way, costed as the measured
 * PyTorch cross-entropy at the catalog's loss_eff (which is per 2e bytes
 * per logit each way, the convention it was fitted with). */
void bld_loss_kernel(struct ctx *c, enum phase ph)
{
  double e = c->e, n = c->T * (double)model_vocab_rows(c->m) / (double)c->t;
  bool bwd = ph == PH_BWD;
  switch (c->p->xent) {
  case XENT_FUSED:
    bld_kernel(c, KK_LOSS, ph, -1, 0, 2 * e * n);
    break;
  case XENT_16BIT:
    bld_kernel(c, KK_ELEMWISE, ph, -1, 0, (bwd ? 2 * e : 8 * e) * n);
    break;
  default:
    bld_kernel(c, KK_ELEMWISE, ph, -1, 0, (bwd ? 12 + e : 36 + e) * n);
  }
}

/* The output layer and the loss's forward: the final norm, the logits
 * GEMM over the vocabulary's rows, the loss kernels and vocabulary-
 * parallel cross-entropy's all-reduces. */
static void head_fwd(struct ctx *c)
{
  double V = (double)model_vocab_rows(c->m), t = c->t;
  norm_pass(c, PH_FWD, -1, c->T_local, false);
  sp_gather(c, PH_FWD, -1);
  graph_set_role(c->g, c->s, bld_gemm(c, PH_FWD, -1, c->T, V / t, c->h),
                 graph_role("lm_head", false, GP_FWD));
  bld_loss_kernel(c, PH_FWD);
  /* Vocabulary-parallel cross-entropy: max, target logit, sum of exp. */
  for (int i = 0; t > 1 && i < 3; i++)
    bld_coll(c, CO_ALLREDUCE, GK_TP, ST_COMPUTE, PH_FWD, -1, 4 * c->T);
}

/* With SP, the input of a column-parallel linear outside the layer's
 * steps (the output layer, MTP's eh_proj), `bytes` of it, gathered again
 * for its weight gradient as in the layer (sp_regather_bytes): Megatron's
 * output_layer is a tensor_parallel.ColumnParallelLinear with
 * sequence_parallel (models/gpt/gpt_model.py), whose backward is
 * LinearWithGradAccumulationAndAsyncCommunication's; torchtitan's output
 * is a ColwiseParallel outside any checkpointed block, whose matmul keeps
 * the gathered input.  Blocking before the data gradient, or with
 * async_tp_grad beside it (returned, to wait for before the weight
 * gradient; -1 otherwise).  Its input gradient's reduction:
 * dgrad_outside, below. */
static long regather_outside(struct ctx *c, long l, double bytes)
{
  if (c->t <= 1 || !c->p->sp || c->p->mem_framework == MF_TORCHTITAN)
    return -1;
  if (!c->p->async_tp_grad) {
    bld_coll(c, CO_ALLGATHER, GK_TP, ST_COMPUTE, PH_BWD, l, bytes);
    return -1;
  }
  return async_coll(c, CO_ALLGATHER, l, bytes);
}

/* The input gradient's TP reduction (SP: reduce-scatter) of such a
 * linear, `bytes` of it, after its data gradient: with async_tp_grad
 * launched then, beside the weight-gradient GEMM, as
 * LinearWithGradAccumulationAndAsyncCommunication's backward does for
 * every ColumnParallelLinear (returned, to wait for after the weight
 * gradient); otherwise -1, and the caller reduces on the compute stream
 * after the weight gradient (Megatron-LM v2.5; torchtitan's DTensor). */
static long dgrad_outside(struct ctx *c, long l, double bytes)
{
  if (c->t <= 1 || !c->p->async_tp_grad ||
      c->p->mem_framework == MF_TORCHTITAN)
    return -1;
  return async_coll(c, c->p->sp ? CO_REDUCE_SCATTER : CO_ALLREDUCE, l,
                    bytes);
}

/* Returns the output layer's weight-gradient GEMM. */
static long head_bwd(struct ctx *c)
{
  double V = (double)model_vocab_rows(c->m), t = c->t;
  bld_loss_kernel(c, PH_BWD);
  long ag = regather_outside(c, -1, c->e * c->T * c->h);
  graph_set_role(c->g, c->s, bld_gemm(c, PH_BWD, -1, c->T, c->h, V / t),
                 graph_role("lm_head", false, GP_DGRAD));
  bld_wait_for(c, ag);
  long r = dgrad_outside(c, -1, c->e * c->T * c->h);
  long w = bld_gemm(c, PH_BWD, -1, V / t, c->h, c->T);
  graph_set_role(c->g, c->s, w, graph_role("lm_head", false, GP_WGRAD));
  if (r >= 0)
    bld_wait_for(c, r);
  else
    tp_reduce(c, PH_BWD, -1);
  norm_pass(c, PH_BWD, -1, c->T_local, true);
  return w;
}

/* The multi-token-prediction modules after the main loss, on the last
 * stage (DeepSeek-V3 Sec. 2.2; Megatron-Core multi_token_prediction.py,
 * MultiTokenPredictionLayer._concat_embeddings and forward): module j
 * looks up the embedding of the tokens j + 1 further on (the shared,
 * vocabulary-parallel embedding: partial lookups summed over TP), norms it
 * (enorm) and the hidden states (hnorm), projects their concatenation
 * with eh_proj (2h -> h, column-parallel: its input gathered under SP, its
 * output all-gathered over TP), runs Transformer layer layers + j, then
 * the shared output head and a loss of its own.  The backward runs the
 * same in reverse; returns the last weight-gradient GEMM (-1: none). */
static void mtp_fwd(struct ctx *c)
{
  double e = c->e, T = c->T, h = c->h, t = c->t;
  for (long j = 0; j < c->m->mtp_layers; j++) {
    long l = c->m->layers + j;
    bld_weave_layer(c, true);
    bld_kernel(c, KK_EMBED, PH_FWD, l, 0, e * T * h);
    tp_reduce(c, PH_FWD, l);
    norm_pass(c, PH_FWD, l, c->T_local, false); /* enorm */
    norm_pass(c, PH_FWD, l, c->T_local, false); /* hnorm */
    if (t > 1 && c->p->sp)
      bld_coll(c, CO_ALLGATHER, GK_TP, ST_COMPUTE, PH_FWD, l, e * T * 2 * h);
    bld_gemm(c, PH_FWD, l, T, h / t, 2 * h);
    if (t > 1)
      bld_coll(c, CO_ALLGATHER, GK_TP, ST_COMPUTE, PH_FWD, l, e * T * h);
    c->ops->layer_fwd(c, l, PH_FWD);
    head_fwd(c);
    bld_weave_layer(c, false);
  }
}

static long mtp_bwd(struct ctx *c)
{
  double e = c->e, T = c->T, h = c->h, t = c->t;
  long last = -1;
  for (long j = c->m->mtp_layers - 1; j >= 0; j--) {
    long l = c->m->layers + j;
    bld_weave_layer(c, true);
    head_bwd(c);
    c->ops->layer_bwd(c, l);
    long ag = regather_outside(c, l, e * T * 2 * h);
    bld_gemm(c, PH_BWD, l, T, 2 * h, h / t);        /* data gradient */
    bld_wait_for(c, ag);
    long r = dgrad_outside(c, l, e * T * 2 * h);
    last = bld_gemm(c, PH_BWD, l, h / t, 2 * h, T); /* weight gradient */
    if (r >= 0)
      bld_wait_for(c, r);
    else if (t > 1)
      bld_coll(c, c->p->sp ? CO_REDUCE_SCATTER : CO_ALLREDUCE, GK_TP,
               ST_COMPUTE, PH_BWD, l, e * T * 2 * h);
    norm_pass(c, PH_BWD, l, c->T_local, true);
    norm_pass(c, PH_BWD, l, c->T_local, true);
    sp_gather(c, PH_BWD, l);
    bld_kernel(c, KK_EMBED, PH_BWD, l, 0, e * 2 * T * h);
    bld_weave_layer(c, false);
  }
  return last;
}

/* In a combined 1F1B step (c->weave; builder_pipe.c) the MTP layers run
 * as the chunk's last layers, their output layer and loss after their
 * combine (mtp_post_process), and the model's output layer and loss
 * after them (post_process), as Megatron-Core's
 * TransformerModelChunkSchedulePlan builds them
 * (models/common/model_chunk_schedule_plan.py: the mtp module's layers
 * appended to the chunk's, post_process last); the backward the other
 * way round.  Elsewhere the output layer first, as before. */
static void loss_fwd(struct ctx *c)
{
  bool woven = c->weave && c->m->mtp_layers > 0;
  if (!woven)
    head_fwd(c);
  if (c->m->mtp_layers > 0)
    mtp_fwd(c);
  if (woven)
    head_fwd(c);
}

/* Returns the output layer's weight-gradient GEMM (the MTP layers' last
 * when they run after it). */
static long loss_bwd(struct ctx *c)
{
  if (c->weave && c->m->mtp_layers > 0) {
    head_bwd(c);
    return mtp_bwd(c);
  }
  if (c->m->mtp_layers > 0)
    mtp_bwd(c);
  return head_bwd(c);
}

const struct layer_ops bld_megatron_ops = {
  .layer_fwd = layer_fwd, .layer_bwd = layer_bwd,
  .embed_fwd = embed_fwd, .embed_bwd = embed_bwd,
  .loss_fwd = loss_fwd, .loss_bwd = loss_bwd,
  .p2p_scatter_gather = true, .accumulate = true,
};
