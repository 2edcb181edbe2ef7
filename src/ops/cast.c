/* Cast and CastLike between bool, the integer dtypes, float16, float32 and
 * float64 (not strings, not bfloat16, which korch has no dtype for).
 * Float to integer rounds toward zero and saturates at the target's range,
 * with NaN -> 0: C leaves out-of-range conversions undefined, and ONNX leaves
 * them unspecified. Integer to integer wraps, as numpy's astype does. */
#include <string.h>

#include "ops/elementwise.h"

/* IEEE binary16 <-> binary32, rounding to nearest even. */
static uint16_t half_from_float(float f) {
    uint32_t x;
    memcpy(&x, &f, sizeof x);
    uint16_t sign = (uint16_t)((x >> 16) & 0x8000);
    uint32_t abs = x & 0x7fffffff;
    if (abs >= 0x7f800000) /* inf, or NaN kept quiet with its top payload bits */
        return sign | 0x7c00 | (abs > 0x7f800000 ? 0x200 | ((abs >> 13) & 0x3ff) : 0);
    if (abs >= 0x477ff000) return sign | 0x7c00; /* >= 65520 rounds to inf */
    if (abs < 0x38800000) { /* below 2^-14: a subnormal half, in units of 2^-24 */
        float a;
        memcpy(&a, &abs, sizeof a);
        return sign | (uint16_t)lrintf(a * 16777216.0f);
    }
    uint32_t h = ((abs >> 23) - 127 + 15) << 10 | ((abs & 0x7fffff) >> 13);
    uint32_t rest = abs & 0x1fff;
    if (rest > 0x1000 || (rest == 0x1000 && (h & 1))) h++; /* a carry moves into the exponent, as it should */
    return sign | (uint16_t)h;
}

static float half_to_float(uint16_t h) {
    uint32_t sign = (uint32_t)(h & 0x8000) << 16, exp = (h >> 10) & 0x1f, mant = h & 0x3ff, x;
    if (exp == 0) {
        float f = ldexpf((float)mant, -24);
        return sign ? -f : f;
    }
    if (exp == 31) x = sign | 0x7f800000 | mant << 13;
    else x = sign | (exp - 15 + 127) << 23 | mant << 13;
    float f;
    memcpy(&f, &x, sizeof f);
    return f;
}

static bool is_castable(korch_dtype d) {
    return korch_ew_is_numeric(d) || d == KORCH_DTYPE_BOOL || d == KORCH_DTYPE_FLOAT16;
}

static const char *const CASTABLE = "bool, float16, float32, float64 and the integer dtypes";

/* Cast-1..5 name the target type with a string. */
static korch_status cast_target(const korch_op_ctx *ctx, korch_dtype *out) {
    static const struct {
        const char *name;
        korch_dtype dtype;
    } names[] = {
        {"FLOAT", KORCH_DTYPE_FLOAT32}, {"UINT8", KORCH_DTYPE_UINT8},     {"INT8", KORCH_DTYPE_INT8},
        {"UINT16", KORCH_DTYPE_UINT16}, {"INT16", KORCH_DTYPE_INT16},     {"INT32", KORCH_DTYPE_INT32},
        {"INT64", KORCH_DTYPE_INT64},   {"STRING", KORCH_DTYPE_STRING},   {"BOOL", KORCH_DTYPE_BOOL},
        {"FLOAT16", KORCH_DTYPE_FLOAT16}, {"DOUBLE", KORCH_DTYPE_FLOAT64}, {"UINT32", KORCH_DTYPE_UINT32},
        {"UINT64", KORCH_DTYPE_UINT64},
    };
    const korch_attr *a = korch_node_attr(ctx->node, "to");
    if (!a) return korch_op_error(ctx, KORCH_ERR_INVALID_MODEL, "missing attribute \"to\"");
    if (a->type == KORCH_ATTR_INT) {
        *out = (korch_dtype)a->i;
        if (a->i < 0 || a->i > 64 || !korch_dtype_is_valid((int32_t)a->i))
            return korch_op_error(ctx, KORCH_ERR_INVALID_MODEL, "attribute \"to\" is %lld, not an ONNX data type",
                                  (long long)a->i);
        return KORCH_OK;
    }
    if (a->type == KORCH_ATTR_STRING && a->s)
        for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
            if (strcmp(a->s, names[i].name) == 0) {
                *out = names[i].dtype;
                return KORCH_OK;
            }
    char buf[64];
    return korch_op_error(ctx, KORCH_ERR_INVALID_MODEL, "attribute \"to\" (\"%s\") is not an ONNX data type",
                          a->type == KORCH_ATTR_STRING ? korch_printable(a->s, buf, sizeof buf) : "?");
}

static korch_status infer_cast_to(korch_op_ctx *ctx, korch_dtype to) {
    KORCH_TRY(korch_ew_require(ctx, 0, is_castable, CASTABLE));
    if (!is_castable(to))
        return korch_op_error(ctx, KORCH_ERR_UNSUPPORTED,
                              "cast to %s (ONNX type %d) is not supported; korch supports %s", korch_dtype_name(to),
                              (int)to, CASTABLE);
    korch_op_set_output(ctx, 0, to, &ctx->inputs[0]->shape);
    return KORCH_OK;
}

static korch_status infer_cast(korch_op_ctx *ctx) {
    korch_dtype to = KORCH_DTYPE_UNDEFINED;
    KORCH_TRY(cast_target(ctx, &to));
    return infer_cast_to(ctx, to);
}

static korch_status infer_cast_like(korch_op_ctx *ctx) { return infer_cast_to(ctx, ctx->inputs[1]->dtype); }

/* Element-wise through the widest carrier of the source: double for floats,
 * uint64 for uint64 (above INT64_MAX), int64 for the other integers and bool. */
static korch_status run_cast(korch_op_ctx *ctx) {
    const korch_tensor *x = ctx->inputs[0];
    korch_tensor *y = ctx->outputs[0];
    int64_t n = korch_tensor_numel(y);
    if (x->dtype == y->dtype) {
        size_t bytes = korch_tensor_bytes(y);
        if (bytes) memcpy(y->data, x->data, bytes);
        return KORCH_OK;
    }
    bool from_half = x->dtype == KORCH_DTYPE_FLOAT16, to_half = y->dtype == KORCH_DTYPE_FLOAT16;
    bool from_float = from_half || korch_ew_is_float(x->dtype);
#pragma omp parallel for schedule(static) if (n >= KORCH_EW_PARALLEL_MIN)
    for (int64_t i = 0; i < n; i++) {
        if (from_float) {
            double v = from_half ? half_to_float(((const uint16_t *)x->data)[i]) : korch_tensor_get_f64(x, i);
            if (to_half) ((uint16_t *)y->data)[i] = half_from_float((float)v);
            else korch_ew_set_f64(y, i, v);
        } else if (x->dtype == KORCH_DTYPE_UINT64) {
            uint64_t v = ((const uint64_t *)x->data)[i];
            if (to_half) ((uint16_t *)y->data)[i] = half_from_float((float)v);
            else if (korch_ew_is_float(y->dtype)) korch_ew_set_f64(y, i, (double)v);
            else korch_ew_set_i64(y, i, (int64_t)v);
        } else {
            int64_t v = korch_tensor_get_i64(x, i);
            if (to_half) ((uint16_t *)y->data)[i] = half_from_float((float)v);
            else korch_ew_set_i64(y, i, v);
        }
    }
    return KORCH_OK;
}

const korch_op_def korch_op_def_Cast = {
    .kind = KORCH_OP_Cast, .op_type = "Cast", .opset_min = 1, .opset_max = 18,
    .min_inputs = 1, .max_inputs = 1, .min_outputs = 1, .max_outputs = 1,
    .infer = infer_cast, .run = run_cast,
};

const korch_op_def korch_op_def_CastLike = {
    .kind = KORCH_OP_CastLike, .op_type = "CastLike", .opset_min = 15, .opset_max = 18,
    .min_inputs = 2, .max_inputs = 2, .min_outputs = 1, .max_outputs = 1,
    .infer = infer_cast_like, .run = run_cast,
};
