/* Profiling through the backend interface: tuning, the profile database
 * (the second run compiles and times nothing), identical kernels tuned once,
 * unsupported specs, and a missing or failing compiler. */
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cgen_check.h"
#include "profile/profile.h"

static korch_pgraph *softmax_graph(int64_t rows, int64_t cols) {
    korch_pgraph *pg = NULL;
    CHECK_OK(korch_pgraph_create(NULL, &pg));
    int64_t d[2] = {rows, cols};
    int x = cc_input(pg, KORCH_DTYPE_FLOAT32, 2, d);
    int m = korch_pgraph_reduce(pg, KORCH_REDUCE_MAX, x, 2u, true);
    int a[2] = {x, m};
    int sub = korch_pgraph_elementwise(pg, KORCH_EW_SUB, 2, a, 0, 0, KORCH_DTYPE_UNDEFINED);
    int e = korch_pgraph_elementwise(pg, KORCH_EW_EXP, 1, &sub, 0, 0, KORCH_DTYPE_UNDEFINED);
    int s = korch_pgraph_reduce(pg, KORCH_REDUCE_SUM, e, 2u, true);
    int b[2] = {e, s};
    cc_output(pg, korch_pgraph_elementwise(pg, KORCH_EW_DIV, 2, b, 0, 0, KORCH_DTYPE_UNDEFINED));
    return pg;
}

/* the machine state pinned quiet (the CLI's KORCH_PROFILE_STATE=quiet) */
static void quiet_state(void *user, double *probe, double *wait) {
    (void)user;
    *probe = 1.0;
    *wait = 0.0;
}

int main(void) {
    char dir[128], db[160], cache[160];
    snprintf(dir, sizeof dir, "/tmp/korch-test-profile-%d", (int)getpid());
    mkdir(dir, 0755);
    snprintf(db, sizeof db, "%s/profile.db", dir);
    snprintf(cache, sizeof cache, "%s/kernels", dir);
    /* the second run's answers from the database must not depend on how busy
     * the machine happens to be (provisional profiles: test_profile_quality) */
    korch_profile_set_hooks(&(korch_profile_hooks){.state = quiet_state});

    korch_pgraph *a = softmax_graph(64, 256), *b = softmax_graph(64, 256), *c = NULL;
    CHECK_OK(korch_pgraph_create(NULL, &c));
    int64_t md[2] = {8, 8};
    int x = cc_input(c, KORCH_DTYPE_FLOAT32, 2, md), w = cc_input(c, KORCH_DTYPE_FLOAT32, 2, md);
    korch_prim_linear mm = {.op = KORCH_LINEAR_MATMUL};
    cc_output(c, korch_pgraph_linear(c, &mm, x, w));
    korch_kernel_spec specs[3];
    cc_spec_all(a, &specs[0]);
    cc_spec_all(b, &specs[1]);
    cc_spec_all(c, &specs[2]);
    korch_profile_options opt = {.threads = 2, .db_path = db, .cache_dir = cache, .tune_trials = 6};
    korch_profile_result res[3];

    korch_cgen_stats st;
    CHECK_OK(korch_cgen_profile(specs, 3, &opt, res, &st));
    CHECK(res[0].status == KORCH_OK && res[0].latency_ms > 0 && !res[0].from_database);
    CHECK(res[1].status == KORCH_OK && strcmp(res[0].schedule, res[1].schedule) == 0);
    CHECK(res[2].status == KORCH_ERR_UNSUPPORTED && strstr(res[2].reason, "linear") != NULL);
    CHECK_MSG(st.trials >= 1 && st.trials <= 6, "%d trials for one unique kernel with a budget of 6", st.trials);
    CHECK(st.compiled >= 1 && st.unsupported == 1);
    printf("first run: %d trials, %d compiled, %.4f ms (%s), spread %.4f ms\n", st.trials, st.compiled,
           res[0].latency_ms, res[0].schedule, res[0].spread_ms);

    /* second run: everything from the database */
    korch_profile_result again[3];
    CHECK_OK(korch_cgen_profile(specs, 3, &opt, again, &st));
    CHECK_MSG(st.compiled == 0 && st.trials == 0 && st.compiler_runs == 0, "second run compiled %d, timed %d",
              st.compiled, st.trials);
    CHECK(again[0].from_database && again[1].from_database);
    CHECK(strcmp(again[0].schedule, res[0].schedule) == 0 && again[0].latency_ms == res[0].latency_ms);

    /* the tuned schedule builds a correct kernel */
    const char *sched[1] = {res[0].schedule};
    CHECK(cc_check(a, sched, 1, -3, 3, "tuned softmax") == 0);

    /* missing and failing compilers: clear errors naming the kernel */
    char cache2[200];
    snprintf(cache2, sizeof cache2, "%s/fresh", dir);
    korch_profile_options fresh = {.threads = 2, .cache_dir = cache2};
    korch_kernel *k = NULL;
    fresh.cc = "/nonexistent/korch-cc";
    korch_status s = korch_backend_build(KORCH_BACKEND_CGEN, &specs[0], NULL, 1, &fresh, &k);
    CHECK(s == KORCH_ERR_RUNTIME && k == NULL);
    CHECK_MSG(strstr(korch_last_error(), "korch_k") && strstr(korch_last_error(), "KORCH_CC"), "%s", korch_last_error());
    fresh.cc = "false";
    s = korch_backend_build(KORCH_BACKEND_CGEN, &specs[0], NULL, 1, &fresh, &k);
    CHECK(s == KORCH_ERR_RUNTIME && k == NULL);
    CHECK_MSG(strstr(korch_last_error(), "failed") && strstr(korch_last_error(), "korch_k"), "%s", korch_last_error());
    fresh.cc = NULL;

    for (int i = 0; i < 3; i++) cc_spec_free(&specs[i]);
    korch_pgraph_free(a);
    korch_pgraph_free(b);
    korch_pgraph_free(c);
    char cmd[200];
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    CHECK(system(cmd) == 0);
    TEST_MAIN_END();
}
