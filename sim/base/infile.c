/*
 * infile.c - opening input files (infile.h).
 */
#include "infile.h"

#include <errno.h>
#include <string.h>
#include <sys/stat.h>

FILE *infile_open(const char *path, struct weft_err *err)
{
  FILE *f = fopen(path, "rb");
  if (!f) {
    weft_errf(err, WEFT_EIO, "%s: cannot open: %s", path, strerror(errno));
    return NULL;
  }
  struct stat st;
  if (fstat(fileno(f), &st) == 0 && S_ISDIR(st.st_mode)) {
    fclose(f);
    weft_errf(err, WEFT_EIO, "%s: is a directory", path);
    return NULL;
  }
  return f;
}
