/* Squeeze, Unsqueeze and Flatten: shape-only changes of a dense tensor, so
 * the kernel is a copy and all the work is validating the new shape. */
#include "ops/layout.h"

/* Axes moved from an attribute to an optional input at opset 13. */
static korch_status read_axes(const korch_op_ctx *ctx, int64_t *axes, int *count, bool *present) {
    return korch_layout_read_list(ctx, ctx->node->opset >= 13, 1, "axes", axes, KORCH_MAX_RANK, count, present);
}

static korch_status infer_squeeze(korch_op_ctx *ctx) {
    KORCH_TRY(korch_layout_require_copyable(ctx, 0));
    const korch_shape *in = &ctx->inputs[0]->shape;
    int64_t axes[KORCH_MAX_RANK];
    int count = 0;
    bool present = false;
    KORCH_TRY(read_axes(ctx, axes, &count, &present));
    KORCH_TRY(korch_layout_normalize_axes(ctx, axes, count, in->rank));
    bool drop[KORCH_MAX_RANK] = {false};
    if (!present) {
        for (int k = 0; k < in->rank; k++) drop[k] = in->dims[k] == 1;
    }
    for (int k = 0; k < count; k++) {
        if (in->dims[axes[k]] != 1)
            return korch_op_error(ctx, KORCH_ERR_SHAPE, "cannot squeeze axis %lld of size %lld", (long long)axes[k],
                                  (long long)in->dims[axes[k]]);
        drop[axes[k]] = true;
    }
    korch_shape out = {.rank = 0};
    for (int k = 0; k < in->rank; k++)
        if (!drop[k]) out.dims[out.rank++] = in->dims[k];
    korch_op_set_output(ctx, 0, ctx->inputs[0]->dtype, &out);
    return KORCH_OK;
}

const korch_op_def korch_op_def_Squeeze = {
    .kind = KORCH_OP_Squeeze, .op_type = "Squeeze", .opset_min = 1, .opset_max = 18,
    .min_inputs = 1, .max_inputs = 2, .min_outputs = 1, .max_outputs = 1,
    .infer = infer_squeeze, .run = korch_layout_run_copy, .flops = korch_layout_no_flops,
};

static korch_status infer_unsqueeze(korch_op_ctx *ctx) {
    KORCH_TRY(korch_layout_require_copyable(ctx, 0));
    const korch_shape *in = &ctx->inputs[0]->shape;
    int64_t axes[KORCH_MAX_RANK];
    int count = 0;
    bool present = false;
    KORCH_TRY(read_axes(ctx, axes, &count, &present));
    if (!present) return korch_op_error(ctx, KORCH_ERR_INVALID_MODEL, "missing axes");
    int rank = in->rank + count;
    if (rank > KORCH_MAX_RANK)
        return korch_op_error(ctx, KORCH_ERR_UNSUPPORTED, "output rank %d exceeds the maximum %d", rank, KORCH_MAX_RANK);
    /* axes index the output, so they are normalised against its rank */
    KORCH_TRY(korch_layout_normalize_axes(ctx, axes, count, rank));
    bool inserted[KORCH_MAX_RANK] = {false};
    for (int k = 0; k < count; k++) inserted[axes[k]] = true;
    korch_shape out = {.rank = rank};
    for (int k = 0, src = 0; k < rank; k++) out.dims[k] = inserted[k] ? 1 : in->dims[src++];
    korch_op_set_output(ctx, 0, ctx->inputs[0]->dtype, &out);
    return KORCH_OK;
}

const korch_op_def korch_op_def_Unsqueeze = {
    .kind = KORCH_OP_Unsqueeze, .op_type = "Unsqueeze", .opset_min = 1, .opset_max = 18,
    .min_inputs = 1, .max_inputs = 2, .min_outputs = 1, .max_outputs = 1,
    .infer = infer_unsqueeze, .run = korch_layout_run_copy, .flops = korch_layout_no_flops,
};

static korch_status infer_flatten(korch_op_ctx *ctx) {
    KORCH_TRY(korch_layout_require_copyable(ctx, 0));
    const korch_shape *in = &ctx->inputs[0]->shape;
    int64_t axis = korch_node_attr_int(ctx->node, "axis", 1);
    /* negative axes arrived at opset 11; the range is [-rank, rank] */
    int64_t lo = ctx->node->opset >= 11 ? -in->rank : 0;
    if (axis < lo || axis > in->rank)
        return korch_op_error(ctx, KORCH_ERR_INVALID_MODEL, "axis %lld is out of range [%lld, %d]", (long long)axis,
                              (long long)lo, in->rank);
    if (axis < 0) axis += in->rank;
    korch_shape out = {.rank = 2, .dims = {1, 1}};
    for (int k = 0; k < in->rank; k++) {
        int64_t *d = &out.dims[k < axis ? 0 : 1];
        /* only reachable with a zero dim elsewhere, but never overflow */
        if (korch_mul_overflow_i64(*d, in->dims[k], d) || *d > KORCH_MAX_ELEMENTS)
            return korch_op_error(ctx, KORCH_ERR_SHAPE, "flattened dimension is too large");
    }
    korch_op_set_output(ctx, 0, ctx->inputs[0]->dtype, &out);
    return KORCH_OK;
}

const korch_op_def korch_op_def_Flatten = {
    .kind = KORCH_OP_Flatten, .op_type = "Flatten", .opset_min = 1, .opset_max = 18,
    .min_inputs = 1, .max_inputs = 1, .min_outputs = 1, .max_outputs = 1,
    .infer = infer_flatten, .run = korch_layout_run_copy, .flops = korch_layout_no_flops,
};
