/* Fission rules for matrix multiplication and convolution: one linear
 * primitive, with transposes, scales and bias additions around it. */
#include <string.h>

#include "fission/rules.h"

/* MatMul with numpy semantics: rank-1 operands become matrices (1, K) or
 * (K, 1), and the result is reshaped to the inferred output shape. */
static int matmul(korch_fission_ctx *ctx, int a, int b, const korch_shape *out_shape) {
    if (a < 0 || b < 0) return -1;
    const korch_shape *sa = fission_shape(ctx, a), *sb = fission_shape(ctx, b);
    if (sa->rank == 1) {
        korch_shape m = {.rank = 2, .dims = {1, sa->dims[0]}};
        a = korch_pgraph_reshape(ctx->pg, a, &m);
    }
    if (sb->rank == 1) {
        korch_shape m = {.rank = 2, .dims = {sb->dims[0], 1}};
        b = korch_pgraph_reshape(ctx->pg, b, &m);
    }
    if (a < 0 || b < 0) return -1;
    korch_prim_linear p = {.op = KORCH_LINEAR_MATMUL};
    int y = korch_pgraph_linear(ctx->pg, &p, a, b);
    if (y >= 0 && !korch_shape_equal(fission_shape(ctx, y), out_shape)) y = korch_pgraph_reshape(ctx->pg, y, out_shape);
    return y;
}

KORCH_FISSION_RULE(MatMul) {
    if (fission_in_dtype(ctx, 0) != KORCH_DTYPE_FLOAT32)
        return fission_decline(ctx, "MatMul of a non-float32 dtype (linear primitives are float32)");
    fission_set_out(ctx, 0, matmul(ctx, fission_in(ctx, 0), fission_in(ctx, 1), fission_out_shape(ctx, 0)));
    return fission_done(ctx);
}

/* alpha * A' B' + beta * C, A' = transA ? A^T : A (a transpose layout, which
 * constant propagation folds into the weights when they are constant). */
KORCH_FISSION_RULE(Gemm) {
    const korch_node *n = ctx->node;
    if (fission_in_dtype(ctx, 0) != KORCH_DTYPE_FLOAT32)
        return fission_decline(ctx, "Gemm of a non-float32 dtype (linear primitives are float32)");
    float alpha = korch_node_attr_float(n, "alpha", 1.0f), beta = korch_node_attr_float(n, "beta", 1.0f);
    static const int64_t swap[2] = {1, 0};
    int a = fission_in(ctx, 0), b = fission_in(ctx, 1);
    if (korch_node_attr_int(n, "transA", 0)) a = korch_pgraph_transpose(ctx->pg, a, swap);
    if (korch_node_attr_int(n, "transB", 0)) b = korch_pgraph_transpose(ctx->pg, b, swap);
    korch_prim_linear p = {.op = KORCH_LINEAR_MATMUL};
    int y = a < 0 || b < 0 ? -1 : korch_pgraph_linear(ctx->pg, &p, a, b);
    if (alpha != 1.0f) y = fission_binary(ctx, KORCH_EW_MUL, y, fission_scalar(ctx, alpha, KORCH_DTYPE_FLOAT32));
    if (fission_has_in(ctx, 2) && beta != 0.0f) {
        int c = fission_in(ctx, 2);
        if (beta != 1.0f) c = fission_binary(ctx, KORCH_EW_MUL, c, fission_scalar(ctx, beta, KORCH_DTYPE_FLOAT32));
        y = fission_binary(ctx, KORCH_EW_ADD, y, c);
    }
    fission_set_out(ctx, 0, y);
    return fission_done(ctx);
}

/* Reads an INTS attribute of `count` entries, or fills `dflt`. */
static bool read_ints(const korch_node *n, const char *name, int count, int64_t dflt, int64_t *out) {
    const int64_t *v = NULL;
    int c = korch_node_attr_ints(n, name, &v);
    for (int i = 0; i < count; i++) out[i] = dflt;
    if (c < 0) return true;
    if (c != count) return false;
    memcpy(out, v, (size_t)count * sizeof *out);
    return true;
}

/* Convolution parameters from the attributes; pads resolved for auto_pad. */
static korch_status conv_params(korch_fission_ctx *ctx, bool transpose, korch_prim_linear *p) {
    const korch_node *n = ctx->node;
    const korch_shape *x = fission_in_shape(ctx, 0), *w = fission_in_shape(ctx, 1);
    const korch_shape *y = fission_out_shape(ctx, 0);
    int s = x->rank - 2;
    if (s < 1 || s > 3 || w->rank != x->rank)
        return fission_decline(ctx, "convolution with other than 1 to 3 spatial dimensions");
    memset(p, 0, sizeof *p);
    p->op = transpose ? KORCH_LINEAR_CONV_TRANSPOSE : KORCH_LINEAR_CONV;
    p->spatial = s;
    p->group = korch_node_attr_int(n, "group", 1);
    int64_t pads[6];
    if (!read_ints(n, "strides", s, 1, p->strides) || !read_ints(n, "dilations", s, 1, p->dilations) ||
        !read_ints(n, "pads", 2 * s, 0, pads) || !read_ints(n, "output_padding", s, 0, p->output_padding))
        return korch_error(KORCH_ERR_INVALID_MODEL, "convolution attribute with the wrong number of entries");
    for (int d = 0; d < s; d++) {
        p->pads_begin[d] = pads[d];
        p->pads_end[d] = pads[s + d];
    }
    const char *auto_pad = korch_node_attr_string(n, "auto_pad", "NOTSET");
    bool upper = strcmp(auto_pad, "SAME_UPPER") == 0, lower = strcmp(auto_pad, "SAME_LOWER") == 0;
    if (strcmp(auto_pad, "VALID") == 0)
        for (int d = 0; d < s; d++) p->pads_begin[d] = p->pads_end[d] = 0;
    const int64_t *out_shape = NULL;
    int n_out_shape = transpose ? korch_node_attr_ints(n, "output_shape", &out_shape) : -1;
    for (int d = 0; d < s; d++) {
        int64_t in = x->dims[2 + d], k = (w->dims[2 + d] - 1) * p->dilations[d] + 1, total;
        if (!transpose) {
            if (!upper && !lower) continue;
            int64_t out = (in + p->strides[d] - 1) / p->strides[d];
            total = (out - 1) * p->strides[d] + k - in;
            if (total < 0) total = 0;
            p->pads_begin[d] = upper ? total / 2 : total - total / 2;
        } else {
            if (n_out_shape < 0 && !upper && !lower) continue;
            int64_t want = y->dims[2 + d];
            total = p->strides[d] * (in - 1) + p->output_padding[d] + k - want;
            p->pads_begin[d] = upper ? total / 2 : total - total / 2;
        }
        p->pads_end[d] = total - p->pads_begin[d];
    }
    return KORCH_OK;
}

static korch_status conv_rule(korch_fission_ctx *ctx, bool transpose) {
    if (fission_in_dtype(ctx, 0) != KORCH_DTYPE_FLOAT32)
        return fission_decline(ctx, "convolution of a non-float32 dtype (linear primitives are float32)");
    korch_prim_linear p;
    KORCH_TRY(conv_params(ctx, transpose, &p));
    int x = fission_in(ctx, 0), w = fission_in(ctx, 1);
    int y = korch_pgraph_linear(ctx->pg, &p, x, w);
    if (fission_has_in(ctx, 2)) {
        int rank = fission_in_shape(ctx, 0)->rank;
        y = fission_binary(ctx, KORCH_EW_ADD, y, fission_channel_view(ctx, fission_in(ctx, 2), rank));
    }
    fission_set_out(ctx, 0, y);
    return fission_done(ctx);
}

KORCH_FISSION_RULE(Conv) { return conv_rule(ctx, false); }
KORCH_FISSION_RULE(ConvTranspose) { return conv_rule(ctx, true); }
