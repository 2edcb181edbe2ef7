/* ConvTranspose: the adjoint of a grouped, strided, dilated convolution:
 * the attributes (auto_pad, output_shape, output_padding) read and checked
 * here, the arithmetic in conv_kernel.c (shared with the primitive
 * interpreter). */
#include <stdlib.h>
#include <string.h>

#include "ops/conv_kernel.h"
#include "ops/flop_count.h"
#include "ops/op.h"
#include "ops/window.h"

typedef korch_conv_geometry deconv_geometry; /* w.in = X's spatial dims, w.out = Y's */

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

static korch_status run_conv_transpose(korch_op_ctx *ctx) {
    deconv_geometry g;
    KORCH_TRY(deconv_geometry_read(ctx, &g));
    const float *bias = korch_op_has_input(ctx, 2) ? ctx->inputs[2]->data : NULL;
    korch_status st =
        korch_conv_transpose_run(&g, ctx->inputs[0]->data, ctx->inputs[1]->data, bias, ctx->outputs[0]->data);
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
