/* An integer matmul or convolution (MatMulInteger's and ConvInteger's
 * fission, docs/quantization.md, "Integer matmuls and convolutions") as
 * oneDNN's int8 matmul or convolution (the convolution the same way, its
 * zero point's correction a map over output positions, zp_correct).
 *
 * The primitive sums (A - a_zp) x B' exactly into int32, A 8-bit and B' the
 * constant weights minus their zero points (folded to int32 by fission).
 * The kernel holding it is one oneDNN matmul of
 *   - the 8-bit A itself (a kernel input); its zero point a_zp, a constant
 *     or a scalar 8-bit kernel input read at every run (DynamicQuantizeLinear
 *     computes it per inference), is subtracted after the matmul as
 *     a_zp * colsum(B') (dnnl_primitive.c, zp_correct: oneDNN's own source
 *     zero point is not exact past 2^24);
 *   - int8 weights: B' when every value fits in int8 (symmetric int8
 *     weights do; uint8 weights with a zero point may not: no candidate);
 *   - an s32 destination, no post-ops (the scale products after it are
 *     float32 and fuse into generated kernels).
 * oneDNN sums u8 x s8 (and s8 x s8) products exactly in int32 with VNNI
 * (dn_int8_exact_cpu), so the result is the exact one, bit for bit: it is
 * still checked against the interpreter like every kernel. */
#include <math.h>
#include <stdlib.h>

#include "backend/dnnl/dnnl_analyze.h"

/* The spec node producing `value` if it is elementwise `op` and read by
 * exactly one spec node, not leaving the kernel; else -1. */
static int sole_producer(const actx *c, int value, korch_ew_op op) {
    int p = c->pg->values[value].producer, cons[2];
    if (p < 0 || an_spec_index(c, p) < 0) return -1;
    const korch_pnode *n = &c->pg->nodes[p];
    if (n->kind != KORCH_PRIM_ELEMENTWISE || n->u.ew.op != op) return -1;
    if (an_is_output(c, value) || an_consumers(c, value, cons, 2) != 1) return -1;
    return p;
}

static bool is_8bit(korch_dtype t) { return t == KORCH_DTYPE_UINT8 || t == KORCH_DTYPE_INT8; }

/* A one-element value through reshapes inside the kernel (listed in nodes). */
static int through_scalar_reshapes(const actx *c, int value, int *nodes, int *n) {
    for (int depth = 0; depth < 4; depth++) {
        int p = c->pg->values[value].producer;
        if (p < 0 || an_spec_index(c, p) < 0 || !an_is_reshape(c, p)) break;
        nodes[(*n)++] = p;
        value = c->pg->nodes[p].inputs[0];
    }
    return value;
}

int an_imatmul_src(actx *c, int linear, int *nodes) {
    const korch_pgraph *pg = c->pg;
    dn_desc *d = c->d;
    int x = pg->nodes[linear].inputs[0], n = 0;
    d->imatmul = true;
    d->src_zp_slot = -1;
    if (is_8bit(pg->values[x].dtype)) { /* no zero point */
        c->dequant_q = x;
        d->src_q = pg->values[x].dtype == KORCH_DTYPE_UINT8 ? dnnl_u8 : dnnl_s8;
        return 0;
    }
    /* SUB(CAST(q -> int32), z): z a constant scalar or CAST(scalar 8-bit input) */
    int sub = sole_producer(c, x, KORCH_EW_SUB);
    if (sub < 0) return -1;
    int cast = sole_producer(c, pg->nodes[sub].inputs[0], KORCH_EW_CAST);
    if (cast < 0) return -1;
    int q = pg->nodes[cast].inputs[0];
    korch_dtype qt = pg->values[q].dtype;
    if (!is_8bit(qt) || an_input_slot(c, q) < 0) return -1;
    nodes[n++] = sub;
    nodes[n++] = cast;
    int z = through_scalar_reshapes(c, pg->nodes[sub].inputs[1], nodes, &n);
    double zp;
    if (an_scalar_constant(&pg->values[z], &zp)) {
        if (zp < -255 || zp > 255 || zp != (double)(int32_t)zp) return -1;
        d->src_zp = (int32_t)zp;
    } else {
        int zc = sole_producer(c, z, KORCH_EW_CAST);
        if (zc < 0) return -1;
        int zq = through_scalar_reshapes(c, pg->nodes[zc].inputs[0], nodes, &n);
        if (!is_8bit(pg->values[zq].dtype) || korch_shape_numel(&pg->values[zq].shape) != 1) return -1;
        d->src_zp_slot = an_input_slot(c, zq);
        if (d->src_zp_slot < 0) return -1;
        d->src_zp_u8 = pg->values[zq].dtype == KORCH_DTYPE_UINT8;
        nodes[n++] = zc;
    }
    c->dequant_q = q;
    d->src_q = qt == KORCH_DTYPE_UINT8 ? dnnl_u8 : dnnl_s8;
    return n;
}

bool an_imatmul_check(actx *c) {
    dn_desc *d = c->d;
    if (!dn_int8_exact_cpu())
        return an_fail(c, "an integer matmul: oneDNN's int8 matmul sums exactly only with VNNI, which this CPU lacks");
    if (!d->wei_constant) return an_fail(c, "an integer matmul with weights computed at run time");
    if ((d->src_zp || d->src_zp_slot >= 0) && d->op == KORCH_LINEAR_MATMUL &&
        (!d->wei_tensor || d->wei_tensor->shape.rank != 2))
        return an_fail(c, "an integer matmul with a zero point and weights that are not one matrix");
    signed char *q = dn_imatmul_weights(d);
    if (!q) {
        korch_error_clear();
        return an_fail(c, "an integer matmul whose weights (minus their zero point) do not all fit in int8");
    }
    free(q);
    return true;
}

signed char *dn_imatmul_weights(const dn_desc *d) {
    const korch_tensor *w = d->wei_tensor;
    if (!w) {
        korch_error(KORCH_ERR_UNSUPPORTED, "oneDNN integer matmul: weights are not constant");
        return NULL;
    }
    int64_t n = korch_tensor_numel(w);
    signed char *q = malloc((size_t)(n > 0 ? n : 1));
    if (!q) {
        korch_error(KORCH_ERR_OUT_OF_MEMORY, "oneDNN integer matmul: out of memory");
        return NULL;
    }
    for (int64_t i = 0; i < n; i++) {
        int64_t v = korch_tensor_get_i64(w, i);
        if (v < -128 || v > 127) {
            free(q);
            korch_error(KORCH_ERR_UNSUPPORTED, "oneDNN integer matmul: weight %lld is outside int8", (long long)v);
            return NULL;
        }
        q[i] = (signed char)v;
    }
    return q;
}

/* ---- the fused requantization (QLinearConv, QLinearMatMul) -------------------- */

int64_t dn_out_channels(const dn_desc *d) {
    return d->op == KORCH_LINEAR_MATMUL ? d->dst.dims[d->dst.ndims - 1] : d->dst.dims[1];
}

/* Weight i of output channel m: a convolution's [M, C/g, k...] rows, a
 * matmul's [K, N] columns. */
static double channel_weight(const dn_desc *d, int64_t m, int64_t i, int64_t per) {
    const korch_tensor *w = d->wei_tensor;
    if (d->op == KORCH_LINEAR_MATMUL) return (double)korch_tensor_get_i64(w, i * dn_out_channels(d) + m);
    return (double)korch_tensor_get_i64(w, m * per + i);
}

/* A constant of `dtype` holding one value, or one per output channel laid
 * along the output's channel axis (right-aligned broadcasting). */
static const korch_tensor *channel_constant(const actx *c, int value, korch_dtype dtype) {
    const korch_pvalue *v = &c->pg->values[value];
    if (!v->is_constant || v->dtype != dtype || v->shape.rank > c->out_rank) return NULL;
    int64_t n = korch_shape_numel(&v->shape);
    if (n != 1 && n != dn_out_channels(c->d)) return NULL;
    for (int j = 0; j < v->shape.rank; j++)
        if (v->shape.dims[j] != 1 && c->out_rank - v->shape.rank + j != c->channel_axis) return NULL;
    return &v->constant;
}

static double channel_value(const korch_tensor *t, int64_t m) {
    return korch_tensor_get_f64(t, korch_tensor_numel(t) == 1 ? 0 : m);
}

/* After the integer convolution or matmul with constant weights
 * (QLinearConv's and QLinearMatMul's fission, rules_quant.c; a matmul's
 * channels are its columns):
 *   [SUB/ADD int32 constant]...  -> CAST float32 -> MUL by a float32
 *   constant -> WHERE(x == x, x, 0) -> ROUND -> [ADD zp] -> CLIP to the
 *   8-bit type's range -> CAST to it (the kernel's output)
 * is oneDNN's int8 convolution with an s32 bias (the constants' sum), the
 * multiplier as output scales, a round post-op, a linear one adding zp and
 * the saturating 8-bit destination. oneDNN converts the sum and the bias to
 * float32, adds them and multiplies by the scale (brgemm's post-op order:
 * vcvtdq2ps, + bias, * scales, then the post-ops); with an unsigned-shifted
 * int8 source it also adds a compensation. All of it is exact when every
 * intermediate is an integer below 2^24 in magnitude, which the constant
 * weights bound (below). Then the kernel
 * computes float(sum + bias) * scale with one rounding, as the reference
 * does, and rounds, adds and saturates as the elementwise steps do. Not
 * offered past the bound, with a non-finite multiplier, or for a source
 * minus a run-time zero point. */
int an_imatmul_requant(actx *c, int v) {
    const korch_pgraph *pg = c->pg;
    dn_desc *d = c->d;
    if (d->op == KORCH_LINEAR_CONV_TRANSPOSE || d->src_zp || d->src_zp_slot >= 0 || c->reshaped || !d->wei_tensor)
        return -1;
    if (d->op == KORCH_LINEAR_MATMUL && d->wei_tensor->shape.rank != 2) return -1;
    int nodes[16], n = 0, node = an_sole_consumer(c, v);
    d->n_iq_terms = 0;
    while ((an_is_ew(c, node, KORCH_EW_SUB) || an_is_ew(c, node, KORCH_EW_ADD)) && d->n_iq_terms < 4) {
        const korch_pnode *e = &pg->nodes[node];
        bool sub = e->u.ew.op == KORCH_EW_SUB;
        if (sub && e->inputs[0] != v) return -1;
        const korch_tensor *t = channel_constant(c, e->inputs[0] == v ? e->inputs[1] : e->inputs[0], KORCH_DTYPE_INT32);
        if (!t || e->inputs[0] == e->inputs[1]) return -1;
        d->iq_term[d->n_iq_terms] = t;
        d->iq_sign[d->n_iq_terms++] = sub ? -1 : 1;
        nodes[n++] = node;
        v = e->outputs[0];
        node = an_sole_consumer(c, v);
    }
    if (!an_is_ew(c, node, KORCH_EW_CAST) || pg->values[pg->nodes[node].outputs[0]].dtype != KORCH_DTYPE_FLOAT32) return -1;
    nodes[n++] = node;
    v = pg->nodes[node].outputs[0];
    node = an_sole_consumer(c, v);
    if (!an_is_ew(c, node, KORCH_EW_MUL)) return -1;
    const korch_pnode *mul = &pg->nodes[node];
    d->iq_scale = channel_constant(c, mul->inputs[0] == v ? mul->inputs[1] : mul->inputs[0], KORCH_DTYPE_FLOAT32);
    if (!d->iq_scale || mul->inputs[0] == mul->inputs[1]) return -1;
    nodes[n++] = node;
    v = mul->outputs[0];
    /* WHERE(v == v, v, 0): NaN to 0, the identity for a finite multiplier
     * (fission leaves it out when it knows the multipliers are finite) */
    int cons[3], nc = an_is_output(c, v) ? -1 : an_consumers(c, v, cons, 3);
    if (nc == 2) {
        int eq = an_is_ew(c, cons[0], KORCH_EW_EQUAL) ? cons[0] : cons[1], where = eq == cons[0] ? cons[1] : cons[0];
        double zero;
        if (!an_is_ew(c, eq, KORCH_EW_EQUAL) || !an_is_ew(c, where, KORCH_EW_WHERE) || pg->nodes[eq].inputs[0] != v ||
            pg->nodes[eq].inputs[1] != v || an_sole_consumer(c, pg->nodes[eq].outputs[0]) != where ||
            pg->nodes[where].inputs[0] != pg->nodes[eq].outputs[0] || pg->nodes[where].inputs[1] != v ||
            !an_scalar_constant(&pg->values[pg->nodes[where].inputs[2]], &zero) || zero != 0)
            return -1;
        nodes[n++] = eq;
        nodes[n++] = where;
        v = pg->nodes[where].outputs[0];
    } else if (nc != 1) {
        return -1;
    }
    node = an_sole_consumer(c, v);
    if (!an_is_ew(c, node, KORCH_EW_ROUND)) return -1;
    int round = node;
    nodes[n++] = node;
    v = pg->nodes[node].outputs[0];
    node = an_sole_consumer(c, v);
    double zp = 0;
    if (an_is_ew(c, node, KORCH_EW_ADD)) {
        const korch_pnode *a = &pg->nodes[node];
        if (!an_scalar_constant(&pg->values[a->inputs[0] == v ? a->inputs[1] : a->inputs[0]], &zp) || zp != rint(zp))
            return -1;
        nodes[n++] = node;
        v = a->outputs[0];
        node = an_sole_consumer(c, v);
    }
    if (!an_is_ew(c, node, KORCH_EW_CLIP)) return -1;
    int clip = node, cc[1];
    nodes[n++] = clip;
    v = pg->nodes[clip].outputs[0];
    if (an_is_output(c, v) || an_consumers(c, v, cc, 1) != 1 || !an_is_ew(c, cc[0], KORCH_EW_CAST)) return -1;
    nodes[n++] = cc[0];
    int y = pg->nodes[cc[0]].outputs[0];
    korch_dtype t = pg->values[y].dtype;
    double lo = t == KORCH_DTYPE_UINT8 ? 0 : -128, hi = t == KORCH_DTYPE_UINT8 ? 255 : 127;
    if ((t != KORCH_DTYPE_UINT8 && t != KORCH_DTYPE_INT8) || pg->nodes[clip].u.ew.alpha != lo ||
        pg->nodes[clip].u.ew.beta != hi || !an_is_output(c, y) || an_consumers(c, y, cc, 1) != 0 || zp < lo || zp > hi ||
        d->n_post + 2 > DN_MAX_POST)
        return -1;
    /* exactness: every intermediate an integer below 2^24. The sum of a
     * source in [0, 255] (uint8, or int8 shifted by 128) stays within
     * 255 * max(positive weights, negative weights) of zero. A uint8 source
     * then needs the sum and the bias representable (one rounding when they
     * are added); an int8 one also the shift's compensation 128 * sum(w), in
     * whatever order oneDNN adds the three: their magnitudes together. */
    int64_t M = dn_out_channels(d), per = korch_tensor_numel(d->wei_tensor) / (M > 0 ? M : 1);
    for (int64_t m = 0; m < M; m++) {
        double pos = 0, neg = 0, bias = 0, s = channel_value(d->iq_scale, m);
        for (int64_t i = 0; i < per; i++) {
            double w = channel_weight(d, m, i, per);
            if (w > 0) pos += w;
            else neg -= w;
        }
        for (int k = 0; k < d->n_iq_terms; k++) bias += d->iq_sign[k] * channel_value(d->iq_term[k], m);
        double reach = 255.0 * fmax(pos, neg), limit = 16777216.0;
        bool exact = d->src_q == dnnl_u8 ? reach < limit && fabs(bias) < limit
                                         : reach + 128.0 * fmax(pos, neg) + fabs(bias) < limit;
        if (!exact || !isfinite(s)) return -1;
    }
    d->post[d->n_post++] = (dn_post){.kind = DN_POST_ELTWISE, .alg = dnnl_eltwise_round, .slot = -1, .node = round};
    if (zp != 0)
        d->post[d->n_post++] = (dn_post){.kind = DN_POST_ELTWISE, .alg = dnnl_eltwise_linear, .alpha = 1.0f,
                                         .beta = (float)zp, .slot = -1, .node = clip};
    d->dst_q = t == KORCH_DTYPE_UINT8 ? dnnl_u8 : dnnl_s8;
    for (int i = 0; i < n; i++) c->used[an_spec_index(c, nodes[i])] = true;
    return y;
}

korch_status dn_imatmul_requant_params(const dn_desc *d, int32_t **bias, float **scale) {
    int64_t M = dn_out_channels(d);
    *bias = calloc((size_t)M + 1, sizeof **bias);
    *scale = malloc(((size_t)M + 1) * sizeof **scale);
    if (!*bias || !*scale) {
        free(*bias);
        free(*scale);
        *bias = NULL;
        *scale = NULL;
        return korch_error(KORCH_ERR_OUT_OF_MEMORY, "oneDNN integer kernel: out of memory");
    }
    for (int64_t m = 0; m < M; m++) {
        int64_t b = 0;
        for (int k = 0; k < d->n_iq_terms; k++)
            b += d->iq_sign[k] * korch_tensor_get_i64(d->iq_term[k], korch_tensor_numel(d->iq_term[k]) == 1 ? 0 : m);
        (*bias)[m] = (int32_t)b;
        (*scale)[m] = (float)channel_value(d->iq_scale, m);
    }
    return KORCH_OK;
}
