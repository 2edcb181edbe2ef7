/* Cast: float16 encodings checked against known bit patterns (IEEE 754
 * binary16), float -> int saturation and NaN, bool, uint64 above INT64_MAX,
 * the opset-1 string form of `to`, CastLike; and Dropout at inference. */
#include "op_harness.h"
#include "test.h"

static korch_status cast(int opset, korch_dtype to, korch_dtype from, int64_t n, const void *data, korch_tensor *y) {
    h_attr attr = H_INT("to", to);
    h_input in = h_tensor(from, 1, &n, data);
    return h_run1("Cast", opset, &attr, 1, &in, 1, y);
}

static void check_float16(void) {
    korch_tensor y;
    /* 1, -2, 65504 (max), 65520 (rounds to inf), 2^-24 (min subnormal), 2^-25 (ties to even: 0),
     * 3 * 2^-25 (ties up to 2^-23), 0.1, 1 + 2^-11 (tie -> even 1.0), 1 + 3 * 2^-11 (tie -> up) */
    float f[10] = {1.0f, -2.0f, 65504.0f, 65520.0f, 0x1p-24f, 0x1p-25f, 0x3p-25f, 0.1f, 1.0f + 0x1p-11f,
                   1.0f + 0x3p-11f};
    uint16_t want[10] = {0x3c00, 0xc000, 0x7bff, 0x7c00, 0x0001, 0x0000, 0x0002, 0x2e66, 0x3c00, 0x3c02};
    CHECK_OK(cast(13, KORCH_DTYPE_FLOAT16, KORCH_DTYPE_FLOAT32, 10, f, &y));
    for (int i = 0; i < 10 && y.data; i++)
        CHECK_MSG(((uint16_t *)y.data)[i] == want[i], "%g -> 0x%04x, want 0x%04x", f[i], ((uint16_t *)y.data)[i],
                  want[i]);
    korch_tensor_free(&y);
    /* and back, plus inf and NaN */
    uint16_t h[6] = {0x3c00, 0x0001, 0x7bff, 0xfc00, 0x7e00, 0x8000};
    CHECK_OK(cast(13, KORCH_DTYPE_FLOAT32, KORCH_DTYPE_FLOAT16, 6, h, &y));
    float *g = y.data;
    CHECK(g && g[0] == 1.0f && g[1] == 0x1p-24f && g[2] == 65504.0f && isinf(g[3]) && g[3] < 0 && isnan(g[4]) &&
          g[5] == 0.0f && signbit(g[5]));
    korch_tensor_free(&y);
}

static void check_integers(void) {
    korch_tensor y;
    /* float -> int32: truncation toward zero, saturation, NaN -> 0 */
    float f[6] = {2.9f, -2.9f, 3e9f, -3e9f, NAN, INFINITY};
    CHECK_OK(cast(13, KORCH_DTYPE_INT32, KORCH_DTYPE_FLOAT32, 6, f, &y));
    int32_t want32[6] = {2, -2, INT32_MAX, INT32_MIN, 0, INT32_MAX};
    CHECK(y.data && memcmp(y.data, want32, sizeof want32) == 0);
    korch_tensor_free(&y);
    /* float -> uint8 saturates at 0 and 255 */
    CHECK_OK(cast(13, KORCH_DTYPE_UINT8, KORCH_DTYPE_FLOAT32, 6, f, &y));
    uint8_t want8[6] = {2, 0, 255, 0, 0, 255};
    CHECK(y.data && memcmp(y.data, want8, sizeof want8) == 0);
    korch_tensor_free(&y);
    /* int64 -> int8 wraps, as numpy's astype */
    int64_t big[3] = {300, -129, 5};
    CHECK_OK(cast(13, KORCH_DTYPE_INT8, KORCH_DTYPE_INT64, 3, big, &y));
    CHECK(((int8_t *)y.data)[0] == 44 && ((int8_t *)y.data)[1] == 127 && ((int8_t *)y.data)[2] == 5);
    korch_tensor_free(&y);
    /* uint64 above INT64_MAX keeps its value in float64 */
    uint64_t u[1] = {18446744073709551615ull};
    CHECK_OK(cast(13, KORCH_DTYPE_FLOAT64, KORCH_DTYPE_UINT64, 1, u, &y));
    CHECK(((double *)y.data)[0] == 18446744073709551616.0);
    korch_tensor_free(&y);
    /* bool: any non-zero is true, NaN included; true is 1 */
    float b[4] = {0, -0.0f, 0.5f, NAN};
    CHECK_OK(cast(13, KORCH_DTYPE_BOOL, KORCH_DTYPE_FLOAT32, 4, b, &y));
    uint8_t wantb[4] = {0, 0, 1, 1};
    CHECK(y.data && memcmp(y.data, wantb, 4) == 0);
    korch_tensor_free(&y);
    uint8_t bools[2] = {1, 0};
    CHECK_OK(cast(13, KORCH_DTYPE_FLOAT32, KORCH_DTYPE_BOOL, 2, bools, &y));
    CHECK(((float *)y.data)[0] == 1.0f && ((float *)y.data)[1] == 0.0f);
    korch_tensor_free(&y);
}

static void check_forms(void) {
    korch_tensor y;
    int64_t n = 2, iv[2] = {7, -1};
    h_input in = h_tensor(KORCH_DTYPE_INT64, 1, &n, iv);
    /* Cast-1 names the type with a string */
    h_attr s = H_STRING("to", "DOUBLE");
    CHECK_OK(h_run1("Cast", 1, &s, 1, &in, 1, &y));
    CHECK(y.dtype == KORCH_DTYPE_FLOAT64 && ((double *)y.data)[1] == -1.0);
    korch_tensor_free(&y);
    h_attr bogus = H_STRING("to", "QUATERNION"), strings = H_INT("to", KORCH_DTYPE_STRING), huge = H_INT("to", 1000);
    CHECK(h_run1("Cast", 1, &bogus, 1, &in, 1, &y) == KORCH_ERR_INVALID_MODEL);
    CHECK(h_run1("Cast", 13, &strings, 1, &in, 1, &y) == KORCH_ERR_UNSUPPORTED);
    CHECK(strstr(korch_last_error(), "string") != NULL);
    CHECK(h_run1("Cast", 13, &huge, 1, &in, 1, &y) == KORCH_ERR_INVALID_MODEL);
    CHECK(h_run1("Cast", 13, NULL, 0, &in, 1, &y) == KORCH_ERR_INVALID_MODEL);
    /* CastLike takes the dtype of its second input */
    float like = 0;
    h_input ins[2] = {in, h_tensor(KORCH_DTYPE_FLOAT32, 0, NULL, &like)};
    CHECK_OK(h_run1("CastLike", 15, NULL, 0, ins, 2, &y));
    CHECK(y.dtype == KORCH_DTYPE_FLOAT32 && ((float *)y.data)[0] == 7.0f);
    korch_tensor_free(&y);
}

static void check_dropout(void) {
    float x[3] = {1, -2, 3};
    int64_t n = 3;
    h_input in = h_tensor(KORCH_DTYPE_FLOAT32, 1, &n, x);
    korch_tensor y, mask;
    korch_tensor *outs[2] = {&y, &mask};
    CHECK_OK(h_run("Dropout", 13, NULL, 0, &in, 1, outs, 2));
    uint8_t ones[3] = {1, 1, 1};
    CHECK(y.data && memcmp(y.data, x, sizeof x) == 0);
    CHECK(mask.dtype == KORCH_DTYPE_BOOL && mask.data && memcmp(mask.data, ones, 3) == 0);
    korch_tensor_free(&y);
    korch_tensor_free(&mask);
    /* opset 7: the mask has the input's dtype */
    CHECK_OK(h_run("Dropout", 7, NULL, 0, &in, 1, outs, 2));
    CHECK(mask.dtype == KORCH_DTYPE_FLOAT32 && ((float *)mask.data)[2] == 1.0f);
    korch_tensor_free(&y);
    korch_tensor_free(&mask);
    /* training with a non-zero ratio is refused; so is a training_mode known only at run time */
    float ratio = 0.5f, zero = 0;
    uint8_t on = 1, off = 0;
    h_input train[3] = {in, h_const(h_tensor(KORCH_DTYPE_FLOAT32, 0, NULL, &ratio)),
                        h_const(h_tensor(KORCH_DTYPE_BOOL, 0, NULL, &on))};
    CHECK(h_run1("Dropout", 13, NULL, 0, train, 3, &y) == KORCH_ERR_UNSUPPORTED);
    CHECK(strstr(korch_last_error(), "ratio 0.5") != NULL);
    train[2] = h_tensor(KORCH_DTYPE_BOOL, 0, NULL, &off);
    CHECK(h_run1("Dropout", 13, NULL, 0, train, 3, &y) == KORCH_ERR_UNSUPPORTED);
    CHECK(strstr(korch_last_error(), "training_mode is a run-time input") != NULL);
    /* constant training_mode: false with any ratio, or true with ratio 0, is the identity */
    train[2] = h_const(h_tensor(KORCH_DTYPE_BOOL, 0, NULL, &off));
    train[1] = h_tensor(KORCH_DTYPE_FLOAT32, 0, NULL, &ratio);
    CHECK_OK(h_run1("Dropout", 13, NULL, 0, train, 3, &y));
    CHECK(y.data && memcmp(y.data, x, sizeof x) == 0);
    korch_tensor_free(&y);
    train[2] = h_const(h_tensor(KORCH_DTYPE_BOOL, 0, NULL, &on));
    train[1] = h_const(h_tensor(KORCH_DTYPE_FLOAT32, 0, NULL, &zero));
    CHECK_OK(h_run1("Dropout", 13, NULL, 0, train, 3, &y));
    CHECK(y.data && memcmp(y.data, x, sizeof x) == 0);
    korch_tensor_free(&y);
}

int main(void) {
    check_float16();
    check_integers();
    check_forms();
    check_dropout();
    TEST_MAIN_END();
}
