/* korch-difftest --selftest: the comparison can fail, and the generator is a
 * function of its seed. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "compare.h"
#include "frontend/onnx_load.h"
#include "gen.h"

static int failures;
#define EXPECT(c, msg)                                                                             \
    do {                                                                                           \
        if (!(c)) {                                                                                \
            failures++;                                                                            \
            fprintf(stderr, "selftest: %s\n", msg);                                               \
        }                                                                                          \
    } while (0)

static void check_compare(void) {
    float want[6] = {1, -2, 3, 0, NAN, INFINITY}, got[6];
    korch_tensor w = {.dtype = KORCH_DTYPE_FLOAT32, .shape = {.rank = 1, .dims = {6}}, .data = want};
    korch_tensor g = w;
    g.data = got;
    dt_mismatch m;
    memcpy(got, want, sizeof got);
    EXPECT(dt_compare(&g, &w, 1, 0, &m), "identical tensors differ");
    got[1] = -2.00001f; /* within 1e-4 relative */
    EXPECT(dt_compare(&g, &w, 1, 0, &m), "a rounding-size difference fails");
    got[1] = -2.01f;
    EXPECT(!dt_compare(&g, &w, 1, 0, &m) && m.index == 1 && m.count == 1, "a 0.5% error passes");
    memcpy(got, want, sizeof got);
    got[4] = 0;
    EXPECT(!dt_compare(&g, &w, 1, 0, &m), "a lost NaN passes");
    memcpy(got, want, sizeof got);
    got[5] = -INFINITY;
    EXPECT(!dt_compare(&g, &w, 1, 0, &m), "a flipped infinity passes");
    memcpy(got, want, sizeof got);
    got[3] = 3e-4f; /* 1e-4 of the scale 3: beyond 2e-5 + 2e-7 */
    EXPECT(!dt_compare(&g, &w, 1, 0, &m), "an absolute error of 1e-4 * scale passes with 1 term");
    EXPECT(dt_compare(&g, &w, 1000, 0, &m), "an absolute error of 1e-4 * scale fails with 1000 terms");
    float tiny_w[2] = {1.5e-5f, 1e-5f}, tiny_g[2] = {1.52e-5f, 1e-5f};
    korch_tensor tw = {.dtype = KORCH_DTYPE_FLOAT32, .shape = {.rank = 1, .dims = {2}}, .data = tiny_w}, tg = tw;
    tg.data = tiny_g;
    EXPECT(!dt_compare(&tg, &tw, 1, 0, &m), "a 1% error on a small output passes");
    EXPECT(dt_compare(&tg, &tw, 1, 1.0, &m), "a rounding-size error of intermediates of scale 1 fails");
    int64_t iw[2] = {5, 7}, ig[2] = {5, 8};
    korch_tensor a = {.dtype = KORCH_DTYPE_INT64, .shape = {.rank = 1, .dims = {2}}, .data = iw}, b = a;
    b.data = ig;
    EXPECT(!dt_compare(&b, &a, 1e6, 0, &m), "integers compared inexactly");
    korch_tensor s = w;
    s.shape.dims[0] = 5;
    EXPECT(!dt_compare(&s, &w, 1, 0, &m) && m.what[0], "a shape mismatch passes");
}

static void check_generator(void) {
    char a[] = "/tmp/korch-difftest-selftest-XXXXXX", pa[128], pb[128];
    if (!mkdtemp(a)) {
        EXPECT(0, "mkdtemp");
        return;
    }
    snprintf(pa, sizeof pa, "%s/a.onnx", a);
    snprintf(pb, sizeof pb, "%s/b.onnx", a);
    for (uint64_t seed = 1; seed <= 20; seed++) {
        dt_gen_info ia, ib;
        uint8_t *da = NULL, *db = NULL;
        size_t na = 0, nb = 0;
        if (dt_generate(seed, pa, &ia) != KORCH_OK || dt_generate(seed, pb, &ib) != KORCH_OK ||
            korch_read_file(pa, 1 << 26, &da, &na) != KORCH_OK || korch_read_file(pb, 1 << 26, &db, &nb) != KORCH_OK) {
            EXPECT(0, korch_last_error());
        } else {
            EXPECT(na == nb && memcmp(da, db, na) == 0, "the same seed writes different models");
        }
        if (da) {
            /* another seed: another model */
            char pc[128];
            uint8_t *dc = NULL;
            size_t nc = 0;
            snprintf(pc, sizeof pc, "%s/c.onnx", a);
            if (dt_generate(seed + 1000, pc, NULL) == KORCH_OK && korch_read_file(pc, 1 << 26, &dc, &nc) == KORCH_OK)
                EXPECT(nc != na || memcmp(dc, da, nc) != 0, "two seeds write the same model");
            free(dc);
            remove(pc);
        }
        free(da), free(db);
    }
    remove(pa), remove(pb), rmdir(a);
}

int dt_selftest(void) {
    check_compare();
    check_generator();
    printf("selftest: %s\n", failures ? "FAILED" : "passed");
    return failures ? 1 : 0;
}
