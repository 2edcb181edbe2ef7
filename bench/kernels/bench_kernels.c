/* Micro-benchmark of generated memory-bound kernels against STREAM-like
 * bandwidth measured in the same run (issue 4). Each kernel is one primitive
 * subgraph, tuned by the cgen backend (korch_backend_profile, fresh profile
 * database), and its latency is the backend's own measurement: median of
 * repeats after warm-up (docs/profiling.md). Bytes counted = inputs + outputs.
 *
 * Usage: bench_kernels [threads]   (prints a Markdown table) */
#include <math.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "backend/backend.h"
#include "backend/cgen/cgen_backend.h"
#include "profile/profile.h"

static int threads = 2;

/* ---- STREAM-like reference --------------------------------------------------- */

typedef struct stream_ctx {
    float *a, *b, *c;
    int64_t n;
    int kind; /* 0 copy, 1 triad */
} stream_ctx;

static korch_status stream_run(void *ctx, int it) {
    (void)it;
    stream_ctx *s = ctx;
    float *restrict a = s->a;
    const float *restrict b = s->b, *restrict c = s->c;
    if (s->kind == 0) {
#pragma omp parallel for simd schedule(static) num_threads(threads)
        for (int64_t i = 0; i < s->n; i++) a[i] = b[i];
    } else {
#pragma omp parallel for simd schedule(static) num_threads(threads)
        for (int64_t i = 0; i < s->n; i++) a[i] = b[i] + 3.0f * c[i];
    }
    return KORCH_OK;
}

static double stream_gbs(int kind, korch_timing *t) {
    int64_t n = (int64_t)64 << 20; /* 256 MiB per array */
    stream_ctx s = {.n = n, .kind = kind};
    s.a = aligned_alloc(64, (size_t)n * 4);
    s.b = aligned_alloc(64, (size_t)n * 4);
    s.c = aligned_alloc(64, (size_t)n * 4);
#pragma omp parallel for schedule(static) num_threads(threads)
    for (int64_t i = 0; i < n; i++) s.a[i] = 0, s.b[i] = 1, s.c[i] = 2; /* first touch by the workers */
    korch_timer_options o = korch_timer_defaults();
    o.target_ms = 400;
    korch_profile_time(stream_run, &s, &o, t);
    free(s.a);
    free(s.b);
    free(s.c);
    double bytes = (double)n * 4 * (kind == 0 ? 2 : 3);
    return bytes / (t->median_ms * 1e-3) / 1e9;
}

/* ---- graph helpers --------------------------------------------------------------- */

static int input(korch_pgraph *pg, int rank, const int64_t *dims) {
    korch_shape s = korch_shape_make(rank, dims);
    return korch_pgraph_add_input(pg, KORCH_DTYPE_FLOAT32, &s);
}
static void output(korch_pgraph *pg, int v) {
    korch_pgraph_add_output(pg, v);
}
static int weight(korch_pgraph *pg, int64_t n) {
    korch_tensor t;
    korch_shape s = korch_shape_make(1, &n);
    korch_tensor_alloc(&t, KORCH_DTYPE_FLOAT32, &s);
    for (int64_t i = 0; i < n; i++) ((float *)t.data)[i] = 1.0f + 0.001f * (float)i;
    return korch_pgraph_add_constant(pg, &t);
}
static int u(korch_pgraph *pg, korch_ew_op op, int a) {
    return korch_pgraph_elementwise(pg, op, 1, &a, 0, 0, KORCH_DTYPE_UNDEFINED);
}
static int b2(korch_pgraph *pg, korch_ew_op op, int a, int b) {
    int in[2] = {a, b};
    return korch_pgraph_elementwise(pg, op, 2, in, 0, 0, KORCH_DTYPE_UNDEFINED);
}
static int sc(korch_pgraph *pg, float v) { return korch_pgraph_add_scalar(pg, v); }
static korch_index_map idmap(int rank) {
    korch_index_map m;
    memset(&m, 0, sizeof m);
    m.input_rank = rank;
    for (int k = 0; k < KORCH_MAX_RANK; k++) m.terms[k].div = 1;
    return m;
}

static korch_pgraph *chain5_n(int64_t n) { /* relu(x * a + b) * c + d: five elementwise ops */
    korch_pgraph *pg;
    korch_pgraph_create(NULL, &pg);
    int x = input(pg, 1, &n);
    int y = b2(pg, KORCH_EW_ADD, b2(pg, KORCH_EW_MUL, x, sc(pg, 1.5f)), sc(pg, -0.25f));
    output(pg, b2(pg, KORCH_EW_ADD, b2(pg, KORCH_EW_MUL, u(pg, KORCH_EW_RELU, y), sc(pg, 0.5f)), sc(pg, 2.0f)));
    return pg;
}

static korch_pgraph *softmax(int64_t rows, int64_t cols) {
    korch_pgraph *pg;
    korch_pgraph_create(NULL, &pg);
    int64_t d[2] = {rows, cols};
    int x = input(pg, 2, d);
    int m = korch_pgraph_reduce(pg, KORCH_REDUCE_MAX, x, 2u, true);
    int e = u(pg, KORCH_EW_EXP, b2(pg, KORCH_EW_SUB, x, m));
    int s = korch_pgraph_reduce(pg, KORCH_REDUCE_SUM, e, 2u, true);
    output(pg, b2(pg, KORCH_EW_DIV, e, s));
    return pg;
}

static korch_pgraph *layernorm(int64_t rows, int64_t cols) {
    korch_pgraph *pg;
    korch_pgraph_create(NULL, &pg);
    int64_t d[2] = {rows, cols};
    int x = input(pg, 2, d);
    int mean = korch_pgraph_reduce(pg, KORCH_REDUCE_MEAN, x, 2u, true);
    int c = b2(pg, KORCH_EW_SUB, x, mean);
    int var = korch_pgraph_reduce(pg, KORCH_REDUCE_MEAN, b2(pg, KORCH_EW_MUL, c, c), 2u, true);
    int inv = u(pg, KORCH_EW_RSQRT, b2(pg, KORCH_EW_ADD, var, sc(pg, 1e-5f)));
    int y = b2(pg, KORCH_EW_ADD, b2(pg, KORCH_EW_MUL, b2(pg, KORCH_EW_MUL, c, inv), weight(pg, cols)), weight(pg, cols));
    output(pg, y);
    return pg;
}

static korch_pgraph *instancenorm_relu(void) {
    korch_pgraph *pg;
    korch_pgraph_create(NULL, &pg);
    int64_t d[4] = {1, 64, 112, 112};
    int x = input(pg, 4, d);
    int mean = korch_pgraph_reduce(pg, KORCH_REDUCE_MEAN, x, 12u, true);
    int c = b2(pg, KORCH_EW_SUB, x, mean);
    int var = korch_pgraph_reduce(pg, KORCH_REDUCE_MEAN, b2(pg, KORCH_EW_MUL, c, c), 12u, true);
    int inv = u(pg, KORCH_EW_RSQRT, b2(pg, KORCH_EW_ADD, var, sc(pg, 1e-5f)));
    output(pg, u(pg, KORCH_EW_RELU, b2(pg, KORCH_EW_MUL, c, inv)));
    return pg;
}

static korch_pgraph *gelu(void) { /* 0.5 * x * (1 + erf(x / sqrt(2))) */
    korch_pgraph *pg;
    korch_pgraph_create(NULL, &pg);
    int64_t d[2] = {4096, 3072};
    int x = input(pg, 2, d);
    int e = u(pg, KORCH_EW_ERF, b2(pg, KORCH_EW_MUL, x, sc(pg, 0.70710678f)));
    output(pg, b2(pg, KORCH_EW_MUL, b2(pg, KORCH_EW_MUL, x, sc(pg, 0.5f)), b2(pg, KORCH_EW_ADD, e, sc(pg, 1.0f))));
    return pg;
}

static korch_pgraph *maxpool3x3(void) { /* [1, 64, 112, 112], stride 1, pad 1 */
    korch_pgraph *pg;
    korch_pgraph_create(NULL, &pg);
    int64_t d[4] = {1, 64, 112, 112};
    int x = input(pg, 4, d);
    korch_index_map m = idmap(4);
    m.terms[0].coef[0] = 1, m.terms[1].coef[1] = 1;
    m.terms[2].coef[2] = 1, m.terms[2].coef[4] = 1, m.terms[2].offset = -1;
    m.terms[3].coef[3] = 1, m.terms[3].coef[5] = 1, m.terms[3].offset = -1;
    m.may_be_out_of_bounds = true;
    korch_shape o = {6, {1, 64, 112, 112, 3, 3}};
    int w = korch_pgraph_layout(pg, KORCH_LAYOUT_WINDOW, 1, &x, &o, &m, -INFINITY);
    output(pg, korch_pgraph_reduce(pg, KORCH_REDUCE_MAX, w, (1u << 4) | (1u << 5), false));
    return pg;
}

static korch_pgraph *transpose2d(int64_t r, int64_t c) {
    korch_pgraph *pg;
    korch_pgraph_create(NULL, &pg);
    int64_t d[2] = {r, c};
    int x = input(pg, 2, d);
    korch_index_map m = idmap(2);
    m.terms[0].coef[1] = 1, m.terms[1].coef[0] = 1;
    korch_shape o = {2, {c, r}};
    output(pg, korch_pgraph_layout(pg, KORCH_LAYOUT_TRANSPOSE, 1, &x, &o, &m, 0));
    return pg;
}

static korch_pgraph *heads(void) { /* [1, 384, 12, 64] -> [1, 12, 384, 64] */
    korch_pgraph *pg;
    korch_pgraph_create(NULL, &pg);
    int64_t d[4] = {1, 384, 12, 64};
    int x = input(pg, 4, d);
    korch_index_map m = idmap(4);
    m.terms[0].coef[0] = 1, m.terms[1].coef[2] = 1, m.terms[2].coef[1] = 1, m.terms[3].coef[3] = 1;
    korch_shape o = {4, {1, 12, 384, 64}};
    output(pg, korch_pgraph_layout(pg, KORCH_LAYOUT_TRANSPOSE, 1, &x, &o, &m, 0));
    return pg;
}

typedef struct bench {
    const char *name, *shape;
    korch_pgraph *(*make)(void);
    double target;
} bench;

static korch_pgraph *chain5(void) { return chain5_n((int64_t)16 << 20); }
/* 1 GiB in, 1 GiB out: beyond any last-level cache, so it streams from DRAM
 * (the 16M-float chain's 128 MiB fits in a large L3) */
static korch_pgraph *chain5_dram(void) { return chain5_n((int64_t)256 << 20); }
static korch_pgraph *softmax_big(void) { return softmax(8192, 1024); }
static korch_pgraph *layernorm_big(void) { return layernorm(8192, 768); }
static korch_pgraph *layernorm_bert(void) { return layernorm(384, 768); }
static korch_pgraph *transpose_big(void) { return transpose2d(4096, 4096); }

int main(int argc, char **argv) {
    if (argc > 1) threads = atoi(argv[1]) > 0 ? atoi(argv[1]) : 2;
    char dir[128], db[160];
    snprintf(dir, sizeof dir, "/tmp/korch-bench-kernels-%d", (int)getpid());
    snprintf(db, sizeof db, "%s.db", dir);
    korch_timing tc, tt;
    double copy = stream_gbs(0, &tc), triad = stream_gbs(1, &tt);
    printf("threads: %d\n\nSTREAM-like, 256 MiB arrays: copy %.1f GB/s (spread %.1f%%), triad %.1f GB/s (spread %.1f%%)\n\n",
           threads, copy, 100 * tc.spread_ms / tc.median_ms, triad, 100 * tt.spread_ms / tt.median_ms);
    const bench benches[] = {
        {"fused 5-op elementwise chain", "16M floats", chain5, 0.8},
        {"row softmax", "[8192, 1024]", softmax_big, 0.6},
        {"LayerNorm (+gamma, beta)", "[8192, 768]", layernorm_big, 0.6},
        {"InstanceNorm + ReLU", "[1, 64, 112, 112]", instancenorm_relu, 0.6},
        {"erf-GELU", "[4096, 3072]", gelu, 0.6},
        {"LayerNorm (+gamma, beta)", "[384, 768]", layernorm_bert, 0},
        {"max-pool 3x3 s1 p1 (window + reduce)", "[1, 64, 112, 112]", maxpool3x3, 0},
        {"transpose 2-D", "[4096, 4096]", transpose_big, 0},
        {"transpose heads (0,2,1,3)", "[1, 384, 12, 64]", heads, 0},
        {"fused 5-op elementwise chain", "256M floats", chain5_dram, 0},
    };
    int nb = (int)(sizeof benches / sizeof benches[0]);
    printf("| kernel | shape | median ms | spread ms | GB/s | / triad | target | tuned schedule (default ms) |\n");
    printf("|---|---|---|---|---|---|---|---|\n");
    for (int i = 0; i < nb; i++) {
        korch_pgraph *pg = benches[i].make();
        int *nodes = malloc((size_t)pg->n_nodes * sizeof(int)), count = 0;
        korch_pgraph_toposort(pg, nodes, &count);
        int ins[16], ni = 0;
        double bytes = 0;
        for (int k = 0; k < pg->n_inputs; k++) ins[ni++] = pg->inputs[k];
        for (int v = 0; v < pg->n_values; v++)
            if (pg->values[v].is_constant) ins[ni++] = v;
        for (int k = 0; k < ni; k++)
            bytes += (double)korch_shape_numel(&pg->values[ins[k]].shape) * 4 * (pg->values[ins[k]].is_constant &&
                                                                                korch_shape_numel(&pg->values[ins[k]].shape) == 1 ? 0 : 1);
        for (int k = 0; k < pg->n_outputs; k++) bytes += (double)korch_shape_numel(&pg->values[pg->outputs[k]].shape) * 4;
        korch_kernel_spec spec = {.pg = pg, .n_nodes = count, .nodes = nodes, .n_inputs = ni, .inputs = ins,
                                  .n_outputs = pg->n_outputs, .outputs = pg->outputs};
        korch_profile_options opt = {.threads = threads, .db_path = db};
        korch_profile_result r;
        korch_cgen_stats s;
        korch_status st = korch_cgen_profile(&spec, 1, &opt, &r, &s);
        if (st != KORCH_OK || r.status != KORCH_OK) {
            printf("| %s | %s | failed: %s |\n", benches[i].name, benches[i].shape, st ? korch_last_error() : r.reason);
        } else {
            double gbs = bytes / (r.latency_ms * 1e-3) / 1e9;
            char target[16] = "-";
            if (benches[i].target > 0) snprintf(target, sizeof target, ">= %.1f", benches[i].target);
            printf("| %s | %s | %.3f | %.3f | %.1f | %.2f | %s | %s (%.3f) |\n", benches[i].name, benches[i].shape,
                   r.latency_ms, r.spread_ms, gbs, gbs / triad, target, r.schedule, s.default_ms_sum);
        }
        fflush(stdout);
        free(nodes);
        korch_pgraph_free(pg);
    }
    unlink(db);
    return 0;
}
