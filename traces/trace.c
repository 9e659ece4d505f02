/*
 * trace.c - Paje and Chrome trace writers (trace.h).
 *
 * SimGrid 3.32's own Paje tracer crashes on nested zones and split-duplex
 * links, so weft writes Paje itself, in the plain-text format of the Paje
 * file specification (event definitions, then one event per line).
 */
#include "traces/trace.h"

#include <errno.h>
#include <math.h>
#include <stdbool.h>
#include <zlib.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sim/base/outfile.h"
#include "sim/base/xalloc.h"

struct event {
  double start, end;
  int32_t rank, task;
  uint8_t stream;
};

struct flowrec {
  double start, end, rate;
  int32_t src, dst;
  uint8_t same_node;
};

struct trace {
  const struct graph *g;
  struct event *ev;
  long n, cap;
  struct flowrec *fl;
  long nf, fcap;
  long ranks;
  /* Selection (trace_select): ranks kept (NULL: all), time window, level. */
  uint8_t *keep;
  double t0, t1;
  enum trace_level level;
};

static bool kept_rank(const struct trace *t, long rank)
{
  return !t->keep || t->keep[rank];
}

static bool in_window(const struct trace *t, double start_s, double end_s)
{
  return end_s >= t->t0 && start_s <= t->t1;
}

void trace_add_flow(struct trace *t, long src, long dst, int same_node,
                    double bytes, double start_s, double end_s)
{
  if (end_s <= start_s || !in_window(t, start_s, end_s) ||
      !(kept_rank(t, src) || kept_rank(t, dst)))
    return;
  if (t->nf == t->fcap) {
    t->fcap = t->fcap ? 2 * t->fcap : 4096;
    t->fl = xreallocarray(t->fl, (size_t)t->fcap, sizeof *t->fl);
  }
  t->fl[t->nf++] = (struct flowrec){start_s, end_s, bytes / (end_s - start_s),
                                    (int32_t)src, (int32_t)dst,
                                    (uint8_t)(same_node != 0)};
}

struct trace *trace_new(const struct graph *g)
{
  struct trace *t = xcalloc(1, sizeof *t);
  t->g = g;
  t->ranks = layout_ranks(&g->layout);
  t->t1 = INFINITY;
  t->level = TRACE_ALL;
  return t;
}

int trace_select(struct trace *t, const char *ranks, double t0_s, double t1_s,
                 enum trace_level level, struct weft_err *err)
{
  if (!(t0_s >= 0) || !(t1_s >= t0_s))
    return weft_errf(err, WEFT_EINVAL, "--trace-window: the window's end "
                     "comes before its start");
  t->t0 = t0_s;
  t->t1 = t1_s;
  t->level = level;
  if (!ranks)
    return 0;
  uint8_t *keep = xcalloc((size_t)t->ranks, 1);
  const char *p = ranks;
  while (*p) {
    char *end;
    errno = 0;
    long a = strtol(p, &end, 10), b = a;
    if (end == p || a < 0 || errno)
      goto bad;
    if (*end == '-') {
      const char *q = end + 1;
      b = strtol(q, &end, 10);
      if (end == q || b < a || errno)
        goto bad;
    }
    if (b >= t->ranks) {
      free(keep);
      return weft_errf(err, WEFT_EINVAL, "--trace-ranks: rank %ld is beyond "
                       "the job's %ld ranks", b, t->ranks);
    }
    for (long r = a; r <= b; r++)
      keep[r] = 1;
    if (*end == ',' && end[1])
      end++;
    else if (*end)
      goto bad;
    p = end;
  }
  free(t->keep);
  t->keep = keep;
  return 0;
bad:
  free(keep);
  return weft_errf(err, WEFT_EINVAL, "--trace-ranks: '%s' is not a list of "
                   "ranks and ranges such as 0-7,64", ranks);
}

void trace_free(struct trace *t)
{
  if (!t)
    return;
  free(t->ev);
  free(t->fl);
  free(t->keep);
  free(t);
}

long trace_events(const struct trace *t) { return t->n; }

static long stage_of(const struct trace *t, long rank)
{
  long c[PD_COUNT];
  layout_coords(&t->g->layout, rank, c);
  return c[PD_PP];
}

void trace_add(struct trace *t, long rank, long task, double start_s,
               double end_s)
{
  const struct task *tk = &t->g->prog[stage_of(t, rank)].tasks[task];
  if (!kept_rank(t, rank) || !in_window(t, start_s, end_s) ||
      (t->level == TRACE_COMM && tk->kind == TK_KERNEL))
    return;
  if (t->n == t->cap) {
    t->cap = t->cap ? 2 * t->cap : 4096;
    t->ev = xreallocarray(t->ev, (size_t)t->cap, sizeof *t->ev);
  }
  t->ev[t->n++] = (struct event){start_s, end_s, (int32_t)rank, (int32_t)task,
                                 tk->stream};
}

static const struct task *task_of(const struct trace *t, const struct event *e)
{
  return &t->g->prog[stage_of(t, e->rank)].tasks[e->task];
}

/* ---- output: buffered, formatted by hand, optionally gzipped ---------- */

/* printf's number formatting dominated the writers (half of a traced run);
 * these append to a 64 KiB buffer that goes to the file as is or through
 * zlib's deflate with a gzip header. */
struct tw {
  FILE *f;
  bool gz, failed;
  z_stream z;
  size_t n;
  char buf[1 << 16];
  unsigned char zbuf[1 << 16];
};

static void tw_drain(struct tw *w, int flush)
{
  w->z.next_in = (unsigned char *)w->buf;
  w->z.avail_in = (uInt)w->n;
  do {
    w->z.next_out = w->zbuf;
    w->z.avail_out = sizeof w->zbuf;
    if (deflate(&w->z, flush) == Z_STREAM_ERROR)
      w->failed = true;
    size_t out = sizeof w->zbuf - w->z.avail_out;
    if (out && fwrite(w->zbuf, 1, out, w->f) != out)
      w->failed = true;
  } while (w->z.avail_out == 0 && !w->failed);
}

static void tw_flush(struct tw *w)
{
  if (w->gz)
    tw_drain(w, Z_NO_FLUSH);
  else if (w->n && fwrite(w->buf, 1, w->n, w->f) != w->n)
    w->failed = true;
  w->n = 0;
}

static void tw_open(struct tw *w, FILE *f, const char *path)
{
  size_t len = strlen(path);
  w->f = f;
  w->n = 0;
  w->failed = false;
  w->gz = len > 3 && strcmp(path + len - 3, ".gz") == 0;
  if (w->gz) {
    memset(&w->z, 0, sizeof w->z);
    /* 15 + 16: a gzip header and trailer; level 1: fast. */
    if (deflateInit2(&w->z, 1, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) !=
        Z_OK)
      w->failed = true;
  }
}

/* Finish the stream; false when a write failed. */
static bool tw_close(struct tw *w)
{
  if (w->gz) {
    tw_drain(w, Z_FINISH);
    deflateEnd(&w->z);
  } else {
    tw_flush(w);
  }
  return !w->failed;
}

static void tw_put(struct tw *w, const char *s, size_t len)
{
  while (len) {
    if (w->n == sizeof w->buf)
      tw_flush(w);
    size_t k = sizeof w->buf - w->n < len ? sizeof w->buf - w->n : len;
    memcpy(w->buf + w->n, s, k);
    w->n += k;
    s += k;
    len -= k;
  }
}

static void tw_str(struct tw *w, const char *s) { tw_put(w, s, strlen(s)); }

static void tw_long(struct tw *w, long v)
{
  char tmp[24];
  int i = sizeof tmp;
  unsigned long u = v < 0 ? 0UL - (unsigned long)v : (unsigned long)v;
  do {
    tmp[--i] = (char)('0' + u % 10);
    u /= 10;
  } while (u);
  if (v < 0)
    tmp[--i] = '-';
  tw_put(w, tmp + i, sizeof tmp - (size_t)i);
}

/* v with `dec` decimals (0 to 9), as printf's %.<dec>f; out of the range
 * where the integer path is exact, printf itself. */
static void tw_fixed(struct tw *w, double v, int dec)
{
  static const double pow10[] = {1, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8,
                                 1e9};
  double scaled = v * pow10[dec];
  if (!(fabs(scaled) < 9e15)) {
    char tmp[64];
    int n = snprintf(tmp, sizeof tmp, "%.*f", dec, v);
    tw_put(w, tmp, (size_t)n);
    return;
  }
  long long q = llround(scaled);
  if (q < 0) {
    tw_put(w, "-", 1);
    q = -q;
  } else if (v < 0 && q == 0) {
    tw_put(w, "-", 1); /* printf's "-0.000" */
  }
  long long ip = q / (long long)pow10[dec], fp = q % (long long)pow10[dec];
  tw_long(w, (long)ip);
  if (dec > 0) {
    char tmp[16];
    tmp[0] = '.';
    for (int i = dec; i >= 1; i--) {
      tmp[i] = (char)('0' + fp % 10);
      fp /= 10;
    }
    tw_put(w, tmp, (size_t)dec + 1);
  }
}

/* buf[n..] = prefix and v >= 0 in decimal, if it fits (with its NUL);
 * returns the new length.  (snprintf's parsing showed in traced runs.) */
static size_t append_num(char *buf, size_t n, size_t size, const char *prefix,
                         long v)
{
  char d[24];
  int k = 0;
  do
    d[k++] = (char)('0' + v % 10);
  while ((v /= 10) > 0);
  size_t plen = strlen(prefix);
  if (n + plen + (size_t)k + 1 > size)
    return n;
  memcpy(buf + n, prefix, plen);
  n += plen;
  while (k > 0)
    buf[n++] = d[--k];
  buf[n] = '\0';
  return n;
}

/* "fwd gemm L3 mb2" style name (no quotes or backslashes). */
static void name_of(const struct task *tk, char *buf, size_t size)
{
  const char *op = tk->kind == TK_KERNEL ? kernel_kind_name(tk->op)
                   : tk->kind == TK_COLL ? coll_op_name(tk->op)
                                          : task_kind_name(tk->kind);
  const char *parts[3] = {phase_name(tk->phase), op,
                          tk->kind == TK_COLL ? group_kind_name(tk->group)
                                              : NULL};
  size_t n = 0;
  for (int i = 0; i < 3 && parts[i]; i++) {
    size_t len = strlen(parts[i]);
    if (n + len + 2 > size)
      break;
    if (i)
      buf[n++] = ' ';
    memcpy(buf + n, parts[i], len);
    n += len;
  }
  buf[n] = '\0';
  if (tk->layer >= 0)
    n = append_num(buf, n, size, " L", tk->layer);
  if (tk->mb >= 0)
    append_num(buf, n, size, " mb", tk->mb);
}

static int by_start(const void *a, const void *b)
{
  const struct event *x = a, *y = b;
  if (x->start != y->start)
    return x->start < y->start ? -1 : 1;
  if (x->rank != y->rank)
    return x->rank < y->rank ? -1 : 1;
  if (x->stream != y->stream)
    return x->stream < y->stream ? -1 : 1;
  return x->task < y->task ? -1 : x->task > y->task;
}

int trace_write_chrome(struct trace *t, const char *path, struct weft_err *err)
{
  qsort(t->ev, (size_t)t->n, sizeof *t->ev, by_start);
  struct outfile out;
  int rc = outfile_open(&out, path, err);
  if (rc)
    return rc;
  struct tw *w = xmalloc(sizeof *w);
  tw_open(w, out.f, path);
  tw_str(w, "{\"displayTimeUnit\": \"ms\", \"traceEvents\": [\n");
  for (long r = 0; r < t->ranks; r++) {
    if (!kept_rank(t, r))
      continue;
    tw_str(w, "{\"ph\": \"M\", \"name\": \"process_name\", \"pid\": ");
    tw_long(w, r);
    tw_str(w, ", \"args\": {\"name\": \"gpu");
    tw_long(w, r);
    tw_str(w, "\"}},\n");
    for (int s = 0; s < ST_COUNT; s++) {
      tw_str(w, "{\"ph\": \"M\", \"name\": \"thread_name\", \"pid\": ");
      tw_long(w, r);
      tw_str(w, ", \"tid\": ");
      tw_long(w, s);
      tw_str(w, ", \"args\": {\"name\": \"");
      tw_str(w, stream_name((enum stream)s));
      tw_str(w, "\"}},\n");
    }
  }
  char name[96];
  for (long i = 0; i < t->n; i++) {
    const struct event *e = &t->ev[i];
    const struct task *tk = task_of(t, e);
    name_of(tk, name, sizeof name);
    tw_str(w, "{\"ph\": \"X\", \"name\": \"");
    tw_str(w, name);
    tw_str(w, "\", \"pid\": ");
    tw_long(w, e->rank);
    tw_str(w, ", \"tid\": ");
    tw_long(w, e->stream);
    tw_str(w, ", \"ts\": ");
    tw_fixed(w, e->start * 1e6, 3);
    tw_str(w, ", \"dur\": ");
    tw_fixed(w, (e->end - e->start) * 1e6, 3);
    tw_str(w, ", \"args\": {\"task\": ");
    tw_long(w, e->task);
    tw_str(w, ", \"bytes\": ");
    tw_fixed(w, tk->bytes, 0);
    tw_str(w, ", \"flops\": ");
    tw_fixed(w, tk->flops, 0);
    tw_str(w, i + 1 < t->n ? "}},\n" : "}}\n");
  }
  tw_str(w, "]}\n");
  bool ok = tw_close(w);
  free(w);
  if (!ok) {
    outfile_abort(&out);
    return weft_errf(err, WEFT_EIO, "%s: write error", path);
  }
  return outfile_commit(&out, err);
}

/* A Paje record, packed so that sorting compares two integers: the time's
 * bits (times are >= 0, whose IEEE bits order as the numbers do), then
 * rank, stream, is_start (0 a state ends, 1 one starts, 2 a variable
 * changes: a stream ends a task, then starts one, then variables), task + 1
 * (-1: a variable change) and variable, then the change itself. */
struct record {
  uint64_t t, k;
  double delta;          /* variables: GB/s added (negative: removed) */
};

#define REC_TASK_BITS 28

static struct record rec_make(double time, long rank, long task, int stream,
                              int is_start, int var, double delta)
{
  struct record r;
  memcpy(&r.t, &time, sizeof time);
  r.k = (uint64_t)rank << 35 | (uint64_t)stream << 32 |
        (uint64_t)is_start << 30 | (uint64_t)(task + 1) << 2 | (uint64_t)var;
  r.delta = delta;
  return r;
}

static double rec_time(const struct record *r)
{
  double t;
  memcpy(&t, &r->t, sizeof t);
  return t;
}
static long rec_rank(const struct record *r) { return (long)(r->k >> 35); }
static int rec_stream(const struct record *r) { return (int)(r->k >> 32 & 7); }
static int rec_is_start(const struct record *r)
{
  return (int)(r->k >> 30 & 3);
}
static long rec_task(const struct record *r)
{
  return (long)(r->k >> 2 & ((1u << REC_TASK_BITS) - 1)) - 1;
}
static int rec_var(const struct record *r) { return (int)(r->k & 3); }

static int by_time(const void *a, const void *b)
{
  const struct record *x = a, *y = b;
  if (x->t != y->t)
    return x->t < y->t ? -1 : 1;
  if (x->k != y->k)
    return x->k < y->k ? -1 : 1;
  return x->delta < y->delta ? -1 : x->delta > y->delta;
}

int trace_write_paje(struct trace *t, const char *path, struct weft_err *err)
{
  long nrec = 2 * t->n + 4 * t->nf;
  struct record *rec = xcalloc((size_t)nrec + 1, sizeof *rec);
  double end = 0;
  long k = 0;
  for (long i = 0; i < t->n; i++) {
    const struct event *e = &t->ev[i];
    rec[k++] = rec_make(e->start, e->rank, e->task, e->stream, 1, 0, 0);
    rec[k++] = rec_make(e->end, e->rank, e->task, e->stream, 0, 0, 0);
    if (e->end > end)
      end = e->end;
  }
  /* Variable changes: a flow adds its rate at its start and removes it at
   * its end, on the sender's tx and the receiver's rx variable.  Streams
   * sort before variables at equal times (is_start 2 for variables). */
  for (long i = 0; i < t->nf; i++) {
    const struct flowrec *f = &t->fl[i];
    uint8_t base = f->same_node ? 0 : 2;
    double gb = f->rate / 1e9;
    rec[k++] = rec_make(f->start, f->src, -1, 0, 2, base, gb);
    rec[k++] = rec_make(f->start, f->dst, -1, 0, 2, base + 1, gb);
    rec[k++] = rec_make(f->end, f->src, -1, 0, 2, base, -gb);
    rec[k++] = rec_make(f->end, f->dst, -1, 0, 2, base + 1, -gb);
    if (f->end > end)
      end = f->end;
  }
  qsort(rec, (size_t)nrec, sizeof *rec, by_time);
  struct outfile out;
  int rc = outfile_open(&out, path, err);
  if (rc) {
    free(rec);
    return rc;
  }
  struct tw *w = xmalloc(sizeof *w);
  tw_open(w, out.f, path);
  tw_str(w,
         "%EventDef PajeDefineContainerType 0\n%  Alias string\n"
         "%  Type string\n%  Name string\n%EndEventDef\n"
         "%EventDef PajeDefineStateType 1\n%  Alias string\n"
         "%  Type string\n%  Name string\n%EndEventDef\n"
         "%EventDef PajeCreateContainer 2\n%  Time date\n%  Alias string\n"
         "%  Type string\n%  Container string\n%  Name string\n"
         "%EndEventDef\n"
         "%EventDef PajeDestroyContainer 3\n%  Time date\n%  Type string\n"
         "%  Name string\n%EndEventDef\n"
         "%EventDef PajeSetState 4\n%  Time date\n%  Type string\n"
         "%  Container string\n%  Value string\n%EndEventDef\n"
         "%EventDef PajeDefineVariableType 5\n%  Alias string\n"
         "%  Type string\n%  Name string\n%EndEventDef\n"
         "%EventDef PajeSetVariable 6\n%  Time date\n%  Type string\n"
         "%  Container string\n%  Value double\n%EndEventDef\n");
  tw_str(w, "0 GPU 0 \"GPU\"\n");
  for (int s = 0; s < ST_COUNT; s++) {
    tw_str(w, "1 S_");
    tw_str(w, stream_name((enum stream)s));
    tw_str(w, " GPU \"");
    tw_str(w, stream_name((enum stream)s));
    tw_str(w, " stream\"\n");
  }
  static const char *const vars[4] = {"nvl_tx", "nvl_rx", "nic_tx", "nic_rx"};
  static const char *const vnames[4] = {
      "NVLink send GB/s", "NVLink receive GB/s", "NIC send GB/s",
      "NIC receive GB/s"};
  for (int v = 0; v < 4; v++) {
    tw_str(w, "5 ");
    tw_str(w, vars[v]);
    tw_str(w, " GPU \"");
    tw_str(w, vnames[v]);
    tw_str(w, "\"\n");
  }
  for (long r = 0; r < t->ranks; r++)
    if (kept_rank(t, r)) {
      tw_str(w, "2 0 gpu");
      tw_long(w, r);
      tw_str(w, " GPU 0 \"gpu");
      tw_long(w, r);
      tw_str(w, "\"\n");
    }
  /* Current value of each variable, to write absolute values (SetVariable)
   * rounded so that sums of many flows print as exact zeros. */
  double *val = xcalloc((size_t)(4 * t->ranks + 4), sizeof *val);
  char name[96];
  for (long i = 0; i < nrec; i++) {
    const struct record *x = &rec[i];
    long rank = rec_rank(x);
    if (!kept_rank(t, rank))
      continue; /* a flow's other end */
    if (rec_is_start(x) == 2) {
      double *v = &val[4 * rank + rec_var(x)];
      *v += x->delta;
      if (*v < 1e-9 && *v > -1e-9)
        *v = 0;
      tw_str(w, "6 ");
      tw_fixed(w, rec_time(x), 9);
      tw_str(w, " ");
      tw_str(w, vars[rec_var(x)]);
      tw_str(w, " gpu");
      tw_long(w, rank);
      tw_str(w, " ");
      tw_fixed(w, *v, 6);
      tw_str(w, "\n");
      continue;
    }
    if (rec_is_start(x)) {
      struct event e = {0, 0, (int32_t)rank, (int32_t)rec_task(x),
                        (uint8_t)rec_stream(x)};
      name_of(task_of(t, &e), name, sizeof name);
    } else if (i + 1 < nrec && rec[i + 1].t == x->t &&
               rec_is_start(&rec[i + 1]) == 1 && rec_rank(&rec[i + 1]) == rank &&
               rec_stream(&rec[i + 1]) == rec_stream(x)) {
      continue; /* the next task starts on this stream at once: no idle */
    } else if (rec_time(x) >= end) {
      continue; /* the trace ends here: no idle of zero length */
    } else {
      memcpy(name, "idle", 5);
    }
    tw_str(w, "4 ");
    tw_fixed(w, rec_time(x), 9);
    tw_str(w, " S_");
    tw_str(w, stream_name((enum stream)rec_stream(x)));
    tw_str(w, " gpu");
    tw_long(w, rank);
    tw_str(w, " \"");
    tw_str(w, name);
    tw_str(w, "\"\n");
  }
  for (long r = 0; r < t->ranks; r++)
    if (kept_rank(t, r)) {
      tw_str(w, "3 ");
      tw_fixed(w, end, 9);
      tw_str(w, " GPU gpu");
      tw_long(w, r);
      tw_str(w, "\n");
    }
  bool ok = tw_close(w);
  free(w);
  if (!ok) {
    free(val);
    free(rec);
    outfile_abort(&out);
    return weft_errf(err, WEFT_EIO, "%s: write error", path);
  }
  free(val);
  free(rec);
  return outfile_commit(&out, err);
}
