/*
 * test_dragonfly.c - issue 39: an all-reduce across two routers of one
 * Slingshot group (the perlmutter preset, 8 nodes of 4 A100 and 4
 * Slingshot-11 NICs of 25 GB/s, 4 nodes per router) against the closed
 * form of the paths it takes.  NCCL's ring runs one channel per NIC, each
 * entering and leaving a node through a different GPU (DESIGN.md,
 * Collectives), so each NIC carries one channel's 2 (n - 1) / n of S / 4:
 *   adaptive: t = 2 (n - 1) / n x (S / 4) / 25 GB/s (the NICs bind; the
 *     router's port into the group is 32 x 25 / 2 = 400 GB/s, topo.c);
 *   minimal: the 4 channels that step from router 0 to router 1 share
 *     its one 25 GB/s local link (and the 4 that wrap back the other
 *     direction): 4 times as long.
 * Ideal collectives (efficiencies 1, no fixed latency), timed as the
 * difference of 2S and S so that the steps' latencies cancel.  Each
 * test runs in its own process, so each gets a fresh SimGrid.
 */
#include <criterion/criterion.h>
#include <math.h>

#include "sim/engine.h"
#include "sim/platload.h"

/* The platform, loaded once per process (one SimGrid per process). */
static struct cluster load(const char *routing)
{
  static struct cluster loaded;
  static bool done;
  if (done)
    return loaded;
  struct weft_err err = {0};
  struct catalog *cat = catalog_builtin(&err);
  cr_assert(cat, "%s", err.msg);
  struct cluster_desc d;
  cluster_desc_init(&d);
  cr_assert_eq(cluster_desc_preset(&d, "perlmutter", &err), 0, "%s",
               err.msg);
  cr_assert_eq(cluster_desc_set(&d, cluster_key_from_name("gpus"), "32",
                                "gpus", 2, &err), 0, "%s", err.msg);
  cr_assert_eq(cluster_desc_set(&d, cluster_key_from_name(
                                        "dragonfly_routing"),
                                routing, "dragonfly_routing", 2, &err),
               0, "%s", err.msg);
  struct cluster c;
  cr_assert_eq(cluster_resolve(&d, cat, &c, &err), 0, "%s", err.msg);
  cr_assert_eq(c.leaves, 2);
  cr_assert_eq(c.groups, 1);
  platload_boot(0);
  cr_assert_eq(platload_cluster(&c, &err), 0, "%s", err.msg);
  loaded = c;
  done = true;
  return c;
}

static double allreduce_s(const char *routing, double bytes)
{
  struct cluster c = load(routing);
  struct weft_err err = {0};
  struct graph *g = graph_new(1);
  g->layout = (struct graph_layout){1, 1, 32, 1, 1, 1, {0, 1, 2, 3}, 0,
                                    {0, 0, 0}, 0, 0};
  struct task t = {.kind = TK_COLL, .op = CO_ALLREDUCE, .stream = ST_DP,
                   .group = GK_DP, .chunk = -1, .mb = -1, .layer = -1,
                   .bytes = bytes};
  graph_add(g, 0, &t);
  struct engine_params p;
  engine_params_default(&p);
  p.nvlink_eff = p.nic_eff = 1;
  p.coll_lat_s = 0;
  p.ll128_eff = p.ll_eff = 1;
  p.nccl_hops = false;
  p.algo = CA_RING;
  struct engine_result r;
  cr_assert_eq(engine_run(g, &c, &p, &r, &err), 0, "%s", err.msg);
  double T = r.iteration_s;
  engine_result_free(&r);
  graph_free(g);
  return T;
}

/* The bytes' time: two sizes' difference, which cancels the links' and
 * switches' latencies of the ring's steps (tens of us against ms). */
static double bytes_s(const char *routing, double bytes)
{
  return allreduce_s(routing, 2 * bytes) - allreduce_s(routing, bytes);
}

static const double S = 1e9, n = 32, nic_Bps = 25e9;

Test(dragonfly, allreduce_two_routers_adaptive)
{
  double t = bytes_s("adaptive", S), w = 2 * (n - 1) / n * (S / 4) / nic_Bps;
  cr_assert(fabs(t - w) <= 1e-6 * w, "%.12g != %.12g", t, w);
}

Test(dragonfly, allreduce_two_routers_minimal)
{
  double t = bytes_s("minimal", S),
         w = 4 * 2 * (n - 1) / n * (S / 4) / nic_Bps;
  cr_assert(fabs(t - w) <= 1e-6 * w, "%.12g != %.12g", t, w);
}
