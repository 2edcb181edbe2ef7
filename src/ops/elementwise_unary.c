/* Unary maths: Sqrt, Reciprocal, Exp, Log, Erf, Tanh, Sigmoid, Floor, Ceil,
 * Round, the trigonometric and hyperbolic functions (float32/float64), Neg,
 * Abs, Sign (also integers), and the bool-valued IsNaN, IsInf. float32 uses
 * the float libm functions, matching what numpy computes for the ONNX tests
 * (exp, log, erf, tanh and sigmoid in their vector form, core/vmath.h). */
#include "core/vmath.h"
#include "ops/elementwise.h"

static korch_status infer_float_unary(korch_op_ctx *ctx) {
    KORCH_TRY(korch_ew_require(ctx, 0, korch_ew_is_float, "float32 and float64"));
    korch_op_set_output(ctx, 0, ctx->inputs[0]->dtype, &ctx->inputs[0]->shape);
    return KORCH_OK;
}

static bool is_float_or_signed(korch_dtype d) { return korch_ew_is_float(d) || korch_ew_is_signed(d); }

static korch_status infer_signed_unary(korch_op_ctx *ctx) {
    KORCH_TRY(korch_ew_require(ctx, 0, is_float_or_signed, "float32, float64 and the signed integer dtypes"));
    korch_op_set_output(ctx, 0, ctx->inputs[0]->dtype, &ctx->inputs[0]->shape);
    return KORCH_OK;
}

static korch_status infer_numeric_unary(korch_op_ctx *ctx) {
    KORCH_TRY(korch_ew_require(ctx, 0, korch_ew_is_numeric, "float32, float64 and the integer dtypes"));
    korch_op_set_output(ctx, 0, ctx->inputs[0]->dtype, &ctx->inputs[0]->shape);
    return KORCH_OK;
}

#define UNARY_CASE(DT, T, EXPR)                                                                    \
    case DT: KORCH_EW_LOOP1(n, T, ctx->inputs[0]->data, T, ctx->outputs[0]->data, EXPR); return KORCH_OK;

#define UNARY_RUN(name, CASES)                                                                     \
    static korch_status run_##name(korch_op_ctx *ctx) {                                            \
        int64_t n = korch_tensor_numel(ctx->outputs[0]);                                           \
        switch (ctx->inputs[0]->dtype) {                                                           \
            CASES                                                                                  \
        default: break;                                                                            \
        }                                                                                          \
        return korch_op_error(ctx, KORCH_ERR_UNSUPPORTED, "dtype %s is not supported",             \
                              korch_dtype_name(ctx->inputs[0]->dtype));                            \
    }

#define FLOAT_UNARY(name, F32, F64)                                                                \
    UNARY_RUN(name, UNARY_CASE(KORCH_DTYPE_FLOAT32, float, F32) UNARY_CASE(KORCH_DTYPE_FLOAT64, double, F64))

FLOAT_UNARY(sqrt, sqrtf(a), sqrt(a))
FLOAT_UNARY(reciprocal, 1.0f / a, 1.0 / a)
/* The transcendental ones in float32 through core/vmath.h: the float libm
 * formulas (expf, 1 / (1 + expf(-x)), ...) in glibc's vector variants, a
 * few ulp from the scalar calls and several times faster where the
 * reference spends most of its time outside convolutions. */
#define VM_FLOAT_UNARY(name, FN, F64)                                                              \
    UNARY_RUN(name,                                                                                \
              case KORCH_DTYPE_FLOAT32                                                             \
              : korch_vm_f32_parallel(FN, ctx->inputs[0]->data, ctx->outputs[0]->data, n);        \
              return KORCH_OK; UNARY_CASE(KORCH_DTYPE_FLOAT64, double, F64))

VM_FLOAT_UNARY(exp, KORCH_VM_EXP, exp(a))
VM_FLOAT_UNARY(log, KORCH_VM_LOG, log(a))
VM_FLOAT_UNARY(erf, KORCH_VM_ERF, erf(a))
VM_FLOAT_UNARY(tanh, KORCH_VM_TANH, tanh(a))
VM_FLOAT_UNARY(sigmoid, KORCH_VM_SIGMOID, 1.0 / (1.0 + exp(-a)))
FLOAT_UNARY(floor, floorf(a), floor(a))
FLOAT_UNARY(ceil, ceilf(a), ceil(a))
FLOAT_UNARY(sin, sinf(a), sin(a))
FLOAT_UNARY(cos, cosf(a), cos(a))
FLOAT_UNARY(tan, tanf(a), tan(a))
FLOAT_UNARY(asin, asinf(a), asin(a))
FLOAT_UNARY(acos, acosf(a), acos(a))
FLOAT_UNARY(atan, atanf(a), atan(a))
FLOAT_UNARY(sinh, sinhf(a), sinh(a))
FLOAT_UNARY(cosh, coshf(a), cosh(a))
FLOAT_UNARY(asinh, asinhf(a), asinh(a))
FLOAT_UNARY(acosh, acoshf(a), acosh(a))
FLOAT_UNARY(atanh, atanhf(a), atanh(a))
/* halves go to the even neighbour (the default rounding mode), as numpy.round */
FLOAT_UNARY(round, nearbyintf(a), nearbyint(a))

/* Integer negation goes through uint64 so that -INT_MIN wraps instead of being UB. */
#define SIGNED_CASES(EXPR)                                                                         \
    UNARY_CASE(KORCH_DTYPE_INT8, int8_t, EXPR)                                                     \
    UNARY_CASE(KORCH_DTYPE_INT16, int16_t, EXPR)                                                   \
    UNARY_CASE(KORCH_DTYPE_INT32, int32_t, EXPR)                                                   \
    UNARY_CASE(KORCH_DTYPE_INT64, int64_t, EXPR)
#define UNSIGNED_CASES(EXPR)                                                                       \
    UNARY_CASE(KORCH_DTYPE_UINT8, uint8_t, EXPR)                                                   \
    UNARY_CASE(KORCH_DTYPE_UINT16, uint16_t, EXPR)                                                 \
    UNARY_CASE(KORCH_DTYPE_UINT32, uint32_t, EXPR)                                                 \
    UNARY_CASE(KORCH_DTYPE_UINT64, uint64_t, EXPR)

UNARY_RUN(neg, UNARY_CASE(KORCH_DTYPE_FLOAT32, float, -a) UNARY_CASE(KORCH_DTYPE_FLOAT64, double, -a)
                   SIGNED_CASES(0u - (uint64_t)a))
UNARY_RUN(abs, UNARY_CASE(KORCH_DTYPE_FLOAT32, float, fabsf(a)) UNARY_CASE(KORCH_DTYPE_FLOAT64, double, fabs(a))
                   SIGNED_CASES(a < 0 ? 0u - (uint64_t)a : (uint64_t)a) UNSIGNED_CASES(a))

/* Sign keeps NaN (a NaN fails both comparisons and is returned as is). */
UNARY_RUN(sign, UNARY_CASE(KORCH_DTYPE_FLOAT32, float, a > 0 ? 1.0f : a < 0 ? -1.0f : a)
                    UNARY_CASE(KORCH_DTYPE_FLOAT64, double, a > 0 ? 1.0 : a < 0 ? -1.0 : a)
                        SIGNED_CASES((a > 0) - (a < 0)) UNSIGNED_CASES(a > 0))

#define UNARY_ROW(Name, lo, first, infer_fn)                                                       \
    const korch_op_def korch_op_def_##Name = {                                                     \
        .kind = KORCH_OP_##Name, .op_type = #Name, .opset_min = first, .opset_max = 18,            \
        .min_inputs = 1, .max_inputs = 1, .min_outputs = 1, .max_outputs = 1,                      \
        .infer = infer_fn, .run = run_##lo,                                                        \
    };
UNARY_ROW(Sqrt, sqrt, 1, infer_float_unary)
UNARY_ROW(Reciprocal, reciprocal, 1, infer_float_unary)
UNARY_ROW(Exp, exp, 1, infer_float_unary)
UNARY_ROW(Log, log, 1, infer_float_unary)
UNARY_ROW(Erf, erf, 9, infer_float_unary)
UNARY_ROW(Tanh, tanh, 1, infer_float_unary)
UNARY_ROW(Sigmoid, sigmoid, 1, infer_float_unary)
UNARY_ROW(Floor, floor, 1, infer_float_unary)
UNARY_ROW(Ceil, ceil, 1, infer_float_unary)
UNARY_ROW(Sin, sin, 7, infer_float_unary)
UNARY_ROW(Cos, cos, 7, infer_float_unary)
UNARY_ROW(Tan, tan, 7, infer_float_unary)
UNARY_ROW(Asin, asin, 7, infer_float_unary)
UNARY_ROW(Acos, acos, 7, infer_float_unary)
UNARY_ROW(Atan, atan, 7, infer_float_unary)
UNARY_ROW(Sinh, sinh, 9, infer_float_unary)
UNARY_ROW(Cosh, cosh, 9, infer_float_unary)
UNARY_ROW(Asinh, asinh, 9, infer_float_unary)
UNARY_ROW(Acosh, acosh, 9, infer_float_unary)
UNARY_ROW(Atanh, atanh, 9, infer_float_unary)
UNARY_ROW(Round, round, 11, infer_float_unary)
UNARY_ROW(Neg, neg, 1, infer_signed_unary)
UNARY_ROW(Abs, abs, 1, infer_numeric_unary)
UNARY_ROW(Sign, sign, 9, infer_numeric_unary)

/* ---- IsNaN, IsInf: float in, bool out ---- */

static korch_status infer_float_to_bool(korch_op_ctx *ctx) {
    KORCH_TRY(korch_ew_require(ctx, 0, korch_ew_is_float, "float32 and float64"));
    korch_op_set_output(ctx, 0, KORCH_DTYPE_BOOL, &ctx->inputs[0]->shape);
    return KORCH_OK;
}

#define TO_BOOL_RUN(name, EXPR)                                                                    \
    static korch_status run_##name(korch_op_ctx *ctx) {                                            \
        int64_t n = korch_tensor_numel(ctx->outputs[0]);                                           \
        bool neg = korch_node_attr_int(ctx->node, "detect_negative", 1) != 0;                      \
        bool pos = korch_node_attr_int(ctx->node, "detect_positive", 1) != 0;                      \
        (void)neg, (void)pos;                                                                      \
        if (ctx->inputs[0]->dtype == KORCH_DTYPE_FLOAT32)                                          \
            KORCH_EW_LOOP1(n, float, ctx->inputs[0]->data, uint8_t, ctx->outputs[0]->data, (EXPR) ? 1 : 0); \
        else                                                                                       \
            KORCH_EW_LOOP1(n, double, ctx->inputs[0]->data, uint8_t, ctx->outputs[0]->data, (EXPR) ? 1 : 0); \
        return KORCH_OK;                                                                           \
    }
TO_BOOL_RUN(is_nan, isnan(a))
TO_BOOL_RUN(is_inf, isinf(a) && (a > 0 ? pos : neg))

UNARY_ROW(IsNaN, is_nan, 9, infer_float_to_bool)
UNARY_ROW(IsInf, is_inf, 10, infer_float_to_bool)
