/* Index folding (cg_aff_fold, emit_index.c): a reshape that merges
 * dimensions reads its input at m*floor(E/m) + (E mod m) terms, which fold
 * back into the plain linear index. Each case is checked two ways: the
 * kernel matches the interpreter under contrasting schedules, and the
 * address of its load names only loop variables (no div/mod temporary
 * survives in it), under every schedule. Cases that must NOT fold (a
 * transpose between the merge and the read) keep their temporaries and
 * still compute the right values. */
#include <ctype.h>

#include "backend/cgen/cgen_backend.h"
#include "cgen_check.h"
#include "ir/indexmap.h"

/* Whether every xN inside the brackets of the first "in0[" of the source is
 * a loop variable ("for (int64_t xN"). */
static bool load_is_affine_in_loops(const char *src) {
    const char *p = strstr(src, "= in0[");
    if (!p) return false;
    p += 6;
    const char *end = strchr(p, ']');
    if (!end) return false;
    for (const char *q = p; q < end; q++) {
        if (*q != 'x' || !isdigit((unsigned char)q[1]) || (q > p && isalnum((unsigned char)q[-1]))) continue;
        int n = atoi(q + 1);
        char loop[48];
        snprintf(loop, sizeof loop, "for (int64_t x%d =", n);
        if (!strstr(src, loop)) return false;
    }
    return true;
}

static const char *const fold_schedules[] = {"", "p0.g0.v0.u1.t0.o0.r0", "p1.g4.v3.u4.t8.o1.r1",
                                             "p3.g1.v2.u2.t16.o0.r0"};
#define N_FOLD ((int)(sizeof fold_schedules / sizeof fold_schedules[0]))

/* x (in) -> reshape to `out` -> optional transpose `perm` of the input first
 * -> Neg, one kernel. Returns whether every schedule's load was affine. */
static bool check_case(int rank, const int64_t *in, int orank, const int64_t *out, const int *perm, const char *what) {
    korch_pgraph *pg = cc_graph();
    int x = cc_input(pg, KORCH_DTYPE_FLOAT32, rank, in);
    korch_shape is = korch_shape_make(rank, in), os = korch_shape_make(orank, out);
    if (perm) { /* transpose the input first: the reshape then reads across strides */
        korch_shape ts = {.rank = rank};
        korch_index_map t = cc_map(rank);
        for (int d = 0; d < rank; d++) {
            ts.dims[d] = in[perm[d]];
            t.terms[perm[d]].coef[d] = 1;
        }
        x = korch_pgraph_layout(pg, KORCH_LAYOUT_TRANSPOSE, 1, &x, &ts, &t, 0);
        is = ts;
    }
    korch_index_map m;
    korch_index_map_reshape(&is, &os, &m);
    int r = korch_pgraph_layout(pg, KORCH_LAYOUT_RESHAPE, 1, &x, &os, &m, 0);
    CHECK_MSG(r >= 0, "%s: %s", what, korch_last_error());
    cc_output(pg, cc_ew1(pg, KORCH_EW_NEG, r));
    cc_check(pg, fold_schedules, N_FOLD, -2, 2, what);
    bool affine = true;
    korch_kernel_spec spec;
    cc_spec_all(pg, &spec);
    for (int s = 0; s < N_FOLD; s++) {
        char *src = NULL;
        korch_status st = korch_cgen_source(&spec, fold_schedules[s], NULL, &src);
        CHECK_MSG(st == KORCH_OK, "%s [%s]: %s", what, fold_schedules[s], korch_last_error());
        bool a = src && load_is_affine_in_loops(src);
        if (!a && getenv("KORCH_TEST_DUMP") && src) fputs(src, stderr);
        affine &= a;
        free(src);
    }
    cc_spec_free(&spec);
    korch_pgraph_free(pg);
    return affine;
}

int main(void) {
    /* group norm's reshape: [1, 256, 56, 56] -> [1, 32, 25088] (smaller: 1x12x5x7 -> 1x3x140) */
    {
        int64_t in[4] = {1, 12, 5, 7}, out[3] = {1, 3, 140};
        CHECK_MSG(check_case(4, in, 3, out, NULL, "group-norm merge"), "group-norm merge: a div/mod left in the load");
    }
    /* flatten before a classifier: [2, 6, 5, 7] -> [2, 210] */
    {
        int64_t in[4] = {2, 6, 5, 7}, out[2] = {2, 210};
        CHECK_MSG(check_case(4, in, 2, out, NULL, "flatten"), "flatten: a div/mod left in the load");
    }
    /* merge then split differently: [4, 6, 10] -> [8, 30] */
    {
        int64_t in[3] = {4, 6, 10}, out[2] = {8, 30};
        CHECK_MSG(check_case(3, in, 2, out, NULL, "regroup"), "regroup: a div/mod left in the load");
    }
    /* everything into one dimension: [3, 4, 5, 6] -> [360] */
    {
        int64_t in[4] = {3, 4, 5, 6}, out[1] = {360};
        CHECK_MSG(check_case(4, in, 1, out, NULL, "to 1-D"), "to 1-D: a div/mod left in the load");
    }
    /* a transpose first: the merged index is not the input's linear index,
     * so nothing may fold away; the values must still be right */
    {
        int64_t in[3] = {4, 6, 10}, out[2] = {8, 30};
        int perm[3] = {0, 2, 1};
        (void)check_case(3, in, 2, out, perm, "transpose then regroup");
    }
    TEST_MAIN_END();
}
