/*
 * main.c - the `weft` program: dispatch to a subcommand of the table; the
 * help is generated from the table and the commands' option declarations.
 */
#include <stdio.h>
#include <string.h>

#include "sim/base/outfile.h"
#include "sim/commands.h"

static int cmd_help(int argc, char **argv);

const struct command weft_commands[] = {
    {"run", cmd_run, &cmd_run_spec,
     "simulate one training iteration (no arguments: a demo job)"},
    {"coll", cmd_coll, &cmd_coll_spec,
     "simulate one collective over a size range, as nccl-tests"},
    {"platform", cmd_platform, &cmd_platform_spec,
     "write the SimGrid platform XML of a cluster preset or file"},
    {"graph", cmd_graph, &cmd_graph_spec,
     "write the task graph of one training iteration"},
    {"sweep", cmd_sweep, &cmd_sweep_spec,
     "run every scenario of a study file, one CSV row each"},
    {"plan", cmd_plan, &cmd_plan_spec,
     "search the plans of a model on a cluster: closed form, then simulation"},
    {"share", cmd_share, &cmd_share_spec,
     "several jobs on one cluster at once: each one's slowdown from sharing"},
    {"report", cmd_report, &cmd_report_spec,
     "summary tables and plots (gnuplot) of a sweep's results"},
    {"list", cmd_list, &cmd_list_spec,
     "show the hardware catalog, presets and collective algorithms"},
    {"help", cmd_help, NULL, "show this help, or a command's: weft help CMD"},
    {NULL, NULL, NULL, NULL},
};

static void usage(FILE *f)
{
  fprintf(f, "usage: weft COMMAND [ARGS]\n       weft --version\n\n"
          "weft simulates distributed Transformer training on GPU clusters "
          "with SimGrid.\n\ncommands:\n");
  for (const struct command *c = weft_commands; c->name; c++) {
    const struct opts_spec *s = c->spec;
    fprintf(f, "  weft %s", c->name);
    if (s && s->pos_name)
      fprintf(f, s->positional != POS_NONE ? " [%s]" : " %s", s->pos_name);
    if (s)
      fprintf(f, " [options]");
    fprintf(f, "\n      %s\n", c->summary);
  }
  fprintf(f, "\nsettings, as flags of run and graph (the cluster ones also of "
          "coll and platform):\n");
  opts_group_help(f, OPTS_CLUSTER | OPTS_WORKLOAD);
  fprintf(f, "\nrun and graph simulate on selene (DGX A100 80GB) unless told "
          "otherwise (--cluster);\ncoll and platform on dgx-h100.\n"
          "weft help COMMAND (or weft COMMAND --help) explains a command's "
          "options and\nevery setting with its default; weft help --man "
          "writes the man page.\n");
}

/* The man page, weft.1: the commands and settings from the same tables
 * as the help. */
static void man_page(FILE *f)
{
  fputs(".TH WEFT 1 \"\" \"weft\" \"User Commands\"\n"
        ".SH NAME\nweft \\- simulate distributed Transformer training on GPU "
        "clusters with SimGrid\n"
        ".SH SYNOPSIS\n.B weft\n.I COMMAND\n[\\fIARGS\\fR]\n"
        ".SH DESCRIPTION\nweft turns one training iteration (data, tensor, "
        "pipeline, context and expert parallelism, ZeRO and FSDP) into a "
        "task graph of kernels and collective flows and replays it with "
        "SimGrid on a platform of GPU nodes, NVLink and InfiniBand fabrics.\n"
        ".SH COMMANDS\n", f);
  for (const struct command *c = weft_commands; c->name; c++)
    if (c->spec)
      opts_man(f, c->spec);
  fputs(".SH SETTINGS\nSettings are flags of run and graph (the cluster "
        "ones also of coll and platform) and attributes of workload and "
        "cluster files, where they are written with '_' for '-'.\n", f);
  opts_man_settings(f, OPTS_CLUSTER | OPTS_WORKLOAD);
  fputs(".SH EXIT STATUS\n0 on success, 1 for a bad value or file, 2 for "
        "a usage error (an unknown command or option), 3 from weft run "
        "--must-fit for a job that does not fit in GPU memory.\n"
        ".SH SEE ALSO\nREADME.md of the weft sources.\n", f);
}

static int cmd_help(int argc, char **argv)
{
  if (argc == 2 && strcmp(argv[1], "--man") == 0) {
    man_page(stdout);
    return 0;
  }
  if (argc > 1)
    for (const struct command *c = weft_commands; c->name; c++)
      if (c->spec && strcmp(argv[1], c->name) == 0) {
        opts_usage(stdout, c->spec);
        return 0;
      }
  if (argc > 1)
    return cli_usage("help: unknown command '%s'", argv[1]);
  usage(stdout);
  return 0;
}

int main(int argc, char **argv)
{
  if (argc < 2) {
    usage(stderr);
    return 2;
  }
  if (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0)
    return cmd_help(1, argv);
  /* The version the JSON's weft_version and a study's results carry. */
  if (strcmp(argv[1], "--version") == 0 || strcmp(argv[1], "-V") == 0) {
    printf("weft %s\n", WEFT_VERSION);
    return 0;
  }
  for (const struct command *c = weft_commands; c->name; c++)
    if (strcmp(argv[1], c->name) == 0) {
      int rc = c->run(argc - 1, argv + 1);
      /* A full disk or a closed pipe on standard output is a failure. */
      struct weft_err err = {0};
      if (rc == 0 && outfile_check_stdout(&err))
        rc = cli_fail(&err);
      return rc;
    }
  return cli_usage("unknown command '%s' (see weft help)", argv[1]);
}
