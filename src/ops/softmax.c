/* Softmax, LogSoftmax and Hardmax over one axis.
 * Opset 13+: the single axis `axis` (default -1). Before: the input is seen as
 * 2-D, [prod(dims[:axis]), prod(dims[axis:])] (default axis 1), and the op runs
 * over the second dim. Both are the same kernel over an [outer, n, inner]
 * view, where the opset < 13 case has inner == 1.
 * Softmax subtracts the maximum before exponentiating, so large inputs do not
 * overflow, and sums in double. */
#include "ops/elementwise.h"

typedef struct softmax_view {
    int64_t outer, n, inner;
} softmax_view;

static korch_status softmax_view_of(const korch_op_ctx *ctx, softmax_view *v) {
    const korch_shape *s = &ctx->inputs[0]->shape;
    bool coerce_2d = ctx->node->opset < 13;
    int64_t axis_attr = korch_node_attr_int(ctx->node, "axis", coerce_2d ? 1 : -1);
    int axis;
    if (coerce_2d) /* axis == rank is allowed: the second dim is then empty (size 1) */
        axis = axis_attr == s->rank ? s->rank : korch_axis_normalize(axis_attr, s->rank);
    else
        axis = korch_axis_normalize(axis_attr, s->rank);
    if (axis < 0)
        return korch_op_error(ctx, KORCH_ERR_INVALID_MODEL, "axis %lld is out of range for rank %d",
                              (long long)axis_attr, s->rank);
    v->outer = v->n = v->inner = 1;
    for (int i = 0; i < axis; i++) v->outer *= s->dims[i];
    if (coerce_2d) {
        for (int i = axis; i < s->rank; i++) v->n *= s->dims[i];
    } else {
        v->n = s->dims[axis];
        for (int i = axis + 1; i < s->rank; i++) v->inner *= s->dims[i];
    }
    return KORCH_OK;
}

static korch_status infer_softmax(korch_op_ctx *ctx) {
    KORCH_TRY(korch_ew_require(ctx, 0, korch_ew_is_float, "float32 and float64"));
    softmax_view v;
    KORCH_TRY(softmax_view_of(ctx, &v));
    korch_op_set_output(ctx, 0, ctx->inputs[0]->dtype, &ctx->inputs[0]->shape);
    return KORCH_OK;
}

typedef enum { SOFTMAX, LOG_SOFTMAX, HARDMAX } softmax_kind;

/* One lane: n elements at x[0], x[stride], ... The kernel per element type;
 * EXP is expf or exp. */
#define SOFTMAX_LANE(T, EXP, LOG)                                                                  \
    static void lane_##T(softmax_kind kind, const T *x, T *y, int64_t n, int64_t stride) {         \
        T max = x[0];                                                                              \
        int64_t argmax = 0;                                                                        \
        for (int64_t k = 1; k < n; k++)                                                            \
            if (x[k * stride] > max) max = x[k * stride], argmax = k;                              \
        if (kind == HARDMAX) {                                                                     \
            for (int64_t k = 0; k < n; k++) y[k * stride] = k == argmax ? 1 : 0;                   \
            return;                                                                                \
        }                                                                                          \
        double sum = 0;                                                                            \
        for (int64_t k = 0; k < n; k++) {                                                          \
            T e = EXP(x[k * stride] - max);                                                        \
            if (kind == SOFTMAX) y[k * stride] = e;                                                \
            sum += e;                                                                              \
        }                                                                                          \
        if (kind == SOFTMAX) {                                                                     \
            T inv = (T)(1.0 / sum);                                                                \
            for (int64_t k = 0; k < n; k++) y[k * stride] *= inv;                                  \
        } else {                                                                                   \
            T log_sum = (T)LOG(sum);                                                               \
            for (int64_t k = 0; k < n; k++) y[k * stride] = x[k * stride] - max - log_sum;         \
        }                                                                                          \
    }
SOFTMAX_LANE(float, expf, log)
SOFTMAX_LANE(double, exp, log)

static korch_status run_kind(korch_op_ctx *ctx, softmax_kind kind) {
    softmax_view v;
    KORCH_TRY(softmax_view_of(ctx, &v));
    if (v.n == 0) return KORCH_OK;
    int64_t lanes = v.outer * v.inner, block = v.n * v.inner;
    bool f32 = ctx->inputs[0]->dtype == KORCH_DTYPE_FLOAT32;
    const void *x = ctx->inputs[0]->data;
    void *y = ctx->outputs[0]->data;
#pragma omp parallel for schedule(static) if (lanes * v.n >= KORCH_EW_PARALLEL_MIN)
    for (int64_t l = 0; l < lanes; l++) {
        int64_t base = (l / v.inner) * block + l % v.inner;
        if (f32) lane_float(kind, (const float *)x + base, (float *)y + base, v.n, v.inner);
        else lane_double(kind, (const double *)x + base, (double *)y + base, v.n, v.inner);
    }
    return KORCH_OK;
}

static korch_status run_softmax(korch_op_ctx *ctx) { return run_kind(ctx, SOFTMAX); }
static korch_status run_log_softmax(korch_op_ctx *ctx) { return run_kind(ctx, LOG_SOFTMAX); }
static korch_status run_hardmax(korch_op_ctx *ctx) { return run_kind(ctx, HARDMAX); }

/* max, subtract, exp, sum, scale: about five per element. */
static int64_t softmax_flops(const korch_op_ctx *ctx) { return 5 * korch_tensor_numel(ctx->inputs[0]); }

#define SOFTMAX_ROW(Name, lo, flops_fn)                                                            \
    const korch_op_def korch_op_def_##Name = {                                                     \
        .kind = KORCH_OP_##Name, .op_type = #Name, .opset_min = 1, .opset_max = 18,                \
        .min_inputs = 1, .max_inputs = 1, .min_outputs = 1, .max_outputs = 1,                      \
        .infer = infer_softmax, .run = run_##lo, .flops = flops_fn,                                \
    };
SOFTMAX_ROW(Softmax, softmax, softmax_flops)
SOFTMAX_ROW(LogSoftmax, log_softmax, softmax_flops)
SOFTMAX_ROW(Hardmax, hardmax, NULL) /* a comparison per element */
