/* Depthwise convolutions as generated code (backend/cgen/expand.c): the
 * generator writes a depthwise linear primitive as window -> multiply ->
 * sum; every case is checked against the interpreter's convolution under
 * contrasting schedules. Channels-first and channels-last, 1 to 3 spatial
 * dimensions, strides, dilations, asymmetric padding, weights as constants
 * and as computed values, a fused bias + ReLU epilogue, the transposes of
 * the layout pass folded in; and what the generator refuses (a grouped
 * convolution that is not depthwise, a bf16 one, a dense one, a matmul). */
#include "cgen_check.h"
#include "ir/indexmap.h"

static const char *const dw_schedules[] = {
    "",                       /* default */
    "p0.g0.v0.u1.t0.o0.r0",   /* serial, plain loops */
    "p2.g0.v1.u1.t0.o0.r3",   /* window sums accumulated along the vector axis */
    "p1.g4.v3.u4.t8.o1.r1",   /* chunked, simdlen 16, unrolled, tiled, swapped */
};
#define DW_N_SCHED ((int)(sizeof dw_schedules / sizeof dw_schedules[0]))

typedef struct dw_case {
    int spatial;
    int64_t c;
    int64_t in[3], k[3], stride[3], dil[3], pad_b[3], pad_e[3];
    bool channels_last, weights_computed, epilogue, transposes;
} dw_case;

static int64_t out_dim(const dw_case *t, int d) {
    return (t->in[d] + t->pad_b[d] + t->pad_e[d] - t->dil[d] * (t->k[d] - 1) - 1) / t->stride[d] + 1;
}

/* A permutation moving the channel axis of a rank-r tensor last (to_last)
 * or back to axis 1. */
static int transpose(korch_pgraph *pg, int x, bool to_last) {
    int r = pg->values[x].shape.rank;
    int64_t perm[KORCH_MAX_RANK] = {0};
    for (int j = 1; j < r; j++) perm[j] = to_last ? (j == r - 1 ? 1 : j + 1) : (j == 1 ? r - 1 : j - 1);
    return korch_pgraph_transpose(pg, x, perm);
}

static void check_case(const dw_case *t, const char *what) {
    korch_pgraph *pg = cc_graph();
    int s = t->spatial, r = s + 2;
    int64_t xd[KORCH_MAX_RANK], wd[KORCH_MAX_RANK];
    bool nhwc_input = t->channels_last && !t->transposes;
    xd[0] = 2;
    xd[nhwc_input ? r - 1 : 1] = t->c;
    for (int d = 0; d < s; d++) xd[(nhwc_input ? 1 : 2) + d] = t->in[d];
    wd[0] = t->c;
    wd[1] = 1;
    for (int d = 0; d < s; d++) wd[2 + d] = t->k[d];
    int x = cc_input(pg, KORCH_DTYPE_FLOAT32, r, xd);
    int w = t->weights_computed ? cc_ew1(pg, KORCH_EW_NEG, cc_input(pg, KORCH_DTYPE_FLOAT32, r, wd))
                                : cc_constant(pg, r, wd, -1, 1);
    korch_prim_linear p = {.op = KORCH_LINEAR_CONV, .spatial = s, .group = t->c, .channels_last = t->channels_last};
    for (int d = 0; d < s; d++) {
        p.strides[d] = t->stride[d];
        p.dilations[d] = t->dil[d];
        p.pads_begin[d] = t->pad_b[d];
        p.pads_end[d] = t->pad_e[d];
    }
    int xin = t->transposes ? transpose(pg, x, true) : x;
    int y = korch_pgraph_linear(pg, &p, xin, w);
    CHECK_MSG(y >= 0, "%s: linear: %s", what, korch_last_error());
    if (y < 0) {
        korch_pgraph_free(pg);
        return;
    }
    for (int d = 0; d < s; d++)
        CHECK(pg->values[y].shape.dims[(t->channels_last ? 1 : 2) + d] == out_dim(t, d));
    if (t->epilogue) {
        int64_t bd[KORCH_MAX_RANK];
        for (int j = 0; j < r; j++) bd[j] = 1;
        bd[t->channels_last ? r - 1 : 1] = t->c;
        y = cc_ew1(pg, KORCH_EW_RELU, cc_ew2(pg, KORCH_EW_ADD, y, cc_constant(pg, r, bd, -0.5, 0.5)));
    }
    if (t->transposes) y = transpose(pg, y, false);
    cc_output(pg, y);

    korch_kernel_spec spec;
    cc_spec_all(pg, &spec);
    char reason[256] = "";
    bool ok = korch_backend_supports(KORCH_BACKEND_CGEN, &spec, reason, sizeof reason);
    CHECK_MSG(ok, "%s: the generator refuses it: %s", what, reason);
    cc_spec_free(&spec);
    if (ok) cc_check(pg, dw_schedules, DW_N_SCHED, -2, 2, what);
    korch_pgraph_free(pg);
}

static void test_cases(void) {
    const dw_case cases[] = {
        /* MobileNet's 3x3, stride 1 and 2, channels-first and -last */
        {2, 16, {9, 11}, {3, 3}, {1, 1}, {1, 1}, {1, 1}, {1, 1}, false, false, true, false},
        {2, 16, {9, 11}, {3, 3}, {2, 2}, {1, 1}, {1, 1}, {1, 1}, true, false, true, false},
        {2, 24, {8, 8}, {3, 3}, {1, 1}, {1, 1}, {1, 1}, {1, 1}, true, false, false, false},
        /* 5x5 and 7x7, asymmetric padding, no padding */
        {2, 8, {12, 10}, {5, 5}, {1, 2}, {1, 1}, {2, 1}, {1, 2}, false, false, false, false},
        {2, 5, {13, 13}, {7, 7}, {1, 1}, {1, 1}, {3, 3}, {3, 3}, true, false, true, false},
        {2, 7, {10, 9}, {3, 2}, {1, 1}, {1, 1}, {0, 0}, {0, 0}, false, false, false, false},
        /* dilation */
        {2, 6, {11, 12}, {3, 3}, {1, 1}, {2, 3}, {2, 3}, {2, 3}, true, false, false, false},
        /* one and three spatial dimensions */
        {1, 12, {40}, {5}, {2}, {1}, {2}, {1}, false, false, true, false},
        {1, 12, {40}, {3}, {1}, {2}, {2}, {2}, true, false, false, false},
        {3, 4, {5, 6, 7}, {3, 3, 3}, {1, 2, 1}, {1, 1, 1}, {1, 1, 1}, {1, 0, 1}, false, false, false, false},
        {3, 4, {5, 6, 7}, {3, 1, 3}, {1, 1, 2}, {1, 1, 1}, {1, 0, 1}, {1, 0, 0}, true, false, true, false},
        /* weights computed in the graph (a kernel input, not a constant) */
        {2, 10, {7, 7}, {3, 3}, {1, 1}, {1, 1}, {1, 1}, {1, 1}, false, true, false, false},
        {2, 10, {7, 7}, {3, 3}, {1, 1}, {1, 1}, {1, 1}, {1, 1}, true, true, true, false},
        /* the layout pass's transposes folded into the same kernel: NCHW in and out */
        {2, 16, {14, 14}, {3, 3}, {1, 1}, {1, 1}, {1, 1}, {1, 1}, true, false, true, true},
        {2, 9, {10, 13}, {3, 3}, {2, 2}, {1, 1}, {1, 0}, {1, 1}, true, false, false, true},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char what[96];
        snprintf(what, sizeof what, "depthwise case %zu (%dD, %s%s%s)", i, cases[i].spatial,
                 cases[i].channels_last ? "channels-last" : "channels-first", cases[i].transposes ? ", transposes" : "",
                 cases[i].weights_computed ? ", computed weights" : "");
        check_case(&cases[i], what);
    }
}

/* The generator says no, with a reason, to the linear primitives that are
 * not memory-bound work. */
static void refused(int64_t c, int64_t group, bool bf16, const char *what, const char *expect) {
    korch_pgraph *pg = cc_graph();
    int64_t xd[4] = {1, c, 8, 8}, wd[4] = {group == 1 ? 2 * c : c, c / group, 3, 3};
    int x = cc_input(pg, KORCH_DTYPE_FLOAT32, 4, xd);
    int w = cc_constant(pg, 4, wd, -1, 1);
    korch_prim_linear p = {.op = KORCH_LINEAR_CONV, .spatial = 2, .group = group, .bf16 = bf16};
    for (int d = 0; d < 2; d++) {
        p.strides[d] = p.dilations[d] = 1;
        p.pads_begin[d] = p.pads_end[d] = 1;
    }
    int y = korch_pgraph_linear(pg, &p, x, w);
    CHECK_MSG(y >= 0, "%s: linear: %s", what, korch_last_error());
    cc_output(pg, y);
    korch_kernel_spec spec;
    cc_spec_all(pg, &spec);
    char reason[256] = "";
    CHECK_MSG(!korch_backend_supports(KORCH_BACKEND_CGEN, &spec, reason, sizeof reason), "%s: accepted", what);
    CHECK_MSG(strstr(reason, expect) != NULL, "%s: reason \"%s\" does not say \"%s\"", what, reason, expect);
    cc_spec_free(&spec);
    korch_pgraph_free(pg);
}

static void test_refusals(void) {
    refused(8, 4, false, "grouped, two channels per group", "depthwise");
    refused(8, 1, false, "dense convolution", "depthwise");
    refused(8, 8, true, "bf16 depthwise", "depthwise");
    /* a matmul */
    korch_pgraph *pg = cc_graph();
    int64_t a[2] = {4, 6}, b[2] = {6, 5};
    int x = cc_input(pg, KORCH_DTYPE_FLOAT32, 2, a);
    korch_prim_linear p = {.op = KORCH_LINEAR_MATMUL};
    cc_output(pg, korch_pgraph_linear(pg, &p, x, cc_constant(pg, 2, b, -1, 1)));
    korch_kernel_spec spec;
    cc_spec_all(pg, &spec);
    char reason[256] = "";
    CHECK(!korch_backend_supports(KORCH_BACKEND_CGEN, &spec, reason, sizeof reason));
    CHECK_MSG(strstr(reason, "depthwise") != NULL, "matmul: reason \"%s\"", reason);
    cc_spec_free(&spec);
    korch_pgraph_free(pg);
}

/* The layout pass's transposes around a channels-last depthwise
 * convolution compose into channels-first loops: the window reads the
 * channels-first input with a guarded contiguous load (not a clamped
 * gather through the transpose), and the kernel is not taken for a
 * page-striding one (which would force a tiled schedule). */
static void test_composed_structure(void) {
    dw_case t = {2, 144, {56, 56}, {3, 3}, {1, 1}, {1, 1}, {1, 1}, {1, 1}, true, false, true, true};
    korch_pgraph *pg = cc_graph();
    int64_t xd[4] = {1, 144, 56, 56}, wd[4] = {144, 1, 3, 3}, bd[4] = {1, 1, 1, 144};
    int x = cc_input(pg, KORCH_DTYPE_FLOAT32, 4, xd);
    korch_prim_linear p = {.op = KORCH_LINEAR_CONV, .spatial = 2, .group = 144, .channels_last = true};
    for (int d = 0; d < 2; d++) {
        p.strides[d] = p.dilations[d] = 1;
        p.pads_begin[d] = p.pads_end[d] = 1;
    }
    int y = korch_pgraph_linear(pg, &p, transpose(pg, x, true), cc_constant(pg, 4, wd, -1, 1));
    y = cc_ew1(pg, KORCH_EW_RELU, cc_ew2(pg, KORCH_EW_ADD, y, cc_constant(pg, 4, bd, -0.5, 0.5)));
    cc_output(pg, transpose(pg, y, false));
    korch_kernel_spec spec;
    cc_spec_all(pg, &spec);
    char *src = NULL;
    CHECK_OK(korch_cgen_source(&spec, "", NULL, &src));
    if (src) {
        CHECK_MSG(strstr(src, "? in0[") != NULL, "the window over the transposed input is not a guarded load of in0");
        CHECK_MSG(strstr(src, "b0 +=") == NULL, "the composed kernel got the page-striding tiled schedule");
    }
    free(src);
    cc_spec_free(&spec);
    korch_pgraph_free(pg);
    check_case(&t, "composed 144x56x56");
}

/* The converse: a transpose that reads its input a page apart along the
 * output's rows is tiled by default, alone or seen through an elementwise
 * consumer (the detection walks expressions down to the loads). */
static void test_page_strides(void) {
    for (int through_ew = 0; through_ew < 2; through_ew++) {
        korch_pgraph *pg = cc_graph();
        int64_t xd[4] = {1, 144, 56, 56};
        int y = transpose(pg, cc_input(pg, KORCH_DTYPE_FLOAT32, 4, xd), true);
        if (through_ew) y = cc_ew1(pg, KORCH_EW_RELU, y);
        cc_output(pg, y);
        korch_kernel_spec spec;
        cc_spec_all(pg, &spec);
        char *src = NULL;
        CHECK_OK(korch_cgen_source(&spec, "", NULL, &src));
        CHECK_MSG(src && strstr(src, "b0 +=") != NULL, "a page-striding transpose%s is not tiled by default",
                  through_ew ? " under a ReLU" : "");
        free(src);
        cc_spec_free(&spec);
        korch_pgraph_free(pg);
    }
}

int main(void) {
    test_page_strides();
    test_composed_structure();
    test_cases();
    test_refusals();
    printf("max relative error %.3g\n", cc_max_err);
    TEST_MAIN_END();
}
