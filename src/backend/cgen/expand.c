/* Linear primitives the generator computes as memory-bound work: depthwise
 * convolutions, and products of one row by a matrix (below).
 *
 * A depthwise convolution (one input channel per group, one output channel
 * per group: MobileNet's, EfficientViT's, a DBNet's 3x3s) does a few
 * multiply-adds per element it reads, like a pooling window does: it is a
 * window of its input, multiplied by the channel's weights and summed over
 * the window, which is how it is written here. oneDNN computes it too; the
 * generator's version can also fold the transposes and the epilogue around
 * it into the same loops (a channels-first model's depthwise convolution
 * then costs no layout conversion at all), so the binary program gets a
 * candidate of each and keeps the faster (docs/codegen.md, "Depthwise
 * convolutions").
 *
 * cg_expand_spec extracts the kernel's primitives into a private primitive
 * graph (korch_pgraph_extract), writing each depthwise convolution as
 * window -> multiply -> sum, and gives a spec over it with the same inputs
 * and outputs in the same order, so the canonical kernel and its ABI are
 * those of the original spec. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/cgen/cgen.h"
#include "ir/indexmap.h"

/* Taps per output element above which a convolution is not memory-bound
 * work any more (7x7 is the largest depthwise window of the zoo). */
#define CG_MAX_TAPS 64

static bool is_depthwise(const korch_pgraph *pg, const korch_pnode *n) {
    if (n->kind != KORCH_PRIM_LINEAR || n->n_inputs != 2) return false;
    const korch_prim_linear *p = &n->u.linear;
    if (p->op != KORCH_LINEAR_CONV || p->bf16 || p->spatial < 1 || p->spatial > 3) return false;
    const korch_pvalue *x = &pg->values[n->inputs[0]], *w = &pg->values[n->inputs[1]];
    const korch_pvalue *y = &pg->values[n->outputs[0]];
    if (x->dtype != KORCH_DTYPE_FLOAT32 || w->dtype != KORCH_DTYPE_FLOAT32 || y->dtype != KORCH_DTYPE_FLOAT32) return false;
    int s = p->spatial, rank = s + 2;
    if (x->shape.rank != rank || w->shape.rank != rank || y->shape.rank != rank) return false;
    int64_t c_in = x->shape.dims[p->channels_last ? rank - 1 : 1];
    int64_t c_out = y->shape.dims[p->channels_last ? rank - 1 : 1];
    if (p->group != c_in || c_out != c_in || w->shape.dims[0] != c_in || w->shape.dims[1] != 1) return false;
    int64_t taps = 1;
    for (int d = 0; d < s; d++) taps *= w->shape.dims[2 + d];
    return taps <= CG_MAX_TAPS;
}

/* x with its channel axis moved: last to 1 (to_first) or 1 to last. */
static int move_channels(korch_pgraph *mini, int x, bool to_first) {
    int r = mini->values[x].shape.rank;
    int64_t perm[KORCH_MAX_RANK] = {0};
    for (int j = 1; j < r; j++) perm[j] = to_first ? (j == 1 ? r - 1 : j - 1) : (j == r - 1 ? 1 : j + 1);
    return korch_pgraph_transpose(mini, x, perm);
}

/* y = sum over the window of window(x) * w, the (C, 1, K...) weights viewed
 * as (C, 1..., K...) to broadcast against the (N, C, O..., K...) window.
 * A channels-last convolution is the same between two transposes: its sums
 * then run along the output's last spatial axis, where the weights are one
 * scalar per channel and tap, and a kernel that holds the layout pass's
 * transposes around it composes them away into plain channels-first loops
 * (the window sums run along C with (C, K...)-strided weight loads
 * otherwise: measured several times slower). */
static int depthwise(korch_pgraph *mini, int x, int w, const korch_prim_linear *p, const korch_shape *y) {
    int s = p->spatial;
    const korch_shape ws = mini->values[w].shape;
    if (p->channels_last && (x = move_channels(mini, x, true)) < 0) return -1;
    korch_shape view = {.rank = 1 + 2 * s};
    view.dims[0] = ws.dims[0];
    int64_t out[3], kernel[3];
    for (int d = 0; d < s; d++) {
        out[d] = y->dims[(p->channels_last ? 1 : 2) + d];
        kernel[d] = ws.dims[2 + d];
        view.dims[1 + d] = 1;
        view.dims[1 + s + d] = kernel[d];
    }
    int win = korch_pgraph_window(mini, x, s, kernel, p->strides, p->dilations, p->pads_begin, out, 0.0);
    if (win < 0) return -1;
    korch_index_map map;
    korch_index_map_reshape(&ws, &view, &map);
    int wv = korch_pgraph_layout(mini, KORCH_LAYOUT_RESHAPE, 1, &w, &view, &map, 0.0);
    if (wv < 0) return -1;
    int ops[2] = {win, wv};
    int prod = korch_pgraph_elementwise(mini, KORCH_EW_MUL, 2, ops, 0, 0, KORCH_DTYPE_FLOAT32);
    if (prod < 0) return -1;
    uint32_t axes = 0;
    for (int d = 0; d < s; d++) axes |= 1u << (2 + s + d);
    int sum = korch_pgraph_reduce(mini, KORCH_REDUCE_SUM, prod, axes, false);
    return sum >= 0 && p->channels_last ? move_channels(mini, sum, false) : sum;
}

/* A product of one row by a matrix, [1, K] x [K, N] (an LSTM's or GRU's
 * recurrent step, a projection of one token): every weight is read once
 * for one multiply-add, memory-bound like a reduction. Written out as
 * sum over k of x[k] * w[k, n]: the generator's outer-axis reduction,
 * vectorised along N, and the step's epilogue (the gates) in the same
 * loops. oneDNN's matmul is the other candidate of the same kernel. */
static bool is_row_product(const korch_pgraph *pg, const korch_pnode *n) {
    if (n->kind != KORCH_PRIM_LINEAR || n->n_inputs != 2) return false;
    const korch_prim_linear *p = &n->u.linear;
    if (p->op != KORCH_LINEAR_MATMUL || p->bf16) return false;
    const korch_pvalue *x = &pg->values[n->inputs[0]], *w = &pg->values[n->inputs[1]];
    const korch_pvalue *y = &pg->values[n->outputs[0]];
    if (x->dtype != KORCH_DTYPE_FLOAT32 || w->dtype != KORCH_DTYPE_FLOAT32 || y->dtype != KORCH_DTYPE_FLOAT32) return false;
    return x->shape.rank == 2 && w->shape.rank == 2 && y->shape.rank == 2 && x->shape.dims[0] == 1 &&
           x->shape.dims[1] == w->shape.dims[0] && x->shape.dims[1] > 0;
}

/* Columns per block of a row product: N is cut into blocks of this many
 * columns (when it divides), so that the reduction has a kept leading axis
 * the generator runs in parallel, and each block's rows are contiguous
 * runs of weights (the blocked matrix-vector product). */
#define CG_ROW_BLOCK 128

static int reshaped(korch_pgraph *mini, int v, int rank, const int64_t *dims) {
    korch_shape to = {.rank = rank};
    for (int d = 0; d < rank; d++) to.dims[d] = dims[d];
    korch_index_map map;
    korch_index_map_reshape(&mini->values[v].shape, &to, &map);
    return korch_pgraph_layout(mini, KORCH_LAYOUT_RESHAPE, 1, &v, &to, &map, 0.0);
}

/* y[1, N] = sum over k of x[k] * w[k, N]; with N = B * C (C = CG_ROW_BLOCK):
 * w viewed as [K, B, C] and transposed to [B, K, C] (index maps: nothing
 * is moved), times x viewed as [1, K, 1], summed over axis 1 into
 * [B, 1, C], viewed as [1, N]. Without blocks (N not a multiple of C):
 * x viewed as [K, 1] times w, summed over axis 0. */
static int row_product(korch_pgraph *mini, int x, int w) {
    int64_t K = mini->values[x].shape.dims[1], N = mini->values[w].shape.dims[1];
    if (N % CG_ROW_BLOCK != 0 || N == CG_ROW_BLOCK) {
        int xc = reshaped(mini, x, 2, (int64_t[]){K, 1});
        int ops[2] = {xc, w};
        int prod = xc < 0 ? -1 : korch_pgraph_elementwise(mini, KORCH_EW_MUL, 2, ops, 0, 0, KORCH_DTYPE_FLOAT32);
        return prod < 0 ? -1 : korch_pgraph_reduce(mini, KORCH_REDUCE_SUM, prod, 1u, true);
    }
    int64_t B = N / CG_ROW_BLOCK;
    int wb = reshaped(mini, w, 3, (int64_t[]){K, B, CG_ROW_BLOCK});
    int wt = wb < 0 ? -1 : korch_pgraph_transpose(mini, wb, (int64_t[]){1, 0, 2});
    int xc = reshaped(mini, x, 3, (int64_t[]){1, K, 1});
    if (wt < 0 || xc < 0) return -1;
    int ops[2] = {xc, wt};
    int prod = korch_pgraph_elementwise(mini, KORCH_EW_MUL, 2, ops, 0, 0, KORCH_DTYPE_FLOAT32);
    int sum = prod < 0 ? -1 : korch_pgraph_reduce(mini, KORCH_REDUCE_SUM, prod, 2u, true);
    return sum < 0 ? -1 : reshaped(mini, sum, 2, (int64_t[]){1, N});
}

/* korch_pgraph_extract's rewrite: depthwise convolutions and row products
 * written out, every other primitive the generator has copied, the rest
 * refused. */
static korch_status rewrite(void *user, korch_pgraph *sub, const korch_pgraph *pg, const korch_pnode *n,
                            const int *ins, int *y) {
    (void)user;
    if (n->kind == KORCH_PRIM_OPAQUE)
        return korch_error(KORCH_ERR_UNSUPPORTED, "cgen: opaque primitive (memory-bound kernels only)");
    if (n->kind != KORCH_PRIM_LINEAR) return KORCH_OK;
    if (is_row_product(pg, n)) {
        *y = row_product(sub, ins[0], ins[1]);
        return *y >= 0 ? KORCH_OK : korch_error_prefix(KORCH_ERR_INTERNAL, "cgen: writing out a row product");
    }
    if (!is_depthwise(pg, n))
        return korch_error(KORCH_ERR_UNSUPPORTED, "cgen: linear primitive other than a depthwise convolution or a "
                                                  "one-row matmul (memory-bound kernels only)");
    *y = depthwise(sub, ins[0], ins[1], &n->u.linear, &pg->values[n->outputs[0]].shape);
    return *y >= 0 ? KORCH_OK : korch_error_prefix(KORCH_ERR_INTERNAL, "cgen: writing out a depthwise convolution");
}

bool cg_spec_has_linear(const korch_kernel_spec *spec) {
    for (int i = 0; i < spec->n_nodes; i++)
        if (spec->pg->nodes[spec->nodes[i]].kind == KORCH_PRIM_LINEAR) return true;
    return false;
}

void cg_expanded_free(cg_expanded *e) {
    korch_pgraph_free(e->pg);
    free(e->nodes);
    free(e->inputs);
    memset(e, 0, sizeof *e);
}

korch_status cg_expand_spec(const korch_kernel_spec *spec, cg_expanded *e, char *reason, size_t size) {
    memset(e, 0, sizeof *e);
    korch_status st = korch_pgraph_extract(spec, rewrite, NULL, &e->pg);
    if (st == KORCH_OK) {
        e->nodes = malloc(((size_t)e->pg->n_nodes + 1) * sizeof *e->nodes);
        e->inputs = malloc(((size_t)spec->n_inputs + 1) * sizeof *e->inputs);
        st = e->nodes && e->inputs ? korch_pgraph_toposort(e->pg, e->nodes, &e->n_nodes)
                                   : korch_error(KORCH_ERR_OUT_OF_MEMORY, "cgen: out of memory");
    }
    if (st != KORCH_OK) {
        snprintf(reason, size, "%s", korch_last_error());
        cg_expanded_free(e);
        return st;
    }
    for (int i = 0; i < spec->n_inputs; i++) e->inputs[i] = i; /* korch_pgraph_extract: value i is input i */
    e->spec = (korch_kernel_spec){.pg = e->pg, .n_nodes = e->n_nodes, .nodes = e->nodes, .n_inputs = spec->n_inputs,
                                  .inputs = e->inputs, .n_outputs = e->pg->n_outputs, .outputs = e->pg->outputs};
    return KORCH_OK;
}
