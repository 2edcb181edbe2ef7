/* A one-node graph for testing an op row directly: set attributes and
 * inputs, call the row's infer and run, read the outputs. Also a small
 * seeded RNG and the float comparison the nn op tests share. */
#ifndef KORCH_TESTS_OPS_NN_HARNESS_H
#define KORCH_TESTS_OPS_NN_HARNESS_H

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "ops/op.h"
#include "test.h"

#define H_MAX_IO 4

typedef struct op_harness {
    korch_graph *g;
    int node;
    int n_inputs, n_outputs;
    korch_tensor in[H_MAX_IO], out[H_MAX_IO];
    korch_tensor *ins[H_MAX_IO], *outs[H_MAX_IO];
    korch_op_ctx ctx;
} op_harness;

static inline void h_init(op_harness *h, const char *op_type, int opset, int n_inputs, int n_outputs) {
    memset(h, 0, sizeof *h);
    if (korch_graph_create(&h->g) != KORCH_OK) abort();
    h->node = korch_graph_add_node(h->g);
    korch_node *n = &h->g->nodes[h->node];
    n->name = strdup("test_node");
    n->op_type = strdup(op_type);
    n->domain = strdup("");
    n->opset = opset;
    n->def = korch_op_find(op_type);
    if (!n->def) abort();
    n->n_inputs = n_inputs;
    n->n_outputs = n_outputs;
    n->inputs = calloc(H_MAX_IO, sizeof(int));
    n->outputs = calloc(H_MAX_IO, sizeof(int));
    n->attrs = calloc(16, sizeof(korch_attr));
    for (int i = 0; i < H_MAX_IO; i++) {
        char name[16];
        snprintf(name, sizeof name, "in%d", i);
        n = &h->g->nodes[h->node];
        n->inputs[i] = -1;
        if (i < n_inputs) n->inputs[i] = korch_graph_intern_value(h->g, name);
        snprintf(name, sizeof name, "out%d", i);
        n->outputs[i] = i < n_outputs ? korch_graph_intern_value(h->g, name) : -1;
    }
    h->n_inputs = n_inputs;
    h->n_outputs = n_outputs;
}

static inline korch_node *h_node(op_harness *h) { return &h->g->nodes[h->node]; }

static inline korch_attr *h_new_attr(op_harness *h, const char *name, korch_attr_type type) {
    korch_node *n = h_node(h);
    if (n->n_attrs >= 16) abort();
    korch_attr *a = &n->attrs[n->n_attrs++];
    a->name = strdup(name);
    a->type = type;
    return a;
}

static inline void h_attr_int(op_harness *h, const char *name, int64_t v) { h_new_attr(h, name, KORCH_ATTR_INT)->i = v; }
static inline void h_attr_float(op_harness *h, const char *name, float v) { h_new_attr(h, name, KORCH_ATTR_FLOAT)->f = v; }
static inline void h_attr_string(op_harness *h, const char *name, const char *v) {
    h_new_attr(h, name, KORCH_ATTR_STRING)->s = strdup(v);
}
static inline void h_attr_ints(op_harness *h, const char *name, int count, const int64_t *v) {
    korch_attr *a = h_new_attr(h, name, KORCH_ATTR_INTS);
    a->ints = malloc(((size_t)count + 1) * sizeof *a->ints);
    if (count) memcpy(a->ints, v, (size_t)count * sizeof *v);
    a->count = count;
}

/* Input i (omitted when rank < 0): a zeroed tensor the caller fills. */
static inline korch_tensor *h_input(op_harness *h, int i, korch_dtype dtype, int rank, const int64_t *dims) {
    korch_shape s = korch_shape_make(rank, dims);
    if (korch_tensor_alloc(&h->in[i], dtype, &s) != KORCH_OK) abort();
    h->ins[i] = &h->in[i];
    return &h->in[i];
}

static inline void h_ctx(op_harness *h) {
    for (int i = 0; i < h->n_outputs; i++) h->outs[i] = &h->out[i];
    h->ctx = (korch_op_ctx){.graph = h->g, .node = h_node(h), .n_inputs = h->n_inputs, .inputs = h->ins,
                            .n_outputs = h->n_outputs, .outputs = h->outs};
}

/* Shape inference only, as the frontend does it: inputs carry no data. */
static inline korch_status h_infer(op_harness *h) {
    korch_tensor saved[H_MAX_IO];
    korch_tensor *ins[H_MAX_IO] = {0};
    for (int i = 0; i < h->n_inputs; i++)
        if (h->ins[i]) {
            saved[i] = (korch_tensor){.dtype = h->in[i].dtype, .shape = h->in[i].shape};
            ins[i] = &saved[i];
        }
    h_ctx(h);
    h->ctx.inputs = ins;
    korch_status st = h_node(h)->def->infer(&h->ctx);
    h->ctx.inputs = h->ins;
    return st;
}

/* Infer, allocate the outputs, run. */
static inline korch_status h_run(op_harness *h) {
    korch_status st = h_infer(h);
    if (st != KORCH_OK) return st;
    for (int i = 0; i < h->n_outputs; i++) {
        korch_tensor *t = &h->out[i];
        st = korch_tensor_alloc(t, t->dtype, &t->shape);
        if (st != KORCH_OK) return st;
    }
    h_ctx(h);
    return h_node(h)->def->run(&h->ctx);
}

static inline void h_free(op_harness *h) {
    for (int i = 0; i < H_MAX_IO; i++) {
        korch_tensor_free(&h->in[i]);
        korch_tensor_free(&h->out[i]);
    }
    korch_graph_free(h->g);
}

/* Expects infer to fail with `status` and a message naming the node and
 * containing `needle`. */
#define CHECK_INFER_FAILS(h, status, needle)                                                       \
    do {                                                                                           \
        korch_status st_ = h_infer(h);                                                             \
        CHECK_MSG(st_ == (status), "status %s, expected %s (%s)", korch_status_name(st_),          \
                  korch_status_name(status), korch_last_error());                                  \
        CHECK_MSG(strstr(korch_last_error(), "test_node") && strstr(korch_last_error(), (needle)), \
                  "message \"%s\" lacks \"%s\"", korch_last_error(), (needle));                    \
    } while (0)

/* ---- random numbers (xorshift64*, seeded: failures reproduce) ---------- */
static uint64_t h_rng_state = 0x9E3779B97F4A7C15ull;
static inline uint64_t h_rand_u64(void) {
    h_rng_state ^= h_rng_state >> 12;
    h_rng_state ^= h_rng_state << 25;
    h_rng_state ^= h_rng_state >> 27;
    return h_rng_state * 0x2545F4914F6CDD1Dull;
}
/* uniform integer in [lo, hi] */
static inline int64_t h_rand_int(int64_t lo, int64_t hi) { return lo + (int64_t)(h_rand_u64() % (uint64_t)(hi - lo + 1)); }
/* uniform float in [-1, 1) */
static inline float h_rand_float(void) { return (float)((double)(h_rand_u64() >> 11) / 9007199254740992.0 * 2.0 - 1.0); }
static inline void h_fill_random(korch_tensor *t) {
    float *p = t->data;
    for (int64_t i = 0; i < korch_tensor_numel(t); i++) p[i] = h_rand_float();
}

/* Compares got against a double-precision reference whose per-element sum
 * of |terms| is `mag`. A float32 sum of n terms can be off by about
 * n * 2^-24 * sum|terms| in the worst case and ~sqrt(n) * 2^-24 typically;
 * 1e-5 * mag allows the typical error of sums of thousands of terms, while a
 * wrong tap, pad or stride moves a result by the size of a whole term. */
static inline int h_compare(const char *what, const float *got, const double *want, const double *mag, int64_t n) {
    int bad = 0;
    for (int64_t i = 0; i < n; i++) {
        double tol = 1e-5 * (mag ? mag[i] : fabs(want[i])) + 1e-6;
        if (!(fabs((double)got[i] - want[i]) <= tol)) {
            if (bad < 5) fprintf(stderr, "  %s: element %lld: got %.9g, want %.9g\n", what, (long long)i, got[i], want[i]);
            bad++;
        }
    }
    return bad;
}

#endif
