/* Slice: clamping of out-of-range starts/ends, negative steps, INT64
 * sentinels, optional axes, and the opset-1 attribute form. Expected values
 * follow the ONNX spec's clamping rules, worked out by hand in comments. */
#include "layout_harness.h"

static const int64_t one[1] = {1};

/* Slices x = [0, 1, ..., 9] (int64) along axis 0. */
static korch_status slice_1d(int64_t start, int64_t end, int64_t step, korch_tensor *out) {
    static int64_t x[10] = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9};
    static int64_t s, e, st;
    s = start, e = end, st = step;
    int64_t ten = 10;
    korch_tensor tx = th_tensor(KORCH_DTYPE_INT64, 1, &ten, x), ts = th_tensor(KORCH_DTYPE_INT64, 1, one, &s),
                 te = th_tensor(KORCH_DTYPE_INT64, 1, one, &e), tst = th_tensor(KORCH_DTYPE_INT64, 1, one, &st);
    th_node n = {.op = "Slice", .opset = 13, .n_inputs = 5, .inputs = {&tx, &ts, &te, NULL, &tst},
                 .constant_mask = 0x1e, .n_outputs = 1};
    return th_run(&n, out);
}

static void check_1d(int64_t start, int64_t end, int64_t step, const int64_t *want, int64_t n) {
    korch_tensor y;
    korch_status st = slice_1d(start, end, step, &y);
    CHECK_MSG(st == KORCH_OK, "slice [%lld:%lld:%lld]: %s", (long long)start, (long long)end, (long long)step,
              korch_last_error());
    if (st != KORCH_OK) return;
    CHECK_MSG(th_shape_is(&y, 1, n) && th_equal_i64(&y, want, n), "slice [%lld:%lld:%lld]", (long long)start,
              (long long)end, (long long)step);
    korch_tensor_free(&y);
}

int main(void) {
    /* whole axis reversed: start -1 -> 9, end INT64_MIN -> clamped to -1 */
    check_1d(-1, INT64_MIN, -1, (const int64_t[]){9, 8, 7, 6, 5, 4, 3, 2, 1, 0}, 10);
    check_1d(8, 1, -3, (const int64_t[]){8, 5, 2}, 3);
    /* start 100 clamps to 9 for a negative step, end -100 -> -90 -> -1 */
    check_1d(100, -100, -2, (const int64_t[]){9, 7, 5, 3, 1}, 5);
    /* forward: start -100 -> 0, end INT64_MAX -> 10, step 4 */
    check_1d(-100, INT64_MAX, 4, (const int64_t[]){0, 4, 8}, 3);
    check_1d(-3, -1, 1, (const int64_t[]){7, 8}, 2);
    /* spec: with a negative step the end clamps to dim-1 = 9, so
     * [2:INT64_MAX:-1] is empty (numpy agrees; ONNX Runtime differs) */
    check_1d(2, INT64_MAX, -1, NULL, 0);
    /* spec: start -20 -> -10 clamps to 0 for a negative step: one element */
    check_1d(-20, INT64_MIN, -1, (const int64_t[]){0}, 1);
    check_1d(5, 5, 1, NULL, 0);
    check_1d(7, 3, 1, NULL, 0);
    check_1d(3, 7, -1, NULL, 0);
    check_1d(0, 10, INT64_MAX, (const int64_t[]){0}, 1);
    check_1d(9, -1000, INT64_MIN, (const int64_t[]){9}, 1);

    korch_tensor y;
    CHECK(slice_1d(0, 5, 0, &y) != KORCH_OK && th_error_mentions("step"));

    /* 2-D, float, axes given out of order and negative:
     * x[r][c] = 10r + c, 3x4; axis 1 (as -1): 3 down to 0 exclusive, step -2
     * -> cols 3, 1; axis 0: start 2, end -4 -> -1 (clamped), step -1 -> rows 2, 1, 0 */
    float x[12];
    for (int i = 0; i < 12; i++) x[i] = (float)(10 * (i / 4) + i % 4);
    int64_t dims[2] = {3, 4}, two = 2;
    int64_t starts[2] = {3, 2}, ends[2] = {0, -4}, axes[2] = {-1, 0}, steps[2] = {-2, -1};
    korch_tensor tx = th_tensor(KORCH_DTYPE_FLOAT32, 2, dims, x), ts = th_tensor(KORCH_DTYPE_INT64, 1, &two, starts),
                 te = th_tensor(KORCH_DTYPE_INT64, 1, &two, ends), ta = th_tensor(KORCH_DTYPE_INT64, 1, &two, axes),
                 tst = th_tensor(KORCH_DTYPE_INT64, 1, &two, steps);
    th_node n = {.op = "Slice", .opset = 13, .n_inputs = 5, .inputs = {&tx, &ts, &te, &ta, &tst},
                 .constant_mask = 0x1e, .n_outputs = 1};
    CHECK_OK(th_run(&n, &y));
    CHECK(th_shape_is(&y, 2, (int64_t)3, (int64_t)2));
    CHECK(th_equal_f32(&y, (const float[]){23, 21, 13, 11, 3, 1}, 6, 0));
    korch_tensor_free(&y);

    /* int32 starts/ends without axes or steps: the first axes in order */
    int32_t s32[1] = {1}, e32[1] = {3};
    korch_tensor ts32 = th_tensor(KORCH_DTYPE_INT32, 1, one, s32), te32 = th_tensor(KORCH_DTYPE_INT32, 1, one, e32);
    th_node n2 = {.op = "Slice", .opset = 10, .n_inputs = 3, .inputs = {&tx, &ts32, &te32}, .constant_mask = 0x6,
                  .n_outputs = 1};
    CHECK_OK(th_run(&n2, &y));
    CHECK(th_shape_is(&y, 2, (int64_t)2, (int64_t)4));
    CHECK(th_equal_f32(&y, (const float[]){10, 11, 12, 13, 20, 21, 22, 23}, 8, 0));
    korch_tensor_free(&y);

    /* opset 1: attributes instead of inputs */
    int64_t a_starts[1] = {-2}, a_ends[1] = {1000}, a_axes[1] = {1};
    th_node n3 = {.op = "Slice", .opset = 1, .n_attrs = 3,
                  .attrs = {TH_INTS("starts", a_starts, 1), TH_INTS("ends", a_ends, 1), TH_INTS("axes", a_axes, 1)},
                  .n_inputs = 1, .inputs = {&tx}, .n_outputs = 1};
    CHECK_OK(th_run(&n3, &y));
    CHECK(th_shape_is(&y, 2, (int64_t)3, (int64_t)2));
    CHECK(th_equal_f32(&y, (const float[]){2, 3, 12, 13, 22, 23}, 6, 0));
    korch_tensor_free(&y);

    /* bad input: repeated axis, mismatched lengths, non-constant starts */
    int64_t rep_axes[2] = {1, -1};
    korch_tensor trep = th_tensor(KORCH_DTYPE_INT64, 1, &two, rep_axes);
    n.inputs[3] = &trep;
    CHECK(th_run(&n, &y) != KORCH_OK && th_error_mentions("repeated"));
    n.inputs[3] = &ta;
    korch_tensor te1 = th_tensor(KORCH_DTYPE_INT64, 1, one, ends);
    n.inputs[2] = &te1;
    CHECK(th_run(&n, &y) != KORCH_OK && th_error_mentions("differ in length"));
    n.inputs[2] = &te;
    n.constant_mask = 0x1c;
    CHECK(th_run(&n, &y) == KORCH_ERR_UNSUPPORTED && th_error_mentions("not a constant"));
    TEST_MAIN_END();
}
