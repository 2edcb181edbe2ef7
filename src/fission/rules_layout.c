/* Fission rules for shape and layout operators: each becomes one layout
 * primitive (an index map), or a short chain of them. Output shapes come from
 * shape inference; the rules only work out the index maps. */
#include <stdlib.h>
#include <string.h>

#include "fission/rules.h"

/* A pure reshape to the inferred output shape (Reshape, Flatten, Squeeze,
 * Unsqueeze); the identity when the shape does not change. */
static korch_status reshape_rule(korch_fission_ctx *ctx) {
    int x = fission_in(ctx, 0);
    const korch_shape *out = fission_out_shape(ctx, 0);
    fission_set_out(ctx, 0, korch_shape_equal(out, fission_in_shape(ctx, 0)) ? x : korch_pgraph_reshape(ctx->pg, x, out));
    return fission_done(ctx);
}

KORCH_FISSION_RULE(Reshape) { return reshape_rule(ctx); }
KORCH_FISSION_RULE(Flatten) { return reshape_rule(ctx); }
KORCH_FISSION_RULE(Squeeze) { return reshape_rule(ctx); }
KORCH_FISSION_RULE(Unsqueeze) { return reshape_rule(ctx); }

KORCH_FISSION_RULE(Transpose) {
    int rank = fission_in_shape(ctx, 0)->rank;
    int64_t perm[KORCH_MAX_RANK];
    const int64_t *p = NULL;
    int count = korch_node_attr_ints(ctx->node, "perm", &p);
    if (count < 0) {
        for (int k = 0; k < rank; k++) perm[k] = rank - 1 - k;
    } else {
        if (count != rank) return korch_error(KORCH_ERR_INVALID_MODEL, "Transpose perm has %d entries for rank %d", count, rank);
        for (int k = 0; k < rank; k++) perm[k] = p[k] < 0 ? p[k] + rank : p[k];
    }
    fission_set_out(ctx, 0, korch_pgraph_transpose(ctx->pg, fission_in(ctx, 0), perm));
    return fission_done(ctx);
}

KORCH_FISSION_RULE(Concat) {
    int rank = fission_out_shape(ctx, 0)->rank;
    int axis = fission_axis(ctx, korch_node_attr_int(ctx->node, "axis", 0), rank);
    if (axis < 0) return KORCH_ERR_INVALID_MODEL;
    int *xs = malloc(((size_t)ctx->n_inputs + 1) * sizeof *xs), n = 0;
    if (!xs) return korch_error(KORCH_ERR_OUT_OF_MEMORY, "out of memory");
    for (int i = 0; i < ctx->n_inputs; i++)
        if (fission_has_in(ctx, i) && fission_in_shape(ctx, i)->dims[axis] > 0) xs[n++] = fission_in(ctx, i);
    int y;
    if (n == 0) {
        korch_tensor t; /* every input empty along the axis: an empty constant */
        if (korch_tensor_alloc(&t, fission_out_dtype(ctx, 0), fission_out_shape(ctx, 0)) != KORCH_OK) {
            free(xs);
            return KORCH_ERR_OUT_OF_MEMORY;
        }
        y = fission_constant(ctx, &t);
    } else {
        y = n == 1 ? xs[0] : korch_pgraph_concat(ctx->pg, n, xs, axis);
    }
    free(xs);
    fission_set_out(ctx, 0, y);
    return fission_done(ctx);
}

/* One slice per output, at the running offset along the axis (sizes come
 * from the inferred output shapes). */
KORCH_FISSION_RULE(Split) {
    const korch_shape *in = fission_in_shape(ctx, 0);
    int axis = fission_axis(ctx, korch_node_attr_int(ctx->node, "axis", 0), in->rank);
    if (axis < 0) return KORCH_ERR_INVALID_MODEL;
    int64_t starts[KORCH_MAX_RANK] = {0}, steps[KORCH_MAX_RANK];
    for (int k = 0; k < in->rank; k++) steps[k] = 1;
    for (int k = 0; k < ctx->n_outputs; k++) {
        if (ctx->node->outputs[k] < 0) continue;
        const korch_shape *os = fission_out_shape(ctx, k);
        int y = korch_shape_equal(os, in) ? fission_in(ctx, 0)
                                          : korch_pgraph_slice(ctx->pg, fission_in(ctx, 0), starts, steps, os);
        fission_set_out(ctx, k, y);
        starts[axis] += os->dims[axis];
    }
    return fission_done(ctx);
}

/* Starts and steps per dimension, clamped exactly as the operator defines. */
KORCH_FISSION_RULE(Slice) {
    const korch_shape *in = fission_in_shape(ctx, 0);
    int rank = in->rank;
    int64_t st[KORCH_MAX_RANK], en[KORCH_MAX_RANK], ax[KORCH_MAX_RANK], sp[KORCH_MAX_RANK];
    int n = 0;
    if (ctx->node->opset < 10) {
        const int64_t *s = NULL, *e = NULL, *a = NULL;
        n = korch_node_attr_ints(ctx->node, "starts", &s);
        int ne = korch_node_attr_ints(ctx->node, "ends", &e);
        int na = korch_node_attr_ints(ctx->node, "axes", &a);
        if (n < 0 || ne != n || n > rank || (na >= 0 && na != n))
            return korch_error(KORCH_ERR_INVALID_MODEL, "Slice: bad starts/ends/axes attributes");
        for (int i = 0; i < n; i++) {
            st[i] = s[i];
            en[i] = e[i];
            ax[i] = na >= 0 ? a[i] : i;
            sp[i] = 1;
        }
    } else {
        const korch_tensor *ts = fission_const_in(ctx, 1), *te = fission_const_in(ctx, 2);
        const korch_tensor *ta = fission_const_in(ctx, 3), *tp = fission_const_in(ctx, 4);
        if (!ts || !te || (fission_has_in(ctx, 3) && !ta) || (fission_has_in(ctx, 4) && !tp))
            return fission_decline(ctx, "Slice with run-time starts/ends/axes/steps (not a static index map)");
        n = (int)korch_tensor_numel(ts);
        if (n > rank || korch_tensor_numel(te) != n || (ta && korch_tensor_numel(ta) != n) ||
            (tp && korch_tensor_numel(tp) != n))
            return korch_error(KORCH_ERR_INVALID_MODEL, "Slice: inconsistent starts/ends/axes/steps");
        for (int i = 0; i < n; i++) {
            st[i] = korch_tensor_get_i64(ts, i);
            en[i] = korch_tensor_get_i64(te, i);
            ax[i] = ta ? korch_tensor_get_i64(ta, i) : i;
            sp[i] = tp ? korch_tensor_get_i64(tp, i) : 1;
        }
    }
    int64_t starts[KORCH_MAX_RANK] = {0}, steps[KORCH_MAX_RANK];
    for (int k = 0; k < rank; k++) steps[k] = 1;
    for (int i = 0; i < n; i++) {
        int a = fission_axis(ctx, ax[i], rank);
        if (a < 0) return KORCH_ERR_INVALID_MODEL;
        int64_t dim = in->dims[a], s = st[i], step = sp[i];
        if (step == 0) return korch_error(KORCH_ERR_INVALID_MODEL, "Slice: step 0");
        if (s < 0) s += dim;
        if (step > 0) s = s < 0 ? 0 : (s > dim ? dim : s);
        else s = s < 0 ? 0 : (s > dim - 1 ? dim - 1 : s);
        int64_t e = en[i];
        if (e < 0) e += dim;
        if (step > 0) e = e < 0 ? 0 : (e > dim ? dim : e);
        else e = e < -1 ? -1 : (e > dim - 1 ? dim - 1 : e);
        int64_t span = step > 0 ? e - s : s - e, mag = step > 0 ? step : -step;
        int64_t n_out = span > 0 ? (span + mag - 1) / mag : 0;
        if (n_out != fission_out_shape(ctx, 0)->dims[a])
            return korch_error(KORCH_ERR_INTERNAL, "Slice: axis %d gives %lld elements, inference says %lld", a,
                               (long long)n_out, (long long)fission_out_shape(ctx, 0)->dims[a]);
        starts[a] = s;
        steps[a] = step;
    }
    const korch_shape *out = fission_out_shape(ctx, 0);
    int x = fission_in(ctx, 0);
    bool identity = korch_shape_equal(out, in);
    for (int k = 0; k < rank && identity; k++) identity = starts[k] == 0 && steps[k] == 1;
    fission_set_out(ctx, 0, identity ? x : korch_pgraph_slice(ctx->pg, x, starts, steps, out));
    return fission_done(ctx);
}

/* OneHot: where(unsqueeze(i, axis) == iota along axis, on, off), i the
 * integer index moved by depth where negative (one out of [-depth, depth)
 * then equals no position, as in the reference). Float indices (truncated
 * by the reference) and run-time values stay with the reference. */
KORCH_FISSION_RULE(OneHot) {
    const korch_tensor *values = fission_const_in(ctx, 2);
    if (!values) return fission_decline(ctx, "OneHot with run-time values");
    korch_dtype idt = fission_in_dtype(ctx, 0);
    if (idt == KORCH_DTYPE_FLOAT32 || idt == KORCH_DTYPE_FLOAT64 || idt == KORCH_DTYPE_UINT64)
        return fission_decline(ctx, "OneHot with float or uint64 indices");
    const korch_shape *out = fission_out_shape(ctx, 0);
    int axis = fission_axis(ctx, korch_node_attr_int(ctx->node, "axis", -1), out->rank);
    if (axis < 0) return KORCH_ERR_INVALID_MODEL;
    int64_t depth = out->dims[axis];
    int x = fission_in(ctx, 0);
    if (idt != KORCH_DTYPE_INT64) x = fission_cast(ctx, x, KORCH_DTYPE_INT64);
    int negative = fission_binary(ctx, KORCH_EW_LESS, x, fission_scalar(ctx, 0, KORCH_DTYPE_INT64));
    x = fission_where(ctx, negative, fission_binary(ctx, KORCH_EW_ADD, x, fission_scalar(ctx, (double)depth, KORCH_DTYPE_INT64)),
                      x);
    korch_shape at = *out;
    at.dims[axis] = 1;
    if (x >= 0) x = korch_pgraph_reshape(ctx->pg, x, &at);
    korch_shape is = {.rank = out->rank - axis};
    is.dims[0] = depth;
    for (int k = 1; k < is.rank; k++) is.dims[k] = 1;
    korch_tensor iota, on, off;
    korch_shape scalar = {0};
    KORCH_TRY(korch_tensor_alloc(&iota, KORCH_DTYPE_INT64, &is));
    for (int64_t j = 0; j < depth; j++) ((int64_t *)iota.data)[j] = j;
    int iv = fission_constant(ctx, &iota);
    size_t es = korch_dtype_size(values->dtype);
    KORCH_TRY(korch_tensor_alloc(&off, values->dtype, &scalar));
    memcpy(off.data, values->data, es);
    int offv = fission_constant(ctx, &off);
    KORCH_TRY(korch_tensor_alloc(&on, values->dtype, &scalar));
    memcpy(on.data, (const char *)values->data + es, es);
    int onv = fission_constant(ctx, &on);
    fission_set_out(ctx, 0, fission_where(ctx, fission_binary(ctx, KORCH_EW_EQUAL, x, iv), onv, offv));
    return fission_done(ctx);
}

/* Gather with constant indices is a table lookup along the axis. */
KORCH_FISSION_RULE(Gather) {
    const korch_tensor *idx = fission_const_in(ctx, 1);
    if (!idx)
        return fission_decline(ctx, "Gather with run-time indices (data-dependent addressing, e.g. an embedding "
                                    "lookup of token ids, is not a static index map)");
    const korch_shape *in = fission_in_shape(ctx, 0);
    int axis = fission_axis(ctx, korch_node_attr_int(ctx->node, "axis", 0), in->rank);
    if (axis < 0) return KORCH_ERR_INVALID_MODEL;
    if (in->rank - 1 + idx->shape.rank > KORCH_MAX_RANK)
        return fission_decline(ctx, "Gather whose output rank exceeds 8");
    int64_t n = korch_tensor_numel(idx);
    int64_t *v = malloc((size_t)(n > 0 ? n : 1) * sizeof *v);
    if (!v) return korch_error(KORCH_ERR_OUT_OF_MEMORY, "out of memory");
    for (int64_t i = 0; i < n; i++) {
        int64_t j = korch_tensor_get_i64(idx, i);
        if (j < 0) j += in->dims[axis];
        if (j < 0 || j >= in->dims[axis]) {
            free(v);
            return korch_error(KORCH_ERR_INVALID_MODEL, "Gather index %lld out of range for dimension %lld",
                               (long long)korch_tensor_get_i64(idx, i), (long long)in->dims[axis]);
        }
        v[i] = j;
    }
    int y = korch_pgraph_gather(ctx->pg, fission_in(ctx, 0), axis, v, &idx->shape);
    free(v);
    fission_set_out(ctx, 0, y);
    return fission_done(ctx);
}

KORCH_FISSION_RULE(Expand) {
    int x = fission_in(ctx, 0);
    const korch_shape *out = fission_out_shape(ctx, 0);
    fission_set_out(ctx, 0, korch_shape_equal(out, fission_in_shape(ctx, 0)) ? x : korch_pgraph_expand(ctx->pg, x, out));
    return fission_done(ctx);
}

KORCH_FISSION_RULE(Tile) {
    const korch_shape *in = fission_in_shape(ctx, 0), *out = fission_out_shape(ctx, 0);
    int64_t repeats[KORCH_MAX_RANK];
    for (int k = 0; k < in->rank; k++) {
        if (in->dims[k] == 0) return fission_decline(ctx, "Tile of an empty dimension");
        repeats[k] = out->dims[k] / in->dims[k];
    }
    int x = fission_in(ctx, 0);
    fission_set_out(ctx, 0, korch_shape_equal(out, in) ? x : korch_pgraph_tile(ctx->pg, x, repeats));
    return fission_done(ctx);
}

KORCH_FISSION_RULE(Pad) {
    const korch_node *n = ctx->node;
    const korch_shape *in = fission_in_shape(ctx, 0);
    int rank = in->rank;
    int64_t pads[2 * KORCH_MAX_RANK] = {0};
    double value = 0.0;
    int runtime_value = -1;
    if (n->opset < 11) {
        const int64_t *p = NULL;
        int c = korch_node_attr_ints(n, n->opset < 2 ? "paddings" : "pads", &p);
        if (c != 2 * rank) return korch_error(KORCH_ERR_INVALID_MODEL, "Pad: pads has %d entries for rank %d", c, rank);
        memcpy(pads, p, (size_t)c * sizeof *pads);
        /* the attribute form is float-only; the reference pads integers with 0 */
        bool is_float = fission_in_dtype(ctx, 0) == KORCH_DTYPE_FLOAT32 || fission_in_dtype(ctx, 0) == KORCH_DTYPE_FLOAT64;
        value = is_float ? korch_node_attr_float(n, "value", 0.0f) : 0.0;
    } else {
        const korch_tensor *tp = fission_const_in(ctx, 1);
        if (!tp) return fission_decline(ctx, "Pad with run-time pads (not a static index map)");
        int64_t axes[KORCH_MAX_RANK];
        int na = rank;
        for (int k = 0; k < rank; k++) axes[k] = k;
        if (fission_has_in(ctx, 3)) {
            const korch_tensor *ta = fission_const_in(ctx, 3);
            if (!ta) return fission_decline(ctx, "Pad with run-time axes");
            na = (int)korch_tensor_numel(ta);
            if (na > rank) return korch_error(KORCH_ERR_INVALID_MODEL, "Pad: too many axes");
            for (int i = 0; i < na; i++) axes[i] = korch_tensor_get_i64(ta, i);
        }
        if (korch_tensor_numel(tp) != 2 * na) return korch_error(KORCH_ERR_INVALID_MODEL, "Pad: pads/axes mismatch");
        for (int i = 0; i < na; i++) {
            int a = fission_axis(ctx, axes[i], rank);
            if (a < 0) return KORCH_ERR_INVALID_MODEL;
            pads[a] = korch_tensor_get_i64(tp, i);
            pads[rank + a] = korch_tensor_get_i64(tp, na + i);
        }
        if (fission_has_in(ctx, 2)) {
            const korch_tensor *tv = fission_const_in(ctx, 2);
            if (!tv) runtime_value = fission_in(ctx, 2);
            else if (korch_tensor_numel(tv) >= 1) value = korch_tensor_get_f64(tv, 0);
        }
    }
    const char *mode = korch_node_attr_string(n, "mode", "constant");
    korch_pad_mode m;
    if (strcmp(mode, "constant") == 0) m = KORCH_PAD_CONSTANT;
    else if (strcmp(mode, "reflect") == 0) m = KORCH_PAD_REFLECT;
    else if (strcmp(mode, "edge") == 0) m = KORCH_PAD_EDGE;
    else if (strcmp(mode, "wrap") == 0) m = KORCH_PAD_WRAP;
    else return korch_error(KORCH_ERR_INVALID_MODEL, "Pad: unknown mode");
    int x = fission_in(ctx, 0);
    bool zero = true;
    for (int k = 0; k < 2 * rank; k++) zero = zero && pads[k] == 0;
    int y = zero ? x : korch_pgraph_pad(ctx->pg, x, pads, pads + rank, m, value);
    if (!zero && m == KORCH_PAD_CONSTANT && runtime_value >= 0) {
        /* a pad value known only at run time: pad, then select it where a
         * constant mask (the same pad of ones; folded) says "padding" */
        korch_tensor ones;
        KORCH_TRY(korch_tensor_alloc(&ones, KORCH_DTYPE_BOOL, in));
        memset(ones.data, 1, korch_tensor_bytes(&ones));
        int inside = korch_pgraph_pad(ctx->pg, fission_constant(ctx, &ones), pads, pads + rank, m, 0.0);
        y = fission_where(ctx, inside, y, runtime_value);
    }
    fission_set_out(ctx, 0, y);
    return fission_done(ctx);
}

/* DepthToSpace/SpaceToDepth are defined as reshape -> transpose -> reshape;
 * that is exactly their fission (three index maps a code generator chains). */
static int reshape_transpose_reshape(korch_fission_ctx *ctx, const korch_shape *mid, const int64_t *perm) {
    int x = korch_pgraph_reshape(ctx->pg, fission_in(ctx, 0), mid);
    int t = korch_pgraph_transpose(ctx->pg, x, perm);
    if (t >= 0) ctx->pg->nodes[ctx->pg->values[t].producer].u.layout.tag = KORCH_LAYOUT_DEPTH_SPACE;
    return korch_pgraph_reshape(ctx->pg, t, fission_out_shape(ctx, 0));
}

KORCH_FISSION_RULE(DepthToSpace) {
    const korch_shape *in = fission_in_shape(ctx, 0);
    int64_t b = korch_node_attr_int(ctx->node, "blocksize", 0);
    if (in->rank != 4 || b < 1 || in->dims[1] % (b * b))
        return korch_error(KORCH_ERR_INVALID_MODEL, "DepthToSpace: bad blocksize or rank");
    int64_t N = in->dims[0], C = in->dims[1] / (b * b), H = in->dims[2], W = in->dims[3];
    bool crd = strcmp(korch_node_attr_string(ctx->node, "mode", "DCR"), "CRD") == 0;
    korch_shape mid = {.rank = 6};
    int64_t dcr[6] = {N, b, b, C, H, W}, crdd[6] = {N, C, b, b, H, W};
    memcpy(mid.dims, crd ? crdd : dcr, sizeof dcr);
    static const int64_t perm_dcr[6] = {0, 3, 4, 1, 5, 2}, perm_crd[6] = {0, 1, 4, 2, 5, 3};
    fission_set_out(ctx, 0, reshape_transpose_reshape(ctx, &mid, crd ? perm_crd : perm_dcr));
    return fission_done(ctx);
}

KORCH_FISSION_RULE(SpaceToDepth) {
    const korch_shape *in = fission_in_shape(ctx, 0);
    int64_t b = korch_node_attr_int(ctx->node, "blocksize", 0);
    if (in->rank != 4 || b < 1 || in->dims[2] % b || in->dims[3] % b)
        return korch_error(KORCH_ERR_INVALID_MODEL, "SpaceToDepth: bad blocksize or rank");
    korch_shape mid = {.rank = 6, .dims = {in->dims[0], in->dims[1], in->dims[2] / b, b, in->dims[3] / b, b}};
    static const int64_t perm[6] = {0, 3, 5, 1, 2, 4};
    fission_set_out(ctx, 0, reshape_transpose_reshape(ctx, &mid, perm));
    return fission_done(ctx);
}

/* Inference: output = input; the optional mask is all true. */
KORCH_FISSION_RULE(Dropout) {
    if (fission_has_in(ctx, 2)) {
        const korch_tensor *t = fission_const_in(ctx, 2);
        if (!t || korch_tensor_get_i64(t, 0) != 0)
            return fission_decline(ctx, "Dropout in training mode (random masks are not deterministic primitives)");
    }
    fission_set_out(ctx, 0, fission_in(ctx, 0));
    if (fission_has_out(ctx, 1)) {
        korch_tensor mask;
        KORCH_TRY(korch_tensor_alloc(&mask, fission_out_dtype(ctx, 1), fission_out_shape(ctx, 1)));
        int64_t n = korch_tensor_numel(&mask);
        if (mask.dtype == KORCH_DTYPE_BOOL) memset(mask.data, 1, (size_t)n);
        fission_set_out(ctx, 1, fission_constant(ctx, &mask));
    }
    return fission_done(ctx);
}

/* Operators whose outputs shape inference computes: a live node here means a
 * case inference could not fold, which stays whole. */
static korch_status folded(korch_fission_ctx *ctx) {
    return fission_decline(ctx, "shape/constant operator on a run-time value (normally folded at load time)");
}

KORCH_FISSION_RULE(Constant) { return folded(ctx); }
KORCH_FISSION_RULE(ConstantOfShape) { return folded(ctx); }
KORCH_FISSION_RULE(Shape) { return folded(ctx); }
KORCH_FISSION_RULE(Size) { return folded(ctx); }
KORCH_FISSION_RULE(Range) { return folded(ctx); }
KORCH_FISSION_RULE(EyeLike) { return folded(ctx); }
