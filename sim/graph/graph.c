/*
 * graph.c - task graph storage and its text file format (traces/README.md).
 *
 * Invariant: a dependency always names an earlier task of the same program,
 * so every graph, built or read, is acyclic by construction; the reader
 * rejects forward references.
 */
#define _GNU_SOURCE
#include "sim/graph/graph.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sim/base/bounds.h"
#include "sim/base/infile.h"
#include "sim/base/outfile.h"
#include "sim/base/units.h"
#include "sim/base/xalloc.h"

static const char *const task_kinds[TK_COUNT] = {"kernel", "coll", "send",
                                                 "recv"};
static const char *const kernel_kinds[KK_COUNT] = {
    "gemm", "attn", "attn_bwd", "norm", "elemwise", "embed", "loss", "optim",
    "ggemm", "compress"};
static const char *const coll_ops[CO_COUNT] = {
    "allreduce", "reducescatter", "allgather", "alltoall", "broadcast",
    "sendrecv"};
static const char *const group_kinds[GK_COUNT] = {
    "tp", "dp", "emb", "shard", "repl", "ep", "edp", "cp", "dpcp", "edpcp",
    "t3x", "t3y", "t3z", "epn", "epx", "etp", "tpep"};
static const char *const phases[PH_COUNT] = {"fwd", "bwd", "recomp", "opt"};
static const char *const streams[ST_COUNT] = {"compute", "pp_send", "pp_recv",
                                              "dp", "ag", "cp", "t3",
                                              "ep"};

const char *task_kind_name(enum task_kind k) { return task_kinds[k]; }
const char *kernel_kind_name(enum kernel_kind k) { return kernel_kinds[k]; }
const char *coll_op_name(enum coll_op c) { return coll_ops[c]; }
const char *group_kind_name(enum group_kind k) { return group_kinds[k]; }
const char *phase_name(enum phase p) { return phases[p]; }
const char *stream_name(enum stream s) { return streams[s]; }

/* GEMM roles (graph.h): index + 1 is the role's name bits. */
static const char *const role_names[] = {
    "qkv",        "proj",       "fc1",        "fc2",        "router",
    "expert_fc1", "expert_fc2", "shared_fc1", "shared_fc2", "q_down",
    "q_up",       "q",          "kv_down",    "kv_up",      "lm_head"};
#define N_ROLES ((int)(sizeof role_names / sizeof *role_names))
static const char *const passes[GP_COUNT] = {"fwd", "dgrad", "wgrad"};

uint8_t graph_role(const char *name, bool routed, enum gemm_pass pass)
{
  char buf[32];
  if (routed) { /* the routed experts' fc1/fc2 */
    snprintf(buf, sizeof buf, "expert_%s", name);
    name = buf;
  }
  for (int i = 0; i < N_ROLES; i++)
    if (strcmp(role_names[i], name) == 0)
      return (uint8_t)((i + 1) | (int)pass << 6);
  return 0;
}

const char *graph_role_str(uint8_t role, char *buf, size_t n)
{
  int i = (role & 0x3f) - 1, pass = role >> 6;
  if (i < 0 || i >= N_ROLES || pass >= GP_COUNT) {
    snprintf(buf, n, "%s", "");
    return buf;
  }
  snprintf(buf, n, "%s.%s", role_names[i], passes[pass]);
  return buf;
}

uint8_t graph_role_parse(const char *s)
{
  const char *dot = strrchr(s, '.');
  if (!dot)
    return 0;
  for (int p = 0; p < GP_COUNT; p++)
    if (strcmp(dot + 1, passes[p]) == 0)
      for (int i = 0; i < N_ROLES; i++)
        if (strlen(role_names[i]) == (size_t)(dot - s) &&
            strncmp(role_names[i], s, (size_t)(dot - s)) == 0)
          return (uint8_t)((i + 1) | p << 6);
  return 0;
}

void graph_set_role(struct graph *g, long s, long i, uint8_t role)
{
  g->prog[s].tasks[i].role = role;
}

struct graph *graph_new(long stages)
{
  struct graph *g = xcalloc(1, sizeof *g);
  g->stages = stages;
  g->prog = xcalloc((size_t)stages, sizeof *g->prog);
  return g;
}

void graph_free(struct graph *g)
{
  if (!g)
    return;
  for (long s = 0; g->prog && s < g->stages; s++) {
    free(g->prog[s].tasks);
    free(g->prog[s].deps);
    free(g->prog[s].host);
  }
  free(g->prog);
  free(g);
}

long graph_add(struct graph *g, long s, const struct task *t)
{
  struct program *p = &g->prog[s];
  if (p->n == p->cap) {
    p->cap = p->cap ? 2 * p->cap : 1024;
    p->tasks = xreallocarray(p->tasks, (size_t)p->cap, sizeof *p->tasks);
    if (p->host) {
      p->host = xreallocarray(p->host, (size_t)p->cap, sizeof *p->host);
      memset(p->host + p->n, 0, (size_t)(p->cap - p->n) * sizeof *p->host);
    }
  }
  struct task *d = &p->tasks[p->n];
  *d = *t;
  d->dep0 = (uint32_t)p->ndeps;
  d->ndep = 0;
  return p->n++;
}

void graph_dep(struct graph *g, long s, long on)
{
  struct program *p = &g->prog[s];
  if (p->ndeps == p->depcap) {
    p->depcap = p->depcap ? 2 * p->depcap : 1024;
    p->deps = xreallocarray(p->deps, (size_t)p->depcap, sizeof *p->deps);
  }
  p->deps[p->ndeps++] = (uint32_t)on;
  p->tasks[p->n - 1].ndep++;
}

void graph_host(struct graph *g, long s, long task, uint32_t ops, bool sync)
{
  struct program *p = &g->prog[s];
  if (!p->host)
    p->host = xcalloc((size_t)p->cap, sizeof *p->host);
  uint32_t have = p->host[task] & GRAPH_HOST_OPS;
  uint32_t n = ops > GRAPH_HOST_OPS - have ? GRAPH_HOST_OPS : have + ops;
  p->host[task] = n | (p->host[task] & GRAPH_HOST_SYNC) |
                  (sync ? GRAPH_HOST_SYNC : 0);
}

double graph_total_flops(const struct graph *g, int phase_mask)
{
  const struct graph_layout *l = &g->layout;
  double ranks_per_stage = (double)(l->tp * l->cp * l->dp);
  double total = 0;
  for (long s = 0; s < g->stages; s++) {
    double st = 0;
    const struct program *p = &g->prog[s];
    for (long i = 0; i < p->n; i++)
      if (p->tasks[i].kind == TK_KERNEL && (phase_mask >> p->tasks[i].phase) & 1)
        st += p->tasks[i].flops;
    total += st * ranks_per_stage;
  }
  return total;
}

long graph_total_tasks(const struct graph *g)
{
  long n = 0;
  for (long s = 0; s < g->stages; s++)
    n += g->prog[s].n;
  return n;
}

/* ---- text format ------------------------------------------------------ */

static const char *const dim_names[4] = {"tp", "cp", "dp", "pp"};

static void put_num(FILE *f, double v)
{
  char buf[48];
  units_fmt_exact(v, UNIT_NONE, buf, sizeof buf);
  fputc(' ', f);
  fputs(buf, f);
}

int graph_write(const struct graph *g, const char *path, struct weft_err *err)
{
  struct outfile out;
  int rc = outfile_open(&out, path, err);
  if (rc)
    return rc;
  FILE *f = out.f;
  const struct graph_layout *l = &g->layout;
  fprintf(f, "weft-graph 1\n");
  fprintf(f, "# One program per pipeline stage; see traces/README.md.\n");
  fprintf(f, "model %s\nplan %s\n", g->model, g->plan);
  if (l->t3[0] > 0)
    fprintf(f, "tensor3d %ld %ld %ld\n", l->t3[0], l->t3[1], l->t3[2]);
  if (l->ep_node > 0)
    fprintf(f, "ep_node %ld\n", l->ep_node);
  if (l->etp > 0) /* the expert groups (layout.h, etp) */
    fprintf(f, "etp %ld\n", l->etp);
  fprintf(f, "layout tp=%ld pp=%ld dp=%ld cp=%ld ep=%ld v=%ld order=%s-%s-%s-%s"
          " shard=%ld\n", l->tp, l->pp, l->dp, l->cp, l->ep, l->vchunks,
          dim_names[l->order[0]], dim_names[l->order[1]],
          dim_names[l->order[2]], dim_names[l->order[3]],
          l->shard ? l->shard : l->dp);
  fprintf(f, "tokens");
  put_num(f, g->tokens);
  fprintf(f, "\n");
  for (long s = 0; s < g->stages; s++) {
    const struct program *p = &g->prog[s];
    fprintf(f, "stage %ld tasks %ld deps %ld\n", s, p->n, p->ndeps);
    for (long i = 0; i < p->n; i++) {
      const struct task *t = &p->tasks[i];
      char rb[32]; /* a GEMM's role in the group column ("-": none) */
      const char *op = t->kind == TK_KERNEL ? kernel_kinds[t->op]
                       : t->kind == TK_COLL ? coll_ops[t->op]
                                            : "p2p";
      fprintf(f, "%s %s %s %s %s %d %d %d %d %u %u %u %u", task_kinds[t->kind],
              op, streams[t->stream], phases[t->phase],
              t->kind == TK_COLL ? group_kinds[t->group]
              : t->role          ? graph_role_str(t->role, rb, sizeof rb)
                                 : "-",
              t->peer,
              t->chunk, t->mb, t->layer, t->m, t->n, t->k, t->batch);
      put_num(f, t->flops);
      put_num(f, t->bytes);
      uint32_t h = graph_host_of(p, i);
      if (h) /* host work: "h<ops>", or "s<ops>" after a sync */
        fprintf(f, " %c%u", h & GRAPH_HOST_SYNC ? 's' : 'h',
                h & GRAPH_HOST_OPS);
      for (uint32_t d = 0; d < t->ndep; d++)
        fprintf(f, " %u", p->deps[t->dep0 + d]);
      fputc('\n', f);
    }
  }
  return outfile_commit(&out, err);
}

struct reader {
  FILE *f;
  const char *path;
  long line;
  char *buf;
  size_t cap;
  struct weft_err *err;
};

static int rerr(struct reader *r, const char *fmt, const char *arg)
{
  char msg[256];
  snprintf(msg, sizeof msg, fmt, arg);
  return weft_errf(r->err, WEFT_EINVAL, "%s:%ld: %s", r->path, r->line, msg);
}

/* Next non-comment line, without its newline; NULL at end of file. */
static char *next_line(struct reader *r)
{
  for (;;) {
    ssize_t n = getline(&r->buf, &r->cap, r->f);
    if (n < 0)
      return NULL;
    r->line++;
    while (n > 0 && (r->buf[n - 1] == '\n' || r->buf[n - 1] == '\r'))
      r->buf[--n] = '\0';
    if (r->buf[0] != '#')
      return r->buf;
  }
}

static int lookup(const char *const *names, int n, const char *w)
{
  for (int i = 0; i < n; i++)
    if (strcmp(names[i], w) == 0)
      return i;
  return -1;
}

/* Read a long in [lo, hi] from *s, advancing it. */
static int read_long(struct reader *r, char **s, long lo, long hi, long *out,
                     const char *what)
{
  char *end;
  errno = 0;
  long v = strtol(*s, &end, 10);
  if (end == *s || errno || v < lo || v > hi || (*end && *end != ' '))
    return rerr(r, "bad %s", what);
  *s = end;
  *out = v;
  return 0;
}

static int read_double(struct reader *r, char **s, double *out,
                       const char *what)
{
  char *end;
  double v = units_strtod(*s, &end);
  if (end == *s || !isfinite(v) || v < 0 || (*end && *end != ' '))
    return rerr(r, "bad %s", what);
  *s = end;
  *out = v;
  return 0;
}

static char *word(char **s)
{
  while (**s == ' ')
    (*s)++;
  if (!**s)
    return NULL;
  char *w = *s;
  while (**s && **s != ' ')
    (*s)++;
  if (**s)
    *(*s)++ = '\0';
  return w;
}

static int read_task(struct reader *r, struct graph *g, long s, char *line)
{
  struct task t;
  memset(&t, 0, sizeof t);
  char *p = line;
  char *w = word(&p);
  int k = w ? lookup(task_kinds, TK_COUNT, w) : -1;
  if (k < 0)
    return rerr(r, "unknown task kind '%s'", w ? w : "");
  t.kind = (uint8_t)k;
  w = word(&p);
  int op = !w ? -1
           : k == TK_KERNEL ? lookup(kernel_kinds, KK_COUNT, w)
           : k == TK_COLL   ? lookup(coll_ops, CO_COUNT, w)
                            : (strcmp(w, "p2p") == 0 ? 0 : -1);
  if (op < 0)
    return rerr(r, "unknown operation '%s'", w ? w : "");
  t.op = (uint8_t)op;
  w = word(&p);
  int st = w ? lookup(streams, ST_COUNT, w) : -1;
  if (st < 0)
    return rerr(r, "unknown stream '%s'", w ? w : "");
  t.stream = (uint8_t)st;
  w = word(&p);
  int ph = w ? lookup(phases, PH_COUNT, w) : -1;
  if (ph < 0)
    return rerr(r, "unknown phase '%s'", w ? w : "");
  t.phase = (uint8_t)ph;
  w = word(&p);
  /* A GEMM's role shares the group column (written only where set). */
  int gr = !w ? -1 : k == TK_COLL ? lookup(group_kinds, GK_COUNT, w)
           : strcmp(w, "-") == 0 ? 0
           : k == TK_KERNEL && (op == KK_GEMM || op == KK_GGEMM)
               ? (graph_role_parse(w) ? graph_role_parse(w) : -1)
               : -1;
  if (gr < 0 && w && k == TK_KERNEL)
    return rerr(r, "unknown GEMM role '%s' (want NAME.fwd, NAME.dgrad or "
                "NAME.wgrad on a gemm or ggemm, or -)", w);
  if (gr < 0)
    return rerr(r, "unknown group '%s'", w ? w : "");
  if (k == TK_COLL && gr >= GK_T3X && gr <= GK_T3Z && g->layout.t3[0] == 0)
    return rerr(r, "group '%s' without a tensor3d line", w);
  t.group = (uint8_t)gr;
  long v;
  int rc;
  /* The same column holds a kernel's held SMs (graph.h). */
  if ((rc = read_long(r, &p, k == TK_KERNEL ? 0 : -1,
                      k == TK_KERNEL ? INT8_MAX : 1, &v, "peer")))
    return rc;
  t.peer = (int8_t)v;
  if ((rc = read_long(r, &p, -1, WEFT_MAX_LAYERS, &v, "chunk")))
    return rc;
  t.chunk = (int16_t)v;
  if ((rc = read_long(r, &p, -1, WEFT_MAX_MICROBATCHES, &v, "micro-batch")))
    return rc;
  t.mb = (int32_t)v;
  if ((rc = read_long(r, &p, -1, WEFT_MAX_LAYERS, &v, "layer")))
    return rc;
  t.layer = (int32_t)v;
  uint32_t *dims[4] = {&t.m, &t.n, &t.k, &t.batch};
  for (int i = 0; i < 4; i++) {
    if ((rc = read_long(r, &p, 0, UINT32_MAX, &v, "shape")))
      return rc;
    *dims[i] = (uint32_t)v;
  }
  if ((rc = read_double(r, &p, &t.flops, "flops")) ||
      (rc = read_double(r, &p, &t.bytes, "bytes")))
    return rc;
  long idx = g->prog[s].n;
  if (idx >= WEFT_MAX_TASKS)
    return rerr(r, "more tasks than the limit%s", "");
  graph_add(g, s, &t);
  while (*p == ' ')
    p++;
  if (*p == 'h' || *p == 's') {
    bool sync = *p == 's';
    p++;
    if ((rc = read_long(r, &p, 0, GRAPH_HOST_OPS, &v, "host operations")))
      return rc;
    graph_host(g, s, idx, (uint32_t)v, sync);
  }
  while (*p) {
    if ((rc = read_long(r, &p, 0, idx - 1, &v, "dependency (must name an "
                        "earlier task)")))
      return rc;
    graph_dep(g, s, v);
  }
  return 0;
}

/* What graph_read has read so far. */
struct read_state {
  struct graph *g; /* NULL until the layout line */
  struct graph_layout l;
  char model[WEFT_GRAPH_TEXT], plan[WEFT_GRAPH_TEXT];
  double tokens;
  long stage, expect_tasks; /* the current stage (-1 before the first) */
};

static int read_tensor3d(struct reader *r, const char *line,
                         struct graph_layout *l)
{
  long x[3];
  if (sscanf(line, "tensor3d %ld %ld %ld", &x[0], &x[1], &x[2]) != 3 ||
      x[0] < 1 || x[1] < 1 || x[2] < 1 || x[0] > WEFT_MAX_DEGREE ||
      x[1] > WEFT_MAX_DEGREE || x[2] > WEFT_MAX_DEGREE ||
      x[0] * x[1] > WEFT_MAX_DEGREE ||
      x[0] * x[1] * x[2] > WEFT_MAX_DEGREE)
    return rerr(r, "malformed tensor3d line%s", "");
  for (int i = 0; i < 3; i++)
    l->t3[i] = x[i];
  return 0;
}

/* The layout line, into *l (which may hold a tensor3d grid already). */
static int read_layout(struct reader *r, const char *line,
                       struct graph_layout *l)
{
  char o[4][8];
  int got = sscanf(line, "layout tp=%ld pp=%ld dp=%ld cp=%ld ep=%ld "
                   "v=%ld order=%2[a-z]-%2[a-z]-%2[a-z]-%2[a-z] "
                   "shard=%ld", &l->tp, &l->pp, &l->dp, &l->cp, &l->ep,
                   &l->vchunks, o[0], o[1], o[2], o[3], &l->shard);
  if (got == 10)
    l->shard = l->dp;
  if (got < 10 || l->shard < 1 || l->dp % l->shard != 0)
    return rerr(r, "malformed layout line%s", "");
  long degs[] = {l->tp, l->pp, l->dp, l->cp, l->ep, l->vchunks};
  for (int i = 0; i < 6; i++)
    if (degs[i] < 1 || degs[i] > WEFT_MAX_DEGREE)
      return rerr(r, "parallel degree out of range%s", "");
  for (int i = 0; i < PD_COUNT; i++) {
    int d = lookup(dim_names, PD_COUNT, o[i]);
    if (d < 0)
      return rerr(r, "unknown dimension '%s' in order", o[i]);
    l->order[i] = (enum pdim)d;
  }
  if (l->t3[0] > 0 && l->t3[0] * l->t3[1] * l->t3[2] != l->tp)
    return rerr(r, "tensor3d grid is not the layout's TP%s", "");
  if (l->ep_node > 0 && l->ep % l->ep_node != 0)
    return rerr(r, "ep_node does not divide the layout's EP%s", "");
  if (l->etp > 0 && (l->tp * l->cp * l->dp) % (l->etp * l->ep) != 0)
    return rerr(r, "etp x ep does not divide a stage's ranks%s", "");
  return 0;
}

/* A line of the header, before the graph exists; the layout line ends the
 * header and creates st->g. */
static int read_header_line(struct reader *r, char *line,
                            struct read_state *st)
{
  char *p;
  int rc;
  if (strncmp(line, "model ", 6) == 0) {
    snprintf(st->model, sizeof st->model, "%s", line + 6);
    return 0;
  }
  if (strncmp(line, "plan ", 5) == 0) {
    snprintf(st->plan, sizeof st->plan, "%s", line + 5);
    return 0;
  }
  if (strncmp(line, "tensor3d ", 9) == 0)
    return read_tensor3d(r, line, &st->l);
  if (strncmp(line, "ep_node ", 8) == 0) { /* DeepEP's node (layout.h) */
    p = line + 8;
    return read_long(r, &p, 1, WEFT_MAX_DEGREE, &st->l.ep_node, "ep_node");
  }
  if (strncmp(line, "etp ", 4) == 0) { /* expert TP's groups (layout.h) */
    p = line + 4;
    return read_long(r, &p, 1, WEFT_MAX_DEGREE, &st->l.etp, "etp");
  }
  if (strncmp(line, "tokens ", 7) == 0) {
    p = line + 7;
    return read_double(r, &p, &st->tokens, "tokens");
  }
  if (strncmp(line, "layout ", 7) != 0)
    return rerr(r, "expected model, plan, tensor3d, tokens or layout, got "
                "'%.40s'", line);
  if ((rc = read_layout(r, line, &st->l)))
    return rc;
  st->g = graph_new(st->l.pp);
  st->g->layout = st->l;
  snprintf(st->g->model, sizeof st->g->model, "%s", st->model);
  snprintf(st->g->plan, sizeof st->g->plan, "%s", st->plan);
  return 0;
}

/* A line after the header: tokens, a stage header or a task. */
static int read_body_line(struct reader *r, char *line, struct read_state *st)
{
  if (strncmp(line, "tokens ", 7) == 0) {
    char *p = line + 7;
    return read_double(r, &p, &st->tokens, "tokens");
  }
  if (strncmp(line, "stage ", 6) != 0) {
    if (st->stage < 0)
      return rerr(r, "task before the first stage header%s", "");
    return read_task(r, st->g, st->stage, line);
  }
  long s, nt, nd;
  if (sscanf(line, "stage %ld tasks %ld deps %ld", &s, &nt, &nd) != 3 ||
      s != st->stage + 1 || s >= st->g->stages || nt < 0 ||
      nt > WEFT_MAX_TASKS || nd < 0)
    return rerr(r, "bad or out-of-order stage header%s", "");
  if (st->stage >= 0 && st->g->prog[st->stage].n != st->expect_tasks)
    return rerr(r, "previous stage has the wrong number of tasks%s", "");
  st->stage = s;
  st->expect_tasks = nt;
  return 0;
}

struct graph *graph_read(const char *path, struct weft_err *err)
{
  struct reader r = {.path = path, .err = err};
  r.f = infile_open(path, err);
  if (!r.f)
    return NULL;
  struct read_state st = {.stage = -1};
  int rc = 0;
  char *line = next_line(&r);
  if (!line || strcmp(line, "weft-graph 1") != 0)
    rc = rerr(&r, "not a weft graph version 1 (first line must be "
              "'weft-graph 1')%s", "");
  while (!rc && (line = next_line(&r)))
    rc = st.g ? read_body_line(&r, line, &st)
              : read_header_line(&r, line, &st);
  if (!rc && !st.g)
    rc = rerr(&r, "no layout line%s", "");
  else if (!rc && (st.stage != st.g->stages - 1 ||
                   st.g->prog[st.stage].n != st.expect_tasks))
    rc = rerr(&r, "truncated graph: missing stages or tasks%s", "");
  free(r.buf);
  fclose(r.f);
  if (rc) {
    graph_free(st.g);
    return NULL;
  }
  st.g->tokens = st.tokens;
  return st.g;
}

bool graph_equal(const struct graph *a, const struct graph *b)
{
  if (memcmp(&a->layout, &b->layout, sizeof a->layout) != 0 ||
      a->stages != b->stages || a->tokens != b->tokens)
    return false;
  for (long s = 0; s < a->stages; s++) {
    const struct program *p = &a->prog[s], *q = &b->prog[s];
    if (p->n != q->n || p->ndeps != q->ndeps)
      return false;
    if (p->n && memcmp(p->tasks, q->tasks, (size_t)p->n * sizeof *p->tasks))
      return false;
    if (p->ndeps && memcmp(p->deps, q->deps, (size_t)p->ndeps * sizeof *p->deps))
      return false;
    for (long i = 0; i < p->n; i++)
      if (graph_host_of(p, i) != graph_host_of(q, i))
        return false;
  }
  return true;
}
