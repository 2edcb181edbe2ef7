/* MaxUnpool (opset 9-18): the partial inverse of MaxPool. Y is zero except
 * Y.flat[I.flat[j]] = X.flat[j] for every element j of X, where I holds
 * MaxPool's Indices: flat (row-major) positions in the whole unpooled
 * tensor, so in [0, N*C*D1*...*Dn) (ONNX defines them so, and ops/pool.c
 * writes them so). The unpooled shape keeps N and C; its spatial dim i is
 *   (in_i - 1) * strides[i] + kernel_shape[i] - pads[i] - pads[i + n].
 * The optional output_shape input (a full shape, which korch needs constant)
 * may enlarge the output: as in the ONNX reference, the pads are then
 * ignored, every dim must be at least the unpooled one, and the unpooled
 * tensor fills the output's low corner (the rest is zero).
 * An index out of range is an error: at inference when I is constant (a
 * model error), at run time otherwise (bad data). Where two indices agree,
 * the later element wins. */
#include <string.h>

#include "ops/layout.h"

/* The inferred shape (*inner, which the indices address) and the output
 * shape (*out: output_shape when given, else *inner). */
static korch_status unpool_shapes(const korch_op_ctx *ctx, korch_shape *inner, korch_shape *out) {
    const korch_tensor *x = ctx->inputs[0];
    int rank = x->shape.rank, n = rank - 2;
    const int64_t *kernel, *strides, *pads;
    int nk = korch_node_attr_ints(ctx->node, "kernel_shape", &kernel);
    if (nk != n)
        return korch_op_error(ctx, KORCH_ERR_INVALID_MODEL,
                              "kernel_shape has %d values: it is required, one per spatial dim (%d)", nk, n);
    int ns = korch_node_attr_ints(ctx->node, "strides", &strides); /* -1 when absent: the default */
    if (ns < 0) ns = 0;
    if (ns != 0 && ns != n)
        return korch_op_error(ctx, KORCH_ERR_INVALID_MODEL, "strides has %d values for %d spatial dims", ns, n);
    int np = korch_node_attr_ints(ctx->node, "pads", &pads);
    if (np < 0) np = 0;
    if (np != 0 && np != 2 * n)
        return korch_op_error(ctx, KORCH_ERR_INVALID_MODEL, "pads has %d values for %d spatial dims (needs %d)", np,
                              n, 2 * n);
    for (int i = 0; i < n; i++) {
        if (kernel[i] < 1 || (ns && strides[i] < 1) || (np && (pads[i] < 0 || pads[i + n] < 0)))
            return korch_op_error(ctx, KORCH_ERR_INVALID_MODEL,
                                  "spatial dim %d: kernel_shape and strides must be >= 1 and pads >= 0", i);
    }
    bool given = korch_op_has_input(ctx, 2);
    *inner = x->shape;
    for (int i = 0; i < n; i++) {
        int64_t in = x->shape.dims[i + 2], dim = (in - 1) * (ns ? strides[i] : 1) + kernel[i];
        if (np && !given) dim -= pads[i] + pads[i + n]; /* output_shape makes the pads moot */
        if (in < 1 || dim < 1)
            return korch_op_error(ctx, KORCH_ERR_SHAPE, "spatial dim %d: input size %lld gives output size %lld", i,
                                  (long long)in, (long long)dim);
        inner->dims[i + 2] = dim;
    }
    *out = *inner;
    if (!given) return KORCH_OK;
    KORCH_TRY(korch_op_require_constant(ctx, 2, "output_shape"));
    int count;
    KORCH_TRY(korch_op_read_ints(ctx, 2, "output_shape", out->dims, KORCH_MAX_RANK, &count));
    if (count != rank)
        return korch_op_error(ctx, KORCH_ERR_SHAPE, "output_shape has %d values for an input of rank %d", count, rank);
    for (int d = 0; d < rank; d++)
        if (out->dims[d] < inner->dims[d])
            return korch_op_error(ctx, KORCH_ERR_SHAPE,
                                  "output_shape dim %d is %lld, smaller than the unpooled size %lld", d,
                                  (long long)out->dims[d], (long long)inner->dims[d]);
    return KORCH_OK;
}

static korch_status check_unpool_indices(const korch_op_ctx *ctx, int64_t total, korch_status status) {
    const korch_tensor *idx = ctx->inputs[1];
    int64_t n = korch_tensor_numel(idx);
    for (int64_t j = 0; j < n; j++) {
        int64_t i = korch_tensor_get_i64(idx, j);
        if (i < 0 || i >= total)
            return korch_op_error(ctx, status, "index %lld (element %lld of I) is outside the output's %lld elements",
                                  (long long)i, (long long)j, (long long)total);
    }
    return KORCH_OK;
}

static korch_status infer_max_unpool(korch_op_ctx *ctx) {
    KORCH_TRY(korch_layout_require_copyable(ctx, 0));
    const korch_tensor *x = ctx->inputs[0], *idx = ctx->inputs[1];
    if (idx->dtype != KORCH_DTYPE_INT64)
        return korch_op_error(ctx, KORCH_ERR_INVALID_MODEL, "I must be int64, got %s", korch_dtype_name(idx->dtype));
    if (x->shape.rank < 3)
        return korch_op_error(ctx, KORCH_ERR_SHAPE, "input of rank %d: MaxUnpool needs [N, C, D1, ...]",
                              x->shape.rank);
    if (!korch_shape_equal(&x->shape, &idx->shape))
        return korch_op_error(ctx, KORCH_ERR_SHAPE, "I must have X's shape");
    korch_shape inner, out;
    KORCH_TRY(unpool_shapes(ctx, &inner, &out));
    int64_t total = korch_shape_numel(&inner);
    if (total < 0 || korch_shape_numel(&out) < 0)
        return korch_op_error(ctx, KORCH_ERR_SHAPE, "the output is too large");
    if (idx->data) KORCH_TRY(check_unpool_indices(ctx, total, KORCH_ERR_INVALID_MODEL));
    korch_op_set_output(ctx, 0, x->dtype, &out);
    return KORCH_OK;
}

static korch_status run_max_unpool(korch_op_ctx *ctx) {
    const korch_tensor *x = ctx->inputs[0], *idx = ctx->inputs[1];
    korch_tensor *y = ctx->outputs[0];
    korch_shape inner, out;
    KORCH_TRY(unpool_shapes(ctx, &inner, &out));
    KORCH_TRY(check_unpool_indices(ctx, korch_shape_numel(&inner), KORCH_ERR_INVALID_ARGUMENT));
    int64_t n = korch_tensor_numel(x);
    size_t es = korch_dtype_size(x->dtype);
    memset(y->data, 0, korch_tensor_bytes(y));
    for (int64_t j = 0; j < n; j++) {
        /* the index's position in the inferred shape, at the same position of the output */
        int64_t i = korch_tensor_get_i64(idx, j), at = 0, scale = 1;
        for (int d = inner.rank - 1; d >= 0; d--) {
            at += (i % inner.dims[d]) * scale;
            i /= inner.dims[d];
            scale *= out.dims[d];
        }
        memcpy((char *)y->data + (size_t)at * es, (const char *)x->data + (size_t)j * es, es);
    }
    return KORCH_OK;
}

const korch_op_def korch_op_def_MaxUnpool = {
    .kind = KORCH_OP_MaxUnpool, .op_type = "MaxUnpool", .opset_min = 9, .opset_max = 18,
    .min_inputs = 2, .max_inputs = 3, .min_outputs = 1, .max_outputs = 1,
    .infer = infer_max_unpool, .run = run_max_unpool, .flops = korch_layout_no_flops,
};
