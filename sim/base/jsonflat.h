/*
 * jsonflat.h - one JSON object (weft run --json) as flat "key = value"
 * pairs: nested objects join their keys with '.' ("memory.total_bytes",
 * "inputs.plan.tp"), array elements with their index ("a.0.b").  Strings
 * are unescaped, numbers and true/false come as written, null as "".
 */
#ifndef WEFT_JSONFLAT_H
#define WEFT_JSONFLAT_H

#include <stddef.h>

#include "sim/base/err.h"

#define JSONFLAT_MAX_DEPTH 32
#define JSONFLAT_MAX_KEY 256

/* Call fn(ctx, key, value) for every scalar of the object in `text`
 * (`len` bytes), in document order.  Fails on malformed JSON, on nesting
 * deeper than JSONFLAT_MAX_DEPTH and on a key path longer than
 * JSONFLAT_MAX_KEY, with "what at byte N". */
typedef void (*jsonflat_fn)(void *ctx, const char *key, const char *value);
int jsonflat(const char *text, size_t len, jsonflat_fn fn, void *ctx,
             struct weft_err *err) WEFT_WUR;

#endif
