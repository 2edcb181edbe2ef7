/* Seeded data for verification, and the perturbation that measures how
 * sensitive a reference value is to rounding of its inputs. */
#include <math.h>
#include <string.h>

#include "verify/verify.h"

static uint64_t next(uint64_t *s) {
    *s = *s * 6364136223846793005ull + 1442695040888963407ull;
    return *s >> 11;
}

static double unit(uint64_t *s) { return (double)next(s) / 9007199254740992.0; /* [0, 1) */ }

void korch_verify_fill(korch_tensor *t, uint64_t seed) {
    int64_t n = korch_tensor_numel(t);
    uint64_t s = 0x9E3779B97F4A7C15ull ^ seed;
    for (int64_t i = 0; i < n; i++) {
        double u = unit(&s);
        switch (t->dtype) {
        case KORCH_DTYPE_FLOAT32: ((float *)t->data)[i] = (float)(u * 2.0 - 1.0); break;
        case KORCH_DTYPE_FLOAT64: ((double *)t->data)[i] = u * 2.0 - 1.0; break;
        case KORCH_DTYPE_INT64: ((int64_t *)t->data)[i] = (int64_t)(u * 100); break;
        case KORCH_DTYPE_INT32: ((int32_t *)t->data)[i] = (int32_t)(u * 100); break;
        case KORCH_DTYPE_INT8: ((int8_t *)t->data)[i] = (int8_t)(u * 100); break;
        case KORCH_DTYPE_UINT8: ((uint8_t *)t->data)[i] = (uint8_t)(u * 100); break;
        case KORCH_DTYPE_BOOL: ((uint8_t *)t->data)[i] = u < 0.5; break;
        default: break; /* other dtypes keep their (zeroed) bytes */
        }
    }
}

void korch_verify_perturb(korch_tensor *t, uint64_t seed) {
    int64_t n = korch_tensor_numel(t);
    uint64_t s = 0xD1B54A32D192ED03ull ^ seed;
    const double eps = ldexp(1.0, -20);
    for (int64_t i = 0; i < n; i++) {
        double f = next(&s) & 1 ? 1.0 + eps : 1.0 - eps;
        if (t->dtype == KORCH_DTYPE_FLOAT32) ((float *)t->data)[i] = (float)(((float *)t->data)[i] * f);
        else if (t->dtype == KORCH_DTYPE_FLOAT64) ((double *)t->data)[i] *= f;
        else return;
    }
}
