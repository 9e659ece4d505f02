/*
 * cmd_platform.c - `weft platform CLUSTER [-o FILE]`: write the SimGrid
 * platform of a cluster preset or cluster file, with flags overriding it.
 */
#include <stdio.h>
#include <string.h>

#include "platforms/platgen.h"
#include "sim/base/units.h"
#include "sim/commands.h"

static const struct opt platform_opts[] = {
    {"output", 'o', OPT_VALUE, "FILE", "where to write the platform (default: "
     "standard output)"},
    {NULL, 0, 0, NULL, NULL},
};

const struct opts_spec cmd_platform_spec = {
    "platform", POS_CLUSTER, "CLUSTER", OPTS_CATALOG | OPTS_CLUSTER,
    platform_opts,
    "Writes the SimGrid platform XML of a cluster preset or file (default\n"
    "dgx-h100), with its settings applied.",
    "  weft platform selene --gpus 64 -o selene64.xml\n"
    "  weft platform dgx-h100 --nodes 16 --oversubscription 2\n"};

int cmd_platform(int argc, char **argv)
{
  struct opts o;
  int code;
  if (cli_parse(&cmd_platform_spec, argc, argv, &o, &code))
    return code;
  const char *out = opts_get(&cmd_platform_spec, &o, "output");
  if (!out)
    out = "-";
  struct weft_err err = {0};
  struct catalog *cat;
  struct cluster c;
  if (opts_cluster(&o, "dgx-h100", &cat, &c, &err))
    return cli_fail(&err);
  int rc = platgen_write_file(&c, out, &err);
  catalog_free(cat);
  if (rc)
    return cli_fail(&err);
  if (strcmp(out, "-") != 0) {
    char a[32];
    fprintf(stderr, "weft: wrote %s: %d GPUs (%d nodes of %d x %s), %d leaf "
            "group(s), %d pod(s), %s NICs\n", out, c.gpus, c.nodes,
            c.gpus_per_node, c.gpu.name, c.leaves, c.pods,
            units_fmt_human(c.nic.bw_Bps, UNIT_BW, a, sizeof a));
  }
  return 0;
}
