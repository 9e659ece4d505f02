/* fuzz_table.c - measured kernel tables (CSV). */
#include "tests/fuzz/fuzz_common.h"

#include "workloads/costmodel.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
  struct weft_err err = {0};
  char path[64];
  int fd = fuzz_file(data, size, path, sizeof path);
  struct cost_table *t = cost_table_read(path, &err);
  close(fd);
  cost_table_free(t);
  return 0;
}
