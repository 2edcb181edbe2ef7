/* LayerNormalization (axis, broadcast Scale/B, Mean/InvStdDev outputs),
 * InstanceNormalization and BatchNormalization (inference, legacy spatial=0,
 * training refused). Expected statistics use the one-pass E[x^2] - E[x]^2
 * formula in long double, a different route from the kernel's two passes. */
#include "op_harness.h"
#include "test.h"

static void check_layer_norm(void) {
    float x[24], scale[12], bias[4] = {0.5f, -0.5f, 1, 0};
    for (int i = 0; i < 24; i++) x[i] = (float)((i * 7) % 10) * 0.3f + (i >= 12 ? 5.0f : 0.0f);
    for (int i = 0; i < 12; i++) scale[i] = 1.0f + 0.1f * (float)i;
    int64_t dx[3] = {2, 3, 4}, ds[2] = {3, 4}, db[1] = {4}, dstat[3] = {2, 1, 1};
    h_input ins[3] = {h_tensor(KORCH_DTYPE_FLOAT32, 3, dx, x), h_tensor(KORCH_DTYPE_FLOAT32, 2, ds, scale),
                      h_tensor(KORCH_DTYPE_FLOAT32, 1, db, bias)};
    h_attr attrs[2] = {H_INT("axis", 1), H_FLOAT("epsilon", 1e-3f)};
    korch_tensor y, mean, inv;
    korch_tensor *outs[3] = {&y, &mean, &inv};
    CHECK_OK(h_run("LayerNormalization", 17, attrs, 2, ins, 3, outs, 3));
    double want[24], want_mean[2], want_inv[2];
    for (int r = 0; r < 2; r++) {
        long double s = 0, sq = 0;
        for (int i = 0; i < 12; i++) s += x[r * 12 + i], sq += (long double)x[r * 12 + i] * x[r * 12 + i];
        long double m = s / 12, var = sq / 12 - m * m;
        want_mean[r] = (double)m;
        want_inv[r] = (double)(1 / sqrtl(var + 1e-3L));
        for (int i = 0; i < 12; i++)
            want[r * 12 + i] = (double)(((long double)x[r * 12 + i] - m) * want_inv[r] * scale[i] + bias[i % 4]);
    }
    CHECK(h_shape_is(&y, 3, dx) && h_close_f32(y.data, want, 24));
    CHECK(h_shape_is(&mean, 3, dstat) && h_close_f32(mean.data, want_mean, 2));
    CHECK(h_shape_is(&inv, 3, dstat) && h_close_f32(inv.data, want_inv, 2));
    korch_tensor_free(&y);
    korch_tensor_free(&mean);
    korch_tensor_free(&inv);

    /* default axis -1, no bias, optional outputs omitted */
    h_input two[2] = {ins[0], h_tensor(KORCH_DTYPE_FLOAT32, 1, db, scale)};
    korch_tensor *only_y[3] = {&y, NULL, NULL};
    CHECK_OK(h_run("LayerNormalization", 17, NULL, 0, two, 2, only_y, 3));
    for (int r = 0; r < 6; r++) {
        long double s = 0, sq = 0;
        for (int i = 0; i < 4; i++) s += x[r * 4 + i], sq += (long double)x[r * 4 + i] * x[r * 4 + i];
        long double m = s / 4, inv_std = 1 / sqrtl(sq / 4 - m * m + 1e-5L);
        for (int i = 0; i < 4; i++) want[r * 4 + i] = (double)(((long double)x[r * 4 + i] - m) * inv_std * scale[i]);
    }
    CHECK(h_close_f32(y.data, want, 24));
    korch_tensor_free(&y);

    /* a Scale that varies over dims before the axis, a bad axis, stash_type, opset */
    int64_t dbad[3] = {2, 1, 1};
    h_input bad[2] = {ins[0], h_tensor(KORCH_DTYPE_FLOAT32, 3, dbad, scale)};
    CHECK(h_run("LayerNormalization", 17, attrs, 1, bad, 2, only_y, 1) == KORCH_ERR_UNSUPPORTED);
    CHECK(strstr(korch_last_error(), "Scale") != NULL);
    h_attr far = H_INT("axis", 3), stash = H_INT("stash_type", 7);
    CHECK(h_run("LayerNormalization", 17, &far, 1, two, 2, only_y, 1) == KORCH_ERR_INVALID_MODEL);
    CHECK(h_run("LayerNormalization", 17, &stash, 1, two, 2, only_y, 1) == KORCH_ERR_UNSUPPORTED);
    CHECK(h_run("LayerNormalization", 16, NULL, 0, two, 2, only_y, 1) == KORCH_ERR_UNSUPPORTED);
}

static void check_instance_norm(void) {
    float x[8] = {1, 2, 3, 4, 2, 2, 2, 2}, scale[2] = {2, 1}, bias[2] = {0, 5};
    int64_t dx[3] = {1, 2, 4}, dc[1] = {2};
    h_input ins[3] = {h_tensor(KORCH_DTYPE_FLOAT32, 3, dx, x), h_tensor(KORCH_DTYPE_FLOAT32, 1, dc, scale),
                      h_tensor(KORCH_DTYPE_FLOAT32, 1, dc, bias)};
    korch_tensor y;
    CHECK_OK(h_run1("InstanceNormalization", 6, NULL, 0, ins, 3, &y));
    /* channel 0: mean 2.5, variance 1.25; channel 1 is constant: just the bias */
    double s = 2 / sqrt(1.25 + 1e-5);
    double want[8] = {-1.5 * s, -0.5 * s, 0.5 * s, 1.5 * s, 5, 5, 5, 5};
    CHECK(h_close_f32(y.data, want, 8));
    korch_tensor_free(&y);
    h_input short_scale[3] = {ins[0], h_tensor(KORCH_DTYPE_FLOAT32, 1, (int64_t[]){1}, scale), ins[2]};
    CHECK(h_run1("InstanceNormalization", 6, NULL, 0, short_scale, 3, &y) == KORCH_ERR_SHAPE);
}

static void check_batch_norm(void) {
    float x[8] = {1, 2, 3, 4, 5, 6, 7, 8};
    float scale[2] = {2, 0.5f}, bias[2] = {1, -1}, mean[2] = {2, 6}, var[2] = {4, 0.25f};
    int64_t dx[3] = {2, 2, 2}, dc[1] = {2};
    h_input ins[5] = {h_tensor(KORCH_DTYPE_FLOAT32, 3, dx, x), h_tensor(KORCH_DTYPE_FLOAT32, 1, dc, scale),
                      h_tensor(KORCH_DTYPE_FLOAT32, 1, dc, bias), h_tensor(KORCH_DTYPE_FLOAT32, 1, dc, mean),
                      h_tensor(KORCH_DTYPE_FLOAT32, 1, dc, var)};
    h_attr eps = H_FLOAT("epsilon", 0.0f);
    korch_tensor y;
    CHECK_OK(h_run1("BatchNormalization", 15, &eps, 1, ins, 5, &y));
    /* x at [n, c, s]: channel 0 -> (x - 2) / 2 * 2 + 1, channel 1 -> (x - 6) / 0.5 * 0.5 - 1 */
    double want[8] = {0, 1, -4, -3, 4, 5, 0, 1};
    CHECK(h_close_f32(y.data, want, 8));
    korch_tensor_free(&y);

    /* training: refused, both ways it can be asked for */
    h_attr training = H_INT("training_mode", 1);
    CHECK(h_run1("BatchNormalization", 15, &training, 1, ins, 5, &y) == KORCH_ERR_UNSUPPORTED);
    CHECK(strstr(korch_last_error(), "training") != NULL);
    korch_tensor running_mean;
    korch_tensor *outs[2] = {&y, &running_mean};
    CHECK(h_run("BatchNormalization", 9, NULL, 0, ins, 5, outs, 2) == KORCH_ERR_UNSUPPORTED);

    /* opset 7 spatial=0: one parameter per (c, s) feature */
    float s4[4] = {1, 2, 3, 4}, z4[4] = {0, 0, 0, 0}, one4[4] = {1, 1, 1, 1};
    int64_t d4[2] = {2, 2};
    h_input feat[5] = {ins[0], h_tensor(KORCH_DTYPE_FLOAT32, 2, d4, s4), h_tensor(KORCH_DTYPE_FLOAT32, 2, d4, z4),
                       h_tensor(KORCH_DTYPE_FLOAT32, 2, d4, z4), h_tensor(KORCH_DTYPE_FLOAT32, 2, d4, one4)};
    h_attr legacy[2] = {H_INT("spatial", 0), H_FLOAT("epsilon", 0.0f)};
    CHECK_OK(h_run1("BatchNormalization", 7, legacy, 2, feat, 5, &y));
    double want_feat[8] = {1, 4, 9, 16, 5, 12, 21, 32};
    CHECK(h_close_f32(y.data, want_feat, 8));
    korch_tensor_free(&y);
    /* the same per-feature parameters are the wrong size at opset 15 */
    CHECK(h_run1("BatchNormalization", 15, &eps, 1, feat, 5, &y) == KORCH_ERR_SHAPE);
}

/* MVN over the default axes [0, 2, 3]: per channel across batch and space. */
static void check_mvn(void) {
    float x[2 * 2 * 1 * 2] = {1, 3, 10, 20, 5, 7, 30, 40};
    int64_t dx[4] = {2, 2, 1, 2};
    h_input in = h_tensor(KORCH_DTYPE_FLOAT32, 4, dx, x);
    korch_tensor y;
    CHECK_OK(h_run1("MeanVarianceNormalization", 13, NULL, 0, &in, 1, &y));
    /* channel 0 holds {1, 3, 5, 7}: mean 4, std sqrt(5); channel 1 {10, 20, 30, 40}: mean 25, std sqrt(125) */
    double s0 = sqrt(5.0), s1 = sqrt(125.0);
    double want[8] = {-3 / s0, -1 / s0, -15 / s1, -5 / s1, 1 / s0, 3 / s0, 5 / s1, 15 / s1};
    CHECK(h_close_f32(y.data, want, 8));
    korch_tensor_free(&y);
    /* explicit axes [-1]: each pair on its own */
    int64_t last[1] = {-1};
    h_attr axes = H_INTS("axes", last, 1);
    CHECK_OK(h_run1("MeanVarianceNormalization", 13, &axes, 1, &in, 1, &y));
    double pair[8] = {-1, 1, -1, 1, -1, 1, -1, 1};
    CHECK(h_close_f32(y.data, pair, 8));
    korch_tensor_free(&y);
    /* the default axes need rank 4 */
    h_input flat = h_tensor(KORCH_DTYPE_FLOAT32, 1, (int64_t[]){8}, x);
    CHECK(h_run1("MeanVarianceNormalization", 13, NULL, 0, &flat, 1, &y) == KORCH_ERR_INVALID_MODEL);
}

int main(void) {
    check_mvn();
    check_layer_norm();
    check_instance_norm();
    check_batch_norm();
    TEST_MAIN_END();
}
