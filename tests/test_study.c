/*
 * test_study.c - study files and their expansion (cross products, zips,
 * explicit scenarios, ranges, derived values, filters), the expression
 * evaluator, CSV quoting and reading, JSON flattening; and the exact
 * messages of bad study files.
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "analysis/study.h"
#include "sim/base/csv.h"
#include "sim/base/expr.h"
#include "sim/base/jsonflat.h"

/* A stand-in for weft run's names: a few settings and one flag. */
static int classify(const char *name, enum study_use *use)
{
  static const char *const settings[] = {"model", "gpus", "tp", "pp", "dp",
                                         "global_batch", "global-batch",
                                         "cluster", NULL};
  if (strcmp(name, "every_rank") == 0) {
    *use = SU_FLAG;
    return 0;
  }
  for (int i = 0; settings[i]; i++)
    if (strcmp(name, settings[i]) == 0) {
      *use = SU_SETTING;
      return 0;
    }
  return -1;
}

static int load(const char *xml, struct study *s, struct weft_err *err)
{
  return study_load_mem(xml, strlen(xml), "s.xml", classify, s, err);
}

static int col(const struct study *s, const char *name)
{
  for (int k = 0; k < s->ncols; k++)
    if (strcmp(s->cols[k].name, name) == 0)
      return k;
  cr_assert_fail("no column %s", name);
  return -1;
}

static const char *val(const struct study *s, long i, const char *name)
{
  const char *v = study_value(s, i, col(s, name));
  return v ? v : "(unset)";
}

Test(study, cross_zip_and_scenarios_in_order)
{
  struct study s;
  struct weft_err err = {0};
  int rc = load("<study name='t'><set model='m1' global-batch='64'/>"
                "<cross><axis name='gpus' values='8 16'/>"
                "<zip><axis name='tp' values='1 2 4'/>"
                "<axis name='pp' values='1 1 2'/></zip></cross>"
                "<scenario gpus='4' tp='2' model='m2'/>"
                "<zip><axis name='gpus' values='32 64'/>"
                "<axis name='tp' values='8 8'/>"
                "<axis name='model' values='- m3'/></zip></study>", &s, &err);
  cr_assert_eq(rc, 0, "%s", err.msg);
  cr_assert_str_eq(s.name, "t");
  cr_assert_eq(s.n, 2 * 3 + 1 + 2);
  /* The first axis varies slowest; the zip's axes move together. */
  const char *want[][4] = {{"8", "1", "1", "m1"},  {"8", "2", "1", "m1"},
                           {"8", "4", "2", "m1"},  {"16", "1", "1", "m1"},
                           {"16", "2", "1", "m1"}, {"16", "4", "2", "m1"},
                           {"4", "2", "(unset)", "m2"},
                           {"32", "8", "(unset)", "(unset)"},
                           {"64", "8", "(unset)", "m3"}};
  for (long i = 0; i < s.n; i++) {
    cr_assert_str_eq(val(&s, i, "gpus"), want[i][0], "scenario %ld", i);
    cr_assert_str_eq(val(&s, i, "tp"), want[i][1], "scenario %ld", i);
    cr_assert_str_eq(val(&s, i, "pp"), want[i][2], "scenario %ld", i);
    cr_assert_str_eq(val(&s, i, "model"), want[i][3], "scenario %ld", i);
    cr_assert_str_eq(val(&s, i, "global_batch"), "64");
    cr_assert_null(s.reason[i]);
  }
  /* Columns in order of first appearance, '-' written as '_'. */
  cr_assert_str_eq(s.cols[0].name, "model");
  cr_assert_str_eq(s.cols[1].name, "global_batch");
  cr_assert_str_eq(s.cols[2].name, "gpus");
  study_release(&s);
}

Test(study, derived_values_filters_and_vars)
{
  struct study s;
  struct weft_err err = {0};
  int rc = load("<study><var name='per_gpu' value='2'/>"
                "<cross><axis name='gpus' from='8' to='64' times='2'/>"
                "<axis name='tp' values='1 8 3'/></cross>"
                "<derive name='global_batch' expr='per_gpu * gpus'/>"
                "<derive name='dp' expr='gpus / tp'/>"
                "<where expr='gpus % tp == 0 &amp;&amp; dp >= 2'/></study>",
                &s, &err);
  cr_assert_eq(rc, 0, "%s", err.msg);
  /* gpus 8 16 32 64 x tp 1 8 3, keeping tp | gpus and dp >= 2: */
  const char *want[][4] = {{"8", "1", "8", "16"},  {"16", "1", "16", "32"},
                           {"16", "8", "2", "32"}, {"32", "1", "32", "64"},
                           {"32", "8", "4", "64"}, {"64", "1", "64", "128"},
                           {"64", "8", "8", "128"}};
  cr_assert_eq(s.n, 7);
  for (long i = 0; i < s.n; i++) {
    cr_assert_str_eq(val(&s, i, "gpus"), want[i][0]);
    cr_assert_str_eq(val(&s, i, "tp"), want[i][1]);
    cr_assert_str_eq(val(&s, i, "dp"), want[i][2]);
    cr_assert_str_eq(val(&s, i, "global_batch"), want[i][3]);
  }
  cr_assert_eq(s.cols[col(&s, "per_gpu")].use, SU_VAR);
  cr_assert_eq(s.cols[col(&s, "dp")].use, SU_SETTING);
  study_release(&s);
}

Test(study, failed_derivation_is_kept_with_its_reason)
{
  struct study s;
  struct weft_err err = {0};
  int rc = load("<study><set model='m'/><scenario gpus='8' tp='0'/>"
                "<scenario gpus='8' tp='2'/><scenario gpus='8' model='x'/>"
                "<derive name='dp' expr='gpus / tp'/></study>", &s, &err);
  cr_assert_eq(rc, 0, "%s", err.msg);
  cr_assert_eq(s.n, 3);
  cr_assert_str_eq(s.reason[0], "derive dp: division by zero");
  cr_assert_null(s.reason[1]);
  cr_assert_str_eq(val(&s, 1, "dp"), "4");
  cr_assert_str_eq(s.reason[2], "derive dp: 'tp' is not set");
  study_release(&s);
}

Test(study, a_study_without_generators_is_one_scenario)
{
  struct study s;
  struct weft_err err = {0};
  cr_assert_eq(load("<study><set model='m' gpus='8'/></study>", &s, &err), 0,
               "%s", err.msg);
  cr_assert_eq(s.n, 1);
  cr_assert_str_eq(val(&s, 0, "gpus"), "8");
  study_release(&s);
}

Test(study, ranges_with_step_include_the_end)
{
  struct study s;
  struct weft_err err = {0};
  cr_assert_eq(load("<study><cross><axis name='tp' from='0.1' to='0.5' "
                    "step='0.1'/></cross></study>", &s, &err), 0, "%s",
               err.msg);
  cr_assert_eq(s.n, 5);
  cr_assert_str_eq(val(&s, 2, "tp"), "0.3");
  cr_assert_str_eq(val(&s, 4, "tp"), "0.5");
  study_release(&s);
}

Test(study, key_depends_on_values_not_position)
{
  struct study a, b;
  struct weft_err err = {0};
  cr_assert_eq(load("<study><cross><axis name='gpus' values='8 16'/></cross>"
                    "</study>", &a, &err), 0);
  cr_assert_eq(load("<study><cross><axis name='gpus' values='16 8 32'/>"
                    "</cross></study>", &b, &err), 0);
  char ka[17], kb[17], kc[17];
  study_key(&a, 0, ka);
  study_key(&b, 1, kb);
  study_key(&b, 2, kc);
  cr_assert_str_eq(ka, kb);
  cr_assert_str_neq(ka, kc);
  cr_assert_eq(strlen(ka), 16);
  study_release(&a);
  study_release(&b);
}

/* Bad study files: the exact message. */
static void bad(const char *xml, const char *want)
{
  struct study s;
  struct weft_err err = {0};
  cr_assert_neq(load(xml, &s, &err), 0, "accepted: %s", xml);
  cr_assert_str_eq(err.msg, want);
}

Test(study_fault, messages)
{
  bad("<sweep/>", "s.xml:1: <sweep>: unknown root element; expected <study>");
  bad("<study><set tpp='2'/></study>",
      "s.xml:1: <set>: 'tpp' is not a setting of weft run; a value of the "
      "study's own needs <var name=\"tpp\"/>");
  bad("<study><var name='gpus'/></study>",
      "s.xml:1: <var>: 'gpus' is a setting of weft run; give it with <set> "
      "or an axis, not <var>");
  bad("<study><var name='x'/></study>",
      "s.xml: <var> 'x' gets no value (give it one, an axis or a <derive>)");
  bad("<study>\n<cross><axis name='tp' values='1 2'/>\n"
      "<axis name='tp' values='4'/></cross></study>",
      "s.xml:3: <axis>: 'tp' has two axes in one generator");
  bad("<study><zip><axis name='tp' values='1 2'/>"
      "<axis name='pp' values='1'/></zip></study>",
      "s.xml:1: <axis>: 1 values, but the zip's first axis has 2; zipped "
      "axes have as many values each");
  bad("<study><cross><axis name='tp'/></cross></study>",
      "s.xml:1: <axis>: give either 'values' or a range ('from', 'to' and "
      "'step' or 'times')");
  bad("<study><cross><axis name='tp' from='1' to='8'/></cross></study>",
      "s.xml:1: <axis>: a range needs 'step' or 'times' (one of them)");
  bad("<study><cross><axis name='tp' from='8' to='1' step='1'/></cross>"
      "</study>", "s.xml:1: <axis>: 'to' (1) is below 'from' (8)");
  bad("<study><cross><axis name='tp' values=' '/></cross></study>",
      "s.xml:1: <axis>: 'values' lists no value");
  bad("<study><cross/></study>", "s.xml:1: <cross>: no <axis> inside");
  bad("<study><zip><zip/></zip></study>",
      "s.xml:1: <zip>: unknown element in <zip>; expected <axis>");
  bad("<study><scenario/></study>", "s.xml:1: <scenario>: an empty scenario");
  bad("<study><plot/></study>",
      "s.xml:1: <plot>: unknown element; expected <set>, <var>, <cross>, "
      "<zip>, <scenario>, <derive> or <where>");
  bad("<study><set gpus='8'/><derive name='gpus' expr='1'/></study>",
      "s.xml:1: <derive>: 'gpus' is given a value too; derive it or give it, "
      "not both");
  bad("<study><derive name='dp' expr='gpus / (tp'/></study>",
      "s.xml:1: <derive> attribute 'expr': expected ')' at the end of "
      "'gpus / (tp'");
  bad("<study><set gpus='8'/><derive name='dp' expr='gpus / tpp'/></study>",
      "s.xml:1: <derive> attribute 'expr': 'tpp' is not a name of the study");
  bad("<study><where expr='1 +'/></study>",
      "s.xml:1: <where> attribute 'expr': expected a number, a name or '(' "
      "at the end of '1 +'");
  bad("<study><cross><axis name='tp' from='1' to='1e9' step='1'/></cross>"
      "</study>", "s.xml:1: <axis>: the range has more than 100000 values");
  bad("<study><cross><axis name='tp' from='1' to='1000' step='1'/>"
      "<axis name='pp' from='1' to='1000' step='1'/>"
      "<axis name='gpus' from='1' to='1000' step='1'/></cross></study>",
      "s.xml:1: <cross>: more than 1000000 scenarios");
}

/* Expressions. */
static double ev(const char *src)
{
  struct weft_err err = {0};
  struct expr *e = expr_parse(src, "e", &err);
  cr_assert(e, "%s", err.msg);
  double v = -1;
  cr_assert_eq(expr_eval(e, NULL, NULL, &v, &err), 0, "%s: %s", src, err.msg);
  expr_free(e);
  return v;
}

Test(expr, precedence_and_functions)
{
  cr_assert_eq(ev("1 + 2 * 3"), 7);
  cr_assert_eq(ev("(1 + 2) * 3"), 9);
  cr_assert_eq(ev("-2 ^ 2"), -4);
  cr_assert_eq(ev("2 ^ 3 ^ 2"), 512);
  cr_assert_eq(ev("7 % 4"), 3);
  cr_assert_eq(ev("10 / 4"), 2.5);
  cr_assert_eq(ev("1 < 2 && 2 <= 2 && !(3 == 4) && 3 != 4 && 5 >= 5"), 1);
  cr_assert_eq(ev("0 || 0"), 0);
  cr_assert_eq(ev("1 > 2 ? 10 : 20"), 20);
  cr_assert_eq(ev("min(3, 4) + max(3, 4) + pow(2, 10)"), 1031);
  cr_assert_eq(ev("floor(2.7) + ceil(2.1) + round(2.5) + abs(-1)"), 9);
  cr_assert_eq(ev("sqrt(16) + log2(1024)"), 14);
  cr_assert_eq(ev("1e3"), 1000);
  /* The right side of && and || is not evaluated when the left decides. */
  cr_assert_eq(ev("0 && 1 / 0"), 0);
  cr_assert_eq(ev("1 || 1 / 0"), 1);
}

static const char *lookup(void *ctx, const char *name)
{
  (void)ctx;
  return strcmp(name, "a") == 0 ? "6" : strcmp(name, "s") == 0 ? "x" : NULL;
}

Test(expr, variables_and_errors)
{
  struct weft_err err = {0};
  struct expr *e = expr_parse("a * 2 + a", "e", &err);
  double v;
  cr_assert_eq(expr_eval(e, lookup, NULL, &v, &err), 0);
  cr_assert_eq(v, 18);
  expr_free(e);
  const char *cases[][2] = {{"s + 1", "'s' is 'x', not a number"},
                            {"b", "'b' is not set"},
                            {"a / (a - 6)", "division by zero"},
                            {"pow(10, 400)", "the result is not a finite "
                                             "number"}};
  for (int i = 0; i < 4; i++) {
    e = expr_parse(cases[i][0], "e", &err);
    cr_assert(e);
    cr_assert_neq(expr_eval(e, lookup, NULL, &v, &err), 0);
    cr_assert_str_eq(err.msg, cases[i][1]);
    expr_free(e);
  }
  const char *syntax[][2] = {
      {"2 ** 3", "e: expected a number, a name or '(' at character 4 of "
                 "'2 ** 3'"},
      {"foo(1)", "e: unknown function (min, max, pow, floor, ceil, round, "
                 "sqrt, log2, abs) at character 1 of 'foo(1)'"},
      {"min(1)", "e: expected ',' (this function takes two arguments) at "
                 "character 6 of 'min(1)'"},
      {"1 2", "e: unexpected text at character 3 of '1 2'"},
      {"2x", "e: a number runs into a name at character 1 of '2x'"},
      {"global-batch", NULL}, /* valid: global minus batch */
  };
  for (int i = 0; i < 6; i++) {
    e = expr_parse(syntax[i][0], "e", &err);
    if (!syntax[i][1]) {
      cr_assert(e);
      expr_free(e);
      continue;
    }
    cr_assert_null(e, "%s", syntax[i][0]);
    cr_assert_str_eq(err.msg, syntax[i][1]);
  }
  /* Deep nesting is refused, not a stack overflow. */
  char deep[300];
  memset(deep, '(', 200);
  strcpy(deep + 200, "1");
  e = expr_parse(deep, "e", &err);
  cr_assert_null(e);
  cr_assert(strstr(err.msg, "nested too deeply"), "%s", err.msg);
}

Test(expr, format)
{
  char b[64];
  expr_format(64, b, sizeof b);
  cr_assert_str_eq(b, "64");
  expr_format(-0.0, b, sizeof b);
  cr_assert_str_eq(b, "0");
  expr_format(0.1 + 0.2, b, sizeof b);
  cr_assert_str_eq(b, "0.3");
  expr_format(1e20, b, sizeof b);
  cr_assert_str_eq(b, "1e+20");
}

/* CSV. */
Test(csv, quoting_round_trip_and_cut_rows)
{
  char path[] = "/tmp/weft_csv_XXXXXX";
  int fd = mkstemp(path);
  cr_assert(fd >= 0);
  struct csv_buf b = {0};
  const char *fields[] = {"plain", "a,b", "say \"hi\"", "two\nlines", NULL};
  for (int k = 0; k < 5; k++)
    csv_put(&b, fields[k], k == 0);
  csv_append(&b, "\n", 1);
  csv_append(&b, "x,y,z,w,v\nlast,cut", 18);
  cr_assert_eq(write(fd, b.s, b.len), (ssize_t)b.len);
  close(fd);
  cr_assert_eq(strncmp(b.s, "plain,\"a,b\",\"say \"\"hi\"\"\",\"two\nlines\",\n",
                       38), 0, "%s", b.s);
  struct csv c;
  struct weft_err err = {0};
  cr_assert_eq(csv_read(path, &c, &err), 0, "%s", err.msg);
  cr_assert_eq(c.nrows, 2);
  cr_assert(c.partial);
  cr_assert_eq(c.nfields[0], 5);
  for (int k = 0; k < 4; k++)
    cr_assert_str_eq(c.fields[0][k], fields[k]);
  cr_assert_str_eq(c.fields[0][4], "");
  cr_assert_str_eq(c.fields[1][2], "z");
  cr_assert_eq(c.line[1], 3);
  cr_assert_eq(c.complete_bytes, b.len - strlen("last,cut"));
  cr_assert_eq(csv_column(&c, "a,b"), 1);
  csv_release(&c);
  csv_buf_free(&b);
  FILE *f = fopen(path, "w");
  fputs("a,b\n\"x,y\nz\n", f);
  fclose(f);
  cr_assert_neq(csv_read(path, &c, &err), 0);
  cr_assert(strstr(err.msg, ":2: a quoted field does not end"), "%s",
            err.msg);
  f = fopen(path, "w");
  fputs("a,b\nx\"y,z\n", f);
  fclose(f);
  cr_assert_neq(csv_read(path, &c, &err), 0);
  cr_assert(strstr(err.msg, ":2: a quote inside an unquoted field"), "%s",
            err.msg);
  unlink(path);
}

/* JSON flattening. */
static void collect(void *ctx, const char *key, const char *value)
{
  struct csv_buf *b = ctx;
  csv_append(b, key, strlen(key));
  csv_append(b, "=", 1);
  csv_append(b, value, strlen(value));
  csv_append(b, ";", 1);
}

Test(jsonflat, nested_objects_arrays_and_escapes)
{
  const char *j = "{\"a\": 1.5e3, \"b\": {\"c\": \"x\\\"y\\u00e9\", \"d\": "
                  "[true, {\"e\": null}]}, \"f\": false}";
  struct csv_buf b = {0};
  struct weft_err err = {0};
  cr_assert_eq(jsonflat(j, strlen(j), collect, &b, &err), 0, "%s", err.msg);
  cr_assert_str_eq(b.s, "a=1.5e3;b.c=x\"y\xc3\xa9;b.d.0=true;b.d.1.e=;"
                        "f=false;");
  csv_buf_free(&b);
  const char *badj[][2] = {{"[1]", "expected an object at byte 0"},
                           {"{\"a\": }", "expected a value at byte 6"},
                           {"{\"a\": 1", "expected ',' or '}' at byte 7"},
                           {"{\"a\": 1} x", "text after the object at byte 9"},
                           {"{\"a\": nan}", "expected a value at byte 9"},
                           {"{\"a\": \"x\\u0000y\"}",
                            "a \\u0000 escape (a NUL) in a string at byte 10"}};
  for (int i = 0; i < 6; i++) {
    b = (struct csv_buf){0};
    cr_assert_neq(jsonflat(badj[i][0], strlen(badj[i][0]), collect, &b, &err),
                  0, "%s", badj[i][0]);
    cr_assert_str_eq(err.msg, badj[i][1]);
    csv_buf_free(&b);
  }
}
