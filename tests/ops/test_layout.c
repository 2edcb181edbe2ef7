/* The data-movement operators against naive index loops written from the
 * ONNX definitions: Transpose, Concat, Split, Gather, Expand, Tile,
 * DepthToSpace/SpaceToDepth, and the shape-only ops' validation. */
#include "layout_harness.h"

static korch_tensor f32(int rank, const int64_t *dims, float *data) {
    return th_tensor(KORCH_DTYPE_FLOAT32, rank, dims, data);
}

static void test_transpose(void) {
    /* 2x3x4x5 with distinct values, every kind of permutation */
    enum { N = 120 };
    float x[N];
    for (int i = 0; i < N; i++) x[i] = (float)i;
    int64_t d[4] = {2, 3, 4, 5}, s[4] = {60, 20, 5, 1};
    korch_tensor tx = f32(4, d, x);
    static const int64_t perms[][4] = {{0, 1, 2, 3}, {3, 2, 1, 0}, {0, 2, 3, 1}, {1, 0, 3, 2}, {2, 0, 1, 3}};
    for (int p = 0; p < 5; p++) {
        th_node n = {.op = "Transpose", .opset = 13, .n_attrs = 1, .attrs = {TH_INTS("perm", perms[p], 4)},
                     .n_inputs = 1, .inputs = {&tx}, .n_outputs = 1};
        korch_tensor y;
        CHECK_OK(th_run(&n, &y));
        float want[N];
        int64_t od[4];
        for (int k = 0; k < 4; k++) od[k] = d[perms[p][k]];
        int at = 0;
        for (int64_t a = 0; a < od[0]; a++)
            for (int64_t b = 0; b < od[1]; b++)
                for (int64_t c = 0; c < od[2]; c++)
                    for (int64_t e = 0; e < od[3]; e++) {
                        int64_t idx[4] = {a, b, c, e}, src = 0;
                        for (int k = 0; k < 4; k++) src += idx[k] * s[perms[p][k]];
                        want[at++] = x[src];
                    }
        CHECK_MSG(th_shape_is(&y, 4, od[0], od[1], od[2], od[3]) && th_equal_f32(&y, want, N, 0), "perm %d", p);
        korch_tensor_free(&y);
    }
    /* default perm reverses; int8 data moves byte by byte */
    int8_t b[6] = {1, 2, 3, 4, 5, 6};
    int64_t d23[2] = {2, 3};
    korch_tensor tb = th_tensor(KORCH_DTYPE_INT8, 2, d23, b), y;
    th_node n = {.op = "Transpose", .opset = 1, .n_inputs = 1, .inputs = {&tb}, .n_outputs = 1};
    CHECK_OK(th_run(&n, &y));
    CHECK(th_shape_is(&y, 2, (int64_t)3, (int64_t)2) && memcmp(y.data, (const int8_t[]){1, 4, 2, 5, 3, 6}, 6) == 0);
    korch_tensor_free(&y);
    int64_t bad[4] = {0, 1, 1, 3};
    th_node nb = {.op = "Transpose", .opset = 13, .n_attrs = 1, .attrs = {TH_INTS("perm", bad, 4)}, .n_inputs = 1,
                  .inputs = {&tx}, .n_outputs = 1};
    CHECK(th_run(&nb, &y) == KORCH_ERR_INVALID_MODEL && th_error_mentions("not a permutation"));
}

/* Shapes larger than the copy kernel's 32x32 tiles, with ragged edges and
 * enough elements to run threaded, for 1-, 4- and 8-byte elements. */
static void test_transpose_large(void) {
    enum { A = 3, B = 37, C = 301, N = A * B * C }; /* N > the kernels' 32768-element threading threshold */
    static const int64_t perms[][3] = {{0, 2, 1}, {2, 1, 0}, {1, 2, 0}, {2, 0, 1}, {1, 0, 2}};
    static const korch_dtype types[3] = {KORCH_DTYPE_UINT8, KORCH_DTYPE_INT32, KORCH_DTYPE_INT64};
    int64_t d[3] = {A, B, C}, s[3] = {B * C, C, 1};
    static uint8_t x[N * 8], want[N * 8];
    for (int i = 0; i < N * 8; i++) x[i] = (uint8_t)(i * 7 + i / 251);
    for (int t = 0; t < 3; t++) {
        size_t es = korch_dtype_size(types[t]);
        korch_tensor tx = th_tensor(types[t], 3, d, x);
        for (int p = 0; p < 5; p++) {
            th_node n = {.op = "Transpose", .opset = 13, .n_attrs = 1, .attrs = {TH_INTS("perm", perms[p], 3)},
                         .n_inputs = 1, .inputs = {&tx}, .n_outputs = 1};
            korch_tensor y;
            CHECK_OK(th_run(&n, &y));
            int64_t od[3] = {d[perms[p][0]], d[perms[p][1]], d[perms[p][2]]};
            int at = 0;
            for (int64_t i = 0; i < od[0]; i++)
                for (int64_t j = 0; j < od[1]; j++)
                    for (int64_t k = 0; k < od[2]; k++, at++) {
                        int64_t src = i * s[perms[p][0]] + j * s[perms[p][1]] + k * s[perms[p][2]];
                        memcpy(want + (size_t)at * es, x + (size_t)src * es, es);
                    }
            CHECK_MSG(korch_tensor_numel(&y) == N && memcmp(y.data, want, N * es) == 0, "dtype %s perm %d",
                      korch_dtype_name(types[t]), p);
            korch_tensor_free(&y);
        }
    }
}

static void test_concat_split(void) {
    /* concat along axis -1 of 2x1, 2x0 and 2x2 */
    float a[2] = {1, 2}, c[4] = {3, 4, 5, 6};
    int64_t da[2] = {2, 1}, db[2] = {2, 0}, dc[2] = {2, 2};
    korch_tensor ta = f32(2, da, a), tb = f32(2, db, a), tc = f32(2, dc, c), y;
    th_node n = {.op = "Concat", .opset = 13, .n_attrs = 1, .attrs = {TH_INT("axis", -1)}, .n_inputs = 3,
                 .inputs = {&ta, &tb, &tc}, .n_outputs = 1};
    CHECK_OK(th_run(&n, &y));
    CHECK(th_shape_is(&y, 2, (int64_t)2, (int64_t)3) && th_equal_f32(&y, (const float[]){1, 3, 4, 2, 5, 6}, 6, 0));
    korch_tensor_free(&y);
    n.attrs[0] = TH_INT("axis", 0);
    CHECK(th_run(&n, &y) == KORCH_ERR_SHAPE && th_error_mentions("does not match"));
    n.attrs[0] = TH_INT("axis", 2);
    CHECK(th_run(&n, &y) == KORCH_ERR_INVALID_MODEL && th_error_mentions("out of range"));

    /* Split-18 num_outputs=3 of 7: parts 3, 3, 1 */
    float x[7] = {0, 1, 2, 3, 4, 5, 6};
    int64_t seven = 7;
    korch_tensor tx = f32(1, &seven, x), ys[3];
    th_node s = {.op = "Split", .opset = 18, .n_attrs = 1, .attrs = {TH_INT("num_outputs", 3)}, .n_inputs = 1,
                 .inputs = {&tx}, .n_outputs = 3};
    CHECK_OK(th_run(&s, ys));
    CHECK(th_equal_f32(&ys[0], x, 3, 0) && th_equal_f32(&ys[1], x + 3, 3, 0) && th_equal_f32(&ys[2], x + 6, 1, 0));
    for (int k = 0; k < 3; k++) korch_tensor_free(&ys[k]);
    /* Split-13 sizes input 2, 0, 5; sizes not summing to 7 fail */
    int64_t three = 3, sizes[3] = {2, 0, 5}, wrong[3] = {2, 2, 2};
    korch_tensor tsz = th_tensor(KORCH_DTYPE_INT64, 1, &three, sizes);
    th_node s13 = {.op = "Split", .opset = 13, .n_inputs = 2, .inputs = {&tx, &tsz}, .constant_mask = 0x2,
                   .n_outputs = 3};
    CHECK_OK(th_run(&s13, ys));
    CHECK(th_equal_f32(&ys[0], x, 2, 0) && ys[1].shape.dims[0] == 0 && th_equal_f32(&ys[2], x + 2, 5, 0));
    for (int k = 0; k < 3; k++) korch_tensor_free(&ys[k]);
    tsz.data = wrong;
    CHECK(th_run(&s13, ys) == KORCH_ERR_SHAPE && th_error_mentions("sums to 6"));
    /* before opset 18, equal parts must divide the axis */
    th_node s11 = {.op = "Split", .opset = 11, .n_inputs = 1, .inputs = {&tx}, .n_outputs = 3};
    CHECK(th_run(&s11, ys) == KORCH_ERR_SHAPE && th_error_mentions("equal parts"));
}

static void test_gather(void) {
    /* 3x2 data, axis 0, 2x2 indices with negatives: out[i][j][k] = x[idx[i][j]][k] */
    float x[6] = {1, 2, 3, 4, 5, 6};
    int64_t d[2] = {3, 2}, di[2] = {2, 2};
    int32_t idx[4] = {-1, 0, 1, -3};
    korch_tensor tx = f32(2, d, x), ti = th_tensor(KORCH_DTYPE_INT32, 2, di, idx), y;
    th_node n = {.op = "Gather", .opset = 13, .n_inputs = 2, .inputs = {&tx, &ti}, .n_outputs = 1};
    CHECK_OK(th_run(&n, &y));
    CHECK(th_shape_is(&y, 3, (int64_t)2, (int64_t)2, (int64_t)2));
    CHECK(th_equal_f32(&y, (const float[]){5, 6, 1, 2, 3, 4, 1, 2}, 8, 0));
    korch_tensor_free(&y);
    /* scalar index along axis 1 drops the axis: x[:, 1] */
    int64_t one_idx = -1;
    korch_tensor ts = th_tensor(KORCH_DTYPE_INT64, 0, NULL, &one_idx);
    th_node n1 = {.op = "Gather", .opset = 13, .n_attrs = 1, .attrs = {TH_INT("axis", 1)}, .n_inputs = 2,
                  .inputs = {&tx, &ts}, .n_outputs = 1};
    CHECK_OK(th_run(&n1, &y));
    CHECK(th_shape_is(&y, 1, (int64_t)3) && th_equal_f32(&y, (const float[]){2, 4, 6}, 3, 0));
    korch_tensor_free(&y);
    /* out of range: refused at run time for data indices, at inference for constants */
    idx[3] = 3;
    CHECK(th_run(&n, &y) == KORCH_ERR_RUNTIME && th_error_mentions("out of range"));
    n.constant_mask = 0x2;
    CHECK(th_run(&n, &y) == KORCH_ERR_INVALID_MODEL && th_error_mentions("index 3"));
}

static void test_expand_tile(void) {
    /* expand 3x1 to (2, 1, 4): bidirectional, the target's 1 keeps the 3 */
    float x[3] = {1, 2, 3};
    int64_t d[2] = {3, 1}, three = 3, shape[3] = {2, 1, 4};
    korch_tensor tx = f32(2, d, x), ts = th_tensor(KORCH_DTYPE_INT64, 1, &three, shape), y;
    th_node n = {.op = "Expand", .opset = 13, .n_inputs = 2, .inputs = {&tx, &ts}, .constant_mask = 0x2,
                 .n_outputs = 1};
    CHECK_OK(th_run(&n, &y));
    CHECK(th_shape_is(&y, 3, (int64_t)2, (int64_t)3, (int64_t)4));
    float want[24];
    for (int i = 0; i < 24; i++) want[i] = x[(i / 4) % 3];
    CHECK(th_equal_f32(&y, want, 24, 0));
    korch_tensor_free(&y);
    shape[2] = 5;
    shape[1] = 2; /* 3 vs 2 */
    CHECK(th_run(&n, &y) == KORCH_ERR_SHAPE && th_error_mentions("cannot expand"));

    /* tile 3x1 by (2, 3): out[i][j] = x[i % 3][j % 1] */
    int64_t two = 2, reps[2] = {2, 3};
    korch_tensor tr = th_tensor(KORCH_DTYPE_INT64, 1, &two, reps);
    th_node t = {.op = "Tile", .opset = 13, .n_inputs = 2, .inputs = {&tx, &tr}, .constant_mask = 0x2, .n_outputs = 1};
    CHECK_OK(th_run(&t, &y));
    for (int i = 0; i < 18; i++) want[i] = x[(i / 3) % 3];
    CHECK(th_shape_is(&y, 2, (int64_t)6, (int64_t)3) && th_equal_f32(&y, want, 18, 0));
    korch_tensor_free(&y);
    reps[1] = -1;
    CHECK(th_run(&t, &y) == KORCH_ERR_INVALID_MODEL && th_error_mentions("repeats"));
}

static void test_depth_space(void) {
    /* N=1, C=8, H=2, W=3, blocksize 2 -> C'=2, 4x6 */
    enum { C = 8, H = 2, W = 3, B = 2, CO = C / (B * B) };
    float x[C * H * W];
    for (int i = 0; i < C * H * W; i++) x[i] = (float)i;
    int64_t d[4] = {1, C, H, W};
    korch_tensor tx = f32(4, d, x), y, back;
    for (int crd = 0; crd < 2; crd++) {
        th_node n = {.op = "DepthToSpace", .opset = 13, .n_attrs = 2,
                     .attrs = {TH_INT("blocksize", B), TH_STR("mode", crd ? "CRD" : "DCR")}, .n_inputs = 1,
                     .inputs = {&tx}, .n_outputs = 1};
        CHECK_OK(th_run(&n, &y));
        float want[C * H * W];
        for (int c = 0; c < CO; c++)
            for (int oh = 0; oh < H * B; oh++)
                for (int ow = 0; ow < W * B; ow++) {
                    int i = oh % B, j = ow % B, h = oh / B, w = ow / B;
                    int src_c = crd ? c * B * B + i * B + j : (i * B + j) * CO + c;
                    want[(c * H * B + oh) * W * B + ow] = x[(src_c * H + h) * W + w];
                }
        CHECK_MSG(th_shape_is(&y, 4, (int64_t)1, (int64_t)CO, (int64_t)(H * B), (int64_t)(W * B)) &&
                      th_equal_f32(&y, want, C * H * W, 0),
                  "%s", crd ? "CRD" : "DCR");
        /* SpaceToDepth with the same mode undoes it */
        th_node s = {.op = "SpaceToDepth", .opset = 13, .n_attrs = 2,
                     .attrs = {TH_INT("blocksize", B), TH_STR("mode", crd ? "CRD" : "DCR")}, .n_inputs = 1,
                     .inputs = {&y}, .n_outputs = 1};
        CHECK_OK(th_run(&s, &back));
        CHECK(th_equal_f32(&back, x, C * H * W, 0));
        korch_tensor_free(&back);
        korch_tensor_free(&y);
    }
    th_node bad = {.op = "DepthToSpace", .opset = 13, .n_attrs = 1, .attrs = {TH_INT("blocksize", 3)}, .n_inputs = 1,
                   .inputs = {&tx}, .n_outputs = 1};
    CHECK(th_run(&bad, &y) == KORCH_ERR_SHAPE && th_error_mentions("divisible"));
    bad.attrs[0] = TH_INT("blocksize", 0);
    CHECK(th_run(&bad, &y) == KORCH_ERR_INVALID_MODEL && th_error_mentions("blocksize"));
    bad.attrs[0] = TH_INT("blocksize", (int64_t)1 << 40);
    CHECK(th_run(&bad, &y) != KORCH_OK);
}

static void test_shape_only(void) {
    float x[6] = {1, 2, 3, 4, 5, 6};
    int64_t d[4] = {1, 2, 1, 3}, one = 1, y_axes[2] = {-2, 0};
    korch_tensor tx = f32(4, d, x), y;
    /* Squeeze-13 axes input; squeezing a non-1 axis fails */
    korch_tensor ta = th_tensor(KORCH_DTYPE_INT64, 1, (const int64_t[]){2}, y_axes);
    th_node sq = {.op = "Squeeze", .opset = 13, .n_inputs = 2, .inputs = {&tx, &ta}, .constant_mask = 0x2,
                  .n_outputs = 1};
    CHECK_OK(th_run(&sq, &y));
    CHECK(th_shape_is(&y, 2, (int64_t)2, (int64_t)3) && th_equal_f32(&y, x, 6, 0));
    korch_tensor_free(&y);
    y_axes[0] = 1;
    CHECK(th_run(&sq, &y) == KORCH_ERR_SHAPE && th_error_mentions("cannot squeeze"));
    /* Squeeze-11 without axes drops every 1 */
    th_node sq11 = {.op = "Squeeze", .opset = 11, .n_inputs = 1, .inputs = {&tx}, .n_outputs = 1};
    CHECK_OK(th_run(&sq11, &y));
    CHECK(th_shape_is(&y, 2, (int64_t)2, (int64_t)3));
    korch_tensor_free(&y);
    /* Unsqueeze-11 axes index the output: [-1, 0] on 2x3 gives 1x2x3x1 */
    int64_t u_axes[2] = {-1, 0}, d23[2] = {2, 3};
    korch_tensor t23 = f32(2, d23, x);
    th_node un = {.op = "Unsqueeze", .opset = 11, .n_attrs = 1, .attrs = {TH_INTS("axes", u_axes, 2)}, .n_inputs = 1,
                  .inputs = {&t23}, .n_outputs = 1};
    CHECK_OK(th_run(&un, &y));
    CHECK(th_shape_is(&y, 4, (int64_t)1, (int64_t)2, (int64_t)3, (int64_t)1));
    korch_tensor_free(&y);
    u_axes[0] = 4;
    CHECK(th_run(&un, &y) == KORCH_ERR_INVALID_MODEL && th_error_mentions("out of range"));
    u_axes[0] = 0;
    CHECK(th_run(&un, &y) == KORCH_ERR_INVALID_MODEL && th_error_mentions("repeated"));
    /* Flatten axis -1 of 1x2x1x3 -> 2x3; axis 4 -> 6x1; axis 5 fails */
    th_node fl = {.op = "Flatten", .opset = 13, .n_attrs = 1, .attrs = {TH_INT("axis", -1)}, .n_inputs = 1,
                  .inputs = {&tx}, .n_outputs = 1};
    CHECK_OK(th_run(&fl, &y));
    CHECK(th_shape_is(&y, 2, (int64_t)2, (int64_t)3));
    korch_tensor_free(&y);
    fl.attrs[0] = TH_INT("axis", 4);
    CHECK_OK(th_run(&fl, &y));
    CHECK(th_shape_is(&y, 2, (int64_t)6, (int64_t)1));
    korch_tensor_free(&y);
    fl.attrs[0] = TH_INT("axis", 5);
    CHECK(th_run(&fl, &y) == KORCH_ERR_INVALID_MODEL);
    fl.opset = 9;
    fl.attrs[0] = TH_INT("axis", -1); /* negative axes arrived at opset 11 */
    CHECK(th_run(&fl, &y) == KORCH_ERR_INVALID_MODEL);
    /* Reshape: 0 copies a dim unless allowzero; 0 with -1 and allowzero fails */
    int64_t spec[3] = {0, -1, 1}, three = 3;
    korch_tensor ts = th_tensor(KORCH_DTYPE_INT64, 1, &three, spec);
    th_node rs = {.op = "Reshape", .opset = 14, .n_inputs = 2, .inputs = {&tx, &ts}, .constant_mask = 0x2,
                  .n_outputs = 1};
    CHECK_OK(th_run(&rs, &y));
    CHECK(th_shape_is(&y, 3, (int64_t)1, (int64_t)6, (int64_t)1) && th_equal_f32(&y, x, 6, 0));
    korch_tensor_free(&y);
    rs.n_attrs = 1;
    rs.attrs[0] = TH_INT("allowzero", 1);
    CHECK(th_run(&rs, &y) == KORCH_ERR_SHAPE && th_error_mentions("both 0 and -1"));
    spec[0] = 4, spec[1] = 2, spec[2] = 1;
    rs.n_attrs = 0;
    CHECK(th_run(&rs, &y) == KORCH_ERR_SHAPE && th_error_mentions("element counts differ"));
    /* Shape-15 start/end and Size are computed by inference */
    th_node sh = {.op = "Shape", .opset = 15, .n_attrs = 2, .attrs = {TH_INT("start", -3), TH_INT("end", 100)},
                  .n_inputs = 1, .inputs = {&tx}, .n_outputs = 1};
    CHECK_OK(th_run(&sh, &y));
    CHECK(th_equal_i64(&y, (const int64_t[]){2, 1, 3}, 3));
    korch_tensor_free(&y);
    th_node sz = {.op = "Size", .opset = 13, .n_inputs = 1, .inputs = {&tx}, .n_outputs = 1};
    CHECK_OK(th_run(&sz, &y));
    CHECK(y.shape.rank == 0 && th_equal_i64(&y, (const int64_t[]){6}, 1));
    korch_tensor_free(&y);
    (void)one;
}

static void test_generators(void) {
    /* Range int32 10 down to 3 by -3: 10, 7, 4; float 1 to 2 by 0.25 */
    int32_t s = 10, l = 3, dl = -3;
    korch_tensor ts = th_tensor(KORCH_DTYPE_INT32, 0, NULL, &s), tl = th_tensor(KORCH_DTYPE_INT32, 0, NULL, &l),
                 td = th_tensor(KORCH_DTYPE_INT32, 0, NULL, &dl), y;
    th_node r = {.op = "Range", .opset = 11, .n_inputs = 3, .inputs = {&ts, &tl, &td}, .constant_mask = 0x7,
                 .n_outputs = 1};
    CHECK_OK(th_run(&r, &y));
    CHECK(y.dtype == KORCH_DTYPE_INT32 && th_shape_is(&y, 1, (int64_t)3) &&
          memcmp(y.data, (const int32_t[]){10, 7, 4}, 12) == 0);
    korch_tensor_free(&y);
    float fs = 1, fl = 2, fd = 0.25f;
    korch_tensor tfs = th_tensor(KORCH_DTYPE_FLOAT32, 0, NULL, &fs), tfl = th_tensor(KORCH_DTYPE_FLOAT32, 0, NULL, &fl),
                 tfd = th_tensor(KORCH_DTYPE_FLOAT32, 0, NULL, &fd);
    th_node rf = {.op = "Range", .opset = 11, .n_inputs = 3, .inputs = {&tfs, &tfl, &tfd}, .constant_mask = 0x7,
                  .n_outputs = 1};
    CHECK_OK(th_run(&rf, &y));
    CHECK(th_equal_f32(&y, (const float[]){1, 1.25f, 1.5f, 1.75f}, 4, 0));
    korch_tensor_free(&y);
    /* extreme int64 bounds count without overflow: INT64_MIN to INT64_MAX by 2^62 -> 4 */
    int64_t a = INT64_MIN, b = INT64_MAX, step = (int64_t)1 << 62;
    korch_tensor ta = th_tensor(KORCH_DTYPE_INT64, 0, NULL, &a), tb = th_tensor(KORCH_DTYPE_INT64, 0, NULL, &b),
                 tst = th_tensor(KORCH_DTYPE_INT64, 0, NULL, &step);
    th_node ri = {.op = "Range", .opset = 11, .n_inputs = 3, .inputs = {&ta, &tb, &tst}, .constant_mask = 0x7,
                  .n_outputs = 1};
    CHECK_OK(th_run(&ri, &y));
    CHECK(th_equal_i64(&y, (const int64_t[]){INT64_MIN, -((int64_t)1 << 62), 0, (int64_t)1 << 62}, 4));
    korch_tensor_free(&y);
    step = 1;
    CHECK(th_run(&ri, &y) == KORCH_ERR_SHAPE && th_error_mentions("too long"));
    dl = 0;
    CHECK(th_run(&r, &y) == KORCH_ERR_INVALID_MODEL && th_error_mentions("delta is 0"));

    /* ConstantOfShape: int64 value 7 into 2x3; no value gives float zeros */
    int64_t two = 2, shape[2] = {2, 3}, seven = 7;
    korch_tensor tsh = th_tensor(KORCH_DTYPE_INT64, 1, &two, shape), tv = th_tensor(KORCH_DTYPE_INT64, 1, &(int64_t){1}, &seven);
    korch_attr value = {.name = (char *)"value", .type = KORCH_ATTR_TENSOR, .tensor = &tv};
    th_node c = {.op = "ConstantOfShape", .opset = 9, .n_attrs = 1, .attrs = {value}, .n_inputs = 1, .inputs = {&tsh},
                 .constant_mask = 0x1, .n_outputs = 1};
    CHECK_OK(th_run(&c, &y));
    CHECK(th_shape_is(&y, 2, (int64_t)2, (int64_t)3) && th_equal_i64(&y, (const int64_t[]){7, 7, 7, 7, 7, 7}, 6));
    korch_tensor_free(&y);
    c.n_attrs = 0;
    CHECK_OK(th_run(&c, &y));
    CHECK(th_equal_f32(&y, (const float[]){0, 0, 0, 0, 0, 0}, 6, 0));
    korch_tensor_free(&y);
}

int main(void) {
    test_transpose();
    test_transpose_large();
    test_concat_split();
    test_gather();
    test_expand_tile();
    test_depth_space();
    test_shape_only();
    test_generators();
    TEST_MAIN_END();
}
