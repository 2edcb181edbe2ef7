/* The post-op class tests (test_dnnl_postop_*.c): one case is a linear
 * primitive and a chain of elementwise steps, built as a pgraph; when the
 * oneDNN backend accepts it, every variant is built, run, and compared with
 * the primitive interpreter (korch_pgraph_interpret). A refusal is fine (the
 * chain is then not fused); a wrong answer is a failure.
 *
 * This file: the deterministic random source, graph inputs with their value
 * ranges, the comparison, and statistics (which oneDNN implementations the
 * cases reached, which post-op chains failed, why chains were refused).
 *
 * Tolerance: |got - want| <= tol * (rms + |want|) + floor, rms the root
 * mean square of the expected output, tol = 2e-4 * max(1, sqrt(K)/8) for a
 * reduction of length K, floor the absolute error the chain's activations
 * may add (1e-6 * max(1, |x|) each, carried through later steps; matters
 * only where an activation saturates towards 0, e.g. softplus(-8)). oneDNN
 * accumulates in float32 (the interpreter in double) and approximates
 * exp/erf/tanh; the steps keep the chain in a well-conditioned domain
 * (postop_steps.h), so honest kernels stay far below this (the largest
 * ratio seen is printed), while a wrong post-op parameter or operand moves
 * elements by a sizeable fraction of the rms. NaN and infinities must
 * match exactly. */
#ifndef KORCH_TESTS_DNNL_POSTOP_CHECK_H
#define KORCH_TESTS_DNNL_POSTOP_CHECK_H

#include <unistd.h>

#include "dnnl_check.h"

/* ---- OpenMP wait policy ------------------------------------------------------ */

/* oneDNN and the interpreter run thousands of tiny parallel regions here.
 * With libgomp's default (active) waiting, the idle thread spins between
 * them, and on a loaded 2-core machine that made the tests ~10x slower
 * (2.05 s against 0.24 s for one base, measured). libgomp reads
 * OMP_WAIT_POLICY when it loads, so the test runs itself again with
 * "passive" unless a policy is set. Results do not depend on it. */
static inline void pc_passive_wait(char **argv) {
    if (getenv("OMP_WAIT_POLICY")) return;
    setenv("OMP_WAIT_POLICY", "passive", 1);
    execv("/proc/self/exe", argv); /* returns only on failure: go on as we are */
}

/* ---- random source (fixed seeds: every run builds the same cases) ------- */

typedef struct pc_rng {
    uint64_t s;
} pc_rng;

static inline uint64_t pc_next(pc_rng *r) {
    /* splitmix64: good streams from consecutive seeds */
    uint64_t z = (r->s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}
static inline double pc_uniform(pc_rng *r, double lo, double hi) {
    return lo + (hi - lo) * (double)(pc_next(r) >> 11) / 9007199254740992.0;
}
static inline int pc_int(pc_rng *r, int n) { return (int)(pc_next(r) % (uint64_t)n); }

/* ---- graph inputs and their ranges ------------------------------------------ */

#define PC_MAX_INPUTS 24

/* A pgraph under construction with the value range of each graph input
 * (inputs are filled uniformly in [lo, hi], from a seed per input). */
typedef struct pc_graph {
    korch_pgraph *pg;
    pc_rng rng; /* constants and parameters */
    int n_in;
    float in_lo[PC_MAX_INPUTS], in_hi[PC_MAX_INPUTS];
    uint64_t in_seed[PC_MAX_INPUTS];
} pc_graph;

static inline int pc_input(pc_graph *g, int rank, const int64_t *dims, double lo, double hi) {
    if (g->n_in >= PC_MAX_INPUTS) return -1;
    korch_shape s = korch_shape_make(rank, dims);
    int v = korch_pgraph_add_input(g->pg, KORCH_DTYPE_FLOAT32, &s);
    g->in_lo[g->n_in] = (float)lo;
    g->in_hi[g->n_in] = (float)hi;
    g->in_seed[g->n_in] = pc_next(&g->rng);
    g->n_in++;
    return v;
}

static inline int pc_constant(pc_graph *g, int rank, const int64_t *dims, double lo, double hi) {
    korch_tensor t;
    korch_shape s = korch_shape_make(rank, dims);
    if (korch_tensor_alloc(&t, KORCH_DTYPE_FLOAT32, &s) != KORCH_OK) return -1;
    float *p = t.data;
    for (int64_t i = 0; i < korch_tensor_numel(&t); i++) p[i] = (float)pc_uniform(&g->rng, lo, hi);
    return korch_pgraph_add_constant(g->pg, &t);
}

/* The graph inputs' data (caller frees with pc_free_inputs). */
static inline korch_tensor *pc_make_inputs(const pc_graph *g) {
    korch_tensor *ins = calloc((size_t)g->pg->n_inputs + 1, sizeof *ins);
    for (int i = 0; i < g->pg->n_inputs; i++) {
        const korch_pvalue *v = &g->pg->values[g->pg->inputs[i]];
        korch_tensor_alloc(&ins[i], v->dtype, &v->shape);
        pc_rng r = {g->in_seed[i]};
        float *p = ins[i].data;
        for (int64_t e = 0; e < korch_tensor_numel(&ins[i]); e++)
            p[e] = (float)pc_uniform(&r, g->in_lo[i], g->in_hi[i]);
    }
    return ins;
}

static inline void pc_free_inputs(const pc_graph *g, korch_tensor *ins) {
    for (int i = 0; i < g->pg->n_inputs; i++) korch_tensor_free(&ins[i]);
    free(ins);
}

/* ---- statistics ------------------------------------------------------------- */

#define PC_MAX_KEYS 512

typedef struct pc_count {
    char key[160];
    int n, bad;
} pc_count;

typedef struct pc_stats {
    int cases, accepted, refused, skipped, kernels, failed_kernels, failed_cases;
    int cpu_refused; /* of refused: no variant builds on this CPU (dnnl_backend.c buildable: quirks 3, 5) */
    double max_ratio; /* largest error / tolerance of a passing element */
    pc_count impl[PC_MAX_KEYS];     /* oneDNN implementation (+ variant) -> kernels, failures */
    pc_count broken[PC_MAX_KEYS];   /* normalised post-op chain of a failing kernel */
    pc_count refusal[PC_MAX_KEYS];  /* normalised refusal reason */
} pc_stats;

static pc_stats pc_st;

static inline void pc_count_add(pc_count *t, const char *key, bool bad) {
    for (int i = 0; i < PC_MAX_KEYS; i++) {
        if (t[i].n == 0) snprintf(t[i].key, sizeof t[i].key, "%s", key);
        if (strcmp(t[i].key, key) == 0) {
            t[i].n++;
            t[i].bad += bad;
            return;
        }
    }
}

/* "conv2d nhwc g1 +bias +linear(1.3,0) +add[1x16x1x1]" ->
 * "conv +bias +linear +add[..]": the shape of a chain, without numbers. */
static inline void pc_normalise(const char *text, char *out, size_t size) {
    size_t n = 0;
    const char *p = strchr(text, '+');
    const char *kind = strncmp(text, "matmul", 6) == 0 ? "matmul" : strncmp(text, "deconv", 6) == 0 ? "deconv" : "conv";
    snprintf(out, size, "%s", kind);
    n = strlen(out);
    for (; p && *p && n + 2 < size; p++) {
        if (*p == '(') {
            while (*p && *p != ')') p++;
            if (!*p) break;
            continue;
        }
        if (*p == '[') { /* operand dims -> which are broadcast: [1x16x1x1] -> [1*11] */
            out[n++] = '[';
            for (p++; *p && *p != ']' && n + 2 < size; p++) {
                if (*p == 'x') continue;
                bool one = *p == '1' && (p[1] == 'x' || p[1] == ']');
                out[n++] = one ? '1' : '*';
                while (p[1] && p[1] != 'x' && p[1] != ']') p++;
            }
            out[n++] = ']';
            if (!*p) break;
            continue;
        }
        out[n++] = *p;
    }
    out[n] = '\0';
}

/* A refusal reason without node names and numbers, to count reasons. */
static inline void pc_reason_key(const char *reason, char *out, size_t size) {
    size_t n = 0;
    for (const char *p = reason; *p && n + 1 < size && n < 110; p++) {
        if (strncmp(p, "node ", 5) == 0 && p[5] >= '0' && p[5] <= '9') { /* node 12 (ew.ADD of "x") */
            const char *q = strchr(p, ')');
            if (q) {
                out[n++] = 'N';
                p = q;
                continue;
            }
        }
        if (*p == '(' && (p[1] == '-' || (p[1] >= '0' && p[1] <= '9'))) { /* (1.3,0.2) */
            const char *q = strchr(p, ')');
            if (q) {
                p = q;
                continue;
            }
        }
        out[n++] = *p;
    }
    out[n] = '\0';
}

static inline void pc_print_table(const char *title, const pc_count *t, bool only_bad) {
    bool any = false;
    for (int i = 0; i < PC_MAX_KEYS && t[i].n; i++) {
        if (only_bad && !t[i].bad) continue;
        if (!any) printf("%s\n", title);
        any = true;
        printf("  %5d  %5d bad  %s\n", t[i].n, t[i].bad, t[i].key);
    }
}

/* The run checked something: most cases were accepted and built (a
 * backend that refused everything would pass vacuously). */
static inline void pc_check_coverage(void) {
    /* cases refused because every variant hits a documented oneDNN defect on
     * this CPU (grouped convolutions with a binary post-op where oneDNN picks
     * gemm:jit throughout, as on Zen 4) are the backend being right, not
     * idle; they may not be the bulk */
    int judged = pc_st.cases - pc_st.cpu_refused;
    CHECK_MSG(pc_st.cpu_refused * 4 <= pc_st.cases, "%d of %d cases refused as unbuildable on this CPU",
              pc_st.cpu_refused, pc_st.cases);
    CHECK_MSG(pc_st.accepted * 10 >= judged * 9, "only %d of %d cases accepted (%d more refused as unbuildable here)",
              pc_st.accepted, judged, pc_st.cpu_refused);
    CHECK_MSG(pc_st.kernels >= pc_st.accepted, "%d kernels built for %d accepted cases", pc_st.kernels, pc_st.accepted);
}

static inline void pc_report(void) {
    printf("%d cases: %d accepted, %d refused (%d of them unbuildable on this CPU), %d skipped (step not applicable); "
           "%d kernels checked, %d wrong (in %d cases); largest passing error %.3f of the tolerance\n",
           pc_st.cases, pc_st.accepted, pc_st.refused, pc_st.cpu_refused, pc_st.skipped, pc_st.kernels, pc_st.failed_kernels,
           pc_st.failed_cases, pc_st.max_ratio);
    pc_print_table("oneDNN implementations reached (kernels, wrong):", pc_st.impl, false);
    pc_print_table("post-op chains computed wrongly:", pc_st.broken, true);
    if (getenv("KORCH_TEST_VERBOSE")) pc_print_table("refusals:", pc_st.refusal, false);
}

/* ---- the comparison ------------------------------------------------------------ */

static inline int pc_compare(const korch_tensor *want, const float *got, double K, double floor, const char *label) {
    int64_t n = korch_tensor_numel(want);
    const float *w = want->data;
    double sum = 0;
    int64_t finite = 0;
    for (int64_t i = 0; i < n; i++)
        if (isfinite(w[i])) sum += (double)w[i] * w[i], finite++;
    double rms = finite ? sqrt(sum / (double)finite) : 0;
    double tol = 2e-4 * fmax(1.0, sqrt(K) / 8.0);
    int bad = 0;
    double worst = 0;
    for (int64_t i = 0; i < n; i++) {
        bool ok;
        if (isnan(w[i])) ok = isnan(got[i]);
        else if (isinf(w[i])) ok = got[i] == w[i];
        else {
            double allowed = tol * (rms + fabs(w[i])) + floor;
            double err = fabs((double)got[i] - (double)w[i]);
            ok = err <= allowed; /* false for a NaN got */
            if (ok && allowed > 0 && err / allowed > worst) worst = err / allowed;
        }
        if (!ok && bad++ < 3)
            fprintf(stderr, "    %s: element %lld: got %.9g want %.9g (rms %.3g)\n", label, (long long)i, (double)got[i],
                    (double)w[i], rms);
    }
    if (!bad && worst > pc_st.max_ratio) pc_st.max_ratio = worst;
    return bad;
}

/* ---- the reference ---------------------------------------------------------- */

/* The linear primitive's output, computed once per base: the reference for
 * a case interprets only the chain, from this value (the interpreter's
 * convolution would otherwise dominate the test's time). */
typedef struct pc_ref {
    int value;               /* the value the chain starts from */
    int n_nodes;             /* nodes [0, n_nodes) compute it */
    const korch_tensor *data;
} pc_ref;

/* Interprets pg with the nodes computing ref->value left out and the value
 * supplied as an extra input (the graph is restored afterwards). */
static inline korch_status pc_interpret(korch_pgraph *pg, const pc_ref *ref, const korch_tensor *ins,
                                        korch_tensor *out) {
    if (!ref || !ref->data) return korch_pgraph_interpret(pg, ins, out);
    int n = pg->n_inputs, *saved = pg->inputs;
    int *inputs = malloc(((size_t)n + 1) * sizeof *inputs);
    korch_tensor *in = calloc((size_t)n + 1, sizeof *in);
    bool *dead = calloc((size_t)ref->n_nodes + 1, sizeof *dead);
    memcpy(inputs, saved, (size_t)n * sizeof *inputs);
    memcpy(in, ins, (size_t)n * sizeof *in);
    inputs[n] = ref->value;
    in[n] = (korch_tensor){.dtype = ref->data->dtype, .shape = ref->data->shape, .data = ref->data->data};
    for (int i = 0; i < ref->n_nodes; i++) dead[i] = pg->nodes[i].dead, pg->nodes[i].dead = true;
    pg->inputs = inputs;
    pg->n_inputs = n + 1;
    korch_status st = korch_pgraph_interpret(pg, in, out);
    pg->inputs = saved;
    pg->n_inputs = n;
    for (int i = 0; i < ref->n_nodes; i++) pg->nodes[i].dead = dead[i];
    free(dead);
    free(in);
    free(inputs);
    return st;
}

/* ---- one case ------------------------------------------------------------------ */

/* Runs the graph (one output) as one oneDNN kernel, every variant (without
 * the one-thread ones unless `all_variants`), against the interpreter (from
 * ref when given). K is the reduction length and floor an absolute error
 * allowed on top (the chain's approximations, postop_steps.h). `what`
 * describes the case. */
static inline void pc_check(pc_graph *g, const pc_ref *ref, double K, double floor, bool all_variants,
                            const char *what) {
    korch_pgraph *pg = g->pg;
    korch_kernel_spec spec;
    dc_spec_all(pg, &spec);
    char reason[256] = "", variants[128], text[256] = "", key[160];
    pc_st.cases++;
    if (!korch_backend_supports(KORCH_BACKEND_DNNL, &spec, reason, sizeof reason)) {
        pc_st.refused++;
        pc_st.cpu_refused += strstr(reason, "no variant oneDNN computes right here") != NULL;
        pc_reason_key(reason, key, sizeof key);
        pc_count_add(pc_st.refusal, key, false);
        if (getenv("KORCH_TEST_VERBOSE")) printf("%-60s refused: %s\n", what, reason);
        dc_spec_free(&spec);
        return;
    }
    pc_st.accepted++;
    CHECK_OK(korch_dnnl_describe(&spec, text, sizeof text));
    CHECK(korch_dnnl_variants(&spec, 2, variants, sizeof variants, reason, sizeof reason));
    korch_tensor *ins = pc_make_inputs(g);
    korch_tensor want = {0};
    CHECK_OK(pc_interpret(pg, ref, ins, &want));
    void **bufs = calloc((size_t)spec.n_inputs + 1, sizeof *bufs);
    for (int i = 0; i < spec.n_inputs; i++) {
        const korch_pvalue *v = &pg->values[spec.inputs[i]];
        bufs[i] = v->is_constant ? v->constant.data : ins[v->graph_input].data;
    }
    const korch_pvalue *out = &pg->values[pg->outputs[0]];
    size_t bytes = (size_t)korch_shape_numel(&out->shape) * sizeof(float);
    float *got = malloc(bytes + 64);
    bool case_bad = false;
    char *save = NULL, *list = strdup(variants);
    for (char *v = strtok_r(list, ";", &save); v; v = strtok_r(NULL, ";", &save)) {
        if (!all_variants && strstr(v, "thr=1")) continue;
        korch_kernel *k = NULL;
        const char *sched = v;
        korch_profile_options o = {.threads = 2};
        korch_status st = korch_backend_build(KORCH_BACKEND_DNNL, &spec, &sched, 1, &o, &k);
        if (st != KORCH_OK) {
            /* oneDNN may have no implementation for a variant: that is a
             * refusal at profile time, not a wrong answer */
            if (getenv("KORCH_TEST_VERBOSE")) printf("%-60s [%s] not built: %s\n", what, v, korch_last_error());
            continue;
        }
        memset(got, 0xff, bytes);
        void *outs[1] = {got};
        CHECK_OK(k->run(k, bufs, outs));
        char label[600];
        snprintf(label, sizeof label, "%.200s {%.200s} [%.150s]", what, text, k->impl);
        int bad = want.data ? pc_compare(&want, got, K, floor, label) : 1;
        pc_st.kernels++;
        /* "dnnl brgconv_1x1:avx512_core fmt=plain" -> the implementation and variant */
        char impl[160];
        snprintf(impl, sizeof impl, "%s", strncmp(k->impl, "dnnl ", 5) == 0 ? k->impl + 5 : k->impl);
        pc_count_add(pc_st.impl, impl, bad != 0);
        if (bad) {
            pc_st.failed_kernels++;
            case_bad = true;
            char norm[160];
            pc_normalise(text, norm, sizeof norm);
            char bkey[160];
            snprintf(bkey, sizeof bkey, "%.100s @ %.50s", norm, impl);
            pc_count_add(pc_st.broken, bkey, true);
        }
        CHECK_MSG(bad == 0, "%s: %d elements differ", label, bad);
        if (getenv("KORCH_TEST_VERBOSE") && !bad) printf("%-60s ok {%s} [%s]\n", what, text, k->impl);
        korch_kernel_destroy(k);
    }
    pc_st.failed_cases += case_bad;
    free(list);
    free(got);
    free(bufs);
    pc_free_inputs(g, ins);
    korch_tensor_free(&want);
    dc_spec_free(&spec);
}

#endif
