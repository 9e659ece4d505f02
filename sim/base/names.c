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

/* One character of a name as compared: case folded, '-' as '_'. */
static int fold(char c)
{
  return c == '-' ? '_' : (c >= 'A' && c <= 'Z') ? c - 'A' + 'a' : c;
}

int names_distance(const char *a, const char *b)
{
  size_t n = strlen(a), m = strlen(b);
  if (n > NAMES_MAX_LEN || m > NAMES_MAX_LEN)
    return NAMES_MAX_LEN;
  /* Optimal string alignment: edits and adjacent transpositions. */
  int d[NAMES_MAX_LEN + 1][NAMES_MAX_LEN + 1];
  for (size_t i = 0; i <= n; i++)
    d[i][0] = (int)i;
  for (size_t j = 0; j <= m; j++)
    d[0][j] = (int)j;
  for (size_t i = 1; i <= n; i++)
    for (size_t j = 1; j <= m; j++) {
      int cost = fold(a[i - 1]) != fold(b[j - 1]);
      int v = d[i - 1][j] + 1;
      if (d[i][j - 1] + 1 < v)
        v = d[i][j - 1] + 1;
      if (d[i - 1][j - 1] + cost < v)
        v = d[i - 1][j - 1] + cost;
      if (i > 1 && j > 1 && fold(a[i - 1]) == fold(b[j - 2]) &&
          fold(a[i - 2]) == fold(b[j - 1]) && d[i - 2][j - 2] + 1 < v)
        v = d[i - 2][j - 2] + 1;
      d[i][j] = v;
    }
  return d[n][m];
}

bool names_close(const char *name, const char *key)
{
  size_t len = strlen(name);
  int limit = len < 4 ? 1 : len < 8 ? 2 : 3;
  return names_distance(name, key) <= limit;
}

void names_flag(const char *key, const char *value, char *buf, size_t size)
{
  size_t n = (size_t)snprintf(buf, size, "--");
  for (const char *p = key; *p && n + 1 < size; p++)
    buf[n++] = *p == '_' ? '-' : *p;
  if (n < size)
    snprintf(buf + n, size - n, "%s%s", value ? " " : "", value ? value : "");
}
