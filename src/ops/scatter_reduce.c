/* The scatter operators' reduction (ops/scatter_reduce.h). */
#include <string.h>

#include "ops/scatter_reduce.h"

korch_status korch_scatter_reduction_read(const korch_op_ctx *ctx, korch_dtype t, korch_scatter_reduction *red) {
    static const char *const names[] = {"none", "add", "mul", "max", "min"};
    int k = 0;
    KORCH_TRY(korch_op_attr_choice(ctx, "reduction", "none", names, 5, &k, KORCH_ERR_INVALID_MODEL));
    *red = (korch_scatter_reduction)k;
    if (*red != KORCH_SCATTER_NONE && t != KORCH_DTYPE_FLOAT32 && t != KORCH_DTYPE_FLOAT64 &&
        t != KORCH_DTYPE_INT32 && t != KORCH_DTYPE_INT64)
        return korch_op_error(ctx, KORCH_ERR_UNSUPPORTED, "reduction %s on %s data", names[k], korch_dtype_name(t));
    return KORCH_OK;
}

void korch_scatter_combine(korch_dtype t, korch_scatter_reduction red, void *dst, const void *src, int64_t n,
                           size_t es) {
    if (red == KORCH_SCATTER_NONE) {
        memcpy(dst, src, (size_t)n * es);
        return;
    }
#define COMBINE(T)                                                                                                     \
    for (int64_t j = 0; j < n; j++) {                                                                                  \
        T a = ((T *)dst)[j], b = ((const T *)src)[j];                                                                  \
        ((T *)dst)[j] = red == KORCH_SCATTER_ADD   ? a + b                                                             \
                        : red == KORCH_SCATTER_MUL ? a * b                                                             \
                        : red == KORCH_SCATTER_MAX ? (a > b ? a : b)                                                   \
                                                   : (a < b ? a : b);                                                  \
    }                                                                                                                  \
    return;
    switch (t) {
    case KORCH_DTYPE_FLOAT32: COMBINE(float)
    case KORCH_DTYPE_FLOAT64: COMBINE(double)
    case KORCH_DTYPE_INT32: COMBINE(int32_t)
    default: COMBINE(int64_t)
    }
#undef COMBINE
}
