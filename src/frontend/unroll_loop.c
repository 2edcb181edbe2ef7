/* Unrolling a short Loop at load. A Loop with a constant trip count M (at
 * most KORCH_LOOP_UNROLL_MAX), whose condition input is absent or a
 * constant true and whose body condition provably stays true for M
 * iterations, is replaced by M copies of its body, each with its iteration
 * number as a constant: the optimiser then sees one flat graph (fusing
 * across iterations), and a body that slices at the iteration number gets
 * static shapes. Scan outputs become Concat(Unsqueeze(step output)).
 *
 * "Provably stays true": a copy of the body is inferred per iteration with
 * the iteration number and the condition as constants; its condition output
 * must fold to true. A condition that depends on loop-carried values is
 * not known at load, and the Loop stays whole (an opaque kernel). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "frontend/frontend.h"
#include "frontend/subgraph.h"
#include "ops/control_flow.h"
#include "ops/op.h"

/* Body nodes times trip count above which a Loop is not unrolled. */
#define UNROLL_MAX_NODES 4096

static korch_status int_attr(korch_attr *a, const char *name, int64_t value, bool list) {
    memset(a, 0, sizeof *a);
    a->name = strdup(name);
    if (!a->name) return korch_error(KORCH_ERR_OUT_OF_MEMORY, "out of memory");
    if (list) {
        a->type = KORCH_ATTR_INTS;
        a->ints = malloc(sizeof *a->ints);
        if (!a->ints) return korch_error(KORCH_ERR_OUT_OF_MEMORY, "out of memory");
        a->ints[0] = value;
        a->count = 1;
    } else {
        a->type = KORCH_ATTR_INT;
        a->i = value;
    }
    return KORCH_OK;
}

/* The node's inputs as the operator would see them in inference. */
static korch_tensor **node_input_types(const korch_graph *g, const korch_node *n, korch_tensor *store) {
    korch_tensor **p = calloc((size_t)n->n_inputs + 1, sizeof *p);
    if (!p) return NULL;
    for (int k = 0; k < n->n_inputs; k++) {
        if (n->inputs[k] < 0) continue;
        const korch_value *v = &g->values[n->inputs[k]];
        store[k] = (korch_tensor){.dtype = v->dtype, .shape = v->shape, .data = v->is_constant ? v->constant.data : NULL};
        p[k] = &store[k];
    }
    return p;
}

/* Whether a copy of the body, inferred with iteration i and cond true as
 * constants, folds its condition output to true. Failures mean "no". */
static bool condition_stays_true(const korch_graph *body, int64_t i, const korch_tensor *carried, int n_carried,
                                 korch_tensor **node_inputs) {
    korch_graph *b = NULL;
    if (korch_graph_clone(body, &b) != KORCH_OK) return false;
    uint8_t yes = 1;
    korch_tensor *formal = calloc((size_t)n_carried + 3, sizeof *formal);
    bool ok = formal != NULL;
    if (ok) {
        formal[0] = (korch_tensor){.dtype = KORCH_DTYPE_INT64, .shape = korch_loop_counter_shape(body, 0), .data = &i};
        formal[1] = (korch_tensor){.dtype = KORCH_DTYPE_BOOL, .shape = korch_loop_counter_shape(body, 1), .data = &yes};
        for (int k = 0; k < n_carried; k++) formal[2 + k] = (korch_tensor){.dtype = carried[k].dtype, .shape = carried[k].shape};
        ok = korch_subgraph_infer(b, formal, 2 + n_carried, node_inputs) == KORCH_OK;
    }
    if (ok) {
        const korch_value *c = &b->values[b->outputs[0]];
        ok = c->is_constant && c->constant.dtype == KORCH_DTYPE_BOOL && korch_shape_numel(&c->constant.shape) == 1 &&
             ((const uint8_t *)c->constant.data)[0] != 0;
    }
    free(formal);
    korch_graph_free(b);
    korch_error_clear(); /* a "no" is not an error */
    return ok;
}

static korch_status unroll(korch_graph *g, int ni, const korch_graph *body, int64_t m, int n_carried, int n_scan) {
    char *loop_name = strdup(g->nodes[ni].name);
    int *carried = malloc(((size_t)n_carried + 1) * sizeof *carried);
    int *steps = malloc(((size_t)m * (size_t)n_scan + 1) * sizeof *steps);
    int *map = malloc(((size_t)body->n_values + 1) * sizeof *map);
    size_t name_len = strlen(g->nodes[ni].name) + 64;
    char *name = malloc(name_len), hint[32];
    korch_status st = loop_name && carried && steps && map && name ? KORCH_OK
                                                                      : korch_error(KORCH_ERR_OUT_OF_MEMORY, "out of memory");
    for (int k = 0; k < n_carried && st == KORCH_OK; k++) carried[k] = g->nodes[ni].inputs[2 + k];
    uint8_t yes = 1;
    for (int64_t i = 0; i < m && st == KORCH_OK; i++) {
        korch_graph *b = NULL;
        st = korch_graph_clone(body, &b);
        if (st != KORCH_OK) break;
        for (int v = 0; v < b->n_values; v++) map[v] = -1;
        snprintf(name, name_len, "%s/iteration_%lld", loop_name, (long long)i);
        map[b->inputs[0]] = korch_graph_add_constant(g, name, KORCH_DTYPE_INT64, &i, korch_loop_counter_shape(body, 0));
        snprintf(name, name_len, "%s/condition_%lld", loop_name, (long long)i);
        map[b->inputs[1]] = korch_graph_add_constant(g, name, KORCH_DTYPE_BOOL, &yes, korch_loop_counter_shape(body, 1));
        if (map[b->inputs[0]] < 0 || map[b->inputs[1]] < 0)
            st = korch_error(KORCH_ERR_INTERNAL, "Loop \"%s\": cannot name its iteration %lld", loop_name, (long long)i);
        for (int k = 0; k < n_carried; k++) map[b->inputs[2 + k]] = carried[k];
        snprintf(name, name_len, "%s/iteration_%lld", loop_name, (long long)i);
        snprintf(hint, sizeof hint, "__iteration_%lld", (long long)i);
        if (st == KORCH_OK) st = korch_graph_inline_subgraph(g, ni, b, map, name, hint);
        for (int k = 0; k < n_carried && st == KORCH_OK; k++) carried[k] = map[b->outputs[1 + k]];
        for (int k = 0; k < n_scan && st == KORCH_OK; k++) steps[i * n_scan + k] = map[b->outputs[1 + n_carried + k]];
        korch_graph_free(b);
    }
    /* the Loop's outputs: the last carried values, and the stacked steps */
    for (int k = 0; k < n_carried && st == KORCH_OK; k++) {
        int out = g->nodes[ni].outputs[k];
        if (out < 0) continue;
        g->values[out].producer = -1;
        st = korch_graph_add_identity(g, carried[k], out, loop_name, k);
    }
    bool axes_input = korch_graph_opset(g, "") >= 13;
    int64_t zero = 0;
    int axes = -1;
    if (st == KORCH_OK && n_scan && axes_input) {
        snprintf(name, name_len, "%s/axes", loop_name);
        korch_shape one = {.rank = 1, .dims = {1}};
        axes = korch_graph_add_constant(g, name, KORCH_DTYPE_INT64, &zero, one);
        if (axes < 0) st = korch_error(KORCH_ERR_INTERNAL, "Loop \"%s\": cannot name its axes", loop_name);
    }
    for (int k = 0; k < n_scan && st == KORCH_OK; k++) {
        int out = g->nodes[ni].outputs[n_carried + k];
        if (out < 0) continue;
        int *parts = malloc(((size_t)m + 1) * sizeof *parts);
        if (!parts) {
            st = korch_error(KORCH_ERR_OUT_OF_MEMORY, "out of memory");
            break;
        }
        for (int64_t i = 0; i < m && st == KORCH_OK; i++) {
            snprintf(name, name_len, "%s/scan_%d_step_%lld", loop_name, k, (long long)i);
            parts[i] = korch_graph_find_value(g, name) < 0 ? korch_graph_intern_value(g, name) : -1;
            if (parts[i] < 0) {
                st = korch_error(KORCH_ERR_INTERNAL, "Loop \"%s\": cannot name its scan step", loop_name);
                break;
            }
            int in[2] = {steps[i * n_scan + k], axes};
            korch_attr attr, *a = NULL;
            if (!axes_input) {
                st = int_attr(&attr, "axes", 0, true);
                a = &attr;
            }
            if (st == KORCH_OK) st = korch_graph_append_node(g, "Unsqueeze", name, in, axes_input ? 2 : 1, parts[i], a);
        }
        g->values[out].producer = -1;
        korch_attr attr;
        snprintf(name, name_len, "%s/scan_%d", loop_name, k);
        if (st == KORCH_OK) st = int_attr(&attr, "axis", 0, false);
        if (st == KORCH_OK) st = korch_graph_append_node(g, "Concat", name, parts, (int)m, out, &attr);
        free(parts);
    }
    if (st == KORCH_OK) g->nodes[ni].dead = true;
    free(loop_name);
    free(carried);
    free(steps);
    free(map);
    free(name);
    return st;
}

korch_status korch_graph_unroll_loop(korch_graph *g, int ni, bool *done) {
    *done = false;
    const korch_node *n = &g->nodes[ni];
    if (strcmp(n->op_type, "Loop") != 0) return KORCH_OK;
    const korch_graph *body = korch_node_subgraph(n, "body");
    int n_in = n->n_inputs - n->n_implicit_inputs;
    if (!body || n_in < 2 || n->inputs[0] < 0) return KORCH_OK;
    int n_carried = n_in - 2, n_scan = n->n_outputs - n_carried;
    if (n_scan < 0 || body->n_inputs != 2 + n_carried || body->n_outputs != 1 + n_carried + n_scan) return KORCH_OK;
    bool all_constant = true;
    for (int k = 0; k < n->n_inputs; k++) {
        if (n->inputs[k] < 0) continue;
        const korch_value *v = &g->values[n->inputs[k]];
        if (!v->has_shape) return KORCH_OK;
        all_constant &= v->is_constant;
    }
    if (all_constant) return KORCH_OK; /* evaluated at load instead (control_loop.c) */
    const korch_value *mv = &g->values[n->inputs[0]];
    if (!mv->is_constant || mv->dtype != KORCH_DTYPE_INT64 || korch_shape_numel(&mv->shape) != 1) return KORCH_OK;
    int64_t m = korch_tensor_get_i64(&mv->constant, 0);
    int live = 0;
    for (int i = 0; i < body->n_nodes; i++) live += !body->nodes[i].dead;
    if (m < 1 || m > KORCH_LOOP_UNROLL_MAX || (int64_t)live * m > UNROLL_MAX_NODES) return KORCH_OK;
    if (n_in > 1 && n->inputs[1] >= 0) {
        const korch_value *c = &g->values[n->inputs[1]];
        if (!c->is_constant || c->dtype != KORCH_DTYPE_BOOL || korch_shape_numel(&c->shape) != 1 ||
            !((const uint8_t *)c->constant.data)[0])
            return KORCH_OK;
    }
    korch_tensor *store = calloc((size_t)n->n_inputs + 1, sizeof *store);
    korch_tensor **types = store ? node_input_types(g, n, store) : NULL;
    bool stays = types != NULL;
    for (int64_t i = 0; stays && i < m; i++) stays = condition_stays_true(body, i, store + 2, n_carried, types);
    free(types);
    free(store);
    if (!stays) return KORCH_OK;
    KORCH_TRY(unroll(g, ni, body, m, n_carried, n_scan));
    *done = true;
    return KORCH_OK;
}
