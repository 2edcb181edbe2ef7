/* Constant, Identity, Shape and Size: operators whose result is known from
 * the graph alone (or is a copy), so shape inference computes them directly.
 * Their run functions recompute the same values into the preallocated
 * output, for executors that run a node without folding it first. */
#include <string.h>

#include "ops/layout.h"

/* The single value-bearing attribute of a Constant node. */
static korch_status constant_attr(const korch_op_ctx *ctx, const korch_attr **out) {
    const korch_node *n = ctx->node;
    const korch_attr *a = NULL;
    int set = 0;
    for (int i = 0; i < n->n_attrs; i++) {
        const char *name = n->attrs[i].name;
        if (strncmp(name, "value", 5) == 0 || strcmp(name, "sparse_value") == 0) {
            a = &n->attrs[i];
            set++;
        }
    }
    if (set != 1) return korch_op_error(ctx, KORCH_ERR_INVALID_MODEL, "needs exactly one value attribute, has %d", set);
    *out = a;
    return KORCH_OK;
}

/* Builds the Constant's value into y (allocated here). */
static korch_status constant_value(const korch_op_ctx *ctx, korch_tensor *y) {
    const korch_attr *a = NULL;
    KORCH_TRY(constant_attr(ctx, &a));
    korch_shape scalar = {0}, vec = {.rank = 1};
    if (strcmp(a->name, "value") == 0 && a->type == KORCH_ATTR_TENSOR && a->tensor) {
        korch_dtype t = a->tensor->dtype;
        if (t == KORCH_DTYPE_STRING || korch_dtype_size(t) == 0)
            return korch_op_error(ctx, KORCH_ERR_UNSUPPORTED, "value tensor of dtype %s is not supported",
                                  korch_dtype_name(t));
        return korch_tensor_clone(a->tensor, y);
    } else if (strcmp(a->name, "value_float") == 0 && a->type == KORCH_ATTR_FLOAT) {
        KORCH_TRY(korch_tensor_alloc(y, KORCH_DTYPE_FLOAT32, &scalar));
        *(float *)y->data = a->f;
    } else if (strcmp(a->name, "value_int") == 0 && a->type == KORCH_ATTR_INT) {
        KORCH_TRY(korch_tensor_alloc(y, KORCH_DTYPE_INT64, &scalar));
        *(int64_t *)y->data = a->i;
    } else if (strcmp(a->name, "value_floats") == 0 && a->type == KORCH_ATTR_FLOATS) {
        vec.dims[0] = a->count;
        KORCH_TRY(korch_tensor_alloc(y, KORCH_DTYPE_FLOAT32, &vec));
        if (a->count) memcpy(y->data, a->floats, (size_t)a->count * sizeof(float));
    } else if (strcmp(a->name, "value_ints") == 0 && a->type == KORCH_ATTR_INTS) {
        vec.dims[0] = a->count;
        KORCH_TRY(korch_tensor_alloc(y, KORCH_DTYPE_INT64, &vec));
        if (a->count) memcpy(y->data, a->ints, (size_t)a->count * sizeof(int64_t));
    } else {
        char buf[64];
        return korch_op_error(ctx, KORCH_ERR_UNSUPPORTED, "attribute \"%s\" of this type is not supported",
                              korch_printable(a->name, buf, sizeof buf));
    }
    return KORCH_OK;
}

static korch_status infer_constant(korch_op_ctx *ctx) { return constant_value(ctx, ctx->outputs[0]); }

static korch_status run_constant(korch_op_ctx *ctx) {
    korch_tensor value = {0};
    KORCH_TRY(constant_value(ctx, &value));
    return korch_op_store_output(ctx, &value);
}

const korch_op_def korch_op_def_Constant = {
    .kind = KORCH_OP_Constant, .op_type = "Constant", .opset_min = 1, .opset_max = 18,
    .min_inputs = 0, .max_inputs = 0, .min_outputs = 1, .max_outputs = 1,
    .infer = infer_constant, .run = run_constant, .flops = korch_layout_no_flops,
};

static korch_status infer_identity(korch_op_ctx *ctx) {
    KORCH_TRY(korch_layout_require_copyable(ctx, 0));
    korch_op_set_output(ctx, 0, ctx->inputs[0]->dtype, &ctx->inputs[0]->shape);
    return KORCH_OK;
}

const korch_op_def korch_op_def_Identity = {
    .kind = KORCH_OP_Identity, .op_type = "Identity", .opset_min = 1, .opset_max = 18,
    .min_inputs = 1, .max_inputs = 1, .min_outputs = 1, .max_outputs = 1,
    .infer = infer_identity, .run = korch_layout_run_copy, .flops = korch_layout_no_flops,
};

/* Shape-15 slices the shape with start/end, clamped like Python slicing. */
static korch_status shape_value(const korch_op_ctx *ctx, korch_tensor *y) {
    const korch_shape *s = &ctx->inputs[0]->shape;
    int64_t start = 0, end = s->rank;
    if (ctx->node->opset >= 15) {
        start = korch_node_attr_int(ctx->node, "start", 0);
        end = korch_node_attr_int(ctx->node, "end", s->rank);
    }
    if (start < 0) start += s->rank;
    if (end < 0) end += s->rank;
    start = start < 0 ? 0 : start > s->rank ? s->rank : start;
    end = end < 0 ? 0 : end > s->rank ? s->rank : end;
    if (end < start) end = start;
    korch_shape out = {.rank = 1, .dims = {end - start}};
    KORCH_TRY(korch_tensor_alloc(y, KORCH_DTYPE_INT64, &out));
    for (int64_t i = start; i < end; i++) ((int64_t *)y->data)[i - start] = s->dims[i];
    return KORCH_OK;
}

static korch_status infer_shape(korch_op_ctx *ctx) { return shape_value(ctx, ctx->outputs[0]); }

static korch_status run_shape(korch_op_ctx *ctx) {
    korch_tensor value = {0};
    KORCH_TRY(shape_value(ctx, &value));
    return korch_op_store_output(ctx, &value);
}

const korch_op_def korch_op_def_Shape = {
    .kind = KORCH_OP_Shape, .op_type = "Shape", .opset_min = 1, .opset_max = 18,
    .min_inputs = 1, .max_inputs = 1, .min_outputs = 1, .max_outputs = 1,
    .infer = infer_shape, .run = run_shape, .flops = korch_layout_no_flops,
};

static korch_status size_value(const korch_op_ctx *ctx, korch_tensor *y) {
    korch_shape scalar = {0};
    KORCH_TRY(korch_tensor_alloc(y, KORCH_DTYPE_INT64, &scalar));
    *(int64_t *)y->data = korch_shape_numel(&ctx->inputs[0]->shape);
    return KORCH_OK;
}

static korch_status infer_size(korch_op_ctx *ctx) { return size_value(ctx, ctx->outputs[0]); }

static korch_status run_size(korch_op_ctx *ctx) {
    korch_tensor value = {0};
    KORCH_TRY(size_value(ctx, &value));
    return korch_op_store_output(ctx, &value);
}

const korch_op_def korch_op_def_Size = {
    .kind = KORCH_OP_Size, .op_type = "Size", .opset_min = 1, .opset_max = 18,
    .min_inputs = 1, .max_inputs = 1, .min_outputs = 1, .max_outputs = 1,
    .infer = infer_size, .run = run_size, .flops = korch_layout_no_flops,
};
