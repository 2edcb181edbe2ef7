/* Backend dispatch: each call goes to the backend named by `kind`. */
#include <stdio.h>
#include <stdlib.h>

#include "backend/backend.h"
#include "backend/cgen/cgen_backend.h"
#include "backend/dnnl/dnnl_backend.h"
#include "backend/ref/ref_backend.h"

const char *korch_backend_name(korch_backend_kind kind) {
    static const char *const names[] = {"cgen", "dnnl", "ref"};
    _Static_assert(sizeof names / sizeof names[0] == KORCH_BACKEND_COUNT, "backend names out of step");
    return (unsigned)kind < KORCH_BACKEND_COUNT ? names[kind] : "?";
}

static korch_status unknown(korch_backend_kind kind) {
    return korch_error(KORCH_ERR_INVALID_ARGUMENT, "unknown backend kind %d", (int)kind);
}

bool korch_backend_supports(korch_backend_kind kind, const korch_kernel_spec *spec, char *reason, size_t size) {
    if (kind == KORCH_BACKEND_CGEN) return korch_cgen_supports(spec, reason, size);
    if (kind == KORCH_BACKEND_REF) return korch_ref_supports(spec, reason, size);
    if (kind == KORCH_BACKEND_DNNL) return korch_dnnl_supports(spec, reason, size);
    unknown(kind);
    if (reason && size) snprintf(reason, size, "%s", korch_last_error());
    return false;
}

korch_status korch_backend_profile(korch_backend_kind kind, const korch_kernel_spec *specs, int n,
                                   const korch_profile_options *options, korch_profile_result *results) {
    if (n < 0 || (n > 0 && (!specs || !results)))
        return korch_error(KORCH_ERR_INVALID_ARGUMENT, "korch_backend_profile: bad arguments");
    if (kind == KORCH_BACKEND_CGEN) return korch_cgen_profile(specs, n, options, results);
    if (kind == KORCH_BACKEND_REF) return korch_ref_profile(specs, n, options, results);
    if (kind == KORCH_BACKEND_DNNL) return korch_dnnl_profile(specs, n, options, results);
    return unknown(kind);
}

korch_status korch_backend_build(korch_backend_kind kind, const korch_kernel_spec *specs, const char *const *schedules,
                                 int n, const korch_profile_options *options, korch_kernel **kernels) {
    if (n < 0 || (n > 0 && (!specs || !kernels)))
        return korch_error(KORCH_ERR_INVALID_ARGUMENT, "korch_backend_build: bad arguments");
    for (int i = 0; i < n; i++) kernels[i] = NULL;
    if (kind == KORCH_BACKEND_CGEN) return korch_cgen_build(specs, schedules, n, options, kernels);
    if (kind == KORCH_BACKEND_REF) return korch_ref_build(specs, schedules, n, options, kernels);
    if (kind == KORCH_BACKEND_DNNL) return korch_dnnl_build(specs, schedules, n, options, kernels);
    return unknown(kind);
}

void korch_kernel_destroy(korch_kernel *k) {
    if (!k) return;
    if (k->destroy) k->destroy(k);
    free(k);
}

const char *korch_backend_identity(korch_backend_kind kind) {
    switch (kind) {
    case KORCH_BACKEND_CGEN: return korch_cgen_identity();
    case KORCH_BACKEND_DNNL: return korch_dnnl_identity();
    case KORCH_BACKEND_REF: return "interpreter";
    default: return "?";
    }
}
