/* Orchestration: which candidate kernels to run.
 *
 *     korch_orchestrator_create   greedy groups, partitions, candidates
 *     korch_orchestrator_profile  latencies (batched, pruned by a bound)
 *     korch_orchestrator_solve    a strategy's kernel choice, as a plan
 *
 * Strategies:
 *   none     one kernel per primitive
 *   greedy   rule-based fusion in the style of TVM's FuseOps (greedy.c)
 *   optimal  the binary linear program (solve.c), seeded with greedy
 *
 * The binary program, per partition: one variable per candidate, minimise
 * the summed latency, produce every value the partition must hand on, and
 * produce every non-constant input of a chosen kernel (inside the partition).
 * A solution can still deadlock with multi-output kernels; the solver then
 * adds a cut and solves again (simulate.c, docs/orchestration.md). */
#ifndef KORCH_ORCHESTRATE_ORCHESTRATE_H
#define KORCH_ORCHESTRATE_ORCHESTRATE_H

#include <stdio.h>

#include "candidates/candidates.h"
#include "profile/profile.h"
#include "runtime/plan.h"
#include "verify/verify.h"

typedef enum korch_strategy {
    KORCH_STRATEGY_NONE,
    KORCH_STRATEGY_GREEDY,
    KORCH_STRATEGY_OPTIMAL,
    KORCH_STRATEGY_COUNT
} korch_strategy;

const char *korch_strategy_name(korch_strategy s);
bool korch_strategy_parse(const char *text, korch_strategy *out);

/* Where candidates get their support answers and latencies: the backends in
 * production (korch_kernel_oracle_backends), a model in tests. */
typedef struct korch_kernel_oracle {
    korch_supports_fn supports;
    /* Like korch_backend_profile, with a tuning budget for this call; quick:
     * time the default schedule only (korch_profile_options.quick). */
    korch_status (*profile)(void *user, korch_backend_kind kind, const korch_kernel_spec *specs, int n, double budget_s,
                            bool quick, korch_profile_result *results);
    void *user;
} korch_kernel_oracle;

/* The real backends; `options` must outlive the oracle. */
korch_kernel_oracle korch_kernel_oracle_backends(const korch_profile_options *options);
/* No measurements: latency = roofline with `machine` (typical constants,
 * not the optimistic bound) + 2 us per kernel; REF kernels 20x slower.
 * `machine` must outlive the oracle. */
korch_kernel_oracle korch_kernel_oracle_estimate(const korch_machine_model *machine);
korch_machine_model korch_machine_model_typical(int threads);

/* Under --precision bf16, keeps in float32 every linear primitive whose
 * kernel alone is not clearly faster in bf16 (precision_choice.c), and
 * places the precision casts again; logs what it chose. A float32 graph is
 * left as it is. */
korch_status korch_choose_linear_precision(korch_pgraph *pg, const korch_kernel_oracle *oracle, FILE *log);

typedef struct korch_orchestrate_options {
    korch_candidate_options candidates;
    korch_machine_model machine;
    bool prune_by_bound; /* drop candidates that cannot beat their own split */
    double profile_budget_s; /* seconds for all profiling, counted from its start; phase 1 always
                                completes, tuning stops when they are spent (<= 0: no limit) */
    int profile_chunk; /* specs per quick profiling call (phase 1) */
    int tune_chunk; /* kernels per tuning call (phase 2) */
    double solve_time_limit_s; /* wall clock for all binary programs together */
    int max_cut_rounds; /* per partition */
    bool pairwise_cuts; /* pre-add the 2-cycle exclusions */
    bool drop_dominated; /* leave out candidates whose split costs no more (solve.c) */
    bool progress; /* progress bar on stderr (only on a terminal) */
    FILE *log; /* statistics; NULL: quiet */
    bool estimated; /* the oracle estimates (korch_kernel_oracle_estimate): the log says so
                       rather than speaking of measuring and tuning */
    /* Tuning (phase 2): the optimal strategy tunes the kernels of the greedy
     * plan too (then optimal <= greedy holds between tuned plans) */
    bool tune_greedy;
    /* < 1: while searching, an untuned kernel counts as this fraction of its
     * default latency (what tuning might make of it), so kernels that could
     * win once tuned are tuned too; 1: only the chosen ones */
    double tune_margin;
    /* Verification (src/verify, verify_choice.c): every kernel a strategy
     * chooses is checked before the plan is final; wrong ones are excluded
     * and the strategy chooses again, at most max_verify_rounds times.
     * verifier.check NULL: nothing is checked (tests of the program). */
    korch_kernel_verifier verifier;
    int max_verify_rounds;
    /* The clock profile_budget_s is counted on, in milliseconds (positive);
     * NULL: the monotonic wall clock. Tests pass a simulated one, so that
     * what a budget allows cannot depend on the machine's speed or load. */
    double (*clock_ms)(void *user);
    void *clock_user;
} korch_orchestrate_options;

korch_orchestrate_options korch_orchestrate_options_default(int threads);

typedef struct korch_blp_stats {
    int variables, rows;
    int dominated; /* candidates left out: their split costs no more (split_cost.c) */
    int rounds, cuts, pair_cuts;
    double objective, bound, gap; /* gap = (objective - bound) / objective */
    double seconds;
    bool optimal; /* proven optimal (every round) */
    bool time_limit; /* a time limit stopped a round */
    bool fell_back; /* no usable solution: the greedy choice was kept */
    int reused; /* 1: the same program was solved for another partition (solve_memo.c); summed: partitions */
} korch_blp_stats;

typedef struct korch_orchestrator korch_orchestrator;

/* Prepares the candidates `most` needs, and with them those of the simpler
 * strategies: none (single primitives), greedy (+ the greedy groups), optimal
 * (+ every enumerated candidate). */
korch_status korch_orchestrator_create(const korch_pgraph *pg, const korch_kernel_oracle *oracle,
                                       const korch_orchestrate_options *options, korch_strategy most,
                                       korch_orchestrator **out);
void korch_orchestrator_free(korch_orchestrator *o);

/* Profiles every candidate not yet timed (bound pruning on request). */
korch_status korch_orchestrator_profile(korch_orchestrator *o);

/* The chosen kernels of a strategy, in topological order. The plan gets its
 * kernels, strategy and predicted latency; the caller fills the model fields. */
korch_status korch_orchestrator_solve(korch_orchestrator *o, korch_strategy strategy, korch_plan **out);

/* What tuning did so far (phase 2), and in how many rounds. */
const struct korch_tune_state *korch_orchestrator_tuning(const korch_orchestrator *o);
int korch_orchestrator_tune_rounds(const korch_orchestrator *o);

/* Kernels verification excluded (their outputs differed from the
 * interpreter's), and how many kernels were checked. */
typedef struct korch_excluded_kernel {
    int candidate;
    korch_backend_kind backend;
    double worst_ratio;
    char impl[160];
    char detail[256];
} korch_excluded_kernel;

typedef struct korch_verify_log {
    long checked; /* kernels handed to the verifier (stored verdicts included) */
    int rounds; /* times a strategy chose again because a chosen kernel was wrong */
    int n_excluded, cap_excluded;
    korch_excluded_kernel *excluded;
} korch_verify_log;

void korch_verify_log_free(korch_verify_log *log);
const korch_verify_log *korch_orchestrator_verify_log(const korch_orchestrator *o);

/* Marks the candidate a plan kernel came from wrong (a plan check found it,
 * korch_verify_plan), records the verdict, rejects it and every candidate
 * of the same kernel; the next solve chooses without it. */
korch_status korch_orchestrator_exclude(korch_orchestrator *o, const korch_plan_kernel *k,
                                        const korch_verify_result *r);

/* A strategy's plan, checked whole before it is returned (verified_plan.c):
 * solve, run the plan against the reference executor (korch_verify_plan on
 * the seeded inputs and, when given, the caller's), and while a kernel is
 * at fault exclude it and solve again, at most max_rounds times. A plan
 * that cannot be made to pass is an error naming the fault (fission, the
 * executor, or a kernel that keeps failing); never a returned plan. The
 * plan's verification fields are filled. check (optional) receives the last
 * check's per-output numbers. */
typedef struct korch_plan_verify_options {
    korch_verify_options verify; /* seed, build options; verify.inputs: the caller's inputs or NULL */
    const korch_graph *graph;    /* the inferred op graph pg was lowered from */
    const char *model_sha256;    /* the model file's hash: a passing check of the same plan is
                                    remembered (verify/plan_verdict.c); NULL: always checked */
    int max_rounds;              /* <= 0: 8 */
    FILE *log;                   /* what was checked and excluded; NULL: quiet */
} korch_plan_verify_options;

korch_status korch_orchestrator_solve_verified(korch_orchestrator *o, korch_strategy strategy,
                                               const korch_plan_verify_options *options, korch_plan **out);

/* The closed loop after solving (closed_loop.c, docs/orchestration.md,
 * "Closed loop"): the chosen plan runs in place with in-plan kernel
 * timing. The plan's typical in-plan/profile ratio R is the median of the
 * kernels' ratios (kernels of at least 2 us in place); a kernel whose ratio
 * is more than `threshold` times above or below R, and whose difference
 * from R x profile is at least `min_share` of the plan's measured kernel
 * time, takes its in-plan time as its cost (re-profiled in context), and
 * the strategy solves again; at most `rounds` plans are measured, and a
 * plan already measured ends the loop. The plan returned is the one that
 * ran fastest, with its measurements recorded (measured_ms) and its
 * kernels' latencies (and predicted_ms) the costs the program holds after
 * the last correction. Differences under 2 us are never material. Every plan
 * comes from korch_orchestrator_solve_verified when `verify` is given, so
 * the loop never returns an unverified plan that solve_verified would not. */
typedef korch_status (*korch_plan_measure_fn)(void *user, const korch_plan *plan, double *kernel_ms,
                                              double *wall_ms, korch_profile_quality *quality);
typedef struct korch_closed_loop_options {
    int rounds;          /* plans measured at most (<= 0: 3; 1 measures and records only) */
    int runs;            /* timed runs per plan, after 2 warm-up runs (<= 0: 10) */
    double threshold;    /* <= 1: 1.5 */
    double min_share;    /* <= 0: 0.01 */
    const korch_graph *graph;           /* for seeded inputs (NULL: values in [0.5, 1.5], integers 0) */
    const korch_profile_options *build; /* how the plan's kernels are built */
    /* per-kernel in-plan medians, the wall median of a plan and the machine
     * state around the runs (NULL: run it with korch_executor_time_kernels
     * under a profile monitor; tests give a fake). A disturbed measurement
     * (quality.provisional) is reported, neither recorded in the plan nor
     * used to correct costs: it ends the loop. */
    korch_plan_measure_fn measure;
    void *measure_user;
    FILE *log;
} korch_closed_loop_options;

korch_status korch_orchestrator_solve_measured(korch_orchestrator *o, korch_strategy strategy,
                                               const korch_plan_verify_options *verify,
                                               const korch_closed_loop_options *loop, korch_plan **out);

/* The cost the program uses for the candidate a plan kernel came from
 * (the closed loop's in-context correction); its partition is solved again. */
korch_status korch_orchestrator_set_cost(korch_orchestrator *o, const korch_plan_kernel *k, double ms);
/* The cost the program uses now for the candidate of a plan kernel (its
 * latency_ms when no candidate matches). */
double korch_orchestrator_kernel_cost(const korch_orchestrator *o, const korch_plan_kernel *k);

/* Statistics of the last optimal solve, summed over partitions. */
const korch_blp_stats *korch_orchestrator_blp_stats(const korch_orchestrator *o);
korch_candidate_set *korch_orchestrator_candidates(korch_orchestrator *o);

/* ---- internals shared by the orchestrate files ------------------------- */

/* Greedy fusion groups: group_of[node] for every live node (singletons get a
 * group of their own). Groups are convex, single-output, at most max_nodes
 * nodes, and accepted by their backend. */
korch_status korch_greedy_groups(const korch_pgraph *pg, const korch_pgraph_uses *uses, korch_supports_fn supports,
                                 void *supports_user, int max_nodes, int force_backend, int *group_of);

/* split(C) (split_cost.c): the cheapest known way to run the nodes of a convex
 * set as two or more smaller kernels, under `cost` (INFINITY: the candidate
 * is not usable), memoised. The memo assumes the costs it has seen do not
 * change while it lives. */
typedef double (*korch_split_cost_fn)(void *user, const korch_candidate *c);
typedef struct korch_split_memo {
    const korch_candidate_set *set;
    korch_split_cost_fn cost;
    void *user;
    uint64_t *keys; /* mask; 0 empty */
    int *parts;
    double *values;
    size_t cap, count;
} korch_split_memo;

void korch_split_init(korch_split_memo *m, const korch_candidate_set *set, korch_split_cost_fn cost, void *user);
void korch_split_free(korch_split_memo *m);
/* INFINITY when no split is known (or the set has one node) */
double korch_split_cost(korch_split_memo *m, int p, korch_nodemask mask);

/* Profiling rounds by candidate size (phase1_profile.c): phase 1, default schedules. */
korch_status korch_profile_candidates(korch_candidate_set *set, const korch_kernel_oracle *oracle,
                                      const korch_orchestrate_options *options);
/* Copies a backend's result into a candidate (latency, schedule, untuned). */
void korch_candidate_apply_result(korch_candidate *c, const korch_profile_result *r);

/* Phase 2 (phase2_tune.c): tuning the kernels plans use, within the budget. */
typedef struct korch_tune_state {
    double start_ms; /* korch_now_ms() when profiling began: the budget counts from here */
    double budget_s; /* <= 0: no limit */
    int *by_sig; /* usable candidates sorted by backend and signature */
    int n_by_sig;
    long submitted; /* distinct kernels handed to the backends for tuning */
    long tuned; /* of which came back tuned */
    long skipped; /* left untuned: no budget left */
    double default_ms, tuned_ms; /* summed over tuned kernels: before and after */
    double seconds; /* in tuning calls */
    bool out_of_budget;
    bool scaled; /* the program scales untuned costs (tune_margin): tuning a kernel changes
                    its cost even when its latency stays */
    double (*clock_ms)(void *user); /* korch_orchestrate_options.clock_ms */
    void *clock_user;
} korch_tune_state;

void korch_tune_state_free(korch_tune_state *ts);
double korch_tune_budget_left(const korch_tune_state *ts);
/* Tunes the untuned kernels among candidates cands[0..n) (once per signature,
 * most expensive first), gives every candidate of a tuned signature the new
 * latency and sets dirty[p] where a latency of partition p changed (dirty
 * may be NULL). *submitted: kernels handed to the backends (0: nothing left
 * to tune, or no budget). */
korch_status korch_tune_candidates(korch_candidate_set *set, const korch_kernel_oracle *oracle,
                                   const korch_orchestrate_options *options, korch_tune_state *ts, const int *cands,
                                   int n, bool *dirty, int *submitted);

/* The optimal choice for partition p (solve.c). start: candidate indices of
 * a schedulable choice (greedy), the MIP start and the fallback. available:
 * scratch of pg->n_values bools, all true on entry and on return. chosen
 * receives candidate indices in a schedulable order. The cost of a candidate
 * is its latency, times untuned_scale while it is untuned and could still be
 * tuned (1: the measured latencies). */
/* Solutions of programs solved before, keyed by the whole program
 * (solve_memo.c); NULL disables reuse. */
typedef struct korch_solve_memo korch_solve_memo;

korch_status korch_solve_partition(korch_candidate_set *set, int p, const int *start, int n_start, double time_limit_s,
                                   double untuned_scale, const korch_orchestrate_options *options, bool *available,
                                   korch_solve_memo *memo, int *chosen, int *n_chosen, korch_blp_stats *stats);

/* Verification (verify_choice.c). Stored verdicts for every usable
 * candidate, nothing run: the known-wrong are rejected. */
korch_status korch_verify_stored(korch_candidate_set *set, const korch_kernel_oracle *oracle,
                                 const korch_kernel_verifier *vf, korch_verify_log *log);
/* Checks candidates cands[0..n) whose verdict is unknown; a wrong one is
 * rejected with every candidate of the same kernel and schedule (a single
 * primitive moves to REF), its partition marked dirty; *n_wrong counts them. */
korch_status korch_verify_chosen(korch_candidate_set *set, const korch_kernel_oracle *oracle,
                                 const korch_kernel_verifier *vf, const int *cands, int n, bool *dirty,
                                 korch_verify_log *log, int *n_wrong);

/* The candidate a plan kernel came from, rejected as wrong (and recorded). */
korch_status korch_orchestrator_exclude_kernel(korch_candidate_set *set, const korch_kernel_oracle *oracle,
                                               const korch_kernel_verifier *vf, const korch_plan_kernel *k,
                                               const korch_verify_result *r, bool *dirty, korch_verify_log *log);

/* ---- the binary program (blp.c) ----------------------------------------- */

typedef struct korch_blp {
    int n_vars;
    double *cost;
    int n_rows, cap_rows;
    int *row_start; /* n_rows + 1 entries */
    int n_nz, cap_nz;
    int *cols;
    double *coefs;
    char *sense; /* 'G', 'L', 'E' */
    double *rhs;
} korch_blp;

void korch_blp_init(korch_blp *b, int n_vars, const double *cost);
void korch_blp_free(korch_blp *b);
bool korch_blp_add_row(korch_blp *b, int nz, const int *cols, const double *coefs, char sense, double rhs);

typedef struct korch_blp_result {
    bool feasible; /* x holds an integer solution */
    bool optimal;
    bool time_limit;
    double objective, bound, seconds;
} korch_blp_result;

/* Solves with CBC (single thread, wall-clock limit). start: variables set to
 * 1 in a known feasible solution (MIP start). x receives 0/1 per variable. */
korch_status korch_blp_solve(const korch_blp *b, const int *start, int n_start, double time_limit_s, bool *x,
                             korch_blp_result *result);

/* ---- solutions reused between identical programs (solve_memo.c) -------- */

korch_solve_memo *korch_solve_memo_new(void);
void korch_solve_memo_free(korch_solve_memo *m);
bool korch_solve_memo_find(const korch_solve_memo *m, const korch_blp *b, const int *start, int n_start, bool *x,
                           korch_blp_stats *stats);
void korch_solve_memo_put(korch_solve_memo *m, const korch_blp *b, const int *start, int n_start, const bool *x,
                          const korch_blp_stats *stats);

/* ---- schedules and cuts (simulate.c) ------------------------------------ */

/* Kernels as input/output value lists, for simulation. */
typedef struct korch_sched_kernel {
    int n_inputs;
    const int *inputs;
    int n_outputs;
    const int *outputs;
} korch_sched_kernel;

/* Runs any chosen kernel whose inputs are available until none can run.
 * available[v] marks values available at the start (updated). Writes the
 * order of the chosen kernels that ran; returns how many ran. */
int korch_schedule_simulate(const korch_sched_kernel *kernels, const int *chosen, int n_chosen, bool *available,
                            int *order);

#endif
