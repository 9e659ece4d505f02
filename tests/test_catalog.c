/*
 * test_catalog.c - the built-in catalog carries the vendor figures of the
 * SPEC rows of shared/validation/calibration.csv, and user files extend it.
 */
#include <criterion/criterion.h>
#include <math.h>
#include <string.h>

#include "platforms/catalog.h"

static struct catalog *cat;

static void setup(void)
{
  struct weft_err err = {0};
  cat = catalog_builtin(&err);
  cr_assert(cat, "%s", err.msg);
}

static void teardown(void) { catalog_free(cat); }

#define REL(a, b) cr_assert(fabs((double)(a) - (double)(b)) <= 1e-12 * fabs((double)(b)), "%.17g != %.17g", (double)(a), (double)(b))

TestSuite(catalog, .init = setup, .fini = teardown);

Test(catalog, has_every_required_entry)
{
  const char *gpus[] = {"A100-40GB", "A100-80GB", "H100-SXM", "H200", "B200",
                        "GB200"};
  for (size_t i = 0; i < 6; i++)
    cr_assert(catalog_gpu(cat, gpus[i]), "missing GPU %s", gpus[i]);
  const char *nics[] = {"HDR", "NDR", "XDR"};
  for (size_t i = 0; i < 3; i++)
    cr_assert(catalog_nic(cat, nics[i]), "missing NIC %s", nics[i]);
  const char *nodes[] = {"DGX-A100", "DGX-H100", "DGX-H200", "DGX-B200",
                         "GB200-NVL72"};
  for (size_t i = 0; i < 5; i++)
    cr_assert(catalog_node(cat, nodes[i]), "missing node %s", nodes[i]);
  cr_assert(catalog_gpu(cat, "h100-sxm"), "lookups are case-insensitive");
  cr_assert_null(catalog_gpu(cat, "H300"));
}

/* SPEC-A100-BF16 312, SPEC-A100-HBM-BW 2.039 TB/s, SPEC-A100-NVLINK 600 GB/s
 * bidirectional, SPEC-A100-TDP 400 W. */
Test(catalog, a100_matches_spec_rows)
{
  const struct gpu_spec *g = catalog_gpu(cat, "A100-80GB");
  REL(g->peak_flops[DTYPE_BF16], 312e12);
  REL(g->peak_flops[DTYPE_FP16], 312e12);
  REL(g->peak_flops[DTYPE_TF32], 156e12);
  cr_assert_eq(g->peak_flops[DTYPE_FP8], 0.0, "A100 has no FP8");
  /* SPEC-A100-HBM-CAP's "80 GB" is the GiB-sized stacks nvidia-smi
   * reports as 81920 MiB (catalog.xml) */
  REL(g->hbm_bytes, 81920.0 * 1048576);
  REL(g->hbm_bw_Bps, 2.039e12);
  REL(2 * g->nvlink_bw_Bps, 600e9);
  REL(g->max_w, 400);
  REL(catalog_gpu(cat, "A100-40GB")->hbm_bw_Bps, 1.555e12);
}

Test(catalog, hopper_and_blackwell_match_spec_rows)
{
  const struct gpu_spec *h = catalog_gpu(cat, "H100-SXM");
  REL(h->peak_flops[DTYPE_BF16], 989.4e12);
  REL(h->peak_flops[DTYPE_FP8], 1978.9e12);
  REL(h->hbm_bw_Bps, 3.35e12);
  REL(2 * h->nvlink_bw_Bps, 900e9);
  REL(h->max_w, 700);
  /* memory-bound kernels' power measured on H100 only (analysis/kernels);
   * communication's not given anywhere (idle power) */
  REL(h->mem_w, 516);
  cr_assert_eq(h->comm_w, 0);
  cr_assert_eq(catalog_gpu(cat, "A100-80GB")->mem_w, 0);
  cr_assert_eq(catalog_gpu(cat, "H200")->mem_w, 0);
  const struct gpu_spec *h2 = catalog_gpu(cat, "H200");
  REL(h2->hbm_bytes, 141e9);
  REL(h2->hbm_bw_Bps, 4.8e12);
  const struct gpu_spec *b = catalog_gpu(cat, "B200");
  REL(b->peak_flops[DTYPE_BF16], 2250e12);
  REL(b->peak_flops[DTYPE_FP8], 4500e12);
  REL(b->hbm_bytes, 180e9);
  REL(b->hbm_bw_Bps, 8e12);
  REL(2 * b->nvlink_bw_Bps, 1800e9);
  REL(b->max_w, 1000);
  const struct gpu_spec *gb = catalog_gpu(cat, "GB200");
  REL(gb->peak_flops[DTYPE_BF16], 2500e12);
  REL(gb->peak_flops[DTYPE_FP8], 5000e12);
}

Test(catalog, nics_and_nodes)
{
  REL(catalog_nic(cat, "HDR")->bw_Bps, 25e9);
  REL(catalog_nic(cat, "NDR")->bw_Bps, 50e9);
  REL(catalog_nic(cat, "XDR")->bw_Bps, 100e9);
  const struct node_spec *a = catalog_node(cat, "DGX-A100");
  cr_assert_eq(a->gpus, 8);
  cr_assert_eq(a->nics, 8);
  cr_assert_str_eq(a->nic, "HDR");
  cr_assert_not(a->nvls);
  REL(a->coll_lat_s, 203.9e-6); /* collective calibration (calibrate_coll.py) */
  REL(a->coll_nic_eff, 0.9623);
  REL(catalog_node(cat, "DGX-B200")->coll_ring_loss, 0.0342);
  REL(catalog_node(cat, "DGX-H100")->coll_lat_s, 46.8e-6);
  /* One-node rings: the floor where measured (none on A100: the additive
   * model) and NCCL's LL cap per GPU generation. */
  REL(catalog_node(cat, "DGX-H100")->coll_floor_s, 34.98e-6);
  REL(catalog_node(cat, "GB200-NVL72")->coll_floor_s, 34.98e-6);
  cr_assert_eq(a->coll_floor_s, 0);
  REL(a->coll_ll_bw_Bps, 87.7e9);
  REL(catalog_node(cat, "DGX-H100")->coll_ll_bw_Bps, 141e9);
  REL(catalog_node(cat, "DGX-B200")->coll_ll_bw_Bps, 282e9);
  const struct node_spec *nvl = catalog_node(cat, "GB200-NVL72");
  cr_assert_eq(nvl->gpus, 72);
  cr_assert(nvl->nvls);
  cr_assert(catalog_node(cat, "DGX-H100")->nvls);
}

Test(catalog, every_entry_names_its_source)
{
  for (int i = 0; i < cat->n_gpus; i++)
    cr_assert(strlen(cat->gpus[i].source) > 10, "%s", cat->gpus[i].name);
  for (int i = 0; i < cat->n_nics; i++)
    cr_assert(strlen(cat->nics[i].source) > 10, "%s", cat->nics[i].name);
  for (int i = 0; i < cat->n_nodes; i++)
    cr_assert(strlen(cat->nodes[i].source) > 10, "%s", cat->nodes[i].name);
}

Test(catalog, future_gpu_by_named_factors)
{
  const char xml[] =
      "<catalog>\n"
      "  <future name=\"H100x2\" base=\"H100-SXM\" compute=\"2\" hbm_bw=\"1.5\""
      " hbm_cap=\"2\" nvlink=\"4\"/>\n"
      "</catalog>\n";
  struct weft_err err = {0};
  cr_assert_eq(catalog_load_mem(cat, xml, sizeof xml - 1, "f.xml", &err), 0,
               "%s", err.msg);
  const struct gpu_spec *f = catalog_gpu(cat, "H100x2");
  cr_assert(f);
  REL(f->peak_flops[DTYPE_BF16], 2 * 989.4e12);
  REL(f->peak_flops[DTYPE_FP8], 2 * 1978.9e12);
  REL(f->hbm_bw_Bps, 1.5 * 3.35e12);
  REL(f->hbm_bytes, 2 * 81559.0 * 1048576);
  REL(f->nvlink_bw_Bps, 1800e9);
  REL(f->max_w, 700);
  cr_assert(strstr(f->source, "H100-SXM scaled"), "%s", f->source);
}

Test(catalog, user_file_overrides_and_adds)
{
  const char xml[] =
      "<catalog>\n"
      "  <nic name=\"HDR\" bw=\"100Gbps\" lat=\"2us\"/>\n"
      "  <gpu name=\"X1\" fp32=\"1Tf\" tf32=\"0f\" bf16=\"2Tf\" fp16=\"2Tf\""
      " fp8=\"0f\" hbm=\"16GiB\" hbm_bw=\"1TBps\" nvlink_bw=\"100GBps\""
      " idle_power=\"0W\" max_power=\"300W\"/>\n"
      "  <node name=\"X1-box\" gpu=\"X1\" gpus=\"4\" nic=\"HDR\" nics=\"2\""
      " nvlink_lat=\"2us\"/>\n"
      "</catalog>\n";
  int n_nics = cat->n_nics;
  struct weft_err err = {0};
  cr_assert_eq(catalog_load_mem(cat, xml, sizeof xml - 1, "u.xml", &err), 0,
               "%s", err.msg);
  cr_assert_eq(cat->n_nics, n_nics, "same name replaces, not appends");
  REL(catalog_nic(cat, "HDR")->bw_Bps, 12.5e9);
  REL(catalog_gpu(cat, "X1")->hbm_bytes, 16.0 * 1073741824.0);
  cr_assert_eq(catalog_node(cat, "X1-box")->nics, 2);
}

Test(catalog, scale_in_place)
{
  struct gpu_spec g = *catalog_gpu(cat, "A100-80GB");
  struct hw_scale s = hw_scale_none;
  s.compute = 3;
  s.hbm_cap = 0.5;
  gpu_spec_scale(&g, &s);
  REL(g.peak_flops[DTYPE_BF16], 936e12);
  REL(g.hbm_bytes, 0.5 * 81920.0 * 1048576);
  REL(g.hbm_bw_Bps, 2.039e12);
}

Test(catalog, dtype_names)
{
  enum dtype t;
  cr_assert(dtype_from_name("BF16", &t));
  cr_assert_eq(t, DTYPE_BF16);
  cr_assert_not(dtype_from_name("int4", &t));
  cr_assert_str_eq(dtype_name(DTYPE_FP8), "fp8");
}
