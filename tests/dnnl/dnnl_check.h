/* Test helpers for the oneDNN backend: build small primitive graphs, run the
 * whole graph as one oneDNN kernel (every variant), and compare with the
 * primitive interpreter (korch_pgraph_interpret), the reference.
 *
 * Tolerance: |got - want| <= 1e-4 * (scale + |want|), where scale is the
 * largest |want| of the output, at least 1. oneDNN accumulates in float32
 * in blocked orders and uses polynomial approximations of exp/erf/tanh
 * (~1e-6 relative); the interpreter accumulates in double. A wrong index,
 * a wrong post-op or a wrong parameter moves elements by O(scale). */
#ifndef KORCH_TESTS_DNNL_DNNL_CHECK_H
#define KORCH_TESTS_DNNL_DNNL_CHECK_H

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/backend.h"
#include "backend/dnnl/dnnl_backend.h"
#include "ir/indexmap.h"
#include "ir/pgraph.h"
#include "test.h"

static uint64_t dc_rng = 0x9e3779b97f4a7c15ull;
static inline uint64_t dc_next(void) {
    dc_rng ^= dc_rng << 13;
    dc_rng ^= dc_rng >> 7;
    dc_rng ^= dc_rng << 17;
    return dc_rng;
}
static inline double dc_uniform(double lo, double hi) {
    return lo + (hi - lo) * (double)(dc_next() >> 11) / 9007199254740992.0;
}
static inline int dc_int(int lo, int hi) { return lo + (int)(dc_next() % (uint64_t)(hi - lo + 1)); }

static inline korch_pgraph *dc_graph(void) {
    korch_pgraph *pg = NULL;
    CHECK_OK(korch_pgraph_create(NULL, &pg));
    return pg;
}

static inline int dc_input(korch_pgraph *pg, int rank, const int64_t *dims) {
    korch_shape s = korch_shape_make(rank, dims);
    return korch_pgraph_add_input(pg, KORCH_DTYPE_FLOAT32, &s);
}

static inline void dc_output(korch_pgraph *pg, int v) {
    korch_pgraph_add_output(pg, v);
}

static inline int dc_constant(korch_pgraph *pg, int rank, const int64_t *dims, double lo, double hi) {
    korch_tensor t;
    korch_shape s = korch_shape_make(rank, dims);
    if (korch_tensor_alloc(&t, KORCH_DTYPE_FLOAT32, &s) != KORCH_OK) return -1;
    float *p = t.data;
    for (int64_t i = 0; i < korch_tensor_numel(&t); i++) p[i] = (float)dc_uniform(lo, hi);
    return korch_pgraph_add_constant(pg, &t);
}

static inline int dc_ew1(korch_pgraph *pg, korch_ew_op op, int a, float alpha, float beta) {
    return korch_pgraph_elementwise(pg, op, 1, &a, alpha, beta, KORCH_DTYPE_UNDEFINED);
}
static inline int dc_ew2(korch_pgraph *pg, korch_ew_op op, int a, int b) {
    int in[2] = {a, b};
    return korch_pgraph_elementwise(pg, op, 2, in, 0, 0, KORCH_DTYPE_UNDEFINED);
}

/* The whole live graph as one kernel spec: all nodes (topological), graph
 * inputs then constants in first-use order, graph outputs. */
static inline void dc_spec_all(const korch_pgraph *pg, korch_kernel_spec *spec) {
    int *nodes = malloc(((size_t)pg->n_nodes + 1) * sizeof(int)), count = 0;
    korch_pgraph_toposort(pg, nodes, &count);
    int *inputs = malloc(((size_t)pg->n_values + 1) * sizeof(int)), ni = 0;
    for (int i = 0; i < pg->n_inputs; i++) inputs[ni++] = pg->inputs[i];
    for (int i = 0; i < count; i++) {
        const korch_pnode *n = &pg->nodes[nodes[i]];
        for (int k = 0; k < n->n_inputs; k++) {
            int v = n->inputs[k];
            bool seen = false;
            for (int j = 0; j < ni; j++) seen |= inputs[j] == v;
            if (!seen && pg->values[v].is_constant) inputs[ni++] = v;
        }
    }
    *spec = (korch_kernel_spec){.pg = pg, .n_nodes = count, .nodes = nodes, .n_inputs = ni, .inputs = inputs,
                                .n_outputs = pg->n_outputs, .outputs = pg->outputs};
}

static inline void dc_spec_free(korch_kernel_spec *spec) {
    free((void *)spec->nodes);
    free((void *)spec->inputs);
}

static double dc_max_err = 0; /* largest error relative to the scale */

static inline int dc_compare(const korch_tensor *want, const float *got, const char *what) {
    int64_t n = korch_tensor_numel(want);
    const float *w = want->data;
    double scale = 1;
    for (int64_t i = 0; i < n; i++)
        if (isfinite(w[i]) && fabs(w[i]) > scale) scale = fabs(w[i]);
    int bad = 0;
    for (int64_t i = 0; i < n; i++) {
        bool ok;
        if (isnan(w[i])) ok = isnan(got[i]);
        else if (isinf(w[i])) ok = got[i] == w[i];
        else {
            double err = fabs((double)got[i] - (double)w[i]);
            ok = err <= 1e-4 * (scale + fabs(w[i]));
            if (err / scale > dc_max_err) dc_max_err = err / scale;
        }
        if (!ok && bad++ < 3)
            fprintf(stderr, "  %s: element %lld: got %.9g want %.9g\n", what, (long long)i, (double)got[i], (double)w[i]);
    }
    return bad;
}

/* Builds spec as a oneDNN kernel with one variant. A variant refused for a
 * documented oneDNN defect (src/backend/dnnl/dnnl_quirks.c: the reasons
 * start "oneDNN 2.6's") is handled: korch never runs it, and which variants
 * are refused depends on the CPU; then *refused is set (and said when
 * `what` is given) and the error cleared. Any other failure is a test
 * failure. Returns the kernel, or NULL. */
static inline korch_kernel *dc_build_variant(const korch_kernel_spec *spec, const char *variant, const char *what,
                                             bool *refused) {
    korch_kernel *k = NULL;
    const char *sched = variant;
    korch_profile_options o = {.threads = 2};
    korch_status st = korch_backend_build(KORCH_BACKEND_DNNL, spec, &sched, 1, &o, &k);
    *refused = st != KORCH_OK && strstr(korch_last_error(), "oneDNN 2.6's") != NULL;
    if (*refused) {
        if (what) printf("%s [%s]: refused: %s\n", what, variant, korch_last_error());
        korch_error_clear();
        return NULL;
    }
    CHECK_MSG(st == KORCH_OK, "%s [%s]: build failed: %s", what ? what : "kernel", variant, korch_last_error());
    return st == KORCH_OK ? k : NULL;
}

/* Runs pg (one output) as one oneDNN kernel under `schedule` (NULL: every
 * variant) and compares with the interpreter. Inputs uniform in [lo, hi].
 * Returns the number of variants checked (0 when unsupported). */
static inline int dc_check(korch_pgraph *pg, double lo, double hi, const char *what) {
    korch_kernel_spec spec;
    dc_spec_all(pg, &spec);
    char variants[128], reason[256];
    int checked = 0;
    if (!korch_dnnl_variants(&spec, 2, variants, sizeof variants, reason, sizeof reason)) {
        CHECK_MSG(false, "%s: unsupported: %s", what, reason);
        dc_spec_free(&spec);
        return 0;
    }
    korch_tensor *ins = calloc((size_t)pg->n_inputs + 1, sizeof *ins);
    korch_tensor want = {0};
    for (int i = 0; i < pg->n_inputs; i++) {
        const korch_pvalue *v = &pg->values[pg->inputs[i]];
        korch_tensor_alloc(&ins[i], v->dtype, &v->shape);
        float *p = ins[i].data;
        for (int64_t e = 0; e < korch_tensor_numel(&ins[i]); e++) p[e] = (float)dc_uniform(lo, hi);
    }
    CHECK_OK(korch_pgraph_interpret(pg, ins, &want));
    void **bufs = calloc((size_t)spec.n_inputs + 1, sizeof *bufs);
    for (int i = 0; i < spec.n_inputs; i++) {
        const korch_pvalue *v = &pg->values[spec.inputs[i]];
        bufs[i] = v->is_constant ? v->constant.data : ins[v->graph_input].data;
    }
    const korch_pvalue *out = &pg->values[pg->outputs[0]];
    float *got = malloc((size_t)korch_shape_numel(&out->shape) * sizeof(float) + 64);
    char *save = NULL, *list = strdup(variants);
    for (char *v = strtok_r(list, ";", &save); v; v = strtok_r(NULL, ";", &save)) {
        bool refused;
        korch_kernel *k = dc_build_variant(&spec, v, what, &refused);
        checked += refused;
        if (!k) continue;
        memset(got, 0xff, (size_t)korch_shape_numel(&out->shape) * sizeof(float));
        void *outs[1] = {got};
        CHECK_OK(k->run(k, bufs, outs));
        char label[512];
        snprintf(label, sizeof label, "%.250s [%.40s, %.160s]", what, v, k->impl);
        int bad = want.data ? dc_compare(&want, got, label) : 1;
        CHECK_MSG(bad == 0, "%s: %d elements differ", label, bad);
        if (getenv("KORCH_TEST_VERBOSE")) printf("%-70s ok\n", label);
        checked++;
        korch_kernel_destroy(k);
    }
    free(list);
    free(got);
    free(bufs);
    for (int i = 0; i < pg->n_inputs; i++) korch_tensor_free(&ins[i]);
    free(ins);
    korch_tensor_free(&want);
    dc_spec_free(&spec);
    return checked;
}

/* Expects the whole graph to be refused with a reason containing `needle`. */
static inline void dc_refused(korch_pgraph *pg, const char *needle, const char *what) {
    korch_kernel_spec spec;
    dc_spec_all(pg, &spec);
    char reason[256] = "";
    bool ok = korch_backend_supports(KORCH_BACKEND_DNNL, &spec, reason, sizeof reason);
    CHECK_MSG(!ok, "%s: accepted, expected a refusal", what);
    CHECK_MSG(!ok && strstr(reason, needle) != NULL, "%s: reason \"%s\" lacks \"%s\"", what, reason, needle);
    if (getenv("KORCH_TEST_VERBOSE")) printf("%-40s refused: %s\n", what, reason);
    dc_spec_free(&spec);
}

#endif
