/* The quantization operators against their formulas (docs/quantization.md)
 * on the cases the ONNX node tests leave out: rounding ties, saturation,
 * NaN, per-axis scales on other axes, blocked scales, int32 dequantization
 * beyond 2^24, DynamicQuantizeLinear of all zeros, per-column zero points,
 * QLinearConv with a bias and per-channel scales, and errors that name the
 * node. */
#include <string.h>

#include "op_harness.h"
#include "test.h"

static const int64_t D10[1] = {10};

static void check_ties_and_saturation(void) {
    const float x[10] = {0.5f, 1.5f, 2.5f, -0.5f, -1.5f, -2.5f, 300.0f, -300.0f, 127.5f, NAN};
    float one = 1.0f;
    uint8_t zu = 1;
    int8_t zs = -1;
    const uint8_t want_u[10] = {1, 3, 3, 1, 0, 0, 255, 0, 129, 1}; /* halves to even, then + 1, clamped */
    const int8_t want_s[10] = {-1, 1, 1, -1, -3, -3, 127, -128, 127, -1};
    korch_tensor y;
    h_input in_u[3] = {h_tensor(KORCH_DTYPE_FLOAT32, 1, D10, x), h_tensor(KORCH_DTYPE_FLOAT32, 0, NULL, &one),
                       h_tensor(KORCH_DTYPE_UINT8, 0, NULL, &zu)};
    CHECK_OK(h_run1("QuantizeLinear", 13, NULL, 0, in_u, 3, &y));
    CHECK(y.dtype == KORCH_DTYPE_UINT8 && memcmp(y.data, want_u, 10) == 0);
    korch_tensor_free(&y);
    h_input in_s[3] = {in_u[0], in_u[1], h_tensor(KORCH_DTYPE_INT8, 0, NULL, &zs)};
    CHECK_OK(h_run1("QuantizeLinear", 13, NULL, 0, in_s, 3, &y));
    CHECK(y.dtype == KORCH_DTYPE_INT8 && memcmp(y.data, want_s, 10) == 0);
    korch_tensor_free(&y);
    /* no zero point: uint8, zero point 0 */
    CHECK_OK(h_run1("QuantizeLinear", 10, NULL, 0, in_u, 2, &y));
    CHECK(y.dtype == KORCH_DTYPE_UINT8 && ((uint8_t *)y.data)[2] == 2 && ((uint8_t *)y.data)[7] == 0);
    korch_tensor_free(&y);
}

static void check_axes_and_blocks(void) {
    /* x 2x3, per-axis along axis 0 (two scales) and along the last axis */
    const float x[6] = {1, 2, 3, 4, 5, 6};
    const int64_t d23[2] = {2, 3}, d2[1] = {2}, d3[1] = {3};
    const float s0[2] = {1, 2}, s1[3] = {1, 2, 4};
    const uint8_t z0[2] = {0, 10}, z1[3] = {0, 0, 100};
    korch_tensor y;
    h_attr axis0 = H_INT("axis", 0), axis_last = H_INT("axis", -1);
    h_input a0[3] = {h_tensor(KORCH_DTYPE_FLOAT32, 2, d23, x), h_tensor(KORCH_DTYPE_FLOAT32, 1, d2, s0),
                     h_tensor(KORCH_DTYPE_UINT8, 1, d2, z0)};
    CHECK_OK(h_run1("QuantizeLinear", 13, &axis0, 1, a0, 3, &y));
    const uint8_t want0[6] = {1, 2, 3, 12, 12, 13}; /* row 1: rint(4/2, 5/2, 6/2) + 10 = 2+10, 2+10, 3+10 */
    CHECK(memcmp(y.data, want0, 6) == 0);
    korch_tensor_free(&y);
    h_input a1[3] = {a0[0], h_tensor(KORCH_DTYPE_FLOAT32, 1, d3, s1), h_tensor(KORCH_DTYPE_UINT8, 1, d3, z1)};
    CHECK_OK(h_run1("QuantizeLinear", 13, &axis_last, 1, a1, 3, &y));
    const uint8_t want1[6] = {1, 1, 101, 4, 2, 102}; /* 3/4 -> 1, 6/4 = 1.5 -> 2 */
    CHECK(memcmp(y.data, want1, 6) == 0);
    korch_tensor_free(&y);

    /* blocked: x 1x4, block_size 2 along axis 1, scale 1x2 */
    const int64_t d14[2] = {1, 4}, d12[2] = {1, 2};
    const uint8_t q[4] = {10, 20, 10, 20};
    const float sb[2] = {0.5f, 3.0f};
    h_attr blocked[2] = {H_INT("axis", 1), H_INT("block_size", 2)};
    h_input b[2] = {h_tensor(KORCH_DTYPE_UINT8, 2, d14, q), h_tensor(KORCH_DTYPE_FLOAT32, 2, d12, sb)};
    CHECK_OK(h_run1("DequantizeLinear", 13, blocked, 2, b, 2, &y));
    const double wantb[4] = {5, 10, 30, 60};
    CHECK(h_close_f32(y.data, wantb, 4));
    korch_tensor_free(&y);

    /* a per-axis scale of the wrong length names the node and the input */
    h_input bad[2] = {a0[0], h_tensor(KORCH_DTYPE_FLOAT32, 1, d2, s0)};
    CHECK(h_run1("QuantizeLinear", 13, &axis_last, 1, bad, 2, &y) == KORCH_ERR_SHAPE);
    CHECK_MSG(strstr(korch_last_error(), "node \"node\"") && strstr(korch_last_error(), "1-D scale of 3 values"),
              "%s", korch_last_error());
    /* per-axis scales need opset 13 */
    CHECK(h_run1("QuantizeLinear", 10, NULL, 0, a1, 2, &y) == KORCH_ERR_INVALID_MODEL);
    CHECK_MSG(strstr(korch_last_error(), "before opset 13"), "%s", korch_last_error());
}

static void check_dequantize_int32(void) {
    /* the zero point is subtracted in integers: float(2^24 + 1 - 1) is exact */
    const int32_t x[2] = {(1 << 24) + 1, -5};
    int32_t zp = 1;
    float s = 1.0f;
    const int64_t d2[1] = {2};
    korch_tensor y;
    h_input in[3] = {h_tensor(KORCH_DTYPE_INT32, 1, d2, x), h_tensor(KORCH_DTYPE_FLOAT32, 0, NULL, &s),
                     h_tensor(KORCH_DTYPE_INT32, 0, NULL, &zp)};
    CHECK_OK(h_run1("DequantizeLinear", 13, NULL, 0, in, 3, &y));
    CHECK(((float *)y.data)[0] == 16777216.0f && ((float *)y.data)[1] == -6.0f);
    korch_tensor_free(&y);
}

static void check_dynamic_zero(void) {
    const float x[3] = {0, 0, 0};
    const int64_t d3[1] = {3};
    korch_tensor y, scale, zp;
    korch_tensor *outs[3] = {&y, &scale, &zp};
    h_input in[1] = {h_tensor(KORCH_DTYPE_FLOAT32, 1, d3, x)};
    CHECK_OK(h_run("DynamicQuantizeLinear", 11, NULL, 0, in, 1, outs, 3));
    CHECK(((uint8_t *)y.data)[0] == 0 && *(float *)scale.data == 1.0f && *(uint8_t *)zp.data == 0);
    korch_tensor_free(&y);
    korch_tensor_free(&scale);
    korch_tensor_free(&zp);
}

static void check_matmul_integer(void) {
    /* A 2x3 uint8 (zero point 2 per tensor), B 3x2 int8 with a zero point per column */
    const uint8_t a[6] = {2, 3, 4, 5, 6, 7};
    const int8_t b[6] = {1, -1, 2, -2, 3, -3};
    uint8_t za = 2;
    const int8_t zb[2] = {1, -1};
    const int64_t d23[2] = {2, 3}, d32[2] = {3, 2}, d2[1] = {2};
    korch_tensor y;
    h_input in[4] = {h_tensor(KORCH_DTYPE_UINT8, 2, d23, a), h_tensor(KORCH_DTYPE_INT8, 2, d32, b),
                     h_tensor(KORCH_DTYPE_UINT8, 0, NULL, &za), h_tensor(KORCH_DTYPE_INT8, 1, d2, zb)};
    CHECK_OK(h_run1("MatMulInteger", 10, NULL, 0, in, 4, &y));
    int32_t want[4];
    for (int i = 0; i < 2; i++)
        for (int j = 0; j < 2; j++) {
            int32_t acc = 0;
            for (int k = 0; k < 3; k++) acc += (a[i * 3 + k] - za) * (b[k * 2 + j] - zb[j]);
            want[i * 2 + j] = acc;
        }
    CHECK(y.dtype == KORCH_DTYPE_INT32 && memcmp(y.data, want, sizeof want) == 0);
    korch_tensor_free(&y);
}

static void check_qlinear_conv_bias(void) {
    /* 1x2x2x2 x, two 1x1 output channels with their own scales, an int32 bias */
    const uint8_t x[8] = {10, 20, 30, 40, 50, 60, 70, 80};
    const int8_t w[4] = {1, -2, 3, 4}; /* [2 out][2 in][1][1] */
    const int32_t bias[2] = {100, -50};
    float xs = 0.5f, ys = 0.25f;
    const float ws[2] = {0.1f, 0.2f};
    uint8_t xz = 10, yz = 128;
    const int8_t wz[2] = {0, 0};
    const int64_t dx[4] = {1, 2, 2, 2}, dw[4] = {2, 2, 1, 1}, d2[1] = {2};
    korch_tensor y;
    h_input in[9] = {h_tensor(KORCH_DTYPE_UINT8, 4, dx, x),   h_tensor(KORCH_DTYPE_FLOAT32, 0, NULL, &xs),
                     h_tensor(KORCH_DTYPE_UINT8, 0, NULL, &xz), h_tensor(KORCH_DTYPE_INT8, 4, dw, w),
                     h_tensor(KORCH_DTYPE_FLOAT32, 1, d2, ws),   h_tensor(KORCH_DTYPE_INT8, 1, d2, wz),
                     h_tensor(KORCH_DTYPE_FLOAT32, 0, NULL, &ys), h_tensor(KORCH_DTYPE_UINT8, 0, NULL, &yz),
                     h_tensor(KORCH_DTYPE_INT32, 1, d2, bias)};
    CHECK_OK(h_run1("QLinearConv", 10, NULL, 0, in, 9, &y));
    CHECK(y.dtype == KORCH_DTYPE_UINT8);
    for (int m = 0; m < 2; m++)
        for (int p = 0; p < 4; p++) {
            int32_t acc = bias[m];
            for (int c = 0; c < 2; c++) acc += (x[c * 4 + p] - xz) * (w[m * 2 + c] - wz[m]);
            float v = (float)acc * (xs * ws[m] / ys);
            double q = nearbyint(v) + yz;
            int want = q < 0 ? 0 : q > 255 ? 255 : (int)q;
            CHECK_MSG(((uint8_t *)y.data)[m * 4 + p] == want, "channel %d pixel %d: got %d want %d", m, p,
                      ((uint8_t *)y.data)[m * 4 + p], want);
        }
    korch_tensor_free(&y);
}

int main(void) {
    check_ties_and_saturation();
    check_axes_and_blocks();
    check_dequantize_int32();
    check_dynamic_zero();
    check_matmul_integer();
    check_qlinear_conv_bias();
    TEST_MAIN_END();
}
