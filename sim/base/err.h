/*
 * err.h - the one error convention of weft.
 *
 * Fallible functions return 0 (or a pointer) on success and a negative
 * WEFT_E* code (or NULL) on failure, and take a trailing `struct weft_err *`
 * that receives a message of the form "FILE:LINE: what went wrong" or
 * "--flag: what went wrong".  Only the command layer prints it, prefixed
 * with "weft: ".  Outputs are not touched on failure.
 */
#ifndef WEFT_ERR_H
#define WEFT_ERR_H

#include <stddef.h>

#define WEFT_WUR __attribute__((warn_unused_result))
#define WEFT_PRINTF(f, a) __attribute__((format(printf, f, a)))

enum {
  WEFT_OK = 0,
  WEFT_EINVAL = -1,   /* malformed or out-of-range input */
  WEFT_EIO = -2,      /* a file could not be read or written */
  WEFT_ELIMIT = -3,   /* a count exceeds its explicit limit */
  WEFT_ENOTFOUND = -4 /* an unknown name (preset, GPU, option) */
};

#define WEFT_ERR_MAX 512

struct weft_err {
  int code;               /* last error code, 0 when none */
  char msg[WEFT_ERR_MAX]; /* "where: what" */
};

/* Set `err` (which may be NULL) to the printf-formatted message and return
 * `code`, so that callers can write `return weft_errf(err, WEFT_EINVAL, ...)`.
 * A message longer than WEFT_ERR_MAX-1 is truncated. */
int weft_errf(struct weft_err *err, int code, const char *fmt, ...)
    WEFT_PRINTF(3, 4);

/* Prepend "prefix: " to the message already in `err` (e.g. a file name to an
 * error raised while parsing its contents).  Returns err->code. */
int weft_err_prefix(struct weft_err *err, const char *prefix);

/* Reset `err` to "no error". */
void weft_err_clear(struct weft_err *err);

#endif
