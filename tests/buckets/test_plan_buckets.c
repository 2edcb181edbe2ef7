/* Plans with shape buckets (format 4, docs/plan-format.md "Shape buckets")
 * through the C API: `korch optimize --input-shape 'x=1x{4,8,16}x8'` (the
 * CLI of this build, with --estimate: nothing timed) writes one file of
 * three plans for tests/buckets/fixtures/seq_net.onnx (a Reshape whose
 * target comes from Shape(x), then a Softmax over it); the model lists its
 * buckets; a session of each bucket, chosen by input_shapes, matches the
 * reference executor on the ONNX model at that shape; a session without a
 * shape, or with one no bucket has, is refused with the list; a plan of one
 * shape is still format 3 and loads as before; a bucket table with a kernel
 * line missing, a bucket missing, a flipped byte or a cut is refused naming
 * the file. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/crc32c.h"
#include "runtime/plan.h"
#include "test.h"
#include "buckets/seq_net.h"

static char dir[] = "/tmp/korch_plan_buckets_XXXXXX";

static char *read_all(const char *path, size_t *size) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *buf = malloc((size_t)n + 1);
    if (buf && fread(buf, 1, (size_t)n, f) != (size_t)n) {
        free(buf);
        buf = NULL;
    }
    fclose(f);
    *size = (size_t)n;
    return buf;
}

/* A copy of the plan whose text is edited: the bytes [cut, cut + len) of
 * the text removed, the end line kept (its fields as they were, its
 * checksum recomputed: the damage is not caught by the checksum alone) and
 * the sections after it; loaded from memory, the error expected to hold
 * `want` and name the file. */
static void expect_refused(const char *plan, size_t size, size_t cut, size_t len, const char *want, const char *what) {
    size_t text = strlen(plan); /* the text ends at the first NUL */
    size_t start = (text / KORCH_PLAN_ALIGN + 1) * KORCH_PLAN_ALIGN;
    size_t end_at = (size_t)(strstr(plan, "\nend ") - plan) + 1;
    const char *crc_at = strstr(plan + end_at, "crc32c=");
    char *file = malloc(size + 256);
    memcpy(file, plan, cut);
    memcpy(file + cut, plan + cut + len, end_at - cut - len);
    size_t n = end_at - len;
    uint32_t crc = korch_crc32c(0, file, n);
    memcpy(file + n, plan + end_at, (size_t)(crc_at - (plan + end_at)));
    n += (size_t)(crc_at - (plan + end_at));
    n += (size_t)sprintf(file + n, "crc32c=%08x\n", (unsigned)crc);
    size_t new_start = (n / KORCH_PLAN_ALIGN + 1) * KORCH_PLAN_ALIGN;
    memset(file + n, 0, new_start - n);
    memmove(file + new_start, plan + start, size - start);
    korch_plan *loaded = NULL;
    korch_status st = korch_plan_load_memory("cut.plan", (const uint8_t *)file, new_start + (size - start), &loaded);
    CHECK_MSG(st != KORCH_OK, "%s: loaded", what);
    CHECK_MSG(strstr(korch_last_error(), want) != NULL, "%s: %s", what, korch_last_error());
    CHECK_MSG(strstr(korch_last_error(), "\"cut.plan\"") != NULL, "%s does not name the file: %s", what,
              korch_last_error());
    korch_plan_free(loaded);
    free(file);
}

static void check_damage(const char *plan_path) {
    size_t size = 0;
    char *plan = read_all(plan_path, &size);
    CHECK(plan != NULL);
    if (!plan) return;
    /* a kernel line of the second bucket gone, the checksum made right */
    char *b1 = strstr(plan, "\nbucket index=1 ");
    char *k = b1 ? strstr(b1, "\nkernel ") : NULL;
    char *k_end = k ? strchr(k + 1, '\n') : NULL;
    if (k && k_end) {
        /* the end line's total then disagrees as well: the bucket's own count is checked first */
        expect_refused(plan, size, (size_t)(k - plan) + 1, (size_t)(k_end - k), "bucket 2 has",
                       "a kernel line missing");
    }
    /* the last bucket gone (its lines), the checksum made right */
    char *b2 = strstr(plan, "\nbucket index=2 ");
    char *end = strstr(plan, "\nend ");
    if (b2 && end)
        expect_refused(plan, size, (size_t)(b2 - plan) + 1, (size_t)(end - b2),
                       "its bucket table lists 2 of 3 buckets", "a bucket missing");
    /* one byte of the table changed, the checksum left */
    if (b1) {
        char *copy = malloc(size);
        memcpy(copy, plan, size);
        copy[b1 - plan + 1 + strlen("bucket index=1 kernels=")] ^= 1; /* another digit */
        korch_plan *loaded = NULL;
        korch_status st = korch_plan_load_memory("flip.plan", (const uint8_t *)copy, size, &loaded);
        CHECK(st != KORCH_OK);
        CHECK_MSG(strstr(korch_last_error(), "plan \"flip.plan\"") != NULL, "%s", korch_last_error());
        korch_plan_free(loaded);
        free(copy);
    }
    /* the file cut inside the bucket table */
    if (b1) {
        korch_plan *loaded = NULL;
        korch_status st = korch_plan_load_memory("short.plan", (const uint8_t *)plan, (size_t)(b1 - plan) + 20, &loaded);
        CHECK(st != KORCH_OK);
        CHECK_MSG(strstr(korch_last_error(), "plan \"short.plan\"") != NULL &&
                      strstr(korch_last_error(), "truncated") != NULL,
                  "%s", korch_last_error());
        korch_plan_free(loaded);
    }
    free(plan);
}

int main(void) {
    const char *src = getenv("KORCH_SOURCE_DIR"), *build = getenv("KORCH_BUILD_DIR");
    char model[512], cli[512], plan_path[256], single_path[256], command[4096];
    snprintf(model, sizeof model, "%s/tests/buckets/fixtures/seq_net.onnx", src ? src : ".");
    snprintf(cli, sizeof cli, "%s/korch", build ? build : "build");
    if (access(model, R_OK) != 0) TEST_SKIP("%s missing (set KORCH_SOURCE_DIR)", model);
    if (access(cli, X_OK) != 0) TEST_SKIP("%s missing (set KORCH_BUILD_DIR)", cli);
    if (!mkdtemp(dir)) return 1;
    snprintf(plan_path, sizeof plan_path, "%s/seq.plan", dir);
    snprintf(single_path, sizeof single_path, "%s/single.plan", dir);
    snprintf(command, sizeof command,
             "'%s' optimize '%s' --input-shape 'x=1x{4,8,16}x8' -o '%s' --threads 1 --strategy greedy --estimate -q "
             "&& '%s' optimize '%s' --input-shape x=1x8x8 -o '%s' --threads 1 --strategy greedy --estimate -q",
             cli, model, plan_path, cli, model, single_path);
    int rc = system(command);
    CHECK_MSG(rc == 0, "korch optimize exited %d", rc);
    if (rc != 0) TEST_MAIN_END();

    const char *want[3] = {"x=1x4x8", "x=1x8x8", "x=1x16x8"};
    seq_net_check_list(plan_path, 3, want);
    korch_model *m = NULL;
    CHECK_OK(korch_model_load(plan_path, &m));
    const char *none = NULL;
    CHECK(korch_model_bucket_shapes(m, 3, &none) == KORCH_ERR_INVALID_ARGUMENT);
    /* no shape: refused, listing the buckets */
    korch_session *s = NULL;
    CHECK(korch_session_create(m, NULL, &s) == KORCH_ERR_SHAPE && s == NULL);
    CHECK_MSG(strstr(korch_last_error(), "x=1x4x8, x=1x8x8 and x=1x16x8") != NULL, "%s", korch_last_error());
    korch_model_free(m);

    /* each bucket against the reference executor at its shape */
    seq_net_check_buckets(plan_path, model, 3, want);
    /* a shape no bucket holds */
    float x[12 * 8] = {0}, y[12 * 16];
    CHECK(seq_net_run(plan_path, 12, "x=1x12x8", x, y) == KORCH_ERR_SHAPE);
    CHECK_MSG(strstr(korch_last_error(), "has no shape bucket for x=1x12x8") != NULL &&
                  strstr(korch_last_error(), "x=1x4x8, x=1x8x8 and x=1x16x8") != NULL,
              "%s", korch_last_error());

    /* a plan of one shape: format 3 as before, one "bucket" */
    korch_plan *single = NULL;
    CHECK_OK(korch_plan_load(single_path, &single));
    CHECK(single && single->version == KORCH_PLAN_VERSION && single->n_buckets == 0);
    korch_plan_free(single);
    CHECK_OK(korch_model_load(single_path, &m));
    CHECK(korch_model_bucket_count(m) == 1);
    korch_model_free(m);
    float x8[8 * 8], y8[8 * 16], r8[8 * 16];
    for (int i = 0; i < 64; i++) x8[i] = (float)(i % 9) / 4.0f - 1.0f;
    CHECK_OK(seq_net_run(single_path, 8, NULL, x8, y8));
    CHECK_OK(seq_net_run(model, 8, "x=1x8x8", x8, r8));
    for (int i = 0; i < 128; i++) CHECK_NEAR(y8[i], r8[i], 1e-6);

    check_damage(plan_path);
    snprintf(command, sizeof command, "rm -rf '%s'", dir);
    if (system(command) != 0) fprintf(stderr, "could not remove %s\n", dir);
    TEST_MAIN_END();
}
