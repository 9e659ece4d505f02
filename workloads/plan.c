/*
 * plan.c - parallel plans: settings, derivation of the data-parallel degree
 * and micro-batch count, validation against the model, rank numbering.
 */
#include "workloads/plan.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sim/base/names.h"
#include "sim/base/units.h"
#include "workloads/schedule.h"
#include "workloads/stack.h"

static const char *const dim_names[PD_COUNT] = {"tp", "cp", "dp", "pp"};

void plan_init(struct plan *p)
{
  memset(p, 0, sizeof *p);
  p->tp = p->pp = p->cp = p->ep = 1;
  p->dp = 0; /* derived */
  p->micro_batch = 1;
  p->global_batch = 0; /* required */
  p->schedule = SCHED_1F1B;
  p->vchunks = 1;
  p->recompute = RECOMP_NONE;
  p->bucket_bytes = 80e6;
  p->overlap_grad = true;
  p->grad_dtype = DTYPE_BF16;
  p->attn_kernel = -1;
  p->moe_imbalance = 1;
  p->pieces = 1;
  p->comm_contention = true;
  for (int d = 0; d < PD_COUNT; d++)
    p->order[d] = (enum pdim)d;
  for (int k = 0; k < PK_COUNT; k++)
    snprintf(p->origin[k], sizeof p->origin[k], "plan");
}


const char *sched_name(enum sched_kind s)
{
  static const char *n[] = {"gpipe", "1f1b", "interleaved"};
  return n[s];
}

const char *recompute_name(enum recompute r)
{
  static const char *n[] = {"none", "selective", "full"};
  return n[r];
}

static int parse_bool(const char *v, bool *out, struct weft_err *err)
{
  int i;
  int rc = names_choice(v, (const char *const[]){"yes", "no", NULL}, &i, err);
  if (!rc)
    *out = i == 0;
  return rc;
}

/* A setting with a few allowed words: store the index as an int. */
static int choice(const char *v, const char *const *words, int *out,
                  struct weft_err *err)
{
  return names_choice(v, words, out, err);
}

static int parse_order(const char *v, enum pdim out[PD_COUNT],
                       struct weft_err *err)
{
  char buf[64];
  snprintf(buf, sizeof buf, "%s", v);
  int n = 0;
  bool seen[PD_COUNT] = {false};
  char *save = NULL;
  for (char *t = strtok_r(buf, "-,", &save); t; t = strtok_r(NULL, "-,", &save)) {
    int d = -1;
    for (int i = 0; i < PD_COUNT; i++)
      if (strcmp(t, dim_names[i]) == 0)
        d = i;
    if (d < 0 || seen[d] || n >= PD_COUNT)
      return weft_errf(err, WEFT_EINVAL, "'%s' is not an order of tp, cp, "
                       "dp and pp such as tp-cp-dp-pp", v);
    seen[d] = true;
    out[n++] = (enum pdim)d;
  }
  if (n != PD_COUNT)
    return weft_errf(err, WEFT_EINVAL, "'%s' is not an order of tp, cp, dp "
                     "and pp such as tp-cp-dp-pp", v);
  return 0;
}

/* ---- settings: one setter per key ------------------------------------ */

static int set_degree(struct plan *p, enum plan_key k, const char *v,
                      struct weft_err *err)
{
  long d;
  int rc = units_parse_int(v, 1, WEFT_MAX_DEGREE, &d, err);
  if (!rc)
    *(k == PK_TP ? &p->tp : k == PK_PP ? &p->pp : k == PK_DP ? &p->dp
      : k == PK_CP ? &p->cp : k == PK_ETP ? &p->etp : &p->ep) = d;
  return rc;
}

static int set_batch(struct plan *p, enum plan_key k, const char *v,
                     struct weft_err *err)
{
  long b;
  int rc = units_parse_int(v, 1, WEFT_MAX_BATCH, &b, err);
  if (!rc)
    *(k == PK_MICRO_BATCH ? &p->micro_batch : &p->global_batch) = b;
  return rc;
}

/* --tensor3d GX,GY,GZ: the grid; TP becomes its product. */
static int set_tensor3d(struct plan *p, enum plan_key k, const char *v,
                        struct weft_err *err)
{
  (void)k;
  long g[3];
  const char *q = v;
  int n = 0;
  for (; n < 3; n++) { /* exactly three comma-separated degrees */
    const char *comma = strchr(q, ',');
    size_t len = comma ? (size_t)(comma - q) : strlen(q);
    char tok[32];
    if (len == 0 || len >= sizeof tok || (n < 2) != (comma != NULL))
      break;
    memcpy(tok, q, len);
    tok[len] = '\0';
    int rc = units_parse_int(tok, 1, WEFT_MAX_DEGREE, &g[n], err);
    if (rc)
      return rc;
    q = comma ? comma + 1 : q + len;
  }
  if (n != 3)
    return weft_errf(err, WEFT_EINVAL, "'%s' is not GX,GY,GZ (three "
                     "degrees, such as 2,2,2)", v);
  if (g[0] * g[1] * g[2] > WEFT_MAX_DEGREE)
    return weft_errf(err, WEFT_ELIMIT, "a grid of %ld GPUs exceeds the limit "
                     "of %d", g[0] * g[1] * g[2], WEFT_MAX_DEGREE);
  for (int i = 0; i < 3; i++)
    p->t3[i] = g[i];
  return 0;
}

static const char *const compress_names[] = {
    "none", "fp16", "powersgd", "topk", "randomk", "sign", "efsign", "qsgd",
    NULL};

const char *compress_name(enum compress c) { return compress_names[c]; }

/* --compress METHOD[:PARAM] */
static int set_compress(struct plan *p, enum plan_key k, const char *v,
                        struct weft_err *err)
{
  (void)k;
  char name[32];
  const char *colon = strchr(v, ':');
  size_t n = colon ? (size_t)(colon - v) : strlen(v);
  if (n >= sizeof name)
    n = sizeof name - 1;
  memcpy(name, v, n);
  name[n] = '\0';
  int i;
  int rc = choice(name, compress_names, &i, err);
  if (rc)
    return rc;
  enum compress c = (enum compress)i;
  double param = c == CM_POWERSGD ? 1 : c == CM_TOPK || c == CM_RANDOMK ? 0.01
                 : c == CM_QSGD ? 8 : 0;
  if (colon) {
    if (c == CM_NONE || c == CM_FP16 || c == CM_SIGN || c == CM_EFSIGN)
      return weft_errf(err, WEFT_EINVAL, "'%s' takes no parameter", name);
    char *end;
    param = strtod(colon + 1, &end);
    bool frac = c == CM_TOPK || c == CM_RANDOMK;
    bool whole = !frac && param == floor(param);
    if (end == colon + 1 || *end || !(param > 0) ||
        (frac && param >= 1) || (!frac && (!whole || param > 1024)) ||
        (c == CM_QSGD && param > 16))
      return weft_errf(err, WEFT_EINVAL, "'%s': %s", v,
                       frac ? "the fraction kept is between 0 and 1"
                       : c == CM_QSGD ? "the bits per element are 1 to 16"
                                      : "the rank is an integer from 1 to 1024");
  }
  p->compress = c;
  p->compress_param = param;
  return 0;
}

static int set_pieces(struct plan *p, enum plan_key k, const char *v,
                      struct weft_err *err)
{
  (void)k;
  return units_parse_int(v, 1, 64, &p->pieces, err);
}

static int set_flag(struct plan *p, enum plan_key k, const char *v,
                    struct weft_err *err)
{
  bool *f = k == PK_SP ? &p->sp : k == PK_OVERLAP_GRAD ? &p->overlap_grad
          : k == PK_SPLIT_UNITS ? &p->split_units
          : k == PK_OVERLAP_PARAM_GATHER ? &p->overlap_param_gather
          : k == PK_COMM_CONTENTION ? &p->comm_contention
          : k == PK_FP8_PARAMS ? &p->fp8_params
          : k == PK_OVERLAP_MOE_A2A ? &p->a2a_overlap
          : k == PK_DELAY_WGRAD ? &p->delay_wgrad
          : k == PK_ASYNC_TP_GRAD ? &p->async_tp_grad
          : k == PK_MOE_SHARED_OVERLAP ? &p->moe_shared_overlap : &p->fsdp;
  int rc = parse_bool(v, f, err);
  if (!rc && k == PK_FSDP && p->fsdp)
    p->zero = 3;
  return rc;
}

static int set_schedule(struct plan *p, enum plan_key k, const char *v,
                        struct weft_err *err)
{
  long n;
  if (strcmp(v, "gpipe") == 0 || strcmp(v, "1f1b") == 0) {
    p->schedule = v[0] == 'g' ? SCHED_GPIPE : SCHED_1F1B;
    p->vchunks = 1;
    p->vgroup = 0;
    return 0;
  }
  if (strncmp(v, "interleaved:", 12) != 0)
    return weft_errf(err, WEFT_EINVAL, "'%s' is not gpipe, 1f1b or "
                     "interleaved:V", v);
  /* interleaved:V:G sets Megatron-Core's microbatch_group_size_per_vp_stage
   * (schedule.h); the check against PP and the micro-batches waits for
   * plan_resolve. */
  char chunks[32];
  const char *colon = strchr(v + 12, ':');
  long g = 0;
  size_t len = colon ? (size_t)(colon - (v + 12)) : strlen(v + 12);
  snprintf(chunks, sizeof chunks, "%.*s", (int)(len < 31 ? len : 31), v + 12);
  int rc = units_parse_int(chunks, 2, WEFT_MAX_LAYERS, &n, err);
  if (!rc && colon)
    rc = units_parse_int(colon + 1, 1, WEFT_MAX_MICROBATCHES, &g, err);
  if (!rc) {
    p->schedule = SCHED_INTERLEAVED;
    p->vchunks = n;
    p->vgroup = g;
  }
  return rc;
}

static int set_recompute(struct plan *p, enum plan_key k, const char *v,
                         struct weft_err *err)
{
  int r;
  int rc = choice(v, (const char *const[]){"none", "selective", "full", NULL},
                  &r, err);
  if (!rc)
    p->recompute = (enum recompute)r;
  return rc;
}

static int set_bucket(struct plan *p, enum plan_key k, const char *v,
                      struct weft_err *err)
{
  double b;
  int rc = units_parse_pos(v, UNIT_SIZE, 1e12, &b, err);
  if (!rc)
    p->bucket_bytes = b;
  return rc;
}

static int set_order(struct plan *p, enum plan_key k, const char *v,
                     struct weft_err *err)
{
  return parse_order(v, p->order, err);
}

static int set_stage_layers(struct plan *p, enum plan_key k, const char *v,
                            struct weft_err *err)
{
  long n;
  int rc = units_parse_int(v, 1, WEFT_MAX_LAYERS, &n, err);
  if (!rc)
    *(k == PK_FIRST_LAYERS ? &p->first_layers : &p->last_layers) = n;
  return rc;
}

static int set_imbalance(struct plan *p, enum plan_key k, const char *v,
                         struct weft_err *err)
{
  return units_parse_real(v, 1, 1024, &p->moe_imbalance, err);
}

/* --host-op TIME: the host's issue time per task, at most a second. */
static int set_host_op(struct plan *p, enum plan_key k, const char *v,
                       struct weft_err *err)
{
  (void)k;
  double t = 0;
  /* A bare 0 (no host clock, the default) needs no unit. */
  int rc = strcmp(v, "0") == 0 ? 0 : units_parse(v, UNIT_TIME, &t, err);
  if (!rc && !(t >= 0 && t <= 1))
    rc = weft_errf(err, WEFT_EINVAL, "'%s' is not a time from 0 to 1s", v);
  if (!rc)
    p->host_op_s = t;
  return rc;
}

static int set_zero(struct plan *p, enum plan_key k, const char *v,
                    struct weft_err *err)
{
  long z;
  int rc = units_parse_int(v, 0, 3, &z, err);
  if (!rc)
    p->zero = (int)z;
  return rc;
}

static int set_hsdp(struct plan *p, enum plan_key k, const char *v,
                    struct weft_err *err)
{
  long n;
  int rc = units_parse_int(v, 1, WEFT_MAX_DEGREE, &n, err);
  if (!rc) {
    p->hsdp = n;
    p->fsdp = true;
    p->zero = 3;
  }
  return rc;
}

static int set_grad_dtype(struct plan *p, enum plan_key k, const char *v,
                          struct weft_err *err)
{
  static const enum dtype types[] = {DTYPE_BF16, DTYPE_FP16, DTYPE_FP32};
  int i;
  int rc = choice(v, (const char *const[]){"bf16", "fp16", "fp32", NULL}, &i,
                  err);
  if (!rc)
    p->grad_dtype = types[i];
  return rc;
}

/* --p2p async|blocking. */
static int set_p2p(struct plan *p, enum plan_key k, const char *v,
                   struct weft_err *err)
{
  (void)k;
  int i;
  int rc = choice(v, (const char *const[]){"async", "blocking", NULL}, &i,
                  err);
  if (!rc)
    p->blocking_p2p = i == 1;
  return rc;
}

/* --attention: flash (the GPU's default fused kernel), unfused, or a
 * fused kernel by name (catalog.h, enum attn_kernel order). */
static int set_attention(struct plan *p, enum plan_key k, const char *v,
                         struct weft_err *err)
{
  (void)k;
  int i;
  int rc = choice(v, (const char *const[]){"flash", "unfused", "flash2",
                                           "flash3", "cudnn", "sdpa", NULL},
                  &i, err);
  if (!rc) {
    p->unfused_attention = i == 1;
    p->attn_sdpa = i == 5; /* the kernel follows the GPU (workload.c) */
    p->attn_kernel = i >= 2 && i <= 4 ? attn_kernel_from_name(v) : -1;
  }
  return rc;
}

static const char *const shard_impls[] = {"ideal", "fsdp1", "fsdp2",
                                          "deepspeed", "deepspeed-2021",
                                          "megatron", "megatron-fsdp",
                                          "megatron-fsdp-ub", NULL};

const char *shard_impl_name(enum shard_impl si) { return shard_impls[si]; }

bool shard_impl_mfsdp(enum shard_impl si)
{
  return si == SI_MEGATRON_FSDP || si == SI_MEGATRON_FSDP_UB;
}

static int set_shard_impl(struct plan *p, enum plan_key k, const char *v,
                          struct weft_err *err)
{
  (void)k;
  int i;
  int rc = choice(v, shard_impls, &i, err);
  if (!rc)
    p->shard_impl = (enum shard_impl)i;
  return rc;
}

static const char *const grad_accums[] = {"autograd", "buffer", "fused",
                                          NULL};

const char *grad_accum_name(enum grad_accum ga) { return grad_accums[ga]; }

/* fusion=fused|eager|jit. */
static int set_fusion(struct plan *p, enum plan_key k, const char *v,
                      struct weft_err *err)
{
  static const char *const fusions[] = {"fused", "eager", "jit", NULL};
  int i;
  (void)k;
  int rc = choice(v, fusions, &i, err);
  if (!rc) {
    p->eager = i == 1;
    p->jit = i == 2;
  }
  return rc;
}

/* selective=attention|ops. */
static int set_selective(struct plan *p, enum plan_key k, const char *v,
                         struct weft_err *err)
{
  static const char *const sels[] = {"attention", "ops", NULL};
  int i;
  (void)k;
  int rc = choice(v, sels, &i, err);
  if (!rc)
    p->sel_ops = i == 1;
  return rc;
}

/* stack=NAME: recorded here; plan_set applies its settings. */
static int set_stack(struct plan *p, enum plan_key k, const char *v,
                     struct weft_err *err)
{
  (void)k;
  /* One stack per job: a second would keep what the first set and the
   * second does not (or refuses, as FSDP after zero=1). */
  if (p->stack[0])
    return weft_errf(err, WEFT_EINVAL, "the job already runs stack %s (%s); "
                     "one stack per job", p->stack, p->origin[PK_STACK]);
  if (strcmp(v, "none") == 0) /* weft's defaults, as a sweep's baseline */
    return 0;
  if (stack_check(v, err))
    return -1;
  snprintf(p->stack, sizeof p->stack, "%s", v);
  return 0;
}

static int set_grad_accum(struct plan *p, enum plan_key k, const char *v,
                          struct weft_err *err)
{
  (void)k;
  int i;
  int rc = choice(v, grad_accums, &i, err);
  if (!rc)
    p->grad_accum = (enum grad_accum)i;
  return rc;
}

static const char *const xents[] = {"fp32", "16bit", "fused", NULL};

const char *cross_entropy_name(enum cross_entropy x) { return xents[x]; }

static int set_cross_entropy(struct plan *p, enum plan_key k, const char *v,
                             struct weft_err *err)
{
  (void)k;
  int i;
  int rc = choice(v, xents, &i, err);
  if (!rc)
    p->xent = (enum cross_entropy)i;
  return rc;
}

static const char *const fp8_recipes[] = {"delayed", "mxfp8", NULL};

const char *fp8_recipe_name(enum fp8_recipe r) { return fp8_recipes[r]; }

static int set_fp8_recipe(struct plan *p, enum plan_key k, const char *v,
                          struct weft_err *err)
{
  (void)k;
  int i;
  int rc = choice(v, fp8_recipes, &i, err);
  if (!rc)
    p->fp8_recipe = (enum fp8_recipe)i;
  return rc;
}

static const char *const mem_frameworks[] = {"zero", "megatron", "torchtitan",
                                             NULL};

const char *mem_framework_name(enum mem_framework f)
{
  return mem_frameworks[f];
}

static int set_mem_framework(struct plan *p, enum plan_key k, const char *v,
                             struct weft_err *err)
{
  (void)k;
  int i;
  int rc = choice(v, mem_frameworks, &i, err);
  if (!rc)
    p->mem_framework = (enum mem_framework)i;
  return rc;
}

static const char *const tp_overlaps[] = {"no", "te", "nemo", "torch",
                                          NULL};

const char *tp_overlap_name(enum tp_overlap o) { return tp_overlaps[o]; }

static int set_tp_overlap(struct plan *p, enum plan_key k, const char *v,
                          struct weft_err *err)
{
  (void)k;
  int i;
  int rc = choice(v, tp_overlaps, &i, err);
  if (!rc)
    p->tp_overlap = (enum tp_overlap)i;
  return rc;
}

static const char *const moe_dispatchers[] = {"basic", "alltoall",
                                              "allgather", "deepep", NULL};

const char *moe_dispatcher_name(enum moe_dispatcher d)
{
  return moe_dispatchers[d];
}

static int set_moe_dispatcher(struct plan *p, enum plan_key k, const char *v,
                              struct weft_err *err)
{
  (void)k;
  int i;
  int rc = choice(v, moe_dispatchers, &i, err);
  if (!rc)
    p->moe_dispatcher = (enum moe_dispatcher)i;
  return rc;
}

/* --moe-capacity F: 0 (dropless) or a factor up to the experts' count
 * (above it nothing can be dropped). */
static int set_moe_capacity(struct plan *p, enum plan_key k, const char *v,
                            struct weft_err *err)
{
  (void)k;
  return units_parse_real(v, 0, 1024, &p->moe_capacity, err);
}

static int set_moe_pad(struct plan *p, enum plan_key k, const char *v,
                       struct weft_err *err)
{
  (void)k;
  return parse_bool(v, &p->moe_pad, err);
}

static int set_moe_count(struct plan *p, enum plan_key k, const char *v,
                         struct weft_err *err)
{
  return units_parse_int(v, k == PK_MOE_NODE_GPUS ? 1 : 0, WEFT_MAX_DEGREE,
                         k == PK_MOE_NODE_GPUS ? &p->moe_node_gpus
                                               : &p->moe_max_nodes, err);
}

typedef int (*plan_setter)(struct plan *p, enum plan_key k, const char *v,
                           struct weft_err *err);

/* The settings: name (as in files; flags take '-' for '_'), the form of
 * the value for the help, and its setter. */
static const struct {
  const char *name, *hint;
  plan_setter set;
  const char *help; /* meaning and default, for the help */
} keys[PK_COUNT] = {
    [PK_TP] = {"tp", "N", set_degree,
            "tensor-parallel degree (Megatron's 1D split of heads and FFN; "
            "default 1)"},
    [PK_PP] = {"pp", "N", set_degree,
        "pipeline-parallel degree: stages of consecutive layers (default 1)"},
    [PK_DP] = {"dp", "N", set_degree,
        "data-parallel degree (default: GPUs / (TP x PP x CP))"},
    [PK_CP] = {"cp", "N", set_degree,
            "context-parallel degree: the sequence split, ring attention "
            "(default 1)"},
    [PK_EP] = {"ep", "N", set_degree,
        "expert-parallel degree, carved out of DP (MoE models; default 1)"},
    [PK_SP] = {"sp", "yes|no", set_flag,
            "sequence parallelism: norms and dropout split over TP (needs TP "
            "> 1; default no)"},
    [PK_MICRO_BATCH] = {"micro_batch", "N", set_batch,
        "sequences per micro-batch (default 1)"},
    [PK_GLOBAL_BATCH] = {"global_batch", "N", set_batch,
        "sequences per iteration (required; a multiple of micro-batch x DP)"},
    [PK_SCHEDULE] = {"schedule", "gpipe|1f1b|interleaved:V[:G]",
            set_schedule, "pipeline schedule; interleaved:V runs V model "
            "chunks per GPU, micro-batches in groups of G per chunk "
            "(Megatron-Core's microbatch_group_size_per_vp_stage, G in [PP, "
            "M] or all M < PP; default PP); default 1f1b"},
    [PK_RECOMPUTE] = {"recompute", "none|selective|full", set_recompute,
            "activation recomputation: none, selective (attention core) or "
            "full (default none)"},
    [PK_BUCKET] = {"bucket", "SIZE", set_bucket,
            "data-parallel gradient bucket size (default 80MB, Megatron's 40M"
            " elements)"},
    [PK_OVERLAP_GRAD] = {"overlap_grad", "yes|no", set_flag,
        "reduce gradient buckets during the backward pass (default yes)"},
    [PK_ORDER] = {"order", "tp-cp-dp-pp", set_order,
        "rank order of the dimensions, innermost first (default tp-cp-dp-pp)"},
    [PK_ATTENTION] = {"attention", "flash|unfused|flash2|flash3|cudnn|sdpa",
                      set_attention,
            "attention kernel: flash (the GPU's default fused kernel), a "
            "fused kernel by name, sdpa (PyTorch 2.5-2.10's SDPA: "
            "FlashAttention-2 where the GPU runs it, else the default), or "
            "unfused batched GEMMs with materialized scores (default flash)"},
    [PK_P2P] = {"p2p", "async|blocking", set_p2p,
            "pipeline send/recv: async, or blocking (Megatron-LM 2021: "
            "compute waits for delivery; default async)"},
    [PK_GRAD_DTYPE] = {"grad_dtype", "bf16|fp16|fp32", set_grad_dtype,
        "gradients as reduced and stored (default bf16)"},
    [PK_ZERO] = {"zero", "0..3", set_zero,
            "ZeRO stage over DP: 1 shards optimizer state, 2 also gradients, "
            "3 also parameters (default 0)"},
    [PK_FSDP] = {"fsdp", "yes|no", set_flag,
        "PyTorch FSDP: ZeRO-3 with a unit per layer (default no)"},
    [PK_HSDP] = {"hsdp", "N", set_hsdp,
            "hybrid sharding: shard within groups of N DP ranks, replicate "
            "across them (implies FSDP)"},
    [PK_MOE_IMBALANCE] = {"moe_imbalance", "F", set_imbalance,
        "tokens of the busiest expert over the mean, >= 1 (default 1)"},
    [PK_FIRST_LAYERS] = {"first_stage_layers", "N", set_stage_layers,
        "layers of the first pipeline stage (default: an even share)"},
    [PK_LAST_LAYERS] = {"last_stage_layers", "N", set_stage_layers,
        "layers of the last pipeline stage (default: an even share)"},
    [PK_SPLIT_UNITS] = {"account_embedding_loss", "yes|no", set_flag,
            "count the embedding and the loss as one layer each in the "
            "pipeline split (default no)"},
    [PK_SHARD_IMPL] = {"shard_impl",
                       "ideal|fsdp1|fsdp2|deepspeed|deepspeed-2021|megatron|"
                       "megatron-fsdp|megatron-fsdp-ub",
                       set_shard_impl,
            "how ZeRO-3/FSDP (fsdp1, fsdp2, deepspeed, deepspeed-2021, "
            "megatron-fsdp: Megatron-Core's Megatron-FSDP, -ub with NCCL "
            "user buffers and double buffering as NeMo sets it) or ZeRO-1 "
            "(megatron: Megatron-LM's distributed optimizer) issues its "
            "collectives, as each implementation does (default ideal)"},
    [PK_CROSS_ENTROPY] = {"cross_entropy", "fp32|16bit|fused",
                          set_cross_entropy,
            "the loss: fp32 (Megatron's default, logits cast to FP32), 16bit,"
            " or one fused kernel (default fp32)"},
    [PK_FP8_RECIPE] = {"fp8_recipe", "delayed|mxfp8", set_fp8_recipe,
            "how a model in FP8 scales its tensors: delayed (per tensor, "
            "Transformer Engine's default) or mxfp8 (32-element blocks, "
            "Blackwell) (default delayed)"},
    [PK_TENSOR3D] = {"tensor3d", "GX,GY,GZ", set_tensor3d,
            "3D tensor parallelism over a GX x GY x GZ grid (TP = GX GY GZ; "
            "Tensor3D/AxoNN; default: Megatron's 1D TP)"},
    [PK_PIECES] = {"overdecompose", "K", set_pieces,
            "Tensor3D: split each micro-batch into K pieces whose "
            "collectives overlap the next piece's compute (default 1)"},
    [PK_COMPRESS] = {"compress",
                     "none|fp16|powersgd[:R]|topk[:F]|randomk[:F]|sign|efsign"
                     "|qsgd[:B]", set_compress,
            "compress data-parallel gradient buckets as DDP communication "
            "hooks do (default none)"},
    [PK_OVERLAP_PARAM_GATHER] = {"overlap_param_gather", "yes|no", set_flag,
            "ZeRO-1/2: all-gather the updated parameters bucket by bucket at "
            "the next forward pass, as Megatron-LM's --overlap-param-gather, "
            "instead of after the optimizer step (default no)"},
    [PK_GRAD_ACCUM] = {"grad_accum", "autograd|buffer|fused", set_grad_accum,
            "how gradients accumulate over micro-batches: autograd (PyTorch: "
            "later micro-batches added in place), buffer (Megatron's FP32 "
            "main_grad hook) or fused (Megatron's gradient accumulation "
            "fusion, no pass; the default with shard_impl megatron; else "
            "autograd)"},
    [PK_STACK] = {"stack", "NAME", set_stack,
            "software stack: sets how a framework runs the job (weft list "
            "stacks shows each one's settings); settings given to the job "
            "override it (default none)"},
    [PK_FUSION] = {"fusion", "fused|eager|jit", set_fusion,
            "the layer's memory-bound work: fused kernels (Transformer "
            "Engine, Megatron-Core, torch.compile), eager PyTorch (RMSNorm,"
            " SwiGLU and RoPE as separate ATen ops) or jit (Megatron-LM "
            "2021 on PyTorch 1.8: TorchScript-fused bias-GeLU and "
            "bias-dropout-add, the biases' gradients, copies and scalings "
            "as ATen ops; GPT models; default fused)"},
    [PK_SELECTIVE] = {"selective", "attention|ops", set_selective,
            "what recompute=selective recomputes: the attention core "
            "(Megatron-LM) or torchtitan's op policy (element-wise work and "
            "every second matmul; default attention)"},
    [PK_MEM_FRAMEWORK] = {"mem_framework", "zero|megatron|torchtitan",
                          set_mem_framework,
            "whose allocations the memory estimate follows: zero (the ZeRO "
            "paper's 16 bytes per parameter), megatron (Megatron-Core with "
            "Transformer Engine) or torchtitan (FSDP2) (default zero)"},
    [PK_COMM_CONTENTION] = {"comm_contention", "yes|no", set_flag,
            "kernels beside a collective or transfer run on the SMs and HBM "
            "bandwidth its NCCL kernel leaves them (default yes)"},
    [PK_HOST_OP] = {"host_op", "TIME", set_host_op,
            "host time to issue each kernel, collective and send from one "
            "CPU thread; kernels wait for it, and the host waits for the GPU"
            " before the optimizer step (default 0: no host clock)"},
    [PK_FP8_PARAMS] = {"fp8_params", "yes|no", set_flag,
            "FP8 models: linear weights held in FP8 (Transformer Engine's "
            "FP8 parameters, Megatron's --fp8-param-gather): no BF16 copy "
            "beside the FP8 cache; the distributed optimizer's (ZeRO-1/2) "
            "parameter gathers at 1 byte (default no)"},
    [PK_TP_COMM_OVERLAP] = {"tp_comm_overlap", "no|te|nemo|torch",
                            set_tp_overlap,
            "overlap TP collectives with the GEMMs around them: te (Megatron-"
            "Core's --tp-comm-overlap with Transformer Engine's userbuffers "
            "at their defaults), nemo (with NeMo's H100 configuration) or "
            "torch (PyTorch's async TP); needs SP (default no)"},
    [PK_ASYNC_TP_GRAD] = {"async_tp_grad", "yes|no", set_flag,
            "a column-parallel linear's input-gradient TP all-reduce (SP: "
            "reduce-scatter) beside its weight-gradient GEMM, and with SP "
            "its input gathered again beside the data gradient (Megatron-"
            "LM's --async-tensor-model-parallel-allreduce, 2022 on; "
            "default yes with SP at TP > 1, as Megatron always runs it, "
            "except under torchtitan's memory framework; else no)"},
    [PK_MOE_DISPATCHER] = {"moe_dispatcher",
                           "basic|alltoall|allgather|deepep",
                           set_moe_dispatcher,
            "how MoE tokens reach the experts: basic (one all-to-all of the "
            "routed copies each way) or Megatron-Core's MoE layer with its "
            "alltoall, allgather or flex/DeepEP dispatcher (router and "
            "permutation kernels; default basic)"},
    [PK_MOE_CAPACITY] = {"moe_capacity", "F", set_moe_capacity,
            "expert capacity factor (Megatron's --moe-expert-capacity-"
            "factor): an expert takes at most F x tokens x top-k / experts "
            "rows, the rest are dropped (default 0: dropless)"},
    [PK_MOE_PAD] = {"moe_pad", "yes|no", set_moe_pad,
            "pad every expert's rows to its capacity (Megatron's --moe-pad-"
            "expert-input-to-capacity; needs moe_capacity; default no)"},
    [PK_MOE_NODE_GPUS] = {"moe_node_gpus", "N", set_moe_count,
            "deepep: GPUs of one NVLink node, where DeepEP forwards tokens "
            "over NVLink after one RDMA hop (default: the cluster's node)"},
    [PK_MOE_MAX_NODES] = {"moe_max_nodes", "M", set_moe_count,
            "deepep: node-limited routing, each token's experts on at most M "
            "nodes (DeepSeek-V3: 4; default 0: no limit)"},
    [PK_ETP] = {"etp", "N", set_degree,
            "expert tensor-parallel degree, MoE parallel folding (Megatron-"
            "Core's --expert-tensor-parallel-size): experts split over N "
            "ranks instead of TP, expert groups etp-ep-edp over each stage's "
            "ranks (default: TP, no folding)"},
    [PK_OVERLAP_MOE_A2A] = {"overlap_moe_expert_parallel_comm", "yes|no",
                            set_flag,
            "Megatron-Core's combined 1F1B: the steady state's forward and "
            "backward of two micro-batches run as one step, each one's MoE "
            "all-to-alls beside the other's compute (needs EP > 1, "
            "alltoall or deepep, interleaved with PP > 1; default no)"},
    [PK_DELAY_WGRAD] = {"delay_wgrad_compute", "yes|no", set_flag,
            "with overlap_moe_expert_parallel_comm: a backward sub-block's "
            "weight gradients after its data gradients, the all-to-all after "
            "it waiting for the data gradients only (Megatron-Core's "
            "--delay-wgrad-compute; default no)"},
    [PK_MOE_SHARED_OVERLAP] = {"moe_shared_expert_overlap", "yes|no",
                               set_flag,
            "MoE shared experts on a stream of their own, FC1 beside the "
            "dispatch's all-to-alls and FC2 beside the combine's (Megatron-"
            "Core's --moe-shared-expert-overlap; alltoall or deepep, not "
            "with overlap_moe_expert_parallel_comm; default no)"},
};

int plan_key_from_name(const char *name)
{
  return names_index(name, keys, PK_COUNT, sizeof keys[0]);
}

const char *plan_key_name(enum plan_key k) { return keys[k].name; }
const char *plan_key_hint(enum plan_key k) { return keys[k].hint; }
const char *plan_key_help(enum plan_key k) { return keys[k].help; }

int plan_set(struct plan *p, enum plan_key k, const char *value,
             const char *origin, struct weft_err *err)
{
  if (k < 0 || k >= PK_COUNT)
    return weft_errf(err, WEFT_EINVAL, "%s: no such plan setting", origin);
  if (keys[k].set(p, k, value, err))
    return weft_err_prefix(err, origin);
  p->set[k] = true;
  snprintf(p->origin[k], sizeof p->origin[k], "%s", origin);
  if (k == PK_STACK && p->stack[0]) /* its settings, where the job sets none */
    return stack_apply(p, value, origin, err);
  return 0;
}

/* The layout's expert TP: etp where set; TP where the allgather or flex
 * dispatcher runs over the tp_ep group at TP > 1, whose members are
 * Megatron-Core's expert generator's whatever --expert-tensor-parallel-size
 * (parallel_state.py; at CP 1, which check_moe asks for, its groups are
 * the unfolded ones, rank for rank).  This also keeps the TP-symmetric
 * shortcut off (symmetry.c, etp): a rank standing for its TP block cannot
 * take part in collectives over TP x EP for the others. */
static long layout_etp(const struct plan *p)
{
  if (p->etp > 0)
    return p->etp;
  bool tpep = p->moe_dispatcher == MD_ALLGATHER ||
              p->moe_dispatcher == MD_DEEPEP;
  return tpep && p->tp > 1 && p->ep >= 1 ? p->tp : 0;
}

void plan_layout(const struct plan *p, struct graph_layout *out)
{
  *out = (struct graph_layout){p->tp, p->pp, p->dp, p->cp, p->ep, p->vchunks,
                               {PD_TP, PD_CP, PD_DP, PD_PP},
                               p->hsdp ? p->hsdp : p->dp,
                               {p->t3[0], p->t3[1], p->t3[2]},
                               p->ep_node, layout_etp(p)};
  for (int i = 0; i < PD_COUNT; i++)
    out->order[i] = p->order[i];
}

/* Layers of virtual stage i of n for L layers (see plan.h). */
static long vstage_layers(long L, long n, long i)
{
  long base = L / n, extra = L % n;
  if (n <= 2 || extra == 0)
    return base + (i < extra ? 1 : 0);
  long middle = n - 2;
  if (extra <= middle)
    return base + (i >= 1 && i <= extra ? 1 : 0);
  long ends = extra - middle; /* 1: the first gets one more as well */
  return base + ((i >= 1 && i <= middle) || i == 0 || (ends == 2 && i == n - 1)
                     ? 1 : 0);
}

/* Layers of pipeline stage s under first_layers/last_layers (Megatron-LM's
 * split: the set ends, the rest evenly over the other stages). */
static long stage_layers(const struct plan *p, long L, long s)
{
  long rest = L, left = p->pp;
  if (p->first_layers) {
    rest -= p->first_layers;
    left--;
  }
  if (p->last_layers) {
    rest -= p->last_layers;
    left--;
  }
  if (s == 0 && p->first_layers)
    return p->first_layers;
  if (s == p->pp - 1 && p->last_layers)
    return p->last_layers;
  return left > 0 ? rest / left : 0;
}

/* Layers of virtual stage v (chunk v / pp of stage v % pp). */
static long chunk_layers(const struct plan *p, long L, long v)
{
  long n = p->pp * p->vchunks;
  if (p->first_layers || p->last_layers)
    return stage_layers(p, L, v % p->pp) / p->vchunks;
  if (p->split_units)
    return (L + 2) / n - (v == 0) - (v == n - 1);
  return vstage_layers(L, n, v);
}

void plan_chunk_layers(const struct plan *p, const struct model *m,
                       long stage, long chunk, long *out_first,
                       long *out_count)
{
  long v = chunk * p->pp + stage, first = 0;
  for (long i = 0; i < v; i++)
    first += chunk_layers(p, m->layers, i);
  *out_first = first;
  *out_count = chunk_layers(p, m->layers, v);
}

/* The uneven split's settings against each other and the layers. */
static int check_split(const struct plan *p, const struct model *m,
                       struct weft_err *err)
{
  long L = m->layers, v = p->vchunks, n = p->pp * v;
  const char *o = p->first_layers ? p->origin[PK_FIRST_LAYERS]
                                  : p->origin[PK_LAST_LAYERS];
  if ((p->first_layers || p->last_layers) && p->split_units)
    return weft_errf(err, WEFT_EINVAL, "%s: give stage layers or "
                     "account_embedding_loss, not both", o);
  if (p->first_layers || p->last_layers) {
    long ends = (p->first_layers > 0) + (p->last_layers > 0);
    long rest = L - p->first_layers - p->last_layers, left = p->pp - ends;
    if (p->pp < 2)
      return weft_errf(err, WEFT_EINVAL, "%s: stage layers need PP > 1", o);
    if (rest < 0 || (left == 0 && rest != 0) || (left > 0 && rest < left))
      return weft_errf(err, WEFT_EINVAL, "%s: %ld layers leave %ld for the "
                       "other %ld stages", o, L, rest, left);
    if (left > 0 && rest % left != 0)
      return weft_errf(err, WEFT_EINVAL, "%s: the other %ld stages do not "
                       "divide the remaining %ld layers", o, left, rest);
    for (long s = 0; s < p->pp; s++)
      if (stage_layers(p, L, s) % v != 0)
        return weft_errf(err, WEFT_EINVAL, "%s: stage %ld's %ld layers do "
                         "not divide into %ld chunks", o, s,
                         stage_layers(p, L, s), v);
    return 0;
  }
  if (p->split_units) {
    if ((L + 2) % n != 0 || (L + 2) / n < 2)
      return weft_errf(err, WEFT_EINVAL, "%s: %ld layers with the embedding "
                       "and the loss do not split evenly into %ld virtual "
                       "stages", p->origin[PK_SPLIT_UNITS], L, n);
    return 0;
  }
  if (v > 1 && L % n != 0)
    return weft_errf(err, WEFT_EINVAL, "%s: PP %ld x %ld chunks do not "
                     "divide %ld layers (first_stage_layers, "
                     "last_stage_layers or account_embedding_loss allow an "
                     "uneven split)", p->origin[PK_SCHEDULE], p->pp, v, L);
  return 0;
}

/* Tensor3D's own checks: the grid against TP, the model's dimensions and
 * the settings it does not combine with. */
static int check_tensor3d(struct plan *p, const struct model *m,
                          struct weft_err *err)
{
  const char *o = p->origin[PK_TENSOR3D];
  long gx = p->t3[0], gy = p->t3[1], gz = p->t3[2];
  if (!gx) {
    if (p->pieces > 1)
      return weft_errf(err, WEFT_EINVAL, "%s: over-decomposition applies to "
                       "Tensor3D (--tensor3d)", p->origin[PK_PIECES]);
    return 0;
  }
  if (p->set[PK_TP] && p->tp != gx * gy * gz)
    return weft_errf(err, WEFT_EINVAL, "%s: a grid of %ld x %ld x %ld is TP "
                     "%ld, not %ld", o, gx, gy, gz, gx * gy * gz, p->tp);
  p->tp = gx * gy * gz;
  const char *what = p->sp ? "sequence parallelism"
                     : p->cp > 1 ? "context parallelism"
                     : p->ep > 1 ? "expert parallelism"
                     : p->zero >= 2 ? "ZeRO-2/3 or FSDP (Z shards the "
                                      "weights already)"
                     : model_is_moe(m) ? "MoE models"
                     : m->dtype == DTYPE_FP8 ? "FP8 linear layers"
                     : p->sel_ops && p->recompute == RECOMP_SELECTIVE
                         ? "selective=ops (torchtitan's policy)"
                     : p->compress != CM_NONE ? "gradient compression"
                                              : NULL;
  if (what)
    return weft_errf(err, WEFT_EINVAL, "%s: Tensor3D does not combine with "
                     "%s", o, what);
  struct { long n, g; const char *name, *axis; } div[] = {
      {m->hidden, gx, "hidden size", "GX"}, {m->hidden, gy, "hidden size", "GY"},
      {m->ffn, gx, "FFN size", "GX"},       {m->ffn, gy, "FFN size", "GY"},
      {m->heads, gy, "attention heads", "GY"},
      {m->kv_heads, gy, "KV heads", "GY"}};
  for (size_t i = 0; i < sizeof div / sizeof *div; i++)
    if (div[i].n % div[i].g != 0)
      return weft_errf(err, WEFT_EINVAL, "%s: %s %ld does not divide %ld %s",
                       o, div[i].axis, div[i].g, div[i].n, div[i].name);
  if (p->micro_batch % p->pieces != 0)
    return weft_errf(err, WEFT_EINVAL, "%s: %ld pieces do not divide "
                     "micro-batch %ld", p->origin[PK_PIECES], p->pieces,
                     p->micro_batch);
  return 0;
}

/* The degrees the plan leaves to derive: TP from a Tensor3D grid (which
 * check_tensor3d checks first), DP from the GPUs left by TP x PP x CP. */
static int resolve_degrees(struct plan *p, const struct model *m, long gpus,
                           struct weft_err *err)
{
  int rc = check_tensor3d(p, m, err);
  if (rc)
    return rc;
  long mp = p->tp * p->pp * p->cp;
  if (p->set[PK_DP]) {
    if (mp * p->dp != gpus)
      return weft_errf(err, WEFT_EINVAL, "%s: TP %ld x PP %ld x CP %ld x DP "
                       "%ld = %ld GPUs, but the cluster has %ld",
                       p->origin[PK_DP], p->tp, p->pp, p->cp, p->dp,
                       mp * p->dp, gpus);
  } else {
    if (gpus % mp != 0) {
      const char *o = p->set[PK_CP]   ? p->origin[PK_CP]
                      : p->set[PK_PP] ? p->origin[PK_PP]
                                      : p->origin[PK_TP];
      return weft_errf(err, WEFT_EINVAL, "%s: TP %ld x PP %ld x CP %ld = %ld "
                       "does not divide %ld GPUs", o, p->tp, p->pp, p->cp, mp,
                       gpus);
    }
    p->dp = gpus / mp;
  }
  p->gpus = gpus;
  return 0;
}

/* Megatron's defaults: gradients reduced in FP32 (bf16 training sets
 * --accumulate-allreduce-grads-in-fp32), buckets of max(4e7, 1e6 x DP)
 * parameters (distributed_data_parallel.py) at the gradients' width. */
static void fill_megatron_defaults(struct plan *p)
{
  if (p->shard_impl == SI_MEGATRON) {
    if (!p->set[PK_GRAD_DTYPE])
      p->grad_dtype = DTYPE_FP32;
    if (!p->set[PK_GRAD_ACCUM])
      p->grad_accum = GA_FUSED;
    if (!p->set[PK_BUCKET]) {
      double dp = (double)(p->dp * p->cp);
      p->bucket_bytes = (dp > 40 ? 1e6 * dp : MEGATRON_BUCKET_ELEMS) *
                        dtype_bytes(p->grad_dtype);
    }
  }
}

/* TP and SP against the model's heads, FFN and sequence. */
static int check_tp(const struct plan *p, const struct model *m,
                    struct weft_err *err)
{
  bool d1 = p->t3[0] == 0; /* Tensor3D checks its own grid */
  if (d1 && m->heads % p->tp != 0)
    return weft_errf(err, WEFT_EINVAL, "%s: TP %ld does not divide %ld "
                     "attention heads", p->origin[PK_TP], p->tp, m->heads);
  if (d1 && m->kv_heads % p->tp != 0)
    return weft_errf(err, WEFT_EINVAL, "%s: TP %ld does not divide %ld KV "
                     "heads", p->origin[PK_TP], p->tp, m->kv_heads);
  if (d1 && m->ffn % p->tp != 0)
    return weft_errf(err, WEFT_EINVAL, "%s: TP %ld does not divide FFN size "
                     "%ld", p->origin[PK_TP], p->tp, m->ffn);
  if (p->sp && p->tp == 1)
    return weft_errf(err, WEFT_EINVAL, "%s: sequence parallelism needs TP > "
                     "1", p->origin[PK_SP]);
  /* TP 1 has nothing to overlap (a stack may set it for every plan) */
  if (p->tp_overlap != TPO_NONE && p->tp > 1 && (!p->sp || !d1))
    return weft_errf(err, WEFT_EINVAL, "%s: TP communication overlap needs "
                     "sequence parallelism and Megatron's 1D TP (Megatron-LM "
                     "asserts it: arguments.py); add --sp yes, as NeMo runs "
                     "TP > 1, or --tp-comm-overlap no",
                     p->origin[PK_TP_COMM_OVERLAP]);
  if (p->sp && m->seq % p->tp != 0)
    return weft_errf(err, WEFT_EINVAL, "%s: TP %ld does not divide sequence "
                     "length %ld (sequence parallelism)", p->origin[PK_SP],
                     p->tp, m->seq);
  return 0;
}

/* PP against the layers and the settings it does not combine with. */
static int check_pipeline(const struct plan *p, const struct model *m,
                          struct weft_err *err)
{
  int rc = check_split(p, m, err);
  if (rc)
    return rc;
  if (p->pp > m->layers)
    return weft_errf(err, WEFT_EINVAL, "%s: PP %ld exceeds the %ld layers",
                     p->origin[PK_PP], p->pp, m->layers);
  if (p->schedule == SCHED_INTERLEAVED && p->pp < 2)
    return weft_errf(err, WEFT_EINVAL, "%s: the interleaved schedule needs "
                     "PP > 1", p->origin[PK_SCHEDULE]);
  const char *zo = p->origin[p->set[PK_FSDP]   ? PK_FSDP
                            : p->set[PK_HSDP] ? PK_HSDP
                                              : PK_ZERO];
  /* DeepSpeed's pipeline engine asserts ZeRO stage < 2; ZeRO-3 runs with
   * PP as torchtitan runs FSDP2 under PyTorch's pipelining, whose stage
   * drives FSDP2 modules only (stage.py, backward_maybe_with_nosync;
   * builder_zero.c, fsdp_pp_pass). */
  if (p->zero == 2 && p->pp > 1)
    return weft_errf(err, WEFT_EINVAL, "%s: ZeRO stage 2 cannot be combined "
                     "with pipeline parallelism (PP %ld) (DeepSpeed refuses "
                     "it); use stage 1, or FSDP2 (--fsdp yes --shard-impl "
                     "fsdp2, as torchtitan runs it with PP)", zo, p->pp);
  if (p->zero >= 3 && p->pp > 1 && p->shard_impl != SI_FSDP2)
    return weft_errf(err, WEFT_EINVAL, "%s: ZeRO-3 with pipeline parallelism "
                     "(PP %ld) is modelled as torchtitan runs it, on FSDP2 "
                     "(PyTorch's pipelining drives FSDP2 modules only; "
                     "DeepSpeed refuses ZeRO-3 with PP); this plan's "
                     "shard_impl is %s: add --shard-impl fsdp2",
                     p->set[PK_SHARD_IMPL] ? p->origin[PK_SHARD_IMPL] : zo,
                     p->pp, shard_impl_name(p->shard_impl));
  if (p->zero >= 3 && p->pp > 1 && model_tied(m))
    return weft_errf(err, WEFT_EINVAL, "%s: FSDP with pipeline parallelism "
                     "(PP %ld) and an embedding tied to the output layer "
                     "across stages is not modelled", zo, p->pp);
  return 0;
}

/* HSDP groups, CP and EP against DP and the model. */
static int check_dp(const struct plan *p, const struct model *m,
                    struct weft_err *err)
{
  if (p->hsdp && (p->hsdp > p->dp || p->dp % p->hsdp != 0))
    return weft_errf(err, WEFT_EINVAL, "%s: shard groups of %ld do not divide "
                     "DP %ld", p->origin[PK_HSDP], p->hsdp, p->dp);
  if (p->cp > 1 && m->seq % (2 * p->cp) != 0)
    return weft_errf(err, WEFT_EINVAL, "%s: sequence %ld is not a multiple of "
                     "2 x CP %ld (each rank holds two chunks, for causal load "
                     "balance)", p->origin[PK_CP], m->seq, p->cp);
  if (p->cp > 1 && p->sp && (m->seq / p->cp) % p->tp != 0)
    return weft_errf(err, WEFT_EINVAL, "%s: TP %ld does not divide the %ld "
                     "tokens per CP rank (sequence parallelism)",
                     p->origin[PK_SP], p->tp, m->seq / p->cp);
  if (p->ep > 1 && !model_is_moe(m))
    return weft_errf(err, WEFT_EINVAL, "%s: expert parallelism needs an MoE "
                     "model (experts > 1)", p->origin[PK_EP]);
  if (p->ep > 1 && m->experts % p->ep != 0)
    return weft_errf(err, WEFT_EINVAL, "%s: EP %ld does not divide %ld "
                     "experts", p->origin[PK_EP], p->ep, m->experts);
  if (p->ep > 1 && !p->etp && p->dp % p->ep != 0)
    return weft_errf(err, WEFT_EINVAL, "%s: EP %ld does not divide DP %ld "
                     "(expert parallelism is carved out of data parallelism)",
                     p->origin[PK_EP], p->ep, p->dp);
  return 0;
}

/* The sharding implementation, the parameter gather and compression
 * against the ZeRO stage and the model. */
static int check_sharding(const struct plan *p, const struct model *m,
                          struct weft_err *err)
{
  if (p->shard_impl == SI_MEGATRON && p->zero != 1)
    return weft_errf(err, WEFT_EINVAL, "%s: megatron is Megatron-LM's "
                     "distributed optimizer, ZeRO stage 1; this plan has ZeRO "
                     "stage %d", p->origin[PK_SHARD_IMPL], p->zero);
  if (p->set[PK_SHARD_IMPL] && p->shard_impl != SI_MEGATRON && p->zero != 3)
    return weft_errf(err, WEFT_EINVAL, "%s: shard_impl applies to sharded "
                     "parameters (ZeRO-3, FSDP or HSDP); this plan has ZeRO "
                     "stage %d", p->origin[PK_SHARD_IMPL], p->zero);
  if (p->overlap_param_gather && p->zero != 1 && p->zero != 2)
    return weft_errf(err, WEFT_EINVAL, "%s: overlap_param_gather gathers the "
                     "parameters that ZeRO-1/2 updates in shards; this plan "
                     "has ZeRO stage %d", p->origin[PK_OVERLAP_PARAM_GATHER],
                     p->zero);
  if (p->overlap_param_gather && !p->overlap_grad)
    return weft_errf(err, WEFT_EINVAL, "%s: overlap_param_gather needs "
                     "overlap_grad (Megatron-LM asserts --overlap-grad-reduce "
                     "with --overlap-param-gather)",
                     p->origin[PK_OVERLAP_PARAM_GATHER]);
  if (p->hsdp && (p->shard_impl == SI_DEEPSPEED ||
                  p->shard_impl == SI_DEEPSPEED_2021))
    return weft_errf(err, WEFT_EINVAL, "%s: HSDP is PyTorch FSDP's; DeepSpeed "
                     "ZeRO-3 shards over all data-parallel ranks",
                     p->origin[PK_SHARD_IMPL]);
  /* Megatron-FSDP's HSDP (outer_dp_sharding_strategy) and its expert
   * buffers are not built (builder_zero.c, mfsdp_pass). */
  if (shard_impl_mfsdp(p->shard_impl) && (p->hsdp || model_is_moe(m)))
    return weft_errf(err, WEFT_EINVAL, "%s: %s is modelled for dense models "
                     "sharded over all data-parallel ranks; %s is not built",
                     p->origin[PK_SHARD_IMPL], shard_impl_name(p->shard_impl),
                     p->hsdp ? "its HSDP" : "its expert sharding (MoE)");
  if (p->compress != CM_NONE && p->zero)
    return weft_errf(err, WEFT_EINVAL, "%s: gradient compression applies to "
                     "DDP's all-reduced buckets; this plan shards them (ZeRO "
                     "or FSDP)", p->origin[PK_COMPRESS]);
  if (p->compress != CM_NONE && model_is_moe(m))
    return weft_errf(err, WEFT_EINVAL, "%s: gradient compression of MoE "
                     "experts is not modelled", p->origin[PK_COMPRESS]);
  if (p->ep > 1 && p->hsdp)
    return weft_errf(err, WEFT_EINVAL, "%s: expert parallelism with HSDP is "
                     "not supported yet", p->origin[PK_EP]);
  return 0;
}

/* DeepEP's node: the EP ranks that share one, p->ep_node (the EP group's
 * ranks are DP indices dp0 .. dp0 + ep - 1, which lie tp x cp ranks apart
 * in the default order). */
static int resolve_ep_node(struct plan *p, struct weft_err *err)
{
  const char *o = p->origin[PK_MOE_DISPATCHER];
  if (p->moe_node_gpus < 1)
    return weft_errf(err, WEFT_EINVAL, "%s: deepep needs the GPUs of a node "
                     "(--moe-node-gpus N, or a cluster)", o);
  if (p->order[0] != PD_TP || p->order[1] != PD_CP || p->order[2] != PD_DP)
    return weft_errf(err, WEFT_EINVAL, "%s: deepep is modelled with the "
                     "default rank order tp-cp-dp-pp", o);
  long stride = p->tp * p->cp, g = 1;
  /* With expert TP, DeepEP's group is tp_ep (builder_moe.c): a node must
   * hold whole expert-TP groups, or its NVLink hop would leave it. */
  if (plan_etp(p) > 1 && p->moe_node_gpus % plan_etp(p) != 0)
    return weft_errf(err, WEFT_EINVAL, "%s: expert TP %ld does not divide "
                     "the %ld GPUs of a node (deepep over expert TP x EP)",
                     p->origin[PK_MOE_NODE_GPUS], plan_etp(p),
                     p->moe_node_gpus);
  if (p->moe_node_gpus >= stride) {
    if (p->moe_node_gpus % stride != 0)
      return weft_errf(err, WEFT_EINVAL, "%s: TP x CP %ld does not divide "
                       "the %ld GPUs of a node (deepep)",
                       p->origin[PK_MOE_NODE_GPUS], stride, p->moe_node_gpus);
    g = p->moe_node_gpus / stride;
  }
  g = g < p->ep ? g : p->ep;
  if (p->ep % g != 0)
    return weft_errf(err, WEFT_EINVAL, "%s: EP %ld is not a multiple of the "
                     "%ld EP ranks of a node (deepep)", o, p->ep, g);
  p->ep_node = g;
  return 0;
}

/* The MoE execution settings against the model and the other degrees. */
static int check_moe(struct plan *p, const struct model *m,
                     struct weft_err *err)
{
  enum moe_dispatcher d = p->moe_dispatcher;
  const char *o = p->origin[PK_MOE_DISPATCHER];
  p->ep_node = 0; /* the whole EP group (layout.h) */
  if ((d != MD_BASIC || p->moe_capacity > 0 || p->moe_pad) &&
      !model_is_moe(m))
    return weft_errf(err, WEFT_EINVAL, "%s: MoE settings need an MoE model "
                     "(experts > 1)", p->origin[d != MD_BASIC ? PK_MOE_DISPATCHER
                                       : p->moe_pad ? PK_MOE_PAD
                                                    : PK_MOE_CAPACITY]);
  /* token_dispatcher.py, MoEAlltoAllTokenDispatcher.__init__: drop_and_pad
   * asserts moe_expert_capacity_factor is not None. */
  if (p->moe_pad && p->moe_capacity <= 0)
    return weft_errf(err, WEFT_EINVAL, "%s: padding to capacity needs a "
                     "capacity factor (--moe-capacity F)",
                     p->origin[PK_MOE_PAD]);
  if (d != MD_DEEPEP && (p->moe_max_nodes || p->set[PK_MOE_NODE_GPUS]))
    return weft_errf(err, WEFT_EINVAL, "%s: applies to the deepep "
                     "dispatcher (--moe-dispatcher deepep)",
                     p->origin[p->moe_max_nodes ? PK_MOE_MAX_NODES
                                                : PK_MOE_NODE_GPUS]);
  if (d == MD_BASIC)
    return 0;
  if (p->t3[0] > 0)
    return weft_errf(err, WEFT_EINVAL, "%s: Tensor3D runs no MoE layer", o);
  if (p->tp > 1 && !p->sp)
    return weft_errf(err, WEFT_EINVAL, "%s: Megatron-Core's MoE layer with TP "
                     "runs on sequence-parallel shards; add --sp yes", o);
  /* allgather and flex (deepep) run over tp_ep, the expert generator's
   * "tp-ep" groups (token_dispatcher.py; parallel_state.py, order
   * tp-ep-dp-pp), which plan_layout carries; that generator folds CP
   * into the expert data parallelism. */
  if (plan_etp(p) > 1 && d != MD_ALLTOALL && p->cp > 1)
    return weft_errf(err, WEFT_EINVAL, "%s: with expert TP > 1, %s runs "
                     "over Megatron-Core's expert TP x EP groups, which fold "
                     "context parallelism (CP %ld) into expert data "
                     "parallelism, not modelled; use alltoall or CP 1", o,
                     moe_dispatcher_name(d), p->cp);
  if (plan_etp(p) > 1 && d != MD_ALLTOALL &&
      (p->order[0] != PD_TP || p->order[1] != PD_CP || p->order[2] != PD_DP))
    return weft_errf(err, WEFT_EINVAL, "%s: with expert TP > 1, %s is "
                     "modelled with the default rank order tp-cp-dp-pp "
                     "(Megatron-Core's expert groups: tp-ep-dp-pp)", o,
                     moe_dispatcher_name(d));
  if (d != MD_DEEPEP)
    return 0;
  int rc = resolve_ep_node(p, err);
  if (rc)
    return rc;
  long nodes = p->ep / p->ep_node;
  /* Group-limited routing (the model's expert_groups, topk_groups:
   * DeepSeek-V3's n_group 8, topk_group 4, "node-limited routing", its
   * report Sec. 2.1.2) bounds the nodes a token reaches when no limit is
   * given: its topk_groups groups, each over nodes / groups nodes (at
   * least one). */
  if (!p->moe_max_nodes && m->expert_groups > 0 && m->topk_groups > 0) {
    long per = nodes > m->expert_groups ? nodes / m->expert_groups : 1;
    long lim = m->topk_groups * per;
    if (lim < nodes) {
      p->moe_max_nodes = lim;
      snprintf(p->origin[PK_MOE_MAX_NODES], sizeof p->origin[PK_MOE_MAX_NODES],
               "model's topk_groups");
    }
  }
  long lim = p->moe_max_nodes && p->moe_max_nodes < nodes ? p->moe_max_nodes
                                                           : nodes;
  if (m->topk > lim * (m->experts / nodes))
    return weft_errf(err, WEFT_EINVAL, "%s: %ld nodes hold %ld experts, "
                     "fewer than the top-%ld",
                     p->origin[p->moe_max_nodes ? PK_MOE_MAX_NODES
                                                : PK_MOE_DISPATCHER],
                     lim, lim * (m->experts / nodes), m->topk);
  return 0;
}

/* The global batch against micro-batch x DP (x GZ); derives the
 * micro-batches per pipeline. */
static int resolve_batch(struct plan *p, struct weft_err *err)
{
  if (p->global_batch < 1)
    return weft_errf(err, WEFT_EINVAL, "%s: global batch is required (set "
                     "global_batch= or --global-batch)",
                     p->origin[PK_GLOBAL_BATCH]);
  /* Tensor3D splits the batch over Z too. */
  long gz = p->t3[2] > 0 ? p->t3[2] : 1;
  long per_step = p->micro_batch * p->dp * gz;
  if (p->global_batch % per_step != 0)
    return weft_errf(err, WEFT_EINVAL, gz > 1 ? "%s: global batch %ld is not "
                     "a multiple of micro-batch %ld x DP %ld x GZ %ld"
                     : "%s: global batch %ld is not a multiple of "
                     "micro-batch %ld x DP %ld",
                     p->origin[PK_GLOBAL_BATCH], p->global_batch,
                     p->micro_batch, p->dp, gz);
  p->microbatches = p->global_batch / per_step;
  if (p->microbatches > WEFT_MAX_MICROBATCHES)
    return weft_errf(err, WEFT_ELIMIT, "%s: %ld micro-batches per pipeline "
                     "exceed the limit of %d", p->origin[PK_GLOBAL_BATCH],
                     p->microbatches, WEFT_MAX_MICROBATCHES);
  if (p->schedule == SCHED_INTERLEAVED)
    return schedule_check_group(p->pp, p->microbatches, p->vchunks,
                                p->vgroup, p->origin[PK_SCHEDULE], err);
  return 0;
}

/* Derive first (TP of a grid, DP), fill the defaults that depend on the
 * derived degrees, then validate in the order the messages always had:
 * a plan with two faults reports the same one. */
long plan_etp(const struct plan *p)
{
  return p->etp > 0 ? p->etp : p->tp;
}

long plan_edp(const struct plan *p)
{
  if (p->etp > 0)
    return p->tp * p->cp * p->dp / (p->etp * p->ep);
  return p->dp / p->ep * p->cp;
}

/* MoE parallel folding (plan.h, etp) against the other settings.
 * Megatron-Core's parallel_state.py, initialize_model_parallel: the expert
 * RankGenerator over tp=expert_tensor_parallel_size, ep, dp=
 * expert_data_parallel_size, pp, order "tp-ep-dp-pp", asserts that
 * world_size is divisible by ETP x EP x PP; the attention generator keeps
 * "tp-cp-ep-dp-pp" with ep 1, i.e. tp-cp-dp-pp.  What weft does not model
 * is refused: context parallelism (the expert groups would fold CP into
 * EDP), other rank orders, and dispatchers other than alltoall (item 2 of
 * issue 38). */
static int check_etp(const struct plan *p, const struct model *m,
                     struct weft_err *err)
{
  const char *o = p->origin[PK_ETP];
  if (!p->etp)
    return 0;
  if (!model_is_moe(m))
    return weft_errf(err, WEFT_EINVAL, "%s: expert tensor parallelism needs "
                     "an MoE model (experts > 1)", o);
  if (p->t3[0] > 0)
    return weft_errf(err, WEFT_EINVAL, "%s: Tensor3D runs no MoE layer, so "
                     "no expert tensor parallelism", o);
  if (p->ep < 2)
    return weft_errf(err, WEFT_EINVAL, "%s: expert tensor parallelism is "
                     "modelled with expert parallelism (EP > 1; this plan "
                     "has EP %ld)", o, p->ep);
  if (p->cp > 1)
    return weft_errf(err, WEFT_EINVAL, "%s: expert tensor parallelism with "
                     "context parallelism is not modelled (CP %ld)", o, p->cp);
  if (p->order[0] != PD_TP || p->order[1] != PD_CP || p->order[2] != PD_DP)
    return weft_errf(err, WEFT_EINVAL, "%s: expert tensor parallelism is "
                     "modelled with the default rank order tp-cp-dp-pp "
                     "(Megatron-Core's expert groups: etp-ep-edp-pp)", o);
  if (model_moe_ffn(m) % p->etp != 0)
    return weft_errf(err, WEFT_EINVAL, "%s: ETP %ld does not divide the "
                     "experts' FFN size %ld", o, p->etp, model_moe_ffn(m));
  long stage = p->tp * p->cp * p->dp;
  if (stage % (p->etp * p->ep) != 0)
    return weft_errf(err, WEFT_EINVAL, "%s: ETP %ld x EP %ld x PP %ld does "
                     "not divide the %ld GPUs (Megatron-Core's expert groups "
                     "fill each pipeline stage's TP x DP = %ld ranks)", o,
                     p->etp, p->ep, p->pp, stage * p->pp, stage);
  if (p->etp != p->tp && p->moe_dispatcher != MD_ALLTOALL &&
      p->moe_dispatcher != MD_ALLGATHER)
    return weft_errf(err, WEFT_EINVAL, "%s: ETP %ld != TP %ld is modelled "
                     "with --moe-dispatcher alltoall or allgather only (this "
                     "plan has %s)", o, p->etp, p->tp,
                     moe_dispatcher_name(p->moe_dispatcher));
  if (p->zero >= 2 || p->fsdp)
    return weft_errf(err, WEFT_EINVAL, "%s: expert tensor parallelism is "
                     "modelled with ZeRO stage 0 or 1 (this plan has %d)", o,
                     p->zero);
  return 0;
}

/* The combined 1F1B schedule (plan.h, a2a_overlap) against the other
 * settings: what Megatron-Core asserts (transformer_config.py,
 * TransformerConfig.__post_init__ at d98e8a6, 2026-08: expert parallelism,
 * the alltoall or flex dispatcher, no full recomputation and no "moe" in
 * the recomputed modules, BF16 or FP16 (FP8 runs on --bf16), at most one
 * MTP layer, a virtual pipeline when PP > 1), then what weft does not
 * build with it. */
static int check_a2a_overlap(const struct plan *p, const struct model *m,
                             struct weft_err *err)
{
  const char *o = p->origin[PK_OVERLAP_MOE_A2A];
  const char *so = p->origin[PK_MOE_SHARED_OVERLAP];
  /* transformer_config.py: "moe_shared_expert_overlap only works with
   * alltoall or flex token dispatcher", and "disable
   * moe_shared_expert_overlap when enabling
   * overlap_moe_expert_parallel_comm" */
  if (p->moe_shared_overlap && p->moe_dispatcher != MD_ALLTOALL &&
      p->moe_dispatcher != MD_DEEPEP)
    return weft_errf(err, WEFT_EINVAL, "%s: Megatron-Core overlaps the "
                     "shared experts with the alltoall and flex dispatchers "
                     "only: add --moe-dispatcher alltoall or deepep (this "
                     "plan has %s)", so,
                     moe_dispatcher_name(p->moe_dispatcher));
  if (p->moe_shared_overlap && p->a2a_overlap)
    return weft_errf(err, WEFT_EINVAL, "%s: Megatron-Core refuses the shared "
                     "experts' overlap with overlap_moe_expert_parallel_comm",
                     so);
  if (p->moe_shared_overlap && p->t3[0] > 0)
    return weft_errf(err, WEFT_EINVAL, "%s: Tensor3D runs no MoE dispatcher",
                     so);
  if (p->delay_wgrad && !p->a2a_overlap)
    return weft_errf(err, WEFT_EINVAL, "%s: delay_wgrad_compute needs "
                     "overlap_moe_expert_parallel_comm, as Megatron-Core "
                     "asserts", p->origin[PK_DELAY_WGRAD]);
  if (!p->a2a_overlap)
    return 0;
  if (p->ep < 2)
    return weft_errf(err, WEFT_EINVAL, "%s: the all-to-all overlap needs "
                     "expert parallelism (EP > 1; this plan has EP %ld), as "
                     "Megatron-Core asserts", o, p->ep);
  if (p->moe_dispatcher != MD_ALLTOALL && p->moe_dispatcher != MD_DEEPEP)
    return weft_errf(err, WEFT_EINVAL, "%s: Megatron-Core overlaps the "
                     "alltoall and flex dispatchers only: add "
                     "--moe-dispatcher alltoall or deepep (this plan has %s)",
                     o, moe_dispatcher_name(p->moe_dispatcher));
  if (p->recompute == RECOMP_FULL)
    return weft_errf(err, WEFT_EINVAL, "%s: Megatron-Core refuses full "
                     "recomputation with the all-to-all overlap", o);
  if (p->recompute == RECOMP_SELECTIVE && p->sel_ops)
    return weft_errf(err, WEFT_EINVAL, "%s: the all-to-all overlap is "
                     "Megatron-Core's; its selective recomputation is the "
                     "attention core (--selective attention)", o);
  if (m->dtype != DTYPE_BF16 && m->dtype != DTYPE_FP16 &&
      m->dtype != DTYPE_FP8)
    return weft_errf(err, WEFT_EINVAL, "%s: Megatron-Core runs the "
                     "all-to-all overlap in BF16 or FP16 only (this model is "
                     "%s)", o, dtype_name(m->dtype));
  if (m->mtp_layers > 1)
    return weft_errf(err, WEFT_EINVAL, "%s: Megatron-Core overlaps at most "
                     "one MTP layer (this model has %ld)", o, m->mtp_layers);
  if (p->pp > 1 && p->schedule != SCHED_INTERLEAVED)
    return weft_errf(err, WEFT_EINVAL, "%s: with PP > 1 Megatron-Core runs "
                     "the all-to-all overlap on the interleaved schedule only "
                     "(--schedule interleaved:V)", o);
  if (p->pp == 1 && p->schedule == SCHED_GPIPE)
    return weft_errf(err, WEFT_EINVAL, "%s: the all-to-all overlap runs on "
                     "1F1B's order (--schedule 1f1b)", o);
  if (p->zero >= 3 || p->blocking_p2p || p->tp_overlap != TPO_NONE)
    return weft_errf(err, WEFT_EINVAL, "%s: the all-to-all overlap with %s "
                     "is not built yet", o, p->zero >= 3 ? "ZeRO-3/FSDP"
                     : p->blocking_p2p ? "blocking pipeline transfers"
                                       : "TP communication overlap");
  return 0;
}

int plan_resolve(struct plan *p, const struct model *m, long gpus,
                 struct weft_err *err)
{
  int rc = resolve_degrees(p, m, gpus, err);
  if (rc)
    return rc;
  fill_megatron_defaults(p);
  /* Sequence parallelism exists only in Megatron-LM's code of 2022 on,
   * whose column-parallel backward with SP is always asynchronous
   * (plan.h, async_tp_grad: LinearWithGradAccumulationAndAsyncCommunication
   * launches the input's all-gather and the input gradient's
   * reduce-scatter with async_op=True whatever
   * --async-tensor-model-parallel-allreduce says); torchtitan's DTensor
   * runs its own (builder_layer.c). */
  if (p->sp && p->tp > 1 && !p->set[PK_ASYNC_TP_GRAD] &&
      p->mem_framework != MF_TORCHTITAN)
    p->async_tp_grad = true;
  if ((rc = check_tp(p, m, err)) || (rc = check_pipeline(p, m, err)) ||
      (rc = check_dp(p, m, err)) || (rc = check_sharding(p, m, err)) ||
      (rc = check_moe(p, m, err)) || (rc = check_etp(p, m, err)) ||
      (rc = check_a2a_overlap(p, m, err)))
    return rc;
  return resolve_batch(p, err);
}

void plan_value_text(const struct plan *p, enum plan_key k, char *buf,
                     size_t size)
{
  switch (k) {
  case PK_TP: snprintf(buf, size, "%ld", p->tp); break;
  case PK_PP: snprintf(buf, size, "%ld", p->pp); break;
  case PK_DP: snprintf(buf, size, "%ld", p->dp); break;
  case PK_CP: snprintf(buf, size, "%ld", p->cp); break;
  case PK_EP: snprintf(buf, size, "%ld", p->ep); break;
  case PK_SP: snprintf(buf, size, "%s", p->sp ? "yes" : "no"); break;
  case PK_MICRO_BATCH: snprintf(buf, size, "%ld", p->micro_batch); break;
  case PK_GLOBAL_BATCH: snprintf(buf, size, "%ld", p->global_batch); break;
  case PK_SCHEDULE:
    if (p->schedule == SCHED_INTERLEAVED && p->vgroup > 0)
      snprintf(buf, size, "interleaved:%ld:%ld", p->vchunks, p->vgroup);
    else if (p->schedule == SCHED_INTERLEAVED)
      snprintf(buf, size, "interleaved:%ld", p->vchunks);
    else
      snprintf(buf, size, "%s", sched_name(p->schedule));
    break;
  case PK_RECOMPUTE:
    snprintf(buf, size, "%s", recompute_name(p->recompute));
    break;
  case PK_BUCKET: snprintf(buf, size, "%.0f", p->bucket_bytes); break;
  case PK_OVERLAP_GRAD:
    snprintf(buf, size, "%s", p->overlap_grad ? "yes" : "no");
    break;
  case PK_ORDER: {
    size_t n = 0;
    buf[0] = '\0';
    for (int d = 0; d < PD_COUNT && n < size; d++)
      n += (size_t)snprintf(buf + n, size - n, "%s%s", d ? "-" : "",
                            dim_names[p->order[d]]);
    break;
  }
  case PK_ATTENTION:
    snprintf(buf, size, "%s", p->unfused_attention ? "unfused"
                              : p->attn_sdpa ? "sdpa"
                              : p->attn_kernel < 0
                                  ? "flash"
                                  : attn_kernel_name(
                                        (enum attn_kernel)p->attn_kernel));
    break;
  case PK_P2P:
    snprintf(buf, size, "%s", p->blocking_p2p ? "blocking" : "async");
    break;
  case PK_GRAD_DTYPE:
    snprintf(buf, size, "%s", dtype_name(p->grad_dtype));
    break;
  case PK_ZERO: snprintf(buf, size, "%d", p->zero); break;
  case PK_FSDP: snprintf(buf, size, "%s", p->fsdp ? "yes" : "no"); break;
  case PK_HSDP: snprintf(buf, size, "%ld", p->hsdp); break;
  case PK_MOE_IMBALANCE: snprintf(buf, size, "%g", p->moe_imbalance); break;
  case PK_FIRST_LAYERS: snprintf(buf, size, "%ld", p->first_layers); break;
  case PK_LAST_LAYERS: snprintf(buf, size, "%ld", p->last_layers); break;
  case PK_SPLIT_UNITS:
    snprintf(buf, size, "%s", p->split_units ? "yes" : "no");
    break;
  case PK_SHARD_IMPL:
    snprintf(buf, size, "%s", shard_impl_name(p->shard_impl));
    break;
  case PK_CROSS_ENTROPY:
    snprintf(buf, size, "%s", cross_entropy_name(p->xent));
    break;
  case PK_FP8_RECIPE:
    snprintf(buf, size, "%s", fp8_recipe_name(p->fp8_recipe));
    break;
  case PK_TENSOR3D:
    if (p->t3[0] > 0)
      snprintf(buf, size, "%ld,%ld,%ld", p->t3[0], p->t3[1], p->t3[2]);
    else
      snprintf(buf, size, "none");
    break;
  case PK_PIECES: snprintf(buf, size, "%ld", p->pieces); break;
  case PK_COMPRESS:
    if (p->compress == CM_NONE || p->compress == CM_FP16 ||
        p->compress == CM_SIGN || p->compress == CM_EFSIGN)
      snprintf(buf, size, "%s", compress_name(p->compress));
    else
      snprintf(buf, size, "%s:%g", compress_name(p->compress),
               p->compress_param);
    break;
  case PK_OVERLAP_PARAM_GATHER:
    snprintf(buf, size, "%s", p->overlap_param_gather ? "yes" : "no");
    break;
  case PK_GRAD_ACCUM:
    snprintf(buf, size, "%s", grad_accum_name(p->grad_accum));
    break;
  case PK_SELECTIVE:
    snprintf(buf, size, "%s", p->sel_ops ? "ops" : "attention");
    break;
  case PK_FUSION:
    snprintf(buf, size, "%s", p->eager ? "eager" : p->jit ? "jit" : "fused");
    break;
  case PK_STACK: snprintf(buf, size, "%s", p->stack[0] ? p->stack : "none"); break;
  case PK_MEM_FRAMEWORK:
    snprintf(buf, size, "%s", mem_framework_name(p->mem_framework));
    break;
  case PK_COMM_CONTENTION:
    snprintf(buf, size, "%s", p->comm_contention ? "yes" : "no");
    break;
  case PK_FP8_PARAMS:
    snprintf(buf, size, "%s", p->fp8_params ? "yes" : "no");
    break;
  case PK_HOST_OP: snprintf(buf, size, "%gs", p->host_op_s); break;
  case PK_TP_COMM_OVERLAP:
    snprintf(buf, size, "%s", tp_overlap_name(p->tp_overlap));
    break;
  case PK_MOE_DISPATCHER:
    snprintf(buf, size, "%s", moe_dispatcher_name(p->moe_dispatcher));
    break;
  case PK_MOE_CAPACITY: snprintf(buf, size, "%g", p->moe_capacity); break;
  case PK_MOE_PAD: snprintf(buf, size, "%s", p->moe_pad ? "yes" : "no"); break;
  case PK_MOE_NODE_GPUS: snprintf(buf, size, "%ld", p->moe_node_gpus); break;
  case PK_MOE_MAX_NODES: snprintf(buf, size, "%ld", p->moe_max_nodes); break;
  case PK_ETP: snprintf(buf, size, "%ld", plan_etp(p)); break;
  case PK_OVERLAP_MOE_A2A:
    snprintf(buf, size, "%s", p->a2a_overlap ? "yes" : "no");
    break;
  case PK_DELAY_WGRAD:
    snprintf(buf, size, "%s", p->delay_wgrad ? "yes" : "no");
    break;
  case PK_ASYNC_TP_GRAD:
    snprintf(buf, size, "%s", p->async_tp_grad ? "yes" : "no");
    break;
  case PK_MOE_SHARED_OVERLAP:
    snprintf(buf, size, "%s", p->moe_shared_overlap ? "yes" : "no");
    break;
  default:
    snprintf(buf, size, "?");
  }
}
