/*
 * test_stack.c - a software stack (workloads/stack.h) expands to exactly
 * its settings, settings given to the job override it in either order,
 * and an unknown stack is refused naming the stacks.
 */
#include <criterion/criterion.h>
#include <string.h>

#include "workloads/plan.h"
#include "workloads/stack.h"

/* Every plan setting's value as text. */
static void values(const struct plan *p, char v[PK_COUNT][64])
{
  for (int k = 0; k < PK_COUNT; k++)
    plan_value_text(p, (enum plan_key)k, v[k], 64);
}

Test(stack, expands_to_exactly_its_settings)
{
  for (int i = 0; i < stack_count(); i++) {
    const struct stack *st = stack_at(i);
    struct plan a, b;
    struct weft_err err = {0};
    plan_init(&a);
    plan_init(&b);
    cr_assert_eq(plan_set(&a, PK_STACK, st->name, "--stack", &err), 0, "%s",
                 err.msg);
    for (int k = 0; st->set[k].key; k++) {
      int key = plan_key_from_name(st->set[k].key);
      cr_assert(key >= 0, "%s: %s", st->name, st->set[k].key);
      cr_assert_eq(plan_set(&b, (enum plan_key)key, st->set[k].value, "x",
                            &err), 0, "%s", err.msg);
      cr_assert(a.set[key]);
      cr_assert(strstr(a.origin[key], st->name), "%s", a.origin[key]);
    }
    char va[PK_COUNT][64], vb[PK_COUNT][64];
    values(&a, va);
    values(&b, vb);
    for (int k = 0; k < PK_COUNT; k++) {
      if (k == PK_STACK)
        continue;
      cr_assert_str_eq(va[k], vb[k], "%s: %s", st->name,
                       plan_key_name((enum plan_key)k));
      /* nothing else marked as given */
      bool listed = false;
      for (int j = 0; st->set[j].key; j++)
        listed |= plan_key_from_name(st->set[j].key) == k;
      cr_assert_eq(a.set[k], listed, "%s: %s", st->name,
                   plan_key_name((enum plan_key)k));
    }
    cr_assert_str_eq(va[PK_STACK], st->name);
  }
}

Test(stack, given_settings_override_it_in_either_order)
{
  struct plan p;
  struct weft_err err = {0};
  char v[64];
  /* after the stack */
  plan_init(&p);
  cr_assert_eq(plan_set(&p, PK_STACK, "megatron-2021", "--stack", &err), 0);
  cr_assert_eq(plan_set(&p, PK_ATTENTION, "flash", "--attention", &err), 0);
  plan_value_text(&p, PK_ATTENTION, v, sizeof v);
  cr_assert_str_eq(v, "flash");
  plan_value_text(&p, PK_P2P, v, sizeof v);
  cr_assert_str_eq(v, "blocking");
  /* before it */
  plan_init(&p);
  cr_assert_eq(plan_set(&p, PK_ATTENTION, "flash", "--attention", &err), 0);
  cr_assert_eq(plan_set(&p, PK_STACK, "megatron-2021", "--stack", &err), 0);
  plan_value_text(&p, PK_ATTENTION, v, sizeof v);
  cr_assert_str_eq(v, "flash");
  cr_assert_str_eq(p.origin[PK_ATTENTION], "--attention");
}

Test(stack, unknown_is_refused_naming_the_stacks)
{
  struct plan p;
  struct weft_err err = {0};
  plan_init(&p);
  cr_assert_neq(plan_set(&p, PK_STACK, "megatron", "w.xml:3", &err), 0);
  cr_assert(strstr(err.msg, "w.xml:3: no stack 'megatron'"), "%s", err.msg);
  cr_assert(strstr(err.msg, "megatron-core"), "%s", err.msg);
}

/* One stack per job (a second would keep what the first set and it does
 * not); "none" is weft's defaults; a stack's fsdp=yes does not raise the
 * job's own ZeRO stage. */
Test(stack, one_per_job_none_and_the_jobs_zero)
{
  struct plan p;
  struct weft_err err = {0};
  plan_init(&p);
  cr_assert_eq(plan_set(&p, PK_STACK, "megatron-core", "w.xml:2", &err), 0);
  cr_assert_neq(plan_set(&p, PK_STACK, "torchtitan", "--stack", &err), 0);
  cr_assert_str_eq(err.msg, "--stack: the job already runs stack "
                   "megatron-core (w.xml:2); one stack per job");
  plan_init(&p);
  cr_assert_eq(plan_set(&p, PK_STACK, "none", "--stack", &err), 0);
  char v[64];
  plan_value_text(&p, PK_STACK, v, sizeof v);
  cr_assert_str_eq(v, "none");
  cr_assert(!p.set[PK_ATTENTION] && !p.set[PK_FSDP]);
  plan_init(&p);
  cr_assert_eq(plan_set(&p, PK_ZERO, "2", "--zero", &err), 0);
  cr_assert_eq(plan_set(&p, PK_STACK, "torchtitan", "--stack", &err), 0);
  cr_assert_eq(p.zero, 2);
}
