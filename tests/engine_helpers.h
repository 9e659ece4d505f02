/*
 * engine_helpers.h - shared by the engine tests that compare simulated
 * times with closed forms: the engine's parameters on an ideal network.
 * Header-only (static) so that each test program stays one file plus this.
 */
#ifndef WEFT_TEST_ENGINE_HELPERS_H
#define WEFT_TEST_ENGINE_HELPERS_H

#include "sim/engine.h"

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

#endif
