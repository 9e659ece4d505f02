/* fuzz_jsonflat.c - JSON objects flattened to key = value pairs; every
 * pair has a key and a value (never NULL) and the key fits the limit. */
#include "tests/fuzz/fuzz_common.h"

#include "analysis/jsonflat.h"

static void check_pair(void *ctx, const char *key, const char *value)
{
  if (!key || !value || strlen(key) > JSONFLAT_MAX_KEY)
    abort();
  ++*(long *)ctx;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
  /* Exactly `size` bytes, not NUL-terminated: jsonflat takes a length. */
  char *text = malloc(size ? size : 1);
  memcpy(text, data, size);
  struct weft_err err = {0};
  long pairs = 0;
  if (jsonflat(text, size, check_pair, &pairs, &err) != 0 &&
      (!err.code || !err.msg[0]))
    abort();
  free(text);
  return 0;
}
