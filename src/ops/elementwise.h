/* Shared machinery of the elementwise operators (arithmetic, comparisons,
 * activations, Where, variadic Min/Max/Sum/Mean): a broadcast loop that walks
 * the output in contiguous runs, dtype lists for kernel dispatch, and the
 * checks every elementwise shape function repeats. */
#ifndef KORCH_OPS_ELEMENTWISE_H
#define KORCH_OPS_ELEMENTWISE_H

#include <math.h>
#include <stdint.h>

#include "ops/op.h"

#define KORCH_EW_MAX_INPUTS 3
/* Below this many elements a kernel runs on one thread: waking the team costs more. */
#define KORCH_EW_PARALLEL_MIN 8192

/* A broadcast map over `out`, with dims merged wherever every input treats
 * them alike so that the innermost merged dim (`inner` elements) is as long as
 * possible. Along it, input k advances by step[k], which is 0 (broadcast) or 1.
 * The work is cut into `pieces` (runs of at most one row) for the threads. */
typedef struct korch_ew_plan {
    int n_inputs;
    int rank; /* outer merged dims, excluding the inner one */
    int64_t dims[KORCH_MAX_RANK];
    int64_t strides[KORCH_EW_MAX_INPUTS][KORCH_MAX_RANK];
    int64_t inner;
    int64_t step[KORCH_EW_MAX_INPUTS];
    int64_t pieces_per_row, chunk, pieces;
    bool parallel; /* worth waking the threads for */
} korch_ew_plan;

/* Each inputs[k] must broadcast to `out` (checked by the shape function). */
void korch_ew_plan_init(korch_ew_plan *plan, const korch_shape *out, int n_inputs, const korch_shape *const *inputs);
/* Piece t covers output elements [*begin, *end); offsets[k] is input k's element at *begin. */
void korch_ew_plan_piece(const korch_ew_plan *plan, int64_t t, int64_t *begin, int64_t *end, int64_t *offsets);

/* Y[i] = EXPR for every output element, where EXPR reads `a` (an element of pa,
 * type TA) and `b` (of pb, type TB). The contiguous stride patterns get loops
 * of their own that the compiler vectorises (omp simd: no loop-carried
 * dependences, and y may alias a at the same index). */
#define KORCH_EW_LOOP2(plan, TA, pa, TB, pb, TY, py, EXPR)                                             \
    do {                                                                                               \
        const korch_ew_plan *ew_p_ = (plan);                                                           \
        const TA *ew_pa_ = (pa);                                                                       \
        const TB *ew_pb_ = (pb);                                                                       \
        TY *ew_py_ = (py);                                                                             \
        _Pragma("omp parallel for schedule(static) if (ew_p_->parallel)")                              \
        for (int64_t ew_t_ = 0; ew_t_ < ew_p_->pieces; ew_t_++) {                                      \
            int64_t ew_b_, ew_e_, ew_o_[KORCH_EW_MAX_INPUTS];                                          \
            korch_ew_plan_piece(ew_p_, ew_t_, &ew_b_, &ew_e_, ew_o_);                                  \
            const TA *ew_ra_ = ew_pa_ + ew_o_[0];                                                      \
            const TB *ew_rb_ = ew_pb_ + ew_o_[1];                                                      \
            TY *ew_ry_ = ew_py_ + ew_b_;                                                               \
            int64_t ew_n_ = ew_e_ - ew_b_, ew_sa_ = ew_p_->step[0], ew_sb_ = ew_p_->step[1];           \
            if (ew_sa_ == 1 && ew_sb_ == 1) {                                                          \
                _Pragma("omp simd") for (int64_t j = 0; j < ew_n_; j++) {                              \
                    TA a = ew_ra_[j];                                                                  \
                    TB b = ew_rb_[j];                                                                  \
                    ew_ry_[j] = (EXPR);                                                                \
                }                                                                                      \
            } else if (ew_sa_ == 1 && ew_sb_ == 0) {                                                   \
                TB b = ew_rb_[0];                                                                      \
                _Pragma("omp simd") for (int64_t j = 0; j < ew_n_; j++) {                              \
                    TA a = ew_ra_[j];                                                                  \
                    ew_ry_[j] = (EXPR);                                                                \
                }                                                                                      \
            } else if (ew_sa_ == 0 && ew_sb_ == 1) {                                                   \
                TA a = ew_ra_[0];                                                                      \
                _Pragma("omp simd") for (int64_t j = 0; j < ew_n_; j++) {                              \
                    TB b = ew_rb_[j];                                                                  \
                    ew_ry_[j] = (EXPR);                                                                \
                }                                                                                      \
            } else {                                                                                   \
                for (int64_t j = 0; j < ew_n_; j++) {                                                  \
                    TA a = ew_ra_[j * ew_sa_];                                                         \
                    TB b = ew_rb_[j * ew_sb_];                                                         \
                    ew_ry_[j] = (EXPR);                                                                \
                }                                                                                      \
            }                                                                                          \
        }                                                                                              \
    } while (0)

/* Y[i] = EXPR over three broadcast inputs `a`, `b`, `c` (for Where). */
#define KORCH_EW_LOOP3(plan, TA, pa, TB, pb, TC, pc, TY, py, EXPR)                                     \
    do {                                                                                               \
        const korch_ew_plan *ew_p_ = (plan);                                                           \
        const TA *ew_pa_ = (pa);                                                                       \
        const TB *ew_pb_ = (pb);                                                                       \
        const TC *ew_pc_ = (pc);                                                                       \
        TY *ew_py_ = (py);                                                                             \
        _Pragma("omp parallel for schedule(static) if (ew_p_->parallel)")                              \
        for (int64_t ew_t_ = 0; ew_t_ < ew_p_->pieces; ew_t_++) {                                      \
            int64_t ew_b_, ew_e_, ew_o_[KORCH_EW_MAX_INPUTS];                                          \
            korch_ew_plan_piece(ew_p_, ew_t_, &ew_b_, &ew_e_, ew_o_);                                  \
            const TA *ew_ra_ = ew_pa_ + ew_o_[0];                                                      \
            const TB *ew_rb_ = ew_pb_ + ew_o_[1];                                                      \
            const TC *ew_rc_ = ew_pc_ + ew_o_[2];                                                      \
            TY *ew_ry_ = ew_py_ + ew_b_;                                                               \
            int64_t ew_n_ = ew_e_ - ew_b_;                                                             \
            int64_t ew_sa_ = ew_p_->step[0], ew_sb_ = ew_p_->step[1], ew_sc_ = ew_p_->step[2];         \
            for (int64_t j = 0; j < ew_n_; j++) {                                                      \
                TA a = ew_ra_[j * ew_sa_];                                                             \
                TB b = ew_rb_[j * ew_sb_];                                                             \
                TC c = ew_rc_[j * ew_sc_];                                                             \
                ew_ry_[j] = (EXPR);                                                                    \
            }                                                                                          \
        }                                                                                              \
    } while (0)

/* Y[i] = EXPR over one input `a` of the same shape. */
#define KORCH_EW_LOOP1(n, TA, pa, TY, py, EXPR)                                                        \
    do {                                                                                               \
        const TA *ew_pa_ = (pa);                                                                       \
        TY *ew_py_ = (py);                                                                             \
        int64_t ew_n_ = (n);                                                                           \
        _Pragma("omp parallel for simd schedule(static) if (ew_n_ >= KORCH_EW_PARALLEL_MIN)")          \
        for (int64_t j = 0; j < ew_n_; j++) {                                                          \
            TA a = ew_pa_[j];                                                                          \
            ew_py_[j] = (EXPR);                                                                        \
        }                                                                                              \
    } while (0)

bool korch_ew_is_float(korch_dtype dtype);
bool korch_ew_is_signed(korch_dtype dtype);
bool korch_ew_is_unsigned(korch_dtype dtype);
bool korch_ew_is_numeric(korch_dtype dtype); /* float32/64 or any integer */

/* Fails with KORCH_ERR_UNSUPPORTED naming input i's dtype and `what` (e.g.
 * "float32 or float64") unless ok(dtype). */
korch_status korch_ew_require(const korch_op_ctx *ctx, int i, bool (*ok)(korch_dtype), const char *what);
/* Inputs first..last (present ones) must all have input `first`'s dtype. */
korch_status korch_ew_require_same_dtype(const korch_op_ctx *ctx, int first, int last);

/* Shapes of a binary op's operands and result. From opset 7 this is numpy
 * broadcasting; before, the legacy `broadcast`/`axis` attributes apply and
 * *b is rewritten to B's shape aligned against A. */
korch_status korch_ew_binary_shapes(const korch_op_ctx *ctx, korch_shape *a, korch_shape *b, korch_shape *out);
/* numpy broadcast of every present input; fails naming the first misfit. */
korch_status korch_ew_broadcast_all(const korch_op_ctx *ctx, int first, int last, korch_shape *out);

/* Element i of a numeric or bool tensor, written from a double (integers
 * saturate to their range and NaN becomes 0, where a plain C cast would be
 * undefined) or from an int64 (wrapping, as C integer conversion does).
 * A switch per element: for the rare mixed-dtype paths only. */
void korch_ew_set_f64(korch_tensor *t, int64_t i, double v);
void korch_ew_set_i64(korch_tensor *t, int64_t i, int64_t v);

/* Integer arithmetic without undefined behaviour: wrap-around on overflow,
 * and x / 0 == 0 (the result is data-dependent, so failing would make a
 * kernel's success depend on values; 0 matches numpy's result). */
static inline int64_t korch_ew_div_i64(int64_t a, int64_t b) {
    if (b == 0) return 0;
    if (b == -1) return (int64_t)(0u - (uint64_t)a); /* INT64_MIN / -1 wraps */
    return a / b;
}
static inline uint64_t korch_ew_div_u64(uint64_t a, uint64_t b) { return b ? a / b : 0; }

/* double -> int64 with saturation; NaN -> 0 (a plain cast is UB out of range). */
static inline int64_t korch_ew_saturate_i64(double x) {
    if (isnan(x)) return 0;
    if (x >= 9223372036854775807.0) return INT64_MAX;
    if (x <= -9223372036854775808.0) return INT64_MIN;
    return (int64_t)x;
}
static inline uint64_t korch_ew_saturate_u64(double x) {
    if (isnan(x) || x <= 0) return 0;
    if (x >= 18446744073709551615.0) return UINT64_MAX;
    return (uint64_t)x;
}

#endif
