/*
 * graph.h - the task graph of one training iteration.
 *
 * Ranks of one plan run the same program up to the identity of their peers,
 * so the graph holds one program per pipeline stage, not one per GPU: a
 * 16384-GPU job with 16 stages has 16 programs.  A program is a list of
 * tasks in issue order; each task sits on one stream of its rank (compute,
 * pipeline send, pipeline receive, data-parallel reduction).  Tasks of one
 * stream run in order; a task also waits for the tasks listed in its
 * dependencies (indices into the same program).  Across ranks, the k-th
 * collective a rank issues on a group matches the k-th of every other member
 * (as NCCL requires), and a send matches the receive of the same
 * micro-batch, chunk and direction on the neighbouring stage.
 *
 * Sizes follow nccl-tests: a collective's `bytes` is the all-reduce buffer,
 * the whole gathered array of an all-gather and the whole input of a
 * reduce-scatter; a send's `bytes` is its payload.  A kernel carries its
 * matrix-multiply FLOPs (`flops`: zero for memory-bound kernels), the HBM
 * bytes it moves and, for GEMMs and attention, its shape, so that a cost
 * model can time it on any GPU.  traces/README.md documents the file format.
 */
#ifndef WEFT_GRAPH_H
#define WEFT_GRAPH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "sim/base/err.h"
#include "sim/graph/layout.h"

enum task_kind { TK_KERNEL, TK_COLL, TK_SEND, TK_RECV, TK_COUNT };

enum kernel_kind {
  KK_GEMM,      /* [m x k] @ [k x n], `batch` times */
  KK_ATTN,      /* fused attention core: batch = b*heads, m = q length,
                   n = kv length, k = head dim */
  KK_ATTN_BWD,  /* its backward */
  KK_NORM,      /* LayerNorm / RMSNorm */
  KK_ELEMWISE,  /* bias, activation, dropout, residual add, softmax */
  KK_EMBED,     /* embedding lookup */
  KK_LOSS,      /* softmax cross-entropy */
  KK_OPTIM,     /* optimizer step */
  KK_GGEMM,     /* grouped GEMM (MoE experts): `batch` groups of
                   [m x k] @ [k x n], each group with its own weight */
  KK_COMPRESS,  /* gradient compression's encoding and decoding
                   (memory-bound: selection, packing, scatter, casts) */
  KK_COUNT
};

enum coll_op {
  CO_ALLREDUCE, CO_REDUCE_SCATTER, CO_ALLGATHER, CO_ALLTOALL, CO_BROADCAST,
  CO_SENDRECV, /* each member sends `bytes` to the next one of the group */
  CO_COUNT
};

enum phase { PH_FWD, PH_BWD, PH_RECOMP, PH_OPT, PH_COUNT };

/* ST_AG: parameter all-gathers of ZeRO-3/FSDP and after a ZeRO-1/2 step,
 * apart from ST_DP's gradient reductions, as FSDP uses two streams. */
/* ST_CP: ring-attention exchanges of context parallelism. */
/* ST_T3: Tensor3D's activation collectives when they overlap computation
 * (over-decomposed pieces, backward all-reduces). */
/* ST_EP: the MoE dispatch and combine all-to-alls of a combined
 * forward-backward step (Megatron-Core's --overlap-moe-expert-parallel-comm,
 * workloads/builder_pipe.c), on their own stream beside the other
 * micro-batch's computation. */
enum stream { ST_COMPUTE, ST_PP_SEND, ST_PP_RECV, ST_DP, ST_AG, ST_CP, ST_T3,
              ST_EP, ST_COUNT };

struct task {
  uint8_t kind;   /* enum task_kind */
  uint8_t op;     /* enum kernel_kind or enum coll_op */
  uint8_t stream; /* enum stream */
  uint8_t phase;  /* enum phase */
  union {
    uint8_t group; /* collectives: enum group_kind */
    uint8_t role;  /* GEMMs: which linear and pass (graph_role, 0: none);
                      in the byte a kernel leaves unused, so the struct
                      keeps its 56 bytes */
  };
  union {
    int8_t peer;      /* send/recv: +1 next virtual stage, -1 previous */
    int8_t sms_held;  /* kernel: SMs a communication kernel beside it
                         holds, which the kernel cannot use (TP overlap,
                         workloads/builder_tpo.c; 0: none) */
  };
  int16_t chunk;  /* model chunk, -1 if none */
  int32_t mb;     /* micro-batch, -1 if none */
  int32_t layer;  /* model layer, -1 if none */
  uint32_t m, n, k, batch; /* kernel shape (GEMM, attention) */
  double flops;   /* matrix-multiply FLOPs of a kernel */
  double bytes;   /* HBM bytes of a kernel; size of a transfer */
  uint32_t dep0;  /* first dependency in the program's deps[] */
  uint32_t ndep;  /* number of dependencies */
};

struct program {
  struct task *tasks;
  long n, cap;
  uint32_t *deps;
  long ndeps, depcap;
  /* Host work of each task beyond its own issue (NULL while no task has
   * any): extra host operations before the host issues it (the engine's
   * host clock charges each host_op_s), and GRAPH_HOST_SYNC: before it
   * the host waits until the GPU has finished everything issued before
   * (torch.cuda.synchronize()).  Without a host clock both are ignored. */
  uint32_t *host;
};

#define GRAPH_HOST_SYNC 0x80000000u
#define GRAPH_HOST_OPS 0x7fffffffu

#define WEFT_GRAPH_TEXT 256

struct graph {
  struct graph_layout layout;
  char model[WEFT_GRAPH_TEXT]; /* description, informational */
  char plan[WEFT_GRAPH_TEXT];
  double tokens;            /* per iteration */
  long stages;              /* = layout.pp */
  struct program *prog;     /* one per stage */
};

/* An empty graph of `stages` programs; caller frees with graph_free. */
struct graph *graph_new(long stages);
void graph_free(struct graph *g);

/* Append a task to program `s`; returns its index.  Its dependencies are
 * added with graph_dep right after, before the next task. */
long graph_add(struct graph *g, long s, const struct task *t);
/* Make the last task of program `s` wait for task `on` of the same
 * program. */
void graph_dep(struct graph *g, long s, long on);
/* Give task `task` of program `s` `ops` extra host operations (added to
 * any it has) and, when `sync`, a host synchronization before it. */
void graph_host(struct graph *g, long s, long task, uint32_t ops, bool sync);
static inline uint32_t graph_host_of(const struct program *p, long task)
{
  return p->host ? p->host[task] : 0;
}

/* Matrix FLOPs of the whole job (every rank: a stage's program runs on
 * tp * cp * dp ranks) of the phases in `phase_mask` (bit 1 << enum phase;
 * GRAPH_ALL_PHASES for all), and the tasks of all programs. */
#define GRAPH_ALL_PHASES ((1 << PH_COUNT) - 1)
double graph_total_flops(const struct graph *g, int phase_mask);
long graph_total_tasks(const struct graph *g);

/* A GEMM's role: which weight of the layer it multiplies (the names of
 * workloads/layer.c's linears: "qkv", "proj", "fc1", "fc2", "router", the
 * routed experts' "expert_fc1"/"expert_fc2", "shared_fc1"/"shared_fc2",
 * MLA's "q_down", "q_up", "q", "kv_down", "kv_up", and "lm_head") and in
 * which pass: the forward (or its recomputation), the data gradient or the
 * weight gradient (Megatron-LM's LinearWithGradAccumulationAndAsyncComm
 * backward: grad_input = grad_output @ W, grad_weight = grad_output^T @ x).
 * Packed in a byte: bits 0-5 the name (1-based), bits 6-7 the pass. */
enum gemm_pass { GP_FWD, GP_DGRAD, GP_WGRAD, GP_COUNT };
/* The role of weight `name` in `pass` (routed: one of the routed experts'
 * weights); 0 when `name` is not a known linear. */
uint8_t graph_role(const char *name, bool routed, enum gemm_pass pass);
/* Write role `role` as "NAME.PASS" (e.g. "fc1.wgrad") into buf[n];
 * returns buf, or "" for role 0. */
const char *graph_role_str(uint8_t role, char *buf, size_t n);
/* Parse "NAME.PASS"; returns the role, or 0 when it names none. */
uint8_t graph_role_parse(const char *s);
/* Give task `i` of program `s` role `role` (a GEMM's; graph_role). */
void graph_set_role(struct graph *g, long s, long i, uint8_t role);

const char *task_kind_name(enum task_kind k);
const char *kernel_kind_name(enum kernel_kind k);
const char *coll_op_name(enum coll_op c);
const char *group_kind_name(enum group_kind k);
const char *phase_name(enum phase p);
const char *stream_name(enum stream s);

/* Write the graph in the text format of traces/README.md; read it back.
 * graph_read returns NULL with a "file:line: ..." error. */
int graph_write(const struct graph *g, const char *path,
                struct weft_err *err) WEFT_WUR;
struct graph *graph_read(const char *path, struct weft_err *err) WEFT_WUR;

/* True when two graphs hold the same programs (every field of every task and
 * dependency) and layout. */
bool graph_equal(const struct graph *a, const struct graph *b);

#endif
