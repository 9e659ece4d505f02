/*
 * failrates.c - the failure-rate tables (failrates.h): counts by cause
 * over an observed run, turned into rates per part-hour.
 *
 * The llama3 table transcribes Table 5 of "The Llama 3 Herd of Models"
 * (arXiv 2407.21783, Sec. 3.3.4, "Reliability and operational
 * challenges"): during a 54-day snapshot of Llama 3 405B pre-training on
 * 16,384 H100 GPUs, 466 job interruptions, 47 planned and 419 unexpected,
 * by root cause below (the table's percentages are of the 419, except the
 * first row's 30.1 %, which is printed so in the paper: 148 / 419 is
 * 35.3 %).  Each cause is charged to the part it names; the rates are
 * the counts over 54 x 24 hours and the observed cluster's parts:
 *   GPUs 16,384; NICs 16,384 (Grand Teton: 8 GPUs and 8 400 Gb/s RoCE NICs
 *   per server, Sec. 3.3.1); hosts 2,048; software per GPU, 16,384.
 *   Network switches and cables: Llama 3 405B ran on a three-layer Clos
 *   RoCE fabric (Sec. 3.3.1) whose switch and cable counts the paper does
 *   not give; weft charges the 35 "network switch/cable" interruptions to
 *   the switches plus cables of its own model of that job's fabric,
 *   `weft platform dgx-h100 --gpus 16384 --parts` (a non-blocking fat tree
 *   of 16,384 NICs: 1,280 switches and 49,152 cables, 50,432 parts;
 *   tests/test_goodput.c checks the number against platforms/topo.c).  A
 *   job on that cluster so expects exactly the paper's 35.
 */
#include "platforms/failrates.h"

#include <stddef.h>
#include <string.h>

static const char *const part_names[FP_COUNT] = {
    [FP_GPU] = "gpu", [FP_NIC] = "nic", [FP_NET] = "net",
    [FP_HOST] = "host", [FP_SOFTWARE] = "software"};

const char *fail_part_name(enum fail_part p)
{
  return p < FP_COUNT ? part_names[p] : "?";
}

/* Table 5 of arXiv 2407.21783, in its order. */
static const struct fail_cause llama3_causes[] = {
    {"faulty GPU", FP_GPU, 148},
    {"GPU HBM3 memory", FP_GPU, 72},
    {"software bug", FP_SOFTWARE, 54},
    {"network switch/cable", FP_NET, 35},
    {"host maintenance", FP_HOST, 32},
    {"GPU SRAM memory", FP_GPU, 19},
    {"GPU system processor", FP_GPU, 17},
    {"NIC", FP_NIC, 7},
    {"NCCL watchdog timeouts", FP_SOFTWARE, 7},
    {"silent data corruption", FP_GPU, 6},
    {"GPU thermal interface + sensor", FP_GPU, 6},
    {"SSD", FP_HOST, 3},
    {"power supply", FP_HOST, 3},
    {"server chassis", FP_HOST, 2},
    {"IO expansion board", FP_HOST, 2},
    {"dependency", FP_SOFTWARE, 2},
    {"CPU", FP_HOST, 2},
    {"system memory", FP_HOST, 2},
};

static const struct fail_table tables[] = {
    {"llama3",
     "Llama 3 405B pre-training, 54 days on 16,384 H100 (arXiv 2407.21783, "
     "Table 5): 419 unexpected interruptions",
     54.0 * 24.0,
     {[FP_GPU] = 16384, [FP_NIC] = 16384, [FP_NET] = 50432,
      [FP_HOST] = 2048, [FP_SOFTWARE] = 16384},
     llama3_causes, (int)(sizeof llama3_causes / sizeof *llama3_causes)},
};

const struct fail_table *fail_tables(int *n)
{
  *n = (int)(sizeof tables / sizeof *tables);
  return tables;
}

const struct fail_table *fail_table_named(const char *name)
{
  for (size_t i = 0; i < sizeof tables / sizeof *tables; i++)
    if (strcmp(tables[i].name, name) == 0)
      return &tables[i];
  return NULL;
}

void fail_rates(const struct fail_table *t, double out_per_h[FP_COUNT])
{
  double counts[FP_COUNT] = {0};
  for (int i = 0; i < t->ncauses; i++)
    counts[t->causes[i].part] += t->causes[i].count;
  for (int p = 0; p < FP_COUNT; p++)
    out_per_h[p] = t->units[p] > 0 ? counts[p] / (t->hours * t->units[p])
                                   : 0;
}

int fail_table_total(const struct fail_table *t)
{
  int n = 0;
  for (int i = 0; i < t->ncauses; i++)
    n += t->causes[i].count;
  return n;
}
