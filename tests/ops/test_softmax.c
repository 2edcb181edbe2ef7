/* Softmax / LogSoftmax / Hardmax: the opset-13 single-axis semantics versus
 * the opset < 13 coercion to 2-D, checked against direct formulas. */
#include "op_harness.h"
#include "test.h"

static float X[2 * 3 * 4];
static const int64_t DIMS[3] = {2, 3, 4};

/* softmax of x[i, :, k] (axis 1) by the textbook formula, no max shift. */
static void expect_axis1(double *want) {
    for (int i = 0; i < 2; i++)
        for (int k = 0; k < 4; k++) {
            double sum = 0;
            for (int j = 0; j < 3; j++) sum += exp(X[(i * 3 + j) * 4 + k]);
            for (int j = 0; j < 3; j++) want[(i * 3 + j) * 4 + k] = exp(X[(i * 3 + j) * 4 + k]) / sum;
        }
}

/* opset < 13, axis 1: each batch row of 12 elements is one softmax. */
static void expect_coerced(double *want) {
    for (int i = 0; i < 2; i++) {
        double sum = 0;
        for (int j = 0; j < 12; j++) sum += exp(X[i * 12 + j]);
        for (int j = 0; j < 12; j++) want[i * 12 + j] = exp(X[i * 12 + j]) / sum;
    }
}

int main(void) {
    for (int i = 0; i < 24; i++) X[i] = (float)((i * 7) % 11) * 0.25f - 1.0f;
    h_input in = h_tensor(KORCH_DTYPE_FLOAT32, 3, DIMS, X);
    double want[24], coerced[24];
    expect_axis1(want);
    expect_coerced(coerced);
    korch_tensor y;

    /* opset 13, axis 1 (not the last axis): per (i, k) column */
    h_attr axis1 = H_INT("axis", 1);
    CHECK_OK(h_run1("Softmax", 13, &axis1, 1, &in, 1, &y));
    CHECK(h_shape_is(&y, 3, DIMS));
    CHECK(h_close_f32(y.data, want, 24));
    korch_tensor_free(&y);

    /* the same node at opset 11 means the 2-D coercion: a different answer */
    CHECK_OK(h_run1("Softmax", 11, &axis1, 1, &in, 1, &y));
    CHECK(h_close_f32(y.data, coerced, 24));
    CHECK(h_max_diff(y.data, want, 24) > 0.01);
    korch_tensor_free(&y);

    /* opset 11 default axis is 1; opset 13 default is -1 */
    CHECK_OK(h_run1("Softmax", 11, NULL, 0, &in, 1, &y));
    CHECK(h_close_f32(y.data, coerced, 24));
    korch_tensor_free(&y);
    CHECK_OK(h_run1("Softmax", 13, NULL, 0, &in, 1, &y));
    for (int r = 0; r < 6; r++) {
        double s = 0;
        for (int k = 0; k < 4; k++) s += ((float *)y.data)[r * 4 + k];
        CHECK_NEAR(s, 1.0, 1e-6);
        /* ratios follow exp differences along the last axis */
        double ratio = ((float *)y.data)[r * 4 + 1] / ((float *)y.data)[r * 4];
        CHECK_NEAR(ratio, exp((double)X[r * 4 + 1] - X[r * 4]), 1e-5);
    }
    korch_tensor_free(&y);

    /* LogSoftmax, opset 13, axis -2 == 1 */
    h_attr axis_neg = H_INT("axis", -2);
    CHECK_OK(h_run1("LogSoftmax", 13, &axis_neg, 1, &in, 1, &y));
    double logs[24];
    for (int i = 0; i < 24; i++) logs[i] = log(want[i]);
    CHECK(h_close_f32(y.data, logs, 24));
    korch_tensor_free(&y);

    /* large inputs: no overflow (softmax of [1000, 1001, 1002] = softmax of [0, 1, 2]) */
    float big[3] = {1000, 1001, 1002};
    int64_t d3[1] = {3};
    h_input bin = h_tensor(KORCH_DTYPE_FLOAT32, 1, d3, big);
    double e = exp(1.0), e2 = exp(2.0), z = 1 + e + e2;
    double want_big[3] = {1 / z, e / z, e2 / z}, want_log[3] = {-log(z), 1 - log(z), 2 - log(z)};
    CHECK_OK(h_run1("Softmax", 13, NULL, 0, &bin, 1, &y));
    CHECK(h_close_f32(y.data, want_big, 3));
    korch_tensor_free(&y);
    CHECK_OK(h_run1("LogSoftmax", 13, NULL, 0, &bin, 1, &y));
    CHECK(h_close_f32(y.data, want_log, 3));
    korch_tensor_free(&y);

    /* opset 11 accepts axis == rank (every row has one element: all ones); opset 13 does not */
    h_attr axis3 = H_INT("axis", 3);
    CHECK_OK(h_run1("Softmax", 11, &axis3, 1, &in, 1, &y));
    double ones[24];
    for (int i = 0; i < 24; i++) ones[i] = 1.0;
    CHECK(h_close_f32(y.data, ones, 24));
    korch_tensor_free(&y);
    CHECK(h_run1("Softmax", 13, &axis3, 1, &in, 1, &y) == KORCH_ERR_INVALID_MODEL);
    CHECK(strstr(korch_last_error(), "axis 3 is out of range") != NULL);
    h_attr axis_bad = H_INT("axis", -4);
    CHECK(h_run1("Softmax", 13, &axis_bad, 1, &in, 1, &y) == KORCH_ERR_INVALID_MODEL);

    /* Hardmax: one-hot at the first maximum */
    float tie[4] = {1, 3, 3, 2};
    int64_t d4[1] = {4};
    h_input tin = h_tensor(KORCH_DTYPE_FLOAT32, 1, d4, tie);
    CHECK_OK(h_run1("Hardmax", 13, NULL, 0, &tin, 1, &y));
    double onehot[4] = {0, 1, 0, 0};
    CHECK(h_close_f32(y.data, onehot, 4));
    korch_tensor_free(&y);

    /* integers are refused with the dtype named */
    int64_t ints[3] = {1, 2, 3};
    h_input iin = h_tensor(KORCH_DTYPE_INT64, 1, d3, ints);
    CHECK(h_run1("Softmax", 13, NULL, 0, &iin, 1, &y) == KORCH_ERR_UNSUPPORTED);
    CHECK(strstr(korch_last_error(), "int64") != NULL);
    TEST_MAIN_END();
}
