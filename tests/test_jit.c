/*
 * test_jit.c - fusion=jit, Megatron-LM 2021's GPT layer on PyTorch 1.8
 * (builder_layer.c, jit): the memory-bound bytes and kernels it adds to a
 * layer against their closed form, per TP degree and attention kernel;
 * nothing added to a model without biases; the megatron-2021 stack sets
 * it.
 */
#include <criterion/criterion.h>
#include <math.h>
#include <string.h>

#include "workloads/costmodel.h"
#include "workloads/stack.h"
#include "tests/plan_helpers.h"

/* Memory-bound kernels of layer 0, micro-batch 0, in `phase`: count and
 * bytes. */
static void membound(const struct graph *g, int phase, long *n, double *bytes)
{
  *n = 0;
  *bytes = 0;
  const struct program *pr = &g->prog[0];
  for (long i = 0; i < pr->n; i++) {
    const struct task *t = &pr->tasks[i];
    if (t->kind == TK_KERNEL && t->layer == 0 && t->phase == phase &&
        t->mb == 0 && (t->op == KK_NORM || t->op == KK_ELEMWISE)) {
      (*n)++;
      *bytes += t->bytes;
    }
  }
}

/* gpt-1.7b cut to 2 layers on `tp` GPUs, micro-batch 2: layer 0's
 * memory-bound kernels and bytes, forward and backward; *Bh and *S: the score
 * rows' B = b heads / t and their length S. */
static void layer0(const char *tp, const char *attn, const char *fusion,
                   long n[2], double b[2], double *E, double *t, double *Bh,
                   double *S)
{
  struct model m;
  struct plan p;
  struct graph *g = build_layers(
      "gpt-1.7b", 2, atol(tp),
      KV("tp", tp, "micro_batch", "2", "global_batch", "2", "dtype", "fp16",
         "attention", attn, "fusion", fusion),
      &m, &p);
  *E = 2.0 * (double)m.seq * (double)m.hidden; /* T x h */
  *t = (double)p.tp;
  *Bh = 2.0 * (double)m.heads / *t;
  *S = (double)m.seq;
  membound(g, PH_FWD, &n[0], &b[0]);
  membound(g, PH_BWD, &n[1], &b[1]);
  graph_free(g);
}

/* Per layer, E = T x h, e = 2, f = 4h, TP t (no SP): forward, the QKV
 * bias add 2e x 3E/t, the context copy 2e E/t (unfused attention), the
 * two dropout masks 2 x E; backward, baddbmm's two alpha scalings
 * 2 x 2e E/t and the split's cat 2e x 3E/t (unfused), the QKV bias sum
 * e x 3E/t, GeLU's bias sum e x 4E/t, and per residual the fused dropout
 * backward (2e + 1) E and the bias sum e E.  The causal softmax (unfused)
 * reads only the B S (S + 1) / 2 unmasked scores, forward once and
 * backward twice, instead of all B S^2: e B S (S - 1) / 2 and
 * e B S (S - 1) fewer bytes. */
Test(jit, gpt_layer_adds_its_closed_form)
{
  const char *tps[] = {"1", "2"};
  const char *attns[] = {"unfused", "flash"};
  for (int i = 0; i < 2; i++)
    for (int a = 0; a < 2; a++) {
      long nf[2], nj[2];
      double bf[2], bj[2], E, t, Bh, S, e = 2;
      layer0(tps[i], attns[a], "fused", nf, bf, &E, &t, &Bh, &S);
      layer0(tps[i], attns[a], "jit", nj, bj, &E, &t, &Bh, &S);
      bool un = a == 0;
      double masked = e * Bh * S * (S - 1) / 2;
      double fwd = 2 * e * 3 * E / t + (un ? 2 * e * E / t - masked : 0) +
                   2 * E;
      double bwd = (un ? 2 * 2 * e * E / t + 2 * e * 3 * E / t - 2 * masked
                       : 0) +
                   e * 3 * E / t + e * 4 * E / t + 2 * ((2 * e + 1) + e) * E;
      cr_assert(fabs(bj[0] - bf[0] - fwd) <= 1e-9 * fabs(fwd),
                "tp %s %s fwd: %.17g added, want %.17g", tps[i], attns[a],
                bj[0] - bf[0], fwd);
      cr_assert(fabs(bj[1] - bf[1] - bwd) <= 1e-9 * fabs(bwd),
                "tp %s %s bwd: %.17g added, want %.17g", tps[i], attns[a],
                bj[1] - bf[1], bwd);
      cr_assert_eq(nj[0] - nf[0], un ? 2 : 1, "tp %s %s fwd kernels",
                   tps[i], attns[a]);
      cr_assert_eq(nj[1] - nf[1], un ? 9 : 6, "tp %s %s bwd kernels",
                   tps[i], attns[a]);
    }
}

/* A model without biases (Llama) gets nothing from jit. */
Test(jit, llama_layer_is_unchanged)
{
  struct model m;
  struct plan p;
  long n[2][2];
  double b[2][2];
  for (int j = 0; j < 2; j++) {
    struct graph *g = build_layers("llama3-8b", 2, 8,
                                   KV("global_batch", "8", "fusion",
                                      j ? "jit" : "fused"),
                                   &m, &p);
    membound(g, PH_FWD, &n[j][0], &b[j][0]);
    membound(g, PH_BWD, &n[j][1], &b[j][1]);
    graph_free(g);
  }
  for (int d = 0; d < 2; d++) {
    cr_assert_eq(n[0][d], n[1][d]);
    cr_assert_float_eq(b[0][d], b[1][d], 0);
  }
}

/* The megatron-2021 stack runs fusion=jit; the setting reads back. */
Test(jit, megatron_2021_stack_sets_it)
{
  struct plan p;
  struct weft_err err = {0};
  char v[64];
  plan_init(&p);
  cr_assert_eq(plan_set(&p, PK_STACK, "megatron-2021", "--stack", &err), 0,
               "%s", err.msg);
  plan_value_text(&p, PK_FUSION, v, sizeof v);
  cr_assert_str_eq(v, "jit");
  cr_assert(p.jit && !p.eager);
  plan_init(&p);
  cr_assert_neq(plan_set(&p, PK_FUSION, "torchscript", "--fusion", &err), 0);
  cr_assert(strstr(err.msg, "jit"), "%s", err.msg);
}

/* Megatron's causal softmax (a row-length-carrying element-wise task)
 * runs at the softmax family's measured fractions of HBM bandwidth,
 * 0.348 forward and recomputed, 0.461 backward (costmodel.c); a plain
 * element-wise task at the GPU's mem_eff. */
Test(jit, softmax_runs_at_its_measured_fraction)
{
  struct catalog *cat = catalog_builtin(NULL);
  cr_assert(cat);
  const struct gpu_spec *g = catalog_gpu(cat, "A100-80GB");
  cr_assert(g);
  const int phases[3] = {PH_FWD, PH_RECOMP, PH_BWD};
  const double eff[3] = {0.348, 0.348, 0.461};
  for (int i = 0; i < 3; i++) {
    struct task t = {.kind = TK_KERNEL, .op = KK_ELEMWISE,
                     .phase = (uint8_t)phases[i], .k = 2048, .bytes = 1e9};
    double want = 1e9 / (g->hbm_bw_Bps * eff[i]) + g->launch_s;
    double got = cost_kernel(g, DTYPE_FP16, -1, &t, NULL);
    cr_assert(fabs(got - want) <= 1e-12 * want, "phase %d: %.17g vs %.17g",
              phases[i], got, want);
    t.k = 0;
    want = 1e9 / (g->hbm_bw_Bps * g->mem_eff) + g->launch_s;
    got = cost_kernel(g, DTYPE_FP16, -1, &t, NULL);
    cr_assert(fabs(got - want) <= 1e-12 * want);
  }
  catalog_free(cat);
}
