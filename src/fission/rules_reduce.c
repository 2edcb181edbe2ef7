/* Fission rules for the Reduce* operators: reduce primitives with
 * elementwise pre- and post-maps (L1, L2, LogSum, LogSumExp, SumSquare), and
 * ReduceProd as a tree of multiplications of halves. */
#include <math.h>
#include <stdlib.h>

#include "fission/rules.h"

/* Axes and keepdims of a Reduce* node. `axes_input_from` is the opset from
 * which axes come as input 1 instead of an attribute. Returns the mask, with
 * every axis when none are listed (unless noop_with_empty_axes, which gives
 * 0), or -1 on error. */
static int64_t reduce_axes(korch_fission_ctx *ctx, int axes_input_from, bool *keepdims) {
    int rank = fission_in_shape(ctx, 0)->rank;
    *keepdims = korch_node_attr_int(ctx->node, "keepdims", 1) != 0;
    int64_t list[KORCH_MAX_RANK];
    int count = 0;
    if (ctx->node->opset >= axes_input_from) {
        if (fission_has_in(ctx, 1)) {
            const korch_tensor *t = fission_const_in(ctx, 1);
            if (!t) return -2; /* run-time axes: caller declines */
            int64_t n = korch_tensor_numel(t);
            if (n > KORCH_MAX_RANK) return -1;
            for (int64_t i = 0; i < n; i++) list[count++] = korch_tensor_get_i64(t, i);
        }
        if (count == 0 && korch_node_attr_int(ctx->node, "noop_with_empty_axes", 0)) return 0;
    } else {
        const int64_t *ints = NULL;
        int n = korch_node_attr_ints(ctx->node, "axes", &ints);
        if (n > KORCH_MAX_RANK) return -1;
        for (int i = 0; i < n; i++) list[count++] = ints[i];
    }
    if (count == 0) return rank >= 1 ? ((int64_t)1 << rank) - 1 : 0;
    return fission_axes_mask(ctx, list, count, rank);
}

static korch_status bad_axes(korch_fission_ctx *ctx, int64_t mask) {
    if (mask == -2)
        return fission_decline(ctx, "reduction axes are a run-time tensor (only constant axes give a static shape)");
    return KORCH_ERR_INVALID_MODEL;
}

/* reduce(pre(x)) then post; an empty axis set is the identity. */
static korch_status reduce_rule(korch_fission_ctx *ctx, int axes_input_from, korch_ew_op pre, korch_reduce_op op,
                                korch_ew_op post) {
    bool keepdims;
    int64_t mask = reduce_axes(ctx, axes_input_from, &keepdims);
    if (mask < 0) return bad_axes(ctx, mask);
    int x = fission_in(ctx, 0);
    if (mask == 0) {
        fission_set_out(ctx, 0, x);
        return fission_done(ctx);
    }
    if (pre == KORCH_EW_MUL) x = fission_binary(ctx, KORCH_EW_MUL, x, x);
    else if (pre != KORCH_EW_COPY) x = fission_unary(ctx, pre, x);
    int y = fission_reduce(ctx, op, x, (uint32_t)mask, keepdims);
    if (post != KORCH_EW_COPY) y = fission_unary(ctx, post, y);
    fission_set_out(ctx, 0, y);
    return fission_done(ctx);
}

KORCH_FISSION_RULE(ReduceSum) { return reduce_rule(ctx, 13, KORCH_EW_COPY, KORCH_REDUCE_SUM, KORCH_EW_COPY); }
KORCH_FISSION_RULE(ReduceMean) { return reduce_rule(ctx, 18, KORCH_EW_COPY, KORCH_REDUCE_MEAN, KORCH_EW_COPY); }
KORCH_FISSION_RULE(ReduceMax) { return reduce_rule(ctx, 18, KORCH_EW_COPY, KORCH_REDUCE_MAX, KORCH_EW_COPY); }
KORCH_FISSION_RULE(ReduceMin) { return reduce_rule(ctx, 18, KORCH_EW_COPY, KORCH_REDUCE_MIN, KORCH_EW_COPY); }
KORCH_FISSION_RULE(ReduceL1) { return reduce_rule(ctx, 18, KORCH_EW_ABS, KORCH_REDUCE_SUM, KORCH_EW_COPY); }
KORCH_FISSION_RULE(ReduceL2) { return reduce_rule(ctx, 18, KORCH_EW_MUL, KORCH_REDUCE_SUM, KORCH_EW_SQRT); }
KORCH_FISSION_RULE(ReduceSumSquare) { return reduce_rule(ctx, 18, KORCH_EW_MUL, KORCH_REDUCE_SUM, KORCH_EW_COPY); }
KORCH_FISSION_RULE(ReduceLogSum) { return reduce_rule(ctx, 18, KORCH_EW_COPY, KORCH_REDUCE_SUM, KORCH_EW_LOG); }

/* log(sum(exp(x))) = m + log(sum(exp(x - m))) with m = max(x): stable. */
KORCH_FISSION_RULE(ReduceLogSumExp) {
    bool keepdims;
    int64_t mask = reduce_axes(ctx, 18, &keepdims);
    if (mask < 0) return bad_axes(ctx, mask);
    int x = fission_in(ctx, 0);
    if (mask == 0) {
        fission_set_out(ctx, 0, x);
        return fission_done(ctx);
    }
    int m = fission_reduce(ctx, KORCH_REDUCE_MAX, x, (uint32_t)mask, true);
    int e = fission_unary(ctx, KORCH_EW_EXP, fission_binary(ctx, KORCH_EW_SUB, x, m));
    int s = fission_unary(ctx, KORCH_EW_LOG, fission_reduce(ctx, KORCH_REDUCE_SUM, e, (uint32_t)mask, true));
    int y = fission_binary(ctx, KORCH_EW_ADD, s, m);
    if (!keepdims) y = fission_squeeze_axes(ctx, y, (uint32_t)mask);
    fission_set_out(ctx, 0, y);
    return fission_done(ctx);
}

/* Product over one axis of x (kept as size 1): multiply the first half by the
 * second half (padded with 1 when odd) until one element is left. Exact
 * operations, log2(n) levels; no log/exp (which would lose signs and zeros). */
static int product_along(korch_fission_ctx *ctx, int x, int axis) {
    while (x >= 0 && fission_shape(ctx, x)->dims[axis] > 1) {
        korch_shape s = *fission_shape(ctx, x);
        int64_t n = s.dims[axis], half = (n + 1) / 2;
        int64_t starts[KORCH_MAX_RANK] = {0}, steps[KORCH_MAX_RANK], begins[KORCH_MAX_RANK] = {0},
                ends[KORCH_MAX_RANK] = {0};
        for (int k = 0; k < s.rank; k++) steps[k] = 1;
        korch_shape hs = s;
        hs.dims[axis] = half;
        int lo = korch_pgraph_slice(ctx->pg, x, starts, steps, &hs);
        /* the upper half: crop the first `half` elements, pad a 1 when n is odd */
        begins[axis] = -half;
        ends[axis] = 2 * half - n;
        int hi = korch_pgraph_pad(ctx->pg, x, begins, ends, KORCH_PAD_CONSTANT, 1.0);
        x = fission_binary(ctx, KORCH_EW_MUL, lo, hi);
    }
    return x;
}

KORCH_FISSION_RULE(ReduceProd) {
    bool keepdims;
    int64_t mask = reduce_axes(ctx, 18, &keepdims);
    if (mask < 0) return bad_axes(ctx, mask);
    int x = fission_in(ctx, 0);
    int rank = fission_in_shape(ctx, 0)->rank;
    for (int k = 0; k < rank; k++) {
        if (!(mask & ((int64_t)1 << k))) continue;
        if (fission_in_shape(ctx, 0)->dims[k] == 0) {
            return fission_decline(ctx, "product over an empty axis (the result is a constant 1; rare enough "
                                        "to leave to the reference kernel)");
        }
        x = product_along(ctx, x, k);
    }
    if (!keepdims) x = fission_squeeze_axes(ctx, x, (uint32_t)mask);
    fission_set_out(ctx, 0, x);
    return fission_done(ctx);
}

/* ArgMax/ArgMin: the position (an iota along the axis) of the first extreme,
 * or the last with select_last_index:
 *   hit = (x == max(x)) or (x != x)          -- a NaN counts as the extreme
 *   idx = min over the axis of where(hit, iota, n)   (max of where(hit, iota, -1))
 * (with select_last_index the first NaN still wins, as in the reference)
 * then cast to int64 and the axis dropped unless keepdims. */
static korch_status arg_rule(korch_fission_ctx *ctx, korch_reduce_op extreme) {
    const korch_shape *in = fission_in_shape(ctx, 0);
    int axis = fission_axis(ctx, korch_node_attr_int(ctx->node, "axis", 0), in->rank);
    if (axis < 0) return KORCH_ERR_INVALID_MODEL;
    bool keepdims = korch_node_attr_int(ctx->node, "keepdims", 1) != 0;
    bool last = korch_node_attr_int(ctx->node, "select_last_index", 0) != 0;
    int64_t n = in->dims[axis];
    if (n > (1 << 24)) return fission_decline(ctx, "ArgMax/ArgMin over more than 2^24 elements (float32 positions)");
    korch_shape is = {.rank = in->rank - axis};
    is.dims[0] = n;
    for (int k = 1; k < is.rank; k++) is.dims[k] = 1;
    korch_tensor iota;
    KORCH_TRY(korch_tensor_alloc(&iota, KORCH_DTYPE_FLOAT32, &is));
    for (int64_t i = 0; i < n; i++) ((float *)iota.data)[i] = (float)i;
    int x = fission_in(ctx, 0), iv = fission_constant(ctx, &iota);
    uint32_t mask = 1u << axis;
    int m = fission_reduce(ctx, extreme, x, mask, true);
    int hit = fission_binary(ctx, KORCH_EW_EQUAL, x, m);
    korch_dtype dt = fission_in_dtype(ctx, 0);
    bool is_float = dt == KORCH_DTYPE_FLOAT32 || dt == KORCH_DTYPE_FLOAT64;
    int nan = is_float ? fission_unary(ctx, KORCH_EW_NOT, fission_binary(ctx, KORCH_EW_EQUAL, x, x)) : -1;
    /* a row with a NaN has m = NaN, so only NaNs hit: the first one wins */
    if (is_float && !last) hit = fission_binary(ctx, KORCH_EW_OR, hit, nan);
    int cand = fission_where(ctx, hit, iv, fission_scalar(ctx, last ? -1.0 : (double)n, KORCH_DTYPE_FLOAT32));
    int pos = fission_reduce(ctx, last ? KORCH_REDUCE_MAX : KORCH_REDUCE_MIN, cand, mask, true);
    if (is_float && last) {
        /* the last extreme, unless the row has a NaN: then its first NaN */
        int big = fission_scalar(ctx, (double)n, KORCH_DTYPE_FLOAT32);
        int first_nan = fission_reduce(ctx, KORCH_REDUCE_MIN, fission_where(ctx, nan, iv, big), mask, true);
        pos = fission_where(ctx, fission_binary(ctx, KORCH_EW_LESS, first_nan, big), first_nan, pos);
    }
    int y = fission_cast(ctx, pos, KORCH_DTYPE_INT64);
    if (!keepdims) y = fission_squeeze_axes(ctx, y, mask);
    fission_set_out(ctx, 0, y);
    return fission_done(ctx);
}

KORCH_FISSION_RULE(ArgMax) { return arg_rule(ctx, KORCH_REDUCE_MAX); }
KORCH_FISSION_RULE(ArgMin) { return arg_rule(ctx, KORCH_REDUCE_MIN); }

/* CumSum as a windowed sum: a layout adds a trailing axis j over which
 * y[..., i, ..., j] = x[..., i - j, ...] (i + j when reversed; one further
 * for exclusive sums), out of bounds reading 0; a sum over j follows. */
KORCH_FISSION_RULE(CumSum) {
    const korch_shape *in = fission_in_shape(ctx, 0);
    const korch_tensor *a = fission_const_in(ctx, 1);
    if (!a || korch_tensor_numel(a) != 1) return fission_decline(ctx, "CumSum with a run-time axis");
    int axis = fission_axis(ctx, korch_tensor_get_i64(a, 0), in->rank);
    if (axis < 0) return KORCH_ERR_INVALID_MODEL;
    if (in->rank + 1 > KORCH_MAX_RANK) return fission_decline(ctx, "CumSum of a rank-8 tensor (the window adds an axis)");
    bool exclusive = korch_node_attr_int(ctx->node, "exclusive", 0) != 0;
    bool reverse = korch_node_attr_int(ctx->node, "reverse", 0) != 0;
    int64_t n = in->dims[axis];
    int x = fission_in(ctx, 0);
    if (n == 0) {
        fission_set_out(ctx, 0, x);
        return fission_done(ctx);
    }
    korch_shape ws = *in;
    ws.dims[ws.rank++] = n;
    korch_index_map map = {.input_rank = in->rank, .may_be_out_of_bounds = true};
    for (int k = 0; k < in->rank; k++) map.terms[k] = korch_index_term_var(k);
    map.terms[axis].coef[in->rank] = reverse ? 1 : -1;
    map.terms[axis].offset = exclusive ? (reverse ? 1 : -1) : 0;
    int w = korch_pgraph_layout(ctx->pg, KORCH_LAYOUT_WINDOW, 1, &x, &ws, &map, 0.0);
    fission_set_out(ctx, 0, fission_reduce(ctx, KORCH_REDUCE_SUM, w, 1u << in->rank, false));
    return fission_done(ctx);
}
