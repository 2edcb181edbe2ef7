/* Dropout at inference: the identity, with an all-true mask when requested.
 * Training mode (opset 12+ `training_mode` input true) drops elements at
 * random; korch refuses it unless the ratio is 0, where it is the identity too,
 * and refuses a training_mode that is not a constant.
 * The mask is bool from opset 10, before that it has the input's dtype. */
#include <string.h>

#include "ops/elementwise.h"

static korch_dtype mask_dtype(const korch_op_ctx *ctx) {
    return ctx->node->opset >= 10 ? KORCH_DTYPE_BOOL : ctx->inputs[0]->dtype;
}

/* Dropping happens when training_mode is true and the ratio is not 0. Both
 * must be constants for korch to know it does not: a model that decides at
 * run time whether to train is not an inference model. */
static korch_status check_not_training(const korch_op_ctx *ctx) {
    if (ctx->node->opset < 12 || !korch_op_has_input(ctx, 2)) return KORCH_OK;
    const korch_tensor *mode = ctx->inputs[2], *ratio = korch_op_has_input(ctx, 1) ? ctx->inputs[1] : NULL;
    if (!mode->data)
        return korch_op_error(ctx, KORCH_ERR_UNSUPPORTED,
                              "training_mode is a run-time input; korch runs inference only and needs it constant");
    if (korch_tensor_get_i64(mode, 0) == 0) return KORCH_OK;
    if (ratio && !ratio->data)
        return korch_op_error(ctx, KORCH_ERR_UNSUPPORTED,
                              "training_mode is true and the ratio is a run-time input: random dropout is not "
                              "supported (inference only)");
    double r = ratio ? korch_tensor_get_f64(ratio, 0) : 0.5;
    if (r != 0.0)
        return korch_op_error(ctx, KORCH_ERR_UNSUPPORTED,
                              "training_mode is true with ratio %g: random dropout is not supported (inference only)",
                              r);
    return KORCH_OK;
}

static korch_status infer_dropout(korch_op_ctx *ctx) {
    const korch_tensor *x = ctx->inputs[0];
    char name[160];
    if (korch_dtype_size(x->dtype) == 0 || x->dtype == KORCH_DTYPE_STRING)
        return korch_op_error(ctx, KORCH_ERR_UNSUPPORTED, "dtype %s is not supported", korch_dtype_name(x->dtype));
    if (ctx->node->opset < 12 && korch_node_input_count(ctx->node) > 1)
        return korch_op_error(ctx, KORCH_ERR_INVALID_MODEL, "before opset 12 Dropout has one input, the node has %d",
                              korch_node_input_count(ctx->node));
    for (int i = 1; i <= 2; i++) {
        if (!korch_op_has_input(ctx, i)) continue;
        if (korch_tensor_numel(ctx->inputs[i]) != 1)
            return korch_op_error(ctx, KORCH_ERR_SHAPE, "%s input \"%s\" must be a scalar",
                                  i == 1 ? "ratio" : "training_mode",
                                  korch_printable(korch_op_input_name(ctx, i), name, sizeof name));
    }
    if (korch_op_has_input(ctx, 2)) KORCH_TRY(korch_op_require_dtype(ctx, 2, KORCH_DTYPE_BOOL));
    if (korch_op_has_input(ctx, 1))
        KORCH_TRY(korch_ew_require(ctx, 1, korch_ew_is_float, "float32 and float64"));
    KORCH_TRY(check_not_training(ctx));
    korch_op_set_output(ctx, 0, x->dtype, &x->shape);
    korch_op_set_output(ctx, 1, mask_dtype(ctx), &x->shape);
    return KORCH_OK;
}

static korch_status run_dropout(korch_op_ctx *ctx) {
    KORCH_TRY(check_not_training(ctx)); /* inference decided; the values cannot change */
    size_t bytes = korch_tensor_bytes(ctx->outputs[0]);
    if (bytes) memcpy(ctx->outputs[0]->data, ctx->inputs[0]->data, bytes);
    korch_tensor *mask = ctx->n_outputs > 1 ? ctx->outputs[1] : NULL;
    if (mask) {
        int64_t n = korch_tensor_numel(mask);
        for (int64_t i = 0; i < n; i++) korch_ew_set_i64(mask, i, 1);
        if (mask->dtype == KORCH_DTYPE_FLOAT16) /* 1.0 in binary16 */
            for (int64_t i = 0; i < n; i++) ((uint16_t *)mask->data)[i] = 0x3c00;
    }
    return KORCH_OK;
}

static int64_t no_flops(const korch_op_ctx *ctx) {
    (void)ctx;
    return 0; /* a copy */
}

const korch_op_def korch_op_def_Dropout = {
    .kind = KORCH_OP_Dropout, .op_type = "Dropout", .opset_min = 1, .opset_max = 18,
    .min_inputs = 1, .max_inputs = 3, .min_outputs = 1, .max_outputs = 2,
    .infer = infer_dropout, .run = run_dropout, .flops = no_flops,
};
