/* Activation functions: unary maps with attribute parameters (Relu,
 * LeakyRelu, Elu, Selu, Celu, HardSigmoid, HardSwish, Softplus, Softsign,
 * Mish, ThresholdedRelu, Shrink) and PRelu, whose slope is a broadcast input.
 * Clip lives in clip.c. float32 kernels compute in float with float
 * parameters, float64 kernels in double. */
#include "core/vmath.h"
#include "ops/elementwise.h"

static korch_status infer_float_act(korch_op_ctx *ctx) {
    KORCH_TRY(korch_ew_require(ctx, 0, korch_ew_is_float, "float32 and float64"));
    korch_op_set_output(ctx, 0, ctx->inputs[0]->dtype, &ctx->inputs[0]->shape);
    return KORCH_OK;
}

/* Defines run_<name>: `a` is the element; `alpha`, `beta` and `gamma` hold
 * the attributes, or the given defaults (from the ONNX specs) when absent
 * (float for float32, double for float64). */
#define ACT_RUN(name, ALPHA, BETA, GAMMA, F32, F64)                                                \
    static korch_status run_##name(korch_op_ctx *ctx) {                                            \
        int64_t n = korch_tensor_numel(ctx->outputs[0]);                                           \
        double alpha_d = korch_node_attr_float(ctx->node, "alpha", (float)(ALPHA));                \
        double beta_d = korch_node_attr_float(ctx->node, "beta", (float)(BETA));                   \
        double gamma_d = korch_node_attr_float(ctx->node, "gamma", (float)(GAMMA));                \
        if (ctx->inputs[0]->dtype == KORCH_DTYPE_FLOAT32) {                                        \
            float alpha = (float)alpha_d, beta = (float)beta_d, gamma = (float)gamma_d;            \
            (void)alpha, (void)beta, (void)gamma;                                                  \
            KORCH_EW_LOOP1(n, float, ctx->inputs[0]->data, float, ctx->outputs[0]->data, F32);     \
        } else {                                                                                   \
            double alpha = alpha_d, beta = beta_d, gamma = gamma_d;                                \
            (void)alpha, (void)beta, (void)gamma;                                                  \
            KORCH_EW_LOOP1(n, double, ctx->inputs[0]->data, double, ctx->outputs[0]->data, F64);   \
        }                                                                                          \
        return KORCH_OK;                                                                           \
    }

/* log(1 + e^x) without overflow for large x. */
static inline double softplus(double x) { return x > 0 ? x + log1p(exp(-x)) : log1p(exp(x)); }

/* Softplus and Mish in float32 through core/vmath.h: the float formulas
 * x > 0 ? x + log1pf(expf(-x)) : log1pf(expf(x)) and x * tanhf(softplus),
 * in glibc's vector variants (they were half of the reference executor's
 * time on yolov4); float64 as the other activations. */
#define VM_ACT_RUN(name, FN, F64)                                                                  \
    static korch_status run_##name(korch_op_ctx *ctx) {                                            \
        int64_t n = korch_tensor_numel(ctx->outputs[0]);                                           \
        if (ctx->inputs[0]->dtype == KORCH_DTYPE_FLOAT32)                                          \
            korch_vm_f32_parallel(FN, ctx->inputs[0]->data, ctx->outputs[0]->data, n);             \
        else                                                                                       \
            KORCH_EW_LOOP1(n, double, ctx->inputs[0]->data, double, ctx->outputs[0]->data, F64);   \
        return KORCH_OK;                                                                           \
    }

ACT_RUN(leaky_relu, 0.01, 0, 0, a < 0 ? alpha * a : a, a < 0 ? alpha * a : a)
ACT_RUN(elu, 1.0, 0, 0, a < 0 ? alpha * expm1f(a) : a, a < 0 ? alpha * expm1(a) : a)
ACT_RUN(selu, 1.67326319217681884765625, 0, 1.05070102214813232421875,
        a <= 0 ? gamma * alpha * expm1f(a) : gamma * a, a <= 0 ? gamma * alpha * expm1(a) : gamma * a)
ACT_RUN(celu, 1.0, 0, 0, fmaxf(0.0f, a) + fminf(0.0f, alpha * expm1f(a / alpha)),
        fmax(0.0, a) + fmin(0.0, alpha * expm1(a / alpha)))
ACT_RUN(hard_sigmoid, 0.2, 0.5, 0, fmaxf(0.0f, fminf(1.0f, alpha * a + beta)), fmax(0.0, fmin(1.0, alpha * a + beta)))
/* HardSwish has no attributes: it is HardSigmoid with alpha 1/6, beta 0.5, times x. */
ACT_RUN(hard_swish, 0, 0, 0, a * fmaxf(0.0f, fminf(1.0f, a / 6.0f + 0.5f)), a * fmax(0.0, fmin(1.0, a / 6.0 + 0.5)))
VM_ACT_RUN(softplus, KORCH_VM_SOFTPLUS, softplus(a))
ACT_RUN(softsign, 0, 0, 0, a / (1.0f + fabsf(a)), a / (1.0 + fabs(a)))
VM_ACT_RUN(mish, KORCH_VM_MISH, a * tanh(softplus(a)))
ACT_RUN(thresholded_relu, 1.0, 0, 0, a > alpha ? a : 0.0f, a > alpha ? a : 0.0)

/* Shrink's attributes are `lambd` and `bias` (not alpha/beta). */
static korch_status run_shrink(korch_op_ctx *ctx) {
    int64_t n = korch_tensor_numel(ctx->outputs[0]);
    double lambd = korch_node_attr_float(ctx->node, "lambd", 0.5f);
    double bias = korch_node_attr_float(ctx->node, "bias", 0.0f);
    if (ctx->inputs[0]->dtype == KORCH_DTYPE_FLOAT32) {
        float l = (float)lambd, b = (float)bias;
        KORCH_EW_LOOP1(n, float, ctx->inputs[0]->data, float, ctx->outputs[0]->data,
                       a < -l ? a + b : a > l ? a - b : 0.0f);
    } else {
        KORCH_EW_LOOP1(n, double, ctx->inputs[0]->data, double, ctx->outputs[0]->data,
                       a < -lambd ? a + bias : a > lambd ? a - bias : 0.0);
    }
    return KORCH_OK;
}

static korch_status infer_celu(korch_op_ctx *ctx) {
    if (korch_node_attr_float(ctx->node, "alpha", 1.0f) == 0.0f)
        return korch_op_error(ctx, KORCH_ERR_INVALID_MODEL, "alpha must not be 0");
    return infer_float_act(ctx);
}

#define ACT_ROW(Name, lo, first, infer_fn)                                                         \
    const korch_op_def korch_op_def_##Name = {                                                     \
        .kind = KORCH_OP_##Name, .op_type = #Name, .opset_min = first, .opset_max = 18,            \
        .min_inputs = 1, .max_inputs = 1, .min_outputs = 1, .max_outputs = 1,                      \
        .infer = infer_fn, .run = run_##lo,                                                        \
    };
ACT_ROW(LeakyRelu, leaky_relu, 1, infer_float_act)
ACT_ROW(Elu, elu, 1, infer_float_act)
ACT_ROW(Selu, selu, 1, infer_float_act)
ACT_ROW(Celu, celu, 12, infer_celu)
ACT_ROW(HardSigmoid, hard_sigmoid, 1, infer_float_act)
ACT_ROW(HardSwish, hard_swish, 14, infer_float_act)
ACT_ROW(Softplus, softplus, 1, infer_float_act)
ACT_ROW(Softsign, softsign, 1, infer_float_act)
ACT_ROW(Mish, mish, 18, infer_float_act)
ACT_ROW(ThresholdedRelu, thresholded_relu, 10, infer_float_act)
ACT_ROW(Shrink, shrink, 9, infer_float_act)

/* ---- Relu: floats, and signed integers from opset 14 ---- */

static bool is_float_or_signed(korch_dtype d) { return korch_ew_is_float(d) || korch_ew_is_signed(d); }

static korch_status infer_relu(korch_op_ctx *ctx) {
    KORCH_TRY(korch_ew_require(ctx, 0, is_float_or_signed, "float32, float64 and the signed integer dtypes"));
    korch_op_set_output(ctx, 0, ctx->inputs[0]->dtype, &ctx->inputs[0]->shape);
    return KORCH_OK;
}

#define RELU_CASE(DT, T)                                                                           \
    case DT: KORCH_EW_LOOP1(n, T, ctx->inputs[0]->data, T, ctx->outputs[0]->data, a > 0 ? a : 0); return KORCH_OK;

static korch_status run_relu(korch_op_ctx *ctx) {
    int64_t n = korch_tensor_numel(ctx->outputs[0]);
    switch (ctx->inputs[0]->dtype) {
        RELU_CASE(KORCH_DTYPE_FLOAT32, float)
        RELU_CASE(KORCH_DTYPE_FLOAT64, double)
        RELU_CASE(KORCH_DTYPE_INT8, int8_t)
        RELU_CASE(KORCH_DTYPE_INT16, int16_t)
        RELU_CASE(KORCH_DTYPE_INT32, int32_t)
        RELU_CASE(KORCH_DTYPE_INT64, int64_t)
    default: break;
    }
    return korch_op_error(ctx, KORCH_ERR_UNSUPPORTED, "dtype %s is not supported",
                          korch_dtype_name(ctx->inputs[0]->dtype));
}

ACT_ROW(Relu, relu, 1, infer_relu)

/* ---- PRelu: y = x < 0 ? slope * x : x, slope broadcast onto x ---- */

/* The slope's shape as broadcast against x. From opset 7 that is numpy
 * broadcasting; before, a 1-D slope of length C holds one value per channel
 * (dim 1), as Caffe and the older PyTorch exporter use it. */
static korch_shape prelu_slope_shape(const korch_op_ctx *ctx) {
    const korch_shape *x = &ctx->inputs[0]->shape, *slope = &ctx->inputs[1]->shape;
    korch_shape s = *slope;
    if (ctx->node->opset < 7 && slope->rank == 1 && x->rank >= 2 && slope->dims[0] == x->dims[1] &&
        slope->dims[0] != 1) {
        s.rank = x->rank - 1; /* [C, 1, ..., 1] lines up with dims 1.. of x */
        for (int d = 1; d < s.rank; d++) s.dims[d] = 1;
    }
    return s;
}

static korch_status infer_prelu(korch_op_ctx *ctx) {
    KORCH_TRY(korch_ew_require(ctx, 0, korch_ew_is_float, "float32 and float64"));
    KORCH_TRY(korch_ew_require_same_dtype(ctx, 0, 1));
    const korch_shape *x = &ctx->inputs[0]->shape;
    korch_shape slope = prelu_slope_shape(ctx), out;
    char sx[96], ss[96];
    /* Unidirectional: the slope adapts to x, never the other way round. */
    if (!korch_shape_broadcast(x, &slope, &out) || !korch_shape_equal(&out, x))
        return korch_op_error(ctx, KORCH_ERR_SHAPE, "slope of shape %s does not broadcast to input shape %s",
                              korch_shape_format(&ctx->inputs[1]->shape, ss, sizeof ss),
                              korch_shape_format(x, sx, sizeof sx));
    korch_op_set_output(ctx, 0, ctx->inputs[0]->dtype, x);
    return KORCH_OK;
}

static korch_status run_prelu(korch_op_ctx *ctx) {
    const korch_tensor *x = ctx->inputs[0], *slope = ctx->inputs[1];
    korch_tensor *y = ctx->outputs[0];
    korch_shape slope_shape = prelu_slope_shape(ctx);
    const korch_shape *shapes[2] = {&x->shape, &slope_shape};
    korch_ew_plan plan;
    korch_ew_plan_init(&plan, &y->shape, 2, shapes);
    if (x->dtype == KORCH_DTYPE_FLOAT32)
        KORCH_EW_LOOP2(&plan, float, x->data, float, slope->data, float, y->data, a < 0 ? b * a : a);
    else
        KORCH_EW_LOOP2(&plan, double, x->data, double, slope->data, double, y->data, a < 0 ? b * a : a);
    return KORCH_OK;
}

const korch_op_def korch_op_def_PRelu = {
    .kind = KORCH_OP_PRelu, .op_type = "PRelu", .opset_min = 1, .opset_max = 18,
    .min_inputs = 2, .max_inputs = 2, .min_outputs = 1, .max_outputs = 1,
    .infer = infer_prelu, .run = run_prelu,
};
