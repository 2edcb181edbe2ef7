/* Det (opset 11-18): the determinant of each square matrix of X [..., M, M];
 * the output has shape [...] (a scalar for a single matrix). float32 and
 * float64, computed in double by LU factorisation with partial pivoting. */
#include <math.h>
#include <stdlib.h>

#include "ops/elementwise.h"

static bool det_dtype_ok(korch_dtype t) { return t == KORCH_DTYPE_FLOAT32 || t == KORCH_DTYPE_FLOAT64; }

static korch_status infer_det(korch_op_ctx *ctx) {
    const korch_tensor *x = ctx->inputs[0];
    KORCH_TRY(korch_ew_require(ctx, 0, det_dtype_ok, "float32 or float64"));
    int r = x->shape.rank;
    if (r < 2 || x->shape.dims[r - 1] != x->shape.dims[r - 2])
        return korch_op_error(ctx, KORCH_ERR_SHAPE, "Det needs square matrices [..., M, M], got rank %d%s", r,
                              r < 2 ? "" : " with unequal last two dims");
    korch_shape out = x->shape;
    out.rank = r - 2;
    korch_op_set_output(ctx, 0, x->dtype, &out);
    return KORCH_OK;
}

/* Determinant of the m x m matrix a (row-major, overwritten). */
static double lu_det(double *a, int64_t m) {
    double det = 1;
    for (int64_t k = 0; k < m; k++) {
        int64_t piv = k;
        for (int64_t i = k + 1; i < m; i++)
            if (fabs(a[i * m + k]) > fabs(a[piv * m + k])) piv = i;
        if (a[piv * m + k] == 0) return 0; /* singular (also signed zero: 0 either way) */
        if (piv != k) {
            for (int64_t j = 0; j < m; j++) {
                double t = a[k * m + j];
                a[k * m + j] = a[piv * m + j];
                a[piv * m + j] = t;
            }
            det = -det;
        }
        double p = a[k * m + k];
        det *= p;
        for (int64_t i = k + 1; i < m; i++) {
            double f = a[i * m + k] / p;
            for (int64_t j = k + 1; j < m; j++) a[i * m + j] -= f * a[k * m + j];
        }
    }
    return det;
}

static korch_status run_det(korch_op_ctx *ctx) {
    const korch_tensor *x = ctx->inputs[0];
    korch_tensor *y = ctx->outputs[0];
    int64_t m = x->shape.dims[x->shape.rank - 1], batch = korch_tensor_numel(y);
    double *a = malloc((size_t)(m * m > 0 ? m * m : 1) * sizeof *a);
    if (!a) return korch_op_error(ctx, KORCH_ERR_OUT_OF_MEMORY, "out of memory (%lld x %lld matrix)", (long long)m,
                                  (long long)m);
    for (int64_t b = 0; b < batch; b++) {
        for (int64_t i = 0; i < m * m; i++) a[i] = korch_tensor_get_f64(x, b * m * m + i);
        double d = lu_det(a, m); /* 1 for an empty (0 x 0) matrix */
        if (y->dtype == KORCH_DTYPE_FLOAT32) ((float *)y->data)[b] = (float)d;
        else ((double *)y->data)[b] = d;
    }
    free(a);
    return KORCH_OK;
}

/* About 2/3 M^3 multiply-adds per matrix. */
static int64_t flops_det(const korch_op_ctx *ctx) {
    const korch_shape *s = &ctx->inputs[0]->shape;
    int64_t m = s->rank >= 2 ? s->dims[s->rank - 1] : 0, batch = 1;
    for (int d = 0; d + 2 < s->rank; d++) batch *= s->dims[d];
    return batch * (2 * m * m * m / 3 + m);
}

const korch_op_def korch_op_def_Det = {
    .kind = KORCH_OP_Det, .op_type = "Det", .opset_min = 11, .opset_max = 18,
    .min_inputs = 1, .max_inputs = 1, .min_outputs = 1, .max_outputs = 1,
    .infer = infer_det, .run = run_det, .flops = flops_det,
};
