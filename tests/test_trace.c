/*
 * test_trace.c - the trace writers: events come out in their total order
 * (time, rank, stream, task) whatever order they were recorded in, with
 * few distinct times (the bucketed sort) or many (the radix sort); the two
 * writers side by side give the bytes each gives alone; Paje variables
 * sum the flows.
 */
#include <criterion/criterion.h>
#include <signal.h>
#include <stdio.h>
#include <sys/resource.h>
#include <stdlib.h>
#include <string.h>

#include "traces/trace.h"

/* A one-stage graph of `ntasks` kernels on 4 streams, over `ranks` ranks
 * (TP). */
static struct graph *small_graph(long ranks, long ntasks)
{
  struct graph *g = graph_new(1);
  g->layout = (struct graph_layout){ranks, 1, 1, 1, 1, 1,
                                    {PD_TP, PD_CP, PD_DP, PD_PP}, 0, {0}, 0};
  for (long i = 0; i < ntasks; i++) {
    struct task t = {.kind = TK_KERNEL, .op = KK_GEMM,
                     .stream = (uint8_t)(i % 4), .phase = PH_FWD,
                     .layer = (int32_t)(i % 7), .mb = -1, .chunk = -1,
                     .flops = 1e9 * (double)i, .bytes = 1e6};
    graph_add(g, 0, &t);
  }
  return g;
}

static unsigned long long lcg(unsigned long long *s)
{
  *s = *s * 6364136223846793005ULL + 1442695040888963407ULL;
  return *s >> 33;
}

/* Record every (rank, task) once, in a scrambled order; times drawn from
 * `distinct` values (0: all different). */
static void record_all(struct trace *tr, long ranks, long ntasks,
                       long distinct)
{
  unsigned long long seed = 42;
  long n = ranks * ntasks;
  long *order = malloc((size_t)n * sizeof *order);
  for (long i = 0; i < n; i++)
    order[i] = i;
  for (long i = n - 1; i > 0; i--) {
    long j = (long)(lcg(&seed) % (unsigned long long)(i + 1)), x = order[i];
    order[i] = order[j];
    order[j] = x;
  }
  for (long i = 0; i < n; i++) {
    long rank = order[i] / ntasks, task = order[i] % ntasks;
    double s = distinct ? (double)(lcg(&seed) % (unsigned long long)distinct) * 1e-3
                        : (double)lcg(&seed) * 1e-9;
    trace_add(tr, rank, task, s, s + 1e-4 * (double)(1 + task % 5));
  }
  free(order);
}

static char *slurp(const char *path, size_t *len)
{
  FILE *f = fopen(path, "rb");
  cr_assert(f, "%s", path);
  fseek(f, 0, SEEK_END);
  long n = ftell(f);
  fseek(f, 0, SEEK_SET);
  char *b = malloc((size_t)n + 1);
  cr_assert_eq(fread(b, 1, (size_t)n, f), (size_t)n);
  b[n] = '\0';
  fclose(f);
  if (len)
    *len = (size_t)n;
  return b;
}

/* The next line of *p (NUL-terminated in place), or NULL at the end.  By
 * hand: ASan's strstr and memchr check the whole rest of the buffer on
 * every call, which made these checks quadratic under it. */
static char *next_line(char **p)
{
  char *line = *p;
  if (!*line)
    return NULL;
  char *q = line;
  while (*q && *q != '\n')
    q++;
  if (*q)
    *q++ = '\0';
  *p = q;
  return line;
}

/* The Chrome events' (ts, pid, tid, task) never decrease and number n. */
static void check_chrome_order(const char *path, long n)
{
  char *b = slurp(path, NULL), *cur = b, *p;
  double ts0 = -1;
  long pid0 = -1, tid0 = -1, task0 = -1, count = 0;
  while ((p = next_line(&cur))) {
    if (!strstr(p, "\"ph\": \"X\""))
      continue;
    char *q = strstr(p, "\"pid\": ");
    cr_assert(q);
    long pid = strtol(q + 7, &q, 10);
    cr_assert_eq(strncmp(q, ", \"tid\": ", 9), 0);
    long tid = strtol(q + 9, &q, 10);
    cr_assert_eq(strncmp(q, ", \"ts\": ", 8), 0);
    double ts = strtod(q + 8, &q);
    q = strstr(q, "\"task\": ");
    cr_assert(q);
    long task = strtol(q + 8, NULL, 10);
    bool ok = ts > ts0 ||
              (ts == ts0 && (pid > pid0 || (pid == pid0 && (tid > tid0 ||
                                            (tid == tid0 && task > task0)))));
    cr_assert(ok, "event %ld (ts %.3f pid %ld tid %ld task %ld) after "
              "(ts %.3f pid %ld tid %ld task %ld)", count, ts, pid, tid, task,
              ts0, pid0, tid0, task0);
    ts0 = ts;
    pid0 = pid;
    tid0 = tid;
    task0 = task;
    count++;
  }
  cr_assert_eq(count, n);
  free(b);
}

/* The Paje state changes' times never decrease, and at one time the ranks
 * come in order; n tasks start. */
static void check_paje_order(const char *path, long n)
{
  char *b = slurp(path, NULL), *cur = b, *line;
  double t0 = -1;
  long r0 = -1, starts = 0;
  while ((line = next_line(&cur))) {
    if (line[0] != '4' || line[1] != ' ')
      continue;
    double t;
    long r;
    char stream[32], name[64];
    cr_assert_eq(sscanf(line, "4 %lf %31s gpu%ld \"%63[^\"]\"", &t, stream, &r, name), 4, "%s", line);
    cr_assert(t > t0 || (t == t0 && r >= r0), "%s after time %.9f rank %ld", line, t0, r0);
    t0 = t;
    r0 = r;
    starts += strcmp(name, "idle") != 0;
  }
  cr_assert_eq(starts, n);
  free(b);
}

static void write_and_check(long distinct)
{
  long ranks = 8, ntasks = 3000;
  struct graph *g = small_graph(ranks, ntasks);
  struct trace *tr = trace_new(g);
  record_all(tr, ranks, ntasks, distinct);
  char dir[] = "/tmp/weft_trace_XXXXXX";
  cr_assert(mkdtemp(dir));
  char paje[64], json[64], paje1[64], json1[64];
  snprintf(paje, sizeof paje, "%s/a.paje", dir);
  snprintf(json, sizeof json, "%s/a.json", dir);
  snprintf(paje1, sizeof paje1, "%s/b.paje", dir);
  snprintf(json1, sizeof json1, "%s/b.json", dir);
  struct weft_err err = {0};
  cr_assert_eq(trace_write(tr, paje, json, &err), 0, "%s", err.msg);
  cr_assert_eq(trace_write_paje(tr, paje1, &err), 0, "%s", err.msg);
  cr_assert_eq(trace_write_chrome(tr, json1, &err), 0, "%s", err.msg);
  check_chrome_order(json, ranks * ntasks);
  check_paje_order(paje, ranks * ntasks);
  size_t la, lb;
  char *a = slurp(paje, &la), *b = slurp(paje1, &lb);
  cr_assert(la == lb && memcmp(a, b, la) == 0,
            "Paje written beside Chrome differs from Paje alone");
  free(a);
  free(b);
  a = slurp(json, &la);
  b = slurp(json1, &lb);
  cr_assert(la == lb && memcmp(a, b, la) == 0,
            "Chrome written beside Paje differs from Chrome alone");
  free(a);
  free(b);
  remove(paje);
  remove(json);
  remove(paje1);
  remove(json1);
  remove(dir);
  trace_free(tr);
  graph_free(g);
}

/* 24000 events on 50 instants: the bucketed sort. */
Test(trace, few_distinct_times_in_order)
{
  write_and_check(50);
}

/* 24000 events at distinct times: the radix sort. */
Test(trace, many_distinct_times_in_order)
{
  write_and_check(0);
}

/* Flows: each rank's NIC send rate is the sum of its flows in flight, and
 * returns to exactly 0. */
Test(trace, paje_variables_sum_the_flows)
{
  struct graph *g = small_graph(2, 1);
  struct trace *tr = trace_new(g);
  trace_add(tr, 0, 0, 0, 4);
  trace_add(tr, 1, 0, 0, 4);
  trace_add_flow(tr, 0, 1, 0, 2e9, 1, 3); /* 1 GB/s from 1 to 3 s */
  trace_add_flow(tr, 0, 1, 0, 3e9, 2, 3); /* 3 GB/s from 2 to 3 s */
  char path[] = "/tmp/weft_trace_XXXXXX";
  int fd = mkstemp(path);
  cr_assert(fd >= 0);
  struct weft_err err = {0};
  cr_assert_eq(trace_write(tr, path, NULL, &err), 0, "%s", err.msg);
  char *b = slurp(path, NULL);
  cr_assert(strstr(b, "6 1.000000000 nic_tx gpu0 1.000000\n"), "%s", b);
  cr_assert(strstr(b, "6 2.000000000 nic_tx gpu0 4.000000\n"), "%s", b);
  cr_assert(strstr(b, "6 2.000000000 nic_rx gpu1 4.000000\n"), "%s", b);
  cr_assert(strstr(b, "nic_tx gpu0 0.000000\n"), "%s", b);
  cr_assert_null(strstr(b, "nic_tx gpu0 -"), "%s", b);
  free(b);
  remove(path);
  trace_free(tr);
  graph_free(g);
}

/* A failed write of either leaves neither file behind. */
Test(trace, a_failed_write_replaces_nothing)
{
  struct graph *g = small_graph(2, 10);
  struct trace *tr = trace_new(g);
  record_all(tr, 2, 10, 0);
  char dir[] = "/tmp/weft_trace_XXXXXX";
  cr_assert(mkdtemp(dir));
  char paje[64];
  snprintf(paje, sizeof paje, "%s/a.paje", dir);
  struct weft_err err = {0};
  cr_assert_neq(trace_write(tr, paje, "/nonexistent/a.json", &err), 0);
  cr_assert(strstr(err.msg, "/nonexistent/a.json"), "%s", err.msg);
  FILE *f = fopen(paje, "r");
  cr_assert_null(f, "the Paje file was written although the Chrome one failed");
  remove(dir);
  trace_free(tr);
  graph_free(g);
}

/* A write that fails part way (the file size limit lies between the two
 * traces' sizes, so only the larger, Chrome's, fails) replaces neither:
 * the Paje file keeps its old contents. */
Test(trace, a_write_failing_part_way_replaces_neither)
{
  struct graph *g = small_graph(8, 3000);
  struct trace *tr = trace_new(g);
  record_all(tr, 8, 3000, 50);
  char dir[] = "/tmp/weft_trace_XXXXXX";
  cr_assert(mkdtemp(dir));
  char paje[64], json[64];
  snprintf(paje, sizeof paje, "%s/a.paje", dir);
  snprintf(json, sizeof json, "%s/a.json", dir);
  struct weft_err err = {0};
  cr_assert_eq(trace_write(tr, paje, json, &err), 0, "%s", err.msg);
  size_t lp, lj;
  free(slurp(paje, &lp));
  free(slurp(json, &lj));
  cr_assert_gt(lj, lp + 4096);
  FILE *f = fopen(paje, "w"); /* the old contents to keep */
  fputs("old\n", f);
  fclose(f);
  signal(SIGXFSZ, SIG_IGN);
  struct rlimit rl, old_rl;
  cr_assert_eq(getrlimit(RLIMIT_FSIZE, &old_rl), 0);
  rl = old_rl;
  rl.rlim_cur = (rlim_t)(lp + lj) / 2; /* the soft limit only */
  cr_assert_eq(setrlimit(RLIMIT_FSIZE, &rl), 0);
  int rc = trace_write(tr, paje, json, &err);
  setrlimit(RLIMIT_FSIZE, &old_rl); /* before anything reports */
  cr_assert_neq(rc, 0);
  cr_assert(strstr(err.msg, json), "%s", err.msg);
  char *b = slurp(paje, NULL);
  bool kept = strcmp(b, "old\n") == 0;
  free(b);
  cr_assert(kept, "the Paje file was replaced although Chrome's failed");
  remove(paje);
  remove(json);
  remove(dir);
  trace_free(tr);
  graph_free(g);
}
