/* Variadic elementwise ops with broadcasting: Max, Min, Sum, Mean.
 * The output is folded left to right, y = f(f(x0, x1), x2) ..., which is also
 * the order numpy reduces in, so float sums round the same way. */
#include <string.h>

#include "ops/elementwise.h"

static korch_status infer_variadic(korch_op_ctx *ctx, bool (*ok)(korch_dtype), const char *what) {
    for (int i = 0; i < ctx->n_inputs; i++)
        if (!korch_op_has_input(ctx, i))
            return korch_op_error(ctx, KORCH_ERR_INVALID_MODEL, "input %d is empty; every input is required", i);
    KORCH_TRY(korch_ew_require(ctx, 0, ok, what));
    KORCH_TRY(korch_ew_require_same_dtype(ctx, 0, ctx->n_inputs - 1));
    korch_shape out;
    KORCH_TRY(korch_ew_broadcast_all(ctx, 0, ctx->n_inputs - 1, &out));
    korch_op_set_output(ctx, 0, ctx->inputs[0]->dtype, &out);
    return KORCH_OK;
}

static korch_status infer_numeric(korch_op_ctx *ctx) {
    return infer_variadic(ctx, korch_ew_is_numeric, "float32, float64 and the integer dtypes");
}
static korch_status infer_float(korch_op_ctx *ctx) {
    return infer_variadic(ctx, korch_ew_is_float, "float32 and float64");
}

/* y = f(a, b) over a plan; false when the dtype has no kernel. */
typedef bool (*step_fn)(const korch_ew_plan *plan, korch_dtype dtype, const void *pa, const void *pb, void *py);

#define STEP_CASE(DT, T, EXPR)                                                                     \
    case DT: KORCH_EW_LOOP2(plan, T, pa, T, pb, T, py, EXPR); return true;
#define STEP_FN(name, FEXPR, IEXPR)                                                                \
    static bool name(const korch_ew_plan *plan, korch_dtype dtype, const void *pa, const void *pb, void *py) { \
        switch (dtype) {                                                                           \
            STEP_CASE(KORCH_DTYPE_FLOAT32, float, FEXPR)                                           \
            STEP_CASE(KORCH_DTYPE_FLOAT64, double, FEXPR)                                          \
            STEP_CASE(KORCH_DTYPE_INT8, int8_t, IEXPR)                                             \
            STEP_CASE(KORCH_DTYPE_INT16, int16_t, IEXPR)                                           \
            STEP_CASE(KORCH_DTYPE_INT32, int32_t, IEXPR)                                           \
            STEP_CASE(KORCH_DTYPE_INT64, int64_t, IEXPR)                                           \
            STEP_CASE(KORCH_DTYPE_UINT8, uint8_t, IEXPR)                                           \
            STEP_CASE(KORCH_DTYPE_UINT16, uint16_t, IEXPR)                                         \
            STEP_CASE(KORCH_DTYPE_UINT32, uint32_t, IEXPR)                                         \
            STEP_CASE(KORCH_DTYPE_UINT64, uint64_t, IEXPR)                                         \
        default: return false;                                                                     \
        }                                                                                          \
    }

/* NaN wins in float Max/Min, as in numpy.maximum. */
STEP_FN(step_max, (a > b || isnan(a)) ? a : b, a > b ? a : b)
STEP_FN(step_min, (a < b || isnan(a)) ? a : b, a < b ? a : b)
STEP_FN(step_sum, a + b, (uint64_t)a + (uint64_t)b)

static korch_status run_fold(korch_op_ctx *ctx, step_fn step) {
    korch_tensor *y = ctx->outputs[0];
    korch_dtype dtype = ctx->inputs[0]->dtype;
    if (ctx->n_inputs == 1) {
        size_t bytes = korch_tensor_bytes(y);
        if (bytes) memcpy(y->data, ctx->inputs[0]->data, bytes);
        return KORCH_OK;
    }
    for (int k = 1; k < ctx->n_inputs; k++) {
        /* First step reads x0 and x1, broadcast straight into y's shape;
         * later steps update y in place (same index in and out). */
        const korch_tensor *a = k == 1 ? ctx->inputs[0] : y, *b = ctx->inputs[k];
        const korch_shape *shapes[2] = {&a->shape, &b->shape};
        korch_ew_plan plan;
        korch_ew_plan_init(&plan, &y->shape, 2, shapes);
        if (!step(&plan, dtype, a->data, b->data, y->data))
            return korch_op_error(ctx, KORCH_ERR_UNSUPPORTED, "dtype %s is not supported", korch_dtype_name(dtype));
    }
    return KORCH_OK;
}

static korch_status run_max(korch_op_ctx *ctx) { return run_fold(ctx, step_max); }
static korch_status run_min(korch_op_ctx *ctx) { return run_fold(ctx, step_min); }
static korch_status run_sum(korch_op_ctx *ctx) { return run_fold(ctx, step_sum); }

static korch_status run_mean(korch_op_ctx *ctx) {
    KORCH_TRY(run_fold(ctx, step_sum));
    korch_tensor *y = ctx->outputs[0];
    int64_t n = korch_tensor_numel(y);
    if (y->dtype == KORCH_DTYPE_FLOAT32) {
        float count = (float)ctx->n_inputs;
        KORCH_EW_LOOP1(n, float, y->data, float, y->data, a / count);
    } else {
        double count = (double)ctx->n_inputs;
        KORCH_EW_LOOP1(n, double, y->data, double, y->data, a / count);
    }
    return KORCH_OK;
}

/* One operation per input after the first, per output element (Mean adds a division). */
static int64_t fold_flops(const korch_op_ctx *ctx) {
    return (int64_t)(ctx->n_inputs - 1) * korch_tensor_numel(ctx->outputs[0]);
}
static int64_t mean_flops(const korch_op_ctx *ctx) {
    return (int64_t)ctx->n_inputs * korch_tensor_numel(ctx->outputs[0]);
}

/* At most 16 inputs: the frontend's inference passes that many to an op. */
#define VARIADIC_ROW(Name, lo, infer_fn, flops_fn)                                                 \
    const korch_op_def korch_op_def_##Name = {                                                     \
        .kind = KORCH_OP_##Name, .op_type = #Name, .opset_min = 1, .opset_max = 18,                \
        .min_inputs = 1, .max_inputs = 16, .min_outputs = 1, .max_outputs = 1,                     \
        .infer = infer_fn, .run = run_##lo, .flops = flops_fn,                                     \
    };
VARIADIC_ROW(Max, max, infer_numeric, fold_flops)
VARIADIC_ROW(Min, min, infer_numeric, fold_flops)
VARIADIC_ROW(Sum, sum, infer_numeric, fold_flops)
VARIADIC_ROW(Mean, mean, infer_float, mean_flops)
