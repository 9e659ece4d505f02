/*
 * symmetry.c - the symmetric shortcuts' conditions and the thinning of
 * shared links (symmetry.h).
 *
 * The conditions are those the engine's tests check against replays of
 * every rank and flow (tests/test_engine.c, --every-rank); the thinning
 * asks the platform loader, which named the links, to scale them.
 */
#include "sim/symmetry.h"

#include "platforms/topo.h"
#include "sim/platload.h"

#include <stdlib.h>

#include "sim/base/xalloc.h"

/* Whether every group of kind `gk` lies inside one node: its collectives
 * then ride that node's NVLinks alone and leave the network to the rings
 * (which on a fabric with PXN routes cross NVLinks too). */
static bool inside_nodes(const struct graph_layout *L,
                         const struct cluster *c, enum group_kind gk)
{
  long nranks = layout_ranks(L);
  for (long r = 0; r < nranks; r++) {
    struct layout_group grp;
    layout_group(L, gk, r, &grp);
    if (grp.slot != 0)
      continue;
    int node = cluster_node_of(c, (int)r);
    for (long k = 1; k < grp.n; k++)
      if (cluster_node_of(c, (int)layout_member(L, gk, r, k)) != node)
        return false;
  }
  return true;
}

void symmetry_decide(const struct graph_layout *L, const struct cluster *c,
                     bool every_flow, bool every_task, struct symmetry *out)
{
  /* Nodes wired alike (a NIC per GPU) and nothing that needs every flow:
   * the condition of every symmetric shortcut; with no oversubscription
   * on a fabric where, at ratios of 1, a node's flows cross no link that
   * another node's flows cross (not a dragonfly or a torus, nor an
   * oversubscribed second NVLink tier), that of the replica shortcuts. */
  /* An uneven last rack (cluster.h, last_node_gpus) makes nodes differ. */
  bool wired = c->nics_per_node == c->gpus_per_node && !every_flow &&
               c->last_node_gpus == 0;
  bool alike = wired && c->oversub == 1 && c->pod_oversub == 1 &&
               topo_fabric(c->topology)->alike && c->nvl_oversub == 1;
  /* MoE parallel folding (layout.h, etp) regroups the ranks for the
   * experts; no shortcut has been checked against full replays with it,
   * so every rank and flow is simulated. */
  bool fold = L->etp > 0;
  out->tp = L->tp > 1 && L->tp == c->gpus_per_node &&
            L->order[0] == PD_TP && wired && !every_task && !fold;
  out->rank_step = out->tp ? L->tp : 1;
  out->thin = out->tp && !alike;
  /* Rings over whole nodes may emit one node's flows (coll.h, rep) when
   * the links of the nodes they leave out carry nothing that the node kept
   * does not carry alike: on a symmetric fabric, no PP traffic; TP,
   * context, expert and HSDP shard groups inside nodes, whose collectives
   * ride NVLinks of their own (those of node 0 then stand for every
   * node's, as its kernels do), or TP over whole nodes (timed in closed
   * form).  Not with PXN routes (rail fabrics): a ring's channel into
   * node 0 then crosses the previous node's NVLinks, which carry that
   * node's own collectives, not simulated.  With pipelining the
   * replicas are alike too, but a ring's edge to the next node meets that
   * node's pipeline transfers, which node 0's replica symmetry does not
   * simulate (Megatron Table 1 row 6 moved by 0.23 %): pipelines are
   * left to symmetry_decide_stages, which simulates each stage's first
   * node, under the conditions where that was checked. */
  out->ep_across = L->ep > 1 && !inside_nodes(L, c, GK_EP);
  out->experts = false;
  out->quot = out->quot_needed = false;
  out->stages = false;
  out->classes = false;
  out->fabric = alike && !fold && !topo_forwards(c) && L->pp == 1 &&
                (L->cp == 1 || inside_nodes(L, c, GK_CP)) &&
                !out->ep_across &&
                (L->tp == 1 || out->tp || inside_nodes(L, c, GK_TP)) &&
                (L->shard == 0 || L->shard >= L->dp ||
                 inside_nodes(L, c, GK_SHARD));
  long nranks = layout_ranks(L);
  out->replicas = out->fabric && !every_task && L->dp > 1 &&
                  nranks > c->gpus_per_node &&
                  nranks % c->gpus_per_node == 0;
}

/* The conditions every stage-replica shortcut shares (symmetry.h): the
 * nodes alike, nothing that needs every rank, PP outermost with stages of
 * two or more whole nodes, data parallelism, and TP, context and HSDP
 * shard groups inside nodes (or TP filling them), packed placement. */
static bool stages_ok(const struct graph_layout *L, const struct cluster *c,
                      bool every_flow, bool every_task)
{
  /* An uneven last rack (cluster.h, last_node_gpus) makes nodes differ. */
  bool wired = c->nics_per_node == c->gpus_per_node && !every_flow &&
               c->last_node_gpus == 0;
  bool alike = wired && c->oversub == 1 && c->pod_oversub == 1 &&
               topo_fabric(c->topology)->alike && c->nvl_oversub == 1;
  long nranks = layout_ranks(L);
  long per_stage = nranks / L->pp;
  if (!alike || every_task || topo_forwards(c) || L->etp > 0 ||
      L->dp < 2 || L->order[PD_COUNT - 1] != PD_PP ||
      per_stage % c->gpus_per_node != 0 || per_stage <= c->gpus_per_node ||
      L->t3[0] != 0)
    return false;
  if ((L->cp > 1 && !inside_nodes(L, c, GK_CP)) ||
      (L->tp > 1 && !(L->tp == c->gpus_per_node && L->order[0] == PD_TP) &&
       !inside_nodes(L, c, GK_TP)) ||
      (L->shard != 0 && L->shard < L->dp && !inside_nodes(L, c, GK_SHARD)))
    return false;
  return !c->spread && c->random_seed == 0;
}

void symmetry_decide_stages(const struct graph_layout *L,
                            const struct cluster *c, bool every_flow,
                            bool every_task, struct symmetry *out)
{
  /* Each stage inside one leaf group: its ring edges and its nodes'
   * pipeline routes then have one latency each (platforms/topo.c,
   * tiered_route: 1 switch inside a leaf group, 3 inside a pod, 5 across
   * pods), so every node of a stage is the first node's image.  Stages
   * over several leaf groups have nodes at the boundaries whose ring
   * edges pay more switch latencies; those nodes' NICs are then shared on
   * another schedule and the full replay's nodes differ (Llama 3 405B cut
   * to 16 layers, TP 8 x PP 16 on 2048 H100, stages of 16 nodes over two
   * leaf groups of 8: the nodes leaving a leaf group, positions 7 and 15,
   * had their own times, every other node the same; one node per stage
   * was 12.5 % off on a stage's overlapped DP time, over two pods 25 %;
   * with zero switch latency it agreed to the last digit).  So one node
   * per class of positions (symmetry_stage_classes) is simulated, each
   * standing for its class: the same jobs then agreed to the last digit.
   * The classes follow tiered_route's latencies, so only on the fat tree
   * (rails add the rail to a route's latency, and PXN moves the NIC).
   * Interleaved schedules: data-parallel rings overlap pipeline
   * transfers into and out of the nodes, and a ring's edge into the next
   * node misses that node's transfers, which are not simulated (Llama 3
   * 70B cut to 8 layers, TP 8 x PP 4 interleaved on 256 H100: 5.4 % on a
   * stage's overlapped DP time; TP 4 x CP 2 x PP 2: 8.7 %).  1F1B and
   * GPipe gave every metric to the last printed digit on the jobs of
   * tests/bench/README.md ("Stage replica symmetry"). */
  long per_stage = layout_ranks(L) / L->pp;
  if (out->replicas || out->ep_across || L->pp < 2 || L->vchunks > 1 ||
      !stages_ok(L, c, every_flow, every_task))
    return;
  /* Stages over several leaf groups: one node per class of position
   * (symmetry_stage_classes), on the fat tree whose routes it knows. */
  bool inside = c->nodes_per_leaf % (per_stage / c->gpus_per_node) == 0;
  if (!inside && c->topology != TOPO_FAT_TREE)
    return;
  out->fabric = true;
  out->replicas = true;
  out->stages = true;
  out->classes = !inside;
}

/* Switch latencies on the route between cluster nodes a and b of a fat
 * tree (platforms/topo.c, tiered_route): 1 inside a leaf group, 3 inside
 * a pod, 5 across pods. */
static int hops_between(const struct cluster *c, long a, long b)
{
  long la = a / c->nodes_per_leaf, lb = b / c->nodes_per_leaf;
  if (la == lb)
    return 1;
  return la / c->leaves_per_pod == lb / c->leaves_per_pod ? 3 : 5;
}

/* The cluster node of node `k` of stage `s` (stages of n nodes). */
static long stage_node(const struct cluster *c, long n, long s, long k)
{
  return cluster_node_of(c, (int)((s * n + k) * c->gpus_per_node));
}

/* Whether nodes j and k of every stage have the same route latencies to
 * their ring neighbours and pipeline peers. */
static bool same_class(const struct graph_layout *L, const struct cluster *c,
                       long n, long j, long k)
{
  for (long s = 0; s < L->pp; s++) {
    long nj = stage_node(c, n, s, j), nk = stage_node(c, n, s, k);
    if (hops_between(c, nj, stage_node(c, n, s, (j + 1) % n)) !=
            hops_between(c, nk, stage_node(c, n, s, (k + 1) % n)) ||
        hops_between(c, stage_node(c, n, s, (j + n - 1) % n), nj) !=
            hops_between(c, stage_node(c, n, s, (k + n - 1) % n), nk))
      return false;
    if (s + 1 < L->pp &&
        hops_between(c, nj, stage_node(c, n, s + 1, j)) !=
            hops_between(c, nk, stage_node(c, n, s + 1, k)))
      return false;
  }
  return true;
}

long symmetry_stage_classes(const struct graph_layout *L,
                            const struct cluster *c, long *rep_of)
{
  long n = layout_ranks(L) / L->pp / c->gpus_per_node, nrep = 0;
  long *reps = xcalloc((size_t)n, sizeof *reps);
  for (long k = 0; k < n; k++) {
    long i = 0;
    while (i < nrep && !same_class(L, c, n, reps[i], k))
      i++;
    if (i == nrep)
      reps[nrep++] = k;
    rep_of[k] = reps[i];
  }
  free(reps);
  return nrep;
}

void symmetry_decide_experts(const struct graph_layout *L,
                             const struct cluster *c, bool every_flow,
                             bool every_task, struct symmetry *out)
{
  long per_stage = layout_ranks(L) / L->pp;
  if (!out->ep_across || !stages_ok(L, c, every_flow, every_task))
    return;
  /* Every node of a stage must see the others alike: a stage over two
   * leaf groups gives the nodes at the boundary other route latencies
   * than those inside, on the rings and the pipeline's neighbours (a
   * stage of 4 nodes over 2 leaf groups, PP 2: exposed communication
   * 3e-4 off; 8 nodes over 2 leaf groups without pipelines: compute
   * 4e-7 off; 3 nodes per leaf group and expert groups of 2 nodes: the
   * iteration 2e-5 off).  Stages are runs of consecutive nodes from a
   * multiple of their size (packed placement): they must divide the leaf
   * group. */
  if (c->nodes_per_leaf % (per_stage / c->gpus_per_node) != 0)
    return;
  struct layout_group grp;
  layout_group(L, GK_EP, 0, &grp);
  long ep_span = cluster_node_of(c, (int)layout_member(L, GK_EP, 0,
                                                        grp.n - 1)) + 1;
  /* Expert groups over more than two nodes with pipelines: the
   * all-to-all flows between two other nodes are not simulated, and
   * there the links they leave lighter carry those nodes' pipeline
   * transfers, which are not simulated either; a node of the group sees
   * other shares than in the full replay (16 experts, EP 16 over four
   * nodes, PP 2 interleaved on 128 H100: the iteration within 3.5e-6,
   * the mean overlapped communication 1 % off; EP 32 over eight nodes,
   * PP 2: 4e-8 and 18 %).  Over two nodes every all-to-all flow across
   * nodes leaves or enters the simulated node; without pipelines the
   * nodes of a group carry images of each other's flows alike.  Both
   * gave every metric to the last digit (tests/test_engine.c). */
  /* The quotient: every collective across nodes emits only the flows
   * out of the simulated node, each into its twin of the destination's
   * GPU (platload_twin): the flows into that node are the images of
   * these by the node shift that maps the group onto itself, and on the
   * fabric of symmetry_twins they cross the same links (the source's NIC
   * up, the destination's NIC down) with the same route latency, so the
   * simulated node's links carry what they carry in the full replay,
   * pipeline transfers and rings included, whatever the schedule. */
  /* The shift must map every group across nodes onto one: expert
   * groups over the whole stage (as data-parallel rings are), not
   * expert groups over some of its nodes, which a shift by one node
   * maps onto another group. */
  bool quot = symmetry_twins(c) &&
              ep_span == per_stage / c->gpus_per_node;
  if (ep_span > 2 && L->pp > 1 && !quot)
    return;
  out->fabric = true;
  out->replicas = true;
  out->stages = true;
  out->experts = true;
  out->quot = quot;
  out->quot_needed = ep_span > 2 && L->pp > 1;
}

bool symmetry_twins(const struct cluster *c)
{
  return c->topology == TOPO_FAT_TREE &&
         c->nics_per_node == c->gpus_per_node && c->oversub == 1 &&
         c->pod_oversub == 1 && c->ndown == 0 && c->last_node_gpus == 0 &&
         c->nodes_per_leaf >= 2 && c->nodes >= 2 &&
         c->gpus_per_node <= WEFT_MAX_TWINS && !topo_forwards(c);
}

int symmetry_thin(const struct symmetry *s, long tp,
                  struct platload_thinned **out, struct weft_err *err)
{
  if (!s->thin) {
    *out = NULL;
    return 0;
  }
  return platload_thin_node_shared(tp, out, err);
}

void symmetry_restore(struct platload_thinned *th)
{
  platload_thin_restore(th);
}
