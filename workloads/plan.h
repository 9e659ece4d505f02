/*
 * plan.h - how a model is split over GPUs, and the training schedule.
 *
 * Degrees: data (dp), tensor (tp, Megatron's 1D split of attention heads and
 * FFN columns/rows), pipeline (pp), context (cp) and expert (ep)
 * parallelism; tp * cp * dp * pp GPUs in all.  Expert parallelism splits
 * the experts of MoE layers over ep consecutive data-parallel ranks (as
 * Megatron-LM carves EP out of DP); their gradients are reduced over the
 * dp / ep ranks that hold the same experts.  A degree left out is derived:
 * dp = GPUs / (tp * pp * cp).  Ranks are numbered with TP innermost, then
 * CP, then DP, then PP, as Megatron-LM does (`order` changes it).
 * Settings come from a workload file and flags, like clusters and models.
 */
#ifndef WEFT_PLAN_H
#define WEFT_PLAN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "sim/base/bounds.h"
#include "sim/base/err.h"
#include "sim/graph/layout.h"
#include "workloads/model.h"

enum sched_kind { SCHED_GPIPE, SCHED_1F1B, SCHED_INTERLEAVED };
enum recompute { RECOMP_NONE, RECOMP_SELECTIVE, RECOMP_FULL };

enum plan_key {
  PK_TP, PK_PP, PK_DP, PK_CP, PK_EP, PK_SP, PK_MICRO_BATCH, PK_GLOBAL_BATCH,
  PK_SCHEDULE, PK_RECOMPUTE, PK_BUCKET, PK_OVERLAP_GRAD, PK_ORDER,
  PK_ATTENTION, PK_P2P, PK_GRAD_DTYPE, PK_ZERO, PK_FSDP, PK_HSDP,
  PK_MOE_IMBALANCE, PK_FIRST_LAYERS, PK_LAST_LAYERS, PK_SPLIT_UNITS,
  PK_SHARD_IMPL, PK_CROSS_ENTROPY, PK_FP8_RECIPE, PK_TENSOR3D, PK_PIECES,
  PK_COMPRESS, PK_OVERLAP_PARAM_GATHER, PK_GRAD_ACCUM, PK_STACK, PK_FUSION,
  PK_SELECTIVE, PK_MEM_FRAMEWORK, PK_COMM_CONTENTION, PK_HOST_OP,
  PK_FP8_PARAMS, PK_TP_COMM_OVERLAP, PK_MOE_DISPATCHER, PK_MOE_CAPACITY,
  PK_MOE_PAD, PK_MOE_NODE_GPUS, PK_MOE_MAX_NODES, PK_ETP,
  PK_OVERLAP_MOE_A2A, PK_DELAY_WGRAD, PK_ASYNC_TP_GRAD, PK_MOE_SHARED_OVERLAP,
  PK_COUNT
};

/* How an MoE layer moves its tokens to the experts and back
 * (builder_moe.c has the kernels and collectives of each):
 *   basic: weft's model before 2026-11: one all-to-all of the routed
 *     copies (tokens x top-k x hidden) over EP each way, on the tokens the
 *     layer's TP all-gather gathered; no router or permutation kernels;
 *   alltoall, allgather, deepep: Megatron-Core's MoELayer with its
 *     --moe-token-dispatcher-type alltoall, allgather or flex (DeepEP's
 *     two-hop kernels): router kernels, permute/unpermute, the
 *     dispatcher's collectives, on the sequence-parallel shards. */
enum moe_dispatcher { MD_BASIC, MD_ALLTOALL, MD_ALLGATHER, MD_DEEPEP };

/* How sharded data parallelism (ZeRO-3, FSDP, HSDP) runs, as each
 * implementation issues its collectives (builder_zero.c, zero3_pass):
 *   ideal: one all-gather per unit (embedding, layer, loss), two units
 *     ahead of the computation, one reduce-scatter per unit right after
 *     its backward (weft's model before 2026-11; it is FSDP1's pattern);
 *   fsdp1: PyTorch FSDP with one FlatParameter per layer
 *     (limit_all_gathers, BACKWARD_PRE): as ideal;
 *   fsdp2: fully_shard per layer: as fsdp1, plus the copy-out of the
 *     gathered parameters and the copy-in of the gradients before the
 *     reduce-scatter, on the compute stream; the one ZeRO-3 runs with PP
 *     > 1, as torchtitan runs it under PyTorch's pipelining: gathered
 *     once per step, reduced once after the last micro-batch
 *     (builder_zero.c, fsdp_pp_pass);
 *   deepspeed: DeepSpeed ZeRO-3 since v0.6 (2022): parameters below
 *     stage3_param_persistence_threshold (1e5 elements) stay whole, the
 *     others are gathered in batches of at most stage3_prefetch_bucket_size
 *     (5e7 elements) in module order, prefetched; gradients reduce-scattered
 *     in buckets of reduce_bucket_size (5e8 elements);
 *   deepspeed-2021: DeepSpeed ZeRO-3 v0.3.16-v0.5.x: each module's
 *     fetch blocks the host until the GPU has drained (gathers and
 *     gradient reductions included), then prefetches the next 5e7
 *     elements of parameters, one all-gather per parameter, each after a
 *     torch.cuda.synchronize() and a Python loop over the ranks, so they
 *     run beside that module's computation; gradients reduce-scattered
 *     parameter by parameter in buckets of 5e8 elements on the reduction
 *     stream, the host waiting for each bucket's reduction before it goes
 *     on (builder_zero.c, ds21_pass, for the code read; the host's work
 *     costs time only under a host clock, --host-op, which its stack
 *     sets);
 *   megatron: with ZeRO-1, Megatron-LM's distributed optimizer (Megatron
 *     Core's DistributedDataParallel and DistributedOptimizer, read at
 *     d98e8a6, 2026-08): gradients in buckets of max(4e7, 1e6 x DP)
 *     parameters in backward order, each reduce-scattered when its last
 *     gradient is ready in the last micro-batch's backward
 *     (--overlap-grad-reduce), else one bucket after the backward; one
 *     bucket on pipeline stages after the first and on model chunks after
 *     the first (distributed_data_parallel.py: "not on the critical
 *     path"); gradients reduced in FP32 unless grad_dtype is given
 *     (--accumulate-allreduce-grads-in-fp32, implied by --bf16); the
 *     updated parameters all-gathered by bucket after the optimizer step,
 *     or, with overlap_param_gather (--overlap-param-gather), at the next
 *     forward pass, each bucket's first layer waiting for its gather
 *     (forward pre-hooks, param_and_grad_buffer.py finish_param_sync). */
/* How the loss is computed over the logits (builder_layer.c, loss_fwd):
 *   fp32: Megatron-LM's default (v2.5 gpt_model.py and Megatron Core's
 *     tensor_parallel/cross_entropy.py): the 16-bit logits cast to FP32,
 *     then max, subtract, exp, sum and divide as separate kernels, the
 *     softmax kept for the backward, which multiplies it by the loss's
 *     gradient and casts it back to 16 bits;
 *   16bit: the same kernels on the 16-bit logits (--fp16-lm-cross-entropy);
 *   fused: one kernel that reads the logits twice (max and sum of exp,
 *     then the gradient) and writes the gradient in place, scaled in the
 *     backward (--cross-entropy-loss-fusion; Liger's and TE's kernels). */
enum cross_entropy { XENT_FP32, XENT_16BIT, XENT_FUSED };

/* How a model in FP8 scales its tensors (Transformer Engine's recipes;
 * builder_layer.c, fp8_fwd_casts):
 *   delayed: DelayedScaling, the default: one scale per tensor from an
 *     amax history, FP8 copies and transposes written by cast kernels,
 *     and an amax reduction per layer;
 *   mxfp8: MXFP8BlockScaling (Blackwell and later): one E8M0 scale per 32
 *     elements along the reduction dimension, so every operand is
 *     quantized along both dimensions (row-wise for one GEMM, column-wise
 *     for the transposed one: 2 x (1 + 1/32) bytes written per element
 *     read) and no amax history or reduction. */
enum fp8_recipe { FP8_DELAYED, FP8_MXFP8 };

/* Gradient compression of data-parallel buckets, as PyTorch DDP
 * communication hooks run it (builder_compress.c, compress_bucket;
 * Agarwal et al., MLSys 2022, compare these methods against optimized DDP):
 *   fp16: cast to 16 bits, all-reduce, cast back (fp16_compress_hook);
 *   powersgd:R: PowerSGD of rank R (default 1, as powerSGD_hook): per
 *     matrix P = M Q, all-reduce P, orthogonalize P, Q = M^T P,
 *     all-reduce Q, M = P Q^T, with error feedback; vectors all-reduced
 *     whole;
 *   topk:F, randomk:F: the fraction F (default 0.01) of the largest (or
 *     random) elements, values and 4-byte indices all-gathered (sparse
 *     vectors do not sum in a ring), N sparse vectors scattered into the
 *     dense gradient; error feedback;
 *   sign: signSGD with majority vote (1 bit per element, all-gathered);
 *   efsign: EF-signSGD (scaled signs with error feedback, all-gathered);
 *   qsgd:B: QSGD with B bits per element (default 8) and one scale,
 *     all-gathered (each rank's scale differs, so no ring sum). */
enum compress { CM_NONE, CM_FP16, CM_POWERSGD, CM_TOPK, CM_RANDOMK, CM_SIGN,
                CM_EFSIGN, CM_QSGD };

/* How gradients accumulate over the micro-batches of an iteration
 * (builder_pipe.c, accumulate), each a memory-bound pass over a layer's
 * parameters after its weight gradients:
 *   autograd: PyTorch's AccumulateGrad: the first micro-batch's gradient
 *     becomes .grad, each later one is added in place (grad += new: three
 *     transfers at the gradients' width); PyTorch DDP under no_sync and
 *     Megatron-LM 2021 (no contiguous buffers) run this way;
 *   buffer: Megatron-LM's main_grad hook (DistributedDataParallel's
 *     param hook, without gradient accumulation fusion): every
 *     micro-batch's 16-bit gradient added into the main_grad buffer, of
 *     grad_dtype (FP32: 4 + 2 + 4 bytes per parameter);
 *   fused: Megatron-LM's --gradient-accumulation-fusion (the default of
 *     Megatron Core with Transformer Engine or apex): the weight-gradient
 *     GEMM accumulates into the FP32 buffer itself; no separate pass.
 * ZeRO-3/FSDP reduce-scatter every micro-batch and Tensor3D reduce-scatters
 * over Z every backward: their shards are not modelled as accumulating
 * (FSDP2 under PP accumulates unsharded as its own code does, whatever
 * this setting: builder_zero.c, fsdp_pp_pass). */
enum grad_accum { GA_AUTOGRAD, GA_BUFFER, GA_FUSED };

/* Whose allocations the memory estimate follows (accounting.h,
 * memory_per_gpu; a software stack sets it):
 *   zero: the ZeRO paper's mixed-precision Adam (2 + grad_dtype + 12 bytes
 *     per parameter) with Korthikanti's activations, weft's model before
 *     2026-11;
 *   megatron: Megatron-Core with Transformer Engine: grad_dtype is the
 *     main_grad buffer's (whole on every rank under the distributed
 *     optimizer), FP8 weight caches of the linear layers only, no dropout
 *     masks in models without dropout (Llama);
 *   torchtitan: torchtitan on FSDP2 (MixedPrecisionPolicy param bf16,
 *     reduce fp32): FP32 parameters, gradients and Adam moments (no master
 *     copy), its per-op selective checkpointing, the unsharded layers'
 *     lifetimes and the eager FP32 loss;
 * both of the latter count the CUDA context; none counts the caching
 * allocator's fragmentation. */
enum mem_framework { MF_ZERO, MF_MEGATRON, MF_TORCHTITAN };

/* Tensor-parallel communication overlapped with the GEMMs around it
 * (builder_tpo.c describes what is split and overlapped with what):
 *   no: every TP collective blocks the compute stream (Megatron-LM's
 *     default, weft's model before 2026-11);
 *   te: Megatron-Core's --tp-comm-overlap with Transformer Engine's
 *     userbuffers at their defaults (TE module/base.py initialize_ub):
 *     ring-exchange all-gathers pipelined with the GEMM chunks of QKV and
 *     FC1 forward and of the projection's and FC2's data gradients,
 *     reduce-scatters pipelined with 4 splits of the projection and FC2
 *     forward, and bulk overlaps of QKV's and FC1's backward;
 *   nemo: the same with the configuration NeMo and Megatron-Bridge run
 *     Llama 3 70B with on H100 (userbuffers_fp8_h100_h8192_tp4_mbs1_
 *     seqlen8192): bulk overlaps that take no SMs from their GEMMs, 24 and
 *     16 SMs for the reduce-scatters, FP8 reduce-scatter buffers;
 *   torch: PyTorch's async TP (torch.distributed._symmetric_memory's
 *     fused all-gather-matmul and matmul-reduce-scatter, which
 *     torch.compile substitutes when torchtitan's
 *     enable_async_tensor_parallel is set): all-gathers pulled shard by
 *     shard beside the GEMM on the shards already there, reduce-scatters
 *     as GEMMs on each rank's rows pulled by their owner and summed.
 * All need sequence parallelism, as Megatron-LM asserts (arguments.py) and
 * torchtitan's SequenceParallel layers imply. */
enum tp_overlap { TPO_NONE, TPO_TE, TPO_NEMO, TPO_TORCH };

/* megatron-fsdp and megatron-fsdp-ub: Megatron-Core's Megatron-FSDP
 * (megatron/core/distributed/fsdp/src/megatron_fsdp, data_parallel_sharding_
 * strategy optim_grads_params) at Megatron-LM's defaults, or with NCCL user
 * buffers as NeMo's H100 settings run Llama 3 8B in FP8 (nccl_ub, which
 * forces fsdp_double_buffer, and keep_fp8_transpose_cache); builder_zero.c,
 * mfsdp_pass, says what each issues. */
enum shard_impl { SI_IDEAL, SI_FSDP1, SI_FSDP2, SI_DEEPSPEED,
                  SI_DEEPSPEED_2021, SI_MEGATRON, SI_MEGATRON_FSDP,
                  SI_MEGATRON_FSDP_UB };
#define MEGATRON_BUCKET_ELEMS 4e7    /* at least; 1e6 x DP beyond 40 */
#define SHARD_PERSIST_ELEMS 1e5   /* stage3_param_persistence_threshold */
#define SHARD_PREFETCH_ELEMS 5e7  /* stage3_prefetch_bucket_size */
#define SHARD_REDUCE_ELEMS 5e8    /* reduce_bucket_size */

struct plan {
  long tp, pp, dp, cp, ep;
  bool sp;                /* sequence parallelism (needs tp > 1) */
  long micro_batch;       /* sequences per micro-batch */
  long global_batch;      /* sequences per iteration */
  enum sched_kind schedule;
  long vchunks;           /* model chunks per GPU (interleaved), else 1 */
  long vgroup;            /* micro-batches per group and chunk (interleaved
                           * only, schedule.h); 0: the default, pp */
  enum recompute recompute;
  double bucket_bytes;    /* DDP gradient bucket size */
  bool overlap_grad;      /* reduce buckets during the backward pass */
  enum grad_accum grad_accum; /* (above) */
  bool overlap_param_gather; /* ZeRO-1/2: gather the updated parameters at
                             the next forward pass, bucket by bucket,
                             instead of after the optimizer step */
  enum pdim order[PD_COUNT]; /* innermost first */
  int zero;               /* ZeRO stage 0-3 over the data-parallel group:
                             1 shards optimizer states, 2 also gradients,
                             3 also parameters (FSDP is stage 3) */
  bool fsdp;              /* PyTorch FSDP (ZeRO-3 with per-layer units) */
  long hsdp;              /* shard within groups of this many DP ranks,
                             replicate across them (0: all of DP) */
  double moe_imbalance;   /* tokens of the most loaded expert over the
                             mean (>= 1); every rank is timed as the most
                             loaded one, which the all-to-all waits for */
  enum dtype grad_dtype;  /* gradients as reduced and stored: bf16 (ZeRO
                             paper's 2 bytes) or fp32 (Megatron-LM's main
                             gradients) */
  bool blocking_p2p;      /* the computation after a pipeline send waits
                             until it is delivered (Megatron-LM 2021's
                             synchronous send/recv), else it goes on */
  enum shard_impl shard_impl; /* how ZeRO-3/FSDP runs (above) */
  enum cross_entropy xent; /* how the loss runs (above) */
  char stack[32];          /* the software stack applied (stack.h), or "" */
  /* How the layer's memory-bound work runs: fused kernels (Megatron-Core's
   * and Transformer Engine's fusions, torch.compile; the default) or
   * eager PyTorch, where RMSNorm, SwiGLU and RoPE are sequences of ATen
   * ops, each a kernel of its own with its own trip through HBM
   * (builder_layer.c, eager_*). */
  bool eager;
  /* fusion=jit: Megatron-LM 2021 on PyTorch 1.8 (builder_layer.c,
   * jit_*): its GPT layer's bias adds and bias gradients, the attention's
   * copies and scalings as ATen kernels around the TorchScript-fused
   * bias-GeLU and bias-dropout-add. */
  bool jit;
  /* What recompute=selective recomputes: the attention core (Megatron-LM,
   * Korthikanti et al.; the default) or, as torchtitan's op-level
   * selective checkpointing does (torchtitan/models/llama3/infra/
   * parallelize.py, _apply_ac_to_transformer_block with
   * selective_ac_option "op"), every op of a layer outside its save list:
   * all element-wise work and every second matrix multiply (wk, wo, w3
   * of a Llama layer), keeping attention's output. */
  bool sel_ops;
  /* FP8 models: the linear layers' weights are held in FP8 (Transformer
   * Engine's Float8Tensor parameters: Megatron-Core's --fp8-param-gather,
   * NeMo's fp8_params=True): no BF16 copy beside an FP8 cache, and the
   * distributed optimizer's parameter all-gathers move 1 byte per
   * parameter instead of 2. */
  bool fp8_params;
  enum fp8_recipe fp8_recipe; /* how FP8 tensors are scaled (above) */
  bool unfused_attention; /* attention as batched GEMMs with materialized
                             scores, softmax and dropout kernels (Megatron-LM
                             before FlashAttention, 2021), else one fused
                             flash-style kernel */
  /* attention=sdpa: PyTorch's scaled_dot_product_attention as 2.5 to 2.10
   * choose its backend (aten/src/ATen/native/transformers/cuda/
   * sdp_utils.cpp: flash before efficient before math; cuDNN first on
   * Hopper only from 2.11, analysis/reconcile): FlashAttention-2 where the
   * GPU runs it, else the GPU's default kernel (workload.c resolves it). */
  bool attn_sdpa;
  int attn_kernel;        /* which fused kernel (enum attn_kernel), -1: the
                             GPU's default (`--attention flash`) */
  /* Uneven pipelines (plan_chunk_layers): layers of the first and last
   * pipeline stage (0: an even share; Megatron-LM's
   * --decoder-first/last-pipeline-num-layers), or the embedding and the
   * loss each counted as a layer in the split (Megatron-LM's
   * account_for_embedding/loss_in_pipeline_split). */
  long first_layers, last_layers;
  bool split_units;
  /* Tensor3D (Singh and Bhatele; AxoNN): the TP block is a gx x gy x gz
   * grid (t3, all 0 when not used; tp = their product).  A linear layer's
   * `in` features split over X, `out` over Y, and the local block sharded
   * over Z (gathered before use, its gradient reduce-scattered after);
   * consecutive linear layers swap the roles of X and Y, so activations
   * need no re-layout; the batch splits over Z and DP.  `pieces`: each
   * micro-batch is over-decomposed into that many pieces, whose
   * collectives overlap the next piece's computation (builder_t3.c). */
  long t3[3];
  long pieces;
  enum mem_framework mem_framework; /* memory as it allocates (above) */
  enum compress compress; /* gradient compression (above) */
  double compress_param;  /* its rank, fraction or bits */
  /* Engine settings (engine.h, engine_params): kernels beside
   * communication lose the SMs and HBM bandwidth it takes (default yes);
   * the host's time to issue each kernel, collective and send (0: no host
   * clock, the default). */
  bool comm_contention;
  double host_op_s;
  enum tp_overlap tp_overlap; /* TP communication overlap (above) */
  /* The backward of a column-parallel linear as Megatron-LM runs it since
   * 2022 (LinearWithGradAccumulationAndAsyncCommunication, mpu/layers.py,
   * then megatron/core/tensor_parallel/layers.py; its flag
   * --async-tensor-model-parallel-allreduce, default on, and with SP
   * always): the input gradient's TP all-reduce (SP: reduce-scatter) runs
   * beside the weight-gradient GEMM, and with SP the input, kept sharded,
   * is all-gathered again beside the data-gradient GEMM
   * (builder_layer.c, async_linear_bwd).  Off: the collective blocks the
   * compute stream after the weight gradient (Megatron-LM v2.5).  On by
 * default with SP at TP > 1 (plan_resolve), since SP exists only in code
 * that runs it so, except under torchtitan's DTensor. */
  bool async_tp_grad;
  /* MoE execution (above, enum moe_dispatcher; builder_moe.c): the
   * dispatcher; the capacity factor (Megatron's
   * --moe-expert-capacity-factor: an expert takes at most
   * ceil(cf x tokens x top-k / experts) rows, the rest are dropped; 0:
   * dropless) and padding to it (--moe-pad-expert-input-to-capacity);
   * for deepep, the GPUs of one NVLink node (0 until workload.c fills in
   * the cluster's) and node-limited routing: each token's experts on at
   * most this many nodes (DeepSeek-V3: 4; 0: no limit). */
  enum moe_dispatcher moe_dispatcher;
  double moe_capacity;
  bool moe_pad;
  long moe_node_gpus;
  long moe_max_nodes;
  /* Expert tensor parallelism, Megatron-Core's MoE parallel folding
   * (--expert-tensor-parallel-size; parallel_state.py,
   * initialize_model_parallel): the experts' GEMMs split over etp ranks
   * instead of TP, and the ranks of each pipeline stage regrouped for the
   * experts in the order etp-ep-edp (RankGenerator with order "tp-ep-dp-pp"
   * over ETP, EP and EDP = TP x DP / (ETP x EP)), while attention keeps
   * tp-cp-dp-pp.  0: not set, the experts split over TP and EP carved out
   * of DP as before (plan_etp returns tp). */
  long etp;
  /* Megatron-Core's --overlap-moe-expert-parallel-comm (the combined 1F1B
   * schedule, pipeline_parallel/combined_1f1b.py): in the steady state the
   * forward of one micro-batch and the backward of another run as one
   * step, layer by layer in sub-blocks, the MoE all-to-alls of each on a
   * stream of their own beside the other's computation (schedule.h,
   * schedule_for_plan; builder_pipe.c, bld_combined_pass). */
  bool a2a_overlap;
  /* With it, Megatron-Core's --delay-wgrad-compute: a backward sub-block's
   * weight gradients run after its data gradients, and the all-to-all
   * after the sub-block waits for the data gradients only. */
  bool delay_wgrad;
  /* Megatron-Core's --moe-shared-expert-overlap (transformer_config.py,
   * moe_shared_expert_overlap; moe/shared_experts.py, token_dispatcher.py):
   * the shared experts run on a stream of their own beside the
   * dispatcher's all-to-alls, their FC1 beside the dispatch and their FC2
   * beside the combine (builder_moe.c).  alltoall or deepep, without
   * overlap_moe_expert_parallel_comm, as Megatron asserts. */
  bool moe_shared_overlap;
  bool set[PK_COUNT];
  char origin[PK_COUNT][WEFT_MAX_ORIGIN];
  /* Derived by plan_resolve: */
  long gpus;
  long microbatches;      /* per pipeline per iteration: m */
  long ep_node;           /* EP ranks per node (deepep), else 0 */
};

/* Megatron-LM's defaults: 1F1B, no recomputation, micro-batch 1, 40M-element
 * buckets in the model dtype (80 MB in BF16; PyTorch DDP uses 25 MB) with
 * overlap on. */
void plan_init(struct plan *p);

int plan_key_from_name(const char *name);
const char *plan_key_name(enum plan_key k);
/* The form of its value, for the help: "N", "yes|no", "none|selective|full". */
const char *plan_key_hint(enum plan_key k);
/* Its meaning and default, one line for the help. */
const char *plan_key_help(enum plan_key k);
/* The value of setting k in `p` as text a flag would take ("interleaved:2",
 * "yes", "tp-cp-dp-pp"; sizes in bytes; 0 for first/last stage layers and
 * hsdp left to their default). */
void plan_value_text(const struct plan *p, enum plan_key k, char *buf,
                     size_t size);
/* "ideal", "fsdp1", "fsdp2", "deepspeed", "deepspeed-2021", "megatron",
 * "megatron-fsdp", "megatron-fsdp-ub". */
const char *shard_impl_name(enum shard_impl si);
/* Megatron-FSDP, either setting. */
bool shard_impl_mfsdp(enum shard_impl si);
const char *grad_accum_name(enum grad_accum ga);
/* "fp32", "16bit", "fused". */
const char *cross_entropy_name(enum cross_entropy x);
const char *fp8_recipe_name(enum fp8_recipe r);
/* "none", "fp16", "powersgd", "topk", "randomk", "sign", "efsign", "qsgd". */
const char *compress_name(enum compress c);
/* "zero", "megatron", "torchtitan". */
const char *mem_framework_name(enum mem_framework f);
/* "no", "te", "nemo", "torch". */
const char *tp_overlap_name(enum tp_overlap o);
/* The experts' tensor-parallel degree: etp where set, else tp. */
long plan_etp(const struct plan *p);
/* The expert data-parallel degree: the ranks of a pipeline stage holding
 * the same expert shard, TP x CP x DP / (ETP x EP) with etp set, else
 * DP / EP x CP (weft's grouping before folding). */
long plan_edp(const struct plan *p);

/* "basic", "alltoall", "allgather", "deepep". */
const char *moe_dispatcher_name(enum moe_dispatcher d);

/* Set one setting from text ("schedule": gpipe, 1f1b, interleaved:V or
 * interleaved:V:G;
 * "recompute": none, selective, full; "order": e.g. tp-cp-dp-pp;
 * "bucket": a size such as 25MB; "sp" and "overlap_grad": yes/no). */
int plan_set(struct plan *p, enum plan_key k, const char *value,
             const char *origin, struct weft_err *err) WEFT_WUR;

/* Derive dp and the micro-batch count for `gpus` GPUs and check the plan
 * against the model: degrees divide GPUs, heads, KV heads, FFN, layers and
 * batch; interleaving needs micro-batches to be a multiple of pp, or a
 * group size that schedule_check_group accepts. */
int plan_resolve(struct plan *p, const struct model *m, long gpus,
                 struct weft_err *err) WEFT_WUR;

/* The rank layout of a resolved plan (degrees, rank order, shard group):
 * where each rank sits and who its peers are (sim/graph/layout.h). */
void plan_layout(const struct plan *p, struct graph_layout *out);

/* Layers held by pipeline stage `stage`, model chunk `chunk` (chunk c of
 * stage s is virtual stage c*pp + s): the first layer and the count.
 * With first_layers/last_layers, those stages hold that many (split evenly
 * over their chunks) and the others share the rest evenly; with
 * split_units, the embedding and the loss count as one layer each and the
 * L + 2 units are split evenly over the virtual stages (the first holds
 * one layer fewer, and so does the last).  Otherwise, when the virtual
 * stages do not divide the layers, every stage gets the floor and the
 * extra layers go to the middle stages first, then to the first and last
 * (which also carry the embedding and the loss), as Llama 3 405B split 126
 * layers over 16 stages (Llama Team 2024, Sec. 3.3.2). */
void plan_chunk_layers(const struct plan *p, const struct model *m,
                       long stage, long chunk, long *out_first,
                       long *out_count);

const char *sched_name(enum sched_kind s);
const char *recompute_name(enum recompute r);

#endif
