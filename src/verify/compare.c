/* The tolerance rules (docs/verification.md): how far a kernel's or a plan's
 * result may be from the reference before it is called wrong.
 *
 * Why these terms:
 * - rtol |want|: float32 kernels that use other (correct) formulas or
 *   vectorised maths libraries than the interpreter differ by a few ulps
 *   relative to each element;
 * - atol rms(want) sqrt(max(16, reduction)): a sum of K float32 terms
 *   carries a rounding error that grows like sqrt(K) times the magnitude of
 *   the sum, and kernels sum in other orders than the interpreter;
 * - sensitivity |want - perturbed|: where the reference itself moves when
 *   its inputs move by a few ulps (a difference of nearly equal values, a
 *   division by a small one), the kernel may move as much;
 * - source_atol sources sqrt(max(16, reduction)): the rounding floor. An
 *   output can be a small remnant of large values, down to exactly 0 in the
 *   reference (ReduceSum(Concat(x, -x)), seed 6068 of korch-difftest): its
 *   own RMS then says nothing about the noise, which is float32 rounding of
 *   the values it was computed from, so the floor scales with them. The
 *   perturbed reference does not see it either: perturbing x moves -x alike,
 *   and the reference still cancels exactly.
 * The constants leave a wide margin over the rounding noise measured on the
 * zoo and are far below the errors of real faults (a repeated post-op, a
 * missed tail, a wrong index are errors of the order of the values). */
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "verify/verify.h"

/* The rounding floor's margin, in float32 epsilons (2^-23) per
 * sqrt(max(16, reduction)); plans take ten times it (plan_check.c).
 * Measured (docs/verification.md, "The rounding floor"): seed 6068's fused
 * ReduceSum of 1008 cancelling terms needs 0.36 (its plans 0.001); a
 * cancelling sum of 2048 random-sign terms needs 6.0 in a kernel and 68 in
 * a plan (whose reduction term is 1); 16 and 160 pass both with 2.4x to
 * spare, and 150 random graphs needed none. Kept small on purpose: the
 * floor is 1.9e-6 x sqrt(max(16, K)) of the largest source, about the size
 * of the atol term for ordinary data, far below a real fault. */
#define SOURCE_EPSILONS 16.0

korch_verify_tolerance korch_verify_tolerance_for(int64_t reduction) {
    return (korch_verify_tolerance){.rtol = 1e-4, .atol = 1e-5, .reduction = reduction < 1 ? 1 : reduction,
                                    .sensitivity = 8.0, .source_atol = SOURCE_EPSILONS * FLT_EPSILON};
}

static bool is_float(korch_dtype d) {
    return d == KORCH_DTYPE_FLOAT32 || d == KORCH_DTYPE_FLOAT64 || d == KORCH_DTYPE_FLOAT16 || d == KORCH_DTYPE_BFLOAT16;
}

double korch_verify_max_abs(const korch_tensor *t) {
    if (!is_float(t->dtype) || !t->data) return 0;
    int64_t n = korch_tensor_numel(t);
    double m = 0;
    if (t->dtype == KORCH_DTYPE_FLOAT32) {
        const float *f = t->data;
        for (int64_t i = 0; i < n; i++) {
            double a = fabs((double)f[i]);
            if (a > m && a <= DBL_MAX) m = a; /* NaN compares false; infinities skipped */
        }
        return m;
    }
    for (int64_t i = 0; i < n; i++) {
        double a = fabs(korch_tensor_get_f64(t, i));
        if (a > m && a <= DBL_MAX) m = a;
    }
    return m;
}

/* NaN, +Inf, -Inf or finite, as one small number. */
static int fclass(double x) {
    if (isnan(x)) return 1;
    if (isinf(x)) return x > 0 ? 2 : 3;
    return 0;
}

static void note_worst(korch_verify_diff *d, int64_t i, double got, double want, double tol, double ratio) {
    if (d->worst_index < 0 || ratio > d->worst_ratio) {
        d->worst_index = i;
        d->worst_got = got;
        d->worst_want = want;
        d->worst_tol = tol;
        d->worst_ratio = ratio;
    }
}

bool korch_verify_compare(const korch_tensor *got, const korch_tensor *want, const korch_tensor *perturbed,
                          const korch_verify_tolerance *tol, korch_verify_diff *d, char *why, size_t why_size) {
    memset(d, 0, sizeof *d);
    d->worst_index = -1;
    if (why && why_size) why[0] = '\0';
    char a[96], b[96];
    if (got->dtype != want->dtype || !korch_shape_equal(&got->shape, &want->shape)) {
        if (why)
            snprintf(why, why_size, "got %s %s, the reference is %s %s", korch_dtype_name(got->dtype),
                     korch_shape_format(&got->shape, a, sizeof a), korch_dtype_name(want->dtype),
                     korch_shape_format(&want->shape, b, sizeof b));
        d->worst_ratio = INFINITY;
        return false;
    }
    if (perturbed && (perturbed->dtype != want->dtype || !korch_shape_equal(&perturbed->shape, &want->shape)))
        perturbed = NULL;
    int64_t n = korch_tensor_numel(want);
    d->elements = n;
    bool fl = is_float(want->dtype);
    /* float32, nearly every tensor compared: read it directly rather than
     * through the dtype switch of korch_tensor_get_f64 per element (a tenth
     * of the time of kernel verification went there) */
    const float *gf = NULL, *wf = NULL, *pf = NULL;
    if (want->dtype == KORCH_DTYPE_FLOAT32) {
        gf = got->data;
        wf = want->data;
        pf = perturbed ? perturbed->data : NULL;
    }
#define AT(t, f, i) ((f) ? (double)(f)[i] : korch_tensor_get_f64((t), (i)))
    double sum2 = 0;
    int64_t finite = 0;
    for (int64_t i = 0; fl && i < n; i++) {
        double w = AT(want, wf, i);
        if (isfinite(w)) {
            sum2 += w * w;
            finite++;
        }
    }
    d->rms = finite ? sqrt(sum2 / (double)finite) : 0;
    double k = (double)(tol->reduction > 16 ? tol->reduction : 16);
    double sources = isfinite(tol->sources) && tol->sources > 0 ? tol->sources : 0;
    double abs_floor = (tol->atol * d->rms + tol->source_atol * sources) * sqrt(k);
    /* A float16 / bfloat16 result is float32 work rounded once at the end
     * (docs/precision.md): float32 noise may move it by one step of its
     * format, which the tolerance allows (2^-10 or 2^-7 of its size, and the
     * smallest subnormal step near zero). */
    double step = want->dtype == KORCH_DTYPE_FLOAT16 ? ldexp(1.0, -10) : want->dtype == KORCH_DTYPE_BFLOAT16 ? ldexp(1.0, -7) : 0;
    double step_floor = want->dtype == KORCH_DTYPE_FLOAT16 ? ldexp(1.0, -24) : ldexp(1.0, -133);
    for (int64_t i = 0; i < n; i++) {
        double g = AT(got, gf, i), w = AT(want, wf, i);
        double p = perturbed ? AT(perturbed, pf, i) : w;
        if (!fl) {
            if (g == w) continue;
            if (p != w) {
                d->exempt++;
                continue;
            }
            d->mismatches++;
            note_worst(d, i, g, w, 0, INFINITY);
            continue;
        }
        int cw = fclass(w), cg = fclass(g);
        if (cw != 0 || fclass(p) != 0) {
            if (cw != fclass(p)) { /* the reference's class is unstable here */
                d->exempt++;
                continue;
            }
            if (cg == cw) continue; /* same NaN or the same infinity */
            d->mismatches++;
            note_worst(d, i, g, w, 0, INFINITY);
            continue;
        }
        if (cg != 0) {
            d->mismatches++;
            note_worst(d, i, g, w, 0, INFINITY);
            continue;
        }
        double err = fabs(g - w);
        double t = tol->rtol * fabs(w) + abs_floor + tol->sensitivity * fabs(w - p);
        if (step > 0) t += step * fabs(w) + step_floor;
        t += tol->step;
        if (err > d->max_abs) d->max_abs = err;
        /* an all-zero reference with all-zero (or unknown) sources has no
         * scale: float32 noise of its own size */
        if (t <= 0) t = 1e-30;
        double ratio = err / t;
        if (ratio > 1) d->mismatches++;
        note_worst(d, i, g, w, t, ratio);
    }
#undef AT
    if (d->mismatches && why) {
        snprintf(why, why_size, "%lld of %lld elements differ", (long long)d->mismatches, (long long)n);
    }
    return d->mismatches == 0;
}

void korch_verify_diff_format(const korch_verify_diff *d, const korch_shape *shape, char *out, size_t size) {
    char at[96] = "";
    if (d->worst_index >= 0 && shape) {
        /* the worst element's coordinates, e.g. [0,3,17,5] */
        int64_t rem = d->worst_index, c[KORCH_MAX_RANK];
        for (int k = shape->rank - 1; k >= 0; k--) {
            int64_t dim = shape->dims[k] > 0 ? shape->dims[k] : 1;
            c[k] = rem % dim;
            rem /= dim;
        }
        size_t len = 0;
        len += (size_t)snprintf(at + len, sizeof at - len, "[");
        for (int k = 0; k < shape->rank && len < sizeof at; k++)
            len += (size_t)snprintf(at + len, sizeof at - len, "%s%lld", k ? "," : "", (long long)c[k]);
        if (len < sizeof at) snprintf(at + len, sizeof at - len, "]");
    }
    if (d->mismatches == 0) {
        snprintf(out, size, "%lld elements within tolerance (worst error/tolerance %.3g, max |diff| %.3g)",
                 (long long)d->elements, d->worst_index >= 0 ? d->worst_ratio : 0.0, d->max_abs);
        return;
    }
    snprintf(out, size, "%lld of %lld elements differ; worst %s: %.9g, reference %.9g (tolerance %.3g)",
             (long long)d->mismatches, (long long)d->elements, at, d->worst_got, d->worst_want, d->worst_tol);
}

/* The noise rules of plan verification (plan_check.c). How far a plan may be from its reference, as a whole tensor, where the
 * model rounds chaotically: a bf16 plan from the bf16 graph interpreted, a
 * plan of a model that quantizes computed values (QuantizeLinear, fissioned
 * into an exact division and a rounding) from the reference executor.
 *
 * bf16: an operand within a float32 rounding of a tie rounds either way, and
 * a flipped operand moves a product by 2^-9 of itself, which flips more
 * operands downstream; a few layers deep two correct bf16 computations
 * (other summation orders) differ at the bf16 noise level, elementwise
 * unpredictably (ResNet-50: 5 of 1000 logits past the float32 rule with its
 * 8x sensitivity term). Quantization: a value x / scale within float32 noise
 * of a tie rounds to either integer, one step, which the next convolution
 * spreads over its outputs, and the next quantizer flips more (a QDQ
 * MobileNetV2: 5 of 1000 outputs past the float32 rule, every kernel right
 * alone).
 *
 * The computation with those values (the bf16 primitives' operands in the
 * interpretation; the quantizers' x in the reference executor; the float
 * inputs) moved by 2^-20 is such a second computation (plan_check.c,
 * perturbed_run; perturbing the inputs alone moves nothing in BERT, whose
 * inputs are token ids), so the plan's distance from the reference must be
 * of its size: max and mean of |plan - reference| at most NOISE_FACTOR times those of |perturbed - reference|, plus the float32
 * floor (1e-4 of the largest |element|). A kernel error is caught by each
 * kernel's own check (float32 tolerances; bf16 operands rounded exactly
 * alike; integers exactly) and a fault in how the plan runs them is an
 * error far above the noise. The factor is measured: docs/precision.md. */
#define NOISE_FACTOR 4.0

bool korch_verify_noise_compare(const korch_tensor *got, const korch_tensor *want, const korch_tensor *pert,
                          const char *rule, double *ratio, char *text, size_t size) {
    if (got->dtype != KORCH_DTYPE_FLOAT32 || want->dtype != KORCH_DTYPE_FLOAT32 ||
        pert->dtype != KORCH_DTYPE_FLOAT32 || korch_tensor_numel(got) != korch_tensor_numel(want) ||
        korch_tensor_numel(pert) != korch_tensor_numel(want))
        return false;
    const float *g = got->data, *w = want->data, *p = pert->data;
    int64_t n = korch_tensor_numel(want);
    double max_d = 0, sum_d = 0, max_p = 0, sum_p = 0, scale = 0;
    for (int64_t i = 0; i < n; i++) {
        if (isnan(w[i]) || isinf(w[i])) {
            if (!(isnan(w[i]) ? isnan(g[i]) : g[i] == w[i])) return false; /* NaN meets NaN, inf the same inf */
            continue;
        }
        if (!isfinite(g[i])) return false;
        double d = fabs((double)g[i] - w[i]), e = isfinite(p[i]) ? fabs((double)p[i] - w[i]) : 0;
        max_d = fmax(max_d, d);
        max_p = fmax(max_p, e);
        sum_d += d;
        sum_p += e;
        scale = fmax(scale, fabs((double)w[i]));
    }
    double floor = 1e-4 * scale, nn = n > 0 ? (double)n : 1;
    double r_max = max_d / (NOISE_FACTOR * max_p + floor + 1e-30);
    double r_mean = (sum_d / nn) / (NOISE_FACTOR * sum_p / nn + floor + 1e-30);
    *ratio = fmax(r_max, r_mean);
    snprintf(text, size,
             "as a whole tensor (%s noise rule): max |plan - reference| %.3g against %.3g for values perturbed "
             "by 2^-20, mean %.3g against %.3g",
             rule, max_d, max_p, sum_d / nn, sum_p / nn);
    return *ratio <= 1;
}

