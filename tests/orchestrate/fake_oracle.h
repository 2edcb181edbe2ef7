/* A latency model for orchestration tests: every candidate gets a
 * deterministic pseudo-random latency from its node set, so fusing is
 * sometimes cheaper and sometimes not. With `respect_bound`, latencies are
 * never below the roofline bound (what real kernels obey), which makes
 * bound pruning exact. */
#ifndef KORCH_TESTS_FAKE_ORACLE_H
#define KORCH_TESTS_FAKE_ORACLE_H

#include <stdio.h>
#include <string.h>

#include "orchestrate/orchestrate.h"

typedef struct fake_oracle {
    uint64_t seed;
    bool respect_bound;
    double multi_output_factor; /* 0: 1; < 1 makes multi-output kernels attractive (deadlock bait) */
    korch_machine_model machine;
    long profiled;
} fake_oracle;

static inline uint64_t fake_hash(uint64_t h, uint64_t x) {
    h ^= x + 0x9E3779B97F4A7C15ull + (h << 6) + (h >> 2);
    h *= 0xff51afd7ed558ccdull;
    return h ^ (h >> 29);
}

static inline double fake_latency(const fake_oracle *f, const korch_kernel_spec *spec) {
    uint64_t h = fake_hash(f->seed, (uint64_t)spec->n_nodes);
    double base = 0;
    for (int i = 0; i < spec->n_nodes; i++) {
        h = fake_hash(h, (uint64_t)spec->nodes[i]);
        base += 0.2 + 0.1 * (double)((spec->nodes[i] * 37 + (int)(f->seed % 7)) % 10);
    }
    double factor = spec->n_nodes == 1 ? 1.0 : 0.35 + 0.9 * (double)(h % 1000) / 1000.0;
    if (spec->n_outputs > 1 && f->multi_output_factor > 0) factor *= f->multi_output_factor;
    return base * factor;
}

static inline bool fake_supports(void *user, korch_backend_kind kind, const korch_kernel_spec *spec, char *reason,
                                 size_t size) {
    (void)user;
    (void)kind;
    (void)spec;
    (void)reason;
    (void)size;
    return true;
}

static inline korch_status fake_profile(void *user, korch_backend_kind kind, const korch_kernel_spec *specs, int n,
                                        double budget_s, bool quick, korch_profile_result *results) {
    fake_oracle *f = user;
    (void)budget_s;
    (void)quick;
    for (int i = 0; i < n; i++) {
        memset(&results[i], 0, sizeof results[i]);
        results[i].status = KORCH_OK;
        double lat = fake_latency(f, &specs[i]);
        if (f->respect_bound) {
            /* a candidate's latency is its bound times at least one */
            double lb = korch_kernel_lower_bound_ms(&specs[i], &f->machine);
            lat = lb * (1.0 + lat);
        }
        results[i].latency_ms = lat;
        snprintf(results[i].schedule, sizeof results[i].schedule, "fake");
        snprintf(results[i].impl, sizeof results[i].impl, "fake %s", korch_backend_name(kind));
        f->profiled++;
    }
    return KORCH_OK;
}

static inline korch_kernel_oracle fake_oracle_make(fake_oracle *f) {
    korch_kernel_oracle o = {.supports = fake_supports, .profile = fake_profile, .user = f};
    return o;
}

/* Orchestrator options for tests: the defaults, but the binary programs get
 * no wall-clock limit (the default allows 60 s, and a solve stopped by it
 * keeps a worse plan). On a loaded machine under ASan a hard instance can
 * need that long, and a plan that depends on the machine's load makes a
 * test flaky (issue 16). A solver that never finishes is a hang, for
 * CTest's TIMEOUT. */
static inline korch_orchestrate_options test_orchestrate_options(int threads) {
    korch_orchestrate_options o = korch_orchestrate_options_default(threads);
    o.solve_time_limit_s = 1e9;
    return o;
}

#endif
