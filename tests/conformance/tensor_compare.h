/* Comparison of a computed tensor with a reference tensor, with the tolerance
 * the conformance suite documents (docs/conformance.md):
 *   floating point: |got - want| <= atol + rtol * |want|, NaN matches NaN,
 *                   an infinity matches only the same infinity;
 *   integers and bools: exact;
 *   dtype and shape: exact. */
#ifndef KORCH_TESTS_TENSOR_COMPARE_H
#define KORCH_TESTS_TENSOR_COMPARE_H

#include <stdbool.h>
#include <stddef.h>

#include "core/tensor.h"

typedef struct korch_tolerance {
    double atol, rtol;
} korch_tolerance;

/* float32 / float64 (the documented conformance tolerance) */
#define KORCH_CONFORMANCE_ATOL 1e-5
#define KORCH_CONFORMANCE_RTOL 1e-4
/* float16 results are rounded to 11 significant bits by the reference
 * implementation itself, so the float tolerance would flag rounding noise. */
#define KORCH_CONFORMANCE_F16_ATOL 1e-3
#define KORCH_CONFORMANCE_F16_RTOL 1e-3
/* bfloat16 keeps 8 significant bits: one step is 2^-7 of a value. */
#define KORCH_CONFORMANCE_BF16_ATOL 1e-3
#define KORCH_CONFORMANCE_BF16_RTOL 8e-3

korch_tolerance korch_tolerance_for(korch_dtype dtype);

/* True when `got` matches `want`. Otherwise writes a one-line explanation
 * (dtype, shape, or the count of differing elements and the worst one) to why. */
bool korch_tensor_compare(const korch_tensor *got, const korch_tensor *want, char *why, size_t why_size);

#endif
