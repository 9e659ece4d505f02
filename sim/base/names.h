/*
 * names.h - settings named in files and flags: "gpus_per_node" in XML is
 * "--gpus-per-node" on the command line, and a setting with a few allowed
 * words ("none", "selective", "full") says which when it gets another.
 */
#ifndef WEFT_NAMES_H
#define WEFT_NAMES_H

#include <stdbool.h>
#include <stddef.h>

#include "err.h"

/* True when `name` is `key`, a '-' in `name` standing for '_'. */
bool names_eq(const char *name, const char *key);

/* The index of `name` among the NULL-terminated `keys` (names_eq), or -1. */
int names_find(const char *name, const char *const *keys);

/* The index of `name` (names_eq) among `count` records of `stride` bytes
 * at `table` whose first member is their `const char *` name, or -1: the
 * lookup of a settings table of structs. */
int names_index(const char *name, const void *table, int count, size_t stride);

/* Set *out to the index of `value` among the NULL-terminated `choices`, or
 * fail with "'value' is not a, b or c".  *out is untouched on failure. */
int names_choice(const char *value, const char *const *choices, int *out,
                 struct weft_err *err) WEFT_WUR;

/* A key as its command-line flag, with a value if not NULL:
 * "--gpus-per-node 8" for ("gpus_per_node", "8"). */
void names_flag(const char *key, const char *value, char *buf, size_t size);

/* Names longer than this are never close to anything. */
#define NAMES_MAX_LEN 64

/* Edit distance between two names (insertions, deletions, substitutions
 * and swaps of neighbours; case and '-'/'_' ignored). */
int names_distance(const char *a, const char *b);

/* Whether `key` is a plausible intent of the mistyped `name` (within 1
 * edit for names under 4 characters, 2 under 8, 3 beyond): the test of a
 * "did you mean" suggestion. */
bool names_close(const char *name, const char *key);

#endif
