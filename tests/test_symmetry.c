/*
 * test_symmetry.c - the symmetric shortcuts' decision (sim/symmetry.h) as
 * one table: a cluster and a job's layout, what the caller must observe,
 * and the shortcuts taken; then the thinning of shared links on a loaded
 * platform, and its refusal on an XML one.  The table's rows follow the
 * conditions of README's "Fidelity" table; tests/test_engine.c checks the
 * shortcuts' results against replays of every rank.
 */
#include <criterion/criterion.h>
#include <simgrid/link.h>
#include <stdio.h>
#include <string.h>

#include "platforms/catalog.h"
#include "platforms/cluster.h"
#include "sim/platload.h"
#include "sim/symmetry.h"

/* Resolve preset + "name=value" settings (NULL-terminated), 64 GPUs
 * unless a setting says otherwise. */
static void resolve(const char *preset, const char *const *kv,
                    struct cluster *c)
{
  struct weft_err err = {0};
  struct catalog *cat = catalog_builtin(&err);
  cr_assert(cat, "%s", err.msg);
  struct cluster_desc d;
  cluster_desc_init(&d);
  cr_assert_eq(cluster_desc_preset(&d, preset, &err), 0, "%s", err.msg);
  cr_assert_eq(cluster_desc_set(&d, CK_GPUS, "64", "--gpus", 2, &err), 0,
               "%s", err.msg);
  for (int i = 0; kv && kv[i]; i++) {
    char name[64], flag[72];
    const char *eq = strchr(kv[i], '=');
    snprintf(name, sizeof name, "%.*s", (int)(eq - kv[i]), kv[i]);
    snprintf(flag, sizeof flag, "--%s", name);
    int k = cluster_key_from_name(name);
    cr_assert(k >= 0, "key %s", name);
    cr_assert_eq(cluster_desc_set(&d, (enum cluster_key)k, eq + 1, flag, 2,
                                  &err), 0, "%s", err.msg);
  }
  cr_assert_eq(cluster_resolve(&d, cat, c, &err), 0, "%s", err.msg);
  catalog_free(cat);
}

#define TP_FIRST {PD_TP, PD_CP, PD_DP, PD_PP}
#define IL2 2 /* vchunks of an interleaved schedule */
#define DP_FIRST {PD_DP, PD_TP, PD_CP, PD_PP}

struct row {
  const char *what;
  const char *preset;
  const char *kv[4];
  struct graph_layout L;
  bool every_flow, every_task;
  /* expected */
  bool tp, thin, fabric, replicas, ep_across;
};

/* Layouts: tp, pp, dp, cp, ep, vchunks, order, shard, t3.  dgx-a100 and
 * dgx-h100: 8 GPUs and 8 NICs per node, 64 GPUs. */
static const struct row rows[] = {
    {"TP over whole nodes, symmetric fat tree: every shortcut", "dgx-a100",
     {NULL}, {8, 1, 8, 1, 1, 1, TP_FIRST, 0, {0}, 0, 0}, false, false,
     true, false, true, true, false},
    {"oversubscribed leaves: TP symmetry thins, no replica shortcut",
     "dgx-a100", {"oversubscription=2", NULL},
     {8, 1, 8, 1, 1, 1, TP_FIRST, 0, {0}, 0, 0}, false, false,
     true, true, false, false, false},
    {"oversubscribed pods alone: the same", "dgx-a100",
     {"pod_oversubscription=2", NULL}, {8, 1, 8, 1, 1, 1, TP_FIRST, 0, {0}, 0, 0},
     false, false, true, true, false, false, false},
    {"every flow (--every-rank, a flow callback): nothing", "dgx-a100",
     {NULL}, {8, 1, 8, 1, 1, 1, TP_FIRST, 0, {0}, 0, 0}, true, false,
     false, false, false, false, false},
    {"every task (a task callback): rings of one node only", "dgx-a100",
     {NULL}, {8, 1, 8, 1, 1, 1, TP_FIRST, 0, {0}, 0, 0}, false, true,
     false, false, true, false, false},
    {"rail with PXN: TP symmetry, no ring shortcut", "dgx-h100",
     {"topology=rail", NULL}, {8, 1, 8, 1, 1, 1, TP_FIRST, 0, {0}, 0, 0}, false,
     false, true, false, false, false, false},
    {"rail without PXN: every shortcut", "dgx-h100",
     {"topology=rail", "pxn=0", NULL}, {8, 1, 8, 1, 1, 1, TP_FIRST, 0, {0}, 0, 0},
     false, false, true, false, true, true, false},
    {"rail-only: always forwards", "dgx-h100", {"topology=rail-only", NULL},
     {8, 1, 8, 1, 1, 1, TP_FIRST, 0, {0}, 0, 0}, false, false,
     true, false, false, false, false},
    {"multi-plane: as a fat tree", "dgx-h100",
     {"topology=multi-plane", NULL}, {8, 1, 8, 1, 1, 1, TP_FIRST, 0, {0}, 0, 0},
     false, false, true, false, true, true, false},
    {"dragonfly: shared links, thinned", "dgx-a100",
     {"topology=dragonfly", NULL}, {8, 1, 8, 1, 1, 1, TP_FIRST, 0, {0}, 0, 0},
     false, false, true, true, false, false, false},
    {"torus: shared links, thinned", "dgx-a100",
     {"topology=torus", "torus=4x2", NULL},
     {8, 1, 8, 1, 1, 1, TP_FIRST, 0, {0}, 0, 0}, false, false,
     true, true, false, false, false},
    {"oversubscribed second NVLink tier: thinned", "dgx-h100",
     {"nvl_rack=4", "nvl_oversubscription=2", NULL},
     {8, 1, 8, 1, 1, 1, TP_FIRST, 0, {0}, 0, 0}, false, false,
     true, true, false, false, false},
    {"TP inside nodes, not filling them: replicas", "dgx-a100", {NULL},
     {2, 1, 32, 1, 1, 1, TP_FIRST, 0, {0}, 0, 0}, false, false,
     false, false, true, true, false},
    {"TP across nodes (DP innermost): no shortcut", "dgx-a100", {NULL},
     {8, 1, 8, 1, 1, 1, DP_FIRST, 0, {0}, 0, 0}, false, false,
     false, false, false, false, false},
    {"a pipeline: TP symmetry only (symmetry_decide_stages may add)",
     "dgx-a100", {NULL},
     {8, 2, 4, 1, 1, 1, TP_FIRST, 0, {0}, 0, 0}, false, false,
     true, false, false, false, false},
    {"fewer NICs than GPUs: nothing", "dgx-a100", {"nics_per_node=4", NULL},
     {8, 1, 8, 1, 1, 1, TP_FIRST, 0, {0}, 0, 0}, false, false,
     false, false, false, false, false},
    {"expert groups across nodes: couriers, no ring shortcut", "dgx-a100",
     {NULL}, {1, 1, 64, 1, 16, 1, TP_FIRST, 0, {0}, 0, 0}, false, false,
     false, false, false, false, true},
    {"expert groups inside nodes: replicas", "dgx-a100", {NULL},
     {1, 1, 64, 1, 8, 1, TP_FIRST, 0, {0}, 0, 0}, false, false,
     false, false, true, true, false},
    {"HSDP shards across nodes: no ring shortcut", "dgx-a100", {NULL},
     {1, 1, 64, 1, 1, 1, TP_FIRST, 16, {0}, 0, 0}, false, false,
     false, false, false, false, false},
    {"one node: rings of one node, no replicas", "dgx-a100",
     {"gpus=8", NULL}, {1, 1, 8, 1, 1, 1, TP_FIRST, 0, {0}, 0, 0}, false, false,
     false, false, true, false, false},
};

Test(symmetry, table)
{
  for (size_t i = 0; i < sizeof rows / sizeof *rows; i++) {
    const struct row *w = &rows[i];
    struct cluster c;
    resolve(w->preset, w->kv, &c);
    struct symmetry s;
    symmetry_decide(&w->L, &c, w->every_flow, w->every_task, &s);
    cr_expect_eq(s.tp, w->tp, "%s: tp", w->what);
    cr_expect_eq(s.rank_step, w->tp ? w->L.tp : 1, "%s: rank_step", w->what);
    cr_expect_eq(s.thin, w->thin, "%s: thin", w->what);
    cr_expect_eq(s.fabric, w->fabric, "%s: fabric", w->what);
    cr_expect_eq(s.replicas, w->replicas, "%s: replicas", w->what);
    cr_expect_eq(s.ep_across, w->ep_across, "%s: ep_across", w->what);
  }
}

/* Expert replica symmetry (symmetry_decide_experts) on dgx-h100, TP 2:
 * its conditions one by one; tests/test_engine.c compares the taken
 * cases with every rank. */
struct erow {
  const char *what;
  const char *kv[4];
  struct graph_layout L;
  bool every_task;
  bool experts; /* expected (and replicas with it) */
  bool quot;    /* the quotient (symmetry.h, quot) */
};

static const struct erow erows[] = {
    {"EP over two nodes, PP 4 on 128: taken", {"gpus=128", NULL},
     {2, 4, 16, 1, 8, 1, TP_FIRST, 0, {0}, 0, 0}, false, true, false},
    {"EP over four nodes without pipelines: taken", {NULL},
     {2, 1, 32, 1, 16, 1, TP_FIRST, 0, {0}, 0, 0}, false, true, false},
    {"EP over four nodes with pipelines: refused", {"gpus=128", NULL},
     {2, 2, 32, 1, 16, 1, TP_FIRST, 0, {0}, 0, 0}, false, false, false},
    {"a stage over two leaf groups: refused", {"nodes_per_leaf=2", NULL},
     {2, 2, 16, 1, 8, 1, TP_FIRST, 0, {0}, 0, 0}, false, false, false},
    {"random placement: refused", {"placement=random:1", NULL},
     {2, 2, 16, 1, 8, 1, TP_FIRST, 0, {0}, 0, 0}, false, false, false},
    {"oversubscribed leaves: refused", {"oversubscription=2", NULL},
     {2, 2, 16, 1, 8, 1, TP_FIRST, 0, {0}, 0, 0}, false, false, false},
    {"every task (a task callback): refused", {NULL},
     {2, 2, 16, 1, 8, 1, TP_FIRST, 0, {0}, 0, 0}, true, false, false},
    {"expert groups inside nodes: not this shortcut", {NULL},
     {1, 1, 64, 1, 8, 1, TP_FIRST, 0, {0}, 0, 0}, false, false, false},
    /* The quotient: expert groups over a whole stage. */
    {"EP over a whole stage of four nodes, PP 2: taken, quotient", {NULL},
     {2, 2, 16, 1, 16, 1, TP_FIRST, 0, {0}, 0, 0}, false, true, true},
    {"the same, interleaved: taken, quotient", {NULL},
     {2, 2, 16, 1, 16, IL2, TP_FIRST, 0, {0}, 0, 0}, false, true, true},
    {"EP over a whole stage of eight nodes, PP 2 on 128: quotient",
     {"gpus=128", NULL},
     {2, 2, 32, 1, 32, 1, TP_FIRST, 0, {0}, 0, 0}, false, true, true},
    {"EP over a whole stage of two nodes, PP 2 on 32: quotient",
     {"gpus=32", NULL},
     {2, 2, 8, 1, 8, 1, TP_FIRST, 0, {0}, 0, 0}, false, true, true},
    {"TP 1, EP over a whole stage of four nodes: quotient", {NULL},
     {1, 2, 32, 1, 32, 1, TP_FIRST, 0, {0}, 0, 0}, false, true, true},
    {"EP over the whole job without pipelines: quotient", {NULL},
     {2, 1, 32, 1, 32, 1, TP_FIRST, 0, {0}, 0, 0}, false, true, true},
    {"EP over a whole stage, rail without PXN: refused (no twins)",
     {"topology=rail", "pxn=0", NULL},
     {2, 2, 16, 1, 16, 1, TP_FIRST, 0, {0}, 0, 0}, false, false, false},
    {"EP over a whole stage, multi-plane: refused (no twins)",
     {"topology=multi-plane", NULL},
     {2, 2, 16, 1, 16, 1, TP_FIRST, 0, {0}, 0, 0}, false, false, false},
    {"EP over a whole stage, a stage over two leaf groups: refused",
     {"nodes_per_leaf=2", NULL},
     {2, 2, 16, 1, 16, 1, TP_FIRST, 0, {0}, 0, 0}, false, false, false},
    {"EP over a whole stage, oversubscribed: refused",
     {"oversubscription=2", NULL},
     {2, 2, 16, 1, 16, 1, TP_FIRST, 0, {0}, 0, 0}, false, false, false},
    {"EP over a whole stage, a task callback: refused", {NULL},
     {2, 2, 16, 1, 16, 1, TP_FIRST, 0, {0}, 0, 0}, true, false, false},
};

Test(symmetry, experts_table)
{
  for (size_t i = 0; i < sizeof erows / sizeof *erows; i++) {
    const struct erow *w = &erows[i];
    struct cluster c;
    resolve("dgx-h100", w->kv, &c);
    struct symmetry s;
    symmetry_decide(&w->L, &c, false, w->every_task, &s);
    bool before = s.replicas;
    cr_expect_not(s.experts, "%s: experts before", w->what);
    symmetry_decide_experts(&w->L, &c, false, w->every_task, &s);
    cr_expect_eq(s.experts, w->experts, "%s: experts", w->what);
    cr_expect_eq(s.quot, w->quot, "%s: quotient", w->what);
    cr_expect_eq(s.quot_needed, w->quot && w->L.pp > 1 && w->L.ep > 8,
                 "%s: quotient needed", w->what);
    cr_expect_eq(s.replicas, w->experts || before, "%s: replicas", w->what);
    if (w->experts)
      cr_expect(s.fabric, "%s: rings as node 0's flows", w->what);
  }
}

/* Stage replica symmetry (symmetry_decide_stages) on dgx-h100 (64 GPUs,
 * leaf groups of 32 nodes unless a setting says otherwise): its conditions
 * one by one; tests/test_engine.c compares the taken cases with every
 * rank. */
struct srow {
  const char *what;
  const char *kv[4];
  struct graph_layout L;
  bool every_task;
  bool stages; /* expected (and replicas with it) */
  bool classes;
};

static const struct srow srows[] = {
    {"TP 8 x PP 2 x DP 4: taken (with TP symmetry)", {NULL},
     {8, 2, 4, 1, 1, 1, TP_FIRST, 0, {0}, 0, 0}, false, true, false},
    {"TP 2 x PP 4 x DP 8, stages of two nodes: taken", {NULL},
     {2, 4, 8, 1, 1, 1, TP_FIRST, 0, {0}, 0, 0}, false, true, false},
    {"TP 4 x CP 2 x PP 2, CP inside nodes: taken", {NULL},
     {4, 2, 4, 2, 1, 1, TP_FIRST, 0, {0}, 0, 0}, false, true, false},
    {"stages of 4 nodes in leaf groups of 4: taken",
     {"nodes_per_leaf=4", NULL},
     {8, 2, 4, 1, 1, 1, TP_FIRST, 0, {0}, 0, 0}, false, true, false},
    {"a stage over two leaf groups: taken, classes", {"nodes_per_leaf=2", NULL},
     {8, 2, 4, 1, 1, 1, TP_FIRST, 0, {0}, 0, 0}, false, true, true},
    {"stages of 12 nodes over two leaf groups of 6: taken, classes",
     {"gpus=192", "nodes_per_leaf=6", NULL},
     {8, 2, 12, 1, 1, 1, TP_FIRST, 0, {0}, 0, 0}, false, true, true},
    {"rail without PXN, stages over two leaf groups: refused",
     {"topology=rail", "pxn=0", "nodes_per_leaf=2", NULL},
     {8, 2, 4, 1, 1, 1, TP_FIRST, 0, {0}, 0, 0}, false, false, false},
    {"multi-plane, stages over two leaf groups: refused",
     {"topology=multi-plane", "nodes_per_leaf=2", NULL},
     {8, 2, 4, 1, 1, 1, TP_FIRST, 0, {0}, 0, 0}, false, false, false},
    {"interleaved schedule: refused", {NULL},
     {8, 2, 4, 1, 1, IL2, TP_FIRST, 0, {0}, 0, 0}, false, false, false},
    {"a stage of one node: refused", {NULL},
     {8, 8, 1, 1, 1, 1, TP_FIRST, 0, {0}, 0, 0}, false, false, false},
    {"PP not outermost: refused", {NULL},
     {8, 2, 4, 1, 1, 1, {PD_TP, PD_CP, PD_PP, PD_DP}, 0, {0}, 0, 0}, false,
     false, false},
    {"TP across nodes: refused", {NULL},
     {8, 2, 4, 1, 1, 1, DP_FIRST, 0, {0}, 0, 0}, false, false, false},
    {"spread placement: refused", {"placement=spread", NULL},
     {8, 2, 4, 1, 1, 1, TP_FIRST, 0, {0}, 0, 0}, false, false, false},
    {"oversubscribed leaves: refused", {"oversubscription=2", NULL},
     {8, 2, 4, 1, 1, 1, TP_FIRST, 0, {0}, 0, 0}, false, false, false},
    {"rail with PXN: refused", {"topology=rail", NULL},
     {8, 2, 4, 1, 1, 1, TP_FIRST, 0, {0}, 0, 0}, false, false, false},
    {"every task (a task callback): refused", {NULL},
     {8, 2, 4, 1, 1, 1, TP_FIRST, 0, {0}, 0, 0}, true, false, false},
    {"expert groups across nodes: not this shortcut", {NULL},
     {2, 2, 16, 1, 8, 1, TP_FIRST, 0, {0}, 0, 0}, false, false, false},
    {"no pipeline: replica symmetry, not this shortcut", {NULL},
     {8, 1, 8, 1, 1, 1, TP_FIRST, 0, {0}, 0, 0}, false, false, false},
};

/* Twin hosts (platload.h) and the quotient need the non-blocking fat
 * tree with a NIC per GPU and leaf groups of two nodes or more. */
Test(symmetry, twins)
{
  static const struct {
    const char *what;
    const char *kv[4];
    bool twins;
  } twin_rows[] = {
      {"dgx-h100 fat tree", {NULL}, true},
      {"rail", {"topology=rail", NULL}, false},
      {"rail without PXN", {"topology=rail", "pxn=0", NULL}, false},
      {"multi-plane", {"topology=multi-plane", NULL}, false},
      {"oversubscribed leaves", {"oversubscription=2", NULL}, false},
      {"leaf groups of one node", {"nodes_per_leaf=1", NULL}, false},
      {"leaf groups of two nodes", {"nodes_per_leaf=2", NULL}, true},
  };
  for (size_t i = 0; i < sizeof twin_rows / sizeof *twin_rows; i++) {
    struct cluster c;
    resolve("dgx-h100", twin_rows[i].kv, &c);
    cr_expect_eq(symmetry_twins(&c), twin_rows[i].twins, "%s",
                 twin_rows[i].what);
  }
}

Test(symmetry, stages_table)
{
  for (size_t i = 0; i < sizeof srows / sizeof *srows; i++) {
    const struct srow *w = &srows[i];
    struct cluster c;
    resolve("dgx-h100", w->kv, &c);
    struct symmetry s;
    symmetry_decide(&w->L, &c, false, w->every_task, &s);
    bool before = s.replicas;
    cr_expect_not(s.stages, "%s: stages before", w->what);
    symmetry_decide_stages(&w->L, &c, false, w->every_task, &s);
    cr_expect_eq(s.stages, w->stages, "%s: stages", w->what);
    cr_expect_eq(s.classes, w->classes, "%s: classes", w->what);
    cr_expect_eq(s.replicas, w->stages || before, "%s: replicas", w->what);
    if (w->stages)
      cr_expect(s.fabric, "%s: rings as the first node's flows", w->what);
  }
  /* --every-rank and flow callbacks: nothing. */
  struct cluster c;
  resolve("dgx-h100", NULL, &c);
  struct symmetry s;
  symmetry_decide(&srows[0].L, &c, true, false, &s);
  symmetry_decide_stages(&srows[0].L, &c, true, false, &s);
  cr_expect_not(s.stages);
  cr_expect_not(s.replicas);
}

/* Classes of positions: stages of 16 nodes on leaf groups of 8 nodes, 4
 * per pod (32 nodes), PP 4 on 512 GPUs.  Ring edges 7 -> 8 and 15 -> 0
 * cross a leaf group (3 switch latencies, else 1), and pipeline peers
 * k -> k + 16 are alike for every k (stages 0-1 and 2-3 in one pod, 1-2
 * across pods): positions 0 and 8 (entered across), 7 and 15 (left
 * across), the others. */
Test(symmetry, stage_classes)
{
  struct cluster c;
  resolve("dgx-h100", (const char *const[]){"gpus=512", "nodes_per_leaf=8",
                                            "leaves_per_pod=4", NULL}, &c);
  struct graph_layout L = {8, 4, 16, 1, 1, 1, TP_FIRST, 0, {0}, 0, 0};
  long rep_of[16];
  cr_assert_eq(symmetry_stage_classes(&L, &c, rep_of), 3);
  static const long want[16] = {0, 1, 1, 1, 1, 1, 1, 7,
                                0, 1, 1, 1, 1, 1, 1, 7};
  for (int k = 0; k < 16; k++)
    cr_expect_eq(rep_of[k], want[k], "position %d: %ld", k, rep_of[k]);
  /* Stages of 12 nodes in leaf groups of 32 (nodes 0-31, 32-47): stage
   * 2 (nodes 24-35) crosses at 31 -> 32 and 35 -> 24; pipeline peers
   * from stage 1 (12-23) to 2 cross for k >= 8 (32-35), from 2 to 3
   * (36-47) for k <= 7.  Classes: {0}, {1..6}, {7}, {8}, {9, 10}, {11}. */
  resolve("dgx-h100", (const char *const[]){"gpus=384", NULL}, &c);
  struct graph_layout L2 = {8, 4, 12, 1, 1, 1, TP_FIRST, 0, {0}, 0, 0};
  long r2[12];
  cr_assert_eq(symmetry_stage_classes(&L2, &c, r2), 6);
  static const long want2[12] = {0, 1, 1, 1, 1, 1, 1, 7, 8, 9, 9, 11};
  for (int k = 0; k < 12; k++)
    cr_expect_eq(r2[k], want2[k], "position %d: %ld", k, r2[k]);
}

/* Thinning divides the shared links' bandwidth by TP and restores it;
 * NICs and NVLinks keep theirs. */
Test(symmetry, thin_and_restore)
{
  struct cluster c;
  resolve("dgx-a100", (const char *const[]){"oversubscription=2",
                                            "nodes_per_leaf=2", NULL}, &c);
  struct weft_err err = {0};
  platload_boot(0);
  cr_assert_eq(platload_cluster(&c, &err), 0, "%s", err.msg);
  struct graph_layout L = {8, 1, 8, 1, 1, 1, TP_FIRST, 0, {0}, 0, 0};
  struct symmetry s;
  symmetry_decide(&L, &c, false, false, &s);
  cr_assert(s.thin);
  sg_link_t up = sg_link_by_name("leaf0-up_UP");
  sg_link_t nic = sg_link_by_name("node0-nic0_UP");
  cr_assert(up && nic);
  double up0 = sg_link_get_bandwidth(up), nic0 = sg_link_get_bandwidth(nic);
  struct platload_thinned *th = NULL;
  cr_assert_eq(symmetry_thin(&s, 8, &th, &err), 0, "%s", err.msg);
  cr_assert(th);
  cr_expect_eq(sg_link_get_bandwidth(up), up0 / 8);
  cr_expect_eq(sg_link_get_bandwidth(nic), nic0);
  symmetry_restore(th);
  cr_expect_eq(sg_link_get_bandwidth(up), up0);
}

/* Without thinning, nothing to restore. */
Test(symmetry, nothing_to_thin)
{
  struct symmetry s = {.tp = true, .rank_step = 8};
  struct platload_thinned *th = (struct platload_thinned *)&s;
  struct weft_err err = {0};
  cr_assert_eq(symmetry_thin(&s, 8, &th, &err), 0);
  cr_assert_null(th);
  symmetry_restore(NULL);
}

/* A platform loaded as XML has no fabric to thin: refused, *out kept. */
Test(symmetry, thin_needs_in_memory_platform)
{
  struct cluster c;
  resolve("dgx-a100", (const char *const[]){"oversubscription=2", NULL}, &c);
  struct weft_err err = {0};
  platload_boot(0);
  cr_assert_eq(platload_cluster_xml(&c, &err), 0, "%s", err.msg);
  struct symmetry s = {.tp = true, .rank_step = 8, .thin = true};
  struct platload_thinned *th = (struct platload_thinned *)&s;
  cr_assert_eq(symmetry_thin(&s, 8, &th, &err), WEFT_EINVAL);
  cr_expect_str_eq(err.msg, "TP symmetry on this fabric needs the platform "
                            "built by platload_cluster");
  cr_expect_eq((void *)th, (void *)&s);
}
