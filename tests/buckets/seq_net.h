/* Helpers of the shape-bucket C tests on tests/buckets/fixtures/seq_net.onnx
 * (x [1, seq, 8] -> y [1, seq * 16]): a model or plan run at one length,
 * and a bucketed plan's buckets listed and checked against the reference
 * executor. Include after test.h. */
#ifndef KORCH_TESTS_BUCKETS_SEQ_NET_H
#define KORCH_TESTS_BUCKETS_SEQ_NET_H

#include <math.h>
#include <string.h>

#include "test.h"

/* y = the model or plan run at x=1xSEQx8 (input_shapes fixes the model's
 * symbolic length and chooses the plan's bucket) */
static inline korch_status seq_net_run(const char *path, int seq, const char *shapes, const float *x, float *y) {
    korch_model *model = NULL;
    korch_session *session = NULL;
    korch_session_options o = korch_session_options_default();
    o.input_shapes = shapes;
    korch_status st = korch_model_load(path, &model);
    if (st == KORCH_OK) st = korch_session_create(model, &o, &session);
    korch_tensor_info info;
    if (st == KORCH_OK) st = korch_session_input_info(session, 0, &info);
    if (st == KORCH_OK && (info.rank != 3 || info.dims[1] != seq)) st = KORCH_ERR_INTERNAL;
    if (st == KORCH_OK) st = korch_session_set_input(session, 0, x, (size_t)seq * 8 * sizeof *x);
    if (st == KORCH_OK) st = korch_session_set_output(session, 0, y, (size_t)seq * 16 * sizeof *y);
    if (st == KORCH_OK) st = korch_session_run(session);
    korch_session_destroy(session);
    korch_model_free(model);
    return st;
}

/* The plan holds exactly the buckets `want` ("x=1x4x8", ...), in order. */
static inline void seq_net_check_list(const char *plan, int n, const char *const *want) {
    korch_model *m = NULL;
    CHECK_OK(korch_model_load(plan, &m));
    CHECK_MSG(korch_model_bucket_count(m) == n, "%d buckets, expected %d", korch_model_bucket_count(m), n);
    for (int b = 0; m && b < n; b++) {
        const char *shapes = NULL;
        CHECK_OK(korch_model_bucket_shapes(m, b, &shapes));
        CHECK_MSG(shapes && strcmp(shapes, want[b]) == 0, "bucket %d: %s", b, shapes ? shapes : "(null)");
    }
    korch_model_free(m);
}

/* Bucket b (length 4 << b, its shapes want[b]) of the plan against the
 * reference executor on the ONNX model at that length, for each of n. */
static inline void seq_net_check_buckets(const char *plan, const char *model, int n, const char *const *want) {
    for (int b = 0; b < n; b++) {
        int seq = 4 << b;
        float *x = malloc((size_t)seq * 8 * sizeof *x), *y = malloc((size_t)seq * 16 * sizeof *y),
              *ref = malloc((size_t)seq * 16 * sizeof *ref);
        if (!x || !y || !ref) abort();
        for (int i = 0; i < seq * 8; i++) x[i] = (float)((i * 37 + b * 11) % 23) / 7.0f - 1.5f;
        CHECK_OK(seq_net_run(plan, seq, want[b], x, y));
        CHECK_OK(seq_net_run(model, seq, want[b], x, ref));
        double worst = 0, largest = 0;
        for (int i = 0; i < seq * 16; i++) {
            worst = fmax(worst, fabs((double)y[i] - ref[i]));
            largest = fmax(largest, fabs((double)ref[i]));
        }
        CHECK_MSG(largest > 0 && worst <= 1e-6, "bucket %s: max |plan - reference| %g", want[b], worst);
        free(x);
        free(y);
        free(ref);
    }
}

#endif
