/* Reductions: ReduceSum, ReduceMean, ReduceMax, ReduceMin, ReduceProd,
 * ReduceL1, ReduceL2, ReduceSumSquare, ReduceLogSum, ReduceLogSumExp.
 * Axes are an attribute, or from ReduceSum-13 and every Reduce-18 an optional
 * constant input. No axes reduces everything, unless noop_with_empty_axes is
 * set (then the op is the identity). Floats accumulate in double; integers in
 * int64 with wrap-around (Mean truncates; L2 and the logs go through double). */
#include <string.h>

#include "ops/elementwise.h"
#include "ops/reduce_layout.h"

typedef enum {
    R_SUM, R_MEAN, R_MAX, R_MIN, R_PROD, R_L1, R_L2, R_SUM_SQUARE, R_LOG_SUM, R_LOG_SUM_EXP
} reduce_kind;

static bool axes_are_input(const korch_op_ctx *ctx) {
    return ctx->node->opset >= 18 || (ctx->node->opset >= 13 && strcmp(ctx->node->op_type, "ReduceSum") == 0);
}

/* Which dims are reduced. */
static korch_status reduce_mask(const korch_op_ctx *ctx, bool *mask) {
    int rank = ctx->inputs[0]->shape.rank;
    int64_t axes[KORCH_MAX_RANK];
    int count = 0;
    if (axes_are_input(ctx)) {
        if (korch_node_attr(ctx->node, "axes"))
            return korch_op_error(ctx, KORCH_ERR_INVALID_MODEL, "axes are an input at this opset, not an attribute");
        if (korch_op_has_input(ctx, 1)) KORCH_TRY(korch_op_read_ints(ctx, 1, "axes", axes, KORCH_MAX_RANK, &count));
    } else {
        if (korch_op_has_input(ctx, 1))
            return korch_op_error(ctx, KORCH_ERR_INVALID_MODEL, "axes are an attribute at this opset, not an input");
        const int64_t *attr = NULL;
        int n = korch_node_attr_ints(ctx->node, "axes", &attr);
        if (n > KORCH_MAX_RANK)
            return korch_op_error(ctx, KORCH_ERR_INVALID_MODEL, "%d axes for an input of rank %d", n, rank);
        for (int i = 0; i < n; i++) axes[i] = attr[i];
        count = n < 0 ? 0 : n;
    }
    bool noop = axes_are_input(ctx) && korch_node_attr_int(ctx->node, "noop_with_empty_axes", 0) != 0;
    for (int d = 0; d < rank; d++) mask[d] = count == 0 && !noop;
    for (int i = 0; i < count; i++) {
        int d = korch_axis_normalize(axes[i], rank);
        if (d < 0)
            return korch_op_error(ctx, KORCH_ERR_INVALID_MODEL, "axis %lld is out of range for rank %d",
                                  (long long)axes[i], rank);
        if (mask[d])
            return korch_op_error(ctx, KORCH_ERR_INVALID_MODEL, "axis %lld is given twice", (long long)axes[i]);
        mask[d] = true;
    }
    return KORCH_OK;
}

static bool is_supported(korch_dtype d) {
    return korch_ew_is_float(d) || d == KORCH_DTYPE_INT32 || d == KORCH_DTYPE_INT64;
}

static bool is_8bit(korch_dtype d) { return d == KORCH_DTYPE_UINT8 || d == KORCH_DTYPE_INT8; }

static korch_status infer_reduce(korch_op_ctx *ctx) {
    /* ReduceMax and ReduceMin take 8-bit tensors from opset 12 (fission
     * writes them for MaxPool of a quantized tensor) */
    const char *op = ctx->node->op_type;
    bool extreme = strcmp(op, "ReduceMax") == 0 || strcmp(op, "ReduceMin") == 0;
    if (!(extreme && ctx->node->opset >= 12 && is_8bit(ctx->inputs[0]->dtype)))
        KORCH_TRY(korch_ew_require(ctx, 0, is_supported, "float32, float64, int32 and int64"));
    bool mask[KORCH_MAX_RANK];
    KORCH_TRY(reduce_mask(ctx, mask));
    bool keepdims = korch_node_attr_int(ctx->node, "keepdims", 1) != 0;
    const korch_shape *x = &ctx->inputs[0]->shape;
    korch_shape out = {0};
    for (int d = 0; d < x->rank; d++) {
        if (!mask[d]) out.dims[out.rank++] = x->dims[d];
        else if (keepdims) out.dims[out.rank++] = 1;
    }
    korch_op_set_output(ctx, 0, ctx->inputs[0]->dtype, &out);
    return KORCH_OK;
}

/* Float reduction of one output element, in double. NaN propagates through Max/Min. */
#define REDUCE_FLOAT(T)                                                                                        \
    static double reduce_##T(reduce_kind kind, const T *x, const korch_reduce_layout *L, int64_t base) {       \
        double acc = 0, n = (double)L->red_count;                                                              \
        switch (kind) {                                                                                        \
        case R_SUM: KORCH_REDUCE_VISIT(T, x, L, base, acc += v); return acc;                                   \
        case R_MEAN: KORCH_REDUCE_VISIT(T, x, L, base, acc += v); return acc / n;                              \
        case R_L1: KORCH_REDUCE_VISIT(T, x, L, base, acc += fabs((double)v)); return acc;                      \
        case R_L2: KORCH_REDUCE_VISIT(T, x, L, base, acc += (double)v * v); return sqrt(acc);                  \
        case R_SUM_SQUARE: KORCH_REDUCE_VISIT(T, x, L, base, acc += (double)v * v); return acc;                \
        case R_LOG_SUM: KORCH_REDUCE_VISIT(T, x, L, base, acc += v); return log(acc);                          \
        case R_PROD: acc = 1; KORCH_REDUCE_VISIT(T, x, L, base, acc *= v); return acc;                         \
        case R_MAX:                                                                                            \
            acc = -INFINITY;                                                                                   \
            KORCH_REDUCE_VISIT(T, x, L, base, if (v > acc || isnan(v)) acc = v);                               \
            return acc;                                                                                        \
        case R_MIN:                                                                                            \
            acc = INFINITY;                                                                                    \
            KORCH_REDUCE_VISIT(T, x, L, base, if (v < acc || isnan(v)) acc = v);                               \
            return acc;                                                                                        \
        case R_LOG_SUM_EXP: {                                                                                  \
            double max = reduce_##T(R_MAX, x, L, base);                                                        \
            if (isinf(max)) return max; /* all -inf (or empty), or a +inf: the max decides */                  \
            KORCH_REDUCE_VISIT(T, x, L, base, acc += exp((double)v - max));                                    \
            return max + log(acc);                                                                             \
        }                                                                                                      \
        }                                                                                                      \
        return 0;                                                                                              \
    }
REDUCE_FLOAT(float)
REDUCE_FLOAT(double)

/* Integer reduction of one output element: exact in int64 with wrap-around;
 * an empty Max/Min yields the type's lowest/highest value. */
#define REDUCE_INT(T, LOWEST, HIGHEST)                                                                         \
    static T reduce_##T(reduce_kind kind, const T *x, const korch_reduce_layout *L, int64_t base) {            \
        uint64_t acc = 0;                                                                                      \
        double dacc = 0;                                                                                       \
        int64_t ext;                                                                                           \
        switch (kind) {                                                                                        \
        case R_SUM: KORCH_REDUCE_VISIT(T, x, L, base, acc += (uint64_t)v); return (T)acc;                      \
        case R_MEAN:                                                                                           \
            KORCH_REDUCE_VISIT(T, x, L, base, acc += (uint64_t)v);                                             \
            return (T)korch_ew_div_i64((int64_t)acc, L->red_count);                                            \
        case R_L1: KORCH_REDUCE_VISIT(T, x, L, base, acc += v < 0 ? 0u - (uint64_t)v : (uint64_t)v); return (T)acc; \
        case R_SUM_SQUARE: KORCH_REDUCE_VISIT(T, x, L, base, acc += (uint64_t)v * (uint64_t)v); return (T)acc; \
        case R_PROD: acc = 1; KORCH_REDUCE_VISIT(T, x, L, base, acc *= (uint64_t)v); return (T)acc;            \
        case R_MAX: ext = LOWEST; KORCH_REDUCE_VISIT(T, x, L, base, if (v > ext) ext = v); return (T)ext;      \
        case R_MIN: ext = HIGHEST; KORCH_REDUCE_VISIT(T, x, L, base, if (v < ext) ext = v); return (T)ext;     \
        case R_L2: KORCH_REDUCE_VISIT(T, x, L, base, dacc += (double)v * v); dacc = sqrt(dacc); break;         \
        case R_LOG_SUM: KORCH_REDUCE_VISIT(T, x, L, base, dacc += v); dacc = log(dacc); break;                 \
        case R_LOG_SUM_EXP: {                                                                                  \
            int64_t max = reduce_##T(R_MAX, x, L, base);                                                       \
            KORCH_REDUCE_VISIT(T, x, L, base, dacc += exp((double)v - (double)max));                           \
            dacc = (double)max + log(dacc);                                                                    \
            break;                                                                                             \
        }                                                                                                      \
        }                                                                                                      \
        return (T)korch_ew_saturate_i64(dacc);                                                                 \
    }
REDUCE_INT(int32_t, INT32_MIN, INT32_MAX)
REDUCE_INT(int64_t, INT64_MIN, INT64_MAX)

/* ReduceMax / ReduceMin of an 8-bit tensor (the only kinds inference lets
 * through); an empty one yields the type's lowest/highest value. */
#define REDUCE_8BIT(T, LOWEST, HIGHEST)                                                                        \
    static T reduce_##T(reduce_kind kind, const T *x, const korch_reduce_layout *L, int64_t base) {            \
        int ext = kind == R_MAX ? LOWEST : HIGHEST;                                                            \
        if (kind == R_MAX) KORCH_REDUCE_VISIT(T, x, L, base, if (v > ext) ext = v);                           \
        else KORCH_REDUCE_VISIT(T, x, L, base, if (v < ext) ext = v);                                          \
        return (T)ext;                                                                                         \
    }
REDUCE_8BIT(uint8_t, 0, UINT8_MAX)
REDUCE_8BIT(int8_t, INT8_MIN, INT8_MAX)

static korch_status run_reduce(korch_op_ctx *ctx, reduce_kind kind) {
    const korch_tensor *x = ctx->inputs[0];
    korch_tensor *y = ctx->outputs[0];
    bool mask[KORCH_MAX_RANK];
    KORCH_TRY(reduce_mask(ctx, mask));
    korch_reduce_layout L;
    korch_reduce_layout_init(&L, &x->shape, mask);
    korch_dtype dtype = x->dtype;
#pragma omp parallel for schedule(static) if (L.out_count > 1 && L.out_count * L.red_count >= KORCH_EW_PARALLEL_MIN)
    for (int64_t o = 0; o < L.out_count; o++) {
        int64_t base = korch_reduce_base(&L, o);
        switch (dtype) {
        case KORCH_DTYPE_FLOAT32: ((float *)y->data)[o] = (float)reduce_float(kind, x->data, &L, base); break;
        case KORCH_DTYPE_FLOAT64: ((double *)y->data)[o] = reduce_double(kind, x->data, &L, base); break;
        case KORCH_DTYPE_INT32: ((int32_t *)y->data)[o] = reduce_int32_t(kind, x->data, &L, base); break;
        case KORCH_DTYPE_INT64: ((int64_t *)y->data)[o] = reduce_int64_t(kind, x->data, &L, base); break;
        case KORCH_DTYPE_UINT8: ((uint8_t *)y->data)[o] = reduce_uint8_t(kind, x->data, &L, base); break;
        case KORCH_DTYPE_INT8: ((int8_t *)y->data)[o] = reduce_int8_t(kind, x->data, &L, base); break;
        default: break; /* refused by inference */
        }
    }
    return KORCH_OK;
}

/* One operation per input element (three for LogSumExp: max, exp, add). */
static int64_t reduce_flops(const korch_op_ctx *ctx) { return korch_tensor_numel(ctx->inputs[0]); }
static int64_t log_sum_exp_flops(const korch_op_ctx *ctx) { return 3 * korch_tensor_numel(ctx->inputs[0]); }

#define REDUCE_ROW(Name, KIND, flops_fn)                                                                       \
    static korch_status run_##Name(korch_op_ctx *ctx) { return run_reduce(ctx, KIND); }                        \
    const korch_op_def korch_op_def_##Name = {                                                                 \
        .kind = KORCH_OP_##Name, .op_type = #Name, .opset_min = 1, .opset_max = 18,                            \
        .min_inputs = 1, .max_inputs = 2, .min_outputs = 1, .max_outputs = 1,                                  \
        .infer = infer_reduce, .run = run_##Name, .flops = flops_fn,                                           \
    };
REDUCE_ROW(ReduceSum, R_SUM, reduce_flops)
REDUCE_ROW(ReduceMean, R_MEAN, reduce_flops)
REDUCE_ROW(ReduceMax, R_MAX, reduce_flops)
REDUCE_ROW(ReduceMin, R_MIN, reduce_flops)
REDUCE_ROW(ReduceProd, R_PROD, reduce_flops)
REDUCE_ROW(ReduceL1, R_L1, reduce_flops)
REDUCE_ROW(ReduceL2, R_L2, reduce_flops)
REDUCE_ROW(ReduceSumSquare, R_SUM_SQUARE, reduce_flops)
REDUCE_ROW(ReduceLogSum, R_LOG_SUM, reduce_flops)
REDUCE_ROW(ReduceLogSumExp, R_LOG_SUM_EXP, log_sum_exp_flops)
