/* Gather: picks slices of `data` along `axis` by index. The output shape is
 * data[:axis] + indices.shape + data[axis+1:]. Negative indices count from
 * the end; out-of-range indices are a run-time error (they are data). */
#include <string.h>

#include "ops/layout.h"

static korch_status gather_axis(const korch_op_ctx *ctx, int *axis) {
    int64_t raw = korch_node_attr_int(ctx->node, "axis", 0);
    int rank = ctx->inputs[0]->shape.rank;
    *axis = korch_axis_normalize(raw, rank);
    if (*axis < 0)
        return korch_op_error(ctx, KORCH_ERR_INVALID_MODEL, "axis %lld is out of range for rank %d", (long long)raw,
                              rank);
    return KORCH_OK;
}

static korch_status infer_gather(korch_op_ctx *ctx) {
    KORCH_TRY(korch_layout_require_copyable(ctx, 0));
    const korch_tensor *data = ctx->inputs[0], *idx = ctx->inputs[1];
    if (idx->dtype != KORCH_DTYPE_INT64 && idx->dtype != KORCH_DTYPE_INT32)
        return korch_op_error(ctx, KORCH_ERR_INVALID_MODEL, "indices must be int64 or int32, got %s",
                              korch_dtype_name(idx->dtype));
    int axis;
    KORCH_TRY(gather_axis(ctx, &axis));
    int rank = data->shape.rank - 1 + idx->shape.rank;
    if (rank > KORCH_MAX_RANK)
        return korch_op_error(ctx, KORCH_ERR_UNSUPPORTED, "output rank %d exceeds the maximum %d", rank, KORCH_MAX_RANK);
    korch_shape out = {.rank = rank};
    int r = 0;
    for (int k = 0; k < axis; k++) out.dims[r++] = data->shape.dims[k];
    for (int k = 0; k < idx->shape.rank; k++) out.dims[r++] = idx->shape.dims[k];
    for (int k = axis + 1; k < data->shape.rank; k++) out.dims[r++] = data->shape.dims[k];
    /* constant indices (the common case) are checked once, here */
    if (idx->data) KORCH_TRY(korch_layout_check_indices(ctx, axis, KORCH_ERR_INVALID_MODEL));
    korch_op_set_output(ctx, 0, data->dtype, &out);
    return KORCH_OK;
}

static korch_status run_gather(korch_op_ctx *ctx) {
    const korch_tensor *data = ctx->inputs[0], *idx = ctx->inputs[1];
    int axis;
    KORCH_TRY(gather_axis(ctx, &axis));
    int64_t outer = 1, inner = 1, dim = data->shape.dims[axis];
    for (int k = 0; k < axis; k++) outer *= data->shape.dims[k];
    for (int k = axis + 1; k < data->shape.rank; k++) inner *= data->shape.dims[k];
    int64_t n_idx = korch_tensor_numel(idx);
    /* checked up front (again: indices may be data) so the copy cannot fail half-way */
    KORCH_TRY(korch_layout_check_indices(ctx, axis, KORCH_ERR_RUNTIME));
    size_t esize = korch_dtype_size(data->dtype), chunk = (size_t)inner * esize;
    const char *src = data->data;
    char *dst = ctx->outputs[0]->data;
    int64_t total = outer * n_idx;
    if (chunk == 0) return KORCH_OK;
#pragma omp parallel for schedule(static) if (total * inner >= 32768 && total > 1)
    for (int64_t t = 0; t < total; t++) {
        int64_t o = t / n_idx, j = t % n_idx;
        int64_t i = korch_tensor_get_i64(idx, j);
        if (i < 0) i += dim;
        memcpy(dst + (size_t)t * chunk, src + (size_t)(o * dim + i) * chunk, chunk);
    }
    return KORCH_OK;
}

const korch_op_def korch_op_def_Gather = {
    .kind = KORCH_OP_Gather, .op_type = "Gather", .opset_min = 1, .opset_max = 18,
    .min_inputs = 2, .max_inputs = 2, .min_outputs = 1, .max_outputs = 1,
    .infer = infer_gather, .run = run_gather, .flops = korch_layout_no_flops,
};
