/* ReverseSequence (opset 10-18): for each batch entry b, reverses the first
 * sequence_lens[b] elements along time_axis and copies the rest. The batch
 * and time axes are 1 and 0 (the defaults) or 0 and 1; sequence_lens is
 * int64 of shape [batch]. A length below 0 or above the time dimension is
 * an error: at inference when the lengths are constant (a model error), at
 * run time otherwise (bad data). */
#include <string.h>

#include "ops/layout.h"

static korch_status reverse_axes(const korch_op_ctx *ctx, int *batch_axis, int *time_axis) {
    int64_t b = korch_node_attr_int(ctx->node, "batch_axis", 1), t = korch_node_attr_int(ctx->node, "time_axis", 0);
    if (!((b == 0 && t == 1) || (b == 1 && t == 0)))
        return korch_op_error(ctx, KORCH_ERR_INVALID_MODEL,
                              "batch_axis %lld and time_axis %lld: they must be 1 and 0 or 0 and 1", (long long)b,
                              (long long)t);
    *batch_axis = (int)b;
    *time_axis = (int)t;
    return KORCH_OK;
}

static korch_status check_lengths(const korch_op_ctx *ctx, int time_axis, korch_status status) {
    const korch_tensor *lens = ctx->inputs[1];
    int64_t steps = ctx->inputs[0]->shape.dims[time_axis], n = korch_tensor_numel(lens);
    for (int64_t b = 0; b < n; b++) {
        int64_t len = korch_tensor_get_i64(lens, b);
        if (len < 0 || len > steps)
            return korch_op_error(ctx, status, "sequence length %lld (batch entry %lld) is outside [0, %lld]",
                                  (long long)len, (long long)b, (long long)steps);
    }
    return KORCH_OK;
}

static korch_status infer_reverse_sequence(korch_op_ctx *ctx) {
    KORCH_TRY(korch_layout_require_copyable(ctx, 0));
    const korch_tensor *x = ctx->inputs[0], *lens = ctx->inputs[1];
    int batch_axis, time_axis;
    KORCH_TRY(reverse_axes(ctx, &batch_axis, &time_axis));
    if (lens->dtype != KORCH_DTYPE_INT64)
        return korch_op_error(ctx, KORCH_ERR_INVALID_MODEL, "sequence_lens must be int64, got %s",
                              korch_dtype_name(lens->dtype));
    if (x->shape.rank < 2)
        return korch_op_error(ctx, KORCH_ERR_SHAPE, "input of rank %d: ReverseSequence needs rank >= 2",
                              x->shape.rank);
    if (lens->shape.rank != 1 || lens->shape.dims[0] != x->shape.dims[batch_axis])
        return korch_op_error(ctx, KORCH_ERR_SHAPE,
                              "sequence_lens must have shape [%lld] (the batch dimension, axis %d), has rank %d%s",
                              (long long)x->shape.dims[batch_axis], batch_axis, lens->shape.rank,
                              lens->shape.rank == 1 ? " and another length" : "");
    if (lens->data) KORCH_TRY(check_lengths(ctx, time_axis, KORCH_ERR_INVALID_MODEL));
    korch_op_set_output(ctx, 0, x->dtype, &x->shape);
    return KORCH_OK;
}

static korch_status run_reverse_sequence(korch_op_ctx *ctx) {
    const korch_tensor *x = ctx->inputs[0], *lens = ctx->inputs[1];
    korch_tensor *y = ctx->outputs[0];
    int batch_axis, time_axis;
    KORCH_TRY(reverse_axes(ctx, &batch_axis, &time_axis));
    KORCH_TRY(check_lengths(ctx, time_axis, KORCH_ERR_INVALID_ARGUMENT));
    int64_t d0 = x->shape.dims[0], d1 = x->shape.dims[1], inner = 1;
    for (int d = 2; d < x->shape.rank; d++) inner *= x->shape.dims[d];
    size_t es = korch_dtype_size(x->dtype), block = (size_t)inner * es;
    for (int64_t i0 = 0; i0 < d0; i0++)
        for (int64_t i1 = 0; i1 < d1; i1++) {
            int64_t b = batch_axis == 0 ? i0 : i1, t = time_axis == 0 ? i0 : i1;
            int64_t len = korch_tensor_get_i64(lens, b), src_t = t < len ? len - 1 - t : t;
            int64_t s0 = time_axis == 0 ? src_t : i0, s1 = time_axis == 1 ? src_t : i1;
            memcpy((char *)y->data + (size_t)(i0 * d1 + i1) * block,
                   (const char *)x->data + (size_t)(s0 * d1 + s1) * block, block);
        }
    return KORCH_OK;
}

const korch_op_def korch_op_def_ReverseSequence = {
    .kind = KORCH_OP_ReverseSequence, .op_type = "ReverseSequence", .opset_min = 10, .opset_max = 18,
    .min_inputs = 2, .max_inputs = 2, .min_outputs = 1, .max_outputs = 1,
    .infer = infer_reverse_sequence, .run = run_reverse_sequence, .flops = korch_layout_no_flops,
};
