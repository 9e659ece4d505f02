/*
 * job.h - one training job from resolved settings to its figures: the
 * size check of its task graph, the graph, the platform, the replay (with
 * the traces asked for), the same job without gradient compression for
 * the speedup, and the report's metrics.  The one pipeline of the
 * commands: `weft run` prints the result, a sweep's scenario prints it as
 * JSON for the parent, `weft plan`'s candidates keep three numbers of it.
 * Part of the command layer, but prints nothing: errors come back in
 * `struct weft_err`.
 */
#ifndef WEFT_JOB_H
#define WEFT_JOB_H

#include <stdbool.h>

#include "platforms/cluster.h"
#include "sim/base/err.h"
#include "sim/engine.h"
#include "sim/report.h"
#include "workloads/workload.h"

/* The traces to write, as weft run's options give them (all NULL: none).
 * The selection is read once the graph is built (trace_select). */
struct job_trace {
  const char *paje, *chrome; /* files to write, or NULL */
  const char *ranks;         /* "0-7,64", or NULL: every rank */
  const char *window;        /* "T0:T1" in simulated time, or NULL */
  const char *level;         /* "all" or "comm", or NULL: all */
  /* Told, before the replay, what tracing costs where it turns the
   * engine's symmetric shortcuts off (a sentence); NULL: nobody. */
  void (*note)(const char *msg);
};

/* What to run and how. */
struct job_spec {
  const struct workload *w; /* borrowed: the job, its plan resolved */
  const struct cluster *c;  /* borrowed: the cluster it runs on */
  /* The engine's settings.  job_run sets table, on_task, on_flow and ctx;
   * on_progress is the caller's (the main replay only). */
  struct engine_params ep;
  const char *kernel_table; /* measured kernel times (CSV file), or NULL */
  bool force;               /* lift the limit on the task graph's size */
  bool platform_loaded;     /* c is already loaded (platload_cluster);
                               otherwise job_run boots SimGrid and loads it */
  struct job_trace trace;
  double t0_s;              /* cli_wall_s() when the command started, for
                               the report's sim_wall_s */
};

/* The outcome: the report's figures (report.h), which borrow the spec's
 * workload and cluster and own their engine result. */
struct job_result {
  struct report r;
};

/* Fill *s for workload `w` on `c` (both stay borrowed): the engine's
 * defaults in the workload's compute type and attention kernel, nothing
 * else asked for. */
void job_spec_init(struct job_spec *s, const struct workload *w,
                   const struct cluster *c);

/* Refuse a job whose task graph would exceed WEFT_MAX_GRAPH_BYTES
 * (build_estimate), unless `force` ("--force" lifts the limit). */
int job_check_size(const struct workload *w, bool force,
                   struct weft_err *err) WEFT_WUR;

/* Run the job of *s: size check, kernel table, task graph, trace
 * selection, platform, replay, traces written, with gradient compression
 * a second replay without it (r.base_iteration_s, r.base_ddp), then the
 * report's metrics and engine settings.  Returns 0 with *out filled
 * (release with job_result_release), or an error; *out is untouched on
 * failure. */
int job_run(const struct job_spec *s, struct job_result *out,
            struct weft_err *err) WEFT_WUR;

/* Free what job_run allocated in *r; accepts a zeroed result. */
void job_result_release(struct job_result *r);

#endif
