/*
 * closedform.c - the literature's closed-form estimate (closedform.h).
 */
#include "workloads/closedform.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "platforms/topo.h"
#include "sim/base/xalloc.h"
#include "workloads/costmodel.h"

/* Where a group of ranks sits: members on the rank's node, nodes, and the
 * leaves and pods those nodes hang off. */
struct span {
  long n, per_node, nodes, leaves, pods;
};

static int cmp_long(const void *a, const void *b)
{
  long x = *(const long *)a, y = *(const long *)b;
  return (x > y) - (x < y);
}

/* Distinct values of v[0..n) (sorts v). */
static long distinct(long *v, long n)
{
  qsort(v, (size_t)n, sizeof *v, cmp_long);
  long d = n > 0;
  for (long i = 1; i < n; i++)
    d += v[i] != v[i - 1];
  return d;
}

/* The span of `n` ranks (the array is overwritten) as seen from `rank`. */
static void span_of(const struct cluster *c, long *ranks, long n, long rank,
                    struct span *out)
{
  long own = rank / c->gpus_per_node, same = 0;
  for (long i = 0; i < n; i++) {
    ranks[i] /= c->gpus_per_node; /* now the job's nodes */
    same += ranks[i] == own;
    ranks[i] = cluster_place(c, (int)ranks[i]); /* the fabric's */
  }
  out->n = n;
  out->per_node = same;
  out->nodes = distinct(ranks, n);
  for (long i = 0; i < n; i++)
    ranks[i] /= c->nodes_per_leaf;
  out->leaves = distinct(ranks, n);
  for (long i = 0; i < n; i++)
    ranks[i] /= c->leaves_per_pod;
  out->pods = distinct(ranks, n);
}

static void group_span(const struct graph_layout *l, const struct cluster *c,
                       enum group_kind gk, long rank, struct span *out)
{
  struct layout_group grp;
  layout_group(l, gk, rank, &grp);
  long *ranks = xcalloc((size_t)grp.n, sizeof *ranks);
  for (long i = 0; i < grp.n; i++)
    ranks[i] = layout_member(l, gk, grp.leader, i);
  span_of(c, ranks, grp.n, rank, out);
  free(ranks);
}

/* Bandwidth per GPU of the group's slowest level, and one step's latency. */
static void level(const struct cluster *c, const struct span *sp,
                  double *beta, double *alpha)
{
  if (sp->nodes <= 1) {
    *beta = c->gpu.nvlink_bw_Bps;
    *alpha = c->nvlink_lat_s;
    return;
  }
  double nic = c->nic.bw_Bps * c->nics_per_node *
               (double)(sp->per_node < 1 ? 1 : sp->per_node) /
               c->gpus_per_node;
  if (sp->per_node > 1 && nic > c->gpu.nvlink_bw_Bps)
    nic = c->gpu.nvlink_bw_Bps;
  /* The fabric's own limit (a dragonfly's local links, topo.h). */
  const struct topo_ops *f = topo_fabric(c->topology);
  if (f->span_bw_Bps)
    nic = f->span_bw_Bps(c, sp->n, sp->leaves, nic);
  *beta = nic;
  *alpha = 2 * c->nic.lat_s +
           f->span_hops(sp->leaves, sp->pods) * c->switch_lat_s;
}

/* Switch ports an inter-node byte crosses, over a ring of the span's
 * nodes: two per switch, one switch within a leaf, three for the edges
 * that leave it, five for those that leave the pod. */
static double ports_per_byte(const struct span *sp)
{
  double N = (double)sp->nodes;
  return 2 + 4 * (double)(sp->leaves > 1 ? sp->leaves : 0) / N +
         4 * (double)(sp->pods > 1 ? sp->pods : 0) / N;
}

/* Steps and wire bytes per rank of a collective of `n` ranks on `S`. */
static void ring_counts(enum coll_op op, double n, double S, double *steps,
                        double *wire)
{
  switch (op) {
  case CO_ALLREDUCE:
    *steps = 2 * (n - 1);
    *wire = 2 * (n - 1) / n * S;
    break;
  case CO_BROADCAST:
    *steps = n - 1;
    *wire = S;
    break;
  case CO_SENDRECV:
    *steps = 1;
    *wire = S;
    break;
  default: /* reduce-scatter, all-gather, all-to-all */
    *steps = n - 1;
    *wire = (n - 1) / n * S;
    break;
  }
}

/* Alpha-beta time of `op` on `bytes` over a group spanning `sp`, and the
 * wire bytes per rank. */
static double comm_time(const struct cluster *c, const struct span *sp,
                        enum coll_op op, double bytes, double *wire)
{
  double steps, beta, alpha;
  ring_counts(op, (double)sp->n, bytes, &steps, wire);
  level(c, sp, &beta, &alpha);
  if (sp->nodes > 1 && (op == CO_ALLTOALL || op == CO_SENDRECV)) {
    /* Each GPU sends its own share through its own NIC: no pooling of
     * the node's NICs as a ring's channels do. */
    double own = c->nic.bw_Bps * c->nics_per_node / c->gpus_per_node;
    double n = (double)sp->n, k = (double)sp->per_node;
    double off = op == CO_ALLTOALL ? (n - k) / n * bytes : bytes;
    double on = op == CO_ALLTOALL ? (k - 1) / n * bytes : 0;
    double a = off / own, b = on / c->gpu.nvlink_bw_Bps;
    return steps * alpha + (a > b ? a : b);
  }
  return steps * alpha + *wire / beta;
}

double closed_form_coll_s(const struct cluster *c,
                          const struct graph_layout *l, long rank,
                          enum group_kind gk, enum coll_op op, double bytes)
{
  struct span sp;
  group_span(l, c, gk, rank, &sp);
  double wire;
  return sp.n < 2 ? 0 : comm_time(c, &sp, op, bytes, &wire);
}

double closed_form_send_s(const struct cluster *c, long rank, long peer,
                          double bytes)
{
  long pair[2] = {rank, peer};
  struct span sp;
  span_of(c, pair, 2, rank, &sp);
  double wire;
  return comm_time(c, &sp, CO_SENDRECV, bytes, &wire);
}

struct stage_sum {
  double fwdbwd, optim;   /* roofline compute by part of the iteration */
  double front, side;     /* exposed and side-stream communication */
  double comm;            /* all communication */
};

static double roofline(const struct cluster *c, enum dtype dt,
                       const struct task *t)
{
  double peak = c->gpu.peak_flops[cost_kernel_dtype(dt, t)];
  if (!(peak > 0)) /* a precision the GPU lacks: FP32, as the cost model */
    peak = c->gpu.peak_flops[DTYPE_FP32];
  double f = t->flops > 0 && peak > 0 ? t->flops / peak : 0;
  double m = t->bytes / c->gpu.hbm_bw_Bps;
  return f > m ? f : m;
}

static void stage_eval(const struct graph *g, long s, const struct cluster *c,
                       enum dtype dt, long *mb_max, struct stage_sum *out,
                       struct closed_form *cf)
{
  const struct graph_layout *l = &g->layout;
  long coord[PD_COUNT] = {0};
  coord[PD_PP] = s;
  long rank = layout_rank(l, coord);
  long per_stage = layout_ranks(l) / l->pp;
  struct span spans[GK_COUNT];
  bool have[GK_COUNT] = {false};
  /* The pipeline neighbours' spans (one node or two). */
  struct span p2p[2];
  for (int d = 0; d < 2; d++) {
    long c2[PD_COUNT] = {0};
    c2[PD_PP] = (s + (d ? l->pp - 1 : 1)) % l->pp;
    long pair[2] = {rank, layout_rank(l, c2)};
    span_of(c, pair, 2, rank, &p2p[d]);
  }
  memset(out, 0, sizeof *out);
  const struct program *pr = &g->prog[s];
  for (long i = 0; i < pr->n; i++) {
    const struct task *t = &pr->tasks[i];
    if (t->kind == TK_KERNEL) {
      double r = roofline(c, dt, t);
      if (t->phase == PH_OPT)
        out->optim += r;
      else
        out->fwdbwd += r;
      if (t->mb > *mb_max)
        *mb_max = t->mb;
      continue;
    }
    if (t->kind == TK_RECV)
      continue; /* the matching send carries the transfer */
    const struct span *sp;
    double groups;
    enum coll_op op = CO_SENDRECV;
    if (t->kind == TK_SEND) {
      sp = &p2p[t->peer < 0];
      groups = (double)per_stage;
    } else {
      enum group_kind gk = (enum group_kind)t->group;
      if (!have[gk]) {
        group_span(l, c, gk, rank, &spans[gk]);
        have[gk] = true;
      }
      sp = &spans[gk];
      op = (enum coll_op)t->op;
      groups = (double)per_stage / (double)sp->n;
    }
    if (sp->n < 2 && t->kind == TK_COLL)
      continue;
    double wire, time = comm_time(c, sp, op, t->bytes, &wire);
    out->comm += time;
    if (t->stream == ST_DP || t->stream == ST_AG || t->stream == ST_CP)
      out->side += time;
    else
      out->front += time;
    if (sp->nodes > 1) {
      /* Bytes leaving nodes: a send crosses once per sending rank; a ring
       * sends its per-rank wire bytes out of each node once; an
       * all-to-all sends each member's share bound for other nodes. */
      double bytes;
      if (t->kind == TK_SEND)
        bytes = (double)per_stage * t->bytes;
      else if (op == CO_ALLTOALL)
        bytes = (double)per_stage * t->bytes *
                (double)(sp->n - sp->per_node) / (double)sp->n;
      else if (op == CO_BROADCAST) /* a chain crosses nodes - 1 times */
        bytes = groups * (double)(sp->nodes - 1) * t->bytes;
      else
        bytes = groups * (double)sp->nodes * wire;
      cf->nic_bytes += bytes;
      cf->port_bytes += bytes * ports_per_byte(sp);
    }
  }
}

double closed_form_bubble_share(long pp, long v, long m)
{
  double P = (double)pp, V = v > 0 ? (double)v : 1, M = (double)m;
  if (m < pp)
    return (V * (P - M) + M - 1) / (V * M);
  return (P - 1) / (V * M);
}

void closed_form_eval(const struct graph *g, const struct cluster *c,
                      enum dtype dt, struct closed_form *out)
{
  struct closed_form cf = {0};
  long mb_max = 0;
  double busy = 0, tail = 0;
  for (long s = 0; s < g->stages; s++) {
    struct stage_sum st;
    stage_eval(g, s, c, dt, &mb_max, &st, &cf);
    double side_excess = st.side > st.fwdbwd ? st.side - st.fwdbwd : 0;
    double work = st.fwdbwd + st.front;
    if (work >= busy) {
      busy = work;
      cf.compute_s = st.fwdbwd + st.optim;
      cf.comm_s = st.comm;
      cf.exposed_s = st.front + side_excess;
    }
    if (st.optim + side_excess > tail)
      tail = st.optim + side_excess;
  }
  const struct graph_layout *l = &g->layout;
  cf.bubble_s = busy * closed_form_bubble_share(l->pp, l->vchunks, mb_max + 1);
  cf.iteration_s = busy + cf.bubble_s + tail;
  *out = cf;
}

void closed_form_ddp(const struct graph *g, const struct cluster *c,
                     enum dtype dt, struct ddp_model *out)
{
  memset(out, 0, sizeof *out);
  const struct graph_layout *l = &g->layout;
  enum group_kind gg = layout_grad_group(l);
  const struct program *pr = &g->prog[0];
  for (long i = 0; i < pr->n; i++) {
    const struct task *t = &pr->tasks[i];
    if (t->kind == TK_KERNEL) {
      double x = cost_kernel(&c->gpu, dt, -1, t, NULL);
      if (t->op == KK_COMPRESS)
        out->codec_s += x;
      else if (t->phase == PH_OPT)
        out->optim_s += x;
      else if (t->phase == PH_FWD)
        out->fwd_s += x;
      else
        out->bwd_s += x;
    } else if (t->kind == TK_COLL && t->stream == ST_DP && t->group == gg) {
      out->comm_s += closed_form_coll_s(c, l, 0, gg, (enum coll_op)t->op,
                                        t->bytes);
      out->dp_bytes += t->bytes;
    }
  }
  out->iteration_s = out->fwd_s + fmax(out->bwd_s, out->comm_s) +
                     out->codec_s + out->optim_s;
}
