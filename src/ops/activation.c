/* Activation functions (unary elementwise maps with parameters). */
#include <math.h>

#include "ops/op.h"

static korch_status infer_same_float(korch_op_ctx *ctx) {
    KORCH_TRY(korch_op_require_dtype(ctx, 0, KORCH_DTYPE_FLOAT32));
    korch_op_set_output(ctx, 0, ctx->inputs[0]->dtype, &ctx->inputs[0]->shape);
    return KORCH_OK;
}

static korch_status run_relu(korch_op_ctx *ctx) {
    const float *x = ctx->inputs[0]->data;
    float *y = ctx->outputs[0]->data;
    int64_t n = korch_tensor_numel(ctx->outputs[0]);
#pragma omp parallel for schedule(static)
    for (int64_t i = 0; i < n; i++) y[i] = x[i] > 0.0f ? x[i] : 0.0f;
    return KORCH_OK;
}

const korch_op_def korch_op_def_Relu = {
    .kind = KORCH_OP_Relu, .op_type = "Relu", .opset_min = 1, .opset_max = 18,
    .min_inputs = 1, .max_inputs = 1, .min_outputs = 1, .max_outputs = 1,
    .infer = infer_same_float, .run = run_relu,
};
