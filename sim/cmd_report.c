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
 * first study column that varies; the series are the values of --by, else
 * of the first other study column that varies.  The data files and gnuplot
 * scripts stay in DIR beside the plots, so a plot can be restyled by hand.
 */
#include <errno.h>
#include <math.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "analysis/csv.h"
#include "analysis/expr.h"
#include "sim/base/outfile.h"
#include "sim/base/xalloc.h"
#include "sim/commands.h"

extern char **environ;

static const struct opt report_opts[] = {
    {"output", 'o', OPT_VALUE, "DIR", "write the plots (PNG and SVG), their "
     "data and gnuplot scripts into DIR"},
    {"x", 0, OPT_VALUE, "COLUMN", "the study column along the x axis "
     "(default: gpus if it varies, else the first that varies)"},
    {"by", 0, OPT_VALUE, "COLUMN", "the study column whose values are the "
     "series (default: the first other that varies)"},
    {"where", 0, OPT_VALUE, "EXPR", "keep the scenarios for which EXPR, "
     "over the study's numeric columns, is true (\"seq == 8192 && layers "
     "== 64\")"},
    {NULL, 0, 0, NULL, NULL},
};

const struct opts_spec cmd_report_spec = {
    "report", POS_WORD, "RESULTS.csv", 0, report_opts,
    "Reads the results of weft sweep and prints, per series, each\n"
    "scenario's iteration time, throughput, MFU, time shares, energy per\n"
    "token and memory.  With -o DIR it also draws, with gnuplot (Debian's\n"
    "gnuplot-nox), throughput.{png,svg}, mfu, tokens, energy (each against\n"
    "x, one line per series) and shares (stacked bars of compute, overlapped\n"
    "and exposed communication and idle per scenario).",
    "  weft report results.csv\n"
    "  weft report results.csv -o plots --x gpus --by strategy\n"};

/* Metric columns the report reads. */
enum { M_IT, M_COMP, M_OVL, M_EXP, M_IDLE, M_TF, M_MFU, M_TOK, M_EPT, M_GPUS,
       M_MEM, M_COUNT };
static const char *const metric_cols[M_COUNT] = {
    "iteration_time_s", "compute_s", "overlapped_comm_s", "exposed_comm_s",
    "idle_s", "tflops_per_gpu", "mfu", "tokens_per_s",
    "gpu_energy_per_token_j", "inputs.cluster.gpus", "memory.total_bytes"};

/* Columns of newer results, used when present: the closed form and the
 * energy of GPUs and fabric together. */
enum { O_CF_IT, O_CF_COMP, O_CF_EXP, O_CF_BUB, O_EPT, O_COUNT };
static const char *const optional_cols[O_COUNT] = {
    "closed_form.iteration_s", "closed_form.compute_s",
    "closed_form.exposed_comm_s", "closed_form.bubble_s",
    "energy_per_token_j"};

struct table {
  const struct csv *c;
  int status, reason, first_study, end_study; /* study columns: [first, end) */
  int m[M_COUNT];
  int o[O_COUNT]; /* -1 when absent */
};

static double cell(const struct table *t, long r, int col)
{
  if (col < 0)
    return NAN;
  const char *v = t->c->fields[r][col];
  char *end;
  double x = strtod(v, &end);
  return (*v && !*end) ? x : NAN;
}

static double num(const struct table *t, long r, int m)
{
  return cell(t, r, t->m[m]);
}

/* Energy per token: GPUs and fabric when the file has it, else GPUs. */
static double ept(const struct table *t, long r)
{
  return t->o[O_EPT] >= 0 ? cell(t, r, t->o[O_EPT]) : num(t, r, M_EPT);
}

static bool ok_row(const struct table *t, long r)
{
  const char *s = t->c->fields[r][t->status];
  return strcmp(s, "ok") == 0 || strcmp(s, "no_fit") == 0;
}

static bool varies(const struct csv *c, int col)
{
  for (long r = 2; r < c->nrows; r++)
    if (strcmp(c->fields[r][col], c->fields[1][col]) != 0)
      return true;
  return false;
}

static bool all_numeric(const struct csv *c, int col)
{
  for (long r = 1; r < c->nrows; r++) {
    char *end;
    const char *v = c->fields[r][col];
    strtod(v, &end);
    if (!*v || *end)
      return false;
  }
  return true;
}

static int check_table(const struct csv *c, const char *path, struct table *t,
                       struct weft_err *err)
{
  t->c = c;
  if (c->nrows == 0)
    return weft_errf(err, WEFT_EINVAL, "%s: empty (no header)", path);
  t->status = csv_column(c, "status");
  t->reason = csv_column(c, "reason");
  if (csv_column(c, "key") != 0 || t->status != 2 || t->reason != 3)
    return weft_errf(err, WEFT_EINVAL, "%s:1: not a weft sweep results file "
                     "(it does not start with key, index, status, reason)",
                     path);
  for (int m = 0; m < M_COUNT; m++) {
    t->m[m] = csv_column(c, metric_cols[m]);
    if (t->m[m] < 0)
      return weft_errf(err, WEFT_EINVAL, "%s:1: no column '%s' (results of "
                       "another weft version?)", path, metric_cols[m]);
  }
  for (int k = 0; k < O_COUNT; k++)
    t->o[k] = csv_column(c, optional_cols[k]);
  t->first_study = 4;
  t->end_study = t->m[M_IT];
  for (long r = 1; r < c->nrows; r++)
    if (c->nfields[r] != c->nfields[0])
      return weft_errf(err, WEFT_EINVAL, "%s:%ld: %d fields, but the header "
                       "has %d", path, c->line[r], c->nfields[r],
                       c->nfields[0]);
  if (c->nrows < 2)
    return weft_errf(err, WEFT_EINVAL, "%s: no scenarios", path);
  return 0;
}

static int study_col(const struct table *t, const char *name, const char *flag,
                     struct weft_err *err)
{
  for (int k = t->first_study; k < t->end_study; k++)
    if (strcmp(t->c->fields[0][k], name) == 0)
      return k;
  if (!flag)
    return -1;
  return weft_errf(err, WEFT_EINVAL, "%s: '%s' is not a column of the study "
                   "in this file", flag, name);
}

/* The distinct values of column `col` in order of first appearance. */
static int distinct(const struct csv *c, int col, const char ***out)
{
  const char **v = xcalloc((size_t)c->nrows, sizeof *v);
  int n = 0;
  for (long r = 1; r < c->nrows; r++) {
    const char *x = col < 0 ? "" : c->fields[r][col];
    int k = 0;
    while (k < n && strcmp(v[k], x) != 0)
      k++;
    if (k == n)
      v[n++] = x;
  }
  *out = v;
  return n;
}

static void print_tables(FILE *f, const struct table *t, int xc, int byc)
{
  const struct csv *c = t->c;
  long ok = 0, nofit = 0, bad = 0;
  for (long r = 1; r < c->nrows; r++) {
    const char *s = c->fields[r][t->status];
    ok += strcmp(s, "ok") == 0;
    nofit += strcmp(s, "no_fit") == 0;
    bad += !ok_row(t, r);
  }
  fprintf(f, "%ld scenarios: %ld ok, %ld do not fit in memory, %ld invalid "
          "or failed\n", c->nrows - 1, ok, nofit, bad);
  const char **series;
  int ns = distinct(c, byc, &series);
  for (int s = 0; s < ns; s++) {
    if (byc >= 0)
      fprintf(f, "\n%s = %s\n", c->fields[0][byc], series[s]);
    else
      fputc('\n', f);
    fprintf(f, "  %12s %10s %9s %6s %11s %6s %6s %6s %6s %9s %9s  %s\n",
            xc >= 0 ? c->fields[0][xc] : "index", "iter s", "TFLOP/s", "MFU%",
            "tok/s/GPU", "comp%", "ovl%", "exp%", "idle%", "J/token",
            "mem GB", "status");
    for (long r = 1; r < c->nrows; r++) {
      if (byc >= 0 && strcmp(c->fields[r][byc], series[s]) != 0)
        continue;
      const char *x = xc >= 0 ? c->fields[r][xc] : c->fields[r][1];
      if (!ok_row(t, r)) {
        fprintf(f, "  %12s %s: %.90s\n", x, c->fields[r][t->status],
                c->fields[r][t->reason]);
        continue;
      }
      double it = num(t, r, M_IT);
      fprintf(f, "  %12s %10.4g %9.1f %6.1f %11.0f %6.1f %6.1f %6.1f %6.1f "
              "%9.3g %9.1f  %s\n", x, it, num(t, r, M_TF),
              100 * num(t, r, M_MFU), num(t, r, M_TOK) / num(t, r, M_GPUS),
              100 * num(t, r, M_COMP) / it, 100 * num(t, r, M_OVL) / it,
              100 * num(t, r, M_EXP) / it, 100 * num(t, r, M_IDLE) / it,
              ept(t, r), num(t, r, M_MEM) / 1e9,
              c->fields[r][t->status]);
    }
  }
  free(series);
}

/* Simulated against the closed form (workloads/closedform.h): the ratio of
 * iteration times and where they part, as shares of the simulated
 * iteration: compute (kernel efficiencies), exposed communication
 * (contention, protocols, overlap), idle against the closed form's bubble. */
static void print_closed(FILE *f, const struct table *t, int xc, int byc)
{
  const struct csv *c = t->c;
  for (int k = 0; k < O_EPT; k++)
    if (t->o[k] < 0)
      return;
  fprintf(f, "\nsimulated against the closed form (roofline, alpha-beta, "
          "fixed overlap); differences as %% of the simulated iteration\n");
  fprintf(f, "  %12s %20s %10s %10s %7s %9s %9s %9s  %s\n",
          xc >= 0 ? c->fields[0][xc] : "index", byc >= 0 ? c->fields[0][byc]
          : "", "sim s", "closed s", "ratio", "compute", "exposed", "idle",
          "largest");
  for (long r = 1; r < c->nrows; r++) {
    if (!ok_row(t, r))
      continue;
    double it = num(t, r, M_IT), cf = cell(t, r, t->o[O_CF_IT]);
    double d[3] = {num(t, r, M_COMP) - cell(t, r, t->o[O_CF_COMP]),
                   num(t, r, M_EXP) - cell(t, r, t->o[O_CF_EXP]),
                   num(t, r, M_IDLE) - cell(t, r, t->o[O_CF_BUB])};
    static const char *const why[3] = {"kernel efficiency", "communication",
                                       "bubbles and waits"};
    int big = 0;
    for (int k = 1; k < 3; k++)
      if (fabs(d[k]) > fabs(d[big]))
        big = k;
    fprintf(f, "  %12s %20.20s %10.4g %10.4g %7.3f %+8.1f%% %+8.1f%% "
            "%+8.1f%%  %s\n", xc >= 0 ? c->fields[r][xc] : c->fields[r][1],
            byc >= 0 ? c->fields[r][byc] : "", it, cf, it / cf,
            100 * d[0] / it, 100 * d[1] / it, 100 * d[2] / it, why[big]);
  }
}

/* gnuplot strings: single-quoted, quotes doubled. */
static void gp_str(FILE *f, const char *s)
{
  fputc('\'', f);
  for (; *s; s++) {
    if (*s == '\'')
      fputc('\'', f);
    fputc(*s, f);
  }
  fputc('\'', f);
}

/* Data: one block per series (x, tflops, mfu %, tokens/s/GPU, J/token),
 * blocks separated by two blank lines (gnuplot's `index`); shares: one
 * line per ok scenario (label, compute-only, overlapped, exposed, idle as
 * fractions of the iteration). */
static int write_data(const char *dir, const struct table *t, int xc, int byc,
                      bool numeric, const char **xs, int nx,
                      struct weft_err *err)
{
  const struct csv *c = t->c;
  char *path = xasprintf("%s/report.dat", dir);
  struct outfile of;
  int rc = outfile_open(&of, path, err);
  const char **series;
  int ns = distinct(c, byc, &series);
  for (int s = 0; !rc && s < ns; s++) {
    fprintf(of.f, "# series %s\n", series[s]);
    for (long r = 1; r < c->nrows; r++) {
      if ((byc >= 0 && strcmp(c->fields[r][byc], series[s]) != 0) ||
          !ok_row(t, r))
        continue;
      const char *x = xc >= 0 ? c->fields[r][xc] : c->fields[r][1];
      int xi = 0;
      while (xi < nx && strcmp(xs[xi], x) != 0)
        xi++;
      if (numeric)
        fprintf(of.f, "%s", x);
      else
        fprintf(of.f, "%d", xi);
      fprintf(of.f, " %.9g %.9g %.9g %.9g %.9g\n", num(t, r, M_TF),
              100 * num(t, r, M_MFU), num(t, r, M_TOK) / num(t, r, M_GPUS),
              ept(t, r), num(t, r, M_IT) / cell(t, r, t->o[O_CF_IT]));
    }
    fprintf(of.f, "\n\n");
  }
  free(series);
  if (!rc)
    rc = outfile_commit(&of, err);
  free(path);
  if (rc)
    return rc;
  path = xasprintf("%s/shares.dat", dir);
  rc = outfile_open(&of, path, err);
  for (long r = 1; !rc && r < c->nrows; r++) {
    if (!ok_row(t, r))
      continue;
    double it = num(t, r, M_IT);
    const char *x = xc >= 0 ? c->fields[r][xc] : c->fields[r][1];
    fprintf(of.f, "\"%s%s%s\" %.6g %.6g %.6g %.6g\n", x, byc >= 0 ? " " : "",
            byc >= 0 ? c->fields[r][byc] : "",
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
                  {"closed", "simulated over closed-form iteration time", 6}};
#define N_LINE_PLOTS (int)(sizeof line_plots / sizeof *line_plots)

static int write_script(const char *dir, const char *name, const struct table *t,
                        int xc, int byc, bool numeric, bool logx,
                        const char **xs, int nx, int plot,
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
  const struct csv *c = t->c;
  fprintf(f, "# gnuplot script written by weft report; run it in this "
          "folder: gnuplot %s.gp\n", name);
  fprintf(f, "set datafile missing 'nan'\nset key outside right top\n"
          "set grid ytics\n");
  for (int fmt = 0; fmt < 2; fmt++) {
    fprintf(f, fmt == 0 ? "set terminal pngcairo size 960,540 font ',10'\n"
                        : "set terminal svg size 960,540 font 'Sans,10'\n");
    fprintf(f, "set output '%s.%s'\n", name, fmt == 0 ? "png" : "svg");
    if (plot < 0) { /* shares */
      fprintf(f, "set title 'share of the iteration'\nset key below\n"
              "set style data histograms\nset style histogram rowstacked\nset style fill "
              "solid 0.8 border -1\nset boxwidth 0.8\nset yrange [0:1]\n"
              "set ylabel 'fraction of the iteration time'\n"
              "set xtics rotate by -45 noenhanced\n");
      fprintf(f, "plot 'shares.dat' using 2:xtic(1) title 'compute only', "
              "'' using 3 title 'compute with communication overlapped', "
              "'' using 4 title 'exposed communication', '' using 5 title "
              "'idle (bubbles, waits)'\n");
      continue;
    }
    fprintf(f, "set title ");
    gp_str(f, line_plots[plot].ylabel);
    fprintf(f, " noenhanced\nset ylabel ");
    gp_str(f, line_plots[plot].ylabel);
    fprintf(f, "\nset xlabel ");
    gp_str(f, xc >= 0 ? c->fields[0][xc] : "scenario");
    fprintf(f, " noenhanced\n");
    if (logx)
      fprintf(f, "set logscale x 2\n");
    if (!numeric) {
      fprintf(f, "set xrange [-0.5:%d.5]\nset xtics (", nx - 1);
      for (int i = 0; i < nx; i++) {
        fprintf(f, "%s", i ? ", " : "");
        gp_str(f, xs[i]);
        fprintf(f, " %d", i);
      }
      fprintf(f, ")\n");
    } else {
      fprintf(f, "set xtics (");
      for (int i = 0; i < nx; i++) {
        fprintf(f, "%s", i ? ", " : "");
        gp_str(f, xs[i]);
        fprintf(f, " %s", xs[i]);
      }
      fprintf(f, ")\n");
    }
    fprintf(f, "set yrange [0:*]\nplot ");
    const char **series;
    int ns = distinct(c, byc, &series);
    for (int s = 0; s < ns; s++) {
      fprintf(f, "%s'report.dat' index %d using 1:%d with linespoints "
              "pointtype 7 title ", s ? ", " : "", s,
              line_plots[plot].column);
      gp_str(f, byc >= 0 ? series[s] : "");
      fprintf(f, " noenhanced");
    }
    free(series);
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
                     "left in %s", strerror(e), dir);
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

static int plots(const char *dir, const struct table *t, int xc, int byc,
                 struct weft_err *err)
{
  if (mkdir(dir, 0777) < 0 && errno != EEXIST)
    return weft_errf(err, WEFT_EIO, "%s: cannot create: %s", dir,
                     strerror(errno));
  const struct csv *c = t->c;
  bool numeric = xc >= 0 ? all_numeric(c, xc) : true;
  const char **xs;
  int nx = distinct(c, xc >= 0 ? xc : 1, &xs);
  double lo = INFINITY, hi = 0;
  for (int i = 0; numeric && i < nx; i++) {
    double v = strtod(xs[i], NULL);
    lo = v < lo ? v : lo;
    hi = v > hi ? v : hi;
  }
  bool logx = numeric && lo > 0 && hi / lo >= 8;
  int rc = write_data(dir, t, xc, byc, numeric, xs, nx, err);
  int np = t->o[O_CF_IT] >= 0 ? N_LINE_PLOTS : N_LINE_PLOTS - 1;
  for (int p = -1; !rc && p < np; p++) {
    const char *name = p < 0 ? "shares" : line_plots[p].name;
    rc = write_script(dir, name, t, xc, byc, numeric, logx, xs, nx, p, err);
    if (!rc)
      rc = gnuplot(dir, name, err);
  }
  free(xs);
  return rc;
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
  const char *v = x->t->c->fields[x->r][study_col(x->t, name, NULL, NULL)];
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

/* --where: drop the rows whose expression is false (rows are owned by the
 * csv; dropped ones are freed here). */
static int filter_rows(struct table *t, struct csv *c, const char *src,
                       struct weft_err *err)
{
  struct expr *e = expr_parse(src, "--where", err);
  if (!e)
    return err ? err->code : WEFT_EINVAL;
  struct row_ctx chk = {t, 0, false, err};
  int rc = expr_each_var(e, is_study_col, &chk) ? WEFT_EINVAL : 0;
  /* Evaluate every row first: a failure frees nothing.  A scenario that
   * leaves a column unset is not kept; any other failure (a word where a
   * number is needed, a division by zero) is an error. */
  bool *keep = xcalloc((size_t)c->nrows, sizeof *keep);
  for (long r = 1; r < c->nrows && !rc; r++) {
    struct row_ctx x = {t, r, false, NULL};
    double v = 0;
    struct weft_err e2 = {0};
    if (expr_eval(e, row_value, &x, &v, &e2) == 0)
      keep[r] = v != 0;
    else if (!x.unset)
      rc = weft_errf(err, WEFT_EINVAL, "--where: the scenario of line %ld: "
                     "%s", c->line[r], e2.msg);
  }
  long kept = 1;
  for (long r = 1; r < c->nrows && !rc; r++) {
    if (!keep[r]) {
      for (int k = 0; k < c->nfields[r]; k++)
        free(c->fields[r][k]);
      free(c->fields[r]);
      continue;
    }
    c->fields[kept] = c->fields[r];
    c->nfields[kept] = c->nfields[r];
    c->line[kept] = c->line[r];
    kept++;
  }
  free(keep);
  if (!rc) {
    c->nrows = kept;
    if (kept < 2)
      rc = weft_errf(err, WEFT_EINVAL, "--where: no scenario is kept");
  }
  expr_free(e);
  return rc;
}

int cmd_report(int argc, char **argv)
{
  struct opts o;
  int code;
  if (cli_parse(&cmd_report_spec, argc, argv, &o, &code))
    return code;
  const struct opts_spec *S = &cmd_report_spec;
  if (!o.positional)
    return cli_usage("report: no results file (the CSV of weft sweep)");
  struct weft_err err = {0};
  struct csv c;
  if (csv_read(o.positional, &c, &err))
    return cli_fail(&err);
  struct table t = {0};
  int rc = check_table(&c, o.positional, &t, &err);
  const char *where = opts_get(S, &o, "where");
  if (!rc && where)
    rc = filter_rows(&t, &c, where, &err);
  int xc = -1, byc = -1;
  const char *xo = opts_get(S, &o, "x"), *bo = opts_get(S, &o, "by");
  if (!rc && xo)
    rc = (xc = study_col(&t, xo, "--x", &err)) < 0 ? xc : 0;
  if (!rc && bo)
    rc = (byc = study_col(&t, bo, "--by", &err)) < 0 ? byc : 0;
  if (!rc && !xo) {
    for (int k = t.first_study; k < t.end_study && xc < 0; k++)
      if (strcmp(c.fields[0][k], "gpus") == 0 && varies(&c, k))
        xc = k;
    for (int k = t.first_study; k < t.end_study && xc < 0; k++)
      if (varies(&c, k) && k != byc)
        xc = k;
  }
  if (!rc && !bo)
    for (int k = t.first_study; k < t.end_study && byc < 0; k++)
      if (k != xc && varies(&c, k))
        byc = k;
  if (!rc) {
    print_tables(stdout, &t, xc, byc);
    print_closed(stdout, &t, xc, byc);
    fflush(stdout); /* before gnuplot's messages */
    const char *dir = opts_get(S, &o, "output");
    if (dir) {
      rc = plots(dir, &t, xc, byc, &err);
      if (!rc)
        printf("\nwrote %s/{throughput,mfu,tokens,energy,%sshares}.{png,svg} "
               "(data and gnuplot scripts beside them)\n", dir,
               t.o[O_CF_IT] >= 0 ? "closed," : "");
    }
  }
  csv_release(&c);
  return rc ? cli_fail(&err) : 0;
}
