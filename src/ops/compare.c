/* Comparisons (Equal, Less, Greater, LessOrEqual, GreaterOrEqual) and logic
 * (And, Or, Xor, Not): broadcast maps whose output is bool. Bool elements are
 * bytes; any non-zero byte reads as true, and outputs are written as 0 or 1. */
#include "ops/elementwise.h"

static bool is_bool(korch_dtype d) { return d == KORCH_DTYPE_BOOL; }
static bool is_numeric_or_bool(korch_dtype d) { return korch_ew_is_numeric(d) || d == KORCH_DTYPE_BOOL; }

static korch_status infer_compare_like(korch_op_ctx *ctx, bool (*ok)(korch_dtype), const char *what) {
    KORCH_TRY(korch_ew_require(ctx, 0, ok, what));
    KORCH_TRY(korch_ew_require_same_dtype(ctx, 0, 1));
    korch_shape a, b, out;
    KORCH_TRY(korch_ew_binary_shapes(ctx, &a, &b, &out));
    korch_op_set_output(ctx, 0, KORCH_DTYPE_BOOL, &out);
    return KORCH_OK;
}

static korch_status infer_order(korch_op_ctx *ctx) {
    return infer_compare_like(ctx, korch_ew_is_numeric, "float32, float64 and the integer dtypes");
}
static korch_status infer_equal(korch_op_ctx *ctx) {
    return infer_compare_like(ctx, is_numeric_or_bool, "bool, float32, float64 and the integer dtypes");
}
static korch_status infer_logic(korch_op_ctx *ctx) { return infer_compare_like(ctx, is_bool, "bool"); }

#define CMP_CASE(DT, T, EXPR)                                                                      \
    case DT: KORCH_EW_LOOP2(&plan, T, ta->data, T, tb->data, uint8_t, ty->data, (EXPR) ? 1 : 0); return KORCH_OK;
#define CMP_CASES(EXPR)                                                                            \
    CMP_CASE(KORCH_DTYPE_FLOAT32, float, EXPR)                                                     \
    CMP_CASE(KORCH_DTYPE_FLOAT64, double, EXPR)                                                    \
    CMP_CASE(KORCH_DTYPE_INT8, int8_t, EXPR)                                                       \
    CMP_CASE(KORCH_DTYPE_INT16, int16_t, EXPR)                                                     \
    CMP_CASE(KORCH_DTYPE_INT32, int32_t, EXPR)                                                     \
    CMP_CASE(KORCH_DTYPE_INT64, int64_t, EXPR)                                                     \
    CMP_CASE(KORCH_DTYPE_UINT8, uint8_t, EXPR)                                                     \
    CMP_CASE(KORCH_DTYPE_UINT16, uint16_t, EXPR)                                                   \
    CMP_CASE(KORCH_DTYPE_UINT32, uint32_t, EXPR)                                                   \
    CMP_CASE(KORCH_DTYPE_UINT64, uint64_t, EXPR)

#define DEFINE_CMP_RUN(name, EXPR, BOOL_CASE)                                                      \
    static korch_status run_##name(korch_op_ctx *ctx) {                                            \
        const korch_tensor *ta = ctx->inputs[0], *tb = ctx->inputs[1];                             \
        korch_tensor *ty = ctx->outputs[0];                                                        \
        korch_shape a, b, out;                                                                     \
        KORCH_TRY(korch_ew_binary_shapes(ctx, &a, &b, &out));                                      \
        const korch_shape *shapes[2] = {&a, &b};                                                   \
        korch_ew_plan plan;                                                                        \
        korch_ew_plan_init(&plan, &ty->shape, 2, shapes);                                          \
        switch (ta->dtype) {                                                                       \
            CMP_CASES(EXPR)                                                                        \
            BOOL_CASE                                                                              \
        default: break;                                                                            \
        }                                                                                          \
        return korch_op_error(ctx, KORCH_ERR_UNSUPPORTED, "dtype %s is not supported",             \
                              korch_dtype_name(ta->dtype));                                        \
    }

#define NO_BOOL
DEFINE_CMP_RUN(less, a < b, NO_BOOL)
DEFINE_CMP_RUN(greater, a > b, NO_BOOL)
DEFINE_CMP_RUN(less_equal, a <= b, NO_BOOL)
DEFINE_CMP_RUN(greater_equal, a >= b, NO_BOOL)
DEFINE_CMP_RUN(equal, a == b, CMP_CASE(KORCH_DTYPE_BOOL, uint8_t, (a != 0) == (b != 0)))

#define LOGIC_RUN(name, EXPR)                                                                      \
    static korch_status run_##name(korch_op_ctx *ctx) {                                            \
        const korch_tensor *ta = ctx->inputs[0], *tb = ctx->inputs[1];                             \
        korch_tensor *ty = ctx->outputs[0];                                                        \
        korch_shape a, b, out;                                                                     \
        KORCH_TRY(korch_ew_binary_shapes(ctx, &a, &b, &out));                                      \
        const korch_shape *shapes[2] = {&a, &b};                                                   \
        korch_ew_plan plan;                                                                        \
        korch_ew_plan_init(&plan, &ty->shape, 2, shapes);                                          \
        KORCH_EW_LOOP2(&plan, uint8_t, ta->data, uint8_t, tb->data, uint8_t, ty->data, (EXPR) ? 1 : 0); \
        return KORCH_OK;                                                                           \
    }
LOGIC_RUN(and, a && b)
LOGIC_RUN(or, a || b)
LOGIC_RUN(xor, (a != 0) != (b != 0))

#define CMP_ROW(Name, lo, first, infer_fn)                                                         \
    const korch_op_def korch_op_def_##Name = {                                                     \
        .kind = KORCH_OP_##Name, .op_type = #Name, .opset_min = first, .opset_max = 18,            \
        .min_inputs = 2, .max_inputs = 2, .min_outputs = 1, .max_outputs = 1,                      \
        .infer = infer_fn, .run = run_##lo,                                                        \
    };
CMP_ROW(Equal, equal, 1, infer_equal)
CMP_ROW(Less, less, 1, infer_order)
CMP_ROW(Greater, greater, 1, infer_order)
CMP_ROW(LessOrEqual, less_equal, 12, infer_order)
CMP_ROW(GreaterOrEqual, greater_equal, 12, infer_order)
CMP_ROW(And, and, 1, infer_logic)
CMP_ROW(Or, or, 1, infer_logic)
CMP_ROW(Xor, xor, 1, infer_logic)

static korch_status infer_not(korch_op_ctx *ctx) {
    KORCH_TRY(korch_ew_require(ctx, 0, is_bool, "bool"));
    korch_op_set_output(ctx, 0, KORCH_DTYPE_BOOL, &ctx->inputs[0]->shape);
    return KORCH_OK;
}

static korch_status run_not(korch_op_ctx *ctx) {
    KORCH_EW_LOOP1(korch_tensor_numel(ctx->outputs[0]), uint8_t, ctx->inputs[0]->data, uint8_t,
                   ctx->outputs[0]->data, a ? 0 : 1);
    return KORCH_OK;
}

const korch_op_def korch_op_def_Not = {
    .kind = KORCH_OP_Not, .op_type = "Not", .opset_min = 1, .opset_max = 18,
    .min_inputs = 1, .max_inputs = 1, .min_outputs = 1, .max_outputs = 1,
    .infer = infer_not, .run = run_not,
};
