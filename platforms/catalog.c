/*
 * catalog.c - load the hardware catalog from XML.
 *
 * Invariant: names are unique case-insensitively within each kind; a later
 * entry of the same name replaces the earlier one in place, so a user file
 * can correct a built-in value without renaming it.
 */
#include "platforms/catalog.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "sim/base/units.h"
#include "sim/base/xalloc.h"
#include "sim/base/xin.h"

extern const char weft_catalog_xml[];
extern const unsigned long weft_catalog_xml_len;

const struct hw_scale hw_scale_none = {1.0, 1.0, 1.0, 1.0, 1.0};

static const char *const dtype_names[DTYPE_COUNT] = {"fp32", "tf32", "bf16",
                                                     "fp16", "fp8"};

const char *dtype_name(enum dtype t) { return dtype_names[t]; }

double dtype_bytes(enum dtype t)
{
  static const double b[DTYPE_COUNT] = {4, 4, 2, 2, 1};
  return b[t];
}

static const char *const attn_names[AK_COUNT] = {"flash2", "flash3",
                                                  "cudnn"};

const char *attn_kernel_name(enum attn_kernel k) { return attn_names[k]; }

int attn_kernel_from_name(const char *name)
{
  for (int i = 0; i < AK_COUNT; i++)
    if (strcmp(name, attn_names[i]) == 0)
      return i;
  return -1;
}

bool dtype_from_name(const char *name, enum dtype *out)
{
  for (int i = 0; i < DTYPE_COUNT; i++)
    if (strcasecmp(name, dtype_names[i]) == 0) {
      *out = (enum dtype)i;
      return true;
    }
  return false;
}

struct catalog *catalog_new(void) { return xcalloc(1, sizeof(struct catalog)); }

void catalog_free(struct catalog *cat)
{
  if (!cat)
    return;
  free(cat->gpus);
  free(cat->nics);
  free(cat->nodes);
  free(cat->switches);
  free(cat->trends);
  free(cat->overrides);
  free(cat);
}

#define FIND(arr, count, key)                                                  \
  do {                                                                         \
    for (int i_ = 0; i_ < (count); i_++)                                       \
      if (strcasecmp((arr)[i_].name, (key)) == 0)                              \
        return &(arr)[i_];                                                     \
    return NULL;                                                               \
  } while (0)

const struct gpu_spec *catalog_gpu(const struct catalog *cat, const char *n)
{
  FIND(cat->gpus, cat->n_gpus, n);
}

const struct nic_spec *catalog_nic(const struct catalog *cat, const char *n)
{
  FIND(cat->nics, cat->n_nics, n);
}

const struct node_spec *catalog_node(const struct catalog *cat, const char *n)
{
  FIND(cat->nodes, cat->n_nodes, n);
}

const struct switch_spec *catalog_switch(const struct catalog *cat,
                                         const char *n)
{
  FIND(cat->switches, cat->n_switches, n);
}

const struct trend *catalog_trend(const struct catalog *cat, const char *n)
{
  FIND(cat->trends, cat->n_trends, n);
}

const struct switch_spec *catalog_switch_for(const struct catalog *cat,
                                             const char *nic)
{
  for (int i = 0; i < cat->n_switches; i++)
    if (strcasecmp(cat->switches[i].nic, nic) == 0)
      return &cat->switches[i];
  return NULL;
}

/* Return the slot for `name` in a growable array: the existing entry of that
 * name, or a new zeroed one at the end.  NULL when the array is full.  The
 * first `builtin` entries are the built-in catalog's: replacing one is
 * allowed (a user file corrects a value) but recorded in cat->overrides
 * with element e's file and line, for the command to warn about. */
static void *slot(struct catalog *cat, const struct xin_doc *doc,
                  const struct xin_elem *e, void **arr, int *n, int builtin,
                  size_t size, const char *name)
{
  char *base = *arr;
  for (int i = 0; i < *n; i++)
    if (strcasecmp(base + (size_t)i * size, name) == 0) {
      if (i < builtin && cat->n_overrides < WEFT_MAX_CATALOG_ENTRIES) {
        cat->overrides = xreallocarray(cat->overrides,
                                       (size_t)cat->n_overrides + 1,
                                       sizeof *cat->overrides);
        struct catalog_override *o = &cat->overrides[cat->n_overrides++];
        snprintf(o->file, sizeof o->file, "%s", xin_doc_name(doc));
        o->line = xin_line_in(doc, e);
        snprintf(o->elem, sizeof o->elem, "%s", xin_name(e));
        snprintf(o->name, sizeof o->name, "%s", name);
      }
      return base + (size_t)i * size;
    }
  if (*n >= WEFT_MAX_CATALOG_ENTRIES)
    return NULL;
  base = xreallocarray(base, (size_t)*n + 1, size);
  *arr = base;
  void *p = base + (size_t)(*n)++ * size;
  memset(p, 0, size);
  return p;
}

void gpu_spec_scale(struct gpu_spec *g, const struct hw_scale *s)
{
  for (int t = 0; t < DTYPE_COUNT; t++)
    g->peak_flops[t] *= s->compute;
  g->hbm_bw_Bps *= s->hbm_bw;
  g->hbm_bytes *= s->hbm_cap;
  g->nvlink_bw_Bps *= s->nvlink;
}

int gpu_spec_check(const struct gpu_spec *g, struct weft_err *err)
{
  if (g->peak_flops[DTYPE_FP32] <= 0 && g->peak_flops[DTYPE_BF16] <= 0)
    return weft_errf(err, WEFT_EINVAL, "GPU '%s' has neither FP32 nor BF16 "
                     "throughput", g->name);
  if (g->idle_w > g->max_w)
    return weft_errf(err, WEFT_EINVAL, "GPU '%s': idle power exceeds maximum "
                     "power", g->name);
  return 0;
}

/* Limits on catalog values: generous enough for hardware decades out, small
 * enough to catch a wrong prefix. */
#define MAX_FLOPS 1e18   /* 1 Eflop/s per GPU */
#define MAX_BYTES 1e15   /* 1 PB of HBM */
#define MAX_BW 1e15      /* 1 PB/s */
#define MAX_LAT 1.0      /* 1 s */
#define MIN_YEAR 1990.0  /* years of hardware and of projections */
#define MAX_YEAR 2100.0
#define MAX_POWER 1e5    /* 100 kW */
#define MAX_PRICE 1e9    /* US dollars, one part */

static const char *const gpu_attrs[] = {
    "name", "fp32", "tf32", "bf16", "fp16", "fp8", "hbm", "hbm_bw",
    "nvlink_bw", "idle_power", "max_power", "sms", "gemm_eff", "gemm_eff_fp8",
    "gemm_k_half", "gemm_k_half_fp8",
    "attn_eff", "mem_eff", "norm_eff", "norm_bwd_eff", "loss_eff",
    "loss_bwd_eff", "optim_eff", "launch", "year", "mxfp8", "source", NULL};

static int read_bool(const struct xin_doc *doc, const struct xin_elem *e,
                     const char *attr, bool *out, struct weft_err *err);

static const char *const attn_attrs[] = {
    "kernel", "default", "fwd_eff", "fwd_d64", "fwd_d256", "fwd_seq_half",
    "fwd_causal_seq", "bwd_eff", "bwd_d64", "bwd_d256", "bwd_seq_half",
    "bwd_causal_seq", "source", NULL};

/* One direction's constants, attributes "<dir>_eff" and so on. */
static int read_attn_dir(const struct xin_doc *doc, const struct xin_elem *e,
                         const char *dir, struct attn_dir *d,
                         struct weft_err *err)
{
  static const char *const keys[] = {"eff", "d64", "d256", "seq_half",
                                     "causal_seq"};
  double *v[] = {&d->eff, &d->d64, &d->d256, &d->seq_half, &d->causal_seq};
  static const double lo[] = {0.01, 0.05, 0.05, 0, 0};
  static const double hi[] = {1, 2, 2, 1e6, 1e6};
  char name[32];
  int rc = 0;
  for (int i = 0; i < 5 && !rc; i++) {
    snprintf(name, sizeof name, "%s_%s", dir, keys[i]);
    rc = xin_real(doc, e, name, true, lo[i], hi[i], v[i], err);
  }
  return rc;
}

/* The <attention> children of a <gpu>: the fused kernels it runs. */
static int read_attention(struct gpu_spec *g, const struct xin_doc *doc,
                          const struct xin_elem *gpu, struct weft_err *err)
{
  g->attn_default = -1;
  int rc = 0, first = -1;
  for (const struct xin_elem *e = xin_child(gpu); e && !rc; e = xin_next(e)) {
    if (strcmp(xin_name(e), "attention") != 0)
      return xin_errf(doc, e, err, WEFT_EINVAL, "unknown element in <gpu>; "
                      "expected attention");
    char kname[WEFT_MAX_NAME], def[8] = "no";
    struct attn_spec a = {.have = true};
    rc = xin_check_attrs(doc, e, attn_attrs, err);
    if (!rc)
      rc = xin_str(doc, e, "kernel", true, kname, sizeof kname, err);
    int k = rc ? -1 : attn_kernel_from_name(kname);
    if (!rc && k < 0)
      return xin_errf(doc, e, err, WEFT_EINVAL, "unknown attention kernel "
                      "'%s'; expected flash2, flash3 or cudnn", kname);
    if (!rc && g->attn[k].have)
      return xin_errf(doc, e, err, WEFT_EINVAL, "attention kernel '%s' "
                      "given twice", kname);
    if (!rc)
      rc = read_attn_dir(doc, e, "fwd", &a.fwd, err);
    if (!rc)
      rc = read_attn_dir(doc, e, "bwd", &a.bwd, err);
    if (!rc)
      rc = xin_str(doc, e, "default", false, def, sizeof def, err);
    if (!rc && strcmp(def, "yes") != 0 && strcmp(def, "no") != 0)
      return xin_errf(doc, e, err, WEFT_EINVAL, "default='%s' is not yes or "
                      "no", def);
    if (!rc)
      rc = xin_str(doc, e, "source", false, a.source, sizeof a.source, err);
    if (rc)
      return rc;
    if (strcmp(def, "yes") == 0) {
      if (g->attn_default >= 0)
        return xin_errf(doc, e, err, WEFT_EINVAL, "a second default "
                        "attention kernel");
      g->attn_default = k;
    }
    g->attn[k] = a;
    if (first < 0)
      first = k;
  }
  if (g->attn_default < 0)
    g->attn_default = first; /* the first one given, or none */
  return rc;
}

static int read_gpu(struct catalog *cat, const struct xin_doc *doc,
                    const struct xin_elem *e, struct weft_err *err)
{
  struct gpu_spec g = {0};
  long sms = 0;
  g.gemm_eff = 0.75;
  g.gemm_k_half = 64;
  g.attn_eff = 0.55;
  g.mem_eff = 0.8;
  g.launch_s = 3e-6;
  int rc = xin_check_attrs(doc, e, gpu_attrs, err);
  if (!rc)
    rc = xin_str(doc, e, "name", true, g.name, sizeof g.name, err);
  for (int t = 0; t < DTYPE_COUNT && !rc; t++)
    rc = xin_quantity0(doc, e, dtype_names[t], true, UNIT_FLOPS, MAX_FLOPS,
                       &g.peak_flops[t], err);
  if (!rc)
    rc = xin_quantity(doc, e, "hbm", true, UNIT_SIZE, MAX_BYTES, &g.hbm_bytes,
                      err);
  if (!rc)
    rc = xin_quantity(doc, e, "hbm_bw", true, UNIT_BW, MAX_BW, &g.hbm_bw_Bps,
                      err);
  if (!rc)
    rc = xin_quantity(doc, e, "nvlink_bw", true, UNIT_BW, MAX_BW,
                      &g.nvlink_bw_Bps, err);
  if (!rc)
    rc = xin_quantity0(doc, e, "idle_power", true, UNIT_POWER, MAX_POWER,
                       &g.idle_w, err);
  if (!rc)
    rc = xin_quantity(doc, e, "max_power", true, UNIT_POWER, MAX_POWER,
                      &g.max_w, err);
  if (!rc)
    rc = xin_int(doc, e, "sms", false, 0, 100000, &sms, err);
  if (!rc)
    rc = xin_real(doc, e, "gemm_eff", false, 0.01, 1, &g.gemm_eff, err);
  if (!rc && xin_has(e, "gemm_eff_fp8"))
    rc = xin_real(doc, e, "gemm_eff_fp8", false, 0.01, 1, &g.gemm_eff_fp8,
                  err);
  if (!rc)
    rc = xin_real(doc, e, "gemm_k_half", false, 0, 65536, &g.gemm_k_half,
                  err);
  if (!rc && xin_has(e, "gemm_k_half_fp8"))
    rc = xin_real(doc, e, "gemm_k_half_fp8", false, 0, 65536,
                  &g.gemm_k_half_fp8, err);
  if (!rc)
    rc = xin_real(doc, e, "attn_eff", false, 0.01, 1, &g.attn_eff, err);
  if (!rc)
    rc = xin_real(doc, e, "mem_eff", false, 0.01, 1, &g.mem_eff, err);
  static const char *const fam[] = {"norm_eff", "norm_bwd_eff", "loss_eff",
                                    "loss_bwd_eff", "optim_eff"};
  double *fam_v[] = {&g.norm_eff, &g.norm_bwd_eff, &g.loss_eff,
                     &g.loss_bwd_eff, &g.optim_eff};
  for (int i = 0; i < 5 && !rc; i++)
    if (xin_has(e, fam[i]))
      rc = xin_real(doc, e, fam[i], false, 0.01, 1, fam_v[i], err);
  if (!rc)
    rc = read_bool(doc, e, "mxfp8", &g.mxfp8, err);
  if (!rc && g.mxfp8 && g.peak_flops[DTYPE_FP8] <= 0)
    return xin_errf(doc, e, err, WEFT_EINVAL, "mxfp8='yes' without FP8 "
                    "compute (fp8)");
  if (!rc)
    rc = xin_quantity0(doc, e, "launch", false, UNIT_TIME, MAX_LAT,
                       &g.launch_s, err);
  if (!rc)
    rc = xin_real(doc, e, "year", false, MIN_YEAR, MAX_YEAR, &g.year, err);
  if (!rc)
    rc = xin_str(doc, e, "source", false, g.source, sizeof g.source, err);
  if (!rc)
    rc = read_attention(&g, doc, e, err);
  if (rc)
    return rc;
  g.sms = (int)sms;
  if ((rc = gpu_spec_check(&g, err)))
    return xin_errf(doc, e, err, rc, "%s", err ? err->msg : "");
  struct gpu_spec *s = slot(cat, doc, e, (void **)&cat->gpus, &cat->n_gpus,
                            cat->builtin[CATALOG_GPUS], sizeof g,
                            g.name);
  if (!s)
    return xin_errf(doc, e, err, WEFT_ELIMIT, "more than %d GPU entries",
                    WEFT_MAX_CATALOG_ENTRIES);
  *s = g;
  return 0;
}

static const char *const future_attrs[] = {
    "name", "base", "compute", "hbm_bw", "hbm_cap", "nvlink", "source", NULL};

static int read_future(struct catalog *cat, const struct xin_doc *doc,
                       const struct xin_elem *e, struct weft_err *err)
{
  char name[WEFT_MAX_NAME], base[WEFT_MAX_NAME];
  char source[WEFT_MAX_SOURCE] = "";
  struct hw_scale f = hw_scale_none;
  int rc = xin_check_attrs(doc, e, future_attrs, err);
  if (!rc)
    rc = xin_str(doc, e, "name", true, name, sizeof name, err);
  if (!rc)
    rc = xin_str(doc, e, "base", true, base, sizeof base, err);
  if (!rc)
    rc = xin_real(doc, e, "compute", false, 1e-6, WEFT_MAX_SCALE, &f.compute,
                  err);
  if (!rc)
    rc = xin_real(doc, e, "hbm_bw", false, 1e-6, WEFT_MAX_SCALE, &f.hbm_bw,
                  err);
  if (!rc)
    rc = xin_real(doc, e, "hbm_cap", false, 1e-6, WEFT_MAX_SCALE, &f.hbm_cap,
                  err);
  if (!rc)
    rc = xin_real(doc, e, "nvlink", false, 1e-6, WEFT_MAX_SCALE, &f.nvlink,
                  err);
  if (!rc)
    rc = xin_str(doc, e, "source", false, source, sizeof source, err);
  if (rc)
    return rc;
  const struct gpu_spec *b = catalog_gpu(cat, base);
  if (!b)
    return xin_errf(doc, e, err, WEFT_ENOTFOUND, "unknown base GPU '%s'",
                    base);
  struct gpu_spec g = *b;
  gpu_spec_scale(&g, &f);
  memcpy(g.name, name, sizeof g.name);
  if (source[0])
    memcpy(g.source, source, sizeof g.source);
  else
    snprintf(g.source, sizeof g.source, "%s scaled: compute x%g, HBM bw x%g, "
             "HBM capacity x%g, NVLink x%g", b->name, f.compute, f.hbm_bw,
             f.hbm_cap, f.nvlink);
  struct gpu_spec *s = slot(cat, doc, e, (void **)&cat->gpus, &cat->n_gpus,
                            cat->builtin[CATALOG_GPUS], sizeof g,
                            g.name);
  if (!s)
    return xin_errf(doc, e, err, WEFT_ELIMIT, "more than %d GPU entries",
                    WEFT_MAX_CATALOG_ENTRIES);
  *s = g;
  return 0;
}

/* Optional idle_power and max_power, both or neither, idle <= max. */
static int read_power_pair(const struct xin_doc *doc, const struct xin_elem *e,
                           double *idle, double *max, struct weft_err *err)
{
  bool hi = xin_has(e, "idle_power"), hm = xin_has(e, "max_power");
  if (hi != hm)
    return xin_errf(doc, e, err, WEFT_EINVAL, "idle_power and max_power go "
                    "together");
  int rc = 0;
  if (hi)
    rc = xin_quantity0(doc, e, "idle_power", true, UNIT_POWER, MAX_POWER,
                       idle, err);
  if (!rc && hm)
    rc = xin_quantity(doc, e, "max_power", true, UNIT_POWER, MAX_POWER, max,
                      err);
  if (!rc && *idle > *max)
    return xin_errf(doc, e, err, WEFT_EINVAL, "idle_power exceeds max_power");
  return rc;
}

static const char *const nic_attrs[] = {"name", "bw", "lat", "year",
                                        "idle_power", "max_power", "price",
                                        "source", NULL};

static int read_nic(struct catalog *cat, const struct xin_doc *doc,
                    const struct xin_elem *e, struct weft_err *err)
{
  struct nic_spec n = {0};
  int rc = xin_check_attrs(doc, e, nic_attrs, err);
  if (!rc)
    rc = xin_str(doc, e, "name", true, n.name, sizeof n.name, err);
  if (!rc)
    rc = xin_quantity(doc, e, "bw", true, UNIT_BW, MAX_BW, &n.bw_Bps, err);
  if (!rc)
    rc = xin_quantity0(doc, e, "lat", true, UNIT_TIME, MAX_LAT, &n.lat_s, err);
  if (!rc)
    rc = xin_real(doc, e, "year", false, MIN_YEAR, MAX_YEAR, &n.year, err);
  if (!rc)
    rc = read_power_pair(doc, e, &n.idle_w, &n.max_w, err);
  if (!rc)
    rc = xin_real(doc, e, "price", false, 0, MAX_PRICE, &n.price, err);
  if (!rc)
    rc = xin_str(doc, e, "source", false, n.source, sizeof n.source, err);
  if (rc)
    return rc;
  struct nic_spec *s = slot(cat, doc, e, (void **)&cat->nics, &cat->n_nics,
                            cat->builtin[CATALOG_NICS], sizeof n,
                            n.name);
  if (!s)
    return xin_errf(doc, e, err, WEFT_ELIMIT, "more than %d NIC entries",
                    WEFT_MAX_CATALOG_ENTRIES);
  *s = n;
  return 0;
}

static const char *const node_attrs[] = {"name", "gpu", "gpus", "nic", "nics",
                                         "nvlink_lat", "nvls", "coll_nvlink_eff",
                                         "coll_nvls_eff", "coll_nic_eff",
                                         "coll_lat", "coll_ring_loss", "coll_floor",
                                         "coll_ll_bw", "source",
                                         NULL};

static int read_bool(const struct xin_doc *doc, const struct xin_elem *e,
                     const char *attr, bool *out, struct weft_err *err)
{
  char v[8] = "";
  int rc = xin_str(doc, e, attr, false, v, sizeof v, err);
  if (rc || !v[0])
    return rc;
  if (strcmp(v, "yes") == 0)
    *out = true;
  else if (strcmp(v, "no") == 0)
    *out = false;
  else
    return xin_errf(doc, e, err, WEFT_EINVAL, "attribute '%s': '%s' is not "
                    "yes or no", attr, v);
  return 0;
}

static int read_node(struct catalog *cat, const struct xin_doc *doc,
                     const struct xin_elem *e, struct weft_err *err)
{
  struct node_spec n = {0};
  long gpus = 0, nics = 0;
  n.coll_nvlink_eff = CATALOG_DEFAULT_NVLINK_EFF;
  n.coll_nvls_eff = CATALOG_DEFAULT_NVLS_EFF;
  n.coll_nic_eff = CATALOG_DEFAULT_NIC_EFF;
  n.coll_lat_s = CATALOG_DEFAULT_COLL_LAT;
  n.coll_ll_bw_Bps = CATALOG_DEFAULT_COLL_LL_BW;
  int rc = xin_check_attrs(doc, e, node_attrs, err);
  if (!rc)
    rc = xin_str(doc, e, "name", true, n.name, sizeof n.name, err);
  if (!rc)
    rc = xin_str(doc, e, "gpu", true, n.gpu, sizeof n.gpu, err);
  if (!rc)
    rc = xin_int(doc, e, "gpus", true, 1, WEFT_MAX_GPUS_PER_NODE, &gpus, err);
  if (!rc)
    rc = xin_str(doc, e, "nic", true, n.nic, sizeof n.nic, err);
  if (!rc)
    rc = xin_int(doc, e, "nics", true, 1, WEFT_MAX_NICS_PER_NODE, &nics, err);
  if (!rc)
    rc = xin_quantity0(doc, e, "nvlink_lat", true, UNIT_TIME, MAX_LAT,
                       &n.nvlink_lat_s, err);
  if (!rc)
    rc = read_bool(doc, e, "nvls", &n.nvls, err);
  if (!rc)
    rc = xin_real(doc, e, "coll_nvlink_eff", false, 0.01, 1,
                  &n.coll_nvlink_eff, err);
  if (!rc)
    rc = xin_real(doc, e, "coll_nvls_eff", false, 0.01, 1, &n.coll_nvls_eff,
                  err);
  if (!rc)
    rc = xin_real(doc, e, "coll_nic_eff", false, 0.01, 1, &n.coll_nic_eff,
                  err);
  if (!rc)
    rc = xin_quantity0(doc, e, "coll_lat", false, UNIT_TIME, MAX_LAT,
                       &n.coll_lat_s, err);
  if (!rc)
    rc = xin_real(doc, e, "coll_ring_loss", false, 0, 0.2, &n.coll_ring_loss,
                  err);
  if (!rc)
    rc = xin_quantity0(doc, e, "coll_floor", false, UNIT_TIME, MAX_LAT,
                       &n.coll_floor_s, err);
  if (!rc)
    rc = xin_quantity0(doc, e, "coll_ll_bw", false, UNIT_BW, MAX_BW,
                       &n.coll_ll_bw_Bps, err);
  if (!rc)
    rc = xin_str(doc, e, "source", false, n.source, sizeof n.source, err);
  if (rc)
    return rc;
  n.gpus = (int)gpus;
  n.nics = (int)nics;
  if (!catalog_gpu(cat, n.gpu))
    return xin_errf(doc, e, err, WEFT_ENOTFOUND, "unknown GPU '%s'", n.gpu);
  if (!catalog_nic(cat, n.nic))
    return xin_errf(doc, e, err, WEFT_ENOTFOUND, "unknown NIC '%s'", n.nic);
  if (n.gpus % n.nics != 0)
    return xin_errf(doc, e, err, WEFT_EINVAL, "%d NICs do not divide %d GPUs",
                    n.nics, n.gpus);
  struct node_spec *s = slot(cat, doc, e, (void **)&cat->nodes, &cat->n_nodes,
                             cat->builtin[CATALOG_NODES], sizeof n,
                             n.name);
  if (!s)
    return xin_errf(doc, e, err, WEFT_ELIMIT, "more than %d node entries",
                    WEFT_MAX_CATALOG_ENTRIES);
  *s = n;
  return 0;
}

static const char *const switch_attrs[] = {"name", "nic", "ports",
                                           "idle_power", "max_power",
                                           "price", "link_price", "source",
                                           NULL};

static int read_switch(struct catalog *cat, const struct xin_doc *doc,
                       const struct xin_elem *e, struct weft_err *err)
{
  struct switch_spec w = {0};
  long ports = 0;
  int rc = xin_check_attrs(doc, e, switch_attrs, err);
  if (!rc)
    rc = xin_str(doc, e, "name", true, w.name, sizeof w.name, err);
  if (!rc)
    rc = xin_str(doc, e, "nic", true, w.nic, sizeof w.nic, err);
  if (!rc)
    rc = xin_int(doc, e, "ports", true, 1, 100000, &ports, err);
  if (!rc && (!xin_has(e, "idle_power") || !xin_has(e, "max_power")))
    return xin_errf(doc, e, err, WEFT_EINVAL, "a switch needs idle_power "
                    "and max_power");
  if (!rc)
    rc = read_power_pair(doc, e, &w.idle_w, &w.max_w, err);
  if (!rc)
    rc = xin_real(doc, e, "price", false, 0, MAX_PRICE, &w.price, err);
  if (!rc)
    rc = xin_real(doc, e, "link_price", false, 0, MAX_PRICE, &w.link_price,
                  err);
  if (!rc)
    rc = xin_str(doc, e, "source", false, w.source, sizeof w.source, err);
  if (rc)
    return rc;
  if (!catalog_nic(cat, w.nic))
    return xin_errf(doc, e, err, WEFT_ENOTFOUND, "unknown NIC '%s'", w.nic);
  w.ports = (int)ports;
  struct switch_spec *s = slot(cat, doc, e, (void **)&cat->switches,
                               &cat->n_switches,
                               cat->builtin[CATALOG_SWITCHES], sizeof w, w.name);
  if (!s)
    return xin_errf(doc, e, err, WEFT_ELIMIT, "more than %d switch entries",
                    WEFT_MAX_CATALOG_ENTRIES);
  *s = w;
  return 0;
}

static const char *const growth_names[GQ_COUNT] = {
    "fp32", "tf32", "bf16", "fp16", "fp8", "hbm_bw", "hbm_cap", "nvlink",
    "nic", "power"};

const char *growth_q_name(enum growth_q q) { return growth_names[q]; }

int growth_q_from_name(const char *name)
{
  for (int i = 0; i < GQ_COUNT; i++)
    if (strcmp(name, growth_names[i]) == 0)
      return i;
  return -1;
}

static const char *const trend_attrs[] = {"name", "generation_years",
                                          "source", NULL};
static const char *const rate_attrs[] = {"quantity", "per_year",
                                         "per_generation", "source", NULL};

/* A <trend> and its <rate> children: every quantity exactly once, as a
 * factor per year or per generation (> 0; below 1 is a decline). */
static int read_trend(struct catalog *cat, const struct xin_doc *doc,
                      const struct xin_elem *e, struct weft_err *err)
{
  struct trend t = {0};
  int rc = xin_check_attrs(doc, e, trend_attrs, err);
  if (!rc)
    rc = xin_str(doc, e, "name", true, t.name, sizeof t.name, err);
  if (!rc)
    rc = xin_real(doc, e, "generation_years", true, 0.1, 20,
                  &t.generation_years, err);
  if (!rc)
    rc = xin_str(doc, e, "source", false, t.source, sizeof t.source, err);
  for (const struct xin_elem *r = xin_child(e); r && !rc; r = xin_next(r)) {
    char q[32];
    double v = 0;
    if (strcmp(xin_name(r), "rate") != 0)
      return xin_errf(doc, r, err, WEFT_EINVAL, "unknown element; expected "
                      "rate");
    rc = xin_check_attrs(doc, r, rate_attrs, err);
    if (!rc)
      rc = xin_str(doc, r, "quantity", true, q, sizeof q, err);
    int k = rc ? -1 : growth_q_from_name(q);
    if (!rc && k < 0)
      return xin_errf(doc, r, err, WEFT_EINVAL, "unknown quantity '%s'; "
                      "expected fp32, tf32, bf16, fp16, fp8, hbm_bw, "
                      "hbm_cap, nvlink, nic or power", q);
    if (!rc && t.per_year[k] > 0)
      return xin_errf(doc, r, err, WEFT_EINVAL, "quantity '%s' given twice",
                      q);
    bool py = xin_has(r, "per_year"), pg = xin_has(r, "per_generation");
    if (!rc && py == pg)
      return xin_errf(doc, r, err, WEFT_EINVAL, "give per_year or "
                      "per_generation, not %s", py ? "both" : "neither");
    if (!rc)
      rc = xin_real(doc, r, py ? "per_year" : "per_generation", true, 0.01,
                    100, &v, err);
    if (!rc)
      rc = xin_str(doc, r, "source", true, t.rate_source[k],
                   sizeof t.rate_source[k], err);
    if (!rc)
      t.per_year[k] = py ? v : pow(v, 1.0 / t.generation_years);
  }
  for (int k = 0; k < GQ_COUNT && !rc; k++)
    if (!(t.per_year[k] > 0))
      return xin_errf(doc, e, err, WEFT_EINVAL, "trend '%s' gives no rate "
                      "for %s", t.name, growth_names[k]);
  if (rc)
    return rc;
  struct trend *s = slot(cat, doc, e, (void **)&cat->trends, &cat->n_trends,
                         cat->builtin[CATALOG_TRENDS], sizeof t,
                         t.name);
  if (!s)
    return xin_errf(doc, e, err, WEFT_ELIMIT, "more than %d trend entries",
                    WEFT_MAX_CATALOG_ENTRIES);
  *s = t;
  return 0;
}

int catalog_add_elem(struct catalog *cat, const struct xin_doc *doc,
                     const struct xin_elem *e, struct weft_err *err)
{
  const char *n = xin_name(e);
  if (strcmp(n, "gpu") == 0)
    return read_gpu(cat, doc, e, err);
  if (strcmp(n, "nic") == 0)
    return read_nic(cat, doc, e, err);
  if (strcmp(n, "node") == 0)
    return read_node(cat, doc, e, err);
  if (strcmp(n, "future") == 0)
    return read_future(cat, doc, e, err);
  if (strcmp(n, "switch") == 0)
    return read_switch(cat, doc, e, err);
  if (strcmp(n, "trend") == 0)
    return read_trend(cat, doc, e, err);
  return xin_errf(doc, e, err, WEFT_EINVAL, "unknown element; expected gpu, "
                  "nic, node, future, switch or trend");
}

static int load_doc(struct catalog *cat, struct xin_doc *doc,
                    struct weft_err *err)
{
  const struct xin_elem *root = xin_root(doc);
  int rc = xin_check_root(doc, "catalog", err);
  if (!rc)
    rc = xin_check_attrs(doc, root, (const char *const[]){NULL}, err);
  for (const struct xin_elem *e = xin_child(root); e && !rc; e = xin_next(e))
    rc = catalog_add_elem(cat, doc, e, err);
  xin_free(doc);
  return rc;
}

int catalog_load_mem(struct catalog *cat, const char *buf, unsigned long len,
                     const char *name, struct weft_err *err)
{
  struct xin_doc *doc = xin_parse_mem(buf, len, name, err);
  if (!doc)
    return err ? err->code : WEFT_EINVAL;
  return load_doc(cat, doc, err);
}

int catalog_load_file(struct catalog *cat, const char *path,
                      struct weft_err *err)
{
  struct xin_doc *doc = xin_parse_file(path, err);
  if (!doc)
    return err ? err->code : WEFT_EIO;
  return load_doc(cat, doc, err);
}

struct catalog *catalog_builtin(struct weft_err *err)
{
  struct catalog *cat = catalog_new();
  if (catalog_load_mem(cat, weft_catalog_xml, weft_catalog_xml_len,
                       "platforms/catalog.xml", err)) {
    catalog_free(cat);
    return NULL;
  }
  cat->builtin[CATALOG_GPUS] = cat->n_gpus;
  cat->builtin[CATALOG_NICS] = cat->n_nics;
  cat->builtin[CATALOG_NODES] = cat->n_nodes;
  cat->builtin[CATALOG_SWITCHES] = cat->n_switches;
  cat->builtin[CATALOG_TRENDS] = cat->n_trends;
  return cat;
}
