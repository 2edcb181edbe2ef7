/* The public C API's optimiser and model description (korch_optimize,
 * korch_model_describe; src/api/optimize.c, describe.c), as a user and
 * the Python package (python/korch) see them: options, the log callback,
 * the report, the plan it writes, the JSON, and their errors. */
#include <stdint.h>
#include <unistd.h>

#include "api_plan.h"
#include "io/npy.h"
#include "ops/reference.h"
#include "test.h"

#ifdef _OPENMP
#include <omp.h>
#endif

static char tmp[] = "/tmp/korch_test_optimize_api_XXXXXX";

static bool contains(const char *hay, const char *needle) { return hay && strstr(hay, needle) != NULL; }

static void test_describe(void) {
    char model[512];
    api_fixture("small_net.onnx", model, sizeof model);
    char *json = NULL;
    CHECK_OK(korch_model_describe(model, NULL, &json));
    CHECK(contains(json, "\"inputs\": [{\"name\": \"x\", \"dtype\": 1, \"shape\": [1, 3, 16, 16]}]"));
    CHECK(contains(json, "{\"name\": \"pooled\", \"dtype\": 1, \"shape\": [1, 8, 8, 8]}"));
    CHECK(contains(json, "\"nodes_in_file\": 18, \"nodes\": 18, \"parameters\": 518"));
    CHECK(contains(json, "\"operators\": [{\"op\": \"Add\", \"count\": 3,"));
    korch_string_free(json);
    CHECK_OK(korch_model_describe(model, "x=1x3x16x16", &json));
    korch_string_free(json);
    json = (char *)(uintptr_t)1;
    CHECK(korch_model_describe("/nonexistent/m.onnx", NULL, &json) == KORCH_ERR_IO);
    CHECK(json == NULL && contains(korch_last_error(), "/nonexistent/m.onnx"));
    CHECK(korch_model_describe(NULL, NULL, &json) == KORCH_ERR_INVALID_ARGUMENT);
    CHECK(korch_model_describe(model, "x=bad", &json) != KORCH_OK);
    korch_string_free(NULL);

    /* names with quotes, newlines and control bytes come out as valid JSON
     * strings: no raw control character, every quote inside escaped */
    const char *src = getenv("KORCH_SOURCE_DIR");
    char path[512];
    snprintf(path, sizeof path, "%s/tests/badinput/corpus/hostile_names.onnx", src && *src ? src : ".");
    CHECK_MSG(access(path, R_OK) == 0, "%s missing", path);
    json = NULL;
    CHECK_OK(korch_model_describe(path, NULL, &json));
    bool raw_control = false;
    int quotes = 0;
    for (const unsigned char *p = (const unsigned char *)json; p && *p; p++) {
        raw_control |= *p < 0x20;
        if (*p == '\\') p++; /* an escape: the next byte is part of it */
        else quotes += *p == '"';
    }
    CHECK(json && !raw_control && quotes % 2 == 0);
    korch_string_free(json);
}

typedef struct log_lines {
    int count;
    char first[256], last[256];
} log_lines;

static void on_line(void *user, const char *line) {
    log_lines *l = user;
    if (l->count++ == 0) snprintf(l->first, sizeof l->first, "%s", line);
    snprintf(l->last, sizeof l->last, "%s", line);
    CHECK(strchr(line, '\n') == NULL);
}

static void test_optimize(void) {
    /* the library reads no KORCH_* variable (docs/architecture.md): a C
     * compiler named in the environment that does not exist changes nothing
     * here; the sessions below compile their kernels with the default "cc" */
    setenv("KORCH_CC", "/nonexistent/korch-cc", 1);
    setenv("KORCH_CC_OPT", "-O0", 1);
    char model[512], xpath[512], plan[300], db[300];
    api_fixture("small_net.onnx", model, sizeof model);
    api_fixture("small_net.x.npy", xpath, sizeof xpath);
    snprintf(plan, sizeof plan, "%s/small_net.plan", tmp);
    snprintf(db, sizeof db, "%s/profile.db", tmp);
    korch_optimize_options o = korch_optimize_options_default();
    korch_optimize_report r;
    CHECK(o.threads == 0 && o.strategy == NULL && o.log == NULL && o.estimate == 0);
    /* arguments are checked before anything runs */
    CHECK(korch_optimize(NULL, plan, &o, &r) == KORCH_ERR_INVALID_ARGUMENT);
    o.strategy = "best";
    CHECK(korch_optimize(model, plan, &o, &r) == KORCH_ERR_INVALID_ARGUMENT && contains(korch_last_error(), "best"));
    o.strategy = NULL;
    o.threads = -1;
    CHECK(korch_optimize(model, plan, &o, &r) == KORCH_ERR_INVALID_ARGUMENT);
    o.threads = 0;
    o.budget_s = -1;
    CHECK(korch_optimize(model, plan, &o, &r) == KORCH_ERR_INVALID_ARGUMENT);
    o.budget_s = 0;
    CHECK(korch_optimize("/nonexistent/m.onnx", plan, &o, &r) == KORCH_ERR_IO);
    CHECK(access(plan, F_OK) != 0);

    /* estimated latencies, no solver time limit: a plan that does not
     * depend on the machine's load (docs/testing.md) */
    log_lines lines = {0};
    o = korch_optimize_options_default();
    o.threads = 2;
    o.strategy = "optimal";
    o.db_path = db;
    o.estimate = 1;
    o.time_limit_s = 1e6;
    o.log = on_line;
    o.log_user = &lines;
#ifdef _OPENMP
    omp_set_num_threads(1);
#endif
    CHECK_OK(korch_optimize(model, plan, &o, &r));
#ifdef _OPENMP
    CHECK(omp_get_max_threads() == 1); /* the caller's OpenMP setting is restored */
#endif
    CHECK(strcmp(r.strategy, "optimal") == 0 && r.predicted_ms > 0 && r.seconds > 0);
    CHECK(r.kernels > 0 && r.kernels <= r.primitives && r.fused_kernels <= r.kernels && r.primitives == 33);
    CHECK_MSG(lines.count >= 4 && strncmp(lines.first, "model: 18 operators -> 33 primitives", 36) == 0 &&
                  strncmp(lines.last, "optimize time: ", 15) == 0,
              "%d lines, first \"%s\", last \"%s\"", lines.count, lines.first, lines.last);
    CHECK(access(db, F_OK) == 0); /* the database named was the one used */
    /* every generated-C kernel has its schedule in the plan: an empty one
     * would be chosen again by `korch run`, after OMP_WAIT_POLICY, and the
     * plan would compute differently on a busy machine */
    korch_plan *written = NULL;
    CHECK_OK(korch_plan_load(plan, &written));
    int cgen_kernels = 0;
    for (int i = 0; written && i < written->n_kernels; i++) {
        const korch_plan_kernel *k = &written->kernels[i];
        if (k->backend != KORCH_BACKEND_CGEN) continue;
        cgen_kernels++;
        CHECK_MSG(k->schedule[0] == 'p', "kernel %d: schedule \"%s\"", i, k->schedule);
    }
    CHECK(cgen_kernels > 0);
    korch_plan_free(written);

    /* the plan runs and agrees with the reference executor */
    korch_tensor x = {0};
    CHECK_OK(korch_tensor_file_read(xpath, &x, NULL));
    korch_graph *g = NULL;
    korch_tensor want[2] = {0};
    CHECK_OK(korch_frontend_load(model, NULL, 0, &g));
    if (g && x.data) CHECK_OK(korch_reference_run(g, &x, want));
    korch_model *m = NULL;
    korch_session *s = NULL;
    CHECK_OK(korch_model_load(plan, &m));
    if (m) CHECK_OK(korch_session_create(m, NULL, &s));
    float y[8], pooled[512];
    if (s && x.data && want[0].data) {
        CHECK_OK(korch_session_set_input(s, 0, x.data, korch_tensor_bytes(&x)));
        CHECK_OK(korch_session_set_output(s, 0, y, sizeof y));
        CHECK_OK(korch_session_set_output(s, 1, pooled, sizeof pooled));
        CHECK_OK(korch_session_run(s));
        CHECK(api_close(y, want[0].data, 8) && api_close(pooled, want[1].data, 512));
    }
    korch_session_destroy(s);
    korch_model_free(m);

    /* quiet, no report, another strategy */
    o.log = NULL;
    o.strategy = "none";
    CHECK_OK(korch_optimize(model, plan, &o, NULL));
    /* an unwritable plan path is an I/O error naming it */
    char bad[400];
    snprintf(bad, sizeof bad, "%s/no-such-dir/x.plan", tmp);
    CHECK(korch_optimize(model, bad, &o, &r) == KORCH_ERR_IO && contains(korch_last_error(), "no-such-dir"));
    korch_tensor_free(&want[0]);
    korch_tensor_free(&want[1]);
    korch_graph_free(g);
    korch_tensor_free(&x);
    unlink(plan);
    unlink(db);
}

int main(void) {
    if (!mkdtemp(tmp)) {
        perror("mkdtemp");
        return 1;
    }
    test_describe();
    test_optimize();
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf %s", tmp);
    if (system(cmd) != 0) fprintf(stderr, "could not remove %s\n", tmp);
    TEST_MAIN_END();
}
