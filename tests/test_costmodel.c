/*
 * test_costmodel.c - kernel times: roofline limits, shape-dependent
 * efficiency, measured tables and their interpolation.
 */
#include <criterion/criterion.h>
#include <string.h>
#include <math.h>
#include <stdio.h>
#include <unistd.h>

#include "workloads/costmodel.h"

static struct catalog *cat;
static const struct gpu_spec *a100;

static void setup(void)
{
  cat = catalog_builtin(NULL);
  a100 = catalog_gpu(cat, "A100-80GB");
}

static void teardown(void) { catalog_free(cat); }

TestSuite(costmodel, .init = setup, .fini = teardown);

static struct task gemm(double m, double n, double k)
{
  struct task t = {.kind = TK_KERNEL, .op = KK_GEMM, .m = (uint32_t)m,
                   .n = (uint32_t)n, .k = (uint32_t)k, .batch = 1,
                   .flops = 2 * m * n * k, .bytes = 2 * (m * k + k * n + m * n)};
  return t;
}

Test(costmodel, memory_bound_kernels_run_at_hbm_bandwidth)
{
  struct task t = {.kind = TK_KERNEL, .op = KK_ELEMWISE, .bytes = 1e9};
  double want = 1e9 / (2.039e12 * a100->mem_eff) + a100->launch_s;
  cr_assert_float_eq(cost_kernel(a100, DTYPE_BF16, -1, &t, NULL), want, 1e-15);
}

Test(costmodel, large_gemm_near_peak_small_gemm_far_below)
{
  /* 8192^3 fills 64 x 64 tiles = 4096 over 108 SMs: 38 waves, last partial. */
  struct task big = gemm(8192, 8192, 8192);
  double tiles = 64.0 * 64, waves = ceil(tiles / 108);
  double eff = a100->gemm_eff * tiles / (waves * 108) * 8192 / (8192 + 64.0);
  double want = big.flops / (312e12 * eff) + a100->launch_s;
  cr_assert_float_eq(cost_kernel(a100, DTYPE_BF16, -1, &big, NULL), want, 1e-15);
  double achieved = big.flops / cost_kernel(a100, DTYPE_BF16, -1, &big, NULL);
  cr_assert(achieved > 0.75 * 312e12 && achieved < 312e12);
  /* A decode-sized GEMM is memory-bound and far below peak. */
  struct task small = gemm(16, 4096, 4096);
  double a2 = small.flops / cost_kernel(a100, DTYPE_BF16, -1, &small, NULL);
  cr_assert_lt(a2, 0.1 * 312e12);
  /* One tile more than a full wave nearly halves the efficiency. */
  double e1 = cost_gemm_efficiency(a100, 128 * 108, 128, 4096);
  double e2 = cost_gemm_efficiency(a100, 128 * 109, 128, 4096);
  cr_assert_float_eq(e2 / e1, 109.0 / 216.0, 1e-12);
}

Test(costmodel, fp8_and_future_gpus_scale)
{
  const struct gpu_spec *h100 = catalog_gpu(cat, "H100-SXM");
  struct task t = gemm(16384, 16384, 16384);
  double bf = cost_kernel(h100, DTYPE_BF16, -1, &t, NULL) - h100->launch_s;
  double f8 = cost_kernel(h100, DTYPE_FP8, -1, &t, NULL) - h100->launch_s;
  /* A linear layer's GEMM: FP8's peak at FP8's ceiling and FP8's short-K
   * cost (k_half, costmodel.h). */
  double k = 16384;
  cr_assert_float_eq(bf / f8, h100->peak_flops[DTYPE_FP8] /
                                  h100->peak_flops[DTYPE_BF16] *
                                  h100->gemm_eff_fp8 / h100->gemm_eff *
                                  (k + h100->gemm_k_half) /
                                  (k + h100->gemm_k_half_fp8), 1e-9);
}

/* A short reduction costs a tile's fixed prologue and epilogue: k / (k +
 * k_half), FP8's k_half larger (the math per K-step is twice as fast); a
 * larger K is never slower per FLOP at fixed M and N. */
Test(costmodel, short_k_costs_more_in_fp8)
{
  const struct gpu_spec *h100 = catalog_gpu(cat, "H100-SXM");
  cr_assert_gt(h100->gemm_k_half_fp8, 2 * h100->gemm_k_half);
  for (int dt = DTYPE_BF16; dt <= DTYPE_FP8; dt += DTYPE_FP8 - DTYPE_BF16) {
    double kh = dt == DTYPE_FP8 ? h100->gemm_k_half_fp8 : h100->gemm_k_half;
    double e1 = cost_gemm_efficiency_in(h100, (enum dtype)dt, 8192, 8192, 1024);
    double e8 = cost_gemm_efficiency_in(h100, (enum dtype)dt, 8192, 8192, 8192);
    cr_assert_float_eq(e1 / e8, 1024 / (1024 + kh) * (8192 + kh) / 8192,
                       1e-12);
    double prev = 0;
    for (double kk = 64; kk <= 65536; kk *= 2) {
      double e = cost_gemm_efficiency_in(h100, (enum dtype)dt, 4096, 4096, kk);
      cr_assert_gt(e, prev);
      prev = e;
    }
  }
}

/* FP8 as Transformer Engine runs it: only the Transformer layers' linear
 * GEMMs compute in FP8; attention, batched GEMMs (unfused attention), the
 * output layer (no layer) and memory-bound kernels keep BF16's time. */
Test(costmodel, fp8_speeds_only_linear_layers)
{
  const struct gpu_spec *h100 = catalog_gpu(cat, "H100-SXM");
  struct task lin = gemm(8192, 4096, 4096);
  lin.layer = 3;
  cr_assert_eq(cost_kernel_dtype(DTYPE_FP8, &lin), DTYPE_FP8);
  cr_assert_lt(cost_kernel(h100, DTYPE_FP8, -1, &lin, NULL),
               0.7 * cost_kernel(h100, DTYPE_BF16, -1, &lin, NULL));
  struct task out = gemm(8192, 16032, 4096);
  out.layer = -1;
  struct task bmm = gemm(2048, 2048, 128);
  bmm.layer = 3;
  bmm.batch = 32;
  struct task attn = {.kind = TK_KERNEL, .op = KK_ATTN, .layer = 3, .m = 4096,
                      .n = 4096, .k = 128, .batch = 32,
                      .flops = 4.0 * 32 * 4096 * 4096 * 128};
  struct task attn_b = attn;
  attn_b.op = KK_ATTN_BWD;
  attn_b.flops *= 2;
  struct task norm = {.kind = TK_KERNEL, .op = KK_NORM, .layer = 3,
                      .bytes = 1e9};
  const struct task *same[] = {&out, &bmm, &attn, &attn_b, &norm};
  for (size_t i = 0; i < sizeof same / sizeof *same; i++) {
    cr_assert_eq(cost_kernel_dtype(DTYPE_FP8, same[i]), DTYPE_BF16, "%zu", i);
    cr_assert_eq(cost_kernel(h100, DTYPE_FP8, -1, same[i], NULL),
                 cost_kernel(h100, DTYPE_BF16, -1, same[i], NULL), "%zu", i);
  }
  cr_assert_eq(cost_kernel_dtype(DTYPE_BF16, &attn), DTYPE_BF16);
  cr_assert_eq(cost_kernel_dtype(DTYPE_FP32, &lin), DTYPE_FP32);
}

static struct cost_table *table(const char *rows)
{
  char path[] = "/tmp/weft-table-XXXXXX";
  int fd = mkstemp(path);
  FILE *f = fdopen(fd, "w");
  fprintf(f, "# measured on nothing: a test table\nkernel,shape,dtype,gpu,time\n%s",
          rows);
  fclose(f);
  struct weft_err err = {0};
  struct cost_table *t = cost_table_read(path, &err);
  cr_assert(t, "%s", err.msg);
  unlink(path);
  return t;
}

Test(costmodel, measured_table_overrides_and_interpolates)
{
  struct cost_table *tab = table(
      "gemm,1024x1024x1024,bf16,A100-80GB,20us\n"
      "gemm,4096x4096x4096,bf16,A100-80GB,640us\n");
  cr_assert_eq(cost_table_rows(tab), 2);
  struct task t = gemm(1024, 1024, 1024);
  cr_assert_float_eq(cost_kernel(a100, DTYPE_BF16, -1, &t, tab), 20e-6, 1e-18);
  /* Halfway in log(FLOPs) between the rates 107.4 and 214.7 TFLOP/s. */
  struct task mid = gemm(2048, 2048, 2048);
  double r1 = 2.0 * 1024 * 1024 * 1024 / 20e-6;
  double r2 = 2.0 * 4096.0 * 4096 * 4096 / 640e-6;
  double rate = sqrt(r1 * r2);
  cr_assert_float_eq(cost_kernel(a100, DTYPE_BF16, -1, &mid, tab),
                     mid.flops / rate, 1e-15);
  /* Beyond the ends: the nearest measured rate. */
  struct task huge = gemm(16384, 16384, 16384);
  cr_assert_float_eq(cost_kernel(a100, DTYPE_BF16, -1, &huge, tab),
                     huge.flops / r2, 1e-12);
  /* Another GPU or dtype: the model. */
  struct task o = gemm(1024, 1024, 1024);
  cr_assert(fabs(cost_kernel(a100, DTYPE_FP32, -1, &o, tab) - 20e-6) > 1e-6);
  cost_table_free(tab);
}

static void bad_table_n(const char *body, size_t len,
                        const char *msg_after_line)
{
  char path[] = "/tmp/weft-badtable-XXXXXX";
  int fd = mkstemp(path);
  FILE *f = fdopen(fd, "w");
  fwrite(body, 1, len, f);
  fclose(f);
  struct weft_err err = {0};
  cr_assert_null(cost_table_read(path, &err));
  char want[512];
  snprintf(want, sizeof want, "%s%s", path, msg_after_line);
  cr_assert_str_eq(err.msg, want);
  unlink(path);
}

static void bad_table(const char *body, const char *msg_after_line)
{
  bad_table_n(body, strlen(body), msg_after_line);
}

Test(costmodel, bad_tables)
{
  bad_table("k,s,d,g,t\n", ":1: expected the header 'kernel,shape,dtype,gpu,time'");
  bad_table("kernel,shape,dtype,gpu,time\ngemm,1x2,bf16,A100,1us\n",
            ":2: shape '1x2' is not AxBxC with positive integers");
  bad_table("kernel,shape,dtype,gpu,time\nconv,1x2x3,bf16,A100,1us\n",
            ":2: unknown kernel 'conv'; expected gemm, attn or attn_bwd");
  bad_table("kernel,shape,dtype,gpu,time\ngemm,1x2x3,bf16,A100,12\n",
            ":2: time: '12' has no unit; expected a time such as 0.35us");
  bad_table("kernel,shape,dtype,gpu,time\ngemm,1x2x3,int3,A100,1us\n",
            ":2: unknown dtype 'int3'");
  bad_table("kernel,shape,dtype,gpu,time\ngemm,1x2x3,bf16,A100\n",
            ":2: expected 5 fields, got 4");
  bad_table("", ":0: empty table");
  /* Bounded input: a NUL byte, an endless line. */
  static const char nul[] = "kernel,shape,dtype,gpu,time\ngemm\0,1x2x3";
  bad_table_n(nul, sizeof nul - 1, ":2: NUL byte: not a text file");
  char line[1200];
  memset(line, 'x', sizeof line - 1);
  line[sizeof line - 1] = '\0';
  bad_table(line, ":1: line longer than 1023 bytes");
}

/* A device that never ends (issue 11: this read until memory ran out). */
Test(costmodel, endless_input_refused)
{
  struct weft_err err = {0};
  cr_assert_null(cost_table_read("/dev/zero", &err));
  cr_assert_str_eq(err.msg, "/dev/zero:1: NUL byte: not a text file");
}

/* A directory opens for reading; its read fails: say what it is. */
Test(costmodel, directory_refused)
{
  struct weft_err err = {0};
  cr_assert_null(cost_table_read("/", &err));
  cr_assert_str_eq(err.msg, "/: is a directory");
}

/* Memory-bound families at their share of HBM bandwidth where the catalog
 * gives one (measured on Hopper, the same fractions assumed elsewhere),
 * mem_eff otherwise. */
Test(costmodel, memory_bound_families)
{
  const struct gpu_spec *h100 = catalog_gpu(cat, "H100-SXM");
  struct task t = {.kind = TK_KERNEL, .op = KK_NORM, .phase = PH_FWD,
                   .bytes = 1e9};
  cr_assert_eq(cost_mem_efficiency(h100, &t), h100->norm_eff);
  cr_assert_float_eq(cost_kernel(h100, DTYPE_BF16, -1, &t, NULL),
                     1e9 / (3.35e12 * 0.592) + h100->launch_s, 1e-15);
  t.phase = PH_BWD;
  cr_assert_eq(cost_mem_efficiency(h100, &t), h100->norm_bwd_eff);
  t.op = KK_LOSS;
  cr_assert_eq(cost_mem_efficiency(h100, &t), h100->loss_bwd_eff);
  cr_assert_float_eq(h100->loss_bwd_eff, 0.367, 1e-12);
  t.phase = PH_FWD;
  cr_assert_eq(cost_mem_efficiency(h100, &t), h100->loss_eff);
  cr_assert_float_eq(h100->loss_eff, 0.571, 1e-12);
  struct gpu_spec one = *h100; /* no backward share: the forward's */
  one.loss_bwd_eff = 0;
  t.phase = PH_BWD;
  cr_assert_eq(cost_mem_efficiency(&one, &t), h100->loss_eff);
  t.op = KK_OPTIM;
  cr_assert_eq(cost_mem_efficiency(h100, &t), h100->optim_eff);
  t.op = KK_ELEMWISE;
  cr_assert_eq(cost_mem_efficiency(h100, &t), h100->mem_eff);
  t.op = KK_NORM;
  cr_assert_eq(cost_mem_efficiency(a100, &t), 0.376);
  struct gpu_spec bare = *a100;
  bare.norm_eff = bare.norm_bwd_eff = 0;
  cr_assert_eq(cost_mem_efficiency(&bare, &t), a100->mem_eff);
}

/* A fused attention task as the builder makes it: Megatron's count, 4 b s^2
 * d forward, twice that backward. */
static struct task attn(bool bwd, double bh, double s, double d)
{
  double f = 4 * bh * s * s * d;
  struct task t = {.kind = TK_KERNEL, .op = bwd ? KK_ATTN_BWD : KK_ATTN,
                   .m = (uint32_t)s, .n = (uint32_t)s, .k = (uint32_t)d,
                   .batch = (uint32_t)bh, .flops = bwd ? 2 * f : f,
                   .bytes = 8 * bh * s * d};
  return t;
}

/* The closed form of costmodel.h: the kernel does half the full count
 * under the causal mask, the backward 2.5x the forward's, at
 * peak * eff * g(d) * s/(s+seq_half) * s/(s+causal_seq). */
Test(costmodel, attention_closed_form_and_causal_half)
{
  const struct gpu_spec *h = catalog_gpu(cat, "H100-SXM");
  cr_assert_eq(h->attn_default, AK_CUDNN);
  const struct attn_dir *f = &h->attn[AK_CUDNN].fwd, *b = &h->attn[AK_CUDNN].bwd;
  double s = 4096, d = 128, bh = 128, peak = 989.4e12;
  struct task tf = attn(false, bh, s, d), tb = attn(true, bh, s, d);
  double rf = peak * f->eff * s / (s + f->seq_half) * s / (s + f->causal_seq);
  double rb = peak * b->eff * s / (s + b->seq_half) * s / (s + b->causal_seq);
  cr_assert_float_eq(cost_kernel(h, DTYPE_BF16, -1, &tf, NULL),
                     tf.flops / 2 / rf + h->launch_s, 1e-12);
  cr_assert_float_eq(cost_kernel(h, DTYPE_BF16, -1, &tb, NULL),
                     2.5 * tf.flops / 2 / rb + h->launch_s, 1e-12);
  /* Head dim 64 sits at d64 of the 128 rate; 96 halfway in log2. */
  double r128 = cost_attn_rate(h, -1, false, s, 128, false);
  cr_assert_float_eq(cost_attn_rate(h, -1, false, s, 64, false) / r128,
                     f->d64, 1e-12);
  double g96 = f->d64 + (1 - f->d64) * (log2(96) - 6);
  cr_assert_float_eq(cost_attn_rate(h, -1, false, s, 96, false) / r128, g96,
                     1e-12);
}

/* A GPU without BF16 (V100: FP16 tensor cores) runs attention at its FP16
 * rate; with neither, FP32's; never at a rate of 0. */
Test(costmodel, attention_without_bf16_uses_fp16_then_fp32)
{
  struct gpu_spec g = *a100;
  double r = cost_attn_rate(&g, -1, false, 2048, 128, true);
  g.peak_flops[DTYPE_BF16] = 0;
  g.peak_flops[DTYPE_FP16] = 125e12;
  cr_assert_float_eq(cost_attn_rate(&g, -1, false, 2048, 128, true),
                     r * 125e12 / a100->peak_flops[DTYPE_BF16], 1e-9 * r);
  g.peak_flops[DTYPE_FP16] = 0;
  cr_assert_float_eq(cost_attn_rate(&g, -1, false, 2048, 128, true),
                     r * a100->peak_flops[DTYPE_FP32] /
                         a100->peak_flops[DTYPE_BF16], 1e-9 * r);
}

Test(costmodel, attention_kernels_differ_and_rise_with_sequence)
{
  const struct gpu_spec *h = catalog_gpu(cat, "H100-SXM");
  struct task t = attn(false, 64, 8192, 128);
  double f2 = cost_kernel(h, DTYPE_BF16, AK_FLASH2, &t, NULL);
  double f3 = cost_kernel(h, DTYPE_BF16, AK_FLASH3, &t, NULL);
  double cu = cost_kernel(h, DTYPE_BF16, AK_CUDNN, &t, NULL);
  /* FA3 and cuDNN's wgmma kernels run at about 1.7x the sm80 FA2 port on
   * Hopper (kernels.csv and our H100 rows agree). */
  cr_assert_gt(f2, 1.5 * f3);
  cr_assert_gt(f2, 1.5 * cu);
  cr_assert_eq(cost_kernel(h, DTYPE_BF16, -1, &t, NULL), cu);
  /* A GPU without the kernel asked for (A100 has no FA3): its default. */
  cr_assert_eq(cost_attn_kernel(a100, AK_FLASH3), -1);
  cr_assert_eq(cost_attn_kernel(a100, -1), AK_FLASH2);
  /* Throughput never falls as the sequence grows, in every direction. */
  for (int k = 0; k < AK_COUNT; k++) {
    if (!h->attn[k].have)
      continue;
    for (int bwd = 0; bwd < 2; bwd++)
      for (double s = 256; s < 65536; s *= 2)
        for (int c = 0; c < 2; c++)
          cr_assert_leq(cost_attn_rate(h, k, bwd, s, 128, c),
                        cost_attn_rate(h, k, bwd, 2 * s, 128, c));
  }
  /* Causal costs about half the full count's time (a bit more: diagonal
   * tiles); the generic model of a GPU with no fitted kernel too. */
  const struct gpu_spec *b = catalog_gpu(cat, "B200");
  cr_assert_eq(b->attn_default, -1);
  struct task tb = attn(false, 64, 8192, 128);
  double full = tb.flops / (b->peak_flops[DTYPE_BF16] * b->attn_eff);
  double t_b = cost_kernel(b, DTYPE_BF16, -1, &tb, NULL) - b->launch_s;
  cr_assert_float_eq(t_b, full / 2 * (8192.0 + 128) / 8192 * (8192.0 + 128) / 8192,
                     1e-12);
}

/* A grouped GEMM tiles each group on its own: one group is the dense GEMM,
 * eight groups of 64 rows fill as many tiles as 1024 rows, the wave counts
 * every group's tiles, and it computes in FP8 when the linear layers do. */
Test(costmodel, grouped_gemm_tiles_each_group)
{
  const struct gpu_spec *h100 = catalog_gpu(cat, "H100-SXM");
  struct task d = gemm(4096, 4096, 7168);
  d.layer = 0;
  struct task g1 = d;
  g1.op = KK_GGEMM;
  cr_assert_float_eq(cost_kernel(h100, DTYPE_BF16, -1, &g1, NULL),
                     cost_kernel(h100, DTYPE_BF16, -1, &d, NULL), 1e-15);
  cr_assert_float_eq(cost_ggemm_efficiency_in(h100, DTYPE_BF16, 8, 64, 4096,
                                              7168),
                     cost_gemm_efficiency_in(h100, DTYPE_BF16, 1024, 4096,
                                             7168), 1e-15);
  /* 8 groups of 192 rows: 8 x 2 x 32 = 512 tiles, 4 waves on 132 SMs. */
  double tiles = 8 * 2 * 32.0, waves = ceil(tiles / 132);
  cr_assert_float_eq(cost_ggemm_efficiency_in(h100, DTYPE_BF16, 8, 192, 4096,
                                              7168),
                     h100->gemm_eff * tiles / (waves * 132) * 7168 /
                         (7168 + h100->gemm_k_half), 1e-15);
  cr_assert_eq(cost_kernel_dtype(DTYPE_FP8, &g1), DTYPE_FP8);
  struct task g8 = g1;
  g8.batch = 8;
  g8.m = 512;
  g8.flops = 2.0 * 8 * 512 * 4096 * 7168;
  double want = g8.flops / (h100->peak_flops[DTYPE_FP8] *
                            cost_ggemm_efficiency_in(h100, DTYPE_FP8, 8, 512,
                                                     4096, 7168)) +
                h100->launch_s;
  cr_assert_float_eq(cost_kernel(h100, DTYPE_FP8, -1, &g8, NULL), want,
                     1e-15);
}
