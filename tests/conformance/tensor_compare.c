#include "tensor_compare.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

korch_tolerance korch_tolerance_for(korch_dtype dtype) {
    if (dtype == KORCH_DTYPE_FLOAT16) return (korch_tolerance){KORCH_CONFORMANCE_F16_ATOL, KORCH_CONFORMANCE_F16_RTOL};
    if (dtype == KORCH_DTYPE_BFLOAT16)
        return (korch_tolerance){KORCH_CONFORMANCE_BF16_ATOL, KORCH_CONFORMANCE_BF16_RTOL};
    return (korch_tolerance){KORCH_CONFORMANCE_ATOL, KORCH_CONFORMANCE_RTOL};
}

static double half_to_double(uint16_t h) {
    int sign = h >> 15, exponent = (h >> 10) & 0x1f, mantissa = h & 0x3ff;
    double v;
    if (exponent == 0) v = ldexp((double)mantissa, -24);
    else if (exponent == 31) v = mantissa ? NAN : INFINITY;
    else v = ldexp((double)(mantissa | 0x400), exponent - 25);
    return sign ? -v : v;
}

static bool is_float(korch_dtype d) {
    return d == KORCH_DTYPE_FLOAT32 || d == KORCH_DTYPE_FLOAT64 || d == KORCH_DTYPE_FLOAT16 ||
           d == KORCH_DTYPE_BFLOAT16;
}

static double float_at(const korch_tensor *t, int64_t i) {
    switch (t->dtype) {
    case KORCH_DTYPE_FLOAT32: return ((const float *)t->data)[i];
    case KORCH_DTYPE_FLOAT64: return ((const double *)t->data)[i];
    case KORCH_DTYPE_BFLOAT16: { /* the top half of a float32 */
        uint32_t x = (uint32_t)((const uint16_t *)t->data)[i] << 16;
        float f;
        memcpy(&f, &x, sizeof f);
        return f;
    }
    default: return half_to_double(((const uint16_t *)t->data)[i]);
    }
}

static bool float_matches(double got, double want, korch_tolerance tol) {
    if (isnan(want) || isnan(got)) return isnan(want) && isnan(got);
    if (isinf(want) || isinf(got)) return got == want;
    return fabs(got - want) <= tol.atol + tol.rtol * fabs(want);
}

/* Writes "[i,j,k]" for flat index `flat` of `shape`. */
static void format_index(const korch_shape *shape, int64_t flat, char *buf, size_t size) {
    int64_t idx[KORCH_MAX_RANK];
    for (int d = shape->rank - 1; d >= 0; d--) {
        int64_t dim = shape->dims[d] ? shape->dims[d] : 1;
        idx[d] = flat % dim;
        flat /= dim;
    }
    size_t used = (size_t)snprintf(buf, size, "[");
    for (int d = 0; d < shape->rank && used < size; d++)
        used += (size_t)snprintf(buf + used, size - used, d ? ",%lld" : "%lld", (long long)idx[d]);
    if (used < size) snprintf(buf + used, size - used, "]");
}

static bool compare_floats(const korch_tensor *got, const korch_tensor *want, int64_t n, char *why, size_t size) {
    korch_tolerance tol = korch_tolerance_for(want->dtype);
    int64_t bad = 0, worst = -1;
    double worst_excess = -1.0;
    for (int64_t i = 0; i < n; i++) {
        double a = float_at(got, i), b = float_at(want, i);
        if (float_matches(a, b, tol)) continue;
        bad++;
        /* NaN/inf mismatches rank above any finite excess */
        double excess = isfinite(a) && isfinite(b) ? fabs(a - b) - (tol.atol + tol.rtol * fabs(b)) : INFINITY;
        if (worst < 0 || excess > worst_excess) {
            worst = i;
            worst_excess = excess;
        }
    }
    if (!bad) return true;
    char where[160];
    format_index(&want->shape, worst, where, sizeof where);
    double a = float_at(got, worst), b = float_at(want, worst);
    snprintf(why, size, "%lld of %lld elements differ; worst at %s: got %.9g, want %.9g (|diff| %.3g > %.3g)",
             (long long)bad, (long long)n, where, a, b, fabs(a - b), tol.atol + tol.rtol * fabs(b));
    return false;
}

static bool compare_exact(const korch_tensor *got, const korch_tensor *want, int64_t n, char *why, size_t size) {
    size_t esize = korch_dtype_size(want->dtype);
    int64_t bad = 0, first = -1;
    for (int64_t i = 0; i < n; i++) {
        if (memcmp((const char *)got->data + i * esize, (const char *)want->data + i * esize, esize) == 0) continue;
        if (first < 0) first = i;
        bad++;
    }
    if (!bad) return true;
    char where[160];
    format_index(&want->shape, first, where, sizeof where);
    if (want->dtype == KORCH_DTYPE_UINT64)
        snprintf(why, size, "%lld of %lld elements differ; first at %s: got %llu, want %llu", (long long)bad,
                 (long long)n, where, (unsigned long long)((const uint64_t *)got->data)[first],
                 (unsigned long long)((const uint64_t *)want->data)[first]);
    else
        snprintf(why, size, "%lld of %lld elements differ; first at %s: got %lld, want %lld", (long long)bad,
                 (long long)n, where, (long long)korch_tensor_get_i64(got, first),
                 (long long)korch_tensor_get_i64(want, first));
    return false;
}

bool korch_tensor_compare(const korch_tensor *got, const korch_tensor *want, char *why, size_t why_size) {
    char a[128], b[128];
    if (got->dtype != want->dtype) {
        snprintf(why, why_size, "dtype %s, want %s", korch_dtype_name(got->dtype), korch_dtype_name(want->dtype));
        return false;
    }
    if (!korch_shape_equal(&got->shape, &want->shape)) {
        snprintf(why, why_size, "shape %s, want %s", korch_shape_format(&got->shape, a, sizeof a),
                 korch_shape_format(&want->shape, b, sizeof b));
        return false;
    }
    int64_t n = korch_shape_numel(&want->shape);
    if (n < 0 || korch_dtype_size(want->dtype) == 0) {
        snprintf(why, why_size, "cannot compare dtype %s", korch_dtype_name(want->dtype));
        return false;
    }
    if (n == 0) return true;
    if (!got->data || !want->data) {
        snprintf(why, why_size, "tensor has no data");
        return false;
    }
    if (is_float(want->dtype)) return compare_floats(got, want, n, why, why_size);
    return compare_exact(got, want, n, why, why_size);
}
