/* End to end through the command line: korch optimize (each strategy) on an
 * ONNX node test, korch run PLAN, outputs compared with the test's expected
 * outputs; korch explain and korch bench; a changed model is refused.
 * Uses the generated-C backend for real (compiles kernels), with a private
 * profile database and kernel cache. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "io/npy.h"
#include "test.h"

#define NODE_DIR "/usr/share/libonnx-testdata/data/node/"

static char korch[1024], tmp[] = "/tmp/korch_cli_test_XXXXXX";

static int run(const char *fmt, ...) KORCH_PRINTF(1, 2);
static int run(const char *fmt, ...) {
    char cmd[8192];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(cmd, sizeof cmd, fmt, ap);
    va_end(ap);
    int rc = system(cmd);
    return WIFEXITED(rc) ? WEXITSTATUS(rc) : -1;
}

static bool file_contains(const char *path, const char *text) {
    FILE *f = fopen(path, "r");
    if (!f) return false;
    static char buf[1 << 20];
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = '\0';
    return strstr(buf, text) != NULL;
}

/* compares out_dir/<name>.npy with expected .pb files output_0.pb.. */
static void compare_outputs(const char *test_dir, const char *out_dir, int n_outputs, const char *what) {
    for (int i = 0; i < n_outputs; i++) {
        char pb[1024], npy[1400], fname[256];
        snprintf(pb, sizeof pb, "%s/test_data_set_0/output_%d.pb", test_dir, i);
        korch_tensor want = {0}, got = {0};
        char *name = NULL;
        CHECK_OK(korch_tensor_file_read(pb, &want, &name));
        korch_sanitize_filename(name ? name : "", fname, sizeof fname);
        snprintf(npy, sizeof npy, "%s/%s.npy", out_dir, fname);
        CHECK_OK(korch_npy_read(npy, &got));
        CHECK(korch_tensor_numel(&got) == korch_tensor_numel(&want) && got.dtype == want.dtype);
        if (got.data && want.data && got.dtype == KORCH_DTYPE_FLOAT32 &&
            korch_tensor_numel(&got) == korch_tensor_numel(&want)) {
            const float *a = got.data, *b = want.data;
            double worst = 0;
            for (int64_t e = 0; e < korch_tensor_numel(&got); e++) {
                double d = fabs((double)a[e] - (double)b[e]) / (1.0 + fabs((double)b[e]));
                if (!(d <= worst)) worst = d;
            }
            CHECK_MSG(worst < 1e-4, "%s: output %d differs by %g", what, i, worst);
        }
        free(name);
        korch_tensor_free(&want);
        korch_tensor_free(&got);
    }
}

static void test_layer_norm(void) {
    const char *D = NODE_DIR "test_layer_normalization_3d_axis1_epsilon";
    const char *common = "--threads 2 --budget 5 -q";
    char inputs[2048];
    snprintf(inputs, sizeof inputs,
             "--input %s/test_data_set_0/input_0.pb --input %s/test_data_set_0/input_1.pb --input "
             "%s/test_data_set_0/input_2.pb",
             D, D, D);
    /* a private copy of the model, so that it can be changed later */
    CHECK(run("cp %s/model.onnx %s/ln.onnx", D, tmp) == 0);
    static const char *const strategies[] = {"none", "greedy", "optimal"};
    for (int s = 0; s < 3; s++) {
        CHECK(run("%s optimize %s/ln.onnx -o %s/%s.plan --strategy %s --db %s/db --cache-dir %s/cache %s > %s/opt.log "
                  "2>&1",
                  korch, tmp, tmp, strategies[s], strategies[s], tmp, tmp, common, tmp) == 0);
        CHECK(run("%s run %s/%s.plan %s --output-dir %s/out_%s > %s/run.log 2>&1", korch, tmp, strategies[s], inputs,
                  tmp, strategies[s], tmp) == 0);
        char out[1024];
        snprintf(out, sizeof out, "%s/out_%s", tmp, strategies[s]);
        compare_outputs(D, out, 3, strategies[s]);
    }
    /* explain prints every kernel */
    char log[1024];
    snprintf(log, sizeof log, "%s/explain.log", tmp);
    CHECK(run("%s explain %s/optimal.plan > %s 2>&1", korch, tmp, log) == 0);
    CHECK(file_contains(log, "kernel 0:") && file_contains(log, "primitives:") && file_contains(log, "per backend:"));
    /* --bench: same last line as a model run */
    snprintf(log, sizeof log, "%s/bench.log", tmp);
    CHECK(run("%s run %s/optimal.plan --bench 3 > %s 2>/dev/null", korch, tmp, log) == 0);
    CHECK(file_contains(log, "median_ms=") && file_contains(log, "runs=3"));
    /* --profile: per-kernel table and CSV, one row per plan kernel */
    char csv[1024];
    snprintf(csv, sizeof csv, "%s/profile.csv", tmp);
    CHECK(run("%s run %s/optimal.plan --bench 3 --profile --profile-csv %s > %s 2>/dev/null", korch, tmp, csv, log) ==
          0);
    CHECK(file_contains(log, "kernel profile:") && file_contains(log, "all kernels") &&
          file_contains(log, "between kernels") && file_contains(log, "runs=3"));
    CHECK(run("test $(grep -c '^kernel [0-9]*:' %s/explain.log) -ge 1 && "
              "test $(($(wc -l < %s) - 1)) -eq $(grep -c '^kernel [0-9]*:' %s/explain.log)",
              tmp, csv, tmp) == 0);
    CHECK(run("head -1 %s | grep -q '^kernel,backend,in_plan_median_ms,in_plan_min_ms,profile_ms,primitives$'", csv) ==
          0);
    /* it needs --bench, and a plan */
    CHECK(run("%s run %s/optimal.plan --profile > /dev/null 2>&1", korch, tmp) == 2);
    CHECK(run("%s run %s/ln.onnx --bench 1 --profile > /dev/null 2>&1", korch, tmp) == 2);
    /* korch bench: warm database, three strategies, machine-readable last line */
    snprintf(log, sizeof log, "%s/korch_bench.log", tmp);
    CHECK(run("%s bench %s/ln.onnx --runs 3 --check --db %s/db --cache-dir %s/cache --threads 2 --budget 5 > %s 2>&1",
              korch, tmp, tmp, tmp, log) == 0);
    CHECK(file_contains(log, "optimal") && file_contains(log, "greedy") && file_contains(log, "none_ms="));
    /* the model changes: a plan that names it (--no-embed) is refused with a
     * clear message; a self-contained plan (the default) carries its own
     * model and still runs */
    CHECK(run("%s optimize %s/ln.onnx -o %s/named.plan --no-embed --db %s/db --cache-dir %s/cache %s > %s/opt.log 2>&1",
              korch, tmp, tmp, tmp, tmp, common, tmp) == 0);
    CHECK(run("printf x >> %s/ln.onnx", tmp) == 0);
    snprintf(log, sizeof log, "%s/changed.log", tmp);
    CHECK(run("%s run %s/named.plan %s > %s 2>&1", korch, tmp, inputs, log) == 1);
    CHECK(file_contains(log, "has changed"));
    CHECK(run("%s run %s/optimal.plan %s > %s 2>&1", korch, tmp, inputs, log) == 0);
}

int main(void) {
    const char *build = getenv("KORCH_BUILD_DIR");
    if (!build || access(NODE_DIR, R_OK) != 0) TEST_SKIP("needs KORCH_BUILD_DIR and %s (libonnx-testdata)", NODE_DIR);
    snprintf(korch, sizeof korch, "%s/korch", build);
    if (!mkdtemp(tmp)) return 1;
    test_layer_norm();
    if (test_failures == 0) run("rm -rf %s", tmp);
    else printf("logs kept in %s\n", tmp);
    TEST_MAIN_END();
}
