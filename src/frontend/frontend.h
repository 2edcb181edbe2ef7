/* The frontend stage: load, validate, infer shapes and fold constants.
 * The result is an op graph with every live value's dtype and static shape
 * known, and every constant-only subgraph folded away. */
#ifndef KORCH_FRONTEND_FRONTEND_H
#define KORCH_FRONTEND_FRONTEND_H

#include "ir/graph.h"

/* A user-supplied shape for a graph input (--input-shape NAME=1x3x224x224). */
typedef struct korch_input_shape {
    const char *name;
    korch_shape shape;
} korch_input_shape;

/* Structure: every node's operator is supported at the model's opset, every
 * referenced tensor exists, each tensor has one producer, no cycles. */
korch_status korch_graph_validate(korch_graph *g);

/* Constant folding leaves a node alone when its outputs would take more
 * than KORCH_FOLD_MAX_BYTES, or when the graph has already folded
 * KORCH_FOLD_TOTAL_BYTES: a huge folded constant costs memory for little
 * speed, and the shapes of a hostile model must not make inference allocate
 * (an unfolded node just runs with the model). */
#define KORCH_FOLD_MAX_BYTES ((size_t)64 << 20)
#define KORCH_FOLD_TOTAL_BYTES ((size_t)1 << 30)

/* float16 / bfloat16 models: the graph rewritten so that everything but its
 * edges and its Casts computes in float32 (widen_half.c,
 * docs/precision.md). Idempotent; korch_graph_infer runs it first. */
korch_status korch_graph_widen_half(korch_graph *g);

/* Shapes and dtypes for every value, with constant folding. Fails on
 * symbolic input dimensions that no override fixes. */
korch_status korch_graph_infer(korch_graph *g, const korch_input_shape *overrides, int n_overrides);

/* The node part of korch_graph_infer, for a graph whose inputs are bound
 * (also subgraphs): infers every node in order, folds constants and
 * resolves Ifs whose condition is constant and unrolls short Loops
 * (docs/control-flow.md). */
korch_status korch_graph_infer_nodes(korch_graph *g);

/* Parses "a=1x3x224x224;b=1x128" (also ',' between dims). Names point into
 * `text`, which the caller keeps alive and which is modified in place. */
korch_status korch_input_shapes_parse(char *text, korch_input_shape *out, int cap, int *count);

/* Load + validate + infer in one call. */
korch_status korch_frontend_load(const char *path, const korch_input_shape *overrides, int n_overrides,
                                 korch_graph **out);

#endif
