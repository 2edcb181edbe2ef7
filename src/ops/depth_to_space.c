/* DepthToSpace and SpaceToDepth on NCHW tensors. Both are a reshape to 6-D,
 * a transpose and a reshape back, i.e. one strided view of the input:
 *   DepthToSpace DCR: [N, b, b, C', H, W] -> perm (0, 3, 4, 1, 5, 2)
 *   DepthToSpace CRD: [N, C', b, b, H, W] -> perm (0, 1, 4, 2, 5, 3)
 *   SpaceToDepth DCR: [N, C, H', b, W', b] -> perm (0, 3, 5, 1, 2, 4)
 *   SpaceToDepth CRD: [N, C, H', b, W', b] -> perm (0, 1, 3, 5, 2, 4)
 * (SpaceToDepth has no mode attribute up to opset 18; DCR is its behaviour,
 * CRD is accepted for models from later opsets.) */
#include <string.h>

#include "ops/layout.h"

static korch_status read_blocksize(const korch_op_ctx *ctx, int64_t *b) {
    const korch_tensor *x = ctx->inputs[0];
    if (x->shape.rank != 4) return korch_op_error(ctx, KORCH_ERR_SHAPE, "input must be 4-D (NCHW), has rank %d", x->shape.rank);
    if (!korch_node_attr(ctx->node, "blocksize"))
        return korch_op_error(ctx, KORCH_ERR_INVALID_MODEL, "missing attribute \"blocksize\"");
    *b = korch_node_attr_int(ctx->node, "blocksize", 0);
    if (*b <= 0 || *b > KORCH_MAX_ELEMENTS)
        return korch_op_error(ctx, KORCH_ERR_INVALID_MODEL, "blocksize %lld is out of range", (long long)*b);
    return KORCH_OK;
}

/* CRD mode exists from opset 11; DCR is the default (and only before). */
static korch_status read_crd(const korch_op_ctx *ctx, bool *crd) {
    const char *mode = korch_node_attr_string(ctx->node, "mode", "DCR");
    *crd = strcmp(mode, "CRD") == 0;
    if (!*crd && strcmp(mode, "DCR") != 0) {
        char buf[64];
        return korch_op_error(ctx, KORCH_ERR_INVALID_MODEL, "unknown mode \"%s\" (expected DCR or CRD)",
                              korch_printable(mode, buf, sizeof buf));
    }
    return KORCH_OK;
}

static korch_status infer_depth_to_space(korch_op_ctx *ctx) {
    KORCH_TRY(korch_layout_require_copyable(ctx, 0));
    int64_t b;
    bool crd;
    KORCH_TRY(read_blocksize(ctx, &b));
    KORCH_TRY(read_crd(ctx, &crd));
    const int64_t *d = ctx->inputs[0]->shape.dims;
    int64_t bb;
    if (korch_mul_overflow_i64(b, b, &bb) || d[1] % bb != 0)
        return korch_op_error(ctx, KORCH_ERR_SHAPE, "channels (%lld) are not divisible by blocksize^2 (%lld^2)",
                              (long long)d[1], (long long)b);
    korch_shape out = {.rank = 4, .dims = {d[0], d[1] / bb, 0, 0}};
    if (korch_mul_overflow_i64(d[2], b, &out.dims[2]) || korch_mul_overflow_i64(d[3], b, &out.dims[3]))
        return korch_op_error(ctx, KORCH_ERR_SHAPE, "output is too large");
    korch_op_set_output(ctx, 0, ctx->inputs[0]->dtype, &out);
    return KORCH_OK;
}

/* Dense 6-D view of the input followed by a permutation. */
static void run_6d(korch_op_ctx *ctx, const int64_t *dims6, const int *perm) {
    const korch_tensor *x = ctx->inputs[0];
    korch_shape s6 = korch_shape_make(6, dims6);
    korch_strided_view v;
    korch_layout_permuted_view(&s6, perm, &v);
    korch_layout_copy_view(ctx->outputs[0]->data, x->data, korch_dtype_size(x->dtype), &v);
}

static korch_status run_depth_to_space(korch_op_ctx *ctx) {
    int64_t b;
    bool crd;
    KORCH_TRY(read_blocksize(ctx, &b));
    KORCH_TRY(read_crd(ctx, &crd));
    const int64_t *d = ctx->inputs[0]->shape.dims;
    int64_t c = d[1] / (b * b);
    if (crd) {
        static const int perm[6] = {0, 1, 4, 2, 5, 3};
        run_6d(ctx, (int64_t[6]){d[0], c, b, b, d[2], d[3]}, perm);
    } else {
        static const int perm[6] = {0, 3, 4, 1, 5, 2};
        run_6d(ctx, (int64_t[6]){d[0], b, b, c, d[2], d[3]}, perm);
    }
    return KORCH_OK;
}

const korch_op_def korch_op_def_DepthToSpace = {
    .kind = KORCH_OP_DepthToSpace, .op_type = "DepthToSpace", .opset_min = 1, .opset_max = 18,
    .min_inputs = 1, .max_inputs = 1, .min_outputs = 1, .max_outputs = 1,
    .infer = infer_depth_to_space, .run = run_depth_to_space, .flops = korch_layout_no_flops,
};

static korch_status infer_space_to_depth(korch_op_ctx *ctx) {
    KORCH_TRY(korch_layout_require_copyable(ctx, 0));
    int64_t b;
    bool crd;
    KORCH_TRY(read_blocksize(ctx, &b));
    KORCH_TRY(read_crd(ctx, &crd));
    const int64_t *d = ctx->inputs[0]->shape.dims;
    if (d[2] % b != 0 || d[3] % b != 0)
        return korch_op_error(ctx, KORCH_ERR_SHAPE, "height %lld and width %lld must be divisible by blocksize %lld",
                              (long long)d[2], (long long)d[3], (long long)b);
    korch_shape out = {.rank = 4, .dims = {d[0], d[1], d[2] / b, d[3] / b}};
    int64_t bb;
    if (korch_mul_overflow_i64(b, b, &bb) || korch_mul_overflow_i64(out.dims[1], bb, &out.dims[1]) ||
        out.dims[1] > KORCH_MAX_ELEMENTS)
        return korch_op_error(ctx, KORCH_ERR_SHAPE, "output channels are too large");
    korch_op_set_output(ctx, 0, ctx->inputs[0]->dtype, &out);
    return KORCH_OK;
}

static korch_status run_space_to_depth(korch_op_ctx *ctx) {
    int64_t b;
    bool crd;
    KORCH_TRY(read_blocksize(ctx, &b));
    KORCH_TRY(read_crd(ctx, &crd));
    const int64_t *d = ctx->inputs[0]->shape.dims;
    static const int dcr[6] = {0, 3, 5, 1, 2, 4}, crd_perm[6] = {0, 1, 3, 5, 2, 4};
    run_6d(ctx, (int64_t[6]){d[0], d[1], d[2] / b, b, d[3] / b, b}, crd ? crd_perm : dcr);
    return KORCH_OK;
}

const korch_op_def korch_op_def_SpaceToDepth = {
    .kind = KORCH_OP_SpaceToDepth, .op_type = "SpaceToDepth", .opset_min = 1, .opset_max = 18,
    .min_inputs = 1, .max_inputs = 1, .min_outputs = 1, .max_outputs = 1,
    .infer = infer_space_to_depth, .run = run_space_to_depth, .flops = korch_layout_no_flops,
};
