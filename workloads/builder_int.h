/*
 * builder_int.h - what the builder's files share (builder.c and the
 * builder_*.c files of its features), included by them only: the context
 * of the stage program being built, the task primitives of the core, and
 * each feature's entry points.  builder.c opens with the tour of the
 * files.
 */
#ifndef WEFT_BUILDER_INT_H
#define WEFT_BUILDER_INT_H

#include "workloads/builder.h"
#include "workloads/layer.h"

struct ctx;

/* The passes of one kind of tensor parallelism over a layer, the embedding
 * and the loss, chosen once per stage (ctx_init): Megatron's 1D TP or
 * Tensor3D.  A backward returns the task its weight gradients are final
 * after. */
struct layer_ops {
  void (*layer_fwd)(struct ctx *c, long layer, int phase);
  long (*layer_bwd)(struct ctx *c, long layer);
  void (*embed_fwd)(struct ctx *c);
  long (*embed_bwd)(struct ctx *c);
  void (*loss_fwd)(struct ctx *c);
  long (*loss_bwd)(struct ctx *c);
  bool p2p_scatter_gather; /* with TP > 1 and no SP, a received tensor is
                              all-gathered over TP (Megatron's scatter/
                              gather of pipeline transfers) */
  bool accumulate;         /* weight gradients take an accumulation pass
                              over micro-batches (build_accum_bytes) */
};

/* The most tasks one compute task waits for besides the compute stream's
 * order: at most a blocking send, a receive, a ring-attention block, a
 * DeepSpeed 2021 bucket and a parameter gather, with room to spare. */
enum { PENDING_MAX = 8 };

/* The stage program being built (builder.c, ctx_init): where tasks go,
 * the shapes of the model as one rank sees them (one-letter names, as in
 * Megatron-LM's papers), and the bookkeeping the features share. */
struct ctx {
  const struct layer_ops *ops;
  struct graph *g;
  const struct model *m;
  const struct plan *p;
  struct layer_desc ld; /* the model's layer (layer.h) */
  long s;             /* stage */
  int16_t chunk;      /* the model chunk of the pass being built (-1:
                         after the passes) */
  int32_t mb;         /* its micro-batch (-1: after the passes) */
  double e;           /* bytes per activation element */
  /* Shapes on one rank (Tensor3D's passes change b, T and t for a while,
   * builder_t3.c): */
  double b;           /* sequences of a micro-batch */
  double S;           /* tokens of a sequence on a rank (seq / CP) */
  double T;           /* tokens of a micro-batch on a rank: b S */
  double h;           /* hidden size */
  double t;           /* ranks splitting heads, FFN and vocabulary (TP) */
  double kv;          /* width of K or of V (key/value heads x d) */
  double f;           /* FFN hidden size */
  double gates;       /* FFN input projections: 2 (SwiGLU) or 1 (GELU) */
  double a;           /* attention heads */
  double d;           /* head dimension (of a query/key head under MLA) */
  double dv;          /* width of a value head (d unless MLA) */
  double vw;          /* width of V (kv unless MLA) */
  double topk;        /* experts per token (1 when dense) */
  double T_local;     /* tokens per rank outside TP regions (SP: T / t) */
  long pending[PENDING_MAX]; /* tasks the next compute task waits for
                                (bld_wait_for) */
  int npending;
  long last_compute;  /* the last task on the compute stream */
  /* DeepSpeed 2021's module fetches (builder_zero.c, ds21_pass): called
   * before a linear step's GEMMs with the step's weight (layer.h index)
   * while a pass runs under it, else NULL. */
  void (*pre_linear)(struct ctx *c, long layer, int w, int phase);
  struct ds21 *ds21;
  /* A combined 1F1B step's record of the pass being built (builder_pipe.c,
   * bld_combined_pass), else NULL. */
  struct weave *weave;
  /* The stage's parameters per rank (ctx_init): */
  double lp, lx;      /* dense and expert parameters of a layer */
  /* Layers not all alike (model.h, model_layer_kind): c->ld, lp and lx
   * are those of the layer being built, switched by bld_layer_select. */
  bool alike;
  int kind;           /* the kind c->ld describes */
  double emb;         /* embedding (and GPT's position embedding) */
  double head;        /* output layer and final norm, on the last stage */
  double grad_e;      /* bytes per gradient element */
  long vlast;         /* the last virtual stage */
  long *dp_tasks;     /* gradient reductions the optimizer waits for */
  long n_dp;
  bool *gathered;     /* overlap_param_gather: chunks whose parameters are
                         gathered (build_stage) */
  double accum_b;     /* bytes per parameter of a gradient accumulation
                         pass (0: none), after every micro-batch of a
                         chunk when accum_every, else after the first */
  bool accum_every;
  /* Gradient compression: the open bucket's matrices (sum of rows + cols)
   * and vector elements, its parameter tensors (matrices, and the others:
   * norm weights and biases), and the compressed buckets whose hook is
   * still to finish. */
  double bk_rc, bk_vec, bk_nmat, bk_nvec;
  struct cbucket {
    long wait;           /* the collective its next step waits for */
    /* One step of the hook on the compute stream (builder_compress.c):
     * HBM bytes, CUDA kernels launched, host-only operations (views,
     * slices), elements that torch.topk selects from with one thread
     * block, and whether the host synchronizes with the GPU after it. */
    struct cstep {
      double bytes, launches, views, select;
      bool sync;
    } mid, dec[2];       /* PowerSGD's middle step (launches 0: none or
                            done), the decoding (in two steps where the
                            host synchronizes between them) */
    double coll2_bytes;  /* PowerSGD's second all-reduce */
    bool done;
  } *cq;
  long n_cq, cq_cap;
};

/* ---- The core (builder.c) ----
 * Tasks are added to stage c->s, labelled with c->chunk and c->mb; a
 * compute task first takes the dependencies bld_wait_for collected.  Each
 * returns the task's index. */

/* Add task `t` (copied). */
long bld_add(struct ctx *c, struct task *t);

/* Make the next compute task wait for `task` (none when -1). */
void bld_wait_for(struct ctx *c, long task);

/* A kernel of kind `kk` on the compute stream, of `flops` and `bytes`. */
long bld_kernel(struct ctx *c, enum kernel_kind kk, int phase, long layer,
                double flops, double bytes);

/* C[M x N] = A[M x K] @ B[K x N] on the compute stream. */
long bld_gemm(struct ctx *c, int phase, long layer, double M, double N,
              double K);

/* A collective `op` over group `gk` on stream `st`, of `bytes` per rank. */
long bld_coll(struct ctx *c, enum coll_op op, enum group_kind gk,
              enum stream st, int phase, long layer, double bytes);

/* A gradient reduction on the data-parallel stream, issued after task
 * `after` (none when -1), that the optimizer step waits for. */
long bld_grad_coll(struct ctx *c, enum coll_op op, enum group_kind gk,
                   long layer, double bytes, long after);

/* ---- The Megatron layer (builder_layer.c) and Tensor3D (builder_t3.c) */

/* Make c->ld, c->lp and c->lx describe layer `layer` (a no-op when the
 * model's layers are alike). */
void bld_layer_select(struct ctx *c, long layer);

/* The passes of Megatron-LM's 1D tensor parallelism and of Tensor3D. */
extern const struct layer_ops bld_megatron_ops, bld_t3_ops;

/* Attention of layer `layer` on the rank's heads (c->t splits them): ring
 * attention over the CP group when CP > 1.  Returns its last task. */
long bld_attention(struct ctx *c, int phase, long layer, bool bwd);

/* Step `st` of c->ld (layer.h) of layer `l`, forward in `phase` or
 * backward (returning its weight-gradient GEMM, -1 when none), as the
 * layer's own loop runs it: for steps run out of that loop
 * (builder_moe.c, the shared experts beside the dispatcher). */
void bld_step_fwd(struct ctx *c, const struct lstep *st, int phase, long l);
long bld_step_bwd(struct ctx *c, const struct lstep *st, long l);

/* The loss's kernels over the rank's logits (T x V/t) in `ph`. */
void bld_loss_kernel(struct ctx *c, enum phase ph);

/* ---- MoE execution (builder_moe.c) ---- */

/* Whether the model's MoE blocks run as Megatron-Core's MoELayer (a
 * dispatcher other than basic). */
bool bld_moe_core(const struct ctx *c);

/* Reorder c->ld's steps as Megatron-Core runs an MoE layer (its shared
 * experts before the router); call after every layer_describe of c->ld. */
void bld_moe_order(struct ctx *c);

/* Whether TP step `st` (LS_TP_IN before the router, LS_TP_OUT after the
 * combine) is left out: Megatron-Core's MoE layer takes the
 * sequence-parallel shards as they are. */
bool bld_moe_skips_tp(const struct ctx *c, const struct lstep *st);

/* Token rows of the router's GEMM, and the experts' rows on the busiest
 * rank (imbalance and capacity applied). */
double bld_moe_router_rows(const struct ctx *c);
double bld_moe_ffn_rows(const struct ctx *c);

/* LS_A2A step `st` of layer `l` in `phase` (forward, recomputation or
 * backward): the router's kernels, the permutations and the dispatcher's
 * collectives; with the basic dispatcher, not called. */
void bld_moe_exchange(struct ctx *c, const struct lstep *st, int phase,
                      long l);

/* ---- Pipeline passes and transfers (builder_pipe.c) ---- */

/* One op of a stage's schedule: a pass of a chunk, as the chunk driver
 * (bld_chunk_pass) runs it. */
struct pass {
  bool fwd;
  long vs;           /* the chunk's virtual stage */
  long first, count; /* its layers */
  bool last;         /* backward: the chunk's last backward pass */
  bool overlap;      /* backward: buckets reduced as they fill */
  bool accum;        /* backward: weight gradients take an accumulation
                        pass */
  long *ag;          /* forward: per unit, the parameter gather it waits
                        for (-1: none), or NULL (param_gathers) */
  int32_t mb;        /* its micro-batch and model chunk (c->mb and
                        c->chunk while it is built) */
  int16_t chunk;
};

/* What a pass runs between its receive and its send. */
typedef void pass_body(struct ctx *c, const struct pass *ps);

/* The bodies of Megatron's forward and backward passes of a chunk. */
void bld_forward_body(struct ctx *c, const struct pass *ps);
void bld_backward_body(struct ctx *c, const struct pass *ps);

/* Run pass `ps` of a chunk: receive its input, run `body`, send its
 * output. */
void bld_chunk_pass(struct ctx *c, struct pass *ps, pass_body *body);

/* Megatron-Core's combined 1F1B step (plan.h, a2a_overlap): forward pass
 * `f` and backward pass `b` (of other micro-batches) built as one step,
 * layer by layer in sub-blocks, each one's MoE all-to-alls on ST_EP beside
 * the other's computation (builder_pipe.c tells the order).  Returns 0, or
 * an internal error. */
int bld_combined_pass(struct ctx *c, struct pass *f, struct pass *b,
                      struct weft_err *err);

/* Where a layer of the pass being built begins (`begin`) and ends, for
 * a combined step's record (a no-op otherwise): the chunk bodies call it
 * around each layer, builder_layer.c around each MTP layer, which
 * Megatron-Core schedules as the chunk's last layers. */
void bld_weave_layer(struct ctx *c, bool begin);

/* builder_layer.c calls it, while a combined step is being built
 * (c->weave), before step `step` of a layer's forward (bwd false) or
 * backward: where a dense layer's attention and feed-forward sub-blocks
 * meet. */
void bld_weave_step(struct ctx *c, int step, bool bwd);

/* ---- Gradient buckets and their compression (builder_compress.c) ---- */

/* What a bucket's gradients are, by unit: matrices' rows + cols and
 * elements, vectors' elements (per rank: TP splits as the builder's). */
enum bucket_unit { BU_HEAD, BU_LAYER, BU_EMB };

/* Add unit `u`'s gradient bytes to the open bucket `*acc`. */
void bld_bucket_add(struct ctx *c, double *acc, enum bucket_unit u);

/* Reduce the open bucket `*acc` (compressed or not) after task `after`,
 * and empty it. */
void bld_flush_bucket(struct ctx *c, double *acc, long after);

/* The bucket size, in bytes, of chunk `chunk`'s gradients. */
double bld_bucket_limit(const struct ctx *c, long chunk);

/* Without overlap: every chunk's buckets after the whole backward. */
void bld_late_buckets(struct ctx *c);

/* Finish the compressed buckets whose hook is still running. */
void bld_compress_drain(struct ctx *c);

/* ---- ZeRO, FSDP and DeepSpeed (builder_zero.c) ---- */

/* All-gather chunk `ch`'s updated parameters by bucket, each gather after
 * task `after` (none when -1); gather (NULL, or room for the chunk's
 * layers + 2) receives per unit the gather it waits for, or -1. */
void bld_gather_buckets(struct ctx *c, long ch, int phase, long after,
                        long *gather);

/* The group holding the same experts, and its size (*n). */
enum group_kind bld_expert_group(const struct plan *p, long *n);

/* ZeRO-3 / FSDP: either pass of a chunk over its units. */
void bld_zero3_body(struct ctx *c, const struct pass *ps);

/* ---- Tensor-parallel communication overlap (builder_tpo.c) ----
 * Each emits, with the setting off (or TP 1, or no SP), exactly
 * the blocking collective and the GEMM builder_layer.c emitted before. */

/* A kernel pass over `elements` of layer `layer` before a GEMM (an FP8
 * cast of its input), which the overlap may run on the local shard. */
typedef void bld_cast_fn(struct ctx *c, long layer, double elements);

/* Whether layer passes overlap their TP communication (plan.tp_overlap
 * with TP > 1 and SP). */
bool bld_tpo_on(const struct ctx *c);

/* The SP all-gather of a T x h activation, then `cast` (NULL: none) over
 * `cast_elems`, then [M x N] = [M x K] @ [K x N]: the column-parallel
 * forward GEMMs and the row-parallel data gradients.  Returns the last
 * GEMM. */
long bld_tpo_ag_gemm(struct ctx *c, int phase, long layer, double M, double N,
                     double K, bld_cast_fn *cast, double cast_elems);

/* The linear layers whose GEMMs overlap communication. */
enum tpo_linear { TPO_QKV, TPO_PROJ, TPO_FC1, TPO_FC2 };

/* [M x N] = [M x K] @ [K x N] of `which` (TPO_PROJ or TPO_FC2), then the
 * reduce-scatter (all-reduce without SP) of its T x h output: the
 * row-parallel forward GEMMs.  Returns the last GEMM. */
long bld_tpo_gemm_rs(struct ctx *c, int phase, long layer, enum tpo_linear which,
                     double M, double N, double K);

/* The backward of column-parallel `which` (TPO_QKV or TPO_FC1): data
 * gradient [M x N] = [M x K] @ [K x N], weight gradient [K x N] = [K x M]
 * @ [M x N], and the data gradient's reduce-scatter.  Returns the
 * weight-gradient GEMM. */
long bld_tpo_bulk(struct ctx *c, long layer, enum tpo_linear which, double M,
                  double N, double K);

/* The layer's forward at steps st[0 .. left - 1] (layer.h): builds a TP
 * all-gather with the linear after it, or a row-parallel linear with the
 * reduce-scatter after it, overlapped, and returns the steps it built (2);
 * 0 (nothing built) when the overlap is off or the steps are not such a
 * pair. */
int bld_tpo_fwd(struct ctx *c, const struct lstep *st, int left, int phase,
                long layer);

/* The layer's backward at step st[0], whose `before` steps st[-1], ...
 * come next in reverse: builds a gathered output gradient with a
 * row-parallel linear's gradients, or a column-parallel linear's
 * gradients with the reduce-scatter of its data gradient, overlapped
 * (`cast`: the FP8 cast of a linear's output gradient); returns the steps
 * it built (2) with the weight-gradient GEMM in *out_wgrad, or 0. */
int bld_tpo_bwd(struct ctx *c, const struct lstep *st, int before, long layer,
                bld_cast_fn *cast, long *out_wgrad);

#endif
