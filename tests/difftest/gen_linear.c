/* Linear operators: Conv (1x1, 3x3, 5x5, depthwise, grouped, strided,
 * dilated, asymmetric pads, with and without bias), ConvTranspose, MatMul
 * (2-D, batched, constant on either side, two activations) and Gemm (transA,
 * transB, alpha, beta, every bias shape).
 *
 * Weights are uniform in +-sqrt(3 / fan_in) (variance 1 / fan_in), so an
 * output has about the scale of the input: magnitudes stay moderate through
 * chains of linear operators without any renormalisation. */
#include <math.h>

#include "gen_internal.h"

/* axis: the output-channel axis, for per-axis dequantized weights (features) */
static const char *weights(dt_gen *g, const korch_shape *s, double fan_in, int axis) {
    double a = sqrt(3.0 / (fan_in < 1 ? 1 : fan_in));
    const char *dq = g->features ? dt_feature_weights(g, s, a, axis) : NULL;
    return dq ? dq : dt_const_rand(g, s, -a, a);
}

static int64_t window_out(int64_t in, int k, int stride, int dil, int pb, int pe) {
    int64_t span = in + pb + pe - (int64_t)dil * (k - 1) - 1;
    return span < 0 ? 0 : span / stride + 1;
}

int dt_conv(dt_gen *g, int x) {
    const dt_val *v = &g->vals[x];
    if (v->shape.rank != 4) return -1;
    dt_rng *r = &g->rng;
    int64_t n = v->shape.dims[0], c = v->shape.dims[1], h = v->shape.dims[2], wd = v->shape.dims[3];
    int kind = g->pointwise ? 0 : dt_int(r, 0, 6), k = 1, stride = 1, dil = 1, group = 1;
    int64_t cout = dt_int(r, 1, 24);
    const char *what = "Conv 1x1";
    switch (kind) {
    case 0: break;
    case 1: k = 3, what = "Conv 3x3"; break;
    case 2: k = 3, group = (int)c, cout = c * dt_int(r, 1, 2), what = "Conv depthwise"; break;
    case 3: {
        int divs[8], nd = 0;
        for (int d = 2; d < c && nd < 8; d++)
            if (c % d == 0) divs[nd++] = d;
        if (nd == 0) return -1;
        group = divs[dt_int(r, 0, nd - 1)];
        k = dt_chance(r, 0.5) ? 3 : 1;
        cout = (int64_t)group * dt_int(r, 1, 3);
        what = "Conv grouped";
        break;
    }
    case 4: k = dt_chance(r, 0.5) ? 3 : 1, stride = 2, what = "Conv strided"; break;
    case 5: k = 3, dil = 2, what = "Conv dilated"; break;
    default: k = 5, what = "Conv 5x5"; break;
    }
    int pads[4] = {0, 0, 0, 0};
    int mode = dt_int(r, 0, 3);
    if (mode <= 1) pads[0] = pads[1] = pads[2] = pads[3] = dil * (k / 2); /* "same" */
    else if (mode == 2)
        for (int i = 0; i < 4; i++) pads[i] = dt_int(r, 0, k - 1), what = k > 1 ? "Conv asymmetric pads" : what;
    int64_t oh = window_out(h, k, stride, dil, pads[0], pads[2]), ow = window_out(wd, k, stride, dil, pads[1], pads[3]);
    if (oh < 1 || ow < 1 || cout > 32) return -1;
    korch_shape out = dt_shape(4, (int64_t[]){n, cout, oh, ow});
    if (dt_numel(&out) > DT_MAX_ELEMS) return -1;
    bool bias = dt_chance(r, 0.6);
    korch_shape ws = dt_shape(4, (int64_t[]){cout, c / group, k, k});
    korch_shape bs = dt_shape(1, (int64_t[]){cout});
    int y = dt_new_val(g, &out, v->mag + (bias ? 0.2 : 0));
    if (y < 0) return -1;
    const char *ins[] = {dt_use(g, x), weights(g, &ws, (double)(c / group) * k * k, 0),
                         bias ? dt_const_rand(g, &bs, -0.2, 0.2) : NULL};
    const char *outs[] = {g->vals[y].name};
    Onnx__NodeProto *node = dt_node(g, "Conv", bias ? 3 : 2, ins, 1, outs);
    korch_onnx_attr_ints(&g->w, node, "kernel_shape", (int64_t[]){k, k}, 2);
    korch_onnx_attr_ints(&g->w, node, "strides", (int64_t[]){stride, stride}, 2);
    korch_onnx_attr_ints(&g->w, node, "dilations", (int64_t[]){dil, dil}, 2);
    korch_onnx_attr_ints(&g->w, node, "pads", (int64_t[]){pads[0], pads[1], pads[2], pads[3]}, 4);
    if (group > 1 || dt_chance(r, 0.3)) korch_onnx_attr_int(&g->w, node, "group", group);
    dt_cover(g, what);
    if (!bias) dt_cover(g, "Conv without bias");
    return y;
}

int dt_conv_transpose(dt_gen *g, int x) {
    const dt_val *v = &g->vals[x];
    if (v->shape.rank != 4) return -1;
    dt_rng *r = &g->rng;
    int64_t n = v->shape.dims[0], c = v->shape.dims[1], h = v->shape.dims[2], wd = v->shape.dims[3];
    static const int variants[][4] = {{2, 2, 0, 0}, {3, 1, 1, 0}, {3, 2, 1, 1}, {4, 2, 1, 0}, {1, 1, 0, 0}};
    const int *var = variants[dt_int(r, 0, 4)];
    int k = var[0], stride = var[1], pad = var[2], opad = var[3], group = 1;
    if (c % 2 == 0 && c > 2 && dt_chance(r, 0.25)) group = 2;
    int64_t cout = (int64_t)group * dt_int(r, 1, 8);
    int64_t oh = (h - 1) * stride - 2 * pad + k + opad, ow = (wd - 1) * stride - 2 * pad + k + opad;
    korch_shape out = dt_shape(4, (int64_t[]){n, cout, oh, ow});
    if (oh < 1 || ow < 1 || dt_numel(&out) > DT_MAX_ELEMS) return -1;
    bool bias = dt_chance(r, 0.5);
    korch_shape ws = dt_shape(4, (int64_t[]){c, cout / group, k, k});
    korch_shape bs = dt_shape(1, (int64_t[]){cout});
    int y = dt_new_val(g, &out, v->mag + (bias ? 0.2 : 0));
    if (y < 0) return -1;
    /* each output sums about (c / group) * k * k / stride^2 products */
    double fan = (double)(c / group) * k * k / (stride * stride);
    const char *ins[] = {dt_use(g, x), weights(g, &ws, fan, 1), bias ? dt_const_rand(g, &bs, -0.2, 0.2) : NULL};
    const char *outs[] = {g->vals[y].name};
    Onnx__NodeProto *node = dt_node(g, "ConvTranspose", bias ? 3 : 2, ins, 1, outs);
    korch_onnx_attr_ints(&g->w, node, "kernel_shape", (int64_t[]){k, k}, 2);
    korch_onnx_attr_ints(&g->w, node, "strides", (int64_t[]){stride, stride}, 2);
    korch_onnx_attr_ints(&g->w, node, "pads", (int64_t[]){pad, pad, pad, pad}, 4);
    if (opad) korch_onnx_attr_ints(&g->w, node, "output_padding", (int64_t[]){opad, opad}, 2);
    if (group > 1) korch_onnx_attr_int(&g->w, node, "group", group);
    dt_cover(g, group > 1 ? "ConvTranspose grouped" : stride > 1 ? "ConvTranspose strided" : "ConvTranspose");
    return y;
}

int dt_matmul(dt_gen *g, int x) {
    const dt_val *v = &g->vals[x];
    int rank = v->shape.rank;
    if (rank < 2) return -1;
    dt_rng *r = &g->rng;
    int64_t m = v->shape.dims[rank - 2], k = v->shape.dims[rank - 1], nn = dt_int(r, 1, 24);
    korch_shape out = v->shape;
    /* DT_FEAT_INT8 (dequantized int8 weights): x @ W or batched weights only */
    int kind = g->int8_weights ? (dt_chance(r, 0.7) ? 0 : 2) : dt_int(r, 0, 3);
    const char *a = NULL, *b = NULL, *what;
    double mag = v->mag;
    if (kind == 0 || (kind == 2 && rank < 3)) { /* x @ W */
        out.dims[rank - 1] = nn;
        if (dt_numel(&out) > DT_MAX_ELEMS) return -1;
        korch_shape ws = dt_shape(2, (int64_t[]){k, nn});
        a = dt_use(g, x), b = weights(g, &ws, (double)k, 1);
        what = rank == 2 ? "MatMul 2-D" : "MatMul batched x@W";
    } else if (kind == 1) { /* W @ x */
        out.dims[rank - 2] = nn;
        if (dt_numel(&out) > DT_MAX_ELEMS) return -1;
        korch_shape ws = dt_shape(2, (int64_t[]){nn, m});
        a = weights(g, &ws, (double)m, 0), b = dt_use(g, x);
        what = "MatMul W@x";
    } else if (kind == 2) { /* batched weights, one matrix per batch entry */
        out.dims[rank - 1] = nn;
        if (dt_numel(&out) > DT_MAX_ELEMS) return -1;
        korch_shape ws = dt_shape(3, (int64_t[]){v->shape.dims[rank - 3], k, nn});
        a = dt_use(g, x), b = weights(g, &ws, (double)k, 2);
        what = "MatMul batched weights";
    } else { /* x @ x^T: two activations */
        out.dims[rank - 1] = m;
        if (dt_numel(&out) > DT_MAX_ELEMS) return -1;
        korch_shape ts = v->shape;
        ts.dims[rank - 2] = k, ts.dims[rank - 1] = m;
        int64_t perm[KORCH_MAX_RANK];
        for (int i = 0; i < rank; i++) perm[i] = i;
        perm[rank - 2] = rank - 1, perm[rank - 1] = rank - 2;
        int t = dt_new_val(g, &ts, v->mag);
        if (t < 0) return -1;
        const char *tin[] = {dt_use(g, x)}, *tout[] = {g->vals[t].name};
        Onnx__NodeProto *tn = dt_node(g, "Transpose", 1, tin, 1, tout);
        korch_onnx_attr_ints(&g->w, tn, "perm", perm, rank);
        a = dt_use(g, x), b = dt_use(g, t);
        mag = v->mag * v->mag * sqrt((double)k);
        what = "MatMul x@xT";
    }
    int y = dt_binary_named(g, "MatMul", a, b, &out, mag);
    if (y >= 0) dt_cover(g, what);
    return y;
}

int dt_gemm(dt_gen *g, int x) {
    const dt_val *v = &g->vals[x];
    if (v->shape.rank != 2) return -1;
    dt_rng *r = &g->rng;
    bool ta = dt_chance(r, 0.3), tb = dt_chance(r, 0.5);
    int64_t m = ta ? v->shape.dims[1] : v->shape.dims[0], k = ta ? v->shape.dims[0] : v->shape.dims[1];
    int64_t n = dt_int(r, 1, 40);
    static const float alphas[] = {1, 1, 0.5f, 1.5f, -1}, betas[] = {1, 1, 0.5f, 2};
    float alpha = DT_PICK(r, alphas), beta = DT_PICK(r, betas);
    korch_shape out = dt_shape(2, (int64_t[]){m, n});
    if (dt_numel(&out) > DT_MAX_ELEMS) return -1;
    korch_shape bs = tb ? dt_shape(2, (int64_t[]){n, k}) : dt_shape(2, (int64_t[]){k, n});
    int ckind = dt_int(r, 0, 5); /* 5: no C */
    korch_shape cs;
    static const char *const cnames[] = {"Gemm C (N)", "Gemm C (1,N)", "Gemm C (M,N)", "Gemm C (M,1)", "Gemm C scalar",
                                         "Gemm no C"};
    switch (ckind) {
    case 0: cs = dt_shape(1, (int64_t[]){n}); break;
    case 1: cs = dt_shape(2, (int64_t[]){1, n}); break;
    case 2: cs = dt_shape(2, (int64_t[]){m, n}); break;
    case 3: cs = dt_shape(2, (int64_t[]){m, 1}); break;
    default: cs = dt_shape(0, NULL); break;
    }
    int y = dt_new_val(g, &out, fabs(alpha) * v->mag + (ckind < 5 ? 0.3 * beta : 0));
    if (y < 0) return -1;
    const char *ins[] = {dt_use(g, x), weights(g, &bs, (double)k, tb ? 0 : 1), ckind < 5 ? dt_const_rand(g, &cs, -0.3, 0.3) : NULL};
    const char *outs[] = {g->vals[y].name};
    Onnx__NodeProto *node = dt_node(g, "Gemm", ckind < 5 ? 3 : 2, ins, 1, outs);
    if (ta) korch_onnx_attr_int(&g->w, node, "transA", 1);
    if (tb) korch_onnx_attr_int(&g->w, node, "transB", 1);
    if (alpha != 1 || dt_chance(r, 0.2)) korch_onnx_attr_float(&g->w, node, "alpha", alpha);
    if (beta != 1 || dt_chance(r, 0.2)) korch_onnx_attr_float(&g->w, node, "beta", beta);
    dt_cover(g, cnames[ckind]);
    if (ta) dt_cover(g, "Gemm transA");
    if (tb) dt_cover(g, "Gemm transB");
    if (alpha != 1 || beta != 1) dt_cover(g, "Gemm alpha/beta");
    return y;
}
