/* Single-primitive kernels against the interpreter: every elementwise
 * function (with broadcasting), every reduction over random axis sets with
 * and without keepdims, and every kind of layout map. */
#include "cgen_check.h"

static bool is_boolean_op(korch_ew_op op) { return op == KORCH_EW_NOT || op == KORCH_EW_AND || op == KORCH_EW_OR; }

static void test_elementwise(void) {
    for (int op = 0; op < KORCH_EW_COUNT; op++) {
        korch_pgraph *pg = cc_graph();
        int arity = korch_ew_arity((korch_ew_op)op);
        korch_dtype dt = is_boolean_op((korch_ew_op)op) ? KORCH_DTYPE_BOOL : KORCH_DTYPE_FLOAT32;
        int64_t a[3] = {3, 1, 37}, b[2] = {4, 37}, c[1] = {37};
        int ins[3];
        if (arity == 1) ins[0] = cc_input(pg, dt, 2, b);
        if (arity >= 2) {
            ins[0] = cc_input(pg, op == KORCH_EW_WHERE ? KORCH_DTYPE_BOOL : dt, 3, a);
            ins[1] = cc_input(pg, dt, 2, b);
        }
        if (arity == 3) ins[2] = cc_input(pg, dt, 1, c);
        korch_dtype cast = op == KORCH_EW_CAST ? KORCH_DTYPE_INT64 : KORCH_DTYPE_UNDEFINED;
        int y = korch_pgraph_elementwise(pg, (korch_ew_op)op, arity, ins, 0.25f, 0.75f, cast);
        CHECK_MSG(y >= 0, "%s: %s", korch_ew_name((korch_ew_op)op), korch_last_error());
        cc_output(pg, y);
        bool positive = op == KORCH_EW_LOG || op == KORCH_EW_SQRT || op == KORCH_EW_RSQRT || op == KORCH_EW_POWC ||
                        op == KORCH_EW_POW || op == KORCH_EW_DIV || op == KORCH_EW_RECIP;
        char what[64];
        snprintf(what, sizeof what, "ew.%s", korch_ew_name((korch_ew_op)op));
        cc_check(pg, cc_schedules, CC_N_SCHED, positive ? 0.25 : -3.0, positive ? 2.0 : 3.0, what);
        korch_pgraph_free(pg);
    }
    /* cast to bool and to float from int */
    korch_pgraph *pg = cc_graph();
    int64_t d[2] = {7, 9};
    int x = cc_input(pg, KORCH_DTYPE_INT64, 2, d);
    int f = korch_pgraph_elementwise(pg, KORCH_EW_CAST, 1, &x, 0, 0, KORCH_DTYPE_FLOAT32);
    int b = korch_pgraph_elementwise(pg, KORCH_EW_CAST, 1, &f, 0, 0, KORCH_DTYPE_BOOL);
    cc_output(pg, f);
    cc_output(pg, b);
    cc_check(pg, cc_schedules, CC_N_SCHED, 0, 0, "cast int64->float->bool");
    korch_pgraph_free(pg);
}

static void test_reduce(void) {
    const int64_t dims[4] = {3, 5, 4, 19};
    for (int op = 0; op < 4; op++)
        for (uint32_t axes = 1; axes < 16; axes++)
            for (int keep = 0; keep < 2; keep++) {
                if ((axes * 7 + (uint32_t)op + (uint32_t)keep) % 3 != 0 && axes != 8 && axes != 12) continue;
                korch_pgraph *pg = cc_graph();
                int x = cc_input(pg, KORCH_DTYPE_FLOAT32, 4, dims);
                int y = korch_pgraph_reduce(pg, (korch_reduce_op)op, x, axes, keep);
                cc_output(pg, y);
                char what[64];
                snprintf(what, sizeof what, "reduce op %d axes 0x%x keepdims %d", op, axes, keep);
                cc_check(pg, cc_schedules, CC_N_SCHED, -2, 2, what);
                korch_pgraph_free(pg);
            }
}

/* A 3x3 pooling window, pad 1, over [2, h, w] with the given stride, reduced
 * by op (max or min, the window padded with its identity). */
static korch_pgraph *pool_graph(int64_t h, int64_t w, int stride, korch_reduce_op op) {
    korch_pgraph *pg = cc_graph();
    int64_t d[3] = {2, h, w};
    int x = cc_input(pg, KORCH_DTYPE_FLOAT32, 3, d);
    korch_index_map m = cc_map(3);
    m.terms[0].coef[0] = 1;
    m.terms[1].coef[1] = stride, m.terms[1].coef[3] = 1, m.terms[1].offset = -1;
    m.terms[2].coef[2] = stride, m.terms[2].coef[4] = 1, m.terms[2].offset = -1;
    m.may_be_out_of_bounds = true;
    korch_shape o = {5, {2, (h - 1) / stride + 1, (w - 1) / stride + 1, 3, 3}};
    double pad = op == KORCH_REDUCE_MIN ? INFINITY : -INFINITY;
    int win = korch_pgraph_layout(pg, KORCH_LAYOUT_WINDOW, 1, &x, &o, &m, pad);
    cc_output(pg, korch_pgraph_reduce(pg, op, win, (1u << 3) | (1u << 4), false));
    return pg;
}

static void check_layout(korch_layout_tag tag, int n, const int *ins, korch_pgraph *pg, const korch_shape *out,
                         const korch_index_map *maps, double pad, const char *what) {
    int y = korch_pgraph_layout(pg, tag, n, ins, out, maps, pad);
    CHECK_MSG(y >= 0, "%s: %s", what, korch_last_error());
    /* a consumer, so the layout is folded into a load and not just copied */
    int z = korch_pgraph_elementwise(pg, KORCH_EW_NEG, 1, &y, 0, 0, KORCH_DTYPE_UNDEFINED);
    cc_output(pg, z);
    cc_check(pg, cc_schedules, CC_N_SCHED, -2, 2, what);
    korch_pgraph_free(pg);
}

/* Whether the kernel of pg (one kernel of the whole graph) is emitted, under
 * schedule sched, with text `needle` in its source. */
/* Whether the generated source has `needle`: anywhere, or (in_kernel) in the
 * kernel function itself, not the prelude's helpers. */
static bool generated_has(const korch_pgraph *pg, const char *sched, const char *needle, bool in_kernel) {
    korch_kernel_spec spec;
    cc_spec_all(pg, &spec);
    char *src = NULL;
    korch_status st = korch_cgen_source(&spec, sched, NULL, &src);
    CHECK_MSG(st == KORCH_OK, "source [%s]: %s", sched, korch_last_error());
    const char *from = src && in_kernel ? strstr(src, "\nint korch_") : src;
    CHECK_MSG(!in_kernel || from, "source [%s]: no kernel function", sched);
    bool has = from && strstr(from, needle) != NULL;
    if (getenv("KORCH_TEST_DUMP") && src) fputs(src, stderr);
    free(src);
    cc_spec_free(&spec);
    return has;
}
static bool source_has(const korch_pgraph *pg, const char *sched, const char *needle) {
    return generated_has(pg, sched, needle, false);
}
static bool tiled_by_16(const korch_pgraph *pg, const char *sched) { return generated_has(pg, sched, " += 16)", true); }

static void test_layouts(void) {
    { /* transpose [4,6,5] -> [5,4,6] */
        korch_pgraph *pg = cc_graph();
        int64_t d[3] = {4, 6, 5};
        int x = cc_input(pg, KORCH_DTYPE_FLOAT32, 3, d);
        korch_index_map m = cc_map(3);
        m.terms[0].coef[1] = 1, m.terms[1].coef[2] = 1, m.terms[2].coef[0] = 1;
        korch_shape o = {3, {5, 4, 6}};
        check_layout(KORCH_LAYOUT_TRANSPOSE, 1, &x, pg, &o, &m, 0, "transpose");
    }
    { /* big 2-D transpose (tiles) [67, 130] -> [130, 67] */
        korch_pgraph *pg = cc_graph();
        int64_t d[2] = {67, 130};
        int x = cc_input(pg, KORCH_DTYPE_FLOAT32, 2, d);
        korch_index_map m = cc_map(2);
        m.terms[0].coef[1] = 1, m.terms[1].coef[0] = 1;
        korch_shape o = {2, {130, 67}};
        check_layout(KORCH_LAYOUT_TRANSPOSE, 1, &x, pg, &o, &m, 0, "transpose 2d");
    }
    { /* reshape [6, 10] -> [4, 15] via flat index div/mod (not aligned) */
        korch_pgraph *pg = cc_graph();
        int64_t d[2] = {6, 10};
        int x = cc_input(pg, KORCH_DTYPE_FLOAT32, 2, d);
        korch_index_map m = cc_map(2);
        m.terms[0].coef[0] = 15, m.terms[0].coef[1] = 1, m.terms[0].div = 10;
        m.terms[1].coef[0] = 15, m.terms[1].coef[1] = 1, m.terms[1].mod = 10;
        korch_shape o = {2, {4, 15}};
        check_layout(KORCH_LAYOUT_RESHAPE, 1, &x, pg, &o, &m, 0, "reshape divmod");
    }
    { /* reshape split [6, 12] -> [6, 3, 4] (aligned: div/mod simplify away) */
        korch_pgraph *pg = cc_graph();
        int64_t d[2] = {6, 12};
        int x = cc_input(pg, KORCH_DTYPE_FLOAT32, 2, d);
        korch_index_map m = cc_map(2);
        m.terms[0].coef[0] = 1;
        m.terms[1].coef[1] = 4, m.terms[1].coef[2] = 1;
        korch_shape o = {3, {6, 3, 4}};
        check_layout(KORCH_LAYOUT_RESHAPE, 1, &x, pg, &o, &m, 0, "reshape split");
    }
    { /* slice with steps: x[1:10:3, ::-2] of [11, 9] -> [3, 5] */
        korch_pgraph *pg = cc_graph();
        int64_t d[2] = {11, 9};
        int x = cc_input(pg, KORCH_DTYPE_FLOAT32, 2, d);
        korch_index_map m = cc_map(2);
        m.terms[0].coef[0] = 3, m.terms[0].offset = 1;
        m.terms[1].coef[1] = -2, m.terms[1].offset = 8;
        korch_shape o = {2, {3, 5}};
        check_layout(KORCH_LAYOUT_SLICE, 1, &x, pg, &o, &m, 0, "slice steps");
    }
    { /* constant pad [5, 7] by (2, 1) before and (1, 3) after, value 0.5 */
        korch_pgraph *pg = cc_graph();
        int64_t d[2] = {5, 7};
        int x = cc_input(pg, KORCH_DTYPE_FLOAT32, 2, d);
        korch_index_map m = cc_map(2);
        m.terms[0].coef[0] = 1, m.terms[0].offset = -2;
        m.terms[1].coef[1] = 1, m.terms[1].offset = -1;
        m.may_be_out_of_bounds = true;
        korch_shape o = {2, {8, 11}};
        check_layout(KORCH_LAYOUT_PAD, 1, &x, pg, &o, &m, 0.5, "constant pad");
    }
    for (int mode = 0; mode < 2; mode++) { /* reflect / edge pad of [6] by 3 each side: tables */
        korch_pgraph *pg = cc_graph();
        int64_t d[2] = {2, 6};
        int x = cc_input(pg, KORCH_DTYPE_FLOAT32, 2, d);
        korch_index_map m = cc_map(2);
        m.terms[0].coef[0] = 1;
        m.terms[1].coef[1] = 1;
        m.terms[1].table_size = 12;
        m.terms[1].table = malloc(12 * sizeof(int64_t));
        for (int i = 0; i < 12; i++) {
            int t = i - 3;
            if (mode == 0) t = t < 0 ? -t : t > 5 ? 10 - t : t;
            else t = t < 0 ? 0 : t > 5 ? 5 : t;
            m.terms[1].table[i] = t;
        }
        korch_shape o = {2, {2, 12}};
        check_layout(KORCH_LAYOUT_PAD, 1, &x, pg, &o, &m, 0, mode ? "edge pad" : "reflect pad");
    }
    { /* concat of [3,4] and [3,2] and [3,5] on axis 1 */
        korch_pgraph *pg = cc_graph();
        int64_t a[2] = {3, 4}, b[2] = {3, 2}, c[2] = {3, 5};
        int ins[3] = {cc_input(pg, KORCH_DTYPE_FLOAT32, 2, a), cc_input(pg, KORCH_DTYPE_FLOAT32, 2, b),
                      cc_input(pg, KORCH_DTYPE_FLOAT32, 2, c)};
        korch_index_map m[3] = {cc_map(2), cc_map(2), cc_map(2)};
        int64_t off = 0, w[3] = {4, 2, 5};
        for (int p = 0; p < 3; p++) {
            m[p].terms[0].coef[0] = 1;
            m[p].terms[1].coef[1] = 1;
            m[p].terms[1].offset = -off;
            m[p].may_be_out_of_bounds = true;
            off += w[p];
        }
        korch_shape o = {2, {3, 11}};
        check_layout(KORCH_LAYOUT_CONCAT, 3, ins, pg, &o, m, 0, "concat");
    }
    /* Guards hoisted above the load's loop (whole rows of a pad or a
     * concat) with a short inner loop: gcc 12.2 -O3 -march=native
     * miscompiled the masked loads it made of these (rows read as 0 or from
     * the wrong input) when the generator emitted them as guarded loads;
     * they now load at the clamped address and select. Both shapes are the
     * property test's finds, under the schedules that failed. */
    static const char *const row_guard_schedules[] = {"p0.g0.v0.u2.t0.o0.r0", "p1.g0.v0.u2.t16.o0.r0", ""};
    { /* pad rows of [6, 2] by 2 before and 2 after -> [10, 2] */
        korch_pgraph *pg = cc_graph();
        int64_t d[2] = {6, 2};
        int x = cc_input(pg, KORCH_DTYPE_FLOAT32, 2, d);
        korch_index_map m = cc_map(2);
        m.terms[0].coef[0] = 1, m.terms[0].offset = -2;
        m.terms[1].coef[1] = 1;
        m.may_be_out_of_bounds = true;
        korch_shape o = {2, {10, 2}};
        int y = korch_pgraph_layout(pg, KORCH_LAYOUT_PAD, 1, &x, &o, &m, 0.0126);
        cc_output(pg, y);
        cc_check(pg, row_guard_schedules, 3, -2, 2, "row pad");
        korch_pgraph_free(pg);
    }
    { /* concat of two [4, 6, 6] on axis 1 -> [4, 12, 6], then max(|x|, x) */
        korch_pgraph *pg = cc_graph();
        int64_t d[3] = {4, 6, 6};
        int ins[2] = {cc_input(pg, KORCH_DTYPE_FLOAT32, 3, d), cc_input(pg, KORCH_DTYPE_FLOAT32, 3, d)};
        korch_index_map m[2] = {cc_map(3), cc_map(3)};
        for (int p = 0; p < 2; p++) {
            m[p].terms[0].coef[0] = 1;
            m[p].terms[1].coef[1] = 1, m[p].terms[1].offset = -6 * p;
            m[p].terms[2].coef[2] = 1;
            m[p].may_be_out_of_bounds = true;
        }
        korch_shape o = {3, {4, 12, 6}};
        int y = korch_pgraph_layout(pg, KORCH_LAYOUT_CONCAT, 2, ins, &o, m, 0);
        int a = korch_pgraph_elementwise(pg, KORCH_EW_ABS, 1, &y, 0, 0, KORCH_DTYPE_UNDEFINED);
        int ay[2] = {a, y};
        cc_output(pg, korch_pgraph_elementwise(pg, KORCH_EW_MAX, 2, ay, 0, 0, KORCH_DTYPE_UNDEFINED));
        cc_check(pg, row_guard_schedules, 3, -2, 2, "row concat");
        /* the row guard is invariant in the column loop: one pointer per row */
        CHECK_MSG(source_has(pg, "p0.g0.v0.u2.t0.o0.r0", "*restrict p"), "row concat: no pointer select");
        korch_pgraph_free(pg);
    }
    { /* expand [1, 5] -> [4, 3, 5] */
        korch_pgraph *pg = cc_graph();
        int64_t d[2] = {1, 5};
        int x = cc_input(pg, KORCH_DTYPE_FLOAT32, 2, d);
        korch_index_map m = cc_map(2);
        m.terms[1].coef[2] = 1;
        korch_shape o = {3, {4, 3, 5}};
        check_layout(KORCH_LAYOUT_EXPAND, 1, &x, pg, &o, &m, 0, "expand");
    }
    { /* gather rows [2, 0, 3, 3, -1(out of bounds), 1] of [4, 6] */
        korch_pgraph *pg = cc_graph();
        int64_t d[2] = {4, 6};
        int x = cc_input(pg, KORCH_DTYPE_FLOAT32, 2, d);
        korch_index_map m = cc_map(2);
        m.terms[0].coef[0] = 1;
        m.terms[0].table_size = 6;
        m.terms[0].table = malloc(6 * sizeof(int64_t));
        int64_t idx[6] = {2, 0, 3, 3, -1, 1};
        memcpy(m.terms[0].table, idx, sizeof idx);
        m.terms[1].coef[1] = 1;
        m.may_be_out_of_bounds = true;
        korch_shape o = {2, {6, 6}};
        check_layout(KORCH_LAYOUT_GATHER, 1, &x, pg, &o, &m, -7, "gather");
    }
    { /* nearest resize x2.5 of [3, 16, 16] -> [3, 40, 40]: tables longer than one emitted line */
        korch_pgraph *pg = cc_graph();
        int64_t d[3] = {3, 16, 16};
        int x = cc_input(pg, KORCH_DTYPE_FLOAT32, 3, d);
        korch_index_map m = cc_map(3);
        m.terms[0].coef[0] = 1;
        for (int k = 1; k < 3; k++) {
            m.terms[k].coef[k] = 1;
            m.terms[k].table_size = 40;
            m.terms[k].table = malloc(40 * sizeof(int64_t));
            for (int i = 0; i < 40; i++) m.terms[k].table[i] = (int64_t)(i / 2.5);
        }
        korch_shape o = {3, {3, 40, 40}};
        check_layout(KORCH_LAYOUT_RESIZE_NEAREST, 1, &x, pg, &o, &m, 0, "resize nearest, long tables");
    }
    { /* nearest resize x2.5 of [3, 4, 4] -> [3, 10, 10] via tables */
        korch_pgraph *pg = cc_graph();
        int64_t d[3] = {3, 4, 4};
        int x = cc_input(pg, KORCH_DTYPE_FLOAT32, 3, d);
        korch_index_map m = cc_map(3);
        m.terms[0].coef[0] = 1;
        for (int k = 1; k < 3; k++) {
            m.terms[k].coef[k] = 1;
            m.terms[k].table_size = 10;
            m.terms[k].table = malloc(10 * sizeof(int64_t));
            for (int i = 0; i < 10; i++) m.terms[k].table[i] = (int64_t)(i / 2.5);
        }
        korch_shape o = {3, {3, 10, 10}};
        check_layout(KORCH_LAYOUT_RESIZE_NEAREST, 1, &x, pg, &o, &m, 0, "resize nearest");
    }
    { /* pooling window 3x3 stride 2 pad 1 over [2, 9, 9] -> [2, 5, 5, 3, 3], then max */
        korch_pgraph *pg = pool_graph(9, 9, 2, KORCH_REDUCE_MAX);
        cc_check(pg, cc_schedules, CC_N_SCHED, -2, 2, "max pool window");
        korch_pgraph_free(pg);
    }
    /* NaN inputs of a pooling window: the kept-inner max/min (red bit 2)
     * takes a fast maximum and sweeps a row again with the NaN-sticky
     * update only when it saw a NaN; exactly the outputs whose windows hold
     * one must be NaN. Rows with and without NaNs (every 37th element of
     * [2, 12, 40]: some rows have none), stride 1, pad 1, max and min. */
    for (int op = 0; op < 2; op++) {
        korch_pgraph *pg = pool_graph(12, 40, 1, op ? KORCH_REDUCE_MIN : KORCH_REDUCE_MAX);
        static const char *const nan_sched[] = {"", "p0.g0.v0.u1.t0.o0.r2", "p2.g0.v1.u2.t0.o0.r3.s1",
                                                "p1.g0.v3.u1.t0.o0.r2", "p1.g4.v3.u4.t8.o1.r1"};
        cc_nan_every = 37;
        cc_check(pg, nan_sched, (int)(sizeof nan_sched / sizeof nan_sched[0]), -2, 2,
                 op ? "min pool window with NaNs" : "max pool window with NaNs");
        cc_nan_every = 0;
        korch_pgraph_free(pg);
    }
}


/* A transpose whose output's innermost dimension strides its input by a page
 * or more is always tiled (docs/codegen.md, "Page-striding layouts"), also
 * under t0; one with a short stride is not. */
static void test_page_stride_tiling(void) {
    static const struct {
        int64_t c, h, w;
        bool pages;
    } cases[] = {{64, 32, 32, true}, {64, 16, 32, false}};
    for (int i = 0; i < 2; i++) {
        korch_pgraph *pg = cc_graph();
        int64_t d[4] = {1, cases[i].c, cases[i].h, cases[i].w};
        int x = cc_input(pg, KORCH_DTYPE_FLOAT32, 4, d);
        korch_index_map m = cc_map(4); /* NCHW -> NHWC */
        m.terms[0].coef[0] = 1, m.terms[1].coef[3] = 1, m.terms[2].coef[1] = 1, m.terms[3].coef[2] = 1;
        korch_shape o = {4, {1, cases[i].h, cases[i].w, cases[i].c}};
        int y = korch_pgraph_layout(pg, KORCH_LAYOUT_TRANSPOSE, 1, &x, &o, &m, 0);
        CHECK_MSG(y >= 0, "page stride: %s", korch_last_error());
        cc_output(pg, cc_ew1(pg, KORCH_EW_NEG, y));
        const char *what = cases[i].pages ? "NCHW->NHWC, page stride" : "NCHW->NHWC, short stride";
        CHECK_MSG(tiled_by_16(pg, "p2.g0.v1.u1.t16.o0.r3"), "%s: t16 does not tile", what);
        CHECK_MSG(tiled_by_16(pg, "") == cases[i].pages, "%s: default schedule tiled=%d", what, !cases[i].pages);
        CHECK_MSG(tiled_by_16(pg, "p2.g0.v1.u1.t0.o0.r3") == cases[i].pages, "%s: t0 tiled=%d", what,
                  !cases[i].pages);
        /* o1 runs the point loops down the columns: staged through a tile buffer */
        CHECK_MSG(source_has(pg, "p2.g0.v1.u1.t16.o1.r3", "tb"), "%s: t16.o1 not staged", what);
        CHECK_MSG(!source_has(pg, "p2.g0.v1.u1.t16.o0.r3", "tb"), "%s: t16.o0 staged", what);
        static const char *const staged[] = {"p2.g0.v1.u1.t16.o1.r3", "p0.g0.v0.u1.t8.o1.r0", "p3.g1.v3.u1.t32.o1.r3"};
        cc_check(pg, staged, 3, -2, 2, what);
        cc_check(pg, cc_schedules, CC_N_SCHED, -2, 2, what);
        korch_pgraph_free(pg);
    }
}

int main(void) {
    test_elementwise();
    test_reduce();
    test_layouts();
    test_page_stride_tiling();
    printf("largest relative error: %.3g\n", cc_max_err);
    TEST_MAIN_END();
}
