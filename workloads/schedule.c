/*
 * schedule.c - GPipe, 1F1B and interleaved 1F1B orders.
 */
#include "workloads/schedule.h"

#include "sim/base/xalloc.h"

/* The k-th forward (or backward) virtual micro-batch of the interleaved
 * schedule: micro-batches go in groups of p through chunk 0, then chunk 1...;
 * backwards visit the chunks in reverse. */
static struct sched_op virt(long k, long p, long v, bool fwd)
{
  long in_group = k % (p * v);
  long chunk = in_group / p;
  if (!fwd)
    chunk = v - 1 - chunk;
  struct sched_op op = {(int32_t)((k / (p * v)) * p + k % p), (int16_t)chunk,
                        fwd};
  return op;
}

struct sched_op *schedule_build(enum sched_kind kind, long p, long m, long v,
                                long stage, long *out_n)
{
  if (kind != SCHED_INTERLEAVED)
    v = 1;
  long total = m * v, n = 0;
  struct sched_op *ops = xcalloc((size_t)(2 * total), sizeof *ops);
  if (kind == SCHED_GPIPE) {
    for (long i = 0; i < m; i++)
      ops[n++] = (struct sched_op){(int32_t)i, 0, true};
    for (long i = 0; i < m; i++)
      ops[n++] = (struct sched_op){(int32_t)i, 0, false};
  } else {
    long warm;
    if (kind == SCHED_1F1B) {
      warm = p - stage - 1;
    } else {
      warm = (p - stage - 1) * 2 + (v - 1) * p;
      if (m == p)
        warm = total;
    }
    if (warm > total)
      warm = total;
    long f = 0, b = 0;
    for (; f < warm; f++)
      ops[n++] = virt(f, p, v, true);
    while (f < total) {
      ops[n++] = virt(f++, p, v, true);
      ops[n++] = virt(b++, p, v, false);
    }
    while (b < total)
      ops[n++] = virt(b++, p, v, false);
  }
  *out_n = n;
  return ops;
}
