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

#endif
