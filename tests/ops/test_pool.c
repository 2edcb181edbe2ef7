/* MaxPool (with Indices in both storage orders), AveragePool (with and
 * without count_include_pad) and the global pools, against naive loops that
 * visit every tap of every window and test it for padding. Random kernels,
 * strides, dilations, asymmetric pads, ceil_mode and auto_pad; attribute sets
 * that leave a window with nothing but padding must be refused. */
#include "nn_harness.h"

typedef struct pool_case {
    int spatial;
    int64_t batch, channels;
    int64_t in[3], k[3], s[3], d[3], pb[3], pe[3];
    const char *auto_pad;
    bool ceil_mode, count_include_pad, indices, column_major;
    bool ties; /* inputs drawn from {-1, 0, 1}: MaxPool must report the first maximum */
} pool_case;

static int64_t expected_out(const pool_case *c, int i, int64_t *pad_begin, int64_t *pad_end) {
    int64_t extent = c->d[i] * (c->k[i] - 1) + 1;
    if (c->auto_pad && strncmp(c->auto_pad, "SAME", 4) == 0) {
        int64_t out = (c->in[i] + c->s[i] - 1) / c->s[i];
        int64_t total = (out - 1) * c->s[i] + extent - c->in[i];
        if (total < 0) total = 0;
        *pad_begin = strcmp(c->auto_pad, "SAME_UPPER") == 0 ? total / 2 : total - total / 2;
        *pad_end = total - *pad_begin;
        return out;
    }
    *pad_begin = c->auto_pad ? 0 : c->pb[i];
    *pad_end = c->auto_pad ? 0 : c->pe[i];
    int64_t span = c->in[i] + *pad_begin + *pad_end - extent;
    if (!c->ceil_mode || c->auto_pad) return span / c->s[i] + 1;
    int64_t out = (span + c->s[i] - 1) / c->s[i] + 1;
    if ((out - 1) * c->s[i] >= c->in[i] + *pad_begin) out--; /* no window may start in the end padding */
    return out;
}

typedef struct pool_expect {
    int64_t out[3];
    double *max, *avg;
    int64_t *argmax;
    bool only_padding; /* some window has no real input */
} pool_expect;

static void naive_pool(const pool_case *c, const float *x, pool_expect *e) {
    int64_t in3[3] = {1, 1, 1}, k3[3] = {1, 1, 1}, s3[3] = {1, 1, 1}, d3[3] = {1, 1, 1}, pb3[3] = {0, 0, 0},
            pe3[3] = {0, 0, 0}, o3[3] = {1, 1, 1};
    for (int i = 0; i < c->spatial; i++) {
        int j = 3 - c->spatial + i;
        in3[j] = c->in[i], k3[j] = c->k[i], s3[j] = c->s[i], d3[j] = c->d[i];
        o3[j] = expected_out(c, i, &pb3[j], &pe3[j]);
        e->out[i] = o3[j];
    }
    int64_t planes = c->batch * c->channels, in_size = in3[0] * in3[1] * in3[2], idx = 0;
    e->only_padding = false;
    for (int64_t p = 0; p < planes; p++)
        for (int64_t od = 0; od < o3[0]; od++)
            for (int64_t oh = 0; oh < o3[1]; oh++)
                for (int64_t ow = 0; ow < o3[2]; ow++, idx++) {
                    double best = -INFINITY, sum = 0;
                    int64_t arg = -1, real = 0, padded = 0;
                    for (int64_t kd = 0; kd < k3[0]; kd++)
                        for (int64_t kh = 0; kh < k3[1]; kh++)
                            for (int64_t kw = 0; kw < k3[2]; kw++) {
                                int64_t pos[3] = {od * s3[0] - pb3[0] + kd * d3[0], oh * s3[1] - pb3[1] + kh * d3[1],
                                                  ow * s3[2] - pb3[2] + kw * d3[2]};
                                bool inside = true, inside_padded = true;
                                for (int j = 0; j < 3; j++) {
                                    inside = inside && pos[j] >= 0 && pos[j] < in3[j];
                                    inside_padded = inside_padded && pos[j] >= -pb3[j] && pos[j] < in3[j] + pe3[j];
                                }
                                padded += inside_padded;
                                if (!inside) continue;
                                real++;
                                double v = x[p * in_size + (pos[0] * in3[1] + pos[1]) * in3[2] + pos[2]];
                                sum += v;
                                if (v > best) {
                                    best = v;
                                    /* flat index: spatial position row-major, or column-major (first dim fastest) */
                                    int64_t flat = 0, stride = 1;
                                    if (c->column_major)
                                        for (int j = 3 - c->spatial; j < 3; j++) flat += pos[j] * stride, stride *= in3[j];
                                    else
                                        for (int j = 2; j >= 3 - c->spatial; j--) flat += pos[j] * stride, stride *= in3[j];
                                    arg = p * in_size + flat;
                                }
                            }
                    if (real == 0) e->only_padding = true;
                    e->max[idx] = best;
                    e->argmax[idx] = arg;
                    e->avg[idx] = real ? sum / (double)(c->count_include_pad ? padded : real) : 0;
                }
}

static void setup(op_harness *h, const pool_case *c, const char *op, int opset) {
    bool want_indices = c->indices && strcmp(op, "MaxPool") == 0;
    h_init(h, op, opset, 1, want_indices ? 2 : 1);
    int64_t xd[5] = {c->batch, c->channels};
    for (int i = 0; i < c->spatial; i++) xd[2 + i] = c->in[i];
    korch_tensor *x = h_input(h, 0, KORCH_DTYPE_FLOAT32, 2 + c->spatial, xd);
    h_fill_random(x);
    for (int64_t i = 0; c->ties && i < korch_tensor_numel(x); i++) ((float *)x->data)[i] = (float)h_rand_int(-1, 1);
    int64_t pads[6];
    for (int i = 0; i < c->spatial; i++) pads[i] = c->pb[i], pads[c->spatial + i] = c->pe[i];
    h_attr_ints(h, "kernel_shape", c->spatial, c->k);
    h_attr_ints(h, "strides", c->spatial, c->s);
    h_attr_ints(h, "dilations", c->spatial, c->d);
    if (c->auto_pad) h_attr_string(h, "auto_pad", c->auto_pad);
    else h_attr_ints(h, "pads", 2 * c->spatial, pads);
    if (c->ceil_mode) h_attr_int(h, "ceil_mode", 1);
    if (strcmp(op, "AveragePool") == 0) h_attr_int(h, "count_include_pad", c->count_include_pad);
    if (want_indices) h_attr_int(h, "storage_order", c->column_major);
}

static void check_case(const pool_case *c, const char *op, const char *label) {
    op_harness h;
    setup(&h, c, op, 12);
    bool is_max = strcmp(op, "MaxPool") == 0;
    int64_t xd_numel = c->batch * c->channels;
    for (int i = 0; i < c->spatial; i++) xd_numel *= c->in[i] + 8; /* generous: outputs <= padded inputs */
    pool_expect e = {.max = malloc((size_t)xd_numel * sizeof(double)), .avg = malloc((size_t)xd_numel * sizeof(double)),
                     .argmax = malloc((size_t)xd_numel * sizeof(int64_t))};
    naive_pool(c, h.in[0].data, &e);
    korch_status st = h_run(&h);
    if (e.only_padding) {
        CHECK_MSG(st == KORCH_ERR_INVALID_MODEL && strstr(korch_last_error(), "pools only padding"),
                  "%s: a window of only padding was not refused (%s)", label, korch_last_error());
    } else {
        CHECK_MSG(st == KORCH_OK, "%s: %s", label, korch_last_error());
    }
    if (st == KORCH_OK && !e.only_padding) {
        const korch_shape *ys = &h.out[0].shape;
        bool shape_ok = ys->rank == 2 + c->spatial && ys->dims[0] == c->batch && ys->dims[1] == c->channels;
        for (int i = 0; i < c->spatial; i++) shape_ok = shape_ok && ys->dims[2 + i] == e.out[i];
        CHECK_MSG(shape_ok, "%s: wrong output shape", label);
        if (shape_ok) {
            int64_t n = korch_tensor_numel(&h.out[0]);
            int bad = h_compare(label, h.out[0].data, is_max ? e.max : e.avg, NULL, n);
            CHECK_MSG(bad == 0, "%s: %d of %lld elements differ", label, bad, (long long)n);
            if (is_max && c->indices) {
                CHECK(h.out[1].dtype == KORCH_DTYPE_INT64 && korch_shape_equal(&h.out[1].shape, ys));
                const int64_t *got = h.out[1].data;
                int wrong = 0;
                for (int64_t i = 0; i < n; i++) wrong += got[i] != e.argmax[i];
                CHECK_MSG(wrong == 0, "%s: %d indices differ", label, wrong);
            }
        }
    }
    free(e.max);
    free(e.avg);
    free(e.argmax);
    h_free(&h);
}

static pool_case random_case(void) {
    pool_case c = {0};
    c.spatial = (int)h_rand_int(1, 3);
    c.batch = h_rand_int(1, 2);
    c.channels = h_rand_int(1, 3);
    int r = (int)h_rand_int(0, 9);
    c.auto_pad = r == 0 ? "SAME_UPPER" : r == 1 ? "SAME_LOWER" : r == 2 ? "VALID" : NULL;
    c.ceil_mode = h_rand_int(0, 2) == 0;
    c.count_include_pad = h_rand_int(0, 1);
    c.indices = h_rand_int(0, 1);
    c.column_major = h_rand_int(0, 2) == 0;
    c.ties = h_rand_int(0, 3) == 0;
    for (int i = 0; i < c.spatial; i++) {
        c.k[i] = h_rand_int(1, c.spatial == 3 ? 3 : 4);
        c.s[i] = h_rand_int(1, 3);
        c.d[i] = h_rand_int(0, 3) == 0 ? 2 : 1;
        int64_t extent = c.d[i] * (c.k[i] - 1) + 1;
        /* pads up to the extent: the largest reach windows of only padding, which must be refused */
        int64_t max_pad = h_rand_int(0, 9) == 0 ? extent : extent - 1;
        c.pb[i] = c.auto_pad ? 0 : h_rand_int(0, max_pad > 3 ? 3 : max_pad);
        c.pe[i] = c.auto_pad ? 0 : h_rand_int(0, max_pad > 3 ? 3 : max_pad);
        int64_t need = extent - c.pb[i] - c.pe[i];
        c.in[i] = (need > 1 ? need : 1) + h_rand_int(0, c.spatial == 3 ? 3 : 6);
    }
    return c;
}

static void check_global(const char *op, int rank, const int64_t *dims) {
    op_harness h;
    h_init(&h, op, 1, 1, 1);
    const float *x = h_input(&h, 0, KORCH_DTYPE_FLOAT32, rank, dims)->data;
    h_fill_random(&h.in[0]);
    CHECK_OK(h_run(&h));
    int64_t planes = dims[0] * dims[1], size = 1;
    for (int i = 2; i < rank; i++) size *= dims[i];
    CHECK(h.out[0].shape.rank == rank && h.out[0].shape.dims[1] == dims[1] && korch_tensor_numel(&h.out[0]) == planes);
    double *want = malloc((size_t)planes * sizeof *want), *mag = malloc((size_t)planes * sizeof *mag);
    for (int64_t p = 0; p < planes; p++) {
        double best = -INFINITY, sum = 0, abs_sum = 0;
        for (int64_t i = 0; i < size; i++) {
            double v = x[p * size + i];
            best = v > best ? v : best;
            sum += v;
            abs_sum += fabs(v);
        }
        want[p] = strcmp(op, "GlobalMaxPool") == 0 ? best : sum / (double)size;
        mag[p] = strcmp(op, "GlobalMaxPool") == 0 ? fabs(best) : abs_sum / (double)size;
    }
    if (korch_tensor_numel(&h.out[0]) == planes) CHECK(h_compare(op, h.out[0].data, want, mag, planes) == 0);
    free(want);
    free(mag);
    h_free(&h);
}

static void test_errors(void) {
    op_harness h;
    int64_t xd[4] = {1, 2, 5, 5}, k[2] = {3, 3}, k3[3] = {3, 3, 3}, zero[2] = {1, 0}, pads[4] = {3, 0, 0, 0};
    int64_t x2[2] = {2, 3};
    h_init(&h, "MaxPool", 12, 1, 1);
    h_input(&h, 0, KORCH_DTYPE_FLOAT32, 4, xd);
    CHECK_INFER_FAILS(&h, KORCH_ERR_INVALID_MODEL, "missing kernel_shape attribute");
    h_free(&h);

    h_init(&h, "AveragePool", 11, 1, 1);
    h_input(&h, 0, KORCH_DTYPE_FLOAT32, 4, xd);
    h_attr_ints(&h, "kernel_shape", 3, k3);
    CHECK_INFER_FAILS(&h, KORCH_ERR_INVALID_MODEL, "kernel_shape has 3 values, expected 2");
    h_free(&h);

    h_init(&h, "MaxPool", 12, 1, 1);
    h_input(&h, 0, KORCH_DTYPE_FLOAT32, 4, xd);
    h_attr_ints(&h, "kernel_shape", 2, k);
    h_attr_ints(&h, "strides", 2, zero);
    CHECK_INFER_FAILS(&h, KORCH_ERR_INVALID_MODEL, "strides[1] = 0 is out of range");
    h_free(&h);

    h_init(&h, "AveragePool", 11, 1, 1);
    h_input(&h, 0, KORCH_DTYPE_FLOAT32, 4, xd);
    h_attr_ints(&h, "kernel_shape", 2, k);
    h_attr_ints(&h, "pads", 4, pads); /* first window covers rows -3..-1 */
    CHECK_INFER_FAILS(&h, KORCH_ERR_INVALID_MODEL, "output position 0 of spatial dimension 0 pools only padding");
    h_free(&h);

    h_init(&h, "MaxPool", 12, 1, 1);
    h_input(&h, 0, KORCH_DTYPE_FLOAT32, 4, xd);
    h_attr_ints(&h, "kernel_shape", 2, k);
    h_attr_int(&h, "ceil_mode", 2);
    CHECK_INFER_FAILS(&h, KORCH_ERR_INVALID_MODEL, "ceil_mode is 2");
    h_free(&h);

    h_init(&h, "MaxPool", 12, 1, 2);
    h_input(&h, 0, KORCH_DTYPE_FLOAT32, 4, xd);
    h_attr_ints(&h, "kernel_shape", 2, k);
    h_attr_int(&h, "storage_order", 3);
    CHECK_INFER_FAILS(&h, KORCH_ERR_INVALID_MODEL, "storage_order is 3");
    h_free(&h);

    h_init(&h, "MaxPool", 7, 1, 2);
    h_input(&h, 0, KORCH_DTYPE_FLOAT32, 4, xd);
    h_attr_ints(&h, "kernel_shape", 2, k);
    CHECK_INFER_FAILS(&h, KORCH_ERR_INVALID_MODEL, "Indices output needs opset 8");
    h_free(&h);

    /* 8-bit tensors: MaxPool from opset 12 (QOperator models; computed in
     * test_maxpool_2d_uint8 of the conformance suite), not before, and never
     * AveragePool */
    h_init(&h, "MaxPool", 11, 1, 1);
    h_input(&h, 0, KORCH_DTYPE_UINT8, 4, xd);
    h_attr_ints(&h, "kernel_shape", 2, k);
    CHECK_INFER_FAILS(&h, KORCH_ERR_UNSUPPORTED, "uint8");
    h_free(&h);
    h_init(&h, "AveragePool", 12, 1, 1);
    h_input(&h, 0, KORCH_DTYPE_INT8, 4, xd);
    h_attr_ints(&h, "kernel_shape", 2, k);
    CHECK_INFER_FAILS(&h, KORCH_ERR_UNSUPPORTED, "int8");
    h_free(&h);

    int64_t big[2] = {9, 9};
    h_init(&h, "MaxPool", 12, 1, 1);
    h_input(&h, 0, KORCH_DTYPE_FLOAT32, 4, xd);
    h_attr_ints(&h, "kernel_shape", 2, big);
    CHECK_INFER_FAILS(&h, KORCH_ERR_SHAPE, "kernel extent 9 (kernel 9, dilation 1) is larger than the padded input 5");
    h_free(&h);

    h_init(&h, "MaxPool", 12, 1, 1);
    h_input(&h, 0, KORCH_DTYPE_FLOAT32, 2, x2);
    h_attr_ints(&h, "kernel_shape", 2, k);
    CHECK_INFER_FAILS(&h, KORCH_ERR_UNSUPPORTED, "rank 2");
    h_free(&h);

    int64_t x1[3] = {1, 1, 4}, k1[1] = {2}, huge_pads[2] = {(int64_t)1 << 30, (int64_t)1 << 30};
    h_init(&h, "MaxPool", 12, 1, 1);
    h_input(&h, 0, KORCH_DTYPE_FLOAT32, 3, x1);
    h_attr_ints(&h, "kernel_shape", 1, k1);
    h_attr_ints(&h, "pads", 2, huge_pads);
    CHECK_INFER_FAILS(&h, KORCH_ERR_UNSUPPORTED, "outputs are too many to check");
    h_free(&h);

    h_init(&h, "GlobalAveragePool", 1, 1, 1);
    h_input(&h, 0, KORCH_DTYPE_FLOAT32, 2, x2);
    CHECK_INFER_FAILS(&h, KORCH_ERR_SHAPE, "expected N x C x spatial dims");
    h_free(&h);

    h_init(&h, "GlobalMaxPool", 1, 1, 1);
    h_input(&h, 0, KORCH_DTYPE_INT32, 4, xd);
    CHECK_INFER_FAILS(&h, KORCH_ERR_UNSUPPORTED, "int32");
    h_free(&h);
}

int main(void) {
    char label[64];
    for (int t = 0; t < 400; t++) {
        pool_case c = random_case();
        const char *op = t % 2 ? "MaxPool" : "AveragePool";
        snprintf(label, sizeof label, "%s case %d", op, t);
        check_case(&c, op, label);
    }
    /* large windows (an SPP block of YOLOv4) */
    pool_case spp = {.spatial = 2, .batch = 1, .channels = 8, .in = {19, 19}, .k = {13, 13}, .s = {1, 1},
                     .d = {1, 1}, .pb = {6, 6}, .pe = {6, 6}, .indices = true};
    check_case(&spp, "MaxPool", "SPP max");
    check_case(&spp, "AveragePool", "SPP average");
    int64_t g3[3] = {2, 3, 7}, g4[4] = {1, 5, 7, 9}, g5[5] = {2, 2, 3, 4, 5}, g_big[4] = {1, 4, 100, 120};
    const char *globals[2] = {"GlobalAveragePool", "GlobalMaxPool"};
    for (int i = 0; i < 2; i++) {
        check_global(globals[i], 3, g3);
        check_global(globals[i], 4, g4);
        check_global(globals[i], 5, g5);
        check_global(globals[i], 4, g_big);
    }
    test_errors();
    TEST_MAIN_END();
}
