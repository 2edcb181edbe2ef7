/* The oneDNN 2.6 defects dnnl_quirks.c works around (issue 15), one case
 * each, with the lowering it must produce and the value it must compute:
 *
 *   - Conv -> Mul(1.3) -> Add(0.2) (the reported model) gave conv * 1.69 and
 *     Add -> Mul gave conv + 0.4: consecutive affine steps are now one
 *     linear post-op;
 *   - a repeated eltwise algorithm with other parameters, not adjacent: the
 *     second takes an equivalent algorithm (pow(a,1), relu_use_dst_for_bwd,
 *     clip_v2); clips (and Max/Min with scalars) compose into one clip;
 *   - three different affine steps: refused with the reason;
 *   - gemm:jit with a channels-last destination and a per-position binary
 *     operand: that variant is refused, the kernel is still profiled and
 *     built from another variant, and computes the right values.
 *
 * The class tests (test_dnnl_postop_*.c) find such defects; this file pins
 * the individual rewrites. */
#include <unistd.h>

#include "dnnl_check.h"

/* Conv(x[1,16,32,32], W[16,16,1,1], B[16]), either layout. */
static int conv_1x1(korch_pgraph *pg, bool nhwc) {
    korch_prim_linear p = {.op = KORCH_LINEAR_CONV, .spatial = 2, .group = 1, .channels_last = nhwc,
                           .strides = {1, 1}, .dilations = {1, 1}};
    int64_t xn[4] = {1, 16, 32, 32}, xl[4] = {1, 32, 32, 16};
    int y = korch_pgraph_linear(pg, &p, dc_input(pg, 4, nhwc ? xl : xn),
                                dc_constant(pg, 4, (int64_t[]){16, 16, 1, 1}, -0.5, 0.5));
    korch_shape b = nhwc ? korch_shape_make(1, (int64_t[]){16}) : korch_shape_make(3, (int64_t[]){16, 1, 1});
    return dc_ew2(pg, KORCH_EW_ADD, y, dc_constant(pg, b.rank, b.dims, -1, 1));
}

static int matmul(korch_pgraph *pg) {
    korch_prim_linear p = {.op = KORCH_LINEAR_MATMUL};
    return korch_pgraph_linear(pg, &p, dc_input(pg, 2, (int64_t[]){48, 64}),
                               dc_constant(pg, 2, (int64_t[]){64, 80}, -0.25, 0.25));
}

static int scalar(korch_pgraph *pg, float v) { return korch_pgraph_add_scalar(pg, v); }

/* describe() must contain `expect`, and every variant must compute the graph. */
static void lowered(korch_pgraph *pg, int out, const char *expect, const char *what) {
    dc_output(pg, out);
    korch_kernel_spec spec;
    dc_spec_all(pg, &spec);
    char text[256] = "";
    CHECK_OK(korch_dnnl_describe(&spec, text, sizeof text));
    CHECK_MSG(strstr(text, expect) != NULL, "%s: chain \"%s\" lacks \"%s\"", what, text, expect);
    if (getenv("KORCH_TEST_VERBOSE")) printf("%-50s %s\n", what, text);
    dc_spec_free(&spec);
    CHECK(dc_check(pg, -1, 1, what) > 0);
    korch_pgraph_free(pg);
}

static void test_affine_pairs(void) {
    for (int nhwc = 0; nhwc < 2; nhwc++) {
        korch_pgraph *pg = dc_graph();
        int y = conv_1x1(pg, nhwc);
        y = dc_ew2(pg, KORCH_EW_ADD, dc_ew2(pg, KORCH_EW_MUL, y, scalar(pg, 1.3f)), scalar(pg, 0.2f));
        lowered(pg, y, "+bias +linear(1.3,0.2)", nhwc ? "conv nhwc * 1.3 + 0.2" : "conv nchw * 1.3 + 0.2");

        pg = dc_graph();
        y = conv_1x1(pg, nhwc);
        y = dc_ew2(pg, KORCH_EW_MUL, dc_ew2(pg, KORCH_EW_ADD, y, scalar(pg, 0.2f)), scalar(pg, 1.3f));
        lowered(pg, y, "+bias +linear(1.3,0.26)", nhwc ? "(conv nhwc + 0.2) * 1.3" : "(conv nchw + 0.2) * 1.3");
    }
    /* Gemm's alpha, then s - x: two pure scales around a bias-like add */
    korch_pgraph *pg = dc_graph();
    int y = dc_ew2(pg, KORCH_EW_MUL, matmul(pg), scalar(pg, 0.5f));
    y = dc_ew2(pg, KORCH_EW_ADD, y, dc_constant(pg, 1, (int64_t[]){80}, -1, 1));
    y = dc_ew1(pg, KORCH_EW_NEG, y, 0, 0);
    lowered(pg, y, "+linear(0.5,0) +add[1x80] +pow(-1,1)", "-(0.5 x + C)");

    /* x * 2 / 2 does nothing */
    pg = dc_graph();
    y = dc_ew2(pg, KORCH_EW_DIV, dc_ew2(pg, KORCH_EW_MUL, matmul(pg), scalar(pg, 2.0f)), scalar(pg, 2.0f));
    dc_output(pg, y);
    korch_kernel_spec spec;
    dc_spec_all(pg, &spec);
    char text[256] = "";
    CHECK_OK(korch_dnnl_describe(&spec, text, sizeof text));
    CHECK_MSG(strchr(text, '+') == NULL, "x * 2 / 2: chain \"%s\" has post-ops", text);
    dc_spec_free(&spec);
    CHECK(dc_check(pg, -1, 1, "x * 2 / 2") > 0);
    korch_pgraph_free(pg);
}

static void test_renamed_repeats(void) {
    /* ReLU, a residual add, LeakyReLU */
    korch_pgraph *pg = dc_graph();
    int y = dc_ew1(pg, KORCH_EW_RELU, conv_1x1(pg, true), 0, 0);
    y = dc_ew2(pg, KORCH_EW_ADD, y, dc_input(pg, 4, (int64_t[]){1, 32, 32, 16}));
    y = dc_ew1(pg, KORCH_EW_LEAKY_RELU, y, 0.1f, 0);
    lowered(pg, y, "+relu(0,0) +add[1x16x32x32] +relu_dst(0.1,0)", "relu, add, leakyrelu");

    /* HardSigmoid (affine + clip), a per-channel scale, Clip(-1, 0.5) */
    pg = dc_graph();
    y = dc_ew1(pg, KORCH_EW_CLIP, dc_ew1(pg, KORCH_EW_AFFINE, conv_1x1(pg, false), 0.2f, 0.5f), 0, 1);
    y = dc_ew2(pg, KORCH_EW_MUL, y, dc_constant(pg, 3, (int64_t[]){16, 1, 1}, 0.5, 1.5));
    y = dc_ew1(pg, KORCH_EW_CLIP, y, -1.0f, 0.5f);
    lowered(pg, y, "+linear(0.2,0.5) +clip(0,1) +mul[1x16x1x1] +clip_v2(-1,0.5)", "hardsigmoid, scale, clip");

    /* Clip spelled Max(x, a) then Min(., b), as fission writes a Clip with
     * bounds it cannot hold in float: one clip */
    pg = dc_graph();
    y = dc_ew2(pg, KORCH_EW_MIN, dc_ew2(pg, KORCH_EW_MAX, matmul(pg), scalar(pg, -0.3f)), scalar(pg, 0.4f));
    lowered(pg, y, "+clip(-0.3,0.4)", "max(x,-0.3) then min(.,0.4)");

    /* relu6 as Relu then Clip(., -inf, 6) */
    pg = dc_graph();
    y = dc_ew2(pg, KORCH_EW_MIN, dc_ew1(pg, KORCH_EW_RELU, matmul(pg), 0, 0), scalar(pg, 0.25f));
    lowered(pg, y, "+clip(0,0.25)", "relu then min");

    /* two one-sided clips (Clip with only a min, as exporters write it):
     * one clip at the higher floor, not a relu (difftest seed 5244) */
    pg = dc_graph();
    y = dc_ew1(pg, KORCH_EW_CLIP, dc_ew1(pg, KORCH_EW_CLIP, matmul(pg), -1.0f, INFINITY), 0.5f, INFINITY);
    lowered(pg, y, "+clip(0.5,inf)", "clip(min -1) then clip(min 0.5)");
    pg = dc_graph();
    y = dc_ew1(pg, KORCH_EW_CLIP, dc_ew1(pg, KORCH_EW_CLIP, matmul(pg), 0.0f, INFINITY), -2.0f, INFINITY);
    lowered(pg, y, "+relu(0,0)", "clip(min 0) then clip(min -2): a relu");

    /* four different clips between tensor multiplies: clip, clip_v2,
     * clip_v2_use_dst_for_bwd, bounded_relu (the last one starts at 0) */
    pg = dc_graph();
    y = matmul(pg);
    static const float lo[4] = {-0.5f, -0.4f, -0.3f, 0.0f}, hi[4] = {0.5f, 0.45f, 0.4f, 0.35f};
    for (int i = 0; i < 4; i++) {
        if (i) y = dc_ew2(pg, KORCH_EW_MUL, y, dc_constant(pg, 1, (int64_t[]){80}, 1.5, 2.5));
        y = dc_ew1(pg, KORCH_EW_CLIP, y, lo[i], hi[i]);
    }
    lowered(pg, y, "+clip(-0.5,0.5) +mul[1x80] +clip_v2(-0.4,0.45) +mul[1x80] +clip_v2_dst(-0.3,0.4) +mul[1x80] "
                   "+bounded_relu(0.35,0)", "four clips");

    /* two scalings with a tensor between: the second is pow(a, 1) */
    pg = dc_graph();
    y = dc_ew2(pg, KORCH_EW_MUL, matmul(pg), scalar(pg, 0.125f));
    y = dc_ew2(pg, KORCH_EW_ADD, y, dc_input(pg, 2, (int64_t[]){48, 80}));
    y = dc_ew2(pg, KORCH_EW_DIV, y, scalar(pg, 4.0f));
    lowered(pg, y, "+linear(0.125,0) +add[48x80] +pow(0.25,1)", "scale, mask, scale");
}

static void test_refused(void) {
    /* three different affine steps between tensors: linear holds one, pow
     * one pure scale, the third has nowhere to go */
    korch_pgraph *pg = dc_graph();
    int y = dc_ew2(pg, KORCH_EW_ADD, matmul(pg), scalar(pg, 0.5f));
    y = dc_ew2(pg, KORCH_EW_MUL, y, dc_input(pg, 2, (int64_t[]){48, 80}));
    y = dc_ew2(pg, KORCH_EW_SUB, y, scalar(pg, 0.25f));
    dc_output(pg, y);
    dc_refused(pg, "JIT post-op injector would compute both with the first's parameters", "x + 0.5, * T, - 0.25");
    korch_pgraph_free(pg);

    /* rsqrt and reciprocal are both pow, with no other name */
    pg = dc_graph();
    y = dc_ew1(pg, KORCH_EW_EXP, matmul(pg), 0, 0);
    y = dc_ew1(pg, KORCH_EW_RECIP, dc_ew1(pg, KORCH_EW_RSQRT, y, 0, 0), 0, 0);
    dc_output(pg, y);
    dc_refused(pg, "both become oneDNN eltwise pow", "rsqrt then reciprocal");
    korch_pgraph_free(pg);
}

/* The whole graph as one oneDNN kernel of the plain variant, 2 threads
 * (spec filled for the caller to free). */
static korch_status build_plain(const korch_pgraph *pg, korch_kernel_spec *spec, korch_kernel **k) {
    dc_spec_all(pg, spec);
    const char *plain = "fmt=plain";
    korch_profile_options o = {.threads = 2};
    return korch_backend_build(KORCH_BACKEND_DNNL, spec, &plain, 1, &o, k);
}

/* Runs kernel k on pg's inputs (uniform in [-1, 1]) against the interpreter. */
static void run_against_interpreter(korch_pgraph *pg, const korch_kernel_spec *spec, korch_kernel *k,
                                    const char *what) {
    korch_tensor *ins = calloc((size_t)pg->n_inputs + 1, sizeof *ins), want = {0};
    for (int i = 0; i < pg->n_inputs; i++) {
        const korch_pvalue *v = &pg->values[pg->inputs[i]];
        korch_tensor_alloc(&ins[i], v->dtype, &v->shape);
        float *p = ins[i].data;
        for (int64_t e = 0; e < korch_tensor_numel(&ins[i]); e++) p[e] = (float)dc_uniform(-1, 1);
    }
    CHECK_OK(korch_pgraph_interpret(pg, ins, &want));
    void **bufs = calloc((size_t)spec->n_inputs + 1, sizeof *bufs);
    for (int i = 0; i < spec->n_inputs; i++) {
        const korch_pvalue *v = &pg->values[spec->inputs[i]];
        bufs[i] = v->is_constant ? v->constant.data : ins[v->graph_input].data;
    }
    float *got = malloc((size_t)korch_tensor_numel(&want) * sizeof(float) + 64);
    void *outs[1] = {got};
    CHECK_OK(k->run(k, bufs, outs));
    char label[256];
    snprintf(label, sizeof label, "%s [%s]", what, k->impl);
    int bad = want.data ? dc_compare(&want, got, label) : 1;
    CHECK_MSG(bad == 0, "%s: %d elements differ", label, bad);
    free(got);
    free(bufs);
    korch_tensor_free(&want);
    for (int i = 0; i < pg->n_inputs; i++) korch_tensor_free(&ins[i]);
    free(ins);
}

/* conv NHWC + a per-position operand (1x1xHxW logically): oneDNN picks
 * gemm:jit for the plain variant, which computes it wrongly; that variant
 * must be refused (or, on a oneDNN that picks something else, correct), and
 * profiling must still fuse the kernel from another variant. */
static void test_gemm_channels_last(void) {
    korch_pgraph *pg = dc_graph();
    int y = conv_1x1(pg, true);
    y = dc_ew2(pg, KORCH_EW_MUL, y, dc_constant(pg, 3, (int64_t[]){32, 32, 1}, 0.5, 1.5));
    dc_output(pg, y);
    korch_kernel_spec spec;
    korch_kernel *k = NULL;
    korch_profile_options o = {.threads = 2};
    korch_status st = build_plain(pg, &spec, &k);
    if (st == KORCH_OK) {
        CHECK_MSG(strstr(k->impl, "gemm:jit") == NULL, "gemm:jit accepted: %s", k->impl);
        run_against_interpreter(pg, &spec, k, "conv nhwc * per-position, plain");
        korch_kernel_destroy(k);
    } else {
        CHECK(st == KORCH_ERR_UNSUPPORTED);
        CHECK_MSG(strstr(korch_last_error(), "at wrong offsets") != NULL, "reason: %s", korch_last_error());
        if (getenv("KORCH_TEST_VERBOSE")) printf("plain variant refused: %s\n", korch_last_error());
    }
    /* profiled (private database): fused from another variant */
    char dir[] = "/tmp/korch-quirks-XXXXXX", db[64];
    CHECK(mkdtemp(dir) != NULL);
    snprintf(db, sizeof db, "%s/p.db", dir);
    korch_profile_options po = {.threads = 2, .db_path = db};
    korch_profile_result r;
    CHECK_OK(korch_backend_profile(KORCH_BACKEND_DNNL, &spec, 1, &po, &r));
    CHECK_MSG(r.status == KORCH_OK, "profile: %s", r.reason);
    CHECK_MSG(r.status != KORCH_OK || strstr(r.impl, "gemm:jit fmt=plain") == NULL, "profiled %s", r.impl);
    if (r.status == KORCH_OK) {
        const char *sched = r.schedule;
        st = korch_backend_build(KORCH_BACKEND_DNNL, &spec, &sched, 1, &o, &k);
        CHECK_OK(st);
        if (st == KORCH_OK) {
            if (getenv("KORCH_TEST_VERBOSE")) printf("profiled: %s\n", k->impl);
            run_against_interpreter(pg, &spec, k, "conv nhwc * per-position, profiled");
            korch_kernel_destroy(k);
        }
    }
    unlink(db);
    rmdir(dir);
    dc_spec_free(&spec);
    korch_pgraph_free(pg);
}

/* korch-difftest seed 7403 (dnnl_quirks.c, 2): gemm:jit with a channels-last
 * one-column destination (1,24,H,1) applies a full-tensor operand at wrong
 * offsets (measured on Zen 4 for a 3x3 dilation-2 convolution over 2x1 and
 * 3x1 images); every variant must match the interpreter or be refused. */
static void test_gemm_one_column(void) {
    for (int h = 2; h <= 3; h++) {
        korch_pgraph *pg = dc_graph();
        korch_prim_linear p = {.op = KORCH_LINEAR_CONV, .spatial = 2, .group = 1, .strides = {1, 1},
                               .dilations = {2, 2}, .pads_begin = {2, 2}, .pads_end = {2, 2}, .channels_last = true};
        int64_t xs[4] = {1, h, 1, 18}, ws[4] = {24, 18, 3, 3}, full[4] = {1, h, 1, 24};
        int y = korch_pgraph_linear(pg, &p, dc_input(pg, 4, xs), dc_constant(pg, 4, ws, -1, 1));
        y = dc_ew2(pg, KORCH_EW_MIN, y, dc_input(pg, 4, full));
        dc_output(pg, y);
        char what[96];
        snprintf(what, sizeof what, "conv nhwc dilation 2 over %dx1, Min of a full tensor (seed 7403)", h);
        CHECK(dc_check(pg, -1, 1, what) > 0);
        korch_pgraph_free(pg);
    }
}

/* korch-difftest seed 25932 (dnnl_quirks.c, 2): gemm:jit with a
 * channels-last destination applies a full-tensor operand at wrong offsets
 * when the image is smaller than the kernel along W (every im2col column
 * beyond it is padding): a 5x5 convolution with pads [3,4,4,1] over a 1x1
 * image (GlobalAveragePool's output) + Add of a full [2,4,2,15] tensor gave
 * 225 of 240 wrong; measured on Zen 4 also for 5x5 pads 2, 7x7 pads 3 and
 * 1x5 over 1x1 images, while 5x1 over 1x1 and 5x5 over 2x2 were right.
 * Every variant must match the interpreter or be refused. */
static void test_gemm_narrow_image(void) {
    static const struct {
        int n, kh, kw, pads[4];
        const char *what;
    } cases[] = {
        {2, 5, 5, {3, 4, 4, 1}, "conv nhwc 5x5 pads [3,4,4,1] over 1x1, Add of a full tensor (seed 25932)"},
        {2, 5, 5, {2, 2, 2, 2}, "conv nhwc 5x5 pads 2 over 1x1, Add of a full tensor"},
        {1, 1, 5, {0, 2, 0, 2}, "conv nhwc 1x5 pads 2 over 1x1, Add of a full tensor"},
    };
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        korch_pgraph *pg = dc_graph();
        korch_prim_linear p = {.op = KORCH_LINEAR_CONV, .spatial = 2, .group = 1, .strides = {1, 1},
                               .dilations = {1, 1}, .channels_last = true,
                               .pads_begin = {cases[c].pads[0], cases[c].pads[1]},
                               .pads_end = {cases[c].pads[2], cases[c].pads[3]}};
        int64_t oh = 1 + cases[c].pads[0] + cases[c].pads[2] - cases[c].kh + 1;
        int64_t ow = 1 + cases[c].pads[1] + cases[c].pads[3] - cases[c].kw + 1;
        int64_t xs[4] = {cases[c].n, 1, 1, 14}, ws[4] = {15, 14, cases[c].kh, cases[c].kw};
        int64_t full[4] = {cases[c].n, oh, ow, 15};
        int y = korch_pgraph_linear(pg, &p, dc_input(pg, 4, xs), dc_constant(pg, 4, ws, -0.5, 0.5));
        y = dc_ew2(pg, KORCH_EW_ADD, y, dc_constant(pg, 4, full, -0.5, 0.5));
        dc_output(pg, y);
        CHECK(dc_check(pg, -1, 1, cases[c].what) > 0);
        korch_pgraph_free(pg);
    }
}

/* A channels-last convolution of a one-channel channels-first input (a
 * grey image): the layout pass's transpose is absorbed into the source's
 * strides (dnnl_transpose.c), whose channel stride is then the NCHW one,
 * and oneDNN, which matches formats on every stride, found no
 * implementation but its reference one (ddddocr_common's first
 * convolution: 18 ms against 17 us). Size-1 dims take the strides of the
 * convolution's own layout (dnnl_primitive.c, convolution_strides): the
 * plain variant must get a real implementation and compute right. */
static void test_one_channel_strides(void) {
    korch_pgraph *pg = dc_graph();
    int x = dc_input(pg, 4, (int64_t[]){1, 1, 64, 256});
    int xt = korch_pgraph_transpose(pg, x, (int64_t[]){0, 2, 3, 1});
    korch_prim_linear p = {.op = KORCH_LINEAR_CONV, .spatial = 2, .group = 1, .strides = {2, 2}, .dilations = {1, 1},
                           .pads_begin = {1, 1}, .pads_end = {1, 1}, .channels_last = true};
    int y = korch_pgraph_linear(pg, &p, xt, dc_constant(pg, 4, (int64_t[]){24, 1, 3, 3}, -1, 1));
    y = dc_ew2(pg, KORCH_EW_ADD, y, dc_constant(pg, 1, (int64_t[]){24}, -1, 1));
    dc_output(pg, y);
    korch_kernel_spec spec;
    korch_kernel *k = NULL;
    CHECK_OK(build_plain(pg, &spec, &k));
    if (k) {
        CHECK_MSG(strstr(k->impl, "ref:") == NULL, "one-channel source: oneDNN's reference implementation (%s)", k->impl);
        if (getenv("KORCH_TEST_VERBOSE")) printf("one-channel source: %s\n", k->impl);
        korch_kernel_destroy(k);
    }
    dc_spec_free(&spec);
    CHECK(dc_check(pg, -1, 1, "conv nhwc of a one-channel NCHW input, transpose absorbed") > 0);
    korch_pgraph_free(pg);
}

int main(void) {
    test_one_channel_strides();
    test_gemm_narrow_image();
    test_gemm_one_column();
    test_affine_pairs();
    test_renamed_repeats();
    test_refused();
    test_gemm_channels_last();
    TEST_MAIN_END();
}
