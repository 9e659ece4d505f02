/*
 * test_compress.c - gradient compression (plan.h, builder.c): the bytes
 * each method puts on the wire against their closed forms, the error
 * feedback's memory, the settings it is refused with, and on the engine:
 * with communication free every method is slower than plain DDP by
 * exactly its encoding and decoding time.
 */
#include <criterion/criterion.h>
#include <math.h>

#include "platforms/catalog.h"
#include "sim/engine.h"
#include "sim/platload.h"
#include "workloads/accounting.h"
#include "workloads/costmodel.h"
#include "tests/plan_helpers.h"

#define REL(a, b) cr_assert(fabs((double)(a) - (double)(b)) <= 1e-9 * fabs((double)(b)) + 1e-6, "%.17g != %.17g", (double)(a), (double)(b))

/* One bucket for all gradients of GPT 1.7B (TP 1) on 8 data-parallel
 * ranks, FP32 gradients: the data-parallel collectives of `method`. */
static struct graph *one_bucket(const char *method, struct model *m,
                                struct plan *p)
{
  return build("gpt-1.7b", 8, KV("global_batch", "8", "bucket", "100GB",
               "grad_dtype", "fp32", "compress", method), m, p);
}

/* GPT 1.7B's matrices: sum of rows + cols over every weight matrix
 * (QKV, projection, FC1, FC2 per layer; the tied embedding and the
 * position embedding). */
static double rows_plus_cols(const struct model *m)
{
  double h = (double)m->hidden, f = (double)m->ffn;
  double layer = (h + 3 * h) + (h + h) + (h + f) + (f + h);
  return (double)m->layers * layer + ((double)m->vocab + h) +
         ((double)m->seq + h);
}

static double matrix_elems(const struct model *m)
{
  double h = (double)m->hidden, f = (double)m->ffn;
  return (double)m->layers * (3 * h * h + h * h + 2 * h * f) +
         (double)m->vocab * h + (double)m->seq * h;
}

Test(compress, bytes_per_method_equal_their_closed_forms)
{
  struct model m;
  struct plan p;
  const double N = 8, e = 4;
  struct graph *g = one_bucket("none", &m, &p);
  double n = stage_params_rank(&m, &p, 0); /* elements per rank */
  long cnt;
  REL(coll_sum(g, 0, CO_ALLREDUCE, GK_DP, -1, -2, -2, &cnt), e * n);
  graph_free(g);
  /* fp16: one all-reduce of 2 bytes per element. */
  g = one_bucket("fp16", &m, &p);
  REL(coll_sum(g, 0, CO_ALLREDUCE, GK_DP, -1, -2, -2, NULL), 2 * n);
  graph_free(g);
  /* PowerSGD of rank 4: r x (rows + cols) per matrix in two all-reduces
   * (P, then Q), the vectors whole. */
  g = one_bucket("powersgd:4", &m, &p);
  REL(coll_sum(g, 0, CO_ALLREDUCE, GK_DP, -1, -2, -2, &cnt),
      e * 4 * rows_plus_cols(&m) + e * (n - matrix_elems(&m)));
  cr_assert_eq(cnt, 2);
  graph_free(g);
  /* Top-K and Random-K 1 %: k values and 4-byte indices from each rank,
   * all-gathered. */
  const char *sparse[] = {"topk:0.01", "randomk:0.01"};
  for (int i = 0; i < 2; i++) {
    g = one_bucket(sparse[i], &m, &p);
    REL(coll_sum(g, 0, CO_ALLGATHER, GK_DP, -1, -2, -2, NULL),
        N * ceil(0.01 * n) * (e + 4));
    REL(coll_sum(g, 0, CO_ALLREDUCE, GK_DP, -1, -2, -2, NULL), 0);
    graph_free(g);
  }
  /* signSGD: n / 8 bytes per rank. */
  g = one_bucket("sign", &m, &p);
  REL(coll_sum(g, 0, CO_ALLGATHER, GK_DP, -1, -2, -2, NULL), N * n / 8);
  graph_free(g);
  /* QSGD with 4 bits: n / 2 bytes and a 4-byte scale per rank. */
  g = one_bucket("qsgd:4", &m, &p);
  REL(coll_sum(g, 0, CO_ALLGATHER, GK_DP, -1, -2, -2, NULL),
      N * (n * 4 / 8 + 4));
  graph_free(g);
}

Test(compress, error_feedback_keeps_one_gradient_copy)
{
  struct model m;
  struct plan p, q;
  struct graph *g = one_bucket("none", &m, &p);
  graph_free(g);
  struct memory a, b;
  memory_per_gpu(&m, &p, 80e9, &a);
  const char *ef[] = {"powersgd:2", "topk:0.05", "randomk:0.05", "efsign"};
  for (int i = 0; i < 4; i++) {
    g = one_bucket(ef[i], &m, &q);
    graph_free(g);
    memory_per_gpu(&m, &q, 80e9, &b);
    REL(b.grads - a.grads, 4 * stage_params_rank(&m, &p, 0));
  }
  const char *plain[] = {"fp16", "sign", "qsgd"};
  for (int i = 0; i < 3; i++) {
    g = one_bucket(plain[i], &m, &q);
    graph_free(g);
    memory_per_gpu(&m, &q, 80e9, &b);
    REL(b.grads, a.grads);
  }
}

Test(compress, refused_settings)
{
  refused("gpt-1.7b", KV("compress", "zip", "global_batch", "8"), 8,
          "--compress: 'zip' is not none, fp16, powersgd, topk, randomk, "
          "sign, efsign or qsgd");
  refused("gpt-1.7b", KV("compress", "topk:2", "global_batch", "8"), 8,
          "--compress: 'topk:2': the fraction kept is between 0 and 1");
  refused("gpt-1.7b", KV("compress", "powersgd:0.5", "global_batch", "8"), 8,
          "--compress: 'powersgd:0.5': the rank is an integer from 1 to "
          "1024");
  refused("gpt-1.7b", KV("compress", "sign:1", "global_batch", "8"), 8,
          "--compress: 'sign' takes no parameter");
  refused("gpt-1.7b", KV("compress", "fp16", "zero", "1", "global_batch",
          "8"), 8, "--compress: gradient compression applies to DDP's "
          "all-reduced buckets; this plan shards them (ZeRO or FSDP)");
  refused("mixtral-8x7b", KV("compress", "powersgd:4", "tp", "8", "ep", "2",
          "global_batch", "8"), 16, "--compress: gradient compression of MoE "
          "experts is not modelled");
}

/* Iteration time of GPT 1.7B with 4 layers on two one-GPU nodes with free
 * communication, and its compression kernels' time. */
static double free_comm_time(const char *method, double *codec)
{
  const struct cluster *c = two_nodes_loaded();
  struct model m;
  struct plan p;
  struct graph *g = build_layers("gpt-1.7b", 4, 2, KV("global_batch", "4",
                                 "bucket", "50MB", "compress", method), &m, &p);
  *codec = 0;
  for (long i = 0; i < g->prog[0].n; i++) {
    const struct task *t = &g->prog[0].tasks[i];
    if (t->kind == TK_KERNEL && t->op == KK_COMPRESS)
      *codec += cost_kernel(&c->gpu, m.dtype, -1, t, NULL);
  }
  double t = replay_s(g, c, true);
  graph_free(g);
  return t;
}

Test(compress, free_network_costs_exactly_the_codec)
{
  double none_codec, base = free_comm_time("none", &none_codec);
  cr_assert_eq(none_codec, 0);
  const char *methods[] = {"fp16", "powersgd:2", "topk:0.01", "randomk:0.01",
                           "sign", "efsign", "qsgd:8"};
  for (int i = 0; i < 7; i++) {
    double codec, t = free_comm_time(methods[i], &codec);
    cr_assert_gt(codec, 0, "%s", methods[i]);
    cr_assert(fabs(t - base - codec) <= 1e-9 * base, "%s: %.9g s more, "
              "codec %.9g s", methods[i], t - base, codec);
  }
}
