/* Layout primitive constructors (indexmap.h); the recognisers are in
 * indexmap_recognize.c. */
#include "ir/indexmap.h"

#include <stdlib.h>
#include <string.h>

korch_index_term korch_index_term_var(int j) {
    korch_index_term t = {.div = 1};
    t.coef[j] = 1;
    return t;
}

korch_index_term korch_index_term_const(int64_t c) { return (korch_index_term){.offset = c, .div = 1}; }

static bool bad_operand(const korch_pgraph *pg, int x) { return x < 0 || x >= pg->n_values; }

static const korch_shape *shape_of(const korch_pgraph *pg, int x) { return &pg->values[x].shape; }

static int add_single(korch_pgraph *pg, korch_layout_tag tag, int x, const korch_shape *out, korch_index_map *map,
                      double pad) {
    return korch_pgraph_layout(pg, tag, 1, &x, out, map, pad);
}

int korch_pgraph_transpose(korch_pgraph *pg, int x, const int64_t *perm) {
    if (bad_operand(pg, x)) return -1;
    /* a copy: adding the node may move the value array */
    const korch_shape in_copy = *shape_of(pg, x), *in = &in_copy;
    korch_shape out = {.rank = in->rank};
    korch_index_map map = {.input_rank = in->rank};
    bool seen[KORCH_MAX_RANK] = {0};
    for (int j = 0; j < in->rank; j++) {
        if (perm[j] < 0 || perm[j] >= in->rank || seen[perm[j]]) {
            korch_error(KORCH_ERR_INTERNAL, "transpose: bad permutation entry %lld", (long long)perm[j]);
            return -1;
        }
        seen[perm[j]] = true;
        out.dims[j] = in->dims[perm[j]];
        map.terms[perm[j]] = korch_index_term_var(j);
    }
    int y = add_single(pg, KORCH_LAYOUT_TRANSPOSE, x, &out, &map, 0.0);
    if (y >= 0)
        for (int j = 0; j < in->rank; j++) pg->nodes[pg->values[y].producer].u.layout.perm[j] = perm[j];
    return y;
}

void korch_index_map_reshape(const korch_shape *in, const korch_shape *out, korch_index_map *map) {
    memset(map, 0, sizeof *map);
    map->input_rank = in->rank;
    for (int k = 0; k < in->rank; k++) map->terms[k] = korch_index_term_const(0);
    /* Walk both shapes, skipping unit dims, forming groups whose products
     * agree; inside a group, the input coordinates are digits of the group's
     * flat output index. */
    int i = 0, j = 0;
    while (i < in->rank || j < out->rank) {
        while (i < in->rank && in->dims[i] == 1) i++;
        while (j < out->rank && out->dims[j] == 1) j++;
        if (i >= in->rank || j >= out->rank) break;
        int i0 = i, j0 = j;
        int64_t pi = in->dims[i++], po = out->dims[j++];
        while (pi != po) {
            if (pi < po) {
                if (i >= in->rank) break;
                pi *= in->dims[i++];
            } else {
                if (j >= out->rank) break;
                po *= out->dims[j++];
            }
        }
        /* group [i0, i) <- [j0, j): flat = sum o_j * stride_j over the outputs */
        korch_index_term flat = korch_index_term_const(0);
        int64_t s = 1;
        for (int q = j - 1; q >= j0; q--) {
            if (out->dims[q] != 1) flat.coef[q] = s;
            s *= out->dims[q];
        }
        int64_t istride = 1;
        for (int k = i - 1; k >= i0; k--) {
            if (in->dims[k] == 1) continue;
            korch_index_term t = flat;
            t.div = istride;
            t.mod = k == i0 ? 0 : in->dims[k];
            /* a single output dim that equals this input dim: plain copy */
            int nonzero = 0, at = -1;
            for (int q = 0; q < KORCH_MAX_RANK; q++)
                if (t.coef[q]) nonzero++, at = q;
            if (nonzero == 1 && t.coef[at] == istride && out->dims[at] == in->dims[k]) t = korch_index_term_var(at);
            map->terms[k] = t;
            istride *= in->dims[k];
        }
        if (i - i0 == 1 && j - j0 == 1 && in->dims[i0] == out->dims[j0]) map->terms[i0] = korch_index_term_var(j0);
    }
}

int korch_pgraph_reshape(korch_pgraph *pg, int x, const korch_shape *shape) {
    if (bad_operand(pg, x)) return -1;
    /* a copy: adding the node may move the value array */
    const korch_shape in_copy = *shape_of(pg, x), *in = &in_copy;
    if (korch_shape_numel(in) != korch_shape_numel(shape)) {
        char a[96], b[96];
        korch_error(KORCH_ERR_INTERNAL, "reshape: %s and %s differ in size", korch_shape_format(in, a, sizeof a),
                    korch_shape_format(shape, b, sizeof b));
        return -1;
    }
    korch_index_map map;
    korch_index_map_reshape(in, shape, &map);
    return add_single(pg, KORCH_LAYOUT_RESHAPE, x, shape, &map, 0.0);
}

int korch_pgraph_slice(korch_pgraph *pg, int x, const int64_t *starts, const int64_t *steps,
                       const korch_shape *out_shape) {
    if (bad_operand(pg, x)) return -1;
    /* a copy: adding the node may move the value array */
    const korch_shape in_copy = *shape_of(pg, x), *in = &in_copy;
    korch_index_map map = {.input_rank = in->rank};
    for (int k = 0; k < in->rank; k++) {
        int64_t n = out_shape->dims[k];
        int64_t last = starts[k] + steps[k] * (n > 0 ? n - 1 : 0);
        if (n > 0 && (starts[k] < 0 || starts[k] >= in->dims[k] || last < 0 || last >= in->dims[k])) {
            korch_error(KORCH_ERR_INTERNAL, "slice: dimension %d reads outside the input", k);
            return -1;
        }
        map.terms[k] = korch_index_term_var(k);
        map.terms[k].coef[k] = steps[k];
        map.terms[k].offset = starts[k];
    }
    return add_single(pg, KORCH_LAYOUT_SLICE, x, out_shape, &map, 0.0);
}

/* Source index of output position o in a dimension of size n padded by
 * (begin, end): negative amounts crop, then the kept window of length len is
 * extended (mirrors the reference Pad kernel). */
static int64_t pad_source(korch_pad_mode mode, int64_t o, int64_t begin, int64_t end, int64_t n) {
    int64_t lo = begin < 0 ? -begin : 0, len = n - lo - (end < 0 ? -end : 0), c = o - (begin > 0 ? begin : 0);
    if (c >= 0 && c < len) return lo + c;
    switch (mode) {
    case KORCH_PAD_EDGE: return lo + (c < 0 ? 0 : len - 1);
    case KORCH_PAD_WRAP: return lo + ((c % len) + len) % len;
    case KORCH_PAD_REFLECT: {
        if (len == 1) return lo;
        int64_t period = 2 * (len - 1), m = ((c % period) + period) % period; /* no repeated edge */
        return lo + (m < len ? m : period - m);
    }
    default: return -1;
    }
}

int korch_pgraph_pad(korch_pgraph *pg, int x, const int64_t *begins, const int64_t *ends, korch_pad_mode mode,
                     double value) {
    if (bad_operand(pg, x)) return -1;
    /* a copy: adding the node may move the value array */
    const korch_shape in_copy = *shape_of(pg, x), *in = &in_copy;
    korch_shape out = {.rank = in->rank};
    int64_t *tables[KORCH_MAX_RANK] = {0};
    bool oob = false, ok = true;
    for (int k = 0; k < in->rank; k++) {
        out.dims[k] = in->dims[k] + begins[k] + ends[k];
        if (out.dims[k] < 0) {
            korch_error(KORCH_ERR_INTERNAL, "pad: dimension %d becomes negative", k);
            ok = false;
            break;
        }
        if (begins[k] > 0 || ends[k] > 0) oob = true;
        if (mode == KORCH_PAD_CONSTANT || (begins[k] <= 0 && ends[k] <= 0)) continue;
        if (in->dims[k] + (begins[k] < 0 ? begins[k] : 0) + (ends[k] < 0 ? ends[k] : 0) <= 0) {
            korch_error(KORCH_ERR_INTERNAL, "pad: cannot reflect or extend an empty dimension %d", k);
            ok = false;
            break;
        }
        tables[k] = malloc((size_t)(out.dims[k] ? out.dims[k] : 1) * sizeof(int64_t));
        if (!tables[k]) {
            korch_error(KORCH_ERR_OUT_OF_MEMORY, "pad: out of memory");
            ok = false;
            break;
        }
        for (int64_t o = 0; o < out.dims[k]; o++) tables[k][o] = pad_source(mode, o, begins[k], ends[k], in->dims[k]);
    }
    if (!ok) {
        for (int k = 0; k < in->rank; k++) free(tables[k]);
        return -1;
    }
    if (mode != KORCH_PAD_CONSTANT) {
        /* in-bounds by construction; cropped dims are affine */
        korch_index_map map = {.input_rank = in->rank};
        for (int k = 0; k < in->rank; k++) {
            map.terms[k] = korch_index_term_var(k);
            if (tables[k]) {
                map.terms[k].table = tables[k];
                map.terms[k].table_size = out.dims[k];
            } else {
                map.terms[k].offset = -begins[k];
            }
        }
        int y = add_single(pg, KORCH_LAYOUT_PAD, x, &out, &map, value);
        if (y < 0)
            for (int k = 0; k < in->rank; k++) free(tables[k]);
        return y;
    }
    korch_index_map map = {.input_rank = in->rank, .may_be_out_of_bounds = oob};
    for (int k = 0; k < in->rank; k++) {
        map.terms[k] = korch_index_term_var(k);
        map.terms[k].offset = -begins[k];
    }
    return add_single(pg, KORCH_LAYOUT_PAD, x, &out, &map, value);
}

int korch_pgraph_concat(korch_pgraph *pg, int n, const int *xs, int axis) {
    for (int p = 0; p < n; p++)
        if (bad_operand(pg, xs[p])) return -1;
    if (n < 1) {
        korch_error(KORCH_ERR_INTERNAL, "concat: no inputs");
        return -1;
    }
    if (n > KORCH_MAX_RANK) {
        int parts[KORCH_MAX_RANK], np = 0;
        int chunk = (n + KORCH_MAX_RANK - 1) / KORCH_MAX_RANK;
        for (int p = 0; p < n; p += chunk) {
            int m = n - p < chunk ? n - p : chunk;
            parts[np] = m == 1 ? xs[p] : korch_pgraph_concat(pg, m, xs + p, axis);
            if (parts[np++] < 0) return -1;
        }
        return korch_pgraph_concat(pg, np, parts, axis);
    }
    korch_shape out = *shape_of(pg, xs[0]);
    if (axis < 0 || axis >= out.rank) {
        korch_error(KORCH_ERR_INTERNAL, "concat: axis %d out of range", axis);
        return -1;
    }
    korch_index_map maps[KORCH_MAX_RANK];
    int64_t offset = 0;
    for (int p = 0; p < n; p++) {
        const korch_shape *s = shape_of(pg, xs[p]); /* no node is added in this loop */
        memset(&maps[p], 0, sizeof maps[p]);
        maps[p].input_rank = s->rank;
        maps[p].may_be_out_of_bounds = n > 1;
        for (int k = 0; k < s->rank; k++) {
            if (k != axis && (s->rank != out.rank || s->dims[k] != out.dims[k])) {
                korch_error(KORCH_ERR_INTERNAL, "concat: input %d does not match along dimension %d", p, k);
                return -1;
            }
            maps[p].terms[k] = korch_index_term_var(k);
        }
        maps[p].terms[axis].offset = -offset;
        offset += s->dims[axis];
    }
    out.dims[axis] = offset;
    int y = korch_pgraph_layout(pg, KORCH_LAYOUT_CONCAT, n, xs, &out, maps, 0.0);
    if (y >= 0) pg->nodes[pg->values[y].producer].u.layout.axis = axis;
    return y;
}

int korch_pgraph_expand(korch_pgraph *pg, int x, const korch_shape *shape) {
    if (bad_operand(pg, x)) return -1;
    /* a copy: adding the node may move the value array */
    const korch_shape in_copy = *shape_of(pg, x), *in = &in_copy;
    korch_index_map map = {.input_rank = in->rank};
    int lead = shape->rank - in->rank;
    if (lead < 0) {
        korch_error(KORCH_ERR_INTERNAL, "expand: target rank %d is below the input rank %d", shape->rank, in->rank);
        return -1;
    }
    for (int k = 0; k < in->rank; k++) {
        if (in->dims[k] == shape->dims[lead + k]) map.terms[k] = korch_index_term_var(lead + k);
        else if (in->dims[k] == 1) map.terms[k] = korch_index_term_const(0);
        else {
            korch_error(KORCH_ERR_INTERNAL, "expand: dimension %d (%lld) does not broadcast to %lld", k,
                        (long long)in->dims[k], (long long)shape->dims[lead + k]);
            return -1;
        }
    }
    return add_single(pg, KORCH_LAYOUT_EXPAND, x, shape, &map, 0.0);
}

int korch_pgraph_tile(korch_pgraph *pg, int x, const int64_t *repeats) {
    if (bad_operand(pg, x)) return -1;
    /* a copy: adding the node may move the value array */
    const korch_shape in_copy = *shape_of(pg, x), *in = &in_copy;
    korch_shape out = {.rank = in->rank};
    korch_index_map map = {.input_rank = in->rank};
    for (int k = 0; k < in->rank; k++) {
        if (repeats[k] < 0 || korch_mul_overflow_i64(in->dims[k], repeats[k], &out.dims[k])) {
            korch_error(KORCH_ERR_INTERNAL, "tile: bad repeat count %lld", (long long)repeats[k]);
            return -1;
        }
        map.terms[k] = korch_index_term_var(k);
        if (repeats[k] != 1 && in->dims[k] > 1) map.terms[k].mod = in->dims[k];
        if (in->dims[k] == 1) map.terms[k] = korch_index_term_const(0);
    }
    return add_single(pg, KORCH_LAYOUT_GENERIC, x, &out, &map, 0.0);
}

int korch_pgraph_gather(korch_pgraph *pg, int x, int axis, const int64_t *indices, const korch_shape *idx_shape) {
    if (bad_operand(pg, x)) return -1;
    /* a copy: adding the node may move the value array */
    const korch_shape in_copy = *shape_of(pg, x), *in = &in_copy;
    if (axis < 0 || axis >= in->rank || in->rank - 1 + idx_shape->rank > KORCH_MAX_RANK) {
        korch_error(KORCH_ERR_UNSUPPORTED, "gather: axis %d or output rank %d out of range", axis,
                    in->rank - 1 + idx_shape->rank);
        return -1;
    }
    int64_t count = korch_shape_numel(idx_shape);
    korch_shape out = {.rank = in->rank - 1 + idx_shape->rank};
    korch_index_map map = {.input_rank = in->rank};
    int j = 0;
    for (int k = 0; k < axis; k++) {
        out.dims[j] = in->dims[k];
        map.terms[k] = korch_index_term_var(j++);
    }
    korch_index_term t = {.div = 1};
    int64_t s = 1;
    for (int q = idx_shape->rank - 1; q >= 0; q--) {
        t.coef[j + q] = idx_shape->dims[q] == 1 ? 0 : s;
        s *= idx_shape->dims[q];
    }
    for (int q = 0; q < idx_shape->rank; q++) out.dims[j++] = idx_shape->dims[q];
    for (int k = axis + 1; k < in->rank; k++) {
        out.dims[j] = in->dims[k];
        map.terms[k] = korch_index_term_var(j++);
    }
    t.table = malloc((size_t)(count > 0 ? count : 1) * sizeof(int64_t));
    if (!t.table) {
        korch_error(KORCH_ERR_OUT_OF_MEMORY, "gather: out of memory");
        return -1;
    }
    for (int64_t i = 0; i < count; i++) {
        if (indices[i] < 0 || indices[i] >= in->dims[axis]) {
            free(t.table);
            korch_error(KORCH_ERR_INTERNAL, "gather: index %lld out of range", (long long)indices[i]);
            return -1;
        }
        t.table[i] = indices[i];
    }
    t.table_size = count;
    map.terms[axis] = t;
    int y = add_single(pg, KORCH_LAYOUT_GATHER, x, &out, &map, 0.0);
    if (y < 0) free(t.table);
    else pg->nodes[pg->values[y].producer].u.layout.axis = axis;
    return y;
}

int korch_pgraph_remap(korch_pgraph *pg, korch_layout_tag tag, int x, const korch_shape *out_shape,
                       int64_t *const *tables, double pad_value) {
    korch_shape in_copy = bad_operand(pg, x) ? (korch_shape){0} : *shape_of(pg, x);
    const korch_shape *in = bad_operand(pg, x) ? NULL : &in_copy;
    korch_index_map map = {.input_rank = in ? in->rank : 0};
    bool ok = in && in->rank == out_shape->rank;
    for (int k = 0; ok && k < in->rank; k++) {
        map.terms[k] = korch_index_term_var(k);
        if (!tables[k]) {
            ok = in->dims[k] == out_shape->dims[k];
            continue;
        }
        map.terms[k].table = tables[k];
        map.terms[k].table_size = out_shape->dims[k];
        for (int64_t o = 0; o < out_shape->dims[k]; o++) {
            if (tables[k][o] < 0) map.may_be_out_of_bounds = true;
            else if (tables[k][o] >= in->dims[k]) ok = false;
        }
    }
    if (!ok) {
        if (in) korch_error(KORCH_ERR_INTERNAL, "remap: tables do not fit the input");
        for (int k = 0; k < out_shape->rank; k++) free(tables[k]);
        return -1;
    }
    int y = add_single(pg, tag, x, out_shape, &map, pad_value);
    if (y < 0)
        for (int k = 0; k < out_shape->rank; k++) free(tables[k]);
    return y;
}

int korch_pgraph_window(korch_pgraph *pg, int x, int spatial, const int64_t *kernel, const int64_t *strides,
                        const int64_t *dilations, const int64_t *pads_begin, const int64_t *out_spatial,
                        double pad_value) {
    if (bad_operand(pg, x)) return -1;
    /* a copy: adding the node may move the value array */
    const korch_shape in_copy = *shape_of(pg, x), *in = &in_copy;
    int lead = in->rank - spatial;
    if (spatial < 1 || lead < 0 || in->rank + spatial > KORCH_MAX_RANK) {
        korch_error(KORCH_ERR_UNSUPPORTED, "window: %d spatial dims over rank %d exceed rank %d", spatial, in->rank,
                    KORCH_MAX_RANK);
        return -1;
    }
    korch_shape out = {.rank = in->rank + spatial};
    korch_index_map map = {.input_rank = in->rank};
    for (int k = 0; k < lead; k++) {
        out.dims[k] = in->dims[k];
        map.terms[k] = korch_index_term_var(k);
    }
    for (int d = 0; d < spatial; d++) {
        int k = lead + d;
        out.dims[k] = out_spatial[d];
        out.dims[in->rank + d] = kernel[d];
        korch_index_term t = {.div = 1, .offset = -pads_begin[d]};
        t.coef[k] = strides[d];
        t.coef[in->rank + d] = dilations[d];
        map.terms[k] = t;
        int64_t first = -pads_begin[d];
        int64_t last = strides[d] * (out_spatial[d] - 1) + dilations[d] * (kernel[d] - 1) - pads_begin[d];
        if (first < 0 || last >= in->dims[k]) map.may_be_out_of_bounds = true;
    }
    return add_single(pg, KORCH_LAYOUT_WINDOW, x, &out, &map, pad_value);
}
