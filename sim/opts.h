/*
 * opts.h - the one option layer of the `weft` commands, in the style of
 * git's parse-options: each command declares its own options in a table
 * (name, value or not, metavariable, help) and the groups of settings it
 * takes (the catalog, the cluster, the workload); opts_parse reads argv
 * against that declaration and the usage text is generated from the same
 * tables, so the two cannot drift.
 *
 * Settings (cluster, model and plan keys: "--gpus-per-node" for the
 * gpus_per_node attribute) are kept in command-line order and applied by
 * opts_cluster or opts_workload, which resolve them on top of the presets
 * and files; the command's own options come back by key (opts_get).
 * Part of the command layer: only cmd_*.c, report.c and this file print.
 */
#ifndef WEFT_OPTS_H
#define WEFT_OPTS_H

#include <stdbool.h>
#include <stdio.h>

#include "platforms/catalog.h"
#include "platforms/cluster.h"
#include "sim/base/bounds.h"
#include "sim/base/err.h"
#include "workloads/workload.h"

/* A command's own option: --name VALUE (or --name=VALUE), or a flag that
 * takes no value (--json).  `short_name` is a one-letter alias (-o). */
enum opt_type { OPT_VALUE, OPT_FLAG };
struct opt {
  const char *name;      /* NULL ends a table */
  char short_name;       /* 0: none */
  enum opt_type type;
  const char *arg;       /* metavariable of the value, for the help */
  const char *help;
};

/* Groups of settings a command takes besides its own options. */
enum {
  OPTS_CATALOG = 1,   /* --catalog FILE (up to WEFT_MAX_CATALOG_FILES) */
  OPTS_CLUSTER = 2,   /* --cluster NAME|FILE, --scale K=F,..., cluster keys */
  OPTS_WORKLOAD = 4,  /* --model NAME, model and plan keys */
};

/* What a positional argument is. */
enum opt_positional {
  POS_NONE,     /* none allowed */
  POS_WORD,     /* one word, the command's to read (weft list WHAT) */
  POS_WORKLOAD, /* a workload file */
  POS_CLUSTER,  /* a cluster preset or file, as --cluster */
  POS_FILES,    /* any number of files (files[]; positional: the first) */
};

/* A command's declaration. */
struct opts_spec {
  const char *cmd;             /* "run" */
  enum opt_positional positional;
  const char *pos_name;        /* "WORKLOAD.xml", for the help */
  int groups;                  /* OPTS_* */
  const struct opt *own;       /* NULL-terminated table, or NULL */
  const char *about;           /* what it does and its defaults (help) */
  const char *example;         /* one or more example command lines */
};

#define OPTS_MAX_OWN 32
#define OPTS_MAX_NAME 64
#define OPTS_MAX_SET (WEFT_MAX_ARGS + 16) /* room for a command's defaults */

/* Parsed arguments; borrowed strings point into argv. */
struct opts {
  const char *own[OPTS_MAX_OWN]; /* by own-table index; "yes" for a flag
                                    given; NULL when absent */
  const char *positional;        /* POS_WORD, POS_WORKLOAD or POS_FILES */
  const char *files[WEFT_MAX_ARGS]; /* POS_FILES, in order */
  int n_files;
  const char *cluster;           /* --cluster or POS_CLUSTER */
  const char *catalogs[WEFT_MAX_CATALOG_FILES];
  int n_catalogs;
  struct {
    char name[OPTS_MAX_NAME];  /* without dashes */
    const char *value;
  } set[OPTS_MAX_SET];         /* other settings, in command-line order */
  int n_set;
  bool quiet;                    /* -q, --quiet: no warnings on stderr */
};

/* Parse argv (argv[0] is the command's name) against `s` into *out.
 * Returns 0; 1 when --help was asked (print opts_usage, exit 0); or an
 * error, with *usage set when it is a usage error (exit 2) rather than a
 * bad value (exit 1). */
int opts_parse(const struct opts_spec *s, int argc, char **argv,
               struct opts *out, bool *usage, struct weft_err *err);

/* The value of own option `key` (NULL when absent; "yes" for a flag).
 * A key is the option's index in its command's table: each command names
 * its options in an enum next to the table and places each entry with a
 * designated initializer ([RUN_JSON] = {"json", ...}), so a misspelt
 * option is a compile error, not an option read as absent. */
static inline const char *opts_get(const struct opts *o, int key)
{
  return o->own[key];
}

/* After a command's table: it holds `count` options and the terminator,
 * and they fit in struct opts. */
#define OPTS_CHECK_TABLE(table, count)                                      \
  _Static_assert(sizeof(table) / sizeof *(table) == (count) + 1 &&         \
                     (count) <= OPTS_MAX_OWN,                               \
                 #table ": one entry per key, then the terminator")

/* Whether `name` is a setting of the groups `groups` (OPTS_*), such as
 * "tp", "gpus-per-node" or "scale". */
bool opts_is_setting(int groups, const char *name);

/* The command's own option named `name`, or NULL. */
const struct opt *opts_own(const struct opts_spec *s, const char *name);

/* Whether a setting named `name` was given. */
bool opts_has(const struct opts *o, const char *name);

/* Put a setting before all the given ones (defaults the user overrides). */
void opts_prepend(struct opts *o, const char *name, const char *value);

/* Load the catalog files into the built-in catalog; caller owns *out_cat. */
int opts_catalog(const struct opts *o, struct catalog **out_cat,
                 struct weft_err *err) WEFT_WUR;

/* Resolve the cluster: the preset or file (--cluster, else
 * default_cluster), then the cluster settings in order.  On success the
 * caller owns *out_cat. */
int opts_cluster(const struct opts *o, const char *default_cluster,
                 struct catalog **out_cat, struct cluster *out,
                 struct weft_err *err) WEFT_WUR;

/* Resolve a workload: the file, --cluster, --model, then the other
 * settings in order, then the plan against the cluster (default_cluster
 * when neither the file nor the flags name one).  On success the caller
 * owns *out_cat. */
int opts_workload(const struct opts *o, const char *default_cluster,
                  struct workload *w, struct catalog **out_cat,
                  struct cluster *out_c, struct weft_err *err) WEFT_WUR;
/* The same without resolving the plan (weft plan searches it). */
int opts_workload_hw(const struct opts *o, const char *default_cluster,
                     struct workload *w, struct catalog **out_cat,
                     struct cluster *out_c, struct weft_err *err) WEFT_WUR;

/* The usage of a command: its line, what it does, its own options, then
 * every setting of its groups with its meaning and default, and examples. */
void opts_usage(FILE *f, const struct opts_spec *s);

/* One line per flag of the setting groups (cluster, model, plan), each with
 * its meaning and default, under a heading per group. */
void opts_settings_help(FILE *f, int groups);

/* The same two in troff for the man page (weft help --man). */
void opts_man(FILE *f, const struct opts_spec *s);
void opts_man_settings(FILE *f, int groups);

/* The flags of each setting group, wrapped, for the main help. */
void opts_group_help(FILE *f, int groups);

#endif
