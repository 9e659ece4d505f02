/*
 * test_straggler.c - slow GPUs, degraded NICs, links down and the
 * diurnal clock (issue 41, item 2: the cluster's slow_gpu, slow_nic,
 * down_links and diurnal) against closed forms on small platforms with
 * the collective overheads switched off, and their settings' errors.  Each test runs in its own process, so each gets a
 * fresh SimGrid engine.
 */
#include <criterion/criterion.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "platforms/platgen.h"
#include "platforms/topo.h"
#include "sim/engine.h"
#include "sim/platload.h"
#include "workloads/builder.h"
#include "workloads/schedule.h"
#include "tests/engine_helpers.h"

#define KV(...) ((const char *const[]){__VA_ARGS__, NULL})
#define REL(a, b, tol)                                                       \
  cr_assert(fabs((a) - (b)) <= (tol) * fabs(b), "%.12g != %.12g",            \
            (double)(a), (double)(b))

static struct catalog *cat;

/* Resolve preset `preset` with the settings `kv` (name, value pairs) into
 * *out; returns cluster_resolve's code, the message in *err. */
static int resolve(const char *preset, const char *const *kv,
                   struct cluster *out, struct weft_err *err)
{
  if (!cat)
    cat = catalog_builtin(err);
  cr_assert(cat);
  struct cluster_desc d;
  cluster_desc_init(&d);
  cr_assert_eq(cluster_desc_preset(&d, preset, err), 0);
  for (int i = 0; kv && kv[i]; i += 2) {
    int rc = cluster_desc_set(&d, cluster_key_from_name(kv[i]), kv[i + 1],
                              kv[i], 2, err);
    if (rc)
      return rc;
  }
  return cluster_resolve(&d, cat, out, err);
}

static struct cluster load(const char *preset, const char *const *kv)
{
  struct weft_err err = {0};
  struct cluster c;
  cr_assert_eq(resolve(preset, kv, &c, &err), 0, "%s", err.msg);
  platload_boot(0);
  cr_assert_eq(platload_cluster(&c, &err), 0, "%s", err.msg);
  return c;
}

static void refused(const char *key, const char *value, const char *msg);

static double run(const struct graph *g, const struct cluster *c,
                  struct engine_params *p, struct engine_result *r)
{
  struct weft_err err = {0};
  cr_assert_eq(engine_run(g, c, p, r, &err), 0, "%s", err.msg);
  return r->iteration_s;
}

/* A 1F1B pipeline of `p` stages and `m` micro-batches with free transfers,
 * each forward and backward one memory-bound kernel (as test_engine.c's
 * pipeline), on cluster `c`; *tf, *tb their times on a GPU at speed. */
static struct graph *pipeline(const struct cluster *c, long p, long m,
                              double *tf, double *tb)
{
  struct graph *g = graph_new(p);
  g->layout = (struct graph_layout){1, p, 1, 1, 1, 1, {0, 1, 2, 3}, 0,
                                    {0, 0, 0}, 0, 0};
  double fb = 1e9, bb = 2e9;
  for (long s = 0; s < p; s++) {
    long n;
    struct sched_op *ops = schedule_build(SCHED_1F1B, p, m, 1, s, &n);
    for (long i = 0; i < n; i++) {
      bool f = ops[i].fwd;
      long recv = -1;
      bool has_recv = f ? s > 0 : s < p - 1;
      bool has_send = f ? s < p - 1 : s > 0;
      struct task t = {.stream = ST_PP_RECV, .kind = TK_RECV,
                       .phase = f ? PH_FWD : PH_BWD, .peer = f ? -1 : 1,
                       .chunk = 0, .mb = ops[i].mb, .layer = -1,
                       .bytes = 1e6};
      if (has_recv)
        recv = graph_add(g, s, &t);
      struct task kt = {.kind = TK_KERNEL, .op = KK_NORM,
                        .stream = ST_COMPUTE, .phase = t.phase, .chunk = 0,
                        .mb = ops[i].mb, .layer = 0, .bytes = f ? fb : bb};
      long kk = graph_add(g, s, &kt);
      if (recv >= 0)
        graph_dep(g, s, recv);
      if (has_send) {
        t.kind = TK_SEND;
        t.stream = ST_PP_SEND;
        t.peer = f ? 1 : -1;
        graph_add(g, s, &t);
        graph_dep(g, s, kk);
      }
    }
    free(ops);
  }
  struct task probe = {.kind = TK_KERNEL, .op = KK_NORM, .phase = PH_FWD,
                       .bytes = fb};
  *tf = cost_kernel(&c->gpu, DTYPE_BF16, -1, &probe, NULL);
  probe.bytes = bb;
  probe.phase = PH_BWD;
  *tb = cost_kernel(&c->gpu, DTYPE_BF16, -1, &probe, NULL);
  return g;
}

/* 1F1B with its last stage x F slower.  That stage has no warm-up: it
 * alternates forward and backward from its first input on, and never
 * waits once started, because the forward it needs next left the stage
 * before it one backward and one forward after the backward it returned
 * (tb + tf <= F (tf + tb)).  So the iteration is the fill, (p - 1) tf,
 * its m (tf + tb) at F times the time, and the drain of the last
 * backward through the other stages, (p - 1) tb: with F = 1 the uniform
 * 1F1B's (m + p - 1)(tf + tb) (test_engine.c, one_f_one_b_bubble). */
Test(straggler, one_f_one_b_with_a_slow_last_stage)
{
  const long p = 4, m = 8;
  const double F = 1.5;
  struct cluster c = load("dgx-h100", KV("gpus", "8", "slow_gpu", "3:1.5"));
  double tf, tb;
  struct graph *g = pipeline(&c, p, m, &tf, &tb);
  long co[PD_COUNT];
  layout_coords(&g->layout, 3, co);
  cr_assert_eq(co[PD_PP], 3, "rank 3 is the last stage");
  struct engine_params ep = ideal_ring_params();
  ep.free_comm = true;
  ep.breakdown = true;
  struct engine_result r;
  double T = run(g, &c, &ep, &r);
  REL(T, (double)(p - 1) * (tf + tb) + (double)m * F * (tf + tb), 1e-9);
  /* The slow stage computed F times as long, the others as ever. */
  REL(r.stages[3].compute_s, F * (double)m * (tf + tb), 1e-9);
  REL(r.stages[3].compute_by_kind_s[KK_NORM], F * (double)m * (tf + tb),
      1e-9);
  REL(r.stages[0].compute_s, (double)m * (tf + tb), 1e-9);
  /* The critical path runs through the slow stage for its whole work. */
  cr_assert_geq(r.path.stage_s[3], F * (double)m * (tf + tb) * (1 - 1e-9));
  REL(r.path.total_s, T, 1e-9);
  /* It held the job back: its kernels on the path are all its work. */
  cr_assert_eq(r.path.held_rank, 3);
  REL(r.path.held_rank_s, F * (double)m * (tf + tb), 1e-9);
  engine_result_free(&r);
  graph_free(g);
}

/* The same pipeline without a slow stage: the uniform closed form, so the
 * one above is the straggler's doing. */
Test(straggler, one_f_one_b_at_speed)
{
  const long p = 4, m = 8;
  struct cluster c = load("dgx-h100", KV("gpus", "8"));
  double tf, tb;
  struct graph *g = pipeline(&c, p, m, &tf, &tb);
  struct engine_params ep = ideal_ring_params();
  ep.free_comm = true;
  ep.breakdown = true;
  struct engine_result r;
  REL(run(g, &c, &ep, &r), (double)(m + p - 1) * (tf + tb), 1e-9);
  cr_assert_eq(r.path.held_rank, -1, "no straggler, no rank named");
  engine_result_free(&r);
  graph_free(g);
}

/* One data-parallel step on the 16 GPUs of c: a kernel, then a 1 GiB
 * gradient all-reduce that waits for it, replayed with the breakdown
 * into *r.  *tk: the kernel's time at full speed; *ring: the ring
 * all-reduce's closed form, 2 (n - 1) / n S / B + 2 (n - 1) L (below). */
static double dp16_step(const struct cluster *c, struct engine_result *r,
                        double *tk, double *ring)
{
  struct graph *g = graph_new(1);
  g->layout = (struct graph_layout){1, 1, 16, 1, 1, 1, {0, 1, 2, 3}, 0,
                                    {0, 0, 0}, 0, 0};
  struct task k = {.kind = TK_KERNEL, .op = KK_NORM, .stream = ST_COMPUTE,
                   .chunk = -1, .mb = -1, .layer = 0, .bytes = 4e9};
  long kk = graph_add(g, 0, &k);
  double S = 1 << 30;
  struct task ar = {.kind = TK_COLL, .op = CO_ALLREDUCE, .stream = ST_DP,
                    .group = GK_DP, .chunk = -1, .mb = -1, .layer = -1,
                    .bytes = S};
  graph_add(g, 0, &ar);
  graph_dep(g, 0, kk);
  struct engine_params ep = ideal_ring_params();
  ep.breakdown = true;
  double T = run(g, c, &ep, r);
  graph_free(g);
  *tk = cost_kernel(&c->gpu, DTYPE_BF16, -1, &k, NULL);
  double n = 16, B = 8 * 50e9, L = 2 * 1e-6 + 130e-9;
  *ring = 2 * (n - 1) / n * S / B + 2 * (n - 1) * L;
  return T;
}

/* Data parallelism over 2 nodes of 8 GPUs: each rank runs a kernel, then
 * the gradient all-reduce that waits for it.  A collective starts when
 * its last member arrives (NCCL: engine.h), so with rank 5 at F = 1.5
 * every rank waits for it and the iteration is its kernel, F tk, plus the
 * ring all-reduce across nodes, 2 (n - 1) / n S / B + 2 (n - 1) L (B: 8
 * channels, each through another of a node's 8 NICs of 50 GB/s; L: NIC,
 * leaf switch, NIC; test_engine.c, ring_across_nodes_uses_every_nic). */
Test(straggler, data_parallel_waits_for_the_slow_rank)
{
  struct cluster c = load("dgx-h100", KV("gpus", "16", "nodes_per_leaf", "2",
                                         "slow_gpu", "5:1.5"));
  struct engine_result r;
  double tk, ring, n = 16;
  double T = dp16_step(&c, &r, &tk, &ring);
  REL(T, 1.5 * tk + ring, 1e-6);
  /* The others idle for the difference: (F - 1) tk on 15 of 16 ranks. */
  REL(r.idle_s, 15 / n * 0.5 * tk, 1e-6);
  REL(r.compute_s, (15 + 1.5) / n * tk, 1e-9);
  cr_assert_eq(r.path.held_rank, 5);
  REL(r.path.held_rank_s, 1.5 * tk, 1e-9);
  engine_result_free(&r);
}

/* Per-GPU variation (gpu_sigma): the same data-parallel job; every rank
 * waits for the slowest draw, so the iteration is the largest factor
 * times the kernel plus the all-reduce, and that rank is named. */
Test(straggler, data_parallel_waits_for_the_slowest_draw)
{
  struct cluster c = load("dgx-h100", KV("gpus", "16", "nodes_per_leaf", "2",
                                         "gpu_sigma", "5", "gpu_seed", "7"));
  cr_assert(cluster_has_stragglers(&c));
  double fmax = 0;
  long slowest = -1;
  for (int r = 0; r < 16; r++)
    if (cluster_gpu_slowdown(&c, r) > fmax) {
      fmax = cluster_gpu_slowdown(&c, r);
      slowest = r;
    }
  cr_assert_gt(fmax, 1);
  struct engine_result r;
  double tk, ring;
  double T = dp16_step(&c, &r, &tk, &ring);
  REL(T, fmax * tk + ring, 1e-6);
  cr_assert_eq(r.path.held_rank, slowest);
  engine_result_free(&r);
}

/* The draw: a function of the seed and the rank alone; over many ranks
 * its speeds have mean 1 and the standard deviation asked for (the
 * sample of 4096 of seed 1: within 3 % of sigma), clipped at 3 sigma;
 * slow_gpu multiplies it. */
Test(straggler, gpu_sigma_draws)
{
  struct weft_err err = {0};
  struct cluster a, b, d;
  cr_assert_eq(resolve("dgx-h100", KV("gpus", "4096", "gpu_sigma", "2"), &a,
                       &err), 0, "%s", err.msg);
  cr_assert_eq(resolve("dgx-h100", KV("gpus", "4096", "gpu_sigma", "2",
                                      "gpu_seed", "2", "slow_gpu", "5:2"),
                       &b, &err), 0, "%s", err.msg);
  cr_assert_eq(resolve("dgx-h100", KV("gpus", "4096", "gpu_sigma", "2"), &d,
                       &err), 0, "%s", err.msg);
  double sum = 0, sq = 0;
  int differ = 0;
  for (int r = 0; r < 4096; r++) {
    double v = 1 / cluster_gpu_slowdown(&a, r);
    cr_assert_eq(cluster_gpu_slowdown(&a, r), cluster_gpu_slowdown(&d, r));
    differ += cluster_gpu_slowdown(&a, r) != cluster_gpu_slowdown(&b, r);
    cr_assert(v >= 1 - 3 * 0.02 - 1e-12 && v <= 1 + 3 * 0.02 + 1e-12);
    sum += v;
    sq += (v - 1) * (v - 1);
  }
  cr_assert_gt(differ, 4000);
  REL(sum / 4096, 1.0, 0.002);
  REL(sqrt(sq / 4096), 0.02, 0.03);
  /* slow_gpu on top of the draw: rank 5 of seed 2 at twice its time. */
  b.nslow_gpu = 0;
  double drawn = cluster_gpu_slowdown(&b, 5);
  b.nslow_gpu = 1;
  REL(cluster_gpu_slowdown(&b, 5), 2 * drawn, 1e-12);
  refused("gpu_sigma", "25", "gpu_sigma");
  refused("gpu_seed", "0", "gpu_seed");
}

/* A degraded NIC: rank 3's NIC (node 0's NIC 3, both directions) at a
 * quarter of its rate.  The ring's 8 channels each cross one NIC pair
 * between the nodes and carry S / 8; the channel through the slow NIC
 * takes 4 times as long and the all-reduce ends with it: the ring at the
 * slow link's rate, 2 (n - 1) / n S / (B / 4) + 2 (n - 1) L, with B and
 * L as above. */
Test(straggler, ring_allreduce_at_the_slow_nics_rate)
{
  struct cluster c = load("dgx-h100", KV("gpus", "16", "nodes_per_leaf", "2",
                                         "slow_nic", "3:4"));
  struct graph *g = graph_new(1);
  g->layout = (struct graph_layout){16, 1, 1, 1, 1, 1, {0, 1, 2, 3}, 0,
                                    {0, 0, 0}, 0, 0};
  double S = 1 << 30;
  struct task ar = {.kind = TK_COLL, .op = CO_ALLREDUCE, .stream = ST_COMPUTE,
                    .group = GK_TP, .chunk = -1, .mb = -1, .layer = -1,
                    .bytes = S};
  graph_add(g, 0, &ar);
  struct engine_params ep = ideal_ring_params();
  struct engine_result r;
  double T = run(g, &c, &ep, &r);
  double n = 16, B = 8 * 50e9, L = 2 * 1e-6 + 130e-9;
  REL(T, 2 * (n - 1) / n * S / (B / 4) + 2 * (n - 1) * L, 1e-6);
  graph_free(g);
}

/* The degraded link is the slow rank's NIC, in memory and in XML alike;
 * with NICs shared by two GPUs, either GPU's entry names it, and the
 * larger factor wins. */
Test(straggler, slow_nic_is_its_ranks_nic)
{
  struct weft_err err = {0};
  struct cluster c;
  cr_assert_eq(resolve("dgx-h100", KV("gpus", "16", "nics_per_node", "4",
                                      "slow_nic", "10:2,11:3,0:1"),
                       &c, &err), 0, "%s", err.msg);
  cr_assert_eq(c.nslow_nic, 3);
  /* Rank 10: node 1's local GPU 2, behind NIC 1 of 4. */
  cr_assert_float_eq(cluster_nic_slowdown(&c, 1, 1), 3, 1e-12);
  cr_assert_float_eq(cluster_nic_slowdown(&c, 0, 1), 1, 1e-12);
  cr_assert_float_eq(cluster_nic_slowdown(&c, 0, 0), 1, 1e-12);
  cr_assert_float_eq(cluster_gpu_slowdown(&c, 10), 1, 1e-12);
  struct topo t;
  cr_assert_eq(topo_build(&t, &c, &err), 0, "%s", err.msg);
  char name[64];
  int seen = 0;
  for (long i = 0; i < t.nlinks; i++) {
    topo_link_name(&t, i, name, sizeof name);
    if (!strcmp(name, "node1-nic1")) {
      cr_assert_float_eq(t.link[i].bw, c.nic.bw_Bps / 3, 1e-3);
      seen++;
    } else if (!strcmp(name, "node1-nic0")) {
      cr_assert_float_eq(t.link[i].bw, c.nic.bw_Bps, 1e-3);
      seen++;
    }
  }
  cr_assert_eq(seen, 2);
  topo_free(&t);
}

/* Bad settings: the flag named, what is expected, a non-zero code. */
static void refused(const char *key, const char *value, const char *msg)
{
  struct weft_err err = {0};
  struct cluster c;
  cr_assert_neq(resolve("dgx-h100", KV("gpus", "16", key, value), &c, &err),
                0, "%s=%s accepted", key, value);
  cr_assert(strstr(err.msg, msg), "%s=%s: '%s' lacks '%s'", key, value,
            err.msg, msg);
}

Test(straggler, bad_settings)
{
  refused("slow_gpu", "3", "slow_gpu: '3': expected RANK:FACTOR");
  refused("slow_gpu", "x:2", "expected RANK:FACTOR");
  refused("slow_gpu", "-1:2", "expected RANK:FACTOR");
  refused("slow_gpu", "16:2", "rank 16 is not a GPU of the job (0 to 15)");
  refused("slow_gpu", "3:0.5", "rank 3: the factor '0.5' is not a number "
                               "from 1 to 1000");
  refused("slow_gpu", "3:2x", "the factor '2x'");
  refused("slow_gpu", "3:nan", "the factor 'nan'");
  refused("slow_gpu", "3:2,3:1.5", "rank 3 is given twice");
  refused("slow_gpu", "3:2,", "expected RANK:FACTOR");
  refused("slow_nic", "1:2,2:2,3:2,4:2,5:2,6:2,7:2,8:2,9:2,10:2,11:2,12:2,"
                      "13:2,14:2,15:2,0:2,1:3",
          "slow_nic: more than 16 ranks");
}

/* Nothing slow by default. */
Test(straggler, none_by_default)
{
  struct weft_err err = {0};
  struct cluster c;
  cr_assert_eq(resolve("dgx-h100", KV("gpus", "16"), &c, &err), 0);
  cr_assert(!cluster_has_stragglers(&c));
  cr_assert_float_eq(cluster_gpu_slowdown(&c, 3), 1, 0);
}

/* ---- links down and the diurnal clock (issue 41, item 2) --------------- */

/* A ring all-reduce of 1 GiB over the 16 GPUs of two nodes on leaf groups
 * of their own (nodes_per_leaf 1: each leaf group's up-link stands for its
 * node's 8 NIC cables), on `c`: the time.  The ring's 8 channels each
 * cross a NIC of each node and carry S / 8; at full rate the closed form
 * is 2 (n - 1) / n S / B + 2 (n - 1) L with B the 8 NICs' 400 GB/s and L
 * two NICs and three switch hops (leaf, spine, leaf). */
static double ring16(const struct cluster *c)
{
  struct graph *g = graph_new(1);
  g->layout = (struct graph_layout){16, 1, 1, 1, 1, 1, {0, 1, 2, 3}, 0,
                                    {0, 0, 0}, 0, 0};
  struct task ar = {.kind = TK_COLL, .op = CO_ALLREDUCE, .stream = ST_COMPUTE,
                    .group = GK_TP, .chunk = -1, .mb = -1, .layer = -1,
                    .bytes = 1 << 30};
  graph_add(g, 0, &ar);
  struct engine_params ep = ideal_ring_params();
  struct engine_result r;
  double T = run(g, c, &ep, &r);
  engine_result_free(&r);
  graph_free(g);
  return T;
}

static double ring16_closed(double B)
{
  double n = 16, S = 1 << 30, L = 2 * 1e-6 + 3 * 130e-9;
  return 2 * (n - 1) / n * S / B + 2 * (n - 1) * L;
}

Test(downlink, ring_at_full_rate)
{
  struct cluster c = load("dgx-h100", KV("gpus", "16", "nodes_per_leaf",
                                         "1"));
  REL(ring16(&c), ring16_closed(8 * 50e9), 1e-6);
}

/* 6 of leaf group 0's 8 up-link cables down: its up-link keeps 2 / 8 of
 * its 400 GB/s, which the 8 channels leaving (and entering) node 0 share:
 * the ring at 100 GB/s, though the ratio is 1. */
Test(downlink, ring_over_a_leaf_with_cables_down)
{
  struct cluster c = load("dgx-h100", KV("gpus", "16", "nodes_per_leaf", "1",
                                         "down_links", "leaf0-up:6"));
  cr_assert(cluster_has_stragglers(&c), "no symmetric shortcut");
  REL(ring16(&c), ring16_closed(2 * 50e9), 1e-6);
}

/* 2 cables down of 8: 300 GB/s left, still the binding link. */
Test(downlink, ring_over_a_leaf_with_two_cables_down)
{
  struct cluster c = load("dgx-h100", KV("gpus", "16", "nodes_per_leaf", "1",
                                         "down_links", "leaf1-up:2"));
  REL(ring16(&c), ring16_closed(6 * 50e9), 1e-6);
}

/* A multi-plane fabric of 2 planes: leaf group 0's up-link is 8 cables
 * per plane; 4 of them down on a plane leave that plane half its rate,
 * and traffic striped evenly over the planes goes at that plane's pace:
 * the ring at 200 GB/s. */
Test(downlink, ring_over_a_plane_with_cables_down)
{
  struct cluster c = load("dgx-h100", KV("gpus", "16", "nodes_per_leaf", "1",
                                         "topology", "multi-plane",
                                         "down_links", "leaf0-up:4"));
  REL(ring16(&c), ring16_closed(4 * 50e9), 1e-6);
}

/* NIC 3 of node 0 down: its channels go over the NICs left, each of node
 * 0's NIC links at 7 / 8 of its rate (topo.h): the ring at 350 GB/s; two
 * down on node 1, at 6 / 8. */
Test(downlink, ring_with_a_nic_down)
{
  struct cluster c = load("dgx-h100", KV("gpus", "16", "nodes_per_leaf", "1",
                                         "down_links", "node0-nic3"));
  REL(ring16(&c), ring16_closed(7 * 50e9), 1e-6);
}

Test(downlink, ring_with_two_nics_down)
{
  struct cluster c = load("dgx-h100", KV("gpus", "16", "nodes_per_leaf", "1",
                                         "down_links",
                                         "node1-nic0,node1-nic7"));
  REL(ring16(&c), ring16_closed(6 * 50e9), 1e-6);
}

/* Routes and links: on 4 nodes, a leaf group each, 2 per pod, with 2 of
 * leaf group 0's 8 cables and 3 of pod 1's 16 down, the links keep 6 / 8
 * and 13 / 16 of their bandwidth; every route that neither leaves nor
 * enters leaf group 0, nor crosses pods, is the route without them; one
 * that does gains exactly the degraded up-links it crosses; NIC links
 * and NIC 2 of node 3 (down) at 7 / 8 on node 3 only. */
Test(downlink, routes_of_untouched_pairs_unchanged)
{
  struct weft_err err = {0};
  struct cluster a, b;
  const char *const *kv0 = KV("gpus", "32", "nodes_per_leaf", "1",
                              "leaves_per_pod", "2", "pod_oversubscription",
                              "1");
  cr_assert_eq(resolve("dgx-h100", kv0, &a, &err), 0, "%s", err.msg);
  cr_assert_eq(resolve("dgx-h100", KV("gpus", "32", "nodes_per_leaf", "1",
                                      "leaves_per_pod", "2", "down_links",
                                      "leaf0-up:2,pod1-up:3,node3-nic2"),
                       &b, &err), 0, "%s", err.msg);
  cr_assert_eq(b.ndown, 3);
  struct topo ta, tb;
  cr_assert_eq(topo_build(&ta, &a, &err), 0);
  cr_assert_eq(topo_build(&tb, &b, &err), 0);
  cr_assert_eq(ta.nlinks, tb.nlinks);
  long leaf0 = -1, pod1 = -1;
  char name[64];
  for (long i = 0; i < ta.nlinks; i++) {
    topo_link_name(&tb, i, name, sizeof name);
    double f = 1;
    if (!strcmp(name, "leaf0-up"))
      leaf0 = i, f = 6.0 / 8;
    else if (!strcmp(name, "pod1-up"))
      pod1 = i, f = 13.0 / 16;
    else if (!strncmp(name, "node3-nic", 9))
      f = 7.0 / 8;
    REL(tb.link[i].bw, f * ta.link[i].bw, 1e-12);
  }
  cr_assert(leaf0 >= 0 && pod1 >= 0);
  struct topo_hop ha[32], hb[32];
  double la, lb;
  for (long x = 0; x < 32; x++)
    for (long y = 0; y < 32; y++) {
      if (x == y)
        continue;
      int na = topo_route(&ta, x, y, ha, &la);
      int nb = topo_route(&tb, x, y, hb, &lb);
      cr_assert_eq(la, lb, "switch hops alike");
      long nx = x / 8, ny = y / 8;
      bool l0 = nx != ny && (nx == 0 || ny == 0);
      bool p1 = nx / 2 != ny / 2;
      int extra = l0 + p1;
      cr_assert_eq(nb, na + extra, "%ld -> %ld: %d hops, %d + %d", x, y, nb,
                   na, extra);
      int j = 0;
      for (int i = 0; i < nb; i++) {
        if (hb[i].link == leaf0) {
          cr_assert_eq(hb[i].down, nx != 0, "leaf0-up's direction");
          continue;
        }
        if (hb[i].link == pod1) {
          cr_assert_eq(hb[i].down, nx / 2 != 1, "pod1-up's direction");
          continue;
        }
        cr_assert_eq(hb[i].link, ha[j].link);
        cr_assert_eq(hb[i].down, ha[j].down);
        j++;
      }
      cr_assert_eq(j, na);
    }
  topo_free(&ta);
  topo_free(&tb);
}

/* Names as weft platform writes them on each tiered fabric; the cables of
 * a multi-plane fabric's up-link are one plane's. */
Test(downlink, names_per_fabric)
{
  struct weft_err err = {0};
  struct cluster c;
  cr_assert_eq(resolve("dgx-h100", KV("gpus", "32", "nodes_per_leaf", "2",
                                      "topology", "rail", "down_links",
                                      "su1-rail5-up"), &c, &err), 0, "%s",
               err.msg);
  cr_assert_eq(c.down[0].of, 2, "a rail leaf's cables: a NIC per node");
  cr_assert_eq(resolve("dgx-h100", KV("gpus", "32", "nodes_per_leaf", "1",
                                      "leaves_per_pod", "2", "topology",
                                      "rail-only", "down_links",
                                      "pod0-rail3-up:1"), &c, &err), 0, "%s",
               err.msg);
  cr_assert_eq(c.down[0].of, 2, "a rail's pod: a leaf per node, 2 leaves");
  cr_assert_eq(resolve("dgx-h100", KV("gpus", "16", "nodes_per_leaf", "1",
                                      "topology", "multi-plane",
                                      "down_links", "leaf0-up:7"), &c, &err),
               0, "%s", err.msg);
  cr_assert_eq(c.down[0].of, 8, "one plane's cables");
  cr_assert_eq(resolve("dgx-h100", KV("gpus", "16", "nodes_per_leaf", "1",
                                      "oversubscription", "2", "down_links",
                                      "leaf0-up"), &c, &err), 0, "%s",
               err.msg);
  cr_assert_eq(c.down[0].of, 4, "8 NICs over a ratio of 2");
}

static void refused_on(const char *const *kv, const char *msg)
{
  struct weft_err err = {0};
  struct cluster c;
  cr_assert_neq(resolve("dgx-h100", kv, &c, &err), 0, "accepted: %s", msg);
  cr_assert(strstr(err.msg, msg), "'%s' lacks '%s'", err.msg, msg);
}

Test(downlink, bad_names_refused)
{
  refused("down_links", "leaf9-up", "down_links: no link 'leaf9-up' on "
          "this cluster (its NICs are node0-nic0 to node1-nic7");
  refused("down_links", "node0-nic3:2", "down_links: 'node0-nic3:2': a NIC "
          "is down as a whole");
  refused("down_links", "gpu3-nvl", "down_links: 'gpu3-nvl' is an NVLink "
          "link");
  refused("down_links", "leaf0-up", "down_links: 'leaf0-up' is on no route: "
          "with one leaf group");
  refused_on(KV("gpus", "16", "nodes_per_leaf", "1", "down_links",
                "leaf0-up:8"),
             "down_links: 'leaf0-up:8': leaf0-up stands for 8 cable(s); 8 "
             "down would cut it off (at most 7)");
  refused_on(KV("gpus", "16", "nodes_per_leaf", "1", "down_links",
                "leaf0-up:0"), "CABLES is a whole number of cables down");
  refused_on(KV("gpus", "16", "nodes_per_leaf", "1", "down_links",
                "leaf0-up:x"), "CABLES is a whole number of cables down");
  refused("down_links", "node1-nic2,node1-nic2", "'node1-nic2' is given "
          "twice");
  refused("down_links", "node0-nic0,", "'' is not a link's name");
  refused("down_links", "node0-nic0,node0-nic1,node0-nic2,node0-nic3,"
          "node0-nic4,node0-nic5,node0-nic6,node0-nic7",
          "every NIC of node 0 is down");
  refused_on(KV("gpus", "16", "topology", "dragonfly", "down_links",
                "node0-nic0"),
             "down_links: links down are modelled on fat-tree, rail, "
             "rail-only and multi-plane fabrics");
}

/* The diurnal clock: 1 at 03:00, 1 + A at 15:00, 1 + A / 2 at 09:00 and
 * 21:00, and a day's period. */
Test(diurnal, factor_over_the_day)
{
  struct weft_err err = {0};
  struct cluster c;
  cr_assert_eq(resolve("dgx-h100", KV("gpus", "16", "diurnal", "2"), &c,
                       &err), 0, "%s", err.msg);
  REL(cluster_diurnal_factor(&c, 3), 1.0, 1e-15);
  REL(cluster_diurnal_factor(&c, 15), 1.02, 1e-15);
  REL(cluster_diurnal_factor(&c, 9), 1.01, 1e-15);
  REL(cluster_diurnal_factor(&c, 21), 1.01, 1e-15);
  REL(cluster_diurnal_factor(&c, 15 + 48), 1.02, 1e-12);
  /* The job starts at midnight: 1 + A (1 - cos(-pi / 4)) / 2. */
  REL(c.diurnal_slow, 1 + 0.01 * (1 - sqrt(0.5)), 1e-12);
  REL(cluster_gpu_slowdown(&c, 7), c.diurnal_slow, 1e-15);
  cr_assert(!cluster_has_stragglers(&c), "every GPU alike: shortcuts kept");
  refused("diurnal", "25", "diurnal");
  refused("diurnal_hour", "25", "diurnal_hour");
  refused("diurnal_hour", "5", "diurnal_hour: the hour of the day matters "
          "only with a diurnal variation");
}

/* At 15:00 with A = 2 %: every kernel at 1.02 times its time.  The
 * data-parallel step (a kernel, then the all-reduce that waits for it):
 * the kernel scales, the all-reduce does not: 1.02 tk + ring. */
Test(diurnal, only_kernels_scale)
{
  struct cluster c = load("dgx-h100", KV("gpus", "16", "nodes_per_leaf", "2",
                                         "diurnal", "2", "diurnal_hour",
                                         "15"));
  struct engine_result r;
  double tk, ring;
  double T = dp16_step(&c, &r, &tk, &ring);
  REL(T, 1.02 * tk + ring, 1e-6);
  REL(r.compute_s, 1.02 * tk, 1e-9);
  cr_assert_eq(r.path.held_rank, -1, "no rank differs");
  engine_result_free(&r);
}

/* Compute alone: the 1F1B pipeline with free transfers, all at 1.02. */
Test(diurnal, compute_bound_scales_whole)
{
  const long p = 4, m = 8;
  struct cluster c = load("dgx-h100", KV("gpus", "8", "diurnal", "2",
                                         "diurnal_hour", "15"));
  double tf, tb;
  struct graph *g = pipeline(&c, p, m, &tf, &tb);
  struct engine_params ep = ideal_ring_params();
  ep.free_comm = true;
  struct engine_result r;
  REL(run(g, &c, &ep, &r), 1.02 * (double)(m + p - 1) * (tf + tb), 1e-9);
  engine_result_free(&r);
  graph_free(g);
}
