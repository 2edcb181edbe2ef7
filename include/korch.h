/*
 * korch: optimal kernel orchestration for tensor programs, on the CPU.
 *
 * The C API runs a model or a plan with buffers you own. A tour:
 *
 *     #include <korch.h>          // build: cc app.c $(pkg-config --cflags --libs korch)
 *
 *     korch_model *model = NULL;
 *     // An ONNX file (run by the reference executor) or a plan made by
 *     // `korch optimize net.onnx -o net.plan` (run with the chosen kernels).
 *     if (korch_model_load("net.plan", &model) != KORCH_OK) {
 *         fprintf(stderr, "%s\n", korch_last_error());
 *         return 1;
 *     }
 *     korch_session *session = NULL;
 *     korch_session_options opts = korch_session_options_default();
 *     opts.threads = 2;
 *     if (korch_session_create(model, &opts, &session) != KORCH_OK) { ... }
 *
 *     korch_tensor_info in, out;             // names, dtypes, shapes
 *     korch_session_input_info(session, 0, &in);
 *     korch_session_output_info(session, 0, &out);
 *
 *     float input[1 * 3 * 224 * 224], output[1000];
 *     korch_session_set_input(session, 0, input, sizeof input);    // bytes must match
 *     korch_session_set_output(session, 0, output, sizeof output);
 *     korch_session_run(session);            // reads input, writes output
 *     korch_session_run(session);            // again: bindings stay
 *
 *     korch_session_destroy(session);
 *     korch_model_free(model);
 *
 * Errors. Every call that can fail returns a korch_status; KORCH_OK is 0. On
 * failure, korch_last_error() returns a message for the calling thread that
 * names the node, tensor or file at fault (names from the model are quoted
 * and escaped). Destroy/free calls accept NULL.
 *
 * Memory and copies. Binding is zero-copy: a session keeps the pointers you
 * pass and, during korch_session_run, kernels read inputs from them and write
 * graph outputs into them directly. The only copy is an output that no
 * kernel computes (a model that returns one of its inputs or a constant).
 * Buffers must stay valid while the session may run, outputs must not
 * overlap inputs or each other (refused), and any alignment works (64 bytes
 * is best for vector loads). Intermediate values of a plan live in one arena
 * per session, sized by the memory planner (`korch explain PLAN` prints it).
 * Each session parses the model for itself, so it holds its own copy of the
 * weights (sessions share nothing mutable).
 *
 * Threads. A session runs its kernels with OpenMP (options.threads; 0: the
 * OpenMP default, or the plan's thread count) and restores the calling
 * thread's OpenMP thread count afterwards. Different sessions may run at the
 * same time on different threads, including sessions of one shared model
 * (a model is read-only after loading). One session must not be used from
 * two threads at once.
 *
 * Plans. A plan file names its ONNX model by path and SHA-256; loading a plan
 * checks that the model is unchanged and rebuilds the kernels (compiled
 * kernels come from the cache, $XDG_CACHE_HOME/korch/kernels). For a
 * deployment without korch, `korch export PLAN -o DIR` writes standalone C
 * with the same API shape (docs/export.md).
 *
 * Full reference: docs/c-api.md.
 */
#ifndef KORCH_H
#define KORCH_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The library exports exactly the functions marked KORCH_API (it is built
 * with -fvisibility=hidden; tests/api/check_exports.sh holds it to that). */
#if defined(__GNUC__) || defined(__clang__)
#define KORCH_API __attribute__((visibility("default")))
#else
#define KORCH_API
#endif

typedef enum korch_status {
    KORCH_OK = 0,
    KORCH_ERR_INVALID_ARGUMENT, /* a caller passed something unusable */
    KORCH_ERR_IO,               /* a file could not be read or written */
    KORCH_ERR_PARSE,            /* bytes are not a valid protobuf / npy / plan */
    KORCH_ERR_INVALID_MODEL,    /* the model is structurally wrong */
    KORCH_ERR_UNSUPPORTED,      /* valid, but korch does not support it */
    KORCH_ERR_SHAPE,            /* shapes are inconsistent or unknown */
    KORCH_ERR_OUT_OF_MEMORY,
    KORCH_ERR_RUNTIME,          /* a kernel, compiler or solver failed */
    KORCH_ERR_INTERNAL,         /* a bug in korch */
    KORCH_STATUS_COUNT
} korch_status;

/* Element types use the ONNX TensorProto.DataType numbering. */
typedef enum korch_dtype {
    KORCH_DTYPE_UNDEFINED = 0,
    KORCH_DTYPE_FLOAT32 = 1,
    KORCH_DTYPE_UINT8 = 2,
    KORCH_DTYPE_INT8 = 3,
    KORCH_DTYPE_UINT16 = 4,
    KORCH_DTYPE_INT16 = 5,
    KORCH_DTYPE_INT32 = 6,
    KORCH_DTYPE_INT64 = 7,
    KORCH_DTYPE_STRING = 8,
    KORCH_DTYPE_BOOL = 9,
    KORCH_DTYPE_FLOAT16 = 10,
    KORCH_DTYPE_FLOAT64 = 11,
    KORCH_DTYPE_UINT32 = 12,
    KORCH_DTYPE_UINT64 = 13,
    KORCH_DTYPE_BFLOAT16 = 16, /* numbers 14, 15 (complex) are not supported */
} korch_dtype;

#define KORCH_MAX_RANK 8

/* Message for the last failed call on this thread ("" if none). */
KORCH_API const char *korch_last_error(void);
KORCH_API const char *korch_status_name(korch_status status);
KORCH_API const char *korch_version(void);

/* ---- models --------------------------------------------------------------
 * A model is an ONNX file or a korch plan file, parsed and validated. A
 * plan carries its model's graph and weights (unless made with --no-embed):
 * the file is mapped, its checksums checked, and sessions read the weights
 * in place. It is read-only once loaded: sessions on different threads may
 * share it. Each
 * session holds a reference, so korch_model_free may come before the
 * sessions are destroyed: the model goes with the last of them. */
typedef struct korch_model korch_model;

KORCH_API korch_status korch_model_load(const char *path, korch_model **out);
KORCH_API void korch_model_free(korch_model *model);

/* Shape buckets. `korch optimize MODEL --input-shape 'ids=1x{32,64,128}'`
 * (or korch_optimize with input_shapes "ids=1x{32,64,128}", below) writes
 * one plan file holding a plan per input shape (a bucket). A
 * session runs one bucket: korch_session_options.input_shapes chooses it
 * (exact match: korch never pads an input up to a larger bucket); without
 * it, korch_session_create fails listing the buckets. Make one session per
 * shape you serve (sessions of one model share its mapped weights).
 * count: the buckets of a plan with buckets; 1 for a plan of one shape;
 * 0 for an ONNX model. shapes: bucket `index`'s input shapes in the
 * syntax of input_shapes ("ids=1x32;mask=1x32"), owned by the model. */
KORCH_API int korch_model_bucket_count(const korch_model *model);
KORCH_API korch_status korch_model_bucket_shapes(const korch_model *model, int index, const char **shapes);

/* ---- sessions ------------------------------------------------------------
 * A session owns the prepared executable and its memory. Sessions are
 * independent: different sessions may run concurrently on different threads.
 * One session must not be run from two threads at once. */
typedef struct korch_session korch_session;

typedef struct korch_session_options {
    int threads;              /* 0: OpenMP default (for a plan: the plan's thread count) */
    /* Fix symbolic input dimensions: "name=1x3x224x224;other=1x128". NULL: none.
     * A plan with shape buckets: chooses the bucket (korch_model_bucket_shapes
     * lists them in this syntax). A plan of one shape ignores it. */
    const char *input_shapes;
} korch_session_options;

KORCH_API korch_session_options korch_session_options_default(void);

KORCH_API korch_status korch_session_create(const korch_model *model, const korch_session_options *options,
                                  korch_session **out);
KORCH_API void korch_session_destroy(korch_session *session);

/* name points into the session and lives as long as it. Names come from the
 * model: treat them as untrusted bytes (any byte but NUL). */
typedef struct korch_tensor_info {
    const char *name;
    korch_dtype dtype;
    int rank;
    int64_t dims[KORCH_MAX_RANK];
} korch_tensor_info;

/* Counts cannot fail for a valid session; NULL gives 0. */
KORCH_API int korch_session_input_count(const korch_session *session);
KORCH_API int korch_session_output_count(const korch_session *session);
KORCH_API korch_status korch_session_input_info(const korch_session *session, int index, korch_tensor_info *info);
KORCH_API korch_status korch_session_output_info(const korch_session *session, int index, korch_tensor_info *info);

/* Zero-copy binding: the session reads from / writes to caller memory during
 * korch_session_run. `bytes` must equal the tensor's size (elements times
 * dtype size); a mismatch is KORCH_ERR_INVALID_ARGUMENT naming the tensor.
 * Running with an unbound input or output is an error. */
KORCH_API korch_status korch_session_set_input(korch_session *session, int index, const void *data, size_t bytes);
KORCH_API korch_status korch_session_set_output(korch_session *session, int index, void *data, size_t bytes);
KORCH_API korch_status korch_session_run(korch_session *session);

/* ---- optimizing ----------------------------------------------------------
 * `korch optimize MODEL -o PLAN` as a call, with the CLI's defaults: the
 * model is split into primitives, candidate kernels are profiled on this
 * machine (profiles kept in the database), the strategy chooses, every
 * chosen kernel and the plan are verified against the reference executor,
 * and the plan is written to plan_path. Calls run one at a time in a process
 * (the binary program solver is not thread-safe): a second thread waits. The
 * calling thread's OpenMP thread count is restored afterwards. */
typedef struct korch_optimize_options {
    int threads;              /* threads kernels are tuned and run with; 0: all cores (OpenMP's default) */
    const char *strategy;     /* "optimal" (NULL), "greedy" or "none" */
    const char *db_path;      /* profile database; NULL: $XDG_CACHE_HOME/korch/profile.db */
    double budget_s;          /* bound on the total kernel tuning time; 0: the default */
    /* Fix symbolic input dimensions, as korch_session_options.input_shapes
     * ("ids=1x128;mask=1x128"); NULL: none. Shape buckets: a dimension may
     * list several values, {32,64,128}, or a range, {16..512} (the powers of
     * two from 16 to 512), as `korch optimize --input-shape` takes them
     * ("ids=1x{32,64,128};mask=1x{32,64,128}": equal lists of two inputs
     * are tied, so this is 3 buckets). Every combination is optimised in
     * turn and plan_path holds a plan per shape (korch_model_bucket_count;
     * one value in braces: an ordinary plan). A malformed list, or an input
     * listed twice, is KORCH_ERR_INVALID_ARGUMENT naming it. */
    const char *input_shapes;
    /* Called with each line `korch optimize` prints (no newline), on the
     * calling thread; NULL: quiet. */
    void (*log)(void *user, const char *line);
    void *log_user;
    int progress_bar;         /* nonzero: the CLI's progress bar on stderr, if stderr is a terminal */
    double time_limit_s;      /* wall clock for the binary programs; 0: 120 s, the CLI's default */
    int estimate;             /* nonzero: latencies from a roofline model, nothing timed (quick, rough:
                                 `korch optimize --estimate`) */
    int no_embed;             /* nonzero: the plan names the model file instead of carrying the model's
                                 graph and weights (`korch optimize --no-embed`; docs/plan-format.md) */
    /* "fp32" (NULL: the default), "bf16": convolutions and matmuls on bfloat16 operands with float32 sums
       where that is measurably faster (each timed alone in both precisions; the others stay float32), or
       "bf16-all": every one in bf16 (`korch optimize --precision`; docs/precision.md). bf16 needs a CPU with
       AVX512_BF16: elsewhere KORCH_ERR_UNSUPPORTED; another value is KORCH_ERR_INVALID_ARGUMENT. */
    const char *precision;
} korch_optimize_options;

/* A plan with shape buckets: predicted_ms, kernels, fused_kernels and
 * primitives are summed over its buckets (`korch explain PLAN` lists each). */
typedef struct korch_optimize_report {
    char strategy[16];
    double predicted_ms;      /* sum of the chosen kernels' profiled latencies */
    int kernels;              /* kernels in the plan */
    int fused_kernels;        /* of which cover more than one primitive */
    int primitives;           /* primitives of the model */
    double seconds;           /* wall time of the call */
} korch_optimize_report;

KORCH_API korch_optimize_options korch_optimize_options_default(void);
/* report may be NULL. */
KORCH_API korch_status korch_optimize(const char *model_path, const char *plan_path, const korch_optimize_options *options,
                            korch_optimize_report *report);

/* ---- describing a model --------------------------------------------------
 * What `korch info` prints, as one JSON object (UTF-8 unless the model's
 * names are not): "path", "graph", "ir_version", "opset", "inputs" and
 * "outputs" ([{"name", "dtype" (ONNX number), "shape"}]), "nodes_in_file",
 * "nodes" (after constant folding), "parameters", "parameter_bytes",
 * "flops", "operators" ([{"op", "count", "flops"}], most frequent first).
 * An ONNX file only. A model korch cannot run fails like `korch check`, with
 * the same message. Free *json with korch_string_free. */
KORCH_API korch_status korch_model_describe(const char *path, const char *input_shapes, char **json);
KORCH_API void korch_string_free(char *s);

#ifdef __cplusplus
}
#endif
#endif /* KORCH_H */
