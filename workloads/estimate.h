/*
 * estimate.h - a fast closed-form estimate of one iteration of a plan,
 * without building its task graph: what `weft plan` ranks thousands of
 * candidate plans with before it simulates the most promising ones.
 *
 * One probe graph of the same plan with one layer, one micro-batch and no
 * pipeline (the builder's own kernels and collectives, so nothing here
 * re-derives a layer's shapes) gives, for one layer and one micro-batch on
 * the first rank:
 *   F, B, R   its forward, backward and recomputation kernels, each timed
 *             by the operator cost model (costmodel.h: efficiencies, waves,
 *             fused attention by kernel, launch gaps);
 *   X         its collectives on the compute stream (tensor parallelism,
 *             the MoE all-to-alls), alpha-beta as closedform.h times them
 *             over the real plan's groups (NVLink inside a node, the NICs
 *             of the group's GPUs across nodes), all exposed;
 *   Z         its ZeRO-3/FSDP (or Tensor3D's Z) gathers and
 *             reduce-scatters (side streams), and K its context-parallel
 *             exchanges, which hide behind the layer's kernels and the
 *             attention kernels respectively: only max(0, Z - (F + B + R))
 *             and max(0, K - A) are exposed;
 *   P         Tensor3D's activation all-reduces (over X and Y), of which,
 *             with the micro-batch over-decomposed into k pieces, the last
 *             piece's are exposed and the others hide behind the next
 *             pieces' kernels: P / k + (k - 1) / k max(0, P - (F + B + R));
 * and, outside the layers, the embedding (first stage), the output layer
 * and loss (last stage) and the optimizer step (scaled by the parameters a
 * stage's GPU holds over the probe's).  Then for stage s holding L_s
 * layers, per micro-batch:
 *   t_s = L_s (F + B + R + X + exposed P, Z and K) + embedding or head
 *         + 2 v P when pipeline transfers block (P one transfer's
 *           alpha-beta time, v model chunks),
 * the pipeline takes (m + (pp - 1) / v) max_s t_s for m micro-batches per
 * pipeline (the 1F1B bubble, shrunk v times by interleaving), and each
 * stage ends with its data-parallel gradient reduction (all-reduce, or
 * reduce-scatter plus the parameters' all-gather after the step under
 * ZeRO-1/2, of the stage's gradients; hidden behind the last micro-batch's
 * backward when overlapped, as far as it lasts once the layers' own
 * reduce-scatters on the same stream are done) and its optimizer step:
 *   T = (m + (pp - 1) / v) max_s t_s + max_s (D_s exposed + O_s).
 * What it leaves out, the simulation has: contention between streams and
 * jobs on shared links, NCCL's protocols and per-step costs, the exact
 * schedule's dependencies, uneven stages' bubbles.
 */
#ifndef WEFT_ESTIMATE_H
#define WEFT_ESTIMATE_H

#include "platforms/cluster.h"
#include "workloads/model.h"
#include "workloads/plan.h"

struct estimate {
  double iteration_s;
  double compute_s;   /* the busiest stage's kernels, optimizer included */
  double exposed_s;   /* its communication not hidden */
  double bubble_s;    /* pipeline fill and drain */
};

/* Estimate resolved plan `p` of `m` on `c`, computing in `dt` with fused
 * attention kernel `attn` (-1: the GPU's default).  Returns 0, or an error
 * when the probe graph cannot be built. */
int estimate_plan(const struct model *m, const struct plan *p,
                  const struct cluster *c, enum dtype dt, int attn,
                  struct estimate *out, struct weft_err *err) WEFT_WUR;

#endif
