/* Cast and CastLike between bool, the integer dtypes, float16, bfloat16,
 * float32 and float64 (not strings). To float16 / bfloat16 rounds once, to
 * nearest even, from the source's own precision (core/half.c).
 * Float to integer rounds toward zero and saturates at the target's range,
 * with NaN -> 0: C leaves out-of-range conversions undefined, and ONNX leaves
 * them unspecified. Integer to integer wraps, as numpy's astype does. */
#include <string.h>

#include "core/half.h"
#include "ops/elementwise.h"

static bool is_castable(korch_dtype d) {
    return korch_ew_is_numeric(d) || d == KORCH_DTYPE_BOOL || korch_dtype_is_half(d);
}

static const char *const CASTABLE = "bool, float16, bfloat16, float32, float64 and the integer dtypes";

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
        {"UINT64", KORCH_DTYPE_UINT64}, {"BFLOAT16", KORCH_DTYPE_BFLOAT16},
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
    bool from_half = korch_dtype_is_half(x->dtype), to_half = korch_dtype_is_half(y->dtype);
    bool from_float = from_half || korch_ew_is_float(x->dtype);
#pragma omp parallel for schedule(static) if (n >= KORCH_EW_PARALLEL_MIN)
    for (int64_t i = 0; i < n; i++) {
        if (from_float) {
            double v = from_half ? korch_half_load(x->dtype, x->data, i) : korch_tensor_get_f64(x, i);
            if (to_half) korch_half_store(y->dtype, y->data, i, v);
            else korch_ew_set_f64(y, i, v);
        } else if (x->dtype == KORCH_DTYPE_UINT64) {
            uint64_t v = ((const uint64_t *)x->data)[i];
            if (to_half) korch_half_store(y->dtype, y->data, i, (double)v);
            else if (korch_ew_is_float(y->dtype)) korch_ew_set_f64(y, i, (double)v);
            else korch_ew_set_i64(y, i, (int64_t)v);
        } else {
            int64_t v = korch_tensor_get_i64(x, i);
            if (to_half) korch_half_store(y->dtype, y->data, i, (double)v);
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
