/* BitShift (opset 11-18): Z = X << Y or X >> Y (attribute direction "LEFT"
 * or "RIGHT", required) on unsigned integers, X and Y of one dtype and
 * numpy-broadcast. A shift by the bit width or more gives 0 (C leaves it
 * undefined; numpy and onnxruntime give 0). */
#include <string.h>

#include "ops/broadcast.h"
#include "ops/elementwise.h"

static bool bitshift_dtype_ok(korch_dtype t) {
    return t == KORCH_DTYPE_UINT8 || t == KORCH_DTYPE_UINT16 || t == KORCH_DTYPE_UINT32 || t == KORCH_DTYPE_UINT64;
}

static korch_status bitshift_left(const korch_op_ctx *ctx, bool *left) {
    const char *dir = korch_node_attr_string(ctx->node, "direction", NULL);
    if (!dir)
        return korch_op_error(ctx, KORCH_ERR_INVALID_MODEL, "the attribute \"direction\" (LEFT or RIGHT) is required");
    if (strcmp(dir, "LEFT") != 0 && strcmp(dir, "RIGHT") != 0)
        return korch_op_error(ctx, KORCH_ERR_INVALID_MODEL, "direction \"%s\": it must be LEFT or RIGHT", dir);
    *left = strcmp(dir, "LEFT") == 0;
    return KORCH_OK;
}

static korch_status infer_bitshift(korch_op_ctx *ctx) {
    KORCH_TRY(korch_ew_require(ctx, 0, bitshift_dtype_ok, "uint8, uint16, uint32 or uint64"));
    KORCH_TRY(korch_ew_require_same_dtype(ctx, 0, 1));
    bool left;
    KORCH_TRY(bitshift_left(ctx, &left));
    korch_shape a, b, out;
    KORCH_TRY(korch_ew_binary_shapes(ctx, &a, &b, &out));
    korch_op_set_output(ctx, 0, ctx->inputs[0]->dtype, &out);
    return KORCH_OK;
}

static uint64_t load_u(const korch_tensor *t, int64_t i) {
    switch (t->dtype) {
    case KORCH_DTYPE_UINT8: return ((const uint8_t *)t->data)[i];
    case KORCH_DTYPE_UINT16: return ((const uint16_t *)t->data)[i];
    case KORCH_DTYPE_UINT32: return ((const uint32_t *)t->data)[i];
    default: return ((const uint64_t *)t->data)[i];
    }
}

static void store_u(korch_tensor *t, int64_t i, uint64_t v) {
    switch (t->dtype) {
    case KORCH_DTYPE_UINT8: ((uint8_t *)t->data)[i] = (uint8_t)v; break;
    case KORCH_DTYPE_UINT16: ((uint16_t *)t->data)[i] = (uint16_t)v; break;
    case KORCH_DTYPE_UINT32: ((uint32_t *)t->data)[i] = (uint32_t)v; break;
    default: ((uint64_t *)t->data)[i] = v; break;
    }
}

static korch_status run_bitshift(korch_op_ctx *ctx) {
    const korch_tensor *x = ctx->inputs[0], *s = ctx->inputs[1];
    korch_tensor *z = ctx->outputs[0];
    bool left;
    KORCH_TRY(bitshift_left(ctx, &left));
    korch_shape a, b, out;
    KORCH_TRY(korch_ew_binary_shapes(ctx, &a, &b, &out));
    const korch_shape *shapes[2] = {&a, &b};
    korch_broadcast_iter it;
    korch_broadcast_iter_init(&it, &z->shape, 2, shapes);
    uint64_t bits = 8 * (uint64_t)korch_dtype_size(x->dtype);
    int64_t n = korch_tensor_numel(z);
    for (int64_t i = 0; i < n; i++) {
        uint64_t v = load_u(x, it.offset[0]), k = load_u(s, it.offset[1]);
        /* in uint64 (no promotion to int), then truncated to the dtype's width */
        store_u(z, i, k >= bits ? 0 : left ? v << k : v >> k);
        korch_broadcast_iter_next(&it);
    }
    return KORCH_OK;
}

const korch_op_def korch_op_def_BitShift = {
    .kind = KORCH_OP_BitShift, .op_type = "BitShift", .opset_min = 11, .opset_max = 18,
    .min_inputs = 2, .max_inputs = 2, .min_outputs = 1, .max_outputs = 1,
    .infer = infer_bitshift, .run = run_bitshift,
};
