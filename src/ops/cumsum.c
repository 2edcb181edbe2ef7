/* CumSum along one axis (a constant input), optionally exclusive (each output
 * leaves its own element out) and/or reversed (summing from the end).
 * Floats accumulate in double; integers in int64 with wrap-around. */
#include "ops/elementwise.h"

static bool is_supported(korch_dtype d) {
    return korch_ew_is_float(d) || d == KORCH_DTYPE_INT32 || d == KORCH_DTYPE_INT64;
}

static korch_status cumsum_axis(const korch_op_ctx *ctx, int *axis) {
    int64_t value[1];
    int count = 0;
    KORCH_TRY(korch_op_read_ints(ctx, 1, "axis", value, 1, &count));
    if (count != 1) return korch_op_error(ctx, KORCH_ERR_INVALID_MODEL, "axis input must hold one value");
    *axis = korch_axis_normalize(value[0], ctx->inputs[0]->shape.rank);
    if (*axis < 0)
        return korch_op_error(ctx, KORCH_ERR_INVALID_MODEL, "axis %lld is out of range for rank %d",
                              (long long)value[0], ctx->inputs[0]->shape.rank);
    return KORCH_OK;
}

static korch_status infer_cumsum(korch_op_ctx *ctx) {
    KORCH_TRY(korch_ew_require(ctx, 0, is_supported, "float32, float64, int32 and int64"));
    int axis;
    KORCH_TRY(cumsum_axis(ctx, &axis));
    korch_op_set_output(ctx, 0, ctx->inputs[0]->dtype, &ctx->inputs[0]->shape);
    return KORCH_OK;
}

/* One lane of n elements at stride `stride`; ACC is the accumulator type. */
#define CUMSUM_LANE(T, ACC, ADD)                                                                               \
    static void lane_##T(const T *x, T *y, int64_t n, int64_t stride, bool exclusive, bool reverse) {          \
        ACC acc = 0;                                                                                           \
        for (int64_t k = 0; k < n; k++) {                                                                      \
            int64_t i = (reverse ? n - 1 - k : k) * stride;                                                    \
            ACC next = ADD(acc, x[i]);                                                                         \
            y[i] = (T)(exclusive ? acc : next);                                                                \
            acc = next;                                                                                        \
        }                                                                                                      \
    }
#define ADD_PLAIN(acc, v) ((acc) + (v))
#define ADD_WRAP(acc, v) ((acc) + (uint64_t)(v))
CUMSUM_LANE(float, double, ADD_PLAIN)
CUMSUM_LANE(double, double, ADD_PLAIN)
CUMSUM_LANE(int32_t, uint64_t, ADD_WRAP)
CUMSUM_LANE(int64_t, uint64_t, ADD_WRAP)

static korch_status run_cumsum(korch_op_ctx *ctx) {
    const korch_tensor *x = ctx->inputs[0];
    int axis;
    KORCH_TRY(cumsum_axis(ctx, &axis));
    bool exclusive = korch_node_attr_int(ctx->node, "exclusive", 0) != 0;
    bool reverse = korch_node_attr_int(ctx->node, "reverse", 0) != 0;
    int64_t outer = 1, n = x->shape.dims[axis], inner = 1;
    for (int d = 0; d < axis; d++) outer *= x->shape.dims[d];
    for (int d = axis + 1; d < x->shape.rank; d++) inner *= x->shape.dims[d];
    int64_t lanes = outer * inner;
    void *y = ctx->outputs[0]->data;
    korch_dtype dtype = x->dtype;
#pragma omp parallel for schedule(static) if (lanes * n >= KORCH_EW_PARALLEL_MIN)
    for (int64_t l = 0; l < lanes; l++) {
        int64_t base = (l / inner) * n * inner + l % inner;
        switch (dtype) {
        case KORCH_DTYPE_FLOAT32:
            lane_float((const float *)x->data + base, (float *)y + base, n, inner, exclusive, reverse);
            break;
        case KORCH_DTYPE_FLOAT64:
            lane_double((const double *)x->data + base, (double *)y + base, n, inner, exclusive, reverse);
            break;
        case KORCH_DTYPE_INT32:
            lane_int32_t((const int32_t *)x->data + base, (int32_t *)y + base, n, inner, exclusive, reverse);
            break;
        default:
            lane_int64_t((const int64_t *)x->data + base, (int64_t *)y + base, n, inner, exclusive, reverse);
            break;
        }
    }
    return KORCH_OK;
}

const korch_op_def korch_op_def_CumSum = {
    .kind = KORCH_OP_CumSum, .op_type = "CumSum", .opset_min = 11, .opset_max = 18,
    .min_inputs = 2, .max_inputs = 2, .min_outputs = 1, .max_outputs = 1,
    .infer = infer_cumsum, .run = run_cumsum,
};
