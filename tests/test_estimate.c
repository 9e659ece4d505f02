/*
 * test_estimate.c - the fast closed-form estimate of a plan (weft plan's
 * ranking) against the task graph the builder makes of the whole job:
 * its kernels summed by the cost model, pipelines by the 1F1B bubble,
 * gradient reductions by the closed form's alpha-beta times.
 */
#include <criterion/criterion.h>
#include <math.h>

#include "platforms/catalog.h"
#include "workloads/accounting.h"
#include "workloads/closedform.h"
#include "workloads/costmodel.h"
#include "workloads/estimate.h"
#include "tests/plan_helpers.h"

#define NEAR(a, b) cr_assert(fabs((double)(a) - (double)(b)) <= 1e-9 * fabs((double)(b)), "%.17g != %.17g", (double)(a), (double)(b))

static struct catalog *cat;


/* Kernel seconds of stage `s`'s program: the forward-backward phases and
 * the optimizer step. */
static void stage_kernels(const struct graph *g, long s,
                          const struct cluster *c, enum dtype dt,
                          double *work, double *optim)
{
  *work = *optim = 0;
  const struct program *pr = &g->prog[s];
  for (long i = 0; i < pr->n; i++) {
    const struct task *t = &pr->tasks[i];
    if (t->kind != TK_KERNEL)
      continue;
    double x = cost_kernel(&c->gpu, dt, -1, t, NULL);
    *(t->phase == PH_OPT ? optim : work) += x;
  }
}

Test(estimate, one_gpu_is_the_sum_of_its_kernels)
{
  struct cluster c = one_gpu_nodes(&cat, 1);
  struct model m;
  struct plan p;
  struct graph *g = build("gpt-1.7b", 1, KV("micro_batch", "2",
                          "global_batch", "8", "recompute", "full"), &m, &p);
  double work, optim;
  stage_kernels(g, 0, &c, m.dtype, &work, &optim);
  struct estimate e;
  struct weft_err err = {0};
  cr_assert_eq(estimate_plan(&m, &p, &c, m.dtype, -1, &e, &err), 0, "%s",
               err.msg);
  NEAR(e.iteration_s, work + optim);
  NEAR(e.compute_s, work + optim);
  cr_assert_eq(e.exposed_s, 0);
  cr_assert_eq(e.bubble_s, 0);
  graph_free(g);
  catalog_free(cat);
}

Test(estimate, pipeline_is_the_1f1b_bubble_over_the_busiest_stage)
{
  /* Four stages of 6 layers on four one-GPU nodes, 8 micro-batches,
   * transfers that do not block: (m + pp - 1) t_max, the transfers through
   * the pipeline and back, then the slowest optimizer step. */
  struct cluster c = one_gpu_nodes(&cat, 4);
  struct model m;
  struct plan p;
  struct graph *g = build("gpt-1.7b", 4, KV("pp", "4", "global_batch", "8"),
                          &m, &p);
  double t_max = 0, o_max = 0;
  for (long s = 0; s < 4; s++) {
    double work, optim;
    stage_kernels(g, s, &c, m.dtype, &work, &optim);
    t_max = fmax(t_max, work / 8);
    o_max = fmax(o_max, optim);
  }
  double P = closed_form_send_s(&c, 0, 1, build_p2p_bytes(&m, &p));
  cr_assert_gt(P, 0);
  struct estimate e;
  struct weft_err err = {0};
  cr_assert_eq(estimate_plan(&m, &p, &c, m.dtype, -1, &e, &err), 0, "%s",
               err.msg);
  NEAR(e.bubble_s, 3 * t_max + 2 * 3 * P);
  NEAR(e.iteration_s, 8 * t_max + 3 * t_max + 6 * P + o_max);
  /* Blocking transfers: each micro-batch of a stage pays a send forward
   * and one backward, and the bubble no longer carries them apart. */
  cr_assert_eq(plan_set(&p, PK_P2P, "blocking", "t", &err), 0, "%s", err.msg);
  cr_assert_eq(estimate_plan(&m, &p, &c, m.dtype, -1, &e, &err), 0);
  NEAR(e.iteration_s, 11 * (t_max + 2 * P) + o_max);
  graph_free(g);
  catalog_free(cat);
}

Test(estimate, data_parallel_reduction_after_the_backward)
{
  /* Two one-GPU nodes, gradients all-reduced after the pipeline (no
   * overlap): compute, then one all-reduce of every gradient. */
  struct cluster c = one_gpu_nodes(&cat, 2);
  struct model m;
  struct plan p;
  struct graph *g = build("gpt-1.7b", 2, KV("global_batch", "4",
                          "overlap_grad", "no"), &m, &p);
  double work, optim;
  stage_kernels(g, 0, &c, m.dtype, &work, &optim);
  struct graph_layout l;
  plan_layout(&p, &l);
  double ar = closed_form_coll_s(&c, &l, 0, GK_DP, CO_ALLREDUCE,
                                 stage_params_rank(&m, &p, 0) *
                                     dtype_bytes(p.grad_dtype));
  cr_assert_gt(ar, 0);
  struct estimate e;
  struct weft_err err = {0};
  cr_assert_eq(estimate_plan(&m, &p, &c, m.dtype, -1, &e, &err), 0, "%s",
               err.msg);
  NEAR(e.iteration_s, work + ar + optim);
  NEAR(e.exposed_s, ar);
  /* Overlapped: hidden behind the last micro-batch's backward through
   * the layers as far as it lasts, and never less than the last bucket's
   * all-reduce. */
  cr_assert_eq(plan_set(&p, PK_OVERLAP_GRAD, "yes", "t", &err), 0);
  cr_assert_eq(estimate_plan(&m, &p, &c, m.dtype, -1, &e, &err), 0);
  double last = closed_form_coll_s(&c, &l, 0, GK_DP, CO_ALLREDUCE,
                                   p.bucket_bytes);
  double bwd = 0;
  const struct program *pr = &g->prog[0];
  for (long i = 0; i < pr->n; i++) {
    const struct task *t = &pr->tasks[i];
    if (t->kind == TK_KERNEL && t->layer >= 0 &&
        t->mb == p.microbatches - 1 &&
        (t->phase == PH_BWD || t->phase == PH_RECOMP))
      bwd += cost_kernel(&c.gpu, m.dtype, -1, t, NULL);
  }
  cr_assert_gt(ar - bwd, last); /* this case: the backward is too short */
  NEAR(e.iteration_s, work + (ar - bwd) + optim);
  graph_free(g);
  catalog_free(cat);
}
