/* Resolving an If at load: when its condition is a constant (an initializer,
 * or folded from shapes and constants), the chosen branch replaces the If,
 * so every later stage sees one flat graph. A condition that depends on a
 * graph input is never constant here, even if `korch optimize --input`
 * fixes that input's value: a plan must be right for every input.
 *
 * The branch's nodes move into the enclosing graph (their attributes,
 * nested subgraphs included, are moved, not copied; the dead If keeps the
 * other branch). Values keep their names unless the name is taken (sibling
 * subgraphs may reuse names), in which case they get a suffix. Nested
 * subgraphs find their captures by input position (capture_slots), so
 * renaming cannot break them. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "frontend/subgraph.h"
#include "ops/op.h"

/* A fresh value named like `base`, or `base` + `hint`, or with an
 * "__inlinedN" suffix. */
static int fresh_value(korch_graph *g, const char *base, const char *hint) {
    if (korch_graph_find_value(g, base) < 0) return korch_graph_intern_value(g, base);
    size_t len = strlen(base) + strlen(hint) + 32;
    char *name = malloc(len);
    if (!name) return -1;
    int v = -1;
    snprintf(name, len, "%s%s", base, hint);
    if (*hint && korch_graph_find_value(g, name) < 0) {
        v = korch_graph_intern_value(g, name);
        free(name);
        return v;
    }
    for (int k = 1; k > 0; k++) { /* at most n_values tries: each miss is a distinct value */
        snprintf(name, len, "%s__inlined%d", base, k);
        if (korch_graph_find_value(g, name) < 0) {
            v = korch_graph_intern_value(g, name); /* -1 only when out of memory */
            break;
        }
    }
    free(name);
    return v;
}

int korch_graph_add_constant(korch_graph *g, const char *name, korch_dtype dtype, const void *data, korch_shape shape) {
    int v = fresh_value(g, name, "");
    if (v < 0) return -1;
    korch_value *val = &g->values[v];
    if (korch_tensor_alloc(&val->constant, dtype, &shape) != KORCH_OK) return -1;
    size_t bytes = (size_t)korch_shape_numel(&shape) * korch_dtype_size(dtype);
    if (bytes) memcpy(val->constant.data, data, bytes);
    val->is_constant = true;
    val->dtype = dtype;
    val->shape = shape;
    val->has_shape = true;
    return v;
}

korch_status korch_graph_append_node(korch_graph *g, const char *op, const char *name, const int *in, int n_in, int out,
                                     korch_attr *attr) {
    int ni = korch_graph_add_node(g);
    if (ni < 0) {
        if (attr) korch_attr_free(attr);
        return korch_error(KORCH_ERR_OUT_OF_MEMORY, "out of memory");
    }
    korch_node *n = &g->nodes[ni];
    n->name = strdup(name);
    n->op_type = strdup(op);
    n->domain = strdup("");
    n->inputs = malloc(((size_t)n_in + 1) * sizeof *n->inputs);
    n->outputs = malloc(sizeof *n->outputs);
    n->attrs = calloc(2, sizeof *n->attrs);
    if (!n->name || !n->op_type || !n->domain || !n->inputs || !n->outputs || !n->attrs) {
        if (attr) korch_attr_free(attr);
        return korch_error(KORCH_ERR_OUT_OF_MEMORY, "out of memory");
    }
    int64_t opset = korch_graph_opset(g, "");
    n->opset = opset > 0 && opset < 1000000 ? (int)opset : 1;
    n->def = korch_op_find(op);
    n->n_inputs = n_in;
    if (n_in) memcpy(n->inputs, in, (size_t)n_in * sizeof *in);
    n->n_outputs = 1;
    n->outputs[0] = out;
    g->values[out].producer = ni;
    if (attr) {
        n->attrs[0] = *attr;
        n->n_attrs = 1;
    }
    return KORCH_OK;
}

korch_status korch_graph_add_identity(korch_graph *g, int from, int to, const char *if_name, int k) {
    char name[200];
    snprintf(name, sizeof name, "%.160s/output_%d", if_name, k);
    return korch_graph_append_node(g, "Identity", name, &from, 1, to, NULL);
}

static korch_status move_node(korch_graph *g, korch_node *m, const int *map, const char *if_name) {
    int ni = korch_graph_add_node(g);
    if (ni < 0) return korch_error(KORCH_ERR_OUT_OF_MEMORY, "out of memory");
    korch_node *n = &g->nodes[ni];
    size_t len = strlen(if_name) + strlen(m->name) + 2;
    n->name = malloc(len);
    if (n->name) snprintf(n->name, len, "%s/%s", if_name, m->name);
    n->op_type = strdup(m->op_type);
    n->domain = strdup(m->domain);
    n->inputs = malloc(((size_t)m->n_inputs + 1) * sizeof *n->inputs);
    n->outputs = malloc(((size_t)m->n_outputs + 1) * sizeof *n->outputs);
    if (!n->name || !n->op_type || !n->domain || !n->inputs || !n->outputs)
        return korch_error(KORCH_ERR_OUT_OF_MEMORY, "out of memory");
    n->opset = m->opset;
    n->def = m->def;
    n->n_inputs = m->n_inputs;
    n->n_implicit_inputs = m->n_implicit_inputs;
    for (int k = 0; k < m->n_inputs; k++) n->inputs[k] = m->inputs[k] >= 0 ? map[m->inputs[k]] : -1;
    n->n_outputs = m->n_outputs;
    for (int k = 0; k < m->n_outputs; k++) {
        n->outputs[k] = m->outputs[k] >= 0 ? map[m->outputs[k]] : -1;
        if (n->outputs[k] >= 0) g->values[n->outputs[k]].producer = ni;
    }
    n->attrs = m->attrs; /* moved: the branch is never used again */
    n->n_attrs = m->n_attrs;
    m->attrs = NULL;
    m->n_attrs = 0;
    return KORCH_OK;
}

korch_status korch_graph_inline_subgraph(korch_graph *g, int owner, korch_graph *sub, int *map, const char *prefix,
                                         const char *hint) {
    korch_status st = KORCH_OK;
    for (int c = 0; c < sub->n_captures && st == KORCH_OK; c++) {
        int slot = sub->capture_slots[c];
        if (slot >= 0) map[sub->captures[c]] = g->nodes[owner].inputs[slot];
        else if (!sub->values[sub->captures[c]].is_constant) /* dropped only when constant */
            st = korch_error(KORCH_ERR_INTERNAL, "inlining: capture %d is unbound", c);
    }
    for (int v = 0; v < sub->n_values && st == KORCH_OK; v++) {
        korch_value *bv = &sub->values[v];
        if (map[v] >= 0 || (bv->is_outer_scope && !bv->is_constant)) continue;
        int nv = fresh_value(g, bv->name, hint);
        if (nv < 0) {
            st = korch_error(KORCH_ERR_OUT_OF_MEMORY, "out of memory");
            break;
        }
        bv = &sub->values[v];
        korch_value *gv = &g->values[nv];
        gv->declared_dtype = bv->declared_dtype;
        gv->has_declared_shape = bv->has_declared_shape;
        gv->declared_shape = bv->declared_shape;
        if (bv->is_constant) { /* moved, or borrowed as it was */
            gv->constant = bv->constant;
            bv->constant.owns_data = false;
            gv->is_constant = true;
            gv->dtype = gv->constant.dtype;
            gv->shape = gv->constant.shape;
            gv->has_shape = true;
        }
        map[v] = nv;
    }
    for (int i = 0; i < sub->n_nodes && st == KORCH_OK; i++)
        if (!sub->nodes[i].dead) st = move_node(g, &sub->nodes[i], map, prefix);
    return st;
}

korch_status korch_graph_inline_if(korch_graph *g, int ni, bool then_branch) {
    korch_node *n = &g->nodes[ni];
    char nbuf[160];
    korch_printable(n->name, nbuf, sizeof nbuf);
    korch_graph *b = korch_node_subgraph(n, then_branch ? "then_branch" : "else_branch");
    if (!b)
        return korch_error(KORCH_ERR_INVALID_MODEL, "node \"%s\" (If) has no %s", nbuf,
                           then_branch ? "then_branch" : "else_branch");
    if (b->n_inputs)
        return korch_error(KORCH_ERR_INVALID_MODEL, "node \"%s\" (If): a branch must have no inputs", nbuf);
    if (b->n_outputs != n->n_outputs)
        return korch_error(KORCH_ERR_INVALID_MODEL, "node \"%s\" (If): the %s has %d outputs, the If %d", nbuf,
                           then_branch ? "then_branch" : "else_branch", b->n_outputs, n->n_outputs);
    char *if_name = strdup(n->name);
    int *map = malloc(((size_t)b->n_values + 1) * sizeof *map);
    korch_status st = if_name && map ? KORCH_OK : korch_error(KORCH_ERR_OUT_OF_MEMORY, "out of memory");
    for (int v = 0; v < b->n_values && st == KORCH_OK; v++) map[v] = -1;
    if (st == KORCH_OK) st = korch_graph_inline_subgraph(g, ni, b, map, if_name, "");
    for (int k = 0; k < b->n_outputs && st == KORCH_OK; k++) {
        int out = g->nodes[ni].outputs[k];
        if (out < 0) continue;
        g->values[out].producer = -1;
        st = korch_graph_add_identity(g, map[b->outputs[k]], out, if_name, k);
    }
    if (st == KORCH_OK) g->nodes[ni].dead = true;
    free(map);
    free(if_name);
    return st;
}
