/* The channel geometry and output shape of a convolution, read once for
 * Conv and for the quantized ConvInteger / QLinearConv (which differ only
 * in where x and w sit among the inputs and in their dtypes). */
#include "ops/conv_kernel.h"
#include "ops/conv_shape.h"
#include "ops/op.h"

korch_status korch_conv_geometry_read(const korch_op_ctx *ctx, int xi, int wi, korch_conv_geometry *g) {
    const korch_tensor *x = ctx->inputs[xi], *wt = ctx->inputs[wi];
    char xs[96], ws[96];
    const char *xn = xi == 0 && wi == 1 ? "X" : "x", *wn = xi == 0 && wi == 1 ? "W" : "w";
    /* more than 3 spatial dims: valid ONNX, refused as unsupported by the window */
    if (x->shape.rank < 3)
        return korch_op_error(ctx, KORCH_ERR_SHAPE, "%s has shape %s; expected N x C x spatial dims", xn,
                              korch_shape_format(&x->shape, xs, sizeof xs));
    if (wt->shape.rank != x->shape.rank)
        return korch_op_error(ctx, KORCH_ERR_SHAPE, "%s has shape %s but %s has shape %s; ranks must match", wn,
                              korch_shape_format(&wt->shape, ws, sizeof ws), xn,
                              korch_shape_format(&x->shape, xs, sizeof xs));
    int64_t group = korch_node_attr_int(ctx->node, "group", 1);
    g->batch = x->shape.dims[0];
    g->channels = x->shape.dims[1];
    g->out_channels = wt->shape.dims[0];
    g->channels_per_group = wt->shape.dims[1];
    if (group < 1 || group > g->channels || group >= KORCH_WINDOW_MAX_ATTR)
        return korch_op_error(ctx, KORCH_ERR_INVALID_MODEL, "group %lld is out of range for %lld input channels",
                              (long long)group, (long long)g->channels);
    g->groups = group;
    /* divided, not multiplied: a hostile W's channel count must not overflow */
    if (g->channels_per_group < 1 || g->channels % group != 0 || g->channels / group != g->channels_per_group) {
        int64_t expected = 0;
        if (g->channels_per_group < 1 || korch_mul_overflow_i64(g->channels_per_group, group, &expected))
            return korch_op_error(ctx, KORCH_ERR_SHAPE, "%s has %lld channels but %s expects %lld per group (group %lld)",
                                  xn, (long long)g->channels, wn, (long long)g->channels_per_group, (long long)group);
        return korch_op_error(ctx, KORCH_ERR_SHAPE, "%s has %lld channels but %s expects %lld (group %lld)", xn,
                              (long long)g->channels, wn, (long long)expected, (long long)group);
    }
    if (g->out_channels < 1 || g->out_channels % group != 0)
        return korch_op_error(ctx, KORCH_ERR_SHAPE, "%s has %lld output channels, not a positive multiple of group %lld",
                              wn, (long long)g->out_channels, (long long)group);
    g->out_per_group = g->out_channels / group;
    return korch_window_forward(ctx, &x->shape, wt->shape.dims + 2, false, &g->w);
}

korch_shape korch_conv_output_shape(const korch_conv_geometry *g, int rank) {
    korch_shape out = {.rank = rank};
    out.dims[0] = g->batch;
    out.dims[1] = g->out_channels;
    for (int i = 0; i < g->w.spatial; i++) out.dims[2 + i] = g->w.out[3 - g->w.spatial + i];
    return out;
}
