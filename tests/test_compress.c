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
#include "workloads/layer.h"
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

/* The compression hook's steps of a graph: per KK_COMPRESS task its
 * kernels (batch, 1 when 0), host operations (its issue and the extra
 * ones: kernels - 1 + views), host syncs, bytes and elements selected by
 * a one-block torch.topk. */
struct codec_sum {
  double launches, host_ops, bytes, select;
  long tasks, syncs, sync_launches;
};

static struct codec_sum codec_of(const struct graph *g)
{
  struct codec_sum s = {0};
  const struct program *pr = &g->prog[0];
  for (long i = 0; i < pr->n; i++) {
    const struct task *t = &pr->tasks[i];
    if (t->kind != TK_KERNEL || t->op != KK_COMPRESS)
      continue;
    uint32_t h = graph_host_of(pr, i);
    double k = t->batch > 1 ? t->batch : 1;
    s.tasks++;
    s.launches += k;
    s.host_ops += 1 + (double)(h & GRAPH_HOST_OPS);
    s.bytes += t->bytes;
    s.select += (double)t->m * 4294967296.0 + (double)t->k;
    if (h & GRAPH_HOST_SYNC) {
      s.syncs++;
      s.sync_launches += (long)k;
    }
  }
  return s;
}

/* GPT 1.7B's parameter tensors in one bucket: M matrices (QKV,
 * projection, FC1, FC2 per layer; word and position embeddings, the
 * output layer tied) and V others (the layer's vectors, the final norm's
 * weight and bias). */
static void tensors_of(const struct model *m, double *M, double *V)
{
  struct layer_desc d;
  layer_describe(m, &d);
  double vec = 0;
  for (int i = 0; i < d.nw; i++)
    if (!lweight_matrix(&d.w[i]))
      vec += d.w[i].tensors > 0 ? d.w[i].tensors : 1;
  *M = 4.0 * (double)m->layers + 2;
  *V = vec * (double)m->layers + 2;
}

/* PowerSGD's Gram-Schmidt bytes over `rows` rows of r columns. */
static double gs_bytes(double rows, double r, double e)
{
  return rows * e * (3 * r + 2 * (r - 1) + 3.5 * r * (r - 1));
}

Test(compress, powersgd_kernels_per_matrix_and_column)
{
  struct model m;
  struct plan p;
  const double e = 4;
  for (int r = 1; r <= 16; r *= 4) {
    char method[32];
    snprintf(method, sizeof method, "powersgd:%d", r);
    struct graph *g = one_bucket(method, &m, &p);
    double M, V;
    tensors_of(&m, &M, &V);
    cr_assert_eq(M, 4 * 24 + 2);
    struct codec_sum s = codec_of(g);
    double n = stage_params_rank(&m, &p, 0), rc = rows_plus_cols(&m);
    double mat = matrix_elems(&m), vec = n - mat;
    /* the hook, the middle step, the decoding and the error after the
     * host's torch.cuda.synchronize */
    cr_assert_eq(s.tasks, 4);
    /* Gram-Schmidt launches 7 r - 4 kernels per matrix, twice (Q, P);
     * one matmul per matrix three times; add, clone, cat; divide and V
     * copies; divide; the error */
    REL(s.launches, 2 * M * (7 * r - 4) + 3 * M + 3 + (1 + V) + 1 + 1);
    /* views: 2 T + 4 M + V (cat), 2 V (copies back), 2 r - 1 per matrix
     * per orthogonalization, M transposes twice */
    double views = 2 * (M + V) + 4 * M + V + 2 * V +
                   2 * M * (2 * r - 1) + 2 * M;
    REL(s.host_ops, s.launches + views);
    cr_assert_eq(s.syncs, 1);
    cr_assert_eq(s.sync_launches, 1);
    REL(s.bytes, 5 * e * n + 2 * e * vec + 2 * gs_bytes(rc / 2, r, e) +
                 3 * e * (mat + r * rc) + 4 * e * vec + e * r * rc +
                 3 * e * n);
    REL(s.select, 0);
    graph_free(g);
  }
}

Test(compress, sign_and_topk_kernels_per_rank)
{
  struct model m;
  struct plan p;
  const double N = 8, e = 4;
  struct graph *g = one_bucket("sign", &m, &p);
  double n = stage_params_rank(&m, &p, 0);
  struct codec_sum s = codec_of(g);
  /* packing 5; N copies out of the all-gather, 5 per rank unpacking,
   * N - 1 sums, the sign */
  REL(s.launches, 5 + N + 5 * N + (N - 1) + 1);
  REL(s.host_ops, s.launches + 2 + 4 * N);
  REL(s.bytes, 5 * e * n + 8 * n + n / 8 + 2 * N * n / 8 +
               N * ((28 + e) * n + n / 8) + (N - 1) * 3 * e * n +
               2 * e * n);
  cr_assert_eq(s.syncs, 0);
  graph_free(g);
  g = one_bucket("topk:0.01", &m, &p);
  s = codec_of(g);
  double k = ceil(0.01 * n);
  REL(s.launches, 6 + 2 * N + 1 + 2 * N);
  REL(s.select, n);
  REL(s.bytes, 3 * e * n + 2 * e * n + k * (8 + 2 * e) + 2 * e * n +
               k * (8 + e) + 2 * N * k * (e + 4) + n * e +
               N * k * (8 + 5 * e));
  graph_free(g);
  g = one_bucket("randomk:0.01", &m, &p);
  s = codec_of(g);
  REL(s.launches, 5 + 2 * N + 1 + 2 * N);
  REL(s.select, 0);
  graph_free(g);
}

/* The cost model of a step: its bytes at HBM speed, a launch per kernel,
 * and a one-block torch.topk at 0.415 of one SM's share of HBM (17 passes
 * of 4 bytes per FP32 element). */
Test(compress, step_cost_closed_form)
{
  const struct cluster *c = two_nodes_loaded();
  const struct gpu_spec *g = &c->gpu;
  struct task t = {.kind = TK_KERNEL, .op = KK_COMPRESS, .bytes = 1e8,
                   .batch = 100};
  double mem = 1e8 / (g->hbm_bw_Bps * g->mem_eff);
  REL(cost_kernel(g, DTYPE_FP32, -1, &t, NULL), mem + 100 * g->launch_s);
  t.batch = 0;
  REL(cost_kernel(g, DTYPE_FP32, -1, &t, NULL), mem + g->launch_s);
  t.k = 2000000;
  t.n = 68;
  double sel = 2e6 * 68 / (g->hbm_bw_Bps / g->sms * 0.415);
  REL(cost_kernel(g, DTYPE_FP32, -1, &t, NULL), mem + sel + g->launch_s);
  t.m = 1; /* 2^32 more */
  REL(cost_kernel(g, DTYPE_FP32, -1, &t, NULL),
      mem + sel * (1 + 4294967296.0 / 2e6) + g->launch_s);
}
