/* Reshape: a pure metadata change; the reference kernel copies. A 0 in the
 * target shape copies the input dim, unless allowzero (opset 14) makes it a
 * real zero; one -1 takes whatever the element count leaves. */
#include "ops/layout.h"

static korch_status infer_reshape(korch_op_ctx *ctx) {
    KORCH_TRY(korch_layout_require_copyable(ctx, 0));
    const korch_tensor *x = ctx->inputs[0];
    int64_t spec[KORCH_MAX_RANK];
    int count = 0;
    if (ctx->node->opset < 5) {
        const int64_t *ints = NULL;
        count = korch_node_attr_ints(ctx->node, "shape", &ints);
        if (count < 0 || count > KORCH_MAX_RANK)
            return korch_op_error(ctx, KORCH_ERR_INVALID_MODEL, "missing or too long \"shape\" attribute");
        for (int i = 0; i < count; i++) spec[i] = ints[i];
    } else {
        KORCH_TRY(korch_op_read_ints(ctx, 1, "shape", spec, KORCH_MAX_RANK, &count));
    }
    bool allowzero = ctx->node->opset >= 14 && korch_node_attr_int(ctx->node, "allowzero", 0) != 0;
    korch_shape out = {.rank = count};
    int infer_at = -1;
    int64_t known = 1;
    char sbuf[96];
    for (int i = 0; i < count; i++) {
        int64_t d = spec[i];
        if (d == 0 && !allowzero) {
            if (i >= x->shape.rank)
                return korch_op_error(ctx, KORCH_ERR_SHAPE, "shape entry %d is 0 but the input has rank %d", i,
                                      x->shape.rank);
            d = x->shape.dims[i];
        }
        if (d == -1) {
            if (infer_at >= 0) return korch_op_error(ctx, KORCH_ERR_SHAPE, "shape has more than one -1");
            for (int k = 0; allowzero && k < count; k++)
                if (spec[k] == 0)
                    return korch_op_error(ctx, KORCH_ERR_SHAPE, "with allowzero=1 the shape cannot hold both 0 and -1");
            infer_at = i;
            continue;
        }
        if (d < 0) return korch_op_error(ctx, KORCH_ERR_SHAPE, "shape entry %d is %lld", i, (long long)d);
        out.dims[i] = d;
        if (korch_mul_overflow_i64(known, d, &known) || known > KORCH_MAX_ELEMENTS)
            return korch_op_error(ctx, KORCH_ERR_SHAPE, "target shape is too large");
    }
    int64_t total = korch_shape_numel(&x->shape);
    if (infer_at >= 0) {
        if (known == 0 || total % known != 0)
            return korch_op_error(ctx, KORCH_ERR_SHAPE, "cannot reshape %s (%lld elements) with a -1 entry",
                                  korch_shape_format(&x->shape, sbuf, sizeof sbuf), (long long)total);
        out.dims[infer_at] = total / known;
    }
    if (korch_shape_numel(&out) != total) {
        char obuf[96];
        return korch_op_error(ctx, KORCH_ERR_SHAPE, "cannot reshape %s to %s: element counts differ",
                              korch_shape_format(&x->shape, sbuf, sizeof sbuf),
                              korch_shape_format(&out, obuf, sizeof obuf));
    }
    korch_op_set_output(ctx, 0, x->dtype, &out);
    return KORCH_OK;
}

const korch_op_def korch_op_def_Reshape = {
    .kind = KORCH_OP_Reshape, .op_type = "Reshape", .opset_min = 1, .opset_max = 18,
    .min_inputs = 1, .max_inputs = 2, .min_outputs = 1, .max_outputs = 1,
    .infer = infer_reshape, .run = korch_layout_run_copy, .flops = korch_layout_no_flops,
};
