/* A one-node graph runner for operator tests: builds the graph in memory and
 * sends it through the real pipeline (validate, infer, reference run), so a
 * test sees exactly what a model with that node would. */
#ifndef KORCH_TESTS_OPS_OP_HARNESS_H
#define KORCH_TESTS_OPS_OP_HARNESS_H

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "frontend/frontend.h"
#include "ops/reference.h"

typedef struct h_input {
    korch_dtype dtype;
    int rank;
    int64_t dims[KORCH_MAX_RANK];
    const void *data;
    bool constant; /* an initializer rather than a graph input */
    bool omitted;  /* an empty input name */
} h_input;

typedef struct h_attr {
    const char *name;
    korch_attr_type type;
    int64_t i;
    float f;
    const int64_t *ints;
    int count;
    const char *s;
} h_attr;

#define H_INT(n, v) ((h_attr){.name = (n), .type = KORCH_ATTR_INT, .i = (v)})
#define H_FLOAT(n, v) ((h_attr){.name = (n), .type = KORCH_ATTR_FLOAT, .f = (v)})
#define H_STRING(n, v) ((h_attr){.name = (n), .type = KORCH_ATTR_STRING, .s = (v)})
#define H_INTS(n, arr, c) ((h_attr){.name = (n), .type = KORCH_ATTR_INTS, .ints = (arr), .count = (c)})

/* A graph input (or constant) of the given dtype, shape and data. */
static inline h_input h_tensor(korch_dtype dtype, int rank, const int64_t *dims, const void *data) {
    h_input in = {.dtype = dtype, .rank = rank, .data = data};
    for (int i = 0; i < rank; i++) in.dims[i] = dims[i];
    return in;
}
static inline h_input h_const(h_input in) {
    in.constant = true;
    return in;
}
static const h_input H_OMITTED = {.omitted = true};

static char *h_strdup(const char *s) {
    char *r = malloc(strlen(s) + 1);
    if (r) strcpy(r, s);
    return r;
}

/* Runs `op` at `opset`. outs[k] receives output k (caller frees with
 * korch_tensor_free); a NULL outs[k] leaves that output unnamed (omitted).
 * Returns the first failing status; korch_last_error() says why. */
static korch_status h_run(const char *op, int opset, const h_attr *attrs, int n_attrs, const h_input *ins, int n_in,
                          korch_tensor **outs, int n_out) {
    korch_graph *g = NULL;
    korch_status st = korch_graph_create(&g);
    if (st != KORCH_OK) return st;
    g->n_opsets = 1;
    g->opsets = calloc(1, sizeof *g->opsets);
    g->opsets[0].domain = h_strdup("");
    g->opsets[0].version = opset;
    g->inputs = calloc((size_t)n_in + 1, sizeof(int));
    g->outputs = calloc((size_t)n_out + 1, sizeof(int));
    int ni = korch_graph_add_node(g);
    korch_node *n = &g->nodes[ni];
    n->name = h_strdup("node");
    n->op_type = h_strdup(op);
    n->domain = h_strdup("");
    n->opset = opset;
    n->n_inputs = n_in;
    n->inputs = calloc((size_t)n_in + 1, sizeof(int));
    n->n_outputs = n_out;
    n->outputs = calloc((size_t)n_out + 1, sizeof(int));
    n->n_attrs = n_attrs;
    n->attrs = calloc((size_t)n_attrs + 1, sizeof(korch_attr));
    for (int a = 0; a < n_attrs; a++) {
        korch_attr *t = &n->attrs[a];
        t->name = h_strdup(attrs[a].name);
        t->type = attrs[a].type;
        t->i = attrs[a].i;
        t->f = attrs[a].f;
        if (attrs[a].s) t->s = h_strdup(attrs[a].s);
        if (attrs[a].type == KORCH_ATTR_INTS) {
            t->count = attrs[a].count;
            t->ints = calloc((size_t)attrs[a].count + 1, sizeof(int64_t));
            for (int k = 0; k < attrs[a].count; k++) t->ints[k] = attrs[a].ints[k];
        }
    }
    korch_tensor run_inputs[16];
    int n_run = 0;
    for (int k = 0; k < n_in; k++) {
        char name[32];
        snprintf(name, sizeof name, "x%d", k);
        if (ins[k].omitted) {
            g->nodes[ni].inputs[k] = -1;
            continue;
        }
        int v = korch_graph_intern_value(g, name);
        g->nodes[ni].inputs[k] = v;
        korch_value *val = &g->values[v];
        korch_shape shape = korch_shape_make(ins[k].rank, ins[k].dims);
        if (ins[k].constant) {
            korch_tensor src = {.dtype = ins[k].dtype, .shape = shape, .data = (void *)ins[k].data};
            if (st == KORCH_OK) st = korch_tensor_clone(&src, &val->constant);
            val->is_constant = true;
            val->dtype = ins[k].dtype;
            val->shape = shape;
            val->has_shape = true;
        } else {
            val->is_graph_input = true;
            val->declared_dtype = ins[k].dtype;
            val->has_declared_shape = true;
            val->declared_shape = shape;
            g->inputs[g->n_inputs++] = v;
            run_inputs[n_run++] = (korch_tensor){.dtype = ins[k].dtype, .shape = shape, .data = (void *)ins[k].data};
        }
    }
    int out_index[16];
    for (int k = 0; k < n_out; k++) {
        char name[32];
        snprintf(name, sizeof name, "y%d", k);
        out_index[k] = -1;
        if (!outs[k]) {
            g->nodes[ni].outputs[k] = -1;
            continue;
        }
        int v = korch_graph_intern_value(g, name);
        g->nodes[ni].outputs[k] = v;
        g->values[v].producer = ni;
        g->values[v].is_graph_output = true;
        out_index[k] = g->n_outputs;
        g->outputs[g->n_outputs++] = v;
    }
    if (st == KORCH_OK) st = korch_graph_validate(g);
    if (st == KORCH_OK) st = korch_graph_infer(g, NULL, 0);
    korch_tensor results[16] = {0};
    if (st == KORCH_OK) st = korch_reference_run(g, run_inputs, results);
    for (int k = 0; k < n_out; k++) {
        if (!outs[k]) continue;
        if (st == KORCH_OK) *outs[k] = results[out_index[k]];
        else *outs[k] = (korch_tensor){0};
    }
    korch_graph_free(g);
    return st;
}

/* Shorthand: one output. */
static inline korch_status h_run1(const char *op, int opset, const h_attr *attrs, int n_attrs, const h_input *ins,
                                  int n_in, korch_tensor *out) {
    korch_tensor *outs[1] = {out};
    return h_run(op, opset, attrs, n_attrs, ins, n_in, outs, 1);
}

static inline bool h_shape_is(const korch_tensor *t, int rank, const int64_t *dims) {
    if (t->shape.rank != rank) return false;
    for (int i = 0; i < rank; i++)
        if (t->shape.dims[i] != dims[i]) return false;
    return true;
}

/* |got - want| <= 1e-6 + 1e-5 |want| everywhere (NaN matches NaN). */
static inline bool h_close_f32(const float *got, const double *want, int64_t n) {
    if (!got) return false; /* the run failed */
    for (int64_t i = 0; i < n; i++) {
        if (isnan(want[i]) && isnan(got[i])) continue;
        if (isinf(want[i]) && got[i] == want[i]) continue;
        if (!(fabs((double)got[i] - want[i]) <= 1e-6 + 1e-5 * fabs(want[i]))) {
            fprintf(stderr, "  element %lld: got %.9g, want %.9g\n", (long long)i, (double)got[i], want[i]);
            return false;
        }
    }
    return true;
}

/* Largest |got - want|: for checks that two semantics really differ. */
static inline double h_max_diff(const float *got, const double *want, int64_t n) {
    double worst = 0;
    if (!got) return INFINITY;
    for (int64_t i = 0; i < n; i++) worst = fmax(worst, fabs((double)got[i] - want[i]));
    return worst;
}

#endif
