/* The C code generator backend (internal interface).
 *
 * Pipeline for one kernel spec:
 *   cg_kernel_from_spec   validate, put into canonical order, compute the
 *                         signature (canon.c)
 *   cg_emit_kernel        one fused C function for one schedule
 *                         (emit_kernel.c, symbolic indices in emit_index.c)
 *   cg_compile            many functions -> one .c -> one cached .so (compile.c)
 *   cg_library_symbol     dlopen'ed entry points (loader.c)
 *
 * Generated kernels have the ABI
 *     int name(void *const *in, void *const *out, int nthreads);
 * with `in` in canonical input order (see cg_kernel.input_spec) and `out` in
 * the spec's output order; they return 0, or 1 when scratch memory could not
 * be allocated. Buffers must not overlap. */
#ifndef KORCH_BACKEND_CGEN_CGEN_H
#define KORCH_BACKEND_CGEN_CGEN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "backend/backend.h"

/* Bumped whenever generated code changes meaning or speed: it is part of the
 * signature, so profile database entries of older generators are not reused. */
#define CG_GENERATOR_VERSION "cg15"

/* ---- growable string ---------------------------------------------------- */

typedef struct cg_buf {
    char *data;
    size_t len, cap;
    bool oom;
} cg_buf;

void cg_buf_printf(cg_buf *b, const char *fmt, ...) KORCH_PRINTF(2, 3);
void cg_buf_append(cg_buf *b, const char *s, size_t n);
void cg_buf_free(cg_buf *b);
/* 128-bit content hash of bytes, as 32 lowercase hex digits + NUL. */
void cg_hash_hex(const void *data, size_t n, char out[33]);

/* ---- canonical kernel --------------------------------------------------- */

typedef struct cg_value {
    int pv;               /* pgraph value */
    korch_dtype dtype;
    korch_shape shape;
    int producer;         /* local node, or -1 for a kernel input */
    int input_slot;       /* canonical input slot, or -1 */
    bool inline_scalar;   /* a 1-element constant emitted as a literal */
    double scalar;
    int output_slot;      /* spec output position written from this value, or -1 */
} cg_value;

typedef struct cg_node {
    const korch_pnode *pn;
    int n_in;
    int in[KORCH_MAX_RANK]; /* local values */
    int out;                /* local value */
} cg_node;

typedef struct cg_kernel {
    int n_values;
    cg_value *values;
    int n_nodes;
    cg_node *nodes;       /* canonical topological order */
    int n_inputs;
    int *input_spec;      /* canonical slot -> position in spec->inputs */
    int n_outputs;
    int *output_value;    /* spec output position -> local value */
    char sig[33];         /* canonical signature hash (hex) */
    char *sig_text;       /* the canonical text the hash is of (for tests and debugging) */
    int64_t stream_min_bytes; /* korch_profile_options.cg_stream_min_bytes (0: the last-level
                                 cache): outputs this large may stream (emit_stream.c); not
                                 part of sig, set by whoever has the options */
    korch_pgraph *expanded;   /* owned: the primitives nodes[].pn point to when the spec had
                                 linear primitives written out (expand.c); else NULL */
} cg_kernel;

/* ---- linear primitives as memory-bound work (expand.c) --------------------- */

bool cg_spec_has_linear(const korch_kernel_spec *spec);
/* A private primitive graph with a copy of spec's primitives, float32
 * depthwise convolutions (one channel per group, up to 64 taps) written as
 * window -> multiply -> sum, and a spec over it whose inputs and outputs
 * correspond position by position to spec's. KORCH_ERR_UNSUPPORTED with
 * `reason` for any other linear or an opaque primitive. */
typedef struct cg_expanded {
    korch_pgraph *pg;
    korch_kernel_spec spec;
    int n_nodes;
    int *nodes, *inputs; /* outputs: pg->outputs */
} cg_expanded;
korch_status cg_expand_spec(const korch_kernel_spec *spec, cg_expanded *e, char *reason, size_t size);
void cg_expanded_free(cg_expanded *e);

/* KORCH_ERR_UNSUPPORTED with `reason` when the spec is not a memory-bound
 * kernel this generator handles. */
korch_status cg_kernel_from_spec(const korch_kernel_spec *spec, cg_kernel *k, char *reason, size_t size);
void cg_kernel_free(cg_kernel *k);

/* ---- schedules ------------------------------------------------------------ */

typedef struct cg_schedule {
    int par;    /* loops collapsed into the parallel loop; 0 = serial */
    int grain;  /* OpenMP static chunk (iterations); 0 = one block per thread */
    int vec;    /* 0 compiler's choice, 1 omp simd, 2 simdlen(8), 3 simdlen(16) */
    int unroll; /* innermost unroll factor */
    int tile;   /* 2-D tile edge over the last two common loops; 0 = none */
    int order;  /* 1: swap the last two common loops */
    int red;    /* reduction strategy bits: 1 = keep a reduction's input row in a thread-local
                 * buffer for later passes; 2 = short reduced suffixes (windows) accumulate per
                 * element of the last kept axis, which becomes the vector loop */
    int stream; /* 1: non-temporal stores for outputs larger than the last-level cache */
    int fetch;  /* 1: fused kernels with a reduction prefetch the next outer iteration's input
                 * slab at the start of each (emit_function.c); 2: in chunks, during the
                 * second reduction pass (emit_kernel.c); whether and how it pays depends on
                 * the CPU and the row length, so it is tuned */
} cg_schedule;

#define CG_KNOBS 9
#define CG_KNOB_FETCH 8 /* index of the fetch knob (schedule_space.c) */
/* Whether a layout primitive of k reads its input with a stride of a page or
 * more along its output's innermost dimension (schedule_space.c). Such kernels are
 * always tiled: the tile knob's 0 means CG_PAGE_STRIDE_TILE for them. */
bool cg_kernel_strides_pages(const cg_kernel *k);
#define CG_PAGE_STRIDE_TILE 16
/* The values each knob may take, in order (the tuner steps through them). */
int cg_schedule_domain(int knob, const int **values);
int *cg_schedule_knob(cg_schedule *s, int knob);
cg_schedule cg_schedule_default(const cg_kernel *k);
/* The schedules quick profiling may time (the default first, then its
 * serial twin when the default is parallel); returns how many. */
#define CG_QUICK_MAX 2
int cg_schedule_quick(const cg_kernel *k, cg_schedule out[CG_QUICK_MAX]);
void cg_schedule_format(const cg_schedule *s, char *buf, size_t size);
/* Strict: rejects anything cg_schedule_format cannot produce. */
bool cg_schedule_parse(const char *text, cg_schedule *s);

/* ---- emission ----------------------------------------------------------- */

/* Appends one kernel function named `name` to `out` (file-scope tables go
 * there too). */
korch_status cg_emit_kernel(const cg_kernel *k, const cg_schedule *s, const char *name, cg_buf *out, char *reason,
                            size_t size);
/* Declarations every generated translation unit starts with. */
void cg_emit_prelude(cg_buf *out);
/* Scalar C type of a dtype in generated code (NULL if unsupported). */
const char *cg_ctype(korch_dtype dt);

/* ---- compile and load ---------------------------------------------------- */

typedef struct cg_library cg_library;

/* Compiles `source` (or reuses the cached object of identical source and
 * compiler) and loads it. `what` names the kernels for error messages. */
korch_status cg_compile(const char *source, size_t len, const korch_profile_options *options, const char *what,
                        cg_library **out);

/* Several translation units, up to `jobs` compilers at once (each cached like
 * cg_compile). Fails only when the cache directory is unusable; a unit that
 * does not compile gets its own status and message. */
typedef struct cg_unit {
    const char *source;
    size_t len;
    const char *what; /* kernel names, for messages */
    cg_library *lib;  /* out: NULL unless status is KORCH_OK */
    korch_status status;
    char error[1536];
} cg_unit;
korch_status cg_compile_units(cg_unit *units, int n, const korch_profile_options *options, int jobs);
/* Functions compiled in this process, found again by their full text and
 * the compiler command (registry.c): add records one function of a loaded
 * library (taking a reference); find returns a reference to the library
 * holding the function compiled from exactly this text as `name`, or NULL. */
void cg_registry_add(const char *fn, size_t len, const korch_profile_options *o, const char *name, cg_library *lib);
cg_library *cg_registry_find(const char *fn, size_t len, const korch_profile_options *o, const char *name);
void cg_registry_clear(void);
/* The same across processes (links.c): keep leaves a link in the kernel
 * cache to the cached object holding a function; find returns a reference
 * to that object when the link's whole key text (prelude, function,
 * compiler, flags) and the name match, or NULL. */
void cg_link_keep(const char *fn, size_t len, const korch_profile_options *o, const char *name, cg_library *lib);
cg_library *cg_link_find(const char *fn, size_t len, const korch_profile_options *o, const char *name);
/* How many times this process has started the C compiler (for tests: a
 * build that finds every function compiles nothing). */
long cg_compile_count(void);
int cg_compile_jobs(const korch_profile_options *options); /* options->cc_jobs, else one per CPU (at most 4) */
void *cg_library_symbol(cg_library *lib, const char *name);
const char *cg_library_path(const cg_library *lib); /* the object file it was loaded from, or NULL */
void cg_library_retain(cg_library *lib);
void cg_library_release(cg_library *lib);
/* The compiler command line generated code is built with (for fingerprints):
 * options->cc and cc_opt, or the defaults ("cc", -O3); options may be NULL.
 * The compile calls above take the cache directory from options too. */
const char *cg_compiler(const korch_profile_options *options);
const char *cg_compiler_flags(const korch_profile_options *options);
const char *cg_compiler_version(const korch_profile_options *options); /* first line of `cc --version`, or NULL */
/* Resolves the kernel cache directory (options value, or the XDG default). */
korch_status cg_cache_dir(const char *requested, char *buf, size_t size);

typedef int (*cg_entry)(void *const *in, void *const *out, int nthreads);

/* A loaded kernel for the backend interface. */
korch_status cg_kernel_wrap(const cg_kernel *k, cg_library *lib, cg_entry fn, int threads, const char *impl,
                            korch_kernel **out);

#endif
