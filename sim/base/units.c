/*
 * units.c - parse and print quantities with SimGrid's unit suffixes.
 *
 * Numbers are read with strtod_l in the "C" locale so that a user's LC_NUMERIC
 * (a decimal comma) never changes what a file means.
 */
#define _GNU_SOURCE
#include "units.h"

#include <errno.h>
#include <locale.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct suffix {
  const char *name;
  double factor;
};

/* Longest suffixes first within each table is not needed: matching is exact
 * on the whole remainder of the string. */
static const struct suffix time_sfx[] = {
    {"w", 604800.0}, {"d", 86400.0}, {"h", 3600.0}, {"m", 60.0},
    {"s", 1.0},      {"ms", 1e-3},   {"us", 1e-6},  {"ns", 1e-9},
    {"ps", 1e-12},   {NULL, 0}};

static const struct suffix prefixes[] = {
    {"", 1.0},  {"k", 1e3},  {"M", 1e6},  {"G", 1e9},
    {"T", 1e12}, {"P", 1e15}, {"E", 1e18}, {"Ki", 1024.0},
    {"Mi", 1048576.0}, {"Gi", 1073741824.0}, {"Ti", 1099511627776.0},
    {"Pi", 1125899906842624.0}, {"Ei", 1152921504606846976.0}, {NULL, 0}};

static const struct suffix flop_prefixes[] = {
    {"", 1.0},   {"k", 1e3},   {"M", 1e6},   {"G", 1e9}, {"T", 1e12},
    {"P", 1e15}, {"E", 1e18},  {"Z", 1e21},  {NULL, 0}};

static const struct suffix power_prefixes[] = {
    {"m", 1e-3}, {"", 1.0}, {"k", 1e3}, {"M", 1e6}, {NULL, 0}};

const char *units_kind_name(enum unit_kind kind)
{
  static const char *names[] = {"time", "size", "bandwidth",
                                "compute speed", "power", "number"};
  return names[kind];
}

const char *units_kind_example(enum unit_kind kind)
{
  static const char *ex[] = {"0.35us", "80GiB", "450GBps", "989Tf", "700W",
                             "8"};
  return ex[kind];
}

static locale_t c_locale(void)
{
  static locale_t loc;
  if (!loc)
    loc = newlocale(LC_NUMERIC_MASK, "C", (locale_t)0);
  return loc;
}

double units_strtod(const char *s, char **end)
{
  return strtod_l(s, end, c_locale());
}

/* Match `unit` = prefix + base exactly against a prefix table. */
static bool match_prefixed(const char *unit, const struct suffix *pre,
                           const char *base, double *factor)
{
  size_t blen = strlen(base);
  size_t ulen = strlen(unit);
  if (ulen < blen || strcmp(unit + ulen - blen, base) != 0)
    return false;
  size_t plen = ulen - blen;
  for (const struct suffix *p = pre; p->name; p++) {
    if (strlen(p->name) == plen && strncmp(unit, p->name, plen) == 0) {
      *factor = p->factor;
      return true;
    }
  }
  return false;
}

static bool unit_factor(const char *unit, enum unit_kind kind, double *f)
{
  switch (kind) {
  case UNIT_TIME:
    for (const struct suffix *s = time_sfx; s->name; s++)
      if (strcmp(unit, s->name) == 0) {
        *f = s->factor;
        return true;
      }
    return false;
  case UNIT_SIZE:
    if (match_prefixed(unit, prefixes, "B", f))
      return true;
    if (match_prefixed(unit, prefixes, "b", f)) {
      *f /= 8.0;
      return true;
    }
    return false;
  case UNIT_BW:
    if (match_prefixed(unit, prefixes, "Bps", f))
      return true;
    if (match_prefixed(unit, prefixes, "bps", f)) {
      *f /= 8.0;
      return true;
    }
    return false;
  case UNIT_FLOPS:
    return match_prefixed(unit, flop_prefixes, "flops", f) ||
           match_prefixed(unit, flop_prefixes, "f", f);
  case UNIT_POWER:
    return match_prefixed(unit, power_prefixes, "W", f);
  case UNIT_NONE:
    *f = 1.0;
    return unit[0] == '\0';
  }
  return false;
}

/* Read the leading number of `text`; returns a pointer past it or NULL. */
static const char *read_number(const char *text, double *v)
{
  /* strtod would also accept "nan", "inf", hex floats and leading spaces:
   * only plain decimal notation is a valid quantity. */
  const char *p = text;
  if (*p == '-' || *p == '+')
    p++;
  if (!((*p >= '0' && *p <= '9') || (*p == '.' && p[1] >= '0' && p[1] <= '9')))
    return NULL;
  if (p[0] == '0' && (p[1] == 'x' || p[1] == 'X'))
    return NULL;
  char *end;
  errno = 0;
  double x = strtod_l(text, &end, c_locale());
  if (end == text)
    return NULL;
  *v = x;
  return end;
}

int units_parse(const char *text, enum unit_kind kind, double *out,
                struct weft_err *err)
{
  double v;
  if (!text || !*text)
    return weft_errf(err, WEFT_EINVAL, "empty value; expected a %s such as %s",
                     units_kind_name(kind), units_kind_example(kind));
  const char *rest = read_number(text, &v);
  if (!rest)
    return weft_errf(err, WEFT_EINVAL, "'%s' is not a number; expected a %s "
                     "such as %s", text, units_kind_name(kind),
                     units_kind_example(kind));
  if (!isfinite(v))
    return weft_errf(err, WEFT_EINVAL, "'%s' is out of range", text);
  if (kind != UNIT_NONE && *rest == '\0')
    return weft_errf(err, WEFT_EINVAL, "'%s' has no unit; expected a %s such "
                     "as %s", text, units_kind_name(kind),
                     units_kind_example(kind));
  double f;
  if (!unit_factor(rest, kind, &f)) {
    if (kind == UNIT_NONE)
      return weft_errf(err, WEFT_EINVAL, "'%s' is not a plain number", text);
    return weft_errf(err, WEFT_EINVAL, "'%s' has unknown unit '%s'; expected "
                     "a %s such as %s", text, rest, units_kind_name(kind),
                     units_kind_example(kind));
  }
  if (v < 0)
    return weft_errf(err, WEFT_EINVAL, "'%s' is negative", text);
  double x = v * f;
  if (!isfinite(x))
    return weft_errf(err, WEFT_EINVAL, "'%s' is out of range", text);
  *out = x;
  return 0;
}

int units_parse_pos(const char *text, enum unit_kind kind, double max,
                    double *out, struct weft_err *err)
{
  double v;
  int rc = units_parse(text, kind, &v, err);
  if (rc)
    return rc;
  if (v <= 0)
    return weft_errf(err, WEFT_EINVAL, "'%s' must be positive", text);
  if (v > max) {
    char buf[64];
    return weft_errf(err, WEFT_ELIMIT, "'%s' exceeds the limit of %s", text,
                     units_fmt_human(max, kind, buf, sizeof buf));
  }
  *out = v;
  return 0;
}

int units_parse_int(const char *text, long min, long max, long *out,
                    struct weft_err *err)
{
  if (!text || !*text)
    return weft_errf(err, WEFT_EINVAL, "empty value; expected an integer");
  const char *p = text;
  if (*p == '-')
    p++;
  if (!*p)
    return weft_errf(err, WEFT_EINVAL, "'%s' is not an integer", text);
  for (const char *q = p; *q; q++)
    if (*q < '0' || *q > '9')
      return weft_errf(err, WEFT_EINVAL, "'%s' is not an integer", text);
  errno = 0;
  long v = strtol(text, NULL, 10);
  if (errno == ERANGE || v < min || v > max) {
    if (v < min && errno != ERANGE)
      return weft_errf(err, WEFT_EINVAL, "'%s' is below the minimum of %ld",
                       text, min);
    return weft_errf(err, WEFT_ELIMIT, "'%s' exceeds the limit of %ld", text,
                     max);
  }
  *out = v;
  return 0;
}

int units_parse_real(const char *text, double min, double max, double *out,
                     struct weft_err *err)
{
  double v;
  int rc = units_parse(text, UNIT_NONE, &v, err);
  if (rc) {
    /* units_parse rejects negatives; say so in terms of the range. */
    return rc;
  }
  if (v < min)
    return weft_errf(err, WEFT_EINVAL, "'%s' is below the minimum of %g", text,
                     min);
  if (v > max)
    return weft_errf(err, WEFT_ELIMIT, "'%s' exceeds the limit of %g", text,
                     max);
  *out = v;
  return 0;
}

static const char *base_suffix(enum unit_kind kind)
{
  static const char *s[] = {"s", "B", "Bps", "f", "W", ""};
  return s[kind];
}

char *units_fmt_exact(double value, enum unit_kind kind, char *buf,
                      size_t size)
{
  /* %.17g round-trips every double; print the shortest that does. */
  char num[40];
  for (int prec = 6; prec <= 17; prec++) {
    snprintf(num, sizeof num, "%.*g", prec, value);
    if (strtod_l(num, NULL, c_locale()) == value)
      break;
  }
  snprintf(buf, size, "%s%s", num, base_suffix(kind));
  return buf;
}

char *units_fmt_human(double value, enum unit_kind kind, char *buf,
                      size_t size)
{
  static const char *dec[] = {"", "k", "M", "G", "T", "P", "E"};
  static const char *tpre[] = {"s", "ms", "us", "ns", "ps"};
  int i = 0;
  double v = value;
  switch (kind) {
  case UNIT_TIME:
    while (v != 0 && fabs(v) < 1.0 && i < 4) {
      v *= 1e3;
      i++;
    }
    snprintf(buf, size, "%.3g %s", v, tpre[i]);
    break;
  case UNIT_SIZE: /* decimal, as vendors quote capacities */
  case UNIT_BW:
  case UNIT_FLOPS:
  case UNIT_POWER:
    while (fabs(v) >= 1000.0 && i < 6) {
      v /= 1000.0;
      i++;
    }
    snprintf(buf, size, "%.4g %s%s", v, dec[i],
             kind == UNIT_SIZE  ? "B"
             : kind == UNIT_BW  ? "B/s"
             : kind == UNIT_FLOPS ? "flop/s"
                                  : "W");
    break;
  case UNIT_NONE:
    snprintf(buf, size, "%.4g", v);
    break;
  }
  return buf;
}
