/* DynamicQuantizeLinear (opset 11): uint8 quantization of a float32 tensor
 * with parameters computed from its own range, as quantize_dynamic's models
 * use it for activations:
 *
 *   x_min = min(0, min(x)),  x_max = max(0, max(x))
 *   y_scale = (x_max - x_min) / 255
 *   y_zero_point = saturate(rint(0 - x_min / y_scale))
 *   y = saturate(rint(x / y_scale) + y_zero_point)
 *
 * all in float32. When x_max == x_min (x all zeros, or empty) the spec's
 * formula divides 0 by 0; korch uses y_scale = 1 there, as ONNX Runtime
 * does, so y and the zero point are 0. NaN elements are skipped by the
 * min/max (and quantize to the zero point). */
#include "ops/quant.h"

static korch_status infer_dynamic_quantize(korch_op_ctx *ctx) {
    KORCH_TRY(korch_op_require_dtype(ctx, 0, KORCH_DTYPE_FLOAT32));
    korch_shape scalar = {.rank = 0};
    korch_op_set_output(ctx, 0, KORCH_DTYPE_UINT8, &ctx->inputs[0]->shape);
    korch_op_set_output(ctx, 1, KORCH_DTYPE_FLOAT32, &scalar);
    korch_op_set_output(ctx, 2, KORCH_DTYPE_UINT8, &scalar);
    return KORCH_OK;
}

/* Scale and zero point of x. */
static void dynamic_params(const float *x, int64_t n, float *scale, int32_t *zero_point) {
    float lo = 0.0f, hi = 0.0f;
    for (int64_t i = 0; i < n; i++) {
        if (x[i] < lo) lo = x[i];
        if (x[i] > hi) hi = x[i];
    }
    float s = hi == lo ? 1.0f : (hi - lo) / 255.0f;
    float zp = 0.0f - lo / s;
    *scale = s;
    *zero_point = korch_quant_round_saturate(zp, 0, 0, 255);
}

static korch_status run_dynamic_quantize(korch_op_ctx *ctx) {
    const float *x = ctx->inputs[0]->data;
    int64_t n = korch_tensor_numel(ctx->inputs[0]);
    float scale;
    int32_t zp;
    dynamic_params(x, n, &scale, &zp);
    uint8_t *y = ctx->outputs[0]->data;
#pragma omp parallel for schedule(static) if (n >= 65536)
    for (int64_t i = 0; i < n; i++) y[i] = (uint8_t)korch_quant_round_saturate(x[i] / scale, zp, 0, 255);
    if (ctx->n_outputs > 1 && ctx->outputs[1]) *(float *)ctx->outputs[1]->data = scale;
    if (ctx->n_outputs > 2 && ctx->outputs[2]) *(uint8_t *)ctx->outputs[2]->data = (uint8_t)zp;
    return KORCH_OK;
}

const korch_op_def korch_op_def_DynamicQuantizeLinear = {
    .kind = KORCH_OP_DynamicQuantizeLinear, .op_type = "DynamicQuantizeLinear", .opset_min = 11, .opset_max = 18,
    .min_inputs = 1, .max_inputs = 1, .min_outputs = 3, .max_outputs = 3,
    .infer = infer_dynamic_quantize, .run = run_dynamic_quantize,
};
