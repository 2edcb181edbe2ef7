/* The primitive interpreter: the numerical meaning of every primitive, in
 * plain C. Generated kernels and fission rules are checked against it. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifdef _OPENMP
#include <omp.h>
#endif

#include "core/half.h"
#include "core/vmath.h"
#include "ir/interpret_rows.h"
#include "ir/pgraph.h"
#include "ops/broadcast.h"
#include "ops/conv_kernel.h"
#include "ops/gemm_kernel.h"
#include "ops/op.h"

static double load(const korch_tensor *t, int64_t i) { return korch_tensor_get_f64(t, i); }

/* Elementwise and layout primitives of at least this many elements run on
 * every thread (each element is computed on its own: the same results). */
#define INTERPRET_PARALLEL_MIN ((int64_t)1 << 14)

/* This thread's contiguous share of [0, total) inside a parallel region. */
static void chunk_of(int64_t total, int64_t *begin, int64_t *end) {
    int t = 0, nt = 1;
#ifdef _OPENMP
    t = omp_get_thread_num();
    nt = omp_get_num_threads();
#endif
    *begin = total * t / nt;
    *end = total * (t + 1) / nt;
}

/* Integer stores saturate (NaN -> 0): the float-to-integer conversion of an
 * out-of-range value is undefined behaviour in C. */
static int64_t saturate(double v, double lo, double hi) {
    if (v != v) return 0;
    if (v <= lo) return (int64_t)lo;
    if (v >= hi) return (int64_t)hi;
    return (int64_t)v;
}

static void store(korch_tensor *t, int64_t i, double v) {
    switch (t->dtype) {
    case KORCH_DTYPE_FLOAT32: ((float *)t->data)[i] = (float)v; break;
    case KORCH_DTYPE_FLOAT64: ((double *)t->data)[i] = v; break;
    case KORCH_DTYPE_INT64: ((int64_t *)t->data)[i] = saturate(v, -9223372036854775808.0, 9223372036854774784.0); break;
    case KORCH_DTYPE_INT32: ((int32_t *)t->data)[i] = (int32_t)saturate(v, INT32_MIN, INT32_MAX); break;
    case KORCH_DTYPE_INT16: ((int16_t *)t->data)[i] = (int16_t)saturate(v, INT16_MIN, INT16_MAX); break;
    case KORCH_DTYPE_INT8: ((int8_t *)t->data)[i] = (int8_t)saturate(v, INT8_MIN, INT8_MAX); break;
    case KORCH_DTYPE_UINT8: ((uint8_t *)t->data)[i] = (uint8_t)saturate(v, 0, UINT8_MAX); break;
    case KORCH_DTYPE_UINT16: ((uint16_t *)t->data)[i] = (uint16_t)saturate(v, 0, UINT16_MAX); break;
    case KORCH_DTYPE_UINT32: ((uint32_t *)t->data)[i] = (uint32_t)saturate(v, 0, UINT32_MAX); break;
    case KORCH_DTYPE_UINT64: ((uint64_t *)t->data)[i] = (uint64_t)saturate(v, 0, 9223372036854774784.0); break;
    case KORCH_DTYPE_BOOL: ((uint8_t *)t->data)[i] = v != 0.0; break;
    case KORCH_DTYPE_FLOAT16:
    case KORCH_DTYPE_BFLOAT16: korch_half_store(t->dtype, t->data, i, v); break;
    default: break;
    }
}

static double softplus(double x) { return x > 0 ? x + log1p(exp(-x)) : log1p(exp(x)); }

/* The scalar semantics of every elementwise function; float maths in double,
 * rounded once on store. */
double korch_ew_apply(korch_ew_op op, double a, double b, double c, float alpha, float beta) {
    switch (op) {
    case KORCH_EW_COPY: return a;
    case KORCH_EW_NEG: return -a;
    case KORCH_EW_ABS: return fabs(a);
    case KORCH_EW_EXP: return exp(a);
    case KORCH_EW_LOG: return log(a);
    case KORCH_EW_SQRT: return sqrt(a);
    case KORCH_EW_RSQRT: return 1.0 / sqrt(a);
    case KORCH_EW_RECIP: return 1.0 / a;
    case KORCH_EW_TANH: return tanh(a);
    case KORCH_EW_ERF: return erf(a);
    case KORCH_EW_SIGMOID: return 1.0 / (1.0 + exp(-a));
    case KORCH_EW_RELU: return a > 0 ? a : (a == a ? 0.0 : a);
    case KORCH_EW_FLOOR: return floor(a);
    case KORCH_EW_CEIL: return ceil(a);
    case KORCH_EW_SIN: return sin(a);
    case KORCH_EW_COS: return cos(a);
    case KORCH_EW_SOFTPLUS: return softplus(a);
    case KORCH_EW_NOT: return a == 0.0;
    case KORCH_EW_CAST: return a;
    case KORCH_EW_LEAKY_RELU: return a >= 0 ? a : alpha * a;
    case KORCH_EW_ELU: return a >= 0 ? a : alpha * (exp(a) - 1.0);
    case KORCH_EW_CLIP: return a < alpha ? alpha : (a > beta ? beta : a);
    case KORCH_EW_AFFINE: return (double)alpha * a + beta;
    case KORCH_EW_POWC: return pow(a, alpha);
    case KORCH_EW_ADD: return a + b;
    case KORCH_EW_SUB: return a - b;
    case KORCH_EW_MUL: return a * b;
    case KORCH_EW_DIV: return a / b;
    case KORCH_EW_POW: return pow(a, b);
    case KORCH_EW_MAX: return (a != a || b != b) ? NAN : (a > b ? a : b);
    case KORCH_EW_MIN: return (a != a || b != b) ? NAN : (a < b ? a : b);
    case KORCH_EW_PRELU: return a >= 0 ? a : a * b;
    case KORCH_EW_EQUAL: return a == b;
    case KORCH_EW_LESS: return a < b;
    case KORCH_EW_LESS_EQUAL: return a <= b;
    case KORCH_EW_GREATER: return a > b;
    case KORCH_EW_GREATER_EQUAL: return a >= b;
    case KORCH_EW_AND: return (a != 0.0) && (b != 0.0);
    case KORCH_EW_OR: return (a != 0.0) || (b != 0.0);
    case KORCH_EW_WHERE: return a != 0.0 ? b : c;
    case KORCH_EW_TAN: return tan(a);
    case KORCH_EW_ASIN: return asin(a);
    case KORCH_EW_ACOS: return acos(a);
    case KORCH_EW_ATAN: return atan(a);
    case KORCH_EW_SINH: return sinh(a);
    case KORCH_EW_COSH: return cosh(a);
    case KORCH_EW_ASINH: return asinh(a);
    case KORCH_EW_ACOSH: return acosh(a);
    case KORCH_EW_ATANH: return atanh(a);
    case KORCH_EW_ROUND: return nearbyint(a);
    case KORCH_EW_SIGN: return a > 0 ? 1.0 : (a < 0 ? -1.0 : a);
    case KORCH_EW_MOD: {
        double r = fmod(a, b);
        if (alpha == 0.0f && r != 0.0 && (r < 0) != (b < 0)) r += b;
        return r;
    }
    default: return NAN;
    }
}

static bool is_float(korch_dtype dt) {
    return dt == KORCH_DTYPE_FLOAT32 || dt == KORCH_DTYPE_FLOAT64 || korch_dtype_is_half(dt);
}

/* Integer-to-integer casts wrap (two's complement), as C and ONNX do; going
 * through double would saturate and lose bits above 2^53. */
static void store_wrapped(korch_tensor *t, int64_t i, int64_t v) {
    switch (t->dtype) {
    case KORCH_DTYPE_INT64: ((int64_t *)t->data)[i] = v; break;
    case KORCH_DTYPE_UINT64: ((uint64_t *)t->data)[i] = (uint64_t)v; break;
    case KORCH_DTYPE_INT32: ((int32_t *)t->data)[i] = (int32_t)(uint32_t)v; break;
    case KORCH_DTYPE_UINT32: ((uint32_t *)t->data)[i] = (uint32_t)v; break;
    case KORCH_DTYPE_INT16: ((int16_t *)t->data)[i] = (int16_t)(uint16_t)v; break;
    case KORCH_DTYPE_UINT16: ((uint16_t *)t->data)[i] = (uint16_t)v; break;
    case KORCH_DTYPE_INT8: ((int8_t *)t->data)[i] = (int8_t)(uint8_t)v; break;
    case KORCH_DTYPE_UINT8: ((uint8_t *)t->data)[i] = (uint8_t)v; break;
    case KORCH_DTYPE_BOOL: ((uint8_t *)t->data)[i] = v != 0; break;
    default: break;
    }
}

/* The transcendental unary functions, whose scalar libm calls were most of
 * the interpreter's elementwise time (Softplus and Tanh on yolov4): the same
 * double formulas as korch_ew_apply through glibc's vector variants
 * (core/vmath.h; within a few ulp of double, so the float results agree
 * with the scalar path to the last bit but for rare roundings). */
static bool vm_of(korch_ew_op op, korch_vm_fn *f) {
    switch (op) {
    case KORCH_EW_EXP: *f = KORCH_VM_EXP; return true;
    case KORCH_EW_LOG: *f = KORCH_VM_LOG; return true;
    case KORCH_EW_TANH: *f = KORCH_VM_TANH; return true;
    case KORCH_EW_ERF: *f = KORCH_VM_ERF; return true;
    case KORCH_EW_SIGMOID: *f = KORCH_VM_SIGMOID; return true;
    case KORCH_EW_SOFTPLUS: *f = KORCH_VM_SOFTPLUS; return true;
    default: return false;
    }
}

/* count elements of a float32 elementwise primitive along one row: input k
 * at x[k] + j * step[k] (step 0: broadcast along the row). Each element is
 * korch_ew_apply's double arithmetic on the same doubles, rounded once; the
 * four arithmetic operators are written out (the same expression as in
 * korch_ew_apply) so the loop does not switch per element, and the
 * transcendental functions run a block at a time in vector form (vm_of). */
static void ew_f32_row(korch_ew_op op, float alpha, float beta, const float *a, int64_t sa, const float *b, int64_t sb,
                       const float *c, int64_t sc, float *y, int64_t count) {
    if (b && !c) switch (op) {
        case KORCH_EW_ADD:
            for (int64_t j = 0; j < count; j++) y[j] = (float)((double)a[j * sa] + (double)b[j * sb]);
            return;
        case KORCH_EW_SUB:
            for (int64_t j = 0; j < count; j++) y[j] = (float)((double)a[j * sa] - (double)b[j * sb]);
            return;
        case KORCH_EW_MUL:
            for (int64_t j = 0; j < count; j++) y[j] = (float)((double)a[j * sa] * (double)b[j * sb]);
            return;
        case KORCH_EW_DIV:
            for (int64_t j = 0; j < count; j++) y[j] = (float)((double)a[j * sa] / (double)b[j * sb]);
            return;
        default: break;
        }
    korch_vm_fn vf;
    if (!b && !c && vm_of(op, &vf)) {
        double buf[256];
        for (int64_t j0 = 0; j0 < count; j0 += 256) {
            int64_t m = count - j0 < 256 ? count - j0 : 256;
            for (int64_t j = 0; j < m; j++) buf[j] = a[(j0 + j) * sa];
            korch_vm_f64(vf, buf, buf, m);
            for (int64_t j = 0; j < m; j++) y[j0 + j] = (float)buf[j];
        }
        return;
    }
    for (int64_t j = 0; j < count; j++)
        y[j] = (float)korch_ew_apply(op, a[j * sa], b ? b[j * sb] : 0.0, c ? c[j * sc] : 0.0, alpha, beta);
}

/* Rows shorter than this take the per-element broadcast iterator. */
#define EW_ROW_MIN 8

/* run_elementwise's float32 path over [begin, end): element i is
 * korch_ew_apply on the same doubles as the generic path, rounded once.
 * With broadcasting, the iterator positions each row of the innermost
 * output axis (a bias add, a mask, a normalisation's scale), and the row
 * runs with a fixed step per input: the same elements, the same values,
 * without the iterator's per-element step (tests/ir/test_interpret_paths). */
static void ew_f32(const korch_pnode *n, korch_tensor **in, korch_tensor *out, bool same, int64_t begin, int64_t end) {
    const float *a = in[0]->data, *b = n->n_inputs > 1 ? in[1]->data : NULL, *c = n->n_inputs > 2 ? in[2]->data : NULL;
    float *y = out->data;
    korch_ew_op op = n->u.ew.op;
    float alpha = n->u.ew.alpha, beta = n->u.ew.beta;
    if (same) {
        if (end > begin)
            ew_f32_row(op, alpha, beta, a + begin, 1, b ? b + begin : NULL, 1, c ? c + begin : NULL, 1, y + begin,
                       end - begin);
        return;
    }
    const korch_shape *shapes[3] = {0};
    for (int i = 0; i < n->n_inputs; i++) shapes[i] = &in[i]->shape;
    korch_broadcast_iter it;
    korch_broadcast_iter_init(&it, &out->shape, n->n_inputs, shapes);
    int r = out->shape.rank;
    int64_t row = r > 0 ? out->shape.dims[r - 1] : 1;
    if (r > 0 && row >= EW_ROW_MIN && it.rank == r) {
        /* the iterator's innermost stride of each input: 0 or 1 */
        int64_t st[3] = {0, 0, 0};
        for (int k = 0; k < n->n_inputs; k++) st[k] = it.strides[k][r - 1];
        for (int64_t i = begin; i < end;) {
            int64_t count = row - i % row;
            if (count > end - i) count = end - i;
            korch_broadcast_iter_seek(&it, i);
            ew_f32_row(op, alpha, beta, a + it.offset[0], st[0], b ? b + it.offset[1] : NULL, st[1],
                       c ? c + it.offset[2] : NULL, st[2], y + i, count);
            i += count;
        }
        return;
    }
    korch_broadcast_iter_seek(&it, begin);
    for (int64_t i = begin; i < end; i++) {
        y[i] = (float)korch_ew_apply(op, a[it.offset[0]], b ? b[it.offset[1]] : 0.0, c ? c[it.offset[2]] : 0.0,
                                     alpha, beta);
        korch_broadcast_iter_next(&it);
    }
}

static korch_status run_elementwise(const korch_pnode *n, korch_tensor **in, korch_tensor *out) {
    if (n->u.ew.op == KORCH_EW_CAST && !is_float(in[0]->dtype) && !is_float(out->dtype)) {
        int64_t total = korch_tensor_numel(out);
        for (int64_t i = 0; i < total; i++) store_wrapped(out, i, korch_tensor_get_i64(in[0], i));
        return KORCH_OK;
    }
    const korch_shape *shapes[3] = {0};
    for (int i = 0; i < n->n_inputs; i++) shapes[i] = &in[i]->shape;
    int64_t total = korch_tensor_numel(out);
    /* every element is computed alone, so the elements are shared out in
     * contiguous chunks, each with its own iterator: the same values in any
     * order (kernel verification spends most of its time here) */
    /* float32 throughout (nearly every elementwise primitive of a model):
     * the same double arithmetic (korch_ew_apply) on the same values, read
     * and written without a dtype switch per element, and without the
     * broadcast iterator where every input has the output's shape */
    bool f32 = out->dtype == KORCH_DTYPE_FLOAT32, same = true;
    for (int i = 0; i < n->n_inputs; i++) {
        f32 = f32 && in[i]->dtype == KORCH_DTYPE_FLOAT32;
        same = same && korch_shape_equal(&in[i]->shape, &out->shape);
    }
#pragma omp parallel if (total >= INTERPRET_PARALLEL_MIN)
    {
        int64_t begin, end;
        chunk_of(total, &begin, &end);
        if (f32) {
            ew_f32(n, in, out, same, begin, end);
            begin = end;
        }
        korch_broadcast_iter it;
        korch_broadcast_iter_init(&it, &out->shape, n->n_inputs, shapes);
        korch_broadcast_iter_seek(&it, begin);
        for (int64_t i = begin; i < end; i++) {
            double a = load(in[0], it.offset[0]);
            double b = n->n_inputs > 1 ? load(in[1], it.offset[1]) : 0.0;
            double c = n->n_inputs > 2 ? load(in[2], it.offset[2]) : 0.0;
            store(out, i, korch_ew_apply(n->u.ew.op, a, b, c, n->u.ew.alpha, n->u.ew.beta));
            korch_broadcast_iter_next(&it);
        }
    }
    return KORCH_OK;
}

/* One output element of a reduction: its input elements in increasing
 * input order (the order a single pass over the input visits them), so
 * every output is accumulated exactly as a sequential pass would. */
static double reduce_one(const korch_prim_reduce *r, const korch_tensor *x, int64_t base, int n_red,
                         const int64_t *rdims, const int64_t *rstride, int64_t count) {
    double acc = r->op == KORCH_REDUCE_MAX ? -INFINITY : r->op == KORCH_REDUCE_MIN ? INFINITY : 0.0;
    const float *xf = x->dtype == KORCH_DTYPE_FLOAT32 ? x->data : NULL;
    int64_t idx[KORCH_MAX_RANK] = {0}, off = base;
    int64_t inner = n_red > 0 ? rdims[n_red - 1] : 1, istep = n_red > 0 ? rstride[n_red - 1] : 0;
    for (int64_t done = 0; done < count; done += inner) {
        for (int64_t j = 0; j < inner; j++) {
            double v = xf ? xf[off + j * istep] : load(x, off + j * istep);
            switch (r->op) {
            case KORCH_REDUCE_SUM:
            case KORCH_REDUCE_MEAN: acc += v; break;
            case KORCH_REDUCE_MAX: acc = (v > acc || v != v) ? v : acc; break;
            case KORCH_REDUCE_MIN: acc = (v < acc || v != v) ? v : acc; break;
            }
        }
        /* the next row of the reduced axes but the last */
        for (int k = n_red - 2; k >= 0; k--) {
            off += rstride[k];
            if (++idx[k] < rdims[k]) break;
            off -= rstride[k] * idx[k];
            idx[k] = 0;
        }
    }
    return acc;
}

static korch_status run_reduce(const korch_pnode *n, const korch_tensor *x, korch_tensor *y) {
    const korch_prim_reduce *r = &n->u.reduce;
    int64_t out_n = korch_tensor_numel(y), in_n = korch_tensor_numel(x);
    int rank = x->shape.rank, n_red = 0, n_kept = 0;
    int64_t stride[KORCH_MAX_RANK], rdims[KORCH_MAX_RANK], rstride[KORCH_MAX_RANK];
    int64_t kdims[KORCH_MAX_RANK], kstride[KORCH_MAX_RANK], s = 1;
    for (int k = rank - 1; k >= 0; k--) {
        stride[k] = s;
        s *= x->shape.dims[k];
    }
    for (int k = 0; k < rank; k++) {
        if (r->axes & (1u << k)) {
            rdims[n_red] = x->shape.dims[k];
            rstride[n_red++] = stride[k];
        } else {
            kdims[n_kept] = x->shape.dims[k];
            kstride[n_kept++] = stride[k];
        }
    }
    int64_t count = out_n ? in_n / out_n : 0;
    /* the output is the kept axes in row-major order; each of its elements
     * is computed alone, so they are shared out over the threads */
#pragma omp parallel if (in_n >= INTERPRET_PARALLEL_MIN && out_n > 1)
    {
        int64_t begin, end;
        chunk_of(out_n, &begin, &end);
        for (int64_t o = begin; o < end; o++) {
            int64_t base = 0, rest = o;
            for (int k = n_kept - 1; k >= 0; k--) {
                base += (rest % kdims[k]) * kstride[k];
                rest /= kdims[k];
            }
            double acc = reduce_one(r, x, base, n_red, rdims, rstride, count);
            store(y, o, r->op == KORCH_REDUCE_MEAN ? acc / (double)count : acc);
        }
    }
    return KORCH_OK;
}

/* A layout whose one map is in bounds everywhere (checked) and affine in every input
 * dimension (no div, mod or table: transposes, slices, expands, identities)
 * reads input element base + sum_j step[j] * o[j] for output coordinates o:
 * the offset korch_index_map_eval and the generic loop compute, in integer
 * arithmetic, so the same element is copied. False for other maps. */
static bool layout_affine(const korch_prim_layout *l, const korch_shape *in, const korch_shape *out, int64_t *base,
                          int64_t *step) {
    if (l->n_maps != 1 || l->maps[0].input_rank != in->rank) return false;
    const korch_index_map *m = &l->maps[0];
    int64_t stride = 1;
    *base = 0;
    for (int j = 0; j < KORCH_MAX_RANK; j++) step[j] = 0;
    for (int k = in->rank - 1; k >= 0; k--) {
        const korch_index_term *t = &m->terms[k];
        if (t->div > 1 || t->mod > 0 || t->table) return false;
        /* in bounds over the whole output box, checked here (the map's flag
         * is not trusted): an affine term is extreme at the box's corners */
        int64_t lo = t->offset, hi = t->offset;
        for (int j = 0; j < out->rank; j++) {
            int64_t span = t->coef[j] * (out->dims[j] - 1);
            if (span < 0) lo += span;
            else hi += span;
        }
        if (lo < 0 || hi >= in->dims[k]) return false;
        *base += t->offset * stride;
        for (int j = 0; j < KORCH_MAX_RANK; j++) {
            if (!t->coef[j]) continue;
            if (j >= out->rank) return false;
            step[j] += t->coef[j] * stride;
        }
        stride *= in->dims[k];
    }
    return true;
}

static korch_status run_layout(const korch_pnode *n, korch_tensor **in, korch_tensor *out) {
    const korch_prim_layout *l = &n->u.layout;
    int64_t total = korch_tensor_numel(out);
    size_t esize = korch_dtype_size(out->dtype);
    int64_t base, step[KORCH_MAX_RANK];
    if (total > 0 && layout_affine(l, &in[0]->shape, &out->shape, &base, step)) {
        int r = out->shape.rank;
        int64_t inner = r > 0 ? out->shape.dims[r - 1] : 1, istep = r > 0 ? step[r - 1] : 0, rows = total / inner;
        const char *src = in[0]->data;
        char *dst = out->data;
#pragma omp parallel if (total >= INTERPRET_PARALLEL_MIN)
        {
            int64_t begin, end;
            chunk_of(rows, &begin, &end);
            for (int64_t row = begin; row < end; row++) {
                int64_t off = base, rest = row;
                for (int k = r - 2; k >= 0; k--) {
                    off += (rest % out->shape.dims[k]) * step[k];
                    rest /= out->shape.dims[k];
                }
                char *d = dst + row * inner * (int64_t)esize;
                if (istep == 1) {
                    memcpy(d, src + off * (int64_t)esize, (size_t)inner * esize);
                } else if (esize == 4) {
                    const uint32_t *s4 = (const uint32_t *)(const void *)src + off;
                    uint32_t *d4 = (uint32_t *)(void *)d;
                    for (int64_t j = 0; j < inner; j++) d4[j] = s4[j * istep];
                } else {
                    for (int64_t j = 0; j < inner; j++)
                        memcpy(d + j * (int64_t)esize, src + (off + j * istep) * (int64_t)esize, esize);
                }
            }
        }
        return KORCH_OK;
    }
    /* concat, pad, windows: affine maps that may leave their input */
    if (total > 0 && esize <= 16) {
        unsigned char pad[16] = {0};
        korch_tensor one = {.dtype = out->dtype, .shape = {.rank = 0}, .data = pad};
        store(&one, 0, l->pad_value);
        if (korch_layout_rows_apply(l, in, out, pad, INTERPRET_PARALLEL_MIN)) return KORCH_OK;
    }
#pragma omp parallel if (total >= INTERPRET_PARALLEL_MIN)
    {
    int64_t begin, end, o[KORCH_MAX_RANK] = {0};
    chunk_of(total, &begin, &end);
    for (int64_t k = out->shape.rank - 1, rest = begin; k >= 0; k--) { /* the coordinates of element begin */
        int64_t d = out->shape.dims[k] > 0 ? out->shape.dims[k] : 1;
        o[k] = rest % d;
        rest /= d;
    }
    for (int64_t i = begin; i < end; i++) {
        bool written = false;
        for (int p = 0; p < l->n_maps && !written; p++) {
            int64_t c[KORCH_MAX_RANK];
            if (!korch_index_map_eval(&l->maps[p], &in[p]->shape, o, c)) continue;
            int64_t off = 0;
            for (int k = 0; k < in[p]->shape.rank; k++) off = off * in[p]->shape.dims[k] + c[k];
            memcpy((char *)out->data + i * (int64_t)esize, (const char *)in[p]->data + off * (int64_t)esize, esize);
            written = true;
        }
        if (!written) store(out, i, l->pad_value);
        for (int k = out->shape.rank - 1; k >= 0; k--) {
            if (++o[k] < out->shape.dims[k]) break;
            o[k] = 0;
        }
    }
    }
    return KORCH_OK;
}

/* Linear primitives go through the reference executor's kernels (SGEMM,
 * im2col / col2im), so the interpreter is fast enough to check whole models
 * (src/verify) and computes a convolution exactly as the reference executor
 * does. */
static korch_status run_matmul(const korch_tensor *a, const korch_tensor *b, korch_tensor *y) {
    int ra = a->shape.rank, rb = b->shape.rank, ry = y->shape.rank;
    int64_t M = a->shape.dims[ra - 2], K = a->shape.dims[ra - 1], N = b->shape.dims[rb - 1];
    korch_shape batch = y->shape, ba = a->shape, bb = b->shape;
    batch.rank = ry - 2;
    ba.rank = ra - 2;
    bb.rank = rb - 2;
    int64_t sa[KORCH_MAX_RANK], sb[KORCH_MAX_RANK];
    korch_broadcast_strides(&ba, &batch, sa);
    korch_broadcast_strides(&bb, &batch, sb);
    int64_t nb = korch_shape_numel(&batch);
    const float *pa = a->data, *pb = b->data;
    float *py = y->data;
    if (nb == 0 || M == 0 || N == 0) return KORCH_OK;
    /* B shared by every product and A not broadcast: the batch folds into
     * M, one product of nb*M rows, as the reference executor computes it
     * (src/ops/matmul.c). Every element is the same sum in the same order
     * (korch_sgemm's tiles never change an element's arithmetic), so the
     * bits are those of the products one by one (tests/ir/
     * test_interpret_paths). One by one, a [197,1,768] x [768,2304]
     * product (ViT-B/16's attention input projection) packed all of B for
     * each of its 197 one-row products: 0.8 s of every layer. */
    if (korch_shape_numel(&bb) == 1 && korch_shape_numel(&ba) == nb) {
        if (korch_sgemm(false, false, nb * M, N, K, 1.0f, pa, K, pb, N, 0.0f, py, N) != KORCH_OK)
            return korch_error(KORCH_ERR_OUT_OF_MEMORY, "interpreter: matmul: out of memory");
        return KORCH_OK;
    }
    /* many small products (attention heads): one per thread at a time;
     * korch_sgemm then stays serial, and every element is computed as it
     * would be alone (its tiles depend on the shapes, not on the threads) */
    int failed = 0;
#pragma omp parallel for schedule(dynamic, 1) if (nb > 1 && M * N * K * nb >= ((int64_t)1 << 16)) reduction(| : failed)
    for (int64_t bi = 0; bi < nb; bi++) {
        int64_t rem = bi, oa = 0, ob = 0;
        for (int k = batch.rank - 1; k >= 0; k--) {
            int64_t c = rem % batch.dims[k];
            rem /= batch.dims[k];
            oa += c * sa[k];
            ob += c * sb[k];
        }
        if (korch_sgemm(false, false, M, N, K, 1.0f, pa + oa * M * K, K, pb + ob * K * N, N, 0.0f, py + bi * M * N,
                        N) != KORCH_OK)
            failed = 1;
    }
    if (failed) return korch_error(KORCH_ERR_OUT_OF_MEMORY, "interpreter: matmul: out of memory");
    return KORCH_OK;
}

/* An integer matmul (MatMulInteger's fission: 8-bit operands, or int32
 * after a zero point is subtracted): exact products summed in int64 and
 * stored as int32, wrapping as the reference kernel does
 * (ops/matmul_integer.c). Row by row, k outer, so the inner loop runs
 * along a row of B and the accumulators (one row of int64) vectorise. */
static korch_status run_matmul_int(const korch_tensor *a, const korch_tensor *b, korch_tensor *y) {
    int ra = a->shape.rank, rb = b->shape.rank, ry = y->shape.rank;
    int64_t M = a->shape.dims[ra - 2], K = a->shape.dims[ra - 1], N = b->shape.dims[rb - 1];
    korch_shape batch = y->shape, ba = a->shape, bb = b->shape;
    batch.rank = ry - 2;
    ba.rank = ra - 2;
    bb.rank = rb - 2;
    int64_t sa[KORCH_MAX_RANK], sb[KORCH_MAX_RANK];
    korch_broadcast_strides(&ba, &batch, sa);
    korch_broadcast_strides(&bb, &batch, sb);
    int64_t nb = korch_shape_numel(&batch), rows = nb * M;
    if (rows == 0 || N == 0) return KORCH_OK;
    /* B as int32 once (it is read M times) */
    int32_t *bi = malloc((size_t)(korch_tensor_numel(b) > 0 ? korch_tensor_numel(b) : 1) * sizeof *bi);
    if (!bi) return korch_error(KORCH_ERR_OUT_OF_MEMORY, "interpreter: integer matmul: out of memory");
    for (int64_t i = 0, n = korch_tensor_numel(b); i < n; i++) bi[i] = (int32_t)korch_tensor_get_i64(b, i);
    int32_t *py = y->data;
    int failed = 0;
#pragma omp parallel if (rows * N * K >= ((int64_t)1 << 16)) reduction(| : failed)
    {
        int64_t *acc = malloc((size_t)N * sizeof *acc);
        failed |= !acc;
#pragma omp for schedule(static)
        for (int64_t r = 0; r < rows; r++) {
            if (!acc) continue;
            int64_t bi_ = r / M, row = r % M, rem = bi_, oa = 0, ob = 0;
            for (int d = batch.rank - 1; d >= 0; d--) {
                int64_t c = rem % batch.dims[d];
                rem /= batch.dims[d];
                oa += c * sa[d];
                ob += c * sb[d];
            }
            const int32_t *pb = bi + ob * K * N;
            for (int64_t j = 0; j < N; j++) acc[j] = 0;
            for (int64_t k = 0; k < K; k++) {
                int64_t av = korch_tensor_get_i64(a, (oa * M + row) * K + k);
                const int32_t *brow = pb + k * N;
                for (int64_t j = 0; j < N; j++) acc[j] += av * brow[j];
            }
            for (int64_t j = 0; j < N; j++) py[r * N + j] = (int32_t)(uint32_t)(uint64_t)acc[j];
        }
        free(acc);
    }
    free(bi);
    if (failed) return korch_error(KORCH_ERR_OUT_OF_MEMORY, "interpreter: integer matmul: out of memory");
    return KORCH_OK;
}

/* An integer convolution (ConvInteger's fission), NCHW, 1-3 spatial dims:
 * exact products summed in int64, stored wrapping to int32 like the
 * reference kernel (ops/conv_integer.c); the operands' zero points were
 * subtracted before, so padding adds zero. One output row (the innermost
 * spatial axis) of int64 accumulators at a time, in parallel over (n, oc). */
static korch_status run_conv_int(const korch_prim_linear *p, const korch_tensor *x, const korch_tensor *w,
                                 korch_tensor *y) {
    int s = p->spatial;
    int64_t in[3] = {1, 1, 1}, k[3] = {1, 1, 1}, out[3] = {1, 1, 1}, st[3] = {1, 1, 1}, dl[3] = {1, 1, 1},
            pd[3] = {0, 0, 0};
    for (int d = 0; d < s; d++) {
        int j = 3 - s + d;
        in[j] = x->shape.dims[2 + d];
        k[j] = w->shape.dims[2 + d];
        out[j] = y->shape.dims[2 + d];
        st[j] = p->strides[d];
        dl[j] = p->dilations[d];
        pd[j] = p->pads_begin[d];
    }
    int64_t N = x->shape.dims[0], C = x->shape.dims[1], M = y->shape.dims[1], G = p->group;
    int64_t Cg = C / G, Mg = M / G, plane = in[0] * in[1] * in[2], taps = k[0] * k[1] * k[2];
    int32_t *xi = malloc((size_t)(korch_tensor_numel(x) + 1) * sizeof *xi);
    int32_t *wi = malloc((size_t)(korch_tensor_numel(w) + 1) * sizeof *wi);
    if (!xi || !wi) {
        free(xi);
        free(wi);
        return korch_error(KORCH_ERR_OUT_OF_MEMORY, "interpreter: integer convolution: out of memory");
    }
    for (int64_t i = 0, n = korch_tensor_numel(x); i < n; i++) xi[i] = (int32_t)korch_tensor_get_i64(x, i);
    for (int64_t i = 0, n = korch_tensor_numel(w); i < n; i++) wi[i] = (int32_t)korch_tensor_get_i64(w, i);
    int32_t *py = y->data;
    int failed = 0;
#pragma omp parallel reduction(| : failed)
    {
        int64_t *acc = malloc((size_t)(out[2] + 1) * sizeof *acc);
        failed |= !acc;
#pragma omp for schedule(dynamic, 1)
        for (int64_t nm = 0; nm < N * M; nm++) {
            if (!acc) continue;
            int64_t n = nm / M, m = nm % M, g = m / Mg;
            for (int64_t od = 0; od < out[0]; od++)
                for (int64_t oh = 0; oh < out[1]; oh++) {
                    for (int64_t ow = 0; ow < out[2]; ow++) acc[ow] = 0;
                    for (int64_t c = 0; c < Cg; c++) {
                        const int32_t *xp = xi + (n * C + g * Cg + c) * plane, *wp = wi + (m * Cg + c) * taps;
                        for (int64_t kd = 0; kd < k[0]; kd++) {
                            int64_t id = od * st[0] - pd[0] + kd * dl[0];
                            if (id < 0 || id >= in[0]) continue;
                            for (int64_t kh = 0; kh < k[1]; kh++) {
                                int64_t ih = oh * st[1] - pd[1] + kh * dl[1];
                                if (ih < 0 || ih >= in[1]) continue;
                                const int32_t *row = xp + (id * in[1] + ih) * in[2];
                                for (int64_t kw = 0; kw < k[2]; kw++) {
                                    int64_t wv = wp[(kd * k[1] + kh) * k[2] + kw];
                                    for (int64_t ow = 0; ow < out[2]; ow++) {
                                        int64_t iw = ow * st[2] - pd[2] + kw * dl[2];
                                        if (iw >= 0 && iw < in[2]) acc[ow] += wv * row[iw];
                                    }
                                }
                            }
                        }
                    }
                    int32_t *yr = py + ((nm * out[0] + od) * out[1] + oh) * out[2];
                    for (int64_t ow = 0; ow < out[2]; ow++) yr[ow] = (int32_t)(uint32_t)(uint64_t)acc[ow];
                }
        }
        free(acc);
    }
    free(xi);
    free(wi);
    if (failed) return korch_error(KORCH_ERR_OUT_OF_MEMORY, "interpreter: integer convolution: out of memory");
    return KORCH_OK;
}

/* Convolution and its transpose over 1-3 spatial dims, NCHW. */
static korch_status run_conv(const korch_prim_linear *p, const korch_tensor *x, const korch_tensor *w, korch_tensor *y) {
    int s = p->spatial;
    bool transpose = p->op == KORCH_LINEAR_CONV_TRANSPOSE;
    korch_conv_geometry g = {.batch = x->shape.dims[0], .channels = x->shape.dims[1], .groups = p->group,
                             .out_channels = y->shape.dims[1]};
    g.channels_per_group = g.channels / g.groups;
    g.out_per_group = g.out_channels / g.groups;
    korch_window *win = &g.w;
    win->spatial = s;
    for (int j = 0; j < 3; j++) {
        win->in[j] = win->kernel[j] = win->stride[j] = win->dilation[j] = win->out[j] = 1;
        win->pad_begin[j] = win->pad_end[j] = 0;
    }
    for (int d = 0; d < s; d++) {
        int j = 3 - s + d;
        win->in[j] = x->shape.dims[2 + d];
        win->out[j] = y->shape.dims[2 + d];
        win->kernel[j] = w->shape.dims[2 + d];
        win->stride[j] = p->strides[d];
        win->dilation[j] = p->dilations[d];
        win->pad_begin[j] = p->pads_begin[d];
        win->pad_end[j] = p->pads_end[d];
    }
    return transpose ? korch_conv_transpose_run(&g, x->data, w->data, NULL, y->data)
                     : korch_conv_run(&g, x->data, w->data, NULL, y->data);
}

/* Moves the channel axis: to_last false reads an N,spatial...,C tensor into
 * N,C,spatial..., true the other way round (shapes already set). */
static void move_channels(const korch_tensor *src, korch_tensor *dst, bool to_last) {
    const korch_shape *cf = to_last ? &src->shape : &dst->shape; /* channels-first shape */
    int64_t N = cf->dims[0], C = cf->dims[1], S = 1;
    for (int k = 2; k < cf->rank; k++) S *= cf->dims[k];
    size_t es = korch_dtype_size(src->dtype); /* float32, int32 or 8-bit: a copy of bytes */
    const char *a = src->data;
    char *b = dst->data;
    /* a copy, so any order gives the same tensor: in TILE x TILE blocks
     * (element by element, one side strided by a whole row: 6% of the
     * interpreter's time on yolov4, serial), the blocks shared out over
     * the threads */
    enum { TILE = 32 };
    int64_t tc = (C + TILE - 1) / TILE, ts = (S + TILE - 1) / TILE;
#pragma omp parallel for schedule(static) if (N * C * S >= INTERPRET_PARALLEL_MIN)
    for (int64_t blk = 0; blk < N * tc * ts; blk++) {
        int64_t n = blk / (tc * ts), c0 = (blk / ts) % tc * TILE, i0 = blk % ts * TILE;
        int64_t c1 = c0 + TILE < C ? c0 + TILE : C, i1 = i0 + TILE < S ? i0 + TILE : S;
        for (int64_t c = c0; c < c1; c++)
            for (int64_t i = i0; i < i1; i++) {
                int64_t first = (n * C + c) * S + i, last = (n * S + i) * C + c;
                int64_t from = to_last ? first : last, to = to_last ? last : first;
                if (es == 4) ((uint32_t *)(void *)b)[to] = ((const uint32_t *)(const void *)a)[from];
                else memcpy(b + to * es, a + from * es, es);
            }
    }
}

/* channels_last: the same convolution between two transposes (the
 * integer one too: 8-bit source, int32 result). */
static korch_status run_conv_channels_last(const korch_prim_linear *p, const korch_tensor *x, const korch_tensor *w,
                                           korch_tensor *y, bool integer) {
    korch_shape xs = x->shape, ys = y->shape;
    for (int k = 1; k < x->shape.rank; k++) {
        xs.dims[k] = x->shape.dims[k == 1 ? x->shape.rank - 1 : k - 1];
        ys.dims[k] = y->shape.dims[k == 1 ? y->shape.rank - 1 : k - 1];
    }
    korch_tensor xt = {0}, yt = {0};
    korch_status st = korch_tensor_alloc(&xt, x->dtype, &xs);
    if (st == KORCH_OK) st = korch_tensor_alloc(&yt, y->dtype, &ys);
    if (st == KORCH_OK) {
        move_channels(x, &xt, false);
        korch_prim_linear q = *p;
        q.channels_last = false;
        st = integer ? run_conv_int(&q, &xt, w, &yt) : run_conv(&q, &xt, w, &yt);
    }
    if (st == KORCH_OK) move_channels(&yt, y, true);
    korch_tensor_free(&xt);
    korch_tensor_free(&yt);
    return st;
}

static korch_status run_linear(const korch_prim_linear *p, const korch_tensor *x, const korch_tensor *w,
                               korch_tensor *y) {
    if (p->op == KORCH_LINEAR_MATMUL) return run_matmul(x, w, y);
    if (p->channels_last) return run_conv_channels_last(p, x, w, y, false);
    return run_conv(p, x, w, y);
}

/* How the interpreter runs (korch_pgraph_interpret*). */
typedef struct interp_mode {
    bool float32_only;    /* bf16 marks ignored (korch_pgraph_interpret_fp32) */
    uint64_t jitter_seed; /* nonzero: bf16 operands and exact dividends computed at run time are moved by 2^-20 */
} interp_mode;

/* A bf16 linear primitive: both operands rounded to bfloat16, then the
 * float32 kernel. A product of two bfloat16 values is exact in float32, so
 * this is what a bf16 kernel with float32 accumulation computes, up to the
 * order of its sums: kernels are checked against it with float32's
 * tolerances (docs/precision.md). With a jitter seed, operands that are not
 * constants are first moved by a relative 2^-20 (a random sign per element):
 * a second correct computation, whose float32 noise rounds other elements
 * near a tie the other way (the bf16 noise rule, verify/plan_check.c). */
static korch_status run_linear_bf16(const korch_pgraph *pg, const korch_pnode *n, const korch_tensor *x,
                                    const korch_tensor *w, korch_tensor *y, uint64_t jitter_seed) {
    korch_tensor r[2] = {0};
    const korch_tensor *src[2] = {x, w};
    korch_status st = KORCH_OK;
    for (int k = 0; k < 2 && st == KORCH_OK; k++) {
        st = korch_tensor_alloc(&r[k], KORCH_DTYPE_FLOAT32, &src[k]->shape);
        if (st != KORCH_OK) break;
        float *b = r[k].data;
        if (src[k]->dtype == KORCH_DTYPE_BFLOAT16) { /* a precision cast rounded (and moved) it */
            const uint16_t *h = src[k]->data;
            for (int64_t i = 0, m = korch_tensor_numel(src[k]); i < m; i++) b[i] = korch_bf16_to_f32(h[i]);
            continue;
        }
        const float *a = src[k]->data;
        bool jitter = jitter_seed && !pg->values[n->inputs[k]].is_constant;
        uint64_t seed = jitter_seed ^ ((uint64_t)n->inputs[k] << 32);
        for (int64_t i = 0, m = korch_tensor_numel(src[k]); i < m; i++)
            b[i] = korch_bf16_round(jitter ? a[i] * (1.0f + korch_jitter_sign(seed, i) * 0x1p-20f) : a[i]);
    }
    if (st == KORCH_OK) st = run_linear(&n->u.linear, &r[0], &r[1], y);
    korch_tensor_free(&r[0]);
    korch_tensor_free(&r[1]);
    return st;
}

/* An exact division (QuantizeLinear's x / scale, DIV alpha 1) with the
 * dividend moved by a relative 2^-20 first when it is computed at run time:
 * in a second correct computation float32 noise before a quantizer rounds
 * other elements near a tie the other way (the quantization noise rule,
 * verify/plan_check.c). A precision cast's operand is moved the same way:
 * it is the rounding of a bf16 primitive's operand, moved to the cast. */
static korch_status run_div_jittered(const korch_pgraph *pg, const korch_pnode *n, korch_tensor **in,
                                     korch_tensor *out, uint64_t jitter_seed) {
    if (pg->values[n->inputs[0]].is_constant || in[0]->dtype != KORCH_DTYPE_FLOAT32) return run_elementwise(n, in, out);
    korch_tensor moved = {0};
    KORCH_TRY(korch_tensor_clone(in[0], &moved));
    korch_tensor_jitter(&moved, jitter_seed ^ ((uint64_t)n->inputs[0] << 32));
    korch_tensor *ins[KORCH_MAX_RANK] = {0};
    for (int k = 0; k < n->n_inputs; k++) ins[k] = in[k];
    ins[0] = &moved;
    korch_status st = run_elementwise(n, ins, out);
    korch_tensor_free(&moved);
    return st;
}

static korch_status run_opaque(const korch_pgraph *pg, const korch_pnode *n, korch_tensor **in, korch_tensor **out) {
    const korch_node *src = &pg->source->nodes[n->u.opaque.source_node];
    korch_tensor *ins[64] = {0}, *outs[KORCH_PNODE_MAX_OUTPUTS] = {0};
    /* inputs are positional like the source node's (omitted ones stay NULL;
     * constants read from the op graph, korch_opaque_input) */
    for (int k = 0; k < src->n_inputs && k < 64; k++) {
        const korch_tensor *c = NULL;
        int j = korch_opaque_input(pg, n, k, &c);
        ins[k] = j >= 0 ? in[j] : (korch_tensor *)c; /* the ops read their inputs only */
    }
    for (int k = 0; k < n->n_outputs; k++) outs[k] = out[k];
    korch_op_ctx ctx = {.graph = pg->source, .node = src, .n_inputs = src->n_inputs, .inputs = ins,
                        .n_outputs = src->n_outputs, .outputs = outs};
    return src->def->run(&ctx);
}

static korch_status run_node(const korch_pgraph *pg, int node, korch_tensor *const *in, korch_tensor *const *out,
                             const interp_mode *mode) {
    const korch_pnode *n = &pg->nodes[node];
    korch_tensor *ins[KORCH_MAX_RANK] = {0};
    for (int k = 0; k < n->n_inputs; k++) ins[k] = in[k];
    switch (n->kind) {
    case KORCH_PRIM_ELEMENTWISE:
        if (mode->jitter_seed && ((n->u.ew.op == KORCH_EW_DIV && n->u.ew.alpha != 0) ||
                                  korch_pnode_is_precision_cast(pg, node)))
            return run_div_jittered(pg, n, ins, out[0], mode->jitter_seed);
        return run_elementwise(n, ins, out[0]);
    case KORCH_PRIM_REDUCE: return run_reduce(n, in[0], out[0]);
    case KORCH_PRIM_LAYOUT: return run_layout(n, ins, out[0]);
    case KORCH_PRIM_LINEAR:
        if (n->u.linear.bf16 && (in[0]->dtype == KORCH_DTYPE_BFLOAT16 || in[1]->dtype == KORCH_DTYPE_BFLOAT16))
            return run_linear_bf16(pg, n, in[0], in[1], out[0], mode->jitter_seed);
        if (korch_pnode_is_integer_linear(pg, n))
            return n->u.linear.op == KORCH_LINEAR_MATMUL ? run_matmul_int(in[0], in[1], out[0])
                   : n->u.linear.channels_last ? run_conv_channels_last(&n->u.linear, in[0], in[1], out[0], true)
                                               : run_conv_int(&n->u.linear, in[0], in[1], out[0]);
        if (in[0]->dtype != KORCH_DTYPE_FLOAT32 || in[1]->dtype != KORCH_DTYPE_FLOAT32)
            return korch_error(KORCH_ERR_UNSUPPORTED, "interpreter: linear primitives are float32, or an integer matmul");
        if (n->u.linear.bf16 && !mode->float32_only)
            return run_linear_bf16(pg, n, in[0], in[1], out[0], mode->jitter_seed);
        return run_linear(&n->u.linear, in[0], in[1], out[0]);
    case KORCH_PRIM_OPAQUE: {
        korch_tensor *outs[KORCH_PNODE_MAX_OUTPUTS] = {0};
        for (int k = 0; k < n->n_outputs && k < KORCH_PNODE_MAX_OUTPUTS; k++) outs[k] = out[k];
        return run_opaque(pg, n, ins, outs);
    }
    default: return korch_error(KORCH_ERR_INTERNAL, "interpreter: unknown primitive kind %d", n->kind);
    }
}

korch_status korch_pgraph_run_node(const korch_pgraph *pg, int node, korch_tensor *const *in,
                                   korch_tensor *const *out) {
    interp_mode mode = {0};
    return run_node(pg, node, in, out, &mode);
}

static korch_status interpret(const korch_pgraph *pg, const korch_tensor *inputs, korch_tensor *outputs,
                              const interp_mode *mode) {
    korch_status st = KORCH_OK;
    int *order = malloc(((size_t)pg->n_nodes + 1) * sizeof *order);
    korch_tensor *vals = calloc((size_t)pg->n_values + 1, sizeof *vals);
    int *uses = calloc((size_t)pg->n_values + 1, sizeof *uses);
    int count = 0;
    if (!order || !vals || !uses) {
        st = korch_error(KORCH_ERR_OUT_OF_MEMORY, "interpreter: out of memory");
        goto done;
    }
    for (int i = 0; i < pg->n_outputs; i++) outputs[i] = (korch_tensor){0};
    st = korch_pgraph_toposort(pg, order, &count);
    if (st != KORCH_OK) goto done;
    for (int v = 0; v < pg->n_values; v++)
        if (pg->values[v].is_constant)
            vals[v] = (korch_tensor){.dtype = pg->values[v].dtype, .shape = pg->values[v].shape,
                                     .data = pg->values[v].constant.data};
    for (int i = 0; i < pg->n_inputs; i++) {
        const korch_pvalue *pv = &pg->values[pg->inputs[i]];
        if (inputs[i].dtype != pv->dtype || !korch_shape_equal(&inputs[i].shape, &pv->shape)) {
            st = korch_error(KORCH_ERR_SHAPE, "interpreter: input %d does not match the primitive graph", i);
            goto done;
        }
        vals[pg->inputs[i]] = (korch_tensor){.dtype = inputs[i].dtype, .shape = inputs[i].shape, .data = inputs[i].data};
    }
    for (int i = 0; i < count; i++)
        for (int k = 0; k < pg->nodes[order[i]].n_inputs; k++) uses[pg->nodes[order[i]].inputs[k]]++;
    for (int i = 0; i < pg->n_outputs; i++) uses[pg->outputs[i]]++;

    for (int i = 0; i < count && st == KORCH_OK; i++) {
        const korch_pnode *n = &pg->nodes[order[i]];
        korch_tensor *in[KORCH_MAX_RANK] = {0}, *out[KORCH_PNODE_MAX_OUTPUTS] = {0};
        for (int k = 0; k < n->n_inputs; k++) in[k] = &vals[n->inputs[k]];
        for (int k = 0; k < n->n_outputs && st == KORCH_OK; k++) {
            int v = n->outputs[k];
            if (v < 0) continue;
            /* the float32 graph: a precision cast copies its float32 value */
            korch_dtype dt = mode->float32_only && korch_pnode_is_precision_cast(pg, order[i]) ? KORCH_DTYPE_FLOAT32
                                                                                                : pg->values[v].dtype;
            st = korch_tensor_alloc(&vals[v], dt, &pg->values[v].shape);
            out[k] = &vals[v];
        }
        if (st != KORCH_OK) break;
        st = run_node(pg, order[i], in, out, mode);
        for (int k = 0; k < n->n_inputs; k++)
            if (--uses[n->inputs[k]] == 0) korch_tensor_free(&vals[n->inputs[k]]);
        for (int k = 0; k < n->n_outputs; k++)
            if (n->outputs[k] >= 0 && uses[n->outputs[k]] == 0) korch_tensor_free(&vals[n->outputs[k]]);
    }
    for (int i = 0; i < pg->n_outputs && st == KORCH_OK; i++) st = korch_tensor_clone(&vals[pg->outputs[i]], &outputs[i]);
    if (st != KORCH_OK)
        for (int i = 0; i < pg->n_outputs; i++) korch_tensor_free(&outputs[i]);
done:
    if (vals)
        for (int v = 0; v < pg->n_values; v++) korch_tensor_free(&vals[v]);
    free(vals);
    free(uses);
    free(order);
    return st;
}

const char *korch_layout_tag_name(korch_layout_tag t) {
    static const char *const names[] = {"generic", "transpose", "reshape", "slice", "concat", "pad",
                                        "expand",  "gather",    "resize",  "window", "depth_space"};
    _Static_assert(sizeof names / sizeof names[0] == KORCH_LAYOUT_TAG_COUNT, "layout tag names out of step");
    return (unsigned)t < KORCH_LAYOUT_TAG_COUNT ? names[t] : "?";
}

void korch_pgraph_dump(const korch_pgraph *pg, void *file) {
    FILE *f = file;
    static const char *const reduce_names[] = {"sum", "max", "min", "mean"};
    for (int i = 0; i < pg->n_nodes; i++) {
        const korch_pnode *n = &pg->nodes[i];
        if (n->dead) continue;
        char shape[96];
        int y = n->outputs[0];
        fprintf(f, "%%%d = ", y);
        switch (n->kind) {
        case KORCH_PRIM_ELEMENTWISE: fprintf(f, "ew.%s", korch_ew_name(n->u.ew.op)); break;
        case KORCH_PRIM_REDUCE: fprintf(f, "reduce.%s[axes=0x%x]", reduce_names[n->u.reduce.op], n->u.reduce.axes); break;
        case KORCH_PRIM_LAYOUT: fprintf(f, "layout.%s", korch_layout_tag_name(n->u.layout.tag)); break;
        case KORCH_PRIM_LINEAR:
            fprintf(f, "linear.%s", n->u.linear.op == KORCH_LINEAR_MATMUL ? "matmul"
                                    : n->u.linear.op == KORCH_LINEAR_CONV ? "conv" : "conv_transpose");
            if (n->u.linear.channels_last) fprintf(f, ".nhwc");
            if (n->u.linear.bf16) fprintf(f, ".bf16");
            break;
        case KORCH_PRIM_OPAQUE: fprintf(f, "opaque.%s", pg->source->nodes[n->u.opaque.source_node].op_type); break;
        default: fprintf(f, "?"); break;
        }
        fprintf(f, "(");
        for (int k = 0; k < n->n_inputs; k++) fprintf(f, k ? ", %%%d" : "%%%d", n->inputs[k]);
        fprintf(f, ") : %s %s\n", korch_dtype_name(pg->values[y].dtype),
                korch_shape_format(&pg->values[y].shape, shape, sizeof shape));
    }
}

korch_status korch_pgraph_interpret(const korch_pgraph *pg, const korch_tensor *inputs, korch_tensor *outputs) {
    interp_mode mode = {0};
    return interpret(pg, inputs, outputs, &mode);
}

korch_status korch_pgraph_interpret_fp32(const korch_pgraph *pg, const korch_tensor *inputs, korch_tensor *outputs) {
    interp_mode mode = {.float32_only = true};
    return interpret(pg, inputs, outputs, &mode);
}

korch_status korch_pgraph_interpret_jittered(const korch_pgraph *pg, const korch_tensor *inputs,
                                                  korch_tensor *outputs, uint64_t seed) {
    interp_mode mode = {.jitter_seed = seed | 1};
    return interpret(pg, inputs, outputs, &mode);
}
