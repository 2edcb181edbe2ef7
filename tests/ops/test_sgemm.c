/* The reference SGEMM against a triple loop in double precision: sizes at and
 * around every blocking edge (register tile 6x16, k block 256, thread tile
 * 96x512), both transposes, leading dimensions wider than the matrix,
 * alpha/beta, beta = 0 over a NaN-filled C; and bitwise independence of the
 * thread count, and of the number of rows (one row takes the matrix-vector
 * path, which must sum every element as the tiled path does). */
#include <omp.h>

#include "nn_harness.h"
#include "ops/gemm_kernel.h"

typedef struct gemm_case {
    bool ta, tb;
    int64_t m, n, k, pad_a, pad_b, pad_c; /* extra leading-dimension columns */
    float alpha, beta;
} gemm_case;

static float *random_floats(int64_t n) {
    float *p = malloc((size_t)(n > 0 ? n : 1) * sizeof *p);
    for (int64_t i = 0; i < n; i++) p[i] = h_rand_float();
    return p;
}

static int run_case(const gemm_case *c, int threads, float **result) {
    int64_t rows_a = c->ta ? c->k : c->m, cols_a = c->ta ? c->m : c->k;
    int64_t rows_b = c->tb ? c->n : c->k, cols_b = c->tb ? c->k : c->n;
    int64_t lda = cols_a + c->pad_a, ldb = cols_b + c->pad_b, ldc = c->n + c->pad_c;
    float *a = random_floats(rows_a * lda), *b = random_floats(rows_b * ldb), *cm = random_floats(c->m * ldc);
    if (c->beta == 0.0f)
        for (int64_t i = 0; i < c->m * ldc; i++) cm[i] = NAN; /* must not be read */
    double *want = malloc((size_t)(c->m * c->n + 1) * sizeof *want), *mag = malloc((size_t)(c->m * c->n + 1) * sizeof *mag);
    for (int64_t i = 0; i < c->m; i++)
        for (int64_t j = 0; j < c->n; j++) {
            double s = 0, sa = 0;
            for (int64_t p = 0; p < c->k; p++) {
                double av = c->ta ? a[p * lda + i] : a[i * lda + p];
                double bv = c->tb ? b[j * ldb + p] : b[p * ldb + j];
                s += av * bv;
                sa += fabs(av * bv);
            }
            double cv = c->beta == 0.0f ? 0.0 : (double)c->beta * cm[i * ldc + j];
            want[i * c->n + j] = c->alpha * s + cv;
            mag[i * c->n + j] = fabs(c->alpha) * sa + fabs(cv);
        }
    omp_set_num_threads(threads);
    korch_status st = korch_sgemm(c->ta, c->tb, c->m, c->n, c->k, c->alpha, a, lda, b, ldb, c->beta, cm, ldc);
    CHECK_OK(st);
    float *got = malloc((size_t)(c->m * c->n + 1) * sizeof *got);
    bool padding_kept = true;
    for (int64_t i = 0; i < c->m; i++) {
        memcpy(got + i * c->n, cm + i * ldc, (size_t)c->n * sizeof *got);
        for (int64_t j = c->n; j < ldc && c->beta == 0.0f; j++) padding_kept = padding_kept && isnan(cm[i * ldc + j]);
    }
    char label[128];
    snprintf(label, sizeof label, "sgemm %s%s m=%lld n=%lld k=%lld alpha=%g beta=%g", c->ta ? "T" : "N", c->tb ? "T" : "N",
             (long long)c->m, (long long)c->n, (long long)c->k, c->alpha, c->beta);
    int bad = h_compare(label, got, want, mag, c->m * c->n);
    CHECK_MSG(bad == 0, "%s: %d elements differ", label, bad);
    CHECK_MSG(padding_kept, "%s: wrote outside the %lld columns of C", label, (long long)c->n);
    free(a);
    free(b);
    free(cm);
    free(want);
    free(mag);
    if (result) *result = got;
    else free(got);
    return bad;
}

/* Row 0 of a two-row product, computed by the tiled path, against the same
 * row alone (the matrix-vector path): the same bits. */
static void one_row_as_tiled(bool ta, int64_t n, int64_t k, float alpha, float beta) {
    int64_t lda = ta ? 2 : k + 1, ldb = n + 3;
    float *a = random_floats(ta ? k * lda : 2 * lda), *b = random_floats(k * ldb);
    float *c0 = random_floats(2 * n), *c2 = malloc((size_t)(2 * n) * sizeof *c2);
    memcpy(c2, c0, (size_t)(2 * n) * sizeof *c2);
    omp_set_num_threads(2);
    CHECK_OK(korch_sgemm(ta, false, 2, n, k, alpha, a, lda, b, ldb, beta, c2, n));
    CHECK_OK(korch_sgemm(ta, false, 1, n, k, alpha, a, lda, b, ldb, beta, c0, n));
    CHECK_MSG(memcmp(c0, c2, (size_t)n * sizeof *c0) == 0,
              "sgemm %s m=1 n=%lld k=%lld alpha=%g beta=%g: the one-row path's bits differ from the tiled path's",
              ta ? "T" : "N", (long long)n, (long long)k, alpha, beta);
    free(a);
    free(b);
    free(c0);
    free(c2);
}

static int64_t row_k_of(int j) {
    const int64_t ks[] = {1, 255, 256, 257, 600};
    return ks[j];
}

/* Column 0 of a two-column product, computed by the tiled path, against
 * the same column alone (the one-column path): the same bits. */
static void one_column_as_tiled(bool ta, bool tb, int64_t m, int64_t k, float alpha, float beta) {
    int64_t lda = ta ? m + 1 : k + 2, ldb = tb ? k + 1 : 3, ldc = 2;
    float *a = random_floats(ta ? k * lda : m * lda), *b = random_floats(tb ? 2 * ldb : k * ldb);
    float *c1 = random_floats(m * ldc), *c2 = malloc((size_t)(m * ldc) * sizeof *c2);
    memcpy(c2, c1, (size_t)(m * ldc) * sizeof *c2);
    omp_set_num_threads(2);
    CHECK_OK(korch_sgemm(ta, tb, m, 2, k, alpha, a, lda, b, ldb, beta, c2, ldc));
    CHECK_OK(korch_sgemm(ta, tb, m, 1, k, alpha, a, lda, b, ldb, beta, c1, ldc));
    bool same = true;
    for (int64_t i = 0; i < m; i++) same = same && memcmp(&c1[i * ldc], &c2[i * ldc], sizeof *c1) == 0;
    CHECK_MSG(same, "sgemm %s%s m=%lld n=1 k=%lld alpha=%g beta=%g: the one-column path's bits differ from the tiled path's",
              ta ? "T" : "N", tb ? "T" : "N", (long long)m, (long long)k, alpha, beta);
    free(a);
    free(b);
    free(c1);
    free(c2);
}

int main(void) {
    /* the one-column path: across its row groups (16), k blocks (256), betas, transposes */
    const int64_t col_m[] = {2, 15, 16, 17, 100, 256};
    for (int i = 0; i < 6; i++)
        for (int j = 0; j < 5; j++) {
            one_column_as_tiled(false, false, col_m[i], row_k_of(j), 1.0f, 0.0f);
            one_column_as_tiled(i % 2, j % 2, col_m[i], row_k_of(j), -0.5f, j % 2 ? 1.0f : 0.25f);
        }
    /* the one-row path: across its column chunks (512), k blocks (256), betas */
    const int64_t row_n[] = {1, 17, 511, 512, 513, 1100};
    for (int i = 0; i < 6; i++)
        for (int j = 0; j < 5; j++) {
            one_row_as_tiled(false, row_n[i], row_k_of(j), 1.0f, 0.0f);
            one_row_as_tiled(i % 2, row_n[i], row_k_of(j), -0.5f, j % 2 ? 1.0f : 0.25f);
        }
    const int64_t sizes[] = {1, 2, 5, 6, 7, 8, 9, 15, 16, 17, 33, 95, 96, 97, 255, 256, 257, 511, 513};
    const int n_sizes = (int)(sizeof sizes / sizeof sizes[0]);
    /* every edge of every dimension at least once, with the others random */
    for (int t = 0; t < 3 * n_sizes; t++) {
        gemm_case c = {.ta = h_rand_int(0, 1), .tb = h_rand_int(0, 1), .alpha = 1.0f, .beta = 0.0f};
        c.m = t / n_sizes == 0 ? sizes[t % n_sizes] : h_rand_int(1, 130);
        c.n = t / n_sizes == 1 ? sizes[t % n_sizes] : h_rand_int(1, 130);
        c.k = t / n_sizes == 2 ? sizes[t % n_sizes] : h_rand_int(1, 300);
        c.pad_a = h_rand_int(0, 3), c.pad_b = h_rand_int(0, 3), c.pad_c = h_rand_int(0, 3);
        int ab = (int)h_rand_int(0, 3);
        if (ab == 1) c.beta = 1.0f;
        if (ab == 2) c.alpha = -0.5f, c.beta = 0.25f;
        if (ab == 3) c.alpha = 2.0f;
        run_case(&c, 2, NULL);
    }
    /* several thread tiles in both directions and several k blocks */
    gemm_case big = {.m = 200, .n = 1100, .k = 600, .alpha = 1.0f, .beta = 0.0f};
    run_case(&big, 2, NULL);
    big.ta = big.tb = true;
    big.beta = 1.5f;
    run_case(&big, 2, NULL);
    /* k = 0: C = beta * C */
    gemm_case empty = {.m = 3, .n = 4, .k = 0, .alpha = 1.0f, .beta = 0.0f};
    run_case(&empty, 1, NULL);
    /* results must not depend on the thread count */
    gemm_case same = {.m = 300, .n = 700, .k = 520, .alpha = 1.0f, .beta = 0.0f};
    float *one = NULL, *two = NULL;
    uint64_t seed = h_rng_state;
    run_case(&same, 1, &one);
    h_rng_state = seed;
    run_case(&same, 2, &two);
    CHECK_MSG(memcmp(one, two, (size_t)(same.m * same.n) * sizeof *one) == 0, "1 and 2 threads differ");
    free(one);
    free(two);
    TEST_MAIN_END();
}
