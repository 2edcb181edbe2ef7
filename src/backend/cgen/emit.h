/* Shared state of the kernel emitter (emit_index.c, emit_value.c,
 * emit_kernel.c). Private to the cgen backend.
 *
 * Index arithmetic is symbolic: every coordinate is an affine expression over
 * integer symbols (loop variables and named temporaries). A floor-div, mod,
 * clamp or table lookup that cannot be simplified away becomes a new
 * temporary, so coordinates stay affine and the C compiler sees plain
 * induction variables. Each symbol has a value range (for dropping bounds
 * checks and div/mod) and a loop level (statements are placed at the
 * outermost level where all their symbols exist: loop-invariant hoisting). */
#ifndef KORCH_BACKEND_CGEN_EMIT_H
#define KORCH_BACKEND_CGEN_EMIT_H

#include "backend/cgen/cgen.h"

#define CG_AFF_TERMS 16
#define CG_MAX_LEVELS 24

typedef struct cg_aff {
    int n;
    int sym[CG_AFF_TERMS]; /* sorted ascending */
    int64_t coef[CG_AFF_TERMS];
    int64_t off;
} cg_aff;

/* What a temporary symbol holds, for cg_aff_fold: floor(arg / k) or
 * arg mod k (loop variables and other temporaries: none). */
enum { CG_DEF_NONE, CG_DEF_DIV, CG_DEF_MOD };

typedef struct cg_sym {
    int64_t lo, hi;
    int level; /* loop level defining it; -1 = kernel scope */
    int def;   /* CG_DEF_* */
    int64_t def_k;
    cg_aff def_arg;
} cg_sym;

typedef struct cg_memo {
    char *key;
    char *name;
    int level;
} cg_memo;

/* Where a kernel value can be read from. */
typedef enum cg_loc { CG_LOC_COMPUTE, CG_LOC_INPUT, CG_LOC_SCALAR, CG_LOC_SCRATCH, CG_LOC_OUTPUT } cg_loc;

typedef struct cg_emit {
    const cg_kernel *k;
    const cg_schedule *s;
    const char *fname;
    cg_buf *file;                   /* file-scope declarations */
    cg_buf lv[CG_MAX_LEVELS + 1];   /* statements per level; index level + 1 */
    char *head[CG_MAX_LEVELS];      /* pragma + loop header of each open loop */
    int depth;                      /* open loops; current level = depth - 1 */
    cg_sym *syms;
    int n_syms, cap_syms;
    cg_memo *memo;
    int n_memo, cap_memo;
    int n_tmp, n_tables;
    cg_loc *loc;                    /* per local value */
    /* Reduction inputs cached for the current outer iteration: value v with
     * rc_has[v] is readable from rc<v>[...] over the inner dims. */
    bool *rc_has;
    int64_t rc_bytes;
    /* The fused nest's last pass, when it writes an output (else -1): its
     * value and slot. One row cache may live in that output's row
     * (emit_kernel.c, row_cache_home); home_taken once one does. */
    int home_value, home_slot;
    bool home_taken;
    /* Fused outer loops: stages share coordinates 0..P-1 as symbols outer[]. */
    int P;
    int outer[KORCH_MAX_RANK];
    bool fusion_broken;             /* a read would cross outer iterations */
    struct cg_stage *stage;         /* output passes store into tile buffers (emit_stage.c) */
    uint32_t zero_rows;             /* per dtype: cg_zero_<type> declared in `file` (emit_value.c) */
    int reduce_passes;              /* reduction passes emitted so far in the fused nest (fetch knob 2) */
    korch_status st;
    char *reason;
    size_t size;
} cg_emit;

/* errors: the first one wins; emission continues with dummies */
void cg_fail(cg_emit *e, korch_status st, const char *fmt, ...) KORCH_PRINTF(3, 4);

/* symbols and statements */
int cg_new_sym(cg_emit *e, int64_t lo, int64_t hi, int level);
void cg_stmt(cg_emit *e, int level, const char *fmt, ...) KORCH_PRINTF(3, 4);
/* memo: a name for `key` valid at the current loop depth, or NULL */
const cg_memo *cg_memo_find(cg_emit *e, const char *key);
const char *cg_memo_add(cg_emit *e, const char *key, const char *name, int level);
void cg_memo_drop(cg_emit *e, int from_level);

/* affine expressions */
cg_aff cg_aff_const(int64_t c);
cg_aff cg_aff_sym(int sym);
void cg_aff_add(cg_emit *e, cg_aff *a, const cg_aff *b, int64_t scale); /* a += scale * b */
void cg_aff_range(cg_emit *e, const cg_aff *a, int64_t *lo, int64_t *hi);
int cg_aff_level(const cg_emit *e, const cg_aff *a);
bool cg_aff_is_sym(const cg_aff *a, int sym);
void cg_aff_str(const cg_aff *a, char *buf, size_t size);
cg_aff cg_aff_floordiv(cg_emit *e, const cg_aff *a, int64_t d);
cg_aff cg_aff_mod(cg_emit *e, const cg_aff *a, int64_t m);
cg_aff cg_aff_clamp(cg_emit *e, const cg_aff *a, int64_t lo, int64_t hi);
cg_aff cg_aff_table(cg_emit *e, const cg_aff *index, const int64_t *table, int64_t size);
/* Rewrites m*floor(E/m) + (E mod m) as E wherever a (nested) pair of such
 * terms appears: the address of a reshape that merges dimensions is then
 * the plain linear index again. */
void cg_aff_fold(cg_emit *e, cg_aff *a);

/* loop nests (emit_kernel.c) */
typedef struct cg_nest {
    int n;
    int64_t ext[KORCH_MAX_RANK];
    int sym[KORCH_MAX_RANK]; /* filled by cg_nest_open, per dimension */
    int opened;
    /* filled by cg_nest_open: the last two dimensions are tiled, the order
     * knob swapped them, and the tile loops' variables (per dimension) */
    bool tiled, swapped;
    char tile_var[KORCH_MAX_RANK][16];
} cg_nest;

typedef struct cg_loop_opts {
    bool reorder;            /* apply the order / tile knobs to the last two dimensions */
    int par;                 /* leading loops collapsed into one parallel loop */
    const char *clause;      /* extra clause of the parallel loop (a reduction) */
    bool simd;               /* the innermost loop may get simd (vec knob) */
    const char *simd_clause;
    bool in_region;          /* the parallel loop is an "omp for" inside an open cg_region_open() */
    bool simd_always;        /* simd on the innermost loop even when the vec knob leaves it to the compiler */
} cg_loop_opts;

/* Whether cg_nest_open will tile the nest's last two loops (reorder as in
 * cg_loop_opts), for what must be emitted before it opens. */
bool cg_nest_tiles(const cg_emit *e, const cg_nest *ns, bool reorder);

void cg_nest_open(cg_emit *e, cg_nest *ns, const cg_loop_opts *o);
void cg_nest_close(cg_emit *e, cg_nest *ns);
/* closes the innermost open loop (for passes that put statements between the
 * loops of a nest; decrement the nest's `opened` to match) */
void cg_loop_close(cg_emit *e);
/* opens a loop from its pragma lines and header text (no symbol) */
void cg_loop_open_raw(cg_emit *e, const char *pragma, const char *header);
/* "for (x<sym> = <tile_var>; ...)": a point loop over one tile of extent ext,
 * advancing by step (x++ for 1) */
void cg_point_loop_header(char *buf, size_t size, int indent, int sym, const char *tile_var, int tile, int64_t ext,
                          int step);
/* an explicit "omp parallel" block (a level without a loop variable) */
void cg_region_open(cg_emit *e);
void cg_region_close(cg_emit *e);
void cg_emit_output_pass(cg_emit *e, int value, int slot);
/* " simd simdlen(N)..." for a loop with options o under the vec knob, or "" */
void cg_simd_pragma(cg_emit *e, const cg_loop_opts *o, char *buf, size_t size);
/* An output pass whose innermost loop is split where a concat switches
 * input (emit_split.c); false, having emitted nothing, when none applies. */
bool cg_emit_split_pass(cg_emit *e, int value, int slot);
/* Whether `value` has split points in its innermost dimension (the fused
 * nest then leaves that dimension to the value's own pass). */
bool cg_split_applies(const cg_emit *e, int value);
/* f when table[i] == floor((i + q) / f) for all i (q in *q), else 0. */
int64_t cg_table_as_div(const int64_t *table, int64_t size, int64_t *q);

/* Staged tiles (emit_stage.c). A nest tiled with its last two loops swapped
 * (t>0, o1) runs its point loops down the output's columns; its outputs are
 * stored into per-tile buffers, then copied out row by row. */
#define CG_STAGE_MAX 8
typedef struct cg_stage {
    cg_nest *nest; /* tiled and swapped, open */
    bool stream;   /* the copy-out writes whole lines with streaming stores (outputs >= the LLC) */
    int n;
    int value[CG_STAGE_MAX], slot[CG_STAGE_MAX];
    char buf[CG_STAGE_MAX][16];
} cg_stage;
/* The store of value v (its C expression `expr`) into its tile buffer. */
void cg_stage_store(cg_emit *e, cg_stage *g, int value, int slot, const char *expr);
/* Closes the two point loops of g->nest (its `opened` drops by 2) and copies
 * every staged tile out; the caller closes the rest of the nest. */
void cg_stage_copy_out(cg_emit *e, cg_stage *g);
/* cg_stream16 and cg_stream_fence, declared once per translation unit (emit_stream.c) */
void cg_stream_helpers(cg_emit *e);
void cg_emit_reduce_pass(cg_emit *e, int node);
/* Whether a reduction of x over `axes` uses the kept-inner strategy. */
/* Non-temporal stores for outputs too large to stay in cache (emit_stream.c):
 * the size threshold, whether `value`'s output pass at fused depth P
 * qualifies, and the pass itself. */
int64_t cg_stream_min_bytes(const cg_kernel *k);
bool cg_stream_applies(const cg_emit *e, int value, int P);
void cg_emit_stream_pass(cg_emit *e, int value, int slot);
bool cg_kept_inner(const cg_schedule *s, const cg_value *x, uint32_t axes);
/* Fetch knob 2's statement (into pf): prefetch `lines` cache lines from
 * element b of the next outer iteration's slab of every input laid out along
 * the fused loops with a last dimension of ext; returns the elements per 256
 * bytes of those inputs, 0 when none qualifies. */
int64_t cg_next_slab_prefetch(cg_emit *e, int64_t ext, const char *b, int lines, char *pf, size_t size);
/* The largest slab fetch knob 1 prefetches in one burst at an outer
 * iteration's start; longer rows are prefetched during their output pass
 * (emit_stream.c). */
#define CG_BURST_MAX_BYTES 65536
/* A row reduction pass (one reduced suffix dimension, the last; xc the
 * row's coordinates, the last still to fill) whose value contains an
 * exponential of the row's shape: opens its loops over blocks whose
 * exponentials cg_expf_row computes first, sets suf's symbol, and returns
 * true; false, having emitted nothing, otherwise (emit_exprow.c). */
bool cg_exp_rows_open(cg_emit *e, cg_nest *suf, const cg_loop_opts *so, int in_value, const cg_aff *xc);
/* A row sum (or mean) of an exponential, over the last dimension at fused
 * depth rank - 1: the whole pass as blocks whose arguments one vector loop
 * writes (into the row cache rc<v> when `cache`, else a block buffer) and
 * cg_expf_row_sum exponentiates and sums into `acc`. False, having emitted
 * nothing, when it does not apply (emit_exprow.c). */
bool cg_exp_sum_rows(cg_emit *e, const cg_node *n, const cg_nest *suf, const cg_loop_opts *so, const cg_aff *xc, bool cache,
                     const char *acc);
/* A row maximum / minimum at fused depth rank - 1 of a kernel input, or of
 * a computed value kept in the row cache rc<v> (`cache`: its vector loop
 * fills the cache first), or a row sum (or mean) of a kernel input: one call
 * of cg_max_row / cg_min_row / cg_sum_row into `acc` (a max or min is NaN
 * when the row has one). False, having emitted nothing, when it does not
 * apply. */
bool cg_helper_rows(cg_emit *e, const cg_node *n, const cg_nest *suf, const cg_loop_opts *so, const cg_aff *xc, bool cache,
                    const char *acc);

/* values (emit_value.c): the C name of value v at coordinates c, emitted as
 * needed; *level gets the level where it is defined. */
const char *cg_value_at(cg_emit *e, int v, const cg_aff *c, int *level);
/* The memo key cg_value_at files value v at coordinates c under (a
 * statement that computes it another way may file its name there); false
 * when it does not fit in `size` (CG_VALUE_KEY_SIZE always does for
 * cg_value_at's own keys). */
#define CG_VALUE_KEY_SIZE 1200
bool cg_value_key(const cg_emit *e, int v, const cg_aff *c, char *key, size_t size);
/* row-major linear offset of coordinates c in shape */
cg_aff cg_linear(cg_emit *e, const korch_shape *shape, const cg_aff *c);
void cg_literal(double v, korch_dtype dt, char *buf, size_t size);

#endif
