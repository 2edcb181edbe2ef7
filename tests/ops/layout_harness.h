/* Test harness for single operators: runs one node's infer and run the way
 * the frontend and the reference executor do, without an ONNX file.
 * Outputs are filled with garbage bytes before run, so a kernel that leaves
 * an element unwritten fails the comparison. */
#ifndef KORCH_TESTS_OPS_LAYOUT_HARNESS_H
#define KORCH_TESTS_OPS_LAYOUT_HARNESS_H

#include <stdarg.h>
#include <string.h>

#include "ir/graph.h"
#include "ops/op.h"
#include "test.h"

#define TH_MAX 8

/* Attribute constructors (names and payloads are borrowed, not copied). */
#define TH_INT(n, v) ((korch_attr){.name = (char *)(n), .type = KORCH_ATTR_INT, .i = (v)})
#define TH_FLOAT(n, v) ((korch_attr){.name = (char *)(n), .type = KORCH_ATTR_FLOAT, .f = (v)})
#define TH_STR(n, v) ((korch_attr){.name = (char *)(n), .type = KORCH_ATTR_STRING, .s = (char *)(v)})
#define TH_INTS(n, arr, cnt) ((korch_attr){.name = (char *)(n), .type = KORCH_ATTR_INTS, .ints = (int64_t *)(arr), .count = (cnt)})
#define TH_FLOATS(n, arr, cnt) ((korch_attr){.name = (char *)(n), .type = KORCH_ATTR_FLOATS, .floats = (float *)(arr), .count = (cnt)})

typedef struct th_node {
    const char *op;
    int opset;
    int n_attrs;
    korch_attr attrs[TH_MAX];
    int n_inputs;
    korch_tensor *inputs[TH_MAX]; /* NULL: omitted optional input */
    /* bit i set: input i is a constant during inference (shape-giving inputs
     * such as Reshape's shape must be); data inputs are not */
    unsigned constant_mask;
    int n_outputs;
} th_node;

/* A tensor over caller-owned data (not freed). */
static inline korch_tensor th_tensor(korch_dtype dtype, int rank, const int64_t *dims, const void *data) {
    korch_tensor t = {.dtype = dtype, .shape = korch_shape_make(rank, dims), .data = (void *)data};
    return t;
}

/* Runs the node; on success outs[0..n_outputs) are owned tensors to free. */
static inline korch_status th_run(const th_node *c, korch_tensor *outs) {
    korch_graph *g = NULL;
    korch_status st = korch_graph_create(&g);
    if (st != KORCH_OK) return st;
    int in_idx[TH_MAX], out_idx[TH_MAX];
    char name[32];
    for (int i = 0; i < c->n_inputs; i++) {
        snprintf(name, sizeof name, "in%d", i);
        in_idx[i] = c->inputs[i] ? korch_graph_intern_value(g, name) : -1;
    }
    for (int i = 0; i < c->n_outputs; i++) {
        snprintf(name, sizeof name, "out%d", i);
        out_idx[i] = korch_graph_intern_value(g, name);
    }
    korch_node node = {.name = (char *)"test_node", .op_type = (char *)c->op, .domain = (char *)"",
                       .opset = c->opset, .n_inputs = c->n_inputs, .inputs = in_idx,
                       .n_outputs = c->n_outputs, .outputs = out_idx, .n_attrs = c->n_attrs,
                       .attrs = (korch_attr *)c->attrs};
    const korch_op_def *def = korch_op_find(c->op);
    if (!def) {
        korch_graph_free(g);
        return korch_error(KORCH_ERR_UNSUPPORTED, "no op %s", c->op);
    }
    node.def = def;
    korch_tensor in_store[TH_MAX], *ins[TH_MAX] = {0}, *out_ptr[TH_MAX] = {0};
    for (int i = 0; i < c->n_inputs; i++) {
        if (!c->inputs[i]) continue;
        in_store[i] = *c->inputs[i];
        if (!(c->constant_mask & (1u << i))) in_store[i].data = NULL;
        ins[i] = &in_store[i];
    }
    for (int i = 0; i < c->n_outputs; i++) {
        outs[i] = (korch_tensor){0};
        out_ptr[i] = &outs[i];
    }
    korch_op_ctx ctx = {.graph = g, .node = &node, .n_inputs = c->n_inputs, .inputs = ins,
                        .n_outputs = c->n_outputs, .outputs = out_ptr};
    st = def->infer(&ctx);
    for (int i = 0; i < c->n_outputs && st == KORCH_OK; i++) {
        if (outs[i].data) continue; /* inference computed it (Shape, Constant) */
        st = korch_tensor_alloc(&outs[i], outs[i].dtype, &outs[i].shape);
        if (st == KORCH_OK) memset(outs[i].data, 0xCD, korch_tensor_bytes(&outs[i]));
    }
    if (st == KORCH_OK) {
        for (int i = 0; i < c->n_inputs; i++)
            if (c->inputs[i]) in_store[i].data = c->inputs[i]->data;
        st = def->run(&ctx);
    }
    if (st != KORCH_OK)
        for (int i = 0; i < c->n_outputs; i++) korch_tensor_free(&outs[i]);
    korch_graph_free(g);
    return st;
}

static inline bool th_shape_is(const korch_tensor *t, int rank, ...) {
    if (t->shape.rank != rank) return false;
    va_list ap;
    va_start(ap, rank);
    bool ok = true;
    for (int i = 0; i < rank; i++)
        if (t->shape.dims[i] != va_arg(ap, int64_t)) ok = false;
    va_end(ap);
    return ok;
}

/* Element-wise comparison helpers; print the first mismatch. */
static inline bool th_equal_f32(const korch_tensor *t, const float *want, int64_t n, float tol) {
    if (t->dtype != KORCH_DTYPE_FLOAT32 || korch_tensor_numel(t) != n) {
        fprintf(stderr, "  dtype/size mismatch: %s with %lld elements, want %lld\n", korch_dtype_name(t->dtype),
                (long long)korch_tensor_numel(t), (long long)n);
        return false;
    }
    const float *g = t->data;
    for (int64_t i = 0; i < n; i++)
        if (!(fabsf(g[i] - want[i]) <= tol)) {
            fprintf(stderr, "  element %lld: got %.9g want %.9g\n", (long long)i, g[i], want[i]);
            return false;
        }
    return true;
}

static inline bool th_equal_i64(const korch_tensor *t, const int64_t *want, int64_t n) {
    if (t->dtype != KORCH_DTYPE_INT64 || korch_tensor_numel(t) != n) {
        fprintf(stderr, "  dtype/size mismatch: %s with %lld elements, want %lld\n", korch_dtype_name(t->dtype),
                (long long)korch_tensor_numel(t), (long long)n);
        return false;
    }
    const int64_t *g = t->data;
    for (int64_t i = 0; i < n; i++)
        if (g[i] != want[i]) {
            fprintf(stderr, "  element %lld: got %lld want %lld\n", (long long)i, (long long)g[i], (long long)want[i]);
            return false;
        }
    return true;
}

/* The last error names the test node and contains `part`. */
static inline bool th_error_mentions(const char *part) {
    const char *m = korch_last_error();
    bool ok = strstr(m, "test_node") && strstr(m, part);
    if (!ok) fprintf(stderr, "  error message was: %s\n", m);
    return ok;
}

#endif
