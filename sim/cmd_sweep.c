/*
 * cmd_sweep.c - `weft sweep STUDY.xml -o RESULTS.csv [-j N]`: run every
 * scenario of a study (analysis/study.h) as `weft run --json` and record
 * each as one CSV row; `--merge` joins the results of a study's chunks.
 *
 * Each scenario runs in a child process forked from this one (no exec: the
 * child parses the scenario's weft run arguments and runs the job itself,
 * sim/job.h, so a scenario costs a fork, not a program start), up to -j at
 * once; SimGrid allows one engine per process, which the fork gives each.
 * The parent alone writes the results: one write() of a whole row per
 * scenario on a file opened for appending, so a sweep killed at any point
 * leaves complete rows (and at worst one cut row, which the next run
 * drops).  Running the same command again resumes: scenarios whose key is in
 * the file are not run again.  When every scenario of the range is done the
 * file is rewritten in scenario order, so that a sweep's results do not
 * depend on -j, on interruptions or on timing.
 */
#define _XOPEN_SOURCE 700 /* realpath */
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <limits.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <unistd.h>

#include "analysis/study.h"
#include "sim/base/csv.h"
#include "sim/base/jsonflat.h"
#include "sim/base/names.h"
#include "sim/base/outfile.h"
#include "sim/base/units.h"
#include "sim/base/xalloc.h"
#include "sim/commands.h"
#include "sim/pool.h"
#include "sim/report.h"

/* The keys of the options below (opts_get), one per entry. */
enum sweep_opt {
  SWEEP_OUTPUT, SWEEP_JOBS, SWEEP_TIMEOUT, SWEEP_DRY_RUN, SWEEP_CHUNK,
  SWEEP_EMIT_SLURM, SWEEP_CHUNKS, SWEEP_MERGE, SWEEP_RETRY, SWEEP_RELATIVE_TO,
  SWEEP_COUNT
};

static const struct opt sweep_opts[] = {
    [SWEEP_OUTPUT] = {"output", 'o', OPT_VALUE, "FILE",
      "the results, one CSV row per scenario; a file of the same study is "
      "resumed, not overwritten"},
    [SWEEP_JOBS] = {"jobs", 'j', OPT_VALUE, "N",
      "scenarios simulated at once (default: the cores online)"},
    [SWEEP_TIMEOUT] = {"timeout", 0, OPT_VALUE, "TIME",
      "stop a scenario after this long and record it as an error (such as "
      "10m or 600s; default: none)"},
    [SWEEP_DRY_RUN] = {"dry-run", 'n', OPT_FLAG, NULL,
      "list the scenarios with their key and weft run arguments, simulate "
      "nothing"},
    [SWEEP_CHUNK] = {"chunk", 0, OPT_VALUE, "I/N",
      "only the I-th of N equal parts of the scenarios (1 <= I <= N), as one "
      "task of a job array"},
    [SWEEP_EMIT_SLURM] = {"emit-slurm", 0, OPT_VALUE, "DIR",
      "write DIR/sweep.sbatch, a Slurm job array that runs the study in "
      "chunks, and a copy of the study"},
    [SWEEP_CHUNKS] = {"chunks", 0, OPT_VALUE, "N",
      "chunks of --emit-slurm (default: one per 64 scenarios)"},
    [SWEEP_MERGE] = {"merge", 0, OPT_FLAG, NULL,
      "join results files of one study (such as its chunks') into -o FILE, "
      "each scenario once, in order"},
    [SWEEP_RETRY] = {"retry", 0, OPT_FLAG, NULL,
      "run again the scenarios recorded as error (crashed, timed out); their "
      "new rows replace the old"},
    [SWEEP_RELATIVE_TO] = {"relative-to", 0, OPT_VALUE, "DIR",
      "where the study's relative file names start (default: the study "
      "file's directory)"},
    [SWEEP_COUNT] = {NULL, 0, 0, NULL, NULL},
};
OPTS_CHECK_TABLE(sweep_opts, SWEEP_COUNT);

const struct opts_spec cmd_sweep_spec = {
    "sweep", POS_FILES, "STUDY.xml", 0, sweep_opts,
    "Runs every scenario of a study file as `weft run --json` and writes one\n"
    "CSV row per scenario: its key, index, status (ok, no_fit, invalid,\n"
    "error), the reason or warnings, the study's values, then every field of\n"
    "weft run's JSON (README: \"Sweeps\").  Scenarios that weft run refuses\n"
    "or that do not fit in memory are recorded with the reason.  Interrupted,\n"
    "the same command resumes; finished, the file is in scenario order.\n"
    "Each row records the study's identity (a hash of its scenarios and of\n"
    "the files they name): rows of another or an edited study are refused.\n"
    "One sweep at a time writes a results file (it is locked).  Progress\n"
    "shows on a terminal.  With --merge the arguments are results files to\n"
    "join.  Exit status: 0 when done; 3 when a scenario ended in error or\n"
    "none ran (every one invalid); 1 and 2 for bad input; 130 when\n"
    "interrupted.",
    "  weft sweep analysis/studies/strong-scaling/study.xml -o results.csv\n"
    "  weft sweep study.xml -n\n"
    "  weft sweep study.xml --emit-slurm slurm/ --chunks 16\n"
    "  weft sweep --merge -o results.csv slurm/part-*.csv\n"};

/* The fixed columns before the study's values. */
static const char *const lead_cols[] = {"key", "index", "status", "reason",
                                        "study", NULL};
enum { LEAD = 5 };

/* The statuses a row may have. */
static const char *const statuses[] = {"ok", "no_fit", "invalid", "error",
                                       NULL};

/* This sweep's study identity (the `study` column) and the directory its
 * relative file names start from; set once by cmd_sweep. */
static char study_ident[48];
static const char *base_dir = ".";

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
  /* weft run's own options that shape a scenario's figures; the goodput
   * ones and iterations (issue 41) as weft run reads them
   * (cmd_run_goodput_args) or as child_main replays them. */
  static const char *const own_ok[] = {
      "collective", "fidelity", "every_rank", "kernel_table", "force",
      "iterations", "train_days", "train_tokens", "ckpt_mode",
      "ckpt_interval", "ckpt_copy_bw", "restart_time", "fail_rates", NULL};
  /* Options are spelt with '-' (every-rank); a study may write '_'. */
  char dashed[STUDY_MAX_NAME + 1];
  snprintf(dashed, sizeof dashed, "%s", name);
  for (char *p = dashed; *p; p++)
    if (*p == '_')
      *p = '-';
  const struct opt *o = opts_own(&cmd_run_spec, dashed);
  if (!o || names_find(o->name, own_ok) < 0)
    return -1;
  *use = o->type == OPT_FLAG ? SU_FLAG : SU_SETTING;
  return 0;
}

/* --- a scenario's command line --------------------------------------- */

/* Whether the value `v` of column `col` names a file: a workload, catalog
 * or kernel table, or a cluster written as a file (as cluster.c tells a
 * file from a preset: a '/' or the .xml suffix). */
static bool names_file(const char *col, const char *v)
{
  static const char *const file_cols[] = {"workload", "catalog",
                                          "kernel_table", NULL};
  if (names_find(col, file_cols) >= 0)
    return true;
  size_t n = strlen(v);
  return names_eq(col, "cluster") &&
         (strchr(v, '/') || (n > 4 && strcmp(v + n - 4, ".xml") == 0));
}

/* A file value as weft run gets it: a relative name starts at base_dir,
 * so a study runs the same from any directory and no value can begin with
 * '-' and pass for an option.  Fails when it does not fit `size`. */
static int resolve_file(const char *v, char *dst, size_t size)
{
  int n = v[0] == '/' ? snprintf(dst, size, "%s", v)
                      : snprintf(dst, size, "%s/%s", base_dir, v);
  return n < 0 || (size_t)n >= size ? -1 : 0;
}

struct scen_args {
  int argc;
  char *argv[STUDY_MAX_VARS + 4];
  char buf[STUDY_MAX_VARS * (STUDY_MAX_NAME + STUDY_MAX_VALUE + 4) +
           4 * PATH_MAX];
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
      /* Never an option: resolve_file gives it a directory in front. */
      if (resolve_file(v, dst, room))
        return weft_errf(err, WEFT_ELIMIT, "%s: the file name is too long",
                         c->name);
    } else if (c->use == SU_FLAG) {
      int yes;
      if (names_choice(v, (const char *const[]){"false", "true", "no", "yes",
                                                "0", "1", NULL}, &yes, err))
        return weft_err_prefix(err, c->name);
      if (!(yes & 1))
        continue;
      names_flag(c->name, NULL, dst, room);
    } else {
      /* --name=VALUE: the value attached, so it is never an option. */
      names_flag(c->name, NULL, dst, room);
      size_t n = strlen(dst);
      dst[n++] = '=';
      if (names_file(c->name, v) ? resolve_file(v, dst + n, room - n)
                                 : snprintf(dst + n, room - n, "%s", v) < 0)
        return weft_errf(err, WEFT_ELIMIT, "%s: the file name is too long",
                         c->name);
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

/* Whether the header row `f[0..nf)` is header `h`; else a message naming
 * the first column that differs. */
static int header_check(char **f, int nf, const struct header *h,
                        const char *path, struct weft_err *err)
{
  int k = first_diff((const char *const *)f, nf, h->names, h->n);
  if (k < 0)
    return 0;
  return weft_errf(err, WEFT_EINVAL, "%s:1: its columns are not this study's "
                   "(column %d is '%s', expected '%s'); write to another file "
                   "or remove it", path, k + 1, k < nf ? f[k] : "(none)",
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
  csv_put(row, study_ident, false);
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

#define MAX_CHILD_OUTPUT (4 << 20)

/* One scenario given to the pool; freed when the pool hands it back. */
struct job {
  long scen;
  struct scen_args a;
};

static int cmp_double(const void *a, const void *b)
{
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

/* The scenario's `iterations`: 0 when not given (one iteration), else
 * the count; a usage error is printed and -1 returned.  As weft run's
 * --iterations (cmd_run.c iterations_arg): 1 to 1000, and only where the
 * iterations can differ, with gpu_sigma.  NEEDSWORK: this and
 * iterations_replay repeat cmd_run.c's iterations_arg and iterations;
 * one shared pair would let a new per-iteration variation (a diurnal
 * clock) reach sweeps without a change here. */
static long iterations_count(const struct run_args *a)
{
  const struct opt *opt = opts_own(&cmd_run_spec, "iterations");
  const char *v = opts_get(&a->o, (int)(opt - cmd_run_spec.own));
  if (!v)
    return 0;
  char *end = NULL;
  errno = 0;
  long n = strtol(v, &end, 10);
  if (end == v || *end || errno || n < 1 || n > 1000) {
    cli_usage("--iterations: '%s' is not a whole number from 1 to 1000", v);
    return -1;
  }
  if (a->c.gpu_sigma <= 0) {
    cli_usage("--iterations: the iterations differ only by the GPUs' "
              "drawn speeds: give --gpu-sigma too");
    return -1;
  }
  return n;
}

/* The job of `a`, whose first iteration (gpu_seed as given) took
 * `first`, replayed n - 1 more times on the loaded platform with the GPUs'
 * speeds drawn from gpu_seed + 1, ..., gpu_seed + n - 1, and once
 * without variation, as weft run --iterations does (cmd_run.c
 * iterations, issue 41 item 2): the spread into *out.  p90 and p99 are
 * nearest-rank percentiles (the ceil(p n)-th smallest time), so each is
 * one of the replayed times. */
static int iterations_replay(struct run_args *a, long n, double first,
                             struct iter_stats *out, struct weft_err *err)
{
  double *t = xcalloc((size_t)n, sizeof *t);
  unsigned long seed0 = a->c.gpu_seed;
  double sigma = a->c.gpu_sigma, even = 0;
  struct job_spec s = a->spec; /* the first's report keeps a->spec's */
  s.platform_loaded = true;
  s.trace.note = NULL;
  s.ep.on_progress = NULL;
  s.ep.breakdown = false;
  int rc = 0;
  t[0] = first;
  for (long i = 1; i <= n && !rc; i++) {
    struct job_result res;
    if (i < n)
      a->c.gpu_seed = seed0 + (unsigned long)i;
    else
      a->c.gpu_seed = seed0, a->c.gpu_sigma = 0;
    rc = job_run(&s, &res, err);
    if (!rc) {
      *(i < n ? &t[i] : &even) = res.r.res.iteration_s;
      job_result_release(&res);
    }
  }
  a->c.gpu_seed = seed0;
  a->c.gpu_sigma = sigma;
  if (!rc) {
    double sum = 0;
    for (long i = 0; i < n; i++)
      sum += t[i];
    qsort(t, (size_t)n, sizeof *t, cmp_double);
    *out = (struct iter_stats){
        n, seed0, t[0],
        n % 2 ? t[n / 2] : (t[n / 2 - 1] + t[n / 2]) / 2, sum / (double)n,
        t[n - 1], t[(90 * n + 99) / 100 - 1], t[(99 * n + 99) / 100 - 1],
        even};
  }
  free(t);
  return rc;
}

/* In the child (sim/pool.h): resolve the scenario's weft run arguments,
 * run the job (sim/job.h) and print its JSON for the parent; returns the
 * exit status, weft run's for the same arguments.  Beyond weft run
 * --json: the goodput options as weft run reads them, `iterations` as
 * replays (iterations.* columns), and with stragglers the breakdown's
 * held-back rank at the top level (held_by_rank). */
static int child_main(void *task)
{
  struct job *j = task;
  double t0 = cli_wall_s();
  struct run_args a;
  int rc;
  if (cmd_run_args(j->a.argc, j->a.argv, &a, &rc))
    return rc;
  struct gp_args gpa;
  long niter = 0;
  if ((rc = cmd_run_goodput_args(&a.o, &a.c, &gpa)) ||
      (niter = iterations_count(&a)) < 0) {
    cmd_run_args_release(&a);
    return rc ? rc : 2;
  }
  a.spec.t0_s = t0;
  /* The critical path names the rank that held the job back (engine.h);
   * it costs 24 bytes per task and changes no time. */
  if (cluster_has_stragglers(&a.c))
    a.spec.ep.breakdown = true;
  struct job_result res;
  struct goodput gp;
  struct iter_stats it;
  struct weft_err err = {0};
  if (job_run(&a.spec, &res, &err)) {
    rc = cli_fail(&err);
  } else {
    res.r.held_cols = true;
    if (gpa.on && (rc = cmd_run_goodput_eval(&gpa, &a, &res.r, &gp)) == 0) {
      res.r.goodput = &gp;
      res.r.fail_rates = gpa.t->name;
    }
    if (!rc && niter > 0) {
      if (iterations_replay(&a, niter, res.r.res.iteration_s, &it, &err))
        rc = cli_fail(&err);
      else
        res.r.iters = &it;
    }
    if (!rc)
      report_print_json(stdout, &res.r);
    job_result_release(&res);
  }
  cmd_run_args_release(&a);
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

/* --- the study's identity -------------------------------------------- */

static uint64_t fnv(uint64_t h, const void *p, size_t n)
{
  const unsigned char *b = p;
  for (size_t i = 0; i < n; i++)
    h = (h ^ b[i]) * 0x100000001b3ULL;
  return h;
}

/* A string with its length first, so that no two lists hash alike by
 * moving a boundary. */
static uint64_t fnv_str(uint64_t h, const char *s)
{
  size_t n = s ? strlen(s) : (size_t)-1;
  h = fnv(h, &n, sizeof n);
  return s ? fnv(h, s, n) : h;
}

struct file_ref {
  const char *col, *value;
};

static int cmp_file_ref(const void *a, const void *b)
{
  const struct file_ref *x = a, *y = b;
  int c = strcmp(x->col, y->col);
  return c ? c : strcmp(x->value, y->value);
}

/* The study's identity, "HASH/N": a 64-bit FNV-1a hash of the expanded
 * scenarios (names, values, reasons) and of the contents of every file
 * they name (workloads, catalogs, cluster files, kernel tables; a file
 * that cannot be read counts as such), then the number of scenarios.  An
 * edited study, or one whose files changed, gets another identity; the
 * same study run from elsewhere or in chunks gets the same.  Files that a
 * workload file names in turn are not followed. */
static void identity(const struct study *st, char out[48])
{
  uint64_t h = fnv_str(0xcbf29ce484222325ULL, "weft study 1");
  h = fnv(h, &st->n, sizeof st->n);
  for (int k = 0; k < st->ncols; k++) {
    h = fnv_str(h, st->cols[k].name);
    h = fnv(h, &st->cols[k].use, sizeof st->cols[k].use);
  }
  size_t nref = 0, cap = 16;
  struct file_ref *refs = xcalloc(cap, sizeof *refs);
  for (long i = 0; i < st->n; i++) {
    for (int k = 0; k < st->ncols; k++) {
      const char *v = study_value(st, i, k);
      h = fnv_str(h, v);
      if (v && names_file(st->cols[k].name, v)) {
        if (nref == cap)
          refs = xrealloc(refs, (cap *= 2) * sizeof *refs);
        refs[nref++] = (struct file_ref){st->cols[k].name, v};
      }
    }
    h = fnv_str(h, st->reason[i]);
  }
  qsort(refs, nref, sizeof *refs, cmp_file_ref);
  for (size_t q = 0; q < nref; q++) {
    if (q && cmp_file_ref(&refs[q], &refs[q - 1]) == 0)
      continue;
    char path[PATH_MAX];
    size_t len = 0;
    char *text = NULL;
    if (resolve_file(refs[q].value, path, sizeof path) == 0)
      text = csv_slurp(path, &len, NULL);
    h = fnv_str(h, refs[q].col);
    h = fnv_str(h, refs[q].value);
    h = text ? fnv(fnv(h, &len, sizeof len), text, len)
             : fnv_str(h, "(unreadable)");
    free(text);
  }
  free(refs);
  snprintf(out, 48, "%016llx/%ld", (unsigned long long)h, st->n);
}

/* The scenario count of an identity "HASH/N" (-1 when malformed). */
static long identity_count(const char *id)
{
  const char *slash = strchr(id, '/');
  char *end;
  long n = slash && slash - id == 16 ? strtol(slash + 1, &end, 10) : -1;
  return n >= 0 && slash[1] && !*end ? n : -1;
}

/* --- locking a results file ------------------------------------------- */

/* The process holding the flock of the open file `fd`, from /proc/locks
 * (0 when it cannot be told), and its command line in `cmd`. */
static long lock_holder(int fd, char *cmd, size_t size)
{
  struct stat sb;
  cmd[0] = '\0';
  FILE *f = fstat(fd, &sb) == 0 ? fopen("/proc/locks", "r") : NULL;
  if (!f)
    return 0;
  char line[256];
  long pid = 0;
  while (!pid && fgets(line, sizeof line, f)) {
    long p;
    unsigned maj, min;
    unsigned long ino;
    if (strstr(line, "->") || !strstr(line, "FLOCK") ||
        sscanf(line, "%*s %*s %*s %*s %ld %x:%x:%lu", &p, &maj, &min,
               &ino) != 4)
      continue;
    if (ino == (unsigned long)sb.st_ino && maj == major(sb.st_dev) &&
        min == minor(sb.st_dev))
      pid = p;
  }
  fclose(f);
  if (!pid)
    return 0;
  char name[64];
  snprintf(name, sizeof name, "/proc/%ld/cmdline", pid);
  f = fopen(name, "r");
  if (f) {
    size_t n = fread(cmd, 1, size - 1, f);
    fclose(f);
    for (size_t i = 0; i + 1 < n; i++)
      if (!cmd[i])
        cmd[i] = ' ';
    cmd[n] = '\0';
  }
  return pid;
}

/* Open `path` for reading and appending, creating it when `create`, and
 * take its lock: one sweep or merge at a time writes a results file.
 * *fd is -1 when the file does not exist and `create` is false.  Refuses
 * a file locked by another process, naming it, and anything but a regular
 * file (a sweep reads its results back). */
static int lock_results(const char *path, bool create, int *fd,
                        struct weft_err *err)
{
  *fd = -1;
  for (int tries = 0; tries < 100; tries++) {
    int f = open(path, O_RDWR | O_APPEND | O_CLOEXEC | (create ? O_CREAT : 0),
                 0666);
    if (f < 0 && errno == ENOENT && !create)
      return 0;
    if (f < 0)
      return weft_errf(err, WEFT_EIO, "%s: cannot write: %s", path,
                       strerror(errno));
    struct stat a, b;
    if (fstat(f, &a) != 0 || !S_ISREG(a.st_mode)) {
      close(f);
      return weft_errf(err, WEFT_EIO, "%s: not a regular file (a sweep "
                       "reads its results back)", path);
    }
    if (flock(f, LOCK_EX | LOCK_NB) != 0) {
      int e = errno;
      char cmd[160];
      long pid = e == EWOULDBLOCK ? lock_holder(f, cmd, sizeof cmd) : 0;
      close(f);
      if (e != EWOULDBLOCK)
        return weft_errf(err, WEFT_EIO, "%s: cannot lock: %s", path,
                         strerror(e));
      if (pid)
        return weft_errf(err, WEFT_EIO, "%s: in use by process %ld (%s); "
                         "wait for it to finish or write to another file",
                         path, pid, cmd[0] ? cmd : "?");
      return weft_errf(err, WEFT_EIO, "%s: in use by another process; wait "
                       "for it to finish or write to another file", path);
    }
    /* The holder before us may have replaced the file (a finished sweep
     * rewrites it): the lock must be on the file the name holds now. */
    if (stat(path, &b) == 0 && a.st_dev == b.st_dev && a.st_ino == b.st_ino) {
      *fd = f;
      return 0;
    }
    close(f);
  }
  return weft_errf(err, WEFT_EIO, "%s: replaced while being locked, again "
                   "and again", path);
}

/* --- rows of results files, by reference ---------------------------- */

/* A row of a results file, kept by where it is, not by its text: results
 * reach hundreds of MB, and a file is read a row at a time. */
struct rowref {
  long index;          /* the scenario's index */
  long seq;            /* order read: of two rows of one index, the later */
  uint64_t offset, bytes; /* its bytes in its file */
  int file;            /* which file (--merge's inputs) */
  int status;          /* by statuses[] (-1: unknown) */
  char key[17];
};

struct rowset {
  struct rowref *r;
  long n, cap;
  uint64_t header_bytes; /* the header row's, at offset 0 of file 0 */
};

static void rowset_add(struct rowset *rs, const struct csv_reader *rd,
                       int file)
{
  if (rs->n == rs->cap) {
    rs->cap = rs->cap ? 2 * rs->cap : 256;
    rs->r = xrealloc(rs->r, (size_t)rs->cap * sizeof *rs->r);
  }
  struct rowref *x = &rs->r[rs->n];
  x->index = strtol(rd->fields[1], NULL, 10);
  x->seq = rs->n++;
  x->offset = rd->offset;
  x->bytes = rd->bytes;
  x->file = file;
  x->status = names_find(rd->fields[2], statuses);
  snprintf(x->key, sizeof x->key, "%s", rd->fields[0]);
}

static int cmp_rowref(const void *a, const void *b)
{
  const struct rowref *x = a, *y = b;
  if (x->index != y->index)
    return x->index < y->index ? -1 : 1;
  return (x->seq > y->seq) - (x->seq < y->seq);
}

/* Write the header and then rows `rs` (in their order) to `path`,
 * atomically, copying each row's bytes from its file (fds[file]); a row
 * read with "\r\n" is written with "\n". */
static int write_rows(const char *path, const int *fds, const struct rowset *rs,
                      struct weft_err *err)
{
  struct outfile of;
  if (outfile_open(&of, path, err))
    return err->code;
  char *buf = NULL;
  size_t cap = 0;
  int rc = 0;
  for (long q = -1; q < rs->n && !rc; q++) {
    struct rowref hdr = {0, 0, 0, rs->header_bytes, 0, 0, ""};
    const struct rowref *x = q < 0 ? &hdr : &rs->r[q];
    if (x->bytes > cap)
      buf = xrealloc(buf, cap = (size_t)x->bytes);
    size_t got = 0;
    while (got < x->bytes) {
      ssize_t n = pread(fds[x->file], buf + got, (size_t)x->bytes - got,
                        (off_t)(x->offset + got));
      if (n < 0 && errno == EINTR)
        continue;
      if (n <= 0)
        break;
      got += (size_t)n;
    }
    if (got != x->bytes) {
      rc = weft_errf(err, WEFT_EIO, "%s: read error: %s", path,
                     got ? "the file changed while being read"
                         : strerror(errno ? errno : EIO));
      break;
    }
    size_t n = got;
    if (n >= 2 && buf[n - 2] == '\r')
      buf[--n - 1] = '\n';
    fwrite(buf, 1, n, of.f);
  }
  free(buf);
  if (rc) {
    outfile_abort(&of);
    return rc;
  }
  return outfile_commit(&of, err);
}

/* Rows per status of a finished file. */
struct tally {
  long n[4]; /* by statuses[] */
};

static long tally_failed(const struct tally *t)
{
  return t->n[2] + t->n[3];
}

/* Sort `rs` by (index, order read) and keep the last row of each index: a
 * scenario run again (--retry) replaces its row.  Counts statuses into *t
 * (may be NULL). */
static void last_per_index(struct rowset *rs, struct tally *t)
{
  qsort(rs->r, (size_t)rs->n, sizeof *rs->r, cmp_rowref);
  long kept = 0;
  for (long q = 0; q < rs->n; q++) {
    if (kept && rs->r[kept - 1].index == rs->r[q].index)
      kept--;
    rs->r[kept++] = rs->r[q];
  }
  rs->n = kept;
  for (long q = 0; t && q < kept; q++)
    if (rs->r[q].status >= 0)
      t->n[rs->r[q].status]++;
}

/* Rewrite a complete results file (its rows checked by open_results or
 * written by this sweep) in scenario order, one row per scenario (the last
 * written), and count its statuses.  `fd` is the file, open. */
static int sort_file(const char *path, int fd, struct tally *t,
                     struct weft_err *err)
{
  struct csv_reader rd;
  if (csv_reader_open(&rd, path, err))
    return err->code;
  struct rowset rs = {0};
  int rc;
  bool header = true;
  while ((rc = csv_reader_next(&rd, err)) > 0) {
    if (header)
      rs.header_bytes = rd.bytes;
    else if (rd.nfields > 2)
      rowset_add(&rs, &rd, 0);
    header = false;
  }
  csv_reader_close(&rd);
  if (rc == 0) {
    last_per_index(&rs, t);
    rc = write_rows(path, &fd, &rs, err);
  }
  free(rs.r);
  return rc;
}

/* Check row `f[0..nf)` (on line `line` of `path`) of a results file of
 * study `st` whose header has `ncols` columns: complete, of this study
 * (its identity), the scenario its index says, a known status. */
static int check_row(const struct study *st, int ncols, char **f, int nf,
                     long line, const char *path, struct weft_err *err)
{
  if (nf != ncols)
    return weft_errf(err, WEFT_EINVAL, "%s:%ld: %d fields, but the header "
                     "has %d (a row cut or edited by hand?); remove the line "
                     "or write to another file", path, line, nf, ncols);
  if (strcmp(f[4], study_ident) != 0)
    return weft_errf(err, WEFT_EINVAL, "%s:%ld: a row of another study, or "
                     "of this one before it or its files changed (study %s; "
                     "now %s); write to another file or remove it", path,
                     line, f[4], study_ident);
  char *end, key[17] = "";
  errno = 0;
  long i = strtol(f[1], &end, 10);
  bool idx_ok = *f[1] && !*end && !errno && i >= 0 && i < st->n;
  if (idx_ok)
    study_key(st, i, key);
  if (!idx_ok || strcmp(key, f[0]) != 0)
    return weft_errf(err, WEFT_EINVAL, "%s:%ld: scenario '%s' is not "
                     "scenario '%s' of this study", path, line, f[0], f[1]);
  if (names_find(f[2], statuses) < 0)
    return weft_errf(err, WEFT_EINVAL, "%s:%ld: status '%s' is not ok, "
                     "no_fit, invalid or error", path, line, f[2]);
  return 0;
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
  char absdir[PATH_MAX], self[PATH_MAX], absbase[PATH_MAX];
  if (!realpath(dir, absdir))
    return weft_errf(err, WEFT_EIO, "%s: %s", dir, strerror(errno));
  /* The copy's relative file names start where the study's did. */
  if (!realpath(base_dir, absbase))
    return weft_errf(err, WEFT_EIO, "%s: %s", base_dir, strerror(errno));
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
    fputs("\nbase=", f);
    shell_quote(f, absbase);
    fputs("\nweft=${WEFT:-", f);
    shell_quote(f, self);
    fprintf(f, "}\ntask=${SLURM_ARRAY_TASK_ID:?run this with sbatch, or set "
            "SLURM_ARRAY_TASK_ID}\n"
            "exec \"$weft\" sweep \"$dir/study.xml\" --relative-to \"$base\" "
            "--chunk \"$task/%ld\" "
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

/* Warn about the scenarios of study `ident` that no row of the merged
 * rows `rs` (sorted by index) gives: a chunk not run or not given. */
static void merge_gaps(const char *out, const char *ident,
                       const struct rowset *rs)
{
  long total = ident ? identity_count(ident) : -1;
  if (total < 0 || rs->n >= total)
    return;
  char list[200] = "";
  size_t len = 0;
  long next = 0, ranges = 0;
  for (long q = 0; q <= rs->n; q++) {
    long i = q < rs->n ? rs->r[q].index : total;
    if (i > next && ranges++ < 4) { /* next .. i-1 are missing */
      const char *sep = len ? ", " : "";
      if (i - 1 > next)
        len += (size_t)snprintf(list + len, sizeof list - len, "%s%ld-%ld",
                                sep, next, i - 1);
      else
        len += (size_t)snprintf(list + len, sizeof list - len, "%s%ld", sep,
                                next);
    }
    next = i + 1;
  }
  fprintf(stderr, "weft: warning: %s: %ld of the study's %ld scenarios; "
          "missing: %s%s (a chunk not run or not given?)\n", out, rs->n,
          total, list, ranges > 4 ? ", ..." : "");
}

/* Read the input `f` of --merge, a row at a time, into `rs`: a results
 * file of this weft with the same columns as the first (`hdr`, copied
 * from it), every row complete and of study `ident` (the first row's). */
static int merge_read(const char *path, int f, char ***hdr, int *nhdr,
                      char *ident, const char *first, struct rowset *rs,
                      struct weft_err *err)
{
  struct csv_reader rd;
  if (csv_reader_open(&rd, path, err))
    return err->code;
  int rc = csv_reader_next(&rd, err);
  if (rc == 0)
    rc = weft_errf(err, WEFT_EINVAL, "%s: empty (no header)", path);
  if (rc > 0) {
    rc = 0;
    if (rd.nfields < 5 || strcmp(rd.fields[0], "key") != 0 ||
        strcmp(rd.fields[1], "index") != 0)
      rc = weft_errf(err, WEFT_EINVAL, "%s:1: not a weft sweep results file "
                     "(its first columns are not key, index)", path);
    else if (f > 0 && first_diff((const char *const *)*hdr, *nhdr,
                                 (const char *const *)rd.fields,
                                 rd.nfields) >= 0)
      rc = weft_errf(err, WEFT_EINVAL, "%s:1: its columns differ from %s's "
                     "(column %d); these are not results of one study", path,
                     first, first_diff((const char *const *)*hdr, *nhdr,
                                       (const char *const *)rd.fields,
                                       rd.nfields) + 1);
    else if (strcmp(rd.fields[4], "study") != 0)
      rc = weft_errf(err, WEFT_EINVAL, "%s:1: no column 'study' (results of "
                     "an older weft?); run the sweep again", path);
    if (!rc && f == 0) {
      rs->header_bytes = rd.bytes;
      *nhdr = rd.nfields;
      *hdr = xcalloc((size_t)rd.nfields, sizeof **hdr);
      for (int k = 0; k < rd.nfields; k++)
        (*hdr)[k] = xstrdup(rd.fields[k]);
    }
  }
  while (!rc && (rc = csv_reader_next(&rd, err)) > 0) {
    rc = 0;
    if (rd.nfields != *nhdr)
      rc = weft_errf(err, WEFT_EINVAL, "%s:%ld: %d fields, but the header "
                     "has %d (a row cut or edited by hand?)", path, rd.line,
                     rd.nfields, *nhdr);
    else if (!*ident)
      snprintf(ident, 48, "%s", rd.fields[4]);
    if (!rc && strcmp(rd.fields[4], ident) != 0)
      rc = weft_errf(err, WEFT_EINVAL, "%s:%ld: a row of study %s, the "
                     "others are of study %s; these files are not one "
                     "study's", path, rd.line, rd.fields[4], ident);
    if (!rc)
      rowset_add(rs, &rd, f);
  }
  if (rc == 0 && rd.partial)
    fprintf(stderr, "weft: warning: %s: its last row is cut; left out\n",
            path);
  csv_reader_close(&rd);
  return rc;
}

/* Whether rows x and y (of their files) have the same bytes. */
static bool same_bytes(const int *fds, const struct rowref *x,
                       const struct rowref *y)
{
  if (x->bytes != y->bytes)
    return false;
  char a[4096], b[4096];
  for (uint64_t off = 0; off < x->bytes; off += sizeof a) {
    size_t n = x->bytes - off < sizeof a ? (size_t)(x->bytes - off) : sizeof a;
    if (pread(fds[x->file], a, n, (off_t)(x->offset + off)) != (ssize_t)n ||
        pread(fds[y->file], b, n, (off_t)(y->offset + off)) != (ssize_t)n ||
        memcmp(a, b, n) != 0)
      return false;
  }
  return true;
}

static int merge(const struct opts *o, const char *out, struct weft_err *err)
{
  if (o->n_files == 0)
    return weft_errf(err, WEFT_EINVAL, "--merge: no results files to join");
  /* The joined file is locked like a sweep's: not while one writes it. */
  int lock_fd;
  if (lock_results(out, false, &lock_fd, err))
    return err->code;
  int *fds = xcalloc((size_t)o->n_files, sizeof *fds);
  for (int f = 0; f < o->n_files; f++)
    fds[f] = -1;
  struct rowset rs = {0};
  char **hdr = NULL;
  int nhdr = 0, rc = 0;
  char ident[48] = "";
  for (int f = 0; f < o->n_files && !rc; f++) {
    rc = merge_read(o->files[f], f, &hdr, &nhdr, ident, o->files[0], &rs,
                    err);
    if (!rc && (fds[f] = open(o->files[f], O_RDONLY | O_CLOEXEC)) < 0)
      rc = weft_errf(err, WEFT_EIO, "%s: cannot open: %s", o->files[f],
                     strerror(errno));
  }
  long nr = rs.n;
  if (!rc) {
    /* By index; rows of one index must be of one key and equal, but a
     * row in error gives way to one that is not (a chunk run with
     * --retry). */
    qsort(rs.r, (size_t)rs.n, sizeof *rs.r, cmp_rowref);
    long kept = 0;
    for (long q = 0; q < rs.n && !rc; q++) {
      struct rowref *x = &rs.r[q], *p = kept ? &rs.r[kept - 1] : NULL;
      if (!p || p->index != x->index) {
        rs.r[kept++] = *x;
        continue;
      }
      bool p_err = p->status == 3, x_err = x->status == 3;
      if (strcmp(p->key, x->key) == 0 && same_bytes(fds, p, x))
        continue;
      if (strcmp(p->key, x->key) == 0 && p_err && !x_err)
        *p = *x;
      else if (strcmp(p->key, x->key) != 0 || p_err == x_err)
        rc = weft_errf(err, WEFT_EINVAL, "scenario %s (index %ld) has two "
                       "different rows; these files are not one study's",
                       p->key, p->index);
    }
    rs.n = kept;
  }
  if (!rc)
    rc = write_rows(out, fds, &rs, err);
  if (!rc) {
    merge_gaps(out, ident[0] ? ident : NULL, &rs);
    printf("merged %ld rows of %d files into %s (%ld scenarios)\n", nr,
           o->n_files, out, rs.n);
  }
  if (lock_fd >= 0)
    close(lock_fd);
  for (int f = 0; f < o->n_files; f++)
    if (fds[f] >= 0)
      close(fds[f]);
  for (int k = 0; k < nhdr; k++)
    free(hdr[k]);
  free(hdr);
  free(fds);
  free(rs.r);
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

/* Open (or resume) the results file, locked against other sweeps: every
 * row already there must be a complete row of this study, and is `done`
 * (sorted keys, caller frees) unless it is an error and `retry` is set; a
 * cut last row (a writer stopped mid-row) is removed.  *fd is the file,
 * open for appending (-1 until opened; the caller closes it). */
static int open_results(const char *path, const struct study *st,
                        const struct header *h, bool retry, int *fd,
                        char ***done, long *ndone, struct weft_err *err)
{
  *done = NULL;
  *ndone = 0;
  int rc = lock_results(path, true, fd, err);
  struct stat sb;
  if (rc || fstat(*fd, &sb) != 0 || sb.st_size == 0) {
    if (rc)
      return rc;
    struct csv_buf b = {0};
    header_line(h, &b);
    rc = write_all(*fd, b.s, b.len);
    csv_buf_free(&b);
    if (rc)
      return weft_errf(err, WEFT_EIO, "%s: write error: %s", path,
                       strerror(errno));
    return 0;
  }
  /* Rows a row at a time; only the keys of those done are kept. */
  struct csv_reader rd;
  if (csv_reader_open(&rd, path, err))
    return err->code;
  long cap = 0;
  rc = csv_reader_next(&rd, err);
  if (rc == 0)
    rc = weft_errf(err, WEFT_EINVAL, "%s: not a weft sweep results file (no "
                   "complete header)", path);
  if (rc > 0)
    rc = header_check(rd.fields, rd.nfields, h, path, err);
  while (!rc && (rc = csv_reader_next(&rd, err)) > 0) {
    rc = check_row(st, h->n, rd.fields, rd.nfields, rd.line, path, err);
    if (rc || (retry && strcmp(rd.fields[2], "error") == 0))
      continue;
    if (*ndone == cap)
      *done = xrealloc(*done, (size_t)(cap = cap ? 2 * cap : 256) *
                                  sizeof **done);
    (*done)[(*ndone)++] = xstrdup(rd.fields[0]);
  }
  if (!rc && rd.partial && ftruncate(*fd, (off_t)rd.complete_bytes) < 0)
    rc = weft_errf(err, WEFT_EIO, "%s: cannot drop its cut last row: %s",
                   path, strerror(errno));
  csv_reader_close(&rd);
  if (!rc && *ndone)
    qsort(*done, (size_t)*ndone, sizeof **done, cmp_str);
  return rc;
}

/* What cmd_sweep's options ask for, beyond the study. */
struct sweep_args {
  const char *out, *slurm, *jobs_opt;
  bool dry, retry;
  long jobs;        /* -j, or the cores online (1 to 64) */
  double timeout_s; /* 0: none */
};

/* Read and check the options that do not need the study; --merge runs
 * here.  Returns -1 to go on, or the command's exit code. */
static int sweep_options(const struct opts *o, struct sweep_args *a)
{
  a->out = opts_get(o, SWEEP_OUTPUT);
  a->slurm = opts_get(o, SWEEP_EMIT_SLURM);
  a->dry = opts_get(o, SWEEP_DRY_RUN) != NULL;
  a->retry = opts_get(o, SWEEP_RETRY) != NULL;
  struct weft_err err = {0};
  if (a->retry && (opts_get(o, SWEEP_MERGE) || a->slurm || a->dry))
    return cli_usage("sweep: --retry goes with a sweep that runs (-o FILE), "
                     "not with --merge, --emit-slurm or -n");
  if (opts_get(o, SWEEP_MERGE)) {
    if (!a->out)
      return cli_usage("sweep --merge: give the joined file with -o FILE");
    return merge(o, a->out, &err) ? cli_fail(&err) : 0;
  }
  if (o->n_files != 1)
    return cli_usage(o->n_files ? "sweep: one study file, not %d (results "
                     "files go with --merge)" : "sweep: no study file%.0d",
                     o->n_files);
  if (!a->out && !a->dry && !a->slurm)
    return cli_usage("sweep: give the results file with -o FILE (or -n to "
                     "list the scenarios)");
  if (a->slurm && (a->out || opts_get(o, SWEEP_CHUNK)))
    return cli_usage("sweep: --emit-slurm writes a job array whose tasks "
                     "choose their own chunk and file; leave out %s",
                     a->out ? "-o" : "--chunk");
  a->jobs = sysconf(_SC_NPROCESSORS_ONLN);
  a->timeout_s = 0;
  a->jobs_opt = opts_get(o, SWEEP_JOBS);
  const char *tmo = opts_get(o, SWEEP_TIMEOUT);
  if (a->jobs < 1)
    a->jobs = 1;
  if (a->jobs > 64)
    a->jobs = 64;
  if ((a->jobs_opt &&
       parse_count("--jobs", a->jobs_opt, 1, 64, &a->jobs, &err)) ||
      (tmo && units_parse(tmo, UNIT_TIME, &a->timeout_s, &err) &&
       weft_err_prefix(&err, "--timeout")))
    return cli_fail(&err);
  if (tmo && !(a->timeout_s > 0)) {
    weft_errf(&err, WEFT_EINVAL, "--timeout: '%s' is not above zero", tmo);
    return cli_fail(&err);
  }
  return -1;
}

/* The study's values must not take the names of the results' columns. */
static int check_columns(const struct study *st, const char *path,
                         struct weft_err *err)
{
  for (int k = 0; k < st->ncols; k++)
    if (metric_col(st->cols[k].name) >= 0 ||
        names_find(st->cols[k].name, lead_cols) >= 0)
      return weft_errf(err, WEFT_EINVAL, "%s: '%s' is also a column of the "
                       "results; name the study's value otherwise", path,
                       st->cols[k].name);
  return 0;
}

/* The scenarios of lo..hi-1 to run: not in `done` (sorted keys, ndone of
 * them), each key once (the first; a warning counts the repeats unless
 * `quiet`).  Returns them in order (caller frees), *out_ntodo of them;
 * *out_skipped counts those done. */
static long *scen_todo(const struct study *st, long lo, long hi,
                       char **done, long ndone, bool quiet, long *out_ntodo,
                       long *out_skipped)
{
  long span = hi > lo ? hi - lo : 1;
  long *todo = xcalloc((size_t)span, sizeof *todo);
  long ntodo = 0, skipped = 0, repeats = 0;
  char (*keys)[17] = xcalloc((size_t)span, sizeof *keys);
  for (long i = lo; i < hi; i++)
    study_key(st, i, keys[i - lo]);
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
  for (long i = lo; i < hi; i++) {
    char *k = keys[i - lo];
    if (repeat[i - lo]) { /* counted the same on a first run and resumed */
      repeats++;
      continue;
    }
    if (ndone > 0 &&
        bsearch(&k, done, (size_t)ndone, sizeof *done, cmp_str)) {
      skipped++;
      continue;
    }
    todo[ntodo++] = i;
  }
  free(repeat);
  free(keys);
  if (repeats && !quiet)
    fprintf(stderr, "weft: warning: %ld scenarios repeat others (same "
            "values); each is simulated once\n", repeats);
  *out_ntodo = ntodo;
  *out_skipped = skipped;
  return todo;
}

/* The closing line of a sweep that went through, and on stderr why it
 * counts as failed when it does; returns 0 or 3. */
static int summary(const char *out, long ntodo, long skipped, long ran,
                   const struct tally *tl, double t0)
{
  struct rusage ru;
  getrusage(RUSAGE_SELF, &ru);
  double cpu = (double)ru.ru_utime.tv_sec + 1e-6 * (double)ru.ru_utime.tv_usec +
               (double)ru.ru_stime.tv_sec + 1e-6 * (double)ru.ru_stime.tv_usec;
  /* "failed" counts the file's rows, those already there too. */
  printf("weft sweep: %ld scenarios (%ld run, %ld already in %s), %ld "
         "failed (%ld invalid, %ld error), in %.1f s; %.1f ms of the "
         "sweep's own CPU per scenario run\n", ntodo + skipped, ran,
         skipped, out, tally_failed(tl), tl->n[2], tl->n[3],
         cli_wall_s() - t0, ntodo ? 1e3 * cpu / (double)ntodo : 0.0);
  /* Scripts can tell a sweep that did not go through. */
  if (tl->n[3]) {
    fprintf(stderr, "weft: sweep: %ld scenarios ended in error (see the "
            "reason column of %s); --retry runs them again\n", tl->n[3],
            out);
    return 3;
  }
  if (tl->n[0] + tl->n[1] == 0 && tally_failed(tl) > 0) {
    fprintf(stderr, "weft: sweep: no scenario ran: all %ld are invalid "
            "(see the reason column of %s)\n", tl->n[2], out);
    return 3;
  }
  return 0;
}

/* Run the scenarios of lo..hi-1 that the results file does not hold yet,
 * put the file in scenario order and print the summary.  Returns 0, 3
 * (summary), 128 + the signal that stopped it, or an error. */
static int sweep_range(const struct study *st, const struct sweep_args *a,
                       long lo, long hi, bool quiet, double t0,
                       struct weft_err *err)
{
  struct header h;
  header_build(st, &h);
  int fd = -1;
  char **done;
  long ndone, ntodo = 0, skipped = 0;
  long *todo = NULL;
  int rc = open_results(a->out, st, &h, a->retry, &fd, &done, &ndone, err);
  if (!rc)
    todo = scen_todo(st, lo, hi, done, ndone, quiet, &ntodo, &skipped);
  struct progress pg = {isatty(STDERR_FILENO), ntodo + skipped, 0, 0, skipped,
                        t0};
  if (!rc) {
    /* The pool catches SIGINT and SIGTERM while it runs (pool.h); before
     * it, a signal stops the sweep with its rows whole all the same. */
    signal(SIGPIPE, SIG_IGN);
    rc = run_all(st, todo, ntodo, (int)a->jobs, a->timeout_s, fd, a->out,
                 &pg, err);
  }
  struct tally tl = {{0}};
  if (rc > 0) { /* stopped by a signal */
    fprintf(stderr, "weft: sweep stopped: %ld of %ld scenarios are in %s; "
            "the same command resumes\n", pg.done + skipped, ntodo + skipped,
            a->out);
    rc = 128 + rc;
  } else if (!rc) {
    rc = sort_file(a->out, fd, &tl, err); /* still locked */
  }
  /* The lock goes with the descriptor, once the file is in order. */
  if (fd >= 0 && close(fd) < 0 && !rc)
    rc = weft_errf(err, WEFT_EIO, "%s: write error: %s", a->out,
                   strerror(errno));
  if (rc == 0)
    rc = summary(a->out, ntodo, skipped, pg.done, &tl, t0);
  for (long q = 0; q < ndone; q++)
    free(done[q]);
  free(done);
  free(todo);
  free(h.names);
  return rc;
}

int cmd_sweep(int argc, char **argv)
{
  double t0 = cli_wall_s();
  struct opts o;
  int code;
  if (cli_parse(&cmd_sweep_spec, argc, argv, &o, &code))
    return code;
  struct sweep_args a;
  if ((code = sweep_options(&o, &a)) >= 0)
    return code;
  struct weft_err err = {0};
  /* Relative file names in the study start at its directory. */
  const char *rel = opts_get(&o, SWEEP_RELATIVE_TO);
  char *study_dir = xstrdup(o.files[0]);
  base_dir = rel ? rel : dirname(study_dir);
  struct study st;
  if (study_load(o.files[0], classify, &st, &err)) {
    free(study_dir);
    return cli_fail(&err);
  }
  identity(&st, study_ident);
  long lo, hi;
  int rc = check_columns(&st, o.files[0], &err);
  if (rc)
    ; /* said below */
  else if (a.slurm)
    rc = emit_slurm(o.files[0], &st, a.slurm, opts_get(&o, SWEEP_CHUNKS),
                    a.jobs_opt, &err);
  else if (opts_get(&o, SWEEP_CHUNKS))
    rc = cli_usage("sweep: --chunks goes with --emit-slurm (one chunk: "
                   "--chunk I/N)");
  else if (!(rc = chunk_range(opts_get(&o, SWEEP_CHUNK), st.n, &lo, &hi,
                              &err))) {
    if (a.dry)
      dry_run(&st, lo, hi);
    else
      rc = sweep_range(&st, &a, lo, hi, o.quiet, t0, &err);
  }
  if (rc < 0)
    rc = cli_fail(&err);
  study_release(&st);
  free(study_dir);
  return rc;
}
