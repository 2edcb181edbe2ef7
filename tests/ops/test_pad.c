/* Pad: every mode, pads wider than the axis (repeated reflection, as numpy),
 * negative pads (crop first, then pad the kept window), opset forms. The
 * expected rows were worked out by hand; numpy.pad gives the same. */
#include "layout_harness.h"

static korch_status pad_1d(const char *mode, const float *x, int64_t n, int64_t begin, int64_t end, korch_tensor *y) {
    static int64_t pads[2];
    static float value = 9.0f;
    pads[0] = begin, pads[1] = end;
    int64_t two = 2;
    korch_tensor tx = th_tensor(KORCH_DTYPE_FLOAT32, 1, &n, x), tp = th_tensor(KORCH_DTYPE_INT64, 1, &two, pads),
                 tv = th_tensor(KORCH_DTYPE_FLOAT32, 0, NULL, &value);
    th_node node = {.op = "Pad", .opset = 13, .n_attrs = 1, .attrs = {TH_STR("mode", mode)}, .n_inputs = 3,
                    .inputs = {&tx, &tp, &tv}, .constant_mask = 0x2, .n_outputs = 1};
    return th_run(&node, y);
}

static void check_1d(const char *mode, const float *x, int64_t n, int64_t begin, int64_t end, const float *want,
                     int64_t n_want) {
    korch_tensor y;
    korch_status st = pad_1d(mode, x, n, begin, end, &y);
    CHECK_MSG(st == KORCH_OK, "%s pad (%lld, %lld): %s", mode, (long long)begin, (long long)end, korch_last_error());
    if (st != KORCH_OK) return;
    CHECK_MSG(th_shape_is(&y, 1, n_want) && th_equal_f32(&y, want, n_want, 0), "%s pad (%lld, %lld)", mode,
              (long long)begin, (long long)end);
    korch_tensor_free(&y);
}

int main(void) {
    const float x3[3] = {1, 2, 3}, x5[5] = {1, 2, 3, 4, 5}, x2[2] = {1, 2}, x1[1] = {7};
    /* reflect mirrors about the edge elements (period 2*(n-1)) */
    check_1d("reflect", x3, 3, 2, 3, (const float[]){3, 2, 1, 2, 3, 2, 1, 2}, 8);
    check_1d("edge", x3, 3, 2, 3, (const float[]){1, 1, 1, 2, 3, 3, 3, 3}, 8);
    check_1d("wrap", x3, 3, 2, 3, (const float[]){2, 3, 1, 2, 3, 1, 2, 3}, 8);
    check_1d("constant", x3, 3, 2, 3, (const float[]){9, 9, 1, 2, 3, 9, 9, 9}, 8);
    /* wider than the axis: reflection repeats */
    check_1d("reflect", x2, 2, 3, 3, (const float[]){2, 1, 2, 1, 2, 1, 2, 1}, 8);
    check_1d("reflect", x1, 1, 2, 1, (const float[]){7, 7, 7, 7}, 4);
    /* negative pads crop: [2 3 4 5] is kept, then reflected at the end */
    check_1d("reflect", x5, 5, -1, 2, (const float[]){2, 3, 4, 5, 4, 3}, 6);
    check_1d("edge", x5, 5, 2, -3, (const float[]){1, 1, 1, 2}, 4);
    check_1d("constant", x5, 5, -2, -2, (const float[]){3}, 1);
    check_1d("constant", x5, 5, -3, -2, NULL, 0);
    /* everything cropped away, then constant-padded */
    check_1d("constant", x2, 2, -2, 1, (const float[]){9}, 1);

    korch_tensor y;
    CHECK(pad_1d("reflect", x2, 2, -2, 1, &y) == KORCH_ERR_SHAPE && th_error_mentions("at least one element"));
    CHECK(pad_1d("constant", x2, 2, -2, -1, &y) == KORCH_ERR_SHAPE && th_error_mentions("crop more"));
    CHECK(pad_1d("mirror", x2, 2, 1, 1, &y) != KORCH_OK && th_error_mentions("mirror"));

    /* 2-D reflect: rows -1 -> 1 and 2 -> 0, columns -1 -> 1 and 3 -> 1 */
    const float x23[6] = {1, 2, 3, 4, 5, 6};
    int64_t d23[2] = {2, 3}, four = 4, pads4[4] = {1, 1, 1, 1};
    korch_tensor tx = th_tensor(KORCH_DTYPE_FLOAT32, 2, d23, x23), tp = th_tensor(KORCH_DTYPE_INT64, 1, &four, pads4);
    th_node n2 = {.op = "Pad", .opset = 11, .n_attrs = 1, .attrs = {TH_STR("mode", "reflect")}, .n_inputs = 2,
                  .inputs = {&tx, &tp}, .constant_mask = 0x2, .n_outputs = 1};
    CHECK_OK(th_run(&n2, &y));
    CHECK(th_shape_is(&y, 2, (int64_t)4, (int64_t)5));
    CHECK(th_equal_f32(&y, (const float[]){5, 4, 5, 6, 5, 2, 1, 2, 3, 2, 5, 4, 5, 6, 5, 2, 1, 2, 3, 2}, 20, 0));
    korch_tensor_free(&y);

    /* opset 18 axes input: pad only axis -1 by (0, 2), constant 0 by default */
    int64_t pads2[2] = {0, 2}, axes1[1] = {-1}, two = 2, one = 1;
    korch_tensor tp2 = th_tensor(KORCH_DTYPE_INT64, 1, &two, pads2), ta = th_tensor(KORCH_DTYPE_INT64, 1, &one, axes1);
    th_node n3 = {.op = "Pad", .opset = 18, .n_inputs = 4, .inputs = {&tx, &tp2, NULL, &ta}, .constant_mask = 0xa,
                  .n_outputs = 1};
    CHECK_OK(th_run(&n3, &y));
    CHECK(th_shape_is(&y, 2, (int64_t)2, (int64_t)5));
    CHECK(th_equal_f32(&y, (const float[]){1, 2, 3, 0, 0, 4, 5, 6, 0, 0}, 10, 0));
    korch_tensor_free(&y);

    /* opset 2: pads and value are attributes; int64 data moves unchanged */
    int64_t xi[3] = {-5, 1LL << 40, 3}, three = 3, apads[2] = {1, 0};
    korch_tensor ti = th_tensor(KORCH_DTYPE_INT64, 1, &three, xi);
    th_node n4 = {.op = "Pad", .opset = 2, .n_attrs = 2, .attrs = {TH_INTS("pads", apads, 2), TH_STR("mode", "edge")},
                  .n_inputs = 1, .inputs = {&ti}, .n_outputs = 1};
    CHECK_OK(th_run(&n4, &y));
    CHECK(th_equal_i64(&y, (const int64_t[]){-5, -5, 1LL << 40, 3}, 4));
    korch_tensor_free(&y);

    /* a larger 3-D edge pad against a clamp loop: many output rows share a
     * source row, which the kernel copies instead of recomputing */
    enum { P = 3, R = 20, Q = 9 };
    static int32_t big[P * R * Q];
    for (int i = 0; i < P * R * Q; i++) big[i] = i * 31 % 1000;
    int64_t dbig[3] = {P, R, Q}, six = 6, bpads[6] = {1, 7, -2, 0, 5, 3};
    korch_tensor tbig = th_tensor(KORCH_DTYPE_INT32, 3, dbig, big), tbp = th_tensor(KORCH_DTYPE_INT64, 1, &six, bpads);
    th_node n5 = {.op = "Pad", .opset = 13, .n_attrs = 1, .attrs = {TH_STR("mode", "edge")}, .n_inputs = 2,
                  .inputs = {&tbig, &tbp}, .constant_mask = 0x2, .n_outputs = 1};
    CHECK_OK(th_run(&n5, &y));
    int64_t od[3] = {P + 1, R + 12, Q + 1}; /* begins 1, 7, -2; ends 0, 5, 3 */
    bool ok = th_shape_is(&y, 3, od[0], od[1], od[2]);
    for (int64_t a = 0; ok && a < od[0]; a++)
        for (int64_t b = 0; b < od[1]; b++)
            for (int64_t c = 0; c < od[2]; c++) {
                int64_t sa = a - 1, sb = b - 7, sc = c + 2; /* edge: clamp into the kept window */
                sa = sa < 0 ? 0 : sa > P - 1 ? P - 1 : sa;
                sb = sb < 0 ? 0 : sb > R - 1 ? R - 1 : sb;
                sc = sc > Q - 1 ? Q - 1 : sc;
                if (((int32_t *)y.data)[(a * od[1] + b) * od[2] + c] != big[(sa * R + sb) * Q + sc]) ok = false;
            }
    CHECK(ok);
    korch_tensor_free(&y);

    /* pads of the wrong length */
    n2.inputs[1] = &tp2;
    CHECK(th_run(&n2, &y) == KORCH_ERR_INVALID_MODEL && th_error_mentions("expected 4"));
    TEST_MAIN_END();
}
