#include "ops/control_flow.h"

#include <stdlib.h>

#include "ops/reference.h"

korch_status korch_control_subgraph(const korch_op_ctx *ctx, const char *name, korch_graph **out) {
    *out = korch_node_subgraph(ctx->node, name);
    if (!*out) return korch_op_error(ctx, KORCH_ERR_INVALID_MODEL, "missing graph attribute \"%s\"", name);
    return KORCH_OK;
}

korch_status korch_control_infer(const korch_op_ctx *ctx, korch_graph *sub, const char *name,
                                 const korch_tensor *formal, int n_formal) {
    char nbuf[160];
    if (!ctx->infer_subgraph)
        return korch_op_error(ctx, KORCH_ERR_INTERNAL, "subgraph \"%s\": inferred outside graph inference", name);
    korch_status st = ctx->infer_subgraph(sub, formal, n_formal, ctx->inputs);
    if (st != KORCH_OK)
        return korch_error_prefix(st, "node \"%s\" (%s, opset %d), subgraph \"%s\"",
                                  korch_printable(ctx->node->name, nbuf, sizeof nbuf), ctx->node->op_type,
                                  ctx->node->opset, name);
    for (int k = 0; k < sub->n_outputs; k++)
        if (!sub->values[sub->outputs[k]].has_shape)
            return korch_op_error(ctx, KORCH_ERR_INTERNAL, "subgraph \"%s\": output %d has no shape", name, k);
    return KORCH_OK;
}

korch_status korch_control_run(const korch_op_ctx *ctx, const korch_graph *sub, const korch_tensor *inputs,
                               korch_tensor *outputs) {
    korch_tensor **caps = calloc((size_t)sub->n_captures + 1, sizeof *caps);
    if (!caps) return korch_error(KORCH_ERR_OUT_OF_MEMORY, "out of memory");
    for (int c = 0; c < sub->n_captures; c++) {
        int slot = sub->capture_slots[c];
        caps[c] = slot >= 0 && slot < ctx->n_inputs ? ctx->inputs[slot] : NULL;
    }
    korch_status st = korch_reference_run_subgraph(sub, inputs, caps, outputs);
    free(caps);
    char nbuf[160];
    if (st != KORCH_OK)
        st = korch_error_prefix(st, "node \"%s\" (%s), subgraph \"%s\"",
                                korch_printable(ctx->node->name, nbuf, sizeof nbuf), ctx->node->op_type,
                                sub->name && *sub->name ? sub->name : "(unnamed)");
    return st;
}

int korch_control_onnx_inputs(const korch_op_ctx *ctx) { return ctx->n_inputs - ctx->node->n_implicit_inputs; }

korch_tensor korch_control_output_type(const korch_graph *sub, int k) {
    const korch_value *v = &sub->values[sub->outputs[k]];
    return (korch_tensor){.dtype = v->dtype, .shape = v->shape};
}
