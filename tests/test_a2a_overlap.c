/*
 * test_a2a_overlap.c - Megatron-Core's combined 1F1B, the MoE all-to-all
 * overlap (plan.h, a2a_overlap; schedule.c, schedule_build_combined;
 * builder_pipe.c, bld_combined_pass): the order and its warm-up against
 * Megatron's formulas, the same kernels, collectives and bytes with and
 * without it, the warm-up and cool-down passes left alone, a combined
 * step's time on two nodes against the max-plus closed form of its
 * sub-blocks, and the refused combinations.
 */
#include <criterion/criterion.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "tests/plan_helpers.h"
#include "workloads/accounting.h"
#include "workloads/schedule.h"

#define REL(a, b, tol) cr_assert(fabs((double)(a) - (double)(b)) <= (tol) * fabs((double)(b)) + 1e-12, "%.17g != %.17g", (double)(a), (double)(b))

/* One GPU per node has nothing to share a node with: EP 2 crosses them. */
#define MOE_KV(...) KV("ep", "2", "moe_dispatcher", "alltoall", __VA_ARGS__)

/* PP 1 (combined_1f1b_schedule_for_no_pipelining): F0 alone, then forward
 * i + 1 with backward i as one step, then the last backward. */
Test(a2a_overlap, order_without_pipeline)
{
  long n;
  struct sched_op *ops = schedule_build_combined(SCHED_1F1B, 1, 4, 1, 0, 0,
                                                 &n);
  cr_assert_eq(n, 8);
  const int mb[8] = {0, 1, 0, 2, 1, 3, 2, 3};
  const bool fwd[8] = {1, 1, 0, 1, 0, 1, 0, 0}, mg[8] = {0, 1, 0, 1, 0, 1, 0, 0};
  for (int i = 0; i < 8; i++) {
    cr_assert_eq(ops[i].mb, mb[i], "op %d", i);
    cr_assert_eq(ops[i].fwd, fwd[i], "op %d", i);
    cr_assert_eq(ops[i].merged, mg[i], "op %d", i);
  }
  free(ops);
}

/* Interleaved: Megatron's warm-up plus one (get_pp_rank_microbatches),
 * 2 (p - s - 1) + (v - 1) g + 1, and with m == p too (no legacy rule);
 * the rest the plain order's virtual micro-batches, each steady forward
 * merged with the backward after it. */
Test(a2a_overlap, interleaved_warmup_plus_one)
{
  const long p = 2, v = 2;
  for (long m = 2; m <= 6; m += 2)
    for (long s = 0; s < p; s++) {
      long n, n0;
      struct sched_op *ops = schedule_build_combined(SCHED_INTERLEAVED, p, m,
                                                     v, 0, s, &n);
      struct sched_op *plain = schedule_build_group(SCHED_INTERLEAVED, p, m,
                                                    v, 0, s, &n0);
      cr_assert_eq(n, 2 * m * v);
      long warm = 2 * (p - s - 1) + (v - 1) * p + 1, total = m * v;
      warm = warm < total ? warm : total;
      for (long i = 0; i < warm; i++)
        cr_assert(ops[i].fwd && !ops[i].merged, "m %ld stage %ld op %ld", m,
                  s, i);
      long f = warm, b = 0;
      for (long i = warm; i < n; i++) {
        bool steady = f < total && (i - warm) % 2 == 0;
        cr_assert_eq(ops[i].fwd, steady, "m %ld stage %ld op %ld", m, s, i);
        cr_assert_eq(ops[i].merged, steady);
        cr_assert(!(ops[i].fwd && ops[i].mb == ops[i + 1].mb &&
                    ops[i].chunk == ops[i + 1].chunk),
                  "a step's passes are of one virtual micro-batch");
        if (steady)
          f++;
        else
          b++;
      }
      cr_assert_eq(f, total);
      cr_assert_eq(b, total);
      /* the same virtual micro-batches in the same order, per direction */
      for (int dir = 0; dir < 2; dir++) {
        long a = 0, c = 0;
        for (long k = 0; k < total; k++) {
          while (ops[a].fwd != (dir == 0))
            a++;
          while (plain[c].fwd != (dir == 0))
            c++;
          cr_assert_eq(ops[a].mb, plain[c].mb);
          cr_assert_eq(ops[a].chunk, plain[c].chunk);
          a++;
          c++;
        }
      }
      free(ops);
      free(plain);
    }
}

/* A task without its stream and dependencies, for comparing the two
 * graphs as multisets. */
struct key {
  int kind, op, phase, group, chunk, mb, layer;
  double m, n, k, batch, flops, bytes;
};

static int key_cmp(const void *a, const void *b)
{
  return memcmp(a, b, sizeof(struct key));
}

static struct key *keys_of(const struct graph *g, long s, long *n)
{
  const struct program *pr = &g->prog[s];
  struct key *k = calloc((size_t)pr->n, sizeof *k);
  for (long i = 0; i < pr->n; i++) {
    const struct task *t = &pr->tasks[i];
    memset(&k[i], 0, sizeof k[i]);
    k[i] = (struct key){t->kind, t->op, t->phase,
                        t->kind == TK_COLL ? t->group : t->role, t->chunk,
                        t->mb, t->layer, t->m, t->n, t->k, t->batch,
                        t->flops, t->bytes};
  }
  qsort(k, (size_t)pr->n, sizeof *k, key_cmp);
  *n = pr->n;
  return k;
}

/* The same kernels, collectives and transfers, FLOPs and bytes, with and
 * without the overlap: only their order and the all-to-alls' stream
 * change (interleaved over two stages, DeepEP and alltoall). */
Test(a2a_overlap, same_tasks_and_bytes)
{
  const char *disp[2] = {"alltoall", "deepep"};
  for (int d = 0; d < 2; d++) {
    struct model m1, m2;
    struct plan p1, p2;
    /* DeepEP over nodes of 4 GPUs: both its groups */
    const char *ng = d ? "moe_node_gpus" : "micro_batch", *nv = d ? "4" : "1";
    struct graph *g1 = build_layers("mixtral-8x7b", 4, 16, KV("pp", "2",
        "schedule", "interleaved:2", "ep", "8", "moe_dispatcher", disp[d],
        ng, nv, "global_batch", "32"), &m1, &p1);
    struct graph *g2 = build_layers("mixtral-8x7b", 4, 16, KV("pp", "2",
        "schedule", "interleaved:2", "ep", "8", "moe_dispatcher", disp[d],
        ng, nv, "global_batch", "32",
        "overlap_moe_expert_parallel_comm", "yes", "delay_wgrad_compute",
        d ? "yes" : "no"), &m2, &p2);
    cr_assert(!graph_equal(g1, g2));
    REL(graph_total_flops(g1, GRAPH_ALL_PHASES),
        graph_total_flops(g2, GRAPH_ALL_PHASES), 1e-12);
    for (long s = 0; s < 2; s++) {
      long n1, n2, ep = 0;
      struct key *k1 = keys_of(g1, s, &n1), *k2 = keys_of(g2, s, &n2);
      cr_assert_eq(n1, n2);
      cr_assert_eq(memcmp(k1, k2, (size_t)n1 * sizeof *k1), 0,
                   "stage %ld: the tasks differ", s);
      for (long i = 0; i < g2->prog[s].n; i++) {
        const struct task *t = &g2->prog[s].tasks[i];
        if (t->stream == ST_EP) {
          cr_assert_eq(t->op, CO_ALLTOALL);
          ep++;
        }
        cr_assert_neq(g1->prog[s].tasks[i].stream, ST_EP);
      }
      cr_assert_gt(ep, 0);
      free(k1);
      free(k2);
    }
    graph_free(g1);
    graph_free(g2);
  }
}

/* PP 1, 4 micro-batches: F0 runs alone, before everything else, and B3
 * after; their all-to-alls stay on the compute stream; every other pass
 * is in a combined step, its all-to-alls on ST_EP, each waiting for a
 * compute task of its own micro-batch. */
Test(a2a_overlap, warmup_and_cooldown_alone)
{
  struct model m;
  struct plan p;
  struct graph *g = build_layers("mixtral-8x7b", 2, 2, MOE_KV(
                                 "global_batch", "8"), &m, &p);
  cr_assert_eq(p.microbatches, 4);
  graph_free(g);
  g = build_layers("mixtral-8x7b", 2, 2, MOE_KV("global_batch", "8",
                   "overlap_moe_expert_parallel_comm", "yes"), &m, &p);
  const struct program *pr = &g->prog[0];
  long last_f0 = -1, first_other = -1, first_b3 = -1, last_other = -1;
  for (long i = 0; i < pr->n; i++) {
    const struct task *t = &pr->tasks[i];
    if (t->mb < 0)
      continue;
    bool f0 = t->mb == 0 && t->phase == PH_FWD;
    bool b3 = t->mb == 3 && t->phase == PH_BWD;
    if (f0)
      last_f0 = i;
    else if (b3 && first_b3 < 0)
      first_b3 = i;
    else if (!b3) {
      if (first_other < 0)
        first_other = i;
      last_other = i;
    }
    if (t->kind == TK_COLL && t->op == CO_ALLTOALL) {
      cr_assert_eq(t->stream, f0 || b3 ? ST_COMPUTE : ST_EP, "task %ld", i);
      if (t->stream == ST_EP && (i == 0 || pr->tasks[i - 1].stream != ST_EP)) {
        /* the run's first waits for its own micro-batch's compute */
        cr_assert_eq(t->ndep, 1);
        const struct task *on = &pr->tasks[pr->deps[t->dep0]];
        cr_assert_eq(on->stream, ST_COMPUTE);
        cr_assert_eq(on->mb, t->mb);
        cr_assert_eq(on->phase, t->phase);
      }
    }
  }
  cr_assert_lt(last_f0, first_other);
  cr_assert_lt(last_other, first_b3);
  graph_free(g);
}

/* ---- A combined step on the engine ---- */

struct times {
  double *s, *e;
};

static void on_task(void *ctx, long rank, long task, double s, double e)
{
  struct times *t = ctx;
  if (rank == 0) {
    t->s[task] = s;
    t->e[task] = e;
  }
}

/* g replayed on two nodes without contention, each task's start and end
 * into *tm (allocated here, freed by the caller); returns the iteration. */
static double replay_timed(const struct graph *g, struct times *tm)
{
  const struct cluster *c = two_nodes_loaded();
  long n = g->prog[0].n;
  tm->s = calloc((size_t)n, sizeof(double));
  tm->e = calloc((size_t)n, sizeof(double));
  struct engine_params ep;
  engine_params_default(&ep);
  ep.comm_contention = false;
  ep.on_task = on_task;
  ep.ctx = tm;
  struct engine_result res = {0};
  struct weft_err err = {0};
  cr_assert_eq(engine_run(g, c, &ep, &res, &err), 0, "%s", err.msg);
  double it = res.iteration_s;
  engine_result_free(&res);
  return it;
}

/* The pieces of one micro-batch's pass in a combined step, in program
 * order: the layer's compute runs and all-to-all runs alternately (c0,
 * a0, c1, a1, c2), their durations summed, and of c the weight-gradient
 * GEMMs' (wg); pre and post, the layer -1 tasks before and after the
 * layer's (the embedding, the loss, its backward). */
struct chain {
  double pre, post, c[3], wg[3], a[2], a_start[2];
  int nc, na;
};

static void chain_of(const struct program *pr, const struct times *tm,
                     int mb, int phase, struct chain *ch)
{
  memset(ch, 0, sizeof *ch);
  int st = -1;
  bool seen_layer = false;
  for (long i = 0; i < pr->n; i++) {
    const struct task *t = &pr->tasks[i];
    if (t->mb != mb || t->phase != phase || t->stream == ST_PP_SEND ||
        t->stream == ST_PP_RECV)
      continue;
    double d = tm->e[i] - tm->s[i];
    bool ep = t->stream == ST_EP;
    if (t->layer < 0) {
      *(seen_layer ? &ch->post : &ch->pre) += d;
      continue;
    }
    seen_layer = true;
    if (st < 0 || ep != (st == 1)) {
      st = ep;
      if (ep)
        ch->a_start[ch->na++] = tm->s[i];
      else
        ch->nc++;
    }
    if (ep) {
      ch->a[ch->na - 1] += d;
      continue;
    }
    ch->c[ch->nc - 1] += d;
    if (t->kind == TK_KERNEL && t->role >> 6 == GP_WGRAD)
      ch->wg[ch->nc - 1] += d;
  }
}

/* Mixtral cut to one layer on two one-GPU nodes, EP 2, PP 1, two
 * micro-batches: F0, then F1 with B0 as one step, then B1.  Without
 * contention every kernel and all-to-all takes its own time, and the
 * step's end follows from the order builder_pipe.c gives (comm: B's
 * combine backward, F's dispatch, B's dispatch backward, F's combine;
 * compute: F's attention and router, B's experts, F's experts, B's
 * attention), each sub-block starting when its stream is free and its
 * micro-batch's previous sub-block has ended. */
/* The step's end by the order builder_pipe.c gives; `delay`: the
 * backward's experts' weight gradients after their data gradients, the
 * dispatch's backward waiting for the latter only. */
static void closed_form(const char *delay)
{
  struct model m;
  struct plan p;
  struct graph *g = build_layers("mixtral-8x7b", 1, 2, MOE_KV(
                                 "global_batch", "4", "seq", "2048",
                                 "overlap_grad", "no",
                                 "overlap_moe_expert_parallel_comm", "yes",
                                 "delay_wgrad_compute", delay), &m, &p);
  cr_assert_eq(p.microbatches, 2);
  const struct program *pr = &g->prog[0];
  struct times tm;
  replay_timed(g, &tm);
  struct chain F, B;
  chain_of(pr, &tm, 1, PH_FWD, &F);
  chain_of(pr, &tm, 0, PH_BWD, &B);
  cr_assert_eq(F.nc, 3);
  cr_assert_eq(F.na, 2);
  cr_assert_eq(B.nc, 3);
  cr_assert_eq(B.na, 2);
  cr_assert_gt(F.a[0], 0);
  cr_assert_gt(B.wg[1], 0);
  /* the step starts with F1's first task and ends with B0's last */
  double t0 = INFINITY, end = 0;
  for (long i = 0; i < pr->n; i++) {
    const struct task *t = &pr->tasks[i];
    bool in = (t->mb == 1 && t->phase == PH_FWD) ||
              (t->mb == 0 && t->phase == PH_BWD);
    if (!in || t->stream == ST_PP_SEND || t->stream == ST_PP_RECV)
      continue;
    t0 = fmin(t0, tm.s[i]);
    end = fmax(end, tm.e[i]);
  }
  bool dl = strcmp(delay, "yes") == 0;
  /* compute: F's embedding, B's loss backward, B's residual and combine
   * permutation (B.c0), then the nodes */
  double T1 = t0 + F.pre + B.pre + B.c[0];
  double comb_bwd = T1 + B.a[0];
  double attn_f = T1 + F.c[0];
  double mlp_bwd_d = fmax(attn_f, comb_bwd) + B.c[1] - (dl ? B.wg[1] : 0);
  double mlp_bwd = mlp_bwd_d + (dl ? B.wg[1] : 0);
  double disp_f = fmax(comb_bwd, attn_f) + F.a[0];
  double disp_bwd = fmax(disp_f, dl ? mlp_bwd_d : mlp_bwd) + B.a[1];
  /* each all-to-all starts when its stream and its micro-batch allow */
  REL(B.a_start[0], T1, 1e-9);
  REL(F.a_start[0], fmax(comb_bwd, attn_f), 1e-9);
  REL(B.a_start[1], disp_bwd - B.a[1], 1e-9);
  double mlp_f = fmax(mlp_bwd, disp_f) + F.c[1];
  double comb_f = fmax(disp_bwd, mlp_f) + F.a[1];
  double attn_bwd = fmax(mlp_f, disp_bwd) + B.c[2];
  /* then F's combine kernels and loss (waiting for its combine), and B's
   * embedding */
  double want = fmax(attn_bwd, comb_f) + F.c[2] + F.post + B.post;
  REL(end, want, 1e-9);
  /* and the overlap hid something */
  double serial = F.pre + B.pre + B.c[0] + B.c[1] + B.c[2] + F.c[0] +
                  F.c[1] + F.c[2] + F.post + B.post + F.a[0] + F.a[1] +
                  B.a[0] + B.a[1];
  cr_assert_lt(end - t0, serial - 0.5 * fmin(F.a[0], B.a[0]));
  free(tm.s);
  free(tm.e);
  graph_free(g);
}

/* Mixtral cut to one layer on two one-GPU nodes, EP 2, PP 1, two
 * micro-batches: F0, then F1 with B0 as one step, then B1.  Without
 * contention every kernel and all-to-all takes its own time, and the
 * step's end follows from the order builder_pipe.c gives (comm: B's
 * combine backward, F's dispatch, B's dispatch backward, F's combine;
 * compute: F's attention and router, B's experts, F's experts, B's
 * attention), each sub-block starting when its stream is free and its
 * micro-batch's previous sub-block has ended: sums of max(compute of one,
 * all-to-all of the other). */
Test(a2a_overlap, combined_step_closed_form)
{
  closed_form("no");
}

Test(a2a_overlap, delayed_wgrad_closed_form)
{
  closed_form("yes");
}

Test(a2a_overlap, refused)
{
  const char *o = "--overlap_moe_expert_parallel_comm";
  char msg[512];
  snprintf(msg, sizeof msg, "%s: the all-to-all overlap needs expert "
           "parallelism (EP > 1; this plan has EP 1), as Megatron-Core "
           "asserts", o);
  refused("mixtral-8x7b", KV("moe_dispatcher", "alltoall", "global_batch",
          "8", "overlap_moe_expert_parallel_comm", "yes"), 8, msg);
  snprintf(msg, sizeof msg, "%s: Megatron-Core overlaps the alltoall and "
           "flex dispatchers only: add --moe-dispatcher alltoall or deepep "
           "(this plan has basic)", o);
  refused("mixtral-8x7b", KV("ep", "2", "global_batch", "8",
          "overlap_moe_expert_parallel_comm", "yes"), 8, msg);
  snprintf(msg, sizeof msg, "%s: Megatron-Core refuses full recomputation "
           "with the all-to-all overlap", o);
  refused("mixtral-8x7b", KV("ep", "2", "moe_dispatcher", "alltoall",
          "recompute", "full", "global_batch", "8",
          "overlap_moe_expert_parallel_comm", "yes"), 8, msg);
  snprintf(msg, sizeof msg, "%s: with PP > 1 Megatron-Core runs the "
           "all-to-all overlap on the interleaved schedule only (--schedule "
           "interleaved:V)", o);
  refused("mixtral-8x7b", KV("ep", "2", "pp", "2", "moe_dispatcher",
          "alltoall", "global_batch", "8",
          "overlap_moe_expert_parallel_comm", "yes"), 8, msg);
  snprintf(msg, sizeof msg, "%s: the all-to-all overlap runs on 1F1B's "
           "order (--schedule 1f1b)", o);
  refused("mixtral-8x7b", KV("ep", "2", "schedule", "gpipe",
          "moe_dispatcher", "alltoall", "global_batch", "8",
          "overlap_moe_expert_parallel_comm", "yes"), 8, msg);
  snprintf(msg, sizeof msg, "%s: the all-to-all overlap with ZeRO-3/FSDP is "
           "not built yet", o);
  refused("mixtral-8x7b", KV("ep", "2", "zero", "3", "moe_dispatcher",
          "alltoall", "global_batch", "8",
          "overlap_moe_expert_parallel_comm", "yes"), 8, msg);
  snprintf(msg, sizeof msg, "%s: the all-to-all overlap is Megatron-Core's;"
           " its selective recomputation is the attention core (--selective "
           "attention)", o);
  refused("mixtral-8x7b", KV("ep", "2", "recompute", "selective",
          "selective", "ops", "moe_dispatcher", "alltoall", "global_batch",
          "8", "overlap_moe_expert_parallel_comm", "yes"), 8, msg);
  refused("mixtral-8x7b", KV("ep", "2", "moe_dispatcher", "alltoall",
          "global_batch", "8", "delay_wgrad_compute", "yes"), 8,
          "--delay_wgrad_compute: delay_wgrad_compute needs "
          "overlap_moe_expert_parallel_comm, as Megatron-Core asserts");
  snprintf(msg, sizeof msg, "%s: 'maybe' is not yes or no", o);
  refused("mixtral-8x7b", KV("overlap_moe_expert_parallel_comm", "maybe"),
          8, msg);
}

/* The extra warm-up forward holds one more micro-batch's activations on
 * a stage; off, the graph is the one without the setting. */
Test(a2a_overlap, memory_and_default)
{
  struct model m;
  struct plan p, q;
  struct graph *g1 = build_layers("mixtral-8x7b", 2, 2, MOE_KV(
                                  "global_batch", "8"), &m, &p);
  struct graph *g2 = build_layers("mixtral-8x7b", 2, 2, MOE_KV(
                                  "global_batch", "8",
                                  "overlap_moe_expert_parallel_comm", "no"),
                                  &m, &q);
  cr_assert(graph_equal(g1, g2));
  graph_free(g1);
  graph_free(g2);
  struct memory a, b;
  memory_per_gpu(&m, &p, 80e9, &a);
  q.a2a_overlap = true;
  memory_per_gpu(&m, &q, 80e9, &b);
  cr_assert_eq(a.peak_inflight, 1);
  cr_assert_eq(b.peak_inflight, 2);
  cr_assert_gt(b.activations, a.activations);
}

/* The MTP layer in a combined step (model_chunk_schedule_plan.py: the mtp
 * module's layers appended to the chunk's, post_process last): DeepSeek-V3
 * cut to 2 layers (the first dense) with its MTP layer, EP 2 on two GPUs,
 * 2 micro-batches (F0, F1 with B0, B1).  In the step the MTP layer's
 * all-to-alls run on ST_EP like any layer's (F0's and B1's, alone, stay
 * on the compute stream); F1's output layers (the MTP's, then the
 * model's) run after its MTP layer begins, B0's both before its MTP
 * layer's backward; the all-to-alls and their bytes are those of the
 * passes built alone. */
Test(a2a_overlap, mtp_layer_in_the_step)
{
  struct model m;
  struct plan p;
  const char *ov[] = {"no", "yes"};
  double bytes[2] = {0, 0};
  long n_a2a[2] = {0, 0};
  for (int v = 0; v < 2; v++) {
    struct graph *g = build_layers("deepseek-v3", 2, 2, MOE_KV(
        "global_batch", "4", "dense_layers", "1", "mtp_layers", "1",
        "seq", "1024", "overlap_moe_expert_parallel_comm", ov[v]), &m, &p);
    cr_assert_eq(p.microbatches, 2);
    const struct program *pr = &g->prog[0];
    long mtp_f = -1, head_f = -1, head_b = -1, mtp_b = -1, ep_mtp = 0;
    for (long i = 0; i < pr->n; i++) {
      const struct task *t = &pr->tasks[i];
      bool f1 = t->mb == 1 && t->phase == PH_FWD;
      bool b0 = t->mb == 0 && t->phase == PH_BWD;
      if (t->kind == TK_COLL && t->op == CO_ALLTOALL) {
        bytes[v] += t->bytes;
        n_a2a[v]++;
        if (t->layer == 2 && (f1 || b0)) {
          cr_assert_eq(t->stream, v ? ST_EP : ST_COMPUTE);
          ep_mtp++;
        } else if (v && t->layer == 2) {
          cr_assert_eq(t->stream, ST_COMPUTE);
        }
      }
      if (t->kind != TK_KERNEL)
        continue;
      if (f1 && t->layer == 2 && mtp_f < 0)
        mtp_f = i;
      if (b0 && t->layer == 2 && mtp_b < 0)
        mtp_b = i;
      bool lm = t->op == KK_GEMM && t->role &&
                (t->role & 63) == (graph_role("lm_head", false, GP_FWD) & 63);
      if (lm && f1 && head_f < 0)
        head_f = i;
      if (lm && b0)
        head_b = i;
    }
    /* tokens and probabilities, tokens back; each way */
    cr_assert_eq(ep_mtp, 3 * 2);
    /* F1: the MTP layer before the first output layer (its own); B0: the
     * last output layer's backward (the MTP's) before the MTP layer's */
    if (v) {
      cr_assert_gt(head_f, mtp_f);
      cr_assert_lt(head_b, mtp_b);
    }
    graph_free(g);
  }
  cr_assert_eq(n_a2a[0], n_a2a[1]);
  REL(bytes[0], bytes[1], 1e-12);
}

/* The forward's combine kernels (unpermutation, residual), which Megatron
 * runs on the communication stream after the combine's all-to-all, come
 * before the next pair's combine backward on that stream: in the step of
 * Mixtral cut to 2 layers (F1 with B0), F1's layer 0 ends before B0's
 * layer 0 (the second pair's backward) begins. */
Test(a2a_overlap, combine_kernels_before_the_next_pair)
{
  struct model m;
  struct plan p;
  struct graph *g = build_layers("mixtral-8x7b", 2, 2, MOE_KV(
      "global_batch", "4", "overlap_moe_expert_parallel_comm", "yes"), &m,
      &p);
  const struct program *pr = &g->prog[0];
  long f_end = -1, b_begin = -1;
  for (long i = 0; i < pr->n; i++) {
    const struct task *t = &pr->tasks[i];
    if (t->layer != 0)
      continue;
    if (t->mb == 1 && t->phase == PH_FWD)
      f_end = i;
    if (t->mb == 0 && t->phase == PH_BWD && b_begin < 0)
      b_begin = i;
  }
  cr_assert(f_end >= 0 && b_begin >= 0);
  cr_assert_lt(f_end, b_begin);
  graph_free(g);
}

/* ---- --moe-shared-expert-overlap (builder_moe.c, shx_*) ---- */

/* Mixtral cut to one layer with a shared expert of 14336 (TP 1: no TP
 * collective of its own) on two one-GPU nodes, EP 2, alltoall, no
 * contention.  Forward: the tokens' all-to-all and the shared FC1 start
 * together when the permutation ends; the probabilities' all-to-all right
 * after the tokens'; the sort (the next compute) at the later of the
 * activation's end and the all-to-alls'.  The combine's all-to-all and
 * the shared FC2 start together; the unpermutation at the later of their
 * ends; the add right after it.  Without the option the same kernels and
 * all-to-alls, all on the compute stream, and a longer iteration. */
Test(a2a_overlap, shared_experts_beside_the_dispatch)
{
  struct model m;
  struct plan p;
  double it[2];
  for (int v = 0; v < 2; v++) {
    struct graph *g = build_layers("mixtral-8x7b", 1, 2, MOE_KV(
        "global_batch", "2", "seq", "2048", "shared_ffn", "14336",
        "overlap_grad", "no", "moe_shared_expert_overlap",
        v ? "yes" : "no"), &m, &p);
    const struct program *pr = &g->prog[0];
    struct times tm;
    it[v] = replay_timed(g, &tm);
    /* layer 0's forward, in program order: its EP all-to-alls and the
     * compute tasks around them */
    long a2a[3], na = 0;
    for (long i = 0; i < pr->n; i++) {
      const struct task *t = &pr->tasks[i];
      if (t->layer == 0 && t->phase == PH_FWD && t->kind == TK_COLL &&
          t->op == CO_ALLTOALL) {
        cr_assert_eq(t->stream, v ? ST_EP : ST_COMPUTE);
        if (na < 3)
          a2a[na] = i;
        na++;
      }
    }
    cr_assert_eq(na, 3);
    if (v) {
      const struct task *tk = pr->tasks;
      long perm = a2a[0] - 1, fc1 = a2a[0] + 1, act = a2a[0] + 2,
           sort = a2a[1] + 1;
      cr_assert_eq(a2a[1], a2a[0] + 3);
      cr_assert_eq(tk[fc1].op, KK_GEMM);
      cr_assert_eq(tk[fc1].n, 2 * 14336);
      cr_assert_eq(tk[act].op, KK_ELEMWISE);
      REL(tm.s[a2a[0]], tm.e[perm], 1e-12);
      REL(tm.s[fc1], tm.e[perm], 1e-12);
      REL(tm.s[a2a[1]], tm.e[a2a[0]], 1e-12);
      REL(tm.s[sort], fmax(tm.e[act], tm.e[a2a[1]]), 1e-12);
      /* the combine: its all-to-all, FC2 beside it, the unpermutation,
       * the add */
      long fc2 = a2a[2] + 1, unperm = a2a[2] + 2, add = a2a[2] + 3;
      cr_assert_eq(tk[fc2].op, KK_GEMM);
      cr_assert_eq(tk[fc2].n, 4096);
      cr_assert_eq(tk[fc2].k, 14336);
      REL(tm.s[fc2], tm.s[a2a[2]], 1e-12);
      REL(tm.s[unperm], fmax(tm.e[fc2], tm.e[a2a[2]]), 1e-12);
      REL(tm.s[add], tm.e[unperm], 1e-12);
      REL(tk[add].bytes, 3 * 2 * 2048.0 * 4096, 1e-12);
    }
    free(tm.s);
    free(tm.e);
    graph_free(g);
  }
  cr_assert_lt(it[1], it[0]);
}

Test(a2a_overlap, shared_overlap_refused)
{
  refused("mixtral-8x7b", KV("ep", "2", "moe_shared_expert_overlap", "yes",
                             "global_batch", "4"), 2,
          "--moe_shared_expert_overlap: Megatron-Core overlaps the shared "
          "experts with the alltoall and flex dispatchers only: add "
          "--moe-dispatcher alltoall or deepep (this plan has basic)");
  refused("mixtral-8x7b", KV("ep", "2", "moe_dispatcher", "allgather",
                             "moe_shared_expert_overlap", "yes",
                             "global_batch", "4"), 2,
          "--moe_shared_expert_overlap: Megatron-Core overlaps the shared "
          "experts with the alltoall and flex dispatchers only: add "
          "--moe-dispatcher alltoall or deepep (this plan has allgather)");
  refused("mixtral-8x7b", KV("ep", "2", "moe_dispatcher", "alltoall",
                             "moe_shared_expert_overlap", "yes",
                             "overlap_moe_expert_parallel_comm", "yes",
                             "global_batch", "4"), 2,
          "--moe_shared_expert_overlap: Megatron-Core refuses the shared "
          "experts' overlap with overlap_moe_expert_parallel_comm");
}
