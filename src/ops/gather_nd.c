/* GatherND (opset 11-18) and ScatterND (opset 11-18): slices of `data`
 * addressed by index tuples, the last dimension of `indices` (m of them).
 *
 * GatherND: out[b..., i...] = data[b..., indices[b..., i..., :], ...], with
 * `batch_dims` leading dimensions shared by data and indices; the output
 * shape is indices.shape[:-1] + data.shape[batch_dims + m:].
 * ScatterND: a copy of data in which the slice at each tuple becomes (or is
 * combined with, reduction add/mul/max/min) the matching slice of updates,
 * whose shape is indices.shape[:-1] + data.shape[m:]; with duplicate
 * tuples and no reduction the last update wins, as in ONNX Runtime.
 * Negative indices count from the end; an index out of range is a run-time
 * error (it is data). */
#include <string.h>

#include "ops/layout.h"
#include "ops/scatter_reduce.h"

/* Where index tuples point: dims of the addressed axes and their strides in
 * elements of data; `slice` elements follow each addressed position. */
typedef struct nd_address {
    int m;
    int64_t dims[KORCH_MAX_RANK], strides[KORCH_MAX_RANK];
    int64_t slice;
} nd_address;

static void nd_address_init(nd_address *a, const korch_shape *data, int first, int m) {
    a->m = m;
    a->slice = 1;
    for (int k = data->rank - 1; k >= first + m; k--) a->slice *= data->dims[k];
    int64_t s = a->slice;
    for (int t = m - 1; t >= 0; t--) {
        a->dims[t] = data->dims[first + t];
        a->strides[t] = s;
        s *= a->dims[t];
    }
}

/* The element offset (within one batch) of tuple `tuple` of the indices. */
static korch_status nd_offset(const korch_op_ctx *ctx, const nd_address *a, int64_t tuple, int64_t *off) {
    const korch_tensor *idx = ctx->inputs[1];
    *off = 0;
    for (int t = 0; t < a->m; t++) {
        int64_t i = korch_tensor_get_i64(idx, tuple * a->m + t);
        if (i < -a->dims[t] || i >= a->dims[t])
            return korch_op_error(ctx, KORCH_ERR_INVALID_ARGUMENT,
                                  "index %lld (tuple %lld, position %d) is out of range for a dimension of size %lld",
                                  (long long)i, (long long)tuple, t, (long long)a->dims[t]);
        *off += (i < 0 ? i + a->dims[t] : i) * a->strides[t];
    }
    return KORCH_OK;
}

static korch_status nd_indices(const korch_op_ctx *ctx, int data_rank, int *m) {
    const korch_tensor *idx = ctx->inputs[1];
    if (idx->dtype != KORCH_DTYPE_INT64)
        return korch_op_error(ctx, KORCH_ERR_INVALID_MODEL, "indices must be int64, got %s",
                              korch_dtype_name(idx->dtype));
    if (idx->shape.rank < 1 || data_rank < 1)
        return korch_op_error(ctx, KORCH_ERR_SHAPE, "data and indices need rank >= 1 (have %d and %d)", data_rank,
                              idx->shape.rank);
    *m = (int)idx->shape.dims[idx->shape.rank - 1];
    return KORCH_OK;
}

static int gather_nd_batch_dims(const korch_op_ctx *ctx) {
    return (int)korch_node_attr_int(ctx->node, "batch_dims", 0);
}

static korch_status infer_gather_nd(korch_op_ctx *ctx) {
    KORCH_TRY(korch_layout_require_copyable(ctx, 0));
    const korch_shape *data = &ctx->inputs[0]->shape, *idx = &ctx->inputs[1]->shape;
    int m;
    KORCH_TRY(nd_indices(ctx, data->rank, &m));
    int b = gather_nd_batch_dims(ctx);
    if (b < 0 || b >= data->rank || b >= idx->rank)
        return korch_op_error(ctx, KORCH_ERR_INVALID_MODEL, "batch_dims %d must be below both ranks (%d, %d)", b,
                              data->rank, idx->rank);
    for (int k = 0; k < b; k++)
        if (idx->dims[k] != data->dims[k])
            return korch_op_error(ctx, KORCH_ERR_SHAPE, "batch dimension %d is %lld in the indices, %lld in the data",
                                  k, (long long)idx->dims[k], (long long)data->dims[k]);
    if (m < 1 || m > data->rank - b)
        return korch_op_error(ctx, KORCH_ERR_SHAPE, "index tuples of %d elements for %d addressable dimensions", m,
                              data->rank - b);
    korch_shape out = {.rank = idx->rank - 1 + data->rank - b - m};
    if (out.rank > KORCH_MAX_RANK)
        return korch_op_error(ctx, KORCH_ERR_UNSUPPORTED, "output rank %d exceeds the maximum %d", out.rank,
                              KORCH_MAX_RANK);
    int r = 0;
    for (int k = 0; k < idx->rank - 1; k++) out.dims[r++] = idx->dims[k];
    for (int k = b + m; k < data->rank; k++) out.dims[r++] = data->dims[k];
    korch_op_set_output(ctx, 0, ctx->inputs[0]->dtype, &out);
    return KORCH_OK;
}

static korch_status run_gather_nd(korch_op_ctx *ctx) {
    const korch_tensor *data = ctx->inputs[0], *idx = ctx->inputs[1];
    korch_tensor *y = ctx->outputs[0];
    int m, b = gather_nd_batch_dims(ctx);
    KORCH_TRY(nd_indices(ctx, data->shape.rank, &m));
    nd_address a;
    nd_address_init(&a, &data->shape, b, m);
    int64_t batches = 1, batch_elems = 1, tuples = korch_tensor_numel(idx) / m;
    for (int k = 0; k < b; k++) batches *= data->shape.dims[k];
    for (int k = b; k < data->shape.rank; k++) batch_elems *= data->shape.dims[k];
    int64_t per_batch = batches ? tuples / batches : 0;
    size_t es = korch_dtype_size(data->dtype), slice_bytes = (size_t)a.slice * es;
    for (int64_t t = 0; t < tuples; t++) {
        int64_t off;
        KORCH_TRY(nd_offset(ctx, &a, t, &off));
        off += (t / per_batch) * batch_elems;
        memcpy((char *)y->data + (size_t)t * slice_bytes, (const char *)data->data + (size_t)off * es, slice_bytes);
    }
    return KORCH_OK;
}

const korch_op_def korch_op_def_GatherND = {
    .kind = KORCH_OP_GatherND, .op_type = "GatherND", .opset_min = 11, .opset_max = 18,
    .min_inputs = 2, .max_inputs = 2, .min_outputs = 1, .max_outputs = 1,
    .infer = infer_gather_nd, .run = run_gather_nd, .flops = korch_layout_no_flops,
};

/* ---- ScatterND ----------------------------------------------------------- */

static korch_status infer_scatter_nd(korch_op_ctx *ctx) {
    KORCH_TRY(korch_layout_require_copyable(ctx, 0));
    const korch_tensor *data = ctx->inputs[0], *upd = ctx->inputs[2];
    const korch_shape *idx = &ctx->inputs[1]->shape;
    int m;
    KORCH_TRY(nd_indices(ctx, data->shape.rank, &m));
    korch_scatter_reduction red;
    KORCH_TRY(korch_scatter_reduction_read(ctx, ctx->inputs[0]->dtype, &red));
    if (m < 1 || m > data->shape.rank)
        return korch_op_error(ctx, KORCH_ERR_SHAPE, "index tuples of %d elements for data of rank %d", m,
                              data->shape.rank);
    if (upd->dtype != data->dtype)
        return korch_op_error(ctx, KORCH_ERR_INVALID_MODEL, "updates are %s, data %s", korch_dtype_name(upd->dtype),
                              korch_dtype_name(data->dtype));
    korch_shape want = {.rank = idx->rank - 1 + data->shape.rank - m};
    int r = 0;
    if (want.rank <= KORCH_MAX_RANK) {
        for (int k = 0; k < idx->rank - 1; k++) want.dims[r++] = idx->dims[k];
        for (int k = m; k < data->shape.rank; k++) want.dims[r++] = data->shape.dims[k];
    }
    if (want.rank > KORCH_MAX_RANK || !korch_shape_equal(&want, &upd->shape))
        return korch_op_error(ctx, KORCH_ERR_SHAPE,
                              "updates must have the shape indices.shape[:-1] + data.shape[%d:] (rank %d), have rank %d",
                              m, want.rank, upd->shape.rank);
    korch_op_set_output(ctx, 0, data->dtype, &data->shape);
    return KORCH_OK;
}

static korch_status run_scatter_nd(korch_op_ctx *ctx) {
    const korch_tensor *data = ctx->inputs[0], *idx = ctx->inputs[1], *upd = ctx->inputs[2];
    korch_tensor *y = ctx->outputs[0];
    int m;
    KORCH_TRY(nd_indices(ctx, data->shape.rank, &m));
    korch_scatter_reduction red;
    KORCH_TRY(korch_scatter_reduction_read(ctx, ctx->inputs[0]->dtype, &red));
    nd_address a;
    nd_address_init(&a, &data->shape, 0, m);
    size_t es = korch_dtype_size(data->dtype);
    memcpy(y->data, data->data, korch_tensor_bytes(data));
    int64_t tuples = korch_tensor_numel(idx) / m;
    for (int64_t t = 0; t < tuples; t++) {
        int64_t off;
        KORCH_TRY(nd_offset(ctx, &a, t, &off));
        korch_scatter_combine(data->dtype, red, (char *)y->data + (size_t)off * es,
                   (const char *)upd->data + (size_t)(t * a.slice) * es, a.slice, es);
    }
    return KORCH_OK;
}

const korch_op_def korch_op_def_ScatterND = {
    .kind = KORCH_OP_ScatterND, .op_type = "ScatterND", .opset_min = 11, .opset_max = 18,
    .min_inputs = 3, .max_inputs = 3, .min_outputs = 1, .max_outputs = 1,
    .infer = infer_scatter_nd, .run = run_scatter_nd, .flops = korch_layout_no_flops,
};
