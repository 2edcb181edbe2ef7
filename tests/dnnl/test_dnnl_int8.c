/* int8 convolutions and matmuls (docs/quantization.md, "int8 convolutions
 * and matmuls"; src/backend/dnnl/dnnl_dequant.c): a dequantized 8-bit
 * source, CAST -> [SUB zp] -> MUL s -> Conv or MatMul with float32 weights
 * that are int8 values times a scale per output channel (a matmul's: per
 * column), as one oneDNN int8 kernel, against the primitive interpreter
 * (which computes the float32 graph):
 *  - random convolutions: u8 and s8 sources, zero points 0 and not, padding
 *    (oneDNN must pad with the zero point, as ONNX pads with 0 after
 *    dequantization), strides, dilations, groups, depthwise, channels-first
 *    and -last, a bias and ReLU or Clip after, every variant;
 *  - random matmuls: 2-D and 3-D sources, per-column and per-tensor
 *    weight scales, a bias and ReLU, the requantization fused;
 *  - the kernels are int8 ones (the kernel description says u8/s8 and
 *    oneDNN names an int8 implementation);
 *  - the weight recovery (dnnl_int8_weights.inc) reproduces every float32
 *    weight bit for bit, including a channel whose largest magnitude is
 *    -128 steps, an all-zero channel and per-tensor scales; weights off the
 *    grid by one ulp, or holding a NaN, are refused, so the kernel is
 *    never offered;
 *  - the bias stays a post-op after the scale (oneDNN 2.6 would scale its
 *    own bias with the sum): covered by every case with a bias;
 *  - the next QuantizeLinear fused as a u8/s8 destination (requant cases):
 *    the 8-bit output equals the interpreter's exactly but where the
 *    interpreter's value before rounding lies within 2^-17 of a tie (one
 *    step either way, as the kernel checks allow: verify/kernel_check.c),
 *    and at most 1 % of the elements (or one, in a small output) are such.
 * Skipped (77) on a CPU without VNNI, where int8 kernels are not offered. */
#include "dnnl_check.h"
#include "backend/dnnl/dnnl_export.h"
#include "backend/dnnl/dnnl_internal.h"

#include "backend/dnnl/dnnl_int8_weights.inc"


/* float32 weights fl(q * s[c]), q uniform int8 (the first element of each
 * channel at an extreme, as symmetric quantization leaves it) */
static int int8_weights(korch_pgraph *pg, int rank, const int64_t *dims) {
    korch_tensor t;
    korch_shape s = korch_shape_make(rank, dims);
    if (korch_tensor_alloc(&t, KORCH_DTYPE_FLOAT32, &s) != KORCH_OK) return -1;
    int64_t per = korch_tensor_numel(&t) / dims[0];
    float *p = t.data;
    for (int64_t c = 0; c < dims[0]; c++) {
        float sc = (float)dc_uniform(1e-4, 2e-2);
        for (int64_t i = 0; i < per; i++) {
            int q = i == 0 ? (dc_int(0, 1) ? 127 : -127) : dc_int(-127, 127);
            p[c * per + i] = (float)q * sc;
        }
    }
    return korch_pgraph_add_constant(pg, &t);
}

static int scalar(korch_pgraph *pg, float v) {
    korch_tensor t;
    korch_shape s = {.rank = 0};
    if (korch_tensor_alloc(&t, KORCH_DTYPE_FLOAT32, &s) != KORCH_OK) return -1;
    *(float *)t.data = v;
    return korch_pgraph_add_constant(pg, &t);
}

/* uniform over the 8-bit type */
static void random_8bit(korch_tensor *t) {
    for (int64_t e = 0; e < korch_tensor_numel(t); e++) {
        if (t->dtype == KORCH_DTYPE_UINT8) ((uint8_t *)t->data)[e] = (uint8_t)dc_int(0, 255);
        else ((int8_t *)t->data)[e] = (int8_t)dc_int(-128, 127);
    }
}

/* Runs pg as one oneDNN kernel, every variant, against the interpreter on
 * random 8-bit inputs; returns the variants checked, counts int8 ones. */
static int int8_impls, all_impls, refused;
static int check_int8(korch_pgraph *pg, const char *what) {
    korch_kernel_spec spec;
    dc_spec_all(pg, &spec);
    char variants[128], reason[256];
    if (!korch_backend_supports(KORCH_BACKEND_DNNL, &spec, reason, sizeof reason) && strstr(reason, "oneDNN 2.6's")) {
        /* every variant has a documented defect here (dnnl_quirks.c): never offered */
        printf("%s: refused: %s\n", what, reason);
        refused++;
        dc_spec_free(&spec);
        return 0;
    }
    if (!korch_dnnl_variants(&spec, 2, variants, sizeof variants, reason, sizeof reason)) {
        CHECK_MSG(false, "%s: unsupported: %s", what, reason);
        dc_spec_free(&spec);
        return 0;
    }
    korch_dnnl_params params;
    CHECK_OK(korch_dnnl_export_params(&spec, NULL, 2, &params));
    CHECK_MSG(strstr(params.text, " u8") || strstr(params.text, " s8"), "%s: not an int8 kernel: %s", what,
              params.text);
    const korch_pvalue *qv = &pg->values[pg->inputs[0]];
    korch_tensor in = {0}, want = {0};
    CHECK_OK(korch_tensor_alloc(&in, qv->dtype, &qv->shape));
    random_8bit(&in);
    CHECK_OK(korch_pgraph_interpret(pg, &in, &want));
    void **bufs = calloc((size_t)spec.n_inputs + 1, sizeof *bufs);
    for (int i = 0; i < spec.n_inputs; i++) {
        const korch_pvalue *v = &pg->values[spec.inputs[i]];
        bufs[i] = v->is_constant ? v->constant.data : in.data;
    }
    const korch_pvalue *out = &pg->values[pg->outputs[0]];
    float *got = malloc((size_t)korch_shape_numel(&out->shape) * sizeof(float) + 64);
    int checked = 0;
    char *save = NULL, *list = strdup(variants);
    for (char *v = strtok_r(list, ";", &save); v; v = strtok_r(NULL, ";", &save)) {
        bool known_defect;
        korch_kernel *k = dc_build_variant(&spec, v, what, &known_defect);
        if (!k) continue;
        all_impls++;
        int8_impls += strstr(k->impl, "int8") || strstr(k->impl, "vnni") || strstr(k->impl, "gemm_s8");
        memset(got, 0xff, (size_t)korch_shape_numel(&out->shape) * sizeof(float));
        void *outs[1] = {got};
        CHECK_OK(k->run(k, bufs, outs));
        char label[512];
        snprintf(label, sizeof label, "%.250s [%.40s, %.160s]", what, v, k->impl);
        int bad = dc_compare(&want, got, label);
        CHECK_MSG(bad == 0, "%s: %d elements differ", label, bad);
        if (getenv("KORCH_TEST_VERBOSE")) printf("%-70s ok\n", label);
        checked++;
        korch_kernel_destroy(k);
    }
    free(list);
    free(got);
    free(bufs);
    korch_tensor_free(&in);
    korch_tensor_free(&want);
    dc_spec_free(&spec);
    return checked;
}

/* float32 weights [K, N] fl(q * s[n]), a scale per column (per tensor
 * when `tensor`) */
static int int8_weight_cols(korch_pgraph *pg, int64_t K, int64_t N, bool tensor) {
    korch_tensor t;
    int64_t dims[2] = {K, N};
    korch_shape s = korch_shape_make(2, dims);
    if (korch_tensor_alloc(&t, KORCH_DTYPE_FLOAT32, &s) != KORCH_OK) return -1;
    float *p = t.data, one = (float)dc_uniform(1e-4, 2e-2);
    for (int64_t n = 0; n < N; n++) {
        float sc = tensor ? one : (float)dc_uniform(1e-4, 2e-2);
        for (int64_t k = 0; k < K; k++) {
            int q = k == 0 && !tensor ? (dc_int(0, 1) ? 127 : -127) : dc_int(-127, 127);
            p[k * N + n] = (float)q * sc;
        }
    }
    return korch_pgraph_add_constant(pg, &t);
}

/* CAST -> [SUB zp] -> MUL s of an 8-bit input of shape xs (rank dims) */
static int dequantized_rank(korch_pgraph *pg, korch_dtype dt, int rank, const int64_t *xs, int zp, float s) {
    korch_shape shape = korch_shape_make(rank, xs);
    int q = korch_pgraph_add_input(pg, dt, &shape);
    int x = korch_pgraph_elementwise(pg, KORCH_EW_CAST, 1, &q, 0, 0, KORCH_DTYPE_FLOAT32);
    if (zp) x = dc_ew2(pg, KORCH_EW_SUB, x, scalar(pg, (float)zp));
    return dc_ew2(pg, KORCH_EW_MUL, x, scalar(pg, s));
}

static int dequantized(korch_pgraph *pg, korch_dtype dt, const int64_t *xs, int zp, float s) {
    return dequantized_rank(pg, dt, 4, xs, zp, s);
}

/* The QuantizeLinear chain fission writes (fission/rules_quant.c) after y:
 * the rounded value's input goes to *pre */
static int quantizer(korch_pgraph *pg, int y, float s, int zp, korch_dtype t, int *pre) {
    int in[3] = {y, scalar(pg, s)};
    int q = korch_pgraph_elementwise(pg, KORCH_EW_DIV, 2, in, 1, 0, KORCH_DTYPE_UNDEFINED);
    int eq = dc_ew2(pg, KORCH_EW_EQUAL, q, q);
    int w[3] = {eq, q, scalar(pg, 0)};
    q = korch_pgraph_elementwise(pg, KORCH_EW_WHERE, 3, w, 0, 0, KORCH_DTYPE_UNDEFINED);
    *pre = q;
    q = dc_ew1(pg, KORCH_EW_ROUND, q, 0, 0);
    if (zp) q = dc_ew2(pg, KORCH_EW_ADD, q, scalar(pg, (float)zp));
    q = dc_ew1(pg, KORCH_EW_CLIP, q, t == KORCH_DTYPE_UINT8 ? 0 : -128, t == KORCH_DTYPE_UINT8 ? 255 : 127);
    return korch_pgraph_elementwise(pg, KORCH_EW_CAST, 1, &q, 0, 0, t);
}

/* Runs the kernel of pg (its graph outputs: the value before rounding, then
 * out; the kernel writes out alone) and compares its 8-bit
 * output with the interpreter's: exact, but at ties. */
static int check_requant(korch_pgraph *pg, int out, const char *what) {
    korch_kernel_spec spec;
    dc_spec_all(pg, &spec);
    spec.n_outputs = 1;
    spec.outputs = &out;
    char reason[256];
    if (!korch_backend_supports(KORCH_BACKEND_DNNL, &spec, reason, sizeof reason)) {
        CHECK_MSG(strstr(reason, "oneDNN 2.6's"), "%s: unsupported: %s", what, reason);
        refused++;
        dc_spec_free(&spec);
        return 0;
    }
    korch_dnnl_params params;
    CHECK_OK(korch_dnnl_export_params(&spec, NULL, 2, &params));
    CHECK_MSG(strstr(params.text, "->u8") || strstr(params.text, "->s8"), "%s: no 8-bit destination: %s", what,
              params.text);
    const korch_pvalue *qv = &pg->values[pg->inputs[0]];
    korch_tensor in = {0}, want[2] = {{0}};
    CHECK_OK(korch_tensor_alloc(&in, qv->dtype, &qv->shape));
    random_8bit(&in);
    CHECK_OK(korch_pgraph_interpret(pg, &in, want)); /* outputs: pre, out */
    void **bufs = calloc((size_t)spec.n_inputs + 1, sizeof *bufs);
    for (int i = 0; i < spec.n_inputs; i++) {
        const korch_pvalue *v = &pg->values[spec.inputs[i]];
        bufs[i] = v->is_constant ? v->constant.data : in.data;
    }
    int64_t n = korch_tensor_numel(&want[1]);
    uint8_t *got = malloc((size_t)n + 64);
    korch_kernel *k = NULL;
    const char *sched = "";
    korch_profile_options o = {.threads = 2};
    int checked = 0;
    if (korch_backend_build(KORCH_BACKEND_DNNL, &spec, &sched, 1, &o, &k) == KORCH_OK) {
        void *outs[1] = {got};
        CHECK_OK(k->run(k, bufs, outs));
        const float *r = want[0].data;
        const uint8_t *w = want[1].data;
        int64_t bad = 0, ties = 0;
        for (int64_t e = 0; e < n; e++) {
            double a = fabs((double)r[e]);
            bool tie = fabs(a - floor(a) - 0.5) <= ldexp(a + 1, -17);
            ties += tie;
            int d = (int)(qv->dtype == KORCH_DTYPE_UINT8 ? got[e] - w[e] : (int8_t)got[e] - (int8_t)w[e]);
            if (d != 0 && !(tie && abs(d) == 1) && bad++ < 3)
                fprintf(stderr, "  %s: element %lld: got %d want %d (before rounding %.9g)\n", what, (long long)e,
                        got[e], w[e], r[e]);
        }
        CHECK_MSG(bad == 0, "%s [%s]: %lld elements differ", what, k->impl, (long long)bad);
        CHECK_MSG(ties * 100 <= n || ties <= 1, "%s: %lld of %lld elements on ties: the test is blind there", what,
                  (long long)ties, (long long)n);
        if (getenv("KORCH_TEST_VERBOSE")) printf("%-70s [%s] ok (%lld ties)\n", what, k->impl, (long long)ties);
        all_impls++;
        int8_impls++;
        checked = 1;
        korch_kernel_destroy(k);
    } else {
        CHECK_MSG(strstr(korch_last_error(), "oneDNN 2.6's"), "%s: build failed: %s", what, korch_last_error());
        korch_error_clear();
    }
    free(got);
    free(bufs);
    korch_tensor_free(&in);
    korch_tensor_free(&want[0]);
    korch_tensor_free(&want[1]);
    dc_spec_free(&spec);
    return checked;
}

/* The end of a case: y (a linear primitive's chain, fan-in `fan_in`, source
 * scale s) is the output, or, with `requant`, quantized to a random 8-bit
 * type (the value before rounding an output too); checked, what labelled. */
static int finish_case(korch_pgraph *pg, int y, bool requant, float s, int64_t fan_in, char *what, size_t size) {
    int pre = -1;
    korch_dtype qt = dc_int(0, 1) ? KORCH_DTYPE_UINT8 : KORCH_DTYPE_INT8;
    int qzp = qt == KORCH_DTYPE_UINT8 ? dc_int(0, 3) * 40 : dc_int(-20, 20);
    if (requant) {
        /* the output scale puts the values over ~100 steps */
        float sy = (float)(s * 127.0 * 0.02 * sqrt((double)fan_in) * 255.0 / 100.0 / 4.0);
        y = quantizer(pg, y, sy, qzp, qt, &pre);
        dc_output(pg, pre);
        snprintf(what + strlen(what), size - strlen(what), " ->%s zp %d", qt == KORCH_DTYPE_UINT8 ? "u8" : "s8", qzp);
    }
    dc_output(pg, y);
    return requant ? check_requant(pg, y, what) : check_int8(pg, what);
}

static int conv_case(bool channels_last, int epilogue, bool requant) {
    korch_pgraph *pg = dc_graph();
    korch_prim_linear p = {.op = KORCH_LINEAR_CONV, .spatial = 2, .channels_last = channels_last};
    bool depthwise = dc_int(0, 3) == 0;
    int64_t G = depthwise ? dc_int(4, 32) : (dc_int(0, 3) == 0 ? 2 : 1);
    int64_t Cg = depthwise ? 1 : dc_int(2, 40), Mg = depthwise ? 1 : dc_int(2, 40);
    p.group = G;
    int64_t N = dc_int(1, 2), C = Cg * G, M = Mg * G, H = dc_int(3, 20), W = dc_int(3, 20), k = dc_int(1, 3);
    for (int d = 0; d < 2; d++) {
        p.strides[d] = dc_int(1, 2);
        p.dilations[d] = dc_int(0, 3) ? 1 : 2;
        p.pads_begin[d] = p.pads_end[d] = dc_int(0, 1);
        if ((k - 1) * p.dilations[d] + 1 > (d ? W : H) + 2 * p.pads_begin[d]) p.dilations[d] = 1; /* not empty */
    }
    korch_dtype dt = dc_int(0, 2) ? KORCH_DTYPE_UINT8 : KORCH_DTYPE_INT8;
    int zp = dc_int(0, 2) == 0 ? 0 : dt == KORCH_DTYPE_UINT8 ? dc_int(1, 255) : dc_int(-128, 127);
    float s = (float)dc_uniform(1e-3, 5e-2);
    int64_t xs[4] = {N, C, H, W}, ws[4] = {M, Cg, k, k};
    if (channels_last) xs[1] = H, xs[2] = W, xs[3] = C;
    int x = dequantized(pg, dt, xs, zp, s);
    int y = korch_pgraph_linear(pg, &p, x, int8_weights(pg, 4, ws));
    CHECK_MSG(y >= 0, "linear: %s", korch_last_error());
    int checked = 0;
    if (y >= 0) {
        if (epilogue) { /* bias (per channel) then ReLU or Clip, fused after the scale */
            const korch_shape *ys = &pg->values[y].shape;
            int64_t bias[4] = {1, 1, 1, 1};
            bias[channels_last ? 3 : 1] = ys->dims[channels_last ? 3 : 1];
            y = dc_ew2(pg, KORCH_EW_ADD, y, dc_constant(pg, 4, bias, -1, 1));
            y = epilogue == 1 ? dc_ew1(pg, KORCH_EW_RELU, y, 0, 0) : dc_ew1(pg, KORCH_EW_CLIP, y, 0, 6);
        }
        char what[220];
        snprintf(what, sizeof what, "int8 %s %s zp %d conv %s N%lld C%lld M%lld g%lld %lldx%lld k%lld s%lld d%lld p%lld%s",
                 dt == KORCH_DTYPE_UINT8 ? "u8" : "s8", zp ? "with" : "without", zp, channels_last ? "nhwc" : "nchw",
                 (long long)N, (long long)C, (long long)M, (long long)G, (long long)H, (long long)W, (long long)k,
                 (long long)p.strides[0], (long long)p.dilations[0], (long long)p.pads_begin[0],
                 epilogue == 1 ? " +bias+relu" : epilogue == 2 ? " +bias+clip" : "");
        checked = finish_case(pg, y, requant, s, Cg * k * k, what, sizeof what);
    }
    korch_pgraph_free(pg);
    return checked;
}

/* A QDQ MatMul: a dequantized [B, M, K] or [M, K] source times [K, N]
 * int8 weights, optionally + bias + ReLU, optionally requantized. */
static int matmul_case(int epilogue, bool requant) {
    korch_pgraph *pg = dc_graph();
    korch_prim_linear p = {.op = KORCH_LINEAR_MATMUL};
    int rank = dc_int(2, 3);
    int64_t B = dc_int(1, 3), M = dc_int(1, 40), K = dc_int(1, 96), N = dc_int(1, 80);
    korch_dtype dt = dc_int(0, 2) ? KORCH_DTYPE_UINT8 : KORCH_DTYPE_INT8;
    int zp = dc_int(0, 2) == 0 ? 0 : dt == KORCH_DTYPE_UINT8 ? dc_int(1, 255) : dc_int(-128, 127);
    float s = (float)dc_uniform(1e-3, 5e-2);
    bool tensor = dc_int(0, 3) == 0;
    int64_t xs[3] = {B, M, K};
    int x = rank == 3 ? dequantized_rank(pg, dt, 3, xs, zp, s) : dequantized_rank(pg, dt, 2, xs + 1, zp, s);
    int y = korch_pgraph_linear(pg, &p, x, int8_weight_cols(pg, K, N, tensor));
    CHECK_MSG(y >= 0, "linear: %s", korch_last_error());
    int checked = 0;
    if (y >= 0) {
        if (epilogue) { /* a bias per column, then ReLU */
            int64_t bias[1] = {N};
            y = dc_ew2(pg, KORCH_EW_ADD, y, dc_constant(pg, 1, bias, -1, 1));
            if (epilogue == 1) y = dc_ew1(pg, KORCH_EW_RELU, y, 0, 0);
        }
        char what[220];
        snprintf(what, sizeof what, "int8 %s zp %d matmul %s%lldx%lldx%lld N%lld %s%s",
                 dt == KORCH_DTYPE_UINT8 ? "u8" : "s8", zp, rank == 3 ? "B" : "", (long long)(rank == 3 ? B : 1),
                 (long long)M, (long long)K, (long long)N, tensor ? "per-tensor" : "per-column",
                 epilogue == 1 ? " +bias+relu" : epilogue == 2 ? " +bias" : "");
        checked = finish_case(pg, y, requant, s, K, what, sizeof what);
    }
    korch_pgraph_free(pg);
    return checked;
}

/* The recovery reproduces the float32 weights, and refuses what is not on
 * an int8 grid. */
static void recovery(void) {
    enum { C = 5, P = 64 };
    float w[C * P], scales[C], back[C * P];
    signed char q[C * P];
    float sc[C] = {0.0123f, 3.7e-5f, 1.0f, 0.5f, 7.77f};
    for (int c = 0; c < C; c++)
        for (int i = 0; i < P; i++) {
            int v = dc_int(-127, 127);
            if (c == 1 && i == 3) v = -128; /* the largest magnitude is -128 steps */
            if (c == 4) v = 0;              /* an all-zero channel */
            w[c * P + i] = (float)v * sc[c];
        }
    CHECK_MSG(kx_dn_int8_weights(w, C, P, P, 1, q, scales) == 1, "int8 weights not recovered");
    for (int i = 0; i < C * P; i++) back[i] = (float)q[i] * scales[i / P];
    CHECK_MSG(memcmp(w, back, sizeof w) == 0, "recovered int8 weights do not reproduce the float32 ones");
    /* per-tensor scale: channels whose largest step is below 127 */
    for (int i = 0; i < C * P; i++) w[i] = (float)dc_int(-40, 40) * 0.031f;
    CHECK_MSG(kx_dn_int8_weights(w, C, P, P, 1, q, scales) == 1, "per-tensor int8 weights not recovered");
    for (int i = 0; i < C * P; i++) back[i] = (float)q[i] * scales[i / P];
    CHECK_MSG(memcmp(w, back, sizeof w) == 0, "recovered per-tensor weights do not reproduce the float32 ones");
    float saved = w[77];
    w[77] = nextafterf(w[77] == 0 ? 0.031f : w[77], INFINITY);
    CHECK_MSG(kx_dn_int8_weights(w, C, P, P, 1, q, scales) == 0, "weights one ulp off the grid were accepted");
    w[77] = NAN;
    CHECK_MSG(kx_dn_int8_weights(w, C, P, P, 1, q, scales) == 0, "a NaN weight was accepted");
    w[77] = saved;
    for (int i = 0; i < C * P; i++) w[i] = (float)dc_uniform(-1, 1); /* plain float32 weights */
    CHECK_MSG(kx_dn_int8_weights(w, C, P, P, 1, q, scales) == 0, "random float32 weights were taken for int8 ones");
    /* a matmul's [K = P, N = C] columns: channel c at stride C */
    for (int i = 0; i < P; i++)
        for (int c = 0; c < C; c++) w[i * C + c] = (float)dc_int(-127, 127) * sc[c];
    CHECK_MSG(kx_dn_int8_weights(w, C, P, 1, C, q, scales) == 1, "int8 weight columns not recovered");
    for (int i = 0; i < C * P; i++) back[i] = (float)q[i] * scales[i % C];
    CHECK_MSG(memcmp(w, back, sizeof w) == 0, "recovered weight columns do not reproduce the float32 ones");
}

/* A dequantized source with weights off the grid: the kernel is refused
 * (the float32 convolution of the same graph stays a candidate of its own). */
static void off_grid_refused(void) {
    korch_pgraph *pg = dc_graph();
    korch_prim_linear p = {.op = KORCH_LINEAR_CONV, .spatial = 2, .group = 1, .strides = {1, 1}, .dilations = {1, 1}};
    int64_t xs[4] = {1, 8, 6, 6}, ws[4] = {4, 8, 3, 3};
    int x = dequantized(pg, KORCH_DTYPE_UINT8, xs, 3, 0.02f);
    dc_output(pg, korch_pgraph_linear(pg, &p, x, dc_constant(pg, 4, ws, -1, 1)));
    dc_refused(pg, "not int8 values times a scale", "int8 conv with float32 weights");
    korch_pgraph_free(pg);
}

int main(void) {
    if (!dn_int8_exact_cpu()) TEST_SKIP("this CPU has no VNNI; int8 convolutions are not offered");
    recovery();
    off_grid_refused();
    int checked = 0;
    for (int i = 0; i < 40; i++) checked += conv_case(i % 2 == 1, i % 3, false);
    int requant = 0;
    for (int i = 0; i < 30; i++) requant += conv_case(i % 2 == 1, i % 3, true);
    int matmuls = 0, mm_requant = 0;
    for (int i = 0; i < 30; i++) matmuls += matmul_case(i % 3, false);
    for (int i = 0; i < 20; i++) mm_requant += matmul_case(i % 3, true);
    printf("%d int8 matmuls checked, %d with an 8-bit destination\n", matmuls, mm_requant);
    CHECK_MSG(matmuls >= 30 && mm_requant >= 18, "only %d int8 matmuls and %d requantized ones checked", matmuls,
              mm_requant);
    printf("%d kernels with an 8-bit destination checked\n", requant);
    CHECK_MSG(requant >= 25, "only %d kernels with an 8-bit destination checked", requant);
    printf("%d kernels checked (%d of %d built kernels are int8 implementations), %d refused for oneDNN defects\n",
           checked, int8_impls, all_impls, refused);
    CHECK_MSG(checked >= 40, "only %d kernels checked", checked);
    CHECK_MSG(int8_impls == all_impls, "%d of %d kernels are not int8 implementations", all_impls - int8_impls,
              all_impls);
    TEST_MAIN_END();
}
