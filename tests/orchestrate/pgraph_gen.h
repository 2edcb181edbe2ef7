/* Random and hand-built primitive graphs for the candidate, orchestration and
 * runtime tests. Every value is float32 [4,4] or [4,1] so that any node can
 * read any earlier value; every sink is a graph output, so no node is dead. */
#ifndef KORCH_TESTS_PGRAPH_GEN_H
#define KORCH_TESTS_PGRAPH_GEN_H

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "ir/pgraph.h"

typedef struct gen_rng {
    uint64_t s;
} gen_rng;

static inline uint32_t gen_next(gen_rng *r) {
    r->s = r->s * 6364136223846793005ull + 1442695040888963407ull;
    return (uint32_t)(r->s >> 33);
}

static inline int gen_below(gen_rng *r, int n) { return (int)(gen_next(r) % (uint32_t)n); }
static inline double gen_unit(gen_rng *r) { return (double)gen_next(r) / 4294967296.0 * 2.0; }

static inline int gen_input(korch_pgraph *pg, int rows, int cols) {
    int64_t dims[2] = {rows, cols};
    korch_shape s = korch_shape_make(2, dims);
    return korch_pgraph_add_input(pg, KORCH_DTYPE_FLOAT32, &s);
}

static inline void gen_output(korch_pgraph *pg, int v) {
    korch_pgraph_add_output(pg, v);
}

static inline int gen_constant(korch_pgraph *pg, gen_rng *r) {
    korch_tensor t;
    int64_t dims[2] = {4, 4};
    korch_shape s = korch_shape_make(2, dims);
    korch_tensor_alloc(&t, KORCH_DTYPE_FLOAT32, &s);
    for (int i = 0; i < 16; i++) ((float *)t.data)[i] = (float)(gen_unit(r) - 1.0) * 0.5f;
    return korch_pgraph_add_constant(pg, &t);
}

static inline int gen_unary(korch_pgraph *pg, korch_ew_op op, int x) {
    return korch_pgraph_elementwise(pg, op, 1, &x, 0, 0, KORCH_DTYPE_UNDEFINED);
}

static inline int gen_binary(korch_pgraph *pg, korch_ew_op op, int a, int b) {
    int in[2] = {a, b};
    return korch_pgraph_elementwise(pg, op, 2, in, 0, 0, KORCH_DTYPE_UNDEFINED);
}

static inline int gen_transpose(korch_pgraph *pg, int x) {
    korch_index_map map = {.input_rank = 2};
    map.terms[0] = (korch_index_term){.coef = {0, 1}, .div = 1};
    map.terms[1] = (korch_index_term){.coef = {1, 0}, .div = 1};
    korch_shape s = pg->values[x].shape;
    int64_t t = s.dims[0];
    s.dims[0] = s.dims[1];
    s.dims[1] = t;
    return korch_pgraph_layout(pg, KORCH_LAYOUT_TRANSPOSE, 1, &x, &s, &map, 0.0);
}

static inline int gen_matmul(korch_pgraph *pg, int a, int b) {
    korch_prim_linear mm = {.op = KORCH_LINEAR_MATMUL};
    return korch_pgraph_linear(pg, &mm, a, b);
}

static inline bool gen_is_square(const korch_pgraph *pg, int v) {
    return pg->values[v].shape.rank == 2 && pg->values[v].shape.dims[1] == 4;
}

/* A random graph of n_nodes primitives (at most one in four linear). */
static inline korch_pgraph *gen_random_pgraph(uint64_t seed, int n_nodes, bool allow_linear) {
    gen_rng r = {seed * 0x9E3779B97F4A7C15ull + 7};
    korch_pgraph *pg = NULL;
    korch_pgraph_create(NULL, &pg);
    int vals[64], n_vals = 0;
    vals[n_vals++] = gen_input(pg, 4, 4);
    if (gen_below(&r, 2)) vals[n_vals++] = gen_input(pg, 4, 4);
    int weight = gen_constant(pg, &r);
    static const korch_ew_op unary[] = {KORCH_EW_RELU, KORCH_EW_NEG, KORCH_EW_TANH, KORCH_EW_SIGMOID, KORCH_EW_ABS};
    static const korch_ew_op binary[] = {KORCH_EW_ADD, KORCH_EW_SUB, KORCH_EW_MUL, KORCH_EW_MAX};
    for (int i = 0; i < n_nodes; i++) {
        /* prefer recent values (chains), sometimes any earlier one (branches, joins) */
        int pick1 =
            gen_below(&r, 3) ? vals[n_vals - 1 - gen_below(&r, n_vals < 3 ? n_vals : 3)] : vals[gen_below(&r, n_vals)];
        int pick2 = vals[gen_below(&r, n_vals)];
        int kind = gen_below(&r, 10), y = -1;
        if (kind < 3) y = gen_unary(pg, unary[gen_below(&r, 5)], pick1);
        else if (kind < 6) y = gen_binary(pg, binary[gen_below(&r, 4)], pick1, pick2);
        else if (kind < 7 && gen_is_square(pg, pick1))
            y = korch_pgraph_reduce(pg, KORCH_REDUCE_SUM, pick1, 1u << 1, true);
        else if (kind < 8 && gen_is_square(pg, pick1)) y = gen_transpose(pg, pick1);
        else if (kind < 10 && allow_linear && gen_is_square(pg, pick1))
            y = gen_matmul(pg, pick1, gen_is_square(pg, pick2) && gen_below(&r, 2) ? pick2 : weight);
        else y = gen_unary(pg, unary[gen_below(&r, 5)], pick1);
        vals[n_vals++] = y;
    }
    /* sinks are outputs; sometimes an inner value too */
    int *used = calloc((size_t)pg->n_values, sizeof *used);
    for (int i = 0; i < pg->n_nodes; i++)
        for (int k = 0; k < pg->nodes[i].n_inputs; k++) used[pg->nodes[i].inputs[k]]++;
    for (int i = 0; i < pg->n_nodes; i++) {
        int v = pg->nodes[i].outputs[0];
        if (!used[v] || gen_below(&r, 8) == 0) gen_output(pg, v);
    }
    free(used);
    return pg;
}

/* Random input tensors for pg (caller frees with gen_free_tensors). */
static inline korch_tensor *gen_inputs(const korch_pgraph *pg, uint64_t seed) {
    gen_rng r = {seed + 99};
    korch_tensor *t = calloc((size_t)pg->n_inputs + 1, sizeof *t);
    for (int i = 0; i < pg->n_inputs; i++) {
        const korch_pvalue *v = &pg->values[pg->inputs[i]];
        korch_tensor_alloc(&t[i], v->dtype, &v->shape);
        for (int64_t e = 0; e < korch_tensor_numel(&t[i]); e++) ((float *)t[i].data)[e] = (float)(gen_unit(&r) - 1.0);
    }
    return t;
}

static inline void gen_free_tensors(korch_tensor *t, int n) {
    for (int i = 0; i < n; i++) korch_tensor_free(&t[i]);
    free(t);
}

#endif
