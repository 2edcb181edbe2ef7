/* Conv: grouped, strided, dilated, padded convolution over 1-3 spatial dims.
 *
 * The general path lowers each (image, group) to a GEMM: im2col unfolds the
 * input patches into a (C/group * kernel) x (output positions) matrix, and
 * Y_g = W_g * col. The columns are unfolded in blocks so the scratch matrix
 * stays about a megabyte however large the image. A 1x1 convolution with unit
 * stride and no padding needs no unfolding: its input already is the matrix.
 * Depthwise convolutions (one input channel per group), where a GEMM would
 * have a single row, run as a direct loop over each output plane instead. */
#include <stdlib.h>
#include <string.h>

#ifdef _OPENMP
#include <omp.h>
#endif

#include "ops/flop_count.h"
#include "ops/gemm_kernel.h"
#include "ops/op.h"
#include "ops/window.h"

/* Target size, in floats, of one block of the im2col matrix (1 MiB: the GEMM
 * reads it back while it is still in the L2 cache). */
#define COL_BLOCK_FLOATS ((int64_t)1 << 18)

typedef struct conv_geometry {
    korch_window w;
    int64_t batch, channels, groups, out_channels;
    int64_t channels_per_group, out_per_group;
} conv_geometry;

static korch_status conv_geometry_read(const korch_op_ctx *ctx, conv_geometry *g) {
    const korch_tensor *x = ctx->inputs[0], *wt = ctx->inputs[1];
    char xs[96], ws[96];
    KORCH_TRY(korch_op_require_dtype(ctx, 0, KORCH_DTYPE_FLOAT32));
    KORCH_TRY(korch_op_require_dtype(ctx, 1, KORCH_DTYPE_FLOAT32));
    if (x->shape.rank < 3)
        return korch_op_error(ctx, KORCH_ERR_SHAPE, "X has shape %s; expected N x C x spatial dims",
                              korch_shape_format(&x->shape, xs, sizeof xs));
    if (wt->shape.rank != x->shape.rank)
        return korch_op_error(ctx, KORCH_ERR_SHAPE, "W has shape %s but X has shape %s; ranks must match",
                              korch_shape_format(&wt->shape, ws, sizeof ws), korch_shape_format(&x->shape, xs, sizeof xs));
    int64_t group = korch_node_attr_int(ctx->node, "group", 1);
    g->batch = x->shape.dims[0];
    g->channels = x->shape.dims[1];
    g->out_channels = wt->shape.dims[0];
    g->channels_per_group = wt->shape.dims[1];
    if (group < 1 || group > g->channels || group >= KORCH_WINDOW_MAX_ATTR)
        return korch_op_error(ctx, KORCH_ERR_INVALID_MODEL, "group %lld is out of range for %lld input channels",
                              (long long)group, (long long)g->channels);
    g->groups = group;
    int64_t expected = 0;
    if (korch_mul_overflow_i64(g->channels_per_group, group, &expected))
        return korch_op_error(ctx, KORCH_ERR_SHAPE, "X has %lld channels but W expects %lld per group (group %lld)",
                              (long long)g->channels, (long long)g->channels_per_group, (long long)group);
    if (g->channels_per_group < 1 || expected != g->channels)
        return korch_op_error(ctx, KORCH_ERR_SHAPE, "X has %lld channels but W expects %lld (group %lld)",
                              (long long)g->channels, (long long)expected, (long long)group);
    if (g->out_channels < 1 || g->out_channels % group != 0)
        return korch_op_error(ctx, KORCH_ERR_SHAPE, "W has %lld output channels, not a positive multiple of group %lld",
                              (long long)g->out_channels, (long long)group);
    g->out_per_group = g->out_channels / group;
    if (korch_op_has_input(ctx, 2)) {
        KORCH_TRY(korch_op_require_dtype(ctx, 2, KORCH_DTYPE_FLOAT32));
        const korch_shape *b = &ctx->inputs[2]->shape;
        if (b->rank != 1 || b->dims[0] != g->out_channels)
            return korch_op_error(ctx, KORCH_ERR_SHAPE, "B has shape %s; expected [%lld] (one bias per output channel)",
                                  korch_shape_format(b, xs, sizeof xs), (long long)g->out_channels);
    }
    return korch_window_forward(ctx, &x->shape, wt->shape.dims + 2, false, &g->w);
}

static korch_status infer_conv(korch_op_ctx *ctx) {
    conv_geometry g;
    KORCH_TRY(conv_geometry_read(ctx, &g));
    korch_shape out = {.rank = ctx->inputs[0]->shape.rank};
    out.dims[0] = g.batch;
    out.dims[1] = g.out_channels;
    for (int i = 0; i < g.w.spatial; i++) out.dims[2 + i] = g.w.out[3 - g.w.spatial + i];
    korch_op_set_output(ctx, 0, KORCH_DTYPE_FLOAT32, &out);
    return KORCH_OK;
}

/* Every output plane starts as its channel's bias (or zero). */
static void fill_bias(const conv_geometry *g, const float *bias, float *y) {
    int64_t plane = korch_window_out_size(&g->w);
#pragma omp parallel for schedule(static)
    for (int64_t nm = 0; nm < g->batch * g->out_channels; nm++) {
        float v = bias ? bias[nm % g->out_channels] : 0.0f;
        for (int64_t i = 0; i < plane; i++) y[nm * plane + i] = v;
    }
}

/* Rows [c*kernel + tap] x columns [col_begin, col_begin + count) of the im2col
 * matrix of `channels` input planes. */
static void im2col(const korch_window *w, const float *x, int64_t channels, int64_t col_begin, int64_t count,
                   float *col) {
    int64_t taps = korch_window_kernel_size(w), in_size = korch_window_in_size(w);
#pragma omp parallel for schedule(static)
    for (int64_t r = 0; r < channels * taps; r++) {
        int64_t c = r / taps, t = r % taps;
        int64_t kw = t % w->kernel[2], kh = (t / w->kernel[2]) % w->kernel[1], kd = t / (w->kernel[2] * w->kernel[1]);
        int64_t off_d = kd * w->dilation[0] - w->pad_begin[0], off_h = kh * w->dilation[1] - w->pad_begin[1];
        int64_t off_w = kw * w->dilation[2] - w->pad_begin[2];
        int64_t w_lo, w_hi;
        korch_window_valid_range(off_w, w->stride[2], w->in[2], w->out[2], &w_lo, &w_hi);
        const float *xc = x + c * in_size;
        float *dst = col + r * count;
        for (int64_t pos = col_begin, end = col_begin + count; pos < end;) {
            int64_t ow0 = pos % w->out[2], row = pos / w->out[2];
            int64_t oh = row % w->out[1], od = row / w->out[1];
            int64_t ow1 = w->out[2] - ow0 < end - pos ? w->out[2] : ow0 + (end - pos);
            int64_t id = od * w->stride[0] + off_d, ih = oh * w->stride[1] + off_h;
            float *o = dst + (pos - col_begin); /* o[ow - ow0] is column (row, ow) */
            if (id < 0 || id >= w->in[0] || ih < 0 || ih >= w->in[1]) {
                for (int64_t ow = ow0; ow < ow1; ow++) o[ow - ow0] = 0.0f;
            } else {
                /* input element read by output column ow: xr[ow * stride + off_w] */
                const float *xr = xc + (id * w->in[1] + ih) * w->in[2];
                int64_t lo = w_lo > ow0 ? w_lo : ow0, hi = w_hi < ow1 ? w_hi : ow1;
                /* the valid range can start past this block's columns (wide left padding) */
                if (lo > ow1) lo = ow1;
                if (hi < lo) hi = lo;
                for (int64_t ow = ow0; ow < lo; ow++) o[ow - ow0] = 0.0f;
                if (w->stride[2] == 1)
                    for (int64_t ow = lo; ow < hi; ow++) o[ow - ow0] = xr[ow + off_w];
                else
                    for (int64_t ow = lo; ow < hi; ow++) o[ow - ow0] = xr[ow * w->stride[2] + off_w];
                for (int64_t ow = hi; ow < ow1; ow++) o[ow - ow0] = 0.0f;
            }
            pos += ow1 - ow0;
        }
    }
}

/* Output columns [c0, c0 + count) of image n, group grp: Y = bias + W_g * im2col(X_g).
 * Runs its own loops in parallel unless called from a parallel region. */
static korch_status conv_block(const conv_geometry *g, bool pointwise, const float *x, const float *wt,
                               const float *bias, float *y, int64_t n, int64_t grp, int64_t c0, int64_t count,
                               float *col) {
    const korch_window *w = &g->w;
    int64_t in_size = korch_window_in_size(w), out_size = korch_window_out_size(w);
    int64_t k = g->channels_per_group * korch_window_kernel_size(w);
    const float *xg = x + (n * g->channels + grp * g->channels_per_group) * in_size;
    const float *wg = wt + grp * g->out_per_group * k;
    float *yg = y + (n * g->out_channels + grp * g->out_per_group) * out_size + c0;
    for (int64_t m = 0; m < g->out_per_group; m++) {
        float v = bias ? bias[grp * g->out_per_group + m] : 0.0f;
        for (int64_t i = 0; i < count; i++) yg[m * out_size + i] = v;
    }
    if (pointwise) /* the input planes already are the k x columns matrix */
        return korch_sgemm(false, false, g->out_per_group, count, k, 1.0f, wg, k, xg + c0, in_size, 1.0f, yg, out_size);
    im2col(w, xg, g->channels_per_group, c0, count, col);
    return korch_sgemm(false, false, g->out_per_group, count, k, 1.0f, wg, k, col, count, 1.0f, yg, out_size);
}

/* The GEMM path, in blocks of output columns. With enough blocks to keep
 * every thread busy, each thread takes whole blocks (its im2col stays in its
 * own cache and nothing waits at a barrier); otherwise the blocks run in
 * turn, each with a parallel im2col and GEMM. */
static korch_status conv_gemm(const korch_op_ctx *ctx, const conv_geometry *g, const float *x, const float *wt,
                              const float *bias, float *y) {
    const korch_window *w = &g->w;
    int64_t out_size = korch_window_out_size(w), k = g->channels_per_group * korch_window_kernel_size(w);
    bool pointwise = korch_window_kernel_size(w) == 1;
    for (int j = 0; j < 3; j++)
        if (w->stride[j] != 1 || w->pad_begin[j] != 0 || w->pad_end[j] != 0) pointwise = false;
    int64_t block = COL_BLOCK_FLOATS / k;
    if (block < 256) block = 256;
    if (block > out_size) block = out_size;
    int64_t blocks_per_plane = (out_size + block - 1) / block;
    int64_t jobs = g->batch * g->groups * blocks_per_plane;
    int threads = 1;
#ifdef _OPENMP
    threads = omp_get_max_threads();
#endif
    size_t col_bytes = pointwise ? 1 : (size_t)(k * block) * sizeof(float);
    int failed = 0;
#pragma omp parallel if (threads > 1 && jobs >= 2 * threads) reduction(| : failed)
    {
        float *col = malloc(col_bytes);
#pragma omp for schedule(dynamic, 1)
        for (int64_t job = 0; job < jobs; job++) {
            int64_t c0 = (job % blocks_per_plane) * block, plane = job / blocks_per_plane;
            int64_t count = out_size - c0 < block ? out_size - c0 : block;
            if (!col || conv_block(g, pointwise, x, wt, bias, y, plane / g->groups, plane % g->groups, c0, count, col) !=
                            KORCH_OK)
                failed = 1;
        }
        free(col);
    }
    if (failed)
        return korch_op_error(ctx, KORCH_ERR_OUT_OF_MEMORY, "cannot allocate the %lldx%lld im2col buffer",
                              (long long)k, (long long)block);
    return KORCH_OK;
}

/* One output plane of a depthwise convolution: y += conv(x, taps). */
static void depthwise_plane(const korch_window *w, const float *x, const float *taps, float *y) {
    for (int64_t od = 0; od < w->out[0]; od++)
        for (int64_t oh = 0; oh < w->out[1]; oh++) {
            float *yr = y + (od * w->out[1] + oh) * w->out[2];
            for (int64_t kd = 0; kd < w->kernel[0]; kd++) {
                int64_t id = od * w->stride[0] + kd * w->dilation[0] - w->pad_begin[0];
                if (id < 0 || id >= w->in[0]) continue;
                for (int64_t kh = 0; kh < w->kernel[1]; kh++) {
                    int64_t ih = oh * w->stride[1] + kh * w->dilation[1] - w->pad_begin[1];
                    if (ih < 0 || ih >= w->in[1]) continue;
                    for (int64_t kw = 0; kw < w->kernel[2]; kw++) {
                        float tap = taps[(kd * w->kernel[1] + kh) * w->kernel[2] + kw];
                        int64_t off = kw * w->dilation[2] - w->pad_begin[2], lo, hi;
                        korch_window_valid_range(off, w->stride[2], w->in[2], w->out[2], &lo, &hi);
                        const float *xr = x + (id * w->in[1] + ih) * w->in[2];
                        if (w->stride[2] == 1)
                            for (int64_t ow = lo; ow < hi; ow++) yr[ow] += tap * xr[ow + off];
                        else
                            for (int64_t ow = lo; ow < hi; ow++) yr[ow] += tap * xr[ow * w->stride[2] + off];
                    }
                }
            }
        }
}

static void conv_depthwise(const conv_geometry *g, const float *x, const float *wt, float *y) {
    const korch_window *w = &g->w;
    int64_t taps = korch_window_kernel_size(w), in_size = korch_window_in_size(w);
    int64_t out_size = korch_window_out_size(w);
#pragma omp parallel for schedule(dynamic, 1)
    for (int64_t nm = 0; nm < g->batch * g->out_channels; nm++) {
        int64_t n = nm / g->out_channels, m = nm % g->out_channels, c = m / g->out_per_group;
        depthwise_plane(w, x + (n * g->channels + c) * in_size, wt + m * taps, y + nm * out_size);
    }
}

static korch_status run_conv(korch_op_ctx *ctx) {
    conv_geometry g;
    KORCH_TRY(conv_geometry_read(ctx, &g));
    const float *x = ctx->inputs[0]->data, *wt = ctx->inputs[1]->data;
    const float *bias = korch_op_has_input(ctx, 2) ? ctx->inputs[2]->data : NULL;
    float *y = ctx->outputs[0]->data;
    if (korch_tensor_numel(ctx->outputs[0]) == 0) return KORCH_OK;
    if (g.channels_per_group == 1) {
        fill_bias(&g, bias, y);
        conv_depthwise(&g, x, wt, y);
        return KORCH_OK;
    }
    return conv_gemm(ctx, &g, x, wt, bias, y);
}

static int64_t flops_conv(const korch_op_ctx *ctx) {
    conv_geometry g;
    if (conv_geometry_read(ctx, &g) != KORCH_OK) return 0;
    int64_t outputs = korch_flops_mul(korch_flops_mul(g.batch, g.out_channels), korch_window_out_size(&g.w));
    /* channels_per_group * kernel is W's numel per output channel: no overflow */
    int64_t macs = korch_flops_mul(outputs, g.channels_per_group * korch_window_kernel_size(&g.w));
    return korch_flops_add(korch_flops_mul(2, macs), korch_op_has_input(ctx, 2) ? outputs : 0);
}

const korch_op_def korch_op_def_Conv = {
    .kind = KORCH_OP_Conv, .op_type = "Conv", .opset_min = 1, .opset_max = 18,
    .min_inputs = 2, .max_inputs = 3, .min_outputs = 1, .max_outputs = 1,
    .infer = infer_conv, .run = run_conv, .flops = flops_conv,
};
