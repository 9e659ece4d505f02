/*
 * test_units.c - unit parsing and printing with SimGrid's suffixes.
 */
#include <criterion/criterion.h>
#include <locale.h>
#include <math.h>

#include "sim/base/units.h"

static double parse(const char *s, enum unit_kind k)
{
  double v = -1;
  struct weft_err err = {0};
  cr_assert_eq(units_parse(s, k, &v, &err), 0, "%s: %s", s, err.msg);
  return v;
}

#define EQ(a, b) cr_assert(fabs((a) - (b)) <= 1e-12 * fabs(b), "%.17g != %.17g", (double)(a), (double)(b))

Test(units, bandwidths)
{
  EQ(parse("450GBps", UNIT_BW), 450e9);
  EQ(parse("400Gbps", UNIT_BW), 50e9);
  EQ(parse("25GiBps", UNIT_BW), 25.0 * 1073741824.0);
  EQ(parse("1.5MBps", UNIT_BW), 1.5e6);
  EQ(parse("8bps", UNIT_BW), 1.0);
  EQ(parse("3Bps", UNIT_BW), 3.0);
  EQ(parse("1e3kBps", UNIT_BW), 1e6);
}

Test(units, times)
{
  EQ(parse("0.35us", UNIT_TIME), 0.35e-6);
  EQ(parse("130ns", UNIT_TIME), 130e-9);
  EQ(parse("2ms", UNIT_TIME), 2e-3);
  EQ(parse("1h", UNIT_TIME), 3600.0);
  EQ(parse("1m", UNIT_TIME), 60.0);
  EQ(parse("5ps", UNIT_TIME), 5e-12);
  EQ(parse("0s", UNIT_TIME), 0.0);
}

Test(units, sizes)
{
  EQ(parse("80GiB", UNIT_SIZE), 80.0 * 1073741824.0);
  EQ(parse("80GB", UNIT_SIZE), 80e9);
  EQ(parse("512MiB", UNIT_SIZE), 512.0 * 1048576.0);
  EQ(parse("16b", UNIT_SIZE), 2.0);
  EQ(parse("1KiB", UNIT_SIZE), 1024.0);
}

Test(units, flops_and_power)
{
  EQ(parse("989Tf", UNIT_FLOPS), 989e12);
  EQ(parse("989.4Tflops", UNIT_FLOPS), 989.4e12);
  EQ(parse("2.5Pf", UNIT_FLOPS), 2.5e15);
  EQ(parse("0f", UNIT_FLOPS), 0.0);
  EQ(parse("700W", UNIT_POWER), 700.0);
  EQ(parse("1.2kW", UNIT_POWER), 1200.0);
}

Test(units, integers)
{
  long v = 0;
  struct weft_err err = {0};
  cr_assert_eq(units_parse_int("16384", 1, 131072, &v, &err), 0);
  cr_assert_eq(v, 16384);
  cr_assert_eq(units_parse_int("-3", -5, 5, &v, &err), 0);
  cr_assert_eq(v, -3);
}

Test(units, exact_format_round_trips)
{
  const double vals[] = {450e9, 0.1, 1.0 / 3.0, 130e-9, 989.4e12, 1e15};
  for (size_t i = 0; i < sizeof vals / sizeof *vals; i++) {
    char buf[64];
    double back = -1;
    units_fmt_exact(vals[i], UNIT_BW, buf, sizeof buf);
    cr_assert_eq(units_parse(buf, UNIT_BW, &back, NULL), 0, "%s", buf);
    cr_assert_eq(back, vals[i], "%s", buf);
  }
  char buf[64];
  cr_assert_str_eq(units_fmt_exact(450e9, UNIT_BW, buf, sizeof buf),
                   "4.5e+11Bps");
  cr_assert_str_eq(units_fmt_exact(5e-7, UNIT_TIME, buf, sizeof buf), "5e-07s");
}

Test(units, human_format)
{
  char buf[64];
  cr_assert_str_eq(units_fmt_human(312e12, UNIT_FLOPS, buf, 64), "312 Tflop/s");
  cr_assert_str_eq(units_fmt_human(450e9, UNIT_BW, buf, 64), "450 GB/s");
  cr_assert_str_eq(units_fmt_human(80e9, UNIT_SIZE, buf, 64), "80 GB");
  cr_assert_str_eq(units_fmt_human(1.3e-6, UNIT_TIME, buf, 64), "1.3 us");
  cr_assert_str_eq(units_fmt_human(700, UNIT_POWER, buf, 64), "700 W");
}

Test(units, locale_independent)
{
  /* A decimal-comma locale must not change what "0.35us" means.  Not every
   * machine has de_DE; C.UTF-8 at least exercises the call. */
  if (!setlocale(LC_NUMERIC, "de_DE.UTF-8"))
    setlocale(LC_NUMERIC, "C.UTF-8");
  EQ(parse("0.35us", UNIT_TIME), 0.35e-6);
  setlocale(LC_NUMERIC, "C");
}
