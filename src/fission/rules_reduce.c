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
