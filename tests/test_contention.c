/*
 * test_contention.c - the engine's two host-and-device costs against their
 * closed forms (engine.h: comm_contention, host_op_s): a kernel beside a
 * collective on 2 GPUs of one H100 node, with and without contention,
 * fully and partly overlapped; a chain of short kernels behind a host that
 * issues them, and the sync point before the optimizer step.
 */
#include <criterion/criterion.h>
#include <math.h>

#include "sim/engine.h"
#include "sim/platload.h"

static struct catalog *cat;

/* The platform, loaded once per test (one SimGrid per process). */
static struct cluster two_gpus(void)
{
  static struct cluster loaded;
  static bool done;
  if (done)
    return loaded;
  struct weft_err err = {0};
  cat = catalog_builtin(&err);
  cr_assert(cat);
  struct cluster_desc d;
  cluster_desc_init(&d);
  cr_assert_eq(cluster_desc_preset(&d, "dgx-h100", &err), 0);
  cr_assert_eq(cluster_desc_set(&d, cluster_key_from_name("gpus"), "2",
                                "gpus", 2, &err), 0, "%s", err.msg);
  cr_assert_eq(cluster_desc_set(&d, cluster_key_from_name("gpus_per_node"),
                                "2", "gpus_per_node", 2, &err), 0, "%s",
               err.msg);
  struct cluster c;
  cr_assert_eq(cluster_resolve(&d, cat, &c, &err), 0, "%s", err.msg);
  platload_boot(0);
  cr_assert_eq(platload_cluster(&c, &err), 0, "%s", err.msg);
  loaded = c;
  done = true;
  return c;
}

#define REL(a, b, tol)                                                         \
  cr_assert(fabs((a) - (b)) <= (tol) * fabs(b), "%.12g != %.12g",            \
            (double)(a), (double)(b))

/* Rank 0's tasks' ends, by task index. */
static double ends[64];

static void on_task(void *ctx, long rank, long task, double s, double e)
{
  (void)ctx;
  (void)s;
  if (rank == 0 && task < 64)
    ends[task] = e;
}

/* Ideal collectives (full link bandwidth, no fixed latency) and the hook. */
static struct engine_params params(bool contention)
{
  struct engine_params p;
  engine_params_default(&p);
  p.nvlink_eff = p.nic_eff = 1;
  p.coll_lat_s = 0;
  p.ll128_eff = p.ll_eff = 1;
  p.nccl_hops = false;
  p.algo = CA_RING;
  p.comm_contention = contention;
  p.on_task = on_task;
  return p;
}

static struct graph *dp2(void)
{
  struct graph *g = graph_new(1);
  g->layout = (struct graph_layout){1, 1, 2, 1, 1, 1, {0, 1, 2, 3}, 0,
                                    {0, 0, 0}, 0, 0};
  return g;
}

/* A GEMM of 132 output tiles (12 x 11 tiles of 128 x 128): one wave on an
 * H100's 132 SMs, two on the 108 that NCCL's 24 CTAs leave, as in NVIDIA's
 * forum measurement (engine.c, contention) where such a GEMM beside an
 * all-gather "nearly doubles".  k long enough to bind by FLOPs. */
static struct task gemm132(void)
{
  double m = 12 * 128, n = 11 * 128, k = 16384;
  return (struct task){.kind = TK_KERNEL, .op = KK_GEMM,
                       .stream = ST_COMPUTE, .chunk = -1, .mb = -1,
                       .layer = 0, .m = (uint32_t)m, .n = (uint32_t)n,
                       .k = (uint32_t)k, .batch = 1, .flops = 2 * m * n * k,
                       .bytes = 2 * (m * k + k * n + m * n)};
}

static struct task allreduce(double bytes)
{
  return (struct task){.kind = TK_COLL, .op = CO_ALLREDUCE, .stream = ST_DP,
                       .group = GK_DP, .chunk = -1, .mb = -1, .layer = -1,
                       .bytes = bytes};
}

/* The GEMM (task 0) and an all-reduce of `bytes` (task 1) start together:
 * the GEMM's end and the all-reduce's. */
static void beside(const struct task *k, double bytes, bool contention,
                   double *out_kernel, double *out_coll)
{
  struct cluster c = two_gpus();
  struct graph *g = dp2();
  graph_add(g, 0, k);
  struct task ar = allreduce(bytes);
  graph_add(g, 0, &ar);
  struct engine_params p = params(contention);
  struct engine_result r;
  struct weft_err err = {0};
  cr_assert_eq(engine_run(g, &c, &p, &r, &err), 0, "%s", err.msg);
  *out_kernel = ends[0];
  *out_coll = ends[1];
  graph_free(g);
}

static double alone(const struct task *k)
{
  struct cluster c = two_gpus();
  return cost_kernel(&c.gpu, DTYPE_BF16, -1, k, NULL);
}

Test(contention, off_a_kernel_costs_the_same_beside_a_collective)
{
  struct task k = gemm132();
  double tk, tc;
  beside(&k, 4e9, false, &tk, &tc);
  cr_assert_gt(tc, tk); /* the collective outlasts the kernel */
  REL(tk, alone(&k), 1e-12);
}

/* Whole kernel beside the collective: its compute part takes two waves
 * instead of one; the launch is not stretched. */
Test(contention, a_one_wave_gemm_takes_two_waves_beside_a_collective)
{
  struct task k = gemm132();
  struct cluster c = two_gpus();
  cr_assert_eq(c.gpu.sms, 132);
  double t = alone(&k), L = c.gpu.launch_s;
  double tk, tc;
  beside(&k, 4e9, true, &tk, &tc);
  cr_assert_gt(tc, tk);
  REL(tk, 2 * (t - L) + L, 1e-9);
}

/* The collective ends a third of the way through the slowed kernel: the
 * rest runs at full speed (progress rescaled when communication ends). */
Test(contention, partial_overlap_rescales_the_rest)
{
  struct task k = gemm132();
  struct cluster c = two_gpus();
  double t = alone(&k), L = c.gpu.launch_s, slow = 2 * (t - L) + L;
  /* An all-reduce of S bytes on 2 GPUs over 450 GB/s NVLink (ideal:
   * 2 (n-1)/n S / B plus its steps' route latency). */
  double tk, tc;
  beside(&k, 2e7, true, &tk, &tc);
  cr_assert_lt(tc, tk);
  cr_assert_gt(tc, 0.1 * slow);
  double done = tc / slow; /* the share of the kernel done meanwhile */
  REL(tk, tc + (1 - done) * t, 1e-9);
}

/* A memory-bound kernel beside an NVLink all-reduce gets the HBM bandwidth
 * the ring leaves: 2.5 bytes of HBM per byte on the link, at the link's
 * 450 GB/s. */
Test(contention, a_memory_bound_kernel_loses_hbm_bandwidth)
{
  struct task k = {.kind = TK_KERNEL, .op = KK_ELEMWISE,
                   .stream = ST_COMPUTE, .chunk = -1, .mb = -1, .layer = 0,
                   .bytes = 4e8};
  struct cluster c = two_gpus();
  double t = alone(&k), L = c.gpu.launch_s;
  double hbm = c.gpu.hbm_bw_Bps, use = 2.5 * c.gpu.nvlink_bw_Bps;
  cr_assert_lt(use, hbm);
  double tk, tc;
  beside(&k, 8e9, true, &tk, &tc);
  cr_assert_gt(tc, tk);
  REL(tk, (t - L) * hbm / (hbm - use) + L, 1e-9);
}

/* ---- host clock ---------------------------------------------------------- */

static struct task elementwise(double bytes, enum phase ph)
{
  return (struct task){.kind = TK_KERNEL, .op = KK_ELEMWISE,
                       .stream = ST_COMPUTE, .phase = (uint8_t)ph,
                       .chunk = -1, .mb = -1, .layer = 0, .bytes = bytes};
}

/* n kernels, then m optimizer-phase ones, under host cost h: the
 * iteration. */
/* Replay g under host cost h (freeing it); *out_d: kernel k's time. */
static double replay_host(struct graph *g, double h, const struct task *k,
                          double *out_d)
{
  struct cluster c = two_gpus();
  struct engine_params p = params(true);
  p.on_task = NULL;
  p.host_op_s = h;
  struct engine_result r;
  struct weft_err err = {0};
  cr_assert_eq(engine_run(g, &c, &p, &r, &err), 0, "%s", err.msg);
  graph_free(g);
  *out_d = cost_kernel(&c.gpu, DTYPE_BF16, -1, k, NULL);
  return r.iteration_s;
}

static double chain(long n, long m, double h, double *out_d)
{
  struct graph *g = dp2();
  struct task k = elementwise(1e6, PH_BWD), o = elementwise(1e6, PH_OPT);
  for (long i = 0; i < n + m; i++)
    graph_add(g, 0, i < n ? &k : &o);
  return replay_host(g, h, &k, out_d);
}

Test(host, a_slow_host_sets_the_pace)
{
  double d0;
  chain(1, 0, 0, &d0);
  double h = 3 * d0, d;
  REL(chain(10, 0, h, &d), 10 * h + d, 1e-9);
}

Test(host, a_fast_host_hides_behind_the_kernels)
{
  double d0;
  chain(1, 0, 0, &d0);
  double h = d0 / 4, d;
  REL(chain(10, 0, h, &d), h + 10 * d, 1e-9);
}

Test(host, no_host_cost_no_host_clock)
{
  double d;
  REL(chain(10, 3, 0, &d), 13 * d, 1e-9);
}

/* Before the optimizer step the host waits for the GPU, so the first
 * optimizer kernel is issued h after the last backward kernel ends: the
 * host's lead is lost once. */
Test(host, the_sync_point_resets_the_host)
{
  double d0;
  chain(1, 0, 0, &d0);
  double h = d0 / 4, d;
  REL(chain(10, 5, h, &d), 2 * h + 15 * d, 1e-9);
}

/* Host synchronizations marked by the builder (graph.h, GRAPH_HOST_SYNC,
 * as DeepSpeed 2021's module fetches): n kernels, then one that the host
 * issues only after the GPU has finished them and after x extra host
 * operations of its own, then m more.  With a fast host (h < d) the GPU
 * waits once for (x + 1) host operations: h + n d + (x + 1) h + (m + 1) d;
 * a second sync adds the same gap again (27 kernels in all). */
static double synced_chain(long n, long x, long m, int syncs, double h,
                           double *out_d)
{
  struct graph *g = dp2();
  struct task k = elementwise(1e6, PH_BWD);
  for (int s = 0; s < syncs; s++) {
    for (long i = 0; i < n; i++)
      graph_add(g, 0, &k);
    long y = graph_add(g, 0, &k);
    graph_host(g, 0, y, (uint32_t)x, true);
  }
  for (long i = 0; i < m; i++)
    graph_add(g, 0, &k);
  return replay_host(g, h, &k, out_d);
}

Test(host, a_marked_sync_waits_for_the_gpu_then_the_host_work)
{
  double d0;
  chain(1, 0, 0, &d0);
  double h = d0 / 4, d;
  REL(synced_chain(10, 40, 5, 1, h, &d), h + 10 * d + 41 * h + 6 * d, 1e-9);
  REL(synced_chain(10, 40, 5, 2, h, &d), h + 2 * 41 * h + 27 * d, 1e-9);
}

/* Without a host clock the marks cost nothing. */
Test(host, marks_without_a_host_clock_are_free)
{
  double d;
  REL(synced_chain(10, 40, 5, 1, 0, &d), 16 * d, 1e-9);
}
