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

/* A graph input specialized to a value (korch optimize --specialize
 * NAME=VALUE, and a plan's guard): inference treats it as that constant, so
 * Ifs on it resolve and shapes fold; the input stays a graph input, and the
 * value is recorded in korch_graph.specialized for the plan's guard
 * (docs/control-flow.md, "Guarded specialization"). One of `value` (its
 * dtype and shape must be the input's) or `literal` (one element, converted
 * to the input's dtype: "16000", "0.5", "true"). */
typedef struct korch_input_value {
    const char *name;
    const korch_tensor *value;
    const char *literal;
} korch_input_value;

/* The largest value an input may be specialized to: the plan stores it and
 * every run compares it, so it must stay small (a rate, a flag, a size). */
#define KORCH_SPECIALIZE_MAX_BYTES 256

/* Structure: every node's operator is supported at the model's opset, every
 * referenced tensor exists, each tensor has one producer, no cycles. */
korch_status korch_graph_validate(korch_graph *g);
/* contrib.c, called by validation: node `node`, when it is an ONNX Runtime
 * contrib operator korch computes (com.microsoft DynamicQuantizeLSTM, as an
 * LSTM of its dequantized weights), rewritten in place as standard ONNX;
 * any other node is left as it is. */
korch_status korch_graph_lower_contrib(korch_graph *g, int node);
/* ONNX Runtime's QOperator-format contrib operators (QLinearAdd, QGemm, ...)
 * as DequantizeLinear -> the standard operator -> QuantizeLinear;
 * *lowered says whether node was one (contrib_qlinear.c). */
korch_status korch_graph_lower_qlinear_contrib(korch_graph *g, int node, bool *lowered);

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

/* The input part of korch_graph_infer: binds every graph input's dtype and
 * shape (overrides first, else the model's declared shape). */
korch_status korch_graph_infer_bind(korch_graph *g, const korch_input_shape *overrides, int n_overrides);

/* korch_graph_infer with graph inputs specialized to values (specialize.c);
 * a value from a tensor also fixes the input's shape unless an override
 * does. Clear errors for an unknown name, a wrong dtype or shape, a literal
 * that does not parse, a value over KORCH_SPECIALIZE_MAX_BYTES. */
korch_status korch_graph_infer_specialized(korch_graph *g, const korch_input_shape *overrides, int n_overrides,
                                           const korch_input_value *values, int n_values);
korch_status korch_frontend_load_specialized(const char *path, const korch_input_shape *overrides, int n_overrides,
                                             const korch_input_value *values, int n_values, korch_graph **out);

/* A small tensor's values for messages: "16000", "[1, 2, 3]" (first 8). */
const char *korch_tensor_values_format(const korch_tensor *t, char *buf, size_t size);

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
/* The same with every run-time If kept whole (korch_graph.keep_run_time_ifs):
 * what the model computes without if-conversion, for the differential
 * tester. */
korch_status korch_frontend_load_keeping_ifs(const char *path, korch_graph **out);

/* Symbolic input shapes (symbolic.c). A value's declared shape is open
 * when it has a symbolic or unknown dimension, or no shape at all. */
bool korch_value_shape_open(const korch_value *v);
/* Graph inputs (without initializers) whose shape is open and not fixed by
 * an override: shape inference cannot run while this is above 0. */
int korch_graph_open_inputs(const korch_graph *g, const korch_input_shape *ov, int n_ov);
/* What shape inference checks of the graph inputs besides their shapes:
 * each has an element type korch supports (same errors). */
korch_status korch_graph_check_input_types(const korch_graph *g);
/* The declared shape with symbolic dimensions by name: "batchx3x?x640". */
const char *korch_value_declared_format(const korch_value *v, char *buf, size_t cap);

#endif
