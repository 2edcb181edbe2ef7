/* LRN (opset 1-18): local response normalisation across channels. For X of
 * shape [N, C, D1, ..., Dk],
 *   square_sum[n, c, d] = sum of X[n, i, d]^2 over the channels i in
 *                         [c - floor((size-1)/2), c + ceil((size-1)/2)]
 *                         (clipped to [0, C-1]),
 *   Y[n, c, d] = X[n, c, d] / (bias + alpha / size * square_sum[n, c, d])^beta,
 * with alpha 0.0001, beta 0.75 and bias 1 by default; `size` is required.
 * float32 and float64, computed in double. */
#include <math.h>

#include "ops/elementwise.h"

typedef struct lrn_params {
    int64_t size;
    double alpha, beta, bias;
} lrn_params;

static korch_status lrn_read(const korch_op_ctx *ctx, lrn_params *p) {
    const korch_attr *a = korch_node_attr(ctx->node, "size");
    if (!a || a->type != KORCH_ATTR_INT)
        return korch_op_error(ctx, KORCH_ERR_INVALID_MODEL, "the integer attribute \"size\" is required");
    if (a->i < 1)
        return korch_op_error(ctx, KORCH_ERR_INVALID_MODEL, "size %lld: it must be at least 1", (long long)a->i);
    p->size = a->i;
    p->alpha = korch_node_attr_float(ctx->node, "alpha", 0.0001f);
    p->beta = korch_node_attr_float(ctx->node, "beta", 0.75f);
    p->bias = korch_node_attr_float(ctx->node, "bias", 1.0f);
    return KORCH_OK;
}

static bool lrn_dtype_ok(korch_dtype t) { return t == KORCH_DTYPE_FLOAT32 || t == KORCH_DTYPE_FLOAT64; }

static korch_status infer_lrn(korch_op_ctx *ctx) {
    const korch_tensor *x = ctx->inputs[0];
    KORCH_TRY(korch_ew_require(ctx, 0, lrn_dtype_ok, "float32 or float64"));
    if (x->shape.rank < 2)
        return korch_op_error(ctx, KORCH_ERR_SHAPE, "input of rank %d: LRN needs [N, C, ...]", x->shape.rank);
    lrn_params p;
    KORCH_TRY(lrn_read(ctx, &p));
    korch_op_set_output(ctx, 0, x->dtype, &x->shape);
    return KORCH_OK;
}

static korch_status run_lrn(korch_op_ctx *ctx) {
    const korch_tensor *x = ctx->inputs[0];
    korch_tensor *y = ctx->outputs[0];
    lrn_params p;
    KORCH_TRY(lrn_read(ctx, &p));
    int64_t n = x->shape.dims[0], c = x->shape.dims[1], inner = 1;
    for (int d = 2; d < x->shape.rank; d++) inner *= x->shape.dims[d];
    int64_t before = (p.size - 1) / 2, after = p.size - 1 - before; /* floor and ceil of (size-1)/2 */
    for (int64_t b = 0; b < n; b++)
        for (int64_t ch = 0; ch < c; ch++)
            for (int64_t s = 0; s < inner; s++) {
                int64_t lo = ch - before < 0 ? 0 : ch - before, hi = ch + after > c - 1 ? c - 1 : ch + after;
                double sum = 0;
                for (int64_t i = lo; i <= hi; i++) {
                    double v = korch_tensor_get_f64(x, (b * c + i) * inner + s);
                    sum += v * v;
                }
                int64_t at = (b * c + ch) * inner + s;
                double v = korch_tensor_get_f64(x, at) / pow(p.bias + p.alpha / (double)p.size * sum, p.beta);
                if (y->dtype == KORCH_DTYPE_FLOAT32) ((float *)y->data)[at] = (float)v;
                else ((double *)y->data)[at] = v;
            }
    return KORCH_OK;
}

/* Per element: size squares and adds, then a multiply-add, a power and a divide. */
static int64_t flops_lrn(const korch_op_ctx *ctx) {
    int64_t size = korch_node_attr_int(ctx->node, "size", 1);
    return korch_tensor_numel(ctx->inputs[0]) * (2 * size + 4);
}

const korch_op_def korch_op_def_LRN = {
    .kind = KORCH_OP_LRN, .op_type = "LRN", .opset_min = 1, .opset_max = 18,
    .min_inputs = 1, .max_inputs = 1, .min_outputs = 1, .max_outputs = 1,
    .infer = infer_lrn, .run = run_lrn, .flops = flops_lrn,
};
