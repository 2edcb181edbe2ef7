/* Helpers of the C API tests: fixture paths, plans made quickly (roofline
 * estimates instead of measurements, default schedules: what
 * `korch optimize --estimate` does), and tensor comparison. */
#ifndef KORCH_TESTS_API_PLAN_H
#define KORCH_TESTS_API_PLAN_H

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "orchestrate/fake_oracle.h" /* test_orchestrate_options */
#include "orchestrate/orchestrate.h"
#include "runtime/plan.h"

/* $KORCH_SOURCE_DIR/tests/api/fixtures/<name> (or relative to the working
 * directory when the variable is unset) */
static inline void api_fixture(const char *name, char *buf, size_t size) {
    const char *src = getenv("KORCH_SOURCE_DIR");
    snprintf(buf, size, "%s/tests/api/fixtures/%s", src && *src ? src : ".", name);
}

/* Optimises `model` with estimated latencies on the real backends and saves
 * the plan to `plan_path`. */
static inline korch_status api_make_plan(const char *model, const char *plan_path, int threads) {
    korch_plan_model m;
    KORCH_TRY(korch_plan_model_load(model, NULL, 0, &m));
    korch_machine_model machine = korch_machine_model_typical(threads);
    korch_kernel_oracle oracle = korch_kernel_oracle_estimate(&machine);
    korch_orchestrate_options o = test_orchestrate_options(threads);
    korch_orchestrator *orch = NULL;
    korch_plan *plan = NULL;
    korch_status st = korch_orchestrator_create(m.pg, &oracle, &o, KORCH_STRATEGY_OPTIMAL, &orch);
    if (st == KORCH_OK) st = korch_orchestrator_profile(orch);
    if (st == KORCH_OK) st = korch_orchestrator_solve(orch, KORCH_STRATEGY_OPTIMAL, &plan);
    if (st == KORCH_OK) st = korch_plan_set_model(plan, model, &m);
    if (st == KORCH_OK) {
        plan->threads = threads;
        st = korch_plan_save(plan, plan_path);
    }
    korch_plan_free(plan);
    korch_orchestrator_free(orch);
    korch_plan_model_close(&m);
    return st;
}

/* float buffers equal within the tolerance of the generated kernels
 * (docs/codegen.md) */
static inline bool api_close(const float *got, const float *want, size_t n) {
    double scale = 0;
    for (size_t i = 0; i < n; i++)
        if (fabs(want[i]) > scale) scale = fabs(want[i]);
    for (size_t i = 0; i < n; i++)
        if (!(fabs((double)got[i] - want[i]) <= 1e-5 * (1 + scale) + 2e-5 * fabs(want[i]))) return false;
    return true;
}

#endif
