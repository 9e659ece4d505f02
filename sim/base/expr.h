/*
 * expr.h - the arithmetic of study files: derived values such as
 * "gpus / (tp * pp)" and filters such as "tp * pp <= gpus".
 *
 * An expression is parsed once and evaluated per scenario against a lookup
 * of its variables.  Numbers are doubles; comparisons and && || ! give 1 or
 * 0; `c ? a : b` chooses.  Operators, loosest first: ?:  ||  &&
 * == != < <= > >=  + -  * / %  unary - !  ^ (power, right-associative).
 * Functions: min(a, b), max(a, b), pow(a, b), floor, ceil, round, sqrt,
 * log2, abs.  Variables are names of letters, digits and '_' (write
 * global_batch, not global-batch: '-' is subtraction).
 */
#ifndef WEFT_EXPR_H
#define WEFT_EXPR_H

#include <stdbool.h>
#include <stddef.h>

#include "sim/base/err.h"

#define EXPR_MAX_LEN 1024  /* characters of one expression */
#define EXPR_MAX_DEPTH 64  /* nesting of parentheses and operators */

struct expr;

/* Parse `src`; `origin` ("study.xml:12: <derive> attribute 'expr'") starts
 * every message.  Returns the expression (caller frees with expr_free) or
 * NULL with `err` naming the position of the error. */
struct expr *expr_parse(const char *src, const char *origin,
                        struct weft_err *err);
void expr_free(struct expr *e);

/* Call fn(ctx, name) for every variable the expression reads, in the
 * order they appear (repeats included); stops at and returns fn's first
 * non-zero result. */
int expr_each_var(const struct expr *e, int (*fn)(void *ctx, const char *name),
                  void *ctx);

/* The value of variable `name`, as text (NULL: not set in this scenario). */
typedef const char *(*expr_lookup_fn)(void *ctx, const char *name);

/* Evaluate into *out.  Fails (without a file position: the caller says
 * which scenario) when a variable is not set or not a number, on division
 * by zero and on a result that is not finite. */
int expr_eval(const struct expr *e, expr_lookup_fn lookup, void *ctx,
              double *out, struct weft_err *err) WEFT_WUR;

/* Write `v` as a study value: an integer without a decimal point when it
 * is one (below 2^53), else with up to 10 significant digits (17 where 10
 * would round past the largest double and read back as infinity). */
void expr_format(double v, char *buf, size_t size);

#endif
