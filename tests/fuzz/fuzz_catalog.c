/* fuzz_catalog.c - catalog files on top of the built-in catalog. */
#include "tests/fuzz/fuzz_common.h"

#include "platforms/catalog.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
  struct weft_err err = {0};
  struct catalog *cat = catalog_builtin(&err);
  if (!cat)
    abort();
  (void)catalog_load_mem(cat, (const char *)data, (unsigned long)size,
                         "fuzz.xml", &err);
  catalog_free(cat);
  return 0;
}
