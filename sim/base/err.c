/*
 * err.c - error messages with their location.
 */
#include "err.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

int weft_errf(struct weft_err *err, int code, const char *fmt, ...)
{
  if (err) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err->msg, sizeof err->msg, fmt, ap);
    va_end(ap);
    err->code = code;
  }
  return code;
}

int weft_err_prefix(struct weft_err *err, const char *prefix)
{
  if (!err)
    return WEFT_EINVAL;
  char tmp[WEFT_ERR_MAX];
  snprintf(tmp, sizeof tmp, "%s: %s", prefix, err->msg);
  memcpy(err->msg, tmp, sizeof tmp);
  return err->code;
}

void weft_err_clear(struct weft_err *err)
{
  if (err) {
    err->code = 0;
    err->msg[0] = '\0';
  }
}
