/*
 * csv.c - write and read RFC 4180 CSV (csv.h): a row at a time with
 * struct csv_reader, whole with csv_read (made of the reader).
 */
#include "sim/base/csv.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sim/base/infile.h"
#include "sim/base/xalloc.h"

void csv_append(struct csv_buf *b, const char *text, size_t len)
{
  if (b->len + len + 1 > b->cap) {
    while (b->len + len + 1 > b->cap)
      b->cap = b->cap ? 2 * b->cap : 256;
    b->s = xrealloc(b->s, b->cap);
  }
  memcpy(b->s + b->len, text, len);
  b->len += len;
  b->s[b->len] = '\0';
}

void csv_put(struct csv_buf *b, const char *field, bool first)
{
  if (!first)
    csv_append(b, ",", 1);
  if (!field)
    return;
  if (!strpbrk(field, ",\"\r\n")) {
    csv_append(b, field, strlen(field));
    return;
  }
  csv_append(b, "\"", 1);
  for (const char *p = field; *p; p++)
    csv_append(b, *p == '"' ? "\"\"" : p, *p == '"' ? 2 : 1);
  csv_append(b, "\"", 1);
}

void csv_buf_free(struct csv_buf *b)
{
  free(b->s);
  memset(b, 0, sizeof *b);
}

char *csv_slurp(const char *path, size_t *len, struct weft_err *err)
{
  FILE *f = infile_open(path, err);
  if (!f)
    return NULL;
  struct csv_buf b = {0};
  char chunk[65536];
  size_t n;
  while ((n = fread(chunk, 1, sizeof chunk, f)) > 0) {
    if (b.len + n > (size_t)CSV_MAX_BYTES) {
      fclose(f);
      csv_buf_free(&b);
      weft_errf(err, WEFT_ELIMIT, "%s: larger than %ld bytes", path,
                CSV_MAX_BYTES);
      return NULL;
    }
    csv_append(&b, chunk, n);
  }
  int e = ferror(f) ? errno : 0;
  fclose(f);
  if (e) {
    csv_buf_free(&b);
    weft_errf(err, WEFT_EIO, "%s: read error: %s", path, strerror(e));
    return NULL;
  }
  if (!b.s)
    csv_append(&b, "", 0);
  *len = b.len;
  return b.s;
}

/* The streaming reader.  Invariant: r->pos is the file offset of the next
 * byte next_byte returns and r->next_line its line; a row's fields are
 * gathered in r->text (each NUL-terminated, starts in r->starts) and the
 * pointers in r->fields are made only once the row is complete, since
 * r->text moves as it grows. */
#define CSV_IN_BYTES 65536

/* The next byte, or -1 at the end of the file or on a read error (then
 * r->read_errno is set). */
static inline int next_byte(struct csv_reader *r)
{
  if (r->in_pos == r->in_len) {
    r->in_pos = 0;
    r->in_len = fread(r->in, 1, CSV_IN_BYTES, r->f);
    if (r->in_len == 0) {
      if (ferror(r->f) && !r->read_errno)
        r->read_errno = errno ? errno : EIO;
      return -1;
    }
  }
  r->pos++;
  return r->in[r->in_pos++];
}

static inline int peek_byte(struct csv_reader *r)
{
  int c = next_byte(r);
  if (c >= 0) {
    r->in_pos--;
    r->pos--;
  }
  return c;
}

static inline void put_byte(struct csv_reader *r, int c)
{
  if (r->text.len + 1 >= r->text.cap) {
    r->text.cap = r->text.cap ? 2 * r->text.cap : 4096;
    r->text.s = xrealloc(r->text.s, r->text.cap);
  }
  r->text.s[r->text.len++] = (char)c;
}

int csv_reader_open(struct csv_reader *r, const char *path,
                    struct weft_err *err)
{
  memset(r, 0, sizeof *r);
  FILE *f = infile_open(path, err);
  if (!f)
    return err ? err->code : WEFT_EIO;
  r->f = f;
  r->path = xstrdup(path);
  r->in = xmalloc(CSV_IN_BYTES);
  r->next_line = 1;
  return 0;
}

/* Fail the reader: a read error if there was one (it explains the rest),
 * else the message given. */
WEFT_PRINTF(4, 5)
static int fail(struct csv_reader *r, struct weft_err *err, int code,
                const char *fmt, ...)
{
  r->failed = true;
  if (r->read_errno)
    return weft_errf(err, WEFT_EIO, "%s: read error: %s", r->path,
                     strerror(r->read_errno));
  char what[WEFT_ERR_MAX];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(what, sizeof what, fmt, ap);
  va_end(ap);
  return weft_errf(err, code, "%s:%s", r->path, what);
}

/* With r->comments: skip the lines that start with '#' here, raw. */
static int skip_comments(struct csv_reader *r, struct weft_err *err)
{
  while (peek_byte(r) == '#') {
    int c;
    while ((c = next_byte(r)) >= 0 && c != '\n')
      if (c == 0)
        return fail(r, err, WEFT_EINVAL, "%ld: NUL byte: not a text file",
                    r->next_line);
    if (c < 0)
      break;
    r->next_line++;
  }
  return 0;
}

/* One function on purpose (about 100 lines): the byte-level state machine
 * of a row (unquoted, quoted, after a closing quote) whose states share the
 * row's buffer, field starts and file position; split, each piece would
 * take all of them. */
int csv_reader_next(struct csv_reader *r, struct weft_err *err)
{
  if (r->failed || !r->f)
    return weft_errf(err, WEFT_EINVAL, "%s: read after an error",
                     r->path ? r->path : "csv");
  if (r->comments) {
    int rc = skip_comments(r, err);
    if (rc)
      return rc;
  }
  const uint64_t start = r->pos;
  const long row_line = r->next_line;
  int n = 0;
  r->text.len = 0;
  if (peek_byte(r) < 0) {
    if (r->read_errno)
      return fail(r, err, WEFT_EIO, "%s", "read error");
    r->partial = false;
    r->complete_bytes = start;
    return 0;
  }
  for (;;) { /* one field per turn */
    if (n == CSV_MAX_FIELDS)
      return fail(r, err, WEFT_ELIMIT, "%ld: more than %d fields", row_line,
                  CSV_MAX_FIELDS);
    if (n == r->cap_fields) {
      r->cap_fields = r->cap_fields ? 2 * r->cap_fields : 64;
      r->starts = xreallocarray(r->starts, (size_t)r->cap_fields,
                                sizeof *r->starts);
      r->fields = xreallocarray(r->fields, (size_t)r->cap_fields,
                                sizeof *r->fields);
    }
    r->starts[n++] = r->text.len;
    int c = next_byte(r);
    if (c == '"') {
      for (;;) {
        c = next_byte(r);
        if (c == '"' && peek_byte(r) == '"')
          c = next_byte(r);
        else if (c == '"')
          break;
        if (c < 0)
          return fail(r, err, WEFT_EINVAL, "%ld: a quoted field does not "
                      "end", row_line);
        if (c == 0)
          return fail(r, err, WEFT_EINVAL, "%ld: NUL byte: not a text file",
                      r->next_line);
        if (r->pos - start > (uint64_t)CSV_MAX_ROW_BYTES)
          return fail(r, err, WEFT_ELIMIT, "%ld: a row of more than %ld "
                      "bytes", row_line, CSV_MAX_ROW_BYTES);
        r->next_line += c == '\n';
        put_byte(r, c);
      }
      c = next_byte(r);
      if (c >= 0 && c != ',' && c != '\n' && c != '\r')
        return fail(r, err, WEFT_EINVAL, "%ld: text after a closing quote",
                    r->next_line);
    } else {
      while (c >= 0 && c != ',' && c != '\n' && c != '\r') {
        if (c == '"')
          return fail(r, err, WEFT_EINVAL, "%ld: a quote inside an unquoted "
                      "field", r->next_line);
        if (c == 0)
          return fail(r, err, WEFT_EINVAL, "%ld: NUL byte: not a text file",
                      r->next_line);
        if (r->pos - start > (uint64_t)CSV_MAX_ROW_BYTES)
          return fail(r, err, WEFT_ELIMIT, "%ld: a row of more than %ld "
                      "bytes", row_line, CSV_MAX_ROW_BYTES);
        put_byte(r, c);
        c = next_byte(r);
      }
    }
    put_byte(r, '\0');
    if (c == ',')
      continue;
    if (c == '\r') {
      c = next_byte(r);
      if (c >= 0 && c != '\n')
        return fail(r, err, WEFT_EINVAL, "%ld: a carriage return not "
                    "followed by a line feed", r->next_line);
    }
    if (c == '\n') {
      r->next_line++;
      break;
    }
    /* The end of the file inside the row: cut, unless reading failed or
     * the file is one written by hand. */
    if (r->read_errno)
      return fail(r, err, WEFT_EIO, "%s", "read error");
    if (r->last_row_whole)
      break;
    r->partial = true;
    r->complete_bytes = start;
    return 0;
  }
  for (int k = 0; k < n; k++)
    r->fields[k] = r->text.s + r->starts[k];
  r->nfields = n;
  r->line = row_line;
  r->offset = start;
  r->bytes = r->pos - start;
  r->complete_bytes = r->pos;
  return 1;
}

void csv_reader_close(struct csv_reader *r)
{
  if (!r)
    return;
  if (r->f)
    fclose(r->f);
  free(r->path);
  free(r->in);
  free(r->text.s);
  free(r->starts);
  free(r->fields);
  memset(r, 0, sizeof *r);
}

static void add_row(struct csv *c, char **fields, int n, long line)
{
  c->fields = xreallocarray(c->fields, (size_t)c->nrows + 1, sizeof *c->fields);
  c->nfields = xreallocarray(c->nfields, (size_t)c->nrows + 1,
                             sizeof *c->nfields);
  c->line = xreallocarray(c->line, (size_t)c->nrows + 1, sizeof *c->line);
  c->fields[c->nrows] = fields;
  c->nfields[c->nrows] = n;
  c->line[c->nrows++] = line;
}

int csv_read(const char *path, struct csv *out, struct weft_err *err)
{
  struct csv_reader r;
  int rc = csv_reader_open(&r, path, err);
  if (rc)
    return rc;
  struct csv c = {0};
  while ((rc = csv_reader_next(&r, err)) > 0) {
    if (r.offset + r.bytes > (uint64_t)CSV_MAX_BYTES) {
      rc = weft_errf(err, WEFT_ELIMIT, "%s: larger than %ld bytes", path,
                     CSV_MAX_BYTES);
      break;
    }
    char **fields = xcalloc((size_t)r.nfields, sizeof *fields);
    for (int k = 0; k < r.nfields; k++)
      fields[k] = xstrdup(r.fields[k]);
    add_row(&c, fields, r.nfields, r.line);
  }
  if (rc == 0) {
    c.partial = r.partial;
    c.complete_bytes = (size_t)r.complete_bytes;
  }
  csv_reader_close(&r);
  if (rc) {
    csv_release(&c);
    return rc;
  }
  *out = c;
  return 0;
}

void csv_release(struct csv *c)
{
  if (!c)
    return;
  for (long r = 0; r < c->nrows; r++) {
    for (int k = 0; k < c->nfields[r]; k++)
      free(c->fields[r][k]);
    free(c->fields[r]);
  }
  free(c->fields);
  free(c->nfields);
  free(c->line);
  memset(c, 0, sizeof *c);
}

int csv_column(const struct csv *c, const char *name)
{
  if (c->nrows == 0)
    return -1;
  for (int k = 0; k < c->nfields[0]; k++)
    if (strcmp(c->fields[0][k], name) == 0)
      return k;
  return -1;
}
