/* Self-contained plans (docs/plan-format.md): a plan written with its model
 * embedded runs through the C API after the model file is deleted, and
 * gives the reference executor's results; its weights are read in place
 * from the mapped file (aligned, not copied); a damaged byte, a truncated or
 * an extended file is refused with a message naming the plan; a plan tuned
 * on another CPU still runs and is recognised as foreign; the plan's model
 * can be optimised again into a new self-contained plan. Uses
 * tests/api/fixtures/small_net.onnx (Conv, LayerNormalization, MatMul,
 * Softmax; eleven initializers) on the REF backend (nothing compiled). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/crc32c.h"
#include "io/npy.h"
#include "orchestrate/fake_oracle.h"
#include "runtime/plan.h"
#include "test.h"

static char dir[] = "/tmp/korch_plan_embed_XXXXXX";

static void copy_file(const char *from, const char *to) {
    FILE *in = fopen(from, "rb"), *out = fopen(to, "wb");
    char buf[4096];
    size_t n;
    while (in && out && (n = fread(buf, 1, sizeof buf, in)) > 0) fwrite(buf, 1, n, out);
    if (in) fclose(in);
    if (out) fclose(out);
}

static long file_size(const char *path) {
    struct stat sb;
    return stat(path, &sb) == 0 ? (long)sb.st_size : -1;
}

#define MAX_OUT 4

/* runs a model or plan file on one input; out[] allocated (every output) */
static korch_status run_file(const char *path, const korch_tensor *x, korch_tensor *out) {
    korch_model *model = NULL;
    korch_session *session = NULL;
    korch_status st = korch_model_load(path, &model);
    if (st == KORCH_OK) st = korch_session_create(model, NULL, &session);
    if (st == KORCH_OK) st = korch_session_set_input(session, 0, x->data, korch_tensor_bytes(x));
    int n = st == KORCH_OK ? korch_session_output_count(session) : 0;
    for (int i = 0; i < n && i < MAX_OUT && st == KORCH_OK; i++) {
        korch_tensor_info info;
        st = korch_session_output_info(session, i, &info);
        korch_shape shape = korch_shape_make(info.rank, info.dims);
        if (st == KORCH_OK) st = korch_tensor_alloc(&out[i], info.dtype, &shape);
        if (st == KORCH_OK) st = korch_session_set_output(session, i, out[i].data, korch_tensor_bytes(&out[i]));
    }
    if (st == KORCH_OK) st = korch_session_run(session);
    korch_session_destroy(session);
    korch_model_free(model);
    return st;
}

static void check_same(korch_tensor *got, const korch_tensor *want, const char *what) {
    for (int i = 0; i < MAX_OUT && want[i].data; i++) {
        bool same = got[i].data && korch_tensor_bytes(&got[i]) == korch_tensor_bytes(&want[i]);
        for (int64_t e = 0; same && e < korch_tensor_numel(&got[i]); e++) {
            float a = ((float *)got[i].data)[e], b = ((float *)want[i].data)[e];
            same = fabsf(a - b) <= 1e-5f * (1.0f + fabsf(b));
        }
        CHECK_MSG(same, "%s: output %d differs from the reference executor's", what, i);
        korch_tensor_free(&got[i]);
    }
}

/* A plan for m with modelled latencies on the REF backend. */
static korch_plan *make_plan(korch_plan_model *m, const char *model_path) {
    fake_oracle f = {.seed = 5, .multi_output_factor = 0.3};
    korch_kernel_oracle oracle = fake_oracle_make(&f);
    korch_orchestrate_options o = test_orchestrate_options(1);
    o.candidates.force_backend = KORCH_BACKEND_REF;
    korch_orchestrator *orch = NULL;
    korch_plan *plan = NULL;
    CHECK_OK(korch_orchestrator_create(m->pg, &oracle, &o, KORCH_STRATEGY_OPTIMAL, &orch));
    CHECK_OK(korch_orchestrator_profile(orch));
    CHECK_OK(korch_orchestrator_solve(orch, KORCH_STRATEGY_OPTIMAL, &plan));
    if (plan) CHECK_OK(korch_plan_set_model(plan, model_path, m));
    korch_orchestrator_free(orch);
    return plan;
}

/* Writes `bytes` with one change (flip at `pos`, or cut to `size`). */
static void write_damaged(const char *path, const uint8_t *bytes, size_t size, long flip, size_t extra) {
    FILE *f = fopen(path, "wb");
    for (size_t i = 0; i < size; i++) fputc((long)i == flip ? bytes[i] ^ 0x40 : bytes[i], f);
    for (size_t i = 0; i < extra; i++) fputc(0, f);
    fclose(f);
}

static void expect_refused(const char *path, const char *words, const char *what) {
    korch_plan *plan = NULL;
    korch_status st = korch_plan_load(path, &plan);
    CHECK_MSG(st != KORCH_OK && !plan, "%s: accepted", what);
    CHECK_MSG(strstr(korch_last_error(), path) != NULL, "%s: the error does not name the plan: %s", what,
              korch_last_error());
    CHECK_MSG(strstr(korch_last_error(), words) != NULL, "%s: the error lacks \"%s\": %s", what, words,
              korch_last_error());
    korch_plan_free(plan);
    korch_model *model = NULL; /* the C API says the same */
    CHECK_MSG(korch_model_load(path, &model) != KORCH_OK && !model, "%s: korch_model_load accepted it", what);
    korch_model_free(model);
}

static void test_crc32c(void) {
    CHECK(korch_crc32c(0, "123456789", 9) == 0xe3069283u); /* the standard check value */
    CHECK(korch_crc32c(korch_crc32c(0, "1234", 4), "56789", 5) == 0xe3069283u);
    CHECK(korch_crc32c(0, "", 0) == 0);
}

int main(void) {
    test_crc32c();
    const char *src = getenv("KORCH_SOURCE_DIR");
    char fixture[512], input[512];
    snprintf(fixture, sizeof fixture, "%s/tests/api/fixtures/small_net.onnx", src ? src : ".");
    snprintf(input, sizeof input, "%s/tests/api/fixtures/small_net.x.npy", src ? src : ".");
    if (access(fixture, R_OK) != 0) TEST_SKIP("%s missing (set KORCH_SOURCE_DIR)", fixture);
    if (!mkdtemp(dir)) return 1;
    char model_path[256], plan_path[256], ext_path[256], bad_path[256], again_path[256];
    snprintf(model_path, sizeof model_path, "%s/small_net.onnx", dir);
    snprintf(plan_path, sizeof plan_path, "%s/small.plan", dir);
    snprintf(ext_path, sizeof ext_path, "%s/small-external.plan", dir);
    snprintf(bad_path, sizeof bad_path, "%s/bad.plan", dir);
    snprintf(again_path, sizeof again_path, "%s/again.plan", dir);
    copy_file(fixture, model_path);

    korch_tensor x = {0}, want[MAX_OUT] = {0}, got[MAX_OUT] = {0};
    CHECK_OK(korch_tensor_file_read(input, &x, NULL));
    CHECK_OK(run_file(model_path, &x, want));
    CHECK(want[0].data && want[1].data); /* y and pooled */

    korch_plan_model m;
    CHECK_OK(korch_plan_model_load(model_path, NULL, 0, &m));
    korch_plan *plan = make_plan(&m, model_path);
    CHECK(plan != NULL);
    CHECK(plan && plan->machine_cpu[0] != '\0'); /* the tuning machine is recorded */
    CHECK_OK(korch_plan_write(plan, plan_path, &m, model_path, true));
    CHECK_OK(korch_plan_write(plan, ext_path, &m, model_path, false));
    korch_plan_free(plan);
    korch_plan_model_close(&m);
    CHECK(file_size(plan_path) > file_size(ext_path) + 4000); /* conv, fc1 and fc2 weights: 4.6 KB */

    /* the weights are read in place: aligned, inside the mapping, borrowed */
    korch_plan *loaded = NULL;
    CHECK_OK(korch_plan_load(plan_path, &loaded));
    if (loaded) {
        CHECK(loaded->embedded && loaded->version == KORCH_PLAN_VERSION);
        CHECK((uintptr_t)loaded->sections.weights % KORCH_PLAN_ALIGN == 0);
        CHECK(!korch_plan_machine_is_foreign(loaded, NULL, 0));
        korch_graph *g = NULL;
        CHECK_OK(korch_plan_load_graph(loaded, plan_path, &g));
        int borrowed = 0, constants = 0;
        const uint8_t *lo = loaded->sections.weights, *hi = lo + loaded->sections.weights_size;
        for (int v = 0; g && v < g->n_values; v++) {
            const korch_tensor *t = &g->values[v].constant;
            if (!g->values[v].is_constant || !t->data) continue;
            constants++;
            borrowed += !t->owns_data && (const uint8_t *)t->data >= lo && (const uint8_t *)t->data < hi &&
                        (uintptr_t)t->data % KORCH_PLAN_ALIGN == 0;
        }
        CHECK_MSG(constants >= 11 && borrowed == constants, "%d of %d constants read in place", borrowed, constants);
        korch_graph_free(g);
    }

    /* the plan alone: the model is gone */
    unlink(model_path);
    CHECK_OK(run_file(plan_path, &x, got));
    check_same(got, want, "embedded plan, model deleted");
    /* the external form needs its model, and says which */
    korch_model *model = NULL;
    CHECK(korch_model_load(ext_path, &model) != KORCH_OK);
    CHECK(strstr(korch_last_error(), "small_net.onnx") != NULL);
    korch_model_free(model);

    /* damage: every kind is refused with the plan's name */
    FILE *f = fopen(plan_path, "rb");
    size_t size = (size_t)file_size(plan_path);
    uint8_t *bytes = malloc(size);
    CHECK(f && bytes && fread(bytes, 1, size, f) == size);
    if (f) fclose(f);
    if (bytes && loaded) {
        size_t weights = (size_t)(loaded->sections.weights - (const uint8_t *)loaded->sections.map);
        size_t graph = (size_t)(loaded->sections.graph - (const uint8_t *)loaded->sections.map);
        write_damaged(bad_path, bytes, size, (long)(weights + loaded->sections.weights_size / 2), 0);
        expect_refused(bad_path, "weight section", "a byte of the weights flipped");
        write_damaged(bad_path, bytes, size, (long)(graph + 3), 0);
        expect_refused(bad_path, "graph section", "a byte of the graph flipped");
        write_damaged(bad_path, bytes, size, 20, 0);
        expect_refused(bad_path, "plan", "a byte of the text flipped");
        write_damaged(bad_path, bytes, size - 1, -1, 0);
        expect_refused(bad_path, "truncated", "the last byte cut");
        write_damaged(bad_path, bytes, graph + 10, -1, 0);
        expect_refused(bad_path, "truncated", "cut inside the graph");
        write_damaged(bad_path, bytes, size, -1, 64);
        expect_refused(bad_path, "unexpected bytes", "64 bytes appended");
    }
    free(bytes);

    /* tuned elsewhere: still runs, and is foreign */
    if (loaded) {
        snprintf(loaded->machine_cpu, sizeof loaded->machine_cpu, "Imaginary CPU 9000");
        snprintf(loaded->machine_isa, sizeof loaded->machine_isa, "avx512f,amx_tile,imaginary_ext");
        CHECK_OK(korch_plan_save_sections(loaded, bad_path, loaded->sections.graph, loaded->sections.graph_size,
                                          loaded->sections.weights, loaded->sections.weights_size));
        korch_plan *foreign = NULL;
        CHECK_OK(korch_plan_load(bad_path, &foreign));
        char why[512];
        CHECK(foreign && korch_plan_machine_is_foreign(foreign, why, sizeof why));
        CHECK_MSG(foreign && strstr(why, "Imaginary CPU 9000") && strstr(why, "imaginary_ext"), "why: %s", why);
        korch_plan_free(foreign);
        CHECK_OK(run_file(bad_path, &x, got));
        check_same(got, want, "foreign plan");
    }
    korch_plan_free(loaded);

    /* the plan's model optimised again (as on a new machine): a new self-contained plan */
    CHECK_OK(korch_plan_model_load(plan_path, NULL, 0, &m));
    CHECK(m.source != NULL && m.bytes == NULL);
    plan = make_plan(&m, plan_path);
    CHECK(plan && strstr(plan->model_path, "small_net.onnx") != NULL); /* still names the original */
    if (plan) CHECK_OK(korch_plan_write(plan, again_path, &m, plan_path, true));
    korch_plan_free(plan);
    korch_plan_model_close(&m);
    CHECK_OK(run_file(again_path, &x, got));
    check_same(got, want, "a plan made from a plan");

    korch_tensor_free(&x);
    for (int i = 0; i < MAX_OUT; i++) korch_tensor_free(&want[i]);
    unlink(plan_path);
    unlink(ext_path);
    unlink(bad_path);
    unlink(again_path);
    rmdir(dir);
    TEST_MAIN_END();
}
