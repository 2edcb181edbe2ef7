/* The steps of a post-op chain, as fission writes them: binary operations
 * with an operand of every broadcast class in both operand orders, and the
 * activations (single primitives and the multi-primitive spellings of GELU,
 * HardSwish, HardSigmoid, SiLU, Mish, SELU, Clip as Max/Min, ...), plus
 * "the previous step again" (the same constant used twice) and "the previous
 * operand with another operation".
 *
 * Each chain tracks an interval holding its current value (starting from the
 * measured range of the linear output). A step is applied only where it is
 * well conditioned: log/sqrt/pow and s/x need the value away from zero, exp
 * a bounded argument, and no step may take the value beyond +-1000. This
 * keeps honest rounding differences far below the tolerance, and a step that
 * does not apply is skipped (counted) rather than compared in a domain where
 * float32 and double legitimately disagree. */
#ifndef KORCH_TESTS_DNNL_POSTOP_STEPS_H
#define KORCH_TESTS_DNNL_POSTOP_STEPS_H

#include <stdarg.h>

#include "postop_bases.h"

/* operand broadcast classes */
typedef enum pc_cls {
    PC_S0,    /* scalar constant, shape () */
    PC_S1,    /* constant of shape (1) */
    PC_SN,    /* constant of shape (1,1,...) of the output's rank */
    PC_SR,    /* run-time input of shape (1) */
    PC_PC,    /* per-channel constant: (C,1,1) channels-first, (C) channels-last and matmul */
    PC_PC4,   /* per-channel constant of the output's rank: (1,C,1,1), (1,1,1,C), (1,N) */
    PC_PCR,   /* per-channel run-time input; (N,C,1,1) for a batch of images */
    PC_ROW,   /* matmul: per row (M,1); convolution: per position (H,W) / (H,W,1) */
    PC_BATCH, /* per batch (B,1,1) / (N,1,1,1) (batched matmuls, batches of images) */
    PC_FULLC, /* constant of the output's shape */
    PC_FULLR, /* run-time input of the output's shape */
    PC_NCLS
} pc_cls;

static const char *const pc_cls_name[] = {"()", "(1)", "(1..1)", "rt(1)", "chan", "chan4", "rt-chan", "row", "batch",
                                          "full", "rt-full"};

typedef enum pc_act {
    A_RELU, A_RELU_MAX0, A_LEAKY, A_PRELU, A_CLIP, A_RELU6, A_MAXMIN, A_SIGMOID, A_TANH, A_ELU, A_SELU, A_EXP, A_ABS,
    A_NEG, A_AFFINE, A_SOFTPLUS, A_HSIGMOID, A_HSWISH, A_GELU_ERF, A_GELU_ERF2, A_GELU_TANH, A_SWISH, A_MISH, A_SQRT,
    A_LOG, A_RSQRT, A_RECIP, A_SQUARE, A_POWC2, A_POWC3, A_POW_HALF, A_DOUBLE, A_ERF, A_COUNT
} pc_act;

static const char *const pc_act_name[] = {
    "relu", "max(x,0)", "leakyrelu", "prelu(s)", "clip", "relu6", "max-min", "sigmoid", "tanh", "elu", "selu", "exp",
    "abs", "neg", "affine", "softplus", "hardsigmoid", "hardswish", "gelu-erf", "gelu-erf'", "gelu-tanh", "silu",
    "mish", "sqrt", "log", "rsqrt", "recip", "x*x", "x^2", "x^3", "pow(x,.5)", "x+x", "erf"};

typedef enum pc_kind { PC_BIN, PC_ACT, PC_AGAIN, PC_REUSE } pc_kind;

typedef struct pc_step {
    pc_kind kind;
    korch_ew_op op; /* PC_BIN */
    bool sv;        /* PC_BIN: operand first (s - x, s / x) */
    pc_cls cls;     /* PC_BIN */
    pc_act act;     /* PC_ACT */
} pc_step;

typedef struct pc_chain {
    pc_base *b;
    int v;
    double lo, hi;
    double err;       /* absolute error oneDNN's approximations may add (see pc_image) */
    int steps;
    char text[600];
    /* the last step, for PC_AGAIN / PC_REUSE */
    pc_step last;
    int last_operand; /* value, or -1 */
    double olo, ohi;  /* its range */
    float p0, p1;     /* the last activation's parameters */
} pc_chain;

/* The chain starts with the linear output and its float32 accumulation
 * error (relative to its largest magnitude). */
static inline pc_chain pc_chain_start(pc_base *b) {
    double err = 2e-6 * fmax(1.0, sqrt((double)b->K) / 8) * fmax(fabs(b->lo), fabs(b->hi));
    return (pc_chain){.b = b, .v = b->y, .lo = b->lo, .hi = b->hi, .err = err, .last_operand = -1};
}

/* ---- scalar meanings (for the interval) ------------------------------------------ */

static inline double pc_f(pc_act a, double x, double p0, double p1) {
    switch (a) {
    case A_RELU: case A_RELU_MAX0: return x > 0 ? x : 0;
    case A_LEAKY: case A_PRELU: return x > 0 ? x : p0 * x;
    case A_CLIP: case A_RELU6: case A_MAXMIN: return fmin(fmax(x, p0), p1);
    case A_SIGMOID: return 1 / (1 + exp(-x));
    case A_TANH: return tanh(x);
    case A_ELU: return x > 0 ? x : p0 * (exp(x) - 1);
    case A_SELU: return 1.0507 * (x > 0 ? x : 1.6733 * (exp(x) - 1));
    case A_EXP: return exp(x);
    case A_ABS: return fabs(x);
    case A_NEG: return -x;
    case A_AFFINE: return p0 * x + p1;
    case A_SOFTPLUS: return x > 0 ? x + log1p(exp(-x)) : log1p(exp(x));
    case A_HSIGMOID: return fmin(fmax(0.2 * x + 0.5, 0), 1);
    case A_HSWISH: return x * fmin(fmax(x / 6 + 0.5, 0), 1);
    case A_GELU_ERF: case A_GELU_ERF2: return 0.5 * x * (1 + erf(x / sqrt(2.0)));
    case A_GELU_TANH: return 0.5 * x * (1 + tanh(0.7978845608 * (x + 0.044715 * x * x * x)));
    case A_SWISH: return x / (1 + exp(-x));
    case A_MISH: return x * tanh(x > 0 ? x + log1p(exp(-x)) : log1p(exp(x)));
    case A_SQRT: case A_POW_HALF: return sqrt(x);
    case A_LOG: return log(x);
    case A_RSQRT: return 1 / sqrt(x);
    case A_RECIP: return 1 / x;
    case A_SQUARE: case A_POWC2: return x * x;
    case A_POWC3: return x * x * x;
    case A_DOUBLE: return 2 * x;
    case A_ERF: return erf(x);
    default: return NAN;
    }
}

static inline bool pc_needs_positive(pc_act a) {
    return a == A_SQRT || a == A_LOG || a == A_RSQRT || a == A_RECIP || a == A_POW_HALF;
}

/* Image of [lo, hi] under a continuous function (dense samples, padded),
 * and the function's largest slope there. */
static inline void pc_image(pc_act a, double p0, double p1, double lo, double hi, double *olo, double *ohi,
                            double *slope) {
    double mn = INFINITY, mx = -INFINITY, prev = 0, L = 0;
    for (int i = 0; i <= 256; i++) {
        double x = lo + (hi - lo) * i / 256.0, y = pc_f(a, x, p0, p1);
        mn = fmin(mn, y);
        mx = fmax(mx, y);
        if (i > 0 && hi > lo) L = fmax(L, fabs(y - prev) / ((hi - lo) / 256.0));
        prev = y;
    }
    double pad = 0.01 * (mx - mn) + 1e-6;
    *olo = mn - pad;
    *ohi = mx + pad;
    *slope = L;
}

/* ---- building --------------------------------------------------------------------- */

static inline void pc_text(pc_chain *c, const char *fmt, ...) KORCH_PRINTF(2, 3);
static inline void pc_text(pc_chain *c, const char *fmt, ...) {
    size_t n = strlen(c->text);
    if (n + 1 >= sizeof c->text) return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(c->text + n, sizeof c->text - n, fmt, ap);
    va_end(ap);
}

static inline int pc_scalar(pc_chain *c, double s) { return korch_pgraph_add_scalar(c->b->g.pg, (float)s); }

/* The shape of an operand of class k (false: not applicable to this base). */
static inline bool pc_cls_shape(const pc_base *b, pc_cls k, korch_shape *s) {
    const korch_shape *o = &b->out;
    int r = o->rank;
    bool mm = b->row_axis >= 0;
    switch (k) {
    case PC_S0: *s = (korch_shape){0}; return true;
    case PC_S1: case PC_SR: *s = korch_shape_make(1, (int64_t[]){1}); return true;
    case PC_SN: *s = *o; for (int i = 0; i < r; i++) s->dims[i] = 1; return true;
    case PC_PC: *s = pc_channel_shape(b); return true;
    case PC_PCR:
        *s = pc_channel_shape(b);
        if (!mm && o->dims[0] > 1) { /* a squeeze-excitation gate: (N,C,1,1) / (N,1,1,C) */
            *s = *o;
            for (int i = 1; i < r; i++) s->dims[i] = i == b->channel_axis ? o->dims[i] : 1;
        }
        return true;
    case PC_PC4: *s = *o; for (int i = 0; i < r; i++) s->dims[i] = i == b->channel_axis ? o->dims[i] : 1; return true;
    case PC_ROW:
        if (mm) *s = korch_shape_make(2, (int64_t[]){o->dims[r - 2], 1});
        else if (b->def->nhwc) *s = korch_shape_make(3, (int64_t[]){o->dims[1], o->dims[2], 1});
        else *s = korch_shape_make(2, (int64_t[]){o->dims[2], o->dims[3]});
        return true;
    case PC_BATCH:
        if (r < 3 || o->dims[0] == 1) return false;
        *s = *o;
        for (int i = 1; i < r; i++) s->dims[i] = 1;
        return true;
    case PC_FULLC: case PC_FULLR: *s = *o; return true;
    default: return false;
    }
}

static inline int pc_operand(pc_chain *c, pc_cls k, double lo, double hi, double *s) {
    korch_shape sh;
    pc_cls_shape(c->b, k, &sh);
    pc_graph *g = &c->b->g;
    if (k == PC_S0) return pc_scalar(c, *s);
    if (k == PC_S1 || k == PC_SN) return pc_constant(g, sh.rank, sh.dims, *s, *s);
    if (k == PC_SR || k == PC_PCR || k == PC_FULLR) return pc_input(g, sh.rank, sh.dims, lo, hi);
    return pc_constant(g, sh.rank, sh.dims, lo, hi);
}

static inline bool pc_scalar_cls(pc_cls k) { return k == PC_S0 || k == PC_S1 || k == PC_SN; }

/* Interval of v op s for s in [c, d]. */
static inline bool pc_bin_interval(korch_ew_op op, bool sv, double lo, double hi, double c, double d, double *a,
                                   double *z) {
    switch (op) {
    case KORCH_EW_ADD: *a = lo + c, *z = hi + d; return true;
    case KORCH_EW_SUB:
        if (sv) *a = c - hi, *z = d - lo;
        else *a = lo - d, *z = hi - c;
        return true;
    case KORCH_EW_MUL:
    case KORCH_EW_DIV: {
        double p, q, r, t;
        if (op == KORCH_EW_DIV && !sv) { /* v * [1/d, 1/c] */
            if (c * d <= 0) return false;
            double e = 1 / d, f = 1 / c;
            c = e, d = f;
        } else if (op == KORCH_EW_DIV) { /* s * [1/hi, 1/lo] */
            if (!(lo >= 0.25 || hi <= -0.25)) return false;
            double e = 1 / hi, f = 1 / lo;
            lo = e, hi = f;
        }
        p = lo * c, q = lo * d, r = hi * c, t = hi * d;
        *a = fmin(fmin(p, q), fmin(r, t));
        *z = fmax(fmax(p, q), fmax(r, t));
        return true;
    }
    case KORCH_EW_MAX: *a = fmax(lo, c), *z = fmax(hi, d); return true;
    case KORCH_EW_MIN: *a = fmin(lo, c), *z = fmin(hi, d); return true;
    case KORCH_EW_PRELU:
        if (sv) return false;
        *a = lo >= 0 ? lo : lo * d;
        *z = hi >= 0 ? hi : hi * c;
        return true;
    default: return false;
    }
}

static inline bool pc_bounded(double a, double z) {
    return isfinite(a) && isfinite(z) && fabs(a) <= 1000 && fabs(z) <= 1000;
}

static inline const char *pc_op_sym(korch_ew_op op) {
    switch (op) {
    case KORCH_EW_ADD: return "+";
    case KORCH_EW_SUB: return "-";
    case KORCH_EW_MUL: return "*";
    case KORCH_EW_DIV: return "/";
    case KORCH_EW_MAX: return "max";
    case KORCH_EW_MIN: return "min";
    case KORCH_EW_PRELU: return "prelu";
    default: return "?";
    }
}

/* v op s, or s op v; operand given (reuse) or made (operand < 0). */
static inline bool pc_binary(pc_chain *c, korch_ew_op op, bool sv, pc_cls k, int operand, double olo, double ohi) {
    korch_shape sh;
    if (!pc_cls_shape(c->b, k, &sh)) return false;
    double s = 0, a, z;
    if (operand < 0) {
        /* operand ranges that keep the step well conditioned */
        switch (op) {
        case KORCH_EW_MUL: olo = 0.5, ohi = 1.5; break;
        case KORCH_EW_DIV: olo = sv ? -1.5 : 0.5, ohi = sv ? 1.5 : 2.0; break;
        case KORCH_EW_MAX:
        case KORCH_EW_MIN: /* inside the value's range, so that the step acts */
            olo = c->lo + 0.2 * (c->hi - c->lo), ohi = c->hi - 0.2 * (c->hi - c->lo);
            break;
        case KORCH_EW_PRELU: olo = 0.05, ohi = 0.3; break;
        default: olo = -1, ohi = 1; break;
        }
        if ((op == KORCH_EW_MUL || (op == KORCH_EW_DIV && !sv)) && pc_int(&c->b->g.rng, 2)) {
            double t = olo;
            olo = -ohi, ohi = -t;
        }
        if (pc_scalar_cls(k)) {
            s = pc_uniform(&c->b->g.rng, olo, ohi);
            olo = ohi = s;
        }
    } else if (pc_scalar_cls(k) && c->b->g.pg->values[operand].is_constant) {
        s = olo;
    }
    if (!pc_bin_interval(op, sv, c->lo, c->hi, olo, ohi, &a, &z) || !pc_bounded(a, z)) return false;
    if (operand < 0) operand = pc_operand(c, k, olo, ohi, &s);
    int in[2] = {sv ? operand : c->v, sv ? c->v : operand};
    c->v = korch_pgraph_elementwise(c->b->g.pg, op, 2, in, 0, 0, KORCH_DTYPE_UNDEFINED);
    if (pc_scalar_cls(k)) pc_text(c, " %s(%s,%s %.3g)", pc_op_sym(op), sv ? "s" : "x", sv ? "x" : "s", s);
    else pc_text(c, " %s(%s,%s %s)", pc_op_sym(op), sv ? pc_cls_name[k] : "x", sv ? "x" : pc_cls_name[k], "");
    if (!pc_scalar_cls(k)) {
        /* "+(x,chan )" -> "+(x,chan)" */
        size_t n = strlen(c->text);
        if (n >= 2 && c->text[n - 2] == ' ') c->text[n - 2] = ')', c->text[n - 1] = '\0';
    }
    /* an absolute error in v scales with a multiplier or divisor */
    double big = fmax(fabs(olo), fabs(ohi)), small = fmin(fabs(olo), fabs(ohi));
    double vsmall = fmin(fabs(c->lo), fabs(c->hi));
    if (op == KORCH_EW_MUL) c->err *= big;
    if (op == KORCH_EW_DIV && !sv) c->err /= small;
    if (op == KORCH_EW_DIV && sv) c->err *= big / (vsmall * vsmall);
    c->lo = a, c->hi = z;
    c->last_operand = operand;
    c->olo = olo, c->ohi = ohi;
    return true;
}

/* Activation parameters for the current range. */
static inline void pc_act_params(pc_chain *c, pc_act a, float *p0, float *p1) {
    pc_rng *r = &c->b->g.rng;
    double w = c->hi - c->lo;
    *p0 = *p1 = 0;
    switch (a) {
    case A_LEAKY: { static const float al[] = {0.01f, 0.1f, 0.2f}; *p0 = al[pc_int(r, 3)]; break; }
    case A_PRELU: *p0 = (float)pc_uniform(r, 0.05, 0.3); break;
    case A_CLIP: case A_MAXMIN:
        *p0 = (float)(c->lo + w * pc_uniform(r, 0.1, 0.4));
        *p1 = (float)(c->hi - w * pc_uniform(r, 0.1, 0.4));
        break;
    case A_RELU6: *p0 = 0, *p1 = 6; break;
    case A_ELU: *p0 = (float)pc_uniform(r, 0.5, 1.5); break;
    case A_AFFINE:
        *p0 = (float)(pc_uniform(r, 0.5, 2) * (pc_int(r, 2) ? 1 : -1));
        *p1 = (float)pc_uniform(r, -1, 1);
        break;
    default: break;
    }
}

static inline int pc_ew1(pc_chain *c, korch_ew_op op, int x, float a, float b) {
    return dc_ew1(c->b->g.pg, op, x, a, b);
}
static inline int pc_ew2(pc_chain *c, korch_ew_op op, int x, int y) { return dc_ew2(c->b->g.pg, op, x, y); }

static inline bool pc_activation(pc_chain *c, pc_act a, bool again) {
    float p0, p1;
    if (again) p0 = c->p0, p1 = c->p1;
    else pc_act_params(c, a, &p0, &p1);
    if (pc_needs_positive(a) && c->lo < 0.25) return false;
    if (a == A_EXP && c->hi > 5) return false;
    double lo, hi, slope;
    pc_image(a, p0, p1, c->lo, c->hi, &lo, &hi, &slope);
    if (!pc_bounded(lo, hi)) return false;
    int x = c->v, y;
    switch (a) {
    case A_RELU: y = pc_ew1(c, KORCH_EW_RELU, x, 0, 0); break;
    case A_RELU_MAX0: y = pc_ew2(c, KORCH_EW_MAX, x, pc_scalar(c, 0)); break;
    case A_LEAKY: y = pc_ew1(c, KORCH_EW_LEAKY_RELU, x, p0, 0); break;
    case A_PRELU: y = pc_ew2(c, KORCH_EW_PRELU, x, pc_scalar(c, p0)); break;
    case A_CLIP: case A_RELU6: y = pc_ew1(c, KORCH_EW_CLIP, x, p0, p1); break;
    case A_MAXMIN: y = pc_ew2(c, KORCH_EW_MIN, pc_ew2(c, KORCH_EW_MAX, x, pc_scalar(c, p0)), pc_scalar(c, p1)); break;
    case A_SIGMOID: y = pc_ew1(c, KORCH_EW_SIGMOID, x, 0, 0); break;
    case A_TANH: y = pc_ew1(c, KORCH_EW_TANH, x, 0, 0); break;
    case A_ELU: y = pc_ew1(c, KORCH_EW_ELU, x, p0, 0); break;
    case A_SELU: y = pc_ew1(c, KORCH_EW_AFFINE, pc_ew1(c, KORCH_EW_ELU, x, 1.6733f, 0), 1.0507f, 0); break;
    case A_EXP: y = pc_ew1(c, KORCH_EW_EXP, x, 0, 0); break;
    case A_ABS: y = pc_ew1(c, KORCH_EW_ABS, x, 0, 0); break;
    case A_NEG: y = pc_ew1(c, KORCH_EW_NEG, x, 0, 0); break;
    case A_AFFINE: y = pc_ew1(c, KORCH_EW_AFFINE, x, p0, p1); break;
    case A_SOFTPLUS: y = pc_ew1(c, KORCH_EW_SOFTPLUS, x, 0, 0); break;
    case A_HSIGMOID: y = pc_ew1(c, KORCH_EW_CLIP, pc_ew1(c, KORCH_EW_AFFINE, x, 0.2f, 0.5f), 0, 1); break;
    case A_HSWISH:
        y = pc_ew2(c, KORCH_EW_MUL, x, pc_ew1(c, KORCH_EW_CLIP, pc_ew1(c, KORCH_EW_AFFINE, x, 1.0f / 6, 0.5f), 0, 1));
        break;
    case A_GELU_ERF: { /* PyTorch: x * 0.5 * (1 + erf(x / sqrt 2)), as (x * e) * 0.5 */
        int s = pc_ew2(c, KORCH_EW_DIV, x, pc_scalar(c, 1.41421356));
        int e = pc_ew2(c, KORCH_EW_ADD, pc_ew1(c, KORCH_EW_ERF, s, 0, 0), pc_scalar(c, 1));
        y = pc_ew2(c, KORCH_EW_MUL, pc_ew2(c, KORCH_EW_MUL, x, e), pc_scalar(c, 0.5));
        break;
    }
    case A_GELU_ERF2: { /* (0.5 * x) * (erf(x * 0.7071) + 1) */
        int s = pc_ew2(c, KORCH_EW_MUL, x, pc_scalar(c, 0.70710678));
        int e = pc_ew2(c, KORCH_EW_ADD, pc_ew1(c, KORCH_EW_ERF, s, 0, 0), pc_scalar(c, 1));
        y = pc_ew2(c, KORCH_EW_MUL, pc_ew2(c, KORCH_EW_MUL, pc_scalar(c, 0.5), x), e);
        break;
    }
    case A_GELU_TANH: {
        int x3 = pc_ew1(c, KORCH_EW_POWC, x, 3.0f, 0);
        int in = pc_ew2(c, KORCH_EW_ADD, x, pc_ew2(c, KORCH_EW_MUL, x3, pc_scalar(c, 0.044715)));
        int t = pc_ew1(c, KORCH_EW_TANH, pc_ew2(c, KORCH_EW_MUL, in, pc_scalar(c, 0.7978845608)), 0, 0);
        y = pc_ew2(c, KORCH_EW_MUL, pc_ew1(c, KORCH_EW_AFFINE, t, 0.5f, 0.5f), x);
        break;
    }
    case A_SWISH: y = pc_ew2(c, KORCH_EW_MUL, x, pc_ew1(c, KORCH_EW_SIGMOID, x, 0, 0)); break;
    case A_MISH:
        y = pc_ew2(c, KORCH_EW_MUL, x, pc_ew1(c, KORCH_EW_TANH, pc_ew1(c, KORCH_EW_SOFTPLUS, x, 0, 0), 0, 0));
        break;
    case A_SQRT: y = pc_ew1(c, KORCH_EW_SQRT, x, 0, 0); break;
    case A_LOG: y = pc_ew1(c, KORCH_EW_LOG, x, 0, 0); break;
    case A_RSQRT: y = pc_ew1(c, KORCH_EW_RSQRT, x, 0, 0); break;
    case A_RECIP: y = pc_ew1(c, KORCH_EW_RECIP, x, 0, 0); break;
    case A_SQUARE: y = pc_ew2(c, KORCH_EW_MUL, x, x); break;
    case A_POWC2: y = pc_ew1(c, KORCH_EW_POWC, x, 2.0f, 0); break;
    case A_POWC3: y = pc_ew1(c, KORCH_EW_POWC, x, 3.0f, 0); break;
    case A_POW_HALF: y = pc_ew2(c, KORCH_EW_POW, x, pc_scalar(c, 0.5)); break;
    case A_DOUBLE: y = pc_ew2(c, KORCH_EW_ADD, x, x); break;
    case A_ERF: y = pc_ew1(c, KORCH_EW_ERF, x, 0, 0); break;
    default: return false;
    }
    c->v = y;
    /* oneDNN's polynomial approximations (exp, erf, tanh, log inside
     * softplus, gelu, mish, ...) are accurate to a few ulp of their O(|x|)
     * intermediates, not of a result that saturates towards 0: softplus(-8)
     * comes out 4e-7 off, gelu_erf(-6) 1.7e-7. So each activation may add
     * 1e-6 * max(1, |x|) absolute, and passes on what came before times
     * its slope. */
    c->err = c->err * slope + 1e-6 * fmax(1.0, fmax(fabs(c->lo), fabs(c->hi)));
    c->lo = lo, c->hi = hi;
    c->p0 = p0, c->p1 = p1;
    c->last_operand = -1;
    if (a == A_LEAKY || a == A_PRELU || a == A_ELU) pc_text(c, " %s(%.3g)", pc_act_name[a], p0);
    else if (a == A_CLIP || a == A_MAXMIN || a == A_AFFINE) pc_text(c, " %s(%.3g,%.3g)", pc_act_name[a], p0, p1);
    else pc_text(c, " %s", pc_act_name[a]);
    return true;
}

/* Applies step s (false: not applicable here; nothing was built). */
static inline bool pc_apply(pc_chain *c, const pc_step *s) {
    bool ok = false;
    switch (s->kind) {
    case PC_BIN: ok = pc_binary(c, s->op, s->sv, s->cls, -1, 0, 0); break;
    case PC_ACT: ok = pc_activation(c, s->act, false); break;
    case PC_AGAIN: /* the previous step once more, with the same operand value / parameters */
        if (c->steps == 0 || c->last.kind == PC_AGAIN || c->last.kind == PC_REUSE) return false;
        if (c->last.kind == PC_BIN)
            ok = pc_binary(c, c->last.op, c->last.sv, c->last.cls, c->last_operand, c->olo, c->ohi);
        else ok = pc_activation(c, c->last.act, true);
        if (ok) pc_text(c, "(again)");
        return ok && (c->steps++, true);
    case PC_REUSE: { /* the previous operand with another operation */
        if (c->steps == 0 || c->last.kind != PC_BIN || c->last_operand < 0) return false;
        korch_ew_op op = c->last.op == KORCH_EW_MUL ? KORCH_EW_ADD : KORCH_EW_MUL;
        ok = pc_binary(c, op, false, c->last.cls, c->last_operand, c->olo, c->ohi);
        if (ok) pc_text(c, "(same operand)");
        if (ok) c->last = (pc_step){.kind = PC_BIN, .op = op, .cls = c->last.cls};
        return ok && (c->steps++, true);
    }
    }
    if (ok) {
        c->last = *s;
        c->steps++;
    }
    return ok;
}

/* Does step s need a positive argument (s/x, log, sqrt, rsqrt, 1/x, x^0.5)? */
static inline bool pc_step_needs_positive(const pc_step *s) {
    return (s->kind == PC_BIN && s->op == KORCH_EW_DIV && s->sv) || (s->kind == PC_ACT && pc_needs_positive(s->act));
}

/* Makes the chain value at least 1 (|x| + 1) unless it is positive already,
 * so that s/x, log or sqrt can follow. */
static inline bool pc_make_positive(pc_chain *c) {
    if (c->lo >= 0.25) return true;
    if (!pc_activation(c, A_ABS, false)) return false;
    c->v = pc_ew2(c, KORCH_EW_ADD, c->v, pc_scalar(c, 1.0));
    c->lo = fmax(c->lo, 0) + 1;
    c->hi += 1;
    pc_text(c, " +1");
    return true;
}

/* ---- vocabularies ----------------------------------------------------------------- */

static const korch_ew_op pc_bin_ops[] = {KORCH_EW_ADD, KORCH_EW_SUB, KORCH_EW_MUL, KORCH_EW_DIV, KORCH_EW_MAX,
                                         KORCH_EW_MIN};

/* Every step: each binary op x order x class, PReLU with a per-channel slope,
 * every activation, again, reuse. Returns the count. */
static inline int pc_all_steps(pc_step *out, int cap) {
    int n = 0;
    for (size_t o = 0; o < sizeof pc_bin_ops / sizeof pc_bin_ops[0]; o++)
        for (int sv = 0; sv < 2; sv++)
            for (int k = 0; k < PC_NCLS; k++)
                if (n < cap) out[n++] = (pc_step){.kind = PC_BIN, .op = pc_bin_ops[o], .sv = sv, .cls = (pc_cls)k};
    if (n < cap) out[n++] = (pc_step){.kind = PC_BIN, .op = KORCH_EW_PRELU, .cls = PC_PC};
    for (int a = 0; a < A_COUNT; a++)
        if (n < cap) out[n++] = (pc_step){.kind = PC_ACT, .act = (pc_act)a};
    if (n < cap) out[n++] = (pc_step){.kind = PC_AGAIN};
    if (n < cap) out[n++] = (pc_step){.kind = PC_REUSE};
    return n;
}

/* The pair vocabulary: every activation and every post-op kind the lowering
 * produces (each scalar op in both orders, each tensor op on per-channel and
 * full operands, run-time scalars), small enough for all ordered pairs. */
static inline int pc_pair_steps(pc_step *out, int cap) {
    int n = 0;
    for (size_t o = 0; o < sizeof pc_bin_ops / sizeof pc_bin_ops[0]; o++)
        for (int sv = 0; sv < 2; sv++) {
            korch_ew_op op = pc_bin_ops[o];
            if (n < cap) out[n++] = (pc_step){.kind = PC_BIN, .op = op, .sv = sv, .cls = PC_S0};
            bool order_matters = op == KORCH_EW_SUB || op == KORCH_EW_DIV;
            if (!sv || order_matters)
                if (n < cap) out[n++] = (pc_step){.kind = PC_BIN, .op = op, .sv = sv, .cls = sv ? PC_FULLR : PC_PC};
        }
    if (n < cap) out[n++] = (pc_step){.kind = PC_BIN, .op = KORCH_EW_MUL, .cls = PC_SR};
    if (n < cap) out[n++] = (pc_step){.kind = PC_BIN, .op = KORCH_EW_ADD, .cls = PC_FULLR};
    for (int a = 0; a < A_COUNT; a++)
        if (a != A_ERF && n < cap) out[n++] = (pc_step){.kind = PC_ACT, .act = (pc_act)a};
    if (n < cap) out[n++] = (pc_step){.kind = PC_AGAIN};
    return n;
}

#endif
