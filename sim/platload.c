/*
 * platload.c - SimGrid start-up and platform loading (with the engine and
 * its bridge, sgbridge.cpp, the only files that include SimGrid headers).
 */
#define _GNU_SOURCE /* memfd_create */
#include "sim/platload.h"

#include <errno.h>
#include <stdbool.h>
#include <sys/mman.h>
#include <simgrid/engine.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "platforms/platgen.h"

void platload_boot(int verbose)
{
  static char a0[] = "weft";
  static char a1[] = "--log=root.thres:critical";
  static char a2[] = "--cfg=contexts/factory:raw";
  char *argv[] = {a0, a1, a2, NULL};
  int argc = 3;
  if (verbose || getenv("WEFT_SIMGRID_LOG")) {
    argv[1] = a2;
    argc = 2;
  }
  simgrid_init(&argc, argv);
}

int platload_file(const char *path, struct weft_err *err)
{
  if (access(path, R_OK) != 0)
    return weft_errf(err, WEFT_EIO, "%s: cannot read: %s", path,
                     strerror(errno));
  simgrid_load_platform(path);
  return 0;
}

/* The platform is written to an anonymous in-memory file and SimGrid
 * reads it through /proc/self/fd: nothing is left on disk if the run is
 * killed (a 131072-GPU platform is 178 MB).  Where memfd is missing, a
 * temporary file, unlinked as soon as SimGrid has read it. */
int platload_cluster(const struct cluster *c, struct weft_err *err)
{
  char path[64];
  int fd = memfd_create("weft-platform.xml", MFD_CLOEXEC);
  bool anonymous = fd >= 0;
  if (anonymous) {
    snprintf(path, sizeof path, "/proc/self/fd/%d", fd);
  } else {
    snprintf(path, sizeof path, "/tmp/weft-platform-XXXXXX");
    fd = mkstemp(path);
  }
  if (fd < 0)
    return weft_errf(err, WEFT_EIO, "cannot create a temporary platform file: "
                     "%s", strerror(errno));
  FILE *f = fdopen(fd, "w");
  if (!f) {
    close(fd);
    if (!anonymous)
      unlink(path);
    return weft_errf(err, WEFT_EIO, "fdopen: %s", strerror(errno));
  }
  int rc = platgen_write(c, f, err);
  if (fflush(f) != 0 && !rc)
    rc = weft_errf(err, WEFT_EIO, "the temporary platform: write error: %s",
                   strerror(errno));
  if (!rc)
    rc = platload_file(path, err);
  fclose(f);
  if (!anonymous)
    unlink(path);
  return rc;
}
