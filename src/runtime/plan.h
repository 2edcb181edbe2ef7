/* An execution plan: the chosen kernels in topological order, each with its
 * primitives, backend and schedule, plus what is needed to rebuild the
 * primitive graph the node indices refer to (the model's path and hash, the
 * input shapes, the fission version and a structural hash of the pgraph).
 * The file format is documented in docs/plan-format.md. */
#ifndef KORCH_RUNTIME_PLAN_H
#define KORCH_RUNTIME_PLAN_H

#include <stdbool.h>
#include <stdint.h>

#include "backend/backend.h"
#include "ir/pgraph.h"
#include "relayout/relayout.h"
#include "frontend/frontend.h"

#define KORCH_PLAN_MAGIC "korch-plan"
/* 2: verification records (verification, checked lines; kernel verified=)
 * 3: the machine line, the end line's checksum, and the embedded model
 *    (embedded line, graph and weight sections after the text) */
#define KORCH_PLAN_VERSION 3
/* 4: shape buckets (buckets and bucket lines, one plan per input shape; the
 *    model, its sections and the machine shared). Single-shape plans are
 *    still written as version 3. */
#define KORCH_PLAN_VERSION_BUCKETS 4
#define KORCH_PLAN_MAX_BUCKETS 256
/* where the sections of an embedded plan start: a multiple of this, so that
 * every tensor of the mapped weight section is this aligned in memory */
#define KORCH_PLAN_ALIGN 64

typedef struct korch_plan_kernel {
    int n_nodes;
    int *nodes; /* pnode indices, topological */
    int n_inputs;
    int *inputs; /* external values read (constants included) */
    int n_outputs;
    int *outputs; /* values read by later kernels or graph outputs */
    korch_backend_kind backend;
    char schedule[256];
    char impl[160];
    double latency_ms; /* profiled */
    char *primitives; /* informative: "ew.ADD ew.RELU" */
    char *onnx_nodes; /* informative: names of the ONNX nodes covered, '\n'-separated */
    /* verification (src/verify): the worst error / tolerance of this kernel
     * against the interpreter (0 for REF, the interpreter itself); < 0: not
     * checked */
    double verify_ratio;
    /* in-plan median time of this kernel when the plan was run in place
     * after solving (the closed loop, src/orchestrate/closed_loop.c); 0:
     * not measured */
    double measured_ms;
} korch_plan_kernel;

/* The check of the whole plan against the reference executor before it was
 * written (src/verify/plan_check.c), per graph output. */
/* A candidate kernel verification excluded while the plan was chosen. */
#define KORCH_PLAN_MAX_EXCLUDED 100
typedef struct korch_plan_excluded {
    char *impl;   /* the backend's implementation */
    char *detail; /* how its outputs differed from the interpreter's */
    double worst_ratio;
} korch_plan_excluded;

typedef struct korch_plan_output_check {
    char *name;
    double worst_ratio; /* worst error / tolerance (<= 1: within) */
    double max_abs;     /* largest |plan - reference| */
    /* a bf16 plan (docs/precision.md): worst_ratio and max_abs are against the
     * bf16 primitive graph interpreted; these are the cost of bf16, the plan's
     * distance from the float32 reference executor: max |plan - ref| / max |ref|
     * and mean |plan - ref| / mean |ref| over the output's finite elements
     * (0 and 0 for a float32 plan, where they are not recorded) */
    double fp32_max_rel, fp32_mean_rel;
} korch_plan_output_check;

typedef struct korch_plan_shape {
    char *name;
    korch_shape shape;
    /* The guard: the value this input was specialized to (korch optimize
     * --specialize; the `specialize` line), or NULL. Every run compares the
     * caller's value with it (korch_plan_guard_check). */
    korch_tensor *specialized;
} korch_plan_shape;

/* The model carried inside a plan file (docs/plan-format.md), mapped with
 * the file: the graph and weights are read in place, not copied. */
typedef struct korch_plan_sections {
    void *map; /* the whole plan file, mapped private (copy on write); NULL: the caller's memory */
    size_t map_size;
    const uint8_t *graph; /* an ONNX ModelProto whose tensors lie in weights */
    size_t graph_size;
    const uint8_t *weights; /* KORCH_PLAN_ALIGN-aligned */
    size_t weights_size;
} korch_plan_sections;

typedef struct korch_plan {
    int version;
    char *model_path; /* as given to optimize; informative when the model is embedded */
    char model_sha256[65]; /* hex, of the ONNX file the plan was made from */
    bool embedded;         /* the model is in the plan file (sections); false: at model_path */
    korch_plan_sections sections; /* a loaded embedded plan's; owned, unmapped by korch_plan_free */
    /* the CPU the plan was tuned on (the machine line; empty: not recorded,
     * a plan of an older korch) */
    char machine_cpu[128];
    char machine_isa[256];
    int n_input_shapes;
    korch_plan_shape *input_shapes; /* every graph input's static shape */
    char fission_version[64];
    uint64_t pgraph_hash; /* korch_pgraph_hash of the graph the indices refer to */
    int pgraph_nodes;
    korch_layout_strategy layout; /* the layout pass the graph was lowered with */
    bool layout_recorded;         /* false: a plan of an older korch (no layout= field) */
    korch_precision precision;    /* the linear primitives' arithmetic (the fission line's precision=) */
    int *fp32_linear;             /* under bf16, the linear primitives the optimiser kept in float32,
                                     ascending (the fission line's fp32-linear=); NULL when none */
    int n_fp32_linear;
    char strategy[16];
    int threads;
    double predicted_ms; /* sum of kernel latencies */
    double measured_ms;  /* median wall time of the plan run in place after solving (closed loop); 0: not measured */
    int n_kernels;
    korch_plan_kernel *kernels;
    /* verification of the whole plan; verified false: never checked (a plan
     * of an older korch, or made with --no-verify) */
    bool verified;
    uint64_t verify_seed;   /* the seed of the random inputs */
    int verify_given;       /* inputs the user gave (checked as well), 0: seeded only */
    int n_output_checks;
    korch_plan_output_check *output_checks;
    int excluded;           /* candidate kernels verification excluded while choosing */
    int n_excluded_kernels; /* the first of them (at most KORCH_PLAN_MAX_EXCLUDED), for explain */
    korch_plan_excluded *excluded_kernels;
    /* A bucketed plan (format 4, korch optimize --input-shape 'x=1x{32,64}'):
     * one plan per input shape. This plan then holds only what they share
     * (model, sections, machine; threads and strategy copied from the first
     * bucket) and has no kernels; each bucket is a whole plan whose sections
     * point into this plan's mapping (they do not own it). 0: a plan of one
     * shape. */
    int n_buckets;
    struct korch_plan **buckets;
} korch_plan;

korch_plan *korch_plan_new(void);
void korch_plan_free(korch_plan *plan);

/* Appends a kernel for a set of nodes; inputs and outputs are derived from
 * the graph. Returns the kernel or NULL (error set). */
korch_plan_kernel *korch_plan_add_kernel(korch_plan *plan, const korch_pgraph *pg, const korch_pgraph_uses *uses,
                                         int n_nodes, const int *nodes);

/* Checks a plan against the graph: node indices live and covered by the
 * kernels' inputs/outputs rule, kernels in an order where every input is
 * available (acyclic), every graph output produced. Names the kernel at
 * fault. */
korch_status korch_plan_validate(const korch_plan *plan, const korch_pgraph *pg);

korch_kernel_spec korch_plan_kernel_spec(const korch_pgraph *pg, const korch_plan_kernel *k);

/* Fills the informative fields (primitive names, ONNX node names). */
korch_status korch_plan_describe_kernels(korch_plan *plan, const korch_pgraph *pg);

/* ---- files (plan_io.c) --------------------------------------------------- */

/* The external-reference form (`korch optimize --no-embed`): the plan names
 * its model file by path and hash. */
korch_status korch_plan_save(const korch_plan *plan, const char *path);
/* The self-contained form: the model (its ONNX bytes, and its folder for
 * external data files) is split into a graph section and an aligned weight
 * section written after the plan's text. */
korch_status korch_plan_save_embedded(const korch_plan *plan, const char *path, const uint8_t *model, size_t size,
                                      const char *model_dir);
/* The self-contained form from sections already split (a plan's own). */
korch_status korch_plan_save_sections(const korch_plan *plan, const char *path, const uint8_t *graph,
                                      size_t graph_size, const uint8_t *weights, size_t weights_size);
/* Reads either form (and versions 1 and 2). An embedded plan's file stays
 * mapped until korch_plan_free; every section's checksum is verified first:
 * a damaged or truncated file is refused with a message naming it. */
korch_status korch_plan_load(const char *path, korch_plan **out);
/* The same from memory (`name` for messages); an embedded plan points into
 * `data`, which must outlive it (tests and the fuzzer). */
korch_status korch_plan_load_memory(const char *name, const uint8_t *data, size_t size, korch_plan **out);
/* true when the file starts with the plan magic */
bool korch_plan_file_is_plan(const char *path);
/* The model path resolved against the plan file's folder when relative.
 * Returns a malloc'd string or NULL (error set). */
char *korch_plan_model_path(const korch_plan *plan, const char *plan_path);

/* ---- shape buckets (plan_buckets.c) ------------------------------------- */

/* The plan's input shapes as "x=1x32x8;mask=1x32" (the syntax of
 * korch_session_options.input_shapes), truncated to size. */
const char *korch_plan_shapes_format(const korch_plan *plan, char *buf, size_t size);
/* After a bucketed plan is read: each bucket takes the shared model,
 * sections (not owned) and machine; the container the first bucket's
 * threads and strategy. */
korch_status korch_plan_buckets_share(korch_plan *plan);
/* Appends `bucket` (taken over; its sections must be the container's) to a
 * container being written. */
korch_status korch_plan_bucket_add(korch_plan *plan, korch_plan *bucket);
/* The bucket whose every input shape equals the one given for it (inputs
 * not named in `shapes` match any); a plan without buckets: index 0 (its
 * shapes are checked where they are bound). Errors (KORCH_ERR_SHAPE) name
 * the plan, the shapes asked for and list the buckets: no bucket matches,
 * or several do (then an input's shape is needed to choose). Padding to a
 * larger bucket is never done (docs/plan-format.md, "Shape buckets"). */
korch_status korch_plan_bucket_find(const korch_plan *plan, const char *plan_path, const korch_input_shape *shapes,
                                    int n_shapes, int *index);
/* Bucket `index` as a plan of its own: it takes over the mapping; the
 * container is freed. A plan without buckets is returned as it is. */
korch_plan *korch_plan_bucket_take(korch_plan *plan, int index);
/* korch_plan_bucket_find, then korch_plan_bucket_take (the plan is freed on
 * error too). */
korch_status korch_plan_bucket_choose(korch_plan **plan, const char *plan_path, const korch_input_shape *shapes,
                                      int n_shapes);

/* ---- the machine (plan_machine.c) -------------------------------------- */

/* Records this machine's CPU in the plan. */
void korch_plan_set_machine(korch_plan *plan);
/* Whether the plan was tuned on another CPU (model or ISA extensions), with
 * a short description of the difference in `why`. False for a plan that
 * does not record its machine. */
bool korch_plan_machine_is_foreign(const korch_plan *plan, char *why, size_t size);
/* Prints one note on stderr when the plan's tuning is foreign: it runs
 * correctly (kernels are built for this CPU at load) but may be slower than
 * a plan made here. */
void korch_plan_note_foreign(const korch_plan *plan, const char *plan_path);

/* ---- the model side (plan_model.c) -------------------------------------- */

/* The fission version written into plans: plans only run with the fission
 * that made their node indices. */
extern const char korch_plan_fission_version[];

/* The primitive graph of an inferred op graph: operator fission, then the
 * layout pass with `layout`. Deterministic: the same op graph and layout
 * always give the same pgraph. */
korch_status korch_plan_lower(const korch_graph *g, korch_layout_strategy layout, korch_pgraph **out);

/* The plan-to-model check, the one every consumer of a plan uses: lowers g
 * with the plan's layout (an older plan without one: the default, then
 * nchw) and checks the result against the plan's pgraph hash. `what` names
 * the plan in the error ("plan \"x.plan\""). */
korch_status korch_plan_lower_checked(const korch_plan *plan, const korch_graph *g, const char *what,
                                      korch_pgraph **out);

/* A model loaded for optimising or for running a plan. */
typedef struct korch_plan_model {
    uint8_t *bytes; /* the ONNX file; NULL when the model is an embedded plan's */
    size_t size;
    korch_plan *source; /* the embedded plan the model was loaded from (its weights borrowed); NULL: a file */
    char sha256[65];
    korch_graph *graph; /* inferred */
    korch_pgraph *pg;
    korch_layout_strategy layout; /* pg was lowered with it */
    korch_precision precision;    /* and marked for it (korch_plan_model_set_precision) */
} korch_plan_model;

/* Marks m's primitive graph for precision p (after a check that this CPU
 * computes it); a plan made from m records it. */
korch_status korch_plan_model_set_precision(korch_plan_model *m, korch_precision p);

/* Loads, validates, infers (with the given input shapes) and lowers with
 * the default layout (KORCH_LAYOUT_DEFAULT) or the given one. `path` may
 * be a plan: its model (and, given no shapes, its input shapes). */
korch_status korch_plan_model_load(const char *path, const korch_input_shape *shapes, int n_shapes,
                                   korch_plan_model *out);
korch_status korch_plan_model_load_layout(const char *path, const korch_input_shape *shapes, int n_shapes,
                                          korch_layout_strategy layout, korch_plan_model *out);
/* korch_plan_model_load_layout with graph inputs specialized to values
 * (korch optimize --specialize). */
korch_status korch_plan_model_load_specialized(const char *path, const korch_input_shape *shapes, int n_shapes,
                                               const korch_input_value *values, int n_values,
                                               korch_layout_strategy layout, korch_plan_model *out);

/* Infers g (validated, not inferred) as the plan was made: its input shapes
 * and its guarded inputs specialized to their values. */
korch_status korch_plan_infer_graph(const korch_plan *plan, korch_graph *g);

/* The guard (docs/control-flow.md, "Guarded specialization"): every input
 * the plan was specialized for must hold exactly that value; otherwise an
 * error naming the input, both values and how to make a plan for the other
 * value. inputs[i] is the plan's input i (a graph input, in model order). */
korch_status korch_plan_guard_check(const korch_plan *plan, const korch_tensor *inputs);
/* Number of guarded inputs. */
int korch_plan_guard_count(const korch_plan *plan);
/* The plan's input shapes as overrides (shapes: n_input_shapes entries) and
 * its guards as specializations (values: as many); returns the number of
 * values. Both borrow the plan's strings and tensors. */
int korch_plan_guard_values(const korch_plan *plan, korch_input_shape *shapes, korch_input_value *values);
/* Frees the input shapes and their guards (n_input_shapes becomes 0). */
void korch_plan_shapes_free(korch_plan *plan);

/* The plan's ONNX graph, parsed and validated but not inferred: from the
 * plan's sections when embedded (its constants borrow the mapped weights:
 * the plan must outlive the graph), else from the model file the plan
 * names, whose hash must match. Errors name the plan. */
korch_status korch_plan_load_graph(const korch_plan *plan, const char *plan_path, korch_graph **out);
/* The same, inferred with the plan's input shapes and guards. */
korch_status korch_plan_load_inferred(const korch_plan *plan, const char *plan_path, korch_graph **out);

/* Loads the model a plan names (or carries), with the plan's shapes and guards, and
 * checks the model's hash, the fission version and the pgraph's hash. */
korch_status korch_plan_model_open(const korch_plan *plan, const char *plan_path, korch_plan_model *out);
void korch_plan_model_close(korch_plan_model *m);

/* Records the model (absolute path, hash, every input's shape, fission
 * version, pgraph hash) in a plan. */
korch_status korch_plan_set_model(korch_plan *plan, const char *model_path, const korch_plan_model *m);

/* Writes the plan for model m (loaded from model_path): self-contained
 * (embed, the default of korch optimize) or naming the model by path. */
korch_status korch_plan_write(const korch_plan *plan, const char *plan_path, const korch_plan_model *m,
                              const char *model_path, bool embed);

/* SHA-256 of a byte buffer as 64 hex digits + NUL. */
void korch_sha256_hex(const void *data, size_t size, char out[65]);
/* The same digest from the portable rounds only (tests compare the two). */
void korch_sha256_hex_portable(const void *data, size_t size, char out[65]);

#endif
