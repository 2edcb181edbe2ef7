/* The tolerance rules of src/verify/compare.c, element by element: each
 * term can pass what it should and fails what it should not pass. */
#include <math.h>
#include <string.h>

#include "test.h"
#include "verify/verify.h"

static korch_tensor vec(korch_dtype dt, int n) {
    korch_tensor t;
    int64_t d = n;
    korch_shape s = korch_shape_make(1, &d);
    korch_tensor_alloc(&t, dt, &s);
    return t;
}

static void set(korch_tensor *t, int i, double v) {
    if (t->dtype == KORCH_DTYPE_FLOAT32) ((float *)t->data)[i] = (float)v;
    else if (t->dtype == KORCH_DTYPE_INT64) ((int64_t *)t->data)[i] = (int64_t)v;
}

static bool same(korch_tensor *got, korch_tensor *want, korch_tensor *pert, int64_t reduction, korch_verify_diff *d) {
    korch_verify_tolerance tol = korch_verify_tolerance_for(reduction);
    return korch_verify_compare(got, want, pert, &tol, d, NULL, 0);
}

int main(void) {
    korch_verify_diff d;
    /* 1. identical tensors pass with ratio 0 */
    korch_tensor a = vec(KORCH_DTYPE_FLOAT32, 64), b = vec(KORCH_DTYPE_FLOAT32, 64);
    for (int i = 0; i < 64; i++) set(&a, i, sin(i) * 3), set(&b, i, sin(i) * 3);
    CHECK(same(&a, &b, NULL, 1, &d));
    CHECK(d.mismatches == 0 && d.worst_ratio == 0);

    /* 2. a relative error of 1e-5 passes (float rounding), 1e-2 fails */
    set(&a, 10, sin(10) * 3 * (1 + 1e-5));
    CHECK(same(&a, &b, NULL, 1, &d));
    set(&a, 10, sin(10) * 3 * (1 + 1e-2));
    CHECK(!same(&a, &b, NULL, 1, &d));
    CHECK(d.mismatches == 1 && d.worst_index == 10);
    set(&a, 10, sin(10) * 3);

    /* 3. the reduction length widens the absolute term: an error of 2e-4 x
     * rms fails for an elementwise kernel and passes after 4096 summed terms */
    double rms = 0;
    for (int i = 0; i < 64; i++) rms += 9 * sin(i) * sin(i);
    rms = sqrt(rms / 64);
    set(&a, 0, 2e-4 * rms); /* b[0] = 0: only the absolute term helps */
    CHECK(!same(&a, &b, NULL, 1, &d));
    CHECK(same(&a, &b, NULL, 4096, &d));
    set(&a, 0, 0);

    /* 4. sensitivity: an element whose reference moves under perturbation gets
     * that much more room, the others do not */
    korch_tensor p = vec(KORCH_DTYPE_FLOAT32, 64);
    memcpy(p.data, b.data, korch_tensor_bytes(&b));
    set(&p, 20, sin(20) * 3 + 0.05);
    set(&a, 20, sin(20) * 3 + 0.2); /* 0.2 <= 8 * 0.05 */
    CHECK(!same(&a, &b, NULL, 1, &d));
    CHECK(same(&a, &b, &p, 1, &d));
    set(&a, 21, sin(21) * 3 + 0.2); /* element 21 is not sensitive */
    CHECK(!same(&a, &b, &p, 1, &d));
    CHECK(d.mismatches == 1 && d.worst_index == 21);
    set(&a, 20, sin(20) * 3), set(&a, 21, sin(21) * 3);

    /* 5. NaN and infinities: exact class match, a finite value against NaN fails */
    set(&b, 30, NAN), set(&p, 30, NAN);
    set(&a, 30, NAN);
    CHECK(same(&a, &b, &p, 1, &d));
    set(&a, 30, 1.0);
    CHECK(!same(&a, &b, &p, 1, &d));
    CHECK(isinf(d.worst_ratio));
    set(&b, 30, INFINITY), set(&p, 30, INFINITY), set(&a, 30, -INFINITY);
    CHECK(!same(&a, &b, &p, 1, &d));
    set(&a, 30, INFINITY);
    CHECK(same(&a, &b, &p, 1, &d));
    /* a reference that is infinite only when perturbed: exempt */
    set(&b, 30, 3e38), set(&p, 30, INFINITY), set(&a, 30, INFINITY);
    CHECK(same(&a, &b, &p, 1, &d));
    CHECK(d.exempt == 1);
    /* a kernel producing NaN where the reference is finite fails */
    set(&b, 30, 1), set(&p, 30, 1), set(&a, 30, NAN);
    CHECK(!same(&a, &b, &p, 1, &d));

    /* 6. integers: exact */
    korch_tensor ia = vec(KORCH_DTYPE_INT64, 8), ib = vec(KORCH_DTYPE_INT64, 8);
    for (int i = 0; i < 8; i++) set(&ia, i, i), set(&ib, i, i);
    CHECK(same(&ia, &ib, NULL, 1, &d));
    set(&ia, 3, 4);
    CHECK(!same(&ia, &ib, NULL, 1, &d));
    CHECK(d.worst_index == 3);

    /* 7. dtype and shape mismatches are reported, not compared */
    char why[160];
    korch_verify_tolerance tol = korch_verify_tolerance_for(1);
    CHECK(!korch_verify_compare(&ia, &b, NULL, &tol, &d, why, sizeof why));
    CHECK(strstr(why, "int64") != NULL);
    korch_tensor shorter = vec(KORCH_DTYPE_FLOAT32, 63);
    CHECK(!korch_verify_compare(&shorter, &b, NULL, &tol, &d, why, sizeof why));

    /* 8. the seeded fill is deterministic and in range */
    korch_tensor f1 = vec(KORCH_DTYPE_FLOAT32, 1000), f2 = vec(KORCH_DTYPE_FLOAT32, 1000);
    korch_verify_fill(&f1, 7);
    korch_verify_fill(&f2, 7);
    CHECK(memcmp(f1.data, f2.data, korch_tensor_bytes(&f1)) == 0);
    bool in_range = true;
    for (int i = 0; i < 1000; i++) in_range &= fabsf(((float *)f1.data)[i]) <= 1.0f;
    CHECK(in_range);
    korch_verify_perturb(&f2, 1);
    CHECK(memcmp(f1.data, f2.data, korch_tensor_bytes(&f1)) != 0);
    CHECK(same(&f2, &f1, NULL, 1, &d)); /* a perturbation is within the tolerance */

    /* 9. the quantization step of a dequantized output (plan checks): one
     * step passes with it, not without it, and two steps fail with it */
    korch_tensor qa = vec(KORCH_DTYPE_FLOAT32, 8), qb = vec(KORCH_DTYPE_FLOAT32, 8);
    for (int i = 0; i < 8; i++) set(&qa, i, 0.02 * (i - 4)), set(&qb, i, 0.02 * (i - 4));
    set(&qa, 5, 0.02 * 2); /* one step of 0.02 */
    korch_verify_tolerance qt = korch_verify_tolerance_for(1);
    CHECK(!korch_verify_compare(&qa, &qb, NULL, &qt, &d, NULL, 0));
    qt.step = 0.02;
    CHECK(korch_verify_compare(&qa, &qb, NULL, &qt, &d, NULL, 0));
    set(&qa, 5, 0.02 * 3); /* two steps */
    CHECK(!korch_verify_compare(&qa, &qb, NULL, &qt, &d, NULL, 0));

    /* 10. the rounding floor of the sources (korch-difftest seed 6068): an
     * all-zero reference computed from values of magnitude 4 (a cancelling
     * sum, ReduceSum(Concat(x, -x))) against a plan's float32 noise of 1e-9.
     * Without the sources' magnitude the tolerance is 1e-30 and it fails;
     * with it, it passes, in a kernel and in a plan check alike. An error of
     * the size of the sources (a missed tail: one term of x left over) and
     * one of a thousandth of it still fail. */
    korch_tensor za = vec(KORCH_DTYPE_FLOAT32, 64), zb = vec(KORCH_DTYPE_FLOAT32, 64);
    for (int i = 0; i < 64; i++) set(&za, i, (i % 3 - 1) * 1e-9), set(&zb, i, 0);
    korch_verify_tolerance zt = korch_verify_tolerance_for(128);
    CHECK(!korch_verify_compare(&za, &zb, NULL, &zt, &d, NULL, 0));
    CHECK(d.mismatches > 0);
    zt.sources = 4.0;
    CHECK(korch_verify_compare(&za, &zb, NULL, &zt, &d, NULL, 0));
    korch_verify_tolerance zp = korch_verify_plan_tolerance(NULL, NULL);
    CHECK(!korch_verify_compare(&za, &zb, NULL, &zp, &d, NULL, 0));
    zp.sources = 4.0;
    CHECK(korch_verify_compare(&za, &zb, NULL, &zp, &d, NULL, 0));
    set(&za, 17, 3.1); /* a term of x (magnitude up to 4) not cancelled */
    CHECK(!korch_verify_compare(&za, &zb, NULL, &zt, &d, NULL, 0));
    CHECK(d.mismatches == 1 && d.worst_index == 17);
    CHECK(!korch_verify_compare(&za, &zb, NULL, &zp, &d, NULL, 0));
    set(&za, 17, 4e-3); /* a thousandth of the sources */
    CHECK(!korch_verify_compare(&za, &zb, NULL, &zt, &d, NULL, 0));
    CHECK(!korch_verify_compare(&za, &zb, NULL, &zp, &d, NULL, 0));
    /* the floor is float32 rounding, not a loosening: below a thousandth
     * of the sources even after 4096 summed terms in a kernel */
    korch_verify_tolerance zk = korch_verify_tolerance_for(4096);
    zk.sources = 4.0;
    CHECK(!korch_verify_compare(&za, &zb, NULL, &zk, &d, NULL, 0));
    /* unknown (0) or non-finite sources add nothing */
    zt.sources = INFINITY;
    set(&za, 17, 0);
    CHECK(!korch_verify_compare(&za, &zb, NULL, &zt, &d, NULL, 0));

    /* 11. the sources' magnitude: finite floats only, integers carry none */
    set(&zb, 3, -7.5), set(&zb, 4, NAN), set(&zb, 5, INFINITY);
    CHECK(korch_verify_max_abs(&zb) == 7.5);
    CHECK(korch_verify_max_abs(&ia) == 0);

    korch_tensor *all[] = {&a, &b, &p, &ia, &ib, &shorter, &f1, &f2, &qa, &qb, &za, &zb};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) korch_tensor_free(all[i]);
    /* 11. the noise rule (korch_verify_noise_compare): a plan as far from
     * the reference as a second correct computation passes, one four times
     * as far passes at the limit, a fault far beyond it fails, and NaN must
     * meet NaN */
    {
        korch_tensor w = vec(KORCH_DTYPE_FLOAT32, 1000), p = vec(KORCH_DTYPE_FLOAT32, 1000),
                     g = vec(KORCH_DTYPE_FLOAT32, 1000);
        for (int i = 0; i < 1000; i++) {
            set(&w, i, cos(i));
            set(&p, i, cos(i) + (i % 50 == 0 ? 0.01 : 0)); /* 20 flips of 0.01 */
            set(&g, i, cos(i) + (i % 50 == 25 ? 0.01 : 0)); /* 20 others */
        }
        double ratio = 0;
        char text[240];
        CHECK(korch_verify_noise_compare(&g, &w, &p, "test", &ratio, text, sizeof text));
        CHECK_MSG(ratio > 0.2 && ratio < 0.3, "as far as the second computation: ratio %g (%s)", ratio, text);
        CHECK(strstr(text, "test noise rule") != NULL);
        set(&g, 25, cos(25) + 0.039); /* max 0.039 < 4 x 0.01 + 1e-4: passes */
        CHECK_MSG(korch_verify_noise_compare(&g, &w, &p, "test", &ratio, text, sizeof text), "%s", text);
        set(&g, 25, cos(25) + 0.5); /* a fault 50 times the noise */
        CHECK(!korch_verify_noise_compare(&g, &w, &p, "test", &ratio, text, sizeof text));
        CHECK(ratio > 10);
        for (int i = 0; i < 1000; i++) set(&g, i, cos(i) + 0.03); /* every element off by 3 flips' worth */
        CHECK_MSG(!korch_verify_noise_compare(&g, &w, &p, "test", &ratio, text, sizeof text),
                  "a shifted tensor passed: mean rule not applied (%s)", text);
        for (int i = 0; i < 1000; i++) set(&g, i, cos(i));
        set(&w, 7, NAN);
        CHECK(!korch_verify_noise_compare(&g, &w, &p, "test", &ratio, text, sizeof text));
        set(&g, 7, NAN);
        CHECK(korch_verify_noise_compare(&g, &w, &p, "test", &ratio, text, sizeof text));
        korch_tensor_free(&w);
        korch_tensor_free(&p);
        korch_tensor_free(&g);
    }
    TEST_MAIN_END();
}
