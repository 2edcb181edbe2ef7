/* Gemm: Y = alpha * op(A) * op(B) + beta * C, with C broadcast to M x N.
 *
 * Opsets 1 and 6 broadcast C only when the `broadcast` attribute is set;
 * from opset 7 C always broadcasts unidirectionally; from opset 11 C is
 * optional. When beta is 0, C is not read (the BLAS convention). */
#include "ops/flop_count.h"
#include "ops/gemm_kernel.h"
#include "ops/op.h"

typedef struct gemm_geometry {
    bool trans_a, trans_b;
    float alpha, beta;
    int64_t m, n, k;
    bool has_c;
} gemm_geometry;

static korch_status read_flag(const korch_op_ctx *ctx, const char *name, bool *out) {
    int64_t v = korch_node_attr_int(ctx->node, name, 0);
    if (v != 0 && v != 1)
        return korch_op_error(ctx, KORCH_ERR_INVALID_MODEL, "%s is %lld; expected 0 or 1", name, (long long)v);
    *out = v == 1;
    return KORCH_OK;
}

static korch_status gemm_geometry_read(const korch_op_ctx *ctx, gemm_geometry *g) {
    const korch_shape *a = &ctx->inputs[0]->shape, *b = &ctx->inputs[1]->shape;
    char as[96], bs[96];
    KORCH_TRY(korch_op_require_dtype(ctx, 0, KORCH_DTYPE_FLOAT32));
    KORCH_TRY(korch_op_require_dtype(ctx, 1, KORCH_DTYPE_FLOAT32));
    KORCH_TRY(read_flag(ctx, "transA", &g->trans_a));
    KORCH_TRY(read_flag(ctx, "transB", &g->trans_b));
    g->alpha = korch_node_attr_float(ctx->node, "alpha", 1.0f);
    g->beta = korch_node_attr_float(ctx->node, "beta", 1.0f);
    if (a->rank != 2 || b->rank != 2)
        return korch_op_error(ctx, KORCH_ERR_SHAPE, "A %s and B %s must both be matrices",
                              korch_shape_format(a, as, sizeof as), korch_shape_format(b, bs, sizeof bs));
    g->m = a->dims[g->trans_a ? 1 : 0];
    g->k = a->dims[g->trans_a ? 0 : 1];
    int64_t kb = b->dims[g->trans_b ? 1 : 0];
    g->n = b->dims[g->trans_b ? 0 : 1];
    if (g->k != kb)
        return korch_op_error(ctx, KORCH_ERR_SHAPE,
                              "inner dimensions differ: op(A) is %lldx%lld, op(B) is %lldx%lld (A %s%s, B %s%s)",
                              (long long)g->m, (long long)g->k, (long long)kb, (long long)g->n,
                              korch_shape_format(a, as, sizeof as), g->trans_a ? " transposed" : "",
                              korch_shape_format(b, bs, sizeof bs), g->trans_b ? " transposed" : "");
    g->has_c = korch_op_has_input(ctx, 2);
    if (!g->has_c) {
        if (ctx->node->opset < 11) return korch_op_error(ctx, KORCH_ERR_INVALID_MODEL, "input C is required before opset 11");
        return KORCH_OK;
    }
    KORCH_TRY(korch_op_require_dtype(ctx, 2, KORCH_DTYPE_FLOAT32));
    const korch_shape *c = &ctx->inputs[2]->shape;
    int64_t want[2] = {g->m, g->n};
    bool exact = c->rank == 2 && c->dims[0] == g->m && c->dims[1] == g->n;
    bool broadcasts = c->rank <= 2;
    for (int i = 0; i < c->rank && broadcasts; i++) {
        int64_t d = c->dims[i], w = want[2 - c->rank + i];
        if (d != 1 && d != w) broadcasts = false;
    }
    bool may_broadcast = ctx->node->opset >= 7 || korch_node_attr_int(ctx->node, "broadcast", 0) != 0;
    if (!exact && !(broadcasts && may_broadcast))
        return korch_op_error(ctx, KORCH_ERR_SHAPE, "C has shape %s, which %s to the %lldx%lld result",
                              korch_shape_format(c, as, sizeof as),
                              broadcasts ? "needs broadcast=1 to broadcast" : "does not broadcast", (long long)g->m,
                              (long long)g->n);
    return KORCH_OK;
}

static korch_status infer_gemm(korch_op_ctx *ctx) {
    gemm_geometry g;
    KORCH_TRY(gemm_geometry_read(ctx, &g));
    korch_shape out = {.rank = 2, .dims = {g.m, g.n}};
    korch_op_set_output(ctx, 0, KORCH_DTYPE_FLOAT32, &out);
    return KORCH_OK;
}

static korch_status run_gemm(korch_op_ctx *ctx) {
    gemm_geometry g;
    KORCH_TRY(gemm_geometry_read(ctx, &g));
    const korch_tensor *ta = ctx->inputs[0], *tb = ctx->inputs[1];
    float *y = ctx->outputs[0]->data;
    float beta = 0.0f;
    if (g.has_c && g.beta != 0.0f) {
        /* Y starts as C broadcast to M x N; the GEMM then scales it by beta. */
        const korch_tensor *tc = ctx->inputs[2];
        const float *c = tc->data;
        int64_t rows = tc->shape.rank == 2 ? tc->shape.dims[0] : 1;
        int64_t cols = tc->shape.rank >= 1 ? tc->shape.dims[tc->shape.rank - 1] : 1;
#pragma omp parallel for schedule(static)
        for (int64_t i = 0; i < g.m; i++)
            for (int64_t j = 0; j < g.n; j++) y[i * g.n + j] = c[(rows == 1 ? 0 : i) * cols + (cols == 1 ? 0 : j)];
        beta = g.beta;
    }
    korch_status st = korch_sgemm(g.trans_a, g.trans_b, g.m, g.n, g.k, g.alpha, ta->data, ta->shape.dims[1], tb->data,
                                  tb->shape.dims[1], beta, y, g.n);
    return st == KORCH_OK ? KORCH_OK : korch_op_error(ctx, st, "%s", korch_last_error());
}

static int64_t flops_gemm(const korch_op_ctx *ctx) {
    gemm_geometry g;
    if (gemm_geometry_read(ctx, &g) != KORCH_OK) return 0;
    int64_t outputs = korch_flops_mul(g.m, g.n);
    return korch_flops_add(korch_flops_mul(2, korch_flops_mul(outputs, g.k)),
                           g.has_c && g.beta != 0.0f ? korch_flops_mul(2, outputs) : 0);
}

const korch_op_def korch_op_def_Gemm = {
    .kind = KORCH_OP_Gemm, .op_type = "Gemm", .opset_min = 1, .opset_max = 18,
    .min_inputs = 2, .max_inputs = 3, .min_outputs = 1, .max_outputs = 1,
    .infer = infer_gemm, .run = run_gemm, .flops = flops_gemm,
};
