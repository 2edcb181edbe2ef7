#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "ops/op.h"

const korch_op_def *const korch_op_table[KORCH_OP_COUNT] = {
#define KORCH_OP_TABLE_ENTRY(name) [KORCH_OP_##name] = &korch_op_def_##name,
    KORCH_OP_LIST(KORCH_OP_TABLE_ENTRY)
#undef KORCH_OP_TABLE_ENTRY
};

const korch_op_def *korch_op_find(const char *op_type) {
    for (int k = 0; k < KORCH_OP_COUNT; k++)
        if (strcmp(korch_op_table[k]->op_type, op_type) == 0) return korch_op_table[k];
    return NULL;
}

korch_status korch_op_error(const korch_op_ctx *ctx, korch_status status, const char *fmt, ...) {
    char message[1024], name[160];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(message, sizeof message, fmt, ap);
    va_end(ap);
    return korch_error(status, "node \"%s\" (%s, opset %d): %s",
                       korch_printable(ctx->node->name, name, sizeof name), ctx->node->op_type, ctx->node->opset,
                       message);
}

const char *korch_op_input_name(const korch_op_ctx *ctx, int i) {
    if (i < 0 || i >= ctx->node->n_inputs || ctx->node->inputs[i] < 0) return "";
    return ctx->graph->values[ctx->node->inputs[i]].name;
}

bool korch_op_has_input(const korch_op_ctx *ctx, int i) { return i >= 0 && i < ctx->n_inputs && ctx->inputs[i]; }

korch_status korch_op_require_constant(const korch_op_ctx *ctx, int i, const char *role) {
    char name[160];
    if (!korch_op_has_input(ctx, i)) return korch_op_error(ctx, KORCH_ERR_INVALID_MODEL, "missing %s input", role);
    if (!ctx->inputs[i]->data)
        return korch_op_error(ctx, KORCH_ERR_UNSUPPORTED,
                              "%s input \"%s\" " KORCH_OP_NEEDS_CONSTANT
                              " (fix symbolic dimensions with --input-shape)",
                              role, korch_printable(korch_op_input_name(ctx, i), name, sizeof name));
    return KORCH_OK;
}

korch_status korch_op_attr_choice(const korch_op_ctx *ctx, const char *attr, const char *dflt,
                                  const char *const *names, int count, int *out, korch_status status) {
    const char *s = korch_node_attr_string(ctx->node, attr, dflt);
    for (int k = 0; k < count; k++)
        if (strcmp(s, names[k]) == 0) {
            *out = k;
            return KORCH_OK;
        }
    char buf[64];
    return korch_op_error(ctx, status, "%s \"%s\" is not supported", attr, korch_printable(s, buf, sizeof buf));
}

korch_status korch_op_store_output(korch_op_ctx *ctx, korch_tensor *value) {
    korch_tensor *y = ctx->outputs[0];
    korch_status st = KORCH_OK;
    if (value->dtype != y->dtype || !korch_shape_equal(&value->shape, &y->shape))
        st = korch_op_error(ctx, KORCH_ERR_INTERNAL, "output does not match its inferred type");
    else if (korch_tensor_bytes(y))
        memcpy(y->data, value->data, korch_tensor_bytes(y));
    korch_tensor_free(value);
    return st;
}

korch_status korch_op_require_dtype(const korch_op_ctx *ctx, int i, korch_dtype dtype) {
    char name[160];
    if (!korch_op_has_input(ctx, i)) return korch_op_error(ctx, KORCH_ERR_INVALID_MODEL, "missing input %d", i);
    if (ctx->inputs[i]->dtype != dtype)
        return korch_op_error(ctx, KORCH_ERR_UNSUPPORTED, "input %d \"%s\" has dtype %s, expected %s", i,
                              korch_printable(korch_op_input_name(ctx, i), name, sizeof name),
                              korch_dtype_name(ctx->inputs[i]->dtype), korch_dtype_name(dtype));
    return KORCH_OK;
}

void korch_op_set_output(korch_op_ctx *ctx, int i, korch_dtype dtype, const korch_shape *shape) {
    if (i >= ctx->n_outputs || !ctx->outputs[i]) return;
    ctx->outputs[i]->dtype = dtype;
    ctx->outputs[i]->shape = *shape;
}

korch_status korch_op_read_ints(const korch_op_ctx *ctx, int i, const char *role, int64_t *out, int cap, int *count) {
    KORCH_TRY(korch_op_require_constant(ctx, i, role));
    const korch_tensor *t = ctx->inputs[i];
    if (t->dtype != KORCH_DTYPE_INT64 && t->dtype != KORCH_DTYPE_INT32)
        return korch_op_error(ctx, KORCH_ERR_INVALID_MODEL, "%s input must be int64 or int32, got %s", role,
                              korch_dtype_name(t->dtype));
    int64_t n = korch_tensor_numel(t);
    if (n < 0 || n > cap)
        return korch_op_error(ctx, KORCH_ERR_UNSUPPORTED, "%s input has %lld elements (at most %d supported)", role,
                              (long long)n, cap);
    for (int64_t k = 0; k < n; k++) out[k] = korch_tensor_get_i64(t, k);
    *count = (int)n;
    return KORCH_OK;
}
