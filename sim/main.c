/*
 * main.c - the `weft` program: dispatch to a subcommand of the table.
 */
#include <stdio.h>
#include <string.h>

#include "sim/cli.h"

int cmd_list(int argc, char **argv);
int cmd_platform(int argc, char **argv);
int cmd_graph(int argc, char **argv);
int cmd_run(int argc, char **argv);
int cmd_coll(int argc, char **argv);
static int cmd_help(int argc, char **argv);

const struct command weft_commands[] = {
    {"run", cmd_run, "[WORKLOAD.xml] [--json] [--paje F] [--chrome F]",
     "simulate one training iteration (no arguments: a demo job)"},
    {"coll", cmd_coll, "OP [--min/max-bytes S] [--collective A] [--json]",
     "simulate one collective over a size range, as nccl-tests"},
    {"platform", cmd_platform, "[CLUSTER] [-o FILE] [cluster flags]",
     "write the SimGrid platform XML of a cluster preset or file"},
    {"graph", cmd_graph, "[WORKLOAD.xml] [-o FILE] [flags]",
     "write the task graph of one training iteration"},
    {"list", cmd_list, "[models|gpus|nics|nodes|clusters|collectives]",
     "show the hardware catalog and cluster presets"},
    {"help", cmd_help, "", "show this help"},
    {NULL, NULL, NULL, NULL},
};

static void usage(FILE *f)
{
  fprintf(f, "usage: weft COMMAND [ARGS]\n\n"
          "weft simulates distributed Transformer training on GPU clusters "
          "with SimGrid.\n\ncommands:\n");
  for (const struct command *c = weft_commands; c->name; c++)
    fprintf(f, "  weft %s %s\n      %s\n", c->name, c->args, c->summary);
  fprintf(f, "\ncluster flags: --cluster NAME|FILE --catalog FILE --gpus N "
          "--nodes N --node TYPE\n  --gpu NAME --nic NAME --gpus-per-node N "
          "--nics-per-node N --nodes-per-leaf N\n  --leaves-per-pod N "
          "--oversubscription R --pod-oversubscription R\n  --switch-lat T "
          "--nvlink-lat T --nic-lat T\n  --scale compute=F,hbm_bw=F,hbm_cap=F,"
          "nvlink=F,nic=F\n"
          "\nworkload flags: --model NAME --layers --hidden --heads --kv-heads "
          "--ffn --ffn-kind\n  --vocab --seq --dtype --experts --topk --tp "
          "--pp --dp --cp --ep --sp yes|no\n  --zero 0..3 --fsdp yes|no --hsdp N "
          "--moe-imbalance F\n  --micro-batch --global-batch --schedule "
          "gpipe|1f1b|interleaved:V\n  --recompute none|selective|full "
          "--bucket SIZE --overlap-grad yes|no --order tp-cp-dp-pp\n"
          "  --attention flash|unfused --p2p async|blocking --grad-dtype bf16|fp32\n"
          "  --collective ALGO --fidelity flow|step|auto --kernel-table FILE (run)\n");
}

static int cmd_help(int argc, char **argv)
{
  (void)argc;
  (void)argv;
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
    return cmd_help(argc, argv);
  for (const struct command *c = weft_commands; c->name; c++)
    if (strcmp(argv[1], c->name) == 0)
      return c->run(argc - 1, argv + 1);
  return cli_usage("unknown command '%s' (see weft help)", argv[1]);
}
