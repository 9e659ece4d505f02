/*
 * workload_opts.c - the command-line side of workloads, shared by the
 * subcommands that take a scenario (graph, and later run): a positional
 * WORKLOAD.xml, --cluster, --catalog, and every model, plan and cluster
 * setting as a flag.
 */
#include "sim/workload_opts.h"

#include <stdio.h>
#include <string.h>

int workload_opts_resolve(int argc, char **argv, const char *cmd,
                          const char *const *own_flags,
                          const char **own_values, struct workload *w,
                          struct catalog **out_cat, struct cluster *out_c,
                          struct weft_err *err, int *usage)
{
  const char *file = NULL, *cluster = NULL;
  const char *catalogs[8];
  int n_catalogs = 0;
  struct { const char *name, *value; } flags[128];
  static char names[128][64];
  int n_flags = 0;
  *usage = 0;
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i];
    if (strcmp(a, "-o") == 0) {
      if (i + 1 >= argc) {
        *usage = 1;
        return weft_errf(err, WEFT_EINVAL, "-o: missing file name");
      }
      for (int k = 0; own_flags[k]; k++)
        if (strcmp(own_flags[k], "output") == 0)
          own_values[k] = argv[i + 1];
      i++;
      continue;
    }
    if (strncmp(a, "--", 2) != 0) {
      if (file) {
        *usage = 1;
        return weft_errf(err, WEFT_EINVAL, "%s: unexpected argument '%s'", cmd,
                         a);
      }
      file = a;
      continue;
    }
    const char *name, *value;
    if (!cli_opt(argc, argv, &i, &name, &value, err))
      return WEFT_EINVAL;
    bool own = false;
    for (int k = 0; own_flags[k]; k++)
      if (strcmp(own_flags[k], name) == 0) {
        own_values[k] = value;
        own = true;
      }
    if (own)
      continue;
    if (strcmp(name, "cluster") == 0) {
      cluster = value;
    } else if (strcmp(name, "catalog") == 0) {
      if (n_catalogs == 8)
        return weft_errf(err, WEFT_ELIMIT, "--catalog: more than 8 files");
      catalogs[n_catalogs++] = value;
    } else {
      if (n_flags == 128)
        return weft_errf(err, WEFT_ELIMIT, "more than 128 flags");
      snprintf(names[n_flags], sizeof names[0], "%s", name);
      flags[n_flags].name = names[n_flags];
      flags[n_flags].value = value;
      n_flags++;
    }
  }
  struct catalog *cat = catalog_builtin(err);
  if (!cat)
    return err->code;
  int rc = 0;
  workload_init(w);
  for (int i = 0; i < n_catalogs && !rc; i++)
    rc = catalog_load_file(cat, catalogs[i], err);
  if (!rc && file)
    rc = workload_read_file(w, cat, file, err);
  if (!rc && cluster) {
    cluster_desc_init(&w->cluster);
    rc = cluster_desc_load(&w->cluster, cat, cluster, err);
    if (rc && !strchr(err->msg, ':'))
      weft_err_prefix(err, "--cluster");
    w->have_cluster = true;
  }
  /* --model first, so that --layers and friends apply on top of it. */
  for (int i = 0; i < n_flags && !rc; i++)
    if (strcmp(flags[i].name, "model") == 0)
      rc = workload_flag(w, flags[i].name, flags[i].value, err);
  for (int i = 0; i < n_flags && !rc; i++) {
    if (strcmp(flags[i].name, "model") == 0)
      continue;
    rc = workload_flag(w, flags[i].name, flags[i].value, err);
    if (rc == 1) {
      *usage = 1;
      rc = weft_errf(err, WEFT_EINVAL, "%s: unknown option '--%s'", cmd,
                     flags[i].name);
    }
  }
  if (!rc)
    rc = workload_resolve(w, cat, "selene", out_c, err);
  if (rc) {
    catalog_free(cat);
    return rc;
  }
  *out_cat = cat;
  return 0;
}
