/* Binary arithmetic with broadcasting: Add, Sub, Mul, Div, Mod, Pow.
 * Floats compute in their own precision; integers wrap on overflow (computed
 * in uint64, where wrap-around is defined) and divide by zero to 0. */

#include "ops/elementwise.h"

static const char *const NUMERIC = "float32, float64 and the integer dtypes";

static korch_status infer_arith(korch_op_ctx *ctx) {
    KORCH_TRY(korch_ew_require(ctx, 0, korch_ew_is_numeric, NUMERIC));
    KORCH_TRY(korch_ew_require_same_dtype(ctx, 0, 1));
    korch_shape a, b, out;
    KORCH_TRY(korch_ew_binary_shapes(ctx, &a, &b, &out));
    korch_op_set_output(ctx, 0, ctx->inputs[0]->dtype, &out);
    return KORCH_OK;
}

static korch_status binary_plan(korch_op_ctx *ctx, korch_ew_plan *plan) {
    korch_shape a, b, out;
    KORCH_TRY(korch_ew_binary_shapes(ctx, &a, &b, &out));
    const korch_shape *shapes[2] = {&a, &b};
    korch_ew_plan_init(plan, &ctx->outputs[0]->shape, 2, shapes);
    return KORCH_OK;
}

/* One `case` per numeric dtype; FEXPR/SEXPR/UEXPR compute from `a` and `b` for
 * float, signed and unsigned element types. */
#define ARITH_CASE(DT, T, EXPR)                                                                    \
    case DT: KORCH_EW_LOOP2(&plan, T, ta->data, T, tb->data, T, ty->data, EXPR); return KORCH_OK;
#define ARITH_CASES(FEXPR, SEXPR, UEXPR)                                                           \
    ARITH_CASE(KORCH_DTYPE_FLOAT32, float, FEXPR)                                                  \
    ARITH_CASE(KORCH_DTYPE_FLOAT64, double, FEXPR)                                                 \
    ARITH_CASE(KORCH_DTYPE_INT8, int8_t, SEXPR)                                                    \
    ARITH_CASE(KORCH_DTYPE_INT16, int16_t, SEXPR)                                                  \
    ARITH_CASE(KORCH_DTYPE_INT32, int32_t, SEXPR)                                                  \
    ARITH_CASE(KORCH_DTYPE_INT64, int64_t, SEXPR)                                                  \
    ARITH_CASE(KORCH_DTYPE_UINT8, uint8_t, UEXPR)                                                  \
    ARITH_CASE(KORCH_DTYPE_UINT16, uint16_t, UEXPR)                                                \
    ARITH_CASE(KORCH_DTYPE_UINT32, uint32_t, UEXPR)                                                \
    ARITH_CASE(KORCH_DTYPE_UINT64, uint64_t, UEXPR)

#define DEFINE_ARITH_RUN(name, FEXPR, SEXPR, UEXPR)                                                \
    static korch_status run_##name(korch_op_ctx *ctx) {                                            \
        const korch_tensor *ta = ctx->inputs[0], *tb = ctx->inputs[1];                             \
        korch_tensor *ty = ctx->outputs[0];                                                        \
        korch_ew_plan plan;                                                                        \
        KORCH_TRY(binary_plan(ctx, &plan));                                                        \
        switch (ta->dtype) {                                                                       \
            ARITH_CASES(FEXPR, SEXPR, UEXPR)                                                       \
        default: break;                                                                            \
        }                                                                                          \
        return korch_op_error(ctx, KORCH_ERR_UNSUPPORTED, "dtype %s is not supported",             \
                              korch_dtype_name(ta->dtype));                                        \
    }

DEFINE_ARITH_RUN(add, a + b, (uint64_t)a + (uint64_t)b, (uint64_t)a + (uint64_t)b)
DEFINE_ARITH_RUN(sub, a - b, (uint64_t)a - (uint64_t)b, (uint64_t)a - (uint64_t)b)
DEFINE_ARITH_RUN(mul, a * b, (uint64_t)a * (uint64_t)b, (uint64_t)a * (uint64_t)b)
DEFINE_ARITH_RUN(div, a / b, korch_ew_div_i64(a, b), korch_ew_div_u64(a, b))

#define ARITH_ROW(Name, lo)                                                                        \
    const korch_op_def korch_op_def_##Name = {                                                     \
        .kind = KORCH_OP_##Name, .op_type = #Name, .opset_min = 1, .opset_max = 18,                \
        .min_inputs = 2, .max_inputs = 2, .min_outputs = 1, .max_outputs = 1,                      \
        .infer = infer_arith, .run = run_##lo,                                                     \
    };
ARITH_ROW(Add, add)
ARITH_ROW(Sub, sub)
ARITH_ROW(Mul, mul)
ARITH_ROW(Div, div)

/* ---- Mod: fmod=0 is Python's % (the sign of the divisor, integers only);
 * fmod=1 is C's fmod / % (the sign of the dividend). x mod 0 is 0 for integers. ---- */

static korch_status infer_mod(korch_op_ctx *ctx) {
    KORCH_TRY(infer_arith(ctx));
    int64_t fmod_attr = korch_node_attr_int(ctx->node, "fmod", 0);
    if (fmod_attr != 0 && fmod_attr != 1)
        return korch_op_error(ctx, KORCH_ERR_INVALID_MODEL, "fmod must be 0 or 1, not %lld", (long long)fmod_attr);
    if (fmod_attr == 0 && korch_ew_is_float(ctx->inputs[0]->dtype))
        return korch_op_error(ctx, KORCH_ERR_INVALID_MODEL, "floating-point Mod needs fmod=1");
    return KORCH_OK;
}

/* Remainder of truncating division; b == -1 is special-cased because
 * INT64_MIN % -1 overflows. */
static inline int64_t rem_i64(int64_t a, int64_t b) { return b == 0 || b == -1 ? 0 : a % b; }
static inline int64_t python_mod_i64(int64_t a, int64_t b) {
    int64_t r = rem_i64(a, b);
    return r != 0 && (r < 0) != (b < 0) ? r + b : r;
}

DEFINE_ARITH_RUN(fmod, fmod(a, b), rem_i64(a, b), b ? a % b : 0)
/* (floats never get here: infer_mod refuses them with fmod=0) */
DEFINE_ARITH_RUN(python_mod, fmod(a, b), python_mod_i64(a, b), b ? a % b : 0)

static korch_status run_mod(korch_op_ctx *ctx) {
    return korch_node_attr_int(ctx->node, "fmod", 0) ? run_fmod(ctx) : run_python_mod(ctx);
}

const korch_op_def korch_op_def_Mod = {
    .kind = KORCH_OP_Mod, .op_type = "Mod", .opset_min = 10, .opset_max = 18,
    .min_inputs = 2, .max_inputs = 2, .min_outputs = 1, .max_outputs = 1,
    .infer = infer_mod, .run = run_mod,
};

/* ---- Pow: the exponent may have another dtype than the base (opset 12+) ---- */

static korch_status infer_pow(korch_op_ctx *ctx) {
    KORCH_TRY(korch_ew_require(ctx, 0, korch_ew_is_numeric, NUMERIC));
    KORCH_TRY(korch_ew_require(ctx, 1, korch_ew_is_numeric, NUMERIC));
    korch_shape a, b, out;
    KORCH_TRY(korch_ew_binary_shapes(ctx, &a, &b, &out));
    korch_op_set_output(ctx, 0, ctx->inputs[0]->dtype, &out);
    return KORCH_OK;
}

/* Exact integer power with wrap-around; negative exponents truncate 1/a^-e. */
static int64_t ipow(int64_t a, int64_t e) {
    if (e < 0) return a == 1 ? 1 : a == -1 ? ((e & 1) ? -1 : 1) : 0;
    uint64_t result = 1, base = (uint64_t)a;
    while (e) {
        if (e & 1) result *= base;
        base *= base;
        e >>= 1;
    }
    return (int64_t)result;
}

/* Mixed dtypes: read both operands element by element through double (or
 * int64 when both are integers, to stay exact). Slow but rare. */
static korch_status run_pow_mixed(korch_op_ctx *ctx, const korch_ew_plan *plan) {
    const korch_tensor *ta = ctx->inputs[0], *tb = ctx->inputs[1];
    korch_tensor *ty = ctx->outputs[0];
    bool exact = !korch_ew_is_float(ta->dtype) && !korch_ew_is_float(tb->dtype);
#pragma omp parallel for schedule(static) if (plan->parallel)
    for (int64_t t = 0; t < plan->pieces; t++) {
        int64_t begin, end, off[KORCH_EW_MAX_INPUTS];
        korch_ew_plan_piece(plan, t, &begin, &end, off);
        for (int64_t i = begin; i < end; i++) {
            int64_t ia = off[0] + (i - begin) * plan->step[0], ib = off[1] + (i - begin) * plan->step[1];
            if (exact)
                korch_ew_set_i64(ty, i, ipow(korch_tensor_get_i64(ta, ia), korch_tensor_get_i64(tb, ib)));
            else
                korch_ew_set_f64(ty, i, pow(korch_tensor_get_f64(ta, ia), korch_tensor_get_f64(tb, ib)));
        }
    }
    return KORCH_OK;
}

static korch_status run_pow(korch_op_ctx *ctx) {
    const korch_tensor *ta = ctx->inputs[0], *tb = ctx->inputs[1];
    korch_tensor *ty = ctx->outputs[0];
    korch_ew_plan plan;
    KORCH_TRY(binary_plan(ctx, &plan));
    if (ta->dtype == KORCH_DTYPE_FLOAT32 && tb->dtype == KORCH_DTYPE_FLOAT32)
        KORCH_EW_LOOP2(&plan, float, ta->data, float, tb->data, float, ty->data, b == 2.0f ? a * a : powf(a, b));
    else if (ta->dtype == KORCH_DTYPE_FLOAT64 && tb->dtype == KORCH_DTYPE_FLOAT64)
        KORCH_EW_LOOP2(&plan, double, ta->data, double, tb->data, double, ty->data, pow(a, b));
    else
        return run_pow_mixed(ctx, &plan);
    return KORCH_OK;
}

const korch_op_def korch_op_def_Pow = {
    .kind = KORCH_OP_Pow, .op_type = "Pow", .opset_min = 1, .opset_max = 18,
    .min_inputs = 2, .max_inputs = 2, .min_outputs = 1, .max_outputs = 1,
    .infer = infer_pow, .run = run_pow,
};
