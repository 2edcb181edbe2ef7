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

static int window(korch_fission_ctx *ctx, const pool_params *p, double pad_value) {
    return korch_pgraph_window(ctx->pg, fission_in(ctx, 0), p->spatial, p->kernel, p->strides, p->dilations,
                               p->pads_begin, p->out, pad_value);
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

KORCH_FISSION_RULE(MaxPool) {
    if (fission_has_out(ctx, 1))
        return fission_decline(ctx, "MaxPool with the Indices output (argmax positions are neither an index map "
                                    "nor a sum/max/min/mean reduction)");
    pool_params p;
    KORCH_TRY(pool_params_read(ctx, &p));
    int rank = fission_in_shape(ctx, 0)->rank;
    int w = window(ctx, &p, lowest(fission_in_dtype(ctx, 0)));
    fission_set_out(ctx, 0, fission_reduce(ctx, KORCH_REDUCE_MAX, w, kernel_axes(rank, p.spatial), false));
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
