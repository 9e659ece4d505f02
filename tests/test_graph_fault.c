/*
 * test_graph_fault.c - malformed graph files are rejected with the line.
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "sim/graph/graph.h"

static void bad(const char *text, const char *msg_after_path)
{
  char path[] = "/tmp/weft-badgraph-XXXXXX";
  int fd = mkstemp(path);
  FILE *f = fdopen(fd, "w");
  fputs(text, f);
  fclose(f);
  struct weft_err err = {0};
  struct graph *g = graph_read(path, &err);
  cr_assert_null(g);
  char want[512];
  snprintf(want, sizeof want, "%s%s", path, msg_after_path);
  cr_assert_str_eq(err.msg, want);
  unlink(path);
}

#define HEAD "weft-graph 1\nmodel m\nplan p\nlayout tp=1 pp=1 dp=2 cp=1 ep=1 v=1 order=tp-cp-dp-pp\ntokens 2048\n"

Test(graph_fault, bad_files)
{
  bad("weft-graph 2\n", ":1: not a weft graph version 1 (first line must be "
      "'weft-graph 1')");
  bad("", ":0: not a weft graph version 1 (first line must be 'weft-graph "
      "1')");
  bad("weft-graph 1\nlayout tp=0 pp=1 dp=2 cp=1 ep=1 v=1 order=tp-cp-dp-pp\n",
      ":2: parallel degree out of range");
  bad("weft-graph 1\nlayout tp=1 pp=1 dp=2 cp=1 ep=1 v=1 order=tp-xx-dp-pp\n",
      ":2: unknown dimension 'xx' in order");
  bad("weft-graph 1\ntensor3d 2 0 2\nlayout tp=8 pp=1 dp=1 cp=1 ep=1 v=1 "
      "order=tp-cp-dp-pp\n", ":2: malformed tensor3d line");
  bad("weft-graph 1\ntensor3d 2 2 2\nlayout tp=4 pp=1 dp=1 cp=1 ep=1 v=1 "
      "order=tp-cp-dp-pp\n", ":3: tensor3d grid is not the layout's TP");
  bad("weft-graph 1\nfoo\n", ":2: expected model, plan, tensor3d, tokens or layout, got "
      "'foo'");
  bad(HEAD "stage 0 tasks 1 deps 0\ncoll allreduce compute fwd t3x 0 0 0 0 "
      "0 0 0 0 0 1024\n", ":7: group 't3x' without a tensor3d line");
  bad(HEAD "stage 0 tasks 1 deps 0\nkernel gemv compute fwd - 0 0 0 0 1 1 1 1 "
      "2 6\n", ":7: unknown operation 'gemv'");
  bad(HEAD "stage 0 tasks 1 deps 0\nkernel gemm compute fwd - 0 0 0 0 1 1 1 1 "
      "nan 6\n", ":7: bad flops");
  bad(HEAD "stage 0 tasks 1 deps 0\nkernel gemm compute fwd - 0 0 0 0 1 1 1 1 "
      "2 -6\n", ":7: bad bytes");
  bad(HEAD "stage 0 tasks 2 deps 1\nkernel gemm compute fwd - 0 0 0 0 1 1 1 1 "
      "2 6 1\n", ":7: bad dependency (must name an earlier task)");
  bad(HEAD "stage 0 tasks 2 deps 0\nkernel gemm compute fwd - 0 0 0 0 1 1 1 1 "
      "2 6\n", ":7: truncated graph: missing stages or tasks");
  bad(HEAD "stage 1 tasks 1 deps 0\n", ":6: bad or out-of-order stage header");
  bad(HEAD "coll allreduce dp opt dp 0 -1 -1 -1 0 0 0 0 0 8\n",
      ":6: task before the first stage header");
  bad(HEAD "stage 0 tasks 1 deps 0\ncoll allreduce dp opt xy 0 -1 -1 -1 0 0 0 "
      "0 0 8\n", ":7: unknown group 'xy'");
  bad(HEAD "stage 0 tasks 1 deps 0\nsend p2p pp_send fwd - 3 0 0 -1 0 0 0 0 0 "
      "8\n", ":7: bad peer");
}

Test(graph_fault, missing_file)
{
  struct weft_err err = {0};
  cr_assert_null(graph_read("/nonexistent/g.txt", &err));
  cr_assert_str_eq(err.msg, "/nonexistent/g.txt: cannot open: No such file or "
                   "directory");
}

Test(graph_fault, directory)
{
  struct weft_err err = {0};
  cr_assert_null(graph_read("/", &err));
  cr_assert_str_eq(err.msg, "/: is a directory");
}
