/* Transcendental functions over arrays through glibc's libmvec (see
 * vmath.h). Built with -fno-math-errno (CMakeLists.txt): errno is not read
 * anywhere in korch, and without the flag gcc keeps the calls scalar.
 *
 * Every element passes through one block function: the input is copied into
 * an aligned block of VM_BLOCK elements (a short last block padded with
 * zeros), the block is computed with a constant trip count that the vector
 * length divides, so no element ever takes a scalar epilogue, and the
 * results are copied out. The copies also make in-place calls safe. */
#include "core/vmath.h"

#include <math.h>
#include <stdbool.h>
#include <string.h>

#include "core/cpu.h"

#if defined(__x86_64__) && defined(__GLIBC__) && defined(__GNUC__) && !defined(__clang__) && __GLIBC_PREREQ(2, 35)
/* `simd` lets gcc call the vector variants (_ZGVdN4v_exp, ...) from the
 * loops below; glibc 2.35 added tanh, erf and log1p to exp and log. */
#define VM_SIMD __attribute__((simd("notinbranch")))
VM_SIMD double exp(double);
VM_SIMD double log(double);
VM_SIMD double tanh(double);
VM_SIMD double erf(double);
VM_SIMD double log1p(double);
VM_SIMD float expf(float);
VM_SIMD float logf(float);
VM_SIMD float tanhf(float);
VM_SIMD float erff(float);
VM_SIMD float log1pf(float);
#define VM_HAVE_AVX2_PATH 1
#endif

/* VM_BLOCK: elements per block (every vector length divides it);
 * VM_PARALLEL_MIN: below this many elements a parallel region costs more
 * than it saves (the ops layer's KORCH_EW_PARALLEL_MIN) */
enum { VM_BLOCK = 64, VM_PARALLEL_MIN = 8192 };

/* One function per element type: the loop over a block with EXPR of `a`.
 * Each case is its own loop so that gcc vectorises each one simply. */
#define VM_CASE(FN, EXPR)                                                                          \
    case FN:                                                                                       \
        _Pragma("omp simd") for (int j = 0; j < VM_BLOCK; j++) {                                   \
            T a = x[j];                                                                            \
            y[j] = (EXPR);                                                                         \
        }                                                                                          \
        break;

/* softplus without overflow: x > 0 ? x + log1p(e^-x) : log1p(e^x), written
 * with selects (the same operations on every element) so it vectorises;
 * for x <= 0 the added 0 leaves log1p(e^x) (never -0) unchanged. */
#define VM_BODY(EXP, LOG, TANH, ERF, LOG1P, ONE, ZERO)                                             \
    switch (f) {                                                                                   \
        VM_CASE(KORCH_VM_EXP, EXP(a))                                                              \
        VM_CASE(KORCH_VM_LOG, LOG(a))                                                              \
        VM_CASE(KORCH_VM_TANH, TANH(a))                                                            \
        VM_CASE(KORCH_VM_ERF, ERF(a))                                                              \
        VM_CASE(KORCH_VM_SIGMOID, ONE / (ONE + EXP(-a)))                                           \
        VM_CASE(KORCH_VM_SOFTPLUS, (a > ZERO ? a : ZERO) + LOG1P(EXP(a > ZERO ? -a : a)))          \
        VM_CASE(KORCH_VM_MISH, a * TANH((a > ZERO ? a : ZERO) + LOG1P(EXP(a > ZERO ? -a : a))))    \
    default: break;                                                                                \
    }

#define VM_BLOCK_F64(NAME, ATTR)                                                                   \
    ATTR static void NAME(korch_vm_fn f, const double *restrict x, double *restrict y) {           \
        typedef double T;                                                                          \
        VM_BODY(exp, log, tanh, erf, log1p, 1.0, 0.0)                                              \
    }
#define VM_BLOCK_F32(NAME, ATTR)                                                                   \
    ATTR static void NAME(korch_vm_fn f, const float *restrict x, float *restrict y) {             \
        typedef float T;                                                                           \
        VM_BODY(expf, logf, tanhf, erff, log1pf, 1.0f, 0.0f)                                       \
    }

VM_BLOCK_F64(block_f64, )
VM_BLOCK_F32(block_f32, )
#ifdef VM_HAVE_AVX2_PATH
/* no FMA in the target: the formulas round as written on every path */
VM_BLOCK_F64(block_f64_avx2, __attribute__((target("avx2"))))
VM_BLOCK_F32(block_f32_avx2, __attribute__((target("avx2"))))
#endif

/* the AVX2 twin of a block function where the CPU has AVX2 */
#ifdef VM_HAVE_AVX2_PATH
#define VM_PICK(BASE) (korch_cpu_has_avx2() ? BASE##_avx2 : BASE)
#else
#define VM_PICK(BASE) BASE
#endif

/* Both precisions: copy a block in (zero-padded), compute it whole, copy
 * the m elements that are real out. */
#define VM_DRIVER(NAME, T, BASE)                                                                   \
    void NAME(korch_vm_fn f, const T *x, T *y, int64_t n) {                                        \
        void (*block)(korch_vm_fn, const T *restrict, T *restrict) = VM_PICK(BASE);                \
        _Alignas(64) T in[VM_BLOCK], out[VM_BLOCK];                                                \
        for (int64_t i = 0; i < n; i += VM_BLOCK) {                                                \
            int64_t m = n - i < VM_BLOCK ? n - i : VM_BLOCK;                                       \
            memcpy(in, x + i, (size_t)m * sizeof *in);                                             \
            if (m < VM_BLOCK) memset(in + m, 0, (size_t)(VM_BLOCK - m) * sizeof *in);              \
            block(f, in, out);                                                                     \
            memcpy(y + i, out, (size_t)m * sizeof *out);                                           \
        }                                                                                          \
    }
VM_DRIVER(korch_vm_f64, double, block_f64)
VM_DRIVER(korch_vm_f32, float, block_f32)

/* Chunks of whole blocks, so the blocks fall at the same offsets whatever
 * the thread count (not that it matters to the values: see vmath.h). */
void korch_vm_f32_parallel(korch_vm_fn f, const float *x, float *y, int64_t n) {
    enum { CHUNK = 16 * VM_BLOCK };
    int64_t chunks = (n + CHUNK - 1) / CHUNK;
#pragma omp parallel for schedule(static) if (n >= VM_PARALLEL_MIN)
    for (int64_t c = 0; c < chunks; c++) {
        int64_t b = c * CHUNK, m = n - b < CHUNK ? n - b : CHUNK;
        korch_vm_f32(f, x + b, y + b, m);
    }
}
