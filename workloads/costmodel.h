/*
 * costmodel.h - how long a kernel takes on a GPU.
 *
 * The analytical model is a roofline with shape-dependent efficiency:
 *   time = max(flops / (peak * eff), bytes / (hbm_bw * mem_eff)) + launch
 * where, for a GEMM, eff = gemm_eff * wave * kfill (a batched GEMM counts
 * batch x m rows): `wave` is the share of
 * the last wave of 128x128 output tiles that keeps the GPU's SMs busy
 * (tiles / (ceil(tiles / sms) * sms)), and kfill = k / (k + 64) the
 * pipeline fill of a short reduction dimension; for fused attention
 * eff = attn_eff * s / (s + 128) (short sequences run far below peak), and
 * the backward kernel does 2.5x the forward's work (it recomputes the
 * scores) though Megatron counts 2x.  NEEDSWORK: fused kernels of a causal
 * model (all of weft's) skip the tiles above the diagonal, about
 * (s + 128) / 2s of the work their FLOPs count, and attn_eff is quoted at
 * that causal-half count (FlashAttention's and cuDNN's benchmarks; our
 * H100 cuDNN rows); the model does the full work, so fused attention takes
 * about twice its time.  Halving it alone raised Llama 3 8B on H100 to
 * 67 % MFU, further from published runs: it waits for the costs still
 * missing (see the issue 10 notes).  Memory-bound kernels (norms,
 * element-wise, embedding, loss, optimizer) have no FLOPs and run at
 * mem_eff of the HBM bandwidth, or at their family's measured share where
 * the catalog has one (cost_mem_efficiency).  The per-GPU constants are in the catalog.
 *
 * Precision as frameworks run it (cost_kernel_dtype): a model in FP8
 * computes the GEMMs of its Transformer layers' linear modules in FP8 (as
 * Transformer Engine's fp8_autocast does, forward and both backward GEMMs;
 * FP8 GEMMs reach the GPU's gemm_eff_fp8 ceiling), while attention, the
 * embedding and output layer and every memory-bound kernel stay in BF16.
 *
 * A measured table overrides the model where it has data: a CSV with the
 * columns kernel,shape,dtype,gpu,time (shape "MxNxK" for GEMMs, "BxSxD" for
 * attention: batch*heads, sequence, head dim; time with a unit, "812us").
 * A kernel of a measured shape gets the measured time; between measured
 * shapes of the same kernel, dtype and GPU the achieved FLOP/s is
 * interpolated linearly in log(FLOPs) and held constant beyond the ends.
 */
#ifndef WEFT_COSTMODEL_H
#define WEFT_COSTMODEL_H

#include "platforms/catalog.h"
#include "sim/base/err.h"
#include "traces/graph.h"

struct cost_table;

/* Read a measured table.  Errors name the file and line.  Caller frees. */
struct cost_table *cost_table_read(const char *path,
                                   struct weft_err *err) WEFT_WUR;
void cost_table_free(struct cost_table *t);
long cost_table_rows(const struct cost_table *t);

/* Seconds `t` (a TK_KERNEL task) takes on GPU `g` computing in `dt`, with
 * `table` (may be NULL) overriding the model. */
double cost_kernel(const struct gpu_spec *g, enum dtype dt,
                   const struct task *t, const struct cost_table *table);

/* The share of HBM bandwidth memory-bound kernel `t` reaches on `g`. */
double cost_mem_efficiency(const struct gpu_spec *g, const struct task *t);

/* The precision kernel `t` computes in when the model's linear layers run
 * in `dt`: `dt` for a GEMM of a Transformer layer that is not batched
 * (QKV, projection, MLP, experts, router), BF16 for everything else when
 * `dt` is FP8, `dt` otherwise. */
enum dtype cost_kernel_dtype(enum dtype dt, const struct task *t);

/* The efficiency the model gives a GEMM of this shape on `g` (0..1), in
 * BF16/FP16, and in precision `dt`. */
double cost_gemm_efficiency(const struct gpu_spec *g, double m, double n,
                            double k);
double cost_gemm_efficiency_in(const struct gpu_spec *g, enum dtype dt,
                               double m, double n, double k);

#endif
