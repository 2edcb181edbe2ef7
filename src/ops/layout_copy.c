/* The two copy kernels behind every layout operator. Both walk the
 * destination in row-major order, one "row" (innermost dimension) at a time,
 * and split rows across OpenMP threads: each thread positions an odometer
 * once at its first row and then steps it. Transpose-like views, whose rows
 * are strided in the source, take a cache-tiled path instead.
 * Source offsets are signed: reversed slices have negative strides. */
#include <string.h>

#include "ops/layout.h"

#ifdef _OPENMP
#include <omp.h>
#endif

/* Below this many elements, threads cost more than they save. */
#define PARALLEL_MIN_ELEMENTS 32768

/* Copies n elements of size esize from src (stride `stride` elements) to dense dst. */
static void copy_row(char *dst, const char *src, size_t esize, int64_t n, int64_t stride) {
    if (stride == 1) {
        memcpy(dst, src, (size_t)n * esize);
        return;
    }
    switch (esize) {
    case 1:
        for (int64_t i = 0; i < n; i++) dst[i] = src[i * stride];
        break;
    case 2:
        for (int64_t i = 0; i < n; i++) memcpy(dst + 2 * i, src + 2 * i * stride, 2);
        break;
    case 4: {
        /* memcpy of a constant 4 or 8 bytes compiles to one load and store */
        for (int64_t i = 0; i < n; i++) memcpy(dst + 4 * i, src + 4 * i * stride, 4);
        break;
    }
    case 8:
        for (int64_t i = 0; i < n; i++) memcpy(dst + 8 * i, src + 8 * i * stride, 8);
        break;
    default:
        for (int64_t i = 0; i < n; i++) memcpy(dst + (size_t)i * esize, src + i * stride * (int64_t)esize, esize);
        break;
    }
}

/* Drops unit dims and merges dims that are contiguous with each other, so
 * that e.g. a Concat piece or an inner-dim Slice becomes a few long memcpys.
 * Returns false when the view is empty. */
static bool simplify_view(const korch_strided_view *in, korch_strided_view *out) {
    out->rank = 0;
    out->offset = in->offset;
    for (int k = 0; k < in->rank; k++) {
        int64_t d = in->dims[k], s = in->strides[k];
        if (d == 0) return false;
        if (d == 1) continue;
        int r = out->rank;
        if (r > 0 && out->strides[r - 1] == s * d) {
            out->dims[r - 1] *= d;
            out->strides[r - 1] = s;
            continue;
        }
        out->dims[r] = d;
        out->strides[r] = s;
        out->rank++;
    }
    return true;
}

/* dst[j] = src[map[j]], or *fill where map[j] < 0. */
static void copy_mapped_row(char *dst, const char *src, size_t esize, int64_t n, const int64_t *map,
                            const void *fill) {
#define KORCH_MAPPED_ROW(size)                                                                     \
    for (int64_t j = 0; j < n; j++)                                                                \
        memcpy(dst + (size_t)j * (size), map[j] < 0 ? fill : src + (size_t)map[j] * (size), (size));
    switch (esize) {
    case 1: KORCH_MAPPED_ROW(1) break;
    case 2: KORCH_MAPPED_ROW(2) break;
    case 4: KORCH_MAPPED_ROW(4) break;
    case 8: KORCH_MAPPED_ROW(8) break;
    default: KORCH_MAPPED_ROW(esize) break;
    }
#undef KORCH_MAPPED_ROW
}

static int64_t outer_rows(int rank, const int64_t *dims) {
    int64_t rows = 1;
    for (int k = 0; k + 1 < rank; k++) rows *= dims[k];
    return rows;
}

/* Sets idx (over the first rank-1 dims) to the coordinates of row `row`. */
static void seek_row(int rank, const int64_t *dims, int64_t row, int64_t *idx) {
    for (int k = rank - 2; k >= 0; k--) {
        idx[k] = row % dims[k];
        row /= dims[k];
    }
}

/* Advances idx (over the first rank-1 dims) to the next row. */
static void next_row(int rank, const int64_t *dims, int64_t *idx) {
    for (int k = rank - 2; k >= 0; k--) {
        if (++idx[k] < dims[k]) return;
        idx[k] = 0;
    }
}

static void thread_range(int64_t n, int64_t *begin, int64_t *end) {
    int64_t threads = 1, id = 0;
#ifdef _OPENMP
    threads = omp_get_num_threads();
    id = omp_get_thread_num();
#endif
    *begin = n * id / threads;
    *end = n * (id + 1) / threads;
}

/* Tiles of the blocked path, in elements: TILE_K along the contiguous
 * source dim, TILE_I along the destination's last dim. */
#define TILE_K 32
#define TILE_I 32

/* dst[kk * dst_k + ii] = src[kk + ii * src_i] for kk < nk, ii < ni. */
static void copy_tile(char *dst, int64_t dst_k, const char *src, int64_t src_i, size_t esize, int64_t nk, int64_t ni) {
#define KORCH_TILE_LOOP(size)                                                                      \
    for (int64_t kk = 0; kk < nk; kk++)                                                            \
        for (int64_t ii = 0; ii < ni; ii++)                                                        \
            memcpy(dst + (size_t)(kk * dst_k + ii) * (size), src + (kk + ii * src_i) * (int64_t)(size), (size));
    switch (esize) {
    case 1: KORCH_TILE_LOOP(1) break;
    case 2: KORCH_TILE_LOOP(2) break;
    case 4: KORCH_TILE_LOOP(4) break;
    case 8: KORCH_TILE_LOOP(8) break;
    default: KORCH_TILE_LOOP(esize) break;
    }
#undef KORCH_TILE_LOOP
}

/* A transpose-like view: the destination's last dim is strided in the
 * source while source dim k is contiguous. Copying row by row would touch a
 * new cache line per element; square tiles over (k, last) make both the
 * reads and the writes run along cache lines. */
static void copy_view_tiled(char *d, const char *s, size_t esize, const korch_strided_view *v, int k) {
    int last = v->rank - 1;
    int64_t dst_strides[KORCH_LAYOUT_MAX_RANK];
    int64_t acc = 1;
    for (int j = last; j >= 0; j--) {
        dst_strides[j] = acc;
        acc *= v->dims[j];
    }
    int m = 0;
    int64_t odims[KORCH_LAYOUT_MAX_RANK], osrc[KORCH_LAYOUT_MAX_RANK], odst[KORCH_LAYOUT_MAX_RANK], outer = 1;
    for (int j = 0; j < last; j++) {
        if (j == k) continue;
        odims[m] = v->dims[j];
        osrc[m] = v->strides[j];
        odst[m] = dst_strides[j];
        outer *= odims[m++];
    }
    int64_t nk = v->dims[k], ni = v->dims[last], src_i = v->strides[last], dst_k = dst_strides[k];
    int64_t k_blocks = (nk + TILE_K - 1) / TILE_K, tasks = outer * k_blocks;
#pragma omp parallel for schedule(static) if (outer * nk * ni >= PARALLEL_MIN_ELEMENTS && tasks > 1)
    for (int64_t t = 0; t < tasks; t++) {
        int64_t o = t / k_blocks, k0 = (t % k_blocks) * TILE_K;
        int64_t src_off = v->offset + k0, dst_off = k0 * dst_k;
        for (int j = m - 1; j >= 0; j--) {
            int64_t c = o % odims[j];
            o /= odims[j];
            src_off += c * osrc[j];
            dst_off += c * odst[j];
        }
        int64_t bk = nk - k0 < TILE_K ? nk - k0 : TILE_K;
        for (int64_t i0 = 0; i0 < ni; i0 += TILE_I) {
            int64_t bi = ni - i0 < TILE_I ? ni - i0 : TILE_I;
            copy_tile(d + (size_t)(dst_off + i0) * esize, dst_k, s + (src_off + i0 * src_i) * (int64_t)esize, src_i,
                      esize, bk, bi);
        }
    }
}

void korch_layout_copy_view(void *dst, const void *src, size_t esize, const korch_strided_view *view) {
    korch_strided_view v;
    if (!simplify_view(view, &v)) return;
    char *d = dst;
    const char *s = src;
    if (v.rank == 0) {
        memcpy(d, s + (size_t)v.offset * esize, esize);
        return;
    }
    if (v.strides[v.rank - 1] != 1) {
        for (int k = v.rank - 2; k >= 0; k--)
            if (v.strides[k] == 1) {
                copy_view_tiled(d, s, esize, &v, k);
                return;
            }
    }
    int r = v.rank;
    int64_t n = v.dims[r - 1], stride = v.strides[r - 1];
    int64_t rows = outer_rows(r, v.dims);
#pragma omp parallel if (rows * n >= PARALLEL_MIN_ELEMENTS && rows > 1)
    {
        int64_t begin, end, idx[KORCH_LAYOUT_MAX_RANK];
        thread_range(rows, &begin, &end);
        if (begin < end) seek_row(r, v.dims, begin, idx);
        for (int64_t row = begin; row < end; row++) {
            int64_t off = v.offset;
            for (int k = 0; k + 1 < r; k++) off += idx[k] * v.strides[k];
            copy_row(d + (size_t)(row * n) * esize, s + off * (int64_t)esize, esize, n, stride);
            next_row(r, v.dims, idx);
        }
    }
}

void korch_layout_permuted_view(const korch_shape *shape, const int *perm, korch_strided_view *view) {
    int64_t strides[KORCH_MAX_RANK];
    korch_shape_strides(shape, strides);
    view->rank = shape->rank;
    view->offset = 0;
    for (int k = 0; k < shape->rank; k++) {
        view->dims[k] = shape->dims[perm[k]];
        view->strides[k] = strides[perm[k]];
    }
}

void korch_layout_gather_maps(void *dst, const void *src, size_t esize, int rank, const int64_t *out_dims,
                              const int64_t *in_dims, int64_t *const *maps, const void *fill) {
    char *d = dst;
    const char *s = src;
    if (rank == 0) {
        memcpy(d, s, esize);
        return;
    }
    for (int k = 0; k < rank; k++)
        if (out_dims[k] == 0) return;
    int64_t in_strides[KORCH_MAX_RANK];
    korch_shape in_shape = korch_shape_make(rank, in_dims);
    korch_shape_strides(&in_shape, in_strides);
    int64_t n = out_dims[rank - 1];
    const int64_t *inner = maps[rank - 1];
    int64_t rows = outer_rows(rank, out_dims);
#pragma omp parallel if (rows * n >= PARALLEL_MIN_ELEMENTS && rows > 1)
    {
        int64_t begin, end, idx[KORCH_MAX_RANK];
        thread_range(rows, &begin, &end);
        if (begin < end) seek_row(rank, out_dims, begin, idx);
        int64_t prev_base = -2; /* -1 marks a filled row */
        for (int64_t row = begin; row < end; row++) {
            char *out = d + (size_t)(row * n) * esize;
            int64_t base = 0;
            bool filled = false;
            for (int k = 0; k + 1 < rank && !filled; k++) {
                int64_t m = maps[k][idx[k]];
                if (m < 0) filled = true;
                else base += m * in_strides[k];
            }
            if (filled) base = -1;
            /* rows from the same source row are identical (upsampling, edge
             * and reflect padding): copy the previous one */
            if (row > begin && base == prev_base) {
                memcpy(out, out - (size_t)n * esize, (size_t)n * esize);
            } else if (filled) {
                for (int64_t j = 0; j < n; j++) memcpy(out + (size_t)j * esize, fill, esize);
            } else {
                copy_mapped_row(out, s + (size_t)base * esize, esize, n, inner, fill);
            }
            prev_base = base;
            next_row(rank, out_dims, idx);
        }
    }
}

korch_status korch_layout_run_copy(korch_op_ctx *ctx) {
    size_t bytes = korch_tensor_bytes(ctx->outputs[0]);
    if (bytes) memcpy(ctx->outputs[0]->data, ctx->inputs[0]->data, bytes);
    return KORCH_OK;
}
