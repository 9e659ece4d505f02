/*
 * workload.c - workload files and flags.
 */
#include "workloads/workload.h"

#include <stdio.h>
#include <string.h>

#include "sim/base/xin.h"

void workload_init(struct workload *w)
{
  memset(w, 0, sizeof *w);
  snprintf(w->name, sizeof w->name, "workload");
  plan_init(&w->plan);
  cluster_desc_init(&w->cluster);
}

void workload_custom_model(struct workload *w)
{
  memset(&w->model, 0, sizeof w->model);
  w->model.dtype = DTYPE_BF16;
  w->model.experts = w->model.topk = 1;
  w->model.ffn_kind = FFN_GELU;
  w->model.gpt_style = true;
  snprintf(w->model.name, sizeof w->model.name, "custom");
  w->have_model = true;
}

static int set_model(void *ctx, int key, const char *value,
                     const char *origin, struct weft_err *err)
{
  return model_set(ctx, (enum model_key)key, value, origin, err);
}

static int set_plan(void *ctx, int key, const char *value, const char *origin,
                    struct weft_err *err)
{
  return plan_set(ctx, (enum plan_key)key, value, origin, err);
}

/* The attributes of <model> and <plan> are the settings of model.h and
 * plan.h, applied in key order (xin_apply). */
static int read_model(struct workload *w, const struct xin_doc *doc,
                      const struct xin_elem *e, struct weft_err *err)
{
  const char *attrs[MK_COUNT + 4];
  const char *const *keys = attrs + 3;
  int n = 0;
  attrs[n++] = "preset";
  attrs[n++] = "name";
  attrs[n++] = "config";
  for (int k = 0; k < MK_COUNT; k++)
    attrs[n++] = model_key_name((enum model_key)k);
  attrs[n] = NULL;
  int rc = xin_check_attrs(doc, e, attrs, err);
  if (rc)
    return rc;
  char preset[WEFT_MAX_NAME] = "", config[1024] = "";
  if ((rc = xin_str(doc, e, "preset", false, preset, sizeof preset, err)) ||
      (rc = xin_str(doc, e, "config", false, config, sizeof config, err)))
    return rc;
  if (preset[0] && config[0])
    return xin_errf(doc, e, err, WEFT_EINVAL, "give preset or config, not "
                    "both");
  w->model_is_config = false;
  memset(&w->hf, 0, sizeof w->hf);
  if (config[0]) {
    /* Relative to the workload file, as a path in a Makefile's rule. */
    char path[2048];
    const char *dir = xin_doc_name(doc), *slash = strrchr(dir, '/');
    if (config[0] == '/' || !slash)
      snprintf(path, sizeof path, "%s", config);
    else
      snprintf(path, sizeof path, "%.*s/%s", (int)(slash - dir), dir, config);
    if ((rc = hfconfig_read(&w->model, &w->hf, path, err)))
      return xin_errf(doc, e, err, rc, "attribute 'config': %s", err->msg);
    w->model_is_config = true;
  } else if (preset[0]) {
    if ((rc = model_from_preset(&w->model, preset, err)))
      return xin_errf(doc, e, err, rc, "attribute 'preset': %s", err->msg);
  } else {
    workload_custom_model(w);
    for (int k = 0; k < MK_COUNT; k++)
      xin_origin(doc, e, keys[k], w->model.origin[k],
                 sizeof w->model.origin[k]);
  }
  if ((rc = xin_str(doc, e, "name", false, w->model.name,
                    sizeof w->model.name, err)))
    return rc;
  rc = xin_apply(doc, e, keys, WEFT_MAX_DESC - 1, set_model, &w->model, err);
  w->have_model = true;
  return rc;
}

static int read_plan(struct workload *w, const struct xin_doc *doc,
                     const struct xin_elem *e, struct weft_err *err)
{
  const char *attrs[PK_COUNT + 1];
  for (int k = 0; k < PK_COUNT; k++)
    attrs[k] = plan_key_name((enum plan_key)k);
  attrs[PK_COUNT] = NULL;
  int rc = xin_check_attrs(doc, e, attrs, err);
  if (!rc)
    rc = xin_apply(doc, e, attrs, WEFT_MAX_DESC - 1, set_plan, &w->plan, err);
  /* What <plan> leaves unset is still this element's to answer for. */
  for (int k = 0; k < PK_COUNT && !rc; k++)
    if (!w->plan.set[k])
      snprintf(w->plan.origin[k], sizeof w->plan.origin[k], "%s:%d: <plan>",
               xin_doc_name(doc), xin_line_in(doc, e));
  return rc;
}

int workload_read_file(struct workload *w, struct catalog *cat,
                       const char *path, struct weft_err *err)
{
  struct xin_doc *doc = xin_parse_file(path, err);
  if (!doc)
    return err ? err->code : WEFT_EIO;
  const struct xin_elem *root = xin_root(doc);
  int rc = xin_check_root(doc, "workload", err);
  /* Plan settings the file does not give are the file's to answer for. */
  for (int k = 0; k < PK_COUNT; k++)
    if (!w->plan.set[k])
      snprintf(w->plan.origin[k], sizeof w->plan.origin[k], "%s", path);
  if (!rc)
    rc = xin_check_attrs(doc, root, (const char *const[]){"name", NULL}, err);
  if (!rc)
    rc = xin_str(doc, root, "name", false, w->name, sizeof w->name, err);
  bool seen[3] = {false, false, false};
  for (const struct xin_elem *e = rc ? NULL : xin_child(root); e && !rc;
       e = xin_next(e)) {
    const char *n = xin_name(e);
    int which = strcmp(n, "model") == 0     ? 0
                : strcmp(n, "plan") == 0    ? 1
                : strcmp(n, "cluster") == 0 ? 2
                                            : -1;
    if (which < 0) {
      rc = xin_errf(doc, e, err, WEFT_EINVAL, "unknown element; expected "
                    "model, plan or cluster");
      break;
    }
    if (seen[which]) {
      rc = xin_errf(doc, e, err, WEFT_EINVAL, "only one <%s> per workload", n);
      break;
    }
    seen[which] = true;
    if (which == 0)
      rc = read_model(w, doc, e, err);
    else if (which == 1)
      rc = read_plan(w, doc, e, err);
    else {
      rc = cluster_desc_read_elem(&w->cluster, cat, doc, e, 1, err);
      w->have_cluster = true;
    }
  }
  xin_free(doc);
  return rc;
}

int workload_flag(struct workload *w, const char *name, const char *value,
                  struct weft_err *err)
{
  char origin[80];
  snprintf(origin, sizeof origin, "--%s", name);
  if (strcmp(name, "model") == 0) {
    bool config = hfconfig_is_path(value);
    struct hfconfig_note note;
    memset(&note, 0, sizeof note);
    int rc = config ? hfconfig_read(&w->model, &note, value, err)
                    : model_from_preset(&w->model, value, err);
    if (rc)
      return weft_err_prefix(err, origin);
    w->have_model = true;
    w->model_is_config = config;
    w->hf = note;
    return 0;
  }
  int k = model_key_from_name(name);
  if (k >= 0) {
    if (!w->have_model)
      return weft_errf(err, WEFT_EINVAL, "%s: give a model first (--model "
                       "NAME or a workload file)", origin);
    return model_set(&w->model, (enum model_key)k, value, origin, err);
  }
  k = plan_key_from_name(name);
  if (k >= 0)
    return plan_set(&w->plan, (enum plan_key)k, value, origin, err);
  if (strcmp(name, "cluster") == 0) {
    return 1; /* handled by the caller, which owns the catalog */
  }
  if (strcmp(name, "scale") == 0) {
    return cluster_desc_set_scale(&w->cluster, value, origin, 2, err);
  }
  k = cluster_key_from_name(name);
  if (k >= 0)
    return cluster_desc_set(&w->cluster, (enum cluster_key)k, value, origin, 2,
                            err);
  return 1;
}

/* Whether every group of kind `gk` lies in one rack (node). */
static long straddling(const struct graph_layout *l, const struct cluster *c,
                       enum group_kind gk, long *out_n)
{
  long nranks = layout_ranks(l);
  for (long r = 0; r < nranks; r++) {
    struct layout_group g;
    layout_group(l, gk, r, &g);
    if (g.slot != 0)
      continue;
    int node = cluster_node_of(c, (int)r);
    for (long k = 1; k < g.n; k++)
      if (cluster_node_of(c, (int)layout_member(l, gk, r, k)) != node) {
        *out_n = g.n;
        return r;
      }
  }
  return -1;
}

int workload_check_racks(const struct plan *p, const struct cluster *c,
                         const char *gpus_origin, struct weft_err *err)
{
  if (!c->last_node_gpus)
    return 0;
  struct graph_layout l;
  plan_layout(p, &l);
  /* The groups whose collectives weft's plans keep in a node: TP (and a
   * Tensor3D block), EP, and with expert TP its groups and the allgather
   * and flex dispatchers' TP x EP (builder_moe.c). */
  static const struct {
    enum group_kind gk;
    const char *name;
  } kinds[] = {{GK_TP, "TP"},
               {GK_EP, "EP"},
               {GK_ETP, "expert TP"},
               {GK_TPEP, "expert TP x EP"}};
  bool tpep = l.etp > 0 && (p->moe_dispatcher == MD_ALLGATHER ||
                            p->moe_dispatcher == MD_DEEPEP);
  for (size_t i = 0; i < sizeof kinds / sizeof *kinds; i++) {
    enum group_kind gk = kinds[i].gk;
    if ((gk == GK_EP && p->ep < 2) || (gk == GK_ETP && l.etp < 2) ||
        (gk == GK_TPEP && !tpep))
      continue;
    long n = 0, leader = straddling(&l, c, gk, &n);
    if (leader >= 0)
      return weft_errf(err, WEFT_EINVAL, "%s: %d GPUs (%d x %d in whole "
                       "racks, %d in a last rack): the %s group of %ld ranks "
                       "from rank %ld spans two racks' NVLink domains; choose "
                       "degrees whose %s groups fit in a rack's %d GPUs and "
                       "in the last rack's %d, or GPUs that split evenly "
                       "over racks", gpus_origin,
                       c->gpus, c->gpus_per_node, c->nodes - 1,
                       c->last_node_gpus, kinds[i].name, n, leader,
                       kinds[i].name, c->gpus_per_node, c->last_node_gpus);
  }
  return 0;
}

int workload_resolve(struct workload *w, const struct catalog *cat,
                     const char *default_cluster, struct cluster *out_cluster,
                     struct weft_err *err)
{
  int rc = workload_resolve_hw(w, cat, default_cluster, out_cluster, err);
  if (!rc)
    rc = plan_resolve(&w->plan, &w->model, out_cluster->gpus, err);
  const char *o = w->cluster.set[CK_GPUS] ? w->cluster.origin[CK_GPUS]
                                          : "gpus";
  return rc ? rc : workload_check_racks(&w->plan, out_cluster, o, err);
}

int workload_resolve_hw(struct workload *w, const struct catalog *cat,
                        const char *default_cluster,
                        struct cluster *out_cluster, struct weft_err *err)
{
  if (!w->have_model)
    return weft_errf(err, WEFT_EINVAL, "no model: give --model NAME or a "
                     "workload file with <model>");
  int rc;
  /* A config.json has no training sequence (max_position_embeddings is
   * the context limit of inference, not what the model trains on). */
  if (w->model_is_config && w->model.seq < 1)
    return weft_errf(err, WEFT_EINVAL, "%s: a Hugging Face config gives no "
                     "training sequence length (max_position_embeddings is "
                     "the longest context, not the training sequence): give "
                     "--seq N (seq=\"N\" in the workload's <model>)",
                     w->hf.path);
  if (w->model_is_config && w->hf.seq_limit &&
      w->model.seq > w->hf.seq_limit)
    return weft_errf(err, WEFT_EINVAL, "%s (the sequence is %ld)",
                     w->hf.seq_limit_why, w->model.seq);
  if ((rc = model_check(&w->model, err)))
    return rc;
  if (!w->cluster.set[CK_NODE]) {
    /* No node type yet: the default preset goes under what was set. */
    struct cluster_desc d;
    cluster_desc_init(&d);
    if ((rc = cluster_desc_preset(&d, default_cluster, err)))
      return rc;
    cluster_desc_fill(&w->cluster, &d);
  }
  if ((rc = cluster_resolve(&w->cluster, cat, out_cluster, err)))
    return rc;
  if (out_cluster->gpu.peak_flops[w->model.dtype] <= 0)
    return weft_errf(err, WEFT_EINVAL, "%s: %s has no %s compute (weft list "
                     "gpus shows what each GPU has)",
                     w->model.origin[MK_DTYPE], out_cluster->gpu.name,
                     dtype_name(w->model.dtype));
  /* DeepEP's NVLink hop spans the GPUs of one NVLink domain (a node, or
   * the job's GPUs of an NVL72 rack). */
  if (!w->plan.set[PK_MOE_NODE_GPUS])
    w->plan.moe_node_gpus = out_cluster->gpus_per_node;
  if (w->plan.attn_sdpa)
    w->plan.attn_kernel = out_cluster->gpu.attn[AK_FLASH2].have ? AK_FLASH2
                                                                : -1;
  const struct plan *p = &w->plan;
  if (p->fp8_recipe == FP8_MXFP8 && w->model.dtype != DTYPE_FP8)
    return weft_errf(err, WEFT_EINVAL, "%s: the mxfp8 recipe scales FP8 "
                     "tensors: it needs dtype fp8 (--dtype fp8)",
                     p->origin[PK_FP8_RECIPE]);
  if (p->fp8_recipe == FP8_MXFP8 && !out_cluster->gpu.mxfp8)
    return weft_errf(err, WEFT_EINVAL, "%s: %s has no block-scaled FP8 "
                     "(MXFP8: Blackwell and later; weft list gpus shows "
                     "which GPUs have it)", p->origin[PK_FP8_RECIPE],
                     out_cluster->gpu.name);
  if (p->attn_kernel >= 0 && !out_cluster->gpu.attn[p->attn_kernel].have)
    return weft_errf(err, WEFT_EINVAL, "%s: %s has no %s attention kernel "
                     "(weft list gpus shows the kernels of each GPU)",
                     p->origin[PK_ATTENTION], out_cluster->gpu.name,
                     attn_kernel_name((enum attn_kernel)p->attn_kernel));
  return 0;
}
