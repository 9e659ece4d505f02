/*
 * csv.h - the results files of studies: RFC 4180 CSV (comma-separated,
 * fields with a comma, a quote or a line break in double quotes, quotes
 * doubled, lines ending in "\n"), written a row at a time and read whole.
 */
#ifndef WEFT_CSV_H
#define WEFT_CSV_H

#include <stdbool.h>
#include <stddef.h>

#include "sim/base/err.h"

#define CSV_MAX_BYTES (1L << 30)  /* one results file */
#define CSV_MAX_FIELDS 4096       /* fields of one row */

/* A growing text buffer. */
struct csv_buf {
  char *s;
  size_t len, cap;
};

/* Append `field` (NULL: empty) to *b, quoted if it needs it, preceded by a
 * comma unless `first`. */
void csv_put(struct csv_buf *b, const char *field, bool first);
/* Append raw text. */
void csv_append(struct csv_buf *b, const char *text, size_t len);
void csv_buf_free(struct csv_buf *b);

/* The whole of the file `path` (at most CSV_MAX_BYTES) as a
 * NUL-terminated string of *len bytes; the caller frees it.  NULL with
 * "PATH: cannot open: REASON", "PATH: read error" or the size limit. */
char *csv_slurp(const char *path, size_t *len, struct weft_err *err);

/* A file read whole: rows of fields. */
struct csv {
  long nrows;          /* the header is row 0 */
  int *nfields;        /* per row */
  char ***fields;      /* per row, per field: unquoted, owned */
  long *line;          /* the line each row starts on (1-based) */
  size_t complete_bytes; /* bytes up to the end of the last complete row */
  bool partial;        /* the file ends inside a row (no final newline) */
};

/* Read `path`.  A last row without its newline is left out and flagged in
 * `partial` (a writer stopped mid-row).  Fails on an unreadable file, an
 * unterminated quote before the end, a file over CSV_MAX_BYTES and a row of
 * more than CSV_MAX_FIELDS fields, with "PATH:LINE: what". */
int csv_read(const char *path, struct csv *out, struct weft_err *err) WEFT_WUR;
void csv_release(struct csv *c);

/* The index of column `name` in the header row, or -1. */
int csv_column(const struct csv *c, const char *name);

#endif
