/*
 * bench_platform.c - build one cluster platform in SimGrid, print figures.
 *
 *   bench_platform PRESET GPUS [memory|xml]
 *
 * memory (the default; what weft run does, sim/platload.c's
 * platload_cluster): prints "gpus=N build_s=T cpu_s=T peak_rss_mb=M", where
 * build_s (wall) and cpu_s (the process's CPU time, which a shared machine
 * inflates less) cover the fabric (platforms/topo.c) and the SimGrid zone,
 * its links and hosts, sealed.  xml: generate platgen's XML into a file and load it;
 * prints "gpus=N xml_bytes=B gen_s=T load_s=T peak_rss_mb=M".  One engine
 * per process: tests/bench/run_platform.sh calls it repeatedly and takes
 * medians.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
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

static double cpu_now(void)
{
  struct timespec t;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
  return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static double peak_rss_mb(void)
{
  struct rusage ru;
  getrusage(RUSAGE_SELF, &ru);
  return (double)ru.ru_maxrss / 1024.0;
}

int main(int argc, char **argv)
{
  if (argc != 3 && argc != 4) {
    fprintf(stderr, "usage: bench_platform PRESET GPUS [memory|xml]\n");
    return 2;
  }
  const char *mode = argc == 4 ? argv[3] : "memory";
  if (strcmp(mode, "memory") != 0 && strcmp(mode, "xml") != 0) {
    fprintf(stderr, "bench_platform: mode '%s': expected memory or xml\n",
            mode);
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
  if (strcmp(mode, "memory") == 0) {
    platload_boot(0);
    double t0 = now(), c0 = cpu_now();
    if (platload_cluster(&c, &err)) {
      fprintf(stderr, "bench_platform: %s\n", err.msg);
      return 1;
    }
    double t1 = now(), c1 = cpu_now();
    printf("gpus=%d build_s=%.3f cpu_s=%.3f peak_rss_mb=%.1f\n", c.gpus,
           t1 - t0, c1 - c0, peak_rss_mb());
    catalog_free(cat);
    return 0;
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
  printf("gpus=%d xml_bytes=%lld gen_s=%.3f load_s=%.3f peak_rss_mb=%.1f\n",
         c.gpus, (long long)st.st_size, t1 - t0, t2 - t1, peak_rss_mb());
  unlink(path);
  catalog_free(cat);
  return 0;
}
