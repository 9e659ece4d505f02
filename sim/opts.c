/*
 * opts.c - parse a command's arguments against its declaration and resolve
 * the settings into a cluster or a workload (opts.h).
 */
#include "sim/opts.h"

#include <stdlib.h>
#include <string.h>

#include "sim/base/names.h"
#include "workloads/model.h"
#include "workloads/plan.h"

static int own_index(const struct opts_spec *s, const char *name)
{
  for (int k = 0; s->own && s->own[k].name; k++)
    if (names_eq(name, s->own[k].name))
      return k;
  return -1;
}

static int own_short(const struct opts_spec *s, char c)
{
  for (int k = 0; s->own && s->own[k].name; k++)
    if (s->own[k].short_name == c)
      return k;
  return -1;
}

/* Whether `name` is a setting of one of the groups. */
static bool is_setting(int groups, const char *name)
{
  if ((groups & (OPTS_CATALOG | OPTS_CLUSTER)) && strcmp(name, "catalog") == 0)
    return true;
  if ((groups & OPTS_CLUSTER) &&
      (strcmp(name, "cluster") == 0 || strcmp(name, "scale") == 0 ||
       cluster_key_from_name(name) >= 0))
    return true;
  return (groups & OPTS_WORKLOAD) &&
         (strcmp(name, "model") == 0 || model_key_from_name(name) >= 0 ||
          plan_key_from_name(name) >= 0);
}

bool opts_is_setting(int groups, const char *name)
{
  return is_setting(groups, name);
}

const struct opt *opts_own(const struct opts_spec *s, const char *name)
{
  int k = own_index(s, name);
  return k < 0 ? NULL : &s->own[k];
}

/* The closest name the command takes to the unknown `name`, as a flag in
 * `out` ("" when none is close). */
static void suggest(const struct opts_spec *s, const char *name, char *out,
                    size_t size)
{
  const char *best = NULL;
  int bd = 0;
  const char *fixed[] = {"cluster", "catalog", "scale", "model", "help"};
  int n = 0;
  const char *cand[OPTS_MAX_OWN + 8 + CK_COUNT + MK_COUNT + PK_COUNT];
  for (int k = 0; s->own && s->own[k].name; k++)
    cand[n++] = s->own[k].name;
  for (size_t i = 0; i < sizeof fixed / sizeof *fixed; i++)
    if (is_setting(s->groups, fixed[i]) || strcmp(fixed[i], "help") == 0)
      cand[n++] = fixed[i];
  if (s->groups & OPTS_CLUSTER)
    for (int k = 0; k < CK_COUNT; k++)
      cand[n++] = cluster_key_name((enum cluster_key)k);
  if (s->groups & OPTS_WORKLOAD) {
    for (int k = 0; k < MK_COUNT; k++)
      cand[n++] = model_key_name((enum model_key)k);
    for (int k = 0; k < PK_COUNT; k++)
      cand[n++] = plan_key_name((enum plan_key)k);
  }
  for (int i = 0; i < n; i++) {
    int d = names_distance(name, cand[i]);
    if (names_close(name, cand[i]) && (!best || d < bd)) {
      best = cand[i];
      bd = d;
    }
  }
  out[0] = '\0';
  if (!best)
    return;
  char flag[OPTS_MAX_NAME + 2];
  names_flag(best, NULL, flag, sizeof flag);
  snprintf(out, size, " (did you mean '%s'?)", flag);
}

/* A usage error (exit status 2): flag it and format the message. */
#define USAGE_ERR(...) (*usage = true, weft_errf(err, WEFT_EINVAL, __VA_ARGS__))

/* A positional argument. */
static int positional(const struct opts_spec *s, const char *a,
                      struct opts *out, bool *usage, struct weft_err *err)
{
  switch (s->positional) {
  case POS_WORD:
  case POS_WORKLOAD:
    if (!out->positional) {
      out->positional = a;
      return 0;
    }
    break;
  case POS_FILES:
    if (!out->positional)
      out->positional = a;
    out->files[out->n_files++] = a; /* argc is checked against the size */
    return 0;
  case POS_CLUSTER:
    if (!out->cluster) {
      out->cluster = a;
      return 0;
    }
    break;
  case POS_NONE:
    break;
  }
  return USAGE_ERR("%s: unexpected argument '%s'", s->cmd, a);
}

/* Whether an item of --scale's `value` before `upto` (NULL: all) names
 * `factor` ("compute=2,nic=1.5" has compute and nic). */
static bool items_have(const char *value, const char *upto,
                       const char *factor)
{
  size_t n = strlen(factor);
  for (const char *p = value; p && (!upto || p < upto);) {
    const char *end = strpbrk(p, "=,");
    size_t len = end ? (size_t)(end - p) : strlen(p);
    if (len == n && strncmp(p, factor, n) == 0)
      return true;
    p = strchr(p, ',');
    p = p ? p + 1 : NULL;
  }
  return false;
}

/* Whether factor `factor` of --scale is given already: by an item of an
 * earlier --scale, by --scale-FACTOR, or by an item of `value` before
 * `upto` (the --scale being read). */
static bool scale_given(const struct opts *out, const char *factor,
                        const char *value, const char *upto)
{
  char key[OPTS_MAX_NAME];
  snprintf(key, sizeof key, "scale_%s", factor);
  for (int i = 0; i < out->n_set; i++)
    if (names_eq(out->set[i].name, key) ||
        (strcmp(out->set[i].name, "scale") == 0 &&
         items_have(out->set[i].value, NULL, factor)))
      return true;
  return value && items_have(value, upto, factor);
}

/* A factor --scale or --scale-K gives twice would silently take the last
 * value (issue 40); the other settings are refused twice in setting(). */
static int scale_twice(const struct opts *out, const char *name,
                       const char *value, struct weft_err *err)
{
  static const char *const factors[] = {"compute", "hbm_bw", "hbm_cap",
                                        "nvlink", "nic"};
  for (size_t f = 0; f < sizeof factors / sizeof *factors; f++) {
    char key[OPTS_MAX_NAME];
    snprintf(key, sizeof key, "scale_%s", factors[f]);
    if (names_eq(name, key)) {
      if (scale_given(out, factors[f], NULL, NULL))
        return weft_errf(err, WEFT_EINVAL, "--%s: factor %s given twice "
                         "(with --scale)", name, factors[f]);
      continue;
    }
    if (strcmp(name, "scale") != 0)
      continue;
    /* Each item of this --scale against the earlier ones and itself. */
    size_t n = strlen(factors[f]);
    for (const char *p = value; p;) {
      if (strncmp(p, factors[f], n) == 0 && (p[n] == '=' || p[n] == ',' ||
                                             !p[n]) &&
          scale_given(out, factors[f], value, p))
        return weft_errf(err, WEFT_EINVAL, "--scale: factor %s given twice",
                         factors[f]);
      p = strchr(p, ',');
      p = p ? p + 1 : NULL;
    }
  }
  return 0;
}

/* A setting of a group: --cluster, --catalog, or one kept in order. */
static int setting(const char *name, const char *value, struct opts *out,
                   struct weft_err *err)
{
  if (strcmp(name, "cluster") == 0) {
    if (out->cluster)
      return weft_errf(err, WEFT_EINVAL, "--cluster: given twice (or with a "
                       "CLUSTER argument)");
    out->cluster = value;
  } else if (strcmp(name, "catalog") == 0) {
    if (out->n_catalogs == WEFT_MAX_CATALOG_FILES)
      return weft_errf(err, WEFT_ELIMIT, "--catalog: more than %d files",
                       WEFT_MAX_CATALOG_FILES);
    out->catalogs[out->n_catalogs++] = value;
  } else {
    /* A setting given twice would silently take the last value; --scale
     * adds factors and may repeat. */
    if (strcmp(name, "scale") != 0)
      for (int i = 0; i < out->n_set; i++)
        if (names_eq(out->set[i].name, name) || names_eq(name, out->set[i].name))
          return weft_errf(err, WEFT_EINVAL, "--%s: given twice", name);
    int rc = scale_twice(out, name, value, err);
    if (rc)
      return rc;
    if (out->n_set == WEFT_MAX_ARGS) /* cannot happen: argc is checked */
      return weft_errf(err, WEFT_ELIMIT, "more than %d arguments",
                       WEFT_MAX_ARGS);
    snprintf(out->set[out->n_set].name, OPTS_MAX_NAME, "%s", name);
    out->set[out->n_set++].value = value;
  }
  return 0;
}

int opts_parse(const struct opts_spec *s, int argc, char **argv,
               struct opts *out, bool *usage, struct weft_err *err)
{
  memset(out, 0, sizeof *out);
  *usage = false;
  if (argc - 1 > WEFT_MAX_ARGS) {
    *usage = true;
    return weft_errf(err, WEFT_ELIMIT, "%s: more than %d arguments", s->cmd,
                     WEFT_MAX_ARGS);
  }
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i];
    int k;
    if (strcmp(a, "-h") == 0 && own_short(s, 'h') < 0)
      return 1;
    if ((strcmp(a, "-q") == 0 && own_short(s, 'q') < 0) ||
        strcmp(a, "--quiet") == 0) {
      out->quiet = true;
      continue;
    }
    if (a[0] == '-' && a[1] && a[1] != '-' && !a[2]) { /* -o FILE */
      k = own_short(s, a[1]);
      if (k < 0)
        return USAGE_ERR("%s: unknown option '%s'", s->cmd, a);
      if (s->own[k].type == OPT_FLAG) {
        out->own[k] = "yes";
        continue;
      }
      if (i + 1 >= argc)
        return USAGE_ERR("%s: missing %s", a, s->own[k].arg);
      out->own[k] = argv[++i];
      continue;
    }
    /* -j4: a short option's value attached, as getopt takes it.  Only for
     * this command's own letters, so that other words stay positional. */
    if (a[0] == '-' && a[1] && a[1] != '-' && (k = own_short(s, a[1])) >= 0) {
      if (s->own[k].type == OPT_FLAG)
        return USAGE_ERR("-%c: takes no value (in '%s'; give flags one "
                         "at a time)", a[1], a);
      out->own[k] = a + 2;
      continue;
    }
    if (strncmp(a, "--", 2) != 0) {
      int rc = positional(s, a, out, usage, err);
      if (rc)
        return rc;
      continue;
    }
    if (strcmp(a, "--help") == 0)
      return 1;
    char name[OPTS_MAX_NAME];
    const char *eq = strchr(a + 2, '=');
    size_t len = eq ? (size_t)(eq - a - 2) : strlen(a + 2);
    if (len >= sizeof name)
      len = sizeof name - 1;
    memcpy(name, a + 2, len);
    name[len] = '\0';
    k = own_index(s, name);
    if (k < 0 && !is_setting(s->groups, name)) {
      char hint[96];
      suggest(s, name, hint, sizeof hint);
      return USAGE_ERR("%s: unknown option '--%s'%s", s->cmd, name, hint);
    }
    if (k >= 0 && out->own[k])
      return USAGE_ERR("--%s: given twice", name);
    if (k >= 0 && s->own[k].type == OPT_FLAG) {
      if (eq)
        return USAGE_ERR("--%s: takes no value", name);
      out->own[k] = "yes";
      continue;
    }
    const char *value = eq ? eq + 1 : NULL;
    if (!value) {
      /* "--model --json": the next word is an option, not this value. */
      if (i + 1 >= argc || strncmp(argv[i + 1], "--", 2) == 0)
        return weft_errf(err, WEFT_EINVAL, "--%s: missing value", name);
      value = argv[++i];
    }
    if (k >= 0) {
      out->own[k] = value;
      continue;
    }
    int rc = setting(name, value, out, err);
    if (rc)
      return rc;
  }
  return 0;
}

bool opts_has(const struct opts *o, const char *name)
{
  for (int i = 0; i < o->n_set; i++)
    if (names_eq(o->set[i].name, name))
      return true;
  return false;
}

void opts_prepend(struct opts *o, const char *name, const char *value)
{
  if (o->n_set == OPTS_MAX_SET)
    abort(); /* a command prepends fewer than 16 defaults */
  memmove(&o->set[1], &o->set[0], sizeof o->set[0] * (size_t)o->n_set);
  snprintf(o->set[0].name, OPTS_MAX_NAME, "%s", name);
  o->set[0].value = value;
  o->n_set++;
}

/* A user's entry that replaced a built-in one is allowed (it corrects a
 * value without renaming) but said, lest a typo-free name clash go
 * unnoticed: the overrides of cat from the `from`-th on. */
static void warn_overrides(const struct opts *o, const struct catalog *cat,
                           int from)
{
  for (int i = from; i < cat->n_overrides && !o->quiet; i++) {
    const struct catalog_override *v = &cat->overrides[i];
    fprintf(stderr, "weft: warning: %s:%d: <%s> '%s' replaces the built-in "
            "entry of that name\n", v->file, v->line, v->elem, v->name);
  }
}

int opts_catalog(const struct opts *o, struct catalog **out_cat,
                 struct weft_err *err)
{
  struct catalog *cat = catalog_builtin(err);
  if (!cat)
    return err->code;
  for (int i = 0; i < o->n_catalogs; i++) {
    int rc = catalog_load_file(cat, o->catalogs[i], err);
    if (rc) {
      catalog_free(cat);
      return rc;
    }
  }
  warn_overrides(o, cat, 0);
  *out_cat = cat;
  return 0;
}

/* The catalog's entries of each kind before a file is read: those after
 * are the file's inline hardware. */
struct cat_mark {
  int gpus, nics, nodes;
};

static struct cat_mark cat_mark(const struct catalog *cat)
{
  return (struct cat_mark){cat->n_gpus, cat->n_nics, cat->n_nodes};
}

/* Whether the resolved part `used` ("H100-SXM", or "H100-SXM (future)"
 * when projected) is the catalog entry `name`. */
static bool same_part(const char *used, const char *name)
{
  size_t n = strlen(name);
  return strncmp(used, name, n) == 0 && (used[n] == '\0' || used[n] == ' ');
}

/* Inline hardware a file defines that its cluster does not use is said
 * (issue 40: a <node> left unnamed by node= on <cluster> was silently
 * ignored): the entries of cat from `m` to `end`, read from `file`. */
static void warn_unused(const struct opts *o, const struct catalog *cat,
                        struct cat_mark m, struct cat_mark end,
                        const char *file, const struct cluster *c)
{
  if (o->quiet || !file)
    return;
  for (int i = m.nodes; i < end.nodes; i++)
    if (strcmp(cat->nodes[i].name, c->node_type) != 0)
      fprintf(stderr, "weft: warning: %s: <node> '%s' is defined but not "
              "used: the cluster's nodes are %s (node=\"%s\" on <cluster> "
              "or --node %s uses it)\n", file, cat->nodes[i].name,
              c->node_type, cat->nodes[i].name, cat->nodes[i].name);
  for (int i = m.gpus; i < end.gpus; i++)
    if (!same_part(c->gpu.name, cat->gpus[i].name))
      fprintf(stderr, "weft: warning: %s: GPU '%s' is defined but not used: "
              "the cluster's GPU is %s (a <node> with gpu=\"%s\" that the "
              "cluster uses, or --gpu %s, uses it)\n", file,
              cat->gpus[i].name, c->gpu.name, cat->gpus[i].name,
              cat->gpus[i].name);
  for (int i = m.nics; i < end.nics; i++)
    if (!same_part(c->nic.name, cat->nics[i].name))
      fprintf(stderr, "weft: warning: %s: <nic> '%s' is defined but not "
              "used: the cluster's NIC is %s (--nic %s uses it)\n", file,
              cat->nics[i].name, c->nic.name, cat->nics[i].name);
}

int opts_cluster(const struct opts *o, const char *default_cluster,
                 struct catalog **out_cat, struct cluster *out,
                 struct weft_err *err)
{
  struct catalog *cat;
  int rc = opts_catalog(o, &cat, err);
  if (rc)
    return rc;
  int said = cat->n_overrides;
  struct cat_mark mark = cat_mark(cat);
  struct cluster_desc d;
  cluster_desc_init(&d);
  rc = cluster_desc_load(&d, cat, o->cluster ? o->cluster : default_cluster,
                         err);
  struct cat_mark end = cat_mark(cat);
  if (!rc)
    warn_overrides(o, cat, said); /* a cluster file's inline hardware */
  if (rc && o->cluster && rc != WEFT_EIO && !strchr(err->msg, ':'))
    weft_err_prefix(err, "--cluster");
  for (int i = 0; i < o->n_set && !rc; i++) {
    char origin[80];
    snprintf(origin, sizeof origin, "--%s", o->set[i].name);
    if (strcmp(o->set[i].name, "scale") == 0)
      rc = cluster_desc_set_scale(&d, o->set[i].value, origin, 2, err);
    else
      rc = cluster_desc_set(&d,
                            (enum cluster_key)cluster_key_from_name(
                                o->set[i].name),
                            o->set[i].value, origin, 2, err);
  }
  if (!rc)
    rc = cluster_resolve(&d, cat, out, err);
  if (rc) {
    catalog_free(cat);
    return rc;
  }
  warn_unused(o, cat, mark, end, o->cluster, out);
  *out_cat = cat;
  return 0;
}

/* A split of the layers over the pipeline's stages that nobody asked to
 * be uneven is said on stderr (the simulation goes on with it). */
static void warn_uneven(const struct plan *p, const struct model *m)
{
  long n = p->pp * p->vchunks;
  if (n < 2 || m->layers % n == 0 || p->first_layers || p->last_layers ||
      p->split_units)
    return;
  fprintf(stderr, "weft: warning: %ld layers do not divide evenly over %ld "
          "pipeline stages%s; layers per stage:", m->layers, n,
          p->vchunks > 1 ? " (virtual)" : "");
  for (long v = 0; v < n && v < 16; v++) {
    long first, count;
    plan_chunk_layers(p, m, v % p->pp, v / p->pp, &first, &count);
    fprintf(stderr, " %ld", count);
  }
  fprintf(stderr, "%s (first_stage_layers and last_stage_layers choose the "
          "split)\n", n > 16 ? " ..." : "");
}

static int load_workload(const struct opts *o, const char *default_cluster,
                         bool resolve_plan, struct workload *w,
                         struct catalog **out_cat, struct cluster *out_c,
                         struct weft_err *err);

int opts_workload(const struct opts *o, const char *default_cluster,
                  struct workload *w, struct catalog **out_cat,
                  struct cluster *out_c, struct weft_err *err)
{
  return load_workload(o, default_cluster, true, w, out_cat, out_c, err);
}

int opts_workload_hw(const struct opts *o, const char *default_cluster,
                     struct workload *w, struct catalog **out_cat,
                     struct cluster *out_c, struct weft_err *err)
{
  return load_workload(o, default_cluster, false, w, out_cat, out_c, err);
}

/* The model settings a model of no preset cannot do without (model_check). */
static const enum model_key custom_required[] = {
    MK_LAYERS, MK_HIDDEN, MK_HEADS, MK_FFN, MK_VOCAB, MK_SEQ};

/* "--layers, --hidden, --heads, --ffn, --vocab and --seq" into buf: the
 * required keys, all of them or (missing) those not given. */
static void required_flags(const struct opts *o, bool missing, char *buf,
                           size_t size)
{
  const char *names[sizeof custom_required / sizeof *custom_required];
  int n = 0;
  for (size_t i = 0; i < sizeof custom_required / sizeof *custom_required;
       i++) {
    const char *key = model_key_name(custom_required[i]);
    if (!missing || !opts_has(o, key))
      names[n++] = key;
  }
  size_t len = 0;
  buf[0] = '\0';
  for (int i = 0; i < n && len < size; i++) {
    char flag[OPTS_MAX_NAME + 2];
    names_flag(names[i], NULL, flag, sizeof flag);
    len += (size_t)snprintf(buf + len, size - len, "%s%s",
                            i == 0 ? "" : i == n - 1 ? " and " : ", ", flag);
  }
}

/* No --model and no workload model: model settings on the command line
 * make a model of no preset, labelled "custom", as a <model> without
 * preset= does in a file; it needs every required setting, said by flag. */
static int custom_model(const struct opts *o, struct workload *w,
                        struct weft_err *err)
{
  bool any = false;
  for (int i = 0; i < o->n_set; i++)
    any |= model_key_from_name(o->set[i].name) >= 0;
  if (!any)
    return 0; /* no_model says so once every flag is checked */
  char flags[160];
  required_flags(o, true, flags, sizeof flags);
  if (flags[0])
    return weft_errf(err, WEFT_EINVAL, "%s: required by a model of no "
                     "preset (or name one: --model NAME, weft list models)",
                     flags);
  workload_custom_model(w);
  for (int k = 0; k < MK_COUNT; k++)
    names_flag(model_key_name((enum model_key)k), NULL, w->model.origin[k],
               sizeof w->model.origin[k]);
  return 0;
}

/* No model at all, after the flags: the three ways to give one. */
static int no_model(const struct opts *o, struct weft_err *err)
{
  char flags[160];
  required_flags(o, false, flags, sizeof flags);
  return weft_errf(err, WEFT_EINVAL, "no model: give --model NAME (weft list "
                   "models), a workload file with <model>, or a custom "
                   "model's %s", flags);
}

static int load_workload(const struct opts *o, const char *default_cluster,
                         bool resolve_plan, struct workload *w,
                         struct catalog **out_cat, struct cluster *out_c,
                         struct weft_err *err)
{
  struct catalog *cat;
  int rc = opts_catalog(o, &cat, err);
  if (rc)
    return rc;
  int said = cat->n_overrides;
  struct cat_mark mark = cat_mark(cat);
  workload_init(w);
  if (o->positional)
    rc = workload_read_file(w, cat, o->positional, err);
  struct cat_mark mid = cat_mark(cat);
  if (!rc && o->cluster) {
    cluster_desc_init(&w->cluster);
    rc = cluster_desc_load(&w->cluster, cat, o->cluster, err);
    if (rc && !strchr(err->msg, ':'))
      weft_err_prefix(err, "--cluster");
    w->have_cluster = true;
  }
  struct cat_mark end = cat_mark(cat);
  if (!rc)
    warn_overrides(o, cat, said); /* the workload's or cluster's hardware */
  /* --model first, so that --layers and friends apply on top of it. */
  for (int i = 0; i < o->n_set && !rc; i++)
    if (strcmp(o->set[i].name, "model") == 0)
      rc = workload_flag(w, o->set[i].name, o->set[i].value, err);
  if (!rc && !w->have_model)
    rc = custom_model(o, w, err);
  /* Plan settings no file gives are the flags' to answer for (a missing
   * global batch is --global-batch's, not the plan's). */
  for (int k = 0; k < PK_COUNT && !o->positional; k++)
    names_flag(plan_key_name((enum plan_key)k), NULL, w->plan.origin[k],
               sizeof w->plan.origin[k]);
  for (int i = 0; i < o->n_set && !rc; i++) {
    if (strcmp(o->set[i].name, "model") == 0)
      continue;
    rc = workload_flag(w, o->set[i].name, o->set[i].value, err);
    if (rc == 1) /* opts_parse let through only known settings */
      rc = weft_errf(err, WEFT_EINVAL, "--%s: not a workload setting",
                     o->set[i].name);
  }
  if (!rc && !w->have_model)
    rc = no_model(o, err);
  if (!rc)
    rc = resolve_plan ? workload_resolve(w, cat, default_cluster, out_c, err)
                      : workload_resolve_hw(w, cat, default_cluster, out_c,
                                            err);
  if (rc) {
    catalog_free(cat);
    return rc;
  }
  warn_unused(o, cat, mark, mid, o->positional, out_c);
  warn_unused(o, cat, mid, end, o->cluster, out_c);
  if (!o->quiet && resolve_plan)
    warn_uneven(&w->plan, &w->model);
  if (!o->quiet && w->model_is_config && w->hf.unknown[0])
    fprintf(stderr, "weft: warning: %s: fields weft does not know, taken as "
            "not changing the cost: %s\n", w->hf.path, w->hf.unknown);
  *out_cat = cat;
  return 0;
}

/* ---- help ------------------------------------------------------------- */

/* Words wrapped at 78 columns after an indent. */
struct wrap {
  FILE *f;
  int col;
};

static void word(struct wrap *w, const char *a, const char *b)
{
  int len = (int)(strlen(a) + strlen(b)) + 1;
  if (w->col + len > 78) {
    fprintf(w->f, "\n   ");
    w->col = 3;
  }
  fprintf(w->f, " %s%s", a, b);
  w->col += len;
}

/* A key of a settings table as a flag and its value: "--gpus-per-node N". */
static void key_word(struct wrap *w, const char *key, const char *hint)
{
  char flag[OPTS_MAX_NAME + 2];
  names_flag(key, NULL, flag, sizeof flag);
  char val[192];
  snprintf(val, sizeof val, " %s", hint);
  word(w, flag, val);
}

void opts_group_help(FILE *f, int groups)
{
  struct wrap w = {f, 0};
  if (groups & OPTS_CLUSTER) {
    fprintf(f, "  cluster settings:");
    w.col = 19;
    word(&w, "--cluster", " NAME|FILE");
    word(&w, "--catalog", " FILE");
    word(&w, "--scale", " compute=F,hbm_bw=F,hbm_cap=F,nvlink=F,nic=F");
    for (int k = 0; k < CK_COUNT; k++)
      key_word(&w, cluster_key_name((enum cluster_key)k),
               cluster_key_hint((enum cluster_key)k));
    fprintf(f, "\n");
  } else if (groups & OPTS_CATALOG) {
    fprintf(f, "  catalog: --catalog FILE (up to %d)\n", WEFT_MAX_CATALOG_FILES);
  }
  if (groups & OPTS_WORKLOAD) {
    fprintf(f, "  model settings:");
    w.col = 17;
    word(&w, "--model", " NAME");
    for (int k = 0; k < MK_COUNT; k++)
      key_word(&w, model_key_name((enum model_key)k),
               model_key_hint((enum model_key)k));
    fprintf(f, "\n  plan settings:");
    w.col = 16;
    for (int k = 0; k < PK_COUNT; k++)
      key_word(&w, plan_key_name((enum plan_key)k),
               plan_key_hint((enum plan_key)k));
    fprintf(f, "\n");
  }
}

/* One option line: the flag in a 28-column field (or on its own line when
 * longer), the help wrapped at 79 columns under itself. */
static bool man_format; /* opts_man: troff instead of text */

/* Text for troff: a leading '.' or '\'' escaped, backslashes doubled. */
static void man_text(FILE *f, const char *t)
{
  bool bol = true;
  for (const char *p = t; *p; p++) {
    if (bol && (*p == '.' || *p == '\''))
      fputs("\\&", f);
    if (*p == '\\')
      fputs("\\e", f);
    else if (*p == '-')
      fputs("\\-", f);
    else
      fputc(*p, f);
    bol = *p == '\n';
  }
}

static void opt_line(FILE *f, const char *left, const char *help)
{
  enum { COL = 29, WIDTH = 79 };
  if (man_format) {
    fputs(".TP\n\\fB", f);
    man_text(f, left);
    fputs("\\fR\n", f);
    man_text(f, help);
    fputc('\n', f);
    return;
  }
  int col = fprintf(f, "  %s", left);
  if (col >= COL) {
    fputc('\n', f);
    col = 0;
  }
  fprintf(f, "%*s", COL - col, "");
  col = COL;
  const char *p = help;
  while (*p) {
    const char *sp = strchr(p, ' ');
    int len = sp ? (int)(sp - p) : (int)strlen(p);
    if (col > COL && col + 1 + len > WIDTH) {
      fprintf(f, "\n%*s", COL, "");
      col = COL;
    } else if (col > COL) {
      fputc(' ', f);
      col++;
    }
    fprintf(f, "%.*s", len, p);
    col += len;
    p += len;
    while (*p == ' ')
      p++;
  }
  fputc('\n', f);
}

/* A heading of the settings help. */
static void heading(FILE *f, const char *text)
{
  if (man_format) {
    fputs(".SS ", f);
    man_text(f, text);
    fputc('\n', f);
  } else {
    fprintf(f, "\n%s:\n", text);
  }
}

void opts_settings_help(FILE *f, int groups)
{
  char left[96];
  if (groups & OPTS_CLUSTER) {
    heading(f, "cluster settings (on top of --cluster's preset or file)");
    opt_line(f, "--cluster NAME|FILE",
             "cluster preset (weft list clusters) or cluster file");
    opt_line(f, "--catalog FILE", "more GPUs, NICs, nodes and clusters "
             "(XML; up to 8 files)");
    opt_line(f, "--scale K=F,...", "what-if factors: compute, hbm_bw, "
             "hbm_cap, nvlink, nic (as the --scale-* settings)");
    for (int k = 0; k < CK_COUNT; k++) {
      names_flag(cluster_key_name((enum cluster_key)k),
                 cluster_key_hint((enum cluster_key)k), left, sizeof left);
      opt_line(f, left, cluster_key_help((enum cluster_key)k));
    }
  } else if (groups & OPTS_CATALOG) {
    heading(f, "catalog");
    opt_line(f, "--catalog FILE", "more GPUs, NICs, nodes and clusters "
             "(XML; up to 8 files)");
  }
  if (groups & OPTS_WORKLOAD) {
    heading(f, "model settings (on top of --model's preset or config; "
            "without one, --layers, --hidden, --heads, --ffn, --vocab and "
            "--seq make a custom model)");
    opt_line(f, "--model NAME", "model preset (weft list models), or a Hugging"
             " Face config.json (FILE.json or a path; give --seq)");
    for (int k = 0; k < MK_COUNT; k++) {
      names_flag(model_key_name((enum model_key)k),
                 model_key_hint((enum model_key)k), left, sizeof left);
      opt_line(f, left, model_key_help((enum model_key)k));
    }
    heading(f, "plan settings");
    for (int k = 0; k < PK_COUNT; k++) {
      names_flag(plan_key_name((enum plan_key)k),
                 plan_key_hint((enum plan_key)k), left, sizeof left);
      opt_line(f, left, plan_key_help((enum plan_key)k));
    }
  }
}

/* A command's own options, a line each ("-o, --output FILE  help"). */
static void own_options(FILE *f, const struct opts_spec *s)
{
  for (int k = 0; s->own && s->own[k].name; k++) {
    const struct opt *o = &s->own[k];
    char left[64];
    int n = o->short_name ? snprintf(left, sizeof left, "-%c, ", o->short_name)
                          : 0;
    snprintf(left + n, sizeof left - (size_t)n, "--%s%s%s", o->name,
             o->type == OPT_VALUE ? " " : "",
             o->type == OPT_VALUE ? o->arg : "");
    opt_line(f, left, o->help);
  }
}

void opts_usage(FILE *f, const struct opts_spec *s)
{
  fprintf(f, "usage: weft %s", s->cmd);
  if (s->pos_name) /* a command word (coll's OP) is required */
    fprintf(f, s->positional != POS_NONE ? " [%s]" : " %s", s->pos_name);
  fprintf(f, " [options]\n");
  if (s->about)
    fprintf(f, "\n%s\n", s->about);
  fprintf(f, "\noptions:\n");
  own_options(f, s);
  opt_line(f, "-q, --quiet", "no warnings on standard error");
  opt_line(f, "-h, --help", "show this help");
  opts_settings_help(f, s->groups);
  if (s->example)
    fprintf(f, "\nexamples:\n%s", s->example);
}

void opts_man(FILE *f, const struct opts_spec *s)
{
  man_format = true;
  fputs(".SS weft ", f);
  man_text(f, s->cmd);
  if (s->pos_name) {
    fputs(s->positional != POS_NONE ? " [" : " ", f);
    man_text(f, s->pos_name);
    fputs(s->positional != POS_NONE ? "]" : "", f);
  }
  fputs(" [options]\n", f);
  if (s->about) {
    man_text(f, s->about);
    fputc('\n', f);
  }
  own_options(f, s);
  if (s->example) {
    fputs(".PP\nExamples:\n.nf\n", f);
    man_text(f, s->example);
    fputs(".fi\n", f);
  }
  man_format = false;
}

void opts_man_settings(FILE *f, int groups)
{
  man_format = true;
  opts_settings_help(f, groups);
  man_format = false;
}
