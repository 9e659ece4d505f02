/*
 * report.c - derived metrics of an iteration and their two printed forms
 * (report.h).  JSON field names are stable: they are the rows of
 * sim/report_fields.h, documented in the README's table, and a change of
 * the layout bumps REPORT_JSON_SCHEMA.
 */
#include "sim/report.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "platforms/topo.h"
#include "sim/base/names.h"
#include "sim/base/units.h"

#ifndef WEFT_VERSION
#define WEFT_VERSION "unknown"
#endif

/* The single changes tried, in order, when a job does not fit: less
 * activation memory first, then sharding of the model state, then a
 * smaller micro-batch, then more model parallelism. */
static const struct {
  enum plan_key key;
  const char *value;
} fit_changes[] = {
    {PK_RECOMPUTE, "selective"}, {PK_RECOMPUTE, "full"}, {PK_ZERO, "1"},
    {PK_ZERO, "2"},              {PK_ZERO, "3"},         {PK_MICRO_BATCH, NULL},
    {PK_TP, NULL},               {PK_PP, NULL},
};

/* Fill r->fit_hint with the first change of fit_changes that fits. */
static void fit_hint(struct report *r, const struct workload *w,
                     double hbm_bytes)
{
  const struct plan *p = &w->plan;
  for (size_t i = 0; i < sizeof fit_changes / sizeof *fit_changes; i++) {
    enum plan_key k = fit_changes[i].key;
    char v[32];
    if (k == PK_MICRO_BATCH) {
      if (p->micro_batch < 2)
        continue;
      snprintf(v, sizeof v, "%ld", p->micro_batch / 2);
    } else if (k == PK_TP || k == PK_PP) {
      snprintf(v, sizeof v, "%ld", 2 * (k == PK_TP ? p->tp : p->pp));
    } else {
      snprintf(v, sizeof v, "%s", fit_changes[i].value);
      char now[32];
      plan_value_text(p, k, now, sizeof now);
      if (strcmp(now, v) == 0 || (k == PK_ZERO && p->zero >= v[0] - '0') ||
          (k == PK_RECOMPUTE && p->recompute == RECOMP_FULL))
        continue;
    }
    struct plan q = *p;
    struct weft_err err = {0};
    if (!q.set[PK_DP])
      q.dp = 0;
    if (k == PK_ZERO && q.shard_impl == SI_MEGATRON) {
      /* Megatron's distributed optimizer is ZeRO-1: another stage is
       * another implementation, ideal unless one is given. */
      q.shard_impl = SI_IDEAL;
      q.set[PK_SHARD_IMPL] = false;
    }
    if (plan_set(&q, k, v, "hint", &err) ||
        plan_resolve(&q, &w->model, p->gpus, &err))
      continue;
    struct memory m;
    memory_per_gpu(&w->model, &q, hbm_bytes, &m);
    if (m.fits) {
      names_flag(plan_key_name(k), v, r->fit_hint, sizeof r->fit_hint);
      r->fit_hint_bytes = m.total;
      return;
    }
  }
}

/* Kernel time by family: GEMM, attention, memory-bound, optimizer. */
enum { FAM_GEMM, FAM_ATTN, FAM_MEM, FAM_OPTIM, FAM_COUNT };
static const char *const fam_json[FAM_COUNT] = {
    "compute_gemm_s", "compute_attention_s", "compute_memory_bound_s",
    "compute_optimizer_s"};

static void families(const double k[KK_COUNT], double out[FAM_COUNT])
{
  out[FAM_GEMM] = k[KK_GEMM] + k[KK_GGEMM];
  out[FAM_ATTN] = k[KK_ATTN] + k[KK_ATTN_BWD];
  out[FAM_MEM] = k[KK_NORM] + k[KK_ELEMWISE] + k[KK_EMBED] + k[KK_LOSS] +
                 k[KK_COMPRESS];
  out[FAM_OPTIM] = k[KK_OPTIM];
}

/* GPU board energy of the iteration, term by term (report.h).  Each
 * GPU's time is its compute, exposed communication and idle time (means
 * over GPUs; engine.h), each at the board power of that phase:
 *
 * - kernels at active_w, the board's power limit (700 W on H100; our H100
 *   sat at its 700 W cap through GEMM and attention loops,
 *   analysis/kernels/README.md) or less under power_cap or clock;
 * - memory-bound kernels (norms, elementwise, embedding, loss: the kinds
 *   analysis/kernels measured) at mem_w: on that H100 they ran at 1980
 *   MHz, never power-capped, at 463-499 W (NVML's 1 s means of short runs
 *   with set-up gaps; the two longest, SwiGLU backward 16384x28672 and
 *   cross-entropy 16384x128256, 515 and 518 W over their last two thirds:
 *   catalog.xml's mem_power 516 W).  Unmeasured GPUs keep active_w;
 * - exposed communication at comm_w, idle power unless the catalog gives
 *   comm_power.  NCCL's kernels stay resident and poll their peers' flags
 *   (nccl src/device/prims_simple.h, waitPeer) on the few SMs they hold
 *   (24 CTAs for a large collective, 2 for p2p), but polling on a few SMs
 *   draws little: Perseus (Chung et al., SOSP'24) charges a GPU blocked on
 *   an NCCL receive 70 W by default (ml-energy/zeus examples/perseus/
 *   run_optimization.py, p2p_power; profile_p2p.py measures it over a
 *   60 s receive; the code does not say which GPU gave 70 W), NVIDIA's
 *   maintainer says a kernel on one SM is "not using a
 *   lot of power" (nccl issue 689), and in production training the
 *   communication phases draw far less than the compute phases (Choukse et
 *   al., "Power Stabilization for AI Training Datacenters", 2025: DGX-H100
 *   racks; NVIDIA's GB300 NVL72 power-smoothing blog calls them idle).  No
 *   measurement of a collective moving data alone was found, so nothing
 *   above idle is charged for it;
 * - idle time (pipeline bubbles, waiting for a peer) at idle power: our
 *   H100 drew 70.5 W with its context resident and its SM clock at 1980
 *   MHz before the first kernel (h100_clocks_2026-11-22.csv), so clocks
 *   held high do not lift it; Perseus's 70 W is the same state.
 *
 * Overlapped communication adds nothing: the kernel beside it sets the
 * phase (a GEMM already runs at the power limit).  Compression kernels
 * (PowerSGD's products among them) stay at active_w. */
static void gpu_energy(struct report *r, const struct cluster *c,
                       const struct engine_result *res)
{
  const double *k = res->compute_by_kind_s;
  double mem = k[KK_NORM] + k[KK_ELEMWISE] + k[KK_EMBED] + k[KK_LOSS];
  if (mem > res->compute_s) /* sums of the same times, a few ulps apart */
    mem = res->compute_s;
  r->mem_bound_s = mem;
  r->e_kernel_j = r->gpus * c->active_w * (res->compute_s - mem);
  r->e_mem_j = r->gpus * c->mem_w * mem;
  r->e_comm_j = r->gpus * c->comm_w * res->exposed_s;
  r->e_idle_j = r->gpus * c->gpu.idle_w * res->idle_s;
  r->energy_j = r->e_kernel_j + r->e_mem_j + r->e_comm_j + r->e_idle_j;
}

/* Busy time of `ports` ports moving `bytes` at `bw`, at most all along. */
static double busy_s(double bytes, double bw, double ports, double T)
{
  double b = bytes / bw;
  return b < ports * T ? b : ports * T;
}

/* The NICs and switches of the job's nodes (report.h). */
static void network_energy(struct report *r, const struct cluster *c,
                           double T)
{
  long nodes = ((long)r->gpus + c->gpus_per_node - 1) / c->gpus_per_node;
  if (nodes < 2)
    return;
  double host = (double)nodes * c->nics_per_node;
  r->nic_ports = (long)host;
  r->have_nic_power = c->nic.max_w > 0;
  if (r->have_nic_power)
    r->nic_energy_j = host * c->nic.idle_w * T +
                      (c->nic.max_w - c->nic.idle_w) *
                          busy_s(r->cf.nic_bytes, c->nic.bw_Bps, host, T);
  /* a catalog switch without a power figure (Q3400) is counted in
   * `weft platform --parts`, not in the energy */
  r->have_switch = c->sw.ports > 0 && c->sw.max_w > 0;
  if (!r->have_switch)
    return;
  long leaves = (nodes + c->nodes_per_leaf - 1) / c->nodes_per_leaf;
  long pods = (leaves + c->leaves_per_pod - 1) / c->leaves_per_pod;
  double ports = host;
  if (leaves > 1)
    ports += 2 * host / c->oversub;
  if (pods > 1)
    ports += 2 * host / (c->oversub * c->pod_oversub);
  r->switches = (long)ceil(ports / c->sw.ports - 1e-9);
  r->switch_energy_j = (double)r->switches * c->sw.idle_w * T +
                       (c->sw.max_w - c->sw.idle_w) / c->sw.ports *
                           busy_s(r->cf.port_bytes / 2, c->nic.bw_Bps, ports,
                                  T);
}

void report_fill(struct report *out, const struct workload *w,
                 const struct cluster *c, const struct graph *g,
                 const struct engine_result *res, enum dtype dtype,
                 double sim_wall_s)
{
  struct report r = {.w = w, .c = c, .res = *res};
  memory_per_gpu(&w->model, &w->plan, c->gpu.hbm_bytes, &r.mem);
  r.codec_s = res->compute_by_kind_s[KK_COMPRESS];
  closed_form_ddp(g, c, dtype, &r.ddp);
  r.gpus = (double)w->plan.gpus;
  double T = r.iteration_s = res->iteration_s;
  r.hw_flops_per_gpu = graph_total_flops(g, GRAPH_ALL_PHASES) / (T * r.gpus);
  r.model_flops_per_gpu =
      model_flops_per_iter(&w->model, w->plan.global_batch) / (T * r.gpus);
  r.peak_flops = c->gpu.peak_flops[dtype];
  r.tokens = g->tokens;
  r.tokens_per_s = g->tokens / T;
  gpu_energy(&r, c, res);
  closed_form_eval(g, c, dtype, &r.cf);
  network_energy(&r, c, T);
  if (c->gpu_hour_price > 0)
    r.cost_per_mtoken = c->gpu_hour_price * r.gpus * T / 3600 / g->tokens *
                        1e6;
  r.sim_wall_s = sim_wall_s;
  double fam[FAM_COUNT];
  families(res->compute_by_kind_s, fam);
  r.gemm_s = fam[FAM_GEMM];
  r.attention_s = fam[FAM_ATTN];
  r.memory_bound_s = fam[FAM_MEM];
  r.optimizer_s = fam[FAM_OPTIM];
  if (!r.mem.fits)
    fit_hint(&r, w, c->gpu.hbm_bytes);
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

/* A JSON string: names and descriptions here hold no quotes or
 * backslashes (the catalog and settings refuse control characters), but
 * escape them anyway. */
static void json_value_str(FILE *f, const char *v)
{
  fputc('"', f);
  for (const char *c = v; *c; c++) {
    if (*c == '"' || *c == '\\')
      fputc('\\', f);
    if ((unsigned char)*c >= 0x20)
      fputc(*c, f);
  }
  fputc('"', f);
}

/* A setting's value as JSON: yes/no as a boolean, a number as a number,
 * any other word as a string. */
static void json_setting(FILE *f, const char *v)
{
  char *end;
  if (strcmp(v, "yes") == 0 || strcmp(v, "no") == 0) {
    fputs(v[0] == 'y' ? "true" : "false", f);
    return;
  }
  (void)strtod(v, &end);
  if (v[0] && !*end)
    fputs(v, f);
  else
    json_value_str(f, v);
}

/* {"tp": x, "pp": y, ...}: seconds by kind of communication. */
static void json_by_class(FILE *f, const char *key, const double v[CC_COUNT])
{
  fprintf(f, ", \"%s\": {", key);
  for (int k = 0; k < CC_COUNT; k++)
    report_json_num(f, k ? ", " : "", comm_class_name((enum comm_class)k),
                    "%.9g", v[k]);
  fputc('}', f);
}

static void json_families(FILE *f, const double kind[KK_COUNT])
{
  double fam[FAM_COUNT];
  families(kind, fam);
  for (int k = 0; k < FAM_COUNT; k++)
    report_json_num(f, ", ", fam_json[k], "%.9g", fam[k]);
}

/* --breakdown: each stage's time and the critical path. */
static void json_breakdown(FILE *f, const struct engine_result *res)
{
  fprintf(f, ", \"breakdown\": {\"stages\": [");
  for (long s = 0; s < res->nstages; s++) {
    const struct engine_stage *st = &res->stages[s];
    fprintf(f, "%s{\"stage\": %ld, \"gpus\": %ld", s ? ", " : "", s,
            st->gpus);
    report_json_num(f, ", ", "compute_s", "%.9g", st->compute_s);
    json_families(f, st->compute_by_kind_s);
    json_by_class(f, "exposed_s", st->exposed_s);
    json_by_class(f, "overlapped_s", st->overlapped_s);
    report_json_num(f, ", ", "idle_s", "%.9g", st->idle_s);
    fputc('}', f);
  }
  const struct engine_path *P = &res->path;
  fprintf(f, "], \"critical_path\": {\"tasks\": %ld", P->tasks);
  report_json_num(f, ", ", "total_s", "%.9g", P->total_s);
  json_families(f, P->compute_by_kind_s);
  json_by_class(f, "comm_s", P->comm_s);
  fprintf(f, ", \"stage_s\": [");
  for (long s = 0; s < res->nstages; s++)
    fprintf(f, s ? ", %.9g" : "%.9g", P->stage_s[s]); /* finite: sums */
  fputc(']', f);
  if (P->held_rank >= 0) /* stragglers only (engine.h) */
    fprintf(f, ", \"held_by_rank\": %ld, \"held_by_rank_s\": %.9g",
            P->held_rank, P->held_rank_s);
  fprintf(f, "}}");
}

#define FIELD_INFO(id, name, type, fmt, kind, when, value) \
  [RF_##id] = {name, RT_##type, fmt, RK_##kind},
const struct report_field_info report_fields[RF_COUNT] = {
    REPORT_FIELDS(FIELD_INFO)};
#undef FIELD_INFO

/* The columns: the names of the RK_COL rows, chosen by token pasting. */
#define COLUMN_COL(name) name,
#define COLUMN_LEAD(name)
#define COLUMN_NOCOL(name)
#define COLUMN(id, name, type, fmt, kind, when, value) COLUMN_##kind(name)
const char *const report_columns[] = {REPORT_FIELDS(COLUMN) NULL};
#undef COLUMN

/* The JSON writer's nesting: the objects open around the last member
 * written, as the prefix of its dotted name ("inputs.model."), and whether
 * the innermost one has a member yet. */
struct jw {
  FILE *f;
  char open[64];   /* "" at the top level */
  bool first;      /* no member yet in the innermost object */
};

/* Close and open objects so that the member `name` (dotted) can follow,
 * then print its separator and key. */
static void jw_key(struct jw *w, const char *name)
{
  const char *leaf = strrchr(name, '.');
  size_t plen = leaf ? (size_t)(leaf - name) + 1 : 0; /* with its '.' */
  leaf = leaf ? leaf + 1 : name;
  /* keep the longest prefix of open objects that is also name's */
  size_t keep = 0;
  for (size_t i = 0; w->open[i] && i < plen && w->open[i] == name[i]; i++)
    if (name[i] == '.')
      keep = i + 1;
  for (size_t i = strlen(w->open); i > keep; i--)
    if (w->open[i - 1] == '.') {
      fputc('}', w->f);
      w->first = false;
    }
  for (size_t i = keep, start = keep; i < plen; i++)
    if (name[i] == '.') {
      fprintf(w->f, "%s\"%.*s\": {", w->first ? "" : ", ", (int)(i - start),
              name + start);
      w->first = true;
      start = i + 1;
    }
  snprintf(w->open, sizeof w->open, "%.*s", (int)plen, name);
  fprintf(w->f, "%s\"%s\": ", w->first ? "" : ", ", leaf);
  w->first = false;
}

/* Close every open object. */
static void jw_close(struct jw *w)
{
  for (const char *c = w->open; *c; c++)
    if (*c == '.')
      fputc('}', w->f);
  w->open[0] = '\0';
  w->first = false;
}

static void jw_num(struct jw *w, const char *fmt, double v)
{
  if (isfinite(v))
    fprintf(w->f, fmt, v);
  else
    fputs("null", w->f);
}

static void jw_setting(struct jw *w, const struct plan *p, enum plan_key k)
{
  char v[64];
  plan_value_text(p, k, v, sizeof v);
  json_setting(w->f, v);
}

/* One member per type (report_fields.h); a HOOK prints its own. */
#define PUT_NUM(w, fmt, v) jw_num(w, fmt, v)
#define PUT_LONG(w, fmt, v) fprintf((w)->f, "%ld", (long)(v))
#define PUT_BOOL(w, fmt, v) fputs((v) ? "true" : "false", (w)->f)
#define PUT_STR(w, fmt, v) json_value_str((w)->f, v)
#define PUT_WORD(w, fmt, v) fprintf((w)->f, "\"%s\"", v)
#define PUT_SETTING(w, fmt, v) jw_setting(w, p, v)
#define KEY_HOOK(w, name) jw_close(w)
#define KEY_NUM(w, name) jw_key(w, name)
#define KEY_LONG KEY_NUM
#define KEY_BOOL KEY_NUM
#define KEY_STR KEY_NUM
#define KEY_WORD KEY_NUM
#define KEY_SETTING KEY_NUM
#define PUT_HOOK(w, fmt, v) v
#define MEMBER(id, name, type, fmt, kind, when, value) \
  if (when) {                                          \
    KEY_##type(&w, name);                              \
    PUT_##type(&w, fmt, value);                        \
  }

void report_print_json(FILE *f, const struct report *r)
{
  const struct plan *p = &r->w->plan;
  const struct model *md = &r->w->model;
  const struct memory *m = &r->mem;
  const struct engine_result *res = &r->res;
  const struct cluster *c = r->c;
  /* The fabric's parts (platforms/topo.h): power at full traffic and
   * cost, null where the catalog lacks the figures. */
  struct topo_parts tp;
  topo_parts(c, &tp);
  char method[48], placement[32];
  plan_value_text(p, PK_COMPRESS, method, sizeof method);
  if (c->random_seed)
    snprintf(placement, sizeof placement, "random:%lu", c->random_seed);
  else
    snprintf(placement, sizeof placement, "%s",
             c->spread ? "spread" : "packed");
  struct jw w = {f, "", true};
  fputc('{', f);
  REPORT_FIELDS(MEMBER)
  jw_close(&w);
  fputs("}\n", f);
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
  if (p->shard_impl != SI_IDEAL)
    n += snprintf(buf + n, size - (size_t)n, " (%s)",
                  shard_impl_name(p->shard_impl));
  if (p->overlap_param_gather)
    n += snprintf(buf + n, size - (size_t)n, ", gathers at the forward");
  if (p->sp)
    snprintf(buf + n, size - (size_t)n, ", SP");
}

static const char *const class_label[CC_COUNT] = {"TP", "PP", "DP", "CP",
                                                   "EP"};

/* --breakdown in text: a row per pipeline stage, then the critical path.
 * Only the kinds of communication the job has get columns. */
static void print_breakdown(FILE *f, const struct engine_result *res)
{
  bool has[CC_COUNT] = {false};
  for (int k = 0; k < CC_COUNT; k++) {
    has[k] = res->path.comm_s[k] > 0;
    for (long s = 0; s < res->nstages; s++)
      has[k] |= res->stages[s].exposed_s[k] > 0 ||
                res->stages[s].overlapped_s[k] > 0;
  }
  fprintf(f, "  time by pipeline stage, s (mean over the stage's GPUs; "
          "communication by kind, exposed / overlapped)\n");
  fprintf(f, "    %5s %9s", "stage", "compute");
  for (int k = 0; k < CC_COUNT; k++)
    if (has[k])
      fprintf(f, " %19s", class_label[k]);
  fprintf(f, " %9s\n", "idle");
  for (long s = 0; s < res->nstages; s++) {
    const struct engine_stage *st = &res->stages[s];
    fprintf(f, "    %5ld %9.4f", s, st->compute_s);
    for (int k = 0; k < CC_COUNT; k++)
      if (has[k])
        fprintf(f, "  %8.4f / %-8.4f", st->exposed_s[k], st->overlapped_s[k]);
    fprintf(f, " %9.4f\n", st->idle_s);
  }
  const struct engine_path *P = &res->path;
  double fam[FAM_COUNT], comp = 0;
  families(P->compute_by_kind_s, fam);
  for (int k = 0; k < FAM_COUNT; k++)
    comp += fam[k];
  double T = P->total_s > 0 ? P->total_s : 1;
  fprintf(f, "  critical path    %10.4f s over %ld tasks: compute %.4f s "
          "(%.1f %%)", P->total_s, P->tasks, comp, 100 * comp / T);
  for (int k = 0; k < CC_COUNT; k++)
    if (P->comm_s[k] > 0)
      fprintf(f, ", %s %.4f s (%.1f %%)", class_label[k], P->comm_s[k],
              100 * P->comm_s[k] / T);
  fprintf(f, "\n    its compute: GEMM %.4f s, attention %.4f s, memory-bound "
          "%.4f s, optimizer %.4f s\n", fam[FAM_GEMM], fam[FAM_ATTN],
          fam[FAM_MEM], fam[FAM_OPTIM]);
  fprintf(f, "    on stage");
  for (long s = 0; s < res->nstages; s++)
    fprintf(f, "%s %ld %.4f s", s ? "," : "", s, P->stage_s[s]);
  fputc('\n', f);
  if (P->held_rank >= 0) /* stragglers only (engine.h) */
    fprintf(f, "    held back by rank %ld: %.4f s of its kernels on it\n",
            P->held_rank, P->held_rank_s);
}

/* Energy of the GPUs and the fabric, and the cost per token. */
static void print_energy(FILE *f, const struct report *r)
{
  const struct cluster *c = r->c;
  /* The phases' powers, those that differ from idle and computing only */
  char mem[48] = "", comm[48] = "";
  if (c->mem_w != c->active_w)
    snprintf(mem, sizeof mem, ", %.0f W memory-bound", c->mem_w);
  if (c->comm_w != c->gpu.idle_w)
    snprintf(comm, sizeof comm, ", %.0f W communicating", c->comm_w);
  fprintf(f, "  GPU energy       %10.4g kJ  %.3g J per token (idle power, %.0f W "
          "while computing%s%s%s)\n", r->energy_j / 1e3,
          r->energy_j / r->tokens, c->active_w, mem, comm,
          c->clock != 1 ? ", clock" : "");
  if (r->nic_ports) {
    char nic[96] = "", sw[128] = "";
    if (r->have_nic_power)
      snprintf(nic, sizeof nic, "%ld NIC ports %.4g kJ", r->nic_ports,
               r->nic_energy_j / 1e3);
    else
      snprintf(nic, sizeof nic, "NICs not counted (no %s power in the "
               "catalog)", c->nic.name);
    if (r->have_switch)
      snprintf(sw, sizeof sw, "%ld %s switch%s %.4g kJ", r->switches,
               c->sw.name, r->switches == 1 ? "" : "es",
               r->switch_energy_j / 1e3);
    else if (c->sw.ports > 0)
      snprintf(sw, sizeof sw, "switches not counted (no power figure of "
               "the %s switch in the catalog)", c->sw.name);
    else
      snprintf(sw, sizeof sw, "switches not counted (no %s switch in the "
               "catalog)", c->nic.name);
    fprintf(f, "  network energy   %10.4g kJ  %s, %s; %.4g GB across NICs\n",
            (r->nic_energy_j + r->switch_energy_j) / 1e3, nic, sw,
            r->cf.nic_bytes / 1e9);
  }
  double total = r->energy_j + r->nic_energy_j + r->switch_energy_j;
  fprintf(f, "  energy           %10.4g kJ  %.3g J per token", total / 1e3,
          total / r->tokens);
  if (r->cost_per_mtoken > 0)
    fprintf(f, "   cost %.4g per million tokens at %g per GPU-hour",
            r->cost_per_mtoken, c->gpu_hour_price);
  fputc('\n', f);
}

/* Gradient compression against the same run without it. */
static void print_compression(FILE *f, const struct report *r)
{
  if (r->w->plan.compress == CM_NONE)
    return;
  char method[48];
  plan_value_text(&r->w->plan, PK_COMPRESS, method, sizeof method);
  const struct ddp_model *d = &r->ddp, *b = &r->base_ddp;
  char x[32], y[32];
  fprintf(f, "  compression      %s: encoding and decoding %.4f s; "
          "data-parallel bytes per GPU %s", method, r->codec_s,
          units_fmt_human(d->dp_bytes, UNIT_SIZE, x, sizeof x));
  if (r->base_iteration_s > 0) {
    fprintf(f, " (%s without, %+.1f %%)\n",
            units_fmt_human(b->dp_bytes, UNIT_SIZE, y, sizeof y),
            100 * (d->dp_bytes / b->dp_bytes - 1));
    fprintf(f, "    without compression %.4f s: speedup %.3fx; Agarwal et "
            "al.'s model %.4f s against %.4f s without (%.3fx)\n",
            r->base_iteration_s, r->base_iteration_s / r->iteration_s,
            d->iteration_s, b->iteration_s, b->iteration_s / d->iteration_s);
  } else {
    fprintf(f, "\n");
  }
}

/* The closed form beside the simulation, and where they part. */
static void print_closed_form(FILE *f, const struct report *r)
{
  const struct closed_form *cf = &r->cf;
  const struct engine_result *res = &r->res;
  fprintf(f, "  closed form      %10.4f s  (roofline compute %.4f s, "
          "alpha-beta comm %.4f s of which exposed %.4f s, bubble %.4f s); "
          "simulated %+.1f %%\n", cf->iteration_s, cf->compute_s, cf->comm_s,
          cf->exposed_s, cf->bubble_s,
          100 * (r->iteration_s / cf->iteration_s - 1));
  fprintf(f, "    simulated minus closed form: compute %+.4f s (kernel "
          "efficiency, launches), exposed comm %+.4f s (contention, "
          "protocols, overlap), idle %+.4f s (bubbles, waiting)\n",
          res->compute_s - cf->compute_s, res->exposed_s - cf->exposed_s,
          res->idle_s - cf->bubble_s);
}

/* Whether the cluster's hardware is not the catalog's: scaled (--scale),
 * projected (--year, --generations) or clocked (--clock, --power-cap). */
static bool what_if(const struct cluster *c)
{
  const struct hw_scale *s = &c->scale;
  return s->compute != 1 || s->hbm_bw != 1 || s->hbm_cap != 1 ||
         s->nvlink != 1 || s->nic != 1 || c->trend[0] || c->clock != 1;
}

/* What-if hardware is said under the headline with the peaks it gives,
 * the figures every result below follows (issue 40: only the JSON showed
 * them). */
static void print_what_if(FILE *f, const struct report *r)
{
  const struct cluster *c = r->c;
  if (!what_if(c))
    return;
  const struct hw_scale *s = &c->scale;
  const double k[] = {s->compute, s->hbm_bw, s->hbm_cap, s->nvlink, s->nic};
  const char *const names[] = {"compute", "hbm_bw", "hbm_cap", "nvlink",
                               "nic"};
  fprintf(f, "  what-if hardware");
  const char *sep = " ";
  for (int i = 0; i < 5; i++)
    if (k[i] != 1) {
      fprintf(f, "%s%s x%g", sep, names[i], k[i]);
      sep = ", ";
    }
  if (c->trend[0]) {
    fprintf(f, "%sGPU %.3g years and NIC %.3g years ahead by the %s trend",
            sep, c->proj_gpu_years, c->proj_nic_years, c->trend);
    sep = ", ";
  }
  if (c->clock != 1)
    fprintf(f, "%sclock x%.3g", sep, c->clock);
  char a[32];
  fprintf(f, ": %.4g TFLOP/s %s, HBM %s at %.4g TB/s, NVLink %.4g GB/s, "
          "NIC %.4g GB/s\n", r->peak_flops / 1e12,
          dtype_name(r->w->model.dtype),
          units_fmt_human(c->gpu.hbm_bytes, UNIT_SIZE, a, sizeof a),
          c->gpu.hbm_bw_Bps / 1e12, c->gpu.nvlink_bw_Bps / 1e9,
          c->nic.bw_Bps / 1e9);
}

void report_print_text(FILE *f, const struct report *r)
{
  const struct plan *p = &r->w->plan;
  const struct engine_result *res = &r->res;
  double T = r->iteration_s;
  char a[32], b[32], extra[96];
  plan_extras(p, extra, sizeof extra);
  fprintf(f, "%s on %ld x %s%s (%s): TP %ld, PP %ld, DP %ld%s, micro-batch "
          "%ld, global batch %ld, %s, recompute %s%s%s\n", r->w->model.name,
          p->gpus, r->c->gpu.name, what_if(r->c) ? " what-if" : "", r->c->name, p->tp, p->pp, p->dp, extra,
          p->micro_batch, p->global_batch,
          p->schedule == SCHED_INTERLEAVED ? "interleaved 1F1B"
                                           : sched_name(p->schedule),
          recompute_name(p->recompute), p->stack[0] ? ", stack " : "",
          p->stack);
  print_what_if(f, r);
  /* A job that does not fit is said before its figures (issue 40): they
   * are those of a GPU with the memory it lacks.  --must-fit fails it. */
  if (!r->mem.fits) {
    char t[32];
    fprintf(f, "  DOES NOT FIT     %s per GPU of %s: this job cannot run as "
            "planned; the figures below assume a GPU with the memory",
            units_fmt_human(r->mem.total, UNIT_SIZE, a, sizeof a),
            units_fmt_human(r->mem.capacity, UNIT_SIZE, b, sizeof b));
    if (r->fit_hint[0])
      fprintf(f, " (to fit: %s, %s)\n", r->fit_hint,
              units_fmt_human(r->fit_hint_bytes, UNIT_SIZE, t, sizeof t));
    else
      fprintf(f, "\n");
  }
  fprintf(f, "  iteration        %10.4f s   %.0f tokens/s\n", T,
          r->tokens_per_s);
  fprintf(f, "  per GPU          %10.1f TFLOP/s (Megatron count)   %.1f model "
          "TFLOP/s   MFU %.1f %%\n", r->hw_flops_per_gpu / 1e12,
          r->model_flops_per_gpu / 1e12,
          100 * r->model_flops_per_gpu / r->peak_flops);
  fprintf(f, "  parameters       %10.4g B total, %.4g B active\n",
          model_params(&r->w->model) / 1e9,
          model_active_params(&r->w->model) / 1e9);
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
  if (res->stages)
    print_breakdown(f, res);
  print_energy(f, r);
  print_closed_form(f, r);
  print_compression(f, r);
  fprintf(f, "  memory per GPU   %10s of %s: %s\n",
          units_fmt_human(r->mem.total, UNIT_SIZE, a, sizeof a),
          units_fmt_human(r->mem.capacity, UNIT_SIZE, b, sizeof b),
          r->mem.fits ? "fits" : "does NOT fit");
  const struct memory *m = &r->mem;
  char g[32], o[32], x[32], t[32], u[32];
  fprintf(f, "    stage %ld: weights %s, gradients %s, optimizer %s, "
          "activations %s (%ld micro-batch%s in flight), transient %s, "
          "buffers %s\n",
          m->stage, units_fmt_human(m->weights, UNIT_SIZE, a, sizeof a),
          units_fmt_human(m->grads, UNIT_SIZE, b, sizeof b),
          units_fmt_human(m->optimizer, UNIT_SIZE, g, sizeof g),
          units_fmt_human(m->activations, UNIT_SIZE, o, sizeof o),
          m->peak_inflight, m->peak_inflight == 1 ? "" : "es",
          units_fmt_human(m->transient, UNIT_SIZE, x, sizeof x),
          units_fmt_human(m->buffers, UNIT_SIZE, u, sizeof u));
  fprintf(f, "    buffers: NCCL's of %ld communicator%s and %ld pipeline "
          "peer%s, cuBLAS workspaces (an estimate)", m->communicators,
          m->communicators == 1 ? "" : "s", m->p2p_peers,
          m->p2p_peers == 1 ? "" : "s");
  if (m->shard > 1)
    fprintf(f, "; ZeRO-%d shards over %.0f GPUs", p->zero, m->shard);
  if (m->expert_shard > 1)
    fprintf(f, ", experts' over %.0f", m->expert_shard);
  fputc('\n', f);
  if (p->mem_framework != MF_ZERO)
    fprintf(f, "    allocations as %s makes them (--mem-framework), with "
            "the CUDA context; the allocator's fragmentation not counted\n",
            mem_framework_name(p->mem_framework));
  if (r->fit_hint[0])
    fprintf(f, "    to fit: %s (%s)\n", r->fit_hint,
            units_fmt_human(r->fit_hint_bytes, UNIT_SIZE, t, sizeof t));
  else if (!m->fits)
    fprintf(f, "    no single change of recomputation, ZeRO stage, "
            "micro-batch, TP or PP makes it fit\n");
  fprintf(f, "  simulated %ld kernels and %ld flows in %.2f s%s\n", res->kernels,
          res->flows, r->sim_wall_s,
          res->stage_reps && res->symmetric
              ? " (TP and replica symmetry: one TP rank of each stage's "
                "first node, or of each class of its nodes; --every-rank "
                "for all)"
          : res->stage_reps ? " (replica symmetry: the ranks of each stage's "
                              "first node, or of each class of its nodes; "
                              "--every-rank for all)"
          : res->replicas && res->symmetric
              ? " (TP and replica symmetry: one TP rank of node 0; "
                "--every-rank for all)"
          : res->replicas  ? " (replica symmetry: node 0's ranks; --every-rank "
                             "for all)"
          : res->symmetric ? " (TP symmetry: one TP rank per node; "
                             "--every-rank for all)"
                           : "");
}
