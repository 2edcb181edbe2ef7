/* Moving a transpose t = T(a) = transpose(a, P) past one consumer, so that
 * the consumer works on a (channels-last) and the transpose comes after it:
 *
 *   elementwise  E(t, b...) = T(E(a, T^-1(b)...)) where each other operand
 *                is a scalar, a constant (transposed here, folded by the
 *                clean-up), a transpose with the same P (its input), or a
 *                broadcast whose transpose moves only unit dimensions (a
 *                reshape). Anything else would add data movement: no move.
 *   reduce       R_axes(t) = T'(R_P(axes)(a)), T' = P restricted to the kept
 *                axes (nothing when that is the identity)
 *   layout       L(t) = T_Q^-1(L'(a)): the index map is conjugated, every
 *                term of t-axis j becomes the term of a-axis P[j], and the
 *                output axis that copies a's last (channel) axis is moved
 *                last (Q). Pads, slices, pooling windows, nearest resizes,
 *                reshapes and channel concats all move this way.
 *
 * Each move keeps the graph's function exactly; the pass's tests interpret
 * models before and after. */
#include <stdlib.h>
#include <string.h>

#include "ir/indexmap.h"
#include "relayout/relayout_internal.h"

typedef enum operand_kind { OP_SAME, OP_CANCEL, OP_SCALAR, OP_RESHAPE, OP_CONSTANT, OP_FAIL } operand_kind;

static void inverse(const int64_t *p, int r, int64_t *inv) {
    for (int j = 0; j < r; j++) inv[p[j]] = j;
}

static korch_shape aligned(const korch_shape *s, int r) {
    korch_shape a = {.rank = r};
    int lead = r - s->rank;
    for (int k = 0; k < r; k++) a.dims[k] = k < lead ? 1 : s->dims[k - lead];
    return a;
}

/* How operand b (broadcast against t of rank r) reaches a's space. */
static operand_kind classify(const korch_pgraph *pg, int b, int t, const int64_t *P, int r, int *source) {
    *source = b;
    if (b == t) return OP_SAME;
    const korch_pvalue *v = &pg->values[b];
    if (v->shape.rank > r) return OP_FAIL;
    int p = v->producer;
    int64_t pp[KORCH_MAX_RANK];
    if (p >= 0 && lp_transpose_perm(pg, p, pp) && v->shape.rank == r) {
        int c = pg->nodes[p].inputs[0];
        bool same = pg->values[c].shape.rank == r;
        for (int j = 0; j < r && same; j++)
            if (v->shape.dims[j] != 1 && pp[j] != P[j]) same = false;
        if (same) {
            *source = c;
            return OP_CANCEL;
        }
    }
    if (korch_shape_numel(&v->shape) == 1) return OP_SCALAR;
    korch_shape al = aligned(&v->shape, r);
    /* does the transpose keep the order of the non-unit dimensions? */
    int64_t last = -1;
    bool ordered = true;
    int64_t inv[KORCH_MAX_RANK];
    inverse(P, r, inv);
    for (int k = 0; k < r; k++) {
        int64_t j = inv[k]; /* a-axis k holds t-axis inv[k] */
        if (al.dims[j] == 1) continue;
        if (j < last) ordered = false;
        last = j;
    }
    if (ordered) return OP_RESHAPE;
    if (v->is_constant) return OP_CONSTANT;
    return OP_FAIL;
}

/* Builds the operand in a's space (see classify). */
static int operand(lp_state *s, operand_kind kind, int b, int source, const int64_t *P, int r, int a) {
    korch_pgraph *pg = s->pg;
    if (kind == OP_SAME) return a;
    if (kind == OP_CANCEL || kind == OP_SCALAR) return source;
    int64_t inv[KORCH_MAX_RANK];
    inverse(P, r, inv);
    korch_shape al = aligned(&pg->values[b].shape, r), as = {.rank = r};
    for (int k = 0; k < r; k++) as.dims[k] = al.dims[inv[k]];
    if (kind == OP_RESHAPE) return korch_shape_equal(&as, &al) ? b : korch_pgraph_reshape(pg, b, &as);
    int x = pg->values[b].shape.rank < r ? korch_pgraph_reshape(pg, b, &al) : b;
    return x < 0 ? -1 : korch_pgraph_transpose(pg, x, inv);
}

static int finish(lp_state *s, int old_node, int new_value, const int64_t *perm) {
    korch_pgraph *pg = s->pg;
    if (new_value < 0) return -1;
    int src = pg->nodes[old_node].source_node;
    pg->nodes[pg->values[new_value].producer].source_node = src;
    int y = pg->nodes[old_node].outputs[0];
    int z = perm ? lp_transpose(s, new_value, perm, src) : new_value;
    if (z < 0) return -1;
    if (!korch_shape_equal(&pg->values[z].shape, &pg->values[y].shape)) {
        korch_error(KORCH_ERR_INTERNAL, "layout pass: moving a transpose changed the shape of value %d", y);
        return -1;
    }
    pg->nodes[old_node].dead = true;
    lp_replace_uses(pg, y, z);
    return 1;
}

static int sink_elementwise(lp_state *s, int tnode, int e, const int64_t *P) {
    korch_pgraph *pg = s->pg;
    int t = pg->nodes[tnode].outputs[0], a = pg->nodes[tnode].inputs[0];
    int r = pg->values[t].shape.rank;
    const korch_pnode *n = &pg->nodes[e];
    if (!korch_shape_equal(&pg->values[n->outputs[0]].shape, &pg->values[t].shape)) return 0;
    operand_kind kinds[KORCH_MAX_RANK];
    int sources[KORCH_MAX_RANK], ins[KORCH_MAX_RANK];
    int n_in = n->n_inputs;
    for (int k = 0; k < n_in; k++) {
        kinds[k] = classify(pg, n->inputs[k], t, P, r, &sources[k]);
        if (kinds[k] == OP_FAIL) return 0;
    }
    for (int k = 0; k < n_in; k++) {
        ins[k] = operand(s, kinds[k], pg->nodes[e].inputs[k], sources[k], P, r, a);
        if (ins[k] < 0) return -1;
    }
    const korch_pnode *en = &pg->nodes[e];
    korch_dtype cast = en->u.ew.op == KORCH_EW_CAST ? pg->values[en->outputs[0]].dtype : KORCH_DTYPE_UNDEFINED;
    int y = korch_pgraph_elementwise(pg, en->u.ew.op, n_in, ins, en->u.ew.alpha, en->u.ew.beta, cast);
    int rc = finish(s, e, y, P);
    if (rc > 0 && s->stats) s->stats->sunk_elementwise++;
    return rc;
}

static int sink_reduce(lp_state *s, int tnode, int e, const int64_t *P) {
    korch_pgraph *pg = s->pg;
    int a = pg->nodes[tnode].inputs[0];
    int r = pg->values[a].shape.rank;
    korch_prim_reduce red = pg->nodes[e].u.reduce;
    uint32_t axes = 0;
    for (int j = 0; j < r; j++)
        if (red.axes & (1u << j)) axes |= 1u << P[j];
    int y = korch_pgraph_reduce(pg, red.op, a, axes, red.keepdims);
    if (y < 0) return -1;
    int64_t perm[KORCH_MAX_RANK];
    bool identity = true;
    int out_rank = 0;
    if (red.keepdims) {
        for (int j = 0; j < r; j++) perm[j] = P[j];
        out_rank = r;
    } else {
        /* kept t-axes in order; each sits where its a-axis ranks among kept a-axes */
        for (int j = 0; j < r; j++) {
            if (red.axes & (1u << j)) continue;
            int64_t pos = 0;
            for (int k = 0; k < P[j]; k++) pos += !(axes & (1u << k));
            perm[out_rank++] = pos;
        }
    }
    for (int j = 0; j < out_rank; j++) identity &= perm[j] == j;
    int rc = finish(s, e, y, identity || out_rank < 2 ? NULL : perm);
    if (rc > 0 && s->stats) s->stats->sunk_reduce++;
    return rc;
}

static bool pure_term(const korch_index_term *t, int out_rank, int *axis) {
    if (t->div != 1 || t->mod != 0 || t->table) return false;
    int found = -1;
    for (int j = 0; j < out_rank; j++) {
        if (t->coef[j] == 0) continue;
        if (t->coef[j] != 1 || found >= 0) return false;
        found = j;
    }
    *axis = found;
    return found >= 0;
}

static int sink_layout(lp_state *s, int tnode, int e, const int64_t *P) {
    korch_pgraph *pg = s->pg;
    int t = pg->nodes[tnode].outputs[0];
    int r = pg->values[t].shape.rank;
    const korch_pnode *n = &pg->nodes[e];
    const korch_prim_layout *l = &n->u.layout;
    const korch_shape ys = pg->values[n->outputs[0]].shape;
    int R = ys.rank;
    /* the t-axis holding a's last axis, and the output axis that copies it */
    int m = -1;
    for (int j = 0; j < r; j++)
        if (P[j] == r - 1) m = j;
    if (m < 0 || l->n_maps != n->n_inputs || n->n_inputs < 1) return 0;
    int k = -1;
    operand_kind kinds[KORCH_MAX_RANK];
    int sources[KORCH_MAX_RANK];
    for (int p = 0; p < l->n_maps; p++) {
        const korch_index_map *map = &l->maps[p];
        int kp;
        if (map->input_rank != r || !pure_term(&map->terms[m], R, &kp) || (k >= 0 && kp != k)) return 0;
        k = kp;
        for (int j = 0; j < r; j++)
            if (j != m && map->terms[j].coef[k] != 0) return 0;
        kinds[p] = classify(pg, n->inputs[p], t, P, r, &sources[p]);
        if (kinds[p] != OP_SAME && kinds[p] != OP_CANCEL && kinds[p] != OP_CONSTANT) return 0;
    }
    /* Q moves output axis k last */
    int64_t Q[KORCH_MAX_RANK], Qinv[KORCH_MAX_RANK];
    for (int q = 0; q < R - 1; q++) Q[q] = q < k ? q : q + 1;
    Q[R - 1] = k;
    inverse(Q, R, Qinv);
    korch_shape out = {.rank = R};
    for (int q = 0; q < R; q++) out.dims[q] = ys.dims[Q[q]];
    int ins[KORCH_MAX_RANK];
    int a = pg->nodes[tnode].inputs[0];
    for (int p = 0; p < l->n_maps; p++) {
        ins[p] = operand(s, kinds[p], pg->nodes[e].inputs[p], sources[p], P, r, a);
        if (ins[p] < 0) return -1;
    }
    n = &pg->nodes[e]; /* the node array may have moved */
    l = &n->u.layout;
    int n_maps = l->n_maps;
    korch_index_map *maps = calloc((size_t)n_maps, sizeof *maps);
    if (!maps) {
        korch_error(KORCH_ERR_OUT_OF_MEMORY, "layout pass: out of memory");
        return -1;
    }
    bool ok = true;
    for (int p = 0; p < n_maps && ok; p++) {
        const korch_index_map *old = &l->maps[p];
        maps[p].input_rank = r;
        maps[p].may_be_out_of_bounds = old->may_be_out_of_bounds;
        for (int j = 0; j < r && ok; j++) {
            korch_index_term nt = old->terms[j];
            for (int q = 0; q < KORCH_MAX_RANK; q++) nt.coef[q] = q < R ? old->terms[j].coef[Q[q]] : 0;
            if (old->terms[j].table) {
                nt.table = malloc((size_t)(old->terms[j].table_size ? old->terms[j].table_size : 1) * sizeof *nt.table);
                if (!nt.table) ok = false;
                else memcpy(nt.table, old->terms[j].table, (size_t)old->terms[j].table_size * sizeof *nt.table);
            }
            maps[p].terms[P[j]] = nt;
        }
    }
    korch_layout_tag tag = l->tag;
    if (tag == KORCH_LAYOUT_TRANSPOSE || tag == KORCH_LAYOUT_RESHAPE || tag == KORCH_LAYOUT_EXPAND ||
        tag == KORCH_LAYOUT_DEPTH_SPACE || tag == KORCH_LAYOUT_GATHER)
        tag = KORCH_LAYOUT_GENERIC;
    int old_axis = l->axis;
    double pad = l->pad_value;
    int y = -1;
    if (ok) y = korch_pgraph_layout(pg, tag, n_maps, ins, &out, maps, pad);
    if (y < 0) {
        for (int p = 0; p < n_maps; p++)
            for (int j = 0; j < r; j++) free(maps[p].terms[j].table);
        free(maps);
        if (ok) return -1;
        korch_error(KORCH_ERR_OUT_OF_MEMORY, "layout pass: out of memory");
        return -1;
    }
    free(maps); /* the node owns the tables now */
    if (tag == KORCH_LAYOUT_CONCAT && old_axis >= 0 && old_axis < R)
        pg->nodes[pg->values[y].producer].u.layout.axis = (int)Qinv[old_axis];
    int rc = finish(s, e, y, Qinv);
    if (rc > 0 && s->stats) s->stats->sunk_layout++;
    return rc;
}

int lp_sink(lp_state *s, int tnode, int consumer) {
    korch_pgraph *pg = s->pg;
    int64_t P[KORCH_MAX_RANK];
    if (!lp_transpose_perm(pg, tnode, P)) return 0;
    const korch_pnode *c = &pg->nodes[consumer];
    if (c->dead) return 0;
    switch (c->kind) {
    case KORCH_PRIM_ELEMENTWISE: return sink_elementwise(s, tnode, consumer, P);
    case KORCH_PRIM_REDUCE:
        if (c->inputs[0] != pg->nodes[tnode].outputs[0]) return 0;
        return sink_reduce(s, tnode, consumer, P);
    case KORCH_PRIM_LAYOUT: {
        int64_t other[KORCH_MAX_RANK];
        if (lp_transpose_perm(pg, consumer, other)) return 0; /* cancelled or merged, not moved */
        return sink_layout(s, tnode, consumer, P);
    }
    default: return 0;
    }
}
