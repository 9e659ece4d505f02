/*
 * coll.h - collective algorithms: NCCL's protocol and closed-form models,
 * and the expansion of one collective into flows, as plain data.
 *
 * The engine (engine.c) hands a collective whose members have all arrived
 * to coll_plan_make, which picks the algorithm and protocol and says what
 * to simulate: a number of phases, each a set of flows started together
 * (and, in phase 0, possibly a delay that runs beside them), then a delay
 * after the last phase.  coll_phase_flows lists the flows of one phase.
 * Nothing here touches SimGrid: route latencies come from a callback, so
 * the expansions are tested without an engine (tests/test_coll.c).
 *
 * A ring collective costs
 *   coll_lat x protocol fraction + steps x route latency
 *   + bytes per edge / (bandwidth x eff x ring scale x protocol share)
 * (the flows carry the bytes and pay one route latency; the delay after
 * them carries the rest).  The constants and the rows they come from are
 * in coll.c's header comment and in the catalog's coll_* node attributes.
 *
 * Fidelity: at "flow" one flow per ring edge and channel carries the bytes
 * of all the algorithm's steps; at "step" every ring step is a phase of its
 * own (all-reduce, all-gather, reduce-scatter, broadcast).  Without
 * contention both give the same times; they differ when other traffic
 * shares the links during the collective.
 */
#ifndef WEFT_COLL_H
#define WEFT_COLL_H

#include <stdbool.h>
#include <stdint.h>

#include "platforms/cluster.h"
#include "sim/graph/graph.h"

/* Collective algorithms (the table behind `weft list collectives`). */
enum coll_algo { CA_AUTO, CA_RING, CA_TREE, CA_HIER, CA_NVLS, CA_DIRECT,
                 CA_PAT, CA_TORUS, CA_NVLSTREE, CA_COUNT };
int coll_algo_from_name(const char *name); /* -1 when unknown */
const char *coll_algo_name(enum coll_algo a);
const char *coll_algo_summary(enum coll_algo a);
const char *coll_algo_ops(enum coll_algo a);

/* Fidelity of collectives: flow (the default), step, or step for groups of
 * up to 16 GPUs and flow above (auto). */
enum fidelity { FID_FLOW, FID_STEP, FID_AUTO };
int fidelity_from_name(const char *name);
/* "flow", "step", "auto". */
const char *fidelity_name(enum fidelity f); /* -1 when unknown */

/* The calibrated constants of coll.c (see its header for their rows). */
#define COLL_LAT_LL128 0.616
#define COLL_LAT_LL 0.448
#define COLL_LAT_NVLS 1.985
#define COLL_TREE_BW 12.317e9
#define COLL_LL128_EFF 0.9375 /* NCCL's wire format: 120 of 128 bytes */
#define COLL_LL_EFF 0.5       /* half of each 8-byte word is a flag */
/* GPUs per node the quotient (coll_model.quot) handles at most. */
#define COLL_MAX_GPN 128

/* NCCL's per-step latencies, microseconds, by protocol: Simple, LL128, LL.
 * From NCCL 2.30.7, src/graph/tuning.cc (ncclTunerConstantsDefaults,
 * hwLatencies; ncclTopoTuneModel for how they add up).  A ring spanning
 * nodes pays, besides its fixed cost, every step: (steps - inter-node
 * steps) x COLL_HOP_NVL (at least NCCL's net overhead, 1 us on x86, x3 for
 * Simple) + inter-node steps x COLL_HOP_NET (COLL_TREE_HOP_NET when every
 * member is on its own node: "with ppn=1 latencies are fully exposed");
 * a tree pays 2 x ((GPUs per node - 1) x COLL_TREE_HOP_NVL + floor(log2
 * nodes) x COLL_TREE_HOP_NET).  NCCL multiplies a multi-node Simple ring
 * all-reduce's latency by 1.4 ("plateau effect of ring", Ampere and
 * later, ncclTopoGetAlgoTime). */
#define COLL_HOP_NVL {3.4, 1.9, 0.6}
#define COLL_HOP_NET {14.0, 4.0, 2.7}
#define COLL_TREE_HOP_NVL {4.0, 1.25, 0.6}
#define COLL_TREE_HOP_NET {14.0, 8.5, 5.0}
#define COLL_NET_OVERHEAD 1.0
#define COLL_RING_PLATEAU 1.4
/* A ring inside one node, as NCCL 2.26.2 to 2.30.7 model it (tuning.cc:
 * baseLatencies of Ring, the NVLink hwLatencies above, "various model
 * refinements"): LL and LL128 cost COLL_RING_BASE + steps x COLL_HOP_NVL
 * (Simple keeps its measured fixed latency), LL moves bytes at half the
 * ring's bandwidth, capped by the node type's coll_ll_bw (NCCL's llMaxBws
 * for one node: Ampere 87.7, Hopper 141, Blackwell 282 GB/s), and LL128 at
 * COLL_LL128_NCCL of it. */
#define COLL_RING_BASE {8.4, 14.0, 6.6}
#define COLL_LL128_NCCL 0.92
/* LL across nodes (issue 37): NCCL keeps the send side's LL buffers in
 * host memory, never on the GPU (src/transport/net.cc sendProxySetup:
 * NCCL_NET_MAP_ADD_POINTER with device memory only for p != LL), and its
 * proxy thread checks the flags of every 16-byte line there before it
 * posts a step (sendProxyProgress), so LL's bandwidth across nodes is
 * far below the NICs': NCCL's tuner caps a ring's LL bus bandwidth at
 * llMaxBws (2.30.7 tuning.cc, the x86 row used across nodes unless the
 * CPU is AMD: 39.0 GB/s over two nodes, 20.4 over more), and so does
 * weft, for its choice and its cost.  NEEDSWORK: AMD hosts (DGX A100)
 * have 22.5 and 19.0; the node type does not say its CPU. */
#define COLL_LL_NET_BW_2N 39.0e9
#define COLL_LL_NET_BW 20.4e9
/* PAT (NCCL >= 2.23; 2.30.7 tuning.cc): all-gather and reduce-scatter with
 * one GPU per node, Simple only: latency floor(log2 nodes) x
 * COLL_TREE_HOP_NET(Simple) / 3.5 + ranks x COLL_PAT_PER_RANK on top of the
 * fixed cost, at COLL_PAT_BW of the ring's bandwidth. */
#define COLL_PAT_PER_RANK 2.8
#define COLL_PAT_BW 0.75
/* NVLSTree all-reduce (NCCL >= 2.18 on NVSwitch nodes across nodes;
 * 2.30.7 tuning.cc: latency intraLat + 2 x log2i(nodes) x interLat): NVLS's
 * fixed cost inside the node (COLL_LAT_NVLS of coll_lat), then
 * 2 x floor(log2 nodes) network hops of the trees between the nodes' head
 * GPUs at COLL_NVLSTREE_HOP_NET microseconds each.  NCCL's tuner charges
 * 20.9 us a hop (14 us in 2.19 to 2.28); the hop here is fitted on one
 * measurement at 1024 nodes (coll.c's header names the row). */
#define COLL_NVLSTREE_HOP_NET 45.7
/* NCCL's own NVLSTree latencies, by which its tuner chooses (2.30.7
 * tuning.cc hwLatencies, Simple: NVLink 25 us, network 20.9 us; base 0). */
#define COLL_NVLSTREE_NVL_NCCL 25.0
#define COLL_NVLSTREE_HOP_NCCL 20.9
/* The network step, microseconds: what a tree's hop across nodes costs
 * beyond what NCCL's tuner charges for it, the NVLSTree hop measured
 * (COLL_NVLSTREE_HOP_NET) less the tuner's (24.8 us).  Trees' network
 * hops, at every protocol, take NCCL's hop latency plus this (coll.c,
 * tree_estimate; rings keep NCCL's hops, nccl_ring_hops says why); NCCL
 * still chooses by its own latencies. */
#define COLL_NET_STEP 24.8 /* COLL_NVLSTREE_HOP_NET - COLL_NVLSTREE_HOP_NCCL */
/* NCCL's base latency of a tree all-reduce (tuning.cc baseLatencies, Tree),
 * microseconds: Simple, LL128, LL. */
#define COLL_TREE_BASE {8.4, 14.0, 6.8}

/* Everything the collective model needs, resolved: the engine fills it
 * from its parameters and the cluster (coll_model_resolve). */
struct coll_model {
  enum coll_algo algo;
  enum fidelity fidelity;
  double nvlink_eff;  /* share of NVLink bandwidth rings reach */
  double nic_eff;     /* share of NIC bandwidth */
  double nvls_eff;    /* share of NVLink bandwidth NVLS reaches */
  double tree_bw;     /* algorithm bandwidth of one channel's pair of trees,
                         bytes/s (<= 0: no limit) */
  double coll_lat_s;  /* Simple's fixed latency of a collective */
  double lat_ll128, lat_ll, lat_nvls; /* fractions of coll_lat_s */
  double ring_loss;   /* NIC share a ring loses per doubling of its nodes
                         beyond two */
  double ll128_eff, ll_eff; /* bandwidth shares of the protocols */
  bool free_comm;     /* communication takes no time */
  bool closed_form;   /* time whole-node collectives in closed form */
  bool sym_fabric;    /* every node is wired alike (a NIC per GPU, no
                         oversubscription, no PXN routes) and nothing
                         needs each flow:
                         a ring over whole nodes emits the flows of its
                         first node only (coll_plan.rep) */
  bool a2a_rep;       /* expert replica symmetry (sim/symmetry.h): an
                         all-to-all across nodes emits only the flows
                         that leave or enter its first node (coll_plan.rep)
                         */
  bool quot;          /* with a2a_rep, the quotient (sim/symmetry.h): a
                         ring or all-to-all across nodes (rep) emits the
                         flows out of its first node only, those to other
                         nodes into twins (twin, coll_plan.quot)
                         */
  /* The quotient's flows into twins (quot needs it): twin(ctx, src,
   * dst, wire_bytes, mult) stands for `mult` flows from member src to
   * the members on other nodes at dst's GPU of their node (dst one of
   * them), each of wire_bytes; the caller routes it into the GPU of
   * src's node in dst's place (sim/platload.h, twins).  ctx is
   * coll_phase_flows'. */
  void (*twin)(void *ctx, int src, int dst, double wire_bytes, int mult);
  const long *rep_nodes; /* rings (rep) under stage replica symmetry
                         over several leaf groups (sim/symmetry.h,
                         symmetry_stage_classes): per node position of a
                         stage (node mod rep_n), > 0 where the node is
                         simulated; its ring edges out and in are
                         emitted (NULL: the first node's only).
                         Borrowed. */
  long rep_n;
  bool nccl_hops;     /* steps across nodes pay NCCL's per-step latencies
                         (COLL_HOP_*); false: the route latency of each
                         step only (an ideal network) */
  /* The cluster: */
  int gpus_per_node;
  bool nvls;          /* the node's switch can reduce (NVLS) */
  double nvlink_bw_Bps, nic_bw_Bps, nvlink_lat_s;
  double floor_s;     /* least time of a collective inside a node */
  double ll_bw_Bps;   /* NCCL's cap on a one-node LL ring (0: none) */
  double p2p_nvlink_lat_s, p2p_net_lat_s; /* a send's fixed latency inside a
                                             node and across nodes */
  /* A torus fabric's nodes per dimension (torus_ndims 0: no torus); the
   * job's node i is the torus node i (placement is packed on a torus). */
  int torus_ndims, torus_dim[3];
};

/* Fill the cluster's fields of `m` and, for each calibration field that is
 * unset (efficiencies <= 0, coll_lat_s and ring_loss < 0), the node type's
 * value from the catalog, or the catalog's default. */
void coll_model_resolve(struct coll_model *m, const struct cluster *c);

/* One collective to expand: `n` members by rank (node = rank /
 * gpus_per_node), `bytes` as in graph.h (nccl-tests sizes).  sym_n > 1:
 * one representative stands for a whole-node group of sym_n GPUs.
 * route_lat gives the latency of the route between two ranks. */
struct coll_call {
  enum coll_op op;
  int n;
  const int32_t *ranks; /* borrowed */
  double bytes;
  int sym_n;
  double (*route_lat)(void *ctx, long rank_a, long rank_b);
  void *ctx;
  /* Other collectives may move data over the same links while it runs
   * (one not on the compute stream: data-parallel buckets, FSDP gathers
   * and reduce-scatters, CP exchanges).  A whole-node group is then
   * simulated as flows, which share the links, not timed in closed form,
   * which would give it every link to itself. */
  bool shared;
};

/* What to simulate.  Phases run one after the other; a phase is done when
 * its flows (and phase 0's delay) are.  After the last phase, a delay of
 * extra_s (none when zero).  nphases == 0: the delay alone (a closed form),
 * or nothing at all when extra_s is zero. */
enum coll_shape { CS_NONE, CS_CLOSED, CS_NVLS, CS_TREE, CS_HIER, CS_RING,
                  CS_DIRECT, CS_TORUS, CS_NVLSTREE };
struct coll_plan {
  enum coll_shape shape;
  enum coll_algo algo;  /* what runs (never CA_AUTO) */
  int nphases;
  double extra_s;       /* delay after the last phase */
  double delay0_s;      /* delay beside phase 0's flows */
  long closed_flows;    /* flows the closed form stands for */
  /* Expansion state (read by coll_phase_flows): */
  int g, nodes, channels; /* members per node, nodes, channels */
  double edge_bytes;    /* bytes per flow (per ring edge and channel) */
  double pe;            /* protocol share of the bandwidth */
  double net_scale;     /* share of nic_eff its inter-node flows reach */
  double S;             /* the collective's bytes */
  bool rep;             /* a ring over regular nodes on a symmetric
                           fabric: only the first node's flows (its ring
                           edges inside the node and its channels to the
                           next node and from the previous) are emitted;
                           every other node's are the same flows on
                           links of their own, which max-min sharing
                           gives the same rates, so the collective takes
                           the same time (not with PXN routes, whose
                           channel from the previous node crosses that
                           node's NVLinks: sym_fabric is then false).
                           closed_flows counts the others. */
  bool quot;            /* rep under the quotient (coll_model.quot): a
                           ring's edges inside its first node and its
                           channels out of it, into twins, not those into
                           it (their images); an all-to-all's flows out
                           of the first node's members, those to other
                           nodes merged by the destination's GPU into one
                           twin flow each.  closed_flows counts the
                           others. */
  int busiest;          /* trees (and NVLSTree's) under rep: the node
                           whose place node 0 takes */
  /* Torus: phase k's stage, in order: -1 the reduce-scatter inside each
   * node, -2 the all-gather inside each node, else a dimension stage
   * (stage_k its place in the dimension order, 0 first). */
  int stage[8];
  int stage_k[8];
  int torus_k, torus_b0; /* the sub-torus: its first k dimensions, from
                            node b0 */
};

/* Pick the algorithm and protocol of `call` and fill *out. */
void coll_plan_make(const struct coll_model *m, const struct coll_call *call,
                    struct coll_plan *out);

/* The flows of phase `phase` of `p`, in a fixed order: emit(ctx, src, dst,
 * wire_bytes) per flow, src and dst as member indices of call->ranks,
 * wire_bytes the bytes divided by the efficiency of the link kind it
 * crosses (NVLink inside a node, the NIC across) and the protocol share.
 * Returns the number of flows. */
typedef void (*coll_emit_fn)(void *ctx, int src, int dst, double wire_bytes);
long coll_phase_flows(const struct coll_model *m, const struct coll_call *call,
                      const struct coll_plan *p, int phase, coll_emit_fn emit,
                      void *ctx);

/* Wire bytes of `bytes` between ranks a and b at protocol share pe. */
double coll_wire_bytes(const struct coll_model *m, long rank_a, long rank_b,
                       double bytes, double pe, double net_scale);

/* A point-to-point send (a pipeline send: NCCL's ncclSend/ncclRecv) of
 * `bytes` from rank src to rank dst costs the node type's p2p latency (of
 * NVLink inside a node, of the network across) and its bytes at the link's
 * share (coll_wire_bytes: NCCL's sendrecv_perf reaches the rings' share,
 * analysis/calibrate_coll.py):
 *   t = p2p_lat + bytes / (link bandwidth x eff).
 * The flow carrying the bytes pays its route's latency route_lat_s; this
 * returns the delay after it, p2p_lat - route_lat_s (none when the route
 * alone is longer, and none on an ideal network: nccl_hops false). */
double coll_p2p_extra(const struct coll_model *m, long src, long dst,
                      double route_lat_s);

/* Closed forms, seconds: NVLS all-reduce of S bytes inside one node, and a
 * collective over n GPUs of one node as a ring (direct for all-to-all). */
double coll_nvls_time(const struct coll_model *m, double S);
double coll_node_ring_time(const struct coll_model *m, enum coll_op op, int n,
                           double S);

#endif
