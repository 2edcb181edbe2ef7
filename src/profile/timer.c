/* Timing methodology (docs/profiling.md): warm-up, then the median of
 * repeated runs, with the spread reported. The median resists the occasional
 * preempted run on a shared machine; the spread tells how noisy it was. */
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#ifdef _OPENMP
#include <omp.h>
#endif
#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#endif

#include "profile/profile.h"

korch_timer_options korch_timer_defaults(void) {
    return (korch_timer_options){.warmup_runs = 2, .warmup_ms = 5, .min_repeats = 7, .max_repeats = 200,
                                 .target_ms = 30};
}

/* Cache scrub (korch_timer_options.scrub_mib, docs/profiling.md "Cache
 * state"): before each timed run, every core writes its own slice of a
 * buffer of that many MiB, untimed. A kernel repeated back to back finds its
 * weights, its code's data and its page translations warm; inside a plan the
 * other kernels ran in between. Off by default: it slows profiling down (4x
 * for 24 MiB on EfficientViT). The caller puts the same size into the
 * machine fingerprint, so scrubbed and unscrubbed latencies never mix. The
 * buffer is kept for the process and grows to the largest size asked for;
 * the lock keeps a growing buffer from being swept by another caller. */
static void scrub(int mib) {
    static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
    static char *buf;
    static size_t have;
    static int workers;
    if (mib <= 0) return;
    size_t per = (size_t)(mib > KORCH_SCRUB_MAX_MIB ? KORCH_SCRUB_MAX_MIB : mib) << 20;
    pthread_mutex_lock(&lock);
    if (per > have) {
#ifdef _OPENMP
        workers = omp_get_num_procs();
#else
        workers = 1;
#endif
        free(buf);
        have = 0;
        buf = aligned_alloc(64, per * (size_t)workers);
        if (buf) {
            memset(buf, 1, per * (size_t)workers);
            have = per;
        }
    }
    if (!buf) { /* no scrub rather than no profile */
        pthread_mutex_unlock(&lock);
        return;
    }
    char *base = buf;
    size_t stride = have;
#pragma omp parallel num_threads(workers)
    {
#ifdef _OPENMP
        size_t t = (size_t)omp_get_thread_num();
#else
        size_t t = 0;
#endif
        volatile char *b = base + t * stride;
        for (size_t i = 0; i < per; i += 64) b[i]++;
    }
    pthread_mutex_unlock(&lock);
}

void korch_cache_evict(const void *p, size_t bytes) {
#if defined(__x86_64__) || defined(__i386__)
    if (!p || bytes == 0) return;
    const char *c = (const char *)((uintptr_t)p & ~(uintptr_t)63), *end = (const char *)p + bytes;
    for (; c < end; c += 64) _mm_clflush(c);
    _mm_mfence();
#else
    (void)p;
    (void)bytes;
#endif
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* p-quantile of sorted samples, linear between neighbours */
static double quantile(const double *sorted, int n, double p) {
    double pos = p * (n - 1);
    int lo = (int)pos;
    if (lo >= n - 1) return sorted[n - 1];
    return sorted[lo] + (pos - lo) * (sorted[lo + 1] - sorted[lo]);
}

korch_status korch_profile_time(korch_timed_fn fn, void *ctx, const korch_timer_options *o, korch_timing *out) {
    korch_timer_options d = o ? *o : korch_timer_defaults();
    if (d.min_repeats < 1) d.min_repeats = 1;
    if (d.max_repeats < d.min_repeats) d.max_repeats = d.min_repeats;
    int it = 0;
    /* before the warm-up: a probe the monitor takes then leaves the caches
     * the way the warm-up puts them back */
    korch_monitor_mark mark;
    if (d.monitor) korch_profile_monitor_begin(d.monitor, &mark);
    double t0 = korch_now_s();
    for (int w = 0; w < d.warmup_runs || (korch_now_s() - t0) * 1e3 < d.warmup_ms; w++) {
        KORCH_TRY(fn(ctx, it++));
        if (w > 1000) break;
    }
    if (d.monitor) korch_profile_monitor_warm(d.monitor, &mark);
    double *samples = malloc((size_t)d.max_repeats * sizeof *samples);
    if (!samples) return korch_error(KORCH_ERR_OUT_OF_MEMORY, "timer: out of memory");
    int n = 0, slow = 0;
    double spent = 0;
    bool cut = false;
    while (n < d.max_repeats && (n < d.min_repeats || spent < d.target_ms)) {
        scrub(d.scrub_mib);
        if (d.before_run) d.before_run(ctx);
        double a = korch_now_s();
        korch_status st = fn(ctx, it++);
        double ms = korch_profile_hook_run_ms((korch_now_s() - a) * 1e3);
        if (st != KORCH_OK) {
            free(samples);
            return st;
        }
        samples[n++] = ms;
        spent += ms;
        if (d.cutoff_runs > 0 && d.cutoff_ms > 0) {
            slow = ms > d.cutoff_ms ? slow + 1 : 0;
            if (slow >= d.cutoff_runs && slow == n) {
                cut = true;
                break;
            }
        }
        if (d.steady_repeats > 0 && n >= d.steady_repeats && n < d.min_repeats && spent >= d.target_ms) {
            double lo = samples[0], hi = samples[0];
            for (int i = 1; i < n; i++) {
                if (samples[i] < lo) lo = samples[i];
                if (samples[i] > hi) hi = samples[i];
            }
            if (hi - lo <= d.steady_spread * lo) break;
        }
    }
    qsort(samples, (size_t)n, sizeof *samples, cmp_double);
    out->repeats = n;
    out->min_ms = samples[0];
    out->max_ms = samples[n - 1];
    out->median_ms = n % 2 ? samples[n / 2] : 0.5 * (samples[n / 2 - 1] + samples[n / 2]);
    out->spread_ms = out->max_ms - out->min_ms;
    out->cut = cut;
    out->quality = (korch_profile_quality){.iqr_ms = quantile(samples, n, 0.75) - quantile(samples, n, 0.25),
                                           .wait = -1};
    if (d.monitor) korch_profile_monitor_end(d.monitor, &mark, &out->quality);
    free(samples);
    return KORCH_OK;
}
