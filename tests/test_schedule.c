/*
 * test_schedule.c - pipeline schedules: the exact order of forward and
 * backward passes per stage for small p, m, v, and a unit-time replay of
 * every stage's order that must reproduce the bubble fractions (p-1)/m
 * (GPipe, 1F1B) and (p-1)/(v m) (interleaved) without deadlock.  The
 * flexible interleaved orders (a group size other than PP, micro-batches
 * not a multiple of PP) against Megatron-Core's, transcribed in
 * tests/oracle/megatron_interleaved.py.
 */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "sim/engine.h"
#include "sim/platload.h"
#include "workloads/accounting.h"
#include "workloads/closedform.h"
#include "workloads/builder.h"
#include "workloads/schedule.h"

static void order_group(enum sched_kind k, long p, long m, long v, long g,
                        long stage, char *buf, size_t size)
{
  long n;
  struct sched_op *ops = schedule_build_group(k, p, m, v, g, stage, &n);
  buf[0] = '\0';
  for (long i = 0; i < n; i++) {
    size_t len = strlen(buf);
    if (k == SCHED_INTERLEAVED)
      snprintf(buf + len, size - len, "%s%c%d.%d", i ? " " : "",
               ops[i].fwd ? 'F' : 'B', ops[i].mb, ops[i].chunk);
    else
      snprintf(buf + len, size - len, "%s%c%d", i ? " " : "",
               ops[i].fwd ? 'F' : 'B', ops[i].mb);
  }
  free(ops);
}

static void order(enum sched_kind k, long p, long m, long v, long stage,
                  char *buf, size_t size)
{
  order_group(k, p, m, v, 0, stage, buf, size);
}

Test(schedule, gpipe)
{
  char b[512];
  order(SCHED_GPIPE, 4, 4, 1, 0, b, sizeof b);
  cr_assert_str_eq(b, "F0 F1 F2 F3 B0 B1 B2 B3");
  order(SCHED_GPIPE, 4, 4, 1, 3, b, sizeof b);
  cr_assert_str_eq(b, "F0 F1 F2 F3 B0 B1 B2 B3");
}

Test(schedule, one_f_one_b)
{
  char b[512];
  order(SCHED_1F1B, 4, 8, 1, 0, b, sizeof b);
  cr_assert_str_eq(b, "F0 F1 F2 F3 B0 F4 B1 F5 B2 F6 B3 F7 B4 B5 B6 B7");
  order(SCHED_1F1B, 4, 8, 1, 2, b, sizeof b);
  cr_assert_str_eq(b, "F0 F1 B0 F2 B1 F3 B2 F4 B3 F5 B4 F6 B5 F7 B6 B7");
  order(SCHED_1F1B, 4, 8, 1, 3, b, sizeof b);
  cr_assert_str_eq(b, "F0 B0 F1 B1 F2 B2 F3 B3 F4 B4 F5 B5 F6 B6 F7 B7");
  /* Fewer micro-batches than stages: warm-up is capped. */
  order(SCHED_1F1B, 4, 2, 1, 0, b, sizeof b);
  cr_assert_str_eq(b, "F0 F1 B0 B1");
}

Test(schedule, interleaved)
{
  char b[1024];
  /* p = 2, m = 4, v = 2: warm-up (p-s-1)*2 + (v-1)*p = 4 on stage 0. */
  order(SCHED_INTERLEAVED, 2, 4, 2, 0, b, sizeof b);
  cr_assert_str_eq(b, "F0.0 F1.0 F0.1 F1.1 F2.0 B0.1 F3.0 B1.1 F2.1 B0.0 "
                      "F3.1 B1.0 B2.1 B3.1 B2.0 B3.0");
  order(SCHED_INTERLEAVED, 2, 4, 2, 1, b, sizeof b);
  cr_assert_str_eq(b, "F0.0 F1.0 F0.1 B0.1 F1.1 B1.1 F2.0 B0.0 F3.0 B1.0 "
                      "F2.1 B2.1 F3.1 B3.1 B2.0 B3.0");
  /* m == p: everything is warm-up, as in Megatron-LM. */
  order(SCHED_INTERLEAVED, 2, 2, 2, 1, b, sizeof b);
  cr_assert_str_eq(b, "F0.0 F1.0 F0.1 F1.1 B0.1 B1.1 B0.0 B1.0");
}

/* Replay the stage orders with forward time tf and backward time tb per
 * chunk; a pass waits for its predecessor virtual stage.  Returns the
 * makespan, or -1 on deadlock. */
static double replay_group(enum sched_kind k, long p, long m, long v, long g,
                           double tf, double tb)
{
  long nv = p * v;
  struct sched_op **ops = calloc((size_t)p, sizeof *ops);
  long *n = calloc((size_t)p, sizeof *n), *pos = calloc((size_t)p, sizeof *pos);
  double *clock = calloc((size_t)p, sizeof *clock);
  double *fdone = malloc(sizeof(double) * (size_t)(m * nv));
  double *bdone = malloc(sizeof(double) * (size_t)(m * nv));
  for (long i = 0; i < m * nv; i++)
    fdone[i] = bdone[i] = -1;
  for (long s = 0; s < p; s++)
    ops[s] = schedule_build_group(k, p, m, v, g, s, &n[s]);
  long left = 0;
  double end = 0;
  for (long s = 0; s < p; s++)
    left += n[s];
  while (left > 0) {
    bool progress = false;
    for (long s = 0; s < p; s++) {
      while (pos[s] < n[s]) {
        struct sched_op o = ops[s][pos[s]];
        long vs = (long)o.chunk * p + s;
        double ready;
        if (o.fwd)
          ready = vs == 0 ? 0 : fdone[o.mb * nv + vs - 1];
        else
          ready = vs == nv - 1 ? fdone[o.mb * nv + vs] : bdone[o.mb * nv + vs + 1];
        if (ready < 0)
          break;
        double start = fmax(ready, clock[s]);
        clock[s] = start + (o.fwd ? tf : tb);
        (o.fwd ? fdone : bdone)[o.mb * nv + vs] = clock[s];
        pos[s]++;
        left--;
        progress = true;
      }
    }
    if (!progress) {
      end = -1;
      break;
    }
  }
  for (long s = 0; s < p && end >= 0; s++)
    end = fmax(end, clock[s]);
  for (long s = 0; s < p; s++)
    free(ops[s]);
  free(ops); free(n); free(pos); free(clock); free(fdone); free(bdone);
  return end;
}

static double replay(enum sched_kind k, long p, long m, long v, double tf,
                     double tb)
{
  return replay_group(k, p, m, v, 0, tf, tb);
}

Test(schedule, bubble_fractions)
{
  const long ps[] = {2, 3, 4, 8};
  for (size_t i = 0; i < 4; i++) {
    long p = ps[i];
    for (long m = p; m <= 4 * p; m += p) {
      double ideal = (double)m * 3.0; /* tf 1 + tb 2 per micro-batch */
      for (int k = SCHED_GPIPE; k <= SCHED_1F1B; k++) {
        double t = replay((enum sched_kind)k, p, m, 1, 1.0, 2.0);
        cr_assert_gt(t, 0, "%s p=%ld m=%ld deadlocks", sched_name(k), p, m);
        cr_assert_float_eq((t - ideal) / ideal, (double)(p - 1) / (double)m,
                           1e-12, "%s p=%ld m=%ld", sched_name(k), p, m);
      }
      for (long v = 2; v <= 4; v++) {
        double t = replay(SCHED_INTERLEAVED, p, m, v, 1.0 / v, 2.0 / v);
        cr_assert_gt(t, 0, "interleaved p=%ld m=%ld v=%ld deadlocks", p, m, v);
        cr_assert_float_eq((t - ideal) / ideal,
                           (double)(p - 1) / (double)(v * m), 1e-12,
                           "interleaved p=%ld m=%ld v=%ld", p, m, v);
      }
    }
  }
}

Test(schedule, every_pass_once)
{
  long n;
  struct sched_op *ops = schedule_build(SCHED_INTERLEAVED, 4, 12, 3, 1, &n);
  cr_assert_eq(n, 2 * 12 * 3);
  int seen[12][3][2] = {{{0}}};
  for (long i = 0; i < n; i++) {
    cr_assert(!ops[i].fwd || !seen[ops[i].mb][ops[i].chunk][1],
              "forward after backward");
    seen[ops[i].mb][ops[i].chunk][ops[i].fwd]++;
  }
  for (int a = 0; a < 12; a++)
    for (int c = 0; c < 3; c++)
      cr_assert(seen[a][c][0] == 1 && seen[a][c][1] == 1);
  free(ops);
}

/* The flexible interleaved orders against Megatron-Core's, as
 * tests/oracle/megatron_interleaved.py transcribes them
 * (get_schedule_table, get_pp_rank_microbatches and the warm-up, steady and
 * cool-down loops of forward_backward_pipelining_with_interleaving). */
Test(schedule, flexible_interleaved_small_cases)
{
  char b[1024];
  /* PP 4, V 2, 6 micro-batches in one group of 6 (the default group of 4
   * would leave a last group of 2 < PP, which Megatron-Core refuses):
   * warm-up 2 (p - s - 1) + (v - 1) 6. */
  order_group(SCHED_INTERLEAVED, 4, 6, 2, 6, 0, b, sizeof b);
  cr_assert_str_eq(b, "F0.0 F1.0 F2.0 F3.0 F4.0 F5.0 F0.1 F1.1 F2.1 F3.1 "
                      "F4.1 F5.1 B0.1 B1.1 B2.1 B3.1 B4.1 B5.1 B0.0 B1.0 "
                      "B2.0 B3.0 B4.0 B5.0");
  order_group(SCHED_INTERLEAVED, 4, 6, 2, 6, 1, b, sizeof b);
  cr_assert_str_eq(b, "F0.0 F1.0 F2.0 F3.0 F4.0 F5.0 F0.1 F1.1 F2.1 F3.1 "
                      "F4.1 B0.1 F5.1 B1.1 B2.1 B3.1 B4.1 B5.1 B0.0 B1.0 "
                      "B2.0 B3.0 B4.0 B5.0");
  order_group(SCHED_INTERLEAVED, 4, 6, 2, 6, 2, b, sizeof b);
  cr_assert_str_eq(b, "F0.0 F1.0 F2.0 F3.0 F4.0 F5.0 F0.1 F1.1 F2.1 B0.1 "
                      "F3.1 B1.1 F4.1 B2.1 F5.1 B3.1 B4.1 B5.1 B0.0 B1.0 "
                      "B2.0 B3.0 B4.0 B5.0");
  order_group(SCHED_INTERLEAVED, 4, 6, 2, 6, 3, b, sizeof b);
  cr_assert_str_eq(b, "F0.0 F1.0 F2.0 F3.0 F4.0 F5.0 F0.1 B0.1 F1.1 B1.1 "
                      "F2.1 B2.1 F3.1 B3.1 F4.1 B4.1 F5.1 B5.1 B0.0 B1.0 "
                      "B2.0 B3.0 B4.0 B5.0");
  /* PP 2, V 3, 5 micro-batches in groups of 3: the table of Megatron-Core's
   * own comment (PP2 N3M5), micro-batches 0 1 2 0 1 2 0 1 2 3 4 3 4 3 4. */
  order_group(SCHED_INTERLEAVED, 2, 5, 3, 3, 0, b, sizeof b);
  cr_assert_str_eq(b, "F0.0 F1.0 F2.0 F0.1 F1.1 F2.1 F0.2 F1.2 F2.2 B0.2 "
                      "F3.0 B1.2 F4.0 B2.2 F3.1 B0.1 F4.1 B1.1 F3.2 B2.1 "
                      "F4.2 B0.0 B1.0 B2.0 B3.2 B4.2 B3.1 B4.1 B3.0 B4.0");
  order_group(SCHED_INTERLEAVED, 2, 5, 3, 3, 1, b, sizeof b);
  cr_assert_str_eq(b, "F0.0 F1.0 F2.0 F0.1 F1.1 F2.1 F0.2 B0.2 F1.2 B1.2 "
                      "F2.2 B2.2 F3.0 B0.1 F4.0 B1.1 F3.1 B2.1 F4.1 B0.0 "
                      "F3.2 B1.0 F4.2 B2.0 B3.2 B4.2 B3.1 B4.1 B3.0 B4.0");
  /* Fewer micro-batches than stages, one group (Llama 3): the last stage
   * starts its backwards after (v - 1) 3 forwards. */
  order_group(SCHED_INTERLEAVED, 4, 3, 2, 3, 3, b, sizeof b);
  cr_assert_str_eq(b, "F0.0 F1.0 F2.0 F0.1 B0.1 F1.1 B1.1 F2.1 B2.1 B0.0 "
                      "B1.0 B2.0");
}

/* Every accepted (PP 2-4, V 2-3, M 1-10, G) and stage against the oracle's
 * table, tests/oracle/megatron_interleaved.txt. */
Test(schedule, flexible_interleaved_matches_megatron_core)
{
  FILE *f = fopen(WEFT_SOURCE_ROOT "/tests/oracle/megatron_interleaved.txt",
                  "r");
  cr_assert(f, "cannot open the oracle's table");
  char line[2048], b[2048];
  long rows = 0;
  while (fgets(line, sizeof line, f)) {
    long p, v, m, g, s;
    int at;
    cr_assert_eq(sscanf(line, "%ld %ld %ld %ld %ld: %n", &p, &v, &m, &g, &s,
                        &at), 5, "bad oracle line %s", line);
    line[strcspn(line, "\n")] = '\0';
    struct weft_err err = {0};
    cr_assert_eq(schedule_check_group(p, m, v, g, "t", &err), 0,
                 "PP %ld V %ld M %ld G %ld: %s", p, v, m, g, err.msg);
    order_group(SCHED_INTERLEAVED, p, m, v, g, s, b, sizeof b);
    cr_assert_str_eq(b, line + at, "PP %ld V %ld M %ld G %ld stage %ld", p, v,
                     m, g, s);
    rows++;
  }
  fclose(f);
  cr_assert_eq(rows, 360);
}

/* Today's orders (M a multiple of PP) are the default group's, and G = PP
 * is the default. */
Test(schedule, default_group_is_pp)
{
  char a[4096], b[4096];
  for (long p = 2; p <= 5; p++)
    for (long v = 2; v <= 4; v++)
      for (long m = p; m <= 4 * p; m += p)
        for (long s = 0; s < p; s++) {
          order(SCHED_INTERLEAVED, p, m, v, s, a, sizeof a);
          order_group(SCHED_INTERLEAVED, p, m, v, p, s, b, sizeof b);
          cr_assert_str_eq(a, b);
        }
}

/* Every (chunk, micro-batch) forward and backward exactly once, forward
 * first; the replay completes for every accepted group size, and the
 * stage's peak of forwards awaiting their backward is Megatron-Core's
 * warm-up count plus the one forward of the first steady step. */
Test(schedule, flexible_interleaved_runs)
{
  long accepted = 0, refused_deadlock = 0;
  for (long p = 2; p <= 8; p++)
    for (long v = 2; v <= 4; v++)
      for (long m = 1; m <= 3 * p; m++)
        for (long g = 1; g <= m; g++) {
          struct weft_err err = {0};
          if (schedule_check_group(p, m, v, g, "t", &err)) {
            refused_deadlock += replay_group(SCHED_INTERLEAVED, p, m, v, g,
                                             1, 2) < 0;
            continue;
          }
          accepted++;
          cr_assert_gt(replay_group(SCHED_INTERLEAVED, p, m, v, g, 1, 2), 0,
                       "PP %ld V %ld M %ld G %ld deadlocks", p, v, m, g);
          for (long s = 0; s < p; s++) {
            long n;
            struct sched_op *ops = schedule_build_group(SCHED_INTERLEAVED, p,
                                                        m, v, g, s, &n);
            cr_assert_eq(n, 2 * m * v);
            char *seen = calloc((size_t)(m * v * 2), 1);
            long in = 0, peak = 0;
            for (long i = 0; i < n; i++) {
              long at = (ops[i].mb * v + ops[i].chunk) * 2;
              cr_assert(ops[i].mb >= 0 && ops[i].mb < m && ops[i].chunk >= 0 &&
                        ops[i].chunk < v);
              cr_assert(ops[i].fwd ? !seen[at + 1] : seen[at],
                        "PP %ld M %ld G %ld: backward before forward", p, m,
                        g);
              seen[at + !ops[i].fwd]++;
              in += ops[i].fwd ? 1 : -1;
              peak = in > peak ? in : peak;
            }
            for (long i = 0; i < m * v * 2; i++)
              cr_assert_eq(seen[i], 1);
            long warm = m == p ? m * v : (p - s - 1) * 2 + (v - 1) * g;
            long want = warm >= m * v ? m * v : warm + 1;
            cr_assert_eq(peak, want, "PP %ld V %ld M %ld G %ld stage %ld", p,
                         v, m, g, s);
            free(seen);
            free(ops);
          }
        }
  /* Megatron-Core's refusals are not only about speed: many of the orders
   * it refuses deadlock. */
  cr_assert_gt(accepted, 300);
  cr_assert_gt(refused_deadlock, 100);
  cr_assert_lt(replay_group(SCHED_INTERLEAVED, 4, 5, 3, 4, 1, 2), 0);
}

Test(schedule, group_checks)
{
  struct weft_err err = {0};
  cr_assert_eq(schedule_check_group(16, 32, 2, 0, "s", &err), 0);
  cr_assert_eq(schedule_check_group(16, 8, 2, 8, "s", &err), 0);
  cr_assert_eq(schedule_check_group(4, 10, 2, 6, "s", &err), 0); /* 10 % 6 */
  cr_assert_eq(schedule_check_group(16, 8, 2, 0, "--schedule", &err),
               WEFT_EINVAL);
  cr_assert_str_eq(err.msg, "--schedule: the interleaved schedule needs the "
                   "micro-batches per pipeline (8) to be a multiple of PP 16, "
                   "or a group size: interleaved:2:8 runs them as one group");
  cr_assert_eq(schedule_check_group(4, 6, 2, 7, "s", &err), WEFT_EINVAL);
  cr_assert_str_eq(err.msg, "s: a group of 7 micro-batches exceeds the 6 per "
                   "pipeline");
  cr_assert_eq(schedule_check_group(4, 6, 2, 3, "s", &err), WEFT_EINVAL);
  cr_assert_str_eq(err.msg, "s: a group of 3 micro-batches is smaller than "
                   "PP 4 (Megatron-Core's microbatch_group_size_per_vp_stage "
                   "ranges in [PP, M]); fewer than PP run only as one group "
                   "of all 6: interleaved:2:6");
  cr_assert_eq(schedule_check_group(4, 9, 3, 4, "s", &err), WEFT_EINVAL);
  cr_assert_str_eq(err.msg, "s: 9 micro-batches in groups of 4 leave a last "
                   "group of 1, fewer than PP 4, as Megatron-Core refuses; "
                   "interleaved:3:9 runs them as one group");
}

/* interleaved:V:G as a setting: parsed, printed back, reset by 1f1b. */
Test(schedule, group_setting)
{
  struct plan p;
  plan_init(&p);
  struct weft_err err = {0};
  char b[64];
  cr_assert_eq(plan_set(&p, PK_SCHEDULE, "interleaved:3:7", "s", &err), 0);
  cr_assert(p.vchunks == 3 && p.vgroup == 7);
  plan_value_text(&p, PK_SCHEDULE, b, sizeof b);
  cr_assert_str_eq(b, "interleaved:3:7");
  cr_assert_eq(plan_set(&p, PK_SCHEDULE, "interleaved:2", "s", &err), 0);
  cr_assert_eq(p.vgroup, 0);
  plan_value_text(&p, PK_SCHEDULE, b, sizeof b);
  cr_assert_str_eq(b, "interleaved:2");
  cr_assert_eq(plan_set(&p, PK_SCHEDULE, "interleaved:2:5", "s", &err), 0);
  cr_assert_eq(plan_set(&p, PK_SCHEDULE, "1f1b", "s", &err), 0);
  cr_assert(p.vchunks == 1 && p.vgroup == 0);
  const char *bad[][2] = {
      {"interleaved:2:0", "--schedule: '0' is below the minimum of 1"},
      {"interleaved:2:x", "--schedule: 'x' is not an integer"},
      {"interleaved:2:4:4", "--schedule: '4:4' is not an integer"},
      {"interleaved:1:4", "--schedule: '1' is below the minimum of 2"},
  };
  for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
    cr_assert_neq(plan_set(&p, PK_SCHEDULE, bad[i][0], "--schedule", &err),
                  0);
    cr_assert_str_eq(err.msg, bad[i][1]);
  }
  /* The check runs when the plan resolves: 8 micro-batches on PP 16. */
  struct model mo;
  cr_assert_eq(model_from_preset(&mo, "gpt-1.7b", NULL), 0);
  plan_init(&p);
  p.pp = 16;
  p.global_batch = 8;
  cr_assert_eq(plan_set(&p, PK_SCHEDULE, "interleaved:3", "--schedule",
                        &err), 0);
  mo.layers = 48;
  cr_assert_eq(plan_resolve(&p, &mo, 16, &err), WEFT_EINVAL);
  cr_assert_str_eq(err.msg, "--schedule: the interleaved schedule needs the "
                   "micro-batches per pipeline (8) to be a multiple of PP 16, "
                   "or a group size: interleaved:3:8 runs them as one group");
  cr_assert_eq(plan_set(&p, PK_SCHEDULE, "interleaved:3:8", "--schedule",
                        &err), 0);
  cr_assert_eq(plan_resolve(&p, &mo, 16, &err), 0, "%s", err.msg);
}

/* The activation memory follows the order: stage 0 of gpt-1.7b (24 layers)
 * on PP 4 x V 2 holds Megatron-Core's warm-up 2 (p - 1) + (v - 1) G plus
 * one chunk of micro-batches at its peak. */
Test(schedule, memory_peak_follows_group)
{
  struct model mo;
  cr_assert_eq(model_from_preset(&mo, "gpt-1.7b", NULL), 0);
  const char *sched[] = {"interleaved:2", "interleaved:2:6",
                         "interleaved:2:12"};
  const long want[] = {6 + 4 + 1, 6 + 6 + 1, 6 + 12 + 1};
  for (int i = 0; i < 3; i++) {
    struct plan p;
    plan_init(&p);
    p.pp = 4;
    p.global_batch = 12 * 8; /* 32 GPUs: DP 8, 12 micro-batches */
    struct weft_err err = {0};
    cr_assert_eq(plan_set(&p, PK_SCHEDULE, sched[i], "s", &err), 0);
    cr_assert_eq(plan_resolve(&p, &mo, 32, &err), 0, "%s", err.msg);
    cr_assert_eq(p.microbatches, 12);
    struct memory mem;
    memory_per_gpu(&mo, &p, 80e9, &mem);
    cr_assert_eq(mem.stage, 0);
    cr_assert_eq(mem.peak_inflight, want[i], "%s: %ld", sched[i],
                 mem.peak_inflight);
  }
}

/* Fewer micro-batches than stages, in one group: every virtual stage's m
 * forwards follow micro-batch 0 through the v p virtual stages, so the
 * forwards take (v p + m - 1) tf and the backwards (v p + m - 1) tb.  With
 * v = 1 this is 1F1B's (p + m - 1) (tf + tb). */
Test(schedule, fewer_microbatches_than_stages_closed_form)
{
  for (long p = 2; p <= 16; p++)
    for (long v = 2; v <= 4; v++)
      for (long m = 1; m < p; m++) {
        double tf = 1.0 / (double)v, tb = 2.0 / (double)v;
        double t = replay_group(SCHED_INTERLEAVED, p, m, v, m, tf, tb);
        cr_assert_float_eq(t, (double)(v * p + m - 1) * (tf + tb), 1e-9,
                           "PP %ld V %ld M %ld: %g", p, v, m, t);
      }
}

/* The closed form's bubble share (closedform.h) is what the replay leaves
 * idle beside a stage's busy time, v m chunk passes of tf + tb: for
 * fewer micro-batches than stages and for groups of PP alike. */
Test(schedule, closed_form_bubble_share_matches_the_replay)
{
  for (long p = 2; p <= 8; p++)
    for (long v = 2; v <= 3; v++)
      for (long m = 1; m < p; m++) {
        double tf = 1.0 / (double)v, tb = 2.0 / (double)v;
        double t = replay_group(SCHED_INTERLEAVED, p, m, v, m, tf, tb);
        double busy = (double)(v * m) * (tf + tb);
        cr_assert_float_eq(t / busy - 1, closed_form_bubble_share(p, v, m),
                           1e-9, "PP %ld V %ld M %ld", p, v, m);
      }
  cr_assert_float_eq(closed_form_bubble_share(4, 2, 8), 3.0 / 16, 1e-12);
}

/* The whole engine on the builder's graph of a small GPT (v p layers) on
 * one DGX H100: PP stages of 8 / PP GPUs each, flexible groups.  Each case
 * runs in a child process (one SimGrid engine per process) and reports
 * its iteration time, compute time and exit status. */
static void engine_case(long pp, long v, long m, long g, double *out)
{
  struct weft_err err = {0};
  struct catalog *cat = catalog_builtin(&err);
  struct cluster_desc d;
  cluster_desc_init(&d);
  if (!cat || cluster_desc_preset(&d, "dgx-h100", &err) ||
      cluster_desc_set(&d, cluster_key_from_name("gpus"), "8", "gpus", 2,
                       &err))
    _exit(2);
  struct cluster c;
  if (cluster_resolve(&d, cat, &c, &err))
    _exit(3);
  platload_boot(0);
  if (platload_cluster(&c, &err))
    _exit(4);
  struct model mo;
  if (model_from_preset(&mo, "gpt-1.7b", NULL))
    _exit(5);
  mo.layers = pp * v;
  struct plan p;
  plan_init(&p);
  char sched[64], pps[16], gb[32];
  snprintf(sched, sizeof sched, "interleaved:%ld:%ld", v, g);
  snprintf(pps, sizeof pps, "%ld", pp);
  snprintf(gb, sizeof gb, "%ld", m * (8 / pp));
  if (plan_set(&p, PK_PP, pps, "pp", &err) ||
      plan_set(&p, PK_SCHEDULE, sched, "s", &err) ||
      plan_set(&p, PK_GLOBAL_BATCH, gb, "gb", &err) ||
      plan_resolve(&p, &mo, 8, &err) || p.microbatches != m)
    _exit(6);
  struct graph *gr = build_graph(&mo, &p, &err);
  if (!gr)
    _exit(7);
  struct engine_params ep;
  engine_params_default(&ep);
  struct engine_result r;
  if (engine_run(gr, &c, &ep, &r, &err))
    _exit(8);
  out[0] = r.iteration_s;
  out[1] = r.compute_s;
  graph_free(gr);
}

Test(schedule, flexible_interleaved_engine_completes, .timeout = 300)
{
  const long cases[][4] = {{2, 3, 5, 3}, {4, 2, 6, 6}, {4, 2, 3, 3},
                           {8, 2, 4, 4}, {4, 3, 10, 5}, {2, 2, 3, 3},
                           {8, 2, 12, 12}, {4, 2, 9, 9}, {8, 3, 1, 1}};
  for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
    const long *k = cases[i];
    int fd[2];
    cr_assert_eq(pipe(fd), 0);
    pid_t pid = fork();
    if (pid == 0) {
      double out[2] = {0, 0};
      engine_case(k[0], k[1], k[2], k[3], out);
      _exit(write(fd[1], out, sizeof out) == (ssize_t)sizeof out ? 0 : 1);
    }
    close(fd[1]);
    double out[2] = {0, 0};
    ssize_t got = read(fd[0], out, sizeof out);
    close(fd[0]);
    int status;
    waitpid(pid, &status, 0);
    cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0 &&
              got == (ssize_t)sizeof out, "PP %ld V %ld M %ld G %ld: exit %d",
              k[0], k[1], k[2], k[3], WEXITSTATUS(status));
    cr_assert_gt(out[1], 0);
    cr_assert_gt(out[0], out[1], "PP %ld V %ld M %ld G %ld", k[0], k[1],
                 k[2], k[3]);
  }
}
