/* The `reduction` of the scatter operators (ScatterElements, ScatterND):
 * how an update meets the element it lands on. */
#ifndef KORCH_OPS_SCATTER_REDUCE_H
#define KORCH_OPS_SCATTER_REDUCE_H

#include "ops/op.h"

typedef enum korch_scatter_reduction {
    KORCH_SCATTER_NONE, /* the update replaces it */
    KORCH_SCATTER_ADD,
    KORCH_SCATTER_MUL,
    KORCH_SCATTER_MAX,
    KORCH_SCATTER_MIN,
} korch_scatter_reduction;

/* The node's `reduction` (default none) for data of dtype t: a reduction
 * other than none takes float32, float64, int32 or int64 data. */
korch_status korch_scatter_reduction_read(const korch_op_ctx *ctx, korch_dtype t, korch_scatter_reduction *red);

/* dst[j] = dst[j] (red) src[j] for n contiguous elements of dtype t (es
 * bytes each). */
void korch_scatter_combine(korch_dtype t, korch_scatter_reduction red, void *dst, const void *src, int64_t n,
                           size_t es);

#endif
