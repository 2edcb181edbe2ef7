/* Canonical signatures of kernels (node sets of a pgraph), and the
 * structural hash of a whole pgraph. A kernel signature is the structure,
 * parameters, shapes and dtypes of a kernel with every graph-specific index
 * replaced by a position inside the kernel. Two candidates with equal signatures compile to the same
 * code and time the same, so a repeated block is profiled once per run (the
 * profile database does the same across runs). */
#include <string.h>

#include "ir/nodeset.h"

typedef struct hasher {
    uint64_t a, b;
} hasher;

static void feed(hasher *h, uint64_t x) {
    h->a = (h->a ^ x) * 0x100000001b3ull;
    h->b = (h->b + x) * 0x9E3779B97F4A7C15ull;
    h->b ^= h->b >> 29;
}

static void feed_f(hasher *h, double x) {
    uint64_t bits;
    memcpy(&bits, &x, sizeof bits);
    feed(h, bits);
}

static void feed_value(hasher *h, const korch_pvalue *v) {
    feed(h, (uint64_t)v->dtype);
    feed(h, (uint64_t)v->shape.rank);
    for (int k = 0; k < v->shape.rank; k++) feed(h, (uint64_t)v->shape.dims[k]);
}

static void feed_bytes(hasher *h, const void *data, size_t size) {
    const unsigned char *p = data;
    uint64_t word = 0;
    for (size_t i = 0; i < size; i++) {
        word = word << 8 | p[i];
        if (i % 8 == 7 || i + 1 == size) {
            feed(h, word);
            word = 0;
        }
    }
    feed(h, size);
}

static void feed_string(hasher *h, const char *s) { feed_bytes(h, s ? s : "", s ? strlen(s) : 0); }

/* An opaque operator by what it computes: type, domain, opset, attributes
 * (tensor attributes by shape and contents), never by its position. */
static void feed_operator(hasher *h, const korch_pgraph *pg, int source_node) {
    if (!pg->source || source_node < 0 || source_node >= pg->source->n_nodes) {
        feed(h, (uint64_t)source_node);
        return;
    }
    const korch_node *n = &pg->source->nodes[source_node];
    feed_string(h, n->op_type);
    feed_string(h, n->domain);
    feed(h, (uint64_t)n->opset);
    feed(h, (uint64_t)n->n_attrs);
    for (int a = 0; a < n->n_attrs; a++) {
        const korch_attr *at = &n->attrs[a];
        feed_string(h, at->name);
        feed(h, (uint64_t)at->type);
        feed(h, (uint64_t)at->i);
        feed_f(h, at->f);
        feed_string(h, at->s);
        if (at->ints) feed_bytes(h, at->ints, (size_t)at->count * sizeof *at->ints);
        if (at->floats) feed_bytes(h, at->floats, (size_t)at->count * sizeof *at->floats);
        for (int k = 0; at->strings && k < at->count; k++) feed_string(h, at->strings[k]);
        if (at->tensor) {
            feed(h, (uint64_t)at->tensor->dtype);
            for (int k = 0; k < at->tensor->shape.rank; k++) feed(h, (uint64_t)at->tensor->shape.dims[k]);
            if (at->tensor->data) feed_bytes(h, at->tensor->data, korch_tensor_bytes(at->tensor));
        }
    }
}

static void feed_params(hasher *h, const korch_pgraph *pg, const korch_pnode *n) {
    feed(h, (uint64_t)n->kind);
    switch (n->kind) {
    case KORCH_PRIM_ELEMENTWISE:
        feed(h, (uint64_t)n->u.ew.op);
        feed_f(h, n->u.ew.alpha);
        feed_f(h, n->u.ew.beta);
        break;
    case KORCH_PRIM_REDUCE:
        feed(h, (uint64_t)n->u.reduce.op);
        feed(h, n->u.reduce.axes);
        feed(h, n->u.reduce.keepdims);
        break;
    case KORCH_PRIM_LAYOUT: {
        const korch_prim_layout *l = &n->u.layout;
        feed(h, (uint64_t)l->tag);
        feed(h, (uint64_t)l->n_maps);
        feed_f(h, l->pad_value);
        for (int p = 0; p < l->n_maps; p++) {
            const korch_index_map *m = &l->maps[p];
            feed(h, (uint64_t)m->input_rank);
            feed(h, m->may_be_out_of_bounds);
            for (int k = 0; k < m->input_rank; k++) {
                const korch_index_term *t = &m->terms[k];
                for (int j = 0; j < KORCH_MAX_RANK; j++) feed(h, (uint64_t)t->coef[j]);
                feed(h, (uint64_t)t->offset);
                feed(h, (uint64_t)t->div);
                feed(h, (uint64_t)t->mod);
                feed(h, (uint64_t)t->table_size);
                for (int64_t e = 0; t->table && e < t->table_size; e++) feed(h, (uint64_t)t->table[e]);
            }
        }
        break;
    }
    case KORCH_PRIM_LINEAR: {
        const korch_prim_linear *l = &n->u.linear;
        feed(h, (uint64_t)l->op);
        feed(h, (uint64_t)l->spatial);
        feed(h, (uint64_t)l->group);
        feed(h, (uint64_t)l->channels_last);
        /* only when set: float32 graphs keep the hashes their plans recorded */
        if (l->bf16) feed(h, 0xbf16bf16u);
        for (int d = 0; d < 3; d++) {
            feed(h, (uint64_t)l->strides[d]);
            feed(h, (uint64_t)l->dilations[d]);
            feed(h, (uint64_t)l->pads_begin[d]);
            feed(h, (uint64_t)l->pads_end[d]);
            feed(h, (uint64_t)l->output_padding[d]);
        }
        break;
    }
    case KORCH_PRIM_OPAQUE: feed_operator(h, pg, n->u.opaque.source_node); break;
    default: break;
    }
}

uint64_t korch_kernel_signature(const korch_kernel_spec *c) {
    const korch_pgraph *pg = c->pg;
    hasher h = {0xcbf29ce484222325ull, 0x84222325cbf29ce4ull};
    feed(&h, (uint64_t)c->n_nodes);
    feed(&h, (uint64_t)c->n_inputs);
    feed(&h, (uint64_t)c->n_outputs);
    for (int j = 0; j < c->n_inputs; j++) {
        feed_value(&h, &pg->values[c->inputs[j]]);
        feed(&h, pg->values[c->inputs[j]].is_constant);
    }
    for (int i = 0; i < c->n_nodes; i++) {
        const korch_pnode *n = &pg->nodes[c->nodes[i]];
        feed_params(&h, pg, n);
        feed(&h, (uint64_t)n->n_inputs);
        for (int k = 0; k < n->n_inputs; k++) {
            int v = n->inputs[k], producer = pg->values[v].producer, local = -1;
            for (int j = 0; j < i && local < 0; j++)
                if (c->nodes[j] == producer) local = j;
            if (local >= 0) {
                int slot = 0;
                while (slot < pg->nodes[producer].n_outputs && pg->nodes[producer].outputs[slot] != v) slot++;
                feed(&h, 1000000u + (uint64_t)local * 16 + (uint64_t)slot);
            } else {
                int j = 0;
                while (j < c->n_inputs && c->inputs[j] != v) j++;
                feed(&h, (uint64_t)j);
            }
        }
        for (int k = 0; k < n->n_outputs; k++)
            if (n->outputs[k] >= 0) feed_value(&h, &pg->values[n->outputs[k]]);
    }
    for (int j = 0; j < c->n_outputs; j++) {
        int v = c->outputs[j], producer = pg->values[v].producer, local = 0;
        while (local < c->n_nodes && c->nodes[local] != producer) local++;
        int slot = 0;
        while (slot < pg->nodes[producer].n_outputs && pg->nodes[producer].outputs[slot] != v) slot++;
        feed(&h, (uint64_t)local * 16 + (uint64_t)slot);
    }
    return h.a ^ (h.b * 0xff51afd7ed558ccdull);
}

uint64_t korch_pgraph_hash(const korch_pgraph *pg) {
    hasher h = {0xcbf29ce484222325ull, 0x84222325cbf29ce4ull};
    feed(&h, (uint64_t)pg->n_values);
    feed(&h, (uint64_t)pg->n_nodes);
    for (int v = 0; v < pg->n_values; v++) {
        feed_value(&h, &pg->values[v]);
        feed(&h, pg->values[v].is_constant);
        feed(&h, (uint64_t)(int64_t)pg->values[v].producer);
    }
    for (int i = 0; i < pg->n_nodes; i++) {
        const korch_pnode *n = &pg->nodes[i];
        feed(&h, n->dead);
        if (n->dead) continue;
        feed_params(&h, pg, n);
        feed(&h, (uint64_t)n->n_inputs);
        for (int k = 0; k < n->n_inputs; k++) feed(&h, (uint64_t)(int64_t)n->inputs[k]);
        feed(&h, (uint64_t)n->n_outputs);
        for (int k = 0; k < n->n_outputs; k++) feed(&h, (uint64_t)(int64_t)n->outputs[k]);
    }
    feed(&h, (uint64_t)pg->n_inputs);
    for (int i = 0; i < pg->n_inputs; i++) feed(&h, (uint64_t)(int64_t)pg->inputs[i]);
    feed(&h, (uint64_t)pg->n_outputs);
    for (int i = 0; i < pg->n_outputs; i++) feed(&h, (uint64_t)(int64_t)pg->outputs[i]);
    return h.a ^ (h.b * 0xff51afd7ed558ccdull);
}
