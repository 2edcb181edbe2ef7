/* ONNX form of layout primitives: a native operator when the index map is a
 * transpose, reshape, slice, constant pad, expand or concat; otherwise an
 * exact general encoding:
 *
 *   x_p -> Reshape(lead..., rest_p)          for every input p
 *       -> Concat(axis=lead, [..., pad])     (pad: one element of pad value)
 *       -> Gather(axis=lead, constant int64 index of shape out[lead:])
 *
 * where `lead` counts the leading dimensions that every map passes through
 * unchanged (batch and channels for windows, pads and resizes), so the index
 * tensor covers only the remaining dimensions. */
#include <stdlib.h>
#include <string.h>

#include "fission/pgraph_onnx_internal.h"
#include "ir/indexmap.h"

static const char *name_of(korch_onnx_writer *w, int v) { return w->names[v]; }

static void emit_reshape(korch_onnx_writer *w, const char *x, const korch_shape *s, const char *y) {
    const char *ins[2] = {x, korch_onnx_const_i64(w, s->dims, s->rank)};
    Onnx__NodeProto *r = korch_onnx_node(w, "Reshape", 2, ins, 1, &y);
    for (int k = 0; k < s->rank; k++)
        if (s->dims[k] == 0) {
            korch_onnx_attr_int(w, r, "allowzero", 1); /* a 0 is a size, not "copy the input dim" */
            break;
        }
}

/* Is term k of map m exactly o_k (a pass-through of a leading dimension)? */
static bool passes_through(const korch_index_map *m, int k) {
    const korch_index_term *t = &m->terms[k];
    if (t->div != 1 || t->mod != 0 || t->table || t->offset != 0) return false;
    for (int j = 0; j < KORCH_MAX_RANK; j++)
        if (t->coef[j] != (j == k)) return false;
    return true;
}

/* Leading dims every input passes through, with no other term reading them. */
static int leading_dims(const korch_pgraph *pg, int node) {
    const korch_pnode *n = &pg->nodes[node];
    const korch_shape *out = &pg->values[n->outputs[0]].shape;
    int lead = out->rank;
    for (int p = 0; p < n->n_inputs; p++) {
        const korch_index_map *m = &n->u.layout.maps[p];
        const korch_shape *in = &pg->values[n->inputs[p]].shape;
        int l = 0;
        while (l < lead && l < in->rank && passes_through(m, l) && in->dims[l] == out->dims[l]) l++;
        lead = l;
    }
    /* later terms must not read the leading coordinates */
    for (bool ok = false; !ok && lead > 0;) {
        ok = true;
        for (int p = 0; p < n->n_inputs && ok; p++) {
            const korch_index_map *m = &n->u.layout.maps[p];
            for (int k = lead; k < m->input_rank && ok; k++)
                for (int j = 0; j < lead; j++)
                    if (m->terms[k].coef[j]) ok = false;
        }
        if (!ok) lead--;
    }
    return lead;
}

static void emit_general(korch_onnx_writer *w, int node) {
    const korch_pgraph *pg = w->pg;
    const korch_pnode *n = &pg->nodes[node];
    const korch_prim_layout *l = &n->u.layout;
    const korch_shape *out = &pg->values[n->outputs[0]].shape;
    korch_dtype dt = pg->values[n->outputs[0]].dtype;
    const char *y = name_of(w, n->outputs[0]);
    int lead = leading_dims(pg, node);
    int64_t prefix = 1;
    for (int k = 0; k < lead; k++) prefix *= out->dims[k];
    korch_shape suffix = {.rank = out->rank - lead};
    for (int k = lead; k < out->rank; k++) suffix.dims[k - lead] = out->dims[k];
    int64_t count = korch_shape_numel(&suffix);
    if (prefix * count == 0) {
        /* empty output: a constant of its shape */
        korch_tensor t = {.dtype = dt, .shape = *out, .data = korch_onnx_alloc(w, 1)};
        const char *c = korch_onnx_const_tensor(w, &t, korch_onnx_temp(w));
        korch_onnx_node(w, "Identity", 1, &c, 1, &y);
        return;
    }
    /* flat sources: each input as (lead..., rest), then the pad element */
    const char *parts[KORCH_MAX_RANK + 1];
    int64_t base[KORCH_MAX_RANK + 1];
    int64_t total = 0;
    for (int p = 0; p < n->n_inputs; p++) {
        const korch_shape *in = &pg->values[n->inputs[p]].shape;
        korch_shape flat = {.rank = lead + 1};
        for (int k = 0; k < lead; k++) flat.dims[k] = in->dims[k];
        int64_t rest = korch_shape_numel(in) / (prefix ? prefix : 1);
        flat.dims[lead] = rest;
        base[p] = total;
        total += rest;
        if (korch_shape_equal(in, &flat)) {
            parts[p] = name_of(w, n->inputs[p]);
        } else {
            parts[p] = korch_onnx_temp(w);
            emit_reshape(w, name_of(w, n->inputs[p]), &flat, parts[p]);
        }
    }
    int64_t *index = korch_onnx_alloc(w, sizeof *index * (size_t)count);
    if (!index) return;
    bool any_pad = false;
    for (int64_t i = 0; i < count; i++) {
        int input;
        int64_t off = korch_layout_source(pg, node, i, &input); /* leading coordinates 0 */
        if (input < 0) {
            any_pad = true;
            index[i] = total;
        } else {
            index[i] = base[input] + off;
        }
    }
    int n_parts = n->n_inputs;
    if (any_pad) {
        korch_shape ps = {.rank = lead + 1};
        for (int k = 0; k < lead; k++) ps.dims[k] = out->dims[k];
        ps.dims[lead] = 1;
        korch_tensor t = {.dtype = dt, .shape = ps};
        size_t es = korch_dtype_size(dt);
        t.data = korch_onnx_alloc(w, es * (size_t)prefix);
        if (!t.data) return;
        /* the pad value, converted like a store of the output dtype */
        for (int64_t i = 0; i < prefix; i++) {
            char *dst = (char *)t.data + (size_t)i * es;
            double v = l->pad_value;
            switch (dt) {
            case KORCH_DTYPE_FLOAT32: *(float *)(void *)dst = (float)v; break;
            case KORCH_DTYPE_FLOAT64: memcpy(dst, &v, 8); break;
            case KORCH_DTYPE_INT64: *(int64_t *)(void *)dst = v < -9.2e18 ? INT64_MIN : (int64_t)v; break;
            case KORCH_DTYPE_INT32: *(int32_t *)(void *)dst = v < -2.1e9 ? INT32_MIN : (int32_t)v; break;
            case KORCH_DTYPE_INT8: *(int8_t *)(void *)dst = v < -128 ? INT8_MIN : (int8_t)v; break;
            case KORCH_DTYPE_UINT8:
            case KORCH_DTYPE_BOOL: *(uint8_t *)dst = v <= 0 ? 0 : (uint8_t)v; break;
            default: break;
            }
        }
        parts[n_parts++] = korch_onnx_const_tensor(w, &t, korch_onnx_temp(w));
    }
    const char *source = parts[0];
    if (n_parts > 1) {
        source = korch_onnx_temp(w);
        Onnx__NodeProto *c = korch_onnx_node(w, "Concat", n_parts, parts, 1, &source);
        korch_onnx_attr_int(w, c, "axis", lead);
    }
    korch_tensor it = {.dtype = KORCH_DTYPE_INT64, .shape = suffix, .data = index};
    const char *ins[2] = {source, korch_onnx_const_tensor(w, &it, korch_onnx_temp(w))};
    Onnx__NodeProto *g = korch_onnx_node(w, "Gather", 2, ins, 1, &y);
    korch_onnx_attr_int(w, g, "axis", lead);
}

void korch_onnx_emit_layout(korch_onnx_writer *w, int node) {
    const korch_pgraph *pg = w->pg;
    const korch_pnode *n = &pg->nodes[node];
    const korch_shape *out = &pg->values[n->outputs[0]].shape;
    const korch_shape *in = &pg->values[n->inputs[0]].shape;
    const char *x = name_of(w, n->inputs[0]), *y = name_of(w, n->outputs[0]);
    int64_t a[KORCH_MAX_RANK], b[KORCH_MAX_RANK];
    int axis;
    if (korch_layout_is_identity(pg, node)) {
        korch_onnx_node(w, "Identity", 1, &x, 1, &y);
    } else if (korch_layout_as_transpose(pg, node, a)) {
        Onnx__NodeProto *t = korch_onnx_node(w, "Transpose", 1, &x, 1, &y);
        korch_onnx_attr_ints(w, t, "perm", a, out->rank);
    } else if (korch_layout_as_reshape(pg, node)) {
        emit_reshape(w, x, out, y);
    } else if (korch_layout_as_slice(pg, node, a, b)) {
        int64_t starts[KORCH_MAX_RANK], ends[KORCH_MAX_RANK], axes[KORCH_MAX_RANK], steps[KORCH_MAX_RANK];
        int count = 0;
        for (int k = 0; k < out->rank; k++) {
            if (a[k] == 0 && b[k] == 1 && out->dims[k] == in->dims[k]) continue;
            int64_t end = a[k] + b[k] * out->dims[k];
            if (end < 0) end = -in->dims[k] - 1; /* before index 0 (a negative step) */
            starts[count] = a[k];
            ends[count] = end;
            axes[count] = k;
            steps[count++] = b[k];
        }
        const char *ins[5] = {x, korch_onnx_const_i64(w, starts, count), korch_onnx_const_i64(w, ends, count),
                              korch_onnx_const_i64(w, axes, count), korch_onnx_const_i64(w, steps, count)};
        korch_onnx_node(w, "Slice", 5, ins, 1, &y);
    } else if (korch_layout_as_pad(pg, node, a, b) && n->u.layout.pad_value == n->u.layout.pad_value &&
               n->u.layout.pad_value > -1e300 && n->u.layout.pad_value < 1e300) {
        bool negative = false;
        int64_t pads[2 * KORCH_MAX_RANK];
        for (int k = 0; k < in->rank; k++) {
            pads[k] = a[k];
            pads[in->rank + k] = b[k];
            negative = negative || a[k] < 0 || b[k] < 0;
        }
        if (negative) {
            emit_general(w, node); /* crops: not every runtime takes negative pads */
            return;
        }
        const char *ins[3] = {x, korch_onnx_const_i64(w, pads, 2 * in->rank),
                              korch_onnx_const_scalar(w, pg->values[n->outputs[0]].dtype, n->u.layout.pad_value)};
        Onnx__NodeProto *p = korch_onnx_node(w, "Pad", 3, ins, 1, &y);
        korch_onnx_attr_string(w, p, "mode", "constant");
    } else if (korch_layout_as_expand(pg, node)) {
        const char *ins[2] = {x, korch_onnx_const_i64(w, out->dims, out->rank)};
        korch_onnx_node(w, "Expand", 2, ins, 1, &y);
    } else if (n->n_inputs > 1 && korch_layout_as_concat(pg, node, &axis)) {
        const char *ins[KORCH_MAX_RANK];
        for (int p = 0; p < n->n_inputs; p++) ins[p] = name_of(w, n->inputs[p]);
        Onnx__NodeProto *c = korch_onnx_node(w, "Concat", n->n_inputs, ins, 1, &y);
        korch_onnx_attr_int(w, c, "axis", axis);
    } else {
        emit_general(w, node);
    }
}
