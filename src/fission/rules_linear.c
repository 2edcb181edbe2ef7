/* Fission rules for matrix multiplication and convolution: one linear
 * primitive, with transposes, scales and bias additions around it. */
#include <string.h>

#include "fission/rules.h"
#include "ops/window.h"

/* MatMul with numpy semantics: rank-1 operands become matrices (1, K) or
 * (K, 1), and the result is reshaped to the inferred output shape. */
int fission_matmul(korch_fission_ctx *ctx, int a, int b, const korch_shape *out_shape) {
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
    fission_set_out(ctx, 0, fission_matmul(ctx, fission_in(ctx, 0), fission_in(ctx, 1), fission_out_shape(ctx, 0)));
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
korch_status fission_conv_params(korch_fission_ctx *ctx, bool transpose, korch_prim_linear *p) {
    return fission_conv_params_w(ctx, transpose, 1, p);
}

korch_status fission_conv_params_w(korch_fission_ctx *ctx, bool transpose, int w_input, korch_prim_linear *p) {
    const korch_node *n = ctx->node;
    const korch_shape *x = fission_in_shape(ctx, 0), *w = fission_in_shape(ctx, w_input);
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

/* Is p a pointwise (1x1, stride 1, no padding, one group) convolution? */
static bool pointwise(const korch_prim_linear *p, const korch_shape *w) {
    if (p->op != KORCH_LINEAR_CONV || p->group != 1) return false;
    for (int d = 0; d < p->spatial; d++)
        if (w->dims[2 + d] != 1 || p->strides[d] != 1 || p->dilations[d] != 1 || p->pads_begin[d] != 0 ||
            p->pads_end[d] != 0)
            return false;
    return true;
}

/* Channels [from, from + c) of constant weights W (M, C, 1...): a new
 * constant (M, c, 1...), or -1. */
static int weight_slice(korch_fission_ctx *ctx, const korch_tensor *W, int64_t from, int64_t c) {
    korch_shape s = W->shape;
    int64_t M = s.dims[0], C = s.dims[1];
    s.dims[1] = c;
    korch_tensor t;
    if (korch_tensor_alloc(&t, KORCH_DTYPE_FLOAT32, &s) != KORCH_OK) return -1;
    const float *src = W->data;
    float *dst = t.data;
    for (int64_t m = 0; m < M; m++) memcpy(dst + m * c, src + m * C + from, (size_t)c * sizeof(float));
    return fission_constant(ctx, &t);
}

/* A pointwise convolution of a channel concatenation whose parts include
 * upsampled tensors (SegFormer's decode head: four feature maps of 16x16
 * to 128x128 brought to 128x128 by bilinear Resizes, concatenated to 1024
 * channels, mixed by a 1x1 convolution to 256, half of the model's FLOPs).
 * A pointwise convolution of a concatenation is the sum of pointwise
 * convolutions of its parts (the weights split by input channel), and one
 * of a resized part commutes with the resize (a per-plane linear map, the
 * same for every channel; not tf_crop_and_resize, whose extrapolated
 * constant does not commute), so
 *
 *     conv(concat(R1(a1), ..., b, ...), W) = R1(conv(a1, W1)) + ... + conv(b, Wb) + ...
 *
 * with each convolution at its part's own resolution, and the concatenation
 * never materialised. Exact in real arithmetic; in float32 the sums are
 * ordered differently, which plan verification measures against the
 * reference executor, which runs the model as written (docs/fission.md).
 * A part is commuted only when it is upsampled (fewer multiply-adds) and
 * the convolution does not widen it (M output channels <= its own: the
 * resize then moves no more data than before); other parts are convolved
 * as they are. Applied only when some part commutes, which is where it
 * saves work. Returns the sum, or -2 when the pattern does not apply. */
/* The Resize / Upsample node producing concatenation part u, when the
 * convolution (m output channels) commutes with it: an upsampling, linear in
 * its input, of a part at least m channels wide whose input is computed;
 * else NULL. */
static const korch_node *commuting_resize(const korch_fission_ctx *ctx, int u, int64_t m) {
    const korch_graph *g = ctx->g;
    int r = g->values[u].producer;
    if (r < 0 || (strcmp(g->nodes[r].op_type, "Resize") != 0 && strcmp(g->nodes[r].op_type, "Upsample") != 0))
        return NULL;
    const korch_node *n = &g->nodes[r];
    int64_t in_elems, out_elems;
    if (n->inputs[0] < 0 || ctx->vmap[n->inputs[0]] < 0 || g->values[u].shape.dims[1] < m ||
        !korch_fission_resize_linear_map(g, n, &in_elems, &out_elems) || in_elems >= out_elems)
        return NULL;
    return n;
}

static int pointwise_of_concat(korch_fission_ctx *ctx, const korch_prim_linear *p) {
    const korch_graph *g = ctx->g;
    const korch_tensor *W = fission_const_in(ctx, 1);
    int xv = ctx->node->inputs[0];
    if (!W || W->dtype != KORCH_DTYPE_FLOAT32 || !pointwise(p, &W->shape) || xv < 0) return -2;
    int cn = g->values[xv].producer;
    if (cn < 0 || strcmp(g->nodes[cn].op_type, "Concat") != 0 || g->nodes[cn].n_inputs < 2) return -2;
    const korch_node *concat = &g->nodes[cn];
    int rank = g->values[xv].shape.rank;
    int64_t axis = korch_node_attr_int(concat, "axis", 0);
    if (axis < 0) axis += rank;
    if (axis != 1) return -2;
    int64_t m = W->shape.dims[0];
    bool commutes = false;
    for (int j = 0; j < concat->n_inputs; j++) {
        int u = concat->inputs[j];
        if (u < 0 || !ctx->vmap || ctx->vmap[u] < 0 || g->values[u].dtype != KORCH_DTYPE_FLOAT32) return -2;
        commutes = commutes || commuting_resize(ctx, u, m);
    }
    if (!commutes) return -2;
    int y = -1;
    int64_t from = 0;
    for (int j = 0; j < concat->n_inputs; j++) {
        int u = concat->inputs[j];
        int64_t c = g->values[u].shape.dims[1];
        const korch_node *resize = commuting_resize(ctx, u, m);
        int part = resize ? ctx->vmap[resize->inputs[0]] : ctx->vmap[u];
        int wj = weight_slice(ctx, W, from, c);
        int t = part < 0 || wj < 0 ? -1 : korch_pgraph_linear(ctx->pg, p, part, wj);
        if (resize) t = korch_fission_resize_value(ctx, resize, t);
        y = j == 0 ? t : fission_binary(ctx, KORCH_EW_ADD, y, t);
        from += c;
    }
    return y;
}

static korch_status conv_rule(korch_fission_ctx *ctx, bool transpose) {
    if (fission_in_dtype(ctx, 0) != KORCH_DTYPE_FLOAT32)
        return fission_decline(ctx, "convolution of a non-float32 dtype (linear primitives are float32)");
    korch_prim_linear p;
    KORCH_TRY(fission_conv_params(ctx, transpose, &p));
    int x = fission_in(ctx, 0), w = fission_in(ctx, 1);
    int y = transpose ? -2 : pointwise_of_concat(ctx, &p);
    if (y == -2) y = korch_pgraph_linear(ctx->pg, &p, x, w);
    if (fission_has_in(ctx, 2)) {
        int rank = fission_in_shape(ctx, 0)->rank;
        y = fission_binary(ctx, KORCH_EW_ADD, y, fission_channel_view(ctx, fission_in(ctx, 2), rank));
    }
    fission_set_out(ctx, 0, y);
    return fission_done(ctx);
}

KORCH_FISSION_RULE(Conv) { return conv_rule(ctx, false); }
KORCH_FISSION_RULE(ConvTranspose) { return conv_rule(ctx, true); }
