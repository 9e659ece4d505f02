/*
 * cmd_share.c - `weft share [cluster settings] NODES:JOB ...`: several
 * training jobs placed on one cluster at once, each on its own nodes,
 * simulated together so that their traffic contends on the links their
 * routes share (spines, pods); each job's step time against the same job
 * alone on the same nodes (issue 41, item 4).
 *
 * A job is a `weft run` command line without the cluster: a workload file
 * and/or model and plan settings, words separated by spaces, after the
 * list of the fabric's nodes it runs on ("0-3,8-11").  The cluster
 * settings are weft share's own, the same for every job; each job sees
 * the cluster as its nodes only (--nodes set to their count), which is
 * what its plan and its collectives' algorithms are resolved against, as
 * a scheduler's allocation is for NCCL.  Its rank r runs on the r % G-th
 * GPU of its (r / G)-th node in the list (G GPUs per node).
 *
 * Racks of trays (a node type with tray=, such as GB200 NVL72: 18 trays of
 * 4 GPUs, one NVLink domain per rack; issue 38, item 4): the cluster's
 * nodes are whole racks and a job's list names trays, numbered rack by
 * rack, as many in each of its racks; the job sees each of its racks as a
 * node of its trays' GPUs (--gpus-per-node), as `weft run` sees a job on
 * part of each rack (platforms/cluster.c, tray_split), so jobs share a
 * rack's NVLink domain, each GPU on its own NVLink ports and NIC.
 *
 * Step times: engine_run_shared (engine.h) replays each job's iteration
 * back to back until every job has completed --steps of them, and
 * measures each job over the iterations that ended by then: all of them
 * ran while every other job was iterating.  A job given as NODES@OFFSET:JOB
 * starts OFFSET into the run; the others iterate meanwhile.  Then only
 * iterations that began once every job had started count toward --steps
 * and are measured (those before are lead-in), so that a measured
 * iteration ran wholly while all jobs ran.  Alone: one iteration of the
 * job on the same nodes of the same platform, nothing else running (its
 * iterations are all alike).  Both replay every rank and every flow.
 */
#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sim/base/units.h"
#include "sim/base/xalloc.h"
#include "sim/commands.h"
#include "sim/engine.h"
#include "sim/platload.h"
#include "workloads/builder.h"

enum share_opt { SHARE_JSON, SHARE_STEPS, SHARE_COUNT };

static const struct opt share_opts[] = {
    [SHARE_JSON] = {"json", 0, OPT_FLAG, NULL,
      "print one JSON object instead of the table"},
    [SHARE_STEPS] = {"steps", 0, OPT_VALUE, "K",
      "iterations every job completes while all run (default 2): each "
      "job's shared step time is the mean of its iterations that ended by "
      "the time the last job completed its K-th"},
    [SHARE_COUNT] = {NULL, 0, 0, NULL, NULL},
};
OPTS_CHECK_TABLE(share_opts, SHARE_COUNT);

const struct opts_spec cmd_share_spec = {
    "share", POS_FILES, "NODES:JOB ...", OPTS_CATALOG | OPTS_CLUSTER,
    share_opts,
    "Places several training jobs on one cluster at once, each on its own\n"
    "nodes, and simulates them together: their flows share the links their\n"
    "routes have in common (leaf uplinks, spines, pods).  Prints each job's\n"
    "step time alone on its nodes and shared, and the slowdown.  A job is\n"
    "NODES:JOB, the fabric's nodes it takes (0-3,8-11; a job's rank r runs\n"
    "on GPU r % G of its (r / G)-th node) then a `weft run` command line\n"
    "without cluster settings (a workload file, model and plan settings,\n"
    "--collective, --fidelity, --force), quoted as one argument.\n"
    "NODES@OFFSET:JOB starts the job OFFSET (a time) after the others;\n"
    "then only iterations begun once every job had started are measured.\n"
    "The cluster settings given here hold for every job; each job's plan\n"
    "is resolved against its own nodes.  On racks of trays (gb200-nvl72,\n"
    "the racks whole with --nodes) jobs take trays, numbered rack by rack,\n"
    "as many in each of their racks: several jobs share a rack's NVLink\n"
    "domain.  Every rank and flow is simulated.",
    "  weft share --cluster h100-oversub --nodes 8 \\\n"
    "      '0-3:--model llama3-8b --tp 8 --global-batch 64' \\\n"
    "      '4-7:--model llama3-8b --tp 8 --global-batch 64'\n"
    "  weft share --cluster dgx-h100 --nodes 4 0-1:a.xml 2-3:b.xml --json\n"
    "  weft share --cluster dgx-h100 --nodes 4 0-1:a.xml 2-3@0.2s:a.xml\n"
    "  weft share --cluster gb200-nvl72 --nodes 2 0-8:a.xml 9-17,18-26:b.xml\n"};

/* One job of the command line. */
struct share_job {
  const char *spec;     /* as given */
  int *nodes, nnodes;   /* the fabric's nodes, in the job's order */
  char *nodes_text;     /* the list as given (owned) */
  char count[16];       /* its racks' count, the job's --nodes */
  /* By the job's node: the fabric's node (a rack on racks of trays) and
   * the position of each GPU in it; G GPUs per job node. */
  int *racks, nracks, G;
  int *slot;            /* nracks x G: GPU index inside the fabric node */
  char per[16];         /* G, the job's --gpus-per-node on trays */
  char **argv;          /* the run command line parsed (owned copies) */
  int argc;
  char **words;         /* the run command line (owned) */
  int nwords;
  struct run_args a;
  bool have_args;
  struct graph *g;
  int *place;
  struct engine_shared alone, shared;
  double start_s;       /* @OFFSET: when it starts (0: with the run) */
};

/* "0-3,8": the nodes of the fabric, each below `nodes`; an error names
 * the job. */
static const char *unit; /* "node", or "tray" on racks of trays */

static int parse_nodes(struct share_job *J, int idx, const char *s, size_t len,
                       int nodes)
{
  J->nodes = xcalloc((size_t)nodes + 1, sizeof *J->nodes);
  J->nodes_text = xmalloc(len + 1);
  memcpy(J->nodes_text, s, len);
  J->nodes_text[len] = '\0';
  const char *p = J->nodes_text;
  while (*p) {
    char *end;
    errno = 0;
    if (!isdigit((unsigned char)*p))
      goto bad;
    long a = strtol(p, &end, 10), b = a;
    if (errno)
      goto bad;
    if (*end == '-') {
      if (!isdigit((unsigned char)end[1]))
        goto bad;
      b = strtol(end + 1, &end, 10);
      if (errno || b < a)
        goto bad;
    }
    if (*end && *end != ',')
      goto bad;
    if (b >= nodes)
      return cli_usage("job %d (%ss %s): %s %ld is not on the cluster, "
                       "whose %ss are 0 to %d", idx + 1, unit, J->nodes_text,
                       unit, b, unit, nodes - 1);
    for (long n = a; n <= b; n++) {
      for (int k = 0; k < J->nnodes; k++)
        if (J->nodes[k] == n)
          return cli_usage("job %d (%ss %s): %s %ld is listed twice",
                           idx + 1, unit, J->nodes_text, unit, n);
      J->nodes[J->nnodes++] = (int)n;
    }
    p = *end ? end + 1 : end;
    if (*end == ',' && !*p)
      goto bad;
  }
  if (J->nnodes == 0)
    goto bad;
  return 0;
bad:
  return cli_usage("job %d: '%s' is not a list of %ss such as 0-3,8",
                   idx + 1, J->nodes_text, unit);
}

/* "@OFFSET" of a job (`len` bytes at s): a time (30s, 1.5ms) from 0 to
 * 1e6 s; an error names the job. */
static int parse_start(struct share_job *J, int idx, const char *s,
                       size_t len)
{
  char v[64];
  struct weft_err err = {0};
  if (len >= sizeof v)
    return cli_usage("job %d (%ss %s): its start is too long", idx + 1, unit,
                     J->nodes_text);
  memcpy(v, s, len);
  v[len] = '\0';
  if (units_parse(v, UNIT_TIME, &J->start_s, &err))
    return cli_usage("job %d (%ss %s): start '%s': %s", idx + 1, unit,
                     J->nodes_text, v, err.msg);
  if (!(J->start_s >= 0 && J->start_s <= 1e6))
    return cli_usage("job %d (%ss %s): start '%s' is not from 0 to 1e6 s",
                     idx + 1, unit, J->nodes_text, v);
  return 0;
}

/* The job's nodes: the fabric's nodes as listed; on racks of trays
 * (`tray` GPUs each, `rack` trays per rack), the racks of its trays in
 * the order they first appear, each holding the same number of them. */
static int job_racks(struct share_job *J, int idx, const struct cluster *c)
{
  J->racks = xcalloc((size_t)J->nnodes, sizeof *J->racks);
  int tray = c->tray, per = tray ? c->rack_gpus / tray : 1;
  int *cnt = xcalloc((size_t)J->nnodes, sizeof *cnt);
  for (int k = 0; k < J->nnodes; k++) {
    int rk = J->nodes[k] / per, i = 0;
    while (i < J->nracks && J->racks[i] != rk)
      i++;
    if (i == J->nracks)
      J->racks[J->nracks++] = rk;
    cnt[i]++;
  }
  int bad = 0;
  for (int i = 1; i < J->nracks; i++)
    if (cnt[i] != cnt[0])
      bad = i;
  int t0 = cnt[0], tb = cnt[bad];
  free(cnt);
  if (bad)
    return cli_usage("job %d (trays %s): %d trays in rack %d, %d in rack "
                     "%d: a job takes as many trays in each of its racks",
                     idx + 1, J->nodes_text, t0, J->racks[0], tb,
                     J->racks[bad]);
  J->G = tray ? t0 * tray : c->gpus_per_node;
  J->slot = xcalloc((size_t)J->nracks * (size_t)J->G, sizeof *J->slot);
  int *fill = xcalloc((size_t)J->nracks, sizeof *fill);
  for (int k = 0; k < J->nnodes; k++) {
    int rk = J->nodes[k] / per, i = 0;
    while (J->racks[i] != rk)
      i++;
    for (int g = 0; g < (tray ? tray : J->G); g++)
      J->slot[i * J->G + fill[i]++] =
          tray ? (J->nodes[k] % per) * tray + g : g;
  }
  free(fill);
  return 0;
}

/* The words of the job's run command line; settings of the cluster and
 * run options other than those below are refused. */
static int split_words(struct share_job *J, int idx, const char *s)
{
  static const char *const allowed[] = {"collective", "fidelity", "force",
                                        NULL};
  J->words = xcalloc(strlen(s) / 2 + 2, sizeof *J->words);
  while (*s) {
    while (isspace((unsigned char)*s))
      s++;
    if (!*s)
      break;
    size_t n = 0;
    while (s[n] && !isspace((unsigned char)s[n]))
      n++;
    char *w = xmalloc(n + 1);
    memcpy(w, s, n);
    w[n] = '\0';
    J->words[J->nwords++] = w;
    s += n;
    if (w[0] != '-' || w[1] != '-')
      continue;
    char name[OPTS_MAX_NAME];
    snprintf(name, sizeof name, "%s", w + 2);
    name[strcspn(name, "=")] = '\0';
    bool ok = !strcmp(name, "gpus");
    for (int k = 0; allowed[k]; k++)
      ok |= !strcmp(name, allowed[k]);
    if (ok)
      continue;
    if (!strcmp(name, "cluster") || !strcmp(name, "catalog") ||
        !strcmp(name, "scale") || opts_is_setting(OPTS_CLUSTER, name))
      return cli_usage("job %d (nodes %s): --%s is the cluster's: give it "
                       "to weft share, once for every job", idx + 1,
                       J->nodes_text, name);
    if (opts_own(&cmd_run_spec, name) && !opts_is_setting(OPTS_WORKLOAD,
                                                          name))
      return cli_usage("job %d (nodes %s): --%s is not a job's option "
                       "here: a job takes a workload file, model and plan "
                       "settings, --collective, --fidelity and --force",
                       idx + 1, J->nodes_text, name);
  }
  return 0;
}

/* The job's run command line with the cluster's settings; resolve it. */
static int resolve_job(struct share_job *J, int idx, const struct opts *o,
                       const struct cluster *c)
{
  const char *argv[WEFT_MAX_ARGS + 1];
  char flags[OPTS_MAX_SET][OPTS_MAX_NAME + 2];
  int n = 0;
  if (J->nwords + 2 * (o->n_catalogs + o->n_set) + 7 > WEFT_MAX_ARGS)
    return cli_usage("job %d (nodes %s): more than %d words with the "
                     "cluster's settings", idx + 1, J->nodes_text,
                     WEFT_MAX_ARGS);
  argv[n++] = "run";
  for (int k = 0; k < J->nwords; k++)
    argv[n++] = J->words[k];
  argv[n++] = "--cluster";
  argv[n++] = o->cluster ? o->cluster : "selene";
  for (int k = 0; k < o->n_catalogs; k++) {
    argv[n++] = "--catalog";
    argv[n++] = o->catalogs[k];
  }
  for (int k = 0; k < o->n_set; k++) {
    const char *nm = o->set[k].name;
    if (!strcmp(nm, "nodes") || !strcmp(nm, "gpus") ||
        (c->tray && (!strcmp(nm, "gpus-per-node") ||
                     !strcmp(nm, "gpus_per_node"))))
      continue; /* the job's own */
    snprintf(flags[k], sizeof flags[k], "--%s", o->set[k].name);
    argv[n++] = flags[k];
    argv[n++] = o->set[k].value;
  }
  snprintf(J->count, sizeof J->count, "%d", J->nracks);
  argv[n++] = "--nodes";
  argv[n++] = J->count;
  if (c->tray) { /* its trays of each rack: its NVLink domain */
    snprintf(J->per, sizeof J->per, "%d", J->G);
    argv[n++] = "--gpus-per-node";
    argv[n++] = J->per;
  }
  argv[n] = NULL;
  /* Copies: opts_parse takes argv as a command line's, not const. */
  J->argv = xcalloc((size_t)n + 1, sizeof *J->argv);
  for (J->argc = 0; J->argc < n; J->argc++)
    J->argv[J->argc] = xstrdup(argv[J->argc]);
  int rc;
  if (cmd_run_args(n, J->argv, &J->a, &rc)) {
    fprintf(stderr, "weft: (in job %d, nodes %s)\n", idx + 1,
            J->nodes_text);
    return rc ? rc : 2;
  }
  J->have_args = true;
  const struct cluster *jc = &J->a.c;
  if (jc->gpus_per_node != J->G || strcmp(jc->node_type, c->node_type) ||
      jc->nodes != J->nracks)
    return cli_usage("job %d (%ss %s): its cluster is %d nodes of %d x "
                     "%s, not %d of the shared cluster's nodes of %d x %s "
                     "(does its workload file name another cluster?)",
                     idx + 1, unit, J->nodes_text, jc->nodes,
                     jc->gpus_per_node, jc->node_type, J->nracks, J->G,
                     c->node_type);
  long gpus = (long)J->nracks * J->G;
  if (J->a.w.plan.gpus != gpus)
    return cli_usage("job %d (%ss %s): its plan takes %ld GPUs, its %d "
                     "%ss hold %ld", idx + 1, unit, J->nodes_text,
                     J->a.w.plan.gpus, J->nnodes, unit, gpus);
  return 0;
}

/* The slowdown shared over alone.  The shared mean sums differences of
 * absolute times, the alone time is one: a few ulps of either sign where
 * the two are the same (no -0.00 % in the table) become 0. */
static double slowdown(const struct share_job *J)
{
  double d = J->shared.mean_s / J->alone.mean_s - 1;
  return fabs(d) <= 1e-12 ? 0 : d;
}

static void print_json_str(const char *s)
{
  putchar('"');
  for (; *s; s++)
    if (*s == '"' || *s == '\\')
      printf("\\%c", *s);
    else if ((unsigned char)*s < 0x20)
      printf("\\u%04x", *s);
    else
      putchar(*s);
  putchar('"');
}

/* With `offsets` (a job given @OFFSET) each job's start and its lead-in
 * iterations (begun before every job had started, not measured) are
 * printed too; without, the output is what it was before offsets. */
static void print_results(const struct share_job *J, int n,
                          const struct cluster *c, long steps, bool offsets,
                          bool json)
{
  if (json) {
    printf("{\"cluster\": ");
    print_json_str(c->name);
    printf(", \"nodes\": %d, \"gpus_per_node\": %d, \"place_by\": \"%ss\", "
           "\"steps\": %ld, \"jobs\": [", c->nodes, c->gpus_per_node, unit,
           steps);
    for (int j = 0; j < n; j++) {
      const struct plan *p = &J[j].a.w.plan;
      printf("%s\n  {\"job\": %d, \"model\": ", j ? "," : "", j + 1);
      print_json_str(J[j].a.w.model.name);
      printf(", \"gpus\": %ld, \"tp\": %ld, \"pp\": %ld, \"dp\": %ld, "
             "\"nodes\": ", p->gpus, p->tp, p->pp, p->dp);
      print_json_str(J[j].nodes_text);
      if (offsets)
        printf(", \"start_s\": %.9g, \"lead_in\": %ld", J[j].start_s,
               J[j].shared.skipped);
      printf(", \"alone_s\": %.9g, \"shared_s\": %.9g, \"slowdown\": %.9g, "
             "\"iterations\": %ld, \"measured\": %ld}",
             J[j].alone.mean_s, J[j].shared.mean_s,
             slowdown(&J[j]),
             J[j].shared.iterations, J[j].shared.counted);
    }
    printf("\n]}\n");
    return;
  }
  if (offsets)
    printf("%d jobs on %s: %d nodes of %d x %s; each job's step time alone "
           "on its nodes and\nwhile all run (mean of the iterations that "
           "began once every job had started\nand ended by the time every "
           "job had %ld such; iters: measured/lead-in/all)\n", n, c->name,
           c->nodes, c->gpus_per_node, c->gpu.name, steps);
  else
    printf("%d jobs on %s: %d nodes of %d x %s; each job's step time alone "
           "on its nodes and\nwhile all run (mean of the iterations that "
           "ended by the time every job had %ld)\n", n, c->name, c->nodes,
           c->gpus_per_node, c->gpu.name, steps);
  printf("  %-4s %-14s %6s %-3s %-3s %-3s ", "job", "model", "GPUs", "TP",
         "PP", "DP");
  if (offsets)
    printf("%10s ", "start s");
  printf("%10s %10s %9s %7s  %s\n", "alone s", "shared s", "slowdown",
         "iters", c->tray ? "trays" : "nodes");
  for (int j = 0; j < n; j++) {
    const struct plan *p = &J[j].a.w.plan;
    char it[72];
    if (offsets)
      snprintf(it, sizeof it, "%ld/%ld/%ld", J[j].shared.counted,
               J[j].shared.skipped, J[j].shared.iterations);
    else
      snprintf(it, sizeof it, "%ld/%ld", J[j].shared.counted,
               J[j].shared.iterations);
    printf("  %-4d %-14s %6ld %-3ld %-3ld %-3ld ", j + 1,
           J[j].a.w.model.name, p->gpus, p->tp, p->pp, p->dp);
    if (offsets)
      printf("%10.4f ", J[j].start_s);
    printf("%10.4f %10.4f %8.2f%% %7s  %s\n", J[j].alone.mean_s,
           J[j].shared.mean_s, 100 * slowdown(&J[j]), it, J[j].nodes_text);
  }
}

int cmd_share(int argc, char **argv)
{
  struct opts o;
  int rc;
  if (cli_parse(&cmd_share_spec, argc, argv, &o, &rc))
    return rc;
  long steps = 2;
  const char *sv = opts_get(&o, SHARE_STEPS);
  if (sv) {
    char *end;
    errno = 0;
    steps = strtol(sv, &end, 10);
    if (end == sv || *end || errno || steps < 1 || steps > 100)
      return cli_usage("--steps: '%s' is not a whole number from 1 to 100",
                       sv);
  }
  if (o.n_files < 1)
    return cli_usage("share: name the jobs, NODES:JOB each (weft share "
                     "--help)");
  if (o.n_files > ENGINE_MAX_JOBS)
    return cli_usage("share: %d jobs, at most %d", o.n_files,
                     ENGINE_MAX_JOBS);
  struct weft_err err = {0};
  struct catalog *cat = NULL;
  struct cluster c;
  if (opts_cluster(&o, "selene", &cat, &c, &err))
    return cli_fail(&err);
  catalog_free(cat);
  if (c.tray && c.gpus_per_node < c.rack_gpus)
    return cli_usage("share: the cluster's racks are whole here (%d GPUs "
                     "each) and jobs take trays of them: give the racks "
                     "with --nodes, not part of each with --gpus",
                     c.rack_gpus);
  /* Settings whose ranks or nodes are one job's: which job's is not
   * defined here (each job's list is its placement). */
  if (c.spread || c.random_seed)
    return cli_usage("share: --placement places one job's nodes; here each "
                     "job's list places it (spread one by listing nodes of "
                     "alternate leaves)");
  if (c.nslow_gpu || c.nslow_nic || c.gpu_sigma > 0)
    return cli_usage("share: slow_gpu, slow_nic and gpu_sigma name one "
                     "job's ranks: not with weft share");
  unit = c.tray ? "tray" : "node";
  int units = c.tray ? c.nodes * (c.rack_gpus / c.tray) : c.nodes;
  int n = o.n_files;
  struct share_job *J = xcalloc((size_t)n, sizeof *J);
  int *owner = xcalloc((size_t)units, sizeof *owner);
  bool offsets = false;
  rc = 0;
  for (int j = 0; j < n && !rc; j++) {
    J[j].spec = o.files[j];
    const char *colon = strchr(J[j].spec, ':');
    if (!colon) {
      rc = cli_usage("job %d (%s): not NODES:JOB, such as '0-3:job.xml'",
                     j + 1, J[j].spec);
      break;
    }
    /* NODES@OFFSET: the job starts OFFSET after the others' start. */
    const char *at = memchr(J[j].spec, '@', (size_t)(colon - J[j].spec));
    rc = parse_nodes(&J[j], j, J[j].spec,
                     (size_t)((at ? at : colon) - J[j].spec), units);
    if (!rc && at)
      rc = parse_start(&J[j], j, at + 1, (size_t)(colon - at - 1));
    offsets |= J[j].start_s > 0;
    for (int k = 0; !rc && k < J[j].nnodes; k++) {
      int nd = J[j].nodes[k];
      if (owner[nd])
        rc = cli_usage("job %d (%ss %s): %s %d is job %d's already: "
                       "jobs take disjoint %ss", j + 1, unit,
                       J[j].nodes_text, unit, nd, owner[nd], unit);
      owner[nd] = j + 1;
    }
    if (!rc)
      rc = job_racks(&J[j], j, &c);
    if (!rc)
      rc = split_words(&J[j], j, colon + 1);
    if (!rc && J[j].nwords == 0)
      rc = cli_usage("job %d (%ss %s): no job after the %ss: a "
                     "workload file or model and plan settings", j + 1,
                     unit, J[j].nodes_text, unit);
  }
  for (int j = 0; j < n && !rc; j++)
    rc = resolve_job(&J[j], j, &o, &c);
  for (int j = 0; j < n && !rc; j++) {
    rc = job_check_size(&J[j].a.w, J[j].a.spec.force, &err);
    if (!rc && !(J[j].g = build_graph(&J[j].a.w.model, &J[j].a.w.plan, &err)))
      rc = err.code ? err.code : WEFT_EINVAL;
    if (rc) {
      char b[32];
      snprintf(b, sizeof b, "job %d", j + 1);
      weft_err_prefix(&err, b);
      rc = cli_fail(&err);
      break;
    }
    /* Rank r on GPU r % G of the job's (r / G)-th node (its trays of
     * that rack in the order listed). */
    long ranks = J[j].a.w.plan.gpus;
    int G = J[j].G, R = c.gpus_per_node;
    J[j].place = xcalloc((size_t)ranks, sizeof *J[j].place);
    for (long r = 0; r < ranks; r++)
      J[j].place[r] = J[j].racks[r / G] * R + J[j].slot[r];
  }
  struct engine_job *ej = xcalloc((size_t)n, sizeof *ej);
  for (int j = 0; j < n && !rc; j++)
    ej[j] = (struct engine_job){J[j].g, &J[j].a.c, J[j].a.spec.ep,
                                J[j].place, J[j].start_s};
  if (!rc) {
    platload_boot(0);
    if (platload_cluster(&c, &err))
      rc = cli_fail(&err);
  }
  for (int j = 0; j < n && !rc; j++)
    if (engine_run_shared(1, &(struct engine_job){ej[j].g, ej[j].c, ej[j].p,
                                                  ej[j].place, 0},
                          1, &J[j].alone, &err)) {
      char b[32];
      snprintf(b, sizeof b, "job %d alone", j + 1);
      weft_err_prefix(&err, b);
      rc = cli_fail(&err);
    }
  struct engine_shared *res = xcalloc((size_t)n, sizeof *res);
  if (!rc && engine_run_shared(n, ej, steps, res, &err))
    rc = cli_fail(&err);
  for (int j = 0; j < n && !rc; j++)
    J[j].shared = res[j];
  if (!rc)
    print_results(J, n, &c, steps, offsets,
                  opts_get(&o, SHARE_JSON) != NULL);
  if (rc) /* results not handed to the jobs */
    for (int j = 0; j < n; j++)
      engine_shared_free(&res[j]);
  free(res);
  free(ej);
  for (int j = 0; j < n; j++) {
    engine_shared_free(&J[j].alone);
    engine_shared_free(&J[j].shared);
    graph_free(J[j].g);
    free(J[j].place);
    if (J[j].have_args)
      cmd_run_args_release(&J[j].a);
    for (int k = 0; k < J[j].nwords; k++)
      free(J[j].words[k]);
    for (int k = 0; k < J[j].argc; k++)
      free(J[j].argv[k]);
    free(J[j].argv);
    free(J[j].words);
    free(J[j].nodes);
    free(J[j].nodes_text);
    free(J[j].racks);
    free(J[j].slot);
  }
  free(owner);
  free(J);
  return rc;
}
