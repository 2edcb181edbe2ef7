/* QuantizeLinear through fission and the code generator (rules_quant.c):
 * the plan's kernel must equal the reference kernel bit for bit on inputs
 * that sit on rounding ties, where x * (1/scale), the product the generator
 * uses for a hoisted divisor, rounds the other way than x / scale. Also NaN
 * (to the zero point), infinities and out-of-range values (saturated), per
 * tensor and per axis, uint8 and int8, with and without a zero point.
 *
 * The whole primitive graph is one generated kernel under contrasting
 * schedules, compared with korch_reference_run of the operator. The test
 * counts the inputs on which the two divisions disagree after rounding, and
 * requires some: without the exact division (DIV alpha 1) it fails. */
#include <math.h>

#include "../fission/fission_harness.h"
#include "backend/backend.h"
#include "cgen_check.h"

enum { N = 600 };

/* Values near the ties (k + 0.5) * s of scale s, and the specials. */
static void tie_inputs(float *x, int n, const float *scales, int n_scales, int inner, int *flips) {
    *flips = 0;
    for (int i = 0; i < n; i++) {
        float s = scales[(i / inner) % n_scales];
        int k = (i % 300) - 150;
        float t = (float)((k + 0.5) * (double)s);
        x[i] = i % 3 == 0 ? t : nextafterf(t, i % 3 == 1 ? INFINITY : -INFINITY);
        if (nearbyintf(x[i] / s) != nearbyintf(x[i] * (1.0f / s))) ++*flips;
    }
    x[0] = NAN, x[1] = INFINITY, x[2] = -INFINITY, x[3] = 1e30f, x[4] = -1e30f, x[5] = -0.0f;
}

static void check(korch_dtype zp_type, bool with_zp, bool per_axis) {
    char what[128];
    snprintf(what, sizeof what, "QuantizeLinear %s%s, %s", with_zp ? korch_dtype_name(zp_type) : "no zero point",
             with_zp ? " zero point" : "", per_axis ? "per axis" : "per tensor");
    korch_graph *g = fh_begin(13);
    fh_input(g, "x", KORCH_DTYPE_FLOAT32, 3, (int64_t[]){2, 3, N / 6});
    static const float scales[3] = {0.1f, 0.3f, 0.02f};
    fh_const_f32(g, "s", per_axis ? 1 : 0, (int64_t[]){3}, scales);
    const char *ins = "x,s";
    if (with_zp) {
        korch_tensor zp;
        korch_shape zs = per_axis ? korch_shape_make(1, (int64_t[]){3}) : korch_shape_make(0, NULL);
        korch_tensor_alloc(&zp, zp_type, &zs);
        for (int c = 0; c < (per_axis ? 3 : 1); c++) {
            int v = zp_type == KORCH_DTYPE_UINT8 ? 100 + 20 * c : -10 + 7 * c;
            if (zp_type == KORCH_DTYPE_UINT8) ((uint8_t *)zp.data)[c] = (uint8_t)v;
            else ((int8_t *)zp.data)[c] = (int8_t)v;
        }
        fh_const(g, "z", &zp);
        ins = "x,s,z";
    }
    int n = fh_node(g, "QuantizeLinear", ins, "y");
    if (per_axis) fh_attr_int(g, n, "axis", 1);
    fh_output(g, "y");
    CHECK_OK(korch_graph_validate(g));
    CHECK_OK(korch_graph_infer(g, NULL, 0));

    korch_tensor x, want;
    korch_shape xs = korch_shape_make(3, (int64_t[]){2, 3, N / 6});
    korch_tensor_alloc(&x, KORCH_DTYPE_FLOAT32, &xs);
    int flips;
    tie_inputs(x.data, N, scales, per_axis ? 3 : 1, per_axis ? N / 6 : N, &flips);
    CHECK_MSG(flips > 20, "%s: only %d inputs where x / s and x * (1/s) round apart", what, flips);
    CHECK_OK(korch_reference_run(g, &x, &want));

    korch_pgraph *pg = NULL;
    CHECK_OK(korch_fission(g, &pg, NULL));
    if (!pg) {
        korch_graph_free(g);
        return;
    }
    CHECK_MSG(fh_count_kind(pg, KORCH_PRIM_OPAQUE) == 0, "%s: QuantizeLinear stayed opaque", what);
    korch_kernel_spec spec;
    cc_spec_all(pg, &spec);
    void *in[4] = {0};
    for (int i = 0; i < spec.n_inputs; i++) {
        const korch_pvalue *v = &pg->values[spec.inputs[i]];
        in[i] = v->is_constant ? v->constant.data : x.data;
    }
    for (int s = 0; s < CC_N_SCHED; s++) {
        korch_kernel *k = NULL;
        korch_profile_options opt = {.threads = 2};
        const char *sched = cc_schedules[s];
        if (korch_backend_build(KORCH_BACKEND_CGEN, &spec, &sched, 1, &opt, &k) != KORCH_OK) {
            CHECK_MSG(false, "%s [%s]: build: %s", what, sched, korch_last_error());
            continue;
        }
        uint8_t got[N];
        memset(got, 0xA5, sizeof got);
        void *out[1] = {got};
        CHECK_OK(k->run(k, in, out));
        int bad = 0;
        for (int i = 0; i < N; i++) {
            if (got[i] == ((const uint8_t *)want.data)[i]) continue;
            if (bad++ < 4)
                fprintf(stderr, "%s [%s]: element %d (x = %.9g): got %d want %d\n", what, sched, i,
                        (double)((float *)x.data)[i], got[i], ((const uint8_t *)want.data)[i]);
        }
        CHECK_MSG(bad == 0, "%s [%s]: %d of %d elements differ from the reference kernel", what, sched, bad, N);
        korch_kernel_destroy(k);
    }
    cc_spec_free(&spec);
    korch_pgraph_free(pg);
    korch_tensor_free(&x);
    korch_tensor_free(&want);
    korch_graph_free(g);
}

int main(void) {
    for (int axis = 0; axis < 2; axis++) {
        check(KORCH_DTYPE_UINT8, false, axis);
        check(KORCH_DTYPE_UINT8, true, axis);
        check(KORCH_DTYPE_INT8, true, axis);
    }
    TEST_MAIN_END();
}
