/*
 * outfile.h - output files written whole or not at all.  The data goes to
 * a temporary file beside the target (same directory, so the rename cannot
 * cross file systems), which replaces the target only once every write and
 * the close have succeeded; a failed or abandoned write leaves the target
 * as it was and no temporary behind.  The replacement removes the target,
 * then renames (outfile.c says why), so it is not atomic: a crash between
 * the two leaves the temporary and no target.  "-" is standard output, checked the
 * same way.
 */
#ifndef WEFT_OUTFILE_H
#define WEFT_OUTFILE_H

#include <stdbool.h>
#include <stdio.h>

#include "err.h"

struct outfile {
  FILE *f;            /* write here */
  const char *path;   /* the target, borrowed */
  char *tmp;          /* the temporary (owned), NULL for standard output */
};

/* Open `path` ("-": standard output) for writing.  On failure the message
 * is "PATH: cannot write: REASON". */
int outfile_open(struct outfile *o, const char *path,
                 struct weft_err *err) WEFT_WUR;

/* Check every write, close, and move the temporary over the target.  On
 * failure ("PATH: write error: REASON") the temporary is removed. */
int outfile_commit(struct outfile *o, struct weft_err *err) WEFT_WUR;

/* Give up: close and remove the temporary (NULL-safe, idempotent). */
void outfile_abort(struct outfile *o);

/* Flush standard output and report a write error on it (a full disk, a
 * closed pipe): "standard output: write error: REASON". */
int outfile_check_stdout(struct weft_err *err) WEFT_WUR;

#endif
