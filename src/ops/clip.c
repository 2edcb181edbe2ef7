/* Clip: y = min(max(x, lo), hi). Before opset 11 the bounds are float
 * attributes (default: the float range); from opset 11 they are optional
 * scalar inputs (default: no bound) and integer dtypes are allowed (opset 12).
 * When lo > hi every element becomes hi, as the spec says. NaN passes through. */
#include <float.h>

#include "ops/elementwise.h"

static korch_status check_bound(const korch_op_ctx *ctx, int i, const char *role) {
    char name[160];
    if (!korch_op_has_input(ctx, i)) return KORCH_OK;
    const korch_tensor *t = ctx->inputs[i];
    if (t->dtype != ctx->inputs[0]->dtype)
        return korch_op_error(ctx, KORCH_ERR_INVALID_MODEL, "%s input \"%s\" has dtype %s, the input has %s", role,
                              korch_printable(korch_op_input_name(ctx, i), name, sizeof name),
                              korch_dtype_name(t->dtype), korch_dtype_name(ctx->inputs[0]->dtype));
    /* The spec says scalar; exporters also emit shape [1]. */
    if (korch_tensor_numel(t) != 1)
        return korch_op_error(ctx, KORCH_ERR_SHAPE, "%s input \"%s\" must hold one element, it has %lld", role,
                              korch_printable(korch_op_input_name(ctx, i), name, sizeof name),
                              (long long)korch_tensor_numel(t));
    return KORCH_OK;
}

static korch_status infer_clip(korch_op_ctx *ctx) {
    if (ctx->node->opset < 11) {
        if (korch_node_input_count(ctx->node) > 1)
            return korch_op_error(ctx, KORCH_ERR_INVALID_MODEL,
                                  "before opset 11 the bounds are attributes; the node has %d inputs",
                                  korch_node_input_count(ctx->node));
        KORCH_TRY(korch_ew_require(ctx, 0, korch_ew_is_float, "float32 and float64"));
    } else {
        KORCH_TRY(korch_ew_require(ctx, 0, korch_ew_is_numeric, "float32, float64 and the integer dtypes"));
        KORCH_TRY(check_bound(ctx, 1, "min"));
        KORCH_TRY(check_bound(ctx, 2, "max"));
    }
    korch_op_set_output(ctx, 0, ctx->inputs[0]->dtype, &ctx->inputs[0]->shape);
    return KORCH_OK;
}

/* Bound i as T, or `dflt` when the input is omitted. */
#define BOUND(T, i, dflt) (korch_op_has_input(ctx, i) ? ((const T *)ctx->inputs[i]->data)[0] : (dflt))

#define CLIP_CASE(DT, T, LOWEST, HIGHEST)                                                          \
    case DT: {                                                                                     \
        T lo = BOUND(T, 1, LOWEST), hi = BOUND(T, 2, HIGHEST);                                     \
        KORCH_EW_LOOP1(n, T, ctx->inputs[0]->data, T, ctx->outputs[0]->data,                      \
                       (a < lo ? lo : a) > hi ? hi : (a < lo ? lo : a));                           \
        return KORCH_OK;                                                                           \
    }

static korch_status run_clip(korch_op_ctx *ctx) {
    int64_t n = korch_tensor_numel(ctx->outputs[0]);
    if (ctx->node->opset < 11) {
        double lo_d = korch_node_attr_float(ctx->node, "min", -FLT_MAX);
        double hi_d = korch_node_attr_float(ctx->node, "max", FLT_MAX);
        if (ctx->inputs[0]->dtype == KORCH_DTYPE_FLOAT32) {
            float lo = (float)lo_d, hi = (float)hi_d;
            KORCH_EW_LOOP1(n, float, ctx->inputs[0]->data, float, ctx->outputs[0]->data,
                           (a < lo ? lo : a) > hi ? hi : (a < lo ? lo : a));
        } else {
            double lo = lo_d, hi = hi_d;
            KORCH_EW_LOOP1(n, double, ctx->inputs[0]->data, double, ctx->outputs[0]->data,
                           (a < lo ? lo : a) > hi ? hi : (a < lo ? lo : a));
        }
        return KORCH_OK;
    }
    switch (ctx->inputs[0]->dtype) {
        CLIP_CASE(KORCH_DTYPE_FLOAT32, float, -INFINITY, INFINITY)
        CLIP_CASE(KORCH_DTYPE_FLOAT64, double, -INFINITY, INFINITY)
        CLIP_CASE(KORCH_DTYPE_INT8, int8_t, INT8_MIN, INT8_MAX)
        CLIP_CASE(KORCH_DTYPE_INT16, int16_t, INT16_MIN, INT16_MAX)
        CLIP_CASE(KORCH_DTYPE_INT32, int32_t, INT32_MIN, INT32_MAX)
        CLIP_CASE(KORCH_DTYPE_INT64, int64_t, INT64_MIN, INT64_MAX)
        CLIP_CASE(KORCH_DTYPE_UINT8, uint8_t, 0, UINT8_MAX)
        CLIP_CASE(KORCH_DTYPE_UINT16, uint16_t, 0, UINT16_MAX)
        CLIP_CASE(KORCH_DTYPE_UINT32, uint32_t, 0, UINT32_MAX)
        CLIP_CASE(KORCH_DTYPE_UINT64, uint64_t, 0, UINT64_MAX)
    default: break;
    }
    return korch_op_error(ctx, KORCH_ERR_UNSUPPORTED, "dtype %s is not supported",
                          korch_dtype_name(ctx->inputs[0]->dtype));
}

const korch_op_def korch_op_def_Clip = {
    .kind = KORCH_OP_Clip, .op_type = "Clip", .opset_min = 1, .opset_max = 18,
    .min_inputs = 1, .max_inputs = 3, .min_outputs = 1, .max_outputs = 1,
    .infer = infer_clip, .run = run_clip,
};
