/* fuzz_cluster.c - cluster files, resolved against the catalog, and the
 * platform written for them (to memory) when they resolve. */
#include "tests/fuzz/fuzz_common.h"

#include "platforms/cluster.h"
#include "platforms/platgen.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
  struct weft_err err = {0};
  struct catalog *cat = catalog_builtin(&err);
  if (!cat)
    abort();
  char path[64];
  int fd = fuzz_file(data, size, path, sizeof path);
  struct cluster_desc d;
  cluster_desc_init(&d);
  struct cluster c;
  if (cluster_desc_read_file(&d, cat, path, &err) == 0 &&
      cluster_resolve(&d, cat, &c, &err) == 0 && c.gpus <= 4096) {
    FILE *f = fopen("/dev/null", "w");
    (void)platgen_write(&c, f, &err);
    fclose(f);
  }
  close(fd);
  catalog_free(cat);
  return 0;
}
