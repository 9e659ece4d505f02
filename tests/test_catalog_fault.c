/*
 * test_catalog_fault.c - bad catalog files get one clear message naming the
 * file and line, and never crash.
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "platforms/catalog.h"

static void bad(const char *xml, int code, const char *msg)
{
  struct catalog *cat = catalog_new();
  struct weft_err err = {0};
  cr_assert_eq(catalog_load_mem(cat, xml, strlen(xml), "bad.xml", &err), code,
               "%s", err.msg);
  cr_assert_str_eq(err.msg, msg);
  catalog_free(cat);
}

#define GPU_OK " fp32=\"1Tf\" tf32=\"1Tf\" bf16=\"2Tf\" fp16=\"2Tf\" fp8=\"0f\" hbm=\"16GB\" hbm_bw=\"1TBps\" nvlink_bw=\"100GBps\" idle_power=\"10W\" max_power=\"300W\""

Test(catalog_fault, malformed_xml)
{
  bad("<catalog>\n<gpu name=\"x\"\n</catalog>\n", WEFT_EINVAL,
      "bad.xml:3: malformed XML: error parsing attribute name");
  bad("", WEFT_EINVAL, "bad.xml:1: malformed XML: Document is empty");
  bad("<catalog>\n\n<nic name='a' bw='1Gbps' lat='1us'>\n</catalog>",
      WEFT_EINVAL,
      "bad.xml:4: malformed XML: Opening and ending tag mismatch: nic line 3 "
      "and catalog");
}

Test(catalog_fault, wrong_root_and_unknown_elements)
{
  bad("<platform/>", WEFT_EINVAL,
      "bad.xml:1: <platform>: unknown root element; expected <catalog>");
  bad("<catalog>\n  <cpu name=\"x\"/>\n</catalog>", WEFT_EINVAL,
      "bad.xml:2: <cpu>: unknown element; expected gpu, nic, node, future, switch or trend");
  bad("<catalog version=\"2\"/>", WEFT_EINVAL,
      "bad.xml:1: <catalog>: unknown attribute 'version'");
}

Test(catalog_fault, unknown_and_missing_attributes)
{
  bad("<catalog>\n<nic name=\"a\" bw=\"1Gbps\" lat=\"1us\" speed=\"3\"/>\n"
      "</catalog>", WEFT_EINVAL, "bad.xml:2: <nic>: unknown attribute 'speed'");
  bad("<catalog>\n<nic name=\"a\" lat=\"1us\"/>\n</catalog>", WEFT_EINVAL,
      "bad.xml:2: <nic>: missing attribute 'bw'");
  bad("<catalog><nic name=\"\" bw=\"1Gbps\" lat=\"1us\"/></catalog>",
      WEFT_EINVAL, "bad.xml:1: <nic>: attribute 'name' is empty");
  bad("<catalog><nic name=\"a\" bw=\"1Gbps\" lat=\"1us\">fast</nic></catalog>",
      WEFT_EINVAL, "bad.xml:1: <nic>: unexpected text inside the element");
}

Test(catalog_fault, numbers_without_units_or_out_of_range)
{
  bad("<catalog>\n<nic name=\"a\" bw=\"400\" lat=\"1us\"/>\n</catalog>",
      WEFT_EINVAL,
      "bad.xml:2: <nic>: attribute 'bw': '400' has no unit; expected a "
      "bandwidth such as 450GBps");
  bad("<catalog>\n<nic name=\"a\" bw=\"-4Gbps\" lat=\"1us\"/>\n</catalog>",
      WEFT_EINVAL, "bad.xml:2: <nic>: attribute 'bw': '-4Gbps' is negative");
  bad("<catalog>\n<nic name=\"a\" bw=\"0Gbps\" lat=\"1us\"/>\n</catalog>",
      WEFT_EINVAL,
      "bad.xml:2: <nic>: attribute 'bw': '0Gbps' must be positive");
  bad("<catalog>\n<nic name=\"a\" bw=\"NaNGbps\" lat=\"1us\"/>\n</catalog>",
      WEFT_EINVAL,
      "bad.xml:2: <nic>: attribute 'bw': 'NaNGbps' is not a number; "
      "expected a bandwidth such as 450GBps");
  bad("<catalog>\n<nic name=\"a\" bw=\"5EBps\" lat=\"1us\"/>\n</catalog>",
      WEFT_ELIMIT,
      "bad.xml:2: <nic>: attribute 'bw': '5EBps' exceeds the limit of 1 PB/s");
  bad("<catalog>\n<nic name=\"a\" bw=\"5Gbps\" lat=\"2h\"/>\n</catalog>",
      WEFT_ELIMIT,
      "bad.xml:2: <nic>: attribute 'lat': '2h' exceeds the limit of 1 s");
  bad("<catalog>\n<nic name=\"n\" bw=\"5Gbps\" lat=\"1us\"/>\n"
      "<node name=\"x\" gpu=\"A100-80GB\" gpus=\"8\" nic=\"n\" nics=\"8\" "
      "nvlink_lat=\"1us\" coll_lat=\"50\"/>\n</catalog>",
      WEFT_EINVAL,
      "bad.xml:3: <node>: attribute 'coll_lat': '50' has no unit; expected "
      "a time such as 0.35us");
  bad("<catalog>\n<gpu name=\"g\"" GPU_OK " hbm=\"80\"/>\n</catalog>",
      WEFT_EINVAL,
      "bad.xml:2: malformed XML: Attribute hbm redefined");
}

Test(catalog_fault, gpu_values)
{
  bad("<catalog>\n<gpu name=\"g\" fp32=\"1Tf\" tf32=\"1Tf\" bf16=\"2Tf\" "
      "fp16=\"2Tf\" fp8=\"0f\" hbm=\"80\" hbm_bw=\"1TBps\" nvlink_bw=\"1GBps\" "
      "idle_power=\"1W\" max_power=\"2W\"/>\n</catalog>", WEFT_EINVAL,
      "bad.xml:2: <gpu>: attribute 'hbm': '80' has no unit; expected a size "
      "such as 80GiB");
  bad("<catalog>\n<gpu name=\"g\" fp32=\"1Tf\" tf32=\"1Tf\" bf16=\"2Tf\" "
      "fp16=\"2Tf\" fp8=\"0f\" hbm=\"8GB\" hbm_bw=\"1TBps\" nvlink_bw=\"1GBps\""
      " idle_power=\"500W\" max_power=\"300W\"/>\n</catalog>", WEFT_EINVAL,
      "bad.xml:2: <gpu>: GPU 'g': idle power exceeds maximum power");
}

/* A phase's power (mem_power, comm_power) lies between idle and maximum. */
Test(catalog_fault, gpu_phase_powers)
{
  bad("<catalog>\n<gpu name=\"g\"" GPU_OK " mem_power=\"5W\"/>\n</catalog>",
      WEFT_EINVAL, "bad.xml:2: <gpu>: GPU 'g': mem_power 5 W is not between "
      "idle_power 10 W and max_power 300 W");
  bad("<catalog>\n<gpu name=\"g\"" GPU_OK " comm_power=\"301W\"/>\n"
      "</catalog>", WEFT_EINVAL, "bad.xml:2: <gpu>: GPU 'g': comm_power 301 W "
      "is not between idle_power 10 W and max_power 300 W");
  bad("<catalog>\n<gpu name=\"g\"" GPU_OK " mem_power=\"200\"/>\n</catalog>",
      WEFT_EINVAL, "bad.xml:2: <gpu>: attribute 'mem_power': '200' has no "
      "unit; expected a power such as 700W");
}

Test(catalog_fault, nodes_reference_known_hardware)
{
  bad("<catalog>\n<nic name=\"n\" bw=\"1Gbps\" lat=\"1us\"/>\n"
      "<node name=\"b\" gpu=\"Z9\" gpus=\"8\" nic=\"n\" nics=\"8\" "
      "nvlink_lat=\"1us\"/>\n</catalog>", WEFT_ENOTFOUND,
      "bad.xml:3: <node>: unknown GPU 'Z9'");
  bad("<catalog>\n<gpu name=\"g\"" GPU_OK "/>\n"
      "<node name=\"b\" gpu=\"g\" gpus=\"8\" nic=\"n\" nics=\"8\" "
      "nvlink_lat=\"1us\"/>\n</catalog>", WEFT_ENOTFOUND,
      "bad.xml:3: <node>: unknown NIC 'n'");
  bad("<catalog>\n<gpu name=\"g\"" GPU_OK "/>\n"
      "<nic name=\"n\" bw=\"1Gbps\" lat=\"1us\"/>\n"
      "<node name=\"b\" gpu=\"g\" gpus=\"8\" nic=\"n\" nics=\"3\" "
      "nvlink_lat=\"1us\"/>\n</catalog>", WEFT_EINVAL,
      "bad.xml:4: <node>: 3 NICs do not divide 8 GPUs");
  bad("<catalog>\n<gpu name=\"g\"" GPU_OK "/>\n"
      "<nic name=\"n\" bw=\"1Gbps\" lat=\"1us\"/>\n"
      "<node name=\"b\" gpu=\"g\" gpus=\"1000000\" nic=\"n\" nics=\"8\" "
      "nvlink_lat=\"1us\"/>\n</catalog>", WEFT_ELIMIT,
      "bad.xml:4: <node>: attribute 'gpus': '1000000' exceeds the limit of "
      "576");
  bad("<catalog>\n<gpu name=\"g\"" GPU_OK "/>\n"
      "<nic name=\"n\" bw=\"1Gbps\" lat=\"1us\"/>\n"
      "<node name=\"b\" gpu=\"g\" gpus=\"8\" nic=\"n\" nics=\"8\" "
      "nvlink_lat=\"1us\" nvls=\"maybe\"/>\n</catalog>", WEFT_EINVAL,
      "bad.xml:4: <node>: attribute 'nvls': 'maybe' is not yes or no");
}

Test(catalog_fault, future_needs_known_base_and_sane_factors)
{
  bad("<catalog>\n<future name=\"f\" base=\"nope\" compute=\"2\"/>\n"
      "</catalog>", WEFT_ENOTFOUND, "bad.xml:2: <future>: unknown base GPU "
      "'nope'");
  bad("<catalog>\n<gpu name=\"g\"" GPU_OK "/>\n"
      "<future name=\"f\" base=\"g\" compute=\"0\"/>\n</catalog>", WEFT_EINVAL,
      "bad.xml:3: <future>: attribute 'compute': '0' is below the minimum of "
      "1e-06");
  bad("<catalog>\n<gpu name=\"g\"" GPU_OK "/>\n"
      "<future name=\"f\" base=\"g\" nvlink=\"2x\"/>\n</catalog>", WEFT_EINVAL,
      "bad.xml:3: <future>: attribute 'nvlink': '2x' is not a plain number");
}

Test(catalog_fault, no_entities_no_doctype_no_network)
{
  /* A billion-laughs document must be refused, not expanded. */
  bad("<?xml version=\"1.0\"?>\n<!DOCTYPE catalog [\n"
      "<!ENTITY a \"aaaaaaaaaa\">\n<!ENTITY b \"&a;&a;&a;&a;&a;&a;&a;&a;\">\n"
      "]>\n<catalog><nic name=\"&b;\" bw=\"1Gbps\" lat=\"1us\"/></catalog>\n",
      WEFT_EINVAL, "bad.xml:2: DOCTYPE declarations are not allowed");
  bad("<?xml version=\"1.0\"?>\n<!DOCTYPE catalog SYSTEM "
      "\"http://example.invalid/x.dtd\">\n<catalog/>\n", WEFT_EINVAL,
      "bad.xml:2: DOCTYPE declarations are not allowed");
}

Test(catalog_fault, too_many_entries)
{
  char *xml = malloc(1 << 20);
  size_t n = (size_t)sprintf(xml, "<catalog>\n");
  for (int i = 0; i <= WEFT_MAX_CATALOG_ENTRIES; i++)
    n += (size_t)sprintf(xml + n, "<nic name=\"n%d\" bw=\"1Gbps\" "
                         "lat=\"1us\"/>\n", i);
  sprintf(xml + n, "</catalog>\n");
  bad(xml, WEFT_ELIMIT, "bad.xml:258: <nic>: more than 256 NIC entries");
  free(xml);
}

Test(catalog_fault, missing_and_oversized_files)
{
  struct catalog *cat = catalog_new();
  struct weft_err err = {0};
  cr_assert_eq(catalog_load_file(cat, "/nonexistent/c.xml", &err), WEFT_EIO);
  cr_assert_str_eq(err.msg,
                   "/nonexistent/c.xml: cannot open: No such file or directory");
  cr_assert_eq(catalog_load_file(cat, "/tmp", &err), WEFT_EIO);
  cr_assert_str_eq(err.msg, "/tmp: is a directory");
  char path[] = "/tmp/weft-big-XXXXXX";
  int fd = mkstemp(path);
  cr_assert(fd >= 0);
  cr_assert_eq(ftruncate(fd, (16 << 20) + 1), 0);
  close(fd);
  cr_assert_eq(catalog_load_file(cat, path, &err), WEFT_ELIMIT);
  char want[128];
  snprintf(want, sizeof want, "%s: larger than the limit of 16777216 bytes",
           path);
  cr_assert_str_eq(err.msg, want);
  unlink(path);
  catalog_free(cat);
}

#define ATTN_DIRS " fwd_eff=\"0.6\" fwd_d64=\"0.9\" fwd_d256=\"1\" fwd_seq_half=\"100\" fwd_causal_seq=\"300\" bwd_eff=\"0.5\" bwd_d64=\"0.9\" bwd_d256=\"1\" bwd_seq_half=\"300\" bwd_causal_seq=\"300\""

Test(catalog_fault, attention_kernels)
{
  bad("<catalog>\n<gpu name=\"g\"" GPU_OK ">\n  <attn kernel=\"cudnn\"/>\n"
      "</gpu>\n</catalog>", WEFT_EINVAL,
      "bad.xml:3: <attn>: unknown element in <gpu>; expected attention");
  bad("<catalog>\n<gpu name=\"g\"" GPU_OK ">\n  <attention kernel=\"flash9\""
      ATTN_DIRS "/>\n</gpu>\n</catalog>", WEFT_EINVAL,
      "bad.xml:3: <attention>: unknown attention kernel 'flash9'; expected "
      "flash2, flash3 or cudnn");
  bad("<catalog>\n<gpu name=\"g\"" GPU_OK ">\n  <attention kernel=\"cudnn\""
      ATTN_DIRS "/>\n  <attention kernel=\"cudnn\"" ATTN_DIRS "/>\n</gpu>\n"
      "</catalog>", WEFT_EINVAL,
      "bad.xml:4: <attention>: attention kernel 'cudnn' given twice");
  bad("<catalog>\n<gpu name=\"g\"" GPU_OK ">\n  <attention kernel=\"cudnn\" "
      "fwd_eff=\"0.6\"/>\n</gpu>\n</catalog>", WEFT_EINVAL,
      "bad.xml:3: <attention>: missing attribute 'fwd_d64'");
  bad("<catalog>\n<gpu name=\"g\"" GPU_OK ">\n  <attention kernel=\"cudnn\""
      ATTN_DIRS " default=\"maybe\"/>\n</gpu>\n</catalog>", WEFT_EINVAL,
      "bad.xml:3: <attention>: default='maybe' is not yes or no");
  bad("<catalog>\n<gpu name=\"g\"" GPU_OK ">\n  <attention kernel=\"flash2\""
      ATTN_DIRS " default=\"yes\"/>\n  <attention kernel=\"cudnn\"" ATTN_DIRS
      " default=\"yes\"/>\n</gpu>\n</catalog>", WEFT_EINVAL,
      "bad.xml:4: <attention>: a second default attention kernel");
  /* A good one: the first given is the default without default="yes". */
  struct catalog *cat = catalog_new();
  const char *ok = "<catalog><gpu name=\"g\"" GPU_OK "><attention kernel="
                   "\"flash3\"" ATTN_DIRS "/><attention kernel=\"flash2\""
                   ATTN_DIRS "/></gpu></catalog>";
  cr_assert_eq(catalog_load_mem(cat, ok, strlen(ok), "ok.xml", NULL), 0);
  const struct gpu_spec *g = catalog_gpu(cat, "g");
  cr_assert_eq(g->attn_default, AK_FLASH3);
  cr_assert(g->attn[AK_FLASH2].have && !g->attn[AK_CUDNN].have);
  cr_assert_float_eq(g->attn[AK_FLASH2].bwd.seq_half, 300, 1e-12);
  catalog_free(cat);
}

#define RATE(q) "<rate quantity=\"" q "\" per_year=\"1.5\" source=\"s\"/>"
#define ALL_BUT_POWER RATE("fp32") RATE("tf32") RATE("bf16") RATE("fp16") \
  RATE("fp8") RATE("hbm_bw") RATE("hbm_cap") RATE("nvlink") RATE("nic")

Test(catalog_fault, trends_and_switches)
{
  bad("<catalog>\n<trend name=\"t\" generation_years=\"2\">" ALL_BUT_POWER
      "</trend></catalog>", WEFT_EINVAL,
      "bad.xml:2: <trend>: trend 't' gives no rate for power");
  bad("<catalog><trend name=\"t\" generation_years=\"2\">\n" RATE("fp8")
      "\n" RATE("fp8") "</trend></catalog>", WEFT_EINVAL,
      "bad.xml:3: <rate>: quantity 'fp8' given twice");
  bad("<catalog><trend name=\"t\" generation_years=\"2\">\n<rate quantity="
      "\"fp4\" per_year=\"2\" source=\"s\"/></trend></catalog>", WEFT_EINVAL,
      "bad.xml:2: <rate>: unknown quantity 'fp4'; expected fp32, tf32, bf16, "
      "fp16, fp8, hbm_bw, hbm_cap, nvlink, nic or power");
  bad("<catalog><trend name=\"t\" generation_years=\"2\">\n<rate quantity="
      "\"nic\" per_year=\"2\" per_generation=\"3\" source=\"s\"/></trend>"
      "</catalog>", WEFT_EINVAL,
      "bad.xml:2: <rate>: give per_year or per_generation, not both");
  bad("<catalog><trend name=\"t\" generation_years=\"2\">\n<rate quantity="
      "\"nic\" per_year=\"2\"/></trend></catalog>", WEFT_EINVAL,
      "bad.xml:2: <rate>: missing attribute 'source'");
  bad("<catalog><trend name=\"t\" generation_years=\"2\">\n<growth/></trend>"
      "</catalog>", WEFT_EINVAL,
      "bad.xml:2: <growth>: unknown element; expected rate");
  bad("<catalog>\n<switch name=\"s\" nic=\"NDR\" ports=\"64\" idle_power="
      "\"1kW\" max_power=\"1.2kW\"/></catalog>", WEFT_ENOTFOUND,
      "bad.xml:2: <switch>: unknown NIC 'NDR'");
  bad("<catalog><nic name=\"n\" bw=\"1Gbps\" lat=\"1us\"/>\n<switch name="
      "\"s\" nic=\"n\" ports=\"64\" idle_power=\"2kW\" max_power=\"1kW\"/>"
      "</catalog>", WEFT_EINVAL, "bad.xml:2: <switch>: idle_power exceeds "
      "max_power");
  bad("<catalog>\n<nic name=\"n\" bw=\"1Gbps\" lat=\"1us\" idle_power=\"9W\"/>"
      "</catalog>", WEFT_EINVAL,
      "bad.xml:2: <nic>: idle_power and max_power go together");
}
