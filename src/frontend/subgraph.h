/* Subgraphs of control-flow nodes: inference, inlining of resolved Ifs and
 * the links between a subgraph and the graph around it (subgraph.c,
 * inline_if.c; docs/control-flow.md). */
#ifndef KORCH_FRONTEND_SUBGRAPH_H
#define KORCH_FRONTEND_SUBGRAPH_H

#include <stdio.h>

#include "ir/graph.h"

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

/* Moves the live nodes of `sub` (a subgraph of node `owner` of g, or a copy
 * of one; its nodes lose their attributes) into g, named prefix/NAME. map
 * (sub->n_values entries) gives the g value for each sub value: entries
 * preset >= 0 are kept (bound inputs), captures map to the owner's inputs,
 * every other value gets a fresh g value (its own name, else name + hint,
 * else a numbered suffix) and constants move with it. */
korch_status korch_graph_inline_subgraph(korch_graph *g, int owner, korch_graph *sub, int *map, const char *prefix,
                                         const char *hint);
/* Appends `to = Identity(from)`, named if_name/output_k. */
korch_status korch_graph_add_identity(korch_graph *g, int from, int to, const char *if_name, int k);
/* Appends a constant value called `name` (or `name`__inlinedN when taken;
 * -1 when memory is short): numel(shape) elements of dtype copied from data. */
int korch_graph_add_constant(korch_graph *g, const char *name, korch_dtype dtype, const void *data, korch_shape shape);
/* Appends `out = op(in...)`, named `name`, in the default domain at the
 * graph's opset; attr (may be NULL) is moved into the node, or freed. */
korch_status korch_graph_append_node(korch_graph *g, const char *op, const char *name, const int *in, int n_in, int out,
                                     korch_attr *attr);

/* If-conversion (if_convert.c): a run-time If of the main graph, inferred,
 * whose branches are small and cannot fail at run time, is replaced by both
 * branches and a Where per output. *done says whether it was. */
korch_status korch_graph_if_convert(korch_graph *g, int ni, bool *done);
/* Why If node `ni` (inferred) is not if-converted, in buf; NULL when it
 * would be. */
const char *korch_graph_if_conversion_refusal(const korch_graph *g, int ni, char *buf, size_t len);

/* Unrolls Loop node `ni` when its trip count is a constant of at most
 * KORCH_LOOP_UNROLL_MAX and its condition provably stays true for that many
 * iterations (unroll_loop.c): the body is inlined once per iteration with
 * the iteration number as a constant. *done says whether it did. */
#define KORCH_LOOP_UNROLL_MAX 16
korch_status korch_graph_unroll_loop(korch_graph *g, int ni, bool *done);

/* Prints one note per control-flow node left in the (inferred) main graph:
 * what keeps it from being resolved, and that its subgraphs run in the
 * reference executor. Returns the number of such nodes. */
int korch_graph_report_control_flow(const korch_graph *g, FILE *f);

#endif
