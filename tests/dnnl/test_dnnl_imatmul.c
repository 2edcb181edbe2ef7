/* Integer matmuls as oneDNN's int8 matmul (src/backend/dnnl/
 * dnnl_imatmul.c; docs/quantization.md, "Integer matmuls"): the kernel
 * [CAST A -> int32, CAST zp -> int32, SUB] -> integer MATMUL with constant
 * int32 weights in int8's range, against the primitive interpreter, exactly
 * (int32 outputs compared bit for bit), every variant:
 *  - u8 and s8 A; no zero point, a constant one, one read at run time from
 *    a scalar 8-bit input (DynamicQuantizeLinear's), including zp values at
 *    the ends of the type's range;
 *  - 2-D and batched A ([2, 5, K]), K from 1 to 3072 with sums beyond 2^24;
 *  - weights at both ends of int8 (-128 and 127);
 * the kernel is described as an integer one ("x s8 ->s32"), and a run-time
 * zero point changed between two runs of one kernel is used (the kernel
 * reads it per run); refused, with the reason: weights outside int8, a
 * per-row zero point, a consumer of the int32 result inside the kernel.
 * Skipped (77) on a CPU without VNNI, where the kernel is not offered. */
#include "dnnl_check.h"
#include "backend/dnnl/dnnl_internal.h"

/* int32 weights [K, N] uniform in [lo, hi], with lo and hi themselves present */
static int weights(korch_pgraph *pg, int64_t k, int64_t n, int lo, int hi) {
    korch_tensor t;
    korch_shape s = {.rank = 2, .dims = {k, n}};
    if (korch_tensor_alloc(&t, KORCH_DTYPE_INT32, &s) != KORCH_OK) return -1;
    int32_t *p = t.data;
    for (int64_t i = 0; i < k * n; i++) p[i] = i == 0 ? lo : i == 1 && k * n > 1 ? hi : dc_int(lo, hi);
    return korch_pgraph_add_constant(pg, &t);
}

static int int32_scalar(korch_pgraph *pg, int32_t v) {
    korch_tensor t;
    korch_shape s = {.rank = 0};
    if (korch_tensor_alloc(&t, KORCH_DTYPE_INT32, &s) != KORCH_OK) return -1;
    *(int32_t *)t.data = v;
    return korch_pgraph_add_constant(pg, &t);
}

static int cast(korch_pgraph *pg, int x, korch_dtype to) {
    return korch_pgraph_elementwise(pg, KORCH_EW_CAST, 1, &x, 0, 0, to);
}

typedef enum zp_form { ZP_NONE, ZP_CONST, ZP_RUNTIME, ZP_PER_ROW } zp_form;

/* A [rows..., K] (8-bit, input 0), zp (input 1 when run-time), weights
 * [K, N] in [lo, hi]: the integer matmul of A - zp and the weights */
static korch_pgraph *build(korch_dtype ta, int rank, const int64_t *ad, int64_t n, zp_form zf, int zp, int lo,
                           int hi, bool epilogue) {
    korch_pgraph *pg = dc_graph();
    korch_shape as = korch_shape_make(rank, ad);
    int a = korch_pgraph_add_input(pg, ta, &as), x = a;
    if (zf != ZP_NONE) {
        int z;
        if (zf == ZP_CONST) {
            z = int32_scalar(pg, zp);
        } else {
            korch_shape zs = {.rank = zf == ZP_PER_ROW ? 2 : 0, .dims = {ad[rank - 2], 1}};
            z = cast(pg, korch_pgraph_add_input(pg, ta, &zs), KORCH_DTYPE_INT32);
        }
        int ins[2] = {cast(pg, a, KORCH_DTYPE_INT32), z};
        x = korch_pgraph_elementwise(pg, KORCH_EW_SUB, 2, ins, 0, 0, KORCH_DTYPE_UNDEFINED);
    }
    korch_prim_linear p = {.op = KORCH_LINEAR_MATMUL};
    int y = korch_pgraph_linear(pg, &p, x, weights(pg, ad[rank - 1], n, lo, hi));
    if (epilogue) y = korch_pgraph_elementwise(pg, KORCH_EW_CAST, 1, &y, 0, 0, KORCH_DTYPE_FLOAT32);
    dc_output(pg, y);
    return pg;
}

static void fill_8bit(korch_tensor *t) {
    for (int64_t e = 0; e < korch_tensor_numel(t); e++) {
        if (t->dtype == KORCH_DTYPE_UINT8) ((uint8_t *)t->data)[e] = (uint8_t)dc_int(0, 255);
        else ((int8_t *)t->data)[e] = (int8_t)dc_int(-128, 127);
    }
}

static int checked, zp_reruns;

/* every variant against the interpreter, exactly; with a run-time zero
 * point, each kernel runs twice with two zero points */
static void check(korch_pgraph *pg, int zp, const char *what) {
    korch_kernel_spec spec;
    dc_spec_all(pg, &spec);
    char variants[128], reason[256];
    if (!korch_dnnl_variants(&spec, 2, variants, sizeof variants, reason, sizeof reason)) {
        CHECK_MSG(false, "%s: unsupported: %s", what, reason);
        dc_spec_free(&spec);
        return;
    }
    korch_tensor ins[2] = {{0}};
    for (int i = 0; i < pg->n_inputs; i++) {
        const korch_pvalue *v = &pg->values[pg->inputs[i]];
        CHECK_OK(korch_tensor_alloc(&ins[i], v->dtype, &v->shape));
        fill_8bit(&ins[i]);
    }
    if (pg->n_inputs > 1) { /* the zero point asked for */
        if (ins[1].dtype == KORCH_DTYPE_UINT8) *(uint8_t *)ins[1].data = (uint8_t)zp;
        else *(int8_t *)ins[1].data = (int8_t)zp;
    }
    void **bufs = calloc((size_t)spec.n_inputs + 1, sizeof *bufs);
    for (int i = 0; i < spec.n_inputs; i++) {
        const korch_pvalue *v = &pg->values[spec.inputs[i]];
        bufs[i] = v->is_constant ? v->constant.data : ins[v->graph_input].data;
    }
    const korch_pvalue *out = &pg->values[pg->outputs[0]];
    size_t bytes = (size_t)korch_shape_numel(&out->shape) * sizeof(int32_t);
    int32_t *got = malloc(bytes + 64);
    char *save = NULL, *list = strdup(variants);
    for (char *v = strtok_r(list, ";", &save); v; v = strtok_r(NULL, ";", &save)) {
        bool refused;
        korch_kernel *k = dc_build_variant(&spec, v, what, &refused);
        if (!k) continue;
        char label[512];
        snprintf(label, sizeof label, "%.250s [%.40s, %.160s]", what, v, k->impl);
        CHECK_MSG(strstr(k->impl, "int8") || strstr(k->impl, "s8") || strstr(k->impl, "vnni") || strstr(k->impl, "brg"),
                  "%s: not an int8 implementation", label);
        for (int rerun = 0; rerun < (pg->n_inputs > 1 ? 2 : 1); rerun++) {
            if (rerun) { /* another zero point, same kernel */
                if (ins[1].dtype == KORCH_DTYPE_UINT8) *(uint8_t *)ins[1].data = (uint8_t)(255 - zp);
                else *(int8_t *)ins[1].data = (int8_t)(-1 - zp);
                zp_reruns++;
            }
            korch_tensor want = {0};
            CHECK_OK(korch_pgraph_interpret(pg, ins, &want));
            memset(got, 0xa5, bytes);
            void *outs[1] = {got};
            CHECK_OK(k->run(k, bufs, outs));
            int bad = want.data ? memcmp(got, want.data, bytes) != 0 : 1;
            for (int64_t e = 0, shown = 0; bad && e < korch_shape_numel(&out->shape) && shown < 3; e++)
                if (got[e] != ((int32_t *)want.data)[e] && shown++ < 3)
                    fprintf(stderr, "  %s: element %lld: got %d want %d\n", label, (long long)e, got[e],
                            ((int32_t *)want.data)[e]);
            CHECK_MSG(!bad, "%s (zero point run %d): the int32 result differs", label, rerun);
            korch_tensor_free(&want);
        }
        if (getenv("KORCH_TEST_VERBOSE")) printf("%-70s ok\n", label);
        checked++;
        korch_kernel_destroy(k);
    }
    free(list);
    free(got);
    free(bufs);
    for (int i = 0; i < pg->n_inputs; i++) korch_tensor_free(&ins[i]);
    dc_spec_free(&spec);
}

/* an integer convolution: x [1, C, H, W] 8-bit (input 0), zero point
 * (input 1, run-time scalar) or none, weights [M, C/g, k, k] int32 in
 * [lo, hi], pads p, stride st; with W = 1 the kernel is k x 1, unpadded
 * along W (an H x 1 convolution, which the backend describes to oneDNN as
 * 1 x H: dnnl_analyze.c, swap_unit_width; the zero point's correction
 * must follow) */
static korch_pgraph *build_conv(korch_dtype tx, int64_t C, int64_t H, int64_t W, int64_t M, int64_t k, int64_t g,
                                int64_t pad, int64_t st, bool zp, int lo, int hi) {
    bool unit_w = W == 1;
    korch_pgraph *pg = dc_graph();
    korch_shape xs = {.rank = 4, .dims = {1, C, H, W}};
    int a = korch_pgraph_add_input(pg, tx, &xs), x = a;
    if (zp) {
        korch_shape zs = {.rank = 0};
        int ins[2] = {cast(pg, a, KORCH_DTYPE_INT32), cast(pg, korch_pgraph_add_input(pg, tx, &zs), KORCH_DTYPE_INT32)};
        x = korch_pgraph_elementwise(pg, KORCH_EW_SUB, 2, ins, 0, 0, KORCH_DTYPE_UNDEFINED);
    }
    korch_tensor t;
    korch_shape ws = {.rank = 4, .dims = {M, C / g, k, unit_w ? 1 : k}};
    if (korch_tensor_alloc(&t, KORCH_DTYPE_INT32, &ws) != KORCH_OK) return NULL;
    int32_t *p = t.data;
    for (int64_t i = 0; i < korch_tensor_numel(&t); i++) p[i] = i == 0 ? lo : i == 1 ? hi : dc_int(lo, hi);
    korch_prim_linear prm = {.op = KORCH_LINEAR_CONV, .spatial = 2, .group = g,
                             .strides = {st, st, 1}, .dilations = {1, 1, 1}, .pads_begin = {pad, unit_w ? 0 : pad, 0},
                             .pads_end = {pad, unit_w ? 0 : pad, 0}};
    int y = korch_pgraph_linear(pg, &prm, x, korch_pgraph_add_constant(pg, &t));
    dc_output(pg, y);
    return pg;
}

int main(void) {
    if (!dn_int8_exact_cpu()) {
        printf("skipped: no VNNI (oneDNN's int8 matmul would not sum exactly; the kernel is not offered)\n");
        return 77;
    }
    struct {
        korch_dtype ta;
        int rank;
        int64_t a[3], n;
        zp_form zf;
        int zp;
    } cases[] = {
        {KORCH_DTYPE_UINT8, 2, {7, 16}, 9, ZP_NONE, 0},
        {KORCH_DTYPE_UINT8, 2, {5, 33}, 17, ZP_CONST, 131},
        {KORCH_DTYPE_INT8, 2, {6, 20}, 8, ZP_CONST, -7},
        {KORCH_DTYPE_UINT8, 2, {128, 768}, 64, ZP_RUNTIME, 119},
        {KORCH_DTYPE_UINT8, 2, {3, 1}, 5, ZP_RUNTIME, 0},
        {KORCH_DTYPE_UINT8, 2, {4, 12}, 6, ZP_RUNTIME, 255},
        {KORCH_DTYPE_INT8, 2, {9, 24}, 10, ZP_RUNTIME, -128},
        {KORCH_DTYPE_INT8, 3, {2, 5, 40}, 12, ZP_RUNTIME, 3},
        {KORCH_DTYPE_UINT8, 2, {4, 3072}, 16, ZP_RUNTIME, 0},
        {KORCH_DTYPE_UINT8, 2, {4, 3072}, 16, ZP_NONE, 0},
        {KORCH_DTYPE_INT8, 2, {4, 3072}, 16, ZP_NONE, 0},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char what[160];
        snprintf(what, sizeof what, "%s A %lldx%lld%s, N %lld, zp %s %d",
                 cases[i].ta == KORCH_DTYPE_UINT8 ? "u8" : "s8", (long long)cases[i].a[0], (long long)cases[i].a[1],
                 cases[i].rank == 3 ? " (batched)" : "", (long long)cases[i].n,
                 cases[i].zf == ZP_NONE ? "none" : cases[i].zf == ZP_CONST ? "constant" : "run-time", cases[i].zp);
        /* the K = 3072 case: weights in [-128, -97], one sign, push the sums past 2^24 */
        bool extreme = cases[i].a[cases[i].rank - 1] == 3072;
        korch_pgraph *pg = build(cases[i].ta, cases[i].rank, cases[i].a, cases[i].n, cases[i].zf, cases[i].zp,
                                 -128, extreme ? -97 : 127, false);
        check(pg, cases[i].zp, what);
        korch_pgraph_free(pg);
    }
    struct {
        korch_dtype tx;
        int64_t C, H, W, M, k, g, pad, st;
        bool zp;
        int zpv, lo, hi;
    } convs[] = {
        {KORCH_DTYPE_UINT8, 16, 10, 12, 8, 3, 1, 1, 1, true, 131, -128, 127},
        {KORCH_DTYPE_UINT8, 8, 9, 9, 16, 3, 1, 0, 2, false, 0, -128, 127},
        {KORCH_DTYPE_INT8, 12, 7, 11, 12, 3, 12, 1, 1, true, -5, -128, 127},  /* depthwise */
        {KORCH_DTYPE_UINT8, 32, 6, 8, 16, 5, 2, 2, 1, true, 255, -128, 127},  /* grouped, pad 2 */
        {KORCH_DTYPE_UINT8, 512, 4, 6, 16, 3, 1, 1, 1, true, 7, -128, -97},  /* K = 4608: sums past 2^24 */
        {KORCH_DTYPE_UINT8, 512, 4, 6, 16, 3, 1, 1, 1, false, 0, -128, -97},
        {KORCH_DTYPE_UINT8, 16, 23, 1, 8, 5, 1, 2, 1, true, 131, -128, 127},  /* H x 1, run as 1 x H */
        {KORCH_DTYPE_INT8, 12, 17, 1, 6, 3, 2, 1, 2, true, -9, -128, 127},    /* the same, grouped, strided */
    };
    for (size_t i = 0; i < sizeof convs / sizeof convs[0]; i++) {
        char what[160];
        snprintf(what, sizeof what, "conv %s C%lld %lldx%lld M%lld k%lld g%lld pad %lld stride %lld, zp %s %d",
                 convs[i].tx == KORCH_DTYPE_UINT8 ? "u8" : "s8", (long long)convs[i].C, (long long)convs[i].H,
                 (long long)convs[i].W, (long long)convs[i].M, (long long)convs[i].k, (long long)convs[i].g,
                 (long long)convs[i].pad, (long long)convs[i].st, convs[i].zp ? "run-time" : "none", convs[i].zpv);
        korch_pgraph *pg = build_conv(convs[i].tx, convs[i].C, convs[i].H, convs[i].W, convs[i].M, convs[i].k,
                                      convs[i].g, convs[i].pad, convs[i].st, convs[i].zp, convs[i].lo, convs[i].hi);
        check(pg, convs[i].zpv, what);
        korch_pgraph_free(pg);
    }
    CHECK_MSG(checked >= 9, "only %d kernels checked", checked);
    CHECK_MSG(zp_reruns >= 6, "only %d runs with a changed zero point", zp_reruns);

    /* the kernel's description */
    korch_pgraph *pg = build(KORCH_DTYPE_UINT8, 2, (int64_t[]){4, 8}, 4, ZP_RUNTIME, 1, -128, 127, false);
    korch_kernel_spec spec;
    dc_spec_all(pg, &spec);
    dn_desc d;
    char reason[256];
    CHECK_MSG(dn_analyze(&spec, &d, reason, sizeof reason), "analysis failed: %s", reason);
    CHECK_MSG(d.imatmul && d.src_zp_slot >= 0 && strstr(d.text, "u8 zp x s8 ->s32"), "description: %s", d.text);
    dc_spec_free(&spec);
    korch_pgraph_free(pg);

    /* refusals */
    pg = build(KORCH_DTYPE_UINT8, 2, (int64_t[]){4, 8}, 4, ZP_RUNTIME, 1, -128, 128, false);
    dc_refused(pg, "fit in int8", "a weight of 128");
    korch_pgraph_free(pg);
    pg = build(KORCH_DTYPE_UINT8, 2, (int64_t[]){4, 8}, 4, ZP_PER_ROW, 1, -128, 127, false);
    dc_refused(pg, "scalar zero point", "a per-row zero point");
    korch_pgraph_free(pg);
    pg = build(KORCH_DTYPE_UINT8, 2, (int64_t[]){4, 8}, 4, ZP_RUNTIME, 1, -128, 127, true);
    dc_refused(pg, "read inside the kernel", "a cast of the int32 result in the kernel");
    korch_pgraph_free(pg);
    printf("%d kernels checked, %d runs with a changed zero point\n", checked, zp_reruns);
    TEST_MAIN_END();
}
