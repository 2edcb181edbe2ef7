/* Fused kernels against the interpreter: softmax and LayerNorm rows,
 * InstanceNorm, average pooling (window + sum + divide), a transpose feeding
 * a reduction that is broadcast back, multi-output kernels, scalar constants
 * inlined as literals, and weights passed as buffers. Also checks the
 * structure of the generated code (one parallel loop for a softmax row, no
 * string literals in a kernel). */
#include <string.h>

#include "cgen_check.h"

/* softmax over the last axis: max, sub, exp, sum, div */
static int softmax(korch_pgraph *pg, int x, int axis) {
    int m = korch_pgraph_reduce(pg, KORCH_REDUCE_MAX, x, 1u << axis, true);
    int e = cc_ew1(pg, KORCH_EW_EXP, cc_ew2(pg, KORCH_EW_SUB, x, m));
    int s = korch_pgraph_reduce(pg, KORCH_REDUCE_SUM, e, 1u << axis, true);
    return cc_ew2(pg, KORCH_EW_DIV, e, s);
}

static void test_softmax(void) {
    int64_t d[3] = {4, 7, 129};
    for (int axis = 0; axis < 3; axis++) {
        korch_pgraph *pg = cc_graph();
        int x = cc_input(pg, KORCH_DTYPE_FLOAT32, 3, d);
        cc_output(pg, softmax(pg, x, axis));
        char what[64];
        snprintf(what, sizeof what, "softmax axis %d", axis);
        cc_check(pg, cc_schedules, CC_N_SCHED, -4, 4, what);
        if (axis == 2) {
            /* structure: rows are fused into one parallel loop */
            korch_kernel_spec spec;
            cc_spec_all(pg, &spec);
            char *src = NULL;
            CHECK_OK(korch_cgen_source(&spec, "p1.g0.v1.u1.t0.o0.r1", NULL, &src));
            if (src) {
                int parallel = 0;
                for (const char *p = src; (p = strstr(p, "omp parallel")) != NULL; p++) parallel++;
                CHECK_MSG(parallel == 1, "softmax row kernel has %d parallel loops", parallel);
                CHECK_MSG(strstr(src, "rc") != NULL, "softmax row kernel does not cache exp(x - max)");
                CHECK_MSG(strstr(src, "malloc") == NULL, "softmax row kernel allocates scratch");
                /* no string literal in a kernel: nothing from the model is ever quoted into C */
                const char *body = strstr(src, "int korch_k");
                CHECK(body && strchr(body, '"') == NULL);
            }
            free(src);
            cc_spec_free(&spec);
        }
        korch_pgraph_free(pg);
    }
}

/* LayerNorm over the last axis with gamma/beta weights (constants) and an
 * epsilon scalar constant (inlined). */
static void test_layernorm(void) {
    int64_t d[2] = {6, 200}, w[1] = {200};
    korch_pgraph *pg = cc_graph();
    int x = cc_input(pg, KORCH_DTYPE_FLOAT32, 2, d);
    int gamma = cc_constant(pg, 1, w, 0.5, 1.5), beta = cc_constant(pg, 1, w, -1, 1);
    int eps = korch_pgraph_add_scalar(pg, 1e-5f);
    int mean = korch_pgraph_reduce(pg, KORCH_REDUCE_MEAN, x, 2u, true);
    int c = cc_ew2(pg, KORCH_EW_SUB, x, mean);
    int var = korch_pgraph_reduce(pg, KORCH_REDUCE_MEAN, cc_ew2(pg, KORCH_EW_MUL, c, c), 2u, true);
    int inv = cc_ew1(pg, KORCH_EW_RSQRT, cc_ew2(pg, KORCH_EW_ADD, var, eps));
    int y = cc_ew2(pg, KORCH_EW_ADD, cc_ew2(pg, KORCH_EW_MUL, cc_ew2(pg, KORCH_EW_MUL, c, inv), gamma), beta);
    cc_output(pg, y);
    cc_check(pg, cc_schedules, CC_N_SCHED, -3, 3, "layernorm");
    korch_pgraph_free(pg);
}

/* InstanceNorm + ReLU over (H, W) of [1, 3, 9, 11], and as a second output
 * the per-channel mean (multi-output, a reduction written to an output). */
static void test_instancenorm(void) {
    int64_t d[4] = {1, 3, 9, 11};
    korch_pgraph *pg = cc_graph();
    int x = cc_input(pg, KORCH_DTYPE_FLOAT32, 4, d);
    int mean = korch_pgraph_reduce(pg, KORCH_REDUCE_MEAN, x, 12u, true);
    int c = cc_ew2(pg, KORCH_EW_SUB, x, mean);
    int var = korch_pgraph_reduce(pg, KORCH_REDUCE_MEAN, cc_ew2(pg, KORCH_EW_MUL, c, c), 12u, true);
    int y = cc_ew1(pg, KORCH_EW_RELU, cc_ew2(pg, KORCH_EW_MUL, c, cc_ew1(pg, KORCH_EW_RSQRT, var)));
    cc_output(pg, y);
    cc_output(pg, mean);
    cc_check(pg, cc_schedules, CC_N_SCHED, -3, 3, "instancenorm + relu, two outputs");
    korch_pgraph_free(pg);
}

/* Average pooling 3x3 stride 1 pad 1 (count includes pads): window, sum, /9. */
static void test_avgpool(void) {
    int64_t d[3] = {2, 8, 10};
    korch_pgraph *pg = cc_graph();
    int x = cc_input(pg, KORCH_DTYPE_FLOAT32, 3, d);
    korch_index_map m = cc_map(3);
    m.terms[0].coef[0] = 1;
    m.terms[1].coef[1] = 1, m.terms[1].coef[3] = 1, m.terms[1].offset = -1;
    m.terms[2].coef[2] = 1, m.terms[2].coef[4] = 1, m.terms[2].offset = -1;
    korch_shape o = {5, {2, 8, 10, 3, 3}};
    int w = korch_pgraph_layout(pg, KORCH_LAYOUT_WINDOW, 1, &x, &o, &m, 0.0);
    int s = korch_pgraph_reduce(pg, KORCH_REDUCE_SUM, w, (1u << 3) | (1u << 4), false);
    int nine = korch_pgraph_add_scalar(pg, 9.0f);
    cc_output(pg, cc_ew2(pg, KORCH_EW_DIV, s, nine));
    cc_check(pg, cc_schedules, CC_N_SCHED, -2, 2, "avg pool");
    korch_pgraph_free(pg);
}

/* transpose -> exp -> reduce over axis 0 (crosses rows: unfused passes) ->
 * broadcast back -> multiply; plus the transposed exp as a second output. */
static void test_cross_axis(void) {
    int64_t d[2] = {9, 20};
    korch_pgraph *pg = cc_graph();
    int x = cc_input(pg, KORCH_DTYPE_FLOAT32, 2, d);
    korch_index_map m = cc_map(2);
    m.terms[0].coef[1] = 1, m.terms[1].coef[0] = 1;
    korch_shape o = {2, {20, 9}};
    int t = korch_pgraph_layout(pg, KORCH_LAYOUT_TRANSPOSE, 1, &x, &o, &m, 0);
    int e = cc_ew1(pg, KORCH_EW_EXP, t);
    int s = korch_pgraph_reduce(pg, KORCH_REDUCE_SUM, e, 1u, false); /* [9] */
    int y = cc_ew2(pg, KORCH_EW_MUL, e, s);                             /* [20, 9] * [9] */
    int r = korch_pgraph_reduce(pg, KORCH_REDUCE_MAX, y, 3u, false); /* full reduction to a scalar */
    cc_output(pg, y);
    cc_output(pg, e);
    cc_output(pg, r);
    cc_check(pg, cc_schedules, CC_N_SCHED, -1, 1, "transpose, column sum, broadcast back, three outputs");
    korch_pgraph_free(pg);
}

/* Reshape [B, S, H*D] -> [B, S, H, D] -> transpose to [B, H, S, D] -> softmax
 * over D: the attention-head split, one kernel. */
static void test_heads(void) {
    int64_t d[3] = {2, 5, 24};
    korch_pgraph *pg = cc_graph();
    int x = cc_input(pg, KORCH_DTYPE_FLOAT32, 3, d);
    korch_index_map m = cc_map(3);
    /* output (b, h, s, dd): in = (b, s, h*6 + dd) */
    m.terms[0].coef[0] = 1;
    m.terms[1].coef[2] = 1;
    m.terms[2].coef[1] = 6, m.terms[2].coef[3] = 1;
    korch_shape o = {4, {2, 4, 5, 6}};
    int t = korch_pgraph_layout(pg, KORCH_LAYOUT_GENERIC, 1, &x, &o, &m, 0);
    cc_output(pg, softmax(pg, t, 3));
    cc_check(pg, cc_schedules, CC_N_SCHED, -2, 2, "head split + softmax");
    korch_pgraph_free(pg);
}

/* A 1-element constant is inlined; its value must be part of the signature. */
static void test_scalar_signature(void) {
    char sig[2][33];
    for (int i = 0; i < 2; i++) {
        korch_pgraph *pg = cc_graph();
        int64_t d[1] = {16};
        int x = cc_input(pg, KORCH_DTYPE_FLOAT32, 1, d);
        int c = korch_pgraph_add_scalar(pg, i ? 2.0f : 3.0f);
        cc_output(pg, cc_ew2(pg, KORCH_EW_MUL, x, c));
        korch_kernel_spec spec;
        cc_spec_all(pg, &spec);
        char *src = NULL;
        CHECK_OK(korch_cgen_source(&spec, NULL, NULL, &src));
        const char *k = src ? strstr(src, "korch_k") : NULL;
        snprintf(sig[i], sizeof sig[i], "%.23s", k ? k : "");
        free(src);
        cc_spec_free(&spec);
        korch_pgraph_free(pg);
    }
    CHECK_MSG(strcmp(sig[0], sig[1]) != 0, "x*2 and x*3 share signature %s", sig[0]);
}

/* Specs that are not memory-bound kernels are refused with a reason. */
static void test_unsupported(void) {
    korch_pgraph *pg = cc_graph();
    int64_t a[2] = {4, 4};
    int x = cc_input(pg, KORCH_DTYPE_FLOAT32, 2, a), w = cc_input(pg, KORCH_DTYPE_FLOAT32, 2, a);
    korch_prim_linear mm = {.op = KORCH_LINEAR_MATMUL};
    cc_output(pg, korch_pgraph_linear(pg, &mm, x, w));
    korch_kernel_spec spec;
    cc_spec_all(pg, &spec);
    char reason[256] = "";
    CHECK(!korch_backend_supports(KORCH_BACKEND_CGEN, &spec, reason, sizeof reason));
    CHECK_MSG(strstr(reason, "linear") != NULL, "reason: %s", reason);
    const char *bad = "p9.g0.v1.u1.t0.o0.r1";
    korch_kernel *k = NULL;
    cc_spec_free(&spec);
    korch_pgraph_free(pg);
    /* a bad schedule string is an error, not a crash */
    pg = cc_graph();
    x = cc_input(pg, KORCH_DTYPE_FLOAT32, 2, a);
    cc_output(pg, cc_ew1(pg, KORCH_EW_EXP, x));
    cc_spec_all(pg, &spec);
    CHECK(korch_backend_build(KORCH_BACKEND_CGEN, &spec, &bad, 1, NULL, &k) == KORCH_ERR_INVALID_ARGUMENT);
    CHECK(k == NULL);
    CHECK(korch_backend_build(KORCH_BACKEND_DNNL, &spec, NULL, 1, NULL, &k) == KORCH_ERR_UNSUPPORTED);
    cc_spec_free(&spec);
    korch_pgraph_free(pg);
}

int main(void) {
    test_softmax();
    test_layernorm();
    test_instancenorm();
    test_avgpool();
    test_cross_axis();
    test_heads();
    test_scalar_signature();
    test_unsupported();
    printf("largest relative error: %.3g\n", cc_max_err);
    TEST_MAIN_END();
}
