/* Profiling oneDNN kernels: results carry the implementation oneDNN picked,
 * the profile database answers the second time, the schedule rebuilds a
 * kernel that computes the right thing, unsupported specs say why, and
 * the reference-implementation policy: a bare linear primitive whose only
 * implementation is ref:any is timed and marked REFERENCE (with a warning),
 * a fused chain in that situation is rejected. */
#include <unistd.h>

#include <dnnl.h>

#include "dnnl_check.h"
#include "profile/profile.h"

static korch_pgraph *conv_bias_relu(void) {
    korch_pgraph *pg = dc_graph();
    korch_prim_linear p = {.op = KORCH_LINEAR_CONV, .spatial = 2, .group = 1, .channels_last = true,
                           .strides = {1, 1}, .dilations = {1, 1}, .pads_begin = {1, 1}, .pads_end = {1, 1}};
    int64_t x[4] = {1, 14, 14, 32}, w[4] = {64, 32, 3, 3}, b[1] = {64};
    int y = korch_pgraph_linear(pg, &p, dc_input(pg, 4, x), dc_constant(pg, 4, w, -0.2, 0.2));
    y = dc_ew1(pg, KORCH_EW_RELU, dc_ew2(pg, KORCH_EW_ADD, y, dc_constant(pg, 1, b, -1, 1)), 0, 0);
    dc_output(pg, y);
    return pg;
}

static korch_pgraph *matmul(void) {
    korch_pgraph *pg = dc_graph();
    int64_t a[3] = {2, 64, 96}, w[2] = {96, 80};
    korch_prim_linear p = {.op = KORCH_LINEAR_MATMUL};
    dc_output(pg, korch_pgraph_linear(pg, &p, dc_input(pg, 3, a), dc_constant(pg, 2, w, -1, 1)));
    return pg;
}

/* A transposed convolution oneDNN 2.6 runs channels-last only with ref:any
 * (one input channel, run-time weights in the ONNX layout): the premise of
 * the policy test, checked below. */
static korch_pgraph *tiny_deconv(bool with_relu) {
    korch_pgraph *pg = dc_graph();
    korch_prim_linear p = {.op = KORCH_LINEAR_CONV_TRANSPOSE, .spatial = 2, .group = 1, .channels_last = true,
                           .strides = {1, 1}, .dilations = {1, 1}};
    int64_t x[4] = {1, 3, 3, 1}, w[4] = {1, 2, 3, 3};
    int y = korch_pgraph_linear(pg, &p, dc_input(pg, 4, x), dc_input(pg, 4, w));
    if (with_relu) y = dc_ew1(pg, KORCH_EW_RELU, y, 0, 0);
    dc_output(pg, y);
    return pg;
}

static void test_profile_and_database(const char *db) {
    korch_pgraph *pgs[3] = {conv_bias_relu(), matmul(), conv_bias_relu()};
    korch_kernel_spec specs[3];
    for (int i = 0; i < 3; i++) dc_spec_all(pgs[i], &specs[i]);
    korch_profile_options o = {.threads = 2, .db_path = db};
    korch_profile_result r[3];
    korch_dnnl_stats st;
    CHECK_OK(korch_dnnl_profile(specs, 3, &o, r, &st));
    for (int i = 0; i < 3; i++) {
        CHECK_MSG(r[i].status == KORCH_OK, "spec %d: %s", i, r[i].reason);
        CHECK_MSG(r[i].latency_ms > 0 && isfinite(r[i].latency_ms), "spec %d latency %g", i, r[i].latency_ms);
        CHECK_MSG(strncmp(r[i].impl, "dnnl ", 5) == 0 && !strstr(r[i].impl, "ref:"), "spec %d impl \"%s\"", i, r[i].impl);
        CHECK_MSG(strstr(r[i].schedule, "fmt=") && strstr(r[i].schedule, "impl="), "schedule \"%s\"", r[i].schedule);
        CHECK(!r[i].from_database);
        printf("spec %d: %.4f ms, %s [%s]\n", i, r[i].latency_ms, r[i].impl, r[i].schedule);
    }
    CHECK_MSG(st.kernels == 3 && st.timed >= 2, "stats: %d kernels, %d timed", st.kernels, st.timed);
    /* the third spec has the first one's signature: same answer, not re-timed */
    CHECK(strcmp(r[0].schedule, r[2].schedule) == 0 && r[0].latency_ms == r[2].latency_ms);

    korch_profile_result again[3];
    CHECK_OK(korch_dnnl_profile(specs, 3, &o, again, &st));
    for (int i = 0; i < 3; i++) {
        CHECK_MSG(again[i].status == KORCH_OK && again[i].from_database, "spec %d not from the database", i);
        CHECK_MSG(strcmp(again[i].schedule, r[i].schedule) == 0, "spec %d schedule changed", i);
        CHECK_MSG(strcmp(again[i].impl, r[i].impl) == 0, "impl \"%s\" vs \"%s\"", again[i].impl, r[i].impl);
    }
    CHECK(st.timed == 0 && st.from_database == 2);

    /* the stored schedule builds a kernel that computes the right thing */
    korch_kernel *k[2] = {NULL, NULL};
    const char *sched[2] = {r[0].schedule, r[1].schedule};
    CHECK_OK(korch_backend_build(KORCH_BACKEND_DNNL, specs, sched, 2, &o, k));
    for (int i = 0; i < 2; i++) {
        CHECK(k[i] && strstr(r[i].impl, k[i]->impl + 5) == r[i].impl + 5);
        korch_kernel_destroy(k[i]);
    }
    CHECK(dc_check(pgs[0], -1, 1, "conv + bias + relu") > 0);
    CHECK(dc_check(pgs[1], -1, 1, "matmul") > 0);
    const char *bad = "fmt=sideways";
    korch_kernel *kb = NULL;
    CHECK(korch_backend_build(KORCH_BACKEND_DNNL, specs, &bad, 1, &o, &kb) == KORCH_ERR_INVALID_ARGUMENT && !kb);
    for (int i = 0; i < 3; i++) {
        dc_spec_free(&specs[i]);
        korch_pgraph_free(pgs[i]);
    }
}

static void test_unsupported(const char *db) {
    korch_pgraph *pg = dc_graph();
    int64_t d[2] = {4, 4};
    dc_output(pg, dc_ew1(pg, KORCH_EW_ERF, dc_input(pg, 2, d), 0, 0));
    korch_kernel_spec spec;
    dc_spec_all(pg, &spec);
    korch_profile_options o = {.threads = 2, .db_path = db};
    korch_profile_result r;
    CHECK_OK(korch_backend_profile(KORCH_BACKEND_DNNL, &spec, 1, &o, &r));
    CHECK_MSG(r.status == KORCH_ERR_UNSUPPORTED && strstr(r.reason, "no linear primitive"), "reason \"%s\"", r.reason);
    korch_kernel *k = NULL;
    CHECK(korch_backend_build(KORCH_BACKEND_DNNL, &spec, NULL, 1, &o, &k) == KORCH_ERR_UNSUPPORTED && !k);
    dc_spec_free(&spec);
    korch_pgraph_free(pg);
}

static void test_reference_policy(const char *db) {
    korch_profile_options o = {.threads = 2, .db_path = db, .dnnl_variants = "fmt=plain"};
    /* premise: oneDNN has only ref:any for it */
    korch_pgraph *bare = tiny_deconv(false), *fused = tiny_deconv(true);
    korch_kernel_spec spec, fspec;
    dc_spec_all(bare, &spec);
    dc_spec_all(fused, &fspec);
    korch_kernel *k = NULL;
    CHECK_OK(korch_backend_build(KORCH_BACKEND_DNNL, &spec, NULL, 1, &o, &k));
    bool premise = k && strstr(k->impl, "ref:") != NULL;
    CHECK_MSG(premise, "premise: the tiny deconvolution now gets \"%s\", pick another reference-only case",
              k ? k->impl : "nothing");
    korch_kernel_destroy(k);
    korch_profile_result r;
    korch_dnnl_stats st;
    CHECK_OK(korch_dnnl_profile(&spec, 1, &o, &r, &st));
    CHECK_MSG(r.status == KORCH_OK && strstr(r.impl, "ref:") && strstr(r.impl, "REFERENCE"), "bare: impl \"%s\"",
              r.impl);
    CHECK(r.latency_ms > 0);
    CHECK(st.reference_kept == 1);
    CHECK_OK(korch_backend_profile(KORCH_BACKEND_DNNL, &fspec, 1, &o, &r));
    if (dnnl_version()->major < 3) {
        /* oneDNN 2.x: a deconvolution takes no fused bias or post-op at all
         * (slow there; dnnl_quirks.c, 4), before any implementation is asked */
        CHECK_MSG(r.status == KORCH_ERR_UNSUPPORTED && strstr(r.reason, "deconvolution runs a fused"),
                  "fused on oneDNN 2.x: \"%s\"", r.reason);
    } else {
        CHECK_MSG(r.status == KORCH_ERR_UNSUPPORTED && strstr(r.reason, "reference implementation"),
                  "fused: \"%s\"", r.reason);
        /* with every variant allowed, the reorder variant has a real kernel */
        o.dnnl_variants = NULL;
        CHECK_OK(korch_backend_profile(KORCH_BACKEND_DNNL, &fspec, 1, &o, &r));
        CHECK_MSG(r.status == KORCH_OK && !strstr(r.impl, "ref:"), "all variants: %s %s", r.impl, r.reason);
    }
    dc_spec_free(&spec);
    dc_spec_free(&fspec);
    korch_pgraph_free(bare);
    korch_pgraph_free(fused);
}

/* Without a schedule (estimated plans), a product below 2 MFLOP runs on one
 * thread, as an unrolled LSTM's per-step (1, H) x (H, 4H) one: it must not
 * open a parallel region per step; a larger one keeps every thread. */
static void test_untimed_threads(void) {
    korch_profile_options o = {.threads = 2};
    korch_pgraph *small = dc_graph();
    int64_t h[2] = {1, 256}, r[2] = {256, 1024};
    korch_prim_linear p = {.op = KORCH_LINEAR_MATMUL};
    dc_output(small, korch_pgraph_linear(small, &p, dc_input(small, 2, h), dc_constant(small, 2, r, -1, 1)));
    korch_pgraph *large = conv_bias_relu(); /* 7 MFLOP */
    korch_pgraph *pgs[2] = {small, large};
    for (int i = 0; i < 2; i++) {
        korch_kernel_spec spec;
        dc_spec_all(pgs[i], &spec);
        korch_kernel *k = NULL;
        CHECK_OK(korch_backend_build(KORCH_BACKEND_DNNL, &spec, NULL, 1, &o, &k));
        bool one = k && strstr(k->impl, "thr=1") != NULL;
        CHECK_MSG(i == 0 ? one : !one, "%s product: impl \"%s\"", i == 0 ? "small" : "large", k ? k->impl : "none");
        korch_kernel_destroy(k);
        dc_spec_free(&spec);
    }
    CHECK(dc_check(small, -1, 1, "1x256 x 256x1024 matmul") > 0);
    korch_pgraph_free(small);
    korch_pgraph_free(large);
}

/* the machine state pinned quiet (the CLI's KORCH_PROFILE_STATE=quiet) */
static void quiet_state(void *user, double *probe, double *wait) {
    (void)user;
    *probe = 1.0;
    *wait = 0.0;
}

int main(void) {
    /* answers from the database must not depend on how busy the machine
     * happens to be (provisional profiles: tests/profile/test_profile_quality) */
    korch_profile_set_hooks(&(korch_profile_hooks){.state = quiet_state});
    char db[] = "/tmp/korch-dnnl-profile-XXXXXX";
    int fd = mkstemp(db);
    CHECK(fd >= 0);
    if (fd >= 0) close(fd);
    unlink(db);
    test_profile_and_database(db);
    test_unsupported(db);
    test_reference_policy(db);
    test_untimed_threads();
    char side[64];
    unlink(db);
    snprintf(side, sizeof side, "%s-wal", db);
    unlink(side);
    snprintf(side, sizeof side, "%s-shm", db);
    unlink(side);
    TEST_MAIN_END();
}
