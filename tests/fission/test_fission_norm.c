/* Fission of softmax, the normalisations and the reductions against the
 * reference kernels: every axis, opset-dependent semantics (2-D coercion
 * before opset 13, axes attribute vs input), keepdims, random shapes.
 * Tolerances: docs/fission.md. */
#include "fission_harness.h"

static void softmax_family(const char *op, double rtol, int min_prims) {
    static const int opsets[] = {11, 13};
    for (int oi = 0; oi < 2; oi++)
        for (int t = 0; t < 8; t++) {
            korch_shape s = fh_random_shape(1, 4, 6);
            int64_t axis = fh_int(-s.rank, s.rank - 1);
            int n;
            korch_graph *g = fh_unary_graph(opsets[oi], op, s.rank, s.dims, &n);
            if (t > 0) fh_attr_int(g, n, "axis", axis);
            char label[96];
            snprintf(label, sizeof label, "%s opset %d axis %lld rank %d", op, opsets[oi], (long long)axis, s.rank);
            /* opset 11 with the default axis 1 on a rank-1 input: one element per row */
            bool trivial = opsets[oi] < 13 && t == 0 && s.rank == 1;
            fh_check(g, &(fh_options){.rtol = rtol, .lo = -8, .hi = 8, .min_primitives = trivial ? 1 : min_prims}, label);
        }
}

static void hardmax_ties(void) {
    /* rows with repeated maxima: the first one wins */
    int64_t d[2] = {3, 4};
    const float v[12] = {1, 3, 3, 0, 2, 2, 2, 2, -1, -5, -1, -2};
    korch_graph *g = fh_begin(13);
    fh_input(g, "unused", KORCH_DTYPE_FLOAT32, 2, d);
    fh_const_f32(g, "c", 2, d, v);
    fh_node(g, "Add", "unused,c", "x");
    fh_node(g, "Hardmax", "x", "y");
    fh_output(g, "y");
    fh_check(g, &(fh_options){.rtol = 0, .lo = 0, .hi = 0.25}, "Hardmax ties");
}

static void layer_norm(void) {
    for (int t = 0; t < 10; t++) {
        korch_shape s = fh_random_shape(1, 4, 8);
        int axis = (int)fh_int(-s.rank, s.rank - 1);
        int a = axis < 0 ? axis + s.rank : axis;
        korch_shape p = {.rank = s.rank - a};
        for (int k = a; k < s.rank; k++) p.dims[k - a] = s.dims[k];
        korch_graph *g = fh_begin(17);
        fh_input(g, "x", KORCH_DTYPE_FLOAT32, s.rank, s.dims);
        fh_const_random(g, "scale", p.rank, p.dims, 0.5, 1.5);
        fh_const_random(g, "bias", p.rank, p.dims, -1, 1);
        bool stats = t % 3 == 0, bias = t % 2 == 0;
        int n = fh_node(g, "LayerNormalization", bias ? "x,scale,bias" : "x,scale", stats ? "y,mean,inv" : "y");
        fh_attr_int(g, n, "axis", axis);
        if (t & 1) fh_attr_float(g, n, "epsilon", 1e-3f);
        fh_output(g, "y");
        if (stats) {
            fh_output(g, "mean");
            fh_output(g, "inv");
        }
        char label[80];
        snprintf(label, sizeof label, "LayerNormalization axis %d rank %d", axis, s.rank);
        fh_check(g, &(fh_options){.rtol = 1e-5, .lo = -3, .hi = 5, .min_primitives = 7}, label);
    }
    /* run-time scale and bias (not constants) */
    int64_t d[3] = {2, 5, 16}, pd[1] = {16};
    korch_graph *g = fh_begin(17);
    fh_input(g, "x", KORCH_DTYPE_FLOAT32, 3, d);
    fh_input(g, "scale", KORCH_DTYPE_FLOAT32, 1, pd);
    fh_input(g, "bias", KORCH_DTYPE_FLOAT32, 1, pd);
    fh_node(g, "LayerNormalization", "x,scale,bias", "y");
    fh_output(g, "y");
    fh_check(g, &(fh_options){.rtol = 1e-5}, "LayerNormalization run-time parameters");
}

static void instance_norm(void) {
    for (int t = 0; t < 6; t++) {
        korch_shape s = fh_random_shape(3, 5, 6);
        int64_t c[1] = {s.dims[1]};
        korch_graph *g = fh_begin(t & 1 ? 6 : 13);
        fh_input(g, "x", KORCH_DTYPE_FLOAT32, s.rank, s.dims);
        fh_const_random(g, "scale", 1, c, 0.5, 1.5);
        fh_const_random(g, "bias", 1, c, -1, 1);
        int n = fh_node(g, "InstanceNormalization", "x,scale,bias", "y");
        if (t & 2) fh_attr_float(g, n, "epsilon", 1e-2f);
        fh_output(g, "y");
        fh_check(g, &(fh_options){.rtol = 1e-5, .lo = -2, .hi = 4, .min_primitives = 7}, "InstanceNormalization");
    }
}

static void batch_norm(void) {
    static const int opsets[] = {9, 14, 15};
    for (int t = 0; t < 9; t++) {
        korch_shape s = fh_random_shape(2, 5, 5);
        int64_t c[1] = {s.dims[1]};
        korch_graph *g = fh_begin(opsets[t % 3]);
        fh_input(g, "x", KORCH_DTYPE_FLOAT32, s.rank, s.dims);
        bool runtime = t >= 6;
        if (runtime) {
            fh_input(g, "scale", KORCH_DTYPE_FLOAT32, 1, c);
            fh_input(g, "bias", KORCH_DTYPE_FLOAT32, 1, c);
            fh_input(g, "mean", KORCH_DTYPE_FLOAT32, 1, c);
            fh_const_random(g, "var", 1, c, 0.2, 2);
        } else {
            fh_const_random(g, "scale", 1, c, 0.5, 1.5);
            fh_const_random(g, "bias", 1, c, -1, 1);
            fh_const_random(g, "mean", 1, c, -1, 1);
            fh_const_random(g, "var", 1, c, 0.2, 2);
        }
        int n = fh_node(g, "BatchNormalization", "x,scale,bias,mean,var", "y");
        if (t & 1) fh_attr_float(g, n, "epsilon", 1e-3f);
        fh_output(g, "y");
        fh_check(g, &(fh_options){.rtol = 2e-6, .lo = -3, .hi = 3, .min_primitives = 2},
                 runtime ? "BatchNormalization run-time parameters" : "BatchNormalization constant parameters");
    }
}

/* Random axes (sometimes none), keepdims, in the attribute or input form. */
static void reduce(const char *op, double lo, double hi, double rtol, int input_from) {
    static const int opsets[] = {11, 13, 18};
    for (int oi = 0; oi < 3; oi++)
        for (int t = 0; t < 7; t++) {
            int opset = opsets[oi];
            korch_shape s = fh_random_shape(1, 4, 5);
            int64_t axes[KORCH_MAX_RANK];
            int count = 0;
            for (int k = 0; k < s.rank; k++)
                if (fh_uniform() < 0.5) axes[count++] = fh_uniform() < 0.5 ? k : k - s.rank;
            if (t == 0) count = 0;
            korch_graph *g = fh_begin(opset);
            fh_input(g, "x", KORCH_DTYPE_FLOAT32, s.rank, s.dims);
            bool as_input = opset >= input_from;
            if (as_input) fh_const_i64(g, "axes", count, axes);
            int n = fh_node(g, op, as_input && count ? "x,axes" : "x", "y");
            if (!as_input && count) fh_attr_ints(g, n, "axes", count, axes);
            if (t & 1) fh_attr_int(g, n, "keepdims", 0);
            if (as_input && t == 6 && count == 0) fh_attr_int(g, n, "noop_with_empty_axes", 1);
            fh_output(g, "y");
            char label[96];
            snprintf(label, sizeof label, "%s opset %d, %d axes, rank %d", op, opset, count, s.rank);
            fh_check(g, &(fh_options){.rtol = rtol, .lo = lo, .hi = hi}, label);
        }
}

static void arg_extremes(void) {
    for (int t = 0; t < 16; t++) {
        korch_shape s = fh_random_shape(1, 4, 5);
        int axis = (int)fh_int(-s.rank, s.rank - 1);
        bool ints = t % 4 == 3;
        korch_graph *g = fh_begin(13);
        fh_input(g, "x", ints ? KORCH_DTYPE_INT64 : KORCH_DTYPE_FLOAT32, s.rank, s.dims);
        int n = fh_node(g, t & 1 ? "ArgMin" : "ArgMax", "x", "y");
        fh_attr_int(g, n, "axis", axis);
        if (t & 2) fh_attr_int(g, n, "keepdims", 0);
        if (t & 4) fh_attr_int(g, n, "select_last_index", 1);
        fh_output(g, "y");
        fh_check(g, &(fh_options){.rtol = 0}, t & 1 ? "ArgMin" : "ArgMax");
    }
    /* ties and NaN: the first (or last) extreme, a NaN winning */
    int64_t d[2] = {3, 4};
    const float v[12] = {1, 3, 3, 0, 2, NAN, 2, NAN, -1, -5, -1, -5};
    for (int t = 0; t < 4; t++) {
        korch_graph *g = fh_begin(13);
        fh_input(g, "x", KORCH_DTYPE_FLOAT32, 2, d);
        fh_const_f32(g, "c", 2, d, v);
        fh_node(g, "Add", "x,c", "v");
        int n = fh_node(g, t & 1 ? "ArgMin" : "ArgMax", "v", "y");
        fh_attr_int(g, n, "axis", 1);
        if (t & 2) fh_attr_int(g, n, "select_last_index", 1);
        fh_output(g, "y");
        fh_check(g, &(fh_options){.rtol = 0, .lo = 0, .hi = 1e-30}, "ArgMax/ArgMin ties and NaN");
    }
}

static void cumsum(void) {
    for (int t = 0; t < 12; t++) {
        korch_shape s = fh_random_shape(1, 4, 6);
        int64_t axis = fh_int(-s.rank, s.rank - 1);
        bool ints = t % 3 == 2;
        korch_graph *g = fh_begin(14);
        fh_input(g, "x", ints ? KORCH_DTYPE_INT64 : KORCH_DTYPE_FLOAT32, s.rank, s.dims);
        fh_const_i64(g, "axis", 1, &axis);
        int n = fh_node(g, "CumSum", "x,axis", "y");
        if (t & 1) fh_attr_int(g, n, "exclusive", 1);
        if (t & 4) fh_attr_int(g, n, "reverse", 1);
        fh_output(g, "y");
        fh_check(g, &(fh_options){.rtol = 1e-6, .min_primitives = 2}, "CumSum");
    }
}

static void mean_variance_norm(void) {
    for (int t = 0; t < 6; t++) {
        korch_shape s = fh_random_shape(4, 4, 5);
        int n;
        korch_graph *g = fh_unary_graph(13, "MeanVarianceNormalization", s.rank, s.dims, &n);
        if (t & 1) fh_attr_ints(g, n, "axes", 2, (int64_t[]){1, -1});
        fh_check(g, &(fh_options){.rtol = 1e-5, .lo = -1, .hi = 3}, "MeanVarianceNormalization");
    }
}

int main(void) {
    fh_seed(2);
    softmax_family("Softmax", 1e-6, 5);
    softmax_family("LogSoftmax", 1e-6, 5);
    softmax_family("Hardmax", 0, 6);
    hardmax_ties();
    layer_norm();
    instance_norm();
    batch_norm();
    arg_extremes();
    cumsum();
    mean_variance_norm();
    reduce("ReduceSum", -2, 2, 1e-6, 13);
    reduce("ReduceMean", -2, 2, 1e-6, 18);
    reduce("ReduceMax", -2, 2, 0, 18);
    reduce("ReduceMin", -2, 2, 0, 18);
    reduce("ReduceProd", 0.5, 1.6, 1e-6, 18);
    reduce("ReduceProd", -1.5, 1.5, 1e-6, 18);
    reduce("ReduceSumSquare", -2, 2, 1e-6, 18);
    reduce("ReduceL1", -2, 2, 1e-6, 18);
    reduce("ReduceL2", -2, 2, 1e-6, 18);
    reduce("ReduceLogSum", 0.1, 2, 1e-6, 18);
    reduce("ReduceLogSumExp", -4, 4, 1e-6, 18);
    printf("%d graphs checked\n", fh_checked);
    TEST_MAIN_END();
}
