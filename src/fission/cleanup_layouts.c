/* Layout simplification: removes identity layouts, cancels chains of pure
 * layouts whose composition is the identity (reshape/transpose pairs,
 * DepthToSpace after SpaceToDepth, ...), and merges two consecutive pure
 * layouts into one when the composition is again a standard transpose,
 * reshape, slice or expand (transpose of transpose, reshape of reshape, a
 * transpose that only moves unit dimensions, ...). */
#include <stdlib.h>
#include <string.h>

#include "fission/cleanup_internal.h"
#include "ir/indexmap.h"

/* Longest chain of layouts checked for an identity composition, and the
 * element count up to which the check enumerates (it is exact, not sampled). */
#define CHAIN_MAX 8
#define CHAIN_ELEMENTS_MAX ((int64_t)1 << 22)

static int producer_layout(const korch_pgraph *pg, int v) {
    int p = pg->values[v].producer;
    if (p < 0 || pg->nodes[p].dead || !korch_layout_is_pure(pg, p)) return -1;
    return p;
}

/* Does the chain chain[0] (last) ... chain[len-1] (first) map every output
 * coordinate to the same coordinate of the first node's input? */
static bool chain_is_identity(const korch_pgraph *pg, const int *chain, int len) {
    const korch_shape *out = &pg->values[pg->nodes[chain[0]].outputs[0]].shape;
    const korch_shape *in = &pg->values[pg->nodes[chain[len - 1]].inputs[0]].shape;
    if (!korch_shape_equal(in, out)) return false;
    int64_t n = korch_shape_numel(out);
    if (n > CHAIN_ELEMENTS_MAX) return false;
    int64_t o[KORCH_MAX_RANK] = {0};
    for (int64_t i = 0; i < n; i++) {
        int64_t a[KORCH_MAX_RANK] = {0}, b[KORCH_MAX_RANK] = {0};
        memcpy(a, o, sizeof o);
        for (int c = 0; c < len; c++) {
            const korch_pnode *node = &pg->nodes[chain[c]];
            const korch_shape *s = &pg->values[node->inputs[0]].shape;
            if (!korch_index_map_eval(&node->u.layout.maps[0], s, a, b)) return false;
            memset(a, 0, sizeof a);
            memcpy(a, b, (size_t)s->rank * sizeof b[0]);
        }
        for (int k = 0; k < out->rank; k++)
            if (a[k] != o[k]) return false;
        for (int k = out->rank - 1; k >= 0; k--) {
            if (++o[k] < out->dims[k]) break;
            o[k] = 0;
        }
    }
    return true;
}

static bool term_is_affine(const korch_index_term *t) { return t->div == 1 && t->mod == 0 && !t->table; }

static bool copy_table(korch_index_term *t, int64_t scale, int64_t shift) {
    if (!t->table) return true;
    int64_t *copy = malloc((size_t)(t->table_size ? t->table_size : 1) * sizeof *copy);
    if (!copy) return false;
    for (int64_t i = 0; i < t->table_size; i++) copy[i] = t->table[i] < 0 ? t->table[i] : scale * t->table[i] + shift;
    t->table = copy;
    return true;
}

/* The map of inner(outer(o)): outer maps the final output to the middle
 * tensor, inner maps the middle tensor to the input. False when the result is
 * not expressible as one term per input dimension. */
static bool compose(const korch_index_map *inner, const korch_shape *mid, const korch_index_map *outer,
                    korch_index_map *out) {
    memset(out, 0, sizeof *out);
    out->input_rank = inner->input_rank;
    for (int i = 0; i < inner->input_rank; i++) {
        const korch_index_term *t = &inner->terms[i];
        int used[KORCH_MAX_RANK], n_used = 0;
        bool outer_affine = true;
        for (int k = 0; k < mid->rank; k++) {
            if (!t->coef[k] || mid->dims[k] == 1) continue; /* unit dims are always 0 */
            used[n_used++] = k;
            if (!term_is_affine(&outer->terms[k])) outer_affine = false;
        }
        korch_index_term r;
        if (outer_affine) {
            r = *t;
            memset(r.coef, 0, sizeof r.coef);
            for (int u = 0; u < n_used; u++) {
                const korch_index_term *o = &outer->terms[used[u]];
                for (int j = 0; j < KORCH_MAX_RANK; j++) r.coef[j] += t->coef[used[u]] * o->coef[j];
                r.offset += t->coef[used[u]] * o->offset;
            }
            if (!copy_table(&r, 1, 0)) return false;
        } else if (n_used == 1 && term_is_affine(t)) {
            int64_t c = t->coef[used[0]], d = t->offset;
            r = outer->terms[used[0]];
            if (c == 1 && d == 0) {
                if (!copy_table(&r, 1, 0)) return false;
            } else if (r.table && r.div == 1 && r.mod == 0) {
                if (!copy_table(&r, c, d)) return false;
            } else {
                return false;
            }
        } else {
            return false;
        }
        out->terms[i] = r;
    }
    return true;
}

static void free_map_tables(korch_index_map *m) {
    for (int k = 0; k < m->input_rank; k++) {
        free(m->terms[k].table);
        m->terms[k].table = NULL;
    }
}

/* Rebuilds a layout recognised as a standard operation with its canonical
 * constructor (simple maps, right tag); -1 when it is none of them. */
static int canonical(korch_pgraph *pg, int node, int x) {
    const korch_shape out = pg->values[pg->nodes[node].outputs[0]].shape;
    int64_t perm[KORCH_MAX_RANK], starts[KORCH_MAX_RANK], steps[KORCH_MAX_RANK];
    if (korch_layout_as_transpose(pg, node, perm)) {
        bool moves_data = false;
        int last = -1;
        for (int j = 0; j < out.rank; j++) {
            if (out.dims[j] == 1) continue;
            if (perm[j] < last) moves_data = true;
            last = (int)perm[j];
        }
        return moves_data ? korch_pgraph_transpose(pg, x, perm) : korch_pgraph_reshape(pg, x, &out);
    }
    if (korch_layout_as_reshape(pg, node)) return korch_pgraph_reshape(pg, x, &out);
    if (korch_layout_as_slice(pg, node, starts, steps)) return korch_pgraph_slice(pg, x, starts, steps, &out);
    if (korch_layout_as_expand(pg, node)) return korch_pgraph_expand(pg, x, &out);
    return -1;
}

/* Replaces node b (reading a's output) by one layout from a's input when the
 * composition is a standard operation. Returns the new value or -1. */
static int merge_pair(korch_pgraph *pg, int a, int b) {
    korch_index_map m;
    const korch_shape *mid = &pg->values[pg->nodes[a].outputs[0]].shape;
    if (!compose(&pg->nodes[a].u.layout.maps[0], mid, &pg->nodes[b].u.layout.maps[0], &m)) return -1;
    int x = pg->nodes[a].inputs[0];
    korch_shape out = pg->values[pg->nodes[b].outputs[0]].shape;
    int y = korch_pgraph_layout(pg, KORCH_LAYOUT_GENERIC, 1, &x, &out, &m, 0.0);
    if (y < 0) {
        free_map_tables(&m);
        return -1;
    }
    int tmp = pg->values[y].producer;
    int r = canonical(pg, tmp, x);
    pg->nodes[tmp].dead = true;
    return r;
}

/* A layout that moves only unit dimensions (tagged as a transpose) is a reshape. */
static bool is_reshaping_transpose(const korch_pgraph *pg, int node) {
    korch_layout_tag tag = pg->nodes[node].u.layout.tag;
    return (tag == KORCH_LAYOUT_TRANSPOSE || tag == KORCH_LAYOUT_DEPTH_SPACE) && korch_layout_as_reshape(pg, node);
}

korch_status korch_cleanup_layouts(korch_pgraph *pg, int *changed) {
    *changed = 0;
    int *order = NULL, count = 0;
    KORCH_TRY(korch_cleanup_order(pg, &order, &count));
    int *uses = korch_cleanup_use_counts(pg);
    korch_value_repl repl = {0};
    korch_status st = uses ? korch_value_repl_init(&repl, pg) : korch_error(KORCH_ERR_OUT_OF_MEMORY, "out of memory");
    int first_new = pg->n_nodes, old_values = pg->n_values;
    for (int i = 0; i < count && st == KORCH_OK; i++) {
        int b = order[i];
        if (pg->nodes[b].kind != KORCH_PRIM_LAYOUT) continue;
        korch_value_repl_node(&repl, pg, b);
        if (!korch_layout_is_pure(pg, b)) continue;
        int y = pg->nodes[b].outputs[0];
        int x = pg->nodes[b].inputs[0];
        int to = -1;
        if (korch_layout_is_identity(pg, b)) {
            to = x;
        } else {
            /* identity chains ending at b */
            int chain[CHAIN_MAX] = {b}, len = 1, v = x;
            while (len < CHAIN_MAX && to < 0) {
                int p = producer_layout(pg, v);
                if (p < 0) break;
                chain[len++] = p;
                v = pg->nodes[p].inputs[0];
                if (chain_is_identity(pg, chain, len)) to = v;
            }
            int a = producer_layout(pg, x);
            /* values made by this pass have no use count yet: next round */
            if (to < 0 && a >= 0 && x < old_values && uses[x] == 1) to = merge_pair(pg, a, b);
            if (to < 0 && is_reshaping_transpose(pg, b)) {
                korch_shape out = pg->values[y].shape;
                to = korch_pgraph_reshape(pg, x, &out);
            }
        }
        if (to < 0) continue;
        int tn = pg->values[to].producer;
        if (tn >= first_new) pg->nodes[tn].source_node = pg->nodes[b].source_node;
        repl.to[y] = to;
        pg->nodes[b].dead = true;
        (*changed)++;
    }
    if (st == KORCH_OK) korch_value_repl_apply(&repl, pg);
    korch_value_repl_free(&repl);
    free(uses);
    free(order);
    return st;
}
