/* Transposes absorbed into a oneDNN convolution's descriptors
 * (src/backend/dnnl/dnnl_transpose.c), against the interpreter: the
 * layout pass's NCHW -> NHWC transpose before a channels-last convolution
 * and the NHWC -> NCHW one after its post-op chain, alone and together,
 * on 1x1, 3x3 (strided, padded), grouped and depthwise convolutions, 1-D
 * and 3-D ones, with bias, ReLU, a scalar affine step and binary post-ops
 * whose operand is per channel or a full channels-last tensor; every
 * variant. Then what must not be absorbed: a transposed source that is also
 * read elsewhere or leaves the kernel, a transpose in the middle of the
 * chain, a slice instead of a permutation, a transpose whose result feeds a
 * later step. */
#include "dnnl_check.h"

/* NCHW <-> NHWC for rank r: to_last (0, 2, ..., r-1, 1), to_first (0, r-1, 1, ..., r-2) */
static void perms(int r, int64_t *to_last, int64_t *to_first) {
    to_last[0] = to_first[0] = 0;
    for (int j = 1; j < r - 1; j++) to_last[j] = j + 1;
    to_last[r - 1] = 1;
    to_first[1] = r - 1;
    for (int j = 2; j < r; j++) to_first[j] = j - 1;
}

typedef struct conv_case {
    const char *name;
    int spatial;
    int64_t C, M, group, k, stride, pad;
    bool src_t, dst_t;  /* transposes around the convolution */
    int post;           /* 0 none, 1 bias+ReLU, 2 bias + x*1.5-0.25 + full NHWC operand add, 3 per-channel mul */
} conv_case;

static void check_case(const conv_case *cc) {
    korch_pgraph *pg = dc_graph();
    int s = cc->spatial, r = s + 2;
    int64_t sp[3] = {9, 7, 5}, nchw[5] = {2, cc->C}, to_last[5], to_first[5];
    for (int d = 0; d < s; d++) nchw[2 + d] = sp[d];
    perms(r, to_last, to_first);
    int64_t nhwc[5] = {2};
    for (int d = 0; d < s; d++) nhwc[1 + d] = sp[d];
    nhwc[r - 1] = cc->C;
    int x = cc->src_t ? korch_pgraph_transpose(pg, dc_input(pg, r, nchw), to_last) : dc_input(pg, r, nhwc);
    korch_prim_linear p = {.op = KORCH_LINEAR_CONV, .spatial = s, .group = cc->group, .channels_last = true};
    int64_t w[5] = {cc->M, cc->C / cc->group};
    for (int d = 0; d < s; d++) {
        p.strides[d] = cc->stride;
        p.dilations[d] = 1;
        p.pads_begin[d] = p.pads_end[d] = cc->pad;
        w[2 + d] = cc->k;
    }
    int y = korch_pgraph_linear(pg, &p, x, dc_constant(pg, r, w, -0.5, 0.5));
    CHECK_MSG(y >= 0, "%s: linear: %s", cc->name, korch_last_error());
    if (y < 0) return;
    const korch_shape *ys = &pg->values[y].shape;
    int64_t chan[5];
    for (int j = 0; j < r; j++) chan[j] = j == r - 1 ? cc->M : 1;
    if (cc->post == 1 || cc->post == 2)
        y = dc_ew1(pg, KORCH_EW_RELU, dc_ew2(pg, KORCH_EW_ADD, y, dc_constant(pg, r, chan, -1, 1)), 0, 0);
    if (cc->post == 2) {
        y = dc_ew1(pg, KORCH_EW_AFFINE, y, 1.5f, -0.25f);
        y = dc_ew2(pg, KORCH_EW_ADD, y, dc_input(pg, ys->rank, ys->dims));
    }
    if (cc->post == 3) y = dc_ew2(pg, KORCH_EW_MUL, y, dc_constant(pg, r, chan, 0.5, 2));
    if (cc->dst_t) y = korch_pgraph_transpose(pg, y, to_first);
    dc_output(pg, y);
    korch_kernel_spec spec;
    dc_spec_all(pg, &spec);
    char reason[256] = "";
    CHECK_MSG(korch_backend_supports(KORCH_BACKEND_DNNL, &spec, reason, sizeof reason), "%s: refused: %s", cc->name,
              reason);
    dc_spec_free(&spec);
    CHECK_MSG(dc_check(pg, -1, 1, cc->name) > 0, "%s: no variant checked", cc->name);
    korch_pgraph_free(pg);
}

/* x (NCHW input) transposed to NHWC, a 1x1 channels-last convolution, then
 * whatever `tail` adds; expected refused with `needle` */
static void refused_case(int tail, const char *needle, const char *what) {
    korch_pgraph *pg = dc_graph();
    int64_t nchw[4] = {1, 8, 6, 6}, to_last[4], to_first[4];
    perms(4, to_last, to_first);
    int xin = dc_input(pg, 4, nchw);
    int x = tail == 3 ? korch_pgraph_slice(pg, xin, (int64_t[]){0, 0, 1, 0}, (int64_t[]){1, 1, 1, 1},
                                           &(korch_shape){.rank = 4, .dims = {1, 8, 5, 6}})
                      : korch_pgraph_transpose(pg, xin, to_last);
    if (tail == 3) x = korch_pgraph_transpose(pg, x, to_last);
    korch_prim_linear p = {.op = KORCH_LINEAR_CONV, .spatial = 2, .group = 1, .channels_last = true,
                           .strides = {1, 1}, .dilations = {1, 1}};
    int y = korch_pgraph_linear(pg, &p, x, dc_constant(pg, 4, (int64_t[]){8, 8, 1, 1}, -1, 1));
    switch (tail) {
    case 0: /* the transposed source also leaves the kernel */
        dc_output(pg, x);
        dc_output(pg, y);
        break;
    case 1: /* the transposed source is read by a post-op too */
        dc_output(pg, dc_ew2(pg, KORCH_EW_ADD, y, x));
        break;
    case 2: /* a transpose in the middle of the chain */
        dc_output(pg, dc_ew1(pg, KORCH_EW_RELU, korch_pgraph_transpose(pg, y, to_first), 0, 0));
        break;
    case 3: /* a slice before the transpose: not a pure permutation of an input */
        dc_output(pg, y);
        break;
    }
    dc_refused(pg, needle, what);
    korch_pgraph_free(pg);
}

int main(void) {
    const conv_case cases[] = {
        {"depthwise 3x3 + bias + ReLU, both transposes", 2, 16, 16, 16, 3, 1, 1, true, true, 1},
        {"1x1 16->8, both", 2, 16, 8, 1, 1, 1, 0, true, true, 0},
        {"3x3 stride 2 + bias, affine and a full operand, both", 2, 8, 12, 1, 3, 2, 1, true, true, 2},
        {"grouped 3x3 (4 groups), source only", 2, 8, 12, 4, 3, 1, 1, true, false, 1},
        {"3x3 + per-channel scale, destination only", 2, 6, 10, 1, 3, 1, 0, false, true, 3},
        {"depthwise, destination only with a full operand", 2, 12, 12, 12, 3, 1, 1, false, true, 2},
        {"1-D k3, both", 1, 8, 8, 1, 3, 1, 1, true, true, 1},
        {"3-D 1x1x1, both", 3, 4, 6, 1, 1, 1, 0, true, true, 3},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) check_case(&cases[i]);
    refused_case(0, "computes an operand", "transposed source also an output");
    refused_case(1, "computes an operand", "transposed source read by a post-op");
    refused_case(2, "a layout primitive cannot be fused", "transpose inside the chain");
    refused_case(3, "computes an operand", "slice then transpose");
    printf("max error %.2g of scale\n", dc_max_err);
    TEST_MAIN_END();
}
