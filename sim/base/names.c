/*
 * names.c - setting names and word choices (names.h).
 */
#include "names.h"

#include <stdio.h>
#include <string.h>

bool names_eq(const char *name, const char *key)
{
  for (; *name && *key; name++, key++)
    if (*name != *key && !(*name == '-' && *key == '_'))
      return false;
  return *name == *key;
}

int names_find(const char *name, const char *const *keys)
{
  for (int i = 0; keys[i]; i++)
    if (names_eq(name, keys[i]))
      return i;
  return -1;
}

int names_choice(const char *value, const char *const *choices, int *out,
                 struct weft_err *err)
{
  int n = 0;
  for (; choices[n]; n++)
    if (strcmp(value, choices[n]) == 0) {
      *out = n;
      return 0;
    }
  char list[256] = "";
  size_t len = 0;
  for (int i = 0; i < n; i++)
    len += (size_t)snprintf(list + len, sizeof list - len, "%s%s",
                            i == 0 ? "" : i + 1 == n ? " or " : ", ",
                            choices[i]);
  return weft_errf(err, WEFT_EINVAL, "'%s' is not %s", value, list);
}

int names_index(const char *name, const void *table, int count, size_t stride)
{
  const char *base = table;
  for (int i = 0; i < count; i++) {
    const char *key;
    memcpy(&key, base + (size_t)i * stride, sizeof key);
    if (names_eq(name, key))
      return i;
  }
  return -1;
}
