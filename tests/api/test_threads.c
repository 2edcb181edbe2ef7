/* Concurrent sessions: several threads at once, each creating its own
 * sessions from two shared models (an ONNX model and a plan of it, so kernels
 * are built concurrently too), running them on its own inputs and checking
 * the results; each thread also provokes an error and checks that
 * korch_last_error() reports its own. Built twice: as a plain unit test, and
 * with ThreadSanitizer by tests/api/run_tsan.sh (CTest api/threads_tsan),
 * which fails on any race report. */
#include <pthread.h>
#include <unistd.h>

#include "api_plan.h"
#include "io/npy.h"
#include "ops/reference.h"
#include "test.h"

#define THREADS 4
#define RUNS 3

typedef struct job {
    int id;
    const korch_model *model[2]; /* ONNX, plan */
    const float *x;              /* 3 * 16 * 16 */
    const float *want_y[THREADS]; /* expected "y" of input x * (1 + id / 4) */
    int failures;
    char message[256];
} job;

static void fail(job *j, const char *what) {
    if (!j->failures++) snprintf(j->message, sizeof j->message, "thread %d: %s: %s", j->id, what, korch_last_error());
}

static void *work(void *arg) {
    job *j = arg;
    float x[768], y[8], pooled[512];
    for (int i = 0; i < 768; i++) x[i] = j->x[i] * (1.0f + (float)j->id / 4.0f);
    for (int m = 0; m < 2; m++) {
        korch_session *s = NULL;
        korch_session_options o = korch_session_options_default();
        o.threads = 1; /* libgomp is not instrumented: no OpenMP workers */
        if (korch_session_create(j->model[m], &o, &s) != KORCH_OK) {
            fail(j, "session_create");
            continue;
        }
        /* a thread-specific mistake: the message must be this thread's */
        size_t wrong = 4 * (size_t)(j->id + 1);
        char expect[64];
        snprintf(expect, sizeof expect, "got %zu", wrong);
        if (korch_session_set_input(s, 0, x, wrong) != KORCH_ERR_INVALID_ARGUMENT ||
            !strstr(korch_last_error(), expect))
            fail(j, "thread-local error message");
        if (korch_session_set_input(s, 0, x, sizeof x) != KORCH_OK ||
            korch_session_set_output(s, 0, y, sizeof y) != KORCH_OK ||
            korch_session_set_output(s, 1, pooled, sizeof pooled) != KORCH_OK)
            fail(j, "bind");
        for (int r = 0; r < RUNS && !j->failures; r++) {
            memset(y, 0xA5, sizeof y);
            if (korch_session_run(s) != KORCH_OK) fail(j, "run");
            else if (!api_close(y, j->want_y[j->id], 8)) fail(j, m ? "plan result" : "model result");
        }
        korch_session_destroy(s);
    }
    return NULL;
}

int main(void) {
    char tmp[] = "/tmp/korch_test_threads_XXXXXX";
    if (!mkdtemp(tmp)) return 1;
    char cache[300], model_path[512], xpath[512], plan_path[300];
    snprintf(cache, sizeof cache, "%s/cache", tmp);
    setenv("XDG_CACHE_HOME", cache, 1);
    api_fixture("small_net.onnx", model_path, sizeof model_path);
    api_fixture("small_net.x.npy", xpath, sizeof xpath);
    snprintf(plan_path, sizeof plan_path, "%s/small_net.plan", tmp);
    korch_tensor x = {0};
    CHECK_OK(korch_tensor_file_read(xpath, &x, NULL));
    CHECK_OK(api_make_plan(model_path, plan_path, 1));
    /* expected outputs, one thread at a time, with the reference executor */
    korch_graph *g = NULL;
    CHECK_OK(korch_frontend_load(model_path, NULL, 0, &g));
    korch_tensor want[THREADS][2];
    memset(want, 0, sizeof want);
    float *inputs = malloc(THREADS * 768 * sizeof *inputs);
    for (int t = 0; t < THREADS && g && x.data; t++) {
        for (int i = 0; i < 768; i++) inputs[t * 768 + i] = ((float *)x.data)[i] * (1.0f + (float)t / 4.0f);
        korch_tensor in = x;
        in.data = inputs + t * 768;
        CHECK_OK(korch_reference_run(g, &in, want[t]));
    }
    korch_model *models[2] = {NULL, NULL};
    CHECK_OK(korch_model_load(model_path, &models[0]));
    CHECK_OK(korch_model_load(plan_path, &models[1]));
    if (models[0] && models[1] && want[THREADS - 1][0].data) {
        job jobs[THREADS];
        pthread_t th[THREADS];
        for (int t = 0; t < THREADS; t++) {
            jobs[t] = (job){.id = t, .model = {models[0], models[1]}, .x = x.data};
            for (int u = 0; u < THREADS; u++) jobs[t].want_y[u] = want[u][0].data;
        }
        for (int t = 0; t < THREADS; t++) CHECK(pthread_create(&th[t], NULL, work, &jobs[t]) == 0);
        for (int t = 0; t < THREADS; t++) pthread_join(th[t], NULL);
        for (int t = 0; t < THREADS; t++) CHECK_MSG(jobs[t].failures == 0, "%s", jobs[t].message);
        printf("%d threads x (ONNX session + plan session) x %d runs\n", THREADS, RUNS);
    }
    korch_model_free(models[0]);
    korch_model_free(models[1]);
    for (int t = 0; t < THREADS; t++) {
        korch_tensor_free(&want[t][0]);
        korch_tensor_free(&want[t][1]);
    }
    free(inputs);
    korch_graph_free(g);
    korch_tensor_free(&x);
    char cmd[400];
    snprintf(cmd, sizeof cmd, "rm -rf %s", tmp);
    CHECK(system(cmd) == 0);
    TEST_MAIN_END();
}
