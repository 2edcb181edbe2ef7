/* Concat: joins inputs along one axis; every other dim must match. */
#include <string.h>

#include "ops/layout.h"

static korch_status concat_axis(const korch_op_ctx *ctx, int *axis) {
    const korch_attr *a = korch_node_attr(ctx->node, "axis");
    /* Concat-1 defaulted to axis 1; from opset 4 the attribute is required */
    if (!a && ctx->node->opset >= 4) return korch_op_error(ctx, KORCH_ERR_INVALID_MODEL, "missing attribute \"axis\"");
    if (a && a->type != KORCH_ATTR_INT)
        return korch_op_error(ctx, KORCH_ERR_INVALID_MODEL, "attribute \"axis\" must be an int");
    int64_t raw = a ? a->i : 1;
    int rank = ctx->inputs[0]->shape.rank;
    *axis = korch_axis_normalize(raw, rank);
    if (*axis < 0)
        return korch_op_error(ctx, KORCH_ERR_INVALID_MODEL, "axis %lld is out of range for rank %d", (long long)raw,
                              rank);
    return KORCH_OK;
}

static korch_status infer_concat(korch_op_ctx *ctx) {
    for (int i = 0; i < ctx->n_inputs; i++) {
        if (!korch_op_has_input(ctx, i))
            return korch_op_error(ctx, KORCH_ERR_INVALID_MODEL, "input %d is empty; Concat inputs are not optional", i);
        KORCH_TRY(korch_layout_require_copyable(ctx, i));
    }
    int axis;
    KORCH_TRY(concat_axis(ctx, &axis));
    const korch_tensor *first = ctx->inputs[0];
    korch_shape out = first->shape;
    char a[96], b[96];
    for (int i = 1; i < ctx->n_inputs; i++) {
        const korch_tensor *t = ctx->inputs[i];
        if (t->dtype != first->dtype)
            return korch_op_error(ctx, KORCH_ERR_INVALID_MODEL, "input %d is %s but input 0 is %s", i,
                                  korch_dtype_name(t->dtype), korch_dtype_name(first->dtype));
        bool ok = t->shape.rank == first->shape.rank;
        for (int k = 0; ok && k < first->shape.rank; k++)
            if (k != axis && t->shape.dims[k] != first->shape.dims[k]) ok = false;
        if (!ok)
            return korch_op_error(ctx, KORCH_ERR_SHAPE, "input %d has shape %s, which does not match input 0 (%s) off axis %d",
                                  i, korch_shape_format(&t->shape, a, sizeof a),
                                  korch_shape_format(&first->shape, b, sizeof b), axis);
        if (korch_add_overflow_i64(out.dims[axis], t->shape.dims[axis], &out.dims[axis]) ||
            out.dims[axis] > KORCH_MAX_ELEMENTS)
            return korch_op_error(ctx, KORCH_ERR_SHAPE, "concatenated axis is too large");
    }
    korch_op_set_output(ctx, 0, first->dtype, &out);
    return KORCH_OK;
}

static korch_status run_concat(korch_op_ctx *ctx) {
    int axis;
    KORCH_TRY(concat_axis(ctx, &axis));
    korch_tensor *y = ctx->outputs[0];
    size_t esize = korch_dtype_size(y->dtype);
    int64_t outer = 1, inner = 1;
    for (int k = 0; k < axis; k++) outer *= y->shape.dims[k];
    for (int k = axis + 1; k < y->shape.rank; k++) inner *= y->shape.dims[k];
    size_t out_row = (size_t)(y->shape.dims[axis] * inner) * esize;
    if (out_row == 0) return KORCH_OK;
    char *dst = y->data;
    size_t at = 0; /* byte offset of the current input inside an output row */
    for (int i = 0; i < ctx->n_inputs; i++) {
        const korch_tensor *x = ctx->inputs[i];
        size_t in_row = (size_t)(x->shape.dims[axis] * inner) * esize;
        const char *src = x->data;
        if (in_row) {
#pragma omp parallel for schedule(static) if (outer > 1 && (int64_t)in_row * outer >= 131072)
            for (int64_t o = 0; o < outer; o++) memcpy(dst + (size_t)o * out_row + at, src + (size_t)o * in_row, in_row);
        }
        at += in_row;
    }
    return KORCH_OK;
}

const korch_op_def korch_op_def_Concat = {
    .kind = KORCH_OP_Concat, .op_type = "Concat", .opset_min = 1, .opset_max = 18,
    .min_inputs = 1, .max_inputs = 1 << 20, .min_outputs = 1, .max_outputs = 1,
    .infer = infer_concat, .run = run_concat, .flops = korch_layout_no_flops,
};
