/*
 * test_share.c - several jobs on one fabric (engine_run_shared, weft
 * share) against closed forms: two data-parallel all-reduces of two
 * single-GPU nodes each, on a fabric of two leaves of two nodes (one NIC
 * per node), every job's ring crossing the leaves.  Oversubscription 2
 * leaves each leaf one NIC's bandwidth up and down: alone, a job's ring
 * has it to itself; shared, the two jobs' flows take half each, so the
 * bandwidth term of each doubles.  Non-blocking (oversubscription 1): no
 * link in common at less than the flows' rate, no slowdown at all.  The
 * collective overheads and efficiencies are off (ideal_ring_params,
 * tests/engine_helpers.h).
 * Each test runs in its own process: a fresh SimGrid engine.
 */
#include <criterion/criterion.h>
#include <math.h>
#include <string.h>

#include "sim/engine.h"
#include "sim/platload.h"
#include "workloads/builder.h"
#include "tests/engine_helpers.h"

static struct catalog *cat;

static struct cluster load(const char *oversub)
{
  struct weft_err err = {0};
  cat = catalog_builtin(&err);
  cr_assert(cat);
  struct cluster_desc d;
  cluster_desc_init(&d);
  cr_assert_eq(cluster_desc_preset(&d, "h100-oversub", &err), 0);
  const char *kv[] = {"nodes", "4", "gpus_per_node", "1", "nics_per_node",
                      "1", "nodes_per_leaf", "2", "oversubscription", oversub,
                      NULL};
  for (int i = 0; kv[i]; i += 2)
    cr_assert_eq(cluster_desc_set(&d, cluster_key_from_name(kv[i]),
                                  kv[i + 1], kv[i], 2, &err), 0, "%s",
                 err.msg);
  struct cluster c;
  cr_assert_eq(cluster_resolve(&d, cat, &c, &err), 0, "%s", err.msg);
  platload_boot(0);
  cr_assert_eq(platload_cluster(&c, &err), 0, "%s", err.msg);
  return c;
}

/* A job's own view: its 2 nodes of the fabric. */
static struct cluster view(const struct cluster *c)
{
  struct cluster v = *c;
  v.nodes = 2;
  v.gpus = 2;
  return v;
}

/* One all-reduce of `bytes` over DP 2. */
static struct graph *allreduce(double bytes)
{
  struct graph *g = graph_new(1);
  g->layout = (struct graph_layout){1, 1, 2, 1, 1, 1, {0, 1, 2, 3}, 0,
                                    {0, 0, 0}, 0, 0};
  struct task t = {.kind = TK_COLL, .op = CO_ALLREDUCE, .stream = ST_COMPUTE,
                   .group = GK_DP, .chunk = -1, .mb = -1, .layer = -1,
                   .bytes = bytes};
  graph_add(g, 0, &t);
  return g;
}

#define REL(a, b, tol) cr_assert(fabs((a) - (b)) <= (tol) * fabs(b), "%.12g != %.12g", (double)(a), (double)(b))

static const double S = 1 << 30, NIC = 50e9;
/* Jobs A on nodes 0 and 2, B on 1 and 3: each ring crosses the leaves. */
static const int PA[] = {0, 2}, PB[] = {1, 3};

/* Alone and shared times of two jobs of S and k S bytes. */
static void run_pair(const char *oversub, double k, long steps,
                     struct engine_shared alone[2],
                     struct engine_shared shared[2])
{
  struct cluster c = load(oversub), v = view(&c);
  struct graph *ga = allreduce(S), *gb = allreduce(k * S);
  struct engine_job j[2] = {{ga, &v, ideal_ring_params(), PA, 0},
                            {gb, &v, ideal_ring_params(), PB, 0}};
  struct weft_err err = {0};
  for (int i = 0; i < 2; i++)
    cr_assert_eq(engine_run_shared(1, &j[i], 1, &alone[i], &err), 0, "%s",
                 err.msg);
  cr_assert_eq(engine_run_shared(2, j, steps, shared, &err), 0, "%s",
               err.msg);
  graph_free(ga);
  graph_free(gb);
}

Test(share, oversubscribed_uplink_halves_each_jobs_bandwidth)
{
  struct engine_shared a[2], s[2];
  run_pair("2", 1, 3, a, s);
  /* A ring of 2 moves S each way in 2 steps of S / 2 (reduce-scatter,
   * all-gather): 2 (S / 2) / B alone, 2 (S / 2) / (B / 2) shared, the
   * same latency. */
  for (int i = 0; i < 2; i++) {
    REL(s[i].mean_s - a[i].mean_s, S / NIC, 1e-6);
    cr_assert_eq(s[i].counted, 3);
    engine_shared_free(&a[i]);
    engine_shared_free(&s[i]);
  }
}

Test(share, non_blocking_fabric_no_slowdown)
{
  struct engine_shared a[2], s[2];
  run_pair("1", 1, 2, a, s);
  for (int i = 0; i < 2; i++) {
    REL(s[i].mean_s, a[i].mean_s, 1e-12);
    for (long k = 0; k < s[i].iterations; k++)
      REL(s[i].iter_s[k], a[i].mean_s, 1e-12);
    engine_shared_free(&a[i]);
    engine_shared_free(&s[i]);
  }
}

Test(share, shorter_job_repeats_while_the_longer_runs)
{
  /* B moves 4 S: A repeats while B runs.  B's bytes go at half the
   * uplink the whole time A's flows are on it; A's measured iterations
   * all ran beside B's. */
  struct engine_shared a[2], s[2];
  run_pair("2", 4, 1, a, s);
  cr_assert_eq(s[1].iterations, 1);
  cr_assert_eq(s[1].counted, 1);
  cr_assert_geq(s[0].iterations, 3, "A ran %ld", s[0].iterations);
  cr_assert_geq(s[0].counted, 3);
  cr_assert_lt(s[0].counted, s[0].iterations + 1);
  /* Every counted iteration of A shared the uplink: S / NIC more. */
  for (long k = 0; k < s[0].counted; k++)
    REL(s[0].iter_s[k] - a[0].mean_s, S / NIC, 1e-6);
  /* B: at half rate except while A's flows are in their latency. */
  cr_assert_gt(s[1].mean_s, a[1].mean_s + 0.99 * 4 * S / NIC);
  cr_assert_leq(s[1].mean_s, a[1].mean_s + 4 * S / NIC + 1e-12);
  for (int i = 0; i < 2; i++) {
    engine_shared_free(&a[i]);
    engine_shared_free(&s[i]);
  }
}

Test(share, refusals)
{
  struct cluster c = load("2"), v = view(&c);
  struct graph *g = allreduce(S);
  struct engine_job j = {g, &v, ideal_ring_params(), NULL, 0};
  struct engine_shared o;
  struct weft_err err = {0};
  cr_assert_neq(engine_run_shared(1, &j, 1, &o, &err), 0);
  cr_assert_str_eq(err.msg, "job 1: rank 0 has no place on the fabric");
  j.place = PA;
  cr_assert_neq(engine_run_shared(1, &j, 0, &o, &err), 0);
  cr_assert_str_eq(err.msg, "engine_run_shared: 1 jobs (1 to 64) and 0 "
                   "steps (at least 1)");
  graph_free(g);
}

/* An iteration that shared the 2:1 uplink throughout (below). */
static void in_shared_bracket(double t, double T)
{
  cr_assert(t >= 2 * S / NIC * (1 - 1e-9) && t <= (T + S / NIC) * (1 + 1e-9),
            "%.12g not in [%.12g, %.12g]", t, 2 * S / NIC, T + S / NIC);
}

/* Job B starts late (weft share's NODES@OFFSET, engine_job.start_s): A
 * iterates alone until then, so each of its iterations that ended before
 * B's start takes exactly its alone time; the ones begun before are
 * lead-in (skipped), and only iterations begun once both ran are
 * measured: each shared the uplink with the other's flows throughout.
 * Alone an iteration is T = S / NIC + 2 L (two ring steps of S / 2 and
 * their latency L).  Shared, its bytes take 2 S / NIC at half the
 * uplink, plus its latency, less what it gains at full rate while the
 * other job is in a latency of its own (out of phase, as a start offset
 * makes them): between 2 S / NIC and T + S / NIC (issue 41 item 4
 * leftover). */
Test(share, late_start_lead_in_alone_then_shared)
{
  struct cluster c = load("2"), v = view(&c);
  struct graph *ga = allreduce(S), *gb = allreduce(S);
  struct weft_err err = {0};
  struct engine_shared a, s[2];
  struct engine_job ja = {ga, &v, ideal_ring_params(), PA, 0};
  cr_assert_eq(engine_run_shared(1, &ja, 1, &a, &err), 0, "%s", err.msg);
  double T = a.mean_s, d = 2.5 * T;
  struct engine_job j[2] = {{ga, &v, ideal_ring_params(), PA, 0},
                            {gb, &v, ideal_ring_params(), PB, d}};
  cr_assert_eq(engine_run_shared(2, j, 2, s, &err), 0, "%s", err.msg);
  /* A: 0-T and T-2T alone, exactly; 2T-.. straddles B's start. */
  REL(s[0].iter_s[0], T, 1e-12);
  REL(s[0].iter_s[1], T, 1e-12);
  cr_assert_gt(s[0].iter_s[2], T + 0.1 * S / NIC);
  cr_assert_eq(s[0].skipped, 3);
  cr_assert_eq(s[1].skipped, 0);
  cr_assert_geq(s[0].counted, 2);
  cr_assert_geq(s[1].counted, 2);
  for (int i = 0; i < 2; i++) {
    double sum = 0;
    for (long k = s[i].skipped; k < s[i].skipped + s[i].counted; k++) {
      in_shared_bracket(s[i].iter_s[k], T);
      sum += s[i].iter_s[k];
    }
    REL(s[i].mean_s, sum / (double)s[i].counted, 1e-12);
  }
  for (int i = 0; i < 2; i++)
    engine_shared_free(&s[i]);
  engine_shared_free(&a);
  graph_free(ga);
  graph_free(gb);
}

/* Started so late that A's lead-in is many iterations, all alone: each
 * equals the alone time (to rounding: times are differences of
 * absolute ones), and B's one measured iteration shared throughout. */
Test(share, far_offset_lead_in_equals_alone)
{
  struct cluster c = load("2"), v = view(&c);
  struct graph *ga = allreduce(S), *gb = allreduce(S);
  struct weft_err err = {0};
  struct engine_shared a, s[2];
  struct engine_job ja = {ga, &v, ideal_ring_params(), PA, 0};
  cr_assert_eq(engine_run_shared(1, &ja, 1, &a, &err), 0, "%s", err.msg);
  double T = a.mean_s;
  struct engine_job j[2] = {{ga, &v, ideal_ring_params(), PA, 0},
                            {gb, &v, ideal_ring_params(), PB, 10.5 * T}};
  cr_assert_eq(engine_run_shared(2, j, 1, s, &err), 0, "%s", err.msg);
  cr_assert_eq(s[0].skipped, 11);
  for (long k = 0; k < 10; k++)
    REL(s[0].iter_s[k], T, 1e-12);
  cr_assert_eq(s[1].skipped, 0);
  cr_assert_eq(s[1].counted, 1);
  in_shared_bracket(s[1].iter_s[0], T);
  for (int i = 0; i < 2; i++)
    engine_shared_free(&s[i]);
  engine_shared_free(&a);
  graph_free(ga);
  graph_free(gb);
}

Test(share, refuses_a_negative_or_absurd_start)
{
  struct cluster c = load("2"), v = view(&c);
  struct graph *g = allreduce(S);
  struct engine_job j = {g, &v, ideal_ring_params(), PA, -1};
  struct engine_shared o;
  struct weft_err err = {0};
  cr_assert_neq(engine_run_shared(1, &j, 1, &o, &err), 0);
  cr_assert_str_eq(err.msg, "job 1: start -1 s is not from 0 to 1e9 s");
  j.start_s = NAN;
  cr_assert_neq(engine_run_shared(1, &j, 1, &o, &err), 0);
  cr_assert_str_eq(err.msg, "job 1: start nan s is not from 0 to 1e9 s");
  graph_free(g);
}
