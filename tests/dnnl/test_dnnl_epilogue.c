/* Every supported epilogue pattern, after every kind of linear primitive,
 * against the interpreter; and the refusals, with their reasons.
 *
 * The multi-primitive activations are written the way fission and the
 * PyTorch exporter write them (GELU as x * 0.5 * (1 + erf(x / sqrt 2)), SiLU
 * as x * sigmoid(x), HardSwish as x * clip(x/6 + 1/2, 0, 1), Mish as
 * x * tanh(softplus(x))), and in a second order where one exists, so the
 * numeric identification (dnnl_match.c) is exercised, not one spelling. */
#include <dnnl.h>

#include "dnnl_check.h"

typedef enum base_kind { CONV_NCHW, CONV_NHWC, MATMUL, DECONV_NHWC, BASE_COUNT } base_kind;
static const char *const base_names[] = {"conv-nchw", "conv-nhwc", "matmul", "deconv-nhwc"};

typedef struct base {
    korch_pgraph *pg;
    int y;
    korch_shape channel; /* shape of a per-channel operand */
} base;

static base make_base(base_kind kind) {
    base b = {.pg = dc_graph()};
    korch_pgraph *pg = b.pg;
    const int64_t M = 16;
    if (kind == MATMUL) {
        int64_t a[3] = {2, 12, 20}, w[2] = {20, M};
        korch_prim_linear p = {.op = KORCH_LINEAR_MATMUL};
        b.y = korch_pgraph_linear(pg, &p, dc_input(pg, 3, a), dc_constant(pg, 2, w, -0.3, 0.3));
        b.channel = korch_shape_make(1, (int64_t[]){M});
        return b;
    }
    bool nhwc = kind != CONV_NCHW, tr = kind == DECONV_NHWC;
    korch_prim_linear p = {.op = tr ? KORCH_LINEAR_CONV_TRANSPOSE : KORCH_LINEAR_CONV, .spatial = 2, .group = 1,
                           .channels_last = nhwc, .strides = {1, 1}, .dilations = {1, 1}, .pads_begin = {1, 1},
                           .pads_end = {1, 1}};
    int64_t x_nchw[4] = {1, 8, 6, 7}, x_nhwc[4] = {1, 6, 7, 8};
    int64_t w[4] = {tr ? 8 : M, tr ? M : 8, 3, 3};
    b.y = korch_pgraph_linear(pg, &p, dc_input(pg, 4, nhwc ? x_nhwc : x_nchw), dc_constant(pg, 4, w, -0.2, 0.2));
    b.channel = nhwc ? korch_shape_make(1, (int64_t[]){M}) : korch_shape_make(3, (int64_t[]){M, 1, 1});
    return b;
}

static int per_channel(base *b, double lo, double hi) {
    return dc_constant(b->pg, b->channel.rank, b->channel.dims, lo, hi);
}
static int full_input(base *b) {
    const korch_shape *s = &b->pg->values[b->y].shape;
    return dc_input(b->pg, s->rank, s->dims);
}
static int scalar(base *b, float v) { return korch_pgraph_add_scalar(b->pg, v); }

/* ---- activation sub-graphs, as fission writes them ------------------------ */

static int gelu_erf(korch_pgraph *pg, int x, bool variant) {
    int s = variant ? dc_ew2(pg, KORCH_EW_MUL, x, korch_pgraph_add_scalar(pg, 0.70710678f))
                    : dc_ew2(pg, KORCH_EW_DIV, x, korch_pgraph_add_scalar(pg, 1.41421356f));
    int e = dc_ew2(pg, KORCH_EW_ADD, dc_ew1(pg, KORCH_EW_ERF, s, 0, 0), korch_pgraph_add_scalar(pg, 1.0f));
    if (variant) return dc_ew2(pg, KORCH_EW_MUL, dc_ew2(pg, KORCH_EW_MUL, korch_pgraph_add_scalar(pg, 0.5f), x), e);
    return dc_ew2(pg, KORCH_EW_MUL, dc_ew2(pg, KORCH_EW_MUL, x, e), korch_pgraph_add_scalar(pg, 0.5f));
}

static int gelu_tanh(korch_pgraph *pg, int x) {
    int x3 = dc_ew1(pg, KORCH_EW_POWC, x, 3.0f, 0);
    int inner = dc_ew2(pg, KORCH_EW_ADD, x, dc_ew2(pg, KORCH_EW_MUL, x3, korch_pgraph_add_scalar(pg, 0.044715f)));
    int t = dc_ew1(pg, KORCH_EW_TANH, dc_ew2(pg, KORCH_EW_MUL, inner, korch_pgraph_add_scalar(pg, 0.7978845608f)), 0, 0);
    int h = dc_ew2(pg, KORCH_EW_MUL, dc_ew1(pg, KORCH_EW_AFFINE, t, 0.5f, 0.5f), x);
    return h;
}

static int swish(korch_pgraph *pg, int x, float alpha) {
    int s = alpha == 1.0f ? x : dc_ew2(pg, KORCH_EW_MUL, x, korch_pgraph_add_scalar(pg, alpha));
    return dc_ew2(pg, KORCH_EW_MUL, dc_ew1(pg, KORCH_EW_SIGMOID, s, 0, 0), x);
}

static int hardswish(korch_pgraph *pg, int x) {
    int h = dc_ew1(pg, KORCH_EW_CLIP, dc_ew1(pg, KORCH_EW_AFFINE, x, 1.0f / 6.0f, 0.5f), 0.0f, 1.0f);
    return dc_ew2(pg, KORCH_EW_MUL, x, h);
}

static int mish(korch_pgraph *pg, int x) {
    return dc_ew2(pg, KORCH_EW_MUL, x, dc_ew1(pg, KORCH_EW_TANH, dc_ew1(pg, KORCH_EW_SOFTPLUS, x, 0, 0), 0, 0));
}

/* ---- the patterns ------------------------------------------------------------ */

typedef int (*pattern_fn)(base *b);
typedef struct pattern {
    const char *name;
    pattern_fn fn;
    const char *expect; /* substring of the describe() text */
} pattern;

#define P(name) static int pat_##name(base *b)
#define PG b->pg
#define Y b->y
P(none) { return Y; }
P(bias) { return dc_ew2(PG, KORCH_EW_ADD, Y, per_channel(b, -1, 1)); }
P(relu) { return dc_ew1(PG, KORCH_EW_RELU, Y, 0, 0); }
P(bias_relu) { return dc_ew1(PG, KORCH_EW_RELU, pat_bias(b), 0, 0); }
P(leaky) { return dc_ew1(PG, KORCH_EW_LEAKY_RELU, pat_bias(b), 0.1f, 0); }
P(clip) { return dc_ew1(PG, KORCH_EW_CLIP, Y, -0.3f, 0.4f); }
P(relu6_minmax) {
    return dc_ew2(PG, KORCH_EW_MIN, dc_ew2(PG, KORCH_EW_MAX, Y, scalar(b, 0.0f)), scalar(b, 0.25f));
}
P(elu) { return dc_ew1(PG, KORCH_EW_ELU, Y, 0.8f, 0); }
P(tanh) { return dc_ew1(PG, KORCH_EW_TANH, Y, 0, 0); }
P(sigmoid) { return dc_ew1(PG, KORCH_EW_SIGMOID, Y, 0, 0); }
P(exp) { return dc_ew1(PG, KORCH_EW_EXP, Y, 0, 0); }
P(affine) { return dc_ew1(PG, KORCH_EW_AFFINE, Y, 1.5f, -0.2f); }
P(neg) { return dc_ew1(PG, KORCH_EW_NEG, Y, 0, 0); }
P(abs_sqrt) { return dc_ew1(PG, KORCH_EW_SQRT, dc_ew1(PG, KORCH_EW_ABS, Y, 0, 0), 0, 0); }
P(rsqrt) { return dc_ew1(PG, KORCH_EW_RSQRT, dc_ew1(PG, KORCH_EW_AFFINE, dc_ew1(PG, KORCH_EW_ABS, Y, 0, 0), 1, 1), 0, 0); }
P(recip_of_pos) { return dc_ew1(PG, KORCH_EW_RECIP, dc_ew1(PG, KORCH_EW_EXP, Y, 0, 0), 0, 0); }
P(log_of_pos) { return dc_ew1(PG, KORCH_EW_LOG, dc_ew1(PG, KORCH_EW_EXP, Y, 0, 0), 0, 0); }
P(square) { return dc_ew2(PG, KORCH_EW_MUL, Y, Y); }
P(powc) { return dc_ew1(PG, KORCH_EW_POWC, Y, 3.0f, 0); }
P(softplus) { return dc_ew1(PG, KORCH_EW_SOFTPLUS, Y, 0, 0); }
P(round) { return dc_ew1(PG, KORCH_EW_ROUND, dc_ew1(PG, KORCH_EW_AFFINE, Y, 8.0f, 0.0f), 0, 0); }
P(gelu_erf) { return gelu_erf(PG, pat_bias(b), false); }
P(gelu_erf2) { return gelu_erf(PG, Y, true); }
P(gelu_tanh) { return gelu_tanh(PG, pat_bias(b)); }
P(swish) { return swish(PG, pat_bias(b), 1.0f); }
P(swish_alpha) { return swish(PG, Y, 1.702f); }
P(hardswish) { return hardswish(PG, pat_bias(b)); }
P(mish) { return mish(PG, Y); }
P(leaky_as_max) { return dc_ew2(PG, KORCH_EW_MAX, Y, dc_ew2(PG, KORCH_EW_MUL, Y, scalar(b, 0.2f))); }
P(scale) { return dc_ew2(PG, KORCH_EW_MUL, Y, scalar(b, 0.125f)); }
P(div_scalar) { return dc_ew2(PG, KORCH_EW_DIV, Y, scalar(b, 8.0f)); }
P(scalar_minus) { return dc_ew2(PG, KORCH_EW_SUB, scalar(b, 1.0f), Y); }
P(scalar_over) { return dc_ew2(PG, KORCH_EW_DIV, scalar(b, 2.0f), dc_ew1(PG, KORCH_EW_EXP, Y, 0, 0)); }
P(prelu_scalar) { return dc_ew2(PG, KORCH_EW_PRELU, Y, scalar(b, 0.25f)); }
P(mul_channel) { return dc_ew2(PG, KORCH_EW_MUL, Y, per_channel(b, 0.5, 1.5)); }
P(sub_channel) { return dc_ew2(PG, KORCH_EW_SUB, Y, per_channel(b, -1, 1)); }
P(div_channel) { return dc_ew2(PG, KORCH_EW_DIV, Y, per_channel(b, 0.5, 2)); }
P(channel_minus) { return dc_ew2(PG, KORCH_EW_SUB, per_channel(b, -1, 1), Y); }
P(residual) { return dc_ew2(PG, KORCH_EW_ADD, Y, full_input(b)); }
P(residual_first) { return dc_ew2(PG, KORCH_EW_ADD, full_input(b), Y); }
P(max_full) { return dc_ew2(PG, KORCH_EW_MAX, Y, full_input(b)); }
P(min_full) { return dc_ew2(PG, KORCH_EW_MIN, full_input(b), Y); }
P(mul_full) { return dc_ew2(PG, KORCH_EW_MUL, Y, full_input(b)); }
P(full_minus) { return dc_ew2(PG, KORCH_EW_SUB, full_input(b), Y); }
P(full_over) { return dc_ew2(PG, KORCH_EW_DIV, full_input(b), dc_ew1(PG, KORCH_EW_EXP, Y, 0, 0)); }
P(runtime_scalar) { return dc_ew2(PG, KORCH_EW_MUL, Y, dc_input(PG, 1, (int64_t[]){1})); }
/* ResNet bottleneck tail: bias, residual add, ReLU; and with the ReLU
 * before the add (the case that sends oneDNN's `sum` post-op to ref:any) */
P(resnet_tail) { return dc_ew1(PG, KORCH_EW_RELU, dc_ew2(PG, KORCH_EW_ADD, pat_bias(b), full_input(b)), 0, 0); }
P(relu_then_add) { return dc_ew2(PG, KORCH_EW_ADD, pat_bias_relu(b), full_input(b)); }
/* BERT: (x W) * scale + bias + residual (Gemm alpha folded into a scale) */
P(gemm_tail) {
    int s = dc_ew2(PG, KORCH_EW_MUL, Y, scalar(b, 0.5f));
    return dc_ew2(PG, KORCH_EW_ADD, dc_ew2(PG, KORCH_EW_ADD, s, per_channel(b, -1, 1)), full_input(b));
}
P(long_chain) {
    int v = gelu_erf(PG, pat_bias(b), false);
    v = dc_ew2(PG, KORCH_EW_MUL, v, per_channel(b, 0.5, 1.5));
    v = dc_ew2(PG, KORCH_EW_ADD, v, full_input(b));
    return dc_ew1(PG, KORCH_EW_CLIP, swish(PG, v, 1.0f), -0.2f, 1.0f);
}
#undef P

static const pattern patterns[] = {
    {"none", pat_none, ""},
    {"bias", pat_bias, "+bias"},
    {"relu", pat_relu, "+relu"},
    {"bias_relu", pat_bias_relu, "+bias +relu"},
    {"leaky", pat_leaky, "+relu(0.1"},
    {"clip", pat_clip, "+clip"},
    {"relu6_minmax", pat_relu6_minmax, "+clip(0,0.25)"},
    {"elu", pat_elu, "+elu"},
    {"tanh", pat_tanh, "+tanh"},
    {"sigmoid", pat_sigmoid, "+logistic"},
    {"exp", pat_exp, "+exp"},
    {"affine", pat_affine, "+linear(1.5"},
    {"neg", pat_neg, "+linear(-1"},
    {"abs_sqrt", pat_abs_sqrt, "+abs(0,0) +sqrt"},
    {"rsqrt", pat_rsqrt, "+pow(1,-0.5)"},
    {"recip", pat_recip_of_pos, "+pow(1,-1)"},
    {"log", pat_log_of_pos, "+log"},
    {"square", pat_square, "+square"},
    {"powc", pat_powc, "+pow(1,3)"},
    {"softplus", pat_softplus, "+soft_relu"},
    {"round", pat_round, "+linear(8,0) +round"},
    {"gelu_erf", pat_gelu_erf, "+bias +gelu_erf"},
    {"gelu_erf_other_order", pat_gelu_erf2, "+gelu_erf"},
    {"gelu_tanh", pat_gelu_tanh, "+bias +gelu_tanh"},
    {"swish", pat_swish, "+bias +swish(1,"},
    {"swish_alpha", pat_swish_alpha, "+swish(1.702"},
    {"hardswish", pat_hardswish, "+bias +hardswish"},
    {"mish", pat_mish, "+mish"},
    {"leaky_as_max", pat_leaky_as_max, "+relu(0.2"},
    {"scale", pat_scale, "+linear(0.125,0)"},
    {"div_scalar", pat_div_scalar, "+linear(0.125,0)"},
    {"scalar_minus", pat_scalar_minus, "+linear(-1,1)"},
    {"scalar_over", pat_scalar_over, "+pow(2,-1)"},
    {"prelu_scalar", pat_prelu_scalar, "+relu(0.25"},
    {"mul_channel", pat_mul_channel, "+mul["},
    {"sub_channel", pat_sub_channel, "+sub["},
    {"div_channel", pat_div_channel, "+div["},
    {"channel_minus", pat_channel_minus, "+linear(-1,0) +add["},
    {"residual", pat_residual, "+add["},
    {"residual_first", pat_residual_first, "+add["},
    {"max_full", pat_max_full, "+max["},
    {"min_full", pat_min_full, "+min["},
    {"mul_full", pat_mul_full, "+mul["},
    {"full_minus", pat_full_minus, "+linear(-1,0) +add["},
    {"full_over", pat_full_over, "+pow(1,-1) +mul["},
    {"runtime_scalar", pat_runtime_scalar, "+mul["},
    {"resnet_tail", pat_resnet_tail, "+bias +add["},
    {"relu_then_add", pat_relu_then_add, "+bias +relu(0,0) +add["},
    {"gemm_tail", pat_gemm_tail, "+linear(0.5,0) +add["},
    {"long_chain", pat_long_chain, "+gelu_erf(0,0) +mul["},
};

/* Draws what dc_check would have drawn for pg's inputs: the cases after a
 * refused one keep their data (a ROUND after a convolution flips on one
 * ulp of accumulation order, so other data can move a value onto a tie). */
static void skip_inputs(const korch_pgraph *pg) {
    for (int i = 0; i < pg->n_inputs; i++)
        for (int64_t e = 0; e < korch_shape_numel(&pg->values[pg->inputs[i]].shape); e++) (void)dc_uniform(-1, 1);
}

static void test_patterns(void) {
    int total = 0;
    for (size_t i = 0; i < sizeof patterns / sizeof patterns[0]; i++)
        for (int kind = 0; kind < BASE_COUNT; kind++) {
            base b = make_base((base_kind)kind);
            int out = patterns[i].fn(&b);
            dc_output(b.pg, out);
            char what[160], text[256] = "";
            snprintf(what, sizeof what, "%s after %s", patterns[i].name, base_names[kind]);
            if (kind == DECONV_NHWC && dnnl_version()->major < 3 && patterns[i].expect[0]) {
                /* refused on oneDNN 2.x: slow, not wrong (dnnl_quirks.c, 4) */
                dc_refused(b.pg, "deconvolution runs a fused", what);
                skip_inputs(b.pg);
                korch_pgraph_free(b.pg);
                total++;
                continue;
            }
            korch_kernel_spec spec;
            dc_spec_all(b.pg, &spec);
            korch_status st = korch_dnnl_describe(&spec, text, sizeof text);
            dc_spec_free(&spec);
            CHECK_MSG(st == KORCH_OK, "%s: %s", what, korch_last_error());
            CHECK_MSG(strstr(text, patterns[i].expect) != NULL, "%s: chain \"%s\" lacks \"%s\"", what, text,
                      patterns[i].expect);
            if (getenv("KORCH_TEST_VERBOSE")) printf("%-40s %s\n", what, text);
            /* exp/log/recip need moderate values; the others see [-1, 1] inputs */
            total += dc_check(b.pg, -1, 1, what);
            korch_pgraph_free(b.pg);
        }
    printf("%d fused kernel variants checked, max error %.2g of scale\n", total, dc_max_err);
    CHECK(total >= (int)(sizeof patterns / sizeof patterns[0]) * BASE_COUNT);
}

/* ---- refusals ------------------------------------------------------------------ */

static void test_refusals(void) {
    base b = make_base(CONV_NHWC);
    dc_output(b.pg, dc_ew1(b.pg, KORCH_EW_ERF, b.y, 0, 0));
    dc_refused(b.pg, "ERF has no oneDNN post-op", "erf alone");
    korch_pgraph_free(b.pg);

    b = make_base(CONV_NHWC);
    int r = dc_ew1(b.pg, KORCH_EW_RELU, b.y, 0, 0);
    dc_output(b.pg, dc_ew2(b.pg, KORCH_EW_ADD, r, full_input(&b)));
    dc_output(b.pg, r);
    dc_refused(b.pg, "needed outside the kernel", "intermediate value is an output");
    korch_pgraph_free(b.pg);

    b = make_base(MATMUL);
    int other = dc_ew1(b.pg, KORCH_EW_EXP, full_input(&b), 0, 0);
    dc_output(b.pg, dc_ew2(b.pg, KORCH_EW_ADD, b.y, other));
    dc_refused(b.pg, "computed inside the kernel", "side computation");
    korch_pgraph_free(b.pg);

    b = make_base(MATMUL);
    static const int64_t perm[3] = {0, 2, 1};
    dc_output(b.pg, korch_pgraph_transpose(b.pg, b.y, perm));
    dc_refused(b.pg, "a layout primitive cannot be fused", "transpose after matmul");
    korch_pgraph_free(b.pg);

    b = make_base(CONV_NCHW);
    int s = swish(b.pg, b.y, 1.0f);
    dc_output(b.pg, dc_ew2(b.pg, KORCH_EW_ADD, s, dc_ew2(b.pg, KORCH_EW_MUL, b.y, scalar(&b, 3.0f))));
    dc_refused(b.pg, "no oneDNN eltwise function", "swish(x) + 3x");
    korch_pgraph_free(b.pg);

    b = make_base(CONV_NHWC);
    int64_t big[4] = {2, 6, 7, 16};
    dc_output(b.pg, dc_ew2(b.pg, KORCH_EW_ADD, b.y, dc_input(b.pg, 4, big)));
    dc_refused(b.pg, "enlarges the result", "broadcast to a larger batch");
    korch_pgraph_free(b.pg);

    b = make_base(CONV_NHWC);
    dc_output(b.pg, dc_ew2(b.pg, KORCH_EW_GREATER, b.y, scalar(&b, 0.0f)));
    dc_refused(b.pg, "produces bool", "comparison");
    korch_pgraph_free(b.pg);

    b = make_base(CONV_NHWC);
    int sg = dc_ew1(b.pg, KORCH_EW_SIGMOID, b.y, 0, 0);
    dc_output(b.pg, dc_ew2(b.pg, KORCH_EW_MUL, sg, full_input(&b)));
    dc_output(b.pg, dc_ew2(b.pg, KORCH_EW_ADD, b.y, sg));
    dc_refused(b.pg, "", "two outputs");
    korch_pgraph_free(b.pg);

    /* two linear primitives, and none */
    b = make_base(MATMUL);
    int64_t w2[2] = {16, 4};
    korch_prim_linear p = {.op = KORCH_LINEAR_MATMUL};
    dc_output(b.pg, korch_pgraph_linear(b.pg, &p, b.y, dc_constant(b.pg, 2, w2, -1, 1)));
    dc_refused(b.pg, "two linear primitives", "matmul of a matmul");
    korch_pgraph_free(b.pg);
    korch_pgraph *pg = dc_graph();
    int64_t d[2] = {4, 4};
    dc_output(pg, dc_ew1(pg, KORCH_EW_RELU, dc_input(pg, 2, d), 0, 0));
    dc_refused(pg, "no linear primitive", "relu alone");
    korch_pgraph_free(pg);

    /* the prologue: an operand computed inside the kernel */
    pg = dc_graph();
    int64_t a[2] = {5, 6}, w[2] = {6, 3};
    int t = korch_pgraph_transpose(pg, dc_input(pg, 2, (int64_t[]){6, 5}), (int64_t[]){1, 0});
    (void)a;
    dc_output(pg, korch_pgraph_linear(pg, &p, t, dc_constant(pg, 2, w, -1, 1)));
    dc_refused(pg, "a prologue", "transposed operand");
    korch_pgraph_free(pg);
}

/* Reshapes are free inside a oneDNN kernel (the bytes stay put): as the
 * prologue of either operand and anywhere in the chain (SegFormer's
 * Mix-FFN: linear -> reshape -> depthwise conv -> reshape -> GELU). */
static void test_reshapes(void) {
    korch_pgraph *pg = dc_graph();
    korch_prim_linear p = {.op = KORCH_LINEAR_CONV, .spatial = 2, .group = 8, .channels_last = true,
                           .strides = {1, 1}, .dilations = {1, 1}, .pads_begin = {1, 1}, .pads_end = {1, 1}};
    korch_shape img = korch_shape_make(4, (int64_t[]){1, 6, 7, 8}), flat = korch_shape_make(3, (int64_t[]){1, 42, 16});
    int x = korch_pgraph_reshape(pg, dc_input(pg, 3, (int64_t[]){1, 42, 8}), &img);
    int y = korch_pgraph_linear(pg, &p, x, dc_constant(pg, 4, (int64_t[]){16, 1, 3, 3}, -0.5, 0.5));
    y = dc_ew2(pg, KORCH_EW_ADD, y, dc_constant(pg, 1, (int64_t[]){16}, -1, 1));
    y = korch_pgraph_reshape(pg, y, &flat);
    y = gelu_erf(pg, y, false);
    y = dc_ew2(pg, KORCH_EW_ADD, y, dc_input(pg, 3, (int64_t[]){1, 42, 16}));
    dc_output(pg, y);
    korch_kernel_spec spec;
    dc_spec_all(pg, &spec);
    char text[256] = "";
    CHECK_OK(korch_dnnl_describe(&spec, text, sizeof text));
    CHECK_MSG(strstr(text, "+bias +gelu_erf(0,0) +add[") != NULL, "chain \"%s\"", text);
    dc_spec_free(&spec);
    CHECK(dc_check(pg, -1, 1, "reshape -> dwconv -> bias -> reshape -> gelu -> residual") > 0);
    korch_pgraph_free(pg);

    /* matmul with a reshaped run-time weight and a reshaped output */
    pg = dc_graph();
    korch_prim_linear mm = {.op = KORCH_LINEAR_MATMUL};
    korch_shape w2 = korch_shape_make(2, (int64_t[]){20, 12}), out = korch_shape_make(2, (int64_t[]){6, 24});
    y = korch_pgraph_linear(pg, &mm, dc_input(pg, 3, (int64_t[]){2, 6, 20}),
                            korch_pgraph_reshape(pg, dc_input(pg, 3, (int64_t[]){4, 5, 12}), &w2));
    y = dc_ew1(pg, KORCH_EW_TANH, korch_pgraph_reshape(pg, y, &out), 0, 0);
    dc_output(pg, y);
    CHECK(dc_check(pg, -1, 1, "matmul of a reshaped weight, reshaped output") > 0);
    korch_pgraph_free(pg);

    /* after a reshape only full-size operands keep their meaning */
    pg = dc_graph();
    y = korch_pgraph_linear(pg, &mm, dc_input(pg, 3, (int64_t[]){2, 6, 20}), dc_constant(pg, 2, (int64_t[]){20, 12}, -1, 1));
    y = korch_pgraph_reshape(pg, y, &out);
    dc_output(pg, dc_ew2(pg, KORCH_EW_ADD, y, dc_constant(pg, 1, (int64_t[]){24}, -1, 1)));
    dc_refused(pg, "broadcast operand after a reshape", "bias after a reshape");
    korch_pgraph_free(pg);
}

int main(void) {
    test_patterns();
    test_reshapes();
    test_refusals();
    TEST_MAIN_END();
}
