/* Which oneDNN eltwise function is y = g(x)?
 *
 * Fission spreads activations over several primitives (x*sigmoid(x),
 * 0.5*x*(1+erf(x/sqrt2)), x*tanh(softplus(x)), x*clip(x/6+1/2, 0, 1), ...),
 * and exporters write them in many equivalent forms. Rather than matching
 * each form structurally, the analyser evaluates the sub-graph at sample
 * points (in double, rounding each float32 intermediate like the kernels do)
 * and this file compares the samples with oneDNN's functions. Agreement to
 * 1e-5 relative on 80 points over [-8, 8] separates even gelu_erf from
 * gelu_tanh (they differ by up to 2e-4), and a wrong match is impossible to
 * miss in the tests, which compare every fused kernel with the interpreter. */
#include <math.h>
#include <string.h>

#include "backend/dnnl/dnnl_internal.h"

int dn_match_points(double *xs, int cap) {
    int n = 0;
    for (int i = 0; i <= 64 && n < cap; i++) xs[n++] = -8.0 + 0.25 * i;
    static const double extra[] = {-0.1, 0.1, -0.01, 0.01, -1e-3, 1e-3, -0.3, 0.3, -0.7, 0.7,
                                   -1.3, 1.3, -2.6, 2.6, 11.0, -11.0};
    for (size_t i = 0; i < sizeof extra / sizeof extra[0] && n < cap; i++) xs[n++] = extra[i];
    return n;
}

static double softplus(double x) { return x > 0 ? x + log1p(exp(-x)) : log1p(exp(x)); }

static double eval(dnnl_alg_kind_t alg, double x, double a, double b) {
    switch (alg) {
    case dnnl_eltwise_swish: return x / (1.0 + exp(-a * x));
    case dnnl_eltwise_gelu_erf: return 0.5 * x * (1.0 + erf(x * 0.70710678118654752440));
    case dnnl_eltwise_gelu_tanh:
        return 0.5 * x * (1.0 + tanh(0.79788456080286535588 * (x + 0.044715 * x * x * x)));
    case dnnl_eltwise_mish: return x * tanh(softplus(x));
    case dnnl_eltwise_hardswish: return x * fmin(fmax(x + 3.0, 0.0), 6.0) / 6.0;
    case dnnl_eltwise_logsigmoid: return -softplus(-x);
    case dnnl_eltwise_logistic: return 1.0 / (1.0 + exp(-x));
    case dnnl_eltwise_tanh: return tanh(x);
    case dnnl_eltwise_soft_relu: return softplus(x);
    case dnnl_eltwise_square: return x * x;
    case dnnl_eltwise_abs: return fabs(x);
    case dnnl_eltwise_exp: return exp(x);
    case dnnl_eltwise_relu: return x > 0 ? x : a * x;
    case dnnl_eltwise_linear: return a * x + b;
    case dnnl_eltwise_clip: return fmin(fmax(x, a), b);
    case dnnl_eltwise_elu: return x > 0 ? x : a * (exp(x) - 1.0);
    default: return NAN;
    }
}

static bool agrees(dnnl_alg_kind_t alg, double a, double b, const double *xs, const double *ys, int n) {
    for (int i = 0; i < n; i++) {
        double r = eval(alg, xs[i], a, b), y = ys[i];
        if (isnan(r) || isnan(y)) {
            if (isnan(r) != isnan(y)) return false;
            continue;
        }
        if (isinf(r) || isinf(y)) {
            if (r != y) return false;
            continue;
        }
        if (fabs(r - y) > 1e-5 * (1.0 + fabs(r))) return false;
    }
    return true;
}

static int at(const double *xs, int n, double x) {
    for (int i = 0; i < n; i++)
        if (xs[i] == x) return i;
    return -1;
}

bool dn_match_function(const double *xs, const double *ys, int n, const float *consts, int n_consts,
                       dnnl_alg_kind_t *alg, float *alpha, float *beta) {
    *alpha = 0;
    *beta = 0;
    /* parameter-free functions */
    static const dnnl_alg_kind_t plain[] = {dnnl_eltwise_gelu_erf, dnnl_eltwise_gelu_tanh, dnnl_eltwise_mish,
                                            dnnl_eltwise_hardswish, dnnl_eltwise_logsigmoid, dnnl_eltwise_logistic,
                                            dnnl_eltwise_tanh,      dnnl_eltwise_soft_relu,  dnnl_eltwise_square,
                                            dnnl_eltwise_abs,       dnnl_eltwise_exp};
    for (size_t i = 0; i < sizeof plain / sizeof plain[0]; i++)
        if (agrees(plain[i], 0, 0, xs, ys, n)) {
            *alg = plain[i];
            return true;
        }
    /* swish(alpha): alpha among 1 and the constants the sub-graph uses */
    for (int i = -1; i < n_consts; i++) {
        double cands[2] = {i < 0 ? 1.0 : consts[i], i < 0 ? 1.0 : (consts[i] != 0 ? 1.0 / consts[i] : 0)};
        for (int k = 0; k < 2; k++)
            if (cands[k] != 0 && agrees(dnnl_eltwise_swish, cands[k], 0, xs, ys, n)) {
                *alg = dnnl_eltwise_swish;
                *alpha = (float)cands[k];
                return true;
            }
    }
    /* fitted families: linear a*x+b, (leaky) relu, clip, elu */
    int i0 = at(xs, n, 0.0), i1 = at(xs, n, 1.0), im = at(xs, n, -1.0), i2 = at(xs, n, -8.0);
    if (i0 < 0 || i1 < 0 || im < 0 || i2 < 0) return false;
    double b = ys[i0], a = ys[i1] - ys[i0];
    if (isfinite(a) && isfinite(b) && agrees(dnnl_eltwise_linear, a, b, xs, ys, n)) {
        *alg = dnnl_eltwise_linear;
        *alpha = (float)a;
        *beta = (float)b;
        return true;
    }
    double slope = -ys[im];
    if (isfinite(slope) && agrees(dnnl_eltwise_relu, slope, 0, xs, ys, n)) {
        *alg = dnnl_eltwise_relu;
        *alpha = (float)slope;
        return true;
    }
    double lo = INFINITY, hi = -INFINITY;
    for (int i = 0; i < n; i++) {
        lo = fmin(lo, ys[i]);
        hi = fmax(hi, ys[i]);
    }
    if (lo < hi && agrees(dnnl_eltwise_clip, lo, hi, xs, ys, n)) {
        *alg = dnnl_eltwise_clip;
        *alpha = (float)lo;
        *beta = (float)hi;
        return true;
    }
    double ealpha = -ys[i2] / (1.0 - exp(-8.0));
    if (isfinite(ealpha) && agrees(dnnl_eltwise_elu, ealpha, 0, xs, ys, n)) {
        *alg = dnnl_eltwise_elu;
        *alpha = (float)ealpha;
        return true;
    }
    return false;
}

const char *dn_alg_name(dnnl_alg_kind_t alg) {
    switch (alg) {
    case dnnl_eltwise_relu: return "relu";
    case dnnl_eltwise_tanh: return "tanh";
    case dnnl_eltwise_elu: return "elu";
    case dnnl_eltwise_square: return "square";
    case dnnl_eltwise_abs: return "abs";
    case dnnl_eltwise_sqrt: return "sqrt";
    case dnnl_eltwise_linear: return "linear";
    case dnnl_eltwise_soft_relu: return "soft_relu";
    case dnnl_eltwise_logistic: return "logistic";
    case dnnl_eltwise_exp: return "exp";
    case dnnl_eltwise_gelu_tanh: return "gelu_tanh";
    case dnnl_eltwise_swish: return "swish";
    case dnnl_eltwise_log: return "log";
    case dnnl_eltwise_clip: return "clip";
    case dnnl_eltwise_pow: return "pow";
    case dnnl_eltwise_gelu_erf: return "gelu_erf";
    case dnnl_eltwise_logsigmoid: return "logsigmoid";
    case dnnl_eltwise_mish: return "mish";
    case dnnl_eltwise_hardswish: return "hardswish";
    case dnnl_eltwise_round: return "round";
    case dnnl_eltwise_bounded_relu: return "bounded_relu";
    case dnnl_eltwise_clip_v2: return "clip_v2";
    case dnnl_eltwise_relu_use_dst_for_bwd: return "relu_dst";
    case dnnl_eltwise_elu_use_dst_for_bwd: return "elu_dst";
    case dnnl_eltwise_clip_v2_use_dst_for_bwd: return "clip_v2_dst";
    case dnnl_binary_add: return "add";
    case dnnl_binary_mul: return "mul";
    case dnnl_binary_sub: return "sub";
    case dnnl_binary_div: return "div";
    case dnnl_binary_max: return "max";
    case dnnl_binary_min: return "min";
    default: return "?";
    }
}
