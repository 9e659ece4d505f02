/*
 * engine.c - event-driven replay of a task graph on SimGrid (engine.h).
 *
 * Invariants: each stream of a rank but the receive stream has at most one
 * task in flight; a task of such a stream at position k is complete iff
 * done[s] > k, which is how dependencies are checked without per-task state.
 * Receives are all posted at once (irecv) and complete in any order, so
 * they carry one completion flag each (rdone).  Collective and
 * transfer instances are found by key (group, sequence) or (sender,
 * receiver, micro-batch, virtual stage, direction) in one hash table.
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
 *   LAT_LL 0.448 of Simple's latency: the 8-byte all-reduce of 8 H100;
 *   LAT_LL128 0.616: the 32 MiB one, both on Hopper's line;
 *   LAT_NVLS 1.985: NVLS all-reduce of 8 H100 at 8 GiB and 8 H200 at
 *     64 MiB;
 *   TREE_BW 12.3 GB/s per channel: tree all-reduce of 4 B200 nodes at
 *     190.7 GB/s (NCCL's trees run far below their links and do not slow
 *     down with depth: 193.2 GB/s at 46 nodes).
 * The protocol shares 0.5 (LL) and 0.9375 (LL128) are NCCL's wire
 * formats, not fitted.
 */
#include "sim/engine.h"

#include <simgrid/engine.h>
#include <simgrid/host.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "platforms/catalog.h"
#include "platforms/platgen.h"
#include "sim/base/xalloc.h"
#include "sim/sgbridge.h"

#define LAT_LL128 0.616
#define LAT_LL 0.448
#define LAT_NVLS 1.985
#define TREE_BW 12.311e9

void engine_params_default(struct engine_params *p)
{
  memset(p, 0, sizeof *p);
  p->dtype = DTYPE_BF16;
  p->nvlink_eff = 0; /* the cluster's node type says (catalog) */
  p->nic_eff = 0;    /* the node type says (catalog) */
  p->coll_lat_s = -1; /* the node type says (catalog) */
  p->lat_ll128 = LAT_LL128;
  p->lat_ll = LAT_LL;
  p->lat_nvls = LAT_NVLS;
  p->ring_loss = -1; /* the node type says (catalog) */
  p->ll128_eff = 0.9375;
  p->ll_eff = 0.5;
  p->fidelity = FID_FLOW;
  p->nvls_eff = 0; /* the node type says (catalog) */
  p->tree_bw = TREE_BW;
  p->algo = CA_AUTO;
}

static const struct {
  const char *name, *ops, *summary;
} algos[CA_COUNT] = {
    [CA_AUTO] = {"auto", "all", "ring for all-gather, reduce-scatter and "
                 "broadcast; for all-reduce NVLS inside an NVLS node where its "
                 "estimate beats the ring's, else ring; direct all-to-all"},
    [CA_RING] = {"ring", "allreduce allgather reducescatter broadcast",
                 "NCCL ring; one channel per member GPU of a node when it "
                 "crosses nodes, each through its own NIC"},
    [CA_TREE] = {"tree", "allreduce", "double binary trees across nodes, one "
                 "pair per channel (each through its own GPU and NIC), chains "
                 "inside nodes; reduce up, broadcast down, pipelined"},
    [CA_HIER] = {"hierarchical", "allreduce", "reduce-scatter in each node, "
                 "all-reduce across nodes per rail (GPU i of every node), "
                 "all-gather in each node"},
    [CA_NVLS] = {"nvls", "allreduce", "NVLink SHARP: the NVSwitch reduces; "
                 "each GPU moves S up and S down (NVSwitch gen 3 and later, "
                 "within one NVLink domain)"},
    [CA_DIRECT] = {"direct", "alltoall", "every pair exchanges its share "
                   "directly"},
};

int coll_algo_from_name(const char *name)
{
  for (int a = 0; a < CA_COUNT; a++)
    if (strcmp(algos[a].name, name) == 0)
      return a;
  return -1;
}

const char *coll_algo_name(enum coll_algo a) { return algos[a].name; }

int fidelity_from_name(const char *name)
{
  static const char *const n[] = {"flow", "step", "auto"};
  for (int i = 0; i < 3; i++)
    if (strcmp(n[i], name) == 0)
      return i;
  return -1;
}
const char *coll_algo_summary(enum coll_algo a) { return algos[a].summary; }
const char *coll_algo_ops(enum coll_algo a) { return algos[a].ops; }

enum { TAG_KERNEL, TAG_INST, TAG_FLOW };

struct inst;

/* A traced flow: reported to on_flow when it completes. */
struct ftag {
  int type; /* TAG_FLOW */
  struct inst *in;
  long src, dst;
  double bytes, start;
};

struct stage_info {
  long n;
  int32_t *pos;               /* task -> position in its stream */
  int32_t *list[ST_COUNT];    /* stream -> task indices in order */
  long len[ST_COUNT];
  int32_t *cseq;              /* task -> sequence among its group's colls */
  double *dur;                /* kernel durations */
  uint8_t *target;            /* task -> another task depends on it */
};

struct ktag {
  int type; /* TAG_KERNEL */
  int32_t rank, task;
};

struct rank_state {
  int32_t stage;
  int32_t next[ST_COUNT];
  int32_t done[ST_COUNT];
  uint8_t busy[ST_COUNT];
  double started[ST_COUNT];
  int32_t merged;             /* kernels run as the current execution */
  uint8_t *rdone;             /* receives, by position: complete */
  int computing;
  int comm_active;
  double last_t, compute, overlapped, exposed, end;
  struct ktag ktag;
};

struct inst {
  int type; /* TAG_INST */
  int n, arrived, remaining;
  int sym_n;      /* > 1: one representative of a TP group of sym_n */
  int phase, nphases; /* multi-phase algorithms (hierarchical, steps) */
  void (*next_phase)(struct inst *in);
  double step_bytes, step_pe; /* step fidelity: bytes per flow per step */
  int channels;
  int g, nodes;   /* members per node, nodes (regular groups) */
  double S;
  bool timer_done;
  double extra_s;
  double net_scale; /* share of nic_eff its inter-node ring flows reach */
  uint64_t k0, k1, k2;
  int32_t *ranks, *tasks;
  struct inst *hnext;
};

#define HBITS 18
#define HSIZE (1u << HBITS)

struct engine {
  const struct graph *g;
  const struct cluster *c;
  const struct engine_params *p;
  struct stage_info *st;
  struct rank_state *rs;
  sg_host_t *hosts;
  sg_host_t *timers; /* one per node: weft-timer<n> */
  long nranks;
  struct inst **table;
  long kernels, flows;
  double speed;
  /* Symmetry: the TP ranks of a group run the same program on the same
   * time line when TP groups fill whole nodes (their collectives have the
   * node's NVLinks to themselves) and every GPU has its own NIC on a
   * non-blocking fabric (their DP and PP flows use disjoint NICs and never
   * contend in the fabric).  Then only TP rank 0 of each group is
   * simulated: the same results with TP times fewer activities. */
  bool sym;
  long rank_step; /* 1, or TP under symmetry */
};

static struct engine E; /* one replay per process: see engine.h */

/* ---- layout ----------------------------------------------------------- */

static long degree(int dim)
{
  const struct graph_layout *l = &E.g->layout;
  return dim == 0 ? l->tp : dim == 1 ? l->cp : dim == 2 ? l->dp : l->pp;
}

static void coords(long r, long c[4])
{
  for (int i = 0; i < 4; i++) {
    int d = E.g->layout.order[i];
    c[d] = r % degree(d);
    r /= degree(d);
  }
}

static long rank_of(const long c[4])
{
  long r = 0;
  for (int i = 3; i >= 0; i--) {
    int d = E.g->layout.order[i];
    r = r * degree(d) + c[d];
  }
  return r;
}

/* ---- hash table of instances ------------------------------------------ */

static uint64_t hash3(uint64_t a, uint64_t b, uint64_t c)
{
  uint64_t h = a * 0x9E3779B97F4A7C15ull ^ (b + 0x632BE59BD9B4E019ull) * 31 ^
               c * 0xC2B2AE3D27D4EB4Full;
  h ^= h >> 29;
  return h & (HSIZE - 1);
}

static struct inst *inst_get(uint64_t a, uint64_t b, uint64_t c, int n)
{
  uint64_t h = hash3(a, b, c);
  for (struct inst *i = E.table[h]; i; i = i->hnext)
    if (i->k0 == a && i->k1 == b && i->k2 == c)
      return i;
  struct inst *i = xcalloc(1, sizeof *i);
  i->type = TAG_INST;
  i->k0 = a;
  i->k1 = b;
  i->k2 = c;
  i->n = n;
  i->net_scale = 1;
  i->ranks = xcalloc((size_t)n, sizeof *i->ranks);
  i->tasks = xcalloc((size_t)n, sizeof *i->tasks);
  for (int k = 0; k < n; k++)
    i->ranks[k] = -1;
  i->hnext = E.table[h];
  E.table[h] = i;
  return i;
}

static void inst_free(struct inst *in)
{
  uint64_t h = hash3(in->k0, in->k1, in->k2);
  for (struct inst **pp = &E.table[h]; *pp; pp = &(*pp)->hnext)
    if (*pp == in) {
      *pp = in->hnext;
      break;
    }
  free(in->ranks);
  free(in->tasks);
  free(in);
}

/* ---- metrics ---------------------------------------------------------- */

static void account(struct rank_state *r)
{
  double now = sgb_now(), dt = now - r->last_t;
  if (dt > 0) {
    if (r->computing) {
      r->compute += dt;
      if (r->comm_active)
        r->overlapped += dt;
    } else if (r->comm_active) {
      r->exposed += dt;
    }
  }
  r->last_t = now;
}

/* ---- task life -------------------------------------------------------- */

static void try_advance(long rank);

static void complete(long rank, long task)
{
  struct rank_state *r = &E.rs[rank];
  const struct task *t = &E.g->prog[r->stage].tasks[task];
  account(r);
  if (t->kind == TK_KERNEL)
    r->computing = 0;
  else
    r->comm_active--;
  r->busy[t->stream] = 0;
  r->done[t->stream] += t->kind == TK_KERNEL ? r->merged : 1;
  if (t->kind == TK_RECV)
    r->rdone[E.st[r->stage].pos[task]] = 1;
  r->end = sgb_now();
  if (E.p->on_task)
    E.p->on_task(E.p->ctx, rank, task, r->started[t->stream], r->end);
  try_advance(rank);
}

static void inst_complete(struct inst *in)
{
  /* Take the member lists first: completing may create and free other
   * instances. */
  int n = in->n;
  int32_t *ranks = in->ranks, *tasks = in->tasks;
  in->ranks = in->tasks = NULL;
  inst_free(in);
  for (int k = 0; k < n; k++)
    complete(ranks[k], tasks[k]);
  free(ranks);
  free(tasks);
}

static int node_of(long rank) { return (int)(rank / E.c->gpus_per_node); }

static void on_done(void *tag)
{
  int type = *(int *)tag;
  if (type == TAG_KERNEL) {
    struct ktag *k = tag;
    complete(k->rank, k->task);
    return;
  }
  if (type == TAG_FLOW) {
    struct ftag *f = tag;
    E.p->on_flow(E.p->ctx, f->src, f->dst, f->bytes, f->start, sgb_now());
    tag = f->in;
    free(f);
  }
  struct inst *in = tag;
  if (--in->remaining > 0)
    return;
  if (in->phase + 1 < in->nphases) {
    in->phase++;
    in->next_phase(in);
    return;
  }
  if (!in->timer_done && in->extra_s > 0) {
    in->timer_done = true;
    in->remaining = 1;
    sgb_exec(E.timers[node_of(in->ranks[0])], in->extra_s, in);
    return;
  }
  inst_complete(in);
}


static void flow(long src, long dst, double bytes, double proto_eff,
                 struct inst *in)
{
  double eff = proto_eff * (node_of(src) == node_of(dst)
                                ? E.p->nvlink_eff
                                : E.p->nic_eff * in->net_scale);
  in->remaining++;
  E.flows++;
  if (E.p->on_flow) {
    struct ftag *f = xmalloc(sizeof *f);
    *f = (struct ftag){TAG_FLOW, in, src, dst, bytes / eff, sgb_now()};
    sgb_comm(E.hosts[src], E.hosts[dst], bytes / eff, f);
    return;
  }
  sgb_comm(E.hosts[src], E.hosts[dst], bytes / eff, in);
}

/* The algorithm's shape for `op` over n members and S bytes: steps and
 * bytes per ring edge, and NCCL's protocol choice (its efficiency and the
 * delay beyond one flow's time).  `bw` is a member's bottleneck bandwidth
 * and `lat` the latency of one step's route. */
struct coll_shape {
  double steps, per_edge, pe, extra_s;
};

static struct coll_shape coll_shape(int op, int n, double S, double bw,
                                    double lat, int channels)
{
  struct coll_shape cs;
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
  const double fixed[3] = {E.p->coll_lat_s, E.p->coll_lat_s * E.p->lat_ll128,
                           E.p->coll_lat_s * E.p->lat_ll};
  const double peff[3] = {1.0, E.p->ll128_eff, E.p->ll_eff};
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

/* NVLS all-reduce of S bytes inside one node: its fixed latency, one
 * NVLink latency, each GPU's S up and S down at nvls_eff of its NVLink. */
static double nvls_time(double S)
{
  return E.p->coll_lat_s * E.p->lat_nvls + E.c->nvlink_lat_s +
         S / (E.p->nvls_eff * E.c->gpu.nvlink_bw_Bps);
}

/* The closed-form time of a collective over n GPUs of one node as a ring
 * (direct for all-to-all): each NVLink direction carries one flow of it
 * (n - 1 of all-to-all). */
static double node_ring_time(int op, int n, double S)
{
  double bw = E.c->gpu.nvlink_bw_Bps * E.p->nvlink_eff;
  struct coll_shape cs = coll_shape(op, n, S, bw, E.c->nvlink_lat_s, 1);
  double per_link = op == CO_ALLTOALL ? (n - 1) * cs.per_edge : cs.per_edge;
  return cs.extra_s + E.c->nvlink_lat_s + per_link / (cs.pe * bw);
}

/* Whether an all-reduce of S bytes over n GPUs of one node runs as NVLS:
 * when asked for, or under auto when the switch can and its estimate beats
 * the ring's, as NCCL's tuner chooses.  The ring's time, when it had to be
 * computed to decide, is left in *ring_s. */
static bool use_nvls(int n, double S, double *ring_s)
{
  if (!E.c->nvls || (E.p->algo != CA_NVLS && E.p->algo != CA_AUTO))
    return false;
  if (E.p->algo == CA_NVLS)
    return true;
  *ring_s = node_ring_time(CO_ALLREDUCE, n, S);
  return nvls_time(S) < *ring_s;
}

/* A collective over every GPU of one node: the flows would take exactly
 * node_ring_time (or nvls_time); time it with one delay. */
static void whole_node(struct inst *in, int op, int n, double S)
{
  double ring_s = -1;
  bool nvls = op == CO_ALLREDUCE && use_nvls(n, S, &ring_s);
  in->extra_s = nvls ? nvls_time(S)
                     : ring_s >= 0 ? ring_s : node_ring_time(op, n, S);
  in->remaining = 1;
  in->timer_done = false;
  E.flows += op == CO_ALLTOALL ? (long)n * (n - 1) : n;
  on_done(in);
}

/* A ring over members[0..m) (stride apart in in->ranks, from first). */
static void ring_flows(struct inst *in, int first, int stride, int m,
                       double bytes, double pe)
{
  for (int k = 0; k < m; k++)
    flow(in->ranks[first + k * stride],
         in->ranks[first + ((k + 1) % m) * stride], bytes, pe, in);
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
static void channel_rings(struct inst *in, int op, int g, int nodes,
                          int channels, double share, double pe)
{
  int n = in->n;
  if (channels == 1) {
    for (int k = 0; k < n; k++) {
      int nk = k + 1 == n ? 0 : k + 1;
      if (op == CO_BROADCAST && nk == 0)
        continue;
      flow(in->ranks[k], in->ranks[nk], share, pe, in);
    }
    return;
  }
  for (int node = 0; node < nodes; node++) {
    /* The edge a -> a+1 is the exit edge of channel (a + 1) mod g only:
     * the other g - 1 channels carry it. */
    for (int a = 0; a < g; a++)
      if (g > 1)
        flow(in->ranks[node * g + a], in->ranks[node * g + (a + 1) % g],
             share * (g - 1), pe, in);
    int nnode = (node + 1) % nodes;
    if (op == CO_BROADCAST && nnode == 0)
      continue;
    for (int ch = 0; ch < channels; ch++)
      flow(in->ranks[node * g + (ch + g - 1) % g], in->ranks[nnode * g + ch],
           share, pe, in);
  }
}

/* One ring step (step fidelity): every member sends one chunk to its
 * successor in every channel. */
static void ring_step(struct inst *in)
{
  const struct task *t =
      &E.g->prog[E.rs[in->ranks[0]].stage].tasks[in->tasks[0]];
  in->remaining = 1;
  channel_rings(in, t->op, in->g, in->nodes, in->channels, in->step_bytes,
                in->step_pe);
  on_done(in);
}

/* Hierarchical all-reduce, phase by phase: 0 reduce-scatter in each node,
 * 1 all-reduce of S/g across nodes per rail, 2 all-gather in each node. */
static void hier_phase(struct inst *in)
{
  int g = in->g, N = in->nodes;
  double S = in->S;
  in->remaining = 1; /* guard */
  if (in->phase == 1) {
    for (int i = 0; i < g; i++)
      ring_flows(in, i, g, N, 2.0 * (N - 1) / N * S / g, 1.0);
  } else {
    for (int node = 0; node < N; node++)
      ring_flows(in, node * g, 1, g, (double)(g - 1) / g * S, 1.0);
  }
  on_done(in);
}

/* Double binary trees, one pair per channel as NCCL builds them: channel c
 * enters and leaves each node through GPU c and its NIC, carries S/g, and
 * runs a chain through the node's GPUs starting at c; of its two trees over
 * the nodes, the second is the first mirrored, so that a leaf of one is an
 * inner node of the other.  Reduce up and broadcast down run pipelined:
 * flows both ways at once, at the links' achievable bandwidth.  NCCL's
 * trees do not reach it: a channel's pipeline moves at most tree_bw of
 * algorithm bandwidth, whatever the depth of the trees, so the collective
 * also waits for a delay of S/g / tree_bw, started with the flows. */
static void tree_flows(struct inst *in, double S)
{
  int g = in->g, N = in->nodes;
  double share = S / g, pe = 1;
  if (E.p->tree_bw > 0) {
    in->remaining++;
    sgb_exec(E.timers[node_of(in->ranks[0])], share / E.p->tree_bw, in);
  }
  for (int c = 0; c < g; c++) {
    for (int node = 0; node < N; node++)
      for (int i = 0; i + 1 < g; i++) {
        long a = in->ranks[node * g + (c + i) % g];
        long b = in->ranks[node * g + (c + i + 1) % g];
        flow(b, a, share, pe, in);
        flow(a, b, share, pe, in);
      }
    for (int k = 0; k < 2 && N > 1; k++)
      for (int v = 1; v < N; v++) {
        int parent = (v - 1) / 2;
        int a = k ? N - 1 - v : v, b = k ? N - 1 - parent : parent;
        long child = in->ranks[a * g + c], up = in->ranks[b * g + c];
        flow(child, up, share / 2, pe, in);
        flow(up, child, share / 2, pe, in);
      }
  }
}

/* A ring over `nodes` nodes reaches less of its NICs the more nodes it
 * spans: ring_loss of the NIC bandwidth per doubling beyond two nodes (an
 * empirical law of the node type's measurements; the cause, the slowest
 * member or the fabric, is not modelled). */
static double ring_scale(int nodes)
{
  if (nodes <= 2 || E.p->ring_loss <= 0)
    return 1;
  double s = 1 - E.p->ring_loss * log2(nodes / 2.0);
  return s > 0.25 ? s : 0.25;
}

/* Start the flows of a collective whose members have all arrived. */
static void launch_coll(struct inst *in)
{
  int n = in->n;
  const struct task *t =
      &E.g->prog[E.rs[in->ranks[0]].stage].tasks[in->tasks[0]];
  for (int k = 0; k < n; k++) {
    struct rank_state *r = &E.rs[in->ranks[k]];
    account(r);
    r->comm_active++;
  }
  double S = t->bytes;
  if (in->sym_n > 1 && !E.p->free_comm && S > 0) {
    /* One representative of a whole-node TP group (see E.sym). */
    whole_node(in, t->op, in->sym_n, S);
    return;
  }
  if (E.p->free_comm || n < 2 || S <= 0) {
    in->remaining = 1;
    in->timer_done = true;
    on_done(in);
    return;
  }
  /* Members by node: a regular multi-node group runs one channel per
   * member of a node, each with its own exit GPU. */
  int nodes = 1, g = n;
  for (int k = 1; k < n; k++)
    if (node_of(in->ranks[k]) != node_of(in->ranks[k - 1]))
      nodes++;
  if (nodes > 1 && n % nodes == 0) {
    g = n / nodes;
    for (int k = 0; k < n && g > 0; k++)
      if (node_of(in->ranks[k]) != node_of(in->ranks[(k / g) * g]))
        g = 0;
  }
  int span = nodes; /* single-channel groups count as one node below */
  int channels = (nodes > 1 && g > 0) ? g : 1;
  if (t->op == CO_SENDRECV)
    channels = 1;
  if (channels == 1)
    g = n, nodes = 1;
  bool cross = nodes > 1 || node_of(in->ranks[0]) != node_of(in->ranks[n - 1]);
  enum coll_algo algo = t->op == CO_ALLTOALL ? CA_DIRECT
                       : t->op == CO_SENDRECV ? CA_RING : E.p->algo;
  double ring_s;
  if (t->op == CO_ALLREDUCE && !cross && use_nvls(n, S, &ring_s)) {
    /* NVLS: each GPU's data crosses its NVLink once each way. */
    in->extra_s = E.p->coll_lat_s * E.p->lat_nvls;
    in->remaining = 1;
    for (int k = 0; k < n; k++)
      flow(in->ranks[k], in->ranks[(k + 1) % n], S, E.p->nvls_eff /
           E.p->nvlink_eff, in);
    on_done(in);
    return;
  }
  if (t->op == CO_ALLREDUCE && (algo == CA_TREE || algo == CA_HIER) &&
      channels > 1) {
    in->g = g;
    in->nodes = nodes;
    in->S = S;
    double lat = sg_host_get_route_latency(E.hosts[in->ranks[0]],
                                           E.hosts[in->ranks[n - 1]]);
    if (algo == CA_TREE) { /* NCCL's trees do not slow down with depth */
      double depth = 0;
      for (int v = nodes; v > 1; v = (v + 1) / 2)
        depth++;
      double steps = 2 * (depth + g - 1);
      in->extra_s = E.p->coll_lat_s + (steps - 1) * lat;
      in->remaining = 1;
      tree_flows(in, S);
      on_done(in);
    } else { /* its inter-node phase is a ring over the nodes */
      in->net_scale = ring_scale(nodes);
      double steps = 2.0 * (g - 1) + 2.0 * (nodes - 1);
      in->extra_s = E.p->coll_lat_s + (steps - 3) * lat;
      in->nphases = 3;
      in->phase = 0;
      in->next_phase = hier_phase;
      hier_phase(in);
    }
    return;
  }
  if (!cross && n == E.c->gpus_per_node && !E.p->force_flows &&
      !E.p->on_flow) {
    whole_node(in, t->op, n, S);
    return;
  }
  /* Rings lose NIC bandwidth with the nodes they span (all-to-all and
   * send/recv are not rings). */
  if (t->op != CO_ALLTOALL && t->op != CO_SENDRECV)
    in->net_scale = ring_scale(span);
  /* NCCL's protocol choice, from the bottleneck of one member: its NVLink
   * inside a node, its NIC (one channel's share) across nodes. */
  double bw = cross ? E.c->nic.bw_Bps * E.p->nic_eff * in->net_scale
                    : E.c->gpu.nvlink_bw_Bps * E.p->nvlink_eff;
  double lat = cross ? sg_host_get_route_latency(E.hosts[in->ranks[0]],
                                                 E.hosts[in->ranks[n - 1]])
                     : E.c->nvlink_lat_s;
  struct coll_shape cs = coll_shape(t->op, n, S, bw, lat, channels);
  in->extra_s = cs.extra_s;
  double pe = cs.pe, per_edge = cs.per_edge;
  bool step = t->op != CO_ALLTOALL && t->op != CO_SENDRECV &&
              (E.p->fidelity == FID_STEP ||
               (E.p->fidelity == FID_AUTO && n <= 16));
  if (step) {
    /* Each step pays its route latency itself: only the protocol's
     * overhead is left as a delay. */
    in->extra_s = cs.extra_s - (cs.steps - 1) * lat;
    in->g = g;
    in->nodes = nodes;
    in->channels = channels;
    in->nphases = (int)cs.steps;
    in->phase = 0;
    in->step_bytes = per_edge / cs.steps / channels;
    in->step_pe = pe;
    in->next_phase = ring_step;
    ring_step(in);
    return;
  }
  in->remaining = 1; /* guard while starting flows */
  if (t->op == CO_ALLTOALL) {
    for (int a = 0; a < n; a++)
      for (int b = 0; b < n; b++)
        if (a != b)
          flow(in->ranks[a], in->ranks[b], per_edge, pe, in);
  } else {
    channel_rings(in, t->op, g, nodes, channels, per_edge / channels, pe);
  }
  on_done(in); /* drop the guard */
}

static void arrive_coll(long rank, long task)
{
  struct rank_state *r = &E.rs[rank];
  const struct task *t = &E.g->prog[r->stage].tasks[task];
  long c[4], id[4];
  coords(rank, c);
  memcpy(id, c, sizeof id);
  int n, slot;
  switch (t->group) {
  case GK_TP:
    n = E.sym ? 1 : (int)E.g->layout.tp;
    slot = E.sym ? 0 : (int)c[0];
    id[0] = 0;
    break;
  case GK_DP:
    n = (int)E.g->layout.dp;
    slot = (int)c[2];
    id[2] = 0;
    break;
  case GK_SHARD: { /* consecutive DP indices, with all their CP ranks */
    long sh = E.g->layout.shard ? E.g->layout.shard : E.g->layout.dp;
    long cp = E.g->layout.cp;
    n = (int)(sh * cp);
    slot = (int)(c[1] + cp * (c[2] % sh));
    id[1] = 0;
    id[2] = c[2] - c[2] % sh;
    break;
  }
  case GK_REPL: { /* the same index in every shard group */
    long sh = E.g->layout.shard ? E.g->layout.shard : E.g->layout.dp;
    n = (int)(E.g->layout.dp / sh);
    slot = (int)(c[2] / sh);
    id[2] = c[2] % sh;
    break;
  }
  case GK_CP:
    n = (int)E.g->layout.cp;
    slot = (int)c[1];
    id[1] = 0;
    break;
  case GK_DPCP:
    n = (int)(E.g->layout.cp * E.g->layout.dp);
    slot = (int)(c[1] + E.g->layout.cp * c[2]);
    id[1] = 0;
    id[2] = 0;
    break;
  case GK_EDPCP: {
    long ep = E.g->layout.ep, cp = E.g->layout.cp;
    n = (int)(cp * (E.g->layout.dp / ep));
    slot = (int)(c[1] + cp * (c[2] / ep));
    id[1] = 0;
    id[2] = c[2] % ep;
    break;
  }
  case GK_EP: {
    long ep = E.g->layout.ep;
    n = (int)ep;
    slot = (int)(c[2] % ep);
    id[2] = c[2] - c[2] % ep;
    break;
  }
  case GK_EDP: {
    long ep = E.g->layout.ep;
    n = (int)(E.g->layout.dp / ep);
    slot = (int)(c[2] / ep);
    id[2] = c[2] % ep;
    break;
  }
  default: /* GK_EMB: first and last stage */
    n = E.g->layout.pp > 1 ? 2 : 1;
    slot = c[3] == 0 ? 0 : 1;
    id[3] = 0;
  }
  struct inst *in = inst_get((uint64_t)t->group << 56 | (uint64_t)rank_of(id),
                             (uint64_t)E.st[r->stage].cseq[task], 0, n);
  in->ranks[slot] = (int32_t)rank;
  in->tasks[slot] = (int32_t)task;
  if (t->group == GK_TP && E.sym)
    in->sym_n = (int)E.g->layout.tp;
  if (++in->arrived == in->n)
    launch_coll(in);
}

static void arrive_p2p(long rank, long task)
{
  struct rank_state *r = &E.rs[rank];
  const struct task *t = &E.g->prog[r->stage].tasks[task];
  long pp = E.g->layout.pp;
  long vs = (long)t->chunk * pp + r->stage, vpeer = vs + t->peer;
  long c[4];
  coords(rank, c);
  c[3] = vpeer % pp;
  long peer = rank_of(c);
  bool sender = t->kind == TK_SEND;
  long src = sender ? rank : peer, dst = sender ? peer : rank;
  long vsrc = sender ? vs : vpeer;
  struct inst *in = inst_get(1ull << 63 | (uint64_t)src, (uint64_t)dst,
                             (uint64_t)t->mb << 24 | (uint64_t)vsrc << 1 |
                                 (t->phase == PH_FWD ? 0 : 1), 2);
  int slot = sender ? 0 : 1;
  in->ranks[slot] = (int32_t)rank;
  in->tasks[slot] = (int32_t)task;
  if (++in->arrived < 2)
    return;
  for (int k = 0; k < 2; k++) {
    struct rank_state *m = &E.rs[in->ranks[k]];
    account(m);
    m->comm_active++;
  }
  if (E.p->free_comm || t->bytes <= 0) {
    in->remaining = 1;
    in->timer_done = true;
    on_done(in);
    return;
  }
  in->extra_s = E.p->coll_lat_s;
  flow(src, dst, t->bytes, 1.0, in);
}

static bool deps_done(const struct rank_state *r, const struct stage_info *si,
                      const struct task *t, const struct program *pr)
{
  for (uint32_t d = 0; d < t->ndep; d++) {
    long j = pr->deps[t->dep0 + d];
    if (pr->tasks[j].kind == TK_RECV ? !r->rdone[si->pos[j]]
                                     : r->done[pr->tasks[j].stream] <= si->pos[j])
      return false;
  }
  return true;
}

static void start(long rank, long task)
{
  struct rank_state *r = &E.rs[rank];
  const struct task *t = &E.g->prog[r->stage].tasks[task];
  r->busy[t->stream] = 1;
  r->started[t->stream] = sgb_now();
  r->next[t->stream]++;
  switch (t->kind) {
  case TK_KERNEL: {
    /* Consecutive kernels that nothing else waits for and that wait for
     * nothing but their predecessor run as one execution: same time, far
     * fewer activities.  Not when a task hook wants every kernel. */
    const struct stage_info *si = &E.st[r->stage];
    const struct program *pr = &E.g->prog[r->stage];
    double dur = si->dur[task];
    long last = task;
    r->merged = 1;
    while (!E.p->on_task && !si->target[last] &&
           r->next[ST_COMPUTE] < si->len[ST_COMPUTE]) {
      long nx = si->list[ST_COMPUTE][r->next[ST_COMPUTE]];
      if (pr->tasks[nx].kind != TK_KERNEL || pr->tasks[nx].ndep)
        break;
      dur += si->dur[nx];
      last = nx;
      r->next[ST_COMPUTE]++;
      r->merged++;
    }
    account(r);
    r->computing = 1;
    r->ktag.task = (int32_t)last;
    E.kernels += r->merged;
    sgb_exec(E.hosts[rank], dur * E.speed, &r->ktag);
    break;
  }
  case TK_COLL:
    arrive_coll(rank, task);
    break;
  default:
    arrive_p2p(rank, task);
  }
}

static void try_advance(long rank)
{
  struct rank_state *r = &E.rs[rank];
  const struct stage_info *si = &E.st[r->stage];
  const struct program *pr = &E.g->prog[r->stage];
  bool again = true;
  while (again) {
    again = false;
    /* Receives are posted as soon as they are reached, all of them: a
     * receive only waits for its sender, never for another receive. */
    while (r->next[ST_PP_RECV] < si->len[ST_PP_RECV])
      start(rank, si->list[ST_PP_RECV][r->next[ST_PP_RECV]]);
    for (int s = 0; s < ST_COUNT; s++) {
      if (s == ST_PP_RECV || r->busy[s] || r->next[s] >= si->len[s])
        continue;
      long task = si->list[s][r->next[s]];
      if (!deps_done(r, si, &pr->tasks[task], pr))
        continue;
      start(rank, task);
      again = true; /* a zero-time task may have completed: look again */
      break;
    }
  }
}

/* ---- set-up ----------------------------------------------------------- */

static void prepare_stage(struct stage_info *si, const struct program *pr,
                          const struct cluster *c, const struct engine_params *p)
{
  si->n = pr->n;
  si->pos = xcalloc((size_t)pr->n + 1, sizeof *si->pos);
  si->cseq = xcalloc((size_t)pr->n + 1, sizeof *si->cseq);
  si->dur = xcalloc((size_t)pr->n + 1, sizeof *si->dur);
  si->target = xcalloc((size_t)pr->n + 1, sizeof *si->target);
  for (long d = 0; d < pr->ndeps; d++)
    si->target[pr->deps[d]] = 1;
  for (int s = 0; s < ST_COUNT; s++) {
    si->list[s] = xcalloc((size_t)pr->n + 1, sizeof *si->list[s]);
    si->len[s] = 0;
  }
  int32_t seq[GK_COUNT] = {0};
  for (long i = 0; i < pr->n; i++) {
    const struct task *t = &pr->tasks[i];
    si->pos[i] = (int32_t)si->len[t->stream];
    si->list[t->stream][si->len[t->stream]++] = (int32_t)i;
    if (t->kind == TK_COLL)
      si->cseq[i] = seq[t->group]++;
    if (t->kind == TK_KERNEL)
      si->dur[i] = cost_kernel(&c->gpu, p->dtype, t, p->table);
  }
}

int engine_run(const struct graph *g, const struct cluster *c,
               const struct engine_params *p, struct engine_result *out,
               struct weft_err *err)
{
  long ranks = g->layout.tp * g->layout.cp * g->layout.dp * g->layout.pp;
  if (ranks > c->gpus)
    return weft_errf(err, WEFT_EINVAL, "the graph needs %ld GPUs, the "
                     "cluster has %d", ranks, c->gpus);
  memset(&E, 0, sizeof E);
  static struct engine_params pr;
  pr = *p;
  if (pr.nvlink_eff <= 0)
    pr.nvlink_eff = c->coll_nvlink_eff > 0 ? c->coll_nvlink_eff
                                         : CATALOG_DEFAULT_NVLINK_EFF;
  if (pr.nic_eff <= 0)
    pr.nic_eff = c->coll_nic_eff > 0 ? c->coll_nic_eff
                                   : CATALOG_DEFAULT_NIC_EFF;
  if (pr.ring_loss < 0)
    pr.ring_loss = c->coll_ring_loss;
  if (pr.coll_lat_s < 0)
    pr.coll_lat_s = c->coll_lat_s > 0 ? c->coll_lat_s
                                     : CATALOG_DEFAULT_COLL_LAT;
  if (pr.nvls_eff <= 0)
    pr.nvls_eff = c->coll_nvls_eff > 0 ? c->coll_nvls_eff
                                     : CATALOG_DEFAULT_NVLS_EFF;
  E.g = g;
  E.c = c;
  E.p = &pr;
  E.nranks = ranks;
  E.table = xcalloc(HSIZE, sizeof *E.table);
  E.hosts = xcalloc((size_t)ranks, sizeof *E.hosts);
  for (long r = 0; r < ranks; r++) {
    char name[32];
    platgen_host_name((int)r, name, sizeof name);
    E.hosts[r] = sg_host_by_name(name);
    if (!E.hosts[r])
      return weft_errf(err, WEFT_EINVAL, "the platform has no host %s", name);
  }
  E.timers = xcalloc((size_t)c->nodes, sizeof *E.timers);
  for (int n = 0; n < c->nodes; n++) {
    char name[32];
    snprintf(name, sizeof name, "weft-timer%d", n);
    E.timers[n] = sg_host_by_name(name);
    if (!E.timers[n]) {
      free(E.timers);
      return weft_errf(err, WEFT_EINVAL, "the platform has no %s host (write "
                       "it with weft platform)", name);
    }
  }
  E.speed = sg_host_get_speed(E.hosts[0]);
  E.st = xcalloc((size_t)g->stages, sizeof *E.st);
  for (long s = 0; s < g->stages; s++)
    prepare_stage(&E.st[s], &g->prog[s], c, p);
  E.rs = xcalloc((size_t)ranks, sizeof *E.rs);
  for (long r = 0; r < ranks; r++) {
    long co[4];
    coords(r, co);
    E.rs[r].stage = (int32_t)co[3];
    E.rs[r].ktag.type = TAG_KERNEL;
    E.rs[r].ktag.rank = (int32_t)r;
    E.rs[r].rdone = xcalloc((size_t)E.st[co[3]].len[ST_PP_RECV] + 1, 1);
  }
  E.sym = g->layout.tp > 1 && g->layout.tp == c->gpus_per_node &&
          g->layout.order[0] == 0 && c->nics_per_node == c->gpus_per_node &&
          c->oversub == 1 && c->pod_oversub == 1 && !p->force_flows &&
          !p->on_task && !p->on_flow && !p->no_symmetry;
  E.rank_step = E.sym ? g->layout.tp : 1;
  sgb_init(on_done);
  for (long r = 0; r < ranks; r += E.rank_step)
    try_advance(r);
  sgb_run();
  int rc = 0;
  double end = 0, comp = 0, ov = 0, ex = 0;
  long simulated = 0;
  for (long r = 0; r < ranks && !rc; r += E.rank_step) {
    struct rank_state *st = &E.rs[r];
    for (int s = 0; s < ST_COUNT; s++)
      if (st->done[s] != E.st[st->stage].len[s]) {
        rc = weft_errf(err, WEFT_EINVAL, "replay stopped with rank %ld "
                       "waiting on its %s stream (a collective or transfer "
                       "whose peers never came: the graph is inconsistent)",
                       r, stream_name((enum stream)s));
        break;
      }
    if (st->end > end)
      end = st->end;
  }
  for (long r = 0; r < ranks; r += E.rank_step) {
    comp += E.rs[r].compute;
    ov += E.rs[r].overlapped;
    ex += E.rs[r].exposed;
    simulated++;
  }
  if (!rc) {
    memset(out, 0, sizeof *out);
    out->iteration_s = end;
    out->compute_s = comp / simulated;
    out->overlapped_s = ov / simulated;
    out->exposed_s = ex / simulated;
    out->symmetric = E.sym;
    out->idle_s = end - out->compute_s - out->exposed_s;
    /* Activities stand for the whole job: scale the representatives'. */
    out->kernels = E.kernels * E.rank_step;
    out->flows = E.flows * E.rank_step;
  }
  for (long s = 0; s < g->stages; s++) {
    free(E.st[s].pos);
    free(E.st[s].cseq);
    free(E.st[s].dur);
    free(E.st[s].target);
    for (int k = 0; k < ST_COUNT; k++)
      free(E.st[s].list[k]);
  }
  free(E.st);
  for (long r = 0; r < ranks; r++)
    free(E.rs[r].rdone);
  free(E.rs);
  free(E.hosts);
  free(E.timers);
  for (unsigned h = 0; h < HSIZE; h++)
    while (E.table[h])
      inst_free(E.table[h]);
  free(E.table);
  return rc;
}
