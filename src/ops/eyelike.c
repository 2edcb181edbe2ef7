/* EyeLike (opset 9-18): a 2-D tensor of the input's shape with ones on the
 * diagonal k (col - row = k) and zeros elsewhere, of the dtype attribute
 * (the input's dtype when absent). Only the input's shape matters, so the
 * value is known at inference and the frontend folds it to a constant. */
#include <string.h>

#include "ops/layout.h"

static korch_status eyelike_dtype(const korch_op_ctx *ctx, korch_dtype *out) {
    const korch_attr *a = korch_node_attr(ctx->node, "dtype");
    *out = ctx->inputs[0]->dtype;
    if (a) {
        if (a->type != KORCH_ATTR_INT || a->i < 0 || a->i > 64 || !korch_dtype_is_valid((int32_t)a->i))
            return korch_op_error(ctx, KORCH_ERR_INVALID_MODEL, "attribute \"dtype\" is not an ONNX data type");
        *out = (korch_dtype)a->i;
    }
    return KORCH_OK;
}

/* The bytes of 1 in dtype t, little-endian; false for dtypes without one. */
static bool one_bytes(korch_dtype t, unsigned char *one) {
    memset(one, 0, 8);
    switch (t) {
    case KORCH_DTYPE_FLOAT32: memcpy(one, &(float){1.0f}, 4); return true;
    case KORCH_DTYPE_FLOAT64: memcpy(one, &(double){1.0}, 8); return true;
    case KORCH_DTYPE_FLOAT16: one[1] = 0x3C; return true;
    case KORCH_DTYPE_BFLOAT16: one[1] = 0x3F; one[0] = 0x80; return true;
    case KORCH_DTYPE_BOOL:
    case KORCH_DTYPE_INT8: case KORCH_DTYPE_UINT8:
    case KORCH_DTYPE_INT16: case KORCH_DTYPE_UINT16:
    case KORCH_DTYPE_INT32: case KORCH_DTYPE_UINT32:
    case KORCH_DTYPE_INT64: case KORCH_DTYPE_UINT64: one[0] = 1; return true;
    default: return false;
    }
}

static korch_status eyelike_value(const korch_op_ctx *ctx, korch_tensor *y) {
    const korch_shape *s = &ctx->inputs[0]->shape;
    if (s->rank != 2)
        return korch_op_error(ctx, KORCH_ERR_SHAPE, "input of rank %d: EyeLike needs a 2-D input", s->rank);
    korch_dtype t;
    KORCH_TRY(eyelike_dtype(ctx, &t));
    unsigned char one[8];
    if (!one_bytes(t, one))
        return korch_op_error(ctx, KORCH_ERR_UNSUPPORTED, "output dtype %s", korch_dtype_name(t));
    KORCH_TRY(korch_tensor_alloc(y, t, s));
    memset(y->data, 0, korch_tensor_bytes(y));
    int64_t k = korch_node_attr_int(ctx->node, "k", 0);
    size_t es = korch_dtype_size(t);
    for (int64_t i = 0; i < s->dims[0]; i++) {
        if (k < -s->dims[1] || k > s->dims[1]) break; /* no diagonal in range (and no overflow below) */
        int64_t j = i + k;
        if (j >= 0 && j < s->dims[1]) memcpy((char *)y->data + (size_t)(i * s->dims[1] + j) * es, one, es);
    }
    return KORCH_OK;
}

static korch_status infer_eyelike(korch_op_ctx *ctx) { return eyelike_value(ctx, ctx->outputs[0]); }

static korch_status run_eyelike(korch_op_ctx *ctx) {
    korch_tensor value = {0};
    KORCH_TRY(eyelike_value(ctx, &value));
    return korch_op_store_output(ctx, &value);
}

const korch_op_def korch_op_def_EyeLike = {
    .kind = KORCH_OP_EyeLike, .op_type = "EyeLike", .opset_min = 9, .opset_max = 18,
    .min_inputs = 1, .max_inputs = 1, .min_outputs = 1, .max_outputs = 1,
    .infer = infer_eyelike, .run = run_eyelike, .flops = korch_layout_no_flops,
};
