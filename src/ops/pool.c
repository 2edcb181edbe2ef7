/* MaxPool, AveragePool, GlobalMaxPool and GlobalAveragePool over 1-3
 * spatial dimensions.
 *
 * Padding never contributes a value: MaxPool ignores padded positions and
 * AveragePool divides by the number of real inputs (count_include_pad = 0) or
 * by the window size clipped to the padded input (count_include_pad = 1, as
 * PyTorch and onnxruntime do with ceil_mode). A window that would see only
 * padding has no defined result, so such attributes are rejected in infer. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ops/flop_count.h"
#include "ops/op.h"
#include "ops/window.h"

/* Above this many outputs along one dimension, the exact search for windows
 * of only padding is refused rather than run (no real model comes close). */
#define MAX_SCANNED_OUTPUTS ((int64_t)1 << 24)

typedef struct pool_geometry {
    korch_window w;
    int64_t planes; /* N * C */
    bool count_include_pad;
    bool column_major_indices; /* storage_order = 1 */
} pool_geometry;

static korch_status read_flag(const korch_op_ctx *ctx, const char *name, bool *out) {
    int64_t v = korch_node_attr_int(ctx->node, name, 0);
    if (v != 0 && v != 1)
        return korch_op_error(ctx, KORCH_ERR_INVALID_MODEL, "%s is %lld; expected 0 or 1", name, (long long)v);
    *out = v == 1;
    return KORCH_OK;
}

/* Taps of output position o of 3-D slot j that land on real input: [*lo, *hi). */
static void valid_taps(const korch_window *w, int j, int64_t o, int64_t *lo, int64_t *hi) {
    korch_window_valid_range(o * w->stride[j] - w->pad_begin[j], w->dilation[j], w->in[j], w->kernel[j], lo, hi);
}

static korch_status pool_geometry_read(const korch_op_ctx *ctx, pool_geometry *g) {
    const korch_shape *x = &ctx->inputs[0]->shape;
    korch_dtype dt = ctx->inputs[0]->dtype;
    bool max = strcmp(ctx->node->op_type, "MaxPool") == 0;
    /* MaxPool-12 takes 8-bit tensors too (QOperator models pool uint8) */
    if (!(max && ctx->node->opset >= 12 && (dt == KORCH_DTYPE_UINT8 || dt == KORCH_DTYPE_INT8)))
        KORCH_TRY(korch_op_require_dtype(ctx, 0, KORCH_DTYPE_FLOAT32));
    bool ceil_mode = false;
    KORCH_TRY(read_flag(ctx, "ceil_mode", &ceil_mode));
    KORCH_TRY(read_flag(ctx, "count_include_pad", &g->count_include_pad));
    KORCH_TRY(read_flag(ctx, "storage_order", &g->column_major_indices));
    KORCH_TRY(korch_window_forward(ctx, x, NULL, ceil_mode, &g->w));
    g->planes = x->dims[0] * x->dims[1];
    const korch_window *w = &g->w;
    for (int j = 3 - w->spatial; j < 3; j++) {
        /* Pads shorter than the window and a dilation no wider than the input
         * give every window a real input (the first tap at or after position
         * 0 lies before `in`), so only other dimensions need the exact scan. */
        int64_t extent = w->dilation[j] * (w->kernel[j] - 1) + 1;
        if (w->pad_begin[j] < extent && w->pad_end[j] < extent && w->dilation[j] <= w->in[j]) continue;
        if (w->out[j] > MAX_SCANNED_OUTPUTS)
            return korch_op_error(ctx, KORCH_ERR_UNSUPPORTED,
                                  "spatial dimension %d: with pads %lld+%lld and dilation %lld some windows may see "
                                  "only padding, and the %lld outputs are too many to check",
                                  j - (3 - w->spatial), (long long)w->pad_begin[j], (long long)w->pad_end[j],
                                  (long long)w->dilation[j], (long long)w->out[j]);
        for (int64_t o = 0; o < w->out[j]; o++) {
            int64_t lo, hi;
            valid_taps(w, j, o, &lo, &hi);
            if (lo == hi)
                return korch_op_error(ctx, KORCH_ERR_INVALID_MODEL,
                                      "output position %lld of spatial dimension %d pools only padding (input %lld, "
                                      "pads %lld+%lld, kernel %lld, stride %lld, dilation %lld)",
                                      (long long)o, j - (3 - w->spatial), (long long)w->in[j], (long long)w->pad_begin[j],
                                      (long long)w->pad_end[j], (long long)w->kernel[j], (long long)w->stride[j],
                                      (long long)w->dilation[j]);
        }
    }
    return KORCH_OK;
}

static korch_status infer_pool(korch_op_ctx *ctx) {
    pool_geometry g;
    KORCH_TRY(pool_geometry_read(ctx, &g));
    if (ctx->n_outputs > 1 && ctx->outputs[1] && ctx->node->opset < 8)
        return korch_op_error(ctx, KORCH_ERR_INVALID_MODEL, "the Indices output needs opset 8 or later");
    korch_shape out = ctx->inputs[0]->shape;
    for (int i = 0; i < g.w.spatial; i++) out.dims[2 + i] = g.w.out[3 - g.w.spatial + i];
    korch_op_set_output(ctx, 0, ctx->inputs[0]->dtype, &out); /* AveragePool's is float32 (checked) */
    korch_op_set_output(ctx, 1, KORCH_DTYPE_INT64, &out);
    return KORCH_OK;
}

/* Per output position of every 3-D slot: the valid tap range and, for
 * AveragePool with count_include_pad, the taps inside the padded input. */
typedef struct pool_ranges {
    int64_t *lo[3], *hi[3], *padded[3];
    int64_t *storage;
} pool_ranges;

static korch_status pool_ranges_make(const korch_op_ctx *ctx, const korch_window *w, pool_ranges *r) {
    int64_t total = w->out[0] + w->out[1] + w->out[2];
    r->storage = malloc((size_t)(3 * total) * sizeof *r->storage);
    if (!r->storage) return korch_op_error(ctx, KORCH_ERR_OUT_OF_MEMORY, "out of memory");
    int64_t *p = r->storage;
    for (int j = 0; j < 3; j++) {
        r->lo[j] = p;
        r->hi[j] = p + w->out[j];
        r->padded[j] = p + 2 * w->out[j];
        p += 3 * w->out[j];
        for (int64_t o = 0; o < w->out[j]; o++) {
            int64_t base = o * w->stride[j] - w->pad_begin[j], lo, hi;
            valid_taps(w, j, o, &r->lo[j][o], &r->hi[j][o]);
            korch_window_valid_range(base + w->pad_begin[j], w->dilation[j], w->in[j] + w->pad_begin[j] + w->pad_end[j],
                                     w->kernel[j], &lo, &hi);
            r->padded[j][o] = hi - lo;
        }
    }
    return KORCH_OK;
}

/* Flat index of input position (d, h, w) of plane p, as MaxPool's Indices. */
static int64_t input_index(const pool_geometry *g, int64_t plane, int64_t d, int64_t h, int64_t wi) {
    const korch_window *w = &g->w;
    int64_t base = plane * korch_window_in_size(w);
    if (!g->column_major_indices) return base + (d * w->in[1] + h) * w->in[2] + wi;
    /* column-major over the op's own spatial dims: the first one varies fastest */
    switch (w->spatial) {
    case 1: return base + wi;
    case 2: return base + h + w->in[1] * wi;
    default: return base + d + w->in[0] * (h + w->in[1] * wi);
    }
}

/* An 8-bit tensor widened to float32 (exactly), or NULL (out of memory). */
static float *widened(const korch_tensor *t) {
    int64_t n = korch_tensor_numel(t);
    float *f = malloc((size_t)(n > 0 ? n : 1) * sizeof *f);
    for (int64_t i = 0; f && i < n; i++) f[i] = (float)korch_tensor_get_f64(t, i);
    return f;
}

static korch_status run_max_pool(korch_op_ctx *ctx) {
    pool_geometry g;
    KORCH_TRY(pool_geometry_read(ctx, &g));
    /* 8-bit tensors run the float32 loop on their exact widening (the
     * maximum and its index do not change), and narrow back */
    bool narrow = ctx->inputs[0]->dtype != KORCH_DTYPE_FLOAT32;
    float *x_wide = narrow ? widened(ctx->inputs[0]) : NULL;
    float *y_wide = narrow ? malloc((size_t)(korch_tensor_numel(ctx->outputs[0]) + 1) * sizeof *y_wide) : NULL;
    if (narrow && (!x_wide || !y_wide)) {
        free(x_wide);
        free(y_wide);
        return korch_op_error(ctx, KORCH_ERR_OUT_OF_MEMORY, "out of memory");
    }
    pool_ranges r;
    korch_status st = pool_ranges_make(ctx, &g.w, &r);
    if (st != KORCH_OK) {
        free(x_wide);
        free(y_wide);
        return st;
    }
    const korch_window *w = &g.w;
    const float *x = narrow ? x_wide : ctx->inputs[0]->data;
    float *y = narrow ? y_wide : ctx->outputs[0]->data;
    int64_t *indices = ctx->n_outputs > 1 && ctx->outputs[1] ? ctx->outputs[1]->data : NULL;
    int64_t in_size = korch_window_in_size(w), out_size = korch_window_out_size(w);
#pragma omp parallel for schedule(static)
    for (int64_t p = 0; p < g.planes; p++) {
        const float *xp = x + p * in_size;
        int64_t o = p * out_size;
        for (int64_t od = 0; od < w->out[0]; od++)
            for (int64_t oh = 0; oh < w->out[1]; oh++)
                for (int64_t ow = 0; ow < w->out[2]; ow++, o++) {
                    float best = -INFINITY;
                    int64_t bd = -1, bh = -1, bw = -1;
                    for (int64_t kd = r.lo[0][od]; kd < r.hi[0][od]; kd++) {
                        int64_t id = od * w->stride[0] - w->pad_begin[0] + kd * w->dilation[0];
                        for (int64_t kh = r.lo[1][oh]; kh < r.hi[1][oh]; kh++) {
                            int64_t ih = oh * w->stride[1] - w->pad_begin[1] + kh * w->dilation[1];
                            const float *xr = xp + (id * w->in[1] + ih) * w->in[2];
                            for (int64_t kw = r.lo[2][ow]; kw < r.hi[2][ow]; kw++) {
                                int64_t iw = ow * w->stride[2] - w->pad_begin[2] + kw * w->dilation[2];
                                /* strict > keeps the first maximum, like onnxruntime */
                                if (bd < 0 || xr[iw] > best) {
                                    best = xr[iw];
                                    bd = id;
                                    bh = ih;
                                    bw = iw;
                                }
                            }
                        }
                    }
                    y[o] = best;
                    if (indices) indices[o] = input_index(&g, p, bd, bh, bw);
                }
    }
    free(r.storage);
    if (narrow) {
        korch_tensor *out = ctx->outputs[0];
        for (int64_t i = 0, n = korch_tensor_numel(out); i < n; i++) {
            if (out->dtype == KORCH_DTYPE_UINT8) ((uint8_t *)out->data)[i] = (uint8_t)y_wide[i];
            else ((int8_t *)out->data)[i] = (int8_t)y_wide[i];
        }
        free(x_wide);
        free(y_wide);
    }
    return KORCH_OK;
}

static korch_status run_average_pool(korch_op_ctx *ctx) {
    pool_geometry g;
    KORCH_TRY(pool_geometry_read(ctx, &g));
    pool_ranges r;
    KORCH_TRY(pool_ranges_make(ctx, &g.w, &r));
    const korch_window *w = &g.w;
    const float *x = ctx->inputs[0]->data;
    float *y = ctx->outputs[0]->data;
    int64_t in_size = korch_window_in_size(w), out_size = korch_window_out_size(w);
#pragma omp parallel for schedule(static)
    for (int64_t p = 0; p < g.planes; p++) {
        const float *xp = x + p * in_size;
        int64_t o = p * out_size;
        for (int64_t od = 0; od < w->out[0]; od++)
            for (int64_t oh = 0; oh < w->out[1]; oh++)
                for (int64_t ow = 0; ow < w->out[2]; ow++, o++) {
                    double sum = 0.0;
                    for (int64_t kd = r.lo[0][od]; kd < r.hi[0][od]; kd++) {
                        int64_t id = od * w->stride[0] - w->pad_begin[0] + kd * w->dilation[0];
                        for (int64_t kh = r.lo[1][oh]; kh < r.hi[1][oh]; kh++) {
                            int64_t ih = oh * w->stride[1] - w->pad_begin[1] + kh * w->dilation[1];
                            const float *xr = xp + (id * w->in[1] + ih) * w->in[2];
                            for (int64_t kw = r.lo[2][ow]; kw < r.hi[2][ow]; kw++)
                                sum += xr[ow * w->stride[2] - w->pad_begin[2] + kw * w->dilation[2]];
                        }
                    }
                    int64_t count = g.count_include_pad
                                        ? r.padded[0][od] * r.padded[1][oh] * r.padded[2][ow]
                                        : (r.hi[0][od] - r.lo[0][od]) * (r.hi[1][oh] - r.lo[1][oh]) *
                                              (r.hi[2][ow] - r.lo[2][ow]);
                    y[o] = (float)(sum / (double)count);
                }
    }
    free(r.storage);
    return KORCH_OK;
}

static int64_t flops_pool(const korch_op_ctx *ctx) {
    pool_geometry g;
    if (pool_geometry_read(ctx, &g) != KORCH_OK) return 0;
    return korch_flops_mul(korch_flops_mul(g.planes, korch_window_out_size(&g.w)), korch_window_kernel_size(&g.w));
}

const korch_op_def korch_op_def_MaxPool = {
    .kind = KORCH_OP_MaxPool, .op_type = "MaxPool", .opset_min = 1, .opset_max = 18,
    .min_inputs = 1, .max_inputs = 1, .min_outputs = 1, .max_outputs = 2,
    .infer = infer_pool, .run = run_max_pool, .flops = flops_pool,
};

const korch_op_def korch_op_def_AveragePool = {
    .kind = KORCH_OP_AveragePool, .op_type = "AveragePool", .opset_min = 1, .opset_max = 18,
    .min_inputs = 1, .max_inputs = 1, .min_outputs = 1, .max_outputs = 1,
    .infer = infer_pool, .run = run_average_pool, .flops = flops_pool,
};

/* ---- global pools: one value per (image, channel) plane ---------------- */

static korch_status infer_global_pool(korch_op_ctx *ctx) {
    const korch_shape *x = &ctx->inputs[0]->shape;
    char xs[96];
    KORCH_TRY(korch_op_require_dtype(ctx, 0, KORCH_DTYPE_FLOAT32));
    if (x->rank < 3)
        return korch_op_error(ctx, KORCH_ERR_SHAPE, "X has shape %s; expected N x C x spatial dims",
                              korch_shape_format(x, xs, sizeof xs));
    korch_shape out = *x;
    for (int i = 2; i < x->rank; i++) {
        if (x->dims[i] < 1)
            return korch_op_error(ctx, KORCH_ERR_SHAPE, "X has shape %s: an empty spatial dimension has no %s",
                                  korch_shape_format(x, xs, sizeof xs), ctx->node->op_type);
        out.dims[i] = 1;
    }
    korch_op_set_output(ctx, 0, KORCH_DTYPE_FLOAT32, &out);
    return KORCH_OK;
}

static korch_status run_global_pool(korch_op_ctx *ctx, bool max) {
    const korch_shape *s = &ctx->inputs[0]->shape;
    const float *x = ctx->inputs[0]->data;
    float *y = ctx->outputs[0]->data;
    int64_t planes = s->dims[0] * s->dims[1], size = 1;
    for (int i = 2; i < s->rank; i++) size *= s->dims[i];
#pragma omp parallel for schedule(static)
    for (int64_t p = 0; p < planes; p++) {
        const float *xp = x + p * size;
        if (max) {
            float best = xp[0];
            for (int64_t i = 1; i < size; i++) best = xp[i] > best ? xp[i] : best;
            y[p] = best;
        } else {
            double sum = 0.0;
            for (int64_t i = 0; i < size; i++) sum += xp[i];
            y[p] = (float)(sum / (double)size);
        }
    }
    return KORCH_OK;
}

static korch_status run_global_max_pool(korch_op_ctx *ctx) { return run_global_pool(ctx, true); }
static korch_status run_global_average_pool(korch_op_ctx *ctx) { return run_global_pool(ctx, false); }

static int64_t flops_global_pool(const korch_op_ctx *ctx) { return korch_tensor_numel(ctx->inputs[0]); }

const korch_op_def korch_op_def_GlobalAveragePool = {
    .kind = KORCH_OP_GlobalAveragePool, .op_type = "GlobalAveragePool", .opset_min = 1, .opset_max = 18,
    .min_inputs = 1, .max_inputs = 1, .min_outputs = 1, .max_outputs = 1,
    .infer = infer_global_pool, .run = run_global_average_pool, .flops = flops_global_pool,
};

const korch_op_def korch_op_def_GlobalMaxPool = {
    .kind = KORCH_OP_GlobalMaxPool, .op_type = "GlobalMaxPool", .opset_min = 1, .opset_max = 18,
    .min_inputs = 1, .max_inputs = 1, .min_outputs = 1, .max_outputs = 1,
    .infer = infer_global_pool, .run = run_global_max_pool, .flops = flops_global_pool,
};
