/* korch-difftest's comparison of a plan's outputs with the reference
 * executor's, with its own tolerance (independent of the product's):
 *
 *   |got - want| <= 1e-4 * |want| + scale * (DT_ATOL + DT_PER_TERM * terms)
 *
 * scale: the largest |want| of the output, or the largest magnitude of the
 * values it is computed from if larger (a kernel's rounding is relative to
 * the magnitudes it handles, not to one small element); terms: the summed
 * reduction lengths on the longest path from the inputs (dt_reduction_terms):
 * each product of a convolution or matmul, each element of a reduction or
 * normalisation may be added in another order. NaN must meet NaN and an
 * infinity the same infinity; integers and bools must be equal.
 *
 * Two more terms, from the formats the model asks for (features half, qdq):
 * a float16/bfloat16 output adds one step of its format (2^-10 or 2^-7 of
 * |want|, and the smallest subnormal near zero: float32 noise before the
 * final rounding may move it to the neighbouring value; docs/precision.md),
 * and an output of DequantizeLinear adds one quantization step, the scale of
 * the element's channel (noise before the QuantizeLinear may round it the
 * other way; docs/quantization.md). */
#ifndef KORCH_DIFFTEST_COMPARE_H
#define KORCH_DIFFTEST_COMPARE_H

#include <stdbool.h>

#include "ir/graph.h"

#define DT_RTOL 1e-4
#define DT_ATOL 2e-5
#define DT_PER_TERM 2e-7

typedef struct dt_mismatch {
    long count; /* elements beyond the bound */
    int64_t index; /* the worst one (largest error / bound) */
    double got, want, err, bound;
    double worst_ratio; /* max over elements of error / bound (< 1: within) */
    char what[160]; /* dtype or shape mismatch: the reason */
} dt_mismatch;

/* true when got matches want; m describes the worst element either way.
 * scale_floor: the scale is at least this (dt_output_scales). */
bool dt_compare(const korch_tensor *got, const korch_tensor *want, double terms, double scale_floor, dt_mismatch *m);

/* One quantization step per element of a DequantizeLinear output: element i
 * is in channel (i / inner) % n, whose step is scale[channel]. */
typedef struct dt_qstep {
    int n; /* 0: not a dequantized output */
    int64_t inner;
    double *scale;
} dt_qstep;

/* dt_compare with the quantization step q (NULL or q->n == 0: none). */
bool dt_compare_q(const korch_tensor *got, const korch_tensor *want, double terms, double scale_floor,
                  const dt_qstep *q, dt_mismatch *m);

/* --precision bf16: rounding both operands of a product to bfloat16 moves
 * it by up to 2^-8 of itself, and a sum of such products by up to 2^-8 of
 * the magnitudes summed; through a chain of linear operators the bound
 * grows per operator. Adds DT_BF16_PER_LINEAR of the output's scale for
 * every Conv, ConvTranspose, MatMul and Gemm of g (a bound on the depth of
 * any path), expressed in `terms` (each worth DT_PER_TERM of the scale). A
 * generous bound: the plan's kernels are checked against the bf16
 * interpretation exactly by korch itself (--verify); this catches what is
 * grossly wrong (a plan run wrongly, a kernel not rounding at all is
 * caught only by the product's own check). */
#define DT_BF16_PER_LINEAR 0x1p-6
void dt_bf16_terms(const korch_graph *g, double *terms);

/* q for output `value` of g: its producer is a DequantizeLinear with a
 * constant scale; q->n = 0 otherwise. q->scale is malloc'ed (dt_qstep_free). */
void dt_qstep_of(const korch_graph *g, int value, dt_qstep *q);
void dt_qstep_free(dt_qstep *q);

/* The largest finite |element| of every value of a reference run
 * (korch_reference_run_observed's observer; user: a double per value). */
void dt_observe_magnitude(void *user, const korch_graph *g, int value, const korch_tensor *t);
/* scales[i] for g->outputs[i]: the largest magnitude among the non-constant
 * values it depends on (graph inputs included). Rounding happens in those
 * intermediates, and an output can be a small remnant of large ones: a
 * cancellation, or the minimum of |x| (found by the campaign, seed 5374). */
void dt_output_scales(const korch_graph *g, const double *magnitude, double *scales);

/* terms[i] for g->outputs[i]. */
void dt_reduction_terms(const korch_graph *g, double *terms);

#endif
