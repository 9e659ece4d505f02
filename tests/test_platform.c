/*
 * test_platform.c - generated platforms load in SimGrid and route as the
 * cluster says, hop by hop: inside a node over the two GPUs' NVLink links
 * only; across nodes out of the sender's NIC, through the fabric, into the
 * receiver's NIC; across leaf groups and pods over the up-links.  Each test
 * runs in its own process (Criterion), hence its own SimGrid engine.
 */
#include <criterion/criterion.h>
#include <criterion/parameterized.h>
#include <math.h>
#include <stdbool.h>
#include <simgrid/engine.h>
#include <simgrid/host.h>
#include <simgrid/link.h>
#include <stdio.h>
#include <string.h>
#include <xbt/dynar.h>

#include "platforms/cluster.h"
#include "platforms/platgen.h"
#include "sim/platload.h"

struct plat_case {
  char preset[24];
  int gpus;
  char flag[24];   /* an extra cluster flag, or "" */
  char value[24];
};

/* Build, generate and load; fill *c.  flag2/value2: a second setting, or
 * NULL. */
static void load_with(const struct plat_case *pc, const char *flag2,
                      const char *value2, struct cluster *c)
{
  struct weft_err err = {0};
  struct catalog *cat = catalog_builtin(&err);
  cr_assert(cat, "%s", err.msg);
  struct cluster_desc d;
  cluster_desc_init(&d);
  cr_assert_eq(cluster_desc_preset(&d, pc->preset, &err), 0, "%s", err.msg);
  char num[16];
  snprintf(num, sizeof num, "%d", pc->gpus);
  cr_assert_eq(cluster_desc_set(&d, CK_GPUS, num, "--gpus", 2, &err), 0);
  if (pc->flag[0])
    cr_assert_eq(cluster_desc_set(&d, cluster_key_from_name(pc->flag),
                                  pc->value, "--flag", 2, &err), 0, "%s",
                 err.msg);
  if (flag2)
    cr_assert_eq(cluster_desc_set(&d, cluster_key_from_name(flag2), value2,
                                  "--flag2", 2, &err), 0, "%s", err.msg);
  cr_assert_eq(cluster_resolve(&d, cat, c, &err), 0, "%s", err.msg);
  catalog_free(cat);
  platload_boot(0);
  cr_assert_eq(platload_cluster_xml(c, &err), 0, "%s", err.msg);
}

static void load(const struct plat_case *pc, struct cluster *c)
{
  load_with(pc, NULL, NULL, c);
}

/* The route from GPU a to GPU b as "l1 l2 ...", and its latency. */
static void route(int a, int b, char *buf, size_t size, double *lat)
{
  char ha[32], hb[32];
  platgen_host_name(a, ha, sizeof ha);
  platgen_host_name(b, hb, sizeof hb);
  sg_host_t src = sg_host_by_name(ha), dst = sg_host_by_name(hb);
  cr_assert(src && dst, "hosts %s %s", ha, hb);
  xbt_dynar_t links = xbt_dynar_new(sizeof(sg_link_t), NULL);
  sg_host_get_route(src, dst, links);
  buf[0] = '\0';
  unsigned i;
  sg_link_t l;
  xbt_dynar_foreach(links, i, l)
  {
    size_t n = strlen(buf);
    snprintf(buf + n, size - n, "%s%s", n ? " " : "", sg_link_get_name(l));
  }
  xbt_dynar_free(&links);
  *lat = sg_host_get_route_latency(src, dst);
}

/* Append " link_DIR" to buf. */
static int add(char *buf, size_t size, int n, const char *link, const char *dir)
{
  return n + snprintf(buf + n, size - (size_t)n, " %s_%s", link, dir);
}

/* The route the cluster description implies, written independently of
 * platgen: the oracle for the hop-by-hop check.  Up-links appear only
 * where they can bind (oversubscribed tiers); the latency is the NICs' and
 * one switch hop per switch crossed: 1 in a leaf group, 3 across leaf
 * groups, 5 across pods. */
static void expected(const struct cluster *c, int a, int b, char *buf,
                     size_t size, double *lat)
{
  int na = a / c->gpus_per_node, nb = b / c->gpus_per_node;
  if (na == nb) {
    snprintf(buf, size, "gpu%d-nvl_UP gpu%d-nvl_DOWN", a, b);
    *lat = c->nvlink_lat_s;
    return;
  }
  int per_nic = c->gpus_per_node / c->nics_per_node;
  int ka = (a % c->gpus_per_node) / per_nic;
  int kb = (b % c->gpus_per_node) / per_nic;
  int la = na / c->nodes_per_leaf, lb = nb / c->nodes_per_leaf;
  int pa = la / c->leaves_per_pod, pb = lb / c->leaves_per_pod;
  bool leaf_up = c->oversub > 1, pod_up = c->pod_oversub > 1;
  bool flat = c->leaves <= 256;
  char id[64];
  int n = snprintf(buf, size, "node%d-nic%d_UP node%d-port_UP", na, ka, na);
  int hops = 1;
  if (la != lb && (flat || pa == pb)) {
    /* One route between the two groups, declared from the lower one. */
    const char *fwd = la < lb ? "UP" : "DOWN";
    int lo = la < lb ? la : lb, hi = la < lb ? lb : la;
    snprintf(id, sizeof id, "leaf%d-leaf%d", lo, hi);
    if (la > lb)
      n = add(buf, size, n, id, fwd);
    if (leaf_up) {
      snprintf(id, sizeof id, "leaf%d-up", la);
      n = add(buf, size, n, id, "UP");
    }
    if (pa != pb && pod_up) {
      snprintf(id, sizeof id, "pod%d-up", pa);
      n = add(buf, size, n, id, "UP");
      snprintf(id, sizeof id, "pod%d-up", pb);
      n = add(buf, size, n, id, "DOWN");
    }
    if (leaf_up) {
      snprintf(id, sizeof id, "leaf%d-up", lb);
      n = add(buf, size, n, id, "DOWN");
    }
    if (la < lb) {
      snprintf(id, sizeof id, "leaf%d-leaf%d", lo, hi);
      n = add(buf, size, n, id, fwd);
    }
    hops += pa == pb ? 2 : 4;
  } else if (la != lb) {
    /* Pod zones: up through the group's and the pod's up-links. */
    snprintf(id, sizeof id, "leaf%d-up", la);
    n = add(buf, size, n, id, "UP");
    if (pod_up) {
      snprintf(id, sizeof id, "pod%d-up", pa);
      n = add(buf, size, n, id, "UP");
    }
    snprintf(id, sizeof id, "pod%d-pod%d", pa < pb ? pa : pb, pa < pb ? pb : pa);
    n = add(buf, size, n, id, pa < pb ? "UP" : "DOWN");
    if (pod_up) {
      snprintf(id, sizeof id, "pod%d-up", pb);
      n = add(buf, size, n, id, "DOWN");
    }
    snprintf(id, sizeof id, "leaf%d-up", lb);
    n = add(buf, size, n, id, "DOWN");
    hops += 4;
  }
  snprintf(buf + n, size - (size_t)n, " node%d-port_DOWN node%d-nic%d_DOWN",
           nb, nb, kb);
  *lat = 2 * c->nic.lat_s + hops * c->switch_lat_s;
}

static void check_pair(const struct cluster *c, int a, int b)
{
  if (a < 0 || b < 0 || a >= c->gpus || b >= c->gpus || a == b)
    return;
  char got[512], want[512];
  double glat, wlat;
  route(a, b, got, sizeof got, &glat);
  expected(c, a, b, want, sizeof want, &wlat);
  cr_assert_str_eq(got, want, "route gpu%d -> gpu%d", a, b);
  cr_assert(fabs(glat - wlat) <= 1e-12 * wlat, "latency gpu%d -> gpu%d: %g "
            "!= %g", a, b, glat, wlat);
}

static double link_bw(const char *name)
{
  sg_link_t l = sg_link_by_name(name);
  cr_assert(l, "no link %s", name);
  return sg_link_get_bandwidth(l);
}

static void check_cluster(const struct cluster *c)
{
  cr_assert_eq((int)sg_host_count(), c->gpus);
  int g = c->gpus_per_node, last = c->gpus - 1;
  int leaf = c->nodes_per_leaf * g, pod = leaf * c->leaves_per_pod;
  /* In a node, both directions, first and last GPUs. */
  check_pair(c, 0, 1);
  check_pair(c, 1, 0);
  check_pair(c, 0, g - 1);
  check_pair(c, g - 1, 0);
  /* Node to node in a leaf group, different NICs. */
  check_pair(c, g - 1, g);
  check_pair(c, g, g - 1);
  check_pair(c, 1, 2 * g - 2);
  /* Leaf group to leaf group, pod to pod, the far end. */
  check_pair(c, 0, leaf);
  check_pair(c, leaf + 3, 2);
  check_pair(c, 5, pod + g + 1);
  check_pair(c, pod + 1, 0);
  check_pair(c, 0, last);
  check_pair(c, last, 0);
  check_pair(c, last / 2, last / 3);
  /* Link bandwidths. */
  cr_assert_eq(link_bw("gpu0-nvl_UP"), c->gpu.nvlink_bw_Bps);
  cr_assert_eq(link_bw("gpu0-nvl_DOWN"), c->gpu.nvlink_bw_Bps);
  cr_assert_eq(link_bw("node0-nic0_UP"), c->nic.bw_Bps);
  double up = fmin(c->nodes, c->nodes_per_leaf) * c->nics_per_node *
              c->nic.bw_Bps / c->oversub;
  cr_assert(fabs(link_bw("leaf0-up_UP") - up) <= 1e-9 * up, "leaf up-link %g "
            "!= %g", link_bw("leaf0-up_UP"), up);
  cr_assert_eq(platgen_leaf_up_bw(c, 0), link_bw("leaf0-up_UP"));
  cr_assert_eq(platgen_pod_up_bw(c, 0), link_bw("pod0-up_UP"));
}

ParameterizedTestParameters(platform, presets)
{
  static struct plat_case cases[] = {
      {"selene", 8, "", ""},           {"selene", 1024, "", ""},
      {"selene", 3072, "", ""},        {"dgx-a100", 16384, "", ""},
      {"dgx-h100", 8, "", ""},         {"dgx-h100", 1024, "", ""},
      {"dgx-h100", 16384, "", ""},     {"dgx-h200", 2048, "", ""},
      {"dgx-b200", 4096, "", ""},      {"gb200-nvl72", 72, "", ""},
      {"gb200-nvl72", 1152, "", ""},   {"gb200-nvl72", 16416, "", ""},
      /* Part of NVL72 racks: 16 of 18 trays of one rack, of two, of 16
       * (two leaf groups); GB300 racks on XDR. */
      {"gb200-nvl72", 64, "", ""},     {"gb200-nvl72", 128, "", ""},
      {"gb200-nvl72", 1024, "", ""},   {"gb300-nvl72", 576, "", ""},
      {"gb300-nvl72", 256, "", ""},
      {"h100-oversub", 1024, "", ""},
      {"dgx-h100", 256, "nics_per_node", "2"},
      {"dgx-h100", 512, "gpus_per_node", "64"},
      {"dgx-h100", 1024, "leaves_per_pod", "1"},
      /* 260 leaf groups of one node: pods become zones (platgen.h). */
      {"dgx-h100", 2080, "nodes_per_leaf", "1"},
  };
  return cr_make_param_array(struct plat_case, cases,
                             sizeof cases / sizeof *cases);
}

ParameterizedTest(struct plat_case *pc, platform, presets, .timeout = 300)
{
  struct cluster c;
  load(pc, &c);
  check_cluster(&c);
}

Test(platform, oversubscription_thins_up_links)
{
  struct plat_case pc = {"h100-oversub", 512, "pod_oversubscription", "4"};
  struct cluster c;
  load(&pc, &c);
  /* 16 nodes x 8 NICs x 50 GB/s / 2 per leaf group; 4 groups / 4 per pod. */
  cr_assert_eq(link_bw("leaf0-up_UP"), 16 * 8 * 50e9 / 2);
  cr_assert_eq(link_bw("pod0-up_UP"), 4 * 16 * 8 * 50e9 / 2 / 4);
  check_cluster(&c);
}

Test(platform, oversubscribed_pods_flat)
{
  /* 16 leaf groups in 2 pods, 2:1 at the leaf and 4:1 above the pods. */
  struct plat_case pc = {"h100-oversub", 2048, "", ""};
  struct cluster c;
  load_with(&pc, "pod_oversubscription", "4", &c);
  cr_assert_eq(c.pods, 2);
  check_cluster(&c);
}

Test(platform, oversubscribed_pod_zones)
{
  /* 300 leaf groups of one node, 2:1 at the leaf (preset) and 4:1 above
   * the pods: every up-link on the routes. */
  struct plat_case pc = {"h100-oversub", 2400, "nodes_per_leaf", "1"};
  struct cluster c;
  load_with(&pc, "pod_oversubscription", "4", &c);
  cr_assert_gt(c.leaves, 256);
  cr_assert_eq(c.pod_oversub, 4);
  check_cluster(&c);
}

Test(platform, hosts_carry_rank_and_power_properties)
{
  struct plat_case pc = {"dgx-a100", 16, "", ""};
  struct cluster c;
  load(&pc, &c);
  sg_host_t h = sg_host_by_name("gpu11");
  cr_assert_str_eq(sg_host_get_property_value(h, "node"), "1");
  cr_assert_str_eq(sg_host_get_property_value(h, "local_rank"), "3");
  cr_assert_str_eq(sg_host_get_property_value(h, "wattage_per_state"),
                   "50:400");
  cr_assert_eq(sg_host_get_speed(h), 312e12);
}
