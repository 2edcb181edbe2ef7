/* A dequantized source, absorbed into oneDNN's int8 convolution or matmul
 * (docs/quantization.md, "int8 convolutions and matmuls").
 *
 * A QDQ model's convolution (or matmul: the same, with its weights' columns
 * as the output channels and no padding) reads DequantizeLinear(q) =
 * (float(q) - zp) * s, which fission writes as CAST -> SUB -> MUL (no SUB
 * for a zero point of 0)
 * before the linear primitive; its weights were folded to float32 constants
 * fl(w_q * s_w). A kernel holding those nodes and the convolution, with the
 * 8-bit q a kernel input, is one oneDNN convolution of the u8/s8 source with
 * zero point zp, of the int8 weights recovered exactly
 * (dnnl_int8_weights.inc), scaled by s * s_w[c] (oneDNN's output scales),
 * followed by the usual post-op chain. oneDNN pads with the zero point (a
 * padded tap adds (zp - zp) * w = 0), as ONNX pads the dequantized tensor
 * with zeros.
 *
 * What differs from the float32 graph is the rounding: the integer sum is
 * exact and rounded once when scaled, where the float32 convolution rounds
 * every partial sum. It is a candidate like any other: checked against the
 * primitive interpreter, timed, chosen by the binary program against the
 * float32 kernels, and the plan verified (docs/verification.md).
 *
 * Offered only where oneDNN's int8 kernels sum u8 x s8 products exactly:
 * with VNNI (vpdpbusd accumulates into int32). Without it oneDNN's AVX-512
 * int8 kernels use vpmaddubsw, which saturates pairs of products at int16. */
#include <math.h>
#include <stdlib.h>

#include "backend/dnnl/dnnl_analyze.h"
#include "backend/dnnl/dnnl_int8_weights.inc"
#include "ir/indexmap.h"

bool dn_int8_exact_cpu(void) {
    dnnl_cpu_isa_t isa = dnnl_get_effective_cpu_isa();
    return (isa & dnnl_cpu_isa_avx512_core_vnni) == dnnl_cpu_isa_avx512_core_vnni ||
           (isa & dnnl_cpu_isa_avx2_vnni) == dnnl_cpu_isa_avx2_vnni;
}

/* The spec node producing `value` if it is the elementwise `op`, and value
 * is read by exactly one spec node and does not leave the kernel; else -1. */
static int chain_node(const actx *c, int value, korch_ew_op op) {
    int p = c->pg->values[value].producer;
    if (p < 0 || an_spec_index(c, p) < 0) return -1;
    const korch_pnode *n = &c->pg->nodes[p];
    if (n->kind != KORCH_PRIM_ELEMENTWISE || n->u.ew.op != op) return -1;
    int cons[2];
    if (an_is_output(c, value) || an_consumers(c, value, cons, 2) != 1) return -1;
    return p;
}

int an_src_dequant(actx *c, int linear, int *nodes) {
    const korch_pgraph *pg = c->pg;
    const korch_pnode *lin = &pg->nodes[linear];
    if (lin->kind != KORCH_PRIM_LINEAR || lin->u.linear.bf16) return 0;
    bool conv = lin->u.linear.op == KORCH_LINEAR_CONV;
    if (!conv && lin->u.linear.op != KORCH_LINEAR_MATMUL) return 0;
    int x = lin->inputs[0];
    /* a transpose between the dequantization and the convolution (the
     * layout pass's, before a channels-last convolution of a channels-first
     * tensor) becomes the source's strides (dnnl_transpose.c) */
    int t = pg->values[x].producer, cons[2];
    int64_t perm[KORCH_MAX_RANK];
    bool transposed = conv && t >= 0 && an_spec_index(c, t) >= 0 && pg->nodes[t].kind == KORCH_PRIM_LAYOUT &&
                      pg->nodes[t].n_inputs == 1 && korch_layout_as_transpose(pg, t, perm) && !an_is_output(c, x) &&
                      an_consumers(c, x, cons, 2) == 1 &&
                      pg->values[x].shape.rank == pg->values[lin->outputs[0]].shape.rank;
    if (transposed) x = pg->nodes[t].inputs[0];
    int mul = chain_node(c, x, KORCH_EW_MUL);
    if (mul < 0) return 0;
    const korch_pnode *m = &pg->nodes[mul];
    double s, zp = 0;
    int a;
    if (an_scalar_constant(&pg->values[m->inputs[1]], &s)) a = m->inputs[0];
    else if (an_scalar_constant(&pg->values[m->inputs[0]], &s)) a = m->inputs[1];
    else return 0;
    if (!(s > 0 && s <= 3.4e38)) return 0;
    int n = 0;
    nodes[n++] = mul;
    int sub = chain_node(c, a, KORCH_EW_SUB);
    if (sub >= 0) {
        if (!an_scalar_constant(&pg->values[pg->nodes[sub].inputs[1]], &zp)) return 0;
        nodes[n++] = sub;
        a = pg->nodes[sub].inputs[0];
    }
    int cast = chain_node(c, a, KORCH_EW_CAST);
    if (cast < 0) return 0;
    int q = pg->nodes[cast].inputs[0];
    korch_dtype qt = pg->values[q].dtype;
    double lo = qt == KORCH_DTYPE_UINT8 ? 0 : -128, hi = qt == KORCH_DTYPE_UINT8 ? 255 : 127;
    if ((qt != KORCH_DTYPE_UINT8 && qt != KORCH_DTYPE_INT8) || an_input_slot(c, q) < 0 ||
        !korch_shape_equal(&pg->values[q].shape, &pg->values[x].shape) || zp != rint(zp) || zp < lo || zp > hi)
        return 0;
    nodes[n++] = cast;
    if (transposed) { /* absorbed by setup_linear (an_absorb_src_transpose), reading q */
        c->src_transpose = t;
        for (int k = 0; k < KORCH_MAX_RANK; k++) c->src_perm[k] = perm[k];
    }
    c->dequant_q = q;
    c->d->src_q = qt == KORCH_DTYPE_UINT8 ? dnnl_u8 : dnnl_s8;
    c->d->src_zp = (int32_t)zp;
    c->d->src_scale = (float)s;
    return n;
}

korch_status dn_int8_weights(const dn_desc *d, signed char **q, float **scales) {
    *q = NULL;
    *scales = NULL;
    int64_t numel = 1;
    for (int i = 0; i < d->wei.ndims; i++) numel *= d->wei.dims[i];
    int64_t channels = dn_out_channels(d);
    if (!d->wei_constant || !d->wei_data || channels < 1 || numel % channels)
        return korch_error(KORCH_ERR_UNSUPPORTED, "oneDNN int8 (%s): weights are not constant", d->text);
    *q = malloc((size_t)numel);
    *scales = malloc((size_t)channels * sizeof **scales);
    if (!*q || !*scales) {
        free(*q);
        free(*scales);
        *q = NULL;
        *scales = NULL;
        return korch_error(KORCH_ERR_OUT_OF_MEMORY, "oneDNN int8 (%s): out of memory", d->text);
    }
    /* a matmul's channels are its columns: weight i of column c at i * N + c */
    bool matmul = d->op == KORCH_LINEAR_MATMUL;
    int64_t per = numel / channels;
    if (kx_dn_int8_weights(d->wei_data, channels, per, matmul ? 1 : per, matmul ? channels : 1, *q, *scales))
        return KORCH_OK;
    free(*q);
    free(*scales);
    *q = NULL;
    *scales = NULL;
    return korch_error(KORCH_ERR_UNSUPPORTED,
                       "oneDNN int8 (%s): the float32 weights are not int8 values times a scale per output channel",
                       d->text);
}

bool an_int8_check(actx *c) {
    if (!c->d->src_q) return true;
    if (!dn_int8_exact_cpu())
        return an_fail(c, "a dequantized source: oneDNN's int8 convolution sums exactly only with VNNI, which this "
                          "CPU lacks");
    signed char *q;
    float *scales;
    if (dn_int8_weights(c->d, &q, &scales) != KORCH_OK) {
        an_fail(c, "%s", korch_last_error());
        korch_error_clear();
        return false;
    }
    free(q);
    free(scales);
    return true;
}

/* ---- the requantization tail -------------------------------------------------- */

int an_requant_tail(actx *c, int v) {
    const korch_pgraph *pg = c->pg;
    if (!c->d->src_q || c->reshaped) return -1;
    /* DIV(v, s) exact, then WHERE(q == q, q, 0): NaN to the zero point */
    int div = an_sole_consumer(c, v);
    double s, zero, zp = 0;
    if (!an_is_ew(c, div, KORCH_EW_DIV) || pg->nodes[div].u.ew.alpha == 0 || pg->nodes[div].inputs[0] != v ||
        !an_scalar_constant(&pg->values[pg->nodes[div].inputs[1]], &s) || !(s > 0 && s <= 3.4e38))
        return -1;
    int q0 = pg->nodes[div].outputs[0], cons[3];
    if (an_is_output(c, q0) || an_consumers(c, q0, cons, 3) != 2) return -1;
    int eq = an_is_ew(c, cons[0], KORCH_EW_EQUAL) ? cons[0] : cons[1], where = eq == cons[0] ? cons[1] : cons[0];
    if (!an_is_ew(c, eq, KORCH_EW_EQUAL) || !an_is_ew(c, where, KORCH_EW_WHERE) || pg->nodes[eq].inputs[0] != q0 ||
        pg->nodes[eq].inputs[1] != q0 || an_sole_consumer(c, pg->nodes[eq].outputs[0]) != where)
        return -1;
    const korch_pnode *w = &pg->nodes[where];
    if (w->inputs[0] != pg->nodes[eq].outputs[0] || w->inputs[1] != q0 ||
        !an_scalar_constant(&pg->values[w->inputs[2]], &zero) || zero != 0)
        return -1;
    /* ROUND, [ADD zp], CLIP to the type's range, CAST */
    int round = an_sole_consumer(c, w->outputs[0]);
    if (!an_is_ew(c, round, KORCH_EW_ROUND)) return -1;
    int next = an_sole_consumer(c, pg->nodes[round].outputs[0]), add = -1;
    if (an_is_ew(c, next, KORCH_EW_ADD)) {
        const korch_pnode *a = &pg->nodes[next];
        int other = a->inputs[0] == pg->nodes[round].outputs[0] ? a->inputs[1] : a->inputs[0];
        if (!an_scalar_constant(&pg->values[other], &zp) || zp != rint(zp)) return -1;
        add = next;
        next = an_sole_consumer(c, a->outputs[0]);
    }
    if (!an_is_ew(c, next, KORCH_EW_CLIP)) return -1;
    int clip = next, cast = -1, cc[1];
    int z = pg->nodes[clip].outputs[0];
    if (an_is_output(c, z) || an_consumers(c, z, cc, 1) != 1 || !an_is_ew(c, cast = cc[0], KORCH_EW_CAST)) return -1;
    int y = pg->nodes[cast].outputs[0];
    korch_dtype t = pg->values[y].dtype;
    double lo = t == KORCH_DTYPE_UINT8 ? 0 : -128, hi = t == KORCH_DTYPE_UINT8 ? 255 : 127;
    if ((t != KORCH_DTYPE_UINT8 && t != KORCH_DTYPE_INT8) || pg->nodes[clip].u.ew.alpha != lo ||
        pg->nodes[clip].u.ew.beta != hi || !an_is_output(c, y) || an_consumers(c, y, cc, 1) != 0 || zp < lo ||
        zp > hi)
        return -1;
    if (c->d->n_post >= DN_MAX_POST) return -1;
    /* oneDNN: y = saturate(rint(post-ops(...) * (1 / s)) + zp), the product by
     * the reciprocal instead of the exact division (docs/quantization.md) */
    c->d->post[c->d->n_post++] = (dn_post){.kind = DN_POST_ELTWISE, .alg = dnnl_eltwise_linear,
                                           .alpha = (float)(1.0 / s), .beta = 0, .slot = -1, .node = div};
    c->d->dst_q = t == KORCH_DTYPE_UINT8 ? dnnl_u8 : dnnl_s8;
    c->d->dst_zp = (int32_t)zp;
    int nodes[] = {div, eq, where, round, add, clip, cast};
    for (size_t i = 0; i < sizeof nodes / sizeof nodes[0]; i++)
        if (nodes[i] >= 0) c->used[an_spec_index(c, nodes[i])] = true;
    return y;
}
