/* ArgMax and ArgMin: the int64 index of the extreme along one axis (default
 * 0), the first one on ties unless select_last_index (opset 12+). As in
 * numpy, a NaN counts as the extreme, so the first NaN wins. */
#include "ops/elementwise.h"

static bool is_supported(korch_dtype d) {
    return korch_ew_is_float(d) || d == KORCH_DTYPE_INT32 || d == KORCH_DTYPE_INT64;
}

static korch_status arg_axis(const korch_op_ctx *ctx, int *axis) {
    int rank = ctx->inputs[0]->shape.rank;
    int64_t attr = korch_node_attr_int(ctx->node, "axis", 0);
    *axis = korch_axis_normalize(attr, rank);
    if (*axis < 0)
        return korch_op_error(ctx, KORCH_ERR_INVALID_MODEL, "axis %lld is out of range for rank %d", (long long)attr,
                              rank);
    if (ctx->inputs[0]->shape.dims[*axis] == 0)
        return korch_op_error(ctx, KORCH_ERR_SHAPE, "axis %d is empty: there is no extreme to index", *axis);
    return KORCH_OK;
}

static korch_status infer_arg(korch_op_ctx *ctx) {
    KORCH_TRY(korch_ew_require(ctx, 0, is_supported, "float32, float64, int32 and int64"));
    int axis;
    KORCH_TRY(arg_axis(ctx, &axis));
    const korch_shape *x = &ctx->inputs[0]->shape;
    korch_shape out = *x;
    if (korch_node_attr_int(ctx->node, "keepdims", 1)) {
        out.dims[axis] = 1;
    } else {
        for (int d = axis; d + 1 < x->rank; d++) out.dims[d] = x->dims[d + 1];
        out.rank--;
    }
    korch_op_set_output(ctx, 0, KORCH_DTYPE_INT64, &out);
    return KORCH_OK;
}

/* Index of the extreme among n elements at x[0], x[stride], ...: `better`
 * is > for ArgMax and < for ArgMin; `last` lets ties move the index on. */
#define ARG_LANE(T, IS_NAN)                                                                        \
    static int64_t lane_##T(const T *x, int64_t n, int64_t stride, bool max, bool last) {          \
        int64_t best = 0;                                                                          \
        T v0 = x[0];                                                                               \
        if (IS_NAN(v0)) return 0;                                                                  \
        for (int64_t k = 1; k < n; k++) {                                                          \
            T v = x[k * stride];                                                                   \
            if (IS_NAN(v)) return k;                                                               \
            bool better = max ? v > v0 : v < v0;                                                   \
            if (better || (last && v == v0)) v0 = v, best = k;                                     \
        }                                                                                          \
        return best;                                                                               \
    }
#define NEVER_NAN(v) ((void)(v), false)
ARG_LANE(float, isnan)
ARG_LANE(double, isnan)
ARG_LANE(int32_t, NEVER_NAN)
ARG_LANE(int64_t, NEVER_NAN)

static korch_status run_arg(korch_op_ctx *ctx, bool max) {
    const korch_tensor *x = ctx->inputs[0];
    int axis;
    KORCH_TRY(arg_axis(ctx, &axis));
    int64_t outer = 1, n = x->shape.dims[axis], inner = 1;
    for (int d = 0; d < axis; d++) outer *= x->shape.dims[d];
    for (int d = axis + 1; d < x->shape.rank; d++) inner *= x->shape.dims[d];
    bool last = korch_node_attr_int(ctx->node, "select_last_index", 0) != 0;
    int64_t *y = ctx->outputs[0]->data, lanes = outer * inner;
    korch_dtype dtype = x->dtype;
#pragma omp parallel for schedule(static) if (lanes * n >= KORCH_EW_PARALLEL_MIN)
    for (int64_t l = 0; l < lanes; l++) {
        int64_t base = (l / inner) * n * inner + l % inner;
        switch (dtype) {
        case KORCH_DTYPE_FLOAT32: y[l] = lane_float((const float *)x->data + base, n, inner, max, last); break;
        case KORCH_DTYPE_FLOAT64: y[l] = lane_double((const double *)x->data + base, n, inner, max, last); break;
        case KORCH_DTYPE_INT32: y[l] = lane_int32_t((const int32_t *)x->data + base, n, inner, max, last); break;
        default: y[l] = lane_int64_t((const int64_t *)x->data + base, n, inner, max, last); break;
        }
    }
    return KORCH_OK;
}

static korch_status run_argmax(korch_op_ctx *ctx) { return run_arg(ctx, true); }
static korch_status run_argmin(korch_op_ctx *ctx) { return run_arg(ctx, false); }

/* A comparison per input element. */
static int64_t arg_flops(const korch_op_ctx *ctx) { return korch_tensor_numel(ctx->inputs[0]); }

const korch_op_def korch_op_def_ArgMax = {
    .kind = KORCH_OP_ArgMax, .op_type = "ArgMax", .opset_min = 1, .opset_max = 18,
    .min_inputs = 1, .max_inputs = 1, .min_outputs = 1, .max_outputs = 1,
    .infer = infer_arg, .run = run_argmax, .flops = arg_flops,
};

const korch_op_def korch_op_def_ArgMin = {
    .kind = KORCH_OP_ArgMin, .op_type = "ArgMin", .opset_min = 1, .opset_max = 18,
    .min_inputs = 1, .max_inputs = 1, .min_outputs = 1, .max_outputs = 1,
    .infer = infer_arg, .run = run_argmin, .flops = arg_flops,
};
