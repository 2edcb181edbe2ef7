/* TopK (opset 1-18): the K largest (or, from opset 11, smallest) elements
 * along `axis` (default -1), sorted, and their int64 indices. K is the
 * attribute `k` before opset 10 and a one-element int64 input from then;
 * korch needs it constant (it is an output dimension). Equal elements come
 * in the order of their indices, as the spec asks of sorted output; the
 * output is sorted also when sorted=0 (any order is allowed there). NaN
 * ranks above every number (as in PyTorch, whose exports write TopK):
 * first among the largest, last among the smallest. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ops/layout.h"

typedef struct topk_item {
    double f;  /* float dtypes */
    int64_t i; /* integer dtypes */
    int64_t index;
} topk_item;

/* Descending by value (NaN first), then ascending index. */
static int by_float_desc(const void *pa, const void *pb) {
    const topk_item *a = pa, *b = pb;
    bool an = isnan(a->f), bn = isnan(b->f);
    if (an != bn) return an ? -1 : 1;
    if (!an && a->f != b->f) return a->f > b->f ? -1 : 1;
    return a->index < b->index ? -1 : a->index > b->index;
}

/* Ascending by value (NaN last), then ascending index. */
static int by_float_asc(const void *pa, const void *pb) {
    const topk_item *a = pa, *b = pb;
    bool an = isnan(a->f), bn = isnan(b->f);
    if (an != bn) return an ? 1 : -1;
    if (!an && a->f != b->f) return a->f < b->f ? -1 : 1;
    return a->index < b->index ? -1 : a->index > b->index;
}

static int by_int_desc(const void *pa, const void *pb) {
    const topk_item *a = pa, *b = pb;
    if (a->i != b->i) return a->i > b->i ? -1 : 1;
    return a->index < b->index ? -1 : a->index > b->index;
}

static int by_int_asc(const void *pa, const void *pb) {
    const topk_item *a = pa, *b = pb;
    if (a->i != b->i) return a->i < b->i ? -1 : 1;
    return a->index < b->index ? -1 : a->index > b->index;
}

static bool topk_float(korch_dtype t) {
    return t == KORCH_DTYPE_FLOAT32 || t == KORCH_DTYPE_FLOAT64 || t == KORCH_DTYPE_FLOAT16 ||
           t == KORCH_DTYPE_BFLOAT16;
}

static bool topk_int(korch_dtype t) {
    return t == KORCH_DTYPE_INT8 || t == KORCH_DTYPE_UINT8 || t == KORCH_DTYPE_INT16 || t == KORCH_DTYPE_UINT16 ||
           t == KORCH_DTYPE_INT32 || t == KORCH_DTYPE_UINT32 || t == KORCH_DTYPE_INT64;
}

static korch_status topk_params(const korch_op_ctx *ctx, int *axis, int64_t *k) {
    const korch_tensor *x = ctx->inputs[0];
    int64_t raw = korch_node_attr_int(ctx->node, "axis", -1);
    *axis = korch_axis_normalize(raw, x->shape.rank);
    if (x->shape.rank < 1 || *axis < 0)
        return korch_op_error(ctx, KORCH_ERR_INVALID_MODEL, "axis %lld is out of range for rank %d", (long long)raw,
                              x->shape.rank);
    if (ctx->node->opset < 10) {
        *k = korch_node_attr_int(ctx->node, "k", -1);
    } else {
        KORCH_TRY(korch_op_require_constant(ctx, 1, "K"));
        const korch_tensor *kt = ctx->inputs[1];
        if (kt->dtype != KORCH_DTYPE_INT64 || korch_tensor_numel(kt) != 1)
            return korch_op_error(ctx, KORCH_ERR_INVALID_MODEL, "K must be one int64 value, is %s with %lld elements",
                                  korch_dtype_name(kt->dtype), (long long)korch_tensor_numel(kt));
        *k = korch_tensor_get_i64(kt, 0);
    }
    if (*k < 0 || *k > x->shape.dims[*axis])
        return korch_op_error(ctx, KORCH_ERR_INVALID_MODEL, "K = %lld is outside [0, %lld] (axis %d)", (long long)*k,
                              (long long)x->shape.dims[*axis], *axis);
    return KORCH_OK;
}

static korch_status infer_topk(korch_op_ctx *ctx) {
    const korch_tensor *x = ctx->inputs[0];
    if (!topk_float(x->dtype) && !topk_int(x->dtype))
        return korch_op_error(ctx, KORCH_ERR_UNSUPPORTED, "input of dtype %s", korch_dtype_name(x->dtype));
    int axis;
    int64_t k;
    KORCH_TRY(topk_params(ctx, &axis, &k));
    korch_shape out = x->shape;
    out.dims[axis] = k;
    korch_op_set_output(ctx, 0, x->dtype, &out);
    korch_op_set_output(ctx, 1, KORCH_DTYPE_INT64, &out);
    return KORCH_OK;
}

static korch_status run_topk(korch_op_ctx *ctx) {
    const korch_tensor *x = ctx->inputs[0];
    int axis;
    int64_t k;
    KORCH_TRY(topk_params(ctx, &axis, &k));
    bool largest = ctx->node->opset < 11 || korch_node_attr_int(ctx->node, "largest", 1) != 0;
    bool is_float = topk_float(x->dtype);
    int (*cmp)(const void *, const void *) =
        is_float ? (largest ? by_float_desc : by_float_asc) : (largest ? by_int_desc : by_int_asc);
    int64_t dim = x->shape.dims[axis], outer = 1, inner = 1;
    for (int d = 0; d < axis; d++) outer *= x->shape.dims[d];
    for (int d = axis + 1; d < x->shape.rank; d++) inner *= x->shape.dims[d];
    if (k == 0 || outer * inner == 0) return KORCH_OK;
    topk_item *items = malloc((size_t)dim * sizeof *items);
    if (!items) return korch_op_error(ctx, KORCH_ERR_OUT_OF_MEMORY, "out of memory (%lld items)", (long long)dim);
    korch_tensor *values = ctx->outputs[0], *indices = ctx->n_outputs > 1 ? ctx->outputs[1] : NULL;
    size_t es = korch_dtype_size(x->dtype);
    for (int64_t o = 0; o < outer; o++)
        for (int64_t in = 0; in < inner; in++) {
            for (int64_t j = 0; j < dim; j++) {
                int64_t p = (o * dim + j) * inner + in;
                items[j] = (topk_item){.index = j};
                if (is_float) items[j].f = korch_tensor_get_f64(x, p);
                else items[j].i = korch_tensor_get_i64(x, p);
            }
            qsort(items, (size_t)dim, sizeof *items, cmp);
            for (int64_t j = 0; j < k; j++) {
                int64_t q = (o * k + j) * inner + in, p = (o * dim + items[j].index) * inner + in;
                if (values)
                    memcpy((char *)values->data + (size_t)q * es, (const char *)x->data + (size_t)p * es, es);
                if (indices) ((int64_t *)indices->data)[q] = items[j].index;
            }
        }
    free(items);
    return KORCH_OK;
}

const korch_op_def korch_op_def_TopK = {
    .kind = KORCH_OP_TopK, .op_type = "TopK", .opset_min = 1, .opset_max = 18,
    .min_inputs = 1, .max_inputs = 2, .min_outputs = 2, .max_outputs = 2,
    .infer = infer_topk, .run = run_topk, .flops = korch_layout_no_flops,
};
