/* Argument readers shared by the layout operators. Many of them moved an
 * integer list from an attribute to an input at some opset (Squeeze axes at
 * 13, Split sizes at 13, Slice starts/ends at 10, Pad pads at 11); these
 * helpers read either form and validate it. */
#include "ops/layout.h"

korch_status korch_layout_require_copyable(const korch_op_ctx *ctx, int i) {
    if (!korch_op_has_input(ctx, i)) return korch_op_error(ctx, KORCH_ERR_INVALID_MODEL, "missing input %d", i);
    korch_dtype t = ctx->inputs[i]->dtype;
    if (t == KORCH_DTYPE_STRING || korch_dtype_size(t) == 0)
        return korch_op_error(ctx, KORCH_ERR_UNSUPPORTED, "input %d has unsupported dtype %s", i, korch_dtype_name(t));
    return KORCH_OK;
}

korch_status korch_layout_read_list(const korch_op_ctx *ctx, bool from_input, int input, const char *attr,
                                    int64_t *out, int cap, int *count, bool *present) {
    *count = 0;
    *present = false;
    if (from_input) {
        if (!korch_op_has_input(ctx, input)) return KORCH_OK;
        KORCH_TRY(korch_op_read_ints(ctx, input, attr, out, cap, count));
        *present = true;
        return KORCH_OK;
    }
    const korch_attr *a = korch_node_attr(ctx->node, attr);
    if (!a) return KORCH_OK;
    if (a->type != KORCH_ATTR_INTS)
        return korch_op_error(ctx, KORCH_ERR_INVALID_MODEL, "attribute \"%s\" must be a list of ints", attr);
    if (a->count > cap)
        return korch_op_error(ctx, KORCH_ERR_UNSUPPORTED, "attribute \"%s\" has %d entries (at most %d supported)", attr,
                              a->count, cap);
    for (int k = 0; k < a->count; k++) out[k] = a->ints[k];
    *count = a->count;
    *present = true;
    return KORCH_OK;
}

korch_status korch_layout_normalize_axes(const korch_op_ctx *ctx, int64_t *axes, int count, int rank) {
    bool seen[KORCH_LAYOUT_MAX_RANK] = {false};
    for (int k = 0; k < count; k++) {
        int a = korch_axis_normalize(axes[k], rank);
        if (a < 0)
            return korch_op_error(ctx, KORCH_ERR_INVALID_MODEL, "axis %lld is out of range for rank %d",
                                  (long long)axes[k], rank);
        if (seen[a]) return korch_op_error(ctx, KORCH_ERR_INVALID_MODEL, "axis %lld is repeated", (long long)axes[k]);
        seen[a] = true;
        axes[k] = a;
    }
    return KORCH_OK;
}

int64_t korch_layout_no_flops(const korch_op_ctx *ctx) {
    (void)ctx;
    return 0;
}

korch_status korch_layout_check_indices(const korch_op_ctx *ctx, int axis, korch_status status) {
    const korch_tensor *idx = ctx->inputs[1];
    int64_t dim = ctx->inputs[0]->shape.dims[axis], n = korch_tensor_numel(idx);
    for (int64_t j = 0; j < n; j++) {
        int64_t i = korch_tensor_get_i64(idx, j);
        if (i < -dim || i >= dim)
            return korch_op_error(ctx, status,
                                  "index %lld (element %lld of the indices) is out of range for axis %d of size %lld",
                                  (long long)i, (long long)j, axis, (long long)dim);
    }
    return KORCH_OK;
}
