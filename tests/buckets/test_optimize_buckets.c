/* Shape buckets made through the C API: korch_optimize with input_shapes
 * "x=1x{4,8}x8" (the brace syntax of `korch optimize --input-shape`,
 * src/api/buckets.c) writes one plan file of two buckets for
 * tests/buckets/fixtures/seq_net.onnx (a Reshape whose target comes from
 * Shape(x), then a Softmax over it: each bucket must be optimised from the
 * model specialized to its shape). The log names each bucket; the model
 * lists the two buckets; a session of each, chosen by input_shapes, matches
 * the reference executor on the ONNX model at that shape; a shape no bucket
 * holds is refused; a malformed list, an input listed twice and a name that
 * is not an input are refused naming the input and the specification, with
 * no file written; one value in braces is an ordinary plan. Estimated
 * latencies (nothing timed): the plan does not depend on the machine's load. */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "test.h"
#include "buckets/seq_net.h"

static char dir[] = "/tmp/korch_optimize_buckets_XXXXXX";

typedef struct log_lines {
    int count;
    bool bucket2, summary;
    char last[256];
} log_lines;

static void on_line(void *user, const char *line) {
    log_lines *l = user;
    l->count++;
    l->bucket2 |= strcmp(line, "bucket 2 of 2: x=1x8x8") == 0;
    l->summary |= strncmp(line, "plan: 2 shape buckets written to ", 33) == 0;
    snprintf(l->last, sizeof l->last, "%s", line);
}

static bool contains(const char *hay, const char *needle) { return hay && strstr(hay, needle) != NULL; }

static korch_optimize_options quick(const char *db) {
    korch_optimize_options o = korch_optimize_options_default();
    o.threads = 1;
    o.strategy = "greedy";
    o.estimate = 1;
    o.db_path = db;
    return o;
}

/* A specification refused before anything is written: the error names the
 * input and the specification, and the file is not there. */
static void refused(const char *model, const char *plan, const char *db, const char *spec, const char *want1,
                    const char *want2) {
    korch_optimize_options o = quick(db);
    o.input_shapes = spec;
    korch_status st = korch_optimize(model, plan, &o, NULL);
    CHECK_MSG(st == KORCH_ERR_INVALID_ARGUMENT, "%s: %s (%s)", spec, korch_status_name(st), korch_last_error());
    CHECK_MSG(contains(korch_last_error(), want1) && contains(korch_last_error(), want2), "%s: \"%s\"", spec,
              korch_last_error());
    CHECK_MSG(access(plan, F_OK) != 0, "%s: a plan was written", spec);
}

int main(void) {
    const char *src = getenv("KORCH_SOURCE_DIR");
    char model[512], plan[300], one[300], bad[300], db[300];
    snprintf(model, sizeof model, "%s/tests/buckets/fixtures/seq_net.onnx", src && *src ? src : ".");
    if (access(model, R_OK) != 0) TEST_SKIP("%s missing (set KORCH_SOURCE_DIR)", model);
    if (!mkdtemp(dir)) return 1;
    snprintf(plan, sizeof plan, "%s/seq.plan", dir);
    snprintf(one, sizeof one, "%s/one.plan", dir);
    snprintf(bad, sizeof bad, "%s/bad.plan", dir);
    snprintf(db, sizeof db, "%s/profile.db", dir);

    /* two buckets in one file */
    log_lines lines = {0};
    korch_optimize_options o = quick(db);
    o.input_shapes = "x=1x{4,8}x8";
    o.log = on_line;
    o.log_user = &lines;
    korch_optimize_report r;
    CHECK_OK(korch_optimize(model, plan, &o, &r));
    CHECK_MSG(lines.bucket2 && lines.summary && strncmp(lines.last, "optimize time: ", 15) == 0,
              "%d lines, bucket 2 named: %d, summary: %d, last \"%s\"", lines.count, lines.bucket2, lines.summary,
              lines.last);
    /* the report sums the buckets: each has a kernel or more */
    CHECK(strcmp(r.strategy, "greedy") == 0 && r.kernels >= 2 && r.primitives >= 2 && r.predicted_ms > 0);

    const char *want[2] = {"x=1x4x8", "x=1x8x8"};
    seq_net_check_list(plan, 2, want);
    /* each bucket against the reference executor at its shape */
    seq_net_check_buckets(plan, model, 2, want);
    /* a shape no bucket holds */
    float x16[16 * 8] = {0}, y16[16 * 16];
    CHECK(seq_net_run(plan, 16, "x=1x16x8", x16, y16) == KORCH_ERR_SHAPE);
    CHECK_MSG(contains(korch_last_error(), "no shape bucket for x=1x16x8") &&
                  contains(korch_last_error(), "x=1x4x8 and x=1x8x8"),
              "%s", korch_last_error());

    /* refused, naming the input and the specification */
    refused(model, bad, db, "x=1x{4,a}x8", "x=1x{4,a}x8", "a brace list holds positive numbers");
    refused(model, bad, db, "x=1x{4,8x8", "x=1x{4,8x8", "not closed");
    refused(model, bad, db, "x=1x{16..4}x8", "x=1x{16..4}x8", "end must be above its start");
    refused(model, bad, db, "x=1x{4,8}x8;x=1x{4,8}x8", "input shape x", "given twice");
    refused(model, bad, db, "q=1x{4,8}x8", "\"q\"", "not a graph input");
    CHECK_MSG(contains(korch_last_error(), "bucket 1 of 2 (q=1x4x8)"), "%s", korch_last_error());

    /* one value in braces: an ordinary plan of that shape */
    o = quick(db);
    o.input_shapes = "x=1x{8}x8";
    CHECK_OK(korch_optimize(model, one, &o, NULL));
    korch_model *m = NULL;
    CHECK_OK(korch_model_load(one, &m));
    CHECK(korch_model_bucket_count(m) == 1);
    korch_model_free(m);

    char command[400];
    snprintf(command, sizeof command, "rm -rf '%s'", dir);
    if (system(command) != 0) fprintf(stderr, "could not remove %s\n", dir);
    TEST_MAIN_END();
}
