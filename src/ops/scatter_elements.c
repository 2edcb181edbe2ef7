/* ScatterElements (opset 11-18; Scatter, its opset 9-10 name, is the same
 * operator without `reduction`):
 * a copy of `data` in which, for every position p of `indices`, the element
 * at p with p[axis] replaced by indices[p] becomes updates[p] (or is
 * combined with it: reduction add, mul, max, min). Negative indices count
 * from the end; an index out of range is a run-time error (it is data).
 * paddle2onnx writes it for `t[:, i] = v` inside decoder Loops (SLANet).
 * With duplicate indices and no reduction the last update wins, as ONNX
 * Runtime does (the spec leaves the order open). */
#include <string.h>

#include "ops/layout.h"
#include "ops/scatter_reduce.h"

static korch_status scatter_params(const korch_op_ctx *ctx, int *axis, korch_scatter_reduction *red) {
    const korch_tensor *data = ctx->inputs[0];
    int64_t raw = korch_node_attr_int(ctx->node, "axis", 0);
    *axis = korch_axis_normalize(raw, data->shape.rank);
    if (*axis < 0)
        return korch_op_error(ctx, KORCH_ERR_INVALID_MODEL, "axis %lld is out of range for rank %d", (long long)raw,
                              data->shape.rank);
    return korch_scatter_reduction_read(ctx, data->dtype, red);
}

static korch_status infer_scatter(korch_op_ctx *ctx) {
    KORCH_TRY(korch_layout_require_copyable(ctx, 0));
    const korch_tensor *data = ctx->inputs[0], *idx = ctx->inputs[1], *upd = ctx->inputs[2];
    int axis;
    korch_scatter_reduction red;
    KORCH_TRY(scatter_params(ctx, &axis, &red));
    if (idx->dtype != KORCH_DTYPE_INT64 && idx->dtype != KORCH_DTYPE_INT32)
        return korch_op_error(ctx, KORCH_ERR_INVALID_MODEL, "indices must be int64 or int32, got %s",
                              korch_dtype_name(idx->dtype));
    if (upd->dtype != data->dtype)
        return korch_op_error(ctx, KORCH_ERR_INVALID_MODEL, "updates are %s, data %s", korch_dtype_name(upd->dtype),
                              korch_dtype_name(data->dtype));
    if (idx->shape.rank != data->shape.rank || !korch_shape_equal(&idx->shape, &upd->shape))
        return korch_op_error(ctx, KORCH_ERR_SHAPE, "indices and updates must have one shape of the data's rank %d",
                              data->shape.rank);
    for (int k = 0; k < data->shape.rank; k++)
        if (k != axis && idx->shape.dims[k] > data->shape.dims[k])
            return korch_op_error(ctx, KORCH_ERR_SHAPE, "indices dim %d is %lld, larger than the data's %lld", k,
                                  (long long)idx->shape.dims[k], (long long)data->shape.dims[k]);
    korch_op_set_output(ctx, 0, data->dtype, &data->shape);
    return KORCH_OK;
}

static korch_status run_scatter(korch_op_ctx *ctx) {
    const korch_tensor *data = ctx->inputs[0], *idx = ctx->inputs[1], *upd = ctx->inputs[2];
    korch_tensor *y = ctx->outputs[0];
    int axis;
    korch_scatter_reduction red;
    KORCH_TRY(scatter_params(ctx, &axis, &red));
    size_t es = korch_dtype_size(data->dtype);
    memcpy(y->data, data->data, korch_tensor_bytes(data));
    int rank = data->shape.rank;
    int64_t stride[KORCH_MAX_RANK], pos[KORCH_MAX_RANK] = {0}, dim = data->shape.dims[axis];
    int64_t s = 1;
    for (int k = rank - 1; k >= 0; k--) {
        stride[k] = s;
        s *= data->shape.dims[k];
    }
    /* checked before anything is written, with Gather's message */
    KORCH_TRY(korch_layout_check_indices(ctx, axis, KORCH_ERR_INVALID_ARGUMENT));
    int64_t n = korch_tensor_numel(idx);
    for (int64_t p = 0; p < n; p++) {
        int64_t i = korch_tensor_get_i64(idx, p);
        if (i < 0) i += dim;
        int64_t off = 0;
        for (int k = 0; k < rank; k++) off += (k == axis ? i : pos[k]) * stride[k];
        korch_scatter_combine(data->dtype, red, (char *)y->data + (size_t)off * es,
                              (const char *)upd->data + (size_t)p * es, 1, es);
        for (int k = rank - 1; k >= 0; k--) { /* the next position of the indices, in row-major order */
            if (++pos[k] < idx->shape.dims[k]) break;
            pos[k] = 0;
        }
    }
    return KORCH_OK;
}

const korch_op_def korch_op_def_ScatterElements = {
    .kind = KORCH_OP_ScatterElements, .op_type = "ScatterElements", .opset_min = 11, .opset_max = 18,
    .min_inputs = 3, .max_inputs = 3, .min_outputs = 1, .max_outputs = 1,
    .infer = infer_scatter, .run = run_scatter, .flops = korch_layout_no_flops,
};

const korch_op_def korch_op_def_Scatter = {
    .kind = KORCH_OP_Scatter, .op_type = "Scatter", .opset_min = 9, .opset_max = 10,
    .min_inputs = 3, .max_inputs = 3, .min_outputs = 1, .max_outputs = 1,
    .infer = infer_scatter, .run = run_scatter, .flops = korch_layout_no_flops,
};
