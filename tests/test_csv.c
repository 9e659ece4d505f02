/*
 * test_csv.c - the streaming CSV reader (sim/base/csv.h): rows, line
 * numbers, byte offsets and lengths that copy rows verbatim, a cut last
 * row, CRLF, buffers reused between rows, and each error with its line;
 * csv_read made of it (its round trip is in test_study.c).
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "sim/base/csv.h"

/* A temporary file holding `text` (len bytes); the caller unlinks it. */
static char *temp_file(const char *text, size_t len)
{
  static char path[64];
  strcpy(path, "/tmp/weft_csvr_XXXXXX");
  int fd = mkstemp(path);
  cr_assert(fd >= 0);
  cr_assert_eq(write(fd, text, len), (ssize_t)len);
  close(fd);
  return path;
}

Test(csv_reader, rows_lines_offsets_and_cut_row)
{
  const char text[] = "key,\"a,b\"\r\n"       /* line 1, CRLF */
                      "1,\"two\nlines\"\n"    /* lines 2-3 */
                      "\n"                     /* line 4: one empty field */
                      "2,\"say \"\"hi\"\"\"\n" /* line 5 */
                      "3,cut";                 /* line 6, no newline */
  char *path = temp_file(text, sizeof text - 1);
  struct csv_reader r;
  struct weft_err err = {0};
  cr_assert_eq(csv_reader_open(&r, path, &err), 0, "%s", err.msg);
  static const struct {
    int n;
    const char *f0, *f1;
    long line;
  } want[] = {{2, "key", "a,b", 1}, {2, "1", "two\nlines", 2},
              {1, "", NULL, 4}, {2, "2", "say \"hi\"", 5}};
  uint64_t off = 0;
  for (int i = 0; i < 4; i++) {
    cr_assert_eq(csv_reader_next(&r, &err), 1, "row %d: %s", i, err.msg);
    cr_assert_eq(r.nfields, want[i].n, "row %d", i);
    cr_assert_str_eq(r.fields[0], want[i].f0);
    if (want[i].f1)
      cr_assert_str_eq(r.fields[1], want[i].f1);
    cr_assert_eq(r.line, want[i].line, "row %d: line %ld", i, r.line);
    cr_assert_eq(r.offset, off, "row %d", i);
    off += r.bytes;
    cr_assert_eq(r.complete_bytes, off);
  }
  /* The raw bytes of row 1 are the file's. */
  cr_assert_eq(strncmp(text + 11, "1,\"two\nlines\"\n", 14), 0);
  cr_assert_eq(csv_reader_next(&r, &err), 0, "%s", err.msg);
  cr_assert(r.partial);
  cr_assert_eq(r.complete_bytes, sizeof text - 1 - strlen("3,cut"));
  csv_reader_close(&r);
  csv_reader_close(&r); /* idempotent */

  /* csv_read agrees. */
  struct csv c;
  cr_assert_eq(csv_read(path, &c, &err), 0, "%s", err.msg);
  cr_assert_eq(c.nrows, 4);
  cr_assert(c.partial);
  cr_assert_eq(c.line[3], 5);
  cr_assert_str_eq(c.fields[1][1], "two\nlines");
  csv_release(&c);
  unlink(path);
}

Test(csv_reader, offsets_copy_rows_verbatim)
{
  /* Rows of growing length (the buffers grow and are reused), then each
   * row copied back by its offset and length gives the file again. */
  struct csv_buf b = {0};
  char field[300];
  for (int i = 0; i < 2000; i++) {
    int len = (i * 37) % 299;
    memset(field, 'a' + i % 26, (size_t)len);
    field[len] = '\0';
    char idx[16];
    snprintf(idx, sizeof idx, "%d", i);
    csv_put(&b, idx, true);
    csv_put(&b, field, false);
    csv_put(&b, i % 3 ? "x,\"y\"" : "z", false);
    csv_append(&b, "\n", 1);
  }
  char *path = temp_file(b.s, b.len);
  struct csv_reader r;
  struct weft_err err = {0};
  cr_assert_eq(csv_reader_open(&r, path, &err), 0, "%s", err.msg);
  struct csv_buf copy = {0};
  int rows = 0, rc;
  while ((rc = csv_reader_next(&r, &err)) > 0) {
    cr_assert_eq(r.nfields, 3);
    cr_assert_eq(atoi(r.fields[0]), rows);
    cr_assert_eq(strlen(r.fields[1]), (size_t)((rows * 37) % 299));
    cr_assert_str_eq(r.fields[2], rows % 3 ? "x,\"y\"" : "z");
    cr_assert_eq(r.line, rows + 1);
    csv_append(&copy, b.s + r.offset, (size_t)r.bytes);
    rows++;
  }
  cr_assert_eq(rc, 0, "%s", err.msg);
  cr_assert_eq(rows, 2000);
  cr_assert(!r.partial);
  cr_assert_eq(r.complete_bytes, b.len);
  cr_assert_eq(copy.len, b.len);
  cr_assert_eq(memcmp(copy.s, b.s, b.len), 0);
  csv_reader_close(&r);
  csv_buf_free(&copy);
  csv_buf_free(&b);
  unlink(path);
}

static void bad(const char *text, size_t len, int code, const char *what)
{
  char *path = temp_file(text, len);
  struct csv_reader r;
  struct weft_err err = {0};
  cr_assert_eq(csv_reader_open(&r, path, &err), 0, "%s", err.msg);
  int rc;
  while ((rc = csv_reader_next(&r, &err)) > 0)
    ;
  cr_assert_eq(rc, code, "%s: %d", what, rc);
  char want[600];
  snprintf(want, sizeof want, "%s%s", path, what);
  cr_assert_str_eq(err.msg, want);
  cr_assert_lt(csv_reader_next(&r, &err), 0); /* stays failed */
  csv_reader_close(&r);
  struct csv c;
  cr_assert_eq(csv_read(path, &c, &err), code);
  unlink(path);
}

Test(csv_reader, errors_with_their_line)
{
  bad("a,b\n\"x,y\nz\n", 11, WEFT_EINVAL, ":2: a quoted field does not end");
  bad("a,b\nx\"y,z\n", 10, WEFT_EINVAL, ":2: a quote inside an unquoted field");
  bad("a\n\"x\ny\"z\n", 9, WEFT_EINVAL, ":3: text after a closing quote");
  bad("a\nb\rc\n", 6, WEFT_EINVAL,
      ":2: a carriage return not followed by a line feed");
  bad("a\nb\0c\n", 6, WEFT_EINVAL, ":2: NUL byte: not a text file");
  struct csv_buf b = {0};
  csv_append(&b, "h\n", 2);
  for (int i = 0; i <= CSV_MAX_FIELDS; i++)
    csv_append(&b, ",", 1);
  csv_append(&b, "\n", 1);
  char what[64];
  snprintf(what, sizeof what, ":2: more than %d fields", CSV_MAX_FIELDS);
  bad(b.s, b.len, WEFT_ELIMIT, what);
  csv_buf_free(&b);
  /* A row over the limit, in an endless quoted field. */
  size_t big = (size_t)CSV_MAX_ROW_BYTES + 16;
  char *text = malloc(big);
  memset(text, 'q', big);
  memcpy(text, "h\n\"", 3);
  snprintf(what, sizeof what, ":2: a row of more than %ld bytes",
           CSV_MAX_ROW_BYTES);
  bad(text, big, WEFT_ELIMIT, what);
  free(text);
}

Test(csv_reader, empty_file_directory_and_missing_file)
{
  char *path = temp_file("", 0);
  struct csv_reader r;
  struct weft_err err = {0};
  cr_assert_eq(csv_reader_open(&r, path, &err), 0, "%s", err.msg);
  cr_assert_eq(csv_reader_next(&r, &err), 0);
  cr_assert(!r.partial);
  cr_assert_eq(r.complete_bytes, 0);
  csv_reader_close(&r);
  unlink(path);
  cr_assert_eq(csv_reader_open(&r, "/tmp", &err), WEFT_EIO);
  cr_assert_str_eq(err.msg, "/tmp: is a directory");
  csv_reader_close(&r);
  cr_assert_eq(csv_reader_open(&r, "/nonexistent/x.csv", &err), WEFT_EIO);
  cr_assert_str_eq(err.msg, "/nonexistent/x.csv: cannot open: No such file "
                   "or directory");
  size_t len;
  cr_assert_null(csv_slurp("/tmp", &len, &err));
  cr_assert_str_eq(err.msg, "/tmp: is a directory");
}

/* Files written by hand (kernel tables): '#' comments skipped raw, quotes
 * and commas in them included, and a last row without its newline. */
Test(csv_reader, comments_and_last_row_whole)
{
  static const char text[] = "# a \"comment\", with commas\na,b\n#x\n1,2";
  const char *path = temp_file(text, sizeof text - 1);
  struct csv_reader r;
  struct weft_err err = {0};
  cr_assert_eq(csv_reader_open(&r, path, &err), 0);
  r.comments = true;
  r.last_row_whole = true;
  cr_assert_eq(csv_reader_next(&r, &err), 1);
  cr_assert_eq(r.nfields, 2);
  cr_assert_str_eq(r.fields[0], "a");
  cr_assert_eq(r.line, 2);
  cr_assert_eq(csv_reader_next(&r, &err), 1);
  cr_assert_str_eq(r.fields[1], "2");
  cr_assert_eq(r.line, 4);
  cr_assert_eq(csv_reader_next(&r, &err), 0);
  cr_assert_not(r.partial);
  csv_reader_close(&r);
  unlink(path);
}
