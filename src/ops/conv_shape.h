/* The geometry of a convolution operator read from its node: shared by
 * Conv and the quantized ConvInteger / QLinearConv. */
#ifndef KORCH_OPS_CONV_SHAPE_H
#define KORCH_OPS_CONV_SHAPE_H

#include "ops/conv_kernel.h"
#include "ops/op.h"

/* X and W are inputs xi and wi (any dtype; the caller checks dtypes and its
 * other inputs): ranks, group, channels and the window. */
korch_status korch_conv_geometry_read(const korch_op_ctx *ctx, int xi, int wi, korch_conv_geometry *g);
/* [N, M, spatial out...] of a geometry read above, for an X of this rank. */
korch_shape korch_conv_output_shape(const korch_conv_geometry *g, int rank);

#endif
