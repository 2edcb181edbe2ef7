/* Machine probes for the benchmark report.
 *
 *   probe fma   T   FP32 FMA peak with T OpenMP threads (GFLOP/s)
 *   probe triad T   STREAM-triad bandwidth a[i] = b[i] + s*c[i] with T threads
 *                   (GB/s, counting 24 bytes per element of doubles, as STREAM
 *                   does; write-allocate traffic not counted)
 *
 * Prints one line of JSON: {"probe":..., "threads":T, "best":X, "median":Y,
 * "reps":R, ...}. Build: cc -O3 -march=native -fopenmp probe.c -o probe
 */
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#if defined(__AVX512F__) || defined(__FMA__)
#include <immintrin.h>
#endif

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + 1e-9 * ts.tv_nsec;
}

static int cmp(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

#define NACC 16

/* One thread's FMA loop: NACC independent accumulator chains (more than
 * latency x throughput = 4 x 2 on current cores). Returns a value that
 * depends on the result so the compiler cannot drop the loop. */
static float fma_kernel(long iters, float seed) {
#if defined(__AVX512F__)
    __m512 acc[NACC];
    const __m512 m = _mm512_set1_ps(0.999999f), a = _mm512_set1_ps(1e-7f);
    for (int k = 0; k < NACC; k++) acc[k] = _mm512_set1_ps(seed + k);
    for (long i = 0; i < iters; i++)
        for (int k = 0; k < NACC; k++) acc[k] = _mm512_fmadd_ps(acc[k], m, a);
    __m512 s = acc[0];
    for (int k = 1; k < NACC; k++) s = _mm512_add_ps(s, acc[k]);
    return _mm512_reduce_add_ps(s);
#elif defined(__FMA__)
    __m256 acc[NACC];
    const __m256 m = _mm256_set1_ps(0.999999f), a = _mm256_set1_ps(1e-7f);
    for (int k = 0; k < NACC; k++) acc[k] = _mm256_set1_ps(seed + k);
    for (long i = 0; i < iters; i++)
        for (int k = 0; k < NACC; k++) acc[k] = _mm256_fmadd_ps(acc[k], m, a);
    float out[8], r = 0;
    __m256 s = acc[0];
    for (int k = 1; k < NACC; k++) s = _mm256_add_ps(s, acc[k]);
    _mm256_storeu_ps(out, s);
    for (int j = 0; j < 8; j++) r += out[j];
    return r;
#else
    float acc[NACC];
    for (int k = 0; k < NACC; k++) acc[k] = seed + k;
    for (long i = 0; i < iters; i++)
        for (int k = 0; k < NACC; k++) acc[k] = acc[k] * 0.999999f + 1e-7f;
    float r = 0;
    for (int k = 0; k < NACC; k++) r += acc[k];
    return r;
#endif
}

static int lanes(void) {
#if defined(__AVX512F__)
    return 16;
#elif defined(__FMA__)
    return 8;
#else
    return 1;
#endif
}

static const char *isa(void) {
#if defined(__AVX512F__)
    return "avx512";
#elif defined(__FMA__)
    return "avx2-fma";
#else
    return "scalar";
#endif
}

static void report(const char *probe, int t, double *v, int reps, const char *unit,
                   const char *extra) {
    qsort(v, reps, sizeof *v, cmp);
    printf("{\"probe\": \"%s\", \"threads\": %d, \"best\": %.1f, \"median\": %.1f, "
           "\"worst\": %.1f, \"reps\": %d, \"unit\": \"%s\"%s}\n",
           probe, t, v[reps - 1], v[reps / 2], v[0], reps, unit, extra);
}

static int run_fma(int t) {
    enum { REPS = 7 };
    const long iters = 4000000; /* x NACC x lanes x 2 flops: ~2 GFLOP per thread */
    double g[REPS];
    volatile float sink = 0;
    omp_set_num_threads(t);
    /* warm up: start the OpenMP team, let clocks ramp */
#pragma omp parallel num_threads(t)
    {
        float v = fma_kernel(iters / 4, 1.0f);
#pragma omp atomic
        sink += v;
    }
    for (int r = 0; r < REPS; r++) {
        double t0 = now();
#pragma omp parallel num_threads(t)
        {
            float v = fma_kernel(iters, (float)omp_get_thread_num());
#pragma omp atomic
            sink += v;
        }
        double dt = now() - t0;
        g[r] = (double)t * iters * NACC * lanes() * 2 / dt / 1e9;
    }
    char extra[64];
    snprintf(extra, sizeof extra, ", \"isa\": \"%s\"", isa());
    report("fma", t, g, REPS, "GFLOP/s", extra);
    return 0;
}

static int run_triad(int t) {
    enum { REPS = 10 };
    const long n = 1L << 25; /* 32 Mi doubles = 256 MiB per array */
    double *a = malloc(n * sizeof *a), *b = malloc(n * sizeof *b), *c = malloc(n * sizeof *c);
    if (!a || !b || !c) {
        fprintf(stderr, "probe: out of memory\n");
        return 1;
    }
    omp_set_num_threads(t);
#pragma omp parallel for schedule(static) num_threads(t)
    for (long i = 0; i < n; i++) { a[i] = 0; b[i] = 1; c[i] = 2; }
    const double s = 3.0;
    double g[REPS];
    for (int r = -1; r < REPS; r++) {
        double t0 = now();
#pragma omp parallel for schedule(static) num_threads(t)
        for (long i = 0; i < n; i++) a[i] = b[i] + s * c[i];
        double dt = now() - t0;
        if (r >= 0) g[r] = 3.0 * n * sizeof(double) / dt / 1e9;
    }
    if (a[n / 2] != 7.0) {
        fprintf(stderr, "probe: triad check failed\n");
        return 1;
    }
    report("triad", t, g, REPS, "GB/s", ", \"array_mib\": 256");
    free(a); free(b); free(c);
    return 0;
}

int main(int argc, char **argv) {
    if (argc != 3) {
        fprintf(stderr, "usage: probe fma|triad THREADS\n");
        return 2;
    }
    int t = atoi(argv[2]);
    if (t < 1) t = 1;
    if (!strcmp(argv[1], "fma")) return run_fma(t);
    if (!strcmp(argv[1], "triad")) return run_triad(t);
    fprintf(stderr, "probe: unknown probe %s\n", argv[1]);
    return 2;
}
