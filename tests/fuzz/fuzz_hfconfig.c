/* fuzz_hfconfig.c - Hugging Face config.json text read as a model: either
 * an error with a message, or a model whose settings model_check can look
 * at and whose unknown-field list is a string that fits its buffer. */
#include "tests/fuzz/fuzz_common.h"

#include "workloads/hfconfig.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
  struct model m;
  struct hfconfig_note n;
  struct weft_err err = {0};
  if (hfconfig_read_text(&m, &n, "fuzz.json", (const char *)data, size,
                         &err) != 0) {
    if (!err.code || !err.msg[0])
      abort();
    return 0;
  }
  if (strnlen(n.unknown, sizeof n.unknown) == sizeof n.unknown ||
      strnlen(m.name, sizeof m.name) == sizeof m.name)
    abort();
  m.seq = 1;
  (void)model_check(&m, &err);
  return 0;
}
