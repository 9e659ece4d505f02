/*
 * topo.h - the fabrics of a cluster: one table of operations per topology
 * (links, routes, parts, description, closed-form hops, the symmetric
 * shortcuts it admits), and the links and computed routes they build.
 *
 * Every topology is one entry of topo.c's table (struct topo_ops), found
 * by topo_fabric: a new fabric is one entry and its functions.  Every
 * topology is a set of links and a route function from one GPU rank to
 * another.  The fat tree and the multi-plane fabric are also
 * written as hierarchical XML (platgen.h), because their routes factor
 * through node gateways: what a flow crosses beyond its NIC depends on
 * the two nodes only.  The others are built in memory, as one SimGrid
 * zone whose routes this module computes (sim/sgbridge.cpp), because
 * their routes depend on the two GPUs and not only on their nodes (rail
 * and rail-only: the rail is the GPU's NIC), or because a second NVLink
 * tier makes a node's zone too large to list (576 GPUs: 166 000 routes
 * per node), or because their routes are arithmetic (dragonfly, torus):
 * in XML each would need a route for every pair of GPUs.  `weft platform`
 * writes such a platform as one flat zone of explicit routes up to
 * TOPO_XML_MAX_GPUS GPUs (the same routes, for inspection and for other
 * SimGrid tools).
 *
 * Links (SPLITDUPLEX: UP is the direction named first):
 *   gpu<r>-nvl           GPU to its NVLink switch
 *   node<n>-rack<k>-up   first to second NVLink tier (nvl_rack < GPUs per
 *                        node); on routes only when nvl_oversubscription>1
 *   node<n>-nic<k>       NIC k of node n to its first switch
 *   fat tree, multi-plane: leaf<l>-up, pod<p>-up (as platgen.h)
 *   rail:      su<s>-rail<k>-up (rail k's leaf of scalable unit s to the
 *              spines), pod<p>-up (spines to the core, all rails)
 *   rail-only: su<s>-rail<k>-up, pod<p>-rail<k>-up (rail k's own tiers)
 *   dragonfly: g<g>-r<x>-r<y> (routers x < y of group g: their
 *              local_links as one link), g<i>-g<j>-<k> (global link k of
 *              the routers x global_links / (groups - 1) between groups
 *              i < j, each a NIC's bandwidth)
 *   torus:     t<v>-d<d> (node v to its + neighbour along dimension d)
 * Up-links of switch tiers are on routes only where they can bind (their
 * ratio above 1; platgen.h says why).  Switch hops add latency to routes
 * without a link (a link would join unrelated flows in one max-min
 * system).
 *
 * Routes, GPU a to GPU b (nodes na, nb):
 *   same node: nvl(a) UP, [rack ups], nvl(b) DOWN; a second NVLink tier
 *     adds one more NVLink latency.
 *   fat tree, multi-plane: nic UP, [leaf/pod ups], nic DOWN; 1 switch hop
 *     in a leaf group, 3 in a pod, 5 across pods.
 *   rail: same rail (NIC index) as the fat tree per rail: 1 hop in a
 *     scalable unit, 3 in a pod, 5 across.  Off-rail with PXN (NCCL's
 *     default since 2.12): NVLink to the GPU of a's node on b's rail, then
 *     b's rail.  Off-rail without PXN: a's rail leaf, spine, b's rail leaf
 *     (3 hops at least, crossing both leaves' up-links).
 *   rail-only: off-rail traffic must take NVLink to the GPU on b's rail
 *     (no spine joins the rails; Wang et al., 2023).
 *   dragonfly: nic UP, local link to the router holding the global link
 *     to b's group, global link, local link to b's router, nic DOWN;
 *     valiant: through an intermediate group chosen by the pair of nodes;
 *     adaptive: each local leg crosses the sender router's port into the
 *     group (UP) and the receiver router's (DOWN), the fluid limit of
 *     Slingshot's direct or two-hop in-group paths (topo.c, df_size).
 *   torus: nic UP, dimension-ordered (x, then y, then z), the shorter way
 *     round each ring (+ on a tie), nic DOWN; a switch hop per node.
 *
 * Links down (down_links; tiered fabrics only), as the subnet manager
 * leaves the fabric once it has rerouted around them: a switch reports a
 * port's link state change (trap 128 of the InfiniBand specification),
 * and the subnet manager sweeps the fabric and reruns its routing engine
 * (OpenSM's ftree, updn...: opensm(8), doc/current-routing.txt) over the
 * ports that are up:
 *   an up-link: leaf<l>-up and the others stand for all the parallel
 *     cables from a leaf group to its spines (from a pod's spines to the
 *     core); ECMP or adaptive routing spreads the flows over the cables
 *     left, so K of its n cables down leave it (n - K) / n of its
 *     bandwidth, and it is on every route that leaves (enters) that leaf
 *     group or pod even at a ratio of 1, where it now binds.  n is the
 *     tier's ports as topo_parts counts them, per plane on a multi-plane
 *     fabric (traffic striped evenly over the planes is paced by the
 *     plane that lost the cables).
 *   a NIC: NCCL leaves out the ports that are not active when it starts
 *     (ncclIbInit, src/transport/net_ib.cc: `portAttr.state !=
 *     IBV_PORT_ACTIVE`): its topology holds the NICs left, over which its
 *     graph search places the rings' channels (src/graph/search.cc); a
 *     NIC lost mid-run fails the job (an IB completion error),
 *     which restarts from its checkpoint with the port left out.  weft's
 *     rings run a channel per NIC through fixed GPUs (sim/coll.c), so a
 *     node's NICs are pooled instead: with d of its n NICs down, every
 *     one of its NIC links carries (n - d) / n of its rate, routes
 *     unchanged.  Channels balanced over the NICs left get exactly that
 *     share; a lone transfer from a GPU behind the NIC down, which PXN
 *     would send through a whole NIC of the node, gets (n - d) / n of one.
 */
#ifndef WEFT_TOPO_H
#define WEFT_TOPO_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "platforms/cluster.h"
#include "sim/base/err.h"

#define TOPO_XML_MAX_GPUS 256

enum topo_link_kind { TL_NVL, TL_RACK_UP, TL_NIC, TL_FABRIC };

struct topo_link {
  double bw, lat;
  uint8_t kind;
};

struct topo {
  struct cluster c;
  long nlinks;
  struct topo_link *link;
  /* First index of each family (topo.c); the fabric's own families
   * (leaf and pod, local and global, torus) follow the NICs and only its
   * entry's functions read their bases. */
  long b_nvl, b_rack, b_nic, b_leaf, b_pod, b_local, b_global, b_torus;
  int racks;   /* first-tier NVLink domains per node */
  int per_pair; /* dragonfly: global links between two groups */
};

/* One link of a route, in its direction. */
struct topo_hop {
  int32_t link;
  int32_t down; /* 0: UP, 1: DOWN */
};

struct topo_parts;
struct topo_rb; /* a route being built (topo.c) */

/* One fabric: what weft knows of a topology, as data and operations.  The
 * table in topo.c has one entry per enum topology; every other file asks
 * it (topo_fabric) instead of naming topologies.  Links, names and routes
 * of the NVLink tiers and the NICs are common (topo.c); an entry adds the
 * links past the NICs and the route between the two NICs. */
struct topo_ops {
  const char *name;     /* as topology= and --topology take it */
  /* The fabric-only settings it takes: bits 1 << CK_* (cluster.c refuses
   * the other settings of its list fabric_keys when a file or flag gives
   * them). */
  uint64_t settings;
  bool rails;           /* tiered: a leaf switch per rail (NIC index) */
  bool rail_tiers;      /* tiered: each rail its own spines and core */
  /* platgen writes it as hierarchical XML when it has one NVLink tier
   * (its routes factor through node gateways), else as one flat zone. */
  bool xml_hierarchical;
  /* At ratios of 1, a node's flows cross no link that another node's
   * flows cross (only NICs and NVLink bind): the replica shortcuts are
   * exact on it (sim/symmetry.h). */
  bool alike;
  /* Nodes joined in a torus of torus_ndims dimensions: the torus
   * collectives (sim/coll.c, --collective torus) run on it. */
  bool node_torus;
  /* Why placement spread, or random, is refused on it; NULL: taken. */
  const char *no_spread, *no_random;
  /* Its own settings and shape, from `d`, into c's fabric fields (after
   * the common ones; the NVLink tiers and placement come after it).
   * Returns 0 or a negative error code with *err set. */
  int (*resolve)(const struct cluster_desc *d, struct cluster *c,
                 struct weft_err *err);
  /* Leaves per block of a spread placement (a pod's, a group's). */
  int (*spread_block)(const struct cluster *c);
  /* Whether off-rail traffic first crosses NVLink to the GPU of the
   * source's node on the destination's rail (PXN); NULL: never. */
  bool (*forwards)(const struct cluster *c);
  /* Links past the NICs: size sets the entry's bases from index n and
   * returns the new count; fill sets their bandwidths once allocated. */
  long (*size)(struct topo *t, long n);
  void (*fill)(struct topo *t);
  /* Name of link i, one of the entry's (i >= the first past the NICs). */
  void (*link_name)(const struct topo *t, long i, char *buf, size_t size);
  /* Whether fabric link i is shared by the GPUs of a node on their way
   * out (topo_link_node_shared); NULL: every fabric link is. */
  bool (*node_shared)(const struct topo *t, long i);
  /* The hops between NIC ka of node na and NIC kb of node nb (NICs not
   * included), and their switch latency. */
  void (*route)(struct topo_rb *r, long na, int ka, long nb, int kb);
  /* Switches, ports and cables of *p (zeroed, nic_ports and radix set);
   * returns the port-speed links its cables amount to (for the price). */
  double (*parts)(const struct cluster *c, struct topo_parts *p);
  /* The fabric's lines of a platform's header; `hop` is the switch hop's
   * latency, formatted. */
  void (*describe)(FILE *f, const struct cluster *c, const char *hop);
  /* Closed form (workloads/closedform.c): switch hops of one step of a
   * ring over `leaves` leaves in `pods` pods, and the bandwidth per GPU
   * of a group of n GPUs over `leaves` leaves given `bw_Bps` through its
   * NICs (NULL: bw_Bps). */
  int (*span_hops)(long leaves, long pods);
  double (*span_bw_Bps)(const struct cluster *c, long n, long leaves,
                        double bw_Bps);
};

/* Links down (cluster.h's down_links; issue 41, item 2): parse `spec`,
 * "NAME[:CABLES][,NAME[:CABLES]...]", NAME a link as `weft platform`
 * names it, into c->down and c->ndown (c otherwise resolved).  Up-links
 * of a tiered fabric (leaf<l>-up, su<s>-rail<k>-up, pod<p>-up,
 * pod<p>-rail<k>-up) with CABLES of their parallel cables down (1 to all
 * but one; default 1), and NICs (node<n>-nic<k>, without CABLES), up to
 * WEFT_MAX_SLOW of them, each once.  Refused, with `where` first: other
 * fabrics, NVLink links, unknown names, a link no route crosses (one
 * leaf group or one pod), every cable of a link, every NIC of a node.
 * Returns 0 or a negative error code with *err set. */
int topo_down_resolve(struct cluster *c, const char *spec, const char *where,
                      struct weft_err *err) WEFT_WUR;

/* The entry of topology t (t < TOPO_COUNT); never NULL. */
const struct topo_ops *topo_fabric(enum topology t);

/* The topology named `name` (case-insensitive), or -1. */
int topo_fabric_named(const char *name);

/* Whether platgen writes this cluster as hierarchical XML (fat tree and
 * multi-plane with one NVLink tier and no link down); else as one flat
 * zone of explicit routes, up to TOPO_XML_MAX_GPUS. */
bool topo_xml_hierarchical(const struct cluster *c);

/* Whether off-rail traffic of c first crosses NVLink (PXN, rail-only). */
bool topo_forwards(const struct cluster *c);

int topo_build(struct topo *t, const struct cluster *c,
               struct weft_err *err) WEFT_WUR;
void topo_free(struct topo *t);

/* Hops a route can have at most (the size of topo_route's buffer). */
int topo_max_hops(const struct topo *t);

/* The route from GPU a to GPU b (a != b): its hops in order, and the
 * latency of its switch hops (on top of its links').  Returns the number
 * of hops. */
int topo_route(const struct topo *t, long a, long b, struct topo_hop *hops,
               double *switch_lat);

/* Link i's name. */
void topo_link_name(const struct topo *t, long i, char *buf, size_t size);

/* Links that every GPU of a node shares with the node's other GPUs on its
 * way out (dragonfly and torus links): under TP symmetry, where one GPU
 * stands for a node's TP group, they carry 1/tp of their bandwidth. */
bool topo_link_node_shared(const struct topo *t, long i);

/* The fabric's lines of a platform's header (its entry's describe, the
 * second NVLink tier's and the links down). */
void topo_describe(FILE *f, const struct cluster *c);

/* The parts of a fabric (its scale-out network; NVLink switches are part of
 * the nodes).  Switches of radix sw.ports (64 when the catalog has no
 * switch for the NIC), a port per link end; a tier's switches are its
 * ports over the radix, rounded up per switch group (a leaf group's, a
 * pod's).  Cables join two ports.  Multi-plane fabrics split every port
 * into `planes` ports of 1/planes the speed, so a switch serves planes x
 * radix of them. */
enum { TOPO_TIERS = 3 };
struct topo_parts {
  long nic_ports;               /* NIC ports (x planes) */
  long switches[TOPO_TIERS];    /* leaf (router), spine, core */
  long ports[TOPO_TIERS];       /* switch ports in use per tier */
  long cables;                  /* NIC-switch, switch-switch, torus */
  long switches_all, ports_all;
  int radix;                    /* ports per switch at the port speed */
  double power_w;               /* switches at full traffic + NICs */
  bool have_switch_power;
  /* US dollars: the NICs, switches and links (cable and transceivers)
   * at the catalog's prices, a torus cable as the port-speed links its
   * bandwidth amounts to; have_prices false (cost_usd 0) when the
   * catalog lacks a price the fabric needs. */
  double cost_usd;
  bool have_prices;
};
void topo_parts(const struct cluster *c, struct topo_parts *out);

#endif
