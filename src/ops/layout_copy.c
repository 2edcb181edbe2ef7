/* The two copy kernels behind every layout operator. Both walk the
 * destination in row-major order, one "row" (innermost dimension) at a time,
 * and split rows across OpenMP threads: each thread positions an odometer
 * once at its first row and then steps it. */
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
        for (int64_t i = 0; i < n; i++) memcpy(dst + (size_t)i * esize, src + (size_t)(i * stride) * esize, esize);
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

void korch_layout_copy_view(void *dst, const void *src, size_t esize, const korch_strided_view *view) {
    korch_strided_view v;
    if (!simplify_view(view, &v)) return;
    char *d = dst;
    const char *s = src;
    if (v.rank == 0) {
        memcpy(d, s + (size_t)v.offset * esize, esize);
        return;
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
        for (int64_t row = begin; row < end; row++) {
            char *out = d + (size_t)(row * n) * esize;
            int64_t base = 0;
            bool filled = false;
            for (int k = 0; k + 1 < rank && !filled; k++) {
                int64_t m = maps[k][idx[k]];
                if (m < 0) filled = true;
                else base += m * in_strides[k];
            }
            if (filled) {
                for (int64_t j = 0; j < n; j++) memcpy(out + (size_t)j * esize, fill, esize);
            } else {
                copy_mapped_row(out, s + (size_t)base * esize, esize, n, inner, fill);
            }
            next_row(rank, out_dims, idx);
        }
    }
}

korch_status korch_layout_run_copy(korch_op_ctx *ctx) {
    size_t bytes = korch_tensor_bytes(ctx->outputs[0]);
    if (bytes) memcpy(ctx->outputs[0]->data, ctx->inputs[0]->data, bytes);
    return KORCH_OK;
}
