/*
 * attn_rows.c - weft's fused-attention model against measured kernel rows.
 *
 * Reads the rows digested by analysis/fit_attention.py --rows
 * (tests/validation/attn_rows.csv: gpu, kernel, direction, sequence, head
 * dim, causal, measured TF/s at the benchmark count, role, source) and
 * prints, per row, the TF/s that weft's cost model (cost_attn_rate, with
 * the constants of the built-in catalog) gives and its error; then per GPU
 * and kernel the mean and worst |error| of the fitted and of the held-back
 * rows.  Forward+backward rows combine the two directions as the benchmark
 * counts them: 3.5 / (1/fwd + 2.5/bwd).
 *
 * Usage: attn_rows ROWS.csv [MAX_MEAN_PCT]  - with MAX_MEAN_PCT, exits 1
 * when some group's held-back mean |error| exceeds it.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "workloads/costmodel.h"

#define MAX_GROUPS 16

struct group {
  char gpu[32], kernel[16];
  double sum[2], worst[2];
  int n[2]; /* [0] fitted, [1] held back */
};

int main(int argc, char **argv)
{
  if (argc < 2) {
    fprintf(stderr, "usage: attn_rows ROWS.csv [MAX_MEAN_PCT]\n");
    return 2;
  }
  double max_mean = argc > 2 ? atof(argv[2]) : -1;
  FILE *f = fopen(argv[1], "r");
  if (!f) {
    perror(argv[1]);
    return 2;
  }
  struct catalog *cat = catalog_builtin(NULL);
  struct group g[MAX_GROUPS];
  int ng = 0;
  char line[512];
  printf("%-9s %-6s %-6s %6s %4s %6s %8s %8s %7s %-4s %s\n", "gpu", "kernel",
         "dir", "seq", "d", "causal", "measured", "weft", "error", "role",
         "source");
  while (fgets(line, sizeof line, f)) {
    if (line[0] == '#' || strncmp(line, "gpu,", 4) == 0)
      continue;
    char gpu[32], kern[16], dir[8], role[8], src[128] = "";
    int s, d, causal;
    double meas;
    if (sscanf(line, "%31[^,],%15[^,],%7[^,],%d,%d,%d,%lf,%7[^,],%127[^\n]",
               gpu, kern, dir, &s, &d, &causal, &meas, role, src) < 8) {
      fprintf(stderr, "%s: bad row: %s", argv[1], line);
      return 2;
    }
    const struct gpu_spec *gs = catalog_gpu(cat, gpu);
    int k = attn_kernel_from_name(kern);
    if (!gs || k < 0 || !gs->attn[k].have) {
      fprintf(stderr, "%s: no %s kernel for GPU %s in the catalog\n", argv[1],
              kern, gpu);
      return 2;
    }
    double rf = cost_attn_rate(gs, k, false, s, d, causal);
    double rb = cost_attn_rate(gs, k, true, s, d, causal);
    double r = strcmp(dir, "fwd") == 0   ? rf
               : strcmp(dir, "bwd") == 0 ? rb
                                         : 3.5 / (1 / rf + 2.5 / rb);
    double err = r / 1e12 / meas - 1;
    printf("%-9s %-6s %-6s %6d %4d %6s %8.1f %8.1f %+6.1f%% %-4s %s\n", gpu,
           kern, dir, s, d, causal ? "yes" : "no", meas, r / 1e12, 100 * err,
           role, src);
    int i;
    for (i = 0; i < ng; i++)
      if (!strcmp(g[i].gpu, gpu) && !strcmp(g[i].kernel, kern))
        break;
    if (i == ng) {
      if (ng == MAX_GROUPS)
        return 2;
      memset(&g[ng], 0, sizeof g[ng]);
      snprintf(g[ng].gpu, sizeof g[ng].gpu, "%s", gpu);
      snprintf(g[ng].kernel, sizeof g[ng].kernel, "%s", kern);
      ng++;
    }
    int h = strcmp(role, "fit") != 0;
    g[i].sum[h] += fabs(err);
    g[i].worst[h] = fmax(g[i].worst[h], fabs(err));
    g[i].n[h]++;
  }
  fclose(f);
  catalog_free(cat);
  int bad = 0;
  for (int i = 0; i < ng; i++)
    for (int h = 0; h < 2; h++) {
      if (!g[i].n[h])
        continue;
      double mean = 100 * g[i].sum[h] / g[i].n[h];
      printf("%s %s %s rows: %d, mean |error| %.1f %%, worst %.1f %%\n",
             g[i].gpu, g[i].kernel, h ? "held-back" : "fitted", g[i].n[h],
             mean, 100 * g[i].worst[h]);
      if (h && max_mean >= 0 && mean > max_mean) {
        printf("FAIL: %s %s held-back mean |error| %.1f %% > %g %%\n",
               g[i].gpu, g[i].kernel, mean, max_mean);
        bad = 1;
      }
    }
  return bad;
}
