/*
 * failrates.h - failure rates of a cluster's parts, as catalog data with
 * their sources: interruptions of a training job per part and per hour,
 * derived from published counts of interruptions by cause over a known
 * run.  workloads/goodput.h turns them into a job's mean time between
 * interruptions for the parts a cluster has (GPUs, NICs, switches and
 * cables of its fabric, hosts).
 *
 * One table ships: "llama3", from Table 5 of "The Llama 3 Herd of Models"
 * (Grattafiori et al., arXiv 2407.21783, Sec. 3.3.4): the 419 unexpected
 * interruptions of the 54-day pre-training snapshot of Llama 3 405B on
 * 16,384 H100 GPUs (the 47 planned ones are left out).
 */
#ifndef WEFT_FAILRATES_H
#define WEFT_FAILRATES_H

#include <stdbool.h>

/* The part a cause of interruption is charged to, and so what it scales
 * with: a GPU (with its HBM, SRAM, system processor, thermal interface;
 * silent data corruption), a NIC, a switch or cable of the scale-out
 * fabric, a host (CPU, memory, SSD, power supply, chassis, IO board, its
 * maintenance), or software (bugs, NCCL watchdog timeouts, dependencies),
 * which weft charges per GPU: a job of more GPUs runs more processes. */
enum fail_part { FP_GPU, FP_NIC, FP_NET, FP_HOST, FP_SOFTWARE, FP_COUNT };

/* The part's name as printed ("gpu", "nic", "net", "host", "software"). */
const char *fail_part_name(enum fail_part p);

struct fail_cause {
  const char *name;     /* as the source names it */
  enum fail_part part;
  int count;            /* interruptions over the source's run */
};

/* A table: counts of interruptions by cause over `hours` of one job on a
 * cluster of `units[part]` parts of each kind. */
struct fail_table {
  const char *name;            /* as --fail-rates takes it */
  const char *source;          /* citation */
  double hours;                /* the observed run's wall-clock length */
  double units[FP_COUNT];      /* parts of the observed cluster */
  const struct fail_cause *causes;
  int ncauses;
};

/* The table named `name`, or NULL. */
const struct fail_table *fail_table_named(const char *name);

/* The tables, for help and listing: *n receives their number. */
const struct fail_table *fail_tables(int *n);

/* Interruptions per part-hour for each part of table t: the causes' counts
 * summed per part over hours x units (out[p] = 0 where no cause). */
void fail_rates(const struct fail_table *t, double out_per_h[FP_COUNT]);

/* All interruptions of table t (the sum of its counts). */
int fail_table_total(const struct fail_table *t);

#endif
