/* Streaming (non-temporal) stores and the stream knob: kernels whose outputs
 * are written with _mm512_stream_ps agree with the interpreter, on aligned
 * and unaligned output buffers, fused (softmax rows) and unfused, 1-D and
 * N-D, one and several outputs; the knob's text form is strict. The size
 * threshold is lowered (korch_profile_options.cg_stream_min_bytes, the
 * CLI's KORCH_CG_STREAM_MIN_BYTES) so small tensors take
 * the streaming path; the generated source is checked to really contain it. */
#include <stdlib.h>
#include <string.h>

#include "backend/cgen/cgen.h"
#include "cgen_check.h"

static const char *const stream_schedules[] = {
    "p0.g0.v0.u1.t0.o0.r0.s1", /* serial: no parallel region, fence at the end */
    "p1.g0.v1.u1.t0.o0.r1.s1",
    "p2.g4.v3.u1.t0.o0.r3.s1", /* chunked worksharing */
    "p3.g0.v2.u2.t0.o0.r0.s1", /* deep collapse, capped below the lane loop */
    "p1.g0.v1.u1.t8.o1.r1.s1", /* tiled: streaming does not apply, plain stores */
};
#define N_STREAM ((int)(sizeof stream_schedules / sizeof stream_schedules[0]))

static bool source_streams(const korch_pgraph *pg, const char *sched) {
    korch_kernel_spec spec;
    cc_spec_all(pg, &spec);
    char *src = NULL;
    korch_profile_options opt = {.cg_stream_min_bytes = cc_stream_min_bytes};
    CHECK_OK(korch_cgen_source(&spec, sched, &opt, &src));
    bool yes = src && strstr(src, "cg_stream16(&out") && strstr(src, "cg_stream_fence();");
    free(src);
    cc_spec_free(&spec);
    return yes;
}

/* relu(x * 1.5 - 0.25) * 0.5 + 2 */
static int chain(korch_pgraph *pg, int x) {
    int y = cc_ew2(pg, KORCH_EW_SUB, cc_ew2(pg, KORCH_EW_MUL, x, korch_pgraph_add_scalar(pg, 1.5f)),
                korch_pgraph_add_scalar(pg, 0.25f));
    return cc_ew2(pg, KORCH_EW_ADD, cc_ew2(pg, KORCH_EW_MUL, cc_ew1(pg, KORCH_EW_RELU, y), korch_pgraph_add_scalar(pg, 0.5f)),
               korch_pgraph_add_scalar(pg, 2.0f));
}

static void test_shapes(void) {
    struct {
        int rank;
        int64_t d[4];
        bool streams; /* last dim a multiple of 16 */
    } cases[] = {{1, {4096}, true}, {1, {4100}, false}, {3, {3, 5, 64}, true}, {2, {7, 48}, true}, {4, {2, 3, 4, 32}, true}};
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        korch_pgraph *pg = cc_graph();
        int x = cc_input(pg, KORCH_DTYPE_FLOAT32, cases[c].rank, cases[c].d);
        cc_output(pg, chain(pg, x));
        char what[64];
        snprintf(what, sizeof what, "chain case %zu", c);
        cc_check(pg, stream_schedules, N_STREAM, -2, 2, what);
        CHECK_MSG(source_streams(pg, "p1.g0.v1.u1.t0.o0.r1.s1") == cases[c].streams, "%s: streaming %s", what,
                  cases[c].streams ? "missing" : "unexpected");
        CHECK_MSG(!source_streams(pg, "p1.g0.v1.u1.t0.o0.r1"), "%s: streams with the knob off", what);
        CHECK_MSG(!source_streams(pg, "p1.g0.v1.u1.t8.o1.r1.s1"), "%s: streams under a tiled schedule", what);
        korch_pgraph_free(pg);
    }
}

static void test_fused(void) {
    /* softmax rows: max, exp, sum passes, streamed output pass, row prefetch */
    int64_t d[2] = {9, 256};
    korch_pgraph *pg = cc_graph();
    int x = cc_input(pg, KORCH_DTYPE_FLOAT32, 2, d);
    int m = korch_pgraph_reduce(pg, KORCH_REDUCE_MAX, x, 2u, true);
    int e = cc_ew1(pg, KORCH_EW_EXP, cc_ew2(pg, KORCH_EW_SUB, x, m));
    int s = korch_pgraph_reduce(pg, KORCH_REDUCE_SUM, e, 2u, true);
    cc_output(pg, cc_ew2(pg, KORCH_EW_DIV, e, s));
    cc_check(pg, stream_schedules, N_STREAM, -6, 6, "softmax rows");
    CHECK(source_streams(pg, "p1.g0.v1.u1.t0.o0.r1.s1"));
    korch_pgraph_free(pg);

    /* two outputs of one kernel: x - mean (streamed) and the mean itself */
    int64_t d3[3] = {4, 6, 32};
    pg = cc_graph();
    x = cc_input(pg, KORCH_DTYPE_FLOAT32, 3, d3);
    int mean = korch_pgraph_reduce(pg, KORCH_REDUCE_MEAN, x, 4u, true);
    cc_output(pg, cc_ew2(pg, KORCH_EW_SUB, x, mean));
    cc_output(pg, cc_ew1(pg, KORCH_EW_EXP, x));
    cc_output(pg, mean);
    cc_check(pg, stream_schedules, N_STREAM, -3, 3, "centred rows, two streamed outputs");
    korch_pgraph_free(pg);
}

/* cc_check's outputs come from calloc; here the buffer is 64-byte aligned
 * (the _mm512_stream_ps path), 32-byte aligned (256-bit streams), 16-byte
 * aligned as malloc's and NumPy's large buffers are (128-bit streams), and
 * off by 4 bytes (plain stores); nothing outside the output is written. */
static void test_alignment(void) {
    int64_t n = 8192;
    korch_pgraph *pg = cc_graph();
    int x = cc_input(pg, KORCH_DTYPE_FLOAT32, 1, &n);
    cc_output(pg, chain(pg, x));
    korch_tensor in = {0}, want = {0};
    korch_tensor_alloc(&in, KORCH_DTYPE_FLOAT32, &pg->values[pg->inputs[0]].shape);
    cc_fill(&in, -2, 2);
    CHECK_OK(korch_pgraph_interpret(pg, &in, &want));
    korch_kernel_spec spec;
    cc_spec_all(pg, &spec);
    const char *sched = "p1.g0.v1.u1.t0.o0.r0.s1";
    korch_kernel *k = NULL;
    korch_profile_options opt = {.threads = 2, .cg_stream_min_bytes = cc_stream_min_bytes};
    CHECK_OK(korch_backend_build(KORCH_BACKEND_CGEN, &spec, &sched, 1, &opt, &k));
    float *buf = aligned_alloc(64, (size_t)(n + 16) * sizeof(float));
    static const int shifts[] = {0, 8, 4, 1};
    for (int si = 0; si < 4 && k && buf; si++) {
        int shift = shifts[si];
        memset(buf, 0xA5, (size_t)(n + 16) * sizeof(float));
        /* the spec's inputs: the graph input, then the chain's scalar constants */
        void *inptr[16], *outptr[1] = {buf + shift};
        for (int i = 0; i < spec.n_inputs && i < 16; i++) {
            const korch_pvalue *v = &pg->values[spec.inputs[i]];
            inptr[i] = v->is_constant ? v->constant.data : in.data;
        }
        CHECK(spec.n_inputs <= 16);
        CHECK_OK(k->run(k, inptr, outptr));
        CHECK_MSG(cc_compare(&want, buf + shift, shift ? "unaligned output" : "aligned output") == 0,
                  "streamed chain, output shifted by %d floats", shift);
        bool guard = true;
        for (int64_t i = 0; i < n + 16; i++) {
            uint32_t bits;
            memcpy(&bits, &buf[i], sizeof bits);
            if ((i < shift || i >= n + shift) && bits != 0xA5A5A5A5u) guard = false;
        }
        CHECK_MSG(guard, "streamed chain, output shifted by %d floats: a float outside the output was written", shift);
    }
    free(buf);
    korch_kernel_destroy(k);
    cc_spec_free(&spec);
    korch_tensor_free(&in);
    korch_tensor_free(&want);
    korch_pgraph_free(pg);
}

static void test_knob_text(void) {
    cg_schedule s;
    char buf[64];
    CHECK(cg_schedule_parse("p1.g0.v1.u1.t0.o0.r1.s1", &s) && s.stream == 1);
    cg_schedule_format(&s, buf, sizeof buf);
    CHECK(strcmp(buf, "p1.g0.v1.u1.t0.o0.r1.s1") == 0);
    /* schedules written before the knob existed read as stream 0, unchanged */
    CHECK(cg_schedule_parse("p1.g0.v1.u1.t0.o0.r1", &s) && s.stream == 0);
    cg_schedule_format(&s, buf, sizeof buf);
    CHECK(strcmp(buf, "p1.g0.v1.u1.t0.o0.r1") == 0);
    CHECK(!cg_schedule_parse("p1.g0.v1.u1.t0.o0.r1.s0", &s)); /* never written */
    CHECK(!cg_schedule_parse("p1.g0.v1.u1.t0.o0.r1.s2", &s));
    CHECK(!cg_schedule_parse("p1.g0.v1.u1.t0.o0.r1.", &s));
    CHECK(!cg_schedule_parse("p1.g0.v1.u1.t0.o0.r1.s1.", &s));
    CHECK(!cg_schedule_parse("p1.g0.v1.u1.t0.o0.r1s1", &s));
}

/* Staged transposes (tiled, last two loops swapped) copy their tiles out
 * with streaming stores when the output is large and whole lines wide:
 * [2, 48, 80] -> [2, 80, 48] under tiles of 16 and 32 (partial last tiles),
 * serial and parallel; an output 40 floats wide (not whole lines) keeps
 * plain stores; every case agrees with the interpreter. */
static void test_staged(void) {
    static const char *const staged[] = {"p2.g0.v1.u1.t16.o1.r0.s1", "p0.g0.v1.u1.t32.o1.r0.s1",
                                         "p3.g1.v0.u1.t16.o1.r0.s1", "p2.g0.v1.u1.t16.o1.r0"};
    for (int wide = 0; wide < 2; wide++) {
        korch_pgraph *pg = cc_graph();
        int64_t d[3] = {2, wide ? 48 : 40, 80};
        int x = cc_input(pg, KORCH_DTYPE_FLOAT32, 3, d);
        korch_index_map m = cc_map(3);
        m.terms[0].coef[0] = 1, m.terms[1].coef[2] = 1, m.terms[2].coef[1] = 1;
        korch_shape o = {3, {2, 80, d[1]}};
        int y = korch_pgraph_layout(pg, KORCH_LAYOUT_TRANSPOSE, 1, &x, &o, &m, 0);
        cc_output(pg, cc_ew1(pg, KORCH_EW_NEG, y));
        CHECK(cc_check(pg, staged, 4, -2, 2, wide ? "staged transpose, whole lines" : "staged transpose, 40 wide") == 0);
        for (int s = 0; s < 3; s++)
            CHECK_MSG(source_streams(pg, staged[s]) == (wide == 1), "staged transpose %s [%s]: streams %d",
                      wide ? "48 wide" : "40 wide", staged[s], !wide);
        CHECK_MSG(!source_streams(pg, staged[3]), "the stream knob off: plain stores");
        korch_pgraph_free(pg);
    }
}

int main(void) {
    test_knob_text();
    /* the default threshold is the last-level cache: nothing this small streams */
    cc_stream_min_bytes = 0;
    {
        int64_t n = 4096;
        korch_pgraph *pg = cc_graph();
        cc_output(pg, chain(pg, cc_input(pg, KORCH_DTYPE_FLOAT32, 1, &n)));
        CHECK(!source_streams(pg, "p1.g0.v1.u1.t0.o0.r1.s1"));
        korch_pgraph_free(pg);
    }
    cc_stream_min_bytes = 64;
    test_shapes();
    test_fused();
    test_alignment();
    test_staged();
    printf("largest relative error: %.3g\n", cc_max_err);
    TEST_MAIN_END();
}
