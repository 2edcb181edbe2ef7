/* float16 / bfloat16 in generated kernels (docs/precision.md): CAST to and
 * from the 16-bit formats, fused with float work, bit for bit against the
 * primitive interpreter (core/half.c) on the cases rounding gets wrong: ties
 * to even, the overflow threshold, subnormals, signed zeros, infinities and
 * NaN; and every float16 / bfloat16 bit pattern as an input. */
#include "cgen_check.h"
#include "core/half.h"

/* Runs pg as one kernel under every schedule with inputs `in` and compares
 * each output with the interpreter's bit for bit (NaN by class). */
static void check_exact(const korch_pgraph *pg, korch_tensor *in, const char *what) {
    korch_tensor want[4] = {0};
    CHECK_OK(korch_pgraph_interpret(pg, in, want));
    korch_kernel_spec spec;
    cc_spec_all(pg, &spec);
    void *inptr[8] = {0}, *outptr[4] = {0};
    for (int i = 0; i < spec.n_inputs; i++) {
        const korch_pvalue *v = &pg->values[spec.inputs[i]];
        inptr[i] = v->is_constant ? v->constant.data : in[v->graph_input].data;
    }
    for (int s = 0; s < CC_N_SCHED; s++) {
        korch_kernel *k = NULL;
        korch_profile_options opt = {.threads = 2};
        const char *sched = cc_schedules[s];
        korch_status bs = korch_backend_build(KORCH_BACKEND_CGEN, &spec, &sched, 1, &opt, &k);
        CHECK_MSG(bs == KORCH_OK, "%s [%s]: build: %s", what, sched, korch_last_error());
        if (bs != KORCH_OK) continue;
        for (int o = 0; o < pg->n_outputs; o++) {
            outptr[o] = malloc(korch_tensor_bytes(&want[o]) + 1);
            memset(outptr[o], 0xA5, korch_tensor_bytes(&want[o]));
        }
        CHECK_OK(k->run(k, inptr, outptr));
        for (int o = 0; o < pg->n_outputs; o++) {
            korch_tensor got = want[o];
            got.data = outptr[o];
            int bad = 0;
            size_t w = korch_dtype_size(want[o].dtype);
            for (int64_t i = 0; i < korch_tensor_numel(&want[o]); i++) {
                double a = korch_tensor_get_f64(&got, i), b = korch_tensor_get_f64(&want[o], i);
                bool same = (isnan(a) && isnan(b)) ||
                            memcmp((char *)got.data + i * w, (char *)want[o].data + i * w, w) == 0;
                if (!same && bad++ < 3)
                    fprintf(stderr, "  %s [%s] output %d element %lld: got %.9g want %.9g\n", what, sched, o,
                            (long long)i, a, b);
            }
            CHECK_MSG(bad == 0, "%s [%s] output %d: %d elements differ", what, sched, o, bad);
            free(outptr[o]);
        }
        korch_kernel_destroy(k);
    }
    cc_spec_free(&spec);
    for (int o = 0; o < pg->n_outputs; o++) korch_tensor_free(&want[o]);
}

static float f32_bits(uint32_t x) {
    float f;
    memcpy(&f, &x, sizeof f);
    return f;
}

/* float32 -> float16 and bfloat16, fused with a multiply, on the hard cases */
static void test_narrow(void) {
    enum { N = 4096 };
    korch_pgraph *pg = cc_graph();
    int64_t dims[1] = {N};
    int x = cc_input(pg, KORCH_DTYPE_FLOAT32, 1, dims);
    int h = korch_pgraph_elementwise(pg, KORCH_EW_CAST, 1, &x, 0, 0, KORCH_DTYPE_FLOAT16);
    int b = korch_pgraph_elementwise(pg, KORCH_EW_CAST, 1, &x, 0, 0, KORCH_DTYPE_BFLOAT16);
    int two = cc_ew2(pg, KORCH_EW_ADD, x, x); /* float work rounded into a half in the same kernel */
    int h2 = korch_pgraph_elementwise(pg, KORCH_EW_CAST, 1, &two, 0, 0, KORCH_DTYPE_FLOAT16);
    cc_output(pg, h);
    cc_output(pg, b);
    cc_output(pg, h2);
    korch_tensor in;
    korch_shape s = korch_shape_make(1, dims);
    CHECK_OK(korch_tensor_alloc(&in, KORCH_DTYPE_FLOAT32, &s));
    float *p = in.data;
    const float special[] = {0.0f, -0.0f, 1.0f + 0x1p-11f, 1.0f + 3 * 0x1p-11f, 65504.0f, 65519.0f, 65520.0f,
                             -65520.0f, 0x1p-24f, 0x1p-25f, 3 * 0x1p-25f, 0x1.ffcp-15f, 1023.5f * 0x1p-24f,
                             INFINITY, -INFINITY, NAN, 1e-30f, f32_bits(0x7f7f7fff), f32_bits(0x7f7f8000),
                             f32_bits(0x00008000), f32_bits(0x00018000), 1.0f + 0x1p-8f, 1.0f + 3 * 0x1p-8f};
    int ns = (int)(sizeof special / sizeof special[0]);
    for (int i = 0; i < N; i++) {
        if (i < ns) p[i] = special[i];
        else if (i < 2048) p[i] = f32_bits((uint32_t)cc_next()); /* any pattern, every binade */
        else { /* exact ties and near-ties of both formats */
            uint32_t base = (uint32_t)cc_next() & 0x7fff0000u;
            uint32_t low = (i & 3) == 0 ? 0x8000u : (i & 3) == 1 ? 0x1000u : (uint32_t)(cc_next() & 0xffffu);
            p[i] = f32_bits(base | low | ((uint32_t)(i & 4) << 29));
        }
    }
    check_exact(pg, &in, "float32 -> float16/bfloat16");
    korch_tensor_free(&in);
    korch_pgraph_free(pg);
}

/* every float16 / bfloat16 pattern widened, negated and rounded back */
static void test_widen(korch_dtype dt) {
    korch_pgraph *pg = cc_graph();
    int64_t dims[2] = {256, 256};
    int x = cc_input(pg, dt, 2, dims);
    int f = korch_pgraph_elementwise(pg, KORCH_EW_CAST, 1, &x, 0, 0, KORCH_DTYPE_FLOAT32);
    int n = cc_ew1(pg, KORCH_EW_NEG, f);
    int y = korch_pgraph_elementwise(pg, KORCH_EW_CAST, 1, &n, 0, 0, dt);
    cc_output(pg, f);
    cc_output(pg, y);
    korch_tensor in;
    korch_shape s = korch_shape_make(2, dims);
    CHECK_OK(korch_tensor_alloc(&in, dt, &s));
    for (uint32_t i = 0; i < 65536; i++) ((uint16_t *)in.data)[i] = (uint16_t)i;
    check_exact(pg, &in, dt == KORCH_DTYPE_FLOAT16 ? "float16 round trip" : "bfloat16 round trip");
    korch_tensor_free(&in);
    korch_pgraph_free(pg);
}

int main(void) {
    test_narrow();
    test_widen(KORCH_DTYPE_FLOAT16);
    test_widen(KORCH_DTYPE_BFLOAT16);
    TEST_MAIN_END();
}
