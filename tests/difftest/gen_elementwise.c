/* Elementwise operators: binary operators with constants of every broadcast
 * class (either operand order), binary operators of two values, and the
 * activations exporters write, GELU and SiLU as decomposed patterns.
 *
 * Numerical guards (so that a correct kernel never looks wrong):
 * - a divisor is a constant in +-[0.5, 2] or a value made >= 0.5 by
 *   dt_positive: near-zero divisors turn float32 rounding differences in the
 *   divisor into unbounded differences in the quotient;
 * - Log, Sqrt, Reciprocal and fractional powers read values >= 0.25: there
 *   their derivatives are bounded (and their domain is respected);
 * - Exp, c^x and x^3 read values brought to magnitude <= 2 or 3: their
 *   relative error is the absolute error of the input, so large inputs
 *   amplify rounding;
 * - integer exponents may see negative bases (ONNX defines pow(-2, 3) = -8),
 *   fractional ones never. */
#include <math.h>

#include "gen_internal.h"

/* x scaled down to magnitude <= limit (a Mul by a scalar), or x itself. */
static int bound_to(dt_gen *g, int x, double limit) {
    if (g->vals[x].mag <= limit) return x;
    korch_shape s = g->vals[x].shape;
    const char *c = dt_const_scalar(g, (float)(limit / g->vals[x].mag));
    return dt_binary_named(g, "Mul", dt_use(g, x), c, &s, limit);
}

int dt_tame(dt_gen *g, int x) {
    if (x < 0 || g->vals[x].mag <= DT_TAME_ABOVE) return x;
    double mag = g->vals[x].mag;
    korch_shape s = g->vals[x].shape;
    switch (dt_int(&g->rng, 0, 2)) {
    case 0: return dt_binary_named(g, "Mul", dt_use(g, x), dt_const_scalar(g, (float)(1.0 / mag)), &s, 1.0);
    case 1: return dt_binary_named(g, "Div", dt_use(g, x), dt_const_scalar(g, (float)mag), &s, 1.0);
    default: return dt_unary(g, "Tanh", x, 1.0, NULL);
    }
}

int dt_positive(dt_gen *g, int x, double lower) {
    korch_shape s = g->vals[x].shape;
    double mag = g->vals[x].mag;
    int y = -1;
    switch (dt_int(&g->rng, 0, 5)) {
    case 0: {
        int a = dt_unary(g, "Abs", x, mag, NULL);
        if (a >= 0) y = dt_binary_named(g, "Add", dt_use(g, a), dt_const_scalar(g, (float)lower), &s, mag + lower);
        break;
    }
    case 1: {
        int b = bound_to(g, x, 2);
        int sq = b >= 0 ? dt_binary_named(g, "Mul", dt_use(g, b), g->vals[b].name, &s, 4) : -1;
        if (sq >= 0) g->vals[b].uses++;
        if (sq >= 0) y = dt_binary_named(g, "Add", dt_use(g, sq), dt_const_scalar(g, (float)lower), &s, 4 + lower);
        break;
    }
    case 2: {
        int a = dt_unary(g, "Sigmoid", x, 1, NULL);
        if (a >= 0) y = dt_binary_named(g, "Add", dt_const_scalar(g, (float)lower), dt_use(g, a), &s, 1 + lower);
        break;
    }
    case 3: {
        int a = dt_unary(g, "Softplus", x, mag + 1, NULL);
        if (a >= 0) y = dt_binary_named(g, "Add", dt_use(g, a), dt_const_scalar(g, (float)lower), &s, mag + 1 + lower);
        break;
    }
    case 4: { /* Clip with only a minimum */
        y = dt_new_val(g, &s, mag + lower);
        if (y < 0) break;
        const char *ins[] = {dt_use(g, x), dt_const_scalar(g, (float)lower)}, *outs[] = {g->vals[y].name};
        dt_node(g, "Clip", 2, ins, 1, outs);
        break;
    }
    default: { /* exp(tanh(x)) >= 1/e */
        int t = dt_unary(g, "Tanh", x, 1, NULL);
        int e = t >= 0 ? dt_unary(g, "Exp", t, 2.72, NULL) : -1;
        y = e;
        if (e >= 0 && lower > 0.36)
            y = dt_binary_named(g, "Add", dt_use(g, e), dt_const_scalar(g, (float)lower), &s, 2.72 + lower);
        break;
    }
    }
    if (y >= 0) g->vals[y].lower = lower;
    return y;
}

/* ---- binary with a constant ------------------------------------------------ */

enum { BC_SCALAR, BC_ONE, BC_ONES, BC_CHAN3, BC_CHAN4, BC_LAST, BC_ROW, BC_FULL, BC_TAIL, BC_COUNT };
static const char *const bc_names[] = {"()", "(1,)", "(1,..,1)", "(C,1,1)", "(1,C,1,1)", "per-column (N,)",
                                       "per-row (M,1)", "full", "full w/o batch"};

static bool bc_shape(int cls, const korch_shape *x, korch_shape *out) {
    int r = x->rank;
    korch_shape s = {0};
    switch (cls) {
    case BC_SCALAR: break;
    case BC_ONE: s = dt_shape(1, (int64_t[]){1}); break;
    case BC_ONES:
        s.rank = r;
        for (int i = 0; i < r; i++) s.dims[i] = 1;
        break;
    case BC_CHAN3:
        if (r != 4) return false;
        s = dt_shape(3, (int64_t[]){x->dims[1], 1, 1});
        break;
    case BC_CHAN4:
        if (r != 4) return false;
        s = dt_shape(4, (int64_t[]){1, x->dims[1], 1, 1});
        break;
    case BC_LAST:
        if (r < 1) return false;
        s = dt_shape(1, (int64_t[]){x->dims[r - 1]});
        break;
    case BC_ROW:
        if (r < 2) return false;
        s = dt_shape(2, (int64_t[]){x->dims[r - 2], 1});
        break;
    case BC_FULL: s = *x; break;
    default:
        if (r < 2) return false;
        s.rank = r - 1;
        for (int i = 1; i < r; i++) s.dims[i - 1] = x->dims[i];
        break;
    }
    *out = s;
    return true;
}

int dt_binary_const(dt_gen *g, int x) {
    dt_rng *r = &g->rng;
    static const char *const ops[] = {"Add", "Sub", "Mul", "Div", "Max", "Min", "Pow"};
    const char *op = DT_PICK(r, ops);
    korch_shape cs;
    int cls;
    do cls = dt_int(r, 0, BC_COUNT - 1);
    while (!bc_shape(cls, &g->vals[x].shape, &cs));
    bool const_first = dt_chance(r, 0.4);
    korch_shape out = g->vals[x].shape;
    double mag = g->vals[x].mag;
    const char *c = NULL;
    char what[64];
    if (op[0] == 'A' || op[0] == 'S') {
        c = dt_const_rand(g, &cs, -1, 1), mag += 1;
    } else if (op[0] == 'M' && op[1] == 'u') {
        c = dt_const_rand(g, &cs, -1.5, 1.5), mag *= 1.5;
    } else if (op[0] == 'M') {
        c = dt_const_rand(g, &cs, -0.5, 0.5), mag = fmax(mag, 0.5);
    } else if (op[0] == 'D') {
        if (const_first) { /* c / x: x made >= 0.5 */
            x = dt_positive(g, x, 0.5);
            if (x < 0) return -1;
            c = dt_const_rand(g, &cs, -1, 1), mag = 2;
        } else { /* x / c, |c| in [0.5, 2] */
            bool neg = dt_chance(r, 0.3);
            c = dt_const_rand(g, &cs, neg ? -2 : 0.5, neg ? -0.5 : 2), mag *= 2;
        }
    } else if (const_first) { /* c ^ x, c in [0.5, 2], |x| <= 3 */
        x = bound_to(g, x, 3);
        if (x < 0) return -1;
        c = dt_const_rand(g, &cs, 0.5, 2), mag = 8;
    } else {
        int64_t n = dt_numel(&cs);
        float data[DT_MAX_ELEMS];
        int kind = dt_int(r, 0, 2);
        if (kind == 2) { /* fractional: positive base */
            static const float fr[] = {0.5f, 1.5f, -0.5f};
            x = dt_positive(g, x, 0.25);
            if (x < 0) return -1;
            for (int64_t i = 0; i < n; i++) data[i] = DT_PICK(r, fr);
            mag = pow(g->vals[x].mag, 1.5) + 2;
            snprintf(what, sizeof what, "Pow fractional exponent");
        } else { /* integer exponents 1..3, any base sign */
            x = bound_to(g, x, 2);
            if (x < 0) return -1;
            for (int64_t i = 0; i < n; i++) data[i] = (float)dt_int(r, kind == 0 ? 2 : 1, 3);
            mag = pow(fmax(g->vals[x].mag, 1), 3);
            snprintf(what, sizeof what, "Pow integer exponent");
        }
        dt_cover(g, what);
        c = dt_const_data(g, &cs, data);
    }
    const char *xn = dt_use(g, x);
    int y = dt_binary_named(g, op, const_first ? c : xn, const_first ? xn : c, &out, mag);
    snprintf(what, sizeof what, "%s const %s%s", op, bc_names[cls], const_first ? " first" : "");
    if (y >= 0) dt_cover(g, what);
    return y;
}

/* ---- binary of two values --------------------------------------------------- */

/* A value other than x whose shape broadcasts to x's shape (equal, or with
 * 1s), preferring recent ones; -1 if none. */
static int partner(dt_gen *g, int x) {
    const korch_shape *xs = &g->vals[x].shape;
    int found[DT_MAX_VALS], n = 0;
    for (int v = 0; v < g->n_vals; v++) {
        if (v == x || g->vals[v].hidden) continue; /* hidden: a half value (features only) */
        korch_shape b;
        if (korch_shape_broadcast(xs, &g->vals[v].shape, &b) && korch_shape_equal(&b, xs)) found[n++] = v;
    }
    return n ? found[dt_int(&g->rng, n > 3 ? n - 3 : 0, n - 1)] : -1;
}

int dt_binary_values(dt_gen *g, int x) {
    dt_rng *r = &g->rng;
    static const char *const ops[] = {"Add", "Add", "Sub", "Mul", "Div", "Max", "Min"};
    const char *op = DT_PICK(r, ops);
    int y = partner(g, x);
    bool self = y < 0;
    if (self) y = x;
    korch_shape out = g->vals[x].shape;
    double mx = g->vals[x].mag, my = g->vals[y].mag, mag;
    if (op[0] == 'D') {
        y = dt_positive(g, y, 0.5);
        if (y < 0) return -1;
        mag = 2 * mx;
    } else if (op[0] == 'M' && op[1] == 'u') {
        mag = mx * my;
    } else if (op[0] == 'M') {
        mag = fmax(mx, my);
    } else {
        mag = mx + my;
    }
    bool swap = dt_chance(r, 0.5) && op[0] != 'D';
    const char *a = dt_use(g, x), *b = dt_use(g, y);
    int z = dt_binary_named(g, op, swap ? b : a, swap ? a : b, &out, mag);
    char what[64];
    snprintf(what, sizeof what, "%s of two values%s", op,
             self                                                          ? " (x, x)"
             : korch_shape_equal(&g->vals[y].shape, &g->vals[x].shape) ? ""
                                                                           : " broadcast");
    if (z >= 0) dt_cover(g, what);
    return z;
}

/* ---- activations ---------------------------------------------------------------- */

static int gelu(dt_gen *g, int x) {
    korch_shape s = g->vals[x].shape;
    double m = g->vals[x].mag;
    /* x * 0.5 * (1 + erf(x / sqrt 2)), node for node as torch.onnx writes it */
    int a = dt_binary_named(g, "Div", dt_use(g, x), dt_const_scalar(g, 1.4142135f), &s, m);
    int b = a >= 0 ? dt_unary(g, "Erf", a, 1, NULL) : -1;
    int c = b >= 0 ? dt_binary_named(g, "Add", dt_use(g, b), dt_const_scalar(g, 1.0f), &s, 2) : -1;
    int d = c >= 0 ? dt_binary_named(g, "Mul", dt_use(g, x), dt_use(g, c), &s, 2 * m) : -1;
    return d >= 0 ? dt_binary_named(g, "Mul", dt_use(g, d), dt_const_scalar(g, 0.5f), &s, m) : -1;
}

static int gelu_tanh(dt_gen *g, int x) {
    x = bound_to(g, x, 4);
    if (x < 0) return -1;
    korch_shape s = g->vals[x].shape;
    double m = g->vals[x].mag;
    /* 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))) */
    int p = dt_binary_named(g, "Pow", dt_use(g, x), dt_const_scalar(g, 3.0f), &s, m * m * m);
    int q = p >= 0 ? dt_binary_named(g, "Mul", dt_use(g, p), dt_const_scalar(g, 0.044715f), &s, m) : -1;
    int u = q >= 0 ? dt_binary_named(g, "Add", dt_use(g, x), dt_use(g, q), &s, 2 * m) : -1;
    int v = u >= 0 ? dt_binary_named(g, "Mul", dt_use(g, u), dt_const_scalar(g, 0.7978846f), &s, 2 * m) : -1;
    int t = v >= 0 ? dt_unary(g, "Tanh", v, 1, NULL) : -1;
    int w = t >= 0 ? dt_binary_named(g, "Add", dt_use(g, t), dt_const_scalar(g, 1.0f), &s, 2) : -1;
    int h = w >= 0 ? dt_binary_named(g, "Mul", dt_const_scalar(g, 0.5f), dt_use(g, x), &s, m) : -1;
    return h >= 0 ? dt_binary_named(g, "Mul", dt_use(g, h), dt_use(g, w), &s, m) : -1;
}

int dt_activation(dt_gen *g, int x) {
    dt_rng *r = &g->rng;
    double m = g->vals[x].mag;
    korch_shape s = g->vals[x].shape;
    Onnx__NodeProto *n = NULL;
    int y = -1, kind = dt_int(r, 0, 24);
    static const char *const names[] = {
        "Relu", "LeakyRelu", "Clip", "Sigmoid", "Tanh", "HardSigmoid", "HardSwish", "Erf", "GELU (erf)",
        "GELU (tanh)", "Softplus", "Exp", "Log", "Sqrt", "Abs", "Neg", "Reciprocal", "Elu", "Selu",
        "Softsign", "PRelu", "SiLU (x*sigmoid x)", "Identity", "Relu", "Clip"};
    switch (kind) {
    case 0: case 23: y = dt_unary(g, "Relu", x, m, NULL); break;
    case 1:
        y = dt_unary(g, "LeakyRelu", x, m, &n);
        korch_onnx_attr_float(&g->w, n, "alpha", (float)dt_unif(r, 0.01, 0.3));
        break;
    case 2: case 24: {
        static const float mins[] = {0, -1, -0.5f}, maxs[] = {6, 1, 0.5f};
        int which = dt_int(r, 0, 2); /* both, min only, max only */
        float lo = DT_PICK(r, mins), hi = DT_PICK(r, maxs);
        y = dt_new_val(g, &s, which == 1 ? m : fmin(m, hi));
        if (y < 0) return -1;
        const char *ins[] = {dt_use(g, x), which != 2 ? dt_const_scalar(g, lo) : "", which != 1 ? dt_const_scalar(g, hi) : NULL};
        const char *outs[] = {g->vals[y].name};
        dt_node(g, "Clip", which == 1 ? 2 : 3, ins, 1, outs);
        dt_cover(g, which == 0 ? "Clip min max" : which == 1 ? "Clip min" : "Clip max");
        return y;
    }
    case 3: y = dt_unary(g, "Sigmoid", x, 1, NULL); break;
    case 4: y = dt_unary(g, "Tanh", x, 1, NULL); break;
    case 5:
        y = dt_unary(g, "HardSigmoid", x, 1, &n);
        if (dt_chance(r, 0.5)) korch_onnx_attr_float(&g->w, n, "alpha", 1.0f / 6);
        break;
    case 6: y = dt_unary(g, "HardSwish", x, m, NULL); break;
    case 7: y = dt_unary(g, "Erf", x, 1, NULL); break;
    case 8: y = gelu(g, x); break;
    case 9: y = gelu_tanh(g, x); break;
    case 10: y = dt_unary(g, "Softplus", x, m + 1, NULL); break;
    case 11: x = bound_to(g, x, 2), y = x >= 0 ? dt_unary(g, "Exp", x, 7.4, NULL) : -1; break;
    case 12: x = dt_positive(g, x, 0.25), y = x >= 0 ? dt_unary(g, "Log", x, fmax(1.5, log(g->vals[x].mag + 1)), NULL) : -1; break;
    case 13: x = dt_positive(g, x, 0.25), y = x >= 0 ? dt_unary(g, "Sqrt", x, sqrt(g->vals[x].mag), NULL) : -1; break;
    case 14: y = dt_unary(g, "Abs", x, m, NULL); break;
    case 15: y = dt_unary(g, "Neg", x, m, NULL); break;
    case 16: x = dt_positive(g, x, 0.5), y = x >= 0 ? dt_unary(g, "Reciprocal", x, 2, NULL) : -1; break;
    case 17:
        y = dt_unary(g, "Elu", x, m, &n);
        if (dt_chance(r, 0.5)) korch_onnx_attr_float(&g->w, n, "alpha", 0.5f);
        break;
    case 18: y = dt_unary(g, "Selu", x, 1.8 * m, NULL); break;
    case 19: y = dt_unary(g, "Softsign", x, 1, NULL); break;
    case 20: {
        /* the slope must broadcast unidirectionally to x: per channel or one
         * value, and a scalar x takes a scalar slope ((1,) does not go to ();
         * seed 1754). Chosen from x's rank alone, with no extra draw: every
         * model where x is not a scalar stays as it was. */
        korch_shape ss = s.rank == 4 && dt_chance(r, 0.7) ? dt_shape(3, (int64_t[]){s.dims[1], 1, 1})
                         : s.rank == 0                    ? dt_shape(0, NULL)
                                                          : dt_shape(1, (int64_t[]){1});
        y = dt_binary_named(g, "PRelu", dt_use(g, x), dt_const_rand(g, &ss, 0.0, 0.4), &s, m);
        break;
    }
    case 21: {
        int sg = dt_unary(g, "Sigmoid", x, 1, NULL);
        y = sg >= 0 ? dt_binary_named(g, "Mul", dt_use(g, x), dt_use(g, sg), &s, m) : -1;
        break;
    }
    default: y = dt_unary(g, "Identity", x, m, NULL); break;
    }
    if (y >= 0) dt_cover(g, names[kind]);
    return y;
}
