/*
 * bench_graph.c - time and memory to build one iteration's task graph.
 *
 *   bench_graph MODEL GPUS TP PP GLOBAL_BATCH [SCHEDULE [RECOMPUTE]]
 *
 * prints "tasks=N build_s=T peak_rss_mb=M".  Targets (issue 3): GPT-3 175B
 * on 1024 GPUs (TP 8, PP 8, DP 16, batch 1536) under 1 s and 200 MB; Llama 3
 * 405B on 16384 GPUs (TP 8, PP 16, DP 128) under 10 s and 2 GB.
 */
#include <stdio.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <time.h>

#include "workloads/builder.h"

int main(int argc, char **argv)
{
  if (argc < 6) {
    fprintf(stderr, "usage: bench_graph MODEL GPUS TP PP GLOBAL_BATCH "
            "[SCHEDULE [RECOMPUTE]]\n");
    return 2;
  }
  struct weft_err err = {0};
  struct model m;
  struct plan p;
  plan_init(&p);
  if (model_from_preset(&m, argv[1], &err) ||
      plan_set(&p, PK_TP, argv[3], "TP", &err) ||
      plan_set(&p, PK_PP, argv[4], "PP", &err) ||
      plan_set(&p, PK_GLOBAL_BATCH, argv[5], "GLOBAL_BATCH", &err) ||
      (argc > 6 && plan_set(&p, PK_SCHEDULE, argv[6], "SCHEDULE", &err)) ||
      (argc > 7 && plan_set(&p, PK_RECOMPUTE, argv[7], "RECOMPUTE", &err)) ||
      plan_resolve(&p, &m, atol(argv[2]), &err)) {
    fprintf(stderr, "bench_graph: %s\n", err.msg);
    return 1;
  }
  struct timespec a, b;
  clock_gettime(CLOCK_MONOTONIC, &a);
  struct graph *g = build_graph(&m, &p, &err);
  clock_gettime(CLOCK_MONOTONIC, &b);
  if (!g) {
    fprintf(stderr, "bench_graph: %s\n", err.msg);
    return 1;
  }
  struct rusage ru;
  getrusage(RUSAGE_SELF, &ru);
  printf("tasks=%ld build_s=%.3f peak_rss_mb=%.1f\n", graph_total_tasks(g),
         (double)(b.tv_sec - a.tv_sec) + 1e-9 * (double)(b.tv_nsec - a.tv_nsec),
         (double)ru.ru_maxrss / 1024.0);
  graph_free(g);
  return 0;
}
