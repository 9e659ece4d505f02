/*
 * cmd_sweep.c - `weft sweep STUDY.xml -o RESULTS.csv [-j N]`: run every
 * scenario of a study (analysis/study.h) as `weft run --json` and record
 * each as one CSV row; `--merge` joins the results of a study's chunks.
 *
 * Each scenario runs in a child process forked from this one (no exec: the
 * child calls cmd_run directly, so a scenario costs a fork, not a program
 * start), up to -j at once; SimGrid allows one engine per process, which
 * the fork gives each.  The parent alone writes the results: one write()
 * of a whole row per scenario on a file opened for appending, so a sweep
 * killed at any point leaves complete rows (and at worst one cut row,
 * which the next run drops).  Running the same command again resumes:
 * scenarios whose key is in the file are not run again.  When every
 * scenario of the range is done the file is rewritten in scenario order,
 * so that a sweep's results do not depend on -j, on interruptions or on
 * timing.
 */
#define _XOPEN_SOURCE 700 /* realpath */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "analysis/csv.h"
#include "analysis/jsonflat.h"
#include "analysis/study.h"
#include "sim/base/names.h"
#include "sim/base/outfile.h"
#include "sim/base/units.h"
#include "sim/base/xalloc.h"
#include "sim/commands.h"
#include "sim/report.h"

static const struct opt sweep_opts[] = {
    {"output", 'o', OPT_VALUE, "FILE", "the results, one CSV row per "
     "scenario; a file of the same study is resumed, not overwritten"},
    {"jobs", 'j', OPT_VALUE, "N", "scenarios simulated at once (default: "
     "the cores online)"},
    {"timeout", 0, OPT_VALUE, "TIME", "stop a scenario after this long and "
     "record it as an error (such as 10m or 600s; default: none)"},
    {"dry-run", 'n', OPT_FLAG, NULL, "list the scenarios with their key and "
     "weft run arguments, simulate nothing"},
    {"chunk", 0, OPT_VALUE, "I/N", "only the I-th of N equal parts of the "
     "scenarios (1 <= I <= N), as one task of a job array"},
    {"emit-slurm", 0, OPT_VALUE, "DIR", "write DIR/sweep.sbatch, a Slurm job "
     "array that runs the study in chunks, and a copy of the study"},
    {"chunks", 0, OPT_VALUE, "N", "chunks of --emit-slurm (default: one per "
     "64 scenarios)"},
    {"merge", 0, OPT_FLAG, NULL, "join results files of one study (such as "
     "its chunks') into -o FILE, each scenario once, in order"},
    {NULL, 0, 0, NULL, NULL},
};

const struct opts_spec cmd_sweep_spec = {
    "sweep", POS_FILES, "STUDY.xml", 0, sweep_opts,
    "Runs every scenario of a study file as `weft run --json` and writes one\n"
    "CSV row per scenario: its key, index, status (ok, no_fit, invalid,\n"
    "error), the reason or warnings, the study's values, then every field of\n"
    "weft run's JSON (README: \"Sweeps\").  Scenarios that weft run refuses\n"
    "or that do not fit in memory are recorded with the reason.  Interrupted,\n"
    "the same command resumes; finished, the file is in scenario order.\n"
    "Progress shows on a terminal.  With --merge the arguments are results\n"
    "files to join.",
    "  weft sweep analysis/studies/strong-scaling/study.xml -o results.csv\n"
    "  weft sweep study.xml -n\n"
    "  weft sweep study.xml --emit-slurm slurm/ --chunks 16\n"
    "  weft sweep --merge -o results.csv slurm/part-*.csv\n"};

/* The fixed columns before the study's values. */
static const char *const lead_cols[] = {"key", "index", "status", "reason",
                                        NULL};
enum { LEAD = 4 };

static volatile sig_atomic_t stop_signal;

static void on_signal(int sig)
{
  stop_signal = sig;
}

/* How the study may name weft run's settings and options. */
static int classify(const char *name, enum study_use *use)
{
  if (names_eq(name, "workload")) {
    *use = SU_POSITION;
    return 0;
  }
  if (opts_is_setting(cmd_run_spec.groups, name)) {
    *use = SU_SETTING;
    return 0;
  }
  static const char *const own_ok[] = {"collective", "fidelity", "every_rank",
                                       "kernel_table", "force", NULL};
  const struct opt *o = opts_own(&cmd_run_spec, name);
  if (!o || names_find(o->name, own_ok) < 0)
    return -1;
  *use = o->type == OPT_FLAG ? SU_FLAG : SU_SETTING;
  return 0;
}

/* --- a scenario's command line --------------------------------------- */

struct scen_args {
  int argc;
  char *argv[STUDY_MAX_VARS + 4];
  char buf[STUDY_MAX_VARS * (STUDY_MAX_NAME + STUDY_MAX_VALUE + 4)];
};

/* The arguments of `weft run` for scenario i; fails with a reason for a
 * flag whose value is not true or false. */
static int scen_argv(const struct study *st, long i, struct scen_args *a,
                     struct weft_err *err)
{
  size_t used = 0;
  a->argc = 0;
  a->argv[a->argc++] = "run";
  a->argv[a->argc++] = "--json";
  for (int k = 0; k < st->ncols; k++) {
    const char *v = study_value(st, i, k);
    const struct study_column *c = &st->cols[k];
    if (!v || c->use == SU_VAR)
      continue;
    char *dst = a->buf + used;
    size_t room = sizeof a->buf - used;
    if (c->use == SU_POSITION) {
      snprintf(dst, room, "%s", v);
    } else if (c->use == SU_FLAG) {
      int yes;
      if (names_choice(v, (const char *const[]){"false", "true", "no", "yes",
                                                "0", "1", NULL}, &yes, err))
        return weft_err_prefix(err, c->name);
      if (!(yes & 1))
        continue;
      names_flag(c->name, NULL, dst, room);
    } else {
      names_flag(c->name, NULL, dst, room);
      size_t n = strlen(dst);
      snprintf(dst + n, room - n, "=%s", v);
    }
    a->argv[a->argc++] = dst;
    used += strlen(dst) + 1;
  }
  a->argv[a->argc] = NULL;
  return 0;
}

/* The number of metric columns, and the index of one by its key (-1: not
 * a column). */
static int metric_count(void)
{
  int n = 0;
  while (report_columns[n])
    n++;
  return n;
}

static int metric_col(const char *key)
{
  for (int k = 0; report_columns[k]; k++)
    if (strcmp(report_columns[k], key) == 0)
      return k;
  return -1;
}

/* --- the results file ------------------------------------------------- */

struct header {
  int n;
  const char **names;
};

static void header_build(const struct study *st, struct header *h)
{
  int nm = metric_count();
  h->n = LEAD + st->ncols + nm;
  h->names = xcalloc((size_t)h->n, sizeof *h->names);
  for (int k = 0; k < LEAD; k++)
    h->names[k] = lead_cols[k];
  for (int k = 0; k < st->ncols; k++)
    h->names[LEAD + k] = st->cols[k].name;
  for (int k = 0; k < nm; k++)
    h->names[LEAD + st->ncols + k] = report_columns[k];
}

static void header_line(const struct header *h, struct csv_buf *b)
{
  for (int k = 0; k < h->n; k++)
    csv_put(b, h->names[k], k == 0);
  csv_append(b, "\n", 1);
}

/* Whether row 0 of `c` is header `h`; else a message naming the first
 * column that differs. */
/* The first index where the name lists a and b differ (one ending
 * before the other counts), or -1 when they are equal. */
static int first_diff(const char *const *a, int na, const char *const *b,
                      int nb)
{
  for (int k = 0; k < na || k < nb; k++)
    if (k >= na || k >= nb || strcmp(a[k], b[k]) != 0)
      return k;
  return -1;
}

static int header_check(const struct csv *c, const struct header *h,
                        const char *path, struct weft_err *err)
{
  int k = first_diff((const char *const *)c->fields[0], c->nfields[0],
                     h->names, h->n);
  if (k < 0)
    return 0;
  return weft_errf(err, WEFT_EINVAL, "%s:1: its columns are not this study's "
                   "(column %d is '%s', expected '%s'); write to another file "
                   "or remove it", path, k + 1,
                   k < c->nfields[0] ? c->fields[0][k] : "(none)",
                   k < h->n ? h->names[k] : "(none)");
}

static int write_all(int fd, const char *s, size_t len)
{
  while (len) {
    ssize_t w = write(fd, s, len);
    if (w < 0 && errno == EINTR)
      continue;
    if (w <= 0)
      return -1;
    s += w;
    len -= (size_t)w;
  }
  return 0;
}

static int cmp_str(const void *a, const void *b)
{
  return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* --- one finished scenario as a row ---------------------------------- */

/* jsonflat's callback: keep the value of each metric column (owned). */
static void flat_put(void *ctx, const char *key, const char *value)
{
  char **vals = ctx;
  int k = metric_col(key);
  if (k < 0)
    return;
  free(vals[k]); /* repeated keys cannot occur in weft's JSON: the last */
  vals[k] = xstrdup(value);
}

/* The last non-empty line of `text`, without "weft: ". */
static char *last_line(const char *text)
{
  const char *end = text + strlen(text);
  while (end > text && (end[-1] == '\n' || end[-1] == '\r' || end[-1] == ' '))
    end--;
  const char *s = end;
  while (s > text && s[-1] != '\n' && s[-1] != '\r')
    s--;
  if (strncmp(s, "weft: ", 6) == 0)
    s += 6;
  char *r = xmalloc((size_t)(end - s) + 1);
  memcpy(r, s, (size_t)(end - s));
  r[end - s] = '\0';
  return r;
}

/* Warnings of a run that went through: its stderr lines joined by "; ". */
static char *warnings(const char *text)
{
  struct csv_buf b = {0};
  csv_append(&b, "", 0);
  const char *p = text;
  while (*p) {
    const char *e = strchr(p, '\n');
    size_t n = e ? (size_t)(e - p) : strlen(p);
    const char *s = p;
    if (n >= 6 && strncmp(s, "weft: ", 6) == 0) {
      s += 6;
      n -= 6;
    }
    if (n) {
      if (b.len)
        csv_append(&b, "; ", 2);
      csv_append(&b, s, n);
    }
    p = e ? e + 1 : p + strlen(p);
  }
  return b.s;
}

/* Format scenario i's row: status and reason from the run's exit status
 * and outputs (out: stdout, errtext: stderr); or invalid with reason
 * `why` when it could not run; or an error with reason `killed` when the
 * sweep stopped it.  Returns the status. */
static const char *format_row(const struct study *st, long i, int wstatus,
                              const char *out, const char *errtext,
                              const char *why, const char *killed,
                              struct csv_buf *row)
{
  char key[17], idx[24];
  study_key(st, i, key);
  snprintf(idx, sizeof idx, "%ld", i);
  int nm = metric_count();
  char **vals = xcalloc((size_t)nm, sizeof *vals);
  const char *status;
  char *reason = NULL;
  struct weft_err err = {0};
  if (why) {
    status = "invalid";
    reason = xstrdup(why);
  } else if (killed) {
    status = "error";
    reason = xstrdup(killed);
  } else if (WIFEXITED(wstatus) && WEXITSTATUS(wstatus) == 0) {
    if (jsonflat(out, strlen(out), flat_put, vals, &err)) {
      status = "error";
      reason = xasprintf("unreadable output of weft run: %s", err.msg);
      for (int k = 0; k < nm; k++) {
        free(vals[k]);
        vals[k] = NULL;
      }
    } else {
      int fit = metric_col("fits_in_memory");
      int tot = metric_col("memory.total_bytes");
      int cap = metric_col("memory.capacity_bytes");
      int hint = metric_col("memory.fit_hint");
      if (fit >= 0 && vals[fit] && strcmp(vals[fit], "false") == 0) {
        status = "no_fit";
        char a[32] = "?", b[32] = "?";
        if (tot >= 0 && vals[tot])
          units_fmt_human(strtod(vals[tot], NULL), UNIT_SIZE, a, sizeof a);
        if (cap >= 0 && vals[cap])
          units_fmt_human(strtod(vals[cap], NULL), UNIT_SIZE, b, sizeof b);
        reason = xasprintf("needs %s per GPU of %s%s%s", a, b,
                           hint >= 0 && vals[hint] ? "; to fit: " : "",
                           hint >= 0 && vals[hint] ? vals[hint] : "");
      } else {
        status = "ok";
        reason = warnings(errtext);
      }
    }
  } else if (WIFEXITED(wstatus) &&
             (WEXITSTATUS(wstatus) == 1 || WEXITSTATUS(wstatus) == 2)) {
    status = "invalid";
    reason = last_line(errtext);
  } else {
    status = "error";
    char *l = last_line(errtext);
    if (WIFSIGNALED(wstatus))
      reason = xasprintf("killed by signal %d%s%s", WTERMSIG(wstatus),
                         *l ? ": " : "", l);
    else
      reason = xasprintf("exit status %d%s%s", WEXITSTATUS(wstatus),
                         *l ? ": " : "", l);
    free(l);
  }
  csv_put(row, key, true);
  csv_put(row, idx, false);
  csv_put(row, status, false);
  csv_put(row, reason, false);
  for (int k = 0; k < st->ncols; k++)
    csv_put(row, study_value(st, i, k), false);
  for (int k = 0; k < nm; k++)
    csv_put(row, vals[k], false);
  csv_append(row, "\n", 1);
  free(reason);
  for (int k = 0; k < nm; k++)
    free(vals[k]);
  free(vals);
  return status;
}

/* --- the runner ------------------------------------------------------- */

#include "sim/pool.h" /* here, where it is used: the runner is its own section */

#define MAX_CHILD_OUTPUT (4 << 20)

/* One scenario given to the pool; freed when the pool hands it back. */
struct job {
  long scen;
  struct scen_args a;
};

/* In the child (sim/pool.h): run the scenario; returns the exit status. */
static int child_main(void *task)
{
  struct job *j = task;
  int rc = cmd_run(j->a.argc, j->a.argv);
  struct weft_err err = {0};
  if (rc == 0 && outfile_check_stdout(&err))
    rc = cli_fail(&err);
  return rc;
}

struct progress {
  bool tty;
  long total, done, failed, skipped;
  double t0;
};

static void show(const struct progress *p, int running)
{
  if (!p->tty)
    return;
  double el = cli_wall_s() - p->t0;
  fprintf(stderr, "\rweft sweep: %ld/%ld done, %ld failed, %d running, "
          "%.0f s elapsed", p->done + p->skipped, p->total, p->failed, running,
          el);
  if (p->done > 0)
    fprintf(stderr, ", about %.0f s left",
            el / (double)p->done * (double)(p->total - p->skipped - p->done));
  fprintf(stderr, "\033[K");
}

/* What run_all's pool callbacks share. */
struct runner {
  const struct study *st;
  const long *todo;
  long ntodo, next;
  double timeout_s;
  int fd;
  const char *path; /* of fd, for messages */
  struct progress *pg;
  double last_show;
};

static int put_row(struct runner *r, const struct csv_buf *row,
                   struct weft_err *err)
{
  if (write_all(r->fd, row->s, row->len))
    return weft_errf(err, WEFT_EIO, "%s: write error: %s", r->path,
                     strerror(errno));
  return 0;
}

/* The pool's next task: the next scenario that can run; those that cannot
 * are recorded as they are on the way. */
static int next_scen(void *ctx, pool_child_fn **out_run, void **out_task,
                     struct weft_err *err)
{
  struct runner *r = ctx;
  while (r->next < r->ntodo) {
    long i = r->todo[r->next++];
    struct job *j = xmalloc(sizeof *j);
    struct weft_err why = {0};
    if (!r->st->reason[i] && !scen_argv(r->st, i, &j->a, &why)) {
      j->scen = i;
      *out_run = child_main;
      *out_task = j;
      return 1;
    }
    free(j);
    struct csv_buf row = {0};
    format_row(r->st, i, 0, "", "",
               r->st->reason[i] ? r->st->reason[i] : why.msg, NULL, &row);
    int rc = put_row(r, &row, err);
    csv_buf_free(&row);
    r->pg->done++;
    r->pg->failed++;
    if (rc)
      return rc;
  }
  return 0;
}

/* A scenario ended: its row.  Stopped ones leave none. */
static int done_scen(void *ctx, void *task, const struct pool_result *res,
                     struct weft_err *err)
{
  struct runner *r = ctx;
  struct job *j = task;
  long i = j->scen;
  free(j);
  if (res->end == POOL_STOPPED)
    return 0;
  char *killed = NULL;
  if (res->end == POOL_TIMED_OUT) /* the configured time, as given */
    killed = xasprintf("timed out after %.9g s", r->timeout_s);
  else if (res->end != POOL_EXITED)
    killed = xasprintf("more than 4 MiB of output after %.0f s", res->wall_s);
  struct csv_buf row = {0};
  const char *status = format_row(r->st, i, res->status, res->out, res->err,
                                  NULL, killed, &row);
  free(killed);
  if (strcmp(status, "ok") != 0 && strcmp(status, "no_fit") != 0)
    r->pg->failed++;
  int rc = put_row(r, &row, err);
  csv_buf_free(&row);
  r->pg->done++;
  return rc;
}

static void tick(void *ctx, int running)
{
  struct runner *r = ctx;
  double t = cli_wall_s();
  if (r->pg->tty && t - r->last_show > 0.5) {
    show(r->pg, running);
    r->last_show = t;
  }
}

/* Run scenarios todo[0..ntodo) with up to `jobs` children, appending a row
 * per finished scenario to fd (the file `path`).  Returns 0, a signal
 * number when stopped, or an error. */
static int run_all(const struct study *st, const long *todo, long ntodo,
                   int jobs, double timeout_s, int fd, const char *path,
                   struct progress *pg, struct weft_err *err)
{
  if (stop_signal) /* caught before the pool took over the signals */
    return stop_signal;
  struct runner r = {st, todo, ntodo, 0, timeout_s, fd, path, pg, 0};
  struct pool_opts po = {jobs, timeout_s, 0, MAX_CHILD_OUTPUT};
  struct pool_ops ops = {next_scen, done_scen, tick};
  int rc = pool_run(&po, &ops, &r, err);
  if (pg->tty) {
    show(pg, 0);
    fprintf(stderr, "\r\033[K");
  }
  return rc;
}

/* --- sorting a finished file ------------------------------------------ */

static const struct csv *sort_csv;
static int sort_index_col;

static long row_index(long r)
{
  return strtol(sort_csv->fields[r][sort_index_col], NULL, 10);
}

static int cmp_rows(const void *a, const void *b)
{
  long ra = *(const long *)a, rb = *(const long *)b;
  long ia = row_index(ra), ib = row_index(rb);
  if (ia != ib)
    return ia < ib ? -1 : 1;
  return ra < rb ? -1 : ra > rb;
}

/* Write the rows `rows[0..n)` of `c` (plus its header) to `path`
 * atomically. */
static int write_rows(const char *path, const struct csv *c, const long *rows,
                      long n, struct weft_err *err)
{
  struct outfile of;
  if (outfile_open(&of, path, err))
    return err->code;
  struct csv_buf b = {0};
  for (long q = -1; q < n; q++) {
    long r = q < 0 ? 0 : rows[q];
    b.len = 0;
    for (int k = 0; k < c->nfields[r]; k++)
      csv_put(&b, c->fields[r][k], k == 0);
    csv_append(&b, "\n", 1);
    fwrite(b.s, 1, b.len, of.f);
  }
  csv_buf_free(&b);
  return outfile_commit(&of, err);
}

/* Rewrite a complete results file in scenario order. */
static int sort_file(const char *path, struct weft_err *err)
{
  struct csv c;
  if (csv_read(path, &c, err))
    return err->code;
  long n = c.nrows - 1;
  long *rows = xcalloc((size_t)(n > 0 ? n : 1), sizeof *rows);
  for (long r = 0; r < n; r++)
    rows[r] = r + 1;
  sort_csv = &c;
  sort_index_col = csv_column(&c, "index");
  int rc = 0;
  if (sort_index_col >= 0) {
    qsort(rows, (size_t)n, sizeof *rows, cmp_rows);
    rc = write_rows(path, &c, rows, n, err);
  }
  free(rows);
  csv_release(&c);
  return rc;
}

/* Order scenario offsets by key, then by position. */
static char (*sort_keys)[17];

static int cmp_key_index(const void *a, const void *b)
{
  long x = *(const long *)a, y = *(const long *)b;
  int c = strcmp(sort_keys[x], sort_keys[y]);
  return c ? c : (x > y) - (x < y);
}

/* --- subcommand pieces -------------------------------------------------- */

static int parse_count(const char *flag, const char *v, long min, long max,
                       long *out, struct weft_err *err)
{
  char *end;
  errno = 0;
  long x = strtol(v, &end, 10);
  if (end == v || *end || errno)
    return weft_errf(err, WEFT_EINVAL, "%s: '%s' is not an integer", flag, v);
  if (x < min || x > max)
    return weft_errf(err, WEFT_EINVAL, "%s: '%s' is not between %ld and %ld",
                     flag, v, min, max);
  *out = x;
  return 0;
}

/* The range [lo, hi) of chunk "I/N" of n scenarios. */
static int chunk_range(const char *v, long n, long *lo, long *hi,
                       struct weft_err *err)
{
  const char *slash = v ? strchr(v, '/') : NULL;
  *lo = 0;
  *hi = n;
  if (!v)
    return 0;
  char a[32];
  size_t len = slash ? (size_t)(slash - v) : 0;
  if (!slash || len >= sizeof a)
    return weft_errf(err, WEFT_EINVAL, "--chunk: '%s' is not I/N, such as "
                     "3/16", v);
  memcpy(a, v, len);
  a[len] = '\0';
  long i, k;
  if (parse_count("--chunk", slash + 1, 1, STUDY_MAX_SCENARIOS, &k, err) ||
      parse_count("--chunk", a, 1, k, &i, err))
    return err->code;
  *lo = (long)((double)(i - 1) * (double)n / (double)k);
  *hi = (long)((double)i * (double)n / (double)k);
  return 0;
}

static void shell_quote(FILE *f, const char *s)
{
  fputc('\'', f);
  for (; *s; s++)
    if (*s == '\'')
      fputs("'\\''", f);
    else
      fputc(*s, f);
  fputc('\'', f);
}

static int emit_slurm(const char *study_path, const struct study *st,
                      const char *dir, const char *chunks_opt,
                      const char *jobs_opt, struct weft_err *err)
{
  long chunks = (st->n + 63) / 64, jobs = 1;
  if (chunks < 1)
    chunks = 1;
  if (chunks_opt &&
      parse_count("--chunks", chunks_opt, 1, st->n > 0 ? st->n : 1, &chunks,
                  err))
    return err->code;
  if (jobs_opt && parse_count("--jobs", jobs_opt, 1, 64, &jobs, err))
    return err->code;
  if (mkdir(dir, 0777) < 0 && errno != EEXIST)
    return weft_errf(err, WEFT_EIO, "%s: cannot create: %s", dir,
                     strerror(errno));
  char absdir[PATH_MAX], self[PATH_MAX];
  if (!realpath(dir, absdir))
    return weft_errf(err, WEFT_EIO, "%s: %s", dir, strerror(errno));
  ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
  if (n <= 0)
    return weft_errf(err, WEFT_EIO, "cannot find the weft program: %s",
                     strerror(errno));
  self[n] = '\0';
  /* A copy of the study, so that the array runs what was emitted. */
  size_t len;
  char *text = csv_slurp(study_path, &len, err);
  if (!text)
    return err->code;
  char *copy = xasprintf("%s/study.xml", dir);
  char *script = xasprintf("%s/sweep.sbatch", dir);
  struct outfile of;
  int rc = outfile_open(&of, copy, err);
  if (!rc) {
    fwrite(text, 1, len, of.f);
    rc = outfile_commit(&of, err);
  }
  free(text);
  if (!rc)
    rc = outfile_open(&of, script, err);
  if (!rc) {
    FILE *f = of.f;
    fprintf(f, "#!/bin/bash\n"
            "# weft sweep of study '%s' (%ld scenarios) as a Slurm job array "
            "of %ld chunks.\n# Written by weft %s from %s.\n"
            "#   submit:    sbatch %s/sweep.sbatch\n"
            "#   then join: weft sweep --merge -o results.csv %s/part-*.csv\n"
            "# A chunk that stopped resumes when its task runs again.  Set "
            "WEFT to use\n# another weft program than the one that wrote "
            "this.\n",
            st->name[0] ? st->name : "(unnamed)", st->n, chunks, WEFT_VERSION,
            study_path, absdir, absdir);
    fprintf(f, "#SBATCH --job-name=weft-sweep\n"
            "#SBATCH --array=1-%ld\n#SBATCH --ntasks=1\n"
            "#SBATCH --cpus-per-task=%ld\n"
            "#SBATCH --output=%s/slurm-%%A_%%a.out\n"
            "set -euo pipefail\n", chunks, jobs, absdir);
    fputs("dir=", f);
    shell_quote(f, absdir);
    fputs("\nweft=${WEFT:-", f);
    shell_quote(f, self);
    fprintf(f, "}\ntask=${SLURM_ARRAY_TASK_ID:?run this with sbatch, or set "
            "SLURM_ARRAY_TASK_ID}\n"
            "exec \"$weft\" sweep \"$dir/study.xml\" --chunk \"$task/%ld\" "
            "-j \"${SLURM_CPUS_PER_TASK:-%ld}\" -o \"$dir/part-$task.csv\"\n",
            chunks, jobs);
    rc = outfile_commit(&of, err);
  }
  if (!rc)
    chmod(script, 0755);
  if (!rc)
    printf("wrote %s (%ld chunks of about %ld scenarios) and %s\n", script,
           chunks, (st->n + chunks - 1) / chunks, copy);
  free(copy);
  free(script);
  return rc;
}

static int merge(const struct opts *o, const char *out, struct weft_err *err)
{
  if (o->n_files == 0)
    return weft_errf(err, WEFT_EINVAL, "--merge: no results files to join");
  struct csv *in = xcalloc((size_t)o->n_files, sizeof *in);
  int rc = 0, nread = 0;
  for (int f = 0; f < o->n_files && !rc; f++) {
    rc = csv_read(o->files[f], &in[f], err);
    if (rc)
      break;
    nread++;
    if (in[f].nrows == 0)
      rc = weft_errf(err, WEFT_EINVAL, "%s: empty (no header)", o->files[f]);
    else if (csv_column(&in[f], "key") != 0 ||
             csv_column(&in[f], "index") != 1)
      rc = weft_errf(err, WEFT_EINVAL, "%s:1: not a weft sweep results file "
                     "(its first columns are not key, index)", o->files[f]);
    int k = rc || f == 0 ? -1
                         : first_diff((const char *const *)in[0].fields[0],
                                      in[0].nfields[0],
                                      (const char *const *)in[f].fields[0],
                                      in[f].nfields[0]);
    if (k >= 0)
      rc = weft_errf(err, WEFT_EINVAL, "%s:1: its columns differ from %s's "
                     "(column %d); these are not results of one study",
                     o->files[f], o->files[0], k + 1);
    if (!rc && in[f].partial)
      fprintf(stderr, "weft: warning: %s: its last row is cut; left out\n",
              o->files[f]);
  }
  /* All rows into one table, sorted by (index, key); equal keys must be
   * equal rows. */
  struct csv all = {0};
  long total = 0;
  for (int f = 0; f < nread && !rc; f++)
    total += in[f].nrows - 1;
  struct ref {
    int f;
    long r;
  } *refs = xcalloc((size_t)(total > 0 ? total : 1), sizeof *refs);
  long nr = 0;
  for (int f = 0; f < nread && !rc; f++)
    for (long r = 1; r < in[f].nrows; r++)
      refs[nr++] = (struct ref){f, r};
  /* Build `all` by borrowing rows (freed through `in`). */
  all.nrows = nr + 1;
  all.fields = xcalloc((size_t)all.nrows, sizeof *all.fields);
  all.nfields = xcalloc((size_t)all.nrows, sizeof *all.nfields);
  if (!rc) {
    all.fields[0] = in[0].fields[0];
    all.nfields[0] = in[0].nfields[0];
  }
  for (long q = 0; q < nr; q++) {
    all.fields[q + 1] = in[refs[q].f].fields[refs[q].r];
    all.nfields[q + 1] = in[refs[q].f].nfields[refs[q].r];
  }
  long *rows = xcalloc((size_t)(nr > 0 ? nr : 1), sizeof *rows);
  long nout = 0;
  if (!rc) {
    for (long q = 0; q < nr; q++)
      rows[q] = q + 1;
    sort_csv = &all;
    sort_index_col = 1;
    qsort(rows, (size_t)nr, sizeof *rows, cmp_rows);
    /* Equal keys have equal indexes, so they are neighbours by key within
     * an index; compare each row with the kept ones of its index. */
    for (long q = 0; q < nr && !rc; q++) {
      bool dup = false;
      for (long p = nout - 1; p >= 0 && row_index(rows[p]) == row_index(rows[q]);
           p--) {
        char **a = all.fields[rows[p]], **b = all.fields[rows[q]];
        if (strcmp(a[0], b[0]) != 0)
          continue;
        bool same = all.nfields[rows[p]] == all.nfields[rows[q]];
        for (int k = 0; same && k < all.nfields[rows[p]]; k++)
          same = strcmp(a[k], b[k]) == 0;
        if (!same)
          rc = weft_errf(err, WEFT_EINVAL, "scenario %s (index %ld) has two "
                         "different rows; these files are not one study's",
                         a[0], row_index(rows[q]));
        dup = true;
      }
      if (!dup)
        rows[nout++] = rows[q];
    }
  }
  if (!rc)
    rc = write_rows(out, &all, rows, nout, err);
  if (!rc)
    printf("merged %ld rows of %d files into %s (%ld scenarios)\n", nr,
           o->n_files, out, nout);
  free(rows);
  free(refs);
  free(all.fields);
  free(all.nfields);
  for (int f = 0; f < nread; f++)
    csv_release(&in[f]);
  free(in);
  return rc;
}

static void dry_run(const struct study *st, long lo, long hi)
{
  for (long i = lo; i < hi; i++) {
    char key[17];
    study_key(st, i, key);
    printf("%ld %s", i, key);
    struct scen_args a;
    struct weft_err e = {0};
    if (st->reason[i] || scen_argv(st, i, &a, &e)) {
      printf(" invalid: %s\n", st->reason[i] ? st->reason[i] : e.msg);
      continue;
    }
    printf(" weft");
    for (int k = 0; k < a.argc; k++)
      printf(" %s", a.argv[k]);
    for (int k = 0; k < st->ncols; k++)
      if (st->cols[k].use == SU_VAR && study_value(st, i, k))
        printf(" # %s=%s", st->cols[k].name, study_value(st, i, k));
    putchar('\n');
  }
}

/* Open (or resume) the results file: the rows already there are `done`
 * (sorted keys, caller frees).  A cut last row is removed. */
static int open_results(const char *path, const struct header *h, int *fd,
                        char ***done, long *ndone, struct weft_err *err)
{
  *done = NULL;
  *ndone = 0;
  struct stat sb;
  bool resume = stat(path, &sb) == 0 && sb.st_size > 0;
  if (resume) {
    struct csv c;
    if (csv_read(path, &c, err))
      return err->code;
    int rc = c.nrows == 0 ? weft_errf(err, WEFT_EINVAL, "%s: not a weft sweep "
                                      "results file (no complete header)", path)
                          : header_check(&c, h, path, err);
    if (!rc && c.partial && truncate(path, (off_t)c.complete_bytes) < 0)
      rc = weft_errf(err, WEFT_EIO, "%s: cannot drop its cut last row: %s",
                     path, strerror(errno));
    if (!rc) {
      *done = xcalloc((size_t)(c.nrows > 1 ? c.nrows : 1), sizeof **done);
      for (long r = 1; r < c.nrows; r++)
        if (c.nfields[r] > 0)
          (*done)[(*ndone)++] = xstrdup(c.fields[r][0]);
      qsort(*done, (size_t)*ndone, sizeof **done, cmp_str);
    }
    csv_release(&c);
    if (rc)
      return rc;
  }
  *fd = open(path, O_WRONLY | O_APPEND | O_CREAT, 0666);
  if (*fd < 0)
    return weft_errf(err, WEFT_EIO, "%s: cannot write: %s", path,
                     strerror(errno));
  if (!resume) {
    struct csv_buf b = {0};
    header_line(h, &b);
    int rc = write_all(*fd, b.s, b.len);
    csv_buf_free(&b);
    if (rc)
      return weft_errf(err, WEFT_EIO, "%s: write error: %s", path,
                       strerror(errno));
  }
  return 0;
}

int cmd_sweep(int argc, char **argv)
{
  double t0 = cli_wall_s();
  struct opts o;
  int code;
  if (cli_parse(&cmd_sweep_spec, argc, argv, &o, &code))
    return code;
  const struct opts_spec *S = &cmd_sweep_spec;
  const char *out = opts_get(S, &o, "output");
  const char *slurm = opts_get(S, &o, "emit-slurm");
  bool dry = opts_get(S, &o, "dry-run") != NULL;
  struct weft_err err = {0};
  if (opts_get(S, &o, "merge")) {
    if (!out)
      return cli_usage("sweep --merge: give the joined file with -o FILE");
    return merge(&o, out, &err) ? cli_fail(&err) : 0;
  }
  if (o.n_files != 1)
    return cli_usage(o.n_files ? "sweep: one study file, not %d (results "
                     "files go with --merge)" : "sweep: no study file%.0d",
                     o.n_files);
  if (!out && !dry && !slurm)
    return cli_usage("sweep: give the results file with -o FILE (or -n to "
                     "list the scenarios)");
  long jobs = sysconf(_SC_NPROCESSORS_ONLN);
  double timeout_s = 0;
  const char *jobs_opt = opts_get(S, &o, "jobs");
  const char *tmo = opts_get(S, &o, "timeout");
  if (jobs < 1)
    jobs = 1;
  if (jobs > 64)
    jobs = 64;
  if ((jobs_opt && parse_count("--jobs", jobs_opt, 1, 64, &jobs, &err)) ||
      (tmo && units_parse(tmo, UNIT_TIME, &timeout_s, &err) &&
       weft_err_prefix(&err, "--timeout")))
    return cli_fail(&err);
  if (tmo && !(timeout_s > 0)) {
    weft_errf(&err, WEFT_EINVAL, "--timeout: '%s' is not above zero", tmo);
    return cli_fail(&err);
  }
  struct study st;
  if (study_load(o.files[0], classify, &st, &err))
    return cli_fail(&err);
  int rc = 0;
  for (int k = 0; k < st.ncols && !rc; k++)
    if (metric_col(st.cols[k].name) >= 0 ||
        names_find(st.cols[k].name, lead_cols) >= 0)
      rc = weft_errf(&err, WEFT_EINVAL, "%s: '%s' is also a column of the "
                       "results; name the study's value otherwise",
                       o.files[0], st.cols[k].name);
  if (rc)
    goto out_study;
  long lo, hi;
  if (slurm) {
    rc = emit_slurm(o.files[0], &st, slurm, opts_get(S, &o, "chunks"),
                    jobs_opt, &err);
    goto out_study;
  }
  if (opts_get(S, &o, "chunks")) {
    rc = cli_usage("sweep: --chunks goes with --emit-slurm (one chunk: "
                   "--chunk I/N)");
    goto out_study_rc;
  }
  if ((rc = chunk_range(opts_get(S, &o, "chunk"), st.n, &lo, &hi, &err)))
    goto out_study;
  if (dry) {
    dry_run(&st, lo, hi);
    goto out_study;
  }
  struct header h;
  header_build(&st, &h);
  int fd = -1;
  char **done;
  long ndone;
  rc = open_results(out, &h, &fd, &done, &ndone, &err);
  /* To do: the range's scenarios not in the file, each key once. */
  long span = hi > lo ? hi - lo : 1;
  long *todo = xcalloc((size_t)span, sizeof *todo);
  long ntodo = 0, skipped = 0, repeats = 0;
  char (*keys)[17] = xcalloc((size_t)span, sizeof *keys);
  for (long i = lo; i < hi; i++)
    study_key(&st, i, keys[i - lo]);
  /* Scenarios with equal values (equal keys) run once: the first. */
  bool *repeat = xcalloc((size_t)span, sizeof *repeat);
  long *by_key = xcalloc((size_t)span, sizeof *by_key);
  for (long i = 0; i < hi - lo; i++)
    by_key[i] = i;
  sort_keys = keys;
  qsort(by_key, (size_t)(hi - lo), sizeof *by_key, cmp_key_index);
  for (long q = 1; q < hi - lo; q++)
    repeat[by_key[q]] = strcmp(keys[by_key[q]], keys[by_key[q - 1]]) == 0;
  free(by_key);
  for (long i = lo; i < hi && !rc; i++) {
    char *k = keys[i - lo];
    if (ndone > 0 &&
        bsearch(&k, done, (size_t)ndone, sizeof *done, cmp_str)) {
      skipped++;
      continue;
    }
    if (repeat[i - lo]) {
      repeats++;
      continue;
    }
    todo[ntodo++] = i;
  }
  free(repeat);
  if (repeats && !o.quiet)
    fprintf(stderr, "weft: warning: %ld scenarios repeat others (same "
            "values); each is simulated once\n", repeats);
  struct progress pg = {isatty(STDERR_FILENO), ntodo + skipped, 0, 0, skipped,
                        t0};
  if (!rc) {
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    signal(SIGPIPE, SIG_IGN);
    rc = run_all(&st, todo, ntodo, (int)jobs, timeout_s, fd, out, &pg, &err);
  }
  if (fd >= 0 && close(fd) < 0 && !rc)
    rc = weft_errf(&err, WEFT_EIO, "%s: write error: %s", out,
                   strerror(errno));
  if (rc > 0) { /* stopped by a signal */
    fprintf(stderr, "weft: sweep stopped: %ld of %ld scenarios are in %s; "
            "the same command resumes\n", pg.done + skipped, ntodo + skipped,
            out);
    rc = 128 + rc;
  } else if (!rc) {
    rc = sort_file(out, &err);
  }
  if (rc < 0)
    rc = cli_fail(&err);
  else if (rc == 0) {
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    double cpu = (double)ru.ru_utime.tv_sec + 1e-6 * (double)ru.ru_utime.tv_usec +
                 (double)ru.ru_stime.tv_sec + 1e-6 * (double)ru.ru_stime.tv_usec;
    printf("weft sweep: %ld scenarios (%ld run, %ld already in %s), %ld "
           "failed, in %.1f s; %.1f ms of the sweep's own CPU per scenario "
           "run\n", ntodo + skipped, pg.done, skipped, out, pg.failed,
           cli_wall_s() - t0, ntodo ? 1e3 * cpu / (double)ntodo : 0.0);
  }
  for (long q = 0; q < ndone; q++)
    free(done[q]);
  free(done);
  free(todo);
  free(keys);
  free(h.names);
out_study:
  if (rc < 0)
    rc = cli_fail(&err);
out_study_rc:
  study_release(&st);
  return rc;
}
