/* Linear primitives the generator computes as memory-bound work.
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
 * cg_expand_spec copies the kernel's primitives into a private primitive
 * graph, writing each depthwise convolution as window -> multiply ->
 * sum, and gives a spec over it with the same inputs and outputs in the
 * same order, so the canonical kernel and its ABI are those of the
 * original spec. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/cgen/cgen.h"
#include "ir/indexmap.h"

/* Taps per output element above which a convolution is not memory-bound
 * work any more (7x7 is the largest depthwise window of the zoo). */
#define CG_MAX_TAPS 64

bool cg_is_depthwise(const korch_pgraph *pg, const korch_pnode *n) {
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
    const korch_shape in = mini->values[x].shape;
    int r = in.rank;
    korch_shape out = {.rank = r};
    korch_index_map map = {.input_rank = r};
    int64_t perm[KORCH_MAX_RANK];
    perm[0] = 0;
    for (int j = 1; j < r; j++) perm[j] = to_first ? (j == 1 ? r - 1 : j - 1) : (j == r - 1 ? 1 : j + 1);
    for (int j = 0; j < r; j++) {
        out.dims[j] = in.dims[perm[j]];
        map.terms[perm[j]] = korch_index_term_var(j);
    }
    int v = korch_pgraph_layout(mini, KORCH_LAYOUT_TRANSPOSE, 1, &x, &out, &map, 0.0);
    if (v >= 0) memcpy(mini->nodes[mini->values[v].producer].u.layout.perm, perm, sizeof perm);
    return v;
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

/* A deep copy of a layout node's maps (the new node owns its tables). */
static korch_index_map *copy_maps(const korch_prim_layout *l) {
    korch_index_map *maps = malloc((size_t)(l->n_maps > 0 ? l->n_maps : 1) * sizeof *maps);
    if (!maps) return NULL;
    memcpy(maps, l->maps, (size_t)l->n_maps * sizeof *maps);
    for (int m = 0; m < l->n_maps; m++)
        for (int t = 0; t < KORCH_MAX_RANK; t++) {
            korch_index_term *term = &maps[m].terms[t];
            if (!term->table) continue;
            int64_t *table = malloc((size_t)term->table_size * sizeof *table);
            if (!table) {
                term->table = NULL; /* this and the later ones were never copied */
                for (int u = t + 1; u < KORCH_MAX_RANK; u++) maps[m].terms[u].table = NULL;
                for (int mm = m + 1; mm < l->n_maps; mm++)
                    for (int u = 0; u < KORCH_MAX_RANK; u++) maps[mm].terms[u].table = NULL;
                for (int mm = 0; mm <= m; mm++)
                    for (int u = 0; u < KORCH_MAX_RANK; u++) free(maps[mm].terms[u].table);
                free(maps);
                return NULL;
            }
            memcpy(table, term->table, (size_t)term->table_size * sizeof *table);
            term->table = table;
        }
    return maps;
}

/* The node's copy in mini (inputs already mapped); the output value or -1. */
static int copy_node(korch_pgraph *mini, const korch_pgraph *pg, const korch_pnode *pn, const int *ins, char *reason,
                     size_t size) {
    const korch_pvalue *out = &pg->values[pn->outputs[0]];
    switch (pn->kind) {
    case KORCH_PRIM_ELEMENTWISE:
        return korch_pgraph_elementwise(mini, pn->u.ew.op, pn->n_inputs, ins, pn->u.ew.alpha, pn->u.ew.beta,
                                        out->dtype);
    case KORCH_PRIM_REDUCE: return korch_pgraph_reduce(mini, pn->u.reduce.op, ins[0], pn->u.reduce.axes, pn->u.reduce.keepdims);
    case KORCH_PRIM_LAYOUT: {
        korch_index_map *maps = copy_maps(&pn->u.layout);
        if (!maps) return -1;
        int v = korch_pgraph_layout(mini, pn->u.layout.tag, pn->n_inputs, ins, &out->shape, maps, pn->u.layout.pad_value);
        free(maps); /* the node owns the tables, not the array */
        if (v >= 0) {
            korch_prim_layout *l = &mini->nodes[mini->values[v].producer].u.layout;
            memcpy(l->perm, pn->u.layout.perm, sizeof l->perm);
            l->axis = pn->u.layout.axis;
        }
        return v;
    }
    case KORCH_PRIM_LINEAR:
        if (cg_is_depthwise(pg, pn)) return depthwise(mini, ins[0], ins[1], &pn->u.linear, &out->shape);
        snprintf(reason, size, "linear primitive other than a depthwise convolution (memory-bound kernels only)");
        return -1;
    default: snprintf(reason, size, "opaque primitive (memory-bound kernels only)"); return -1;
    }
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
    free(e->outputs);
    memset(e, 0, sizeof *e);
}

korch_status cg_expand_spec(const korch_kernel_spec *spec, cg_expanded *e, char *reason, size_t size) {
    memset(e, 0, sizeof *e);
    const korch_pgraph *pg = spec->pg;
    int *local = malloc((size_t)pg->n_values * sizeof *local);
    e->inputs = malloc((size_t)(spec->n_inputs + 1) * sizeof *e->inputs);
    e->outputs = malloc((size_t)spec->n_outputs * sizeof *e->outputs);
    korch_status st = local && e->inputs && e->outputs ? korch_pgraph_create(pg->source, &e->pg)
                                                       : korch_error(KORCH_ERR_OUT_OF_MEMORY, "cgen: out of memory");
    if (st != KORCH_OK) goto fail;
    for (int v = 0; v < pg->n_values; v++) local[v] = -1;
    for (int i = 0; i < spec->n_inputs; i++) {
        const korch_pvalue *v = &pg->values[spec->inputs[i]];
        /* constants stay constants (1-element ones become literals in canon.c);
         * their data is borrowed from pg, which outlives the kernel spec */
        int m = v->is_constant ? korch_pgraph_add_constant_ref(e->pg, &v->constant)
                               : korch_pgraph_add_input(e->pg, v->dtype, &v->shape);
        if (m < 0) goto failed;
        local[spec->inputs[i]] = e->inputs[i] = m;
    }
    for (int i = 0; i < spec->n_nodes; i++) {
        const korch_pnode *pn = &pg->nodes[spec->nodes[i]];
        int ins[KORCH_MAX_RANK];
        if (pn->n_outputs != 1 || pn->n_inputs > KORCH_MAX_RANK) {
            snprintf(reason, size, "malformed primitive");
            goto unsupported;
        }
        for (int k = 0; k < pn->n_inputs; k++)
            if ((ins[k] = local[pn->inputs[k]]) < 0) {
                snprintf(reason, size, "a primitive reads a value the kernel neither receives nor makes");
                goto unsupported;
            }
        reason[0] = '\0';
        int v = copy_node(e->pg, pg, pn, ins, reason, size);
        if (v < 0 && reason[0]) goto unsupported;
        if (v < 0) goto failed;
        const korch_pvalue *want = &pg->values[pn->outputs[0]], *got = &e->pg->values[v];
        if (got->dtype != want->dtype || !korch_shape_equal(&got->shape, &want->shape)) {
            snprintf(reason, size, "a primitive's copy has another shape (internal)");
            goto unsupported;
        }
        local[pn->outputs[0]] = v;
    }
    for (int i = 0; i < spec->n_outputs; i++)
        if ((e->outputs[i] = local[spec->outputs[i]]) < 0) {
            snprintf(reason, size, "an output is not produced by the kernel's nodes");
            goto unsupported;
        }
    e->n_nodes = e->pg->n_nodes;
    e->nodes = malloc((size_t)e->n_nodes * sizeof *e->nodes);
    if (!e->nodes) {
        st = korch_error(KORCH_ERR_OUT_OF_MEMORY, "cgen: out of memory");
        goto fail;
    }
    for (int i = 0; i < e->n_nodes; i++) e->nodes[i] = i; /* made in topological order */
    e->spec = (korch_kernel_spec){.pg = e->pg, .n_nodes = e->n_nodes, .nodes = e->nodes, .n_inputs = spec->n_inputs,
                                  .inputs = e->inputs, .n_outputs = spec->n_outputs, .outputs = e->outputs};
    free(local);
    return KORCH_OK;
unsupported:
    st = korch_error(KORCH_ERR_UNSUPPORTED, "cgen: %s", reason);
    goto fail;
failed:
    snprintf(reason, size, "%s", korch_last_error());
    st = korch_error(KORCH_ERR_UNSUPPORTED, "cgen: %s", reason);
fail:
    free(local);
    cg_expanded_free(e);
    return st;
}
