/* korch-difftest --selftest: the comparison can fail, and the generator is a
 * function of its seed. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "compare.h"
#include "core/half.h"
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

/* The format terms (features half and qdq): one step passes, three fail. */
static void check_compare_formats(void) {
    dt_mismatch m;
    for (int k = 0; k < 2; k++) {
        korch_dtype dt = k ? KORCH_DTYPE_BFLOAT16 : KORCH_DTYPE_FLOAT16;
        double v[3] = {0.7, -1.3, 0.01};
        uint16_t w[3], g[3];
        for (int i = 0; i < 3; i++) korch_half_store(dt, w, i, v[i]), g[i] = w[i];
        korch_tensor tw = {.dtype = dt, .shape = {.rank = 1, .dims = {3}}, .data = w}, tg = tw;
        tg.data = g;
        EXPECT(dt_compare(&tg, &tw, 1, 0, &m), "identical half tensors differ");
        g[1] = (uint16_t)(w[1] + 1); /* the neighbouring value: one step */
        EXPECT(dt_compare(&tg, &tw, 1, 0, &m), "a half output one step off fails");
        g[1] = (uint16_t)(w[1] + 3);
        EXPECT(!dt_compare(&tg, &tw, 1, 0, &m), "a half output three steps off passes");
    }
    float w[4] = {0.5f, 0.25f, -0.75f, 1.0f}, g[4];
    double scales[2] = {0.01, 0.05};
    dt_qstep q = {.n = 2, .inner = 2, .scale = scales}; /* elements 0-1: channel 0, 2-3: channel 1 */
    korch_tensor tw = {.dtype = KORCH_DTYPE_FLOAT32, .shape = {.rank = 1, .dims = {4}}, .data = w}, tg = tw;
    tg.data = g;
    memcpy(g, w, sizeof g);
    g[3] += 0.05f; /* one step of channel 1 */
    EXPECT(dt_compare_q(&tg, &tw, 1, 0, &q, &m), "a dequantized output one step off fails");
    EXPECT(!dt_compare_q(&tg, &tw, 1, 0, NULL, &m), "one quantization step passes without the step term");
    memcpy(g, w, sizeof g);
    g[1] += 0.05f; /* five steps of channel 0 */
    EXPECT(!dt_compare_q(&tg, &tw, 1, 0, &q, &m), "a dequantized output five steps off passes");
    memcpy(g, w, sizeof g);
    g[2] += 0.12f; /* 2.4 steps of channel 1 */
    EXPECT(!dt_compare_q(&tg, &tw, 1, 0, &q, &m), "a dequantized output 2.4 steps off passes");
}

static uint64_t fnv1a(const uint8_t *d, size_t n) {
    uint64_t h = 0xcbf29ce484222325ull;
    for (size_t i = 0; i < n; i++) h = (h ^ d[i]) * 0x100000001b3ull;
    return h;
}

/* The default models are those generator v1 always wrote (hashes of the
 * bytes written before the features existed): features must not change
 * them, or the seed lists and old campaign results would name other graphs.
 * With features, models are deterministic and differ. */
static void check_features(const char *dir) {
    static const struct {
        uint64_t seed, hash;
    } pinned[] = {{1, 0xd757e712ea0c517aull}, {2, 0xe03e68a39e9d3f83ull}, {3, 0xde20e21ba7cbff07ull},
                  {117, 0xc81e346f3a094276ull}, {400, 0x45de9e3c62cf5920ull}};
    char p[128], q[128];
    snprintf(p, sizeof p, "%s/f.onnx", dir);
    snprintf(q, sizeof q, "%s/g.onnx", dir);
    for (size_t i = 0; i < sizeof pinned / sizeof pinned[0]; i++) {
        uint8_t *d = NULL, *e = NULL;
        size_t n = 0, ne = 0;
        if (dt_generate(pinned[i].seed, p, NULL) != KORCH_OK || korch_read_file(p, 1 << 26, &d, &n) != KORCH_OK) {
            EXPECT(0, korch_last_error());
            continue;
        }
        if (fnv1a(d, n) != pinned[i].hash) {
            char msg[160];
            snprintf(msg, sizeof msg, "seed %llu: the default model changed (hash %016llx): bump DT_GEN_VERSION",
                     (unsigned long long)pinned[i].seed, (unsigned long long)fnv1a(d, n));
            EXPECT(0, msg);
        }
        unsigned all = DT_FEAT_HALF | DT_FEAT_QDQ;
        uint8_t *f = NULL;
        size_t nf = 0;
        if (dt_generate_features(pinned[i].seed, all, p, NULL) == KORCH_OK &&
            dt_generate_features(pinned[i].seed, all, q, NULL) == KORCH_OK &&
            korch_read_file(p, 1 << 26, &e, &ne) == KORCH_OK && korch_read_file(q, 1 << 26, &f, &nf) == KORCH_OK) {
            EXPECT(ne == nf && memcmp(e, f, ne) == 0, "the same seed and features write different models");
            EXPECT(ne != n || memcmp(d, e, n) != 0, "features change nothing");
        } else {
            EXPECT(0, korch_last_error());
        }
        free(d), free(e), free(f);
    }
    remove(p), remove(q);
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
    check_features(a);
    remove(pa), remove(pb), rmdir(a);
}

int dt_selftest(void) {
    check_compare();
    check_compare_formats();
    check_generator();
    printf("selftest: %s\n", failures ? "FAILED" : "passed");
    return failures ? 1 : 0;
}
