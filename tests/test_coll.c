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
      .ll_eff = COLL_LL_EFF, .closed_form = true, .gpus_per_node = 8,
      .nvls = true, .nvlink_bw_Bps = NVL, .nic_bw_Bps = NIC,
      .nvlink_lat_s = NVL_LAT};
  return m;
}

static double lat(void *ctx, long a, long b)
{
  (void)ctx;
  return a / 8 == b / 8 ? NVL_LAT : NET_LAT;
}

static int32_t ranks[64];

static struct coll_call call(enum coll_op op, int n, double S)
{
  for (int k = 0; k < n; k++)
    ranks[k] = k;
  return (struct coll_call){op, n, ranks, S, 0, lat, NULL};
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
  /* The delay after the flows: Simple's latency and all steps but one. */
  REL(p.extra_s, 20e-6 + (2 * 15 - 1) * NET_LAT, 1e-12);
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
}

/* NCCL's protocol choice: LL for a small message (half the bandwidth, a
 * fraction of the latency), Simple for a large one. */
Test(coll, protocol_by_size)
{
  struct coll_model m = model();
  struct coll_call c = call(CO_ALLREDUCE, 16, 4096);
  struct coll_plan p;
  coll_plan_make(&m, &c, &p);
  cr_assert_eq(p.pe, COLL_LL_EFF);
  REL(p.extra_s, 20e-6 * COLL_LAT_LL + 29 * NET_LAT, 1e-12);
  c.bytes = 1e9;
  coll_plan_make(&m, &c, &p);
  cr_assert_eq(p.pe, 1.0);
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
  REL(p.delay0_s, S / g / 10e9, 1e-12);
  double depth = 2; /* 4 nodes */
  REL(p.extra_s, 20e-6 + (2 * (depth + g - 1) - 1) * NET_LAT, 1e-12);
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
  double S = 1 << 30;
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
