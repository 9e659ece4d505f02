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
#include <simgrid/host.h>
#include <simgrid/link.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "platforms/platgen.h"
#include "platforms/topo.h"
#include "sim/base/xalloc.h"
#include "sim/sgbridge.h"
#include "sim/symmetry.h"

/* SimGrid's engine is not torn down at exit (sgb_boot): the platform's
 * memory goes back with the process. */
void platload_boot(int verbose)
{
  static char a0[] = "weft";
  static char a1[] = "--log=root.thres:critical";
  static char a2[] = "--cfg=contexts/factory:raw";
  static char a3[] = "--cfg=debug/clean-atexit:no";
  char *argv[] = {a0, a1, a2, a3, NULL};
  int argc = 4;
  if (verbose || getenv("WEFT_SIMGRID_LOG")) {
    argv[1] = a3;
    argc = 3;
  }
  sgb_boot(&argc, argv);
}

int platload_file(const char *path, struct weft_err *err)
{
  if (access(path, R_OK) != 0)
    return weft_errf(err, WEFT_EIO, "%s: cannot read: %s", path,
                     strerror(errno));
  simgrid_load_platform(path);
  return 0;
}

/* The fabric of an in-memory platform: its routes are computed from it for
 * as long as the engine runs. */
static struct topo the_topo;
static bool have_topo;
static struct topo_hop *hop_buf; /* topo_max_hops of them */

const struct topo *platload_topo(void) { return have_topo ? &the_topo : NULL; }

/* Twin hosts (platload.h): hosts c->gpus + k, k < gpus_per_node. */
static sg_host_t twins[WEFT_MAX_TWINS];
static int ntwins;

/* The route from GPU a into twin k: a's route to GPU k of another node of
 * a's leaf group, whose last hop, that GPU's NIC down, is replaced by the
 * NIC of a's own GPU k, with no latency.  On the non-blocking fat tree that is a's NIC up,
 * one switch and that NIC down (platforms/topo.c, tiered_route: no
 * up-link where none can bind), the route between any two nodes of a
 * leaf group, with its latency. */
static int twin_route(const struct topo *t, long a, int k, struct topo_hop *h,
                      double *extra)
{
  const struct cluster *c = &t->c;
  long na = a / c->gpus_per_node, leaf = na / c->nodes_per_leaf;
  long nb = na + 1;
  if (nb >= c->nodes || nb / c->nodes_per_leaf != leaf)
    nb = na - 1;
  int n = topo_route(t, a, nb * c->gpus_per_node + k, h, extra);
  /* symmetry_twins: a NIC per GPU, so the NIC's index is the GPU's */
  h[n - 1].link = (int32_t)(t->b_nic + na * c->nics_per_node + k);
  /* No latency: the sum the bridge makes of the links' latencies and
   * *extra (sgbridge.cpp, ComputedZone), in its order, cancelled; the
   * engine waits out the route's latency before the flow starts
   * (engine.c, emit_twin; sgb_comm_weighted says why). */
  double lat = 0;
  for (int i = 0; i < n; i++)
    lat += t->link[h[i].link].lat;
  *extra = -lat;
  return n;
}

static int route_cb(void *ctx, long a, long b, int32_t *links, int32_t *dirs,
                    double *extra)
{
  const struct topo *t = ctx;
  struct topo_hop *h = hop_buf;
  int n = b >= t->c.gpus && a < t->c.gpus
              ? twin_route(t, a, (int)(b - t->c.gpus), h, extra)
              : topo_route(t, a, b, h, extra);
  for (int i = 0; i < n; i++) {
    links[i] = h[i].link;
    dirs[i] = h[i].down;
  }
  return n;
}

static void free_topo(void)
{
  topo_free(&the_topo);
  free(hop_buf);
}

struct platload_thinned {
  long n;
  sg_link_t *link;
  double *bw_Bps; /* before */
};

/* SimGrid names the directions of a SPLITDUPLEX link NAME_UP and
 * NAME_DOWN. */
int platload_thin_node_shared(long divisor, struct platload_thinned **out,
                              struct weft_err *err)
{
  static const char *const dir[2] = {"UP", "DOWN"};
  const struct topo *t = platload_topo();
  if (!t)
    return weft_errf(err, WEFT_EINVAL, "TP symmetry on this fabric needs "
                     "the platform built by platload_cluster");
  struct platload_thinned *th = xcalloc(1, sizeof *th);
  th->link = xcalloc(2 * (size_t)t->nlinks, sizeof *th->link);
  th->bw_Bps = xcalloc(2 * (size_t)t->nlinks, sizeof *th->bw_Bps);
  char name[64], id[80];
  for (long i = 0; i < t->nlinks; i++)
    if (topo_link_node_shared(t, i))
      for (int d = 0; d < 2; d++) {
        topo_link_name(t, i, name, sizeof name);
        snprintf(id, sizeof id, "%s_%s", name, dir[d]);
        sg_link_t l = sg_link_by_name(id);
        if (!l)
          continue;
        th->link[th->n] = l;
        th->bw_Bps[th->n++] = sg_link_get_bandwidth(l);
        sg_link_set_bandwidth(l, sg_link_get_bandwidth(l) / (double)divisor);
      }
  *out = th;
  return 0;
}

void platload_thin_restore(struct platload_thinned *th)
{
  if (!th)
    return;
  for (long i = 0; i < th->n; i++)
    sg_link_set_bandwidth(th->link[i], th->bw_Bps[i]);
  free(th->link);
  free(th->bw_Bps);
  free(th);
}

/* Build the cluster's zone in memory (topo.h says when and why). */
static int build_in_memory(const struct cluster *c, struct weft_err *err)
{
  int rc = topo_build(&the_topo, c, err);
  if (rc)
    return rc;
  have_topo = true;
  const struct topo *t = &the_topo;
  hop_buf = xcalloc((size_t)topo_max_hops(t), sizeof *hop_buf);
  atexit(free_topo);
  sgb_zone_begin("weft", route_cb, &the_topo, topo_max_hops(t));
  char name[64];
  for (long i = 0; i < t->nlinks; i++) {
    topo_link_name(t, i, name, sizeof name);
    sgb_zone_link(name, t->link[i].bw, t->link[i].lat);
  }
  double speed = platgen_host_speed(c);
  struct platgen_prop pr[PLATGEN_HOST_PROPS];
  platgen_host_props(c, 0, pr);
  for (long r = 0; r < c->gpus; r++) {
    platgen_host_name((int)r, name, sizeof name);
    sg_host_t h = sgb_zone_host(name, speed);
    platgen_host_props_rank(c, (int)r, pr);
    for (int i = 0; i < PLATGEN_HOST_PROPS; i++)
      sg_host_set_property_value(h, pr[i].name, pr[i].value);
  }
  /* Twin hosts: no GPU's name (platgen_host_rank ignores them), no
   * properties; only the quotient's flows end on them, so they are added
   * only where its opt-in is set (engine.c reads the same variable);
   * other platforms keep one host per GPU. */
  const char *eps = getenv("WEFT_EP_SYMMETRY");
  ntwins = symmetry_twins(c) && eps && !strcmp(eps, "on")
               ? c->gpus_per_node
               : 0;
  for (int k = 0; k < ntwins; k++) {
    snprintf(name, sizeof name, "twin%d", k);
    twins[k] = sgb_zone_host(name, speed);
  }
  sgb_zone_end();
  return 0;
}

struct s4u_Host *platload_twin(int k)
{
  return k >= 0 && k < ntwins ? twins[k] : NULL;
}

int platload_cluster(const struct cluster *c, struct weft_err *err)
{
  return build_in_memory(c, err);
}

/* The platform is written to an anonymous in-memory file and SimGrid
 * reads it through /proc/self/fd: nothing is left on disk if the run is
 * killed (a 131072-GPU platform is 178 MB).  Where memfd is missing, a
 * temporary file, unlinked as soon as SimGrid has read it. */
int platload_cluster_xml(const struct cluster *c, struct weft_err *err)
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
