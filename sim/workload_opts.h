/*
 * workload_opts.h - parse a subcommand's arguments into a resolved
 * workload (see workload_opts.c).
 */
#ifndef WEFT_WORKLOAD_OPTS_H
#define WEFT_WORKLOAD_OPTS_H

#include "sim/cli.h"
#include "workloads/workload.h"

/* Parse argv (argv[0] is the command) into `w` and resolve it.  Flags named
 * in the NULL-terminated `own_flags` ("output" also takes -o) are the
 * command's own: their values land in own_values[].  On success the caller
 * owns *out_cat.  On failure *usage says whether it was a usage error. */
int workload_opts_resolve(int argc, char **argv, const char *cmd,
                          const char *const *own_flags,
                          const char **own_values, struct workload *w,
                          struct catalog **out_cat, struct cluster *out_c,
                          struct weft_err *err, int *usage) WEFT_WUR;

#endif
