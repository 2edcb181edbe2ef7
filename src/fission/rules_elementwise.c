/* Fission rules for elementwise arithmetic, maths, comparisons, activations
 * and casts: each is one elementwise primitive or a short chain of them. */
#include <float.h>
#include <math.h>

#include "fission/rules.h"
#include "ops/trilu.h"

KORCH_FISSION_RULE(Add) { return fission_rule_binary(ctx, KORCH_EW_ADD); }
KORCH_FISSION_RULE(Sub) { return fission_rule_binary(ctx, KORCH_EW_SUB); }
KORCH_FISSION_RULE(Mul) { return fission_rule_binary(ctx, KORCH_EW_MUL); }
KORCH_FISSION_RULE(Div) { return fission_rule_binary(ctx, KORCH_EW_DIV); }
KORCH_FISSION_RULE(Equal) { return fission_rule_binary(ctx, KORCH_EW_EQUAL); }
KORCH_FISSION_RULE(Less) { return fission_rule_binary(ctx, KORCH_EW_LESS); }
KORCH_FISSION_RULE(LessOrEqual) { return fission_rule_binary(ctx, KORCH_EW_LESS_EQUAL); }
KORCH_FISSION_RULE(Greater) { return fission_rule_binary(ctx, KORCH_EW_GREATER); }
KORCH_FISSION_RULE(GreaterOrEqual) { return fission_rule_binary(ctx, KORCH_EW_GREATER_EQUAL); }
KORCH_FISSION_RULE(And) { return fission_rule_binary(ctx, KORCH_EW_AND); }
KORCH_FISSION_RULE(Or) { return fission_rule_binary(ctx, KORCH_EW_OR); }

/* Before opset 7 a 1-D slope of length C is one value per channel (dim 1). */
KORCH_FISSION_RULE(PRelu) {
    const korch_shape *x = fission_in_shape(ctx, 0), *slope = fission_in_shape(ctx, 1);
    int s = fission_in(ctx, 1);
    if (ctx->node->opset < 7 && slope->rank == 1 && x->rank >= 2 && slope->dims[0] == x->dims[1] && slope->dims[0] != 1)
        s = fission_channel_view(ctx, s, x->rank);
    fission_set_out(ctx, 0, fission_binary(ctx, KORCH_EW_PRELU, fission_in(ctx, 0), s));
    return fission_done(ctx);
}

KORCH_FISSION_RULE(Sqrt) { return fission_rule_unary(ctx, KORCH_EW_SQRT); }
KORCH_FISSION_RULE(Reciprocal) { return fission_rule_unary(ctx, KORCH_EW_RECIP); }
KORCH_FISSION_RULE(Exp) { return fission_rule_unary(ctx, KORCH_EW_EXP); }
KORCH_FISSION_RULE(Log) { return fission_rule_unary(ctx, KORCH_EW_LOG); }
KORCH_FISSION_RULE(Erf) { return fission_rule_unary(ctx, KORCH_EW_ERF); }
KORCH_FISSION_RULE(Tanh) { return fission_rule_unary(ctx, KORCH_EW_TANH); }
KORCH_FISSION_RULE(Sigmoid) { return fission_rule_unary(ctx, KORCH_EW_SIGMOID); }
KORCH_FISSION_RULE(Neg) { return fission_rule_unary(ctx, KORCH_EW_NEG); }
KORCH_FISSION_RULE(Abs) { return fission_rule_unary(ctx, KORCH_EW_ABS); }
KORCH_FISSION_RULE(Not) { return fission_rule_unary(ctx, KORCH_EW_NOT); }
KORCH_FISSION_RULE(Relu) { return fission_rule_unary(ctx, KORCH_EW_RELU); }
KORCH_FISSION_RULE(Softplus) { return fission_rule_unary(ctx, KORCH_EW_SOFTPLUS); }
KORCH_FISSION_RULE(Floor) { return fission_rule_unary(ctx, KORCH_EW_FLOOR); }
KORCH_FISSION_RULE(Ceil) { return fission_rule_unary(ctx, KORCH_EW_CEIL); }
KORCH_FISSION_RULE(Sin) { return fission_rule_unary(ctx, KORCH_EW_SIN); }
KORCH_FISSION_RULE(Cos) { return fission_rule_unary(ctx, KORCH_EW_COS); }

/* Pow allows an exponent of another dtype (opset 12+): cast it to the base's
 * dtype first (exact for the integer exponents models use). */
KORCH_FISSION_RULE(Pow) {
    int x = fission_in(ctx, 0), e = fission_in(ctx, 1);
    if (fission_in_dtype(ctx, 1) != fission_in_dtype(ctx, 0)) e = fission_cast(ctx, e, fission_in_dtype(ctx, 0));
    fission_set_out(ctx, 0, fission_binary(ctx, KORCH_EW_POW, x, e));
    return fission_done(ctx);
}

/* Variadic Max/Min: a chain of binary maps (one input is a copy). */
static korch_status variadic(korch_fission_ctx *ctx, korch_ew_op op) {
    int acc = -1;
    for (int i = 0; i < ctx->n_inputs; i++) {
        if (!fission_has_in(ctx, i)) continue;
        acc = acc < 0 ? fission_in(ctx, i) : fission_binary(ctx, op, acc, fission_in(ctx, i));
        if (acc < 0) return KORCH_ERR_INTERNAL;
    }
    fission_set_out(ctx, 0, acc);
    return fission_done(ctx);
}

KORCH_FISSION_RULE(Max) { return variadic(ctx, KORCH_EW_MAX); }
KORCH_FISSION_RULE(Min) { return variadic(ctx, KORCH_EW_MIN); }
KORCH_FISSION_RULE(Sum) { return variadic(ctx, KORCH_EW_ADD); }

KORCH_FISSION_RULE(Where) {
    fission_set_out(ctx, 0, fission_where(ctx, fission_in(ctx, 0), fission_in(ctx, 1), fission_in(ctx, 2)));
    return fission_done(ctx);
}

/* Trilu with a constant k: Where(mask, x, 0), the mask a constant [rows,
 * cols] of the elements the triangle keeps (ops/trilu.h), broadcast over the
 * leading dimensions; it fuses like any elementwise op. A run-time k stays
 * with the reference. */
KORCH_FISSION_RULE(Trilu) {
    int64_t k = 0;
    if (fission_has_in(ctx, 1)) {
        const korch_tensor *kt = fission_const_in(ctx, 1);
        if (!kt) return fission_decline(ctx, "Trilu with a run-time k");
        k = korch_tensor_get_i64(kt, 0);
    }
    bool upper = korch_node_attr_int(ctx->node, "upper", 1) != 0;
    const korch_shape *in = fission_in_shape(ctx, 0);
    korch_shape ms = {.rank = 2, .dims = {in->dims[in->rank - 2], in->dims[in->rank - 1]}};
    korch_tensor mask;
    KORCH_TRY(korch_tensor_alloc(&mask, KORCH_DTYPE_BOOL, &ms));
    bool *m = mask.data;
    for (int64_t i = 0; i < ms.dims[0]; i++)
        for (int64_t j = 0; j < ms.dims[1]; j++) m[i * ms.dims[1] + j] = korch_trilu_keeps(upper, k, i, j);
    int zero = fission_scalar(ctx, 0, fission_in_dtype(ctx, 0));
    fission_set_out(ctx, 0, fission_where(ctx, fission_constant(ctx, &mask), fission_in(ctx, 0), zero));
    return fission_done(ctx);
}

/* Cast and CastLike: the target dtype is the inferred output dtype. A cast
 * from or to float16 / bfloat16 is a CAST primitive too: the frontend left
 * half values only at the model's edges and its Casts (docs/precision.md),
 * and the interpreter and the code generator convert them. */
static korch_status cast_rule(korch_fission_ctx *ctx) {
    int x = fission_in(ctx, 0);
    korch_dtype from = fission_in_dtype(ctx, 0), to = fission_out_dtype(ctx, 0);
    fission_set_out(ctx, 0, to == from ? x : fission_cast(ctx, x, to));
    return fission_done(ctx);
}

KORCH_FISSION_RULE(Cast) { return cast_rule(ctx); }
KORCH_FISSION_RULE(CastLike) { return cast_rule(ctx); }

/* a xor b = not (a == b) on bools */
KORCH_FISSION_RULE(Xor) {
    int eq = fission_binary(ctx, KORCH_EW_EQUAL, fission_in(ctx, 0), fission_in(ctx, 1));
    fission_set_out(ctx, 0, fission_unary(ctx, KORCH_EW_NOT, eq));
    return fission_done(ctx);
}

/* Sum of the inputs divided by their count. */
KORCH_FISSION_RULE(Mean) {
    KORCH_TRY(variadic(ctx, KORCH_EW_ADD));
    int count = 0;
    for (int i = 0; i < ctx->n_inputs; i++) count += fission_has_in(ctx, i);
    if (count > 1) {
        int n = fission_scalar(ctx, count, fission_out_dtype(ctx, 0));
        fission_set_out(ctx, 0, fission_binary(ctx, KORCH_EW_DIV, ctx->out[0], n));
    }
    return fission_done(ctx);
}

/* gamma * elu(x; alpha) */
KORCH_FISSION_RULE(Selu) {
    float alpha = korch_node_attr_float(ctx->node, "alpha", 1.67326319217681884765625f);
    float gamma = korch_node_attr_float(ctx->node, "gamma", 1.05070102214813232421875f);
    int e = fission_unary_ab(ctx, KORCH_EW_ELU, fission_in(ctx, 0), alpha, 0);
    fission_set_out(ctx, 0, fission_unary_ab(ctx, KORCH_EW_AFFINE, e, gamma, 0));
    return fission_done(ctx);
}

/* max(0, x) + min(0, alpha (exp(x / alpha) - 1)) = alpha * elu(x / alpha; 1) */
KORCH_FISSION_RULE(Celu) {
    float alpha = korch_node_attr_float(ctx->node, "alpha", 1.0f);
    int s = fission_binary(ctx, KORCH_EW_DIV, fission_in(ctx, 0), fission_scalar(ctx, alpha, fission_in_dtype(ctx, 0)));
    int e = fission_unary_ab(ctx, KORCH_EW_ELU, s, 1.0f, 0);
    fission_set_out(ctx, 0, fission_unary_ab(ctx, KORCH_EW_AFFINE, e, alpha, 0));
    return fission_done(ctx);
}

/* x / (1 + |x|) */
KORCH_FISSION_RULE(Softsign) {
    int x = fission_in(ctx, 0);
    int d = fission_unary_ab(ctx, KORCH_EW_AFFINE, fission_unary(ctx, KORCH_EW_ABS, x), 1.0f, 1.0f);
    fission_set_out(ctx, 0, fission_binary(ctx, KORCH_EW_DIV, x, d));
    return fission_done(ctx);
}

/* x > alpha ? x : 0 */
KORCH_FISSION_RULE(ThresholdedRelu) {
    int x = fission_in(ctx, 0);
    korch_dtype dt = fission_in_dtype(ctx, 0);
    float alpha = korch_node_attr_float(ctx->node, "alpha", 1.0f);
    int c = fission_binary(ctx, KORCH_EW_GREATER, x, fission_scalar(ctx, alpha, dt));
    fission_set_out(ctx, 0, fission_where(ctx, c, x, fission_scalar(ctx, 0.0, dt)));
    return fission_done(ctx);
}

KORCH_FISSION_RULE(LeakyRelu) {
    float alpha = korch_node_attr_float(ctx->node, "alpha", 0.01f);
    fission_set_out(ctx, 0, fission_unary_ab(ctx, KORCH_EW_LEAKY_RELU, fission_in(ctx, 0), alpha, 0));
    return fission_done(ctx);
}

KORCH_FISSION_RULE(Elu) {
    float alpha = korch_node_attr_float(ctx->node, "alpha", 1.0f);
    fission_set_out(ctx, 0, fission_unary_ab(ctx, KORCH_EW_ELU, fission_in(ctx, 0), alpha, 0));
    return fission_done(ctx);
}

/* max(0, min(1, alpha * x + beta)) */
static int hard_sigmoid(korch_fission_ctx *ctx, int x, float alpha, float beta) {
    int a = fission_unary_ab(ctx, KORCH_EW_AFFINE, x, alpha, beta);
    return fission_unary_ab(ctx, KORCH_EW_CLIP, a, 0.0f, 1.0f);
}

KORCH_FISSION_RULE(HardSigmoid) {
    float alpha = korch_node_attr_float(ctx->node, "alpha", 0.2f);
    float beta = korch_node_attr_float(ctx->node, "beta", 0.5f);
    fission_set_out(ctx, 0, hard_sigmoid(ctx, fission_in(ctx, 0), alpha, beta));
    return fission_done(ctx);
}

/* x * hardsigmoid(x) with alpha = 1/6, beta = 1/2 */
KORCH_FISSION_RULE(HardSwish) {
    int x = fission_in(ctx, 0);
    fission_set_out(ctx, 0, fission_binary(ctx, KORCH_EW_MUL, x, hard_sigmoid(ctx, x, 1.0f / 6.0f, 0.5f)));
    return fission_done(ctx);
}

/* x * tanh(softplus(x)) */
KORCH_FISSION_RULE(Mish) {
    int x = fission_in(ctx, 0);
    int t = fission_unary(ctx, KORCH_EW_TANH, fission_unary(ctx, KORCH_EW_SOFTPLUS, x));
    fission_set_out(ctx, 0, fission_binary(ctx, KORCH_EW_MUL, x, t));
    return fission_done(ctx);
}

/* Bounds from attributes (opset < 11) or constant inputs; a bound given as
 * a run-time tensor becomes a binary max/min. */
KORCH_FISSION_RULE(Clip) {
    int x = fission_in(ctx, 0);
    korch_dtype dt = fission_in_dtype(ctx, 0);
    double lo = -INFINITY, hi = INFINITY;
    int lo_v = -1, hi_v = -1;
    if (ctx->node->opset < 11) {
        lo = korch_node_attr_float(ctx->node, "min", -FLT_MAX);
        hi = korch_node_attr_float(ctx->node, "max", FLT_MAX);
    } else {
        for (int i = 1; i <= 2; i++) {
            if (!fission_has_in(ctx, i)) continue;
            const korch_tensor *c = fission_const_in(ctx, i);
            if (c && korch_tensor_numel(c) == 1) {
                *(i == 1 ? &lo : &hi) = korch_tensor_get_f64(c, 0);
            } else {
                *(i == 1 ? &lo_v : &hi_v) = fission_in(ctx, i);
            }
        }
    }
    int y = x;
    bool float_bounds = dt == KORCH_DTYPE_FLOAT32 && lo_v < 0 && hi_v < 0 && !(lo > hi) &&
                        (lo == -INFINITY || (double)(float)lo == lo) && (hi == INFINITY || (double)(float)hi == hi);
    if (float_bounds) {
        y = fission_unary_ab(ctx, KORCH_EW_CLIP, x, (float)lo, (float)hi);
    } else {
        /* min(max(x, lo), hi), exactly as the operator is defined */
        if (lo_v < 0 && lo != -INFINITY) lo_v = fission_scalar(ctx, lo, dt);
        if (hi_v < 0 && hi != INFINITY) hi_v = fission_scalar(ctx, hi, dt);
        if (lo_v >= 0) y = fission_binary(ctx, KORCH_EW_MAX, y, lo_v);
        if (hi_v >= 0) y = fission_binary(ctx, KORCH_EW_MIN, y, hi_v);
    }
    fission_set_out(ctx, 0, y);
    return fission_done(ctx);
}

KORCH_FISSION_RULE(Identity) { return fission_rule_alias(ctx); }

KORCH_FISSION_RULE(Tan) { return fission_rule_unary(ctx, KORCH_EW_TAN); }
KORCH_FISSION_RULE(Asin) { return fission_rule_unary(ctx, KORCH_EW_ASIN); }
KORCH_FISSION_RULE(Acos) { return fission_rule_unary(ctx, KORCH_EW_ACOS); }
KORCH_FISSION_RULE(Atan) { return fission_rule_unary(ctx, KORCH_EW_ATAN); }
KORCH_FISSION_RULE(Sinh) { return fission_rule_unary(ctx, KORCH_EW_SINH); }
KORCH_FISSION_RULE(Cosh) { return fission_rule_unary(ctx, KORCH_EW_COSH); }
KORCH_FISSION_RULE(Asinh) { return fission_rule_unary(ctx, KORCH_EW_ASINH); }
KORCH_FISSION_RULE(Acosh) { return fission_rule_unary(ctx, KORCH_EW_ACOSH); }
KORCH_FISSION_RULE(Atanh) { return fission_rule_unary(ctx, KORCH_EW_ATANH); }
KORCH_FISSION_RULE(Round) { return fission_rule_unary(ctx, KORCH_EW_ROUND); }
KORCH_FISSION_RULE(Sign) { return fission_rule_unary(ctx, KORCH_EW_SIGN); }

KORCH_FISSION_RULE(Mod) {
    float fmod_flag = korch_node_attr_int(ctx->node, "fmod", 0) != 0 ? 1.0f : 0.0f;
    int ins[2] = {fission_in(ctx, 0), fission_in(ctx, 1)};
    fission_set_out(ctx, 0, ins[0] < 0 || ins[1] < 0 ? -1
                                                    : korch_pgraph_elementwise(ctx->pg, KORCH_EW_MOD, 2, ins, fmod_flag,
                                                                               0, KORCH_DTYPE_UNDEFINED));
    return fission_done(ctx);
}

/* x != x */
KORCH_FISSION_RULE(IsNaN) {
    int x = fission_in(ctx, 0);
    fission_set_out(ctx, 0, fission_unary(ctx, KORCH_EW_NOT, fission_binary(ctx, KORCH_EW_EQUAL, x, x)));
    return fission_done(ctx);
}

/* |x| == inf, or x == +inf / x == -inf for one sign; false for neither */
KORCH_FISSION_RULE(IsInf) {
    int x = fission_in(ctx, 0);
    korch_dtype dt = fission_in_dtype(ctx, 0);
    bool neg = korch_node_attr_int(ctx->node, "detect_negative", 1) != 0;
    bool pos = korch_node_attr_int(ctx->node, "detect_positive", 1) != 0;
    int y;
    if (neg && pos) y = fission_binary(ctx, KORCH_EW_EQUAL, fission_unary(ctx, KORCH_EW_ABS, x), fission_scalar(ctx, INFINITY, dt));
    else if (pos || neg) y = fission_binary(ctx, KORCH_EW_EQUAL, x, fission_scalar(ctx, pos ? INFINITY : -INFINITY, dt));
    else y = fission_binary(ctx, KORCH_EW_AND, fission_binary(ctx, KORCH_EW_EQUAL, x, x),
                            fission_scalar(ctx, 0.0, KORCH_DTYPE_BOOL)); /* all false, shaped like x */
    fission_set_out(ctx, 0, y);
    return fission_done(ctx);
}

/* x < -lambd ? x + bias : (x > lambd ? x - bias : 0) */
KORCH_FISSION_RULE(Shrink) {
    int x = fission_in(ctx, 0);
    korch_dtype dt = fission_in_dtype(ctx, 0);
    double lambd = korch_node_attr_float(ctx->node, "lambd", 0.5f), bias = korch_node_attr_float(ctx->node, "bias", 0.0f);
    int b = fission_scalar(ctx, bias, dt);
    int upper = fission_where(ctx, fission_binary(ctx, KORCH_EW_GREATER, x, fission_scalar(ctx, lambd, dt)),
                              fission_binary(ctx, KORCH_EW_SUB, x, b), fission_scalar(ctx, 0.0, dt));
    int y = fission_where(ctx, fission_binary(ctx, KORCH_EW_LESS, x, fission_scalar(ctx, -lambd, dt)),
                          fission_binary(ctx, KORCH_EW_ADD, x, b), upper);
    fission_set_out(ctx, 0, y);
    return fission_done(ctx);
}
