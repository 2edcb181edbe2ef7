/* The reference convolution kernels, shared by the Conv and ConvTranspose
 * operators of the reference executor and by the primitive interpreter
 * (ir/interpret.c), so that both oracles compute a convolution the same
 * way: im2col or col2im around the reference SGEMM (gemm_kernel.h), direct
 * loops for depthwise convolutions. Independent of oneDNN and every other
 * optimised backend, like the SGEMM itself. */
#ifndef KORCH_OPS_CONV_KERNEL_H
#define KORCH_OPS_CONV_KERNEL_H

#include "ops/window.h"

/* Shapes of a (grouped) convolution or its transpose, NCHW-style: for a
 * convolution w.in is X's spatial size and w.out Y's; for a transpose too
 * (X is the small side). Weights are [out_channels, channels_per_group,
 * kernel...] for a convolution, [channels, out_per_group, kernel...] for a
 * transpose. */
typedef struct korch_conv_geometry {
    korch_window w;
    int64_t batch, channels, groups, out_channels;
    int64_t channels_per_group, out_per_group;
} korch_conv_geometry;

/* y = conv(x, wt) + bias (bias may be NULL). */
korch_status korch_conv_run(const korch_conv_geometry *g, const float *x, const float *wt, const float *bias, float *y);
/* y = conv_transpose(x, wt) + bias (bias may be NULL). */
korch_status korch_conv_transpose_run(const korch_conv_geometry *g, const float *x, const float *wt,
                                      const float *bias, float *y);

#endif
