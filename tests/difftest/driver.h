/* korch-difftest's driver: one seed = generate, load, reference outputs,
 * then every requested strategy's plan and the forced-candidate plans, each
 * run with the executor and compared (compare.h). docs/difftest.md. */
#ifndef KORCH_DIFFTEST_DRIVER_H
#define KORCH_DIFFTEST_DRIVER_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "gen.h"
#include "relayout/relayout.h"
#include "orchestrate/orchestrate.h"
#include "runtime/plan.h"

typedef struct dt_options {
    const char *work_dir; /* private: profile database, kernel cache, models */
    const char *keep_dir; /* failing models, inputs and plans are kept here */
    bool strategy[KORCH_STRATEGY_COUNT];
    bool forced;
    int max_forced; /* forced candidates per graph, a seeded sample; 0: all */
    bool measure; /* real backends with tuning instead of the estimate oracle */
    double budget_s; /* with measure: tuning budget per graph */
    int threads;
    int verbose;
    bool no_runner; /* forced plans through korch's executor too (slow; to confirm a runner finding) */
    const char *model; /* check this model instead of generating one (inputs from the seed) */
    /* the product path: strategy plans come from korch_orchestrator_solve_verified
     * (kernels checked against the interpreter, the plan against the reference,
     * wrong kernels excluded); every plan it returns is compared as usual */
    bool verify;
    bool refused_fails; /* --refused-fails: with verify, a refused plan is a failure (regressions) */
    /* --excluded-fails: with verify, a candidate kernel excluded for wrong
     * values (not for failing to build or run) is a failure (regressions of
     * kernel checks that were too strict, seed 6068) */
    bool excluded_fails;
    unsigned features; /* DT_FEAT_* (--features): the generator's half and qdq */
    /* the layouts plans are made in (--layout; auto: channels-last and nchw);
     * n_layouts 0: the default (channels-last) alone */
    int n_layouts;
    korch_layout_strategy layouts[2];
    /* --precision bf16: every plan computes its linear primitives in bf16
     * (docs/precision.md); outputs are held to the float32 reference with
     * DT_BF16_PER_LINEAR of the scale per linear operator added to the bound */
    korch_precision precision;
    /* --precision bf16-mixed: bf16, with a seeded half of the linear
     * primitives kept in float32, as the optimiser's per-primitive choice
     * leaves them (docs/precision.md, "Where bf16 pays") */
    bool bf16_mixed;
} dt_options;

typedef struct dt_stats {
    long graphs, plans, failures, gen_errors;
    long same_plans; /* plans equal to the previous strategy's: not run again */
    long candidates; /* fused kernels run: forced candidates and strategy plans' fused kernels */
    long second_backend; /* forced candidates run on their second backend (korch_candidate_second_backend) */
    long prims; /* primitives of all graphs */
    long excluded; /* --verify: candidate kernels verification excluded as wrong */
    long refused; /* --verify: strategies for which korch refused to return a plan */
    long layout_graphs; /* --layout auto: graphs whose nchw primitive graph differs (checked twice) */
    long if_converted_graphs; /* graphs with an if-converted If, checked against their Ifs kept whole */
    long same_layout;   /* --layout auto: graphs both layouts lower to the same primitive graph */
    long mixed_linear, mixed_kept; /* --precision bf16-mixed: linear primitives, and those kept float32 */
    double worst_ratio; /* largest error / bound among comparisons that passed */
    uint64_t worst_seed;
    dt_coverage coverage;
    /* seconds spent per phase (where a graph's time goes) */
    double t_gen, t_reference, t_optimize, t_executor, t_runner_build, t_runner_run;
} dt_stats;

double dt_now(void);

/* Checks one seed; failures are printed and counted in stats. Returns an
 * error only when the harness itself cannot go on (no work dir, ...). */
korch_status dt_check_seed(const dt_options *o, uint64_t seed, dt_stats *stats);

/* ---- the optimize step (optimize.c) --------------------------------------- */

typedef struct dt_optimizer {
    korch_profile_options profile;
    korch_machine_model typical;
    korch_kernel_oracle oracle;
    korch_orchestrator *orch;
    korch_verifier *verifier; /* --verify */
    char db[4096], cache[4096];
} dt_optimizer;

void dt_optimizer_init(dt_optimizer *opt, const dt_options *o);
/* THE optimize step: model -> a strategy's plan (candidates are built and
 * profiled on the first call, then shared by the later ones, as in `korch
 * bench`). A verified optimize driver slots in here. */
korch_status dt_optimize(dt_optimizer *opt, const dt_options *o, const korch_plan_model *m, korch_strategy s,
                         korch_plan **plan);
/* The candidates of the optimal strategy (after dt_optimize), or NULL. */
korch_candidate_set *dt_optimizer_candidates(dt_optimizer *opt);
int dt_optimizer_excluded(const dt_optimizer *opt); /* --verify: kernels excluded as wrong */
void dt_optimizer_free(dt_optimizer *opt);

/* ---- forced plans (forced.c) ------------------------------------------------ */

/* Multi-node candidates a plan could use (profiled, not rejected). */
int dt_forced_list(const korch_candidate_set *set, int *out);
/* A plan of the given candidates (disjoint) and single-primitive kernels for
 * every other node; KORCH_ERR_INVALID_ARGUMENT when they cannot be scheduled
 * together (a cycle through two multi-node kernels). */
korch_status dt_forced_plan(const korch_candidate_set *set, const int *cands, int n, korch_plan **out);

#endif
