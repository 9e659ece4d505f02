/*
 * xalloc.h - allocators that exit (status 1) with the requested size on failure, so
 * that callers need no NULL checks, plus a checked multiplication for sizes.
 */
#ifndef WEFT_XALLOC_H
#define WEFT_XALLOC_H

#include <stddef.h>

void *xmalloc(size_t bytes);
void *xcalloc(size_t n, size_t size);
void *xrealloc(void *p, size_t bytes);
/* Grow-array helper: realloc `p` to n*size bytes, exiting on overflow. */
void *xreallocarray(void *p, size_t n, size_t size);
char *xstrdup(const char *s);
/* printf into a fresh heap string; caller owns it. */
char *xasprintf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

#endif
