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

/* x * y with y broadcast over axes 0 and 2, then a tanh (same shape). */
static void test_elementwise(void) {
    float *x = pattern(N, 3), *y = pattern(D1 * D3, 4);
    korch_pgraph *pg = NULL;
    CHECK_OK(korch_pgraph_create(NULL, &pg));
    korch_shape xs = {.rank = 4, .dims = {D0, D1, D2, D3}}, ys = {.rank = 3, .dims = {D1, 1, D3}};
    int a = korch_pgraph_add_input(pg, KORCH_DTYPE_FLOAT32, &xs);
    int b = korch_pgraph_add_input(pg, KORCH_DTYPE_FLOAT32, &ys);
    int ab[2] = {a, b};
    int m = korch_pgraph_elementwise(pg, KORCH_EW_MUL, 2, ab, 0, 0, KORCH_DTYPE_UNDEFINED);
    int t = korch_pgraph_elementwise(pg, KORCH_EW_TANH, 1, &m, 0, 0, KORCH_DTYPE_UNDEFINED);
    CHECK_OK(korch_pgraph_add_output(pg, t));
    korch_tensor out = run(pg, x, y, &ys);
    const float *got = out.data;
    int bad = 0;
    for (int64_t i = 0; i < N; i++) {
        int64_t d = i % D3, bb = i / (D2 * D3) % D1;
        float prod = (float)((double)x[i] * (double)y[bb * D3 + d]);
        float want = (float)tanh((double)prod);
        bad += memcmp(&got[i], &want, sizeof want) != 0;
    }
    CHECK_MSG(bad == 0, "elementwise: %d elements differ from the double-precision definition", bad);
    korch_tensor_free(&out);
    korch_pgraph_free(pg);
    free(x);
    free(y);
}

/* [B, M, K] @ [K, NN]: B products folded into one of B*M rows (the
 * weight shared), each row block against the same product computed alone.
 * Shapes: twelve products of 40 rows; ViT-B/16's sequence-first attention
 * input ([197, 1, 768] @ [768, 2304]: one-row products, several k blocks of
 * korch_sgemm and thread tiles of C); and a batched weight
 * ([B, K, NN], not folded: one product per thread at a time). */
static void check_batched_matmul(int B, int M, int K, int NN, bool batched_w) {
    float *a = pattern((int64_t)B * M * K, 5), *w = pattern((int64_t)(batched_w ? B : 1) * K * NN, 6);
    korch_pgraph *pg = NULL, *one = NULL;
    CHECK_OK(korch_pgraph_create(NULL, &pg));
    CHECK_OK(korch_pgraph_create(NULL, &one));
    korch_shape as = {.rank = 3, .dims = {B, M, K}}, ws = {.rank = 2, .dims = {K, NN}}, wb = {.rank = 3, .dims = {B, K, NN}};
    korch_shape a1 = {.rank = 2, .dims = {M, K}};
    korch_prim_linear mm = {.op = KORCH_LINEAR_MATMUL};
    /* inputs in order: x, then w (argument evaluation order is unspecified) */
    int x = korch_pgraph_add_input(pg, KORCH_DTYPE_FLOAT32, &as);
    int wv = korch_pgraph_add_input(pg, KORCH_DTYPE_FLOAT32, batched_w ? &wb : &ws);
    CHECK_OK(korch_pgraph_add_output(pg, korch_pgraph_linear(pg, &mm, x, wv)));
    int x1 = korch_pgraph_add_input(one, KORCH_DTYPE_FLOAT32, &a1), w1 = korch_pgraph_add_input(one, KORCH_DTYPE_FLOAT32, &ws);
    CHECK_OK(korch_pgraph_add_output(one, korch_pgraph_linear(one, &mm, x1, w1)));
    korch_tensor in[2] = {{.dtype = KORCH_DTYPE_FLOAT32, .shape = as, .data = a},
                          {.dtype = KORCH_DTYPE_FLOAT32, .shape = batched_w ? wb : ws, .data = w}};
    korch_tensor out = {0};
    CHECK_OK(korch_pgraph_interpret(pg, in, &out));
    int bad = 0;
    for (int b = 0; b < B; b++) {
        korch_tensor in1[2] = {{.dtype = KORCH_DTYPE_FLOAT32, .shape = a1, .data = a + (int64_t)b * M * K},
                               {.dtype = KORCH_DTYPE_FLOAT32, .shape = ws,
                                .data = w + (batched_w ? (int64_t)b * K * NN : 0)}};
        korch_tensor o1 = {0};
        CHECK_OK(korch_pgraph_interpret(one, in1, &o1));
        bad += memcmp((float *)out.data + (int64_t)b * M * NN, o1.data, sizeof(float) * M * NN) != 0;
        korch_tensor_free(&o1);
    }
    CHECK_MSG(bad == 0, "batched matmul [%d,%d,%d] x [%s%d,%d]: %d of %d products differ from the same product alone",
              B, M, K, batched_w ? "B," : "", K, NN, bad, B);
    korch_tensor_free(&out);
    korch_pgraph_free(pg);
    korch_pgraph_free(one);
    free(a);
    free(w);
}

int main(void) {
    test_reduce();
    test_layout();
    test_elementwise();
    check_batched_matmul(12, 40, 24, 30, false);
    check_batched_matmul(197, 1, 768, 2304, false);
    check_batched_matmul(12, 40, 24, 30, true);
    TEST_MAIN_END();
}
