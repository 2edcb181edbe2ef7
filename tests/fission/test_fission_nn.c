/* Fission of MatMul, Gemm, Conv, ConvTranspose and the pools against the
 * reference kernels, over random shapes and attribute combinations.
 * Tolerances: docs/fission.md. */
#include "fission_harness.h"

static void matmul(void) {
    for (int t = 0; t < 16; t++) {
        int64_t M = fh_int(1, 6), K = fh_int(1, 9), N = fh_int(1, 7);
        korch_shape a = {.rank = (int)fh_int(1, 4)}, b = {.rank = (int)fh_int(1, 4)};
        /* batch dims: broadcast-compatible (1 or a shared size) */
        int64_t batch[2] = {fh_int(1, 3), fh_int(1, 3)};
        for (int k = 0; k < a.rank - 2; k++) a.dims[k] = fh_uniform() < 0.3 ? 1 : batch[k + 4 - a.rank];
        for (int k = 0; k < b.rank - 2; k++) b.dims[k] = fh_uniform() < 0.3 ? 1 : batch[k + 4 - b.rank];
        if (a.rank == 1) a.dims[0] = K;
        else a.dims[a.rank - 2] = M, a.dims[a.rank - 1] = K;
        if (b.rank == 1) b.dims[0] = K;
        else b.dims[b.rank - 2] = K, b.dims[b.rank - 1] = N;
        korch_graph *g = fh_begin(13);
        fh_input(g, "a", KORCH_DTYPE_FLOAT32, a.rank, a.dims);
        if (t & 1) fh_const_random(g, "b", b.rank, b.dims, -1, 1);
        else fh_input(g, "b", KORCH_DTYPE_FLOAT32, b.rank, b.dims);
        fh_node(g, "MatMul", "a,b", "y");
        fh_output(g, "y");
        char label[64];
        snprintf(label, sizeof label, "MatMul rank %d x rank %d", a.rank, b.rank);
        fh_check(g, &(fh_options){.rtol = 1e-5, .min_primitives = 1}, label);
    }
}

static void gemm(void) {
    static const int opsets[] = {7, 9, 11, 13};
    for (int t = 0; t < 24; t++) {
        int64_t M = fh_int(1, 6), K = fh_int(1, 8), N = fh_int(1, 7);
        bool ta = t & 1, tb = t & 2, c_const = t & 4, b_const = t & 8;
        int opset = opsets[t % 4];
        int64_t ad[2] = {ta ? K : M, ta ? M : K}, bd[2] = {tb ? N : K, tb ? K : N};
        int c_kind = (int)fh_int(0, opset >= 11 ? 3 : 2); /* (M,N), (N), (1,N) or none */
        int64_t cd[2] = {M, N};
        korch_graph *g = fh_begin(opset);
        fh_input(g, "a", KORCH_DTYPE_FLOAT32, 2, ad);
        if (b_const) fh_const_random(g, "b", 2, bd, -1, 1);
        else fh_input(g, "b", KORCH_DTYPE_FLOAT32, 2, bd);
        if (c_kind == 0 || c_kind == 2) {
            if (c_kind == 2) cd[0] = 1;
            if (c_const) fh_const_random(g, "c", 2, cd, -1, 1);
            else fh_input(g, "c", KORCH_DTYPE_FLOAT32, 2, cd);
        } else if (c_kind == 1) {
            fh_const_random(g, "c", 1, cd + 1, -1, 1);
        }
        int n = fh_node(g, "Gemm", c_kind == 3 ? "a,b" : "a,b,c", "y");
        if (ta) fh_attr_int(g, n, "transA", 1);
        if (tb) fh_attr_int(g, n, "transB", 1);
        if (t % 3 == 1) fh_attr_float(g, n, "alpha", 0.5f);
        if (t % 5 == 2) fh_attr_float(g, n, "beta", 2.0f);
        if (t % 7 == 3) fh_attr_float(g, n, "beta", 0.0f);
        fh_output(g, "y");
        char label[96];
        snprintf(label, sizeof label, "Gemm opset %d transA %d transB %d C kind %d", opset, ta, tb, c_kind);
        fh_check(g, &(fh_options){.rtol = 1e-5, .min_primitives = 1}, label);
    }
}

/* Random convolution geometry over `spatial` dims; the output stays >= 1. */
static void conv(int spatial, bool transpose, int trials) {
    for (int t = 0; t < trials; t++) {
        int64_t group = fh_int(1, 3), cpg = fh_int(1, 3), mpg = fh_int(1, 3);
        int64_t x[5] = {fh_int(1, 2), group * cpg}, w[5], k[3], st[3], dl[3], pads[6], op[3];
        for (int d = 0; d < spatial; d++) {
            k[d] = fh_int(1, 3);
            st[d] = fh_int(1, 3);
            dl[d] = fh_int(1, 2);
            x[2 + d] = fh_int((k[d] - 1) * dl[d] + 1, 7);
            pads[d] = fh_int(0, 2);
            pads[spatial + d] = fh_int(0, 2);
            op[d] = transpose ? fh_int(0, st[d] > dl[d] ? dl[d] : st[d] - 1) : 0;
            if (transpose) {
                /* crop no more than the full output */
                int64_t full = st[d] * (x[2 + d] - 1) + op[d] + (k[d] - 1) * dl[d] + 1;
                while (pads[d] + pads[spatial + d] >= full) pads[d] = pads[spatial + d] = 0;
            }
        }
        if (transpose) {
            w[0] = group * cpg;
            w[1] = mpg;
        } else {
            w[0] = group * mpg;
            w[1] = cpg;
        }
        for (int d = 0; d < spatial; d++) w[2 + d] = k[d];
        int mode = (int)fh_int(0, 4); /* explicit pads, VALID, SAME_UPPER, SAME_LOWER, output_shape */
        korch_graph *g = fh_begin(13);
        fh_input(g, "x", KORCH_DTYPE_FLOAT32, spatial + 2, x);
        fh_const_random(g, "w", spatial + 2, w, -1, 1);
        bool bias = t & 1;
        int64_t m[1] = {group * mpg};
        if (bias) fh_const_random(g, "b", 1, m, -1, 1);
        int n = fh_node(g, transpose ? "ConvTranspose" : "Conv", bias ? "x,w,b" : "x,w", "y");
        fh_attr_ints(g, n, "strides", spatial, st);
        fh_attr_ints(g, n, "dilations", spatial, dl);
        if (group > 1) fh_attr_int(g, n, "group", group);
        if (t & 2) fh_attr_ints(g, n, "kernel_shape", spatial, k);
        if (transpose && op[0] + op[spatial - 1] > 0) fh_attr_ints(g, n, "output_padding", spatial, op);
        const char *modes[4] = {NULL, "VALID", "SAME_UPPER", "SAME_LOWER"};
        if (mode == 0) fh_attr_ints(g, n, "pads", 2 * spatial, pads);
        else if (mode < 4) fh_attr_string(g, n, "auto_pad", modes[mode]);
        else if (transpose) {
            int64_t os[3];
            for (int d = 0; d < spatial; d++) os[d] = x[2 + d] * st[d] + fh_int(x[2 + d] * st[d] > 1 ? -1 : 0, 1);
            fh_attr_ints(g, n, "output_shape", spatial, os);
        }
        fh_output(g, "y");
        char label[96];
        snprintf(label, sizeof label, "%s %dd group %lld mode %d", transpose ? "ConvTranspose" : "Conv", spatial,
                 (long long)group, mode);
        fh_check(g, &(fh_options){.rtol = 1e-5, .min_primitives = bias ? 2 : 1}, label);
    }
}

static void pools(const char *op, int trials) {
    bool avg = strcmp(op, "AveragePool") == 0;
    for (int t = 0; t < trials; t++) {
        int spatial = (int)fh_int(1, 3);
        int64_t x[5] = {fh_int(1, 2), fh_int(1, 3)}, k[3], st[3], dl[3], pads[6];
        for (int d = 0; d < spatial; d++) {
            k[d] = fh_int(1, 3);
            st[d] = fh_int(1, 3);
            dl[d] = avg ? 1 : fh_int(1, 2);
            x[2 + d] = fh_int((k[d] - 1) * dl[d] + 1, 7);
            /* pads below the kernel extent: no window is padding only */
            pads[d] = fh_int(0, k[d] - 1);
            pads[spatial + d] = fh_int(0, k[d] - 1);
        }
        int mode = (int)fh_int(0, 3);
        korch_graph *g = fh_begin(avg ? 11 : 12);
        fh_input(g, "x", KORCH_DTYPE_FLOAT32, spatial + 2, x);
        bool indices = !avg && (t & 1);
        int n = fh_node(g, op, "x", indices ? "y,i" : "y");
        fh_attr_ints(g, n, "kernel_shape", spatial, k);
        fh_attr_ints(g, n, "strides", spatial, st);
        if (!avg) fh_attr_ints(g, n, "dilations", spatial, dl);
        if (mode <= 1) fh_attr_ints(g, n, "pads", 2 * spatial, pads);
        if (mode == 1) fh_attr_int(g, n, "ceil_mode", 1);
        if (mode == 2) fh_attr_string(g, n, "auto_pad", t & 2 ? "SAME_UPPER" : "SAME_LOWER");
        if (mode == 3) fh_attr_string(g, n, "auto_pad", "VALID");
        if (avg && (t & 2)) fh_attr_int(g, n, "count_include_pad", 1);
        if (indices && (t & 4)) fh_attr_int(g, n, "storage_order", 1);
        fh_output(g, "y");
        if (indices) fh_output(g, "i");
        char label[96];
        snprintf(label, sizeof label, "%s %dd mode %d%s", op, spatial, mode, indices ? " with Indices" : "");
        fh_check(g, &(fh_options){.rtol = avg ? 1e-6 : 0, .min_primitives = 2}, label);
    }
}

static void global_pools(void) {
    for (int t = 0; t < 6; t++) {
        korch_shape s = fh_random_shape(3, 5, 6);
        int n;
        korch_graph *g = fh_unary_graph(13, t & 1 ? "GlobalMaxPool" : "GlobalAveragePool", s.rank, s.dims, &n);
        fh_check(g, &(fh_options){.rtol = 1e-6, .min_primitives = 1}, t & 1 ? "GlobalMaxPool" : "GlobalAveragePool");
    }
}

int main(void) {
    fh_seed(3);
    matmul();
    gemm();
    conv(1, false, 12);
    conv(2, false, 24);
    conv(3, false, 6);
    conv(1, true, 10);
    conv(2, true, 24);
    pools("MaxPool", 30);
    pools("AveragePool", 30);
    global_pools();
    printf("%d graphs checked\n", fh_checked);
    TEST_MAIN_END();
}
