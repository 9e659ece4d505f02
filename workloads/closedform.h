/*
 * closedform.h - the closed-form estimate of an iteration that analytical
 * models in the literature make, evaluated on the same task graph as the
 * simulation, so that a report can show where and why they part.
 *
 * Per pipeline stage s, for the stage's first rank (ranks of a stage run
 * the same program):
 *   compute C_s   roofline of every kernel at datasheet peaks:
 *                 max(flops / peak[precision], bytes / hbm_bw); no
 *                 efficiency, launch gap or wave quantization;
 *   collectives   alpha-beta, no contention: steps * alpha + wire / beta,
 *                 NCCL's ring counts (all-reduce 2(n-1) steps moving
 *                 2(n-1)/n of the buffer, all-gather, reduce-scatter and
 *                 all-to-all n-1 steps moving (n-1)/n, broadcast n-1 steps
 *                 moving all of it, send/recv one step moving all of it);
 *                 beta the group's slowest level: NVLink per direction inside
 *                 one node, else the NIC bandwidth of the group's GPUs in a
 *                 node (nic_bw x nics_per_node x members_per_node /
 *                 gpus_per_node, and never above NVLink when two or more
 *                 share a node; on a dragonfly, when the group spans
 *                 routers, never above its share of the local links
 *                 joining two routers, which the same collective of every
 *                 group on the router crosses at once);
 *                 an all-to-all or a send/recv across
 *                 nodes instead sends each GPU's off-node share through
 *                 its own NIC (nic_bw x nics_per_node / gpus_per_node) and
 *                 its on-node share over NVLink, whichever takes longer;
 *                 alpha the NVLink latency inside a node, else two NIC
 *                 latencies and one switch hop (three when the group spans
 *                 leaves, five when it spans pods);
 *   overlap       a fixed assumption: collectives on the compute stream
 *                 (tensor, expert parallelism) and pipeline transfers are
 *                 exposed; data-parallel reductions, ZeRO/FSDP gathers and
 *                 context-parallel exchanges (side streams) hide behind the
 *                 stage's compute and only their excess is exposed;
 *   pipeline      the busiest stage's forward-backward work F (compute and
 *                 exposed) stretched by the 1F1B bubble:
 *                 F (1 + (pp - 1) / (m v)), m micro-batches per pipeline, v
 *                 model chunks per stage; the optimizer step and the side
 *                 streams' excess follow.
 * It also counts the bytes the job sends across NICs and the switch ports
 * they cross (per node, a ring sends its per-rank wire bytes out once;
 * one switch when the group stays under one leaf, three when it leaves it,
 * five across pods, in proportion of the ring's edges that do), which the
 * report turns into network energy.
 */
#ifndef WEFT_CLOSEDFORM_H
#define WEFT_CLOSEDFORM_H

#include "platforms/cluster.h"
#include "sim/graph/graph.h"

struct closed_form {
  double iteration_s;
  double compute_s;   /* busiest stage: roofline of its kernels */
  double comm_s;      /* busiest stage: all its collectives and transfers */
  double exposed_s;   /* of comm_s, what the overlap assumption exposes */
  double bubble_s;    /* pipeline fill and drain */
  double nic_bytes;   /* bytes leaving nodes through NICs, whole job */
  double port_bytes;  /* bytes times switch ports crossed, whole job */
};

/* Evaluate the estimate of `g` on `c` for a model computing in `dt`. */
/* The pipeline bubble as a share of a stage's busy time, for PP stages,
 * V model chunks and M micro-batches a pipeline: (PP - 1) / (V M) (1F1B,
 * interleaved with groups of PP); with fewer micro-batches than stages
 * (Megatron-Core's flexible interleaving with one group of M, Llama 3's
 * layout), the last micro-batch leaves the first stage after V PP + M - 1
 * chunk passes: (V (PP - M) + M - 1) / (V M). */
double closed_form_bubble_share(long pp, long v, long m);

void closed_form_eval(const struct graph *g, const struct cluster *c,
                      enum dtype dt, struct closed_form *out);

/* Agarwal et al.'s performance model of data parallelism with gradient
 * compression ("On the Utility of Gradient Compression in Distributed
 * Training Systems", MLSys 2022, Sec. 3), on the first stage's program:
 * the iteration is the forward, then the longer of the backward and the
 * bucketed data-parallel communication (which overlap), then the
 * compression's encoding and decoding and the optimizer step, added:
 *   T = F + max(B, C) + E + O
 * F, B, O the cost model's kernel times by phase (recomputation counted
 * in B), E the compression kernels, C every data-parallel gradient
 * collective at the alpha-beta times above.  dp_bytes: those
 * collectives' buffers per GPU (an all-gather's whole output). */
struct ddp_model {
  double iteration_s, fwd_s, bwd_s, comm_s, codec_s, optim_s;
  double dp_bytes;
};
void closed_form_ddp(const struct graph *g, const struct cluster *c,
                     enum dtype dt, struct ddp_model *out);

/* The same alpha-beta time of one collective `op` on `bytes` over the
 * group of kind `gk` of `rank` (layout `l` on `c`; 0 for a group of one),
 * and of one transfer of `bytes` from `rank` to `peer`. */
double closed_form_coll_s(const struct cluster *c,
                          const struct graph_layout *l, long rank,
                          enum group_kind gk, enum coll_op op, double bytes);
double closed_form_send_s(const struct cluster *c, long rank, long peer,
                          double bytes);

#endif
