/* Fission rules for softmax and the normalisations: reductions with
 * keepdims feeding broadcast elementwise maps. */
#include <math.h>
#include <stdlib.h>

#include "fission/rules.h"

/* Softmax axes: opset >= 13 normalises along one axis (default -1); before,
 * the input is coerced to 2-D at `axis` (default 1) and normalised along the
 * second dimension, i.e. over every axis from `axis` on. */
static int64_t softmax_axes(korch_fission_ctx *ctx) {
    int rank = fission_in_shape(ctx, 0)->rank;
    bool coerce = ctx->node->opset < 13;
    int64_t axis = korch_node_attr_int(ctx->node, "axis", coerce ? 1 : -1);
    if (rank == 0) return 0;
    if (coerce && axis == rank) return 0; /* a 2-D view (N, 1): one element per row */
    int a = fission_axis(ctx, axis, rank);
    if (a < 0) return -1;
    if (!coerce) return (int64_t)1 << a;
    return (((int64_t)1 << rank) - 1) & ~(((int64_t)1 << a) - 1);
}

/* x - max(x) along the axes (kept), the numerically stable shift. */
static int shifted(korch_fission_ctx *ctx, int x, uint32_t mask) {
    int m = fission_reduce(ctx, KORCH_REDUCE_MAX, x, mask, true);
    return fission_binary(ctx, KORCH_EW_SUB, x, m);
}

/* exp(d) / sum(exp(d)) with d = x - max(x) */
KORCH_FISSION_RULE(Softmax) {
    int64_t mask = softmax_axes(ctx);
    if (mask < 0) return KORCH_ERR_INVALID_MODEL;
    int x = fission_in(ctx, 0);
    int y;
    if (mask == 0) {
        /* one element per group: exp(x - x) / itself = 1 (NaN stays NaN) */
        int e = fission_unary(ctx, KORCH_EW_EXP, fission_binary(ctx, KORCH_EW_SUB, x, x));
        y = fission_binary(ctx, KORCH_EW_DIV, e, e);
    } else {
        int e = fission_unary(ctx, KORCH_EW_EXP, shifted(ctx, x, (uint32_t)mask));
        y = fission_binary(ctx, KORCH_EW_DIV, e, fission_reduce(ctx, KORCH_REDUCE_SUM, e, (uint32_t)mask, true));
    }
    fission_set_out(ctx, 0, y);
    return fission_done(ctx);
}

/* d - log(sum(exp(d))) with d = x - max(x) */
KORCH_FISSION_RULE(LogSoftmax) {
    int64_t mask = softmax_axes(ctx);
    if (mask < 0) return KORCH_ERR_INVALID_MODEL;
    int x = fission_in(ctx, 0);
    int y;
    if (mask == 0) {
        y = fission_binary(ctx, KORCH_EW_SUB, x, x);
    } else {
        int d = shifted(ctx, x, (uint32_t)mask);
        int s = fission_reduce(ctx, KORCH_REDUCE_SUM, fission_unary(ctx, KORCH_EW_EXP, d), (uint32_t)mask, true);
        y = fission_binary(ctx, KORCH_EW_SUB, d, fission_unary(ctx, KORCH_EW_LOG, s));
    }
    fission_set_out(ctx, 0, y);
    return fission_done(ctx);
}

/* Normalise x over `mask`: d = x - mean, inv = 1/sqrt(mean(d^2) + eps).
 * Returns d * inv and sets *mean_out / *inv_out (keepdims shapes). */
static int normalize(korch_fission_ctx *ctx, int x, uint32_t mask, float epsilon, int *mean_out, int *inv_out) {
    if (x < 0) return -1;
    int mean = fission_reduce(ctx, KORCH_REDUCE_MEAN, x, mask, true);
    int d = fission_binary(ctx, KORCH_EW_SUB, x, mean);
    int var = fission_reduce(ctx, KORCH_REDUCE_MEAN, fission_binary(ctx, KORCH_EW_MUL, d, d), mask, true);
    int eps = fission_scalar(ctx, epsilon, ctx->pg->values[x].dtype);
    int inv = fission_unary(ctx, KORCH_EW_RSQRT, fission_binary(ctx, KORCH_EW_ADD, var, eps));
    if (mean_out) *mean_out = mean;
    if (inv_out) *inv_out = inv;
    return fission_binary(ctx, KORCH_EW_MUL, d, inv);
}

/* Reshapes a keepdims statistic to an optional output's inferred shape. */
static void set_stat_output(korch_fission_ctx *ctx, int k, int v) {
    if (!fission_has_out(ctx, k) || v < 0) return;
    const korch_shape *want = fission_out_shape(ctx, k);
    if (!korch_shape_equal(want, fission_shape(ctx, v))) v = korch_pgraph_reshape(ctx->pg, v, want);
    fission_set_out(ctx, k, v);
}

KORCH_FISSION_RULE(LayerNormalization) {
    int x = fission_in(ctx, 0);
    int rank = fission_in_shape(ctx, 0)->rank;
    int axis = fission_axis(ctx, korch_node_attr_int(ctx->node, "axis", -1), rank);
    if (axis < 0) return KORCH_ERR_INVALID_MODEL;
    if (korch_node_attr_int(ctx->node, "stash_type", 1) != 1 || fission_in_dtype(ctx, 0) != KORCH_DTYPE_FLOAT32)
        return fission_decline(ctx, "LayerNormalization outside float32 statistics (stash_type != 1)");
    uint32_t mask = (uint32_t)((((int64_t)1 << rank) - 1) & ~(((int64_t)1 << axis) - 1));
    float eps = korch_node_attr_float(ctx->node, "epsilon", 1e-5f);
    int mean = -1, inv = -1;
    int y = normalize(ctx, x, mask, eps, &mean, &inv);
    y = fission_binary(ctx, KORCH_EW_MUL, y, fission_in(ctx, 1));
    if (fission_has_in(ctx, 2)) y = fission_binary(ctx, KORCH_EW_ADD, y, fission_in(ctx, 2));
    fission_set_out(ctx, 0, y);
    set_stat_output(ctx, 1, mean);
    set_stat_output(ctx, 2, inv);
    return fission_done(ctx);
}

/* Per (n, c) statistics over the spatial axes; per-channel scale and bias. */
KORCH_FISSION_RULE(InstanceNormalization) {
    int x = fission_in(ctx, 0);
    int rank = fission_in_shape(ctx, 0)->rank;
    if (rank < 3) return fission_decline(ctx, "InstanceNormalization of a rank < 3 tensor (no spatial axes)");
    uint32_t mask = (uint32_t)(((int64_t)1 << rank) - 1) & ~3u;
    float eps = korch_node_attr_float(ctx->node, "epsilon", 1e-5f);
    int y = normalize(ctx, x, mask, eps, NULL, NULL);
    y = fission_binary(ctx, KORCH_EW_MUL, y, fission_channel_view(ctx, fission_in(ctx, 1), rank));
    y = fission_binary(ctx, KORCH_EW_ADD, y, fission_channel_view(ctx, fission_in(ctx, 2), rank));
    fission_set_out(ctx, 0, y);
    return fission_done(ctx);
}

/* y = x * s + t with s = scale / sqrt(var + eps), t = bias - mean * s, folded
 * in double into two constants when the parameters are constant. */
KORCH_FISSION_RULE(BatchNormalization) {
    const korch_node *n = ctx->node;
    if (korch_node_attr_int(n, "training_mode", 0) != 0 || (n->opset < 7 && korch_node_attr_int(n, "is_test", 0) == 0 &&
                                                            ctx->n_outputs > 1))
        return fission_decline(ctx, "BatchNormalization in training mode (batch statistics and running-mean "
                                    "updates; korch targets inference)");
    for (int k = 1; k < ctx->n_outputs; k++)
        if (fission_has_out(ctx, k))
            return fission_decline(ctx, "BatchNormalization with training outputs (running mean/variance)");
    int x = fission_in(ctx, 0);
    int rank = fission_in_shape(ctx, 0)->rank;
    korch_dtype dt = fission_in_dtype(ctx, 0);
    float eps = korch_node_attr_float(n, "epsilon", 1e-5f);
    const korch_tensor *scale = fission_const_in(ctx, 1), *bias = fission_const_in(ctx, 2),
                       *mean = fission_const_in(ctx, 3), *var = fission_const_in(ctx, 4);
    int s_v, t_v;
    if (scale && bias && mean && var && rank >= 2 && korch_tensor_numel(scale) == fission_in_shape(ctx, 0)->dims[1]) {
        int64_t c = korch_tensor_numel(scale);
        korch_shape view = {.rank = rank - 1};
        view.dims[0] = c;
        for (int k = 1; k < rank - 1; k++) view.dims[k] = 1;
        korch_tensor s, t;
        if (korch_tensor_alloc(&s, dt, &view) != KORCH_OK) return KORCH_ERR_OUT_OF_MEMORY;
        if (korch_tensor_alloc(&t, dt, &view) != KORCH_OK) {
            korch_tensor_free(&s);
            return KORCH_ERR_OUT_OF_MEMORY;
        }
        for (int64_t i = 0; i < c; i++) {
            double si = korch_tensor_get_f64(scale, i) / sqrt(korch_tensor_get_f64(var, i) + (double)eps);
            double ti = korch_tensor_get_f64(bias, i) - korch_tensor_get_f64(mean, i) * si;
            if (dt == KORCH_DTYPE_FLOAT64) {
                ((double *)s.data)[i] = si;
                ((double *)t.data)[i] = ti;
            } else {
                ((float *)s.data)[i] = (float)si;
                ((float *)t.data)[i] = (float)ti;
            }
        }
        s_v = fission_constant(ctx, &s);
        t_v = fission_constant(ctx, &t);
    } else {
        int sc = fission_channel_view(ctx, fission_in(ctx, 1), rank);
        int b = fission_channel_view(ctx, fission_in(ctx, 2), rank);
        int m = fission_channel_view(ctx, fission_in(ctx, 3), rank);
        int v = fission_channel_view(ctx, fission_in(ctx, 4), rank);
        int inv = fission_unary(ctx, KORCH_EW_RSQRT, fission_binary(ctx, KORCH_EW_ADD, v, fission_scalar(ctx, eps, dt)));
        s_v = fission_binary(ctx, KORCH_EW_MUL, sc, inv);
        t_v = fission_binary(ctx, KORCH_EW_SUB, b, fission_binary(ctx, KORCH_EW_MUL, m, s_v));
    }
    int y = fission_binary(ctx, KORCH_EW_ADD, fission_binary(ctx, KORCH_EW_MUL, x, s_v), t_v);
    fission_set_out(ctx, 0, y);
    return fission_done(ctx);
}

/* One-hot of the first maximum: m = max(x); first = min(where(x == m, iota,
 * n)) over the axes; y = cast(iota == first). iota numbers the elements of
 * one group in row-major order. */
KORCH_FISSION_RULE(Hardmax) {
    int64_t mask = softmax_axes(ctx);
    if (mask < 0) return KORCH_ERR_INVALID_MODEL;
    const korch_shape *in = fission_in_shape(ctx, 0);
    korch_dtype dt = fission_in_dtype(ctx, 0);
    int x = fission_in(ctx, 0);
    if (mask == 0) {
        /* one element per group: always 1 */
        int one = fission_scalar(ctx, 1.0, dt);
        fission_set_out(ctx, 0, korch_pgraph_expand(ctx->pg, one, in));
        return fission_done(ctx);
    }
    int first_axis = 0;
    while (!(mask & ((int64_t)1 << first_axis))) first_axis++;
    korch_shape is = {.rank = in->rank - first_axis};
    int64_t n = 1;
    for (int k = first_axis; k < in->rank; k++) {
        is.dims[k - first_axis] = (mask & ((int64_t)1 << k)) ? in->dims[k] : 1;
        n *= is.dims[k - first_axis];
    }
    if (n > (1 << 24)) return fission_decline(ctx, "Hardmax over more than 2^24 elements (float32 positions)");
    korch_tensor iota;
    KORCH_TRY(korch_tensor_alloc(&iota, KORCH_DTYPE_FLOAT32, &is));
    for (int64_t i = 0; i < n; i++) ((float *)iota.data)[i] = (float)i;
    int iv = fission_constant(ctx, &iota);
    int m = fission_reduce(ctx, KORCH_REDUCE_MAX, x, (uint32_t)mask, true);
    int at_max = fission_binary(ctx, KORCH_EW_EQUAL, x, m);
    int cand = fission_where(ctx, at_max, iv, fission_scalar(ctx, (double)n, KORCH_DTYPE_FLOAT32));
    int first = fission_reduce(ctx, KORCH_REDUCE_MIN, cand, (uint32_t)mask, true);
    int hit = fission_binary(ctx, KORCH_EW_EQUAL, iv, first);
    fission_set_out(ctx, 0, fission_cast(ctx, hit, dt));
    return fission_done(ctx);
}

/* (x - mean) / (sqrt(mean((x - mean)^2)) + 1e-9) over `axes` (default
 * [0, 2, 3]), as the ONNX function body defines it. */
KORCH_FISSION_RULE(MeanVarianceNormalization) {
    static const int64_t default_axes[3] = {0, 2, 3};
    const int64_t *axes = default_axes;
    int rank = fission_in_shape(ctx, 0)->rank;
    int count = korch_node_attr_ints(ctx->node, "axes", &axes);
    if (count < 0) count = 3, axes = default_axes;
    int64_t mask = fission_axes_mask(ctx, axes, count, rank);
    if (mask < 0) return KORCH_ERR_INVALID_MODEL;
    int x = fission_in(ctx, 0);
    korch_dtype dt = fission_in_dtype(ctx, 0);
    if (mask == 0) {
        /* no axes: each element is its own group, (x - x) / (0 + 1e-9) */
        fission_set_out(ctx, 0, fission_binary(ctx, KORCH_EW_SUB, x, x));
        return fission_done(ctx);
    }
    int mean = fission_reduce(ctx, KORCH_REDUCE_MEAN, x, (uint32_t)mask, true);
    int d = fission_binary(ctx, KORCH_EW_SUB, x, mean);
    int var = fission_reduce(ctx, KORCH_REDUCE_MEAN, fission_binary(ctx, KORCH_EW_MUL, d, d), (uint32_t)mask, true);
    int den = fission_binary(ctx, KORCH_EW_ADD, fission_unary(ctx, KORCH_EW_SQRT, var), fission_scalar(ctx, 1e-9, dt));
    fission_set_out(ctx, 0, fission_binary(ctx, KORCH_EW_DIV, d, den));
    return fission_done(ctx);
}
