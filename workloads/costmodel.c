/*
 * costmodel.c - roofline kernel times with shape-dependent efficiency, and
 * measured tables that override them.
 */
#define _GNU_SOURCE
#include "workloads/costmodel.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "sim/base/csv.h"
#include "sim/base/units.h"
#include "sim/base/xalloc.h"

#define TILE 128.0
#define ATTN_SEQ_HALF 128.0
#define ATTN_CAUSAL_WORK 0.5 /* share of the full count a causal kernel does */
#define MAX_TABLE_ROWS 1000000

struct row {
  uint8_t kind;            /* enum kernel_kind */
  uint8_t dtype;
  char gpu[WEFT_MAX_NAME];
  uint32_t a, b, c;        /* shape */
  double flops;
  double time_s;
};

struct cost_table {
  struct row *rows;
  long n;
};

long cost_table_rows(const struct cost_table *t) { return t ? t->n : 0; }

void cost_table_free(struct cost_table *t)
{
  if (!t)
    return;
  free(t->rows);
  free(t);
}

/* The efficiency of a GEMM whose output is `tiles` 128x128 tiles with a
 * reduction of length k. */
static double gemm_eff_on(const struct gpu_spec *g, enum dtype dt,
                          double tiles, double k, double sms);

static double gemm_eff_tiles(const struct gpu_spec *g, enum dtype dt,
                             double tiles, double k)
{
  return gemm_eff_on(g, dt, tiles, k, g->sms);
}

/* The same on `sms` of the GPU's SMs: the waves are of `sms` tiles. */
static double gemm_eff_on(const struct gpu_spec *g, enum dtype dt,
                          double tiles, double k, double sms)
{
  double wave = 1.0;
  if (sms > 0) {
    double waves = ceil(tiles / sms);
    wave = tiles / (waves * sms);
  }
  bool f8 = dt == DTYPE_FP8;
  double ceiling = f8 && g->gemm_eff_fp8 > 0 ? g->gemm_eff_fp8 : g->gemm_eff;
  double k_half = f8 && g->gemm_k_half_fp8 > 0 ? g->gemm_k_half_fp8
                                               : g->gemm_k_half;
  return ceiling * wave * (k / (k + k_half));
}

double cost_gemm_efficiency_in(const struct gpu_spec *g, enum dtype dt,
                               double m, double n, double k)
{
  return gemm_eff_tiles(g, dt, ceil(m / TILE) * ceil(n / TILE), k);
}

double cost_ggemm_efficiency_in(const struct gpu_spec *g, enum dtype dt,
                                double groups, double m, double n, double k)
{
  return gemm_eff_tiles(g, dt, groups * ceil(m / TILE) * ceil(n / TILE), k);
}

double cost_gemm_efficiency(const struct gpu_spec *g, double m, double n,
                            double k)
{
  return cost_gemm_efficiency_in(g, DTYPE_BF16, m, n, k);
}

/* A row softmax: an element-wise task that carries its row length in k
 * (builder_layer.c, jit_softmax: Megatron-LM's fused causal softmax).
 * It runs at the softmax family's measured fraction of HBM bandwidth:
 * analysis/kernels/h100_kernels_2026-11-22.csv, PyTorch 2.11's softmax
 * over rows of 4096 and 8192 BF16 elements on one H100 SXM, forward at
 * 43 % and 34 % of the same GPU's device copy, backward at 51 % for both;
 * the copy reaches 3024 GB/s, 0.903 of the 3350 GB/s peak.  Forward: the
 * two rows' mean, 0.385 x 0.903 = 0.348 of peak; backward 0.51 x 0.903 =
 * 0.461.  Used for every GPU, as the norms' H100 fractions are
 * (catalog.xml): an assumption, no A100 softmax row being at hand.
 * Checked, not fitted (analysis/reconcile/megatron2021.md): it gives the
 * attention core that KOR22's selective recomputation re-runs on A100
 * (h 6144, 64 heads, s 2048, micro-batch 4, TP 8) 1.31 ms; measured
 * 13.2 - 11.9 = 1.3 ms. */
#define SOFTMAX_FWD_EFF 0.348
#define SOFTMAX_BWD_EFF 0.461

double cost_mem_efficiency(const struct gpu_spec *g, const struct task *t)
{
  double e = 0;
  if (t->op == KK_ELEMWISE && t->k > 0)
    return t->phase == PH_BWD ? SOFTMAX_BWD_EFF : SOFTMAX_FWD_EFF;
  if (t->op == KK_NORM)
    e = t->phase == PH_FWD ? g->norm_eff : g->norm_bwd_eff;
  else if (t->op == KK_LOSS)
    e = t->phase == PH_FWD || g->loss_bwd_eff <= 0 ? g->loss_eff
                                                   : g->loss_bwd_eff;
  else if (t->op == KK_OPTIM)
    e = g->optim_eff;
  return e > 0 ? e : g->mem_eff;
}

enum dtype cost_kernel_dtype(enum dtype dt, const struct task *t)
{
  if (dt != DTYPE_FP8)
    return dt;
  bool linear = t->layer >= 0 && ((t->op == KK_GEMM && t->batch <= 1) ||
                                   t->op == KK_GGEMM);
  return linear ? DTYPE_FP8 : DTYPE_BF16;
}

static double attn_flops(double batch, double s, double d)
{
  return 4.0 * batch * s * s * d;
}

/* Matrix FLOPs of a shape, for table rows (same formulas as the builder). */
static double shape_flops(int kind, double a, double b, double c)
{
  if (kind == KK_GEMM)
    return 2.0 * a * b * c;
  if (kind == KK_ATTN)
    return attn_flops(a, b, c);
  if (kind == KK_ATTN_BWD)
    return 2.0 * attn_flops(a, b, c);
  return 0;
}

/* The peak a fused attention kernel's efficiencies are fractions of: its
 * half-precision tensor-core rate (BF16, else FP16 on GPUs without BF16,
 * else FP32); a GPU defined with no BF16 rate once made it 0 and the
 * simulated clock NaN. */
static double attn_peak(const struct gpu_spec *g)
{
  if (g->peak_flops[DTYPE_BF16] > 0)
    return g->peak_flops[DTYPE_BF16];
  if (g->peak_flops[DTYPE_FP16] > 0)
    return g->peak_flops[DTYPE_FP16];
  return g->peak_flops[DTYPE_FP32];
}

static double dir_rate(const struct gpu_spec *g, const struct attn_dir *a,
                       double s, double d, bool causal)
{
  double x = log2(fmin(256, fmax(64, d)));
  double gd = x <= 7 ? a->d64 + (1 - a->d64) * (x - 6)
                     : 1 + (a->d256 - 1) * (x - 7);
  double r = attn_peak(g) * a->eff * gd * s / (s + a->seq_half);
  return causal ? r * s / (s + a->causal_seq) : r;
}

int cost_attn_kernel(const struct gpu_spec *g, int kernel)
{
  if (kernel < 0)
    return g->attn_default;
  return kernel < AK_COUNT && g->attn[kernel].have ? kernel : -1;
}

double cost_attn_rate(const struct gpu_spec *g, int kernel, bool bwd,
                      double s, double d, bool causal)
{
  int k = cost_attn_kernel(g, kernel);
  if (k >= 0)
    return dir_rate(g, bwd ? &g->attn[k].bwd : &g->attn[k].fwd, s, d, causal);
  /* No fitted kernel: the generic model, attn_eff at the benchmark count,
   * half of it at 128 tokens, the same loss again for a causal mask. */
  struct attn_dir generic = {g->attn_eff, 1, 1, ATTN_SEQ_HALF, ATTN_SEQ_HALF};
  return dir_rate(g, &generic, s, d, causal);
}

/* A fused attention kernel: the task counts Megatron's FLOPs (4 b s^2 d
 * forward, twice that backward, no causal discount); the kernel does the
 * benchmark count's work (backward 2.5x the forward: it recomputes the
 * scores; half of it under the causal mask of weft's decoder models). */
static double attn_time(const struct gpu_spec *g, int kernel,
                        const struct task *t)
{
  bool bwd = t->op == KK_ATTN_BWD;
  double fwd_flops = bwd ? t->flops / 2 : t->flops;
  double work = fwd_flops * (bwd ? 2.5 : 1) * ATTN_CAUSAL_WORK;
  /* A sliding window or chunks (builder_layer.c: n, the keys a query
   * meets, below the queries m): the kernel's work is already the window's
   * pairs; it runs at the rate of a sequence as long as the window, each
   * query block meeting that many keys (FlashAttention's local attention
   * skips the blocks outside it, flash_fwd_kernel.h n_block_min/max). */
  double s = t->n > 0 && t->n < t->m ? (double)t->n : (double)t->m;
  return work / cost_attn_rate(g, kernel, bwd, s, (double)t->k, true);
}

/* One thread block's share of the HBM bandwidth that a single-block
 * torch.topk reaches (below).  Measured: torch.topk of 2,000,000 FP32
 * values, k = 1000, sorted=False, on a Quadro GP100 (56 SMs, 717 GB/s)
 * takes 25.6 ms (github.com/pytorch/pytorch issue 22812, PyTorch 1.1:
 * 2.5576 s for 100 calls).  Its radix select (RADIX_BITS 2: 16 passes of
 * countRadixUsingMask over the 32-bit keys) and gatherTopK's pass read
 * 17 x 4 bytes per element, 136 MB: at one SM's share, 717/56 GB/s, that
 * is 10.6 ms, so the block reaches 0.415 of it.  One kernel's
 * measurement, not fitted to any training step; no V100 figure was
 * found, so the same share is used for every GPU. */
#define TOPK_BLOCK_EFF 0.415

/* A step of a gradient compression hook (workloads/builder_compress.c):
 * `batch` CUDA kernels that together move `bytes` through HBM, each paying
 * the launch (the small kernels of PowerSGD's per-column Gram-Schmidt are
 * launch-bound), plus a torch.topk that selects from m x 2^32 + k elements
 * with one thread block per slice (aten/src/ATen/native/cuda/TensorTopK.cu
 * before pull 71081 of 2022, which PyTorch 1.8 to 1.12 ran: the paper's),
 * reading n bytes per element at that block's share of the bandwidth.
 * The matmuls of PowerSGD (M Q, M^T P, P Q^T with rank r <= 16 columns:
 * r/2 FLOPs per FP32 byte of M, below a V100's 17) are memory-bound and
 * counted by their bytes. */
static double compress_time(const struct gpu_spec *g, const struct task *t,
                            double mem)
{
  double launches = t->batch > 1 ? (double)t->batch : 1.0;
  double sel = (double)t->m * 4294967296.0 + (double)t->k, sel_s = 0;
  if (sel > 0 && g->sms > 0 && g->hbm_bw_Bps > 0)
    sel_s = sel * (double)t->n /
            (g->hbm_bw_Bps / (double)g->sms * TOPK_BLOCK_EFF);
  return mem + sel_s + launches * g->launch_s;
}

static double model_time(const struct gpu_spec *g, enum dtype dt, int attn,
                         const struct task *t)
{
  /* dt is the kernel's own precision (cost_kernel_dtype). */
  double peak = g->peak_flops[dt];
  if (peak <= 0)
    peak = g->peak_flops[DTYPE_FP32];
  double mem = t->bytes / (g->hbm_bw_Bps * cost_mem_efficiency(g, t));
  if (t->op == KK_COMPRESS)
    return compress_time(g, t, mem);
  double comp = 0;
  if (t->flops > 0) {
    if (t->op == KK_GEMM || t->op == KK_GGEMM) {
      /* batch: a batched GEMM's matrices, a grouped GEMM's groups */
      double b = t->batch > 1 ? (double)t->batch : 1.0;
      double eff =
          t->op == KK_GGEMM
              ? cost_ggemm_efficiency_in(g, dt, b, t->m, t->n, t->k)
              : cost_gemm_efficiency_in(g, dt, b * t->m, t->n, t->k);
      comp = t->flops / (peak * eff);
      if (t->sms_held > 0 && g->sms > t->sms_held) {
        /* A GEMM beside a communication kernel runs on the SMs left
         * (cuBLAS's sm_count, TE comm_gemm_overlap.cpp _math_sms): that
         * share of the peak, in waves of that many tiles. */
        double left = (double)(g->sms - t->sms_held);
        double tiles = t->op == KK_GGEMM
                           ? b * ceil(t->m / TILE) * ceil(t->n / TILE)
                           : ceil(b * t->m / TILE) * ceil(t->n / TILE);
        comp = t->flops / (peak * left / g->sms *
                           gemm_eff_on(g, dt, tiles, t->k, left));
      }
    } else {
      comp = attn_time(g, attn, t);
    }
  }
  return fmax(comp, mem) + g->launch_s;
}

static double table_time(const struct cost_table *tab, const struct gpu_spec *g,
                         enum dtype dt, const struct task *t, bool *found)
{
  *found = false;
  if (!tab || (t->op != KK_GEMM && t->op != KK_ATTN && t->op != KK_ATTN_BWD))
    return 0;
  uint32_t a = t->op == KK_GEMM ? t->m : t->batch;
  uint32_t b = t->op == KK_GEMM ? t->n : t->m;
  uint32_t c = t->k;
  const struct row *lo = NULL, *hi = NULL;
  double f = t->flops;
  for (long i = 0; i < tab->n; i++) {
    const struct row *r = &tab->rows[i];
    if (r->kind != t->op || r->dtype != dt || strcasecmp(r->gpu, g->name))
      continue;
    if (r->a == a && r->b == b && r->c == c) {
      *found = true;
      return r->time_s;
    }
    if (r->flops <= f && (!lo || r->flops > lo->flops))
      lo = r;
    if (r->flops >= f && (!hi || r->flops < hi->flops))
      hi = r;
  }
  if (!lo && !hi)
    return 0;
  *found = true;
  double rate;
  if (!lo || !hi || hi->flops == lo->flops) {
    const struct row *r = lo ? lo : hi;
    rate = r->flops / r->time_s;
  } else {
    double x = (log(f) - log(lo->flops)) / (log(hi->flops) - log(lo->flops));
    double rl = lo->flops / lo->time_s, rh = hi->flops / hi->time_s;
    rate = exp(log(rl) + x * (log(rh) - log(rl)));
  }
  return f / rate;
}

double cost_kernel(const struct gpu_spec *g, enum dtype dt, int attn,
                   const struct task *t, const struct cost_table *table)
{
  bool found;
  enum dtype kd = cost_kernel_dtype(dt, t);
  double v = table_time(table, g, kd, t, &found);
  if (found && t->sms_held > 0 && g->sms > t->sms_held)
    v *= (double)g->sms / (g->sms - t->sms_held); /* measured on all SMs */
  return found ? v : model_time(g, kd, attn, t);
}

#define MAX_TABLE_LINE 1024             /* bytes in one line */
#define MAX_TABLE_BYTES (64L << 20)     /* bytes in the whole file */

static const char *const table_head[5] = {"kernel", "shape", "dtype", "gpu",
                                          "time"};

/* The file is CSV read by csv.h's reader, with '#' comments and a last row
 * that may lack its newline (tables are written by hand); the limits on a
 * line and on the file are the table's own.  Over 100 lines: one pass over
 * the rows with each row's checks in the order the fault tests and the
 * fuzz target pin.  NEEDSWORK: a row checker of its own. */
struct cost_table *cost_table_read(const char *path, struct weft_err *err)
{
  struct csv_reader rd;
  if (csv_reader_open(&rd, path, err))
    return NULL;
  rd.comments = true;
  rd.last_row_whole = true;
  struct cost_table *t = xcalloc(1, sizeof *t);
  long cap = 0, line = 0;
  int rc = 0, got;
  bool header = true;
  while (!rc && (got = csv_reader_next(&rd, err)) > 0) {
    line = rd.line;
    if (rd.offset + rd.bytes > (uint64_t)MAX_TABLE_BYTES) {
      rc = weft_errf(err, WEFT_ELIMIT, "%s:%ld: larger than the limit of %ld "
                     "bytes", path, line, MAX_TABLE_BYTES);
      break;
    }
    if (rd.bytes > MAX_TABLE_LINE) { /* its newline included */
      rc = weft_errf(err, WEFT_ELIMIT, "%s:%ld: line longer than %d bytes",
                     path, line, MAX_TABLE_LINE - 1);
      break;
    }
    char **fields = rd.fields;
    int nf = rd.nfields;
    if (nf == 1 && !fields[0][0])
      continue; /* an empty line */
    if (header) {
      header = false;
      bool ok = nf == 5;
      for (int k = 0; ok && k < 5; k++)
        ok = strcmp(fields[k], table_head[k]) == 0;
      if (!ok)
        rc = weft_errf(err, WEFT_EINVAL, "%s:%ld: expected the header "
                       "'kernel,shape,dtype,gpu,time'", path, line);
      continue;
    }
    if (nf != 5) {
      rc = weft_errf(err, WEFT_EINVAL, "%s:%ld: expected 5 fields, got %d",
                     path, line, nf);
      break;
    }
    struct row r;
    memset(&r, 0, sizeof r);
    if (strcmp(fields[0], "gemm") == 0)
      r.kind = KK_GEMM;
    else if (strcmp(fields[0], "attn") == 0)
      r.kind = KK_ATTN;
    else if (strcmp(fields[0], "attn_bwd") == 0)
      r.kind = KK_ATTN_BWD;
    else {
      rc = weft_errf(err, WEFT_EINVAL, "%s:%ld: unknown kernel '%s'; expected "
                     "gemm, attn or attn_bwd", path, line, fields[0]);
      break;
    }
    unsigned long a, b, c;
    char extra;
    if (sscanf(fields[1], "%lux%lux%lu%c", &a, &b, &c, &extra) != 3 || !a ||
        !b || !c || a > UINT32_MAX || b > UINT32_MAX || c > UINT32_MAX) {
      rc = weft_errf(err, WEFT_EINVAL, "%s:%ld: shape '%s' is not AxBxC with "
                     "positive integers", path, line, fields[1]);
      break;
    }
    enum dtype dt;
    if (!dtype_from_name(fields[2], &dt)) {
      rc = weft_errf(err, WEFT_EINVAL, "%s:%ld: unknown dtype '%s'", path,
                     line, fields[2]);
      break;
    }
    if (strlen(fields[3]) >= sizeof r.gpu || !fields[3][0]) {
      rc = weft_errf(err, WEFT_EINVAL, "%s:%ld: bad GPU name", path, line);
      break;
    }
    double time;
    if (units_parse_pos(fields[4], UNIT_TIME, 3600, &time, err)) {
      rc = weft_err_prefix(err, "time");
      char msg[WEFT_ERR_MAX];
      snprintf(msg, sizeof msg, "%s", err->msg);
      rc = weft_errf(err, WEFT_EINVAL, "%s:%ld: %s", path, line, msg);
      break;
    }
    if (t->n >= MAX_TABLE_ROWS) {
      rc = weft_errf(err, WEFT_ELIMIT, "%s:%ld: more than %d rows", path, line,
                     MAX_TABLE_ROWS);
      break;
    }
    r.dtype = (uint8_t)dt;
    snprintf(r.gpu, sizeof r.gpu, "%s", fields[3]);
    r.a = (uint32_t)a;
    r.b = (uint32_t)b;
    r.c = (uint32_t)c;
    r.flops = shape_flops(r.kind, (double)a, (double)b, (double)c);
    r.time_s = time;
    if (t->n == cap) {
      cap = cap ? 2 * cap : 64;
      t->rows = xreallocarray(t->rows, (size_t)cap, sizeof *t->rows);
    }
    t->rows[t->n++] = r;
  }
  if (!rc && got < 0)
    rc = got;
  if (!rc && header)
    rc = weft_errf(err, WEFT_EINVAL, "%s:%ld: empty table", path,
                   rd.next_line - 1);
  csv_reader_close(&rd);
  if (rc) {
    cost_table_free(t);
    return NULL;
  }
  return t;
}
