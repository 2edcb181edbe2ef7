/* Feature "index" (DT_FEAT_INDEX): the index operators decoders bring
 * (SLANet's structure decoder, paddle2onnx): OneHot and ScatterElements;
 * and what transformer and detection exports write: Trilu, TopK,
 * GatherElements; after the other features, on values of rank 2 or more.
 *
 * - OneHot of an ArgMax of x along an axis, multiplied into x: fission
 *   computes a OneHot of int64/int32 indices as a comparison with an iota
 *   (rules_layout.c), so the comparison and its neighbours fuse. Indices
 *   include negative ones (counted from the end) and ones out of range
 *   (an all-`off` row); off and on values are drawn.
 * - ScatterElements of constant updates into x (a run-time value, so it
 *   does not fold) at constant indices along an
 *   axis, every reduction; with `none` the indices of one line are distinct
 *   (ONNX leaves duplicates unordered there), with the others they may
 *   repeat. Fission keeps it opaque: what is tested is that the values
 *   around it reach it and leave it intact.
 * - Trilu of x, upper or lower, k constant (drawn across and beyond the
 *   matrix) or absent: fission turns it into a Where with a constant mask
 *   (rules_elementwise.c), fused with its neighbour x + 0.5.
 * - TopK of an exact x along an axis (exact: every correct plan feeds it
 *   the same values, so ties break the same way), largest or smallest, and
 *   GatherElements of x at its indices, multiplied by the values: both
 *   opaque, the indices and values leaving them intact.
 *
 * Every choice from the features' stream; the results are read by nothing
 * else and become graph outputs. */
#include <stdlib.h>
#include <string.h>

#include "gen_internal.h"

static const char *fresh(dt_gen *g, const char *stem) {
    return korch_onnx_unique(&g->w, korch_onnx_str(&g->w, "%s%d", stem, g->w.counter++));
}

static const char *init_typed(dt_gen *g, korch_dtype dt, const korch_shape *s, const void *data) {
    korch_tensor t = {.dtype = dt, .shape = *s};
    size_t bytes = korch_tensor_bytes(&t);
    t.data = korch_onnx_alloc(&g->w, bytes + 1);
    if (!t.data) return "";
    if (bytes) memcpy(t.data, data, bytes);
    return korch_onnx_add_initializer(&g->w, &t, fresh(g, "ix"));
}

/* x * OneHot(ArgMax(x, axis), depth, [off, on], axis): the one-hot of x's
 * largest element along the axis, as decoders pick a token. Indices from a
 * run-time value (constant ones would fold at load and never reach
 * fission), of an exact x (every correct plan computes it bit for bit, so
 * no plan's ArgMax can pick another element). The indices are used as they
 * are, moved below zero (minus depth: counted from the end), one past the
 * end for the last position (an all-`off` row), or cast to int32. */
static bool onehot_into(dt_gen *g, int v) {
    dt_rng *r = &g->frng;
    const dt_val *x = &g->vals[v];
    if (!x->exact) return false;
    korch_shape xs = x->shape;
    int axis = (int)dt_int(r, 0, xs.rank - 1);
    int64_t depth = xs.dims[axis];
    const char *am = fresh(g, "am"), *in0[] = {dt_use(g, v)};
    Onnx__NodeProto *node = dt_node(g, "ArgMax", 1, in0, 1, &am);
    korch_onnx_attr_int(&g->w, node, "axis", axis);
    korch_onnx_attr_int(&g->w, node, "keepdims", 0);
    const char *idx = am, *how = "OneHot, int64 indices";
    double u = dt_unif(r, 0, 1);
    if (u < 0.6) {
        int64_t k = u < 0.3 ? -depth : 1;
        const char *moved = fresh(g, "ix"), *ins[] = {am, dt_const_i64(g, &k, 1)};
        dt_node(g, "Add", 2, ins, 1, &moved);
        idx = moved;
        how = k < 0 ? "OneHot, negative indices" : "OneHot, an index out of range";
    } else if (u < 0.8) {
        const char *c32 = fresh(g, "ix");
        Onnx__NodeProto *c = dt_node(g, "Cast", 1, &am, 1, &c32);
        korch_onnx_attr_int(&g->w, c, "to", KORCH_DTYPE_INT32);
        idx = c32;
        how = "OneHot, int32 indices";
    }
    int64_t d1[] = {depth};
    float vals[2] = {(float)dt_unif(r, -0.5, 0.5), (float)dt_unif(r, 0.5, 2.0)};
    const char *vname = dt_const_data(g, &(korch_shape){.rank = 1, .dims = {2}}, vals);
    const char *oh = fresh(g, "oh"), *ins[] = {idx, dt_const_i64(g, d1, 1), vname};
    node = dt_node(g, "OneHot", 3, ins, 1, &oh);
    korch_onnx_attr_int(&g->w, node, "axis", dt_chance(r, 0.5) ? axis : axis - xs.rank);
    if (dt_binary_named(g, "Mul", dt_use(g, v), oh, &xs, x->mag * 2.0) < 0) return false;
    dt_cover(g, how);
    return true;
}

/* ScatterElements(x, indices, updates) along an axis, with a reduction. */
static bool scatter_into(dt_gen *g, int v) {
    static const char *const reductions[] = {"none", "add", "mul", "max", "min"};
    dt_rng *r = &g->frng;
    const dt_val *x = &g->vals[v];
    korch_shape xs = x->shape, is = xs;
    int axis = (int)dt_int(r, 0, xs.rank - 1);
    int red = (int)dt_int(r, 0, 4);
    for (int d = 0; d < xs.rank; d++) is.dims[d] = dt_int(r, 1, (int)xs.dims[d]);
    int64_t n = dt_numel(&is), len = xs.dims[axis], inner = 1;
    for (int d = axis + 1; d < is.rank; d++) inner *= is.dims[d];
    int64_t *idx = malloc(sizeof *idx * (size_t)(n + 1));
    float *upd = malloc(sizeof *upd * (size_t)(n + 1));
    int64_t *perm = malloc(sizeof *perm * (size_t)(len + 1));
    if (!idx || !upd || !perm) {
        free(idx);
        free(upd);
        free(perm);
        return false;
    }
    /* element i's position along the axis is (i / inner) % is.dims[axis];
     * with "none" every line along the axis takes distinct targets: a
     * permutation's prefix, drawn per line */
    int64_t along = is.dims[axis];
    for (int64_t line = 0; line < n / along; line++) {
        for (int64_t k = 0; k < len; k++) perm[k] = k;
        for (int64_t k = len - 1; k > 0; k--) {
            int64_t j = dt_int(r, 0, (int)k), t = perm[k];
            perm[k] = perm[j];
            perm[j] = t;
        }
        int64_t outer = line / inner, in = line % inner;
        for (int64_t a = 0; a < along; a++) {
            int64_t i = (outer * along + a) * inner + in, target = red == 0 ? perm[a] : dt_int(r, 0, (int)len - 1);
            idx[i] = dt_chance(r, 0.25) ? target - len : target; /* negative: counted from the end */
        }
    }
    for (int64_t i = 0; i < n; i++) upd[i] = (float)dt_unif(r, -1.0, 1.0);
    const char *iname = init_typed(g, KORCH_DTYPE_INT64, &is, idx);
    const char *uname = dt_const_data(g, &is, upd);
    free(idx);
    free(upd);
    free(perm);
    const char *y = fresh(g, "sc"), *ins[] = {dt_use(g, v), iname, uname};
    Onnx__NodeProto *node = dt_node(g, "ScatterElements", 3, ins, 1, &y);
    korch_onnx_attr_int(&g->w, node, "axis", axis);
    if (red) korch_onnx_attr_string(&g->w, node, "reduction", reductions[red]);
    /* a neighbour for it to be fused between: y + 0.5 */
    if (dt_binary_named(g, "Add", y, dt_const_scalar(g, 0.5f), &xs, x->mag + 1.5) < 0) return false;
    dt_cover(g, red ? "ScatterElements with a reduction" : "ScatterElements, reduction none");
    return true;
}

/* Trilu(x, k) + 0.5 over the last two dimensions. */
static bool trilu_into(dt_gen *g, int v) {
    dt_rng *r = &g->frng;
    const dt_val *x = &g->vals[v];
    korch_shape xs = x->shape;
    int64_t rows = xs.dims[xs.rank - 2], cols = xs.dims[xs.rank - 1];
    bool upper = dt_chance(r, 0.5), with_k = dt_chance(r, 0.7);
    int64_t k = dt_int(r, -(int)rows - 1, (int)cols + 1);
    const char *y = fresh(g, "tr"), *ins[] = {dt_use(g, v), with_k ? dt_const_i64(g, &k, 1) : ""};
    Onnx__NodeProto *node = dt_node(g, "Trilu", with_k ? 2 : 1, ins, 1, &y);
    if (!upper) korch_onnx_attr_int(&g->w, node, "upper", 0);
    if (dt_binary_named(g, "Add", y, dt_const_scalar(g, 0.5f), &xs, x->mag + 0.5) < 0) return false;
    dt_cover(g, upper ? "Trilu, upper" : "Trilu, lower");
    return true;
}

/* (values, indices) = TopK(x, K, axis); values * GatherElements(x, indices). */
static bool topk_into(dt_gen *g, int v) {
    dt_rng *r = &g->frng;
    const dt_val *x = &g->vals[v];
    if (!x->exact) return false;
    korch_shape ys = x->shape;
    int axis = (int)dt_int(r, 0, ys.rank - 1);
    int64_t k = dt_int(r, 1, (int)ys.dims[axis]);
    ys.dims[axis] = k;
    const char *outs[] = {fresh(g, "tv"), fresh(g, "ti")};
    const char *ins[] = {dt_use(g, v), dt_const_i64(g, &k, 1)};
    Onnx__NodeProto *node = dt_node(g, "TopK", 2, ins, 2, outs);
    korch_onnx_attr_int(&g->w, node, "axis", dt_chance(r, 0.5) ? axis : axis - ys.rank);
    bool smallest = dt_chance(r, 0.4);
    if (smallest) korch_onnx_attr_int(&g->w, node, "largest", 0);
    const char *ge = fresh(g, "ge"), *gin[] = {dt_use(g, v), outs[1]};
    node = dt_node(g, "GatherElements", 2, gin, 1, &ge);
    korch_onnx_attr_int(&g->w, node, "axis", axis);
    if (dt_binary_named(g, "Mul", outs[0], ge, &ys, x->mag * x->mag) < 0) return false;
    dt_cover(g, smallest ? "TopK smallest + GatherElements" : "TopK largest + GatherElements");
    return true;
}

void dt_feature_index(dt_gen *g) {
    if (!(g->features & DT_FEAT_INDEX)) return;
    dt_rng *r = &g->frng;
    int made = 0, n = g->n_vals;
    for (int v = 0; v < n && made < 2; v++) {
        const dt_val *x = &g->vals[v];
        if (x->dtype || x->hidden || x->shape.rank < 2 || dt_numel(&x->shape) > DT_MAX_ELEMS / 2 ||
            !dt_chance(r, 0.5))
            continue;
        if (x->exact && dt_chance(r, 0.7) ? onehot_into(g, v) : scatter_into(g, v)) made++;
    }
    /* drawn after the first two, which stay as they were (later features' draws move) */
    for (int v = 0, more = 0; v < n && more < 2; v++) {
        const dt_val *x = &g->vals[v];
        if (x->dtype || x->hidden || x->shape.rank < 2 || dt_numel(&x->shape) > DT_MAX_ELEMS / 2 ||
            !dt_chance(r, 0.4))
            continue;
        if (x->exact && dt_chance(r, 0.5) ? topk_into(g, v) : trilu_into(g, v)) more++;
    }
}
