/* Flop counts from shapes. A count only guides planning, so it saturates at
 * INT64_MAX instead of overflowing on absurd (but representable) shapes. */
#ifndef KORCH_OPS_FLOP_COUNT_H
#define KORCH_OPS_FLOP_COUNT_H

#include <stdint.h>

#include "core/tensor.h"

static inline int64_t korch_flops_mul(int64_t a, int64_t b) {
    int64_t r;
    if (a < 0 || b < 0 || korch_mul_overflow_i64(a, b, &r)) return INT64_MAX;
    return r;
}

static inline int64_t korch_flops_add(int64_t a, int64_t b) {
    int64_t r;
    if (a < 0 || b < 0 || korch_add_overflow_i64(a, b, &r)) return INT64_MAX;
    return r;
}

#endif
