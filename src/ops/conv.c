/* Conv: grouped, strided, dilated, padded convolution over 1-3 spatial dims:
 * the attributes read and checked here, the arithmetic in conv_kernel.c
 * (shared with the primitive interpreter). */
#include <stdlib.h>
#include <string.h>

#include "ops/conv_kernel.h"
#include "ops/flop_count.h"
#include "ops/op.h"
#include "ops/window.h"

typedef korch_conv_geometry conv_geometry;

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

static korch_status run_conv(korch_op_ctx *ctx) {
    conv_geometry g;
    KORCH_TRY(conv_geometry_read(ctx, &g));
    const float *bias = korch_op_has_input(ctx, 2) ? ctx->inputs[2]->data : NULL;
    if (korch_tensor_numel(ctx->outputs[0]) == 0) return KORCH_OK;
    korch_status st = korch_conv_run(&g, ctx->inputs[0]->data, ctx->inputs[1]->data, bias, ctx->outputs[0]->data);
    if (st != KORCH_OK) return korch_op_error(ctx, st, "%s", korch_last_error());
    return KORCH_OK;
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
