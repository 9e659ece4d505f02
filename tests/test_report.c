/*
 * test_report.c - derived metrics and their JSON form: JSON never holds inf
 * or NaN (a metric that cannot be computed is null).
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sim/report.h"

static char *json_of(const struct report *r)
{
  char *buf = NULL;
  size_t len = 0;
  FILE *f = open_memstream(&buf, &len);
  cr_assert(f);
  report_print_json(f, r);
  fclose(f);
  return buf;
}

static struct report sample(struct workload *w, struct cluster *c)
{
  workload_init(w);
  snprintf(w->model.name, sizeof w->model.name, "m");
  w->plan.gpus = 8;
  memset(c, 0, sizeof *c);
  struct report r = {.w = w, .c = c};
  r.iteration_s = 2;
  r.hw_flops_per_gpu = r.model_flops_per_gpu = 1e14;
  r.peak_flops = 3e14;
  r.tokens = r.tokens_per_s = 1000;
  r.energy_j = 5;
  return r;
}

Test(report, json_numbers)
{
  struct workload w;
  struct cluster c;
  struct report r = sample(&w, &c);
  char *j = json_of(&r);
  cr_assert(strstr(j, "\"mfu\": 0.333333"), "%s", j);
  cr_assert(strstr(j, "\"iteration_time_s\": 2,"), "%s", j);
  free(j);
}

Test(report, json_has_no_inf_or_nan)
{
  struct workload w;
  struct cluster c;
  struct report r = sample(&w, &c);
  r.peak_flops = 0;      /* a precision the GPU lacks: mfu = x / 0 */
  r.tokens = 0;          /* energy per token = 5 / 0 */
  r.tokens_per_s = 0.0 / 0.0;
  char *j = json_of(&r);
  cr_assert(strstr(j, "\"mfu\": null"), "%s", j);
  cr_assert(strstr(j, "\"gpu_energy_per_token_j\": null"), "%s", j);
  cr_assert(strstr(j, "\"tokens_per_s\": null"), "%s", j);
  cr_assert_null(strstr(j, "inf"), "%s", j);
  cr_assert_null(strstr(j, "nan"), "%s", j);
  free(j);
}
