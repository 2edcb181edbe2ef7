/* Verification: nothing korch computes with is trusted until it has been
 * compared with the reference. docs/verification.md gives the rules and what
 * "verified" guarantees.
 *
 *     korch_verify_compare        one tensor against its reference value,
 *                                 with the tolerance rules (compare.c)
 *     korch_verify_kernels        kernels (a spec, a backend, a schedule)
 *                                 against the primitive interpreter, on the
 *                                 values a seeded run of the whole primitive
 *                                 graph gives their inputs (kernel_check.c)
 *     korch_verify_plan           a whole plan against the reference executor
 *                                 (ONNX level), and on a mismatch the first
 *                                 kernel whose outputs differ (plan_check.c)
 *
 * Kernels are checked on realistic data: the values their inputs take when
 * the model runs on a seeded random input, so integer inputs are valid
 * indices and floats have the ranges the model produces. Every comparison
 * also knows how sensitive the reference is: the reference is evaluated a
 * second time with its inputs perturbed by a few ulps, and an element whose
 * reference moves is given that much more room (ill-conditioned elements,
 * such as a difference of nearly equal values, are not called wrong for
 * rounding noise). */
#ifndef KORCH_VERIFY_VERIFY_H
#define KORCH_VERIFY_VERIFY_H

#include <stdbool.h>
#include <stdint.h>

#include "backend/backend.h"
#include "core/tensor.h"
#include "ir/pgraph.h"
#include "ir/graph.h"
#include "runtime/plan.h"

/* Bumped whenever the rules change: verdicts stored under other rules are
 * not reused (the database keys them by this). v2: the rounding floor of
 * the sources' magnitude (source_atol). */
#define KORCH_VERIFY_RULES "v2"

/* The seed of the random inputs plans are verified on unless the user
 * names another (`--verify-seed`, korch_optimize). */
#define KORCH_VERIFY_DEFAULT_SEED 20241125

/* ---- compare.c -------------------------------------------------------------- */

typedef struct korch_verify_tolerance {
    double rtol;       /* relative to the reference element */
    double atol;       /* relative to the reference tensor's RMS ... */
    int64_t reduction; /* ... times sqrt(max(16, reduction)): terms summed per element */
    double sensitivity; /* times |reference - perturbed reference| */
    /* added to every element's bound: one quantization step of a model
     * output computed by DequantizeLinear (plan checks, korch_verify_plan;
     * 0 elsewhere). docs/quantization.md says why. */
    double step;
    /* The rounding floor: source_atol sqrt(max(16, reduction)) times
     * `sources`, the largest magnitude of the values the compared tensor is
     * computed from (korch_verify_sources; 0: not known, no floor). float32
     * work on values of that size leaves noise of their size even where the
     * result cancels to 0 (found by korch-difftest, seed 6068). */
    double source_atol;
    double sources;
} korch_verify_tolerance;

/* The rules for a kernel or plan whose longest chain of summed terms is
 * `reduction` (1: elementwise only); sources 0 (the caller sets it). */
korch_verify_tolerance korch_verify_tolerance_for(int64_t reduction);

/* The largest finite |element| of a float tensor (0 for other dtypes: an
 * integer or boolean carries no rounding noise). */
double korch_verify_max_abs(const korch_tensor *t);

typedef struct korch_verify_diff {
    int64_t elements;   /* compared */
    int64_t mismatches; /* outside the tolerance */
    int64_t exempt;     /* ill-conditioned: the perturbed reference changed class */
    int64_t worst_index; /* the element with the largest error / tolerance (-1: none) */
    double worst_got, worst_want, worst_tol;
    double worst_ratio; /* error / tolerance there; INFINITY for a NaN/Inf or integer mismatch */
    double max_abs;     /* largest finite |got - want| */
    double rms;         /* RMS of the finite reference elements */
} korch_verify_diff;

/* Compares got with want elementwise. perturbed (optional, same dtype and
 * shape) is the reference recomputed from perturbed inputs. Floats:
 * |got - want| <= rtol |want| + (atol rms(want) + source_atol sources)
 * sqrt(max(16, reduction)) + sensitivity |want - perturbed|; NaN must meet NaN and an infinity the same
 * infinity, unless the perturbed reference is of another class there
 * (exempt). Integers and booleans: exact, unless the perturbed reference
 * differs there (exempt). Returns true when every element is within. A dtype
 * or shape mismatch fills why and returns false. */
bool korch_verify_compare(const korch_tensor *got, const korch_tensor *want, const korch_tensor *perturbed,
                          const korch_verify_tolerance *tol, korch_verify_diff *diff, char *why, size_t why_size);

/* The noise rules of plan verification (bf16 plans, models that quantize:
 * plan_check.c): got against want as a whole float32 tensor, given pert, a
 * second correct computation. Passes when max and mean of |got - want| are
 * at most 4 times those of |pert - want|, plus 1e-4 of the largest
 * |want|; NaN must meet NaN and an infinity the same infinity. ratio: the
 * larger of the two quotients; text: one line naming `rule`. */
bool korch_verify_noise_compare(const korch_tensor *got, const korch_tensor *want, const korch_tensor *pert,
                                const char *rule, double *ratio, char *text, size_t size);

/* One line: "3 of 4096 elements differ; worst [17]: 1.69 vs 1.5 (tolerance 2e-05)". */
void korch_verify_diff_format(const korch_verify_diff *d, const korch_shape *shape, char *out, size_t size);

/* ---- inputs.c --------------------------------------------------------------- */

/* Seeded data for a model input, the same rule everywhere korch makes up
 * inputs (optimize's verification, `korch run` without --input, bench):
 * floats uniform in [-1, 1), integers uniform in [0, 100), booleans 50/50. */
void korch_verify_fill(korch_tensor *t, uint64_t seed);
/* The same with integers in [0, upper) instead of [0, 100). */
void korch_verify_fill_bounded(korch_tensor *t, uint64_t seed, int64_t upper);

/* Seeded data for every input of g (out[i] for g->inputs[i], allocated):
 * korch_verify_fill(seed + i), except that an integer input the model uses
 * as Gather indices (directly or through Cast, Reshape, Unsqueeze...) stays
 * below the gathered axis's size, so a token-id input is a valid index
 * whatever the vocabulary. */
korch_status korch_verify_seeded_inputs(const korch_graph *g, uint64_t seed, korch_tensor *out);

/* Perturbs every float element by a relative 2^-20 with a seeded random
 * sign (a few float ulps): the sensitivity probe. Other dtypes unchanged. */
void korch_verify_perturb(korch_tensor *t, uint64_t seed);

/* ---- kernel_check.c --------------------------------------------------------- */

typedef enum korch_verdict {
    KORCH_VERDICT_UNKNOWN,  /* not checked yet */
    KORCH_VERDICT_VERIFIED, /* matched the interpreter */
    KORCH_VERDICT_WRONG,    /* differed from the interpreter (or failed to run) */
    KORCH_VERDICT_COUNT
} korch_verdict;

const char *korch_verdict_name(korch_verdict v);

/* One kernel to check: what it computes, who implements it, how. */
typedef struct korch_verify_item {
    korch_kernel_spec spec;
    korch_backend_kind backend;
    const char *schedule;
} korch_verify_item;

typedef struct korch_verify_result {
    korch_verdict verdict;
    double worst_ratio; /* error / tolerance of the worst element (<= 1 verified) */
    double max_abs;
    bool failed;        /* WRONG because it did not build or run (not stored: may be transient) */
    char detail[256];   /* for a wrong kernel: which output, where, how far */
} korch_verify_result;

/* Where the time of korch_verify_kernels went (seconds, added to). */
typedef struct korch_verify_timing {
    double build;     /* building the kernels by their backends (compiling) */
    double interpret; /* the primitive interpreter over the graph */
    double check;     /* running the kernels, comparing, the perturbed reference */
    long interpreted; /* primitive nodes the interpreter ran */
    long skipped;     /* nodes no checked kernel depends on (downstream or on other branches) */
} korch_verify_timing;

typedef struct korch_verify_options {
    uint64_t seed;                      /* model inputs are korch_verify_fill(seed + i) */
    const korch_tensor *inputs;         /* or these (one per pgraph input); NULL: seeded */
    const korch_profile_options *build; /* how kernels are built (threads, cache dir) */
    korch_verify_timing *timing;        /* NULL, or where korch_verify_kernels adds its times */
} korch_verify_options;

/* Checks items[0..n) against the interpreter. The primitive graph is run
 * once on the inputs (values freed as soon as no item and no node needs
 * them); each kernel is built by its backend, run on the values of its
 * inputs, and its outputs compared with the interpreter's; its nodes are
 * interpreted again on perturbed inputs for the sensitivity term. REF
 * kernels are the interpreter: verified by construction. A kernel that
 * fails to build or run is WRONG (with the error in detail). Fails only when
 * the reference itself cannot run (e.g. the interpreter rejects the seeded
 * inputs) or on allocation failure. */
korch_status korch_verify_kernels(const korch_pgraph *pg, const korch_verify_item *items, int n,
                                  const korch_verify_options *options, korch_verify_result *results);

/* The longest chain of summed terms in a kernel (a linear primitive's
 * reduction length, a reduce's extent, their product when chained): what
 * the tolerance scales with. */
int64_t korch_verify_reduction_length(const korch_kernel_spec *spec);

/* ---- plan_check.c ----------------------------------------------------------- */

typedef struct korch_plan_check {
    bool ok;                          /* every output within the plan tolerance */
    int n_outputs;
    korch_plan_output_check *outputs; /* per graph output: name, worst ratio, max |diff| */
    int bad_kernel;                   /* on a mismatch: the plan kernel whose outputs differ from the
                                         interpreter's on the same inputs (-1: none does) */
    korch_verify_result bad_result;   /* its comparison */
    bool fission_wrong;               /* the primitive graph itself disagrees with the reference */
    char detail[768];                 /* what differed, and where */
} korch_plan_check;

/* The plan tolerance: the elementwise kernel rules, ten times wider (a plan
 * is many kernels deep). */
korch_verify_tolerance korch_verify_plan_tolerance(const korch_plan *plan, const korch_pgraph *pg);

/* Runs the plan (executor) and the reference executor on the same inputs
 * (options->inputs, graph inputs in order, or seeded) and compares every
 * output; on a mismatch, localises it (plan_check.c). Fails only when the
 * reference cannot run or on allocation failure; a wrong plan is out->ok ==
 * false. g is the inferred op graph pg was lowered from. */
korch_status korch_verify_plan(const korch_plan *plan, const korch_graph *g, const korch_pgraph *pg,
                               const korch_verify_options *options, korch_plan_check *out);
void korch_plan_check_free(korch_plan_check *c);

/* ---- plan_verdict.c ----------------------------------------------------------
 * Passing checks of whole plans, remembered in the profile database under a
 * key covering the model's bytes (model_sha256), the input shapes, the
 * seed, the threads and every kernel (backend, implementation, schedule,
 * nodes), for a fingerprint of every backend (compiler, oneDNN, CPU, korch
 * version, KORCH_VERIFY_RULES). Seeded inputs only: with options->inputs set
 * nothing is looked up or stored. lookup fills out (ok, per-output numbers)
 * and returns true when the same plan passed before. */
bool korch_plan_verdict_lookup(const korch_plan *plan, const korch_graph *g, const char *model_sha256,
                               const korch_verify_options *options, korch_plan_check *out);
void korch_plan_verdict_store(const korch_plan *plan, const korch_graph *g, const char *model_sha256,
                              const korch_verify_options *options, const korch_plan_check *c);
/* The machine column of plan verdicts for a thread count (korch db tells
 * this machine's verdicts from foreign ones by it). */
bool korch_plan_verdict_machine(int threads, const korch_profile_options *build, char machine[65]);

/* ---- verifier.c --------------------------------------------------------------
 * Kernel verification for the orchestrator: korch_verify_kernels with the
 * verdicts kept in the profile database, keyed by (backend, the backend's
 * kernel key, schedule, fingerprint), where the fingerprint covers the CPU,
 * the thread count, korch_backend_identity (compiler, oneDNN version), the
 * korch version and KORCH_VERIFY_RULES. Failures to build or run are not
 * stored (they can be transient). */
typedef struct korch_verifier korch_verifier;

typedef struct korch_verifier_stats {
    long checked;       /* kernels run against the reference */
    long from_database; /* verdicts found stored */
    long verified, wrong;
    long rounds;        /* calls that ran the reference */
    double seconds;     /* in those calls */
    korch_verify_timing timing; /* seconds split: building, interpreting, checking */
} korch_verifier_stats;

/* The fingerprint verdicts of `kind`'s kernels run with `threads` threads
 * and built with `build` (compiler and flags; may be NULL) are stored under
 * (hash: 32 hex digits + NUL). */
korch_status korch_verify_fingerprint(korch_backend_kind kind, int threads, const korch_profile_options *build,
                                      char hash[33]);

/* pg and options (and what they point to) must outlive the verifier. */
korch_status korch_verifier_create(const korch_pgraph *pg, const korch_verify_options *options,
                                   korch_verifier **out);
void korch_verifier_free(korch_verifier *v);
/* keys[i]: the backend's database key of items[i] ("" or NULL: not stored).
 * lookup_only: stored and remembered verdicts only, nothing is run. */
korch_status korch_verifier_check(korch_verifier *v, const korch_verify_item *items, const char *const *keys, int n,
                                  bool lookup_only, korch_verify_result *results);
const korch_verifier_stats *korch_verifier_get_stats(const korch_verifier *v);
korch_status korch_verifier_record(korch_verifier *v, const korch_verify_item *item, const char *key,
                                   const korch_verify_result *result);

/* How the orchestrator asks (korch_orchestrate_options.verifier): a
 * function and its context, so tests can put a fake in. check NULL: no
 * verification. The signature is korch_verifier_check's. */
typedef struct korch_kernel_verifier {
    korch_status (*check)(void *user, const korch_verify_item *items, const char *const *keys, int n,
                          bool lookup_only, korch_verify_result *results);
    /* Records a verdict found elsewhere (a plan check localised a wrong
     * kernel); NULL: not kept. The signature is korch_verifier_record's. */
    korch_status (*record)(void *user, const korch_verify_item *item, const char *key,
                           const korch_verify_result *result);
    void *user;
} korch_kernel_verifier;

korch_kernel_verifier korch_verifier_hook(korch_verifier *v);

#endif
