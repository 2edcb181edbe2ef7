/* A tensor split into kept and reduced dims, for reductions and the
 * normalisations that reduce: output element o of the kept dims, and a visit
 * of the reduced elements that belong to it. */
#ifndef KORCH_OPS_REDUCE_LAYOUT_H
#define KORCH_OPS_REDUCE_LAYOUT_H

#include <stdbool.h>
#include <string.h>

#include "core/tensor.h"

/* Adjacent dims of the same kind are merged (row-major neighbours stay
 * contiguous), so a reduction over trailing dims is one strided run. */
typedef struct korch_reduce_layout {
    int n_kept, n_red;
    int64_t kept_dims[KORCH_MAX_RANK], kept_strides[KORCH_MAX_RANK];
    int64_t red_dims[KORCH_MAX_RANK], red_strides[KORCH_MAX_RANK];
    int64_t red_count, out_count;
} korch_reduce_layout;

/* mask[d]: dim d of x is reduced. */
static inline void korch_reduce_layout_init(korch_reduce_layout *L, const korch_shape *x, const bool *mask) {
    int64_t strides[KORCH_MAX_RANK];
    korch_shape_strides(x, strides);
    memset(L, 0, sizeof *L);
    L->red_count = L->out_count = 1;
    int last = -1; /* kind of the previous dim: 0 kept, 1 reduced */
    for (int d = 0; d < x->rank; d++) {
        bool red = mask[d];
        int64_t *dims = red ? L->red_dims : L->kept_dims, *st = red ? L->red_strides : L->kept_strides;
        int *n = red ? &L->n_red : &L->n_kept;
        if (red) L->red_count *= x->dims[d];
        else L->out_count *= x->dims[d];
        if (last == (int)red) {
            dims[*n - 1] *= x->dims[d];
            st[*n - 1] = strides[d];
        } else {
            dims[*n] = x->dims[d];
            st[*n] = strides[d];
            (*n)++;
        }
        last = red;
    }
}

/* Element offset in x of the first reduced element of output o. */
static inline int64_t korch_reduce_base(const korch_reduce_layout *L, int64_t o) {
    int64_t off = 0;
    for (int d = L->n_kept - 1; d >= 0; d--) {
        off += (o % L->kept_dims[d]) * L->kept_strides[d];
        o /= L->kept_dims[d];
    }
    return off;
}

/* Runs BODY for every reduced element of the output at `base`, with `v` its
 * value (type T, read from x) and `at` its element offset in x. */
#define KORCH_REDUCE_VISIT(T, x, L, base, BODY)                                                    \
    do {                                                                                           \
        int64_t last_ = (L)->n_red ? (L)->red_dims[(L)->n_red - 1] : 1;                            \
        int64_t step_ = (L)->n_red ? (L)->red_strides[(L)->n_red - 1] : 0;                         \
        int64_t rows_ = last_ ? (L)->red_count / last_ : 0;                                        \
        for (int64_t q_ = 0; q_ < rows_; q_++) {                                                   \
            int64_t off_ = (base), rem_ = q_;                                                      \
            for (int d_ = (L)->n_red - 2; d_ >= 0; d_--) {                                         \
                off_ += (rem_ % (L)->red_dims[d_]) * (L)->red_strides[d_];                         \
                rem_ /= (L)->red_dims[d_];                                                         \
            }                                                                                      \
            for (int64_t j_ = 0; j_ < last_; j_++) {                                               \
                int64_t at = off_ + j_ * step_;                                                    \
                T v = (x)[at];                                                                     \
                (void)at;                                                                          \
                BODY;                                                                              \
            }                                                                                      \
        }                                                                                          \
    } while (0)

#endif
