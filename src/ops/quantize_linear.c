/* QuantizeLinear and DequantizeLinear (opsets 10-18): per-tensor, per-axis
 * (opset 13) and blocked scales (quant.h), uint8/int8 (and int32 for
 * DequantizeLinear, as exporters write biases).
 *
 *   QuantizeLinear:   y = saturate(rint(x / y_scale) + y_zero_point)
 *   DequantizeLinear: y = (x - x_zero_point) * x_scale
 *
 * Both compute in float32 where ONNX's reference does (x / scale is a
 * float32 division, not a multiplication by the reciprocal, which can differ
 * in the last bit and so flip a rounding tie). The subtraction of the zero
 * point is exact in int32 before the conversion, as ONNX Runtime does it. */
#include "ops/quant.h"

/* ---- QuantizeLinear ------------------------------------------------------- */

static korch_status infer_quantize(korch_op_ctx *ctx) {
    korch_quant_layout q;
    const korch_tensor *x = ctx->inputs[0];
    if (x->dtype != KORCH_DTYPE_FLOAT32 && x->dtype != KORCH_DTYPE_INT32)
        return korch_op_error(ctx, KORCH_ERR_UNSUPPORTED, "x has dtype %s; korch supports float32 and int32",
                              korch_dtype_name(x->dtype));
    korch_dtype out = KORCH_DTYPE_UINT8; /* the output type without a zero point */
    if (korch_op_has_input(ctx, 2)) {
        KORCH_TRY(korch_quant_require_int8(ctx, 2, "zero point"));
        out = ctx->inputs[2]->dtype;
    }
    KORCH_TRY(korch_quant_layout_read(ctx, 0, 1, 2, &q));
    korch_op_set_output(ctx, 0, out, &x->shape);
    return KORCH_OK;
}

static korch_status run_quantize(korch_op_ctx *ctx) {
    korch_quant_layout q;
    KORCH_TRY(korch_quant_layout_read(ctx, 0, 1, 2, &q));
    const korch_tensor *x = ctx->inputs[0], *zp = korch_op_has_input(ctx, 2) ? ctx->inputs[2] : NULL;
    const float *scale = ctx->inputs[1]->data;
    korch_tensor *y = ctx->outputs[0];
    int32_t lo = korch_quant_min(y->dtype), hi = korch_quant_max(y->dtype);
    int64_t n = korch_tensor_numel(y);
    bool from_float = x->dtype == KORCH_DTYPE_FLOAT32;
#pragma omp parallel for schedule(static) if (n >= 65536)
    for (int64_t i = 0; i < n; i++) {
        int64_t p = korch_quant_param_index(&q, i);
        /* float32 division, as ONNX's reference (int32 x is converted first) */
        float xv = from_float ? ((const float *)x->data)[i] : (float)((const int32_t *)x->data)[i];
        float v = xv / scale[p];
        korch_quant_set(y, i, korch_quant_round_saturate(v, korch_quant_get(zp, p), lo, hi));
    }
    return KORCH_OK;
}

const korch_op_def korch_op_def_QuantizeLinear = {
    .kind = KORCH_OP_QuantizeLinear, .op_type = "QuantizeLinear", .opset_min = 10, .opset_max = 18,
    .min_inputs = 2, .max_inputs = 3, .min_outputs = 1, .max_outputs = 1,
    .infer = infer_quantize, .run = run_quantize,
};

/* ---- DequantizeLinear ----------------------------------------------------- */

static korch_status infer_dequantize(korch_op_ctx *ctx) {
    korch_quant_layout q;
    const korch_tensor *x = ctx->inputs[0];
    if (!korch_quant_is_int8(x->dtype) && x->dtype != KORCH_DTYPE_INT32)
        return korch_op_error(ctx, KORCH_ERR_UNSUPPORTED, "x has dtype %s; korch supports uint8, int8 and int32",
                              korch_dtype_name(x->dtype));
    KORCH_TRY(korch_quant_require_same_dtype(ctx, 2, 0, "zero point"));
    KORCH_TRY(korch_quant_layout_read(ctx, 0, 1, 2, &q));
    korch_op_set_output(ctx, 0, KORCH_DTYPE_FLOAT32, &x->shape);
    return KORCH_OK;
}

static korch_status run_dequantize(korch_op_ctx *ctx) {
    korch_quant_layout q;
    KORCH_TRY(korch_quant_layout_read(ctx, 0, 1, 2, &q));
    const korch_tensor *x = ctx->inputs[0], *zp = korch_op_has_input(ctx, 2) ? ctx->inputs[2] : NULL;
    const float *scale = ctx->inputs[1]->data;
    float *y = ctx->outputs[0]->data;
    int64_t n = korch_tensor_numel(ctx->outputs[0]);
#pragma omp parallel for schedule(static) if (n >= 65536)
    for (int64_t i = 0; i < n; i++) {
        int64_t p = korch_quant_param_index(&q, i);
        /* int64: an int32 x minus an int32 zero point must not overflow */
        int64_t d = (int64_t)korch_quant_get(x, i) - korch_quant_get(zp, p);
        y[i] = (float)d * scale[p];
    }
    return KORCH_OK;
}

const korch_op_def korch_op_def_DequantizeLinear = {
    .kind = KORCH_OP_DequantizeLinear, .op_type = "DequantizeLinear", .opset_min = 10, .opset_max = 18,
    .min_inputs = 2, .max_inputs = 3, .min_outputs = 1, .max_outputs = 1,
    .infer = infer_dequantize, .run = run_dequantize,
};
