/*
 * schedule.h - pipeline schedules: the order in which one pipeline stage
 * runs the forward and backward passes of its micro-batches.
 *
 * GPipe: every forward, then every backward.  1F1B (PipeDream-Flush, as in
 * Megatron-LM): stage s runs min(p - s - 1, m) warm-up forwards, then
 * alternates one forward and one backward, then drains the backwards.
 * Interleaved 1F1B with v model chunks per GPU (Narayanan et al. SC21,
 * Megatron-LM's forward_backward_pipelining_with_interleaving): warm-up of
 * (p - s - 1) * 2 + (v - 1) * p virtual micro-batches (all of them when m ==
 * p), chunks taken in groups of p micro-batches.  Bubble fractions are
 * (p - 1) / m and (p - 1) / (v m).
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
};

/* The ops of pipeline stage `stage` of `p` stages with `m` micro-batches
 * and `v` chunks, in order: 2 * m * v entries.  Returns a heap array the
 * caller frees, and its length in *out_n. */
struct sched_op *schedule_build(enum sched_kind kind, long p, long m, long v,
                                long stage, long *out_n);

#endif
