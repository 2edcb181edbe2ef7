/* Test harness for fission rules: builds small op graphs in C (no Python,
 * no files), runs them through the reference executor and through
 * fission, and compares.
 *
 *     korch_graph *g = fh_begin(13);
 *     fh_input(g, "x", KORCH_DTYPE_FLOAT32, 2, (int64_t[]){3, 4});
 *     int n = fh_node(g, "Softmax", "x", "y");
 *     fh_attr_int(g, n, "axis", 0);
 *     fh_output(g, "y");
 *     fh_check(g, &(fh_options){.rtol = 1e-5}, "softmax axis 0");
 *
 * fh_check compares the reference outputs (korch_reference_run) with:
 *   1. the raw primitive graph (korch_fission_raw) interpreted,
 *   2. the cleaned-up graph (korch_fission) interpreted,
 *   3. the cleaned-up graph exported to ONNX, reloaded by the frontend and
 *      run by the reference executor;
 * and checks that no opaque primitive remains unless allowed. It frees g.
 *
 * Error measure per element: |got - want| / (|want| + scale), scale = the
 * mean |want| of the tensor (at least 1e-6): relative where values are
 * large, absolute (relative to the tensor's typical magnitude) where a value
 * is near zero by cancellation. Integers and bools compare exactly. */
#ifndef KORCH_TESTS_FISSION_HARNESS_H
#define KORCH_TESTS_FISSION_HARNESS_H

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "fission/fission.h"
#include "fission/pgraph_onnx.h"
#include "frontend/frontend.h"
#include "frontend/onnx_load.h"
#include "ops/reference.h"
#include "relayout/relayout.h"
#include "test.h"

/* ---- deterministic random numbers --------------------------------------- */

static uint64_t fh_rng = 0x243F6A8885A308D3ull;

static inline void fh_seed(uint64_t s) { fh_rng = s * 0x9E3779B97F4A7C15ull + 1; }

static inline double fh_uniform(void) { /* [0, 1) */
    fh_rng ^= fh_rng << 13;
    fh_rng ^= fh_rng >> 7;
    fh_rng ^= fh_rng << 17;
    return (double)(fh_rng >> 11) / 9007199254740992.0;
}

static inline int64_t fh_int(int64_t lo, int64_t hi) { /* [lo, hi] */
    return lo + (int64_t)(fh_uniform() * (double)(hi - lo + 1));
}

/* ---- graph building --------------------------------------------------------- */

static inline korch_graph *fh_begin(int opset) {
    korch_graph *g = NULL;
    if (korch_graph_create(&g) != KORCH_OK) abort();
    g->opsets = calloc(1, sizeof *g->opsets);
    g->opsets[0].domain = strdup("");
    g->opsets[0].version = opset;
    g->n_opsets = 1;
    g->name = strdup("fission_test");
    g->ir_version = 8;
    g->inputs = calloc(64, sizeof(int));
    g->outputs = calloc(64, sizeof(int));
    return g;
}

static inline int fh_value(korch_graph *g, const char *name) {
    int v = korch_graph_intern_value(g, name);
    if (v < 0) abort();
    return v;
}

static inline int fh_input(korch_graph *g, const char *name, korch_dtype dt, int rank, const int64_t *dims) {
    int v = fh_value(g, name);
    korch_value *val = &g->values[v];
    val->is_graph_input = true;
    val->declared_dtype = dt;
    val->declared_shape = korch_shape_make(rank, dims);
    val->has_declared_shape = true;
    g->inputs[g->n_inputs++] = v;
    return v;
}

/* A constant (initializer) taking ownership of t. */
static inline int fh_const(korch_graph *g, const char *name, korch_tensor *t) {
    int v = fh_value(g, name);
    korch_value *val = &g->values[v];
    val->is_constant = true;
    val->constant = *t;
    val->dtype = t->dtype;
    val->shape = t->shape;
    val->has_shape = true;
    t->owns_data = false;
    return v;
}

static inline int fh_const_i64(korch_graph *g, const char *name, int n, const int64_t *v) {
    korch_tensor t;
    korch_shape s = {.rank = 1, .dims = {n}};
    if (korch_tensor_alloc(&t, KORCH_DTYPE_INT64, &s) != KORCH_OK) abort();
    if (n) memcpy(t.data, v, (size_t)n * sizeof *v);
    return fh_const(g, name, &t);
}

static inline int fh_const_f32(korch_graph *g, const char *name, int rank, const int64_t *dims, const float *v) {
    korch_tensor t;
    korch_shape s = korch_shape_make(rank, dims);
    if (korch_tensor_alloc(&t, KORCH_DTYPE_FLOAT32, &s) != KORCH_OK) abort();
    memcpy(t.data, v, korch_tensor_bytes(&t));
    return fh_const(g, name, &t);
}

/* A random float constant with values in [lo, hi). */
static inline int fh_const_random(korch_graph *g, const char *name, int rank, const int64_t *dims, double lo, double hi) {
    korch_tensor t;
    korch_shape s = korch_shape_make(rank, dims);
    if (korch_tensor_alloc(&t, KORCH_DTYPE_FLOAT32, &s) != KORCH_OK) abort();
    for (int64_t i = 0; i < korch_tensor_numel(&t); i++) ((float *)t.data)[i] = (float)(lo + (hi - lo) * fh_uniform());
    return fh_const(g, name, &t);
}

/* Splits "a,b,,c" into value indices (-1 for an empty name). */
static inline int fh_names(korch_graph *g, const char *list, int *out) {
    int n = 0;
    if (!list || !*list) return 0;
    const char *p = list;
    for (;;) {
        const char *comma = strchr(p, ',');
        size_t len = comma ? (size_t)(comma - p) : strlen(p);
        char name[128];
        snprintf(name, sizeof name, "%.*s", (int)len, p);
        out[n++] = len ? fh_value(g, name) : -1;
        if (!comma) break;
        p = comma + 1;
    }
    return n;
}

static inline int fh_node(korch_graph *g, const char *op, const char *inputs, const char *outputs) {
    int ins[64], outs[16];
    int n_in = fh_names(g, inputs, ins), n_out = fh_names(g, outputs, outs);
    int ni = korch_graph_add_node(g);
    if (ni < 0) abort();
    korch_node *n = &g->nodes[ni];
    char name[64];
    snprintf(name, sizeof name, "%s_%d", op, ni);
    n->name = strdup(name);
    n->op_type = strdup(op);
    n->domain = strdup("");
    n->opset = (int)g->opsets[0].version;
    n->n_inputs = n_in;
    n->inputs = malloc(sizeof(int) * (size_t)(n_in + 1));
    memcpy(n->inputs, ins, sizeof(int) * (size_t)n_in);
    n->n_outputs = n_out;
    n->outputs = malloc(sizeof(int) * (size_t)(n_out + 1));
    memcpy(n->outputs, outs, sizeof(int) * (size_t)n_out);
    for (int k = 0; k < n_out; k++)
        if (outs[k] >= 0) g->values[outs[k]].producer = ni;
    n->attrs = calloc(16, sizeof(korch_attr));
    return ni;
}

static inline korch_attr *fh_attr(korch_graph *g, int ni, const char *name, korch_attr_type type) {
    korch_node *n = &g->nodes[ni];
    korch_attr *a = &n->attrs[n->n_attrs++];
    a->name = strdup(name);
    a->type = type;
    return a;
}

static inline void fh_attr_int(korch_graph *g, int ni, const char *name, int64_t v) { fh_attr(g, ni, name, KORCH_ATTR_INT)->i = v; }
static inline void fh_attr_float(korch_graph *g, int ni, const char *name, float v) { fh_attr(g, ni, name, KORCH_ATTR_FLOAT)->f = v; }
static inline void fh_attr_string(korch_graph *g, int ni, const char *name, const char *v) {
    fh_attr(g, ni, name, KORCH_ATTR_STRING)->s = strdup(v);
}
static inline void fh_attr_ints(korch_graph *g, int ni, const char *name, int count, const int64_t *v) {
    korch_attr *a = fh_attr(g, ni, name, KORCH_ATTR_INTS);
    a->ints = malloc(sizeof(int64_t) * (size_t)(count + 1));
    if (count) memcpy(a->ints, v, sizeof(int64_t) * (size_t)count);
    a->count = count;
}
static inline void fh_attr_floats(korch_graph *g, int ni, const char *name, int count, const float *v) {
    korch_attr *a = fh_attr(g, ni, name, KORCH_ATTR_FLOATS);
    a->floats = malloc(sizeof(float) * (size_t)(count + 1));
    if (count) memcpy(a->floats, v, sizeof(float) * (size_t)count);
    a->count = count;
}

static inline void fh_output(korch_graph *g, const char *name) {
    int v = fh_value(g, name);
    g->values[v].is_graph_output = true;
    g->outputs[g->n_outputs++] = v;
}

/* ---- checking ------------------------------------------------------------------ */

typedef struct fh_options {
    double rtol;          /* 0: exact (integers, layouts) */
    double lo, hi;        /* random float inputs in [lo, hi) (default [-2, 2)) */
    bool allow_opaque;    /* an opaque primitive is expected */
    int min_primitives;   /* the op must fission into at least this many primitives */
    int seed;
    int channels_last;    /* > 0: after the checks, the layout pass (channels-last) must rewrite this many
                             convolutions, and the rewritten graph is checked the same way */
} fh_options;

static int fh_checked = 0; /* graphs checked in this test binary */

static inline void fh_random_tensor(korch_tensor *t, korch_dtype dt, const korch_shape *s, const fh_options *o) {
    if (korch_tensor_alloc(t, dt, s) != KORCH_OK) abort();
    double lo = o->lo, hi = o->hi;
    if (lo == 0 && hi == 0) lo = -2, hi = 2;
    for (int64_t i = 0; i < korch_tensor_numel(t); i++) {
        switch (dt) {
        case KORCH_DTYPE_FLOAT32: ((float *)t->data)[i] = (float)(lo + (hi - lo) * fh_uniform()); break;
        case KORCH_DTYPE_FLOAT64: ((double *)t->data)[i] = lo + (hi - lo) * fh_uniform(); break;
        case KORCH_DTYPE_INT64: ((int64_t *)t->data)[i] = fh_int(-5, 5); break;
        case KORCH_DTYPE_INT32: ((int32_t *)t->data)[i] = (int32_t)fh_int(-5, 5); break;
        case KORCH_DTYPE_UINT8: ((uint8_t *)t->data)[i] = (uint8_t)fh_int(0, 255); break;
        case KORCH_DTYPE_INT8: ((int8_t *)t->data)[i] = (int8_t)fh_int(-128, 127); break;
        case KORCH_DTYPE_BOOL: ((uint8_t *)t->data)[i] = fh_uniform() < 0.5; break;
        default: break;
        }
    }
}

/* Max error of got against want (see the header comment); -1 on a shape or
 * dtype mismatch, INFINITY when an integer differs or NaNs disagree. */
static inline double fh_error(const korch_tensor *got, const korch_tensor *want) {
    if (got->dtype != want->dtype || !korch_shape_equal(&got->shape, &want->shape)) return -1;
    int64_t n = korch_tensor_numel(want);
    bool is_float = want->dtype == KORCH_DTYPE_FLOAT32 || want->dtype == KORCH_DTYPE_FLOAT64;
    if (!is_float) return memcmp(got->data, want->data, korch_tensor_bytes(want)) ? INFINITY : 0.0;
    double scale = 0;
    for (int64_t i = 0; i < n; i++) {
        double w = korch_tensor_get_f64(want, i);
        if (isfinite(w)) scale += fabs(w);
    }
    scale = n ? scale / (double)n : 0;
    if (scale < 1e-6) scale = 1e-6;
    double worst = 0;
    for (int64_t i = 0; i < n; i++) {
        double a = korch_tensor_get_f64(got, i), b = korch_tensor_get_f64(want, i);
        if (isnan(a) || isnan(b)) {
            if (isnan(a) != isnan(b)) return INFINITY;
            continue;
        }
        if (isinf(a) || isinf(b)) {
            if (a != b) return INFINITY;
            continue;
        }
        double e = fabs(a - b) / (fabs(b) + scale);
        if (e > worst) worst = e;
    }
    return worst;
}

static inline void fh_compare(const char *what, const char *label, int n, const korch_tensor *got, const korch_tensor *want,
                       double rtol) {
    for (int k = 0; k < n; k++) {
        double e = fh_error(&got[k], &want[k]);
        CHECK_MSG(e >= 0 && e <= rtol, "%s: %s output %d: error %g > %g", label, what, k, e, rtol);
    }
}

static inline korch_status fh_run_export(const korch_pgraph *pg, const korch_tensor *inputs, korch_tensor *out) {
    uint8_t *data = NULL;
    size_t size = 0;
    KORCH_TRY(korch_pgraph_export_onnx_buffer(pg, &data, &size));
    korch_graph *e = NULL;
    korch_status st = korch_onnx_load_buffer(data, size, NULL, &e);
    free(data);
    if (st == KORCH_OK) st = korch_graph_validate(e);
    if (st == KORCH_OK) st = korch_graph_infer(e, NULL, 0);
    if (st == KORCH_OK) st = korch_reference_run(e, inputs, out);
    korch_graph_free(e);
    return st;
}

static inline int fh_count_kind(const korch_pgraph *pg, korch_prim_kind kind) {
    int c = 0;
    for (int i = 0; i < pg->n_nodes; i++) c += !pg->nodes[i].dead && pg->nodes[i].kind == kind;
    return c;
}

/* Runs the comparisons on one graph (see the header); frees g. */
static inline void fh_check(korch_graph *g, const fh_options *o, const char *label) {
    enum { MAXT = 16 };
    korch_tensor in[MAXT], want[MAXT], got[MAXT];
    korch_pgraph *raw = NULL, *clean = NULL;
    fh_checked++;
    fh_seed((uint64_t)o->seed + (uint64_t)fh_checked * 7919u);
    korch_status st = korch_graph_validate(g);
    if (st == KORCH_OK) st = korch_graph_infer(g, NULL, 0);
    CHECK_MSG(st == KORCH_OK, "%s: building the op graph failed: %s", label, korch_last_error());
    if (st != KORCH_OK) {
        korch_graph_free(g);
        return;
    }
    for (int i = 0; i < g->n_inputs; i++) {
        const korch_value *v = &g->values[g->inputs[i]];
        fh_random_tensor(&in[i], v->dtype, &v->shape, o);
    }
    st = korch_reference_run(g, in, want);
    bool have_want = st == KORCH_OK;
    CHECK_MSG(st == KORCH_OK, "%s: reference run failed: %s", label, korch_last_error());
    if (st == KORCH_OK) {
        st = korch_fission_raw(g, &raw, NULL);
        CHECK_MSG(st == KORCH_OK, "%s: fission failed: %s", label, korch_last_error());
    }
    if (raw) {
        int opaque = fh_count_kind(raw, KORCH_PRIM_OPAQUE);
        CHECK_MSG(o->allow_opaque || opaque == 0, "%s: %d opaque primitives after fission", label, opaque);
        CHECK_MSG(korch_pgraph_live_nodes(raw) >= o->min_primitives, "%s: only %d primitives (expected >= %d)", label,
                  korch_pgraph_live_nodes(raw), o->min_primitives);
        st = korch_pgraph_interpret(raw, in, got);
        CHECK_MSG(st == KORCH_OK, "%s: interpreting the raw pgraph failed: %s", label, korch_last_error());
        if (st == KORCH_OK) {
            fh_compare("raw fission", label, g->n_outputs, got, want, o->rtol);
            for (int k = 0; k < g->n_outputs; k++) korch_tensor_free(&got[k]);
        }
        st = korch_fission(g, &clean, NULL);
        CHECK_MSG(st == KORCH_OK, "%s: fission + clean-up failed: %s", label, korch_last_error());
    }
    if (clean) {
        st = korch_pgraph_interpret(clean, in, got);
        CHECK_MSG(st == KORCH_OK, "%s: interpreting the cleaned pgraph failed: %s", label, korch_last_error());
        if (st == KORCH_OK) {
            fh_compare("cleaned fission", label, g->n_outputs, got, want, o->rtol);
            for (int k = 0; k < g->n_outputs; k++) korch_tensor_free(&got[k]);
        }
        st = fh_run_export(clean, in, got);
        CHECK_MSG(st == KORCH_OK, "%s: running the exported ONNX failed: %s", label, korch_last_error());
        if (st == KORCH_OK) {
            fh_compare("exported ONNX", label, g->n_outputs, got, want, o->rtol);
            for (int k = 0; k < g->n_outputs; k++) korch_tensor_free(&got[k]);
        }
    }
    if (clean && o->channels_last > 0) {
        korch_layout_stats ls = {0};
        st = korch_layout_pass(clean, KORCH_LAYOUT_CHANNELS_LAST, &ls);
        CHECK_MSG(st == KORCH_OK, "%s: layout pass failed: %s", label, korch_last_error());
        CHECK_MSG(st != KORCH_OK || ls.convs_rewritten == o->channels_last,
                  "%s: the layout pass made %d convolutions channels-last, want %d", label, ls.convs_rewritten,
                  o->channels_last);
        if (st == KORCH_OK) st = korch_pgraph_interpret(clean, in, got);
        if (st == KORCH_OK) {
            fh_compare("channels-last", label, g->n_outputs, got, want, o->rtol);
            for (int k = 0; k < g->n_outputs; k++) korch_tensor_free(&got[k]);
            st = fh_run_export(clean, in, got);
            CHECK_MSG(st == KORCH_OK, "%s: running the exported channels-last ONNX failed: %s", label,
                      korch_last_error());
            if (st == KORCH_OK) {
                fh_compare("exported channels-last ONNX", label, g->n_outputs, got, want, o->rtol);
                for (int k = 0; k < g->n_outputs; k++) korch_tensor_free(&got[k]);
            }
        }
    }
    if (have_want)
        for (int k = 0; k < g->n_outputs; k++) korch_tensor_free(&want[k]);
    korch_pgraph_free(raw);
    korch_pgraph_free(clean);
    for (int i = 0; i < g->n_inputs; i++) korch_tensor_free(&in[i]);
    korch_graph_free(g);
}

/* A one-node graph "x0[,x1..] -> y" over float inputs of the given shapes. */
static inline korch_graph *fh_unary_graph(int opset, const char *op, int rank, const int64_t *dims, int *node) {
    korch_graph *g = fh_begin(opset);
    fh_input(g, "x", KORCH_DTYPE_FLOAT32, rank, dims);
    *node = fh_node(g, op, "x", "y");
    fh_output(g, "y");
    return g;
}

/* Random shapes: rank in [lo_rank, hi_rank], dims in [1, max_dim]. */
static inline korch_shape fh_random_shape(int lo_rank, int hi_rank, int64_t max_dim) {
    korch_shape s = {.rank = (int)fh_int(lo_rank, hi_rank)};
    for (int k = 0; k < s.rank; k++) s.dims[k] = fh_int(1, max_dim);
    return s;
}

#endif
