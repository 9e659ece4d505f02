/*
 * xin.c - libxml2 behind a small interface.  The parser runs with NONET and
 * without NOENT (entities are never substituted) and any DOCTYPE is refused,
 * so no input can fetch a URL or expand into a billion laughs.
 */
#include "xin.h"

#include <libxml/parser.h>
#include <libxml/tree.h>
#include <libxml/xmlerror.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdint.h>
#include <string.h>
#include <stdlib.h>

#include "bounds.h"
#include "infile.h"
#include "xalloc.h"

struct xin_doc {
  xmlDocPtr doc;
  char *name;
  char *text;  /* the source, to find where start tags begin */
  size_t len;
};

/* libxml2's accessors take non-const nodes; weft's elements are const
 * views that never write through them, so the const is dropped here,
 * once, on purpose (through uintptr_t, which -Wcast-qual accepts). */
#define NODE(e) ((xmlNodePtr)(uintptr_t)(e))
#define ELEM(n) ((const struct xin_elem *)(n))

static void silent(void *ctx, const char *msg, ...)
{
  (void)ctx;
  (void)msg;
}

/* The first error of a parse: libxml2 goes on after an error and its last
 * message ("Premature end of data") is usually a consequence, not the cause. */
static struct {
  bool set;
  int line;
  char msg[256];
} first_error;

static void capture_first(void *ctx, const xmlError *e)
{
  (void)ctx;
  if (first_error.set || !e || e->level < XML_ERR_ERROR)
    return;
  first_error.set = true;
  first_error.line = e->line > 0 ? e->line : 1;
  snprintf(first_error.msg, sizeof first_error.msg, "%s",
           e->message ? e->message : "malformed XML");
  size_t n = strlen(first_error.msg);
  while (n && (first_error.msg[n - 1] == '\n' || first_error.msg[n - 1] == ' '))
    first_error.msg[--n] = '\0';
}

/* 1-based line of byte offset `off` in `text`. */
static int line_at(const char *text, size_t off)
{
  int line = 1;
  for (size_t i = 0; i < off; i++)
    line += text[i] == '\n';
  return line;
}

static struct xin_doc *finish(xmlDocPtr d, xmlParserCtxtPtr ctxt,
                              const char *name, const char *buf, size_t len,
                              struct weft_err *err)
{
  if (!d || first_error.set) {
    if (first_error.set)
      weft_errf(err, WEFT_EINVAL, "%s:%d: malformed XML: %s", name,
                first_error.line, first_error.msg);
    else
      weft_errf(err, WEFT_EINVAL, "%s:1: malformed XML", name);
    xmlFreeDoc(d);
    xmlFreeParserCtxt(ctxt);
    return NULL;
  }
  xmlFreeParserCtxt(ctxt);
  if (d->intSubset || d->extSubset) {
    const char *p = strstr(buf, "<!DOCTYPE");
    int line = p ? line_at(buf, (size_t)(p - buf)) : 1;
    weft_errf(err, WEFT_EINVAL, "%s:%d: DOCTYPE declarations are not allowed",
              name, line);
    xmlFreeDoc(d);
    return NULL;
  }
  if (!xmlDocGetRootElement(d)) {
    weft_errf(err, WEFT_EINVAL, "%s:1: no root element", name);
    xmlFreeDoc(d);
    return NULL;
  }
  struct xin_doc *x = xmalloc(sizeof *x);
  x->doc = d;
  x->name = xstrdup(name);
  x->text = xmalloc(len + 1);
  memcpy(x->text, buf, len);
  x->text[len] = '\0';
  x->len = len;
  return x;
}

static const int parse_opts = XML_PARSE_NONET | XML_PARSE_NOCDATA;

struct xin_doc *xin_parse_mem(const char *buf, size_t len, const char *name,
                              struct weft_err *err)
{
  if (len > WEFT_MAX_XML_BYTES) {
    weft_errf(err, WEFT_ELIMIT, "%s: %zu bytes exceeds the limit of %d bytes",
              name, len, WEFT_MAX_XML_BYTES);
    return NULL;
  }
  /* libxml2 stops at a NUL byte as if the file ended there. */
  const char *nul = memchr(buf, '\0', len);
  if (nul) {
    int line = 1;
    for (const char *c = buf; c < nul; c++)
      line += *c == '\n';
    weft_errf(err, WEFT_EINVAL, "%s:%d: NUL byte: not a text file", name,
              line);
    return NULL;
  }
  xmlSetGenericErrorFunc(NULL, silent);
  xmlSetStructuredErrorFunc(NULL, (xmlStructuredErrorFunc)capture_first);
  first_error.set = false;
  xmlParserCtxtPtr ctxt = xmlNewParserCtxt();
  xmlDocPtr d = xmlCtxtReadMemory(ctxt, buf, (int)len, name, NULL, parse_opts);
  return finish(d, ctxt, name, buf, len, err);
}

struct xin_doc *xin_parse_file(const char *path, struct weft_err *err)
{
  FILE *f = infile_open(path, err);
  if (!f)
    return NULL;
  size_t cap = 1 << 16, len = 0;
  char *buf = xmalloc(cap);
  for (;;) {
    size_t n = fread(buf + len, 1, cap - len, f);
    len += n;
    if (len > WEFT_MAX_XML_BYTES)
      break;
    if (n == 0)
      break;
    if (len == cap) {
      cap *= 2;
      buf = xrealloc(buf, cap);
    }
  }
  int bad = ferror(f);
  fclose(f);
  struct xin_doc *d = NULL;
  if (bad)
    weft_errf(err, WEFT_EIO, "%s: read error", path);
  else if (len > WEFT_MAX_XML_BYTES)
    weft_errf(err, WEFT_ELIMIT, "%s: larger than the limit of %d bytes", path,
              WEFT_MAX_XML_BYTES);
  else
    d = xin_parse_mem(buf, len, path, err);
  free(buf);
  return d;
}

void xin_free(struct xin_doc *doc)
{
  if (!doc)
    return;
  xmlFreeDoc(doc->doc);
  free(doc->name);
  free(doc->text);
  free(doc);
}

const char *xin_doc_name(const struct xin_doc *doc) { return doc->name; }

static xmlNodePtr skip_to_elem(xmlNodePtr n)
{
  while (n && n->type != XML_ELEMENT_NODE)
    n = n->next;
  return n;
}

const struct xin_elem *xin_root(const struct xin_doc *doc)
{
  return ELEM(xmlDocGetRootElement(doc->doc));
}

const struct xin_elem *xin_child(const struct xin_elem *e)
{
  return ELEM(skip_to_elem(NODE(e)->children));
}

const struct xin_elem *xin_next(const struct xin_elem *e)
{
  return ELEM(skip_to_elem(NODE(e)->next));
}

const char *xin_name(const struct xin_elem *e)
{
  return (const char *)NODE(e)->name;
}

/* libxml2 records the line where a start tag ends; people expect the line
 * where it begins.  Attribute values cannot contain '<', so the last "<name"
 * before the end of the recorded line is this element's start. */
static int start_line(const struct xin_doc *doc, const struct xin_elem *e)
{
  int end_line = (int)xmlGetLineNo(NODE(e));
  size_t off = 0;
  for (int l = 1; off < doc->len && l <= end_line; off++)
    if (doc->text[off] == '\n')
      l++;
  const char *nm = xin_name(e);
  size_t nlen = strlen(nm);
  for (size_t i = off; i-- > 0;) {
    if (doc->text[i] == '<' && i + 1 + nlen <= doc->len &&
        strncmp(doc->text + i + 1, nm, nlen) == 0) {
      char c = doc->text[i + 1 + nlen];
      if (c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '/' ||
          c == '>')
        return line_at(doc->text, i);
    }
  }
  return end_line;
}

int xin_line_in(const struct xin_doc *doc, const struct xin_elem *e)
{
  return start_line(doc, e);
}

int xin_errf(const struct xin_doc *doc, const struct xin_elem *e,
             struct weft_err *err, int code, const char *fmt, ...)
{
  char msg[WEFT_ERR_MAX];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  return weft_errf(err, code, "%s:%d: <%s>: %s", doc->name,
                   start_line(doc, e), xin_name(e), msg);
}

int xin_check_root(const struct xin_doc *doc, const char *name,
                   struct weft_err *err)
{
  const struct xin_elem *root = xin_root(doc);
  if (strcmp(xin_name(root), name) == 0)
    return 0;
  return xin_errf(doc, root, err, WEFT_EINVAL, "unknown root element; "
                  "expected <%s>", name);
}

int xin_check_attrs(const struct xin_doc *doc, const struct xin_elem *e,
                    const char *const *allowed, struct weft_err *err)
{
  for (xmlAttrPtr a = NODE(e)->properties; a; a = a->next) {
    bool ok = false;
    for (const char *const *p = allowed; *p && !ok; p++)
      ok = strcmp(*p, (const char *)a->name) == 0;
    if (!ok)
      return xin_errf(doc, e, err, WEFT_EINVAL, "unknown attribute '%s'",
                      (const char *)a->name);
  }
  for (xmlNodePtr c = NODE(e)->children; c; c = c->next) {
    if (c->type == XML_TEXT_NODE) {
      for (const xmlChar *t = c->content; t && *t; t++)
        if (*t != ' ' && *t != '\t' && *t != '\n' && *t != '\r')
          return xin_errf(doc, e, err, WEFT_EINVAL, "unexpected text inside "
                          "the element");
    } else if (c->type == XML_ENTITY_REF_NODE) {
      return xin_errf(doc, e, err, WEFT_EINVAL, "entity references are not "
                      "allowed");
    }
  }
  return 0;
}

bool xin_has(const struct xin_elem *e, const char *attr)
{
  return xmlHasProp(NODE(e), (const xmlChar *)attr) != NULL;
}

int xin_each_attr(const struct xin_doc *doc, const struct xin_elem *e,
                  size_t max_len, xin_attr_fn fn, void *ctx,
                  struct weft_err *err)
{
  for (xmlAttrPtr a = NODE(e)->properties; a; a = a->next) {
    const char *name = (const char *)a->name;
    xmlChar *v = xmlGetProp(NODE(e), a->name);
    const char *value = v ? (const char *)v : "";
    int rc = 0;
    if (strlen(value) > max_len) {
      rc = xin_errf(doc, e, err, WEFT_ELIMIT, "attribute '%s' is longer than "
                    "%zu characters", name, max_len);
    } else {
      char origin[WEFT_MAX_ORIGIN];
      xin_origin(doc, e, name, origin, sizeof origin);
      rc = fn(ctx, name, value, origin, err);
    }
    xmlFree(v);
    if (rc)
      return rc;
  }
  return 0;
}

/* Fetch an attribute as a heap string (caller frees with xmlFree) or NULL. */
static xmlChar *get(const struct xin_elem *e, const char *attr)
{
  return xmlGetProp(NODE(e), (const xmlChar *)attr);
}

static int missing(const struct xin_doc *doc, const struct xin_elem *e,
                   const char *attr, struct weft_err *err)
{
  return xin_errf(doc, e, err, WEFT_EINVAL, "missing attribute '%s'", attr);
}

int xin_str(const struct xin_doc *doc, const struct xin_elem *e,
            const char *attr, bool required, char *buf, size_t size,
            struct weft_err *err)
{
  xmlChar *v = get(e, attr);
  if (!v)
    return required ? missing(doc, e, attr, err) : 0;
  int rc = 0;
  size_t n = strlen((const char *)v);
  if (n == 0)
    rc = xin_errf(doc, e, err, WEFT_EINVAL, "attribute '%s' is empty", attr);
  else if (n >= size)
    rc = xin_errf(doc, e, err, WEFT_ELIMIT, "attribute '%s' is longer than "
                  "%zu characters", attr, size - 1);
  else
    memcpy(buf, v, n + 1);
  xmlFree(v);
  return rc;
}

void xin_origin(const struct xin_doc *doc, const struct xin_elem *e,
                const char *attr, char *buf, size_t size)
{
  snprintf(buf, size, "%s:%d: <%s> attribute '%s'", doc->name,
           start_line(doc, e), xin_name(e), attr);
}

int xin_apply(const struct xin_doc *doc, const struct xin_elem *e,
              const char *const *keys, size_t max_len, xin_set_fn set,
              void *ctx, struct weft_err *err)
{
  char *value = xmalloc(max_len + 1);
  int rc = 0;
  for (int k = 0; keys[k] && !rc; k++) {
    if (!xin_has(e, keys[k]))
      continue;
    rc = xin_str(doc, e, keys[k], true, value, max_len + 1, err);
    if (rc)
      break;
    char origin[WEFT_MAX_ORIGIN];
    xin_origin(doc, e, keys[k], origin, sizeof origin);
    rc = set(ctx, k, value, origin, err);
  }
  free(value);
  return rc;
}

static int wrap(const struct xin_doc *doc, const struct xin_elem *e,
                const char *attr, int rc, struct weft_err *err)
{
  char msg[WEFT_ERR_MAX];
  snprintf(msg, sizeof msg, "%s", err ? err->msg : "");
  return xin_errf(doc, e, err, rc, "attribute '%s': %s", attr, msg);
}

static int quantity(const struct xin_doc *doc, const struct xin_elem *e,
                    const char *attr, bool required, enum unit_kind kind,
                    double max, bool zero_ok, double *out,
                    struct weft_err *err)
{
  xmlChar *v = get(e, attr);
  if (!v)
    return required ? missing(doc, e, attr, err) : 0;
  double x;
  int rc = zero_ok ? units_parse((const char *)v, kind, &x, err)
                   : units_parse_pos((const char *)v, kind, max, &x, err);
  if (!rc && zero_ok && x > max) {
    char b[64];
    rc = weft_errf(err, WEFT_ELIMIT, "'%s' exceeds the limit of %s",
                   (const char *)v, units_fmt_human(max, kind, b, sizeof b));
  }
  xmlFree(v);
  if (rc)
    return wrap(doc, e, attr, rc, err);
  *out = x;
  return 0;
}

int xin_quantity(const struct xin_doc *doc, const struct xin_elem *e,
                 const char *attr, bool required, enum unit_kind kind,
                 double max, double *out, struct weft_err *err)
{
  return quantity(doc, e, attr, required, kind, max, false, out, err);
}

int xin_quantity0(const struct xin_doc *doc, const struct xin_elem *e,
                  const char *attr, bool required, enum unit_kind kind,
                  double max, double *out, struct weft_err *err)
{
  return quantity(doc, e, attr, required, kind, max, true, out, err);
}

int xin_int(const struct xin_doc *doc, const struct xin_elem *e,
            const char *attr, bool required, long min, long max, long *out,
            struct weft_err *err)
{
  xmlChar *v = get(e, attr);
  if (!v)
    return required ? missing(doc, e, attr, err) : 0;
  long x;
  int rc = units_parse_int((const char *)v, min, max, &x, err);
  xmlFree(v);
  if (rc)
    return wrap(doc, e, attr, rc, err);
  *out = x;
  return 0;
}

int xin_real(const struct xin_doc *doc, const struct xin_elem *e,
             const char *attr, bool required, double min, double max,
             double *out, struct weft_err *err)
{
  xmlChar *v = get(e, attr);
  if (!v)
    return required ? missing(doc, e, attr, err) : 0;
  double x;
  int rc = units_parse_real((const char *)v, min, max, &x, err);
  xmlFree(v);
  if (rc)
    return wrap(doc, e, attr, rc, err);
  *out = x;
  return 0;
}
