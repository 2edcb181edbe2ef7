/* Innermost loops split where a concat switches input, or by residue where
 * a nearest-neighbour upsampling divides the coordinate (emit_split.c).
 *
 * Concats along the last axis, alone, under an elementwise chain with a
 * broadcast operand, and a constant pad of the last axis: each kernel
 * matches the interpreter under contrasting schedules, and its source has
 * no per-element select between inputs ("? in") once split. A concat along
 * an outer axis has no split point in the innermost loop and keeps its
 * (row-invariant) selection. Nearest upsampling by 2 and 3 (tables of
 * floor(i / f)) runs without a table lookup; tables of another shape (a
 * rounding resize, a factor that does not divide the width) keep the table
 * and stay right. */
#include "backend/cgen/cgen_backend.h"
#include "cgen_check.h"

static const char *const split_schedules[] = {"", "p0.g0.v0.u1.t0.o0.r0", "p1.g4.v3.u4.t8.o1.r1",
                                              "p3.g1.v2.u2.t16.o0.r0"};
#define N_SPLIT ((int)(sizeof split_schedules / sizeof split_schedules[0]))

/* Whether any schedule's source of pg's single kernel contains `needle`. */
static bool any_source_has(const korch_pgraph *pg, const char *needle) {
    korch_kernel_spec spec;
    cc_spec_all(pg, &spec);
    bool has = false;
    for (int s = 0; s < N_SPLIT; s++) {
        char *src = NULL;
        korch_status st = korch_cgen_source(&spec, split_schedules[s], NULL, &src);
        CHECK_MSG(st == KORCH_OK, "source [%s]: %s", split_schedules[s], korch_last_error());
        if (src && strstr(src, needle)) {
            has = true;
            if (getenv("KORCH_TEST_DUMP")) fputs(src, stderr);
        }
        free(src);
    }
    cc_spec_free(&spec);
    return has;
}

/* A concat of n inputs [2, 3, w_i] along `axis` (the last: 2; the middle: 1). */
static int concat(korch_pgraph *pg, int n, const int64_t *w, int axis, const int64_t *rows) {
    int ins[4];
    korch_index_map maps[4];
    int64_t at = 0;
    for (int i = 0; i < n; i++) {
        int64_t d[3] = {2, rows[i], w[i]};
        ins[i] = cc_input(pg, KORCH_DTYPE_FLOAT32, 3, d);
        maps[i] = cc_map(3);
        for (int k = 0; k < 3; k++) maps[i].terms[k].coef[k] = 1;
        maps[i].terms[axis].offset = -at;
        maps[i].may_be_out_of_bounds = true;
        at += axis == 2 ? w[i] : rows[i];
    }
    korch_shape o = {3, {2, axis == 2 ? rows[0] : at, axis == 2 ? at : w[0]}};
    return korch_pgraph_layout(pg, KORCH_LAYOUT_CONCAT, n, ins, &o, maps, 0);
}

int main(void) {
    { /* three inputs along the last axis, odd widths (segment ends not multiples of 16) */
        korch_pgraph *pg = cc_graph();
        int64_t w[3] = {19, 40, 7}, rows[3] = {3, 3, 3};
        int y = concat(pg, 3, w, 2, rows);
        CHECK(y >= 0);
        cc_output(pg, y);
        cc_check(pg, split_schedules, N_SPLIT, -2, 2, "concat last axis");
        CHECK_MSG(!any_source_has(pg, "? in"), "concat last axis: a per-element select is left");
        korch_pgraph_free(pg);
    }
    { /* under an elementwise chain with a broadcast operand: (concat + b) * concat */
        korch_pgraph *pg = cc_graph();
        int64_t w[2] = {33, 17}, rows[2] = {5, 5};
        int y = concat(pg, 2, w, 2, rows);
        int64_t bd[3] = {1, 1, 50};
        int b = cc_input(pg, KORCH_DTYPE_FLOAT32, 3, bd);
        int s = cc_ew2(pg, KORCH_EW_ADD, y, b);
        cc_output(pg, cc_ew2(pg, KORCH_EW_MUL, s, y));
        cc_check(pg, split_schedules, N_SPLIT, -2, 2, "concat last axis under a chain");
        CHECK_MSG(!any_source_has(pg, "? in"), "concat under a chain: a per-element select is left");
        korch_pgraph_free(pg);
    }
    { /* a constant pad of the last axis by 3 and 5 (pad value 0.5) */
        korch_pgraph *pg = cc_graph();
        int64_t d[3] = {2, 4, 21};
        int x = cc_input(pg, KORCH_DTYPE_FLOAT32, 3, d);
        korch_index_map m = cc_map(3);
        for (int k = 0; k < 3; k++) m.terms[k].coef[k] = 1;
        m.terms[2].offset = -3;
        m.may_be_out_of_bounds = true;
        korch_shape o = {3, {2, 4, 29}};
        int y = korch_pgraph_layout(pg, KORCH_LAYOUT_PAD, 1, &x, &o, &m, 0.5);
        cc_output(pg, cc_ew1(pg, KORCH_EW_NEG, y));
        cc_check(pg, split_schedules, N_SPLIT, -2, 2, "pad last axis");
        CHECK_MSG(!any_source_has(pg, "? in"), "pad last axis: a per-element select is left");
        korch_pgraph_free(pg);
    }
    { /* along the middle axis: no split point in the innermost loop */
        korch_pgraph *pg = cc_graph();
        int64_t w[2] = {24, 24}, rows[2] = {3, 6};
        int y = concat(pg, 2, w, 1, rows);
        cc_output(pg, y);
        cc_check(pg, split_schedules, N_SPLIT, -2, 2, "concat middle axis");
        korch_pgraph_free(pg);
    }
    /* nearest upsampling of [2, 5, w] along both last axes, by tables */
    for (int variant = 0; variant < 4; variant++) {
        static const int f_of[4] = {2, 3, 2, 0}; /* 0: a rounding table (not floor(i/f)) */
        static const int64_t w_of[4] = {9, 7, 9, 6};
        int f = f_of[variant];
        int64_t w = w_of[variant], ow = variant == 3 ? 10 : w * f, oh = 5 * (variant == 3 ? 2 : f);
        korch_pgraph *pg = cc_graph();
        int64_t d[3] = {2, 5, w};
        int x = cc_input(pg, KORCH_DTYPE_FLOAT32, 3, d);
        korch_index_map m = cc_map(3);
        m.terms[0].coef[0] = 1;
        int64_t ext[3] = {2, oh, ow}, src[3] = {2, 5, w};
        for (int k = 1; k < 3; k++) {
            m.terms[k].coef[k] = 1;
            m.terms[k].table_size = ext[k];
            m.terms[k].table = malloc((size_t)ext[k] * sizeof(int64_t));
            for (int64_t i = 0; i < ext[k]; i++)
                m.terms[k].table[i] = f ? i / f : (int64_t)((double)i * (double)src[k] / (double)ext[k] + 0.5) % src[k];
        }
        korch_shape o = {3, {2, oh, ow}};
        int y = korch_pgraph_layout(pg, KORCH_LAYOUT_RESIZE_NEAREST, 1, &x, &o, &m, 0);
        CHECK(y >= 0);
        int out = variant == 2 ? cc_ew2(pg, KORCH_EW_MUL, y, y) : y; /* under a chain too */
        cc_output(pg, out);
        char what[64];
        snprintf(what, sizeof what, "nearest upsampling, variant %d", variant);
        cc_check(pg, split_schedules, N_SPLIT, -2, 2, what);
        if (f) CHECK_MSG(!any_source_has(pg, "_t0["), "%s: a table lookup is left", what);
        else CHECK_MSG(any_source_has(pg, "_t0["), "%s: a rounding table is not floor(i/f)", what);
        korch_pgraph_free(pg);
    }
    TEST_MAIN_END();
}
