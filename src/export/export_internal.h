/* Shared state of the exporter's files (export*.c). */
#ifndef KORCH_EXPORT_INTERNAL_H
#define KORCH_EXPORT_INTERNAL_H

#include "backend/cgen/cgen.h"
#include "export/export.h"
#include "runtime/arena.h"

/* support pieces a model.c needs, in the order they are written */
typedef enum ex_piece {
    EX_REF_COMMON,
    EX_REF_REDUCE,
    EX_REF_LAYOUT,
    EX_REF_MATMUL,
    EX_REF_CONV,
    EX_REF_GATHER,
    EX_PIECE_COUNT
} ex_piece;

typedef struct ex_ctx {
    const korch_plan *plan;
    const korch_pgraph *pg;
    korch_export_options options;
    korch_memory_plan mp;
    int64_t *weight_offset; /* per value: offset in the weights blob, or -1 */
    uint64_t weights_bytes;
    uint64_t weights_checksum;
    uint64_t model_id;
    bool need[EX_PIECE_COUNT];
    bool cg_prelude;
    cg_buf functions; /* generated kernel functions (cgen) */
    cg_buf decls;     /* parameters of reference kernels */
    cg_buf calls;     /* the body of model_run_kernels */
    /* backends with state (oneDNN): fields of model_handle and model_session,
     * and the definitions of model_prepare/model_release/
     * model_session_prepare/model_session_release (empty: trivial ones) */
    cg_buf handle_fields, session_fields, hooks;
    int n_dnnl;                    /* oneDNN kernels (dn0, dn1, ...) */
    cg_buf dnnl_load, dnnl_session; /* their statements in model_prepare / model_session_prepare */
    char (*fn_names)[48]; /* emitted cgen functions (deduplicated) */
    int n_fn;
    korch_export_stats stats;
} ex_ctx;

/* text (export_text.c) */
/* s as a C string literal: printable ASCII except " \ ? as is, every other
 * byte as a three-digit octal escape */
void ex_c_string(cg_buf *b, const char *s);
/* the C expression of value v's buffer inside model_run_kernels */
void ex_value_ptr(const ex_ctx *x, int v, char *buf, size_t size);
/* "ew.ADD layout.transpose ...": primitive names from the pgraph (korch's
 * own tables; the plan file's informative text is never used) */
void ex_describe_kernel(const ex_ctx *x, const korch_plan_kernel *k, char *buf, size_t size);
uint64_t ex_checksum(const uint8_t *data, uint64_t n);

/* How one backend's kernels become standalone C: the export table, one
 * row ex_backend_<name> per backend of backend/backend_list.h, defined in
 * export_<name>.c (dnnl's parameters are included there alone; cgen's text
 * buffer and prelude, above, are every export file's). ex_emit_kernel
 * dispatches on the kernel's backend through it,
 * as backend/backend.c does through korch_backend_ops. The rows live here,
 * not in korch_backend_ops, because what they write targets the export's
 * own runtime (the support sources, model_handle, model_session): a backend
 * (layer 8) writing it would depend on a later layer. */
typedef struct ex_backend {
    /* appends kernel i (`what`: its primitives, for messages) and counts it
     * in x->stats; refuses, naming the kernel, what it cannot write */
    korch_status (*emit)(ex_ctx *x, int i, const char *what);
    /* NULL, or once after every kernel: what the backend's kernels share
     * (oneDNN's engine, weights and session hooks) */
    void (*finish)(ex_ctx *x);
} ex_backend;
#define EX_BACKEND_DECLARE(KIND, name) extern const ex_backend ex_backend_##name;
KORCH_BACKEND_LIST(EX_BACKEND_DECLARE)
#undef EX_BACKEND_DECLARE

/* kernels (export_kernels.c): appends kernel i's functions, parameters and
 * call through its backend's row; refuses (naming the kernel) what it
 * cannot write */
korch_status ex_emit_kernel(ex_ctx *x, int i);
/* every row's finish, in backend order */
void ex_finish_backends(ex_ctx *x);

/* cgen's emitter for kernel i with `schedule` (NULL: the default one), for
 * CGEN kernels and REF kernels cgen can also implement (export_cgen.c);
 * *handled false when the generator refuses a non-CGEN kernel */
korch_status ex_emit_cgen(ex_ctx *x, int i, const char *schedule, bool *handled);

/* reference kernels as standalone C (export_ref.c); *handled false when the
 * kernel is not one of the kinds written this way */
korch_status ex_emit_ref(ex_ctx *x, int i, bool *handled);

/* files (export_files.c) */
korch_status ex_write_weights(const ex_ctx *x, const char *path);
korch_status ex_write_model_c(const ex_ctx *x, const char *path);
korch_status ex_write_model_h(const ex_ctx *x, const char *path);
korch_status ex_write_runner(const ex_ctx *x, const char *dir);
korch_status ex_write_text(const char *path, const char *text, size_t len);

#endif
