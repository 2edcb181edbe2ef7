/* float16 / bfloat16 conversions. Rounding goes from double straight to the
 * 16-bit format, never through float32 first: two roundings in a row can
 * land on the wrong side of a tie (a float64 Cast to float16 must round
 * once, as the ONNX backend tests check). */
#include "core/half.h"

#include <math.h>
#include <string.h>

/* A finite, non-zero magnitude a as an integer significand m (with the
 * implicit bit) at exponent e, m * 2^e, rounded to `bits` significand bits
 * for normal numbers and to a multiple of 2^emin_sub below the normal range.
 * Returns the format's bits without the sign (exponent field, mantissa),
 * which a carry from rounding moves into the next binade on its own. */
static uint32_t encode(double a, int mant_bits, int bias, int max_exp_field) {
    int e2;
    (void)frexp(a, &e2);          /* a = f * 2^e2, f in [0.5, 1) */
    int e = e2 - 1;               /* a in [2^e, 2^(e+1)) */
    int emin = 1 - bias;          /* smallest normal exponent */
    if (e < emin) {               /* subnormal: units of 2^(emin - mant_bits) */
        double m = nearbyint(ldexp(a, mant_bits - emin)); /* exact scaling, rounds to even */
        return (uint32_t)m;       /* m == 2^mant_bits is the smallest normal: right */
    }
    double m = nearbyint(ldexp(a, mant_bits - e)); /* in [2^mant_bits, 2^(mant_bits+1)] */
    uint32_t bitsv = (uint32_t)(e + bias) << mant_bits;
    bitsv += (uint32_t)m - ((uint32_t)1 << mant_bits); /* a carry bumps the exponent */
    uint32_t inf = (uint32_t)max_exp_field << mant_bits;
    return bitsv >= inf ? inf : bitsv;
}

uint16_t korch_f16_from_f64(double v) {
    uint16_t sign = signbit(v) ? 0x8000 : 0;
    if (isnan(v)) return sign | 0x7e00;
    double a = fabs(v);
    if (a == 0) return sign;
    if (a >= 65520.0) return sign | 0x7c00; /* halfway past 65504 and beyond: inf */
    return sign | (uint16_t)encode(a, 10, 15, 31);
}

uint16_t korch_bf16_from_f64(double v) {
    uint16_t sign = signbit(v) ? 0x8000 : 0;
    if (isnan(v)) return sign | 0x7fc0;
    double a = fabs(v);
    if (a == 0) return sign;
    if (a >= ldexp(2.0 - ldexp(1.0, -8), 127)) return sign | 0x7f80; /* the tie above the largest */
    return sign | (uint16_t)encode(a, 7, 127, 255);
}

float korch_f16_to_f32(uint16_t h) {
    uint32_t sign = (uint32_t)(h & 0x8000) << 16, exp = (h >> 10) & 0x1f, mant = h & 0x3ff, x;
    if (exp == 0) {
        float f = ldexpf((float)mant, -24);
        return sign ? -f : f;
    }
    if (exp == 31) x = sign | 0x7f800000 | mant << 13;
    else x = sign | (exp - 15 + 127) << 23 | mant << 13;
    float f;
    memcpy(&f, &x, sizeof f);
    return f;
}

float korch_bf16_to_f32(uint16_t b) {
    uint32_t x = (uint32_t)b << 16;
    float f;
    memcpy(&f, &x, sizeof f);
    return f;
}

korch_status korch_half_convert(const korch_tensor *src, korch_dtype to, korch_tensor *dst) {
    bool widen = korch_dtype_is_half(src->dtype) && to == KORCH_DTYPE_FLOAT32;
    bool narrow = (src->dtype == KORCH_DTYPE_FLOAT32 || src->dtype == KORCH_DTYPE_FLOAT64) && korch_dtype_is_half(to);
    if (!widen && !narrow)
        return korch_error(KORCH_ERR_UNSUPPORTED, "cannot convert a %s tensor to %s here", korch_dtype_name(src->dtype),
                           korch_dtype_name(to));
    KORCH_TRY(korch_tensor_alloc(dst, to, &src->shape));
    int64_t n = korch_tensor_numel(src);
    for (int64_t i = 0; i < n; i++) {
        if (widen) ((float *)dst->data)[i] = korch_half_load(src->dtype, src->data, i);
        else korch_half_store(to, dst->data, i, korch_tensor_get_f64(src, i));
    }
    return KORCH_OK;
}
