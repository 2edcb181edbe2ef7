/* MatMul with numpy semantics: a 1-D operand is promoted to a matrix (and
 * the promoted dimension dropped from the result), leading dimensions are
 * batch dimensions and broadcast against each other. */
#include "ops/broadcast.h"
#include "ops/flop_count.h"
#include "ops/gemm_kernel.h"
#include "ops/matmul_geometry.h"
#include "ops/op.h"

/* Below this many multiply-adds per matrix, batches run in parallel with a
 * single-threaded GEMM each, rather than one after another. */
#define SMALL_MATRIX_MACS ((int64_t)1 << 21)

typedef korch_matmul_geometry matmul_geometry;

korch_status korch_matmul_geometry_read(const korch_op_ctx *ctx, int ia, int ib, korch_matmul_geometry *g,
                                        korch_shape *out) {
    const korch_shape *a = &ctx->inputs[ia]->shape, *b = &ctx->inputs[ib]->shape;
    char as[96], bs[96];
    if (a->rank < 1 || b->rank < 1)
        return korch_op_error(ctx, KORCH_ERR_SHAPE, "operands must have rank >= 1, got A %s and B %s",
                              korch_shape_format(a, as, sizeof as), korch_shape_format(b, bs, sizeof bs));
    g->k = a->dims[a->rank - 1];
    g->m = a->rank >= 2 ? a->dims[a->rank - 2] : 1;
    int64_t kb = b->rank >= 2 ? b->dims[b->rank - 2] : b->dims[0];
    g->n = b->rank >= 2 ? b->dims[b->rank - 1] : 1;
    if (g->k != kb)
        return korch_op_error(ctx, KORCH_ERR_SHAPE, "inner dimensions differ: A is %s, B is %s (%lld vs %lld)",
                              korch_shape_format(a, as, sizeof as), korch_shape_format(b, bs, sizeof bs),
                              (long long)g->k, (long long)kb);
    g->batch_a = korch_shape_make(a->rank > 2 ? a->rank - 2 : 0, a->dims);
    g->batch_b = korch_shape_make(b->rank > 2 ? b->rank - 2 : 0, b->dims);
    if (!korch_shape_broadcast(&g->batch_a, &g->batch_b, &g->batch))
        return korch_op_error(ctx, KORCH_ERR_SHAPE, "batch dimensions of A %s and B %s do not broadcast",
                              korch_shape_format(a, as, sizeof as), korch_shape_format(b, bs, sizeof bs));
    *out = g->batch;
    if (a->rank >= 2) out->dims[out->rank++] = g->m;
    if (b->rank >= 2) {
        if (out->rank >= KORCH_MAX_RANK)
            return korch_op_error(ctx, KORCH_ERR_UNSUPPORTED, "result would have rank %d", out->rank + 1);
        out->dims[out->rank++] = g->n;
    }
    return KORCH_OK;
}

/* float32, or int32 (both operands): ONNX allows integer MatMul, and an
 * integer matmul primitive exported (fission/pgraph_onnx.c) is one */
static korch_status matmul_geometry_read(const korch_op_ctx *ctx, matmul_geometry *g, korch_shape *out) {
    korch_dtype t = ctx->inputs[0]->dtype == KORCH_DTYPE_INT32 ? KORCH_DTYPE_INT32 : KORCH_DTYPE_FLOAT32;
    KORCH_TRY(korch_op_require_dtype(ctx, 0, t));
    KORCH_TRY(korch_op_require_dtype(ctx, 1, t));
    return korch_matmul_geometry_read(ctx, 0, 1, g, out);
}

static korch_status infer_matmul(korch_op_ctx *ctx) {
    matmul_geometry g;
    korch_shape out;
    KORCH_TRY(matmul_geometry_read(ctx, &g, &out));
    korch_op_set_output(ctx, 0, ctx->inputs[0]->dtype, &out);
    return KORCH_OK;
}

/* int32: exact products summed in int64, stored wrapping to int32 (as
 * MatMulInteger's reference, ops/matmul_integer.c). */
static void run_matmul_int32(const matmul_geometry *g, const int32_t *a, const int32_t *b, int32_t *y) {
    int64_t batches = korch_shape_numel(&g->batch), strides_a[KORCH_MAX_RANK], strides_b[KORCH_MAX_RANK];
    korch_broadcast_strides(&g->batch_a, &g->batch, strides_a);
    korch_broadcast_strides(&g->batch_b, &g->batch, strides_b);
#pragma omp parallel for schedule(static) if (batches * g->m * g->n * g->k >= (1 << 16))
    for (int64_t tm = 0; tm < batches * g->m; tm++) {
        int64_t t = tm / g->m, row = tm % g->m, oa = 0, ob = 0, rest = t;
        for (int d = g->batch.rank - 1; d >= 0; d--) {
            int64_t i = rest % g->batch.dims[d];
            rest /= g->batch.dims[d];
            oa += i * strides_a[d];
            ob += i * strides_b[d];
        }
        const int32_t *pa = a + (oa * g->m + row) * g->k, *pb = b + ob * g->k * g->n;
        for (int64_t col = 0; col < g->n; col++) {
            int64_t acc = 0;
            for (int64_t kk = 0; kk < g->k; kk++) acc += (int64_t)pa[kk] * pb[kk * g->n + col];
            y[tm * g->n + col] = (int32_t)(uint32_t)(uint64_t)acc;
        }
    }
}

static korch_status run_matmul(korch_op_ctx *ctx) {
    matmul_geometry g;
    korch_shape out;
    KORCH_TRY(matmul_geometry_read(ctx, &g, &out));
    if (ctx->inputs[0]->dtype == KORCH_DTYPE_INT32) {
        run_matmul_int32(&g, ctx->inputs[0]->data, ctx->inputs[1]->data, ctx->outputs[0]->data);
        return KORCH_OK;
    }
    const float *a = ctx->inputs[0]->data, *b = ctx->inputs[1]->data;
    float *y = ctx->outputs[0]->data;
    int64_t batches = korch_shape_numel(&g.batch);
    if (batches == 0 || g.m == 0 || g.n == 0) return KORCH_OK;
    korch_status st = KORCH_OK;
    /* B shared by every batch and A not broadcast: the batch folds into M. */
    if (korch_shape_numel(&g.batch_b) == 1 && korch_shape_numel(&g.batch_a) == batches) {
        st = korch_sgemm(false, false, batches * g.m, g.n, g.k, 1.0f, a, g.k, b, g.n, 0.0f, y, g.n);
        return st == KORCH_OK ? KORCH_OK : korch_op_error(ctx, st, "%s", korch_last_error());
    }
    int64_t strides_a[KORCH_MAX_RANK], strides_b[KORCH_MAX_RANK];
    korch_broadcast_strides(&g.batch_a, &g.batch, strides_a);
    korch_broadcast_strides(&g.batch_b, &g.batch, strides_b);
    bool parallel_batches = batches > 1 && g.m * g.n * g.k < SMALL_MATRIX_MACS;
    int failures = 0;
#pragma omp parallel for schedule(dynamic, 1) if (parallel_batches) reduction(+ : failures)
    for (int64_t t = 0; t < batches; t++) {
        int64_t oa = 0, ob = 0, rest = t;
        for (int d = g.batch.rank - 1; d >= 0; d--) {
            int64_t i = rest % g.batch.dims[d];
            rest /= g.batch.dims[d];
            oa += i * strides_a[d];
            ob += i * strides_b[d];
        }
        if (korch_sgemm(false, false, g.m, g.n, g.k, 1.0f, a + oa * g.m * g.k, g.k, b + ob * g.k * g.n, g.n, 0.0f,
                        y + t * g.m * g.n, g.n) != KORCH_OK)
            failures++;
    }
    if (failures) return korch_op_error(ctx, KORCH_ERR_OUT_OF_MEMORY, "out of memory in %d of the batched GEMMs", failures);
    return st;
}

static int64_t flops_matmul(const korch_op_ctx *ctx) {
    matmul_geometry g;
    korch_shape out;
    if (matmul_geometry_read(ctx, &g, &out) != KORCH_OK) return 0;
    int64_t outputs = korch_flops_mul(korch_flops_mul(korch_shape_numel(&g.batch), g.m), g.n);
    return korch_flops_mul(2, korch_flops_mul(outputs, g.k));
}

const korch_op_def korch_op_def_MatMul = {
    .kind = KORCH_OP_MatMul, .op_type = "MatMul", .opset_min = 1, .opset_max = 18,
    .min_inputs = 2, .max_inputs = 2, .min_outputs = 1, .max_outputs = 1,
    .infer = infer_matmul, .run = run_matmul, .flops = flops_matmul,
};
