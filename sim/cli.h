/*
 * cli.h - the command table and argument helpers shared by the `weft`
 * subcommands.  Each subcommand lives in its own cmd_<name>.c and is the
 * only layer that prints.
 */
#ifndef WEFT_CLI_H
#define WEFT_CLI_H

#include <stdbool.h>

#include "platforms/catalog.h"
#include "platforms/cluster.h"
#include "sim/base/err.h"

struct command {
  const char *name;
  int (*run)(int argc, char **argv); /* argv[0] is the command name */
  const char *args;                  /* usage line after the name */
  const char *summary;
};

extern const struct command weft_commands[];

/* Print "weft: MSG" to stderr; returns the exit code 1 (or 2 for usage). */
int cli_fail(const struct weft_err *err);
int cli_usage(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* Split "--name=value" or "--name value".  On return *name points at the
 * option name without dashes (in a static buffer) and *value at its value,
 * consuming argv[*i + 1] when needed.  Returns false (with err) when the
 * value is missing. */
bool cli_opt(int argc, char **argv, int *i, const char **name,
             const char **value, struct weft_err *err);

/* Cluster flags shared by platform, coll and run: --cluster NAME|FILE,
 * --catalog FILE, --scale K=V,..., and every cluster setting as a flag
 * (--gpus, --nodes, --node, --gpu, --nic, --gpus-per-node, ...). */
struct cluster_opts {
  const char *cluster;        /* preset or file; NULL: the default */
  const char *catalog_files[8];
  int n_catalog_files;
  struct {
    const char *name;  /* option name, e.g. "gpus-per-node" */
    const char *value;
  } flags[64];
  int n_flags;
};

/* If option `name` is a cluster option, record it and return true. */
bool cluster_opts_take(struct cluster_opts *o, const char *name,
                       const char *value, struct weft_err *err, int *rc);

/* Build the catalog and resolved cluster from the options.  On success the
 * caller owns *out_cat. */
int cluster_opts_resolve(const struct cluster_opts *o,
                         const char *default_cluster,
                         struct catalog **out_cat, struct cluster *out,
                         struct weft_err *err) WEFT_WUR;

#endif
