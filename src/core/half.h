/* The two 16-bit float formats ONNX stores: IEEE binary16 (float16) and
 * bfloat16 (the top half of a float32). korch computes in float32 and uses
 * these only to convert at a model's edges and at its Cast nodes
 * (docs/precision.md), so conversion is all there is: round to nearest, ties
 * to even, overflow to infinity, subnormals kept, NaN stays a quiet NaN. */
#ifndef KORCH_CORE_HALF_H
#define KORCH_CORE_HALF_H

#include <stdbool.h>
#include <stdint.h>

#include "core/tensor.h"

/* From double, rounded once (a float argument converts to double exactly). */
uint16_t korch_f16_from_f64(double v);
uint16_t korch_bf16_from_f64(double v);
/* Exact widenings. */
float korch_f16_to_f32(uint16_t h);
float korch_bf16_to_f32(uint16_t b);

/* A float rounded to the nearest bfloat16 (ties to even), kept as a float:
 * what a bf16 linear primitive does to its operands (docs/precision.md,
 * "Computing in bfloat16"). Equal to korch_bf16_to_f32(korch_bf16_from_f64(v))
 * for every float, subnormals included; NaN stays NaN. */
static inline float korch_bf16_round(float v) {
    uint32_t x;
    __builtin_memcpy(&x, &v, sizeof x);
    if ((x & 0x7fffffffu) > 0x7f800000u) x |= 0x00400000u; /* NaN: quiet, not carried into the exponent */
    else x += 0x7fffu + ((x >> 16) & 1u);
    x &= 0xffff0000u;
    __builtin_memcpy(&v, &x, sizeof v);
    return v;
}

static inline bool korch_dtype_is_half(korch_dtype d) {
    return d == KORCH_DTYPE_FLOAT16 || d == KORCH_DTYPE_BFLOAT16;
}

/* Element i of a float16 / bfloat16 buffer as float, and the store back. */
static inline float korch_half_load(korch_dtype d, const void *data, int64_t i) {
    uint16_t h = ((const uint16_t *)data)[i];
    return d == KORCH_DTYPE_BFLOAT16 ? korch_bf16_to_f32(h) : korch_f16_to_f32(h);
}
static inline void korch_half_store(korch_dtype d, void *data, int64_t i, double v) {
    ((uint16_t *)data)[i] = d == KORCH_DTYPE_BFLOAT16 ? korch_bf16_from_f64(v) : korch_f16_from_f64(v);
}

/* A new tensor (dst, owned) holding src converted to `to`: float16 or
 * bfloat16 to float32 (exact) or float32/float64 to float16 or bfloat16
 * (rounded); anything else is KORCH_ERR_UNSUPPORTED. */
korch_status korch_half_convert(const korch_tensor *src, korch_dtype to, korch_tensor *dst);

#endif
