/*
 * platgen.h - write the SimGrid platform XML of a cluster.
 *
 * Shape (names are stable; the engine and the tests rely on them):
 *
 *   zone "weft" (Full)                      leaf group to leaf group
 *     zone "links" (None)                   every link, declared once
 *     zone "leaf<l>" (Full)                 leaf group: node to node
 *       zone "leaf<l>-up" (Full)            holds router "leaf<l>-r"
 *       zone "node<n>" (Full)               one NVLink domain
 *         host "gpu<rank>"                  one GPU (global rank)
 *         router "node<n>-gw"               where NIC traffic leaves
 *
 * Above 256 leaf groups a route for every pair would make the file large,
 * so pods become zones: "weft" routes pod to pod, zone "pod<p>" holds
 * zone "pod<p>-up" (router "pod<p>-r") and its leaf groups.
 *
 * Links: "gpu<rank>-nvl" (GPU to NVSwitch), "node<n>-nic<k>" (NIC k to its
 * leaf switch), "leaf<l>-up" and "pod<p>-up" (bandwidth: what they
 * aggregate over the oversubscription ratio), all SPLITDUPLEX; and links
 * that only carry switch latency (bandwidth 1e15 B/s, never binding):
 * "node<n>-port" (half a hop each way), "leaf<a>-leaf<b>" (2 hops in a
 * pod, 4 across pods) and, with pod zones, "pod<a>-pod<b>" (4 hops).
 *
 * Routes: GPU to GPU in a node crosses the two GPUs' NVLink links only.  A
 * GPU leaves its node through its NIC and its node's port, crosses the
 * link between the two leaf groups (or, with pod zones, its group's
 * up-link and the link between the pods), and enters the other node
 * through its port and NIC: 1 switch hop of latency in a leaf group, 3
 * across groups, 5 across pods.  Up-links are on the routes only where
 * they can bind (oversubscription above 1; with pod zones a group's
 * up-link always carries its traffic to other pods): at ratio 1 an
 * up-link has exactly the bandwidth of the NICs below it, which every one
 * of its flows crosses, so max-min sharing is the same without it.  No
 * link on a route is shared by flows that never compete for bandwidth:
 * SimGrid re-solves every flow linked to a changed one, and the FATPIPE
 * switch links of earlier versions joined a whole pod's flows into one
 * system (GPT-3 175B on 4096 A100: 16.4 s, now 2.8 s; same predictions).
 * Every host carries properties node, local_rank and the energy plugin's
 * wattage_per_state (idle:max).
 */
#ifndef WEFT_PLATGEN_H
#define WEFT_PLATGEN_H

#include <stdio.h>

#include "platforms/cluster.h"
#include "sim/base/err.h"

/* Write the platform of `c` to `out`.  Returns 0 or WEFT_EIO. */
int platgen_write(const struct cluster *c, FILE *out,
                  struct weft_err *err) WEFT_WUR;

/* Write it to `path` ("-" is stdout). */
int platgen_write_file(const struct cluster *c, const char *path,
                       struct weft_err *err) WEFT_WUR;

/* Bandwidth of a leaf group's up-link and of a pod's up-link, per direction
 * (what platgen writes; exposed for tests and reports). */
double platgen_leaf_up_bw(const struct cluster *c, int leaf);
double platgen_pod_up_bw(const struct cluster *c, int pod);

/* A host's speed: the GPU's dense BF16 peak (FP32 where it has none). */
double platgen_host_speed(const struct cluster *c);

/* The properties of GPU `rank`'s host: node, local_rank and the energy
 * plugin's wattage_per_state (idle:max) and wattage_off. */
enum { PLATGEN_HOST_PROPS = 4 };
struct platgen_prop {
  const char *name;
  char value[40];
};
void platgen_host_props(const struct cluster *c, int rank,
                        struct platgen_prop out[PLATGEN_HOST_PROPS]);
/* Rewrite only what depends on the rank (node, local_rank) in `out`, which
 * platgen_host_props filled for another rank of `c`. */
void platgen_host_props_rank(const struct cluster *c, int rank,
                             struct platgen_prop out[PLATGEN_HOST_PROPS]);

/* The host name of a global GPU rank: "gpu<rank>". */
void platgen_host_name(int rank, char *buf, size_t size);
/* The rank a host name stands for: "gpu<rank>" written as platgen_host_name
 * writes it (no sign, no leading zero), else -1. */
long platgen_host_rank(const char *name);

#endif
