/* Shared helpers of the control-flow operators (If, Loop, Scan). */
#ifndef KORCH_OPS_CONTROL_FLOW_H
#define KORCH_OPS_CONTROL_FLOW_H

#include "ops/op.h"

/* The subgraph attribute `name` of the node, or an error naming it. */
korch_status korch_control_subgraph(const korch_op_ctx *ctx, const char *name, korch_graph **out);

/* Infers subgraph `name` with formal input types `formal` through
 * ctx->infer_subgraph (the frontend's inference); errors name the node and
 * the attribute. */
korch_status korch_control_infer(const korch_op_ctx *ctx, korch_graph *sub, const char *name,
                                 const korch_tensor *formal, int n_formal);

/* Runs a subgraph on `inputs` in the reference executor (ops/reference.c),
 * binding its captures from the node's inputs, writing into `outputs`
 * (preallocated, sub->n_outputs of them). */
korch_status korch_control_run(const korch_op_ctx *ctx, const korch_graph *sub, const korch_tensor *inputs,
                               korch_tensor *outputs);

/* Number of ONNX inputs of the node (implicit inputs excluded). */
int korch_control_onnx_inputs(const korch_op_ctx *ctx);

/* The inferred type of subgraph output k. */
korch_tensor korch_control_output_type(const korch_graph *sub, int k);
/* A Loop body's iteration number (i = 0) or condition (1): a scalar, or
 * [1] where the body declares that (control_loop.c). */
korch_shape korch_loop_counter_shape(const korch_graph *body, int i);

/* Iteration reuse (control_reuse.c): a body folded iteration after
 * iteration keeps its previous folded copy; a node whose inputs are byte
 * for byte the previous iteration's takes its outputs from that copy
 * instead of running again. Zero-initialise; free with
 * korch_body_reuse_free. */
typedef struct korch_body_reuse {
    korch_graph *prev; /* the previous iteration's folded copy, or NULL */
    int *order;        /* the body's topological order */
    int n_order;
    bool *same; /* per body value, this iteration: unchanged since the last */
    int64_t reused; /* nodes not run again, over all iterations */
} korch_body_reuse;

/* Folds a fresh copy of `body` with inputs `in` (its formal inputs, all
 * with data), reusing the previous copy's nodes where every input is
 * unchanged. input_same[i]: body input i holds the same bytes as in the
 * previous call (ignored on the first). *folded is owned by `r` and valid
 * until the next call. */
korch_status korch_body_reuse_fold(korch_op_ctx *ctx, korch_body_reuse *r, const korch_graph *body,
                                   const korch_tensor *in, const bool *input_same, korch_graph **folded);
void korch_body_reuse_free(korch_body_reuse *r);

/* Same dtype, shape and bytes (both with data). */
bool korch_tensor_same_bytes(const korch_tensor *a, const korch_tensor *b);

#endif
