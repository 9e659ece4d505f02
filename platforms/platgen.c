/*
 * platgen.c - cluster to SimGrid platform XML.
 *
 * The file must stay small and fast to load at 16K GPUs, so every route is
 * declared once and marked symmetrical (SimGrid reverses it, flipping the
 * direction of SPLITDUPLEX links), and the hierarchy keeps each Full zone
 * small.  It must also keep SimGrid's max-min solver fast: a flow change
 * re-solves every flow linked to it through shared links, so the routes
 * carry no link that is shared but can never bind (platgen.h says which).
 */
#include "platforms/platgen.h"

#include <errno.h>
#include <limits.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "platforms/topo.h"
#include "sim/base/outfile.h"
#include "sim/base/xalloc.h"
#include "sim/base/units.h"

/* Bandwidth of the links that carry switch latency only: never binds. */
#define SWITCH_BW_Bps 1e15

double platgen_host_speed(const struct cluster *c)
{
  return c->gpu.peak_flops[DTYPE_BF16] > 0 ? c->gpu.peak_flops[DTYPE_BF16]
                                           : c->gpu.peak_flops[DTYPE_FP32];
}

/* v >= 0 in decimal, as "%d" writes it, at p; returns the end.  The
 * in-memory platform names and numbers every host this way: snprintf was
 * a fifth of the instructions of building a 32768-GPU platform
 * (callgrind). */
static char *put_decimal(char *p, long v)
{
  char d[24];
  int n = 0;
  do {
    d[n++] = (char)('0' + v % 10);
    v /= 10;
  } while (v);
  while (n)
    *p++ = d[--n];
  *p = '\0';
  return p;
}

void platgen_host_props(const struct cluster *c, int rank,
                        struct platgen_prop out[PLATGEN_HOST_PROPS])
{
  out[2].name = "wattage_per_state";
  snprintf(out[2].value, sizeof out[2].value, "%.6g:%.6g", c->gpu.idle_w,
           c->gpu.max_w);
  out[3].name = "wattage_off";
  snprintf(out[3].value, sizeof out[3].value, "0");
  platgen_host_props_rank(c, rank, out);
}

void platgen_host_props_rank(const struct cluster *c, int rank,
                             struct platgen_prop out[PLATGEN_HOST_PROPS])
{
  out[0].name = "node";
  put_decimal(out[0].value, rank / c->gpus_per_node);
  out[1].name = "local_rank";
  put_decimal(out[1].value, rank % c->gpus_per_node);
}

void platgen_host_name(int rank, char *buf, size_t size)
{
  if (rank < 0 || size < 24) {
    snprintf(buf, size, "gpu%d", rank);
    return;
  }
  memcpy(buf, "gpu", 3);
  put_decimal(buf + 3, rank);
}

long platgen_host_rank(const char *name)
{
  if (strncmp(name, "gpu", 3) != 0)
    return -1;
  const char *d = name + 3;
  if (*d < '0' || *d > '9' || (d[0] == '0' && d[1] != '\0'))
    return -1;
  long r = 0;
  for (; *d; d++) {
    if (*d < '0' || *d > '9' || r > (LONG_MAX - 9) / 10)
      return -1;
    r = r * 10 + (*d - '0');
  }
  return r;
}

double platgen_leaf_up_bw(const struct cluster *c, int leaf)
{
  return cluster_nodes_in_leaf(c, leaf) * c->nics_per_node * c->nic.bw_Bps /
         c->oversub;
}

double platgen_pod_up_bw(const struct cluster *c, int pod)
{
  double bw = 0;
  int first = pod * c->leaves_per_pod;
  for (int l = first; l < first + cluster_leaves_in_pod(c, pod); l++)
    bw += platgen_leaf_up_bw(c, l);
  return bw / c->pod_oversub;
}

struct out {
  FILE *f;
  char a[48], b[48]; /* scratch for numbers */
};

static const char *bw(struct out *o, double v)
{
  return units_fmt_exact(v, UNIT_BW, o->a, sizeof o->a);
}

static const char *lat(struct out *o, double v)
{
  return units_fmt_exact(v, UNIT_TIME, o->b, sizeof o->b);
}

static void link_sd(struct out *o, const char *ind, const char *id, double b,
                    double l)
{
  fprintf(o->f, "%s<link id=\"%s\" bandwidth=\"%s\" latency=\"%s\" "
          "sharing_policy=\"SPLITDUPLEX\"/>\n", ind, id, bw(o, b), lat(o, l));
}

/* Whether a tier's up-links can be a bottleneck: only when they have less
 * bandwidth than what they aggregate.  A leaf group's up-link at ratio 1
 * has exactly its NICs' bandwidth, and every flow through it crosses one
 * of those NICs, so it binds only when they all do: max-min sharing is the
 * same without it.  A pod's up-link at ratio 1 likewise has exactly the
 * bandwidth of the leaf up-links (or NICs) below it. */
static bool leaf_up_binds(const struct cluster *c) { return c->oversub > 1; }
static bool pod_up_binds(const struct cluster *c) { return c->pod_oversub > 1; }

/* Leaf groups are children of the root, with a route for every pair, up to
 * this many; beyond, pods are zones of their own (platgen.h). */
#define FLAT_LEAVES 256

static bool flat(const struct cluster *c) { return c->leaves <= FLAT_LEAVES; }

static int pod_of(const struct cluster *c, int leaf)
{
  return leaf / c->leaves_per_pod;
}

/* All links live in the first child zone, "links" (routing None: it holds
 * no hosts and routes nothing).  SimGrid 3.32 resolves a <link_ctn> by a
 * depth-first search of the zone tree from the root, one map lookup per
 * zone; with the links declared inside their node zones a 16K-GPU platform
 * took 16.6 s to load, with them here 1.6 s. */
static void write_links(struct out *o, const struct cluster *c)
{
  const char *ind = "    ";
  char id[64];
  double sw = c->switch_lat_s;
  fprintf(o->f, "  <zone id=\"links\" routing=\"None\">\n");
  for (int n = 0; n < c->nodes; n++) {
    int r0 = n * c->gpus_per_node;
    /* Half the GPU-to-GPU latency on each side of the NVSwitch. */
    for (int i = 0; i < c->gpus_per_node; i++) {
      snprintf(id, sizeof id, "gpu%d-nvl", r0 + i);
      link_sd(o, ind, id, c->gpu.nvlink_bw_Bps, c->nvlink_lat_s / 2);
    }
    for (int k = 0; k < c->nics_per_node; k++) {
      snprintf(id, sizeof id, "node%d-nic%d", n, k);
      link_sd(o, ind, id, c->nic.bw_Bps / cluster_nic_slowdown(c, n, k),
              c->nic.lat_s);
    }
    /* The node's side of its leaf switch: half a hop each way. */
    snprintf(id, sizeof id, "node%d-port", n);
    link_sd(o, ind, id, SWITCH_BW_Bps, sw / 2);
  }
  for (int l = 0; l < c->leaves; l++) {
    snprintf(id, sizeof id, "leaf%d-up", l);
    link_sd(o, ind, id, platgen_leaf_up_bw(c, l), 0);
  }
  for (int p = 0; p < c->pods; p++) {
    snprintf(id, sizeof id, "pod%d-up", p);
    link_sd(o, ind, id, platgen_pod_up_bw(c, p), 0);
  }
  /* Between two leaf groups: the hops beyond their leaf switches (a spine
   * in a pod; leaf, spine, core, spine across pods in flat mode). */
  for (int a = 0; a < c->leaves; a++)
    for (int b = a + 1; b < c->leaves; b++) {
      bool same = pod_of(c, a) == pod_of(c, b);
      if (!flat(c) && !same)
        continue;
      snprintf(id, sizeof id, "leaf%d-leaf%d", a, b);
      link_sd(o, ind, id, SWITCH_BW_Bps, (same ? 2 : 4) * sw);
    }
  /* Between two pods (pod zones only): spine, core, spine beyond the leaf
   * switches' leaf-to-pod hops. */
  if (!flat(c))
    for (int a = 0; a < c->pods; a++)
      for (int b = a + 1; b < c->pods; b++) {
        snprintf(id, sizeof id, "pod%d-pod%d", a, b);
        link_sd(o, ind, id, SWITCH_BW_Bps, 4 * sw);
      }
  fprintf(o->f, "  </zone>\n");
}

static void write_host(struct out *o, const struct cluster *c, int r,
                       const char *ind)
{
  FILE *f = o->f;
  char sp[48];
  units_fmt_exact(platgen_host_speed(c), UNIT_FLOPS, sp, sizeof sp);
  fprintf(f, "%s<host id=\"gpu%d\" speed=\"%s\">\n", ind, r, sp);
  struct platgen_prop pr[PLATGEN_HOST_PROPS];
  platgen_host_props(c, r, pr);
  for (int i = 0; i < PLATGEN_HOST_PROPS; i++)
    fprintf(f, "%s  <prop id=\"%s\" value=\"%s\"/>\n", ind, pr[i].name,
            pr[i].value);
  fprintf(f, "%s</host>\n", ind);
}

static void write_node(struct out *o, const struct cluster *c, int n,
                       const char *ind0)
{
  FILE *f = o->f;
  char ind[32];
  snprintf(ind, sizeof ind, "%s  ", ind0);
  int r0 = n * c->gpus_per_node;
  int g = c->gpus_per_node;
  fprintf(f, "%s<zone id=\"node%d\" routing=\"Full\">\n", ind0, n);
  for (int i = 0; i < g; i++)
    write_host(o, c, r0 + i, ind);
  fprintf(f, "%s<router id=\"node%d-gw\"/>\n", ind, n);
  for (int i = 0; i < g; i++)
    for (int j = i + 1; j < g; j++)
      fprintf(f, "%s<route src=\"gpu%d\" dst=\"gpu%d\"><link_ctn "
              "id=\"gpu%d-nvl\" direction=\"UP\"/><link_ctn id=\"gpu%d-nvl\" "
              "direction=\"DOWN\"/></route>\n", ind, r0 + i, r0 + j, r0 + i,
              r0 + j);
  int per_nic = g / c->nics_per_node;
  for (int i = 0; i < g; i++)
    fprintf(f, "%s<route src=\"gpu%d\" dst=\"node%d-gw\"><link_ctn "
            "id=\"node%d-nic%d\" direction=\"UP\"/></route>\n", ind, r0 + i,
            n, n, i / per_nic);
  fprintf(f, "%s</zone>\n", ind0);
}

static void write_leaf(struct out *o, const struct cluster *c, int l,
                       const char *ind0)
{
  FILE *f = o->f;
  char ind[32];
  snprintf(ind, sizeof ind, "%s  ", ind0);
  int n0 = l * c->nodes_per_leaf, nn = cluster_nodes_in_leaf(c, l);
  fprintf(f, "%s<zone id=\"leaf%d\" routing=\"Full\">\n", ind0, l);
  fprintf(f, "%s<zone id=\"leaf%d-up\" routing=\"Full\"><router "
          "id=\"leaf%d-r\"/></zone>\n", ind, l, l);
  for (int n = n0; n < n0 + nn; n++)
    write_node(o, c, n, ind);
  for (int a = n0; a < n0 + nn; a++)
    for (int b = a + 1; b < n0 + nn; b++)
      fprintf(f, "%s<zoneRoute src=\"node%d\" dst=\"node%d\" "
              "gw_src=\"node%d-gw\" gw_dst=\"node%d-gw\"><link_ctn "
              "id=\"node%d-port\" direction=\"UP\"/><link_ctn "
              "id=\"node%d-port\" direction=\"DOWN\"/></zoneRoute>\n", ind, a,
              b, a, b, a, b);
  for (int a = n0; a < n0 + nn; a++)
    fprintf(f, "%s<zoneRoute src=\"node%d\" dst=\"leaf%d-up\" "
            "gw_src=\"node%d-gw\" gw_dst=\"leaf%d-r\"><link_ctn "
            "id=\"node%d-port\" direction=\"UP\"/></zoneRoute>\n", ind, a, l,
            a, l, a);
  fprintf(f, "%s</zone>\n", ind0);
}

static void ctn(FILE *f, const char *dir, const char *fmt, int x, int y)
{
  char id[64];
  snprintf(id, sizeof id, fmt, x, y);
  fprintf(f, "<link_ctn id=\"%s\" direction=\"%s\"/>", id, dir);
}

/* The route between leaf groups a < b of the zone being written: their
 * up-links where those can bind, their pods' too when the pods differ,
 * then the link of the hops between them. */
static void write_leaf_pair(FILE *f, const struct cluster *c, int a, int b,
                            const char *ind)
{
  bool pods = pod_of(c, a) != pod_of(c, b);
  fprintf(f, "%s<zoneRoute src=\"leaf%d\" dst=\"leaf%d\" gw_src=\"leaf%d-r\" "
          "gw_dst=\"leaf%d-r\">", ind, a, b, a, b);
  if (leaf_up_binds(c))
    ctn(f, "UP", "leaf%d-up", a, 0);
  if (pods && pod_up_binds(c)) {
    ctn(f, "UP", "pod%d-up", pod_of(c, a), 0);
    ctn(f, "DOWN", "pod%d-up", pod_of(c, b), 0);
  }
  if (leaf_up_binds(c))
    ctn(f, "DOWN", "leaf%d-up", b, 0);
  ctn(f, "UP", "leaf%d-leaf%d", a, b);
  fprintf(f, "</zoneRoute>\n");
}

/* A pod zone (pod mode): its leaf groups, a route for every pair, and each
 * group's way to the pod's router: its up-link (carrying the pod's traffic
 * to other pods, so that no link shared by the whole pod joins those flows
 * into one max-min system) and the pod's up-link where it can bind. */
static void write_pod(struct out *o, const struct cluster *c, int p)
{
  FILE *f = o->f;
  const char *ind = "    ";
  int l0 = p * c->leaves_per_pod, nl = cluster_leaves_in_pod(c, p);
  fprintf(f, "  <zone id=\"pod%d\" routing=\"Full\">\n", p);
  fprintf(f, "%s<zone id=\"pod%d-up\" routing=\"Full\"><router "
          "id=\"pod%d-r\"/></zone>\n", ind, p, p);
  for (int l = l0; l < l0 + nl; l++)
    write_leaf(o, c, l, ind);
  for (int a = l0; a < l0 + nl; a++)
    for (int b = a + 1; b < l0 + nl; b++)
      write_leaf_pair(f, c, a, b, ind);
  for (int a = l0; a < l0 + nl; a++) {
    fprintf(f, "%s<zoneRoute src=\"leaf%d\" dst=\"pod%d-up\" "
            "gw_src=\"leaf%d-r\" gw_dst=\"pod%d-r\">", ind, a, p, a, p);
    ctn(f, "UP", "leaf%d-up", a, 0);
    if (pod_up_binds(c))
      ctn(f, "UP", "pod%d-up", p, 0);
    fprintf(f, "</zoneRoute>\n");
  }
  fprintf(f, "  </zone>\n");
}

static void write_header(struct out *o, const struct cluster *c)
{
  FILE *f = o->f;
  char b1[48], b2[48];
  fprintf(f, "<?xml version='1.0'?>\n"
          "<!DOCTYPE platform SYSTEM \"https://simgrid.org/simgrid.dtd\">\n");
  fprintf(f, "<!--\n  SimGrid platform written by weft (weft platform %s).\n",
          c->name);
  if (c->description[0])
    fprintf(f, "  %s\n", c->description);
  fprintf(f, "\n  %d GPUs: %d nodes of %d x %s (%s), node type %s.\n",
          c->gpus, c->nodes, c->gpus_per_node, c->gpu.name,
          units_fmt_human(c->gpu.peak_flops[DTYPE_BF16], UNIT_FLOPS, b1,
                          sizeof b1), c->node_type);
  if (c->gpus_per_node < c->rack_gpus)
    fprintf(f, "  Each node is one rack (one NVLink domain): the job uses "
            "%d of its %d\n  trays of %d GPUs; the other %d GPUs are idle, "
            "not part of the job.\n", c->gpus_per_node / c->tray,
            c->rack_gpus / c->tray, c->tray, c->rack_gpus - c->gpus_per_node);
  fprintf(f, "  NVLink: %s per direction per GPU, %s GPU to GPU.\n",
          units_fmt_human(c->gpu.nvlink_bw_Bps, UNIT_BW, b1, sizeof b1),
          units_fmt_human(c->nvlink_lat_s, UNIT_TIME, b2, sizeof b2));
  fprintf(f, "  NICs: %d x %s per node (%s, %s), %d GPU(s) per NIC.\n",
          c->nics_per_node, c->nic.name,
          units_fmt_human(c->nic.bw_Bps, UNIT_BW, b1, sizeof b1),
          units_fmt_human(c->nic.lat_s, UNIT_TIME, b2, sizeof b2),
          c->gpus_per_node / c->nics_per_node);
  topo_describe(f, c);
  if (c->scale.compute != 1 || c->scale.hbm_bw != 1 || c->scale.hbm_cap != 1 ||
      c->scale.nvlink != 1 || c->scale.nic != 1)
    fprintf(f, "  What-if scaling: compute x%g, HBM bw x%g, HBM capacity "
            "x%g, NVLink x%g, NIC x%g.\n", c->scale.compute, c->scale.hbm_bw,
            c->scale.hbm_cap, c->scale.nvlink, c->scale.nic);
  fprintf(f, "  GPU numbers: %s.\n  NIC numbers: %s.\n", c->gpu.source,
          c->nic.source);
  fprintf(f, "\n  Host speed is the GPU's dense BF16 peak; weft times kernels "
          "with its own\n  cost model.  The network model is CM02 without "
          "cross-traffic, so that a\n  flow's time is latency + size / "
          "bandwidth share (SimGrid's default LV08\n  factors are tuned for "
          "MPI over TCP, not for NVLink or InfiniBand RDMA).\n-->\n");
  fprintf(f, "<platform version=\"4.1\">\n");
  fprintf(f, "<config>\n"
          "  <prop id=\"network/model\" value=\"CM02\"/>\n"
          "  <prop id=\"network/crosstraffic\" value=\"0\"/>\n"
          "</config>\n");
}

/* A fabric whose routes do not factor through node gateways (topo.h), as
 * one Full zone with a route for every ordered pair of GPUs.  Switch hops
 * ride on latency-only links "hops<i>", one per distinct latency. */
static int write_flat(struct out *o, const struct cluster *c,
                      struct weft_err *err)
{
  FILE *f = o->f;
  if (c->gpus > TOPO_XML_MAX_GPUS)
    return weft_errf(err, WEFT_ELIMIT, "topology %s%s at %d GPUs: its routes "
                     "depend on both GPUs, so its XML lists one per pair "
                     "(%ld); weft platform writes it up to %d GPUs, weft run "
                     "builds it in memory at any size",
                     topology_name(c->topology),
                     c->nvl_rack < c->gpus_per_node ? " with two NVLink tiers"
                                                    : "",
                     c->gpus, (long)c->gpus * (c->gpus - 1),
                     TOPO_XML_MAX_GPUS);
  struct topo t;
  int rc = topo_build(&t, c, err);
  if (rc)
    return rc;
  struct topo_hop *h = xcalloc((size_t)topo_max_hops(&t), sizeof *h);
  double lats[64];
  int nlat = 0;
  for (long a = 0; a < c->gpus; a++)
    for (long b = 0; b < c->gpus; b++) {
      double x;
      if (a == b)
        continue;
      (void)topo_route(&t, a, b, h, &x);
      int i = 0;
      while (i < nlat && lats[i] != x)
        i++;
      if (i == nlat && x > 0 && nlat < 64)
        lats[nlat++] = x;
    }
  char id[64];
  fprintf(f, "<zone id=\"weft\" routing=\"Full\">\n");
  for (long i = 0; i < t.nlinks; i++) {
    topo_link_name(&t, i, id, sizeof id);
    link_sd(o, "  ", id, t.link[i].bw, t.link[i].lat);
  }
  for (int i = 0; i < nlat; i++)
    fprintf(f, "  <link id=\"hops%d\" bandwidth=\"%s\" latency=\"%s\" "
            "sharing_policy=\"FATPIPE\"/>\n", i, bw(o, SWITCH_BW_Bps),
            lat(o, lats[i]));
  for (long r = 0; r < c->gpus; r++)
    write_host(o, c, (int)r, "  ");
  for (long a = 0; a < c->gpus; a++)
    for (long b = 0; b < c->gpus; b++) {
      double x;
      if (a == b)
        continue;
      int n = topo_route(&t, a, b, h, &x);
      fprintf(f, "  <route src=\"gpu%ld\" dst=\"gpu%ld\" "
              "symmetrical=\"NO\">", a, b);
      for (int i = 0; i < n; i++) {
        topo_link_name(&t, h[i].link, id, sizeof id);
        fprintf(f, "<link_ctn id=\"%s\" direction=\"%s\"/>", id,
                h[i].down ? "DOWN" : "UP");
      }
      for (int i = 0; i < nlat; i++)
        if (lats[i] == x)
          fprintf(f, "<link_ctn id=\"hops%d\"/>", i);
      fprintf(f, "</route>\n");
    }
  fprintf(f, "</zone>\n");
  free(h);
  topo_free(&t);
  return 0;
}

int platgen_write(const struct cluster *c, FILE *f, struct weft_err *err)
{
  struct out o = {.f = f};
  if (!topo_xml_hierarchical(c) && c->gpus > TOPO_XML_MAX_GPUS)
    return write_flat(&o, c, err); /* refused before any output */
  write_header(&o, c);
  if (!topo_xml_hierarchical(c)) {
    int rc = write_flat(&o, c, err);
    if (rc)
      return rc;
    fprintf(f, "</platform>\n");
    if (ferror(f))
      return weft_errf(err, WEFT_EIO, "write error: %s", strerror(errno));
    return 0;
  }
  fprintf(f, "<zone id=\"weft\" routing=\"Full\">\n");
  write_links(&o, c);
  if (flat(c)) {
    for (int l = 0; l < c->leaves; l++)
      write_leaf(&o, c, l, "  ");
    for (int a = 0; a < c->leaves; a++)
      for (int b = a + 1; b < c->leaves; b++)
        write_leaf_pair(f, c, a, b, "  ");
  } else {
    for (int p = 0; p < c->pods; p++)
      write_pod(&o, c, p);
    for (int a = 0; a < c->pods; a++)
      for (int b = a + 1; b < c->pods; b++)
        fprintf(f, "  <zoneRoute src=\"pod%d\" dst=\"pod%d\" "
                "gw_src=\"pod%d-r\" gw_dst=\"pod%d-r\"><link_ctn "
                "id=\"pod%d-pod%d\" direction=\"UP\"/></zoneRoute>\n", a, b,
                a, b, a, b);
  }
  fprintf(f, "</zone>\n</platform>\n");
  if (ferror(f))
    return weft_errf(err, WEFT_EIO, "write error: %s", strerror(errno));
  return 0;
}

int platgen_write_file(const struct cluster *c, const char *path,
                       struct weft_err *err)
{
  struct outfile out;
  int rc = outfile_open(&out, path, err);
  if (rc)
    return rc;
  rc = platgen_write(c, out.f, err);
  if (rc) {
    outfile_abort(&out);
    return strcmp(path, "-") ? weft_err_prefix(err, path) : rc;
  }
  return outfile_commit(&out, err);
}
