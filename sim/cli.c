/*
 * cli.c - option splitting and the cluster flags common to subcommands.
 */
#include "sim/cli.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

int cli_fail(const struct weft_err *err)
{
  fprintf(stderr, "weft: %s\n", err->msg);
  return 1;
}

int cli_usage(const char *fmt, ...)
{
  va_list ap;
  va_start(ap, fmt);
  fprintf(stderr, "weft: ");
  vfprintf(stderr, fmt, ap);
  fprintf(stderr, "\n");
  va_end(ap);
  return 2;
}

bool cli_opt(int argc, char **argv, int *i, const char **name,
             const char **value, struct weft_err *err)
{
  static char buf[128];
  const char *a = argv[*i] + 2;
  const char *eq = strchr(a, '=');
  if (eq) {
    size_t n = (size_t)(eq - a);
    if (n >= sizeof buf)
      n = sizeof buf - 1;
    memcpy(buf, a, n);
    buf[n] = '\0';
    *name = buf;
    *value = eq + 1;
    return true;
  }
  snprintf(buf, sizeof buf, "%s", a);
  *name = buf;
  if (*i + 1 >= argc) {
    weft_errf(err, WEFT_EINVAL, "--%s: missing value", buf);
    return false;
  }
  *value = argv[++*i];
  return true;
}

bool cluster_opts_take(struct cluster_opts *o, const char *name,
                       const char *value, struct weft_err *err, int *rc)
{
  *rc = 0;
  if (strcmp(name, "cluster") == 0) {
    o->cluster = value;
    return true;
  }
  if (strcmp(name, "catalog") == 0) {
    if (o->n_catalog_files >= 8) {
      *rc = weft_errf(err, WEFT_ELIMIT, "--catalog: more than 8 files");
      return true;
    }
    o->catalog_files[o->n_catalog_files++] = value;
    return true;
  }
  if (strcmp(name, "scale") != 0 && cluster_key_from_name(name) < 0)
    return false;
  if (o->n_flags >= 64) {
    *rc = weft_errf(err, WEFT_ELIMIT, "--%s: more than 64 cluster flags",
                    name);
    return true;
  }
  /* `name` lives in cli_opt's static buffer: keep our own copy. */
  static char names[64][64];
  snprintf(names[o->n_flags], sizeof names[0], "%s", name);
  o->flags[o->n_flags].name = names[o->n_flags];
  o->flags[o->n_flags].value = value;
  o->n_flags++;
  return true;
}

int cluster_opts_resolve(const struct cluster_opts *o,
                         const char *default_cluster,
                         struct catalog **out_cat, struct cluster *out,
                         struct weft_err *err)
{
  struct catalog *cat = catalog_builtin(err);
  if (!cat)
    return err->code;
  int rc = 0;
  for (int i = 0; i < o->n_catalog_files && !rc; i++)
    rc = catalog_load_file(cat, o->catalog_files[i], err);
  struct cluster_desc d;
  cluster_desc_init(&d);
  if (!rc)
    rc = cluster_desc_load(&d, cat, o->cluster ? o->cluster : default_cluster,
                           err);
  if (rc && o->cluster && rc != WEFT_EIO && !strchr(err->msg, ':'))
    weft_err_prefix(err, "--cluster");
  for (int i = 0; i < o->n_flags && !rc; i++) {
    char origin[80];
    snprintf(origin, sizeof origin, "--%s", o->flags[i].name);
    if (strcmp(o->flags[i].name, "scale") == 0)
      rc = cluster_desc_set_scale(&d, o->flags[i].value, origin, 2, err);
    else
      rc = cluster_desc_set(&d,
                            (enum cluster_key)cluster_key_from_name(
                                o->flags[i].name),
                            o->flags[i].value, origin, 2, err);
  }
  if (!rc)
    rc = cluster_resolve(&d, cat, out, err);
  if (rc) {
    catalog_free(cat);
    return rc;
  }
  *out_cat = cat;
  return 0;
}
