/*
 * cmd_list.c - `weft list`: the catalog and the presets, as tables.
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "platforms/catalog.h"
#include "platforms/cluster.h"
#include "sim/base/names.h"
#include "sim/base/units.h"
#include "sim/coll.h"
#include "sim/commands.h"
#include "workloads/accounting.h"
#include "workloads/costmodel.h"
#include "workloads/model.h"
#include "workloads/stack.h"

static void list_collectives(void)
{
  printf("%-13s %-44s %s\n", "algorithm", "operations", "what it does");
  for (int a = 0; a < CA_COUNT; a++)
    printf("%-13s %-44s %s\n", coll_algo_name((enum coll_algo)a),
           coll_algo_ops((enum coll_algo)a),
           coll_algo_summary((enum coll_algo)a));
  printf("\nChoose with --collective ALGO (weft run, weft coll).  Fidelity "
         "(--fidelity):\n  flow  one flow per ring edge and channel carrying "
         "every step, plus the steps'\n        latency (default)\n  step  "
         "each ring step a round of flows\n  auto  step for groups of up to "
         "16 GPUs, flow above\n");
}

/* Each stack with what it sets (as --flags) and its sources. */
static void list_stacks(void)
{
  for (int i = 0; i < stack_count(); i++) {
    const struct stack *st = stack_at(i);
    printf("%s%s: %s\n  sets:", i ? "\n" : "", st->name, st->about);
    for (int k = 0; st->set[k].key; k++) {
      char flag[128];
      names_flag(st->set[k].key, st->set[k].value, flag, sizeof flag);
      printf(" %s", flag);
    }
    /* the sources, wrapped at 78 columns */
    printf("\n  from:");
    int col = 7;
    const char *w = st->source;
    while (*w) {
      size_t n = strcspn(w, " ");
      if (col + 1 + (int)n > 78) {
        printf("\n       ");
        col = 7;
      }
      printf(" %.*s", (int)n, w);
      col += 1 + (int)n;
      w += n;
      while (*w == ' ')
        w++;
    }
    printf("\n");
  }
  printf("\nChoose with --stack NAME (stack=\"NAME\" in a workload's <plan>);"
         " settings given\nto the job override the stack's.\n");
}

static void list_models(void)
{
  printf("%-15s %6s %6s %5s %4s %6s %7s %6s %5s %7s %8s %8s\n", "model",
         "layers", "hidden", "heads", "kv", "ffn", "vocab", "seq", "MoE",
         "kind", "params", "active");
  for (int i = 0; i < model_preset_count(); i++) {
    const struct model *m = model_preset(i);
    char moe[16] = "-";
    if (model_is_moe(m))
      snprintf(moe, sizeof moe, "%ldx%ld", m->experts, m->topk);
    printf("%-15s %6ld %6ld %5ld %4ld %6ld %7ld %6ld %5s %7s %7.1fB %7.1fB\n",
           m->name, m->layers, m->hidden, m->heads, m->kv_heads, m->ffn,
           m->vocab, m->seq, moe, m->ffn_kind == FFN_SWIGLU ? "swiglu" : "gelu",
           model_params(m) / 1e9, model_active_params(m) / 1e9);
  }
}

static void list_gpus(const struct catalog *cat)
{
  printf("%-10s %13s %13s %13s %5s %8s %11s %11s %6s %7s\n", "GPU", "FP32",
         "BF16", "FP8", "MXFP8", "HBM", "HBM BW", "NVLink/dir", "idle",
         "TDP");
  for (int i = 0; i < cat->n_gpus; i++) {
    const struct gpu_spec *g = &cat->gpus[i];
    char a[32], b[32], c[32], d[32], e[32], f[32], h[32], k[32];
    printf("%-10s %13s %13s %13s %5s %8s %11s %11s %6s %7s\n", g->name,
           units_fmt_human(g->peak_flops[DTYPE_FP32], UNIT_FLOPS, a, 32),
           units_fmt_human(g->peak_flops[DTYPE_BF16], UNIT_FLOPS, b, 32),
           g->peak_flops[DTYPE_FP8] > 0
               ? units_fmt_human(g->peak_flops[DTYPE_FP8], UNIT_FLOPS, c, 32)
               : "-",
           g->mxfp8 ? "yes" : "-",
           units_fmt_human(g->hbm_bytes, UNIT_SIZE, d, 32),
           units_fmt_human(g->hbm_bw_Bps, UNIT_BW, e, 32),
           units_fmt_human(g->nvlink_bw_Bps, UNIT_BW, f, 32),
           units_fmt_human(g->idle_w, UNIT_POWER, h, 32),
           units_fmt_human(g->max_w, UNIT_POWER, k, 32));
  }
  /* The compute model's efficiencies (costmodel.h) and where they come
   * from (the catalog's comments and source attributes). */
  printf("\n%-10s %9s %9s %9s %9s %5s %7s  %s\n", "GPU", "GEMM", "GEMM FP8",
         "attention", "memory", "SMs", "launch", "source");
  for (int i = 0; i < cat->n_gpus; i++) {
    const struct gpu_spec *g = &cat->gpus[i];
    char l[32], f8[16] = "-";
    if (g->peak_flops[DTYPE_FP8] > 0)
      snprintf(f8, sizeof f8, "%.3f",
               g->gemm_eff_fp8 > 0 ? g->gemm_eff_fp8 : g->gemm_eff);
    printf("%-10s %9.3f %9s %9.3f %9.3f %5d %7s  %s\n", g->name, g->gemm_eff,
           f8, g->attn_eff, g->mem_eff, g->sms,
           units_fmt_human(g->launch_s, UNIT_TIME, l, sizeof l), g->source);
  }
  /* Memory-bound kernel families (costmodel.h, cost_mem_efficiency): their
   * share of HBM bandwidth; analysis/fit_membound.py fits Hopper's. */
  printf("\n%-10s %9s %9s %9s %9s %9s %9s  %s\n", "GPU", "elemwise",
         "norm fwd", "norm bwd", "loss fwd", "loss bwd", "optimizer",
         "(share of HBM bandwidth; 'elemwise' also stands in for a family "
         "not given)");
  for (int i = 0; i < cat->n_gpus; i++) {
    const struct gpu_spec *g = &cat->gpus[i];
    struct task t = {.kind = TK_KERNEL, .op = KK_NORM, .phase = PH_FWD};
    double v[5];
    v[0] = cost_mem_efficiency(g, &t);
    t.phase = PH_BWD;
    v[1] = cost_mem_efficiency(g, &t);
    t.op = KK_LOSS;
    t.phase = PH_FWD;
    v[2] = cost_mem_efficiency(g, &t);
    t.phase = PH_BWD;
    v[3] = cost_mem_efficiency(g, &t);
    t.op = KK_OPTIM;
    t.phase = PH_OPT;
    v[4] = cost_mem_efficiency(g, &t);
    printf("%-10s %9.3f %9.3f %9.3f %9.3f %9.3f %9.3f\n", g->name, g->mem_eff,
           v[0], v[1], v[2], v[3], v[4]);
  }
  /* Fused attention kernels (--attention): their throughput at a typical
   * shape, at the benchmark count (causal = half the work), and whose data
   * they were fitted on. */
  printf("\n%-10s %-7s %7s %9s %9s  %s\n", "GPU", "kernel", "default",
         "fwd TF/s", "bwd TF/s", "fitted on (s 4096, head dim 128, causal)");
  for (int i = 0; i < cat->n_gpus; i++) {
    const struct gpu_spec *g = &cat->gpus[i];
    for (int k = -1; k < AK_COUNT; k++) {
      if ((k < 0 && g->attn_default >= 0) || (k >= 0 && !g->attn[k].have))
        continue;
      printf("%-10s %-7s %7s %9.0f %9.0f  %s\n", g->name,
             k < 0 ? "generic" : attn_kernel_name((enum attn_kernel)k),
             k == g->attn_default ? "yes" : "",
             cost_attn_rate(g, k, false, 4096, 128, true) / 1e12,
             cost_attn_rate(g, k, true, 4096, 128, true) / 1e12,
             k < 0 ? "no fitted kernel: attn_eff (an estimate)"
                   : g->attn[k].source);
    }
  }
}

static void list_nics(const struct catalog *cat)
{
  printf("%-8s %12s %10s  %s\n", "NIC", "bandwidth", "latency", "source");
  for (int i = 0; i < cat->n_nics; i++) {
    const struct nic_spec *n = &cat->nics[i];
    char a[32], b[32];
    printf("%-8s %12s %10s  %s\n", n->name,
           units_fmt_human(n->bw_Bps, UNIT_BW, a, 32),
           units_fmt_human(n->lat_s, UNIT_TIME, b, 32), n->source);
  }
}

static void list_switches(const struct catalog *cat)
{
  printf("%-8s %-5s %6s %8s %8s  %s\n", "switch", "NIC", "ports", "idle",
         "max", "source");
  for (int i = 0; i < cat->n_switches; i++) {
    const struct switch_spec *w = &cat->switches[i];
    char a[32], b[32];
    /* "-": no power figure in the catalog (Q3400) */
    printf("%-8s %-5s %6d %8s %8s  %s\n", w->name, w->nic, w->ports,
           w->max_w > 0 ? units_fmt_human(w->idle_w, UNIT_POWER, a, 32) : "-",
           w->max_w > 0 ? units_fmt_human(w->max_w, UNIT_POWER, b, 32) : "-",
           w->source);
  }
}

/* Growth rates for projections (year=, generations=), with sources, and
 * the year of each GPU and NIC they project from. */
static void list_trends(const struct catalog *cat)
{
  for (int i = 0; i < cat->n_trends; i++) {
    const struct trend *t = &cat->trends[i];
    printf("%s%s%s: a generation is %g years; %s\n", i ? "\n" : "",
           t->name, i ? "" : " (default)", t->generation_years, t->source);
    printf("  %-8s %9s %11s  %s\n", "quantity", "per year", "per gen.",
           "source");
    for (int q = 0; q < GQ_COUNT; q++)
      printf("  %-8s %9.3f %11.3f  %s\n", growth_q_name((enum growth_q)q),
             t->per_year[q], pow(t->per_year[q], t->generation_years),
             t->rate_source[q]);
  }
  printf("\nProjected from:");
  const char *sep = " ";
  for (int i = 0; i < cat->n_gpus; i++)
    if (cat->gpus[i].year > 0) {
      printf("%s%s %g", sep, cat->gpus[i].name, cat->gpus[i].year);
      sep = ", ";
    }
  for (int i = 0; i < cat->n_nics; i++)
    if (cat->nics[i].year > 0) {
      printf("%s%s %g", sep, cat->nics[i].name, cat->nics[i].year);
      sep = ", ";
    }
  printf("\n");
}

static void list_nodes(const struct catalog *cat)
{
  printf("%-14s %-10s %5s %-5s %5s %10s %5s\n", "node", "GPU", "GPUs", "NIC",
         "NICs", "NVLink lat", "NVLS");
  for (int i = 0; i < cat->n_nodes; i++) {
    const struct node_spec *n = &cat->nodes[i];
    char a[32];
    printf("%-14s %-10s %5d %-5s %5d %10s %5s\n", n->name, n->gpu, n->gpus,
           n->nic, n->nics, units_fmt_human(n->nvlink_lat_s, UNIT_TIME, a, 32),
           n->nvls ? "yes" : "no");
  }
}

static int list_clusters(const struct catalog *cat)
{
  printf("%-13s %-12s %6s %6s %6s %6s  %s\n", "cluster", "node", "GPUs",
         "nodes", "/leaf", "oversub", "description");
  int n = cluster_preset_count();
  for (int i = 0; i < n; i++) {
    struct cluster_desc d;
    struct cluster c;
    struct weft_err err = {0};
    if (cluster_preset_get(i, &d, &err) || cluster_resolve(&d, cat, &c, &err))
      return cli_fail(&err);
    printf("%-13s %-12s %6d %6d %6d %6g  %s\n", c.name, c.node_type, c.gpus,
           c.nodes, c.nodes_per_leaf, c.oversub, c.description);
  }
  printf("\nSizes are defaults: set --gpus or --nodes.\n");
  return 0;
}

const struct opts_spec cmd_list_spec = {
    "list", POS_WORD,
    "models|gpus|nics|nodes|switches|trends|clusters|collectives|stacks",
    OPTS_CATALOG, NULL,
    "Shows the model presets, the hardware catalog (GPUs with their peaks\n"
    "and efficiencies, NICs, nodes, switches, the growth trends that project\n"
    "them), the cluster presets and the collective algorithms; all of them\n"
    "without an argument.",
    "  weft list gpus\n"
    "  weft list clusters --catalog my-cluster.xml\n"};

int cmd_list(int argc, char **argv)
{
  struct opts o;
  int code;
  if (cli_parse(&cmd_list_spec, argc, argv, &o, &code))
    return code;
  const char *what = o.positional;
  struct weft_err err = {0};
  struct catalog *cat;
  if (opts_catalog(&o, &cat, &err))
    return cli_fail(&err);
  int rc = 0;
  if (!what) {
    list_models();
    printf("\n");
    list_gpus(cat);
    printf("\n");
    list_nics(cat);
    printf("\n");
    list_nodes(cat);
    printf("\n");
    list_switches(cat);
    printf("\n");
    list_trends(cat);
    printf("\n");
    rc = list_clusters(cat);
    printf("\n");
    list_collectives();
    printf("\n");
    list_stacks();
  } else if (strcmp(what, "collectives") == 0) {
    list_collectives();
  } else if (strcmp(what, "models") == 0) {
    list_models();
  } else if (strcmp(what, "gpus") == 0)
    list_gpus(cat);
  else if (strcmp(what, "nics") == 0)
    list_nics(cat);
  else if (strcmp(what, "nodes") == 0)
    list_nodes(cat);
  else if (strcmp(what, "switches") == 0)
    list_switches(cat);
  else if (strcmp(what, "trends") == 0)
    list_trends(cat);
  else if (strcmp(what, "clusters") == 0)
    rc = list_clusters(cat);
  else if (strcmp(what, "stacks") == 0)
    list_stacks();
  else
    rc = cli_usage("list: unknown list '%s'; expected models, gpus, nics, "
                   "nodes, switches, trends, clusters, collectives or stacks", what);
  catalog_free(cat);
  return rc;
}
