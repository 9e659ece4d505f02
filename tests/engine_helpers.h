/*
 * engine_helpers.h - shared by the engine tests that compare simulated
 * times with closed forms: the engine's parameters on an ideal network,
 * one DGX H100 node loaded as the platform, and replays on it.
 * Header-only (static) so that each test program stays one file plus this.
 */
#ifndef WEFT_TEST_ENGINE_HELPERS_H
#define WEFT_TEST_ENGINE_HELPERS_H

#include <criterion/criterion.h>

#include "platforms/catalog.h"
#include "platforms/cluster.h"
#include "sim/engine.h"
#include "sim/platload.h"

/* No protocol overheads, links at their full bandwidth, trees as fast as
 * their links, every step paying its route's latency only (no NCCL
 * per-step latencies). */
static inline struct engine_params ideal_params(void)
{
  struct engine_params p;
  engine_params_default(&p);
  p.nvlink_eff = p.nic_eff = 1;
  p.coll_lat_s = 0;
  p.ring_loss = 0;
  p.ll128_eff = p.ll_eff = 1;
  p.nvls_eff = 1;
  p.tree_bw = 0;
  p.nccl_hops = false;
  return p;
}

/* The same with every collective a ring. */
static inline struct engine_params ideal_ring_params(void)
{
  struct engine_params p = ideal_params();
  p.algo = CA_RING;
  return p;
}

/* One DGX H100 node of 8 GPUs into *out, loaded as SimGrid's platform. */
static inline void load_dgx_h100_node(struct cluster *out)
{
  struct weft_err err = {0};
  struct catalog *cat = catalog_builtin(&err);
  cr_assert(cat, "%s", err.msg);
  struct cluster_desc d;
  cluster_desc_init(&d);
  cr_assert_eq(cluster_desc_preset(&d, "dgx-h100", &err), 0);
  cr_assert_eq(cluster_desc_set(&d, CK_GPUS, "8", "t", 2, &err), 0, "%s",
               err.msg);
  cr_assert_eq(cluster_resolve(&d, cat, out, &err), 0, "%s", err.msg);
  platload_boot(0);
  cr_assert_eq(platload_cluster(out, &err), 0, "%s", err.msg);
}

/* Graph g's iteration on the loaded platform `node`, with or without the
 * SMs and HBM that NCCL's kernels take (engine_params.comm_contention). */
static inline double replay_on(const struct cluster *node,
                               const struct graph *g, bool contention)
{
  struct weft_err err = {0};
  struct engine_params ep;
  engine_params_default(&ep);
  ep.comm_contention = contention;
  struct engine_result res = {0};
  cr_assert_eq(engine_run(g, node, &ep, &res, &err), 0, "%s", err.msg);
  engine_result_free(&res);
  return res.iteration_s;
}

/* Task i of g's first program alone, without its dependencies, in a
 * graph of its own with g's layout, replayed as replay_on does. */
static inline double task_alone(const struct cluster *node,
                                const struct graph *g, long i,
                                bool contention)
{
  struct graph *x = graph_new(1);
  x->layout = g->layout;
  struct task t = g->prog[0].tasks[i];
  t.ndep = 0;
  t.chunk = 0;
  t.mb = 0;
  graph_add(x, 0, &t);
  double s = replay_on(node, x, contention);
  graph_free(x);
  return s;
}

#endif
