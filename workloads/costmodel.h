/*
 * costmodel.h - how long a kernel takes on a GPU.
 *
 * The analytical model is a roofline with shape-dependent efficiency:
 *   time = max(flops / (peak * eff), bytes / (hbm_bw * mem_eff)) + launch
 * where, for a GEMM, eff = gemm_eff * wave * kfill (a batched GEMM counts
 * batch x m rows): `wave` is the share of
 * the last wave of 128x128 output tiles that keeps the GPU's SMs busy
 * (tiles / (ceil(tiles / sms) * sms)), and kfill = k / (k + k_half) the
 * cost of a short reduction dimension: each tile pays a fixed prologue and
 * epilogue (pipeline fill, writing C) besides its main loop, and k_half,
 * the K at which both take as long, grows with the math rate (FP8's is
 * about 3x BF16's on Hopper).  k_half and the ceilings per GPU and
 * precision: the catalog (gemm_k_half, gemm_k_half_fp8, gemm_eff,
 * gemm_eff_fp8), fitted by analysis/fit_gemm.py where rows exist.
 * A grouped GEMM (the MoE experts of one rank in one kernel, as
 * Megatron-core's GroupedMLP and DeepGEMM run them) tiles each group's
 * output on its own: `groups` x ceil(m/128) x ceil(n/128) tiles in the
 * wave, each group's k in kfill, the same ceilings as a dense GEMM (the
 * grouped rows of DeepGEMM and torchao reach the dense ceilings: see
 * analysis/fit_gemm.py).  Memory-bound kernels
 * (norms, element-wise, embedding, loss, optimizer) have no FLOPs and run
 * at mem_eff of the HBM bandwidth, or at their family's measured share
 * where the catalog has one (cost_mem_efficiency).
 *
 * Fused attention is timed by the kernel that runs it (`--attention`:
 * flash2, flash3, cudnn; `flash` is the GPU's default, the one frameworks
 * pick: cuDNN through Transformer Engine and PyTorch SDPA on Hopper,
 * FlashAttention-2 on Ampere).  Two counts of its work exist, and weft uses
 * each where it belongs:
 *   - Megatron's count, in the task's FLOPs and every TFLOP/s weft prints:
 *     4 b s^2 d forward, twice that backward, no causal discount;
 *   - the kernel's own work, which sets its time: backward 2.5x the
 *     forward (it recomputes the scores), and under a causal mask (all of
 *     weft's models are decoders) about half the full count, because
 *     FlashAttention and cuDNN skip the tiles above the diagonal.  The
 *     benchmarks of FlashAttention 2/3 and cuDNN report TF/s at this count.
 * cost_attn_rate gives the kernel's throughput at that benchmark count,
 * fitted per GPU and kernel (catalog.h, struct attn_dir; the fit and its
 * held-back rows: analysis/fit_attention.py, tests/validation/attn_rows).
 * A GPU with no fitted kernel uses attn_eff at the benchmark count with a
 * 128-token half-length for sequence and causal losses.  Unfused attention
 * (batched GEMMs, Megatron-LM 2021) computes the full score matrix and is
 * timed as GEMMs and memory-bound kernels.
 *
 * Precision as frameworks run it (cost_kernel_dtype): a model in FP8
 * computes the GEMMs of its Transformer layers' linear modules in FP8 (as
 * Transformer Engine's fp8_autocast does, forward and both backward GEMMs;
 * FP8 GEMMs reach the GPU's gemm_eff_fp8 ceiling), while attention, the
 * embedding and output layer and every memory-bound kernel stay in BF16.
 *
 * A measured table overrides the model where it has data: a CSV (csv.h's
 * rules; lines starting with '#' are comments) with the columns
 * kernel,shape,dtype,gpu,time (shape "MxNxK" for GEMMs, "BxSxD" for
 * attention: batch*heads, sequence, head dim; time with a unit, "812us").
 * A kernel of a measured shape gets the measured time; between measured
 * shapes of the same kernel, dtype and GPU the achieved FLOP/s is
 * interpolated linearly in log(FLOPs) and held constant beyond the ends.
 */
#ifndef WEFT_COSTMODEL_H
#define WEFT_COSTMODEL_H

#include "platforms/catalog.h"
#include "sim/base/err.h"
#include "sim/graph/graph.h"

struct cost_table;

/* Read a measured table.  Errors name the file and line.  Caller frees. */
struct cost_table *cost_table_read(const char *path,
                                   struct weft_err *err) WEFT_WUR;
void cost_table_free(struct cost_table *t);
long cost_table_rows(const struct cost_table *t);

/* Seconds `t` (a TK_KERNEL task) takes on GPU `g` computing in `dt`, fused
 * attention by kernel `attn` (enum attn_kernel; -1: the GPU's default),
 * with `table` (may be NULL) overriding the model. */
double cost_kernel(const struct gpu_spec *g, enum dtype dt, int attn,
                   const struct task *t, const struct cost_table *table);

/* The attention kernel `kernel` stands for on `g`: the GPU's default for
 * -1, `kernel` when the GPU runs it, -1 when it does not (or when the GPU
 * has no fitted kernel: the generic model). */
int cost_attn_kernel(const struct gpu_spec *g, int kernel);

/* Throughput (FLOP/s at the benchmark count: causal at half, backward 2.5x
 * the forward) of attention kernel `kernel` (-1: default) on `g`, forward
 * or backward, at sequence length `s` and head dimension `d`. */
double cost_attn_rate(const struct gpu_spec *g, int kernel, bool bwd,
                      double s, double d, bool causal);

/* The share of HBM bandwidth memory-bound kernel `t` reaches on `g`. */
double cost_mem_efficiency(const struct gpu_spec *g, const struct task *t);

/* The precision kernel `t` computes in when the model's linear layers run
 * in `dt`: `dt` for a GEMM of a Transformer layer that is not batched
 * (QKV, projection, MLP, grouped experts, router), BF16 for everything
 * else when `dt` is FP8, `dt` otherwise. */
enum dtype cost_kernel_dtype(enum dtype dt, const struct task *t);

/* The efficiency the model gives a GEMM of this shape on `g` (0..1), in
 * BF16/FP16, and in precision `dt`. */
double cost_gemm_efficiency(const struct gpu_spec *g, double m, double n,
                            double k);
double cost_gemm_efficiency_in(const struct gpu_spec *g, enum dtype dt,
                               double m, double n, double k);
/* The same for a grouped GEMM of `groups` groups of m x n x k each. */
double cost_ggemm_efficiency_in(const struct gpu_spec *g, enum dtype dt,
                                double groups, double m, double n, double k);

#endif
