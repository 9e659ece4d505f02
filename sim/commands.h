/*
 * commands.h - the subcommands of `weft` and what they share.  Each lives
 * in its own cmd_<name>.c, declares its options in an opts_spec (opts.h)
 * and, with report.c and opts.c, is the only layer that prints.
 *
 * Adding a command:
 *   1. sim/cmd_<name>.c with `int cmd_<name>(int argc, char **argv)` and
 *      its `const struct opts_spec cmd_<name>_spec` (own options with help
 *      text, positional argument, setting groups); parse with cli_parse.
 *      The own options' table is indexed by an enum of their keys and
 *      followed by OPTS_CHECK_TABLE (opts.h); read them with opts_get.
 *   2. Declare both below and add a row to weft_commands[] in main.c: the
 *      main help and `weft <name> --help` come from the table and the spec.
 *   3. Add the file to the weft executable in meson.build.
 *   4. Tests: exit codes and exact messages of bad input, and a golden
 *      output, in tests/cli/test_cli.sh; README's usage section.
 */
#ifndef WEFT_COMMANDS_H
#define WEFT_COMMANDS_H

#include "sim/base/err.h"
#include "sim/job.h"
#include "sim/opts.h"

struct command {
  const char *name;
  int (*run)(int argc, char **argv); /* argv[0] is the command name */
  const struct opts_spec *spec;      /* NULL: takes no options */
  const char *summary;
};

extern const struct command weft_commands[]; /* ends with a NULL name */

int cmd_run(int argc, char **argv);
int cmd_coll(int argc, char **argv);
int cmd_platform(int argc, char **argv);
int cmd_graph(int argc, char **argv);
int cmd_list(int argc, char **argv);
int cmd_sweep(int argc, char **argv);
int cmd_report(int argc, char **argv);
int cmd_plan(int argc, char **argv);
int cmd_share(int argc, char **argv);
extern const struct opts_spec cmd_run_spec, cmd_coll_spec, cmd_platform_spec,
    cmd_graph_spec, cmd_list_spec, cmd_sweep_spec,
    cmd_report_spec, cmd_plan_spec, cmd_share_spec;

/* Monotonic wall-clock time in seconds (for elapsed times). */
double cli_wall_s(void);

/* Print "weft: MSG" to stderr; returns the exit code 1 (or 2 for usage). */
int cli_fail(const struct weft_err *err);
int cli_usage(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* Parse argv for the command of `s` (opts_parse).  Returns 0 to go on;
 * otherwise the command returns *exit_code: 0 after printing the help for
 * --help, 1 or 2 after printing the error. */
int cli_parse(const struct opts_spec *s, int argc, char **argv,
              struct opts *out, int *exit_code);

/* A `weft run` command line as a job (cmd_run.c), for weft run and a
 * sweep's scenarios: argv parsed against cmd_run_spec (argv[0] is "run"),
 * the workload resolved (the demo job when argv names no workload and no
 * setting, only options), the engine settings, kernel table, --force and
 * traces in spec, which points into the struct (do not copy it). */
struct run_args {
  struct opts o;
  struct workload w;
  struct catalog *cat; /* owned */
  struct cluster c;
  struct job_spec spec;
};

/* Returns 0 to go on (then release *out with cmd_run_args_release);
 * otherwise the command returns *exit_code (0 after --help, 1 or 2 after
 * printing the error) and there is nothing to release. */
int cmd_run_args(int argc, char **argv, struct run_args *out,
                 int *exit_code);
void cmd_run_args_release(struct run_args *a);

/* --train-days and the other goodput settings of a `weft run` command
 * line (cmd_run.c), checked before the simulation; `on` when a run
 * length was given. */
struct gp_args {
  bool on;
  const struct fail_table *t;
  struct goodput_in in;  /* mtbf, bytes, ranks and work filled later */
  double days, tokens;
};

/* Read the goodput options of o (parsed against cmd_run_spec) for a job
 * on c into *g; a usage error is printed and its exit code returned (0:
 * go on).  weft run and a sweep's scenarios. */
int cmd_run_goodput_args(const struct opts *o, const struct cluster *c,
                         struct gp_args *g);

/* The goodput of a's job, simulated as r, into *out; an error is printed
 * and its exit code returned. */
int cmd_run_goodput_eval(struct gp_args *g, const struct run_args *a,
                         const struct report *r, struct goodput *out);

#endif
