/* The quantization operators. For now every one stays whole: an opaque
 * primitive running its reference kernel (ops/quantize_linear.c,
 * ops/matmul_integer.c, ops/conv_integer.c) inside the plan, because the
 * linear primitives are float32 and korch has no int8 kernels yet
 * (docs/quantization.md). */
#include "fission/rules.h"

KORCH_FISSION_RULE(QuantizeLinear) {
    return fission_decline(ctx, "QuantizeLinear (kept whole: runs its reference kernel)");
}

KORCH_FISSION_RULE(DequantizeLinear) {
    return fission_decline(ctx, "DequantizeLinear (kept whole: runs its reference kernel)");
}

KORCH_FISSION_RULE(DynamicQuantizeLinear) {
    return fission_decline(ctx, "DynamicQuantizeLinear (kept whole: runs its reference kernel)");
}

KORCH_FISSION_RULE(MatMulInteger) {
    return fission_decline(ctx, "MatMulInteger (integer matmul; linear primitives are float32)");
}

KORCH_FISSION_RULE(ConvInteger) {
    return fission_decline(ctx, "ConvInteger (integer convolution; linear primitives are float32)");
}

KORCH_FISSION_RULE(QLinearMatMul) {
    return fission_decline(ctx, "QLinearMatMul (integer matmul; linear primitives are float32)");
}

KORCH_FISSION_RULE(QLinearConv) {
    return fission_decline(ctx, "QLinearConv (integer convolution; linear primitives are float32)");
}
