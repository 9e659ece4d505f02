/*
 * units.h - numbers with units, as written in weft's XML files and flags.
 *
 * The suffixes are SimGrid's, so values can be copied between weft files and
 * SimGrid platforms: times "0.35us", "2ms", "1h"; sizes "80GiB", "40GB",
 * "512MiB" ("b" is bits); bandwidths "450GBps", "400Gbps", "25GiBps";
 * compute speeds "989Tf" or "989Tflops"; power "700W", "1.2kW".  Decimal
 * prefixes k M G T P E (Z for flops), binary prefixes Ki Mi Gi Ti Pi Ei.
 * Parsing is locale-independent.  Every value is converted to the base unit:
 * seconds, bytes, bytes per second, flop/s, watts.
 */
#ifndef WEFT_UNITS_H
#define WEFT_UNITS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "err.h"

enum unit_kind {
  UNIT_TIME,  /* seconds */
  UNIT_SIZE,  /* bytes */
  UNIT_BW,    /* bytes per second */
  UNIT_FLOPS, /* flop/s */
  UNIT_POWER, /* watts */
  UNIT_NONE   /* a plain number: no suffix allowed */
};

/* Human name of a kind ("bandwidth") and an example ("450GBps"). */
const char *units_kind_name(enum unit_kind kind);
const char *units_kind_example(enum unit_kind kind);

/* Parse `text` as a quantity of `kind` into *out (base units).  A missing or
 * foreign unit, trailing garbage, NaN, infinity and negative values are
 * errors; zero is accepted (callers that need a positive value check it).
 * The message names the text and what was expected, without location; the
 * caller prefixes the file, line and attribute or the flag.
 * Returns 0 or WEFT_EINVAL; *out is untouched on failure. */
int units_parse(const char *text, enum unit_kind kind, double *out,
                struct weft_err *err) WEFT_WUR;

/* Parse `text` as a positive quantity of `kind` no larger than `max`. */
int units_parse_pos(const char *text, enum unit_kind kind, double max,
                    double *out, struct weft_err *err) WEFT_WUR;

/* Parse a plain decimal integer in [min, max] into *out.  Signs other than a
 * leading '-', fractions, exponents and garbage are errors; a value outside
 * the range is WEFT_ELIMIT with a message naming the limit. */
int units_parse_int(const char *text, long min, long max, long *out,
                    struct weft_err *err) WEFT_WUR;

/* Parse a plain real number (no unit) in [min, max]. */
int units_parse_real(const char *text, double min, double max, double *out,
                     struct weft_err *err) WEFT_WUR;

/* strtod in the "C" locale, whatever the process locale. */
double units_strtod(const char *s, char **end);

/* Write `value` of `kind` into buf (at least 48 bytes) in the base unit with
 * SimGrid's suffix ("3e+11Bps", "1.3e-07s", "3.12e+14f", "80000000000B"),
 * with enough digits to read back the same double.  Returns buf. */
char *units_fmt_exact(double value, enum unit_kind kind, char *buf,
                      size_t size);

/* Write `value` for people: three significant digits and a scaled prefix
 * ("312 Tflop/s", "450 GB/s", "80 GB", "1.3 us", "700 W");
 * sizes use decimal prefixes, as vendors quote capacities.  Returns buf. */
char *units_fmt_human(double value, enum unit_kind kind, char *buf,
                      size_t size);

#endif
