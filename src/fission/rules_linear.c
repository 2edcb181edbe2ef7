/* Fission rules for matrix multiplication and convolution: one linear
 * primitive, with transposes, scales and bias additions around it. */
#include <string.h>

#include "fission/rules.h"
#include "ops/window.h"

/* MatMul with numpy semantics: rank-1 operands become matrices (1, K) or
 * (K, 1), and the result is reshaped to the inferred output shape. */
static int matmul(korch_fission_ctx *ctx, int a, int b, const korch_shape *out_shape) {
    if (a < 0 || b < 0) return -1;
    /* copies: adding nodes may move the value array */
    const korch_shape sa = *fission_shape(ctx, a), sb = *fission_shape(ctx, b);
    if (sa.rank == 1) {
        korch_shape m = {.rank = 2, .dims = {1, sa.dims[0]}};
        a = korch_pgraph_reshape(ctx->pg, a, &m);
    }
    if (sb.rank == 1) {
        korch_shape m = {.rank = 2, .dims = {sb.dims[0], 1}};
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

/* Convolution parameters exactly as the reference kernels derive them:
 * forward windows through ops/window.h; for the transpose, the same split
 * of a derived total padding as ConvTranspose's reference (SAME_UPPER puts
 * the odd unit at the end), and an end padding that reproduces the inferred
 * output size (negative when output_shape asks for more than the full
 * output: those positions receive only the bias). */
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
    korch_op_ctx octx = {.graph = ctx->g, .node = n};
    if (!transpose) {
        korch_window win;
        KORCH_TRY(korch_window_forward(&octx, x, w->dims + 2, false, &win));
        for (int d = 0; d < s; d++) {
            int j = 3 - s + d;
            p->strides[d] = win.stride[j];
            p->dilations[d] = win.dilation[j];
            p->pads_begin[d] = win.pad_begin[j];
            p->pads_end[d] = win.pad_end[j];
        }
        return KORCH_OK;
    }
    int64_t pads[6];
    korch_auto_pad auto_pad;
    KORCH_TRY(korch_window_ints(&octx, "strides", s, 1, 1, p->strides));
    KORCH_TRY(korch_window_ints(&octx, "dilations", s, 1, 1, p->dilations));
    KORCH_TRY(korch_window_ints(&octx, "pads", 2 * s, 0, 0, pads));
    KORCH_TRY(korch_window_ints(&octx, "output_padding", s, 0, 0, p->output_padding));
    KORCH_TRY(korch_window_auto_pad(&octx, &auto_pad));
    const int64_t *out_shape = NULL;
    int n_out_shape = korch_node_attr_ints(n, "output_shape", &out_shape);
    bool same = auto_pad == KORCH_AUTO_PAD_SAME_UPPER || auto_pad == KORCH_AUTO_PAD_SAME_LOWER;
    for (int d = 0; d < s; d++) {
        int64_t in = x->dims[2 + d], k = (w->dims[2 + d] - 1) * p->dilations[d] + 1;
        int64_t full = p->strides[d] * (in - 1) + p->output_padding[d] + k;
        if (n_out_shape >= 0 || same) {
            int64_t target = n_out_shape >= 0 ? out_shape[n_out_shape - s + d] : in * p->strides[d];
            int64_t total = full - target > 0 ? full - target : 0;
            p->pads_begin[d] = auto_pad == KORCH_AUTO_PAD_SAME_UPPER ? total / 2 : total - total / 2;
        } else {
            p->pads_begin[d] = auto_pad == KORCH_AUTO_PAD_VALID ? 0 : pads[d];
        }
        p->pads_end[d] = full - p->pads_begin[d] - y->dims[2 + d];
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
