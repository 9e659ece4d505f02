/*
 * topo.c - links and routes of every fabric (topo.h).
 */
#include "platforms/topo.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sim/base/xalloc.h"

bool topo_xml_hierarchical(const struct cluster *c)
{
  return (c->topology == TOPO_FAT_TREE || c->topology == TOPO_MULTI_PLANE) &&
         c->nvl_rack == c->gpus_per_node;
}

static bool rails(const struct cluster *c)
{
  return c->topology == TOPO_RAIL || c->topology == TOPO_RAIL_ONLY;
}

static bool tiered(const struct cluster *c)
{
  return c->topology == TOPO_FAT_TREE || c->topology == TOPO_MULTI_PLANE ||
         rails(c);
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

static long torus_nodes_links(const struct cluster *c)
{
  return (long)c->nodes * c->torus_ndims;
}

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
  t->b_leaf = n;
  int k_rails = rails(c) ? c->nics_per_node : 1;
  if (tiered(c))
    n += (long)c->leaves * k_rails;
  t->b_pod = n;
  if (tiered(c))
    n += (long)c->pods * (c->topology == TOPO_RAIL_ONLY ? k_rails : 1);
  t->b_local = n;
  if (c->topology == TOPO_DRAGONFLY) {
    n += (long)c->groups * pairs(c->routers_per_group);
    t->per_pair = c->groups > 1 ? c->routers_per_group * c->global_links /
                                      (c->groups - 1)
                                : 0;
  }
  t->b_global = n;
  if (c->topology == TOPO_DRAGONFLY)
    n += pairs(c->groups) * t->per_pair;
  t->b_torus = n;
  if (c->topology == TOPO_TORUS)
    n += torus_nodes_links(c);
  t->nlinks = n;
  t->link = xcalloc((size_t)n, sizeof *t->link);

  for (long r = 0; r < c->gpus; r++)
    t->link[t->b_nvl + r] = (struct topo_link){c->gpu.nvlink_bw_Bps,
                                               c->nvlink_lat_s / 2, TL_NVL};
  for (long i = t->b_rack; i < t->b_nic; i++)
    t->link[i] = (struct topo_link){
        c->nvl_rack * c->gpu.nvlink_bw_Bps / c->nvl_oversub, 0, TL_RACK_UP};
  for (long i = t->b_nic; i < t->b_leaf; i++)
    t->link[i] = (struct topo_link){c->nic.bw_Bps, c->nic.lat_s, TL_NIC};
  /* A leaf's up-link: what its down-links carry over the ratio; a rail
   * leaf's, its rail's NICs of the unit. */
  for (long i = t->b_leaf; i < t->b_pod; i++) {
    int leaf = (int)((i - t->b_leaf) / k_rails);
    int per = rails(c) ? 1 : c->nics_per_node;
    t->link[i] = (struct topo_link){
        cluster_nodes_in_leaf(c, leaf) * per * c->nic.bw_Bps / c->oversub, 0,
        TL_FABRIC};
  }
  int pod_rails = c->topology == TOPO_RAIL_ONLY ? k_rails : 1;
  for (long i = t->b_pod; i < t->b_local; i++) {
    int pod = (int)((i - t->b_pod) / pod_rails);
    double bw = 0;
    for (int l = pod * c->leaves_per_pod;
         l < pod * c->leaves_per_pod + cluster_leaves_in_pod(c, pod); l++)
      bw += t->link[t->b_leaf + (long)l * k_rails].bw *
            (rails(c) && pod_rails == 1 ? k_rails : 1);
    t->link[i] = (struct topo_link){bw / c->pod_oversub, 0, TL_FABRIC};
  }
  for (long i = t->b_local; i < t->b_global; i++)
    t->link[i] = (struct topo_link){c->local_links * c->nic.bw_Bps, 0,
                                    TL_FABRIC};
  for (long i = t->b_global; i < t->b_torus; i++)
    t->link[i] = (struct topo_link){c->nic.bw_Bps, 0, TL_FABRIC};
  /* A torus node's NICs feed its 2d ports: each port gets 1/2d of them. */
  for (long i = t->b_torus; i < t->nlinks; i++)
    t->link[i] = (struct topo_link){
        c->nics_per_node * c->nic.bw_Bps / (2.0 * c->torus_ndims), 0,
        TL_FABRIC};
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
  int kr = rails(c) ? c->nics_per_node : 1;
  if (i < t->b_rack) {
    snprintf(buf, size, "gpu%ld-nvl", i - t->b_nvl);
  } else if (i < t->b_nic) {
    long j = i - t->b_rack;
    snprintf(buf, size, "node%ld-rack%ld-up", j / t->racks, j % t->racks);
  } else if (i < t->b_leaf) {
    long j = i - t->b_nic;
    snprintf(buf, size, "node%ld-nic%ld", j / c->nics_per_node,
             j % c->nics_per_node);
  } else if (i < t->b_pod) {
    long j = i - t->b_leaf;
    if (rails(c))
      snprintf(buf, size, "su%ld-rail%ld-up", j / kr, j % kr);
    else
      snprintf(buf, size, "leaf%ld-up", j);
  } else if (i < t->b_local) {
    long j = i - t->b_pod;
    if (c->topology == TOPO_RAIL_ONLY)
      snprintf(buf, size, "pod%ld-rail%ld-up", j / kr, j % kr);
    else
      snprintf(buf, size, "pod%ld-up", j);
  } else if (i < t->b_global) {
    long j = i - t->b_local, a = c->routers_per_group, x, y;
    pair_of(j % pairs(a), a, &x, &y);
    snprintf(buf, size, "g%ld-r%ld-r%ld", j / pairs(a), x, y);
  } else if (i < t->b_torus) {
    long j = i - t->b_global, x, y;
    pair_of(j / t->per_pair, c->groups, &x, &y);
    snprintf(buf, size, "g%ld-g%ld-%ld", x, y, j % t->per_pair);
  } else {
    long j = i - t->b_torus;
    snprintf(buf, size, "t%ld-d%ld", j / c->torus_ndims, j % c->torus_ndims);
  }
}

bool topo_link_node_shared(const struct topo *t, long i)
{
  if (t->link[i].kind != TL_FABRIC)
    return false;
  if (t->c.topology == TOPO_RAIL_ONLY)
    return false; /* every tier is per rail */
  if (t->c.topology == TOPO_RAIL)
    return i >= t->b_pod; /* the rails share the core */
  return true;
}

/* Route building. */
struct rb {
  const struct topo *t;
  struct topo_hop *h;
  int n;
  double lat; /* switch hops */
};

static void hop(struct rb *r, long link, int down)
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
static void intra(struct rb *r, long a, long b)
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

/* Leaf/pod tiers between NIC (na, ka) and NIC (nb, kb), excluding the
 * NICs: fat tree and the rail kinds.  ka, kb index the rail leaves (0
 * unless rails). */
static void tiers(struct rb *r, long na, int ka, long nb, int kb)
{
  const struct topo *t = r->t;
  const struct cluster *c = &t->c;
  int kr = rails(c) ? c->nics_per_node : 1;
  long la = na / c->nodes_per_leaf, lb = nb / c->nodes_per_leaf;
  long pa = la / c->leaves_per_pod, pb = lb / c->leaves_per_pod;
  double sw = c->switch_lat_s;
  if (la == lb && ka == kb) {
    r->lat += sw;
    return;
  }
  bool up = c->oversub > 1, pod_up = pa != pb && c->pod_oversub > 1;
  r->lat += (pa == pb ? 3 : 5) * sw;
  if (up)
    hop(r, t->b_leaf + la * kr + ka, 0);
  if (pod_up) {
    long pr = c->topology == TOPO_RAIL_ONLY ? kr : 1;
    long k = c->topology == TOPO_RAIL_ONLY ? ka : 0;
    hop(r, t->b_pod + pa * pr + k, 0);
    hop(r, t->b_pod + pb * pr + k, 1);
  }
  if (up)
    hop(r, t->b_leaf + lb * kr + kb, 1);
}

/* Dragonfly: from router (g, x) to router (h, y) by the minimal route
 * (without the NICs). */
static void df_local(struct rb *r, long g, long x, long y)
{
  const struct topo *t = r->t;
  long a = t->c.routers_per_group;
  if (x == y)
    return;
  long lo = x < y ? x : y, hi = x < y ? y : x;
  hop(r, t->b_local + g * pairs(a) + pair_index(lo, hi, a), x > y);
  r->lat += t->c.switch_lat_s;
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

static void df_minimal(struct rb *r, long g, long x, long h, long y,
                       unsigned long hsh)
{
  const struct topo *t = r->t;
  const struct cluster *c = &t->c;
  if (g == h) {
    df_local(r, g, x, y);
    return;
  }
  long j = (long)(hsh % (unsigned long)t->per_pair);
  long ex = df_exit(t, g, h, j), en = df_exit(t, h, g, j);
  df_local(r, g, x, ex);
  long lo = g < h ? g : h, hi = g < h ? h : g;
  hop(r, t->b_global + pair_index(lo, hi, c->groups) * t->per_pair + j,
      g > h);
  r->lat += c->switch_lat_s;
  df_local(r, h, en, y);
}

static void dragonfly(struct rb *r, long na, long nb)
{
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

static void torus(struct rb *r, long na, long nb)
{
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

int topo_route(const struct topo *t, long a, long b, struct topo_hop *hops,
               double *switch_lat)
{
  const struct cluster *c = &t->c;
  struct rb r = {t, hops, 0, 0};
  long na = a / c->gpus_per_node, nb = b / c->gpus_per_node;
  if (na == nb) {
    intra(&r, a, b);
    *switch_lat = r.lat;
    return r.n;
  }
  int ka = nic_of(c, a), kb = nic_of(c, b);
  if (rails(c) && ka != kb &&
      (c->topology == TOPO_RAIL_ONLY || c->pxn)) {
    /* To the GPU of a's node on b's rail, over NVLink (PXN). */
    int per = c->gpus_per_node / c->nics_per_node;
    long p = na * c->gpus_per_node + (long)kb * per + local_of(c, a) % per;
    intra(&r, a, p);
    ka = kb;
  }
  hop(&r, nic_link(t, na, ka), 0);
  switch (c->topology) {
  case TOPO_FAT_TREE:
  case TOPO_MULTI_PLANE:
    tiers(&r, na, 0, nb, 0);
    break;
  case TOPO_RAIL:
  case TOPO_RAIL_ONLY:
    tiers(&r, na, ka, nb, kb);
    break;
  case TOPO_DRAGONFLY:
    dragonfly(&r, na, nb);
    break;
  case TOPO_TORUS:
    torus(&r, na, nb);
    break;
  case TOPO_COUNT:
    break;
  }
  hop(&r, nic_link(t, nb, kb), 1);
  *switch_lat = r.lat;
  return r.n;
}

/* ---- parts ------------------------------------------------------------ */

static long ceil_div(long a, long b) { return (a + b - 1) / b; }

void topo_parts(const struct cluster *c, struct topo_parts *p)
{
  memset(p, 0, sizeof *p);
  int P = c->planes > 0 ? c->planes : 1;
  int R = (c->sw.ports > 0 ? c->sw.ports : 64) * P;
  p->radix = R;
  long nics = (long)c->nodes * c->nics_per_node;
  p->nic_ports = nics * P;
  switch (c->topology) {
  case TOPO_FAT_TREE:
  case TOPO_MULTI_PLANE:
  case TOPO_RAIL:
  case TOPO_RAIL_ONLY: {
    bool rl = rails(c);
    int kr = rl ? c->nics_per_node : 1;
    /* NIC ports under a leaf switch per node: a rail leaf takes one NIC
     * of each node. */
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
        long groups = c->topology == TOPO_RAIL_ONLY ? kr : 1;
        long per = (spine_down + up) / groups;
        p->switches[1] += groups * ceil_div(per, R);
        p->ports[1] += spine_down + up;
        p->ports[2] += up;
      }
    }
    if (c->pods > 1) {
      long groups = c->topology == TOPO_RAIL_ONLY ? kr : 1;
      p->switches[2] = groups * ceil_div(p->ports[2] / groups, R);
    }
    /* Cables: NIC to leaf, leaf to spine, spine to core. */
    p->cables = p->nic_ports + (p->ports[1] - p->ports[2]) + p->ports[2];
    break;
  }
  case TOPO_DRAGONFLY: {
    long A = c->routers_per_group;
    long routers = c->leaves;
    long global_ends = 0;
    for (long r = 0; r < routers; r++) {
      long grp = r / A;
      long in_grp = routers - grp * A < A ? routers - grp * A : A;
      long endpoints =
          (long)cluster_nodes_in_leaf(c, (int)r) * c->nics_per_node;
      p->ports[0] += endpoints + (in_grp - 1) * c->local_links;
    }
    long per_pair = c->groups > 1 ? (long)c->routers_per_group *
                                        c->global_links / (c->groups - 1)
                                  : 0;
    global_ends = 2 * pairs(c->groups) * per_pair;
    p->ports[0] += global_ends;
    p->switches[0] = routers;
    p->cables = nics + (p->ports[0] - nics - global_ends) / 2 +
                global_ends / 2;
    break;
  }
  case TOPO_TORUS:
    /* No switches: each node's 2d ports, one cable per node and
     * dimension. */
    p->cables = (long)c->nodes * c->torus_ndims;
    break;
  case TOPO_COUNT:
    break;
  }
  for (int t = 0; t < TOPO_TIERS; t++) {
    p->switches_all += p->switches[t];
    p->ports_all += p->ports[t];
  }
  p->have_switch_power = c->sw.ports > 0 || p->switches_all == 0;
  p->power_w = (double)nics * c->nic.max_w +
               (c->sw.ports > 0 ? (double)p->switches_all * c->sw.max_w : 0);
  /* A torus's links join NICs and take the link price of the NIC's
   * switch generation (its optics and cable). */
  p->have_prices = c->nic.price > 0 && c->sw.ports > 0 &&
                   c->sw.link_price > 0 &&
                   (p->switches_all == 0 || c->sw.price > 0);
  /* A torus cable carries nics x bw / 2d, not one port's bw: priced as
   * that many links of the port speed. */
  double links = c->topology == TOPO_TORUS
                     ? (double)p->cables * c->nics_per_node /
                           (2.0 * c->torus_ndims)
                     : (double)p->cables;
  p->cost_usd = p->have_prices
                    ? (double)nics * c->nic.price +
                          (double)p->switches_all * c->sw.price +
                          links * c->sw.link_price
                    : 0;
}
