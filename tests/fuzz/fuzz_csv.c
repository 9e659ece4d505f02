/* fuzz_csv.c - results files (CSV) read whole, with two properties:
 * the complete rows (complete_bytes) read again give the same rows and no
 * partial row, and csv_put of every row read back gives the same rows
 * (the writer and the reader agree on any list of fields). */
#include "tests/fuzz/fuzz_common.h"

#include "sim/base/csv.h"

static int read_text(const char *text, size_t len, struct csv *out)
{
  struct weft_err err = {0};
  char path[64];
  int fd = fuzz_file((const uint8_t *)text, len, path, sizeof path);
  int rc = csv_read(path, out, &err);
  close(fd);
  if (rc && (!err.code || !err.msg[0]))
    abort();
  return rc;
}

static void same_rows(const struct csv *a, const struct csv *b)
{
  if (a->nrows != b->nrows)
    abort();
  for (long r = 0; r < a->nrows; r++) {
    if (a->nfields[r] != b->nfields[r])
      abort();
    for (int k = 0; k < a->nfields[r]; k++)
      if (strcmp(a->fields[r][k], b->fields[r][k]) != 0)
        abort();
  }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
  struct csv c;
  if (read_text((const char *)data, size, &c) != 0)
    return 0;
  if (c.complete_bytes > size || c.partial != (c.complete_bytes < size))
    abort();
  for (long r = 0; r < c.nrows; r++)
    if (c.nfields[r] < 1 || c.nfields[r] > CSV_MAX_FIELDS ||
        c.line[r] < 1 || (r > 0 && c.line[r] <= c.line[r - 1]))
      abort();

  struct csv whole;
  if (read_text((const char *)data, c.complete_bytes, &whole) != 0 ||
      whole.partial)
    abort();
  same_rows(&c, &whole);
  csv_release(&whole);

  struct csv_buf b = {0};
  for (long r = 0; r < c.nrows; r++) {
    for (int k = 0; k < c.nfields[r]; k++)
      csv_put(&b, c.fields[r][k], k == 0);
    csv_append(&b, "\n", 1);
  }
  struct csv back;
  if (read_text(b.s ? b.s : "", b.len, &back) != 0 || back.partial)
    abort();
  same_rows(&c, &back);
  csv_release(&back);
  csv_buf_free(&b);
  csv_release(&c);
  return 0;
}
