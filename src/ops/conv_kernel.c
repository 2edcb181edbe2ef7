/* The reference convolution kernels (conv_kernel.h).
 *
 * Convolution: each (image, group) lowers to a GEMM: im2col unfolds the
 * input patches into a (C/group * kernel) x (output positions) matrix, and
 * Y_g = W_g * col. The columns are unfolded in blocks so the scratch matrix
 * stays about a megabyte however large the image. A 1x1 convolution with unit
 * stride and no padding needs no unfolding: its input already is the matrix.
 * Depthwise convolutions (one input channel per group), where a GEMM would
 * have a single row, run as a direct loop over each output plane instead.
 *
 * Transpose: per (image, group) col = W_g^T * X_g, a (M/group * kernel) x
 * (input positions) matrix holding every tap's contribution, then col2im
 * scatter-adds each entry to output position i * stride + tap * dilation -
 * pad_begin. Input positions are processed in chunks so the scratch matrix
 * stays a few megabytes. */
#include <stdlib.h>
#include <string.h>

#ifdef _OPENMP
#include <omp.h>
#endif

#include "ops/conv_kernel.h"
#include "ops/gemm_kernel.h"

/* Target size, in floats, of one block of the im2col matrix (1 MiB: the GEMM
 * reads it back while it is still in the L2 cache). */
#define COL_BLOCK_FLOATS ((int64_t)1 << 18)
#define COL_CHUNK_FLOATS ((int64_t)1 << 21)

/* Every output plane starts as its channel's bias (or zero). */
static void fill_bias(const korch_conv_geometry *g, const float *bias, float *y) {
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
static korch_status conv_block(const korch_conv_geometry *g, bool pointwise, const float *x, const float *wt,
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
static korch_status conv_gemm(const korch_conv_geometry *g, const float *x, const float *wt,
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
        return korch_error(KORCH_ERR_OUT_OF_MEMORY, "cannot allocate the %lldx%lld im2col buffer", (long long)k,
                           (long long)block);
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

static void conv_depthwise(const korch_conv_geometry *g, const float *x, const float *wt, float *y) {
    const korch_window *w = &g->w;
    int64_t taps = korch_window_kernel_size(w), in_size = korch_window_in_size(w);
    int64_t out_size = korch_window_out_size(w);
#pragma omp parallel for schedule(dynamic, 1)
    for (int64_t nm = 0; nm < g->batch * g->out_channels; nm++) {
        int64_t n = nm / g->out_channels, m = nm % g->out_channels, c = m / g->out_per_group;
        depthwise_plane(w, x + (n * g->channels + c) * in_size, wt + m * taps, y + nm * out_size);
    }
}

korch_status korch_conv_run(const korch_conv_geometry *g, const float *x, const float *wt, const float *bias, float *y) {
    if (g->batch * g->out_channels * korch_window_out_size(&g->w) == 0) return KORCH_OK;
    if (g->channels_per_group == 1) {
        fill_bias(g, bias, y);
        conv_depthwise(g, x, wt, y);
        return KORCH_OK;
    }
    return conv_gemm(g, x, wt, bias, y);
}

/* y[m] += the taps in col rows [m * taps, (m+1) * taps), for input columns
 * [col_begin, col_begin + count). */
static void col2im(const korch_window *w, const float *col, int64_t out_channels, int64_t col_begin, int64_t count,
                   float *y) {
    int64_t taps = korch_window_kernel_size(w), out_size = korch_window_out_size(w);
#pragma omp parallel for schedule(static)
    for (int64_t m = 0; m < out_channels; m++) {
        float *ym = y + m * out_size;
        for (int64_t t = 0; t < taps; t++) {
            int64_t kw = t % w->kernel[2], kh = (t / w->kernel[2]) % w->kernel[1];
            int64_t kd = t / (w->kernel[2] * w->kernel[1]);
            int64_t off_d = kd * w->dilation[0] - w->pad_begin[0], off_h = kh * w->dilation[1] - w->pad_begin[1];
            int64_t off_w = kw * w->dilation[2] - w->pad_begin[2];
            int64_t w_lo, w_hi; /* input columns iw whose output iw * stride + off_w is inside */
            korch_window_valid_range(off_w, w->stride[2], w->out[2], w->in[2], &w_lo, &w_hi);
            const float *src = col + (m * taps + t) * count;
            for (int64_t pos = col_begin, end = col_begin + count; pos < end;) {
                int64_t iw0 = pos % w->in[2], row = pos / w->in[2];
                int64_t ih = row % w->in[1], id = row / w->in[1];
                int64_t iw1 = w->in[2] - iw0 < end - pos ? w->in[2] : iw0 + (end - pos);
                int64_t od = id * w->stride[0] + off_d, oh = ih * w->stride[1] + off_h;
                if (od >= 0 && od < w->out[0] && oh >= 0 && oh < w->out[1]) {
                    float *yr = ym + (od * w->out[1] + oh) * w->out[2];
                    const float *s = src + (pos - col_begin); /* s[iw - iw0] is column (row, iw) */
                    int64_t lo = w_lo > iw0 ? w_lo : iw0, hi = w_hi < iw1 ? w_hi : iw1;
                    for (int64_t iw = lo; iw < hi; iw++) yr[iw * w->stride[2] + off_w] += s[iw - iw0];
                }
                pos += iw1 - iw0;
            }
        }
    }
}

korch_status korch_conv_transpose_run(const korch_conv_geometry *gp, const float *x, const float *wt,
                                      const float *bias, float *y) {
    const korch_conv_geometry g = *gp;
    const korch_window *w = &g.w;
    int64_t taps = korch_window_kernel_size(w), in_size = korch_window_in_size(w), out_size = korch_window_out_size(w);
    int64_t rows = g.out_per_group * taps;
#pragma omp parallel for schedule(static)
    for (int64_t nm = 0; nm < g.batch * g.out_channels; nm++) {
        float v = bias ? bias[nm % g.out_channels] : 0.0f;
        for (int64_t i = 0; i < out_size; i++) y[nm * out_size + i] = v;
    }
    int64_t chunk = COL_CHUNK_FLOATS / rows;
    if (chunk < 256) chunk = 256;
    if (chunk > in_size) chunk = in_size;
    float *col = malloc((size_t)(rows * chunk) * sizeof *col);
    if (!col)
        return korch_error(KORCH_ERR_OUT_OF_MEMORY, "cannot allocate the %lldx%lld column buffer", (long long)rows,
                           (long long)chunk);
    korch_status st = KORCH_OK;
    for (int64_t n = 0; n < g.batch && st == KORCH_OK; n++)
        for (int64_t grp = 0; grp < g.groups && st == KORCH_OK; grp++) {
            const float *xg = x + (n * g.channels + grp * g.channels_per_group) * in_size;
            const float *wg = wt + grp * g.channels_per_group * rows;
            float *yg = y + (n * g.out_channels + grp * g.out_per_group) * out_size;
            for (int64_t c0 = 0; c0 < in_size && st == KORCH_OK; c0 += chunk) {
                int64_t count = in_size - c0 < chunk ? in_size - c0 : chunk;
                /* W_g is channels_per_group x rows; col = W_g^T * X_g[:, c0:c0+count] */
                st = korch_sgemm(true, false, rows, count, g.channels_per_group, 1.0f, wg, rows, xg + c0, in_size, 0.0f,
                                 col, count);
                if (st == KORCH_OK) col2im(w, col, g.out_per_group, c0, count, yg);
            }
        }
    free(col);
    return st;
}

