/*
 * schedule.c - GPipe, 1F1B and interleaved 1F1B orders.
 *
 * The interleaved order is Megatron-Core's (megatron/core/pipeline_parallel/
 * schedules.py at NVIDIA/Megatron-LM d98e8a64dd, 2026-08-22): the
 * virtual micro-batch table of get_schedule_table, the warm-up count of
 * get_pp_rank_microbatches, and the loops of
 * forward_backward_pipelining_with_interleaving (forward k for k < warm-up;
 * then forward k + warm-up and backward k; then the remaining backwards).
 * tests/oracle/megatron_interleaved.py transcribes that code and
 * tests/test_schedule.c compares the two.
 */
#include "workloads/schedule.h"

#include "sim/base/xalloc.h"

/* Entry k of get_schedule_table(m, v, g): groups of g micro-batches run
 * through chunk 0, then chunk 1...; the group that reaches m (its start lo
 * has lo + g >= m) takes every micro-batch from lo on.  Backward k visits
 * the chunks in reverse (get_model_chunk_id(k, forward=False)) and pops its
 * chunk's oldest forward, which is the micro-batch of entry k because each
 * chunk sees its micro-batches in increasing order. */
static struct sched_op virt(long k, long m, long v, long g, bool fwd)
{
  long last_lo = (m - 1) / g * g; /* the start of the group that reaches m */
  long lo, size, at;
  if (k < last_lo * v) {
    lo = k / (g * v) * g;
    size = g;
    at = k % (g * v);
  } else {
    lo = last_lo;
    size = m - last_lo;
    at = k - last_lo * v;
  }
  long chunk = at / size;
  if (!fwd)
    chunk = v - 1 - chunk;
  struct sched_op op = {(int32_t)(lo + at % size), (int16_t)chunk, fwd,
                        false};
  return op;
}

/* Virtual micro-batches that stage `stage` runs forward before its first
 * backward (get_pp_rank_microbatches).  With m == p every pass is warm-up:
 * Megatron-LM's rule up to commit 4295be1a6c (2024-11-01, "tunable schedule
 * with overlapping"), the code of the SC21 runs; kept so that the layouts
 * weft ran before keep their order.  Megatron-Core since then gives the
 * later stages of m == p the formula's smaller warm-up. */
static long interleaved_warmup(long p, long m, long v, long g, long stage)
{
  long total = m * v;
  if (m == p)
    return total;
  long warm = (p - stage - 1) * 2 + (v - 1) * g;
  return warm < total ? warm : total;
}

/* The 1F1B and interleaved orders: `warm` forwards, then forward and
 * backward alternately (the forward marked `merged` when `combined`),
 * then the remaining backwards. */
static long one_f_one_b(struct sched_op *ops, long m, long v, long g,
                        long warm, bool combined)
{
  long total = m * v, f = 0, b = 0, n = 0;
  if (warm > total)
    warm = total;
  for (; f < warm; f++)
    ops[n++] = virt(f, m, v, g, true);
  while (f < total) {
    ops[n] = virt(f++, m, v, g, true);
    ops[n++].merged = combined;
    ops[n++] = virt(b++, m, v, g, false);
  }
  while (b < total)
    ops[n++] = virt(b++, m, v, g, false);
  return n;
}

struct sched_op *schedule_build_group(enum sched_kind kind, long p, long m,
                                      long v, long g, long stage,
                                      long *out_n)
{
  if (kind != SCHED_INTERLEAVED)
    v = 1;
  if (g <= 0)
    g = p;
  long total = m * v, n = 0;
  struct sched_op *ops = xcalloc((size_t)(2 * total), sizeof *ops);
  if (kind == SCHED_GPIPE) {
    for (long i = 0; i < m; i++)
      ops[n++] = (struct sched_op){(int32_t)i, 0, true, false};
    for (long i = 0; i < m; i++)
      ops[n++] = (struct sched_op){(int32_t)i, 0, false, false};
  } else {
    /* 1F1B is the interleaved order with one chunk and groups of m. */
    long warm = kind == SCHED_1F1B ? p - stage - 1
                                   : interleaved_warmup(p, m, v, g, stage);
    n = one_f_one_b(ops, m, v, kind == SCHED_1F1B ? m : g, warm, false);
  }
  *out_n = n;
  return ops;
}

/* Megatron-Core's warm-up with the overlap has no m == p rule (weft keeps
 * that rule only for the orders it ran before, interleaved_warmup): 2 (p -
 * stage - 1) + (v - 1) g + 1 virtual micro-batches, all of them at most.
 * With one stage (forward_backward_no_pipelining), the first forward
 * alone, then (forward i + 1, backward i) merged, then the last backward
 * (combined_1f1b_schedule_for_no_pipelining). */
struct sched_op *schedule_build_combined(enum sched_kind kind, long p,
                                         long m, long v, long g, long stage,
                                         long *out_n)
{
  if (kind != SCHED_INTERLEAVED)
    v = 1;
  if (g <= 0)
    g = p;
  struct sched_op *ops = xcalloc((size_t)(2 * m * v), sizeof *ops);
  if (kind == SCHED_INTERLEAVED)
    *out_n = one_f_one_b(ops, m, v, g, 2 * (p - stage - 1) + (v - 1) * g + 1,
                         true);
  else
    *out_n = one_f_one_b(ops, m, 1, m, p - stage, true);
  return ops;
}

struct sched_op *schedule_for_plan(const struct plan *pl, long stage,
                                   long *out_n)
{
  if (pl->a2a_overlap)
    return schedule_build_combined(pl->schedule, pl->pp, pl->microbatches,
                                   pl->vchunks, pl->vgroup, stage, out_n);
  return schedule_build_group(pl->schedule, pl->pp, pl->microbatches,
                              pl->vchunks, pl->vgroup, stage, out_n);
}

struct sched_op *schedule_build(enum sched_kind kind, long p, long m, long v,
                                long stage, long *out_n)
{
  return schedule_build_group(kind, p, m, v, 0, stage, out_n);
}

/* Megatron-Core refuses group sizes outside [p, m] and a short last group
 * (forward_backward_pipelining_with_interleaving: "should range in [PP,
 * M]", "The remainder of M ... should be 0, or larger than or equal to the
 * pipeline-parallel size ... Otherwise, it introduces dependency bubbles");
 * replayed, those orders deadlock (tests/test_schedule.c).  Llama 3 runs
 * fewer micro-batches than stages ("we modify our pipeline schedule ...
 * which allows setting N flexibly ... fewer micro-batches than the number
 * of stages", Llama Team 2024, arXiv 2407.21783 Sec. 3.3.2): one group of
 * all m < p, which replays without deadlock. */
int schedule_check_group(long p, long m, long v, long g, const char *origin,
                         struct weft_err *err)
{
  if (g <= 0) {
    if (m % p == 0)
      return 0;
    return weft_errf(err, WEFT_EINVAL, "%s: the interleaved schedule needs "
                     "the micro-batches per pipeline (%ld) to be a multiple "
                     "of PP %ld, or a group size: interleaved:%ld:%ld runs "
                     "them as one group", origin, m, p, v, m);
  }
  if (g > m)
    return weft_errf(err, WEFT_EINVAL, "%s: a group of %ld micro-batches "
                     "exceeds the %ld per pipeline", origin, g, m);
  if (g < p && g != m)
    return weft_errf(err, WEFT_EINVAL, "%s: a group of %ld micro-batches is "
                     "smaller than PP %ld (Megatron-Core's "
                     "microbatch_group_size_per_vp_stage ranges in [PP, M]); "
                     "fewer than PP run only as one group of all %ld: "
                     "interleaved:%ld:%ld", origin, g, p, m, v, m);
  if (m % g != 0 && m % g < p)
    return weft_errf(err, WEFT_EINVAL, "%s: %ld micro-batches in groups of "
                     "%ld leave a last group of %ld, fewer than PP %ld, as "
                     "Megatron-Core refuses; interleaved:%ld:%ld runs them "
                     "as one group", origin, m, g, m % g, p, v, m);
  return 0;
}
