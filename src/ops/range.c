/* Range and ConstantOfShape: generators whose output shape is given by the
 * values of constant inputs. */
#include <math.h>
#include <string.h>

#include "ops/layout.h"

static bool range_dtype_ok(korch_dtype t) {
    return t == KORCH_DTYPE_FLOAT32 || t == KORCH_DTYPE_FLOAT64 || t == KORCH_DTYPE_INT16 ||
           t == KORCH_DTYPE_INT32 || t == KORCH_DTYPE_INT64;
}

/* Number of elements ceil((limit - start) / delta), at least 0. Integers are
 * handled in unsigned arithmetic so extreme values cannot overflow. */
static korch_status range_count(const korch_op_ctx *ctx, int64_t *count) {
    const korch_tensor *s = ctx->inputs[0], *l = ctx->inputs[1], *d = ctx->inputs[2];
    if (s->dtype == KORCH_DTYPE_FLOAT32 || s->dtype == KORCH_DTYPE_FLOAT64) {
        double start = korch_tensor_get_f64(s, 0), limit = korch_tensor_get_f64(l, 0), delta = korch_tensor_get_f64(d, 0);
        if (delta == 0.0) return korch_op_error(ctx, KORCH_ERR_INVALID_MODEL, "delta is 0");
        double n = ceil((limit - start) / delta);
        if (isnan(n))
            return korch_op_error(ctx, KORCH_ERR_INVALID_MODEL, "range from %g to %g by %g has no length", start, limit,
                                  delta);
        if (n > (double)KORCH_MAX_ELEMENTS)
            return korch_op_error(ctx, KORCH_ERR_SHAPE, "range from %g to %g by %g is too long", start, limit, delta);
        *count = n > 0 ? (int64_t)n : 0;
        return KORCH_OK;
    }
    int64_t start = korch_tensor_get_i64(s, 0), limit = korch_tensor_get_i64(l, 0), delta = korch_tensor_get_i64(d, 0);
    if (delta == 0) return korch_op_error(ctx, KORCH_ERR_INVALID_MODEL, "delta is 0");
    if ((delta > 0 && limit <= start) || (delta < 0 && limit >= start)) {
        *count = 0;
        return KORCH_OK;
    }
    uint64_t span = delta > 0 ? (uint64_t)limit - (uint64_t)start : (uint64_t)start - (uint64_t)limit;
    uint64_t step = delta > 0 ? (uint64_t)delta : 0 - (uint64_t)delta;
    uint64_t n = span / step + (span % step != 0);
    if (n > (uint64_t)KORCH_MAX_ELEMENTS)
        return korch_op_error(ctx, KORCH_ERR_SHAPE, "range from %lld to %lld by %lld is too long", (long long)start,
                              (long long)limit, (long long)delta);
    *count = (int64_t)n;
    return KORCH_OK;
}

static korch_status infer_range(korch_op_ctx *ctx) {
    static const char *const roles[3] = {"start", "limit", "delta"};
    for (int i = 0; i < 3; i++) {
        KORCH_TRY(korch_op_require_constant(ctx, i, roles[i]));
        const korch_tensor *t = ctx->inputs[i];
        if (t->dtype != ctx->inputs[0]->dtype)
            return korch_op_error(ctx, KORCH_ERR_INVALID_MODEL, "%s is %s but start is %s", roles[i],
                                  korch_dtype_name(t->dtype), korch_dtype_name(ctx->inputs[0]->dtype));
        if (korch_shape_numel(&t->shape) != 1 || t->shape.rank > 1)
            return korch_op_error(ctx, KORCH_ERR_SHAPE, "%s must be a scalar", roles[i]);
    }
    if (!range_dtype_ok(ctx->inputs[0]->dtype))
        return korch_op_error(ctx, KORCH_ERR_UNSUPPORTED, "dtype %s is not supported",
                              korch_dtype_name(ctx->inputs[0]->dtype));
    int64_t n = 0;
    KORCH_TRY(range_count(ctx, &n));
    korch_shape out = {.rank = 1, .dims = {n}};
    korch_op_set_output(ctx, 0, ctx->inputs[0]->dtype, &out);
    return KORCH_OK;
}

static korch_status run_range(korch_op_ctx *ctx) {
    korch_tensor *y = ctx->outputs[0];
    int64_t n = korch_tensor_numel(y);
    const korch_tensor *s = ctx->inputs[0], *d = ctx->inputs[2];
    switch (y->dtype) {
    case KORCH_DTYPE_FLOAT32: {
        /* accumulate, as the ONNX function body (a Loop adding delta) does */
        float v = *(const float *)s->data, delta = *(const float *)d->data;
        for (int64_t i = 0; i < n; i++, v += delta) ((float *)y->data)[i] = v;
        break;
    }
    case KORCH_DTYPE_FLOAT64: {
        double v = *(const double *)s->data, delta = *(const double *)d->data;
        for (int64_t i = 0; i < n; i++, v += delta) ((double *)y->data)[i] = v;
        break;
    }
    default: {
        /* every value lies between start and limit; unsigned wrap-around only
         * keeps the arithmetic defined */
        uint64_t start = (uint64_t)korch_tensor_get_i64(s, 0), delta = (uint64_t)korch_tensor_get_i64(d, 0);
        for (int64_t i = 0; i < n; i++) {
            int64_t v = (int64_t)(start + (uint64_t)i * delta);
            if (y->dtype == KORCH_DTYPE_INT64) ((int64_t *)y->data)[i] = v;
            else if (y->dtype == KORCH_DTYPE_INT32) ((int32_t *)y->data)[i] = (int32_t)v;
            else ((int16_t *)y->data)[i] = (int16_t)v;
        }
        break;
    }
    }
    return KORCH_OK;
}

const korch_op_def korch_op_def_Range = {
    .kind = KORCH_OP_Range, .op_type = "Range", .opset_min = 11, .opset_max = 18,
    .min_inputs = 3, .max_inputs = 3, .min_outputs = 1, .max_outputs = 1,
    .infer = infer_range, .run = run_range, .flops = korch_layout_no_flops,
};

/* The fill value: the one-element 'value' tensor, float32 0 by default. */
static korch_status fill_tensor(const korch_op_ctx *ctx, const korch_tensor **value) {
    const korch_attr *a = korch_node_attr(ctx->node, "value");
    *value = NULL;
    if (!a) return KORCH_OK;
    if (a->type != KORCH_ATTR_TENSOR || !a->tensor)
        return korch_op_error(ctx, KORCH_ERR_INVALID_MODEL, "attribute \"value\" must be a tensor");
    if (korch_shape_numel(&a->tensor->shape) != 1)
        return korch_op_error(ctx, KORCH_ERR_INVALID_MODEL, "attribute \"value\" must hold exactly one element");
    if (korch_dtype_size(a->tensor->dtype) == 0 || a->tensor->dtype == KORCH_DTYPE_STRING)
        return korch_op_error(ctx, KORCH_ERR_UNSUPPORTED, "value dtype %s is not supported",
                              korch_dtype_name(a->tensor->dtype));
    *value = a->tensor;
    return KORCH_OK;
}

static korch_status infer_constant_of_shape(korch_op_ctx *ctx) {
    const korch_tensor *value;
    KORCH_TRY(fill_tensor(ctx, &value));
    const korch_tensor *shape = ctx->inputs[0];
    if (shape->shape.rank != 1)
        return korch_op_error(ctx, KORCH_ERR_SHAPE, "the shape input must be 1-D, has rank %d", shape->shape.rank);
    int64_t dims[KORCH_MAX_RANK];
    int count = 0;
    KORCH_TRY(korch_op_read_ints(ctx, 0, "shape", dims, KORCH_MAX_RANK, &count));
    korch_shape out = {.rank = count};
    for (int k = 0; k < count; k++) {
        if (dims[k] < 0)
            return korch_op_error(ctx, KORCH_ERR_INVALID_MODEL, "shape entry %d is %lld", k, (long long)dims[k]);
        out.dims[k] = dims[k];
    }
    korch_op_set_output(ctx, 0, value ? value->dtype : KORCH_DTYPE_FLOAT32, &out);
    return KORCH_OK;
}

static korch_status run_constant_of_shape(korch_op_ctx *ctx) {
    const korch_tensor *value;
    KORCH_TRY(fill_tensor(ctx, &value));
    korch_tensor *y = ctx->outputs[0];
    if (!value) {
        memset(y->data, 0, korch_tensor_bytes(y)); /* float32 zeros: all-zero bytes */
        return KORCH_OK;
    }
    size_t esize = korch_dtype_size(y->dtype);
    int64_t n = korch_tensor_numel(y);
    char *dst = y->data;
    for (int64_t i = 0; i < n; i++) memcpy(dst + (size_t)i * esize, value->data, esize);
    return KORCH_OK;
}

const korch_op_def korch_op_def_ConstantOfShape = {
    .kind = KORCH_OP_ConstantOfShape, .op_type = "ConstantOfShape", .opset_min = 9, .opset_max = 18,
    .min_inputs = 1, .max_inputs = 1, .min_outputs = 1, .max_outputs = 1,
    .infer = infer_constant_of_shape, .run = run_constant_of_shape, .flops = korch_layout_no_flops,
};
