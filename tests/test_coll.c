/*
 * test_coll.c - collective expansion without SimGrid: which algorithm and
 * protocol a collective gets, its phases, delays and flows, against closed
 * forms.  The model is built by hand (a DGX-like node of 8 GPUs), route
 * latencies come from a constant.
 */
#include <criterion/criterion.h>
#include <math.h>
#include <string.h>

#include "sim/coll.h"

#define REL(a, b, tol) cr_assert(fabs((a) - (b)) <= (tol) * fabs(b), "%.12g != %.12g", (double)(a), (double)(b))

static const double NVL = 450e9, NIC = 50e9, NVL_LAT = 1e-6, NET_LAT = 5e-6;

static struct coll_model model(void)
{
  struct coll_model m = {
      .algo = CA_RING, .fidelity = FID_FLOW, .nvlink_eff = 0.8,
      .nic_eff = 0.9, .nvls_eff = 0.6, .tree_bw = 10e9, .coll_lat_s = 20e-6,
      .lat_ll128 = COLL_LAT_LL128, .lat_ll = COLL_LAT_LL,
      .lat_nvls = COLL_LAT_NVLS, .ring_loss = 0, .ll128_eff = COLL_LL128_EFF,
      .ll_eff = COLL_LL_EFF, .closed_form = true, .nccl_hops = true, .gpus_per_node = 8,
      .nvls = true, .nvlink_bw_Bps = NVL, .nic_bw_Bps = NIC,
      .nvlink_lat_s = NVL_LAT};
  return m;
}

static double lat(void *ctx, long a, long b)
{
  (void)ctx;
  return a / 8 == b / 8 ? NVL_LAT : NET_LAT;
}

static int32_t ranks[1536];

static struct coll_call call(enum coll_op op, int n, double S)
{
  for (int k = 0; k < n; k++)
    ranks[k] = k;
  return (struct coll_call){op, n, ranks, S, 0, lat, NULL, false};
}

/* Flows of one phase, collected. */
struct flows {
  long n;
  int src[8192], dst[8192];
  double wire[8192];
};

static void collect(void *ctx, int src, int dst, double wire)
{
  struct flows *f = ctx;
  cr_assert_lt(f->n, 8192);
  f->src[f->n] = src;
  f->dst[f->n] = dst;
  f->wire[f->n++] = wire;
}

static struct flows fl;

static long phase_flows(const struct coll_model *m, const struct coll_call *c,
                        const struct coll_plan *p, int phase)
{
  memset(&fl, 0, sizeof fl);
  long n = coll_phase_flows(m, c, p, phase, collect, &fl);
  cr_assert_eq(n, fl.n);
  for (long i = 0; i < n; i++) {
    cr_assert(fl.src[i] >= 0 && fl.src[i] < c->n);
    cr_assert(fl.dst[i] >= 0 && fl.dst[i] < c->n);
    cr_assert_gt(fl.wire[i], 0);
  }
  return n;
}

/* A ring over two nodes: one channel per GPU of a node, each leaving its
 * node through its own NIC; every NIC carries one channel's share, the
 * intra-node edges the other g - 1 channels' merged. */
Test(coll, ring_allreduce_across_two_nodes)
{
  struct coll_model m = model();
  double S = 1 << 30;
  struct coll_call c = call(CO_ALLREDUCE, 16, S);
  struct coll_plan p;
  coll_plan_make(&m, &c, &p);
  cr_assert_eq(p.shape, CS_RING);
  cr_assert_eq(p.algo, CA_RING);
  cr_assert_eq(p.channels, 8);
  cr_assert_eq(p.nphases, 1);
  cr_assert_eq(p.pe, 1.0, "Simple for 1 GiB");
  double share = 2.0 * 15 / 16 * S / 8;
  cr_assert_eq(phase_flows(&m, &c, &p, 0), 2 * (8 + 8));
  long inter = 0;
  for (long i = 0; i < fl.n; i++) {
    bool cross = fl.src[i] / 8 != fl.dst[i] / 8;
    inter += cross;
    REL(fl.wire[i], cross ? share / 0.9 : 7 * share / 0.8, 1e-12);
  }
  cr_assert_eq(inter, 16, "8 channels leave each of 2 nodes");
  /* The delay after the flows: Simple's fixed latency; each step carries
   * 1 GiB x 2 x 15/16 / 30 / 8 channels, 186 us at one NIC, which hides
   * every hop latency of NCCL's model (at most 14 us). */
  REL(p.extra_s, 20e-6, 1e-12);
}

/* A group spread unevenly over nodes (a TP group of 3 over nodes of 8:
 * ranks 6, 7 on one node and 8 on the next) has no regular channels: one
 * ring over its members, every flow between members.  It used to get 3
 * channels over 2 "nodes" and flows to members that do not exist. */
Test(coll, uneven_group_is_one_ring)
{
  struct coll_model m = model();
  int32_t r3[3] = {6, 7, 8};
  struct coll_call c = {CO_ALLREDUCE, 3, r3, 1 << 26, 0, lat, NULL, false};
  struct coll_plan p;
  coll_plan_make(&m, &c, &p);
  cr_assert_eq(p.channels, 1);
  cr_assert_eq(phase_flows(&m, &c, &p, 0), 3);
  for (long i = 0; i < fl.n; i++)
    cr_assert_eq(fl.dst[i], (fl.src[i] + 1) % 3);
}

/* Step fidelity: one phase per ring step carrying 1/steps of the bytes,
 * each step paying its own route latency. */
Test(coll, ring_step_by_step_carries_the_same_bytes)
{
  struct coll_model m = model();
  double S = 1 << 28;
  struct coll_call c = call(CO_ALLGATHER, 16, S);
  struct coll_plan flow;
  coll_plan_make(&m, &c, &flow);
  double total_flow = 0;
  phase_flows(&m, &c, &flow, 0);
  for (long i = 0; i < fl.n; i++)
    total_flow += fl.wire[i];
  m.fidelity = FID_STEP;
  struct coll_plan step;
  coll_plan_make(&m, &c, &step);
  cr_assert_eq(step.nphases, 15);
  double total_step = 0;
  for (int ph = 0; ph < step.nphases; ph++) {
    phase_flows(&m, &c, &step, ph);
    for (long i = 0; i < fl.n; i++)
      total_step += fl.wire[i];
  }
  REL(total_step, total_flow, 1e-12);
  /* Each step pays its route: the delay is what is left of the flow
   * fidelity's (here none: 256 MiB hides NCCL's hops, and the 15 routes
   * exceed the fixed latency). */
  cr_assert_eq(step.extra_s, fmax(0, flow.extra_s - 14 * NET_LAT));
  m.nccl_hops = false;
  m.fidelity = FID_FLOW;
  coll_plan_make(&m, &c, &flow);
  m.fidelity = FID_STEP;
  coll_plan_make(&m, &c, &step);
  REL(step.extra_s, flow.extra_s - 14 * NET_LAT, 1e-12);
  cr_assert_eq(phase_flows(&m, &c, &step, 15), 0, "no phase 15");
}

/* Every GPU of one node: a closed form instead of flows, standing for n
 * flows: the ring's 2(n-1)/n S over one NVLink at its efficiency, plus
 * Simple's latency and one NVLink latency per step. */
Test(coll, whole_node_ring_in_closed_form)
{
  struct coll_model m = model();
  double S = 1 << 30, n = 8;
  struct coll_call c = call(CO_ALLREDUCE, 8, S);
  struct coll_plan p;
  coll_plan_make(&m, &c, &p);
  cr_assert_eq(p.shape, CS_CLOSED);
  cr_assert_eq(p.nphases, 0);
  cr_assert_eq(p.closed_flows, 8);
  REL(p.extra_s, 20e-6 + 2 * (n - 1) * NVL_LAT +
                     2 * (n - 1) / n * S / (0.8 * NVL), 1e-12);
  REL(p.extra_s, coll_node_ring_time(&m, CO_ALLREDUCE, 8, S), 1e-15);
  cr_assert_eq(phase_flows(&m, &c, &p, 0), 0);
  /* Without the shortcut, the same collective as n ring flows. */
  m.closed_form = false;
  coll_plan_make(&m, &c, &p);
  cr_assert_eq(p.shape, CS_RING);
  cr_assert_eq(phase_flows(&m, &c, &p, 0), 8);
  for (long i = 0; i < fl.n; i++)
    cr_assert_eq(fl.dst[i], (fl.src[i] + 1) % 8);
  /* Nor when other collectives may share its links (not on the compute
   * stream): the closed form would give it every link to itself. */
  m.closed_form = true;
  c.shared = true;
  coll_plan_make(&m, &c, &p);
  cr_assert_eq(p.shape, CS_RING);
}

/* LL's share of a ring's bandwidth across N nodes with ch channels:
 * half, capped at NCCL's llMaxBw of bus bandwidth (coll.h). */
static double ll_pe(int N, int ch)
{
  double cap = N <= 2 ? COLL_LL_NET_BW_2N : COLL_LL_NET_BW;
  double pe = COLL_LL_EFF;
  return pe * ch * NIC * 0.9 > cap ? cap / (ch * NIC * 0.9) : pe;
}

/* NCCL's protocol choice: LL for a small message (half the bandwidth, a
 * fraction of the latency), Simple for a large one. */
Test(coll, protocol_by_size)
{
  struct coll_model m = model();
  struct coll_call c = call(CO_ALLREDUCE, 16, 4096);
  struct coll_plan p;
  coll_plan_make(&m, &c, &p);
  /* Over two nodes LL moves 39 GB/s at most, of 8 x 45 GB/s. */
  REL(p.pe, 39.0 / 360, 1e-12);
  REL(p.pe, ll_pe(2, 8), 1e-12);
  /* LL: 28 steps inside nodes at max(0.6, 1.0) us, 2 across at 2.7 us,
   * each less what its 4096 x 2 x 15/16 / 30 / 8 bytes take at LL's
   * share of a NIC; the flows pay one route. */
  double st = 4096 * 2.0 * 15 / 16 / 30 / 8 / (NIC * 0.9 * ll_pe(2, 8));
  REL(p.extra_s, 20e-6 * COLL_LAT_LL + 28 * (1.0e-6 - st) +
                     2 * (2.7e-6 - st) - NET_LAT,
      1e-12);
  c.bytes = 1e9;
  coll_plan_make(&m, &c, &p);
  cr_assert_eq(p.pe, 1.0);
}

/* Inside a node with a measured floor: NCCL's latency per protocol
 * (6.6 + 0.6 x steps LL, 14 + 1.9 x steps LL128) or the floor, whichever
 * is larger, then the bytes (LL at half the ring's bandwidth capped at
 * ll_bw, LL128 at 0.92); the fastest protocol is taken. */
Test(coll, one_node_ring_under_its_floor)
{
  struct coll_model m = model();
  m.floor_s = 35e-6;
  m.ll_bw_Bps = 141e9;
  m.coll_lat_s = 46.8e-6;
  double bw = 0.8 * NVL; /* 360 GB/s: LL at 141, LL128 at 331.2 */
  /* Small: all-reduce and all-gather pay the same 35 us; the all-reduce
   * by LL (LL128's 40.6 us exceed the floor), the all-gather by LL128,
   * whose 14 + 7 x 1.9 us sit under it. */
  double S = 65536;
  double ar = coll_node_ring_time(&m, CO_ALLREDUCE, 8, S);
  double ag = coll_node_ring_time(&m, CO_ALLGATHER, 8, S);
  REL(ar, 35e-6 + 1.75 * S / 141e9, 1e-12);
  REL(ag, 35e-6 + 0.875 * S / (0.92 * bw), 1e-12);
  /* 8 MiB all-reduce: LL128's 14 + 14 x 1.9 = 40.6 us exceed the floor. */
  S = 8 << 20;
  REL(coll_node_ring_time(&m, CO_ALLREDUCE, 8, S),
      40.6e-6 + 1.75 * S / (0.92 * bw), 1e-12);
  /* 8 MiB all-gather: 14 + 7 x 1.9 = 27.3 us sit under the floor. */
  REL(coll_node_ring_time(&m, CO_ALLGATHER, 8, S),
      35e-6 + 0.875 * S / (0.92 * bw), 1e-12);
  /* 1 GiB: Simple, its own latency: 46.8 us + 14 steps x 1 us. */
  S = 1 << 30;
  REL(coll_node_ring_time(&m, CO_ALLREDUCE, 8, S),
      46.8e-6 + 14 * NVL_LAT + 1.75 * S / bw, 1e-12);
  /* The step latencies grow with the ring: 72 GPUs of one NVLink domain
   * pay 6.6 + 142 x 0.6 = 91.8 us for the smallest all-reduce. */
  m.gpus_per_node = 72;
  REL(coll_node_ring_time(&m, CO_ALLREDUCE, 72, 8),
      91.8e-6 + 2.0 * 71 / 72 * 8 / 141e9, 1e-12);
  /* No floor: the older additive model (LL at its share of coll_lat). */
  m.gpus_per_node = 8;
  m.floor_s = 0;
  REL(coll_node_ring_time(&m, CO_ALLREDUCE, 8, 8),
      46.8e-6 * COLL_LAT_LL + 14 * NVL_LAT + 1.75 * 8 / (0.5 * bw), 1e-12);
}

/* Auto: NVLS inside an NVLS node when its estimate beats the ring's. */
Test(coll, auto_picks_nvls_for_a_large_allreduce_only)
{
  struct coll_model m = model();
  m.algo = CA_AUTO;
  double S = 1 << 30;
  struct coll_call c = call(CO_ALLREDUCE, 8, S);
  struct coll_plan p;
  coll_plan_make(&m, &c, &p);
  cr_assert_eq(p.algo, CA_NVLS);
  /* As flows (one up and down per GPU) plus NVLS's fixed latency; only a
   * symmetric representative uses the closed form. */
  cr_assert_eq(p.shape, CS_NVLS);
  REL(p.extra_s, 20e-6 * COLL_LAT_NVLS, 1e-12);
  c.sym_n = 8;
  c.n = 1;
  coll_plan_make(&m, &c, &p);
  cr_assert_eq(p.shape, CS_CLOSED);
  REL(p.extra_s, coll_nvls_time(&m, S), 1e-15);
  c = call(CO_ALLREDUCE, 8, S);
  REL(coll_nvls_time(&m, S),
      20e-6 * COLL_LAT_NVLS + NVL_LAT + S / (0.6 * NVL), 1e-12);
  c.bytes = 4096;
  coll_plan_make(&m, &c, &p);
  cr_assert_eq(p.algo, CA_RING);
  /* Four GPUs of the node: NVLS as flows, S each way at nvls_eff. */
  c = call(CO_ALLREDUCE, 4, S);
  coll_plan_make(&m, &c, &p);
  cr_assert_eq(p.shape, CS_NVLS);
  cr_assert_eq(phase_flows(&m, &c, &p, 0), 4);
  for (long i = 0; i < fl.n; i++)
    REL(fl.wire[i], S / 0.6, 1e-12);
  m.nvls = false;
  coll_plan_make(&m, &c, &p);
  cr_assert_eq(p.algo, CA_RING, "no NVLS without the switch");
}

/* Direct all-to-all: every ordered pair exchanges S/n. */
Test(coll, direct_alltoall)
{
  struct coll_model m = model();
  double S = 1 << 26;
  struct coll_call c = call(CO_ALLTOALL, 16, S);
  struct coll_plan p;
  coll_plan_make(&m, &c, &p);
  cr_assert_eq(p.algo, CA_DIRECT);
  cr_assert_eq(phase_flows(&m, &c, &p, 0), 16 * 15);
  for (long i = 0; i < fl.n; i++) {
    bool cross = fl.src[i] / 8 != fl.dst[i] / 8;
    REL(fl.wire[i], S / 16 / (p.pe * (cross ? 0.9 : 0.8)), 1e-12);
  }
  c = call(CO_ALLTOALL, 8, S);
  coll_plan_make(&m, &c, &p);
  cr_assert_eq(p.shape, CS_CLOSED);
  cr_assert_eq(p.closed_flows, 8 * 7);
}

/* Double binary trees over 4 nodes: per channel a chain both ways in each
 * node and two mirrored trees of N-1 edges both ways; a pipeline limit of
 * S/g / tree_bw beside the flows; latency of 2(depth + g - 1) steps. */
Test(coll, tree_allreduce_across_four_nodes)
{
  struct coll_model m = model();
  m.algo = CA_TREE;
  double S = 1 << 30;
  int g = 8, N = 4;
  struct coll_call c = call(CO_ALLREDUCE, 32, S);
  struct coll_plan p;
  coll_plan_make(&m, &c, &p);
  cr_assert_eq(p.shape, CS_TREE);
  cr_assert_eq(p.nphases, 1);
  REL(p.delay0_s, S / g / 10e9, 1e-12); /* 1 GiB: no correction */
  /* NCCL's tree latency: 2 x ((g - 1) NVLink hops at 4 us + log2(4)
   * network hops at 14 us + COLL_NET_STEP), Simple, less the route the
   * flows pay. */
  REL(p.extra_s,
      20e-6 + 2 * (7 * 4.0 + 2 * (14.0 + COLL_NET_STEP)) * 1e-6 - NET_LAT,
      1e-12);
  cr_assert_eq(phase_flows(&m, &c, &p, 0),
               g * (N * (g - 1) * 2 + 2 * (N - 1) * 2));
  /* Inside a node, not a regular multi-node group: the ring. */
  c = call(CO_ALLREDUCE, 4, S);
  coll_plan_make(&m, &c, &p);
  cr_assert_eq(p.algo, CA_RING);
}

/* Hierarchical: reduce-scatter in each node, a ring per rail across the
 * nodes on S/g, all-gather in each node. */
Test(coll, hierarchical_allreduce_phases)
{
  struct coll_model m = model();
  m.algo = CA_HIER;
  double S = 1 << 30;
  int g = 8, N = 4;
  struct coll_call c = call(CO_ALLREDUCE, 32, S);
  struct coll_plan p;
  coll_plan_make(&m, &c, &p);
  cr_assert_eq(p.shape, CS_HIER);
  cr_assert_eq(p.nphases, 3);
  for (int ph = 0; ph < 3; ph++) {
    cr_assert_eq(phase_flows(&m, &c, &p, ph), ph == 1 ? g * N : N * g);
    for (long i = 0; i < fl.n; i++) {
      bool cross = fl.src[i] / 8 != fl.dst[i] / 8;
      cr_assert_eq(cross, ph == 1, "phase %d crosses nodes only in 1", ph);
      double want = ph == 1 ? 2.0 * (N - 1) / N * S / g / 0.9
                            : (double)(g - 1) / g * S / 0.8;
      REL(fl.wire[i], want, 1e-12);
    }
  }
  REL(p.extra_s, 20e-6 + (2.0 * (g - 1) + 2.0 * (N - 1) - 3) * NET_LAT, 1e-12);
}

/* A broadcast is a chain: nothing flows back to the root. */
Test(coll, broadcast_is_a_chain)
{
  struct coll_model m = model();
  m.closed_form = false;
  struct coll_call c = call(CO_BROADCAST, 8, 1 << 20);
  struct coll_plan p;
  coll_plan_make(&m, &c, &p);
  cr_assert_eq(phase_flows(&m, &c, &p, 0), 7);
  for (long i = 0; i < fl.n; i++)
    cr_assert_neq(fl.dst[i], 0);
}

/* Nothing to simulate: one member, no bytes, or free communication. */
Test(coll, nothing_to_do)
{
  struct coll_model m = model();
  struct coll_plan p;
  struct coll_call c = call(CO_ALLREDUCE, 1, 1 << 20);
  coll_plan_make(&m, &c, &p);
  cr_assert_eq(p.shape, CS_NONE);
  cr_assert_eq(p.extra_s, 0);
  c = call(CO_ALLREDUCE, 16, 0);
  coll_plan_make(&m, &c, &p);
  cr_assert_eq(p.shape, CS_NONE);
  m.free_comm = true;
  c = call(CO_ALLREDUCE, 16, 1 << 20);
  coll_plan_make(&m, &c, &p);
  cr_assert_eq(p.shape, CS_NONE);
}

/* A representative of a whole-node TP group (engine symmetry) is timed by
 * the closed form of its sym_n GPUs. */
Test(coll, symmetric_representative)
{
  struct coll_model m = model();
  double S = 1 << 28;
  struct coll_call c = call(CO_ALLGATHER, 1, S);
  c.sym_n = 8;
  struct coll_plan p;
  coll_plan_make(&m, &c, &p);
  cr_assert_eq(p.shape, CS_CLOSED);
  REL(p.extra_s, coll_node_ring_time(&m, CO_ALLGATHER, 8, S), 1e-15);
}

/* Rings lose NIC bandwidth with the nodes they span: ring_loss per
 * doubling beyond two nodes. */
Test(coll, ring_loss_with_nodes)
{
  struct coll_model m = model();
  m.ring_loss = 0.05;
  double S = 8.0 * (1 << 30); /* Simple: LL128 is close at 1 GiB */
  struct coll_call c = call(CO_ALLREDUCE, 64, S);
  struct coll_plan p;
  coll_plan_make(&m, &c, &p);
  REL(p.net_scale, 1 - 0.05 * 2, 1e-12); /* 8 nodes: two doublings */
  phase_flows(&m, &c, &p, 0);
  for (long i = 0; i < fl.n; i++)
    if (fl.src[i] / 8 != fl.dst[i] / 8)
      REL(fl.wire[i], 2.0 * 63 / 64 * S / 8 / (0.9 * 0.9), 1e-12);
}

Test(coll, table_names)
{
  for (int a = 0; a < CA_COUNT; a++) {
    cr_assert_eq(coll_algo_from_name(coll_algo_name((enum coll_algo)a)), a);
    cr_assert(strlen(coll_algo_summary((enum coll_algo)a)) > 10);
  }
  cr_assert_eq(coll_algo_from_name("butterfly"), -1);
  cr_assert_eq(fidelity_from_name("step"), FID_STEP);
  cr_assert_eq(fidelity_from_name("packet"), -1);
}

/* NCCL 2.30.7's closed form of a ring's latency across nodes, microseconds
 * (tuning.cc): baseLat + (steps - inter) x max(intra hop, net overhead) +
 * inter x net hop; protocol k: 0 Simple, 1 LL128, 2 LL. */
static double nccl_ring_us(enum coll_op op, int n, int N, int k)
{
  const double nvl[3] = {3.4, 1.9, 0.6}, net[3] = {14.0, 4.0, 2.7},
               tnet[3] = {14.0, 8.5, 5.0}, ovh[3] = {3.0, 1.0, 1.0};
  double steps = op == CO_ALLREDUCE ? 2.0 * (n - 1) : n - 1;
  double inter = op == CO_ALLREDUCE ? 2.0 * (N - 1) : N - 1;
  double intra = nvl[k] > ovh[k] ? nvl[k] : ovh[k];
  return (steps - inter) * intra +
         inter * (n == N ? tnet[k] : net[k]);
}

/* A latency-bound ring across nodes pays every step's hop: at 8 bytes the
 * bytes hide nothing, and the delay is NCCL's closed form (LL) beyond the
 * fixed latency, less the one route the flows pay (a ring's network
 * steps do not carry COLL_NET_STEP, trees' hops do).  Points: 2 and 8 nodes
 * of 8 GPUs, all-reduce and all-gather; and one GPU per node, where the
 * network hop is the tree's (NCCL: "with ppn=1 latencies are fully
 * exposed"). */
Test(coll, per_step_latency_matches_nccl)
{
  struct coll_model m = model();
  const struct { enum coll_op op; int n, N; } pts[] = {
      {CO_ALLREDUCE, 16, 2}, {CO_ALLREDUCE, 64, 8},
      {CO_ALLGATHER, 16, 2}, {CO_ALLGATHER, 64, 8}};
  for (int i = 0; i < 4; i++) {
    struct coll_call c = call(pts[i].op, pts[i].n, 8);
    struct coll_plan p;
    coll_plan_make(&m, &c, &p);
    REL(p.pe, ll_pe(pts[i].N, 8), 1e-12);
    double ch = 8, steps = pts[i].op == CO_ALLREDUCE ? 2.0 * (pts[i].n - 1)
                                                     : pts[i].n - 1;
    double per_edge = (pts[i].op == CO_ALLREDUCE ? 2.0 : 1.0) *
                      (pts[i].n - 1) / pts[i].n * 8;
    double st = per_edge / steps / ch / (NIC * 0.9 * ll_pe(pts[i].N, 8));
    double want = 20e-6 * COLL_LAT_LL +
                  nccl_ring_us(pts[i].op, pts[i].n, pts[i].N, 2) * 1e-6 -
                  steps * st - NET_LAT;
    REL(p.extra_s, want, 1e-9);
  }
  /* One GPU per node: 8 ranks on 8 nodes (members 0, 8, 16, ...). */
  for (int k = 0; k < 8; k++)
    ranks[k] = 8 * k;
  struct coll_call c = {CO_ALLGATHER, 8, ranks, 8, 0, lat, NULL, false};
  struct coll_plan p;
  coll_plan_make(&m, &c, &p);
  /* One channel: LL's half of a NIC, 22.5 GB/s, above 20.4. */
  REL(p.pe, 20.4 / 45, 1e-12);
  double st = 7.0 / 8 * 8 / 7 / (NIC * 0.9 * ll_pe(8, 1));
  REL(p.extra_s,
      20e-6 * COLL_LAT_LL + 7 * (5.0e-6 - st) - NET_LAT,
      1e-9);
}

/* A large flat ring's time falls with its bytes but never below its
 * latency: 1536 GPUs on 192 nodes, all-gather from 1 KiB to 4 GiB. */
Test(coll, flat_ring_time_floor)
{
  struct coll_model m = model();
  m.algo = CA_AUTO;
  double floor_us = nccl_ring_us(CO_ALLGATHER, 1536, 192, 2);
  double prev = -1;
  for (double S = 1024; S <= 4.0 * (1 << 30); S *= 4) {
    struct coll_call c = call(CO_ALLGATHER, 1536, S);
    struct coll_plan p;
    coll_plan_make(&m, &c, &p);
    double bw = NIC * 0.9 * p.pe;
    double t = p.extra_s + NET_LAT + p.edge_bytes / bw;
    /* Per byte it gets cheaper, in total never cheaper than LL's steps. */
    cr_assert_geq(t, 20e-6 * COLL_LAT_LL + 0.99 * floor_us * 1e-6 -
                         1535 * 8 * 1e-9, "S %g", S);
    if (prev > 0)
      cr_assert_lt(t / S, prev, "time per byte falls (S %g)", S);
    prev = t / S;
  }
}

/* NCCL's ring/tree switch for all-reduce across nodes: with the tree's
 * latency 2 x ((g-1) x 4 + log2 N x 14) us (Simple) against the ring's
 * (steps) hops, the tree wins for mid sizes on many nodes and the ring for
 * large messages, where its bandwidth is higher than tree_bw's. */
Test(coll, ring_tree_switch)
{
  struct coll_model m = model();
  m.algo = CA_AUTO;
  m.nvls = false; /* no NVLSTree (test nvlstree_auto_choice) */
  struct coll_plan p;
  /* 64 nodes, 1 MiB: the ring pays 1022 steps; the tree 2 x (7 + 6). */
  struct coll_call c = call(CO_ALLREDUCE, 512, 1 << 20);
  coll_plan_make(&m, &c, &p);
  cr_assert_eq(p.algo, CA_TREE);
  /* 16 GiB: bandwidth decides; tree_bw 10 GB/s per channel (80 GB/s of
   * algorithm bandwidth) loses to 8 NICs at 45 GB/s in a ring. */
  c.bytes = 16.0 * (1 << 30);
  coll_plan_make(&m, &c, &p);
  cr_assert_eq(p.algo, CA_RING);
  /* 2 nodes, 64 MiB: the ring's few steps win. */
  c.n = 16;
  c.bytes = 64 << 20;
  coll_plan_make(&m, &c, &p);
  cr_assert_eq(p.algo, CA_RING);
  /* Where NCCL would not run trees, explicit rings stay rings. */
  m.algo = CA_RING;
  c.n = 512;
  c.bytes = 1 << 20;
  coll_plan_make(&m, &c, &p);
  cr_assert_eq(p.algo, CA_RING);
}

/* PAT: all-gather with one GPU per node, under auto where its log-depth
 * latency beats the ring's linear one (NCCL >= 2.23); never with several
 * GPUs of a node in the group. */
Test(coll, pat_at_one_gpu_per_node)
{
  struct coll_model m = model();
  m.algo = CA_AUTO;
  for (int k = 0; k < 64; k++)
    ranks[k] = 8 * k; /* 64 nodes, GPU 0 of each */
  struct coll_call c = {CO_ALLGATHER, 64, ranks, 1 << 20, 0, lat, NULL, false};
  struct coll_plan p;
  coll_plan_make(&m, &c, &p);
  cr_assert_eq(p.algo, CA_PAT);
  cr_assert_eq(p.pe, COLL_PAT_BW);
  /* NCCL's PAT latency: log2(64) x 14 / 3.5 + 64 x 2.8 us. */
  REL(p.extra_s, 20e-6 + (6 * 14.0 / 3.5 + 64 * 2.8) * 1e-6 - NET_LAT, 1e-12);
  cr_assert_eq(phase_flows(&m, &c, &p, 0), 64);
  /* 8 GiB: the ring's full bandwidth wins. */
  c.bytes = 8.0 * (1 << 30);
  coll_plan_make(&m, &c, &p);
  cr_assert_eq(p.algo, CA_RING);
  /* 8 GPUs of each node: no PAT. */
  c = call(CO_ALLGATHER, 64, 1 << 20);
  coll_plan_make(&m, &c, &p);
  cr_assert_eq(p.algo, CA_RING);
}

/* On a symmetric fabric a ring over whole nodes emits its first node's
 * flows only (g merged edges inside it, its channels to the next node and
 * from the previous one), with the same bytes, and counts the others as
 * closed flows. */
Test(coll, representative_ring)
{
  struct coll_model m = model();
  double S = 8.0 * (1 << 30);
  struct coll_call c = call(CO_ALLGATHER, 64, S);
  struct coll_plan full, rep;
  coll_plan_make(&m, &c, &full);
  long nf = phase_flows(&m, &c, &full, 0);
  cr_assert_eq(nf, 8 * (8 + 8));
  double w0 = fl.wire[0];
  m.sym_fabric = true;
  coll_plan_make(&m, &c, &rep);
  cr_assert(rep.rep);
  cr_assert_eq(phase_flows(&m, &c, &rep, 0), 8 + 8 + 8);
  for (long i = 0; i < fl.n; i++)
    cr_assert(fl.src[i] < 8 || fl.dst[i] < 8, "flows touch node 0 only");
  cr_assert_eq(fl.wire[0], w0);
  cr_assert_eq(rep.closed_flows, 8 * 16 - 24);
  REL(rep.extra_s, full.extra_s, 1e-15);
  /* Two nodes: every flow. */
  c = call(CO_ALLGATHER, 16, S);
  coll_plan_make(&m, &c, &rep);
  cr_assert(!rep.rep);
}

/* Torus collectives over a 3x4 torus of 8-GPU nodes: a reduce-scatter in
 * each node, then per stage 4 parts (2 dimensions x 2 ways) whose ring
 * edges join neighbours only, each port of each node carrying one part of
 * every GPU; then the all-gathers back.  A group that does not cover the
 * torus runs a ring. */
Test(coll, torus_allreduce_stages)
{
  struct coll_model m = model();
  m.algo = CA_AUTO;
  m.nvls = false; /* off the sub-tori rings, not NVLSTree */
  m.torus_ndims = 2;
  m.torus_dim[0] = 3;
  m.torus_dim[1] = 4;
  m.torus_dim[2] = 1;
  double S = 1 << 30;
  int g = 8, N = 12;
  struct coll_call c = call(CO_ALLREDUCE, g * N, S);
  struct coll_plan p;
  coll_plan_make(&m, &c, &p);
  cr_assert_eq(p.algo, CA_TORUS);
  cr_assert_eq(p.nphases, 6);
  /* Bytes a part of one GPU moves per edge at each stage of the order
   * (dim j first for part j mod 2): (D - 1)/D of its data, which the
   * earlier reduce-scatter stages have divided. */
  double part = S / g / 4;
  for (int ph = 0; ph < 6; ph++) {
    long n = phase_flows(&m, &c, &p, ph);
    if (ph == 0 || ph == 5) {
      cr_assert_eq(n, N * g);
      for (long i = 0; i < n; i++) {
        cr_assert_eq(fl.src[i] / g, fl.dst[i] / g);
        REL(fl.wire[i], 7.0 / 8 * S / 0.8, 1e-12);
      }
      continue;
    }
    cr_assert_eq(n, 4 * N * g);
    int k = ph <= 2 ? ph - 1 : 4 - ph; /* place in the order */
    for (long i = 0; i < n; i++) {
      int a = fl.src[i] / g, b = fl.dst[i] / g;
      cr_assert_eq(fl.src[i] % g, fl.dst[i] % g, "GPU i to GPU i");
      int ax = a % 3, ay = a / 3, bx = b % 3, by = b / 3;
      bool xstep = ay == by && (bx - ax + 3) % 3 != 0;
      bool ystep = ax == bx && (by - ay + 4) % 4 != 0;
      int dx = (bx - ax + 3) % 3, dy = (by - ay + 4) % 4;
      cr_assert(xstep || ystep, "%d -> %d", a, b);
      cr_assert(xstep ? dx == 1 || dx == 2 : dy == 1 || dy == 3,
                "%d -> %d: not neighbours", a, b);
      /* part j: dim (k + j) % 2; earlier stage's dim (j) % 2 at k = 1 */
      int d = xstep ? 0 : 1, D = d ? 4 : 3;
      int j0 = (d - k + 2) % 2; /* the part's first dimension */
      double data = k == 0 ? part : part / (j0 ? 4 : 3);
      REL(fl.wire[i], (D - 1.0) / D * data / 0.9, 1e-12);
    }
  }
  REL(p.extra_s, 20e-6 + 2 * 6 * NVL_LAT + 4 * 2 * NET_LAT, 1e-12);
  /* Eleven nodes of the twelve: not a sub-torus, a ring. */
  c = call(CO_ALLREDUCE, g * 11, S);
  coll_plan_make(&m, &c, &p);
  cr_assert_eq(p.algo, CA_RING);
  /* Nodes 3-5, the x ring at y = 1: a one-dimensional sub-torus, both
   * ways round (2 parts), between neighbours of that ring only. */
  for (int k = 0; k < 3 * g; k++)
    ranks[k] = 3 * g + k;
  c = (struct coll_call){CO_ALLREDUCE, 3 * g, ranks, S, 0, lat, NULL, false};
  coll_plan_make(&m, &c, &p);
  cr_assert_eq(p.algo, CA_TORUS);
  cr_assert_eq(p.nphases, 4);
  cr_assert_eq(phase_flows(&m, &c, &p, 1), 2 * 3 * g);
  for (long i = 0; i < fl.n; i++) {
    cr_assert_lt(fl.dst[i], 3 * g);
    REL(fl.wire[i], 2.0 / 3 * S / g / 2 / 0.9, 1e-12);
  }
  /* Nodes 2-4 straddle two x rings: a ring. */
  for (int k = 0; k < 3 * g; k++)
    ranks[k] = 2 * g + k;
  coll_plan_make(&m, &c, &p);
  cr_assert_eq(p.algo, CA_RING);
  /* All-gather: the all-gather stages, then inside the nodes. */
  c = call(CO_ALLGATHER, g * N, S);
  coll_plan_make(&m, &c, &p);
  cr_assert_eq(p.algo, CA_TORUS);
  cr_assert_eq(p.nphases, 3);
  cr_assert_eq(p.stage[2], -2);
  c = call(CO_REDUCE_SCATTER, g * N, S);
  coll_plan_make(&m, &c, &p);
  cr_assert_eq(p.nphases, 3);
  cr_assert_eq(p.stage[0], -1);
}

/* A ring exchange of neighbours (context parallelism's send/recv pairs)
 * costs a send's latency, NVLink's inside a node and the network's across,
 * in Simple (NCCL runs send/recv in Simple past 16 KiB per channel), not
 * a collective's fixed cost (issue 37). */
Test(coll, sendrecv_exchange_pays_a_send_latency)
{
  struct coll_model m = model();
  m.p2p_nvlink_lat_s = 11.8e-6;
  m.p2p_net_lat_s = 22.4e-6;
  int32_t in[2] = {0, 1}, across[2] = {0, 8};
  struct coll_call c = {CO_SENDRECV, 2, in, 4 << 20, 0, lat, NULL, true};
  struct coll_plan p;
  coll_plan_make(&m, &c, &p);
  cr_assert_eq(p.pe, 1.0, "Simple");
  REL(p.extra_s, 11.8e-6 - NVL_LAT, 1e-12);
  c.ranks = across;
  coll_plan_make(&m, &c, &p);
  cr_assert_eq(p.pe, 1.0, "Simple");
  REL(p.extra_s, 22.4e-6 - NET_LAT, 1e-12);
  /* Without NCCL's latencies (an ideal network) the old additive model:
   * the collective's fixed cost. */
  m.nccl_hops = false;
  c.ranks = in;
  c.bytes = 1 << 30;
  coll_plan_make(&m, &c, &p);
  REL(p.extra_s, 20e-6, 1e-12);
}

/* The largest bytes any one GPU sends across nodes in `fl` (its NIC's
 * load one way) and sends inside its node (its NVLink's up). */
static void link_loads(double *nic, double *nvl)
{
  static double out_net[1536], out_nvl[1536];
  memset(out_net, 0, sizeof out_net);
  memset(out_nvl, 0, sizeof out_nvl);
  *nic = *nvl = 0;
  for (long i = 0; i < fl.n; i++) {
    double *o = fl.src[i] / 8 != fl.dst[i] / 8 ? out_net : out_nvl;
    o[fl.src[i]] += fl.wire[i];
  }
  for (int k = 0; k < 1536; k++) {
    if (out_net[k] > *nic)
      *nic = out_net[k];
    if (out_nvl[k] > *nvl)
      *nvl = out_nvl[k];
  }
}

/* NVLSTree over two nodes: NVLS in each node (every GPU S up and down at
 * nvls_eff) and, per channel (GPU c of each node, S/8), NCCL's two trees
 * of one edge each, S/16 each way on each: a NIC carries S/8 each way.
 * Latency: NVLS's fixed cost and 2 x log2(2) network hops, less the
 * route the flows pay.  Time = that + route + max(S / (0.6 x 450 GB/s),
 * S/8 / (0.9 x 50 GB/s)). */
Test(coll, nvlstree_on_two_nodes)
{
  struct coll_model m = model();
  m.algo = CA_NVLSTREE;
  double S = 1 << 30;
  struct coll_call c = call(CO_ALLREDUCE, 16, S);
  struct coll_plan p;
  coll_plan_make(&m, &c, &p);
  cr_assert_eq(p.algo, CA_NVLSTREE);
  cr_assert_eq(p.shape, CS_NVLSTREE);
  cr_assert_eq(p.nphases, 1);
  cr_assert_eq(p.delay0_s, 0);
  REL(p.extra_s,
      20e-6 * COLL_LAT_NVLS + 2 * 1 * COLL_NVLSTREE_HOP_NET * 1e-6 - NET_LAT,
      1e-12);
  cr_assert_eq(phase_flows(&m, &c, &p, 0), 2 * 8 + 8 * 2 * 1 * 2);
  double nic, nvl;
  link_loads(&nic, &nvl);
  REL(nvl, S / 0.6, 1e-12);
  REL(nic, S / 8 / 0.9, 1e-12);
  /* NVLink bound here: S / 270 GB/s beats S/8 / 45 GB/s. */
  cr_assert_gt(nvl / NVL, nic / NIC);
}

/* Four nodes: NCCL's double binary tree (0-2, 2-1, 2-3 and its mirror
 * 3-1, 1-2, 1-0) puts nodes 1 and 2 inner in one tree and leaves in the
 * other, 4 edges each: their NICs carry 4 x S/16 = S/4 each way, the
 * bound (S/4 / 45 GB/s > S / 270 GB/s).  Latency: 2 x log2(4) hops.  On
 * a symmetric fabric node 0 takes node 1's place and its flows alone
 * carry the same loads. */
Test(coll, nvlstree_on_four_nodes)
{
  struct coll_model m = model();
  m.algo = CA_NVLSTREE;
  double S = 1 << 30;
  struct coll_call c = call(CO_ALLREDUCE, 32, S);
  struct coll_plan p;
  coll_plan_make(&m, &c, &p);
  cr_assert_eq(p.algo, CA_NVLSTREE);
  REL(p.extra_s,
      20e-6 * COLL_LAT_NVLS + 2 * 2 * COLL_NVLSTREE_HOP_NET * 1e-6 - NET_LAT,
      1e-12);
  long all = phase_flows(&m, &c, &p, 0);
  cr_assert_eq(all, 4 * 8 + 8 * 2 * 3 * 2);
  double nic, nvl;
  link_loads(&nic, &nvl);
  REL(nic, S / 4 / 0.9, 1e-12);
  REL(nvl, S / 0.6, 1e-12);
  /* Which GPUs carry it: members of nodes 1 and 2 only. */
  for (long i = 0; i < fl.n; i++)
    if (fl.src[i] / 8 != fl.dst[i] / 8)
      cr_assert_eq(fl.wire[i], S / 16 / 0.9);
  m.sym_fabric = true;
  coll_plan_make(&m, &c, &p);
  cr_assert(p.rep);
  cr_assert_eq(p.busiest, 1);
  long mine = phase_flows(&m, &c, &p, 0);
  cr_assert_eq(mine, 8 + 8 * 4 * 2);
  cr_assert_eq(mine + p.closed_flows, all);
  link_loads(&nic, &nvl);
  REL(nic, S / 4 / 0.9, 1e-12);
  /* Three nodes (odd: the second tree is the first shifted by one): two
   * edges per tree. */
  m.sym_fabric = false;
  c = call(CO_ALLREDUCE, 24, S);
  coll_plan_make(&m, &c, &p);
  cr_assert_eq(phase_flows(&m, &c, &p, 0), 3 * 8 + 8 * 2 * 2 * 2);
}

/* auto across NVLS nodes: NCCL's tuner takes the fastest estimate of
 * ring, tree and NVLSTree.  64 nodes: at 1 MiB the tree's LL latency
 * (2 x (7 x 0.6 + 6 x 5) us) beats NVLSTree's 2 x 6 hops of 45.7 us; at 1
 * GiB NVLSTree's bandwidth (8 NICs, each S/4) and log-depth latency beat
 * the ring's 1022 steps and the tree's tree_bw.  Without NVLS, one GPU per
 * node or one node, no NVLSTree (asked for: auto's choice). */
Test(coll, nvlstree_auto_choice)
{
  struct coll_model m = model();
  m.algo = CA_AUTO;
  struct coll_plan p;
  struct coll_call c = call(CO_ALLREDUCE, 512, 1 << 20);
  coll_plan_make(&m, &c, &p);
  cr_assert_eq(p.algo, CA_TREE);
  c.bytes = 1 << 30;
  coll_plan_make(&m, &c, &p);
  cr_assert_eq(p.algo, CA_NVLSTREE);
  m.nvls = false;
  coll_plan_make(&m, &c, &p);
  cr_assert_neq(p.algo, CA_NVLSTREE);
  /* Asked for where it cannot run: auto's choice. */
  m.algo = CA_NVLSTREE;
  enum coll_algo want = p.algo;
  coll_plan_make(&m, &c, &p);
  cr_assert_eq(p.algo, want);
  m.nvls = true;
  for (int k = 0; k < 64; k++)
    ranks[k] = 8 * k; /* GPU 0 of 64 nodes */
  c.n = 64;
  coll_plan_make(&m, &c, &p);
  cr_assert_neq(p.algo, CA_NVLSTREE, "one GPU per node");
  c = call(CO_ALLREDUCE, 8, 1 << 30);
  coll_plan_make(&m, &c, &p);
  cr_assert_eq(p.algo, CA_NVLS, "one node: NVLS, as auto");
  c.bytes = 4096;
  coll_plan_make(&m, &c, &p);
  cr_assert_eq(p.algo, CA_RING);
}

/* Issue 37, the slice: a Simple ring all-reduce over
 * 4 nodes of 8 (LL and LL128 priced out) at 64 MiB, one loop of 62 steps
 * of S / (8 channels x 32) bytes.  Each step's critical path is a hop and
 * one of its two slices (NCCL's ALLREDUCE_SLICESTEPS = CHUNKSTEPS / 2),
 * so a hop hides behind half of the step's bytes: 56 NVLink steps at
 * max(3.4, 3 x 1.0) us and 6 network steps at 14 us,
 * each less a slice's time; then the fixed latency, less the route. */
Test(coll, simple_ring_hides_hops_behind_one_slice)
{
  struct coll_model m = model();
  m.ll128_eff = m.ll_eff = 1e-3;
  double S = 64.0 * (1 << 20);
  struct coll_call c = call(CO_ALLREDUCE, 32, S);
  struct coll_plan p;
  coll_plan_make(&m, &c, &p);
  cr_assert_eq(p.pe, 1.0);
  double slice = S / (8 * 32) / (NIC * 0.9) / 2;
  cr_assert_lt(slice, 3.4e-6, "the NVLink hop shows past a slice");
  cr_assert_gt(2 * slice, 3.4e-6, "but not past the whole step");
  double want = 20e-6 + 56 * (3.4e-6 - slice) +
                6 * (14.0e-6 - slice) - NET_LAT;
  REL(p.extra_s, want, 1e-12);
  /* LL128 forwards line by line: the whole step hides its hop. */
  m = model();
  m.ll_eff = 1e-3;
  c.bytes = 4 << 20;
  coll_plan_make(&m, &c, &p);
  cr_assert_eq(p.pe, COLL_LL128_EFF);
  double step = 4.0 * (1 << 20) / (8 * 32) / (NIC * 0.9 * COLL_LL128_EFF);
  REL(p.extra_s, 20e-6 * COLL_LAT_LL128 + 56 * (1.9e-6 - step) +
                     6 * (4.0e-6 - step) - NET_LAT,
      1e-12);
}

/* The network step is the NVLSTree hop measured less NCCL's. */
Test(coll, net_step_from_nvlstree)
{
  REL(COLL_NET_STEP, 45.7 - 20.9, 1e-12);
}

/* NCCL picks by its tuner (issue 37): over 4 nodes at 64 MiB NVLSTree's
 * estimate, 25 + 2 x 2 x 20.9 us and its bytes (the busiest head's NIC:
 * 4 tree edges x S/8/2 at 45 GB/s, 373 us), 482 us, beats the ring's best
 * (LL128: 14 + 56 x 1.9 + 6 x 4.0 us + 2 x 31/32 x S / 8 at 45 x 0.9375
 * GB/s, 530 us), though by what the hops cost (NVLS's fixed latency and 4
 * hops of 45.7 us, 595 us) the ring would win; its delay is still what
 * the hops cost. */
Test(coll, nvlstree_chosen_by_nccls_latencies)
{
  struct coll_model m = model();
  m.algo = CA_AUTO;
  double S = 64.0 * (1 << 20);
  struct coll_call c = call(CO_ALLREDUCE, 32, S);
  struct coll_plan p;
  coll_plan_make(&m, &c, &p);
  cr_assert_eq(p.algo, CA_NVLSTREE);
  REL(p.extra_s, 20e-6 * COLL_LAT_NVLS + 4 * COLL_NVLSTREE_HOP_NET * 1e-6 -
                     NET_LAT, 1e-12);
  double nccl_nvlstree = (25 + 4 * 20.9) * 1e-6 + 4 * S / 8 / 2 / (NIC * 0.9);
  double real_nvlstree = 20e-6 * COLL_LAT_NVLS +
                         4 * COLL_NVLSTREE_HOP_NET * 1e-6 +
                         4 * S / 8 / 2 / (NIC * 0.9);
  double ring_ll128 = (14 + 56 * 1.9 + 6 * 4.0) * 1e-6 +
                      2.0 * 31 / 32 * S / 8 / (NIC * 0.9 * COLL_LL128_EFF);
  cr_assert_lt(nccl_nvlstree, ring_ll128);
  cr_assert_gt(real_nvlstree, ring_ll128);
}

/* A tree's protocol is NCCL's choice by its base latencies (COLL_TREE_BASE)
 * and hops; its delay is the fixed latency and the hops with the network
 * ones COLL_NET_STEP beyond NCCL's.  64 nodes, 1 MiB, LL128 priced
 * out: LL (6.8 + 2 x (7 x 0.6 + 6 x 5.0) us of NCCL's, 75 us) against
 * Simple (8.4 + 2 x (7 x 4 + 6 x 14), 232 us); their bytes, S/8 at
 * tree_bw x share x 0.5 (treeCorrectionFactor at 1 MiB), take 100 us (LL,
 * 1/3.8) and 26 us: LL 175 us, Simple 258 us. */
Test(coll, tree_protocol_by_nccl_latency_costed_by_hops)
{
  struct coll_model m = model();
  m.algo = CA_TREE;
  m.ll128_eff = 1e-3;
  struct coll_call c = call(CO_ALLREDUCE, 512, 1 << 20);
  struct coll_plan p;
  coll_plan_make(&m, &c, &p);
  cr_assert_eq(p.shape, CS_TREE);
  REL(p.pe, 1 / 3.8, 1e-12);
  REL(p.extra_s, 20e-6 * COLL_LAT_LL +
                     2e-6 * (7 * 0.6 + 6 * (5.0 + COLL_NET_STEP)) -
                     NET_LAT, 1e-12);
}

/* LL across nodes (issue 37): an all-gather over 192 nodes of 8 at 64 MiB
 * would move its bytes at 20.4 GB/s in LL (3.3 ms) on top of LL's 1.9 ms
 * of steps (1344 at 1.0 us, 191 at 2.7), so NCCL's choice, and weft's, is
 * LL128 (3.3 ms of steps, its bytes at 0.9375 of the NICs: 0.2 ms); at 1
 * MiB LL stays ahead (1.9 ms). */
Test(coll, ll_capped_across_nodes)
{
  struct coll_model m = model();
  m.algo = CA_AUTO;
  struct coll_call c = call(CO_ALLGATHER, 1536, 64.0 * (1 << 20));
  struct coll_plan p;
  coll_plan_make(&m, &c, &p);
  cr_assert_eq(p.pe, COLL_LL128_EFF);
  c.bytes = 1 << 20;
  coll_plan_make(&m, &c, &p);
  REL(p.pe, 20.4 / 360, 1e-12);
  /* Its flows carry the bytes at that share through the NICs. */
  REL(p.edge_bytes, 1535.0 / 1536 * (1 << 20) / 8, 1e-12);
  phase_flows(&m, &c, &p, 0);
  long cross = 0;
  for (long i = 0; i < fl.n; i++)
    if (fl.src[i] / 8 != fl.dst[i] / 8) {
      cross++;
      REL(fl.wire[i], p.edge_bytes / (0.9 * 20.4 / 360), 1e-12);
    }
  cr_assert_eq(cross, 192 * 8);
}
