/*
 * csv.h - RFC 4180 CSV (comma-separated, fields with a comma, a quote or a
 * line break in double quotes, quotes doubled, lines ending in "\n" or
 * "\r\n"), written a row at a time and read a row at a time (struct
 * csv_reader, for files of any size: results reach hundreds of MB) or
 * whole (struct csv, for small files).  The one CSV reader of weft: the
 * results files of studies and the measured kernel tables
 * (workloads/costmodel.h) both go through it.
 */
#ifndef WEFT_CSV_H
#define WEFT_CSV_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "sim/base/err.h"

#define CSV_MAX_BYTES (1L << 30)  /* a file read whole (csv_read, csv_slurp) */
#define CSV_MAX_FIELDS 4096       /* fields of one row */
#define CSV_MAX_ROW_BYTES (16L << 20) /* one row, quotes included */

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
 * "PATH: cannot open: REASON", "PATH: is a directory",
 * "PATH: read error: REASON" or the size limit. */
char *csv_slurp(const char *path, size_t *len, struct weft_err *err);

/*
 * A file read a row at a time, in memory proportional to the longest row
 * (not to the file: no limit on the file's size, offsets are 64-bit).
 *
 *   struct csv_reader r;
 *   if (csv_reader_open(&r, path, err)) return err->code;
 *   while ((rc = csv_reader_next(&r, err)) > 0)
 *     use r.nfields, r.fields[k], r.line, r.offset, r.bytes;
 *   if (rc == 0 && r.partial) the file ends in a cut row (r.complete_bytes);
 *   csv_reader_close(&r);
 *
 * The fields of a row are unquoted and NUL-terminated; they and the
 * `fields` array are buffers of the reader, reused by the next row: valid
 * until the next csv_reader_next or csv_reader_close (copy what you keep).
 * A row's raw bytes are [offset, offset + bytes) in the file, quotes and
 * its line ending ("\n" or "\r\n") included, so a caller can copy rows
 * verbatim from the file (pread, or fseeko + fread on a second handle).
 *
 * The rules are those of the whole-file reader (csv_read): a row is one
 * line, or several when a quoted field holds line breaks; an empty line
 * is a row of one empty field; the first row (the header) is returned
 * like the others.  A last row without its line ending (a writer stopped
 * mid-row) is not returned: csv_reader_next returns 0 with `partial` set,
 * and `complete_bytes` is the length of the file up to the end of the last
 * complete row (where to truncate it before appending).
 *
 * Two settings, false after csv_reader_open, change this for files
 * written by hand (kernel tables): with `comments`, a line that starts
 * with '#' where a row would start is skipped as it is (quotes and commas
 * in it mean nothing; a NUL byte in it is still an error); with
 * `last_row_whole`, a last row without its line ending is a row, not a
 * cut one.
 *
 * Errors, each "PATH:LINE: what" with the line the row starts on (the
 * line of the fault for text after a quote and quotes inside a field):
 * a quoted field that does not end before the end of the file, text after
 * a closing quote, a quote inside an unquoted field, a carriage return
 * not followed by a line feed outside quotes, a NUL byte, more than
 * CSV_MAX_FIELDS fields or more than CSV_MAX_ROW_BYTES bytes in a row, and
 * "PATH: read error: REASON".  After an error the reader only closes.
 */
struct csv_reader {
  /* The current row, after csv_reader_next returned 1 (read only). */
  int nfields;
  char **fields;          /* nfields fields, buffers of the reader */
  long line;              /* the line the row starts on (1-based) */
  uint64_t offset;        /* its first byte in the file (0-based) */
  uint64_t bytes;         /* its length, line ending included */
  /* At the end of the file (csv_reader_next returned 0). */
  bool partial;           /* the file ends inside a row */
  uint64_t complete_bytes; /* bytes up to the end of the last complete row */
  /* Settings (see above), set before the first csv_reader_next. */
  bool comments;          /* skip lines starting with '#' */
  bool last_row_whole;    /* a last row without its line ending is a row */
  /* Private. */
  FILE *f;
  char *path;             /* owned copy, for messages */
  unsigned char *in;      /* read buffer */
  size_t in_pos, in_len;
  uint64_t pos;           /* the file offset of in[in_pos] */
  long next_line;         /* the line of the next byte */
  struct csv_buf text;    /* the row's fields, each NUL-terminated */
  size_t *starts;         /* where each field starts in text */
  int cap_fields;
  int read_errno;         /* of a failed read, else 0 */
  bool failed;
};

/* Open `path` for csv_reader_next.  Fails with "PATH: cannot open: REASON"
 * or "PATH: is a directory"; on failure *r needs no close (closing it is
 * harmless). */
int csv_reader_open(struct csv_reader *r, const char *path,
                    struct weft_err *err) WEFT_WUR;

/* Read the next row into r (see above).  Returns 1 for a row, 0 at the end
 * of the file (then `partial` and `complete_bytes` are set), or a negative
 * WEFT_E* code with the message in err. */
int csv_reader_next(struct csv_reader *r, struct weft_err *err) WEFT_WUR;

/* Close the file and free the buffers (the current row's fields too).
 * Accepts NULL, a reader whose open failed, and a zeroed one. */
void csv_reader_close(struct csv_reader *r);

/* A file read whole: rows of fields (with csv_reader; for small files:
 * it holds every field in memory, about 50 times the file's size for
 * results files). */
struct csv {
  long nrows;          /* the header is row 0 */
  int *nfields;        /* per row */
  char ***fields;      /* per row, per field: unquoted, owned */
  long *line;          /* the line each row starts on (1-based) */
  size_t complete_bytes; /* bytes up to the end of the last complete row */
  bool partial;        /* the file ends inside a row (no final newline) */
};

/* Read `path`.  A last row without its newline is left out and flagged in
 * `partial` (a writer stopped mid-row).  Fails as csv_reader_next does and
 * on a file over CSV_MAX_BYTES ("PATH: larger than N bytes").  On success
 * the caller owns *out (csv_release); on failure *out is untouched. */
int csv_read(const char *path, struct csv *out, struct weft_err *err) WEFT_WUR;
void csv_release(struct csv *c);

/* The index of column `name` in the header row, or -1. */
int csv_column(const struct csv *c, const char *name);

#endif
