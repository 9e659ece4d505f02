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
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "sim/base/outfile.h"
#include "sim/base/xalloc.h"

struct event {
  double start, end;
  int32_t rank, task;
  uint8_t stream;
};

struct flowrec {
  double start, end, rate, bytes;
  int32_t src, dst;
  uint8_t same_node;
  uint8_t part; /* a part of a flow (trace_add_flow_part), else a whole */
};

struct trace {
  const struct graph *g;
  struct event *ev;
  long n, cap;
  struct flowrec *fl;
  long nf, fcap;
  long nparts;        /* of them parts: the rates come from them alone */
  long ranks;
  int32_t *stage;     /* pipeline stage of each rank */
  int32_t *node;      /* node of each rank (trace_set_node), or NULL */
  /* Task names ("fwd gemm L3 mb2"), made once before writing for the
   * tasks that ran: name_at[stage][task] is an offset into `names` (0:
   * not made), where a length byte precedes the name. */
  uint32_t **name_at;
  char *names;
  size_t nnames, names_cap;
  long named;         /* events whose tasks are named */
  /* Memory counter (trace_set_memory): the stage it is for (-1: none)
   * and its terms, in bytes. */
  long mem_stage;
  double mem_fixed, mem_chunk, mem_transient;
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

static void add_flow(struct trace *t, long src, long dst, int same_node,
                     double bytes, double start_s, double end_s, bool part)
{
  if (end_s <= start_s || !in_window(t, start_s, end_s) ||
      !(kept_rank(t, src) || kept_rank(t, dst)))
    return;
  if (t->nf == t->fcap) {
    t->fcap = t->fcap ? 2 * t->fcap : 4096;
    t->fl = xreallocarray(t->fl, (size_t)t->fcap, sizeof *t->fl);
  }
  t->fl[t->nf++] = (struct flowrec){start_s, end_s, bytes / (end_s - start_s),
                                    bytes, (int32_t)src, (int32_t)dst,
                                    (uint8_t)(same_node != 0), part};
  t->nparts += part;
}

void trace_add_flow(struct trace *t, long src, long dst, int same_node,
                    double bytes, double start_s, double end_s)
{
  add_flow(t, src, dst, same_node, bytes, start_s, end_s, false);
}

void trace_add_flow_part(struct trace *t, long src, long dst, int same_node,
                         double bytes, double start_s, double end_s)
{
  add_flow(t, src, dst, same_node, bytes, start_s, end_s, true);
}

const unsigned char *trace_kept(const struct trace *t) { return t->keep; }

/* Whether flow record f gives the link rates (parts when there are any)
 * or stands for a transfer (whole flows). */
static bool rates_of(const struct trace *t, const struct flowrec *f)
{
  return t->nparts ? f->part : true;
}

struct trace *trace_new(const struct graph *g)
{
  struct trace *t = xcalloc(1, sizeof *t);
  t->g = g;
  t->ranks = layout_ranks(&g->layout);
  t->stage = xcalloc((size_t)t->ranks, sizeof *t->stage);
  for (long r = 0; r < t->ranks; r++) {
    long c[PD_COUNT];
    layout_coords(&g->layout, r, c);
    t->stage[r] = (int32_t)c[PD_PP];
  }
  t->t1 = INFINITY;
  t->level = TRACE_ALL;
  t->mem_stage = -1;
  return t;
}

void trace_set_memory(struct trace *t, long stage, double fixed_bytes,
                      double chunk_bytes, double transient_bytes)
{
  t->mem_stage = stage >= 0 && stage < t->g->stages ? stage : -1;
  t->mem_fixed = fixed_bytes;
  t->mem_chunk = chunk_bytes;
  t->mem_transient = transient_bytes;
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
  free(t->stage);
  free(t->node);
  if (t->name_at)
    for (long s = 0; s < t->g->stages; s++)
      free(t->name_at[s]);
  free(t->name_at);
  free(t->names);
  free(t);
}

long trace_events(const struct trace *t) { return t->n; }

void trace_set_node(struct trace *t, long rank, int node)
{
  if (!t->node)
    t->node = xcalloc((size_t)t->ranks, sizeof *t->node);
  t->node[rank] = node;
}

static long stage_of(const struct trace *t, long rank)
{
  return t->stage[rank];
}

void trace_add(struct trace *t, long rank, long task, double start_s,
               double end_s)
{
  if (!kept_rank(t, rank) || !in_window(t, start_s, end_s))
    return;
  const struct task *tk = &t->g->prog[stage_of(t, rank)].tasks[task];
  if (t->level == TRACE_COMM && tk->kind == TK_KERNEL)
    return;
  if (t->n == t->cap) {
    t->cap = t->cap ? 2 * t->cap : 4096;
    t->ev = xreallocarray(t->ev, (size_t)t->cap, sizeof *t->ev);
  }
  t->ev[t->n++] = (struct event){start_s, end_s, (int32_t)rank, (int32_t)task,
                                 tk->stream};
}


/* ---- task names ------------------------------------------------------- */

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

/* "fwd gemm L3 mb2" style name ("bwd gemm fc1.wgrad L3 mb2" for a GEMM
 * whose role the builder set) (no quotes or backslashes); its length. */
static size_t name_of(const struct task *tk, char *buf, size_t size)
{
  const char *op = tk->kind == TK_KERNEL ? kernel_kind_name(tk->op)
                   : tk->kind == TK_COLL ? coll_op_name(tk->op)
                                          : task_kind_name(tk->kind);
  char role[32]; /* a GEMM's linear and pass (graph.h), e.g. "fc1.wgrad" */
  const char *parts[3] = {phase_name(tk->phase), op,
                          tk->kind == TK_COLL ? group_kind_name(tk->group)
                          : tk->role
                              ? graph_role_str(tk->role, role, sizeof role)
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
    n = append_num(buf, n, size, " mb", tk->mb);
  return n;
}

#define NAME_MAX_LEN 96

/* Name every task that ran, once: ranks of a stage share their tasks, so
 * the writers copy names instead of making one per event.  Runs before
 * the writers, which then only read. */
static void make_names(struct trace *t)
{
  if (!t->name_at) {
    t->name_at = xcalloc((size_t)t->g->stages, sizeof *t->name_at);
    t->names_cap = 4096;
    t->names = xmalloc(t->names_cap);
    t->nnames = 1; /* offset 0 means "not made" */
  }
  for (long i = t->named; i < t->n; i++) {
    const struct event *e = &t->ev[i];
    long s = stage_of(t, e->rank);
    if (!t->name_at[s])
      t->name_at[s] = xcalloc((size_t)t->g->prog[s].n, sizeof **t->name_at);
    if (t->name_at[s][e->task])
      continue;
    if (t->nnames + NAME_MAX_LEN + 1 > t->names_cap) {
      t->names_cap *= 2;
      t->names = xrealloc(t->names, t->names_cap);
    }
    char *dst = t->names + t->nnames;
    size_t len = name_of(&t->g->prog[s].tasks[e->task], dst + 1,
                         NAME_MAX_LEN);
    dst[0] = (char)len;
    t->name_at[s][e->task] = (uint32_t)t->nnames;
    t->nnames += len + 1;
  }
  t->named = t->n;
}

/* The name of `task` of `rank` (made by make_names) and its length. */
static const char *name_at(const struct trace *t, long rank, long task,
                           size_t *len)
{
  const char *p = t->names + t->name_at[stage_of(t, rank)][task];
  *len = (unsigned char)p[0];
  return p + 1;
}

/* ---- sorting ---------------------------------------------------------- */

/* Both writers sort records of a 64-bit time key (the bits of a time >= 0,
 * which order as the numbers do), a 64-bit tie-break key and a payload.
 * A replay has few distinct instants (a collective's flows start and end
 * together; the demo's 2.2 million Paje records share 30 thousand times),
 * so the records are counted into one bucket per distinct time (a hash
 * table of the times, which alone are sorted) and each bucket is sorted by
 * (key, payload).  With many distinct times, a stable radix sort on the
 * time comes first instead.  Three times as fast as qsort on the demo. */
struct record {
  uint64_t t, k;
  double delta; /* Paje variables: GB/s added; Chrome: the event's index */
};

static bool rec_less(const struct record *x, const struct record *y)
{
  if (x->t != y->t)
    return x->t < y->t;
  if (x->k != y->k)
    return x->k < y->k;
  return x->delta < y->delta;
}

/* r[0..n) by rec_less: quicksort (median of three) down to runs of 16,
 * then one insertion sort. */
static void sort_small(struct record *r, long n)
{
  while (n > 16) {
    struct record *a = &r[0], *b = &r[n / 2], *c = &r[n - 1], *m;
    if (rec_less(a, b))
      m = rec_less(b, c) ? b : rec_less(a, c) ? c : a;
    else
      m = rec_less(a, c) ? a : rec_less(b, c) ? c : b;
    struct record pivot = *m;
    long i = 0, j = n - 1;
    for (;;) {
      while (rec_less(&r[i], &pivot))
        i++;
      while (rec_less(&pivot, &r[j]))
        j--;
      if (i >= j)
        break;
      struct record x = r[i];
      r[i++] = r[j];
      r[j--] = x;
    }
    /* Recurse into the smaller part, loop on the larger. */
    if (j + 1 < n - j - 1) {
      sort_small(r, j + 1);
      r += j + 1;
      n -= j + 1;
    } else {
      sort_small(r + j + 1, n - j - 1);
      n = j + 1;
    }
  }
  for (long a = 1; a < n; a++) {
    struct record x = r[a];
    long b = a;
    while (b > 0 && rec_less(&x, &r[b - 1])) {
      r[b] = r[b - 1];
      b--;
    }
    r[b] = x;
  }
}

/* Stable LSD radix sort of r by t (digits that every record shares are
 * skipped). */
static void radix_by_time(struct record *r, long n)
{
  struct record *tmp = xmalloc((size_t)n * sizeof *r), *src = r, *dst = tmp;
  long count[256];
  for (int shift = 0; shift < 64; shift += 8) {
    memset(count, 0, sizeof count);
    for (long i = 0; i < n; i++)
      count[src[i].t >> shift & 255]++;
    if (count[src[0].t >> shift & 255] == n)
      continue;
    long sum = 0;
    for (int d = 0; d < 256; d++) {
      long c = count[d];
      count[d] = sum;
      sum += c;
    }
    for (long i = 0; i < n; i++)
      dst[count[src[i].t >> shift & 255]++] = src[i];
    struct record *x = src;
    src = dst;
    dst = x;
  }
  if (src != r)
    memcpy(r, src, (size_t)n * sizeof *r);
  free(tmp);
}

static int by_u64(const void *a, const void *b)
{
  uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
  return x < y ? -1 : x > y;
}

/* Bucket each record by its time: id[i] = the rank of r[i].t among the
 * distinct times; returns their number, or -1 beyond `most`. */
static long time_ranks(const struct record *r, long n, long most,
                       uint32_t *id)
{
  size_t size = 1024;
  int bits = 10;
  while (size < 2 * (size_t)most) {
    size *= 2;
    bits++;
  }
  /* Open addressing; slot value = 1 + index into `times`. */
  uint32_t *slot = xcalloc(size, sizeof *slot);
  uint64_t *times = xmalloc((size_t)most * sizeof *times);
  long distinct = 0;
  for (long i = 0; i < n; i++) {
    uint64_t t = r[i].t;
    size_t h = (size_t)((t * 0x9E3779B97F4A7C15ull) >> (64 - bits));
    while (slot[h] && times[slot[h] - 1] != t)
      h = (h + 1) & (size - 1);
    if (!slot[h]) {
      if (distinct == most) {
        free(slot);
        free(times);
        return -1;
      }
      times[distinct++] = t;
      slot[h] = (uint32_t)distinct;
    }
    id[i] = slot[h] - 1;
  }
  /* Rank the distinct times: sort (time, first index) pairs. */
  uint64_t *order = xmalloc((size_t)distinct * 2 * sizeof *order);
  for (long d = 0; d < distinct; d++) {
    order[2 * d] = times[d];
    order[2 * d + 1] = (uint64_t)d;
  }
  qsort(order, (size_t)distinct, 2 * sizeof *order, by_u64);
  uint32_t *rank = xmalloc((size_t)distinct * sizeof *rank);
  for (long d = 0; d < distinct; d++)
    rank[order[2 * d + 1]] = (uint32_t)d;
  for (long i = 0; i < n; i++)
    id[i] = rank[id[i]];
  free(rank);
  free(order);
  free(slot);
  free(times);
  return distinct;
}

/* Sort r[0..n); returns the sorted array, r itself or a new one that
 * replaces it (r is then freed). */
static struct record *sort_records(struct record *r, long n)
{
  if (n < 2)
    return r;
  uint32_t *id = xmalloc((size_t)n * sizeof *id);
  long distinct = time_ranks(r, n, n / 8 + 1, id);
  if (distinct < 0) {
    radix_by_time(r, n);
  } else {
    long *next = xcalloc((size_t)distinct + 1, sizeof *next);
    for (long i = 0; i < n; i++)
      next[id[i] + 1]++;
    for (long d = 0; d < distinct; d++)
      next[d + 1] += next[d];
    struct record *by_time = xmalloc((size_t)n * sizeof *r);
    for (long i = 0; i < n; i++)
      by_time[next[id[i]]++] = r[i];
    free(next);
    free(r);
    r = by_time;
  }
  free(id);
  /* Equal times by key and payload. */
  for (long i = 0; i < n;) {
    long j = i + 1;
    while (j < n && r[j].t == r[i].t)
      j++;
    sort_small(r + i, j - i);
    i = j;
  }
  return r;
}

static uint64_t time_bits(double time)
{
  uint64_t u;
  memcpy(&u, &time, sizeof u);
  return u;
}

static double bits_time(uint64_t u)
{
  double t;
  memcpy(&t, &u, sizeof t);
  return t;
}

/* ---- output: buffered, formatted by hand, optionally gzipped ---------- */

/* printf's number formatting dominated the writers (half of a traced run);
 * records are formatted straight into a 64 KiB buffer, which goes to the
 * file as is or through zlib's deflate with a gzip header. */
struct tw {
  FILE *f;
  bool gz, failed;
  z_stream z;
  size_t n;
  char buf[1 << 16];
  unsigned char zbuf[1 << 16];
};

/* The most one record (an event, a Paje line) can take: names, literals and
 * three numbers of at most 330 characters (printf's %.0f of 1e308). */
#define TW_RECORD 2048

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

/* Where the next record goes, with room for TW_RECORD bytes; tw_end says
 * where it ended. */
static char *tw_begin(struct tw *w)
{
  if (sizeof w->buf - w->n < TW_RECORD)
    tw_flush(w);
  return w->buf + w->n;
}

static void tw_end(struct tw *w, char *p) { w->n = (size_t)(p - w->buf); }

/* A record longer than TW_RECORD (the fixed header text). */
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

static char *put(char *p, const char *s, size_t len)
{
  memcpy(p, s, len);
  return p + len;
}

/* A string literal, without strlen. */
#define PUT(p, lit) put((p), (lit), sizeof(lit) - 1)

static char *put_str(char *p, const char *s) { return put(p, s, strlen(s)); }

static const char digits2[] =
    "00010203040506070809101112131415161718192021222324252627282930313233"
    "34353637383940414243444546474849505152535455565758596061626364656667"
    "6869707172737475767778798081828384858687888990919293949596979899";

static char *put_u64(char *p, uint64_t u)
{
  char tmp[24], *q = tmp + sizeof tmp;
  while (u >= 100) {
    unsigned d = (unsigned)(u % 100);
    u /= 100;
    q -= 2;
    memcpy(q, digits2 + 2 * d, 2);
  }
  if (u >= 10) {
    q -= 2;
    memcpy(q, digits2 + 2 * u, 2);
  } else {
    *--q = (char)('0' + u);
  }
  return put(p, q, (size_t)(tmp + sizeof tmp - q));
}

static char *put_long(char *p, long v)
{
  if (v < 0) {
    *p++ = '-';
    return put_u64(p, 0 - (uint64_t)v);
  }
  return put_u64(p, (uint64_t)v);
}

/* v with `dec` decimals (0 to 9), as printf's %.<dec>f; out of the range
 * where the integer path is exact, printf itself. */
static char *put_fixed(char *p, double v, int dec)
{
  static const double pow10[] = {1, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8,
                                 1e9};
  double scaled = v * pow10[dec];
  if (!(fabs(scaled) < 9e15))
    return p + snprintf(p, TW_RECORD / 4, "%.*f", dec, v);
  long long q = llround(scaled);
  if (q < 0) {
    *p++ = '-';
    q = -q;
  } else if (v < 0 && q == 0) {
    *p++ = '-'; /* printf's "-0.000" */
  }
  uint64_t scale = (uint64_t)pow10[dec];
  p = put_u64(p, (uint64_t)q / scale);
  if (dec > 0) {
    uint64_t fp = (uint64_t)q % scale;
    *p = '.';
    for (int i = dec; i >= 1; i--) {
      p[i] = (char)('0' + fp % 10);
      fp /= 10;
    }
    p += dec + 1;
  }
  return p;
}

/* ---- Paje --------------------------------------------------------------- */

/* The hierarchy, as the Paje file format specification (Schnorr, "Paje
 * trace file format", 2013) defines types and containers:
 *
 *   cluster (C) > node (N) > GPU (G) > stream (S), a state type W (work)
 *                          > link (L): a GPU's NVLink or NIC port, with
 *                            variables tx and rx (GB/s)
 *   transfers: a link type T from GPU to GPU, declared on the cluster
 *
 * W's values are the kinds of work (gemm, attn, allreduce, send, idle,
 * ...), declared with PajeDefineEntityValue so that a viewer colours by
 * kind; phase, layer, micro-batch, collective group, kernel shape and
 * bytes are extra fields of PajeSetState (pj_dump -u prints them), which a
 * viewer can filter on instead of splitting the kind into one value per
 * layer and micro-batch.  Only the streams and links a rank used are
 * declared. */

/* A Paje record's key: rank, stream, class (0 a state ends, 1 one starts,
 * 2 a variable changes, 3 a transfer starts or ends: a stream ends a task,
 * then starts one, then variables and transfers), task + 1 (a state) or
 * flow (a transfer), and the variable (or 0 a transfer's start, 1 its
 * end). */
#define REC_TASK_BITS 28

static struct record rec_make(double time, long rank, long task, int stream,
                              int cls, int var, double delta)
{
  return (struct record){
      time_bits(time),
      (uint64_t)rank << 35 | (uint64_t)stream << 32 |
          (uint64_t)cls << 30 | (uint64_t)(task + 1) << 2 |
          (uint64_t)var,
      delta};
}

static long rec_rank(const struct record *r) { return (long)(r->k >> 35); }
static int rec_stream(const struct record *r) { return (int)(r->k >> 32 & 7); }
static int rec_class(const struct record *r) { return (int)(r->k >> 30 & 3); }
static long rec_task(const struct record *r)
{
  return (long)(r->k >> 2 & ((1u << REC_TASK_BITS) - 1)) - 1;
}
static int rec_var(const struct record *r) { return (int)(r->k & 3); }

static const char paje_header[] =
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
    "%  Container string\n%  Value string\n%  Phase string\n"
    "%  Layer int\n%  MicroBatch int\n%  Group string\n%  Gemm string\n"
    "%  Shape string\n%  Bytes double\n%EndEventDef\n"
    "%EventDef PajeDefineVariableType 5\n%  Alias string\n"
    "%  Type string\n%  Name string\n%EndEventDef\n"
    "%EventDef PajeSetVariable 6\n%  Time date\n%  Type string\n"
    "%  Container string\n%  Value double\n%EndEventDef\n"
    "%EventDef PajeSetState 7\n%  Time date\n%  Type string\n"
    "%  Container string\n%  Value string\n%EndEventDef\n"
    "%EventDef PajeDefineLinkType 8\n%  Alias string\n%  Type string\n"
    "%  StartContainerType string\n%  EndContainerType string\n"
    "%  Name string\n%EndEventDef\n"
    "%EventDef PajeStartLink 9\n%  Time date\n%  Type string\n"
    "%  Container string\n%  Value string\n%  StartContainer string\n"
    "%  Key string\n%  Bytes double\n%EndEventDef\n"
    "%EventDef PajeEndLink 10\n%  Time date\n%  Type string\n"
    "%  Container string\n%  Value string\n%  EndContainer string\n"
    "%  Key string\n%EndEventDef\n"
    "%EventDef PajeDefineEntityValue 11\n%  Alias string\n%  Type string\n"
    "%  Name string\n%  Color color\n%EndEventDef\n"
    "0 C 0 \"Cluster\"\n"
    "0 N C \"Node\"\n"
    "0 G N \"GPU\"\n"
    "0 S G \"Stream\"\n"
    "0 L N \"Link\"\n"
    "1 W S \"Work\"\n"
    "5 tx L \"send GB/s\"\n"
    "5 rx L \"receive GB/s\"\n"
    "8 T C G G \"Transfer\"\n"
    "11 nvlink T \"NVLink\" \"0.2 0.6 0.2\"\n"
    "11 nic T \"NIC\" \"0.8 0.2 0.2\"\n"
    "2 0 c C 0 \"cluster\"\n";

/* The kinds of work, W's values, and their colours (RGB in [0, 1]):
 * compute in blues and greens, collectives in reds and oranges, transfers
 * in purple, idle in grey. */
static const char *const paje_kernel_colors[KK_COUNT] = {
    "0.1 0.3 0.9", "0.1 0.7 0.9", "0.1 0.5 0.7", "0.6 0.8 0.2",
    "0.4 0.7 0.4", "0.9 0.9 0.3", "0.8 0.7 0.2", "0.2 0.6 0.3",
    "0.3 0.2 0.9", "0.7 0.7 0.7"};
static const char *const paje_coll_colors[CO_COUNT] = {
    "0.9 0.1 0.1", "0.9 0.4 0.1", "0.9 0.6 0.2", "0.8 0.1 0.5",
    "0.6 0.2 0.1", "0.9 0.3 0.4"};

/* W's value of task `tk`: its kind of work. */
static const char *work_of(const struct task *tk)
{
  return tk->kind == TK_KERNEL ? kernel_kind_name(tk->op)
         : tk->kind == TK_COLL ? coll_op_name(tk->op)
                               : task_kind_name(tk->kind);
}

/* The link variables, by rec_var: a GPU's NVLink or NIC port, send or
 * receive. */
static const char *const paje_link[2] = {"nvlink", "nic"};
static const char *const paje_link_name[2] = {"NVLink", "NIC"};
static const char *const paje_dir[2] = {"tx", "rx"};

/* The records of `t` sorted (caller frees; *out_n of them) and the end
 * time of its last event or flow. */
static struct record *paje_records(const struct trace *t, long *out_n,
                                   double *out_end_s)
{
  long nrec = 2 * t->n + 6 * t->nf;
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
   * its end, on the sender's tx and the receiver's rx variable; a
   * transfer between kept ranks is a Paje link.  Flows beyond
   * REC_TASK_BITS' count keep their variables, not their links. */
  for (long i = 0; i < t->nf; i++) {
    const struct flowrec *f = &t->fl[i];
    uint8_t base = f->same_node ? 0 : 2;
    double gb = f->rate / 1e9;
    if (rates_of(t, f)) {
      rec[k++] = rec_make(f->start, f->src, -1, 0, 2, base, gb);
      rec[k++] = rec_make(f->start, f->dst, -1, 0, 2, base + 1, gb);
      rec[k++] = rec_make(f->end, f->src, -1, 0, 2, base, -gb);
      rec[k++] = rec_make(f->end, f->dst, -1, 0, 2, base + 1, -gb);
    }
    if (!f->part && kept_rank(t, f->src) && kept_rank(t, f->dst) &&
        i + 1 < (1l << REC_TASK_BITS)) {
      rec[k++] = rec_make(f->start, f->src, i, 0, 3, 0, 0);
      rec[k++] = rec_make(f->end, f->dst, i, 0, 3, 1, 0);
    }
    if (f->end > end)
      end = f->end;
  }
  *out_n = k;
  *out_end_s = end;
  return sort_records(rec, k);
}

/* What each kept rank used: streams (bits 0..ST_COUNT-1) and link ports
 * (bit ST_COUNT + 0 NVLink, + 1 NIC), from the records; and the nodes. */
static uint32_t *paje_used(const struct trace *t, const struct record *rec,
                           long nrec)
{
  uint32_t *used = xcalloc((size_t)t->ranks, sizeof *used);
  for (long i = 0; i < nrec; i++) {
    const struct record *x = &rec[i];
    long rank = rec_rank(x);
    int cls = rec_class(x);
    if (cls <= 1)
      used[rank] |= 1u << rec_stream(x);
    else if (cls == 2)
      used[rank] |= 1u << (ST_COUNT + rec_var(x) / 2);
  }
  return used;
}

static int node_of(const struct trace *t, long rank)
{
  return t->node ? t->node[rank] : 0;
}

/* The types' values and the containers of the kept ranks: each node
 * once, before its first GPU (ranks of a node need not be consecutive). */
static void paje_write_defs(const struct trace *t, struct tw *w,
                            const uint32_t *used)
{
  tw_put(w, paje_header, sizeof paje_header - 1);
  for (int kk = 0; kk < KK_COUNT; kk++) {
    char *p = tw_begin(w);
    p = PUT(p, "11 ");
    p = put_str(p, kernel_kind_name((enum kernel_kind)kk));
    p = PUT(p, " W \"");
    p = put_str(p, kernel_kind_name((enum kernel_kind)kk));
    p = PUT(p, "\" \"");
    p = put_str(p, paje_kernel_colors[kk]);
    p = PUT(p, "\"\n");
    tw_end(w, p);
  }
  for (int co = 0; co < CO_COUNT; co++) {
    char *p = tw_begin(w);
    p = PUT(p, "11 ");
    p = put_str(p, coll_op_name((enum coll_op)co));
    p = PUT(p, " W \"");
    p = put_str(p, coll_op_name((enum coll_op)co));
    p = PUT(p, "\" \"");
    p = put_str(p, paje_coll_colors[co]);
    p = PUT(p, "\"\n");
    tw_end(w, p);
  }
  static const char rest[] =
      "11 send W \"send\" \"0.6 0.3 0.8\"\n"
      "11 recv W \"recv\" \"0.8 0.5 0.9\"\n"
      "11 idle W \"idle\" \"0.9 0.9 0.9\"\n";
  tw_put(w, rest, sizeof rest - 1);
  int nnodes = 0;
  for (long r = 0; r < t->ranks; r++)
    if (node_of(t, r) + 1 > nnodes)
      nnodes = node_of(t, r) + 1;
  uint8_t *made = xcalloc((size_t)nnodes + 1, 1);
  for (long r = 0; r < t->ranks; r++) {
    if (!kept_rank(t, r))
      continue;
    int nd = node_of(t, r);
    char *p = tw_begin(w);
    if (!made[nd]) {
      made[nd] = 1;
      p = PUT(p, "2 0 n");
      p = put_long(p, nd);
      p = PUT(p, " N c \"node");
      p = put_long(p, nd);
      p = PUT(p, "\"\n");
    }
    p = PUT(p, "2 0 gpu");
    p = put_long(p, r);
    p = PUT(p, " G n");
    p = put_long(p, nd);
    p = PUT(p, " \"gpu");
    p = put_long(p, r);
    p = PUT(p, "\"\n");
    tw_end(w, p);
    for (int s = 0; s < ST_COUNT; s++) {
      if (!(used[r] >> s & 1))
        continue;
      p = tw_begin(w);
      p = PUT(p, "2 0 gpu");
      p = put_long(p, r);
      *p++ = '.';
      p = put_str(p, stream_name((enum stream)s));
      p = PUT(p, " S gpu");
      p = put_long(p, r);
      p = PUT(p, " \"gpu");
      p = put_long(p, r);
      *p++ = ' ';
      p = put_str(p, stream_name((enum stream)s));
      p = PUT(p, "\"\n");
      tw_end(w, p);
    }
    for (int l = 0; l < 2; l++) {
      if (!(used[r] >> (ST_COUNT + l) & 1))
        continue;
      p = tw_begin(w);
      p = PUT(p, "2 0 gpu");
      p = put_long(p, r);
      *p++ = '.';
      p = put_str(p, paje_link[l]);
      p = PUT(p, " L n");
      p = put_long(p, nd);
      p = PUT(p, " \"gpu");
      p = put_long(p, r);
      *p++ = ' ';
      p = put_str(p, paje_link_name[l]);
      p = PUT(p, "\"\n");
      tw_end(w, p);
    }
  }
  free(made);
}

/* A variable change of `rank`: the new absolute value (SetVariable) of
 * the variable in *v, rounded so that sums of many flows print as exact
 * zeros. */
static void paje_write_var(struct tw *w, const struct record *x, long rank,
                           double *v)
{
  *v += x->delta;
  if (*v < 1e-9 && *v > -1e-9)
    *v = 0;
  char *p = tw_begin(w);
  p = PUT(p, "6 ");
  p = put_fixed(p, bits_time(x->t), 9);
  *p++ = ' ';
  p = put_str(p, paje_dir[rec_var(x) & 1]);
  p = PUT(p, " gpu");
  p = put_long(p, rank);
  *p++ = '.';
  p = put_str(p, paje_link[rec_var(x) >> 1]);
  *p++ = ' ';
  p = put_fixed(p, *v, 6);
  *p++ = '\n';
  tw_end(w, p);
}

/* A transfer's start (from the sender) or end (at the receiver). */
static void paje_write_link(const struct trace *t, struct tw *w,
                            const struct record *x)
{
  long i = rec_task(x);
  const struct flowrec *f = &t->fl[i];
  bool end = rec_var(x) == 1;
  char *p = tw_begin(w);
  p = end ? PUT(p, "10 ") : PUT(p, "9 ");
  p = put_fixed(p, bits_time(x->t), 9);
  p = PUT(p, " T c ");
  p = put_str(p, paje_link[f->same_node ? 0 : 1]);
  p = PUT(p, " gpu");
  p = put_long(p, end ? f->dst : f->src);
  p = PUT(p, " f");
  p = put_long(p, i);
  if (!end) {
    *p++ = ' ';
    p = put_fixed(p, f->bytes, 0);
  }
  *p++ = '\n';
  tw_end(w, p);
}

/* The state record rec[i] of `rank`: a task starts, or its stream goes
 * idle, unless the next task starts there at once or the trace ends. */
static void paje_write_state(const struct trace *t, struct tw *w,
                             const struct record *rec, long nrec, long i,
                             long rank, double end)
{
  const struct record *x = &rec[i];
  const struct task *tk = NULL;
  if (rec_class(x)) {
    tk = &t->g->prog[stage_of(t, rank)].tasks[rec_task(x)];
  } else if (i + 1 < nrec && rec[i + 1].t == x->t &&
             rec_class(&rec[i + 1]) == 1 && rec_rank(&rec[i + 1]) == rank &&
             rec_stream(&rec[i + 1]) == rec_stream(x)) {
    return; /* the next task starts on this stream at once: no idle */
  } else if (bits_time(x->t) >= end) {
    return; /* the trace ends here: no idle of zero length */
  }
  char *p = tw_begin(w);
  p = tk ? PUT(p, "4 ") : PUT(p, "7 ");
  p = put_fixed(p, bits_time(x->t), 9);
  p = PUT(p, " W gpu");
  p = put_long(p, rank);
  *p++ = '.';
  p = put_str(p, stream_name((enum stream)rec_stream(x)));
  if (!tk) {
    p = PUT(p, " idle\n");
    tw_end(w, p);
    return;
  }
  *p++ = ' ';
  p = put_str(p, work_of(tk));
  *p++ = ' ';
  p = put_str(p, phase_name((enum phase)tk->phase));
  *p++ = ' ';
  p = put_long(p, tk->layer);
  *p++ = ' ';
  p = put_long(p, tk->mb);
  *p++ = ' ';
  p = put_str(p, tk->kind == TK_COLL ? group_kind_name(tk->group) : "-");
  *p++ = ' ';
  /* the GEMM's linear and pass, a field a viewer filters on (pj_dump -u) */
  char role[32];
  p = put_str(p, tk->kind == TK_KERNEL && tk->role
                     ? graph_role_str(tk->role, role, sizeof role)
                     : "-");
  *p++ = ' ';
  if (tk->kind == TK_KERNEL && tk->m) {
    if (tk->batch > 1) {
      p = put_u64(p, tk->batch);
      *p++ = '*';
    }
    p = put_u64(p, tk->m);
    *p++ = 'x';
    p = put_u64(p, tk->n);
    *p++ = 'x';
    p = put_u64(p, tk->k);
  } else {
    *p++ = '-';
  }
  *p++ = ' ';
  p = put_fixed(p, tk->bytes, 0);
  *p++ = '\n';
  tw_end(w, p);
}

/* Destroy the kept ranks' containers, leaves first, then the nodes and
 * the cluster. */
static void paje_write_ends(const struct trace *t, struct tw *w,
                            const uint32_t *used, double end)
{
  int nnodes = 0;
  for (long r = 0; r < t->ranks; r++)
    if (node_of(t, r) + 1 > nnodes)
      nnodes = node_of(t, r) + 1;
  uint8_t *kept = xcalloc((size_t)nnodes + 1, 1);
  for (long r = 0; r < t->ranks; r++) {
    if (!kept_rank(t, r))
      continue;
    kept[node_of(t, r)] = 1;
    for (int s = 0; s < ST_COUNT + 2; s++) {
      if (!(used[r] >> s & 1))
        continue;
      char *p = tw_begin(w);
      p = PUT(p, "3 ");
      p = put_fixed(p, end, 9);
      p = s < ST_COUNT ? PUT(p, " S gpu") : PUT(p, " L gpu");
      p = put_long(p, r);
      *p++ = '.';
      p = put_str(p, s < ST_COUNT ? stream_name((enum stream)s)
                                  : paje_link[s - ST_COUNT]);
      *p++ = '\n';
      tw_end(w, p);
    }
    char *p = tw_begin(w);
    p = PUT(p, "3 ");
    p = put_fixed(p, end, 9);
    p = PUT(p, " G gpu");
    p = put_long(p, r);
    *p++ = '\n';
    tw_end(w, p);
  }
  for (int nd = 0; nd < nnodes; nd++)
    if (kept[nd]) {
      char *p = tw_begin(w);
      p = PUT(p, "3 ");
      p = put_fixed(p, end, 9);
      p = PUT(p, " N n");
      p = put_long(p, nd);
      *p++ = '\n';
      tw_end(w, p);
    }
  char *p = tw_begin(w);
  p = PUT(p, "3 ");
  p = put_fixed(p, end, 9);
  p = PUT(p, " C c\n");
  tw_end(w, p);
  free(kept);
}

static bool write_paje(const struct trace *t, struct outfile *out)
{
  long nrec;
  double end;
  struct record *rec = paje_records(t, &nrec, &end);
  uint32_t *used = paje_used(t, rec, nrec);
  struct tw *w = xmalloc(sizeof *w);
  tw_open(w, out->f, out->path);
  paje_write_defs(t, w, used);
  /* Current value of each variable, 4 per rank. */
  double *val = xcalloc((size_t)(4 * t->ranks + 4), sizeof *val);
  for (long i = 0; i < nrec; i++) {
    const struct record *x = &rec[i];
    long rank = rec_rank(x);
    if (!kept_rank(t, rank))
      continue; /* a flow's other end */
    int cls = rec_class(x);
    if (cls == 3)
      paje_write_link(t, w, x);
    else if (cls == 2)
      paje_write_var(w, x, rank, &val[4 * rank + rec_var(x)]);
    else
      paje_write_state(t, w, rec, nrec, i, rank, end);
  }
  paje_write_ends(t, w, used, end);
  bool ok = tw_close(w);
  free(w);
  free(val);
  free(used);
  free(rec);
  return ok;
}

/* ---- Chrome trace-event JSON ------------------------------------------ */

/* Times in whole nanoseconds: an event's start and end are each rounded
 * once, and its duration is their difference, so a task that starts where
 * the one before it ended never overlaps it (rounding the start and the
 * duration apart made 1 ns overlaps). */
static int64_t ns_of(double s) { return (int64_t)llround(s * 1e9); }

/* ns as microseconds with 3 decimals (the format's unit). */
static char *put_us(char *p, int64_t ns)
{
  if (ns < 0) {
    *p++ = '-';
    ns = -ns;
  }
  p = put_u64(p, (uint64_t)ns / 1000);
  unsigned frac = (unsigned)((uint64_t)ns % 1000);
  p[0] = '.';
  p[1] = (char)('0' + frac / 100);
  p[2] = (char)('0' + frac / 10 % 10);
  p[3] = (char)('0' + frac % 10);
  return p + 4;
}

/* A send's or receive's identity: the receiving rank, micro-batch,
 * direction and sender's virtual stage (the engine's rendezvous key,
 * sim/engine.c arrive_p2p), then the event. */
struct p2p_key {
  long dst, mb, dir, vsrc, ev;
};

static int by_p2p(const void *a, const void *b)
{
  const struct p2p_key *x = a, *y = b;
  long d = x->dst != y->dst ? x->dst - y->dst
           : x->mb != y->mb ? x->mb - y->mb
           : x->dir != y->dir ? x->dir - y->dir
           : x->vsrc != y->vsrc ? x->vsrc - y->vsrc
                                : x->ev - y->ev;
  return d < 0 ? -1 : d > 0;
}

static struct p2p_key p2p_key_of(const struct trace *t, long ev)
{
  const struct event *e = &t->ev[ev];
  const struct task *tk = &t->g->prog[stage_of(t, e->rank)].tasks[e->task];
  long pp = t->g->layout.pp;
  long vs = (long)tk->chunk * pp + stage_of(t, e->rank), vpeer = vs + tk->peer;
  long dir = tk->phase == PH_FWD ? 0 : 1;
  if (tk->kind == TK_RECV)
    return (struct p2p_key){e->rank, tk->mb, dir, vpeer, ev};
  long c[PD_COUNT];
  layout_coords(&t->g->layout, e->rank, c);
  c[PD_PP] = vpeer % pp;
  return (struct p2p_key){layout_rank(&t->g->layout, c), tk->mb, dir, vs, ev};
}

/* Flow arrows (ph "s" and "f") from each recorded send to its recorded
 * receive, both at the start of the transfer (the receive's start: it is
 * shown from its transfer, trace_add), which lies inside both slices. */
static bool chrome_flows(const struct trace *t, struct tw *w, bool *any)
{
  long ns = 0, nr = 0;
  for (long i = 0; i < t->n; i++) {
    const struct event *e = &t->ev[i];
    int kind = t->g->prog[stage_of(t, e->rank)].tasks[e->task].kind;
    ns += kind == TK_SEND;
    nr += kind == TK_RECV;
  }
  if (!ns || !nr)
    return true;
  struct p2p_key *s = xmalloc((size_t)ns * sizeof *s);
  struct p2p_key *r = xmalloc((size_t)nr * sizeof *r);
  ns = nr = 0;
  for (long i = 0; i < t->n; i++) {
    const struct event *e = &t->ev[i];
    int kind = t->g->prog[stage_of(t, e->rank)].tasks[e->task].kind;
    if (kind == TK_SEND)
      s[ns++] = p2p_key_of(t, i);
    else if (kind == TK_RECV)
      r[nr++] = p2p_key_of(t, i);
  }
  qsort(s, (size_t)ns, sizeof *s, by_p2p);
  qsort(r, (size_t)nr, sizeof *r, by_p2p);
  long id = 0;
  for (long a = 0, b = 0; a < ns && b < nr;) {
    struct p2p_key x = s[a], y = r[b];
    x.ev = y.ev = 0;
    int c = by_p2p(&x, &y);
    if (c < 0) {
      a++;
      continue;
    }
    if (c > 0) {
      b++;
      continue;
    }
    const struct event *se = &t->ev[s[a].ev], *re = &t->ev[r[b].ev];
    int64_t at = ns_of(re->start);
    if (at < ns_of(se->start))
      at = ns_of(se->start);
    for (int end = 0; end < 2; end++) {
      const struct event *e = end ? re : se;
      char *p = tw_begin(w);
      if (*any)
        p = PUT(p, ",\n");
      *any = true;
      p = end ? PUT(p, "{\"ph\": \"f\", \"bp\": \"e\"")
              : PUT(p, "{\"ph\": \"s\"");
      p = PUT(p, ", \"name\": \"p2p\", \"cat\": \"transfer\", \"id\": ");
      p = put_long(p, id);
      p = PUT(p, ", \"pid\": ");
      p = put_long(p, e->rank);
      p = PUT(p, ", \"tid\": ");
      p = put_long(p, e->stream);
      p = PUT(p, ", \"ts\": ");
      p = put_us(p, end ? ns_of(re->start) : at);
      p = PUT(p, "}");
      tw_end(w, p);
    }
    id++;
    a++;
    b++;
  }
  free(s);
  free(r);
  return true;
}

/* Counters ("ph" "C") of each kept rank's NVLink and NIC send and receive
 * rates (GB/s), one event per rank, port and instant where they change:
 * the Paje trace's link variables. */
static void chrome_counters(const struct trace *t, struct tw *w, bool *any)
{
  long n = 4 * t->nf;
  if (!n)
    return;
  struct record *rec = xmalloc((size_t)n * sizeof *rec);
  long k = 0;
  for (long i = 0; i < t->nf; i++) {
    const struct flowrec *f = &t->fl[i];
    if (!rates_of(t, f))
      continue;
    int base = f->same_node ? 0 : 2;
    double gb = f->rate / 1e9;
    rec[k++] = rec_make(f->start, f->src, -1, 0, 2, base, gb);
    rec[k++] = rec_make(f->start, f->dst, -1, 0, 2, base + 1, gb);
    rec[k++] = rec_make(f->end, f->src, -1, 0, 2, base, -gb);
    rec[k++] = rec_make(f->end, f->dst, -1, 0, 2, base + 1, -gb);
  }
  n = k;
  if (!n) {
    free(rec);
    return;
  }
  rec = sort_records(rec, n);
  double *val = xcalloc((size_t)(4 * t->ranks + 4), sizeof *val);
  for (long i = 0; i < n; i++) {
    const struct record *x = &rec[i];
    long rank = rec_rank(x);
    int port = rec_var(x) >> 1;
    double *v = &val[4 * rank + rec_var(x)];
    *v += x->delta;
    if (*v < 1e-9 && *v > -1e-9)
      *v = 0;
    /* One event for the last change of this rank's port at this time. */
    if (i + 1 < n && rec[i + 1].t == x->t && rec_rank(&rec[i + 1]) == rank &&
        rec_var(&rec[i + 1]) >> 1 == port)
      continue;
    if (!kept_rank(t, rank))
      continue;
    char *p = tw_begin(w);
    if (*any)
      p = PUT(p, ",\n");
    *any = true;
    p = PUT(p, "{\"ph\": \"C\", \"name\": \"");
    p = put_str(p, port ? "NIC GB/s" : "NVLink GB/s");
    p = PUT(p, "\", \"pid\": ");
    p = put_long(p, rank);
    p = PUT(p, ", \"ts\": ");
    p = put_us(p, ns_of(bits_time(x->t)));
    p = PUT(p, ", \"args\": {\"send\": ");
    p = put_fixed(p, val[4 * rank + 2 * port], 6);
    p = PUT(p, ", \"receive\": ");
    p = put_fixed(p, val[4 * rank + 2 * port + 1], 6);
    p = PUT(p, "}}");
    tw_end(w, p);
  }
  free(val);
  free(rec);
}

/* A change of a rank's memory in use. */
struct memstep {
  double t, delta;
  int32_t rank;
};

static int memstep_cmp(const void *a, const void *b)
{
  const struct memstep *x = a, *y = b;
  if (x->rank != y->rank)
    return x->rank < y->rank ? -1 : 1;
  if (x->t != y->t)
    return x->t < y->t ? -1 : 1;
  /* at one instant, frees before allocations: a backward that ends as
   * the next forward starts does not hold both */
  return (x->delta > y->delta) - (x->delta < y->delta);
}

/* The counter "memory GB" of the ranks of t->mem_stage (trace_set_memory).
 * A micro-batch chunk's activations are allocated when the first compute
 * task of its forward starts and freed when the last compute task of its
 * backward ends (Megatron-LM's schedules free a micro-batch's output
 * tensors after its backward, schedules.py deallocate_output_tensor and
 * backward_step); the transient terms are held from the first to the last
 * compute task of each backward. */
static void chrome_memory(const struct trace *t, struct tw *w, bool *any)
{
  long s = t->mem_stage;
  if (s < 0)
    return;
  const struct program *p = &t->g->prog[s];
  /* per task: 1 first forward task of its (mb, chunk), 2 first backward,
   * 4 last backward */
  uint8_t *mark = xcalloc((size_t)p->n + 1, 1);
  long nmb = 0, nch = 1;
  for (long i = 0; i < p->n; i++) {
    const struct task *k = &p->tasks[i];
    if (k->mb + 1 > nmb)
      nmb = k->mb + 1;
    if (k->chunk + 1 > nch)
      nch = k->chunk + 1;
  }
  long nkey = nmb * nch;
  long *first_f = xmalloc((size_t)(nkey + 1) * sizeof *first_f);
  long *first_b = xmalloc((size_t)(nkey + 1) * sizeof *first_b);
  long *last_b = xmalloc((size_t)(nkey + 1) * sizeof *last_b);
  for (long i = 0; i < nkey; i++)
    first_f[i] = first_b[i] = last_b[i] = -1;
  for (long i = 0; i < p->n; i++) {
    const struct task *k = &p->tasks[i];
    if (k->mb < 0 || k->stream != ST_COMPUTE)
      continue;
    long key = (long)k->mb * nch + (k->chunk < 0 ? 0 : k->chunk);
    if (k->phase == PH_FWD && first_f[key] < 0)
      first_f[key] = i;
    if (k->phase == PH_BWD || k->phase == PH_RECOMP) {
      if (first_b[key] < 0)
        first_b[key] = i;
      last_b[key] = i;
    }
  }
  for (long key = 0; key < nkey; key++) {
    if (first_f[key] >= 0)
      mark[first_f[key]] |= 1;
    if (first_b[key] >= 0)
      mark[first_b[key]] |= 2;
    if (last_b[key] >= 0)
      mark[last_b[key]] |= 4;
  }
  free(first_f);
  free(first_b);
  free(last_b);
  long cap = 64, n = 0;
  struct memstep *st = xmalloc((size_t)cap * sizeof *st);
  for (long i = 0; i < t->n; i++) {
    const struct event *e = &t->ev[i];
    if (t->stage[e->rank] != s || !kept_rank(t, e->rank) || !mark[e->task])
      continue;
    if (n + 3 > cap) {
      cap *= 2;
      st = xrealloc(st, (size_t)cap * sizeof *st);
    }
    uint8_t m = mark[e->task];
    if (m & 1)
      st[n++] = (struct memstep){e->start, t->mem_chunk, e->rank};
    if (m & 2)
      st[n++] = (struct memstep){e->start, t->mem_transient, e->rank};
    if (m & 4)
      st[n++] = (struct memstep){e->end, -t->mem_chunk - t->mem_transient,
                                 e->rank};
  }
  free(mark);
  qsort(st, (size_t)n, sizeof *st, memstep_cmp);
  double v = 0;
  for (long i = 0; i < n; i++) {
    bool first = i == 0 || st[i - 1].rank != st[i].rank;
    if (first) /* the rank's fixed part, from the start */
      v = t->mem_fixed;
    char *q;
    if (first) {
      q = tw_begin(w);
      if (*any)
        q = PUT(q, ",\n");
      *any = true;
      q = PUT(q, "{\"ph\": \"C\", \"name\": \"memory GB\", \"pid\": ");
      q = put_long(q, st[i].rank);
      q = PUT(q, ", \"ts\": 0, \"args\": {\"in use\": ");
      q = put_fixed(q, v / 1e9, 6);
      q = PUT(q, "}}");
      tw_end(w, q);
    }
    v += st[i].delta;
    /* one event for the last change of this rank at this time */
    if (i + 1 < n && st[i + 1].rank == st[i].rank && st[i + 1].t == st[i].t)
      continue;
    q = tw_begin(w);
    q = PUT(q, ",\n{\"ph\": \"C\", \"name\": \"memory GB\", \"pid\": ");
    q = put_long(q, st[i].rank);
    q = PUT(q, ", \"ts\": ");
    q = put_us(q, ns_of(st[i].t));
    q = PUT(q, ", \"args\": {\"in use\": ");
    q = put_fixed(q, v / 1e9, 6);
    q = PUT(q, "}}");
    tw_end(w, q);
  }
  free(st);
}

/* Written by write_chrome into an open outfile; committed by the caller. */
static bool write_chrome(const struct trace *t, struct outfile *out)
{
  /* Events by (start, rank, stream, task). */
  struct record *ord = xmalloc(((size_t)t->n + 1) * sizeof *ord);
  uint8_t *used = xcalloc((size_t)t->ranks, 1);
  for (long i = 0; i < t->n; i++) {
    const struct event *e = &t->ev[i];
    used[e->rank] |= (uint8_t)(1u << e->stream);
    ord[i] = (struct record){time_bits(e->start),
                             (uint64_t)e->rank << 35 |
                                 (uint64_t)e->stream << 32 |
                                 (uint64_t)(uint32_t)e->task,
                             (double)i};
  }
  ord = sort_records(ord, t->n);
  struct tw *w = xmalloc(sizeof *w);
  tw_open(w, out->f, out->path);
  char *p = tw_begin(w);
  p = PUT(p, "{\"displayTimeUnit\": \"ms\", \"traceEvents\": [\n");
  tw_end(w, p);
  /* Separators go before each record, not after: a window or level that
   * keeps no event (or no rank) must still end in valid JSON. */
  bool any = false;
  for (long r = 0; r < t->ranks; r++) {
    if (!kept_rank(t, r))
      continue;
    p = tw_begin(w);
    if (any)
      p = PUT(p, ",\n");
    any = true;
    p = PUT(p, "{\"ph\": \"M\", \"name\": \"process_name\", \"pid\": ");
    p = put_long(p, r);
    p = PUT(p, ", \"args\": {\"name\": \"gpu");
    p = put_long(p, r);
    p = PUT(p, "\"}}");
    tw_end(w, p);
    for (int s = 0; s < ST_COUNT; s++) {
      if (!(used[r] >> s & 1))
        continue;
      p = tw_begin(w);
      p = PUT(p, ",\n{\"ph\": \"M\", \"name\": \"thread_name\", \"pid\": ");
      p = put_long(p, r);
      p = PUT(p, ", \"tid\": ");
      p = put_long(p, s);
      p = PUT(p, ", \"args\": {\"name\": \"");
      p = put_str(p, stream_name((enum stream)s));
      p = PUT(p, "\"}}");
      tw_end(w, p);
    }
  }
  for (long i = 0; i < t->n; i++) {
    const struct event *e = &t->ev[(long)ord[i].delta];
    const struct task *tk = &t->g->prog[stage_of(t, e->rank)].tasks[e->task];
    size_t len;
    const char *name = name_at(t, e->rank, e->task, &len);
    int64_t s0 = ns_of(e->start);
    p = tw_begin(w);
    if (any)
      p = PUT(p, ",\n");
    any = true;
    p = PUT(p, "{\"ph\": \"X\", \"name\": \"");
    p = put(p, name, len);
    p = PUT(p, "\", \"cat\": \"");
    p = put_str(p, work_of(tk));
    p = PUT(p, "\", \"pid\": ");
    p = put_long(p, e->rank);
    p = PUT(p, ", \"tid\": ");
    p = put_long(p, e->stream);
    p = PUT(p, ", \"ts\": ");
    p = put_us(p, s0);
    p = PUT(p, ", \"dur\": ");
    p = put_us(p, ns_of(e->end) - s0);
    p = PUT(p, ", \"args\": {\"task\": ");
    p = put_long(p, e->task);
    p = PUT(p, ", \"phase\": \"");
    p = put_str(p, phase_name((enum phase)tk->phase));
    p = PUT(p, "\", \"layer\": ");
    p = put_long(p, tk->layer);
    p = PUT(p, ", \"mb\": ");
    p = put_long(p, tk->mb);
    if (tk->kind == TK_KERNEL && tk->role) {
      char role[32];
      p = PUT(p, ", \"gemm\": \"");
      p = put_str(p, graph_role_str(tk->role, role, sizeof role));
      *p++ = '"';
    }
    if (tk->kind == TK_KERNEL && tk->m) {
      p = PUT(p, ", \"shape\": \"");
      if (tk->batch > 1) {
        p = put_u64(p, tk->batch);
        *p++ = '*';
      }
      p = put_u64(p, tk->m);
      *p++ = 'x';
      p = put_u64(p, tk->n);
      *p++ = 'x';
      p = put_u64(p, tk->k);
      *p++ = '"';
    }
    p = PUT(p, ", \"bytes\": ");
    p = put_fixed(p, tk->bytes, 0);
    p = PUT(p, ", \"flops\": ");
    p = put_fixed(p, tk->flops, 0);
    p = PUT(p, "}}");
    tw_end(w, p);
  }
  chrome_flows(t, w, &any);
  chrome_counters(t, w, &any);
  chrome_memory(t, w, &any);
  p = tw_begin(w);
  if (any)
    p = PUT(p, "\n");
  p = PUT(p, "]}\n");
  tw_end(w, p);
  bool ok = tw_close(w);
  free(w);
  free(used);
  free(ord);
  return ok;
}

/* ---- writing both ----------------------------------------------------- */

/* Flows by (start, end, src, dst, bytes, part): the transfers' keys
 * (f<index>) then follow the flows, not the order in which the engine
 * saw them end (which differs with couriers, sgbridge.h). */
static int by_flow(const void *a, const void *b)
{
  const struct flowrec *x = a, *y = b;
  if (x->start != y->start)
    return x->start < y->start ? -1 : 1;
  if (x->end != y->end)
    return x->end < y->end ? -1 : 1;
  if (x->src != y->src)
    return x->src < y->src ? -1 : 1;
  if (x->dst != y->dst)
    return x->dst < y->dst ? -1 : 1;
  if (x->bytes != y->bytes)
    return x->bytes < y->bytes ? -1 : 1;
  return (x->part > y->part) - (x->part < y->part);
}

struct writer {
  const struct trace *t;
  bool (*write)(const struct trace *, struct outfile *);
  struct outfile out;
  bool ok;
  int errno_; /* of a failed write, read on the writer's own thread */
};

static void *run_writer(void *arg)
{
  struct writer *w = arg;
  errno = 0;
  w->ok = w->write(w->t, &w->out);
  w->errno_ = errno;
  return NULL;
}

int trace_write(struct trace *t, const char *paje, const char *chrome,
                struct weft_err *err)
{
  struct writer w[2] = {{t, write_paje, {0}, false, 0},
                        {t, write_chrome, {0}, false, 0}};
  const char *path[2] = {paje, chrome};
  make_names(t);
  if (t->nf > 1)
    qsort(t->fl, (size_t)t->nf, sizeof *t->fl, by_flow);
  for (int i = 0; i < 2; i++) {
    if (!path[i])
      continue;
    int rc = outfile_open(&w[i].out, path[i], err);
    if (rc) {
      if (i)
        outfile_abort(&w[0].out);
      return rc;
    }
  }
  /* Both at once, on two threads, unless they share standard output. */
  pthread_t th;
  bool both = paje && chrome && strcmp(paje, "-") != 0 &&
              strcmp(chrome, "-") != 0 &&
              pthread_create(&th, NULL, run_writer, &w[1]) == 0;
  if (paje)
    run_writer(&w[0]);
  if (both)
    pthread_join(th, NULL);
  else if (chrome)
    run_writer(&w[1]);
  /* Both written, or neither replaced. */
  int rc = 0;
  for (int i = 0; i < 2 && !rc; i++)
    if (path[i] && !w[i].ok)
      rc = weft_errf(err, WEFT_EIO, "%s: write error: %s", path[i],
                     strerror(w[i].errno_ ? w[i].errno_ : EIO));
  for (int i = 0; i < 2; i++) {
    if (!path[i])
      continue;
    if (rc)
      outfile_abort(&w[i].out);
    else
      rc = outfile_commit(&w[i].out, err);
  }
  return rc;
}

int trace_write_paje(struct trace *t, const char *path, struct weft_err *err)
{
  return trace_write(t, path, NULL, err);
}

int trace_write_chrome(struct trace *t, const char *path, struct weft_err *err)
{
  return trace_write(t, NULL, path, err);
}
