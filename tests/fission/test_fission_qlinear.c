/* QLinearConv and QLinearMatMul in primitives (src/fission/rules_quant.c;
 * docs/quantization.md, "QOperator models"): the integer convolution or
 * matmul of ConvInteger's and MatMulInteger's rules, the int32 bias, then
 * the reference kernel's float32 requantization step for step
 * (saturate(rint(float(acc) * (x_scale * w_scale / y_scale)) + y_zp)).
 *
 * Against the reference executor through fh_check, exactly (the outputs are
 * 8-bit): raw and cleaned graphs interpreted, the cleaned graph exported to
 * ONNX and run; then the layout pass, which must make the integer
 * convolutions reading an 8-bit source channels-last, and the same checks
 * on its graph. Scales are chosen so that part of every output saturates
 * at both ends of its type. Cases:
 *  - uint8 and int8 sources and outputs, per-tensor and per-channel weight
 *    scales and zero points, with and without the int32 bias;
 *  - padding with a constant source zero point (the explicit pad), without
 *    padding (a per-channel correction), a zero point computed at run time
 *    with padding (the constant map; stays channels-first), strides,
 *    groups, depthwise, uint8 weights outside int8 (the split);
 *  - QLinearMatMul per tensor, per row of A and per column of B, batched.
 * And the form: no opaque primitive left. */
#include <stdio.h>

#include "fission_harness.h"

static void const_8bit(korch_graph *g, const char *name, korch_dtype dt, int rank, const int64_t *dims, int lo,
                       int hi) {
    korch_tensor t;
    korch_shape s = korch_shape_make(rank, dims);
    if (korch_tensor_alloc(&t, dt, &s) != KORCH_OK) abort();
    for (int64_t i = 0; i < korch_tensor_numel(&t); i++) {
        int v = (int)fh_int(lo, hi);
        if (dt == KORCH_DTYPE_UINT8) ((uint8_t *)t.data)[i] = (uint8_t)v;
        else ((int8_t *)t.data)[i] = (int8_t)v;
    }
    fh_const(g, name, &t);
}

static void const_scale(korch_graph *g, const char *name, int64_t n, float lo, float hi) {
    float v[64];
    for (int64_t i = 0; i < n; i++) v[i] = lo + (hi - lo) * (float)fh_uniform();
    if (n == 1) fh_const_f32(g, name, 0, NULL, v);
    else fh_const_f32(g, name, 1, (int64_t[]){n}, v);
}

static void const_bias(korch_graph *g, int64_t m) {
    korch_tensor t;
    korch_shape s = korch_shape_make(1, (int64_t[]){m});
    if (korch_tensor_alloc(&t, KORCH_DTYPE_INT32, &s) != KORCH_OK) abort();
    for (int64_t i = 0; i < m; i++) ((int32_t *)t.data)[i] = (int32_t)fh_int(-20000, 20000);
    fh_const(g, "B", &t);
}

static int8_t zero_point(korch_dtype dt) { return dt == KORCH_DTYPE_UINT8 ? (int8_t)fh_int(100, 150) : (int8_t)fh_int(-20, 20); }

static void scalar_8bit(korch_graph *g, const char *name, korch_dtype dt, int v) {
    korch_tensor t;
    korch_shape s0 = {.rank = 0};
    if (korch_tensor_alloc(&t, dt, &s0) != KORCH_OK) abort();
    if (dt == KORCH_DTYPE_UINT8) *(uint8_t *)t.data = (uint8_t)v;
    else *(int8_t *)t.data = (int8_t)v;
    fh_const(g, name, &t);
}

typedef struct conv_case {
    const char *label;
    korch_dtype tx, tw, ty;
    int64_t C, M, k, group, pad, stride;
    bool per_channel, bias, zx_input, w_zp;
    int channels_last; /* convolutions the layout pass must rewrite */
} conv_case;

static void conv(const conv_case *c) {
    korch_graph *g = fh_begin(13);
    fh_input(g, "x", c->tx, 4, (int64_t[]){1, c->C, 9, 11});
    const_scale(g, "xs", 1, 0.04f, 0.06f);
    if (c->zx_input) fh_input(g, "xz", c->tx, 0, NULL);
    else scalar_8bit(g, "xz", c->tx, c->tx == KORCH_DTYPE_UINT8 ? (int)fh_int(90, 160) : (int)fh_int(-30, 30));
    int64_t wd[4] = {c->M, c->C / c->group, c->k, c->k};
    if (c->tw == KORCH_DTYPE_UINT8) const_8bit(g, "W", c->tw, 4, wd, 0, 255);
    else const_8bit(g, "W", c->tw, 4, wd, -128, 127);
    int64_t nw = c->per_channel ? c->M : 1;
    const_scale(g, "ws", nw, 0.02f, 0.04f);
    if (c->w_zp) const_8bit(g, "wz", c->tw, nw == 1 ? 0 : 1, (int64_t[]){nw}, c->tw == KORCH_DTYPE_UINT8 ? 120 : -3,
                            c->tw == KORCH_DTYPE_UINT8 ? 135 : 3);
    else const_8bit(g, "wz", c->tw, nw == 1 ? 0 : 1, (int64_t[]){nw}, 0, 0);
    /* acc reaches about 128 * 64 * sqrt(C k k); the multiplier puts the
     * typical value near 100, so both ends of the type saturate */
    const_scale(g, "ys", 1, 0.4f, 0.6f);
    scalar_8bit(g, "yz", c->ty, zero_point(c->ty));
    if (c->bias) const_bias(g, c->M);
    int n = fh_node(g, "QLinearConv", c->bias ? "x,xs,xz,W,ws,wz,ys,yz,B" : "x,xs,xz,W,ws,wz,ys,yz", "y");
    fh_attr_ints(g, n, "pads", 4, (int64_t[]){c->pad, c->pad, c->pad, c->pad});
    fh_attr_ints(g, n, "strides", 2, (int64_t[]){c->stride, c->stride});
    fh_attr_int(g, n, "group", c->group);
    fh_output(g, "y");
    fh_check(g, &(fh_options){.seed = 23, .channels_last = c->channels_last}, c->label);
}

typedef struct mm_case {
    const char *label;
    korch_dtype ta, tb, ty;
    int rank;
    int64_t a[3];
    int64_t n;
    bool per_row, per_col;
} mm_case;

static void matmul(const mm_case *c) {
    korch_graph *g = fh_begin(13);
    fh_input(g, "a", c->ta, c->rank, c->a);
    int64_t m = c->a[c->rank - 2], k = c->a[c->rank - 1];
    const_scale(g, "as", c->per_row ? m : 1, 0.04f, 0.06f);
    if (c->per_row) const_8bit(g, "az", c->ta, 1, (int64_t[]){m}, c->ta == KORCH_DTYPE_UINT8 ? 100 : -20,
                               c->ta == KORCH_DTYPE_UINT8 ? 150 : 20);
    else scalar_8bit(g, "az", c->ta, c->ta == KORCH_DTYPE_UINT8 ? 128 : 3);
    if (c->tb == KORCH_DTYPE_UINT8) const_8bit(g, "b", c->tb, 2, (int64_t[]){k, c->n}, 0, 255);
    else const_8bit(g, "b", c->tb, 2, (int64_t[]){k, c->n}, -128, 127);
    const_scale(g, "bs", c->per_col ? c->n : 1, 0.02f, 0.04f);
    if (c->per_col) const_8bit(g, "bz", c->tb, 1, (int64_t[]){c->n}, c->tb == KORCH_DTYPE_UINT8 ? 120 : -3,
                               c->tb == KORCH_DTYPE_UINT8 ? 135 : 3);
    else scalar_8bit(g, "bz", c->tb, c->tb == KORCH_DTYPE_UINT8 ? 128 : 0);
    const_scale(g, "ys", 1, 0.15f, 0.25f);
    scalar_8bit(g, "yz", c->ty, zero_point(c->ty));
    fh_node(g, "QLinearMatMul", "a,as,az,b,bs,bz,ys,yz", "y");
    fh_output(g, "y");
    fh_check(g, &(fh_options){.seed = 29}, c->label);
}

int main(void) {
    const korch_dtype U8 = KORCH_DTYPE_UINT8, S8 = KORCH_DTYPE_INT8;
    const conv_case convs[] = {
        {"QLinearConv u8 x s8 -> u8, per-channel scale, bias, pad 1 (explicit pad with the zero point)", U8, S8, U8, 6,
         5, 3, 1, 1, 1, true, true, false, false, 1},
        {"QLinearConv s8 x s8 -> s8, per-tensor, no bias, no padding, stride 2 (per-channel correction)", S8, S8, S8, 4,
         7, 3, 1, 0, 2, false, false, false, false, 1},
        {"QLinearConv u8 x s8 -> u8, depthwise 3x3, pad 1, bias", U8, S8, U8, 8, 8, 3, 8, 1, 1, true, true, false, false,
         1},
        {"QLinearConv u8 x s8 -> u8, 2 groups, 1x1", U8, S8, U8, 8, 6, 1, 2, 0, 1, true, true, false, false, 1},
        {"QLinearConv u8 x u8 (zero point outside int8: split) -> u8, pad 1", U8, U8, U8, 6, 4, 3, 1, 1, 1, true, true,
         false, true, 2},
        {"QLinearConv u8 x s8 -> u8, the source zero point an input, pad 1 (the constant map; channels-first)", U8, S8,
         U8, 5, 4, 3, 1, 1, 1, false, true, true, false, 1},
    };
    fh_seed(5);
    for (size_t i = 0; i < sizeof convs / sizeof convs[0]; i++) conv(&convs[i]);
    const mm_case mms[] = {
        {"QLinearMatMul u8 x s8 -> u8, per tensor", U8, S8, U8, 2, {5, 24}, 7, false, false},
        {"QLinearMatMul u8 x s8 -> s8, per row of A, per column of B", U8, S8, S8, 2, {6, 40}, 9, true, true},
        {"QLinearMatMul s8 x u8 -> u8, batched A [2,3,16], per column of B (split)", S8, U8, U8, 3, {2, 3, 16}, 5,
         false, true},
    };
    for (size_t i = 0; i < sizeof mms / sizeof mms[0]; i++) matmul(&mms[i]);
    printf("%d graphs checked\n", fh_checked);
    TEST_MAIN_END();
}
