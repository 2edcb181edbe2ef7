/* Machine probes for the benchmark report.
 *
 *   probe fma   T   FP32 FMA peak with T OpenMP threads (GFLOP/s)
 *   probe triad T   STREAM-triad bandwidth a[i] = b[i] + s*c[i] with T threads
 *                   (GB/s, counting 24 bytes per element of doubles, as STREAM
 *                   does; write-allocate traffic not counted)
 *   probe cores 2   how far apart the first two CPUs of the affinity mask are:
 *                   the round trip of a cache line between them (ns), and the
 *                   bandwidth of one CPU reading 8 MiB the other just wrote
 *                   against reading what it wrote itself (GB/s). On a VM the
 *                   host may place two vCPUs on one CCX or on two: on a Zen 4
 *                   host the round trip read 350-380 ns and the other CPU's
 *                   data 16-25 GB/s against 72 of its own (2026-11-29), and a
 *                   plan's kernels, which read what other threads wrote, ran
 *                   up to 16x their isolated profiles (docs/profiling.md).
 *
 * Prints one line of JSON: {"probe":..., "threads":T, "best":X, "median":Y,
 * "reps":R, ...}. Build: cc -O3 -march=native -fopenmp probe.c -o probe
 */
#define _GNU_SOURCE
#include <omp.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
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


/* ---- probe cores ---- */
static _Atomic int pp_flag __attribute__((aligned(64)));
enum { PP_ROUNDS = 100000, XR_FLOATS = 2 << 20 }; /* 8 MiB */
static float *xr_buf;
static int cpu_of[2];

static void pin_to(int cpu) {
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(cpu, &set);
    pthread_setaffinity_np(pthread_self(), sizeof set, &set);
}

static void *pp_partner(void *arg) {
    (void)arg;
    pin_to(cpu_of[1]);
    for (int i = 0; i < PP_ROUNDS; i++) {
        while (atomic_load_explicit(&pp_flag, memory_order_acquire) != 1) {}
        atomic_store_explicit(&pp_flag, 0, memory_order_release);
    }
    return NULL;
}

static void *xr_writer(void *arg) {
    (void)arg;
    pin_to(cpu_of[1]);
    for (long i = 0; i < XR_FLOATS; i++) xr_buf[i] = (float)(i & 1023);
    return NULL;
}

/* GB/s of summing xr_buf (64 independent sums, several vector registers
 * of them, so that the adds' latency does not bound it) */
static double xr_read(void) {
    float acc[64] = {0};
    double t0 = now();
    for (long i = 0; i < XR_FLOATS; i += 64)
        for (int j = 0; j < 64; j++) acc[j] += xr_buf[i + j];
    double t = now() - t0;
    volatile float sink = acc[0] + acc[63];
    (void)sink;
    return XR_FLOATS * 4.0 / t * 1e-9;
}

static int run_cores(void) {
    enum { REPS = 5 };
    cpu_set_t mask;
    if (sched_getaffinity(0, sizeof mask, &mask) != 0) return 1;
    int found = 0;
    for (int c = 0; c < CPU_SETSIZE && found < 2; c++)
        if (CPU_ISSET(c, &mask)) cpu_of[found++] = c;
    if (found < 2) {
        printf("{\"probe\": \"cores\", \"threads\": 2, \"error\": \"fewer than 2 CPUs\"}\n");
        return 0;
    }
    xr_buf = aligned_alloc(64, XR_FLOATS * sizeof *xr_buf);
    if (!xr_buf) return 1;
    pin_to(cpu_of[0]);
    double rt[REPS], other[REPS], own[REPS];
    for (int r = 0; r < REPS; r++) {
        pthread_t th;
        pthread_create(&th, NULL, pp_partner, NULL);
        double t0 = now();
        for (int i = 0; i < PP_ROUNDS; i++) {
            atomic_store_explicit(&pp_flag, 1, memory_order_release);
            while (atomic_load_explicit(&pp_flag, memory_order_acquire) != 0) {}
        }
        rt[r] = (now() - t0) / PP_ROUNDS * 1e9;
        pthread_join(th, NULL);
        pthread_create(&th, NULL, xr_writer, NULL);
        pthread_join(th, NULL);
        other[r] = xr_read();
        for (long i = 0; i < XR_FLOATS; i++) xr_buf[i] = (float)(i & 511);
        own[r] = xr_read();
    }
    qsort(rt, REPS, sizeof *rt, cmp);
    qsort(other, REPS, sizeof *other, cmp);
    qsort(own, REPS, sizeof *own, cmp);
    printf("{\"probe\": \"cores\", \"threads\": 2, \"cpus\": [%d, %d], \"round_trip_ns\": %.0f, "
           "\"read_other_gbs\": %.1f, \"read_own_gbs\": %.1f, \"reps\": %d}\n",
           cpu_of[0], cpu_of[1], rt[REPS / 2], other[REPS / 2], own[REPS / 2], REPS);
    free(xr_buf);
    return 0;
}

int main(int argc, char **argv) {
    if (argc != 3) {
        fprintf(stderr, "usage: probe fma|triad THREADS | probe cores 2\n");
        return 2;
    }
    int t = atoi(argv[2]);
    if (t < 1) t = 1;
    if (!strcmp(argv[1], "fma")) return run_fma(t);
    if (!strcmp(argv[1], "triad")) return run_triad(t);
    if (!strcmp(argv[1], "cores")) return run_cores();
    fprintf(stderr, "probe: unknown probe %s\n", argv[1]);
    return 2;
}
