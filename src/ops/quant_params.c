/* Reading and checking the scale / zero-point operands of the quantization
 * operators (quant.h). */
#include "ops/quant.h"

bool korch_quant_is_int8(korch_dtype dtype) { return dtype == KORCH_DTYPE_UINT8 || dtype == KORCH_DTYPE_INT8; }

int32_t korch_quant_min(korch_dtype dtype) {
    switch (dtype) {
    case KORCH_DTYPE_UINT8: return 0;
    case KORCH_DTYPE_INT8: return -128;
    default: return INT32_MIN;
    }
}

int32_t korch_quant_max(korch_dtype dtype) {
    switch (dtype) {
    case KORCH_DTYPE_UINT8: return 255;
    case KORCH_DTYPE_INT8: return 127;
    default: return INT32_MAX;
    }
}

korch_status korch_quant_require_int8(const korch_op_ctx *ctx, int i, const char *role) {
    char name[160];
    if (!korch_op_has_input(ctx, i)) return korch_op_error(ctx, KORCH_ERR_INVALID_MODEL, "missing %s input", role);
    korch_dtype d = ctx->inputs[i]->dtype;
    if (!korch_quant_is_int8(d))
        return korch_op_error(ctx, KORCH_ERR_UNSUPPORTED, "%s input \"%s\" has dtype %s; korch supports uint8 and int8",
                              role, korch_printable(korch_op_input_name(ctx, i), name, sizeof name),
                              korch_dtype_name(d));
    return KORCH_OK;
}

korch_status korch_quant_require_same_dtype(const korch_op_ctx *ctx, int i, int j, const char *role) {
    char name[160];
    if (!korch_op_has_input(ctx, i)) return KORCH_OK;
    if (ctx->inputs[i]->dtype != ctx->inputs[j]->dtype)
        return korch_op_error(ctx, KORCH_ERR_INVALID_MODEL, "%s input \"%s\" has dtype %s, expected %s", role,
                              korch_printable(korch_op_input_name(ctx, i), name, sizeof name),
                              korch_dtype_name(ctx->inputs[i]->dtype), korch_dtype_name(ctx->inputs[j]->dtype));
    return KORCH_OK;
}

korch_status korch_quant_require_scalar(const korch_op_ctx *ctx, int i, const char *role) {
    char name[160], s[96];
    if (!korch_op_has_input(ctx, i)) return KORCH_OK;
    const korch_shape *shape = &ctx->inputs[i]->shape;
    if (shape->rank > 1 || korch_shape_numel(shape) != 1)
        return korch_op_error(ctx, KORCH_ERR_UNSUPPORTED,
                              "%s input \"%s\" has shape %s; korch supports a scalar (per-tensor) %s here", role,
                              korch_printable(korch_op_input_name(ctx, i), name, sizeof name),
                              korch_shape_format(shape, s, sizeof s), role);
    return KORCH_OK;
}

korch_status korch_quant_layout_read(const korch_op_ctx *ctx, int x_i, int scale_i, int zp_i,
                                     korch_quant_layout *out) {
    const korch_shape *x = &ctx->inputs[x_i]->shape, *scale = &ctx->inputs[scale_i]->shape;
    char name[160], xs[96], ss[96], zs[96];
    const char *scale_name = korch_printable(korch_op_input_name(ctx, scale_i), name, sizeof name);
    *out = (korch_quant_layout){.mode = KORCH_QUANT_PER_TENSOR, .outer = 1, .dim = 1, .inner = 1, .block = 1,
                                .blocks = 1};
    KORCH_TRY(korch_op_require_dtype(ctx, scale_i, KORCH_DTYPE_FLOAT32));
    /* Equal shapes, or both one element: quantize_static writes a bias's
     * scale as [1] and its zero point as a scalar. */
    const korch_shape *zps = korch_op_has_input(ctx, zp_i) ? &ctx->inputs[zp_i]->shape : NULL;
    if (zps && !korch_shape_equal(zps, scale) &&
        !(korch_shape_numel(zps) == 1 && korch_shape_numel(scale) == 1 && zps->rank <= 1 && scale->rank <= 1))
        return korch_op_error(ctx, KORCH_ERR_SHAPE, "zero point has shape %s but scale \"%s\" has shape %s",
                              korch_shape_format(&ctx->inputs[zp_i]->shape, zs, sizeof zs), scale_name,
                              korch_shape_format(scale, ss, sizeof ss));
    int64_t block = korch_node_attr_int(ctx->node, "block_size", 0);
    if (block < 0) return korch_op_error(ctx, KORCH_ERR_INVALID_MODEL, "block_size %lld is negative", (long long)block);
    if (block == 0 && (scale->rank == 0 || (scale->rank == 1 && scale->dims[0] == 1))) return KORCH_OK;
    int64_t axis_attr = korch_node_attr_int(ctx->node, "axis", 1);
    int axis = korch_axis_normalize(axis_attr, x->rank);
    if (axis < 0)
        return korch_op_error(ctx, KORCH_ERR_INVALID_MODEL, "axis %lld is out of range for x of shape %s",
                              (long long)axis_attr, korch_shape_format(x, xs, sizeof xs));
    out->axis = axis;
    out->dim = x->dims[axis];
    for (int d = 0; d < axis; d++) out->outer *= x->dims[d];
    for (int d = axis + 1; d < x->rank; d++) out->inner *= x->dims[d];
    if (block == 0) {
        if (ctx->node->opset < 13)
            return korch_op_error(ctx, KORCH_ERR_INVALID_MODEL,
                                  "scale \"%s\" has shape %s; before opset 13 the scale must be a scalar", scale_name,
                                  korch_shape_format(scale, ss, sizeof ss));
        if (scale->rank != 1 || scale->dims[0] != out->dim)
            return korch_op_error(ctx, KORCH_ERR_SHAPE,
                                  "scale \"%s\" has shape %s; per-axis quantization along axis %d of x %s needs "
                                  "a 1-D scale of %lld values",
                                  scale_name, korch_shape_format(scale, ss, sizeof ss), axis,
                                  korch_shape_format(x, xs, sizeof xs), (long long)out->dim);
        out->mode = KORCH_QUANT_PER_AXIS;
        return KORCH_OK;
    }
    /* Blocked: the scale has x's shape with ceil(dim / block) along the axis. */
    out->mode = KORCH_QUANT_BLOCKED;
    out->block = block;
    out->blocks = out->dim == 0 ? 0 : (out->dim - 1) / block + 1;
    bool fits = scale->rank == x->rank;
    for (int d = 0; fits && d < x->rank; d++) fits = scale->dims[d] == (d == axis ? out->blocks : x->dims[d]);
    if (!fits)
        return korch_op_error(ctx, KORCH_ERR_SHAPE,
                              "scale \"%s\" has shape %s; blocked quantization (block_size %lld along axis %d) of x "
                              "%s needs x's shape with %lld along the axis",
                              scale_name, korch_shape_format(scale, ss, sizeof ss), (long long)block, axis,
                              korch_shape_format(x, xs, sizeof xs), (long long)out->blocks);
    return KORCH_OK;
}
