/* The C API runs plans: korch_model_load accepts a plan file, and a session
 * made from it gives the reference executor's results. A plan whose model
 * changed is refused at load. Uses an ONNX node test (LayerNormalization:
 * several primitives, three outputs) and the REF backend. */
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "io/npy.h"
#include "orchestrate/fake_oracle.h"
#include "runtime/plan.h"
#include "test.h"

#define TEST_DIR "/usr/share/libonnx-testdata/data/node/test_layer_normalization_3d_axis1_epsilon"

static char dir[] = "/tmp/korch_session_plan_XXXXXX";

static void copy_file(const char *from, const char *to) {
    FILE *in = fopen(from, "rb"), *out = fopen(to, "wb");
    char buf[4096];
    size_t n;
    while (in && out && (n = fread(buf, 1, sizeof buf, in)) > 0) fwrite(buf, 1, n, out);
    if (in) fclose(in);
    if (out) fclose(out);
}

/* runs a model or plan file on the test's inputs; outputs[i] allocated */
static korch_status run_file(const char *path, korch_tensor *inputs, int n_in, korch_tensor *outputs, int n_out) {
    korch_model *model = NULL;
    korch_session *session = NULL;
    korch_status st = korch_model_load(path, &model);
    if (st == KORCH_OK) st = korch_session_create(model, NULL, &session);
    for (int i = 0; i < n_in && st == KORCH_OK; i++)
        st = korch_session_set_input(session, i, inputs[i].data, korch_tensor_bytes(&inputs[i]));
    for (int i = 0; i < n_out && st == KORCH_OK; i++) {
        korch_tensor_info info;
        st = korch_session_output_info(session, i, &info);
        korch_shape shape = korch_shape_make(info.rank, info.dims);
        if (st == KORCH_OK) st = korch_tensor_alloc(&outputs[i], info.dtype, &shape);
        if (st == KORCH_OK) st = korch_session_set_output(session, i, outputs[i].data, korch_tensor_bytes(&outputs[i]));
    }
    if (st == KORCH_OK) st = korch_session_run(session);
    korch_session_destroy(session);
    korch_model_free(model);
    return st;
}

int main(void) {
    if (access(TEST_DIR "/model.onnx", R_OK) != 0) TEST_SKIP("%s missing (libonnx-testdata)", TEST_DIR);
    if (!mkdtemp(dir)) return 1;
    char model_path[256], plan_path[256];
    snprintf(model_path, sizeof model_path, "%s/ln.onnx", dir);
    snprintf(plan_path, sizeof plan_path, "%s/ln.plan", dir);
    copy_file(TEST_DIR "/model.onnx", model_path);

    /* optimise with modelled latencies on the REF backend (nothing compiled) */
    korch_plan_model m;
    CHECK_OK(korch_plan_model_load(model_path, NULL, 0, &m));
    fake_oracle f = {.seed = 9, .multi_output_factor = 0.3};
    korch_kernel_oracle oracle = fake_oracle_make(&f);
    korch_orchestrate_options o = test_orchestrate_options(1);
    o.candidates.force_backend = KORCH_BACKEND_REF;
    korch_orchestrator *orch = NULL;
    korch_plan *plan = NULL;
    CHECK_OK(korch_orchestrator_create(m.pg, &oracle, &o, KORCH_STRATEGY_OPTIMAL, &orch));
    CHECK_OK(korch_orchestrator_profile(orch));
    CHECK_OK(korch_orchestrator_solve(orch, KORCH_STRATEGY_OPTIMAL, &plan));
    CHECK_OK(korch_plan_set_model(plan, model_path, &m));
    int fused = 0;
    for (int k = 0; plan && k < plan->n_kernels; k++) fused += plan->kernels[k].n_nodes > 1;
    CHECK(fused > 0);
    CHECK_OK(korch_plan_save(plan, plan_path));
    korch_plan_free(plan);
    korch_orchestrator_free(orch);
    korch_plan_model_close(&m);

    korch_tensor in[3] = {0}, want[3] = {0}, got[3] = {0};
    for (int i = 0; i < 3; i++) {
        char p[300];
        snprintf(p, sizeof p, TEST_DIR "/test_data_set_0/input_%d.pb", i);
        CHECK_OK(korch_tensor_file_read(p, &in[i], NULL));
    }
    CHECK_OK(run_file(model_path, in, 3, want, 3));
    CHECK_OK(run_file(plan_path, in, 3, got, 3));
    for (int i = 0; i < 3; i++) {
        bool same = got[i].data && want[i].data && korch_tensor_bytes(&got[i]) == korch_tensor_bytes(&want[i]);
        for (int64_t e = 0; same && e < korch_tensor_numel(&got[i]); e++) {
            float a = ((float *)got[i].data)[e], b = ((float *)want[i].data)[e];
            same = fabsf(a - b) <= 1e-5f * (1.0f + fabsf(b));
        }
        CHECK_MSG(same, "output %d differs from the reference executor", i);
        korch_tensor_free(&got[i]);
        korch_tensor_free(&want[i]);
    }
    /* a changed model: the plan no longer loads */
    FILE *fm = fopen(model_path, "ab");
    fputc('x', fm);
    fclose(fm);
    korch_model *model = NULL;
    CHECK(korch_model_load(plan_path, &model) == KORCH_ERR_INVALID_MODEL);
    CHECK(strstr(korch_last_error(), "has changed") != NULL);
    korch_model_free(model);
    for (int i = 0; i < 3; i++) korch_tensor_free(&in[i]);
    unlink(model_path);
    unlink(plan_path);
    rmdir(dir);
    TEST_MAIN_END();
}
