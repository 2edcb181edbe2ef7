/* Resize / Upsample: each coordinate_transformation_mode and nearest_mode
 * on a row x = [0, 10, 20, 30], where a source coordinate c maps to the
 * value 10c (linear) or 10*round(c) (nearest), so expected outputs follow
 * from the spec formulas by hand:
 *   half_pixel          c = (o + 0.5) / scale - 0.5
 *   pytorch_half_pixel  same, but c = 0 when the output length is 1
 *   align_corners       c = o * (in - 1) / (out - 1)
 *   asymmetric          c = o / scale
 *   tf_half_pixel_for_nearest  c = (o + 0.5) / scale
 *   tf_crop_and_resize  c = start*(in-1) + o*(end-start)*(in-1)/(out-1)
 * Coordinates outside [0, in-1] clamp to the edge (extrapolate for tf_crop). */
#include <math.h>

#include "layout_harness.h"

static const float row[4] = {0, 10, 20, 30};

/* Resize-13 of the 1x1x1x4 row to width `out` via sizes. */
static korch_status resize_row(const char *mode, const char *coord, const char *nearest, int64_t out, korch_tensor *y) {
    static int64_t sizes[4];
    int64_t dims[4] = {1, 1, 1, 4}, four = 4;
    sizes[0] = sizes[1] = sizes[2] = 1;
    sizes[3] = out;
    korch_tensor tx = th_tensor(KORCH_DTYPE_FLOAT32, 4, dims, row), ts = th_tensor(KORCH_DTYPE_INT64, 1, &four, sizes);
    th_node n = {.op = "Resize", .opset = 13, .n_attrs = 3,
                 .attrs = {TH_STR("mode", mode), TH_STR("coordinate_transformation_mode", coord),
                           TH_STR("nearest_mode", nearest)},
                 .n_inputs = 4, .inputs = {&tx, NULL, NULL, &ts}, .constant_mask = 0x8, .n_outputs = 1};
    return th_run(&n, y);
}

/* Cubic Resize-13 of the row to width `out`, with cubic_coeff_a and
 * exclude_outside. */
static korch_status cubic_row(const char *coord, float a, int exclude, int64_t out, korch_tensor *y) {
    static int64_t sizes[4];
    int64_t dims[4] = {1, 1, 1, 4}, four = 4;
    sizes[0] = sizes[1] = sizes[2] = 1;
    sizes[3] = out;
    korch_tensor tx = th_tensor(KORCH_DTYPE_FLOAT32, 4, dims, row), ts = th_tensor(KORCH_DTYPE_INT64, 1, &four, sizes);
    th_node n = {.op = "Resize", .opset = 13, .n_attrs = 4,
                 .attrs = {TH_STR("mode", "cubic"), TH_STR("coordinate_transformation_mode", coord),
                           TH_FLOAT("cubic_coeff_a", a), TH_INT("exclude_outside", exclude)},
                 .n_inputs = 4, .inputs = {&tx, NULL, NULL, &ts}, .constant_mask = 0x8, .n_outputs = 1};
    return th_run(&n, y);
}

static void check_row(const char *mode, const char *coord, const char *nearest, int64_t out, const float *want) {
    korch_tensor y;
    korch_status st = resize_row(mode, coord, nearest, out, &y);
    CHECK_MSG(st == KORCH_OK, "%s/%s/%s: %s", mode, coord, nearest, korch_last_error());
    if (st != KORCH_OK) return;
    CHECK_MSG(th_shape_is(&y, 4, (int64_t)1, (int64_t)1, (int64_t)1, out) && th_equal_f32(&y, want, out, 1e-5f),
              "%s/%s/%s to width %lld", mode, coord, nearest, (long long)out);
    korch_tensor_free(&y);
}

int main(void) {
    const char *rpf = "round_prefer_floor";
    /* linear, width 4 -> 8 (scale 2) */
    check_row("linear", "half_pixel", rpf, 8, (const float[]){0, 2.5f, 7.5f, 12.5f, 17.5f, 22.5f, 27.5f, 30});
    check_row("linear", "asymmetric", rpf, 8, (const float[]){0, 5, 10, 15, 20, 25, 30, 30});
    float ac[8];
    for (int o = 0; o < 8; o++) ac[o] = 30.0f * (float)o / 7.0f; /* c = 3o/7 */
    check_row("linear", "align_corners", rpf, 8, ac);
    /* output length 1: pytorch_half_pixel pins c = 0, half_pixel gives
     * c = 0.5 * 4 - 0.5 = 1.5 */
    check_row("linear", "pytorch_half_pixel", rpf, 1, (const float[]){0});
    check_row("linear", "half_pixel", rpf, 1, (const float[]){15});

    /* nearest, half_pixel, scale 2: c = -0.25, 0.25, 0.75, 1.25, ..., 3.25 */
    check_row("nearest", "half_pixel", "round_prefer_floor", 8, (const float[]){0, 0, 10, 10, 20, 20, 30, 30});
    check_row("nearest", "half_pixel", "floor", 8, (const float[]){0, 0, 0, 10, 10, 20, 20, 30});
    check_row("nearest", "half_pixel", "ceil", 8, (const float[]){0, 10, 10, 20, 20, 30, 30, 30});
    /* ties: width 4 -> 2, half_pixel gives c = 0.5 and 2.5 */
    check_row("nearest", "half_pixel", "round_prefer_floor", 2, (const float[]){0, 20});
    check_row("nearest", "half_pixel", "round_prefer_ceil", 2, (const float[]){10, 30});
    /* tf_half_pixel_for_nearest, scale 2: c = 0.25, 0.75, ..., 3.75 */
    check_row("nearest", "tf_half_pixel_for_nearest", rpf, 8, (const float[]){0, 10, 10, 20, 20, 30, 30, 30});
    /* c = 0, 1.5, 3: the tie at 1.5 rounds down */
    check_row("nearest", "align_corners", rpf, 3, (const float[]){0, 10, 30});
    check_row("nearest", "align_corners", "round_prefer_ceil", 3, (const float[]){0, 20, 30});

    korch_tensor y;
    /* cubic, asymmetric, scale 2: even outputs sit on inputs (c = 0, 1, 2,
     * 3: weights 0, 0, 1, 0) and keep them exactly, whatever a is */
    CHECK_OK(cubic_row("asymmetric", -0.75f, 0, 8, &y));
    const float *yc = y.data;
    CHECK(yc[0] == 0 && yc[2] == 10 && yc[4] == 20 && yc[6] == 30);
    korch_tensor_free(&y);
    /* a = -0.5 reproduces a linear function where all four taps are inside:
     * half_pixel c = 1.25 and 1.75 give 12.5 and 17.5 */
    CHECK_OK(cubic_row("half_pixel", -0.5f, 0, 8, &y));
    yc = y.data;
    CHECK(fabsf(yc[3] - 12.5f) < 1e-5f && fabsf(yc[4] - 17.5f) < 1e-5f);
    korch_tensor_free(&y);
    /* exclude_outside at c = -0.25 (taps -2..1, t = 0.75, a = -0.75): the two
     * outside taps drop, the weights 0.87890625 and -0.10546875 of the
     * inputs 0 and 10 renormalise: -1.0546875 / 0.7734375 = -15/11 */
    CHECK_OK(cubic_row("half_pixel", -0.75f, 1, 8, &y));
    CHECK(fabsf(((const float *)y.data)[0] - (-15.0f / 11.0f)) < 1e-5f);
    korch_tensor_free(&y);
    /* without it the taps clamp to the edge: input 0 three times and 10:
     * 10 * -0.10546875 = -1.0546875 */
    CHECK_OK(cubic_row("half_pixel", -0.75f, 0, 8, &y));
    CHECK(fabsf(((const float *)y.data)[0] - -1.0546875f) < 1e-6f);
    korch_tensor_free(&y);
    CHECK(resize_row("linear", "sideways", rpf, 8, &y) != KORCH_OK && th_error_mentions("sideways"));

    /* tf_crop_and_resize on a 1-D tensor, roi [0.5, 1.5], 3 outputs:
     * c = 1.5 + 1.5 o = 1.5, 3, 4.5; 4.5 > 3 is extrapolated */
    int64_t four = 4, one = 1, two = 2, three = 3;
    float roi[2] = {0.5f, 1.5f};
    korch_tensor tx = th_tensor(KORCH_DTYPE_FLOAT32, 1, &four, row), troi = th_tensor(KORCH_DTYPE_FLOAT32, 1, &two, roi),
                 tsz = th_tensor(KORCH_DTYPE_INT64, 1, &one, &three);
    th_node crop = {.op = "Resize", .opset = 11, .n_attrs = 3,
                    .attrs = {TH_STR("mode", "linear"), TH_STR("coordinate_transformation_mode", "tf_crop_and_resize"),
                              TH_FLOAT("extrapolation_value", -1.0f)},
                    .n_inputs = 4, .inputs = {&tx, &troi, NULL, &tsz}, .constant_mask = 0xe, .n_outputs = 1};
    CHECK_OK(th_run(&crop, &y));
    CHECK(th_equal_f32(&y, (const float[]){15, 30, -1}, 3, 1e-5f));
    korch_tensor_free(&y);

    /* bilinear reproduces a linear function exactly: x[r][c] = 20r + 10c,
     * 2x2 -> 4x4 with align_corners samples it at r = i/3, c = j/3 */
    const float sq[4] = {0, 10, 20, 30};
    int64_t d4[4] = {1, 1, 2, 2};
    float scales[4] = {1, 1, 2, 2};
    korch_tensor t2 = th_tensor(KORCH_DTYPE_FLOAT32, 4, d4, sq), tsc = th_tensor(KORCH_DTYPE_FLOAT32, 1, &four, scales);
    th_node bil = {.op = "Resize", .opset = 18, .n_attrs = 2,
                   .attrs = {TH_STR("mode", "linear"), TH_STR("coordinate_transformation_mode", "align_corners")},
                   .n_inputs = 3, .inputs = {&t2, NULL, &tsc}, .constant_mask = 0x4, .n_outputs = 1};
    CHECK_OK(th_run(&bil, &y));
    float want[16];
    for (int i = 0; i < 16; i++) want[i] = 20.0f * (float)(i / 4) / 3.0f + 10.0f * (float)(i % 4) / 3.0f;
    CHECK(th_shape_is(&y, 4, (int64_t)1, (int64_t)1, (int64_t)4, (int64_t)4) && th_equal_f32(&y, want, 16, 1e-5f));
    korch_tensor_free(&y);

    /* Resize-10 and Upsample: asymmetric; nearest floors when upsampling and
     * ceils when downsampling (ONNX Runtime's behaviour). Width 5 -> 3 with
     * scale 0.6: c = 0, 1.67, 3.33 -> 0, 2, 4. */
    const float r5[5] = {0, 10, 20, 30, 40};
    int64_t d5[4] = {1, 1, 1, 5};
    float down[4] = {1, 1, 1, 0.6f}, up[4] = {1, 1, 1, 1.5f};
    korch_tensor t5 = th_tensor(KORCH_DTYPE_FLOAT32, 4, d5, r5), tdown = th_tensor(KORCH_DTYPE_FLOAT32, 1, &four, down),
                 tup = th_tensor(KORCH_DTYPE_FLOAT32, 1, &four, up);
    th_node r10 = {.op = "Resize", .opset = 10, .n_attrs = 1, .attrs = {TH_STR("mode", "nearest")}, .n_inputs = 2,
                   .inputs = {&t5, &tdown}, .constant_mask = 0x2, .n_outputs = 1};
    CHECK_OK(th_run(&r10, &y));
    CHECK(th_equal_f32(&y, (const float[]){0, 20, 40}, 3, 0));
    korch_tensor_free(&y);
    /* width 5 -> 7 with scale 1.5: c = o / 1.5 floored = 0 0 1 2 2 3 4 */
    r10.inputs[1] = &tup;
    CHECK_OK(th_run(&r10, &y));
    CHECK(th_equal_f32(&y, (const float[]){0, 0, 10, 20, 20, 30, 40}, 7, 0));
    korch_tensor_free(&y);
    th_node up7 = {.op = "Upsample", .opset = 7, .n_attrs = 2,
                   .attrs = {TH_STR("mode", "linear"), TH_FLOATS("scales", up, 4)}, .n_inputs = 1, .inputs = {&t5},
                   .n_outputs = 1};
    CHECK_OK(th_run(&up7, &y)); /* c = o / 1.5, clamped at 4 */
    CHECK(th_equal_f32(&y, (const float[]){0, 20.0f / 3, 40.0f / 3, 20, 80.0f / 3, 100.0f / 3, 40}, 7, 1e-5f));
    korch_tensor_free(&y);

    /* nearest moves bytes, so int64 works; opset 18 axes select the axis */
    int64_t xi[4] = {1, 2, 3, INT64_MAX}, axes[1] = {-1}, size6 = 6;
    korch_tensor ti = th_tensor(KORCH_DTYPE_INT64, 1, &four, xi), tsz6 = th_tensor(KORCH_DTYPE_INT64, 1, &one, &size6);
    th_node r18 = {.op = "Resize", .opset = 18, .n_attrs = 3,
                   .attrs = {TH_STR("mode", "nearest"), TH_STR("coordinate_transformation_mode", "asymmetric"),
                             TH_INTS("axes", axes, 1)},
                   .n_inputs = 4, .inputs = {&ti, NULL, NULL, &tsz6}, .constant_mask = 0x8, .n_outputs = 1};
    CHECK_OK(th_run(&r18, &y)); /* c = o * 4/6 = 0, .67, 1.33, 2, 2.67, 3.33 -> 0 1 1 2 3 3 */
    CHECK(th_equal_i64(&y, (const int64_t[]){1, 2, 2, 3, INT64_MAX, INT64_MAX}, 6));
    korch_tensor_free(&y);

    /* nearest 2x3 upsampling of a 2x9x5 int32 image (asymmetric, floor):
     * out[c][i][j] = x[c][i / 2][j / 3] */
    enum { CH = 2, H = 9, W = 5 };
    static int32_t img[CH * H * W];
    for (int i = 0; i < CH * H * W; i++) img[i] = i * 17 % 101;
    int64_t dimg[3] = {CH, H, W};
    float up23[3] = {1, 2, 3};
    korch_tensor timg = th_tensor(KORCH_DTYPE_INT32, 3, dimg, img), tup23 = th_tensor(KORCH_DTYPE_FLOAT32, 1, &three, up23);
    th_node nn = {.op = "Resize", .opset = 13, .n_attrs = 3,
                  .attrs = {TH_STR("mode", "nearest"), TH_STR("coordinate_transformation_mode", "asymmetric"),
                            TH_STR("nearest_mode", "floor")},
                  .n_inputs = 3, .inputs = {&timg, NULL, &tup23}, .constant_mask = 0x4, .n_outputs = 1};
    CHECK_OK(th_run(&nn, &y));
    bool ok = th_shape_is(&y, 3, (int64_t)CH, (int64_t)(2 * H), (int64_t)(3 * W));
    for (int c = 0; ok && c < CH; c++)
        for (int i = 0; i < 2 * H; i++)
            for (int j = 0; j < 3 * W; j++)
                if (((int32_t *)y.data)[(c * 2 * H + i) * 3 * W + j] != img[(c * H + i / 2) * W + j / 3]) ok = false;
    CHECK(ok);
    korch_tensor_free(&y);

    /* linear is float32 only; scales and sizes together are refused */
    r18.attrs[0] = TH_STR("mode", "linear");
    CHECK(th_run(&r18, &y) == KORCH_ERR_UNSUPPORTED && th_error_mentions("float32"));
    th_node both = bil;
    both.n_inputs = 4;
    int64_t sz4[4] = {1, 1, 4, 4};
    korch_tensor tsz4 = th_tensor(KORCH_DTYPE_INT64, 1, &four, sz4);
    both.inputs[3] = &tsz4;
    both.constant_mask = 0xc;
    CHECK(th_run(&both, &y) == KORCH_ERR_INVALID_MODEL && th_error_mentions("exactly one of scales and sizes"));
    float bad_scales[4] = {1, 1, -2, 2};
    korch_tensor tbad = th_tensor(KORCH_DTYPE_FLOAT32, 1, &four, bad_scales);
    bil.inputs[2] = &tbad;
    CHECK(th_run(&bil, &y) == KORCH_ERR_INVALID_MODEL && th_error_mentions("not usable"));
    TEST_MAIN_END();
}
