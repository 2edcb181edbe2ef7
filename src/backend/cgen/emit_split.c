/* Output passes whose innermost loop is split where a concat switches input.
 *
 * A concat along the last axis (every channel concat once the layout pass
 * made a model channels-last) selects its input per element of the
 * innermost loop: as one loop, every element evaluates each input's bounds
 * check and reads through a select chain (masked loads and blends per
 * input). Split at the points where those checks change, the loop becomes
 * one loop per segment, each with its symbol's range narrowed to the
 * segment, and the range analysis then proves each check true or false:
 * every segment is a plain contiguous copy (or whatever elementwise work
 * the pass does on it). Measured on three 1x64x112x112 inputs concatenated
 * along the last axis: bench/kernels/RESULTS.md.
 *
 * The split points come from the kernel's structure: from the pass's value
 * back through elementwise nodes (which keep coordinates) to layout nodes of
 * the same shape, every map term that is the innermost output coordinate
 * plus an offset, with neither div, mod nor table, bounds the input it reads
 * at two points. */
#include <stdio.h>
#include <stdlib.h>

#include "backend/cgen/emit.h"

enum { MAX_SEGMENTS = 8 };

static void add_point(int64_t *pts, int *n, int64_t p, int64_t ext) {
    if (p <= 0 || p >= ext || *n > MAX_SEGMENTS) return;
    for (int i = 0; i < *n; i++)
        if (pts[i] == p) return;
    pts[(*n)++] = p;
}

enum { MAX_LAYOUTS = 16 };

/* The layout nodes that produce `value`'s shape, reached from `value`
 * through elementwise nodes (whose inputs of the same rank and last extent
 * keep the innermost coordinate). Returns their number (at most
 * MAX_LAYOUTS), or -1 when such a value has a producer of another kind (a
 * reduction): the innermost loop then stays as it is. */
static int feeding_layouts(const cg_kernel *k, int value, const cg_node **out) {
    const cg_value *w = &k->values[value];
    int rank = w->shape.rank, last = rank - 1, n = 0;
    int64_t ext = w->shape.dims[last];
    int stack[64], sp = 0;
    bool *seen = calloc((size_t)k->n_values + 1, sizeof *seen);
    if (!seen) return -1;
    stack[sp++] = value;
    seen[value] = true;
    while (sp > 0 && n >= 0) {
        const cg_value *v = &k->values[stack[--sp]];
        if (v->producer < 0) continue;
        const cg_node *nd = &k->nodes[v->producer];
        if (nd->pn->kind == KORCH_PRIM_ELEMENTWISE) {
            for (int i = 0; i < nd->n_in && sp < 64; i++) {
                const cg_value *u = &k->values[nd->in[i]];
                if (seen[nd->in[i]] || u->shape.rank != rank || u->shape.dims[last] != ext) continue;
                seen[nd->in[i]] = true;
                stack[sp++] = nd->in[i];
            }
        } else if (nd->pn->kind == KORCH_PRIM_LAYOUT) {
            if (korch_shape_equal(&v->shape, &w->shape) && n < MAX_LAYOUTS) out[n++] = nd;
        } else {
            n = -1;
        }
    }
    free(seen);
    return n;
}

/* Interior split points of the innermost dimension of `value` (sorted), or
 * 0 when there are none or more than MAX_SEGMENTS - 1: where a map term
 * that is the innermost coordinate plus an offset leaves its input. */
static int split_points(const cg_emit *e, int value, int64_t *pts) {
    const cg_node *lay[MAX_LAYOUTS];
    int nl = feeding_layouts(e->k, value, lay), last = e->k->values[value].shape.rank - 1, n = 0;
    int64_t ext = e->k->values[value].shape.dims[last];
    for (int i = 0; i < nl; i++) {
        const korch_prim_layout *l = &lay[i]->pn->u.layout;
        for (int p = 0; p < l->n_maps; p++) {
            const korch_index_map *m = &l->maps[p];
            const cg_value *u = &e->k->values[lay[i]->in[p]];
            for (int t = 0; t < m->input_rank; t++) {
                const korch_index_term *term = &m->terms[t];
                if (term->coef[last] != 1 || term->div > 1 || term->mod > 0 || term->table) continue;
                bool alone = true;
                for (int d = 0; d < last; d++) alone &= term->coef[d] == 0;
                if (!alone) continue;
                add_point(pts, &n, -term->offset, ext);
                add_point(pts, &n, u->shape.dims[t] - term->offset, ext);
            }
        }
    }
    if (n == 0 || n > MAX_SEGMENTS - 1) return 0;
    for (int i = 1; i < n; i++) /* insertion sort: a handful of points */
        for (int j = i; j > 0 && pts[j - 1] > pts[j]; j--) {
            int64_t t = pts[j];
            pts[j] = pts[j - 1];
            pts[j - 1] = t;
        }
    return n;
}

/* floor((i + q) / f) for every i of the table, 0 <= q < f, 2 <= f <= 64:
 * the factor f (and q), else 0. A nearest-neighbour resize by an integer
 * factor has such a table. */
int64_t cg_table_as_div(const int64_t *table, int64_t size, int64_t *q_out) {
    if (size < 2 || table[0] != 0) return 0;
    int64_t run = 1; /* entries equal to 0: f - q of them */
    while (run < size && table[run] == 0) run++;
    for (int64_t f = run < 2 ? 2 : run; f <= 64; f++) {
        int64_t q = f - run;
        bool ok = true;
        for (int64_t i = 0; i < size && ok; i++) ok = table[i] == (i + q) / f;
        if (ok) {
            *q_out = q;
            return f;
        }
    }
    return 0;
}

/* The factor f > 1 by which every layout term reading the innermost output
 * coordinate divides it (floor(x / f), as a div or as a nearest-resize
 * table), when all such terms agree and f divides the extent; else 0. */
static int64_t residue_factor(const cg_emit *e, int value) {
    const cg_node *lay[MAX_LAYOUTS];
    int nl = feeding_layouts(e->k, value, lay), last = e->k->values[value].shape.rank - 1;
    int64_t ext = e->k->values[value].shape.dims[last], f = 0;
    for (int i = 0; i < nl; i++) {
        const korch_prim_layout *l = &lay[i]->pn->u.layout;
        for (int p = 0; p < l->n_maps; p++)
            for (int t = 0; t < l->maps[p].input_rank; t++) {
                const korch_index_term *term = &l->maps[p].terms[t];
                if (term->coef[last] == 0) continue;
                int64_t g = 0, q = 0;
                bool plain = term->coef[last] == 1 && term->offset == 0 && term->mod == 0;
                if (plain && !term->table) g = term->div;
                else if (plain && term->div <= 1 && term->table && term->table_size == ext) {
                    g = cg_table_as_div(term->table, term->table_size, &q);
                    if (q != 0) g = 0;
                }
                if (g <= 1 || (f && g != f)) return 0;
                f = g;
            }
    }
    return nl < 0 || f <= 1 || ext % f != 0 ? 0 : f;
}

bool cg_split_applies(const cg_emit *e, int value) {
    int64_t pts[MAX_SEGMENTS + 1];
    return split_points(e, value, pts) > 0 || residue_factor(e, value) > 1;
}

/* The loops of a split pass: the outer dimensions of `w` as one nest (the
 * pass's parallel loop when unfused), then any number of innermost loops. */
static void open_outer(cg_emit *e, const cg_value *w, cg_nest *ns) {
    *ns = (cg_nest){.n = w->shape.rank - e->P - 1};
    for (int d = 0; d < ns->n; d++) ns->ext[d] = w->shape.dims[e->P + d];
    cg_loop_opts o = {.par = e->P == 0 ? e->s->par : 0};
    cg_nest_open(e, ns, &o);
}

/* "for (x = lo; x < hi; x++)" under the vec knob's simd pragma; its symbol
 * ranges over [range_lo, range_hi]. */
static int open_inner(cg_emit *e, int64_t lo, int64_t hi, int64_t range_lo, int64_t range_hi) {
    cg_loop_opts so = {.simd = true};
    char simd[96], pragma[160] = "", header[160];
    cg_simd_pragma(e, &so, simd, sizeof simd);
    int s = cg_new_sym(e, range_lo, range_hi, e->depth);
    if (simd[0]) snprintf(pragma, sizeof pragma, "%*s#pragma omp%s\n", 4 * (e->depth + 1), "", simd);
    snprintf(header, sizeof header, "%*sfor (int64_t x%d = %lld; x%d < %lld; x%d++)", 4 * (e->depth + 1), "", s,
             (long long)lo, s, (long long)hi, s);
    cg_loop_open_raw(e, pragma, header);
    return s;
}

/* out<slot>[...] = value at the outer nest's coordinates and `inner` as the
 * last coordinate. */
static void store_at(cg_emit *e, int value, int slot, const cg_nest *ns, cg_aff inner) {
    const cg_value *w = &e->k->values[value];
    int rank = w->shape.rank;
    cg_aff c[KORCH_MAX_RANK];
    for (int d = 0; d < rank - 1; d++) c[d] = d < e->P ? cg_aff_sym(e->outer[d]) : cg_aff_sym(ns->sym[d - e->P]);
    c[rank - 1] = inner;
    int lvl;
    const char *v = cg_value_at(e, value, c, &lvl);
    cg_aff lin = cg_linear(e, &w->shape, c);
    char at[400];
    cg_aff_str(&lin, at, sizeof at);
    cg_stmt(e, e->depth - 1, "out%d[%s] = %s;", slot, at, v);
}

/* The innermost loop over x = f*j + r with r unrolled: every copy of the
 * body reads input column j (floor((f*j + r)/f) = j, proved by the index
 * simplifier), so the loads are contiguous and the f stores interleave. */
static bool emit_residue_pass(cg_emit *e, int value, int slot, int64_t f) {
    const cg_value *w = &e->k->values[value];
    int64_t n = w->shape.dims[w->shape.rank - 1] / f;
    cg_nest ns;
    open_outer(e, w, &ns);
    int s = open_inner(e, 0, n, 0, n - 1);
    for (int64_t r = 0; r < f && e->st == KORCH_OK; r++) {
        cg_aff x = cg_aff_sym(s);
        x.coef[0] = f;
        x.off = r;
        store_at(e, value, slot, &ns, x);
    }
    cg_loop_close(e);
    cg_nest_close(e, &ns);
    return true;
}

bool cg_emit_split_pass(cg_emit *e, int value, int slot) {
    const cg_value *w = &e->k->values[value];
    int rank = w->shape.rank;
    /* the fused nest's stage rearranges the last loops; an unfused pass of
     * one loop would lose its parallel loop */
    if (e->stage || rank - e->P < 1 || (e->P == 0 && rank < 2)) return false;
    int64_t pts[MAX_SEGMENTS + 1];
    int np = split_points(e, value, pts);
    if (np == 0) {
        int64_t f = residue_factor(e, value);
        return f > 1 && emit_residue_pass(e, value, slot, f);
    }
    cg_nest ns;
    open_outer(e, w, &ns);
    for (int g = 0; g <= np; g++) {
        int64_t a = g == 0 ? 0 : pts[g - 1], b = g == np ? w->shape.dims[rank - 1] : pts[g];
        store_at(e, value, slot, &ns, cg_aff_sym(open_inner(e, a, b, a, b - 1)));
        cg_loop_close(e);
    }
    cg_nest_close(e, &ns);
    return true;
}
