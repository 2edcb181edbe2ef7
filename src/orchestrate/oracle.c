/* The production oracle: support answers and latencies from the backends. */
#include "orchestrate/orchestrate.h"

static bool backends_supports(void *user, korch_backend_kind kind, const korch_kernel_spec *spec, char *reason,
                              size_t size) {
    (void)user;
    return korch_backend_supports(kind, spec, reason, size);
}

static korch_status backends_profile(void *user, korch_backend_kind kind, const korch_kernel_spec *specs, int n,
                                     double budget_s, korch_profile_result *results) {
    korch_profile_options options = *(const korch_profile_options *)user;
    options.budget_s = budget_s;
    options.progress = false; /* the orchestrator draws one bar over all calls */
    return korch_backend_profile(kind, specs, n, &options, results);
}

korch_kernel_oracle korch_kernel_oracle_backends(const korch_profile_options *options) {
    korch_kernel_oracle o = {.supports = backends_supports, .profile = backends_profile, .user = (void *)options};
    return o;
}
