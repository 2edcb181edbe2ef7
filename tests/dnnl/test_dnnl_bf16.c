/* bf16 linear primitives (`korch optimize --precision bf16`, docs/precision.md)
 * on oneDNN against the interpreter, which rounds both operands to bfloat16
 * and sums in float32 exactly as the kernels must: random convolutions
 * (channels-first and -last, groups, depthwise, strides, dilations, pads),
 * transposed convolutions, matmuls (constant weights, run-time weights,
 * batches) and fused post-op chains, every variant, with the float32 test
 * tolerance. Also:
 *  - the kernels really are bf16 ones (oneDNN names an avx512_core_bf16
 *    implementation);
 *  - the check can fail: a float32 kernel compared with the bf16
 *    interpretation of the same graph is caught;
 *  - the mark is part of the structural hash and of the oneDNN profile key,
 *    and leaves float32 graphs' hashes as they were.
 * Skipped (77) on a CPU without AVX512_BF16, where --precision bf16 is refused. */
#include "dnnl_check.h"
#include "backend/dnnl/dnnl_internal.h"
#include "core/cpu.h"

static int bf16_impls, ref_impls, all_impls;
static const char *no_schedule = ""; /* the backend's default variant */

/* dc_check, counting oneDNN implementations that are bf16 ones */
static int check_bf16(korch_pgraph *pg, const char *what) {
    CHECK_OK(korch_pgraph_set_precision(pg, KORCH_PRECISION_BF16));
    CHECK_MSG(korch_pgraph_precision(pg) == KORCH_PRECISION_BF16, "%s: not marked", what);
    int checked = dc_check(pg, -1, 1, what);
    korch_kernel_spec spec;
    dc_spec_all(pg, &spec);
    korch_kernel *k = NULL;
    korch_profile_options o = {.threads = 2};
    if (korch_backend_build(KORCH_BACKEND_DNNL, &spec, &no_schedule, 1, &o, &k) == KORCH_OK) {
        all_impls++;
        bf16_impls += strstr(k->impl, "bf16") != NULL;
        ref_impls += strstr(k->impl, "ref:") != NULL;
        if (getenv("KORCH_TEST_VERBOSE")) printf("%-60s %s\n", what, k->impl);
        korch_kernel_destroy(k);
    } else {
        korch_error_clear();
    }
    dc_spec_free(&spec);
    return checked;
}

static int conv_case(bool transpose, bool channels_last, bool post_ops) {
    korch_pgraph *pg = dc_graph();
    korch_prim_linear p = {.op = transpose ? KORCH_LINEAR_CONV_TRANSPOSE : KORCH_LINEAR_CONV, .spatial = 2,
                           .channels_last = channels_last};
    bool depthwise = !transpose && dc_int(0, 3) == 0;
    int64_t G = depthwise ? dc_int(4, 32) : (dc_int(0, 3) == 0 ? 2 : 1);
    int64_t Cg = depthwise ? 1 : dc_int(2, 40), Mg = depthwise ? 1 : dc_int(2, 40);
    p.group = G;
    int64_t N = dc_int(1, 2), C = Cg * G, M = Mg * G, H = dc_int(5, 20), W = dc_int(5, 20);
    int64_t k = dc_int(1, 3);
    for (int d = 0; d < 2; d++) {
        p.strides[d] = dc_int(1, 2);
        p.dilations[d] = transpose || dc_int(0, 3) ? 1 : 2;
        p.pads_begin[d] = p.pads_end[d] = dc_int(0, 1);
    }
    int64_t xs[4] = {N, C, H, W}, ws[4] = {transpose ? C : M, transpose ? Mg : Cg, k, k};
    if (channels_last) xs[1] = H, xs[2] = W, xs[3] = C;
    int x = dc_input(pg, 4, xs);
    bool const_w = dc_int(0, 3) != 0;
    int w = const_w ? dc_constant(pg, 4, ws, -1, 1) : dc_input(pg, 4, ws);
    int y = korch_pgraph_linear(pg, &p, x, w);
    CHECK_MSG(y >= 0, "linear: %s", korch_last_error());
    int checked = 0;
    if (y >= 0) {
        if (post_ops) { /* bias (per channel), ReLU: a fused epilogue in float32 */
            const korch_shape *ys = &pg->values[y].shape;
            int64_t bias[4] = {1, 1, 1, 1};
            bias[channels_last ? 3 : 1] = ys->dims[channels_last ? 3 : 1];
            y = dc_ew1(pg, KORCH_EW_RELU, dc_ew2(pg, KORCH_EW_ADD, y, dc_constant(pg, 4, bias, -1, 1)), 0, 0);
        }
        dc_output(pg, y);
        char what[200];
        snprintf(what, sizeof what, "bf16 %s %s N%lld C%lld M%lld g%lld %lldx%lld k%lld s%lld d%lld p%lld%s%s",
                 transpose ? "deconv" : "conv", channels_last ? "nhwc" : "nchw", (long long)N, (long long)C,
                 (long long)M, (long long)G, (long long)H, (long long)W, (long long)k, (long long)p.strides[0],
                 (long long)p.dilations[0], (long long)p.pads_begin[0], const_w ? " const-w" : "",
                 post_ops ? " +bias+relu" : "");
        checked = check_bf16(pg, what);
    }
    korch_pgraph_free(pg);
    return checked;
}

static int matmul_case(int64_t batch, int64_t M, int64_t K, int64_t N, bool const_w) {
    korch_pgraph *pg = dc_graph();
    int64_t a[3] = {batch, M, K}, b[3] = {batch, K, N};
    int x = dc_input(pg, 3, a);
    int w = const_w ? dc_constant(pg, 2, b + 1, -1, 1) : dc_input(pg, 3, b);
    korch_prim_linear p = {.op = KORCH_LINEAR_MATMUL};
    int y = korch_pgraph_linear(pg, &p, x, w);
    dc_output(pg, y);
    char what[160];
    snprintf(what, sizeof what, "bf16 matmul %lldx%lldx%lldx%lld%s", (long long)batch, (long long)M, (long long)K,
             (long long)N, const_w ? " const-w" : "");
    int checked = check_bf16(pg, what);
    korch_pgraph_free(pg);
    return checked;
}

/* The check can fail: the float32 kernel of a matmul against the bf16
 * interpretation differs by about 2^-9 relative, 20 times the tolerance. */
static void negative_control(void) {
    korch_pgraph *pg = dc_graph();
    int64_t a[2] = {32, 256}, b[2] = {256, 48};
    int x = dc_input(pg, 2, a), w = dc_constant(pg, 2, b, -1, 1);
    korch_prim_linear p = {.op = KORCH_LINEAR_MATMUL};
    dc_output(pg, korch_pgraph_linear(pg, &p, x, w));
    korch_tensor in = {0}, want = {0};
    CHECK_OK(korch_tensor_alloc(&in, KORCH_DTYPE_FLOAT32, &pg->values[x].shape));
    float *px = in.data;
    for (int64_t i = 0; i < korch_tensor_numel(&in); i++) px[i] = (float)dc_uniform(-1, 1);
    CHECK_OK(korch_pgraph_set_precision(pg, KORCH_PRECISION_BF16));
    CHECK_OK(korch_pgraph_interpret(pg, &in, &want));
    CHECK_OK(korch_pgraph_set_precision(pg, KORCH_PRECISION_FP32)); /* the kernel: float32 */
    korch_kernel_spec spec;
    dc_spec_all(pg, &spec);
    korch_kernel *k = NULL;
    korch_profile_options o = {.threads = 2};
    CHECK_OK(korch_backend_build(KORCH_BACKEND_DNNL, &spec, &no_schedule, 1, &o, &k));
    float got[32 * 48];
    void *ins[2] = {in.data, pg->values[w].constant.data}, *outs[1] = {got};
    if (k) {
        CHECK_OK(k->run(k, ins, outs));
        int bad = dc_compare(&want, got, "negative control (float32 kernel, bf16 reference; differences expected)");
        CHECK_MSG(bad > 0, "a float32 kernel passed the bf16 check: the check cannot tell them apart");
        korch_kernel_destroy(k);
    }
    dc_spec_free(&spec);
    korch_tensor_free(&in);
    korch_tensor_free(&want);
    korch_pgraph_free(pg);
}

/* dnnl_quirks.c, 6 (korch-difftest --precision bf16 seed 289): 1x1 bf16
 * transposed convolutions with an odd number of input channels in plain
 * layout; every variant must match the bf16 interpretation or be refused. */
static int odd_deconv(int ic, int oc, bool channels_last) {
    korch_pgraph *pg = dc_graph();
    korch_prim_linear p = {.op = KORCH_LINEAR_CONV_TRANSPOSE, .spatial = 2, .group = 1, .strides = {1, 1},
                           .dilations = {1, 1}, .channels_last = channels_last};
    int64_t xs[4] = {1, ic, 12, 10}, ws[4] = {ic, oc, 1, 1};
    if (channels_last) xs[1] = 12, xs[2] = 10, xs[3] = ic;
    dc_output(pg, korch_pgraph_linear(pg, &p, dc_input(pg, 4, xs), dc_constant(pg, 4, ws, -1, 1)));
    char what[96];
    snprintf(what, sizeof what, "bf16 deconv 1x1 %d->%d %s const-w", ic, oc, channels_last ? "nhwc" : "nchw");
    int checked = check_bf16(pg, what);
    korch_pgraph_free(pg);
    return checked;
}

/* The mark changes the structural hash and the oneDNN key; float32 graphs
 * hash as before (no field is fed for an unset mark). */
static void keys(void) {
    korch_pgraph *pg = dc_graph();
    int64_t a[2] = {8, 16}, b[2] = {16, 4};
    korch_prim_linear p = {.op = KORCH_LINEAR_MATMUL};
    dc_output(pg, korch_pgraph_linear(pg, &p, dc_input(pg, 2, a), dc_constant(pg, 2, b, -1, 1)));
    uint64_t h32 = korch_pgraph_hash(pg);
    korch_kernel_spec spec;
    dc_spec_all(pg, &spec);
    dn_desc d32, d16;
    char reason[256];
    CHECK(dn_analyze(&spec, &d32, reason, sizeof reason));
    CHECK_OK(korch_pgraph_set_precision(pg, KORCH_PRECISION_BF16));
    uint64_t h16 = korch_pgraph_hash(pg);
    /* the input, read by the bf16 matmul alone, is now rounded by a
     * precision cast: the whole graph is that cast and the matmul */
    korch_kernel_spec spec16;
    dc_spec_all(pg, &spec16);
    CHECK_MSG(spec16.n_nodes == 2, "%d nodes after the bf16 lowering, expected the cast and the matmul", spec16.n_nodes);
    CHECK_MSG(dn_analyze(&spec16, &d16, reason, sizeof reason), "%s", reason);
    dc_spec_free(&spec16);
    CHECK_MSG(h16 != h32, "bf16 and float32 graphs hash alike");
    CHECK_MSG(strcmp(d16.sig, d32.sig) != 0, "bf16 and float32 kernels share the profile key %s", d16.sig);
    CHECK_MSG(strstr(d16.text, "bf16") && !strstr(d32.text, "bf16"), "descriptions: \"%s\" / \"%s\"", d16.text,
              d32.text);
    CHECK_OK(korch_pgraph_set_precision(pg, KORCH_PRECISION_FP32));
    CHECK_MSG(korch_pgraph_hash(pg) == h32, "clearing the mark does not restore the float32 hash");
    dc_spec_free(&spec);
    korch_pgraph_free(pg);
}

int main(void) {
    if (!korch_cpu_has_avx512_bf16()) TEST_SKIP("this CPU has no AVX512_BF16 (bf16 is refused here)");
    keys();
    negative_control();
    int checked = 0;
    for (int i = 0; i < 24; i++) checked += conv_case(false, i % 2 == 1, i % 3 == 0);
    /* (a deconvolution never fuses post-ops: dnnl_quirks.c, 4) */
    for (int i = 0; i < 8; i++) checked += conv_case(true, i % 2 == 1, false);
    checked += matmul_case(1, 64, 256, 96, true);
    checked += matmul_case(1, 128, 768, 512, true);
    checked += matmul_case(4, 50, 64, 50, false); /* attention's products: both operands converted per run */
    checked += matmul_case(2, 7, 33, 9, false);
    checked += matmul_case(1, 1, 300, 17, true);
    int odd[] = {1, 3, 5, 17};
    for (int i = 0; i < 4; i++) checked += odd_deconv(odd[i], i % 2 ? 16 : 6, true);
    checked += odd_deconv(3, 6, false);
    printf("%d kernel variants checked; of %d default kernels, %d are named bf16 implementations and %d oneDNN's "
           "reference one\n",
           checked, all_impls, bf16_impls, ref_impls);
    CHECK_MSG(checked >= 37, "only %d variants checked", checked);
    /* every variant matched the bf16 interpretation above, so each kernel
     * computed on bf16 operands (the negative control shows a float32 one
     * does not pass); oneDNN names its brgemm, depthwise and 1x1 kernels
     * "...avx512_core_bf16" and its im2col one "gemm:jit", so at least the
     * matmuls and channels-last convolutions must be named ones, and no
     * default kernel may be the slow reference */
    CHECK_MSG(bf16_impls * 3 >= all_impls, "only %d of %d kernels are named bf16 implementations", bf16_impls,
              all_impls);
    CHECK_MSG(ref_impls == 0, "%d default kernels are oneDNN's reference implementation", ref_impls);
    TEST_MAIN_END();
}
