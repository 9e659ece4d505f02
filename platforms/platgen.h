/*
 * platgen.h - write the SimGrid platform XML of a cluster.
 *
 * Shape (names are stable; the engine and the tests rely on them):
 *
 *   zone "weft" (Full)                      core layer: pod to pod
 *     zone "pod<p>" (Full)                  spine layer: leaf to leaf
 *       zone "pod<p>-up" (Full)             holds router "pod<p>-r"
 *       zone "leaf<l>" (Full)               leaf group: node to node
 *         zone "leaf<l>-up" (Full)          holds router "leaf<l>-r"
 *         zone "node<n>" (Full)             one NVLink domain
 *           host "gpu<rank>"                one GPU (global rank)
 *           router "node<n>-gw"             where NIC traffic leaves
 *           link "gpu<rank>-nvl"            SPLITDUPLEX GPU to NVSwitch
 *           link "node<n>-nic<k>"           SPLITDUPLEX NIC k to its leaf
 *
 * Routes: GPU to GPU in a node crosses the two GPUs' NVLink links only.  A
 * GPU leaves its node through its NIC, crosses "leaf<l>-sw" (a FATPIPE that
 * carries one switch hop of latency), and, to leave the leaf group, the
 * group's SPLITDUPLEX up-link "leaf<l>-up" (bandwidth: the group's NIC
 * bandwidth over the oversubscription ratio) and the spine "pod<p>-spine";
 * across pods "pod<p>-up" and "core".  Switch latency is carried by the
 * FATPIPE switch links: 1 hop in a leaf, 3 across leaves, 5 across pods.
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

/* The host name of a global GPU rank: "gpu<rank>". */
void platgen_host_name(int rank, char *buf, size_t size);
/* The rank a host name stands for: "gpu<rank>" written as platgen_host_name
 * writes it (no sign, no leading zero), else -1. */
long platgen_host_rank(const char *name);

#endif
