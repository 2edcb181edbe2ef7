/* Timing generated kernels: the buffers they run on.
 *
 * Every kernel is timed on enough copies of its inputs and outputs that one
 * sweep over them exceeds the L2 caches (docs/profiling.md, "Cache state").
 * The copies come from one pool shared by all kernels of a profiling call:
 * per element type, a region of random values in [0.5, 1.5] (integers 0..3,
 * bytes 0..1), filled and first touched once by this thread, and one output
 * region. Kernels are timed one after the other, so they can share it; what
 * matters for the cache state is that the copies of one kernel are distinct
 * memory, and they are. Allocating and filling fresh buffers per kernel and
 * per tuning round cost as much as timing a short kernel. */
#include <omp.h>
#include <stdlib.h>
#include <string.h>

#include "backend/cgen/cgen_timing.h"
#include "core/memory.h"

enum { CLASS_F32, CLASS_F64, CLASS_I64, CLASS_I32, CLASS_BYTES, N_CLASSES };

struct cg_pool {
    void *in[N_CLASSES];
    size_t in_bytes[N_CLASSES];
    void *out;
    size_t out_bytes;
    void **ptrs; /* n_sets * (inputs + outputs) of the kernel being timed */
    size_t cap_ptrs;
    uint64_t rng;
};

static int dtype_class(korch_dtype dt) {
    switch (dt) {
    case KORCH_DTYPE_FLOAT32: return CLASS_F32;
    case KORCH_DTYPE_FLOAT64: return CLASS_F64;
    case KORCH_DTYPE_INT64: return CLASS_I64;
    case KORCH_DTYPE_INT32: return CLASS_I32;
    default: return CLASS_BYTES;
    }
}

static size_t value_bytes(const cg_value *v) {
    return (size_t)korch_shape_numel(&v->shape) * korch_dtype_size(v->dtype);
}

static size_t round64(size_t n) { return (n + 63) / 64 * 64; }

korch_status cg_pool_create(cg_pool **out) {
    *out = calloc(1, sizeof **out);
    if (!*out) return korch_error(KORCH_ERR_OUT_OF_MEMORY, "profiling buffers: out of memory");
    (*out)->rng = 0x853c49e6748fea9bull;
    return KORCH_OK;
}

void cg_pool_free(cg_pool *p) {
    if (!p) return;
    for (int c = 0; c < N_CLASSES; c++) free(p->in[c]);
    free(p->out);
    free(p->ptrs);
    free(p);
}

static void fill(cg_pool *p, int cls, void *data, size_t bytes) {
    size_t n;
    switch (cls) {
    case CLASS_F32:
        n = bytes / sizeof(float);
        for (size_t i = 0; i < n; i++) {
            p->rng ^= p->rng << 13, p->rng ^= p->rng >> 7, p->rng ^= p->rng << 17;
            ((float *)data)[i] = 0.5f + (float)(p->rng >> 40) / (float)(1u << 24);
        }
        break;
    case CLASS_F64:
        n = bytes / sizeof(double);
        for (size_t i = 0; i < n; i++) {
            p->rng ^= p->rng << 13, p->rng ^= p->rng >> 7, p->rng ^= p->rng << 17;
            ((double *)data)[i] = 0.5 + (double)(p->rng >> 11) / 9007199254740992.0;
        }
        break;
    case CLASS_I64:
        n = bytes / sizeof(int64_t);
        for (size_t i = 0; i < n; i++) ((int64_t *)data)[i] = (int64_t)((i * 2654435761u) >> 7 & 3);
        break;
    case CLASS_I32:
        n = bytes / sizeof(int32_t);
        for (size_t i = 0; i < n; i++) ((int32_t *)data)[i] = (int32_t)((i * 2654435761u) >> 7 & 3);
        break;
    default:
        for (size_t i = 0; i < bytes; i++) ((uint8_t *)data)[i] = (uint8_t)((i * 2654435761u) >> 9 & 1);
        break;
    }
}

/* Grows a region to at least `bytes` (contents: filled for inputs, zeroed
 * and so first-touched for outputs). */
static korch_status grow(cg_pool *p, int cls, size_t bytes) {
    void **region = cls < 0 ? &p->out : &p->in[cls];
    size_t *have = cls < 0 ? &p->out_bytes : &p->in_bytes[cls];
    if (bytes <= *have) return KORCH_OK;
    size_t want = round64(bytes + bytes / 4);
    free(*region);
    *have = 0;
    *region = korch_buffer_alloc(want); /* as the executor's buffers: timed on the same pages */
    if (!*region) return korch_error(KORCH_ERR_OUT_OF_MEMORY, "profiling buffers: out of memory (%zu bytes)", want);
    if (cls < 0) memset(*region, 0, want);
    else fill(p, cls, *region, want);
    *have = want;
    return KORCH_OK;
}

/* The value behind every input slot, then every output position. */
static korch_status operands(const cg_kernel *k, const cg_value **vals) {
    for (int i = 0; i < k->n_inputs; i++) vals[i] = NULL;
    for (int v = 0; v < k->n_values; v++) {
        int slot = k->values[v].input_slot;
        if (slot >= 0 && slot < k->n_inputs) vals[slot] = &k->values[v];
    }
    for (int i = 0; i < k->n_inputs; i++)
        if (!vals[i]) return korch_error(KORCH_ERR_INTERNAL, "kernel %.16s: input slot %d has no value", k->sig, i);
    for (int q = 0; q < k->n_outputs; q++) vals[k->n_inputs + q] = &k->values[k->output_value[q]];
    return KORCH_OK;
}

korch_status cg_pool_prepare(cg_pool *p, const cg_kernel *k, int *n_sets, void ***sets) {
    int n_in = k->n_inputs, per = k->n_inputs + k->n_outputs;
    const cg_value **vals = malloc(((size_t)per + 1) * sizeof *vals);
    if (!vals) return korch_error(KORCH_ERR_OUT_OF_MEMORY, "profiling buffers: out of memory");
    korch_status st = operands(k, vals);
    size_t footprint = 0, input_bytes = 0;
    for (int i = 0; i < per && st == KORCH_OK; i++) {
        footprint += value_bytes(vals[i]);
        if (i < n_in) input_bytes += value_bytes(vals[i]);
    }
    int sets_needed = korch_profile_buffer_sets(footprint, input_bytes);
    /* region sizes (a little slack after every buffer), then pointers */
    size_t need[N_CLASSES] = {0}, need_out = 0;
    for (int i = 0; i < per && st == KORCH_OK; i++) {
        size_t b = round64(value_bytes(vals[i]) + 64);
        if (i < n_in) need[dtype_class(vals[i]->dtype)] += b;
        else need_out += b;
    }
    for (int c = 0; c < N_CLASSES && st == KORCH_OK; c++) st = grow(p, c, need[c] * (size_t)sets_needed);
    if (st == KORCH_OK) st = grow(p, -1, need_out * (size_t)sets_needed);
    size_t n_ptrs = (size_t)sets_needed * (size_t)per + 1;
    if (st == KORCH_OK && n_ptrs > p->cap_ptrs) {
        void **grown = realloc(p->ptrs, n_ptrs * sizeof *grown);
        if (grown) {
            p->ptrs = grown;
            p->cap_ptrs = n_ptrs;
        } else {
            st = korch_error(KORCH_ERR_OUT_OF_MEMORY, "profiling buffers: out of memory");
        }
    }
    size_t at[N_CLASSES] = {0}, at_out = 0;
    for (int s = 0; s < sets_needed && st == KORCH_OK; s++) {
        void **set = p->ptrs + (size_t)s * (size_t)per;
        for (int i = 0; i < per; i++) {
            size_t b = round64(value_bytes(vals[i]) + 64);
            if (i < n_in) {
                int c = dtype_class(vals[i]->dtype);
                set[i] = (char *)p->in[c] + at[c];
                at[c] += b;
            } else {
                set[i] = (char *)p->out + at_out;
                at_out += b;
            }
        }
    }
    free(vals);
    if (st != KORCH_OK) return st;
    *n_sets = sets_needed;
    *sets = p->ptrs;
    return KORCH_OK;
}

typedef struct timed {
    const cg_kernel *k;
    cg_entry fn;
    int threads, n_sets;
    void **sets;
} timed;

static korch_status run_once(void *ctx, int iteration) {
    timed *t = ctx;
    int per = t->k->n_inputs + t->k->n_outputs;
    void **set = t->sets + (size_t)(iteration % t->n_sets) * (size_t)per;
    if (t->fn(set, set + t->k->n_inputs, t->threads) != 0)
        return korch_error(KORCH_ERR_OUT_OF_MEMORY, "kernel %.16s: out of scratch memory", t->k->sig);
    return KORCH_OK;
}

korch_status cg_time_kernel(cg_pool *pool, const cg_kernel *k, cg_entry fn, int threads, const korch_timer_options *o,
                            korch_timing *out) {
    timed t = {.k = k, .fn = fn, .threads = threads};
    KORCH_TRY(cg_pool_prepare(pool, k, &t.n_sets, &t.sets));
    return korch_profile_time(run_once, &t, o, out);
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

double cg_fork_join_us(int threads) {
    if (threads < 2) return 0;
    enum { RUNS = 21 };
    double t[RUNS];
    volatile int sink = 0;
    for (int r = -3; r < RUNS; r++) {
        double a = korch_now_s();
#pragma omp parallel num_threads(threads)
        {
            if (omp_get_thread_num() == 1) sink = sink + 1;
        }
        if (r >= 0) t[r] = (korch_now_s() - a) * 1e6;
    }
    qsort(t, RUNS, sizeof *t, cmp_double);
    return t[RUNS / 2];
}
