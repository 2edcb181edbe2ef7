/* Slice: a strided window per axis. starts/ends/axes are attributes before
 * opset 10 and constant inputs (plus steps) from opset 10. Out-of-range
 * starts and ends are clamped as numpy does, so INT64_MAX means "to the end"
 * and negative steps walk backwards. */
#include "ops/layout.h"

typedef struct slice_plan {
    int64_t start[KORCH_MAX_RANK], step[KORCH_MAX_RANK], len[KORCH_MAX_RANK];
} slice_plan;

/* Clamps one axis's (start, end, step) against dim and returns its length. */
static int64_t clamp_axis(int64_t dim, int64_t *start, int64_t end, int64_t step) {
    int64_t s = *start, e = end;
    if (s < 0) s += dim; /* cannot overflow: s < 0 <= dim */
    if (e < 0) e += dim;
    if (step > 0) {
        s = s < 0 ? 0 : s > dim ? dim : s;
        e = e < 0 ? 0 : e > dim ? dim : e;
    } else {
        s = s < 0 ? 0 : s > dim - 1 ? dim - 1 : s;
        e = e < -1 ? -1 : e > dim - 1 ? dim - 1 : e;
    }
    *start = s;
    /* |e - s| <= dim + 1 after clamping, so this cannot overflow */
    int64_t span = step > 0 ? e - s : s - e;
    int64_t mag = step > 0 ? step : (step == INT64_MIN ? INT64_MAX : -step);
    if (span <= 0) return 0;
    return (span - 1) / mag + 1;
}

static korch_status plan_slice(const korch_op_ctx *ctx, slice_plan *p) {
    const korch_shape *in = &ctx->inputs[0]->shape;
    int64_t starts[KORCH_MAX_RANK], ends[KORCH_MAX_RANK], axes[KORCH_MAX_RANK], steps[KORCH_MAX_RANK];
    int n_starts = 0, n_ends = 0, n_axes = 0, n_steps = 0;
    bool has_starts, has_ends, has_axes, has_steps = false;
    bool inputs = ctx->node->opset >= 10;
    KORCH_TRY(korch_layout_read_list(ctx, inputs, 1, "starts", starts, KORCH_MAX_RANK, &n_starts, &has_starts));
    KORCH_TRY(korch_layout_read_list(ctx, inputs, 2, "ends", ends, KORCH_MAX_RANK, &n_ends, &has_ends));
    KORCH_TRY(korch_layout_read_list(ctx, inputs, 3, "axes", axes, KORCH_MAX_RANK, &n_axes, &has_axes));
    if (inputs) KORCH_TRY(korch_layout_read_list(ctx, true, 4, "steps", steps, KORCH_MAX_RANK, &n_steps, &has_steps));
    if (!has_starts || !has_ends) return korch_op_error(ctx, KORCH_ERR_INVALID_MODEL, "missing starts or ends");
    int n = n_starts;
    if (n_ends != n || (has_axes && n_axes != n) || (has_steps && n_steps != n))
        return korch_op_error(ctx, KORCH_ERR_INVALID_MODEL,
                              "starts, ends, axes and steps differ in length (%d, %d, %d, %d)", n_starts, n_ends,
                              has_axes ? n_axes : n, has_steps ? n_steps : n);
    if (n > in->rank)
        return korch_op_error(ctx, KORCH_ERR_INVALID_MODEL, "slices %d axes of a rank-%d input", n, in->rank);
    if (!has_axes)
        for (int k = 0; k < n; k++) axes[k] = k;
    KORCH_TRY(korch_layout_normalize_axes(ctx, axes, n, in->rank));
    for (int d = 0; d < in->rank; d++) {
        p->start[d] = 0;
        p->step[d] = 1;
        p->len[d] = in->dims[d];
    }
    for (int k = 0; k < n; k++) {
        int d = (int)axes[k];
        int64_t step = has_steps ? steps[k] : 1;
        if (step == 0) return korch_op_error(ctx, KORCH_ERR_INVALID_MODEL, "step for axis %d is 0", d);
        p->start[d] = starts[k];
        p->step[d] = step;
        p->len[d] = clamp_axis(in->dims[d], &p->start[d], ends[k], step);
    }
    return KORCH_OK;
}

static korch_status infer_slice(korch_op_ctx *ctx) {
    KORCH_TRY(korch_layout_require_copyable(ctx, 0));
    slice_plan p;
    KORCH_TRY(plan_slice(ctx, &p));
    korch_shape out = {.rank = ctx->inputs[0]->shape.rank};
    for (int d = 0; d < out.rank; d++) out.dims[d] = p.len[d];
    korch_op_set_output(ctx, 0, ctx->inputs[0]->dtype, &out);
    return KORCH_OK;
}

static korch_status run_slice(korch_op_ctx *ctx) {
    const korch_tensor *x = ctx->inputs[0];
    slice_plan p;
    KORCH_TRY(plan_slice(ctx, &p));
    int64_t strides[KORCH_MAX_RANK];
    korch_shape_strides(&x->shape, strides);
    korch_strided_view v = {.rank = x->shape.rank, .offset = 0};
    for (int d = 0; d < v.rank; d++) {
        v.dims[d] = p.len[d];
        /* a step larger than the axis only happens with len <= 1, where the
         * stride is never applied; keep it from overflowing anyway */
        v.strides[d] = p.len[d] > 1 ? p.step[d] * strides[d] : strides[d];
        if (p.len[d] > 0) v.offset += p.start[d] * strides[d];
    }
    korch_layout_copy_view(ctx->outputs[0]->data, x->data, korch_dtype_size(x->dtype), &v);
    return KORCH_OK;
}

const korch_op_def korch_op_def_Slice = {
    .kind = KORCH_OP_Slice, .op_type = "Slice", .opset_min = 1, .opset_max = 18,
    .min_inputs = 1, .max_inputs = 5, .min_outputs = 1, .max_outputs = 1,
    .infer = infer_slice, .run = run_slice, .flops = korch_layout_no_flops,
};
