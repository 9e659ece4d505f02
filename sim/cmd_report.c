/*
 * cmd_report.c - `weft report RESULTS.csv [-o DIR]`: summary tables of a
 * sweep's results and, with -o, the standard plots drawn by gnuplot (PNG
 * and SVG): throughput per GPU, MFU, tokens per second per GPU and energy
 * per token against the study's x (default: gpus), one line per series,
 * and the share of the iteration in compute, overlapped and exposed
 * communication and idle as stacked bars per scenario.
 *
 * x and the series come from the study's own columns (those between
 * `reason` and the metrics): x is --x, else gpus when it varies, else the
 * first study column that varies.  A series is one combination of the
 * values of --by (when given) and of every other study column that still
 * varies among the scenarios of one x and one such combination, so that no
 * two scenarios of one series share an x (no silent mixing of a third
 * column): with tp and pp varying beside gpus, the series are
 * "tp=2, pp=4" and so on; a column that follows from x and the others (a
 * derived dp) adds no series.  The data files and gnuplot scripts stay in
 * DIR beside the plots, so a plot can be restyled by hand.
 *
 * The results file is read a row at a time (csv_reader) and only the
 * columns the report uses are kept: study values as strings, metrics as
 * doubles.
 *
 * Text from the results file (study values, hence series labels and x
 * labels) reaches the gnuplot scripts only through gp_str, never raw: a
 * newline there would start a new gnuplot command, and gnuplot runs lines
 * starting with '!' as shell commands.  Numbers are rewritten from their
 * parsed value.  The data files hold numbers only (gnuplot's data files
 * have no way to quote a '"' inside a string), the labels of the shares
 * are xtics of its script.
 */
#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "sim/base/csv.h"
#include "sim/base/expr.h"
#include "sim/base/outfile.h"
#include "sim/base/xalloc.h"
#include "sim/commands.h"
#include "sim/report.h"

extern char **environ;

/* The keys of the options below (opts_get), one per entry. */
enum report_opt {
  REPORT_OUTPUT, REPORT_X, REPORT_BY, REPORT_WHERE, REPORT_COUNT
};

static const struct opt report_opts[] = {
    [REPORT_OUTPUT] = {"output", 'o', OPT_VALUE, "DIR",
      "write the plots (PNG and SVG), their data and gnuplot scripts into "
      "DIR"},
    [REPORT_X] = {"x", 0, OPT_VALUE, "COLUMN",
      "the study column along the x axis (default: gpus if it varies, else "
      "the first that varies)"},
    [REPORT_BY] = {"by", 0, OPT_VALUE, "COLUMN",
      "the study column whose values name the series first (other columns "
      "that vary at one x are added to them)"},
    [REPORT_WHERE] = {"where", 0, OPT_VALUE, "EXPR",
      "keep the scenarios for which EXPR, over the study's numeric columns, "
      "is true (\"seq == 8192 && layers == 64\")"},
    [REPORT_COUNT] = {NULL, 0, 0, NULL, NULL},
};
OPTS_CHECK_TABLE(report_opts, REPORT_COUNT);

const struct opts_spec cmd_report_spec = {
    "report", POS_WORD, "RESULTS.csv", 0, report_opts,
    "Reads the results of weft sweep and prints, per series, each\n"
    "scenario's iteration time, throughput, MFU, time shares, energy per\n"
    "token and memory.  With -o DIR it also draws, with gnuplot (Debian's\n"
    "gnuplot-nox), throughput.{png,svg}, mfu, tokens, energy, iteration,\n"
    "speedup, efficiency and, when the results have the closed form, closed\n"
    "(each against x, one line per series) and shares (stacked bars of\n"
    "compute, overlapped and exposed communication and idle per scenario).\n"
    "Speed-up is tokens/s over the series' first point's; efficiency is the\n"
    "speed-up over the growth of the GPUs (100 % when throughput grows as\n"
    "the GPUs).  A series is a\n"
    "combination of values of the study columns other than x that vary\n"
    "(\"tp=2, pp=4\"): scenarios that differ in a third column are never\n"
    "mixed in one line.  Study values are text to gnuplot, never commands.",
    "  weft report results.csv\n"
    "  weft report results.csv -o plots --x gpus --by strategy\n"};

/* Metric columns the report reads, by their rows of the JSON field table
 * (sim/report_fields.h), whose names are the results' column names. */
enum { M_IT, M_COMP, M_OVL, M_EXP, M_IDLE, M_TF, M_MFU, M_TOK, M_EPT, M_GPUS,
       M_MEM, M_COUNT };
static const enum report_field metric_fields[M_COUNT] = {
    RF_ITERATION_TIME_S, RF_COMPUTE_S, RF_OVERLAPPED_COMM_S, RF_EXPOSED_COMM_S,
    RF_IDLE_S, RF_TFLOPS_PER_GPU, RF_MFU, RF_TOKENS_PER_S,
    RF_GPU_ENERGY_PER_TOKEN_J, RF_CLUSTER_GPUS, RF_MEM_TOTAL_BYTES};

/* Columns of newer results, used when present: the closed form and the
 * energy of GPUs and fabric together. */
enum { O_CF_IT, O_CF_COMP, O_CF_EXP, O_CF_BUB, O_EPT, O_COUNT };
static const enum report_field optional_fields[O_COUNT] = {
    RF_CF_ITERATION_S, RF_CF_COMPUTE_S, RF_CF_EXPOSED_COMM_S, RF_CF_BUBBLE_S,
    RF_ENERGY_PER_TOKEN_J};

#define REASON_SHOWN 90 /* bytes of a failed scenario's reason kept */

/* One scenario: what the report uses of its row. */
struct row {
  long line;          /* in the results file */
  char *index, *status, *reason; /* in `text`; reason "" when ok */
  char **study;       /* the study columns' values, in `text` */
  char *text;         /* owned */
  double v[M_COUNT + O_COUNT]; /* NAN: empty, not a number or absent */
};

struct table {
  const char *path;
  char **head;        /* the header's names (owned) */
  int nhead;
  int first_study, end_study; /* study columns: [first, end) */
  int m[M_COUNT];
  int o[O_COUNT];     /* -1 when absent */
  struct row *rows;   /* the scenarios kept, in file order */
  long nrows, cap;
};

static void table_release(struct table *t)
{
  for (int k = 0; k < t->nhead; k++)
    free(t->head[k]);
  free(t->head);
  for (long r = 0; r < t->nrows; r++) {
    free(t->rows[r].study);
    free(t->rows[r].text);
  }
  free(t->rows);
  memset(t, 0, sizeof *t);
}

static double to_num(const char *v)
{
  char *end;
  double x = strtod(v, &end);
  return (*v && !*end) ? x : NAN;
}

static double num(const struct table *t, long r, int m)
{
  return t->rows[r].v[m];
}

static double opt(const struct table *t, long r, int k)
{
  return t->rows[r].v[M_COUNT + k];
}

/* Energy per token: GPUs and fabric when the file has it, else GPUs. */
static double ept(const struct table *t, long r)
{
  return t->o[O_EPT] >= 0 ? opt(t, r, O_EPT) : num(t, r, M_EPT);
}

static bool ok_row(const struct table *t, long r)
{
  const char *s = t->rows[r].status;
  return strcmp(s, "ok") == 0 || strcmp(s, "no_fit") == 0;
}

/* The value of column `col` (index or a study column) in row r. */
static const char *val(const struct table *t, long r, int col)
{
  if (col >= t->first_study && col < t->end_study)
    return t->rows[r].study[col - t->first_study];
  return t->rows[r].index;
}

static int column(const struct table *t, const char *name)
{
  for (int k = 0; k < t->nhead; k++)
    if (strcmp(t->head[k], name) == 0)
      return k;
  return -1;
}

static int check_header(struct table *t, const struct csv_reader *rd,
                        struct weft_err *err)
{
  t->nhead = rd->nfields;
  t->head = xcalloc((size_t)rd->nfields, sizeof *t->head);
  for (int k = 0; k < rd->nfields; k++)
    t->head[k] = xstrdup(rd->fields[k]);
  if (column(t, "key") != 0 || column(t, "status") != 2 ||
      column(t, "reason") != 3)
    return weft_errf(err, WEFT_EINVAL, "%s:1: not a weft sweep results file "
                     "(it does not start with key, index, status, reason)",
                     t->path);
  for (int m = 0; m < M_COUNT; m++) {
    const char *name = report_fields[metric_fields[m]].name;
    t->m[m] = column(t, name);
    if (t->m[m] < 0)
      return weft_errf(err, WEFT_EINVAL, "%s:1: no column '%s' (results of "
                       "another weft version?)", t->path, name);
  }
  for (int k = 0; k < O_COUNT; k++)
    t->o[k] = column(t, report_fields[optional_fields[k]].name);
  /* The study's columns follow the lead ones: key, index, status, reason
   * and, since sweeps record it, the study's identity. */
  t->first_study = column(t, "study") == 4 ? 5 : 4;
  t->end_study = t->m[M_IT] > t->first_study ? t->m[M_IT] : t->first_study;
  return 0;
}

static int study_col(const struct table *t, const char *name, const char *flag,
                     struct weft_err *err)
{
  for (int k = t->first_study; k < t->end_study; k++)
    if (strcmp(t->head[k], name) == 0)
      return k;
  if (!flag)
    return -1;
  return weft_errf(err, WEFT_EINVAL, "%s: '%s' is not a column of the study "
                   "in this file", flag, name);
}

/* Keep what the report uses of the reader's current row as a new last
 * row of t. */
static void add_row(struct table *t, const struct csv_reader *rd)
{
  if (t->nrows == t->cap) {
    t->cap = t->cap ? 2 * t->cap : 256;
    t->rows = xreallocarray(t->rows, (size_t)t->cap, sizeof *t->rows);
  }
  struct row *w = &t->rows[t->nrows++];
  int ns = t->end_study - t->first_study;
  bool ok = strcmp(rd->fields[2], "ok") == 0 ||
            strcmp(rd->fields[2], "no_fit") == 0;
  size_t rlen = ok ? 0 : strnlen(rd->fields[3], REASON_SHOWN);
  size_t len = strlen(rd->fields[1]) + strlen(rd->fields[2]) + rlen + 3;
  for (int k = 0; k < ns; k++)
    len += strlen(rd->fields[t->first_study + k]) + 1;
  char *p = w->text = xmalloc(len);
  w->study = xcalloc(ns > 0 ? (size_t)ns : 1, sizeof *w->study);
  w->line = rd->line;
  w->index = p;
  p = stpcpy(p, rd->fields[1]) + 1;
  w->status = p;
  p = stpcpy(p, rd->fields[2]) + 1;
  w->reason = p;
  memcpy(p, rd->fields[3], rlen);
  p[rlen] = '\0';
  p += rlen + 1;
  for (int k = 0; k < ns; k++) {
    w->study[k] = p;
    p = stpcpy(p, rd->fields[t->first_study + k]) + 1;
  }
  for (int m = 0; m < M_COUNT; m++)
    w->v[m] = to_num(rd->fields[t->m[m]]);
  for (int k = 0; k < O_COUNT; k++)
    w->v[M_COUNT + k] = t->o[k] >= 0 ? to_num(rd->fields[t->o[k]]) : NAN;
}

static void drop_last_row(struct table *t)
{
  t->nrows--;
  free(t->rows[t->nrows].study);
  free(t->rows[t->nrows].text);
}

struct row_ctx {
  const struct table *t;
  long r;
  bool unset; /* a column the expression read is empty in this row */
  struct weft_err *err;
};

/* A study column's value in row r (expr_lookup_fn); NULL when the
 * scenario left it unset (an empty cell).  Names were checked before. */
static const char *row_value(void *ctx, const char *name)
{
  struct row_ctx *x = ctx;
  const char *v = val(x->t, x->r, study_col(x->t, name, NULL, NULL));
  if (!*v) {
    x->unset = true;
    return NULL;
  }
  return v;
}

/* expr_each_var's check: non-zero (and the message) for a name that is
 * not a study column. */
static int is_study_col(void *ctx, const char *name)
{
  struct row_ctx *x = ctx;
  return study_col(x->t, name, "--where", x->err) < 0;
}

/* --where on the last row read: drop it when false.  A scenario that
 * leaves a column unset is not kept; any other failure (a word where a
 * number is needed, a division by zero) is an error. */
static int filter_last(struct table *t, const struct expr *e,
                       struct weft_err *err)
{
  struct row_ctx x = {t, t->nrows - 1, false, NULL};
  double v = 0;
  struct weft_err e2 = {0};
  if (expr_eval(e, row_value, &x, &v, &e2) == 0 && v != 0)
    return 0;
  if (e2.code && !x.unset)
    return weft_errf(err, WEFT_EINVAL, "--where: the scenario of line %ld: "
                     "%s", t->rows[t->nrows - 1].line, e2.msg);
  drop_last_row(t);
  return 0;
}

/* Read the results file `path` into t, a row at a time, keeping the rows
 * for which `where` (NULL: all) is true; warn of a cut last row unless
 * `quiet`. */
static int read_table(const char *path, const char *where, bool quiet,
                      struct table *t, struct weft_err *err)
{
  memset(t, 0, sizeof *t);
  t->path = path;
  struct csv_reader rd;
  int rc = csv_reader_open(&rd, path, err);
  if (rc)
    return rc;
  struct expr *e = NULL;
  rc = csv_reader_next(&rd, err);
  if (rc == 0)
    rc = weft_errf(err, WEFT_EINVAL, "%s: empty (no header)", path);
  else if (rc > 0)
    rc = check_header(t, &rd, err);
  if (!rc && where) {
    e = expr_parse(where, "--where", err);
    struct row_ctx chk = {t, 0, false, err};
    if (!e)
      rc = err->code;
    else if (expr_each_var(e, is_study_col, &chk))
      rc = WEFT_EINVAL;
  }
  long read = 0;
  while (!rc && (rc = csv_reader_next(&rd, err)) > 0) {
    rc = 0;
    if (rd.nfields != t->nhead) {
      rc = weft_errf(err, WEFT_EINVAL, "%s:%ld: %d fields, but the header "
                     "has %d", path, rd.line, rd.nfields, t->nhead);
      break;
    }
    add_row(t, &rd);
    read++;
    if (e)
      rc = filter_last(t, e, err);
  }
  if (!rc && rd.partial && !quiet)
    fprintf(stderr, "weft: warning: %s: its last row is cut; left out\n",
            path);
  if (!rc && read == 0)
    rc = weft_errf(err, WEFT_EINVAL, "%s: no scenarios", path);
  if (!rc && t->nrows == 0)
    rc = weft_errf(err, WEFT_EINVAL, "--where: no scenario is kept");
  expr_free(e);
  csv_reader_close(&rd);
  return rc;
}

static bool varies(const struct table *t, int col)
{
  for (long r = 1; r < t->nrows; r++)
    if (strcmp(val(t, r, col), val(t, 0, col)) != 0)
      return true;
  return false;
}

/* A number as x: all of it parsed, finite, no leading blank. */
static bool is_number(const char *v, double *out)
{
  char *end;
  if (!*v || isspace((unsigned char)*v))
    return false;
  double x = strtod(v, &end);
  if (*end || !isfinite(x))
    return false;
  *out = x;
  return true;
}

static bool all_numeric(const struct table *t, int col)
{
  double x;
  for (long r = 0; r < t->nrows; r++)
    if (!is_number(val(t, r, col), &x))
      return false;
  return true;
}

/* Grouping rows by the values of columns, one column at a time: the
 * groups of (base group, value of col), found by a stable merge sort of
 * the row numbers, then numbered in order of first appearance. */
struct by_col {
  const struct table *t;
  const long *base; /* the groups so far, or NULL */
  int col;
};

static int cmp_rows(const struct by_col *b, long x, long y)
{
  if (b->base && b->base[x] != b->base[y])
    return b->base[x] < b->base[y] ? -1 : 1;
  int c = strcmp(val(b->t, x, b->col), val(b->t, y, b->col));
  return c ? c : (x > y) - (x < y);
}

static void merge_sort(const struct by_col *b, long *a, long *tmp, long n)
{
  if (n < 2)
    return;
  long h = n / 2;
  merge_sort(b, a, tmp, h);
  merge_sort(b, a + h, tmp, n - h);
  long i = 0, j = h, k = 0;
  while (i < h && j < n)
    tmp[k++] = cmp_rows(b, a[i], a[j]) <= 0 ? a[i++] : a[j++];
  while (i < h)
    tmp[k++] = a[i++];
  while (j < n)
    tmp[k++] = a[j++];
  memcpy(a, tmp, (size_t)n * sizeof *a);
}

/* Number the groups of rows with equal (base[r], value of col) 0, 1, ...
 * in order of their first row; each row's id in gid (nrows, caller's; not
 * base).  Returns the number of groups. */
static long group_rows(const struct table *t, const long *base, int col,
                       long *gid)
{
  long n = t->nrows;
  long *a = xcalloc((size_t)n + 1, sizeof *a);
  long *tmp = xcalloc((size_t)n + 1, sizeof *tmp);
  struct by_col b = {t, base, col};
  for (long r = 0; r < n; r++)
    a[r] = r;
  merge_sort(&b, a, tmp, n);
  /* Sorted, each group is a run; provisional ids by sorted order. */
  long ng = 0;
  for (long i = 0; i < n; i++) {
    bool same = i > 0 && (!base || base[a[i]] == base[a[i - 1]]) &&
                strcmp(val(t, a[i], col), val(t, a[i - 1], col)) == 0;
    ng += !same;
    tmp[a[i]] = ng - 1;
  }
  /* Renumber by first appearance: walk the rows in order. */
  long *rank = xcalloc((size_t)ng + 1, sizeof *rank);
  for (long g = 0; g < ng; g++)
    rank[g] = -1;
  long next = 0;
  for (long r = 0; r < n; r++) {
    if (rank[tmp[r]] < 0)
      rank[tmp[r]] = next++;
    gid[r] = rank[tmp[r]];
  }
  free(rank);
  free(tmp);
  free(a);
  return ng;
}

/* The plot's axes: x and the series, each row's place among them. */
struct axes {
  int xc;             /* the x column, or 1 (index) */
  int key[64];        /* the series' columns, --by first */
  int nkey;
  long *xid, *sid;    /* per row */
  long nx, ns;
  long *xrow, *srow;  /* the first row of each x value, of each series */
  char **label;       /* per series: "v" for one column, "a=v, b=w" */
  long *order;        /* rows by series, in file order within one */
  long *sstart;       /* series s is order[sstart[s] .. sstart[s+1]) */
};

static void axes_release(struct axes *a)
{
  for (long s = 0; a->label && s < a->ns; s++)
    free(a->label[s]);
  free(a->label);
  free(a->xid);
  free(a->sid);
  free(a->xrow);
  free(a->srow);
  free(a->order);
  free(a->sstart);
}

/* The series' columns: --by, then each other study column that varies
 * among the rows of one x and one combination of the columns chosen so
 * far (a column that follows from those adds nothing). */
static void choose_axes(const struct table *t, int xc, int byc,
                        struct axes *a)
{
  memset(a, 0, sizeof *a);
  a->xc = xc >= 0 ? xc : 1;
  long n = t->nrows;
  long *g = xcalloc((size_t)n + 1, sizeof *g);
  long *g2 = xcalloc((size_t)n + 1, sizeof *g2);
  a->xid = xcalloc((size_t)n + 1, sizeof *a->xid);
  a->sid = xcalloc((size_t)n + 1, sizeof *a->sid);
  a->nx = group_rows(t, NULL, a->xc, a->xid);
  long ng = a->nx; /* groups of x and the key so far, in g */
  memcpy(g, a->xid, (size_t)n * sizeof *g);
  if (byc >= 0) {
    a->key[a->nkey++] = byc;
    ng = group_rows(t, a->xid, byc, g);
  }
  for (int k = t->first_study; k < t->end_study; k++) {
    if (k == a->xc || k == byc || a->nkey == 64 || !varies(t, k))
      continue;
    long n2 = group_rows(t, g, k, g2);
    if (n2 == ng)
      continue;
    a->key[a->nkey++] = k;
    ng = n2;
    long *swap = g;
    g = g2;
    g2 = swap;
  }
  /* The series: the groups of the key alone. */
  a->ns = 1;
  for (int k = 0; k < a->nkey; k++) {
    a->ns = group_rows(t, k ? a->sid : NULL, a->key[k], g2);
    memcpy(a->sid, g2, (size_t)n * sizeof *g2);
  }
  free(g);
  free(g2);
  a->xrow = xcalloc((size_t)a->nx + 1, sizeof *a->xrow);
  a->srow = xcalloc((size_t)a->ns + 1, sizeof *a->srow);
  a->sstart = xcalloc((size_t)a->ns + 2, sizeof *a->sstart);
  for (long r = n - 1; r >= 0; r--) {
    a->xrow[a->xid[r]] = r;
    a->srow[a->sid[r]] = r;
  }
  for (long r = 0; r < n; r++)
    a->sstart[a->sid[r] + 1]++;
  for (long s = 0; s < a->ns; s++)
    a->sstart[s + 1] += a->sstart[s];
  a->order = xcalloc((size_t)n + 1, sizeof *a->order);
  long *fill = xcalloc((size_t)a->ns + 1, sizeof *fill);
  for (long r = 0; r < n; r++)
    a->order[a->sstart[a->sid[r]] + fill[a->sid[r]]++] = r;
  free(fill);
  a->label = xcalloc((size_t)a->ns + 1, sizeof *a->label);
  for (long s = 0; s < a->ns; s++) {
    struct csv_buf b = {0};
    csv_append(&b, "", 0);
    for (int k = 0; k < a->nkey; k++) {
      const char *name = t->head[a->key[k]];
      const char *v = val(t, a->srow[s], a->key[k]);
      if (k)
        csv_append(&b, ", ", 2);
      if (a->nkey > 1) {
        csv_append(&b, name, strlen(name));
        csv_append(&b, "=", 1);
      }
      csv_append(&b, v, strlen(v));
    }
    a->label[s] = b.s;
  }
}

/* Text from the results as the tables show it: control characters (a
 * line break, an escape sequence) as spaces, on one line; s itself when
 * it has none, else a copy of its first bytes in buf. */
#define SHOWN_MAX 128
static const char *shown(const char *s, char buf[SHOWN_MAX])
{
  const char *p = s;
  while (*p && (unsigned char)*p >= 0x20 && *p != 0x7f)
    p++;
  if (!*p)
    return s;
  size_t i = 0;
  for (; s[i] && i < SHOWN_MAX - 1; i++)
    buf[i] = (unsigned char)s[i] < 0x20 || s[i] == 0x7f ? ' ' : s[i];
  buf[i] = '\0';
  return buf;
}

/* The heading of series s in the tables. */
static void print_heading(FILE *f, const struct table *t, const struct axes *a,
                          long s)
{
  fputc('\n', f);
  char b1[SHOWN_MAX], b2[SHOWN_MAX];
  for (int k = 0; k < a->nkey; k++)
    fprintf(f, "%s%s = %s", k ? ", " : "", shown(t->head[a->key[k]], b1),
            shown(val(t, a->srow[s], a->key[k]), b2));
  fputc('\n', f);
}

static void print_tables(FILE *f, const struct table *t, const struct axes *a,
                         bool xset)
{
  long ok = 0, nofit = 0, bad = 0;
  for (long r = 0; r < t->nrows; r++) {
    const char *s = t->rows[r].status;
    ok += strcmp(s, "ok") == 0;
    nofit += strcmp(s, "no_fit") == 0;
    bad += !ok_row(t, r);
  }
  fprintf(f, "%ld scenarios: %ld ok, %ld do not fit in memory, %ld invalid "
          "or failed\n", t->nrows, ok, nofit, bad);
  char bh[SHOWN_MAX];
  for (long s = 0; s < a->ns; s++) {
    print_heading(f, t, a, s);
    fprintf(f, "  %12s %10s %9s %6s %11s %6s %6s %6s %6s %9s %9s  %s\n",
            xset ? shown(t->head[a->xc], bh) : "index", "iter s", "TFLOP/s",
            "MFU%", "tok/s/GPU", "comp%", "ovl%", "exp%", "idle%", "J/token",
            "mem GB", "status");
    for (long i = a->sstart[s]; i < a->sstart[s + 1]; i++) {
      long r = a->order[i];
      char bx[SHOWN_MAX], bs[SHOWN_MAX], br[SHOWN_MAX];
      const char *x = shown(val(t, r, a->xc), bx);
      if (!ok_row(t, r)) {
        fprintf(f, "  %12s %s: %.90s\n", x, shown(t->rows[r].status, bs),
                shown(t->rows[r].reason, br));
        continue;
      }
      double it = num(t, r, M_IT);
      fprintf(f, "  %12s %10.4g %9.1f %6.1f %11.0f %6.1f %6.1f %6.1f %6.1f "
              "%9.3g %9.1f  %s\n", x, it, num(t, r, M_TF),
              100 * num(t, r, M_MFU), num(t, r, M_TOK) / num(t, r, M_GPUS),
              100 * num(t, r, M_COMP) / it, 100 * num(t, r, M_OVL) / it,
              100 * num(t, r, M_EXP) / it, 100 * num(t, r, M_IDLE) / it,
              ept(t, r), num(t, r, M_MEM) / 1e9, t->rows[r].status);
    }
  }
}

/* Simulated against the closed form (workloads/closedform.h): the ratio of
 * iteration times and where they part, as shares of the simulated
 * iteration: compute (kernel efficiencies), exposed communication
 * (contention, protocols, overlap), idle against the closed form's bubble. */
static void print_closed(FILE *f, const struct table *t, const struct axes *a,
                         bool xset)
{
  for (int k = 0; k < O_EPT; k++)
    if (t->o[k] < 0)
      return;
  char bh[SHOWN_MAX], bk[SHOWN_MAX];
  fprintf(f, "\nsimulated against the closed form (roofline, alpha-beta, "
          "fixed overlap); differences as %% of the simulated iteration\n");
  fprintf(f, "  %12s %20s %10s %10s %7s %9s %9s %9s  %s\n",
          xset ? shown(t->head[a->xc], bh) : "index",
          a->nkey == 1 ? shown(t->head[a->key[0]], bk)
                       : a->nkey ? "series" : "",
          "sim s", "closed s", "ratio", "compute", "exposed", "idle",
          "largest");
  for (long r = 0; r < t->nrows; r++) {
    if (!ok_row(t, r))
      continue;
    double it = num(t, r, M_IT), cf = opt(t, r, O_CF_IT);
    double d[3] = {num(t, r, M_COMP) - opt(t, r, O_CF_COMP),
                   num(t, r, M_EXP) - opt(t, r, O_CF_EXP),
                   num(t, r, M_IDLE) - opt(t, r, O_CF_BUB)};
    static const char *const why[3] = {"kernel efficiency", "communication",
                                       "bubbles and waits"};
    char bx[SHOWN_MAX], bl[SHOWN_MAX];
    int big = 0;
    for (int k = 1; k < 3; k++)
      if (fabs(d[k]) > fabs(d[big]))
        big = k;
    fprintf(f, "  %12s %20.20s %10.4g %10.4g %7.3f %+8.1f%% %+8.1f%% "
            "%+8.1f%%  %s\n", shown(val(t, r, a->xc), bx),
            shown(a->label[a->sid[r]], bl), it, cf,
            it / cf, 100 * d[0] / it, 100 * d[1] / it, 100 * d[2] / it,
            why[big]);
  }
}

/* A gnuplot string literal for any text: single-quoted (gnuplot reads no
 * escapes there and substitutes neither `backquotes` nor @macros inside
 * quotes), a quote doubled, and every control character (newline, CR,
 * tab, ...) written as a space, since a line break would end the command
 * and let the rest run as one ('!' runs a shell command).  Enhanced-text
 * markup (^ _ @ & { }) is inert: the terminals are set noenhanced. */
static void gp_str(FILE *f, const char *s)
{
  fputc('\'', f);
  for (; *s; s++) {
    unsigned char c = (unsigned char)*s;
    if (c == '\'')
      fputs("''", f);
    else if (c < 0x20 || c == 0x7f)
      fputc(' ', f);
    else
      fputc(c, f);
  }
  fputc('\'', f);
}

/* Text in a comment line of a data file or script: on one line. */
static void gp_comment(FILE *f, const char *s)
{
  for (; *s; s++) {
    unsigned char c = (unsigned char)*s;
    fputc(c < 0x20 || c == 0x7f ? ' ' : c, f);
  }
}

/* What is plotted: the x of each row (a number, or the rank of its value),
 * the series with at least one ok row (their data blocks, in order). */
struct plot_data {
  bool numeric, logx;
  double lo, hi;      /* numeric: the smallest and largest x */
  long *block;        /* per series: its index in report.dat, or -1 */
  long nblocks;
  long nshares;       /* ok rows */
};

/* The x of row r in the data: the value reparsed, or its rank. */
static void put_x(FILE *f, const struct table *t, const struct axes *a,
                  const struct plot_data *pd, long r)
{
  double x;
  if (pd->numeric && is_number(val(t, r, a->xc), &x))
    fprintf(f, "%.17g", x);
  else
    fprintf(f, "%ld", a->xid[r]);
}

/* Data: one block per series with an ok row (x, tflops, mfu %,
 * tokens/s/GPU, J/token, simulated over closed form, iteration s,
 * speed-up and scaling efficiency % against the series' first ok row:
 * S = tok/tok0, E = 100 S G0/G, the throughput form of strong and weak
 * scaling alike), blocks separated by
 * two blank lines (gnuplot's `index`); shares: one line per ok scenario
 * (its place, compute-only, overlapped, exposed, idle as fractions of the
 * iteration), labelled by the xtics of shares.gp. */
static int write_data(const char *dir, const struct table *t,
                      const struct axes *a, const struct plot_data *pd,
                      struct weft_err *err)
{
  char *path = xasprintf("%s/report.dat", dir);
  struct outfile of;
  int rc = outfile_open(&of, path, err);
  for (long s = 0; !rc && s < a->ns; s++) {
    if (pd->block[s] < 0)
      continue;
    fprintf(of.f, "# series ");
    gp_comment(of.f, a->label[s]);
    fputc('\n', of.f);
    long r0 = -1;
    for (long i = a->sstart[s]; i < a->sstart[s + 1]; i++) {
      long r = a->order[i];
      if (!ok_row(t, r))
        continue;
      if (r0 < 0)
        r0 = r;
      double speedup = num(t, r, M_TOK) / num(t, r0, M_TOK);
      put_x(of.f, t, a, pd, r);
      fprintf(of.f, " %.9g %.9g %.9g %.9g %.9g %.9g %.9g %.9g\n",
              num(t, r, M_TF), 100 * num(t, r, M_MFU),
              num(t, r, M_TOK) / num(t, r, M_GPUS), ept(t, r),
              num(t, r, M_IT) / opt(t, r, O_CF_IT), num(t, r, M_IT), speedup,
              100 * speedup * num(t, r0, M_GPUS) / num(t, r, M_GPUS));
    }
    fprintf(of.f, "\n\n");
  }
  if (!rc)
    rc = outfile_commit(&of, err);
  free(path);
  if (rc)
    return rc;
  path = xasprintf("%s/shares.dat", dir);
  rc = outfile_open(&of, path, err);
  if (!rc)
    fprintf(of.f, "# scenario (see the xtics of shares.gp), compute only, "
            "overlapped, exposed communication, idle: fractions of the "
            "iteration\n");
  long n = 0;
  for (long r = 0; !rc && r < t->nrows; r++) {
    if (!ok_row(t, r))
      continue;
    double it = num(t, r, M_IT);
    fprintf(of.f, "%ld %.6g %.6g %.6g %.6g\n", n++,
            (num(t, r, M_COMP) - num(t, r, M_OVL)) / it, num(t, r, M_OVL) / it,
            num(t, r, M_EXP) / it, num(t, r, M_IDLE) / it);
  }
  if (!rc)
    rc = outfile_commit(&of, err);
  free(path);
  return rc;
}

static const struct {
  const char *name, *ylabel;
  int column; /* in report.dat */
} line_plots[] = {{"throughput", "TFLOP/s per GPU (Megatron count)", 2},
                  {"mfu", "MFU, %", 3},
                  {"tokens", "tokens/s per GPU", 4},
                  {"energy", "energy per token, J (GPUs and fabric where the results have it)", 5},
                  {"iteration", "iteration time, s", 7},
                  {"speedup", "speed-up: tokens/s over the series' first point's", 8},
                  {"efficiency", "scaling efficiency, %: speed-up over the growth of the GPUs", 9},
                  /* last: drawn only when the results have the closed form */
                  {"closed", "simulated over closed-form iteration time", 6}};
#define N_LINE_PLOTS (int)(sizeof line_plots / sizeof *line_plots)

/* The xtics: each x value's label at its place. */
static void put_xtics(FILE *f, const struct table *t, const struct axes *a,
                      const struct plot_data *pd)
{
  fprintf(f, "set xtics (");
  for (long i = 0; i < a->nx; i++) {
    fprintf(f, "%s", i ? ", " : "");
    gp_str(f, val(t, a->xrow[i], a->xc));
    fputc(' ', f);
    put_x(f, t, a, pd, a->xrow[i]);
  }
  fprintf(f, ")\n");
}

static int write_script(const char *dir, const char *name,
                        const struct table *t, const struct axes *a,
                        const struct plot_data *pd, bool xset, int plot,
                        struct weft_err *err)
{
  char *path = xasprintf("%s/%s.gp", dir, name);
  struct outfile of;
  int rc = outfile_open(&of, path, err);
  if (rc) {
    free(path);
    return rc;
  }
  FILE *f = of.f;
  fprintf(f, "# gnuplot script written by weft report; run it in this "
          "folder: gnuplot %s.gp\n", name);
  fprintf(f, "set datafile missing 'nan'\nset key outside right top\n"
          "set grid ytics\n");
  for (int fmt = 0; fmt < 2; fmt++) {
    /* noenhanced: labels are the study's text, shown as they are. */
    fprintf(f, fmt == 0 ? "set terminal pngcairo noenhanced size 960,540 "
                          "font ',10'\n"
                        : "set terminal svg noenhanced size 960,540 "
                          "font 'Sans,10'\n");
    fprintf(f, "set output ");
    char *out = xasprintf("%s.%s", name, fmt == 0 ? "png" : "svg");
    gp_str(f, out);
    free(out);
    fputc('\n', f);
    if (plot < 0) { /* shares */
      fprintf(f, "set title 'share of the iteration'\nset key below\n"
              "set style data histograms\nset style histogram rowstacked\nset style fill "
              "solid 0.8 border -1\nset boxwidth 0.8\nset yrange [0:1]\n"
              "set ylabel 'fraction of the iteration time'\n"
              "set xtics (");
      long n = 0;
      for (long r = 0; r < t->nrows; r++) {
        if (!ok_row(t, r))
          continue;
        char *label = xasprintf("%s%s%s", val(t, r, a->xc),
                                a->nkey ? " " : "", a->label[a->sid[r]]);
        fprintf(f, "%s", n ? ", " : "");
        gp_str(f, label);
        fprintf(f, " %ld", n++);
        free(label);
      }
      fprintf(f, ") rotate by -45\n");
      fprintf(f, "plot 'shares.dat' using 2 title 'compute only', "
              "'' using 3 title 'compute with communication overlapped', "
              "'' using 4 title 'exposed communication', '' using 5 title "
              "'idle (bubbles, waits)'\n");
      continue;
    }
    fprintf(f, "set title ");
    gp_str(f, line_plots[plot].ylabel);
    fprintf(f, "\nset ylabel ");
    gp_str(f, line_plots[plot].ylabel);
    fprintf(f, "\nset xlabel ");
    gp_str(f, xset ? t->head[a->xc] : "scenario");
    fprintf(f, "\n");
    /* The ends of x inside the frame, so that their tics show (a log
     * axis autoscaled to its last x dropped that tic), and room above the
     * highest point (issue 40: it sat on the frame). */
    if (pd->logx)
      fprintf(f, "set logscale x 2\nset xrange [%.6g:%.6g]\n",
              pd->lo / 1.25, pd->hi * 1.25);
    else if (pd->numeric && pd->hi > pd->lo)
      fprintf(f, "set xrange [%.6g:%.6g]\n",
              pd->lo - 0.05 * (pd->hi - pd->lo),
              pd->hi + 0.05 * (pd->hi - pd->lo));
    if (!pd->numeric)
      fprintf(f, "set xrange [-0.5:%ld.5]\n", a->nx - 1);
    put_xtics(f, t, a, pd);
    /* The legend's values are the --by column's (or the one varying
     * column's): its name heads them. */
    if (a->nkey == 1) {
      fprintf(f, "set key title ");
      gp_str(f, t->head[a->key[0]]);
      fputc('\n', f);
    }
    fprintf(f, "set offsets 0, 0, graph 0.08, 0\nset yrange [0:*]\nplot ");
    for (long s = 0; s < a->ns; s++) {
      if (pd->block[s] < 0)
        continue;
      fprintf(f, "%s'report.dat' index %ld using 1:%d with linespoints "
              "pointtype 7 title ", pd->block[s] ? ", " : "", pd->block[s],
              line_plots[plot].column);
      gp_str(f, a->label[s]);
    }
    fprintf(f, "\n");
  }
  rc = outfile_commit(&of, err); /* of borrows path */
  free(path);
  return rc;
}

/* Run gnuplot on DIR/NAME.gp in DIR. */
static int gnuplot(const char *dir, const char *name, struct weft_err *err)
{
  char *script = xasprintf("%s.gp", name);
  char *argv[] = {"gnuplot", script, NULL};
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  char *cwd = getcwd(NULL, 0);
  int rc = 0;
  pid_t pid;
  if (!cwd || chdir(dir) != 0) {
    rc = weft_errf(err, WEFT_EIO, "%s: %s", dir, strerror(errno));
  } else {
    int e = posix_spawnp(&pid, "gnuplot", &fa, NULL, argv, environ);
    if (chdir(cwd) != 0 && !rc)
      rc = weft_errf(err, WEFT_EIO, "cannot return to %s", cwd);
    if (e)
      rc = weft_errf(err, WEFT_EIO, "gnuplot: cannot run it (%s); install "
                     "it (apt-get install gnuplot-nox) and run the scripts "
                     "written in %s: gnuplot NAME.gp there", strerror(e), dir);
    int ws = 0;
    while (!e && waitpid(pid, &ws, 0) < 0 && errno == EINTR)
      ;
    if (!e && !rc && !(WIFEXITED(ws) && WEXITSTATUS(ws) == 0))
      rc = weft_errf(err, WEFT_EIO, "gnuplot failed on %s/%s.gp", dir, name);
  }
  free(cwd);
  posix_spawn_file_actions_destroy(&fa);
  free(script);
  return rc;
}

/* Write every data file and script, then run gnuplot on each script. */
static int plots(const char *dir, const struct table *t, const struct axes *a,
                 bool xset, struct weft_err *err)
{
  struct plot_data pd = {0};
  for (long r = 0; r < t->nrows; r++)
    pd.nshares += ok_row(t, r);
  if (pd.nshares == 0)
    return weft_errf(err, WEFT_EINVAL, "%s: no scenario is ok or no_fit; "
                     "nothing to plot", t->path);
  if (mkdir(dir, 0777) < 0 && errno != EEXIST)
    return weft_errf(err, WEFT_EIO, "%s: cannot create: %s", dir,
                     strerror(errno));
  pd.numeric = all_numeric(t, a->xc);
  double lo = INFINITY, hi = 0, x;
  for (long i = 0; pd.numeric && i < a->nx; i++) {
    if (!is_number(val(t, a->xrow[i], a->xc), &x))
      continue;
    lo = x < lo ? x : lo;
    hi = x > hi ? x : hi;
  }
  pd.logx = pd.numeric && lo > 0 && hi / lo >= 8;
  pd.lo = lo;
  pd.hi = hi;
  pd.block = xcalloc((size_t)a->ns + 1, sizeof *pd.block);
  for (long s = 0; s < a->ns; s++) {
    pd.block[s] = -1;
    for (long i = a->sstart[s]; i < a->sstart[s + 1] && pd.block[s] < 0; i++)
      if (ok_row(t, a->order[i]))
        pd.block[s] = pd.nblocks++;
  }
  int rc = write_data(dir, t, a, &pd, err);
  int np = t->o[O_CF_IT] >= 0 ? N_LINE_PLOTS : N_LINE_PLOTS - 1;
  for (int p = -1; !rc && p < np; p++)
    rc = write_script(dir, p < 0 ? "shares" : line_plots[p].name, t, a, &pd,
                      xset, p, err);
  for (int p = -1; !rc && p < np; p++)
    rc = gnuplot(dir, p < 0 ? "shares" : line_plots[p].name, err);
  free(pd.block);
  return rc;
}

int cmd_report(int argc, char **argv)
{
  struct opts o;
  int code;
  if (cli_parse(&cmd_report_spec, argc, argv, &o, &code))
    return code;
  if (!o.positional)
    return cli_usage("report: no results file (the CSV of weft sweep)");
  struct weft_err err = {0};
  struct table t;
  int rc = read_table(o.positional, opts_get(&o, REPORT_WHERE), o.quiet, &t,
                      &err);
  int xc = -1, byc = -1;
  const char *xo = opts_get(&o, REPORT_X), *bo = opts_get(&o, REPORT_BY);
  if (!rc && xo)
    rc = (xc = study_col(&t, xo, "--x", &err)) < 0 ? xc : 0;
  if (!rc && bo)
    rc = (byc = study_col(&t, bo, "--by", &err)) < 0 ? byc : 0;
  if (!rc && !xo) {
    for (int k = t.first_study; k < t.end_study && xc < 0; k++)
      if (strcmp(t.head[k], "gpus") == 0 && varies(&t, k))
        xc = k;
    for (int k = t.first_study; k < t.end_study && xc < 0; k++)
      if (varies(&t, k) && k != byc)
        xc = k;
  }
  if (!rc) {
    struct axes a;
    choose_axes(&t, xc, byc, &a);
    print_tables(stdout, &t, &a, xc >= 0);
    print_closed(stdout, &t, &a, xc >= 0);
    rc = outfile_check_stdout(&err); /* and before gnuplot's messages */
    const char *dir = opts_get(&o, REPORT_OUTPUT);
    if (!rc && dir) {
      rc = plots(dir, &t, &a, xc >= 0, &err);
      if (!rc)
        printf("\nwrote %s/{throughput,mfu,tokens,energy,iteration,speedup,"
               "efficiency,%sshares}.{png,svg} "
               "(data and gnuplot scripts beside them)\n", dir,
               t.o[O_CF_IT] >= 0 ? "closed," : "");
      if (!rc)
        rc = outfile_check_stdout(&err);
    }
    axes_release(&a);
  }
  table_release(&t);
  return rc ? cli_fail(&err) : 0;
}
