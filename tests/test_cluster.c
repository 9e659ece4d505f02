/*
 * test_cluster.c - presets, files and flags resolve to the cluster they
 * describe; later layers override earlier ones.
 */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <unistd.h>

#include "platforms/cluster.h"

static struct catalog *cat;

static void setup(void)
{
  struct weft_err err = {0};
  cat = catalog_builtin(&err);
  cr_assert(cat, "%s", err.msg);
}

static void teardown(void) { catalog_free(cat); }

TestSuite(cluster, .init = setup, .fini = teardown);

static struct cluster resolve_preset(const char *name, const char *k1,
                                     const char *v1)
{
  struct cluster_desc d;
  struct cluster c;
  struct weft_err err = {0};
  cluster_desc_init(&d);
  cr_assert_eq(cluster_desc_preset(&d, name, &err), 0, "%s", err.msg);
  if (k1) {
    char origin[64];
    snprintf(origin, sizeof origin, "--%s", k1);
    cr_assert_eq(cluster_desc_set(&d, cluster_key_from_name(k1), v1, origin,
                                  2, &err), 0, "%s", err.msg);
  }
  cr_assert_eq(cluster_resolve(&d, cat, &c, &err), 0, "%s", err.msg);
  return c;
}

Test(cluster, every_preset_resolves)
{
  int n = cluster_preset_count();
  cr_assert_geq(n, 6);
  for (int i = 0; i < n; i++) {
    struct cluster_desc d;
    struct cluster c;
    struct weft_err err = {0};
    cr_assert_eq(cluster_preset_get(i, &d, &err), 0, "%s", err.msg);
    cr_assert_eq(cluster_resolve(&d, cat, &c, &err), 0, "%s", err.msg);
    cr_assert_gt(c.gpus, 0);
    cr_assert_eq(c.gpus, c.nodes * c.gpus_per_node);
    cr_assert(c.description[0], "preset %s has no description", c.name);
  }
}

Test(cluster, selene_is_dgx_a100_with_hdr)
{
  struct cluster c = resolve_preset("selene", "gpus", "3072");
  cr_assert_str_eq(c.gpu.name, "A100-80GB");
  cr_assert_str_eq(c.nic.name, "HDR");
  cr_assert_eq(c.nodes, 384);
  cr_assert_eq(c.gpus_per_node, 8);
  cr_assert_eq(c.nics_per_node, 8);
  cr_assert_eq(c.nodes_per_leaf, 20);
  cr_assert_eq(c.leaves, 20); /* ceil(384 / 20) */
  cr_assert_eq(c.pods, 3);    /* ceil(20 / 7) */
  cr_assert_eq(c.nic.bw_Bps, 25e9);
  cr_assert_eq(c.switch_lat_s, 130e-9);
}

Test(cluster, nodes_and_gpus_override_each_other_by_layer)
{
  struct cluster c = resolve_preset("dgx-h100", "nodes", "16");
  cr_assert_eq(c.gpus, 128);
  c = resolve_preset("dgx-h100", "gpus", "64");
  cr_assert_eq(c.nodes, 8);
  c = resolve_preset("gb200-nvl72", "gpus", "576");
  cr_assert_eq(c.nodes, 8);
  cr_assert_eq(c.gpus_per_node, 72);
}

Test(cluster, flags_override_hardware)
{
  struct cluster c = resolve_preset("dgx-h100", "nic", "XDR");
  cr_assert_eq(c.nic.bw_Bps, 100e9);
  c = resolve_preset("dgx-h100", "gpu", "H200");
  cr_assert_eq(c.gpu.hbm_bytes, 141e9);
  c = resolve_preset("dgx-h100", "nics-per-node", "4");
  cr_assert_eq(c.nics_per_node, 4);
  cr_assert_eq(cluster_nic_of(&c, 0), 0);
  cr_assert_eq(cluster_nic_of(&c, 1), 0);
  cr_assert_eq(cluster_nic_of(&c, 2), 1);
  cr_assert_eq(cluster_nic_of(&c, 15), 3);
  cr_assert_eq(cluster_node_of(&c, 15), 1);
  c = resolve_preset("dgx-h100", "switch_lat", "0.3us");
  cr_assert_eq(c.switch_lat_s, 0.3e-6);
  c = resolve_preset("h100-oversub", NULL, NULL);
  cr_assert_eq(c.oversub, 2.0);
}

Test(cluster, larger_nvlink_domain_keeps_nics_per_gpu)
{
  struct cluster c = resolve_preset("dgx-h100", "gpus-per-node", "32");
  cr_assert_eq(c.gpus_per_node, 32);
  cr_assert_eq(c.nics_per_node, 32);
  cr_assert_eq(c.nodes, 4); /* the preset's node count stays */
  cr_assert_eq(c.gpus, 128);
}

Test(cluster, what_if_scaling)
{
  struct cluster_desc d;
  struct cluster c;
  struct weft_err err = {0};
  cluster_desc_init(&d);
  cr_assert_eq(cluster_desc_preset(&d, "dgx-a100", &err), 0);
  cr_assert_eq(cluster_desc_set_scale(&d, "compute=2,nic=4,nvlink=1.5",
                                      "--scale", 2, &err), 0, "%s", err.msg);
  cr_assert_eq(cluster_resolve(&d, cat, &c, &err), 0, "%s", err.msg);
  cr_assert_eq(c.gpu.peak_flops[DTYPE_BF16], 624e12);
  cr_assert_eq(c.nic.bw_Bps, 100e9);
  cr_assert_eq(c.gpu.nvlink_bw_Bps, 450e9);
  cr_assert_eq(c.gpu.hbm_bw_Bps, 2.039e12);
  cr_assert_eq(c.scale.compute, 2.0);
}

Test(cluster, file_with_inline_future_hardware)
{
  char path[] = "/tmp/weft-cluster-XXXXXX";
  int fd = mkstemp(path);
  FILE *f = fdopen(fd, "w");
  fprintf(f, "<?xml version=\"1.0\"?>\n"
             "<!-- a what-if: Hopper with twice the NVLink, XDR NICs -->\n"
             "<cluster name=\"future\" preset=\"dgx-h100\" nodes=\"64\"\n"
             "         nodes_per_leaf=\"16\" oversubscription=\"1.5\">\n"
             "  <future name=\"H100-NVL2x\" base=\"H100-SXM\" nvlink=\"2\"/>\n"
             "  <node name=\"Box\" gpu=\"H100-NVL2x\" gpus=\"8\" nic=\"XDR\""
             " nics=\"8\" nvlink_lat=\"0.5us\" nvls=\"yes\"/>\n"
             "</cluster>\n");
  fclose(f);
  struct cluster_desc d;
  struct cluster c;
  struct weft_err err = {0};
  cluster_desc_init(&d);
  cr_assert_eq(cluster_desc_load(&d, cat, path, &err), 0, "%s", err.msg);
  /* The file does not set node=, so the preset's DGX-H100 stays. */
  cr_assert_eq(cluster_resolve(&d, cat, &c, &err), 0, "%s", err.msg);
  cr_assert_str_eq(c.name, "future");
  cr_assert_eq(c.gpus, 512);
  cr_assert_eq(c.leaves, 4);
  cr_assert_eq(c.oversub, 1.5);
  cr_assert_str_eq(c.node_type, "DGX-H100");
  cr_assert_eq(cluster_desc_set(&d, CK_NODE, "Box", "--node", 2, &err), 0);
  cr_assert_eq(cluster_resolve(&d, cat, &c, &err), 0, "%s", err.msg);
  cr_assert_eq(c.gpu.nvlink_bw_Bps, 900e9);
  cr_assert_eq(c.nic.bw_Bps, 100e9);
  cr_assert_eq(c.nvlink_lat_s, 0.5e-6);
  unlink(path);
}

Test(cluster, key_names)
{
  cr_assert_eq(cluster_key_from_name("gpus-per-node"), CK_GPUS_PER_NODE);
  cr_assert_eq(cluster_key_from_name("gpus_per_node"), CK_GPUS_PER_NODE);
  cr_assert_eq(cluster_key_from_name("bogus"), -1);
  cr_assert_str_eq(cluster_key_name(CK_OVERSUB), "oversubscription");
}
