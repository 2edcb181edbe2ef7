/* Reference SGEMM: pack, block, and let gcc vectorise a small register tile.
 *
 * For each block of KC values of k (in order): op(B)[pc:pc+kc, :] is packed
 * into NR-column panels and op(A)[:, pc:pc+kc] into MR-row panels, both
 * k-major, so the micro-kernel reads two contiguous streams. The output is
 * then cut into MC x NC tiles shared out among the threads; within a tile a
 * B panel (kc x NR, L1-sized) is reused against every A panel of the tile's
 * A block (MC x kc, L2-sized). The micro-kernel keeps an MR x NR accumulator
 * in registers; with MR and NR compile-time constants and the j loop marked
 * `omp simd`, gcc -O2 turns it into packed multiplies and adds. */
#include "ops/gemm_kernel.h"

#include <stdlib.h>
#include <string.h>

#ifdef _OPENMP
#include <omp.h>
#endif

enum {
    MR = 6,    /* rows of the register tile */
    NR = 8,    /* columns of the register tile: two SSE vectors */
    KC = 256,  /* depth of one packed block */
    MC = 96,   /* rows of a thread tile (a multiple of MR) */
    NC = 512,  /* columns of a thread tile (a multiple of NR) */
};

/* Below this many multiply-adds a parallel region costs more than it saves. */
#define PARALLEL_MIN_MACS ((int64_t)1 << 16)

static void micro_kernel(int64_t kc, const float *restrict a, const float *restrict b, float tile[MR][NR]) {
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

/* C[0:rows, 0:cols] = alpha * tile + beta * C (beta == 0: C is not read). */
static void store_tile(float tile[MR][NR], int rows, int cols, float alpha, float beta, float *c, int64_t ldc) {
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

/* Panel `ip` of op(A)[:, pc:pc+kc]: dst[p*MR + i] = op(A)[ip*MR + i][pc + p], zero past row m. */
static void pack_a_panel(bool trans, int64_t m, int64_t ip, int64_t pc, int64_t kc, const float *a, int64_t lda,
                         float *dst) {
    int64_t i0 = ip * MR;
    int rows = (int)(m - i0 < MR ? m - i0 : MR);
    for (int64_t p = 0; p < kc; p++) {
        float *d = dst + p * MR;
        for (int i = 0; i < rows; i++) d[i] = trans ? a[(pc + p) * lda + i0 + i] : a[(i0 + i) * lda + pc + p];
        for (int i = rows; i < MR; i++) d[i] = 0.0f;
    }
}

/* Panel `jp` of op(B)[pc:pc+kc, :]: dst[p*NR + j] = op(B)[pc + p][jp*NR + j], zero past column n. */
static void pack_b_panel(bool trans, int64_t n, int64_t jp, int64_t pc, int64_t kc, const float *b, int64_t ldb,
                         float *dst) {
    int64_t j0 = jp * NR;
    int cols = (int)(n - j0 < NR ? n - j0 : NR);
    for (int64_t p = 0; p < kc; p++) {
        float *d = dst + p * NR;
        for (int j = 0; j < cols; j++) d[j] = trans ? b[(j0 + j) * ldb + pc + p] : b[(pc + p) * ldb + j0 + j];
        for (int j = cols; j < NR; j++) d[j] = 0.0f;
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

korch_status korch_sgemm(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, float alpha, const float *a,
                         int64_t lda, const float *b, int64_t ldb, float beta, float *c, int64_t ldc) {
    if (m <= 0 || n <= 0) return KORCH_OK;
    if (k <= 0 || alpha == 0.0f) {
        scale_c(m, n, beta, c, ldc);
        return KORCH_OK;
    }
    int64_t a_panels = (m + MR - 1) / MR, b_panels = (n + NR - 1) / NR;
    int64_t kc_max = k < KC ? k : KC;
    float *apack = alloc_floats(a_panels * MR * kc_max);
    float *bpack = alloc_floats(b_panels * NR * kc_max);
    if (!apack || !bpack) {
        free(apack);
        free(bpack);
        return korch_error(KORCH_ERR_OUT_OF_MEMORY, "sgemm %lldx%lldx%lld: cannot allocate packing buffers",
                           (long long)m, (long long)n, (long long)k);
    }
    int64_t tiles_m = (m + MC - 1) / MC, tiles_n = (n + NC - 1) / NC;
    int64_t tiles = tiles_m * tiles_n;
    bool parallel = (double)m * (double)n * (double)k >= (double)PARALLEL_MIN_MACS && tiles > 1;
#ifdef _OPENMP
    /* called from a parallel loop (e.g. over a batch): stay on this thread */
    if (omp_in_parallel()) parallel = false;
#endif

#pragma omp parallel if (parallel)
    for (int64_t pc = 0; pc < k; pc += KC) {
        int64_t kc = k - pc < KC ? k - pc : KC;
        float block_beta = pc == 0 ? beta : 1.0f;
#pragma omp for schedule(static) nowait
        for (int64_t jp = 0; jp < b_panels; jp++) pack_b_panel(trans_b, n, jp, pc, kc, b, ldb, bpack + jp * NR * kc);
#pragma omp for schedule(static)
        for (int64_t ip = 0; ip < a_panels; ip++) pack_a_panel(trans_a, m, ip, pc, kc, a, lda, apack + ip * MR * kc);

#pragma omp for schedule(dynamic, 1)
        for (int64_t t = 0; t < tiles; t++) {
            int64_t i_begin = (t % tiles_m) * MC, j_begin = (t / tiles_m) * NC;
            int64_t i_end = i_begin + MC < m ? i_begin + MC : m, j_end = j_begin + NC < n ? j_begin + NC : n;
            float tile[MR][NR];
            for (int64_t j = j_begin; j < j_end; j += NR) {
                const float *bp = bpack + (j / NR) * NR * kc;
                int cols = (int)(j_end - j < NR ? j_end - j : NR);
                for (int64_t i = i_begin; i < i_end; i += MR) {
                    int rows = (int)(i_end - i < MR ? i_end - i : MR);
                    micro_kernel(kc, apack + (i / MR) * MR * kc, bp, tile);
                    store_tile(tile, rows, cols, alpha, block_beta, c + i * ldc + j, ldc);
                }
            }
        }
        /* the implicit barrier above keeps the packs alive until every tile is done */
    }
    free(apack);
    free(bpack);
    return KORCH_OK;
}
