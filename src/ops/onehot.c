/* OneHot (opset 9-11): out[..., j, ...] = values[1] where j equals the
 * index at that position (a negative index counts from depth), else
 * values[0]; an index outside [-depth, depth) hits no position. Non-integer
 * indices are truncated to int64, as the operator's spec says. paddle2onnx
 * writes it inside decoders' Loops (SLANet's table recognition). */
#include <math.h>
#include <string.h>

#include "ops/layout.h"

static bool onehot_index_ok(korch_dtype t) {
    return t == KORCH_DTYPE_FLOAT32 || t == KORCH_DTYPE_FLOAT64 || t == KORCH_DTYPE_INT8 || t == KORCH_DTYPE_UINT8 ||
           t == KORCH_DTYPE_INT16 || t == KORCH_DTYPE_UINT16 || t == KORCH_DTYPE_INT32 || t == KORCH_DTYPE_UINT32 ||
           t == KORCH_DTYPE_INT64 || t == KORCH_DTYPE_UINT64;
}

/* depth: one element of any numeric type, truncated to an integer. */
static korch_status onehot_depth(const korch_op_ctx *ctx, int64_t *depth) {
    const korch_tensor *d = ctx->inputs[1];
    if (korch_tensor_numel(d) != 1 || d->shape.rank > 1)
        return korch_op_error(ctx, KORCH_ERR_SHAPE, "depth must hold one value, has %lld",
                              (long long)korch_tensor_numel(d));
    double v = d->dtype == KORCH_DTYPE_FLOAT32 || d->dtype == KORCH_DTYPE_FLOAT64 ? korch_tensor_get_f64(d, 0)
                                                                                  : (double)korch_tensor_get_i64(d, 0);
    if (!(v >= 1) || v > (double)KORCH_MAX_ELEMENTS)
        return korch_op_error(ctx, KORCH_ERR_INVALID_MODEL, "depth %g is not a positive size", v);
    *depth = (int64_t)v;
    return KORCH_OK;
}

static int onehot_axis(const korch_op_ctx *ctx, int out_rank) {
    int64_t axis = korch_node_attr_int(ctx->node, "axis", -1);
    if (axis < -out_rank || axis >= out_rank) return -1;
    return (int)(axis < 0 ? axis + out_rank : axis);
}

static korch_status infer_onehot(korch_op_ctx *ctx) {
    KORCH_TRY(korch_op_require_constant(ctx, 1, "depth"));
    const korch_tensor *x = ctx->inputs[0], *values = ctx->inputs[2];
    if (!onehot_index_ok(x->dtype))
        return korch_op_error(ctx, KORCH_ERR_UNSUPPORTED, "indices of dtype %s", korch_dtype_name(x->dtype));
    if (korch_tensor_numel(values) != 2 || values->shape.rank != 1)
        return korch_op_error(ctx, KORCH_ERR_SHAPE, "values must be [off, on], a 1-D tensor of 2");
    if (korch_dtype_size(values->dtype) == 0 || values->dtype == KORCH_DTYPE_STRING)
        return korch_op_error(ctx, KORCH_ERR_UNSUPPORTED, "values of dtype %s", korch_dtype_name(values->dtype));
    if (x->shape.rank + 1 > KORCH_MAX_RANK)
        return korch_op_error(ctx, KORCH_ERR_SHAPE, "indices of rank %d: the output would exceed rank %d",
                              x->shape.rank, KORCH_MAX_RANK);
    int64_t depth = 0;
    KORCH_TRY(onehot_depth(ctx, &depth));
    int axis = onehot_axis(ctx, x->shape.rank + 1);
    if (axis < 0)
        return korch_op_error(ctx, KORCH_ERR_INVALID_MODEL, "axis %lld is outside [-%d, %d]",
                              (long long)korch_node_attr_int(ctx->node, "axis", -1), x->shape.rank + 1, x->shape.rank);
    korch_shape out = {.rank = x->shape.rank + 1};
    for (int k = 0, j = 0; k < out.rank; k++) out.dims[k] = k == axis ? depth : x->shape.dims[j++];
    if (korch_shape_numel(&out) > KORCH_MAX_ELEMENTS)
        return korch_op_error(ctx, KORCH_ERR_SHAPE, "the output would hold more than %lld elements",
                              (long long)KORCH_MAX_ELEMENTS);
    korch_op_set_output(ctx, 0, values->dtype, &out);
    return KORCH_OK;
}

static korch_status run_onehot(korch_op_ctx *ctx) {
    const korch_tensor *x = ctx->inputs[0], *values = ctx->inputs[2];
    korch_tensor *y = ctx->outputs[0];
    int64_t depth = 0;
    KORCH_TRY(onehot_depth(ctx, &depth));
    int axis = onehot_axis(ctx, y->shape.rank);
    int64_t outer = 1, inner = 1;
    for (int k = 0; k < axis; k++) outer *= y->shape.dims[k];
    for (int k = axis + 1; k < y->shape.rank; k++) inner *= y->shape.dims[k];
    size_t es = korch_dtype_size(y->dtype);
    const char *off = values->data, *on = (const char *)values->data + es;
    char *out = y->data;
    for (int64_t i = 0; i < korch_tensor_numel(y); i++) memcpy(out + (size_t)i * es, off, es);
    bool is_float = x->dtype == KORCH_DTYPE_FLOAT32 || x->dtype == KORCH_DTYPE_FLOAT64;
    for (int64_t o = 0; o < outer; o++)
        for (int64_t in = 0; in < inner; in++) {
            int64_t p = o * inner + in;
            double f = is_float ? korch_tensor_get_f64(x, p) : 0;
            if (is_float && !(fabs(f) < 9.2e18)) continue; /* NaN or beyond int64: no position */
            int64_t j = is_float ? (int64_t)f : korch_tensor_get_i64(x, p);
            if (j < -depth || j >= depth) continue;
            if (j < 0) j += depth;
            memcpy(out + (size_t)((o * depth + j) * inner + in) * es, on, es);
        }
    return KORCH_OK;
}

const korch_op_def korch_op_def_OneHot = {
    .kind = KORCH_OP_OneHot, .op_type = "OneHot", .opset_min = 9, .opset_max = 18,
    .min_inputs = 3, .max_inputs = 3, .min_outputs = 1, .max_outputs = 1,
    .infer = infer_onehot, .run = run_onehot, .flops = korch_layout_no_flops,
};
