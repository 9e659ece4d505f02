/*
 * layout.h - where a rank sits in a parallel plan, and who its peers are.
 *
 * Ranks are numbered over the four parallel dimensions in the plan's order,
 * innermost first (Megatron's default: TP, CP, DP, PP), so that a rank's
 * coordinate in dimension order[0] changes fastest.  A collective runs over
 * a group of ranks (enum group_kind) that share every coordinate but the
 * ones the group spans; layout_group names the group of a rank and the
 * rank's place in it.  Plain arithmetic on the degrees: no allocation, no
 * SimGrid, usable by the builder, the engine, the traces and the tests.
 */
#ifndef WEFT_LAYOUT_H
#define WEFT_LAYOUT_H

#include <stdint.h>

/* Parallel dimensions, in the default rank order (innermost first). */
enum pdim { PD_TP, PD_CP, PD_DP, PD_PP, PD_COUNT };

/* Groups a collective runs over, resolved to ranks by layout_group. */
enum group_kind {
  GK_TP,    /* the tensor-parallel group of the rank */
  GK_DP,    /* its data-parallel group */
  GK_EMB,   /* first and last pipeline stage (tied embedding gradients) */
  GK_SHARD, /* the DP ranks of its shard group (HSDP: `shard` consecutive
               DP indices), with all their CP ranks */
  GK_REPL,  /* the DP ranks holding the same shard in the other groups */
  GK_EP,    /* its expert-parallel group: ep consecutive DP indices */
  GK_EDP,   /* the DP ranks holding the same experts (dp / ep of them) */
  GK_CP,    /* its context-parallel group */
  GK_DPCP,  /* data- and context-parallel ranks together (gradients) */
  GK_EDPCP, /* GK_EDP times the context-parallel ranks (expert gradients) */
  /* Tensor3D (plan.h): the tensor-parallel block of tp = gx gy gz ranks is
   * a grid, tensor index x + gx (y + gy z); its X, Y and Z groups. */
  GK_T3X, GK_T3Y, GK_T3Z,
  GK_EPN,   /* DeepEP's NVLink hop: the ep_node EP ranks of its node */
  GK_EPX,   /* its RDMA hop: the EP ranks of the same slot in each node */
  GK_ETP,   /* its expert tensor-parallel group: GK_TP unless etp is set */
  GK_TPEP,  /* expert TP x EP (Megatron-Core's tp_ep group, over which the
               allgather and flex dispatchers run): the etp x ep ranks of
               the expert generator's "tp-ep" with etp set, else the TP
               ranks of its EP group's DP indices */
  GK_COUNT
};

/* Parallel layout the programs refer to (a copy of the plan's degrees). */
struct graph_layout {
  long tp, pp, dp, cp, ep, vchunks;
  enum pdim order[PD_COUNT]; /* innermost first */
  long shard;        /* DP ranks per shard group (HSDP); 0 or dp: all */
  long t3[3];        /* Tensor3D grid gx, gy, gz (tp = their product);
                        all 0 without it */
  long ep_node;      /* EP ranks per node as DeepEP's two hops see them
                        (GK_EPN, GK_EPX); 0: ep */
  long etp;          /* MoE parallel folding (Megatron-Core's
                        --expert-tensor-parallel-size): 0: none; else
                        GK_ETP, GK_EP and GK_EDP/GK_EDPCP regroup each
                        pipeline stage's ranks (index s in tp-cp-dp order,
                        the default and only order allowed) as
                        s = etp_i + etp (ep_i + ep edp_i); GK_TPEP is
                        then etp ep consecutive s, and DeepEP's GK_EPN
                        and GK_EPX split it into nodes of etp ep_node */
};

/* Degree of dimension `d`. */
long layout_degree(const struct graph_layout *l, enum pdim d);

/* Ranks of the job: tp * cp * dp * pp. */
long layout_ranks(const struct graph_layout *l);

/* DP ranks per shard group: `shard`, or all of DP when it is 0. */
long layout_shard(const struct graph_layout *l);

/* Coordinates of `rank` (out_coord[d] for each enum pdim) and back. */
void layout_coords(const struct graph_layout *l, long rank,
                   long out_coord[PD_COUNT]);
long layout_rank(const struct graph_layout *l, const long coord[PD_COUNT]);

/* The group of kind `gk` that `rank` belongs to: its size, the rank's slot
 * in it (0 .. n-1, the order in which collectives visit the members), and
 * the rank of its slot-0 member, which names the group. */
struct layout_group {
  long n, slot, leader;
};
void layout_group(const struct graph_layout *l, enum group_kind gk, long rank,
                  struct layout_group *out);

/* The rank of slot `slot` of the group of kind `gk` led by `leader`
 * (layout_group's inverse). */
long layout_member(const struct graph_layout *l, enum group_kind gk,
                   long leader, long slot);

/* The group of data-parallel gradient reduction: GK_DPCP with context
 * parallelism (its ranks hold the same weights), else GK_DP. */
enum group_kind layout_grad_group(const struct graph_layout *l);

#endif
