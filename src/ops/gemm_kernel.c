/* Reference SGEMM: pack, block, and let gcc vectorise a small register tile.
 *
 * The output is cut into MC x NC tiles, shared out among the threads with no
 * synchronisation until the end: each thread computes whole tiles. For a tile
 * and each block of KC values of k (in order), the thread packs its rows of
 * op(A) into MR-row panels and its columns of op(B) into NR-column panels,
 * both k-major, so the micro-kernel reads two contiguous streams. A B panel
 * (kc x NR, L1-sized) is then reused against every A panel of the tile
 * (MC x kc, L2-sized). Tiles in the same row re-pack the same A block; that
 * costs 1/NC of the arithmetic and buys freedom from barriers, which matter
 * when the cores are shared. The micro-kernel keeps an MR x NR accumulator in
 * registers; with MR and NR compile-time constants and the j loop marked
 * `omp simd`, gcc -O2 turns it into packed multiplies and adds. */
#include "ops/gemm_kernel.h"
#include "core/cpu.h"

#include <stdlib.h>
#include <string.h>

#ifdef _OPENMP
#include <omp.h>
#endif

enum {
    MR = 6,    /* rows of the register tile */
    NR = 16,   /* columns of the register tile: two AVX vectors */
    KC = KORCH_SGEMM_KC, /* depth of one packed block: it fixes how each element is summed */
    MC = 96,   /* rows of a thread tile (a multiple of MR) */
    NC = 512,  /* columns of a thread tile (a multiple of NR) */
};

/* Below this many multiply-adds a parallel region costs more than it saves. */
#define PARALLEL_MIN_MACS ((int64_t)1 << 16)

static void micro_kernel_portable(int64_t kc, const float *restrict a, const float *restrict b,
                                  float tile[MR][NR]) {
    float acc[MR][NR] = {{0}};
    for (int64_t p = 0; p < kc; p++) {
        const float *ap = a + p * MR, *bp = b + p * NR;
#pragma GCC unroll 16
        for (int i = 0; i < MR; i++) {
#pragma omp simd
            for (int j = 0; j < NR; j++) acc[i][j] += ap[i] * bp[j];
        }
    }
    for (int i = 0; i < MR; i++)
        for (int j = 0; j < NR; j++) tile[i][j] = acc[i][j];
}

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
/* The same register tile in 256-bit registers: one row of NR = 16 floats in two
 * registers. A multiply and an add, never a fused multiply-add, so every
 * element is rounded exactly as in micro_kernel_portable: the reference gives
 * the same bits on every x86-64, with or without AVX (the reference is the
 * oracle; its results must not depend on the machine). Twice the portable
 * kernel's speed on candy's convolutions, which dominate kernel verification
 * (docs/verification.md, "Cost"). */
__attribute__((target("avx"))) static void micro_kernel_avx(int64_t kc, const float *restrict a,
                                                            const float *restrict b, float tile[MR][NR]) {
    _Static_assert(NR == 16 && MR == 6, "the AVX tile is 6 rows of two 8-float registers");
    /* 12 independent accumulators: a multiply and an add per register and
     * step, with enough chains in flight to hide the add's latency (the
     * 6 x 8 tile had 6, and ran at 20-25 GFLOP/s a core on Zen 3) */
    __m256 c00 = _mm256_setzero_ps(), c01 = c00, c10 = c00, c11 = c00, c20 = c00, c21 = c00;
    __m256 c30 = c00, c31 = c00, c40 = c00, c41 = c00, c50 = c00, c51 = c00;
    for (int64_t p = 0; p < kc; p++) {
        const float *ap = a + p * MR;
        __m256 b0 = _mm256_loadu_ps(b + p * NR), b1 = _mm256_loadu_ps(b + p * NR + 8), x;
        x = _mm256_broadcast_ss(ap + 0);
        c00 = _mm256_add_ps(c00, _mm256_mul_ps(x, b0));
        c01 = _mm256_add_ps(c01, _mm256_mul_ps(x, b1));
        x = _mm256_broadcast_ss(ap + 1);
        c10 = _mm256_add_ps(c10, _mm256_mul_ps(x, b0));
        c11 = _mm256_add_ps(c11, _mm256_mul_ps(x, b1));
        x = _mm256_broadcast_ss(ap + 2);
        c20 = _mm256_add_ps(c20, _mm256_mul_ps(x, b0));
        c21 = _mm256_add_ps(c21, _mm256_mul_ps(x, b1));
        x = _mm256_broadcast_ss(ap + 3);
        c30 = _mm256_add_ps(c30, _mm256_mul_ps(x, b0));
        c31 = _mm256_add_ps(c31, _mm256_mul_ps(x, b1));
        x = _mm256_broadcast_ss(ap + 4);
        c40 = _mm256_add_ps(c40, _mm256_mul_ps(x, b0));
        c41 = _mm256_add_ps(c41, _mm256_mul_ps(x, b1));
        x = _mm256_broadcast_ss(ap + 5);
        c50 = _mm256_add_ps(c50, _mm256_mul_ps(x, b0));
        c51 = _mm256_add_ps(c51, _mm256_mul_ps(x, b1));
    }
    _mm256_storeu_ps(tile[0], c00);
    _mm256_storeu_ps(tile[0] + 8, c01);
    _mm256_storeu_ps(tile[1], c10);
    _mm256_storeu_ps(tile[1] + 8, c11);
    _mm256_storeu_ps(tile[2], c20);
    _mm256_storeu_ps(tile[2] + 8, c21);
    _mm256_storeu_ps(tile[3], c30);
    _mm256_storeu_ps(tile[3] + 8, c31);
    _mm256_storeu_ps(tile[4], c40);
    _mm256_storeu_ps(tile[4] + 8, c41);
    _mm256_storeu_ps(tile[5], c50);
    _mm256_storeu_ps(tile[5] + 8, c51);
}

#endif

static inline void micro_kernel(int64_t kc, const float *restrict a, const float *restrict b, float tile[MR][NR]) {
#if defined(__x86_64__) && defined(__GNUC__)
    if (korch_cpu_has_avx()) {
        micro_kernel_avx(kc, a, b, tile);
        return;
    }
#endif
    micro_kernel_portable(kc, a, b, tile);
}

/* C[0:rows, 0:cols] = alpha * tile + beta * C (beta == 0: C is not read).
 * A convolution sums k in several blocks, each adding its tile to C: a
 * whole tile row (the common case) is written with a constant trip count
 * and restrict pointers so gcc vectorises it; it was a third of
 * compute_tile's time as a scalar loop (perf, yolov4). Element by element
 * the same multiply and add, so the same bits. */
static void store_tile(float tile[MR][NR], int rows, int cols, float alpha, float beta, float *c, int64_t ldc) {
    if (cols == NR && beta == 1.0f) {
        for (int i = 0; i < rows; i++) {
            float *restrict ci = c + i * ldc;
            const float *restrict ti = tile[i];
#pragma omp simd
            for (int j = 0; j < NR; j++) ci[j] += alpha * ti[j];
        }
        return;
    }
    for (int i = 0; i < rows; i++) {
        float *ci = c + i * ldc;
        if (beta == 0.0f)
            for (int j = 0; j < cols; j++) ci[j] = alpha * tile[i][j];
        else if (beta == 1.0f)
            for (int j = 0; j < cols; j++) ci[j] += alpha * tile[i][j];
        else
            for (int j = 0; j < cols; j++) ci[j] = alpha * tile[i][j] + beta * ci[j];
    }
}

/* The panel of op(A)[i0:i0+MR, pc:pc+kc]: dst[p*MR + i] = op(A)[i0 + i][pc + p], zero past row m. */
static void pack_a_panel(bool trans, int64_t m, int64_t i0, int64_t pc, int64_t kc, const float *a, int64_t lda,
                         float *dst) {
    int rows = (int)(m - i0 < MR ? m - i0 : MR);
    /* the transpose test hoisted out of the copy loops (gcc -O2 does not
     * unswitch loops): with a thin operand, such as a convolution's few
     * output channels, packing costs as much as the arithmetic */
    if (trans) {
        for (int64_t p = 0; p < kc; p++) {
            float *d = dst + p * MR;
            const float *s = a + (pc + p) * lda + i0;
            for (int i = 0; i < rows; i++) d[i] = s[i];
            for (int i = rows; i < MR; i++) d[i] = 0.0f;
        }
        return;
    }
    for (int64_t p = 0; p < kc; p++)
        for (int i = rows; i < MR; i++) dst[p * MR + i] = 0.0f;
    for (int i = 0; i < rows; i++) {
        const float *s = a + (i0 + i) * lda + pc;
        for (int64_t p = 0; p < kc; p++) dst[p * MR + i] = s[p];
    }
}

/* The panel of op(B)[pc:pc+kc, j0:j0+NR]: dst[p*NR + j] = op(B)[pc + p][j0 + j], zero past column n. */
static void pack_b_panel(bool trans, int64_t n, int64_t j0, int64_t pc, int64_t kc, const float *b, int64_t ldb,
                         float *dst) {
    int cols = (int)(n - j0 < NR ? n - j0 : NR);
    if (!trans) {
        for (int64_t p = 0; p < kc; p++) {
            float *d = dst + p * NR;
            const float *s = b + (pc + p) * ldb + j0;
            if (cols == NR) { /* the common case: NR contiguous floats */
                memcpy(d, s, NR * sizeof(float));
                continue;
            }
            for (int j = 0; j < cols; j++) d[j] = s[j];
            for (int j = cols; j < NR; j++) d[j] = 0.0f;
        }
        return;
    }
    for (int64_t p = 0; p < kc; p++)
        for (int j = cols; j < NR; j++) dst[p * NR + j] = 0.0f;
    for (int j = 0; j < cols; j++) {
        const float *s = b + (j0 + j) * ldb + pc;
        for (int64_t p = 0; p < kc; p++) dst[p * NR + j] = s[p];
    }
}

/* Every panel of op(B)[pc:pc+kc, j_begin:j_end], B not transposed, in
 * strips of PACK_ROWS rows: within a strip, panel after panel. Panel by
 * panel over all kc rows (pack_b_panel) the reads stride by a whole row per
 * element, a new page every few rows for a wide B, and that loop was half
 * of the reference matmul's time on ViT-B/16 (perf annotate); row by row
 * over all panels the writes stride by a panel (16 KiB) instead, as bad. A
 * strip keeps both to a few pages. Same values, same places: the product
 * is bit-identical. */
enum { PACK_ROWS = 16 };

static void pack_b_rows(int64_t n, int64_t j_begin, int64_t j_end, int64_t pc, int64_t kc, const float *b, int64_t ldb,
                        float *bpack) {
    for (int64_t p0 = 0; p0 < kc; p0 += PACK_ROWS) {
        int64_t p1 = p0 + PACK_ROWS < kc ? p0 + PACK_ROWS : kc;
        for (int64_t j = j_begin; j < j_end; j += NR) {
            int cols = (int)(n - j < NR ? n - j : NR);
            for (int64_t p = p0; p < p1; p++) {
                const float *s = b + (pc + p) * ldb + j;
                float *d = bpack + (j - j_begin) * kc + p * NR;
                if (cols == NR) {
                    memcpy(d, s, NR * sizeof(float));
                    continue;
                }
                for (int c = 0; c < cols; c++) d[c] = s[c];
                for (int c = cols; c < NR; c++) d[c] = 0.0f;
            }
        }
    }
}

static void scale_c(int64_t m, int64_t n, float beta, float *c, int64_t ldc) {
    for (int64_t i = 0; i < m; i++)
        for (int64_t j = 0; j < n; j++) c[i * ldc + j] = beta == 0.0f ? 0.0f : beta * c[i * ldc + j];
}

static float *alloc_floats(int64_t count) {
    /* aligned_alloc wants a size that is a multiple of the alignment */
    size_t bytes = ((size_t)count * sizeof(float) + 63) & ~(size_t)63;
    return aligned_alloc(64, bytes ? bytes : 64);
}

typedef struct sgemm_args {
    bool trans_a, trans_b;
    int64_t m, n, k, lda, ldb, ldc;
    float alpha, beta;
    const float *a, *b;
    float *c;
} sgemm_args;

/* C[i_begin:i_end, j_begin:j_end], all of k; apack holds MC x KC floats, bpack KC x NC. */
static void compute_tile(const sgemm_args *g, int64_t i_begin, int64_t i_end, int64_t j_begin, int64_t j_end,
                         float *apack, float *bpack) {
    float tile[MR][NR];
    for (int64_t pc = 0; pc < g->k; pc += KC) {
        int64_t kc = g->k - pc < KC ? g->k - pc : KC;
        float block_beta = pc == 0 ? g->beta : 1.0f;
        for (int64_t i = i_begin; i < i_end; i += MR)
            pack_a_panel(g->trans_a, g->m, i, pc, kc, g->a, g->lda, apack + (i - i_begin) * kc);
        if (g->trans_b)
            for (int64_t j = j_begin; j < j_end; j += NR)
                pack_b_panel(g->trans_b, g->n, j, pc, kc, g->b, g->ldb, bpack + (j - j_begin) * kc);
        else
            pack_b_rows(g->n, j_begin, j_end, pc, kc, g->b, g->ldb, bpack);
        for (int64_t j = j_begin; j < j_end; j += NR) {
            int cols = (int)(j_end - j < NR ? j_end - j : NR);
            for (int64_t i = i_begin; i < i_end; i += MR) {
                int rows = (int)(i_end - i < MR ? i_end - i : MR);
                micro_kernel(kc, apack + (i - i_begin) * kc, bpack + (j - j_begin) * kc, tile);
                store_tile(tile, rows, cols, g->alpha, block_beta, g->c + i * g->ldc + j, g->ldc);
            }
        }
    }
}

/* One row of A against a row-major B (m == 1, B not transposed): the
 * decoders of recurrent and attention models multiply one state vector by
 * a weight matrix at every step, where the tiled path packs the whole of B
 * and computes five padding rows of its six. Each output element is summed
 * exactly as compute_tile sums it (KC blocks of k in order; in a block, from
 * zero, a multiply then an add per step; each block stored as store_tile
 * stores it), so the same bits; B's rows are read in place. */
#define GEMV_COLS 512

#define GEMV_BODY                                                                                                     \
    float acc[GEMV_COLS];                                                                                             \
    int64_t cols = j_end - j_begin;                                                                                   \
    for (int64_t pc = 0; pc < g->k; pc += KC) {                                                                       \
        int64_t kc = g->k - pc < KC ? g->k - pc : KC;                                                                 \
        float block_beta = pc == 0 ? g->beta : 1.0f;                                                                  \
        for (int64_t j = 0; j < cols; j++) acc[j] = 0.0f;                                                             \
        for (int64_t p = pc; p < pc + kc; p++) {                                                                      \
            float ap = g->trans_a ? g->a[p * g->lda] : g->a[p];                                                       \
            const float *restrict bp = g->b + p * g->ldb + j_begin;                                                   \
            _Pragma("omp simd") for (int64_t j = 0; j < cols; j++) acc[j] = acc[j] + ap * bp[j];                      \
        }                                                                                                             \
        float *restrict c = g->c + j_begin;                                                                           \
        if (block_beta == 0.0f)                                                                                       \
            for (int64_t j = 0; j < cols; j++) c[j] = g->alpha * acc[j];                                              \
        else if (block_beta == 1.0f)                                                                                  \
            for (int64_t j = 0; j < cols; j++) c[j] += g->alpha * acc[j];                                             \
        else                                                                                                          \
            for (int64_t j = 0; j < cols; j++) c[j] = g->alpha * acc[j] + block_beta * c[j];                          \
    }

static void gemv_columns_portable(const sgemm_args *g, int64_t j_begin, int64_t j_end) { GEMV_BODY }

#if defined(__x86_64__) && defined(__GNUC__)
__attribute__((target("avx"))) static void gemv_columns_avx(const sgemm_args *g, int64_t j_begin, int64_t j_end) {
    GEMV_BODY
}
#endif

static void gemv_columns(const sgemm_args *g, int64_t j_begin, int64_t j_end) {
#if defined(__x86_64__) && defined(__GNUC__)
    if (korch_cpu_has_avx()) {
        gemv_columns_avx(g, j_begin, j_end);
        return;
    }
#endif
    gemv_columns_portable(g, j_begin, j_end);
}

/* A matrix times one column (n == 1): an attention's scores, a
 * projection to one channel. The tiled path would compute fifteen padding
 * columns of its sixteen. Rows are taken sixteen at a time, their block of
 * A packed k-major so that a step of k is one vector multiply and add; each
 * element is summed as compute_tile sums it, so the same bits. */
#define GEMV_ROWS 16

#define COLUMN_BODY                                                                                                   \
    float apack[GEMV_ROWS * KC], acc[GEMV_ROWS];                                                                      \
    int rows = (int)(i_end - i_begin);                                                                                \
    for (int64_t pc = 0; pc < g->k; pc += KC) {                                                                       \
        int64_t kc = g->k - pc < KC ? g->k - pc : KC;                                                                 \
        float block_beta = pc == 0 ? g->beta : 1.0f;                                                                  \
        for (int l = 0; l < GEMV_ROWS; l++)                                                                           \
            for (int64_t p = 0; p < kc; p++) {                                                                        \
                int64_t i = i_begin + l, q = pc + p;                                                                  \
                apack[p * GEMV_ROWS + l] = l >= rows ? 0.0f : g->trans_a ? g->a[q * g->lda + i] : g->a[i * g->lda + q]; \
            }                                                                                                         \
        for (int l = 0; l < GEMV_ROWS; l++) acc[l] = 0.0f;                                                            \
        for (int64_t p = 0; p < kc; p++) {                                                                            \
            float bp = g->trans_b ? g->b[pc + p] : g->b[(pc + p) * g->ldb];                                           \
            const float *restrict ap = apack + p * GEMV_ROWS;                                                         \
            _Pragma("omp simd") for (int l = 0; l < GEMV_ROWS; l++) acc[l] = acc[l] + ap[l] * bp;                     \
        }                                                                                                             \
        for (int l = 0; l < rows; l++) {                                                                              \
            float *c = g->c + (i_begin + l) * g->ldc;                                                                 \
            if (block_beta == 0.0f) *c = g->alpha * acc[l];                                                           \
            else if (block_beta == 1.0f) *c += g->alpha * acc[l];                                                    \
            else *c = g->alpha * acc[l] + block_beta * *c;                                                            \
        }                                                                                                             \
    }

static void column_rows_portable(const sgemm_args *g, int64_t i_begin, int64_t i_end) { COLUMN_BODY }

#if defined(__x86_64__) && defined(__GNUC__)
__attribute__((target("avx"))) static void column_rows_avx(const sgemm_args *g, int64_t i_begin, int64_t i_end) {
    COLUMN_BODY
}
#endif

static void sgemm_column(const sgemm_args *g) {
    int64_t groups = (g->m + GEMV_ROWS - 1) / GEMV_ROWS;
    bool parallel = (double)g->m * (double)g->k >= (double)PARALLEL_MIN_MACS && groups > 1;
#ifdef _OPENMP
    if (omp_in_parallel()) parallel = false;
#endif
#pragma omp parallel for if (parallel) schedule(static)
    for (int64_t t = 0; t < groups; t++) {
        int64_t i_begin = t * GEMV_ROWS, i_end = i_begin + GEMV_ROWS < g->m ? i_begin + GEMV_ROWS : g->m;
#if defined(__x86_64__) && defined(__GNUC__)
        if (korch_cpu_has_avx()) {
            column_rows_avx(g, i_begin, i_end);
            continue;
        }
#endif
        column_rows_portable(g, i_begin, i_end);
    }
}

static void sgemv(const sgemm_args *g) {
    int64_t chunks = (g->n + GEMV_COLS - 1) / GEMV_COLS;
    bool parallel = (double)g->n * (double)g->k >= (double)PARALLEL_MIN_MACS && chunks > 1;
#ifdef _OPENMP
    if (omp_in_parallel()) parallel = false;
#endif
#pragma omp parallel for if (parallel) schedule(static)
    for (int64_t t = 0; t < chunks; t++) {
        int64_t j_begin = t * GEMV_COLS, j_end = j_begin + GEMV_COLS < g->n ? j_begin + GEMV_COLS : g->n;
        gemv_columns(g, j_begin, j_end);
    }
}

korch_status korch_sgemm(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, float alpha, const float *a,
                         int64_t lda, const float *b, int64_t ldb, float beta, float *c, int64_t ldc) {
    if (m <= 0 || n <= 0) return KORCH_OK;
    if (k <= 0 || alpha == 0.0f) {
        scale_c(m, n, beta, c, ldc);
        return KORCH_OK;
    }
    sgemm_args g = {.trans_a = trans_a, .trans_b = trans_b, .m = m, .n = n, .k = k, .lda = lda, .ldb = ldb,
                    .ldc = ldc, .alpha = alpha, .beta = beta, .a = a, .b = b, .c = c};
    if (m == 1 && !trans_b) {
        sgemv(&g);
        return KORCH_OK;
    }
    if (n == 1) {
        sgemm_column(&g);
        return KORCH_OK;
    }
    int64_t tiles_m = (m + MC - 1) / MC, tiles_n = (n + NC - 1) / NC, tiles = tiles_m * tiles_n;
    /* packing buffers sized for the largest tile this call has */
    int64_t kc_max = k < KC ? k : KC;
    int64_t mc_max = (m < MC ? (m + MR - 1) / MR * MR : MC), nc_max = (n < NC ? (n + NR - 1) / NR * NR : NC);
    bool parallel = (double)m * (double)n * (double)k >= (double)PARALLEL_MIN_MACS && tiles > 1;
#ifdef _OPENMP
    /* called from a parallel loop (e.g. over a batch): stay on this thread */
    if (omp_in_parallel()) parallel = false;
#endif
    int failed = 0;
#pragma omp parallel if (parallel) reduction(| : failed)
    {
        float *apack = alloc_floats(mc_max * kc_max), *bpack = alloc_floats(kc_max * nc_max);
        /* every thread must reach the loop; one without buffers just records the failure */
#pragma omp for schedule(dynamic, 1)
        for (int64_t t = 0; t < tiles; t++) {
            if (!apack || !bpack) {
                failed = 1;
                continue;
            }
            int64_t i_begin = (t % tiles_m) * MC, j_begin = (t / tiles_m) * NC;
            int64_t i_end = i_begin + MC < m ? i_begin + MC : m, j_end = j_begin + NC < n ? j_begin + NC : n;
            compute_tile(&g, i_begin, i_end, j_begin, j_end, apack, bpack);
        }
        free(apack);
        free(bpack);
    }
    if (failed)
        return korch_error(KORCH_ERR_OUT_OF_MEMORY, "sgemm %lldx%lldx%lld: cannot allocate packing buffers",
                           (long long)m, (long long)n, (long long)k);
    return KORCH_OK;
}
