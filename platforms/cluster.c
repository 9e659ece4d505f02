/*
 * cluster.c - cluster descriptions: presets, files and flags, resolved
 * against the hardware catalog.
 *
 * All three sources go through cluster_desc_set(), so an attribute and the
 * flag of the same name accept exactly the same values and give the same
 * messages, differing only in the location they name.
 */
#include "platforms/cluster.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>

#include "platforms/topo.h"
#include "sim/base/names.h"
#include "sim/base/units.h"
#include "sim/base/xalloc.h"
#include "sim/base/xin.h"

extern const char weft_clusters_xml[];
extern const unsigned long weft_clusters_xml_len;

enum ktype { KT_TEXT, KT_INT, KT_REAL, KT_TIME, KT_POWER, KT_BW };

struct keydef {
  const char *name;
  enum ktype type;
  double min, max;
  const char *help; /* meaning and default, for the help */
};

static const struct keydef keys[CK_COUNT] = {
    [CK_NODE] = {"node", KT_TEXT, 0, 0,
        "node type of the catalog (weft list nodes)"},
    [CK_GPU] = {"gpu", KT_TEXT, 0, 0,
        "GPU type, replacing the node's (weft list gpus)"},
    [CK_NIC] = {"nic", KT_TEXT, 0, 0,
        "NIC type, replacing the node's"},
    [CK_GPUS] = {"gpus", KT_INT, 1, WEFT_MAX_GPUS,
        "GPUs in all (a multiple of GPUs per node)"},
    [CK_NODES] = {"nodes", KT_INT, 1, WEFT_MAX_NODES,
        "nodes in all"},
    [CK_GPUS_PER_NODE] = {"gpus_per_node", KT_INT, 1, WEFT_MAX_GPUS_PER_NODE,
        "GPUs per node (default: the node type's)"},
    [CK_NICS_PER_NODE] = {"nics_per_node", KT_INT, 1, WEFT_MAX_NICS_PER_NODE,
        "NICs per node (default: the node type's)"},
    [CK_NODES_PER_LEAF] = {"nodes_per_leaf", KT_INT, 1,
                           WEFT_MAX_NODES_PER_LEAF,
        "nodes under one leaf switch (default 32)"},
    [CK_LEAVES_PER_POD] = {"leaves_per_pod", KT_INT, 1,
                           WEFT_MAX_LEAVES_PER_POD,
        "leaf switches per pod (default 16)"},
    [CK_OVERSUB] = {"oversubscription", KT_REAL, 1, 1024,
        "leaf-to-spine oversubscription, >= 1 (default 1)"},
    [CK_POD_OVERSUB] = {"pod_oversubscription", KT_REAL, 1, 1024,
        "above-pod oversubscription, >= 1 (default 1)"},
    [CK_SWITCH_LAT] = {"switch_lat", KT_TIME, 0, 1,
        "latency of one switch hop (default 130ns)"},
    [CK_NVLINK_LAT] = {"nvlink_lat", KT_TIME, 0, 1,
        "latency of an NVLink hop (default: the node type's)"},
    [CK_NIC_LAT] = {"nic_lat", KT_TIME, 0, 1,
        "latency of a NIC (default: the NIC type's)"},
    [CK_TOPOLOGY] = {"topology", KT_TEXT, 0, 0,
        "fabric: fat-tree, rail, rail-only, multi-plane, dragonfly or torus "
        "(default fat-tree)"},
    [CK_PXN] = {"pxn", KT_INT, 0, 1,
        "rail: off-rail traffic first crosses NVLink to the GPU on the "
        "right rail, as NCCL's PXN (default 1)"},
    [CK_PLANES] = {"planes", KT_INT, 1, 16,
        "multi-plane: planes, one per NIC port (default 2)"},
    [CK_ROUTERS_PER_GROUP] = {"routers_per_group", KT_INT, 1, 1024,
        "dragonfly: routers per group (default 32)"},
    [CK_GLOBAL_LINKS] = {"global_links", KT_INT, 1, 1024,
        "dragonfly: global links per router (default 17)"},
    [CK_LOCAL_LINKS] = {"local_links", KT_INT, 1, 64,
        "dragonfly: links between two routers of a group (default 1)"},
    [CK_ROUTING] = {"dragonfly_routing", KT_TEXT, 0, 0,
        "dragonfly: minimal, valiant or adaptive (default minimal)"},
    [CK_TORUS] = {"torus", KT_TEXT, 0, 0,
        "torus: nodes per dimension, AxB or AxBxC (required)"},
    [CK_NVL_RACK] = {"nvl_rack", KT_INT, 1, WEFT_MAX_GPUS_PER_NODE,
        "GPUs under one first-tier NVLink switch; fewer than GPUs per node "
        "adds a second tier (default: GPUs per node)"},
    [CK_NVL_OVERSUB] = {"nvl_oversubscription", KT_REAL, 1, 1024,
        "second NVLink tier oversubscription (default 1)"},
    [CK_PLACEMENT] = {"placement", KT_TEXT, 0, 0,
        "how the job's nodes sit on the fabric: packed (in order), spread"
        " (consecutive nodes dealt over pods, else leaf groups; a dragonfly's"
        " groups) or random[:SEED] (a permutation drawn from SEED, default "
        "1) (default packed)"},
    [CK_SCALE_COMPUTE] = {"scale_compute", KT_REAL, 1e-6, WEFT_MAX_SCALE,
        "scale the GPU's compute peaks (what-if; default 1)"},
    [CK_SCALE_HBM_BW] = {"scale_hbm_bw", KT_REAL, 1e-6, WEFT_MAX_SCALE,
        "scale the GPU's HBM bandwidth (default 1)"},
    [CK_SCALE_HBM_CAP] = {"scale_hbm_cap", KT_REAL, 1e-6, WEFT_MAX_SCALE,
        "scale the GPU's HBM capacity (default 1)"},
    [CK_SCALE_NVLINK] = {"scale_nvlink", KT_REAL, 1e-6, WEFT_MAX_SCALE,
        "scale NVLink bandwidth (default 1)"},
    [CK_SCALE_NIC] = {"scale_nic", KT_REAL, 1e-6, WEFT_MAX_SCALE,
        "scale NIC bandwidth (default 1)"},
    [CK_YEAR] = {"year", KT_REAL, 1990, 2100,
        "project the GPU and NIC to this year by a trend (weft list trends)"},
    [CK_GENERATIONS] = {"generations", KT_REAL, 0, 20,
        "project the GPU and NIC this many generations ahead"},
    [CK_TREND] = {"trend", KT_TEXT, 0, 0,
        "growth rates of a projection (default: the catalog's first)"},
    [CK_POWER_CAP] = {"power_cap", KT_POWER, 1, 1e5,
        "cap the GPU's board power; compute clocks drop (default: none)"},
    [CK_CLOCK] = {"clock", KT_REAL, 0.05, 1.5,
        "GPU clock against the catalog's, power follows (default 1)"},
    [CK_GPU_HOUR_PRICE] = {"gpu_hour_price", KT_REAL, 1e-6, 1e6,
        "price of one GPU-hour, for the cost per token (default: none)"},
    [CK_STORAGE_BW] = {"storage_bw", KT_BW, 1, 1e18,
        "aggregate write bandwidth of the storage tier that checkpoints go "
        "to, for weft run --train-days (default: none; Llama 3's Tectonic "
        "sustains 2TBps)"},
    [CK_SLOW_GPU] = {"slow_gpu", KT_TEXT, 0, 0,
        "stragglers: RANK:FACTOR[,RANK:FACTOR...], those GPUs' kernels take "
        "FACTOR >= 1 times as long (default: none)"},
    [CK_SLOW_NIC] = {"slow_nic", KT_TEXT, 0, 0,
        "degraded links: RANK:FACTOR[,...], those GPUs' NICs at 1/FACTOR of "
        "their bandwidth both ways (default: none)"},
    [CK_GPU_SIGMA] = {"gpu_sigma", KT_REAL, 0, 20,
        "per-GPU speed variation: each GPU's speed drawn from a normal of "
        "this standard deviation, percent, clipped at 3 sigma (default 0)"},
    [CK_GPU_SEED] = {"gpu_seed", KT_INT, 1, 2147483647,
        "seed of gpu_sigma's draw (default 1)"},
    [CK_DOWN_LINKS] = {"down_links", KT_TEXT, 0, 0,
        "links down, their traffic rerouted: NAME[:CABLES][,...], names as "
        "weft platform writes them: an up-link (leaf3-up, su0-rail2-up, "
        "pod1-up) with CABLES of its cables down (default 1), or a NIC "
        "(node5-nic3) (default: none)"},
    [CK_DIURNAL] = {"diurnal", KT_REAL, 0, 20,
        "the GPU clock's daily variation, percent: kernels take up to this "
        "much longer at 15:00 than at 03:00 (Llama 3: 1-2) (default 0)"},
    [CK_DIURNAL_HOUR] = {"diurnal_hour", KT_REAL, 0, 24,
        "the hour of the day the job starts at, for diurnal (default 0)"},
    [CK_DESCRIPTION] = {"description", KT_TEXT, 0, 0,
        "free text for the platform's header"},
};

/* Defaults for fabric settings a preset or file leaves out. */
#define DEFAULT_NODES_PER_LEAF 32
#define DEFAULT_LEAVES_PER_POD 16
#define DEFAULT_SWITCH_LAT_S 130e-9

void cluster_desc_init(struct cluster_desc *d)
{
  memset(d, 0, sizeof *d);
  snprintf(d->name, sizeof d->name, "custom");
  snprintf(d->source, sizeof d->source, "cluster 'custom'");
}

int cluster_key_from_name(const char *name)
{
  return names_index(name, keys, CK_COUNT, sizeof keys[0]);
}

const char *cluster_key_name(enum cluster_key k) { return keys[k].name; }
const char *cluster_key_help(enum cluster_key k) { return keys[k].help; }

const char *cluster_key_hint(enum cluster_key k)
{
  static const char *const hint[] = {[KT_TEXT] = "NAME", [KT_INT] = "N",
                                     [KT_REAL] = "F", [KT_TIME] = "T",
                                     [KT_POWER] = "W", [KT_BW] = "BW"};
  if (k == CK_SLOW_GPU || k == CK_SLOW_NIC)
    return "R:F";
  if (k == CK_DOWN_LINKS)
    return "LINK[:N]";
  return k == CK_DESCRIPTION ? "TEXT" : hint[keys[k].type];
}

int cluster_desc_set(struct cluster_desc *d, enum cluster_key k,
                     const char *value, const char *origin, int layer,
                     struct weft_err *err)
{
  const struct keydef *kd = &keys[k];
  double v = 0;
  int rc = 0;
  switch (kd->type) {
  case KT_TEXT:
    if (!value[0])
      rc = weft_errf(err, WEFT_EINVAL, "empty value");
    else if (strlen(value) >= (k == CK_DESCRIPTION || k == CK_SLOW_GPU ||
                                       k == CK_SLOW_NIC || k == CK_DOWN_LINKS
                                   ? WEFT_MAX_DESC
                                   : WEFT_MAX_NAME))
      rc = weft_errf(err, WEFT_ELIMIT, "'%.40s...' is too long", value);
    break;
  case KT_INT: {
    long x;
    rc = units_parse_int(value, (long)kd->min, (long)kd->max, &x, err);
    v = (double)x;
    break;
  }
  case KT_REAL:
    rc = units_parse_real(value, kd->min, kd->max, &v, err);
    break;
  case KT_POWER:
    rc = units_parse(value, UNIT_POWER, &v, err);
    if (!rc && (v < kd->min || v > kd->max))
      rc = weft_errf(err, WEFT_EINVAL, "'%s' is not between 1 W and 100 kW",
                     value);
    break;
  case KT_BW:
    rc = units_parse_pos(value, UNIT_BW, kd->max, &v, err);
    break;
  case KT_TIME:
    rc = units_parse(value, UNIT_TIME, &v, err);
    if (!rc && v > kd->max)
      rc = weft_errf(err, WEFT_ELIMIT, "'%s' exceeds the limit of 1 s", value);
    break;
  }
  if (rc) {
    char where[WEFT_MAX_ORIGIN + 8];
    snprintf(where, sizeof where, "%s", origin);
    return weft_err_prefix(err, where);
  }
  if (kd->type == KT_TEXT)
    snprintf(d->text[k], sizeof d->text[k], "%s", value);
  d->num[k] = v;
  d->set[k] = true;
  d->layer[k] = layer;
  snprintf(d->origin[k], sizeof d->origin[k], "%s", origin);
  /* gpus and nodes say the same thing: a later layer's one replaces an
   * earlier layer's other. */
  enum cluster_key other = k == CK_GPUS ? CK_NODES : CK_GPUS;
  if ((k == CK_GPUS || k == CK_NODES) && d->set[other] &&
      d->layer[other] < layer)
    d->set[other] = false;
  return 0;
}

static const struct {
  const char *name;
  enum cluster_key key;
} scale_names[] = {
    {"compute", CK_SCALE_COMPUTE}, {"hbm_bw", CK_SCALE_HBM_BW},
    {"hbm_cap", CK_SCALE_HBM_CAP}, {"nvlink", CK_SCALE_NVLINK},
    {"nic", CK_SCALE_NIC},
};

int cluster_desc_set_scale(struct cluster_desc *d, const char *spec,
                           const char *origin, int layer,
                           struct weft_err *err)
{
  char *copy = xstrdup(spec);
  int rc = 0;
  if (!spec[0])
    rc = weft_errf(err, WEFT_EINVAL, "%s: empty value; expected e.g. "
                   "compute=2,nic=1.5", origin);
  /* Items between commas, empty ones included (strtok would skip them). */
  for (char *tok = copy, *next; tok && !rc; tok = next) {
    next = strchr(tok, ',');
    if (next)
      *next++ = '\0';
    char *eq = strchr(tok, '=');
    if (!tok[0]) {
      rc = weft_errf(err, WEFT_EINVAL, "%s: empty item in '%s'; expected "
                     "e.g. compute=2,nic=1.5", origin, spec);
      break;
    }
    if (!eq) {
      rc = weft_errf(err, WEFT_EINVAL, "%s: '%s' is not NAME=FACTOR", origin,
                     tok);
      break;
    }
    *eq = '\0';
    int i = names_index(tok, scale_names,
                        (int)(sizeof scale_names / sizeof *scale_names),
                        sizeof scale_names[0]);
    int k = i < 0 ? -1 : (int)scale_names[i].key;
    if (k < 0) {
      rc = weft_errf(err, WEFT_EINVAL, "%s: unknown factor '%s'; expected "
                     "compute, hbm_bw, hbm_cap, nvlink or nic", origin, tok);
      break;
    }
    rc = cluster_desc_set(d, (enum cluster_key)k, eq + 1, origin, layer, err);
  }
  free(copy);
  return rc;
}

struct set_ctx {
  struct cluster_desc *d;
  int layer;
};

static int set_attr(void *ctx, int key, const char *value, const char *origin,
                    struct weft_err *err)
{
  struct set_ctx *c = ctx;
  return cluster_desc_set(c->d, (enum cluster_key)key, value, origin,
                          c->layer, err);
}

/* Read the attributes of a <cluster> element into `d` at `layer`. */
static int read_cluster_elem(struct cluster_desc *d, const struct xin_doc *doc,
                             const struct xin_elem *e, int layer,
                             bool allow_preset, struct weft_err *err)
{
  static const char *attrs[CK_COUNT + 3], *names[CK_COUNT + 1];
  if (!attrs[0]) {
    int i = 0;
    attrs[i++] = "name";
    attrs[i++] = "preset";
    for (int k = 0; k < CK_COUNT; k++)
      attrs[i++] = names[k] = keys[k].name;
    attrs[i] = names[CK_COUNT] = NULL;
  }
  int rc = xin_check_attrs(doc, e, attrs, err);
  if (rc)
    return rc;
  char preset[WEFT_MAX_NAME] = "";
  if (allow_preset) {
    rc = xin_str(doc, e, "preset", false, preset, sizeof preset, err);
    if (rc)
      return rc;
    if (preset[0]) {
      rc = cluster_desc_preset(d, preset, err);
      if (rc)
        return xin_errf(doc, e, err, rc, "attribute 'preset': %s", err->msg);
    }
  } else if (xin_has(e, "preset")) {
    return xin_errf(doc, e, err, WEFT_EINVAL, "presets cannot name a preset");
  }
  char name[WEFT_MAX_NAME] = "";
  rc = xin_str(doc, e, "name", !allow_preset, name, sizeof name, err);
  if (rc)
    return rc;
  if (name[0])
    snprintf(d->name, sizeof d->name, "%s", name);
  snprintf(d->source, sizeof d->source, "%s:%d: <%s>", xin_doc_name(doc),
           xin_line_in(doc, e), xin_name(e));
  struct set_ctx ctx = {d, layer};
  return xin_apply(doc, e, names, WEFT_MAX_DESC, set_attr, &ctx, err);
}

static struct xin_doc *presets_doc(struct weft_err *err)
{
  return xin_parse_mem(weft_clusters_xml, weft_clusters_xml_len,
                       "platforms/clusters.xml", err);
}

int cluster_preset_count(void)
{
  struct xin_doc *doc = presets_doc(NULL);
  int n = 0;
  if (doc)
    for (const struct xin_elem *e = xin_child(xin_root(doc)); e;
         e = xin_next(e))
      n++;
  xin_free(doc);
  return n;
}

int cluster_preset_get(int i, struct cluster_desc *out, struct weft_err *err)
{
  struct xin_doc *doc = presets_doc(err);
  if (!doc)
    return err ? err->code : WEFT_EINVAL;
  int rc = WEFT_ENOTFOUND, j = 0;
  for (const struct xin_elem *e = xin_child(xin_root(doc)); e;
       e = xin_next(e), j++) {
    if (j == i) {
      cluster_desc_init(out);
      rc = read_cluster_elem(out, doc, e, 0, false, err);
      break;
    }
  }
  if (rc == WEFT_ENOTFOUND)
    weft_errf(err, rc, "no preset number %d", i);
  xin_free(doc);
  return rc;
}

int cluster_desc_preset(struct cluster_desc *d, const char *name,
                        struct weft_err *err)
{
  struct xin_doc *doc = presets_doc(err);
  if (!doc)
    return err ? err->code : WEFT_EINVAL;
  char known[512] = "";
  int rc = WEFT_ENOTFOUND;
  for (const struct xin_elem *e = xin_child(xin_root(doc)); e;
       e = xin_next(e)) {
    char pname[WEFT_MAX_NAME] = "";
    if (xin_str(doc, e, "name", true, pname, sizeof pname, err))
      break;
    if (strcasecmp(pname, name) == 0) {
      rc = read_cluster_elem(d, doc, e, 0, false, err);
      break;
    }
    size_t n = strlen(known);
    snprintf(known + n, sizeof known - n, "%s%s", n ? ", " : "", pname);
  }
  xin_free(doc);
  if (rc == WEFT_ENOTFOUND)
    weft_errf(err, rc, "unknown cluster '%s'; known clusters: %s", name,
              known);
  return rc;
}

int cluster_desc_read_file(struct cluster_desc *d, struct catalog *cat,
                           const char *path, struct weft_err *err)
{
  struct xin_doc *doc = xin_parse_file(path, err);
  if (!doc)
    return err ? err->code : WEFT_EIO;
  const struct xin_elem *root = xin_root(doc);
  int rc = xin_check_root(doc, "cluster", err);
  for (const struct xin_elem *e = rc ? NULL : xin_child(root); e && !rc;
       e = xin_next(e))
    rc = catalog_add_elem(cat, doc, e, err);
  if (!rc)
    rc = read_cluster_elem(d, doc, root, 1, true, err);
  xin_free(doc);
  return rc;
}

int cluster_desc_read_elem(struct cluster_desc *d, struct catalog *cat,
                           const struct xin_doc *doc,
                           const struct xin_elem *e, int layer,
                           struct weft_err *err)
{
  int rc = 0;
  for (const struct xin_elem *c = xin_child(e); c && !rc; c = xin_next(c))
    rc = catalog_add_elem(cat, doc, c, err);
  return rc ? rc : read_cluster_elem(d, doc, e, layer, true, err);
}

void cluster_desc_fill(struct cluster_desc *d, const struct cluster_desc *base)
{
  bool size_set = d->set[CK_GPUS] || d->set[CK_NODES];
  if (!d->set[CK_NODE]) { /* the description is base's, under d's settings */
    memcpy(d->name, base->name, sizeof d->name);
    memcpy(d->source, base->source, sizeof d->source);
  }
  for (int k = 0; k < CK_COUNT; k++) {
    if (d->set[k] || !base->set[k])
      continue;
    if (size_set && (k == CK_GPUS || k == CK_NODES))
      continue;
    d->set[k] = true;
    d->layer[k] = base->layer[k];
    d->num[k] = base->num[k];
    memcpy(d->text[k], base->text[k], sizeof d->text[k]);
    memcpy(d->origin[k], base->origin[k], sizeof d->origin[k]);
  }
}

int cluster_desc_load(struct cluster_desc *d, struct catalog *cat,
                      const char *spec, struct weft_err *err)
{
  size_t n = strlen(spec);
  if (strchr(spec, '/') || (n > 4 && strcmp(spec + n - 4, ".xml") == 0))
    return cluster_desc_read_file(d, cat, spec, err);
  int rc = cluster_desc_preset(d, spec, err);
  /* No preset of that name, but a directory: the user meant a path. */
  struct stat st;
  if (rc == WEFT_ENOTFOUND && stat(spec, &st) == 0 && S_ISDIR(st.st_mode))
    rc = weft_errf(err, WEFT_EIO, "%s: is a directory", spec);
  return rc;
}

/* The location of a setting, or a generic one when it was never set. */
static const char *where(const struct cluster_desc *d, enum cluster_key k)
{
  return d->set[k] ? d->origin[k] : d->source;
}

/* Years from `base` to the projection's target; refuses a target before
 * `base` and a base the catalog does not date. */
static int years_ahead(const struct cluster_desc *d, const struct trend *t,
                       double base, const char *what, const char *name,
                       double *out, struct weft_err *err)
{
  if (d->set[CK_GENERATIONS]) {
    *out = d->num[CK_GENERATIONS] * t->generation_years;
    return 0;
  }
  if (!(base > 0))
    return weft_errf(err, WEFT_EINVAL, "%s: the %s %s has no year in the "
                     "catalog to project from (give it year=, or use "
                     "generations)", where(d, CK_YEAR), what, name);
  if (d->num[CK_YEAR] < base)
    return weft_errf(err, WEFT_EINVAL, "%s: %g is before the %s %s's year "
                     "%g; a projection goes forward", where(d, CK_YEAR),
                     d->num[CK_YEAR], what, name, base);
  *out = d->num[CK_YEAR] - base;
  return 0;
}

/* Apply year= or generations= by the trend's rates (after --scale, which
 * multiplies with them). */
static int project(const struct cluster_desc *d, const struct catalog *cat,
                   struct cluster *c, struct weft_err *err)
{
  bool by_year = d->set[CK_YEAR], by_gen = d->set[CK_GENERATIONS];
  if (by_year && by_gen)
    return weft_errf(err, WEFT_EINVAL, "%s and %s both project the "
                     "hardware; give one", where(d, CK_YEAR),
                     where(d, CK_GENERATIONS));
  if (!by_year && !by_gen) {
    if (d->set[CK_TREND])
      return weft_errf(err, WEFT_EINVAL, "%s: a trend needs year or "
                       "generations to project", where(d, CK_TREND));
    return 0;
  }
  const struct trend *t = d->set[CK_TREND] ? catalog_trend(cat, d->text[CK_TREND])
                          : cat->n_trends ? &cat->trends[0] : NULL;
  if (!t && d->set[CK_TREND])
    return weft_errf(err, WEFT_ENOTFOUND, "%s: unknown trend '%s' (see weft "
                     "list trends)", where(d, CK_TREND), d->text[CK_TREND]);
  if (!t)
    return weft_errf(err, WEFT_ENOTFOUND, "%s: the catalog has no trend to "
                     "project with", where(d, by_year ? CK_YEAR
                                                      : CK_GENERATIONS));
  double gy, ny;
  int rc = years_ahead(d, t, c->gpu.year, "GPU", c->gpu.name, &gy, err);
  if (!rc)
    rc = years_ahead(d, t, c->nic.year > 0 ? c->nic.year : c->gpu.year,
                     "NIC", c->nic.name, &ny, err);
  if (rc)
    return rc;
  struct gpu_spec *g = &c->gpu;
  for (int q = 0; q < DTYPE_COUNT; q++)
    g->peak_flops[q] *= pow(t->per_year[q], gy);
  g->hbm_bw_Bps *= pow(t->per_year[GQ_HBM_BW], gy);
  g->hbm_bytes *= pow(t->per_year[GQ_HBM_CAP], gy);
  g->nvlink_bw_Bps *= pow(t->per_year[GQ_NVLINK], gy);
  g->idle_w *= pow(t->per_year[GQ_POWER], gy);
  g->max_w *= pow(t->per_year[GQ_POWER], gy);
  g->mem_w *= pow(t->per_year[GQ_POWER], gy); /* 0 stays not given */
  g->comm_w *= pow(t->per_year[GQ_POWER], gy);
  c->nic.bw_Bps *= pow(t->per_year[GQ_NIC], ny);
  c->proj_gpu_years = gy;
  c->proj_nic_years = ny;
  snprintf(c->trend, sizeof c->trend, "%s", t->name);
  return 0;
}

/* The clock factor of power_cap or clock, and the board power while
 * computing.  The catalog's peaks and efficiencies are at the GPU's own
 * power limit (max_power), so a cap at or above it changes nothing. */
static int clock_power(const struct cluster_desc *d, struct cluster *c,
                       struct weft_err *err)
{
  double idle = c->gpu.idle_w, max = c->gpu.max_w, f = 1;
  if (d->set[CK_POWER_CAP] && d->set[CK_CLOCK])
    return weft_errf(err, WEFT_EINVAL, "%s and %s both set the clock; give "
                     "one", where(d, CK_POWER_CAP), where(d, CK_CLOCK));
  if (d->set[CK_POWER_CAP]) {
    double cap = d->num[CK_POWER_CAP];
    if (cap <= idle)
      return weft_errf(err, WEFT_EINVAL, "%s: %g W is not above the %s's "
                       "idle power of %g W", where(d, CK_POWER_CAP), cap,
                       c->gpu.name, idle);
    if (cap < max)
      f = cbrt((cap - idle) / (max - idle));
  } else if (d->set[CK_CLOCK]) {
    f = d->num[CK_CLOCK];
  }
  for (int q = 0; q < DTYPE_COUNT; q++)
    c->gpu.peak_flops[q] *= f;
  c->clock = f;
  c->active_w = idle + (max - idle) * f * f * f;
  /* The other phases' dynamic power follows the clock the same way. */
  double mem = c->gpu.mem_w > 0 ? c->gpu.mem_w : max;
  double comm = c->gpu.comm_w > 0 ? c->gpu.comm_w : idle;
  c->mem_w = idle + (mem - idle) * f * f * f;
  c->comm_w = idle + (comm - idle) * f * f * f;
  return 0;
}

const char *topology_name(enum topology t) { return topo_fabric(t)->name; }

int topology_from_name(const char *name) { return topo_fabric_named(name); }

/* Whether a file or a flag (not a preset) gave setting k. */
static bool by_user(const struct cluster_desc *d, enum cluster_key k)
{
  return d->set[k] && d->layer[k] > 0;
}

const char *cluster_desc_where(const struct cluster_desc *d,
                               enum cluster_key k)
{
  return where(d, k);
}

bool cluster_desc_by_user(const struct cluster_desc *d, enum cluster_key k)
{
  return by_user(d, k);
}

/* A keyed round function of the placement's Feistel network: splitmix64
 * of the half, the seed and the round. */
static uint64_t place_round(uint64_t x, uint64_t seed, int round)
{
  uint64_t z = x + seed * 0x9e3779b97f4a7c15ULL + (uint64_t)round * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

/* A random placement is a permutation of [0, nodes) computed, not stored
 * (the cluster is a value): a four-round Feistel network on the smallest
 * even number of bits that holds the nodes is a permutation of that power
 * of two; walking its cycle until the value falls below `nodes` (at most
 * a few steps on average, since the domain is less than four times the
 * nodes) restricts it to a permutation of the nodes. */
static int place_random(const struct cluster *c, int i)
{
  int bits = 2;
  while ((1L << bits) < c->nodes)
    bits += 2;
  int h = bits / 2;
  uint64_t mask = (1ULL << h) - 1, v = (uint64_t)i;
  do {
    uint64_t l = v >> h, r = v & mask;
    for (int k = 0; k < 4; k++) {
      uint64_t t = l ^ (place_round(r, c->random_seed, k) & mask);
      l = r;
      r = t;
    }
    v = l << h | r;
  } while (v >= (uint64_t)c->nodes);
  return (int)v;
}

int cluster_place(const struct cluster *c, int i)
{
  if (c->random_seed)
    return place_random(c, i);
  int U = c->spread_units, S = c->spread_size;
  if (U <= 1)
    return i;
  int L = c->nodes - (U - 1) * S; /* nodes of the last block, 1..S */
  if (i < L * U)
    return (i % U) * S + i / U;
  int j = i - L * U;
  return (j % (U - 1)) * S + L + j / (U - 1);
}

/* The settings only some fabrics take, in the order they are checked: a
 * fabric's entry lists those it takes (topo_ops.settings). */
static const enum cluster_key fabric_keys[] = {
    CK_PXN,         CK_PLANES,         CK_ROUTERS_PER_GROUP, CK_GLOBAL_LINKS,
    CK_LOCAL_LINKS, CK_ROUTING,        CK_TORUS,             CK_LEAVES_PER_POD,
    CK_OVERSUB,     CK_POD_OVERSUB,
};

/* The fabric's entry (topo.h), from topology= (fat-tree by default). */
static int resolve_fabric(const struct cluster_desc *d, struct cluster *c,
                          struct weft_err *err)
{
  c->topology = TOPO_FAT_TREE;
  if (d->set[CK_TOPOLOGY]) {
    int t = topo_fabric_named(d->text[CK_TOPOLOGY]);
    if (t < 0) {
      char names[256];
      size_t n = 0;
      for (int i = 0; i < TOPO_COUNT; i++)
        n += (size_t)snprintf(names + n, sizeof names - n, "%s%s",
                              i == 0                ? ""
                              : i == TOPO_COUNT - 1 ? " or "
                                                    : ", ",
                              topology_name((enum topology)i));
      return weft_errf(err, WEFT_EINVAL, "%s: unknown topology '%s'; "
                       "expected %s", where(d, CK_TOPOLOGY),
                       d->text[CK_TOPOLOGY], names);
    }
    c->topology = (enum topology)t;
  }
  const struct topo_ops *f = topo_fabric(c->topology);
  for (size_t i = 0; i < sizeof fabric_keys / sizeof *fabric_keys; i++) {
    enum cluster_key k = fabric_keys[i];
    if (by_user(d, k) && !(f->settings & UINT64_C(1) << k))
      return weft_errf(err, WEFT_EINVAL, "%s: not a setting of topology %s "
                       "(%s)", where(d, k), f->name,
                       d->set[CK_TOPOLOGY] ? where(d, CK_TOPOLOGY)
                                           : "the default");
  }
  c->pxn = d->set[CK_PXN] ? d->num[CK_PXN] != 0 : true;
  c->planes = 1;
  return f->resolve ? f->resolve(d, c, err) : 0;
}

/* The NVLink tiers: GPUs per first-tier switch domain, the second tier's
 * oversubscription. */
static int resolve_nvlink(const struct cluster_desc *d, struct cluster *c,
                          struct weft_err *err)
{
  c->nvl_rack = d->set[CK_NVL_RACK] ? (int)d->num[CK_NVL_RACK]
                                    : c->gpus_per_node;
  if (c->gpus_per_node % c->nvl_rack != 0)
    return weft_errf(err, WEFT_EINVAL, "%s: %d GPUs per NVLink switch do not "
                     "divide %d GPUs per node", where(d, CK_NVL_RACK),
                     c->nvl_rack, c->gpus_per_node);
  c->nvl_oversub = d->set[CK_NVL_OVERSUB] ? d->num[CK_NVL_OVERSUB] : 1;
  return 0;
}

/* The job's nodes on the fabric: packed, spread or random[:SEED]. */
static int resolve_placement(const struct cluster_desc *d, struct cluster *c,
                             struct weft_err *err)
{
  const struct topo_ops *f = topo_fabric(c->topology);
  c->spread_units = c->spread_size = 0;
  c->random_seed = 0;
  c->spread = false;
  const char *pl = d->set[CK_PLACEMENT] ? d->text[CK_PLACEMENT] : "packed";
  if (strncasecmp(pl, "random", 6) == 0 && (pl[6] == 0 || pl[6] == ':')) {
    /* random or random:SEED, SEED a positive integer (default 1) */
    char *end = NULL;
    errno = 0;
    unsigned long long seed = pl[6] ? strtoull(pl + 7, &end, 10) : 1;
    if (pl[6] && (!isdigit((unsigned char)pl[7]) || *end || errno ||
                  seed == 0 || seed > 0xffffffffULL))
      return weft_errf(err, WEFT_EINVAL, "%s: '%s': the seed of a random "
                       "placement is an integer from 1 to 4294967295",
                       where(d, CK_PLACEMENT), pl);
    if (f->no_random)
      return weft_errf(err, WEFT_EINVAL, "%s: %s", where(d, CK_PLACEMENT),
                       f->no_random);
    c->random_seed = (unsigned long)seed;
  } else if (strcasecmp(pl, "packed") != 0 && c->last_node_gpus &&
             strcasecmp(pl, "spread") == 0) {
    goto uneven;
  } else if (strcasecmp(pl, "packed") != 0) {
    if (strcasecmp(pl, "spread") != 0)
      return weft_errf(err, WEFT_EINVAL, "%s: unknown placement '%s'; "
                       "expected packed, spread or random[:SEED]",
                       where(d, CK_PLACEMENT), d->text[CK_PLACEMENT]);
    if (f->no_spread)
      return weft_errf(err, WEFT_EINVAL, "%s: %s", where(d, CK_PLACEMENT),
                       f->no_spread);
    /* Blocks of leaves: the fabric's (pods, a dragonfly's groups), else
     * leaves. */
    int per = f->spread_block(c);
    int blocks = (c->leaves + per - 1) / per;
    if (blocks <= 1)
      per = 1, blocks = c->leaves;
    c->spread = true;
    c->spread_size = per * c->nodes_per_leaf;
    c->spread_units = (c->nodes + c->spread_size - 1) / c->spread_size;
  }
  if (c->random_seed && c->last_node_gpus)
    goto uneven;
  return 0;
uneven: /* the ranks of the partial rack are its first GPUs (cluster.h) */
  return weft_errf(err, WEFT_EINVAL, "%s: placement %s with an uneven last "
                   "rack (%d GPUs of %d) is not modelled; use packed",
                   where(d, CK_PLACEMENT), pl, c->last_node_gpus,
                   c->gpus_per_node);
}

/* Stragglers: "RANK:FACTOR[,RANK:FACTOR...]" of key `k` into list[],
 * *n entries; ranks below `gpus`, each once, factors from 1 to 1000. */
static int resolve_slow(const struct cluster_desc *d, enum cluster_key k,
                        int gpus, struct cluster_slow *list, int *n,
                        struct weft_err *err)
{
  *n = 0;
  if (!d->set[k])
    return 0;
  const char *p = d->text[k];
  for (;;) {
    char *end = NULL;
    errno = 0;
    long r = isdigit((unsigned char)*p) ? strtol(p, &end, 10) : -1;
    if (r < 0 || errno || *end != ':')
      return weft_errf(err, WEFT_EINVAL, "%s: '%s': expected RANK:FACTOR"
                       "[,RANK:FACTOR...], such as 3:1.5", where(d, k),
                       d->text[k]);
    if (r >= gpus)
      return weft_errf(err, WEFT_EINVAL, "%s: rank %ld is not a GPU of the "
                       "job (0 to %d)", where(d, k), r, gpus - 1);
    p = end + 1;
    errno = 0;
    double f = strtod(p, &end);
    if (end == p || errno || !(f >= 1 && f <= 1000) ||
        (*end && *end != ','))
      return weft_errf(err, WEFT_EINVAL, "%s: rank %ld: the factor '%.*s' "
                       "is not a number from 1 to 1000 (how many times "
                       "slower)", where(d, k), r,
                       (int)strcspn(p, ","), p);
    if (*n == WEFT_MAX_SLOW)
      return weft_errf(err, WEFT_ELIMIT, "%s: more than %d ranks",
                       where(d, k), WEFT_MAX_SLOW);
    for (int i = 0; i < *n; i++)
      if (list[i].rank == r)
        return weft_errf(err, WEFT_EINVAL, "%s: rank %ld is given twice",
                         where(d, k), r);
    list[(*n)++] = (struct cluster_slow){(int)r, f};
    if (!*end)
      return 0;
    p = end + 1;
  }
}

/* SplitMix64 (Steele, Lea and Flood, "Fast splittable pseudorandom
 * number generators", OOPSLA 2014): a well-mixed 64-bit value of x. */
static uint64_t splitmix64(uint64_t x)
{
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

/* A standard normal draw for (seed, rank), by Box and Muller from two
 * uniforms of 53 bits, clipped to [-3, 3]. */
static double normal_draw(unsigned long seed, int rank)
{
  uint64_t a = splitmix64((uint64_t)seed << 32 ^ (uint64_t)(uint32_t)rank);
  uint64_t b = splitmix64(a);
  double u1 = ((double)(a >> 11) + 1) * 0x1p-53; /* (0, 1] */
  double u2 = (double)(b >> 11) * 0x1p-53;       /* [0, 1) */
  double z = sqrt(-2 * log(u1)) * cos(6.283185307179586 * u2);
  return z < -3 ? -3 : z > 3 ? 3 : z;
}

double cluster_gpu_slowdown(const struct cluster *c, int rank)
{
  double f = 1;
  for (int i = 0; i < c->nslow_gpu; i++)
    if (c->slow_gpu[i].rank == rank)
      f = c->slow_gpu[i].factor;
  if (c->gpu_sigma > 0)
    f /= 1 + c->gpu_sigma * normal_draw(c->gpu_seed, rank);
  if (c->diurnal > 0)
    f *= c->diurnal_slow;
  return f;
}

/* A sinusoid over the day with its minimum at 03:00 and its maximum at
 * 15:00: weft's assumption for "higher mid-day temperatures impacting GPU
 * dynamic voltage and frequency scaling" (Llama 3, Sec. 3.3.4), whose
 * 1-2 % is the peak-to-trough throughput swing.  NEEDSWORK: a measured
 * daily profile of a data centre's inlet temperature would replace it. */
double cluster_diurnal_factor(const struct cluster *c, double hour)
{
  if (!(c->diurnal > 0))
    return 1;
  double h = fmod(hour - 3, 24);
  return 1 + c->diurnal * (1 - cos(6.283185307179586 * h / 24)) / 2;
}

double cluster_nic_slowdown(const struct cluster *c, int node, int k)
{
  double f = 1;
  for (int i = 0; i < c->nslow_nic; i++) {
    int gi = cluster_place_gpu(c, c->slow_nic[i].rank);
    if (cluster_node_of(c, gi) == node && cluster_nic_of(c, gi) == k &&
        c->slow_nic[i].factor > f)
      f = c->slow_nic[i].factor;
  }
  return f;
}

/* The fabric, its NVLink tiers and the job's place on it. */
static int resolve_topology(const struct cluster_desc *d, struct cluster *c,
                            struct weft_err *err)
{
  int rc = resolve_fabric(d, c, err);
  if (!rc)
    rc = resolve_nvlink(d, c, err);
  if (!rc)
    rc = resolve_placement(d, c, err);
  if (rc)
    return rc;
  if (d->set[CK_NVL_OVERSUB] && c->nvl_rack == c->gpus_per_node &&
      c->nvl_oversub > 1)
    return weft_errf(err, WEFT_EINVAL, "%s: there is no second NVLink tier "
                     "to oversubscribe (nvl_rack is the %d GPUs per node)",
                     where(d, CK_NVL_OVERSUB), c->gpus_per_node);
  return 0;
}

/* Over 100 lines: one sequence in the order of its checks (node, GPU,
 * NIC, counts, then the fabric's own resolution), which the fault tests
 * pin message by message.  NEEDSWORK: split it into phases as
 * plan_resolve was, keeping that order. */
/* Racks for `trays` trays of a node type of `per_rack` trays, the same
 * number in each: `racks` when given (> 0), else the fewest that hold
 * them, or failing that the fewest that use half of each rack or more
 * (weft's choice: 1024 GPUs of NVL72 are 16 racks of 64, not 15 uneven
 * ones, but 100 GPUs are not 5 racks of 20); 0 when no such split
 * exists.  One rack always holds a job of up to its trays. */
static long tray_racks(long trays, long per_rack, long racks)
{
  if (racks > 0)
    return trays % racks == 0 && trays / racks <= per_rack ? racks : 0;
  long least = (trays + per_rack - 1) / per_rack;
  for (long r = least; r == least || 2 * trays >= r * per_rack; r++)
    if (trays % r == 0)
      return r;
  return 0;
}

/* The GPUs per node a job takes of a node type with trays (tray=, as
 * NVL72): whole trays, the same number in each of the fewest racks that
 * hold the job at half a rack or more each (or of the --nodes racks), so
 * that every node of the job is alike (weft's collectives and placement take nodes of one size; a
 * scheduler's block allocation, as Slurm's topology/block with --segment,
 * gives such jobs).  A job of whole racks, a node type without trays, or
 * GPUs per node set by the user keep the node's GPUs, as before. */
static int tray_split(const struct cluster_desc *d,
                      const struct node_spec *node, int *gpus_per_node,
                      int *last_node_gpus, struct weft_err *err)
{
  *gpus_per_node = d->set[CK_GPUS_PER_NODE] ? (int)d->num[CK_GPUS_PER_NODE]
                                            : node->gpus;
  *last_node_gpus = 0;
  if (!node->tray || d->set[CK_GPUS_PER_NODE] || !d->set[CK_GPUS] ||
      (long)d->num[CK_GPUS] % node->gpus == 0)
    return 0;
  long g = (long)d->num[CK_GPUS], per_rack = node->gpus / node->tray;
  long asked = d->set[CK_NODES] ? (long)d->num[CK_NODES] : 0;
  if (g % node->tray != 0)
    return weft_errf(err, WEFT_EINVAL, "%s: %ld GPUs are not whole compute "
                     "trays of %s (%d GPUs per tray, %d per rack)",
                     where(d, CK_GPUS), g, node->name, node->tray,
                     node->gpus);
  long racks = tray_racks(g / node->tray, per_rack, asked);
  if (racks) {
    *gpus_per_node = (int)(g / racks);
    return 0;
  }
  if (asked)
    return weft_errf(err, WEFT_EINVAL, "%s: %ld GPUs (%ld trays of %d) do "
                     "not split evenly over %s (%ld racks of %ld trays)",
                     where(d, CK_GPUS), g, g / node->tray, node->tray,
                     where(d, CK_NODES), asked, per_rack);
  /* Whole racks and the trays left in one more (issue 38: a job may take
   * any number of trays; 100 GPUs of NVL72 are 72 + 28).  The rest of the
   * last rack stays idle; workload.c checks that the plan's TP and expert
   * groups stay inside a rack. */
  *gpus_per_node = node->gpus;
  *last_node_gpus = (int)(g % node->gpus);
  return 0;
}

int cluster_resolve(const struct cluster_desc *d, const struct catalog *cat,
                    struct cluster *out, struct weft_err *err)
{
  struct cluster c;
  memset(&c, 0, sizeof c);
  snprintf(c.name, sizeof c.name, "%s", d->name);
  if (d->set[CK_DESCRIPTION])
    snprintf(c.description, sizeof c.description, "%s",
             d->text[CK_DESCRIPTION]);
  if (!d->set[CK_NODE])
    return weft_errf(err, WEFT_EINVAL, "%s: no node type; set node= or "
                     "--node", d->source);
  const struct node_spec *node = catalog_node(cat, d->text[CK_NODE]);
  if (!node)
    return weft_errf(err, WEFT_ENOTFOUND, "%s: unknown node type '%s' (see "
                     "weft list nodes)", where(d, CK_NODE), d->text[CK_NODE]);
  snprintf(c.node_type, sizeof c.node_type, "%s", node->name);
  const char *gname = d->set[CK_GPU] ? d->text[CK_GPU] : node->gpu;
  const struct gpu_spec *gpu = catalog_gpu(cat, gname);
  if (!gpu)
    return weft_errf(err, WEFT_ENOTFOUND, "%s: unknown GPU '%s' (see weft "
                     "list gpus)", where(d, CK_GPU), gname);
  const char *nname = d->set[CK_NIC] ? d->text[CK_NIC] : node->nic;
  const struct nic_spec *nic = catalog_nic(cat, nname);
  if (!nic)
    return weft_errf(err, WEFT_ENOTFOUND, "%s: unknown NIC '%s' (see weft "
                     "list nics)", where(d, CK_NIC), nname);
  c.gpu = *gpu;
  c.nic = *nic;

  int rc = tray_split(d, node, &c.gpus_per_node, &c.last_node_gpus, err);
  if (rc)
    return rc;
  c.tray = d->set[CK_GPUS_PER_NODE] ? 0 : node->tray;
  c.rack_gpus = c.tray ? node->gpus : c.gpus_per_node;
  if (d->set[CK_NICS_PER_NODE])
    c.nics_per_node = (int)d->num[CK_NICS_PER_NODE];
  else if (c.gpus_per_node == node->gpus)
    c.nics_per_node = node->nics;
  else /* keep the node's NICs per GPU */
    c.nics_per_node = (int)fmax(1.0, (double)node->nics * c.gpus_per_node /
                                         node->gpus);
  if (c.nics_per_node > c.gpus_per_node ||
      c.gpus_per_node % c.nics_per_node != 0)
    return weft_errf(err, WEFT_EINVAL, "%s: %d NICs per node do not divide "
                     "%d GPUs per node", where(d, CK_NICS_PER_NODE),
                     c.nics_per_node, c.gpus_per_node);

  if (d->set[CK_GPUS]) {
    long g = (long)d->num[CK_GPUS];
    if (g % c.gpus_per_node != 0 && !c.last_node_gpus)
      return weft_errf(err, WEFT_EINVAL, "%s: %ld GPUs do not divide into "
                       "nodes of %d GPUs", where(d, CK_GPUS), g,
                       c.gpus_per_node);
    long nodes = (g + c.gpus_per_node - 1) / c.gpus_per_node;
    if (d->set[CK_NODES] && (long)d->num[CK_NODES] != nodes)
      return weft_errf(err, WEFT_EINVAL, "%s: %ld GPUs contradict %s (%ld "
                       "nodes of %d GPUs)", where(d, CK_GPUS), g,
                       where(d, CK_NODES), (long)d->num[CK_NODES],
                       c.gpus_per_node);
    c.nodes = (int)nodes;
  } else {
    c.nodes = d->set[CK_NODES] ? (int)d->num[CK_NODES] : 1;
  }
  if ((long)c.nodes * c.gpus_per_node > WEFT_MAX_GPUS)
    return weft_errf(err, WEFT_ELIMIT, "%s: %ld GPUs exceed the limit of %d",
                     where(d, d->set[CK_GPUS] ? CK_GPUS : CK_NODES),
                     (long)c.nodes * c.gpus_per_node, WEFT_MAX_GPUS);
  c.gpus = c.last_node_gpus ? (int)d->num[CK_GPUS]
                             : c.nodes * c.gpus_per_node;

  c.nodes_per_leaf = d->set[CK_NODES_PER_LEAF]
                         ? (int)d->num[CK_NODES_PER_LEAF]
                         : DEFAULT_NODES_PER_LEAF;
  c.leaves_per_pod = d->set[CK_LEAVES_PER_POD]
                         ? (int)d->num[CK_LEAVES_PER_POD]
                         : DEFAULT_LEAVES_PER_POD;
  c.leaves = (c.nodes + c.nodes_per_leaf - 1) / c.nodes_per_leaf;
  c.pods = (c.leaves + c.leaves_per_pod - 1) / c.leaves_per_pod;
  c.oversub = d->set[CK_OVERSUB] ? d->num[CK_OVERSUB] : 1.0;
  c.pod_oversub = d->set[CK_POD_OVERSUB] ? d->num[CK_POD_OVERSUB] : 1.0;
  c.switch_lat_s = d->set[CK_SWITCH_LAT] ? d->num[CK_SWITCH_LAT]
                                         : DEFAULT_SWITCH_LAT_S;
  c.nvlink_lat_s = d->set[CK_NVLINK_LAT] ? d->num[CK_NVLINK_LAT]
                                         : node->nvlink_lat_s;
  if (d->set[CK_NIC_LAT])
    c.nic.lat_s = d->num[CK_NIC_LAT];
  c.nvls = node->nvls;
  c.coll_nvlink_eff = node->coll_nvlink_eff;
  c.coll_nvls_eff = node->coll_nvls_eff;
  c.coll_nic_eff = node->coll_nic_eff;
  c.coll_lat_s = node->coll_lat_s;
  c.coll_ring_loss = node->coll_ring_loss;
  c.coll_floor_s = node->coll_floor_s;
  c.coll_ll_bw_Bps = node->coll_ll_bw_Bps;
  c.p2p_nvlink_lat_s = node->p2p_nvlink_lat_s;
  c.p2p_net_lat_s = node->p2p_net_lat_s;

  /* The NIC's switch: the fabric's radix, and its energy. */
  const struct switch_spec *sw = catalog_switch_for(cat, c.nic.name);
  if (sw)
    c.sw = *sw;
  rc = resolve_topology(d, &c, err);
  if (rc)
    return rc;

  c.scale = hw_scale_none;
  if (d->set[CK_SCALE_COMPUTE])
    c.scale.compute = d->num[CK_SCALE_COMPUTE];
  if (d->set[CK_SCALE_HBM_BW])
    c.scale.hbm_bw = d->num[CK_SCALE_HBM_BW];
  if (d->set[CK_SCALE_HBM_CAP])
    c.scale.hbm_cap = d->num[CK_SCALE_HBM_CAP];
  if (d->set[CK_SCALE_NVLINK])
    c.scale.nvlink = d->num[CK_SCALE_NVLINK];
  if (d->set[CK_SCALE_NIC])
    c.scale.nic = d->num[CK_SCALE_NIC];
  gpu_spec_scale(&c.gpu, &c.scale);
  c.nic.bw_Bps *= c.scale.nic;
  rc = project(d, cat, &c, err);
  if (rc || (rc = clock_power(d, &c, err)))
    return rc;
  /* A NIC made faster needs ports of its rate (issue 40): 800 Gb/s NICs
   * the XDR generation's switch, not their catalog NIC's.  Kept when no
   * catalog switch is that fast (weft platform --parts says so). */
  if (c.scale.nic != 1 || c.proj_nic_years > 0) {
    const struct switch_spec *fast = catalog_switch_for_rate(cat,
                                                             c.nic.bw_Bps);
    if (fast)
      c.sw = *fast;
  }
  c.gpu_hour_price = d->set[CK_GPU_HOUR_PRICE] ? d->num[CK_GPU_HOUR_PRICE]
                                               : 0;
  c.storage_bw_Bps = d->set[CK_STORAGE_BW] ? d->num[CK_STORAGE_BW] : 0;
  if ((rc = resolve_slow(d, CK_SLOW_GPU, c.gpus, c.slow_gpu, &c.nslow_gpu,
                         err)) ||
      (rc = resolve_slow(d, CK_SLOW_NIC, c.gpus, c.slow_nic, &c.nslow_nic,
                         err)))
    return rc;
  c.gpu_sigma = d->set[CK_GPU_SIGMA] ? d->num[CK_GPU_SIGMA] / 100 : 0;
  c.gpu_seed = d->set[CK_GPU_SEED] ? (unsigned long)d->num[CK_GPU_SEED] : 1;
  c.diurnal = d->set[CK_DIURNAL] ? d->num[CK_DIURNAL] / 100 : 0;
  c.diurnal_hour = d->set[CK_DIURNAL_HOUR] ? d->num[CK_DIURNAL_HOUR] : 0;
  if (d->set[CK_DIURNAL_HOUR] && !(c.diurnal > 0))
    return weft_errf(err, WEFT_EINVAL, "%s: the hour of the day matters "
                     "only with a diurnal variation: give diurnal too",
                     where(d, CK_DIURNAL_HOUR));
  c.diurnal_slow = cluster_diurnal_factor(&c, c.diurnal_hour);
  if (d->set[CK_DOWN_LINKS] &&
      (rc = topo_down_resolve(&c, d->text[CK_DOWN_LINKS],
                              where(d, CK_DOWN_LINKS), err)))
    return rc;
  *out = c;
  return 0;
}
