/*
 * test_schedule.c - pipeline schedules: the exact order of forward and
 * backward passes per stage for small p, m, v, and a unit-time replay of
 * every stage's order that must reproduce the bubble fractions (p-1)/m
 * (GPipe, 1F1B) and (p-1)/(v m) (interleaved) without deadlock.
 */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "workloads/schedule.h"

static void order(enum sched_kind k, long p, long m, long v, long stage,
                  char *buf, size_t size)
{
  long n;
  struct sched_op *ops = schedule_build(k, p, m, v, stage, &n);
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
static double replay(enum sched_kind k, long p, long m, long v, double tf,
                     double tb)
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
    ops[s] = schedule_build(k, p, m, v, s, &n[s]);
  long left = 0;
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
    if (!progress)
      return -1;
  }
  double end = 0;
  for (long s = 0; s < p; s++) {
    end = fmax(end, clock[s]);
    free(ops[s]);
  }
  free(ops); free(n); free(pos); free(clock); free(fdone); free(bdone);
  return end;
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
