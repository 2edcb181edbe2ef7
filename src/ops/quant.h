/* Shared machinery of the quantization operators (QuantizeLinear,
 * DequantizeLinear, DynamicQuantizeLinear, MatMulInteger, ConvInteger,
 * QLinearMatMul, QLinearConv): where each element's scale and zero point
 * come from, and ONNX's rounding and saturation.
 *
 * ONNX quantization is affine: real = (q - zero_point) * scale. Quantizing
 * rounds x / scale to the nearest integer with halves to even (numpy's rint,
 * C's nearbyint under the default rounding mode), adds the zero point and
 * saturates to the integer type's range. */
#ifndef KORCH_OPS_QUANT_H
#define KORCH_OPS_QUANT_H

#include <math.h>
#include <stdint.h>

#include "ops/op.h"

/* How a scale (and its zero point) tensor maps onto the elements of x,
 * with x viewed as [outer, dim, inner] around `axis`:
 *   per tensor  one scale for every element;
 *   per axis    scale[d] (a 1-D tensor of `dim` values);
 *   blocked     scale[o][d / block][i] (opset 21's block_size; the scale has
 *               x's rank with ceil(dim / block) along the axis). */
typedef enum korch_quant_mode { KORCH_QUANT_PER_TENSOR, KORCH_QUANT_PER_AXIS, KORCH_QUANT_BLOCKED } korch_quant_mode;

typedef struct korch_quant_layout {
    korch_quant_mode mode;
    int axis;
    int64_t outer, dim, inner, block, blocks;
} korch_quant_layout;

/* Reads the layout of scale input `scale_i` (and checks zero point input
 * `zp_i`, when present, has the same shape) against x = input `x_i`, from the
 * node's `axis` (default 1) and `block_size` (default 0) attributes. Per-axis
 * scales need opset 13 (before, only scalars are legal). Errors name the node
 * and the offending input. */
korch_status korch_quant_layout_read(const korch_op_ctx *ctx, int x_i, int scale_i, int zp_i,
                                     korch_quant_layout *out);

/* Index into the scale/zero-point tensor of element `i` of x. */
static inline int64_t korch_quant_param_index(const korch_quant_layout *q, int64_t i) {
    switch (q->mode) {
    case KORCH_QUANT_PER_TENSOR: return 0;
    case KORCH_QUANT_PER_AXIS: return (i / q->inner) % q->dim;
    case KORCH_QUANT_BLOCKED: {
        int64_t in = i % q->inner, d = (i / q->inner) % q->dim, o = i / (q->inner * q->dim);
        return (o * q->blocks + d / q->block) * q->inner + in;
    }
    }
    return 0;
}

/* The range of an integer type a quantizer saturates to. */
bool korch_quant_is_int8(korch_dtype dtype); /* int8 or uint8 */
int32_t korch_quant_min(korch_dtype dtype);
int32_t korch_quant_max(korch_dtype dtype);

/* Element i of an int8/uint8/int32 tensor; a NULL tensor (omitted zero
 * point) reads as 0. */
static inline int32_t korch_quant_get(const korch_tensor *t, int64_t i) {
    if (!t) return 0;
    switch (t->dtype) {
    case KORCH_DTYPE_UINT8: return ((const uint8_t *)t->data)[i];
    case KORCH_DTYPE_INT8: return ((const int8_t *)t->data)[i];
    case KORCH_DTYPE_INT32: return ((const int32_t *)t->data)[i];
    default: return 0;
    }
}

/* saturate(rint(v) + zero_point) into [lo, hi], as ONNX's QuantizeLinear
 * does with v = x / scale (computed by the caller in float32, as ONNX's
 * reference does). NaN maps to the zero point (ONNX leaves it unspecified). */
static inline int32_t korch_quant_round_saturate(double v, int32_t zero_point, int32_t lo, int32_t hi) {
    if (isnan(v)) v = 0;
    double r = nearbyint(v) + zero_point;
    if (r < lo) return lo;
    if (r > hi) return hi;
    return (int32_t)r;
}

/* Stores q (already in range) as element i of an int8/uint8 tensor. */
static inline void korch_quant_set(korch_tensor *t, int64_t i, int32_t q) {
    if (t->dtype == KORCH_DTYPE_UINT8) ((uint8_t *)t->data)[i] = (uint8_t)q;
    else ((int8_t *)t->data)[i] = (int8_t)q;
}

/* Input i must be int8 or uint8; `role` names it in the error. */
korch_status korch_quant_require_int8(const korch_op_ctx *ctx, int i, const char *role);
/* Input i (if present) must have input j's dtype. */
korch_status korch_quant_require_same_dtype(const korch_op_ctx *ctx, int i, int j, const char *role);
/* Input i must be a scalar or a 1-element tensor (per-tensor parameter). */
korch_status korch_quant_require_scalar(const korch_op_ctx *ctx, int i, const char *role);

#endif
