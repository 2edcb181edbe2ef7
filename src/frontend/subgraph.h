/* Subgraphs of control-flow nodes: inference, inlining of resolved Ifs and
 * the links between a subgraph and the graph around it (subgraph.c,
 * inline_if.c; docs/control-flow.md). */
#ifndef KORCH_FRONTEND_SUBGRAPH_H
#define KORCH_FRONTEND_SUBGRAPH_H

#include <stdio.h>

#include "frontend/graph.h"

/* Infers a subgraph: formal[i] gives the dtype and shape of its input i
 * (and its value, borrowed as a constant, when data is set); node_inputs are the owning node's inputs as the operator
 * sees them (data set when constant), which bind the captures through
 * capture_slots. Captures whose outer value is constant become constants of
 * the subgraph (borrowed data), so the subgraph folds around them. */
korch_status korch_subgraph_infer(korch_graph *sub, const korch_tensor *formal, int n_formal,
                                  korch_tensor *const *node_inputs);

/* After node `ni` is inferred: its implicit inputs whose values are
 * constants are dropped (its subgraphs hold them as constants now), so an
 * opaque kernel only receives what changes at run time. */
korch_status korch_subgraph_drop_constant_captures(korch_graph *g, int ni);

/* Replaces If node `ni` by the nodes of the branch `then_branch` (true) or
 * `else_branch` (false), renaming values that would clash, with an Identity
 * per If output. The branch's nodes are appended (not yet inferred); the If
 * is marked dead. */
korch_status korch_graph_inline_if(korch_graph *g, int ni, bool then_branch);

/* A deep copy (subgraphs included; borrowed constants stay borrowed). */
korch_status korch_graph_clone(const korch_graph *g, korch_graph **out);

/* The GRAPH attribute `name` of a node, or NULL. */
korch_graph *korch_node_subgraph(const korch_node *n, const char *name);

/* Prints one note per control-flow node left in the (inferred) main graph:
 * what keeps it from being resolved, and that its subgraphs run in the
 * reference executor. Returns the number of such nodes. */
int korch_graph_report_control_flow(const korch_graph *g, FILE *f);

#endif
