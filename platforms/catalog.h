/*
 * catalog.h - the hardware catalog: GPUs, NICs and node types.
 *
 * The built-in catalog is platforms/catalog.xml, compiled into the binary;
 * users add or replace entries with their own file in the same format
 * (`<catalog>` with `<gpu>`, `<nic>`, `<node>`, `<future>`, `<switch>` and
 * `<trend>` elements).
 * Every value is in base units: flop/s, bytes, bytes/s, seconds, watts.
 */
#ifndef WEFT_CATALOG_H
#define WEFT_CATALOG_H

#include <stdbool.h>

#include "sim/base/err.h"
#include "sim/base/bounds.h"

enum dtype {
  DTYPE_FP32,
  DTYPE_TF32,
  DTYPE_BF16,
  DTYPE_FP16,
  DTYPE_FP8,
  DTYPE_COUNT
};

/* "fp32", "tf32", "bf16", "fp16", "fp8". */
const char *dtype_name(enum dtype t);
/* Bytes of one element: 4 (fp32, tf32 as stored), 2, 1. */
double dtype_bytes(enum dtype t);
/* Look up a dtype by name (case-insensitive); returns false if unknown. */
bool dtype_from_name(const char *name, enum dtype *out);

#define WEFT_MAX_SOURCE 256

/* Fused attention kernels a GPU may have (costmodel.h says how they are
 * timed).  A <gpu> element holds one <attention kernel="NAME"> child per
 * kernel it runs, fitted by analysis/fit_attention.py. */
enum attn_kernel { AK_FLASH2, AK_FLASH3, AK_CUDNN, AK_COUNT };

/* "flash2", "flash3", "cudnn"; -1 for an unknown name. */
const char *attn_kernel_name(enum attn_kernel k);
int attn_kernel_from_name(const char *name);

/* One direction of a fused attention kernel: its throughput at the
 * benchmark count (causal counted at half) is
 *   peak * eff * g(d) * s / (s + seq_half) * (s / (s + causal_seq) if causal)
 * with g = 1 at head dim 128, d64 at 64, d256 at 256, linear in log2(d)
 * between and held beyond. */
struct attn_dir {
  double eff, d64, d256, seq_half, causal_seq;
};

struct attn_spec {
  bool have;                    /* the GPU runs this kernel */
  struct attn_dir fwd, bwd;
  char source[WEFT_MAX_SOURCE];
};

/* Collective calibration of a node type that does not give its own
 * (Hopper's, sim/coll.c says from which rows). */
#define CATALOG_DEFAULT_NVLINK_EFF 0.8133
#define CATALOG_DEFAULT_NVLS_EFF 0.6085
#define CATALOG_DEFAULT_NIC_EFF 0.9260
#define CATALOG_DEFAULT_COLL_LAT 46.8e-6
#define CATALOG_DEFAULT_COLL_LL_BW 141e9    /* NCCL's Hopper llMaxBw */
/* The fixed latency of one point-to-point send of NCCL's Simple protocol
 * (a pipeline send), over NVLink and across the network, of a node type
 * that does not give its own: NCCL 2.30.7's (src/graph/tuning.cc: the
 * ring's Simple base latency 8.4 us plus one step's hardware latency,
 * NVLink 3.4 us, network 14 us; analysis/calibrate_coll.py). */
#define CATALOG_DEFAULT_P2P_NVLINK_LAT 11.8e-6
#define CATALOG_DEFAULT_P2P_NET_LAT 22.4e-6

struct gpu_spec {
  char name[WEFT_MAX_NAME];
  double peak_flops[DTYPE_COUNT]; /* dense tensor-core flop/s; 0 = none */
  double hbm_bytes;               /* HBM capacity */
  double hbm_bw_Bps;              /* HBM bandwidth */
  double nvlink_bw_Bps;           /* NVLink bandwidth per direction */
  double idle_w, max_w;           /* board power idle and at TDP */
  /* Board power while memory-bound kernels run alone, and while only
   * communication kernels run (exposed communication), where measured
   * (0: not given; then max_w and idle_w: cluster.h, mem_w and comm_w). */
  double mem_w, comm_w;
  double year;                    /* first shipped (0: not given); the
                                     base of a projection (struct trend) */
  /* Operator cost model (workloads/costmodel.h): streaming multiprocessors
   * (0: no wave quantization), the fraction of peak a large GEMM and a
   * fused attention kernel reach, the fraction of HBM bandwidth a streaming
   * kernel reaches, and the launch overhead per kernel. */
  int sms;
  double gemm_eff, attn_eff, mem_eff, launch_s;
  double gemm_eff_fp8;     /* FP8 GEMMs' ceiling (0: gemm_eff's) */
  /* Block-scaled FP8 (MXFP8: 32-element blocks with E8M0 scales) in the
   * tensor cores, at the FP8 rate: Blackwell (sm_100) and later. */
  bool mxfp8;
  /* The K at which a GEMM tile spends as long on its fixed prologue and
   * epilogue as on its main loop (costmodel.h), BF16/FP16 and FP8. */
  double gemm_k_half, gemm_k_half_fp8;
  /* Share of HBM bandwidth of memory-bound kernel families where measured
   * (0: mem_eff): norms forward and backward, the loss forward and
   * backward (loss_bwd_eff 0: loss_eff), the optimizer. */
  double norm_eff, norm_bwd_eff, loss_eff, loss_bwd_eff, optim_eff;
  /* Fused attention kernels by enum attn_kernel, and the one frameworks
   * pick on this GPU (-1: none fitted; attn_eff's generic model). */
  struct attn_spec attn[AK_COUNT];
  int attn_default;
  char source[WEFT_MAX_SOURCE];   /* provenance of the numbers */
};

struct nic_spec {
  char name[WEFT_MAX_NAME];
  double bw_Bps; /* per direction */
  double lat_s;  /* one-way adapter + cable latency */
  double year;   /* first shipped (0: not given: the GPU's year) */
  double idle_w, max_w; /* adapter power idle and at full traffic (0: none
                           given; energy then leaves the NICs out) */
  double price;         /* US dollars per adapter (0: none given) */
  char source[WEFT_MAX_SOURCE];
};

struct node_spec {
  char name[WEFT_MAX_NAME];
  char gpu[WEFT_MAX_NAME]; /* catalog GPU name */
  int gpus;                /* GPUs in the node's NVLink domain */
  char nic[WEFT_MAX_NAME]; /* catalog NIC name */
  int nics;                /* compute NICs */
  double nvlink_lat_s;     /* one-way GPU-to-GPU latency through NVSwitch */
  bool nvls;               /* in-switch reduction (NVLink SHARP) */
  double coll_nvlink_eff;  /* share of NVLink bandwidth NCCL rings reach
                              (calibrated per NVLink generation) */
  double coll_nvls_eff;    /* and NVLS all-reduce (0 when no NVLS) */
  double coll_nic_eff;     /* share of NIC bandwidth NCCL rings reach */
  double coll_lat_s;       /* fixed cost of one collective, Simple protocol
                              (launch, setup, synchronisation) */
  double coll_ring_loss;   /* share of NIC bandwidth a ring loses per
                              doubling of its nodes beyond two */
  double coll_floor_s;     /* the least latency of one collective inside
                              the node, however small (measured; 0: none,
                              the older additive model, coll.c) */
  double coll_ll_bw_Bps;   /* NCCL's cap on a one-node LL ring's bus
                              bandwidth (llMaxBws, by GPU generation) */
  double p2p_nvlink_lat_s; /* fixed latency of one NCCL send/recv (Simple)
                              between two GPUs of the node */
  double p2p_net_lat_s;    /* and between GPUs of two nodes */
  int tray;                /* GPUs per compute tray of a rack-scale NVLink
                              domain (NVL72: 4), the least a job takes; 0:
                              a job takes whole nodes */
  char source[WEFT_MAX_SOURCE];
};

/* A switch of the scale-out fabric, for the fabric's energy: the switch
 * type of a cluster is the first whose `nic` is the cluster's NIC. */
struct switch_spec {
  char name[WEFT_MAX_NAME];
  char nic[WEFT_MAX_NAME]; /* the NIC generation its ports serve */
  int ports;
  double idle_w, max_w;    /* the whole switch, idle and at full traffic */
  /* US dollars (0: none given): the switch, and one link at its port
   * speed (cable and the transceivers at both ends). */
  double price, link_price;
  char source[WEFT_MAX_SOURCE];
};

/* What a trend projects, per year: the dense peaks by precision (indices
 * equal to enum dtype), HBM bandwidth and capacity, NVLink and NIC
 * bandwidth, and board power. */
enum growth_q {
  GQ_FP32, GQ_TF32, GQ_BF16, GQ_FP16, GQ_FP8,
  GQ_HBM_BW, GQ_HBM_CAP, GQ_NVLINK, GQ_NIC, GQ_POWER,
  GQ_COUNT
};

/* "fp32" ... "fp8", "hbm_bw", "hbm_cap", "nvlink", "nic", "power"; and
 * back (-1 when unknown). */
const char *growth_q_name(enum growth_q q);
int growth_q_from_name(const char *name);

/* Growth rates of hardware, for projecting GPUs and NICs beyond the
 * catalog (cluster settings year, generations and trend).  A <trend> gives
 * every quantity as a factor per year or per generation, each with its
 * source; `generation_years` converts between the two. */
struct trend {
  char name[WEFT_MAX_NAME];
  double generation_years;
  double per_year[GQ_COUNT];
  char rate_source[GQ_COUNT][WEFT_MAX_SOURCE];
  char source[WEFT_MAX_SOURCE];
};

/* Named what-if factors for future hardware; 1 leaves a value unchanged. */
struct hw_scale {
  double compute; /* every peak flop/s */
  double hbm_bw;
  double hbm_cap;
  double nvlink;  /* NVLink bandwidth */
  double nic;     /* NIC bandwidth */
};

extern const struct hw_scale hw_scale_none;

/* A user's entry (a --catalog file, a cluster file's inline hardware) that
 * replaced the built-in entry of its name: where it is and what. */
struct catalog_override {
  char file[WEFT_MAX_SOURCE];
  int line;
  char elem[16];            /* "gpu", "future", "nic", "node", ... */
  char name[WEFT_MAX_NAME];
};

enum {
  CATALOG_GPUS, CATALOG_NICS, CATALOG_NODES, CATALOG_SWITCHES,
  CATALOG_TRENDS, CATALOG_KINDS
};

struct catalog {
  struct gpu_spec *gpus;
  int n_gpus;
  struct nic_spec *nics;
  int n_nics;
  struct node_spec *nodes;
  int n_nodes;
  struct switch_spec *switches;
  int n_switches;
  struct trend *trends; /* the first is the default */
  int n_trends;
  /* Entries of each kind (CATALOG_GPUS...) that are built in: the first
   * ones of each array, set by catalog_builtin (0 in catalog_new's). */
  int builtin[CATALOG_KINDS];
  /* Built-in entries replaced since, in order (at most
   * WEFT_MAX_CATALOG_ENTRIES recorded); the commands warn about them. */
  struct catalog_override *overrides;
  int n_overrides;
};

/* A new catalog holding the built-in entries.  Caller frees with
 * catalog_free.  Returns NULL only if the embedded file is broken. */
struct catalog *catalog_builtin(struct weft_err *err) WEFT_WUR;

/* An empty catalog (for tests and custom files). */
struct catalog *catalog_new(void);

void catalog_free(struct catalog *cat);

/* Add the entries of a catalog file; an entry whose name exists replaces
 * the old one (recorded in cat->overrides when the old one is built in).  On error the catalog may hold the entries read before the
 * bad one. */
int catalog_load_file(struct catalog *cat, const char *path,
                      struct weft_err *err) WEFT_WUR;
int catalog_load_mem(struct catalog *cat, const char *buf, unsigned long len,
                     const char *name, struct weft_err *err) WEFT_WUR;

/* Parse one <gpu>, <nic>, <node>, <future>, <switch> or <trend> element (opaque xin types) into
 * the catalog; used by the cluster reader for inline hardware. */
struct xin_doc;
struct xin_elem;
int catalog_add_elem(struct catalog *cat, const struct xin_doc *doc,
                     const struct xin_elem *e, struct weft_err *err) WEFT_WUR;

/* Lookups by name, case-insensitive; NULL when unknown.  Pointers are
 * borrowed until the catalog changes or is freed. */
const struct gpu_spec *catalog_gpu(const struct catalog *cat, const char *n);
const struct nic_spec *catalog_nic(const struct catalog *cat, const char *n);
const struct node_spec *catalog_node(const struct catalog *cat,
                                     const char *n);
const struct switch_spec *catalog_switch(const struct catalog *cat,
                                         const char *n);
const struct trend *catalog_trend(const struct catalog *cat, const char *n);
/* The first switch whose ports serve NIC `nic`; NULL when none. */
const struct switch_spec *catalog_switch_for(const struct catalog *cat,
                                             const char *nic);
/* The switch of the slowest NIC generation whose rate reaches `bw_Bps`
 * (bytes/s per direction): the ports a NIC made faster (--scale nic=,
 * a projection) needs; NULL when no catalog switch is that fast. */
const struct switch_spec *catalog_switch_for_rate(const struct catalog *cat,
                                                  double bw_Bps);

/* Apply the compute, HBM and NVLink factors of `s` to `g` in place. */
void gpu_spec_scale(struct gpu_spec *g, const struct hw_scale *s);

/* Validate a GPU, NIC or node against physical sanity limits; the message
 * names the entry. */
int gpu_spec_check(const struct gpu_spec *g, struct weft_err *err) WEFT_WUR;

#endif
