/* The oneDNN backend: one linear primitive (convolution, transposed
 * convolution, matmul) with the elementwise chain after it fused as oneDNN
 * post-ops. See docs/linear-backend.md.
 *
 *     korch_dnnl_supports   structural check (no oneDNN call), with a reason
 *     korch_dnnl_profile    try the layout variants, reject reference
 *                           implementations, time the best, profile database
 *     korch_dnnl_build      primitives created and constant weights reordered
 *                           once; run() only executes
 */
#ifndef KORCH_BACKEND_DNNL_DNNL_BACKEND_H
#define KORCH_BACKEND_DNNL_DNNL_BACKEND_H

#include "backend/backend.h"

bool korch_dnnl_supports(const korch_kernel_spec *spec, char *reason, size_t size);
/* schedules[i] NULL or "" means the default variant of the spec. */
korch_status korch_dnnl_build(const korch_kernel_spec *specs, const char *const *schedules, int n,
                              const korch_profile_options *options, korch_kernel **kernels);

/* The variants (schedules) the profiler tries for a spec run with `threads`
 * threads (<= 0: OpenMP's default), in preference order, separated by ';'
 * (e.g. "fmt=plain;fmt=blocked;fmt=plain thr=1"), before any restriction by
 * korch_profile_options.dnnl_variants. For tests and benchmarks;
 * false with a reason when the spec is unsupported. */
bool korch_dnnl_variants(const korch_kernel_spec *spec, int threads, char *out, size_t size, char *reason,
                         size_t reason_size);

/* The post-op chain a spec becomes, human-readable (e.g. "conv nhwc 3x3 s1
 * +bias +eltwise_relu +binary_add[1x56x56x64]"), for tests and explain. */
korch_status korch_dnnl_describe(const korch_kernel_spec *spec, char *out, size_t size);

/* What a korch_dnnl_profile call did (tests and reports). */
typedef struct korch_dnnl_stats {
    int kernels, from_database, unsupported, timed;
    int variants_tried;   /* primitive descriptors created */
    int reference_rejected; /* variants dropped because oneDNN chose ref: */
    int reference_kept;   /* specs whose only implementation is ref: (marked) */
    double total_s;
} korch_dnnl_stats;


/* The oneDNN version (korch_backend_identity). */
const char *korch_dnnl_identity(const korch_profile_options *options);

/* The backend's profile call (korch_backend_profile) with what it did in
 * *stats (NULL: not wanted). */
korch_status korch_dnnl_profile(const korch_kernel_spec *specs, int n, const korch_profile_options *options,
                                korch_profile_result *results, korch_dnnl_stats *stats);

/* The backend's table (backend_list.h). */
extern const korch_backend_ops korch_backend_ops_dnnl;

#endif
