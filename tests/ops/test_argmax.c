/* ArgMax / ArgMin: axis (negative too), keepdims, ties (first, or last with
 * select_last_index), NaN, integer input, and an empty axis. */
#include "op_harness.h"
#include "test.h"

int main(void) {
    /* x[i][j] for a [2, 4] matrix with ties in row 0 */
    float x[8] = {3, 7, 7, 1, -2, -5, 0, -5};
    int64_t dx[2] = {2, 4};
    h_input in = h_tensor(KORCH_DTYPE_FLOAT32, 2, dx, x);
    korch_tensor y;

    h_attr last_axis[2] = {H_INT("axis", -1), H_INT("keepdims", 0)};
    CHECK_OK(h_run1("ArgMax", 13, last_axis, 2, &in, 1, &y));
    int64_t d2[1] = {2};
    CHECK(y.dtype == KORCH_DTYPE_INT64 && h_shape_is(&y, 1, d2));
    CHECK(((int64_t *)y.data)[0] == 1 && ((int64_t *)y.data)[1] == 2);
    korch_tensor_free(&y);
    CHECK_OK(h_run1("ArgMin", 13, last_axis, 2, &in, 1, &y));
    CHECK(((int64_t *)y.data)[0] == 3 && ((int64_t *)y.data)[1] == 1);
    korch_tensor_free(&y);

    /* select_last_index moves ties to the last occurrence */
    h_attr last_tie[3] = {H_INT("axis", 1), H_INT("keepdims", 0), H_INT("select_last_index", 1)};
    CHECK_OK(h_run1("ArgMax", 12, last_tie, 3, &in, 1, &y));
    CHECK(((int64_t *)y.data)[0] == 2 && ((int64_t *)y.data)[1] == 2);
    korch_tensor_free(&y);
    CHECK_OK(h_run1("ArgMin", 12, last_tie, 3, &in, 1, &y));
    CHECK(((int64_t *)y.data)[0] == 3 && ((int64_t *)y.data)[1] == 3);
    korch_tensor_free(&y);

    /* default axis 0, keepdims -> [1, 4] */
    CHECK_OK(h_run1("ArgMax", 11, NULL, 0, &in, 1, &y));
    int64_t d14[2] = {1, 4}, want0[4] = {0, 0, 0, 0};
    CHECK(h_shape_is(&y, 2, d14) && memcmp(y.data, want0, sizeof want0) == 0);
    korch_tensor_free(&y);
    CHECK_OK(h_run1("ArgMin", 11, NULL, 0, &in, 1, &y));
    int64_t want1[4] = {1, 1, 1, 1};
    CHECK(memcmp(y.data, want1, sizeof want1) == 0);
    korch_tensor_free(&y);

    /* the first NaN is the answer either way */
    float nans[4] = {1, NAN, 9, NAN};
    int64_t d4[1] = {4};
    h_input nin = h_tensor(KORCH_DTYPE_FLOAT32, 1, d4, nans);
    CHECK_OK(h_run1("ArgMax", 13, NULL, 0, &nin, 1, &y));
    CHECK(((int64_t *)y.data)[0] == 1);
    korch_tensor_free(&y);
    CHECK_OK(h_run1("ArgMin", 13, NULL, 0, &nin, 1, &y));
    CHECK(((int64_t *)y.data)[0] == 1);
    korch_tensor_free(&y);

    /* int64 input */
    int64_t iv[4] = {INT64_MIN, 5, INT64_MAX, 5};
    h_input iin = h_tensor(KORCH_DTYPE_INT64, 1, d4, iv);
    CHECK_OK(h_run1("ArgMax", 13, NULL, 0, &iin, 1, &y));
    CHECK(((int64_t *)y.data)[0] == 2);
    korch_tensor_free(&y);

    /* bad axis, empty axis */
    h_attr far = H_INT("axis", 2);
    CHECK(h_run1("ArgMax", 13, &far, 1, &in, 1, &y) == KORCH_ERR_INVALID_MODEL);
    int64_t d0[2] = {2, 0};
    h_input empty = h_tensor(KORCH_DTYPE_FLOAT32, 2, d0, NULL);
    h_attr axis1 = H_INT("axis", 1);
    CHECK(h_run1("ArgMax", 13, &axis1, 1, &empty, 1, &y) == KORCH_ERR_SHAPE);
    TEST_MAIN_END();
}
