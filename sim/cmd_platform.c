/*
 * cmd_platform.c - `weft platform CLUSTER [-o FILE]`: write the SimGrid
 * platform of a cluster preset or cluster file, with flags overriding it.
 */
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "platforms/platgen.h"
#include "platforms/topo.h"
#include "sim/base/units.h"
#include "sim/commands.h"

/* The parts line(s) of `c` on `f`. */
static void print_parts(FILE *f, const struct cluster *c)
{
  struct topo_parts p;
  topo_parts(c, &p);
  fprintf(f, "%s fabric of %d GPUs (%d node%s): %ld NIC ports, %ld switch%s "
          "of %d ports (%ld + %ld + %ld by tier), %ld switch ports, %ld "
          "cables", topology_name(c->topology), c->gpus, c->nodes,
          c->nodes == 1 ? "" : "s", p.nic_ports, p.switches_all,
          p.switches_all == 1 ? "" : "es", p.radix, p.switches[0], p.switches[1],
          p.switches[2], p.ports_all, p.cables);
  /* Switches are the catalog's of the NIC's generation (<switch nic=>),
   * counted at its ports: a NIC made faster by --scale or a projection
   * would need faster ports, which the catalog does not have (issue 40). */
  if (p.switches_all && c->sw.ports > 0 &&
      (c->scale.nic != 1 || c->proj_nic_years > 0)) {
    /* cluster.c picks the switch of the scaled rate when the catalog has
     * one (catalog_switch_for_rate) */
    if (strcasecmp(c->sw.nic, c->nic.name) != 0)
      fprintf(f, " (switches: %s's %d ports, of the %s NICs' rate, for the "
              "scaled NICs' %.4g Gb/s)", c->sw.name, c->sw.ports, c->sw.nic,
              c->nic.bw_Bps * 8 / 1e9);
    else
      fprintf(f, " (switches: %s's %d ports, of the catalog's %s NICs, not "
              "of the scaled ones)", c->sw.name, c->sw.ports, c->sw.nic);
  }
  if (p.have_switch_power)
    fprintf(f, "; %.4g kW at full traffic (NICs%s)", p.power_w / 1e3,
            p.switches_all ? " and switches" : "");
  else if (c->sw.ports > 0)
    fprintf(f, "; power unknown (no power figure of the %s switch in the "
            "catalog)", c->sw.name);
  else
    fprintf(f, "; power unknown (no %s switch in the catalog)", c->nic.name);
  if (p.have_prices) {
    /* The sources of the prices, those the catalog gives (issue 40: two
     * empty ones printed "(; )"). */
    const char *a = c->nic.source, *b = c->sw.source;
    fprintf(f, "; $%.4g M at the catalog's prices%s%s%s%s%s\n",
            p.cost_usd / 1e6, a[0] || b[0] ? " (" : "", a,
            a[0] && b[0] ? "; " : "", b, a[0] || b[0] ? ")" : "");
    return;
  }
  /* What is missing, and only that: the NIC's price, the switch (none of
   * the NIC's generation in the catalog), its price, its links' price. */
  char miss[256] = "";
  size_t n = 0;
  const char *sep = "";
  if (c->nic.price <= 0) {
    n += (size_t)snprintf(miss + n, sizeof miss - n, "price= of <nic> %s",
                          c->nic.name);
    sep = ", ";
  }
  if (c->sw.ports <= 0) {
    snprintf(miss + n, sizeof miss - n, "%sa <switch> of nic=\"%s\" with "
             "price= and link_price=", sep, c->nic.name);
  } else {
    if (c->sw.price <= 0 && p.switches_all > 0 && n < sizeof miss) {
      n += (size_t)snprintf(miss + n, sizeof miss - n, "%sprice= of <switch> "
                            "%s", sep, c->sw.name);
      sep = ", ";
    }
    if (c->sw.link_price <= 0 && n < sizeof miss)
      snprintf(miss + n, sizeof miss - n, "%slink_price= of <switch> %s",
               sep, c->sw.name);
  }
  fprintf(f, "; cost unknown (the catalog lacks %s)\n", miss);
}

/* The keys of the options below (opts_get), one per entry. */
enum platform_opt {
  PLATFORM_OUTPUT, PLATFORM_PARTS, PLATFORM_COUNT
};

static const struct opt platform_opts[] = {
    [PLATFORM_OUTPUT] = {"output", 'o', OPT_VALUE, "FILE",
      "where to write the platform (default: standard output)"},
    [PLATFORM_PARTS] = {"parts", 0, OPT_FLAG, NULL,
      "print the fabric's parts (switches, ports, cables, power) instead of "
      "the platform"},
    [PLATFORM_COUNT] = {NULL, 0, 0, NULL, NULL},
};
OPTS_CHECK_TABLE(platform_opts, PLATFORM_COUNT);

const struct opts_spec cmd_platform_spec = {
    "platform", POS_CLUSTER, "CLUSTER", OPTS_CATALOG | OPTS_CLUSTER,
    platform_opts,
    "Writes the SimGrid platform XML of a cluster preset or file (default\n"
    "dgx-h100), with its settings applied.",
    "  weft platform selene --gpus 64 -o selene64.xml\n"
    "  weft platform dgx-h100 --nodes 16 --oversubscription 2\n"
    "  weft platform dgx-h100 --gpus 16384 --topology rail-only --parts\n"};

int cmd_platform(int argc, char **argv)
{
  struct opts o;
  int code;
  if (cli_parse(&cmd_platform_spec, argc, argv, &o, &code))
    return code;
  const char *out = opts_get(&o, PLATFORM_OUTPUT);
  if (!out)
    out = "-";
  struct weft_err err = {0};
  struct catalog *cat;
  struct cluster c;
  if (opts_cluster(&o, "dgx-h100", &cat, &c, &err))
    return cli_fail(&err);
  if (opts_get(&o, PLATFORM_PARTS)) {
    print_parts(stdout, &c);
    catalog_free(cat);
    return 0;
  }
  int rc = platgen_write_file(&c, out, &err);
  catalog_free(cat);
  if (rc)
    return cli_fail(&err);
  if (strcmp(out, "-") != 0) {
    char a[32];
    fprintf(stderr, "weft: wrote %s: %d GPUs (%d node%s of %d x %s), %s, %s "
            "NICs\n", out, c.gpus, c.nodes, c.nodes == 1 ? "" : "s",
            c.gpus_per_node, c.gpu.name,
            topology_name(c.topology),
            units_fmt_human(c.nic.bw_Bps, UNIT_BW, a, sizeof a));
    fprintf(stderr, "weft: ");
    print_parts(stderr, &c);
  }
  return 0;
}
