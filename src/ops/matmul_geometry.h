/* The shape rules of numpy-style MatMul, shared by MatMul (matmul.c) and
 * the integer forms MatMulInteger / QLinearMatMul (matmul_integer.c): a 1-D
 * operand is promoted to a matrix (the promoted dimension dropped from the
 * result), leading dimensions are batch dimensions and broadcast. */
#ifndef KORCH_OPS_MATMUL_GEOMETRY_H
#define KORCH_OPS_MATMUL_GEOMETRY_H

#include "ops/op.h"

typedef struct korch_matmul_geometry {
    int64_t m, n, k;
    korch_shape batch_a, batch_b, batch; /* the leading dims; batch is their broadcast */
} korch_matmul_geometry;

/* The geometry of inputs[a] @ inputs[b] and the result's shape; errors name
 * the node and both shapes. Dtypes are the caller's to check. */
korch_status korch_matmul_geometry_read(const korch_op_ctx *ctx, int a, int b, korch_matmul_geometry *g,
                                        korch_shape *out);

#endif
