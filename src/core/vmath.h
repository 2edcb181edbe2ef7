/* Transcendental functions over arrays, for the two references (the
 * reference executor in float, the primitive interpreter in double).
 *
 * The scalar libm calls were 40-47% of both references' time on a model with
 * Mish (yolov4: Softplus and Tanh after 72 convolutions; bench/verify/
 * RESULTS.md), and the references are what verification costs. These run
 * the same formulas through glibc's vector variants (libmvec), AVX2 where
 * the CPU has it.
 *
 * Deterministic: every element goes through the same vector variant (work
 * is cut into blocks at fixed offsets and a short last block is padded), so
 * a value does not depend on the thread count or on where a caller splits
 * its range. Accuracy: glibc documents at most 4 ulp for these variants;
 * tests/core/test_vmath.c bounds them against the scalar libm functions and
 * checks NaN, infinities and zeros exactly (docs/verification.md, "The
 * references' maths"). Without glibc and GCC the scalar functions run. */
#ifndef KORCH_CORE_VMATH_H
#define KORCH_CORE_VMATH_H

#include <stdint.h>

typedef enum korch_vm_fn {
    KORCH_VM_EXP,      /* e^x */
    KORCH_VM_LOG,      /* ln x */
    KORCH_VM_TANH,     /* tanh x */
    KORCH_VM_ERF,      /* erf x */
    KORCH_VM_SIGMOID,  /* 1 / (1 + e^-x) */
    KORCH_VM_SOFTPLUS, /* x > 0 ? x + log1p(e^-x) : log1p(e^x) */
    KORCH_VM_MISH,     /* x * tanh(softplus(x)) */
    KORCH_VM_COUNT
} korch_vm_fn;

/* y[i] = f(x[i]) for 0 <= i < n, computed in double. x and y may be the same
 * array. Serial: callers parallelise over their own ranges. */
void korch_vm_f64(korch_vm_fn f, const double *x, double *y, int64_t n);

/* y[i] = f(x[i]) computed in float (the float libm semantics of the ONNX
 * reference). x and y may be the same array. Serial. */
void korch_vm_f32(korch_vm_fn f, const float *x, float *y, int64_t n);

/* korch_vm_f32 over n elements, in parallel for large n (OpenMP). */
void korch_vm_f32_parallel(korch_vm_fn f, const float *x, float *y, int64_t n);

#endif
