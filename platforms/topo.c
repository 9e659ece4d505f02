/*
 * topo.c - the table of fabrics and the links and routes they build
 * (topo.h).
 *
 * One entry per topology in `fabrics` at the end of this file; the
 * sections before it are the entries' functions, fabric by fabric (the
 * tiered fabrics, fat tree, rail, rail-only and multi-plane, share
 * theirs, told apart by the entry's rails and rail_tiers).  What every
 * fabric shares is here first: the NVLink tiers and the NICs, routes
 * inside a node and PXN forwarding onto the destination's rail, the
 * parts' radix, power and price.
 */
#include "platforms/topo.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "sim/base/units.h"
#include "sim/base/xalloc.h"

static const struct topo_ops fabrics[TOPO_COUNT];

const struct topo_ops *topo_fabric(enum topology t) { return &fabrics[t]; }

int topo_fabric_named(const char *name)
{
  for (int t = 0; t < TOPO_COUNT; t++)
    if (strcasecmp(name, fabrics[t].name) == 0)
      return t;
  return -1;
}

static const struct topo_ops *fab(const struct cluster *c)
{
  return &fabrics[c->topology];
}

/* Links down change the routes of some GPUs only (topo.h): their XML is
 * the flat zone of this module's routes. */
bool topo_xml_hierarchical(const struct cluster *c)
{
  return fab(c)->xml_hierarchical && c->nvl_rack == c->gpus_per_node &&
         c->ndown == 0;
}

bool topo_forwards(const struct cluster *c)
{
  return fab(c)->forwards && fab(c)->forwards(c);
}

/* Index of the pair x < y among n: 0 .. n(n-1)/2 - 1. */
static long pair_index(long x, long y, long n)
{
  return x * (2 * n - x - 1) / 2 + (y - x - 1);
}

static long pairs(long n) { return n * (n - 1) / 2; }

/* The pair x < y of index p among n (pair_index inverted). */
static void pair_of(long p, long n, long *x, long *y)
{
  long i = 0;
  while (p >= n - 1 - i) {
    p -= n - 1 - i;
    i++;
  }
  *x = i;
  *y = i + 1 + p;
}

static long ceil_div(long a, long b) { return (a + b - 1) / b; }

/* ---- common: NVLink tiers, NICs, routes inside a node ------------------ */

int topo_build(struct topo *t, const struct cluster *c, struct weft_err *err)
{
  (void)err;
  memset(t, 0, sizeof *t);
  t->c = *c;
  t->racks = c->gpus_per_node / c->nvl_rack;
  long n = 0;
  t->b_nvl = n;
  n += c->gpus;
  t->b_rack = n;
  if (t->racks > 1)
    n += (long)c->nodes * t->racks;
  t->b_nic = n;
  n += (long)c->nodes * c->nics_per_node;
  t->b_leaf = t->b_pod = t->b_local = t->b_global = t->b_torus = n;
  n = fab(c)->size(t, n);
  t->nlinks = n;
  t->link = xcalloc((size_t)n, sizeof *t->link);

  for (long r = 0; r < c->gpus; r++)
    t->link[t->b_nvl + r] = (struct topo_link){c->gpu.nvlink_bw_Bps,
                                               c->nvlink_lat_s / 2, TL_NVL};
  for (long i = t->b_rack; i < t->b_nic; i++)
    t->link[i] = (struct topo_link){
        c->nvl_rack * c->gpu.nvlink_bw_Bps / c->nvl_oversub, 0, TL_RACK_UP};
  for (long i = t->b_nic; i < t->b_leaf; i++) /* slow_nic: degraded */
    t->link[i] = (struct topo_link){
        c->nic.bw_Bps / cluster_nic_slowdown(c, (int)((i - t->b_nic) /
                                                       c->nics_per_node),
                                             (int)((i - t->b_nic) %
                                                   c->nics_per_node)),
        c->nic.lat_s, TL_NIC};
  fab(c)->fill(t);
  /* Up-links with cables down keep the share of the cables left; the
   * NIC links of a node with NICs down, the share of its NICs left
   * (topo.h). */
  for (int i = 0; i < c->ndown; i++)
    if (c->down[i].nic < 0)
      t->link[c->down[i].link].bw *=
          (double)(c->down[i].of - c->down[i].cables) / c->down[i].of;
  for (long i = t->b_nic; i < t->b_leaf && c->ndown; i++) {
    long node = (i - t->b_nic) / c->nics_per_node;
    int down = 0;
    for (int j = 0; j < c->ndown; j++)
      down += c->down[j].node == node;
    t->link[i].bw *= (double)(c->nics_per_node - down) / c->nics_per_node;
  }
  return 0;
}

void topo_free(struct topo *t)
{
  free(t->link);
  t->link = NULL;
}

int topo_max_hops(const struct topo *t)
{
  int h = 16;
  for (int d = 0; d < t->c.torus_ndims; d++)
    h += t->c.torus_dim[d] / 2 + 1;
  return h;
}

void topo_link_name(const struct topo *t, long i, char *buf, size_t size)
{
  const struct cluster *c = &t->c;
  if (i < t->b_rack) {
    snprintf(buf, size, "gpu%ld-nvl", i - t->b_nvl);
  } else if (i < t->b_nic) {
    long j = i - t->b_rack;
    snprintf(buf, size, "node%ld-rack%ld-up", j / t->racks, j % t->racks);
  } else if (i < t->b_leaf) {
    long j = i - t->b_nic;
    snprintf(buf, size, "node%ld-nic%ld", j / c->nics_per_node,
             j % c->nics_per_node);
  } else {
    fab(c)->link_name(t, i, buf, size);
  }
}

bool topo_link_node_shared(const struct topo *t, long i)
{
  if (t->link[i].kind != TL_FABRIC)
    return false;
  return !fab(&t->c)->node_shared || fab(&t->c)->node_shared(t, i);
}

/* A route being built. */
struct topo_rb {
  const struct topo *t;
  struct topo_hop *h;
  int n;
  double lat; /* switch hops */
};

static void hop(struct topo_rb *r, long link, int down)
{
  r->h[r->n++] = (struct topo_hop){(int32_t)link, down};
}

static int local_of(const struct cluster *c, long rank)
{
  return (int)(rank % c->gpus_per_node);
}

static int nic_of(const struct cluster *c, long rank)
{
  return local_of(c, rank) / (c->gpus_per_node / c->nics_per_node);
}

/* GPU a to GPU b of the same node. */
static void intra(struct topo_rb *r, long a, long b)
{
  const struct topo *t = r->t;
  const struct cluster *c = &t->c;
  long node = a / c->gpus_per_node;
  int ra = local_of(c, a) / c->nvl_rack, rb_ = local_of(c, b) / c->nvl_rack;
  hop(r, t->b_nvl + a, 0);
  if (ra != rb_) {
    /* Up to the second NVLink tier and down: one more switch crossing,
     * as long as the first. */
    r->lat += c->nvlink_lat_s;
    if (c->nvl_oversub > 1) {
      hop(r, t->b_rack + node * t->racks + ra, 0);
      hop(r, t->b_rack + node * t->racks + rb_, 1);
    }
  }
  hop(r, t->b_nvl + b, 1);
}

static long nic_link(const struct topo *t, long node, int k)
{
  return t->b_nic + node * t->c.nics_per_node + k;
}

/* Whether link i is an up-link with cables down (c->down: at most
 * WEFT_MAX_SLOW entries). */
static bool up_degraded(const struct topo *t, long i)
{
  for (int j = 0; j < t->c.ndown; j++)
    if (t->c.down[j].nic < 0 && t->c.down[j].link == i)
      return true;
  return false;
}

int topo_route(const struct topo *t, long a, long b, struct topo_hop *hops,
               double *switch_lat)
{
  const struct cluster *c = &t->c;
  struct topo_rb r = {t, hops, 0, 0};
  long na = a / c->gpus_per_node, nb = b / c->gpus_per_node;
  if (na == nb) {
    intra(&r, a, b);
    *switch_lat = r.lat;
    return r.n;
  }
  int ka = nic_of(c, a), kb = nic_of(c, b);
  if (ka != kb && topo_forwards(c)) {
    /* To the GPU of a's node on b's rail, over NVLink (PXN). */
    int per = c->gpus_per_node / c->nics_per_node;
    long p = na * c->gpus_per_node + (long)kb * per + local_of(c, a) % per;
    intra(&r, a, p);
    ka = kb;
  }
  hop(&r, nic_link(t, na, ka), 0);
  fab(c)->route(&r, na, ka, nb, kb);
  hop(&r, nic_link(t, nb, kb), 1);
  *switch_lat = r.lat;
  return r.n;
}

void topo_parts(const struct cluster *c, struct topo_parts *p)
{
  memset(p, 0, sizeof *p);
  int P = c->planes > 0 ? c->planes : 1;
  int R = (c->sw.ports > 0 ? c->sw.ports : 64) * P;
  p->radix = R;
  long nics = (long)c->nodes * c->nics_per_node;
  p->nic_ports = nics * P;
  double links = fab(c)->parts(c, p);
  for (int t = 0; t < TOPO_TIERS; t++) {
    p->switches_all += p->switches[t];
    p->ports_all += p->ports[t];
  }
  /* a catalog switch may lack a power figure (Q3400: none found) */
  p->have_switch_power = (c->sw.ports > 0 && c->sw.max_w > 0) ||
                         p->switches_all == 0;
  p->power_w = (double)nics * c->nic.max_w +
               (c->sw.ports > 0 ? (double)p->switches_all * c->sw.max_w : 0);
  /* A torus's links join NICs and take the link price of the NIC's
   * switch generation (its optics and cable). */
  p->have_prices = c->nic.price > 0 && c->sw.ports > 0 &&
                   c->sw.link_price > 0 &&
                   (p->switches_all == 0 || c->sw.price > 0);
  p->cost_usd = p->have_prices
                    ? (double)nics * c->nic.price +
                          (double)p->switches_all * c->sw.price +
                          links * c->sw.link_price
                    : 0;
}

void topo_describe(FILE *f, const struct cluster *c)
{
  char b[48];
  fab(c)->describe(f, c,
                   units_fmt_human(c->switch_lat_s, UNIT_TIME, b, sizeof b));
  if (c->nvl_rack < c->gpus_per_node)
    fprintf(f, "  NVLink: two tiers, %d GPUs per first-tier switch domain, "
            "oversubscription %g\n  above it.\n", c->nvl_rack,
            c->nvl_oversub);
  if (c->ndown == 0)
    return;
  /* Links down (topo.h): each with what it keeps. */
  struct topo t;
  struct weft_err err = {0};
  if (topo_build(&t, c, &err))
    return;
  fprintf(f, "  Links down, their traffic rerouted (an up-link keeps the "
          "share of its cables\n  left; a node with NICs down, the share "
          "of its NICs left on each):\n");
  char name[64];
  for (int i = 0; i < c->ndown; i++) {
    const struct cluster_down *d = &c->down[i];
    topo_link_name(&t, d->link, name, sizeof name);
    if (d->nic < 0)
      fprintf(f, "    %s: %d of its %d cables down\n", name, d->cables,
              d->of);
    else
      fprintf(f, "    %s: down\n", name);
  }
  topo_free(&t);
}

/* Switch hops of a ring step in the closed form: 1 in a leaf, 3 across
 * leaves, 5 across pods. */
static int fat_tree_span_hops(long leaves, long pods)
{
  return pods > 1 ? 5 : leaves > 1 ? 3 : 1;
}

/* ---- tiered: fat tree, rail, rail-only, multi-plane --------------------- */

/* Leaves per switch position: a rail fabric has one per rail. */
static int tier_rails(const struct cluster *c)
{
  return fab(c)->rails ? c->nics_per_node : 1;
}

static long tiered_size(struct topo *t, long n)
{
  const struct cluster *c = &t->c;
  int k_rails = tier_rails(c);
  t->b_leaf = n;
  n += (long)c->leaves * k_rails;
  t->b_pod = n;
  n += (long)c->pods * (fab(c)->rail_tiers ? k_rails : 1);
  return n;
}

static void tiered_fill(struct topo *t)
{
  const struct cluster *c = &t->c;
  int k_rails = tier_rails(c);
  bool rl = fab(c)->rails;
  /* A leaf's up-link: what its down-links carry over the ratio; a rail
   * leaf's, its rail's NICs of the unit. */
  for (long i = t->b_leaf; i < t->b_pod; i++) {
    int leaf = (int)((i - t->b_leaf) / k_rails);
    int per = rl ? 1 : c->nics_per_node;
    t->link[i] = (struct topo_link){
        cluster_nodes_in_leaf(c, leaf) * per * c->nic.bw_Bps / c->oversub, 0,
        TL_FABRIC};
  }
  int pod_rails = fab(c)->rail_tiers ? k_rails : 1;
  for (long i = t->b_pod; i < t->nlinks; i++) {
    int pod = (int)((i - t->b_pod) / pod_rails);
    double bw = 0;
    for (int l = pod * c->leaves_per_pod;
         l < pod * c->leaves_per_pod + cluster_leaves_in_pod(c, pod); l++)
      bw += t->link[t->b_leaf + (long)l * k_rails].bw *
            (rl && pod_rails == 1 ? k_rails : 1);
    t->link[i] = (struct topo_link){bw / c->pod_oversub, 0, TL_FABRIC};
  }
}

static void tiered_link_name(const struct topo *t, long i, char *buf,
                             size_t size)
{
  const struct cluster *c = &t->c;
  int kr = tier_rails(c);
  if (i < t->b_pod) {
    long j = i - t->b_leaf;
    if (fab(c)->rails)
      snprintf(buf, size, "su%ld-rail%ld-up", j / kr, j % kr);
    else
      snprintf(buf, size, "leaf%ld-up", j);
  } else {
    long j = i - t->b_pod;
    if (fab(c)->rail_tiers)
      snprintf(buf, size, "pod%ld-rail%ld-up", j / kr, j % kr);
    else
      snprintf(buf, size, "pod%ld-up", j);
  }
}

/* A rail fabric's rails share the core only; a rail-only fabric's every
 * tier is per rail; a fat tree's tiers are the nodes'. */
static bool tiered_node_shared(const struct topo *t, long i)
{
  if (fab(&t->c)->rail_tiers)
    return false;
  if (fab(&t->c)->rails)
    return i >= t->b_pod;
  return true;
}

/* Leaf/pod tiers between NIC (na, ka) and NIC (nb, kb), excluding the
 * NICs.  ka, kb index the rail leaves (0 unless rails). */
static void tiered_route(struct topo_rb *r, long na, int ka, long nb, int kb)
{
  const struct topo *t = r->t;
  const struct cluster *c = &t->c;
  int kr = tier_rails(c);
  if (!fab(c)->rails)
    ka = kb = 0;
  long la = na / c->nodes_per_leaf, lb = nb / c->nodes_per_leaf;
  long pa = la / c->leaves_per_pod, pb = lb / c->leaves_per_pod;
  double sw = c->switch_lat_s;
  if (la == lb && ka == kb) {
    r->lat += sw;
    return;
  }
  /* An up-link is on the route where it can bind: above a ratio of 1,
   * or with cables down (topo.h). */
  long ua = t->b_leaf + la * kr + ka, ub = t->b_leaf + lb * kr + kb;
  long pr = fab(c)->rail_tiers ? kr : 1;
  long k = fab(c)->rail_tiers ? ka : 0;
  long qa = t->b_pod + pa * pr + k, qb = t->b_pod + pb * pr + k;
  bool up = c->oversub > 1, pod_up = pa != pb && c->pod_oversub > 1;
  r->lat += (pa == pb ? 3 : 5) * sw;
  if (up || up_degraded(t, ua))
    hop(r, ua, 0);
  if (pod_up || (pa != pb && up_degraded(t, qa)))
    hop(r, qa, 0);
  if (pod_up || (pa != pb && up_degraded(t, qb)))
    hop(r, qb, 1);
  if (up || up_degraded(t, ub))
    hop(r, ub, 1);
}

static double tiered_parts(const struct cluster *c, struct topo_parts *p)
{
  int P = c->planes > 0 ? c->planes : 1;
  int R = p->radix;
  bool rl = fab(c)->rails;
  int kr = rl ? c->nics_per_node : 1;
  long groups = fab(c)->rail_tiers ? kr : 1; /* spine and core groups */
  /* NIC ports under a leaf switch per node: a rail leaf takes one NIC of
   * each node. */
  long per_leaf = rl ? P : (long)c->nics_per_node * P;
  for (int pod = 0; pod < c->pods; pod++) {
    long spine_down = 0;
    for (int l = pod * c->leaves_per_pod;
         l < pod * c->leaves_per_pod + cluster_leaves_in_pod(c, pod); l++) {
      long down = cluster_nodes_in_leaf(c, l) * per_leaf;
      long up = c->leaves > 1 ? (long)ceil((double)down / c->oversub) : 0;
      p->switches[0] += kr * ceil_div(down + up, R);
      p->ports[0] += kr * (down + up);
      spine_down += kr * up;
    }
    if (c->leaves > 1) {
      long up = c->pods > 1
                    ? (long)ceil((double)spine_down / c->pod_oversub)
                    : 0;
      long per = (spine_down + up) / groups;
      p->switches[1] += groups * ceil_div(per, R);
      p->ports[1] += spine_down + up;
      p->ports[2] += up;
    }
  }
  if (c->pods > 1)
    p->switches[2] = groups * ceil_div(p->ports[2] / groups, R);
  /* Cables: NIC to leaf, leaf to spine, spine to core. */
  p->cables = p->nic_ports + (p->ports[1] - p->ports[2]) + p->ports[2];
  return (double)p->cables;
}

static int tiered_spread_block(const struct cluster *c)
{
  return c->leaves_per_pod;
}

static void tiered_describe(FILE *f, const struct cluster *c, const char *hop)
{
  fprintf(f, "  Fabric: %s; %d %s of up to %d nodes, %d pod(s) of up to "
          "%d;\n  oversubscription %g (leaf) and %g (pod); switch hop "
          "%s.\n", fab(c)->name, c->leaves,
          fab(c)->rails ? "scalable unit(s) (a leaf switch per rail)"
                        : "leaf group(s)",
          c->nodes_per_leaf, c->pods, c->leaves_per_pod, c->oversub,
          c->pod_oversub, hop);
}

/* Fat tree: nothing beyond the tiers. */

/* Rail: a leaf per rail in each scalable unit; spines join the rails. */
static bool rail_forwards(const struct cluster *c) { return c->pxn; }

static void rail_describe(FILE *f, const struct cluster *c, const char *hop)
{
  tiered_describe(f, c, hop);
  fprintf(f, "  Rails: NIC k of every node of a unit on leaf k; spines "
          "join the rails.\n  PXN %s: off-rail traffic %s.\n",
          c->pxn ? "on" : "off",
          c->pxn ? "crosses NVLink to the GPU on the destination's rail "
                   "first"
                 : "goes leaf, spine, leaf");
}

/* Rail-only: each rail its own Clos, sized by the switch's radix unless
 * the file or the flags size its units (Wang et al., 2023). */
static bool rail_only_forwards(const struct cluster *c)
{
  (void)c;
  return true; /* no spine joins the rails */
}

/* A rail-only fabric's rail switch takes as many nodes as it has ports
 * while the rail fits in one switch, else half (the rest go up), and a
 * rail's spines a leaf per port (R x R / 2 nodes in two tiers). */
static int rail_only_resolve(const struct cluster_desc *d, struct cluster *c,
                             struct weft_err *err)
{
  (void)err;
  int R = c->sw.ports > 0 ? c->sw.ports : 64;
  if (!cluster_desc_by_user(d, CK_NODES_PER_LEAF))
    c->nodes_per_leaf = c->nodes <= R ? R : R / 2;
  if (!cluster_desc_by_user(d, CK_LEAVES_PER_POD))
    c->leaves_per_pod = R;
  c->leaves = (c->nodes + c->nodes_per_leaf - 1) / c->nodes_per_leaf;
  c->pods = (c->leaves + c->leaves_per_pod - 1) / c->leaves_per_pod;
  return 0;
}

static void rail_only_describe(FILE *f, const struct cluster *c,
                               const char *hop)
{
  tiered_describe(f, c, hop);
  fprintf(f, "  Rails only: no spine joins the rails; off-rail traffic "
          "crosses NVLink to\n  the GPU on the destination's rail "
          "(Wang et al., 2023).\n");
}

/* Multi-plane: every NIC port on a plane of its own. */
static int multi_plane_resolve(const struct cluster_desc *d,
                               struct cluster *c, struct weft_err *err)
{
  (void)err;
  c->planes = d->set[CK_PLANES] ? (int)d->num[CK_PLANES] : 2;
  return 0;
}

static void multi_plane_describe(FILE *f, const struct cluster *c,
                                 const char *hop)
{
  tiered_describe(f, c, hop);
  fprintf(f, "  %d planes: each NIC port on its own plane at 1/%d of the "
          "NIC's bandwidth;\n  traffic striped evenly over the planes "
          "loads each alike, so max-min\n  sharing over them equals one "
          "plane of their summed bandwidth (written here).\n",
          c->planes, c->planes);
}

/* ---- dragonfly -------------------------------------------------------- */

/* Adaptive routing (routing="adaptive") stands for Slingshot's: a
 * packet between two routers of a group takes the direct local link or a
 * two-hop path through any third router of the group, chosen per packet
 * by load (UGAL: Kim, Dally, Scott, Abts, "Technology-Driven, Highly-
 * Scalable Dragonfly Topology", ISCA 2008, sec. 4; Slingshot: De Sensi
 * et al., "An In-Depth Analysis of the Slingshot Interconnect", SC20,
 * sec. II; NERSC's Perlmutter architecture page: "fully dynamic routing").
 * A SimGrid flow takes one static route, so the per-packet spread is
 * written as its fluid limit: each router gets one port link into the
 * group's local fabric (up: what it sends into the group, down: what it
 * takes out), and a local leg x -> y crosses x's port up and y's port
 * down.  The port's bandwidth is what the group carries per router under
 * a permutation when every router sends T to another: router x's a - 1
 * links (local_links each, B bytes/s) carry its own direct share d <= L B,
 * the first legs of its two-hop share T - d and the second legs it relays
 * for others, T - d; so 2T - d <= (a - 1) L B gives T <= a L B / 2 (a 2-
 * router group: L B, the direct link; a = 2p, Dally's balanced group: the
 * router's p endpoints' bandwidth).  Left out: the per-packet choice's
 * imperfection (queues it estimates, not the global optimum), the extra
 * switch hop of two-hop packets (latency stays minimal's, as at light
 * load), uneven loads where a busy pair could borrow idle routers' links
 * beyond a L B / 2 (up to (a - 1) L B for a pair alone).  Between two
 * groups the same fluid limit joins their per_pair global links into one
 * link of per_pair x B: packets spread over every minimal path (every
 * exit router), where a static route per pair of nodes would hash the
 * NCCL channels of a pair onto one link (all 4 of Perlmutter's on one
 * 25 GB/s link).  Left out there: non-minimal routes through a third
 * group (they relieve a pair of groups short of links; weft sizes the
 * global links to the job's groups, so a job's pairs have more links than
 * on the whole machine) and the local hops to the exit routers, written
 * as the sender's port only. */
static long df_local_count(const struct cluster *c)
{
  return c->adaptive ? c->routers_per_group : pairs(c->routers_per_group);
}

static double df_port_bw_Bps(const struct cluster *c)
{
  return c->routers_per_group * c->local_links * c->nic.bw_Bps / 2.0;
}

static long df_size(struct topo *t, long n)
{
  const struct cluster *c = &t->c;
  t->b_local = n;
  n += (long)c->groups * df_local_count(c);
  t->per_pair = c->groups > 1 ? c->routers_per_group * c->global_links /
                                    (c->groups - 1)
                              : 0;
  t->b_global = n;
  n += pairs(c->groups) * (c->adaptive ? 1 : t->per_pair);
  return n;
}

static void df_fill(struct topo *t)
{
  const struct cluster *c = &t->c;
  double local_bw = c->adaptive ? df_port_bw_Bps(c)
                                 : c->local_links * c->nic.bw_Bps;
  for (long i = t->b_local; i < t->b_global; i++)
    t->link[i] = (struct topo_link){local_bw, 0, TL_FABRIC};
  double global_bw = c->adaptive ? t->per_pair * c->nic.bw_Bps
                                  : c->nic.bw_Bps;
  for (long i = t->b_global; i < t->nlinks; i++)
    t->link[i] = (struct topo_link){global_bw, 0, TL_FABRIC};
}

static void df_link_name(const struct topo *t, long i, char *buf,
                         size_t size)
{
  const struct cluster *c = &t->c;
  if (i < t->b_global && c->adaptive) {
    long j = i - t->b_local, a = c->routers_per_group;
    snprintf(buf, size, "g%ld-r%ld-port", j / a, j % a);
  } else if (i < t->b_global) {
    long j = i - t->b_local, a = c->routers_per_group, x, y;
    pair_of(j % pairs(a), a, &x, &y);
    snprintf(buf, size, "g%ld-r%ld-r%ld", j / pairs(a), x, y);
  } else if (c->adaptive) {
    long x, y;
    pair_of(i - t->b_global, c->groups, &x, &y);
    snprintf(buf, size, "g%ld-g%ld", x, y);
  } else {
    long j = i - t->b_global, x, y;
    pair_of(j / t->per_pair, c->groups, &x, &y);
    snprintf(buf, size, "g%ld-g%ld-%ld", x, y, j % t->per_pair);
  }
}

/* From router (g, x) to router (g, y) of one group (without the NICs). */
static void df_local(struct topo_rb *r, long g, long x, long y)
{
  const struct topo *t = r->t;
  long a = t->c.routers_per_group;
  if (x == y)
    return;
  r->lat += t->c.switch_lat_s;
  if (t->c.adaptive) { /* x's port up, y's port down (df_size) */
    hop(r, t->b_local + g * a + x, 0);
    hop(r, t->b_local + g * a + y, 1);
    return;
  }
  long lo = x < y ? x : y, hi = x < y ? y : x;
  hop(r, t->b_local + g * pairs(a) + pair_index(lo, hi, a), x > y);
}

/* The router of group g that holds global link j (of per_pair) to group
 * h: group g's links are dealt round-robin over its routers, the links to
 * group 0 first (h's place among g's peers, times per_pair, plus j). */
static long df_exit(const struct topo *t, long g, long h, long j)
{
  long idx = h < g ? h : h - 1;
  return (idx * t->per_pair + j) % t->c.routers_per_group;
}

/* Which of the per_pair links between two groups a pair of nodes takes:
 * the same for both directions (a hash of the unordered pair). */
static unsigned long pair_hash(long na, long nb)
{
  unsigned long lo = (unsigned long)(na < nb ? na : nb);
  unsigned long hi = (unsigned long)(na < nb ? nb : na);
  unsigned long h = lo * 0x9E3779B97F4A7C15UL ^ (hi + 0x632BE59BD9B4E019UL);
  h ^= h >> 29;
  h *= 0xBF58476D1CE4E5B9UL;
  return h ^ (h >> 32);
}

/* From router (g, x) to router (h, y) by the minimal route. */
static void df_minimal(struct topo_rb *r, long g, long x, long h, long y,
                       unsigned long hsh)
{
  const struct topo *t = r->t;
  const struct cluster *c = &t->c;
  if (g == h) {
    df_local(r, g, x, y);
    return;
  }
  long lo = g < h ? g : h, hi = g < h ? h : g;
  if (c->adaptive) {
    /* Spread over every exit: x's port up, the groups' links as one, y's
     * port down; the switch hops of a minimal route through an exit and
     * an entry router other than x and y (df_size). */
    hop(r, t->b_local + g * c->routers_per_group + x, 0);
    hop(r, t->b_global + pair_index(lo, hi, c->groups), g > h);
    hop(r, t->b_local + h * c->routers_per_group + y, 1);
    r->lat += 3 * c->switch_lat_s;
    return;
  }
  long j = (long)(hsh % (unsigned long)t->per_pair);
  long ex = df_exit(t, g, h, j), en = df_exit(t, h, g, j);
  df_local(r, g, x, ex);
  hop(r, t->b_global + pair_index(lo, hi, c->groups) * t->per_pair + j,
      g > h);
  r->lat += c->switch_lat_s;
  df_local(r, h, en, y);
}

static void df_route(struct topo_rb *r, long na, int ka, long nb, int kb)
{
  (void)ka;
  (void)kb;
  const struct cluster *c = &r->t->c;
  long ra = na / c->nodes_per_leaf, rb_ = nb / c->nodes_per_leaf;
  long a = c->routers_per_group;
  long ga = ra / a, gb = rb_ / a;
  unsigned long hsh = pair_hash(na, nb);
  r->lat += c->switch_lat_s; /* the first router */
  if (!c->valiant || ga == gb) {
    df_minimal(r, ga, ra % a, gb, rb_ % a, hsh);
    return;
  }
  /* Valiant: an intermediate group other than both, the same for both
   * directions of the pair. */
  long gi = (long)((hsh >> 16) % (unsigned long)(c->groups - 2));
  long lo_g = ga < gb ? ga : gb, hi_g = ga < gb ? gb : ga;
  if (gi >= lo_g)
    gi++;
  if (gi >= hi_g)
    gi++;
  long j = (long)(hsh % (unsigned long)r->t->per_pair);
  long in = df_exit(r->t, gi, ga, j); /* where the first leg lands */
  df_minimal(r, ga, ra % a, gi, in, hsh);
  df_minimal(r, gi, in, gb, rb_ % a, hsh);
}

static double df_parts(const struct cluster *c, struct topo_parts *p)
{
  long nics = (long)c->nodes * c->nics_per_node;
  long A = c->routers_per_group;
  long routers = c->leaves;
  long global_ends = 0;
  for (long r = 0; r < routers; r++) {
    long grp = r / A;
    long in_grp = routers - grp * A < A ? routers - grp * A : A;
    long endpoints = (long)cluster_nodes_in_leaf(c, (int)r) * c->nics_per_node;
    p->ports[0] += endpoints + (in_grp - 1) * c->local_links;
  }
  long per_pair = c->groups > 1 ? (long)c->routers_per_group *
                                      c->global_links / (c->groups - 1)
                                : 0;
  global_ends = 2 * pairs(c->groups) * per_pair;
  p->ports[0] += global_ends;
  p->switches[0] = routers;
  p->cables = nics + (p->ports[0] - nics - global_ends) / 2 + global_ends / 2;
  return (double)p->cables;
}

/* A router's endpoint ports: 16 on Slingshot's 64-port Rosetta (the rest:
 * 31 to the group, 17 global; De Sensi et al., SC20).  A preset's leaf
 * size is a fat tree's and does not carry over. */
static int df_resolve(const struct cluster_desc *d, struct cluster *c,
                      struct weft_err *err)
{
  c->oversub = c->pod_oversub = 1;
  if (!cluster_desc_by_user(d, CK_NODES_PER_LEAF)) {
    c->nodes_per_leaf = 16 / c->nics_per_node;
    if (c->nodes_per_leaf < 1)
      c->nodes_per_leaf = 1;
  }
  c->leaves = (c->nodes + c->nodes_per_leaf - 1) / c->nodes_per_leaf;
  c->pods = 1;
  c->routers_per_group = d->set[CK_ROUTERS_PER_GROUP]
                             ? (int)d->num[CK_ROUTERS_PER_GROUP] : 32;
  c->global_links = d->set[CK_GLOBAL_LINKS] ? (int)d->num[CK_GLOBAL_LINKS]
                                            : 17;
  c->local_links = d->set[CK_LOCAL_LINKS] ? (int)d->num[CK_LOCAL_LINKS] : 1;
  c->valiant = c->adaptive = false;
  if (d->set[CK_ROUTING]) {
    if (strcasecmp(d->text[CK_ROUTING], "valiant") == 0)
      c->valiant = true;
    else if (strcasecmp(d->text[CK_ROUTING], "adaptive") == 0)
      c->adaptive = true;
    else if (strcasecmp(d->text[CK_ROUTING], "minimal") != 0)
      return weft_errf(err, WEFT_EINVAL, "%s: unknown routing '%s'; "
                       "expected minimal, valiant or adaptive",
                       cluster_desc_where(d, CK_ROUTING),
                       d->text[CK_ROUTING]);
  }
  /* Routers are the leaf switches; a group is routers_per_group. */
  c->groups = (c->leaves + c->routers_per_group - 1) / c->routers_per_group;
  long ports = (long)c->routers_per_group * c->global_links;
  if (c->groups > 1 && ports < c->groups - 1)
    return weft_errf(err, WEFT_EINVAL, "%s: %d groups need %d global links "
                     "per group to reach each other, and %d routers x %d "
                     "global links give %ld",
                     cluster_desc_where(d, CK_GLOBAL_LINKS), c->groups,
                     c->groups - 1, c->routers_per_group, c->global_links,
                     ports);
  if (c->valiant && c->groups < 3)
    return weft_errf(err, WEFT_EINVAL, "%s: valiant routing needs 3 groups "
                     "or more (there are %d)",
                     cluster_desc_where(d, CK_ROUTING), c->groups);
  return 0;
}

static int df_spread_block(const struct cluster *c)
{
  return c->routers_per_group;
}

static void df_describe(FILE *f, const struct cluster *c, const char *hop)
{
  fprintf(f, "  Fabric: dragonfly; %d router(s) of up to %d nodes, %d "
          "group(s) of %d routers;\n  %d link(s) between two routers of "
          "a group, %d global links per router\n  (%d between two "
          "groups), %s routing; switch hop %s.\n", c->leaves,
          c->nodes_per_leaf, c->groups, c->routers_per_group,
          c->local_links, c->global_links,
          c->groups > 1 ? c->routers_per_group * c->global_links /
                              (c->groups - 1)
                        : 0,
          c->valiant ? "valiant" : c->adaptive ? "adaptive" : "minimal",
          hop);
  if (c->adaptive) {
    char b[48];
    fprintf(f, "  Adaptive: a local leg spreads over the direct link and "
            "the two-hop paths\n  of its group, written as one port per "
            "router of %s (routers x local\n  links x link / 2), the "
            "links between two groups as one.\n",
            units_fmt_human(df_port_bw_Bps(c), UNIT_BW, b, sizeof b));
  }
}

/* A dragonfly joins two routers by local_links links: a ring that leaves
 * a router sends all its channels through them (minimal routes, as the
 * simulation's), and so do the rings of the other groups of the same kind
 * on that router, which run the same collective at the same time (a
 * router's GPUs over the group's members on it).  Adaptive: through the
 * router's port into the group instead (df_size). */
static double df_span_bw_Bps(const struct cluster *c, long n, long leaves,
                             double bw_Bps)
{
  if (leaves <= 1)
    return bw_Bps;
  double on_router = (double)n / (double)leaves;
  double rings = (double)c->nodes_per_leaf * c->gpus_per_node / on_router;
  double port = c->adaptive ? df_port_bw_Bps(c)
                            : c->local_links * c->nic.bw_Bps;
  double link = port / (rings > 1 ? rings : 1);
  return link < bw_Bps ? link : bw_Bps;
}

/* ---- torus ------------------------------------------------------------ */

static long torus_size(struct topo *t, long n)
{
  t->b_torus = n;
  return n + (long)t->c.nodes * t->c.torus_ndims;
}

/* A torus node's NICs feed its 2d ports: each port gets 1/2d of them. */
static void torus_fill(struct topo *t)
{
  const struct cluster *c = &t->c;
  for (long i = t->b_torus; i < t->nlinks; i++)
    t->link[i] = (struct topo_link){
        c->nics_per_node * c->nic.bw_Bps / (2.0 * c->torus_ndims), 0,
        TL_FABRIC};
}

static void torus_link_name(const struct topo *t, long i, char *buf,
                            size_t size)
{
  long j = i - t->b_torus;
  snprintf(buf, size, "t%ld-d%ld", j / t->c.torus_ndims,
           j % t->c.torus_ndims);
}

static void torus_route(struct topo_rb *r, long na, int ka, long nb, int kb)
{
  (void)ka;
  (void)kb;
  const struct topo *t = r->t;
  const struct cluster *c = &t->c;
  int nd = c->torus_ndims;
  long ca[3] = {0}, cb[3] = {0}, stride[3];
  long s = 1;
  for (int d = 0; d < nd; d++) {
    stride[d] = s;
    ca[d] = (na / s) % c->torus_dim[d];
    cb[d] = (nb / s) % c->torus_dim[d];
    s *= c->torus_dim[d];
  }
  r->lat += c->switch_lat_s; /* a's router */
  long v = na;
  for (int d = 0; d < nd; d++) {
    long k = c->torus_dim[d];
    long delta = ((cb[d] - ca[d]) % k + k) % k;
    if (delta == 0)
      continue;
    bool plus = 2 * delta <= k;
    long steps = plus ? delta : k - delta;
    long x = ca[d];
    for (long i = 0; i < steps; i++) {
      if (plus) {
        hop(r, t->b_torus + v * nd + d, 0);
        x = (x + 1) % k;
      } else {
        long prev = (x - 1 + k) % k;
        long u = v + (prev - x) * stride[d];
        hop(r, t->b_torus + u * nd + d, 1);
        x = prev;
      }
      v = v - ((v / stride[d]) % k) * stride[d] + x * stride[d];
      r->lat += c->switch_lat_s;
    }
  }
}

/* No switches: each node's 2d ports, one cable per node and dimension.  A
 * torus cable carries nics x bw / 2d, not one port's bw: priced as that
 * many links of the port speed. */
static double torus_parts(const struct cluster *c, struct topo_parts *p)
{
  p->cables = (long)c->nodes * c->torus_ndims;
  return (double)p->cables * c->nics_per_node / (2.0 * c->torus_ndims);
}

/* Parse "AxB" or "AxBxC" into c->torus_dim. */
static int parse_torus(const struct cluster_desc *d, struct cluster *c,
                       struct weft_err *err)
{
  const char *where = cluster_desc_where(d, CK_TORUS);
  const char *s = d->text[CK_TORUS];
  int n = 0;
  while (*s) {
    if (n == 3)
      return weft_errf(err, WEFT_EINVAL, "%s: '%s' has more than 3 "
                       "dimensions", where, d->text[CK_TORUS]);
    char *end;
    long v = strtol(s, &end, 10);
    if (end != s && v > WEFT_MAX_NODES && (!*end || *end == 'x'))
      return weft_errf(err, WEFT_ELIMIT, "%s: '%s': a dimension of %.*s "
                       "nodes exceeds the limit of %d", where,
                       d->text[CK_TORUS], (int)(end - s), s, WEFT_MAX_NODES);
    if (end == s || v < 2 || (*end && *end != 'x'))
      return weft_errf(err, WEFT_EINVAL, "%s: '%s' is not AxB or AxBxC "
                       "(whole numbers of nodes, at least 2)", where,
                       d->text[CK_TORUS]);
    c->torus_dim[n++] = (int)v;
    s = *end ? end + 1 : end;
    if (*end && !*s)
      return weft_errf(err, WEFT_EINVAL, "%s: '%s' ends with 'x'", where,
                       d->text[CK_TORUS]);
  }
  c->torus_ndims = n;
  long prod = 1;
  for (int i = 0; i < n; i++)
    prod *= c->torus_dim[i];
  if (n < 2)
    return weft_errf(err, WEFT_EINVAL, "%s: '%s' has one dimension; a torus "
                     "has 2 or 3 (AxB or AxBxC)", where, d->text[CK_TORUS]);
  if (prod != c->nodes)
    return weft_errf(err, WEFT_EINVAL, "%s: %s is %ld nodes, but the "
                     "cluster has %d (%d GPUs of %d per node)", where,
                     d->text[CK_TORUS], prod, c->nodes, c->gpus,
                     c->gpus_per_node);
  return 0;
}

static int torus_resolve(const struct cluster_desc *d, struct cluster *c,
                         struct weft_err *err)
{
  c->oversub = c->pod_oversub = 1;
  if (!d->set[CK_TORUS])
    return weft_errf(err, WEFT_EINVAL, "%s: topology torus needs its "
                     "dimensions (torus=AxB or AxBxC, or --torus)",
                     cluster_desc_where(d, CK_TOPOLOGY));
  return parse_torus(d, c, err);
}

static void torus_describe(FILE *f, const struct cluster *c, const char *hop)
{
  fprintf(f, "  Fabric: torus of nodes, %d", c->torus_dim[0]);
  for (int d = 1; d < c->torus_ndims; d++)
    fprintf(f, "x%d", c->torus_dim[d]);
  fprintf(f, " with wrap-around links; each node's NICs feed its %d "
          "ports;\n  dimension-ordered routes, the shorter way round; "
          "switch hop %s.\n", 2 * c->torus_ndims, hop);
}

/* ---- links down (topo.h) ---------------------------------------------- */

/* The parallel cables up-link i of a tiered fabric stands for (per plane):
 * its leaf group's (pod's) down ports over the ratio, as tiered_parts
 * counts them; 0 where there is no tier above (one leaf group, one pod). */
static long up_cables(const struct topo *t, long i)
{
  const struct cluster *c = &t->c;
  int kr = tier_rails(c);
  bool rl = fab(c)->rails;
  if (i < t->b_pod) {
    if (c->leaves <= 1)
      return 0;
    int leaf = (int)((i - t->b_leaf) / kr);
    long down = (long)cluster_nodes_in_leaf(c, leaf) *
                (rl ? 1 : c->nics_per_node);
    return (long)ceil((double)down / c->oversub);
  }
  if (c->pods <= 1)
    return 0;
  int pod = (int)((i - t->b_pod) / (fab(c)->rail_tiers ? kr : 1));
  long spine_down = 0;
  for (int l = pod * c->leaves_per_pod;
       l < pod * c->leaves_per_pod + cluster_leaves_in_pod(c, pod); l++)
    spine_down += up_cables(t, t->b_leaf + (long)l * kr) *
                  (rl && !fab(c)->rail_tiers ? kr : 1);
  return (long)ceil((double)spine_down / c->pod_oversub);
}

/* The index of the link named `name`, or -1. */
static long link_named(const struct topo *t, const char *name)
{
  char buf[64];
  for (long i = 0; i < t->nlinks; i++) {
    topo_link_name(t, i, buf, sizeof buf);
    if (strcmp(buf, name) == 0)
      return i;
  }
  return -1;
}

/* One item of down_links, NAME[:CABLES], at p (up to a comma or the
 * end), into c->down. */
static int down_item(struct topo *t, struct cluster *c, const char *p,
                     size_t len, const char *where, struct weft_err *err)
{
  char name[64];
  const char *colon = memchr(p, ':', len);
  size_t nl = colon ? (size_t)(colon - p) : len;
  if (nl == 0 || nl >= sizeof name)
    return weft_errf(err, WEFT_EINVAL, "%s: '%.*s' is not a link's name "
                     "(NAME or NAME:CABLES)", where, (int)len, p);
  memcpy(name, p, nl);
  name[nl] = '\0';
  long i = link_named(t, name);
  char first[64], last[64];
  if (i < 0) {
    topo_link_name(t, t->b_nic, first, sizeof first);
    topo_link_name(t, t->b_leaf - 1, last, sizeof last);
    char ups[160] = "";
    if (t->nlinks > t->b_leaf) {
      char a[64], b[64];
      topo_link_name(t, t->b_leaf, a, sizeof a);
      topo_link_name(t, t->nlinks - 1, b, sizeof b);
      snprintf(ups, sizeof ups, ", up-links %s to %s", a, b);
    }
    return weft_errf(err, WEFT_EINVAL, "%s: no link '%s' on this cluster "
                     "(its NICs are %s to %s%s, as weft platform names "
                     "them)", where, name, first, last, ups);
  }
  if (i < t->b_nic)
    return weft_errf(err, WEFT_EINVAL, "%s: '%s' is an NVLink link; NVLink "
                     "has no other path to reroute over (a GPU whose "
                     "NVLink is down leaves the job): not modelled", where,
                     name);
  long cables = 1, of = 0;
  if (colon) {
    char *end = NULL;
    errno = 0;
    cables = isdigit((unsigned char)colon[1]) ? strtol(colon + 1, &end, 10)
                                               : -1;
    if (cables < 1 || errno || end != p + len)
      return weft_errf(err, WEFT_EINVAL, "%s: '%.*s': CABLES is a whole "
                       "number of cables down, 1 or more", where, (int)len,
                       p);
  }
  int node = -1, nic = -1;
  if (i < t->b_leaf) {
    if (colon)
      return weft_errf(err, WEFT_EINVAL, "%s: '%.*s': a NIC is down as a "
                       "whole; give %s without :CABLES", where, (int)len, p,
                       name);
    node = (int)((i - t->b_nic) / c->nics_per_node);
    nic = (int)((i - t->b_nic) % c->nics_per_node);
  } else {
    of = up_cables(t, i);
    if (of == 0)
      return weft_errf(err, WEFT_EINVAL, "%s: '%s' is on no route: with "
                       "one %s there is no tier above it", where, name,
                       i < t->b_pod ? "leaf group" : "pod");
    if (cables >= of)
      return weft_errf(err, WEFT_EINVAL, "%s: '%.*s': %s stands for %ld "
                       "cable(s); %ld down would cut it off (at most %ld)",
                       where, (int)len, p, name, of, cables, of - 1);
  }
  for (int j = 0; j < c->ndown; j++)
    if (c->down[j].link == i)
      return weft_errf(err, WEFT_EINVAL, "%s: '%s' is given twice", where,
                       name);
  if (c->ndown == WEFT_MAX_SLOW)
    return weft_errf(err, WEFT_ELIMIT, "%s: more than %d links", where,
                     WEFT_MAX_SLOW);
  c->down[c->ndown++] = (struct cluster_down){i, (int)cables, (int)of, node,
                                              nic};
  return 0;
}

/* Every node keeps a NIC up. */
static int down_check_nics(const struct cluster *c, const char *where,
                           struct weft_err *err)
{
  for (int i = 0; i < c->ndown; i++) {
    int down = 0;
    for (int j = 0; j < c->ndown; j++)
      down += c->down[j].node >= 0 && c->down[j].node == c->down[i].node;
    if (down == c->nics_per_node)
      return weft_errf(err, WEFT_EINVAL, "%s: every NIC of node %d is "
                       "down: it is cut off the fabric", where,
                       c->down[i].node);
  }
  return 0;
}

int topo_down_resolve(struct cluster *c, const char *spec, const char *where,
                      struct weft_err *err)
{
  if (fab(c)->size != tiered_size)
    return weft_errf(err, WEFT_EINVAL, "%s: links down are modelled on "
                     "fat-tree, rail, rail-only and multi-plane fabrics "
                     "(their up-links' parallel cables and their NICs), not "
                     "on a %s", where, fab(c)->name);
  c->ndown = 0;
  struct topo t;
  int rc = topo_build(&t, c, err);
  if (rc)
    return rc;
  for (const char *p = spec; !rc;) {
    size_t len = strcspn(p, ",");
    rc = down_item(&t, c, p, len, where, err);
    if (!p[len])
      break;
    p += len + 1;
  }
  if (!rc)
    rc = down_check_nics(c, where, err);
  topo_free(&t);
  if (rc)
    c->ndown = 0;
  return rc;
}

/* ---- the table -------------------------------------------------------- */

#define BIT(k) (UINT64_C(1) << (k))
#define TIERED_SETTINGS \
  (BIT(CK_LEAVES_PER_POD) | BIT(CK_OVERSUB) | BIT(CK_POD_OVERSUB))
#define TIERED_OPS                                                        \
  .spread_block = tiered_spread_block, .size = tiered_size,             \
  .fill = tiered_fill, .link_name = tiered_link_name,                   \
  .node_shared = tiered_node_shared, .route = tiered_route,             \
  .parts = tiered_parts

_Static_assert(CK_COUNT <= 64, "fabric settings are bits of a uint64_t");

/* NEEDSWORK: the closed form times a dragonfly's and a torus's rings with
 * the fat tree's switch hops (fat_tree_span_hops); their own counts would
 * change its predictions, so they wait for a validation of their own. */
static const struct topo_ops fabrics[TOPO_COUNT] = {
    [TOPO_FAT_TREE] = {.name = "fat-tree", .settings = TIERED_SETTINGS,
                       .xml_hierarchical = true, .alike = true, TIERED_OPS,
                       .describe = tiered_describe,
                       .span_hops = fat_tree_span_hops},
    [TOPO_RAIL] = {.name = "rail",
                   .settings = TIERED_SETTINGS | BIT(CK_PXN), .rails = true,
                   .alike = true, TIERED_OPS, .forwards = rail_forwards,
                   .describe = rail_describe,
                   .span_hops = fat_tree_span_hops},
    [TOPO_RAIL_ONLY] = {.name = "rail-only", .settings = TIERED_SETTINGS,
                        .rails = true, .rail_tiers = true, .alike = true,
                        TIERED_OPS, .resolve = rail_only_resolve,
                        .forwards = rail_only_forwards,
                        .describe = rail_only_describe,
                        .span_hops = fat_tree_span_hops},
    [TOPO_MULTI_PLANE] = {.name = "multi-plane",
                          .settings = TIERED_SETTINGS | BIT(CK_PLANES),
                          .xml_hierarchical = true, .alike = true,
                          TIERED_OPS, .resolve = multi_plane_resolve,
                          .describe = multi_plane_describe,
                          .span_hops = fat_tree_span_hops},
    [TOPO_DRAGONFLY] = {.name = "dragonfly",
                        .settings = BIT(CK_ROUTERS_PER_GROUP) |
                                    BIT(CK_GLOBAL_LINKS) |
                                    BIT(CK_LOCAL_LINKS) | BIT(CK_ROUTING),
                        .resolve = df_resolve,
                        .spread_block = df_spread_block, .size = df_size,
                        .fill = df_fill, .link_name = df_link_name,
                        .route = df_route, .parts = df_parts,
                        .describe = df_describe,
                        .span_hops = fat_tree_span_hops,
                        .span_bw_Bps = df_span_bw_Bps},
    [TOPO_TORUS] = {.name = "torus", .settings = BIT(CK_TORUS),
                    .node_torus = true,
                    .no_spread = "a torus has no pods or groups to spread "
                                 "over (placement spread is for fat trees, "
                                 "rail fabrics and dragonflies)",
                    /* The torus collectives read the torus from the
                     * job's node order. */
                    .no_random = "a random placement on a torus is not "
                                 "modelled (its collectives follow the "
                                 "torus from the job's node order)",
                    .resolve = torus_resolve, .size = torus_size,
                    .fill = torus_fill, .link_name = torus_link_name,
                    .route = torus_route, .parts = torus_parts,
                    .describe = torus_describe,
                    .span_hops = fat_tree_span_hops},
};
