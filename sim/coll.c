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
 * The protocol shares 0.5 (LL) and 0.9375 (LL128) are NCCL's wire
 * formats, not fitted.
 *
 * Flows are emitted in a fixed order for every algorithm: SimGrid shares
 * bandwidth by max-min fairness, whose ties the order of start decides, so
 * the order is part of the results.
 */
#include "sim/coll.h"

#include <math.h>
#include <string.h>

#include "platforms/catalog.h"

/* ---- the algorithm table ----------------------------------------------- */

/* Members of a collective by node, as the algorithms see them. */
struct topo {
  int nodes, g;     /* nodes, members per node (channels > 1 only) */
  int span;         /* nodes the members span */
  int channels;     /* NCCL channels: one per member GPU of a node when a
                       regular group crosses nodes, else 1 */
  bool cross;       /* some flow crosses nodes */
};

typedef void (*coll_plan_fn)(const struct coll_model *m,
                             const struct coll_call *call,
                             const struct topo *t, struct coll_plan *out);
struct emitter;
typedef void (*coll_flows_fn)(struct emitter *e, const struct coll_plan *p,
                              int phase);

static void ring_plan(const struct coll_model *, const struct coll_call *,
                      const struct topo *, struct coll_plan *);
static void tree_plan(const struct coll_model *, const struct coll_call *,
                      const struct topo *, struct coll_plan *);
static void hier_plan(const struct coll_model *, const struct coll_call *,
                      const struct topo *, struct coll_plan *);
static void nvls_plan(const struct coll_model *, const struct coll_call *,
                      const struct topo *, struct coll_plan *);
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
    [CA_AUTO] = {"auto", "all", "ring for all-gather, reduce-scatter and "
                 "broadcast; for all-reduce NVLS inside an NVLS node where its "
                 "estimate beats the ring's, else ring; direct all-to-all",
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

int fidelity_from_name(const char *name)
{
  static const char *const n[] = {"flow", "step", "auto"};
  for (int i = 0; i < 3; i++)
    if (strcmp(n[i], name) == 0)
      return i;
  return -1;
}

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

/* The algorithm's shape for `op` over n members and S bytes: steps and
 * bytes per ring edge, and NCCL's protocol choice (its efficiency and the
 * delay beyond one flow's time).  `bw` is a member's bottleneck bandwidth
 * and `lat` the latency of one step's route. */
struct shape {
  double steps, per_edge, pe, extra_s;
};

static struct shape ring_shape(const struct coll_model *m, enum coll_op op,
                               int n, double S, double bw, double lat,
                               int channels)
{
  struct shape cs;
  switch (op) {
  case CO_ALLREDUCE:
    cs.steps = 2.0 * (n - 1);
    cs.per_edge = 2.0 * (n - 1) / n * S;
    break;
  case CO_ALLTOALL:
    cs.steps = 1;
    cs.per_edge = S / n;
    break;
  case CO_BROADCAST:
    cs.steps = n - 1;
    cs.per_edge = S;
    break;
  case CO_SENDRECV:
    cs.steps = 1;
    cs.per_edge = S;
    break;
  default: /* all-gather, reduce-scatter: S is the whole array */
    cs.steps = n - 1;
    cs.per_edge = (double)(n - 1) / n * S;
  }
  const double fixed[3] = {m->coll_lat_s, m->coll_lat_s * m->lat_ll128,
                           m->coll_lat_s * m->lat_ll};
  const double peff[3] = {1.0, m->ll128_eff, m->ll_eff};
  int best = 0;
  double tbest = 0;
  for (int k = 0; k < 3; k++) {
    double tk = fixed[k] + cs.per_edge / channels / (bw * peff[k]);
    if (k == 0 || tk < tbest) {
      tbest = tk;
      best = k;
    }
  }
  /* The flows pay one route latency; the other steps pay theirs here. */
  cs.extra_s = fixed[best] + (cs.steps - 1) * lat;
  cs.pe = peff[best];
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
  struct shape cs = ring_shape(m, op, n, S, bw, m->nvlink_lat_s, 1);
  double per_link = op == CO_ALLTOALL ? (n - 1) * cs.per_edge : cs.per_edge;
  return cs.extra_s + m->nvlink_lat_s + per_link / (cs.pe * bw);
}

/* Whether an all-reduce of S bytes over n GPUs of one node runs as NVLS:
 * when asked for, or under auto when the switch can and its estimate beats
 * the ring's, as NCCL's tuner chooses.  The ring's time, when it had to be
 * computed to decide, is left in *ring_s. */
static bool use_nvls(const struct coll_model *m, int n, double S,
                     double *ring_s)
{
  if (!m->nvls || (m->algo != CA_NVLS && m->algo != CA_AUTO))
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

/* Members by node: a regular multi-node group runs one channel per member
 * of a node, each with its own exit GPU. */
static struct topo topo_of(const struct coll_model *m,
                           const struct coll_call *call)
{
  int n = call->n, nodes = 1, g = n;
  for (int k = 1; k < n; k++)
    if (node_of_member(m, call, k) != node_of_member(m, call, k - 1))
      nodes++;
  if (nodes > 1 && n % nodes == 0) {
    g = n / nodes;
    for (int k = 0; k < n && g > 0; k++)
      if (node_of_member(m, call, k) != node_of_member(m, call, (k / g) * g))
        g = 0;
  }
  struct topo t;
  t.span = nodes; /* single-channel groups count as one node below */
  t.channels = (nodes > 1 && g > 0) ? g : 1;
  if (call->op == CO_SENDRECV)
    t.channels = 1;
  if (t.channels == 1)
    g = n, nodes = 1;
  t.g = g;
  t.nodes = nodes;
  t.cross = nodes > 1 ||
            node_of_member(m, call, 0) != node_of_member(m, call, n - 1);
  return t;
}

static double route_lat(const struct coll_call *call)
{
  return call->route_lat(call->ctx, call->ranks[0], call->ranks[call->n - 1]);
}

/* Rings and direct all-to-all: one phase of flows, or one phase per ring
 * step at step fidelity; a whole-node group in closed form. */
static void ring_plan(const struct coll_model *m, const struct coll_call *call,
                      const struct topo *t, struct coll_plan *out)
{
  enum coll_op op = call->op;
  int n = call->n;
  double S = call->bytes;
  if (!t->cross && n == m->gpus_per_node && m->closed_form) {
    closed_plan(m, op, n, S, out);
    return;
  }
  bool ring = op != CO_ALLTOALL && op != CO_SENDRECV;
  /* Rings lose NIC bandwidth with the nodes they span. */
  if (ring)
    out->net_scale = ring_scale(m, t->span);
  /* NCCL's protocol choice, from the bottleneck of one member: its NVLink
   * inside a node, its NIC (one channel's share) across nodes. */
  double bw = t->cross ? m->nic_bw_Bps * m->nic_eff * out->net_scale
                       : m->nvlink_bw_Bps * m->nvlink_eff;
  double lat = t->cross ? route_lat(call) : m->nvlink_lat_s;
  struct shape cs = ring_shape(m, op, n, S, bw, lat, t->channels);
  out->shape = op == CO_ALLTOALL ? CS_DIRECT : CS_RING;
  out->extra_s = cs.extra_s;
  out->pe = cs.pe;
  out->g = t->g;
  out->nodes = t->nodes;
  out->channels = t->channels;
  out->nphases = 1;
  if (ring && (m->fidelity == FID_STEP ||
               (m->fidelity == FID_AUTO && n <= 16))) {
    /* Each step pays its route latency itself: only the protocol's
     * overhead is left as a delay. */
    out->extra_s = cs.extra_s - (cs.steps - 1) * lat;
    out->nphases = (int)cs.steps;
    out->edge_bytes = cs.per_edge / cs.steps / t->channels;
    return;
  }
  out->edge_bytes = op == CO_ALLTOALL ? cs.per_edge
                                      : cs.per_edge / t->channels;
}

/* Double binary trees (tree_phase); NCCL's trees do not slow down with
 * depth, and a channel's pipeline moves at most tree_bw of algorithm
 * bandwidth: a delay of S/g / tree_bw runs beside the flows. */
static void tree_plan(const struct coll_model *m, const struct coll_call *call,
                      const struct topo *t, struct coll_plan *out)
{
  double lat = route_lat(call);
  double depth = 0;
  for (int v = t->nodes; v > 1; v = (v + 1) / 2)
    depth++;
  double steps = 2 * (depth + t->g - 1);
  out->shape = CS_TREE;
  out->extra_s = m->coll_lat_s + (steps - 1) * lat;
  out->g = t->g;
  out->nodes = t->nodes;
  out->S = call->bytes;
  out->pe = 1;
  out->nphases = 1;
  if (m->tree_bw > 0)
    out->delay0_s = out->S / t->g / m->tree_bw;
}

/* Hierarchical all-reduce: its inter-node phase is a ring over the nodes. */
static void hier_plan(const struct coll_model *m, const struct coll_call *call,
                      const struct topo *t, struct coll_plan *out)
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
                      const struct topo *t, struct coll_plan *out)
{
  out->shape = CS_NVLS;
  out->extra_s = m->coll_lat_s * m->lat_nvls;
  out->S = call->bytes;
  out->pe = m->nvls_eff / m->nvlink_eff;
  out->nphases = 1;
}

/* The algorithm that runs `call` (auto and fallbacks resolved). */
static enum coll_algo choose(const struct coll_model *m,
                             const struct coll_call *call, const struct topo *t)
{
  double ring_s;
  if (call->op == CO_ALLTOALL)
    return CA_DIRECT;
  if (call->op == CO_SENDRECV)
    return CA_RING;
  if (call->op == CO_ALLREDUCE && !t->cross &&
      use_nvls(m, call->n, call->bytes, &ring_s))
    return CA_NVLS;
  if (call->op == CO_ALLREDUCE && (m->algo == CA_TREE || m->algo == CA_HIER) &&
      t->channels > 1)
    return m->algo;
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
  struct topo t = topo_of(m, call);
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

/* A ring over members first, first + stride, ... (m of them). */
static void ring_flows(struct emitter *e, int first, int stride, int m,
                       double bytes, double pe)
{
  for (int k = 0; k < m; k++)
    flow(e, first + k * stride, first + ((k + 1) % m) * stride, bytes, pe);
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
                          int nodes, int channels, double share, double pe)
{
  int n = e->call->n;
  if (channels == 1) {
    for (int k = 0; k < n; k++) {
      int nk = k + 1 == n ? 0 : k + 1;
      if (op == CO_BROADCAST && nk == 0)
        continue;
      flow(e, k, nk, share, pe);
    }
    return;
  }
  for (int node = 0; node < nodes; node++) {
    /* The edge a -> a+1 is the exit edge of channel (a + 1) mod g only:
     * the other g - 1 channels carry it. */
    for (int a = 0; a < g; a++)
      if (g > 1)
        flow(e, node * g + a, node * g + (a + 1) % g, share * (g - 1), pe);
    int nnode = (node + 1) % nodes;
    if (op == CO_BROADCAST && nnode == 0)
      continue;
    for (int ch = 0; ch < channels; ch++)
      flow(e, node * g + (ch + g - 1) % g, nnode * g + ch, share, pe);
  }
}

static void ring_phase(struct emitter *e, const struct coll_plan *p, int phase)
{
  channel_rings(e, e->call->op, p->g, p->nodes, p->channels, p->edge_bytes,
                p->pe);
}

static void direct_phase(struct emitter *e, const struct coll_plan *p, int phase)
{
  for (int a = 0; a < e->call->n; a++)
    for (int b = 0; b < e->call->n; b++)
      if (a != b)
        flow(e, a, b, p->edge_bytes, p->pe);
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
    for (int node = 0; node < N; node++)
      for (int i = 0; i + 1 < g; i++) {
        int a = node * g + (c + i) % g;
        int b = node * g + (c + i + 1) % g;
        flow(e, b, a, share, pe);
        flow(e, a, b, share, pe);
      }
    for (int k = 0; k < 2 && N > 1; k++)
      for (int v = 1; v < N; v++) {
        int parent = (v - 1) / 2;
        int a = k ? N - 1 - v : v, b = k ? N - 1 - parent : parent;
        int child = a * g + c, up = b * g + c;
        flow(e, child, up, share / 2, pe);
        flow(e, up, child, share / 2, pe);
      }
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
