/* The reference backend: runs any kernel spec through the primitive
 * interpreter (opaque nodes through their operator's reference kernel).
 * It is what keeps every model runnable: primitives that no real backend
 * implements, and opaque operators, become REF kernels. The orchestrator
 * never prefers it for a fused kernel a real backend can implement. Its
 * table, korch_backend_ops_ref, is what backend/backend.c calls for
 * KORCH_BACKEND_REF. */
#ifndef KORCH_BACKEND_REF_REF_BACKEND_H
#define KORCH_BACKEND_REF_REF_BACKEND_H

#include "backend/backend.h"

bool korch_ref_supports(const korch_kernel_spec *spec, char *reason, size_t size);
korch_status korch_ref_profile(const korch_kernel_spec *specs, int n, const korch_profile_options *options,
                               korch_profile_result *results);
/* kernels[i] receives a malloc'd kernel; korch_kernel_destroy releases it
 * (k->destroy frees the REF state, the dispatcher frees k). */
korch_status korch_ref_build(const korch_kernel_spec *specs, const char *const *schedules, int n,
                             const korch_profile_options *options, korch_kernel **kernels);

/* The backend's table (backend_list.h). */
extern const korch_backend_ops korch_backend_ops_ref;

#endif
