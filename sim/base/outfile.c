/*
 * outfile.c - whole-or-nothing output files (outfile.h).
 */
#define _XOPEN_SOURCE 700 /* realpath */
#include "outfile.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "xalloc.h"

static int cannot(struct outfile *o, const char *path, int e,
                  struct weft_err *err)
{
  free(o->tmp);
  free(o->dest);
  o->tmp = o->dest = NULL;
  return weft_errf(err, WEFT_EIO, "%s: cannot write: %s", path, strerror(e));
}

int outfile_open(struct outfile *o, const char *path, struct weft_err *err)
{
  memset(o, 0, sizeof *o);
  o->path = path;
  if (strcmp(path, "-") == 0) {
    o->f = stdout;
    return 0;
  }
  if (!*path)
    return weft_errf(err, WEFT_EINVAL, "cannot write to an empty file name");
  /* What the name is now decides how it is written (outfile.h).  lstat
   * and stat both: a link to a regular file is replaced at its target. */
  struct stat lsb, sb;
  bool exists = lstat(path, &lsb) == 0;
  bool reaches = exists && stat(path, &sb) == 0;
  if (reaches && S_ISDIR(sb.st_mode))
    return weft_errf(err, WEFT_EIO, "%s: is a directory", path);
  if ((exists && !reaches) || (reaches && !S_ISREG(sb.st_mode))) {
    /* A device, a FIFO, a socket or a dangling link: write through it. */
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0666);
    if (fd < 0)
      return cannot(o, path, errno, err);
    if (!(o->f = fdopen(fd, "w"))) {
      int e = errno;
      close(fd);
      return cannot(o, path, e, err);
    }
    o->in_place = true;
    return 0;
  }
  if (exists && S_ISLNK(lsb.st_mode)) {
    char real[PATH_MAX];
    if (!realpath(path, real))
      return cannot(o, path, errno, err);
    o->dest = xstrdup(real);
  } else {
    o->dest = xstrdup(path);
  }
  size_t n = strlen(o->dest) + 16;
  o->tmp = xmalloc(n);
  snprintf(o->tmp, n, "%s.weft-XXXXXX", o->dest);
  int fd = mkstemp(o->tmp);
  if (fd < 0)
    return cannot(o, path, errno, err);
  /* mkstemp makes the file private; give it the mode of the file it
   * replaces, or what a new file would get. */
  mode_t mode;
  if (reaches) {
    mode = sb.st_mode & 07777;
  } else {
    mode_t mask = umask(0);
    umask(mask);
    mode = 0666 & ~mask;
  }
  if (fchmod(fd, mode) != 0 || !(o->f = fdopen(fd, "w"))) {
    int e = errno;
    close(fd);
    unlink(o->tmp);
    return cannot(o, path, e, err);
  }
  return 0;
}

static void drop(struct outfile *o)
{
  free(o->tmp);
  free(o->dest);
  o->tmp = o->dest = NULL;
  o->f = NULL;
}

int outfile_commit(struct outfile *o, struct weft_err *err)
{
  if (!o->tmp && !o->in_place) {
    errno = 0;
    if (fflush(o->f) != 0 || ferror(o->f))
      return weft_errf(err, WEFT_EIO, "standard output: write error: %s",
                       strerror(errno ? errno : EIO));
    return 0;
  }
  errno = 0;
  bool bad = fflush(o->f) != 0 || ferror(o->f) != 0;
  int e = errno;
  if (fclose(o->f) != 0 && !bad) {
    bad = true;
    e = errno;
  }
  o->f = NULL;
  if (o->in_place) {
    o->in_place = false;
    if (bad)
      return weft_errf(err, WEFT_EIO, "%s: write error: %s", o->path,
                       strerror(e ? e : EIO));
    return 0;
  }
  /* One rename over the target: atomic, so a crash leaves the old file or
   * the new one, never neither.  (Renaming over an existing file makes
   * ext4's auto_da_alloc start writing the new one back at once: 0.17 s
   * for a traced run's 200 MB, the price of never losing the file.) */
  if (!bad && rename(o->tmp, o->dest) != 0) {
    bad = true;
    e = errno;
  }
  if (bad) {
    unlink(o->tmp);
    drop(o);
    return weft_errf(err, WEFT_EIO, "%s: write error: %s", o->path,
                     strerror(e ? e : EIO));
  }
  drop(o);
  return 0;
}

void outfile_abort(struct outfile *o)
{
  if (!o || (!o->tmp && !o->in_place))
    return;
  if (o->f)
    fclose(o->f);
  if (o->tmp)
    unlink(o->tmp);
  o->in_place = false;
  drop(o);
}

int outfile_check_stdout(struct weft_err *err)
{
  errno = 0;
  if (fflush(stdout) != 0 || ferror(stdout))
    return weft_errf(err, WEFT_EIO, "standard output: write error: %s",
                     strerror(errno ? errno : EIO));
  return 0;
}
