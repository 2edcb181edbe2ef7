/* ConvTranspose: the adjoint of a grouped, strided, dilated convolution.
 *
 * Per (image, group) the kernel computes col = W_g^T * X_g, a
 * (M/group * kernel) x (input positions) matrix holding every tap's
 * contribution, then col2im scatter-adds each entry to output position
 * i * stride + tap * dilation - pad_begin. Input positions are processed in
 * chunks so the scratch matrix stays a few megabytes. */
#include <stdlib.h>
#include <string.h>

#include "ops/flop_count.h"
#include "ops/gemm_kernel.h"
#include "ops/op.h"
#include "ops/window.h"

#define COL_CHUNK_FLOATS ((int64_t)1 << 21)

typedef struct deconv_geometry {
    korch_window w; /* in = X's spatial dims, out = Y's */
    int64_t batch, channels, groups, out_channels;
    int64_t channels_per_group, out_per_group;
} deconv_geometry;

/* Output size and padding of spatial dimension i (3-D slot j). When the
 * padding is derived (auto_pad SAME_*, or output_shape given), the split of
 * an odd total follows the ONNX specification and its conformance data:
 * SAME_UPPER crops the odd unit from the end, anything else from the start. */
static korch_status deconv_dim(const korch_op_ctx *ctx, korch_auto_pad auto_pad, int64_t output_padding,
                               int64_t output_shape, int i, korch_window *w, int j) {
    /* stride, dilation, padding < 2^31 and in, kernel <= 2^40: compute in double first to rule out overflow */
    double full_estimate = (double)w->stride[j] * (double)(w->in[j] - 1) + (double)output_padding +
                           (double)w->dilation[j] * (double)(w->kernel[j] - 1) + 1.0;
    if (full_estimate > (double)KORCH_MAX_ELEMENTS)
        return korch_op_error(ctx, KORCH_ERR_SHAPE, "spatial dimension %d: the output would have about %.3g positions",
                              i, full_estimate);
    int64_t full = w->stride[j] * (w->in[j] - 1) + output_padding + w->dilation[j] * (w->kernel[j] - 1) + 1;
    bool same = auto_pad == KORCH_AUTO_PAD_SAME_UPPER || auto_pad == KORCH_AUTO_PAD_SAME_LOWER;
    if (output_shape >= 0 || same) {
        /* An output_shape beyond the full output is allowed: the extra
         * positions at the end receive only the bias. */
        int64_t target = output_shape >= 0 ? output_shape : w->in[j] * w->stride[j];
        int64_t total = full - target > 0 ? full - target : 0;
        w->pad_begin[j] = auto_pad == KORCH_AUTO_PAD_SAME_UPPER ? total / 2 : total - total / 2;
        w->pad_end[j] = total - w->pad_begin[j];
        w->out[j] = output_shape >= 0 ? output_shape : full - total;
    } else {
        if (auto_pad == KORCH_AUTO_PAD_VALID) w->pad_begin[j] = w->pad_end[j] = 0;
        w->out[j] = full - w->pad_begin[j] - w->pad_end[j];
    }
    if (w->out[j] < 1)
        return korch_op_error(ctx, KORCH_ERR_SHAPE,
                              "spatial dimension %d: pads %lld+%lld crop the whole output (full size %lld)", i,
                              (long long)w->pad_begin[j], (long long)w->pad_end[j], (long long)full);
    return KORCH_OK;
}

static korch_status deconv_geometry_read(const korch_op_ctx *ctx, deconv_geometry *g) {
    const korch_tensor *x = ctx->inputs[0], *wt = ctx->inputs[1];
    char xs[96], ws[96];
    KORCH_TRY(korch_op_require_dtype(ctx, 0, KORCH_DTYPE_FLOAT32));
    KORCH_TRY(korch_op_require_dtype(ctx, 1, KORCH_DTYPE_FLOAT32));
    int rank = x->shape.rank, spatial = rank - 2;
    if (spatial < 1 || spatial > KORCH_WINDOW_MAX_SPATIAL)
        return korch_op_error(ctx, KORCH_ERR_UNSUPPORTED, "X has shape %s; korch supports 1 to 3 spatial dimensions",
                              korch_shape_format(&x->shape, xs, sizeof xs));
    if (wt->shape.rank != rank)
        return korch_op_error(ctx, KORCH_ERR_SHAPE, "W has shape %s but X has shape %s; ranks must match",
                              korch_shape_format(&wt->shape, ws, sizeof ws), korch_shape_format(&x->shape, xs, sizeof xs));
    int64_t group = korch_node_attr_int(ctx->node, "group", 1);
    g->batch = x->shape.dims[0];
    g->channels = x->shape.dims[1];
    if (group < 1 || group > g->channels || group >= KORCH_WINDOW_MAX_ATTR)
        return korch_op_error(ctx, KORCH_ERR_INVALID_MODEL, "group %lld is out of range for %lld input channels",
                              (long long)group, (long long)g->channels);
    g->groups = group;
    if (wt->shape.dims[0] != g->channels)
        return korch_op_error(ctx, KORCH_ERR_SHAPE, "X has %lld channels but W expects %lld (group %lld)",
                              (long long)g->channels, (long long)wt->shape.dims[0], (long long)group);
    if (g->channels % group != 0)
        return korch_op_error(ctx, KORCH_ERR_SHAPE, "group %lld does not divide the %lld input channels",
                              (long long)group, (long long)g->channels);
    g->channels_per_group = g->channels / group;
    g->out_per_group = wt->shape.dims[1];
    if (g->out_per_group < 1)
        return korch_op_error(ctx, KORCH_ERR_SHAPE, "W has shape %s: no output channels",
                              korch_shape_format(&wt->shape, ws, sizeof ws));
    if (korch_mul_overflow_i64(g->out_per_group, group, &g->out_channels) || g->out_channels > KORCH_MAX_ELEMENTS)
        return korch_op_error(ctx, KORCH_ERR_SHAPE, "W has shape %s: %lld output channels per group times group %lld is too many",
                              korch_shape_format(&wt->shape, ws, sizeof ws), (long long)g->out_per_group, (long long)group);
    if (korch_op_has_input(ctx, 2)) {
        KORCH_TRY(korch_op_require_dtype(ctx, 2, KORCH_DTYPE_FLOAT32));
        const korch_shape *b = &ctx->inputs[2]->shape;
        if (b->rank != 1 || b->dims[0] != g->out_channels)
            return korch_op_error(ctx, KORCH_ERR_SHAPE, "B has shape %s; expected [%lld] (one bias per output channel)",
                                  korch_shape_format(b, xs, sizeof xs), (long long)g->out_channels);
    }

    korch_window *w = &g->w;
    memset(w, 0, sizeof *w);
    w->spatial = spatial;
    for (int j = 0; j < 3; j++) w->in[j] = w->kernel[j] = w->stride[j] = w->dilation[j] = w->out[j] = 1;
    int64_t ks[3], st[3], dl[3], pads[6], adj[3], oshape[3] = {-1, -1, -1};
    const int64_t *attr = NULL;
    if (korch_node_attr(ctx->node, "kernel_shape")) {
        KORCH_TRY(korch_window_ints(ctx, "kernel_shape", spatial, 1, 1, ks));
        for (int i = 0; i < spatial; i++)
            if (ks[i] != wt->shape.dims[2 + i])
                return korch_op_error(ctx, KORCH_ERR_SHAPE, "kernel_shape[%d] = %lld but the weights have %lld", i,
                                      (long long)ks[i], (long long)wt->shape.dims[2 + i]);
    }
    KORCH_TRY(korch_window_ints(ctx, "strides", spatial, 1, 1, st));
    KORCH_TRY(korch_window_ints(ctx, "dilations", spatial, 1, 1, dl));
    KORCH_TRY(korch_window_ints(ctx, "pads", 2 * spatial, 0, 0, pads));
    KORCH_TRY(korch_window_ints(ctx, "output_padding", spatial, 0, 0, adj));
    int n_oshape = korch_node_attr_ints(ctx->node, "output_shape", &attr);
    if (n_oshape < 0 && korch_node_attr(ctx->node, "output_shape"))
        return korch_op_error(ctx, KORCH_ERR_INVALID_MODEL, "attribute output_shape must be a list of integers");
    if (n_oshape >= 0) {
        /* some exporters give the full N x C x spatial shape: keep the spatial part */
        if (n_oshape != spatial && n_oshape != rank)
            return korch_op_error(ctx, KORCH_ERR_INVALID_MODEL, "output_shape has %d values, expected %d", n_oshape,
                                  spatial);
        for (int i = 0; i < spatial; i++) {
            oshape[i] = attr[n_oshape - spatial + i];
            if (oshape[i] < 1 || oshape[i] >= KORCH_WINDOW_MAX_ATTR)
                return korch_op_error(ctx, KORCH_ERR_INVALID_MODEL, "output_shape[%d] = %lld is out of range", i,
                                      (long long)oshape[i]);
        }
    }
    korch_auto_pad auto_pad;
    KORCH_TRY(korch_window_auto_pad(ctx, &auto_pad));
    if (auto_pad != KORCH_AUTO_PAD_NOTSET)
        for (int i = 0; i < 2 * spatial; i++)
            if (pads[i] != 0)
                return korch_op_error(ctx, KORCH_ERR_INVALID_MODEL, "pads and auto_pad=%s are both set",
                                      korch_node_attr_string(ctx->node, "auto_pad", ""));
    for (int i = 0; i < spatial; i++) {
        int j = 3 - spatial + i;
        w->in[j] = x->shape.dims[2 + i];
        w->kernel[j] = wt->shape.dims[2 + i];
        if (w->in[j] < 1 || w->kernel[j] < 1 || w->kernel[j] >= KORCH_WINDOW_MAX_ATTR)
            return korch_op_error(ctx, KORCH_ERR_SHAPE, "spatial dimension %d: input %lld, kernel %lld", i,
                                  (long long)w->in[j], (long long)w->kernel[j]);
        w->stride[j] = st[i];
        w->dilation[j] = dl[i];
        w->pad_begin[j] = pads[i];
        w->pad_end[j] = pads[spatial + i];
        KORCH_TRY(deconv_dim(ctx, auto_pad, adj[i], oshape[i], i, w, j));
    }
    return KORCH_OK;
}

static korch_status infer_conv_transpose(korch_op_ctx *ctx) {
    deconv_geometry g;
    KORCH_TRY(deconv_geometry_read(ctx, &g));
    korch_shape out = {.rank = ctx->inputs[0]->shape.rank};
    out.dims[0] = g.batch;
    out.dims[1] = g.out_channels;
    for (int i = 0; i < g.w.spatial; i++) out.dims[2 + i] = g.w.out[3 - g.w.spatial + i];
    korch_op_set_output(ctx, 0, KORCH_DTYPE_FLOAT32, &out);
    return KORCH_OK;
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

static korch_status run_conv_transpose(korch_op_ctx *ctx) {
    deconv_geometry g;
    KORCH_TRY(deconv_geometry_read(ctx, &g));
    const korch_window *w = &g.w;
    const float *x = ctx->inputs[0]->data, *wt = ctx->inputs[1]->data;
    const float *bias = korch_op_has_input(ctx, 2) ? ctx->inputs[2]->data : NULL;
    float *y = ctx->outputs[0]->data;
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
        return korch_op_error(ctx, KORCH_ERR_OUT_OF_MEMORY, "cannot allocate the %lldx%lld column buffer",
                              (long long)rows, (long long)chunk);
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
    if (st != KORCH_OK) return korch_op_error(ctx, st, "%s", korch_last_error());
    return KORCH_OK;
}

static int64_t flops_conv_transpose(const korch_op_ctx *ctx) {
    deconv_geometry g;
    if (deconv_geometry_read(ctx, &g) != KORCH_OK) return 0;
    /* every input element meets out_per_group * kernel weights (W's numel / channels) */
    int64_t macs = korch_flops_mul(korch_tensor_numel(ctx->inputs[0]), g.out_per_group * korch_window_kernel_size(&g.w));
    int64_t outputs = korch_flops_mul(korch_flops_mul(g.batch, g.out_channels), korch_window_out_size(&g.w));
    return korch_flops_add(korch_flops_mul(2, macs), korch_op_has_input(ctx, 2) ? outputs : 0);
}

const korch_op_def korch_op_def_ConvTranspose = {
    .kind = KORCH_OP_ConvTranspose, .op_type = "ConvTranspose", .opset_min = 1, .opset_max = 18,
    .min_inputs = 2, .max_inputs = 3, .min_outputs = 1, .max_outputs = 1,
    .infer = infer_conv_transpose, .run = run_conv_transpose, .flops = flops_conv_transpose,
};
