/*
 * layout.c - rank arithmetic of a parallel plan (layout.h).
 */
#include "sim/graph/layout.h"

#include <stdbool.h>

long layout_degree(const struct graph_layout *l, enum pdim d)
{
  switch (d) {
  case PD_TP: return l->tp;
  case PD_CP: return l->cp;
  case PD_DP: return l->dp;
  case PD_PP: return l->pp;
  default: return 1;
  }
}

long layout_ranks(const struct graph_layout *l)
{
  return l->tp * l->cp * l->dp * l->pp;
}

long layout_shard(const struct graph_layout *l)
{
  return l->shard ? l->shard : l->dp;
}

void layout_coords(const struct graph_layout *l, long rank,
                   long out_coord[PD_COUNT])
{
  for (int i = 0; i < PD_COUNT; i++) {
    long deg = layout_degree(l, l->order[i]);
    out_coord[l->order[i]] = rank % deg;
    rank /= deg;
  }
}

long layout_rank(const struct graph_layout *l, const long coord[PD_COUNT])
{
  long r = 0;
  for (int i = PD_COUNT - 1; i >= 0; i--)
    r = r * layout_degree(l, l->order[i]) + coord[l->order[i]];
  return r;
}

/* MoE parallel folding (layout.h, etp): Megatron-Core's expert groups,
 * parallel_state.py initialize_model_parallel, RankGenerator(tp=ETP,
 * ep=EP, dp=EDP, pp=PP, order="tp-ep-dp-pp"): within a pipeline stage of
 * S = tp cp dp consecutive ranks (the default order puts PP outermost),
 * the stage index s = etp_i + ETP (ep_i + EP edp_i).  The stride of the
 * group's members in s, and their count. */
static bool folded(const struct graph_layout *l, enum group_kind gk,
                   long *stride, long *n)
{
  if (l->etp <= 0)
    return false;
  long S = l->tp * l->cp * l->dp;
  switch (gk) {
  case GK_ETP: *stride = 1; *n = l->etp; return true;
  case GK_EP: *stride = l->etp; *n = l->ep; return true;
  case GK_EDP:
  case GK_EDPCP:
    *stride = l->etp * l->ep;
    *n = S / (l->etp * l->ep);
    return true;
  case GK_TPEP: *stride = 1; *n = l->etp * l->ep; return true;
  /* DeepEP over the tp_ep group (builder_moe.c): its ranks node by node,
   * ep_node EP ranks of etp each to a node. */
  case GK_EPN:
    *stride = 1;
    *n = l->etp * (l->ep_node > 0 ? l->ep_node : l->ep);
    return true;
  case GK_EPX:
    *stride = l->etp * (l->ep_node > 0 ? l->ep_node : l->ep);
    *n = l->ep / (l->ep_node > 0 ? l->ep_node : l->ep);
    return true;
  default: return false;
  }
}

void layout_group(const struct graph_layout *l, enum group_kind gk, long rank,
                  struct layout_group *out)
{
  long fs, fn;
  if (folded(l, gk, &fs, &fn)) {
    out->n = fn;
    out->slot = rank / fs % fn;
    out->leader = rank - fs * out->slot;
    return;
  }
  if (gk == GK_ETP)
    gk = GK_TP;
  long c[PD_COUNT], id[PD_COUNT];
  layout_coords(l, rank, c);
  for (int d = 0; d < PD_COUNT; d++)
    id[d] = c[d];
  long cp = l->cp, ep = l->ep, sh = layout_shard(l), n, slot;
  switch (gk) {
  case GK_TP:
    n = l->tp;
    slot = c[PD_TP];
    id[PD_TP] = 0;
    break;
  case GK_DP:
    n = l->dp;
    slot = c[PD_DP];
    id[PD_DP] = 0;
    break;
  case GK_SHARD: /* consecutive DP indices, with all their CP ranks */
    n = sh * cp;
    slot = c[PD_CP] + cp * (c[PD_DP] % sh);
    id[PD_CP] = 0;
    id[PD_DP] = c[PD_DP] - c[PD_DP] % sh;
    break;
  case GK_REPL: /* the same index in every shard group */
    n = l->dp / sh;
    slot = c[PD_DP] / sh;
    id[PD_DP] = c[PD_DP] % sh;
    break;
  case GK_CP:
    n = cp;
    slot = c[PD_CP];
    id[PD_CP] = 0;
    break;
  case GK_DPCP:
    n = cp * l->dp;
    slot = c[PD_CP] + cp * c[PD_DP];
    id[PD_CP] = 0;
    id[PD_DP] = 0;
    break;
  case GK_EDPCP:
    n = cp * (l->dp / ep);
    slot = c[PD_CP] + cp * (c[PD_DP] / ep);
    id[PD_CP] = 0;
    id[PD_DP] = c[PD_DP] % ep;
    break;
  case GK_EP:
    n = ep;
    slot = c[PD_DP] % ep;
    id[PD_DP] = c[PD_DP] - c[PD_DP] % ep;
    break;
  case GK_TPEP: /* TP innermost, then the EP group's DP indices */
    n = l->tp * ep;
    slot = c[PD_TP] + l->tp * (c[PD_DP] % ep);
    id[PD_TP] = 0;
    id[PD_DP] = c[PD_DP] - c[PD_DP] % ep;
    break;
  case GK_EDP:
    n = l->dp / ep;
    slot = c[PD_DP] / ep;
    id[PD_DP] = c[PD_DP] % ep;
    break;
  case GK_EPN: /* consecutive EP slots of one node */
    n = l->ep_node > 0 ? l->ep_node : ep;
    slot = c[PD_DP] % ep % n;
    id[PD_DP] = c[PD_DP] - slot;
    break;
  case GK_EPX: { /* one EP slot per node */
    long g = l->ep_node > 0 ? l->ep_node : ep;
    n = ep / g;
    slot = c[PD_DP] % ep / g;
    id[PD_DP] = c[PD_DP] - g * slot;
    break;
  }
  case GK_T3X:
  case GK_T3Y:
  case GK_T3Z: {
    /* The grid's stride along the group's dimension, and its size. */
    int a = gk - GK_T3X;
    long stride = 1;
    for (int i = 0; i < a; i++)
      stride *= l->t3[i] > 0 ? l->t3[i] : 1;
    n = l->t3[a] > 0 ? l->t3[a] : 1;
    slot = c[PD_TP] / stride % n;
    id[PD_TP] = c[PD_TP] - slot * stride;
    break;
  }
  default: /* GK_EMB: first and last stage */
    n = l->pp > 1 ? 2 : 1;
    slot = c[PD_PP] == 0 ? 0 : 1;
    id[PD_PP] = 0;
  }
  out->n = n;
  out->slot = slot;
  out->leader = layout_rank(l, id);
}

long layout_member(const struct graph_layout *l, enum group_kind gk,
                   long leader, long slot)
{
  long fs, fn;
  if (folded(l, gk, &fs, &fn))
    return leader + fs * slot;
  if (gk == GK_ETP)
    gk = GK_TP;
  long c[PD_COUNT];
  layout_coords(l, leader, c);
  long cp = l->cp, ep = l->ep, sh = layout_shard(l);
  switch (gk) {
  case GK_TP: c[PD_TP] = slot; break;
  case GK_DP: c[PD_DP] = slot; break;
  case GK_SHARD:
    c[PD_CP] = slot % cp;
    c[PD_DP] += slot / cp;
    break;
  case GK_REPL: c[PD_DP] += sh * slot; break;
  case GK_CP: c[PD_CP] = slot; break;
  case GK_DPCP:
    c[PD_CP] = slot % cp;
    c[PD_DP] = slot / cp;
    break;
  case GK_EDPCP:
    c[PD_CP] = slot % cp;
    c[PD_DP] += ep * (slot / cp);
    break;
  case GK_EP: c[PD_DP] += slot; break;
  case GK_TPEP:
    c[PD_TP] = slot % l->tp;
    c[PD_DP] += slot / l->tp;
    break;
  case GK_EDP: c[PD_DP] += ep * slot; break;
  case GK_EPN: c[PD_DP] += slot; break;
  case GK_EPX: c[PD_DP] += (l->ep_node > 0 ? l->ep_node : ep) * slot; break;
  case GK_T3X: c[PD_TP] += slot; break;
  case GK_T3Y: c[PD_TP] += (l->t3[0] > 0 ? l->t3[0] : 1) * slot; break;
  case GK_T3Z:
    c[PD_TP] += (l->t3[0] > 0 ? l->t3[0] : 1) *
                (l->t3[1] > 0 ? l->t3[1] : 1) * slot;
    break;
  default: c[PD_PP] = slot ? l->pp - 1 : 0;
  }
  return layout_rank(l, c);
}

enum group_kind layout_grad_group(const struct graph_layout *l)
{
  return l->cp > 1 ? GK_DPCP : GK_DP;
}
