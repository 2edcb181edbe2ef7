/* ConvTranspose against a direct scatter formulation in double precision:
 * every input element adds x * w to output position i * stride + t * dilation
 * - pad_begin. Random groups, strides, dilations, asymmetric pads,
 * output_padding, output_shape and auto_pad; then the error paths. */
#include "nn_harness.h"

typedef struct deconv_case {
    int spatial;
    int64_t batch, group, cpg, mpg;
    int64_t in[3], k[3], s[3], d[3], pb[3], pe[3], adj[3], oshape[3];
    const char *auto_pad;
    bool bias, use_oshape;
} deconv_case;

/* Output size and begin padding from the ONNX specification's formulas. */
static int64_t expected_out(const deconv_case *c, int i, int64_t *pad_begin) {
    int64_t full = c->s[i] * (c->in[i] - 1) + c->adj[i] + (c->k[i] - 1) * c->d[i] + 1;
    bool same = c->auto_pad && strncmp(c->auto_pad, "SAME", 4) == 0;
    if (c->use_oshape || same) {
        int64_t out = c->use_oshape ? c->oshape[i] : c->in[i] * c->s[i];
        int64_t total = full - out;
        if (total < 0) total = 0;
        bool upper = c->auto_pad && strcmp(c->auto_pad, "SAME_UPPER") == 0;
        *pad_begin = upper ? total / 2 : total - total / 2;
        return c->use_oshape ? out : full - total;
    }
    *pad_begin = c->pb[i];
    return full - c->pb[i] - c->pe[i];
}

static void naive_deconv(const deconv_case *c, const int64_t *out, const int64_t *pad, const float *x, const float *w,
                         const float *b, double *y, double *mag) {
    int64_t in3[3] = {1, 1, 1}, k3[3] = {1, 1, 1}, s3[3] = {1, 1, 1}, d3[3] = {1, 1, 1}, p3[3] = {0, 0, 0},
            o3[3] = {1, 1, 1};
    for (int i = 0; i < c->spatial; i++) {
        int j = 3 - c->spatial + i;
        in3[j] = c->in[i], k3[j] = c->k[i], s3[j] = c->s[i], d3[j] = c->d[i], p3[j] = pad[i], o3[j] = out[i];
    }
    int64_t C = c->group * c->cpg, M = c->group * c->mpg, plane = o3[0] * o3[1] * o3[2];
    for (int64_t n = 0; n < c->batch; n++)
        for (int64_t m = 0; m < M; m++)
            for (int64_t o = 0; o < plane; o++) {
                y[(n * M + m) * plane + o] = b ? b[m] : 0.0;
                mag[(n * M + m) * plane + o] = b ? fabs(b[m]) : 0.0;
            }
    for (int64_t n = 0; n < c->batch; n++)
        for (int64_t ch = 0; ch < C; ch++)
            for (int64_t id = 0; id < in3[0]; id++)
                for (int64_t ih = 0; ih < in3[1]; ih++)
                    for (int64_t iw = 0; iw < in3[2]; iw++) {
                        double xv = x[(((n * C + ch) * in3[0] + id) * in3[1] + ih) * in3[2] + iw];
                        int64_t g = ch / c->cpg;
                        for (int64_t mm = 0; mm < c->mpg; mm++)
                            for (int64_t kd = 0; kd < k3[0]; kd++)
                                for (int64_t kh = 0; kh < k3[1]; kh++)
                                    for (int64_t kw = 0; kw < k3[2]; kw++) {
                                        int64_t od = id * s3[0] + kd * d3[0] - p3[0];
                                        int64_t oh = ih * s3[1] + kh * d3[1] - p3[1];
                                        int64_t ow = iw * s3[2] + kw * d3[2] - p3[2];
                                        if (od < 0 || od >= o3[0] || oh < 0 || oh >= o3[1] || ow < 0 || ow >= o3[2])
                                            continue;
                                        double wv = w[(((ch * c->mpg + mm) * k3[0] + kd) * k3[1] + kh) * k3[2] + kw];
                                        int64_t yi = ((n * M + g * c->mpg + mm) * o3[0] + od) * o3[1] * o3[2] +
                                                     oh * o3[2] + ow;
                                        y[yi] += xv * wv;
                                        mag[yi] += fabs(xv * wv);
                                    }
                    }
}

static void check_case(const deconv_case *c, const char *label) {
    op_harness h;
    h_init(&h, "ConvTranspose", h_rand_int(0, 1) ? 11 : 1, c->bias ? 3 : 2, 1);
    int64_t xd[5] = {c->batch, c->group * c->cpg}, wd[5] = {c->group * c->cpg, c->mpg}, bd[1] = {c->group * c->mpg};
    for (int i = 0; i < c->spatial; i++) xd[2 + i] = c->in[i], wd[2 + i] = c->k[i];
    h_fill_random(h_input(&h, 0, KORCH_DTYPE_FLOAT32, 2 + c->spatial, xd));
    h_fill_random(h_input(&h, 1, KORCH_DTYPE_FLOAT32, 2 + c->spatial, wd));
    if (c->bias) h_fill_random(h_input(&h, 2, KORCH_DTYPE_FLOAT32, 1, bd));
    int64_t pads[6];
    for (int i = 0; i < c->spatial; i++) pads[i] = c->pb[i], pads[c->spatial + i] = c->pe[i];
    h_attr_ints(&h, "strides", c->spatial, c->s);
    h_attr_ints(&h, "dilations", c->spatial, c->d);
    h_attr_ints(&h, "output_padding", c->spatial, c->adj);
    if (c->group != 1) h_attr_int(&h, "group", c->group);
    if (c->auto_pad) h_attr_string(&h, "auto_pad", c->auto_pad);
    else if (!c->use_oshape) h_attr_ints(&h, "pads", 2 * c->spatial, pads);
    if (c->use_oshape) h_attr_ints(&h, "output_shape", c->spatial, c->oshape);
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
            naive_deconv(c, out, pad, h.in[0].data, h.in[1].data, c->bias ? h.in[2].data : NULL, want, mag);
            int bad = h_compare(label, h.out[0].data, want, mag, n);
            CHECK_MSG(bad == 0, "%s: %d of %lld elements differ", label, bad, (long long)n);
            free(want);
            free(mag);
        }
    }
    h_free(&h);
}

static deconv_case random_case(void) {
    deconv_case c = {0};
    c.spatial = (int)h_rand_int(1, 3);
    c.batch = h_rand_int(1, 2);
    c.group = h_rand_int(0, 2) ? 1 : h_rand_int(2, 3);
    c.cpg = h_rand_int(1, 4);
    c.mpg = h_rand_int(1, 3);
    int r = (int)h_rand_int(0, 9);
    c.auto_pad = r == 0 ? "SAME_UPPER" : r == 1 ? "SAME_LOWER" : r == 2 ? "VALID" : NULL;
    c.use_oshape = r == 3 || r == 4;
    for (int i = 0; i < c.spatial; i++) {
        c.in[i] = h_rand_int(1, c.spatial == 3 ? 4 : 7);
        c.k[i] = h_rand_int(1, c.spatial == 3 ? 3 : 4);
        c.s[i] = h_rand_int(1, 3);
        c.d[i] = h_rand_int(1, 2);
        c.adj[i] = h_rand_int(0, c.s[i] - 1);
        int64_t full = c.s[i] * (c.in[i] - 1) + c.adj[i] + (c.k[i] - 1) * c.d[i] + 1;
        if (!c.auto_pad && !c.use_oshape) {
            c.pb[i] = h_rand_int(0, (full - 1) / 2 < 3 ? (full - 1) / 2 : 3);
            c.pe[i] = h_rand_int(0, (full - 1) / 2 < 3 ? (full - 1) / 2 : 3);
        }
        /* output_shape at most one short of or past the full size: odd crops and a bias-only tail */
        if (c.use_oshape) c.oshape[i] = full - h_rand_int(-1, full - 1 < 3 ? full - 1 : 3);
    }
    c.bias = h_rand_int(0, 1);
    return c;
}

static void test_errors(void) {
    op_harness h;
    int64_t xd[4] = {1, 3, 4, 4}, wd[4] = {4, 2, 3, 3}, zero[2] = {0, 1}, pads[4] = {3, 3, 3, 3};
    h_init(&h, "ConvTranspose", 11, 2, 1);
    h_input(&h, 0, KORCH_DTYPE_FLOAT32, 4, xd);
    h_input(&h, 1, KORCH_DTYPE_FLOAT32, 4, wd);
    CHECK_INFER_FAILS(&h, KORCH_ERR_SHAPE, "X has 3 channels but W expects 4 (group 1)");
    h_free(&h);

    xd[1] = 4;
    h_init(&h, "ConvTranspose", 11, 2, 1);
    h_input(&h, 0, KORCH_DTYPE_FLOAT32, 4, xd);
    h_input(&h, 1, KORCH_DTYPE_FLOAT32, 4, wd);
    h_attr_int(&h, "group", 3);
    CHECK_INFER_FAILS(&h, KORCH_ERR_SHAPE, "group 3 does not divide the 4 input channels");
    h_free(&h);

    h_init(&h, "ConvTranspose", 11, 2, 1);
    h_input(&h, 0, KORCH_DTYPE_FLOAT32, 4, xd);
    h_input(&h, 1, KORCH_DTYPE_FLOAT32, 4, wd);
    h_attr_ints(&h, "strides", 2, zero);
    CHECK_INFER_FAILS(&h, KORCH_ERR_INVALID_MODEL, "strides[0] = 0 is out of range");
    h_free(&h);

    h_init(&h, "ConvTranspose", 11, 2, 1);
    h_input(&h, 0, KORCH_DTYPE_FLOAT32, 4, xd);
    h_input(&h, 1, KORCH_DTYPE_FLOAT32, 4, wd);
    h_attr_ints(&h, "pads", 4, pads); /* full size 6, cropped by 6 */
    CHECK_INFER_FAILS(&h, KORCH_ERR_SHAPE, "pads 3+3 crop the whole output");
    h_free(&h);

    int64_t oshape[3] = {1, 2, 3};
    h_init(&h, "ConvTranspose", 11, 2, 1);
    h_input(&h, 0, KORCH_DTYPE_FLOAT32, 4, xd);
    h_input(&h, 1, KORCH_DTYPE_FLOAT32, 4, wd);
    h_attr_ints(&h, "output_shape", 3, oshape);
    CHECK_INFER_FAILS(&h, KORCH_ERR_INVALID_MODEL, "output_shape has 3 values, expected 2");
    h_free(&h);

    int64_t x1[3] = {1, 1, (int64_t)1 << 20}, w1[3] = {1, 1, 1}, big_stride[1] = {((int64_t)1 << 31) - 1};
    h_init(&h, "ConvTranspose", 11, 2, 1);
    h_input(&h, 0, KORCH_DTYPE_FLOAT32, 3, x1);
    h_input(&h, 1, KORCH_DTYPE_FLOAT32, 3, w1);
    h_attr_ints(&h, "strides", 1, big_stride); /* about 2^51 outputs */
    CHECK_INFER_FAILS(&h, KORCH_ERR_SHAPE, "the output would have about");
    h_free(&h);

    h_init(&h, "ConvTranspose", 11, 2, 1);
    h_input(&h, 0, KORCH_DTYPE_FLOAT32, 4, xd);
    h_input(&h, 1, KORCH_DTYPE_INT64, 4, wd);
    CHECK_INFER_FAILS(&h, KORCH_ERR_UNSUPPORTED, "int64");
    h_free(&h);
}

int main(void) {
    char label[64];
    for (int t = 0; t < 300; t++) {
        deconv_case c = random_case();
        snprintf(label, sizeof label, "random case %d", t);
        check_case(&c, label);
    }
    /* many input columns (two chunks of the column buffer), grouped, strided upsampling */
    deconv_case big = {.spatial = 2, .batch = 1, .group = 2, .cpg = 24, .mpg = 40, .in = {60, 70}, .k = {4, 4},
                       .s = {2, 2}, .d = {1, 1}, .pb = {1, 1}, .pe = {1, 1}, .bias = true};
    check_case(&big, "large upsampling");
    test_errors();
    TEST_MAIN_END();
}
