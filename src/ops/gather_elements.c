/* GatherElements (opset 11-18): out[p] = data[p with p[axis] replaced by
 * indices[p]], for every position p of `indices` (the output has the
 * indices' shape). Negative indices count from the end; an index out of
 * range is a run-time error (it is data). PyTorch exports torch.gather as
 * this operator (top-k pooling, loss functions, detection heads). */
#include <string.h>

#include "ops/layout.h"

static korch_status gather_elements_axis(const korch_op_ctx *ctx, int *axis) {
    int64_t raw = korch_node_attr_int(ctx->node, "axis", 0);
    *axis = korch_axis_normalize(raw, ctx->inputs[0]->shape.rank);
    if (*axis < 0)
        return korch_op_error(ctx, KORCH_ERR_INVALID_MODEL, "axis %lld is out of range for rank %d", (long long)raw,
                              ctx->inputs[0]->shape.rank);
    return KORCH_OK;
}

static korch_status infer_gather_elements(korch_op_ctx *ctx) {
    KORCH_TRY(korch_layout_require_copyable(ctx, 0));
    const korch_tensor *data = ctx->inputs[0], *idx = ctx->inputs[1];
    if (idx->dtype != KORCH_DTYPE_INT64 && idx->dtype != KORCH_DTYPE_INT32)
        return korch_op_error(ctx, KORCH_ERR_INVALID_MODEL, "indices must be int64 or int32, got %s",
                              korch_dtype_name(idx->dtype));
    if (data->shape.rank < 1 || idx->shape.rank != data->shape.rank)
        return korch_op_error(ctx, KORCH_ERR_SHAPE, "indices have rank %d, the data %d: they must be equal and >= 1",
                              idx->shape.rank, data->shape.rank);
    int axis;
    KORCH_TRY(gather_elements_axis(ctx, &axis));
    for (int k = 0; k < data->shape.rank; k++)
        if (k != axis && idx->shape.dims[k] > data->shape.dims[k])
            return korch_op_error(ctx, KORCH_ERR_SHAPE, "indices dim %d is %lld, larger than the data's %lld", k,
                                  (long long)idx->shape.dims[k], (long long)data->shape.dims[k]);
    if (idx->data) KORCH_TRY(korch_layout_check_indices(ctx, axis, KORCH_ERR_INVALID_MODEL));
    korch_op_set_output(ctx, 0, data->dtype, &idx->shape);
    return KORCH_OK;
}

static korch_status run_gather_elements(korch_op_ctx *ctx) {
    const korch_tensor *data = ctx->inputs[0], *idx = ctx->inputs[1];
    korch_tensor *y = ctx->outputs[0];
    int axis;
    KORCH_TRY(gather_elements_axis(ctx, &axis));
    KORCH_TRY(korch_layout_check_indices(ctx, axis, KORCH_ERR_INVALID_ARGUMENT));
    int rank = data->shape.rank;
    int64_t stride[KORCH_MAX_RANK], pos[KORCH_MAX_RANK] = {0}, dim = data->shape.dims[axis], s = 1;
    for (int k = rank - 1; k >= 0; k--) {
        stride[k] = s;
        s *= data->shape.dims[k];
    }
    size_t es = korch_dtype_size(data->dtype);
    int64_t n = korch_tensor_numel(idx);
    for (int64_t p = 0; p < n; p++) {
        int64_t i = korch_tensor_get_i64(idx, p);
        if (i < 0) i += dim;
        int64_t off = 0;
        for (int k = 0; k < rank; k++) off += (k == axis ? i : pos[k]) * stride[k];
        memcpy((char *)y->data + (size_t)p * es, (const char *)data->data + (size_t)off * es, es);
        for (int k = rank - 1; k >= 0; k--) { /* the next position of the indices, in row-major order */
            if (++pos[k] < idx->shape.dims[k]) break;
            pos[k] = 0;
        }
    }
    return KORCH_OK;
}

const korch_op_def korch_op_def_GatherElements = {
    .kind = KORCH_OP_GatherElements, .op_type = "GatherElements", .opset_min = 11, .opset_max = 18,
    .min_inputs = 2, .max_inputs = 2, .min_outputs = 1, .max_outputs = 1,
    .infer = infer_gather_elements, .run = run_gather_elements, .flops = korch_layout_no_flops,
};
