/* Elementwise ops: the merged broadcast loop against naive index arithmetic
 * over many shape pairs, legacy (opset < 7) broadcasting, integer edge cases,
 * Pow with mixed dtypes, variadic Max/Min/Sum/Mean, Where, comparisons, PRelu. */
#include <stdint.h>

#include "op_harness.h"
#include "test.h"

/* Element of `in` (shape sin) that output index `o` (shape sout) reads under numpy broadcasting. */
static int64_t naive_offset(const korch_shape *sin, const korch_shape *sout, int64_t o) {
    int64_t off = 0, stride = 1;
    for (int d = sout->rank - 1; d >= 0; d--) {
        int64_t idx = o % sout->dims[d];
        o /= sout->dims[d];
        int di = sin->rank - sout->rank + d;
        if (di < 0) continue;
        if (sin->dims[di] != 1) off += idx * stride;
        stride *= sin->dims[di];
    }
    return off;
}

static uint64_t rng = 88172645463325252ull;
static uint64_t next_rand(void) {
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return rng;
}

/* Random shape pairs (dims of 1 broadcast, ranks differ), A - B via Sub
 * (order matters, so a swapped operand would show). */
static void check_broadcast_property(void) {
    static float a[4096], b[4096];
    for (int i = 0; i < 4096; i++) a[i] = (float)i, b[i] = (float)(i % 97) * 0.5f;
    for (int trial = 0; trial < 300; trial++) {
        korch_shape out = {.rank = 1 + (int)(next_rand() % 5)}, sa = {0}, sb = {0};
        for (int d = 0; d < out.rank; d++) out.dims[d] = 1 + (int64_t)(next_rand() % 4);
        sa.rank = out.rank - (int)(next_rand() % 2);
        sb.rank = out.rank - (int)(next_rand() % (out.rank + 1));
        for (int d = 0; d < sa.rank; d++) sa.dims[d] = next_rand() % 3 ? out.dims[out.rank - sa.rank + d] : 1;
        for (int d = 0; d < sb.rank; d++) sb.dims[d] = next_rand() % 3 ? out.dims[out.rank - sb.rank + d] : 1;
        korch_shape expect;
        if (!korch_shape_broadcast(&sa, &sb, &expect)) continue;
        h_input ins[2] = {h_tensor(KORCH_DTYPE_FLOAT32, sa.rank, sa.dims, a),
                          h_tensor(KORCH_DTYPE_FLOAT32, sb.rank, sb.dims, b)};
        korch_tensor y;
        CHECK_OK(h_run1("Sub", 14, NULL, 0, ins, 2, &y));
        CHECK(korch_shape_equal(&y.shape, &expect));
        int64_t n = korch_shape_numel(&expect);
        int bad = 0;
        for (int64_t o = 0; o < n && y.data; o++) {
            float want = a[naive_offset(&sa, &expect, o)] - b[naive_offset(&sb, &expect, o)];
            if (((float *)y.data)[o] != want) bad++;
        }
        CHECK_MSG(bad == 0, "trial %d: %d wrong elements", trial, bad);
        korch_tensor_free(&y);
    }
}

/* A long row (split between threads) plus a per-channel operand. */
static void check_large(void) {
    enum { C = 3, HW = 50000 };
    float *x = malloc(sizeof(float) * C * HW), bias[C] = {1, 2, 3};
    for (int i = 0; i < C * HW; i++) x[i] = (float)(i % 1000);
    int64_t dx[3] = {C, 1, HW}, db[3] = {C, 1, 1};
    h_input ins[2] = {h_tensor(KORCH_DTYPE_FLOAT32, 3, dx, x), h_tensor(KORCH_DTYPE_FLOAT32, 3, db, bias)};
    korch_tensor y;
    CHECK_OK(h_run1("Mul", 14, NULL, 0, ins, 2, &y));
    int bad = 0;
    for (int i = 0; i < C * HW && y.data; i++)
        if (((float *)y.data)[i] != x[i] * bias[i / HW]) bad++;
    CHECK(bad == 0);
    korch_tensor_free(&y);
    free(x);
}

static void check_legacy_broadcast(void) {
    float a[2 * 3 * 2], b[3] = {10, 20, 30};
    for (int i = 0; i < 12; i++) a[i] = (float)i;
    int64_t da[3] = {2, 3, 2}, db[1] = {3};
    h_input ins[2] = {h_tensor(KORCH_DTYPE_FLOAT32, 3, da, a), h_tensor(KORCH_DTYPE_FLOAT32, 1, db, b)};
    korch_tensor y;
    /* opset 6, broadcast=1, axis=1: B lines up with A's dim 1 (numpy would refuse 3 vs 2) */
    h_attr attrs[2] = {H_INT("broadcast", 1), H_INT("axis", 1)};
    CHECK_OK(h_run1("Add", 6, attrs, 2, ins, 2, &y));
    CHECK(h_shape_is(&y, 3, da));
    double want[12];
    for (int i = 0; i < 12; i++) want[i] = a[i] + b[(i / 2) % 3];
    CHECK(h_close_f32(y.data, want, 12));
    korch_tensor_free(&y);
    /* without broadcast=1 the shapes must match */
    CHECK(h_run1("Add", 6, NULL, 0, ins, 2, &y) == KORCH_ERR_SHAPE);
    CHECK(strstr(korch_last_error(), "broadcast") != NULL);
    /* from opset 7, numpy rules: [2,3,2] + [3] does not broadcast */
    CHECK(h_run1("Add", 7, NULL, 0, ins, 2, &y) == KORCH_ERR_SHAPE);
    /* suffix matching when axis is absent: B [3, 2] against A [2, 3, 2] */
    float b2[6] = {1, 2, 3, 4, 5, 6};
    int64_t db2[2] = {3, 2};
    h_input ins2[2] = {ins[0], h_tensor(KORCH_DTYPE_FLOAT32, 2, db2, b2)};
    h_attr bc = H_INT("broadcast", 1);
    CHECK_OK(h_run1("Mul", 1, &bc, 1, ins2, 2, &y));
    for (int i = 0; i < 12; i++) want[i] = a[i] * b2[i % 6];
    CHECK(h_close_f32(y.data, want, 12));
    korch_tensor_free(&y);
    /* an axis that pushes B past A's end */
    h_attr far[2] = {H_INT("broadcast", 1), H_INT("axis", 2)};
    CHECK(h_run1("Add", 6, far, 2, ins, 2, &y) == KORCH_ERR_SHAPE);
}

static void check_integers(void) {
    int64_t a[4] = {INT64_MIN, 7, -7, 5}, b[4] = {-1, 0, 2, -2};
    int64_t d4[1] = {4};
    h_input ins[2] = {h_tensor(KORCH_DTYPE_INT64, 1, d4, a), h_tensor(KORCH_DTYPE_INT64, 1, d4, b)};
    korch_tensor y;
    /* INT64_MIN / -1 wraps, x / 0 is 0, division truncates toward zero */
    CHECK_OK(h_run1("Div", 14, NULL, 0, ins, 2, &y));
    int64_t *q = y.data;
    CHECK(q && q[0] == INT64_MIN && q[1] == 0 && q[2] == -3 && q[3] == -2);
    korch_tensor_free(&y);
    /* overflow wraps (no UB under the sanitizer build) */
    CHECK_OK(h_run1("Sub", 14, NULL, 0, ins, 2, &y));
    CHECK(((int64_t *)y.data)[0] == INT64_MIN + 1);
    korch_tensor_free(&y);
    CHECK_OK(h_run1("Neg", 13, NULL, 0, ins, 1, &y));
    CHECK(((int64_t *)y.data)[0] == INT64_MIN && ((int64_t *)y.data)[2] == 7);
    korch_tensor_free(&y);
    /* uint8 wraps modulo 256 */
    uint8_t u[2] = {3, 250}, v[2] = {5, 10};
    int64_t d2[1] = {2};
    h_input uins[2] = {h_tensor(KORCH_DTYPE_UINT8, 1, d2, u), h_tensor(KORCH_DTYPE_UINT8, 1, d2, v)};
    CHECK_OK(h_run1("Sub", 14, NULL, 0, uins, 2, &y));
    CHECK(((uint8_t *)y.data)[0] == 254 && ((uint8_t *)y.data)[1] == 240);
    korch_tensor_free(&y);
    CHECK_OK(h_run1("Add", 14, NULL, 0, uins, 2, &y));
    CHECK(((uint8_t *)y.data)[1] == 4);
    korch_tensor_free(&y);
    /* Mod: fmod=0 takes the divisor's sign, fmod=1 the dividend's; x mod 0 is 0, INT64_MIN mod -1 is 0 */
    int64_t ma[6] = {7, -7, 7, -7, 5, INT64_MIN}, mb[6] = {3, 3, -3, -3, 0, -1};
    int64_t d6[1] = {6};
    h_input mod[2] = {h_tensor(KORCH_DTYPE_INT64, 1, d6, ma), h_tensor(KORCH_DTYPE_INT64, 1, d6, mb)};
    CHECK_OK(h_run1("Mod", 13, NULL, 0, mod, 2, &y));
    int64_t python_mod[6] = {1, 2, -2, -1, 0, 0};
    CHECK(y.data && memcmp(y.data, python_mod, sizeof python_mod) == 0);
    korch_tensor_free(&y);
    h_attr fmod = H_INT("fmod", 1);
    CHECK_OK(h_run1("Mod", 13, &fmod, 1, mod, 2, &y));
    int64_t c_mod[6] = {1, -1, 1, -1, 0, 0};
    CHECK(y.data && memcmp(y.data, c_mod, sizeof c_mod) == 0);
    korch_tensor_free(&y);
    float fa[2] = {-7.5f, 7.5f}, fb[2] = {2, -2};
    h_input fmods[2] = {h_tensor(KORCH_DTYPE_FLOAT32, 1, d2, fa), h_tensor(KORCH_DTYPE_FLOAT32, 1, d2, fb)};
    CHECK_OK(h_run1("Mod", 13, &fmod, 1, fmods, 2, &y));
    CHECK(((float *)y.data)[0] == -1.5f && ((float *)y.data)[1] == 1.5f);
    korch_tensor_free(&y);
    CHECK(h_run1("Mod", 13, NULL, 0, fmods, 2, &y) == KORCH_ERR_INVALID_MODEL); /* floats need fmod=1 */
    /* mismatched dtypes and bool arithmetic are refused */
    h_input mixed[2] = {ins[0], uins[0]};
    CHECK(h_run1("Add", 14, NULL, 0, mixed, 2, &y) == KORCH_ERR_INVALID_MODEL);
    uint8_t t[2] = {1, 0};
    h_input bools[2] = {h_tensor(KORCH_DTYPE_BOOL, 1, d2, t), h_tensor(KORCH_DTYPE_BOOL, 1, d2, t)};
    CHECK(h_run1("Add", 14, NULL, 0, bools, 2, &y) == KORCH_ERR_UNSUPPORTED);
    CHECK(strstr(korch_last_error(), "bool") != NULL);
}

static void check_pow(void) {
    korch_tensor y;
    int64_t d3[1] = {3};
    /* int64 ^ int64 exactly: 3^39 does not fit a double's mantissa */
    int64_t base[3] = {3, -2, 2}, exps[3] = {39, 3, -1};
    h_input ii[2] = {h_tensor(KORCH_DTYPE_INT64, 1, d3, base), h_tensor(KORCH_DTYPE_INT64, 1, d3, exps)};
    CHECK_OK(h_run1("Pow", 15, NULL, 0, ii, 2, &y));
    int64_t p39 = 1;
    for (int i = 0; i < 39; i++) p39 *= 3;
    CHECK(((int64_t *)y.data)[0] == p39 && ((int64_t *)y.data)[1] == -8 && ((int64_t *)y.data)[2] == 0);
    korch_tensor_free(&y);
    /* float base, int32 exponent broadcast from a scalar */
    float fb[3] = {1.5f, -2, 0.5f};
    int32_t e2 = 3;
    h_input fi[2] = {h_tensor(KORCH_DTYPE_FLOAT32, 1, d3, fb), h_tensor(KORCH_DTYPE_INT32, 0, NULL, &e2)};
    CHECK_OK(h_run1("Pow", 15, NULL, 0, fi, 2, &y));
    double want[3] = {3.375, -8, 0.125};
    CHECK(y.dtype == KORCH_DTYPE_FLOAT32 && h_close_f32(y.data, want, 3));
    korch_tensor_free(&y);
    /* int base, float exponent: result keeps the base dtype */
    int32_t ib[3] = {4, 9, 2};
    float half[1] = {0.5f};
    int64_t d1[1] = {1};
    h_input ifl[2] = {h_tensor(KORCH_DTYPE_INT32, 1, d3, ib), h_tensor(KORCH_DTYPE_FLOAT32, 1, d1, half)};
    CHECK_OK(h_run1("Pow", 15, NULL, 0, ifl, 2, &y));
    CHECK(y.dtype == KORCH_DTYPE_INT32 && ((int32_t *)y.data)[0] == 2 && ((int32_t *)y.data)[1] == 3 &&
          ((int32_t *)y.data)[2] == 1);
    korch_tensor_free(&y);
}

static void check_variadic(void) {
    korch_tensor y;
    float s1 = 2, s2 = -1, v[3] = {1, 5, NAN};
    int64_t d1[1] = {1}, d3[1] = {3};
    h_input ins[3] = {h_tensor(KORCH_DTYPE_FLOAT32, 1, d1, &s1), h_tensor(KORCH_DTYPE_FLOAT32, 0, NULL, &s2),
                      h_tensor(KORCH_DTYPE_FLOAT32, 1, d3, v)};
    /* the first two inputs are scalars: the output shape comes from the third */
    CHECK_OK(h_run1("Max", 13, NULL, 0, ins, 3, &y));
    double want_max[3] = {2, 5, NAN};
    CHECK(h_shape_is(&y, 1, d3) && h_close_f32(y.data, want_max, 3));
    korch_tensor_free(&y);
    CHECK_OK(h_run1("Min", 13, NULL, 0, ins, 3, &y));
    double want_min[3] = {-1, -1, NAN};
    CHECK(h_close_f32(y.data, want_min, 3));
    korch_tensor_free(&y);
    CHECK_OK(h_run1("Sum", 13, NULL, 0, ins, 3, &y));
    double want_sum[3] = {2, 6, NAN};
    CHECK(h_close_f32(y.data, want_sum, 3));
    korch_tensor_free(&y);
    CHECK_OK(h_run1("Mean", 13, NULL, 0, ins, 3, &y));
    double want_mean[3] = {2.0 / 3, 2, NAN};
    CHECK(h_close_f32(y.data, want_mean, 3));
    korch_tensor_free(&y);
    /* one input: a copy */
    CHECK_OK(h_run1("Max", 13, NULL, 0, &ins[2], 1, &y));
    CHECK(y.data && ((float *)y.data)[0] == 1 && ((float *)y.data)[1] == 5 && isnan(((float *)y.data)[2]));
    korch_tensor_free(&y);
    /* shapes that do not broadcast name the input */
    float w[2] = {0, 0};
    int64_t d2[1] = {2};
    h_input bad[2] = {ins[2], h_tensor(KORCH_DTYPE_FLOAT32, 1, d2, w)};
    CHECK(h_run1("Sum", 13, NULL, 0, bad, 2, &y) == KORCH_ERR_SHAPE);
    CHECK(strstr(korch_last_error(), "x1") != NULL);
}

static void check_where_and_compare(void) {
    korch_tensor y;
    uint8_t cond[2] = {1, 0};
    int64_t xs[3] = {1, 2, 3}, ys[1] = {-9};
    int64_t dc[2] = {2, 1}, dx[1] = {3}, dy[1] = {1};
    h_input ins[3] = {h_tensor(KORCH_DTYPE_BOOL, 2, dc, cond), h_tensor(KORCH_DTYPE_INT64, 1, dx, xs),
                      h_tensor(KORCH_DTYPE_INT64, 1, dy, ys)};
    CHECK_OK(h_run1("Where", 16, NULL, 0, ins, 3, &y));
    int64_t d23[2] = {2, 3}, want[6] = {1, 2, 3, -9, -9, -9};
    CHECK(h_shape_is(&y, 2, d23));
    CHECK(y.data && memcmp(y.data, want, sizeof want) == 0);
    korch_tensor_free(&y);
    /* the condition must be bool */
    h_input notbool[3] = {ins[1], ins[1], ins[2]};
    CHECK(h_run1("Where", 16, NULL, 0, notbool, 3, &y) == KORCH_ERR_UNSUPPORTED);

    float a[3] = {1, NAN, 3}, b[1] = {2};
    int64_t d1[1] = {1};
    h_input ab[2] = {h_tensor(KORCH_DTYPE_FLOAT32, 1, dx, a), h_tensor(KORCH_DTYPE_FLOAT32, 1, d1, b)};
    struct {
        const char *op;
        uint8_t want[3];
    } cmp[] = {{"Less", {1, 0, 0}},        {"Greater", {0, 0, 1}}, {"Equal", {0, 0, 0}},
               {"LessOrEqual", {1, 0, 0}}, {"GreaterOrEqual", {0, 0, 1}}};
    for (size_t k = 0; k < sizeof cmp / sizeof cmp[0]; k++) {
        CHECK_OK(h_run1(cmp[k].op, 16, NULL, 0, ab, 2, &y));
        CHECK_MSG(y.dtype == KORCH_DTYPE_BOOL && y.data && memcmp(y.data, cmp[k].want, 3) == 0, "%s", cmp[k].op);
        korch_tensor_free(&y);
    }
    /* logic: non-zero bytes are true; outputs are 0/1 */
    uint8_t p[4] = {0, 0, 2, 1}, q[4] = {0, 7, 0, 1};
    int64_t d4[1] = {4};
    h_input pq[2] = {h_tensor(KORCH_DTYPE_BOOL, 1, d4, p), h_tensor(KORCH_DTYPE_BOOL, 1, d4, q)};
    uint8_t and_w[4] = {0, 0, 0, 1}, or_w[4] = {0, 1, 1, 1}, xor_w[4] = {0, 1, 1, 0}, not_w[4] = {1, 1, 0, 0};
    CHECK_OK(h_run1("And", 7, NULL, 0, pq, 2, &y));
    CHECK(memcmp(y.data, and_w, 4) == 0);
    korch_tensor_free(&y);
    CHECK_OK(h_run1("Or", 7, NULL, 0, pq, 2, &y));
    CHECK(memcmp(y.data, or_w, 4) == 0);
    korch_tensor_free(&y);
    CHECK_OK(h_run1("Xor", 7, NULL, 0, pq, 2, &y));
    CHECK(memcmp(y.data, xor_w, 4) == 0);
    korch_tensor_free(&y);
    CHECK_OK(h_run1("Equal", 13, NULL, 0, pq, 2, &y));
    uint8_t eq_w[4] = {1, 0, 0, 1};
    CHECK(memcmp(y.data, eq_w, 4) == 0);
    korch_tensor_free(&y);
    CHECK_OK(h_run1("Not", 1, NULL, 0, pq, 1, &y));
    CHECK(memcmp(y.data, not_w, 4) == 0);
    korch_tensor_free(&y);
    /* GreaterOrEqual did not exist before opset 12 */
    CHECK(h_run1("GreaterOrEqual", 11, NULL, 0, ab, 2, &y) == KORCH_ERR_UNSUPPORTED);
}

static void check_prelu(void) {
    korch_tensor y;
    float x[2 * 3 * 2], slope[3] = {0.1f, 0.2f, 0.3f};
    for (int i = 0; i < 12; i++) x[i] = (float)(i - 6);
    int64_t dx[3] = {2, 3, 2}, ds[2] = {3, 1}; /* one slope per channel of dim 1 */
    h_input ins[2] = {h_tensor(KORCH_DTYPE_FLOAT32, 3, dx, x), h_tensor(KORCH_DTYPE_FLOAT32, 2, ds, slope)};
    CHECK_OK(h_run1("PRelu", 16, NULL, 0, ins, 2, &y));
    double want[12];
    for (int i = 0; i < 12; i++) want[i] = x[i] < 0 ? x[i] * slope[(i / 2) % 3] : x[i];
    CHECK(h_close_f32(y.data, want, 12));
    korch_tensor_free(&y);
    /* opset 6: a 1-D slope of length C is per channel (dim 1), not numpy-aligned with the last dim */
    float x3[2 * 3 * 3];
    for (int i = 0; i < 18; i++) x3[i] = (float)(i % 5) - 3.0f;
    int64_t dx3[3] = {2, 3, 3}, dc[1] = {3};
    h_input legacy[2] = {h_tensor(KORCH_DTYPE_FLOAT32, 3, dx3, x3), h_tensor(KORCH_DTYPE_FLOAT32, 1, dc, slope)};
    CHECK_OK(h_run1("PRelu", 6, NULL, 0, legacy, 2, &y));
    double want3[18], numpy3[18];
    for (int i = 0; i < 18; i++) {
        want3[i] = x3[i] < 0 ? x3[i] * slope[(i / 3) % 3] : x3[i];
        numpy3[i] = x3[i] < 0 ? x3[i] * slope[i % 3] : x3[i];
    }
    CHECK(h_close_f32(y.data, want3, 18));
    korch_tensor_free(&y);
    CHECK_OK(h_run1("PRelu", 9, NULL, 0, legacy, 2, &y)); /* opset 9: numpy broadcasting */
    CHECK(h_close_f32(y.data, numpy3, 18));
    korch_tensor_free(&y);
    /* the slope may not grow the output */
    float big[24] = {0};
    int64_t dbig[4] = {2, 2, 3, 2};
    ins[1] = h_tensor(KORCH_DTYPE_FLOAT32, 4, dbig, big);
    CHECK(h_run1("PRelu", 16, NULL, 0, ins, 2, &y) == KORCH_ERR_SHAPE);
}

/* Zero-sized dims flow through every kind of kernel without touching memory. */
static void check_empty(void) {
    float dummy[4] = {1, 1, 1, 1};
    int64_t d0[3] = {2, 0, 3}, d1[1] = {3}, dc[1] = {0};
    h_input x = h_tensor(KORCH_DTYPE_FLOAT32, 3, d0, NULL), v = h_tensor(KORCH_DTYPE_FLOAT32, 1, d1, dummy);
    korch_tensor y;
    h_input add[2] = {x, v};
    CHECK_OK(h_run1("Add", 14, NULL, 0, add, 2, &y));
    CHECK(h_shape_is(&y, 3, d0));
    korch_tensor_free(&y);
    CHECK_OK(h_run1("Softmax", 13, NULL, 0, &x, 1, &y));
    korch_tensor_free(&y);
    h_attr axis1 = H_INT("axis", 1);
    CHECK_OK(h_run1("Softmax", 13, &axis1, 1, &x, 1, &y));
    korch_tensor_free(&y);
    /* reducing over the empty dim: Sum gives 0, Max gives -inf */
    int64_t axes[1] = {1}, d23[2] = {2, 3};
    h_attr red[2] = {H_INTS("axes", axes, 1), H_INT("keepdims", 0)};
    CHECK_OK(h_run1("ReduceSum", 11, red, 2, &x, 1, &y));
    CHECK(h_shape_is(&y, 2, d23) && ((float *)y.data)[5] == 0.0f);
    korch_tensor_free(&y);
    CHECK_OK(h_run1("ReduceMax", 11, red, 2, &x, 1, &y));
    CHECK(isinf(((float *)y.data)[0]) && ((float *)y.data)[0] < 0);
    korch_tensor_free(&y);
    h_input ln[2] = {x, v};
    CHECK_OK(h_run1("LayerNormalization", 17, NULL, 0, ln, 2, &y));
    korch_tensor_free(&y);
    int64_t dbn[3] = {0, 3, 2};
    h_input bn[5] = {h_tensor(KORCH_DTYPE_FLOAT32, 3, dbn, NULL), v, v, v, v};
    CHECK_OK(h_run1("BatchNormalization", 15, NULL, 0, bn, 5, &y));
    korch_tensor_free(&y);
    h_input zc[2] = {h_tensor(KORCH_DTYPE_FLOAT32, 1, dc, NULL), h_tensor(KORCH_DTYPE_FLOAT32, 1, dc, NULL)};
    CHECK_OK(h_run1("Max", 13, NULL, 0, zc, 2, &y));
    korch_tensor_free(&y);
}

int main(void) {
    check_empty();
    check_broadcast_property();
    check_large();
    check_legacy_broadcast();
    check_integers();
    check_pow();
    check_variadic();
    check_where_and_compare();
    check_prelu();
    TEST_MAIN_END();
}
