/*
 * symmetry.h - which symmetric shortcuts a replay takes, and the thinning
 * of shared links that TP symmetry needs.
 *
 * The engine simulates fewer ranks and flows where the job and the fabric
 * are symmetric (README, "Fidelity: what the engine's shortcuts keep"):
 *   TP symmetry: TP groups fill whole nodes and every GPU has its own NIC;
 *     only TP rank 0 of each node is simulated.  Where the fabric's links
 *     are shared by a node's GPUs on their way out (oversubscribed tiers,
 *     dragonfly, torus), they carry 1/TP of their bandwidth for the replay
 *     (symmetry_thin): progressive filling raises the TP copies of every
 *     flow together, so such a link saturates at the same rates either
 *     way and max-min sharing is exact.
 *   the symmetric fabric: nodes wired alike, ratios of 1, a fabric whose
 *     entry is alike (platforms/topo.h), no PXN route, no pipeline, and
 *     every group that would cross other nodes' links inside nodes; rings
 *     then emit one node's flows (coll_model.sym_fabric).
 *   replica symmetry: on a symmetric fabric with data parallelism, only
 *     node 0's ranks are simulated.
 *   stage replica symmetry (symmetry_decide_stages): the same with
 *     pipelines; each stage's first node simulated.
 *   expert replica symmetry (opt-in, symmetry_decide_experts): the same
 *     with expert groups across nodes and with pipelines; each stage's
 *     first node simulated, all-to-alls as that node's flows.
 * symmetry_decide is a pure function of the job's layout, the cluster and
 * what the caller must observe; tests/test_symmetry.c holds its table.
 */
#ifndef WEFT_SYMMETRY_H
#define WEFT_SYMMETRY_H

#include <stdbool.h>

#include "platforms/cluster.h"
#include "sim/base/err.h"
#include "sim/graph/layout.h"

struct symmetry {
  bool tp;         /* TP symmetry: TP rank 0 of each node simulated */
  long rank_step;  /* 1, or TP under TP symmetry */
  bool thin;       /* TP symmetry on links a node's GPUs share: thin them */
  bool fabric;     /* rings may emit one node's flows (sym_fabric) */
  bool replicas;   /* replica symmetry: node 0's ranks simulated */
  bool ep_across;  /* expert groups span nodes */
  bool stages;     /* replicas with pipelines: each stage's first node
                      simulated (node 0's ranks and their pipeline
                      peers) */
  bool classes;    /* with stages: stages over several leaf groups, one
                      node per class of position simulated
                      (symmetry_stage_classes) */
  bool experts;    /* expert replica symmetry (symmetry_decide_experts):
                      replicas with expert groups across nodes, and
                      pipelines; expert all-to-alls emit the simulated
                      node's flows (coll_model.a2a_rep) */
  bool quot;       /* with experts: the quotient (symmetry_decide_experts):
                      collectives across nodes emit the flows out of the
                      simulated node only, into its twins
                      (coll_model.quot) */
  bool quot_needed; /* the job qualifies with the quotient only (expert
                       groups over more than two nodes, with pipelines):
                       where the engine refuses the quotient, no
                       shortcut */
};

/* Whether the platform of `c` gets twin hosts (sim/platload.h,
 * platload_twin) and the quotient may run on it: the non-blocking fat
 * tree (a NIC per GPU, ratios of 1, no link down, whole nodes), whose
 * route between two nodes of a leaf group is the source's NIC, one switch
 * and the destination's NIC (platforms/topo.c, tiered_route), and leaf
 * groups of two nodes or more. */
bool symmetry_twins(const struct cluster *c);

/* The shortcuts of a job of layout `L` (its ranks placed on `c` as
 * cluster_node_of says) into *out.  every_flow: the caller needs every
 * flow (forced flows, a flow callback, --every-rank): no shortcut at all.
 * every_task: it needs every rank's tasks (a task callback): no TP or
 * replica symmetry, though rings may still emit one node's flows. */
void symmetry_decide(const struct graph_layout *L, const struct cluster *c,
                     bool every_flow, bool every_task, struct symmetry *out);

/* Expert replica symmetry, after symmetry_decide (opt-in: the engine
 * asks for it when WEFT_EP_SYMMETRY=on); it sets out->stages too.
 * The quotient (out->quot), where symmetry_twins(c): the same nodes and
 * groups, stages inside one leaf group, any schedule (interleaved too)
 * and expert groups over any number of nodes of a stage; collectives
 * across nodes emit only the flows out of the simulated node, each into
 * the twin of its destination's GPU (README, "Fidelity"); the engine
 * still refuses jobs whose collectives across nodes are not rings or
 * all-to-alls (engine.c, quot_plans_ok).  Otherwise:  Where expert groups span nodes
 * (out->ep_across), replica symmetry is extended to them and to pipelines:
 * the nodes alike as for replica symmetry (a NIC per GPU, no
 * oversubscription, a fabric whose entry is alike, no PXN route), TP,
 * context and HSDP shard groups inside nodes, pipeline stages of whole
 * nodes (PP outermost in the rank order), data parallelism, stages
 * inside one leaf group each (packed placement), and with pipelines
 * expert groups over two nodes at most.  The ranks
 * simulated are those of each stage's first node (the ranks of node 0
 * and their pipeline peers); an expert all-to-all emits only the flows
 * that leave or enter its first node.  Sets out->fabric, out->replicas
 * and out->experts when the job qualifies; leaves *out as it was
 * otherwise. */
void symmetry_decide_experts(const struct graph_layout *L,
                             const struct cluster *c, bool every_flow,
                             bool every_task, struct symmetry *out);

/* Stage replica symmetry, after symmetry_decide (the engine always asks
 * for it): replica symmetry extended to dense jobs with pipelines.  The
 * nodes alike as for replica symmetry (a NIC per GPU, no
 * oversubscription, a fabric whose entry is alike, no PXN route), TP,
 * context and HSDP shard groups inside nodes (or TP filling them), no
 * expert groups across nodes (symmetry_decide_experts), PP outermost
 * with stages of two or more whole nodes, data parallelism, packed
 * placement, no interleaved schedule, and each stage inside one leaf
 * group (its nodes a divisor of the leaf group's) or, on a fat tree,
 * out->classes.  The ranks simulated are those of each stage's first
 * node (node 0's and their pipeline peers, whose transfers are all
 * simulated), or with out->classes of the first node of each class of
 * positions (symmetry_stage_classes); rings emit those nodes' flows
 * (coll.h, rep).  The engine refuses it still where an all-reduce across
 * nodes would run as trees.  Sets out->fabric, out->replicas,
 * out->stages and out->classes when the job qualifies; leaves *out as it
 * was otherwise.  Why the conditions: README, "Fidelity". */
void symmetry_decide_stages(const struct graph_layout *L,
                            const struct cluster *c, bool every_flow,
                            bool every_task, struct symmetry *out);

/* Under stage replica symmetry with out->classes: the node positions of
 * a stage (0 to n - 1, n its nodes) whose route latencies to their ring
 * neighbours (positions k - 1 and k + 1 mod n) and their pipeline peers
 * (position k of the next stage) are the same in every stage fall in one
 * class.  rep_of[k] (n entries, the caller's) receives the first
 * position of k's class.  Returns the number of classes. */
long symmetry_stage_classes(const struct graph_layout *L,
                            const struct cluster *c, long *rep_of);

/* Links thinned for a replay, to restore afterwards (sim/platload.h). */
struct platload_thinned;

/* Where s->thin: divide by TP (`tp`) the bandwidth of the links a node's
 * GPUs share on their way out, on the platform platload_cluster built;
 * else nothing (*out NULL).  *out receives what to restore, owned by the
 * caller until symmetry_restore.  Returns 0, or WEFT_EINVAL when the
 * platform was not built by platload_cluster (its fabric is unknown);
 * *out is untouched then. */
int symmetry_thin(const struct symmetry *s, long tp,
                  struct platload_thinned **out, struct weft_err *err)
    WEFT_WUR;

/* Give the thinned links their bandwidths back and free `th` (NULL: no
 * effect). */
void symmetry_restore(struct platload_thinned *th);

#endif
