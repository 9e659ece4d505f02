/*
 * test_tpo.c - tensor-parallel communication overlap (builder_tpo.c):
 * what the layer's graph holds with the setting off and on (the pieces of
 * a split GEMM and of a split collective sum to the unsplit ones), the
 * cost of a GEMM that gives SMs to a communication kernel, and the
 * simulated time of each overlap against the closed form of its schedule.
 * The engine tests call the builder's entry points on a context made here
 * (builder_int.h), as the Megatron layer does.
 */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "sim/engine.h"
#include "sim/platload.h"
#include "tests/engine_helpers.h"
#include "tests/plan_helpers.h"
#include "workloads/builder_int.h"
#include "workloads/costmodel.h"

#define REL(a, b, tol)                                                         \
  cr_assert(fabs((double)(a) - (double)(b)) <= (tol) * fabs((double)(b)),      \
            "%.17g != %.17g", (double)(a), (double)(b))

/* Sum of `what` (0: FLOPs of GEMMs, 1: bytes of collectives `op` over TP)
 * in layer `layer`, phase `ph` of stage 0, micro-batch 0; *n the count. */
static double layer_sum(const struct graph *g, int what, enum coll_op op,
                        long layer, int ph, long *n)
{
  const struct program *pr = &g->prog[0];
  double s = 0;
  long k = 0;
  for (long i = 0; i < pr->n; i++) {
    const struct task *t = &pr->tasks[i];
    if (t->layer != layer || t->phase != ph || t->mb != 0)
      continue;
    if (what == 0 && t->kind == TK_KERNEL && t->op == KK_GEMM) {
      s += t->flops;
      k++;
    } else if (what == 1 && t->kind == TK_COLL && t->op == op &&
               t->group == GK_TP) {
      s += t->bytes;
      k++;
    }
  }
  if (n)
    *n = k;
  return s;
}

static const char *const *plan_kv(bool on)
{
  static const char *const off[] = {"tp", "4", "sp", "yes", "global_batch",
                                    "1", NULL};
  static const char *const te[] = {"tp", "4", "sp", "yes", "global_batch",
                                   "1", "tp_comm_overlap", "te", NULL};
  return on ? te : off;
}

Test(tpo, off_keeps_blocking_collectives)
{
  struct model m;
  struct plan p;
  struct graph *g = build_layers("llama3-8b", 2, 4, plan_kv(false), &m, &p);
  const struct program *pr = &g->prog[0];
  for (long i = 0; i < pr->n; i++) {
    cr_assert_neq(pr->tasks[i].stream, ST_T3);
    cr_assert(pr->tasks[i].kind != TK_KERNEL || pr->tasks[i].sms_held == 0);
  }
  /* Per layer and direction: two all-gathers and two reduce-scatters of
   * the T x h activation (2 bytes, 8192 tokens, hidden 4096). */
  double act = 2.0 * 8192 * 4096;
  long n;
  REL(layer_sum(g, 1, CO_ALLGATHER, 1, PH_FWD, &n), 2 * act, 1e-12);
  cr_assert_eq(n, 2);
  REL(layer_sum(g, 1, CO_REDUCE_SCATTER, 1, PH_BWD, &n), 2 * act, 1e-12);
  cr_assert_eq(n, 2);
  graph_free(g);
}

Test(tpo, pieces_sum_to_the_unsplit_work)
{
  struct model m;
  struct plan p, q;
  struct graph *off = build_layers("llama3-8b", 2, 4, plan_kv(false), &m, &p);
  struct graph *on = build_layers("llama3-8b", 2, 4, plan_kv(true), &m, &q);
  double act = 2.0 * 8192 * 4096, t = 4;
  for (int ph = PH_FWD; ph <= PH_BWD; ph++) {
    long n_off, n_on;
    REL(layer_sum(on, 0, 0, 1, ph, &n_on), layer_sum(off, 0, 0, 1, ph, &n_off),
        1e-12);
    /* forward: QKV and FC1 in t pieces, projection and FC2 in 4 */
    if (ph == PH_FWD)
      cr_assert_eq(n_on, n_off + 2 * (4 - 1) + 2 * (4 - 1));
    /* The ring exchanges: (t - 1) chunks of T/t rows per all-gather, two
     * all-gathers each way, which is the all-gather's traffic per rank. */
    long n;
    REL(layer_sum(on, 1, CO_SENDRECV, 1, ph, &n), 2 * (t - 1) / t * act,
        1e-12);
    cr_assert_eq(n, 2 * (t - 1));
    /* Reduce-scatters: 4 pieces each forward, whole ones backward, the
     * same bytes as without overlap. */
    REL(layer_sum(on, 1, CO_REDUCE_SCATTER, 1, ph, &n),
        layer_sum(off, 1, CO_REDUCE_SCATTER, 1, ph, NULL), 1e-12);
    cr_assert_eq(n, ph == PH_FWD ? 2 * 4 : 2);
  }
  /* Backward gathers the saved inputs of QKV and FC1 for their weight
   * gradients (kept sharded with SP), beside the data gradients. */
  long n;
  REL(layer_sum(on, 1, CO_ALLGATHER, 1, PH_BWD, &n), 2 * act, 1e-12);
  cr_assert_eq(n, 2);
  graph_free(off);
  graph_free(on);
}

/* Layer 1's graph of Llama 3 8B in FP8 on TP 4 with overlap `how`. */
static struct graph *fp8_graph(const char *how)
{
  const char *const kv[] = {"tp", "4", "sp", "yes", "global_batch", "1",
                            "tp_comm_overlap", how, NULL};
  struct weft_err err = {0};
  struct model m;
  struct plan p;
  cr_assert_eq(model_from_preset(&m, "llama3-8b", &err), 0);
  m.layers = 2;
  m.dtype = DTYPE_FP8;
  plan_init(&p);
  for (int i = 0; kv[i]; i += 2)
    cr_assert_eq(plan_set(&p, plan_key_from_name(kv[i]), kv[i + 1], "t",
                          &err), 0, "%s", err.msg);
  cr_assert_eq(plan_resolve(&p, &m, 4, &err), 0, "%s", err.msg);
  struct graph *g = build_graph(&m, &p, &err);
  cr_assert(g, "%s", err.msg);
  return g;
}

/* The SMs held by layer 1's GEMMs in phase ph, in graph order. */
static int held_sms(const struct graph *g, int ph, int *out, int max)
{
  int n = 0;
  const struct program *pr = &g->prog[0];
  for (long i = 0; i < pr->n && n < max; i++) {
    const struct task *t = &pr->tasks[i];
    if (t->layer == 1 && t->phase == ph && t->mb == 0 &&
        t->kind == TK_KERNEL && t->op == KK_GEMM)
      out[n++] = t->sms_held;
  }
  return n;
}

Test(tpo, fp8_buffers_and_sm_margins)
{
  double act = 8192.0 * 4096;
  struct graph *te = fp8_graph("te"), *nemo = fp8_graph("nemo");
  /* All-gathers in FP8 in both (fp8_buf of the ring exchanges). */
  REL(layer_sum(te, 1, CO_SENDRECV, 1, PH_FWD, NULL), 2 * 0.75 * act, 1e-12);
  REL(layer_sum(nemo, 1, CO_SENDRECV, 1, PH_FWD, NULL), 2 * 0.75 * act,
      1e-12);
  /* Reduce-scatters in BF16 at TE's defaults, FP8 in NeMo's. */
  REL(layer_sum(te, 1, CO_REDUCE_SCATTER, 1, PH_FWD, NULL), 2 * 2 * act,
      1e-12);
  REL(layer_sum(nemo, 1, CO_REDUCE_SCATTER, 1, PH_FWD, NULL), 2 * act,
      1e-12);
  /* Forward: QKV's 4 pieces, projection's 4, FC1's 4, FC2's 4. */
  int h[32];
  const int te_fwd[16] = {0, 0, 0, 0, 16, 16, 16, 16, 0, 0, 0, 0,
                          16, 16, 16, 16};
  const int nemo_fwd[16] = {0, 0, 0, 0, 24, 24, 24, 24, 0, 0, 0, 0,
                            16, 16, 16, 16};
  cr_assert_eq(held_sms(te, PH_FWD, h, 32), 16);
  cr_assert_arr_eq(h, te_fwd, sizeof te_fwd);
  cr_assert_eq(held_sms(nemo, PH_FWD, h, 32), 16);
  cr_assert_arr_eq(h, nemo_fwd, sizeof nemo_fwd);
  /* Backward: FC2 dgrad (4 pieces), wgrad, FC1 bulk dgrad and wgrad,
   * projection dgrad (4), wgrad, QKV bulk dgrad and wgrad. */
  const int te_bwd[14] = {0, 0, 0, 0, 0, 16, 16, 0, 0, 0, 0, 0, 16, 16};
  cr_assert_eq(held_sms(te, PH_BWD, h, 32), 14);
  cr_assert_arr_eq(h, te_bwd, sizeof te_bwd);
  cr_assert_eq(held_sms(nemo, PH_BWD, h, 32), 14);
  for (int i = 0; i < 14; i++)
    cr_assert_eq(h[i], 0);
  graph_free(te);
  graph_free(nemo);
}

Test(tpo, needs_sequence_parallelism)
{
  refused("llama3-8b", KV("tp", "4", "global_batch", "1", "tp_comm_overlap",
                          "te"), 4,
          "--tp_comm_overlap: TP communication overlap needs sequence "
          "parallelism and Megatron's 1D TP (Megatron-LM asserts it: "
          "arguments.py); add --sp yes, as NeMo runs TP > 1, or "
          "--tp-comm-overlap no");
}

/* A GEMM on 132 - 16 SMs: that share of the peak, in waves of 116 tiles. */
Test(tpo, gemm_on_fewer_sms)
{
  struct weft_err err = {0};
  struct catalog *cat = catalog_builtin(&err);
  cr_assert(cat, "%s", err.msg);
  const struct gpu_spec *g = catalog_gpu(cat, "H100-SXM");
  cr_assert(g);
  cr_assert_eq(g->sms, 132);
  /* 8 x 29 = 232 tiles: two full waves on 116 SMs */
  double M = 1024, N = 128 * 29, K = 4096;
  struct task t = {.kind = TK_KERNEL, .op = KK_GEMM, .stream = ST_COMPUTE,
                   .layer = 0, .m = (uint32_t)M, .n = (uint32_t)N,
                   .k = (uint32_t)K, .batch = 1, .flops = 2 * M * N * K,
                   .bytes = 2 * (M * K + K * N + M * N)};
  t.sms_held = 16;
  double eff = g->gemm_eff * K / (K + g->gemm_k_half);
  double want = t.flops / (g->peak_flops[DTYPE_BF16] * 116 / 132 * eff) +
                g->launch_s;
  REL(cost_kernel(g, DTYPE_BF16, -1, &t, NULL), want, 1e-12);
  /* 8 x 33 = 264 tiles: two full waves on 132 SMs, three waves of which
   * the last is 32/116 full on 116, so 132/116 x 348/264 = 1.5x slower. */
  t.n = 128 * 33;
  t.flops = 2 * M * t.n * K;
  t.bytes = 2 * (M * K + K * t.n + M * t.n);
  double held = cost_kernel(g, DTYPE_BF16, -1, &t, NULL) - g->launch_s;
  t.sms_held = 0;
  double all = cost_kernel(g, DTYPE_BF16, -1, &t, NULL) - g->launch_s;
  REL(held / all, 1.5, 1e-12);
  catalog_free(cat);
}

/* ---- The schedules against their closed forms, on one DGX H100 ---- */

static struct cluster node;

/* One DGX H100 node, booted as the platform (engine_helpers.h). */
static void load_node(void) { load_dgx_h100_node(&node); }

static struct graph *tp8_graph(void)
{
  struct graph *g = graph_new(1);
  g->layout = (struct graph_layout){8, 1, 1, 1, 1, 1, {0, 1, 2, 3}, 0,
                                    {0, 0, 0}, 0, 0};
  return g;
}

static double replay(const struct graph *g)
{
  struct weft_err err = {0};
  struct engine_params ep;
  engine_params_default(&ep);
  struct engine_result res = {0};
  cr_assert_eq(engine_run(g, &node, &ep, &res, &err), 0, "%s", err.msg);
  engine_result_free(&res);
  return res.iteration_s;
}

/* The time of one task alone. */
static double alone(const struct task *t)
{
  struct graph *g = tp8_graph();
  struct task x = *t;
  x.chunk = 0;
  x.mb = 0;
  graph_add(g, 0, &x);
  double s = replay(g);
  graph_free(g);
  return s;
}

/* A context for TP 8 with SP over T tokens of hidden size h. */
static struct model tm;
static struct plan tpl;

static struct ctx make_ctx(struct graph *g, double T, double h)
{
  struct weft_err err = {0};
  cr_assert_eq(model_from_preset(&tm, "llama3-8b", &err), 0);
  plan_init(&tpl);
  tpl.tp = 8;
  tpl.sp = true;
  tpl.tp_overlap = TPO_TE;
  struct ctx c;
  memset(&c, 0, sizeof c);
  c.g = g;
  c.m = &tm;
  c.p = &tpl;
  c.e = 2;
  c.T = T;
  c.h = h;
  c.t = 8;
  c.last_compute = -1;
  return c;
}

/* The task `i` of the graph being built, alone. */
static double alone_i(const struct graph *g, long i)
{
  struct task t = g->prog[0].tasks[i];
  t.ndep = 0;
  return alone(&t);
}

Test(tpo, ring_exchange_schedule)
{
  load_node();
  /* Comm-bound and compute-bound cases: a step takes max(chunk, GEMM). */
  const double Ns[2] = {512, 16384};
  for (int k = 0; k < 2; k++) {
    struct graph *g = tp8_graph();
    struct ctx c = make_ctx(g, 8192, 8192);
    bld_tpo_ag_gemm(&c, PH_FWD, 0, 8192, Ns[k], 8192, NULL, 0);
    cr_assert_eq(g->prog[0].n, 8 + 7);
    double x = alone_i(g, 0), gm = alone_i(g, 1); /* chunk, GEMM piece */
    REL(g->prog[0].tasks[1].flops * 8, 2.0 * 8192 * Ns[k] * 8192, 1e-12);
    double want = gm + 7 * fmax(x, gm);
    REL(replay(g), want, 1e-6);
    graph_free(g);
  }
}

Test(tpo, pipelined_reduce_scatter_schedule)
{
  load_node();
  const double Ks[2] = {256, 8192};
  for (int k = 0; k < 2; k++) {
    struct graph *g = tp8_graph();
    struct ctx c = make_ctx(g, 8192, 8192);
    bld_tpo_gemm_rs(&c, PH_FWD, 0, TPO_PROJ, 8192, 8192, Ks[k]);
    cr_assert_eq(g->prog[0].n, 2 * 4);
    cr_assert_eq(g->prog[0].tasks[0].sms_held, 16);
    double gm = alone_i(g, 0), rs = alone_i(g, 1);
    double want = gm + rs + 3 * fmax(gm, rs);
    REL(replay(g), want, 1e-6);
    graph_free(g);
  }
}

Test(tpo, bulk_schedule)
{
  load_node();
  const double Ks[2] = {128, 4096};
  for (int k = 0; k < 2; k++) {
    struct graph *g = tp8_graph();
    struct ctx c = make_ctx(g, 8192, 8192);
    bld_tpo_bulk(&c, 0, TPO_QKV, 8192, 8192, Ks[k]);
    /* all-gather, data gradient, reduce-scatter, weight gradient */
    cr_assert_eq(g->prog[0].n, 4);
    double ag = alone_i(g, 0), d = alone_i(g, 1), rs = alone_i(g, 2),
           w = alone_i(g, 3);
    double want = fmax(ag, d) + fmax(w, rs);
    REL(replay(g), want, 1e-6);
    graph_free(g);
  }
}

/* PyTorch's matmul-reduce-scatter: TP GEMMs of M / TP rows, each but the
 * last pulled by its owner, then the sum of the TP partials. */
Test(tpo, torch_matmul_reduce_scatter_schedule)
{
  load_node();
  const double Ks[2] = {256, 8192};
  for (int k = 0; k < 2; k++) {
    struct graph *g = tp8_graph();
    struct ctx c = make_ctx(g, 8192, 8192);
    tpl.tp_overlap = TPO_TORCH;
    bld_tpo_gemm_rs(&c, PH_FWD, 0, TPO_PROJ, 8192, 8192, Ks[k]);
    /* 7 x (GEMM, transfer), own GEMM, sum */
    cr_assert_eq(g->prog[0].n, 2 * 7 + 2);
    double gm = alone_i(g, 0), x = alone_i(g, 1), sum = alone_i(g, 15);
    REL(g->prog[0].tasks[1].bytes * 8, 2.0 * 8192 * 8192, 1e-12);
    REL(g->prog[0].tasks[15].bytes, 2.0 * 8192 * 8192 / 8 * 9, 1e-12);
    REL(replay(g), gm + 7 * fmax(gm, x) + sum, 1e-6);
    graph_free(g);
  }
}

Test(tpo, torch_pieces_sum_to_the_unsplit_work)
{
  static const char *const kv[] = {"tp", "4", "sp", "yes", "global_batch",
                                   "1", "tp_comm_overlap", "torch", NULL};
  struct model m;
  struct plan p, q;
  struct graph *off = build_layers("llama3-8b", 2, 4, plan_kv(false), &m, &p);
  struct graph *on = build_layers("llama3-8b", 2, 4, kv, &m, &q);
  double act = 2.0 * 8192 * 4096, t = 4;
  for (int ph = PH_FWD; ph <= PH_BWD; ph++) {
    REL(layer_sum(on, 0, 0, 1, ph, NULL), layer_sum(off, 0, 0, 1, ph, NULL),
        1e-12);
    /* two all-gathers and two reduce-scatters each way, each moving
     * (t - 1) / t of the activation per rank; no collective left */
    long n;
    REL(layer_sum(on, 1, CO_SENDRECV, 1, ph, &n), 4 * (t - 1) / t * act,
        1e-12);
    cr_assert_eq(n, 4 * (t - 1));
    cr_assert_eq(layer_sum(on, 1, CO_ALLGATHER, 1, ph, NULL) +
                 layer_sum(on, 1, CO_REDUCE_SCATTER, 1, ph, NULL), 0);
  }
  graph_free(off);
  graph_free(on);
}

/* The held SMs travel in the graph file's peer column of a kernel. */
Test(tpo, graph_file_keeps_held_sms)
{
  struct graph *g = fp8_graph("te");
  struct weft_err err = {0};
  char path[] = "/tmp/weft-tpo-XXXXXX";
  close(mkstemp(path));
  cr_assert_eq(graph_write(g, path, &err), 0, "%s", err.msg);
  struct graph *h = graph_read(path, &err);
  unlink(path);
  cr_assert(h, "%s", err.msg);
  cr_assert_eq(h->prog[0].n, g->prog[0].n);
  long held = 0;
  for (long i = 0; i < g->prog[0].n; i++) {
    cr_assert_eq(h->prog[0].tasks[i].peer, g->prog[0].tasks[i].peer);
    held += g->prog[0].tasks[i].kind == TK_KERNEL &&
            g->prog[0].tasks[i].sms_held == 16;
  }
  cr_assert_gt(held, 0);
  graph_free(g);
  graph_free(h);
}

/* TP 1 has nothing to overlap: the setting is accepted and changes
 * nothing (a software stack may set it for every plan). */
Test(tpo, tp1_is_a_no_op)
{
  static const char *const kv[] = {"global_batch", "1", "tp_comm_overlap",
                                   "nemo", NULL};
  static const char *const off[] = {"global_batch", "1", NULL};
  struct model m;
  struct plan p, q;
  struct graph *g = build_layers("llama3-8b", 2, 1, kv, &m, &p);
  struct graph *h = build_layers("llama3-8b", 2, 1, off, &m, &q);
  cr_assert_eq(g->prog[0].n, h->prog[0].n);
  cr_assert(memcmp(g->prog[0].tasks, h->prog[0].tasks,
                   (size_t)g->prog[0].n * sizeof *g->prog[0].tasks) == 0);
  graph_free(g);
  graph_free(h);
}
