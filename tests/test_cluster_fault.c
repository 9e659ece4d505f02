/*
 * test_cluster_fault.c - bad clusters (files and flags) are rejected with
 * one message naming the file line or the flag.
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "platforms/cluster.h"

static struct catalog *cat;

static void setup(void)
{
  cat = catalog_builtin(NULL);
  cr_assert(cat);
}

static void teardown(void) { catalog_free(cat); }

TestSuite(cluster_fault, .init = setup, .fini = teardown);

/* Apply preset then one flag; expect the set or the resolve to fail. */
static void bad_flag(const char *preset, const char *flag, const char *value,
                     int code, const char *msg)
{
  struct cluster_desc d;
  struct cluster c;
  struct weft_err err = {0};
  cluster_desc_init(&d);
  cr_assert_eq(cluster_desc_preset(&d, preset, &err), 0, "%s", err.msg);
  char origin[64];
  snprintf(origin, sizeof origin, "--%s", flag);
  int rc = cluster_desc_set(&d, cluster_key_from_name(flag), value, origin, 2,
                            &err);
  if (!rc)
    rc = cluster_resolve(&d, cat, &c, &err);
  cr_assert_eq(rc, code, "%s", err.msg);
  cr_assert_str_eq(err.msg, msg);
}

Test(cluster_fault, unknown_preset)
{
  struct cluster_desc d;
  struct weft_err err = {0};
  cluster_desc_init(&d);
  cr_assert_eq(cluster_desc_preset(&d, "dgx-z900", &err), WEFT_ENOTFOUND);
  cr_assert_str_eq(err.msg, "unknown cluster 'dgx-z900'; known clusters: "
                   "selene, dgx-a100, dgx-h100, dgx-h200, dgx-b200, "
                   "gb200-nvl72, gb300-nvl72, perlmutter, h100-oversub");
}

Test(cluster_fault, gpus_do_not_divide_into_nodes)
{
  bad_flag("dgx-h100", "gpus", "12", WEFT_EINVAL,
           "--gpus: 12 GPUs do not divide into nodes of 8 GPUs");
  /* NVL72 racks are taken by whole trays of 4: 66 is not whole trays (100,
   * 25 trays, is a rack and 7 trays of another: test_cluster.c). */
  bad_flag("gb200-nvl72", "gpus", "66", WEFT_EINVAL,
           "--gpus: 66 GPUs are not whole compute trays of GB200-NVL72 (4 "
           "GPUs per tray, 72 per rack)");
}

Test(cluster_fault, zero_negative_nan_huge)
{
  bad_flag("dgx-h100", "gpus", "0", WEFT_EINVAL,
           "--gpus: '0' is below the minimum of 1");
  bad_flag("dgx-h100", "nodes", "-4", WEFT_EINVAL,
           "--nodes: '-4' is below the minimum of 1");
  bad_flag("dgx-h100", "nodes", "1000000", WEFT_ELIMIT,
           "--nodes: '1000000' exceeds the limit of 65536");
  bad_flag("dgx-h100", "gpus", "1e6", WEFT_EINVAL,
           "--gpus: '1e6' is not an integer");
  bad_flag("dgx-h100", "oversubscription", "nan", WEFT_EINVAL,
           "--oversubscription: 'nan' is not a number; expected a number "
           "such as 8");
  bad_flag("dgx-h100", "oversubscription", "0.5", WEFT_EINVAL,
           "--oversubscription: '0.5' is below the minimum of 1");
  bad_flag("dgx-h100", "switch-lat", "130", WEFT_EINVAL,
           "--switch-lat: '130' has no unit; expected a time such as 0.35us");
  bad_flag("dgx-h100", "nodes", "65536", WEFT_ELIMIT,
           "--nodes: 524288 GPUs exceed the limit of 131072");
}

Test(cluster_fault, unknown_hardware)
{
  bad_flag("dgx-h100", "gpu", "H900", WEFT_ENOTFOUND,
           "--gpu: unknown GPU 'H900' (see weft list gpus)");
  bad_flag("dgx-h100", "nic", "EDR", WEFT_ENOTFOUND,
           "--nic: unknown NIC 'EDR' (see weft list nics)");
  bad_flag("dgx-h100", "node", "DGX-1", WEFT_ENOTFOUND,
           "--node: unknown node type 'DGX-1' (see weft list nodes)");
}

Test(cluster_fault, nics_must_divide_gpus)
{
  bad_flag("dgx-h100", "nics-per-node", "3", WEFT_EINVAL,
           "--nics-per-node: 3 NICs per node do not divide 8 GPUs per node");
  bad_flag("dgx-h100", "nics-per-node", "16", WEFT_EINVAL,
           "--nics-per-node: 16 NICs per node do not divide 8 GPUs per node");
}

Test(cluster_fault, bad_scale_specs)
{
  struct cluster_desc d;
  struct weft_err err = {0};
  cluster_desc_init(&d);
  cr_assert_eq(cluster_desc_set_scale(&d, "compute=2,flux=3", "--scale", 2,
                                      &err), WEFT_EINVAL);
  cr_assert_str_eq(err.msg, "--scale: unknown factor 'flux'; expected "
                   "compute, hbm_bw, hbm_cap, nvlink or nic");
  cr_assert_eq(cluster_desc_set_scale(&d, "compute", "--scale", 2, &err),
               WEFT_EINVAL);
  cr_assert_str_eq(err.msg, "--scale: 'compute' is not NAME=FACTOR");
  cr_assert_eq(cluster_desc_set_scale(&d, "nic=-2", "--scale", 2, &err),
               WEFT_EINVAL);
  cr_assert_str_eq(err.msg, "--scale: '-2' is negative");
  cr_assert_eq(cluster_desc_set_scale(&d, "nic=1e9", "--scale", 2, &err),
               WEFT_ELIMIT);
  cr_assert_str_eq(err.msg, "--scale: '1e9' exceeds the limit of 1e+06");
}

static void bad_file(const char *body, int code, const char *msg_after_path)
{
  char path[] = "/tmp/weft-cl-XXXXXX";
  int fd = mkstemp(path);
  FILE *f = fdopen(fd, "w");
  fputs(body, f);
  fclose(f);
  struct cluster_desc d;
  struct cluster c;
  struct weft_err err = {0};
  cluster_desc_init(&d);
  int rc = cluster_desc_read_file(&d, cat, path, &err);
  if (!rc)
    rc = cluster_resolve(&d, cat, &c, &err);
  cr_assert_eq(rc, code, "%s", err.msg);
  /* "@" in the expected message stands for the file's path. */
  char want[512] = "";
  strcat(want, path);
  for (const char *p = msg_after_path; *p; p++) {
    size_t n = strlen(want);
    if (*p == '@')
      strcat(want, path);
    else
      want[n] = *p, want[n + 1] = '\0';
  }
  cr_assert_str_eq(err.msg, want);
  unlink(path);
}

Test(cluster_fault, files)
{
  bad_file("<cluster name=\"x\" node=\"DGX-H100\"\n gpus=\"20\"/>\n",
           WEFT_EINVAL, ":1: <cluster> attribute 'gpus': 20 GPUs do not "
           "divide into nodes of 8 GPUs");
  bad_file("<cluster name=\"x\" node=\"DGX-H100\" gpus=\"16\"\n nodes=\"3\"/>",
           WEFT_EINVAL, ":1: <cluster> attribute 'gpus': 16 GPUs contradict "
           "@:1: <cluster> attribute 'nodes' (3 nodes of 8 GPUs)");
  bad_file("<cluster name=\"x\"\n node=\"DGX-H100\" colour=\"red\"/>",
           WEFT_EINVAL, ":1: <cluster>: unknown attribute 'colour'");
  bad_file("<cluster name=\"x\" node=\"DGX-H100\" nodes=\"4\">\n"
           "  <router name=\"s\"/>\n</cluster>", WEFT_EINVAL,
           ":2: <router>: unknown element; expected gpu, nic, node, future, switch or trend");
  bad_file("<cluster name=\"x\" preset=\"nope\"/>", WEFT_ENOTFOUND,
           ":1: <cluster>: attribute 'preset': unknown cluster 'nope'; known "
           "clusters: selene, dgx-a100, dgx-h100, dgx-h200, dgx-b200, "
           "gb200-nvl72, gb300-nvl72, perlmutter, h100-oversub");
  bad_file("<cluster name=\"x\" nodes=\"4\"/>", WEFT_EINVAL,
           ":1: <cluster>: no node type; set node= or --node");
  bad_file("<platform/>", WEFT_EINVAL,
           ":1: <platform>: unknown root element; expected <cluster>");
  bad_file("<cluster name=\"x\" node=\"DGX-H100\"\n  nodes_per_leaf=\"0\"/>",
           WEFT_EINVAL, ":1: <cluster> attribute 'nodes_per_leaf': '0' is "
           "below the minimum of 1");
}
