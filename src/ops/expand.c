/* Expand and Tile: both repeat the input without arithmetic, so both are a
 * strided view with zero strides on the repeated dimensions. */
#include "ops/broadcast.h"
#include "ops/layout.h"

/* Expand's target shape broadcasts bidirectionally with the input: a target
 * dim of 1 keeps the input's dim. */
static korch_status expand_shape(const korch_op_ctx *ctx, korch_shape *out) {
    int64_t spec[KORCH_MAX_RANK];
    int count = 0;
    KORCH_TRY(korch_op_read_ints(ctx, 1, "shape", spec, KORCH_MAX_RANK, &count));
    korch_shape target = {.rank = count};
    for (int k = 0; k < count; k++) {
        if (spec[k] < 0)
            return korch_op_error(ctx, KORCH_ERR_INVALID_MODEL, "shape entry %d is %lld", k, (long long)spec[k]);
        target.dims[k] = spec[k];
    }
    const korch_shape *in = &ctx->inputs[0]->shape;
    char a[96], b[96];
    if (!korch_shape_broadcast(in, &target, out))
        return korch_op_error(ctx, KORCH_ERR_SHAPE, "cannot expand %s to %s", korch_shape_format(in, a, sizeof a),
                              korch_shape_format(&target, b, sizeof b));
    return KORCH_OK;
}

static korch_status infer_expand(korch_op_ctx *ctx) {
    KORCH_TRY(korch_layout_require_copyable(ctx, 0));
    korch_shape out;
    KORCH_TRY(expand_shape(ctx, &out));
    korch_op_set_output(ctx, 0, ctx->inputs[0]->dtype, &out);
    return KORCH_OK;
}

static korch_status run_expand(korch_op_ctx *ctx) {
    const korch_tensor *x = ctx->inputs[0];
    korch_tensor *y = ctx->outputs[0];
    korch_strided_view v = {.rank = y->shape.rank, .offset = 0};
    korch_broadcast_strides(&x->shape, &y->shape, v.strides);
    for (int k = 0; k < v.rank; k++) v.dims[k] = y->shape.dims[k];
    korch_layout_copy_view(y->data, x->data, korch_dtype_size(x->dtype), &v);
    return KORCH_OK;
}

const korch_op_def korch_op_def_Expand = {
    .kind = KORCH_OP_Expand, .op_type = "Expand", .opset_min = 8, .opset_max = 18,
    .min_inputs = 2, .max_inputs = 2, .min_outputs = 1, .max_outputs = 1,
    .infer = infer_expand, .run = run_expand, .flops = korch_layout_no_flops,
};

static korch_status tile_repeats(const korch_op_ctx *ctx, int64_t *repeats) {
    int rank = ctx->inputs[0]->shape.rank, count = 0;
    KORCH_TRY(korch_op_read_ints(ctx, 1, "repeats", repeats, KORCH_MAX_RANK, &count));
    if (count != rank)
        return korch_op_error(ctx, KORCH_ERR_INVALID_MODEL, "repeats has %d entries but the input has rank %d", count,
                              rank);
    for (int k = 0; k < rank; k++)
        if (repeats[k] < 0)
            return korch_op_error(ctx, KORCH_ERR_INVALID_MODEL, "repeats entry %d is %lld", k, (long long)repeats[k]);
    return KORCH_OK;
}

static korch_status infer_tile(korch_op_ctx *ctx) {
    KORCH_TRY(korch_layout_require_copyable(ctx, 0));
    int64_t repeats[KORCH_MAX_RANK];
    KORCH_TRY(tile_repeats(ctx, repeats));
    korch_shape out = ctx->inputs[0]->shape;
    for (int k = 0; k < out.rank; k++)
        if (korch_mul_overflow_i64(out.dims[k], repeats[k], &out.dims[k]) || out.dims[k] > KORCH_MAX_ELEMENTS)
            return korch_op_error(ctx, KORCH_ERR_SHAPE, "tiled dimension %d is too large", k);
    korch_op_set_output(ctx, 0, ctx->inputs[0]->dtype, &out);
    return KORCH_OK;
}

static korch_status run_tile(korch_op_ctx *ctx) {
    const korch_tensor *x = ctx->inputs[0];
    int64_t repeats[KORCH_MAX_RANK], strides[KORCH_MAX_RANK];
    KORCH_TRY(tile_repeats(ctx, repeats));
    korch_shape_strides(&x->shape, strides);
    /* output dim k, of size repeats[k] * d, is the pair (repeat, i) in
     * row-major order; the repeat index does not move the source */
    korch_strided_view v = {.rank = 2 * x->shape.rank, .offset = 0};
    for (int k = 0; k < x->shape.rank; k++) {
        v.dims[2 * k] = repeats[k];
        v.strides[2 * k] = 0;
        v.dims[2 * k + 1] = x->shape.dims[k];
        v.strides[2 * k + 1] = strides[k];
    }
    korch_layout_copy_view(ctx->outputs[0]->data, x->data, korch_dtype_size(x->dtype), &v);
    return KORCH_OK;
}

const korch_op_def korch_op_def_Tile = {
    .kind = KORCH_OP_Tile, .op_type = "Tile", .opset_min = 6, .opset_max = 18,
    .min_inputs = 2, .max_inputs = 2, .min_outputs = 1, .max_outputs = 1,
    .infer = infer_tile, .run = run_tile, .flops = korch_layout_no_flops,
};
