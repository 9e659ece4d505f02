/*
 * cluster.h - GPU clusters: what a cluster is made of and how its fabric is
 * shaped, from presets (platforms/clusters.xml), XML files and flags.
 *
 * A cluster is `nodes` NVLink domains ("nodes": a DGX box, or an NVL72
 * rack, of which a job may take some trays: tray, rack_gpus) of
 * `gpus_per_node` GPUs.  Inside a node every GPU has an NVLink link
 * to the NVSwitch; every GPU sends off-node traffic through its NIC (GPUs
 * share NICs when there are fewer NICs than GPUs).  Nodes hang off leaf
 * groups of `nodes_per_leaf`, leaf groups off pods of `leaves_per_pod`, pods
 * off a core layer; `oversubscription` thins the leaf up-links and
 * `pod_oversubscription` the pod up-links.
 *
 * Settings come in layers: a preset, then a file, then flags.  A later layer
 * overrides an earlier one, and setting `gpus` overrides a `nodes` from an
 * earlier layer (and vice versa).  Every setting remembers where it came
 * from, so that an inconsistency is reported against the file line or flag
 * that caused it.
 */
#ifndef WEFT_CLUSTER_H
#define WEFT_CLUSTER_H

#include <stdbool.h>

#include "platforms/catalog.h"
#include "sim/base/err.h"

enum cluster_key {
  CK_NODE,            /* node type (catalog) */
  CK_GPU,             /* GPU type replacing the node's */
  CK_NIC,             /* NIC type replacing the node's */
  CK_GPUS,            /* total GPUs */
  CK_NODES,           /* total nodes (NVLink domains) */
  CK_GPUS_PER_NODE,   /* GPUs per NVLink domain */
  CK_NICS_PER_NODE,
  CK_NODES_PER_LEAF,
  CK_LEAVES_PER_POD,
  CK_OVERSUB,         /* leaf oversubscription ratio (>= 1) */
  CK_POD_OVERSUB,     /* pod (spine to core) oversubscription ratio */
  CK_SWITCH_LAT,      /* one switch hop */
  CK_NVLINK_LAT,      /* GPU to GPU through NVSwitch */
  CK_NIC_LAT,         /* NIC adapter and cable */
  CK_TOPOLOGY,        /* fat-tree, rail, rail-only, multi-plane, dragonfly,
                         torus (enum topology) */
  CK_PXN,             /* rail: off-rail traffic crosses NVLink first */
  CK_PLANES,          /* multi-plane: planes (ports per NIC) */
  CK_ROUTERS_PER_GROUP, /* dragonfly: routers in a group */
  CK_GLOBAL_LINKS,    /* dragonfly: global links per router */
  CK_LOCAL_LINKS,     /* dragonfly: links between two routers of a group */
  CK_ROUTING,         /* dragonfly: minimal, valiant or adaptive */
  CK_TORUS,           /* torus: dimensions "AxB" or "AxBxC" (nodes) */
  CK_NVL_RACK,        /* GPUs under one first-tier NVLink switch domain */
  CK_NVL_OVERSUB,     /* NVLink second tier oversubscription */
  CK_PLACEMENT,       /* packed, spread or random[:SEED]: the job's nodes
                         on the fabric */
  CK_SCALE_COMPUTE,   /* what-if factors */
  CK_SCALE_HBM_BW,
  CK_SCALE_HBM_CAP,
  CK_SCALE_NVLINK,
  CK_SCALE_NIC,
  CK_YEAR,            /* project the hardware to this year */
  CK_GENERATIONS,     /* or this many generations ahead */
  CK_TREND,           /* by this catalog trend */
  CK_POWER_CAP,       /* GPU board power cap */
  CK_CLOCK,           /* GPU clock factor (what-if) */
  CK_GPU_HOUR_PRICE,  /* price of a GPU-hour, for cost per token */
  CK_STORAGE_BW,      /* the storage tier's write bandwidth (checkpoints) */
  CK_SLOW_GPU,        /* RANK:FACTOR,...: GPUs whose kernels are slower */
  CK_SLOW_NIC,        /* RANK:FACTOR,...: NICs at 1/FACTOR of their rate */
  CK_GPU_SIGMA,       /* per-GPU speed variation, percent (normal) */
  CK_GPU_SEED,        /* its draw's seed */
  CK_DOWN_LINKS,      /* links down, their traffic rerouted (topo.h) */
  CK_DIURNAL,         /* the GPU clock's daily variation, percent */
  CK_DIURNAL_HOUR,    /* the hour of the day the job starts at */
  CK_DESCRIPTION,
  CK_COUNT
};

#define WEFT_MAX_DESC 256
#define WEFT_MAX_SLOW 16 /* entries of slow_gpu, of slow_nic */

/* One straggler (issue 41, item 2): the job's GPU rank `rank` and how
 * many times slower its kernels run (slow_gpu) or its NIC moves data
 * (slow_nic); factor >= 1. */
struct cluster_slow {
  int rank;
  double factor;
};

/* A link down (issue 41, item 2; down_links, topo.h): a link of the
 * fabric by its index in struct topo (as `weft platform` names it).  An
 * up-link family aggregates `of` parallel cables, `cables` of them down
 * (it keeps (of - cables) / of of its bandwidth); a NIC (cables 0) is
 * down as a whole. */
struct cluster_down {
  long link;
  int cables, of;
  int node, nic; /* a NIC's, -1 for an up-link */
};

/* Shapes of the scale-out fabric: each one entry of platforms/topo.c's
 * table (topo_fabric), which says what it is. */
enum topology { TOPO_FAT_TREE, TOPO_RAIL, TOPO_RAIL_ONLY, TOPO_MULTI_PLANE,
                TOPO_DRAGONFLY, TOPO_TORUS, TOPO_COUNT };
const char *topology_name(enum topology t); /* its entry's name */
int topology_from_name(const char *name); /* -1 when unknown */

struct cluster_desc {
  char name[WEFT_MAX_NAME];
  char source[WEFT_MAX_ORIGIN];          /* where the description began */
  bool set[CK_COUNT];
  int layer[CK_COUNT];                   /* 0 preset, 1 file, 2 flags */
  double num[CK_COUNT];                  /* numeric settings */
  char text[CK_COUNT][WEFT_MAX_DESC];    /* text settings */
  char origin[CK_COUNT][WEFT_MAX_ORIGIN];/* "file:line: <cluster> attribute
                                            'gpus'" or "--gpus" */
};

struct cluster {
  char name[WEFT_MAX_NAME];
  char description[WEFT_MAX_DESC];
  char node_type[WEFT_MAX_NAME];
  struct gpu_spec gpu;  /* scaled by `scale` */
  struct nic_spec nic;  /* scaled by `scale` */
  int nodes, gpus_per_node, nics_per_node, gpus;
  /* Racks of trays (a node type with tray=): the job takes `gpus_per_node`
   * GPUs, whole trays of `tray`, in each of `nodes` racks of `rack_gpus`;
   * the NVLink domain is the rack, its other GPUs are idle (not part of
   * the job).  Other node types: tray 0, rack_gpus == gpus_per_node. */
  int tray, rack_gpus;
  /* An uneven last rack (racks of trays, when the job's trays do not split
   * evenly over racks): the job takes whole racks of `gpus_per_node` and
   * this many GPUs, whole trays, of one more; the rest of that rack is
   * idle.  gpus < nodes x gpus_per_node then.  0: every node full. */
  int last_node_gpus;
  int nodes_per_leaf, leaves_per_pod, leaves, pods;
  double oversub, pod_oversub;
  double nvlink_lat_s, switch_lat_s;
  double coll_nvlink_eff, coll_nvls_eff; /* from the node type */
  double coll_nic_eff, coll_lat_s;       /* from the node type */
  double coll_ring_loss;                 /* from the node type */
  double coll_floor_s, coll_ll_bw_Bps;   /* from the node type */
  double p2p_nvlink_lat_s, p2p_net_lat_s; /* from the node type */
  bool nvls;
  struct hw_scale scale;
  /* Projection (year, generations): years ahead of the GPU's and the NIC's
   * catalog year, by trend `trend` ("" when not projected). */
  double proj_gpu_years, proj_nic_years;
  char trend[WEFT_MAX_NAME];
  /* The GPU's clock against its catalog clock (power_cap, clock) and its
   * board power while computing: idle + (max - idle) clock^3 (the dynamic
   * power of CMOS at a voltage that follows the clock). */
  double clock, active_w;
  /* Board power while memory-bound kernels run and while only
   * communication runs, the same way from the catalog's mem_power and
   * comm_power (when not given: active_w, and idle power; sim/report.c
   * says where each comes from). */
  double mem_w, comm_w;
  double gpu_hour_price;                 /* 0: not given */
  /* The storage tier checkpoints are written to: its aggregate write
   * bandwidth, bytes/s (workloads/goodput.h); 0: not given. */
  double storage_bw_Bps;
  struct switch_spec sw;                 /* the fabric's switch type;
                                            sw.ports 0 when none */
  /* The fabric's shape and its own parameters (topo.h). */
  enum topology topology;
  bool pxn;                              /* rail */
  int planes;                            /* multi-plane (1 otherwise) */
  int routers_per_group, global_links, local_links, groups; /* dragonfly */
  bool valiant;
  bool adaptive; /* dragonfly: in-group spread (topo.c, df_resolve) */
  int torus_ndims, torus_dim[3];         /* torus: nodes per dimension */
  int nvl_rack;                          /* GPUs per first NVLink tier
                                            (gpus_per_node: one tier) */
  double nvl_oversub;
  /* Placement (cluster_place): the job's nodes dealt round-robin over
   * `spread_units` blocks of `spread_size` consecutive nodes (pods, else
   * leaves; a dragonfly's groups), the last one possibly partial; 0 units:
   * packed, job node i on node i.  random_seed > 0: a pseudo-random
   * permutation of the nodes drawn from that seed instead. */
  int spread_units, spread_size;
  unsigned long random_seed;
  bool spread;          /* spread asked for (spread_units may be 1) */
  /* Stragglers (issue 41, item 2), none by default: GPUs whose kernels
   * take `factor` times as long (a slower clock: thermal or power
   * throttling, a weaker part), and GPUs whose NIC link carries 1/factor
   * of its bandwidth both ways (a degraded port or cable; GPUs sharing
   * that NIC share its loss).  Ranks are the job's, distinct within each
   * list. */
  int nslow_gpu, nslow_nic;
  struct cluster_slow slow_gpu[WEFT_MAX_SLOW], slow_nic[WEFT_MAX_SLOW];
  /* Per-GPU speed variation: each GPU's speed drawn from a normal of
   * mean 1 and standard deviation gpu_sigma (a fraction; 0: none),
   * clipped at 3 sigma, from gpu_seed and its rank alone (the same on
   * every machine); its kernels take 1/speed of their time, on top of
   * slow_gpu. */
  double gpu_sigma;
  unsigned long gpu_seed;
  /* Links down with their traffic rerouted (topo.h says how), none by
   * default. */
  int ndown;
  struct cluster_down down[WEFT_MAX_SLOW];
  /* The GPU clock's daily variation (Llama 3, Sec. 3.3.4: 1-2 % of
   * throughput with the day's temperature, through DVFS): every kernel
   * takes diurnal_slow times its time, cluster_diurnal_factor at the hour
   * the job is at (diurnal_hour to start with); diurnal 0: none, and
   * diurnal_slow 1. */
  double diurnal, diurnal_hour, diurnal_slow;
};

/* An empty description (every setting unset, name "custom"). */
void cluster_desc_init(struct cluster_desc *d);

/* The setting key of an attribute or flag name ("gpus_per_node" or
 * "gpus-per-node"); -1 when unknown. */
int cluster_key_from_name(const char *name);
const char *cluster_key_name(enum cluster_key k);
/* The form of its value, for the help: "N", "F", "T" (a time), "NAME". */
const char *cluster_key_hint(enum cluster_key k);
/* Its meaning and default, one line for the help. */
const char *cluster_key_help(enum cluster_key k);

/* Set one setting from text, checking its type and range.  `origin` is the
 * location to report ("--gpus" or "file.xml:3: <cluster> attribute 'gpus'")
 * and prefixes any error.  `layer` orders presets (0), files (1), flags (2). */
int cluster_desc_set(struct cluster_desc *d, enum cluster_key k,
                     const char *value, const char *origin, int layer,
                     struct weft_err *err) WEFT_WUR;

/* Parse "compute=2,nvlink=1.5,nic=2" (flag --scale) into the scale keys. */
int cluster_desc_set_scale(struct cluster_desc *d, const char *spec,
                           const char *origin, int layer,
                           struct weft_err *err) WEFT_WUR;

/* Start from the preset `name`.  Unknown names are WEFT_ENOTFOUND with the
 * list of presets in the message. */
int cluster_desc_preset(struct cluster_desc *d, const char *name,
                        struct weft_err *err) WEFT_WUR;

/* Read a cluster file: root <cluster> whose attributes are settings (plus
 * name and an optional preset= to start from), with optional <gpu>, <nic>,
 * <node> and <future> children that are added to `cat` first. */
int cluster_desc_read_file(struct cluster_desc *d, struct catalog *cat,
                           const char *path, struct weft_err *err) WEFT_WUR;

/* Read the attributes of a <cluster> element of an already parsed document
 * (a workload file) at `layer`; preset= is allowed; child elements are
 * added to `cat`. */
struct xin_doc;
struct xin_elem;
int cluster_desc_read_elem(struct cluster_desc *d, struct catalog *cat,
                           const struct xin_doc *doc,
                           const struct xin_elem *e, int layer,
                           struct weft_err *err) WEFT_WUR;

/* Fill the settings `d` leaves unset from `base` (a lower layer): what
 * `d` sets wins, and a `gpus` or `nodes` in `d` keeps the other from
 * `base`.  When `d` has no node type, it takes base's name and source. */
void cluster_desc_fill(struct cluster_desc *d, const struct cluster_desc *base);

/* A preset name, or else a path to a cluster file (anything with '/' or
 * ending in ".xml"). */
int cluster_desc_load(struct cluster_desc *d, struct catalog *cat,
                      const char *spec, struct weft_err *err) WEFT_WUR;

/* Check the settings against each other and the catalog and compute the
 * derived sizes.  *out is written only on success. */
int cluster_resolve(const struct cluster_desc *d, const struct catalog *cat,
                    struct cluster *out, struct weft_err *err) WEFT_WUR;

/* Where setting k of `d` was given ("--gpus", "FILE:LINE: <cluster>
 * attribute 'gpus'"), or d's source when it was not: for the messages of
 * the fabrics' own settings (platforms/topo.c). */
const char *cluster_desc_where(const struct cluster_desc *d,
                               enum cluster_key k);

/* Whether a file or a flag, not a preset, gave setting k of `d`. */
bool cluster_desc_by_user(const struct cluster_desc *d, enum cluster_key k);

/* The presets, in file order: count, and the i-th as a description. */
int cluster_preset_count(void);
int cluster_preset_get(int i, struct cluster_desc *out,
                       struct weft_err *err) WEFT_WUR;

/* Nodes under leaf group `leaf` and leaf groups under pod `pod` (the last
 * of each may be partial). */
static inline int cluster_nodes_in_leaf(const struct cluster *c, int leaf)
{
  int n = c->nodes - leaf * c->nodes_per_leaf;
  return n < c->nodes_per_leaf ? n : c->nodes_per_leaf;
}
static inline int cluster_leaves_in_pod(const struct cluster *c, int pod)
{
  int n = c->leaves - pod * c->leaves_per_pod;
  return n < c->leaves_per_pod ? n : c->leaves_per_pod;
}

/* The fabric node that holds the job's node `i` (a permutation of the
 * nodes).  Packed: i.  Spread: consecutive job nodes go to consecutive
 * blocks (pods, else leaf groups; a dragonfly's groups), the blocks taken
 * round-robin, so that a ring over the job's nodes crosses the top tier at
 * every step instead of once per block; the last block may be partial.
 * Random: a permutation drawn from the seed (a scheduler's scattered
 * allocation), the same for the same seed and size on every machine. */
int cluster_place(const struct cluster *c, int i);

/* The fabric's GPU index of the job's GPU rank `rank`. */
static inline int cluster_place_gpu(const struct cluster *c, int rank)
{
  return cluster_place(c, rank / c->gpus_per_node) * c->gpus_per_node +
         rank % c->gpus_per_node;
}

/* Which node and which NIC of it a global GPU rank belongs to. */
static inline int cluster_node_of(const struct cluster *c, int rank)
{
  return rank / c->gpus_per_node;
}
static inline int cluster_nic_of(const struct cluster *c, int rank)
{
  int local = rank % c->gpus_per_node;
  return local / (c->gpus_per_node / c->nics_per_node);
}

/* How many times longer rank `rank`'s kernels take: its slow_gpu factor
 * (1: not listed) over its drawn speed (gpu_sigma; 1: none), times the
 * diurnal factor of the moment (diurnal_slow). */
double cluster_gpu_slowdown(const struct cluster *c, int rank);

/* How many times slower NIC `k` of the fabric's node `node` moves data
 * (slow_nic: the largest factor of the ranks placed behind it; 1: none). */
double cluster_nic_slowdown(const struct cluster *c, int node, int k);

/* How many times its time every kernel takes at `hour` of the day
 * (hours since midnight, any real: taken modulo 24) under c's diurnal
 * variation: 1 + diurnal (1 - cos(2 pi (hour - 3) / 24)) / 2, from 1 at
 * 03:00 (the coolest) to 1 + diurnal at 15:00 (the hottest); 1 when
 * diurnal is 0. */
double cluster_diurnal_factor(const struct cluster *c, double hour);

/* Whether any GPU or NIC is slow, or a link down: the ranks differ, so
 * the engine's symmetric shortcuts do not hold.  (The diurnal factor
 * slows every GPU alike and keeps them.) */
static inline bool cluster_has_stragglers(const struct cluster *c)
{
  return c->nslow_gpu > 0 || c->nslow_nic > 0 || c->gpu_sigma > 0 ||
         c->ndown > 0;
}

#endif
