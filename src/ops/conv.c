/* Conv: grouped, strided, dilated, padded convolution over 1-3 spatial dims:
 * the attributes read and checked here, the arithmetic in conv_kernel.c
 * (shared with the primitive interpreter). */
#include <stdlib.h>
#include <string.h>

#include "ops/conv_kernel.h"
#include "ops/conv_shape.h"
#include "ops/flop_count.h"
#include "ops/op.h"
#include "ops/window.h"

typedef korch_conv_geometry conv_geometry;

static korch_status conv_geometry_read(const korch_op_ctx *ctx, conv_geometry *g) {
    char xs[96];
    KORCH_TRY(korch_op_require_dtype(ctx, 0, KORCH_DTYPE_FLOAT32));
    KORCH_TRY(korch_op_require_dtype(ctx, 1, KORCH_DTYPE_FLOAT32));
    KORCH_TRY(korch_conv_geometry_read(ctx, 0, 1, g));
    if (korch_op_has_input(ctx, 2)) {
        KORCH_TRY(korch_op_require_dtype(ctx, 2, KORCH_DTYPE_FLOAT32));
        const korch_shape *b = &ctx->inputs[2]->shape;
        if (b->rank != 1 || b->dims[0] != g->out_channels)
            return korch_op_error(ctx, KORCH_ERR_SHAPE, "B has shape %s; expected [%lld] (one bias per output channel)",
                                  korch_shape_format(b, xs, sizeof xs), (long long)g->out_channels);
    }
    return KORCH_OK;
}

static korch_status infer_conv(korch_op_ctx *ctx) {
    conv_geometry g;
    KORCH_TRY(conv_geometry_read(ctx, &g));
    korch_shape out = korch_conv_output_shape(&g, ctx->inputs[0]->shape.rank);
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
