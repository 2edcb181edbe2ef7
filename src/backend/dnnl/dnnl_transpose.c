/* Transposes around a convolution, absorbed into its memory descriptors.
 *
 * The layout pass (src/relayout) runs every convolution channels-last and
 * puts a transpose wherever a channels-first tensor meets one, so a
 * single convolution on an NCHW input becomes transpose -> NHWC conv ->
 * transpose. oneDNN reads and writes any strided layout, so the kernel
 * {transpose, conv, post-ops..., transpose} is one oneDNN convolution whose
 * source and destination descriptors carry the channels-first strides: the
 * transposes cost nothing, and oneDNN picks its channels-first
 * implementation. As a candidate like any other, profiled and verified,
 * the binary program weighs it against the channels-last convolution with
 * separate (or fused) conversions: the layout of each convolution becomes
 * the optimiser's choice, region by region (docs/layout.md).
 *
 * A transpose is absorbed when it is a pure permutation
 * (korch_layout_as_transpose), the source one reads a kernel input and
 * feeds only the convolution, and the destination one is the last step of
 * the chain and writes the kernel's output. Matrix products keep dense
 * operands (their batch folding assumes them). */
#include <stdio.h>

#include "backend/dnnl/dnnl_analyze.h"
#include "ir/indexmap.h"

/* The transpose node producing value x inside the kernel, from a kernel
 * input, read only by the linear primitive; -1 if none. perm: as ONNX's
 * (output axis j is input axis perm[j]). */
int an_src_transpose(const actx *c, int linear, int64_t *perm) {
    const korch_pgraph *pg = c->pg;
    const korch_pnode *lin = &pg->nodes[linear];
    if (lin->kind != KORCH_PRIM_LINEAR || lin->u.linear.op == KORCH_LINEAR_MATMUL) return -1;
    int x = lin->inputs[0], p = pg->values[x].producer;
    if (p < 0 || an_spec_index(c, p) < 0 || pg->nodes[p].kind != KORCH_PRIM_LAYOUT || pg->nodes[p].n_inputs != 1)
        return -1;
    if (!korch_layout_as_transpose(pg, p, perm) || an_input_slot(c, pg->nodes[p].inputs[0]) < 0) return -1;
    int cons[2];
    if (an_is_output(c, x) || an_consumers(c, x, cons, 2) != 1) return -1;
    if (pg->values[x].shape.rank != pg->values[lin->outputs[0]].shape.rank) return -1;
    return p;
}

/* strides[j] of the transposed view of a dense tensor of shape `in`, for
 * output axis j = input axis perm[j] */
static void view_strides(const korch_shape *in, const int64_t *perm, int rank, int64_t *strides) {
    dn_tensor dense;
    an_dense(in, &dense);
    for (int j = 0; j < rank; j++) strides[j] = dense.strides[perm[j]];
}

bool an_absorb_src_transpose(actx *c, int node, const int64_t *perm) {
    const korch_pgraph *pg = c->pg;
    int x0 = pg->nodes[node].inputs[0], r = c->out_rank;
    int64_t strides[KORCH_MAX_RANK];
    view_strides(&pg->values[x0].shape, perm, r, strides);
    for (int j = 0; j < r; j++) c->d->src.strides[j] = strides[c->perm[j]];
    /* a dequantized source (dnnl_dequant.c): the 8-bit tensor, same shape */
    c->d->src_slot = an_input_slot(c, c->dequant_q >= 0 ? c->dequant_q : x0);
    c->used[an_spec_index(c, node)] = true;
    c->src_transposed = true;
    c->d->strided_io = true;
    return c->d->src_slot >= 0;
}

/* The chain ends at v; if its one consumer is a transpose writing the
 * kernel's output, oneDNN writes that layout directly: returns the
 * transpose's output (the kernel's final value), else -1. */
int an_absorb_dst_transpose(actx *c, int v) {
    const korch_pgraph *pg = c->pg;
    if (c->reshaped || c->d->op == KORCH_LINEAR_MATMUL) return -1;
    int cons[2];
    if (an_consumers(c, v, cons, 2) != 1 || an_is_output(c, v)) return -1;
    int t = cons[0];
    const korch_pnode *n = &pg->nodes[t];
    int64_t perm[KORCH_MAX_RANK];
    if (n->kind != KORCH_PRIM_LAYOUT || n->n_inputs != 1 || !korch_layout_as_transpose(pg, t, perm)) return -1;
    int z = n->outputs[0], r = c->out_rank;
    if (!an_is_output(c, z) || pg->values[z].shape.rank != r || pg->values[v].shape.rank != r) return -1;
    int cz[1];
    if (an_consumers(c, z, cz, 1) != 0) return -1;
    /* z axis j is v axis perm[j]: v's element at coordinates i lives where
     * z's at (i[perm[0]], ...) does */
    dn_tensor dense;
    an_dense(&pg->values[z].shape, &dense);
    int64_t vstr[KORCH_MAX_RANK];
    for (int j = 0; j < r; j++) vstr[perm[j]] = dense.strides[j];
    for (int j = 0; j < r; j++) c->d->dst.strides[j] = vstr[c->perm[j]];
    c->used[an_spec_index(c, t)] = true;
    c->dst_transposed = true;
    c->d->strided_io = true;
    return z;
}
