/* fuzz_jsonflat.c - JSON objects flattened to key = value pairs; every
 * pair has a key and a value (never NULL), the key fits the limit, and
 * from an ASCII input (where only \u escapes make other bytes) both are
 * UTF-8: a lead byte C2-EF (or C0-C1 from a short escape) and its
 * continuation bytes. */
#include "tests/fuzz/fuzz_common.h"

#include <stdbool.h>

#include "sim/base/jsonflat.h"

struct pairs {
  long n;
  bool ascii; /* the input is */
};

static bool utf8(const char *s)
{
  for (const unsigned char *p = (const unsigned char *)s; *p;) {
    int more = *p < 0x80 ? 0 : *p >= 0xC0 && *p < 0xE0 ? 1
             : *p >= 0xE0 && *p < 0xF0 ? 2 : -1;
    if (more < 0)
      return false;
    p++;
    for (; more > 0; more--, p++)
      if ((*p & 0xC0) != 0x80)
        return false;
  }
  return true;
}

static void check_pair(void *ctx, const char *key, const char *value)
{
  struct pairs *ps = ctx;
  if (!key || !value || strlen(key) > JSONFLAT_MAX_KEY)
    abort();
  if (ps->ascii && (!utf8(key) || !utf8(value)))
    abort();
  ps->n++;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
  /* Exactly `size` bytes, not NUL-terminated: jsonflat takes a length. */
  char *text = malloc(size ? size : 1);
  memcpy(text, data, size);
  struct weft_err err = {0};
  struct pairs pairs = {0, true};
  for (size_t i = 0; i < size; i++)
    pairs.ascii &= data[i] < 0x80;
  if (jsonflat(text, size, check_pair, &pairs, &err) != 0 &&
      (!err.code || !err.msg[0]))
    abort();
  free(text);
  return 0;
}
