/* Kernel backends: how a candidate kernel (a set of primitives) becomes
 * runnable code, and how it is profiled.
 *
 *   cgen   generated C for memory-bound kernels (no linear primitive),
 *          compiled with the system compiler, loaded with dlopen, tuned
 *   dnnl   oneDNN convolution / matmul with fused post-ops
 *   ref    the primitive interpreter (opaque operators; never chosen when a
 *          real backend can implement the kernel)
 *
 * Every backend fills a table of the same four calls (korch_backend_ops,
 * backend_types.h) and registers it with one line of backend_list.h; these
 * functions dispatch on kind through that table. Buffers
 * passed to kernels are dense, row-major, in the order of the spec's inputs
 * and outputs. */
#ifndef KORCH_BACKEND_BACKEND_H
#define KORCH_BACKEND_BACKEND_H

#include "backend/backend_types.h"

const char *korch_backend_name(korch_backend_kind kind);
/* The kind whose name (korch_backend_name) is `name`; false if none. */
bool korch_backend_from_name(const char *name, korch_backend_kind *kind);

/* Cheap structural check; on false, `reason` says why (e.g. "post-op GELU-tanh
 * not expressible as a oneDNN post-op"). */
bool korch_backend_supports(korch_backend_kind kind, const korch_kernel_spec *spec, char *reason, size_t size);

/* Tunes and times every spec (batched: one compiler run for many kernels),
 * consulting and filling the profile database. results[i] for specs[i]. The
 * call fails only on infrastructure errors (no compiler, unusable database);
 * a spec the backend cannot implement gets results[i].status != KORCH_OK. */
korch_status korch_backend_profile(korch_backend_kind kind, const korch_kernel_spec *specs, int n,
                                   const korch_profile_options *options, korch_profile_result *results);

/* Builds runnable kernels for given schedules (plan loading); batched too. */
korch_status korch_backend_build(korch_backend_kind kind, const korch_kernel_spec *specs, const char *const *schedules,
                                 int n, const korch_profile_options *options, korch_kernel **kernels);

void korch_kernel_destroy(korch_kernel *k);

/* The schedule a kernel without a timed one gets, written into out (empty
 * when the backend has no schedule to fix). A plan records it, so that what
 * `korch run PLAN` and `korch export` compute does not depend on the
 * environment they run in: cgen's default parallelism follows
 * OMP_WAIT_POLICY, which the CLI sets by the machine's load, and a parallel
 * reduction sums in another order than a serial one (an estimated candy
 * plan differed from its export by 1.8e-6 of its scale for that reason).
 * False, with the reason in out, when the spec has no such schedule. */
bool korch_backend_untimed_schedule(korch_backend_kind kind, const korch_kernel_spec *spec, char *out, size_t size);

/* Fault injection, for tests of the verification (src/verify): while a
 * hook is set, every kernel korch_backend_build builds gets the fault the
 * hook returns for it. Never set outside tests. NULL removes it. Not
 * thread-safe: set it before building. */
void korch_backend_set_fault(korch_fault_fn fn, void *user);

/* What a backend's kernels depend on besides their signature and schedule:
 * generator version, compiler and flags, library version. Stored verdicts
 * (src/verify) are keyed by it, so a new compiler or oneDNN is checked
 * again. options (may be NULL) name the compiler and flags kernels are built
 * with (korch_profile_options.cc, cc_opt). */
const char *korch_backend_identity(korch_backend_kind kind, const korch_profile_options *options);

#endif
