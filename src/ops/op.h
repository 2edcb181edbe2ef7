/* The op table: one row per ONNX operator with its shape function and its
 * reference kernel. Adding an operator means adding an X() entry to
 * ops/op_list.h and defining its korch_op_def row. */
#ifndef KORCH_OPS_OP_H
#define KORCH_OPS_OP_H

#include "ir/graph.h"
#include "ops/op_list.h"

typedef enum korch_op_kind {
#define KORCH_OP_ENUM_ENTRY(name) KORCH_OP_##name,
    KORCH_OP_LIST(KORCH_OP_ENUM_ENTRY)
#undef KORCH_OP_ENUM_ENTRY
    KORCH_OP_COUNT
} korch_op_kind;

/* Infers a control-flow subgraph (korch_op_ctx.infer_subgraph). */
typedef korch_status (*korch_subgraph_infer_fn)(korch_graph *sub, const korch_tensor *formal, int n_formal,
                                                korch_tensor *const *node_inputs);

/* What an op function sees of its node. During shape inference, inputs carry
 * dtype and shape, and `data` only for constants (NULL otherwise). During a
 * run, every present input has data and outputs are allocated from the
 * inferred shapes. Omitted optional inputs/outputs are NULL. */
typedef struct korch_op_ctx {
    const korch_graph *graph;
    const korch_node *node;
    int n_inputs;
    korch_tensor **inputs;
    int n_outputs;
    korch_tensor **outputs;
    /* During shape inference only: infers a control-flow node's subgraph
     * (If/Loop/Scan). Graph inference (inlining constant Ifs, unrolling
     * Loops, folding) is the frontend's, a later layer than ops/, so the
     * frontend hands its korch_subgraph_infer in here when it calls an infer
     * function. NULL elsewhere; control flow then reports an internal error. */
    korch_subgraph_infer_fn infer_subgraph;
} korch_op_ctx;

typedef korch_status (*korch_op_infer_fn)(korch_op_ctx *ctx);
typedef korch_status (*korch_op_run_fn)(korch_op_ctx *ctx);

typedef struct korch_op_def {
    korch_op_kind kind;
    const char *op_type;
    int opset_min, opset_max; /* default-domain opset versions this row implements */
    int min_inputs, max_inputs;
    int min_outputs, max_outputs;
    /* Sets each present output's dtype and shape. May also fill an output's
     * data (owned) when it is known without running, e.g. Shape. */
    korch_op_infer_fn infer;
    /* Reference kernel: plain, obviously correct C. Outputs are preallocated. */
    korch_op_run_fn run;
    /* Floating-point operations of one run, from shapes (as in inference).
     * NULL: one per output element. Multiply-add counts as two. */
    int64_t (*flops)(const korch_op_ctx *ctx);
} korch_op_def;

#define KORCH_OP_DECLARE(name) extern const korch_op_def korch_op_def_##name;
KORCH_OP_LIST(KORCH_OP_DECLARE)
#undef KORCH_OP_DECLARE

extern const korch_op_def *const korch_op_table[KORCH_OP_COUNT];

/* Lowest and highest default-domain opset korch accepts for a model. */
#define KORCH_OPSET_MIN 1
#define KORCH_OPSET_MAX 18

/* Finds the row for op_type; NULL when unsupported. */
const korch_op_def *korch_op_find(const char *op_type);

/* ---- helpers for op implementations ---------------------------------- */

/* Records an error prefixed with the node: node "x" (Conv, opset 11): ... */
korch_status korch_op_error(const korch_op_ctx *ctx, korch_status status, const char *fmt, ...) KORCH_PRINTF(3, 4);
/* Name of input/output i for messages ("" when omitted). */
const char *korch_op_input_name(const korch_op_ctx *ctx, int i);
/* Input i must be present and constant (e.g. a Reshape shape); `role` names it. */
korch_status korch_op_require_constant(const korch_op_ctx *ctx, int i, const char *role);
/* The words of every refusal (KORCH_ERR_UNSUPPORTED) of an operand that
 * decides a shape and is known only at run time: a Loop whose body says them
 * is inferred again at every iteration instead (ops/control_loop.c). */
#define KORCH_OP_NEEDS_CONSTANT "is not a constant; korch needs static shapes"
/* Copies a value computed by an op that also computes it at inference
 * (Constant, Shape, EyeLike) into the preallocated output 0, and frees it. */
korch_status korch_op_store_output(korch_op_ctx *ctx, korch_tensor *value);
/* String attribute `attr` (default dflt) as its index in names[count];
 * another value is an error of `status` naming it. */
korch_status korch_op_attr_choice(const korch_op_ctx *ctx, const char *attr, const char *dflt,
                                  const char *const *names, int count, int *out, korch_status status);
/* Input i's dtype must be `dtype`. */
korch_status korch_op_require_dtype(const korch_op_ctx *ctx, int i, korch_dtype dtype);
/* Sets output i's dtype and shape (no-op when that output is omitted). */
void korch_op_set_output(korch_op_ctx *ctx, int i, korch_dtype dtype, const korch_shape *shape);
/* Reads an integer list from a constant input (int64/int32): *count elements
 * into out (capacity cap). */
korch_status korch_op_read_ints(const korch_op_ctx *ctx, int i, const char *role, int64_t *out, int cap, int *count);
bool korch_op_has_input(const korch_op_ctx *ctx, int i);

#endif
