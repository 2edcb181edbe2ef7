/* Reordered constant weights are shared between kernels (dnnl_weights.c):
 * two kernels on the same weights hold one copy; other weights, or the same
 * address holding other bytes, get their own; the last kernel frees it; and
 * every kernel computes what the interpreter does. The blocked variant of a
 * convolution reorders its weights on every x86 CPU oneDNN supports, so
 * the counts do not depend on the machine. */
#include "dnnl_check.h"
#include "backend/dnnl/dnnl_internal.h"

static korch_pgraph *conv_graph(float scale) {
    korch_pgraph *pg = dc_graph();
    int64_t xs[4] = {1, 8, 9, 9}, ws[4] = {16, 8, 3, 3};
    int x = dc_input(pg, 4, xs);
    int w = dc_constant(pg, 4, ws, -1, 1);
    float *wd = pg->values[w].constant.data;
    for (int i = 0; i < 16 * 8 * 9; i++) wd[i] *= scale;
    korch_prim_linear p = {.op = KORCH_LINEAR_CONV, .spatial = 2, .group = 1};
    for (int d = 0; d < 2; d++) {
        p.strides[d] = 1;
        p.dilations[d] = 1;
    }
    int y = korch_pgraph_linear(pg, &p, x, w);
    CHECK_MSG(y >= 0, "conv: %s", korch_last_error());
    dc_output(pg, y);
    return pg;
}

typedef struct built {
    korch_kernel_spec spec;
    korch_kernel *k;
} built;

static built build(korch_pgraph *pg) {
    built b = {0};
    dc_spec_all(pg, &b.spec);
    const char *sched = "fmt=blocked";
    korch_profile_options o = {.threads = 2};
    CHECK_OK(korch_backend_build(KORCH_BACKEND_DNNL, &b.spec, &sched, 1, &o, &b.k));
    return b;
}

/* runs b on x, compares with the interpreter on pg */
static void check_against_interpreter(korch_pgraph *pg, built *b, const char *what) {
    if (!b->k) return;
    korch_tensor x = {0}, want = {0};
    const korch_pvalue *in = &pg->values[pg->inputs[0]];
    korch_tensor_alloc(&x, in->dtype, &in->shape);
    float *px = x.data;
    for (int64_t e = 0; e < korch_tensor_numel(&x); e++) px[e] = (float)((e * 37 % 101) - 50) / 50.0f;
    CHECK_OK(korch_pgraph_interpret(pg, &x, &want));
    void *bufs[2];
    for (int i = 0; i < b->spec.n_inputs; i++) {
        const korch_pvalue *v = &pg->values[b->spec.inputs[i]];
        bufs[i] = v->is_constant ? v->constant.data : x.data;
    }
    float *got = calloc((size_t)korch_tensor_numel(&want) + 16, sizeof *got);
    void *outs[1] = {got};
    CHECK_OK(b->k->run(b->k, bufs, outs));
    CHECK_MSG(dc_compare(&want, got, what) == 0, "%s: differs from the interpreter", what);
    free(got);
    korch_tensor_free(&x);
    korch_tensor_free(&want);
}

static void destroy(built *b) {
    korch_kernel_destroy(b->k);
    dc_spec_free(&b->spec);
}

int main(void) {
    int base = dn_weights_live();
    korch_pgraph *g1 = conv_graph(1.0f), *g2 = conv_graph(0.5f);
    built a = build(g1);
    CHECK(dn_weights_live() == base + 1);
    built b = build(g1); /* the same weights, the same layout: shared */
    CHECK(dn_weights_live() == base + 1);
    built c = build(g2); /* other weights */
    CHECK(dn_weights_live() == base + 2);
    check_against_interpreter(g1, &a, "first kernel");
    check_against_interpreter(g1, &b, "second kernel, shared weights");
    check_against_interpreter(g2, &c, "other weights");
    destroy(&a);
    CHECK(dn_weights_live() == base + 2); /* b still holds the copy */
    check_against_interpreter(g1, &b, "second kernel after the first was freed");

    /* the same address with other bytes (weights freed and the memory
     * reused, here written over): a copy of its own, never the stale one */
    float *w1 = NULL;
    for (int v = 0; v < g1->n_values; v++)
        if (g1->values[v].is_constant && g1->values[v].shape.rank == 4) w1 = g1->values[v].constant.data;
    CHECK(w1 != NULL);
    if (w1) w1[5] += 1.0f;
    built d = build(g1);
    CHECK(dn_weights_live() == base + 3);
    check_against_interpreter(g1, &d, "same address, new bytes");

    destroy(&b);
    destroy(&c);
    destroy(&d);
    CHECK(dn_weights_live() == base);
    korch_pgraph_free(g1);
    korch_pgraph_free(g2);
    TEST_MAIN_END();
}
