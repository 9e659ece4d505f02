/* fuzz_workload.c - workload files, resolved into a model, a plan and a
 * cluster, and the size estimate of their graph. */
#include "tests/fuzz/fuzz_common.h"

#include "workloads/builder.h"
#include "workloads/workload.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
  struct weft_err err = {0};
  struct catalog *cat = catalog_builtin(&err);
  if (!cat)
    abort();
  char path[64];
  int fd = fuzz_file(data, size, path, sizeof path);
  struct workload w;
  workload_init(&w);
  struct cluster c;
  if (workload_read_file(&w, cat, path, &err) == 0 &&
      workload_resolve(&w, cat, "selene", &c, &err) == 0) {
    struct graph_estimate e;
    build_estimate(&w.model, &w.plan, &e);
  }
  close(fd);
  catalog_free(cat);
  return 0;
}
