/*
 * test_cluster.c - presets, files and flags resolve to the cluster they
 * describe; later layers override earlier ones.
 */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
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

/* year= multiplies each quantity by its trend rate to the power of the
 * years since the part's catalog year; generations= by generation_years
 * per generation; the NIC counts from its own year. */
Test(cluster, projection_by_trend)
{
  const struct trend *t = catalog_trend(cat, "datasheets");
  cr_assert(t);
  struct cluster c = resolve_preset("dgx-h100", "year", "2026");
  double y = 2026 - 2022;
  cr_assert_float_eq(c.gpu.peak_flops[DTYPE_BF16],
                     989.4e12 * pow(t->per_year[GQ_BF16], y), 1e3);
  cr_assert_float_eq(c.gpu.hbm_bw_Bps, 3.35e12 * pow(t->per_year[GQ_HBM_BW], y),
                     1);
  cr_assert_float_eq(c.gpu.hbm_bytes,
                     81559.0 * 1048576 * pow(t->per_year[GQ_HBM_CAP], y), 1);
  cr_assert_float_eq(c.gpu.max_w, 700 * pow(t->per_year[GQ_POWER], y), 1e-9);
  cr_assert_float_eq(c.nic.bw_Bps, 50e9 * pow(t->per_year[GQ_NIC], y), 1);
  cr_assert_str_eq(c.trend, "datasheets");
  struct cluster g = resolve_preset("dgx-h100", "generations", "2");
  cr_assert_float_eq(g.proj_gpu_years, 2 * t->generation_years, 1e-12);
  cr_assert_float_eq(g.gpu.nvlink_bw_Bps,
                     450e9 * pow(t->per_year[GQ_NVLINK], 2 * 2.33), 1);
  /* per_generation rates are converted: memory-wall's 3.0x per 2 years */
  const struct trend *m = catalog_trend(cat, "memory-wall");
  cr_assert(m);
  cr_assert_float_eq(pow(m->per_year[GQ_FP8], 2), 3.0, 1e-12);
}

static void bad_setting(const char *k1, const char *v1, const char *k2,
                        const char *v2, const char *want)
{
  struct cluster_desc d;
  struct cluster c;
  struct weft_err err = {0};
  cluster_desc_init(&d);
  cr_assert_eq(cluster_desc_preset(&d, "dgx-h100", &err), 0);
  char o1[32], o2[32];
  snprintf(o1, sizeof o1, "--%s", k1);
  cr_assert_eq(cluster_desc_set(&d, cluster_key_from_name(k1), v1, o1, 2,
                                &err), 0, "%s", err.msg);
  if (k2) {
    snprintf(o2, sizeof o2, "--%s", k2);
    cr_assert_eq(cluster_desc_set(&d, cluster_key_from_name(k2), v2, o2, 2,
                                  &err), 0, "%s", err.msg);
  }
  cr_assert_neq(cluster_resolve(&d, cat, &c, &err), 0);
  cr_assert_str_eq(err.msg, want);
}

Test(cluster, projection_and_power_refusals)
{
  bad_setting("year", "2021", NULL, NULL,
              "--year: 2021 is before the GPU H100-SXM's year 2022; a "
              "projection goes forward");
  bad_setting("year", "2026", "generations", "1",
              "--year and --generations both project the hardware; give one");
  bad_setting("trend", "datasheets", NULL, NULL,
              "--trend: a trend needs year or generations to project");
  bad_setting("year", "2026", "trend", "moore",
              "--trend: unknown trend 'moore' (see weft list trends)");
  bad_setting("power_cap", "60W", NULL, NULL,
              "--power_cap: 60 W is not above the H100-SXM's idle power of "
              "70 W");
  bad_setting("power_cap", "500W", "clock", "0.9",
              "--power_cap and --clock both set the clock; give one");
}

/* A cluster from dgx-h100 with the settings given as name/value pairs. */
static struct cluster resolve_kv(const char *const *kv)
{
  struct cluster_desc d;
  struct cluster c;
  struct weft_err err = {0};
  cluster_desc_init(&d);
  cr_assert_eq(cluster_desc_preset(&d, "dgx-h100", &err), 0, "%s", err.msg);
  for (int i = 0; kv[i]; i += 2)
    cr_assert_eq(cluster_desc_set(&d, cluster_key_from_name(kv[i]), kv[i + 1],
                                  kv[i], 2, &err), 0, "%s", err.msg);
  cr_assert_eq(cluster_resolve(&d, cat, &c, &err), 0, "%s", err.msg);
  return c;
}

/* Placement: packed is the identity; spread is a permutation of the nodes
 * that deals consecutive job nodes to consecutive blocks (pods, else
 * leaves, a dragonfly's groups), also when the last block is partial. */
Test(cluster, placement)
{
#define PL(...) ((const char *const[]){__VA_ARGS__, NULL})
  struct cluster c = resolve_kv(PL("gpus", "512", "nodes_per_leaf", "8",
                                   "leaves_per_pod", "2"));
  for (int i = 0; i < c.nodes; i++)
    cr_assert_eq(cluster_place(&c, i), i);
  const char *const *cases[] = {
      PL("gpus", "512", "nodes_per_leaf", "8", "leaves_per_pod", "2",
         "placement", "spread"),               /* 4 pods of 16 nodes */
      PL("gpus", "480", "nodes_per_leaf", "8", "leaves_per_pod", "2",
         "placement", "spread"),               /* the last pod 12 nodes */
      PL("gpus", "64", "nodes_per_leaf", "2", "placement", "spread"),
      PL("gpus", "72", "nodes_per_leaf", "2", "placement", "spread"),
      PL("gpus", "2048", "topology", "dragonfly", "routers_per_group", "4",
         "placement", "spread"),
  };
  int units[] = {4, 4, 4, 2, 0};
  for (size_t k = 0; k < sizeof cases / sizeof *cases; k++) {
    c = resolve_kv(cases[k]);
    if (units[k])
      cr_assert_eq(c.spread_units, units[k], "case %zu", k);
    char seen[4096] = {0};
    for (int i = 0; i < c.nodes; i++) {
      int n = cluster_place(&c, i);
      cr_assert(n >= 0 && n < c.nodes && !seen[n], "case %zu: node %d", k, i);
      seen[n] = 1;
      if (i + 1 < c.nodes && i + 1 < c.nodes - c.spread_size)
        cr_assert_neq(n / c.spread_size,
                      cluster_place(&c, i + 1) / c.spread_size,
                      "case %zu: job nodes %d and %d in one block", k, i,
                      i + 1);
    }
    cr_assert_eq(cluster_place_gpu(&c, 8 * 1 + 3),
                 cluster_place(&c, 1) * 8 + 3);
  }
  /* 4 pods of 16: job node 5 is the second node of pod 1. */
  c = resolve_kv(cases[0]);
  cr_assert_eq(cluster_place(&c, 5), 16 + 1);
  c = resolve_kv(cases[4]);
  cr_assert_eq(c.spread_size, 4 * c.nodes_per_leaf);
}

/* A random placement is a permutation of the nodes, fixed by its seed
 * (the same on every machine: these values are part of the test) and
 * different for another seed; sizes that are not powers of two walk the
 * Feistel permutation's cycles back into range. */
Test(cluster, random_placement)
{
  int sizes[] = {9, 64, 100, 2048};
  for (size_t k = 0; k < sizeof sizes / sizeof *sizes; k++) {
    char gpus[16];
    snprintf(gpus, sizeof gpus, "%d", 8 * sizes[k]);
    struct cluster a = resolve_kv(PL("gpus", gpus, "placement", "random:5"));
    struct cluster b = resolve_kv(PL("gpus", gpus, "placement", "random:6"));
    char seen[2048] = {0};
    int moved = 0, differ = 0;
    for (int i = 0; i < a.nodes; i++) {
      int n = cluster_place(&a, i);
      cr_assert(n >= 0 && n < a.nodes && !seen[n], "node %d of %d", i,
                a.nodes);
      seen[n] = 1;
      moved += n != i;
      differ += n != cluster_place(&b, i);
    }
    cr_assert_gt(moved, a.nodes / 2, "%d of %d moved", moved, a.nodes);
    cr_assert_gt(differ, a.nodes / 2);
  }
  struct cluster c = resolve_kv(PL("gpus", "72", "placement", "random"));
  cr_assert_eq(c.random_seed, 1);
  int want[9];
  for (int i = 0; i < 9; i++)
    want[i] = cluster_place(&c, i);
  struct cluster again = resolve_kv(PL("gpus", "72", "placement", "random:1"));
  for (int i = 0; i < 9; i++)
    cr_assert_eq(cluster_place(&again, i), want[i]);
}

Test(cluster, placement_refusals)
{
  bad_setting("placement", "random:0", NULL, NULL,
              "--placement: 'random:0': the seed of a random placement is "
              "an integer from 1 to 4294967295");
  bad_setting("placement", "random:12x", NULL, NULL,
              "--placement: 'random:12x': the seed of a random placement is "
              "an integer from 1 to 4294967295");
  bad_setting("placement", "scatter", NULL, NULL,
              "--placement: unknown placement 'scatter'; expected packed, "
              "spread or random[:SEED]");
  struct cluster_desc d;
  struct cluster c;
  struct weft_err err = {0};
  cluster_desc_init(&d);
  cr_assert_eq(cluster_desc_preset(&d, "dgx-h100", &err), 0);
  const char *kv[] = {"topology", "torus", "torus", "2x2", "placement",
                      "spread"};
  for (int i = 0; i < 6; i += 2)
    cr_assert_eq(cluster_desc_set(&d, cluster_key_from_name(kv[i]), kv[i + 1],
                                  "w.xml:2: <cluster>", 1, &err), 0);
  cr_assert_neq(cluster_resolve(&d, cat, &c, &err), 0);
  cr_assert_str_eq(err.msg, "w.xml:2: <cluster>: a torus has no pods or "
                   "groups to spread over (placement spread is for fat "
                   "trees, rail fabrics and dragonflies)");
}

/* A cluster of NVL72 racks with `kv` flags set over the preset. */
static struct cluster resolve_nvl(const char *preset, const char *const *kv)
{
  struct cluster_desc d;
  struct cluster c;
  struct weft_err err = {0};
  cluster_desc_init(&d);
  cr_assert_eq(cluster_desc_preset(&d, preset, &err), 0, "%s", err.msg);
  for (int i = 0; kv[i]; i += 2)
    cr_assert_eq(cluster_desc_set(&d, cluster_key_from_name(kv[i]), kv[i + 1],
                                  kv[i], 2, &err), 0, "%s", err.msg);
  cr_assert_eq(cluster_resolve(&d, cat, &c, &err), 0, "%s", err.msg);
  return c;
}

/* NVL72 racks are taken by whole trays of 4 GPUs, the same number in each
 * rack: 64 GPUs are 16 trays of one rack (one NVLink domain, 64 NICs, 8
 * GPUs idle); 144 two whole racks; 128 two racks of 64; 1024 (256 trays:
 * 15 racks would need 17.07 trays each) 16 racks of 64; --nodes 4 with 128
 * GPUs four racks of 8 trays. */
Test(cluster, nvl72_takes_whole_trays)
{
  static const struct {
    const char *gpus, *nodes;
    int want_nodes, want_per_node;
  } cases[] = {{"4", NULL, 1, 4},        {"64", NULL, 1, 64},
               {"72", NULL, 1, 72},      {"128", NULL, 2, 64},
               {"144", NULL, 2, 72},     {"1024", NULL, 16, 64},
               {"16384", NULL, 256, 64}, {"128", "4", 4, 32}};
  for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
    const char *kv[] = {"gpus", cases[i].gpus, cases[i].nodes ? "nodes" : NULL,
                        cases[i].nodes, NULL};
    struct cluster c = resolve_nvl("gb200-nvl72", kv);
    cr_assert_eq(c.nodes, cases[i].want_nodes, "%s GPUs", cases[i].gpus);
    cr_assert_eq(c.gpus_per_node, cases[i].want_per_node, "%s GPUs",
                 cases[i].gpus);
    cr_assert_eq(c.gpus, atoi(cases[i].gpus));
    cr_assert_eq(c.nics_per_node, c.gpus_per_node); /* one NIC per GPU */
    cr_assert_eq(c.nvl_rack, c.gpus_per_node);      /* the rack: one tier */
    cr_assert_eq(c.tray, 4);
    cr_assert_eq(c.rack_gpus, 72);
  }
  /* GPUs per node set by the user: no trays, as before. */
  const char *kv[] = {"gpus", "128", "gpus_per_node", "64", NULL};
  struct cluster c = resolve_nvl("gb200-nvl72", kv);
  cr_assert_eq(c.tray, 0);
  cr_assert_eq(c.rack_gpus, 64);
  /* Other node types have no trays. */
  c = resolve_preset("dgx-h100", NULL, NULL);
  cr_assert_eq(c.tray, 0);
  cr_assert_eq(c.rack_gpus, c.gpus_per_node);
}

/* Trays that split evenly over no count of racks (half a rack or more
 * each) take whole racks and the rest of a last one: 100 GPUs (25 trays,
 * neither 2 nor more racks alike) are 72 + 28, ranks 72-99 the last
 * rack's first 28 GPUs; 148 (37 trays) 72 + 72 + 4; 96 still 2 x 48, 72
 * and 144 whole racks, unchanged. */
Test(cluster, nvl72_uneven_last_rack)
{
  static const struct {
    const char *gpus;
    int nodes, per_node, last;
  } cases[] = {{"100", 2, 72, 28}, {"148", 3, 72, 4}, {"96", 2, 48, 0},
               {"72", 1, 72, 0},   {"144", 2, 72, 0}};
  for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
    const char *kv[] = {"gpus", cases[i].gpus, NULL};
    struct cluster c = resolve_nvl("gb200-nvl72", kv);
    cr_assert_eq(c.gpus, atoi(cases[i].gpus));
    cr_assert_eq(c.nodes, cases[i].nodes, "%s", cases[i].gpus);
    cr_assert_eq(c.gpus_per_node, cases[i].per_node, "%s", cases[i].gpus);
    cr_assert_eq(c.last_node_gpus, cases[i].last, "%s", cases[i].gpus);
    cr_assert_eq(c.nics_per_node, c.gpus_per_node);
    cr_assert_eq(c.rack_gpus, 72);
  }
  const char *kv[] = {"gpus", "100", NULL};
  struct cluster c = resolve_nvl("gb200-nvl72", kv);
  cr_assert_eq(cluster_node_of(&c, 71), 0);
  cr_assert_eq(cluster_node_of(&c, 72), 1);
  cr_assert_eq(cluster_node_of(&c, 99), 1);
  cr_assert_eq(cluster_place_gpu(&c, 99), 99);
  /* the ranks of the last rack must be its first GPUs: packed only */
  struct cluster_desc d;
  struct weft_err err = {0};
  cluster_desc_init(&d);
  cr_assert_eq(cluster_desc_preset(&d, "gb200-nvl72", &err), 0);
  cr_assert_eq(cluster_desc_set(&d, CK_GPUS, "100", "--gpus", 2, &err), 0);
  cr_assert_eq(cluster_desc_set(&d, CK_PLACEMENT, "random:3", "--placement",
                                2, &err), 0);
  cr_assert_neq(cluster_resolve(&d, cat, &c, &err), 0);
  cr_assert_str_eq(err.msg, "--placement: placement random:3 with an uneven "
                   "last rack (28 GPUs of 72) is not modelled; use packed");
  /* --nodes asks for racks alike: refused as before */
  cluster_desc_init(&d);
  cr_assert_eq(cluster_desc_preset(&d, "gb200-nvl72", &err), 0);
  cr_assert_eq(cluster_desc_set(&d, CK_GPUS, "100", "--gpus", 2, &err), 0);
  cr_assert_eq(cluster_desc_set(&d, CK_NODES, "2", "--nodes", 2, &err), 0);
  cr_assert_neq(cluster_resolve(&d, cat, &c, &err), 0);
  cr_assert_str_eq(err.msg, "--gpus: 100 GPUs (25 trays of 4) do not split "
                   "evenly over --nodes (2 racks of 18 trays)");
}

/* GB300 NVL72 from NVIDIA's datasheet: the rack's dense figures over 72
 * GPUs (BF16 180 PF, FP8 360 PF, 576 TB/s), 279 GB each, 900 GB/s NVLink
 * per direction (130 TB/s both ways over 72), one ConnectX-8 at 800 Gb/s
 * per GPU, 1.4 kW. */
Test(cluster, gb300_nvl72_is_the_datasheet)
{
  const char *kv[] = {"gpus", "64", NULL};
  struct cluster c = resolve_nvl("gb300-nvl72", kv);
  cr_assert_str_eq(c.node_type, "GB300-NVL72");
  cr_assert_str_eq(c.gpu.name, "GB300");
  cr_assert_eq(c.gpu.peak_flops[DTYPE_BF16], 2500e12);
  cr_assert_eq(c.gpu.peak_flops[DTYPE_FP8], 5000e12);
  cr_assert_eq(c.gpu.hbm_bytes, 279e9);
  cr_assert_eq(c.gpu.hbm_bw_Bps, 8000e9);
  cr_assert_eq(c.gpu.nvlink_bw_Bps, 900e9);
  cr_assert_eq(c.gpu.max_w, 1400);
  cr_assert_eq(c.nic.bw_Bps, 100e9);
  cr_assert_eq(c.nodes, 1);
  cr_assert_eq(c.gpus_per_node, 64);
  cr_assert_eq(c.rack_gpus, 72);
}

/* A node type's tray must divide its GPUs and hold whole NICs. */
Test(cluster, tray_must_divide_the_node)
{
  char path[] = "/tmp/weft-cluster-XXXXXX";
  int fd = mkstemp(path);
  FILE *f = fdopen(fd, "w");
  fprintf(f, "<cluster name=\"odd\" preset=\"gb200-nvl72\">\n"
             "  <node name=\"Rack5\" gpu=\"GB200\" gpus=\"72\" nic=\"NDR\""
             " nics=\"72\" nvlink_lat=\"1us\" tray=\"5\"/>\n"
             "</cluster>\n");
  fclose(f);
  struct cluster_desc d;
  struct weft_err err = {0};
  cluster_desc_init(&d);
  cr_assert_neq(cluster_desc_load(&d, cat, path, &err), 0);
  cr_assert(strstr(err.msg, "trays of 5 GPUs do not divide the node's 72 "
                            "GPUs and its 72 NICs"), "%s", err.msg);
  unlink(path);
}
