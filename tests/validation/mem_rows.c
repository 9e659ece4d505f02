/*
 * mem_rows.c - weft's memory-bound kernel families against measured rows.
 *
 * Reads the rows digested by analysis/fit_membound.py --rows
 * (tests/validation/mem_rows.csv: gpu, name, set, role, measured time in
 * us, the weft kernels that stand for the measurement as
 * family:phase:bytes joined by '+', source) and prints, per row, the time
 * weft's cost model gives (cost_kernel with the built-in catalog's
 * constants, one launch per kernel) and its error; then per GPU, family
 * (of the row's first kernel, the one measured), set and role the mean and worst |error|.
 * Families: norm, loss, optim, elem (element-wise); phases fwd, bwd, opt.
 * Roles: fit, held (held back: gated), short (held back, but the
 * benchmark's host dispatch is in its time: printed), other (a kernel
 * implementation weft does not model: printed).
 *
 * Usage: mem_rows ROWS.csv [MAX_MEAN_PCT [SET:FAMILY=PCT ...]] - with
 * MAX_MEAN_PCT, exits 1 when the held-back rows of some group have a mean
 * |error| above it (or above the PCT given for that set and family).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "workloads/costmodel.h"

#define MAX_GROUPS 32

struct group {
  char gpu[32], fam[8], set[16], role[8];
  double sum, worst;
  int n;
};

/* The cost of one "family:phase:bytes" kernel; -1 on a bad spec. */
static double kernel_time(const struct gpu_spec *g, const char *spec,
                          char fam[8])
{
  char ph[8];
  double bytes;
  if (sscanf(spec, "%7[a-z]:%7[a-z]:%lf", fam, ph, &bytes) != 3 || bytes < 0)
    return -1;
  struct task t = {.kind = TK_KERNEL, .bytes = bytes};
  if (!strcmp(fam, "norm"))
    t.op = KK_NORM;
  else if (!strcmp(fam, "loss"))
    t.op = KK_LOSS;
  else if (!strcmp(fam, "optim"))
    t.op = KK_OPTIM;
  else if (!strcmp(fam, "elem"))
    t.op = KK_ELEMWISE;
  else
    return -1;
  if (!strcmp(ph, "fwd"))
    t.phase = PH_FWD;
  else if (!strcmp(ph, "bwd"))
    t.phase = PH_BWD;
  else if (!strcmp(ph, "opt"))
    t.phase = PH_OPT;
  else
    return -1;
  return cost_kernel(g, DTYPE_BF16, -1, &t, NULL);
}

/* The limit for a group: "SET:FAMILY=PCT" among the arguments, or the
 * default. */
static double limit_for(const struct group *g, int argc, char **argv,
                        double dflt)
{
  char key[40];
  snprintf(key, sizeof key, "%s:%s=", g->set, g->fam);
  for (int i = 3; i < argc; i++)
    if (!strncmp(argv[i], key, strlen(key)))
      return atof(argv[i] + strlen(key));
  return dflt;
}

int main(int argc, char **argv)
{
  if (argc < 2) {
    fprintf(stderr, "usage: mem_rows ROWS.csv [MAX_MEAN_PCT [SET:FAMILY=PCT"
                    " ...]]\n");
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
  int ng = 0, lineno = 0, rc = 0;
  char line[1024];
  printf("%-10s %-60s %-9s %-5s %9s %9s %7s\n", "gpu", "row", "set", "role",
         "measured", "weft", "error");
  while (fgets(line, sizeof line, f)) {
    lineno++;
    if (line[0] == '#' || strncmp(line, "gpu,", 4) == 0)
      continue;
    char gpu[32], name[128], set[16], role[8], kernels[256];
    double us;
    if (sscanf(line, "%31[^,],%127[^,],%15[^,],%7[^,],%lf,%255[^,]", gpu,
               name, set, role, &us, kernels) != 6 || us <= 0) {
      fprintf(stderr, "%s:%d: bad row: %s", argv[1], lineno, line);
      rc = 2;
      break;
    }
    const struct gpu_spec *gs = catalog_gpu(cat, gpu);
    if (!gs) {
      fprintf(stderr, "%s:%d: no GPU %s in the catalog\n", argv[1], lineno,
              gpu);
      rc = 2;
      break;
    }
    double t = 0;
    char fam[8] = "", kfam[8];
    for (char *save = NULL, *k = strtok_r(kernels, "+", &save); k;
         k = strtok_r(NULL, "+", &save)) {
      double tk = kernel_time(gs, k, kfam);
      if (!fam[0])
        snprintf(fam, sizeof fam, "%s", kfam);
      if (tk < 0) {
        fprintf(stderr, "%s:%d: bad kernel '%s'\n", argv[1], lineno, k);
        rc = 2;
        break;
      }
      t += tk;
    }
    if (rc)
      break;
    double err = t * 1e6 / us - 1;
    printf("%-10s %-60.60s %-9s %-5s %9.1f %9.1f %+6.1f%%\n", gpu, name, set,
           role, us, t * 1e6, 100 * err);
    int i;
    for (i = 0; i < ng; i++)
      if (!strcmp(g[i].gpu, gpu) && !strcmp(g[i].fam, fam) &&
          !strcmp(g[i].set, set) && !strcmp(g[i].role, role))
        break;
    if (i == ng) {
      if (ng == MAX_GROUPS) {
        fprintf(stderr, "%s: more than %d groups\n", argv[1], MAX_GROUPS);
        rc = 2;
        break;
      }
      memset(&g[ng], 0, sizeof g[ng]);
      snprintf(g[i].gpu, sizeof g[i].gpu, "%s", gpu);
      snprintf(g[i].fam, sizeof g[i].fam, "%s", fam);
      snprintf(g[i].set, sizeof g[i].set, "%s", set);
      snprintf(g[i].role, sizeof g[i].role, "%s", role);
      ng++;
    }
    g[i].sum += fabs(err);
    g[i].worst = fmax(g[i].worst, fabs(err));
    g[i].n++;
  }
  fclose(f);
  catalog_free(cat);
  if (rc)
    return rc;
  for (int i = 0; i < ng; i++) {
    double mean = 100 * g[i].sum / g[i].n;
    printf("%s %s %s %s rows: %d, mean |error| %.1f %%, worst %.1f %%\n",
           g[i].gpu, g[i].fam, g[i].set, g[i].role, g[i].n, mean,
           100 * g[i].worst);
    double lim = limit_for(&g[i], argc, argv, max_mean);
    if (!strcmp(g[i].role, "held") && max_mean >= 0 && mean > lim) {
      printf("FAIL: %s %s %s held-back mean |error| %.1f %% > %g %%\n",
             g[i].gpu, g[i].fam, g[i].set, mean, lim);
      rc = 1;
    }
  }
  return rc;
}
