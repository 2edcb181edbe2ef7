/* The interpreter's fast paths (float32 elementwise, per-output reductions,
 * affine layout maps, batched matmuls; src/ir/interpret.c) against plain
 * loops written here. The interpreter is the oracle kernel verification
 * trusts, so its fast paths must give the bits the one-element-at-a-time
 * definition gives: layouts and reductions are compared bit for bit, on
 * tensors large enough to take the parallel paths; batched matmuls against
 * each product alone. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ir/indexmap.h"
#include "ir/pgraph.h"
#include "test.h"

enum { D0 = 4, D1 = 33, D2 = 16, D3 = 9, N = D0 * D1 * D2 * D3 }; /* 19008 elements: parallel */

static float *pattern(int64_t n, uint32_t seed) {
    float *p = malloc((size_t)n * sizeof *p);
    uint32_t s = seed;
    for (int64_t i = 0; i < n; i++) {
        s = s * 1664525u + 1013904223u;
        p[i] = (float)((double)(s >> 8) / (double)(1u << 24) * 2.0 - 1.0) * 3.0f;
    }
    return p;
}

static int64_t flat(const int64_t *c) { return ((c[0] * D1 + c[1]) * D2 + c[2]) * D3 + c[3]; }

/* Runs a one-output graph on x (and y) and returns the output. */
static korch_tensor run(korch_pgraph *pg, const float *x, const float *y, const korch_shape *ys) {
    korch_shape xs = {.rank = 4, .dims = {D0, D1, D2, D3}};
    korch_tensor in[2] = {{.dtype = KORCH_DTYPE_FLOAT32, .shape = xs, .data = (void *)x},
                          {.dtype = KORCH_DTYPE_FLOAT32, .shape = ys ? *ys : xs, .data = (void *)y}};
    korch_tensor out = {0};
    CHECK_OK(korch_pgraph_interpret(pg, in, &out));
    return out;
}

/* sum, mean, max, min over axes 1 and 3 (not contiguous), with a NaN. */
static void test_reduce(void) {
    float *x = pattern(N, 1);
    x[5 * D3 + 2] = NAN;
    korch_reduce_op ops[4] = {KORCH_REDUCE_SUM, KORCH_REDUCE_MEAN, KORCH_REDUCE_MAX, KORCH_REDUCE_MIN};
    for (int k = 0; k < 4; k++) {
        korch_pgraph *pg = NULL;
        CHECK_OK(korch_pgraph_create(NULL, &pg));
        korch_shape xs = {.rank = 4, .dims = {D0, D1, D2, D3}};
        int v = korch_pgraph_add_input(pg, KORCH_DTYPE_FLOAT32, &xs);
        CHECK_OK(korch_pgraph_add_output(pg, korch_pgraph_reduce(pg, ops[k], v, (1u << 1) | (1u << 3), false)));
        korch_tensor out = run(pg, x, NULL, NULL);
        const float *got = out.data;
        int bad = 0;
        for (int64_t a = 0; a < D0; a++)
            for (int64_t c = 0; c < D2; c++) {
                double acc = ops[k] == KORCH_REDUCE_MAX ? -INFINITY : ops[k] == KORCH_REDUCE_MIN ? INFINITY : 0.0;
                for (int64_t b = 0; b < D1; b++)
                    for (int64_t d = 0; d < D3; d++) {
                        double e = x[flat((int64_t[]){a, b, c, d})];
                        if (ops[k] == KORCH_REDUCE_MAX) acc = (e > acc || e != e) ? e : acc;
                        else if (ops[k] == KORCH_REDUCE_MIN) acc = (e < acc || e != e) ? e : acc;
                        else acc += e;
                    }
                float want = (float)(ops[k] == KORCH_REDUCE_MEAN ? acc / (double)(D1 * D3) : acc);
                float g = got[a * D2 + c];
                bad += !(memcmp(&g, &want, sizeof g) == 0);
            }
        CHECK_MSG(bad == 0, "reduce op %d: %d outputs differ from the sequential definition", k, bad);
        korch_tensor_free(&out);
        korch_pgraph_free(pg);
    }
    free(x);
}

/* A transpose (0,2,3,1) of a strided slice, then an expand: affine maps. */
static void test_layout(void) {
    float *x = pattern(N, 2);
    korch_pgraph *pg = NULL;
    CHECK_OK(korch_pgraph_create(NULL, &pg));
    korch_shape xs = {.rank = 4, .dims = {D0, D1, D2, D3}};
    int v = korch_pgraph_add_input(pg, KORCH_DTYPE_FLOAT32, &xs);
    /* slice: in[1] = 1 + 2*o[1] (16 of 33), others identity */
    korch_index_map sm = {.input_rank = 4};
    for (int k = 0; k < 4; k++) {
        sm.terms[k] = (korch_index_term){.div = 1, .offset = k == 1 ? 1 : 0};
        sm.terms[k].coef[k] = k == 1 ? 2 : 1;
    }
    korch_shape ss = {.rank = 4, .dims = {D0, 16, D2, D3}};
    int s = korch_pgraph_layout(pg, KORCH_LAYOUT_SLICE, 1, &v, &ss, &sm, 0.0);
    /* transpose: out dims (D0, D2, D3, 16); in[k] = o[perm^-1] */
    korch_index_map tm = {.input_rank = 4};
    tm.terms[0] = (korch_index_term){.coef = {[0] = 1}, .div = 1};
    tm.terms[1] = (korch_index_term){.coef = {[3] = 1}, .div = 1};
    tm.terms[2] = (korch_index_term){.coef = {[1] = 1}, .div = 1};
    tm.terms[3] = (korch_index_term){.coef = {[2] = 1}, .div = 1};
    korch_shape ts = {.rank = 4, .dims = {D0, D2, D3, 16}};
    int t = korch_pgraph_layout(pg, KORCH_LAYOUT_TRANSPOSE, 1, &s, &ts, &tm, 0.0);
    /* expand: a new leading axis of 3 (coefficient 0) */
    korch_index_map em = {.input_rank = 4};
    for (int k = 0; k < 4; k++) {
        em.terms[k] = (korch_index_term){.div = 1};
        em.terms[k].coef[k + 1] = 1;
    }
    korch_shape es = {.rank = 5, .dims = {3, D0, D2, D3, 16}};
    int e = korch_pgraph_layout(pg, KORCH_LAYOUT_EXPAND, 1, &t, &es, &em, 0.0);
    CHECK_OK(korch_pgraph_add_output(pg, e));
    korch_tensor out = run(pg, x, NULL, NULL);
    const float *got = out.data;
    int bad = 0;
    int64_t i = 0;
    for (int64_t r = 0; r < 3; r++)
        for (int64_t a = 0; a < D0; a++)
            for (int64_t c = 0; c < D2; c++)
                for (int64_t d = 0; d < D3; d++)
                    for (int64_t b = 0; b < 16; b++, i++) {
                        float want = x[flat((int64_t[]){a, 1 + 2 * b, c, d})];
                        bad += memcmp(&got[i], &want, sizeof want) != 0;
                    }
    CHECK_MSG(bad == 0, "layout: %d elements differ from the index maps' definition", bad);
    korch_tensor_free(&out);
    korch_pgraph_free(pg);
    free(x);
}

/* x (op) y then tanh, y broadcast along the innermost axis ([D1, D2, 1])
 * or not ([D1, 1, D3]): the row path (rows of D3 >= EW_ROW_MIN), with
 * its operators written out and the default through korch_ew_apply. */
static void test_elementwise(void) {
    korch_ew_op ops[] = {KORCH_EW_ADD, KORCH_EW_SUB, KORCH_EW_MUL, KORCH_EW_DIV, KORCH_EW_POW};
    korch_shape shapes[2] = {{.rank = 3, .dims = {D1, 1, D3}}, {.rank = 3, .dims = {D1, D2, 1}}};
    for (int k = 0; k < (int)(sizeof ops / sizeof ops[0]); k++)
        for (int sh = 0; sh < 2; sh++) {
            const korch_shape *ys = &shapes[sh];
            float *x = pattern(N, 3), *y = pattern(korch_shape_numel(ys), 4);
            if (ops[k] == KORCH_EW_POW)
                for (int64_t i = 0; i < N; i++) x[i] = fabsf(x[i]); /* real powers */
            korch_pgraph *pg = NULL;
            CHECK_OK(korch_pgraph_create(NULL, &pg));
            korch_shape xs = {.rank = 4, .dims = {D0, D1, D2, D3}};
            int a = korch_pgraph_add_input(pg, KORCH_DTYPE_FLOAT32, &xs);
            int b = korch_pgraph_add_input(pg, KORCH_DTYPE_FLOAT32, ys);
            int ab[2] = {a, b};
            int m = korch_pgraph_elementwise(pg, ops[k], 2, ab, 0, 0, KORCH_DTYPE_UNDEFINED);
            int t = korch_pgraph_elementwise(pg, KORCH_EW_TANH, 1, &m, 0, 0, KORCH_DTYPE_UNDEFINED);
            CHECK_OK(korch_pgraph_add_output(pg, t));
            korch_tensor out = run(pg, x, y, ys);
            const float *got = out.data;
            int bad = 0;
            for (int64_t i = 0; i < N; i++) {
                int64_t d = i % D3, cc = i / D3 % D2, bb = i / (D2 * D3) % D1;
                double xv = x[i], yv = sh == 0 ? y[bb * D3 + d] : y[bb * D2 + cc];
                double r = ops[k] == KORCH_EW_ADD   ? xv + yv
                           : ops[k] == KORCH_EW_SUB ? xv - yv
                           : ops[k] == KORCH_EW_MUL ? xv * yv
                           : ops[k] == KORCH_EW_DIV ? xv / yv
                                                    : pow(xv, yv);
                float want = (float)tanh((double)(float)r);
                bad += memcmp(&got[i], &want, sizeof want) != 0;
            }
            CHECK_MSG(bad == 0, "elementwise op %d, y shape %d: %d elements differ from the double-precision definition",
                      (int)ops[k], sh, bad);
            korch_tensor_free(&out);
            korch_pgraph_free(pg);
            free(x);
            free(y);
        }
}

/* Runs [B, M, K] @ w, w of shape ws, through the interpreter. */
static korch_tensor run_matmul(int B, int M, int K, const float *a, const korch_shape *ws, const float *w) {
    korch_pgraph *pg = NULL;
    CHECK_OK(korch_pgraph_create(NULL, &pg));
    korch_shape as = {.rank = 3, .dims = {B, M, K}};
    korch_prim_linear mm = {.op = KORCH_LINEAR_MATMUL};
    /* inputs in order: x, then w (argument evaluation order is unspecified) */
    int x = korch_pgraph_add_input(pg, KORCH_DTYPE_FLOAT32, &as);
    int wv = korch_pgraph_add_input(pg, KORCH_DTYPE_FLOAT32, ws);
    CHECK_OK(korch_pgraph_add_output(pg, korch_pgraph_linear(pg, &mm, x, wv)));
    korch_tensor in[2] = {{.dtype = KORCH_DTYPE_FLOAT32, .shape = as, .data = (void *)a},
                          {.dtype = KORCH_DTYPE_FLOAT32, .shape = *ws, .data = (void *)w}};
    korch_tensor out = {0};
    CHECK_OK(korch_pgraph_interpret(pg, in, &out));
    korch_pgraph_free(pg);
    return out;
}

/* [B, M, K] @ [K, NN], the weight shared: the interpreter folds the batch
 * into one product of B*M rows. Compared bit for bit with the same weight
 * repeated per product ([B, K, NN], not folded: one product per thread at a
 * time), and each product with the same product computed alone. Shapes:
 * twelve products of 40 rows, and the shape of ViT-B/16's sequence-first
 * attention input ([197, 1, 768] @ [768, 2304], one-row products) scaled
 * down but still across korch_sgemm's edges: two k blocks (256), two tile
 * rows (96). */
static void check_batched_matmul(int B, int M, int K, int NN) {
    float *a = pattern((int64_t)B * M * K, 5), *w = pattern((int64_t)K * NN, 6);
    float *wt = malloc(sizeof(float) * (size_t)B * (size_t)K * (size_t)NN);
    for (int b = 0; b < B; b++) memcpy(wt + (int64_t)b * K * NN, w, sizeof(float) * (size_t)K * (size_t)NN);
    korch_shape ws = {.rank = 2, .dims = {K, NN}}, wb = {.rank = 3, .dims = {B, K, NN}};
    korch_tensor folded = run_matmul(B, M, K, a, &ws, w), each = run_matmul(B, M, K, a, &wb, wt);
    size_t bytes = sizeof(float) * (size_t)B * (size_t)M * (size_t)NN;
    CHECK_MSG(memcmp(folded.data, each.data, bytes) == 0,
              "batched matmul [%d,%d,%d] x [%d,%d]: the folded product differs from the products one by one", B, M, K,
              K, NN);
    int bad = 0;
    for (int b = 0; b < B; b++) {
        korch_tensor alone = run_matmul(1, M, K, a + (int64_t)b * M * K, &ws, w);
        bad += memcmp((float *)each.data + (int64_t)b * M * NN, alone.data, sizeof(float) * (size_t)M * NN) != 0;
        korch_tensor_free(&alone);
    }
    CHECK_MSG(bad == 0, "batched matmul [%d,%d,%d] x [%d,%d,%d]: %d of %d products differ from the same product alone",
              B, M, K, B, K, NN, bad, B);
    korch_tensor_free(&folded);
    korch_tensor_free(&each);
    free(a);
    free(w);
    free(wt);
}

/* Layouts whose affine maps leave their inputs (interpret_rows.c), against
 * the definition evaluated here element by element: the first map in bounds
 * (korch_index_map_eval), else the pad value. A three-way concat along the
 * last axis and along axis 1, a constant pad that also crops, a pooling
 * window with stride, dilation and padding, and a hand-made map reading
 * backwards (negative coefficient) that runs off both ends. */
static void check_bounded(korch_pgraph *pg, int y, const float *x, const korch_shape *xs, int n_in, const char *what) {
    CHECK_OK(korch_pgraph_add_output(pg, y));
    korch_tensor in[3];
    for (int i = 0; i < n_in; i++)
        in[i] = (korch_tensor){.dtype = KORCH_DTYPE_FLOAT32, .shape = xs[i], .data = (void *)(x + i * N)};
    korch_tensor out = {0};
    CHECK_OK(korch_pgraph_interpret(pg, in, &out));
    const korch_prim_layout *l = &pg->nodes[pg->values[y].producer].u.layout;
    const korch_shape *os = &pg->values[y].shape;
    int64_t total = korch_shape_numel(os), o[KORCH_MAX_RANK] = {0};
    int bad = 0;
    for (int64_t i = 0; i < total && out.data; i++) {
        float want = (float)l->pad_value;
        for (int p = 0; p < l->n_maps; p++) {
            int64_t c[KORCH_MAX_RANK], off = 0;
            if (!korch_index_map_eval(&l->maps[p], &xs[p], o, c)) continue;
            for (int k = 0; k < xs[p].rank; k++) off = off * xs[p].dims[k] + c[k];
            want = x[p * N + off];
            break;
        }
        bad += memcmp((const float *)out.data + i, &want, sizeof want) != 0;
        for (int k = os->rank - 1; k >= 0; k--) {
            if (++o[k] < os->dims[k]) break;
            o[k] = 0;
        }
    }
    CHECK_MSG(bad == 0, "%s: %d of %lld elements differ from the index maps' definition", what, bad, (long long)total);
    korch_tensor_free(&out);
    korch_pgraph_free(pg);
}

static void test_bounded_layouts(void) {
    float *x = pattern(3 * N, 7);
    korch_shape full = {.rank = 4, .dims = {D0, D1, D2, D3}};
    /* concat of [D0,D1,D2,D3], [D0,D1,D2,5], [D0,D1,D2,4] along the last axis */
    for (int axis = 3; axis >= 1; axis -= 2) {
        korch_pgraph *pg = NULL;
        CHECK_OK(korch_pgraph_create(NULL, &pg));
        korch_shape xs[3] = {full, full, full};
        xs[1].dims[axis] = 5;
        xs[2].dims[axis] = 4;
        int v[3];
        for (int i = 0; i < 3; i++) v[i] = korch_pgraph_add_input(pg, KORCH_DTYPE_FLOAT32, &xs[i]);
        check_bounded(pg, korch_pgraph_concat(pg, 3, v, axis), x, xs, 3, axis == 3 ? "concat, last axis" : "concat, axis 1");
    }
    {
        korch_pgraph *pg = NULL;
        CHECK_OK(korch_pgraph_create(NULL, &pg));
        int v = korch_pgraph_add_input(pg, KORCH_DTYPE_FLOAT32, &full);
        int64_t b[4] = {1, -2, 3, 2}, e[4] = {0, 1, -1, 5};
        check_bounded(pg, korch_pgraph_pad(pg, v, b, e, KORCH_PAD_CONSTANT, 0.5), x, &full, 1, "pad and crop");
    }
    {
        korch_pgraph *pg = NULL;
        CHECK_OK(korch_pgraph_create(NULL, &pg));
        int v = korch_pgraph_add_input(pg, KORCH_DTYPE_FLOAT32, &full);
        int64_t k[2] = {3, 4}, st[2] = {2, 1}, dl[2] = {1, 2}, pb[2] = {1, 3}, os[2] = {(D2 + 2 - 3) / 2 + 1, D3};
        check_bounded(pg, korch_pgraph_window(pg, v, 2, k, st, dl, pb, os, -INFINITY), x, &full, 1, "pooling window");
    }
    {
        korch_pgraph *pg = NULL;
        CHECK_OK(korch_pgraph_create(NULL, &pg));
        int v = korch_pgraph_add_input(pg, KORCH_DTYPE_FLOAT32, &full);
        korch_index_map m = {.input_rank = 4, .may_be_out_of_bounds = true};
        for (int kk = 0; kk < 4; kk++) m.terms[kk] = korch_index_term_var(kk);
        m.terms[3] = (korch_index_term){.coef = {[3] = -2, [2] = 1}, .div = 1, .offset = 6};
        korch_shape ys = {.rank = 4, .dims = {D0, D1, D2, 2 * D3}};
        check_bounded(pg, korch_pgraph_layout(pg, KORCH_LAYOUT_GENERIC, 1, &v, &ys, &m, 7.0), x, &full, 1,
                      "backwards map off both ends");
    }
    free(x);
}

int main(void) {
    test_reduce();
    test_layout();
    test_bounded_layouts();
    test_elementwise();
    check_batched_matmul(12, 40, 24, 30);
    check_batched_matmul(100, 1, 260, 40);
    TEST_MAIN_END();
}
