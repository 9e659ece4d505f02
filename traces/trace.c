/*
 * trace.c - Paje and Chrome trace writers (trace.h).
 *
 * SimGrid 3.32's own Paje tracer crashes on nested zones and split-duplex
 * links, so weft writes Paje itself, in the plain-text format of the Paje
 * file specification (event definitions, then one event per line).
 */
#include "traces/trace.h"

#include <errno.h>
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
};

void trace_add_flow(struct trace *t, long src, long dst, int same_node,
                    double bytes, double start_s, double end_s)
{
  if (end_s <= start_s)
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
  return t;
}

void trace_free(struct trace *t)
{
  if (!t)
    return;
  free(t->ev);
  free(t->fl);
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
  if (t->n == t->cap) {
    t->cap = t->cap ? 2 * t->cap : 4096;
    t->ev = xreallocarray(t->ev, (size_t)t->cap, sizeof *t->ev);
  }
  const struct task *tk = &t->g->prog[stage_of(t, rank)].tasks[task];
  t->ev[t->n++] = (struct event){start_s, end_s, (int32_t)rank, (int32_t)task,
                                 tk->stream};
}

static const struct task *task_of(const struct trace *t, const struct event *e)
{
  return &t->g->prog[stage_of(t, e->rank)].tasks[e->task];
}

/* "fwd gemm L3 mb2" style name (no quotes or backslashes). */
static void name_of(const struct task *tk, char *buf, size_t size)
{
  const char *op = tk->kind == TK_KERNEL ? kernel_kind_name(tk->op)
                   : tk->kind == TK_COLL ? coll_op_name(tk->op)
                                          : task_kind_name(tk->kind);
  int n = snprintf(buf, size, "%s %s", phase_name(tk->phase), op);
  if (tk->kind == TK_COLL)
    n += snprintf(buf + n, size - (size_t)n, " %s", group_kind_name(tk->group));
  if (tk->layer >= 0)
    n += snprintf(buf + n, size - (size_t)n, " L%d", tk->layer);
  if (tk->mb >= 0)
    snprintf(buf + n, size - (size_t)n, " mb%d", tk->mb);
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
  FILE *f = out.f;
  fprintf(f, "{\"displayTimeUnit\": \"ms\", \"traceEvents\": [\n");
  for (long r = 0; r < t->ranks; r++) {
    fprintf(f, "{\"ph\": \"M\", \"name\": \"process_name\", \"pid\": %ld, "
            "\"args\": {\"name\": \"gpu%ld\"}},\n", r, r);
    for (int s = 0; s < ST_COUNT; s++)
      fprintf(f, "{\"ph\": \"M\", \"name\": \"thread_name\", \"pid\": %ld, "
              "\"tid\": %d, \"args\": {\"name\": \"%s\"}},\n", r, s,
              stream_name((enum stream)s));
  }
  char name[96];
  for (long i = 0; i < t->n; i++) {
    const struct event *e = &t->ev[i];
    const struct task *tk = task_of(t, e);
    name_of(tk, name, sizeof name);
    fprintf(f, "{\"ph\": \"X\", \"name\": \"%s\", \"pid\": %d, \"tid\": %d, "
            "\"ts\": %.3f, \"dur\": %.3f, \"args\": {\"task\": %d, "
            "\"bytes\": %.0f, \"flops\": %.0f}}%s\n", name, e->rank, e->stream,
            e->start * 1e6, (e->end - e->start) * 1e6, e->task, tk->bytes,
            tk->flops, i + 1 < t->n ? "," : "");
  }
  fprintf(f, "]}\n");
  return outfile_commit(&out, err);
}

struct record {
  double time;
  int32_t rank, task;    /* task: a state; -1: a variable change */
  uint8_t stream, is_start;
  uint8_t var;           /* variables: 0 nvl_tx 1 nvl_rx 2 nic_tx 3 nic_rx */
  double delta;          /* variables: GB/s added (negative: removed) */
};

static int by_time(const void *a, const void *b)
{
  const struct record *x = a, *y = b;
  if (x->time != y->time)
    return x->time < y->time ? -1 : 1;
  if (x->rank != y->rank)
    return x->rank < y->rank ? -1 : 1;
  if (x->stream != y->stream)
    return x->stream < y->stream ? -1 : 1;
  if (x->is_start != y->is_start) /* a stream ends a task, then starts one */
    return x->is_start < y->is_start ? -1 : 1;
  if (x->task != y->task)
    return x->task < y->task ? -1 : 1;
  if (x->var != y->var)
    return x->var < y->var ? -1 : 1;
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
    rec[k++] = (struct record){e->start, e->rank, e->task, e->stream, 1, 0, 0};
    rec[k++] = (struct record){e->end, e->rank, e->task, e->stream, 0, 0, 0};
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
    rec[k++] = (struct record){f->start, f->src, -1, 0, 2, base, gb};
    rec[k++] = (struct record){f->start, f->dst, -1, 0, 2, (uint8_t)(base + 1), gb};
    rec[k++] = (struct record){f->end, f->src, -1, 0, 2, base, -gb};
    rec[k++] = (struct record){f->end, f->dst, -1, 0, 2, (uint8_t)(base + 1), -gb};
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
  FILE *f = out.f;
  fprintf(f,
          "%%EventDef PajeDefineContainerType 0\n%%  Alias string\n"
          "%%  Type string\n%%  Name string\n%%EndEventDef\n"
          "%%EventDef PajeDefineStateType 1\n%%  Alias string\n"
          "%%  Type string\n%%  Name string\n%%EndEventDef\n"
          "%%EventDef PajeCreateContainer 2\n%%  Time date\n%%  Alias string\n"
          "%%  Type string\n%%  Container string\n%%  Name string\n"
          "%%EndEventDef\n"
          "%%EventDef PajeDestroyContainer 3\n%%  Time date\n%%  Type string\n"
          "%%  Name string\n%%EndEventDef\n"
          "%%EventDef PajeSetState 4\n%%  Time date\n%%  Type string\n"
          "%%  Container string\n%%  Value string\n%%EndEventDef\n"
          "%%EventDef PajeDefineVariableType 5\n%%  Alias string\n"
          "%%  Type string\n%%  Name string\n%%EndEventDef\n"
          "%%EventDef PajeSetVariable 6\n%%  Time date\n%%  Type string\n"
          "%%  Container string\n%%  Value double\n%%EndEventDef\n");
  fprintf(f, "0 GPU 0 \"GPU\"\n");
  for (int s = 0; s < ST_COUNT; s++)
    fprintf(f, "1 S_%s GPU \"%s stream\"\n", stream_name((enum stream)s),
            stream_name((enum stream)s));
  static const char *const vars[4] = {"nvl_tx", "nvl_rx", "nic_tx", "nic_rx"};
  static const char *const vnames[4] = {
      "NVLink send GB/s", "NVLink receive GB/s", "NIC send GB/s",
      "NIC receive GB/s"};
  for (int v = 0; v < 4; v++)
    fprintf(f, "5 %s GPU \"%s\"\n", vars[v], vnames[v]);
  for (long r = 0; r < t->ranks; r++)
    fprintf(f, "2 0 gpu%ld GPU 0 \"gpu%ld\"\n", r, r);
  /* Current value of each variable, to write absolute values (SetVariable)
   * rounded so that sums of many flows print as exact zeros. */
  double *val = xcalloc((size_t)(4 * t->ranks + 4), sizeof *val);
  char name[96];
  for (long i = 0; i < nrec; i++) {
    const struct record *x = &rec[i];
    if (x->is_start == 2) {
      double *v = &val[4 * x->rank + x->var];
      *v += x->delta;
      if (*v < 1e-9 && *v > -1e-9)
        *v = 0;
      fprintf(f, "6 %.9f %s gpu%d %.6f\n", x->time, vars[x->var], x->rank,
              *v);
      continue;
    }
    if (x->is_start) {
      struct event e = {0, 0, x->rank, x->task, x->stream};
      name_of(task_of(t, &e), name, sizeof name);
    } else {
      snprintf(name, sizeof name, "idle");
    }
    fprintf(f, "4 %.9f S_%s gpu%d \"%s\"\n", x->time,
            stream_name((enum stream)x->stream), x->rank, name);
  }
  for (long r = 0; r < t->ranks; r++)
    fprintf(f, "3 %.9f GPU gpu%ld\n", end, r);
  free(val);
  free(rec);
  return outfile_commit(&out, err);
}
