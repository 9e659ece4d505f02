/*
 * test_plan.c - derived degrees, rank numbering and layer placement.
 */
#include <criterion/criterion.h>

#include "workloads/plan.h"

static struct plan resolved(const char *model, long gpus, long tp, long pp,
                            long gb)
{
  struct model m;
  cr_assert_eq(model_from_preset(&m, model, NULL), 0);
  struct plan p;
  plan_init(&p);
  p.tp = tp;
  p.pp = pp;
  p.global_batch = gb;
  struct weft_err err = {0};
  cr_assert_eq(plan_resolve(&p, &m, gpus, &err), 0, "%s", err.msg);
  return p;
}

Test(plan, derives_dp_and_microbatches)
{
  struct plan p = resolved("gpt3-175b", 1024, 8, 8, 1536);
  cr_assert_eq(p.dp, 16);
  cr_assert_eq(p.microbatches, 96);
  p = resolved("gpt-1008b", 3072, 8, 64, 3072);
  cr_assert_eq(p.dp, 6);
  cr_assert_eq(p.microbatches, 512);
}

static void plan_coords(const struct plan *p, long rank, long c[PD_COUNT])
{
  struct graph_layout l;
  plan_layout(p, &l);
  layout_coords(&l, rank, c);
}

static long plan_rank(const struct plan *p, const long c[PD_COUNT])
{
  struct graph_layout l;
  plan_layout(p, &l);
  return layout_rank(&l, c);
}

Test(plan, tp_innermost_by_default)
{
  struct plan p = resolved("gpt3-175b", 1024, 8, 8, 1536);
  long c[PD_COUNT];
  plan_coords(&p, 0, c);
  cr_assert(c[PD_TP] == 0 && c[PD_DP] == 0 && c[PD_PP] == 0);
  plan_coords(&p, 7, c);
  cr_assert_eq(c[PD_TP], 7);
  plan_coords(&p, 8, c);
  cr_assert(c[PD_TP] == 0 && c[PD_DP] == 1);
  plan_coords(&p, 128, c);
  cr_assert(c[PD_DP] == 0 && c[PD_PP] == 1);
  for (long r = 0; r < 1024; r += 37) {
    plan_coords(&p, r, c);
    cr_assert_eq(plan_rank(&p, c), r);
  }
  struct weft_err err = {0};
  cr_assert_eq(plan_set(&p, PK_ORDER, "dp-tp-cp-pp", "--order", &err), 0);
  plan_coords(&p, 1, c);
  cr_assert(c[PD_DP] == 1 && c[PD_TP] == 0);
  plan_coords(&p, 16, c);
  cr_assert(c[PD_DP] == 0 && c[PD_TP] == 1);
}

Test(plan, even_and_llama3_layer_split)
{
  struct model m;
  cr_assert_eq(model_from_preset(&m, "gpt3-175b", NULL), 0);
  struct plan p = resolved("gpt3-175b", 1024, 8, 8, 1536);
  long f, n;
  plan_chunk_layers(&p, &m, 3, 0, &f, &n);
  cr_assert(f == 36 && n == 12);
  /* Llama 3 405B: 126 layers on 16 stages, first and last get 7. */
  cr_assert_eq(model_from_preset(&m, "llama3-405b", NULL), 0);
  p = resolved("llama3-405b", 16384, 8, 16, 2048);
  long total = 0;
  for (long s = 0; s < 16; s++) {
    plan_chunk_layers(&p, &m, s, 0, &f, &n);
    cr_assert_eq(f, total);
    cr_assert_eq(n, s == 0 || s == 15 ? 7 : 8, "stage %ld has %ld", s, n);
    total += n;
  }
  cr_assert_eq(total, 126);
}

Test(plan, interleaved_chunks_are_virtual_stages)
{
  struct model m;
  cr_assert_eq(model_from_preset(&m, "gpt-39.1b", NULL), 0);
  struct plan p;
  plan_init(&p);
  p.tp = 8;
  p.pp = 2;
  p.global_batch = 1536;
  struct weft_err err = {0};
  cr_assert_eq(plan_set(&p, PK_SCHEDULE, "interleaved:3", "x", &err), 0);
  cr_assert_eq(plan_resolve(&p, &m, 512, &err), 0, "%s", err.msg);
  long f, n;
  plan_chunk_layers(&p, &m, 1, 2, &f, &n); /* virtual stage 5 of 6 */
  cr_assert(f == 40 && n == 8);
  plan_chunk_layers(&p, &m, 0, 1, &f, &n); /* virtual stage 2 */
  cr_assert(f == 16 && n == 8);
}

/* Every setting has a value form for the generated help. */
Test(plan, every_key_has_a_hint)
{
  for (int k = 0; k < PK_COUNT; k++) {
    cr_assert(plan_key_hint((enum plan_key)k), "key %d", k);
    cr_assert(plan_key_name((enum plan_key)k));
  }
  cr_assert_str_eq(plan_key_hint(PK_RECOMPUTE), "none|selective|full");
}

/* --host-op: a time, or a bare 0 (the default: no host clock). */
Test(plan, host_op_takes_a_time_or_zero)
{
  struct plan p;
  plan_init(&p);
  struct weft_err err = {0};
  cr_assert_eq(plan_set(&p, PK_HOST_OP, "3.3us", "h", &err), 0, "%s",
               err.msg);
  cr_assert_float_eq(p.host_op_s, 3.3e-6, 1e-15);
  cr_assert_eq(plan_set(&p, PK_HOST_OP, "0", "h", &err), 0, "%s", err.msg);
  cr_assert_eq(p.host_op_s, 0);
  cr_assert_neq(plan_set(&p, PK_HOST_OP, "3", "h", &err), 0);
  cr_assert_neq(plan_set(&p, PK_HOST_OP, "2s", "h", &err), 0);
}
