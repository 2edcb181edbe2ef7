/* The reference SGEMM shared by Conv, ConvTranspose, MatMul and Gemm.
 *
 * Plain C, cache-blocked and packed in the usual GotoBLAS/BLIS way so that
 * gcc auto-vectorises the micro-kernel; OpenMP splits the output into tiles.
 * It is deliberately independent of oneDNN and every other optimised
 * backend, because the reference executor is the oracle those backends are
 * checked against. Each output element is accumulated in k order within a
 * block of KORCH_SGEMM_KC, and the blocks are added in k order, so results do
 * not depend on the thread count. */
#ifndef KORCH_OPS_GEMM_KERNEL_H
#define KORCH_OPS_GEMM_KERNEL_H

#include <stdbool.h>
#include <stdint.h>

#include "core/status.h"

/* Depth of one block of k: each output element sums its k products in
 * blocks of this many, each block from zero, and adds the blocks' sums to C
 * in order (tests/ops/test_conv_bits.c writes that out as plain loops). */
#define KORCH_SGEMM_KC 256

/* C[m x n] = alpha * op(A) * op(B) + beta * C, all row-major.
 * op(A) is m x k: A is m x k (lda >= k), or k x m when trans_a (lda >= m).
 * op(B) is k x n: B is k x n (ldb >= n), or n x k when trans_b (ldb >= k).
 * beta == 0 overwrites C without reading it (so C may hold garbage).
 * Fails only when the packing buffers cannot be allocated. */
korch_status korch_sgemm(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, float alpha, const float *a,
                         int64_t lda, const float *b, int64_t ldb, float beta, float *c, int64_t ldc);

#endif
