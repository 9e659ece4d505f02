/*
 * accounting.h - parameters, FLOPs and memory of a model under a plan, in
 * closed form.
 *
 * Parameters count every weight and bias (GPT: learned positions, tied
 * output; Llama: untied output, no biases).  For a GPT model with FFN 4h
 * this is Megatron-LM's Eq. (2) plus the final LayerNorm's 2h, which the
 * paper leaves out.  Model FLOPs are the matrix-multiply FLOPs of forward
 * and backward without recomputation (backward = 2x forward, attention
 * counted over the full s x s square as Megatron does), which for GPT is
 * 72 B s l h^2 (1 + s/(6h) + V/(12 l h)).
 *
 * Activations follow Korthikanti et al. with unfused attention (as they
 * measured it); with the fused flash-style kernel, the default, the s x s
 * scores are not stored, only a 4-byte log-sum-exp per head and token.
 * Memory per GPU follows mixed-precision Adam as in the ZeRO paper: 2 bytes
 * of weights, 2 of gradients (4 with FP32 gradients, plan grad_dtype) and 12
 * of optimizer state (FP32 master weights, momentum, variance) per
 * parameter the GPU holds.  Activations follow
 * Korthikanti et al. (MLSys 2023) per layer and micro-batch, times the
 * micro-batches the stage's schedule keeps in flight at its peak.
 *
 * That is the plan's mem_framework `zero`, the default.  `megatron` and
 * `torchtitan` follow what those stacks allocate (plan.h, enum
 * mem_framework; accounting.c, megatron_terms and torchtitan_terms, each
 * term with the code it comes from); what the gradient setting grad_dtype
 * means differs: Megatron's main_grad buffer (FP32 unless
 * grad_reduce_in_fp32 is off, as NeMo's performance recipes set it), the
 * ZeRO paper's stored gradients, FSDP2's reduce dtype (the gradients kept
 * are always FP32 there, the sharded parameters' dtype).  Not counted by
 * any: the caching allocator's fragmentation (PyTorch's
 * expandable_segments, which torchtitan's run_train.sh and NeMo's memory
 * guide set, exist to shrink it; weft has no measurement of what is left),
 * the optimizer step's own transients (the activations
 * are gone by then), and Megatron's --fp8-param-gather (FP8 parameters: 2
 * bytes per linear weight fewer).
 */
#ifndef WEFT_ACCOUNTING_H
#define WEFT_ACCOUNTING_H

#include <stdbool.h>

#include "workloads/model.h"
#include "workloads/plan.h"


/* Parameters of one Transformer layer, of the input embedding (with
 * positions), of the output layer when untied (0 for GPT) and of the final
 * norm. */
double layer_params(const struct model *m);
/* ... of a layer of kind `kind` (model.h, model_layer_kind); layer_params
 * and the _rank functions without _kind are the first layer's. */
double layer_params_kind(const struct model *m, int kind);
/* The layers of each kind among [first, first + count) (out[kind]). */
void layer_kind_counts(const struct model *m, long first, long count,
                       long out[LAYER_KINDS]);
/* Parameters of the MTP modules (mtp_layers): their layers, projections
 * and norms; the embedding and output layer they share are not counted
 * again.  model_params includes them; DeepSeek-V3's published 671 B does
 * not. */
double mtp_params(const struct model *m);
/* ... on one rank of tensor-parallel degree tp and expert-parallel degree
 * ep (on the last pipeline stage, as Megatron-Core places them), or the
 * routed experts' part of them. */
double mtp_params_rank(const struct model *m, long tp, long ep,
                       bool experts_only);
double embedding_params(const struct model *m);
double output_params(const struct model *m);
double final_norm_params(const struct model *m);
double model_params(const struct model *m);
/* Of them, those one token uses (MoE: top-k of the experts). */
double model_active_params(const struct model *m);

/* Parameters of one layer held by one GPU of tensor-parallel degree tp and
 * expert-parallel degree ep (split weights / tp, experts / ep, plus
 * replicated norms and biases), and the expert part of it. */
double layer_params_rank(const struct model *m, long tp, long ep);
double layer_expert_params_rank(const struct model *m, long tp, long ep);
double layer_params_rank_kind(const struct model *m, int kind, long tp,
                              long ep);
double layer_expert_params_rank_kind(const struct model *m, int kind,
                                     long tp, long ep);

/* The linear layers' weights of one layer held by one GPU (QKV,
 * projection, FFN; experts over ETP and EP): what Transformer Engine runs
 * in FP8 and what FP8 parameters hold at 1 byte. */
double layer_linear_params_rank(const struct model *m, const struct plan *p);

/* Parameters held by a GPU of pipeline stage `stage`, and the expert part
 * of them (sharded by ZeRO over the ranks holding the same experts). */
double stage_params_rank(const struct model *m, const struct plan *p,
                         long stage);
double stage_expert_params_rank(const struct model *m, const struct plan *p,
                                long stage);

/* Forward model FLOPs of layer i (i >= layers: an MTP module's) over T
 * tokens in sequences of s (see above; windows and chunks scale the
 * attention core by the query-key pairs they compute). */
double layer_fwd_flops(const struct model *m, long i, double T, double s);

/* Model FLOPs of one iteration of `global_batch` sequences (see above),
 * MTP modules included. */
double model_flops_per_iter(const struct model *m, long global_batch);

/* Activation bytes of one layer for one micro-batch (Korthikanti et al.):
 * with 16-bit activations, GPT, unfused attention, no parallelism:
 * s b h (34 + 5 a s / h). */
double layer_activation_bytes(const struct model *m, const struct plan *p);

/* Communication and workspace buffers, an estimate from the libraries'
 * defaults.  NCCL (src/init.cc, src/include/device.h): a ring connection
 * holds one buffer per protocol, LL 8 lines x 512 threads x 8 steps x 16 B
 * = 512 KiB, LL128 120 x 640 x 8 x 8 B = 4.69 MiB, Simple 4 MiB
 * (NCCL_BUFFSIZE); a GPU receives on one ring connection per channel of
 * each communicator it runs collectives on, connected at first use (NCCL
 * >= 2.22 connects only what runs), with MEM_NCCL_CHANNELS channels, what
 * NCCL reports on a DGX H100 ("32 coll channels"; fewer on older nodes,
 * not modelled).  Pipeline transfers use Simple alone: 4 MiB per channel,
 * MEM_NCCL_P2P_CHANNELS per peer.  PyTorch's cuBLAS workspaces: 32 MiB
 * (CUBLAS_WORKSPACE_CONFIG ":4096:8" on Hopper and later; 8.1 MiB before,
 * the difference is left out) and cuBLASLt's 1 MiB.  The allocator's
 * fragmentation and NVLS buffers are not counted; the CUDA context only
 * outside framework zero (below). */
#define MEM_NCCL_CONN_BYTES (524288.0 + 4915200.0 + 4194304.0)
#define MEM_NCCL_CHANNELS 32
#define MEM_NCCL_P2P_BYTES 4194304.0
#define MEM_NCCL_P2P_CHANNELS 2
#define MEM_CUBLAS_BYTES (33.0 * 1048576)
/* The CUDA context a PyTorch process creates on its GPU, with CUDA's lazy
 * module loading, which PyTorch sets since 1.13 and CUDA makes the default
 * from 12.2: 287,047,680 bytes, against 666,632,192 loaded eagerly, as
 * measured in pytorch/pytorch#86509.  Counted by the megatron and
 * torchtitan memory frameworks (plan.h, enum mem_framework), not by zero. */
#define MEM_CUDA_CONTEXT_BYTES 287047680.0

struct memory {
  double weights, grads, optimizer; /* bytes per GPU */
  double activations;  /* stored at the schedule's peak */
  double transient;    /* one layer re-materialized under full recompute,
                          plus the logits of the last stage */
  double buffers;      /* communication and workspace buffers (above),
                          and the CUDA context outside framework zero */
  long communicators;  /* NCCL communicators running collectives */
  long p2p_peers;      /* pipeline peers */
  /* The shard factors that applied: optimizer state, gradients and
   * weights are divided by `shard` (1: not sharded) from ZeRO stage 1, 2
   * and 3 on, expert parameters by `expert_shard`. */
  double shard, expert_shard;
  double total;
  double capacity;     /* the GPU's HBM */
  bool fits;
  long stage;          /* the stage with the largest total */
  long peak_inflight;  /* micro-batch chunks in flight there at the peak */
};

/* Memory of the most loaded pipeline stage on a GPU with `hbm_bytes`. */
void memory_per_gpu(const struct model *m, const struct plan *p,
                    double hbm_bytes, struct memory *out);

#endif
