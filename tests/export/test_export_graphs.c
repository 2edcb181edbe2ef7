/* Exported C against the primitive interpreter, without the model zoo:
 * random primitive graphs (elementwise chains and joins, reductions,
 * transposes, matmuls) under plans of single REF kernels (exported with the
 * reference routines, and with the code generator) and under fused plans
 * chosen with estimated latencies on the real backends (in-place kernels
 * included); plus a hand-built graph of convolutions (grouped, strided,
 * dilated, transposed) and layouts with pads and tables, and channels-last
 * convolutions (REF routines and oneDNN kernels), and integer matmuls and
 * convolutions whose source zero point the exported runtime corrects
 * (oneDNN's int8 kernels, with VNNI). Each export is built
 * with its Makefile and CFLAGS_EXTRA=-Werror and run through model_run. */
#include <unistd.h>

#include "backend/dnnl/dnnl_internal.h"
#include "export_harness.h"
#include "ir/indexmap.h"
#include "orchestrate/fake_oracle.h"
#include "orchestrate/pgraph_gen.h"
#include "runtime/arena.h"
#include "test.h"

static char tmp[] = "/tmp/korch_test_export_XXXXXX";
static int exports = 0, in_place = 0;

static bool close_enough(const korch_tensor *got, const korch_tensor *want) {
    if (got->dtype != want->dtype || !korch_shape_equal(&got->shape, &want->shape)) return false;
    double scale = 0;
    for (int64_t i = 0; i < korch_tensor_numel(want); i++)
        if (fabs(korch_tensor_get_f64(want, i)) > scale) scale = fabs(korch_tensor_get_f64(want, i));
    for (int64_t i = 0; i < korch_tensor_numel(want); i++) {
        double a = korch_tensor_get_f64(got, i), b = korch_tensor_get_f64(want, i);
        if (!(fabs(a - b) <= 1e-5 * (1 + scale) + 2e-5 * fabs(b))) return false;
    }
    return true;
}

/* in: pg's inputs (freed here) */
static void check_export_on(const korch_pgraph *pg, const korch_plan *plan, bool reference_routines, korch_tensor *in,
                            const char *what) {
    char dir[256];
    snprintf(dir, sizeof dir, "%s/e%d", tmp, exports++);
    korch_tensor *want = calloc((size_t)pg->n_outputs, sizeof *want), *got = calloc((size_t)pg->n_outputs, sizeof *got);
    CHECK_OK(korch_pgraph_interpret(pg, in, want));
    korch_export_options o = {.reference_routines = reference_routines};
    const char *why = harness_export_run(plan, pg, dir, &o, in, got);
    CHECK_MSG(!why, "%s: %s", what, why ? why : "");
    for (int i = 0; !why && i < pg->n_outputs; i++)
        CHECK_MSG(close_enough(&got[i], &want[i]), "%s (%s): output %d differs from the interpreter", what, dir, i);
    korch_memory_plan mp;
    if (korch_memory_plan_build(plan, pg, &mp) == KORCH_OK) {
        in_place += mp.n_in_place;
        korch_memory_plan_free(&mp);
    }
    gen_free_tensors(in, pg->n_inputs);
    gen_free_tensors(want, pg->n_outputs);
    gen_free_tensors(got, pg->n_outputs);
    if (!why && !test_failures) harness_sh("rm -rf %s%s", dir, "");
}

static void check_export(const korch_pgraph *pg, const korch_plan *plan, bool reference_routines, uint64_t seed,
                         const char *what) {
    check_export_on(pg, plan, reference_routines, gen_inputs(pg, seed), what);
}

static korch_plan *one_kernel_per_node(const korch_pgraph *pg, korch_backend_kind backend) {
    korch_pgraph_uses uses;
    korch_pgraph_uses_build(pg, &uses);
    korch_plan *plan = korch_plan_new();
    plan->pgraph_nodes = pg->n_nodes;
    plan->threads = 2;
    int order[256], count = 0;
    korch_pgraph_toposort(pg, order, &count);
    for (int i = 0; i < count; i++) {
        if (!uses.live[order[i]]) continue;
        korch_plan_kernel *k = korch_plan_add_kernel(plan, pg, &uses, 1, &order[i]);
        if (k) k->backend = backend;
    }
    korch_pgraph_uses_free(&uses);
    return plan;
}

/* the real backends' support answers, estimated latencies */
static korch_plan *estimated_plan(const korch_pgraph *pg) {
    korch_machine_model machine = korch_machine_model_typical(2);
    korch_kernel_oracle oracle = korch_kernel_oracle_estimate(&machine);
    korch_orchestrate_options o = test_orchestrate_options(2);
    korch_orchestrator *orch = NULL;
    korch_plan *plan = NULL;
    CHECK_OK(korch_orchestrator_create(pg, &oracle, &o, KORCH_STRATEGY_OPTIMAL, &orch));
    if (orch) CHECK_OK(korch_orchestrator_profile(orch));
    if (orch) CHECK_OK(korch_orchestrator_solve(orch, KORCH_STRATEGY_OPTIMAL, &plan));
    korch_orchestrator_free(orch);
    if (plan) plan->threads = 2;
    return plan;
}

static void test_random_graphs(void) {
    for (uint64_t seed = 1; seed <= 4; seed++) {
        korch_pgraph *pg = gen_random_pgraph(seed * 7 + 1, 10 + (int)seed * 2, true);
        korch_plan *plan = one_kernel_per_node(pg, KORCH_BACKEND_REF);
        char what[64];
        snprintf(what, sizeof what, "random graph %llu, REF kernels", (unsigned long long)seed);
        check_export(pg, plan, true, seed, what);
        if (seed <= 2) {
            snprintf(what, sizeof what, "random graph %llu, REF kernels via cgen", (unsigned long long)seed);
            check_export(pg, plan, false, seed, what);
        }
        korch_plan_free(plan);
        plan = estimated_plan(pg);
        snprintf(what, sizeof what, "random graph %llu, fused plan", (unsigned long long)seed);
        if (plan) check_export(pg, plan, false, seed, what);
        korch_plan_free(plan);
        korch_pgraph_free(pg);
    }
}

static int add_input(korch_pgraph *pg, int rank, const int64_t *dims) {
    korch_shape s = korch_shape_make(rank, dims);
    return korch_pgraph_add_input(pg, KORCH_DTYPE_FLOAT32, &s);
}

static int add_weights(korch_pgraph *pg, int rank, const int64_t *dims, gen_rng *r) {
    korch_tensor t;
    korch_shape s = korch_shape_make(rank, dims);
    korch_tensor_alloc(&t, KORCH_DTYPE_FLOAT32, &s);
    for (int64_t i = 0; i < korch_tensor_numel(&t); i++) ((float *)t.data)[i] = (float)(gen_unit(r) - 1.0) * 0.5f;
    return korch_pgraph_add_constant(pg, &t);
}

/* x [1,4,9,9] -> conv 3x3 stride 2 pad 1 (8 ch) -> relu -> grouped dilated
 * conv (groups 2) -> conv transpose stride 2 -> pad with -1 -> nearest-style
 * remap with a table -> reduce max over H -> output; and a window layout */
static korch_pgraph *conv_graph(void) {
    korch_pgraph *pg = NULL;
    korch_pgraph_create(NULL, &pg);
    gen_rng r = {77};
    int x = add_input(pg, 4, (int64_t[]){1, 4, 9, 9});
    korch_prim_linear c1 = {.op = KORCH_LINEAR_CONV, .spatial = 2, .group = 1, .strides = {2, 2}, .dilations = {1, 1},
                            .pads_begin = {1, 1}, .pads_end = {1, 1}};
    int y = korch_pgraph_linear(pg, &c1, x, add_weights(pg, 4, (int64_t[]){8, 4, 3, 3}, &r)); /* [1,8,5,5] */
    y = gen_unary(pg, KORCH_EW_RELU, y);
    korch_prim_linear c2 = {.op = KORCH_LINEAR_CONV, .spatial = 2, .group = 2, .strides = {1, 1}, .dilations = {2, 2},
                            .pads_begin = {2, 2}, .pads_end = {2, 2}};
    y = korch_pgraph_linear(pg, &c2, y, add_weights(pg, 4, (int64_t[]){6, 4, 3, 3}, &r)); /* [1,6,5,5] */
    korch_prim_linear c3 = {.op = KORCH_LINEAR_CONV_TRANSPOSE, .spatial = 2, .group = 1, .strides = {2, 2},
                            .dilations = {1, 1}, .pads_begin = {1, 1}, .pads_end = {1, 1}};
    y = korch_pgraph_linear(pg, &c3, y, add_weights(pg, 4, (int64_t[]){6, 3, 3, 3}, &r)); /* [1,3,9,9] */
    y = korch_pgraph_pad(pg, y, (int64_t[]){0, 0, 1, 0}, (int64_t[]){0, 0, 0, 2}, KORCH_PAD_CONSTANT, -1.0);
    /* the layout takes ownership of its tables */
    int64_t *rows = malloc(7 * sizeof *rows), *tables[4] = {NULL, NULL, rows, NULL};
    memcpy(rows, (int64_t[]){0, 0, 2, 4, 6, 8, -1}, 7 * sizeof *rows);
    korch_shape rs = korch_shape_make(4, (int64_t[]){1, 3, 7, 11});
    y = korch_pgraph_remap(pg, KORCH_LAYOUT_RESIZE_NEAREST, y, &rs, tables, 0.5);
    int m = korch_pgraph_reduce(pg, KORCH_REDUCE_MAX, y, 1u << 2, false); /* [1,3,11] */
    gen_output(pg, m);
    int w = korch_pgraph_window(pg, x, 2, (int64_t[]){2, 2}, (int64_t[]){2, 2}, (int64_t[]){1, 1}, (int64_t[]){0, 0},
                                (int64_t[]){4, 4}, 0.0);
    gen_output(pg, korch_pgraph_reduce(pg, KORCH_REDUCE_MEAN, w, (1u << 4) | (1u << 5), false));
    if (m < 0 || w < 0) fprintf(stderr, "conv graph: %s\n", korch_last_error());
    return pg;
}

/* channels-last convolutions (what the layout pass makes for oneDNN): x
 * [1,6,6,4] NHWC -> conv 3x3 pad 1 (5 ch, groups 1) -> conv transpose
 * stride 2 -> output [1,11,11,3] NHWC */
static korch_pgraph *nhwc_graph(void) {
    korch_pgraph *pg = NULL;
    korch_pgraph_create(NULL, &pg);
    gen_rng r = {91};
    int x = add_input(pg, 4, (int64_t[]){1, 6, 6, 4});
    korch_prim_linear c1 = {.op = KORCH_LINEAR_CONV, .spatial = 2, .group = 1, .strides = {1, 1}, .dilations = {1, 1},
                            .pads_begin = {1, 1}, .pads_end = {1, 1}, .channels_last = true};
    int y = korch_pgraph_linear(pg, &c1, x, add_weights(pg, 4, (int64_t[]){5, 4, 3, 3}, &r));
    y = gen_unary(pg, KORCH_EW_TANH, y);
    korch_prim_linear c2 = {.op = KORCH_LINEAR_CONV_TRANSPOSE, .spatial = 2, .group = 1, .strides = {2, 2},
                            .dilations = {1, 1}, .pads_begin = {1, 1}, .pads_end = {1, 1}, .channels_last = true};
    y = korch_pgraph_linear(pg, &c2, y, add_weights(pg, 4, (int64_t[]){5, 3, 3, 3}, &r));
    if (y < 0) fprintf(stderr, "nhwc graph: %s\n", korch_last_error());
    gen_output(pg, y);
    return pg;
}

/* two channels-last convolutions on the same weights: the exported model
 * reorders them once and both kernels read that copy (kx_dn_reorder_weights
 * with the earlier kernels' set); released once */
static korch_pgraph *shared_weights_graph(void) {
    korch_pgraph *pg = NULL;
    korch_pgraph_create(NULL, &pg);
    gen_rng r = {57};
    int x = add_input(pg, 4, (int64_t[]){1, 7, 7, 8});
    int w = add_weights(pg, 4, (int64_t[]){8, 8, 3, 3}, &r);
    korch_prim_linear c = {.op = KORCH_LINEAR_CONV, .spatial = 2, .group = 1, .strides = {1, 1}, .dilations = {1, 1},
                           .pads_begin = {1, 1}, .pads_end = {1, 1}, .channels_last = true};
    int y = korch_pgraph_linear(pg, &c, x, w);
    y = gen_unary(pg, KORCH_EW_TANH, y);
    y = korch_pgraph_linear(pg, &c, y, w);
    if (y < 0) fprintf(stderr, "shared weights graph: %s\n", korch_last_error());
    gen_output(pg, y);
    return pg;
}

static void test_conv_graph(void) {
    korch_pgraph *pg = conv_graph();
    korch_plan *plan = one_kernel_per_node(pg, KORCH_BACKEND_REF);
    check_export(pg, plan, true, 3, "conv graph, REF kernels");
    korch_plan_free(plan);
    plan = estimated_plan(pg);
    if (plan) check_export(pg, plan, false, 3, "conv graph, fused plan");
    korch_plan_free(plan);
    korch_pgraph_free(pg);
    pg = nhwc_graph();
    plan = one_kernel_per_node(pg, KORCH_BACKEND_REF);
    check_export(pg, plan, true, 4, "channels-last graph, REF kernels");
    korch_plan_free(plan);
    plan = estimated_plan(pg);
    int dnnl = 0;
    for (int k = 0; plan && k < plan->n_kernels; k++) dnnl += plan->kernels[k].backend == KORCH_BACKEND_DNNL;
    CHECK_MSG(dnnl == 2, "the channels-last plan has %d oneDNN kernels", dnnl);
    if (plan) check_export(pg, plan, false, 4, "channels-last graph, fused plan (oneDNN)");
    korch_plan_free(plan);
    korch_pgraph_free(pg);
    pg = shared_weights_graph();
    plan = estimated_plan(pg);
    dnnl = 0;
    for (int k = 0; plan && k < plan->n_kernels; k++) dnnl += plan->kernels[k].backend == KORCH_BACKEND_DNNL;
    CHECK_MSG(dnnl == 2, "the shared-weights plan has %d oneDNN kernels", dnnl);
    if (plan) check_export(pg, plan, false, 5, "two convolutions on the same weights (oneDNN)");
    korch_plan_free(plan);
    korch_pgraph_free(pg);
}

/* ---- integer kernels (MatMulInteger, ConvInteger: dnnl_imatmul.c) -------------- */

static int int32_constant(korch_pgraph *pg, int rank, const int64_t *dims, gen_rng *r) {
    korch_tensor t;
    korch_shape s = korch_shape_make(rank, dims);
    korch_tensor_alloc(&t, KORCH_DTYPE_INT32, &s);
    for (int64_t i = 0; i < korch_tensor_numel(&t); i++) ((int32_t *)t.data)[i] = (int32_t)(gen_below(r, 255)) - 127;
    return korch_pgraph_add_constant(pg, &t);
}

static int cast_to(korch_pgraph *pg, int x, korch_dtype t) {
    return korch_pgraph_elementwise(pg, KORCH_EW_CAST, 1, &x, 0, 0, t);
}

/* (A - zp) x W with A a uint8 input, zp a scalar uint8 input (run time) or
 * the constant 77, W int32 constants in [-127, 127]: a matmul [5, 37] x
 * [37, 11], or a grouped, strided, padded convolution, 3x3 over 7x7 or
 * (unit_w) 3x1 over 9x1 (described to oneDNN as 1 x 9: swap_unit_width);
 * int32 out */
static korch_pgraph *integer_graph(bool conv, bool runtime_zp, bool unit_w) {
    korch_pgraph *pg = NULL;
    korch_pgraph_create(NULL, &pg);
    gen_rng r = {conv ? 13u : 17u};
    korch_shape as = !conv  ? korch_shape_make(2, (int64_t[]){5, 37})
                     : unit_w ? korch_shape_make(4, (int64_t[]){1, 6, 9, 1})
                              : korch_shape_make(4, (int64_t[]){1, 6, 7, 7});
    int a = korch_pgraph_add_input(pg, KORCH_DTYPE_UINT8, &as), z;
    if (runtime_zp) {
        korch_shape zs = {.rank = 0};
        z = cast_to(pg, korch_pgraph_add_input(pg, KORCH_DTYPE_UINT8, &zs), KORCH_DTYPE_INT32);
    } else {
        korch_tensor t;
        korch_shape zs = {.rank = 0};
        korch_tensor_alloc(&t, KORCH_DTYPE_INT32, &zs);
        *(int32_t *)t.data = 77;
        z = korch_pgraph_add_constant(pg, &t);
    }
    int ins[2] = {cast_to(pg, a, KORCH_DTYPE_INT32), z};
    int x = korch_pgraph_elementwise(pg, KORCH_EW_SUB, 2, ins, 0, 0, KORCH_DTYPE_UNDEFINED), y;
    if (conv) {
        korch_prim_linear c = {.op = KORCH_LINEAR_CONV, .spatial = 2, .group = 2, .strides = {2, unit_w ? 1 : 2},
                               .dilations = {1, 1}, .pads_begin = {1, unit_w ? 0 : 1}, .pads_end = {1, unit_w ? 0 : 1}};
        y = korch_pgraph_linear(pg, &c, x, int32_constant(pg, 4, (int64_t[]){4, 3, 3, unit_w ? 1 : 3}, &r));
    } else {
        korch_prim_linear m = {.op = KORCH_LINEAR_MATMUL};
        y = korch_pgraph_linear(pg, &m, x, int32_constant(pg, 2, (int64_t[]){37, 11}, &r));
    }
    if (y < 0) fprintf(stderr, "integer graph: %s\n", korch_last_error());
    gen_output(pg, y);
    return pg;
}

/* every node in one oneDNN kernel (the backend's integer kernel), exported
 * (its zero-point correction in the exported runtime) */
static void test_integer_kernels(void) {
    for (int form = 0; form < 6; form++) {
        bool conv = form >= 2, runtime_zp = form % 2 == 1, unit_w = form >= 4;
        korch_pgraph *pg = integer_graph(conv, runtime_zp, unit_w);
        korch_pgraph_uses uses;
        korch_pgraph_uses_build(pg, &uses);
        korch_plan *plan = korch_plan_new();
        plan->pgraph_nodes = pg->n_nodes;
        plan->threads = 2;
        int nodes[8], n = 0, order[16], count = 0;
        korch_pgraph_toposort(pg, order, &count);
        for (int i = 0; i < count && n < 8; i++)
            if (uses.live[order[i]]) nodes[n++] = order[i];
        korch_plan_kernel *k = korch_plan_add_kernel(plan, pg, &uses, n, nodes);
        if (k) k->backend = KORCH_BACKEND_DNNL;
        korch_pgraph_uses_free(&uses);
        /* uint8 inputs over their range, the zero point 201 */
        korch_tensor *in = calloc((size_t)pg->n_inputs, sizeof *in);
        gen_rng r = {29};
        for (int i = 0; i < pg->n_inputs; i++) {
            const korch_pvalue *v = &pg->values[pg->inputs[i]];
            korch_tensor_alloc(&in[i], v->dtype, &v->shape);
            for (int64_t e = 0; e < korch_tensor_numel(&in[i]); e++)
                ((uint8_t *)in[i].data)[e] = i == 1 ? 201 : (uint8_t)gen_below(&r, 256);
        }
        char what[96];
        snprintf(what, sizeof what, "integer %s, zero point %s (oneDNN int8, corrected after)",
                 !conv ? "matmul" : unit_w ? "convolution 3x1 over 9x1" : "convolution",
                 runtime_zp ? "read at run time" : "constant");
        check_export_on(pg, plan, false, in, what);
        korch_plan_free(plan);
        korch_pgraph_free(pg);
    }
}

/* refusals name the kernel: a fused REF kernel with a linear primitive */
static void test_refusal(void) {
    korch_pgraph *pg = NULL;
    korch_pgraph_create(NULL, &pg);
    gen_rng r = {5};
    int x = gen_input(pg, 4, 4);
    int y = gen_matmul(pg, x, gen_constant(pg, &r));
    gen_output(pg, gen_unary(pg, KORCH_EW_RELU, y));
    korch_pgraph_uses uses;
    korch_pgraph_uses_build(pg, &uses);
    korch_plan *plan = korch_plan_new();
    plan->pgraph_nodes = pg->n_nodes;
    int nodes[2] = {0, 1};
    korch_plan_kernel *k = korch_plan_add_kernel(plan, pg, &uses, 2, nodes);
    if (k) k->backend = KORCH_BACKEND_REF;
    char dir[300];
    snprintf(dir, sizeof dir, "%s/refused", tmp);
    CHECK(korch_export_write(plan, pg, dir, NULL, NULL) == KORCH_ERR_UNSUPPORTED);
    CHECK(strstr(korch_last_error(), "kernel 0") != NULL);
    CHECK(access(dir, F_OK) != 0); /* nothing written */
    korch_plan_free(plan);
    korch_pgraph_uses_free(&uses);
    korch_pgraph_free(pg);
}

int main(void) {
    if (!mkdtemp(tmp)) return 1;
    char cache[300];
    snprintf(cache, sizeof cache, "%s/cache", tmp);
    setenv("XDG_CACHE_HOME", cache, 1);
    test_random_graphs();
    test_conv_graph();
    if (dn_int8_exact_cpu()) test_integer_kernels(); /* offered only with VNNI */
    test_refusal();
    printf("%d exports built with -Werror and run; %d kernels in place\n", exports, in_place);
    CHECK(in_place > 0);
    if (!test_failures) harness_sh("rm -rf %s%s", tmp, "");
    else printf("kept %s for inspection\n", tmp);
    TEST_MAIN_END();
}
