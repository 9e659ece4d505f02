/*
 * csv.c - write and read RFC 4180 CSV (csv.h).
 */
#include "analysis/csv.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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
  FILE *f = fopen(path, "rb");
  if (!f) {
    weft_errf(err, WEFT_EIO, "%s: cannot open: %s", path, strerror(errno));
    return NULL;
  }
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
  bool bad = ferror(f);
  fclose(f);
  if (bad) {
    csv_buf_free(&b);
    weft_errf(err, WEFT_EIO, "%s: read error", path);
    return NULL;
  }
  if (!b.s)
    csv_append(&b, "", 0);
  *len = b.len;
  return b.s;
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
  size_t len;
  char *text = csv_slurp(path, &len, err);
  if (!text)
    return err->code;
  struct csv c = {0};
  long line = 1;
  size_t i = 0;
  int rc = 0;
  if (len && memchr(text, '\0', len))
    rc = weft_errf(err, WEFT_EINVAL, "%s: not a text file (a NUL byte)", path);
  while (!rc && i < len) {
    long row_line = line;
    char **fields = NULL;
    int n = 0;
    struct csv_buf f = {0};
    bool done = false, ended = false;
    while (!done && !rc) {
      csv_append(&f, "", 0);
      if (i < len && text[i] == '"') { /* quoted field */
        i++;
        for (;;) {
          if (i >= len) {
            rc = weft_errf(err, WEFT_EINVAL, "%s:%ld: a quoted field does "
                           "not end", path, row_line);
            break;
          }
          if (text[i] == '"' && i + 1 < len && text[i + 1] == '"') {
            csv_append(&f, "\"", 1);
            i += 2;
          } else if (text[i] == '"') {
            i++;
            break;
          } else {
            line += text[i] == '\n';
            csv_append(&f, text + i, 1);
            i++;
          }
        }
        if (!rc && i < len && text[i] != ',' && text[i] != '\n' &&
            text[i] != '\r')
          rc = weft_errf(err, WEFT_EINVAL, "%s:%ld: text after a closing "
                         "quote", path, line);
      } else {
        size_t s = i;
        while (i < len && text[i] != ',' && text[i] != '\n' && text[i] != '\r')
          i++;
        if (memchr(text + s, '"', i - s))
          rc = weft_errf(err, WEFT_EINVAL, "%s:%ld: a quote inside an "
                         "unquoted field", path, line);
        csv_append(&f, text + s, i - s);
      }
      if (rc)
        break;
      if (n == CSV_MAX_FIELDS) {
        rc = weft_errf(err, WEFT_ELIMIT, "%s:%ld: more than %d fields", path,
                       row_line, CSV_MAX_FIELDS);
        break;
      }
      fields = xreallocarray(fields, (size_t)n + 1, sizeof *fields);
      fields[n++] = f.s;
      f = (struct csv_buf){0};
      if (i < len && text[i] == ',') {
        i++;
        continue;
      }
      if (i < len && text[i] == '\r')
        i++;
      if (i < len && text[i] == '\n') {
        i++;
        line++;
        ended = true;
      }
      done = true;
    }
    csv_buf_free(&f);
    if (rc || !ended) {
      for (int k = 0; k < n; k++)
        free(fields[k]);
      free(fields);
      if (!rc)
        c.partial = true;
      break;
    }
    add_row(&c, fields, n, row_line);
    c.complete_bytes = i;
  }
  free(text);
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
