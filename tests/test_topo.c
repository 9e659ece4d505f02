/*
 * test_topo.c - the fabrics of platforms/topo.c as SimGrid routes them.
 *
 * Every route is read back from SimGrid (the in-memory zone of
 * sgbridge.cpp) and compared hop by hop with an oracle written here from
 * the description of each topology, not from topo.c's code; the fat tree's
 * routes are compared with those of platgen's XML, loaded by SimGrid.
 * Bisection: an all-to-all simulated on a torus and on an oversubscribed
 * rail fabric takes the time of its closed form.  Bad parameters are
 * refused naming their flag.  Each test runs in its own process, hence
 * its own SimGrid engine.
 */
#include <criterion/criterion.h>
#include <stdarg.h>
#include <math.h>
#include <simgrid/host.h>
#include <simgrid/link.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <xbt/dynar.h>

#include "platforms/cluster.h"
#include "platforms/platgen.h"
#include "platforms/topo.h"
#include "sim/platload.h"
#include "sim/sgbridge.h"

/* Resolve preset + flags ("name=value" pairs, NULL-terminated). */
static int resolve(const char *preset, const char *const *kv,
                   struct cluster *c, struct weft_err *err)
{
  struct catalog *cat = catalog_builtin(err);
  cr_assert(cat, "%s", err->msg);
  struct cluster_desc d;
  cluster_desc_init(&d);
  cr_assert_eq(cluster_desc_preset(&d, preset, err), 0, "%s", err->msg);
  int rc = 0;
  for (int i = 0; kv[i] && !rc; i++) {
    char name[64], flag[72];
    const char *eq = strchr(kv[i], '=');
    snprintf(name, sizeof name, "%.*s", (int)(eq - kv[i]), kv[i]);
    snprintf(flag, sizeof flag, "--%s", name);
    int k = cluster_key_from_name(name);
    cr_assert(k >= 0, "key %s", name);
    rc = cluster_desc_set(&d, (enum cluster_key)k, eq + 1, flag, 2, err);
  }
  if (!rc)
    rc = cluster_resolve(&d, cat, c, err);
  catalog_free(cat);
  return rc;
}

static void load(const char *preset, const char *const *kv, struct cluster *c,
                 bool xml)
{
  struct weft_err err = {0};
  cr_assert_eq(resolve(preset, kv, c, &err), 0, "%s", err.msg);
  platload_boot(0);
  if (xml)
    cr_assert_eq(platload_cluster_xml(c, &err), 0, "%s", err.msg);
  else
    cr_assert_eq(platload_cluster(c, &err), 0, "%s", err.msg);
}

static sg_host_t host(long r)
{
  char h[32];
  platgen_host_name((int)r, h, sizeof h);
  sg_host_t x = sg_host_by_name(h);
  cr_assert(x, "host %s", h);
  return x;
}

/* SimGrid's route a -> b as "l1 l2 ..." (links of bandwidth below
 * `max_bw` only) and its latency. */
static void sg_route(long a, long b, double max_bw, char *buf, size_t size,
                     double *lat)
{
  xbt_dynar_t links = xbt_dynar_new(sizeof(sg_link_t), NULL);
  sg_host_get_route(host(a), host(b), links);
  buf[0] = '\0';
  unsigned i;
  sg_link_t l;
  size_t n = 0;
  xbt_dynar_foreach(links, i, l)
  {
    if (sg_link_get_bandwidth(l) >= max_bw)
      continue;
    n += (size_t)snprintf(buf + n, size - n, "%s%s", n ? " " : "",
                          sg_link_get_name(l));
  }
  xbt_dynar_free(&links);
  *lat = sg_host_get_route_latency(host(a), host(b));
}

struct want {
  char s[512];
  size_t n;
  double lat;
};

static void w_add(struct want *w, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
static void w_add(struct want *w, const char *fmt, ...)
{
  va_list ap;
  va_start(ap, fmt);
  if (w->n)
    w->s[w->n++] = ' ';
  w->n += (size_t)vsnprintf(w->s + w->n, sizeof w->s - w->n, fmt, ap);
  va_end(ap);
}

static void check(long a, long b, const struct want *w)
{
  char got[512];
  double lat;
  sg_route(a, b, 1e15, got, sizeof got, &lat);
  cr_assert_str_eq(got, w->s, "route gpu%ld -> gpu%ld", a, b);
  cr_assert(fabs(lat - w->lat) <= 1e-12 * w->lat, "latency gpu%ld -> gpu%ld:"
            " %.12g != %.12g", a, b, lat, w->lat);
}

/* ---- rail-optimized and rail-only ------------------------------------ */

/* The oracle: inside a node, NVLink; across nodes on one rail (NIC k of
 * both), the rail's leaf in a unit (1 hop), via the spines (3 hops) or the
 * core (5 hops); off the rail, PXN (or rail-only) first moves the data
 * over NVLink to the GPU of the sender's node on the receiver's rail; a
 * rail fabric without PXN goes leaf, spine, leaf. */
static void rail_want(const struct cluster *c, long a, long b, struct want *w)
{
  int g = c->gpus_per_node, per = g / c->nics_per_node;
  long na = a / g, nb = b / g;
  int ka = (int)(a % g) / per, kb = (int)(b % g) / per;
  memset(w, 0, sizeof *w);
  if (na == nb) {
    w_add(w, "gpu%ld-nvl_UP gpu%ld-nvl_DOWN", a, b);
    w->lat = c->nvlink_lat_s;
    return;
  }
  bool forward = ka != kb && (c->topology == TOPO_RAIL_ONLY || c->pxn);
  if (forward) {
    long p = na * g + (long)kb * per + (a % g) % per;
    w_add(w, "gpu%ld-nvl_UP gpu%ld-nvl_DOWN", a, p);
    w->lat += c->nvlink_lat_s;
    ka = kb;
  }
  long sa = na / c->nodes_per_leaf, sb = nb / c->nodes_per_leaf;
  long pa = sa / c->leaves_per_pod, pb = sb / c->leaves_per_pod;
  int hops = sa == sb && ka == kb ? 1 : pa == pb ? 3 : 5;
  w_add(w, "node%ld-nic%d_UP", na, ka);
  if (hops > 1 && c->oversub > 1)
    w_add(w, "su%ld-rail%d-up_UP", sa, ka);
  if (hops == 5 && c->pod_oversub > 1) {
    if (c->topology == TOPO_RAIL_ONLY) {
      w_add(w, "pod%ld-rail%d-up_UP", pa, ka);
      w_add(w, "pod%ld-rail%d-up_DOWN", pb, ka);
    } else {
      w_add(w, "pod%ld-up_UP pod%ld-up_DOWN", pa, pb);
    }
  }
  if (hops > 1 && c->oversub > 1)
    w_add(w, "su%ld-rail%d-up_DOWN", sb, kb);
  w_add(w, "node%ld-nic%d_DOWN", nb, kb);
  w->lat += 2 * c->nic.lat_s + hops * c->switch_lat_s;
}

static void check_rail_on(const char *preset, const char *const *kv)
{
  struct cluster c;
  load(preset, kv, &c, false);
  struct want w;
  for (long a = 0; a < c.gpus; a += (c.gpus > 64 ? 7 : 1))
    for (long b = 0; b < c.gpus; b++)
      if (a != b) {
        rail_want(&c, a, b, &w);
        check(a, b, &w);
      }
}

static void check_rail(const char *const *kv)
{
  check_rail_on("dgx-h100", kv);
}

/* Part of NVL72 racks (16 of 18 trays each) on rails: the rack's 64 GPUs
 * are one NVLink domain of 64 rails, racks in separate units. */
Test(topo, rail_only_partial_nvl72)
{
  const char *kv[] = {"gpus=128", "topology=rail-only", "nodes_per_leaf=1",
                      NULL};
  check_rail_on("gb200-nvl72", kv);
}

Test(topo, rail_pxn)
{
  const char *kv[] = {"gpus=64", "topology=rail", "nodes_per_leaf=4", NULL};
  check_rail(kv);
}

Test(topo, rail_without_pxn_oversubscribed_pods)
{
  const char *kv[] = {"gpus=256", "topology=rail", "pxn=0",
                      "nodes_per_leaf=4", "leaves_per_pod=2",
                      "oversubscription=2", "pod_oversubscription=3", NULL};
  check_rail(kv);
}

Test(topo, rail_only_oversubscribed_pods)
{
  const char *kv[] = {"gpus=256", "topology=rail-only", "nodes_per_leaf=4",
                      "leaves_per_pod=2", "oversubscription=2",
                      "pod_oversubscription=3", NULL};
  check_rail(kv);
}

Test(topo, rail_with_shared_nics)
{
  const char *kv[] = {"gpus=64", "topology=rail-only", "nics_per_node=4",
                      "nodes_per_leaf=2", NULL};
  check_rail(kv);
}

/* A cross-rail transfer on rail-only takes the NVLink hop: GPU 1 of node 0
 * to GPU 2 of node 1 crosses GPU 2 of node 0's NVLink, then rail 2. */
Test(topo, rail_only_cross_rail_takes_nvlink)
{
  const char *kv[] = {"gpus=16", "topology=rail-only", NULL};
  struct cluster c;
  load("dgx-h100", kv, &c, false);
  char got[512];
  double lat;
  sg_route(1, 10, 1e15, got, sizeof got, &lat);
  cr_assert_str_eq(got, "gpu1-nvl_UP gpu2-nvl_DOWN node0-nic2_UP "
                   "node1-nic2_DOWN");
  cr_assert_float_eq(lat, c.nvlink_lat_s + 2 * c.nic.lat_s + c.switch_lat_s,
                     1e-15);
}

/* ---- torus ------------------------------------------------------------ */

/* The oracle: coordinates x fastest; along each dimension in turn, steps
 * of +1 when the forward distance is at most half the ring, else -1; a
 * step from u to u+1 takes u's link UP, a step from u to u-1 takes
 * (u-1)'s link DOWN. */
static void torus_want(const struct cluster *c, long a, long b,
                       struct want *w)
{
  int g = c->gpus_per_node;
  long na = a / g, nb = b / g;
  memset(w, 0, sizeof *w);
  if (na == nb) {
    w_add(w, "gpu%ld-nvl_UP gpu%ld-nvl_DOWN", a, b);
    w->lat = c->nvlink_lat_s;
    return;
  }
  int nd = c->torus_ndims, k = (int)(a % g) / (g / c->nics_per_node);
  int kb = (int)(b % g) / (g / c->nics_per_node);
  long pos[3], dst[3], rest = na, rb = nb;
  for (int d = 0; d < nd; d++) {
    pos[d] = rest % c->torus_dim[d];
    rest /= c->torus_dim[d];
    dst[d] = rb % c->torus_dim[d];
    rb /= c->torus_dim[d];
  }
  w_add(w, "node%ld-nic%d_UP", na, k);
  int hops = 0;
  for (int d = 0; d < nd; d++) {
    int n = c->torus_dim[d];
    while (pos[d] != dst[d]) {
      long fwd = (dst[d] - pos[d] + n) % n;
      long from[3] = {pos[0], pos[1], pos[2]};
      bool up = 2 * fwd <= n;
      if (!up)
        from[d] = (pos[d] - 1 + n) % n;
      long v = 0, m = 1;
      for (int e = 0; e < nd; e++) {
        v += from[e] * m;
        m *= c->torus_dim[e];
      }
      w_add(w, "t%ld-d%d_%s", v, d, up ? "UP" : "DOWN");
      pos[d] = up ? (pos[d] + 1) % n : from[d];
      hops++;
    }
  }
  w_add(w, "node%ld-nic%d_DOWN", nb, kb);
  w->lat = 2 * c->nic.lat_s + (hops + 1) * c->switch_lat_s;
}

static void check_torus(const char *preset, const char *const *kv)
{
  struct cluster c;
  load(preset, kv, &c, false);
  struct want w;
  long step = c.gpus > 128 ? 5 : 1;
  for (long a = 0; a < c.gpus; a += step)
    for (long b = 0; b < c.gpus; b++)
      if (a != b) {
        torus_want(&c, a, b, &w);
        check(a, b, &w);
      }
}

Test(topo, torus_2d)
{
  const char *kv[] = {"gpus=40", "gpus_per_node=1", "topology=torus",
                      "torus=5x8", NULL};
  check_torus("dgx-h100", kv);
}

Test(topo, torus_3d_multi_hop)
{
  const char *kv[] = {"gpus=512", "topology=torus", "torus=4x4x4", NULL};
  check_torus("dgx-h100", kv);
}

Test(topo, torus_3d_odd)
{
  const char *kv[] = {"gpus=90", "gpus_per_node=1", "topology=torus",
                      "torus=3x5x6", NULL};
  check_torus("dgx-h100", kv);
}

/* ---- dragonfly -------------------------------------------------------- */

/* Properties every dragonfly route must have, from its description: out
 * of the sender's NIC and into the receiver's; a connected walk over
 * routers, where a local link joins two routers of one group and a global
 * link two groups; minimal: at most one global link and at most one
 * local link in each group; valiant: two global links through a third
 * group; each end of a global link always at the same router, and no
 * router with more global link ends than global_links; latency one switch
 * hop per router visited. */
struct df_state {
  long *gend; /* router at each global link's lower-group end, then
                 higher-group end; -1: not seen */
  long nglobal;
};

static void check_df_route(const struct cluster *c, struct df_state *st,
                           long a, long b)
{
  int g = c->gpus_per_node, A = c->routers_per_group;
  long na = a / g, nb = b / g;
  xbt_dynar_t links = xbt_dynar_new(sizeof(sg_link_t), NULL);
  sg_host_get_route(host(a), host(b), links);
  unsigned n = (unsigned)xbt_dynar_length(links);
  const char *first = sg_link_get_name(xbt_dynar_get_as(links, 0, sg_link_t));
  const char *last =
      sg_link_get_name(xbt_dynar_get_as(links, n - 1, sg_link_t));
  char want[64];
  long ra = na / c->nodes_per_leaf, rb = nb / c->nodes_per_leaf;
  if (na == nb) {
    snprintf(want, sizeof want, "gpu%ld-nvl_UP", a);
    cr_assert_str_eq(first, want);
    xbt_dynar_free(&links);
    return;
  }
  snprintf(want, sizeof want, "node%ld-nic%ld_UP", na,
           (a % g) / (g / c->nics_per_node));
  cr_assert_str_eq(first, want, "gpu%ld -> gpu%ld", a, b);
  snprintf(want, sizeof want, "node%ld-nic%ld_DOWN", nb,
           (b % g) / (g / c->nics_per_node));
  cr_assert_str_eq(last, want, "gpu%ld -> gpu%ld", a, b);
  long cur = ra, visited = 1, nglob = 0;
  bool unknown = false; /* cur is only known by its group */
  long locals_in[64] = {0};
  for (unsigned i = 1; i + 1 < n; i++) {
    const char *name = sg_link_get_name(xbt_dynar_get_as(links, i, sg_link_t));
    long x, y, z;
    char dir[8];
    if (sscanf(name, "g%ld-r%ld-r%ld_%7s", &x, &y, &z, dir) == 4) {
      cr_assert_eq(cur / A, x, "%s: not in group %ld", name, cur / A);
      long from = strcmp(dir, "UP") == 0 ? y : z, to = y + z - from;
      cr_assert(unknown || cur % A == from, "%s from router %ld", name, cur);
      unknown = false;
      cur = x * A + to;
      locals_in[x % 64]++;
    } else if (sscanf(name, "g%ld-g%ld-%ld_%7s", &x, &y, &z, dir) == 4) {
      bool up = strcmp(dir, "UP") == 0;
      long gfrom = up ? x : y, gto = up ? y : x;
      cr_assert_eq(cur / A, gfrom, "%s from group %ld", name, cur / A);
      long id = (x * c->groups + y) * 64 + z; /* unique per link */
      cr_assert_lt(id, st->nglobal);
      long *end_from = &st->gend[2 * id + (up ? 0 : 1)];
      long *end_to = &st->gend[2 * id + (up ? 1 : 0)];
      if (!unknown) {
        if (*end_from < 0)
          *end_from = cur;
        cr_assert_eq(*end_from, cur, "%s leaves from two routers", name);
      }
      /* Where it lands: where the next local link starts, or the
       * receiver's router, or (another global link next, valiant) where
       * that one leaves, when known. */
      long land = *end_to;
      const char *nx =
          sg_link_get_name(xbt_dynar_get_as(links, i + 1, sg_link_t));
      long x2, y2, z2;
      char d2[8];
      if (sscanf(nx, "g%ld-r%ld-r%ld_%7s", &x2, &y2, &z2, d2) == 4)
        land = x2 * A + (strcmp(d2, "UP") == 0 ? y2 : z2);
      else if (i + 2 == n)
        land = rb;
      if (land >= 0) {
        if (*end_to < 0)
          *end_to = land;
        cr_assert_eq(*end_to, land, "%s lands on two routers", name);
        cr_assert_eq(land / A, gto, "%s lands outside group %ld", name, gto);
        cur = land;
      } else {
        cur = gto * A; /* its group only: the next link checks that */
      }
      unknown = land < 0;
      nglob++;
    } else {
      cr_assert_fail("unexpected link %s in gpu%ld -> gpu%ld", name, a, b);
    }
    visited++;
  }
  cr_assert_eq(cur, rb, "gpu%ld -> gpu%ld ends at router %ld, not %ld", a, b,
               cur, rb);
  if (ra / A == rb / A)
    cr_assert_eq(nglob, 0);
  else
    cr_assert_eq(nglob, c->valiant ? 2 : 1, "gpu%ld -> gpu%ld", a, b);
  if (!c->valiant)
    for (int i = 0; i < 64; i++)
      cr_assert_leq(locals_in[i], 1, "two local links in one group");
  double lat = sg_host_get_route_latency(host(a), host(b));
  double w = 2 * c->nic.lat_s + visited * c->switch_lat_s;
  cr_assert(fabs(lat - w) <= 1e-12 * w, "latency %g != %g", lat, w);
  xbt_dynar_free(&links);
}

/* Adaptive (topo.c, df_size): out of the sender's NIC; in one router
 * nothing more; in one group the sender router's port up and the
 * receiver router's port down (2 switch hops); across groups the sender
 * router's port up, the two groups' joined global link in its direction,
 * the receiver router's port down (4 switch hops: sender, exit, entry,
 * receiver); into the receiver's NIC. */
static void check_df_adaptive(const struct cluster *c, long a, long b)
{
  int g = c->gpus_per_node, A = c->routers_per_group;
  long na = a / g, nb = b / g;
  if (na == nb)
    return;
  long ra = na / c->nodes_per_leaf, rb = nb / c->nodes_per_leaf;
  long ga = ra / A, gb = rb / A;
  char want[256];
  int k = snprintf(want, sizeof want, "node%ld-nic%ld_UP", na,
                   (a % g) / (g / c->nics_per_node));
  int hops = 1;
  if (ra != rb)
    k += snprintf(want + k, sizeof want - (size_t)k, " g%ld-r%ld-port_UP",
                  ga, ra % A);
  if (ga != gb) {
    long lo = ga < gb ? ga : gb, hi = ga < gb ? gb : ga;
    k += snprintf(want + k, sizeof want - (size_t)k, " g%ld-g%ld_%s", lo, hi,
                  ga < gb ? "UP" : "DOWN");
    hops = 4;
  } else if (ra != rb) {
    hops = 2;
  }
  if (ra != rb)
    k += snprintf(want + k, sizeof want - (size_t)k, " g%ld-r%ld-port_DOWN",
                  gb, rb % A);
  snprintf(want + k, sizeof want - (size_t)k, " node%ld-nic%ld_DOWN", nb,
           (b % g) / (g / c->nics_per_node));
  char got[256];
  double lat;
  sg_route(a, b, INFINITY, got, sizeof got, &lat);
  cr_assert_str_eq(got, want, "gpu%ld -> gpu%ld", a, b);
  double w = 2 * c->nic.lat_s + hops * c->switch_lat_s;
  cr_assert(fabs(lat - w) <= 1e-12 * w, "latency %g != %g", lat, w);
}

static void check_dragonfly(const char *const *kv)
{
  struct cluster c;
  load("dgx-h100", kv, &c, false);
  if (c.adaptive) {
    for (long a = 0; a < c.gpus; a++)
      for (long b = 0; b < c.gpus; b++)
        if (a != b)
          check_df_adaptive(&c, a, b);
    return;
  }
  struct df_state st;
  st.nglobal = (long)c.groups * c.groups * 64;
  st.gend = malloc(2 * (size_t)st.nglobal * sizeof *st.gend);
  for (long i = 0; i < 2 * st.nglobal; i++)
    st.gend[i] = -1;
  long step = c.gpus > 256 ? 3 : 1;
  for (long a = 0; a < c.gpus; a += step)
    for (long b = 0; b < c.gpus; b++)
      if (a != b)
        check_df_route(&c, &st, a, b);
  /* No router holds more global link ends than it has ports. */
  long A = c.routers_per_group;
  long *ends = calloc((size_t)(c.groups * A), sizeof *ends);
  for (long i = 0; i < 2 * st.nglobal; i++)
    if (st.gend[i] >= 0)
      ends[st.gend[i]]++;
  for (long r = 0; r < c.groups * A; r++)
    cr_assert_leq(ends[r], c.global_links, "router %ld: %ld global links", r,
                  ends[r]);
  free(ends);
  free(st.gend);
}

Test(topo, dragonfly_minimal)
{
  /* 4 GPUs and NICs per node, 2 nodes per router, 4 routers per group, 2
   * global links per router: 8 groups of 8 nodes, one link per pair. */
  const char *kv[] = {"gpus=256", "gpus_per_node=4", "topology=dragonfly",
                      "nodes_per_leaf=2", "routers_per_group=4",
                      "global_links=2", NULL};
  check_dragonfly(kv);
}

Test(topo, dragonfly_adaptive)
{
  const char *kv[] = {"gpus=256", "gpus_per_node=4", "topology=dragonfly",
                      "nodes_per_leaf=2", "routers_per_group=4",
                      "global_links=2", "dragonfly_routing=adaptive", NULL};
  check_dragonfly(kv);
}

Test(topo, dragonfly_valiant_several_links_per_pair)
{
  const char *kv[] = {"gpus=192", "gpus_per_node=4", "topology=dragonfly",
                      "nodes_per_leaf=2", "routers_per_group=4",
                      "global_links=3", "dragonfly_routing=valiant", NULL};
  check_dragonfly(kv);
}

/* Issue 39, a permutation: every GPU of a 128-node Perlmutter group sends
 * to the GPU of its rank 4 nodes on (the next router's), 512 flows of
 * equal demand.  Under max-min sharing the first flows to saturate get
 * the least, over the links, of bandwidth / flows crossing it.  Minimal
 * routing sends a router's 16 flows over its one 25 GB/s link to the next
 * router: 25/16 GB/s each.  Adaptive: the router's port into the group,
 * 32 routers x 1 link x 25 GB/s / 2 = 400 GB/s, carries the 16 flows at
 * 25 GB/s each, and the NICs (25 GB/s, one flow each) bind. */
static double permutation_share(const char *routing)
{
  const char *kv[] = {"gpus=512", routing, NULL};
  struct cluster c;
  load("perlmutter", kv, &c, false);
  cr_assert_eq(c.routers_per_group, 32);
  cr_assert_eq(c.nodes_per_leaf, 4);
  cr_assert_eq(c.groups, 1);
  size_t nl = sg_link_count();
  sg_link_t *all = sg_link_list();
  long *flows = calloc(nl, sizeof *flows);
  xbt_dynar_t links = xbt_dynar_new(sizeof(sg_link_t), NULL);
  for (long a = 0; a < c.gpus; a++) {
    long b = (a + 16) % c.gpus;
    xbt_dynar_reset(links);
    sg_host_get_route(host(a), host(b), links);
    unsigned i;
    sg_link_t l;
    xbt_dynar_foreach(links, i, l)
    {
      size_t k = 0;
      while (k < nl && all[k] != l)
        k++;
      cr_assert_lt(k, nl);
      flows[k]++;
    }
  }
  double share = INFINITY;
  for (size_t k = 0; k < nl; k++)
    if (flows[k] > 0 && sg_link_get_bandwidth(all[k]) / flows[k] < share)
      share = sg_link_get_bandwidth(all[k]) / flows[k];
  xbt_dynar_free(&links);
  free(flows);
  free(all);
  return share;
}

Test(topo, dragonfly_permutation_minimal)
{
  double s = permutation_share("dragonfly_routing=minimal");
  cr_assert(fabs(s - 25e9 / 16) <= 1e-9 * s, "%.17g", s);
}

Test(topo, dragonfly_permutation_adaptive)
{
  double s = permutation_share("dragonfly_routing=adaptive");
  cr_assert(fabs(s - 25e9) <= 1e-9 * s, "%.17g", s);
}

/* ---- fat tree: the in-memory routes are platgen's ----------------------- */

/* tok[0..n) sorted, joined by spaces into buf. */
static void sorted_join(char **tok, int n, char *buf, size_t size)
{
  for (int i = 1; i < n; i++) /* insertion sort */
    for (int j = i; j > 0 && strcmp(tok[j - 1], tok[j]) > 0; j--) {
      char *t = tok[j];
      tok[j] = tok[j - 1];
      tok[j - 1] = t;
    }
  size_t m = 0;
  buf[0] = '\0';
  for (int i = 0; i < n; i++)
    m += (size_t)snprintf(buf + m, size - m, "%s%s", i ? " " : "", tok[i]);
}

/* The links that carry bandwidth on SimGrid's route, sorted, and its
 * latency; up-links of ratio 1 (which pod zones keep on routes) left out. */
static void bw_links(long a, long b, const struct cluster *c, char *buf,
                     size_t size)
{
  char raw[512];
  double lat;
  sg_route(a, b, 1e15, raw, sizeof raw, &lat);
  char *tok[16];
  int n = 0;
  for (char *s = strtok(raw, " "); s && n < 16; s = strtok(NULL, " "))
    if (!(c->oversub == 1 && strncmp(s, "leaf", 4) == 0 && strstr(s, "-up")))
      tok[n++] = s;
  sorted_join(tok, n, buf, size);
}

static void check_fat_tree(const char *const *kv)
{
  struct cluster c;
  load("dgx-a100", kv, &c, true); /* the XML */
  struct topo t;
  struct weft_err err = {0};
  cr_assert_eq(topo_build(&t, &c, &err), 0);
  struct topo_hop *h = calloc((size_t)topo_max_hops(&t), sizeof *h);
  long step = c.gpus > 128 ? 13 : 1;
  for (long a = 0; a < c.gpus; a += step)
    for (long b = 0; b < c.gpus; b++) {
      if (a == b)
        continue;
      double sw, lat = 0;
      int n = topo_route(&t, a, b, h, &sw);
      char name[64], *tok[16], mine[512], xml[512];
      char store[16][72];
      for (int i = 0; i < n; i++) {
        topo_link_name(&t, h[i].link, name, sizeof name);
        snprintf(store[i], sizeof store[i], "%s_%s", name,
                 h[i].down ? "DOWN" : "UP");
        tok[i] = store[i];
        lat += t.link[h[i].link].lat;
      }
      sorted_join(tok, n, mine, sizeof mine);
      bw_links(a, b, &c, xml, sizeof xml);
      cr_assert_str_eq(mine, xml, "gpu%ld -> gpu%ld", a, b);
      double want = sg_host_get_route_latency(host(a), host(b));
      cr_assert(fabs(lat + sw - want) <= 1e-12 * want,
                "latency gpu%ld -> gpu%ld: %g != %g", a, b, lat + sw, want);
    }
  free(h);
  topo_free(&t);
}

Test(topo, fat_tree_is_platgen_flat)
{
  const char *kv[] = {"gpus=128", "nodes_per_leaf=2", "leaves_per_pod=2",
                      "oversubscription=2", "pod_oversubscription=3", NULL};
  check_fat_tree(kv);
}

Test(topo, fat_tree_is_platgen_pod_zones)
{
  /* 257 leaf groups: pods become zones in the XML. */
  const char *kv[] = {"gpus=2056", "nodes_per_leaf=1", "leaves_per_pod=16",
                      "pod_oversubscription=2", NULL};
  check_fat_tree(kv);
}

Test(topo, fat_tree_is_platgen_shared_nics)
{
  const char *kv[] = {"gpus=64", "nics_per_node=2", "nodes_per_leaf=3", NULL};
  check_fat_tree(kv);
}

/* ---- a second NVLink tier -------------------------------------------- */

Test(topo, nvl_second_tier)
{
  const char *kv[] = {"gpus=1152", "gpus_per_node=576", "nics_per_node=576",
                      "nvl_rack=72", "nvl_oversubscription=2", NULL};
  struct cluster c;
  load("gb200-nvl72", kv, &c, false);
  struct want w = {0};
  w_add(&w, "gpu3-nvl_UP gpu70-nvl_DOWN"); /* one rack */
  w.lat = c.nvlink_lat_s;
  check(3, 70, &w);
  memset(&w, 0, sizeof w); /* racks 0 and 2 of node 0 */
  w_add(&w, "gpu3-nvl_UP node0-rack0-up_UP node0-rack2-up_DOWN "
        "gpu150-nvl_DOWN");
  w.lat = 2 * c.nvlink_lat_s;
  check(3, 150, &w);
  sg_link_t up = sg_link_by_name("node0-rack0-up_UP");
  cr_assert(up);
  cr_assert_float_eq(sg_link_get_bandwidth(up),
                     72 * c.gpu.nvlink_bw_Bps / 2, 1);
}

/* ---- bisection: a simulated all-to-all against its closed form -------- */

static long pending;
static void done(void *ctx, void *tag)
{
  (void)ctx;
  (void)tag;
  pending--;
}

/* All-to-all of `bytes` between every pair of GPUs; returns its time. */
static double alltoall(const struct cluster *c, double bytes)
{
  sgb_init(done, NULL);
  double t0 = sgb_now();
  for (long a = 0; a < c->gpus; a++)
    for (long b = 0; b < c->gpus; b++)
      if (a != b) {
        pending++;
        sgb_comm(host(a), host(b), bytes, NULL);
      }
  sgb_run();
  cr_assert_eq(pending, 0);
  return sgb_now() - t0;
}

/* An 8x2 torus of one-GPU nodes, dimension-ordered: each +x link carries
 * the flows of its row whose x distance forward is 1 to 4 (a tie goes +),
 * 1+2+3+4 = 10 per destination row, 2 rows: 20 flows, against 12 on a -x
 * link, 8 on a y link; NICs carry 15 at 4 links' bandwidth.  Max-min
 * gives the +x flows 1/20 of a link throughout, so the all-to-all takes
 * 20 x bytes / link bandwidth (plus a few microseconds of latency).  Its
 * bisection (x halves) is 2 rows x 2 links = 4 links each way. */
Test(topo, torus_alltoall_closed_form)
{
  const char *kv[] = {"gpus=16", "gpus_per_node=1", "topology=torus",
                      "torus=8x2", NULL};
  struct cluster c;
  load("dgx-h100", kv, &c, false);
  double L = c.nic.bw_Bps / 4, S = 1e9;
  double T = alltoall(&c, S);
  double want = 20 * S / L;
  cr_assert(fabs(T - want) / want < 1e-4, "%g s, closed form %g s", T, want);
  /* The bisection it measures: 8 x 8 x S bytes cross each way in T, 80 %
   * of the 4 links (the ties all go +). */
  double bisect = 64 * S / T;
  cr_assert(fabs(bisect / (4 * L) - 0.8) < 1e-3, "%g of the bisection",
            bisect / (4 * L));
}

/* A rail-only fabric of 4 units of 2 nodes under one pod, leaves at 1:2:
 * a rail leaf's up-link carries its 2 NICs' traffic to the 6 other nodes
 * at half their bandwidth.  Each GPU sends 8 x 6 flows off its unit,
 * 7 + 8 in it (NVLink and the leaf); per rail, a leaf's up-link carries
 * 2 NICs x 6 nodes x 8 GPUs' flows (forwarded onto the rail by PXN) =
 * 96 flows at B (one NIC's bandwidth): 96 S / B; the NIC carries 8 GPUs x
 * 7 nodes = 56 flows at B: less.  So the all-to-all takes 96 S / B; with
 * leaves at 1:1 it would take 56 S / B, NIC-bound. */
Test(topo, rail_only_alltoall_closed_form)
{
  const char *kv[] = {"gpus=64", "topology=rail-only", "nodes_per_leaf=2",
                      "oversubscription=2", NULL};
  struct cluster c;
  load("dgx-h100", kv, &c, false);
  double B = c.nic.bw_Bps, S = 1e8;
  double T = alltoall(&c, S);
  double want = 96 * S / B;
  cr_assert(fabs(T - want) / want < 1e-3, "%g s, closed form %g s", T, want);
}

/* ---- bad parameters --------------------------------------------------- */

static void refused(const char *const *kv, const char *msg)
{
  struct cluster c;
  struct weft_err err = {0};
  cr_assert_neq(resolve("dgx-h100", kv, &c, &err), 0, "accepted");
  cr_assert(strstr(err.msg, msg), "message: %s", err.msg);
}

Test(topo, bad_parameters)
{
  const char *t1[] = {"gpus=64", "topology=torus", "torus=4x4", NULL};
  refused(t1, "--torus: 4x4 is 16 nodes, but the cluster has 8");
  const char *t2[] = {"gpus=64", "topology=torus", NULL};
  refused(t2, "topology torus needs its dimensions");
  const char *t3[] = {"gpus=64", "topology=torus", "torus=8x1", NULL};
  refused(t3, "--torus: '8x1' is not AxB or AxBxC");
  const char *t4[] = {"gpus=64", "topology=torus", "torus=2x2x2x1", NULL};
  refused(t4, "more than 3 dimensions");
  const char *d1[] = {"gpus=2048", "gpus_per_node=4", "topology=dragonfly",
                      "nodes_per_leaf=4", "routers_per_group=4",
                      "global_links=3", NULL};
  refused(d1, "--global_links: 32 groups need 31 global links per group "
          "to reach each other, and 4 routers x 3 global links give 12");
  const char *d2[] = {"gpus=64", "topology=dragonfly",
                      "dragonfly_routing=valiant", NULL};
  refused(d2, "valiant routing needs 3 groups or more");
  const char *d3[] = {"gpus=64", "topology=dragonfly",
                      "dragonfly_routing=ugal", NULL};
  refused(d3, "unknown routing 'ugal'; expected minimal, valiant or "
          "adaptive");
  const char *x1[] = {"gpus=64", "topology=mesh", NULL};
  refused(x1, "--topology: unknown topology 'mesh'");
  const char *x2[] = {"gpus=64", "torus=2x4", NULL};
  refused(x2, "--torus: not a setting of topology fat-tree (the default)");
  const char *x3[] = {"gpus=64", "topology=torus", "torus=2x4",
                      "oversubscription=2", NULL};
  refused(x3, "--oversubscription: not a setting of topology torus "
          "(--topology)");
  const char *n1[] = {"gpus=64", "nvl_rack=3", NULL};
  refused(n1, "--nvl_rack: 3 GPUs per NVLink switch do not divide 8");
  const char *n2[] = {"gpus=64", "nvl_oversubscription=2", NULL};
  refused(n2, "no second NVLink tier to oversubscribe");
}

/* In-memory hosts carry the properties the XML's do. */
Test(topo, hosts_carry_properties)
{
  const char *kv[] = {"gpus=16", "topology=rail", NULL};
  struct cluster c;
  load("dgx-h100", kv, &c, false);
  sg_host_t h = host(13);
  cr_assert_str_eq(sg_host_get_property_value(h, "node"), "1");
  cr_assert_str_eq(sg_host_get_property_value(h, "local_rank"), "5");
  cr_assert(sg_host_get_property_value(h, "wattage_per_state"));
}

/* ---- the largest platforms (issue 41) ------------------------------------ */

/* A fat tree's route from topo.h's description: NVLink inside a node;
 * across nodes the two NICs, the leaf up-links when the leaf tier is
 * oversubscribed and the leaves differ, the pod up-links when the pod
 * tier is and the pods differ; 1, 3 or 5 switch hops of latency. */
static void fat_tree_want(const struct cluster *c, long a, long b,
                          struct want *w)
{
  int g = c->gpus_per_node, per = g / c->nics_per_node;
  long na = a / g, nb = b / g;
  memset(w, 0, sizeof *w);
  if (na == nb) {
    w_add(w, "gpu%ld-nvl_UP gpu%ld-nvl_DOWN", a, b);
    w->lat = c->nvlink_lat_s;
    return;
  }
  long la = na / c->nodes_per_leaf, lb = nb / c->nodes_per_leaf;
  long pa = la / c->leaves_per_pod, pb = lb / c->leaves_per_pod;
  bool leaf_up = la != lb && c->oversub > 1;
  w_add(w, "node%ld-nic%d_UP", na, (int)(a % g) / per);
  if (leaf_up)
    w_add(w, "leaf%ld-up_UP", la);
  if (pa != pb && c->pod_oversub > 1)
    w_add(w, "pod%ld-up_UP pod%ld-up_DOWN", pa, pb);
  if (leaf_up)
    w_add(w, "leaf%ld-up_DOWN", lb);
  w_add(w, "node%ld-nic%d_DOWN", nb, (int)(b % g) / per);
  int hops = la == lb ? 1 : pa == pb ? 3 : 5;
  w->lat = 2 * c->nic.lat_s + hops * c->switch_lat_s;
}

/* 131072 GPUs built in memory (issue 41's platform): every host, the
 * last one's properties, and the routes of the pairs at the ends, across
 * the last node, leaf and pod boundaries and of 4000 pseudo-random pairs
 * against the oracle. */
static void check_fat_tree_large(const char *const *kv)
{
  struct cluster c;
  load("dgx-h100", kv, &c, false);
  cr_assert_eq(c.gpus, 131072);
  cr_assert_eq((long)sg_host_count(), 131072L);
  sg_host_t h = host(131071);
  cr_assert_str_eq(sg_host_get_property_value(h, "node"), "16383");
  cr_assert_str_eq(sg_host_get_property_value(h, "local_rank"), "7");
  long g = c.gpus_per_node, leaf = g * c.nodes_per_leaf;
  long pod = leaf * c.leaves_per_pod, last = c.gpus - 1;
  long pairs[][2] = {{0, 1},           {last, last - 1},   {0, last},
                     {last, 0},        {last - g, last},   {last - leaf, last},
                     {last, last - pod}, {pod - 1, pod},   {leaf - 1, leaf}};
  struct want w;
  for (size_t i = 0; i < sizeof pairs / sizeof pairs[0]; i++) {
    fat_tree_want(&c, pairs[i][0], pairs[i][1], &w);
    check(pairs[i][0], pairs[i][1], &w);
  }
  unsigned long x = 12345;
  for (int i = 0; i < 4000; i++) {
    x = x * 6364136223846793005UL + 1442695040888963407UL;
    long a = (long)((x >> 33) % (unsigned long)c.gpus);
    x = x * 6364136223846793005UL + 1442695040888963407UL;
    long b = (long)((x >> 33) % (unsigned long)c.gpus);
    if (a == b)
      continue;
    fat_tree_want(&c, a, b, &w);
    check(a, b, &w);
  }
}

Test(topo, fat_tree_131072)
{
  const char *kv[] = {"gpus=131072", NULL};
  check_fat_tree_large(kv);
}

Test(topo, fat_tree_131072_oversubscribed)
{
  const char *kv[] = {"gpus=131072", "oversubscription=2",
                      "pod_oversubscription=3", NULL};
  check_fat_tree_large(kv);
}

/* ---- parts against hand counts ----------------------------------------- */

static void parts_of(const char *const *kv, struct topo_parts *p)
{
  struct cluster c;
  struct weft_err err = {0};
  cr_assert_eq(resolve("dgx-h100", kv, &c, &err), 0, "%s", err.msg);
  topo_parts(&c, p);
}

Test(topo, parts_hand_counts)
{
  struct topo_parts p;
  /* 64 DGX H100 in 2 units of 32: a unit's leaves take 256 NIC ports and
   * send 256 up: 512 ports, 8 switches of 64, twice; 512 spine ports, 8
   * spines.  Cables: 512 NIC + 512 leaf-spine. */
  const char *f1[] = {"gpus=512", NULL};
  parts_of(f1, &p);
  cr_assert_eq(p.switches[0], 16);
  cr_assert_eq(p.switches[1], 8);
  cr_assert_eq(p.switches[2], 0);
  cr_assert_eq(p.cables, 1024);
  /* Rail-only, 2048 nodes: each of 8 rails a two-tier Clos, 64 leaves of
   * 32 nodes (32 up) and 2048 / 64 = 32 spines. */
  const char *r1[] = {"gpus=16384", "topology=rail-only", NULL};
  parts_of(r1, &p);
  cr_assert_eq(p.switches[0], 512);
  cr_assert_eq(p.switches[1], 256);
  cr_assert_eq(p.switches[2], 0);
  cr_assert_eq(p.cables, 16384 + 16384);
  /* Rail-only of 64 nodes: one 64-port switch per rail, no spine. */
  const char *r2[] = {"gpus=512", "topology=rail-only", NULL};
  parts_of(r2, &p);
  cr_assert_eq(p.switches_all, 8);
  cr_assert_eq(p.cables, 512);
  /* Torus 4x4x4: no switch, 3 cables per node. */
  const char *t1[] = {"gpus=512", "topology=torus", "torus=4x4x4", NULL};
  parts_of(t1, &p);
  cr_assert_eq(p.switches_all, 0);
  cr_assert_eq(p.cables, 192);
  /* Dragonfly: 32 nodes of 4 NICs, 2 per router (16 routers), 4 routers a
   * group (4 groups), 2 global links a router: 8 per group, 8 / 3 = 2 per
   * pair.  Ports per router: 8 NIC + 3 local; 6 pairs x 2 links x 2 ends
   * global.  Cables: 128 NIC + 4 groups x 6 local + 12 global. */
  const char *d1[] = {"gpus=128", "gpus_per_node=4", "topology=dragonfly",
                      "nodes_per_leaf=2", "routers_per_group=4",
                      "global_links=2", NULL};
  parts_of(d1, &p);
  cr_assert_eq(p.switches_all, 16);
  cr_assert_eq(p.ports_all, 16 * (8 + 3) + 24);
  cr_assert_eq(p.cables, 128 + 24 + 12);
}

/* weft platform's flat XML of the in-memory topologies routes as the
 * in-memory zone does (check_fat_tree loads platgen's XML whatever the
 * topology). */
Test(topo, flat_xml_is_the_zone_rail)
{
  const char *kv[] = {"gpus=64", "topology=rail", "nodes_per_leaf=2",
                      "oversubscription=2", NULL};
  check_fat_tree(kv);
}

Test(topo, flat_xml_is_the_zone_torus_and_dragonfly)
{
  const char *kv[] = {"gpus=48", "gpus_per_node=4", "topology=dragonfly",
                      "nodes_per_leaf=1", "routers_per_group=3",
                      "global_links=1", "dragonfly_routing=valiant", NULL};
  check_fat_tree(kv);
}

Test(topo, flat_xml_is_the_zone_torus)
{
  const char *kv[] = {"gpus=96", "topology=torus", "torus=3x4", NULL};
  check_fat_tree(kv);
}

/* The table of fabrics: every entry named, found by its name in any case,
 * with every operation a fabric must have; the fabric-only settings of
 * two entries never overlap except the tiers' own. */
Test(topo, table_of_fabrics)
{
  for (int t = 0; t < TOPO_COUNT; t++) {
    const struct topo_ops *f = topo_fabric((enum topology)t);
    cr_assert(f->name && *f->name, "entry %d has no name", t);
    cr_expect_eq(topo_fabric_named(f->name), t, "%s", f->name);
    cr_expect_str_eq(topology_name((enum topology)t), f->name);
    cr_expect(f->size && f->fill && f->link_name && f->route && f->parts &&
                  f->describe && f->span_hops,
              "%s lacks an operation", f->name);
    cr_expect(f->no_spread || f->spread_block,
              "%s: spread needs its blocks", f->name);
    cr_expect(!f->rail_tiers || f->rails, "%s", f->name);
  }
  cr_expect_eq(topo_fabric_named("RAIL-ONLY"), TOPO_RAIL_ONLY);
  cr_expect_eq(topo_fabric_named("hypercube"), -1);
  cr_expect(topo_fabric(TOPO_TORUS)->node_torus);
  cr_expect(!topo_fabric(TOPO_FAT_TREE)->node_torus);
}

/* The help of topology= (a fixed string in cluster.c's key table) names
 * every fabric of the table, so that a new entry cannot be left out. */
Test(topo, help_names_every_fabric)
{
  const char *help = cluster_key_help(CK_TOPOLOGY);
  for (int t = 0; t < TOPO_COUNT; t++) {
    const char *name = topo_fabric((enum topology)t)->name;
    cr_assert(strstr(help, name) != NULL, "topology= help lacks %s", name);
  }
}
