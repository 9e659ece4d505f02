/*
 * study.c - read a study file and expand it (study.h).
 *
 * Two passes over the document: the first gathers the names (the CSV's
 * columns, in order of first appearance) and checks every element, so that
 * a typo fails before anything runs; the second builds the table.  Every
 * string the table points to is owned by its pool, so cells can share.
 */
#include "analysis/study.h"

#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sim/base/bounds.h"
#include "sim/base/expr.h"
#include "sim/base/xalloc.h"
#include "sim/base/xin.h"

#define MAX_AXIS_VALUES 100000

/* A value list of one <axis>. */
struct axis {
  int col;
  long n;
  char **v; /* into the pool */
};

/* One factor of a product: an axis, or a <zip> of several. */
struct factor {
  int naxes;
  struct axis *axes;
  long n;
};

struct derive {
  int col; /* -1 for a <where> */
  struct expr *e;
  char origin[WEFT_MAX_ORIGIN];
};

struct loader {
  const struct xin_doc *doc;
  study_classify_fn classify;
  struct study *s;
  struct weft_err *err;
  bool given[STUDY_MAX_VARS];   /* by <set>, a generator or a <var> value */
  bool derived[STUDY_MAX_VARS];
  bool declared[STUDY_MAX_VARS]; /* by <var> */
  struct derive *derives;
  int nderives;
};

static char *pool_add(struct study *s, char *str)
{
  if (s->npool == s->cap_pool) {
    s->cap_pool = s->cap_pool ? 2 * s->cap_pool : 64;
    s->pool = xreallocarray(s->pool, (size_t)s->cap_pool, sizeof *s->pool);
  }
  return s->pool[s->npool++] = str;
}

static void canon(const char *name, char *out)
{
  size_t i = 0;
  for (; name[i] && i < STUDY_MAX_NAME - 1; i++)
    out[i] = name[i] == '-' ? '_' : name[i];
  out[i] = '\0';
}

static int col_find(const struct study *s, const char *name)
{
  char c[STUDY_MAX_NAME];
  canon(name, c);
  for (int k = 0; k < s->ncols; k++)
    if (strcmp(s->cols[k].name, c) == 0)
      return k;
  return -1;
}

/* A new column; its index, or an error past the limit. */
static int col_add(struct loader *L, const struct xin_elem *e,
                   const char *name, enum study_use use)
{
  struct study *s = L->s;
  if (s->ncols == STUDY_MAX_VARS)
    return xin_errf(L->doc, e, L->err, WEFT_ELIMIT, "more than %d names",
                    STUDY_MAX_VARS);
  canon(name, s->cols[s->ncols].name);
  s->cols[s->ncols].use = use;
  return s->ncols++;
}

/* 0 if `name` can name a column, else an error. */
static int name_check(struct loader *L, const struct xin_elem *e,
                      const char *name)
{
  if (strlen(name) >= STUDY_MAX_NAME || !*name)
    return xin_errf(L->doc, e, L->err, WEFT_EINVAL, "'%s' is not a name",
                    name);
  for (const char *p = name; *p; p++)
    if (!isalnum((unsigned char)*p) && *p != '_' && *p != '-')
      return xin_errf(L->doc, e, L->err, WEFT_EINVAL, "'%s' is not a name "
                      "(letters, digits, '_' and '-')", name);
  return 0;
}

/* The column of `name`, added on first sight (pass 1). */
static int col_use(struct loader *L, const struct xin_elem *e,
                   const char *name)
{
  struct study *s = L->s;
  int k = col_find(s, name);
  if (k >= 0)
    return k;
  int rc = name_check(L, e, name);
  if (rc)
    return rc;
  enum study_use use;
  if (L->classify(name, &use) != 0)
    return xin_errf(L->doc, e, L->err, WEFT_ENOTFOUND, "'%s' is not a "
                    "setting of weft run; a value of the study's own needs "
                    "<var name=\"%s\"/>", name, name);
  return col_add(L, e, name, use);
}

/* --- pass 1: names ------------------------------------------------------ */

struct attr_ctx {
  struct loader *L;
  const struct xin_elem *e;
  char **row;      /* pass 2: the row to fill, NULL in pass 1 */
  bool seen[STUDY_MAX_VARS];
};

static int attr_name(void *ctx, const char *name, const char *value,
                     const char *origin, struct weft_err *err)
{
  struct attr_ctx *a = ctx;
  (void)origin;
  (void)err;
  int k = col_use(a->L, a->e, name);
  if (k < 0)
    return k;
  if (a->seen[k])
    return xin_errf(a->L->doc, a->e, a->L->err, WEFT_EINVAL, "'%s' is given "
                    "twice", name);
  a->seen[k] = true;
  if (!*value)
    return xin_errf(a->L->doc, a->e, a->L->err, WEFT_EINVAL, "'%s' is empty",
                    name);
  a->L->given[k] = true;
  if (a->row)
    a->row[k] = pool_add(a->L->s, xstrdup(value));
  return 0;
}

static int names_of_axis(struct loader *L, const struct xin_elem *e,
                         bool *seen)
{
  static const char *const attrs[] = {"name", "values", "from", "to", "step",
                                      "times", NULL};
  char name[STUDY_MAX_NAME + 8];
  int rc = xin_check_attrs(L->doc, e, attrs, L->err);
  if (!rc)
    rc = xin_str(L->doc, e, "name", true, name, sizeof name, L->err);
  if (rc)
    return rc;
  int k = col_use(L, e, name);
  if (k < 0)
    return k;
  if (seen[k])
    return xin_errf(L->doc, e, L->err, WEFT_EINVAL, "'%s' has two axes in "
                    "one generator", name);
  seen[k] = true;
  L->given[k] = true;
  bool list = xin_has(e, "values"), range = xin_has(e, "from") ||
                                             xin_has(e, "to");
  if (list == range)
    return xin_errf(L->doc, e, L->err, WEFT_EINVAL, "give either 'values' or "
                    "a range ('from', 'to' and 'step' or 'times')");
  if (range && xin_has(e, "step") == xin_has(e, "times"))
    return xin_errf(L->doc, e, L->err, WEFT_EINVAL, "a range needs 'step' or "
                    "'times' (one of them)");
  if (list && (xin_has(e, "step") || xin_has(e, "times")))
    return xin_errf(L->doc, e, L->err, WEFT_EINVAL, "'step' and 'times' go "
                    "with a range, not with 'values'");
  return 0;
}

static int names_of_generator(struct loader *L, const struct xin_elem *g)
{
  static const char *const none[] = {NULL};
  bool seen[STUDY_MAX_VARS] = {false};
  const char *gn = xin_name(g);
  if (strcmp(gn, "scenario") == 0) {
    struct attr_ctx a = {L, g, NULL, {false}};
    int rc = xin_each_attr(L->doc, g, STUDY_MAX_VALUE, attr_name, &a, L->err);
    bool any = false;
    for (int k = 0; k < STUDY_MAX_VARS; k++)
      any |= a.seen[k];
    if (!rc && xin_child(g))
      rc = xin_errf(L->doc, xin_child(g), L->err, WEFT_EINVAL, "a scenario "
                    "holds no elements; its settings are attributes");
    else if (!rc && !any)
      rc = xin_errf(L->doc, g, L->err, WEFT_EINVAL, "an empty scenario");
    return rc;
  }
  int rc = xin_check_attrs(L->doc, g, none, L->err);
  if (rc)
    return rc;
  if (!xin_child(g))
    return xin_errf(L->doc, g, L->err, WEFT_EINVAL, "no <axis> inside");
  for (const struct xin_elem *c = xin_child(g); c; c = xin_next(c)) {
    if (strcmp(xin_name(c), "axis") == 0) {
      rc = names_of_axis(L, c, seen);
    } else if (strcmp(xin_name(c), "zip") == 0 && strcmp(gn, "cross") == 0) {
      rc = xin_check_attrs(L->doc, c, none, L->err);
      if (!rc && !xin_child(c))
        rc = xin_errf(L->doc, c, L->err, WEFT_EINVAL, "no <axis> inside");
      for (const struct xin_elem *x = xin_child(c); x && !rc; x = xin_next(x))
        rc = strcmp(xin_name(x), "axis") == 0
                 ? names_of_axis(L, x, seen)
                 : xin_errf(L->doc, x, L->err, WEFT_EINVAL, "unknown element "
                            "in <zip>; expected <axis>");
    } else {
      rc = xin_errf(L->doc, c, L->err, WEFT_EINVAL, "unknown element in "
                    "<%s>; expected <axis>%s", gn,
                    strcmp(gn, "cross") == 0 ? " or <zip>" : "");
    }
    if (rc)
      return rc;
  }
  return 0;
}

static int check_var(void *ctx, const char *name)
{
  struct loader *L = ctx;
  if (col_find(L->s, name) >= 0)
    return 0;
  return weft_errf(L->err, WEFT_EINVAL, "'%s' is not a name of the study",
                   name);
}

static int pass1_derive(struct loader *L, const struct xin_elem *e,
                        bool where)
{
  static const char *const dattrs[] = {"name", "expr", NULL};
  static const char *const wattrs[] = {"expr", NULL};
  char name[STUDY_MAX_NAME + 8];
  char *src = xmalloc(EXPR_MAX_LEN + 2);
  int rc = xin_check_attrs(L->doc, e, where ? wattrs : dattrs, L->err);
  if (!rc && !where)
    rc = xin_str(L->doc, e, "name", true, name, sizeof name, L->err);
  if (!rc)
    rc = xin_str(L->doc, e, "expr", true, src, EXPR_MAX_LEN + 2, L->err);
  int k = -1;
  if (!rc && !where) {
    k = col_use(L, e, name);
    if (k < 0)
      rc = k;
    else if (L->given[k] || L->derived[k])
      rc = xin_errf(L->doc, e, L->err, WEFT_EINVAL, "'%s' is %s; derive it "
                    "or give it, not both", name,
                    L->derived[k] ? "derived twice" : "given a value too");
    else
      L->derived[k] = true;
  }
  struct derive d = {k, NULL, ""};
  if (!rc) {
    xin_origin(L->doc, e, "expr", d.origin, sizeof d.origin);
    d.e = expr_parse(src, d.origin, L->err);
    if (!d.e)
      rc = L->err->code;
  }
  free(src);
  if (rc)
    return rc;
  L->derives = xreallocarray(L->derives, (size_t)L->nderives + 1,
                             sizeof *L->derives);
  L->derives[L->nderives++] = d;
  return 0;
}

static int pass1(struct loader *L, const struct xin_elem *root)
{
  static const char *const var_attrs[] = {"name", "value", NULL};
  int rc = 0;
  /* <var> first: they may be used before they are declared. */
  for (const struct xin_elem *e = xin_child(root); e && !rc; e = xin_next(e)) {
    if (strcmp(xin_name(e), "var") != 0)
      continue;
    char name[STUDY_MAX_NAME + 8], value[STUDY_MAX_VALUE + 1];
    rc = xin_check_attrs(L->doc, e, var_attrs, L->err);
    if (!rc)
      rc = xin_str(L->doc, e, "name", true, name, sizeof name, L->err);
    if (!rc) /* as any other name: it heads a column, expressions read it */
      rc = name_check(L, e, name);
    if (!rc)
      rc = xin_str(L->doc, e, "value", false, value, sizeof value, L->err);
    if (rc)
      break;
    if (col_find(L->s, name) >= 0)
      return xin_errf(L->doc, e, L->err, WEFT_EINVAL, "'%s' is declared "
                      "twice", name);
    enum study_use use;
    if (L->classify(name, &use) == 0)
      return xin_errf(L->doc, e, L->err, WEFT_EINVAL, "'%s' is a setting of "
                      "weft run; give it with <set> or an axis, not <var>",
                      name);
    int k = col_add(L, e, name, SU_VAR);
    if (k < 0)
      return k;
    L->declared[k] = true;
    L->given[k] = xin_has(e, "value");
  }
  for (const struct xin_elem *e = xin_child(root); e && !rc; e = xin_next(e)) {
    const char *n = xin_name(e);
    if (strcmp(n, "var") == 0)
      continue;
    if (strcmp(n, "set") == 0) {
      struct attr_ctx a = {L, e, NULL, {false}};
      rc = xin_each_attr(L->doc, e, STUDY_MAX_VALUE, attr_name, &a, L->err);
      if (!rc && xin_child(e))
        rc = xin_errf(L->doc, e, L->err, WEFT_EINVAL, "<set> holds no "
                      "elements; its settings are attributes");
    } else if (strcmp(n, "cross") == 0 || strcmp(n, "zip") == 0 ||
               strcmp(n, "scenario") == 0) {
      rc = names_of_generator(L, e);
    } else if (strcmp(n, "derive") == 0 || strcmp(n, "where") == 0) {
      continue; /* after every name is known */
    } else {
      rc = xin_errf(L->doc, e, L->err, WEFT_EINVAL, "unknown element; "
                    "expected <set>, <var>, <cross>, <zip>, <scenario>, "
                    "<derive> or <where>");
    }
  }
  for (const struct xin_elem *e = xin_child(root); e && !rc; e = xin_next(e))
    if (strcmp(xin_name(e), "derive") == 0 || strcmp(xin_name(e), "where") == 0)
      rc = pass1_derive(L, e, strcmp(xin_name(e), "where") == 0);
  /* Names in expressions must exist; a <var> must get a value somewhere. */
  for (int i = 0; i < L->nderives && !rc; i++)
    if (expr_each_var(L->derives[i].e, check_var, L))
      rc = weft_err_prefix(L->err, L->derives[i].origin);
  for (int k = 0; k < L->s->ncols && !rc; k++)
    if (L->declared[k] && !L->given[k] && !L->derived[k])
      rc = weft_errf(L->err, WEFT_EINVAL, "%s: <var> '%s' gets no value "
                     "(give it one, an axis or a <derive>)",
                     xin_doc_name(L->doc), L->s->cols[k].name);
  return rc;
}

/* --- pass 2: the table --------------------------------------------------- */

static int axis_values(struct loader *L, const struct xin_elem *e,
                       struct axis *ax)
{
  char name[STUDY_MAX_NAME + 8];
  if (xin_str(L->doc, e, "name", true, name, sizeof name, L->err))
    return L->err->code;
  ax->col = col_find(L->s, name);
  ax->n = 0;
  ax->v = NULL;
  long cap = 0;
  if (xin_has(e, "values")) {
    size_t max = (size_t)MAX_AXIS_VALUES * 8;
    char *buf = xmalloc(max + 1);
    int rc = xin_str(L->doc, e, "values", true, buf, max + 1, L->err);
    for (char *p = buf; !rc && *p;) {
      while (*p && isspace((unsigned char)*p))
        p++;
      if (!*p)
        break;
      char *q = p;
      while (*q && !isspace((unsigned char)*q))
        q++;
      size_t len = (size_t)(q - p);
      if (len > STUDY_MAX_VALUE)
        rc = xin_errf(L->doc, e, L->err, WEFT_ELIMIT, "a value longer than "
                      "%d characters", STUDY_MAX_VALUE);
      else if (ax->n == MAX_AXIS_VALUES)
        rc = xin_errf(L->doc, e, L->err, WEFT_ELIMIT, "more than %d values",
                      MAX_AXIS_VALUES);
      if (rc)
        break;
      if (ax->n == cap) {
        cap = cap ? 2 * cap : 8;
        ax->v = xreallocarray(ax->v, (size_t)cap, sizeof *ax->v);
      }
      char *v = NULL;
      if (len != 1 || *p != '-') { /* "-": not set in this scenario */
        v = xmalloc(len + 1);
        memcpy(v, p, len);
        v[len] = '\0';
        pool_add(L->s, v);
      }
      ax->v[ax->n++] = v;
      p = q;
    }
    free(buf);
    if (!rc && ax->n == 0)
      rc = xin_errf(L->doc, e, L->err, WEFT_EINVAL, "'values' lists no "
                    "value");
    return rc;
  }
  double from = 0, to = 0, step = 0, times = 0;
  bool mul = xin_has(e, "times");
  int rc = xin_real(L->doc, e, "from", true, -1e300, 1e300, &from, L->err);
  if (!rc)
    rc = xin_real(L->doc, e, "to", true, -1e300, 1e300, &to, L->err);
  if (!rc && mul)
    rc = xin_real(L->doc, e, "times", true, -1e300, 1e300, &times, L->err);
  /* Checked here, not as xin_real's bound: a minimum of 1 + 1e-9 printed
   * as "below the minimum of 1" for times="1".  A factor just above 1 is
   * stopped by MAX_AXIS_VALUES below. */
  if (!rc && mul && times <= 1)
    rc = xin_errf(L->doc, e, L->err, WEFT_EINVAL, "attribute 'times': %g "
                  "is not above 1 (each value is the one before times it, up "
                  "to 'to')", times);
  if (!rc && !mul)
    rc = xin_real(L->doc, e, "step", true, 1e-300, 1e300, &step, L->err);
  if (!rc && to < from)
    rc = xin_errf(L->doc, e, L->err, WEFT_EINVAL, "'to' (%g) is below "
                  "'from' (%g)", to, from);
  if (!rc && mul && from <= 0)
    rc = xin_errf(L->doc, e, L->err, WEFT_EINVAL, "a range with 'times' "
                  "starts above 0");
  /* Values are from + i*step or from * times^i, so no error accumulates;
   * the end is included up to a relative 1e-9. */
  for (long i = 0; !rc; i++) {
    double v = mul ? from * pow(times, (double)i) : from + (double)i * step;
    if (v > to + 1e-9 * (to > 0 ? to : -to))
      break;
    if (ax->n == MAX_AXIS_VALUES) {
      rc = xin_errf(L->doc, e, L->err, WEFT_ELIMIT, "the range has more than "
                    "%d values", MAX_AXIS_VALUES);
      break;
    }
    if (ax->n == cap) {
      cap = cap ? 2 * cap : 8;
      ax->v = xreallocarray(ax->v, (size_t)cap, sizeof *ax->v);
    }
    char b[64];
    expr_format(v, b, sizeof b);
    ax->v[ax->n++] = pool_add(L->s, xstrdup(b));
  }
  return rc;
}

static void factors_free(struct factor *f, int n)
{
  for (int i = 0; i < n; i++) {
    for (int a = 0; a < f[i].naxes; a++)
      free(f[i].axes[a].v);
    free(f[i].axes);
  }
  free(f);
}

/* The factors of a <cross> (its axes and zips) or of a top-level <zip>
 * (one factor). */
static int factors_of(struct loader *L, const struct xin_elem *g,
                      struct factor **out, int *nout)
{
  bool is_zip = strcmp(xin_name(g), "zip") == 0;
  struct factor *f = NULL;
  int n = 0, rc = 0;
  for (const struct xin_elem *c = xin_child(g); c && !rc; c = xin_next(c)) {
    bool zip = strcmp(xin_name(c), "zip") == 0;
    if (!is_zip || n == 0) {
      f = xreallocarray(f, (size_t)n + 1, sizeof *f);
      f[n++] = (struct factor){0, NULL, 0};
    }
    struct factor *cur = &f[n - 1];
    const struct xin_elem *first = zip ? xin_child(c) : c;
    for (const struct xin_elem *a = first; a && !rc;
         a = zip ? xin_next(a) : NULL) {
      cur->axes = xreallocarray(cur->axes, (size_t)cur->naxes + 1,
                                sizeof *cur->axes);
      struct axis *ax = &cur->axes[cur->naxes++];
      rc = axis_values(L, a, ax);
      if (rc)
        break;
      if (cur->naxes == 1)
        cur->n = ax->n;
      else if (ax->n != cur->n)
        rc = xin_errf(L->doc, a, L->err, WEFT_EINVAL, "%ld values, but the "
                      "zip's first axis has %ld; zipped axes have as many "
                      "values each", ax->n, cur->n);
    }
  }
  *out = f;
  *nout = n;
  return rc;
}

struct rows {
  char **v; /* n x ncols */
  long n, cap;
  int ncols;
};

static char **row_add(struct rows *r, char *const *base)
{
  if (r->n == r->cap) {
    r->cap = r->cap ? 2 * r->cap : 64;
    r->v = xreallocarray(r->v, (size_t)r->cap * (size_t)r->ncols,
                         sizeof *r->v);
  }
  char **row = r->v + (size_t)r->n++ * (size_t)r->ncols;
  memcpy(row, base, sizeof *row * (size_t)r->ncols);
  return row;
}

static int generate(struct loader *L, const struct xin_elem *g,
                    char *const *base, struct rows *r)
{
  if (strcmp(xin_name(g), "scenario") == 0) {
    struct attr_ctx a = {L, g, row_add(r, base), {false}};
    return xin_each_attr(L->doc, g, STUDY_MAX_VALUE, attr_name, &a, L->err);
  }
  struct factor *f;
  int nf;
  int rc = factors_of(L, g, &f, &nf);
  double total = 1;
  for (int i = 0; i < nf && !rc; i++)
    total *= (double)f[i].n;
  if (!rc && total + (double)r->n > STUDY_MAX_SCENARIOS)
    rc = xin_errf(L->doc, g, L->err, WEFT_ELIMIT, "more than %d scenarios",
                  STUDY_MAX_SCENARIOS);
  /* An odometer over the factors, the first one slowest. */
  long idx[STUDY_MAX_VARS] = {0};
  for (long t = 0; !rc && t < (long)total; t++) {
    char **row = row_add(r, base);
    for (int i = 0; i < nf; i++)
      for (int a = 0; a < f[i].naxes; a++)
        row[f[i].axes[a].col] = f[i].axes[a].v[idx[i]];
    for (int i = nf - 1; i >= 0; i--) {
      if (++idx[i] < f[i].n)
        break;
      idx[i] = 0;
    }
  }
  factors_free(f, nf);
  return rc;
}

struct lookup_ctx {
  const struct study *s;
  char **row;
};

static const char *lookup(void *ctx, const char *name)
{
  struct lookup_ctx *c = ctx;
  int k = col_find(c->s, name);
  return k < 0 ? NULL : c->row[k];
}

static int pass2(struct loader *L, const struct xin_elem *root)
{
  struct study *s = L->s;
  int nc = s->ncols;
  char *base[STUDY_MAX_VARS] = {NULL};
  struct rows r = {NULL, 0, 0, nc};
  int rc = 0, ngen = 0;
  for (const struct xin_elem *e = xin_child(root); e && !rc; e = xin_next(e)) {
    const char *n = xin_name(e);
    if (strcmp(n, "set") == 0) {
      struct attr_ctx a = {L, e, base, {false}};
      rc = xin_each_attr(L->doc, e, STUDY_MAX_VALUE, attr_name, &a, L->err);
    } else if (strcmp(n, "var") == 0 && xin_has(e, "value")) {
      char name[STUDY_MAX_NAME + 8], value[STUDY_MAX_VALUE + 1];
      rc = xin_str(L->doc, e, "name", true, name, sizeof name, L->err);
      if (!rc)
        rc = xin_str(L->doc, e, "value", true, value, sizeof value, L->err);
      if (!rc)
        base[col_find(s, name)] = pool_add(s, xstrdup(value));
    }
  }
  /* <set> applies to every scenario wherever it stands, so the generators
   * run once every <set> is read. */
  for (const struct xin_elem *e = xin_child(root); e && !rc; e = xin_next(e)) {
    const char *n = xin_name(e);
    if (strcmp(n, "cross") == 0 || strcmp(n, "zip") == 0 ||
        strcmp(n, "scenario") == 0) {
      rc = generate(L, e, base, &r);
      ngen++;
    }
  }
  if (!rc && ngen == 0)
    row_add(&r, base);
  s->values = xreallocarray(NULL, (size_t)(r.n ? r.n : 1) * (size_t)nc,
                            sizeof *s->values);
  s->reason = xcalloc((size_t)(r.n ? r.n : 1), sizeof *s->reason);
  s->n = 0;
  for (long i = 0; i < r.n && !rc; i++) {
    char **row = r.v + (size_t)i * (size_t)nc;
    struct lookup_ctx lc = {s, row};
    char *why = NULL;
    bool keep = true;
    for (int d = 0; d < L->nderives && !why && keep; d++) {
      struct weft_err e = {0};
      double v;
      if (expr_eval(L->derives[d].e, lookup, &lc, &v, &e)) {
        why = L->derives[d].col >= 0
                  ? xasprintf("derive %s: %s", s->cols[L->derives[d].col].name,
                              e.msg)
                  : xasprintf("where: %s", e.msg);
      } else if (L->derives[d].col >= 0) {
        char b[64];
        expr_format(v, b, sizeof b);
        row[L->derives[d].col] = pool_add(s, xstrdup(b));
      } else {
        keep = v != 0;
      }
    }
    if (!keep)
      continue;
    memcpy(s->values + (size_t)s->n * (size_t)nc, row,
           sizeof *row * (size_t)nc);
    s->reason[s->n++] = why ? pool_add(s, why) : NULL;
  }
  free(r.v);
  return rc;
}

static int load(struct xin_doc *doc, study_classify_fn classify,
                struct study *out, struct weft_err *err)
{
  static const char *const root_attrs[] = {"name", NULL};
  struct study *s = xcalloc(1, sizeof *s);
  struct loader L = {doc, classify, s, err, {false}, {false}, {false}, NULL, 0};
  const struct xin_elem *root = xin_root(doc);
  int rc = xin_check_root(doc, "study", err);
  if (!rc)
    rc = xin_check_attrs(doc, root, root_attrs, err);
  if (!rc)
    rc = xin_str(doc, root, "name", false, s->name, sizeof s->name, err);
  if (!rc)
    rc = pass1(&L, root);
  if (!rc)
    rc = pass2(&L, root);
  for (int i = 0; i < L.nderives; i++)
    expr_free(L.derives[i].e);
  free(L.derives);
  if (rc) {
    study_release(s);
    free(s);
    return rc;
  }
  *out = *s;
  free(s);
  return 0;
}

int study_load(const char *path, study_classify_fn classify,
               struct study *out, struct weft_err *err)
{
  struct xin_doc *doc = xin_parse_file(path, err);
  if (!doc)
    return err->code;
  int rc = load(doc, classify, out, err);
  xin_free(doc);
  return rc;
}

int study_load_mem(const char *buf, size_t len, const char *name,
                   study_classify_fn classify, struct study *out,
                   struct weft_err *err)
{
  struct xin_doc *doc = xin_parse_mem(buf, len, name, err);
  if (!doc)
    return err->code;
  int rc = load(doc, classify, out, err);
  xin_free(doc);
  return rc;
}

void study_release(struct study *s)
{
  if (!s)
    return;
  for (long i = 0; i < s->npool; i++)
    free(s->pool[i]);
  free(s->pool);
  free(s->values);
  free(s->reason);
  memset(s, 0, sizeof *s);
}

const char *study_value(const struct study *s, long i, int col)
{
  return s->values[(size_t)i * (size_t)s->ncols + (size_t)col];
}

void study_key(const struct study *s, long i, char out[17])
{
  uint64_t h = 0xcbf29ce484222325ULL;
  for (int k = 0; k < s->ncols; k++) {
    const char *v = study_value(s, i, k);
    if (!v)
      continue;
    for (const char *p = s->cols[k].name; *p; p++)
      h = (h ^ (unsigned char)*p) * 0x100000001b3ULL;
    h = (h ^ '=') * 0x100000001b3ULL;
    for (const char *p = v; *p; p++)
      h = (h ^ (unsigned char)*p) * 0x100000001b3ULL;
    h = (h ^ '\n') * 0x100000001b3ULL;
  }
  snprintf(out, 17, "%016llx", (unsigned long long)h);
}
