/*
 * jsonflat.c - a recursive-descent JSON reader that emits scalars with
 * their key paths (jsonflat.h); recursion is bounded by the depth limit.
 */
#include "sim/base/jsonflat.h"

#include <ctype.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sim/base/csv.h"

struct reader {
  const char *t;
  size_t len, i;
  jsonflat_fn fn;
  void *ctx;
  struct weft_err *err;
  char key[JSONFLAT_MAX_KEY + 1];
};

static int bad(struct reader *r, const char *what)
{
  return weft_errf(r->err, WEFT_EINVAL, "%s at byte %zu", what, r->i);
}

static void ws(struct reader *r)
{
  while (r->i < r->len && strchr(" \t\r\n", r->t[r->i]) && r->t[r->i])
    r->i++;
}

static void put_utf8(struct csv_buf *b, unsigned cp)
{
  char u[4];
  size_t n;
  if (cp < 0x80) {
    u[0] = (char)cp;
    n = 1;
  } else if (cp < 0x800) {
    u[0] = (char)(0xC0 | (cp >> 6));
    u[1] = (char)(0x80 | (cp & 0x3F));
    n = 2;
  } else {
    u[0] = (char)(0xE0 | (cp >> 12));
    u[1] = (char)(0x80 | ((cp >> 6) & 0x3F));
    u[2] = (char)(0x80 | (cp & 0x3F));
    n = 3;
  }
  csv_append(b, u, n);
}

/* A string at r->i (at its opening quote) into *out (owned by caller). */
static int string(struct reader *r, struct csv_buf *out)
{
  r->i++;
  csv_append(out, "", 0);
  while (r->i < r->len && r->t[r->i] != '"') {
    char c = r->t[r->i++];
    if ((unsigned char)c < 0x20)
      return bad(r, "a control character in a string");
    if (c != '\\') {
      csv_append(out, &c, 1);
      continue;
    }
    if (r->i >= r->len)
      break;
    c = r->t[r->i++];
    const char *esc = strchr("\"\\/bfnrt", c);
    if (esc && c) {
      static const char map[] = "\"\\/\b\f\n\r\t";
      csv_append(out, &map[esc - "\"\\/bfnrt"], 1);
    } else if (c == 'u' && r->i + 4 <= r->len) {
      char hex[5] = {0};
      memcpy(hex, r->t + r->i, 4);
      /* Four hex digits: strtoul alone also takes blanks and a sign, and
       * "\u-5e9" would become a code point past 0xFFFF (bytes that are
       * not UTF-8). */
      for (int k = 0; k < 4; k++)
        if (!isxdigit((unsigned char)hex[k]))
          return bad(r, "a bad \\u escape");
      unsigned long cp = strtoul(hex, NULL, 16);
      /* A NUL would cut the key or value short without a word. */
      if (cp == 0)
        return bad(r, "a \\u0000 escape (a NUL) in a string");
      r->i += 4;
      put_utf8(out, (unsigned)cp);
    } else {
      return bad(r, "a bad escape");
    }
  }
  if (r->i >= r->len)
    return bad(r, "a string does not end");
  r->i++;
  return 0;
}

static int value(struct reader *r, int depth);

/* Append ".part" (or "part" at the top) to the key; returns the old
 * length to restore, or -1 when too long. */
static long key_push(struct reader *r, const char *part)
{
  size_t old = strlen(r->key);
  size_t need = old + (old ? 1 : 0) + strlen(part);
  if (need > JSONFLAT_MAX_KEY)
    return -1;
  if (old)
    strcat(r->key, ".");
  strcat(r->key, part);
  return (long)old;
}

static int container(struct reader *r, int depth, bool object)
{
  if (depth >= JSONFLAT_MAX_DEPTH)
    return bad(r, "nested too deeply");
  r->i++;
  ws(r);
  char close = object ? '}' : ']';
  if (r->i < r->len && r->t[r->i] == close) {
    r->i++;
    return 0;
  }
  for (long index = 0;; index++) {
    ws(r);
    struct csv_buf name = {0};
    char num[32];
    const char *part = num;
    if (object) {
      if (r->i >= r->len || r->t[r->i] != '"')
        return bad(r, "expected a key");
      int rc = string(r, &name);
      if (rc) {
        csv_buf_free(&name);
        return rc;
      }
      ws(r);
      if (r->i >= r->len || r->t[r->i] != ':') {
        csv_buf_free(&name);
        return bad(r, "expected ':'");
      }
      r->i++;
      part = name.s;
    } else {
      snprintf(num, sizeof num, "%ld", index);
    }
    long old = key_push(r, part);
    csv_buf_free(&name);
    if (old < 0)
      return bad(r, "a key path too long");
    int rc = value(r, depth + 1);
    r->key[old] = '\0';
    if (rc)
      return rc;
    ws(r);
    if (r->i < r->len && r->t[r->i] == ',') {
      r->i++;
      continue;
    }
    if (r->i < r->len && r->t[r->i] == close) {
      r->i++;
      return 0;
    }
    return bad(r, object ? "expected ',' or '}'" : "expected ',' or ']'");
  }
}

static int value(struct reader *r, int depth)
{
  ws(r);
  if (r->i >= r->len)
    return bad(r, "unexpected end");
  char c = r->t[r->i];
  if (c == '{' || c == '[')
    return container(r, depth, c == '{');
  if (c == '"') {
    struct csv_buf s = {0};
    int rc = string(r, &s);
    if (!rc)
      r->fn(r->ctx, r->key, s.s);
    csv_buf_free(&s);
    return rc;
  }
  size_t s = r->i;
  while (r->i < r->len && strchr("+-.0123456789eEtruefalsn", r->t[r->i]) &&
         r->t[r->i])
    r->i++;
  size_t n = r->i - s;
  if (n == 0 || n > 64)
    return bad(r, "expected a value");
  char tok[65];
  memcpy(tok, r->t + s, n);
  tok[n] = '\0';
  if (strcmp(tok, "null") == 0) {
    r->fn(r->ctx, r->key, "");
    return 0;
  }
  if (strcmp(tok, "true") && strcmp(tok, "false")) {
    char *end;
    strtod(tok, &end);
    if (*end || !(tok[0] == '-' || (tok[0] >= '0' && tok[0] <= '9')))
      return bad(r, "expected a value");
  }
  r->fn(r->ctx, r->key, tok);
  return 0;
}

int jsonflat(const char *text, size_t len, jsonflat_fn fn, void *ctx,
             struct weft_err *err)
{
  struct reader r = {text, len, 0, fn, ctx, err, ""};
  ws(&r);
  if (r.i >= len || text[r.i] != '{')
    return bad(&r, "expected an object");
  int rc = value(&r, 0);
  if (rc)
    return rc;
  ws(&r);
  return r.i < len ? bad(&r, "text after the object") : 0;
}
