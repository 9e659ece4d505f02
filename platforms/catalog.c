/*
 * catalog.c - load the hardware catalog from XML.
 *
 * Invariant: names are unique case-insensitively within each kind; a later
 * entry of the same name replaces the earlier one in place, so a user file
 * can correct a built-in value without renaming it.
 */
#include "platforms/catalog.h"

#include <math.h>
#include <stddef.h>
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

const struct switch_spec *catalog_switch_for_rate(const struct catalog *cat,
                                                  double bw_Bps)
{
  const struct switch_spec *best = NULL;
  double best_bw = 0;
  for (int i = 0; i < cat->n_switches; i++) {
    const struct nic_spec *n = catalog_nic(cat, cat->switches[i].nic);
    if (n && n->bw_Bps >= bw_Bps * (1 - 1e-9) &&
        (!best || n->bw_Bps < best_bw)) {
      best = &cat->switches[i];
      best_bw = n->bw_Bps;
    }
  }
  return best;
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
  /* Each phase's power lies between idle and the maximum (report.c). */
  const struct {
    const char *name;
    double w;
  } phase[] = {{"mem_power", g->mem_w}, {"comm_power", g->comm_w}};
  for (int i = 0; i < 2; i++)
    if (phase[i].w > 0 && (phase[i].w < g->idle_w || phase[i].w > g->max_w))
      return weft_errf(err, WEFT_EINVAL, "GPU '%s': %s %g W is not between "
                       "idle_power %g W and max_power %g W", g->name,
                       phase[i].name, phase[i].w, g->idle_w, g->max_w);
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

/* How one attribute of a catalog element is read (the KEYS tables below).
 * The reading functions' own rules apply: a missing optional attribute
 * leaves its field at the element's default. */
enum key_kind {
  KEY_STR,        /* a string into char[size] */
  KEY_QTY,        /* a positive quantity of `unit`, at most hi */
  KEY_QTY0,       /* the same, zero allowed */
  KEY_INT,        /* an integer in [lo, hi] into an int */
  KEY_REAL,       /* a plain real in [lo, hi] */
  KEY_BOOL,       /* yes or no */
  KEY_POWER_PAIR  /* idle_power into off and max_power into off2, both or
                     neither (both when required), idle <= max */
};

struct key {
  const char *name;
  enum key_kind kind;
  bool required;
  enum unit_kind unit;        /* KEY_QTY, KEY_QTY0 */
  double lo, hi;              /* KEY_INT, KEY_REAL: range; KEY_QTY*: hi */
  size_t off;                 /* of the field in the element's struct */
  size_t size;                /* KEY_STR: of the buffer */
  size_t off2;                /* KEY_POWER_PAIR: of max_power's field */
  double def;                 /* KEY_REAL, KEY_QTY*: set before reading */
};

#define K_STR(n, req, T, f)                                                    \
  {n, KEY_STR, req, UNIT_NONE, 0, 0, offsetof(T, f), sizeof((T *)0)->f, 0, 0}
#define K_QTY(n, req, unit, max, T, f, d)                                      \
  {n, KEY_QTY, req, unit, 0, max, offsetof(T, f), 0, 0, d}
#define K_QTY0(n, req, unit, max, T, f, d)                                     \
  {n, KEY_QTY0, req, unit, 0, max, offsetof(T, f), 0, 0, d}
#define K_INT(n, req, lo, hi, T, f)                                            \
  {n, KEY_INT, req, UNIT_NONE, lo, hi, offsetof(T, f), 0, 0, 0}
#define K_REAL(n, req, lo, hi, T, f, d)                                        \
  {n, KEY_REAL, req, UNIT_NONE, lo, hi, offsetof(T, f), 0, 0, d}
#define K_BOOL(n, T, f)                                                        \
  {n, KEY_BOOL, false, UNIT_NONE, 0, 0, offsetof(T, f), 0, 0, 0}
#define K_POWER(req, T, idle, max)                                             \
  {"idle_power", KEY_POWER_PAIR, req, UNIT_NONE, 0, 0, offsetof(T, idle), 0,   \
   offsetof(T, max), 0}
#define KEYS_N(a) ((int)(sizeof(a) / sizeof((a)[0])))

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

/* Optional idle_power and max_power, both or neither, idle <= max; both
 * when `required` ("a switch needs idle_power and max_power"). */
static int read_power_pair(const struct xin_doc *doc, const struct xin_elem *e,
                           bool required, double *idle, double *max,
                           struct weft_err *err)
{
  bool hi = xin_has(e, "idle_power"), hm = xin_has(e, "max_power");
  if (required && (!hi || !hm))
    return xin_errf(doc, e, err, WEFT_EINVAL, "a %s needs idle_power "
                    "and max_power", xin_name(e));
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

static int read_key(const struct xin_doc *doc, const struct xin_elem *e,
                    const struct key *k, char *base, struct weft_err *err)
{
  void *f = base + k->off;
  long v;
  int rc;
  switch (k->kind) {
  case KEY_STR:
    return xin_str(doc, e, k->name, k->required, f, k->size, err);
  case KEY_QTY:
    return xin_quantity(doc, e, k->name, k->required, k->unit, k->hi, f, err);
  case KEY_QTY0:
    return xin_quantity0(doc, e, k->name, k->required, k->unit, k->hi, f,
                         err);
  case KEY_INT:
    v = *(int *)f;
    rc = xin_int(doc, e, k->name, k->required, (long)k->lo, (long)k->hi, &v,
                 err);
    if (!rc)
      *(int *)f = (int)v; /* within [lo, hi], which fit an int */
    return rc;
  case KEY_REAL:
    return xin_real(doc, e, k->name, k->required, k->lo, k->hi, f, err);
  case KEY_BOOL:
    return read_bool(doc, e, k->name, f, err);
  case KEY_POWER_PAIR:
    return read_power_pair(doc, e, k->required, f,
                           (double *)(void *)(base + k->off2), err);
  }
  return WEFT_EINVAL;
}

/* Set the defaults of `n` keys into the struct at `base`. */
static void key_defaults(const struct key *keys, int n, char *base)
{
  for (int i = 0; i < n; i++)
    if (keys[i].def != 0)
      *(double *)(void *)(base + keys[i].off) = keys[i].def;
}

/* Read `n` keys in table order into the struct at `base`; the first error
 * wins, so the order of a table is the order of its messages. */
static int read_keys(const struct xin_doc *doc, const struct xin_elem *e,
                     const struct key *keys, int n, void *base,
                     struct weft_err *err)
{
  int rc = 0;
  for (int i = 0; i < n && !rc; i++)
    rc = read_key(doc, e, &keys[i], (char *)base, err);
  return rc;
}

static const char *const gpu_attrs[] = {
    "name", "fp32", "tf32", "bf16", "fp16", "fp8", "hbm", "hbm_bw",
    "nvlink_bw", "idle_power", "max_power", "mem_power", "comm_power", "sms", "gemm_eff", "gemm_eff_fp8",
    "gemm_k_half", "gemm_k_half_fp8",
    "attn_eff", "mem_eff", "norm_eff", "norm_bwd_eff", "loss_eff",
    "loss_bwd_eff", "optim_eff", "launch", "year", "mxfp8", "source", NULL};

#define G struct gpu_spec
/* A <gpu>'s attributes up to mxfp8, which is checked against fp8 before
 * the rest (gpu_late_keys) are read. */
static const struct key gpu_keys[] = {
    K_STR("name", true, G, name),
    K_QTY0("fp32", true, UNIT_FLOPS, MAX_FLOPS, G, peak_flops[DTYPE_FP32], 0),
    K_QTY0("tf32", true, UNIT_FLOPS, MAX_FLOPS, G, peak_flops[DTYPE_TF32], 0),
    K_QTY0("bf16", true, UNIT_FLOPS, MAX_FLOPS, G, peak_flops[DTYPE_BF16], 0),
    K_QTY0("fp16", true, UNIT_FLOPS, MAX_FLOPS, G, peak_flops[DTYPE_FP16], 0),
    K_QTY0("fp8", true, UNIT_FLOPS, MAX_FLOPS, G, peak_flops[DTYPE_FP8], 0),
    K_QTY("hbm", true, UNIT_SIZE, MAX_BYTES, G, hbm_bytes, 0),
    K_QTY("hbm_bw", true, UNIT_BW, MAX_BW, G, hbm_bw_Bps, 0),
    K_QTY("nvlink_bw", true, UNIT_BW, MAX_BW, G, nvlink_bw_Bps, 0),
    K_QTY0("idle_power", true, UNIT_POWER, MAX_POWER, G, idle_w, 0),
    K_QTY("max_power", true, UNIT_POWER, MAX_POWER, G, max_w, 0),
    K_QTY0("mem_power", false, UNIT_POWER, MAX_POWER, G, mem_w, 0),
    K_QTY0("comm_power", false, UNIT_POWER, MAX_POWER, G, comm_w, 0),
    K_INT("sms", false, 0, 100000, G, sms),
    K_REAL("gemm_eff", false, 0.01, 1, G, gemm_eff, 0.75),
    K_REAL("gemm_eff_fp8", false, 0.01, 1, G, gemm_eff_fp8, 0),
    K_REAL("gemm_k_half", false, 0, 65536, G, gemm_k_half, 64),
    K_REAL("gemm_k_half_fp8", false, 0, 65536, G, gemm_k_half_fp8, 0),
    K_REAL("attn_eff", false, 0.01, 1, G, attn_eff, 0.55),
    K_REAL("mem_eff", false, 0.01, 1, G, mem_eff, 0.8),
    K_REAL("norm_eff", false, 0.01, 1, G, norm_eff, 0),
    K_REAL("norm_bwd_eff", false, 0.01, 1, G, norm_bwd_eff, 0),
    K_REAL("loss_eff", false, 0.01, 1, G, loss_eff, 0),
    K_REAL("loss_bwd_eff", false, 0.01, 1, G, loss_bwd_eff, 0),
    K_REAL("optim_eff", false, 0.01, 1, G, optim_eff, 0),
    K_BOOL("mxfp8", G, mxfp8),
};
static const struct key gpu_late_keys[] = {
    K_QTY0("launch", false, UNIT_TIME, MAX_LAT, G, launch_s, 3e-6),
    K_REAL("year", false, MIN_YEAR, MAX_YEAR, G, year, 0),
    K_STR("source", false, G, source),
};
#undef G

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
  key_defaults(gpu_keys, KEYS_N(gpu_keys), (char *)&g);
  key_defaults(gpu_late_keys, KEYS_N(gpu_late_keys), (char *)&g);
  int rc = xin_check_attrs(doc, e, gpu_attrs, err);
  if (!rc)
    rc = read_keys(doc, e, gpu_keys, KEYS_N(gpu_keys), &g, err);
  if (!rc && g.mxfp8 && g.peak_flops[DTYPE_FP8] <= 0)
    return xin_errf(doc, e, err, WEFT_EINVAL, "mxfp8='yes' without FP8 "
                    "compute (fp8)");
  if (!rc)
    rc = read_keys(doc, e, gpu_late_keys, KEYS_N(gpu_late_keys), &g, err);
  if (!rc)
    rc = read_attention(&g, doc, e, err);
  if (rc)
    return rc;
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

/* A <future>'s attributes. */
struct future_in {
  char name[WEFT_MAX_NAME], base[WEFT_MAX_NAME];
  char source[WEFT_MAX_SOURCE];
  struct hw_scale f;
};

#define F struct future_in
static const struct key future_keys[] = {
    K_STR("name", true, F, name),
    K_STR("base", true, F, base),
    K_REAL("compute", false, 1e-6, WEFT_MAX_SCALE, F, f.compute, 0),
    K_REAL("hbm_bw", false, 1e-6, WEFT_MAX_SCALE, F, f.hbm_bw, 0),
    K_REAL("hbm_cap", false, 1e-6, WEFT_MAX_SCALE, F, f.hbm_cap, 0),
    K_REAL("nvlink", false, 1e-6, WEFT_MAX_SCALE, F, f.nvlink, 0),
    K_STR("source", false, F, source),
};
#undef F

static int read_future(struct catalog *cat, const struct xin_doc *doc,
                       const struct xin_elem *e, struct weft_err *err)
{
  struct future_in in = {.source = "", .f = hw_scale_none};
  int rc = xin_check_attrs(doc, e, future_attrs, err);
  if (!rc)
    rc = read_keys(doc, e, future_keys, KEYS_N(future_keys), &in, err);
  if (rc)
    return rc;
  const struct gpu_spec *b = catalog_gpu(cat, in.base);
  if (!b)
    return xin_errf(doc, e, err, WEFT_ENOTFOUND, "unknown base GPU '%s'",
                    in.base);
  struct gpu_spec g = *b;
  gpu_spec_scale(&g, &in.f);
  memcpy(g.name, in.name, sizeof g.name);
  if (in.source[0])
    memcpy(g.source, in.source, sizeof g.source);
  else
    snprintf(g.source, sizeof g.source, "%s scaled: compute x%g, HBM bw x%g, "
             "HBM capacity x%g, NVLink x%g", b->name, in.f.compute,
             in.f.hbm_bw, in.f.hbm_cap, in.f.nvlink);
  struct gpu_spec *s = slot(cat, doc, e, (void **)&cat->gpus, &cat->n_gpus,
                            cat->builtin[CATALOG_GPUS], sizeof g,
                            g.name);
  if (!s)
    return xin_errf(doc, e, err, WEFT_ELIMIT, "more than %d GPU entries",
                    WEFT_MAX_CATALOG_ENTRIES);
  *s = g;
  return 0;
}

static const char *const nic_attrs[] = {"name", "bw", "lat", "year",
                                        "idle_power", "max_power", "price",
                                        "source", NULL};

#define N struct nic_spec
static const struct key nic_keys[] = {
    K_STR("name", true, N, name),
    K_QTY("bw", true, UNIT_BW, MAX_BW, N, bw_Bps, 0),
    K_QTY0("lat", true, UNIT_TIME, MAX_LAT, N, lat_s, 0),
    K_REAL("year", false, MIN_YEAR, MAX_YEAR, N, year, 0),
    K_POWER(false, N, idle_w, max_w),
    K_REAL("price", false, 0, MAX_PRICE, N, price, 0),
    K_STR("source", false, N, source),
};
#undef N

static int read_nic(struct catalog *cat, const struct xin_doc *doc,
                    const struct xin_elem *e, struct weft_err *err)
{
  struct nic_spec n = {0};
  int rc = xin_check_attrs(doc, e, nic_attrs, err);
  if (!rc)
    rc = read_keys(doc, e, nic_keys, KEYS_N(nic_keys), &n, err);
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
                                         "coll_ll_bw", "p2p_nvlink_lat",
                                         "p2p_net_lat", "tray", "source",
                                         NULL};

#define N struct node_spec
static const struct key node_keys[] = {
    K_STR("name", true, N, name),
    K_STR("gpu", true, N, gpu),
    K_INT("gpus", true, 1, WEFT_MAX_GPUS_PER_NODE, N, gpus),
    K_STR("nic", true, N, nic),
    K_INT("nics", true, 1, WEFT_MAX_NICS_PER_NODE, N, nics),
    K_QTY0("nvlink_lat", true, UNIT_TIME, MAX_LAT, N, nvlink_lat_s, 0),
    K_BOOL("nvls", N, nvls),
    K_REAL("coll_nvlink_eff", false, 0.01, 1, N, coll_nvlink_eff,
           CATALOG_DEFAULT_NVLINK_EFF),
    K_REAL("coll_nvls_eff", false, 0.01, 1, N, coll_nvls_eff,
           CATALOG_DEFAULT_NVLS_EFF),
    K_REAL("coll_nic_eff", false, 0.01, 1, N, coll_nic_eff,
           CATALOG_DEFAULT_NIC_EFF),
    K_QTY0("coll_lat", false, UNIT_TIME, MAX_LAT, N, coll_lat_s,
           CATALOG_DEFAULT_COLL_LAT),
    K_REAL("coll_ring_loss", false, 0, 0.2, N, coll_ring_loss, 0),
    K_QTY0("coll_floor", false, UNIT_TIME, MAX_LAT, N, coll_floor_s, 0),
    K_QTY0("coll_ll_bw", false, UNIT_BW, MAX_BW, N, coll_ll_bw_Bps,
           CATALOG_DEFAULT_COLL_LL_BW),
    K_QTY0("p2p_nvlink_lat", false, UNIT_TIME, MAX_LAT, N, p2p_nvlink_lat_s,
           CATALOG_DEFAULT_P2P_NVLINK_LAT),
    K_QTY0("p2p_net_lat", false, UNIT_TIME, MAX_LAT, N, p2p_net_lat_s,
           CATALOG_DEFAULT_P2P_NET_LAT),
    K_INT("tray", false, 0, WEFT_MAX_GPUS_PER_NODE, N, tray),
    K_STR("source", false, N, source),
};
#undef N

static int read_node(struct catalog *cat, const struct xin_doc *doc,
                     const struct xin_elem *e, struct weft_err *err)
{
  struct node_spec n = {0};
  key_defaults(node_keys, KEYS_N(node_keys), (char *)&n);
  int rc = xin_check_attrs(doc, e, node_attrs, err);
  if (!rc)
    rc = read_keys(doc, e, node_keys, KEYS_N(node_keys), &n, err);
  if (rc)
    return rc;
  if (!catalog_gpu(cat, n.gpu))
    return xin_errf(doc, e, err, WEFT_ENOTFOUND, "unknown GPU '%s'", n.gpu);
  if (!catalog_nic(cat, n.nic))
    return xin_errf(doc, e, err, WEFT_ENOTFOUND, "unknown NIC '%s'", n.nic);
  if (n.gpus % n.nics != 0)
    return xin_errf(doc, e, err, WEFT_EINVAL, "%d NICs do not divide %d GPUs",
                    n.nics, n.gpus);
  /* A job takes whole trays, each with its own NICs (cluster_resolve). */
  if (n.tray && (n.gpus % n.tray != 0 || n.tray % (n.gpus / n.nics) != 0))
    return xin_errf(doc, e, err, WEFT_EINVAL, "trays of %d GPUs do not "
                    "divide the node's %d GPUs and its %d NICs", n.tray,
                    n.gpus, n.nics);
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

#define W struct switch_spec
static const struct key switch_keys[] = {
    K_STR("name", true, W, name),
    K_STR("nic", true, W, nic),
    K_INT("ports", true, 1, 100000, W, ports),
    /* optional: a switch whose power no datasheet gives (Q3400) still
     * gives its fabric's switch counts */
    K_POWER(false, W, idle_w, max_w),
    K_REAL("price", false, 0, MAX_PRICE, W, price, 0),
    K_REAL("link_price", false, 0, MAX_PRICE, W, link_price, 0),
    K_STR("source", false, W, source),
};
#undef W

static int read_switch(struct catalog *cat, const struct xin_doc *doc,
                       const struct xin_elem *e, struct weft_err *err)
{
  struct switch_spec w = {0};
  int rc = xin_check_attrs(doc, e, switch_attrs, err);
  if (!rc)
    rc = read_keys(doc, e, switch_keys, KEYS_N(switch_keys), &w, err);
  if (rc)
    return rc;
  if (!catalog_nic(cat, w.nic))
    return xin_errf(doc, e, err, WEFT_ENOTFOUND, "unknown NIC '%s'", w.nic);
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

#define T struct trend
static const struct key trend_keys[] = {
    K_STR("name", true, T, name),
    K_REAL("generation_years", true, 0.1, 20, T, generation_years, 0),
    K_STR("source", false, T, source),
};
#undef T

/* A <trend> and its <rate> children: every quantity exactly once, as a
 * factor per year or per generation (> 0; below 1 is a decline). */
static int read_trend(struct catalog *cat, const struct xin_doc *doc,
                      const struct xin_elem *e, struct weft_err *err)
{
  struct trend t = {0};
  int rc = xin_check_attrs(doc, e, trend_attrs, err);
  if (!rc)
    rc = read_keys(doc, e, trend_keys, KEYS_N(trend_keys), &t, err);
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
