/* The in-process registry of compiled functions (src/backend/cgen/
 * registry.c): a kernel the tuner compiled builds again without the
 * compiler, and computes the same bits as a fresh compile; the registry
 * answers only for the same text, the same compiler and the same flags. */
#include <sys/stat.h>
#include <unistd.h>

#include "backend/cgen/cgen.h"
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

static void quiet_state(void *user, double *probe, double *wait) {
    (void)user;
    *probe = 1.0;
    *wait = 0.0;
}

enum { ROWS = 64, COLS = 256 };

/* Runs k on a fixed input; returns the output (caller frees). */
static float *run(korch_kernel *k) {
    float *x = malloc(sizeof(float) * ROWS * COLS), *y = malloc(sizeof(float) * ROWS * COLS);
    for (int i = 0; i < ROWS * COLS; i++) x[i] = (float)((i * 37) % 101) / 17.0f - 3.0f;
    void *in[1] = {x}, *out[1] = {y};
    CHECK_OK(k->run(k, in, out));
    free(x);
    return y;
}

int main(void) {
    char dir[128], db[160], cache[160], blocked[200];
    snprintf(dir, sizeof dir, "/tmp/korch-test-registry-%d", (int)getpid());
    mkdir(dir, 0755);
    snprintf(db, sizeof db, "%s/profile.db", dir);
    snprintf(cache, sizeof cache, "%s/kernels", dir);
    /* a "cache directory" under a regular file: any compile fails there */
    snprintf(blocked, sizeof blocked, "%s/file/kernels", dir);
    char file[180];
    snprintf(file, sizeof file, "%s/file", dir);
    FILE *f = fopen(file, "w");
    CHECK(f != NULL);
    if (f) fclose(f);
    korch_profile_set_hooks(&(korch_profile_hooks){.state = quiet_state});

    korch_pgraph *a = softmax_graph(ROWS, COLS);
    korch_kernel_spec spec;
    cc_spec_all(a, &spec);
    korch_profile_options opt = {.threads = 2, .db_path = db, .cache_dir = cache, .tune_trials = 4};
    korch_profile_result res;
    korch_cgen_stats st;
    CHECK_OK(korch_cgen_profile(&spec, 1, &opt, &res, &st));
    CHECK(res.status == KORCH_OK && st.compiled >= 1);
    const char *sched[1] = {res.schedule};

    /* the tuned schedule builds where nothing can compile: from the registry */
    korch_profile_options no_cc = opt;
    no_cc.cache_dir = blocked;
    korch_kernel *reg = NULL, *fresh = NULL;
    CHECK_MSG(korch_backend_build(KORCH_BACKEND_CGEN, &spec, sched, 1, &no_cc, &reg) == KORCH_OK,
              "the tuned kernel was compiled again: %s", korch_last_error());
    korch_error_clear();

    /* other flags: another function, so a compile (which fails there) */
    korch_profile_options o2 = no_cc;
    o2.cc_opt = "-O2";
    korch_kernel *k2 = NULL;
    CHECK(korch_backend_build(KORCH_BACKEND_CGEN, &spec, sched, 1, &o2, &k2) != KORCH_OK && k2 == NULL);
    korch_error_clear();

    /* the same bits as the function compiled afresh */
    cg_registry_clear();
    CHECK(korch_backend_build(KORCH_BACKEND_CGEN, &spec, sched, 1, &no_cc, &fresh) != KORCH_OK);
    korch_error_clear();
    korch_profile_options clean = opt;
    char cache2[200];
    snprintf(cache2, sizeof cache2, "%s/fresh", dir);
    clean.cache_dir = cache2;
    CHECK_OK(korch_backend_build(KORCH_BACKEND_CGEN, &spec, sched, 1, &clean, &fresh));
    if (reg && fresh) {
        float *y1 = run(reg), *y2 = run(fresh);
        CHECK(memcmp(y1, y2, sizeof(float) * ROWS * COLS) == 0);
        free(y1);
        free(y2);
    }

    /* the text itself: one character more or another name is not found */
    char *source = NULL;
    CHECK_OK(korch_cgen_source(&spec, res.schedule, &opt, &source));
    cg_buf prelude = {0};
    cg_emit_prelude(&prelude);
    const char *fn = source + prelude.len;
    size_t len = strlen(fn);
    const char *name = strstr(fn, "korch_k");
    char fname[64] = {0};
    for (int i = 0; name && i < 63 && (name[i] == '_' || (name[i] >= '0' && name[i] <= '9') ||
                                       (name[i] >= 'a' && name[i] <= 'z'));
         i++)
        fname[i] = name[i];
    CHECK(strncmp(source, prelude.data, prelude.len) == 0 && fname[0]);
    cg_library *lib = cg_registry_find(fn, len, &clean, fname);
    CHECK_MSG(lib != NULL, "%s: not found after a build", fname);
    cg_library_release(lib);
    CHECK(cg_registry_find(fn, len - 1, &clean, fname) == NULL);
    CHECK(cg_registry_find(fn, len, &o2, fname) == NULL);
    CHECK(cg_registry_find(fn, len, &clean, "korch_k_other") == NULL);
    cg_buf_free(&prelude);
    free(source);

    korch_kernel_destroy(reg);
    korch_kernel_destroy(fresh);
    cg_registry_clear();
    cc_spec_free(&spec);
    korch_pgraph_free(a);
    char cmd[240];
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    CHECK(system(cmd) == 0);
    TEST_MAIN_END();
}
