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
 * Under contention (engine_params.comm_contention) a running block of
 * kernels keeps how far it got (kidx, kfrac at kt); every start or end of
 * communication on its GPU brings it up to date at the old rates and
 * schedules its end anew at the new ones, the earlier delay left to fire
 * as stale (its generation is behind the rank's).  Under the host clock
 * (host_op_s > 0) the issue time of a task is a function of its index
 * alone (hcnt) and of the last sync point passed, so nothing per task is
 * stored; a stream whose next task is not yet issued waits on a delay.
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
#include "sim/platload.h"
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
  p->comm_contention = true;
  p->host_op_s = 0;
}

enum { TAG_KERNEL, TAG_INST, TAG_FLOW, TAG_KDYN, TAG_ISSUE, TAG_RESTART,
       TAG_TWIN };

/* A tag's type carries the index of its job above TAG_BITS (weft share:
 * several replays in one SimGrid run, engine_run_shared); 0 for a job
 * replayed alone, so its tags are what they always were. */
#define TAG_BITS 4
#define TAG_OF(E, t) ((t) | (E)->job << TAG_BITS)

struct inst;

/* A traced flow: reported to on_flow when it completes.  Where
 * on_flow_part samples it (flows_sample), also the instant it was last
 * sampled, the bytes it had left then, and its index in E->flive (-1:
 * not sampled). */
struct ftag {
  int type; /* TAG_FLOW */
  struct inst *in;
  long src, dst;
  double bytes, start;
  double last_t, left;
  long at;
};

/* The quotient's flow into a twin, waiting out its route's latency
 * (emit_twin). */
struct ttag {
  int type; /* TAG_TWIN */
  int k;    /* the twin */
  int mult;
  struct inst *in;
  long src;
  double bytes, lat_s;
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
  /* Host clock (host_op_s > 0, else NULL and -1): tasks that cost the
   * host an issue up to each task, the first optimizer-phase task (the
   * sync point, -1: none) and the tasks of each stream before it. */
  int32_t *hcnt;
  /* The sync points in task order: the first optimizer-phase task, and
   * the tasks the builder marked (graph.h, GRAPH_HOST_SYNC); for each,
   * the tasks of each stream issued before it. */
  int32_t *sync, (*sync_need)[ST_COUNT];
  long nsync;
  /* Contention (comm_contention, else NULL), by kernel: the time its HBM
   * bytes take at the cost model's efficiency, and its 128 x 128 output
   * tiles (0: not a GEMM). */
  double *cmem, *ctiles;
};

struct ktag {
  int type; /* TAG_KERNEL */
  int32_t rank, task;
};

/* A kernel block's delay under contention: stale (ignored) once the
 * block's remaining work was rescaled, which schedules a new one. */
struct kdyn {
  int type; /* TAG_KDYN */
  int32_t rank, task;
  uint32_t gen;
  struct kdyn *next; /* in the engine's free list */
};

/* The host's wait before issuing the next task of a stream. */
struct itag {
  int type; /* TAG_ISSUE */
  int32_t rank, stream;
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
  /* Contention (comm_contention): the NCCL kernels on this GPU, their
   * CTAs and, by link (0: NVLink, 1: NIC), their count and the sum of
   * their HBM bytes per byte on the link; the running block of kernels:
   * its first position in the compute stream, the kernel it is at, the
   * share of that kernel left and when that was last brought up to date;
   * the generation of its delay; kernel time by kind as it ran. */
  int32_t ctas;
  int32_t nlink[2];
  double fsum[2];
  int32_t kfirst, kidx;
  double kfrac, kt;
  uint32_t kgen;
  double *kind_act;
  /* Host clock (host_op_s > 0): the host issues task i at h_base +
   * host_op_s x (hcnt[i] - h_cnt0); the sync points it has passed;
   * by stream, 1 + the position whose issue it waited for. */
  double h_base;
  int32_t h_cnt0;
  long synced;
  int32_t hwaited[ST_COUNT];
  struct itag *itag;          /* ST_COUNT of them */
  /* Times its kernels take against the cost model's: 1, or its slow_gpu
   * factor over its gpu_sigma speed (cluster_gpu_slowdown; issue 41,
   * item 2). */
  double slow;
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
  /* Contention: the CTAs its NCCL kernel takes on each member's GPU, the
   * link its bytes cross (0: NVLink, 1: NIC) and HBM bytes per byte on
   * that link. */
  int32_t ctas;
  int link;
  double hbm_per_byte;
  int32_t *ranks, *tasks;
  struct inst *hnext;
};

/* The table starts at 2^HBITS buckets and doubles whenever it holds more
 * instances than buckets: instances waiting for their last member grow
 * with the ranks (about 245,000 at once on 65536 H100, Llama 3 405B TP 8
 * PP 16), and a fixed 2^18 made each lookup walk a chain that grew with
 * them. */
#define HBITS 18

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
  int hbits;   /* the table has 2^hbits buckets */
  long ninst;  /* instances in it */
  long kernels, flows;
  /* Traced flows in flight that on_flow_part samples (flows_sample). */
  struct ftag **flive;
  long nflive, flive_cap;
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
  bool stages;      /* replicas with pipelines: each stage's first node
                       simulated (symmetry.h) */
  long *posw;       /* with stages over several leaf groups: per node
                       position of a stage, the nodes of its class if it
                       is simulated (its class's first), else 0; NULL
                       otherwise (symmetry_stage_classes) */
  bool ep_across;   /* expert groups span nodes (couriers, engine_run) */
  long copies;      /* ranks each simulated rank stands for: the nodes
                       under replica symmetry, else 1 (< INT_MAX) */
  long *sim;        /* the ranks simulated (TP rank 0 only under sym) */
  long nsim;
  /* The critical path: the task whose completion is being handled (the
   * cause of every task that starts meanwhile), -1 at the start. */
  bool bd;
  int64_t cause;
  bool cont;        /* comm_contention */
  bool straggle;    /* GPUs or NICs differ (cluster_has_stragglers) */
  bool host;        /* host_op_s > 0 */
  double link_Bps[2]; /* NVLink's and the NIC's rates as collectives reach
                         them (coll_model) */
  struct kdyn *kfree;  /* fired kernel-block tags, for reuse (a block may
                          be rescheduled at every communication event) */
  /* Several jobs in one run (engine_run_shared; else 0 and NULL): this
   * job's index, the fabric GPU of each of its ranks, what the jobs
   * share, the tag of its restart, and its iterations' end times
   * (absolute simulated time). */
  int job;
  const int *place;
  struct shared *sh;
  int rtag;
  double *iter_end;
  long niter, iter_cap;
  double start_at;  /* absolute simulated time of its first iteration */
  long nwin;        /* iterations begun once every job had started */
};

/* Several jobs in one run (engine_run_shared). */
struct shared {
  int njobs;
  struct engine **E;
  long steps;      /* iterations each job must complete */
  int unfinished;  /* jobs with fewer than `steps` complete */
  double t_stop;   /* when the last of them completed its steps-th (absolute
                      simulated time), -1 before */
  double t_all;    /* when the last job started: iterations that begin
                      before are lead-in, not counted toward `steps` */
};

static void shared_iteration_done(struct engine *E);
static void shared_restart(struct engine *E);

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
  case GK_EPN:
  case GK_EPX:
  case GK_ETP: /* the MoE dispatcher's gathers over expert TP */
  case GK_TPEP:
    return CC_EP;
  default: /* DP, EMB, SHARD, REPL, DPCP, EDP, EDPCP */
    return CC_DP;
  }
}

/* ---- hash table of instances ------------------------------------------ */

/* splitmix64's finalizer (Steele, Lea and Flood, "Fast splittable
 * pseudorandom number generators", OOPSLA 2014; the constants of
 * Vigna's splitmix64.c): every bit of its input reaches every bit out. */
static uint64_t mix64(uint64_t z)
{
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

/* The bucket of a key.  Every bit of each part must reach the bucket: a
 * product keeps its low bits from the factor's low bits alone, so the
 * former a*K ^ b*31 ^ c*K' masked to 18 bits never saw a collective's
 * group kind (bits 56 up) nor most of a transfer's micro-batch, and at
 * 131072 GPUs walking the chains it made was 8 % of the run (perf).
 * Only lookups use the bucket: nothing iterates the table in an order
 * that reaches an output. */
static uint64_t hash3(uint64_t a, uint64_t b, uint64_t c);

static uint64_t bucket_of(const struct engine *E, const struct inst *i)
{
  return hash3(i->k0, i->k1, i->k2) >> (64 - E->hbits);
}

/* Twice the buckets, every instance moved (a chain's order is no output). */
static void table_grow(struct engine *E)
{
  size_t old = (size_t)1 << E->hbits;
  struct inst **t = E->table;
  E->hbits++;
  E->table = xcalloc((size_t)1 << E->hbits, sizeof *E->table);
  for (size_t h = 0; h < old; h++)
    while (t[h]) {
      struct inst *i = t[h];
      t[h] = i->hnext;
      uint64_t nb = bucket_of(E, i);
      i->hnext = E->table[nb];
      E->table[nb] = i;
    }
  free(t);
}

static uint64_t hash3(uint64_t a, uint64_t b, uint64_t c)
{
  return mix64(mix64(mix64(a) ^ b) ^ c);
}

static struct inst *inst_get(struct engine *E, uint64_t a, uint64_t b,
                             uint64_t c, int n)
{
  uint64_t h = hash3(a, b, c) >> (64 - E->hbits);
  for (struct inst *i = E->table[h]; i; i = i->hnext)
    if (i->k0 == a && i->k1 == b && i->k2 == c)
      return i;
  /* One block: the instance, then its members' ranks and tasks. */
  struct inst *i = xcalloc(1, sizeof *i + 2 * (size_t)n * sizeof(int32_t));
  i->type = TAG_OF(E, TAG_INST);
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
  if (++E->ninst > (1l << E->hbits))
    table_grow(E);
  return i;
}

/* Take `in` out of the table (its key can then be used again). */
static void inst_unlink(struct engine *E, struct inst *in)
{
  uint64_t h = bucket_of(E, in);
  for (struct inst **pp = &E->table[h]; *pp; pp = &(*pp)->hnext)
    if (*pp == in) {
      *pp = in->hnext;
      E->ninst--;
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
static void contention_change(struct engine *E, struct rank_state *r,
                              const struct inst *in, int sign);

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
      double e = k + 1 == r->merged ? r->end : s + si->dur[tk] * r->slow;
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
  if (E->sh && E->tasks_done == E->tasks_total)
    shared_iteration_done(E);
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
      contention_change(E, &E->rs[ranks[k]], in, -1);
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

/* Whether `rank` is simulated under replica symmetry (node 0's ranks;
 * with pipelines (stage and expert replica symmetry), also their
 * pipeline peers: the ranks whose place but for the stage is on node
 * 0). */
static bool simulated(const struct engine *E, long rank)
{
  if (!E->rsym)
    return true;
  if (E->stages) {
    long co[PD_COUNT];
    layout_coords(&E->g->layout, rank, co);
    co[PD_PP] = 0;
    rank = layout_rank(&E->g->layout, co);
  }
  if (E->posw)
    return E->posw[node_of(E, rank)] > 0;
  return node_of(E, rank) == 0;
}

/* The ranks a simulated rank stands for: its class's nodes where stages
 * have classes of positions, else every node's (E->copies). */
static long weight_of(const struct engine *E, long rank)
{
  if (!E->posw)
    return E->copies;
  long co[PD_COUNT];
  layout_coords(&E->g->layout, rank, co);
  co[PD_PP] = 0;
  return E->posw[node_of(E, layout_rank(&E->g->layout, co))];
}

/* ---- contention: compute beside communication ------------------------ */

/* While a collective or transfer runs on a GPU, NCCL's kernel for it is
 * resident there: one CTA per channel (NCCL 2.30 src/enqueue.cc,
 * topoGetAlgoInfo: "nc" channels of "nt" threads, each channel one block
 * of the kernel), holding those SMs for the whole collective, and its
 * bytes go through HBM.  A kernel beside it runs on the SMs left and
 * with the HBM bandwidth left.  NVIDIA's forum thread "Compute-
 * Communication Overlap Causes Severe GEMM Performance Degradation
 * because of Tail Effect" (forums.developer.nvidia.com/t/337991, H100)
 * measures both the CTAs (ncclAllGather launched 24 blocks) and the wave
 * effect (a 132-block GEMM needs a second wave and takes nearly twice as
 * long): tests/test_contention.c checks that case. */

/* CTAs of a large collective: 24 channels, the H100 measurement above.
 * NEEDSWORK: NCCL's channel count depends on the node's topology
 * (src/graph/search.cc, the SM90 speed arrays and dupChannels); one
 * figure for every GPU until a catalog field holds each node type's. */
#define COMM_CTAS 24
/* NCCL narrows a small collective to fewer channels: while nBytes <
 * nc x nt x threshold, nc-- (enqueue.cc), with Simple's nt = 512
 * threads (NCCL_SIMPLE_MAX_NTHREADS, src/include/device.h) and threshold
 * 64 bytes per thread (NCCL_SIMPLE_THREAD_THRESHOLD, src/include/comm.h). */
#define NCCL_SIMPLE_NT 512.0
#define NCCL_SIMPLE_THRESHOLD 64.0
/* A send or receive: NCCL's p2p channels per peer, 2 ("2 p2p channels per
 * peer", NCCL INFO line in github.com/NVIDIA/nccl/issues/1189;
 * src/graph/paths.cc, p2pnChannelsPerPeer). */
#define COMM_P2P_CTAS 2
/* DeepEP's dispatch and combine kernels run on a configured number of SMs
 * whatever their size: deepseek-ai/DeepEP deep_ep/buffer.py, Buffer.num_sms
 * (class default 20, Buffer.set_num_sms), which Megatron-Core sets to
 * --moe-flex-dispatcher-num-sms or 20 when unset (Megatron-LM
 * megatron/core/transformer/moe/token_dispatcher.py, _DeepepManager:
 * "None -> 20"). */
#define DEEPEP_SMS 20
/* The GEMM tile of the cost model's wave term (workloads/costmodel.c,
 * TILE): a GEMM's CTAs are its 128 x 128 output tiles. */
#define CONT_TILE 128.0

/* The CTAs of a collective of `n` members: NCCL's channel narrowing on
 * the bytes each rank hands it (nBytes: the per-rank count of an
 * all-gather, reduce-scatter or all-to-all, the buffer of the others). */
static int32_t coll_ctas(const struct task *t, int n)
{
  /* TP communication overlap (workloads/builder_tpo.c): Transformer
   * Engine's userbuffers kernels run on SMs the GEMM beside them gave up
   * for its whole run (its task.sms_held, in its cost), ring exchanges
   * and PyTorch's pulls on copy engines: no SMs taken here, HBM still. */
  if (t->kind == TK_COLL && t->stream == ST_T3 && t->group == GK_TP)
    return 0;
  /* DeepEP's two groups (workloads/builder_moe.c); only beside a kernel
   * under the all-to-all overlap (ST_EP), as on the compute stream the
   * kernels wait for them */
  if (t->kind == TK_COLL && (t->group == GK_EPX || t->group == GK_EPN))
    return DEEPEP_SMS;
  /* A send-receive ring (context parallelism's exchange) is NCCL send and
   * receive calls in one group: p2p channels, a send and a receive of a
   * channel sharing its block. */
  if (t->kind != TK_COLL || t->op == CO_SENDRECV)
    return COMM_P2P_CTAS;
  double nbytes = t->bytes;
  if ((t->op == CO_ALLGATHER || t->op == CO_REDUCE_SCATTER ||
       t->op == CO_ALLTOALL) && n > 1)
    nbytes /= n;
  double nc = floor(nbytes / (NCCL_SIMPLE_NT * NCCL_SIMPLE_THRESHOLD));
  return nc < 1 ? 1 : nc > COMM_CTAS ? COMM_CTAS : (int32_t)nc;
}

/* HBM bytes a member's GPU moves per byte its link carries.  A ring step
 * that reduces writes the incoming chunk (the peer's write into this
 * GPU's buffer), reads it and the local chunk, and sends the sum on: 3; a
 * step that copies writes the incoming chunk and reads it to forward it:
 * 2 (NCCL's recvReduceSend and recvCopySend primitives).  An all-reduce is
 * half of each; a send reads its bytes once, a receive writes them once. */
static double hbm_per_byte(const struct task *t)
{
  if (t->kind != TK_COLL)
    return 1;
  switch ((enum coll_op)t->op) {
  case CO_ALLREDUCE:
    return 2.5;
  case CO_REDUCE_SCATTER:
    return 3;
  default: /* all-gather, all-to-all, broadcast, send-receive rings */
    return 2;
  }
}

/* The HBM bandwidth the NCCL kernels on r's GPU consume: each link at the
 * rate collectives reach on it, shared by the collectives on it. */
static double hbm_use(const struct engine *E, const struct rank_state *r)
{
  double u = 0;
  for (int l = 0; l < 2; l++)
    if (r->nlink[l] > 0)
      u += E->link_Bps[l] * r->fsum[l] / r->nlink[l];
  return u;
}

/* How many times longer the compute part of kernel t takes with `ctas`
 * SMs taken: a GEMM's waves of tiles on the SMs left over its waves on
 * all of them (the cost model's wave term); any other kernel the SMs'
 * ratio. */
static double gemm_tiles(const struct task *t)
{
  if (t->op != KK_GEMM && t->op != KK_GGEMM)
    return 0;
  double b = t->batch > 1 ? (double)t->batch : 1.0;
  return t->op == KK_GGEMM
             ? b * ceil(t->m / CONT_TILE) * ceil(t->n / CONT_TILE)
             : ceil(b * t->m / CONT_TILE) * ceil(t->n / CONT_TILE);
}

static double sm_slowdown(const struct gpu_spec *g, double tiles,
                          int32_t ctas)
{
  if (ctas <= 0 || g->sms <= 0)
    return 1;
  double s = g->sms, s2 = s - ctas < 1 ? 1 : s - ctas;
  if (tiles <= 0)
    return s / s2;
  return ceil(tiles / s2) / ceil(tiles / s);
}

/* Kernel `task`'s duration on r's GPU as its communication stands.  The
 * cost model's time less the launch is the compute part when the FLOPs
 * bound it (its HBM bytes at the model's efficiency take less), else the
 * memory part; the compute part stretches by sm_slowdown, the memory part
 * by the HBM bandwidth over what is left of it. */
static double kernel_time_at(const struct engine *E,
                             const struct rank_state *r, long task)
{
  const struct stage_info *si = &E->st[r->stage];
  double d = si->dur[task];
  double u = hbm_use(E, r);
  if (!r->ctas && u <= 0)
    return d;
  const struct gpu_spec *g = &E->c->gpu;
  const struct task *t = &E->g->prog[r->stage].tasks[task];
  double base = d - g->launch_s;
  if (base <= 0 || g->hbm_bw_Bps <= 0)
    return d;
  /* Never binds on the catalog's GPUs (NVLink x 3 < HBM / 4); a guard
   * against a hand-made GPU whose links outrun its memory. */
  double avail = fmax(g->hbm_bw_Bps - u, 0.25 * g->hbm_bw_Bps);
  double mem = si->cmem[task];
  double stretch = g->hbm_bw_Bps / avail;
  if (t->flops > 0 && base > mem)
    return fmax(base * sm_slowdown(g, si->ctiles[task], r->ctas),
                mem * stretch) + g->launch_s;
  return base * stretch + g->launch_s;
}

/* The same on a straggler: a slower clock stretches the whole kernel
 * (slow_gpu). */
static double kernel_time(const struct engine *E, const struct rank_state *r,
                          long task)
{
  return kernel_time_at(E, r, task) * r->slow;
}

/* The position in the compute stream of the running block's kernel k. */
static long block_task(const struct engine *E, const struct rank_state *r,
                       long k)
{
  return E->st[r->stage].list[ST_COMPUTE][r->kfirst + k];
}

/* The running block's remaining time as communication stands now. */
static double block_left(const struct engine *E, const struct rank_state *r)
{
  double left = 0;
  for (long k = r->kidx; k < r->merged; k++)
    left += (k == r->kidx ? r->kfrac : 1) * kernel_time(E, r, block_task(E, r, k));
  return left;
}

/* Bring the running block up to now at the rates communication gave it
 * since r->kt (to its end: all that is left), crediting each kind of
 * kernel with the time it ran. */
static void block_advance(const struct engine *E, struct rank_state *r,
                          bool to_end)
{
  double el = now(E) - r->kt;
  r->kt = now(E);
  while (r->kidx < r->merged) {
    long tk = block_task(E, r, r->kidx);
    double T = kernel_time(E, r, tk), rem = r->kfrac * T;
    int op = E->g->prog[r->stage].tasks[tk].op;
    if (!to_end && el < rem) {
      r->kind_act[op] += el;
      r->kfrac -= el / T;
      return;
    }
    r->kind_act[op] += rem;
    el -= rem;
    r->kidx++;
    r->kfrac = 1;
    if (!to_end && r->kidx == r->merged) { /* rounding: its delay ends it */
      r->kidx = r->merged - 1;
      r->kfrac = 0;
      return;
    }
  }
}

/* (Re)schedule the running block's end; an earlier delay becomes stale. */
static void block_schedule(struct engine *E, struct rank_state *r)
{
  struct kdyn *k = E->kfree;
  if (k)
    E->kfree = k->next;
  else
    k = xmalloc(sizeof *k);
  *k = (struct kdyn){TAG_OF(E, TAG_KDYN), r->ktag.rank, r->ktag.task, ++r->kgen, NULL};
  sgb_delay(block_left(E, r), k);
}

/* Communication `in` starts (sign 1) or ends (-1) on r's GPU: the
 * running kernel's remaining work is rescaled. */
static void contention_change(struct engine *E, struct rank_state *r,
                              const struct inst *in, int sign)
{
  if (!E->cont)
    return;
  if (r->computing)
    block_advance(E, r, false);
  r->ctas += sign * in->ctas;
  r->nlink[in->link] += sign;
  r->fsum[in->link] += sign * in->hbm_per_byte;
  if (r->nlink[in->link] == 0)
    r->fsum[in->link] = 0; /* no rounding residue */
  if (r->computing)
    block_schedule(E, r);
}

/* What `in` takes from each member's GPU (t: a member's task). */
static void contention_of(const struct engine *E, struct inst *in,
                          const struct task *t)
{
  int n = in->sym_n > 1 ? in->sym_n : in->n;
  in->ctas = coll_ctas(t, n);
  in->hbm_per_byte = hbm_per_byte(t);
  in->link = 0;
  for (int k = 1; k < in->n; k++)
    if (in->ranks[k] >= 0 && in->ranks[0] >= 0 &&
        node_of(E, in->ranks[k]) != node_of(E, in->ranks[0]))
      in->link = 1;
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

/* The sampled flows' parts since their last sample (on_flow_part), at an
 * instant where a sampled flow starts or ends.  Between two such instants
 * every sampled flow is sampled at the same two instants, so the parts'
 * rates on a link sum to no more than it carries: each flow at its
 * average over its whole life could (two flows overlapping for 1 us,
 * each at about 290 GB/s on average, showed 556 GB/s on a 300 GB/s
 * NVLink). */
static void flows_sample(struct engine *E)
{
  double t = now(E);
  for (long i = 0; i < E->nflive; i++) {
    struct ftag *f = E->flive[i];
    if (!(t > f->last_t))
      continue;
    double left = sgb_comm_remaining(f);
    if (left > f->left)
      left = f->left;
    if (f->left - left > 0)
      E->p.on_flow_part(E->p.ctx, f->src, f->dst, f->left - left, f->last_t,
                        t);
    f->left = left;
    f->last_t = t;
  }
}

static void on_done(void *ctx, void *tag)
{
  struct engine *E = ctx;
  int type = *(int *)tag & ((1 << TAG_BITS) - 1);
  if (type == TAG_RESTART) {
    shared_restart(E);
    return;
  }
  if (type == TAG_KERNEL) {
    struct ktag *k = tag;
    complete(E, k->rank, k->task);
    return;
  }
  if (type == TAG_KDYN) {
    struct kdyn k = *(struct kdyn *)tag;
    ((struct kdyn *)tag)->next = E->kfree;
    E->kfree = tag;
    struct rank_state *r = &E->rs[k.rank];
    if (k.gen != r->kgen)
      return; /* stale: the block was rescaled */
    block_advance(E, r, true);
    complete(E, k.rank, k.task);
    return;
  }
  if (type == TAG_ISSUE) {
    struct itag *it = tag;
    struct rank_state *r = &E->rs[it->rank];
    r->busy[it->stream] = 0;
    /* The host issued it: on the critical path, the task before it on
     * its stream stands for the cause (the host's time is no task). */
    int64_t cause = E->cause;
    long prev = r->next[it->stream] - 1;
    E->cause = prev >= 0 ? crit_pack(it->rank,
                               E->st[r->stage].list[it->stream][prev])
                         : -1;
    try_advance(E, it->rank);
    E->cause = cause;
    return;
  }
  if (type == TAG_TWIN) {
    struct ttag *t = tag;
    sgb_comm_weighted(E->hosts[t->src], platload_twin(t->k), t->bytes,
                      t->mult, t->lat_s, t->in);
    free(t);
    return;
  }
  if (type == TAG_FLOW) {
    struct ftag *f = tag;
    if (f->at >= 0) {
      flows_sample(E); /* f has nothing left: its last part */
      E->flive[f->at] = E->flive[--E->nflive];
      E->flive[f->at]->at = f->at;
    }
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
    *f = (struct ftag){TAG_OF(E, TAG_FLOW), in, src, dst, wire_bytes, now(E), now(E),
                       floor(wire_bytes + 0.5), -1};
    sgb_comm(E->hosts[src], E->hosts[dst], wire_bytes, f);
    if (E->p.on_flow_part &&
        (!E->p.part_ranks || E->p.part_ranks[src] || E->p.part_ranks[dst])) {
      flows_sample(E);
      if (E->nflive == E->flive_cap) {
        E->flive_cap = E->flive_cap ? 2 * E->flive_cap : 256;
        E->flive = xreallocarray(E->flive, (size_t)E->flive_cap,
                                 sizeof *E->flive);
      }
      f->at = E->nflive;
      E->flive[E->nflive++] = f;
    }
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

/* The quotient's flow into a twin (coll.h, coll_model.twin): `mult`
 * flows from member src into the GPU of src's node in dst's place, as
 * one flow of mult shares (sgb_comm_weighted); the job counts them all.
 * The route into a twin pays no latency (platload.h): the flow starts
 * once the latency of the route it stands for (src to dst) is over, as a
 * SimGrid flow joins the sharing then (sgb_comm_weighted says why). */
static void emit_twin(void *ctx, int src, int dst, double wire_bytes,
                      int mult)
{
  struct launch *l = ctx;
  struct engine *E = l->E;
  struct inst *in = l->in;
  long s = in->ranks[src], d = in->ranks[dst];
  in->remaining++;
  E->flows += (long)mult * (in->copies > 1 ? in->copies : 1);
  struct ttag *t = xmalloc(sizeof *t);
  *t = (struct ttag){TAG_OF(E, TAG_TWIN), (int)(d % E->c->gpus_per_node),
                     mult, in, s, wire_bytes,
                     sg_host_get_route_latency(E->hosts[s], E->hosts[d])};
  sgb_delay(t->lat_s, t);
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
  struct coll_call call = call_of(E, in);
  for (int k = 0; k < in->n; k++)
    if (in->tasks[k] >= 0) {
      contention_of(E, in, task_of(E, in->ranks[k], in->tasks[k]));
      break;
    }
  for (int k = 0; k < in->n; k++) {
    if (in->tasks[k] < 0) {
      local = false;
      continue; /* not simulated (replica symmetry) */
    }
    struct rank_state *r = &E->rs[in->ranks[k]];
    comm_begins(E, r, task_of(E, in->ranks[k], in->tasks[k]));
    contention_change(E, r, in, 1);
  }
  struct coll_plan plan;
  coll_plan_make(&E->cm, &call, &plan);
  in->extra_s = plan.extra_s;
  /* Flow counts are scaled by rank_step at the end (the TP ranks not
   * simulated); a TP group's representative already stands for all of
   * them.  Under replica symmetry a closed form inside node 0 stands for
   * the same on every node. */
  long cf = in->sym_n > 1 ? plan.closed_flows / E->rank_step
                          : plan.closed_flows;
  if (E->cm.a2a_rep && !local && plan.shape != CS_CLOSED) {
    /* Expert replica symmetry: the groups of this kind whose members are
     * all on other nodes are not launched.  Every node holds as many of
     * the kind's member slots as node 0, where this group has `mine` of
     * its n: it stands for copies x mine / n groups (1 for a group over
     * every node of a stage, copies / span for expert groups). */
    long mine = 0;
    for (int k = 0; k < in->n; k++)
      mine += in->tasks[k] >= 0;
    in->copies = (int)(E->copies * mine / in->n);
    if (in->copies < 1)
      in->copies = 1;
    cf *= in->copies;
  }
  E->flows += cf;
  long w = E->copies;
  for (int k = 0; E->posw && k < in->n; k++)
    if (in->tasks[k] >= 0) {
      w = weight_of(E, in->ranks[k]);
      break;
    }
  if (E->rsym && plan.shape == CS_CLOSED)
    E->flows += cf * (w - 1);
  else if (local) /* inside node 0: its flows stand for every node's */
    in->copies = (int)w;
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
  contention_of(E, in, t);
  if (E->rsym) /* with pipelines: it stands for every node's transfer */
    in->copies = (int)weight_of(E, src);
  for (int k = 0; k < 2; k++) {
    comm_begins(E, &E->rs[in->ranks[k]], t);
    contention_change(E, &E->rs[in->ranks[k]], in, 1);
  }
  if (E->cm.free_comm || t->bytes <= 0) {
    in->remaining = 1;
    in->timer_done = true;
    inst_step(E, in);
    return;
  }
  /* A send/recv pair's own latency, not a collective's (coll.h,
   * coll_p2p_extra). */
  in->extra_s = coll_p2p_extra(&E->cm, src, dst, route_lat(E, src, dst));
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

/* Whether the host clock lets kernel `task` start `after` seconds from
 * now or earlier: it is past the sync point and issued by then. */
static bool host_ahead(const struct engine *E, const struct rank_state *r,
                       long task, double after)
{
  const struct stage_info *si = &E->st[r->stage];
  if (r->synced < si->nsync && task >= si->sync[r->synced])
    return false;
  double at = r->h_base + E->p.host_op_s * (si->hcnt[task] - r->h_cnt0);
  return at <= now(E) + after;
}

/* Start a kernel.  Consecutive kernels that nothing else waits for and
 * that wait for nothing but their predecessor run as one execution: same
 * time, far fewer activities.  Under the host clock, only kernels the host
 * has issued by the time they could start at the earliest (the durations
 * without contention, which only slows kernels down); under contention,
 * not when a task hook or the breakdown wants each kernel's times. */
static void start_kernel(struct engine *E, long rank, long task)
{
  struct rank_state *r = &E->rs[rank];
  const struct stage_info *si = &E->st[r->stage];
  const struct program *pr = &E->g->prog[r->stage];
  double dur = si->dur[task] * r->slow;
  long last = task;
  bool merge = !(E->cont && (E->bd || E->p.on_task));
  r->merged = 1;
  while (merge && !si->target[last] &&
         r->next[ST_COMPUTE] < si->len[ST_COMPUTE]) {
    long nx = si->list[ST_COMPUTE][r->next[ST_COMPUTE]];
    if (pr->tasks[nx].kind != TK_KERNEL || pr->tasks[nx].ndep)
      break;
    if (E->host && !host_ahead(E, r, nx, dur))
      break;
    dur += si->dur[nx] * r->slow;
    last = nx;
    r->next[ST_COMPUTE]++;
    r->merged++;
  }
  account(E, r);
  r->computing = 1;
  r->ktag.task = (int32_t)last;
  E->kernels += r->merged;
  if (E->cont) { /* the block's time as communication stands, and on */
    r->kfirst = si->pos[task];
    r->kidx = 0;
    r->kfrac = 1;
    r->kt = now(E);
    block_schedule(E, r);
    return;
  }
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

/* Whether the host has issued `task`, the next of stream s (host clock);
 * if not, the stream waits: for the sync point's tasks to complete (the
 * completions call try_advance), or for the issue time (a delay). */
static bool host_issued(struct engine *E, long rank, int s, long task)
{
  struct rank_state *r = &E->rs[rank];
  const struct stage_info *si = &E->st[r->stage];
  while (r->synced < si->nsync && task >= si->sync[r->synced]) {
    long y = si->sync[r->synced];
    for (int k = 0; k < ST_COUNT; k++)
      if (r->done[k] < si->sync_need[r->synced][k])
        return false;
    /* The host issued everything before the sync point, then waited for
     * the GPU to finish it. */
    int32_t before = y > 0 ? si->hcnt[y - 1] : 0;
    double issued = r->h_base + E->p.host_op_s * (before - r->h_cnt0);
    r->h_base = fmax(issued, now(E));
    r->h_cnt0 = before;
    r->synced++;
  }
  if (r->hwaited[s] == r->next[s] + 1) { /* its wait is over */
    r->hwaited[s] = 0;
    return true;
  }
  double at = r->h_base + E->p.host_op_s * (si->hcnt[task] - r->h_cnt0);
  if (at <= now(E))
    return true;
  r->busy[s] = 1;
  r->hwaited[s] = r->next[s] + 1;
  sgb_delay(at - now(E), &r->itag[s]);
  return false;
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
      if (E->host && !host_issued(E, rank, s, task))
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
  si->nsync = 0;
  bool opt_sync = false;
  if (p->host_op_s > 0) {
    si->hcnt = xcalloc((size_t)pr->n + 1, sizeof *si->hcnt);
    long ns = 1;
    for (long i = 0; pr->host && i < pr->n; i++)
      ns += (pr->host[i] & GRAPH_HOST_SYNC) != 0;
    si->sync = xcalloc((size_t)ns, sizeof *si->sync);
    si->sync_need = xcalloc((size_t)ns, sizeof *si->sync_need);
  }
  if (p->comm_contention && !p->free_comm) {
    si->cmem = xcalloc((size_t)pr->n + 1, sizeof *si->cmem);
    si->ctiles = xcalloc((size_t)pr->n + 1, sizeof *si->ctiles);
  }
  for (long i = 0; i < pr->n; i++) {
    const struct task *t = &pr->tasks[i];
    if (si->hcnt) { /* kernels, collectives and sends cost an issue */
      uint32_t h = graph_host_of(pr, i);
      si->hcnt[i] = (i ? si->hcnt[i - 1] : 0) + (t->kind != TK_RECV) +
                    (int32_t)(h & GRAPH_HOST_OPS);
      bool first_opt = t->phase == PH_OPT && !opt_sync;
      opt_sync |= first_opt;
      if (first_opt || (h & GRAPH_HOST_SYNC)) {
        si->sync[si->nsync] = (int32_t)i;
        for (int k = 0; k < ST_COUNT; k++)
          si->sync_need[si->nsync][k] = (int32_t)si->len[k];
        si->nsync++;
      }
    }
    si->pos[i] = (int32_t)si->len[t->stream];
    si->list[t->stream][si->len[t->stream]++] = (int32_t)i;
    if (t->kind == TK_COLL)
      si->cseq[i] = seq[t->group]++;
    if (t->kind == TK_KERNEL) {
      si->dur[i] = cost_kernel(&c->gpu, p->dtype, p->attn_kernel, t, p->table);
      si->kind_s[t->op] += si->dur[i];
      if (si->cmem) {
        const struct gpu_spec *g = &c->gpu;
        si->cmem[i] = g->hbm_bw_Bps > 0
                          ? t->bytes / (g->hbm_bw_Bps *
                                        cost_mem_efficiency(g, t))
                          : 0;
        si->ctiles[i] = gemm_tiles(t);
      }
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
  for (long r = 0; E->place && r < E->nranks; r++) /* a shared fabric's */
    if (E->place[r] >= ng)
      ng = E->place[r] + 1L;
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
    long gi = E->place ? E->place[r] : cluster_place_gpu(E->c, (int)r);
    E->hosts[r] = gi < ng ? by_gpu[gi] : NULL;
    if (!E->hosts[r])
      rc = weft_errf(err, WEFT_EINVAL, "the platform has no host gpu%ld", gi);
  }
  free(by_gpu);
  return rc;
}

/* Whether some all-reduce of the first rank of a stage over several
 * nodes runs as double binary trees (coll.c, choose).  Stage replica
 * symmetry refuses such jobs: a tree's flows end on nodes whose pipeline
 * transfers are not simulated (Llama 3 70B cut to 8 layers, TP 8 x PP 4
 * on 512 H100 with --collective tree: a stage's overlapped DP time 0.3 %
 * off inside one leaf group, the critical path's PP time 10 % off over
 * several). */
static bool stages_take_trees(struct engine *E)
{
  const struct graph_layout *L = &E->g->layout;
  int32_t *ranks = xcalloc((size_t)E->nranks, sizeof *ranks);
  bool tree = false;
  for (long s = 0; s < E->g->stages && !tree; s++) {
    long co[PD_COUNT] = {0};
    co[PD_PP] = s;
    long r0 = layout_rank(L, co);
    const struct program *pr = &E->g->prog[s];
    for (long i = 0; i < pr->n && !tree; i++) {
      const struct task *t = &pr->tasks[i];
      if (t->kind != TK_COLL || t->op != CO_ALLREDUCE ||
          (task_class(t) == CC_TP && E->sym))
        continue;
      struct layout_group grp;
      layout_group(L, (enum group_kind)t->group, r0, &grp);
      for (long k = 0; k < grp.n; k++)
        ranks[k] = (int32_t)layout_member(L, (enum group_kind)t->group,
                                          grp.leader, k);
      if (node_of(E, ranks[0]) == node_of(E, ranks[grp.n - 1]))
        continue;
      struct coll_call call = {CO_ALLREDUCE, (int)grp.n, ranks, t->bytes, 0,
                               route_lat, E, t->stream != ST_COMPUTE};
      struct coll_plan plan;
      coll_plan_make(&E->cm, &call, &plan);
      /* NVLSTree's inter-node part is a tree too: not checked. */
      tree = plan.algo == CA_TREE || plan.algo == CA_NVLSTREE;
    }
  }
  free(ranks);
  return tree;
}

/* Whether the quotient (symmetry.h, quot) takes every collective across
 * nodes of each stage's first rank: rings and all-to-alls over regular
 * groups (coll_plan.quot).  Trees, NVLS trees, hierarchical and torus
 * forms are no images of one node's flows out; such jobs are refused
 * the quotient. */
static bool quot_plans_ok(struct engine *E)
{
  const struct graph_layout *L = &E->g->layout;
  long gpn = E->c->gpus_per_node;
  for (long k = 0; k < gpn; k++)
    if (!platload_twin((int)k))
      return false;
  int32_t *ranks = xcalloc((size_t)E->nranks, sizeof *ranks);
  bool ok = true;
  for (long s = 0; s < E->g->stages && ok; s++) {
    long co[PD_COUNT] = {0};
    co[PD_PP] = s;
    long r0 = layout_rank(L, co);
    const struct program *pr = &E->g->prog[s];
    for (long i = 0; i < pr->n && ok; i++) {
      const struct task *t = &pr->tasks[i];
      if (t->kind != TK_COLL || (task_class(t) == CC_TP && E->sym))
        continue;
      struct layout_group grp;
      layout_group(L, (enum group_kind)t->group, r0, &grp);
      bool across = false;
      for (long k = 0; k < grp.n; k++) {
        ranks[k] = (int32_t)layout_member(L, (enum group_kind)t->group,
                                          grp.leader, k);
        across |= node_of(E, ranks[k]) != node_of(E, ranks[0]);
      }
      if (!across)
        continue;
      struct coll_call call = {(enum coll_op)t->op, (int)grp.n, ranks,
                               t->bytes, 0, route_lat, E,
                               t->stream != ST_COMPUTE};
      struct coll_plan plan;
      coll_plan_make(&E->cm, &call, &plan);
      ok = plan.quot || plan.nphases == 0;
    }
  }
  free(ranks);
  return ok;
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
  E->hbits = HBITS;
  E->table = xcalloc((size_t)1 << HBITS, sizeof *E->table);
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
    rs->ktag.type = TAG_OF(E, TAG_KERNEL);
    rs->ktag.rank = (int32_t)r;
    rs->rdone = xcalloc((size_t)E->st[rs->stage].len[ST_PP_RECV] + 1, 1);
    rs->slow = cluster_gpu_slowdown(c, (int)r);
  }
  /* Stragglers make ranks differ: no symmetric shortcut (a rank standing
   * for others would lend them its speed, a ring's one node its NICs). */
  E->straggle = cluster_has_stragglers(c);
  bool every_flow = p->force_flows || p->on_flow || p->no_symmetry ||
                    E->straggle;
  /* The symmetric shortcuts (symmetry.h); TP symmetry thins the links a
   * node's GPUs share for the replay. */
  struct symmetry sy;
  symmetry_decide(&g->layout, c, every_flow, p->on_task != NULL, &sy);
  E->sym = sy.tp;
  E->rank_step = sy.rank_step;
  rc = symmetry_thin(&sy, g->layout.tp, &E->thinned, err);
  if (rc)
    return rc;
  E->ep_across = sy.ep_across;
  /* Expert replica symmetry (symmetry.h), opt-in while its reach is
   * checked: tests/test_engine.c compares it with every rank. */
  const char *eps = getenv("WEFT_EP_SYMMETRY");
  static bool eps_warned;
  if (eps && strcmp(eps, "on") && strcmp(eps, "off") && !eps_warned) {
    eps_warned = true;
    fprintf(stderr, "weft: warning: WEFT_EP_SYMMETRY=%s is not on or off; "
            "ignored\n", eps);
  }
  if (eps && !strcmp(eps, "on"))
    symmetry_decide_experts(&g->layout, c, every_flow, p->on_task != NULL,
                            &sy);
  symmetry_decide_stages(&g->layout, c, every_flow, p->on_task != NULL,
                         &sy);
  if (sy.stages && !sy.experts) {
    E->cm.sym_fabric = true; /* as the replay will plan them */
    if (stages_take_trees(E))
      sy.stages = sy.replicas = sy.fabric = sy.classes = false;
  }
  if (sy.quot) {
    E->cm.sym_fabric = E->cm.a2a_rep = E->cm.quot = true;
    E->cm.twin = emit_twin;
    if (!quot_plans_ok(E)) {
      /* Where the quotient was needed (expert groups over more than two
       * nodes with pipelines), no shortcut. */
      sy.quot = false;
      if (sy.quot_needed)
        sy.experts = sy.stages = sy.replicas = sy.fabric = false;
    }
  }
  E->cm.quot = sy.quot;
  E->cm.a2a_rep = sy.experts;
  E->cm.sym_fabric = sy.fabric;
  E->rsym = sy.replicas;
  E->stages = sy.stages;
  if (sy.classes) {
    long n = E->nranks / g->layout.pp / c->gpus_per_node;
    long *rep_of = xcalloc((size_t)n, sizeof *rep_of);
    symmetry_stage_classes(&g->layout, c, rep_of);
    E->posw = xcalloc((size_t)n, sizeof *E->posw);
    for (long k = 0; k < n; k++)
      E->posw[rep_of[k]]++;
    free(rep_of);
    E->cm.rep_nodes = E->posw;
    E->cm.rep_n = n;
  }
  E->sim = xcalloc((size_t)E->nranks, sizeof *E->sim);
  for (long r = 0; r < E->nranks; r += E->rank_step)
    if (simulated(E, r))
      E->sim[E->nsim++] = r;
  E->copies = E->nranks / (E->nsim * E->rank_step);
  E->bd = p->breakdown;
  E->cause = -1;
  E->cont = p->comm_contention && !p->free_comm;
  E->host = p->host_op_s > 0;
  E->link_Bps[0] = E->cm.nvlink_bw_Bps * E->cm.nvlink_eff;
  E->link_Bps[1] = E->cm.nic_bw_Bps * E->cm.nic_eff;
  for (long i = 0; i < E->nsim; i++) {
    struct rank_state *rs = &E->rs[E->sim[i]];
    long n = E->st[rs->stage].n;
    E->tasks_total += n;
    if (E->cont)
      rs->kind_act = xcalloc(KK_COUNT, sizeof *rs->kind_act);
    if (E->host) {
      rs->itag = xcalloc(ST_COUNT, sizeof *rs->itag);
      for (int k = 0; k < ST_COUNT; k++)
        rs->itag[k] = (struct itag){TAG_OF(E, TAG_ISSUE), (int32_t)E->sim[i],
                                    k};
    }
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
  /* Under classes of positions, each rank weighs its class's nodes. */
  double *wsum = xcalloc((size_t)S, sizeof *wsum);
  for (long i = 0; i < E->nsim; i++) {
    const struct rank_state *r = &E->rs[E->sim[i]];
    struct engine_stage *st = &out->stages[r->stage];
    double w = E->posw ? (double)weight_of(E, E->sim[i]) : 1;
    st->gpus++;
    wsum[r->stage] += w;
    st->compute_s += w * r->compute;
    for (int k = 0; k < CC_COUNT; k++) {
      st->overlapped_s[k] += w * r->overlapped_by[k];
      st->exposed_s[k] += w * r->exposed_by[k];
    }
    st->idle_s += w * (end - r->compute - r->exposed);
    for (int k = 0; r->kind_act && k < KK_COUNT; k++)
      st->compute_by_kind_s[k] += w * r->kind_act[k];
    for (int k = 0; !r->kind_act && E->straggle && k < KK_COUNT; k++)
      st->compute_by_kind_s[k] += w * E->st[r->stage].kind_s[k] * r->slow;
  }
  for (long s = 0; s < S; s++) {
    struct engine_stage *st = &out->stages[s];
    double n = wsum[s] > 0 ? wsum[s] : 1;
    st->compute_s /= n;
    st->idle_s = idle_or_zero(st->idle_s / n, end);
    for (int k = 0; k < CC_COUNT; k++) {
      st->overlapped_s[k] /= n;
      st->exposed_s[k] /= n;
    }
    for (int k = 0; k < KK_COUNT; k++)
      st->compute_by_kind_s[k] = !st->gpus ? 0
                                 : E->cont || E->straggle
                                     ? st->compute_by_kind_s[k] / n
                                     : E->st[s].kind_s[k];
  }
  free(wsum);
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
  /* With stragglers, the path's kernel time by rank. */
  double *by_rank = E->straggle ? xcalloc((size_t)E->nranks, sizeof *by_rank)
                                : NULL;
  P->held_rank = -1;
  for (long guard = E->tasks_total; cur >= 0 && guard > 0; guard--) {
    long rank = (long)(cur >> 32), task = (long)(uint32_t)cur;
    const struct rank_state *r = &E->rs[rank];
    const struct task *t = task_of(E, rank, task);
    double seg = r->crit_end[task] - r->crit_s0[task];
    if (t->kind == TK_KERNEL && by_rank)
      by_rank[rank] += seg;
    if (t->kind == TK_KERNEL)
      P->compute_by_kind_s[t->op] += seg;
    else
      P->comm_s[task_class(t)] += seg;
    P->stage_s[r->stage] += seg;
    P->total_s += seg;
    P->tasks++;
    cur = r->crit_pred[task];
  }
  for (long r = 0; by_rank && r < E->nranks; r++) /* ties: the lowest */
    if (by_rank[r] > P->held_rank_s) {
      P->held_rank = r;
      P->held_rank_s = by_rank[r];
    }
  free(by_rank);
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
    /* Under classes of positions, each rank for its class's nodes. */
    double w = E->posw ? (double)weight_of(E, r) : 1;
    comp += w * st->compute;
    for (int k = 0; k < KK_COUNT; k++) /* as they ran, under contention */
      kind[k] += w * (st->kind_act ? st->kind_act[k]
                                   : E->st[st->stage].kind_s[k] * st->slow);
    ov += w * st->overlapped;
    ex += w * st->exposed;
    simulated += (long)w;
  }
  memset(out, 0, sizeof *out);
  out->iteration_s = end;
  out->compute_s = comp / simulated;
  out->overlapped_s = ov / simulated;
  out->exposed_s = ex / simulated;
  out->symmetric = E->sym;
  out->replicas = E->rsym;
  out->stage_reps = E->stages;
  out->idle_s = idle_or_zero(end - out->compute_s - out->exposed_s, end);
  for (int k = 0; k < KK_COUNT; k++)
    out->compute_by_kind_s[k] = kind[k] / simulated;
  /* Activities stand for the whole job: scale the representatives'. */
  /* Under replica symmetry the other nodes ran node 0's kernels; of the
   * flows, the rings counted those they stand for (coll.h, rep). */
  out->kernels = E->posw ? E->kernels * E->nranks / E->nsim
                        : E->kernels * (E->nranks / E->nsim);
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
    free(E->st[s].hcnt);
    free(E->st[s].sync);
    free(E->st[s].sync_need);
    free(E->st[s].cmem);
    free(E->st[s].ctiles);
    for (int k = 0; k < ST_COUNT; k++)
      free(E->st[s].list[k]);
  }
  free(E->st);
  free(E->sim);
  free(E->posw);
  for (long r = 0; E->rs && r < E->nranks; r++) {
    free(E->rs[r].rdone);
    free(E->rs[r].crit_s0);
    free(E->rs[r].crit_end);
    free(E->rs[r].crit_pred);
    free(E->rs[r].kind_act);
    free(E->rs[r].itag);
  }
  free(E->rs);
  free(E->hosts);
  symmetry_restore(E->thinned);
  for (size_t h = 0; E->table && h < ((size_t)1 << E->hbits); h++)
    while (E->table[h])
      inst_free(E, E->table[h]);
  free(E->table);
  free(E->flive);
  while (E->kfree) {
    struct kdyn *k = E->kfree;
    E->kfree = k->next;
    free(k);
  }
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
    sgb_couriers_auto(E->ep_across && !E->rsym);
    sgb_track(p->on_flow && p->on_flow_part);
    sgb_init(on_done, E);
    for (long i = 0; i < E->nsim; i++)
      try_advance(E, E->sim[i]);
    sgb_run();
    sgb_track(false);
    rc = engine_collect(E, out, err);
  }
  engine_release(E);
  free(E);
  return rc;
}

/* ---- several jobs on one fabric (weft share) -------------------------- */

/* Every task of E's job has completed: an iteration ended now.  Record
 * its end; the job starts another (after a zero delay: no replay state
 * is reset under the frames that completed its last task) while any job
 * has not yet completed `steps` iterations, so that each job's measured
 * iterations run while every other job is iterating too. */
static void shared_iteration_done(struct engine *E)
{
  struct shared *sh = E->sh;
  if (E->niter == E->iter_cap) {
    E->iter_cap = E->iter_cap ? 2 * E->iter_cap : 8;
    E->iter_end = xreallocarray(E->iter_end, (size_t)E->iter_cap,
                                sizeof *E->iter_end);
  }
  double begin = E->niter ? E->iter_end[E->niter - 1] : E->start_at;
  E->iter_end[E->niter++] = sgb_now();
  if (begin >= sh->t_all && ++E->nwin == sh->steps &&
      --sh->unfinished == 0)
    sh->t_stop = sgb_now();
  if (sh->unfinished > 0)
    sgb_delay(0, &E->rtag);
}

/* Start E's job over from the beginning of an iteration, now: every
 * rank's streams back to their first task (what they had allocated
 * kept), times measured from here.  The kernel blocks' generations go on
 * counting: a stale delay of the last iteration must not match a block
 * of this one. */
static void shared_restart(struct engine *E)
{
  for (long i = 0; i < E->nsim; i++) {
    struct rank_state *r = &E->rs[E->sim[i]];
    struct rank_state keep = *r;
    memset(r, 0, sizeof *r);
    r->stage = keep.stage;
    r->ktag = keep.ktag;
    r->slow = keep.slow;
    r->kgen = keep.kgen;
    r->rdone = keep.rdone;
    memset(r->rdone, 0, (size_t)E->st[r->stage].len[ST_PP_RECV] + 1);
    r->kind_act = keep.kind_act;
    if (r->kind_act)
      memset(r->kind_act, 0, KK_COUNT * sizeof *r->kind_act);
    r->itag = keep.itag;
  }
  E->t0 = sgb_now();
  E->tasks_done = 0;
  for (long i = 0; i < E->nsim; i++)
    try_advance(E, E->sim[i]);
}

static void job_prefix(struct weft_err *err, int j)
{
  char b[32];
  snprintf(b, sizeof b, "job %d", j + 1);
  weft_err_prefix(err, b);
}

static void on_done_shared(void *ctx, void *tag)
{
  struct shared *sh = ctx;
  on_done(sh->E[*(int *)tag >> TAG_BITS], tag);
}

void engine_shared_free(struct engine_shared *r)
{
  free(r->iter_s);
  r->iter_s = NULL;
  r->iterations = r->counted = 0;
}

int engine_run_shared(int njobs, const struct engine_job *jobs, long steps,
                      struct engine_shared *out, struct weft_err *err)
{
  if (njobs < 1 || njobs > ENGINE_MAX_JOBS || steps < 1)
    return weft_errf(err, WEFT_EINVAL, "engine_run_shared: %d jobs (1 to "
                     "%d) and %ld steps (at least 1)", njobs,
                     ENGINE_MAX_JOBS, steps);
  for (int j = 0; j < njobs; j++) {
    const struct engine_job *J = &jobs[j];
    if (J->p.algo == CA_TORUS)
      return weft_errf(err, WEFT_EINVAL, "job %d: torus collectives are "
                       "not simulated on a shared fabric", j + 1);
    if (!(J->start_s >= 0 && J->start_s <= 1e9))
      return weft_errf(err, WEFT_EINVAL, "job %d: start %g s is not from 0 "
                       "to 1e9 s", j + 1, J->start_s);
    for (long r = 0; r < layout_ranks(&J->g->layout); r++)
      if (!J->place || J->place[r] < 0)
        return weft_errf(err, WEFT_EINVAL, "job %d: rank %ld has no place "
                         "on the fabric", j + 1, r);
  }
  struct shared sh = {njobs, xcalloc((size_t)njobs, sizeof *sh.E), steps,
                      njobs, -1, 0};
  int rc = 0;
  bool couriers = false;
  double t_begin = sgb_now();
  sh.t_all = t_begin;
  for (int j = 0; j < njobs; j++)
    if (t_begin + jobs[j].start_s > sh.t_all)
      sh.t_all = t_begin + jobs[j].start_s;
  for (int j = 0; j < njobs && !rc; j++) {
    struct engine *E = sh.E[j] = xcalloc(1, sizeof *E);
    struct engine_params p = jobs[j].p;
    /* Each job replays every rank and every flow: a rank standing for
     * others would stand for their places too, and the other jobs'
     * traffic differs from place to place.  No hooks. */
    p.no_symmetry = true;
    p.breakdown = false;
    p.on_task = NULL;
    p.on_flow = NULL;
    p.on_flow_part = NULL;
    p.on_progress = NULL;
    E->job = j;
    E->place = jobs[j].place;
    E->sh = &sh;
    E->rtag = TAG_OF(E, TAG_RESTART);
    E->start_at = t_begin + jobs[j].start_s;
    rc = engine_setup(E, jobs[j].g, jobs[j].c, &p, err);
    if (rc)
      job_prefix(err, j);
    couriers |= E->ep_across;
  }
  if (!rc) {
    sgb_couriers_auto(couriers);
    sgb_track(false);
    sgb_init(on_done_shared, &sh);
    for (int j = 0; j < njobs; j++)
      if (jobs[j].start_s > 0) /* its restart, then: a first iteration */
        sgb_delay(jobs[j].start_s, &sh.E[j]->rtag);
      else
        for (long i = 0; i < sh.E[j]->nsim; i++)
          try_advance(sh.E[j], sh.E[j]->sim[i]);
    sgb_run();
  }
  for (int j = 0; j < njobs && !rc; j++) {
    struct engine *E = sh.E[j];
    struct engine_result res;
    rc = engine_collect(E, &res, err);
    if (rc) {
      job_prefix(err, j);
      break;
    }
    if (E->niter < steps) {
      rc = weft_errf(err, WEFT_EINVAL, "job %d completed %ld of %ld "
                     "iterations", j + 1, E->niter, steps);
      break;
    }
  }
  for (int j = 0; j < njobs && !rc; j++) {
    struct engine *E = sh.E[j];
    struct engine_shared *o = &out[j];
    *o = (struct engine_shared){0};
    o->iter_s = xcalloc((size_t)E->niter, sizeof *o->iter_s);
    o->iterations = E->niter;
    double start = E->start_at, sum = 0;
    for (long i = 0; i < E->niter; i++) {
      o->iter_s[i] = E->iter_end[i] - start;
      if (start < sh.t_all) {
        o->skipped++;
      } else if (E->iter_end[i] <= sh.t_stop) {
        o->counted++;
        sum += o->iter_s[i];
      }
      start = E->iter_end[i];
    }
    o->mean_s = sum / (double)o->counted;
    o->kernels = E->kernels;
    o->flows = E->flows;
  }
  for (int j = 0; j < njobs; j++)
    if (sh.E[j]) {
      engine_release(sh.E[j]);
      free(sh.E[j]->iter_end);
      free(sh.E[j]);
    }
  free(sh.E);
  return rc;
}
