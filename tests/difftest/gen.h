/* korch-difftest's graph generator: random small ONNX models, a pure
 * function of a 64-bit seed (the same seed always writes the same bytes),
 * so that a failing seed reproduces exactly. See docs/difftest.md. */
#ifndef KORCH_DIFFTEST_GEN_H
#define KORCH_DIFFTEST_GEN_H

#include <stdint.h>
#include <stdio.h>

#include "core/status.h"

/* The generator's output version: a change that alters the model of any
 * seed must bump it, and then the seed lists (regression-seeds.txt,
 * known-failures.txt) must be derived again. */
#define DT_GEN_VERSION 1

/* Op coverage: how often each generated pattern was emitted. */
#define DT_MAX_KINDS 256
typedef struct dt_coverage {
    int n;
    char names[DT_MAX_KINDS][32];
    long counts[DT_MAX_KINDS];
} dt_coverage;

void dt_coverage_add(dt_coverage *c, const char *name, long count);
void dt_coverage_merge(dt_coverage *into, const dt_coverage *from);
void dt_coverage_print(const dt_coverage *c, FILE *out);

typedef struct dt_gen_info {
    int n_nodes; /* ONNX nodes written */
    int n_inputs, n_outputs;
    dt_coverage coverage; /* of this model */
} dt_gen_info;

/* Writes the model of `seed` to `path`. */
korch_status dt_generate(uint64_t seed, const char *path, dt_gen_info *info);

#endif
