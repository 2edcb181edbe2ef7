/* Conv against a direct 7-loop convolution in double precision, over random
 * shapes and attribute combinations (groups, depthwise, strides, dilations,
 * asymmetric pads, auto_pad), plus large cases that exercise the im2col
 * chunking and every blocking edge of the SGEMM; then the error paths. */
#include "nn_harness.h"

typedef struct conv_case {
    int spatial;
    int64_t batch, group, cpg, mpg; /* channels and output channels per group */
    int64_t in[3], k[3], s[3], d[3], pb[3], pe[3];
    const char *auto_pad; /* NULL: explicit pads */
    bool bias, kernel_attr;
} conv_case;

/* Output size and begin padding of one dimension, straight from the ONNX spec. */
static int64_t expected_out(const conv_case *c, int i, int64_t *pad_begin) {
    int64_t extent = c->d[i] * (c->k[i] - 1) + 1;
    if (c->auto_pad && strncmp(c->auto_pad, "SAME", 4) == 0) {
        int64_t out = (c->in[i] + c->s[i] - 1) / c->s[i];
        int64_t total = (out - 1) * c->s[i] + extent - c->in[i];
        if (total < 0) total = 0;
        *pad_begin = strcmp(c->auto_pad, "SAME_UPPER") == 0 ? total / 2 : (total + 1) / 2;
        return out;
    }
    if (c->auto_pad) { /* VALID */
        *pad_begin = 0;
        return (c->in[i] - extent) / c->s[i] + 1;
    }
    *pad_begin = c->pb[i];
    return (c->in[i] + c->pb[i] + c->pe[i] - extent) / c->s[i] + 1;
}

/* y[n][m][o...] = b[m] + sum over c in m's group, taps t: x[n][c][o*s + t*d - pad] * w[m][c'][t] */
static void naive_conv(const conv_case *c, const int64_t *out, const int64_t *pad, const float *x, const float *w,
                       const float *b, double *y, double *mag) {
    int64_t in3[3] = {1, 1, 1}, k3[3] = {1, 1, 1}, s3[3] = {1, 1, 1}, d3[3] = {1, 1, 1}, p3[3] = {0, 0, 0},
            o3[3] = {1, 1, 1};
    for (int i = 0; i < c->spatial; i++) {
        int j = 3 - c->spatial + i;
        in3[j] = c->in[i], k3[j] = c->k[i], s3[j] = c->s[i], d3[j] = c->d[i], p3[j] = pad[i], o3[j] = out[i];
    }
    int64_t C = c->group * c->cpg, M = c->group * c->mpg, idx = 0;
    for (int64_t n = 0; n < c->batch; n++)
        for (int64_t m = 0; m < M; m++)
            for (int64_t od = 0; od < o3[0]; od++)
                for (int64_t oh = 0; oh < o3[1]; oh++)
                    for (int64_t ow = 0; ow < o3[2]; ow++, idx++) {
                        double acc = b ? b[m] : 0.0, abs_acc = b ? fabs(b[m]) : 0.0;
                        int64_t g = m / c->mpg;
                        for (int64_t cc = 0; cc < c->cpg; cc++)
                            for (int64_t kd = 0; kd < k3[0]; kd++)
                                for (int64_t kh = 0; kh < k3[1]; kh++)
                                    for (int64_t kw = 0; kw < k3[2]; kw++) {
                                        int64_t id = od * s3[0] + kd * d3[0] - p3[0];
                                        int64_t ih = oh * s3[1] + kh * d3[1] - p3[1];
                                        int64_t iw = ow * s3[2] + kw * d3[2] - p3[2];
                                        if (id < 0 || id >= in3[0] || ih < 0 || ih >= in3[1] || iw < 0 || iw >= in3[2])
                                            continue;
                                        int64_t xc = n * C + g * c->cpg + cc;
                                        double xv = x[((xc * in3[0] + id) * in3[1] + ih) * in3[2] + iw];
                                        double wv = w[(((m * c->cpg + cc) * k3[0] + kd) * k3[1] + kh) * k3[2] + kw];
                                        acc += xv * wv;
                                        abs_acc += fabs(xv * wv);
                                    }
                        y[idx] = acc;
                        mag[idx] = abs_acc;
                    }
}

static void setup_conv(op_harness *h, const conv_case *c, int opset) {
    h_init(h, "Conv", opset, c->bias ? 3 : 2, 1);
    int64_t xd[5] = {c->batch, c->group * c->cpg}, wd[5] = {c->group * c->mpg, c->cpg}, bd[1] = {c->group * c->mpg};
    for (int i = 0; i < c->spatial; i++) xd[2 + i] = c->in[i], wd[2 + i] = c->k[i];
    h_fill_random(h_input(h, 0, KORCH_DTYPE_FLOAT32, 2 + c->spatial, xd));
    h_fill_random(h_input(h, 1, KORCH_DTYPE_FLOAT32, 2 + c->spatial, wd));
    if (c->bias) h_fill_random(h_input(h, 2, KORCH_DTYPE_FLOAT32, 1, bd));
    int64_t pads[6];
    for (int i = 0; i < c->spatial; i++) pads[i] = c->pb[i], pads[c->spatial + i] = c->pe[i];
    h_attr_ints(h, "strides", c->spatial, c->s);
    h_attr_ints(h, "dilations", c->spatial, c->d);
    if (c->group != 1 || h_rand_int(0, 1)) h_attr_int(h, "group", c->group);
    if (c->kernel_attr) h_attr_ints(h, "kernel_shape", c->spatial, c->k);
    if (c->auto_pad) h_attr_string(h, "auto_pad", c->auto_pad);
    else h_attr_ints(h, "pads", 2 * c->spatial, pads);
}

static void check_conv_case(const conv_case *c, const char *label) {
    op_harness h;
    setup_conv(&h, c, h_rand_int(0, 1) ? 11 : 1);
    korch_status st = h_run(&h);
    CHECK_MSG(st == KORCH_OK, "%s: %s", label, korch_last_error());
    if (st == KORCH_OK) {
        int64_t out[3], pad[3];
        for (int i = 0; i < c->spatial; i++) out[i] = expected_out(c, i, &pad[i]);
        const korch_shape *ys = &h.out[0].shape;
        bool shape_ok = ys->rank == 2 + c->spatial && ys->dims[0] == c->batch && ys->dims[1] == c->group * c->mpg;
        for (int i = 0; i < c->spatial; i++) shape_ok = shape_ok && ys->dims[2 + i] == out[i];
        CHECK_MSG(shape_ok, "%s: wrong output shape", label);
        if (shape_ok) {
            int64_t n = korch_tensor_numel(&h.out[0]);
            double *want = malloc((size_t)n * sizeof *want), *mag = malloc((size_t)n * sizeof *mag);
            naive_conv(c, out, pad, h.in[0].data, h.in[1].data, c->bias ? h.in[2].data : NULL, want, mag);
            int bad = h_compare(label, h.out[0].data, want, mag, n);
            CHECK_MSG(bad == 0, "%s: %d of %lld elements differ", label, bad, (long long)n);
            free(want);
            free(mag);
        }
    }
    h_free(&h);
}

static conv_case random_case(void) {
    conv_case c = {0};
    c.spatial = (int)h_rand_int(1, 3);
    c.batch = h_rand_int(1, 2);
    int kind = (int)h_rand_int(0, 5);
    if (kind == 0) { /* depthwise, possibly with a channel multiplier */
        c.group = h_rand_int(1, 6);
        c.cpg = 1;
        c.mpg = h_rand_int(1, 2);
    } else {
        c.group = kind <= 2 ? 1 : h_rand_int(2, 3);
        c.cpg = h_rand_int(1, 4);
        c.mpg = h_rand_int(1, 4);
    }
    int r = (int)h_rand_int(0, 9);
    c.auto_pad = r == 0 ? "SAME_UPPER" : r == 1 ? "SAME_LOWER" : r == 2 ? "VALID" : NULL;
    for (int i = 0; i < c.spatial; i++) {
        c.k[i] = h_rand_int(1, c.spatial == 3 ? 3 : 4);
        c.s[i] = h_rand_int(1, 3);
        c.d[i] = h_rand_int(1, 3);
        c.pb[i] = c.auto_pad ? 0 : h_rand_int(0, 3);
        c.pe[i] = c.auto_pad ? 0 : h_rand_int(0, 3);
        int64_t extent = c.d[i] * (c.k[i] - 1) + 1, need = extent - c.pb[i] - c.pe[i];
        c.in[i] = (need > 1 ? need : 1) + h_rand_int(0, c.spatial == 3 ? 3 : 7);
        if (r <= 1) c.in[i] = h_rand_int(1, 8); /* SAME pads whatever the input needs */
    }
    c.bias = h_rand_int(0, 1);
    c.kernel_attr = h_rand_int(0, 1);
    return c;
}

static void test_random(void) {
    char label[64];
    for (int t = 0; t < 300; t++) {
        conv_case c = random_case();
        snprintf(label, sizeof label, "random case %d", t);
        check_conv_case(&c, label);
    }
}

static void test_large(void) {
    /* 3x3, K = 576: the im2col runs in two chunks; 40 output channels */
    conv_case a = {.spatial = 2, .batch = 1, .group = 1, .cpg = 64, .mpg = 40, .in = {64, 70}, .k = {3, 3},
                   .s = {1, 1}, .d = {1, 1}, .pb = {1, 0}, .pe = {1, 2}, .bias = true};
    check_conv_case(&a, "large 3x3");
    /* pointwise, K = 300 > one k block, M = 100 > one row tile, N = 620 > one column tile */
    conv_case b = {.spatial = 2, .batch = 2, .group = 1, .cpg = 300, .mpg = 100, .in = {40, 31}, .k = {1, 1},
                   .s = {1, 1}, .d = {1, 1}, .bias = true};
    check_conv_case(&b, "large pointwise");
    /* 1x1 with stride: not pointwise, goes through im2col */
    conv_case c = b;
    c.s[0] = c.s[1] = 2;
    c.batch = 1;
    check_conv_case(&c, "large strided 1x1");
    /* grouped, SAME_UPPER, strided */
    conv_case d = {.spatial = 2, .batch = 1, .group = 4, .cpg = 16, .mpg = 24, .in = {33, 29}, .k = {5, 3},
                   .s = {2, 1}, .d = {1, 2}, .auto_pad = "SAME_UPPER", .bias = false};
    check_conv_case(&d, "large grouped same_upper");
    /* depthwise 3x3 stride 2, MobileNet-like */
    conv_case e = {.spatial = 2, .batch = 1, .group = 32, .cpg = 1, .mpg = 1, .in = {56, 56}, .k = {3, 3},
                   .s = {2, 2}, .d = {1, 1}, .pb = {1, 1}, .pe = {1, 1}, .bias = true};
    check_conv_case(&e, "large depthwise");
    conv_case f = {.spatial = 3, .batch = 1, .group = 1, .cpg = 8, .mpg = 12, .in = {9, 10, 11}, .k = {3, 3, 3},
                   .s = {1, 2, 1}, .d = {2, 1, 1}, .pb = {2, 1, 0}, .pe = {1, 1, 1}, .bias = true};
    check_conv_case(&f, "3-D");
}

/* ---- error paths -------------------------------------------------------- */

static void conv_2d(op_harness *h, int64_t c, int64_t m, int64_t cpg, int64_t hw, int64_t k) {
    h_init(h, "Conv", 11, 2, 1);
    int64_t xd[4] = {1, c, hw, hw}, wd[4] = {m, cpg, k, k};
    h_input(h, 0, KORCH_DTYPE_FLOAT32, 4, xd);
    h_input(h, 1, KORCH_DTYPE_FLOAT32, 4, wd);
}

static void test_errors(void) {
    op_harness h;
    conv_2d(&h, 3, 2, 4, 5, 3);
    CHECK_INFER_FAILS(&h, KORCH_ERR_SHAPE, "X has 3 channels but W expects 4 (group 1)");
    h_free(&h);

    conv_2d(&h, 6, 4, 2, 5, 3);
    h_attr_int(&h, "group", 2);
    CHECK_INFER_FAILS(&h, KORCH_ERR_SHAPE, "X has 6 channels but W expects 4 (group 2)");
    h_free(&h);

    conv_2d(&h, 4, 3, 2, 5, 3);
    h_attr_int(&h, "group", 2);
    CHECK_INFER_FAILS(&h, KORCH_ERR_SHAPE, "3 output channels, not a positive multiple of group 2");
    h_free(&h);

    conv_2d(&h, 4, 4, 4, 5, 3);
    h_attr_int(&h, "group", 0);
    CHECK_INFER_FAILS(&h, KORCH_ERR_INVALID_MODEL, "group 0");
    h_free(&h);

    int64_t zero_stride[2] = {0, 1}, neg_dil[2] = {1, -2}, huge_pads[4] = {(int64_t)1 << 40, 0, 0, 0};
    int64_t neg_pads[4] = {0, -1, 0, 0}, three[3] = {1, 1, 1};
    conv_2d(&h, 2, 2, 2, 5, 3);
    h_attr_ints(&h, "strides", 2, zero_stride);
    CHECK_INFER_FAILS(&h, KORCH_ERR_INVALID_MODEL, "strides[0] = 0 is out of range");
    h_free(&h);

    conv_2d(&h, 2, 2, 2, 5, 3);
    h_attr_ints(&h, "dilations", 2, neg_dil);
    CHECK_INFER_FAILS(&h, KORCH_ERR_INVALID_MODEL, "dilations[1] = -2 is out of range");
    h_free(&h);

    conv_2d(&h, 2, 2, 2, 5, 3);
    h_attr_ints(&h, "pads", 4, huge_pads);
    CHECK_INFER_FAILS(&h, KORCH_ERR_INVALID_MODEL, "pads[0] = 1099511627776 is out of range");
    h_free(&h);

    conv_2d(&h, 2, 2, 2, 5, 3);
    h_attr_ints(&h, "pads", 4, neg_pads);
    CHECK_INFER_FAILS(&h, KORCH_ERR_INVALID_MODEL, "pads[1] = -1 is out of range");
    h_free(&h);

    conv_2d(&h, 2, 2, 2, 5, 3);
    h_attr_ints(&h, "strides", 3, three);
    CHECK_INFER_FAILS(&h, KORCH_ERR_INVALID_MODEL, "strides has 3 values, expected 2");
    h_free(&h);

    conv_2d(&h, 2, 2, 2, 5, 3);
    h_attr_int(&h, "strides", 2); /* an INT where INTS is required */
    CHECK_INFER_FAILS(&h, KORCH_ERR_INVALID_MODEL, "strides must be a list of integers");
    h_free(&h);

    conv_2d(&h, 1, 1, 1, 2, 5);
    CHECK_INFER_FAILS(&h, KORCH_ERR_SHAPE, "kernel extent 5 (kernel 5, dilation 1) is larger than the padded input 2");
    h_free(&h);

    conv_2d(&h, 1, 1, 1, 8, 3);
    int64_t dil4[2] = {4, 1};
    h_attr_ints(&h, "dilations", 2, dil4); /* extent 9 > 8 */
    CHECK_INFER_FAILS(&h, KORCH_ERR_SHAPE, "kernel extent 9");
    h_free(&h);

    conv_2d(&h, 2, 2, 2, 5, 3);
    int64_t ks[2] = {3, 2};
    h_attr_ints(&h, "kernel_shape", 2, ks);
    CHECK_INFER_FAILS(&h, KORCH_ERR_SHAPE, "kernel_shape[1] = 2 but the weights have 3");
    h_free(&h);

    conv_2d(&h, 2, 2, 2, 5, 3);
    h_attr_string(&h, "auto_pad", "SAME");
    CHECK_INFER_FAILS(&h, KORCH_ERR_INVALID_MODEL, "auto_pad \"SAME\" is not one of");
    h_free(&h);

    conv_2d(&h, 2, 2, 2, 5, 3);
    int64_t pads[4] = {1, 1, 1, 1};
    h_attr_string(&h, "auto_pad", "SAME_UPPER");
    h_attr_ints(&h, "pads", 4, pads);
    CHECK_INFER_FAILS(&h, KORCH_ERR_INVALID_MODEL, "pads and auto_pad=SAME_UPPER are both set");
    h_free(&h);

    h_init(&h, "Conv", 11, 2, 1);
    int64_t xd[4] = {1, 2, 5, 5}, wd[4] = {2, 2, 3, 3}, w3[3] = {2, 2, 3}, bd[1] = {3}, x6[6] = {1, 1, 2, 2, 2, 2};
    h_input(&h, 0, KORCH_DTYPE_INT32, 4, xd);
    h_input(&h, 1, KORCH_DTYPE_FLOAT32, 4, wd);
    CHECK_INFER_FAILS(&h, KORCH_ERR_UNSUPPORTED, "int32");
    h_free(&h);

    h_init(&h, "Conv", 11, 2, 1);
    h_input(&h, 0, KORCH_DTYPE_FLOAT32, 4, xd);
    h_input(&h, 1, KORCH_DTYPE_FLOAT32, 3, w3);
    CHECK_INFER_FAILS(&h, KORCH_ERR_SHAPE, "ranks must match");
    h_free(&h);

    h_init(&h, "Conv", 11, 3, 1);
    h_input(&h, 0, KORCH_DTYPE_FLOAT32, 4, xd);
    h_input(&h, 1, KORCH_DTYPE_FLOAT32, 4, wd);
    h_input(&h, 2, KORCH_DTYPE_FLOAT32, 1, bd);
    CHECK_INFER_FAILS(&h, KORCH_ERR_SHAPE, "B has shape 3; expected [2]");
    h_free(&h);

    conv_2d(&h, 1, 1, 1, 1, 1);
    int64_t max_pads[4] = {((int64_t)1 << 31) - 1, ((int64_t)1 << 31) - 1, ((int64_t)1 << 31) - 1, ((int64_t)1 << 31) - 1};
    h_attr_ints(&h, "pads", 4, max_pads); /* 2^32 x 2^32 outputs: refused before any arithmetic overflows */
    CHECK_INFER_FAILS(&h, KORCH_ERR_SHAPE, "the output would have more than");
    h_free(&h);

    h_init(&h, "Conv", 11, 2, 1);
    h_input(&h, 0, KORCH_DTYPE_FLOAT32, 6, x6);
    h_input(&h, 1, KORCH_DTYPE_FLOAT32, 6, x6);
    CHECK_INFER_FAILS(&h, KORCH_ERR_UNSUPPORTED, "1, 2 or 3 spatial dimensions");
    h_free(&h);
}

int main(void) {
    test_random();
    test_large();
    test_errors();
    TEST_MAIN_END();
}
