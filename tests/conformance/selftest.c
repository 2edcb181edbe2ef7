/* conformance_selftest CONFORMANCE_BINARY TESTDATA: checks that the
 * conformance runner can fail. It builds a small fake test tree from
 * node/test_add (pass, wrong values, wrong shape, values within tolerance, a
 * listed known failure, an unsupported operator) and checks the runner's
 * classification, summary line and exit status, including a stale
 * known-failures list. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "frontend/onnx_load.h"
#include "onnx.pb-c.h"
#include "test.h"

static char root[256];

static void write_bytes(const char *path, const uint8_t *data, size_t size) {
    FILE *f = fopen(path, "wb");
    CHECK_MSG(f && fwrite(data, 1, size, f) == size, "cannot write %s", path);
    if (f) fclose(f);
}

static void copy_file(const char *from, const char *to) {
    uint8_t *data = NULL;
    size_t size = 0;
    CHECK_OK(korch_read_file(from, (size_t)1 << 30, &data, &size));
    if (data) write_bytes(to, data, size);
    free(data);
}

typedef enum { KEEP, PERTURB_BIG, PERTURB_SMALL, FLATTEN } edit;

/* Copies test folder `src` to <root>/data/node/<name>, editing output_0.pb. */
static void make_test(const char *src, const char *name, edit how) {
    char dir[512], from[512], to[600];
    snprintf(dir, sizeof dir, "%s/data/node/%s", root, name);
    mkdir(dir, 0777);
    snprintf(to, sizeof to, "%s/test_data_set_0", dir);
    mkdir(to, 0777);
    const char *files[] = {"model.onnx", "test_data_set_0/input_0.pb", "test_data_set_0/input_1.pb"};
    for (int i = 0; i < 3; i++) {
        snprintf(from, sizeof from, "%s/%s", src, files[i]);
        snprintf(to, sizeof to, "%s/%s", dir, files[i]);
        if (access(from, F_OK) == 0) copy_file(from, to);
    }
    snprintf(from, sizeof from, "%s/test_data_set_0/output_0.pb", src);
    snprintf(to, sizeof to, "%s/test_data_set_0/output_0.pb", dir);
    if (how == KEEP) {
        copy_file(from, to);
        return;
    }
    uint8_t *data = NULL;
    size_t size = 0;
    CHECK_OK(korch_read_file(from, (size_t)1 << 30, &data, &size));
    Onnx__TensorProto *t = data ? onnx__tensor_proto__unpack(NULL, size, data) : NULL;
    free(data);
    CHECK(t && t->has_raw_data && t->raw_data.len >= 8 && t->data_type == 1);
    if (!t) return;
    float *values = (float *)t->raw_data.data;
    if (how == PERTURB_BIG) values[5] += 1e-3f + 1e-3f * values[5]; /* beyond atol 1e-5 + rtol 1e-4 */
    if (how == PERTURB_SMALL) values[5] += 1e-6f;                  /* within atol */
    if (how == FLATTEN) {
        int64_t n = 1;
        for (size_t i = 0; i < t->n_dims; i++) n *= t->dims[i];
        t->dims[0] = n;
        t->n_dims = 1;
    }
    size_t packed_size = onnx__tensor_proto__get_packed_size(t);
    uint8_t *packed = malloc(packed_size);
    onnx__tensor_proto__pack(t, packed);
    write_bytes(to, packed, packed_size);
    free(packed);
    onnx__tensor_proto__free_unpacked(t, NULL);
}

/* Runs the runner; returns its exit status and its stdout in `out`. */
static int run(const char *binary, const char *known, char *out, size_t size) {
    char cmd[2048];
    snprintf(cmd, sizeof cmd, "%s --data %s/data --folders node --known-failures %s/%s 2>&1", binary, root, root, known);
    FILE *p = popen(cmd, "r");
    size_t used = 0;
    if (p) {
        size_t n;
        while (used + 1 < size && (n = fread(out + used, 1, size - 1 - used, p)) > 0) used += n;
    }
    out[used] = '\0';
    int status = p ? pclose(p) : -1;
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

static void write_text(const char *name, const char *text) {
    char path[512];
    snprintf(path, sizeof path, "%s/%s", root, name);
    write_bytes(path, (const uint8_t *)text, strlen(text));
}

#define EXPECT_IN(text, needle) CHECK_MSG(strstr(text, needle) != NULL, "missing \"%s\" in:\n%s", needle, text)

int main(int argc, char **argv) {
    if (argc != 3) {
        fprintf(stderr, "usage: conformance_selftest CONFORMANCE_BINARY TESTDATA\n");
        return 2;
    }
    char node_dir[512];
    snprintf(node_dir, sizeof node_dir, "%s/node", argv[2]);
    if (access(node_dir, R_OK) != 0) TEST_SKIP("%s missing (libonnx-testdata)", node_dir);
    snprintf(root, sizeof root, "/tmp/korch-conformance-selftest-XXXXXX");
    if (!mkdtemp(root)) return 2;
    char path[512], add[512], custom[512];
    snprintf(path, sizeof path, "%s/data", root);
    mkdir(path, 0777);
    snprintf(path, sizeof path, "%s/data/node", root);
    mkdir(path, 0777);
    snprintf(add, sizeof add, "%s/node/test_add", argv[2]);
    /* a preview-domain training operator: korch refuses custom domains by design */
    snprintf(custom, sizeof custom, "%s/node/test_adagrad", argv[2]);

    make_test(add, "test_good", KEEP);
    make_test(add, "test_within_tolerance", PERTURB_SMALL);
    make_test(add, "test_wrong_value", PERTURB_BIG);
    make_test(add, "test_wrong_shape", FLATTEN);
    make_test(add, "test_listed", PERTURB_BIG);
    make_test(custom, "test_custom_domain", KEEP);

    static char out[1 << 16];
    write_text("known1.txt", "# comment\nnode/test_listed  values perturbed on purpose\n");
    int rc = run(argv[1], "known1.txt", out, sizeof out);
    CHECK_MSG(rc == 1, "exit %d with unlisted failures", rc);
    EXPECT_IN(out, "FAIL   node/test_wrong_value: output 0 \"sum\": 1 of 60 elements differ");
    EXPECT_IN(out, "FAIL   node/test_wrong_shape: output 0 \"sum\": shape 3x4x5, want 60");
    EXPECT_IN(out, "KNOWN  node/test_listed");
    EXPECT_IN(out, "conformance: 2 passed, 3 failed, 1 skipped");
    EXPECT_IN(out, "unsupported operator Adagrad (custom domain)");
    CHECK(strstr(out, "test_good") == NULL); /* passes are quiet without -v */

    write_text("known2.txt", "node/test_listed  perturbed\nnode/test_wrong_value  perturbed\n"
                             "node/test_wrong_shape  flattened\n");
    rc = run(argv[1], "known2.txt", out, sizeof out);
    CHECK_MSG(rc == 0, "exit %d when every failure is listed:\n%s", rc, out);

    write_text("known3.txt", "node/test_listed  perturbed\nnode/test_wrong_value  perturbed\n"
                             "node/test_wrong_shape  flattened\nnode/test_good  not really failing\n");
    rc = run(argv[1], "known3.txt", out, sizeof out);
    CHECK_MSG(rc == 1, "exit %d with a listed test that passes", rc);
    EXPECT_IN(out, "XPASS  node/test_good: unexpectedly passed: remove it from the known-failures list");

    write_text("known4.txt", "node/test_listed  perturbed\nnode/test_wrong_value  perturbed\n"
                             "node/test_wrong_shape  flattened\nnode/test_no_such_test  typo\n");
    rc = run(argv[1], "known4.txt", out, sizeof out);
    CHECK_MSG(rc == 1, "exit %d with a stale list entry", rc);
    EXPECT_IN(out, "STALE  node/test_no_such_test");

    write_text("known5.txt", "node/test_listed\n");
    rc = run(argv[1], "known5.txt", out, sizeof out);
    CHECK_MSG(rc == 2, "exit %d for a list entry without a reason", rc);

    char cmd[600];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", root);
    if (system(cmd) != 0) fprintf(stderr, "could not remove %s\n", root);
    TEST_MAIN_END();
}
