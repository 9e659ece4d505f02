/*
 * engine.c - event-driven replay of a task graph on SimGrid (engine.h).
 *
 * Invariants: each stream of a rank but the receive stream has at most one
 * task in flight; a task of such a stream at position k is complete iff
 * done[s] > k, which is how dependencies are checked without per-task state.
 * Receives are all posted at once (irecv) and complete in any order, so
 * they carry one completion flag each (rdone).  Collective and
 * transfer instances are found by key (group, sequence) or (sender,
 * receiver, micro-batch, virtual stage, direction) in one hash table.
 *
 * Collectives are planned and expanded by coll.c; this file starts what
 * coll_plan_make says (phases of flows, delays in the bridge's calendar)
 * and completes the members when the last of it ends.
 *
 * All state of a replay is in one struct engine, passed explicitly (the
 * SimGrid completion callback gets it as its context), so that one process
 * can run several replays one after another on the same platform; times
 * are measured from the replay's start.
 */
#include "sim/engine.h"

#include <simgrid/engine.h>
#include <simgrid/host.h>
#include <xbt/sysdep.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "platforms/catalog.h"
#include "platforms/platgen.h"
#include "platforms/topo.h"
#include "sim/base/xalloc.h"
#include "sim/sgbridge.h"
#include "sim/symmetry.h"

void engine_params_default(struct engine_params *p)
{
  memset(p, 0, sizeof *p);
  p->dtype = DTYPE_BF16;
  p->attn_kernel = -1; /* the GPU's default */
  p->nvlink_eff = 0; /* the cluster's node type says (catalog) */
  p->nic_eff = 0;    /* the node type says (catalog) */
  p->coll_lat_s = -1; /* the node type says (catalog) */
  p->lat_ll128 = COLL_LAT_LL128;
  p->lat_ll = COLL_LAT_LL;
  p->lat_nvls = COLL_LAT_NVLS;
  p->ring_loss = -1; /* the node type says (catalog) */
  p->ll128_eff = COLL_LL128_EFF;
  p->ll_eff = COLL_LL_EFF;
  p->fidelity = FID_FLOW;
  p->nvls_eff = 0; /* the node type says (catalog) */
  p->tree_bw = COLL_TREE_BW;
  p->algo = CA_AUTO;
  p->nccl_hops = true;
}

enum { TAG_KERNEL, TAG_INST, TAG_FLOW };

struct inst;

/* A traced flow: reported to on_flow when it completes. */
struct ftag {
  int type; /* TAG_FLOW */
  struct inst *in;
  long src, dst;
  double bytes, start;
};

struct stage_info {
  long n;
  int32_t *pos;               /* task -> position in its stream */
  int32_t *list[ST_COUNT];    /* stream -> task indices in order */
  long len[ST_COUNT];
  int32_t *cseq;              /* task -> sequence among its group's colls */
  double *dur;                /* kernel durations */
  double kind_s[KK_COUNT];    /* their sum by kind of kernel */
  uint8_t *target;            /* task -> another task depends on it */
};

struct ktag {
  int type; /* TAG_KERNEL */
  int32_t rank, task;
};

struct rank_state {
  int32_t stage;
  int32_t next[ST_COUNT];
  int32_t done[ST_COUNT];
  uint8_t busy[ST_COUNT];
  double started[ST_COUNT];
  int32_t merged;             /* kernels run as the current execution */
  uint8_t *rdone;             /* receives, by position: complete */
  int computing;
  int comm_active;
  int32_t comm_by[CC_COUNT];  /* comm_active by kind */
  double last_t, compute, overlapped, exposed, end;
  double overlapped_by[CC_COUNT], exposed_by[CC_COUNT];
  struct ktag ktag;
  /* The critical path (breakdown only), by task: when its segment began
   * (its start; a collective's or transfer's: the last member's arrival),
   * when it ended, and the task whose end let it begin (crit_pack, -1 for
   * none). */
  double *crit_s0, *crit_end;
  int64_t *crit_pred;
  int32_t last_task;          /* the last task to complete */
};

/* A collective or transfer instance: its members as they arrive, then what
 * coll_plan_make said to simulate. */
struct inst {
  int type; /* TAG_INST */
  int n, arrived, remaining;
  int need;       /* members to wait for under replica symmetry, else 0 */
  int sym_n;      /* > 1: one representative of a TP group of sym_n */
  int copies;     /* under replica symmetry, a collective inside node 0
                     stands for this many (every node's), else 0 */
  int phase, nphases;
  bool timer_done;
  double extra_s; /* delay after the last phase */
  struct coll_plan *plan; /* collectives with phases of flows, else NULL */
  uint64_t k0, k1, k2;
  double crit_s0;    /* the last member's arrival */
  int64_t crit_pred;  /* what let that member start */
  int32_t *ranks, *tasks;
  struct inst *hnext;
};

#define HBITS 18
#define HSIZE (1u << HBITS)

struct engine {
  const struct graph *g;
  const struct cluster *c;
  struct engine_params p;   /* the caller's, borrowed callbacks */
  struct coll_model cm;     /* the collective model, resolved */
  struct stage_info *st;    /* g->stages of them */
  struct rank_state *rs;    /* nranks of them */
  sg_host_t *hosts;
  long nranks;
  struct inst **table;
  long kernels, flows;
  double t0;                /* simulated time when the replay started */
  /* Progress: tasks completed of all the simulated ranks', wall clock. */
  long tasks_done, tasks_total;
  double wall0, wall_next;
  /* TP symmetry (symmetry.h): the TP ranks of a group run the same
   * program on the same time line when TP groups fill whole nodes (their
   * collectives have the node's NVLinks to themselves) and every GPU has
   * its own NIC (their DP and PP flows use disjoint NICs).  Then only TP
   * rank 0 of each group is simulated: the same results with TP times
   * fewer activities.  Links a node's GPUs share carry 1/TP of their
   * bandwidth meanwhile (symmetry_thin). */
  bool sym;
  long rank_step; /* 1, or TP under symmetry */
  /* Links thinned for TP symmetry (symmetry_thin), to restore; NULL when
   * none. */
  struct platload_thinned *thinned;
  /* Replica symmetry: the data-parallel replicas run the same program on
   * alike nodes of a symmetric fabric (the conditions of
   * coll_model.sym_fabric), so only node 0's ranks are simulated.
   * Collectives wait for their simulated members; their rings and trees
   * emit the flows of their first node (coll.h, rep). */
  bool rsym;
  bool ep_across;   /* expert groups span nodes (couriers, engine_run) */
  long copies;      /* ranks each simulated rank stands for: the nodes
                       under replica symmetry, else 1 (< INT_MAX) */
  long *sim;        /* the ranks simulated (TP rank 0 only under sym) */
  long nsim;
  /* The critical path: the task whose completion is being handled (the
   * cause of every task that starts meanwhile), -1 at the start. */
  bool bd;
  int64_t cause;
};

static int64_t crit_pack(long rank, long task)
{
  return (int64_t)rank << 32 | (int64_t)(uint32_t)task;
}

static const char *const comm_class_names[CC_COUNT] = {"tp", "pp", "dp", "cp",
                                                       "ep"};

const char *comm_class_name(enum comm_class c)
{
  return c >= 0 && c < CC_COUNT ? comm_class_names[c] : "?";
}

/* The kind of communication a collective or transfer is. */
static enum comm_class task_class(const struct task *t)
{
  if (t->kind != TK_COLL)
    return CC_PP;
  switch ((enum group_kind)t->group) {
  case GK_TP:
  case GK_T3X:
  case GK_T3Y:
  case GK_T3Z:
    return CC_TP;
  case GK_CP:
    return CC_CP;
  case GK_EP:
    return CC_EP;
  default: /* DP, EMB, SHARD, REPL, DPCP, EDP, EDPCP */
    return CC_DP;
  }
}

/* ---- hash table of instances ------------------------------------------ */

static uint64_t hash3(uint64_t a, uint64_t b, uint64_t c)
{
  uint64_t h = a * 0x9E3779B97F4A7C15ull ^ (b + 0x632BE59BD9B4E019ull) * 31 ^
               c * 0xC2B2AE3D27D4EB4Full;
  h ^= h >> 29;
  return h & (HSIZE - 1);
}

static struct inst *inst_get(struct engine *E, uint64_t a, uint64_t b,
                             uint64_t c, int n)
{
  uint64_t h = hash3(a, b, c);
  for (struct inst *i = E->table[h]; i; i = i->hnext)
    if (i->k0 == a && i->k1 == b && i->k2 == c)
      return i;
  /* One block: the instance, then its members' ranks and tasks. */
  struct inst *i = xcalloc(1, sizeof *i + 2 * (size_t)n * sizeof(int32_t));
  i->type = TAG_INST;
  i->k0 = a;
  i->k1 = b;
  i->k2 = c;
  i->n = n;
  i->ranks = (int32_t *)(i + 1);
  i->tasks = i->ranks + n;
  for (int k = 0; k < n; k++)
    i->ranks[k] = -1;
  i->hnext = E->table[h];
  E->table[h] = i;
  return i;
}

/* Take `in` out of the table (its key can then be used again). */
static void inst_unlink(struct engine *E, struct inst *in)
{
  uint64_t h = hash3(in->k0, in->k1, in->k2);
  for (struct inst **pp = &E->table[h]; *pp; pp = &(*pp)->hnext)
    if (*pp == in) {
      *pp = in->hnext;
      break;
    }
}

static void inst_free(struct engine *E, struct inst *in)
{
  inst_unlink(E, in);
  free(in->plan);
  free(in);
}

/* ---- metrics ---------------------------------------------------------- */

static double now(const struct engine *E) { return sgb_now() - E->t0; }

/* Communication time dt shared among the kinds in flight by count. */
static void by_kind(const struct rank_state *r, double *acc, double dt)
{
  for (int k = 0; k < CC_COUNT; k++)
    if (r->comm_by[k])
      acc[k] += dt * r->comm_by[k] / r->comm_active;
}

static void account(const struct engine *E, struct rank_state *r)
{
  double t = now(E), dt = t - r->last_t;
  if (dt > 0) {
    if (r->computing) {
      r->compute += dt;
      if (r->comm_active) {
        r->overlapped += dt;
        by_kind(r, r->overlapped_by, dt);
      }
    } else if (r->comm_active) {
      r->exposed += dt;
      by_kind(r, r->exposed_by, dt);
    }
  }
  r->last_t = t;
}

/* A collective or transfer of rank r starts moving data. */
static void comm_begins(const struct engine *E, struct rank_state *r,
                        const struct task *t)
{
  account(E, r);
  r->comm_active++;
  r->comm_by[task_class(t)]++;
}

/* ---- task life -------------------------------------------------------- */

static void try_advance(struct engine *E, long rank);

static const struct task *task_of(const struct engine *E, long rank,
                                  long task)
{
  return &E->g->prog[E->rs[rank].stage].tasks[task];
}

static double wall_now(void)
{
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

/* Report progress when a second of wall time has passed since the last. */
static void progress(struct engine *E)
{
  double w = wall_now();
  if (w < E->wall_next)
    return;
  E->wall_next = w + 1;
  E->p.on_progress(E->p.ctx, now(E), E->tasks_done, E->tasks_total,
                   w - E->wall0);
}

static void complete(struct engine *E, long rank, long task)
{
  struct rank_state *r = &E->rs[rank];
  const struct task *t = task_of(E, rank, task);
  account(E, r);
  if (t->kind == TK_KERNEL) {
    r->computing = 0;
  } else {
    r->comm_active--;
    r->comm_by[task_class(t)]--;
  }
  r->busy[t->stream] = 0;
  long first_pos = r->done[t->stream];
  r->done[t->stream] += t->kind == TK_KERNEL ? r->merged : 1;
  if (t->kind == TK_RECV)
    r->rdone[E->st[r->stage].pos[task]] = 1;
  r->end = now(E);
  E->tasks_done += t->kind == TK_KERNEL ? r->merged : 1;
  if (E->p.on_progress && (E->tasks_done & 4095) == 0)
    progress(E);
  if (E->bd) {
    r->last_task = (int32_t)task;
    r->crit_end[task] = r->end;
  }
  if (t->kind == TK_KERNEL && r->merged > 1 && (E->bd || E->p.on_task)) {
    /* Kernels run as one execution on a host nothing else computes on:
     * each took its own duration, one after the other, and began where
     * the one before it ended (its cause on the critical path). */
    const struct stage_info *si = &E->st[r->stage];
    double s = r->started[t->stream];
    for (long k = 0; k < r->merged; k++) {
      long tk = si->list[ST_COMPUTE][first_pos + k];
      double e = k + 1 == r->merged ? r->end : s + si->dur[tk];
      if (E->bd) {
        if (k > 0) {
          r->crit_s0[tk] = s;
          r->crit_pred[tk] =
              crit_pack(rank, si->list[ST_COMPUTE][first_pos + k - 1]);
        }
        r->crit_end[tk] = e;
      }
      if (E->p.on_task)
        E->p.on_task(E->p.ctx, rank, tk, s, e);
      s = e;
    }
  } else if (E->p.on_task) {
    E->p.on_task(E->p.ctx, rank, task, r->started[t->stream], r->end);
  }
  int64_t cause = E->cause;
  E->cause = crit_pack(rank, task);
  try_advance(E, rank);
  E->cause = cause;
}

static void inst_complete(struct engine *E, struct inst *in)
{
  int n = in->n;
  int32_t *ranks = in->ranks, *tasks = in->tasks;
  for (int k = 0; k < n; k++) {
    if (tasks[k] < 0)
      continue;
    struct rank_state *r = &E->rs[ranks[k]];
    if (E->bd) { /* every member's segment began with the last arrival */
      r->crit_s0[tasks[k]] = in->crit_s0;
      r->crit_pred[tasks[k]] = in->crit_pred;
    }
    /* A receive was posted long before: what it did began when its
     * transfer did. */
    if (task_of(E, ranks[k], tasks[k])->kind == TK_RECV)
      r->started[ST_PP_RECV] = in->crit_s0;
  }
  /* Out of the table first: the members' next tasks may start new
   * instances; `in` itself is freed once they have. */
  inst_unlink(E, in);
  for (int k = 0; k < n; k++)
    if (tasks[k] >= 0)
      complete(E, ranks[k], tasks[k]);
  free(in->plan);
  free(in);
}

static int node_of(const struct engine *E, long rank)
{
  return cluster_node_of(E->c, (int)rank);
}

static void start_phase(struct engine *E, struct inst *in);

/* Whether `rank` is simulated under replica symmetry (node 0's ranks). */
static bool simulated(const struct engine *E, long rank)
{
  return !E->rsym || node_of(E, rank) == 0;
}

/* One activity of an instance ended: the next phase, the delay after the
 * last one, or the members' completion. */
static void inst_step(struct engine *E, struct inst *in)
{
  if (--in->remaining > 0)
    return;
  if (in->phase + 1 < in->nphases) {
    in->phase++;
    start_phase(E, in);
    return;
  }
  if (!in->timer_done && in->extra_s > 0) {
    in->timer_done = true;
    in->remaining = 1;
    sgb_delay(in->extra_s, in);
    return;
  }
  inst_complete(E, in);
}

static void on_done(void *ctx, void *tag)
{
  struct engine *E = ctx;
  int type = *(int *)tag;
  if (type == TAG_KERNEL) {
    struct ktag *k = tag;
    complete(E, k->rank, k->task);
    return;
  }
  if (type == TAG_FLOW) {
    struct ftag *f = tag;
    E->p.on_flow(E->p.ctx, f->src, f->dst, f->bytes, f->start, now(E));
    tag = f->in;
    free(f);
  }
  inst_step(E, tag);
}

/* Start a flow of `wire_bytes` (efficiencies applied) between two ranks. */
static void start_flow(struct engine *E, struct inst *in, long src, long dst,
                       double wire_bytes)
{
  in->remaining++;
  E->flows += in->copies > 1 ? in->copies : 1;
  if (E->p.on_flow) {
    struct ftag *f = xmalloc(sizeof *f);
    *f = (struct ftag){TAG_FLOW, in, src, dst, wire_bytes, now(E)};
    sgb_comm(E->hosts[src], E->hosts[dst], wire_bytes, f);
    return;
  }
  sgb_comm(E->hosts[src], E->hosts[dst], wire_bytes, in);
}

/* ---- collectives ------------------------------------------------------ */

struct launch {
  struct engine *E;
  struct inst *in;
};

static void emit_flow(void *ctx, int src, int dst, double wire_bytes)
{
  struct launch *l = ctx;
  start_flow(l->E, l->in, l->in->ranks[src], l->in->ranks[dst], wire_bytes);
}

static double route_lat(void *ctx, long a, long b)
{
  struct engine *E = ctx;
  return sg_host_get_route_latency(E->hosts[a], E->hosts[b]);
}

static struct coll_call call_of(struct engine *E, struct inst *in)
{
  int k = 0;
  while (in->tasks[k] < 0) /* a simulated member (replica symmetry) */
    k++;
  const struct task *t = task_of(E, in->ranks[k], in->tasks[k]);
  return (struct coll_call){(enum coll_op)t->op, in->n, in->ranks, t->bytes,
                            in->sym_n, route_lat, E,
                            t->stream != ST_COMPUTE};
}

/* Start the flows of the current phase (and phase 0's delay), with a guard
 * so that flows ending at once do not complete the phase early. */
static void start_phase(struct engine *E, struct inst *in)
{
  in->remaining = 1;
  if (in->phase == 0 && in->plan->delay0_s > 0) {
    in->remaining++;
    sgb_delay(in->plan->delay0_s, in);
  }
  struct coll_call call = call_of(E, in);
  struct launch l = {E, in};
  coll_phase_flows(&E->cm, &call, in->plan, in->phase, emit_flow, &l);
  inst_step(E, in); /* drop the guard */
}

/* The member (rank, task) arrived last at `in`: the critical path goes
 * through it. */
static void last_arrival(struct engine *E, struct inst *in, long rank,
                         long task)
{
  in->crit_s0 = now(E);
  if (E->bd)
    in->crit_pred = E->rs[rank].crit_pred[task];
}

/* Every member of a collective has arrived: plan it and start it. */
static void launch_coll(struct engine *E, struct inst *in)
{
  bool local = E->rsym; /* every member simulated: inside node 0 */
  for (int k = 0; k < in->n; k++) {
    if (in->tasks[k] < 0) {
      local = false;
      continue; /* not simulated (replica symmetry) */
    }
    struct rank_state *r = &E->rs[in->ranks[k]];
    comm_begins(E, r, task_of(E, in->ranks[k], in->tasks[k]));
  }
  struct coll_call call = call_of(E, in);
  struct coll_plan plan;
  coll_plan_make(&E->cm, &call, &plan);
  in->extra_s = plan.extra_s;
  /* Flow counts are scaled by rank_step at the end (the TP ranks not
   * simulated); a TP group's representative already stands for all of
   * them.  Under replica symmetry a closed form inside node 0 stands for
   * the same on every node. */
  long cf = in->sym_n > 1 ? plan.closed_flows / E->rank_step
                          : plan.closed_flows;
  E->flows += cf;
  if (E->rsym && plan.shape == CS_CLOSED)
    E->flows += cf * (E->copies - 1);
  else if (local) /* inside node 0: its flows stand for every node's */
    in->copies = (int)E->copies;
  in->phase = 0;
  in->nphases = plan.nphases;
  if (plan.nphases > 0) {
    in->plan = xmalloc(sizeof *in->plan);
    *in->plan = plan;
    start_phase(E, in);
    return;
  }
  /* A closed form (the delay alone) or nothing at all. */
  in->remaining = 1;
  in->timer_done = plan.shape == CS_NONE;
  inst_step(E, in);
}

static void arrive_coll(struct engine *E, long rank, long task)
{
  struct rank_state *r = &E->rs[rank];
  const struct task *t = task_of(E, rank, task);
  struct layout_group grp;
  layout_group(&E->g->layout, (enum group_kind)t->group, rank, &grp);
  /* Under TP symmetry (one simulated rank per node-wide TP block), a TP
   * collective, or one over a Tensor3D group inside the block, runs as a
   * representative of its group's size. */
  bool sym_tp = task_class(t) == CC_TP && E->sym;
  int n = sym_tp ? 1 : (int)grp.n, slot = sym_tp ? 0 : (int)grp.slot;
  struct inst *in = inst_get(E, (uint64_t)t->group << 56 | (uint64_t)grp.leader,
                             (uint64_t)E->st[r->stage].cseq[task], 0, n);
  if (E->rsym && !sym_tp && in->arrived == 0) {
    /* Every member, simulated or not, for the plan; the others have no
     * task (-1) and are not waited for. */
    in->need = 0;
    for (int k = 0; k < n; k++) {
      long mr = layout_member(&E->g->layout, (enum group_kind)t->group,
                              grp.leader, k);
      in->ranks[k] = (int32_t)mr;
      in->tasks[k] = -1;
      in->need += simulated(E, mr);
    }
  }
  in->ranks[slot] = (int32_t)rank;
  in->tasks[slot] = (int32_t)task;
  if (sym_tp)
    in->sym_n = (int)grp.n;
  if (++in->arrived == (in->need ? in->need : in->n)) {
    last_arrival(E, in, rank, task);
    launch_coll(E, in);
  }
}

static void arrive_p2p(struct engine *E, long rank, long task)
{
  struct rank_state *r = &E->rs[rank];
  const struct task *t = task_of(E, rank, task);
  long pp = E->g->layout.pp;
  long vs = (long)t->chunk * pp + r->stage, vpeer = vs + t->peer;
  long c[PD_COUNT];
  layout_coords(&E->g->layout, rank, c);
  c[PD_PP] = vpeer % pp;
  long peer = layout_rank(&E->g->layout, c);
  bool sender = t->kind == TK_SEND;
  long src = sender ? rank : peer, dst = sender ? peer : rank;
  long vsrc = sender ? vs : vpeer;
  struct inst *in = inst_get(E, 1ull << 63 | (uint64_t)src, (uint64_t)dst,
                             (uint64_t)t->mb << 24 | (uint64_t)vsrc << 1 |
                                 (t->phase == PH_FWD ? 0 : 1), 2);
  int slot = sender ? 0 : 1;
  in->ranks[slot] = (int32_t)rank;
  in->tasks[slot] = (int32_t)task;
  if (++in->arrived < 2)
    return;
  last_arrival(E, in, rank, task);
  for (int k = 0; k < 2; k++)
    comm_begins(E, &E->rs[in->ranks[k]], t);
  if (E->cm.free_comm || t->bytes <= 0) {
    in->remaining = 1;
    in->timer_done = true;
    inst_step(E, in);
    return;
  }
  in->extra_s = E->cm.coll_lat_s;
  in->remaining = 0;
  start_flow(E, in, src, dst,
             coll_wire_bytes(&E->cm, src, dst, t->bytes, 1.0, 1.0));
}

/* ---- streams ---------------------------------------------------------- */

static bool deps_done(const struct rank_state *r, const struct stage_info *si,
                      const struct task *t, const struct program *pr)
{
  for (uint32_t d = 0; d < t->ndep; d++) {
    long j = pr->deps[t->dep0 + d];
    if (pr->tasks[j].kind == TK_RECV ? !r->rdone[si->pos[j]]
                                     : r->done[pr->tasks[j].stream] <= si->pos[j])
      return false;
  }
  return true;
}

/* Start a kernel.  Consecutive kernels that nothing else waits for and
 * that wait for nothing but their predecessor run as one execution: same
 * time, far fewer activities.  Not when a task hook wants every kernel. */
static void start_kernel(struct engine *E, long rank, long task)
{
  struct rank_state *r = &E->rs[rank];
  const struct stage_info *si = &E->st[r->stage];
  const struct program *pr = &E->g->prog[r->stage];
  double dur = si->dur[task];
  long last = task;
  r->merged = 1;
  while (!si->target[last] &&
         r->next[ST_COMPUTE] < si->len[ST_COMPUTE]) {
    long nx = si->list[ST_COMPUTE][r->next[ST_COMPUTE]];
    if (pr->tasks[nx].kind != TK_KERNEL || pr->tasks[nx].ndep)
      break;
    dur += si->dur[nx];
    last = nx;
    r->next[ST_COMPUTE]++;
    r->merged++;
  }
  account(E, r);
  r->computing = 1;
  r->ktag.task = (int32_t)last;
  E->kernels += r->merged;
  sgb_delay(dur, &r->ktag);
}

static void start(struct engine *E, long rank, long task)
{
  struct rank_state *r = &E->rs[rank];
  const struct task *t = task_of(E, rank, task);
  r->busy[t->stream] = 1;
  r->started[t->stream] = now(E);
  r->next[t->stream]++;
  if (E->bd) {
    r->crit_s0[task] = r->started[t->stream];
    r->crit_pred[task] = E->cause;
  }
  switch (t->kind) {
  case TK_KERNEL:
    start_kernel(E, rank, task);
    break;
  case TK_COLL:
    arrive_coll(E, rank, task);
    break;
  default:
    arrive_p2p(E, rank, task);
  }
}

static void try_advance(struct engine *E, long rank)
{
  struct rank_state *r = &E->rs[rank];
  const struct stage_info *si = &E->st[r->stage];
  const struct program *pr = &E->g->prog[r->stage];
  bool again = true;
  while (again) {
    again = false;
    /* Receives are posted as soon as they are reached, all of them: a
     * receive only waits for its sender, never for another receive. */
    while (r->next[ST_PP_RECV] < si->len[ST_PP_RECV])
      start(E, rank, si->list[ST_PP_RECV][r->next[ST_PP_RECV]]);
    for (int s = 0; s < ST_COUNT; s++) {
      if (s == ST_PP_RECV || r->busy[s] || r->next[s] >= si->len[s])
        continue;
      long task = si->list[s][r->next[s]];
      if (!deps_done(r, si, &pr->tasks[task], pr))
        continue;
      start(E, rank, task);
      again = true; /* a zero-time task may have completed: look again */
      break;
    }
  }
}

/* ---- set-up, results, release ----------------------------------------- */

static void prepare_stage(struct stage_info *si, const struct program *pr,
                          const struct cluster *c, const struct engine_params *p)
{
  si->n = pr->n;
  si->pos = xcalloc((size_t)pr->n + 1, sizeof *si->pos);
  si->cseq = xcalloc((size_t)pr->n + 1, sizeof *si->cseq);
  si->dur = xcalloc((size_t)pr->n + 1, sizeof *si->dur);
  si->target = xcalloc((size_t)pr->n + 1, sizeof *si->target);
  for (long d = 0; d < pr->ndeps; d++)
    si->target[pr->deps[d]] = 1;
  for (int s = 0; s < ST_COUNT; s++) {
    si->list[s] = xcalloc((size_t)pr->n + 1, sizeof *si->list[s]);
    si->len[s] = 0;
  }
  int32_t seq[GK_COUNT] = {0};
  for (long i = 0; i < pr->n; i++) {
    const struct task *t = &pr->tasks[i];
    si->pos[i] = (int32_t)si->len[t->stream];
    si->list[t->stream][si->len[t->stream]++] = (int32_t)i;
    if (t->kind == TK_COLL)
      si->cseq[i] = seq[t->group]++;
    if (t->kind == TK_KERNEL) {
      si->dur[i] = cost_kernel(&c->gpu, p->dtype, p->attn_kernel, t, p->table);
      si->kind_s[t->op] += si->dur[i];
    }
  }
}

/* The collective model from the caller's parameters and the cluster. */
static void model_init(struct coll_model *m, const struct engine_params *p,
                       const struct cluster *c)
{
  *m = (struct coll_model){
      .algo = p->algo, .fidelity = p->fidelity, .nvlink_eff = p->nvlink_eff,
      .nic_eff = p->nic_eff, .nvls_eff = p->nvls_eff, .tree_bw = p->tree_bw,
      .coll_lat_s = p->coll_lat_s, .lat_ll128 = p->lat_ll128,
      .lat_ll = p->lat_ll, .lat_nvls = p->lat_nvls, .ring_loss = p->ring_loss,
      .ll128_eff = p->ll128_eff, .ll_eff = p->ll_eff,
      .free_comm = p->free_comm, .nccl_hops = p->nccl_hops,
      .closed_form = !p->force_flows && !p->on_flow &&
                     c->nvl_oversub == 1};
  coll_model_resolve(m, c);
}

/* The host of every rank, from one pass over SimGrid's hosts: looking each
 * up by name (sg_host_by_name) walks the zones of the platform one by one
 * (NetZoneImpl::get_host_by_name_or_null recurses into every child zone),
 * which made finding 16384 hosts among 2048 node zones a third of a run. */
/* Rank r runs on the fabric's GPU cluster_place_gpu(r): its own index
 * when the job is packed, another node's GPU when it is spread. */
static int find_hosts(struct engine *E, struct weft_err *err)
{
  E->hosts = xcalloc((size_t)E->nranks, sizeof *E->hosts);
  long ng = E->c->gpus > E->nranks ? E->c->gpus : E->nranks;
  sg_host_t *by_gpu = xcalloc((size_t)ng, sizeof *by_gpu);
  size_t n = sg_host_count();
  sg_host_t *all = sg_host_list();
  for (size_t i = 0; i < n; i++) {
    long r = platgen_host_rank(sg_host_get_name(all[i]));
    if (r >= 0 && r < ng)
      by_gpu[r] = all[i];
  }
  xbt_free(all);
  int rc = 0;
  for (long r = 0; r < E->nranks && !rc; r++) {
    long gi = cluster_place_gpu(E->c, (int)r);
    E->hosts[r] = gi < ng ? by_gpu[gi] : NULL;
    if (!E->hosts[r])
      rc = weft_errf(err, WEFT_EINVAL, "the platform has no host gpu%ld", gi);
  }
  free(by_gpu);
  return rc;
}

static int engine_setup(struct engine *E, const struct graph *g,
                        const struct cluster *c, const struct engine_params *p,
                        struct weft_err *err)
{
  E->g = g;
  E->c = c;
  E->p = *p;
  model_init(&E->cm, p, c);
  E->nranks = layout_ranks(&g->layout);
  E->table = xcalloc(HSIZE, sizeof *E->table);
  int rc = find_hosts(E, err);
  if (rc)
    return rc;
  E->st = xcalloc((size_t)g->stages, sizeof *E->st);
  for (long s = 0; s < g->stages; s++)
    prepare_stage(&E->st[s], &g->prog[s], c, p);
  E->t0 = sgb_now();
  E->rs = xcalloc((size_t)E->nranks, sizeof *E->rs);
  for (long r = 0; r < E->nranks; r++) {
    long co[PD_COUNT];
    layout_coords(&g->layout, r, co);
    struct rank_state *rs = &E->rs[r];
    rs->stage = (int32_t)co[PD_PP];
    rs->ktag.type = TAG_KERNEL;
    rs->ktag.rank = (int32_t)r;
    rs->rdone = xcalloc((size_t)E->st[rs->stage].len[ST_PP_RECV] + 1, 1);
  }
  /* The symmetric shortcuts (symmetry.h); TP symmetry thins the links a
   * node's GPUs share for the replay. */
  struct symmetry sy;
  symmetry_decide(&g->layout, c, p->force_flows || p->on_flow ||
                                     p->no_symmetry,
                  p->on_task != NULL, &sy);
  E->sym = sy.tp;
  E->rank_step = sy.rank_step;
  rc = symmetry_thin(&sy, g->layout.tp, &E->thinned, err);
  if (rc)
    return rc;
  E->ep_across = sy.ep_across;
  E->cm.sym_fabric = sy.fabric;
  E->rsym = sy.replicas;
  E->sim = xcalloc((size_t)E->nranks, sizeof *E->sim);
  for (long r = 0; r < E->nranks; r += E->rank_step)
    if (simulated(E, r))
      E->sim[E->nsim++] = r;
  E->copies = E->nranks / (E->nsim * E->rank_step);
  E->bd = p->breakdown;
  E->cause = -1;
  for (long i = 0; i < E->nsim; i++) {
    struct rank_state *rs = &E->rs[E->sim[i]];
    long n = E->st[rs->stage].n;
    E->tasks_total += n;
    if (E->bd) {
      rs->crit_s0 = xcalloc((size_t)n + 1, sizeof *rs->crit_s0);
      rs->crit_end = xcalloc((size_t)n + 1, sizeof *rs->crit_end);
      rs->crit_pred = xcalloc((size_t)n + 1, sizeof *rs->crit_pred);
      rs->last_task = -1;
    }
  }
  E->wall0 = wall_now();
  E->wall_next = E->wall0 + 1;
  return 0;
}

/* Idle time is what is left of the iteration; rounding in the sums
 * leaves a few ulps of either sign where there is none (no -0.0000 s in
 * the summary, no -5e-17 in the JSON): those become 0. */
static double idle_or_zero(double idle, double end)
{
  return fabs(idle) <= 1e-12 * end ? 0 : idle;
}

/* Each stage's time: means over its simulated ranks. */
static void collect_stages(const struct engine *E, double end,
                           struct engine_result *out)
{
  long S = E->g->stages;
  out->nstages = S;
  out->stages = xcalloc((size_t)S, sizeof *out->stages);
  for (long i = 0; i < E->nsim; i++) {
    const struct rank_state *r = &E->rs[E->sim[i]];
    struct engine_stage *st = &out->stages[r->stage];
    st->gpus++;
    st->compute_s += r->compute;
    for (int k = 0; k < CC_COUNT; k++) {
      st->overlapped_s[k] += r->overlapped_by[k];
      st->exposed_s[k] += r->exposed_by[k];
    }
    st->idle_s += end - r->compute - r->exposed;
  }
  for (long s = 0; s < S; s++) {
    struct engine_stage *st = &out->stages[s];
    double n = st->gpus ? (double)st->gpus : 1;
    st->compute_s /= n;
    st->idle_s = idle_or_zero(st->idle_s / n, end);
    for (int k = 0; k < CC_COUNT; k++) {
      st->overlapped_s[k] /= n;
      st->exposed_s[k] /= n;
    }
    for (int k = 0; k < KK_COUNT; k++)
      st->compute_by_kind_s[k] = st->gpus ? E->st[s].kind_s[k] : 0;
  }
}

/* Walk the critical path back from the last task to end. */
static void collect_path(const struct engine *E, struct engine_result *out)
{
  struct engine_path *P = &out->path;
  P->stage_s = xcalloc((size_t)E->g->stages, sizeof *P->stage_s);
  long last = -1;
  for (long i = 0; i < E->nsim; i++) {
    const struct rank_state *r = &E->rs[E->sim[i]];
    if (r->last_task >= 0 && (last < 0 || r->end > E->rs[last].end))
      last = E->sim[i];
  }
  int64_t cur = last < 0 ? -1 : crit_pack(last, E->rs[last].last_task);
  for (long guard = E->tasks_total; cur >= 0 && guard > 0; guard--) {
    long rank = (long)(cur >> 32), task = (long)(uint32_t)cur;
    const struct rank_state *r = &E->rs[rank];
    const struct task *t = task_of(E, rank, task);
    double seg = r->crit_end[task] - r->crit_s0[task];
    if (t->kind == TK_KERNEL)
      P->compute_by_kind_s[t->op] += seg;
    else
      P->comm_s[task_class(t)] += seg;
    P->stage_s[r->stage] += seg;
    P->total_s += seg;
    P->tasks++;
    cur = r->crit_pred[task];
  }
}

void engine_result_free(struct engine_result *r)
{
  free(r->stages);
  free(r->path.stage_s);
  r->stages = NULL;
  r->path.stage_s = NULL;
  r->nstages = 0;
}

/* Means over the simulated ranks; an error if a stream did not finish. */
static int engine_collect(const struct engine *E, struct engine_result *out,
                          struct weft_err *err)
{
  double end = 0, comp = 0, ov = 0, ex = 0, kind[KK_COUNT] = {0};
  long simulated = 0;
  for (long i = 0; i < E->nsim; i++) {
    long r = E->sim[i];
    const struct rank_state *st = &E->rs[r];
    for (int s = 0; s < ST_COUNT; s++)
      if (st->done[s] != E->st[st->stage].len[s])
        return weft_errf(err, WEFT_EINVAL, "replay stopped with rank %ld "
                         "waiting on its %s stream (a collective or transfer "
                         "whose peers never came: the graph is inconsistent)",
                         r, stream_name((enum stream)s));
    if (st->end > end)
      end = st->end;
    comp += st->compute;
    for (int k = 0; k < KK_COUNT; k++)
      kind[k] += E->st[st->stage].kind_s[k];
    ov += st->overlapped;
    ex += st->exposed;
    simulated++;
  }
  memset(out, 0, sizeof *out);
  out->iteration_s = end;
  out->compute_s = comp / simulated;
  out->overlapped_s = ov / simulated;
  out->exposed_s = ex / simulated;
  out->symmetric = E->sym;
  out->replicas = E->rsym;
  out->idle_s = idle_or_zero(end - out->compute_s - out->exposed_s, end);
  for (int k = 0; k < KK_COUNT; k++)
    out->compute_by_kind_s[k] = kind[k] / simulated;
  /* Activities stand for the whole job: scale the representatives'. */
  /* Under replica symmetry the other nodes ran node 0's kernels; of the
   * flows, the rings counted those they stand for (coll.h, rep). */
  out->kernels = E->kernels * (E->nranks / E->nsim);
  out->flows = E->flows * E->rank_step;
  if (E->bd) {
    collect_stages(E, end, out);
    collect_path(E, out);
  }
  return 0;
}

/* Free what engine_setup built, however far it got. */
static void engine_release(struct engine *E)
{
  for (long s = 0; E->st && s < E->g->stages; s++) {
    free(E->st[s].pos);
    free(E->st[s].cseq);
    free(E->st[s].dur);
    free(E->st[s].target);
    for (int k = 0; k < ST_COUNT; k++)
      free(E->st[s].list[k]);
  }
  free(E->st);
  free(E->sim);
  for (long r = 0; E->rs && r < E->nranks; r++) {
    free(E->rs[r].rdone);
    free(E->rs[r].crit_s0);
    free(E->rs[r].crit_end);
    free(E->rs[r].crit_pred);
  }
  free(E->rs);
  free(E->hosts);
  symmetry_restore(E->thinned);
  for (unsigned h = 0; E->table && h < HSIZE; h++)
    while (E->table[h])
      inst_free(E, E->table[h]);
  free(E->table);
}

int engine_run(const struct graph *g, const struct cluster *c,
               const struct engine_params *p, struct engine_result *out,
               struct weft_err *err)
{
  long ranks = layout_ranks(&g->layout);
  if (ranks > c->gpus)
    return weft_errf(err, WEFT_EINVAL, "the graph needs %ld GPUs, the "
                     "cluster has %d", ranks, c->gpus);
  if (p->algo == CA_TORUS && !topo_fabric(c->topology)->node_torus)
    return weft_errf(err, WEFT_EINVAL, "--collective: torus collectives run "
                     "on a torus fabric, and this cluster's is %s",
                     topology_name(c->topology));
  struct engine *E = xcalloc(1, sizeof *E);
  int rc = engine_setup(E, g, c, p, err);
  if (!rc) {
    /* Couriers (sgbridge.cpp) where expert all-to-alls cross nodes: there
     * the flows in flight number thousands. */
    sgb_couriers_auto(E->ep_across);
    sgb_init(on_done, E);
    for (long i = 0; i < E->nsim; i++)
      try_advance(E, E->sim[i]);
    sgb_run();
    rc = engine_collect(E, out, err);
  }
  engine_release(E);
  free(E);
  return rc;
}
