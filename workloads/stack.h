/*
 * stack.h - software stacks: how a framework runs a job, as one setting.
 *
 * A stack names the plan settings that one framework's code fixes (its
 * attention kernel, pipeline transfers, gradient buffers and reduction,
 * parameter sharding, cross-entropy, host-side costs...), each value read
 * from that framework's code or configuration at the version named.
 * `stack=NAME` (--stack NAME) applies them to every setting the job does
 * not set itself: settings given in the workload or as flags override the
 * stack wherever they appear.  `weft list stacks` prints the table.
 */
#ifndef WEFT_STACK_H
#define WEFT_STACK_H

#include "sim/base/err.h"

struct plan;

struct stack_setting {
  const char *key;   /* a plan setting's name (plan.h) */
  const char *value;
};

enum { STACK_MAX_SETTINGS = 16 };

struct stack {
  const char *name;
  const char *about;   /* one line: the framework and its version */
  const char *source;  /* where the values come from */
  struct stack_setting set[STACK_MAX_SETTINGS]; /* ends at a NULL key */
};

int stack_count(void);
const struct stack *stack_at(int i);

/* The stack called `name`, or NULL. */
const struct stack *stack_named(const char *name);

/* 0 when `name` is a stack, else an error listing the stacks. */
int stack_check(const char *name, struct weft_err *err) WEFT_WUR;

/* Apply stack `name` to every setting of `p` not set yet, with origin
 * "stack NAME".  Errors name `origin` and list the stacks. */
int stack_apply(struct plan *p, const char *name, const char *origin,
                struct weft_err *err) WEFT_WUR;

#endif
