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

/* Generate the platform of `c` into a temporary file and load it.  The
 * temporary file is removed afterwards. */
int platload_cluster(const struct cluster *c, struct weft_err *err) WEFT_WUR;

/* The fabric of the loaded cluster when it was built in memory
 * (platforms/topo.h), else NULL. */
struct topo;
const struct topo *platload_topo(void);

/* Load an existing SimGrid platform file. */
int platload_file(const char *path, struct weft_err *err) WEFT_WUR;

#endif
