/* The interpreter's layout primitives row by row when every map is affine
 * but may leave the input (concat, pad, pooling windows).
 *
 * The definition (ir/pgraph.h): output element o is input p's element at
 * map[p](o) for the first p whose map is in bounds, else the pad value.
 * The generic loop (interpret.c) evaluates every map at every element
 * (korch_index_map_eval: a product per coefficient, per input dimension),
 * which was 17% of the interpreter's time on yolov4 (its concats and the
 * SPP max-pool windows). Along one row of the innermost output dimension
 * an affine map (no div, mod or table) reads input element base + step * j
 * and is in bounds for j in one interval [lo, hi), computed per row from
 * the same integer terms; the first map in bounds at each j is found by
 * giving each map, in order, the still uncovered parts of its interval.
 * The same elements are copied, byte for byte, and the pad is the same
 * bytes (tests/ir/test_interpret_paths.c compares with the definition). */
#include <string.h>

#ifdef _OPENMP
#include <omp.h>
#endif

#include "ir/interpret_rows.h"

static int64_t floor_div(int64_t a, int64_t b) { return a / b - ((a % b != 0) && ((a < 0) != (b < 0))); }

bool korch_layout_rows_apply(const korch_prim_layout *l, korch_tensor **in, korch_tensor *out, const void *pad,
                             int64_t parallel_min) {
    int r = out->shape.rank, nm = l->n_maps;
    int64_t total = korch_tensor_numel(out);
    if (r < 1 || nm < 1 || nm > KORCH_MAX_RANK || total <= 0) return false;
    for (int p = 0; p < nm; p++) {
        const korch_index_map *m = &l->maps[p];
        if (!in[p] || m->input_rank != in[p]->shape.rank) return false;
        for (int k = 0; k < m->input_rank; k++)
            if (m->terms[k].div > 1 || m->terms[k].mod > 0 || m->terms[k].table) return false;
    }
    size_t esize = korch_dtype_size(out->dtype);
    int64_t inner = out->shape.dims[r - 1], rows = total / inner;
#pragma omp parallel if (total >= parallel_min)
    {
        int t = 0, nt = 1;
#ifdef _OPENMP
        t = omp_get_thread_num();
        nt = omp_get_num_threads();
#endif
        int64_t begin = rows * t / nt, end = rows * (t + 1) / nt, o[KORCH_MAX_RANK] = {0};
        int64_t rest = begin;
        for (int k = r - 2; k >= 0; k--) { /* the coordinates of row begin */
            o[k] = rest % out->shape.dims[k];
            rest /= out->shape.dims[k];
        }
        for (int64_t row = begin; row < end; row++) {
            char *dst = (char *)out->data + row * inner * (int64_t)esize;
            /* uncovered parts of [0, inner): at most one more per map */
            int64_t seg_lo[KORCH_MAX_RANK + 1], seg_hi[KORCH_MAX_RANK + 1];
            int n_seg = 1;
            seg_lo[0] = 0;
            seg_hi[0] = inner;
            for (int p = 0; p < nm && n_seg > 0; p++) {
                const korch_index_map *m = &l->maps[p];
                const korch_shape *is = &in[p]->shape;
                int64_t lo = 0, hi = inner, base = 0, step = 0, stride = 1;
                for (int k = m->input_rank - 1; k >= 0; k--) {
                    const korch_index_term *tm = &m->terms[k];
                    int64_t v = tm->offset, c = tm->coef[r - 1], d = is->dims[k];
                    for (int j = 0; j < r - 1; j++) v += tm->coef[j] * o[j];
                    /* 0 <= v + c * j < d */
                    int64_t a, b; /* j in [a, b) */
                    if (c == 0) {
                        a = 0;
                        b = v >= 0 && v < d ? inner : 0;
                    } else if (c > 0) {
                        a = v >= 0 ? 0 : floor_div(-v + c - 1, c);
                        b = d - 1 - v < 0 ? 0 : floor_div(d - 1 - v, c) + 1;
                    } else {
                        a = v - d < 0 ? 0 : floor_div(v - d, -c) + 1;
                        b = v < 0 ? 0 : floor_div(v, -c) + 1;
                    }
                    if (a > lo) lo = a;
                    if (b < hi) hi = b;
                    base += v * stride;
                    step += c * stride;
                    stride *= d;
                }
                if (lo >= hi) continue;
                const char *src = in[p]->data;
                int kept = 0;
                int64_t keep_lo[KORCH_MAX_RANK + 1], keep_hi[KORCH_MAX_RANK + 1];
                for (int s = 0; s < n_seg; s++) {
                    int64_t x0 = seg_lo[s] > lo ? seg_lo[s] : lo, x1 = seg_hi[s] < hi ? seg_hi[s] : hi;
                    if (x0 >= x1) {
                        keep_lo[kept] = seg_lo[s];
                        keep_hi[kept++] = seg_hi[s];
                        continue;
                    }
                    if (step == 1) {
                        memcpy(dst + x0 * (int64_t)esize, src + (base + x0) * (int64_t)esize, (size_t)(x1 - x0) * esize);
                    } else if (esize == 4) {
                        const uint32_t *s4 = (const uint32_t *)(const void *)src + base;
                        uint32_t *d4 = (uint32_t *)(void *)dst;
                        for (int64_t j = x0; j < x1; j++) d4[j] = s4[j * step];
                    } else {
                        for (int64_t j = x0; j < x1; j++)
                            memcpy(dst + j * (int64_t)esize, src + (base + j * step) * (int64_t)esize, esize);
                    }
                    if (seg_lo[s] < x0) {
                        keep_lo[kept] = seg_lo[s];
                        keep_hi[kept++] = x0;
                    }
                    if (x1 < seg_hi[s]) {
                        keep_lo[kept] = x1;
                        keep_hi[kept++] = seg_hi[s];
                    }
                }
                n_seg = kept;
                memcpy(seg_lo, keep_lo, (size_t)kept * sizeof *seg_lo);
                memcpy(seg_hi, keep_hi, (size_t)kept * sizeof *seg_hi);
            }
            for (int s = 0; s < n_seg; s++)
                for (int64_t j = seg_lo[s]; j < seg_hi[s]; j++) memcpy(dst + j * (int64_t)esize, pad, esize);
            for (int k = r - 2; k >= 0; k--) { /* the next row */
                if (++o[k] < out->shape.dims[k]) break;
                o[k] = 0;
            }
        }
    }
    return true;
}
