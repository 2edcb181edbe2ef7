/* The fetch knob (generator cg9, chunked since cg12): whether and how a
 * fused kernel with a reduction prefetches the next outer iteration's input
 * slab. Its text (".f0" when off, ".f2" when chunked, nothing for the burst,
 * so schedules of older plans read as fetch 1, what they ran), that the
 * source follows it, and that every setting computes the same softmax as
 * the interpreter, also with a round-robin grain (g1: the next row of a
 * thread is nthreads rows on) and rows that are not a whole number of
 * chunks (no chunking then). */
#include <string.h>

#include "backend/cgen/cgen.h"
#include "backend/cgen/cgen_backend.h"
#include "cgen_check.h"

static void test_text(void) {
    cg_schedule s;
    char buf[64];
    CHECK(cg_schedule_parse("p2.g0.v1.u1.t0.o0.r3", &s) && s.fetch == 1 && s.stream == 0);
    CHECK(cg_schedule_parse("p2.g0.v1.u1.t0.o0.r3.s1", &s) && s.fetch == 1 && s.stream == 1);
    CHECK(cg_schedule_parse("p2.g0.v1.u1.t0.o0.r3.f0", &s) && s.fetch == 0 && s.stream == 0);
    cg_schedule_format(&s, buf, sizeof buf);
    CHECK(strcmp(buf, "p2.g0.v1.u1.t0.o0.r3.f0") == 0);
    CHECK(cg_schedule_parse("p2.g0.v1.u1.t0.o0.r3.s1.f0", &s) && s.fetch == 0 && s.stream == 1);
    cg_schedule_format(&s, buf, sizeof buf);
    CHECK(strcmp(buf, "p2.g0.v1.u1.t0.o0.r3.s1.f0") == 0);
    CHECK(!cg_schedule_parse("p2.g0.v1.u1.t0.o0.r3.f1", &s)); /* never written */
    CHECK(!cg_schedule_parse("p2.g0.v1.u1.t0.o0.r3.f0.s1", &s)); /* out of order */
    CHECK(cg_schedule_parse("p2.g0.v1.u1.t0.o0.r3.f2", &s) && s.fetch == 2);
    cg_schedule_format(&s, buf, sizeof buf);
    CHECK(strcmp(buf, "p2.g0.v1.u1.t0.o0.r3.f2") == 0);
    CHECK(!cg_schedule_parse("p2.g0.v1.u1.t0.o0.r3.f3", &s));
    CHECK(!cg_schedule_parse("p2.g0.v1.u1.t0.o0.r3.f0.", &s));
    CHECK(!cg_schedule_parse("p2.g0.v1.u1.t0.o0.r3.s1.f0.f0", &s));
    CHECK(!cg_schedule_parse("p2.g0.v1.u1.t0.o0.r3.x0", &s));
    /* the default prefetches, as every generator before cg9 did */
    cg_schedule d = {0};
    cg_schedule_parse("p0.g0.v0.u1.t0.o0.r0", &d);
    CHECK(d.fetch == 1);
    /* the tuner's domain holds the three values, the default first */
    const int *values;
    CHECK(cg_schedule_domain(CG_KNOB_FETCH, &values) == 3 && values[0] == 1 && values[1] == 0 && values[2] == 2);
}

/* softmax over rows of [rows, cols] */
static korch_pgraph *softmax(int64_t rows, int64_t cols) {
    korch_pgraph *pg = cc_graph();
    int64_t d[2] = {rows, cols};
    int x = cc_input(pg, KORCH_DTYPE_FLOAT32, 2, d);
    int m = korch_pgraph_reduce(pg, KORCH_REDUCE_MAX, x, 2u, true);
    int e = cc_ew1(pg, KORCH_EW_EXP, cc_ew2(pg, KORCH_EW_SUB, x, m));
    int s = korch_pgraph_reduce(pg, KORCH_REDUCE_SUM, e, 2u, true);
    cc_output(pg, cc_ew2(pg, KORCH_EW_DIV, e, s));
    return pg;
}

/* burst: "__builtin_prefetch(&in0["; chunked: "__builtin_prefetch((const char *)&in0[" */
static bool source_has(const korch_pgraph *pg, const char *sched, const char *needle) {
    korch_kernel_spec spec;
    cc_spec_all(pg, &spec);
    char *src = NULL;
    korch_profile_options opt = {0};
    CHECK_OK(korch_cgen_source(&spec, sched, &opt, &src));
    bool yes = src && strstr(src, needle) != NULL;
    free(src);
    cc_spec_free(&spec);
    return yes;
}

static bool prefetches(const korch_pgraph *pg, const char *sched) { return source_has(pg, sched, "__builtin_prefetch(&in0["); }
static bool chunked(const korch_pgraph *pg, const char *sched) {
    return source_has(pg, sched, "__builtin_prefetch((const char *)&in0[");
}

int main(void) {
    test_text();
    korch_pgraph *pg = softmax(64, 1024);
    CHECK(prefetches(pg, "p2.g0.v1.u1.t0.o0.r3"));
    CHECK(!prefetches(pg, "p2.g0.v1.u1.t0.o0.r3.f0"));
    CHECK(prefetches(pg, "p2.g0.v1.u1.t0.o0.r3.s1"));
    CHECK(!prefetches(pg, "p2.g0.v1.u1.t0.o0.r3.s1.f0"));
    CHECK(chunked(pg, "p2.g0.v1.u1.t0.o0.r3.f2") && !prefetches(pg, "p2.g0.v1.u1.t0.o0.r3.f2"));
    CHECK(!chunked(pg, "p2.g0.v1.u1.t0.o0.r3") && !chunked(pg, "p2.g0.v1.u1.t0.o0.r3.f0"));
    CHECK(source_has(pg, "p2.g1.v1.u1.t0.o0.r3.f2", "x0 + nthreads"));
    /* a kernel without a reduction never prefetches, whatever the knob */
    korch_pgraph *ew = cc_graph();
    int64_t d[2] = {64, 1024};
    cc_output(ew, cc_ew1(ew, KORCH_EW_EXP, cc_input(ew, KORCH_DTYPE_FLOAT32, 2, d)));
    CHECK(!prefetches(ew, "p2.g0.v1.u1.t0.o0.r3"));
    korch_pgraph_free(ew);
    /* both settings compute the softmax */
    const char *scheds[] = {"p2.g0.v1.u1.t0.o0.r3", "p2.g0.v1.u1.t0.o0.r3.f0", "p0.g0.v3.u1.t0.o0.r1.f0",
                            "p1.g4.v2.u1.t0.o0.r3.s1.f0", "p2.g0.v1.u1.t0.o0.r3.f2", "p2.g1.v3.u1.t0.o0.r1.s1.f2",
                            "p0.g0.v0.u1.t0.o0.r0.f2"};
    CHECK(cc_check(pg, scheds, 7, -8, 8, "softmax") == 0);
    korch_pgraph_free(pg);
    /* rows of 200: not a whole number of 64-float chunks, so no chunking */
    korch_pgraph *odd = softmax(33, 200);
    CHECK(!chunked(odd, "p2.g0.v1.u1.t0.o0.r3.f2"));
    CHECK(cc_check(odd, scheds, 7, -8, 8, "softmax of odd rows") == 0);
    korch_pgraph_free(odd);
    TEST_MAIN_END();
}
