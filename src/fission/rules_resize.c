/* Fission rules for Resize and Upsample, on the reference's own plan
 * (ops/resize.h: coordinate modes, rounding, scales vs sizes, per opset):
 *
 *   nearest  one layout primitive: a lookup table per resized axis
 *            (RESIZE_NEAREST), extrapolated positions read the pad value;
 *   linear   separable, one pass per resized axis in axis order, like the
 *            reference: y = gather(x, lo) * w0 + gather(x, hi) * w1, with
 *            the gathers as table layouts and w0, w1 constant weights
 *            shaped to broadcast along the axis;
 *   cubic    per resized axis a layout adding a tap axis of four
 *            (korch_resize_cubic_taps), times constant weights, summed. */
#include <math.h>
#include <stdlib.h>

#include "fission/rules.h"
#include "ops/resize.h"

static korch_status read_plan(const korch_graph *g, const korch_node *node, resize_plan *plan) {
    korch_tensor store[4];
    korch_tensor *ins[4] = {0};
    int n_inputs = node->n_inputs < 4 ? node->n_inputs : 4;
    for (int i = 0; i < n_inputs; i++) {
        if (node->inputs[i] < 0) continue;
        const korch_value *v = &g->values[node->inputs[i]];
        store[i] = (korch_tensor){.dtype = v->dtype, .shape = v->shape, .data = v->is_constant ? v->constant.data : NULL};
        ins[i] = &store[i];
    }
    korch_op_ctx octx = {.graph = g, .node = node, .n_inputs = n_inputs, .inputs = ins};
    return korch_resize_plan(&octx, plan);
}

/* x's shape with the resized axes at their output lengths */
static korch_shape resized_shape(korch_fission_ctx *ctx, const resize_plan *p, int x) {
    korch_shape out = *fission_shape(ctx, x);
    for (int d = 0; d < p->rank; d++)
        if (!korch_resize_axis_is_identity(p, d)) out.dims[d] = p->out_dims[d];
    return out;
}

static int nearest(korch_fission_ctx *ctx, const resize_plan *p, int x) {
    if (x < 0) return -1;
    int64_t *tables[KORCH_MAX_RANK] = {0};
    bool any = false;
    for (int d = 0; d < p->rank; d++) {
        if (korch_resize_axis_is_identity(p, d)) continue;
        tables[d] = malloc((size_t)(p->out_dims[d] + 1) * sizeof(int64_t));
        if (!tables[d]) {
            for (int k = 0; k < d; k++) free(tables[k]);
            korch_error(KORCH_ERR_OUT_OF_MEMORY, "out of memory");
            return -1;
        }
        for (int64_t o = 0; o < p->out_dims[d]; o++) tables[d][o] = korch_resize_nearest_index(p, d, o);
        any = true;
    }
    korch_dtype dt = ctx->pg->values[x].dtype;
    double fill = dt == KORCH_DTYPE_FLOAT32 || dt == KORCH_DTYPE_FLOAT64 ? p->extrapolation : 0.0;
    korch_shape out = resized_shape(ctx, p, x);
    return any ? korch_pgraph_remap(ctx->pg, KORCH_LAYOUT_RESIZE_NEAREST, x, &out, tables, fill) : x;
}

/* A weight vector along axis d, shaped (n, 1, ..., 1) to broadcast against
 * a rank-`rank` tensor. */
static int weights(korch_fission_ctx *ctx, const double *w, int64_t n, int d, int rank) {
    korch_shape s = {.rank = rank - d};
    s.dims[0] = n;
    for (int k = 1; k < s.rank; k++) s.dims[k] = 1;
    korch_tensor t;
    if (korch_tensor_alloc(&t, KORCH_DTYPE_FLOAT32, &s) != KORCH_OK) return -1;
    for (int64_t i = 0; i < n; i++) ((float *)t.data)[i] = (float)w[i];
    return fission_constant(ctx, &t);
}

/* Gathers along axis d through a table (entries -1 read `fill`). */
static int take(korch_fission_ctx *ctx, int x, int d, int64_t *table, int64_t n, double fill) {
    if (x < 0) {
        free(table);
        return -1;
    }
    korch_shape out = *fission_shape(ctx, x);
    out.dims[d] = n;
    int64_t *tables[KORCH_MAX_RANK] = {0};
    tables[d] = table;
    return korch_pgraph_remap(ctx->pg, KORCH_LAYOUT_GATHER, x, &out, tables, fill);
}

static int linear(korch_fission_ctx *ctx, const resize_plan *p, int y) {
    for (int d = 0; d < p->rank && y >= 0; d++) {
        if (korch_resize_axis_is_identity(p, d)) continue;
        int64_t n = p->out_dims[d], in_len = fission_shape(ctx, y)->dims[d];
        int64_t *lo = malloc((size_t)(n + 1) * sizeof *lo), *hi = malloc((size_t)(n + 1) * sizeof *hi);
        double *w0 = malloc((size_t)(n + 1) * sizeof *w0), *w1 = malloc((size_t)(n + 1) * sizeof *w1);
        if (!lo || !hi || !w0 || !w1) {
            free(lo), free(hi), free(w0), free(w1);
            korch_error(KORCH_ERR_OUT_OF_MEMORY, "out of memory");
            return -1;
        }
        for (int64_t j = 0; j < n; j++) {
            bool outside;
            double x = korch_resize_source_coord(p, d, j, &outside);
            if (outside) {
                lo[j] = hi[j] = -1; /* both read the extrapolation value */
                w0[j] = 1.0;
                w1[j] = 0.0;
                continue;
            }
            double f = floor(x);
            w1[j] = x - f;
            w0[j] = 1.0 - w1[j];
            lo[j] = korch_resize_clamp_index(f, in_len);
            hi[j] = korch_resize_clamp_index(f + 1.0, in_len);
        }
        int a = take(ctx, y, d, lo, n, p->extrapolation);
        int b = take(ctx, y, d, hi, n, p->extrapolation);
        int wa = weights(ctx, w0, n, d, p->rank), wb = weights(ctx, w1, n, d, p->rank);
        free(w0), free(w1);
        y = fission_binary(ctx, KORCH_EW_ADD, fission_binary(ctx, KORCH_EW_MUL, a, wa),
                           fission_binary(ctx, KORCH_EW_MUL, b, wb));
    }
    return y;
}

/* One cubic pass along axis d as three primitives, not four gathers: a
 * layout adding a trailing tap axis of 4 (input index along d =
 * table[4 * o_d + tap]), times constant weights shaped (n, 1, ..., 1, 4),
 * red SUM over the taps. Four separate gathers, products and sums would
 * give the candidate enumeration a dense 11-node diamond per axis (a
 * bicubic resize alone made over 5000 candidates). */
static int cubic_pass(korch_fission_ctx *ctx, const resize_plan *p, int d, int y) {
    const korch_shape in = *fission_shape(ctx, y);
    int rank = in.rank;
    if (rank + 1 > KORCH_MAX_RANK) {
        korch_error(KORCH_ERR_UNSUPPORTED, "cubic Resize of a rank-8 tensor (the taps add an axis)");
        return -1;
    }
    int64_t n = p->out_dims[d];
    int64_t *table = malloc((size_t)(4 * n + 1) * sizeof *table);
    korch_tensor wt;
    korch_shape ws = {.rank = rank + 1 - d};
    ws.dims[0] = n;
    for (int k = 1; k < ws.rank; k++) ws.dims[k] = 1;
    ws.dims[ws.rank - 1] = 4;
    if (!table || korch_tensor_alloc(&wt, KORCH_DTYPE_FLOAT32, &ws) != KORCH_OK) {
        free(table);
        korch_error(KORCH_ERR_OUT_OF_MEMORY, "out of memory");
        return -1;
    }
    korch_index_map map = {.input_rank = rank};
    for (int k = 0; k < rank; k++) map.terms[k] = korch_index_term_var(k);
    float *w = wt.data;
    for (int64_t j = 0; j < n; j++) {
        int64_t t[4];
        double wj[4];
        bool inside = korch_resize_cubic_taps(p, d, j, t, wj);
        for (int k = 0; k < 4; k++) {
            table[4 * j + k] = inside ? t[k] : -1; /* -1 reads the extrapolation value */
            w[4 * j + k] = inside ? (float)wj[k] : k == 0;
        }
        map.may_be_out_of_bounds |= !inside;
    }
    map.terms[d].coef[d] = 4;
    map.terms[d].coef[rank] = 1;
    map.terms[d].table = table;
    map.terms[d].table_size = 4 * n;
    korch_shape taps = in;
    taps.dims[d] = n;
    taps.dims[taps.rank++] = 4;
    int g = korch_pgraph_layout(ctx->pg, KORCH_LAYOUT_WINDOW, 1, &y, &taps, &map, p->extrapolation);
    if (g < 0) {
        free(table);
        korch_tensor_free(&wt);
        return -1;
    }
    int prod = fission_binary(ctx, KORCH_EW_MUL, g, fission_constant(ctx, &wt));
    return fission_reduce(ctx, KORCH_REDUCE_SUM, prod, 1u << rank, false);
}

static int cubic(korch_fission_ctx *ctx, const resize_plan *p, int y) {
    for (int d = 0; d < p->rank && y >= 0; d++)
        if (!korch_resize_axis_is_identity(p, d)) y = cubic_pass(ctx, p, d, y);
    return y;
}

static int resize_apply(korch_fission_ctx *ctx, const resize_plan *p, int x) {
    return p->mode == RESIZE_NEAREST ? nearest(ctx, p, x) : p->mode == RESIZE_LINEAR ? linear(ctx, p, x)
                                                                                     : cubic(ctx, p, x);
}

bool korch_fission_resize_linear_map(const korch_graph *g, const korch_node *resize, int64_t *in_elems,
                                     int64_t *out_elems) {
    resize_plan p;
    if (read_plan(g, resize, &p) != KORCH_OK) {
        korch_error_clear();
        return false;
    }
    if (p.coord == COORD_TF_CROP_AND_RESIZE || p.rank < 3 || !korch_resize_axis_is_identity(&p, 0) ||
        !korch_resize_axis_is_identity(&p, 1))
        return false;
    *in_elems = *out_elems = 1;
    for (int d = 2; d < p.rank; d++) {
        *in_elems *= p.in_dims[d];
        *out_elems *= p.out_dims[d];
    }
    return true;
}

int korch_fission_resize_value(korch_fission_ctx *ctx, const korch_node *resize, int x) {
    resize_plan p;
    if (x < 0 || read_plan(ctx->g, resize, &p) != KORCH_OK) return -1;
    return resize_apply(ctx, &p, x);
}

static korch_status resize_rule(korch_fission_ctx *ctx) {
    resize_plan plan;
    KORCH_TRY(read_plan(ctx->g, ctx->node, &plan));
    if (plan.mode == RESIZE_CUBIC && plan.rank + 1 > KORCH_MAX_RANK)
        return fission_decline(ctx, "cubic Resize of a rank-8 tensor (its taps would add a ninth axis)");
    fission_set_out(ctx, 0, resize_apply(ctx, &plan, fission_in(ctx, 0)));
    return fission_done(ctx);
}

KORCH_FISSION_RULE(Resize) { return resize_rule(ctx); }
KORCH_FISSION_RULE(Upsample) { return resize_rule(ctx); }
