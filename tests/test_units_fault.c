/*
 * test_units_fault.c - every malformed quantity gets its exact message.
 */
#include <criterion/criterion.h>

#include "sim/base/units.h"

static void bad(const char *s, enum unit_kind k, int code, const char *msg)
{
  double v = 42;
  struct weft_err err = {0};
  cr_assert_eq(units_parse(s, k, &v, &err), code, "%s", s);
  cr_assert_str_eq(err.msg, msg);
  cr_assert_eq(v, 42, "output touched on failure");
}

Test(units_fault, missing_unit)
{
  bad("450", UNIT_BW, WEFT_EINVAL,
      "'450' has no unit; expected a bandwidth such as 450GBps");
  bad("80", UNIT_SIZE, WEFT_EINVAL,
      "'80' has no unit; expected a size such as 80GiB");
}

Test(units_fault, wrong_unit)
{
  bad("450GB", UNIT_BW, WEFT_EINVAL,
      "'450GB' has unknown unit 'GB'; expected a bandwidth such as 450GBps");
  bad("3 us", UNIT_TIME, WEFT_EINVAL,
      "'3 us' has unknown unit ' us'; expected a time such as 0.35us");
  bad("1KB", UNIT_SIZE, WEFT_EINVAL,
      "'1KB' has unknown unit 'KB'; expected a size such as 80GiB");
}

Test(units_fault, not_a_number)
{
  bad("nan", UNIT_TIME, WEFT_EINVAL,
      "'nan' is not a number; expected a time such as 0.35us");
  bad("NaNus", UNIT_TIME, WEFT_EINVAL,
      "'NaNus' is not a number; expected a time such as 0.35us");
  bad("infGBps", UNIT_BW, WEFT_EINVAL,
      "'infGBps' is not a number; expected a bandwidth such as 450GBps");
  bad("0x10GBps", UNIT_BW, WEFT_EINVAL,
      "'0x10GBps' is not a number; expected a bandwidth such as 450GBps");
  bad("", UNIT_BW, WEFT_EINVAL,
      "empty value; expected a bandwidth such as 450GBps");
  bad("GBps", UNIT_BW, WEFT_EINVAL,
      "'GBps' is not a number; expected a bandwidth such as 450GBps");
}

Test(units_fault, negative_and_huge)
{
  bad("-1us", UNIT_TIME, WEFT_EINVAL, "'-1us' is negative");
  bad("1e400GBps", UNIT_BW, WEFT_EINVAL, "'1e400GBps' is out of range");
  bad("1e300EBps", UNIT_BW, WEFT_EINVAL, "'1e300EBps' is out of range");
}

Test(units_fault, positive_limits)
{
  double v;
  struct weft_err err = {0};
  cr_assert_eq(units_parse_pos("0GBps", UNIT_BW, 1e15, &v, &err), WEFT_EINVAL);
  cr_assert_str_eq(err.msg, "'0GBps' must be positive");
  cr_assert_eq(units_parse_pos("2PBps", UNIT_BW, 1e15, &v, &err), WEFT_ELIMIT);
  cr_assert_str_eq(err.msg, "'2PBps' exceeds the limit of 1 PB/s");
}

Test(units_fault, integers)
{
  long v = 7;
  struct weft_err err = {0};
  cr_assert_eq(units_parse_int("1000000", 1, 65536, &v, &err), WEFT_ELIMIT);
  cr_assert_str_eq(err.msg, "'1000000' exceeds the limit of 65536");
  cr_assert_eq(units_parse_int("0", 1, 65536, &v, &err), WEFT_EINVAL);
  cr_assert_str_eq(err.msg, "'0' is below the minimum of 1");
  cr_assert_eq(units_parse_int("8.5", 1, 65536, &v, &err), WEFT_EINVAL);
  cr_assert_str_eq(err.msg, "'8.5' is not an integer");
  cr_assert_eq(units_parse_int("99999999999999999999999", 1, 65536, &v, &err),
               WEFT_ELIMIT);
  cr_assert_str_eq(err.msg,
                   "'99999999999999999999999' exceeds the limit of 65536");
  cr_assert_eq(units_parse_int("", 1, 2, &v, &err), WEFT_EINVAL);
  cr_assert_str_eq(err.msg, "empty value; expected an integer");
  cr_assert_eq(v, 7);
}
