/* Row reductions through the prelude's vector helpers (emit_exprow.c):
 * cg_max_row / cg_min_row / cg_sum_row for a row maximum, minimum or sum
 * (mean) of an input, cg_expf_row_sum for
 * a row sum of an exponential, cg_expf_row for blocks of exponentials used
 * further inside a reduction. Each path is first shown to be taken (the
 * source calls the helper) under a schedule with the row-cache bit and not
 * without it, then checked against the interpreter on row lengths around
 * the vector width, the 32-element unroll and the 256-element block, with
 * NaN rows, and under fetch knob 2 (its prefetch goes into the block loop). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cgen_check.h"

static bool source_has(const korch_pgraph *pg, const char *sched, const char *needle) {
    korch_kernel_spec spec;
    cc_spec_all(pg, &spec);
    char *src = NULL;
    korch_profile_options opt = {.cg_stream_min_bytes = cc_stream_min_bytes};
    korch_status st = korch_cgen_source(&spec, sched, &opt, &src);
    CHECK_MSG(st == KORCH_OK, "source [%s]: %s", sched, korch_last_error());
    const char *body = src ? strstr(src, "\nint korch_") : NULL;
    bool yes = body && strstr(body, needle) != NULL;
    free(src);
    cc_spec_free(&spec);
    return yes;
}

enum { SOFTMAX, LOG_SOFTMAX, MAX_ONLY, MIN_ONLY, WEIGHTED, MASKED, SUM_ONLY, MEAN_ONLY, N_KINDS };

/* over the last axis of [rows, cols]:
 *   SOFTMAX      exp(x - max) / sum(exp(x - max))
 *   LOG_SOFTMAX  x - max - log(sum(exp(x - max)))   (the exponential is summed only)
 *   MAX_ONLY     max(x);  MIN_ONLY  min(x)
 *   WEIGHTED     sum(exp(x - max) * w) with w an input row: the exponential
 *                inside the reduced value (blocks of cg_expf_row)
 *   MASKED       softmax(x + m), m an input: the maximum of a computed row,
 *                through the row cache
 *   SUM_ONLY     sum(x);  MEAN_ONLY  mean(x) */
static korch_pgraph *row_graph(int kind, int64_t rows, int64_t cols) {
    korch_pgraph *pg = cc_graph();
    int64_t d[2] = {rows, cols};
    int x = cc_input(pg, KORCH_DTYPE_FLOAT32, 2, d);
    if (kind == MAX_ONLY || kind == MIN_ONLY || kind == SUM_ONLY || kind == MEAN_ONLY) {
        static const korch_reduce_op op[N_KINDS] = {[MAX_ONLY] = KORCH_REDUCE_MAX, [MIN_ONLY] = KORCH_REDUCE_MIN,
                                                    [SUM_ONLY] = KORCH_REDUCE_SUM, [MEAN_ONLY] = KORCH_REDUCE_MEAN};
        cc_output(pg, korch_pgraph_reduce(pg, op[kind], x, 2u, true));
        return pg;
    }
    if (kind == MASKED) x = cc_ew2(pg, KORCH_EW_ADD, x, cc_input(pg, KORCH_DTYPE_FLOAT32, 2, d));
    int m = korch_pgraph_reduce(pg, KORCH_REDUCE_MAX, x, 2u, true);
    int c = cc_ew2(pg, KORCH_EW_SUB, x, m);
    int e = cc_ew1(pg, KORCH_EW_EXP, c);
    if (kind == WEIGHTED) {
        int w = cc_input(pg, KORCH_DTYPE_FLOAT32, 2, d);
        cc_output(pg, korch_pgraph_reduce(pg, KORCH_REDUCE_SUM, cc_ew2(pg, KORCH_EW_MUL, e, w), 2u, true));
        return pg;
    }
    int s = korch_pgraph_reduce(pg, KORCH_REDUCE_SUM, e, 2u, true);
    if (kind == SOFTMAX || kind == MASKED) cc_output(pg, cc_ew2(pg, KORCH_EW_DIV, e, s));
    else cc_output(pg, cc_ew2(pg, KORCH_EW_SUB, c, cc_ew1(pg, KORCH_EW_LOG, s)));
    return pg;
}

static const char *const kind_name[] = {"softmax", "log-softmax",    "max", "min", "weighted exp sum",
                                        "masked softmax", "sum", "mean"};
static const char *const helper[] = {"cg_expf_row_sum(", "cg_expf_row_sum(", "cg_max_row(", "cg_min_row(",
                                     "cg_expf_row(",     "cg_max_row(rc",    "cg_sum_row(in0", "cg_sum_row(in0"};

/* Where the row cache may live in an output row and where it may not.
 * A softmax over [12, 12] blocks whose output is the block transposed reads
 * the cached exponentials across the row: in the output row, the last pass
 * would read elements it has already overwritten, so the cache stays on the
 * stack. A kernel whose last output (x - max) does not read the cached
 * exponentials at all may hold them in that output's row: the softmax's
 * pass reads them first. Both against the interpreter. */
static void check_homes(void) {
    static const char *const scheds[] = {"p2.g0.v1.u1.t0.o0.r3", "p1.g4.v3.u4.t8.o1.r1", "p0.g0.v0.u1.t0.o0.r1.f0"};
    for (int transposed = 0; transposed < 2; transposed++) {
        korch_pgraph *pg = cc_graph();
        int64_t d[3] = {9, 12, 12};
        int x = cc_input(pg, KORCH_DTYPE_FLOAT32, 3, d);
        int m = korch_pgraph_reduce(pg, KORCH_REDUCE_MAX, x, 6u, true);
        int c = cc_ew2(pg, KORCH_EW_SUB, x, m);
        int e = cc_ew1(pg, KORCH_EW_EXP, c);
        int s = korch_pgraph_reduce(pg, KORCH_REDUCE_SUM, e, 6u, true);
        if (transposed) {
            korch_shape ts = korch_shape_make(3, d);
            korch_index_map t = cc_map(3);
            t.terms[0].coef[0] = t.terms[1].coef[2] = t.terms[2].coef[1] = 1;
            e = korch_pgraph_layout(pg, KORCH_LAYOUT_TRANSPOSE, 1, &e, &ts, &t, 0);
        }
        cc_output(pg, cc_ew2(pg, KORCH_EW_DIV, e, s));
        if (!transposed) cc_output(pg, c);
        const char *what = transposed ? "softmax of 12x12 blocks, output transposed" : "softmax and x - max";
        for (int i = 0; i < 3; i++)
            CHECK_MSG(source_has(pg, scheds[i], "float *const rc") == !transposed, "%s [%s]: row cache %s", what,
                      scheds[i], transposed ? "in the output" : "not in the output");
        if (!transposed) CHECK(source_has(pg, scheds[0], "= out1 + "));
        CHECK(cc_check(pg, scheds, 3, -30, 30, what) == 0);
        korch_pgraph_free(pg);
    }
}

int main(void) {
    /* the paths are taken with the row-cache bit (r1, r3) and not without (r0, r2) */
    for (int kind = SOFTMAX; kind < N_KINDS; kind++) {
        korch_pgraph *pg = row_graph(kind, 8, 300);
        CHECK_MSG(source_has(pg, "p2.g0.v1.u1.t0.o0.r3", helper[kind]), "%s: r3 does not call %s", kind_name[kind],
                  helper[kind]);
        CHECK_MSG(source_has(pg, "p1.g4.v3.u4.t8.o1.r1", helper[kind]), "%s: r1 does not call %s", kind_name[kind],
                  helper[kind]);
        CHECK_MSG(!source_has(pg, "p2.g0.v1.u1.t0.o0.r2", helper[kind]), "%s: r2 calls %s", kind_name[kind],
                  helper[kind]);
        korch_pgraph_free(pg);
    }
    /* softmax's max pass reads the input: the helper; its sum keeps the row cache */
    korch_pgraph *sm = row_graph(SOFTMAX, 8, 300);
    CHECK(source_has(sm, "p2.g0.v1.u1.t0.o0.r3", "cg_max_row(in0"));
    CHECK(source_has(sm, "p2.g0.v1.u1.t0.o0.r3", "cg_expf_row_sum(rc"));
    korch_pgraph_free(sm);
    /* the softmax's row cache lives in its output row (emit_kernel.c,
     * row_cache_home): the last pass reads each element before writing it */
    sm = row_graph(SOFTMAX, 8, 300);
    CHECK(source_has(sm, "p2.g0.v1.u1.t0.o0.r3", "float *const rc"));
    CHECK(source_has(sm, "p1.g4.v3.u4.t8.o1.r1", "= out0 + "));
    korch_pgraph_free(sm);
    /* log-softmax does not keep the exponential: a block buffer */
    korch_pgraph *ls = row_graph(LOG_SOFTMAX, 8, 300);
    CHECK(source_has(ls, "p2.g0.v1.u1.t0.o0.r3", "cg_expf_row_sum(eb"));
    korch_pgraph_free(ls);
    /* fetch knob 2 prefetches the next row block by block (rows of 1024:
     * whole 64-float chunks), round-robin under grain 1 */
    korch_pgraph *f2 = row_graph(SOFTMAX, 16, 1024);
    CHECK(source_has(f2, "p2.g0.v1.u1.t0.o0.r3.f2", "__builtin_prefetch((const char *)&in0["));
    CHECK(source_has(f2, "p2.g1.v1.u1.t0.o0.r3.f2", "x0 + nthreads"));
    CHECK(!source_has(f2, "p2.g0.v1.u1.t0.o0.r3.f0", "__builtin_prefetch"));
    korch_pgraph_free(f2);

    /* rows longer than fetch knob 1's burst (64 KiB): the streaming output
     * pass prefetches the next row a line per 16 elements; f0 does not */
    cc_stream_min_bytes = 4096;
    korch_pgraph *lr = row_graph(SOFTMAX, 3, 20000);
    CHECK(source_has(lr, "p2.g0.v1.u1.t0.o0.r3.s1", "cg_stream16("));
    CHECK(source_has(lr, "p2.g0.v1.u1.t0.o0.r3.s1", "__builtin_prefetch((const char *)&in0[(x0 + 1) * 20000 + 16 * x"));
    CHECK(!source_has(lr, "p2.g0.v1.u1.t0.o0.r3.s1.f0", "__builtin_prefetch"));
    static const char *const lr_scheds[] = {"p2.g0.v1.u1.t0.o0.r3.s1", "p2.g1.v1.u1.t0.o0.r3.s1", "p0.g0.v1.u1.t0.o0.r3.s1"};
    CHECK(cc_check(lr, lr_scheds, 3, -30, 30, "softmax of rows of 20000, next row prefetched while streaming") == 0);
    korch_pgraph_free(lr);
    cc_stream_min_bytes = 0;

    /* values against the interpreter: lengths around 16, 32 and the 256 block */
    static const int64_t cols[] = {1, 5, 16, 17, 33, 197, 257, 1024};
    static const char *const scheds[] = {"p2.g0.v1.u1.t0.o0.r3", "p1.g4.v3.u4.t8.o1.r1", "p2.g1.v1.u1.t0.o0.r3.s1.f2",
                                         "p0.g0.v0.u1.t0.o0.r1.f0"};
    const int n_sched = (int)(sizeof scheds / sizeof scheds[0]);
    for (int kind = SOFTMAX; kind < N_KINDS; kind++) {
        for (size_t i = 0; i < sizeof cols / sizeof cols[0]; i++) {
            korch_pgraph *pg = row_graph(kind, 7, cols[i]);
            char what[96];
            snprintf(what, sizeof what, "%s, rows of %lld", kind_name[kind], (long long)cols[i]);
            CHECK(cc_check(pg, scheds, n_sched, -30, 30, what) == 0);
            /* NaNs: every 41st element (rows with and without one) */
            snprintf(what, sizeof what, "%s, rows of %lld, with NaNs", kind_name[kind], (long long)cols[i]);
            cc_nan_every = 41;
            CHECK(cc_check(pg, scheds, n_sched, -30, 30, what) == 0);
            cc_nan_every = 0;
            korch_pgraph_free(pg);
        }
    }
    /* arguments far below exp's range (results 0 or subnormal) and above it:
     * the helpers' clamp and scaling, as the vector loops */
    korch_pgraph *wide = row_graph(SOFTMAX, 5, 203);
    CHECK(cc_check(wide, scheds, n_sched, -200, 200, "softmax of values in [-200, 200]") == 0);
    korch_pgraph_free(wide);
    korch_pgraph *wl = row_graph(LOG_SOFTMAX, 5, 203);
    CHECK(cc_check(wl, scheds, n_sched, -200, 200, "log-softmax of values in [-200, 200]") == 0);
    korch_pgraph_free(wl);
    check_homes();
    printf("largest relative error: %.3g\n", cc_max_err);
    TEST_MAIN_END();
}
