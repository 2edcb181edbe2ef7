/* Runs forced-candidate plans with kernels built once per graph (runner.c). */
#ifndef KORCH_DIFFTEST_RUNNER_H
#define KORCH_DIFFTEST_RUNNER_H

#include "candidates/candidates.h"
#include "runtime/plan.h"

typedef struct dt_runner {
    const korch_candidate_set *set;
    korch_kernel **kernel_of; /* per candidate: built kernel or NULL */
    void **ptr; /* per value: where it lives during a run */
    void **owned; /* per value: storage the runner allocated */
} dt_runner;

/* Builds cands[0..n) and every single-primitive candidate. */
korch_status dt_runner_build(dt_runner *r, const korch_candidate_set *set, const int *cands, int n,
                             const korch_profile_options *po);
/* Runs a plan made of built candidates (dt_forced_plan). */
korch_status dt_runner_run(dt_runner *r, const korch_plan *plan, const korch_tensor *inputs, korch_tensor *outputs);
void dt_runner_free(dt_runner *r);

#endif
