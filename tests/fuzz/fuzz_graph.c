/* fuzz_graph.c - the task-graph reader, and the round trip: a graph that
 * reads back must write and read again to an equal graph. */
#include "tests/fuzz/fuzz_common.h"

#include "sim/graph/graph.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
  struct weft_err err = {0};
  char path[64];
  int fd = fuzz_file(data, size, path, sizeof path);
  struct graph *g = graph_read(path, &err);
  close(fd);
  if (!g)
    return 0;
  char out[] = "/tmp/weft-fuzz-graph-XXXXXX";
  int ofd = mkstemp(out);
  if (ofd < 0)
    abort();
  close(ofd);
  if (graph_write(g, out, &err) != 0)
    abort();
  struct graph *h = graph_read(out, &err);
  unlink(out);
  if (!h || !graph_equal(g, h)) {
    fprintf(stderr, "round trip failed: %s\n", h ? "graphs differ" : err.msg);
    abort();
  }
  graph_free(h);
  graph_free(g);
  return 0;
}
