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

/* Call back with `tag` after `seconds` of simulated time: a kernel timer
 * (a heap), not an activity.  An execution or a host-to-host comm started
 * outside an actor joins maestro's list of activities, which SimGrid 3.32
 * scans whole whenever one ends (ExecImpl::post, CommImpl::finish), so
 * every activity that can be a timer is one. */
void sgb_delay(double seconds, void *tag);

/* Run the simulation until no activity is left. */
void sgb_run(void);

/* Current simulated time in seconds. */
double sgb_now(void);

/* Activities started and not yet completed (for sanity checks). */
long sgb_live(void);

#ifdef __cplusplus
}
#endif

#endif
