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

/* kernels (export_kernels.c): appends kernel i's functions, parameters and
 * call; refuses (naming the kernel) what it cannot write */
korch_status ex_emit_kernel(ex_ctx *x, int i);

/* reference kernels as standalone C (export_ref.c); *handled false when the
 * kernel is not one of the kinds written this way */
korch_status ex_emit_ref(ex_ctx *x, int i, bool *handled);

/* oneDNN kernels (export_dnnl.c): kernel i's description, weights reorder,
 * session creation and call; then, once, the backend hooks */
korch_status ex_emit_dnnl(ex_ctx *x, int i);
void ex_dnnl_hooks(ex_ctx *x);

/* files (export_files.c) */
korch_status ex_write_weights(const ex_ctx *x, const char *path);
korch_status ex_write_model_c(const ex_ctx *x, const char *path);
korch_status ex_write_model_h(const ex_ctx *x, const char *path);
korch_status ex_write_runner(const ex_ctx *x, const char *dir);
korch_status ex_write_text(const char *path, const char *text, size_t len);

#endif
