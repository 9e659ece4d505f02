/*
 * pool.h - a pool of forked children, each running one task, up to N at
 * once (in the manner of git's run_processes_parallel).  `weft sweep` runs
 * its scenarios and `weft plan` its simulations through it.
 *
 * The caller hands out tasks through callbacks: `next` gives the next task
 * and the function the child runs (no exec: SimGrid allows one engine per
 * process, which the fork gives each task), `done` takes each task back
 * with how it ended and what it wrote on its standard output and error,
 * both collected through pipes.  The pool can kill a task that runs past a
 * timeout or writes too much, and stop starting tasks when a budget of
 * wall time is spent.
 *
 * Signals: while the pool runs, SIGINT and SIGTERM are caught by this
 * process, which then kills every child with SIGKILL, reaps it and returns
 * the signal.  The children block both signals, so that a signal sent to
 * the whole process group (Ctrl-C on a terminal, `timeout`) reaches the
 * parent alone: SimGrid's own SIGINT handler (which exits through its
 * cleanup, unsafe in the middle of a simulation) never runs in a child,
 * and no child ends on its own for a signal meant to stop the pool.  On
 * Linux a child is also killed when the parent dies (even by SIGKILL).
 */
#ifndef WEFT_POOL_H
#define WEFT_POOL_H

#include <stdbool.h>
#include <stddef.h>

#include "sim/base/err.h"

/* What a task's child runs, with its standard output and error on the
 * pool's pipes; `task` is the pointer `next` gave.  Returns the child's
 * exit status (the pool flushes stdio and calls _exit with it: no atexit
 * handler, hence none of SimGrid's cleanup, runs in a child). */
typedef int pool_child_fn(void *task);

/* How a task ended. */
enum pool_end {
  POOL_EXITED,    /* on its own: `status` says how */
  POOL_TIMED_OUT, /* killed: it ran longer than the timeout */
  POOL_TOO_LOUD,  /* killed: more than max_output bytes on one pipe */
  POOL_CUT,       /* killed: the budget was spent */
  POOL_STOPPED    /* killed: the pool stopped (a signal or an error) */
};

struct pool_result {
  enum pool_end end;
  int status;           /* waitpid's status (SIGKILL when the pool killed it) */
  double wall_s;        /* from its start to its end */
  const char *out, *err; /* what it wrote, NUL-terminated (at most
                            max_output bytes each); borrowed until `done`
                            returns */
  size_t out_len, err_len;
};

struct pool_ops {
  /* The next task: sets *out_run and *out_task and returns 1, returns 0
   * when there is none (not asked again), or a negative error code with
   * `err` set (the pool stops).  Called in the parent, only while a slot is
   * free and the pool is neither stopping nor past its budget. */
  int (*next)(void *ctx, pool_child_fn **out_run, void **out_task,
              struct weft_err *err);
  /* Task `task` ended as `r` says; the caller takes the task back.  Returns
   * 0, or a negative error code with `err` set (the pool stops).  Called
   * for every task `next` gave, POOL_STOPPED ones included (their return
   * value is ignored; a task whose pipe or fork failed comes back so, with
   * status 0 and no output). */
  int (*done)(void *ctx, void *task, const struct pool_result *r,
              struct weft_err *err);
  /* Optional (NULL): called after every wake-up of the pool (at least
   * every 250 ms while tasks run), for progress; `running` children. */
  void (*tick)(void *ctx, int running);
};

struct pool_opts {
  int jobs;          /* children at once, 1 to POOL_MAX_JOBS */
  double timeout_s;  /* kill a task that runs longer (0: never) */
  double budget_s;   /* start nothing after this much wall time from the
                        pool's start, and kill what still runs then as
                        POOL_CUT (0: no budget) */
  size_t max_output; /* kill a task that writes more than this on either
                        pipe (0: no limit) */
};

enum { POOL_MAX_JOBS = 1024 };

/* Run tasks from ops->next until there are none (or the budget is spent),
 * one pool at a time in a process (the signal flag is the process's),
 * up to o->jobs at once, handing each to ops->done.  Catches SIGINT and
 * SIGTERM while it runs (their previous handlers are restored on return).
 * Returns 0 when every task given was handed back, the signal number (a
 * positive value) when SIGINT or SIGTERM came while it ran, or a negative error
 * code with `err` set: `next` or `done` failed, or a pipe, fork or poll
 * did.  Stopping, it kills every running child with SIGKILL, reaps it and
 * hands its task back as POOL_STOPPED; no child is left behind. */
int pool_run(const struct pool_opts *o, const struct pool_ops *ops,
             void *ctx, struct weft_err *err) WEFT_WUR;

#endif
