/*
 * pool.c - a pool of forked children, up to N at once (sim/pool.h).
 *
 * One loop in the parent: start tasks while slots are free, poll the
 * children's pipes (at most 250 ms, less when a timeout or the budget
 * falls sooner), read what is ready, kill what ran too long or wrote too
 * much, and hand back each child whose two pipes reached end of file,
 * after reaping it.  A child is reaped exactly once and only then leaves
 * its slot, so the pool never signals a pid that may have been reused.
 */
#include "sim/pool.h"

#include <errno.h>
#include <math.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#ifdef __linux__
#include <sys/prctl.h>
#endif

#include "sim/base/xalloc.h"

struct buf {
  char *s;
  size_t len, cap;
};

struct slot {
  pid_t pid;
  void *task;
  int fd[2]; /* stdout, stderr; -1 once at end of file */
  struct buf text[2];
  double t0;
  enum pool_end end; /* POOL_EXITED until the pool kills it */
};

static volatile sig_atomic_t pool_signal;

static void on_signal(int sig)
{
  pool_signal = sig;
}

static double now_s(void)
{
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static void buf_append(struct buf *b, const char *s, size_t n)
{
  if (b->len + n + 1 > b->cap) {
    b->cap = b->cap ? 2 * b->cap : 256;
    while (b->cap < b->len + n + 1)
      b->cap *= 2;
    b->s = xrealloc(b->s, b->cap);
  }
  memcpy(b->s + b->len, s, n);
  b->len += n;
  b->s[b->len] = '\0';
}

/* In the child: never returns. */
static void child_main(pool_child_fn *run, void *task, const int po[2],
                       const int pe[2], pid_t parent)
{
  /* Blocked, not ignored: SimGrid sets its own SIGINT handler when its
   * engine starts, which would replace SIG_IGN but leaves the mask alone.
   * A signal to the process group stays pending here; the parent, which
   * takes it, kills this child with SIGKILL. */
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGTERM);
  sigprocmask(SIG_BLOCK, &set, NULL);
  signal(SIGINT, SIG_DFL);
  signal(SIGTERM, SIG_DFL);
  signal(SIGPIPE, SIG_DFL);
#ifdef __linux__
  /* No orphan simulating on if the parent dies without stopping us (by
   * SIGKILL, say); the check covers a parent gone before the prctl. */
  prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (getppid() != parent)
    _exit(3);
#else
  (void)parent;
#endif
  close(po[0]);
  close(pe[0]);
  if (dup2(po[1], STDOUT_FILENO) < 0 || dup2(pe[1], STDERR_FILENO) < 0)
    _exit(3);
  close(po[1]);
  close(pe[1]);
  int rc = run(task);
  fflush(stdout);
  fflush(stderr);
  _exit(rc);
}

/* Fork a child for `task` into slot `s`. */
static int start(struct slot *s, pool_child_fn *run, void *task,
                 struct weft_err *err)
{
  int po[2], pe[2];
  if (pipe(po) < 0)
    return weft_errf(err, WEFT_EIO, "cannot create a pipe: %s",
                     strerror(errno));
  if (pipe(pe) < 0) {
    int e = errno;
    close(po[0]);
    close(po[1]);
    return weft_errf(err, WEFT_EIO, "cannot create a pipe: %s", strerror(e));
  }
  fflush(NULL); /* or the child would write the parent's buffers again */
  pid_t parent = getpid();
  pid_t pid = fork();
  if (pid < 0) {
    int e = errno;
    close(po[0]);
    close(po[1]);
    close(pe[0]);
    close(pe[1]);
    return weft_errf(err, WEFT_EIO, "cannot start a process: %s",
                     strerror(e));
  }
  if (pid == 0)
    child_main(run, task, po, pe, parent);
  close(po[1]);
  close(pe[1]);
  memset(s, 0, sizeof *s);
  s->pid = pid;
  s->task = task;
  s->fd[0] = po[0];
  s->fd[1] = pe[0];
  s->t0 = now_s();
  s->end = POOL_EXITED;
  buf_append(&s->text[0], "", 0);
  buf_append(&s->text[1], "", 0);
  return 0;
}

static void reap(pid_t pid, int *ws)
{
  while (waitpid(pid, ws, 0) < 0 && errno == EINTR)
    ;
}

/* Hand slot `s` (reaped, status `ws`) back to the caller and free it. */
static int hand_back(const struct pool_ops *ops, void *ctx, struct slot *s,
                     int ws, double t, struct weft_err *err)
{
  struct pool_result r = {s->end, ws, t - s->t0, s->text[0].s, s->text[1].s,
                          s->text[0].len, s->text[1].len};
  int rc = ops->done(ctx, s->task, &r, err);
  free(s->text[0].s);
  free(s->text[1].s);
  return rc;
}

static void kill_slot(struct slot *s, enum pool_end why)
{
  if (s->end != POOL_EXITED)
    return;
  kill(s->pid, SIGKILL);
  s->end = why;
}

/* Read what is ready on the children's pipes, waiting up to wait_ms. */
static int collect(struct slot *sl, int running, struct pollfd *pf, int *map,
                   int wait_ms, size_t max_output, struct weft_err *err)
{
  int np = 0;
  for (int c = 0; c < running; c++)
    for (int k = 0; k < 2; k++)
      if (sl[c].fd[k] >= 0) {
        pf[np] = (struct pollfd){sl[c].fd[k], POLLIN, 0};
        map[np++] = 2 * c + k;
      }
  int pr = poll(pf, (nfds_t)np, wait_ms);
  if (pr < 0 && errno != EINTR)
    return weft_errf(err, WEFT_EIO, "poll: %s", strerror(errno));
  if (pool_signal)
    return 0; /* stopping: nothing read now counts as finished */
  for (int q = 0; q < np && pr > 0; q++) {
    if (!(pf[q].revents & (POLLIN | POLLHUP | POLLERR)))
      continue;
    struct slot *s = &sl[map[q] / 2];
    int k = map[q] % 2;
    char buf[65536];
    ssize_t n = read(s->fd[k], buf, sizeof buf);
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0) {
      close(s->fd[k]);
      s->fd[k] = -1;
    } else if (max_output && s->text[k].len + (size_t)n > max_output) {
      kill_slot(s, POOL_TOO_LOUD); /* read on to the end, keeping nothing */
    } else {
      buf_append(&s->text[k], buf, (size_t)n);
    }
  }
  return 0;
}

/* How long to wait for the pipes: at most 250 ms, and not past the next
 * timeout or the end of the budget. */
static int wait_ms(const struct pool_opts *o, const struct slot *sl,
                   int running, double t, double t0)
{
  double w = 0.25;
  if (o->budget_s > 0 && o->budget_s - (t - t0) < w)
    w = o->budget_s - (t - t0);
  for (int c = 0; c < running && o->timeout_s > 0; c++)
    if (sl[c].end == POOL_EXITED && o->timeout_s - (t - sl[c].t0) < w)
      w = o->timeout_s - (t - sl[c].t0);
  /* a millisecond past the deadline, so that it has passed on waking */
  return w <= 0 ? 0 : (int)ceil(w * 1e3) + 1;
}

int pool_run(const struct pool_opts *o, const struct pool_ops *ops,
             void *ctx, struct weft_err *err)
{
  int jobs = o->jobs < 1 ? 1 : o->jobs > POOL_MAX_JOBS ? POOL_MAX_JOBS
                                                       : o->jobs;
  struct slot *sl = xcalloc((size_t)jobs, sizeof *sl);
  struct pollfd *pf = xcalloc(2 * (size_t)jobs, sizeof *pf);
  int *map = xcalloc(2 * (size_t)jobs, sizeof *map);
  struct sigaction sa, old_int, old_term;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = on_signal;
  sigemptyset(&sa.sa_mask);
  pool_signal = 0;
  sigaction(SIGINT, &sa, &old_int);
  sigaction(SIGTERM, &sa, &old_term);
  double t0 = now_s();
  int running = 0, rc = 0;
  bool more = true;
  int budget = 0; /* 1: spent, a last look at the pipes; 2: cutting */
  while (!rc && !pool_signal) {
    double t = now_s();
    if (o->budget_s > 0 && t - t0 >= o->budget_s && !budget)
      budget = 1;
    while (more && !budget && running < jobs && !pool_signal) {
      pool_child_fn *run = NULL;
      void *task = NULL;
      int n = ops->next(ctx, &run, &task, err);
      if (n <= 0) {
        more = false;
        rc = n;
        break;
      }
      rc = start(&sl[running], run, task, err);
      if (rc) { /* handed back unstarted */
        struct weft_err ignored = {0};
        struct pool_result r = {POOL_STOPPED, 0, 0, "", "", 0, 0};
        ops->done(ctx, task, &r, &ignored);
        break;
      }
      running++;
    }
    if (rc || pool_signal || !running)
      break;
    if (budget == 2)
      for (int c = 0; c < running; c++)
        kill_slot(&sl[c], POOL_CUT);
    /* spent: one look without waiting, then wait for the cut ones */
    int ms = budget == 1 ? 0 : budget ? 250 : wait_ms(o, sl, running, t, t0);
    rc = collect(sl, running, pf, map, ms, o->max_output, err);
    if (rc || pool_signal)
      break;
    t = now_s();
    for (int c = 0; c < running && !rc; c++) {
      struct slot *s = &sl[c];
      if (o->timeout_s > 0 && t - s->t0 > o->timeout_s)
        kill_slot(s, POOL_TIMED_OUT);
      if (s->fd[0] >= 0 || s->fd[1] >= 0)
        continue;
      int ws = 0;
      reap(s->pid, &ws);
      rc = hand_back(ops, ctx, s, ws, t, err);
      sl[c] = sl[--running];
      c--;
    }
    if (budget == 1)
      budget = 2;
    if (ops->tick)
      ops->tick(ctx, running);
  }
  /* Stopped (a signal or an error): kill, reap and hand back the rest. */
  for (int c = 0; c < running; c++) {
    struct slot *s = &sl[c];
    kill_slot(s, POOL_STOPPED);
    s->end = POOL_STOPPED;
    for (int k = 0; k < 2; k++)
      if (s->fd[k] >= 0)
        close(s->fd[k]);
    int ws = 0;
    reap(s->pid, &ws);
    struct weft_err ignored = {0};
    hand_back(ops, ctx, s, ws, now_s(), &ignored);
  }
  sigaction(SIGINT, &old_int, NULL);
  sigaction(SIGTERM, &old_term, NULL);
  free(sl);
  free(pf);
  free(map);
  return rc ? rc : pool_signal;
}
