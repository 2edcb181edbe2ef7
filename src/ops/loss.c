/* NegativeLogLikelihoodLoss and SoftmaxCrossEntropyLoss (opset 12-18).
 * The input is [N, C] or [N, C, d1, ..., dk], the target [N] or
 * [N, d1, ..., dk] of class indices, the optional weight [C]. An element's
 * loss is -weight[t] * input[n, t, d...] (0 where t equals ignore_index);
 * reduction "none" keeps the target's shape, "sum" adds the losses, "mean"
 * divides that sum by the weights of the elements not ignored.
 * SoftmaxCrossEntropyLoss is the same over the log-softmax of axis 1, which
 * its optional second output returns. PyTorch exports nll_loss and
 * cross_entropy as these. */
#include <math.h>
#include <string.h>

#include "ops/elementwise.h"

typedef enum { LOSS_NONE, LOSS_SUM, LOSS_MEAN } loss_reduction;

static korch_status loss_reduction_of(const korch_op_ctx *ctx, loss_reduction *r) {
    const char *s = korch_node_attr_string(ctx->node, "reduction", "mean");
    if (strcmp(s, "none") == 0) *r = LOSS_NONE;
    else if (strcmp(s, "sum") == 0) *r = LOSS_SUM;
    else if (strcmp(s, "mean") == 0) *r = LOSS_MEAN;
    else {
        char buf[80];
        return korch_op_error(ctx, KORCH_ERR_INVALID_MODEL, "reduction \"%s\" is not none, sum or mean",
                              korch_printable(s, buf, sizeof buf));
    }
    return KORCH_OK;
}

/* The positions d1..dk flattened: the input is [N, C, D], the target [N, D]. */
static int64_t loss_inner(const korch_shape *x) {
    int64_t d = 1;
    for (int k = 2; k < x->rank; k++) d *= x->dims[k];
    return d;
}

/* Both operators: same inputs, same loss output; log_prob (SCE only) is the
 * input's shape. */
static korch_status infer_loss(korch_op_ctx *ctx) {
    const korch_tensor *x = ctx->inputs[0], *t = ctx->inputs[1];
    if (x->dtype != KORCH_DTYPE_FLOAT32 && x->dtype != KORCH_DTYPE_FLOAT64)
        return korch_op_error(ctx, KORCH_ERR_UNSUPPORTED, "input of dtype %s (korch supports float32 and float64)",
                              korch_dtype_name(x->dtype));
    if (t->dtype != KORCH_DTYPE_INT32 && t->dtype != KORCH_DTYPE_INT64)
        return korch_op_error(ctx, KORCH_ERR_INVALID_MODEL, "target must be int32 or int64, got %s",
                              korch_dtype_name(t->dtype));
    if (x->shape.rank < 2)
        return korch_op_error(ctx, KORCH_ERR_SHAPE, "input has rank %d; it must be [N, C, ...], rank >= 2",
                              x->shape.rank);
    char xs[96], ts[96];
    bool fits = t->shape.rank == x->shape.rank - 1 && t->shape.dims[0] == x->shape.dims[0];
    for (int k = 1; fits && k < t->shape.rank; k++) fits = t->shape.dims[k] == x->shape.dims[k + 1];
    if (!fits)
        return korch_op_error(ctx, KORCH_ERR_SHAPE, "target shape %s is not the input's %s without dim 1",
                              korch_shape_format(&t->shape, ts, sizeof ts),
                              korch_shape_format(&x->shape, xs, sizeof xs));
    if (korch_op_has_input(ctx, 2)) {
        const korch_tensor *w = ctx->inputs[2];
        if (w->dtype != x->dtype)
            return korch_op_error(ctx, KORCH_ERR_INVALID_MODEL, "weight has dtype %s, the input %s",
                                  korch_dtype_name(w->dtype), korch_dtype_name(x->dtype));
        if (w->shape.rank != 1 || w->shape.dims[0] != x->shape.dims[1])
            return korch_op_error(ctx, KORCH_ERR_SHAPE, "weight shape %s is not [C] = [%lld]",
                                  korch_shape_format(&w->shape, ts, sizeof ts), (long long)x->shape.dims[1]);
    }
    loss_reduction r;
    KORCH_TRY(loss_reduction_of(ctx, &r));
    korch_shape scalar = {.rank = 0};
    korch_op_set_output(ctx, 0, x->dtype, r == LOSS_NONE ? &t->shape : &scalar);
    korch_op_set_output(ctx, 1, x->dtype, &x->shape);
    return KORCH_OK;
}

/* The loss of log-probabilities logp (the node's input's shape, any float
 * dtype): NLL passes its input, SCE its log-softmax. */
static korch_status nll(korch_op_ctx *ctx, const korch_tensor *logp) {
    const korch_tensor *t = ctx->inputs[1], *w = korch_op_has_input(ctx, 2) ? ctx->inputs[2] : NULL;
    korch_tensor *y = ctx->outputs[0];
    loss_reduction r;
    KORCH_TRY(loss_reduction_of(ctx, &r));
    /* ignore_index has no default: without the attribute every target is a class */
    bool has_ignore = korch_node_attr(ctx->node, "ignore_index") != NULL;
    int64_t ignore = korch_node_attr_int(ctx->node, "ignore_index", 0);
    int64_t n = logp->shape.dims[0], c = logp->shape.dims[1], d = loss_inner(&logp->shape);
    double sum = 0, weight_sum = 0;
    for (int64_t i = 0; i < n; i++)
        for (int64_t j = 0; j < d; j++) {
            int64_t p = i * d + j, cls = korch_tensor_get_i64(t, p);
            double loss = 0;
            if (!has_ignore || cls != ignore) {
                if (cls < 0 || cls >= c)
                    return korch_op_error(ctx, KORCH_ERR_INVALID_ARGUMENT,
                                          "target %lld (element %lld of the target) is outside the classes [0, %lld)",
                                          (long long)cls, (long long)p, (long long)c);
                double wt = w ? korch_tensor_get_f64(w, cls) : 1.0;
                loss = -wt * korch_tensor_get_f64(logp, (i * c + cls) * d + j);
                weight_sum += wt;
            }
            if (r == LOSS_NONE) korch_ew_set_f64(y, p, loss);
            sum += loss;
        }
    /* all elements ignored gives 0/0 = NaN, as the spec's reference does */
    if (r != LOSS_NONE) korch_ew_set_f64(y, 0, r == LOSS_SUM ? sum : sum / weight_sum);
    return KORCH_OK;
}

static korch_status run_nll(korch_op_ctx *ctx) { return nll(ctx, ctx->inputs[0]); }

static korch_status run_sce(korch_op_ctx *ctx) {
    const korch_tensor *x = ctx->inputs[0];
    /* log-softmax in double, so that float32 scores lose nothing before the loss */
    korch_tensor logp = {0};
    KORCH_TRY(korch_tensor_alloc(&logp, KORCH_DTYPE_FLOAT64, &x->shape));
    double *lp = logp.data;
    int64_t n = x->shape.dims[0], c = x->shape.dims[1], d = loss_inner(&x->shape);
    for (int64_t i = 0; i < n && c > 0; i++)
        for (int64_t j = 0; j < d; j++) {
            int64_t base = i * c * d + j;
            double max = korch_tensor_get_f64(x, base);
            for (int64_t k = 1; k < c; k++) max = fmax(max, korch_tensor_get_f64(x, base + k * d));
            double sum = 0;
            for (int64_t k = 0; k < c; k++) sum += exp(korch_tensor_get_f64(x, base + k * d) - max);
            double log_sum = log(sum);
            for (int64_t k = 0; k < c; k++) lp[base + k * d] = korch_tensor_get_f64(x, base + k * d) - max - log_sum;
        }
    korch_status st = nll(ctx, &logp);
    korch_tensor *log_prob = ctx->n_outputs > 1 ? ctx->outputs[1] : NULL;
    if (st == KORCH_OK && log_prob)
        for (int64_t p = 0; p < korch_tensor_numel(&logp); p++) korch_ew_set_f64(log_prob, p, lp[p]);
    korch_tensor_free(&logp);
    return st;
}

/* a multiply and an add per target element */
static int64_t nll_flops(const korch_op_ctx *ctx) { return 2 * korch_tensor_numel(ctx->inputs[1]); }

/* the log-softmax's five per input element (ops/softmax.c), then the NLL */
static int64_t sce_flops(const korch_op_ctx *ctx) { return 5 * korch_tensor_numel(ctx->inputs[0]) + nll_flops(ctx); }

const korch_op_def korch_op_def_NegativeLogLikelihoodLoss = {
    .kind = KORCH_OP_NegativeLogLikelihoodLoss, .op_type = "NegativeLogLikelihoodLoss",
    .opset_min = 12, .opset_max = 18,
    .min_inputs = 2, .max_inputs = 3, .min_outputs = 1, .max_outputs = 1,
    .infer = infer_loss, .run = run_nll, .flops = nll_flops,
};

const korch_op_def korch_op_def_SoftmaxCrossEntropyLoss = {
    .kind = KORCH_OP_SoftmaxCrossEntropyLoss, .op_type = "SoftmaxCrossEntropyLoss",
    .opset_min = 12, .opset_max = 18,
    .min_inputs = 2, .max_inputs = 3, .min_outputs = 1, .max_outputs = 2,
    .infer = infer_loss, .run = run_sce, .flops = sce_flops,
};
