/*
 * test_layout.c - rank arithmetic: coordinates, group membership and its
 * inverse, for every group kind and a few layouts.
 */
#include <criterion/criterion.h>

#include "sim/graph/layout.h"

static const struct graph_layout layouts[] = {
    {4, 2, 8, 1, 1, 1, {PD_TP, PD_CP, PD_DP, PD_PP}, 0, {0, 0, 0}, 0, 0},
    {2, 3, 8, 2, 4, 1, {PD_TP, PD_CP, PD_DP, PD_PP}, 4, {0, 0, 0}, 0, 0},
    {2, 2, 6, 3, 2, 1, {PD_DP, PD_TP, PD_CP, PD_PP}, 3, {0, 0, 0}, 0, 0},
    {1, 4, 4, 1, 2, 2, {PD_PP, PD_DP, PD_TP, PD_CP}, 2, {0, 0, 0}, 0, 0},
};

Test(layout, coords_round_trip)
{
  for (size_t i = 0; i < sizeof layouts / sizeof *layouts; i++) {
    const struct graph_layout *l = &layouts[i];
    for (long r = 0; r < layout_ranks(l); r++) {
      long c[PD_COUNT];
      layout_coords(l, r, c);
      for (int d = 0; d < PD_COUNT; d++)
        cr_assert(c[d] >= 0 && c[d] < layout_degree(l, (enum pdim)d));
      cr_assert_eq(layout_rank(l, c), r);
    }
  }
}

/* Every rank is in exactly one group of each kind, at a slot the inverse
 * maps back to it; groups have the size layout_group says; members of a
 * group agree on its leader. */
Test(layout, groups_partition_the_ranks)
{
  for (size_t i = 0; i < sizeof layouts / sizeof *layouts; i++) {
    const struct graph_layout *l = &layouts[i];
    long R = layout_ranks(l);
    for (int gk = 0; gk < GK_COUNT; gk++) {
      long members = 0;
      for (long r = 0; r < R; r++) {
        struct layout_group g;
        long c[PD_COUNT];
        layout_coords(l, r, c);
        if (gk == GK_EMB && c[PD_PP] != 0 && c[PD_PP] != l->pp - 1)
          continue; /* only the first and last stage hold the embedding */
        layout_group(l, (enum group_kind)gk, r, &g);
        cr_assert(g.slot >= 0 && g.slot < g.n, "kind %d rank %ld", gk, r);
        cr_assert_eq(layout_member(l, (enum group_kind)gk, g.leader, g.slot),
                     r, "kind %d rank %ld", gk, r);
        struct layout_group lg;
        layout_group(l, (enum group_kind)gk, g.leader, &lg);
        cr_assert_eq(lg.leader, g.leader);
        if (gk != GK_EMB)
          cr_assert_eq(lg.slot, 0, "kind %d: the leader is slot 0", gk);
        if (g.slot == 0)
          members += g.n;
      }
      if (gk != GK_EMB) /* the embedding group holds two stages only */
        cr_assert_eq(members, R, "kind %d covers every rank once", gk);
    }
  }
}

Test(layout, group_sizes)
{
  const struct graph_layout *l = &layouts[1]; /* tp 2 pp 3 dp 8 cp 2 ep 4 */
  struct layout_group g;
  long want[GK_COUNT] = {[GK_TP] = 2, [GK_DP] = 8, [GK_EMB] = 2,
                         [GK_SHARD] = 4 * 2, [GK_REPL] = 2, [GK_EP] = 4,
                         [GK_EDP] = 2, [GK_CP] = 2, [GK_DPCP] = 16,
                         [GK_EDPCP] = 4, [GK_T3X] = 1, [GK_T3Y] = 1,
                         [GK_T3Z] = 1, [GK_EPN] = 4, [GK_EPX] = 1,
                         [GK_ETP] = 2, [GK_TPEP] = 8};
  for (int gk = 0; gk < GK_COUNT; gk++) {
    layout_group(l, (enum group_kind)gk, 5, &g);
    cr_assert_eq(g.n, want[gk], "kind %d", gk);
  }
  cr_assert_eq(layout_shard(l), 4);
  cr_assert_eq(layout_shard(&layouts[0]), 8);
  cr_assert_eq(layout_grad_group(l), GK_DPCP);
  cr_assert_eq(layout_grad_group(&layouts[0]), GK_DP);
}

Test(layout, tensor3d_groups)
{
  /* TP 12 as a 2 x 3 x 2 grid (tensor index x + 2 y + 6 z), 2 DP ranks:
   * X groups are consecutive pairs, Y groups stride 2, Z groups stride 6,
   * and each rank's three groups meet only in itself. */
  struct graph_layout l = {12, 1, 2, 1, 1, 1, {PD_TP, PD_CP, PD_DP, PD_PP},
                           0, {2, 3, 2}, 0, 0};
  const enum group_kind gk[3] = {GK_T3X, GK_T3Y, GK_T3Z};
  const long size[3] = {2, 3, 2}, stride[3] = {1, 2, 6};
  for (long r = 0; r < layout_ranks(&l); r++) {
    long t = r % 12, dp = r / 12;
    long coord[3] = {t % 2, t / 2 % 3, t / 6};
    for (int a = 0; a < 3; a++) {
      struct layout_group g;
      layout_group(&l, gk[a], r, &g);
      cr_assert_eq(g.n, size[a]);
      cr_assert_eq(g.slot, coord[a]);
      cr_assert_eq(g.leader, dp * 12 + t - coord[a] * stride[a]);
      for (long k = 0; k < g.n; k++)
        cr_assert_eq(layout_member(&l, gk[a], g.leader, k),
                     g.leader + k * stride[a]);
    }
  }
}
