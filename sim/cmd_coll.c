/*
 * cmd_coll.c - `weft coll OP [flags]`: simulate one collective over a range
 * of sizes on a cluster, and print time, algorithm and bus bandwidth as
 * nccl-tests does (algbw = S / t; busbw = algbw x 2(n-1)/n for all-reduce,
 * (n-1)/n for all-gather, reduce-scatter and all-to-all, 1 for broadcast).
 *
 * All sizes run in one simulation, one after the other, over all the GPUs
 * of the cluster (ranks in GPU order, as nccl-tests places them).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sim/base/units.h"
#include "sim/base/xalloc.h"
#include "sim/engine.h"
#include "sim/platload.h"
#include "sim/report.h"
#include "sim/commands.h"

static const struct {
  const char *name;
  enum coll_op op;
} ops[] = {
    {"allreduce", CO_ALLREDUCE},         {"all_reduce", CO_ALLREDUCE},
    {"allgather", CO_ALLGATHER},         {"all_gather", CO_ALLGATHER},
    {"reducescatter", CO_REDUCE_SCATTER}, {"reduce_scatter", CO_REDUCE_SCATTER},
    {"alltoall", CO_ALLTOALL},           {"broadcast", CO_BROADCAST},
};

struct times {
  double *start, *end;
};

static void on_task(void *ctx, long rank, long task, double s, double e)
{
  struct times *t = ctx;
  if (rank == 0) {
    t->start[task] = s;
    t->end[task] = e;
  }
}

/* The keys of the options below (opts_get), one per entry. */
enum coll_opt {
  COLL_JSON, COLL_MIN_BYTES, COLL_MAX_BYTES, COLL_STEP_FACTOR, COLL_NGPUS,
  COLL_COLLECTIVE, COLL_FIDELITY, COLL_COUNT
};

static const struct opt coll_opts[] = {
    [COLL_JSON] = {"json", 0, OPT_FLAG, NULL,
      "print one JSON object with a result per size"},
    [COLL_MIN_BYTES] = {"min-bytes", 'b', OPT_VALUE, "SIZE",
      "smallest size: bytes, or with a unit as 8KiB (default 1MiB)"},
    [COLL_MAX_BYTES] = {"max-bytes", 'e', OPT_VALUE, "SIZE",
      "largest size (default 8GiB)"},
    [COLL_STEP_FACTOR] = {"step-factor", 'f', OPT_VALUE, "F",
      "ratio of successive sizes (default 2)"},
    [COLL_NGPUS] = {"ngpus", 'g', OPT_VALUE, "N",
      "GPUs in all, as --gpus (nccl-tests' -g with one process)"},
    [COLL_COLLECTIVE] = {"collective", 0, OPT_VALUE, "ALGO",
      "collective algorithm (weft list collectives)"},
    [COLL_FIDELITY] = {"fidelity", 0, OPT_VALUE, "flow|step|auto",
      "fidelity of rings"},
    [COLL_COUNT] = {NULL, 0, 0, NULL, NULL},
};
OPTS_CHECK_TABLE(coll_opts, COLL_COUNT);

const struct opts_spec cmd_coll_spec = {
    "coll", POS_NONE, "OP", OPTS_CATALOG | OPTS_CLUSTER, coll_opts,
    "Simulates one collective over a range of sizes on a cluster (default\n"
    "dgx-h100) and prints time, algorithm and bus bandwidth per size, as\n"
    "nccl-tests does; -b, -e, -f and -g are nccl-tests' short options.",
    "  weft coll allreduce --gpus 16 --min-bytes 1MiB --max-bytes 1GiB\n"
    "  weft coll allreduce -b 8 -e 128M -f 2 -g 8\n"
    "  weft coll allgather --cluster selene --gpus 64 --collective ring --json\n"};

/* What to simulate: the operation, the sizes, the algorithm. */
struct coll_job {
  int op;
  double minb, maxb, factor;
  int algo, fid;
  bool json;
};

/* A size of --min-bytes or --max-bytes: a bare count is bytes, as
 * nccl-tests reads -b and -e (src/common.cu, parsesize), and nccl-tests'
 * K, M and G suffixes are binary (parsesize multiplies by 1024). */
static int parse_size(const char *v, double *out, struct weft_err *err)
{
  char buf[64];
  size_t n = strlen(v), digits = strspn(v, "0123456789");
  if (n > 0 && n < sizeof buf - 4 && digits == n) {
    snprintf(buf, sizeof buf, "%sB", v);
    v = buf;
  } else if (n > 1 && n < sizeof buf - 4 && digits == n - 1 &&
             strchr("KMG", v[n - 1])) {
    snprintf(buf, sizeof buf, "%.*s%ciB", (int)digits, v, v[n - 1]);
    v = buf;
  }
  return units_parse_pos(v, UNIT_SIZE, 1e12, out, err);
}

/* The command's options into *j; a message and its exit code on error. */
static int coll_options(const struct opts *o, struct coll_job *j)
{
  struct weft_err err = {0};
  const char *v;
  j->minb = 1 << 20;
  j->maxb = 8.0 * (1 << 30);
  j->factor = 2;
  j->algo = CA_AUTO;
  j->fid = FID_FLOW;
  if ((v = opts_get(o, COLL_MIN_BYTES)) &&
      parse_size(v, &j->minb, &err))
    return cli_fail((weft_err_prefix(&err, "--min-bytes"), &err));
  if ((v = opts_get(o, COLL_MAX_BYTES)) &&
      parse_size(v, &j->maxb, &err))
    return cli_fail((weft_err_prefix(&err, "--max-bytes"), &err));
  /* A maximum below the default minimum alone: one size, the maximum. */
  if (v && !opts_get(o, COLL_MIN_BYTES) && j->maxb < j->minb)
    j->minb = j->maxb;
  if ((v = opts_get(o, COLL_STEP_FACTOR)) &&
      units_parse_real(v, 1.01, 1024, &j->factor, &err))
    return cli_fail((weft_err_prefix(&err, "--step-factor"), &err));
  if ((v = opts_get(o, COLL_COLLECTIVE)) &&
      (j->algo = coll_algo_from_name(v)) < 0)
    return cli_usage("--collective: unknown algorithm '%s' (see weft "
                     "list collectives)", v);
  if ((v = opts_get(o, COLL_FIDELITY)) &&
      (j->fid = fidelity_from_name(v)) < 0)
    return cli_usage("--fidelity: '%s' is not flow, step or auto", v);
  j->json = opts_get(o, COLL_JSON) != NULL;
  if (j->minb > j->maxb)
    return cli_usage("coll: --min-bytes exceeds --max-bytes");
  return 0;
}

/* One task per size on the compute stream of every GPU: the sizes run one
 * after the other in one simulation.  Returns the graph; *sizes of them. */
static struct graph *coll_graph(const struct coll_job *j, long n, long *sizes)
{
  struct graph *g = graph_new(1);
  /* One data-parallel group of every GPU: on a symmetric fabric its rings
   * and trees run as node 0's flows (coll.h, rep), the same times. */
  g->layout = (struct graph_layout){1, 1, n, 1, 1, 1,
                                    {PD_TP, PD_CP, PD_DP, PD_PP}, 0,
                                    {0, 0, 0}, 0, 0};
  *sizes = 0;
  for (double s = j->minb; s <= j->maxb * 1.000001 && *sizes < 64;
       s *= j->factor) {
    struct task t = {.kind = TK_COLL, .op = (uint8_t)j->op,
                     .stream = ST_COMPUTE, .group = GK_DP, .chunk = -1,
                     .mb = -1, .layer = -1, .bytes = (double)(long long)s};
    graph_add(g, 0, &t);
    (*sizes)++;
  }
  return g;
}

/* The results, as nccl-tests prints them or as one JSON object. */
static void coll_print(const struct coll_job *j, const struct cluster *c,
                       const struct graph *g, long sizes,
                       const struct times *tm)
{
  long n = c->gpus;
  int op = j->op;
  double f = op == CO_ALLREDUCE ? 2.0 * (n - 1) / n
             : op == CO_BROADCAST ? 1.0 : (double)(n - 1) / n;
  if (j->json)
    printf("{\"op\": \"%s\", \"algorithm\": \"%s\", \"gpus\": %ld, "
           "\"cluster\": \"%s\", \"gpu\": \"%s\", \"nodes\": %d, "
           "\"results\": [", coll_op_name((enum coll_op)op),
           coll_algo_name((enum coll_algo)j->algo), n, c->name, c->gpu.name,
           c->nodes);
  for (long i = 0; i < sizes; i++) {
    double S = g->prog[0].tasks[i].bytes, t = tm->end[i] - tm->start[i];
    double alg = t > 0 ? S / t / 1e9 : NAN;
    if (j->json) {
      printf("%s{\"bytes\": %.0f", i ? ", " : "", S);
      report_json_num(stdout, ", ", "time_s", "%.9g", t);
      report_json_num(stdout, ", ", "algbw_GBps", "%.6g", alg);
      report_json_num(stdout, ", ", "busbw_GBps", "%.6g", alg * f);
      printf("}");
      continue;
    }
    if (i == 0)
      printf("# %s (%s) on %ld x %s (%s, %d node%s)\n#%13s %12s %10s "
             "%10s\n", coll_op_name((enum coll_op)op),
             coll_algo_name((enum coll_algo)j->algo), n, c->gpu.name, c->name,
             c->nodes, c->nodes == 1 ? "" : "s", "size (B)", "time (us)", "algbw GB/s", "busbw GB/s");
    /* One GPU moves nothing in no time: no bandwidth to print (JSON's
     * null above), rather than inf and nan. */
    if (t > 0)
      printf("%14.0f %12.2f %10.2f %10.2f\n", S, t * 1e6, alg, alg * f);
    else
      printf("%14.0f %12.2f %10s %10s\n", S, t * 1e6, "-", "-");
  }
  if (j->json)
    printf("]}\n");
}

int cmd_coll(int argc, char **argv)
{
  struct weft_err err = {0};
  if (argc >= 2 && (strcmp(argv[1], "--help") == 0 ||
                    strcmp(argv[1], "-h") == 0)) {
    opts_usage(stdout, &cmd_coll_spec);
    return 0;
  }
  if (argc < 2 || strncmp(argv[1], "--", 2) == 0)
    return cli_usage("coll: give an operation: allreduce, allgather, "
                     "reducescatter, alltoall or broadcast");
  struct coll_job j = {.op = -1};
  for (size_t i = 0; i < sizeof ops / sizeof *ops; i++)
    if (strcmp(argv[1], ops[i].name) == 0)
      j.op = (int)ops[i].op;
  if (j.op < 0)
    return cli_usage("coll: unknown operation '%s'; expected allreduce, "
                     "allgather, reducescatter, alltoall or broadcast",
                     argv[1]);
  struct opts o;
  int rc;
  if (cli_parse(&cmd_coll_spec, argc - 1, argv + 1, &o, &rc) ||
      (rc = coll_options(&o, &j)))
    return rc;
  const char *ngpus = opts_get(&o, COLL_NGPUS);
  if (ngpus && opts_has(&o, "gpus"))
    return cli_usage("-g: given with --gpus (they are the same)");
  if (ngpus)
    opts_prepend(&o, "gpus", ngpus);
  struct catalog *cat;
  struct cluster c;
  if (opts_cluster(&o, "dgx-h100", &cat, &c, &err))
    return cli_fail(&err);
  long sizes;
  struct graph *g = coll_graph(&j, c.gpus, &sizes);
  struct times tm = {xcalloc((size_t)sizes, sizeof(double)),
                     xcalloc((size_t)sizes, sizeof(double))};
  struct engine_params ep;
  engine_params_default(&ep);
  ep.on_task = on_task;
  ep.algo = (enum coll_algo)j.algo;
  ep.fidelity = (enum fidelity)j.fid;
  ep.ctx = &tm;
  struct engine_result res;
  platload_boot(0);
  if (platload_cluster(&c, &err) || engine_run(g, &c, &ep, &res, &err))
    rc = cli_fail(&err);
  else
    coll_print(&j, &c, g, sizes, &tm);
  free(tm.start);
  free(tm.end);
  graph_free(g);
  catalog_free(cat);
  return rc;
}
