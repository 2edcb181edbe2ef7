/* Fission of elementwise operators (maths, comparisons, logic, activations,
 * Clip, Cast, variadic ops) against the reference kernels, on random inputs
 * over random shapes and broadcasts. Tolerances: docs/fission.md. */
#include "fission_harness.h"

/* A shape that broadcasts to s: some dims set to 1, some leading dims dropped. */
static korch_shape broadcast_partner(const korch_shape *s) {
    korch_shape b = *s;
    for (int k = 0; k < b.rank; k++)
        if (fh_uniform() < 0.4) b.dims[k] = 1;
    int drop = (int)fh_int(0, b.rank);
    if (fh_uniform() < 0.5) drop = 0;
    b.rank -= drop;
    memmove(b.dims, b.dims + drop, sizeof(int64_t) * (size_t)b.rank);
    return b;
}

static void unary(const char *op, int opset, double lo, double hi, double rtol) {
    for (int t = 0; t < 6; t++) {
        korch_shape s = fh_random_shape(0, 4, 5);
        int n;
        korch_graph *g = fh_unary_graph(opset, op, s.rank, s.dims, &n);
        char label[96];
        snprintf(label, sizeof label, "%s #%d", op, t);
        fh_check(g, &(fh_options){.rtol = rtol, .lo = lo, .hi = hi, .min_primitives = 1}, label);
    }
}

static void binary(const char *op, int opset, korch_dtype dt, double lo, double hi, double rtol) {
    for (int t = 0; t < 8; t++) {
        korch_shape a = fh_random_shape(0, 4, 4), b = broadcast_partner(&a);
        if (t & 1) {
            korch_shape tmp = a; /* broadcast either way round */
            a = b;
            b = tmp;
        }
        korch_graph *g = fh_begin(opset);
        fh_input(g, "a", dt, a.rank, a.dims);
        fh_input(g, "b", dt, b.rank, b.dims);
        fh_node(g, op, "a,b", "y");
        fh_output(g, "y");
        char label[96];
        snprintf(label, sizeof label, "%s %s #%d", op, korch_dtype_name(dt), t);
        fh_check(g, &(fh_options){.rtol = rtol, .lo = lo, .hi = hi, .min_primitives = 1}, label);
    }
}

static void variadic(const char *op, int n_inputs) {
    korch_shape base = fh_random_shape(1, 3, 4);
    korch_graph *g = fh_begin(13);
    char names[64] = "";
    for (int i = 0; i < n_inputs; i++) {
        char nm[16];
        snprintf(nm, sizeof nm, "x%d", i);
        korch_shape s = i == 0 ? base : broadcast_partner(&base);
        fh_input(g, nm, KORCH_DTYPE_FLOAT32, s.rank, s.dims);
        strcat(names, i ? "," : "");
        strcat(names, nm);
    }
    fh_node(g, op, names, "y");
    fh_output(g, "y");
    char label[64];
    snprintf(label, sizeof label, "%s with %d inputs", op, n_inputs);
    fh_check(g, &(fh_options){.rtol = 1e-6}, label);
}

static void activation(const char *op, int opset, const char *attr, float v1, const char *attr2, float v2) {
    for (int t = 0; t < 4; t++) {
        korch_shape s = fh_random_shape(1, 4, 6);
        int n;
        korch_graph *g = fh_unary_graph(opset, op, s.rank, s.dims, &n);
        if (attr && t > 0) fh_attr_float(g, n, attr, v1 * (float)t);
        if (attr2 && t > 1) fh_attr_float(g, n, attr2, v2);
        char label[96];
        snprintf(label, sizeof label, "%s #%d", op, t);
        fh_check(g, &(fh_options){.rtol = 2e-6, .lo = -6, .hi = 6, .min_primitives = 1}, label);
    }
}

static void clip(void) {
    int64_t d[3] = {2, 3, 4};
    /* opset 6: attributes (absent ones default to the float range) */
    for (int t = 0; t < 4; t++) {
        int n;
        korch_graph *g = fh_unary_graph(6, "Clip", 3, d, &n);
        if (t & 1) fh_attr_float(g, n, "min", -0.5f);
        if (t & 2) fh_attr_float(g, n, "max", 0.75f);
        fh_check(g, &(fh_options){.rtol = 0}, "Clip opset 6");
    }
    /* opset 13: constant bounds, absent bounds, min > max, and run-time bounds */
    const float bounds[4][2] = {{-1, 1}, {0.5f, 0.25f}, {-0.3f, 2}, {0, 6}};
    for (int t = 0; t < 4; t++) {
        korch_graph *g = fh_begin(13);
        fh_input(g, "x", KORCH_DTYPE_FLOAT32, 3, d);
        fh_const_f32(g, "lo", 0, NULL, &bounds[t][0]);
        fh_const_f32(g, "hi", 0, NULL, &bounds[t][1]);
        fh_node(g, "Clip", t == 2 ? "x,,hi" : t == 3 ? "x,lo" : "x,lo,hi", "y");
        fh_output(g, "y");
        fh_check(g, &(fh_options){.rtol = 0}, "Clip opset 13 constant bounds");
    }
    korch_graph *g = fh_begin(13);
    fh_input(g, "x", KORCH_DTYPE_FLOAT32, 3, d);
    fh_input(g, "lo", KORCH_DTYPE_FLOAT32, 0, NULL);
    fh_input(g, "hi", KORCH_DTYPE_FLOAT32, 0, NULL);
    fh_node(g, "Clip", "x,lo,hi", "y");
    fh_output(g, "y");
    fh_check(g, &(fh_options){.rtol = 0}, "Clip run-time bounds");
    /* integers (opset 12+) */
    g = fh_begin(13);
    fh_input(g, "x", KORCH_DTYPE_INT64, 3, d);
    korch_tensor lo, hi;
    korch_shape sc = {0};
    korch_tensor_alloc(&lo, KORCH_DTYPE_INT64, &sc);
    korch_tensor_alloc(&hi, KORCH_DTYPE_INT64, &sc);
    *(int64_t *)lo.data = -2;
    *(int64_t *)hi.data = 3;
    fh_const(g, "lo", &lo);
    fh_const(g, "hi", &hi);
    fh_node(g, "Clip", "x,lo,hi", "y");
    fh_output(g, "y");
    fh_check(g, &(fh_options){.rtol = 0}, "Clip int64");
}

static void where_and_logic(void) {
    for (int t = 0; t < 6; t++) {
        korch_shape a = fh_random_shape(1, 4, 4), c = broadcast_partner(&a), b = broadcast_partner(&a);
        korch_graph *g = fh_begin(13);
        fh_input(g, "c", KORCH_DTYPE_BOOL, c.rank, c.dims);
        fh_input(g, "a", KORCH_DTYPE_FLOAT32, a.rank, a.dims);
        fh_input(g, "b", KORCH_DTYPE_FLOAT32, b.rank, b.dims);
        fh_node(g, "Where", "c,a,b", "y");
        fh_output(g, "y");
        fh_check(g, &(fh_options){.rtol = 0}, "Where");
    }
    binary("And", 13, KORCH_DTYPE_BOOL, 0, 0, 0);
    binary("Or", 13, KORCH_DTYPE_BOOL, 0, 0, 0);
    binary("Xor", 13, KORCH_DTYPE_BOOL, 0, 0, 0);
    int64_t d[2] = {3, 5};
    korch_graph *g = fh_begin(13);
    fh_input(g, "x", KORCH_DTYPE_BOOL, 2, d);
    fh_node(g, "Not", "x", "y");
    fh_output(g, "y");
    fh_check(g, &(fh_options){.rtol = 0}, "Not");
}

static void casts(void) {
    static const korch_dtype types[] = {KORCH_DTYPE_FLOAT32, KORCH_DTYPE_INT64, KORCH_DTYPE_INT32, KORCH_DTYPE_BOOL,
                                        KORCH_DTYPE_FLOAT64, KORCH_DTYPE_UINT8, KORCH_DTYPE_INT8};
    int64_t d[2] = {4, 5};
    for (size_t i = 0; i < 5; i++)
        for (size_t j = 0; j < sizeof types / sizeof types[0]; j++) {
            korch_graph *g = fh_begin(13);
            fh_input(g, "x", types[i], 2, d);
            int n = fh_node(g, "Cast", "x", "y");
            fh_attr_int(g, n, "to", types[j]);
            fh_output(g, "y");
            char label[64];
            snprintf(label, sizeof label, "Cast %s -> %s", korch_dtype_name(types[i]), korch_dtype_name(types[j]));
            /* uint8/int8 targets of negative or large floats are implementation-defined: stay in range */
            fh_check(g, &(fh_options){.rtol = 0, .lo = 0, .hi = 100}, label);
        }
    korch_graph *g = fh_begin(15);
    fh_input(g, "x", KORCH_DTYPE_FLOAT32, 2, d);
    fh_input(g, "like", KORCH_DTYPE_INT32, 1, d);
    fh_node(g, "CastLike", "x,like", "y");
    fh_output(g, "y");
    fh_check(g, &(fh_options){.rtol = 0, .lo = -50, .hi = 50}, "CastLike");
}

static void pass_through(void) {
    int64_t d[3] = {2, 3, 4};
    int n;
    korch_graph *g = fh_unary_graph(13, "Identity", 3, d, &n);
    fh_check(g, &(fh_options){.rtol = 0}, "Identity");
    g = fh_begin(13);
    fh_input(g, "x", KORCH_DTYPE_FLOAT32, 3, d);
    fh_node(g, "Dropout", "x", "y,mask");
    fh_output(g, "y");
    fh_output(g, "mask");
    fh_check(g, &(fh_options){.rtol = 0}, "Dropout with mask");
    g = fh_begin(7);
    fh_input(g, "x", KORCH_DTYPE_FLOAT32, 3, d);
    n = fh_node(g, "Dropout", "x", "y");
    fh_attr_float(g, n, "ratio", 0.3f);
    fh_output(g, "y");
    fh_check(g, &(fh_options){.rtol = 0}, "Dropout opset 7");
}

static void prelu(void) {
    int64_t x[4] = {2, 3, 4, 5}, slopes[3][3] = {{3, 1, 1}, {1, 1, 5}, {1, 4, 5}};
    for (int t = 0; t < 3; t++) {
        korch_graph *g = fh_begin(9);
        fh_input(g, "x", KORCH_DTYPE_FLOAT32, 4, x);
        fh_input(g, "s", KORCH_DTYPE_FLOAT32, 3, slopes[t]);
        fh_node(g, "PRelu", "x,s", "y");
        fh_output(g, "y");
        fh_check(g, &(fh_options){.rtol = 1e-7}, "PRelu");
    }
}

/* Special values reach the op through x + c with x ~ 1e-30: c itself in float. */
static void special_values(const char *op, int opset, const char *attr, int64_t value) {
    int64_t d[1] = {12};
    const float c[12] = {NAN, INFINITY, -INFINITY, 0.5f, -0.5f, 1.5f, 2.5f, -2.5f, 0.0f, -0.0f, 3.7f, -1e30f};
    korch_graph *g = fh_begin(opset);
    fh_input(g, "x", KORCH_DTYPE_FLOAT32, 1, d);
    fh_const_f32(g, "c", 1, d, c);
    fh_node(g, "Add", "x,c", "v");
    int n = fh_node(g, op, "v", "y");
    if (attr) fh_attr_int(g, n, attr, value);
    fh_output(g, "y");
    char label[64];
    snprintf(label, sizeof label, "%s on special values", op);
    fh_check(g, &(fh_options){.rtol = 0, .lo = 0, .hi = 1e-30}, label);
}

static void mod(void) {
    for (int t = 0; t < 6; t++) {
        korch_shape a = fh_random_shape(1, 3, 4), b = broadcast_partner(&a);
        bool is_float = t >= 4;
        korch_graph *g = fh_begin(13);
        fh_input(g, "a", is_float ? KORCH_DTYPE_FLOAT32 : KORCH_DTYPE_INT64, a.rank, a.dims);
        fh_input(g, "b", is_float ? KORCH_DTYPE_FLOAT32 : KORCH_DTYPE_INT64, b.rank, b.dims);
        int n = fh_node(g, "Mod", "a,b", "y");
        if (t & 1 || is_float) fh_attr_int(g, n, "fmod", 1);
        fh_output(g, "y");
        /* integers in [-5, 5] include 0 and -1 divisors; floats stay away from 0 */
        fh_check(g, &(fh_options){.rtol = 0, .lo = 0.3, .hi = 7}, (t & 1 || is_float) ? "Mod fmod=1" : "Mod fmod=0");
    }
}

/* GELU as PyTorch exports it: erf form x * 0.5 * (1 + erf(x / sqrt(2))) and
 * tanh form 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))), which fission
 * splits operator by operator (Pow with exponent 3 included). */
static void gelu_subgraphs(void) {
    for (int t = 0; t < 4; t++) {
        korch_shape s = fh_random_shape(1, 3, 8);
        korch_graph *g = fh_begin(13);
        fh_input(g, "x", KORCH_DTYPE_FLOAT32, s.rank, s.dims);
        const float half = 0.5f, one = 1.0f, sqrt2 = 1.41421356f, k = 0.79788456f, c = 0.044715f, three = 3.0f;
        fh_const_f32(g, "half", 0, NULL, &half);
        fh_const_f32(g, "one", 0, NULL, &one);
        if (t & 1) {
            fh_const_f32(g, "three", 0, NULL, &three);
            fh_const_f32(g, "c", 0, NULL, &c);
            fh_const_f32(g, "k", 0, NULL, &k);
            fh_node(g, "Pow", "x,three", "x3");
            fh_node(g, "Mul", "x3,c", "cx3");
            fh_node(g, "Add", "x,cx3", "inner");
            fh_node(g, "Mul", "inner,k", "arg");
            fh_node(g, "Tanh", "arg", "t");
        } else {
            fh_const_f32(g, "sqrt2", 0, NULL, &sqrt2);
            fh_node(g, "Div", "x,sqrt2", "arg");
            fh_node(g, "Erf", "arg", "t");
        }
        fh_node(g, "Add", "t,one", "t1");
        fh_node(g, "Mul", "x,half", "hx");
        fh_node(g, "Mul", "hx,t1", "y");
        fh_output(g, "y");
        fh_check(g, &(fh_options){.rtol = 1e-6, .lo = -5, .hi = 5, .min_primitives = 5},
                 t & 1 ? "GELU tanh form" : "GELU erf form");
    }
}

int main(void) {
    fh_seed(1);
    /* one primitive each, the same formula in double: a few ulp at most.
     * The reference executor computes exp, log, erf, tanh, sigmoid and
     * softplus in glibc's vector variants (core/vmath.h, at most 4 ulp):
     * 5e-7 relative is 4 ulp of a float in [1, 2). */
    unary("Sqrt", 13, 0.01, 9, 1e-7);
    unary("Reciprocal", 13, 0.1, 5, 1e-7);
    unary("Exp", 13, -5, 5, 5e-7);
    unary("Log", 13, 0.01, 9, 5e-7);
    unary("Erf", 13, -3, 3, 5e-7);
    unary("Tanh", 13, -4, 4, 5e-7);
    unary("Sigmoid", 13, -6, 6, 5e-7);
    unary("Neg", 13, -3, 3, 0);
    unary("Abs", 13, -3, 3, 0);
    unary("Floor", 13, -3, 3, 0);
    unary("Ceil", 13, -3, 3, 0);
    unary("Sin", 13, -4, 4, 1e-7);
    unary("Cos", 13, -4, 4, 1e-7);
    unary("Relu", 14, -3, 3, 0);
    unary("Softplus", 13, -8, 8, 5e-7);
    unary("Softsign", 13, -8, 8, 1e-7);
    unary("Mish", 18, -6, 6, 1e-6);
    unary("HardSwish", 14, -5, 5, 1e-6);
    binary("Add", 13, KORCH_DTYPE_FLOAT32, -3, 3, 1e-7);
    binary("Sub", 13, KORCH_DTYPE_FLOAT32, -3, 3, 1e-7);
    binary("Mul", 13, KORCH_DTYPE_FLOAT32, -3, 3, 1e-7);
    binary("Div", 13, KORCH_DTYPE_FLOAT32, 0.5, 3, 1e-7);
    binary("Pow", 13, KORCH_DTYPE_FLOAT32, 0.2, 2.5, 1e-6);
    binary("Add", 13, KORCH_DTYPE_INT64, 0, 0, 0);
    binary("Mul", 13, KORCH_DTYPE_INT64, 0, 0, 0);
    binary("Sub", 13, KORCH_DTYPE_INT32, 0, 0, 0);
    binary("Max", 13, KORCH_DTYPE_FLOAT32, -3, 3, 0);
    binary("Min", 13, KORCH_DTYPE_FLOAT32, -3, 3, 0);
    binary("Equal", 13, KORCH_DTYPE_INT64, 0, 0, 0);
    binary("Less", 13, KORCH_DTYPE_FLOAT32, -3, 3, 0);
    binary("LessOrEqual", 16, KORCH_DTYPE_INT64, 0, 0, 0);
    binary("Greater", 13, KORCH_DTYPE_FLOAT32, -3, 3, 0);
    binary("GreaterOrEqual", 16, KORCH_DTYPE_INT64, 0, 0, 0);
    for (int n = 1; n <= 4; n++) {
        variadic("Max", n);
        variadic("Min", n);
        variadic("Sum", n);
        variadic("Mean", n);
    }
    activation("LeakyRelu", 13, "alpha", 0.05f, NULL, 0);
    activation("Elu", 13, "alpha", 0.7f, NULL, 0);
    activation("Selu", 13, "alpha", 1.2f, "gamma", 0.9f);
    activation("Celu", 13, "alpha", 0.8f, NULL, 0);
    activation("HardSigmoid", 13, "alpha", 0.15f, "beta", 0.3f);
    activation("ThresholdedRelu", 13, "alpha", 0.4f, NULL, 0);
    unary("Tan", 13, -1.4, 1.4, 1e-7);
    unary("Asin", 13, -0.99, 0.99, 1e-7);
    unary("Acos", 13, -0.99, 0.99, 1e-7);
    unary("Atan", 13, -5, 5, 1e-7);
    unary("Sinh", 13, -4, 4, 1e-7);
    unary("Cosh", 13, -4, 4, 1e-7);
    unary("Asinh", 13, -5, 5, 1e-7);
    unary("Acosh", 13, 1.01, 6, 1e-7);
    unary("Atanh", 13, -0.99, 0.99, 1e-7);
    unary("Round", 13, -4, 4, 0);
    unary("Sign", 13, -4, 4, 0);
    unary("Shrink", 13, -2, 2, 1e-7);
    special_values("Round", 13, NULL, 0);
    special_values("Sign", 13, NULL, 0);
    special_values("IsNaN", 13, NULL, 0);
    special_values("IsInf", 13, NULL, 0);
    special_values("IsInf", 13, "detect_negative", 0);
    special_values("IsInf", 13, "detect_positive", 0);
    mod();
    gelu_subgraphs();
    clip();
    where_and_logic();
    casts();
    pass_through();
    prelu();
    printf("%d graphs checked\n", fh_checked);
    TEST_MAIN_END();
}
