/* The public C API (include/korch.h) as a user sees it: loading, queries,
 * binding checks, error messages, runs of an ONNX model and of a plan
 * (compared with the reference executor), hostile tensor names. */
#include <stdint.h>
#include <unistd.h>

#include "api_plan.h"
#include "io/npy.h"
#include "ops/reference.h"
#include "test.h"

static char tmp[] = "/tmp/korch_test_api_XXXXXX";

static bool contains(const char *hay, const char *needle) { return strstr(hay, needle) != NULL; }

static void test_errors(void) {
    korch_model *m = (korch_model *)(uintptr_t)1;
    CHECK(korch_model_load("/nonexistent/net.onnx", &m) == KORCH_ERR_IO);
    CHECK(m == NULL);
    CHECK(contains(korch_last_error(), "/nonexistent/net.onnx"));
    CHECK(korch_model_load(NULL, &m) == KORCH_ERR_INVALID_ARGUMENT);
    CHECK(korch_session_create(NULL, NULL, NULL) == KORCH_ERR_INVALID_ARGUMENT);
    CHECK(korch_session_run(NULL) == KORCH_ERR_INVALID_ARGUMENT);
    CHECK(korch_session_input_count(NULL) == 0);
    korch_session_destroy(NULL);
    korch_model_free(NULL);
    CHECK(strcmp(korch_status_name(KORCH_ERR_SHAPE), "") != 0);
    /* a file that is neither a model nor a plan */
    char path[256];
    snprintf(path, sizeof path, "%s/garbage.onnx", tmp);
    FILE *f = fopen(path, "wb");
    fputs("not a model", f);
    fclose(f);
    CHECK(korch_model_load(path, &m) != KORCH_OK);
    CHECK(m == NULL);
    unlink(path);
}

/* one run of small_net through the API, outputs into caller buffers */
static korch_status run_small(const char *path, const float *x, float *y, float *pooled, int threads) {
    korch_model *model = NULL;
    korch_session *s = NULL;
    korch_session_options o = korch_session_options_default();
    o.threads = threads;
    korch_status st = korch_model_load(path, &model);
    if (st == KORCH_OK) st = korch_session_create(model, &o, &s);
    korch_model_free(model); /* a session does not need its model */
    if (st == KORCH_OK) st = korch_session_set_input(s, 0, x, 3 * 16 * 16 * sizeof(float));
    if (st == KORCH_OK) st = korch_session_set_output(s, 0, y, 8 * sizeof(float));
    if (st == KORCH_OK) st = korch_session_set_output(s, 1, pooled, 8 * 8 * 8 * sizeof(float));
    if (st == KORCH_OK) st = korch_session_run(s);
    korch_session_destroy(s);
    return st;
}

static void test_onnx_and_plan(void) {
    char model[512], xpath[512], plan[300];
    api_fixture("small_net.onnx", model, sizeof model);
    api_fixture("small_net.x.npy", xpath, sizeof xpath);
    snprintf(plan, sizeof plan, "%s/small_net.plan", tmp);
    korch_tensor x = {0};
    CHECK_OK(korch_tensor_file_read(xpath, &x, NULL));
    if (!x.data) return;

    korch_model *m = NULL;
    korch_session *s = NULL;
    CHECK_OK(korch_model_load(model, &m));
    CHECK_OK(korch_session_create(m, NULL, &s));
    if (!s) return;
    CHECK(korch_session_input_count(s) == 1 && korch_session_output_count(s) == 2);
    korch_tensor_info info;
    CHECK_OK(korch_session_input_info(s, 0, &info));
    CHECK(strcmp(info.name, "x") == 0 && info.dtype == KORCH_DTYPE_FLOAT32 && info.rank == 4 && info.dims[1] == 3 &&
          info.dims[3] == 16);
    CHECK_OK(korch_session_output_info(s, 1, &info));
    CHECK(strcmp(info.name, "pooled") == 0 && info.rank == 4 && info.dims[2] == 8);
    CHECK(korch_session_output_info(s, 2, &info) == KORCH_ERR_INVALID_ARGUMENT);
    CHECK(korch_session_input_info(s, -1, &info) == KORCH_ERR_INVALID_ARGUMENT);
    /* binding checks name the tensor and both sizes */
    float y[8], pooled[512], big[4096];
    CHECK(korch_session_set_input(s, 0, x.data, 100) == KORCH_ERR_INVALID_ARGUMENT);
    CHECK(contains(korch_last_error(), "\"x\"") && contains(korch_last_error(), "3072") &&
          contains(korch_last_error(), "100"));
    CHECK(korch_session_run(s) == KORCH_ERR_INVALID_ARGUMENT);
    CHECK(contains(korch_last_error(), "not bound"));
    CHECK_OK(korch_session_set_input(s, 0, x.data, korch_tensor_bytes(&x)));
    CHECK_OK(korch_session_set_output(s, 0, y, sizeof y));
    /* outputs overlapping each other or an input are refused */
    CHECK_OK(korch_session_set_output(s, 1, big, sizeof pooled));
    CHECK_OK(korch_session_set_output(s, 0, big + 100, sizeof y));
    CHECK(korch_session_run(s) == KORCH_ERR_INVALID_ARGUMENT);
    CHECK(contains(korch_last_error(), "overlaps"));
    CHECK_OK(korch_session_set_output(s, 0, y, sizeof y));
    CHECK_OK(korch_session_set_output(s, 1, pooled, sizeof pooled));
    CHECK_OK(korch_session_run(s));
    korch_session_destroy(s);
    korch_model_free(m);

    /* the reference executor, called directly, gives the same bytes */
    korch_graph *g = NULL;
    CHECK_OK(korch_frontend_load(model, NULL, 0, &g));
    korch_tensor want[2] = {0};
    if (g) CHECK_OK(korch_reference_run(g, &x, want));
    if (want[0].data && want[1].data) {
        CHECK(memcmp(want[0].data, y, sizeof y) == 0);
        CHECK(memcmp(want[1].data, pooled, sizeof pooled) == 0);
    }

    /* a plan of the same model, several thread counts, repeated */
    CHECK_OK(api_make_plan(model, plan, 2));
    for (int threads = 1; threads <= 2 && want[0].data; threads++) {
        float py[8], ppooled[512];
        memset(py, 0xA5, sizeof py);
        memset(ppooled, 0xA5, sizeof ppooled);
        CHECK_OK(run_small(plan, x.data, py, ppooled, threads));
        CHECK_MSG(api_close(py, want[0].data, 8), "plan output y differs (%d threads)", threads);
        CHECK_MSG(api_close(ppooled, want[1].data, 512), "plan output pooled differs (%d threads)", threads);
    }
    /* the caller's OpenMP setting survives a run with another thread count */
    korch_tensor_free(&want[0]);
    korch_tensor_free(&want[1]);
    korch_graph_free(g);
    korch_tensor_free(&x);
    unlink(plan);
}

/* names with quotes, newlines, comment ends and non-ASCII come back byte for
 * byte, and messages quote them escaped (one printable line) */
static void test_hostile_names(void) {
    const char *src = getenv("KORCH_SOURCE_DIR");
    char path[512];
    snprintf(path, sizeof path, "%s/tests/badinput/corpus/hostile_names.onnx", src && *src ? src : ".");
    /* a committed corpus file: missing is a failure, not a silent pass */
    CHECK_MSG(access(path, R_OK) == 0, "%s missing", path);
    if (access(path, R_OK) != 0) return;
    korch_model *m = NULL;
    korch_session *s = NULL;
    CHECK_OK(korch_model_load(path, &m));
    if (m) CHECK_OK(korch_session_create(m, NULL, &s));
    if (!s) {
        korch_model_free(m);
        return;
    }
    korch_tensor_info info;
    CHECK_OK(korch_session_input_info(s, 0, &info));
    CHECK(strcmp(info.name, "x \"quoted\"\nnewline */ #include <stdio.h> \\back\\slash \xc3\xbc"
                            "n\xc3\xaf"
                            "c\xc3\xb6"
                            "d\xc3\xa9") == 0);
    float x[3] = {1, -2, 3};
    CHECK(korch_session_set_input(s, 0, x, 4) == KORCH_ERR_INVALID_ARGUMENT);
    CHECK(strchr(korch_last_error(), '\n') == NULL);
    korch_session_destroy(s);
    korch_model_free(m);
}

int main(void) {
    if (!mkdtemp(tmp)) return 1;
    char cache[300];
    snprintf(cache, sizeof cache, "%s/cache", tmp);
    setenv("XDG_CACHE_HOME", cache, 1);
    test_errors();
    test_onnx_and_plan();
    test_hostile_names();
    char cmd[400];
    snprintf(cmd, sizeof cmd, "rm -rf %s", tmp);
    CHECK(system(cmd) == 0);
    TEST_MAIN_END();
}
