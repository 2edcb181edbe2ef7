/* Reductions: axes as attribute vs input, negative axes, keepdims=0, empty
 * axes (reduce all, or the identity with noop_with_empty_axes), bad axes, and
 * each kind against a direct loop over a [2, 3, 4] tensor. */
#include "op_harness.h"
#include "test.h"

static float X[24];
static const int64_t DIMS[3] = {2, 3, 4};

static float at(int i, int j, int k) { return X[(i * 3 + j) * 4 + k]; }

int main(void) {
    for (int i = 0; i < 24; i++) X[i] = (float)((i * 5) % 7) - 2.5f;
    h_input x = h_tensor(KORCH_DTYPE_FLOAT32, 3, DIMS, X);
    korch_tensor y;

    /* ReduceSum-13, axes input [-1], keepdims 0 -> [2, 3] */
    int64_t last[1] = {-1}, one[1] = {1};
    h_input ins[2] = {x, h_const(h_tensor(KORCH_DTYPE_INT64, 1, one, last))};
    h_attr nokeep = H_INT("keepdims", 0);
    CHECK_OK(h_run1("ReduceSum", 13, &nokeep, 1, ins, 2, &y));
    int64_t d23[2] = {2, 3};
    CHECK(h_shape_is(&y, 2, d23));
    double want[24];
    for (int i = 0; i < 2; i++)
        for (int j = 0; j < 3; j++) want[i * 3 + j] = at(i, j, 0) + at(i, j, 1) + at(i, j, 2) + at(i, j, 3);
    CHECK(h_close_f32(y.data, want, 6));
    korch_tensor_free(&y);

    /* ReduceMean-11, axes attribute [0, -1] (non-adjacent), keepdims default -> [1, 3, 1] */
    int64_t ends[2] = {0, -1};
    h_attr axes_attr = H_INTS("axes", ends, 2);
    CHECK_OK(h_run1("ReduceMean", 11, &axes_attr, 1, &x, 1, &y));
    int64_t d131[3] = {1, 3, 1};
    CHECK(h_shape_is(&y, 3, d131));
    for (int j = 0; j < 3; j++) {
        double s = 0;
        for (int i = 0; i < 2; i++)
            for (int k = 0; k < 4; k++) s += at(i, j, k);
        want[j] = s / 8;
    }
    CHECK(h_close_f32(y.data, want, 3));
    korch_tensor_free(&y);

    /* the same axes given as an input at opset 11, or as an attribute at 18: refused */
    int64_t two[1] = {2};
    h_input with_axes[2] = {x, h_const(h_tensor(KORCH_DTYPE_INT64, 1, two, ends))};
    CHECK(h_run1("ReduceMean", 11, &axes_attr, 1, with_axes, 2, &y) == KORCH_ERR_INVALID_MODEL);
    CHECK(h_run1("ReduceMean", 18, &axes_attr, 1, &x, 1, &y) == KORCH_ERR_INVALID_MODEL);

    /* ReduceMax-18 with the axes input: middle axis */
    h_input max_in[2] = {x, h_const(h_tensor(KORCH_DTYPE_INT64, 1, one, one))};
    CHECK_OK(h_run1("ReduceMax", 18, &nokeep, 1, max_in, 2, &y));
    int64_t d24[2] = {2, 4};
    CHECK(h_shape_is(&y, 2, d24));
    for (int i = 0; i < 2; i++)
        for (int k = 0; k < 4; k++) want[i * 4 + k] = fmax(fmax(at(i, 0, k), at(i, 1, k)), at(i, 2, k));
    CHECK(h_close_f32(y.data, want, 8));
    korch_tensor_free(&y);

    /* no axes: everything, keepdims -> [1, 1, 1] */
    CHECK_OK(h_run1("ReduceMin", 18, NULL, 0, &x, 1, &y));
    int64_t d111[3] = {1, 1, 1};
    CHECK(h_shape_is(&y, 3, d111));
    double lo = INFINITY;
    for (int i = 0; i < 24; i++) lo = fmin(lo, X[i]);
    CHECK_NEAR(((float *)y.data)[0], lo, 0);
    korch_tensor_free(&y);

    /* empty axes input: all, or the identity with noop_with_empty_axes */
    int64_t zero[1] = {0};
    h_input empty_axes[2] = {x, h_const(h_tensor(KORCH_DTYPE_INT64, 1, zero, last))};
    CHECK_OK(h_run1("ReduceSum", 13, &nokeep, 1, empty_axes, 2, &y));
    CHECK(y.shape.rank == 0);
    double total = 0;
    for (int i = 0; i < 24; i++) total += X[i];
    CHECK_NEAR(((float *)y.data)[0], total, 1e-5);
    korch_tensor_free(&y);
    h_attr noop[2] = {H_INT("noop_with_empty_axes", 1), H_INT("keepdims", 0)};
    CHECK_OK(h_run1("ReduceSum", 13, noop, 2, empty_axes, 2, &y));
    CHECK(h_shape_is(&y, 3, DIMS));
    for (int i = 0; i < 24; i++) want[i] = X[i];
    CHECK(h_close_f32(y.data, want, 24));
    korch_tensor_free(&y);

    /* bad axes */
    int64_t dup[2] = {1, -2}, far[1] = {3};
    h_attr dup_attr = H_INTS("axes", dup, 2), far_attr = H_INTS("axes", far, 1);
    CHECK(h_run1("ReduceSum", 11, &dup_attr, 1, &x, 1, &y) == KORCH_ERR_INVALID_MODEL);
    CHECK(strstr(korch_last_error(), "twice") != NULL);
    CHECK(h_run1("ReduceL2", 11, &far_attr, 1, &x, 1, &y) == KORCH_ERR_INVALID_MODEL);
    CHECK(strstr(korch_last_error(), "out of range") != NULL);
    /* axes must be known before running */
    h_input runtime_axes[2] = {x, h_tensor(KORCH_DTYPE_INT64, 1, one, last)};
    CHECK(h_run1("ReduceSum", 13, NULL, 0, runtime_axes, 2, &y) == KORCH_ERR_UNSUPPORTED);

    /* the other kinds over the last axis of a small row: [3, -4] */
    float row[2] = {3, -4};
    int64_t d2[1] = {2};
    h_input r = h_tensor(KORCH_DTYPE_FLOAT32, 1, d2, row);
    struct {
        const char *op;
        double want;
    } kinds[] = {
        {"ReduceL1", 7},         {"ReduceL2", 5},     {"ReduceSumSquare", 25},
        {"ReduceProd", -12},     {"ReduceMean", -0.5}, {"ReduceLogSumExp", log(exp(3.0) + exp(-4.0))},
    };
    for (size_t k = 0; k < sizeof kinds / sizeof kinds[0]; k++) {
        CHECK_OK(h_run1(kinds[k].op, 13, NULL, 0, &r, 1, &y));
        CHECK_MSG(fabs(((float *)y.data)[0] - kinds[k].want) < 1e-5, "%s: %g", kinds[k].op, ((float *)y.data)[0]);
        korch_tensor_free(&y);
    }
    /* LogSumExp of huge values does not overflow: log(2 e^1000) = 1000 + log 2 */
    double big[2] = {1000, 1000};
    h_input bigin = h_tensor(KORCH_DTYPE_FLOAT64, 1, d2, big);
    CHECK_OK(h_run1("ReduceLogSumExp", 13, NULL, 0, &bigin, 1, &y));
    CHECK_NEAR(((double *)y.data)[0], 1000 + log(2.0), 1e-9);
    korch_tensor_free(&y);
    /* ReduceLogSum: log of the sum */
    float pos[2] = {1, 2};
    h_input posin = h_tensor(KORCH_DTYPE_FLOAT32, 1, d2, pos);
    CHECK_OK(h_run1("ReduceLogSum", 13, NULL, 0, &posin, 1, &y));
    CHECK_NEAR(((float *)y.data)[0], log(3.0), 1e-6);
    korch_tensor_free(&y);

    /* int64: exact products and sums, Mean truncates */
    int64_t iv[4] = {3000000000LL, 3, -7, 2};
    int64_t d4[1] = {4};
    h_input iin = h_tensor(KORCH_DTYPE_INT64, 1, d4, iv);
    CHECK_OK(h_run1("ReduceProd", 13, &nokeep, 1, &iin, 1, &y));
    CHECK(y.dtype == KORCH_DTYPE_INT64 && ((int64_t *)y.data)[0] == -126000000000LL);
    korch_tensor_free(&y);
    CHECK_OK(h_run1("ReduceMean", 13, &nokeep, 1, &iin, 1, &y));
    CHECK(((int64_t *)y.data)[0] == 749999999LL); /* 2999999998 / 4 */
    korch_tensor_free(&y);
    CHECK_OK(h_run1("ReduceMin", 13, &nokeep, 1, &iin, 1, &y));
    CHECK(((int64_t *)y.data)[0] == -7);
    korch_tensor_free(&y);

    /* CumSum along axis 1 of X: plain, exclusive, reversed, both */
    int32_t axis1 = 1;
    h_input cs[2] = {x, h_const(h_tensor(KORCH_DTYPE_INT32, 0, NULL, &axis1))};
    struct {
        int exclusive, reverse;
    } modes[4] = {{0, 0}, {1, 0}, {0, 1}, {1, 1}};
    for (int m = 0; m < 4; m++) {
        h_attr flags[2] = {H_INT("exclusive", modes[m].exclusive), H_INT("reverse", modes[m].reverse)};
        CHECK_OK(h_run1("CumSum", 14, flags, 2, cs, 2, &y));
        for (int i = 0; i < 2; i++)
            for (int j = 0; j < 3; j++)
                for (int k = 0; k < 4; k++) {
                    double s = 0; /* sum over j2 in the window, by definition */
                    for (int j2 = 0; j2 < 3; j2++) {
                        bool in = modes[m].reverse ? j2 >= j : j2 <= j;
                        if (modes[m].exclusive && j2 == j) in = false;
                        if (in) s += at(i, j2, k);
                    }
                    want[(i * 3 + j) * 4 + k] = s;
                }
        CHECK_MSG(h_close_f32(y.data, want, 24), "exclusive=%d reverse=%d", modes[m].exclusive, modes[m].reverse);
        korch_tensor_free(&y);
    }
    cs[1] = h_tensor(KORCH_DTYPE_INT32, 0, NULL, &axis1); /* axis only known at run time */
    CHECK(h_run1("CumSum", 14, NULL, 0, cs, 2, &y) == KORCH_ERR_UNSUPPORTED);

    /* unsupported dtype is named */
    uint8_t bytes[2] = {1, 2};
    h_input u8 = h_tensor(KORCH_DTYPE_UINT8, 1, d2, bytes);
    CHECK(h_run1("ReduceSum", 11, NULL, 0, &u8, 1, &y) == KORCH_ERR_UNSUPPORTED);
    CHECK(strstr(korch_last_error(), "uint8") != NULL);
    TEST_MAIN_END();
}
