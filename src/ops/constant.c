/* Constant, Identity and Shape: operators whose result is known from the
 * graph alone (or is a copy), so shape inference computes them directly. */
#include <string.h>

#include "ops/op.h"

static korch_status infer_constant(korch_op_ctx *ctx) {
    const korch_node *n = ctx->node;
    korch_tensor *y = ctx->outputs[0];
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
    korch_shape scalar = {0}, vec = {.rank = 1};
    if (strcmp(a->name, "value") == 0 && a->type == KORCH_ATTR_TENSOR && a->tensor) {
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
        return korch_op_error(ctx, KORCH_ERR_UNSUPPORTED, "attribute \"%s\" of this type is not supported", a->name);
    }
    return KORCH_OK;
}

static korch_status run_unreachable(korch_op_ctx *ctx) {
    return korch_op_error(ctx, KORCH_ERR_INTERNAL, "should have been folded during shape inference");
}

const korch_op_def korch_op_def_Constant = {
    .kind = KORCH_OP_Constant, .op_type = "Constant", .opset_min = 1, .opset_max = 18,
    .min_inputs = 0, .max_inputs = 0, .min_outputs = 1, .max_outputs = 1,
    .infer = infer_constant, .run = run_unreachable,
};

static korch_status infer_identity(korch_op_ctx *ctx) {
    korch_op_set_output(ctx, 0, ctx->inputs[0]->dtype, &ctx->inputs[0]->shape);
    return KORCH_OK;
}

static korch_status run_copy(korch_op_ctx *ctx) {
    size_t bytes = korch_tensor_bytes(ctx->outputs[0]);
    if (bytes) memcpy(ctx->outputs[0]->data, ctx->inputs[0]->data, bytes);
    return KORCH_OK;
}

const korch_op_def korch_op_def_Identity = {
    .kind = KORCH_OP_Identity, .op_type = "Identity", .opset_min = 1, .opset_max = 18,
    .min_inputs = 1, .max_inputs = 1, .min_outputs = 1, .max_outputs = 1,
    .infer = infer_identity, .run = run_copy,
};

static korch_status infer_shape(korch_op_ctx *ctx) {
    const korch_shape *s = &ctx->inputs[0]->shape;
    int64_t start = korch_node_attr_int(ctx->node, "start", 0);
    int64_t end = korch_node_attr_int(ctx->node, "end", s->rank);
    if (start < 0) start += s->rank;
    if (end < 0) end += s->rank;
    if (start < 0) start = 0;
    if (end > s->rank) end = s->rank;
    if (end < start) end = start;
    korch_shape out = {.rank = 1, .dims = {end - start}};
    korch_tensor *y = ctx->outputs[0];
    KORCH_TRY(korch_tensor_alloc(y, KORCH_DTYPE_INT64, &out));
    for (int64_t i = start; i < end; i++) ((int64_t *)y->data)[i - start] = s->dims[i];
    return KORCH_OK;
}

const korch_op_def korch_op_def_Shape = {
    .kind = KORCH_OP_Shape, .op_type = "Shape", .opset_min = 1, .opset_max = 18,
    .min_inputs = 1, .max_inputs = 1, .min_outputs = 1, .max_outputs = 1,
    .infer = infer_shape, .run = run_unreachable,
};
