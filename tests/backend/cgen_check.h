/* Test helpers for generated kernels: build small primitive graphs, run them
 * through the cgen backend under given schedules, and compare with the
 * primitive interpreter (korch_pgraph_interpret), which is the reference.
 *
 * Tolerance: |got - want| <= atol + rtol * |want| with rtol = 2e-5 and
 * atol = 1e-5 * (1 + scale), where `scale` is the largest |want| of the output
 * (sums of many terms lose absolute, not relative, precision). The libmvec
 * transcendentals are within 4 ulp (~5e-7 relative); float accumulation in
 * reductions dominates. Bool and integer outputs must match exactly. */
#ifndef KORCH_TESTS_BACKEND_CGEN_CHECK_H
#define KORCH_TESTS_BACKEND_CGEN_CHECK_H

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/backend.h"
#include "backend/cgen/cgen_backend.h"
#include "ir/pgraph.h"
#include "test.h"

static uint64_t cc_rng = 0x2545f4914f6cdd1dull;
static inline uint64_t cc_next(void) {
    cc_rng ^= cc_rng << 13;
    cc_rng ^= cc_rng >> 7;
    cc_rng ^= cc_rng << 17;
    return cc_rng;
}
static inline double cc_uniform(double lo, double hi) { return lo + (hi - lo) * (double)(cc_next() >> 11) / 9007199254740992.0; }
static inline int cc_int(int lo, int hi) { return lo + (int)(cc_next() % (uint64_t)(hi - lo + 1)); }

static inline int cc_input(korch_pgraph *pg, korch_dtype dt, int rank, const int64_t *dims) {
    korch_shape s = korch_shape_make(rank, dims);
    return korch_pgraph_add_input(pg, dt, &s);
}

static inline korch_pgraph *cc_graph(void) {
    korch_pgraph *pg = NULL;
    CHECK_OK(korch_pgraph_create(NULL, &pg));
    return pg;
}

static inline int cc_ew1(korch_pgraph *pg, korch_ew_op op, int a) {
    return korch_pgraph_elementwise(pg, op, 1, &a, 0, 0, KORCH_DTYPE_UNDEFINED);
}

static inline int cc_ew2(korch_pgraph *pg, korch_ew_op op, int a, int b) {
    int in[2] = {a, b};
    return korch_pgraph_elementwise(pg, op, 2, in, 0, 0, KORCH_DTYPE_UNDEFINED);
}

static inline void cc_output(korch_pgraph *pg, int v) {
    korch_pgraph_add_output(pg, v);
}

/* A constant tensor with random contents (a "weight"). */
static inline int cc_constant(korch_pgraph *pg, int rank, const int64_t *dims, double lo, double hi) {
    korch_tensor t;
    korch_shape s = korch_shape_make(rank, dims);
    if (korch_tensor_alloc(&t, KORCH_DTYPE_FLOAT32, &s) != KORCH_OK) return -1;
    float *p = t.data;
    for (int64_t i = 0; i < korch_tensor_numel(&t); i++) p[i] = (float)cc_uniform(lo, hi);
    return korch_pgraph_add_constant(pg, &t);
}

/* When positive, every cc_nan_every-th float input element (from the 4th) is
 * a NaN, to check the NaN handling of max/min paths against the interpreter. */
static int cc_nan_every = 0;

static inline void cc_fill(korch_tensor *t, double lo, double hi) {
    int64_t n = korch_tensor_numel(t);
    for (int64_t i = 0; i < n; i++) {
        if (cc_nan_every > 0 && i % cc_nan_every == 3 &&
            (t->dtype == KORCH_DTYPE_FLOAT32 || t->dtype == KORCH_DTYPE_FLOAT64)) {
            if (t->dtype == KORCH_DTYPE_FLOAT32) ((float *)t->data)[i] = NAN;
            else ((double *)t->data)[i] = NAN;
            continue;
        }
        switch (t->dtype) {
        case KORCH_DTYPE_FLOAT32: ((float *)t->data)[i] = (float)cc_uniform(lo, hi); break;
        case KORCH_DTYPE_FLOAT64: ((double *)t->data)[i] = cc_uniform(lo, hi); break;
        case KORCH_DTYPE_BOOL: ((uint8_t *)t->data)[i] = (uint8_t)(cc_next() & 1); break;
        case KORCH_DTYPE_INT64: ((int64_t *)t->data)[i] = cc_int(-5, 5); break;
        case KORCH_DTYPE_INT32: ((int32_t *)t->data)[i] = cc_int(-5, 5); break;
        default: break;
        }
    }
}

/* The whole live graph as one kernel spec (all nodes, graph inputs plus the
 * constants they use, graph outputs). Arrays are malloc'ed into *spec. */
static inline void cc_spec_all(const korch_pgraph *pg, korch_kernel_spec *spec) {
    int *nodes = malloc(((size_t)pg->n_nodes + 1) * sizeof(int)), count = 0;
    korch_pgraph_toposort(pg, nodes, &count);
    int *inputs = malloc(((size_t)pg->n_values + 1) * sizeof(int)), ni = 0;
    for (int i = 0; i < pg->n_inputs; i++) inputs[ni++] = pg->inputs[i];
    for (int v = 0; v < pg->n_values; v++)
        if (pg->values[v].is_constant) inputs[ni++] = v;
    *spec = (korch_kernel_spec){.pg = pg, .n_nodes = count, .nodes = nodes, .n_inputs = ni, .inputs = inputs,
                                .n_outputs = pg->n_outputs, .outputs = pg->outputs};
}

static inline void cc_spec_free(korch_kernel_spec *spec) {
    free((void *)spec->nodes);
    free((void *)spec->inputs);
}

static double cc_max_err = 0; /* largest relative error seen (reported by tests) */
/* korch_profile_options.cg_stream_min_bytes of cc_check's builds (0: the
 * library's default, the last-level cache; test_cgen_stream lowers it) */
static long long cc_stream_min_bytes = 0;

/* Compares one output; returns the number of mismatches. */
static inline int cc_compare(const korch_tensor *want, const void *got, const char *what) {
    int64_t n = korch_tensor_numel(want);
    double scale = 0;
    for (int64_t i = 0; i < n; i++) {
        double w = korch_tensor_get_f64(want, i);
        if (isfinite(w) && fabs(w) > scale) scale = fabs(w);
    }
    korch_tensor g = *want;
    g.data = (void *)got;
    int bad = 0;
    bool exact = want->dtype != KORCH_DTYPE_FLOAT32 && want->dtype != KORCH_DTYPE_FLOAT64;
    for (int64_t i = 0; i < n; i++) {
        double w = korch_tensor_get_f64(want, i), v = korch_tensor_get_f64(&g, i);
        bool ok;
        if (exact) ok = w == v;
        else if (isnan(w)) ok = isnan(v);
        else if (isinf(w)) ok = v == w;
        else {
            double err = fabs(v - w);
            ok = err <= 1e-5 * (1 + scale) + 2e-5 * fabs(w);
            double rel = err / (1e-30 + fabs(w) + 1e-3 * scale);
            if (rel > cc_max_err) cc_max_err = rel;
        }
        if (!ok && bad++ < 3) fprintf(stderr, "  %s: element %lld: got %.9g want %.9g\n", what, (long long)i, v, w);
    }
    return bad;
}

/* Runs the whole graph as one kernel under each schedule ("" = default) and
 * checks every output. Returns the number of failing schedules. */
static inline int cc_check(const korch_pgraph *pg, const char *const *schedules, int n_sched, double lo, double hi,
                    const char *what) {
    korch_tensor *in = calloc((size_t)pg->n_inputs + 1, sizeof *in), *want = calloc((size_t)pg->n_outputs, sizeof *want);
    for (int i = 0; i < pg->n_inputs; i++) {
        const korch_pvalue *v = &pg->values[pg->inputs[i]];
        korch_tensor_alloc(&in[i], v->dtype, &v->shape);
        cc_fill(&in[i], lo, hi);
    }
    int failures = 0;
    korch_status st = korch_pgraph_interpret(pg, in, want);
    CHECK_MSG(st == KORCH_OK, "%s: interpreter: %s", what, korch_last_error());
    korch_kernel_spec spec;
    cc_spec_all(pg, &spec);
    void **inptr = calloc((size_t)spec.n_inputs + 1, sizeof *inptr), **outptr = calloc((size_t)pg->n_outputs, sizeof *outptr);
    for (int i = 0; i < spec.n_inputs; i++) {
        const korch_pvalue *v = &pg->values[spec.inputs[i]];
        inptr[i] = v->is_constant ? v->constant.data : in[v->graph_input].data;
    }
    for (int s = 0; s < n_sched && st == KORCH_OK; s++) {
        korch_kernel *k = NULL;
        korch_profile_options opt = {.threads = 2, .cg_stream_min_bytes = cc_stream_min_bytes};
        const char *sched = schedules[s];
        korch_status bs = korch_backend_build(KORCH_BACKEND_CGEN, &spec, &sched, 1, &opt, &k);
        CHECK_MSG(bs == KORCH_OK, "%s [%s]: build: %s", what, sched, korch_last_error());
        if (bs != KORCH_OK) {
            failures++;
            continue;
        }
        for (int o = 0; o < pg->n_outputs; o++) {
            outptr[o] = calloc(korch_tensor_bytes(&want[o]) + 1, 1);
            memset(outptr[o], 0xA5, korch_tensor_bytes(&want[o])); /* catch unwritten elements */
        }
        korch_status rs = k->run(k, inptr, outptr);
        CHECK_MSG(rs == KORCH_OK, "%s [%s]: run: %s", what, sched, korch_last_error());
        int bad = 0;
        for (int o = 0; o < pg->n_outputs; o++) {
            char label[200];
            snprintf(label, sizeof label, "%s [%s] output %d", what, sched, o);
            bad += cc_compare(&want[o], outptr[o], label);
            free(outptr[o]);
        }
        CHECK_MSG(bad == 0, "%s [%s]: %d elements differ from the interpreter", what, sched, bad);
        if (bad) {
            failures++;
            char *src = NULL;
            if (getenv("KORCH_TEST_DUMP") && korch_cgen_source(&spec, sched, NULL, &src) == KORCH_OK) fputs(src, stderr);
            free(src);
        }
        korch_kernel_destroy(k);
    }
    free(inptr);
    free(outptr);
    cc_spec_free(&spec);
    for (int i = 0; i < pg->n_inputs; i++) korch_tensor_free(&in[i]);
    for (int i = 0; i < pg->n_outputs; i++) korch_tensor_free(&want[i]);
    free(in);
    free(want);
    return failures;
}

/* A small set of contrasting schedules every test runs under. */
static const char *const cc_schedules[] = {
    "",                               /* default */
    "p0.g0.v0.u1.t0.o0.r0",           /* serial, no simd, no row cache */
    "p1.g4.v3.u4.t8.o1.r1",           /* parallel, chunked, simdlen 16, unrolled, tiled, swapped */
    "p3.g1.v2.u2.t16.o0.r0",          /* deep collapse */
};
#define CC_N_SCHED ((int)(sizeof cc_schedules / sizeof cc_schedules[0]))

static inline korch_index_map cc_map(int in_rank) {
    korch_index_map m;
    memset(&m, 0, sizeof m);
    m.input_rank = in_rank;
    for (int k = 0; k < KORCH_MAX_RANK; k++) m.terms[k].div = 1;
    return m;
}

#endif
