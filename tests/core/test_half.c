/* float16 / bfloat16 conversions (core/half.c): every float16 value round
 * trips, ties go to even, overflow goes to infinity, subnormals are kept, a
 * float64 is rounded once (not through float32), NaN stays NaN. */
#include <math.h>
#include <string.h>

#include "core/half.h"
#include "test.h"

static float bits_f32(uint32_t x) {
    float f;
    memcpy(&f, &x, sizeof f);
    return f;
}

int main(void) {
    /* every float16 bit pattern widens and rounds back to itself */
    for (uint32_t h = 0; h < 0x10000; h++) {
        float f = korch_f16_to_f32((uint16_t)h);
        bool nan = ((h >> 10) & 0x1f) == 0x1f && (h & 0x3ff);
        if (nan) {
            CHECK(isnan(f));
            CHECK((korch_f16_from_f64(f) & 0x7fff) == 0x7e00);
        } else {
            CHECK(korch_f16_from_f64(f) == h);
        }
    }
    /* every bfloat16 bit pattern likewise */
    for (uint32_t b = 0; b < 0x10000; b++) {
        float f = korch_bf16_to_f32((uint16_t)b);
        if (isnan(f)) CHECK((korch_bf16_from_f64(f) & 0x7fff) == 0x7fc0);
        else CHECK(korch_bf16_from_f64(f) == b);
    }
    /* float16 ties to even, around 1 (one step is 2^-10) */
    CHECK(korch_f16_from_f64(1.0 + ldexp(1, -11)) == 0x3c00);
    CHECK(korch_f16_from_f64(1.0 + 3 * ldexp(1, -11)) == 0x3c02);
    CHECK(korch_f16_from_f64(1.0 + ldexp(1, -11) + ldexp(1, -30)) == 0x3c01);
    /* once from double: through float32 the 2^-40 would vanish onto the tie */
    CHECK(korch_f16_from_f64(1.0 + ldexp(1, -11) + ldexp(1, -40)) == 0x3c01);
    CHECK(korch_f16_from_f64(-(1.0 + ldexp(1, -11) + ldexp(1, -40))) == 0xbc01);
    /* the top of the range: 65504 is the largest, 65520 the tie to infinity */
    CHECK(korch_f16_from_f64(65504.0) == 0x7bff);
    CHECK(korch_f16_from_f64(65519.99) == 0x7bff);
    CHECK(korch_f16_from_f64(65520.0) == 0x7c00);
    CHECK(korch_f16_from_f64(-1e10) == 0xfc00);
    CHECK(korch_f16_from_f64(INFINITY) == 0x7c00 && korch_f16_from_f64(-INFINITY) == 0xfc00);
    /* carries: 2047.5 rounds to 2048 (the next binade), 0x3bff + half a step to 1.0 */
    CHECK(korch_f16_from_f64(2047.5) == 0x6800);
    CHECK(korch_f16_from_f64(1.0 - ldexp(1, -12)) == 0x3c00);
    /* subnormals: units of 2^-24 */
    CHECK(korch_f16_from_f64(ldexp(1, -24)) == 0x0001);
    CHECK(korch_f16_from_f64(ldexp(1, -25)) == 0x0000);           /* tie: to even (zero) */
    CHECK(korch_f16_from_f64(ldexp(1, -25) * 1.0001) == 0x0001);
    CHECK(korch_f16_from_f64(3 * ldexp(1, -25)) == 0x0002);       /* tie: to even (2) */
    CHECK(korch_f16_from_f64(ldexp(1023, -24)) == 0x03ff);
    CHECK(korch_f16_from_f64(ldexp(1023.5, -24)) == 0x0400);      /* rounds up to the smallest normal */
    CHECK(korch_f16_from_f64(-0.0) == 0x8000 && korch_f16_from_f64(1e-30) == 0x0000);
    CHECK(korch_f16_to_f32(0x0001) == ldexpf(1, -24) && korch_f16_to_f32(0x8001) == -ldexpf(1, -24));
    CHECK(isnan(korch_f16_to_f32(0x7e00)) && korch_f16_to_f32(0xfc00) == -INFINITY);
    CHECK((korch_f16_from_f64(NAN) & 0x7fff) == 0x7e00);
    /* bfloat16: one step at 1 is 2^-7 */
    CHECK(korch_bf16_from_f64(1.0 + ldexp(1, -8)) == 0x3f80);
    CHECK(korch_bf16_from_f64(1.0 + 3 * ldexp(1, -8)) == 0x3f82);
    CHECK(korch_bf16_from_f64(1.0 + ldexp(1, -8) + ldexp(1, -40)) == 0x3f81);
    CHECK(korch_bf16_from_f64(3.0e38) == 0x7f62);
    CHECK(korch_bf16_from_f64(3.4e38) == 0x7f80);                  /* past the tie above the largest */
    CHECK(korch_bf16_from_f64(bits_f32(0x7f7f7fff)) == 0x7f7f);
    CHECK(korch_bf16_from_f64(bits_f32(0x00008000)) == 0x0000);    /* subnormal tie to even */
    CHECK(korch_bf16_from_f64(bits_f32(0x00018000)) == 0x0002);
    CHECK(korch_bf16_from_f64(bits_f32(0x00010001)) == 0x0001);
    CHECK((korch_bf16_from_f64(-NAN) & 0x7fff) == 0x7fc0);
    CHECK(korch_bf16_to_f32(0xbf80) == -1.0f);
    /* float32 argument, bit-pattern rounding (what generated code does) agrees */
    for (uint32_t x = 0; x < 0xffffffffu - 9973; x += 9973) {
        float f = bits_f32(x);
        if (isnan(f)) continue;
        uint16_t r = (uint16_t)((x + 0x7fffu + ((x >> 16) & 1u)) >> 16);
        CHECK(korch_bf16_from_f64(f) == r);
    }
    /* tensors */
    korch_tensor src = {.dtype = KORCH_DTYPE_FLOAT32, .shape = {.rank = 1, .dims = {3}}}, h, back;
    float vals[3] = {1.0f + 0x1p-11f, -2.5f, 70000.0f};
    src.data = vals;
    CHECK_OK(korch_half_convert(&src, KORCH_DTYPE_FLOAT16, &h));
    CHECK(((uint16_t *)h.data)[0] == 0x3c00 && ((uint16_t *)h.data)[2] == 0x7c00);
    CHECK_OK(korch_half_convert(&h, KORCH_DTYPE_FLOAT32, &back));
    CHECK(((float *)back.data)[1] == -2.5f && isinf(((float *)back.data)[2]));
    CHECK(korch_tensor_get_f64(&h, 1) == -2.5);
    korch_tensor bad;
    CHECK(korch_half_convert(&h, KORCH_DTYPE_INT32, &bad) == KORCH_ERR_UNSUPPORTED);
    korch_tensor_free(&h);
    korch_tensor_free(&back);
    CHECK(korch_dtype_size(KORCH_DTYPE_BFLOAT16) == 2 && strcmp(korch_dtype_name(KORCH_DTYPE_BFLOAT16), "bfloat16") == 0);
    TEST_MAIN_END();
}
