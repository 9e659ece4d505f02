/*
 * xalloc.c - allocators that end the program when memory runs out.  Running
 * out of memory in a simulator is not recoverable; saying how much was
 * asked for is the useful part, and it is an error like any other (exit
 * status 1), not a crash.  Jobs too large are refused before they start
 * (cli_check_size); this is the last line.
 */
#include "xalloc.h"

#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void oom(size_t bytes)
{
  fprintf(stderr, "weft: out of memory allocating %zu bytes\n", bytes);
  exit(1);
}

void *xmalloc(size_t bytes)
{
  void *p = malloc(bytes ? bytes : 1);
  if (!p)
    oom(bytes);
  return p;
}

void *xcalloc(size_t n, size_t size)
{
  void *p = calloc(n ? n : 1, size ? size : 1);
  if (!p)
    oom(n * size);
  return p;
}

void *xrealloc(void *p, size_t bytes)
{
  void *q = realloc(p, bytes ? bytes : 1);
  if (!q)
    oom(bytes);
  return q;
}

void *xreallocarray(void *p, size_t n, size_t size)
{
  if (size && n > SIZE_MAX / size)
    oom(SIZE_MAX);
  return xrealloc(p, n * size);
}

char *xstrdup(const char *s)
{
  size_t n = strlen(s) + 1;
  char *d = xmalloc(n);
  memcpy(d, s, n);
  return d;
}

char *xasprintf(const char *fmt, ...)
{
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(NULL, 0, fmt, ap);
  va_end(ap);
  if (n < 0)
    oom(0);
  char *s = xmalloc((size_t)n + 1);
  va_start(ap, fmt);
  vsnprintf(s, (size_t)n + 1, fmt, ap);
  va_end(ap);
  return s;
}
