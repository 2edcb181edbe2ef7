/* Layout recognisers (indexmap.h): read a layout node's index maps back as a
 * standard operation -- whatever its tag says -- for the clean-ups and the
 * ONNX export. Syntactic checks first; exact element-by-element checks for
 * maps written differently (bounded by ENUMERATE_LIMIT). */
#include <stdlib.h>
#include <string.h>

#include "ir/indexmap.h"


static const korch_prim_layout *layout_of(const korch_pgraph *pg, int node) {
    if (node < 0 || node >= pg->n_nodes || pg->nodes[node].kind != KORCH_PRIM_LAYOUT) return NULL;
    return &pg->nodes[node].u.layout;
}

static const korch_shape *in_shape(const korch_pgraph *pg, int node, int p) {
    return &pg->values[pg->nodes[node].inputs[p]].shape;
}

static const korch_shape *out_shape(const korch_pgraph *pg, int node) {
    return &pg->values[pg->nodes[node].outputs[0]].shape;
}

/* Ignoring output dims of size 1 (their coordinate is always 0), is the term
 * `c * o_j + offset` with no div, mod or table? j = -1 for a constant. */
static bool term_affine(const korch_index_term *t, const korch_shape *out, int *j, int64_t *c) {
    if (t->div != 1 || t->mod != 0 || t->table) return false;
    *j = -1;
    *c = 0;
    for (int q = 0; q < out->rank; q++) {
        if (!t->coef[q] || out->dims[q] == 1) continue;
        if (*j >= 0) return false;
        *j = q;
        *c = t->coef[q];
    }
    return true;
}

bool korch_layout_is_pure(const korch_pgraph *pg, int node) {
    const korch_prim_layout *l = layout_of(pg, node);
    return l && l->n_maps == 1 && !l->maps[0].may_be_out_of_bounds;
}

/* Limit for recognisers that enumerate every element. */
#define ENUMERATE_LIMIT ((int64_t)1 << 24)

static void next_coord(const korch_shape *s, int64_t *o) {
    for (int k = s->rank - 1; k >= 0; k--) {
        if (++o[k] < s->dims[k]) return;
        o[k] = 0;
    }
}

bool korch_layout_is_identity(const korch_pgraph *pg, int node) {
    if (!korch_layout_is_pure(pg, node)) return false;
    const korch_shape *in = in_shape(pg, node, 0), *out = out_shape(pg, node);
    if (!korch_shape_equal(in, out)) return false;
    const korch_index_map *m = &pg->nodes[node].u.layout.maps[0];
    bool syntactic = true;
    for (int k = 0; k < in->rank && syntactic; k++) {
        int j;
        int64_t c;
        if (in->dims[k] == 1) continue; /* in bounds, so always 0 */
        syntactic = term_affine(&m->terms[k], out, &j, &c) && j == k && c == 1 && m->terms[k].offset == 0;
    }
    if (syntactic) return true;
    int64_t n = korch_shape_numel(out);
    if (n > ENUMERATE_LIMIT) return false;
    int64_t o[KORCH_MAX_RANK] = {0}, c[KORCH_MAX_RANK];
    for (int64_t i = 0; i < n; i++, next_coord(out, o)) {
        if (!korch_index_map_eval(m, in, o, c)) return false;
        for (int k = 0; k < in->rank; k++)
            if (c[k] != o[k]) return false;
    }
    return true;
}

bool korch_layout_as_transpose(const korch_pgraph *pg, int node, int64_t *perm) {
    if (!korch_layout_is_pure(pg, node)) return false;
    const korch_shape *in = in_shape(pg, node, 0), *out = out_shape(pg, node);
    if (in->rank != out->rank) return false;
    const korch_index_map *m = &pg->nodes[node].u.layout.maps[0];
    bool used[KORCH_MAX_RANK] = {0};
    for (int k = 0; k < in->rank; k++) {
        perm[k] = -1;
        if (in->dims[k] == 1) continue;
        int j;
        int64_t c;
        if (!term_affine(&m->terms[k], out, &j, &c) || j < 0 || c != 1 || m->terms[k].offset != 0 ||
            out->dims[j] != in->dims[k] || used[j])
            return false;
        used[j] = true;
        perm[k] = j; /* inverse permutation for now */
    }
    /* unit input dims take the unused unit output dims, in order */
    for (int k = 0; k < in->rank; k++) {
        if (perm[k] >= 0) continue;
        int j = 0;
        while (j < out->rank && (used[j] || out->dims[j] != 1)) j++;
        if (j == out->rank) return false;
        used[j] = true;
        perm[k] = j;
    }
    int64_t inverse[KORCH_MAX_RANK];
    for (int k = 0; k < in->rank; k++) inverse[k] = perm[k];
    for (int k = 0; k < in->rank; k++) perm[inverse[k]] = k;
    return true;
}

static int64_t flat_offset(const korch_shape *s, const int64_t *c) {
    int64_t off = 0;
    for (int k = 0; k < s->rank; k++) off = off * s->dims[k] + c[k];
    return off;
}

static bool maps_equal(const korch_index_map *a, const korch_index_map *b) {
    if (a->input_rank != b->input_rank) return false;
    for (int k = 0; k < a->input_rank; k++) {
        const korch_index_term *s = &a->terms[k], *t = &b->terms[k];
        if (memcmp(s->coef, t->coef, sizeof s->coef) || s->offset != t->offset || s->div != t->div ||
            s->mod != t->mod || s->table_size != t->table_size || (!s->table) != (!t->table))
            return false;
        if (s->table && memcmp(s->table, t->table, (size_t)s->table_size * sizeof(int64_t))) return false;
    }
    return true;
}

bool korch_layout_as_reshape(const korch_pgraph *pg, int node) {
    if (!korch_layout_is_pure(pg, node)) return false;
    const korch_shape *in = in_shape(pg, node, 0), *out = out_shape(pg, node);
    int64_t n = korch_shape_numel(out);
    if (n != korch_shape_numel(in)) return false;
    const korch_index_map *m = &pg->nodes[node].u.layout.maps[0];
    korch_index_map canonical;
    korch_index_map_reshape(in, out, &canonical);
    if (maps_equal(m, &canonical)) return true;
    if (n > ENUMERATE_LIMIT) return false;
    int64_t o[KORCH_MAX_RANK] = {0}, c[KORCH_MAX_RANK];
    for (int64_t i = 0; i < n; i++, next_coord(out, o)) {
        if (!korch_index_map_eval(m, in, o, c) || flat_offset(in, c) != i) return false;
    }
    return true;
}

bool korch_layout_as_slice(const korch_pgraph *pg, int node, int64_t *starts, int64_t *steps) {
    if (!korch_layout_is_pure(pg, node)) return false;
    const korch_shape *in = in_shape(pg, node, 0), *out = out_shape(pg, node);
    if (in->rank != out->rank) return false;
    const korch_index_map *m = &pg->nodes[node].u.layout.maps[0];
    for (int k = 0; k < in->rank; k++) {
        int j;
        int64_t c;
        if (!term_affine(&m->terms[k], out, &j, &c)) return false;
        if (out->dims[k] == 1) c = 1; /* o_k is always 0: any step */
        else if (j != k) return false;
        starts[k] = m->terms[k].offset;
        steps[k] = c;
    }
    return true;
}

bool korch_layout_as_pad(const korch_pgraph *pg, int node, int64_t *begins, int64_t *ends) {
    const korch_prim_layout *l = layout_of(pg, node);
    if (!l || l->n_maps != 1) return false;
    const korch_shape *in = in_shape(pg, node, 0), *out = out_shape(pg, node);
    if (in->rank != out->rank) return false;
    for (int k = 0; k < in->rank; k++) {
        int j;
        int64_t c;
        if (!term_affine(&l->maps[0].terms[k], out, &j, &c)) return false;
        if (out->dims[k] != 1 && (j != k || c != 1)) return false;
        begins[k] = -l->maps[0].terms[k].offset;
        ends[k] = out->dims[k] - in->dims[k] - begins[k];
    }
    return true;
}

bool korch_layout_as_expand(const korch_pgraph *pg, int node) {
    if (!korch_layout_is_pure(pg, node)) return false;
    const korch_shape *in = in_shape(pg, node, 0), *out = out_shape(pg, node);
    int lead = out->rank - in->rank;
    if (lead < 0) return false;
    const korch_index_map *m = &pg->nodes[node].u.layout.maps[0];
    for (int k = 0; k < in->rank; k++) {
        if (in->dims[k] == 1) continue;
        int j;
        int64_t c;
        if (!term_affine(&m->terms[k], out, &j, &c) || j != lead + k || c != 1 || m->terms[k].offset != 0 ||
            out->dims[j] != in->dims[k])
            return false;
    }
    return true;
}

bool korch_layout_as_concat(const korch_pgraph *pg, int node, int *axis) {
    const korch_prim_layout *l = layout_of(pg, node);
    if (!l || l->n_maps < 1) return false;
    const korch_shape *out = out_shape(pg, node);
    int a = -1;
    for (int p = 0; p < l->n_maps; p++) {
        const korch_shape *in = in_shape(pg, node, p);
        if (in->rank != out->rank) return false;
        for (int k = 0; k < in->rank; k++) {
            int j;
            int64_t c;
            const korch_index_term *t = &l->maps[p].terms[k];
            if (!term_affine(t, out, &j, &c) || (out->dims[k] != 1 && (j != k || c != 1))) return false;
            if ((in->dims[k] != out->dims[k] || t->offset != 0) && a < 0) a = k;
        }
    }
    if (a < 0) a = 0; /* a single input that is copied whole */
    int64_t offset = 0;
    for (int p = 0; p < l->n_maps; p++) {
        const korch_shape *in = in_shape(pg, node, p);
        for (int k = 0; k < in->rank; k++) {
            const korch_index_term *t = &l->maps[p].terms[k];
            if (k == a ? t->offset != -offset : (t->offset != 0 || in->dims[k] != out->dims[k])) return false;
        }
        offset += in->dims[a];
    }
    if (offset != out->dims[a]) return false;
    *axis = a;
    return true;
}

int64_t korch_layout_source(const korch_pgraph *pg, int node, int64_t flat, int *input) {
    const korch_prim_layout *l = &pg->nodes[node].u.layout;
    const korch_shape *out = out_shape(pg, node);
    int64_t o[KORCH_MAX_RANK] = {0}, c[KORCH_MAX_RANK];
    for (int k = out->rank - 1; k >= 0; k--) {
        o[k] = out->dims[k] ? flat % out->dims[k] : 0;
        flat = out->dims[k] ? flat / out->dims[k] : 0;
    }
    for (int p = 0; p < l->n_maps; p++) {
        const korch_shape *in = in_shape(pg, node, p);
        if (!korch_index_map_eval(&l->maps[p], in, o, c)) continue;
        *input = p;
        return flat_offset(in, c);
    }
    *input = -1;
    return -1;
}
