/* Reductions, Softmax, normalisations, layout operators, Concat, Split and
 * pooling.
 *
 * Numerical guards:
 * - InstanceNormalization and LayerNormalization normalise at least 4
 *   elements, and their input first gets a full random tensor added: a row
 *   that is constant (a broadcast value, a 1-element window) has variance ~0,
 *   and then 1/sqrt(var + eps) multiplies rounding noise by up to ~300;
 * - BatchNormalization's variances are in [0.5, 2], so 1/sqrt(var + eps) is
 *   bounded;
 * - ReduceSum's magnitude grows with the count: the driver loop tames it
 *   (dt_tame) before the next operator. */
#include <math.h>
#include <string.h>

#include "gen_internal.h"

static int rand_axis(dt_rng *r, int rank, bool negative_ok) {
    int a = dt_int(r, 0, rank - 1);
    return negative_ok && dt_chance(r, 0.3) ? a - rank : a;
}

int dt_reduce(dt_gen *g, int x) {
    dt_rng *r = &g->rng;
    const korch_shape xs = g->vals[x].shape;
    if (xs.rank < 1) return -1;
    static const char *const ops[] = {"ReduceMean", "ReduceSum", "ReduceMax", "ReduceMin", "ReduceMean"};
    const char *op = DT_PICK(r, ops);
    bool keep = dt_chance(r, 0.5);
    int64_t axes[KORCH_MAX_RANK];
    int n_axes = 0;
    unsigned mask = 0;
    while (mask == 0)
        for (int i = 0; i < xs.rank; i++)
            if (dt_chance(r, 0.4)) mask |= 1u << i;
    if (!keep && mask == (1u << xs.rank) - 1 && xs.rank > 1) mask &= ~1u; /* keep a rank >= 1 mostly */
    korch_shape out = {0};
    int64_t count = 1;
    for (int i = 0; i < xs.rank; i++) {
        if ((mask >> i) & 1u) {
            axes[n_axes++] = dt_chance(r, 0.3) ? i - xs.rank : i;
            count *= xs.dims[i];
            if (keep) out.dims[out.rank++] = 1;
        } else {
            out.dims[out.rank++] = xs.dims[i];
        }
    }
    double mag = strcmp(op, "ReduceSum") == 0 ? g->vals[x].mag * (double)count : g->vals[x].mag;
    int y = dt_new_val(g, &out, mag);
    if (y < 0) return -1;
    bool axes_input = strcmp(op, "ReduceSum") == 0; /* opset 13+; the others from opset 18 */
    const char *ins[] = {dt_use(g, x), axes_input ? dt_const_i64(g, axes, n_axes) : NULL};
    const char *outs[] = {g->vals[y].name};
    Onnx__NodeProto *n = dt_node(g, op, axes_input ? 2 : 1, ins, 1, outs);
    if (!axes_input) korch_onnx_attr_ints(&g->w, n, "axes", axes, n_axes);
    if (!keep || dt_chance(r, 0.3)) korch_onnx_attr_int(&g->w, n, "keepdims", keep);
    char what[64];
    snprintf(what, sizeof what, "%s keepdims=%d", op, keep);
    dt_cover(g, what);
    return y;
}

int dt_softmax(dt_gen *g, int x) {
    dt_rng *r = &g->rng;
    int rank = g->vals[x].shape.rank;
    if (rank < 1) return -1;
    bool log_sm = dt_chance(r, 0.25);
    int axis = rand_axis(r, rank, true);
    int64_t len = g->vals[x].shape.dims[axis < 0 ? axis + rank : axis];
    Onnx__NodeProto *n = NULL;
    int y = dt_unary(g, log_sm ? "LogSoftmax" : "Softmax", x, log_sm ? 2 * g->vals[x].mag + log((double)len) + 1 : 1, &n);
    if (y < 0) return -1;
    if (axis != -1 || dt_chance(r, 0.5)) korch_onnx_attr_int(&g->w, n, "axis", axis);
    dt_cover(g, log_sm ? "LogSoftmax" : axis == -1 || axis == rank - 1 ? "Softmax last axis" : "Softmax inner axis");
    return y;
}

/* x + a full random tensor: see the guard above */
static int spread(dt_gen *g, int x) {
    korch_shape s = g->vals[x].shape;
    return dt_binary_named(g, "Add", dt_use(g, x), dt_const_rand(g, &s, -1, 1), &s, g->vals[x].mag + 1);
}

int dt_normalize(dt_gen *g, int x) {
    dt_rng *r = &g->rng;
    korch_shape s = g->vals[x].shape;
    int kind = dt_int(r, 0, 2);
    if (kind == 0) {
        if (s.rank < 2) return -1;
        korch_shape cs = dt_shape(1, (int64_t[]){s.dims[1]});
        int y = dt_new_val(g, &s, 2 * g->vals[x].mag + 0.5);
        if (y < 0) return -1;
        const char *ins[] = {dt_use(g, x), dt_const_rand(g, &cs, 0.5, 1.5), dt_const_rand(g, &cs, -0.5, 0.5),
                             dt_const_rand(g, &cs, -0.5, 0.5), dt_const_rand(g, &cs, 0.5, 2)};
        const char *outs[] = {g->vals[y].name};
        Onnx__NodeProto *n = dt_node(g, "BatchNormalization", 5, ins, 1, outs);
        if (dt_chance(r, 0.3)) korch_onnx_attr_float(&g->w, n, "epsilon", 1e-3f);
        dt_cover(g, "BatchNormalization");
        return y;
    }
    if (kind == 1) {
        if (s.rank < 3) return -1;
        int64_t spatial = 1;
        for (int i = 2; i < s.rank; i++) spatial *= s.dims[i];
        if (spatial < 4) return -1;
        int a = spread(g, x);
        if (a < 0) return -1;
        korch_shape cs = dt_shape(1, (int64_t[]){s.dims[1]});
        int y = dt_new_val(g, &s, 3);
        if (y < 0) return -1;
        const char *ins[] = {dt_use(g, a), dt_const_rand(g, &cs, 0.5, 1.5), dt_const_rand(g, &cs, -0.5, 0.5)};
        const char *outs[] = {g->vals[y].name};
        dt_node(g, "InstanceNormalization", 3, ins, 1, outs);
        dt_cover(g, "InstanceNormalization");
        return y;
    }
    if (s.rank < 1) return -1;
    int axis = s.rank == 1 ? 0 : dt_int(r, s.rank >= 3 ? s.rank - 2 : 1, s.rank - 1);
    int64_t count = 1;
    korch_shape ps = {0};
    for (int i = axis; i < s.rank; i++) count *= s.dims[i], ps.dims[ps.rank++] = s.dims[i];
    if (count < 4) return -1;
    int a = spread(g, x);
    if (a < 0) return -1;
    int y = dt_new_val(g, &s, 3);
    if (y < 0) return -1;
    bool bias = dt_chance(r, 0.7);
    const char *ins[] = {dt_use(g, a), dt_const_rand(g, &ps, 0.5, 1.5), bias ? dt_const_rand(g, &ps, -0.5, 0.5) : NULL};
    const char *outs[] = {g->vals[y].name};
    Onnx__NodeProto *n = dt_node(g, "LayerNormalization", bias ? 3 : 2, ins, 1, outs);
    if (axis != s.rank - 1 || dt_chance(r, 0.3)) korch_onnx_attr_int(&g->w, n, "axis", dt_chance(r, 0.5) ? axis : axis - s.rank);
    if (dt_chance(r, 0.3)) korch_onnx_attr_float(&g->w, n, "epsilon", 1e-3f);
    dt_cover(g, axis == s.rank - 1 ? "LayerNormalization last axis" : "LayerNormalization several axes");
    return y;
}

/* ---- layout ---------------------------------------------------------------------- */

static int transpose(dt_gen *g, int x) {
    korch_shape s = g->vals[x].shape;
    if (s.rank < 2) return -1;
    int64_t perm[KORCH_MAX_RANK];
    bool identity = true;
    for (int i = 0; i < s.rank; i++) perm[i] = i;
    for (int tries = 0; identity && tries < 8; tries++) {
        for (int i = s.rank - 1; i > 0; i--) {
            int j = dt_int(&g->rng, 0, i);
            int64_t t = perm[i];
            perm[i] = perm[j], perm[j] = t;
        }
        identity = true;
        for (int i = 0; i < s.rank; i++) identity &= perm[i] == i;
    }
    korch_shape out = s;
    for (int i = 0; i < s.rank; i++) out.dims[i] = s.dims[perm[i]];
    Onnx__NodeProto *n = NULL;
    int y = dt_unary(g, "Transpose", x, g->vals[x].mag, &n);
    if (y < 0) return -1;
    g->vals[y].shape = out;
    korch_onnx_attr_ints(&g->w, n, "perm", perm, s.rank);
    dt_cover(g, "Transpose");
    return y;
}

static int reshape(dt_gen *g, int x) {
    dt_rng *r = &g->rng;
    korch_shape s = g->vals[x].shape, out = {0};
    int kind = dt_int(r, 0, 2);
    if (kind == 0 && s.rank >= 2) { /* merge two adjacent dimensions */
        int i = dt_int(r, 0, s.rank - 2);
        for (int k = 0; k < s.rank; k++) {
            if (k == i + 1) out.dims[out.rank - 1] *= s.dims[k];
            else out.dims[out.rank++] = s.dims[k];
        }
    } else if (kind == 1 && s.rank < 5) { /* split a dimension by a factor */
        int i = dt_int(r, 0, s.rank - 1);
        int64_t d = s.dims[i], f = 0;
        for (int64_t c = 2; c < d && !f; c++)
            if (d % c == 0 && dt_chance(r, 0.5)) f = c;
        if (!f) f = 1; /* inserts a 1 */
        for (int k = 0; k < s.rank; k++) {
            if (k == i) out.dims[out.rank++] = f, out.dims[out.rank++] = d / f;
            else out.dims[out.rank++] = s.dims[k];
        }
    } else { /* to (first, rest) */
        out = dt_shape(2, (int64_t[]){s.rank ? s.dims[0] : 1, s.rank ? dt_numel(&s) / s.dims[0] : 1});
    }
    int64_t spec[KORCH_MAX_RANK];
    for (int k = 0; k < out.rank; k++) spec[k] = out.dims[k];
    int minus = dt_chance(r, 0.4) ? dt_int(r, 0, out.rank - 1) : -1;
    if (minus >= 0) spec[minus] = -1;
    if (dt_chance(r, 0.3) && out.rank > 0 && s.rank > 0 && out.dims[0] == s.dims[0] && minus != 0) spec[0] = 0;
    Onnx__NodeProto *n = NULL;
    int y = dt_new_val(g, &out, g->vals[x].mag);
    if (y < 0) return -1;
    const char *ins[] = {dt_use(g, x), dt_const_i64(g, spec, out.rank)}, *outs[] = {g->vals[y].name};
    n = dt_node(g, "Reshape", 2, ins, 1, outs);
    (void)n;
    dt_cover(g, "Reshape");
    return y;
}

static int flatten(dt_gen *g, int x) {
    korch_shape s = g->vals[x].shape;
    int axis = dt_int(&g->rng, 0, s.rank);
    int64_t a = 1, b = 1;
    for (int i = 0; i < s.rank; i++) *(i < axis ? &a : &b) *= s.dims[i];
    Onnx__NodeProto *n = NULL;
    int y = dt_unary(g, "Flatten", x, g->vals[x].mag, &n);
    if (y < 0) return -1;
    g->vals[y].shape = dt_shape(2, (int64_t[]){a, b});
    if (axis != 1 || dt_chance(&g->rng, 0.3)) korch_onnx_attr_int(&g->w, n, "axis", axis);
    dt_cover(g, "Flatten");
    return y;
}

static int slice(dt_gen *g, int x) {
    dt_rng *r = &g->rng;
    korch_shape s = g->vals[x].shape, out = s;
    int64_t starts[2], ends[2], axes[2], steps[2];
    int n = 0;
    for (int tries = 0; tries < 6 && n < 2; tries++) {
        int a = dt_int(r, 0, s.rank - 1);
        int64_t d = s.dims[a];
        bool dup = false;
        for (int k = 0; k < n; k++) dup |= axes[k] == a || axes[k] == a - s.rank;
        if (d < 2 || dup) continue;
        int64_t lo = dt_int(r, 0, (int)d - 2), hi = dt_int(r, (int)lo + 1, (int)d), step = dt_chance(r, 0.3) ? 2 : 1;
        if (dt_chance(r, 0.15)) { /* reversed: from hi-1 down to lo */
            starts[n] = hi - 1, ends[n] = lo - 1 < 0 ? -d - 1 : lo - 1, steps[n] = -1;
            out.dims[a] = hi - lo;
            dt_cover(g, "Slice negative step");
        } else {
            starts[n] = dt_chance(r, 0.3) ? lo - d : lo, ends[n] = hi == d && dt_chance(r, 0.3) ? INT64_MAX : hi;
            steps[n] = step;
            out.dims[a] = (hi - lo + step - 1) / step;
        }
        axes[n] = dt_chance(r, 0.3) ? a - s.rank : a;
        n++;
    }
    if (n == 0) return -1;
    int y = dt_new_val(g, &out, g->vals[x].mag);
    if (y < 0) return -1;
    const char *ins[] = {dt_use(g, x), dt_const_i64(g, starts, n), dt_const_i64(g, ends, n), dt_const_i64(g, axes, n),
                         dt_const_i64(g, steps, n)};
    const char *outs[] = {g->vals[y].name};
    dt_node(g, "Slice", 5, ins, 1, outs);
    dt_cover(g, "Slice");
    return y;
}

static int pad(dt_gen *g, int x) {
    dt_rng *r = &g->rng;
    korch_shape s = g->vals[x].shape, out = s;
    if (s.rank < 1) return -1;
    static const char *const modes[] = {"constant", "constant", "reflect", "edge"};
    const char *mode = DT_PICK(r, modes);
    int64_t pads[2 * KORCH_MAX_RANK] = {0};
    int first = s.rank == 4 ? 2 : 0; /* spatial pads on images, any axis otherwise */
    for (int i = first; i < s.rank; i++) {
        int limit = mode[0] == 'r' ? (int)s.dims[i] - 1 : 2; /* reflect needs pad < dim */
        if (limit > 2) limit = 2;
        pads[i] = dt_int(r, 0, limit), pads[i + s.rank] = dt_int(r, 0, limit);
        out.dims[i] += pads[i] + pads[i + s.rank];
    }
    if (dt_numel(&out) > DT_MAX_ELEMS) return -1;
    bool value = mode[0] == 'c' && dt_chance(r, 0.5);
    int y = dt_new_val(g, &out, fmax(g->vals[x].mag, 0.5));
    if (y < 0) return -1;
    const char *ins[] = {dt_use(g, x), dt_const_i64(g, pads, 2 * s.rank), value ? dt_const_scalar(g, 0.5f) : NULL};
    const char *outs[] = {g->vals[y].name};
    Onnx__NodeProto *n = dt_node(g, "Pad", value ? 3 : 2, ins, 1, outs);
    if (mode[0] != 'c' || dt_chance(r, 0.3)) korch_onnx_attr_string(&g->w, n, "mode", mode);
    char what[32];
    snprintf(what, sizeof what, "Pad %s", mode);
    dt_cover(g, what);
    return y;
}

static int squeeze_unsqueeze(dt_gen *g, int x) {
    korch_shape s = g->vals[x].shape, out = {0};
    int64_t axes[KORCH_MAX_RANK];
    int n = 0;
    for (int i = 0; i < s.rank; i++)
        if (s.dims[i] == 1 && s.rank > 1) axes[n++] = i;
    bool squeeze = n > 0 && dt_chance(&g->rng, 0.7);
    if (squeeze) {
        n = 1 + (n > 1 && dt_chance(&g->rng, 0.5));
        for (int i = 0; i < s.rank; i++)
            if (!(i == axes[0] || (n == 2 && i == axes[1]))) out.dims[out.rank++] = s.dims[i];
    } else {
        if (s.rank >= 5) return -1;
        int a = dt_int(&g->rng, 0, s.rank);
        for (int i = 0, k = 0; i <= s.rank; i++) out.dims[out.rank++] = i == a ? 1 : s.dims[k++];
        axes[0] = a, n = 1;
    }
    int y = dt_new_val(g, &out, g->vals[x].mag);
    if (y < 0) return -1;
    const char *ins[] = {dt_use(g, x), dt_const_i64(g, axes, n)}, *outs[] = {g->vals[y].name};
    dt_node(g, squeeze ? "Squeeze" : "Unsqueeze", 2, ins, 1, outs);
    dt_cover(g, squeeze ? "Squeeze" : "Unsqueeze");
    return y;
}

/* Nearest upsampling of the last axes (the spatial ones of an image): by 2
 * or 3 (the generator's residue split of floor(i / f) tables,
 * docs/codegen.md) or to a size that is no multiple (a table kept), under
 * the two coordinate conventions exporters write; or (30 %) bicubic. */
int dt_feature_resize(dt_gen *g, int x) {
    dt_rng *r = &g->frng;
    korch_shape s = g->vals[x].shape, out = s;
    if (s.rank < 2) return -1;
    int first = s.rank == 4 ? 2 : s.rank - 1;
    int64_t sizes[KORCH_MAX_RANK];
    for (int i = 0; i < s.rank; i++) {
        if (i >= first) {
            int kind = dt_int(r, 0, 3);
            out.dims[i] = kind <= 1 ? s.dims[i] * 2 : kind == 2 ? s.dims[i] * 3 : s.dims[i] + dt_int(r, 1, 3);
        }
        sizes[i] = out.dims[i];
    }
    if (dt_numel(&out) > DT_MAX_ELEMS) return -1;
    int y = dt_new_val(g, &out, g->vals[x].mag);
    if (y < 0) return -1;
    const char *ins[] = {dt_use(g, x), "", "", dt_const_i64(g, sizes, s.rank)}, *outs[] = {g->vals[y].name};
    Onnx__NodeProto *n = dt_node(g, "Resize", 4, ins, 1, outs);
    bool asym = dt_chance(r, 0.5);
    korch_onnx_attr_string(&g->w, n, "coordinate_transformation_mode", asym ? "asymmetric" : "half_pixel");
    /* drawn after the nearest form's own choices (later draws of a seed move) */
    if (dt_chance(r, 0.3)) {
        /* bicubic (PyTorch's a = -0.75, or -0.5), sometimes excluding the
         * outside taps: overshoots by up to about a quarter */
        korch_onnx_attr_string(&g->w, n, "mode", "cubic");
        if (dt_chance(r, 0.5)) korch_onnx_attr_float(&g->w, n, "cubic_coeff_a", -0.5f);
        bool exclude = dt_chance(r, 0.4);
        if (exclude) korch_onnx_attr_int(&g->w, n, "exclude_outside", 1);
        g->vals[y].mag *= 1.5;
        dt_cover(g, exclude ? "Resize cubic, exclude_outside" : "Resize cubic");
        return y;
    }
    korch_onnx_attr_string(&g->w, n, "mode", "nearest");
    korch_onnx_attr_string(&g->w, n, "nearest_mode", asym ? "floor" : "round_prefer_floor");
    dt_cover(g, asym ? "Resize nearest asymmetric" : "Resize nearest half_pixel");
    return y;
}

/* A Resize of the spatial axes of 4-D x to h x w: `mode` linear or nearest,
 * one of the coordinate conventions exporters write; from the features'
 * stream. */
static int resize_to(dt_gen *g, int x, int64_t h, int64_t w, bool linear) {
    dt_rng *r = &g->frng;
    korch_shape out = g->vals[x].shape;
    out.dims[2] = h, out.dims[3] = w;
    if (dt_numel(&out) > DT_MAX_ELEMS) return -1;
    int y = dt_new_val(g, &out, g->vals[x].mag);
    if (y < 0) return -1;
    const char *ins[] = {dt_use(g, x), "", "", dt_const_i64(g, out.dims, 4)}, *outs[] = {g->vals[y].name};
    Onnx__NodeProto *n = dt_node(g, "Resize", 4, ins, 1, outs);
    static const char *const coords[] = {"half_pixel", "align_corners", "asymmetric", "pytorch_half_pixel"};
    const char *coord = coords[dt_int(r, 0, 3)];
    korch_onnx_attr_string(&g->w, n, "mode", linear ? "linear" : "nearest");
    korch_onnx_attr_string(&g->w, n, "coordinate_transformation_mode", coord);
    return y;
}

/* DT_FEAT_HEAD: a segmentation decode head on a 4-D value v (N, C, H, W):
 * v brought down to about half its size and back up (linear or nearest,
 * once or twice), concatenated on the channels with v itself in a random
 * order, and mixed by a 1x1 convolution: the pattern fission computes part
 * by part, each convolution at its part's resolution (docs/fission.md).
 * Made after the random walk, at most once. */
void dt_feature_head(dt_gen *g) {
    if (!(g->features & DT_FEAT_HEAD)) return;
    int n = g->n_vals;
    for (int v = 0; v < n; v++) {
        const korch_shape s = g->vals[v].shape;
        if (s.rank != 4 || g->vals[v].dtype || g->vals[v].hidden || s.dims[2] < 2 || s.dims[3] < 2 ||
            !dt_chance(&g->frng, 0.6))
            continue;
        int down = resize_to(g, v, (s.dims[2] + 1) / 2, (s.dims[3] + 1) / 2, false);
        int parts[3] = {v, -1, -1}, n_parts = 1;
        for (int k = 0; k < 1 + dt_chance(&g->frng, 0.4) && down >= 0; k++) {
            int up = resize_to(g, down, s.dims[2], s.dims[3], dt_chance(&g->frng, 0.7));
            if (up >= 0) parts[n_parts++] = up;
        }
        if (n_parts < 2) return;
        if (dt_chance(&g->frng, 0.5)) parts[0] = parts[1], parts[1] = v; /* v second */
        korch_shape cat = s;
        cat.dims[1] = s.dims[1] * n_parts;
        if (dt_numel(&cat) > DT_MAX_ELEMS) return;
        int x = dt_new_val(g, &cat, g->vals[v].mag);
        if (x < 0) return;
        const char *ins[3], *outs[] = {g->vals[x].name};
        for (int k = 0; k < n_parts; k++) ins[k] = dt_use(g, parts[k]);
        Onnx__NodeProto *node = dt_node(g, "Concat", n_parts, ins, 1, outs);
        korch_onnx_attr_int(&g->w, node, "axis", 1);
        dt_rng main = g->rng;
        g->rng = g->frng;
        g->pointwise = true;
        int y = dt_conv(g, x);
        g->pointwise = false;
        g->frng = g->rng;
        g->rng = main;
        if (y >= 0) dt_cover(g, n_parts == 3 ? "decode head of three parts" : "decode head of two parts");
        return;
    }
}

int dt_layout(dt_gen *g, int x) {
    switch (dt_int(&g->rng, 0, 6)) {
    case 0: return transpose(g, x);
    case 1: return reshape(g, x);
    case 2: return flatten(g, x);
    case 3: return slice(g, x);
    case 4: return pad(g, x);
    default: return squeeze_unsqueeze(g, x);
    }
}

/* ---- Concat, Split ------------------------------------------------------------ */

int dt_concat(dt_gen *g, int x) {
    dt_rng *r = &g->rng;
    korch_shape s = g->vals[x].shape;
    if (s.rank < 1) return -1;
    int axis = dt_int(r, 0, s.rank - 1), other = -1;
    for (int v = g->n_vals - 1; v >= 0 && other < 0; v--) {
        const korch_shape *o = &g->vals[v].shape;
        if (v == x || o->rank != s.rank || g->vals[v].hidden) continue; /* hidden: features only */
        bool fits = true;
        for (int i = 0; i < s.rank; i++) fits &= i == axis || o->dims[i] == s.dims[i];
        if (fits) other = v;
    }
    int ins_v[3] = {x, other >= 0 ? other : x, x};
    int n_in = dt_chance(r, 0.25) ? 3 : 2;
    if (dt_chance(r, 0.5)) ins_v[0] = ins_v[1], ins_v[1] = x;
    korch_shape out = s;
    out.dims[axis] = 0;
    double mag = 0;
    const char *ins[3];
    for (int k = 0; k < n_in; k++) {
        out.dims[axis] += g->vals[ins_v[k]].shape.dims[axis];
        mag = fmax(mag, g->vals[ins_v[k]].mag);
    }
    if (dt_numel(&out) > DT_MAX_ELEMS) return -1;
    for (int k = 0; k < n_in; k++) ins[k] = dt_use(g, ins_v[k]);
    int y = dt_new_val(g, &out, mag);
    if (y < 0) return -1;
    const char *outs[] = {g->vals[y].name};
    Onnx__NodeProto *n = dt_node(g, "Concat", n_in, ins, 1, outs);
    korch_onnx_attr_int(&g->w, n, "axis", dt_chance(r, 0.3) ? axis - s.rank : axis);
    dt_cover(g, other >= 0 ? "Concat of two values" : "Concat x with itself");
    return y;
}

int dt_split(dt_gen *g, int x) {
    dt_rng *r = &g->rng;
    korch_shape s = g->vals[x].shape;
    int axes[KORCH_MAX_RANK], na = 0;
    for (int i = 0; i < s.rank; i++)
        if (s.dims[i] >= 2) axes[na++] = i;
    if (na == 0 || g->n_vals + 3 > DT_MAX_VALS) return -1;
    int axis = axes[dt_int(r, 0, na - 1)];
    int64_t d = s.dims[axis];
    int parts = d >= 3 && dt_chance(r, 0.4) ? 3 : 2;
    int64_t sizes[3];
    bool even = d % parts == 0 && dt_chance(r, 0.5);
    if (even) {
        for (int k = 0; k < parts; k++) sizes[k] = d / parts;
    } else {
        int64_t left = d;
        for (int k = 0; k < parts - 1; k++) {
            sizes[k] = dt_int(r, 1, (int)(left - (parts - 1 - k)));
            left -= sizes[k];
        }
        sizes[parts - 1] = left;
    }
    const char *outs[3];
    int ys[3];
    for (int k = 0; k < parts; k++) {
        korch_shape o = s;
        o.dims[axis] = sizes[k];
        ys[k] = dt_new_val(g, &o, g->vals[x].mag);
        outs[k] = g->vals[ys[k]].name;
    }
    const char *ins[] = {dt_use(g, x), even ? NULL : dt_const_i64(g, sizes, parts)};
    Onnx__NodeProto *n = dt_node(g, "Split", even ? 1 : 2, ins, parts, outs);
    korch_onnx_attr_int(&g->w, n, "axis", axis);
    dt_cover(g, even ? "Split even" : "Split sizes");
    return ys[dt_int(r, 0, parts - 1)];
}

/* ---- pooling ------------------------------------------------------------------ */

int dt_pool(dt_gen *g, int x) {
    dt_rng *r = &g->rng;
    korch_shape s = g->vals[x].shape;
    if (s.rank != 4) return -1;
    int kind = dt_int(r, 0, 4);
    if (kind >= 3) {
        const char *op = kind == 3 ? "GlobalAveragePool" : "GlobalMaxPool";
        int y = dt_unary(g, op, x, g->vals[x].mag, NULL);
        if (y >= 0) g->vals[y].shape.dims[2] = g->vals[y].shape.dims[3] = 1, dt_cover(g, op);
        return y;
    }
    int k = dt_int(r, 2, 3), stride = dt_int(r, 1, 2), p = dt_chance(r, 0.4) ? 1 : 0;
    bool ceil_mode = dt_chance(r, 0.15);
    korch_shape out = s;
    for (int i = 2; i < 4; i++) {
        int64_t span = s.dims[i] + 2 * p - k;
        if (span < 0) return -1;
        out.dims[i] = (ceil_mode ? (span + stride - 1) / stride : span / stride) + 1;
        /* ONNX: with ceil_mode the last window must start inside the input or left pad */
        /* (opsets disagree on dropping it otherwise: not generated) */
        if (ceil_mode && (out.dims[i] - 1) * stride >= s.dims[i] + p) return -1;
    }
    const char *op = kind == 0 ? "MaxPool" : "AveragePool";
    int y = dt_new_val(g, &out, g->vals[x].mag);
    if (y < 0) return -1;
    const char *ins[] = {dt_use(g, x)}, *outs[] = {g->vals[y].name};
    Onnx__NodeProto *n = dt_node(g, op, 1, ins, 1, outs);
    korch_onnx_attr_ints(&g->w, n, "kernel_shape", (int64_t[]){k, k}, 2);
    korch_onnx_attr_ints(&g->w, n, "strides", (int64_t[]){stride, stride}, 2);
    if (p) korch_onnx_attr_ints(&g->w, n, "pads", (int64_t[]){p, p, p, p}, 4);
    if (ceil_mode) korch_onnx_attr_int(&g->w, n, "ceil_mode", 1);
    bool cip = kind != 0 && p && dt_chance(r, 0.5);
    if (cip) korch_onnx_attr_int(&g->w, n, "count_include_pad", 1);
    char what[48];
    snprintf(what, sizeof what, "%s%s%s", op, ceil_mode ? " ceil" : "", cip ? " count_include_pad" : "");
    dt_cover(g, what);
    return y;
}
