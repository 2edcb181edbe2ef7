/* Trilu (opset 14-18): the upper (upper=1, the default) or lower triangle
 * of the last two dimensions of x, every other element zero. Element (i, j)
 * is kept when j - i >= k (upper) or j - i <= k (lower); k is the optional
 * scalar input (0 when absent). Transformer exports write it for causal
 * masks (torch.triu / torch.tril). */
#include <string.h>

#include "ops/layout.h"
#include "ops/trilu.h"

/* The diagonal offset: the optional input 1, a one-element int64 tensor. */
static korch_status trilu_k(const korch_op_ctx *ctx, int64_t *k) {
    *k = 0;
    if (!korch_op_has_input(ctx, 1)) return KORCH_OK;
    const korch_tensor *t = ctx->inputs[1];
    if (t->dtype != KORCH_DTYPE_INT64 || korch_tensor_numel(t) != 1 || t->shape.rank > 1)
        return korch_op_error(ctx, KORCH_ERR_INVALID_MODEL, "k must be one int64 value, is %s with %lld elements",
                              korch_dtype_name(t->dtype), (long long)korch_tensor_numel(t));
    if (t->data) *k = korch_tensor_get_i64(t, 0);
    return KORCH_OK;
}

static korch_status infer_trilu(korch_op_ctx *ctx) {
    KORCH_TRY(korch_layout_require_copyable(ctx, 0));
    const korch_tensor *x = ctx->inputs[0];
    if (x->shape.rank < 2)
        return korch_op_error(ctx, KORCH_ERR_SHAPE, "input of rank %d: Trilu needs rank >= 2", x->shape.rank);
    int64_t k;
    KORCH_TRY(trilu_k(ctx, &k));
    korch_op_set_output(ctx, 0, x->dtype, &x->shape);
    return KORCH_OK;
}

static korch_status run_trilu(korch_op_ctx *ctx) {
    const korch_tensor *x = ctx->inputs[0];
    korch_tensor *y = ctx->outputs[0];
    int64_t k;
    KORCH_TRY(trilu_k(ctx, &k));
    bool upper = korch_node_attr_int(ctx->node, "upper", 1) != 0;
    int r = x->shape.rank;
    int64_t rows = x->shape.dims[r - 2], cols = x->shape.dims[r - 1];
    int64_t plane = rows * cols, planes = plane > 0 ? korch_tensor_numel(x) / plane : 0;
    size_t es = korch_dtype_size(x->dtype);
    memset(y->data, 0, korch_tensor_bytes(y)); /* zero is all-zero bytes in every dtype */
    for (int64_t p = 0; p < planes; p++)
        for (int64_t i = 0; i < rows; i++)
            for (int64_t j = 0; j < cols; j++)
                if (korch_trilu_keeps(upper, k, i, j)) {
                    size_t off = (size_t)((p * rows + i) * cols + j) * es;
                    memcpy((char *)y->data + off, (const char *)x->data + off, es);
                }
    return KORCH_OK;
}

const korch_op_def korch_op_def_Trilu = {
    .kind = KORCH_OP_Trilu, .op_type = "Trilu", .opset_min = 14, .opset_max = 18,
    .min_inputs = 1, .max_inputs = 2, .min_outputs = 1, .max_outputs = 1,
    .infer = infer_trilu, .run = run_trilu, .flops = korch_layout_no_flops,
};
