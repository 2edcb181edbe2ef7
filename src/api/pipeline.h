/* The optimise pipeline that `korch optimize` / `korch bench` (src/cli) and
 * the C API's korch_optimize (api/optimize.c) both run, so the two cannot
 * drift: the same model loading, profile and orchestrator options,
 * verification of kernels and plans, verification log, plan recording and
 * plan writing. The callers differ only in where options come from (flags
 * and the environment; korch_optimize_options) and where the log goes.
 *
 * Order: korch_pipeline_load (model), then the caller may bind verification
 * inputs (p->verify_inputs, the CLI's --input), korch_pipeline_prepare
 * (candidates, verifier), korch_orchestrator_profile(p->orch),
 * korch_pipeline_solve, korch_pipeline_finish_plan, then korch_pipeline_free
 * (or _free_keep, keeping the model for korch_plan_write) in any case.
 * Several input shapes in one plan file: api/buckets.h runs this once per
 * shape. */
#ifndef KORCH_API_PIPELINE_H
#define KORCH_API_PIPELINE_H

#include <stdio.h>

#include "orchestrate/orchestrate.h"
#include "runtime/plan.h"
#include "verify/verify.h"

typedef struct korch_pipeline_config {
    const char *model_path;
    const korch_input_shape *shapes; /* --input-shape / input_shapes */
    int n_shapes;
    const korch_input_value *values; /* graph inputs specialized to constants (--specialize), read by load */
    int n_values;
    korch_layout_strategy layout;
    korch_precision precision;     /* the linear primitives' arithmetic (checked against the CPU at load) */
    bool bf16_everywhere;          /* bf16: every linear primitive, without the per-primitive choice */
    int threads;                   /* >= 1: kernels are tuned and run with it (the caller set OpenMP's count) */
    korch_profile_options profile; /* everything but threads, which the pipeline sets */
    double time_limit_s;           /* binary programs, wall clock (<= 0: 120 s) */
    int max_kernel_nodes, max_partition_nodes; /* 0: korch_candidate_options_default() */
    bool no_prune;
    bool estimate;                 /* roofline latencies, nothing compiled or timed */
    bool verify;                   /* kernels and plans checked against the reference */
    uint64_t verify_seed;          /* the CLI's default and the API's: KORCH_VERIFY_DEFAULT_SEED */
    bool progress;                 /* the orchestrator's progress bar / lines */
    FILE *log;                     /* the statistics `korch optimize` prints; NULL: none */
} korch_pipeline_config;

typedef struct korch_pipeline {
    korch_plan_model model;
    korch_profile_options profile;
    korch_kernel_oracle oracle;
    korch_machine_model typical; /* for estimates */
    korch_orchestrate_options options;
    korch_orchestrator *orch;
    korch_verifier *verifier;    /* NULL without verification */
    korch_tensor *verify_inputs; /* one per graph input, or NULL: seeded inputs; freed by korch_pipeline_free */
    korch_plan_verify_options plan_verify;
    int threads;
    FILE *log;
    double t0; /* korch_now_s() at load: "optimize time" */
} korch_pipeline;

/* Loads and lowers the model; logs its size. p is zeroed first. */
korch_status korch_pipeline_load(const korch_pipeline_config *c, korch_pipeline *p);
/* Options, oracle, verifier (c->verify) and the orchestrator with the
 * candidates strategy `most` (and the simpler ones) needs. */
korch_status korch_pipeline_prepare(const korch_pipeline_config *c, korch_strategy most, korch_pipeline *p);
/* A strategy's plan, verified when p has a verifier (with the verification
 * statistics logged); closed_loop > 0 (and not an estimate): measured in
 * place and corrected, at most that many plans. */
korch_status korch_pipeline_solve(korch_pipeline *p, korch_strategy strategy, int closed_loop, korch_plan **out);
/* Records the model (path, hash, shapes) and the thread count in the plan. */
korch_status korch_pipeline_finish_plan(const korch_pipeline *p, const char *model_path, korch_plan *plan);
/* The summary korch optimize prints last, once the plan is written
 * (korch_plan_write: self-contained unless --no-embed, docs/plan-format.md):
 * "plan: ..." (for a plan with shape buckets, their count) and "optimize
 * time: ..."; nothing when log is NULL. */
/* --precision bf16: the per-primitive choice (orchestrate/precision_choice.c)
 * decides each primitive alone and cannot see that a primitive kept in
 * float32 also keeps its neighbours' values in float32 (twice the bytes); so
 * a plan that keeps some is compared with the every-primitive-bf16 plan of
 * the same model, and kept unless that one is predicted faster
 * (docs/precision.md, "Where bf16 pays"). Logs the comparison. */
bool korch_pipeline_keep_chosen_precision(const korch_plan *chosen, const korch_plan *all_bf16, FILE *log);
/* Whether a plan made with these settings calls for that comparison. */
bool korch_pipeline_compare_precision(korch_precision p, bool bf16_everywhere, bool estimate,
                                      const korch_plan *chosen);

void korch_pipeline_log_plan(FILE *log, const korch_plan *plan, int n_prims, const char *plan_path, double seconds);
void korch_pipeline_free(korch_pipeline *p);
/* As korch_pipeline_free, but the model moves to *keep (the caller closes
 * it): the plan file carries it (korch_plan_write). */
void korch_pipeline_free_keep(korch_pipeline *p, korch_plan_model *keep);

#endif
