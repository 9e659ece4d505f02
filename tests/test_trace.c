/*
 * test_trace.c - the trace writers: events come out in their total order
 * (time, rank, stream, task) whatever order they were recorded in, with
 * few distinct times (the bucketed sort) or many (the radix sort); the two
 * writers side by side give the bytes each gives alone; Paje variables
 * sum the flows.
 */
#include <criterion/criterion.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <sys/resource.h>
#include <stdlib.h>
#include <string.h>

#include "traces/trace.h"
#include "tests/plan_helpers.h"
#include "workloads/accounting.h"

/* A one-stage graph of `ntasks` kernels on 4 streams, over `ranks` ranks
 * (TP). */
static struct graph *small_graph(long ranks, long ntasks)
{
  struct graph *g = graph_new(1);
  g->layout = (struct graph_layout){ranks, 1, 1, 1, 1, 1,
                                    {PD_TP, PD_CP, PD_DP, PD_PP}, 0, {0}, 0, 0};
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
 * come in order; n tasks start (event 4, with their fields), the others
 * are idle (event 7). */
static void check_paje_order(const char *path, long n)
{
  char *b = slurp(path, NULL), *cur = b, *line;
  double t0 = -1;
  long r0 = -1, starts = 0;
  while ((line = next_line(&cur))) {
    bool start = line[0] == '4' && line[1] == ' ';
    if (!start && !(line[0] == '7' && line[1] == ' '))
      continue;
    double t;
    long r;
    char stream[32], value[64];
    cr_assert_eq(sscanf(line + 2, "%lf W gpu%ld.%31s %63s", &t, &r, stream, value), 4, "%s", line);
    cr_assert(t > t0 || (t == t0 && r >= r0), "%s after time %.9f rank %ld", line, t0, r0);
    cr_assert_eq(strcmp(value, "idle") == 0, !start, "%s", line);
    t0 = t;
    r0 = r;
    starts += start;
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
  cr_assert(strstr(b, "6 1.000000000 tx gpu0.nic 1.000000\n"), "%s", b);
  cr_assert(strstr(b, "6 2.000000000 tx gpu0.nic 4.000000\n"), "%s", b);
  cr_assert(strstr(b, "6 2.000000000 rx gpu1.nic 4.000000\n"), "%s", b);
  cr_assert(strstr(b, "6 3.000000000 tx gpu0.nic 0.000000\n"), "%s", b);
  cr_assert_null(strstr(b, "tx gpu0.nic -"), "%s", b);
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

/* Write `tr` as Paje or Chrome into a temporary file and return its text
 * (caller frees). */
static char *written(struct trace *tr, bool paje)
{
  char path[] = "/tmp/weft_trace_XXXXXX";
  int fd = mkstemp(path);
  cr_assert(fd >= 0);
  struct weft_err err = {0};
  cr_assert_eq(trace_write(tr, paje ? path : NULL, paje ? NULL : path, &err),
               0, "%s", err.msg);
  char *b = slurp(path, NULL);
  remove(path);
  return b;
}

/* Paje (issue 40, item 5): cluster > node > GPU > stream, link ports under
 * the node, only what a rank used declared, the kind of work as the
 * state's value with its fields beside it, transfers as Paje links. */
Test(trace, paje_hierarchy_kinds_and_transfers)
{
  struct graph *g = small_graph(4, 2); /* task 0 on compute, 1 on pp_send */
  struct trace *tr = trace_new(g);
  for (long r = 0; r < 4; r++)
    trace_set_node(tr, r, (int)(r / 2));
  trace_add(tr, 0, 0, 0, 1);
  trace_add(tr, 2, 0, 0, 1);
  trace_add(tr, 2, 1, 1, 2);
  trace_add_flow(tr, 0, 1, 1, 1e9, 1, 2);
  trace_add_flow(tr, 0, 2, 0, 2e9, 1, 3);
  char *b = written(tr, true);
  static const char *const want[] = {
      "\n1 W S \"Work\"\n", "\n11 gemm W \"gemm\" ", "\n11 allreduce W ",
      "\n11 idle W ", "\n8 T C G G \"Transfer\"\n",
      "\n2 0 n0 N c \"node0\"\n2 0 gpu0 G n0 \"gpu0\"\n"
      "2 0 gpu0.compute S gpu0 \"gpu0 compute\"\n"
      "2 0 gpu0.nvlink L n0 \"gpu0 NVLink\"\n"
      "2 0 gpu0.nic L n0 \"gpu0 NIC\"\n2 0 gpu1 G n0 \"gpu1\"\n"
      "2 0 gpu1.nvlink L n0 \"gpu1 NVLink\"\n"
      "2 0 n1 N c \"node1\"\n2 0 gpu2 G n1 \"gpu2\"\n"
      "2 0 gpu2.compute S gpu2 \"gpu2 compute\"\n"
      "2 0 gpu2.pp_send S gpu2 \"gpu2 pp_send\"\n"
      "2 0 gpu2.nic L n1 \"gpu2 NIC\"\n2 0 gpu3 G n1 \"gpu3\"\n",
      "\n4 0.000000000 W gpu0.compute gemm fwd 0 -1 - - - 1000000\n",
      "\n4 1.000000000 W gpu2.pp_send gemm fwd 1 -1 - - - 1000000\n",
      "\n7 1.000000000 W gpu0.compute idle\n",
      "\n9 1.000000000 T c nvlink gpu0 f0 1000000000\n",
      "\n9 1.000000000 T c nic gpu0 f1 2000000000\n",
      "\n10 2.000000000 T c nvlink gpu1 f0\n",
      "\n10 3.000000000 T c nic gpu2 f1\n",
      "\n6 1.000000000 tx gpu0.nvlink 1.000000\n",
      "\n6 1.000000000 rx gpu2.nic 1.000000\n",
      "\n3 3.000000000 G gpu3\n3 3.000000000 N n0\n3 3.000000000 N n1\n"
      "3 3.000000000 C c\n"};
  for (size_t i = 0; i < sizeof want / sizeof *want; i++)
    cr_assert(strstr(b, want[i]), "no \"%s\" in:\n%s", want[i], b);
  /* Streams and ports a rank did not use are not declared. */
  cr_assert_null(strstr(b, "gpu0.pp_send"), "%s", b);
  cr_assert_null(strstr(b, "gpu1.nic"), "%s", b);
  cr_assert_null(strstr(b, "gpu3."), "%s", b);
  free(b);
  trace_free(tr);
  graph_free(g);
}

/* Chrome (issue 40, item 7): a flow arrow from a send to its receive,
 * none for a send whose receive was not recorded; link counters; whole
 * nanoseconds, so that a task ends where the next one starts (rounding
 * the start and the duration apart gave 0.001 + 1.001 > 1.001). */
Test(trace, chrome_flows_counters_and_no_overlap)
{
  struct graph *g = graph_new(2);
  g->layout = (struct graph_layout){1, 2, 1, 1, 1, 1,
                                    {PD_TP, PD_CP, PD_DP, PD_PP}, 0, {0}, 0, 0};
  struct task k = {.kind = TK_KERNEL, .op = KK_GEMM, .stream = ST_COMPUTE,
                   .phase = PH_FWD, .layer = 0, .mb = 0, .chunk = 0,
                   .m = 8, .n = 16, .k = 32, .batch = 1};
  struct task snd = {.kind = TK_SEND, .stream = ST_PP_SEND, .phase = PH_FWD,
                     .peer = 1, .layer = -1, .mb = 0, .chunk = 0,
                     .bytes = 4000};
  struct task rcv = {.kind = TK_RECV, .stream = ST_PP_RECV, .phase = PH_FWD,
                     .peer = -1, .layer = -1, .mb = 0, .chunk = 0,
                     .bytes = 4000};
  graph_add(g, 0, &k);
  graph_add(g, 0, &snd);
  snd.mb = 1;
  graph_add(g, 0, &snd);
  graph_add(g, 1, &rcv);
  struct trace *tr = trace_new(g);
  trace_add(tr, 0, 0, 0.6e-9, 1001.4e-9);
  trace_add(tr, 0, 1, 1001.4e-9, 5e-6);
  trace_add(tr, 0, 2, 5e-6, 7e-6);     /* micro-batch 1: no receive */
  trace_add(tr, 1, 0, 2e-6, 4e-6);
  trace_add_flow(tr, 0, 1, 1, 4000, 2e-6, 4e-6); /* 2 GB/s */
  char *b = written(tr, false);
  static const char *const want[] = {
      "\"pid\": 0, \"tid\": 0, \"ts\": 0.001, \"dur\": 1.000, ",
      "\"pid\": 0, \"tid\": 1, \"ts\": 1.001, \"dur\": 3.999, ",
      "\"cat\": \"gemm\"", "\"shape\": \"8x16x32\"",
      "{\"ph\": \"s\", \"name\": \"p2p\", \"cat\": \"transfer\", \"id\": 0, "
      "\"pid\": 0, \"tid\": 1, \"ts\": 2.000}",
      "{\"ph\": \"f\", \"bp\": \"e\", \"name\": \"p2p\", \"cat\": "
      "\"transfer\", \"id\": 0, \"pid\": 1, \"tid\": 2, \"ts\": 2.000}",
      "{\"ph\": \"C\", \"name\": \"NVLink GB/s\", \"pid\": 0, \"ts\": 2.000, "
      "\"args\": {\"send\": 2.000000, \"receive\": 0.000000}}",
      "{\"ph\": \"C\", \"name\": \"NVLink GB/s\", \"pid\": 1, \"ts\": 2.000, "
      "\"args\": {\"send\": 0.000000, \"receive\": 2.000000}}",
      "{\"ph\": \"C\", \"name\": \"NVLink GB/s\", \"pid\": 1, \"ts\": 4.000, "
      "\"args\": {\"send\": 0.000000, \"receive\": 0.000000}}"};
  for (size_t i = 0; i < sizeof want / sizeof *want; i++)
    cr_assert(strstr(b, want[i]), "no '%s' in:\n%s", want[i], b);
  cr_assert_null(strstr(b, "\"id\": 1"), "%s", b);
  /* Threads only for the streams a rank used. */
  cr_assert_null(strstr(b, "\"thread_name\", \"pid\": 0, \"tid\": 2"), "%s", b);
  cr_assert(strstr(b, "\"thread_name\", \"pid\": 1, \"tid\": 2"), "%s", b);
  free(b);
  trace_free(tr);
  graph_free(g);
}

/* Parts of flows (the engine's samples, issue 40 item 6): once any is
 * recorded, the link rates are the parts', not the whole flows' averages
 * (two flows on a 300 GB/s link: one alone at 300 for 2 s then at 150
 * for 1 s, the other at 150 for that second; averages 250 and 150 sum to
 * 400 in that second); transfers stay whole flows. */
Test(trace, paje_rates_from_parts_transfers_whole)
{
  struct graph *g = small_graph(3, 1);
  struct trace *tr = trace_new(g);
  trace_add(tr, 0, 0, 0, 4);
  trace_add_flow(tr, 0, 1, 1, 750e9, 0, 3);
  trace_add_flow(tr, 0, 2, 1, 150e9, 2, 3);
  trace_add_flow_part(tr, 0, 1, 1, 600e9, 0, 2);
  trace_add_flow_part(tr, 0, 1, 1, 150e9, 2, 3);
  trace_add_flow_part(tr, 0, 2, 1, 150e9, 2, 3);
  char *b = written(tr, true);
  cr_assert(strstr(b, "\n6 0.000000000 tx gpu0.nvlink 300.000000\n"), "%s", b);
  cr_assert(strstr(b, "\n6 2.000000000 tx gpu0.nvlink 300.000000\n"), "%s", b);
  cr_assert(strstr(b, "\n6 3.000000000 tx gpu0.nvlink 0.000000\n"), "%s", b);
  cr_assert_null(strstr(b, "tx gpu0.nvlink 400"), "%s", b);
  cr_assert_null(strstr(b, "tx gpu0.nvlink 250"), "%s", b);
  /* Keys follow the flows' order (start, end, ...), parts included. */
  cr_assert(strstr(b, "\n9 0.000000000 T c nvlink gpu0 f1 750000000000\n"), "%s", b);
  cr_assert(strstr(b, "\n10 3.000000000 T c nvlink gpu1 f1\n"), "%s", b);
  cr_assert(strstr(b, "\n9 2.000000000 T c nvlink gpu0 f3 150000000000\n"), "%s", b);
  long links = 0; /* parts are no transfers */
  for (const char *q = b; (q = strstr(q, "\n9 ")); q++)
    links++;
  cr_assert_eq(links, 2, "%s", b);
  free(b);
  b = written(tr, false);
  cr_assert(strstr(b, "\"pid\": 0, \"ts\": 2000000.000, \"args\": {\"send\": 300.000000, "), "%s", b);
  free(b);
  trace_free(tr);
  graph_free(g);
}

/* The names of the GEMMs of layer `layer`, micro-batch 0, of stage 0 in
 * phase `phase`, in program order, as the graph text writes them; their
 * count. */
static int gemm_names(const struct graph *g, int phase, long layer,
                      char names[][32], int max)
{
  const struct program *p = &g->prog[0];
  int n = 0;
  for (long i = 0; i < p->n && n < max; i++) {
    const struct task *t = &p->tasks[i];
    if (t->kind == TK_KERNEL && (t->op == KK_GEMM || t->op == KK_GGEMM) &&
        t->phase == phase && t->layer == layer && t->mb <= 0)
      graph_role_str(t->role, names[n++], 32);
  }
  return n;
}

/* Item 5 of issue 40: the four GEMMs of a GPT layer (Megatron-LM's
 * ParallelAttention query_key_value and dense, ParallelMLP
 * dense_h_to_4h and dense_4h_to_h) carry distinct names, and each
 * backward GEMM says whether it is the data or the weight gradient. */
Test(trace, the_gemms_of_a_layer_have_distinct_names)
{
  struct model m;
  struct plan p;
  struct graph *g = build("gpt-1.7b", 8, KV("tp", "2", "pp", "1",
                          "global_batch", "8"), &m, &p);
  char n[16][32];
  cr_assert_eq(gemm_names(g, PH_FWD, 0, n, 16), 4);
  static const char *const fwd[4] = {"qkv.fwd", "proj.fwd", "fc1.fwd",
                                     "fc2.fwd"};
  for (int i = 0; i < 4; i++)
    cr_assert_str_eq(n[i], fwd[i]);
  /* backward in reverse, data gradient before weight gradient */
  cr_assert_eq(gemm_names(g, PH_BWD, 0, n, 16), 8);
  static const char *const bwd[8] = {
      "fc2.dgrad", "fc2.wgrad", "fc1.dgrad",  "fc1.wgrad",
      "proj.dgrad", "proj.wgrad", "qkv.dgrad", "qkv.wgrad"};
  for (int i = 0; i < 8; i++)
    cr_assert_str_eq(n[i], bwd[i]);
  /* the output layer's */
  cr_assert_eq(gemm_names(g, PH_FWD, -1, n, 16), 1);
  cr_assert_str_eq(n[0], "lm_head.fwd");
  graph_free(g);
}

/* A MoE layer: the router, the routed experts' grouped GEMMs and the
 * shared experts are told apart (Megatron-core's TopKRouter, GroupedMLP,
 * SharedExpertMLP). */
Test(trace, moe_gemms_are_named)
{
  struct model m;
  struct plan p;
  struct graph *g = build("deepseek-v3", 8, KV("tp", "1", "pp", "1",
                          "ep", "8", "global_batch", "8"), &m, &p);
  char n[32][32];
  int k = gemm_names(g, PH_FWD, 3, n, 32);
  bool router = false, expert = false, shared = false, mla = false;
  for (int i = 0; i < k; i++) {
    router |= strcmp(n[i], "router.fwd") == 0;
    expert |= strcmp(n[i], "expert_fc1.fwd") == 0;
    shared |= strcmp(n[i], "shared_fc2.fwd") == 0;
    mla |= strcmp(n[i], "kv_down.fwd") == 0;
    cr_assert_neq(n[i][0], '\0', "GEMM %d of layer 3 has no name", i);
  }
  cr_assert(router && expert && shared && mla);
  graph_free(g);
}

/* The name travels through the graph text format (written only where
 * set, in the group column) and into both traces: a Paje field after the
 * group, a Chrome argument and part of the event's name. */
Test(trace, gemm_names_in_graph_text_and_traces)
{
  struct graph *g = small_graph(1, 2);
  graph_set_role(g, 0, 0, graph_role("fc1", false, GP_WGRAD));
  cr_assert_eq(graph_role("fc9", false, GP_FWD), 0);
  cr_assert_eq(graph_role_parse("fc1.wgrad"), g->prog[0].tasks[0].role);
  cr_assert_eq(graph_role_parse("fc1.bwd"), 0);
  cr_assert_eq(graph_role_parse("fc1"), 0);
  char path[] = "/tmp/weft_graph_XXXXXX";
  int fd = mkstemp(path);
  cr_assert(fd >= 0);
  struct weft_err err = {0};
  cr_assert_eq(graph_write(g, path, &err), 0, "%s", err.msg);
  char *b = slurp(path, NULL);
  cr_assert(strstr(b, "\nkernel gemm compute fwd fc1.wgrad 0 "), "%s", b);
  cr_assert(strstr(b, "\nkernel gemm pp_send fwd - 0 "), "%s", b);
  free(b);
  struct graph *h = graph_read(path, &err);
  cr_assert_not_null(h, "%s", err.msg);
  cr_assert_eq(h->prog[0].tasks[0].role, g->prog[0].tasks[0].role);
  cr_assert_eq(h->prog[0].tasks[1].role, 0);
  graph_free(h);
  remove(path);

  struct trace *tr = trace_new(g);
  trace_add(tr, 0, 0, 0, 1);
  trace_add(tr, 0, 1, 1, 2);
  b = written(tr, true);
  cr_assert(strstr(b, "%  Group string\n%  Gemm string\n%  Shape string\n"),
            "%s", b);
  cr_assert(strstr(b, " W gpu0.compute gemm fwd 0 -1 - fc1.wgrad - 1000000\n"),
            "%s", b);
  cr_assert(strstr(b, " W gpu0.pp_send gemm fwd 1 -1 - - - 1000000\n"), "%s",
            b);
  free(b);
  b = written(tr, false);
  cr_assert(strstr(b, "\"name\": \"fwd gemm fc1.wgrad L0\""), "%s", b);
  cr_assert(strstr(b, "\"mb\": -1, \"gemm\": \"fc1.wgrad\""), "%s", b);
  cr_assert(strstr(b, "\"name\": \"fwd gemm L1\""), "%s", b);
  free(b);
  trace_free(tr);
  graph_free(g);
}

/* A graph file naming an unknown role is refused with the name. */
Test(trace, graph_text_refuses_an_unknown_gemm_role)
{
  struct graph *g = small_graph(1, 1);
  graph_set_role(g, 0, 0, graph_role("qkv", false, GP_FWD));
  char path[] = "/tmp/weft_graph_XXXXXX";
  int fd = mkstemp(path);
  cr_assert(fd >= 0);
  struct weft_err err = {0};
  cr_assert_eq(graph_write(g, path, &err), 0, "%s", err.msg);
  char *b = slurp(path, NULL);
  char *at = strstr(b, " qkv.fwd ");
  cr_assert_not_null(at, "%s", b);
  memcpy(at + 1, "qkv.bwd", 7);
  FILE *f = fopen(path, "w");
  fputs(b, f);
  fclose(f);
  free(b);
  cr_assert_null(graph_read(path, &err));
  cr_assert(strstr(err.msg, "unknown GEMM role 'qkv.bwd' (want NAME.fwd, "
                            "NAME.dgrad or NAME.wgrad on a gemm or ggemm, "
                            "or -)"), "%s", err.msg);
  remove(path);
  graph_free(g);
}

/* The values of counter `name` of rank `pid` in Chrome text `b`, in
 * order; their count. */
static int counter_values(const char *b, const char *name, long pid,
                          double *v, int max)
{
  char key[128];
  snprintf(key, sizeof key, "\"name\": \"%s\", \"pid\": %ld, ", name, pid);
  int n = 0;
  for (const char *p = strstr(b, key); p && n < max; p = strstr(p + 1, key)) {
    const char *a = strstr(p, "\"in use\": ");
    cr_assert_not_null(a);
    v[n++] = strtod(a + 10, NULL);
  }
  return n;
}

/* Item 7 of issue 40: Chrome's "memory GB" counter of a rank of the most
 * loaded stage rises by a micro-batch's activations at each forward and
 * falls at the end of its backward; its maximum is the accounting's peak
 * (memory_per_gpu's total) within the counter's printed precision, 1 kB,
 * and it ends at the fixed part (weights, gradients, optimizer, buffers).
 * Tasks run one after another in program order, a serial replay of the
 * stage's 1F1B schedule. */
static void memory_counter_peak(const char *model, const char *const *kv)
{
  struct model m;
  struct plan p;
  struct graph *g = build(model, 4, kv, &m, &p);
  struct memory mem;
  memory_per_gpu(&m, &p, 80e9, &mem);
  struct trace *tr = trace_new(g);
  long rank = -1;
  for (long r = 0; r < layout_ranks(&g->layout) && rank < 0; r++) {
    long c[PD_COUNT];
    layout_coords(&g->layout, r, c);
    if (c[PD_PP] == mem.stage)
      rank = r;
  }
  cr_assert_geq(rank, 0);
  const struct program *prog = &g->prog[mem.stage];
  for (long i = 0; i < prog->n; i++)
    trace_add(tr, rank, i, (double)i * 1e-6, (double)(i + 1) * 1e-6);
  double act = mem.activations / (double)mem.peak_inflight;
  double fixed = mem.total - mem.activations - mem.transient;
  trace_set_memory(tr, mem.stage, fixed, act, mem.transient);
  char *b = written(tr, false);
  static double v[100000];
  int n = counter_values(b, "memory GB", rank, v, 100000);
  cr_assert_gt(n, 2, "%s", b);
  double most = 0;
  for (int i = 0; i < n; i++)
    most = v[i] > most ? v[i] : most;
  cr_assert_lt(fabs(most - mem.total / 1e9), 1e-6, "max %.6f GB, peak %.6f GB",
               most, mem.total / 1e9);
  cr_assert_lt(fabs(v[0] - fixed / 1e9), 1e-6);
  cr_assert_lt(fabs(v[n - 1] - fixed / 1e9), 1e-6);
  free(b);
  trace_free(tr);
  graph_free(g);
}

Test(trace, memory_counter_peaks_at_the_accounting_peak_1f1b)
{
  memory_counter_peak("gpt-1.7b", KV("tp", "1", "pp", "4", "global_batch",
                                     "8", "recompute", "full"));
}

Test(trace, memory_counter_peaks_at_the_accounting_peak_interleaved)
{
  memory_counter_peak("gpt-1.7b", KV("tp", "1", "pp", "2", "global_batch",
                                     "8", "schedule", "interleaved:2"));
}
