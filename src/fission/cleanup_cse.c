/* Common-subexpression elimination: equal constants become one value, then
 * nodes of the same primitive with the same parameters and the same inputs
 * become one node (in topological order, so equalities cascade). Opaque
 * nodes are left alone, and so are nodes computing a graph output (each
 * output keeps a node of its own). */
#include <stdlib.h>
#include <string.h>

#include "fission/cleanup_internal.h"

static uint64_t mix(uint64_t h, uint64_t v) {
    h ^= v + 0x9E3779B97F4A7C15ull + (h << 6) + (h >> 2);
    return h * 0xBF58476D1CE4E5B9ull;
}

static uint64_t hash_bytes(uint64_t h, const void *data, size_t n) {
    const unsigned char *p = data;
    for (size_t i = 0; i < n; i++) h = (h ^ p[i]) * 0x100000001B3ull;
    return h;
}

static uint64_t hash_shape(uint64_t h, korch_dtype dt, const korch_shape *s) {
    h = mix(h, (uint64_t)dt);
    h = mix(h, (uint64_t)s->rank);
    for (int k = 0; k < s->rank; k++) h = mix(h, (uint64_t)s->dims[k]);
    return h;
}

/* A constant's hash reads a bounded sample of its bytes: the first and last
 * SAMPLE_EDGE and SAMPLE_WORDS 8-byte words spread over the rest. Equal
 * constants hash equal all the same (the sample depends only on the bytes
 * and the size), and constants_equal compares every byte when hashes meet.
 * Hashing every byte cost 14% of a ViT-B/16 optimise (330 MB of weights,
 * byte-wise FNV, once per clean-up pass; perf, 2026-11-26). */
#define SAMPLE_EDGE 256
#define SAMPLE_WORDS 256

static uint64_t hash_constant(const korch_pvalue *v) {
    uint64_t h = hash_shape(1469598103934665603ull, v->dtype, &v->shape);
    size_t bytes = (size_t)korch_shape_numel(&v->shape) * korch_dtype_size(v->dtype);
    const unsigned char *p = v->constant.data;
    if (bytes <= 2 * SAMPLE_EDGE + 8 * SAMPLE_WORDS) return hash_bytes(h, p, bytes);
    h = hash_bytes(h, p, SAMPLE_EDGE);
    h = hash_bytes(h, p + bytes - SAMPLE_EDGE, SAMPLE_EDGE);
    size_t span = bytes - 2 * SAMPLE_EDGE - 8, step = span / SAMPLE_WORDS;
    for (size_t i = 0; i < SAMPLE_WORDS; i++) {
        uint64_t w;
        memcpy(&w, p + SAMPLE_EDGE + i * step, sizeof w);
        h = mix(h, w);
    }
    return h;
}

static bool constants_equal(const korch_pvalue *a, const korch_pvalue *b) {
    if (a->dtype != b->dtype || !korch_shape_equal(&a->shape, &b->shape)) return false;
    size_t bytes = (size_t)korch_shape_numel(&a->shape) * korch_dtype_size(a->dtype);
    return a->constant.data == b->constant.data || memcmp(a->constant.data, b->constant.data, bytes) == 0;
}

static uint64_t hash_map(uint64_t h, const korch_index_map *m) {
    h = mix(h, (uint64_t)m->input_rank);
    for (int k = 0; k < m->input_rank; k++) {
        const korch_index_term *t = &m->terms[k];
        h = hash_bytes(h, t->coef, sizeof t->coef);
        h = mix(mix(mix(h, (uint64_t)t->offset), (uint64_t)t->div), (uint64_t)t->mod);
        if (t->table) h = hash_bytes(h, t->table, (size_t)t->table_size * sizeof(int64_t));
    }
    return h;
}

static bool maps_equal(const korch_index_map *a, const korch_index_map *b) {
    if (a->input_rank != b->input_rank || a->may_be_out_of_bounds != b->may_be_out_of_bounds) return false;
    for (int k = 0; k < a->input_rank; k++) {
        const korch_index_term *s = &a->terms[k], *t = &b->terms[k];
        if (memcmp(s->coef, t->coef, sizeof s->coef) || s->offset != t->offset || s->div != t->div ||
            s->mod != t->mod || s->table_size != t->table_size || (!s->table) != (!t->table))
            return false;
        if (s->table && memcmp(s->table, t->table, (size_t)s->table_size * sizeof(int64_t))) return false;
    }
    return true;
}

static bool linear_equal(const korch_prim_linear *a, const korch_prim_linear *b) {
    if (a->op != b->op || a->spatial != b->spatial || a->group != b->group || a->channels_last != b->channels_last)
        return false;
    for (int d = 0; d < 3; d++)
        if (a->strides[d] != b->strides[d] || a->dilations[d] != b->dilations[d] ||
            a->pads_begin[d] != b->pads_begin[d] || a->pads_end[d] != b->pads_end[d] ||
            a->output_padding[d] != b->output_padding[d])
            return false;
    return true;
}

static uint64_t hash_node(const korch_pgraph *pg, const korch_pnode *n) {
    uint64_t h = mix(7, (uint64_t)n->kind);
    for (int k = 0; k < n->n_inputs; k++) h = mix(h, (uint64_t)n->inputs[k]);
    const korch_pvalue *y = &pg->values[n->outputs[0]];
    h = hash_shape(h, y->dtype, &y->shape);
    switch (n->kind) {
    case KORCH_PRIM_ELEMENTWISE: h = mix(h, (uint64_t)n->u.ew.op); break;
    case KORCH_PRIM_REDUCE: h = mix(mix(mix(h, n->u.reduce.op), n->u.reduce.axes), n->u.reduce.keepdims); break;
    case KORCH_PRIM_LAYOUT:
        for (int p = 0; p < n->u.layout.n_maps; p++) h = hash_map(h, &n->u.layout.maps[p]);
        break;
    case KORCH_PRIM_LINEAR: h = mix(mix(h, n->u.linear.op), (uint64_t)n->u.linear.group); break;
    default: break;
    }
    return h;
}

static bool nodes_equal(const korch_pgraph *pg, const korch_pnode *a, const korch_pnode *b) {
    if (a->kind != b->kind || a->n_inputs != b->n_inputs || a->n_outputs != 1 || b->n_outputs != 1) return false;
    for (int k = 0; k < a->n_inputs; k++)
        if (a->inputs[k] != b->inputs[k]) return false;
    const korch_pvalue *ya = &pg->values[a->outputs[0]], *yb = &pg->values[b->outputs[0]];
    if (ya->dtype != yb->dtype || !korch_shape_equal(&ya->shape, &yb->shape)) return false;
    switch (a->kind) {
    case KORCH_PRIM_ELEMENTWISE:
        return a->u.ew.op == b->u.ew.op && a->u.ew.alpha == b->u.ew.alpha && a->u.ew.beta == b->u.ew.beta;
    case KORCH_PRIM_REDUCE:
        return a->u.reduce.op == b->u.reduce.op && a->u.reduce.axes == b->u.reduce.axes &&
               a->u.reduce.keepdims == b->u.reduce.keepdims;
    case KORCH_PRIM_LAYOUT: {
        const korch_prim_layout *la = &a->u.layout, *lb = &b->u.layout;
        if (la->n_maps != lb->n_maps || la->pad_value != lb->pad_value) return false;
        for (int p = 0; p < la->n_maps; p++)
            if (!maps_equal(&la->maps[p], &lb->maps[p])) return false;
        return true;
    }
    case KORCH_PRIM_LINEAR: return linear_equal(&a->u.linear, &b->u.linear);
    default: return false;
    }
}

/* Open-addressing table of indices (values or nodes) keyed by a hash. */
typedef struct index_table {
    int *slots;
    uint64_t *hashes;
    size_t mask;
} index_table;

static bool table_init(index_table *t, int n) {
    size_t cap = 16;
    while (cap < (size_t)n * 2) cap <<= 1;
    t->slots = malloc(cap * sizeof *t->slots);
    t->hashes = malloc(cap * sizeof *t->hashes);
    t->mask = cap - 1;
    if (!t->slots || !t->hashes) return false;
    for (size_t i = 0; i < cap; i++) t->slots[i] = -1;
    return true;
}

static void table_free(index_table *t) {
    free(t->slots);
    free(t->hashes);
}

/* Returns an equal entry already present, or inserts `item` and returns -1. */
static int table_find_or_add(index_table *t, uint64_t h, int item, bool (*equal)(const void *, int, int),
                             const void *ctx) {
    for (size_t i = h & t->mask;; i = (i + 1) & t->mask) {
        if (t->slots[i] < 0) {
            t->slots[i] = item;
            t->hashes[i] = h;
            return -1;
        }
        if (t->hashes[i] == h && equal(ctx, t->slots[i], item)) return t->slots[i];
    }
}

static bool value_eq(const void *ctx, int a, int b) {
    const korch_pgraph *pg = ctx;
    return constants_equal(&pg->values[a], &pg->values[b]);
}

static bool node_eq(const void *ctx, int a, int b) {
    const korch_pgraph *pg = ctx;
    return nodes_equal(pg, &pg->nodes[a], &pg->nodes[b]);
}

korch_status korch_cleanup_cse(korch_pgraph *pg, int *changed) {
    *changed = 0;
    int *order = NULL, count = 0;
    KORCH_TRY(korch_cleanup_order(pg, &order, &count));
    bool *is_output = korch_cleanup_output_flags(pg);
    korch_value_repl repl = {0};
    index_table values = {0}, nodes = {0};
    korch_status st = KORCH_OK;
    if (!is_output || korch_value_repl_init(&repl, pg) != KORCH_OK || !table_init(&values, pg->n_values) ||
        !table_init(&nodes, count)) {
        st = korch_error(KORCH_ERR_OUT_OF_MEMORY, "clean-up: out of memory");
        goto done;
    }
    for (int v = 0; v < pg->n_values; v++) {
        const korch_pvalue *pv = &pg->values[v];
        if (!pv->is_constant || is_output[v]) continue;
        int same = table_find_or_add(&values, hash_constant(pv), v, value_eq, pg);
        if (same >= 0) repl.to[v] = same;
    }
    for (int i = 0; i < count; i++) {
        int ni = order[i];
        korch_pnode *n = &pg->nodes[ni];
        korch_value_repl_node(&repl, pg, ni);
        if (n->kind == KORCH_PRIM_OPAQUE || n->n_outputs != 1 || is_output[n->outputs[0]]) continue;
        int same = table_find_or_add(&nodes, hash_node(pg, n), ni, node_eq, pg);
        if (same < 0) continue;
        repl.to[n->outputs[0]] = pg->nodes[same].outputs[0];
        n->dead = true;
        (*changed)++;
    }
    korch_value_repl_apply(&repl, pg);
done:
    table_free(&values);
    table_free(&nodes);
    korch_value_repl_free(&repl);
    free(is_output);
    free(order);
    return st;
}
