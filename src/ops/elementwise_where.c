/* Where(condition, X, Y): X where the condition holds, else Y, with
 * three-way broadcasting. Elements are copied by size, so any dtype works. */
#include "ops/elementwise.h"

static korch_status infer_where(korch_op_ctx *ctx) {
    KORCH_TRY(korch_op_require_dtype(ctx, 0, KORCH_DTYPE_BOOL));
    KORCH_TRY(korch_ew_require_same_dtype(ctx, 1, 2));
    korch_dtype dtype = ctx->inputs[1]->dtype;
    if (korch_dtype_size(dtype) == 0 || dtype == KORCH_DTYPE_STRING)
        return korch_op_error(ctx, KORCH_ERR_UNSUPPORTED, "dtype %s is not supported", korch_dtype_name(dtype));
    korch_shape out;
    KORCH_TRY(korch_ew_broadcast_all(ctx, 0, 2, &out));
    korch_op_set_output(ctx, 0, dtype, &out);
    return KORCH_OK;
}

#define WHERE_CASE(size, T)                                                                        \
    case size:                                                                                     \
        KORCH_EW_LOOP3(&plan, uint8_t, cond->data, T, tx->data, T, ty->data, T, out->data, a ? b : c); \
        return KORCH_OK;

static korch_status run_where(korch_op_ctx *ctx) {
    const korch_tensor *cond = ctx->inputs[0], *tx = ctx->inputs[1], *ty = ctx->inputs[2];
    korch_tensor *out = ctx->outputs[0];
    const korch_shape *shapes[3] = {&cond->shape, &tx->shape, &ty->shape};
    korch_ew_plan plan;
    korch_ew_plan_init(&plan, &out->shape, 3, shapes);
    switch (korch_dtype_size(tx->dtype)) {
        WHERE_CASE(1, uint8_t)
        WHERE_CASE(2, uint16_t)
        WHERE_CASE(4, uint32_t)
        WHERE_CASE(8, uint64_t)
    default: break;
    }
    return korch_op_error(ctx, KORCH_ERR_UNSUPPORTED, "dtype %s is not supported", korch_dtype_name(tx->dtype));
}

const korch_op_def korch_op_def_Where = {
    .kind = KORCH_OP_Where, .op_type = "Where", .opset_min = 9, .opset_max = 18,
    .min_inputs = 3, .max_inputs = 3, .min_outputs = 1, .max_outputs = 1,
    .infer = infer_where, .run = run_where,
};
