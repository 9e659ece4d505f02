/*
 * platload.h - bring up SimGrid and load a cluster's platform into it.
 *
 * One SimGrid engine exists per process: call platload_boot once, then
 * platload_cluster once.
 */
#ifndef WEFT_PLATLOAD_H
#define WEFT_PLATLOAD_H

#include "platforms/cluster.h"
#include "sim/base/err.h"

/* Initialise SimGrid quietly (log threshold "critical" unless `verbose`). */
void platload_boot(int verbose);

/* Build the platform of `c` in memory: one zone whose routes
 * platforms/topo.c computes, for every topology.  Loading is linear in
 * the GPUs (16384 H100: 0.3 s against 2.2 s for the same fat tree as
 * XML, whose loading grows as zones x hosts in SimGrid 3.32) and the
 * routes' bandwidth-carrying links and latencies are those of platgen's
 * XML (tests/test_topo.c compares them pair by pair). */
int platload_cluster(const struct cluster *c, struct weft_err *err) WEFT_WUR;

/* Generate the XML platform of `c` (platgen) into a temporary file and
 * load it.  The temporary file is removed afterwards. */
int platload_cluster_xml(const struct cluster *c, struct weft_err *err) WEFT_WUR;

/* The fabric of the loaded cluster when it was built in memory
 * (platforms/topo.h), else NULL. */
struct topo;
const struct topo *platload_topo(void);

/* Links whose bandwidth a replay changed, and their bandwidths before. */
struct platload_thinned;

/* Divide by `divisor` the bandwidth of both directions of every link of
 * the in-memory fabric that a node's GPUs share on their way out
 * (topo_link_node_shared): TP symmetry's thinning (sim/symmetry.h).
 * *out receives the links and their old bandwidths, owned by the caller
 * until platload_thin_restore.  Returns 0, or WEFT_EINVAL when the
 * platform was not built by platload_cluster; *out untouched then. */
int platload_thin_node_shared(long divisor, struct platload_thinned **out,
                              struct weft_err *err) WEFT_WUR;

/* Give the links of `th` their old bandwidths and free it (NULL: no
 * effect). */
void platload_thin_restore(struct platload_thinned *th);

/* Twin hosts, for the quotient of expert replica symmetry
 * (sim/symmetry.h, symmetry_twins): where symmetry_twins(c) holds and
 * WEFT_EP_SYMMETRY=on (the quotient's opt-in), platload_cluster adds
 * gpus_per_node hosts named twin0, twin1, ... after the GPUs.  A flow from GPU a to twin k takes a's route to GPU k
 * of another node of a's leaf group, but enters through the NIC of a's
 * own node's GPU k: the network's way back into a's node.  Nothing else
 * runs on them.  Returns twin k, or NULL where there are none. */
#define WEFT_MAX_TWINS 128
struct s4u_Host; /* sg_host_t's struct (simgrid/forward.h) */
struct s4u_Host *platload_twin(int k);
/* Load an existing SimGrid platform file. */
int platload_file(const char *path, struct weft_err *err) WEFT_WUR;

#endif
