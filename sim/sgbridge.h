/*
 * sgbridge.h - the C face of sgbridge.cpp, the one C++ file of weft.
 *
 * SimGrid 3.32's C API cannot start an activity outside an actor and be
 * told when it completes, nor send between two hosts without a receiving
 * actor.  The engine needs exactly that (SimDAG-style replay: activities
 * are started from main and from completion callbacks), so this bridge
 * exposes it and nothing else.
 */
#ifndef WEFT_SGBRIDGE_H
#define WEFT_SGBRIDGE_H

#include <simgrid/forward.h>
#include <stdbool.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Called with the context given to sgb_init and the activity's tag when it
 * completes. */
typedef void (*sgb_done_fn)(void *ctx, void *tag);

/* Set the completion callback and its context (after the platform is
 * loaded; again before each replay: the last call wins). */
void sgb_init(sgb_done_fn fn, void *ctx);

/* Start a transfer of `bytes` from `src` to `dst`, now. */
void sgb_comm(sg_host_t src, sg_host_t dst, double bytes, void *tag);

/* Start a transfer that stands for `mult` (>= 1) identical flows from
 * `src` to `dst`, each of `bytes`, whose route latency `lat_s` is over
 * now: one flow of mult x bytes whose max-min share is that of mult
 * such flows (its sharing penalty lat_s / mult), so that it moves at the
 * sum of their rates and ends when they would.  The route from src to
 * dst must pay no latency itself (sim/platload.h, twins).  Not with
 * couriers (sgb_couriers): aborts there.  For the quotient of expert
 * replica symmetry (sim/symmetry.h). */
void sgb_comm_weighted(sg_host_t src, sg_host_t dst, double bytes,
                       double mult, double lat_s, void *tag);

/* Bytes the transfer started with `tag` has still to move, now (0 once it
 * is over, or when it was started without sgb_track on); for traces,
 * which sample it whenever the set of flows changes.  sgb_track(true)
 * keeps the flows started from then on findable by their tags (each
 * tag must then be unique among the flows in flight); false forgets
 * them. */
void sgb_track(bool on);
double sgb_comm_remaining(const void *tag);

/* Call back with `tag` after `seconds` of simulated time: a date in the
 * bridge's calendar (sgbridge.cpp; a SimGrid kernel timer with couriers or
 * sgb_calendar(false)), not an activity.  An execution or a host-to-host
 * comm started outside an actor joins maestro's list of activities, which
 * SimGrid 3.32 scans whole whenever one ends (ExecImpl::post,
 * CommImpl::finish), so every activity that can be a delay is one. */
void sgb_delay(double seconds, void *tag);

/* Start SimGrid's engine with these arguments (platload_boot).  The
 * engine lives until the process ends and is never torn down when
 * `--cfg=debug/clean-atexit:no` is among the arguments (sgbridge.cpp says
 * why). */
void sgb_boot(int *argc, char **argv);

/* An in-memory platform: one zone holding every host, whose routes a
 * callback computes (platforms/topo.h; SimGrid's XML can only list
 * routes, and the fabrics that need this would need one per pair of
 * hosts).  Host ids are their creation order; links are numbered in
 * creation order too.  route(ctx, a, b, links, dirs, &extra_latency)
 * writes the links of the route from host a to host b, each with its
 * direction (0: UP, 1: DOWN), and returns their count. */
typedef int (*sgb_route_fn)(void *ctx, long a, long b, int32_t *links,
                            int32_t *dirs, double *extra_lat);
/* Start it (before any other platform): the network model is CM02 without
 * cross-traffic, as in platgen's XML.  max_hops bounds a route. */
void sgb_zone_begin(const char *name, sgb_route_fn route, void *ctx,
                    int max_hops);
/* A SPLITDUPLEX link; its number is the count of links before it. */
void sgb_zone_link(const char *name, double bw, double lat);
/* A host; set its properties before sgb_zone_end. */
sg_host_t sgb_zone_host(const char *name, double speed);
/* Seal the zone and the platform. */
void sgb_zone_end(void);

/* Run the simulation until no activity is left. */
void sgb_run(void);

/* Current simulated time in seconds. */
double sgb_now(void);

/* Activities started and not yet completed (for sanity checks). */
long sgb_live(void);

/* Whether flows are sent by courier actors (sgbridge.cpp): the same flows,
 * without SimGrid 3.32's cost per flow in proportion to the flows in
 * flight.  sgb_couriers forces it (1 on, 0 off, -1 back to the engine's
 * choice; the environment variable WEFT_COURIERS=on|off|auto, read at the
 * first sgb_couriers_auto, does the same); sgb_couriers_auto is the
 * engine's choice for the run about to start (never in a sanitized
 * build). */
void sgb_couriers(int mode);
void sgb_couriers_auto(bool want);

/* Whether delays are kept by the bridge's own calendar (the default,
 * where flows go without couriers) or each is a SimGrid timer (the check
 * of the calendar: the same times either way); and how many delays the
 * calendar has handed over outside SimGrid's loop so far. */
void sgb_calendar(bool on);
long sgb_calendar_outside(void);
/* Flows sent by couriers so far. */
long sgb_courier_flows(void);

#ifdef __cplusplus
}
#endif

#endif
