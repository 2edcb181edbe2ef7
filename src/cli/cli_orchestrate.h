/* What `korch optimize` and `korch bench` share: their options, and the
 * model -> orchestrator -> profiles pipeline, which is the C API's too
 * (api/pipeline.h): these functions turn flags into its configuration. */
#ifndef KORCH_CLI_CLI_ORCHESTRATE_H
#define KORCH_CLI_CLI_ORCHESTRATE_H

#include "api/pipeline.h"
#include "cli/cli.h"
#include "orchestrate/orchestrate.h"
#include "runtime/plan.h"

typedef struct korch_cli_orchestrate_args {
    const char *command; /* "optimize" or "bench": usage errors name it */
    const char *model;
    const char *db;
    const char *cache_dir;
    long threads; /* 0: all cores */
    double budget_s; /* kernel tuning budget (0: backend default) */
    double time_limit_s; /* binary programs, wall clock */
    long max_kernel_nodes, max_partition_nodes;
    bool no_prune;
    bool reprofile; /* --reprofile: stored profiles of this model's kernels are measured again and replaced */
    long closed_loop; /* --closed-loop N: plans measured in place after solving (0: off) */
    bool quiet;
    bool dry_run; /* candidates only: no profiling */
    bool estimate; /* latencies from the roofline model, nothing compiled or timed */
    bool no_verify; /* --no-verify: kernels and plans are not checked (for studying korch itself) */
    long verify_seed;
    int n_verify_inputs; /* --input NAME=FILE: verification also runs on these */
    const char *verify_inputs[64];
    korch_cli_shapes shapes;
    int n_specialize; /* --specialize NAME=VALUE_OR_FILE: the input is that constant, and the plan guards it */
    const char *specialize[64];
    /* optimize --layout nchw|channels-last: the layout pass the model is
     * lowered with, over KORCH_LAYOUT (--layout auto is cmd_optimize's loop
     * over both, docs/layout.md) */
    bool layout_given;
    korch_layout_strategy layout;
    /* --precision fp32|bf16: the linear primitives' arithmetic (docs/precision.md) */
    korch_precision precision;
    bool bf16_everywhere; /* --precision bf16-all */
} korch_cli_orchestrate_args;

/* verifier: NULL with --no-verify; verify_inputs: the --input files bound
 * to the graph inputs, or NULL */
typedef korch_pipeline korch_cli_session;

void korch_cli_orchestrate_args_init(korch_cli_orchestrate_args *a);
void korch_cli_orchestrate_args_free(korch_cli_orchestrate_args *a);
/* Consumes argv[*i] (and its value) if it is a shared option: *used = 1.
 * Returns 0 or a usage exit code. */
int korch_cli_orchestrate_option(korch_cli_orchestrate_args *a, int argc, char **argv, int *i, const char *command,
                                 int *used);
void korch_cli_orchestrate_help(void);

/* Loads the model, builds the candidates strategy `most` (and the simpler
 * ones) needs, and profiles them. Returns 0 or an exit code; end() must be
 * called either way. */
int korch_cli_orchestrate_begin(const korch_cli_orchestrate_args *a, korch_strategy most, korch_cli_session *s);
/* A strategy's plan: verified (korch_orchestrator_solve_verified) unless
 * --no-verify. */
korch_status korch_cli_orchestrate_solve(const korch_cli_orchestrate_args *a, korch_cli_session *s,
                                         korch_strategy strategy, korch_plan **out);
/* Records the model, shapes and threads in a freshly solved plan. */
korch_status korch_cli_orchestrate_finish_plan(const korch_cli_orchestrate_args *a, const korch_cli_session *s,
                                               korch_plan *plan);
/* As korch_cli_orchestrate_end, but the session's model moves to *keep (the
 * caller closes it) instead of being closed. */
void korch_cli_orchestrate_end_keep(korch_cli_session *s, korch_plan_model *keep);
void korch_cli_orchestrate_end(korch_cli_session *s);

#endif
