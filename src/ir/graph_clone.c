/* A deep copy of a korch_graph (subgraphs included). A Loop evaluated at
 * load infers a fresh copy of its body per iteration, with that iteration's
 * values as constants, since inference folds in place (control_loop.c).
 * Borrowed constants stay borrowed; owned data is copied. */
#include <stdlib.h>
#include <string.h>

#include "ir/graph.h"

static char *dup(const char *s) { return s ? strdup(s) : NULL; }

static bool copy_ints(int **dst, const int *src, int n) {
    *dst = malloc(((size_t)n + 1) * sizeof **dst);
    if (*dst && n) memcpy(*dst, src, (size_t)n * sizeof **dst);
    return *dst != NULL;
}

static korch_status clone_tensor(const korch_tensor *src, korch_tensor *dst) {
    if (!src->owns_data) {
        *dst = *src;
        return KORCH_OK;
    }
    return korch_tensor_clone(src, dst);
}

static korch_status clone_attr(const korch_attr *src, korch_attr *dst) {
    *dst = *src;
    dst->name = dup(src->name);
    dst->s = dup(src->s);
    dst->floats = NULL;
    dst->ints = NULL;
    dst->strings = NULL; /* copied below: a shared array was freed twice (a fuzzed Loop body with
                          * an RNN's activations, cloned to infer it) */
    dst->tensor = NULL;
    dst->graph = NULL;
    bool ok = dst->name && (!src->s || dst->s);
    if (ok && src->floats) {
        dst->floats = malloc(((size_t)src->count + 1) * sizeof *dst->floats);
        if ((ok = dst->floats != NULL) && src->count) memcpy(dst->floats, src->floats, (size_t)src->count * sizeof(float));
    }
    if (ok && src->ints) {
        dst->ints = malloc(((size_t)src->count + 1) * sizeof *dst->ints);
        if ((ok = dst->ints != NULL) && src->count) memcpy(dst->ints, src->ints, (size_t)src->count * sizeof(int64_t));
    }
    if (ok && src->strings) {
        dst->strings = calloc((size_t)src->count + 1, sizeof *dst->strings);
        ok = dst->strings != NULL;
        for (int k = 0; ok && k < src->count; k++) ok = !src->strings[k] || (dst->strings[k] = strdup(src->strings[k]));
    }
    if (!ok) return korch_error(KORCH_ERR_OUT_OF_MEMORY, "out of memory");
    if (src->tensor) {
        dst->tensor = calloc(1, sizeof *dst->tensor);
        if (!dst->tensor) return korch_error(KORCH_ERR_OUT_OF_MEMORY, "out of memory");
        KORCH_TRY(korch_tensor_clone(src->tensor, dst->tensor));
    }
    if (src->graph) KORCH_TRY(korch_graph_clone(src->graph, &dst->graph));
    return KORCH_OK;
}

static korch_status clone_into(const korch_graph *g, korch_graph *c) {
    c->name = dup(g->name);
    c->model_dir = dup(g->model_dir);
    c->ir_version = g->ir_version;
    c->depth = g->depth;
    c->unusable = dup(g->unusable);
    c->infer_each_iteration = g->infer_each_iteration;
    c->infer_subgraph = g->infer_subgraph;
    c->opsets = calloc((size_t)g->n_opsets + 1, sizeof *c->opsets);
    if (!c->name || (g->model_dir && !c->model_dir) || !c->opsets)
        return korch_error(KORCH_ERR_OUT_OF_MEMORY, "out of memory");
    for (int i = 0; i < g->n_opsets; i++) {
        c->opsets[i].domain = dup(g->opsets[i].domain);
        c->opsets[i].version = g->opsets[i].version;
        c->n_opsets++;
        if (!c->opsets[i].domain) return korch_error(KORCH_ERR_OUT_OF_MEMORY, "out of memory");
    }
    for (int v = 0; v < g->n_values; v++) {
        const korch_value *src = &g->values[v];
        if (korch_graph_intern_value(c, src->name) != v) return korch_error(KORCH_ERR_OUT_OF_MEMORY, "out of memory");
        korch_value *dst = &c->values[v];
        char *name = dst->name;
        *dst = *src;
        dst->name = name;
        dst->constant = (korch_tensor){0};
        for (int d = 0; d < KORCH_MAX_RANK; d++) dst->dim_params[d] = NULL;
        for (int d = 0; d < KORCH_MAX_RANK; d++)
            if (src->dim_params[d] && !(dst->dim_params[d] = strdup(src->dim_params[d])))
                return korch_error(KORCH_ERR_OUT_OF_MEMORY, "out of memory");
        if (src->is_constant) KORCH_TRY(clone_tensor(&src->constant, &dst->constant));
    }
    for (int i = 0; i < g->n_nodes; i++) {
        const korch_node *src = &g->nodes[i];
        if (korch_graph_add_node(c) != i) return korch_error(KORCH_ERR_OUT_OF_MEMORY, "out of memory");
        korch_node *dst = &c->nodes[i];
        *dst = *src;
        dst->name = dup(src->name);
        dst->op_type = dup(src->op_type);
        dst->domain = dup(src->domain);
        dst->inputs = dst->outputs = NULL;
        dst->attrs = calloc((size_t)src->n_attrs + 1, sizeof *dst->attrs);
        dst->n_attrs = 0;
        if (!dst->name || !dst->op_type || !dst->domain || !dst->attrs || !copy_ints(&dst->inputs, src->inputs, src->n_inputs) ||
            !copy_ints(&dst->outputs, src->outputs, src->n_outputs))
            return korch_error(KORCH_ERR_OUT_OF_MEMORY, "out of memory");
        for (int a = 0; a < src->n_attrs; a++) {
            c->nodes[i].n_attrs++;
            KORCH_TRY(clone_attr(&src->attrs[a], &c->nodes[i].attrs[a]));
        }
    }
    c->n_inputs = g->n_inputs;
    c->n_outputs = g->n_outputs;
    c->n_captures = g->n_captures;
    if (!copy_ints(&c->inputs, g->inputs, g->n_inputs) || !copy_ints(&c->outputs, g->outputs, g->n_outputs) ||
        !copy_ints(&c->captures, g->captures, g->n_captures) ||
        !copy_ints(&c->capture_slots, g->capture_slots, g->n_captures))
        return korch_error(KORCH_ERR_OUT_OF_MEMORY, "out of memory");
    return KORCH_OK;
}

korch_status korch_graph_clone(const korch_graph *g, korch_graph **out) {
    korch_graph *c = NULL;
    *out = NULL;
    KORCH_TRY(korch_graph_create(&c));
    korch_status st = clone_into(g, c);
    if (st != KORCH_OK) {
        korch_graph_free(c);
        return st;
    }
    *out = c;
    return KORCH_OK;
}
