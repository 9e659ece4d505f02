/*
 * test_report.c - derived metrics and their JSON form: JSON never holds inf
 * or NaN (a metric that cannot be computed is null).
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sim/base/jsonflat.h"
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

/* The sweep's columns are the JSON's scalars, both ways: every key of the
 * object is a column (but sim_wall_s and the leading repeats of inputs.*),
 * and every column is a key of it (fit_hint ones when there is a hint). */
struct keys {
  char k[256][128];
  int n;
};

static void add_key(void *ctx, const char *key, const char *value)
{
  (void)value;
  struct keys *ks = ctx;
  cr_assert_lt(ks->n, 256);
  snprintf(ks->k[ks->n++], 128, "%s", key);
}

static void check_columns(struct report *r, const char *const *optional)
{
  char *j = json_of(r);
  struct keys *ks = calloc(1, sizeof *ks);
  struct weft_err err = {0};
  cr_assert_eq(jsonflat(j, strlen(j), add_key, ks, &err), 0, "%s", err.msg);
  static const char *const left_out[] = {"sim_wall_s", "model", "gpus", "tp",
                                         "pp", "dp", "cp", "ep", "zero",
                                         "shard_impl", NULL};
  for (int i = 0; i < ks->n; i++) {
    bool found = false;
    for (int c = 0; report_columns[c] && !found; c++)
      found = strcmp(report_columns[c], ks->k[i]) == 0;
    for (int c = 0; left_out[c] && !found; c++)
      found = strcmp(left_out[c], ks->k[i]) == 0;
    cr_assert(found, "JSON key %s is not a sweep column", ks->k[i]);
  }
  for (int c = 0; report_columns[c]; c++) {
    bool found = false;
    for (int i = 0; i < ks->n && !found; i++)
      found = strcmp(report_columns[c], ks->k[i]) == 0;
    for (int o = 0; optional && optional[o] && !found; o++)
      found = strcmp(optional[o], report_columns[c]) == 0;
    /* Printed only when asked: --train-days, a sweep's iterations, a
     * sweep's held-back rank (stragglers and the breakdown). */
    static const char *const asked[] = {"goodput.", "iterations.",
                                        "held_by_rank", NULL};
    for (int o = 0; asked[o] && !found; o++)
      found = strncmp(asked[o], report_columns[c], strlen(asked[o])) == 0;
    cr_assert(found, "column %s is not in the JSON", report_columns[c]);
  }
  free(ks);
  free(j);
}

Test(report, sweep_columns_are_the_json_fields)
{
  struct workload w;
  struct cluster c;
  struct report r = sample(&w, &c);
  check_columns(&r, (const char *const[]){"memory.fit_hint",
                                           "memory.fit_hint_bytes", NULL});
  snprintf(r.fit_hint, sizeof r.fit_hint, "--recompute full");
  r.fit_hint_bytes = 1e9;
  w.plan.zero = 3;
  check_columns(&r, NULL);
  /* With goodput and iterations every column of theirs is printed. */
  struct goodput gp = {0};
  struct iter_stats it = {3, 1, 1, 2, 2, 3, 3, 3, 1};
  r.goodput = &gp;
  r.fail_rates = "llama3";
  r.iters = &it;
  char *j = json_of(&r);
  for (int k = 0; report_columns[k]; k++)
    if (strncmp(report_columns[k], "goodput.", 8) == 0 ||
        strncmp(report_columns[k], "iterations.", 11) == 0) {
      char key[160];
      const char *dot = strchr(report_columns[k], '.');
      snprintf(key, sizeof key, "\"%s\": ", dot + 1);
      cr_assert(strstr(j, key), "%s not in %s", report_columns[k], j);
    }
  cr_assert(strstr(j, "\"iterations\": {\"count\": 3, \"first_seed\": 1, "
                      "\"min_s\": 1, \"median_s\": 2, \"mean_s\": 2, "
                      "\"p90_s\": 3, \"p99_s\": 3, \"max_s\": 3, "
                      "\"even_s\": 1, \"throughput_lost\": 0.5}"), "%s", j);
  free(j);
}

/* The field table has a row for every plan setting, in the plan's order
 * (inputs.plan.*): a setting added to plan.h needs its row. */
Test(report, field_table_has_every_plan_setting)
{
  int k = 0;
  for (int i = 0; i < RF_COUNT; i++) {
    if (report_fields[i].type != RT_SETTING)
      continue;
    char want[128];
    snprintf(want, sizeof want, "inputs.plan.%s",
             plan_key_name((enum plan_key)k));
    cr_assert_str_eq(report_fields[i].name, want);
    k++;
  }
  cr_assert_eq(k, PK_COUNT);
}

/* The README's table of the JSON's fields (section "weft run --json")
 * names exactly the field table's rows: the names in backquotes in each
 * row's first cell; those under breakdown. are the --breakdown hook's. */
Test(report, readme_table_is_the_field_table)
{
  FILE *f = fopen(WEFT_SOURCE_ROOT "/README.md", "r");
  cr_assert(f);
  static char doc[1 << 20];
  size_t len = fread(doc, 1, sizeof doc - 1, f);
  fclose(f);
  doc[len] = '\0';
  char *sec = strstr(doc, "### `weft run --json`");
  cr_assert(sec);
  char *end = strstr(sec, "\n## ");
  if (end)
    *end = '\0';
  bool seen[RF_COUNT] = {false};
  int documented = 0;
  for (char *line = sec; line; line = strchr(line, '\n')) {
    line += *line == '\n';
    if (strncmp(line, "| `", 3) != 0)
      continue;
    char *cell_end = strstr(line, " | ");
    cr_assert(cell_end);
    for (char *q = strchr(line, '`'); q && q < cell_end;
         q = strchr(q + 1, '`')) {
      char *close = strchr(q + 1, '`');
      cr_assert(close && close < cell_end);
      char name[128];
      snprintf(name, sizeof name, "%.*s", (int)(close - q - 1), q + 1);
      if (strncmp(name, "breakdown.", 10) == 0)
        name[9] = '\0';
      int i = 0;
      while (i < RF_COUNT && strcmp(report_fields[i].name, name) != 0)
        i++;
      cr_assert(i < RF_COUNT, "README documents %s, which is not a field",
                name);
      documented += !seen[i];
      seen[i] = true;
      q = close;
    }
  }
  for (int i = 0; i < RF_COUNT; i++)
    cr_assert(seen[i], "field %s is not in the README's table",
              report_fields[i].name);
  cr_assert_eq(documented, RF_COUNT);
}
