/*
 * xin.h - reading weft's own XML input files (catalogs, clusters, models,
 * workloads) with exact error locations.
 *
 * A thin layer over libxml2 that keeps libxml2 types out of every other
 * module.  Documents are parsed without network access, without entity
 * expansion and without DTDs (a DOCTYPE is rejected), and are limited to
 * WEFT_MAX_XML_BYTES.  Every getter reports errors as
 * "FILE:LINE: <elem> attribute 'name': what is wrong".
 */
#ifndef WEFT_XIN_H
#define WEFT_XIN_H

#include <stdbool.h>
#include <stddef.h>

#include "err.h"
#include "units.h"

struct xin_doc;
struct xin_elem;

/* Parse a file or an in-memory buffer named `name` (used in messages).
 * Returns a document the caller frees with xin_free, or NULL with `err`. */
struct xin_doc *xin_parse_file(const char *path, struct weft_err *err);
struct xin_doc *xin_parse_mem(const char *buf, size_t len, const char *name,
                              struct weft_err *err);
void xin_free(struct xin_doc *doc);

/* The name used in messages (the path, or the buffer's name). */
const char *xin_doc_name(const struct xin_doc *doc);

/* Navigation over element nodes only (text and comments are skipped). */
const struct xin_elem *xin_root(const struct xin_doc *doc);
const struct xin_elem *xin_child(const struct xin_elem *e);
const struct xin_elem *xin_next(const struct xin_elem *e);
const char *xin_name(const struct xin_elem *e);
/* The line where the element's start tag begins. */
int xin_line_in(const struct xin_doc *doc, const struct xin_elem *e);

/* Set err to "FILE:LINE: <elem>: " followed by the formatted message. */
int xin_errf(const struct xin_doc *doc, const struct xin_elem *e,
             struct weft_err *err, int code, const char *fmt, ...)
    WEFT_PRINTF(5, 6);

/* Fail unless the root element is <name>: "unknown root element; expected
 * <name>". */
int xin_check_root(const struct xin_doc *doc, const char *name,
                   struct weft_err *err) WEFT_WUR;

/* Fail on any attribute of `e` not in the NULL-terminated list `allowed`,
 * and on non-blank text inside `e`. */
int xin_check_attrs(const struct xin_doc *doc, const struct xin_elem *e,
                    const char *const *allowed, struct weft_err *err) WEFT_WUR;

bool xin_has(const struct xin_elem *e, const char *attr);

/* Call fn(ctx, name, value, origin, err) for every attribute of `e` in
 * document order, with values of at most `max_len` characters (a longer
 * one is an error naming it) and the attribute's xin_origin.  Stops at and
 * returns the first error. */
typedef int (*xin_attr_fn)(void *ctx, const char *name, const char *value,
                           const char *origin, struct weft_err *err);
int xin_each_attr(const struct xin_doc *doc, const struct xin_elem *e,
                  size_t max_len, xin_attr_fn fn, void *ctx,
                  struct weft_err *err) WEFT_WUR;

/* Copy attribute `attr` into buf (size bytes).  A missing required attribute,
 * an empty value and a value that does not fit are errors.  A missing
 * optional attribute leaves buf untouched and returns 0. */
int xin_str(const struct xin_doc *doc, const struct xin_elem *e,
            const char *attr, bool required, char *buf, size_t size,
            struct weft_err *err) WEFT_WUR;

/* Where attribute `attr` of `e` comes from, for messages:
 * "FILE:LINE: <elem> attribute 'attr'". */
void xin_origin(const struct xin_doc *doc, const struct xin_elem *e,
                const char *attr, char *buf, size_t size);

/* For each attribute of `e` named in the NULL-terminated `keys`, in key
 * order: read its value (at most `max_len` characters) and call
 * set(ctx, key index, value, origin, err) with the xin_origin of the
 * attribute.  Stops at and returns the first error. */
typedef int (*xin_set_fn)(void *ctx, int key, const char *value,
                          const char *origin, struct weft_err *err);
int xin_apply(const struct xin_doc *doc, const struct xin_elem *e,
              const char *const *keys, size_t max_len, xin_set_fn set,
              void *ctx, struct weft_err *err) WEFT_WUR;

/* A positive quantity with a unit, at most `max`.  Missing optional
 * attributes leave *out untouched. */
int xin_quantity(const struct xin_doc *doc, const struct xin_elem *e,
                 const char *attr, bool required, enum unit_kind kind,
                 double max, double *out, struct weft_err *err) WEFT_WUR;

/* Like xin_quantity but zero is allowed ("0W", "0s"). */
int xin_quantity0(const struct xin_doc *doc, const struct xin_elem *e,
                  const char *attr, bool required, enum unit_kind kind,
                  double max, double *out, struct weft_err *err) WEFT_WUR;

/* An integer in [min, max]. */
int xin_int(const struct xin_doc *doc, const struct xin_elem *e,
            const char *attr, bool required, long min, long max, long *out,
            struct weft_err *err) WEFT_WUR;

/* A plain real in [min, max]. */
int xin_real(const struct xin_doc *doc, const struct xin_elem *e,
             const char *attr, bool required, double min, double max,
             double *out, struct weft_err *err) WEFT_WUR;

#endif
