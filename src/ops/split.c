/* Split: cuts the input along one axis into consecutive pieces, one per
 * output. Piece sizes come from the 'split' attribute (opset < 13), the
 * 'split' input (opset 1 and >= 13), or are equal parts; opset 18 adds
 * num_outputs and lets the last part be smaller. */
#include "ops/layout.h"

#define SPLIT_MAX_OUTPUTS 1024

static korch_status split_sizes(const korch_op_ctx *ctx, int *axis_out, int64_t *sizes) {
    const korch_shape *in = &ctx->inputs[0]->shape;
    int64_t raw = korch_node_attr_int(ctx->node, "axis", 0);
    int axis = korch_axis_normalize(raw, in->rank);
    if (axis < 0)
        return korch_op_error(ctx, KORCH_ERR_INVALID_MODEL, "axis %lld is out of range for rank %d", (long long)raw,
                              in->rank);
    *axis_out = axis;
    int n = ctx->n_outputs;
    int64_t dim = in->dims[axis];
    int count = 0;
    bool present = false;
    int opset = ctx->node->opset;
    bool from_input = opset >= 13 || (opset == 1 && korch_op_has_input(ctx, 1));
    KORCH_TRY(korch_layout_read_list(ctx, from_input, 1, "split", sizes, SPLIT_MAX_OUTPUTS, &count, &present));
    const korch_attr *num = opset >= 18 ? korch_node_attr(ctx->node, "num_outputs") : NULL;
    if (present && num)
        return korch_op_error(ctx, KORCH_ERR_INVALID_MODEL, "has both a 'split' input and 'num_outputs'");
    if (num && (num->type != KORCH_ATTR_INT || num->i != n))
        return korch_op_error(ctx, KORCH_ERR_INVALID_MODEL, "num_outputs is %lld but the node has %d outputs",
                              num->type == KORCH_ATTR_INT ? (long long)num->i : -1LL, n);
    if (present) {
        if (count != n)
            return korch_op_error(ctx, KORCH_ERR_INVALID_MODEL, "'split' has %d entries but the node has %d outputs",
                                  count, n);
        int64_t sum = 0;
        for (int k = 0; k < n; k++) {
            if (sizes[k] < 0 || korch_add_overflow_i64(sum, sizes[k], &sum))
                return korch_op_error(ctx, KORCH_ERR_INVALID_MODEL, "'split' entry %d (%lld) is negative or too large", k,
                                      (long long)sizes[k]);
        }
        if (sum != dim)
            return korch_op_error(ctx, KORCH_ERR_SHAPE, "'split' sums to %lld but axis %d has size %lld", (long long)sum,
                                  axis, (long long)dim);
        return KORCH_OK;
    }
    if (opset >= 18) {
        /* ceil-sized parts; the last one takes what is left */
        int64_t part = dim / n + (dim % n != 0);
        int64_t last = dim - part * (n - 1);
        if (last < 0)
            return korch_op_error(ctx, KORCH_ERR_SHAPE, "axis %d of size %lld cannot be split into %d parts", axis,
                                  (long long)dim, n);
        for (int k = 0; k < n; k++) sizes[k] = k + 1 < n ? part : last;
        return KORCH_OK;
    }
    if (dim % n != 0)
        return korch_op_error(ctx, KORCH_ERR_SHAPE, "axis %d of size %lld does not split into %d equal parts", axis,
                              (long long)dim, n);
    for (int k = 0; k < n; k++) sizes[k] = dim / n;
    return KORCH_OK;
}

static korch_status infer_split(korch_op_ctx *ctx) {
    KORCH_TRY(korch_layout_require_copyable(ctx, 0));
    if (ctx->n_outputs > SPLIT_MAX_OUTPUTS)
        return korch_op_error(ctx, KORCH_ERR_UNSUPPORTED, "has %d outputs (at most %d supported)", ctx->n_outputs,
                              SPLIT_MAX_OUTPUTS);
    int64_t sizes[SPLIT_MAX_OUTPUTS];
    int axis;
    KORCH_TRY(split_sizes(ctx, &axis, sizes));
    for (int k = 0; k < ctx->n_outputs; k++) {
        korch_shape s = ctx->inputs[0]->shape;
        s.dims[axis] = sizes[k];
        korch_op_set_output(ctx, k, ctx->inputs[0]->dtype, &s);
    }
    return KORCH_OK;
}

static korch_status run_split(korch_op_ctx *ctx) {
    const korch_tensor *x = ctx->inputs[0];
    int64_t sizes[SPLIT_MAX_OUTPUTS];
    int axis;
    KORCH_TRY(split_sizes(ctx, &axis, sizes));
    int64_t outer = 1, inner = 1;
    for (int k = 0; k < axis; k++) outer *= x->shape.dims[k];
    for (int k = axis + 1; k < x->shape.rank; k++) inner *= x->shape.dims[k];
    int64_t row = x->shape.dims[axis] * inner, at = 0;
    for (int k = 0; k < ctx->n_outputs; k++) {
        if (ctx->outputs[k]) {
            /* output k is the column block [at, at + size*inner) of an (outer, row) matrix */
            korch_strided_view v = {.rank = 2, .dims = {outer, sizes[k] * inner}, .strides = {row, 1}, .offset = at};
            korch_layout_copy_view(ctx->outputs[k]->data, x->data, korch_dtype_size(x->dtype), &v);
        }
        at += sizes[k] * inner;
    }
    return KORCH_OK;
}

const korch_op_def korch_op_def_Split = {
    .kind = KORCH_OP_Split, .op_type = "Split", .opset_min = 1, .opset_max = 18,
    .min_inputs = 1, .max_inputs = 2, .min_outputs = 1, .max_outputs = SPLIT_MAX_OUTPUTS,
    .infer = infer_split, .run = run_split, .flops = korch_layout_no_flops,
};
