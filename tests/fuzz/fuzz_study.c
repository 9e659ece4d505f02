/* fuzz_study.c - study files, read and expanded with a fixed set of
 * settings; study_load either fails with a message or gives a table
 * within the limits of study.h: at most STUDY_MAX_SCENARIOS scenarios and
 * STUDY_MAX_VARS columns, names of letters, digits and '_', values of at
 * most STUDY_MAX_VALUE characters. */
#include "tests/fuzz/fuzz_common.h"

#include <ctype.h>

#include "analysis/study.h"

/* Like cmd_sweep.c's classify, from a fixed list of weft run's settings
 * (those the studies use; '-' and '_' alike). */
static int classify(const char *name, enum study_use *use)
{
  static const struct {
    const char *name;
    enum study_use use;
  } known[] = {
    {"workload", SU_POSITION}, {"every_rank", SU_FLAG},
    {"force", SU_FLAG},       {"overlap_grad", SU_FLAG},
    {"model", SU_SETTING}, {"cluster", SU_SETTING}, {"gpus", SU_SETTING},
    {"gpu", SU_SETTING}, {"tp", SU_SETTING}, {"pp", SU_SETTING},
    {"dp", SU_SETTING}, {"ep", SU_SETTING}, {"sp", SU_SETTING},
    {"global_batch", SU_SETTING}, {"micro_batch", SU_SETTING},
    {"seq", SU_SETTING}, {"zero", SU_SETTING}, {"recompute", SU_SETTING},
    {"schedule", SU_SETTING}, {"layers", SU_SETTING}, {"hidden", SU_SETTING},
    {"heads", SU_SETTING}, {"kv_heads", SU_SETTING}, {"ffn", SU_SETTING},
    {"vocab", SU_SETTING}, {"bucket", SU_SETTING}, {"compress", SU_SETTING},
    {"grad_dtype", SU_SETTING}, {"fsdp", SU_SETTING}, {"hsdp", SU_SETTING},
    {"shard_impl", SU_SETTING}, {"topology", SU_SETTING},
    {"torus", SU_SETTING}, {"gpus_per_node", SU_SETTING},
    {"nics_per_node", SU_SETTING}, {"scale_nic", SU_SETTING},
    {"trend", SU_SETTING}, {"generations", SU_SETTING},
  };
  for (size_t i = 0; i < sizeof known / sizeof *known; i++) {
    const char *a = name, *b = known[i].name;
    while (*a && (*a == *b || (*a == '-' && *b == '_'))) {
      a++;
      b++;
    }
    if (!*a && !*b) {
      *use = known[i].use;
      return 0;
    }
  }
  return -1;
}

static void check(const struct study *s)
{
  if (s->n < 0 || s->n > STUDY_MAX_SCENARIOS || s->ncols < 0 ||
      s->ncols > STUDY_MAX_VARS || strlen(s->name) >= STUDY_MAX_NAME)
    abort();
  for (int k = 0; k < s->ncols; k++) {
    const char *name = s->cols[k].name;
    size_t len = strlen(name);
    if (len == 0 || len >= STUDY_MAX_NAME)
      abort();
    for (const char *p = name; *p; p++)
      if (!isalnum((unsigned char)*p) && *p != '_')
        abort();
    enum study_use use;
    if (s->cols[k].use != SU_VAR &&
        (classify(name, &use) != 0 || use != s->cols[k].use))
      abort();
  }
  for (long i = 0; i < s->n; i++) {
    for (int k = 0; k < s->ncols; k++) {
      const char *v = study_value(s, i, k);
      if (v && strlen(v) > STUDY_MAX_VALUE)
        abort();
    }
    if (s->reason[i] && !s->reason[i][0])
      abort();
    char key[17];
    study_key(s, i, key);
    if (strlen(key) != 16)
      abort();
  }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
  struct weft_err err = {0};
  char path[64];
  int fd = fuzz_file(data, size, path, sizeof path);
  struct study s;
  if (study_load(path, classify, &s, &err) == 0) {
    check(&s);
    study_release(&s);
  } else if (!err.code || !err.msg[0]) {
    abort();
  }
  close(fd);
  return 0;
}
