/* The schedule space of generated kernels: nine knobs, each over a short
 * ordered list of values, so that "one step along a knob" (the tuner's
 * coordinate descent) is well defined. Schedules travel as text in plans and
 * in the profile database; the parser accepts exactly what the formatter
 * writes, since plan files are untrusted input. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "backend/cgen/cgen.h"

static const int par_values[] = {0, 1, 2, 3};
static const int grain_values[] = {0, 1, 4, 16, 64};
static const int vec_values[] = {0, 1, 2, 3};
static const int unroll_values[] = {1, 2, 4, 8};
static const int tile_values[] = {0, 8, 16, 32, 64};
static const int order_values[] = {0, 1};
static const int red_values[] = {0, 1, 2, 3};
static const int stream_values[] = {0, 1};
static const int fetch_values[] = {1, 0, 2};

static const char knob_letter[CG_KNOBS] = {'p', 'g', 'v', 'u', 't', 'o', 'r', 's', 'f'};

int cg_schedule_domain(int knob, const int **values) {
#define DOMAIN(arr)                                                                                \
    do {                                                                                           \
        *values = arr;                                                                             \
        return (int)(sizeof arr / sizeof arr[0]);                                                  \
    } while (0)
    switch (knob) {
    case 0: DOMAIN(par_values);
    case 1: DOMAIN(grain_values);
    case 2: DOMAIN(vec_values);
    case 3: DOMAIN(unroll_values);
    case 4: DOMAIN(tile_values);
    case 5: DOMAIN(order_values);
    case 6: DOMAIN(red_values);
    case 7: DOMAIN(stream_values);
    case 8: DOMAIN(fetch_values);
    default: *values = NULL; return 0;
    }
#undef DOMAIN
}

int *cg_schedule_knob(cg_schedule *s, int knob) {
    switch (knob) {
    case 0: return &s->par;
    case 1: return &s->grain;
    case 2: return &s->vec;
    case 3: return &s->unroll;
    case 4: return &s->tile;
    case 5: return &s->order;
    case 6: return &s->red;
    case 7: return &s->stream;
    case 8: return &s->fetch;
    default: return NULL;
    }
}

/* A layout primitive whose output's innermost dimension walks its input with
 * a stride of a page or more (the NCHW -> NHWC transpose before SegFormer's
 * fuse convolution, 16384 floats) makes an untiled loop touch a new page and
 * cache set on every element. Such a kernel's speed then depends on where
 * its tensors happen to sit, virtually and physically: SegFormer's decoder
 * kernel measured 12.5 ms profiled and 16 to 43 ms inside the plan across
 * runs of the same plan; tiled (t8) it measured 13.6 ms. Terms with a
 * division, modulus or table are not analysed (treated as short strides). */
#define PAGE_STRIDE_ELEMENTS 1024
#define PAGE_STRIDE_MIN_EXTENT 64

/* Whether reading value v, with coef[t] the change of its coordinate t per
 * unit of a pass's innermost loop coordinate, reaches a buffer (a kernel
 * input or a reduction's result) with a stride of `min` elements or more. Values
 * are expressions (docs/codegen.md), so the walk goes through elementwise
 * operands (broadcast dimensions do not move) and layout maps (composed)
 * down to the loads; a map term that is not affine along the loop stops
 * that path (it cannot be told). Paths that meet again are walked once per
 * path, so the walk has a budget of visits (an answer of "no" when it runs
 * out only costs the default schedule its tiling). */
#define PAGE_STRIDE_VISITS 4096
static bool reads_strided(const cg_kernel *k, int v, const int64_t *coef, int depth, int *budget, int64_t min) {
    if (--*budget < 0) return false;
    const cg_value *val = &k->values[v];
    int rank = val->shape.rank;
    const cg_node *n = val->producer >= 0 ? &k->nodes[val->producer] : NULL;
    if (!n || n->pn->kind == KORCH_PRIM_REDUCE || depth > 24) {
        if (depth > 24 || val->inline_scalar) return false;
        int64_t stride = 1, step = 0;
        for (int t = rank - 1; t >= 0; t--) {
            step += coef[t] * stride;
            stride *= val->shape.dims[t] > 0 ? val->shape.dims[t] : 1;
        }
        return step >= min || step <= -min;
    }
    for (int p = 0; p < n->n_in; p++) {
        const cg_value *u = &k->values[n->in[p]];
        int64_t next[KORCH_MAX_RANK] = {0};
        bool moves = false, affine = true;
        if (n->pn->kind == KORCH_PRIM_LAYOUT) {
            if (p >= n->pn->u.layout.n_maps) continue;
            const korch_index_map *m = &n->pn->u.layout.maps[p];
            for (int t = 0; t < m->input_rank && t < KORCH_MAX_RANK && affine; t++) {
                const korch_index_term *term = &m->terms[t];
                for (int j = 0; j < rank && affine; j++) {
                    int64_t prod;
                    if (term->coef[j] == 0 || coef[j] == 0) continue;
                    if (term->div > 1 || term->mod > 0 || term->table ||
                        __builtin_mul_overflow(term->coef[j], coef[j], &prod) ||
                        __builtin_add_overflow(next[t], prod, &next[t]))
                        affine = false;
                }
                moves |= next[t] != 0;
            }
        } else {
            /* elementwise: numpy broadcasting, dimensions aligned on the right */
            for (int t = 0; t < u->shape.rank; t++) {
                int j = t + rank - u->shape.rank;
                next[t] = j >= 0 && u->shape.dims[t] != 1 ? coef[j] : 0;
                moves |= next[t] != 0;
            }
        }
        if (affine && moves && reads_strided(k, n->in[p], next, depth + 1, budget, min)) return true;
    }
    return false;
}

/* Whether a pass's innermost loop reads a buffer with a stride of at least
 * `min` elements (reads_strided). */
static bool kernel_strides(const cg_kernel *k, int64_t min) {
    /* the passes: one per output, one per reduction (its loops run over its
     * input); each one's innermost loop is its value's last dimension */
    for (int i = 0; i < k->n_values + k->n_nodes; i++) {
        int v;
        if (i < k->n_values) {
            if (k->values[i].output_slot < 0) continue;
            int pr = k->values[i].producer;
            if (pr < 0 || k->nodes[pr].pn->kind == KORCH_PRIM_REDUCE) continue;
            v = i;
        } else {
            const cg_node *n = &k->nodes[i - k->n_values];
            if (n->pn->kind != KORCH_PRIM_REDUCE) continue;
            v = n->in[0];
        }
        const korch_shape *s = &k->values[v].shape;
        if (s->rank < 1 || s->dims[s->rank - 1] < PAGE_STRIDE_MIN_EXTENT) continue;
        int64_t coef[KORCH_MAX_RANK] = {0};
        coef[s->rank - 1] = 1;
        int budget = PAGE_STRIDE_VISITS;
        if (reads_strided(k, v, coef, 0, &budget, min)) return true;
    }
    return false;
}

bool cg_kernel_strides_pages(const cg_kernel *k) { return kernel_strides(k, PAGE_STRIDE_ELEMENTS); }

/* Work (elements produced, intermediates included) from which a kernel
 * without a timed schedule runs in parallel. Spinning threads (libgomp's
 * default) wake in a few microseconds. Threads that wait passively (the
 * CLI's choice when the machine is busy, src/cli/omp_policy.c) cost a
 * futex wake per kernel and, on a busy machine, the other thread's wait
 * for a time slice: on the small CRNN (bench/recurrent/RESULTS.md) its three
 * conv-bias-ReLU-pool kernels (65K elements counted, 6 us each) took 17 us
 * at their fastest but 2.5 ms at their median, the rest of the plan 0.25 ms.
 * So with passive waiting the bar is 8x higher. */
#define CG_PARALLEL_WORK 32768
#define CG_PARALLEL_WORK_PASSIVE (8 * CG_PARALLEL_WORK)

static int64_t parallel_work(void) {
    const char *w = getenv("OMP_WAIT_POLICY");
    return w && strcasecmp(w, "passive") == 0 ? CG_PARALLEL_WORK_PASSIVE : CG_PARALLEL_WORK;
}

/* elements produced, intermediates included */
static int64_t kernel_work(const cg_kernel *k) {
    int64_t work = 0;
    for (int i = 0; i < k->n_values; i++)
        if (k->values[i].producer >= 0) work += korch_shape_numel(&k->values[i].shape);
    return work;
}

/* the strided default below: reads a line or more apart, in kernels this large */
#define LINE_STRIDE_ELEMENTS 64
#define STRIDED_DEFAULT_WORK (1 << 20)

/* Parallel only when there is enough work to amortise waking the threads
 * (a few microseconds); everything else vectorised, no tiling; streaming
 * stores on (they only apply to outputs larger than the last-level cache,
 * and the tuner turns them off where they lose: kernels that compute slowly
 * per element, such as erf-GELU). */
cg_schedule cg_schedule_default(const cg_kernel *k) {
    cg_schedule s = {.par = kernel_work(k) >= parallel_work() ? 2 : 0, .grain = 0, .vec = 1, .unroll = 1, .tile = 0,
                      .order = 0, .red = 3, .stream = 1, .fetch = 1};
    /* tiled, and the point loops run along the input's rows, the output
     * staged through the tile (emit_stage.c) */
    if (cg_kernel_strides_pages(k)) s.tile = CG_PAGE_STRIDE_TILE, s.order = 1;
    /* A large transpose whose reads stride by whole lines but less than a
     * page (64x512x512, (0,2,1): 2 KiB) starts tiled and staged too, with
     * tiles of 32 (whole-line copy-out rows, streamed past the LLC): the
     * tuner's descent from the untiled default ended at 10.8 ms one run
     * and at t32.o1.s1's 7.5 another (bench/kernels/RESULTS.md,
     * 2026-11-28), since o1 only pays once a tile is set. */
    else if (kernel_work(k) >= STRIDED_DEFAULT_WORK && kernel_strides(k, LINE_STRIDE_ELEMENTS)) s.tile = 32, s.order = 1;
    return s;
}

/* The schedules quick profiling (phase 1) may time: the default and, when
 * the default runs in parallel, its serial twin (when it is serial only for
 * passive waiting, its parallel twin). Whether waking the threads
 * pays depends on the kernel and on how busy the machine is (a parallel
 * region waits until every thread is scheduled); cgen_profile.c picks one. */
int cg_schedule_quick(const cg_kernel *k, cg_schedule out[CG_QUICK_MAX]) {
    out[0] = cg_schedule_default(k);
    out[1] = out[0];
    if (out[0].par != 0) {
        out[1].par = 0;
        return 2;
    }
    /* serial by default only because threads wait passively: time the
     * parallel twin too, as on a machine with spinning threads */
    if (kernel_work(k) < CG_PARALLEL_WORK) return 1;
    out[1].par = 2;
    return 2;
}

/* The stream knob (generator cg6) and the fetch knob (cg9) came last and are
 * written only when they differ from what older generators did (".s1",
 * ".f0"), so schedules of older plans read unchanged: stream 0, fetch 1. */
void cg_schedule_format(const cg_schedule *s, char *buf, size_t size) {
    snprintf(buf, size, "p%d.g%d.v%d.u%d.t%d.o%d.r%d%s%s", s->par, s->grain, s->vec, s->unroll, s->tile, s->order, s->red,
             s->stream ? ".s1" : "", s->fetch == 0 ? ".f0" : s->fetch == 2 ? ".f2" : "");
}

static bool in_domain(int knob, int v) {
    const int *values;
    int n = cg_schedule_domain(knob, &values);
    for (int i = 0; i < n; i++)
        if (values[i] == v) return true;
    return false;
}

bool cg_schedule_parse(const char *text, cg_schedule *s) {
    if (!text) return false;
    cg_schedule r = {0};
    r.fetch = 1;
    const char *p = text;
    for (int knob = 0; knob < CG_KNOBS; knob++) {
        /* knobs from the stream knob on are optional, each written only
         * with the value that is not its default */
        bool optional = knob >= 7;
        if (optional && *p == '\0') break;
        if (knob > 0 && *p++ != '.') return false;
        if (*p != knob_letter[knob]) {
            if (optional) {
                p--; /* give the '.' back: the next optional knob may follow */
                continue;
            }
            return false;
        }
        p++;
        if (*p < '0' || *p > '9') return false;
        int v = 0, digits = 0;
        while (*p >= '0' && *p <= '9') {
            if (++digits > 3) return false;
            v = v * 10 + (*p++ - '0');
        }
        if (!in_domain(knob, v)) return false;
        if (knob == 7 && v == 0) return false; /* ".s0" is never written */
        if (knob == 8 && v == 1) return false; /* nor ".f1" */
        *cg_schedule_knob(&r, knob) = v;
    }
    if (*p != '\0') return false;
    *s = r;
    return true;
}
