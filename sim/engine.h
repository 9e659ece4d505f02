/*
 * engine.h - replay a task graph on the loaded SimGrid platform.
 *
 * Every GPU rank r runs the program of its pipeline stage on host "gpu<r>":
 * kernels take the cost model's time, collectives and pipeline transfers
 * become flows between the members' hosts.  A GPU runs one kernel at a time
 * (kernels have one stream, ST_COMPUTE), so nothing shares its compute and a
 * kernel is a delay of its duration (sgb_delay: the bridge's calendar), not
 * an execution on the host: the same end time, without an activity in
 * maestro's list (which SimGrid 3.32 scans whole whenever an activity ends;
 * sgbridge.h).  A task starts when it is the next of its stream, the
 * previous one of that stream has completed and its dependencies have; a
 * collective starts its flows when every member has reached it, a transfer
 * when both ends have, as NCCL does, so skew and stragglers propagate.
 *
 * What a collective costs and which flows stand for it is coll.h's job
 * (algorithms, NCCL's protocols, fidelity); the parameters below feed it.
 * A transfer between pipeline stages is one flow plus the fixed latency of
 * a collective.
 */
#ifndef WEFT_ENGINE_H
#define WEFT_ENGINE_H

#include <stdbool.h>

#include "platforms/cluster.h"
#include "sim/base/err.h"
#include "sim/coll.h"
#include "sim/graph/graph.h"
#include "workloads/costmodel.h"

struct engine_params {
  enum coll_algo algo;
  enum fidelity fidelity;      /* of rings (coll.h) */
  double nvls_eff;             /* share of NVLink bandwidth NVLS reaches */
  double tree_bw;              /* algorithm bandwidth of one channel's pair of
                                  trees, bytes/s (<= 0: no limit) */
  enum dtype dtype;            /* compute type of the kernels */
  int attn_kernel;             /* fused attention kernel (enum attn_kernel),
                                  -1: the GPU's default */
  const struct cost_table *table; /* measured kernels, or NULL */
  double nvlink_eff;           /* share of NVLink bandwidth collectives reach */
  double nic_eff;              /* share of NIC bandwidth (0: node type's) */
  /* NCCL's three protocols.  A collective costs a fixed latency (launch,
   * setup, synchronisation of the members), the route latency of each
   * algorithm step, and its bytes at the share
   * of the bandwidth the protocol keeps (LL: half of each 8-byte word is a
   * flag; LL128: 120 of 128 bytes).  Across nodes the steps pay NCCL
   * 2.30.7's per-step latencies instead (nccl_hops).  coll_lat_s is Simple's fixed latency
   * (negative: the node type's); LL128's and LL's are the fractions lat_ll128 and
   * lat_ll of it.  The engine picks, per collective, the protocol its own
   * estimate says is fastest, as NCCL's tuner does. */
  double coll_lat_s, lat_ll128, lat_ll;
  double lat_nvls; /* NVLS all-reduce's fixed latency, fraction of Simple's */
  /* Share of NIC bandwidth a ring loses per doubling of the nodes it spans
   * beyond two (negative: the node type's). */
  double ring_loss;
  double ll128_eff, ll_eff;
  /* Steps across nodes pay NCCL's per-step latencies by transport and
   * protocol (coll.h, COLL_HOP_*; on by default); off: each step pays its
   * route's latency only. */
  bool nccl_hops;
  bool free_comm;              /* communication takes no time (tests) */
  /* Compute beside communication (engine.c, "contention"): while a
   * collective or transfer runs on a GPU, its NCCL kernel holds some of
   * the GPU's SMs (one CTA per channel) and its data moves through HBM, so
   * a kernel running beside it gets fewer SMs (compute-bound: the cost
   * model's waves on the SMs left) and less HBM bandwidth (memory-bound).
   * The kernel's remaining work is rescaled whenever communication on its
   * GPU starts or ends.  On by default; off: kernels cost the same beside
   * communication (weft before issue 37). */
  bool comm_contention;
  /* Host issue (engine.c, "host clock"): each kernel, collective and send
   * costs its rank's one issuing CPU thread host_op_s (eager PyTorch's
   * dispatch and launch); a task starts no earlier than the host issued
   * it, and before the first optimizer-phase task the host waits until
   * the GPU has finished all it issued (the gradient norm's and found-inf
   * check's host reads).  0 (the default): no host clock at all.  The
   * software stacks set it: PyTorch's operator micro-benchmarks measure
   * about 3.3 us of host time per eager CUDA op (split, in
   * github.com/pytorch/pytorch pull 32194), before Python module code
   * and hooks around it. */
  double host_op_s;
  /* A collective of the compute stream over every GPU of one node has
   * the node's NVLinks to itself (the other streams' collectives run as
   * flows: coll.h, struct coll_call's shared), so its flows' time is known
   * in closed form and the engine times it with one delay instead of n
   * flows.  force_flows simulates the flows anyway. */
  bool force_flows;
  /* Simulate every rank and every flow: no symmetric shortcut at all
   * (neither TP nor replica symmetry, engine.c), as --every-rank. */
  bool no_symmetry;
  /* Fill engine_result.stages and .path (the time breakdown by pipeline
   * stage and the critical path); costs 24 bytes per task of every
   * simulated rank. */
  bool breakdown;
  /* Called when a task of a rank completes, with its start (the time it
   * became the running task of its stream; a receive's, posted with all
   * the others at the start, when its transfer began) and end; may be
   * NULL. */
  void (*on_task)(void *ctx, long rank, long task, double start_s,
                  double end_s);
  /* Called when a flow completes (every flow is simulated then): bytes on
   * the wire from src to dst between start_s and end_s; may be NULL. */
  void (*on_flow)(void *ctx, long src, long dst, double bytes,
                  double start_s, double end_s);
  /* With on_flow: called with the bytes a flow moved between two
   * instants at which a sampled flow started or ended (the flows of
   * part_ranks' ranks, all when NULL), every sampled flow being sampled
   * at each: the links' rates over such intervals, which the flows'
   * average rates over their whole lives are not; may be NULL. */
  void (*on_flow_part)(void *ctx, long src, long dst, double bytes,
                       double start_s, double end_s);
  const unsigned char *part_ranks;
  /* Called about once a second of wall time while the replay runs (never
   * in the first second): simulated time so far, tasks completed and in
   * all, wall seconds since the replay started; may be NULL. */
  void (*on_progress)(void *ctx, double sim_s, long tasks_done,
                      long tasks_total, double wall_s);
  void *ctx;
};

/* Communication by kind, for the time breakdown: tensor parallelism,
 * pipeline transfers, data parallelism (gradient reductions, ZeRO and FSDP
 * gathers, the embedding all-reduce of the first and last stages),
 * context parallelism, expert parallelism (all-to-all). */
enum comm_class { CC_TP, CC_PP, CC_DP, CC_CP, CC_EP, CC_COUNT };
const char *comm_class_name(enum comm_class c); /* "tp", "pp", ... */

/* One pipeline stage's time, means over its simulated GPUs, seconds:
 * compute + exposed communication (all kinds) + idle = the iteration.
 * Communication running beside several others is shared among them by
 * count, so the kinds sum to the stage's overlapped and exposed time. */
struct engine_stage {
  long gpus;                        /* simulated GPUs of the stage */
  double compute_s;
  double compute_by_kind_s[KK_COUNT];
  double overlapped_s[CC_COUNT];    /* communicating while computing */
  double exposed_s[CC_COUNT];       /* communicating, not computing */
  double idle_s;                    /* neither: the bubble, waiting for
                                       peers, the end of the iteration */
};

/* The critical path: the chain of tasks, across ranks, whose each one
 * started when the one before it ended (a stream's previous task, a
 * dependency, or the last member to reach a collective or transfer), from
 * the start of the iteration to the last task to end.  Its segments tile
 * the iteration: they sum to iteration_s. */
struct engine_path {
  double total_s;
  double compute_by_kind_s[KK_COUNT]; /* kernels on it */
  double comm_s[CC_COUNT];  /* collectives and transfers on it, from the
                               last member's arrival to their end */
  double *stage_s;          /* time on each stage's GPUs (stages of them) */
  long tasks;
  /* With stragglers (cluster_has_stragglers), the rank whose kernels
   * take the most of the path, and that time: the rank that held the
   * job back; else -1 and 0. */
  long held_rank;
  double held_rank_s;
};

/* The calibrated defaults (see coll.c for the rows they come from). */
void engine_params_default(struct engine_params *p);

struct engine_result {
  double iteration_s;
  /* Means over ranks, seconds: */
  double compute_s;     /* kernels running */
  double overlapped_s;  /* communicating while a kernel runs */
  double exposed_s;     /* communicating while no kernel runs */
  double idle_s;        /* neither: bubbles, waiting for peers */
  /* compute_s by kind of kernel (enum kernel_kind); they sum to it. */
  double compute_by_kind_s[KK_COUNT];
  long kernels, flows;  /* activities of the job */
  bool symmetric;       /* one TP rank per group was simulated */
  bool replicas;        /* replica symmetry: node 0's ranks were simulated,
                           rings and trees as node 0's flows */
  bool stage_reps;      /* with pipelines: each stage's first node's ranks
                           (node 0's and their pipeline peers), or those
                           of the first node of each class of positions
                           (sim/symmetry.h) */
  /* With engine_params.breakdown, else NULL and zero: */
  long nstages;
  struct engine_stage *stages; /* by pipeline stage */
  struct engine_path path;
};

/* Free what engine_run allocated in *r (the breakdown). */
void engine_result_free(struct engine_result *r);

/* Replay `g` on the platform of `c`, already loaded (platload_cluster).
 * Replays may follow one another in one process on the same platform
 * (SimGrid allows one engine per process; each replay measures its times
 * from its own start).  On failure *out is untouched. */
int engine_run(const struct graph *g, const struct cluster *c,
               const struct engine_params *p, struct engine_result *out,
               struct weft_err *err) WEFT_WUR;

/* Several jobs on one fabric (weft share; issue 41, item 4): each job
 * its own graph, its own view of the cluster (its nodes only, numbered
 * from 0: what its collectives' plans see) and its place on the loaded
 * platform, the fabric GPU of each of its ranks.  All are replayed in one
 * SimGrid run, so their flows share the links their routes have in
 * common.  Every rank and every flow of each job is simulated (no
 * symmetric shortcut, no hooks, no breakdown).  Jobs of different step
 * times: each job replays its iteration back to back, starting another
 * while any job has completed fewer than `steps`; the run stops when
 * every job is done with the iteration it is in.  A job's measured
 * iterations are those that ended by the time the last job completed its
 * `steps`-th: each of them ran while every other job was iterating, none
 * in the tail where some jobs have stopped (at least `steps` each).
 * A job may start later than the run (start_s): it begins its first
 * iteration then; the others iterate meanwhile.  Only iterations that
 * began once every job had started count toward `steps` and are
 * measured, so a measured iteration ran wholly while all jobs ran; the
 * ones before are lead-in (`skipped`).  With every start_s 0 nothing is
 * skipped and the run is what it was. */
#define ENGINE_MAX_JOBS 64

struct engine_job {
  const struct graph *g;
  const struct cluster *c;
  struct engine_params p;
  const int *place; /* by rank: the fabric's GPU index, "gpu<i>" */
  double start_s;   /* its first iteration begins this long after the run's
                       start (>= 0; weft share's NODES@OFFSET) */
};

struct engine_shared {
  double *iter_s;   /* each iteration's time, in order (owned) */
  long iterations;  /* replayed */
  long skipped;     /* the first `skipped` began before every job had
                       started: lead-in, not measured */
  long counted;     /* the next `counted` are measured (above) */
  double mean_s;    /* their mean */
  long kernels, flows; /* activities over all iterations */
};

int engine_run_shared(int njobs, const struct engine_job *jobs, long steps,
                      struct engine_shared *out,
                      struct weft_err *err) WEFT_WUR;
void engine_shared_free(struct engine_shared *r);

#endif
