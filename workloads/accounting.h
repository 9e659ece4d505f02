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
double embedding_params(const struct model *m);
double output_params(const struct model *m);
double final_norm_params(const struct model *m);
double model_params(const struct model *m);

/* Parameters of one layer held by one GPU of tensor-parallel degree tp and
 * expert-parallel degree ep (split weights / tp, experts / ep, plus
 * replicated norms and biases), and the expert part of it. */
double layer_params_rank(const struct model *m, long tp, long ep);
double layer_expert_params_rank(const struct model *m, long tp, long ep);

/* Parameters held by a GPU of pipeline stage `stage`, and the expert part
 * of them (sharded by ZeRO over the ranks holding the same experts). */
double stage_params_rank(const struct model *m, const struct plan *p,
                         long stage);
double stage_expert_params_rank(const struct model *m, const struct plan *p,
                                long stage);

/* Model FLOPs of one iteration of `global_batch` sequences (see above). */
double model_flops_per_iter(const struct model *m, long global_batch);

/* Activation bytes of one layer for one micro-batch (Korthikanti et al.):
 * with 16-bit activations, GPT, unfused attention, no parallelism:
 * s b h (34 + 5 a s / h). */
double layer_activation_bytes(const struct model *m, const struct plan *p);

struct memory {
  double weights, grads, optimizer; /* bytes per GPU */
  double activations;  /* stored at the schedule's peak */
  double transient;    /* one layer re-materialized under full recompute,
                          plus the logits of the last stage */
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
