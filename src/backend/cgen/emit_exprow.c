/* Row reductions through the prelude's vector helpers (emit_kernel.c's
 * reduction passes): exponentials of a row computed in blocks, the sum of a
 * row of exponentials, and the maximum / minimum / sum of an input row.
 *
 * gcc vectorises a loop calling cg_expf by calling its vector variant once
 * per 16 elements, and never inlines that call: the constants are reloaded
 * on every call, every zmm register is caller-saved, so the pass's
 * accumulator goes through the stack on each iteration, and the last
 * (extent mod 16) elements of a row run scalar, one libm call each. The
 * softmax over [256, 32768] spent a third of its time there
 * (bench/kernels/RESULTS.md, 2026-11-28). Here a row reduction whose value
 * contains an exponential of the row's own shape runs in blocks of at most
 * CG_EXP_BLOCK elements: one vector loop writes the exponential's argument
 * into a block buffer on the stack (L1), cg_expf_row (the prelude, with the
 * vector exponential inlined and a masked tail) replaces it by its
 * exponential, and the reduction loop reads the block instead of calling.
 * Values are those of cg_expf's vector variant, element for element (the
 * tail included, which before went to libm's expf); the reduction's order
 * changes only in where blocks start a new vector accumulator. The
 * maximum, minimum and sum of an input row are one helper call each. */
#include <stdio.h>
#include <string.h>

#include "backend/cgen/emit.h"

enum { CG_EXP_BLOCK = 256 };

/* The first float32 exponential reachable from value v through elementwise
 * values computed in this pass, all of v's shape (so every operand on the
 * way is read at the same coordinates), or -1. *depth: edges from v. */
static int find_exp(const cg_emit *e, int v, const korch_shape *shape, int depth, int *at_depth) {
    const cg_value *val = &e->k->values[v];
    if (depth > 8 || e->loc[v] != CG_LOC_COMPUTE || e->rc_has[v] || val->producer < 0) return -1;
    if (val->dtype != KORCH_DTYPE_FLOAT32 || !korch_shape_equal(&val->shape, shape)) return -1;
    const cg_node *n = &e->k->nodes[val->producer];
    if (n->pn->kind != KORCH_PRIM_ELEMENTWISE) return -1;
    if (n->pn->u.ew.op == KORCH_EW_EXP) {
        *at_depth = depth;
        return v;
    }
    for (int i = 0; i < n->n_in; i++) {
        int found = find_exp(e, n->in[i], shape, depth + 1, at_depth);
        if (found >= 0) return found;
    }
    return -1;
}

/* An operand's coordinates from its consumer's (elementwise_at's rule for
 * operands of the consumer's shape: extent-1 dimensions read index 0). */
static void operand_coords(const korch_shape *shape, const cg_aff *c, cg_aff *out) {
    for (int d = 0; d < shape->rank; d++) out[d] = shape->dims[d] == 1 ? cg_aff_const(0) : c[d];
}

/* The block loop "for (b = 0; b < ext; b += block)" with its length n (a
 * literal, or a variable when the last block is short) in nb; under fetch
 * knob 2, in a row's second reduction pass, each block first prefetches
 * the same block of the next row (chunked_fetch_open's rule). */
static void open_blocks(cg_emit *e, int id, int64_t ext, int64_t block, char *b, size_t bsize, char *nb, size_t nsize) {
    char header[200], pf[2048] = "";
    snprintf(b, bsize, "b%d", id);
    int64_t chunk = 0;
    if (e->s->fetch == 2 && e->reduce_passes == 2)
        chunk = cg_next_slab_prefetch(e, ext, b, (int)((block * 4 + 63) / 64), pf, sizeof pf);
    snprintf(header, sizeof header, "%*sfor (int64_t %s = 0; %s < %lld; %s += %lld)", 4 * (e->depth + 1), "", b, b,
             (long long)ext, b, (long long)block);
    cg_loop_open_raw(e, "", header);
    if (chunk && ext % chunk == 0 && ext > chunk) cg_stmt(e, e->depth - 1, "%s", pf);
    /* the block's length: a constant unless the last block is short */
    if (ext % block == 0) {
        snprintf(nb, nsize, "%lld", (long long)block);
    } else {
        snprintf(nb, nsize, "n%d", id);
        cg_stmt(e, e->depth - 1, "const int64_t %s = %lld - %s < %lld ? %lld - %s : %lld;", nb, (long long)ext, b,
                (long long)block, (long long)ext, b, (long long)block);
    }
}

/* A vector loop over the block [b, b + nb) (options o: its simd clause);
 * returns its loop variable's symbol. */
static int open_block_loop(cg_emit *e, const cg_loop_opts *o, int64_t ext, const char *b, const char *nb) {
    char header[200], simd[96] = "", pragma[200] = "";
    cg_simd_pragma(e, o, simd, sizeof simd);
    if (simd[0]) snprintf(pragma, sizeof pragma, "%*s#pragma omp%s\n", 4 * (e->depth + 1), "", simd);
    int sym = cg_new_sym(e, 0, ext - 1, e->depth);
    snprintf(header, sizeof header, "%*sfor (int64_t x%d = %s; x%d < %s + %s; x%d++)", 4 * (e->depth + 1), "", sym,
             b, sym, b, nb, sym);
    cg_loop_open_raw(e, pragma, header);
    return sym;
}

/* A float32 reduction over the last dimension at fused depth rank - 1 (a
 * row), serial inside the outer loop, under a schedule with the row-cache
 * bit: where the helpers apply. */
static bool helper_row(const cg_emit *e, const cg_nest *suf, const cg_loop_opts *so, const cg_value *x) {
    return (e->s->red & 1) && e->P == x->shape.rank - 1 && suf->n == 1 && !so->par && x->dtype == KORCH_DTYPE_FLOAT32;
}

/* The coordinates of the exponential found `depth` edges below the row
 * value read at c (find_exp's path: operands of the row's shape). */
static void exp_coords(const korch_shape *shape, const cg_aff *c, int depth, cg_aff *out) {
    if (depth > 0) operand_coords(shape, c, out);
    else memcpy(out, c, sizeof(cg_aff) * (size_t)shape->rank);
}

bool cg_exp_rows_open(cg_emit *e, cg_nest *suf, const cg_loop_opts *so, int in_value, const cg_aff *xc) {
    const cg_value *x = &e->k->values[in_value];
    if (!helper_row(e, suf, so, x)) return false;
    int R = x->shape.rank, depth = 0, ev = find_exp(e, in_value, &x->shape, 0, &depth);
    if (ev < 0) return false;
    const cg_node *en = &e->k->nodes[e->k->values[ev].producer];
    int64_t ext = suf->ext[0], block = ext < CG_EXP_BLOCK ? ext : CG_EXP_BLOCK;
    int id = e->n_tmp++;
    char b[16], nb[24];
    cg_stmt(e, e->depth - 1, "float eb%d[%lld] CG_ALIGN;", id, (long long)block);
    open_blocks(e, id, ext, block, b, sizeof b, nb, sizeof nb);
    /* the argument, one vector loop into the block */
    const cg_loop_opts ao = {.simd = true};
    int sa = open_block_loop(e, &ao, ext, b, nb);
    cg_aff c[KORCH_MAX_RANK], ce[KORCH_MAX_RANK], ca[KORCH_MAX_RANK];
    memcpy(c, xc, sizeof c);
    c[R - 1] = cg_aff_sym(sa);
    exp_coords(&x->shape, c, depth, ce);
    operand_coords(&x->shape, ce, ca);
    int lvl;
    const char *arg = cg_value_at(e, en->in[0], ca, &lvl);
    cg_stmt(e, e->depth - 1, "eb%d[x%d - %s] = %s;", id, sa, b, arg);
    cg_loop_close(e);
    cg_stmt(e, e->depth - 1, "cg_expf_row(eb%d, %s);", id, nb);
    /* the reduction loop, reading the block where the exponential is used */
    int sr = open_block_loop(e, so, ext, b, nb);
    c[R - 1] = cg_aff_sym(sr);
    exp_coords(&x->shape, c, depth, ce);
    /* the two loops are open whatever follows: the caller closes them */
    suf->sym[0] = sr;
    suf->opened = 2;
    suf->tiled = suf->swapped = false;
    char key[CG_VALUE_KEY_SIZE], name[24];
    if (!cg_value_key(e, ev, ce, key, sizeof key)) {
        cg_fail(e, KORCH_ERR_UNSUPPORTED, "index expressions too long");
        return true;
    }
    snprintf(name, sizeof name, "t%d", e->n_tmp++);
    cg_stmt(e, e->depth - 1, "const float %s = eb%d[x%d - %s];", name, id, sr, b);
    cg_memo_add(e, key, name, e->depth - 1);
    return true;
}

bool cg_exp_sum_rows(cg_emit *e, const cg_node *n, const cg_nest *suf, const cg_loop_opts *so, const cg_aff *xc, bool cache,
                     const char *acc) {
    const korch_prim_reduce *r = &n->pn->u.reduce;
    int v = n->in[0];
    const cg_value *x = &e->k->values[v];
    int R = x->shape.rank;
    if (!helper_row(e, suf, so, x) || (r->op != KORCH_REDUCE_SUM && r->op != KORCH_REDUCE_MEAN)) return false;
    int depth = 0;
    if (find_exp(e, v, &x->shape, 0, &depth) != v) return false;
    const cg_node *en = &e->k->nodes[x->producer];
    int64_t ext = suf->ext[0], block = ext < CG_EXP_BLOCK ? ext : CG_EXP_BLOCK;
    int id = e->n_tmp++;
    char b[16], nb[24], buf[32];
    if (!cache) cg_stmt(e, e->depth - 1, "float eb%d[%lld] CG_ALIGN;", id, (long long)block);
    open_blocks(e, id, ext, block, b, sizeof b, nb, sizeof nb);
    const cg_loop_opts ao = {.simd = true};
    int sa = open_block_loop(e, &ao, ext, b, nb);
    cg_aff c[KORCH_MAX_RANK], ca[KORCH_MAX_RANK];
    memcpy(c, xc, sizeof c);
    c[R - 1] = cg_aff_sym(sa);
    operand_coords(&x->shape, c, ca);
    int lvl;
    const char *arg = cg_value_at(e, en->in[0], ca, &lvl);
    /* the row cache (one inner dimension: indexed by the row coordinate) or the block */
    if (cache) cg_stmt(e, e->depth - 1, "rc%d[x%d] = %s;", v, sa, arg);
    else cg_stmt(e, e->depth - 1, "eb%d[x%d - %s] = %s;", id, sa, b, arg);
    cg_loop_close(e);
    if (cache) snprintf(buf, sizeof buf, "rc%d + %s", v, b);
    else snprintf(buf, sizeof buf, "eb%d", id);
    cg_stmt(e, e->depth - 1, "%s += cg_expf_row_sum(%s, %s);", acc, buf, nb);
    cg_loop_close(e);
    return true;
}

/* The maximum, minimum or sum of a row read straight from a kernel input
 * (the first pass of a softmax, a ReduceMean), or the maximum / minimum of
 * a computed row kept in the row cache: cg_max_row / cg_min_row keep two
 * vector accumulators and a NaN mask, cg_sum_row four accumulators; all
 * load the tail under a mask and reduce by a tree, where gcc's loop kept
 * one accumulator, reduced its 16 lanes by a chain of scalar operations and
 * ran the row's last (extent mod 16) elements scalar. */
bool cg_helper_rows(cg_emit *e, const cg_node *n, const cg_nest *suf, const cg_loop_opts *so, const cg_aff *xc, bool cache,
                    const char *acc) {
    const korch_prim_reduce *r = &n->pn->u.reduce;
    int v = n->in[0];
    const cg_value *x = &e->k->values[v];
    int R = x->shape.rank;
    int64_t ext = suf->ext[0];
    bool input = e->loc[v] == CG_LOC_INPUT;
    bool minmax = r->op == KORCH_REDUCE_MAX || r->op == KORCH_REDUCE_MIN;
    bool sum = r->op == KORCH_REDUCE_SUM || r->op == KORCH_REDUCE_MEAN;
    if (!helper_row(e, suf, so, x) || x->shape.dims[R - 1] < 2 || !(minmax || (sum && input)) ||
        !(input || (cache && e->loc[v] == CG_LOC_COMPUTE)))
        return false;
    const char *fn = r->op == KORCH_REDUCE_MAX ? "max" : r->op == KORCH_REDUCE_MIN ? "min" : "sum";
    cg_aff c[KORCH_MAX_RANK];
    memcpy(c, xc, sizeof c);
    if (input) {
        c[R - 1] = cg_aff_const(0);
        cg_aff lin = cg_linear(e, &x->shape, c);
        char s[400];
        cg_aff_str(&lin, s, sizeof s);
        cg_stmt(e, e->depth - 1, "%s = cg_%s_row(in%d + %s, %lld);", acc, fn, x->input_slot, s, (long long)ext);
        return true;
    }
    /* a computed row the later passes read again (a masked attention's
     * scores): one vector loop into the row cache, then the helper over it
     * (a maximum does not depend on the order it is taken in) */
    char nb[24];
    snprintf(nb, sizeof nb, "%lld", (long long)ext);
    const cg_loop_opts ao = {.simd = true};
    int sa = open_block_loop(e, &ao, ext, "0", nb);
    c[R - 1] = cg_aff_sym(sa);
    int lvl;
    const char *val = cg_value_at(e, v, c, &lvl);
    cg_stmt(e, e->depth - 1, "rc%d[x%d] = %s;", v, sa, val);
    cg_loop_close(e);
    cg_stmt(e, e->depth - 1, "%s = cg_%s_row(rc%d, %lld);", acc, fn, v, (long long)ext);
    return true;
}
