/* Values stored in bfloat16 (docs/precision.md, "Values stored in
 * bfloat16"; src/backend/dnnl/dnnl_bf16.c) on oneDNN, against the
 * interpreter. The graph, lowered for bf16:
 *
 *     x -> [cast] -> conv 3x3 (+bias, channels-last) -> relu -> r -> [cast] -> rb -> conv 1x1 -> y
 *
 * Each of the four ways a oneDNN kernel meets the precision casts, every
 * variant, each kernel's output against the interpreter's value of the same
 * tensor (float32 outputs with the float32 tolerance, bfloat16 ones within
 * one bfloat16 step, since a different order of the float32 sums may round
 * to the neighbouring bfloat16):
 *   A  cast, conv, relu, cast  float32 source converted, bfloat16 destination
 *   B  conv, relu, cast        bfloat16 source, bfloat16 destination
 *   C  conv                    bfloat16 source, float32 destination
 *   D  cast, conv              float32 source converted (as before storage)
 * and the descriptions say which (the profile keys differ).
 * Also: a broken bfloat16 destination is caught (the check can fail).
 * Skipped (77) on a CPU without AVX512_BF16. */
#include "dnnl_check.h"
#include "backend/dnnl/dnnl_internal.h"
#include "core/cpu.h"
#include "core/half.h"

typedef struct net {
    korch_pgraph *pg;
    int x, w1, b1, h, r, w2, y; /* values */
    int xb, rb;                 /* the casts' outputs */
    int cast_x, conv1, add, relu, cast_r, conv2; /* nodes */
} net;

static net build(void) {
    net n;
    n.pg = dc_graph();
    korch_prim_linear c1 = {.op = KORCH_LINEAR_CONV, .spatial = 2, .group = 1, .channels_last = true,
                            .strides = {1, 1}, .dilations = {1, 1}, .pads_begin = {1, 1}, .pads_end = {1, 1}};
    korch_prim_linear c2 = c1;
    c2.pads_begin[0] = c2.pads_begin[1] = c2.pads_end[0] = c2.pads_end[1] = 0;
    int64_t xs[4] = {1, 9, 11, 32}, w1s[4] = {48, 32, 3, 3}, bs[1] = {48}, w2s[4] = {16, 48, 1, 1};
    n.x = dc_input(n.pg, 4, xs);
    n.w1 = dc_constant(n.pg, 4, w1s, -0.2, 0.2);
    n.b1 = dc_constant(n.pg, 1, bs, -0.5, 0.5);
    n.w2 = dc_constant(n.pg, 4, w2s, -0.2, 0.2);
    int c = korch_pgraph_linear(n.pg, &c1, n.x, n.w1);
    n.h = dc_ew2(n.pg, KORCH_EW_ADD, c, n.b1);
    n.r = dc_ew1(n.pg, KORCH_EW_RELU, n.h, 0, 0);
    n.y = korch_pgraph_linear(n.pg, &c2, n.r, n.w2);
    dc_output(n.pg, n.y);
    CHECK_OK(korch_pgraph_set_precision(n.pg, KORCH_PRECISION_BF16));
    n.conv1 = n.pg->values[c].producer;
    n.add = n.pg->values[n.h].producer;
    n.relu = n.pg->values[n.r].producer;
    n.conv2 = n.pg->values[n.y].producer;
    n.xb = n.pg->nodes[n.conv1].inputs[0];
    n.rb = n.pg->nodes[n.conv2].inputs[0];
    n.cast_x = n.pg->values[n.xb].producer;
    n.cast_r = n.pg->values[n.rb].producer;
    CHECK_MSG(n.cast_x >= 0 && korch_pnode_is_precision_cast(n.pg, n.cast_x) && n.cast_r >= 0 &&
                  korch_pnode_is_precision_cast(n.pg, n.cast_r),
              "the bf16 lowering did not store x and r in bfloat16");
    /* the interpreter's values of every tensor a kernel reads or writes */
    dc_output(n.pg, n.xb);
    dc_output(n.pg, n.r);
    dc_output(n.pg, n.rb);
    return n;
}

static double to_f64(korch_dtype t, const void *p, int64_t i) {
    return t == KORCH_DTYPE_BFLOAT16 ? korch_half_load(t, p, i) : ((const float *)p)[i];
}

/* got against want: float32 with dc's tolerance, bfloat16 within one step */
static int compare(const korch_tensor *want, const void *got, const char *what) {
    int64_t n = korch_tensor_numel(want);
    double scale = 1;
    for (int64_t i = 0; i < n; i++) scale = fmax(scale, fabs(to_f64(want->dtype, want->data, i)));
    int bad = 0;
    for (int64_t i = 0; i < n; i++) {
        double w = to_f64(want->dtype, want->data, i), g = to_f64(want->dtype, got, i);
        double tol = want->dtype == KORCH_DTYPE_BFLOAT16 ? 0x1p-7 * fabs(w) + 1e-6 * scale : 1e-4 * (scale + fabs(w));
        if (fabs(g - w) <= tol) continue;
        if (bad++ < 3) fprintf(stderr, "  %s: element %lld: got %.9g want %.9g\n", what, (long long)i, g, w);
    }
    return bad;
}

static int checked;
static char sigs[8][33]; /* profile keys of the kernels, in order */
static int n_sigs;

/* The kernel of `nodes` (inputs and output as listed) on every variant; its
 * description must contain `expect` and not `absent`. `corrupt`: the output
 * is damaged after the run (one bfloat16 element off by a lot) and must be
 * caught. */
static void kernel(const net *n, const char *what, const int *nodes, int n_nodes, const int *inputs, int n_inputs,
                   int output, const korch_tensor *vals, const char *expect, const char *absent, bool corrupt) {
    const korch_pgraph *pg = n->pg;
    korch_kernel_spec spec = {.pg = pg, .n_nodes = n_nodes, .nodes = nodes, .n_inputs = n_inputs, .inputs = inputs,
                              .n_outputs = 1, .outputs = &output};
    dn_desc d;
    char reason[256] = "";
    CHECK_MSG(dn_analyze(&spec, &d, reason, sizeof reason), "%s: refused: %s", what, reason);
    CHECK_MSG(strstr(d.text, expect) && (!absent || !strstr(d.text, absent)), "%s: description \"%s\" (expected %s)",
              what, d.text, expect);
    if (!corrupt && n_sigs < 8) snprintf(sigs[n_sigs++], sizeof sigs[0], "%s", d.sig);
    char variants[128];
    if (!korch_dnnl_variants(&spec, 2, variants, sizeof variants, reason, sizeof reason)) {
        CHECK_MSG(false, "%s: no variant: %s", what, reason);
        return;
    }
    void *bufs[4];
    for (int i = 0; i < n_inputs; i++) bufs[i] = vals[inputs[i]].data;
    const korch_tensor *want = &vals[output];
    size_t bytes = korch_tensor_bytes(want);
    void *got = malloc(bytes + 64);
    char *save = NULL, *list = strdup(variants);
    for (char *v = strtok_r(list, ";", &save); v; v = strtok_r(NULL, ";", &save)) {
        bool refused;
        korch_kernel *k = dc_build_variant(&spec, v, what, &refused);
        if (!k) continue;
        memset(got, 0xff, bytes);
        void *outs[1] = {got};
        CHECK_OK(k->run(k, bufs, outs));
        if (corrupt) korch_half_store(want->dtype, got, 7, korch_half_load(want->dtype, got, 7) + 4.0);
        char label[256];
        snprintf(label, sizeof label, "%s [%s, %s]", what, v, k->impl);
        int bad = compare(want, got, label);
        if (corrupt) CHECK_MSG(bad > 0, "%s: a damaged bfloat16 output passed the check", label);
        else CHECK_MSG(bad == 0, "%s: %d elements differ", label, bad);
        if (getenv("KORCH_TEST_VERBOSE")) printf("%-70s %s\n", label, d.text);
        checked++;
        korch_kernel_destroy(k);
    }
    free(list);
    free(got);
}

int main(void) {
    if (!korch_cpu_has_avx512_bf16()) TEST_SKIP("this CPU has no AVX512_BF16 (bf16 is refused here)");
    net n = build();
    korch_pgraph *pg = n.pg;
    korch_tensor x = {0}, outs[4] = {0};
    CHECK_OK(korch_tensor_alloc(&x, KORCH_DTYPE_FLOAT32, &pg->values[n.x].shape));
    for (int64_t i = 0; i < korch_tensor_numel(&x); i++) ((float *)x.data)[i] = (float)dc_uniform(-1, 1);
    CHECK_OK(korch_pgraph_interpret(pg, &x, outs));
    CHECK(outs[1].dtype == KORCH_DTYPE_BFLOAT16 && outs[3].dtype == KORCH_DTYPE_BFLOAT16);
    /* values by index: inputs, constants, the interpreted tensors */
    korch_tensor *vals = calloc((size_t)pg->n_values, sizeof *vals);
    for (int v = 0; v < pg->n_values; v++)
        if (pg->values[v].is_constant) vals[v] = pg->values[v].constant;
    vals[n.x] = x;
    vals[n.y] = outs[0];
    vals[n.xb] = outs[1];
    vals[n.r] = outs[2];
    vals[n.rb] = outs[3];

    int a_nodes[] = {n.cast_x, n.conv1, n.add, n.relu, n.cast_r};
    int a_in[] = {n.x, n.w1, n.b1};
    kernel(&n, "A: cast, conv, relu, cast", a_nodes, 5, a_in, 3, n.rb, vals, "->bf16", "src-bf16", false);
    int b_in[] = {n.xb, n.w1, n.b1};
    kernel(&n, "B: conv, relu, cast", a_nodes + 1, 4, b_in, 3, n.rb, vals, "src-bf16", NULL, false);
    kernel(&n, "B: conv, relu, cast (damaged)", a_nodes + 1, 4, b_in, 3, n.rb, vals, "->bf16", NULL, true);
    int b2_nodes[] = {n.conv1, n.add, n.relu};
    kernel(&n, "B': conv, relu", b2_nodes, 3, b_in, 3, n.r, vals, "src-bf16", "->bf16", false);
    int c_nodes[] = {n.conv2}, c_in[] = {n.rb, n.w2};
    kernel(&n, "C: conv", c_nodes, 1, c_in, 2, n.y, vals, "src-bf16", "->bf16", false);
    int d_nodes[] = {n.cast_r, n.conv2}, d_in[] = {n.r, n.w2};
    kernel(&n, "D: cast, conv", d_nodes, 2, d_in, 2, n.y, vals, " bf16", "src-bf16", false);
    /* A, B, B' of conv 1 differ in storage only, and C, D of conv 2: each its own profile key */
    CHECK(n_sigs == 5 && strcmp(sigs[0], sigs[1]) && strcmp(sigs[0], sigs[2]) && strcmp(sigs[1], sigs[2]) &&
          strcmp(sigs[3], sigs[4]));
    printf("%d kernel variants checked\n", checked);
    CHECK(checked >= 6);

    for (int i = 0; i < 4; i++) korch_tensor_free(&outs[i]);
    korch_tensor_free(&x);
    free(vals);
    korch_pgraph_free(pg);
    TEST_MAIN_END();
}
