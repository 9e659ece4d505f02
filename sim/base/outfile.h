/*
 * outfile.h - output files written whole or not at all.
 *
 * A regular file (or a name not yet taken) is written to a temporary file
 * beside it (same directory, so the rename cannot cross file systems),
 * which replaces it by one rename() once every write and the close have
 * succeeded: at every instant the name holds either the old contents or the
 * new, whole; a failed or abandoned write leaves the target as it was and
 * no temporary behind (a process killed mid-write can leave only its
 * temporary, NAME.weft-XXXXXX, and the target untouched).  A symbolic link
 * to a regular file keeps being a link: the file it points to is replaced.
 * Anything else (a device such as /dev/null or /dev/full, a FIFO, a dangling
 * link) is opened and written in place, never removed or replaced; its write
 * errors are reported the same way.  "-" is standard output, checked the
 * same way.  weft never unlinks a file it did not create.
 */
#ifndef WEFT_OUTFILE_H
#define WEFT_OUTFILE_H

#include <stdbool.h>
#include <stdio.h>

#include "err.h"

struct outfile {
  FILE *f;            /* write here */
  const char *path;   /* the target, borrowed */
  char *tmp;          /* the temporary (owned), NULL when written in place */
  char *dest;         /* what the temporary replaces (owned): the target, or
                         the file a link to it points to */
  bool in_place;      /* a device, FIFO or dangling link: written directly */
};

/* Open `path` ("-": standard output) for writing.  On failure the message
 * is "PATH: cannot write: REASON" (an empty path: "cannot write to an empty
 * file name"; a directory: "PATH: is a directory"). */
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
