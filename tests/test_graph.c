/*
 * test_graph.c - the graph file format round-trips exactly.
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <unistd.h>

#include "workloads/builder.h"

static void round_trip_with(const char *model, long gpus, long tp, long pp,
                            long gb, const char *sched, const char *recompute,
                            bool sp, const char *const *kv)
{
  struct model m;
  cr_assert_eq(model_from_preset(&m, model, NULL), 0);
  struct plan p;
  plan_init(&p);
  p.tp = tp;
  p.pp = pp;
  p.global_batch = gb;
  p.sp = sp;
  struct weft_err err = {0};
  cr_assert_eq(plan_set(&p, PK_SCHEDULE, sched, "s", &err), 0);
  cr_assert_eq(plan_set(&p, PK_RECOMPUTE, recompute, "r", &err), 0);
  for (int i = 0; kv && kv[i]; i += 2)
    cr_assert_eq(plan_set(&p, plan_key_from_name(kv[i]), kv[i + 1], kv[i],
                          &err), 0, "%s", err.msg);
  cr_assert_eq(plan_resolve(&p, &m, gpus, &err), 0, "%s", err.msg);
  struct graph *g = build_graph(&m, &p, &err);
  cr_assert(g);
  char path[] = "/tmp/weft-graph-XXXXXX";
  close(mkstemp(path));
  cr_assert_eq(graph_write(g, path, &err), 0, "%s", err.msg);
  struct graph *h = graph_read(path, &err);
  cr_assert(h, "%s", err.msg);
  cr_assert(graph_equal(g, h), "%s does not round-trip", model);
  cr_assert_str_eq(g->model, h->model);
  cr_assert_str_eq(g->plan, h->plan);
  /* Writing the read graph gives the same bytes. */
  char path2[] = "/tmp/weft-graph2-XXXXXX";
  close(mkstemp(path2));
  cr_assert_eq(graph_write(h, path2, &err), 0);
  char cmd[128];
  snprintf(cmd, sizeof cmd, "cmp -s %s %s", path, path2);
  cr_assert_eq(system(cmd), 0);
  unlink(path);
  unlink(path2);
  graph_free(g);
  graph_free(h);
}

static void round_trip(const char *model, long gpus, long tp, long pp, long gb,
                       const char *sched, const char *recompute, bool sp)
{
  round_trip_with(model, gpus, tp, pp, gb, sched, recompute, sp, NULL);
}

Test(graph, round_trips)
{
  /* Tensor3D (its groups, the t3 stream, the tensor3d line) and gradient
   * compression (its kernels). */
  round_trip_with("gpt-1.7b", 16, 1, 2, 16, "1f1b", "full", false,
                  (const char *const[]){"tensor3d", "2,2,2", "overdecompose",
                                        "2", "micro_batch", "2", NULL});
  round_trip_with("gpt-1.7b", 16, 2, 1, 16, "1f1b", "none", false,
                  (const char *const[]){"compress", "powersgd:2", NULL});
  /* DeepSpeed 2021's host synchronizations and host operations. */
  round_trip_with("gpt-1.7b", 16, 1, 1, 16, "1f1b", "full", false,
                  (const char *const[]){"zero", "3", "shard_impl",
                                        "deepspeed-2021", NULL});
  round_trip("gpt-1.7b", 8, 2, 2, 16, "1f1b", "none", true);
  round_trip("gpt3-175b", 256, 8, 4, 32, "interleaved:2", "full", false);
  round_trip("llama3-8b", 16, 4, 2, 8, "gpipe", "selective", false);
  round_trip("mixtral-8x7b", 8, 2, 4, 8, "1f1b", "none", true);
}
