/* Timing methodology (docs/profiling.md): warm-up, then the median of
 * repeated runs, with the spread reported. The median resists the occasional
 * preempted run on a shared machine; the spread tells how noisy it was. */
#include <stdlib.h>
#include <time.h>

#include "profile/profile.h"

double korch_now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

korch_timer_options korch_timer_defaults(void) {
    return (korch_timer_options){.warmup_runs = 2, .warmup_ms = 5, .min_repeats = 7, .max_repeats = 200,
                                 .target_ms = 30};
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

korch_status korch_profile_time(korch_timed_fn fn, void *ctx, const korch_timer_options *o, korch_timing *out) {
    korch_timer_options d = o ? *o : korch_timer_defaults();
    if (d.min_repeats < 1) d.min_repeats = 1;
    if (d.max_repeats < d.min_repeats) d.max_repeats = d.min_repeats;
    int it = 0;
    double t0 = korch_now_s();
    for (int w = 0; w < d.warmup_runs || (korch_now_s() - t0) * 1e3 < d.warmup_ms; w++) {
        KORCH_TRY(fn(ctx, it++));
        if (w > 1000) break;
    }
    double *samples = malloc((size_t)d.max_repeats * sizeof *samples);
    if (!samples) return korch_error(KORCH_ERR_OUT_OF_MEMORY, "timer: out of memory");
    int n = 0, slow = 0;
    double spent = 0;
    bool cut = false;
    while (n < d.max_repeats && (n < d.min_repeats || spent < d.target_ms)) {
        double a = korch_now_s();
        korch_status st = fn(ctx, it++);
        double ms = (korch_now_s() - a) * 1e3;
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
    free(samples);
    return KORCH_OK;
}
