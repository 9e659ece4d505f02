/*
 * test_p2p.c - a pipeline send against its closed form (sim/coll.h,
 * coll_p2p_extra): the node type's p2p latency of NVLink inside a node or
 * of the network across nodes, plus its bytes at the link's share,
 *   t = p2p_lat + bytes / (link bandwidth x eff),
 * with the catalog's values (platforms/catalog.xml p2p_nvlink_lat,
 * p2p_net_lat), not a collective's fixed cost; on an ideal network
 * (nccl_hops off) the route's latency alone.  Each test runs in its own
 * process, so each gets a fresh SimGrid engine.
 */
#include <criterion/criterion.h>
#include <math.h>
#include <string.h>

#include "sim/engine.h"
#include "sim/platload.h"

/* Times within SimGrid's solver precision (relative 1e-8 here). */
#define REL(a, b, tol)                                                         \
  cr_assert(fabs((double)(a) - (double)(b)) <= (tol) * fabs((double)(b)),     \
            "%.17g != %.17g", (double)(a), (double)(b))

static struct catalog *cat;

/* A cluster preset of `gpus` GPUs, `per_node` to a node. */
static struct cluster load(const char *preset, const char *gpus,
                           const char *per_node)
{
  struct weft_err err = {0};
  cat = catalog_builtin(&err);
  cr_assert(cat, "%s", err.msg);
  struct cluster_desc d;
  cluster_desc_init(&d);
  cr_assert_eq(cluster_desc_preset(&d, preset, &err), 0, "%s", err.msg);
  cr_assert_eq(cluster_desc_set(&d, cluster_key_from_name("gpus"), gpus,
                                "gpus", 2, &err), 0, "%s", err.msg);
  cr_assert_eq(cluster_desc_set(&d, cluster_key_from_name("gpus_per_node"),
                                per_node, "gpus_per_node", 2, &err), 0,
               "%s", err.msg);
  struct cluster c;
  cr_assert_eq(cluster_resolve(&d, cat, &c, &err), 0, "%s", err.msg);
  platload_boot(0);
  cr_assert_eq(platload_cluster(&c, &err), 0, "%s", err.msg);
  return c;
}

/* One forward send of `bytes` from stage 0 to stage 1 (ranks 0 and 1, a
 * pipeline of two stages and nothing else); returns the iteration. */
static double one_send(const struct cluster *c, double bytes, bool ideal)
{
  struct graph *g = graph_new(2);
  g->layout = (struct graph_layout){1, 2, 1, 1, 1, 1, {0, 1, 2, 3}, 0,
                                    {0, 0, 0}, 0, 0};
  struct task t = {.kind = TK_SEND, .stream = ST_PP_SEND, .phase = PH_FWD,
                   .peer = 1, .chunk = 0, .mb = 0, .layer = -1,
                   .bytes = bytes};
  graph_add(g, 0, &t);
  t.kind = TK_RECV;
  t.stream = ST_PP_RECV;
  t.peer = -1;
  graph_add(g, 1, &t);
  struct engine_params p;
  engine_params_default(&p);
  p.nccl_hops = !ideal;
  struct engine_result r;
  struct weft_err err = {0};
  cr_assert_eq(engine_run(g, c, &p, &r, &err), 0, "%s", err.msg);
  double T = r.iteration_s;
  engine_result_free(&r);
  graph_free(g);
  return T;
}

/* Issue 37: a 4.7 MB send between two A100 of one DGX A100 paid the
 * collective fixed cost, 203.9 us, after 20 us of bytes (225.7 us traced);
 * it costs NVLink's p2p latency, 11.8 us, and its bytes at 0.7843 of
 * 300 GB/s. */
Test(p2p, a100_send_inside_a_node)
{
  struct cluster c = load("dgx-a100", "2", "2");
  const struct node_spec *n = catalog_node(cat, "DGX-A100");
  REL(n->p2p_nvlink_lat_s, 11.8e-6, 1e-12);
  REL(c.p2p_nvlink_lat_s, 11.8e-6, 1e-12);
  double S = 4.7e6;
  double t = one_send(&c, S, false);
  REL(t, 11.8e-6 + S / (300e9 * 0.7843), 1e-7);
  cr_assert_lt(t, 35e-6, "the send lasts %g s", t);
}

/* Across two nodes of one GPU each: the network's p2p latency, 18.0 us on
 * DGX A100 (NCCL 2.8-2.9's Simple step), and the bytes at 0.9623 of an
 * HDR NIC (25 GB/s). */
Test(p2p, a100_send_across_nodes)
{
  struct cluster c = load("dgx-a100", "2", "1");
  REL(c.p2p_net_lat_s, 18.0e-6, 1e-12);
  double S = 64e6;
  REL(one_send(&c, S, false), 18.0e-6 + S / (25e9 * 0.9623), 1e-7);
}

/* DGX H100: NCCL 2.30.7's network step (8.4 + 14 us), NDR at 0.9260; its
 * NVLink send at 0.8133 of 450 GB/s after 11.8 us. */
Test(p2p, h100_sends)
{
  struct cluster c = load("dgx-h100", "2", "1");
  REL(c.p2p_net_lat_s, 22.4e-6, 1e-12);
  double S = 64e6;
  REL(one_send(&c, S, false), 22.4e-6 + S / (50e9 * 0.9260), 1e-7);
}

Test(p2p, h100_send_inside_a_node)
{
  struct cluster c = load("dgx-h100", "2", "2");
  double S = 64e6;
  REL(one_send(&c, S, false), 11.8e-6 + S / (450e9 * 0.8133), 1e-7);
}

/* An ideal network (nccl_hops off): the route's latency alone, one NVLink
 * hop of 1 us inside the node. */
Test(p2p, ideal_network_pays_the_route)
{
  struct cluster c = load("dgx-a100", "2", "2");
  double S = 4.7e6;
  REL(one_send(&c, S, true), 1e-6 + S / (300e9 * 0.7843), 1e-7);
}

/* The extra delay on its own: the latency less the route, never below
 * zero, and none on an ideal network. */
Test(p2p, extra_after_the_flow)
{
  struct coll_model m = {.nccl_hops = true, .gpus_per_node = 8,
                         .p2p_nvlink_lat_s = 11.8e-6,
                         .p2p_net_lat_s = 22.4e-6};
  REL(coll_p2p_extra(&m, 0, 7, 1e-6), 10.8e-6, 1e-12);
  REL(coll_p2p_extra(&m, 7, 8, 2.13e-6), 20.27e-6, 1e-12);
  cr_assert_eq(coll_p2p_extra(&m, 0, 1, 30e-6), 0);
  m.nccl_hops = false;
  cr_assert_eq(coll_p2p_extra(&m, 0, 9, 1e-6), 0);
}

/* A p2p latency without a unit is refused with the attribute's name. */
Test(p2p, catalog_refuses_a_bare_number)
{
  const char *xml =
      "<catalog>\n<nic name=\"n\" bw=\"5Gbps\" lat=\"1us\"/>\n"
      "<node name=\"x\" gpu=\"A100-80GB\" gpus=\"8\" nic=\"n\" nics=\"8\" "
      "nvlink_lat=\"1us\" p2p_net_lat=\"20\"/>\n</catalog>";
  struct weft_err err = {0};
  struct catalog *c = catalog_builtin(&err);
  cr_assert(c, "%s", err.msg);
  cr_assert_eq(catalog_load_mem(c, xml, strlen(xml), "bad.xml", &err),
               WEFT_EINVAL);
  cr_assert_str_eq(err.msg, "bad.xml:3: <node>: attribute 'p2p_net_lat': "
                            "'20' has no unit; expected a time such as "
                            "0.35us");
  catalog_free(c);
}
