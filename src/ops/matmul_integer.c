/* MatMulInteger and QLinearMatMul (opset 10): numpy-style MatMul of uint8/
 * int8 operands with exact integer accumulation.
 *
 *   MatMulInteger: Y(int32) = (A - a_zero_point) @ (B - b_zero_point)
 *   QLinearMatMul: acc = (a - a_zero_point) @ (b - b_zero_point)
 *                  y = saturate(rint(acc * (a_scale * b_scale / y_scale)) + y_zero_point)
 *
 * Zero points and scales of A are per tensor or per row (M values), of B per
 * tensor or per column (N values); y's are per tensor. The requantization is
 * float32, as ONNX Runtime's: the multiplier a_scale * b_scale / y_scale is
 * computed in float32 and the accumulator converted to float32 before the
 * product. Accumulation is int64, stored as int32 (wrapping, like int32
 * accumulation would; only reachable with K above 2^15). */
#include "ops/broadcast.h"
#include "ops/flop_count.h"
#include "ops/matmul_geometry.h"
#include "ops/quant.h"

typedef korch_matmul_geometry imatmul_geometry;

/* Which input holds what: MatMulInteger is (A, B, a_zp, b_zp); QLinearMatMul
 * is (a, a_scale, a_zp, b, b_scale, b_zp, y_scale, y_zp). */
typedef struct imatmul_inputs {
    int a, b, a_zp, b_zp, a_scale, b_scale;
} imatmul_inputs;

static const imatmul_inputs MATMUL_INTEGER = {0, 1, 2, 3, -1, -1};
static const imatmul_inputs QLINEAR_MATMUL = {0, 3, 2, 5, 1, 4};

/* A per-row/per-column parameter: 1 value, or `count` values in a 1-D tensor. */
static korch_status check_vector_param(const korch_op_ctx *ctx, int i, int64_t count, const char *role,
                                       const char *per) {
    char name[160], s[96];
    if (!korch_op_has_input(ctx, i)) return KORCH_OK;
    const korch_shape *shape = &ctx->inputs[i]->shape;
    int64_t numel = korch_shape_numel(shape);
    if (numel == 1 && shape->rank <= 1) return KORCH_OK;
    if (shape->rank == 1 && numel == count) return KORCH_OK;
    return korch_op_error(ctx, KORCH_ERR_UNSUPPORTED,
                          "%s \"%s\" has shape %s; korch supports a scalar or a 1-D tensor of %lld values (%s)", role,
                          korch_printable(korch_op_input_name(ctx, i), name, sizeof name),
                          korch_shape_format(shape, s, sizeof s), (long long)count, per);
}

static korch_status geometry_read(const korch_op_ctx *ctx, const imatmul_inputs *io, imatmul_geometry *g,
                                  korch_shape *out) {
    KORCH_TRY(korch_quant_require_int8(ctx, io->a, "A"));
    KORCH_TRY(korch_quant_require_int8(ctx, io->b, "B"));
    KORCH_TRY(korch_quant_require_same_dtype(ctx, io->a_zp, io->a, "A's zero point"));
    KORCH_TRY(korch_quant_require_same_dtype(ctx, io->b_zp, io->b, "B's zero point"));
    KORCH_TRY(korch_matmul_geometry_read(ctx, io->a, io->b, g, out));
    KORCH_TRY(check_vector_param(ctx, io->a_zp, g->m, "A's zero point", "per row of A"));
    KORCH_TRY(check_vector_param(ctx, io->b_zp, g->n, "B's zero point", "per column of B"));
    if (io->a_scale >= 0) {
        KORCH_TRY(korch_op_require_dtype(ctx, io->a_scale, KORCH_DTYPE_FLOAT32));
        KORCH_TRY(korch_op_require_dtype(ctx, io->b_scale, KORCH_DTYPE_FLOAT32));
        KORCH_TRY(check_vector_param(ctx, io->a_scale, g->m, "a_scale", "per row of A"));
        KORCH_TRY(check_vector_param(ctx, io->b_scale, g->n, "b_scale", "per column of B"));
    }
    return KORCH_OK;
}

/* Element i of a scalar-or-vector parameter (NULL: 0). */
static inline int32_t param_i32(const korch_tensor *t, int64_t i) {
    return korch_quant_get(t, t && korch_tensor_numel(t) > 1 ? i : 0);
}
static inline float param_f32(const korch_tensor *t, int64_t i) {
    return ((const float *)t->data)[korch_tensor_numel(t) > 1 ? i : 0];
}

/* Calls body(t, row, col, acc) for every output element, acc the exact
 * integer dot product of (A - a_zp) row and (B - b_zp) column. */
typedef void (*imatmul_store)(korch_op_ctx *ctx, int64_t index, int64_t row, int64_t col, int64_t acc);

static void imatmul_run(korch_op_ctx *ctx, const imatmul_inputs *io, const imatmul_geometry *g,
                        imatmul_store store) {
    const korch_tensor *a = ctx->inputs[io->a], *b = ctx->inputs[io->b];
    const korch_tensor *azp = korch_op_has_input(ctx, io->a_zp) ? ctx->inputs[io->a_zp] : NULL;
    const korch_tensor *bzp = korch_op_has_input(ctx, io->b_zp) ? ctx->inputs[io->b_zp] : NULL;
    int64_t batches = korch_shape_numel(&g->batch);
    int64_t strides_a[KORCH_MAX_RANK], strides_b[KORCH_MAX_RANK];
    korch_broadcast_strides(&g->batch_a, &g->batch, strides_a);
    korch_broadcast_strides(&g->batch_b, &g->batch, strides_b);
    int64_t total = batches * g->m;
#pragma omp parallel for schedule(static) if (total * g->n * g->k >= (1 << 16))
    for (int64_t tm = 0; tm < total; tm++) {
        int64_t t = tm / g->m, row = tm % g->m, oa = 0, ob = 0, rest = t;
        for (int d = g->batch.rank - 1; d >= 0; d--) {
            int64_t i = rest % g->batch.dims[d];
            rest /= g->batch.dims[d];
            oa += i * strides_a[d];
            ob += i * strides_b[d];
        }
        int64_t a0 = oa * g->m * g->k + row * g->k, b0 = ob * g->k * g->n;
        int32_t za = param_i32(azp, row);
        for (int64_t col = 0; col < g->n; col++) {
            int32_t zb = param_i32(bzp, col);
            int64_t acc = 0;
            for (int64_t kk = 0; kk < g->k; kk++)
                acc += (int64_t)(korch_quant_get(a, a0 + kk) - za) * (korch_quant_get(b, b0 + kk * g->n + col) - zb);
            store(ctx, tm * g->n + col, row, col, acc);
        }
    }
}

static int64_t flops_common(const korch_op_ctx *ctx, const imatmul_inputs *io) {
    imatmul_geometry g;
    korch_shape out;
    if (geometry_read(ctx, io, &g, &out) != KORCH_OK) return 0;
    int64_t outputs = korch_flops_mul(korch_flops_mul(korch_shape_numel(&g.batch), g.m), g.n);
    return korch_flops_mul(2, korch_flops_mul(outputs, g.k));
}

/* ---- MatMulInteger -------------------------------------------------------- */

static korch_status infer_matmul_integer(korch_op_ctx *ctx) {
    imatmul_geometry g;
    korch_shape out;
    KORCH_TRY(geometry_read(ctx, &MATMUL_INTEGER, &g, &out));
    korch_op_set_output(ctx, 0, KORCH_DTYPE_INT32, &out);
    return KORCH_OK;
}

static void store_int32(korch_op_ctx *ctx, int64_t index, int64_t row, int64_t col, int64_t acc) {
    (void)row, (void)col;
    ((int32_t *)ctx->outputs[0]->data)[index] = (int32_t)(uint32_t)(uint64_t)acc;
}

static korch_status run_matmul_integer(korch_op_ctx *ctx) {
    imatmul_geometry g;
    korch_shape out;
    KORCH_TRY(geometry_read(ctx, &MATMUL_INTEGER, &g, &out));
    imatmul_run(ctx, &MATMUL_INTEGER, &g, store_int32);
    return KORCH_OK;
}

static int64_t flops_matmul_integer(const korch_op_ctx *ctx) { return flops_common(ctx, &MATMUL_INTEGER); }

const korch_op_def korch_op_def_MatMulInteger = {
    .kind = KORCH_OP_MatMulInteger, .op_type = "MatMulInteger", .opset_min = 10, .opset_max = 18,
    .min_inputs = 2, .max_inputs = 4, .min_outputs = 1, .max_outputs = 1,
    .infer = infer_matmul_integer, .run = run_matmul_integer, .flops = flops_matmul_integer,
};

/* ---- QLinearMatMul -------------------------------------------------------- */

static korch_status infer_qlinear_matmul(korch_op_ctx *ctx) {
    imatmul_geometry g;
    korch_shape out;
    KORCH_TRY(geometry_read(ctx, &QLINEAR_MATMUL, &g, &out));
    KORCH_TRY(korch_op_require_dtype(ctx, 6, KORCH_DTYPE_FLOAT32));
    KORCH_TRY(korch_quant_require_scalar(ctx, 6, "y_scale"));
    KORCH_TRY(korch_quant_require_int8(ctx, 7, "y_zero_point"));
    KORCH_TRY(korch_quant_require_scalar(ctx, 7, "y_zero_point"));
    korch_op_set_output(ctx, 0, ctx->inputs[7]->dtype, &out);
    return KORCH_OK;
}

static void store_requantized(korch_op_ctx *ctx, int64_t index, int64_t row, int64_t col, int64_t acc) {
    korch_tensor *y = ctx->outputs[0];
    float multiplier = param_f32(ctx->inputs[1], row) * param_f32(ctx->inputs[4], col) /
                       ((const float *)ctx->inputs[6]->data)[0];
    int32_t zp = korch_quant_get(ctx->inputs[7], 0);
    float v = (float)(int32_t)(uint32_t)(uint64_t)acc * multiplier;
    korch_quant_set(y, index, korch_quant_round_saturate(v, zp, korch_quant_min(y->dtype), korch_quant_max(y->dtype)));
}

static korch_status run_qlinear_matmul(korch_op_ctx *ctx) {
    imatmul_geometry g;
    korch_shape out;
    KORCH_TRY(geometry_read(ctx, &QLINEAR_MATMUL, &g, &out));
    imatmul_run(ctx, &QLINEAR_MATMUL, &g, store_requantized);
    return KORCH_OK;
}

static int64_t flops_qlinear_matmul(const korch_op_ctx *ctx) { return flops_common(ctx, &QLINEAR_MATMUL); }

const korch_op_def korch_op_def_QLinearMatMul = {
    .kind = KORCH_OP_QLinearMatMul, .op_type = "QLinearMatMul", .opset_min = 10, .opset_max = 18,
    .min_inputs = 8, .max_inputs = 8, .min_outputs = 1, .max_outputs = 1,
    .infer = infer_qlinear_matmul, .run = run_qlinear_matmul, .flops = flops_qlinear_matmul,
};
