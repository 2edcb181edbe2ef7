/* Kernel backends: how a candidate kernel (a set of primitives) becomes
 * runnable code, and how it is profiled.
 *
 *   cgen   generated C for memory-bound kernels (no linear primitive),
 *          compiled with the system compiler, loaded with dlopen, tuned
 *   dnnl   oneDNN convolution / matmul with fused post-ops
 *   ref    the primitive interpreter (opaque operators; never chosen when a
 *          real backend can implement the kernel)
 *
 * Every backend implements the same four calls, dispatched on kind. Buffers
 * passed to kernels are dense, row-major, in the order of the spec's inputs
 * and outputs. */
#ifndef KORCH_BACKEND_BACKEND_H
#define KORCH_BACKEND_BACKEND_H

#include <stdbool.h>
#include <stddef.h>

#include "ir/nodeset.h"

typedef enum korch_backend_kind {
    KORCH_BACKEND_CGEN,
    KORCH_BACKEND_DNNL,
    KORCH_BACKEND_REF,
    KORCH_BACKEND_COUNT
} korch_backend_kind;

const char *korch_backend_name(korch_backend_kind kind);

/* A runnable kernel, built for one schedule. */
typedef struct korch_kernel {
    korch_backend_kind backend;
    char impl[160]; /* human-readable implementation, e.g. "cgen k3f2a1 tile=64 par=0"
                       or "dnnl brg:avx512_core" */
    void *state;
    /* bit j: input j is a constant the kernel copied when it was built (oneDNN's
     * reordered weights) and never reads at run time, so its data may be
     * released (korch_executor_release_constants) */
    uint64_t inputs_copied;
    korch_status (*run)(struct korch_kernel *k, void *const *inputs, void *const *outputs);
    void (*destroy)(struct korch_kernel *k);
} korch_kernel;

typedef struct korch_profile_options {
    int threads;          /* OpenMP threads kernels run with */
    double budget_s;      /* total tuning time budget for this call (<= 0: backend default) */
    const char *db_path;  /* profile database; NULL: $XDG_CACHE_HOME/korch/profile.db */
    const char *cache_dir;/* compiled-object cache; NULL: $XDG_CACHE_HOME/korch/kernels */
    bool progress;        /* progress bar on stderr (only when stderr is a terminal) */
    bool quick;           /* time one default schedule per kernel, no tuning (results say
                             default_only); the orchestrator tunes what its plans use */
    double fresh_after;   /* > 0: stored profiles measured before this time (unix seconds) are
                             measured again and replaced (korch optimize --reprofile) */
} korch_profile_options;

typedef struct korch_profile_result {
    korch_status status;  /* KORCH_OK, or why this spec could not be implemented */
    char reason[256];     /* when status != KORCH_OK */
    double latency_ms;    /* median */
    double spread_ms;     /* max - min of the timed repeats */
    char schedule[256];   /* opaque to callers; rebuilds the same kernel */
    char impl[160];
    char key[48];         /* the backend's signature of the kernel, its profile database key
                             (with the schedule: the key of stored verdicts, src/verify) */
    bool from_database;   /* nothing was compiled or timed */
    bool default_only;    /* only the default schedule was timed (quick mode): tuning can
                             lower latency_ms; false when tuned or nothing to tune */
    bool provisional;     /* measured while the machine was disturbed, or a stored profile of
                             unknown quality (docs/profiling.md, "Profile quality") */
} korch_profile_result;

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

/* Fault injection, for tests of the verification (src/verify): while a
 * hook is set, every kernel korch_backend_build builds gets the fault the
 * hook returns for it. Never set outside tests. NULL removes it. Not
 * thread-safe: set it before building. */
typedef enum korch_fault {
    KORCH_FAULT_NONE,
    KORCH_FAULT_ELEMENT,    /* one element of the first output is off by +1 */
    KORCH_FAULT_SCALE,      /* every element of the first output becomes 1.5 x + 0.25 */
    KORCH_FAULT_ACCUMULATE, /* the first output is added to what its buffer held (right on zeroed memory only) */
} korch_fault;
typedef korch_fault (*korch_fault_fn)(void *user, korch_backend_kind kind, const korch_kernel_spec *spec);
void korch_backend_set_fault(korch_fault_fn fn, void *user);

/* What a backend's kernels depend on besides their signature and schedule:
 * generator version, compiler and flags, library version. Stored verdicts
 * (src/verify) are keyed by it, so a new compiler or oneDNN is checked
 * again. */
const char *korch_backend_identity(korch_backend_kind kind);

#endif
