/*
 * schedule.h - pipeline schedules: the order in which one pipeline stage
 * runs the forward and backward passes of its micro-batches.
 *
 * GPipe: every forward, then every backward.  1F1B (PipeDream-Flush, as in
 * Megatron-LM): stage s runs min(p - s - 1, m) warm-up forwards, then
 * alternates one forward and one backward, then drains the backwards.
 * Interleaved 1F1B with v model chunks per GPU (Narayanan et al. SC21;
 * Megatron-Core's forward_backward_pipelining_with_interleaving): the
 * virtual micro-batches run in groups of g micro-batches per model chunk
 * (Megatron-Core's microbatch_group_size_per_vp_stage, default p, the
 * depth-first order; g = m is breadth-first, Llama 3's other end; a last
 * group of fewer than 2g takes all that remain), chunk 0, then chunk 1...;
 * the backwards visit the chunks in reverse; warm-up of (p - s - 1) * 2 +
 * (v - 1) * g virtual micro-batches (all of them when m == p).  Bubble
 * fractions are (p - 1) / m and, for m a multiple of p and g = p,
 * (p - 1) / (v m); with m < p in one group the makespan is (v p + m - 1)
 * chunk passes forward and as many backward (tests/test_schedule.c).
 */
#ifndef WEFT_SCHEDULE_H
#define WEFT_SCHEDULE_H

#include <stdbool.h>
#include <stdint.h>

#include "sim/base/err.h"
#include "workloads/plan.h"

struct sched_op {
  int32_t mb;    /* micro-batch */
  int16_t chunk; /* model chunk on this GPU */
  bool fwd;      /* forward, else backward */
  bool merged;   /* a forward that runs as one step with the backward
                    after it (schedule_build_combined) */
};

/* The ops of pipeline stage `stage` of `p` stages with `m` micro-batches
 * and `v` chunks, in order: 2 * m * v entries; interleaved with the default
 * group of p micro-batches.  Returns a heap array the caller frees, and its
 * length in *out_n. */
struct sched_op *schedule_build(enum sched_kind kind, long p, long m, long v,
                                long stage, long *out_n);

/* The same with `g` micro-batches per group and model chunk (interleaved
 * only; g <= 0: the default, p).  The caller has checked g with
 * schedule_check_group: other values give orders that can deadlock. */
struct sched_op *schedule_build_group(enum sched_kind kind, long p, long m,
                                      long v, long g, long stage,
                                      long *out_n);

/* Whether `g` micro-batches per group (g <= 0: the default, p) make an
 * interleaved schedule of `m` micro-batches on `p` stages that runs:
 * Megatron-Core's rule (g in [p, m], and the last group, m mod g, empty or
 * at least p), or one group of all m < p micro-batches (Llama 3's flexible
 * schedule, which Megatron-Core refuses).  On failure writes "<origin>:
 * what is wrong and the flag that fixes it" to err, naming `v` in the
 * suggested interleaved:V:G; returns 0 or WEFT_EINVAL. */
int schedule_check_group(long p, long m, long v, long g, const char *origin,
                         struct weft_err *err) WEFT_WUR;

/* Megatron-Core's combined 1F1B (--overlap-moe-expert-parallel-comm):
 * 1F1B (pp 1 only: combined_1f1b_schedule_for_no_pipelining) or
 * interleaved with one forward more in the warm-up
 * (get_pp_rank_microbatches: "we schedule one extra micro-batch forward
 * step before the 1f1b stages ... to ensure the forward and backward
 * computations are independent in all 1f1b steps"), every steady-state
 * forward marked `merged` with the backward after it
 * (combined_1f1b_schedule_for_interleaved_pipelining); the warm-up's
 * forwards and the cool-down's backwards run alone.  With pp 1 the
 * warm-up is the first forward.  Returns a heap array of 2 m v ops, its
 * length in *out_n. */
struct sched_op *schedule_build_combined(enum sched_kind kind, long p,
                                         long m, long v, long g, long stage,
                                         long *out_n);

/* The order stage `stage` of plan `pl` runs: schedule_build_group, or
 * schedule_build_combined with pl->a2a_overlap. */
struct sched_op *schedule_for_plan(const struct plan *pl, long stage,
                                   long *out_n);

#endif
