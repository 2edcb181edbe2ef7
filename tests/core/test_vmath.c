/* core/vmath.c, the references' vector transcendentals: every function in
 * both precisions against the scalar libm formula it replaces, over a sweep
 * of ordinary values (within a few ulp: glibc documents at most 4 for its
 * vector variants; the composites sigmoid, softplus and mish round a few
 * times more) and special values (NaN, infinities, signed zeros,
 * subnormals, overflow: exactly the scalar result's class and sign), and
 * the determinism vmath.h promises: the same bits whatever the split of the
 * range and in place. */
#include <math.h>
#include <stdbool.h>
#include <string.h>

#include "core/vmath.h"
#include "test.h"

static const char *NAMES[KORCH_VM_COUNT] = {"exp", "log", "tanh", "erf", "sigmoid", "softplus", "mish"};

static double scalar_f64(korch_vm_fn f, double a) {
    double sp = a > 0 ? a + log1p(exp(-a)) : log1p(exp(a));
    switch (f) {
    case KORCH_VM_EXP: return exp(a);
    case KORCH_VM_LOG: return log(a);
    case KORCH_VM_TANH: return tanh(a);
    case KORCH_VM_ERF: return erf(a);
    case KORCH_VM_SIGMOID: return 1.0 / (1.0 + exp(-a));
    case KORCH_VM_SOFTPLUS: return sp;
    case KORCH_VM_MISH: return a * tanh(sp);
    default: return NAN;
    }
}

static float scalar_f32(korch_vm_fn f, float a) {
    float sp = a > 0 ? a + log1pf(expf(-a)) : log1pf(expf(a));
    switch (f) {
    case KORCH_VM_EXP: return expf(a);
    case KORCH_VM_LOG: return logf(a);
    case KORCH_VM_TANH: return tanhf(a);
    case KORCH_VM_ERF: return erff(a);
    case KORCH_VM_SIGMOID: return 1.0f / (1.0f + expf(-a));
    case KORCH_VM_SOFTPLUS: return sp;
    case KORCH_VM_MISH: return a * tanhf(sp);
    default: return NAN;
    }
}

/* The same class as the scalar result: both NaN, or equal infinities, or
 * zeros of the same sign; else (finite, non-zero) within `ulps` units in
 * the last place of `want` at the given precision (a subnormal's ulp is the
 * smallest subnormal). */
static bool close_enough(double got, double want, double ulps, bool single) {
    if (isnan(want) || isnan(got)) return isnan(want) && isnan(got);
    if (isinf(want) || isinf(got)) return got == want;
    if (want == 0.0 || got == 0.0) {
        double tiny = single ? 0x1p-149 * ulps : 0x1p-1074 * ulps;
        if (want == 0.0 && got == 0.0) return signbit(want) == signbit(got);
        return fabs(got - want) <= tiny;
    }
    int e;
    frexp(want, &e);
    double ulp = ldexp(1.0, e - (single ? 24 : 53));
    double floor_ulp = single ? 0x1p-149 : 0x1p-1074;
    if (ulp < floor_ulp) ulp = floor_ulp;
    return fabs(got - want) <= ulps * ulp;
}

enum { N = 1 << 16 };

static double domain_value(korch_vm_fn f, int64_t i) {
    double t = (double)i / (N - 1); /* 0..1 */
    if (f == KORCH_VM_LOG) return exp(-80.0 + 160.0 * t); /* log-spaced positives */
    if (f == KORCH_VM_EXP) return -100.0 + 200.0 * t;    /* through both ends of float's range */
    return -40.0 + 80.0 * t;
}

static const double SPECIALS[] = {NAN, INFINITY, -INFINITY, 0.0, -0.0, 1e-300, -1e-300, 0x1p-140, -0x1p-140,
                                  1e-30, -1e-30, 1.0, -1.0, 20.0, -20.0, 88.7, -88.7, 89.0, -104.0, 710.0,
                                  -745.0, 1e30, -1e30, 3.0e38, -3.0e38};
enum { NS = (int)(sizeof SPECIALS / sizeof SPECIALS[0]) };

static void test_f64(korch_vm_fn f) {
    static double x[N + NS], y[N + NS];
    for (int64_t i = 0; i < N; i++) x[i] = domain_value(f, i);
    for (int i = 0; i < NS; i++) x[N + i] = SPECIALS[i];
    korch_vm_f64(f, x, y, N + NS);
    double bound = f >= KORCH_VM_SIGMOID ? 16 : 8;
    int bad = 0;
    for (int64_t i = 0; i < N + NS; i++) {
        double want = scalar_f64(f, x[i]);
        if (!close_enough(y[i], want, bound, false)) {
            if (bad++ < 3) fprintf(stderr, "f64 %s(%.17g) = %.17g, scalar %.17g\n", NAMES[f], x[i], y[i], want);
        }
    }
    CHECK_MSG(bad == 0, "f64 %s: %d of %d values differ from the scalar formula by more than %g ulp", NAMES[f], bad,
              N + NS, bound);
}

static void test_f32(korch_vm_fn f) {
    static float x[N + NS], y[N + NS];
    for (int64_t i = 0; i < N; i++) x[i] = (float)domain_value(f, i);
    for (int i = 0; i < NS; i++) x[N + i] = (float)SPECIALS[i];
    korch_vm_f32(f, x, y, N + NS);
    /* against the exact (double) value, as the scalar float functions */
    double bound = f >= KORCH_VM_SIGMOID ? 12 : 5;
    int bad = 0;
    for (int64_t i = 0; i < N + NS; i++) {
        float want = scalar_f32(f, x[i]);
        double exact = scalar_f64(f, x[i]);
        bool ok = close_enough(y[i], exact, bound, true) || close_enough(y[i], want, 2, true);
        /* the class (NaN, infinity, signed zero) must be the scalar one */
        if (isnan(want) || isinf(want) || want == 0.0f) ok = close_enough(y[i], want, 0, true);
        if (!ok && bad++ < 3)
            fprintf(stderr, "f32 %s(%.9g) = %.9g, scalar %.9g, exact %.17g\n", NAMES[f], x[i], y[i], want, exact);
    }
    CHECK_MSG(bad == 0, "f32 %s: %d of %d values off by more than %g ulp, or of another class", NAMES[f], bad, N + NS,
              bound);
}

/* Bits independent of how the range is cut, and in place. */
static void test_determinism(korch_vm_fn f) {
    enum { M = 1000 };
    static const int pieces[] = {1, 7, 63, 64, 65, 200, 1000};
    double x[M], whole[M], part[M];
    float xf[M], wholef[M], partf[M];
    for (int i = 0; i < M; i++) {
        x[i] = domain_value(f, (int64_t)i * (N / M));
        xf[i] = (float)x[i];
    }
    korch_vm_f64(f, x, whole, M);
    korch_vm_f32(f, xf, wholef, M);
    for (size_t p = 0; p < sizeof pieces / sizeof pieces[0]; p++) {
        for (int b = 0; b < M; b += pieces[p]) {
            int m = M - b < pieces[p] ? M - b : pieces[p];
            korch_vm_f64(f, x + b, part + b, m);
            korch_vm_f32(f, xf + b, partf + b, m);
        }
        CHECK_MSG(memcmp(part, whole, sizeof whole) == 0, "f64 %s: pieces of %d differ from one call", NAMES[f],
                  pieces[p]);
        CHECK_MSG(memcmp(partf, wholef, sizeof wholef) == 0, "f32 %s: pieces of %d differ from one call", NAMES[f],
                  pieces[p]);
    }
    memcpy(part, x, sizeof x);
    korch_vm_f64(f, part, part, M);
    CHECK_MSG(memcmp(part, whole, sizeof whole) == 0, "f64 %s: in place differs", NAMES[f]);
    static float big[100000], bigout[100000], bigpar[100000];
    for (int i = 0; i < 100000; i++) big[i] = (float)domain_value(f, i % N);
    korch_vm_f32(f, big, bigout, 100000);
    korch_vm_f32_parallel(f, big, bigpar, 100000);
    CHECK_MSG(memcmp(bigout, bigpar, sizeof bigout) == 0, "f32 %s: the parallel form differs", NAMES[f]);
}

int main(void) {
    for (int f = 0; f < KORCH_VM_COUNT; f++) {
        test_f64((korch_vm_fn)f);
        test_f32((korch_vm_fn)f);
        test_determinism((korch_vm_fn)f);
    }
    TEST_MAIN_END();
}
