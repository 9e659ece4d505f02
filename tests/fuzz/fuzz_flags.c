/* fuzz_flags.c - command lines: the input's lines are the arguments of a
 * command that takes every setting (as weft run does), parsed and resolved
 * into a workload. */
#include "tests/fuzz/fuzz_common.h"

#include "sim/opts.h"

static const struct opt own[] = {
    {"json", 0, OPT_FLAG, NULL, "json"},
    {"output", 'o', OPT_VALUE, "FILE", "output"},
    {NULL, 0, 0, NULL, NULL},
};
static const struct opts_spec spec = {
    "fuzz", POS_WORKLOAD, "WORKLOAD.xml",
    OPTS_CATALOG | OPTS_CLUSTER | OPTS_WORKLOAD, own};

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
  char *s = fuzz_string(data, size);
  char *argv[600];
  int argc = 0;
  argv[argc++] = "fuzz";
  for (char *p = s, *nl; p && argc < 599; p = nl) {
    nl = strchr(p, '\n');
    if (nl)
      *nl++ = '\0';
    argv[argc++] = p;
  }
  argv[argc] = NULL;
  struct opts o;
  bool usage;
  struct weft_err err = {0};
  if (opts_parse(&spec, argc, argv, &o, &usage, &err) == 0 &&
      !o.positional && o.n_catalogs == 0) {
    /* Files are other targets' work: only built-in presets here. */
    bool file = o.cluster && (strchr(o.cluster, '/') || strstr(o.cluster, ".xml"));
    struct workload w;
    struct catalog *cat;
    struct cluster c;
    if (!file && opts_workload(&o, "selene", &w, &cat, &c, &err) == 0)
      catalog_free(cat);
  }
  free(s);
  return 0;
}
