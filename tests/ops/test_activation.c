/* Clip in its attribute form (opset < 11) and input form (missing bounds,
 * min > max, integers, NaN), and the activations against their formulas
 * evaluated in double at a few points, including the tails where a naive
 * formula overflows. */
#include <float.h>

#include "op_harness.h"
#include "test.h"

static const float X[6] = {-100.0f, -2.0f, -0.5f, 0.0f, 0.75f, 90.0f};
static const int64_t D6[1] = {6};

static void check_clip(void) {
    korch_tensor y;
    h_input x = h_tensor(KORCH_DTYPE_FLOAT32, 1, D6, X);
    double want[6];

    /* opset 6: bounds are attributes; max absent means the float maximum */
    h_attr lo = H_FLOAT("min", -1.0f);
    CHECK_OK(h_run1("Clip", 6, &lo, 1, &x, 1, &y));
    for (int i = 0; i < 6; i++) want[i] = X[i] < -1 ? -1 : X[i];
    CHECK(h_close_f32(y.data, want, 6));
    korch_tensor_free(&y);

    /* opset 13: min omitted (empty name), max given */
    float hi = 0.5f;
    h_input ins[3] = {x, H_OMITTED, h_tensor(KORCH_DTYPE_FLOAT32, 0, NULL, &hi)};
    CHECK_OK(h_run1("Clip", 13, NULL, 0, ins, 3, &y));
    for (int i = 0; i < 6; i++) want[i] = X[i] > 0.5 ? 0.5 : X[i];
    CHECK(h_close_f32(y.data, want, 6));
    korch_tensor_free(&y);

    /* only min, as the second input; max absent entirely */
    float m = 0;
    h_input only_min[2] = {x, h_tensor(KORCH_DTYPE_FLOAT32, 1, (int64_t[]){1}, &m)};
    CHECK_OK(h_run1("Clip", 12, NULL, 0, only_min, 2, &y));
    for (int i = 0; i < 6; i++) want[i] = X[i] < 0 ? 0 : X[i];
    CHECK(h_close_f32(y.data, want, 6));
    korch_tensor_free(&y);

    /* min > max: everything becomes max */
    float b_lo = 2, b_hi = 1;
    h_input crossed[3] = {x, h_tensor(KORCH_DTYPE_FLOAT32, 0, NULL, &b_lo),
                          h_tensor(KORCH_DTYPE_FLOAT32, 0, NULL, &b_hi)};
    CHECK_OK(h_run1("Clip", 13, NULL, 0, crossed, 3, &y));
    for (int i = 0; i < 6; i++) want[i] = 1;
    CHECK(h_close_f32(y.data, want, 6));
    korch_tensor_free(&y);

    /* NaN passes through */
    float nan_in[2] = {NAN, 5};
    h_input nan_ins[3] = {h_tensor(KORCH_DTYPE_FLOAT32, 1, (int64_t[]){2}, nan_in), crossed[1], crossed[2]};
    CHECK_OK(h_run1("Clip", 13, NULL, 0, nan_ins, 3, &y));
    CHECK(isnan(((float *)y.data)[0]) && ((float *)y.data)[1] == 1);
    korch_tensor_free(&y);

    /* int8 with an omitted min */
    int8_t iv[4] = {-128, -3, 4, 127}, imax = 3;
    h_input i8[3] = {h_tensor(KORCH_DTYPE_INT8, 1, (int64_t[]){4}, iv), H_OMITTED,
                     h_tensor(KORCH_DTYPE_INT8, 0, NULL, &imax)};
    CHECK_OK(h_run1("Clip", 13, NULL, 0, i8, 3, &y));
    int8_t iwant[4] = {-128, -3, 3, 3};
    CHECK(y.data && memcmp(y.data, iwant, 4) == 0);
    korch_tensor_free(&y);

    /* bounds: wrong dtype, not a scalar, or given as inputs before opset 11 */
    double dmax = 1;
    h_input wrong[3] = {x, H_OMITTED, h_tensor(KORCH_DTYPE_FLOAT64, 0, NULL, &dmax)};
    CHECK(h_run1("Clip", 13, NULL, 0, wrong, 3, &y) == KORCH_ERR_INVALID_MODEL);
    float two[2] = {0, 1};
    h_input vec[2] = {x, h_tensor(KORCH_DTYPE_FLOAT32, 1, (int64_t[]){2}, two)};
    CHECK(h_run1("Clip", 13, NULL, 0, vec, 2, &y) == KORCH_ERR_SHAPE);
    CHECK(h_run1("Clip", 6, NULL, 0, only_min, 2, &y) == KORCH_ERR_INVALID_MODEL);
}

typedef double (*formula)(double x);
static double leaky(double x) { return x < 0 ? 0.01 * x : x; }
static double elu(double x) { return x < 0 ? exp(x) - 1 : x; }
static double selu(double x) {
    return x <= 0 ? 1.0507009873554805 * 1.6732632423543772 * (exp(x) - 1) : 1.0507009873554805 * x;
}
static double hard_sigmoid(double x) { return fmax(0, fmin(1, 0.2 * x + 0.5)); }
static double hard_swish(double x) { return x * fmax(0, fmin(1, x / 6 + 0.5)); }
/* ln(1 + e^x) straight from the definition, in double; above x = 30 the
 * e^-x correction is below double precision of x, and e^x would lose it anyway. */
static double softplus(double x) { return x > 30 ? x : log(1 + exp(x)); }
static double mish(double x) { return x * tanh(softplus(x)); }
static double softsign(double x) { return x / (1 + fabs(x)); }
static double relu(double x) { return x > 0 ? x : 0; }
static double thresholded(double x) { return x > 1 ? x : 0; }
static double celu(double x) { return fmax(0, x) + fmin(0, exp(x) - 1); }
static double shrink(double x) { return fabs(x) <= 0.5 ? 0 : x; } /* bias 0: a dead zone of +-lambd */

static void check_activations(void) {
    struct {
        const char *op;
        int opset;
        formula f;
    } acts[] = {
        {"LeakyRelu", 16, leaky},      {"Elu", 6, elu},           {"Selu", 6, selu},
        {"HardSigmoid", 6, hard_sigmoid}, {"HardSwish", 14, hard_swish}, {"Softplus", 1, softplus},
        {"Mish", 18, mish},            {"Softsign", 1, softsign}, {"Relu", 14, relu},
        {"ThresholdedRelu", 10, thresholded}, {"Celu", 12, celu}, {"Shrink", 9, shrink},
    };
    h_input x = h_tensor(KORCH_DTYPE_FLOAT32, 1, D6, X);
    for (size_t k = 0; k < sizeof acts / sizeof acts[0]; k++) {
        korch_tensor y;
        CHECK_OK(h_run1(acts[k].op, acts[k].opset, NULL, 0, &x, 1, &y));
        double want[6];
        for (int i = 0; i < 6; i++) want[i] = acts[k].f(X[i]);
        CHECK_MSG(y.data && h_close_f32(y.data, want, 6), "%s", acts[k].op);
        korch_tensor_free(&y);
    }
    /* attributes override the defaults */
    korch_tensor y;
    h_attr alpha = H_FLOAT("alpha", 0.5f);
    CHECK_OK(h_run1("LeakyRelu", 6, &alpha, 1, &x, 1, &y));
    CHECK(((float *)y.data)[1] == -1.0f);
    korch_tensor_free(&y);
    h_attr hs[2] = {H_FLOAT("alpha", 1.0f), H_FLOAT("beta", 0.0f)};
    CHECK_OK(h_run1("HardSigmoid", 6, hs, 2, &x, 1, &y));
    CHECK(((float *)y.data)[4] == 0.75f && ((float *)y.data)[5] == 1.0f);
    korch_tensor_free(&y);
    h_attr soft[2] = {H_FLOAT("lambd", 1.0f), H_FLOAT("bias", 1.0f)}; /* soft shrink */
    CHECK_OK(h_run1("Shrink", 9, soft, 2, &x, 1, &y));
    CHECK(((float *)y.data)[0] == -99.0f && ((float *)y.data)[1] == -1.0f && ((float *)y.data)[2] == 0.0f &&
          ((float *)y.data)[4] == 0.0f && ((float *)y.data)[5] == 89.0f);
    korch_tensor_free(&y);
    /* Mish exists from opset 18 only; Celu refuses alpha 0 */
    CHECK(h_run1("Mish", 17, NULL, 0, &x, 1, &y) == KORCH_ERR_UNSUPPORTED);
    h_attr zero = H_FLOAT("alpha", 0.0f);
    CHECK(h_run1("Celu", 12, &zero, 1, &x, 1, &y) == KORCH_ERR_INVALID_MODEL);
    /* int64 Relu (opset 14) */
    int64_t iv[3] = {-5, 0, 7};
    h_input ix = h_tensor(KORCH_DTYPE_INT64, 1, (int64_t[]){3}, iv);
    CHECK_OK(h_run1("Relu", 14, NULL, 0, &ix, 1, &y));
    CHECK(((int64_t *)y.data)[0] == 0 && ((int64_t *)y.data)[2] == 7);
    korch_tensor_free(&y);
}

/* The unary maths at a few points; float64 too. */
static void check_unary(void) {
    double xs[4] = {0.25, 1.5, 4.0, 9.0};
    h_input x = h_tensor(KORCH_DTYPE_FLOAT64, 1, (int64_t[]){4}, xs);
    struct {
        const char *op;
        double (*f)(double);
    } ops[] = {{"Sqrt", sqrt}, {"Exp", exp}, {"Log", log}, {"Erf", erf}, {"Tanh", tanh},
               {"Floor", floor}, {"Ceil", ceil}, {"Sin", sin}, {"Cos", cos}, {"Abs", fabs},
               {"Tan", tan}, {"Atan", atan}, {"Sinh", sinh}, {"Cosh", cosh}, {"Asinh", asinh},
               {"Acosh", acosh}};
    for (size_t k = 0; k < sizeof ops / sizeof ops[0]; k++) {
        korch_tensor y;
        CHECK_OK(h_run1(ops[k].op, 13, NULL, 0, &x, 1, &y));
        for (int i = 0; i < 4 && y.data; i++) {
            double got = ((double *)y.data)[i], want = ops[k].f(xs[i]); /* Acosh(0.25) is NaN */
            CHECK_MSG((isnan(got) && isnan(want)) || fabs(got - want) <= 1e-12 * fmax(1, fabs(want)), "%s(%g)",
                      ops[k].op, xs[i]);
        }
        korch_tensor_free(&y);
    }
    korch_tensor y;
    CHECK_OK(h_run1("Reciprocal", 13, NULL, 0, &x, 1, &y));
    CHECK(((double *)y.data)[0] == 4.0);
    korch_tensor_free(&y);
    /* Sigmoid saturates cleanly at both ends in float32 */
    h_input fx = h_tensor(KORCH_DTYPE_FLOAT32, 1, D6, X);
    CHECK_OK(h_run1("Sigmoid", 13, NULL, 0, &fx, 1, &y));
    CHECK(((float *)y.data)[0] >= 0 && ((float *)y.data)[0] < 1e-30f && ((float *)y.data)[5] == 1.0f);
    CHECK_NEAR(((float *)y.data)[2], 1 / (1 + exp(0.5)), 1e-7);
    korch_tensor_free(&y);
    /* Round: halves to even; Sign keeps NaN and zero */
    float halves[6] = {0.5f, 1.5f, 2.5f, -0.5f, -1.5f, 2.6f};
    h_input hx = h_tensor(KORCH_DTYPE_FLOAT32, 1, D6, halves);
    CHECK_OK(h_run1("Round", 11, NULL, 0, &hx, 1, &y));
    double rounded[6] = {0, 2, 2, -0.0, -2, 3};
    CHECK(h_close_f32(y.data, rounded, 6));
    korch_tensor_free(&y);
    float signs[4] = {-3, 0, NAN, 0.25f};
    h_input sx = h_tensor(KORCH_DTYPE_FLOAT32, 1, (int64_t[]){4}, signs);
    CHECK_OK(h_run1("Sign", 13, NULL, 0, &sx, 1, &y));
    double want_sign[4] = {-1, 0, NAN, 1};
    CHECK(h_close_f32(y.data, want_sign, 4));
    korch_tensor_free(&y);
    int32_t isv[3] = {-9, 0, INT32_MAX};
    h_input isx = h_tensor(KORCH_DTYPE_INT32, 1, (int64_t[]){3}, isv);
    CHECK_OK(h_run1("Sign", 13, NULL, 0, &isx, 1, &y));
    CHECK(((int32_t *)y.data)[0] == -1 && ((int32_t *)y.data)[1] == 0 && ((int32_t *)y.data)[2] == 1);
    korch_tensor_free(&y);
    /* IsNaN / IsInf (with the sign filters) give bools */
    float special[4] = {INFINITY, -INFINITY, NAN, 1};
    h_input spx = h_tensor(KORCH_DTYPE_FLOAT32, 1, (int64_t[]){4}, special);
    uint8_t nan_w[4] = {0, 0, 1, 0}, inf_w[4] = {1, 1, 0, 0}, neg_w[4] = {0, 1, 0, 0};
    CHECK_OK(h_run1("IsNaN", 13, NULL, 0, &spx, 1, &y));
    CHECK(y.dtype == KORCH_DTYPE_BOOL && memcmp(y.data, nan_w, 4) == 0);
    korch_tensor_free(&y);
    CHECK_OK(h_run1("IsInf", 10, NULL, 0, &spx, 1, &y));
    CHECK(memcmp(y.data, inf_w, 4) == 0);
    korch_tensor_free(&y);
    h_attr only_neg = H_INT("detect_positive", 0);
    CHECK_OK(h_run1("IsInf", 10, &only_neg, 1, &spx, 1, &y));
    CHECK(memcmp(y.data, neg_w, 4) == 0);
    korch_tensor_free(&y);
    /* integer Exp is refused */
    int32_t iv[1] = {1};
    h_input ix = h_tensor(KORCH_DTYPE_INT32, 1, (int64_t[]){1}, iv);
    CHECK(h_run1("Exp", 13, NULL, 0, &ix, 1, &y) == KORCH_ERR_UNSUPPORTED);
    CHECK(strstr(korch_last_error(), "int32") != NULL);
}

int main(void) {
    check_clip();
    check_activations();
    check_unary();
    TEST_MAIN_END();
}
