/*
 * bench_platform.c - generate and load one cluster platform, print figures.
 *
 *   bench_platform PRESET GPUS
 *
 * prints "gpus=N xml_bytes=B gen_s=T load_s=T peak_rss_mb=M".  One engine per
 * process: tests/bench/run_platform.sh calls it repeatedly and takes medians.
 */
#include <stdio.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "platforms/platgen.h"
#include "sim/platload.h"

static double now(void)
{
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

int main(int argc, char **argv)
{
  if (argc != 3) {
    fprintf(stderr, "usage: bench_platform PRESET GPUS\n");
    return 2;
  }
  struct weft_err err = {0};
  struct catalog *cat = catalog_builtin(&err);
  struct cluster_desc d;
  struct cluster c;
  cluster_desc_init(&d);
  if (!cat || cluster_desc_preset(&d, argv[1], &err) ||
      cluster_desc_set(&d, CK_GPUS, argv[2], "GPUS", 2, &err) ||
      cluster_resolve(&d, cat, &c, &err)) {
    fprintf(stderr, "bench_platform: %s\n", err.msg);
    return 1;
  }
  char path[] = "/tmp/weft-bench-XXXXXX";
  int fd = mkstemp(path);
  close(fd);
  double t0 = now();
  if (platgen_write_file(&c, path, &err)) {
    fprintf(stderr, "bench_platform: %s\n", err.msg);
    return 1;
  }
  double t1 = now();
  struct stat st;
  stat(path, &st);
  platload_boot(0);
  if (platload_file(path, &err)) {
    fprintf(stderr, "bench_platform: %s\n", err.msg);
    return 1;
  }
  double t2 = now();
  struct rusage ru;
  getrusage(RUSAGE_SELF, &ru);
  printf("gpus=%d xml_bytes=%lld gen_s=%.3f load_s=%.3f peak_rss_mb=%.1f\n",
         c.gpus, (long long)st.st_size, t1 - t0, t2 - t1,
         (double)ru.ru_maxrss / 1024.0);
  unlink(path);
  catalog_free(cat);
  return 0;
}
