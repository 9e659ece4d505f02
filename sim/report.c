/*
 * report.c - derived metrics of an iteration and their two printed forms
 * (report.h).  JSON field names are stable (DESIGN, section 4).
 */
#include "sim/report.h"

#include <math.h>

#include "sim/base/units.h"

void report_fill(struct report *out, const struct workload *w,
                 const struct cluster *c, const struct graph *g,
                 const struct engine_result *res, enum dtype dtype,
                 double sim_wall_s)
{
  struct report r = {.w = w, .c = c, .res = *res};
  memory_per_gpu(&w->model, &w->plan, c->gpu.hbm_bytes, &r.mem);
  r.gpus = (double)w->plan.gpus;
  double T = r.iteration_s = res->iteration_s;
  r.hw_flops_per_gpu = graph_total_flops(g, GRAPH_ALL_PHASES) / (T * r.gpus);
  r.model_flops_per_gpu =
      model_flops_per_iter(&w->model, w->plan.global_batch) / (T * r.gpus);
  r.peak_flops = c->gpu.peak_flops[dtype];
  r.tokens = g->tokens;
  r.tokens_per_s = g->tokens / T;
  r.energy_j = r.gpus * (c->gpu.idle_w * T +
                         (c->gpu.max_w - c->gpu.idle_w) * res->compute_s);
  r.sim_wall_s = sim_wall_s;
  const double *k = res->compute_by_kind_s;
  r.gemm_s = k[KK_GEMM];
  r.attention_s = k[KK_ATTN] + k[KK_ATTN_BWD];
  r.memory_bound_s = k[KK_NORM] + k[KK_ELEMWISE] + k[KK_EMBED] + k[KK_LOSS];
  r.optimizer_s = k[KK_OPTIM];
  *out = r;
}

void report_json_num(FILE *f, const char *sep, const char *key,
                     const char *fmt, double v)
{
  fprintf(f, "%s\"%s\": ", sep, key);
  if (isfinite(v))
    fprintf(f, fmt, v);
  else
    fputs("null", f);
}

void report_print_json(FILE *f, const struct report *r)
{
  const struct plan *p = &r->w->plan;
  const struct engine_result *res = &r->res;
  fprintf(f, "{\"model\": \"%s\", \"gpus\": %ld, \"tp\": %ld, \"pp\": %ld, "
          "\"dp\": %ld, \"cp\": %ld, \"ep\": %ld, \"zero\": %d",
          r->w->model.name, p->gpus, p->tp, p->pp, p->dp, p->cp, p->ep,
          p->zero);
  if (p->zero == 3)
    fprintf(f, ", \"shard_impl\": \"%s\"", shard_impl_name(p->shard_impl));
  const struct {
    const char *key, *fmt;
    double v;
  } nums[] = {
      {"iteration_time_s", "%.9g", r->iteration_s},
      {"tflops_per_gpu", "%.6g", r->hw_flops_per_gpu / 1e12},
      {"model_tflops_per_gpu", "%.6g", r->model_flops_per_gpu / 1e12},
      {"mfu", "%.6g", r->model_flops_per_gpu / r->peak_flops},
      {"tokens_per_s", "%.6g", r->tokens_per_s},
      {"compute_s", "%.9g", res->compute_s},
      {"compute_gemm_s", "%.9g", r->gemm_s},
      {"compute_attention_s", "%.9g", r->attention_s},
      {"compute_memory_bound_s", "%.9g", r->memory_bound_s},
      {"compute_optimizer_s", "%.9g", r->optimizer_s},
      {"overlapped_comm_s", "%.9g", res->overlapped_s},
      {"exposed_comm_s", "%.9g", res->exposed_s},
      {"idle_s", "%.9g", res->idle_s},
      {"memory_per_gpu_bytes", "%.0f", r->mem.total},
  };
  for (size_t i = 0; i < sizeof nums / sizeof *nums; i++)
    report_json_num(f, ", ", nums[i].key, nums[i].fmt, nums[i].v);
  fprintf(f, ", \"fits_in_memory\": %s", r->mem.fits ? "true" : "false");
  report_json_num(f, ", ", "gpu_energy_j", "%.6g", r->energy_j);
  report_json_num(f, ", ", "gpu_energy_per_token_j", "%.6g",
                  r->energy_j / r->tokens);
  fprintf(f, ", \"kernels\": %ld, \"flows\": %ld", res->kernels, res->flows);
  report_json_num(f, ", ", "sim_wall_s", "%.3f", r->sim_wall_s);
  fprintf(f, "}\n");
}

/* ", CP 2, EP 8, HSDP 8, SP": the plan's dimensions beyond TP, PP, DP. */
static void plan_extras(const struct plan *p, char *buf, size_t size)
{
  int n = 0;
  buf[0] = '\0';
  if (p->cp > 1)
    n += snprintf(buf + n, size - (size_t)n, ", CP %ld", p->cp);
  if (p->ep > 1)
    n += snprintf(buf + n, size - (size_t)n, ", EP %ld", p->ep);
  if (p->hsdp)
    n += snprintf(buf + n, size - (size_t)n, ", HSDP %ld", p->hsdp);
  else if (p->fsdp)
    n += snprintf(buf + n, size - (size_t)n, ", FSDP");
  else if (p->zero)
    n += snprintf(buf + n, size - (size_t)n, ", ZeRO-%d", p->zero);
  if (p->zero == 3 && p->shard_impl != SI_IDEAL)
    n += snprintf(buf + n, size - (size_t)n, " (%s)",
                  shard_impl_name(p->shard_impl));
  if (p->sp)
    snprintf(buf + n, size - (size_t)n, ", SP");
}

void report_print_text(FILE *f, const struct report *r)
{
  const struct plan *p = &r->w->plan;
  const struct engine_result *res = &r->res;
  double T = r->iteration_s;
  char a[32], b[32], extra[96];
  plan_extras(p, extra, sizeof extra);
  fprintf(f, "%s on %ld x %s (%s): TP %ld, PP %ld, DP %ld%s, micro-batch "
          "%ld, global batch %ld, %s, recompute %s\n", r->w->model.name,
          p->gpus, r->c->gpu.name, r->c->name, p->tp, p->pp, p->dp, extra,
          p->micro_batch, p->global_batch,
          p->schedule == SCHED_INTERLEAVED ? "interleaved 1F1B"
                                           : sched_name(p->schedule),
          recompute_name(p->recompute));
  fprintf(f, "  iteration        %10.4f s   %.0f tokens/s\n", T,
          r->tokens_per_s);
  fprintf(f, "  per GPU          %10.1f TFLOP/s (Megatron count)   %.1f model "
          "TFLOP/s   MFU %.1f %%\n", r->hw_flops_per_gpu / 1e12,
          r->model_flops_per_gpu / 1e12,
          100 * r->model_flops_per_gpu / r->peak_flops);
  fprintf(f, "  compute          %10.4f s  %5.1f %%\n", res->compute_s,
          100 * res->compute_s / T);
  fprintf(f, "    GEMM %.4f s, attention %.4f s, memory-bound %.4f s, "
          "optimizer %.4f s\n", r->gemm_s, r->attention_s, r->memory_bound_s,
          r->optimizer_s);
  fprintf(f, "  comm overlapped  %10.4f s  %5.1f %%\n", res->overlapped_s,
          100 * res->overlapped_s / T);
  fprintf(f, "  comm exposed     %10.4f s  %5.1f %%\n", res->exposed_s,
          100 * res->exposed_s / T);
  fprintf(f, "  idle (bubbles)   %10.4f s  %5.1f %%\n", res->idle_s,
          100 * res->idle_s / T);
  fprintf(f, "  GPU energy       %10.4g kJ  %.3g J per token (idle power, TDP "
          "while computing)\n", r->energy_j / 1e3, r->energy_j / r->tokens);
  fprintf(f, "  memory per GPU   %10s of %s: %s\n",
          units_fmt_human(r->mem.total, UNIT_SIZE, a, sizeof a),
          units_fmt_human(r->mem.capacity, UNIT_SIZE, b, sizeof b),
          r->mem.fits ? "fits" : "does NOT fit");
  fprintf(f, "  simulated %ld kernels and %ld flows in %.2f s\n", res->kernels,
          res->flows, r->sim_wall_s);
}
