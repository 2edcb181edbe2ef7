/* MatMul and Gemm against naive loops in double precision. MatMul: random
 * ranks 1-4 with broadcast batch dimensions, the numpy promotion of 1-D
 * operands, many small matrices and one large one. Gemm: transposes,
 * alpha/beta and every broadcastable shape of C, across opsets. Then the
 * error paths of both. */
#include "nn_harness.h"

/* ---- MatMul -------------------------------------------------------------- */

static void check_matmul(int ra, const int64_t *da, int rb, const int64_t *db, const char *label) {
    op_harness h;
    h_init(&h, "MatMul", 13, 2, 1);
    float *a = h_input(&h, 0, KORCH_DTYPE_FLOAT32, ra, da)->data;
    float *b = h_input(&h, 1, KORCH_DTYPE_FLOAT32, rb, db)->data;
    h_fill_random(&h.in[0]);
    h_fill_random(&h.in[1]);
    /* numpy: promote 1-D operands, then right-align and broadcast the batch dims */
    int64_t pa[KORCH_MAX_RANK + 1], pb[KORCH_MAX_RANK + 1];
    int qa = ra, qb = rb;
    for (int i = 0; i < ra; i++) pa[i] = da[i];
    for (int i = 0; i < rb; i++) pb[i] = db[i];
    if (ra == 1) pa[0] = 1, pa[1] = da[0], qa = 2;
    if (rb == 1) pb[0] = db[0], pb[1] = 1, qb = 2;
    int64_t M = pa[qa - 2], K = pa[qa - 1], N = pb[qb - 1];
    int nb = (qa > qb ? qa : qb) - 2;
    int64_t batch[KORCH_MAX_RANK], ba[KORCH_MAX_RANK], bb[KORCH_MAX_RANK];
    for (int i = 0; i < nb; i++) {
        int ia = i - (nb - (qa - 2)), ib = i - (nb - (qb - 2));
        ba[i] = ia >= 0 ? pa[ia] : 1;
        bb[i] = ib >= 0 ? pb[ib] : 1;
        batch[i] = ba[i] > bb[i] ? ba[i] : bb[i];
    }
    korch_shape want_shape = {0};
    for (int i = 0; i < nb; i++) want_shape.dims[want_shape.rank++] = batch[i];
    if (ra > 1) want_shape.dims[want_shape.rank++] = M;
    if (rb > 1) want_shape.dims[want_shape.rank++] = N;

    korch_status st = h_run(&h);
    CHECK_MSG(st == KORCH_OK, "%s: %s", label, korch_last_error());
    if (st == KORCH_OK) {
        char s1[96], s2[96];
        bool shape_ok = korch_shape_equal(&h.out[0].shape, &want_shape);
        CHECK_MSG(shape_ok, "%s: shape %s, want %s", label, korch_shape_format(&h.out[0].shape, s1, sizeof s1),
                  korch_shape_format(&want_shape, s2, sizeof s2));
        int64_t batches = 1;
        for (int i = 0; i < nb; i++) batches *= batch[i];
        int64_t total = batches * M * N;
        double *want = malloc((size_t)(total + 1) * sizeof *want), *mag = malloc((size_t)(total + 1) * sizeof *mag);
        for (int64_t t = 0; t < batches; t++) {
            int64_t rest = t, oa = 0, ob = 0, sa = 1, sb = 1;
            for (int i = nb - 1; i >= 0; i--) {
                int64_t idx = rest % batch[i];
                rest /= batch[i];
                oa += (ba[i] == 1 ? 0 : idx) * sa;
                ob += (bb[i] == 1 ? 0 : idx) * sb;
                sa *= ba[i];
                sb *= bb[i];
            }
            for (int64_t i = 0; i < M; i++)
                for (int64_t j = 0; j < N; j++) {
                    double s = 0, m = 0;
                    for (int64_t p = 0; p < K; p++) {
                        double v = (double)a[(oa * M + i) * K + p] * b[(ob * K + p) * N + j];
                        s += v;
                        m += fabs(v);
                    }
                    want[(t * M + i) * N + j] = s;
                    mag[(t * M + i) * N + j] = m;
                }
        }
        if (shape_ok) {
            int bad = h_compare(label, h.out[0].data, want, mag, total);
            CHECK_MSG(bad == 0, "%s: %d elements differ", label, bad);
        }
        free(want);
        free(mag);
    }
    h_free(&h);
}

static void test_matmul(void) {
    char label[64];
    for (int t = 0; t < 200; t++) {
        int ra = (int)h_rand_int(1, 4), rb = (int)h_rand_int(1, 4);
        int64_t K = h_rand_int(1, 40), da[4], db[4];
        for (int i = 0; i < ra; i++) da[i] = h_rand_int(1, 5);
        for (int i = 0; i < rb; i++) db[i] = h_rand_int(1, 5);
        da[ra - 1] = K;
        db[rb >= 2 ? rb - 2 : 0] = K;
        /* make batch dims compatible: equal or 1 where both exist */
        int nb = (ra > rb ? ra : rb) - 2;
        for (int i = 0; i < nb; i++) {
            int ia = i - (nb - (ra - 2)), ib = i - (nb - (rb - 2));
            if (ia >= 0 && ib >= 0 && da[ia] != db[ib] && da[ia] != 1 && db[ib] != 1) db[ib] = h_rand_int(0, 1) ? 1 : da[ia];
        }
        snprintf(label, sizeof label, "matmul case %d", t);
        check_matmul(ra, da, rb, db, label);
    }
    int64_t many_a[3] = {64, 7, 33}, many_b[3] = {64, 33, 9};
    check_matmul(3, many_a, 3, many_b, "many small matrices");
    int64_t fold_a[3] = {3, 130, 300}, fold_b[2] = {300, 70};
    check_matmul(3, fold_a, 2, fold_b, "batch folded into M");
    int64_t bc_a[4] = {2, 1, 100, 64}, bc_b[3] = {3, 64, 600};
    check_matmul(4, bc_a, 3, bc_b, "broadcast batch, large");
    int64_t vec[1] = {17}, mat[3] = {2, 17, 5};
    check_matmul(1, vec, 1, vec, "vector . vector");
    check_matmul(1, vec, 3, mat, "vector x batch");
}

/* ---- Gemm ---------------------------------------------------------------- */

static void check_gemm(int opset, bool ta, bool tb, int64_t M, int64_t N, int64_t K, float alpha, float beta,
                       int rc, const int64_t *dc, const char *label) {
    op_harness h;
    h_init(&h, "Gemm", opset, rc >= 0 ? 3 : 2, 1);
    int64_t da[2] = {ta ? K : M, ta ? M : K}, db[2] = {tb ? N : K, tb ? K : N};
    float *a = h_input(&h, 0, KORCH_DTYPE_FLOAT32, 2, da)->data;
    float *b = h_input(&h, 1, KORCH_DTYPE_FLOAT32, 2, db)->data;
    h_fill_random(&h.in[0]);
    h_fill_random(&h.in[1]);
    float *c = NULL;
    if (rc >= 0) c = h_input(&h, 2, KORCH_DTYPE_FLOAT32, rc, dc)->data, h_fill_random(&h.in[2]);
    if (ta) h_attr_int(&h, "transA", 1);
    if (tb) h_attr_int(&h, "transB", 1);
    if (alpha != 1.0f) h_attr_float(&h, "alpha", alpha);
    if (beta != 1.0f) h_attr_float(&h, "beta", beta);
    if (opset < 7) h_attr_int(&h, "broadcast", 1);
    korch_status st = h_run(&h);
    CHECK_MSG(st == KORCH_OK, "%s: %s", label, korch_last_error());
    if (st == KORCH_OK) {
        korch_shape want_shape = {.rank = 2, .dims = {M, N}};
        bool shape_ok = korch_shape_equal(&h.out[0].shape, &want_shape);
        CHECK_MSG(shape_ok, "%s: wrong output shape", label);
        double *want = malloc((size_t)(M * N + 1) * sizeof *want), *mag = malloc((size_t)(M * N + 1) * sizeof *mag);
        for (int64_t i = 0; i < M; i++)
            for (int64_t j = 0; j < N; j++) {
                double s = 0, m = 0;
                for (int64_t p = 0; p < K; p++) {
                    double v = (double)(ta ? a[p * M + i] : a[i * K + p]) * (tb ? b[j * K + p] : b[p * N + j]);
                    s += v;
                    m += fabs(v);
                }
                double cv = 0;
                if (c) { /* C right-aligned against M x N, size-1 dims repeated */
                    int64_t ci = rc == 2 && dc[0] != 1 ? i : 0;
                    int64_t cj = rc >= 1 && dc[rc - 1] != 1 ? j : 0;
                    cv = beta * c[ci * (rc >= 1 ? dc[rc - 1] : 1) + cj];
                }
                want[i * N + j] = alpha * s + cv;
                mag[i * N + j] = fabs(alpha) * m + fabs(cv);
            }
        if (shape_ok) {
            int bad = h_compare(label, h.out[0].data, want, mag, M * N);
            CHECK_MSG(bad == 0, "%s: %d elements differ", label, bad);
        }
        free(want);
        free(mag);
    }
    h_free(&h);
}

static void test_gemm(void) {
    char label[64];
    for (int t = 0; t < 150; t++) {
        int64_t M = h_rand_int(1, 40), N = h_rand_int(1, 40), K = h_rand_int(1, 60);
        int kind = (int)h_rand_int(0, 7), rc = -1;
        int64_t dc[2] = {M, N};
        switch (kind) {
        case 0: rc = -1; break;                       /* no C */
        case 1: rc = 0; break;                        /* scalar */
        case 2: rc = 1, dc[0] = N; break;             /* [N] */
        case 3: rc = 1, dc[0] = 1; break;             /* [1] */
        case 4: rc = 2, dc[0] = 1; break;             /* [1, N] */
        case 5: rc = 2, dc[1] = 1; break;             /* [M, 1] */
        default: rc = 2; break;                       /* [M, N] */
        }
        int opset = rc < 0 ? 13 : (int)h_rand_int(0, 3) == 0 ? 6 : 11;
        float alpha = h_rand_int(0, 1) ? 1.0f : -1.5f, beta = h_rand_int(0, 2) == 0 ? 0.0f : 0.75f;
        snprintf(label, sizeof label, "gemm case %d", t);
        check_gemm(opset, h_rand_int(0, 1), h_rand_int(0, 1), M, N, K, alpha, beta, rc, dc, label);
    }
    int64_t dc[1] = {700};
    check_gemm(13, false, true, 150, 700, 400, 1.0f, 1.0f, 1, dc, "large Linear");
}

static void test_errors(void) {
    op_harness h;
    int64_t a[3] = {2, 3, 4}, b[3] = {2, 5, 6}, b2[3] = {3, 4, 6}, v[1] = {3};
    h_init(&h, "MatMul", 13, 2, 1);
    h_input(&h, 0, KORCH_DTYPE_FLOAT32, 3, a);
    h_input(&h, 1, KORCH_DTYPE_FLOAT32, 3, b);
    CHECK_INFER_FAILS(&h, KORCH_ERR_SHAPE, "inner dimensions differ: A is 2x3x4, B is 2x5x6 (4 vs 5)");
    h_free(&h);

    h_init(&h, "MatMul", 13, 2, 1);
    h_input(&h, 0, KORCH_DTYPE_FLOAT32, 3, a);
    h_input(&h, 1, KORCH_DTYPE_FLOAT32, 3, b2);
    CHECK_INFER_FAILS(&h, KORCH_ERR_SHAPE, "batch dimensions of A 2x3x4 and B 3x4x6 do not broadcast");
    h_free(&h);

    h_init(&h, "MatMul", 13, 2, 1);
    h_input(&h, 0, KORCH_DTYPE_FLOAT32, 0, a);
    h_input(&h, 1, KORCH_DTYPE_FLOAT32, 1, v);
    CHECK_INFER_FAILS(&h, KORCH_ERR_SHAPE, "rank >= 1");
    h_free(&h);

    h_init(&h, "MatMul", 13, 2, 1);
    h_input(&h, 0, KORCH_DTYPE_FLOAT64, 3, a);
    h_input(&h, 1, KORCH_DTYPE_FLOAT32, 3, b);
    CHECK_INFER_FAILS(&h, KORCH_ERR_UNSUPPORTED, "float64");
    h_free(&h);

    int64_t ga[2] = {3, 4}, gb[2] = {5, 6}, gc[2] = {4, 6}, gn[1] = {6};
    h_init(&h, "Gemm", 13, 2, 1);
    h_input(&h, 0, KORCH_DTYPE_FLOAT32, 2, ga);
    h_input(&h, 1, KORCH_DTYPE_FLOAT32, 2, gb);
    CHECK_INFER_FAILS(&h, KORCH_ERR_SHAPE, "inner dimensions differ: op(A) is 3x4, op(B) is 5x6");
    h_free(&h);

    gb[0] = 4;
    h_init(&h, "Gemm", 13, 3, 1);
    h_input(&h, 0, KORCH_DTYPE_FLOAT32, 2, ga);
    h_input(&h, 1, KORCH_DTYPE_FLOAT32, 2, gb);
    h_input(&h, 2, KORCH_DTYPE_FLOAT32, 2, gc);
    CHECK_INFER_FAILS(&h, KORCH_ERR_SHAPE, "C has shape 4x6, which does not broadcast to the 3x6 result");
    h_free(&h);

    h_init(&h, "Gemm", 6, 3, 1); /* opset 6 without broadcast=1: C must be M x N */
    h_input(&h, 0, KORCH_DTYPE_FLOAT32, 2, ga);
    h_input(&h, 1, KORCH_DTYPE_FLOAT32, 2, gb);
    h_input(&h, 2, KORCH_DTYPE_FLOAT32, 1, gn);
    CHECK_INFER_FAILS(&h, KORCH_ERR_SHAPE, "needs broadcast=1");
    h_free(&h);

    h_init(&h, "Gemm", 9, 2, 1);
    h_input(&h, 0, KORCH_DTYPE_FLOAT32, 2, ga);
    h_input(&h, 1, KORCH_DTYPE_FLOAT32, 2, gb);
    CHECK_INFER_FAILS(&h, KORCH_ERR_INVALID_MODEL, "input C is required before opset 11");
    h_free(&h);

    h_init(&h, "Gemm", 13, 2, 1);
    h_input(&h, 0, KORCH_DTYPE_FLOAT32, 2, ga);
    h_input(&h, 1, KORCH_DTYPE_FLOAT32, 2, gb);
    h_attr_int(&h, "transA", 2);
    CHECK_INFER_FAILS(&h, KORCH_ERR_INVALID_MODEL, "transA is 2");
    h_free(&h);

    h_init(&h, "Gemm", 13, 2, 1);
    h_input(&h, 0, KORCH_DTYPE_FLOAT32, 3, a);
    h_input(&h, 1, KORCH_DTYPE_FLOAT32, 2, gb);
    CHECK_INFER_FAILS(&h, KORCH_ERR_SHAPE, "must both be matrices");
    h_free(&h);
}

int main(void) {
    test_matmul();
    test_gemm();
    test_errors();
    TEST_MAIN_END();
}
