/* Fission rules for pooling: a WINDOW layout (..., oh, ow, kh, kw) followed
 * by a reduce over the kernel axes. The window layout is an index map, so a
 * code generator folds it into the reduction's loads and no window tensor is
 * ever materialised (docs/fission.md explains the choice). */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "fission/rules.h"
#include "ops/window.h"

typedef struct pool_params {
    int spatial;
    int64_t kernel[3], strides[3], dilations[3], pads_begin[3], pads_end[3], out[3], in[3];
} pool_params;

/* The window geometry exactly as the reference kernels compute it
 * (ops/window.h: auto_pad, ceil_mode, the last-window rule). */
static korch_status pool_params_read(korch_fission_ctx *ctx, pool_params *p) {
    const korch_shape *x = fission_in_shape(ctx, 0);
    int s = x->rank - 2;
    if (s < 1 || s > 3) return fission_decline(ctx, "pooling with other than 1 to 3 spatial dimensions");
    korch_op_ctx octx = {.graph = ctx->g, .node = ctx->node};
    korch_window w;
    KORCH_TRY(korch_window_forward(&octx, x, NULL, korch_node_attr_int(ctx->node, "ceil_mode", 0) != 0, &w));
    memset(p, 0, sizeof *p);
    p->spatial = s;
    for (int d = 0; d < s; d++) {
        int j = 3 - s + d;
        p->kernel[d] = w.kernel[j];
        p->strides[d] = w.stride[j];
        p->dilations[d] = w.dilation[j];
        p->pads_begin[d] = w.pad_begin[j];
        p->pads_end[d] = w.pad_end[j];
        p->in[d] = w.in[j];
        p->out[d] = w.out[j];
        if (p->out[d] != fission_out_shape(ctx, 0)->dims[2 + d])
            return korch_error(KORCH_ERR_INTERNAL, "pooling window disagrees with shape inference");
    }
    return KORCH_OK;
}

static int window_of(korch_fission_ctx *ctx, int x, const pool_params *p, double pad_value) {
    return korch_pgraph_window(ctx->pg, x, p->spatial, p->kernel, p->strides, p->dilations, p->pads_begin, p->out,
                               pad_value);
}

static int window(korch_fission_ctx *ctx, const pool_params *p, double pad_value) {
    return window_of(ctx, fission_in(ctx, 0), p, pad_value);
}

static uint32_t kernel_axes(int rank, int spatial) {
    uint32_t mask = 0;
    for (int d = 0; d < spatial; d++) mask |= 1u << (rank + d);
    return mask;
}

/* The lowest value of dtype: padding that never wins a max. */
static double lowest(korch_dtype dt) {
    switch (dt) {
    case KORCH_DTYPE_INT8: return INT8_MIN;
    case KORCH_DTYPE_UINT8: return 0;
    case KORCH_DTYPE_INT32: return INT32_MIN;
    case KORCH_DTYPE_INT64: return -9223372036854775808.0;
    default: return -INFINITY;
    }
}

/* An int64 constant of full window rank (lead + 2 * spatial) that is 1
 * everywhere but at the given positions (-1: unused). */
static int index_term(korch_fission_ctx *ctx, int rank, int at_a, int64_t len_a, int at_b, int64_t len_b,
                      const int64_t *values) {
    korch_shape s = {.rank = rank};
    for (int k = 0; k < rank; k++) s.dims[k] = 1;
    if (at_a >= 0) s.dims[at_a] = len_a;
    if (at_b >= 0) s.dims[at_b] = len_b;
    korch_tensor t;
    if (korch_tensor_alloc(&t, KORCH_DTYPE_INT64, &s) != KORCH_OK) return -1;
    memcpy(t.data, values, korch_tensor_bytes(&t));
    return fission_constant(ctx, &t);
}

/* MaxPool's Indices: the flat input index (row-major, or column-major over
 * the spatial dims with storage_order = 1) of the first maximum in kernel
 * scan order, as the reference kernel picks it. With w the window and m its
 * max: first = min(where(w == m, tap, K)), and the index is the sum over the
 * window of where(tap == first, index, 0), index being an affine function of
 * the window coordinates built from small broadcast constants. */
static int max_pool_indices(korch_fission_ctx *ctx, const pool_params *p, int w, int m) {
    const korch_shape *x = fission_in_shape(ctx, 0);
    int rank = x->rank, s = p->spatial, wr = rank + s;
    uint32_t kaxes = kernel_axes(rank, s);
    bool column_major = korch_node_attr_int(ctx->node, "storage_order", 0) != 0;
    int64_t taps = 1, plane = 1;
    for (int d = 0; d < s; d++) taps *= p->kernel[d], plane *= p->in[d];
    /* tap number in scan order, shaped over the kernel axes */
    korch_shape ts = {.rank = s};
    for (int d = 0; d < s; d++) ts.dims[d] = p->kernel[d];
    korch_tensor tap_t;
    if (korch_tensor_alloc(&tap_t, KORCH_DTYPE_FLOAT32, &ts) != KORCH_OK) return -1;
    for (int64_t i = 0; i < taps; i++) ((float *)tap_t.data)[i] = (float)i;
    int tap = fission_constant(ctx, &tap_t);
    int eq = fission_binary(ctx, KORCH_EW_EQUAL, w, m);
    int cand = fission_where(ctx, eq, tap, fission_scalar(ctx, (double)taps, KORCH_DTYPE_FLOAT32));
    int first = fission_reduce(ctx, KORCH_REDUCE_MIN, cand, kaxes, true);
    int hit = fission_binary(ctx, KORCH_EW_EQUAL, tap, first);
    /* index = plane_base[n, c] + sum_d stride_d * (o_d * s_d + k_d * dil_d - pad_d) */
    int64_t n_planes = x->dims[0] * x->dims[1];
    int64_t *v = malloc((size_t)(n_planes > 1 ? n_planes : 1) * sizeof *v);
    if (!v) return -1;
    for (int64_t i = 0; i < n_planes; i++) v[i] = i * plane;
    int index = index_term(ctx, wr, 0, x->dims[0], 1, x->dims[1], v);
    free(v);
    for (int d = 0; d < s; d++) {
        int64_t stride = 1;
        if (column_major)
            for (int e = 0; e < d; e++) stride *= p->in[e];
        else
            for (int e = d + 1; e < s; e++) stride *= p->in[e];
        int64_t n = p->out[d] * p->kernel[d];
        v = malloc((size_t)(n > 0 ? n : 1) * sizeof *v);
        if (!v) return -1;
        for (int64_t o = 0; o < p->out[d]; o++)
            for (int64_t k = 0; k < p->kernel[d]; k++) {
                int64_t pos = o * p->strides[d] + k * p->dilations[d] - p->pads_begin[d];
                /* padded taps never hold the maximum; keep their index harmless */
                v[o * p->kernel[d] + k] = (pos < 0 ? 0 : pos) * stride;
            }
        int term = index_term(ctx, wr, 2 + d, p->out[d], rank + d, p->kernel[d], v);
        free(v);
        index = fission_binary(ctx, KORCH_EW_ADD, index, term);
    }
    int picked = fission_where(ctx, hit, index, fission_scalar(ctx, 0, KORCH_DTYPE_INT64));
    return fission_reduce(ctx, KORCH_REDUCE_SUM, picked, kaxes, false);
}

KORCH_FISSION_RULE(MaxPool) {
    pool_params p;
    KORCH_TRY(pool_params_read(ctx, &p));
    int rank = fission_in_shape(ctx, 0)->rank;
    /* an 8-bit tensor (a QOperator model's) pools its exact float32
     * widening and narrows back: the maximum is the same, and the code
     * generator's pooling kernels are float32 ones (the casts fuse) */
    korch_dtype dt = fission_in_dtype(ctx, 0);
    bool narrow = dt == KORCH_DTYPE_UINT8 || dt == KORCH_DTYPE_INT8;
    int x = narrow ? fission_cast(ctx, fission_in(ctx, 0), KORCH_DTYPE_FLOAT32) : fission_in(ctx, 0);
    int w = window_of(ctx, x, &p, lowest(narrow ? KORCH_DTYPE_FLOAT32 : dt));
    uint32_t kaxes = kernel_axes(rank, p.spatial);
    if (!fission_has_out(ctx, 1)) {
        int y = fission_reduce(ctx, KORCH_REDUCE_MAX, w, kaxes, false);
        fission_set_out(ctx, 0, narrow ? fission_cast(ctx, y, dt) : y);
        return fission_done(ctx);
    }
    int64_t taps = 1;
    for (int d = 0; d < p.spatial; d++) taps *= p.kernel[d];
    if (taps > (1 << 24)) return fission_decline(ctx, "MaxPool Indices over a window of more than 2^24 taps");
    int m = fission_reduce(ctx, KORCH_REDUCE_MAX, w, kaxes, true), y = fission_squeeze_axes(ctx, m, kaxes);
    fission_set_out(ctx, 0, narrow ? fission_cast(ctx, y, dt) : y);
    fission_set_out(ctx, 1, max_pool_indices(ctx, &p, w, m));
    return fission_done(ctx);
}

/* Number of window positions an average divides by, along one dimension:
 * positions inside the input, or (count_include_pad) inside the padded
 * extent [-pad_begin, in + pad_end) -- never the ceil_mode overhang. */
static int64_t window_count(const pool_params *p, int d, int64_t o, bool include_pad) {
    int64_t lo = include_pad ? -p->pads_begin[d] : 0, hi = include_pad ? p->in[d] + p->pads_end[d] : p->in[d];
    int64_t count = 0;
    for (int64_t k = 0; k < p->kernel[d]; k++) {
        int64_t i = o * p->strides[d] + k * p->dilations[d] - p->pads_begin[d];
        count += i >= lo && i < hi;
    }
    return count;
}

/* Sum over the window divided by a constant count tensor (out spatial shape,
 * broadcast over N and C); a plain mean when every window counts the full
 * kernel. */
KORCH_FISSION_RULE(AveragePool) {
    pool_params p;
    KORCH_TRY(pool_params_read(ctx, &p));
    bool include_pad = korch_node_attr_int(ctx->node, "count_include_pad", 0) != 0;
    int rank = fission_in_shape(ctx, 0)->rank;
    korch_dtype dt = fission_in_dtype(ctx, 0);
    if (dt != KORCH_DTYPE_FLOAT32) return fission_decline(ctx, "AveragePool of a non-float32 dtype");
    korch_shape cs = {.rank = p.spatial};
    int64_t full = 1;
    for (int d = 0; d < p.spatial; d++) {
        cs.dims[d] = p.out[d];
        full *= p.kernel[d];
    }
    korch_tensor counts;
    KORCH_TRY(korch_tensor_alloc(&counts, dt, &cs));
    int64_t total = korch_shape_numel(&cs);
    bool uniform = true;
    for (int64_t i = 0; i < total; i++) {
        int64_t c = 1, rem = i;
        for (int d = p.spatial - 1; d >= 0; d--) {
            c *= window_count(&p, d, rem % p.out[d], include_pad);
            rem /= p.out[d];
        }
        ((float *)counts.data)[i] = (float)c;
        if (c != full) uniform = false;
    }
    int w = window(ctx, &p, 0.0);
    int y;
    if (uniform) {
        korch_tensor_free(&counts);
        y = fission_reduce(ctx, KORCH_REDUCE_MEAN, w, kernel_axes(rank, p.spatial), false);
    } else {
        int sum = fission_reduce(ctx, KORCH_REDUCE_SUM, w, kernel_axes(rank, p.spatial), false);
        y = fission_binary(ctx, KORCH_EW_DIV, sum, fission_constant(ctx, &counts));
    }
    fission_set_out(ctx, 0, y);
    return fission_done(ctx);
}

static korch_status global_pool(korch_fission_ctx *ctx, korch_reduce_op op) {
    int rank = fission_in_shape(ctx, 0)->rank;
    uint32_t mask = (uint32_t)(((int64_t)1 << rank) - 1) & ~3u;
    int x = fission_in(ctx, 0);
    fission_set_out(ctx, 0, mask ? fission_reduce(ctx, op, x, mask, true) : x);
    return fission_done(ctx);
}

KORCH_FISSION_RULE(GlobalAveragePool) { return global_pool(ctx, KORCH_REDUCE_MEAN); }
KORCH_FISSION_RULE(GlobalMaxPool) { return global_pool(ctx, KORCH_REDUCE_MAX); }
