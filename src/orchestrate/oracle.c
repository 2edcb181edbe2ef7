/* The production oracle: support answers and latencies from the backends. */
#include "orchestrate/orchestrate.h"

#include <stdio.h>
#include <string.h>

static bool backends_supports(void *user, korch_backend_kind kind, const korch_kernel_spec *spec, char *reason,
                              size_t size) {
    (void)user;
    return korch_backend_supports(kind, spec, reason, size);
}

/* Results without a timed schedule get the one their kernel will be built
 * with (korch_backend_untimed_schedule), so that the plan records it. */
static korch_status fix_untimed(korch_backend_kind kind, const korch_kernel_spec *specs, int n,
                                korch_profile_result *results) {
    for (int i = 0; i < n; i++) {
        korch_profile_result *r = &results[i];
        if (r->status != KORCH_OK || r->schedule[0]) continue;
        char text[sizeof r->schedule];
        if (!korch_backend_untimed_schedule(kind, &specs[i], text, sizeof text))
            return korch_error(KORCH_ERR_INTERNAL, "%s kernel %d: no default schedule: %s", korch_backend_name(kind),
                               i, text);
        snprintf(r->schedule, sizeof r->schedule, "%s", text);
    }
    return KORCH_OK;
}

static korch_status backends_profile(void *user, korch_backend_kind kind, const korch_kernel_spec *specs, int n,
                                     double budget_s, bool quick, korch_profile_result *results) {
    korch_profile_options options = *(const korch_profile_options *)user;
    options.budget_s = budget_s;
    options.quick = quick;
    options.progress = false; /* the orchestrator draws one bar over all calls */
    KORCH_TRY(korch_backend_profile(kind, specs, n, &options, results));
    return fix_untimed(kind, specs, n, results);
}

korch_kernel_oracle korch_kernel_oracle_backends(const korch_profile_options *options) {
    korch_kernel_oracle o = {.supports = backends_supports, .profile = backends_profile, .user = (void *)options};
    return o;
}

/* Estimates instead of measurements: the roofline bound with realistic
 * constants plus a fixed cost per kernel launch. For quick plans and for
 * studying the program on big models; kernels get their default schedule,
 * recorded in the plan. */
static bool estimate_supports(void *user, korch_backend_kind kind, const korch_kernel_spec *spec, char *reason,
                              size_t size) {
    (void)user;
    return korch_backend_supports(kind, spec, reason, size);
}

static korch_status estimate_profile(void *user, korch_backend_kind kind, const korch_kernel_spec *specs, int n,
                                     double budget_s, bool quick, korch_profile_result *results) {
    const korch_machine_model *m = user;
    (void)budget_s;
    (void)quick;
    for (int i = 0; i < n; i++) {
        korch_profile_result *r = &results[i];
        memset(r, 0, sizeof *r);
        r->status = KORCH_OK;
        /* REF runs the plain interpreter: an order of magnitude off the roofline */
        double slow = kind == KORCH_BACKEND_REF ? 20.0 : 1.0;
        r->latency_ms = slow * korch_kernel_lower_bound_ms(&specs[i], m) + 0.002;
        snprintf(r->impl, sizeof r->impl, "%s (estimated)", korch_backend_name(kind));
    }
    return fix_untimed(kind, specs, n, results);
}

korch_machine_model korch_machine_model_typical(int threads) {
    if (threads < 1) threads = 1;
    /* measured on this machine class: ~220 GFLOP/s per core for good
     * convolutions, ~40 GB/s from DRAM, a few hundred GB/s from L2/L3 */
    korch_machine_model m = {.peak_gflops = 200.0 * threads,
                             .cache_gbps = 150.0 * threads,
                             .dram_gbps = 40.0,
                             .cache_bytes = 32.0 * 1024 * 1024};
    return m;
}

korch_kernel_oracle korch_kernel_oracle_estimate(const korch_machine_model *machine) {
    korch_kernel_oracle o = {.supports = estimate_supports, .profile = estimate_profile, .user = (void *)machine};
    return o;
}
