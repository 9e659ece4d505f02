/*
 * cli.c - error printing and argument parsing shared by the subcommands
 * (commands.h).
 */
#include "sim/commands.h"

#include <stdarg.h>
#include <stdio.h>
#include <time.h>


double cli_wall_s(void)
{
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

int cli_fail(const struct weft_err *err)
{
  fprintf(stderr, "weft: %s\n", err->msg);
  return 1;
}

int cli_usage(const char *fmt, ...)
{
  va_list ap;
  va_start(ap, fmt);
  fprintf(stderr, "weft: ");
  vfprintf(stderr, fmt, ap);
  fprintf(stderr, "\n");
  va_end(ap);
  return 2;
}

int cli_parse(const struct opts_spec *s, int argc, char **argv,
              struct opts *out, int *exit_code)
{
  struct weft_err err = {0};
  bool usage;
  int rc = opts_parse(s, argc, argv, out, &usage, &err);
  if (rc == 1) {
    opts_usage(stdout, s);
    *exit_code = 0;
  } else if (rc) {
    *exit_code = usage ? cli_usage("%s", err.msg) : cli_fail(&err);
  }
  return rc;
}
