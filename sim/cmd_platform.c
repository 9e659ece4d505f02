/*
 * cmd_platform.c - `weft platform CLUSTER [-o FILE]`: write the SimGrid
 * platform of a cluster preset or cluster file, with flags overriding it.
 */
#include <stdio.h>
#include <string.h>

#include "platforms/platgen.h"
#include "sim/base/units.h"
#include "sim/cli.h"

int cmd_platform(int argc, char **argv)
{
  struct cluster_opts opts;
  memset(&opts, 0, sizeof opts);
  const char *out = "-";
  struct weft_err err = {0};
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i];
    if (strcmp(a, "-o") == 0) {
      if (i + 1 >= argc)
        return cli_usage("-o: missing file name");
      out = argv[++i];
    } else if (strncmp(a, "--", 2) == 0) {
      const char *name, *value;
      int rc;
      if (!cli_opt(argc, argv, &i, &name, &value, &err))
        return cli_fail(&err);
      if (strcmp(name, "output") == 0)
        out = value;
      else if (!cluster_opts_take(&opts, name, value, &err, &rc))
        return cli_usage("platform: unknown option '--%s'", name);
      else if (rc)
        return cli_fail(&err);
    } else if (!opts.cluster) {
      opts.cluster = a;
    } else {
      return cli_usage("platform: unexpected argument '%s'", a);
    }
  }
  struct catalog *cat;
  struct cluster c;
  if (cluster_opts_resolve(&opts, "dgx-h100", &cat, &c, &err))
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
