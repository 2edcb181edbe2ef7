/* Transpose: output dim k is input dim perm[k]; perm defaults to reversal. */
#include "ops/layout.h"

static korch_status read_perm(const korch_op_ctx *ctx, int *perm) {
    int rank = ctx->inputs[0]->shape.rank;
    const int64_t *ints = NULL;
    int count = korch_node_attr_ints(ctx->node, "perm", &ints);
    if (count < 0) {
        if (korch_node_attr(ctx->node, "perm"))
            return korch_op_error(ctx, KORCH_ERR_INVALID_MODEL, "attribute \"perm\" must be a list of ints");
        for (int k = 0; k < rank; k++) perm[k] = rank - 1 - k;
        return KORCH_OK;
    }
    if (count != rank)
        return korch_op_error(ctx, KORCH_ERR_INVALID_MODEL, "perm has %d entries but the input has rank %d", count,
                              rank);
    bool seen[KORCH_MAX_RANK] = {false};
    for (int k = 0; k < rank; k++) {
        if (ints[k] < 0 || ints[k] >= rank || seen[ints[k]])
            return korch_op_error(ctx, KORCH_ERR_INVALID_MODEL, "perm is not a permutation of 0..%d (entry %d is %lld)",
                                  rank - 1, k, (long long)ints[k]);
        seen[ints[k]] = true;
        perm[k] = (int)ints[k];
    }
    return KORCH_OK;
}

static korch_status infer_transpose(korch_op_ctx *ctx) {
    KORCH_TRY(korch_layout_require_copyable(ctx, 0));
    const korch_shape *in = &ctx->inputs[0]->shape;
    int perm[KORCH_MAX_RANK];
    KORCH_TRY(read_perm(ctx, perm));
    korch_shape out = {.rank = in->rank};
    for (int k = 0; k < in->rank; k++) out.dims[k] = in->dims[perm[k]];
    korch_op_set_output(ctx, 0, ctx->inputs[0]->dtype, &out);
    return KORCH_OK;
}

static korch_status run_transpose(korch_op_ctx *ctx) {
    const korch_tensor *x = ctx->inputs[0];
    int perm[KORCH_MAX_RANK];
    KORCH_TRY(read_perm(ctx, perm));
    korch_strided_view view;
    korch_layout_permuted_view(&x->shape, perm, &view);
    korch_layout_copy_view(ctx->outputs[0]->data, x->data, korch_dtype_size(x->dtype), &view);
    return KORCH_OK;
}

const korch_op_def korch_op_def_Transpose = {
    .kind = KORCH_OP_Transpose, .op_type = "Transpose", .opset_min = 1, .opset_max = 18,
    .min_inputs = 1, .max_inputs = 1, .min_outputs = 1, .max_outputs = 1,
    .infer = infer_transpose, .run = run_transpose, .flops = korch_layout_no_flops,
};
