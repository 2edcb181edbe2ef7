/* An integer convolution with its requantization fused into oneDNN's int8
 * kernel (src/backend/dnnl/dnnl_imatmul.c, an_imatmul_requant;
 * docs/quantization.md, "QOperator models"): the kernel
 *   integer CONV (8-bit source, int32 weights in int8) -> ADD/SUB int32
 *   per-channel constants -> CAST float32 -> MUL float32 multiplier ->
 *   [WHERE(v == v, v, 0)] -> ROUND -> [ADD zero point] -> CLIP -> CAST 8-bit
 * as QLinearConv's fission writes it, against the primitive interpreter,
 * exactly (8-bit outputs compared byte for byte), every variant:
 *  - channels-first and channels-last (the layout pass's), u8 and s8
 *    sources and destinations, dense, strided and depthwise;
 *  - a multiplier of exactly 0.5 with odd sums and an odd zero point: every
 *    element a rounding tie, so oneDNN must round half to even and add the
 *    zero point after rounding, as the reference does;
 *  - multipliers that saturate both ends of the destination;
 *  - QLinearMatMul's form: 2-D and batched A, the correction per column;
 * the kernel is described as requantized ("->u8 requantized"); refused,
 * with the reason, where exactness is not provable: weights whose
 * (255 + 128) * sum |w| reaches 2^24. Skipped (77) without VNNI. */
#include "dnnl_check.h"
#include "backend/dnnl/dnnl_internal.h"

typedef struct qcase {
    const char *what;
    korch_dtype tx, ty;
    int64_t C, H, W, M, k, g, st;
    bool channels_last, tie, where, two_terms;
    int zp;     /* y's zero point (0: no ADD) */
    int wlo, whi;
    float mlo, mhi; /* the multiplier's range (tie: 0.5) */
} qcase;

static int const_i32(korch_pgraph *pg, int rank, const int64_t *dims, int lo, int hi) {
    korch_tensor t;
    korch_shape s = korch_shape_make(rank, dims);
    if (korch_tensor_alloc(&t, KORCH_DTYPE_INT32, &s) != KORCH_OK) return -1;
    for (int64_t i = 0; i < korch_tensor_numel(&t); i++) ((int32_t *)t.data)[i] = dc_int(lo, hi);
    return korch_pgraph_add_constant(pg, &t);
}

/* ROUND -> [ADD zp] -> CLIP to ty's range -> CAST to ty: the tail of the
 * requantization */
static int requant_tail(korch_pgraph *pg, int y, korch_dtype ty, int zp) {
    y = dc_ew1(pg, KORCH_EW_ROUND, y, 0, 0);
    if (zp) {
        korch_tensor z;
        korch_shape s0 = {.rank = 0};
        if (korch_tensor_alloc(&z, KORCH_DTYPE_FLOAT32, &s0) != KORCH_OK) return -1;
        *(float *)z.data = (float)zp;
        y = dc_ew2(pg, KORCH_EW_ADD, y, korch_pgraph_add_constant(pg, &z));
    }
    bool u8 = ty == KORCH_DTYPE_UINT8;
    y = dc_ew1(pg, KORCH_EW_CLIP, y, u8 ? 0.0f : -128.0f, u8 ? 255.0f : 127.0f);
    return korch_pgraph_elementwise(pg, KORCH_EW_CAST, 1, &y, 0, 0, ty);
}

/* QLinearMatMul's form: A [rows..., K] 8-bit (input), B [K, N] constant,
 * the zero point's correction [N], the multiplier per column */
static korch_pgraph *build_matmul(const qcase *c) {
    korch_pgraph *pg = dc_graph();
    korch_shape as = c->channels_last ? (korch_shape){.rank = 3, .dims = {2, c->H, c->C}}
                                      : (korch_shape){.rank = 2, .dims = {c->H, c->C}};
    int a = korch_pgraph_add_input(pg, c->tx, &as);
    korch_prim_linear p = {.op = KORCH_LINEAR_MATMUL};
    int y = korch_pgraph_linear(pg, &p, a, const_i32(pg, 2, (int64_t[]){c->C, c->M}, c->wlo, c->whi));
    y = dc_ew2(pg, KORCH_EW_SUB, y, const_i32(pg, 1, (int64_t[]){c->M}, -3000, 3000));
    y = korch_pgraph_elementwise(pg, KORCH_EW_CAST, 1, &y, 0, 0, KORCH_DTYPE_FLOAT32);
    y = dc_ew2(pg, KORCH_EW_MUL, y, dc_constant(pg, 1, (int64_t[]){c->M}, c->mlo, c->mhi));
    dc_output(pg, requant_tail(pg, y, c->ty, c->zp));
    return pg;
}

static korch_pgraph *build(const qcase *c) {
    if (c->k == 0) return build_matmul(c); /* k 0: a matmul, C = K, M = N, H = rows */
    korch_pgraph *pg = dc_graph();
    korch_shape xs = c->channels_last ? (korch_shape){.rank = 4, .dims = {1, c->H, c->W, c->C}}
                                      : (korch_shape){.rank = 4, .dims = {1, c->C, c->H, c->W}};
    int x = korch_pgraph_add_input(pg, c->tx, &xs);
    int w = const_i32(pg, 4, (int64_t[]){c->M, c->C / c->g, c->k, c->k}, c->wlo, c->whi);
    if (c->tie) { /* odd weights and a source of ones below: odd sums */
        korch_tensor *t = &pg->values[w].constant;
        for (int64_t i = 0; i < korch_tensor_numel(t); i++) ((int32_t *)t->data)[i] = i % 2 ? 0 : 1;
    }
    korch_prim_linear p = {.op = KORCH_LINEAR_CONV, .spatial = 2, .group = c->g, .strides = {c->st, c->st, 1},
                           .dilations = {1, 1, 1}, .channels_last = c->channels_last};
    int y = korch_pgraph_linear(pg, &p, x, w);
    int64_t cd[3] = {c->M, 1, 1};
    int crank = c->channels_last ? 1 : 3; /* per channel: [M] on the last axis, or [M, 1, 1] */
    y = dc_ew2(pg, KORCH_EW_ADD, y, const_i32(pg, crank, cd, -3000, 3000));
    if (c->two_terms) y = dc_ew2(pg, KORCH_EW_SUB, y, const_i32(pg, crank, cd, -500, 500));
    y = korch_pgraph_elementwise(pg, KORCH_EW_CAST, 1, &y, 0, 0, KORCH_DTYPE_FLOAT32);
    int m = c->tie ? dc_constant(pg, 0, NULL, 0.5, 0.5) : dc_constant(pg, crank, cd, c->mlo, c->mhi);
    if (c->tie) *(float *)pg->values[m].constant.data = 0.5f;
    y = dc_ew2(pg, KORCH_EW_MUL, y, m);
    if (c->where) {
        korch_tensor z;
        korch_shape s0 = {.rank = 0};
        if (korch_tensor_alloc(&z, KORCH_DTYPE_FLOAT32, &s0) != KORCH_OK) return NULL;
        *(float *)z.data = 0;
        int ins[3] = {dc_ew2(pg, KORCH_EW_EQUAL, y, y), y, korch_pgraph_add_constant(pg, &z)};
        y = korch_pgraph_elementwise(pg, KORCH_EW_WHERE, 3, ins, 0, 0, KORCH_DTYPE_UNDEFINED);
    }
    dc_output(pg, requant_tail(pg, y, c->ty, c->zp));
    return pg;
}

static int checked;

static void check(const qcase *c) {
    korch_pgraph *pg = build(c);
    korch_kernel_spec spec;
    dc_spec_all(pg, &spec);
    char variants[128], reason[256];
    dn_desc d;
    bool analysed = dn_analyze(&spec, &d, reason, sizeof reason);
    CHECK_MSG(analysed && strstr(d.text, "requantized"), "%s: not a requantized integer kernel: %s", c->what,
              analysed ? d.text : reason);
    if (!korch_dnnl_variants(&spec, 2, variants, sizeof variants, reason, sizeof reason)) {
        CHECK_MSG(false, "%s: unsupported: %s", c->what, reason);
        dc_spec_free(&spec);
        korch_pgraph_free(pg);
        return;
    }
    korch_tensor in = {0};
    const korch_pvalue *iv = &pg->values[pg->inputs[0]];
    CHECK_OK(korch_tensor_alloc(&in, iv->dtype, &iv->shape));
    for (int64_t e = 0; e < korch_tensor_numel(&in); e++) {
        int v = c->tie ? 1 : in.dtype == KORCH_DTYPE_UINT8 ? dc_int(0, 255) : dc_int(-128, 127);
        if (in.dtype == KORCH_DTYPE_UINT8) ((uint8_t *)in.data)[e] = (uint8_t)v;
        else ((int8_t *)in.data)[e] = (int8_t)v;
    }
    if (c->tie) { /* odd bias: each sum odd, each product with 0.5 a tie */
        for (int i = 0; i < pg->n_values; i++) {
            korch_pvalue *v = &pg->values[i];
            if (v->is_constant && v->dtype == KORCH_DTYPE_INT32 && v->shape.rank != 4)
                for (int64_t e = 0; e < korch_tensor_numel(&v->constant); e++)
                    ((int32_t *)v->constant.data)[e] = 2 * (int32_t)e + 1;
        }
    }
    void **bufs = calloc((size_t)spec.n_inputs + 1, sizeof *bufs);
    for (int i = 0; i < spec.n_inputs; i++) {
        const korch_pvalue *v = &pg->values[spec.inputs[i]];
        bufs[i] = v->is_constant ? v->constant.data : in.data;
    }
    korch_tensor want = {0};
    CHECK_OK(korch_pgraph_interpret(pg, &in, &want));
    size_t n = (size_t)korch_tensor_numel(&want);
    int lows = 0, highs = 0;
    for (size_t e = 0; e < n; e++) {
        int v = want.dtype == KORCH_DTYPE_UINT8 ? ((uint8_t *)want.data)[e] : ((int8_t *)want.data)[e];
        lows += v == (want.dtype == KORCH_DTYPE_UINT8 ? 0 : -128);
        highs += v == (want.dtype == KORCH_DTYPE_UINT8 ? 255 : 127);
    }
    if (!c->tie) CHECK_MSG(lows > 0 && highs > 0, "%s: the reference saturates %d low, %d high: no test", c->what, lows, highs);
    unsigned char *got = malloc(n + 64);
    char *save = NULL, *list = strdup(variants);
    for (char *v = strtok_r(list, ";", &save); v; v = strtok_r(NULL, ";", &save)) {
        bool refused;
        korch_kernel *k = dc_build_variant(&spec, v, c->what, &refused);
        if (!k) continue;
        memset(got, 0xa5, n);
        void *outs[1] = {got};
        CHECK_OK(k->run(k, bufs, outs));
        int bad = memcmp(got, want.data, n) != 0;
        for (size_t e = 0, shown = 0; bad && e < n && shown < 3; e++)
            if (got[e] != ((unsigned char *)want.data)[e] && shown++ < 3)
                fprintf(stderr, "  %s [%s]: element %zu: got %d want %d\n", c->what, v, e, got[e],
                        ((unsigned char *)want.data)[e]);
        CHECK_MSG(!bad, "%s [%s, %s]: the 8-bit result differs", c->what, v, k->impl);
        if (getenv("KORCH_TEST_VERBOSE")) printf("%-60s [%s, %s] ok\n", c->what, v, k->impl);
        checked++;
        korch_kernel_destroy(k);
    }
    free(list);
    free(got);
    free(bufs);
    korch_tensor_free(&want);
    korch_tensor_free(&in);
    dc_spec_free(&spec);
    korch_pgraph_free(pg);
}

int main(void) {
    if (!dn_int8_exact_cpu()) {
        printf("skipped: no VNNI (oneDNN's int8 kernels would not sum exactly; the kernel is not offered)\n");
        return 77;
    }
    const korch_dtype U8 = KORCH_DTYPE_UINT8, S8 = KORCH_DTYPE_INT8;
    const qcase cases[] = {
        {"u8 -> u8, channels-first, 3x3, zp 121", U8, U8, 16, 10, 12, 8, 3, 1, 1, false, false, false, false, 121, -128,
         127, 0.0005f, 0.003f},
        {"u8 -> u8, channels-last, 1x1, two constants, zp 0", U8, U8, 32, 7, 9, 24, 1, 1, 1, true, false, false, true, 0,
         -128, 127, 0.0005f, 0.003f},
        {"s8 -> s8, channels-last, 3x3 stride 2, NaN step", S8, S8, 8, 9, 11, 16, 3, 1, 2, true, false, true, false, -3,
         -128, 127, 0.001f, 0.006f},
        {"u8 -> s8, channels-last, depthwise 3x3", U8, S8, 24, 8, 8, 24, 3, 24, 1, true, false, false, false, 5, -128, 127,
         0.001f, 0.02f},
        {"u8 -> u8, multiplier 0.5 on odd sums (every element a tie), zp 3", U8, U8, 4, 5, 6, 8, 1, 1, 1, true, true,
         false, false, 3, 0, 1, 0.5f, 0.5f},
        {"matmul u8 [24, 96] x [96, 40] -> u8, zp 117", U8, U8, 96, 24, 0, 40, 0, 1, 1, false, false, false, false, 117,
         -128, 127, 0.0005f, 0.003f},
        {"matmul s8 [2, 16, 64] x [64, 33] -> s8 (batched), zp -4", S8, S8, 64, 16, 0, 33, 0, 1, 1, true, false, false,
         false, -4, -128, 127, 0.001f, 0.006f},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) check(&cases[i]);
    CHECK_MSG(checked >= 7, "only %d kernels checked", checked);
    /* past the exactness bound: K = 4608, every weight -128..-97 */
    qcase big = {"K 4608", U8, U8, 512, 4, 6, 16, 3, 1, 1, true, false, false, false, 0, -128, -97, 0.0001f, 0.0002f};
    korch_pgraph *pg = build(&big);
    dc_refused(pg, "read inside the kernel", "a requantization past the exactness bound");
    korch_pgraph_free(pg);
    printf("%d kernels checked\n", checked);
    TEST_MAIN_END();
}
