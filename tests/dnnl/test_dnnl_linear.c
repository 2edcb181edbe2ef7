/* oneDNN linear primitives against the interpreter: random convolutions
 * (1-D/2-D/3-D, groups, depthwise, strides, dilations, asymmetric pads,
 * channels-first and channels-last), transposed convolutions (output
 * padding, groups, strides, dilations), and matmuls (batched, broadcast
 * batch dimensions on either side, constant or run-time weights). Every
 * layout variant of every case runs. Constant weights whose rows are a
 * multiple of 512 bytes get padded rows (dnnl_weights_pad.inc): the rule on
 * descriptors, and such matmuls against the interpreter. */
#include "dnnl_check.h"
#include "backend/dnnl/dnnl_internal.h"
#include "backend/dnnl/dnnl_weights_pad.inc"

/* unit 1: a 2-D convolution over an H x 1 image with an h x 1 kernel (a
 * 1-D convolution along H, as tf2onnx writes Conv1D), which the backend
 * describes to oneDNN as 1 x H (dnnl_analyze.c, swap_unit_width); unit 2:
 * over a 1 x W image with a 1 x w kernel, described as it is. With
 * `residual` a full-shape Add and a Relu follow, so a binary post-op's
 * operand is swapped too (and oneDNN's gemm:jit mishandles such operands
 * on one-row images, 1-D convolutions too: dnnl_quirks.c, 2). */
static int conv_case_w(bool transpose, int spatial, bool channels_last, bool verbose_name, int unit, bool residual) {
    korch_pgraph *pg = dc_graph();
    korch_prim_linear p = {.op = transpose ? KORCH_LINEAR_CONV_TRANSPOSE : KORCH_LINEAR_CONV, .spatial = spatial,
                           .channels_last = channels_last};
    int64_t G = dc_int(0, 3) == 0 ? dc_int(2, 3) : 1;
    bool depthwise = !transpose && dc_int(0, 4) == 0;
    int64_t Cg = depthwise ? 1 : dc_int(1, 6), Mg = depthwise ? dc_int(1, 2) : dc_int(1, 7);
    if (depthwise) G = dc_int(2, 17);
    p.group = G;
    int64_t N = dc_int(1, 2), C = Cg * G, M = Mg * G;
    int64_t xs[5], ws[5], in_sp[3];
    for (int d = 0; d < spatial; d++) {
        in_sp[d] = dc_int(spatial == 3 ? 2 : 3, spatial == 1 ? 19 : spatial == 2 ? 11 : 5);
        p.strides[d] = dc_int(1, 3);
        p.dilations[d] = dc_int(0, 3) == 0 ? 2 : 1;
        ws[2 + d] = dc_int(1, 3);
        p.pads_begin[d] = dc_int(0, 2);
        p.pads_end[d] = dc_int(0, 2);
        int one = unit == 1 ? 1 : 0; /* the spatial axis of extent 1 */
        if (unit && d == one) in_sp[d] = 1, ws[2 + d] = 1, p.pads_begin[d] = p.pads_end[d] = 0;
        if (unit && d == 1 - one) in_sp[d] = dc_int(3, 40);
        if (transpose) p.output_padding[d] = p.strides[d] > 1 ? dc_int(0, (int)p.strides[d] - 1) : 0;
        int64_t k = (ws[2 + d] - 1) * p.dilations[d] + 1;
        /* keep the output non-empty */
        if (!transpose && in_sp[d] + p.pads_begin[d] + p.pads_end[d] < k) p.pads_end[d] += k;
        if (transpose) {
            int64_t full = p.strides[d] * (in_sp[d] - 1) + p.output_padding[d] + k;
            while (full - p.pads_begin[d] - p.pads_end[d] < 1) p.pads_begin[d] = p.pads_end[d] = 0;
        }
    }
    xs[0] = N;
    if (channels_last) {
        for (int d = 0; d < spatial; d++) xs[1 + d] = in_sp[d];
        xs[spatial + 1] = C;
    } else {
        xs[1] = C;
        for (int d = 0; d < spatial; d++) xs[2 + d] = in_sp[d];
    }
    ws[0] = transpose ? C : M;
    ws[1] = transpose ? Mg : Cg;
    int x = dc_input(pg, spatial + 2, xs);
    int w = dc_int(0, 3) == 0 ? dc_input(pg, spatial + 2, ws) : dc_constant(pg, spatial + 2, ws, -1, 1);
    int y = korch_pgraph_linear(pg, &p, x, w);
    CHECK_MSG(y >= 0, "linear: %s", korch_last_error());
    int checked = 0;
    if (y >= 0 && residual) {
        const korch_shape *ys = &pg->values[y].shape;
        y = dc_ew1(pg, KORCH_EW_RELU, dc_ew2(pg, KORCH_EW_ADD, y, dc_input(pg, ys->rank, ys->dims)), 0, 0);
    }
    if (y >= 0) dc_output(pg, y);
    if (y >= 0 && unit) { /* the backend runs H x 1 as 1 x H, and 1 x W as it is */
        korch_kernel_spec spec;
        dc_spec_all(pg, &spec);
        dn_desc d;
        char reason[256];
        CHECK_MSG(dn_analyze(&spec, &d, reason, sizeof reason), "unit-width conv: %s", reason);
        CHECK_MSG(!strstr(d.text, "Hx1-as-1xH") == (unit == 2) && d.src.dims[2] == 1 && d.dst.dims[2] == 1,
                  "unit-%s conv: %s", unit == 1 ? "width" : "height", d.text);
        dc_spec_free(&spec);
    }
    if (y >= 0) {
        char what[256];
        snprintf(what, sizeof what, "%s%s%dd %s N%lld C%lld M%lld g%lld in %lldx%lldx%lld k %lldx%lldx%lld s%lld,%lld d%lld,%lld "
                 "p%lld,%lld/%lld,%lld op%lld%s",
                 residual ? "relu(residual + " : "", transpose ? "deconv" : "conv", spatial, channels_last ? "nhwc" : "nchw", (long long)N, (long long)C,
                 (long long)M, (long long)G, (long long)in_sp[0], (long long)(spatial > 1 ? in_sp[1] : 1),
                 (long long)(spatial > 2 ? in_sp[2] : 1), (long long)ws[2], (long long)(spatial > 1 ? ws[3] : 1),
                 (long long)(spatial > 2 ? ws[4] : 1), (long long)p.strides[0], (long long)p.strides[1],
                 (long long)p.dilations[0], (long long)p.dilations[1], (long long)p.pads_begin[0],
                 (long long)p.pads_begin[1], (long long)p.pads_end[0], (long long)p.pads_end[1],
                 (long long)p.output_padding[0], pg->values[w].is_constant ? " const-w" : "");
        checked = dc_check(pg, -1, 1, what);
        if (verbose_name) printf("%s\n", what);
    }
    korch_pgraph_free(pg);
    return checked;
}

static int conv_case(bool transpose, int spatial, bool channels_last, bool verbose_name) {
    return conv_case_w(transpose, spatial, channels_last, verbose_name, 0, false);
}

static int matmul_case(void) {
    korch_pgraph *pg = dc_graph();
    int64_t M = dc_int(1, 40), K = dc_int(1, 70), N = dc_int(1, 50);
    int rank = dc_int(2, 4);
    int64_t a[4], b[4];
    int ra = rank, rb = dc_int(0, 2) == 0 ? 2 : rank;
    if (dc_int(0, 3) == 0) { /* the other side has fewer dims */
        int t = ra;
        ra = rb;
        rb = t;
    }
    int64_t batch[2] = {dc_int(1, 3), dc_int(1, 4)};
    for (int i = 0; i < ra - 2; i++) a[i] = dc_int(0, 3) == 0 ? 1 : batch[i + 4 - ra];
    for (int i = 0; i < rb - 2; i++) b[i] = dc_int(0, 3) == 0 ? 1 : batch[i + 4 - rb];
    a[ra - 2] = M;
    a[ra - 1] = K;
    b[rb - 2] = K;
    b[rb - 1] = N;
    int x = dc_input(pg, ra, a);
    int w = dc_int(0, 1) ? dc_input(pg, rb, b) : dc_constant(pg, rb, b, -1, 1);
    korch_prim_linear p = {.op = KORCH_LINEAR_MATMUL};
    int y = korch_pgraph_linear(pg, &p, x, w);
    CHECK_MSG(y >= 0, "matmul: %s", korch_last_error());
    int checked = 0;
    if (y >= 0) {
        dc_output(pg, y);
        char sa[96], sb[96], what[256];
        snprintf(what, sizeof what, "matmul %s x %s%s", korch_shape_format(&pg->values[x].shape, sa, sizeof sa),
                 korch_shape_format(&pg->values[w].shape, sb, sizeof sb), pg->values[w].is_constant ? " const-w" : "");
        checked = dc_check(pg, -1, 1, what);
    }
    korch_pgraph_free(pg);
    return checked;
}

/* A batched matmul with one weight matrix folds its batch into rows
 * (dnnl_analyze.c, fold_batch_into_rows) unless an operand depends on the
 * batch but not on the row; checked by the description and against the
 * interpreter. */
static void fold_case(const int64_t *a, const int64_t *operand, int operand_rank, bool want_fold, const char *what) {
    korch_pgraph *pg = dc_graph();
    int64_t w[2] = {a[2], 16}, bias[1] = {16};
    korch_prim_linear p = {.op = KORCH_LINEAR_MATMUL};
    int y = korch_pgraph_linear(pg, &p, dc_input(pg, 3, a), dc_constant(pg, 2, w, -0.3, 0.3));
    y = dc_ew2(pg, KORCH_EW_ADD, y, dc_constant(pg, 1, bias, -1, 1));
    if (operand) y = dc_ew2(pg, KORCH_EW_ADD, y, dc_input(pg, operand_rank, operand));
    dc_output(pg, y);
    korch_kernel_spec spec;
    dc_spec_all(pg, &spec);
    dn_desc d;
    char reason[256];
    CHECK_MSG(dn_analyze(&spec, &d, reason, sizeof reason), "%s: %s", what, reason);
    CHECK_MSG((d.dst.ndims == 2) == want_fold, "%s: %s (dst rank %d)", what, d.text, d.dst.ndims);
    CHECK_MSG((strstr(d.text, "batch") == NULL) == want_fold, "%s: %s", what, d.text);
    dc_spec_free(&spec);
    CHECK_MSG(dc_check(pg, -1, 1, what) > 0, "%s: not checked", what);
    korch_pgraph_free(pg);
}

static void fold_cases(void) {
    fold_case((int64_t[]){5, 1, 20}, NULL, 0, true, "[5,1,20]x[20,16]+bias (M = 1, ViT's attention projection)");
    fold_case((int64_t[]){2, 3, 20}, (int64_t[]){2, 3, 16}, 3, true, "[2,3,20]x[20,16]+bias+full operand");
    fold_case((int64_t[]){2, 3, 20}, (int64_t[]){1, 1, 16}, 3, true, "[2,3,20]x[20,16]+bias+row operand");
    fold_case((int64_t[]){2, 3, 20}, (int64_t[]){2, 1, 16}, 3, false, "[2,3,20]x[20,16]+bias+per-batch operand");
    fold_case((int64_t[]){2, 3, 20}, (int64_t[]){2, 3, 1}, 3, true, "[2,3,20]x[20,16]+bias+per-row operand");
}

/* The padding rule on memory descriptors: which layouts it pads, and how. */
static void pad_rule_cases(void) {
    dnnl_memory_desc_t md, padded;
    dnnl_dims_t d2 = {64, 256}, d3 = {3, 64, 128}, d2odd = {64, 100}, d2f = {64, 1024};
    CHECK(dnnl_memory_desc_init_by_tag(&md, 2, d2, dnnl_f32, dnnl_ab) == dnnl_success);
    CHECK(kx_dn_padded_weights(&md, 64, &padded) == 1);
    CHECK(padded.format_desc.blocking.strides[0] == 256 + 16 && padded.format_desc.blocking.strides[1] == 1);
    CHECK(padded.dims[0] == 64 && padded.dims[1] == 256);
    CHECK(dnnl_memory_desc_get_size(&padded) >= (size_t)64 * 272 * 4 - 16 * 4);
    CHECK(dnnl_memory_desc_init_by_tag(&md, 3, d3, dnnl_f32, dnnl_abc) == dnnl_success);
    CHECK(kx_dn_padded_weights(&md, 64, &padded) == 1);
    CHECK(padded.format_desc.blocking.strides[2] == 1 && padded.format_desc.blocking.strides[1] == 144 &&
          padded.format_desc.blocking.strides[0] == 64 * 144);
    CHECK(dnnl_memory_desc_init_by_tag(&md, 2, d2odd, dnnl_f32, dnnl_ab) == dnnl_success);
    CHECK(kx_dn_padded_weights(&md, 64, &padded) == 0); /* 400-byte rows: left alone */
    CHECK(dnnl_memory_desc_init_by_tag(&md, 2, d2, dnnl_f32, dnnl_ba) == dnnl_success);
    CHECK(kx_dn_padded_weights(&md, 64, &padded) == 0); /* column-major: not a plain row layout */
    CHECK(dnnl_memory_desc_init_by_tag(&md, 2, d2f, dnnl_f32, dnnl_BA16a64b) == dnnl_success);
    CHECK(kx_dn_padded_weights(&md, 64, &padded) == 0); /* oneDNN's blocked choice: its own */
    dnnl_dims_t strides = {2048, 1};
    CHECK(dnnl_memory_desc_init_by_strides(&md, 2, d2, dnnl_f32, strides) == dnnl_success);
    CHECK(kx_dn_padded_weights(&md, 64, &padded) == 0); /* already strided */
    CHECK(dnnl_memory_desc_init_by_tag(&md, 2, d2, dnnl_f32, dnnl_ab) == dnnl_success);
    CHECK(kx_dn_padded_weights(&md, 15, &padded) == 0); /* too few rows to gain */
    CHECK(kx_dn_padded_weights(&md, 16, &padded) == 1);
}

/* Matmuls whose constant weights get padded rows, against the interpreter */
static int padded_matmul_case(int64_t M, int64_t K, int64_t N, int64_t batch) {
    korch_pgraph *pg = dc_graph();
    int64_t a[3] = {batch, M, K}, b[3] = {batch, K, N};
    int x = batch > 0 ? dc_input(pg, 3, a) : dc_input(pg, 2, a + 1);
    int w = batch > 0 ? dc_constant(pg, 3, b, -1, 1) : dc_constant(pg, 2, b + 1, -1, 1);
    korch_prim_linear p = {.op = KORCH_LINEAR_MATMUL};
    int y = korch_pgraph_linear(pg, &p, x, w);
    CHECK_MSG(y >= 0, "matmul: %s", korch_last_error());
    int checked = 0;
    if (y >= 0) {
        dc_output(pg, y);
        char what[128];
        snprintf(what, sizeof what, "matmul M%lld K%lld N%lld batch %lld const-w (padded rows)", (long long)M,
                 (long long)K, (long long)N, (long long)batch);
        checked = dc_check(pg, -1, 1, what);
    }
    korch_pgraph_free(pg);
    return checked;
}

int main(void) {
    pad_rule_cases();
    int padded = padded_matmul_case(16, 32, 128, 0) + padded_matmul_case(33, 70, 256, 0) +
                 padded_matmul_case(17, 16, 128, 2) + padded_matmul_case(1, 9, 384, 0);
    CHECK(padded >= 4);
    fold_cases();
    int runs = 0;
    for (int i = 0; i < 60; i++) runs += conv_case(false, 2, false, false);
    for (int i = 0; i < 60; i++) runs += conv_case(false, 2, true, false);
    for (int i = 0; i < 25; i++) runs += conv_case(false, 1, i & 1, false);
    for (int i = 0; i < 10; i++) runs += conv_case(false, 3, i & 1, false);
    for (int i = 0; i < 40; i++) runs += conv_case(true, 2, i & 1, false);
    for (int i = 0; i < 15; i++) runs += conv_case(true, 1, i & 1, false);
    for (int i = 0; i < 80; i++) runs += matmul_case();
    for (int i = 0; i < 48; i++) runs += conv_case_w(false, 2, i & 1, false, 1 + (i >= 24), i & 2);
    for (int i = 0; i < 48; i++) runs += conv_case_w(false, 1, i & 1, false, 0, true);
    printf("%d kernel variants checked, max error %.2g of scale\n", runs, dc_max_err);
    CHECK(runs >= 386);
    TEST_MAIN_END();
}
