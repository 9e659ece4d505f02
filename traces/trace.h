/*
 * trace.h - record the tasks a replay ran and write them as Paje (ViTE,
 * PajeNG's pj_dump) or Chrome trace-event JSON (Perfetto, chrome://tracing).
 *
 * Paje: containers cluster > node > GPU > stream, and each GPU's NVLink and
 * NIC ports as link containers under its node carrying their send and
 * receive rates; one state type whose values are the kinds of work, with
 * phase, layer, micro-batch, group, shape and bytes as extra fields;
 * transfers as Paje links between GPUs (traces/README.md).  Chrome: one
 * process per GPU rank, one thread per stream it used, flow arrows from a
 * send to its receive, counters of the link rates.  Events are written in
 * a total order (time, rank, stream, task), so the same replay gives
 * byte-identical files.
 */
#ifndef WEFT_TRACE_H
#define WEFT_TRACE_H

#include "sim/base/err.h"
#include "sim/graph/graph.h"

struct trace;

/* A recorder for the replay of `g` (borrowed until trace_free). */
struct trace *trace_new(const struct graph *g);
void trace_free(struct trace *t);

/* What to keep, set before recording: every task (TRACE_ALL) or only
 * communication (TRACE_COMM: collectives and pipeline transfers). */
enum trace_level { TRACE_ALL, TRACE_COMM };

/* Keep only the ranks of `ranks` ("0-7,64"; NULL: all), the tasks and
 * flows that overlap [t0_s, t1_s] (seconds of simulated time; INFINITY for
 * no end) and those of `level`.  A flow is kept when either end is; the
 * Paje trace shows the kept ranks only.  Errors name the --trace-* flag. */
int trace_select(struct trace *t, const char *ranks, double t0_s, double t1_s,
                 enum trace_level level, struct weft_err *err) WEFT_WUR;

/* Place `rank` on node `node` (>= 0) for the Paje hierarchy; ranks not
 * placed are on node 0. */
void trace_set_node(struct trace *t, long rank, int node);

/* Record one task of `rank` that ran from start_s to end_s. */
void trace_add(struct trace *t, long rank, long task, double start_s,
               double end_s);
long trace_events(const struct trace *t);

/* Record a flow of `bytes` from rank src to rank dst; `same_node` says
 * whether it crossed NVLink only (else the two GPUs' NICs).  It is a
 * transfer (a Paje link, when both ends are kept); with no parts recorded
 * (trace_add_flow_part) its average rate also counts in the send and
 * receive rates of the GPUs' NVLink or NIC ports. */
void trace_add_flow(struct trace *t, long src, long dst, int same_node,
                    double bytes, double start_s, double end_s);

/* Record the bytes a flow from src to dst moved between start_s and
 * end_s, a part of its life (the engine's on_flow_part).  Once any part
 * is recorded, the link rates (Paje variables, Chrome counters) are
 * those of the parts, not each whole flow's average over its life: two
 * flows on one link at their averages can sum above what the link
 * carries.  The transfers stay the whole flows of trace_add_flow. */
void trace_add_flow_part(struct trace *t, long src, long dst, int same_node,
                         double bytes, double start_s, double end_s);

/* Give the ranks of pipeline stage `stage` a Chrome counter "memory GB":
 * `fixed_bytes` all along (weights, gradients, optimizer state, buffers),
 * plus `chunk_bytes` for each micro-batch chunk whose forward has started
 * and whose backward has not ended (the activations it stores), plus
 * `transient_bytes` while a backward runs (the layer a full recomputation
 * re-materializes, the logits kept for the loss's backward).  These are
 * workloads/accounting.c's terms, so that the counter's maximum is
 * memory_per_gpu's total for that stage.  Set before writing. */
void trace_set_memory(struct trace *t, long stage, double fixed_bytes,
                      double chunk_bytes, double transient_bytes);

/* The ranks kept (one byte each, nonzero: kept), or NULL: all; borrowed
 * until trace_free or the next trace_select. */
const unsigned char *trace_kept(const struct trace *t);

/* Write the recorded trace; a path ending in ".gz" is gzip-compressed
 * (Perfetto reads gzipped JSON; zcat feeds pj_dump).  trace_write writes
 * either or both (NULL: not that one), both at once on two threads unless
 * one is standard output.  When either cannot be written whole, neither
 * file is replaced; only a failure of the second file's final rename can
 * leave the first one replaced. */
int trace_write(struct trace *t, const char *paje, const char *chrome,
                struct weft_err *err) WEFT_WUR;
int trace_write_paje(struct trace *t, const char *path,
                     struct weft_err *err) WEFT_WUR;
int trace_write_chrome(struct trace *t, const char *path,
                       struct weft_err *err) WEFT_WUR;

#endif
