/* Shared pieces of the korch command-line tool. Each command lives in its own
 * cmd_<name>.c and returns the process exit code: 0 success, 1 bad model or
 * failed run, 2 bad usage. */
#ifndef KORCH_CLI_CLI_H
#define KORCH_CLI_CLI_H

#include <stdbool.h>
#include <stddef.h>

#include <stdio.h>

#include "core/clock.h"
#include "frontend/frontend.h"
#include "runtime/plan.h"

#define KORCH_CLI_MAX_SHAPES 64

typedef struct korch_cli_command {
    const char *name;
    const char *summary;
    int (*main)(int argc, char **argv); /* argv[0] is the command name */
} korch_cli_command;

int korch_cmd_info(int argc, char **argv);
int korch_cmd_check(int argc, char **argv);
int korch_cmd_run(int argc, char **argv);
int korch_cmd_fission(int argc, char **argv);
int korch_cmd_optimize(int argc, char **argv);
int korch_cmd_explain(int argc, char **argv);
int korch_cmd_bench(int argc, char **argv);
int korch_cmd_export(int argc, char **argv);
int korch_cmd_db(int argc, char **argv);

/* Settings the CLI takes from the environment (cli_env.c, the only place
 * that reads it; docs/cli.md, "Environment"), read once. */
typedef struct korch_cli_env {
    korch_layout_strategy layout; /* KORCH_LAYOUT: nchw keeps the graph channels-first */
    /* korch_profile_options' tuning fields (0: the library's default) */
    int tune_trials;  /* KORCH_TUNE_TRIALS */
    int tune_explore; /* KORCH_TUNE_EXPLORE */
    int tune_log;     /* KORCH_TUNE_LOG (0 there: -1 here, silent) */
    double busy_us;   /* KORCH_BUSY_US */
    /* korch_profile_options' toolchain, measurement and test fields */
    const char *cc;              /* KORCH_CC */
    const char *cc_opt;          /* KORCH_CC_OPT */
    int cc_jobs;                 /* KORCH_CC_JOBS */
    long long cg_stream_min_bytes; /* KORCH_CG_STREAM_MIN_BYTES */
    int scrub_mib;               /* KORCH_PROFILE_SCRUB_MB (1..4096, else off) */
    int db_busy_ms;              /* KORCH_DB_BUSY_MS */
    const char *dnnl_variants;   /* KORCH_DNNL_VARIANTS */
    bool dnnl_log;               /* KORCH_DNNL_LOG (any value) */
} korch_cli_env;
/* Reads the environment once; the first call also installs the profiling
 * state hook KORCH_PROFILE_STATE asks for (main() calls it at start). */
const korch_cli_env *korch_cli_env_get(void);
/* Copies the environment's settings into o's fields of korch_profile_options
 * that the environment governs (tuning, toolchain, measurement, database
 * wait, oneDNN variants); the caller sets threads, paths and the rest. */
void korch_cli_env_profile(korch_profile_options *o);

/* Prints "korch: error: <message>" for the last error and returns 1. */
int korch_cli_fail(void);
/* Prints a usage error and returns 2. */
int korch_cli_usage_error(const char *command, const char *fmt, ...) KORCH_PRINTF(2, 3);
bool korch_cli_is_help(const char *arg);
/* Makes the CLI's OpenMP threads wait passively when the machine is busy at
 * start and the user set no wait policy, by
 * executing the CLI again (omp_policy.c); returns when nothing is to be done. */
void korch_cli_omp_policy(char **argv);
/* Says on stderr when korch_cli_omp_policy chose passive waiting (before timings). */
void korch_cli_omp_note(void);
/* Parses an option value at argv[*i + 1]; returns NULL (after printing) if missing. */
const char *korch_cli_value(int argc, char **argv, int *i, const char *command);
bool korch_cli_parse_int(const char *text, long lo, long hi, long *out);
/* CPUs this process may run on (its affinity mask) */
int korch_cli_cpus_usable(void);
/* --threads N: 1..1024, else a usage error (returns 2); a note on stderr
 * when N is more than the usable CPUs; 0 when parsed */
int korch_cli_parse_threads(const char *command, const char *text, long *out);

/* --input-shape NAME=DIMS accumulates into `shapes`. */
typedef struct korch_cli_shapes {
    korch_input_shape items[KORCH_CLI_MAX_SHAPES];
    char *storage[KORCH_CLI_MAX_SHAPES];
    int count;
} korch_cli_shapes;
/* Returns 0 or a usage exit code. */
int korch_cli_shapes_add(korch_cli_shapes *s, const char *spec, const char *command);
void korch_cli_shapes_free(korch_cli_shapes *s);


/* `korch run PLAN` (cli_plan.c). open: loads the plan, checks its model's
 * hash, points *model_path at the model (an embedded plan: at the plan
 * itself) and adds the plan's input shapes. A plan with shape buckets:
 * --input-shape (`shapes`) chooses the bucket; without it, the shapes
 * korch_cli_plan_graph is given (the input files') do.
 * prepare: lowers the run's inferred graph, checks it is the plan's, builds
 * the kernels. run: one execution (allocates outputs whose data is NULL).
 * The int functions return 0 or an exit code (after printing the error). */
typedef struct korch_cli_plan korch_cli_plan;
int korch_cli_plan_open(const char *plan_path, korch_cli_plan **out, const char **model_path, korch_cli_shapes *shapes);
int korch_cli_plan_threads(const korch_cli_plan *p);
/* The plan's ONNX graph (embedded, or the file it names), validated, and
 * unless `shapes` is NULL inferred as the plan was made: with its shapes (the
 * ones korch_cli_plan_open gave) and its guards. An embedded plan's graph borrows the
 * plan's weights: free it before korch_cli_plan_close. */
korch_status korch_cli_plan_graph(korch_cli_plan *p, const korch_cli_shapes *shapes, korch_graph **out);
/* bytes of the executor's arena (after prepare) */
size_t korch_cli_plan_arena_bytes(const korch_cli_plan *p);
int korch_cli_plan_prepare(korch_cli_plan *p, korch_graph *g, int threads);
/* `korch run PLAN --verify`: the plan against the reference executor on the
 * given inputs (NULL: seeded, with the plan's recorded seed); prints the
 * result. Call before korch_cli_plan_prepare (which may release constants
 * the reference needs). Returns 0 when it matches. */
int korch_cli_plan_verify(korch_cli_plan *p, korch_graph *g, const korch_tensor *inputs, int threads);
/* One output's check, as `run --verify` and `explain` print it: worst
 * error/tolerance and largest difference, and for a bf16 plan the distance
 * from the float32 reference (docs/precision.md). */
void korch_cli_print_output_check(const korch_plan_output_check *c, bool bf16);
korch_status korch_cli_plan_run(korch_cli_plan *p, const korch_graph *g, const korch_tensor *inputs,
                                korch_tensor *outputs);
void korch_cli_plan_close(korch_cli_plan *p);
/* the loaded plan (after open) */
const korch_plan *korch_cli_plan_get(const korch_cli_plan *p);
/* per-kernel timing of every run after this call into kernel_ms (one slot per
 * plan kernel), NULL to stop; after prepare */
void korch_cli_plan_time_kernels(korch_cli_plan *p, double *kernel_ms);

/* `korch run PLAN --profile` (cli_profile.c): collects each run's per-kernel
 * times and reports medians against the plan's profiled latencies. */
typedef struct korch_cli_profile korch_cli_profile;
korch_cli_profile *korch_cli_profile_create(int n_kernels, long runs);
void korch_cli_profile_free(korch_cli_profile *p);
/* where the executor writes the current run's times */
double *korch_cli_profile_slots(korch_cli_profile *p);
/* keeps the current run's times (call after each timed run) */
void korch_cli_profile_record(korch_cli_profile *p);
void korch_cli_profile_report(const korch_cli_profile *p, const korch_plan *plan, double wall_median_ms, int top,
                              FILE *f);
korch_status korch_cli_profile_write_csv(const korch_cli_profile *p, const korch_plan *plan, const char *path);

/* The arguments of a command that takes one MODEL and --input-shape options
 * (info, check). Returns 0, a usage exit status (shapes freed), or -1 when
 * --help was printed (the command then exits 0). */
int korch_cli_model_args(int argc, char **argv, const char *command, void (*help)(void), const char **model,
                         korch_cli_shapes *shapes);
/* The same for commands that also read a plan (korch info). */
int korch_cli_model_or_plan_args(int argc, char **argv, const char *command, void (*help)(void), const char **model,
                                 korch_cli_shapes *shapes);

#endif
