/* The layout pass on hand-built graphs: the interpreter gives the same
 * outputs before and after (and so does the reference executor on the
 * rewritten graph exported to ONNX), every convolution becomes
 * channels-last, and
 * the transposes the pass adds cancel between convolutions (what remains is
 * counted). The tiny zoo models are checked by the dnnl/zoo_tiny suite. */
#include <string.h>

#include "fission/pgraph_onnx.h"
#include "frontend/frontend.h"
#include "frontend/onnx_load.h"
#include "ir/indexmap.h"
#include "ir/pgraph.h"
#include "ops/reference.h"
#include "relayout/relayout.h"
#include "test.h"

static uint64_t rng = 0x9e3779b97f4a7c15ull;
static float frand(void) {
    rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17;
    return (float)((rng >> 40) & 0xffff) / 32768.0f - 1.0f;
}

static int input(korch_pgraph *pg, int rank, const int64_t *dims) {
    korch_shape s = korch_shape_make(rank, dims);
    return korch_pgraph_add_input(pg, KORCH_DTYPE_FLOAT32, &s);
}

static void output(korch_pgraph *pg, int v) {
    korch_pgraph_add_output(pg, v);
}

static int constant(korch_pgraph *pg, int rank, const int64_t *dims) {
    korch_tensor t;
    korch_shape s = korch_shape_make(rank, dims);
    korch_tensor_alloc(&t, KORCH_DTYPE_FLOAT32, &s);
    for (int64_t i = 0; i < korch_tensor_numel(&t); i++) ((float *)t.data)[i] = 0.3f * frand();
    return korch_pgraph_add_constant(pg, &t);
}

static int ew1(korch_pgraph *pg, korch_ew_op op, int a) {
    return korch_pgraph_elementwise(pg, op, 1, &a, 0, 0, KORCH_DTYPE_UNDEFINED);
}
static int ew2(korch_pgraph *pg, korch_ew_op op, int a, int b) {
    int in[2] = {a, b};
    return korch_pgraph_elementwise(pg, op, 2, in, 0, 0, KORCH_DTYPE_UNDEFINED);
}

/* conv 3x3 pad 1 (+ per-channel bias) in NCHW */
static int conv(korch_pgraph *pg, int x, int64_t m, int64_t stride) {
    int64_t c = pg->values[x].shape.dims[1];
    korch_prim_linear p = {.op = KORCH_LINEAR_CONV, .spatial = 2, .group = 1, .strides = {stride, stride},
                           .dilations = {1, 1}, .pads_begin = {1, 1}, .pads_end = {1, 1}};
    int y = korch_pgraph_linear(pg, &p, x, constant(pg, 4, (int64_t[]){m, c, 3, 3}));
    return ew2(pg, KORCH_EW_ADD, y, constant(pg, 3, (int64_t[]){m, 1, 1}));
}

static int maxpool(korch_pgraph *pg, int x) {
    const korch_shape *s = &pg->values[x].shape;
    int64_t k[2] = {3, 3}, st[2] = {2, 2}, d[2] = {1, 1}, pb[2] = {1, 1};
    int64_t out[2] = {(s->dims[2] + 2 - 3) / 2 + 1, (s->dims[3] + 2 - 3) / 2 + 1};
    int w = korch_pgraph_window(pg, x, 2, k, st, d, pb, out, -INFINITY);
    return korch_pgraph_reduce(pg, KORCH_REDUCE_MAX, w, (1u << 4) | (1u << 5), false);
}

static int count_transposes(const korch_pgraph *pg, int *convs_last) {
    int n = 0;
    *convs_last = 0;
    for (int i = 0; i < pg->n_nodes; i++) {
        if (pg->nodes[i].dead) continue;
        int64_t perm[KORCH_MAX_RANK];
        if (pg->nodes[i].kind == KORCH_PRIM_LAYOUT && korch_layout_as_transpose(pg, i, perm) &&
            !korch_layout_as_reshape(pg, i))
            n++;
        if (pg->nodes[i].kind == KORCH_PRIM_LINEAR && pg->nodes[i].u.linear.channels_last) (*convs_last)++;
    }
    return n;
}

/* Interprets pg, runs the pass, interprets again, compares. */
static void check(korch_pgraph *pg, int want_convs, int max_transposes, const char *what) {
    korch_tensor *ins = calloc((size_t)pg->n_inputs + 1, sizeof *ins);
    korch_tensor before[4] = {0}, after[4] = {0};
    for (int i = 0; i < pg->n_inputs; i++) {
        korch_tensor_alloc(&ins[i], KORCH_DTYPE_FLOAT32, &pg->values[pg->inputs[i]].shape);
        for (int64_t e = 0; e < korch_tensor_numel(&ins[i]); e++) ((float *)ins[i].data)[e] = frand();
    }
    int n_out = pg->n_outputs;
    CHECK_OK(korch_pgraph_interpret(pg, ins, before));
    korch_layout_stats st;
    CHECK_OK(korch_layout_pass(pg, KORCH_LAYOUT_CHANNELS_LAST, &st));
    CHECK_OK(korch_pgraph_interpret(pg, ins, after));
    /* the ONNX export writes channels-last convolutions between transposes */
    uint8_t *bytes = NULL;
    size_t size = 0;
    korch_graph *g = NULL;
    korch_tensor exported[4] = {0};
    CHECK_OK(korch_pgraph_export_onnx_buffer(pg, &bytes, &size));
    if (bytes) {
        CHECK_OK(korch_onnx_load_buffer(bytes, size, NULL, &g));
        if (g) {
            CHECK_OK(korch_graph_validate(g));
            CHECK_OK(korch_graph_infer(g, NULL, 0));
            CHECK_OK(korch_reference_run(g, ins, exported));
        }
    }
    int convs = 0, transposes = count_transposes(pg, &convs);
    CHECK_MSG(convs == want_convs, "%s: %d channels-last convolutions, want %d", what, convs, want_convs);
    CHECK_MSG(transposes <= max_transposes, "%s: %d transposes left, want at most %d", what, transposes, max_transposes);
    for (int k = 0; k < n_out; k++) {
        CHECK(korch_shape_equal(&before[k].shape, &after[k].shape));
        int64_t n = korch_tensor_numel(&before[k]), bad = 0;
        const float *a = before[k].data, *b = after[k].data;
        for (int64_t i = 0; i < n && a && b; i++)
            if (!(fabsf(a[i] - b[i]) <= 1e-5f * (1.0f + fabsf(a[i])))) bad++;
        CHECK_MSG(bad == 0, "%s: output %d: %lld of %lld elements differ", what, k, (long long)bad, (long long)n);
        const float *e = exported[k].data;
        int64_t bad_export = e ? 0 : n;
        for (int64_t i = 0; i < n && a && e; i++)
            if (!(fabsf(a[i] - e[i]) <= 1e-4f * (1.0f + fabsf(a[i])))) bad_export++;
        CHECK_MSG(bad_export == 0, "%s: exported ONNX output %d: %lld of %lld elements differ", what, k,
                  (long long)bad_export, (long long)n);
        korch_tensor_free(&exported[k]);
        korch_tensor_free(&before[k]);
        korch_tensor_free(&after[k]);
    }
    printf("%-44s %d convs, %d transposes left; moved past %d ew, %d reduce, %d layout; %d cancelled, %d collapsed\n",
           what, convs, transposes, st.sunk_elementwise, st.sunk_reduce, st.sunk_layout, st.cancelled, st.collapsed);
    for (int i = 0; i < pg->n_inputs; i++) korch_tensor_free(&ins[i]);
    free(ins);
    korch_graph_free(g);
    free(bytes);
}

static korch_pgraph *graph(void) {
    korch_pgraph *pg = NULL;
    korch_pgraph_create(NULL, &pg);
    return pg;
}

/* conv-bias-relu, maxpool, residual block, global average pool, classifier */
static void test_resnet_like(void) {
    korch_pgraph *pg = graph();
    int x = input(pg, 4, (int64_t[]){1, 3, 16, 16});
    int y = ew1(pg, KORCH_EW_RELU, conv(pg, x, 8, 2));
    y = maxpool(pg, y);
    int r = ew1(pg, KORCH_EW_RELU, conv(pg, y, 8, 1));
    y = ew1(pg, KORCH_EW_RELU, ew2(pg, KORCH_EW_ADD, conv(pg, r, 8, 1), y));
    int pooled = korch_pgraph_reduce(pg, KORCH_REDUCE_MEAN, y, (1u << 2) | (1u << 3), true);
    korch_shape flat = korch_shape_make(2, (int64_t[]){1, 8});
    korch_prim_linear mm = {.op = KORCH_LINEAR_MATMUL};
    y = korch_pgraph_linear(pg, &mm, korch_pgraph_reshape(pg, pooled, &flat), constant(pg, 2, (int64_t[]){8, 5}));
    output(pg, y);
    /* only the input image is transposed */
    check(pg, 3, 1, "resnet-like");
    korch_pgraph_free(pg);
}

/* channel concat of two branches, a constant pad, a spatial reduction
 * without keepdims, and a convolution output that is a graph output */
static void test_concat_pad_reduce(void) {
    korch_pgraph *pg = graph();
    int x = input(pg, 4, (int64_t[]){2, 4, 9, 7});
    int a = ew1(pg, KORCH_EW_TANH, conv(pg, x, 6, 1)), b = ew1(pg, KORCH_EW_SIGMOID, conv(pg, x, 5, 1));
    int c = korch_pgraph_concat(pg, 2, (int[]){a, b}, 1);
    int p = korch_pgraph_pad(pg, c, (int64_t[]){0, 0, 1, 2}, (int64_t[]){0, 0, 2, 1}, KORCH_PAD_CONSTANT, 0.5);
    int y = conv(pg, p, 3, 2);
    output(pg, y);
    output(pg, korch_pgraph_reduce(pg, KORCH_REDUCE_SUM, y, (1u << 2) | (1u << 3), false));
    /* the input; the conv output as an output; none elsewhere */
    check(pg, 3, 2, "concat + pad + reduce, two outputs");
    korch_pgraph_free(pg);
}

/* an elementwise operand that stays channels-first (a graph input) stops
 * the transpose without breaking anything */
static void test_foreign_operand(void) {
    korch_pgraph *pg = graph();
    int x = input(pg, 4, (int64_t[]){1, 4, 5, 5}), z = input(pg, 4, (int64_t[]){1, 6, 5, 5});
    int y = ew2(pg, KORCH_EW_MUL, conv(pg, x, 6, 1), z);
    output(pg, conv(pg, ew1(pg, KORCH_EW_RELU, y), 2, 1));
    check(pg, 2, 4, "channels-first operand from the graph");
    korch_pgraph_free(pg);
}

/* (N, HW, C) tokens -> transpose -> (N, C, H, W) -> depthwise conv ->
 * flatten -> transpose back (SegFormer's Mix-FFN): only reshapes remain */
static void test_tokens(void) {
    korch_pgraph *pg = graph();
    int t = input(pg, 3, (int64_t[]){1, 30, 8});
    int x = korch_pgraph_transpose(pg, t, (int64_t[]){0, 2, 1});
    korch_shape img = korch_shape_make(4, (int64_t[]){1, 8, 5, 6}), flat = korch_shape_make(3, (int64_t[]){1, 8, 30});
    x = korch_pgraph_reshape(pg, x, &img);
    korch_prim_linear p = {.op = KORCH_LINEAR_CONV, .spatial = 2, .group = 8, .strides = {1, 1}, .dilations = {1, 1},
                           .pads_begin = {1, 1}, .pads_end = {1, 1}};
    int y = korch_pgraph_linear(pg, &p, x, constant(pg, 4, (int64_t[]){8, 1, 3, 3}));
    y = korch_pgraph_transpose(pg, korch_pgraph_reshape(pg, y, &flat), (int64_t[]){0, 2, 1});
    output(pg, ew1(pg, KORCH_EW_RELU, y));
    check(pg, 1, 0, "tokens -> depthwise conv -> tokens");
    korch_pgraph_free(pg);
}

int main(void) {
    test_resnet_like();
    test_concat_pad_reduce();
    test_foreign_operand();
    test_tokens();
    TEST_MAIN_END();
}
