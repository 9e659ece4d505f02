/*
 * fuzz_common.h - shared by the libFuzzer targets: hand the input to a
 * file-based reader through an anonymous in-memory file (no disk, nothing
 * left behind), and treat any reported error as a normal outcome: a target
 * fails only on a crash, a sanitizer report, a leak, a hang or a broken
 * property it asserts itself.
 */
#ifndef WEFT_FUZZ_COMMON_H
#define WEFT_FUZZ_COMMON_H

#define _GNU_SOURCE /* memfd_create */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

/* Write the input to a memfd; *path gets "/proc/self/fd/N" (N returned,
 * close it when done). */
static int fuzz_file(const uint8_t *data, size_t size, char *path,
                     size_t path_size)
{
  int fd = memfd_create("weft-fuzz", MFD_CLOEXEC);
  if (fd < 0)
    abort();
  size_t off = 0;
  while (off < size) {
    ssize_t w = write(fd, data + off, size - off);
    if (w <= 0)
      abort();
    off += (size_t)w;
  }
  snprintf(path, path_size, "/proc/self/fd/%d", fd);
  return fd;
}

/* The input as a NUL-terminated string (caller frees). */
static char *fuzz_string(const uint8_t *data, size_t size)
{
  char *s = malloc(size + 1);
  memcpy(s, data, size);
  s[size] = '\0';
  return s;
}

#endif
