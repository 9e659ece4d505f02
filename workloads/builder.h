/*
 * builder.h - turn (model, plan) into the task graph of one iteration.
 *
 * Per pipeline stage, the program follows the stage's schedule (schedule.h).
 * A forward pass of a micro-batch through a chunk receives its input from
 * the previous virtual stage (pipeline receive stream), runs per layer the
 * kernels of Megatron-LM's GPT layer (norm, QKV GEMM, fused attention,
 * projection, tensor-parallel all-reduce, dropout and residual, norm, FFN
 * GEMMs and activation, all-reduce, dropout and residual) on the compute
 * stream, and sends its output on (pipeline send stream).  With sequence
 * parallelism each all-reduce is a reduce-scatter, and an all-gather comes
 * before the next column-parallel GEMM.  Backward passes run the layers in
 * reverse, each GEMM as a data-gradient and a weight-gradient GEMM; full
 * recomputation replays a layer's forward just before its backward,
 * selective recomputation the attention core.  Without sequence parallelism
 * and with TP > 1, pipeline transfers use Megatron's scatter/gather
 * optimization: each TP rank sends 1/TP of the activations and the receiver
 * all-gathers them over NVLink.  Data-parallel gradients are all-reduced in
 * buckets (layers in backward order, per model chunk) on their own stream,
 * each released by the weight-gradient GEMM that completes it in the chunk's
 * last backward pass (or all at the end without overlap); tied embedding
 * gradients are all-reduced between the first and last stage; the optimizer
 * step waits for all of them.
 */
#ifndef WEFT_BUILDER_H
#define WEFT_BUILDER_H

#include "sim/graph/graph.h"
#include "workloads/model.h"
#include "workloads/plan.h"

/* Build the graph of a resolved plan (plan_resolve).  Returns a graph the
 * caller frees with graph_free, or NULL with `err` when a stage would exceed
 * WEFT_MAX_TASKS. */
struct graph *build_graph(const struct model *m, const struct plan *p,
                          struct weft_err *err) WEFT_WUR;

/* The size of the graph build_graph would make, estimated before building
 * it from two small probe graphs of the same plan (one micro-batch, no
 * pipeline, one and two layers): tasks and dependencies of the whole graph,
 * and the bytes they and the engine's per-task state take.  Exact for the
 * layers' tasks; the pipeline's transfers and the per-stage extras
 * (embedding, loss, optimizer, gradient buckets) are bounded from above. */
struct graph_estimate {
  double tasks, deps;
  double bytes;
};
void build_estimate(const struct model *m, const struct plan *p,
                    struct graph_estimate *out);

/* Parameters per rank of the units a pass runs over: the embedding (the
 * first virtual stage's, with GPT's position embedding), one layer (dense
 * and expert) and the output layer with the final norm (the last's). */
void build_unit_params(const struct model *m, const struct plan *p,
                       double *emb, double *layer, double *head);

/* Bytes per parameter of one gradient accumulation pass (plan.h, enum
 * grad_accum; 0 for fused), and whether it runs after the first
 * micro-batch of a chunk too (buffer) or only after the later ones
 * (autograd). */
double build_accum_bytes(const struct model *m, const struct plan *p,
                         bool *every_microbatch);

/* Bytes of one pipeline transfer of a micro-batch's activations, per
 * sending rank (with TP, each rank sends 1/TP: sequence-parallel shards or
 * Megatron's scatter/gather). */
double build_p2p_bytes(const struct model *m, const struct plan *p);

/* What one MoE layer's dispatch moves for a micro-batch of n tokens on a
 * rank, forward, as builder_moe.c builds it for the plan's dispatcher
 * (plan.h, enum moe_dispatcher); the combine moves the tokens back.
 * Collective sizes are as bld_coll takes them: an all-to-all's send
 * buffer, an all-gather's gathered output, a reduce-scatter's input. */
struct moe_dispatch {
  double n;           /* tokens */
  double rows;        /* routed rows sent (capacity applied) */
  double permute_B;   /* the permutation kernel (0: none) */
  double unpermute_B; /* the combine's unpermutation kernel */
  double a2a_B;       /* all-to-all of the tokens over EP */
  double probs_B;     /* all-to-all of their probabilities over EP */
  double etp_B;       /* all-gather of both over expert TP (= TP) */
  double sort_B;      /* sort_chunks_by_idxs, each way (several local
                         experts) */
  double ag_B;        /* allgather: tokens, routing map and probabilities
                         gathered over expert TP x EP (GK_TPEP; GK_EP
                         with expert TP 1) */
  double rs_B;        /* allgather: the combine's FP32 reduce-scatter */
  double nodes, ranks; /* deepep: nodes and ranks a token goes to */
  double rdma_B;      /* deepep: the RDMA hop's all-to-all (GK_EPX) */
  double nvl_B;       /* deepep: the NVLink hop's all-to-all (GK_EPN) */
  double net_B;       /* deepep: of rdma_B, what leaves the node */
  double leave_B;     /* everything that leaves the rank */
};
void build_moe_dispatch(const struct model *m, const struct plan *p,
                        double n, struct moe_dispatch *out);

/* Memory per task and per dependency of a graph being replayed: the task
 * and the engine's per-task arrays (engine.c), and a dependency index. */
#define BUILD_TASK_BYTES ((double)sizeof(struct task) + 21.0)
#define BUILD_DEP_BYTES 5.0

#endif
