/*
 * study.h - a scaling study: the scenarios of `weft sweep`, read from a
 * study file and expanded into a table of settings.
 *
 *   <study name="strong-scaling">
 *     <set model="gpt3-175b" cluster="selene" global_batch="1536"/>
 *     <var name="nodes"/>                       (a value weft run does not take)
 *     <cross>                                   (every combination)
 *       <axis name="gpus" values="256 512 1024"/>
 *       <zip>                                   (side by side)
 *         <axis name="tp" values="8 8"/>
 *         <axis name="pp" values="8 16"/>
 *       </zip>
 *     </cross>
 *     <scenario gpus="64" tp="4" pp="2"/>       (one more, as written)
 *     <derive name="nodes" expr="gpus / 8"/>
 *     <where expr="gpus >= tp * pp"/>           (keep only these)
 *   </study>
 *
 * The scenarios are those of the generators (<cross>, <zip>, <scenario>)
 * one after the other, in document order; a study without generators has
 * one.  In each, a value comes from its generator, else from <set>; then
 * the <derive>s are evaluated in order (expr.h) and the <where>s filter.
 * An <axis> lists `values` (separated by blanks; "-" leaves the name unset
 * in that scenario, so weft run's default applies) or a range: `from`,
 * `to` and `step` (added) or `times` (multiplied).  Every name must be a
 * setting the sweep passes on (the caller's classify function says which)
 * or be declared by <var>; '-' and '_' are the same in names.
 *
 * A scenario whose derivation fails (a value not a number, a division by
 * zero) stays in the table with the reason, so that the sweep records it.
 */
#ifndef WEFT_STUDY_H
#define WEFT_STUDY_H

#include <stdbool.h>
#include <stdint.h>

#include "sim/base/err.h"

#define STUDY_MAX_VARS 64          /* names (columns) of one study */
#define STUDY_MAX_SCENARIOS 1000000
#define STUDY_MAX_VALUE 256        /* characters of one value */
#define STUDY_MAX_NAME 64

/* How the sweep uses a name; the caller's classify function decides for
 * every name but those of <var>. */
enum study_use {
  SU_VAR,      /* the study's own value: a column, not passed on */
  SU_SETTING,  /* passed on as --name VALUE */
  SU_FLAG,     /* passed on as --name when true (true/false, yes/no) */
  SU_POSITION, /* passed on as the positional argument (a workload file) */
};

/* Returns 0 and sets *use for a name the sweep knows, or -1. */
typedef int (*study_classify_fn)(const char *name, enum study_use *use);

struct study_column {
  char name[STUDY_MAX_NAME]; /* as written first, '-' turned into '_' */
  enum study_use use;
};

struct study {
  char name[STUDY_MAX_NAME];  /* the study's name attribute ("" if none) */
  int ncols;
  struct study_column cols[STUDY_MAX_VARS];
  long n;           /* scenarios */
  char **values;    /* n x ncols, NULL where a scenario does not set one */
  char **reason;    /* n: why a scenario cannot run (derivation), or NULL */
  /* private: every string the table points to */
  char **pool;
  long npool, cap_pool;
};

/* Read and expand `path`.  On success fills *out (release it with
 * study_release); on failure `err` is "FILE:LINE: <elem>: what". */
int study_load(const char *path, study_classify_fn classify,
               struct study *out, struct weft_err *err) WEFT_WUR;

/* The same from a buffer named `name`. */
int study_load_mem(const char *buf, size_t len, const char *name,
                   study_classify_fn classify, struct study *out,
                   struct weft_err *err) WEFT_WUR;

void study_release(struct study *s);

/* Value of column `col` in scenario `i` (NULL when unset). */
const char *study_value(const struct study *s, long i, int col);

/* The scenario's key: 16 hex digits of a 64-bit FNV-1a hash of its
 * "name=value" pairs in column order, the same whatever the scenario's
 * position, so that a resumed sweep recognises it. */
void study_key(const struct study *s, long i, char out[17]);

#endif
