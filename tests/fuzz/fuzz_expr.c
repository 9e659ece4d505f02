/* fuzz_expr.c - study expressions: parse, list the variables, evaluate
 * against a fixed lookup (set, unset, not a number), and check what
 * expr.h promises: a successful result is finite, and expr_format's text
 * of it reads back as the same number (exactly for an integer). */
#include "tests/fuzz/fuzz_common.h"

#include <ctype.h>
#include <float.h>
#include <math.h>

#include "sim/base/expr.h"

/* A variable's value from its name: numbers, and the cases a study can
 * hand over (unset, not a number, empty, too large). */
static const char *lookup(void *ctx, const char *name)
{
  static const char *const vals[] = {"1024", "8", "0", "-3", "0.5",
                                     "1e308", "abc", "", NULL, " 7",
                                     "nan", "inf"};
  (void)ctx;
  unsigned h = 0;
  for (const char *p = name; *p; p++)
    h = h * 31 + (unsigned char)*p;
  return vals[h % (sizeof vals / sizeof *vals)];
}

/* Every name is letters, digits and '_', not starting with a digit. */
static int check_var(void *ctx, const char *name)
{
  if (!name || !*name || isdigit((unsigned char)*name))
    abort();
  for (const char *p = name; *p; p++)
    if (!isalnum((unsigned char)*p) && *p != '_')
      abort();
  ++*(int *)ctx;
  return 0;
}

static int stop_first(void *ctx, const char *name)
{
  (void)name;
  ++*(int *)ctx;
  return 7;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
  char *s = fuzz_string(data, size);
  struct weft_err err = {0};
  struct expr *e = expr_parse(s, "fuzz", &err);
  if (!e) {
    if (!err.code || !err.msg[0])
      abort();
    free(s);
    return 0;
  }
  int nvars = 0, nstop = 0;
  if (expr_each_var(e, check_var, &nvars) != 0)
    abort();
  if (expr_each_var(e, stop_first, &nstop) != (nvars ? 7 : 0) ||
      nstop != (nvars ? 1 : 0))
    abort();
  double v;
  if (expr_eval(e, lookup, NULL, &v, &err) == 0) {
    if (!isfinite(v))
      abort();
    char buf[64];
    expr_format(v, buf, sizeof buf);
    struct expr *back = expr_parse(buf, "format", &err);
    double w;
    if (!back || expr_eval(back, lookup, NULL, &w, &err) != 0)
      abort();
    if (v == floor(v) && fabs(v) < 9007199254740992.0) {
      if (w != v)
        abort();
    } else if (fabs(v) >= DBL_MIN && fabs(w - v) > 1e-9 * fabs(v)) {
      abort();
    }
    expr_free(back);
  } else if (!err.code || !err.msg[0]) {
    abort();
  }
  expr_free(e);
  free(s);
  return 0;
}
