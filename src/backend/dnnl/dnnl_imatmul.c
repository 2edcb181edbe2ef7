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
