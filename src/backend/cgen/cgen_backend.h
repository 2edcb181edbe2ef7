/* The cgen backend's implementation of the backend interface (backend.h). */
#ifndef KORCH_BACKEND_CGEN_CGEN_BACKEND_H
#define KORCH_BACKEND_CGEN_CGEN_BACKEND_H

#include "backend/backend.h"

bool korch_cgen_supports(const korch_kernel_spec *spec, char *reason, size_t size);
/* schedules[i] NULL or "" means the default schedule. */
korch_status korch_cgen_build(const korch_kernel_spec *specs, const char *const *schedules, int n,
                              const korch_profile_options *options, korch_kernel **kernels);

/* Generated C of one kernel (prelude included), for tests and `explain`. */
korch_status korch_cgen_source(const korch_kernel_spec *spec, const char *schedule, const korch_profile_options *options,
                               char **source);

/* What a korch_cgen_profile call did (for tests and reports). */
typedef struct korch_cgen_stats {
    int kernels;          /* specs profiled */
    int from_database;    /* answered from the profile database */
    int unsupported;
    int trials;           /* schedules timed */
    int cut;              /* of which stopped early, clearly slower than the best (racing) */
    int tuned;            /* kernels whose search finished */
    int interrupted;      /* kernels whose search the time budget stopped */
    int quick;            /* kernels timed with their default schedule only (quick mode) */
    int kept_start;       /* tuned kernels whose winner, timed again, lost to the start point */
    int duels, duels_won; /* final duels of the best two schedules (cgen_tune.c), and runner-ups that won */
    double fork_join_us;  /* quick mode: an empty parallel region (median), the busy-machine test */
    int compiled;         /* kernel functions compiled */
    int compiler_runs;
    double compile_s, time_s, total_s;
    double default_ms_sum, best_ms_sum; /* over tuned kernels */
} korch_cgen_stats;


/* The compiler, its version and flags (korch_backend_identity). */
const char *korch_cgen_identity(const korch_profile_options *options);

/* The backend's profile call (korch_backend_profile) with what it did in
 * *stats (NULL: not wanted). */
korch_status korch_cgen_profile(const korch_kernel_spec *specs, int n, const korch_profile_options *options,
                                korch_profile_result *results, korch_cgen_stats *stats);

/* The backend's table (backend_list.h). */
extern const korch_backend_ops korch_backend_ops_cgen;

#endif
