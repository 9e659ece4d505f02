/*
 * coll.c - collective algorithms and NCCL's cost model (coll.h).
 *
 * Calibration (analysis/calibrate_coll.py derives every constant below and
 * in the catalog's coll_* attributes, and names its rows; every other COLL
 * row of shared/validation/calibration.csv is held back,
 * tests/validation/coll_rows.sh).  A ring collective costs
 *   coll_lat x protocol fraction + steps x route latency
 *   + bytes per edge / (bandwidth x eff x ring scale x protocol share):
 *   per node type (catalog): coll_nvlink_eff and coll_lat (Simple) from two
 *     sizes of one measured all-reduce curve (Hopper: 128 MiB and 2 GiB of
 *     8 H100, tests/validation/nccl_h100_8gpu_ring.csv, 366 GB/s + 60.8 us;
 *     Ampere: COLL-SB-A100-AR-1GiB and -16GiB, 235 GB/s + 218 us: an older
 *     NCCL on an older system); coll_nic_eff from one multi-node row;
 *     coll_ring_loss (B200 only): the NIC share a ring loses per doubling
 *     of its nodes beyond two, from the 2- and 46-node rows (a bandwidth
 *     loss: the 8 GiB and 16 GiB rings agree at 16 and 32 nodes);
 *   COLL_LAT_LL 0.448 of Simple's latency: the 8-byte all-reduce of 8 H100;
 *   COLL_LAT_LL128 0.616: the 32 MiB one, both on Hopper's line;
 *   COLL_LAT_NVLS 1.985: NVLS all-reduce of 8 H100 at 8 GiB and 8 H200 at
 *     64 MiB;
 *   COLL_TREE_BW 12.3 GB/s per channel: tree all-reduce of 4 B200 nodes at
 *     190.7 GB/s (NCCL's trees run far below their links and do not slow
 *     down with depth: 193.2 GB/s at 46 nodes).
 *   COLL_NVLSTREE_HOP_NET 45.7 us, the network hop of NVLSTree's trees:
 *     COLL-GTC24-NVLSTREE-8192-128M (1024 DGX H100, 155 GB/s); the other
 *     GTC24 NVLSTree rows, COLL-TOG-H100-2N-NVLS, COLL-UA-B200-AR-NVLS-2N
 *     and the Fernandez et al. rows (auto) are held back.
 *   COLL_NET_STEP 24.8 us, that hop less NCCL's tuner's (20.9 us): what
 *     a network step costs beyond what NCCL charges for it, added to
 *     trees' network hops at every protocol (not to rings': coll.c
 *     nccl_ring_hops; issue 37: with NCCL's hops weft's H100 all-reduces
 *     across nodes, trees at those sizes, ran 1.5-2.4x too fast at 2-16
 *     MiB against Fernandez et al.'s scan, all of which stays held back).
 *     Presumably the proxy's path of a step (the sender's proxy thread
 *     sees the GPU's step and posts it, the receiver's sees it land and
 *     tells its GPU: src/transport/net.cc sendProxyProgress,
 *     recvProxyProgress), which NCCL's per-protocol hops leave out; not
 *     measured apart.  A small LL send between two nodes, 6.6 + 2.7 us in
 *     NCCL's model, takes 31-34 us measured (calibrate_coll.py's checks),
 *     9.3 + 24.8 = 34.1 us with the step (pipeline sends do not carry it:
 *     the catalog's p2p_net_lat is NCCL's Simple step).
 * NCCL chooses by its own estimates (tuning.cc: its base and hardware
 * latencies), what runs costs the hops above: across nodes ring, tree and
 * NVLSTree are weighed with NCCL's base latencies (COLL_RING_BASE,
 * COLL_TREE_BASE) and NVLSTree's tuner latencies (COLL_NVLSTREE_*_NCCL),
 * not with the calibrated ones (before issue 37 NVLSTree was weighed by
 * its measured hop, 45.7 us, and lost to the ring on 4-8 H100 nodes at
 * 16-512 MiB, where the scan follows NVLSTree's curve).  NEEDSWORK: a
 * ring's protocol across nodes is still chosen with the fixed latencies
 * coll_lat x fraction rather than NCCL's base ones.
 * The tree's cap per channel agrees with NCCL's own model (2.30.7
 * tuning.cc, beyond two nodes): perChMaxTreeBws Blackwell 24 GB/s of bus
 * bandwidth per channel, algorithm bandwidth half of it (ratio .5), 12.0
 * GB/s, over 8 channels (search.cc ncclTopoDupChannels does not double
 * them on Hopper and Blackwell with 8 NICs: bwIntra 48 < 50 and more than
 * 4 channels), constant in the node count: 192 GB/s, measured 190.7 and
 * 193.2 at 4 and 46 B200 nodes.  NEEDSWORK: NCCL's Hopper cap is 36, not
 * 24 (18 GB/s per channel, 288 GB/s of bus bandwidth), and Ampere's 17.8;
 * COLL_TREE_BW is Blackwell's for every node type, which only matters
 * where auto picks the tree for large messages (no longer on NVLS nodes,
 * where NVLSTree wins; on A100 nodes it does).
 * The protocol shares 0.5 (LL) and 0.9375 (LL128) are NCCL's wire
 * formats, not fitted.
 * Inside one node whose type gives a coll_floor (Hopper, Blackwell), a
 * ring all-reduce, all-gather or reduce-scatter follows NCCL 2.26-2.30's
 * own model instead (node_ring_shape: its latencies per protocol and step,
 * LL capped at llMaxBw, LL128 at 0.92), under that floor; the one constant
 * fitted is the floor, on the 8-byte all-reduce of 8 H100.
 *
 * Flows are emitted in a fixed order for every algorithm: SimGrid shares
 * bandwidth by max-min fairness, whose ties the order of start decides, so
 * the order is part of the results.
 */
#include "sim/coll.h"

#include <math.h>
#include <string.h>

#include "platforms/catalog.h"
#include "platforms/topo.h"

/* ---- the algorithm table ----------------------------------------------- */

/* Members of a collective by node, as the algorithms see them. */
struct group_shape {
  int nodes, g;     /* nodes, members per node (channels > 1 only) */
  int span;         /* nodes the members span */
  int channels;     /* NCCL channels: one per member GPU of a node when a
                       regular group crosses nodes, else 1 */
  bool cross;       /* some flow crosses nodes */
  int torus_k;      /* the members form a sub-torus of this many
                       dimensions (torus_block; 0: they do not) */
};

typedef void (*coll_plan_fn)(const struct coll_model *m,
                             const struct coll_call *call,
                             const struct group_shape *t, struct coll_plan *out);
struct emitter;
typedef void (*coll_flows_fn)(struct emitter *e, const struct coll_plan *p,
                              int phase);

static void ring_plan(const struct coll_model *, const struct coll_call *,
                      const struct group_shape *, struct coll_plan *);
static void tree_plan(const struct coll_model *, const struct coll_call *,
                      const struct group_shape *, struct coll_plan *);
static void hier_plan(const struct coll_model *, const struct coll_call *,
                      const struct group_shape *, struct coll_plan *);
static void nvls_plan(const struct coll_model *, const struct coll_call *,
                      const struct group_shape *, struct coll_plan *);
static void pat_plan(const struct coll_model *, const struct coll_call *,
                     const struct group_shape *, struct coll_plan *);
static void torus_plan(const struct coll_model *, const struct coll_call *,
                       const struct group_shape *, struct coll_plan *);
static void nvlstree_plan(const struct coll_model *, const struct coll_call *,
                          const struct group_shape *, struct coll_plan *);
static void torus_phase(struct emitter *, const struct coll_plan *, int);
static void nvlstree_phase(struct emitter *, const struct coll_plan *, int);
static void ring_phase(struct emitter *, const struct coll_plan *, int);
static void tree_phase(struct emitter *, const struct coll_plan *, int);
static void hier_phase(struct emitter *, const struct coll_plan *, int);
static void nvls_phase(struct emitter *, const struct coll_plan *, int);
static void direct_phase(struct emitter *, const struct coll_plan *, int);

static const struct coll_algo_entry {
  const char *name, *ops, *summary;
  coll_plan_fn plan;   /* NULL: resolved to another entry (auto) */
  coll_flows_fn flows;
} algos[CA_COUNT] = {
    [CA_AUTO] = {"auto", "all", "NCCL's choice by estimate: inside an NVLS "
                 "node NVLS or ring all-reduce; across nodes ring or tree "
                 "all-reduce, or NVLSTree on NVLS nodes; ring or PAT "
                 "all-gather and reduce-scatter at one GPU per node; ring "
                 "broadcast; direct all-to-all; on a torus, torus "
                 "collectives over sub-tori",
                 NULL, NULL},
    [CA_RING] = {"ring", "allreduce allgather reducescatter broadcast",
                 "NCCL ring; one channel per member GPU of a node when it "
                 "crosses nodes, each through its own NIC",
                 ring_plan, ring_phase},
    [CA_TREE] = {"tree", "allreduce", "double binary trees across nodes, one "
                 "pair per channel (each through its own GPU and NIC), chains "
                 "inside nodes; reduce up, broadcast down, pipelined",
                 tree_plan, tree_phase},
    [CA_HIER] = {"hierarchical", "allreduce", "reduce-scatter in each node, "
                 "all-reduce across nodes per rail (GPU i of every node), "
                 "all-gather in each node", hier_plan, hier_phase},
    [CA_NVLS] = {"nvls", "allreduce", "NVLink SHARP: the NVSwitch reduces; "
                 "each GPU moves S up and S down (NVSwitch gen 3 and later, "
                 "within one NVLink domain)", nvls_plan, nvls_phase},
    [CA_DIRECT] = {"direct", "alltoall", "every pair exchanges its share "
                   "directly", ring_plan, direct_phase},
    [CA_PAT] = {"pat", "allgather reducescatter", "NCCL's PAT at one GPU per "
                "node (NCCL >= 2.23): log-depth latency, 3/4 of the ring's "
                "bandwidth; other groups run rings", pat_plan, ring_phase},
    [CA_TORUS] = {"torus", "allreduce allgather reducescatter",
                  "on a torus fabric, over a sub-torus (every node, or whole "
                  "rings or planes of them in node order): in each node a "
                  "reduce-scatter, then dimension by dimension rings between "
                  "neighbours, 2 x dimensions of them at once (each from its "
                  "own dimension, both ways round) so that every port is "
                  "busy, then the all-gathers back; other groups run rings",
                  torus_plan, torus_phase},
    [CA_NVLSTREE] = {"nvlstree", "allreduce", "NCCL's NVLSTree across NVLS "
                     "nodes (NCCL >= 2.18): NVLink SHARP reduces inside each "
                     "node, each GPU heads one channel's double binary trees "
                     "between the nodes through its own NIC, NVLS "
                     "broadcasts back, pipelined; other groups as auto",
                     nvlstree_plan, nvlstree_phase},
};

int coll_algo_from_name(const char *name)
{
  for (int a = 0; a < CA_COUNT; a++)
    if (strcmp(algos[a].name, name) == 0)
      return a;
  return -1;
}

const char *coll_algo_name(enum coll_algo a) { return algos[a].name; }
const char *coll_algo_summary(enum coll_algo a) { return algos[a].summary; }
const char *coll_algo_ops(enum coll_algo a) { return algos[a].ops; }

static const char *const fidelity_names[] = {"flow", "step", "auto"};

int fidelity_from_name(const char *name)
{
  for (int i = 0; i < 3; i++)
    if (strcmp(fidelity_names[i], name) == 0)
      return i;
  return -1;
}

const char *fidelity_name(enum fidelity f) { return fidelity_names[f]; }

/* ---- the model --------------------------------------------------------- */

void coll_model_resolve(struct coll_model *m, const struct cluster *c)
{
  if (m->nvlink_eff <= 0)
    m->nvlink_eff = c->coll_nvlink_eff > 0 ? c->coll_nvlink_eff
                                           : CATALOG_DEFAULT_NVLINK_EFF;
  if (m->nic_eff <= 0)
    m->nic_eff = c->coll_nic_eff > 0 ? c->coll_nic_eff
                                     : CATALOG_DEFAULT_NIC_EFF;
  if (m->ring_loss < 0)
    m->ring_loss = c->coll_ring_loss;
  if (m->coll_lat_s < 0)
    m->coll_lat_s = c->coll_lat_s > 0 ? c->coll_lat_s
                                      : CATALOG_DEFAULT_COLL_LAT;
  if (m->nvls_eff <= 0)
    m->nvls_eff = c->coll_nvls_eff > 0 ? c->coll_nvls_eff
                                       : CATALOG_DEFAULT_NVLS_EFF;
  m->gpus_per_node = c->gpus_per_node;
  m->nvls = c->nvls;
  m->nvlink_bw_Bps = c->gpu.nvlink_bw_Bps;
  m->nic_bw_Bps = c->nic.bw_Bps;
  m->nvlink_lat_s = c->nvlink_lat_s;
  m->floor_s = c->coll_floor_s;
  m->ll_bw_Bps = c->coll_ll_bw_Bps;
  m->p2p_nvlink_lat_s = c->p2p_nvlink_lat_s;
  m->p2p_net_lat_s = c->p2p_net_lat_s;
  m->torus_ndims = topo_fabric(c->topology)->node_torus ? c->torus_ndims : 0;
  for (int d = 0; d < 3; d++)
    m->torus_dim[d] = d < m->torus_ndims ? c->torus_dim[d] : 1;
}

static long node_of(const struct coll_model *m, long rank)
{
  return rank / m->gpus_per_node;
}

double coll_wire_bytes(const struct coll_model *m, long rank_a, long rank_b,
                       double bytes, double pe, double net_scale)
{
  double eff = pe * (node_of(m, rank_a) == node_of(m, rank_b)
                         ? m->nvlink_eff
                         : m->nic_eff * net_scale);
  return bytes / eff;
}

/* A pipeline send is one NCCL send/recv pair (Megatron-LM's
 * p2p_communication.py: batch_isend_irecv), not a collective: none of a
 * collective's launch and synchronisation of a whole group (coll_lat), only
 * what a send costs beyond its bytes.  NCCL 2.30.7 (src/enqueue.cc
 * addP2pToPlan) sends a message above nChannels x NCCL_P2P_LL_THRESHOLD
 * (16 KiB) with the Simple protocol, split over up to p2pnChannelsPerPeer
 * channels (src/graph/paths.cc: 2 per NVLink's worth of bandwidth, at least
 * one per NIC across nodes) in chunks of NCCL_P2P_NVL_CHUNKSIZE (512 KiB)
 * or NCCL_P2P_NET_CHUNKSIZE (128 KiB), pipelined NCCL_STEPS deep, so its
 * bytes run at the link's rate and its latency is the pipeline's fill and
 * drain: what NCCL's tuner charges one Simple step of a ring (tuning.cc:
 * base latency 8.4 us plus the link's hardware latency, NVLink 3.4 us,
 * network 14 us in 2.30.7 and 9.6 us in 2.8-2.9).  The catalog's
 * p2p_nvlink_lat and p2p_net_lat hold those sums per node type
 * (analysis/calibrate_coll.py, with the measurements that check them).
 * NEEDSWORK: messages small enough for LL (about 7 us over NVLink in
 * NCCL's model) pay Simple's latency here. */
static double send_extra(const struct coll_model *m, bool cross,
                         double route_lat_s)
{
  double lat = cross ? m->p2p_net_lat_s : m->p2p_nvlink_lat_s;
  return lat > route_lat_s ? lat - route_lat_s : 0;
}

double coll_p2p_extra(const struct coll_model *m, long src, long dst,
                      double route_lat_s)
{
  if (!m->nccl_hops)
    return 0;
  return send_extra(m, node_of(m, src) != node_of(m, dst), route_lat_s);
}

/* The algorithm's shape for `op` over n members and S bytes: steps and
 * bytes per ring edge, and NCCL's protocol choice (its efficiency and the
 * delay beyond one flow's time).  `bw` is a member's bottleneck bandwidth
 * and `channels` the rings that share the bytes. */
struct shape {
  double steps, per_edge, pe, extra_s;
  double est_s;   /* NCCL's estimate of the whole, by which it chose */
  double tuner_s; /* across nodes: NCCL's estimate with its own base
                     latencies (COLL_RING_BASE), by which it weighs the
                     ring against trees; else est_s */
  int proto;      /* the protocol chosen: 0 Simple, 1 LL128, 2 LL */
};

/* Where a ring runs: inside one node (every step one NVLink hop of
 * route_lat), or across `nodes` nodes with n / nodes members on each. */
struct span {
  int nodes;         /* nodes the ring crosses; 1: inside one node */
  double route_lat;  /* the latency one flow pays */
};

static void ring_steps(enum coll_op op, int n, double S, struct shape *cs)
{
  switch (op) {
  case CO_ALLREDUCE:
    cs->steps = 2.0 * (n - 1);
    cs->per_edge = 2.0 * (n - 1) / n * S;
    break;
  case CO_ALLTOALL:
    cs->steps = 1;
    cs->per_edge = S / n;
    break;
  case CO_BROADCAST:
    cs->steps = n - 1;
    cs->per_edge = S;
    break;
  case CO_SENDRECV:
    cs->steps = 1;
    cs->per_edge = S;
    break;
  default: /* all-gather, reduce-scatter: S is the whole array */
    cs->steps = n - 1;
    cs->per_edge = (double)(n - 1) / n * S;
  }
}

static int log2i(int v)
{
  int l = 0;
  while (v >>= 1)
    l++;
  return l;
}

/* NCCL 2.30.7's latency of a ring's steps across nodes at protocol k
 * (coll.h, COLL_HOP_*): intra-node steps at max(NVLink hop, net overhead),
 * inter-node steps at the network hop.  That is NCCL's estimate, by which
 * it chooses (real false, step_s 0).  What the steps cost (real true,
 * step_s the time one step's bytes take at the ring's bandwidth): only
 * what a hop's latency exceeds the bytes by, since NCCL keeps several
 * slices of a step in flight (the 8 and 16 GiB rings of B200 agree within
 * 0.1 % at 16 and 32 nodes, where the additive model would part them by
 * 3 %); and the slice: Simple sends a step as two slices (src/include/
 * collectives.h: ALLREDUCE_CHUNKSTEPS = NCCL_STEPS / 2 buffer steps a chunk,
 * ALLREDUCE_SLICESTEPS = NCCL_STEPS / 4 a slice; the same for all-gather
 * and reduce-scatter), and the next GPU forwards a slice only once all of
 * it has arrived (prims_simple.h waits on the slice's tail), so along the
 * ring each step takes max(hop + slice, two slices) and a hop hides
 * behind half of the step's bytes only; LL and LL128 carry a flag in
 * every 8- or 128-byte line, which the next GPU forwards as it arrives,
 * so their hop hides behind the whole step.  NEEDSWORK: a ring's network
 * step keeps NCCL's hop; whether it carries the network step that trees
 * do (COLL_NET_STEP) is not measured: no H100 ring across nodes below
 * 1 GiB is among the rows (COLL-TOG-H100-2N-RING's source run is two
 * single-node runs side by side), and on Fernandez et al.'s scan auto
 * runs a ring at one point only (4 nodes, 2 MiB: +50 % without the step,
 * -42 % with it).  With it, an all-gather over 256 DGX H100 nodes would
 * take 8.8 ms at least instead of 2.5.
 * Below NCCL's loop size (channels x ranks x 2 MiB of Simple: 1 GiB on 4
 * DGX H100 nodes) a ring runs one loop of 2 (n - 1) steps of S /
 * (channels x n) bytes (src/device/all_reduce.h runRing: the last loop's
 * chunk is what remains over the ranks), the steps computed here. */
static double nccl_ring_hops(enum coll_op op, int n, int N, double steps,
                             int k, double step_s, bool real)
{
  static const double nvl[3] = COLL_HOP_NVL, net[3] = COLL_HOP_NET,
                      tnet[3] = COLL_TREE_HOP_NET;
  double inter_steps = op == CO_ALLREDUCE ? 2.0 * (N - 1) : N - 1;
  double intra = nvl[k], ovh = COLL_NET_OVERHEAD * (k == 0 ? 3 : 1);
  if (ovh > intra)
    intra = ovh;
  double inter = n == N ? tnet[k] : net[k];
  double hide = step_s;
  if (real && k == 0)
    hide = step_s / 2;
  intra = intra * 1e-6 - hide;
  inter = inter * 1e-6 - hide;
  return (steps - inter_steps) * (intra > 0 ? intra : 0) +
         inter_steps * (inter > 0 ? inter : 0);
}

/* The fixed latency of each protocol: Simple, LL128, LL. */
static void proto_fixed(const struct coll_model *m, double fixed[3])
{
  fixed[0] = m->coll_lat_s;
  fixed[1] = m->coll_lat_s * m->lat_ll128;
  fixed[2] = m->coll_lat_s * m->lat_ll;
}

/* Every step at its route's latency. */
static double steps_route(double steps, const struct span *sp)
{
  return steps * sp->route_lat;
}

/* A ring inside one node (all-reduce, all-gather, reduce-scatter) as NCCL
 * 2.26-2.30 model it (coll.h, COLL_RING_BASE), under the node type's
 * measured floor: each protocol pays the larger of the floor and NCCL's
 * latency (its base and every step's NVLink hop; Simple its own measured
 * one) and then its bytes, and the fastest is taken.  The floor is what
 * one call costs however small: 35.0 us for an 8-byte all-reduce of 8
 * H100, where NCCL's estimate is 15.0 us, and the same for all-gather and
 * reduce-scatter, which have half the steps
 * (tests/validation/nccl_h100_8gpu_ring.csv), so it is not a cost per
 * step; NCCL's step latencies take over past it (LL128 all-reduce over 8
 * GPUs, rings of an NVL72 rack). */
static struct shape node_ring_shape(const struct coll_model *m,
                                    struct shape cs, double bw,
                                    const struct span *sp, int channels)
{
  static const double base[3] = COLL_RING_BASE, hop[3] = COLL_HOP_NVL;
  double pe[3] = {1.0, COLL_LL128_NCCL, m->ll_eff};
  if (m->ll_bw_Bps > 0 && pe[2] * bw > m->ll_bw_Bps)
    pe[2] = m->ll_bw_Bps / bw;
  double lat[3], bytes_s[3];
  int best = 0;
  for (int k = 0; k < 3; k++) {
    lat[k] = k == 0 ? m->coll_lat_s + steps_route(cs.steps, sp)
                    : (base[k] + cs.steps * hop[k]) * 1e-6;
    if (lat[k] < m->floor_s)
      lat[k] = m->floor_s;
    bytes_s[k] = cs.per_edge / channels / (bw * pe[k]);
    if (lat[k] + bytes_s[k] < lat[best] + bytes_s[best])
      best = k;
  }
  cs.est_s = lat[best] + bytes_s[best];
  cs.pe = pe[best];
  cs.proto = best;
  cs.tuner_s = cs.est_s;
  cs.extra_s = lat[best] - sp->route_lat;
  return cs;
}

static struct shape ring_shape(const struct coll_model *m, enum coll_op op,
                               int n, double S, double bw,
                               const struct span *sp, int channels)
{
  struct shape cs;
  ring_steps(op, n, S, &cs);
  if (op == CO_SENDRECV && m->nccl_hops) {
    /* An exchange of ring neighbours (context parallelism's ncclSend/
     * ncclRecv pairs, Transformer Engine's ring-exchange chunks): each
     * pair is a send, which costs a send's latency (coll_p2p_extra: NCCL's
     * Simple step, src/graph/tuning.cc) and its bytes at the link's share,
     * not a collective's fixed cost; NCCL runs send/recv in Simple only
     * beyond 16 KiB per channel (enqueue.cc), so no LL or LL128 either.
     * Userbuffers' own NVLink puts (TE's comm_gemm_overlap) have no
     * published latency; NCCL's send stands for them. */
    cs.pe = 1.0;
    cs.proto = 0;
    cs.extra_s = send_extra(m, sp->nodes > 1, sp->route_lat);
    cs.est_s = sp->route_lat + cs.extra_s + cs.per_edge / channels / bw;
    cs.tuner_s = cs.est_s;
    return cs;
  }
  if (sp->nodes == 1 && m->nccl_hops && m->floor_s > 0 &&
      (op == CO_ALLREDUCE || op == CO_ALLGATHER || op == CO_REDUCE_SCATTER))
    return node_ring_shape(m, cs, bw, sp, channels);
  double fixed[3];
  proto_fixed(m, fixed);
  double peff[3] = {1.0, m->ll128_eff, m->ll_eff};
  bool nccl = sp->nodes > 1 && m->nccl_hops && op != CO_ALLTOALL &&
              op != CO_SENDRECV;
  /* LL across nodes moves at most NCCL's llMaxBw of bus bandwidth
   * (coll.h, COLL_LL_NET_BW): its share of the ring's channels falls to
   * that.  The flows then carry LL's bytes at that share through the NICs
   * (NEEDSWORK: what limits it is the host's buffers and the proxy, not
   * the wire, so the NICs look busier to other traffic than they are). */
  if (nccl) {
    double cap = sp->nodes <= 2 ? COLL_LL_NET_BW_2N : COLL_LL_NET_BW;
    if (peff[2] * channels * bw > cap)
      peff[2] = cap / (channels * bw);
  }
  static const double base[3] = COLL_RING_BASE;
  int best = 0;
  double tbest = 0, tuner = 0;
  for (int k = 0; k < 3; k++) {
    /* NCCL's tuner decides by its additive model: fixed cost, every
     * step's latency, the plateau factor of a multi-node Simple ring
     * all-reduce, then the bytes. */
    double lk = fixed[k] + steps_route(cs.steps, sp), ln = lk;
    if (nccl) {
      double hk = nccl_ring_hops(op, n, sp->nodes, cs.steps, k, 0, false);
      lk = fixed[k] + hk;
      ln = base[k] * 1e-6 + hk;
      if (k == 0 && op == CO_ALLREDUCE && S / (channels * n) >= 64) {
        lk *= COLL_RING_PLATEAU;
        ln *= COLL_RING_PLATEAU;
      }
    }
    double bytes_s = cs.per_edge / channels / (bw * peff[k]);
    double tk = lk + bytes_s;
    if (k == 0 || tk < tbest) {
      tbest = tk;
      best = k;
    }
    if (k == 0 || ln + bytes_s < tuner)
      tuner = ln + bytes_s;
  }
  /* What the chosen protocol costs: its fixed latency and the steps'
   * latency the bytes do not hide, less the route the flows pay. */
  double hops = steps_route(cs.steps, sp) - sp->route_lat;
  if (nccl) {
    double step_s = cs.per_edge / cs.steps / channels / (bw * peff[best]);
    hops = nccl_ring_hops(op, n, sp->nodes, cs.steps, best, step_s, true) -
           sp->route_lat;
    if (hops < 0)
      hops = 0;
  }
  cs.extra_s = fixed[best] + hops;
  cs.est_s = tbest;
  cs.tuner_s = nccl ? tuner : tbest;
  cs.pe = peff[best];
  cs.proto = best;
  return cs;
}

double coll_nvls_time(const struct coll_model *m, double S)
{
  /* Its fixed latency, one NVLink latency, each GPU's S up and S down at
   * nvls_eff of its NVLink. */
  return m->coll_lat_s * m->lat_nvls + m->nvlink_lat_s +
         S / (m->nvls_eff * m->nvlink_bw_Bps);
}

double coll_node_ring_time(const struct coll_model *m, enum coll_op op, int n,
                           double S)
{
  /* Each NVLink direction carries one flow of it (n - 1 of all-to-all). */
  double bw = m->nvlink_bw_Bps * m->nvlink_eff;
  struct span sp = {1, m->nvlink_lat_s};
  struct shape cs = ring_shape(m, op, n, S, bw, &sp, 1);
  double per_link = op == CO_ALLTOALL ? (n - 1) * cs.per_edge : cs.per_edge;
  return cs.extra_s + m->nvlink_lat_s + per_link / (cs.pe * bw);
}

/* Whether an all-reduce of S bytes over n GPUs of one node runs as NVLS:
 * when asked for, or under auto (and nvlstree, which needs several nodes)
 * when the switch can and its estimate beats the ring's, as NCCL's tuner
 * chooses.  The ring's time, when it had to be computed to decide, is left
 * in *ring_s. */
static bool use_nvls(const struct coll_model *m, int n, double S,
                     double *ring_s)
{
  if (!m->nvls || (m->algo != CA_NVLS && m->algo != CA_AUTO &&
                    m->algo != CA_NVLSTREE)) /* one node: as auto */
    return false;
  if (m->algo == CA_NVLS)
    return true;
  *ring_s = coll_node_ring_time(m, CO_ALLREDUCE, n, S);
  return coll_nvls_time(m, S) < *ring_s;
}

/* A ring over `nodes` nodes reaches less of its NICs the more nodes it
 * spans: ring_loss of the NIC bandwidth per doubling beyond two nodes (an
 * empirical law of the node type's measurements; the cause, the slowest
 * member or the fabric, is not modelled). */
static double ring_scale(const struct coll_model *m, int nodes)
{
  if (nodes <= 2 || m->ring_loss <= 0)
    return 1;
  double s = 1 - m->ring_loss * log2(nodes / 2.0);
  return s > 0.25 ? s : 0.25;
}

/* ---- planning ---------------------------------------------------------- */

/* A collective over every GPU of one node has the node's NVLinks to itself
 * (nothing else can use them while it runs), so its flows would take
 * exactly the closed form: one delay instead of n flows. */
static void closed_plan(const struct coll_model *m, enum coll_op op, int n,
                        double S, struct coll_plan *out)
{
  double ring_s = -1;
  bool nvls = op == CO_ALLREDUCE && use_nvls(m, n, S, &ring_s);
  out->shape = CS_CLOSED;
  out->algo = nvls ? CA_NVLS : op == CO_ALLTOALL ? CA_DIRECT : CA_RING;
  out->extra_s = nvls ? coll_nvls_time(m, S)
                      : ring_s >= 0 ? ring_s : coll_node_ring_time(m, op, n, S);
  out->closed_flows = op == CO_ALLTOALL ? (long)n * (n - 1) : n;
}

static long node_of_member(const struct coll_model *m,
                           const struct coll_call *call, int k)
{
  return node_of(m, call->ranks[k]);
}

/* Torus collectives run over a sub-torus: g members on each of B
 * consecutive nodes in order (the job's node i is torus node i), B the
 * product of the first k dimensions and the first node a multiple of B,
 * so that the nodes are whole rings along those k dimensions (every node
 * of a torus, or one plane of it, as a pipeline stage of a job whose
 * stages are such blocks).  Returns k, or 0 when the call is not one. */
static int torus_block(const struct coll_model *m,
                       const struct coll_call *call, const struct group_shape *t)
{
  if (m->torus_ndims == 0 || !t->cross || t->nodes < 2 ||
      call->n != t->nodes * t->g)
    return 0;
  int k = 0;
  long B = 1;
  while (k < m->torus_ndims && B < t->nodes)
    B *= m->torus_dim[k++];
  long b0 = node_of_member(m, call, 0);
  if (B != t->nodes || b0 % B != 0)
    return 0;
  for (int v = 0; v < t->nodes; v++)
    if (node_of_member(m, call, v * t->g) != b0 + v)
      return 0;
  return k;
}

/* Members by node: a regular multi-node group runs one channel per member
 * of a node, each with its own exit GPU. */
static struct group_shape topo_of(const struct coll_model *m,
                           const struct coll_call *call)
{
  int n = call->n, nodes = 1, g = n;
  for (int k = 1; k < n; k++)
    if (node_of_member(m, call, k) != node_of_member(m, call, k - 1))
      nodes++;
  /* Members spread unevenly (a TP group of 3 over nodes of 8: 2 + 1) make
   * no regular channels: one ring over the members in order. */
  if (nodes > 1 && n % nodes != 0)
    g = 0;
  if (nodes > 1 && n % nodes == 0) {
    g = n / nodes;
    for (int k = 0; k < n && g > 0; k++)
      if (node_of_member(m, call, k) != node_of_member(m, call, (k / g) * g))
        g = 0;
  }
  struct group_shape t;
  t.span = nodes; /* single-channel groups count as one node below */
  t.channels = (nodes > 1 && g > 0) ? g : 1;
  if (call->op == CO_SENDRECV)
    t.channels = 1;
  /* One member per node keeps its nodes (trees and PAT use them). */
  if (t.channels == 1 && !(nodes > 1 && g == 1 && call->op != CO_SENDRECV))
    g = n, nodes = 1;
  t.g = g;
  t.nodes = nodes;
  t.cross = nodes > 1 ||
            node_of_member(m, call, 0) != node_of_member(m, call, n - 1);
  t.torus_k = torus_block(m, call, &t);
  return t;
}

static double route_lat(const struct coll_call *call)
{
  return call->route_lat(call->ctx, call->ranks[0], call->ranks[call->n - 1]);
}

/* Where a ring over the call's members runs. */
static struct span span_of(const struct coll_model *m,
                           const struct coll_call *call, const struct group_shape *t)
{
  struct span sp = {1, m->nvlink_lat_s};
  if (t->cross) {
    sp.nodes = t->span;
    sp.route_lat = route_lat(call);
  }
  return sp;
}

/* A ring's bottleneck bandwidth per member: its NVLink inside a node, its
 * NIC (one channel's share) across nodes. */
static double ring_bw(const struct coll_model *m, const struct group_shape *t,
                      double net_scale)
{
  return t->cross ? m->nic_bw_Bps * m->nic_eff * net_scale
                  : m->nvlink_bw_Bps * m->nvlink_eff;
}

/* Whether a collective's flows can be those of its first node alone
 * (coll.h, rep): its members fill whole nodes alike, on a symmetric
 * fabric. */
static bool rep_ok(const struct coll_model *m, const struct group_shape *t)
{
  return m->sym_fabric && t->nodes >= 3 && t->cross;
}

/* A ring as node 0's flows: its edges into node 0 are kept with those out
 * of it, so that node 0's links carry what every node's carry in the full
 * ring.  The flows it stands for are counted in closed_flows. */

/* Whether the ring's node j is simulated (coll_model.rep_nodes). */
static bool rep_node(const struct coll_model *m, const struct coll_call *call,
                     int g, int j)
{
  return m->rep_nodes[node_of(m, call->ranks[j * g]) % m->rep_n] > 0;
}

/* Whether the quotient applies to a collective across nodes (coll.h,
 * quot): on two nodes too, whose ring edge out of the first node is the
 * image of the one into it. */
static bool quot_ok(const struct coll_model *m, const struct coll_call *call,
                    const struct group_shape *t)
{
  if (!(m->quot && m->a2a_rep && m->twin && m->sym_fabric &&
        !m->rep_nodes && t->cross && t->nodes >= 2 &&
        m->gpus_per_node <= COLL_MAX_GPN &&
        call->op != CO_BROADCAST && /* a chain: no image into node 0 */
        (call->op == CO_ALLTOALL || t->channels > 1 || t->g == 1)))
    return false;
  /* Regular: node j holds members j g .. j g + g - 1 at the GPUs where
   * the first node holds 0 .. g - 1, on consecutive nodes; a shift by
   * one node maps the group onto itself. */
  for (int k = t->g; k < call->n; k++)
    if (call->ranks[k] != call->ranks[k % t->g] +
                              (long)(k / t->g) * m->gpus_per_node)
      return false;
  return true;
}

static void set_rep(const struct coll_model *m, const struct coll_call *call,
                    const struct group_shape *t, struct coll_plan *out)
{
  if (quot_ok(m, call, t)) {
    /* Node 0's edges inside it and its channels out; the rest counted. */
    out->rep = out->quot = true;
    out->closed_flows =
        (t->nodes - 1) * ((t->g > 1 ? t->g : 0) + t->channels);
    return;
  }
  if (!rep_ok(m, t))
    return;
  out->rep = true;
  /* Node 0's edges inside it and its channels out and in; with
   * rep_nodes, every simulated node's, and the channels into it where
   * the node before it is not simulated. */
  long per_node = (t->g > 1 ? t->g : 0) + t->channels;
  if (!m->rep_nodes) {
    out->closed_flows = (t->nodes - 1) * per_node - t->channels;
    return;
  }
  long sim = 0, in = 0;
  for (int j = 0; j < t->nodes; j++)
    if (rep_node(m, call, t->g, j)) {
      sim++;
      in += !rep_node(m, call, t->g, (j + t->nodes - 1) % t->nodes);
    }
  out->closed_flows = (t->nodes - sim) * per_node - in * t->channels;
}

/* Rings and direct all-to-all: one phase of flows, or one phase per ring
 * step at step fidelity; a whole-node group in closed form. */
static void ring_plan(const struct coll_model *m, const struct coll_call *call,
                      const struct group_shape *t, struct coll_plan *out)
{
  enum coll_op op = call->op;
  int n = call->n;
  double S = call->bytes;
  if (!t->cross && n == m->gpus_per_node && m->closed_form &&
      !call->shared) {
    closed_plan(m, op, n, S, out);
    return;
  }
  bool ring = op != CO_ALLTOALL && op != CO_SENDRECV;
  /* Rings lose NIC bandwidth with the nodes they span. */
  if (ring)
    out->net_scale = ring_scale(m, t->span);
  struct span sp = span_of(m, call, t);
  struct shape cs = ring_shape(m, op, n, S, ring_bw(m, t, out->net_scale),
                               &sp, t->channels);
  out->shape = op == CO_ALLTOALL ? CS_DIRECT : CS_RING;
  out->extra_s = cs.extra_s;
  out->pe = cs.pe;
  out->g = t->g;
  out->nodes = t->nodes;
  out->channels = t->channels;
  out->nphases = 1;
  if (ring)
    set_rep(m, call, t, out);
  if (ring && (m->fidelity == FID_STEP ||
               (m->fidelity == FID_AUTO && n <= 16))) {
    /* Each step pays its route latency itself: what is left of the
     * steps' latency stays a delay (none when the routes alone exceed
     * it). */
    out->extra_s = cs.extra_s - (cs.steps - 1) * sp.route_lat;
    if (out->extra_s < 0)
      out->extra_s = 0;
    out->nphases = (int)cs.steps;
    out->closed_flows *= out->nphases;
    out->edge_bytes = cs.per_edge / cs.steps / t->channels;
    return;
  }
  out->edge_bytes = op == CO_ALLTOALL ? cs.per_edge
                                      : cs.per_edge / t->channels;
  if (op == CO_ALLTOALL && m->a2a_rep && t->cross) {
    /* Expert replica symmetry: the first node's flows out and in (under
     * the quotient, out only); the others are counted (direct_phase says
     * which are emitted). */
    out->rep = true;
    long n0 = node_of_member(m, call, 0), mine = 0;
    for (int k = 0; k < n; k++)
      mine += node_of_member(m, call, k) == n0;
    if (quot_ok(m, call, t)) {
      out->quot = true;
      out->closed_flows = (long)n * (n - 1) - mine * (n - 1);
      return;
    }
    out->closed_flows = (long)n * (n - 1) - 2 * mine * (n - mine) -
                        mine * (mine - 1);
  }
}

/* PAT's all-gather or reduce-scatter with one GPU per node: NCCL's latency
 * (coll.h) and 3/4 of the ring's bandwidth; its flows carry what a ring's
 * would through each NIC (the recursive pattern of its inter-node sends
 * is not expanded). */
static double pat_latency(const struct coll_model *m, int n, double lat)
{
  static const double tnet[3] = COLL_TREE_HOP_NET;
  if (!m->nccl_hops) /* log-depth rounds of one route each */
    return m->coll_lat_s + (2 * log2i(n) - 1) * lat;
  return m->coll_lat_s +
         (log2i(n) * tnet[0] / 3.5 + n * COLL_PAT_PER_RANK) * 1e-6 - lat;
}

static void pat_plan(const struct coll_model *m, const struct coll_call *call,
                     const struct group_shape *t, struct coll_plan *out)
{
  int n = call->n;
  double lat = route_lat(call);
  out->shape = CS_RING;
  out->net_scale = ring_scale(m, t->span);
  out->extra_s = pat_latency(m, n, lat);
  out->pe = COLL_PAT_BW;
  out->g = t->g;
  out->nodes = t->nodes;
  out->channels = 1;
  out->nphases = 1;
  out->edge_bytes = (double)(n - 1) / n * call->bytes;
  set_rep(m, call, t, out);
}

/* NCCL 2.30.7's correction of its tree model at medium sizes
 * (treeCorrectionFactor, ncclTopoGetAlgoTime): a factor on the tree's
 * bandwidth by log2(bytes / 64), 64 B to 256 MiB; 1 beyond. */
static double tree_correction(int k, double S)
{
  static const float f[3][23] = {
      {.9, .9, .9, .9, .9, .9, .9, .8, .7, .6, .6, .5, .5, .5, .5, .6, .7,
       .8, .7, .7, .8, .9, .9},
      {1.0, 1.0, 1.0, 1.0, 1.0, .9, .8, .8, .8, .7, .6, .6, .6, .6, .6, .6,
       .8, .9, .9, .9, .9, 1.0, 1.0},
      {1.0, 1.0, 1.0, 1.0, .9, .8, .7, .7, .7, .7, .6, .5, .4, .4, .5, .6,
       .7, .8, .9, 1.0, 1.0, 1.0, 1.0}};
  if (S < 64)
    return f[k][0];
  int l = 0;
  for (double v = S / 64; v >= 2 && l < 23; v /= 2)
    l++;
  return l < 23 ? f[k][l] : 1.0;
}

/* A tree all-reduce's protocol (Simple, LL128, LL: NCCL's shares 1,
 * 120/128 and 1/3.8 of its bandwidth), chosen as NCCL's tuner chooses, by
 * its own latencies (base, COLL_TREE_BASE, and hops: 2 x ((g - 1) NVLink
 * hops + floor(log2 nodes) network hops)); then what it costs: the
 * protocol's fixed latency, the NVLink hops and the network hops at
 * NCCL's plus COLL_NET_STEP (the network step, coll.h), beyond one
 * route; and its bandwidth-bound time: S/g per channel at tree_bw x share
 * x correction.  Returns NCCL's estimate, latency plus time. */
struct tree_cost {
  double pe, lat_s, bw_s;
};

static double tree_estimate(const struct coll_model *m, int g, int nodes,
                            double S, double lat, struct tree_cost *tc)
{
  static const double tnvl[3] = COLL_TREE_HOP_NVL,
                      tnet[3] = COLL_TREE_HOP_NET, base[3] = COLL_TREE_BASE;
  double fixed[3];
  proto_fixed(m, fixed);
  const double peff[3] = {1.0, m->ll128_eff, 1 / 3.8};
  double best = -1, depth = 0;
  for (int v = nodes; v > 1; v = (v + 1) / 2)
    depth++;
  for (int k = 0; k < 3; k++) {
    double l = fixed[k] + (2 * (depth + g - 1) - 1) * lat, est = l;
    if (m->nccl_hops) {
      double nvl = (g - 1) * tnvl[k], net = log2i(nodes) * tnet[k];
      est = (base[k] + 2 * (nvl + net)) * 1e-6 - lat;
      l = fixed[k] +
          2e-6 * (nvl + net + log2i(nodes) * COLL_NET_STEP) - lat;
    }
    double bw = m->tree_bw > 0
                    ? S / g / (m->tree_bw * peff[k] * tree_correction(k, S))
                    : 0;
    double nic = S / g / 2 / (m->nic_bw_Bps * m->nic_eff * peff[k]);
    double tk = est + lat + (bw > nic ? bw : nic);
    if (best < 0 || tk < best) {
      best = tk;
      *tc = (struct tree_cost){peff[k], l, bw};
    }
  }
  return best;
}

/* Edges of node a in a binary tree numbered as a heap over N nodes. */
static int heap_degree(int a, int N)
{
  return (a > 0) + (2 * a + 1 < N) + (2 * a + 2 < N);
}

/* The node with the most edges over both trees (the second mirrors the
 * first) and their number. */
static int busiest_node(int N, int *deg)
{
  int best = 0;
  *deg = -1;
  for (int a = 0; a < N; a++) {
    int d = heap_degree(a, N) + heap_degree(N - 1 - a, N);
    if (d > *deg) {
      *deg = d;
      best = a;
    }
  }
  return best;
}

/* Double binary trees (tree_phase); NCCL's trees do not slow down with
 * depth, and a channel's pipeline moves at most tree_bw of algorithm
 * bandwidth: a delay of S/g / tree_bw runs beside the flows. */
static void tree_plan(const struct coll_model *m, const struct coll_call *call,
                      const struct group_shape *t, struct coll_plan *out)
{
  struct tree_cost tc;
  tree_estimate(m, t->g, t->nodes, call->bytes, route_lat(call), &tc);
  out->shape = CS_TREE;
  out->extra_s = tc.lat_s;
  out->g = t->g;
  out->nodes = t->nodes;
  out->S = call->bytes;
  out->pe = tc.pe;
  out->nphases = 1;
  out->delay0_s = tc.bw_s;
  /* Under classes of positions (rep_nodes), every flow of the tree. */
  if (rep_ok(m, t) && !m->rep_nodes) {
    /* Node 0 takes the place of the busiest node of the two trees (the
     * nodes are alike, so which node is where is arbitrary): its flows, at
     * the fabric's bottleneck, stand for the others'. */
    out->rep = true;
    long g = t->g, N = t->nodes;
    int deg;
    out->busiest = busiest_node((int)N, &deg);
    long all = g * (N * (g - 1) * 2 + 2 * (N - 1) * 2);
    long mine = g * ((g - 1) * 2 + 2 * deg);
    out->closed_flows = all - mine;
  }
}

/* NCCL's binary tree over n nodes (src/graph/trees.cc ncclGetBtree): the
 * parent and the two children of node r (-1: none).  Inner nodes and
 * leaves alternate, and the root has one child, so that in the double
 * tree (dtree) a node is inner in at most one of the two trees. */
static void btree(int n, int r, int nb[3])
{
  int bit = 1;
  while (bit < n && !(bit & r))
    bit <<= 1;
  if (r == 0) {
    nb[0] = nb[1] = -1;
    nb[2] = n > 1 ? bit >> 1 : -1;
    return;
  }
  int up = (r ^ bit) | (bit << 1);
  if (up >= n)
    up = r ^ bit;
  int low = bit >> 1;
  int d1 = low == 0 ? -1 : r + low;
  while (d1 >= n) {
    d1 = low == 0 ? -1 : r + low;
    low >>= 1;
  }
  nb[0] = up;
  nb[1] = (bit >> 1) == 0 ? -1 : r - (bit >> 1);
  nb[2] = d1;
}

/* Node v's parent and children in tree k (0 or 1) of NCCL's double binary
 * tree (ncclGetDtree): tree 1 mirrors tree 0 (n even) or shifts it by one
 * node (n odd). */
static void dtree(int n, int k, int v, int nb[3])
{
  if (k == 0) {
    btree(n, v, nb);
    return;
  }
  bool odd = n % 2 == 1;
  btree(n, odd ? (v - 1 + n) % n : n - 1 - v, nb);
  for (int i = 0; i < 3; i++)
    if (nb[i] >= 0)
      nb[i] = odd ? (nb[i] + 1) % n : n - 1 - nb[i];
}

/* The node with the most edges over both trees of NCCL's double binary
 * tree, and their number (4 for most nodes beyond two: inner in one tree,
 * a leaf in the other). */
static int dtree_busiest(int n, int *deg)
{
  int best = 0;
  *deg = -1;
  for (int v = 0; v < n; v++) {
    int d = 0, nb[3];
    for (int k = 0; k < 2; k++) {
      dtree(n, k, v, nb);
      d += (nb[0] >= 0) + (nb[1] >= 0) + (nb[2] >= 0);
    }
    if (d > *deg) {
      *deg = d;
      best = v;
    }
  }
  return best;
}

/* NVLSTree all-reduce (NCCL >= 2.18, the default across NVSwitch nodes
 * for large messages; src/device/all_reduce.h, RunWorkColl<AllReduce,
 * NCCL_ALGO_NVLS_TREE>): every GPU scatters its data into the NVSwitch's
 * multicast memory, where it is reduced; each channel's data is split over
 * the node's NVLS heads (nvls->nHeads, a GPU with its own NIC each,
 * search.cc's NVLS graph: one head per NIC), and head h sends its reduced
 * 1/g up the double binary trees between the nodes' heads h (nvls.cc
 * ncclGetDtree: the channels alternate between the two trees), receives
 * the result down and broadcasts it through the switch.  Reduce and
 * broadcast run at once, pipelined.  Bytes: each GPU's NVLink carries S
 * each way at nvls_eff (as NVLS inside one node); a head's NIC carries its
 * S/g half on each tree edge, deg x S/g / 2 each way at the busiest node
 * (two nodes: S/g, one edge per tree).  NCCL's tuner caps each channel
 * (perChMaxNVLSTreeBws, 2.30.7: Hopper 45.5 GB/s of bus bandwidth beyond
 * two nodes, 8 channels = 364 GB/s) at about what 8 NDR NICs give the
 * flows here (8 x 50 x nic_eff 0.926 = 370 GB/s), so no separate cap is
 * modelled.  NEEDSWORK: on two nodes NCCL's cap (Hopper 57.7 x 8 = 462
 * GB/s) lies below what NVLS gives the flows here (510 GB/s; measured
 * 479.8, COLL-TOG-H100-2N-NVLS): a per-GPU-generation cap would need a
 * catalog attribute.  Latency (coll.h): NVLS's fixed cost, then
 * 2 floor(log2 nodes) network hops. */
static double nvlstree_estimate(const struct coll_model *m, int g, int nodes,
                                double S, double lat, double *lat_s)
{
  int deg, depth = 0;
  dtree_busiest(nodes, &deg);
  for (int v = nodes; v > 1; v = (v + 1) / 2)
    depth++;
  double l = m->coll_lat_s * m->lat_nvls +
             (m->nccl_hops
                  ? 2e-6 * log2i(nodes) * COLL_NVLSTREE_HOP_NET - lat
                  : (2 * depth - 1) * lat);
  if (l < 0)
    l = 0;
  double intra = S / (m->nvls_eff * m->nvlink_bw_Bps);
  double inter = deg * S / g / 2 / (m->nic_bw_Bps * m->nic_eff);
  *lat_s = l;
  /* NCCL chooses by its tuner's latency (tuning.cc: intraLat +
   * 2 log2i(nodes) interLat, base 0), not by what the hops cost. */
  if (m->nccl_hops)
    l = (COLL_NVLSTREE_NVL_NCCL +
         2 * log2i(nodes) * COLL_NVLSTREE_HOP_NCCL) * 1e-6 - lat;
  return l + lat + (intra > inter ? intra : inter);
}

/* NVLSTree (nvlstree_estimate): one phase of flows, NVLS in each node and
 * the trees between the heads, and the latency after them. */
static void nvlstree_plan(const struct coll_model *m,
                          const struct coll_call *call,
                          const struct group_shape *t, struct coll_plan *out)
{
  double l;
  nvlstree_estimate(m, t->g, t->nodes, call->bytes, route_lat(call), &l);
  out->shape = CS_NVLSTREE;
  out->extra_s = l;
  out->g = t->g;
  out->nodes = t->nodes;
  out->S = call->bytes;
  out->pe = m->nvls_eff / m->nvlink_eff;
  out->nphases = 1;
  if (rep_ok(m, t)) {
    /* As the trees (tree_plan): node 0 in the busiest node's place. */
    out->rep = true;
    long g = t->g, N = t->nodes;
    int deg;
    out->busiest = dtree_busiest((int)N, &deg);
    long all = g * N + g * 2 * (N - 1) * 2;
    long mine = g + g * 2 * deg;
    out->closed_flows = all - mine;
  }
}

/* Hierarchical all-reduce: its inter-node phase is a ring over the nodes. */
static void hier_plan(const struct coll_model *m, const struct coll_call *call,
                      const struct group_shape *t, struct coll_plan *out)
{
  double lat = route_lat(call);
  out->shape = CS_HIER;
  out->net_scale = ring_scale(m, t->nodes);
  double steps = 2.0 * (t->g - 1) + 2.0 * (t->nodes - 1);
  out->extra_s = m->coll_lat_s + (steps - 3) * lat;
  out->g = t->g;
  out->nodes = t->nodes;
  out->S = call->bytes;
  out->pe = 1;
  out->nphases = 3;
}

/* NVLS: each GPU's data crosses its NVLink once each way. */
static void nvls_plan(const struct coll_model *m, const struct coll_call *call,
                      const struct group_shape *t, struct coll_plan *out)
{
  out->shape = CS_NVLS;
  out->extra_s = m->coll_lat_s * m->lat_nvls;
  out->S = call->bytes;
  out->pe = m->nvls_eff / m->nvlink_eff;
  out->nphases = 1;
}

/* Torus collectives over a sub-torus of k dimensions (torus_block; Ying
 * et al., 2018, TPU pods; the 2-D algorithms of
 * XLA and Google's multi-dimensional all-reduce): inside each node a ring
 * reduce-scatter leaves GPU i with S/g; across nodes GPU i of every node
 * reduce-scatters its share dimension by dimension, each stage a ring
 * between neighbours along one dimension of D nodes, (D - 1)/D of the
 * stage's data per edge, the data shrinking by D at each stage; the
 * all-gather retraces the stages backwards; a last all-gather inside each
 * node.  The share is split into 2 x dims parts that run at once, part j
 * starting with dimension j mod dims and going round the + way (j < dims)
 * or the - way, so that in every stage each of a node's 2 x dims ports
 * carries one part: the torus's whole bandwidth, where a ring over the
 * nodes in order would use one port of each.  Stages follow one another
 * (no pipelining across them).  Latency: the fixed cost, and every ring
 * step a hop (NVLink inside, one torus hop across), less the one each
 * stage's flows pay. */
/* NEEDSWORK: on a dimension of 2 nodes the two ways round reach the same
 * neighbour, and the fabric routes a pair one way (ties go +), so both
 * parts share one of the pair's two cables each way and the stage runs at
 * half the bandwidth a real torus of that shape has; routes per flow
 * rather than per pair would fix it. */
static void torus_plan(const struct coll_model *m, const struct coll_call *call,
                       const struct group_shape *t, struct coll_plan *out)
{
  enum coll_op op = call->op;
  int g = t->g, nd = t->torus_k;
  bool rs = op != CO_ALLGATHER, ag = op != CO_REDUCE_SCATTER;
  double lat_nvl = m->nvlink_lat_s;
  double lat_net = call->route_lat(call->ctx, call->ranks[0],
                                   call->ranks[g]);
  int n = 0, maxd = 1;
  for (int k = 0; k < nd; k++)
    if (m->torus_dim[k] > maxd)
      maxd = m->torus_dim[k];
  double extra = m->coll_lat_s;
  if (rs && g > 1) {
    out->stage[n++] = -1;
    extra += (g - 2) * lat_nvl;
  }
  for (int pass = 0; pass < 2; pass++) {
    if ((pass == 0 && !rs) || (pass == 1 && !ag))
      continue;
    /* Every dimension runs at every place of the order (in one part or
     * another): a stage lasts as long as the longest ring's steps. */
    for (int i = 0; i < nd; i++) {
      out->stage[n] = 0;
      out->stage_k[n++] = pass == 0 ? i : nd - 1 - i;
      extra += (maxd - 2) * lat_net;
    }
  }
  if (ag && g > 1) {
    out->stage[n++] = -2;
    extra += (g - 2) * lat_nvl;
  }
  out->shape = CS_TORUS;
  out->torus_k = nd;
  out->torus_b0 = (int)node_of_member(m, call, 0);
  out->nphases = n;
  out->extra_s = extra;
  out->g = g;
  out->nodes = t->nodes;
  out->S = call->bytes;
  out->pe = 1;
  out->net_scale = ring_scale(m, maxd);
}

/* The ring's estimate for `call`: latency and bandwidth-bound time (with
 * NCCL's own base latencies when `tuner`). */
static double ring_estimate(const struct coll_model *m,
                            const struct coll_call *call,
                            const struct group_shape *t, bool tuner)
{
  double scale = ring_scale(m, t->span);
  struct span sp = span_of(m, call, t);
  struct shape cs = ring_shape(m, call->op, call->n, call->bytes,
                               ring_bw(m, t, scale), &sp, t->channels);
  return tuner ? cs.tuner_s : cs.est_s;
}

/* The algorithm that runs `call` (auto and fallbacks resolved).  Under
 * auto NCCL's tuner picks the fastest estimate: for all-reduce across
 * nodes ring or tree, for all-gather and reduce-scatter with one GPU per
 * node ring or PAT. */
static enum coll_algo choose(const struct coll_model *m,
                             const struct coll_call *call, const struct group_shape *t)
{
  double ring_s;
  enum coll_op op = call->op;
  enum coll_algo algo = m->algo;
  if (op == CO_ALLTOALL)
    return CA_DIRECT;
  if (op == CO_SENDRECV)
    return CA_RING;
  if (op == CO_ALLREDUCE && !t->cross &&
      use_nvls(m, call->n, call->bytes, &ring_s))
    return CA_NVLS;
  bool multi = t->cross && t->nodes > 1; /* regular, across nodes */
  bool one_per_node = multi && t->g == 1;
  /* NVLSTree needs NVLS nodes and two members in each (NCCL: at least two
   * NVLS channels, tuning.cc; none on one node).  Asked for where it
   * cannot run, NCCL's choice (auto) runs. */
  bool nvlstree_ok = op == CO_ALLREDUCE && multi && t->g >= 2 && m->nvls;
  if (algo == CA_NVLSTREE) {
    if (nvlstree_ok)
      return CA_NVLSTREE;
    algo = CA_AUTO;
  }
  if ((algo == CA_TORUS || algo == CA_AUTO) && t->torus_k > 0 &&
      (op == CO_ALLREDUCE || op == CO_ALLGATHER || op == CO_REDUCE_SCATTER))
    return CA_TORUS;
  if (op == CO_ALLREDUCE && multi &&
      (algo == CA_TREE || (algo == CA_HIER && !one_per_node)))
    return algo;
  bool pat_ok = one_per_node && (op == CO_ALLGATHER ||
                                 op == CO_REDUCE_SCATTER);
  if (algo == CA_PAT && pat_ok)
    return CA_PAT;
  if (algo != CA_AUTO)
    return CA_RING;
  if (op == CO_ALLREDUCE && multi) {
    /* NCCL's tuner takes the fastest estimate of ring, tree and, on NVLS
     * nodes, NVLSTree (enqueue.cc topoGetAlgoInfo over every algorithm and
     * protocol; ties to the lower index: tree, ring, ..., NVLSTree). */
    struct tree_cost tc;
    double l, lat = route_lat(call);
    double tree_s = tree_estimate(m, t->g, t->nodes, call->bytes, lat, &tc);
    double ring_s2 = ring_estimate(m, call, t, true);
    double best = tree_s < ring_s2 ? tree_s : ring_s2;
    if (nvlstree_ok &&
        nvlstree_estimate(m, t->g, t->nodes, call->bytes, lat, &l) < best)
      return CA_NVLSTREE;
    return tree_s < ring_s2 ? CA_TREE : CA_RING;
  }
  if (pat_ok) {
    double lat = route_lat(call);
    double pat_s = pat_latency(m, call->n, lat) + lat +
                   (double)(call->n - 1) / call->n * call->bytes /
                       (ring_bw(m, t, ring_scale(m, t->span)) * COLL_PAT_BW);
    return pat_s < ring_estimate(m, call, t, false) ? CA_PAT : CA_RING;
  }
  return CA_RING;
}

void coll_plan_make(const struct coll_model *m, const struct coll_call *call,
                    struct coll_plan *out)
{
  memset(out, 0, sizeof *out);
  out->net_scale = 1;
  out->algo = CA_RING;
  double S = call->bytes;
  if (call->sym_n > 1 && !m->free_comm && S > 0) {
    /* One representative of a whole-node TP group. */
    closed_plan(m, call->op, call->sym_n, S, out);
    return;
  }
  if (m->free_comm || call->n < 2 || S <= 0) {
    out->shape = CS_NONE;
    return;
  }
  struct group_shape t = topo_of(m, call);
  out->algo = choose(m, call, &t);
  algos[out->algo].plan(m, call, &t, out);
}

/* ---- flows ------------------------------------------------------------- */

struct emitter {
  const struct coll_model *m;
  const struct coll_call *call;
  double net_scale;
  coll_emit_fn emit;
  void *ctx;
  long count;
};

static void flow(struct emitter *e, int src, int dst, double bytes, double pe)
{
  e->count++;
  e->emit(e->ctx, src, dst,
          coll_wire_bytes(e->m, e->call->ranks[src], e->call->ranks[dst],
                          bytes, pe, e->net_scale));
}

/* Under the quotient (coll.h, quot): `mult` flows from src to members on
 * other nodes in dst's place, as one flow into a twin. */
static void twin_flow(struct emitter *e, int src, int dst, double bytes,
                      double pe, int mult)
{
  e->count++;
  e->m->twin(e->ctx, src, dst,
             coll_wire_bytes(e->m, e->call->ranks[src], e->call->ranks[dst],
                             bytes, pe, e->net_scale),
             mult);
}

/* A ring over members first, first + stride, ... (m of them). */
static void ring_flows(struct emitter *e, int first, int stride, int m,
                       double bytes, double pe)
{
  for (int k = 0; k < m; k++)
    flow(e, first + k * stride, first + ((k + 1) % m) * stride, bytes, pe);
}

/* Node `node`'s ring edges inside it (g merged flows). */
static void node_edges(struct emitter *e, int node, int g, double share,
                       double pe)
{
  for (int a = 0; a < g; a++)
    flow(e, node * g + a, node * g + (a + 1) % g, share * (g - 1), pe);
}

/* The channels' edges from node `node` to node `next`. */
static void channel_edges(struct emitter *e, int node, int next, int g,
                          int channels, double share, double pe)
{
  for (int ch = 0; ch < channels; ch++)
    flow(e, node * g + (ch + g - 1) % g, next * g + ch, share, pe);
}

/* The flows of NCCL's rings over the members: `share` bytes per edge and
 * channel.  One channel: a plain ring over the members in order.  Several
 * (one per member GPU of a node, g of them): in channel ch each node's
 * members are rotated by ch, so that the node is left from member
 * (ch - 1) mod g and entered at member ch.  Inside a node, channel ch uses
 * the edges a -> a+1 (mod g) but its exit one; the channels' flows between
 * the same two GPUs are merged (same bytes, same start: max-min sharing
 * gives them together what it gives one flow of their sum), g flows per
 * node instead of g(g-1).  A broadcast is a chain: no edge back to the
 * first member. */
static void channel_rings(struct emitter *e, enum coll_op op, int g,
                          int nodes, int channels, double share, double pe,
                          bool rep)
{
  int n = e->call->n;
  bool wrap = op != CO_BROADCAST; /* a broadcast is a chain */
  if (rep && e->m->quot) {
    /* The quotient: node 0's edges inside it and out of it, the latter
     * into twins; the edges into node 0 are the images of those out of
     * it by the shift of one node, which maps the ring onto itself. */
    if (channels == 1) {
      twin_flow(e, 0, 1, share, pe, 1);
      return;
    }
    if (g > 1)
      node_edges(e, 0, g, share, pe);
    for (int ch = 0; ch < channels; ch++)
      twin_flow(e, (ch + g - 1) % g, g + ch, share, pe, 1);
    return;
  }
  if (rep && e->m->rep_nodes) {
    /* Each simulated node's edges: inside it, out of it, and into it
     * where the node before it is not simulated (else that node's out
     * edges are these), in node order; one channel: member by member. */
    int units = channels == 1 ? n : nodes, per = channels == 1 ? 1 : g;
    for (int j = 0; j < units; j++) {
      int jn = (j + 1) % units, jp = (j + units - 1) % units;
      if (!rep_node(e->m, e->call, per, j))
        continue;
      if (channels == 1) {
        if (jn != 0 || wrap)
          flow(e, j, jn, share, pe);
        if ((j != 0 || wrap) && !rep_node(e->m, e->call, per, jp))
          flow(e, jp, j, share, pe);
        continue;
      }
      if (g > 1)
        node_edges(e, j, g, share, pe);
      if (jn != 0 || wrap)
        channel_edges(e, j, jn, g, channels, share, pe);
      if ((j != 0 || wrap) && !rep_node(e->m, e->call, per, jp))
        channel_edges(e, jp, j, g, channels, share, pe);
    }
    return;
  }
  if (channels == 1) {
    int last = rep ? 1 : n;
    for (int k = 0; k < last; k++) {
      int nk = k + 1 == n ? 0 : k + 1;
      if (nk != 0 || wrap)
        flow(e, k, nk, share, pe);
    }
    if (rep && wrap)
      flow(e, n - 1, 0, share, pe);
    return;
  }
  /* The edge a -> a+1 is the exit edge of channel (a + 1) mod g only: the
   * other g - 1 channels carry it. */
  int last = rep ? 1 : nodes;
  for (int node = 0; node < last; node++) {
    int nnode = (node + 1) % nodes;
    if (g > 1)
      node_edges(e, node, g, share, pe);
    if (nnode != 0 || wrap)
      channel_edges(e, node, nnode, g, channels, share, pe);
  }
  if (rep && wrap)
    channel_edges(e, nodes - 1, 0, g, channels, share, pe);
}

static void ring_phase(struct emitter *e, const struct coll_plan *p, int phase)
{
  channel_rings(e, e->call->op, p->g, p->nodes, p->channels, p->edge_bytes,
                p->pe, p->rep);
}

/* Every ordered pair of members; under rep (expert replica symmetry) the
 * pairs with a member on the first member's node, in the same order.  A
 * pair with neither end there crosses links of other nodes only, each
 * of whose flows has its image among the first node's: the nodes of the
 * group are alike and run the same program on a symmetric fabric. */
static void direct_phase(struct emitter *e, const struct coll_plan *p, int phase)
{
  const struct coll_call *c = e->call;
  long n0 = node_of(e->m, c->ranks[0]);
  if (p->quot) {
    /* The quotient: each member on the first node sends to the members
     * of its node, and to the members of every other node at GPU k in
     * one flow of their number into twin k (coll.h, quot): the same
     * route (its NIC, the leaf switch, the NIC of its node's GPU k), the
     * same bytes and start.  The flows into the first node are the
     * images of these by the node shifts that map the group onto
     * itself. */
    int gpn = e->m->gpus_per_node, cnt[COLL_MAX_GPN] = {0};
    int first[COLL_MAX_GPN];
    for (int b = c->n - 1; b >= 0; b--)
      if (node_of(e->m, c->ranks[b]) != n0) {
        int k = (int)(c->ranks[b] % gpn);
        cnt[k]++;
        first[k] = b;
      }
    for (int a = 0; a < c->n; a++) {
      if (node_of(e->m, c->ranks[a]) != n0)
        continue;
      for (int b = 0; b < c->n; b++) {
        if (a == b)
          continue;
        if (node_of(e->m, c->ranks[b]) == n0)
          flow(e, a, b, p->edge_bytes, p->pe);
        else if (first[c->ranks[b] % gpn] == b)
          twin_flow(e, a, b, p->edge_bytes, p->pe,
                    cnt[c->ranks[b] % gpn]);
      }
    }
    return;
  }
  for (int a = 0; a < c->n; a++) {
    bool a0 = node_of(e->m, c->ranks[a]) == n0;
    for (int b = 0; b < c->n; b++)
      if (a != b && (!p->rep || a0 || node_of(e->m, c->ranks[b]) == n0))
        flow(e, a, b, p->edge_bytes, p->pe);
  }
}

/* A tree edge between nodes a and b: under rep, node 0 takes the busiest
 * node's place (they swap), and only edges that touch node 0 are kept
 * (false: leave the edge out). */
static bool rep_edge(const struct coll_plan *p, int *a, int *b)
{
  if (!p->rep)
    return true;
  int x = p->busiest;
  *a = *a == x ? 0 : *a == 0 ? x : *a;
  *b = *b == x ? 0 : *b == 0 ? x : *b;
  return *a == 0 || *b == 0;
}

/* Channel c's two trees over the nodes (members c of each), `share` split
 * between them, both ways at once; under rep only the edges of node 0, in
 * the busiest node's place. */
static void tree_net_flows(struct emitter *e, const struct coll_plan *p,
                           int c, double share, double pe)
{
  int g = p->g, N = p->nodes;
  for (int k = 0; k < 2 && N > 1; k++)
    for (int v = 1; v < N; v++) {
      int parent = (v - 1) / 2;
      int a = k ? N - 1 - v : v, b = k ? N - 1 - parent : parent;
      if (!rep_edge(p, &a, &b))
        continue;
      int child = a * g + c, up = b * g + c;
      flow(e, child, up, share / 2, pe);
      flow(e, up, child, share / 2, pe);
    }
}

/* Double binary trees, one pair per channel as NCCL builds them: channel c
 * enters and leaves each node through GPU c and its NIC, carries S/g, and
 * runs a chain through the node's GPUs starting at c; of its two trees over
 * the nodes, the second is the first mirrored, so that a leaf of one is an
 * inner node of the other.  Reduce up and broadcast down run pipelined:
 * flows both ways at once, at the links' achievable bandwidth. */
static void tree_phase(struct emitter *e, const struct coll_plan *p, int phase)
{
  int g = p->g, N = p->nodes;
  double share = p->S / g, pe = p->pe;
  for (int c = 0; c < g; c++) {
    for (int node = 0; node < (p->rep ? 1 : N); node++)
      for (int i = 0; i + 1 < g; i++) {
        int a = node * g + (c + i) % g;
        int b = node * g + (c + i + 1) % g;
        flow(e, b, a, share, pe);
        flow(e, a, b, share, pe);
      }
    tree_net_flows(e, p, c, share, pe);
  }
}

/* NVLSTree (nvlstree_plan): in each node every member's S up and down
 * through the switch (NVLS's flows), then channel c's trees between the
 * nodes' members c, S/g each, at the NIC's full share. */
static void nvlstree_phase(struct emitter *e, const struct coll_plan *p,
                           int phase)
{
  (void)phase;
  int g = p->g, N = p->nodes;
  for (int node = 0; node < (p->rep ? 1 : N); node++)
    for (int k = 0; k < g; k++)
      flow(e, node * g + k, node * g + (k + 1) % g, p->S, p->pe);
  /* NCCL's double binary tree (dtree): each edge once, from the child. */
  for (int c = 0; c < g; c++)
    for (int k = 0; k < 2; k++)
      for (int v = 0; v < N; v++) {
        int nb[3];
        dtree(N, k, v, nb);
        if (nb[0] < 0)
          continue;
        int a = v, b = nb[0];
        if (!rep_edge(p, &a, &b))
          continue;
        flow(e, a * g + c, b * g + c, p->S / g / 2, 1.0);
        flow(e, b * g + c, a * g + c, p->S / g / 2, 1.0);
      }
}

/* Hierarchical all-reduce, phase by phase: 0 reduce-scatter in each node,
 * 1 all-reduce of S/g across nodes per rail, 2 all-gather in each node. */
static void hier_phase(struct emitter *e, const struct coll_plan *p, int phase)
{
  int g = p->g, N = p->nodes;
  double S = p->S;
  if (phase == 1) {
    for (int i = 0; i < g; i++)
      ring_flows(e, i, g, N, 2.0 * (N - 1) / N * S / g, p->pe);
  } else {
    for (int node = 0; node < N; node++)
      ring_flows(e, node * g, 1, g, (double)(g - 1) / g * S, p->pe);
  }
}

/* The neighbour of torus node `v` one step along dimension `d`, + or -. */
static int torus_next(const struct coll_model *m, int v, int d, int dir)
{
  int stride = 1;
  for (int i = 0; i < d; i++)
    stride *= m->torus_dim[i];
  int D = m->torus_dim[d], x = (v / stride) % D;
  return v + (((x + dir) % D + D) % D - x) * stride;
}

static void torus_phase(struct emitter *e, const struct coll_plan *p, int phase)
{
  const struct coll_model *m = e->m;
  int g = p->g, N = p->nodes, nd = p->torus_k, J = 2 * nd, b0 = p->torus_b0;
  double S = p->S;
  if (p->stage[phase] < 0) { /* inside each node: S over its g GPUs */
    for (int node = 0; node < N; node++)
      ring_flows(e, node * g, 1, g, (double)(g - 1) / g * S, p->pe);
    return;
  }
  /* Stage k of the order: part j runs along dimension (k + j) mod nd; its
   * data is S / g / J divided by the sizes of the dimensions it has
   * reduce-scattered before this stage (an all-gather stage carries what
   * the matching reduce-scatter stage did). */
  int k = p->stage_k[phase];
  for (int j = 0; j < J; j++) {
    int d = (k + j) % nd, dir = j < nd ? 1 : -1;
    double data = S / g / J;
    for (int i = 0; i < k; i++)
      data /= m->torus_dim[(i + j) % nd];
    int D = m->torus_dim[d];
    if (D < 2)
      continue;
    double edge = (double)(D - 1) / D * data;
    for (int v = 0; v < N; v++) {
      int w = torus_next(m, b0 + v, d, dir) - b0;
      for (int i = 0; i < g; i++)
        flow(e, v * g + i, w * g + i, edge, p->pe);
    }
  }
}

static void nvls_phase(struct emitter *e, const struct coll_plan *p, int phase)
{
  for (int k = 0; k < e->call->n; k++)
    flow(e, k, (k + 1) % e->call->n, p->S, p->pe);
}

long coll_phase_flows(const struct coll_model *m, const struct coll_call *call,
                      const struct coll_plan *p, int phase, coll_emit_fn emit,
                      void *ctx)
{
  if (p->shape == CS_NONE || p->shape == CS_CLOSED || phase < 0 ||
      phase >= p->nphases)
    return 0;
  struct emitter e = {m, call, p->net_scale, emit, ctx, 0};
  algos[p->algo].flows(&e, p, phase);
  return e.count;
}
