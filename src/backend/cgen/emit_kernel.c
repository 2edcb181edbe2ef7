/* One fused C function per (kernel, schedule).
 *
 * A kernel is a sequence of passes ("stages"): one per reduction (writing its
 * result to scratch, or straight to an output) and one per output. Elementwise
 * and layout values are computed inside the passes that need them (see
 * emit_value.c). When every pass iterates over the same leading dimensions
 * and no pass reads another pass's result across them, those dimensions
 * become common outer loops ("fused mode", depth P): a softmax row is then one
 * outer iteration running a max pass, a sum pass and an output pass over data
 * that stays in L1/L2. Otherwise (P = 0) each pass is its own parallel loop
 * nest over the whole tensor. P is found by trying the deepest candidate and
 * backing off while a read would cross outer iterations. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/cgen/emit.h"

void cg_point_loop_header(char *buf, size_t size, int indent, int sym, const char *tile_var, int tile, int64_t ext,
                          int step) {
    char inc[24];
    if (step > 1) snprintf(inc, sizeof inc, " += %d", step);
    else snprintf(inc, sizeof inc, "++");
    snprintf(buf, size, "%*sfor (int64_t x%d = %s; x%d < (%s + %d < %lld ? %s + %d : %lld); x%d%s)", indent, "", sym,
             tile_var, sym, tile_var, tile, (long long)ext, tile_var, tile, (long long)ext, sym, inc);
}

void cg_loop_open_raw(cg_emit *e, const char *pragma, const char *header) {
    if (e->depth >= CG_MAX_LEVELS) {
        cg_fail(e, KORCH_ERR_UNSUPPORTED, "loop nest deeper than %d", CG_MAX_LEVELS);
        return;
    }
    size_t n = strlen(pragma) + strlen(header) + 8;
    char *h = malloc(n);
    if (!h) {
        cg_fail(e, KORCH_ERR_OUT_OF_MEMORY, "out of memory");
        return;
    }
    snprintf(h, n, "%s%s", pragma, header);
    e->head[e->depth++] = h;
}

void cg_loop_close(cg_emit *e) {
    if (e->depth == 0) return;
    int level = e->depth - 1;
    cg_buf *outer = &e->lv[level], *body = &e->lv[level + 1];
    cg_buf_printf(outer, "%s {\n", e->head[level]);
    if (body->len) cg_buf_append(outer, body->data, body->len);
    cg_buf_printf(outer, "%*s}\n", 4 * (level + 1), "");
    body->len = 0;
    if (body->data) body->data[0] = '\0';
    free(e->head[level]);
    e->head[level] = NULL;
    e->depth--;
    cg_memo_drop(e, level);
}

void cg_simd_pragma(cg_emit *e, const cg_loop_opts *o, char *buf, size_t size) {
    buf[0] = '\0';
    if (!o->simd || (e->s->vec == 0 && !o->simd_always)) return;
    const char *len = e->s->vec == 2 ? " simdlen(8)" : e->s->vec == 3 ? " simdlen(16)" : "";
    snprintf(buf, size, " simd%s%s", len, o->simd_clause ? o->simd_clause : "");
}

void cg_region_open(cg_emit *e) {
    char pragma[96], header[48];
    snprintf(pragma, sizeof pragma, "%*s#pragma omp parallel num_threads(nthreads)\n", 4 * (e->depth + 1), "");
    snprintf(header, sizeof header, "%*s", 4 * (e->depth + 1) - 1, "");
    cg_loop_open_raw(e, pragma, header);
}

void cg_region_close(cg_emit *e) { cg_loop_close(e); }

/* The loop order of a nest (the last two swapped under the order knob)
 * and whether its last two loops are tiled: both extents above the tile. */
static bool nest_order(const cg_emit *e, const cg_nest *ns, bool reorder, int *order) {
    for (int i = 0; i < ns->n; i++) order[i] = i;
    if (!reorder || ns->n < 2) return false;
    if (e->s->order) {
        order[ns->n - 2] = ns->n - 1;
        order[ns->n - 1] = ns->n - 2;
    }
    int t = e->s->tile;
    return t > 0 && ns->ext[order[ns->n - 2]] > t && ns->ext[order[ns->n - 1]] > t;
}

bool cg_nest_tiles(const cg_emit *e, const cg_nest *ns, bool reorder) {
    int order[KORCH_MAX_RANK];
    return nest_order(e, ns, reorder, order);
}

void cg_nest_open(cg_emit *e, cg_nest *ns, const cg_loop_opts *o) {
    int order[KORCH_MAX_RANK];
    bool tiled = nest_order(e, ns, o->reorder, order);
    /* the loop list: plain loops, then (tiled) two tile loops and two point loops */
    int kind[KORCH_MAX_RANK + 2], dim[KORCH_MAX_RANK + 2], nl = 0;
    for (int i = 0; i < ns->n; i++) {
        if (tiled && i == ns->n - 2) {
            kind[nl] = 1, dim[nl++] = order[i];
            kind[nl] = 1, dim[nl++] = order[i + 1];
        }
        kind[nl] = tiled && i >= ns->n - 2 ? 2 : 0;
        dim[nl++] = order[i];
    }
    int rect = 0;
    while (rect < nl && kind[rect] != 2) rect++;
    int c = o->par < rect ? o->par : rect;
    /* keep the innermost loop out of the collapse when it is the vector loop:
     * gcc does not vectorise a collapsed iteration space */
    if (o->simd && e->s->vec && nl > 1 && c == nl) c = nl - 1;
    int base = e->depth;
    ns->tiled = tiled;
    ns->swapped = o->reorder && ns->n >= 2 && e->s->order;
    char(*tile_var)[16] = ns->tile_var;
    /* Loops 1..c-1 are collapsed into loop 0: no pragma may sit between
     * them, so when the innermost loop is among them its simd goes on the
     * combined construct. gcc accepts no GCC unroll next to an omp simd, so
     * unrolling applies to loops without simd. */
    char simd[96] = "";
    cg_simd_pragma(e, o, simd, sizeof simd);
    bool inner_collapsed = nl - 1 < c;
    for (int li = 0; li < nl; li++) {
        int d = dim[li];
        bool inner = li == nl - 1;
        char pragma[320] = "", header[256];
        if (li == 0 && c > 0) {
            char sched[32] = "schedule(static)";
            if (e->s->grain) snprintf(sched, sizeof sched, "schedule(static, %d)", e->s->grain);
            char coll[24] = "";
            if (c > 1) snprintf(coll, sizeof coll, " collapse(%d)", c);
            snprintf(pragma, sizeof pragma, "%*s#pragma omp %s%s%s %s%s%s\n", 4 * (base + 1), "",
                     o->in_region ? "for" : "parallel for", inner_collapsed ? simd : "", coll, sched,
                     /* in a region, the fence before its closing barrier
                      * replaces the loop's own barrier */
                     o->in_region ? " nowait" : " num_threads(nthreads)",
                     o->clause && !(inner_collapsed && simd[0]) ? o->clause : "");
        } else if (inner && simd[0] && !inner_collapsed) {
            snprintf(pragma, sizeof pragma, "%*s#pragma omp%s\n", 4 * (base + li + 1), "", simd);
        }
        if (inner && !inner_collapsed && !simd[0] && e->s->unroll > 1) {
            size_t used = strlen(pragma);
            snprintf(pragma + used, sizeof pragma - used, "%*s#pragma GCC unroll %d\n", 4 * (base + li + 1), "",
                     e->s->unroll);
        }
        int64_t ext = ns->ext[d];
        if (kind[li] == 1) {
            snprintf(tile_var[d], sizeof tile_var[d], "b%d", e->n_tmp++);
            snprintf(header, sizeof header, "%*sfor (int64_t %s = 0; %s < %lld; %s += %d)", 4 * (base + li + 1), "",
                     tile_var[d], tile_var[d], (long long)ext, tile_var[d], e->s->tile);
        } else {
            int level = base + li < base + c - 1 ? base + c - 1 : base + li;
            int s = cg_new_sym(e, 0, ext - 1, level);
            ns->sym[d] = s;
            if (kind[li] == 2)
                cg_point_loop_header(header, sizeof header, 4 * (base + li + 1), s, tile_var[d], e->s->tile, ext, 1);
            else
                snprintf(header, sizeof header, "%*sfor (int64_t x%d = 0; x%d < %lld; x%d++)", 4 * (base + li + 1), "",
                         s, s, (long long)ext, s);
        }
        cg_loop_open_raw(e, pragma, header);
    }
    ns->opened = nl;
}

void cg_nest_close(cg_emit *e, cg_nest *ns) {
    for (int i = 0; i < ns->opened; i++) cg_loop_close(e);
    ns->opened = 0;
}

/* ---- passes ----------------------------------------------------------------- */

static void coords_of(const cg_nest *ns, int first, int P, const int *outer, int rank, cg_aff *c) {
    for (int d = 0; d < rank; d++) c[d] = d < P ? cg_aff_sym(outer[d]) : cg_aff_sym(ns->sym[d - first]);
}

void cg_emit_output_pass(cg_emit *e, int value, int slot) {
    if (cg_stream_applies(e, value, e->P)) {
        cg_emit_stream_pass(e, value, slot);
        return;
    }
    if (cg_emit_split_pass(e, value, slot)) return;
    const cg_value *w = &e->k->values[value];
    cg_nest ns = {.n = w->shape.rank - e->P};
    for (int d = 0; d < ns.n; d++) ns.ext[d] = w->shape.dims[e->P + d];
    cg_loop_opts o = {.reorder = e->P == 0, .par = e->P == 0 ? e->s->par : 0, .simd = true};
    cg_nest_open(e, &ns, &o);
    cg_aff c[KORCH_MAX_RANK];
    coords_of(&ns, e->P, e->P, e->outer, w->shape.rank, c);
    int lvl;
    const char *v = cg_value_at(e, value, c, &lvl);
    if (e->stage) { /* the fused nest is staged: copied out after every pass */
        cg_stage_store(e, e->stage, value, slot, v);
        cg_nest_close(e, &ns);
        return;
    }
    if (ns.tiled && ns.swapped) { /* this pass's own nest is staged */
        cg_stage own = {.nest = &ns};
        cg_stage_store(e, &own, value, slot, v);
        cg_stage_copy_out(e, &own);
        cg_nest_close(e, &ns);
        return;
    }
    cg_aff lin = cg_linear(e, &w->shape, c);
    char s[400];
    cg_aff_str(&lin, s, sizeof s);
    cg_stmt(e, e->depth - 1, "out%d[%s] = %s;", slot, s, v);
    cg_nest_close(e, &ns);
}

static int consumers(const cg_kernel *k, int v) {
    int n = 0;
    for (int i = 0; i < k->n_nodes; i++)
        for (int j = 0; j < k->nodes[i].n_in; j++) n += k->nodes[i].in[j] == v;
    for (int i = 0; i < k->n_outputs; i++) n += k->output_value[i] == v;
    return n;
}

/* Whether evaluating value w reads value v (through the elementwise and
 * layout nodes cg_value_at evaluates; a reduction's result is read from
 * its own pass's buffer). *budget bounds the walk: out of budget answers
 * yes, the safe side. */
static bool reaches(const cg_emit *e, int w, int v, int *budget) {
    if (w == v || --*budget < 0) return true;
    const cg_value *val = &e->k->values[w];
    if (e->loc[w] != CG_LOC_COMPUTE || val->producer < 0) return false;
    const cg_node *n = &e->k->nodes[val->producer];
    if (n->pn->kind == KORCH_PRIM_REDUCE) return false;
    for (int i = 0; i < n->n_in; i++)
        if (reaches(e, n->in[i], v, budget)) return true;
    return false;
}

/* Whether element i of value w reads value v at element i only: every path
 * from w down to v runs through elementwise nodes whose values all have
 * v's shape (operands of the same shape are read at the same coordinates). */
static bool reads_in_step(const cg_emit *e, int w, int v, int *budget) {
    if (w == v) return true;
    if (--*budget < 0) return false;
    const cg_value *val = &e->k->values[w];
    if (e->loc[w] != CG_LOC_COMPUTE || val->producer < 0) return true;
    const cg_node *n = &e->k->nodes[val->producer];
    if (n->pn->kind == KORCH_PRIM_REDUCE) return true;
    bool same = n->pn->kind == KORCH_PRIM_ELEMENTWISE && korch_shape_equal(&val->shape, &e->k->values[v].shape);
    for (int i = 0; i < n->n_in; i++) {
        int u = n->in[i];
        bool ok = same && korch_shape_equal(&e->k->values[u].shape, &val->shape) ? reads_in_step(e, u, v, budget)
                                                                                 : !reaches(e, u, v, budget);
        if (!ok) return false;
    }
    return true;
}

/* The output slot whose row may hold the row cache of value v, or -1.
 * A row cache on the stack is written by the reduction passes and read
 * by the last pass, which then writes the output row from it: the row's
 * output cache lines are all missed at once at the end of the row, with
 * nothing left to overlap them (unless they stream past the caches, the
 * stream knob). Kept in the output row itself (what
 * ONNX Runtime's softmax does with its exponentials), the misses come
 * while the row's exponentials are computed: softmax [8192, 1024] under
 * one schedule 1.60 -> 1.27 ms (bench/kernels/schedules.sh, 2 threads,
 * Zen 4; bench/kernels/RESULTS.md). Safe when
 * the nest's last pass writes that output, of v's shape and type, and its
 * element i reads v at element i only: the passes before read the cache
 * before the output exists, and the last pass reads each element before
 * it overwrites it. (The output never shares memory with an input here:
 * only purely elementwise kernels write in place, runtime/arena.c.) */
static int row_cache_home(const cg_emit *e, int v) {
    int y = e->home_value, budget = 4096;
    /* a streamed output row is written past the caches: the row cache is
     * better off on the stack (the tuner weighs the two through the
     * stream knob) */
    if (y < 0 || e->home_taken || cg_stream_applies(e, y, e->P)) return -1;
    const cg_value *x = &e->k->values[v], *w = &e->k->values[y];
    if (w->dtype != x->dtype || !korch_shape_equal(&w->shape, &x->shape) || w->producer < 0) return -1;
    if (e->k->nodes[w->producer].pn->kind != KORCH_PRIM_ELEMENTWISE) return -1;
    return reads_in_step(e, y, v, &budget) && budget >= 0 ? e->home_slot : -1;
}

/* "acc = max/min(acc, v)" keeping NaN sticky like the interpreter. The NaN
 * test is on the accumulator: testing the loaded value stops gcc from
 * vectorising guarded (masked) loads. */
static void combine(cg_emit *e, bool is_max, const char *acc, const char *v) {
    cg_stmt(e, e->depth - 1, "%s = (%s %s %s || %s != %s) ? %s : %s;", acc, acc, is_max ? ">=" : "<=", v, acc, acc, acc,
            v);
}

/* Limits of the two reduction strategies (docs/codegen.md). Kept-inner
 * (red & 2): the reduced window of one output element is at most
 * KEPT_INNER_MAX_WINDOW elements and the last kept axis, whose accumulators
 * live in a stack array, at most KEPT_INNER_MAX_AXIS. Row cache (red & 1):
 * one cached row is at most ROW_CACHE_MAX_ELEMENTS, and the row caches of
 * one outer iteration at most ROW_CACHE_MAX_BYTES (192 KiB: they live on
 * the worker threads' stacks). 32 K elements: a softmax row of 32768 floats
 * (128 KiB, in L2) without the cache computed every exp twice (1.5x ONNX
 * Runtime on 256x32768, bench/kernels/RESULTS.md). */
enum {
    KEPT_INNER_MAX_WINDOW = 64,
    KEPT_INNER_MAX_AXIS = 4096,
    ROW_CACHE_MAX_ELEMENTS = 32768,
    ROW_CACHE_MAX_BYTES = 192 * 1024,
};

bool cg_kept_inner(const cg_schedule *s, const cg_value *x, uint32_t axes) {
    int R = x->shape.rank, K = R;
    int64_t window = 1;
    while (K > 0 && ((axes >> (K - 1)) & 1u)) window *= x->shape.dims[--K];
    return (s->red & 2) && K >= 1 && K < R && window <= KEPT_INNER_MAX_WINDOW &&
           x->shape.dims[K - 1] <= KEPT_INNER_MAX_AXIS && x->shape.dims[K - 1] > 1;
}

/* One sweep of the reduced suffix [K, R) into the accumulator array `acc`
 * (one element per element of the last kept axis K-1, the vector loop).
 * With `nan_flag` (max/min only) the update is a plain compare-select, one
 * vmaxps on the loop-carried chain, and a NaN input only sets the flag (an
 * OR off the chain); without it the update is the NaN-sticky select of
 * combine(), whose three-op chain halved the 3x3 max-pool's speed. */
static void kept_inner_sweep(cg_emit *e, const cg_node *n, int P, int K, const cg_nest *main_ns, const cg_nest *in,
                             const char *acc, const char *init, const char *nan_flag, bool cache) {
    const korch_prim_reduce *r = &n->pn->u.reduce;
    const cg_value *x = &e->k->values[n->in[0]];
    int R = x->shape.rank;
    bool additive = r->op != KORCH_REDUCE_MAX && r->op != KORCH_REDUCE_MIN;
    char s[400], clause[48] = "";
    cg_nest ini = *in;
    cg_loop_opts simd = {.simd = true};
    cg_nest_open(e, &ini, &simd);
    cg_stmt(e, e->depth - 1, "%s[x%d] = %s;", acc, ini.sym[0], init);
    cg_nest_close(e, &ini);
    cg_nest suf = {.n = R - K};
    for (int d = K; d < R; d++) suf.ext[d - K] = x->shape.dims[d];
    cg_loop_opts plain = {0};
    cg_nest_open(e, &suf, &plain);
    cg_nest lane = *in;
    if (nan_flag) snprintf(clause, sizeof clause, " reduction(|:%s)", nan_flag);
    cg_loop_opts lo = {.simd = true, .simd_clause = nan_flag ? clause : NULL};
    cg_nest_open(e, &lane, &lo);
    cg_aff xc[KORCH_MAX_RANK];
    for (int d = 0; d < R; d++)
        xc[d] = d < P ? cg_aff_sym(e->outer[d])
                : d < K - 1 ? cg_aff_sym(main_ns->sym[d - P])
                : d == K - 1 ? cg_aff_sym(lane.sym[0]) : cg_aff_sym(suf.sym[d - K]);
    int lvl;
    const char *v = cg_value_at(e, n->in[0], xc, &lvl);
    if (cache) {
        korch_shape ish = {.rank = R - P};
        for (int d = P; d < R; d++) ish.dims[d - P] = x->shape.dims[d];
        cg_aff ilin = cg_linear(e, &ish, xc + P);
        cg_aff_str(&ilin, s, sizeof s);
        cg_stmt(e, e->depth - 1, "rc%d[%s] = %s;", n->in[0], s, v);
    }
    char a[48];
    snprintf(a, sizeof a, "%s[x%d]", acc, lane.sym[0]);
    if (additive) cg_stmt(e, e->depth - 1, "%s += %s;", a, v);
    else if (nan_flag)
        cg_stmt(e, e->depth - 1, "%s = %s %s %s ? %s : %s; %s |= %s != %s;", a, v,
                r->op == KORCH_REDUCE_MAX ? ">" : "<", a, v, a, nan_flag, v, v);
    else combine(e, r->op == KORCH_REDUCE_MAX, a, v);
    cg_nest_close(e, &lane);
    cg_nest_close(e, &suf);
}

/* The reduced suffix [K, R) with the last kept axis K-1 innermost: one
 * accumulator per element of axis K-1 (a stack array), so the loop over
 * output pixels vectorises instead of the 3-9 element window. A max/min
 * sweeps with the fast update and a NaN flag; a row whose inputs held a NaN
 * is swept again with the NaN-sticky update, so only the outputs whose
 * windows hold the NaN become NaN. */
static void emit_kept_inner(cg_emit *e, const cg_node *n, const bool *red, int P, int K, const cg_nest *main_ns,
                            const char *dst, const char *init, const char *cnt, bool mixed, bool cache) {
    const korch_prim_reduce *r = &n->pn->u.reduce;
    const cg_value *x = &e->k->values[n->in[0]], *y = &e->k->values[n->out];
    int R = x->shape.rank;
    int64_t E = x->shape.dims[K - 1];
    bool additive = r->op != KORCH_REDUCE_MAX && r->op != KORCH_REDUCE_MIN, is_mean = r->op == KORCH_REDUCE_MEAN;
    char acc[24], flag[24] = "", s[400];
    snprintf(acc, sizeof acc, "a%d", e->n_tmp++);
    cg_stmt(e, e->depth - 1, "%s %s[%lld] CG_ALIGN;", cg_ctype(x->dtype), acc, (long long)E);
    cg_nest in = {.n = 1, .ext = {E}};
    if (!additive) {
        snprintf(flag, sizeof flag, "n%d", e->n_tmp++);
        cg_stmt(e, e->depth - 1, "int %s = 0;", flag);
    }
    kept_inner_sweep(e, n, P, K, main_ns, &in, acc, init, additive ? NULL : flag, cache);
    if (!additive) {
        char head[64];
        snprintf(head, sizeof head, "%*sif (%s)", 4 * (e->depth + 1), "", flag);
        cg_loop_open_raw(e, "", head);
        kept_inner_sweep(e, n, P, K, main_ns, &in, acc, init, NULL, false);
        cg_loop_close(e);
    }
    cg_loop_opts simd = {.simd = true};
    cg_nest_open(e, &in, &simd);
    cg_aff yc[KORCH_MAX_RANK];
    int oc = 0;
    for (int d = 0; d < R; d++) {
        if (red[d]) {
            if (r->keepdims) yc[oc++] = cg_aff_const(0);
        } else {
            yc[oc++] = d < P ? cg_aff_sym(e->outer[d]) : d < K - 1 ? cg_aff_sym(main_ns->sym[d - P]) : cg_aff_sym(in.sym[0]);
        }
    }
    cg_aff lin = cg_linear(e, &y->shape, yc);
    cg_aff_str(&lin, s, sizeof s);
    if (!mixed) cg_stmt(e, e->depth - 1, "%s[%s] = %s[x%d]%s%s;", dst, s, acc, in.sym[0], is_mean ? " / " : "",
                        is_mean ? cnt : "");
    else if (additive) cg_stmt(e, e->depth - 1, "%s[%s] += %s[x%d];", dst, s, acc, in.sym[0]);
    else {
        char d[480], a[48];
        snprintf(d, sizeof d, "%s[%s]", dst, s);
        snprintf(a, sizeof a, "%s[x%d]", acc, in.sym[0]);
        combine(e, r->op == KORCH_REDUCE_MAX, d, a);
    }
    cg_nest_close(e, &in);
}

int64_t cg_next_slab_prefetch(cg_emit *e, int64_t ext, const char *b, int lines, char *pf, size_t size) {
    int P = e->P;
    int64_t chunk = 0;
    size_t used = 0;
    pf[0] = '\0';
    for (int v = 0; v < e->k->n_values; v++) {
        const cg_value *val = &e->k->values[v];
        if (e->loc[v] != CG_LOC_INPUT || val->shape.rank != P + 1 || val->shape.dims[P] != ext) continue;
        int64_t esize = korch_dtype_size(val->dtype);
        if (esize <= 0 || 256 % esize != 0 || (chunk && chunk != 256 / esize)) continue;
        korch_shape os = {.rank = P};
        cg_aff oc[KORCH_MAX_RANK];
        bool lead = true;
        for (int d = 0; d < P; d++) {
            os.dims[d] = val->shape.dims[d];
            oc[d] = cg_aff_sym(e->outer[d]);
            lead &= e->syms[e->outer[d]].hi + 1 == val->shape.dims[d];
        }
        if (!lead) continue;
        chunk = 256 / esize; /* only inputs that are prefetched set the chunk */
        cg_aff lin = cg_linear(e, &os, oc);
        char s[400];
        cg_aff_str(&lin, s, sizeof s);
        /* the next outer iteration this thread runs: chunks of one (grain 1)
         * deal them round-robin, the others in consecutive blocks */
        const char *step = e->s->grain == 1 ? "nthreads" : "1";
        int w = snprintf(pf + used, size - used,
                         "if (%s + %s < %lld) for (int pl = 0; pl < %d; pl++) "
                         "__builtin_prefetch((const char *)&in%d[(%s + %s) * %lld + %s] + 64 * pl, 0, 3); ",
                         s, step, (long long)korch_shape_numel(&os), lines, val->input_slot, s, step, (long long)ext, b);
        if (w < 0 || (size_t)w >= size - used) return 0;
        used += (size_t)w;
    }
    return chunk;
}

/* Fetch knob 2: the row's second reduction pass (softmax's exp-and-sum,
 * layer norm's variance), which reads the row from cache and computes,
 * runs in chunks of 256 bytes, each of which first prefetches the same
 * chunk of the next outer iteration's slab of every input laid out along
 * the fused loops. The DRAM traffic of the next row then overlaps this
 * row's arithmetic, where the burst of fetch knob 1 (all of the next slab
 * at the start) overflows the miss queues for long rows: softmax
 * [2048, 4096] 3.40 -> 2.66 ms, hand-written (bench/kernels/RESULTS.md).
 * Opens the two loops of `suf` (one reduced dimension) and returns true,
 * or returns false having emitted nothing. */
static bool chunked_fetch_open(cg_emit *e, cg_nest *suf, const cg_loop_opts *so, int pass_index, int kept_loops) {
    int P = e->P;
    if (e->s->fetch != 2 || P == 0 || pass_index != 1 || suf->n != 1 || kept_loops != 0) return false;
    int64_t ext = suf->ext[0];
    char pf[2048], b[16];
    snprintf(b, sizeof b, "b%d", e->n_tmp);
    int64_t chunk = cg_next_slab_prefetch(e, ext, b, 4, pf, sizeof pf);
    if (!chunk || ext % chunk != 0 || ext <= chunk) return false;
    char header[160];
    e->n_tmp++;
    snprintf(header, sizeof header, "%*sfor (int64_t %s = 0; %s < %lld; %s += %lld)", 4 * (e->depth + 1), "", b, b,
             (long long)ext, b, (long long)chunk);
    cg_loop_open_raw(e, "", header);
    cg_stmt(e, e->depth - 1, "%s", pf);
    char simd[96] = "", pragma[200] = "";
    cg_simd_pragma(e, so, simd, sizeof simd);
    if (simd[0]) snprintf(pragma, sizeof pragma, "%*s#pragma omp%s\n", 4 * (e->depth + 1), "", simd);
    int sym = cg_new_sym(e, 0, ext - 1, e->depth);
    snprintf(header, sizeof header, "%*sfor (int64_t x%d = %s; x%d < %s + %lld; x%d++)", 4 * (e->depth + 1), "", sym,
             b, sym, b, (long long)chunk, sym);
    cg_loop_open_raw(e, pragma, header);
    suf->sym[0] = sym;
    suf->opened = 2;
    suf->tiled = suf->swapped = false;
    return true;
}

void cg_emit_reduce_pass(cg_emit *e, int node) {
    int pass_index = e->reduce_passes++;
    const cg_node *n = &e->k->nodes[node];
    const korch_prim_reduce *r = &n->pn->u.reduce;
    const cg_value *x = &e->k->values[n->in[0]], *y = &e->k->values[n->out];
    int R = x->shape.rank, P = e->P;
    bool red[KORCH_MAX_RANK];
    int64_t count = 1;
    for (int d = 0; d < R; d++) {
        red[d] = (r->axes >> d) & 1u;
        if (red[d]) count *= x->shape.dims[d];
    }
    int K = R;
    while (K > P && red[K - 1]) K--;
    bool mixed = false;
    for (int d = P; d < K; d++) mixed |= red[d];
    /* red bit 1: a short reduced suffix (pooling windows) is accumulated per
     * element of the last kept axis, so that axis is the vectorised loop */
    bool kept_inner = cg_kept_inner(e->s, x, r->axes) && K - 1 >= P && K < R;
    int Kmain = kept_inner ? K - 1 : K;
    bool dbl = x->dtype == KORCH_DTYPE_FLOAT64;
    const char *at = dbl ? "double" : "float";
    char dst[24], init[32], cnt[64];
    if (e->loc[n->out] == CG_LOC_OUTPUT) snprintf(dst, sizeof dst, "out%d", y->output_slot);
    else snprintf(dst, sizeof dst, "sc%d", n->out);
    cg_literal(r->op == KORCH_REDUCE_MAX ? -1.0 / 0.0 : r->op == KORCH_REDUCE_MIN ? 1.0 / 0.0 : 0.0, x->dtype, init,
               sizeof init);
    cg_literal((double)count, x->dtype, cnt, sizeof cnt);
    const char *rop = r->op == KORCH_REDUCE_MAX ? "max" : r->op == KORCH_REDUCE_MIN ? "min" : "+";
    bool is_mean = r->op == KORCH_REDUCE_MEAN;
    bool additive = r->op == KORCH_REDUCE_SUM || is_mean;

    /* kept dims (for init / finalize passes) and the output coordinates */
    cg_nest kept = {0};
    for (int d = P; d < R; d++)
        if (!red[d]) kept.ext[kept.n++] = x->shape.dims[d];
    int64_t inner = 1;
    for (int d = P; d < R; d++) inner *= x->shape.dims[d];
    int64_t rc_size = inner * (int64_t)korch_dtype_size(x->dtype);
    bool cache = (e->s->red & 1) && P > 0 && e->loc[n->in[0]] == CG_LOC_COMPUTE && !e->rc_has[n->in[0]] &&
                 inner <= ROW_CACHE_MAX_ELEMENTS && e->rc_bytes + rc_size <= ROW_CACHE_MAX_BYTES &&
                 consumers(e->k, n->in[0]) > 1;
    int home = cache ? row_cache_home(e, n->in[0]) : -1;
    if (home >= 0) {
        cg_aff hc[KORCH_MAX_RANK];
        for (int d = 0; d < R; d++) hc[d] = d < P ? cg_aff_sym(e->outer[d]) : cg_aff_const(0);
        cg_aff hl = cg_linear(e, &x->shape, hc);
        char hs[400];
        cg_aff_str(&hl, hs, sizeof hs);
        cg_stmt(e, e->depth - 1, "%s *const rc%d = out%d + %s;", cg_ctype(x->dtype), n->in[0], home, hs);
        e->home_taken = true;
    } else if (cache) {
        cg_stmt(e, e->depth - 1, "%s rc%d[%lld] CG_ALIGN;", cg_ctype(x->dtype), n->in[0], (long long)inner);
        e->rc_bytes += rc_size;
    }

#define OUT_COORDS(symof)                                                                          \
    do {                                                                                           \
        int oc_ = 0;                                                                               \
        for (int d = 0; d < R; d++) {                                                              \
            if (red[d]) {                                                                          \
                if (r->keepdims) yc[oc_++] = cg_aff_const(0);                                      \
            } else {                                                                               \
                yc[oc_++] = d < P ? cg_aff_sym(e->outer[d]) : cg_aff_sym(symof);                   \
            }                                                                                      \
        }                                                                                          \
    } while (0)

    cg_aff yc[KORCH_MAX_RANK];
    char s[400];
    if (mixed) {
        cg_loop_opts o = {.par = P == 0 ? e->s->par : 0, .simd = true};
        cg_nest_open(e, &kept, &o);
        int ki = 0;
        OUT_COORDS(kept.sym[ki++]);
        cg_aff lin = cg_linear(e, &y->shape, yc);
        cg_aff_str(&lin, s, sizeof s);
        cg_stmt(e, e->depth - 1, "%s[%s] = %s;", dst, s, init);
        cg_nest_close(e, &kept);
    }
    /* main nest over [P, K): parallel over its leading kept dims when unfused */
    cg_nest main_ns = {.n = Kmain - P};
    for (int d = P; d < Kmain; d++) main_ns.ext[d - P] = x->shape.dims[d];
    int lead = 0;
    while (P + lead < Kmain && !red[P + lead]) lead++;
    int par = P == 0 ? (e->s->par < lead ? e->s->par : lead) : 0;
    cg_loop_opts mo = {.par = par, .simd = K == R};
    cg_nest_open(e, &main_ns, &mo);
    if (kept_inner) {
        emit_kept_inner(e, n, red, P, K, &main_ns, dst, init, cnt, mixed, cache);
        cg_nest_close(e, &main_ns);
        if (cache) e->rc_has[n->in[0]] = true;
        goto finalize;
    }
    cg_nest suf = {.n = R - K};
    for (int d = K; d < R; d++) suf.ext[d - K] = x->shape.dims[d];
    char acc[24] = "", nan_seen[24] = "";
    bool direct = false;
    if (K < R) {
        snprintf(acc, sizeof acc, "a%d", e->n_tmp++);
        cg_stmt(e, e->depth - 1, "%s %s = %s;", at, acc, init);
        char clause[96];
        if (!additive) {
            /* max/min into one accumulator: a plain compare-select (one
             * vmaxps-like op on the loop-carried chain) plus a separate OR
             * of "saw a NaN", instead of the NaN-sticky select of combine(),
             * whose three-op chain made softmax's max pass latency-bound */
            snprintf(nan_seen, sizeof nan_seen, "n%d", e->n_tmp++);
            cg_stmt(e, e->depth - 1, "int %s = 0;", nan_seen);
            snprintf(clause, sizeof clause, " reduction(%s:%s) reduction(|:%s)", rop, acc, nan_seen);
        } else {
            snprintf(clause, sizeof clause, " reduction(%s:%s)", rop, acc);
        }
        bool full = P == 0 && K == 0 && e->s->par > 0;
        cg_loop_opts so = {.par = full ? 1 : 0, .clause = clause, .simd = true, .simd_clause = clause};
        /* a row (the fused outer loops, then the reduced one): its
         * coordinates, the last one for the helpers' own loops to fill */
        bool row = main_ns.n == 0 && !mixed;
        cg_aff row_c[KORCH_MAX_RANK];
        for (int d = 0; d < R; d++) row_c[d] = d < P ? cg_aff_sym(e->outer[d]) : cg_aff_const(0);
        /* the whole pass through a helper (a sum of exponentials, a max,
         * min or sum of an input row), or blocks whose exponentials are computed first
         * (emit_exprow.c) */
        if (row && (cg_exp_sum_rows(e, n, &suf, &so, row_c, cache, acc) ||
                    cg_helper_rows(e, n, &suf, &so, row_c, cache, acc)))
            direct = true;
        else if (!chunked_fetch_open(e, &suf, &so, pass_index, main_ns.n) &&
                 !(row && cg_exp_rows_open(e, &suf, &so, n->in[0], row_c)))
            cg_nest_open(e, &suf, &so);
    }
    cg_aff xc[KORCH_MAX_RANK];
    for (int d = 0; d < R; d++)
        xc[d] = d < P ? cg_aff_sym(e->outer[d]) : d < K ? cg_aff_sym(main_ns.sym[d - P]) : cg_aff_sym(suf.sym[d - K]);
    int lvl;
    const char *v = direct ? "" : cg_value_at(e, n->in[0], xc, &lvl);
    if (cache && !direct) {
        korch_shape ish = {.rank = R - P};
        for (int d = P; d < R; d++) ish.dims[d - P] = x->shape.dims[d];
        cg_aff lin = cg_linear(e, &ish, xc + P);
        cg_aff_str(&lin, s, sizeof s);
        cg_stmt(e, e->depth - 1, "rc%d[%s] = %s;", n->in[0], s, v);
    }
    OUT_COORDS(main_ns.sym[d - P]);
    cg_aff ylin = cg_linear(e, &y->shape, yc);
    cg_aff_str(&ylin, s, sizeof s);
    if (K < R) {
        if (direct) {
            /* the sum is complete */
        } else if (additive) {
            cg_stmt(e, e->depth - 1, "%s += %s;", acc, v);
        } else {
            cg_stmt(e, e->depth - 1, "%s = %s %s %s ? %s : %s; %s |= %s != %s;", acc, v,
                    r->op == KORCH_REDUCE_MAX ? ">" : "<", acc, v, acc, nan_seen, v, v);
        }
        cg_nest_close(e, &suf);
        /* (also after a helper: the flag is declared before it is known
         * whether one applies, and exported C builds with -Werror) */
        if (nan_seen[0]) cg_stmt(e, e->depth - 1, "if (%s) %s = NAN;", nan_seen, acc);
        if (mixed) {
            if (additive) cg_stmt(e, e->depth - 1, "%s[%s] += %s;", dst, s, acc);
            else
            {
                char d[480];
                snprintf(d, sizeof d, "%s[%s]", dst, s);
                combine(e, r->op == KORCH_REDUCE_MAX, d, acc);
            }
        } else {
            cg_stmt(e, e->depth - 1, "%s[%s] = %s%s%s;", dst, s, acc, is_mean ? " / " : "", is_mean ? cnt : "");
        }
    } else if (!mixed) {
        /* nothing reduced inside the pass: a copy (or a mean over 1) */
        cg_stmt(e, e->depth - 1, "%s[%s] = %s%s%s;", dst, s, v, is_mean ? " / " : "", is_mean ? cnt : "");
    } else if (additive) {
        cg_stmt(e, e->depth - 1, "%s[%s] += %s;", dst, s, v);
    } else {
        char d[480];
        snprintf(d, sizeof d, "%s[%s]", dst, s);
        combine(e, r->op == KORCH_REDUCE_MAX, d, v);
    }
    cg_nest_close(e, &main_ns);
finalize:
    if (mixed && is_mean) {
        cg_nest fin = kept;
        cg_loop_opts o = {.par = P == 0 ? e->s->par : 0, .simd = true};
        cg_nest_open(e, &fin, &o);
        int ki = 0;
        OUT_COORDS(fin.sym[ki++]);
        cg_aff lin = cg_linear(e, &y->shape, yc);
        cg_aff_str(&lin, s, sizeof s);
        cg_stmt(e, e->depth - 1, "%s[%s] /= %s;", dst, s, cnt);
        cg_nest_close(e, &fin);
    }
    if (cache) e->rc_has[n->in[0]] = true;
#undef OUT_COORDS
}
