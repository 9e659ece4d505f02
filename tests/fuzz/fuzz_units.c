/* fuzz_units.c - quantities with units, integers and reals from text. */
#include "tests/fuzz/fuzz_common.h"

#include "sim/base/units.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
  char *s = fuzz_string(data, size);
  struct weft_err err = {0};
  double v;
  long l;
  for (int k = 0; k <= UNIT_NONE; k++)
    if (units_parse(s, (enum unit_kind)k, &v, &err) == 0) {
      char buf[64];
      units_fmt_human(v, (enum unit_kind)k, buf, sizeof buf);
    }
  (void)units_parse_pos(s, UNIT_SIZE, 1e12, &v, &err);
  (void)units_parse_int(s, -5, 1L << 40, &l, &err);
  (void)units_parse_real(s, 0.5, 1e6, &v, &err);
  free(s);
  return 0;
}
