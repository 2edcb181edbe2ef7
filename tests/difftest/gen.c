/* The generator's main loop: graph inputs, then a random walk over operator
 * kinds, each applied to a recent value (usually the newest, sometimes an
 * older one: that value then has several consumers, a branch), then graph
 * outputs (gen_model.c). Every step checks its operator's preconditions on
 * the chosen value and leaves magnitudes tame (gen_elementwise.c dt_tame). */
#include <stdlib.h>
#include <string.h>

#include "gen_internal.h"

static int add_input(dt_gen *g, const korch_shape *s) {
    int v = dt_new_val(g, s, 1.0);
    g->vals[v].is_input = true;
    g->vals[v].name = korch_onnx_unique(&g->w, korch_onnx_str(&g->w, "input%d", g->n_inputs));
    g->inputs[g->n_inputs++] = v;
    return v;
}

/* Odd sizes and channel counts that are not multiples of 16 on purpose:
 * vectorised kernels have tails. */
static korch_shape random_input_shape(dt_rng *r) {
    int64_t n = dt_chance(r, 0.7) ? 1 : 2;
    switch (dt_int(r, 0, 9)) {
    case 0: case 1: return dt_shape(2, (int64_t[]){dt_int(r, 1, 24), dt_int(r, 1, 40)});
    case 2: case 3: return dt_shape(3, (int64_t[]){n, dt_int(r, 1, 16), dt_int(r, 2, 40)});
    default: return dt_shape(4, (int64_t[]){n, dt_int(r, 1, 20), dt_int(r, 1, 14), dt_int(r, 1, 14)});
    }
}

enum { K_CONV, K_CONVT, K_MATMUL, K_GEMM, K_BCONST, K_BVAL, K_ACT, K_REDUCE, K_SOFTMAX, K_NORM, K_LAYOUT,
       K_CONCAT, K_SPLIT, K_POOL, K_COUNT };
/* weights: elementwise chains dominate (that is what gets fused) */
static const int weights[K_COUNT] = {10, 3, 6, 4, 18, 8, 18, 4, 3, 4, 8, 3, 2, 3};

static int apply(dt_gen *g, int kind, int x) {
    switch (kind) {
    case K_CONV: return dt_conv(g, x);
    case K_CONVT: return dt_conv_transpose(g, x);
    case K_MATMUL: return dt_matmul(g, x);
    case K_GEMM: return dt_gemm(g, x);
    case K_BCONST: return dt_binary_const(g, x);
    case K_BVAL: return dt_binary_values(g, x);
    case K_ACT: return dt_activation(g, x);
    case K_REDUCE: return dt_reduce(g, x);
    case K_SOFTMAX: return dt_softmax(g, x);
    case K_NORM: return dt_normalize(g, x);
    case K_LAYOUT: return dt_layout(g, x);
    case K_CONCAT: return dt_concat(g, x);
    case K_SPLIT: return dt_split(g, x);
    default: return dt_pool(g, x);
    }
}

static int pick_kind(dt_rng *r) {
    int total = 0;
    for (int k = 0; k < K_COUNT; k++) total += weights[k];
    int t = dt_int(r, 0, total - 1);
    for (int k = 0; k < K_COUNT; k++) {
        if (t < weights[k]) return k;
        t -= weights[k];
    }
    return K_ACT;
}

/* The value the next operator reads: usually the newest, sometimes an older
 * one (which then feeds two consumers). Scalars (full reductions) only feed
 * elementwise operators. */
static int pick_value(dt_gen *g) {
    if (dt_chance(&g->rng, 0.7)) return g->n_vals - 1;
    int lo = g->n_vals > 8 ? g->n_vals - 8 : 0;
    int v = dt_int(&g->rng, lo, g->n_vals - 1);
    /* a half value before its Cast (features only): the newest instead */
    return g->vals[v].hidden ? g->n_vals - 1 : v;
}

korch_status dt_generate(uint64_t seed, const char *path, dt_gen_info *info) {
    return dt_generate_features(seed, 0, path, info);
}

korch_status dt_generate_features(uint64_t seed, unsigned features, const char *path, dt_gen_info *info) {
    dt_gen *g = calloc(1, sizeof *g);
    if (!g) return korch_error(KORCH_ERR_OUT_OF_MEMORY, "difftest: out of memory");
    g->rng.s = seed;
    g->features = features;
    g->frng.s = seed ^ 0x6a09e667f3bcc908ull; /* the features' stream, apart from the main one */
    g->w.opset = 17;
    korch_strmap_init(&g->w.used);
    dt_coverage scratch;
    memset(&scratch, 0, sizeof scratch);
    g->cov = info ? &info->coverage : &scratch;
    if (info) memset(info, 0, sizeof *info);

    korch_shape s0 = random_input_shape(&g->rng);
    add_input(g, &s0);
    if (dt_chance(&g->rng, 0.3)) {
        /* a second input: the same shape (joins by binary operators) or its own */
        korch_shape s1 = dt_chance(&g->rng, 0.6) ? s0 : random_input_shape(&g->rng);
        add_input(g, &s1);
        dt_cover(g, "two graph inputs");
    }
    if (g->features) dt_feature_inputs(g);
    int steps = dt_int(&g->rng, 2, 14);
    for (int step = 0, fails = 0; step < steps && fails < 40 && g->n_vals < DT_MAX_VALS - 24;) {
        int x = pick_value(g);
        int kind = pick_kind(&g->rng);
        int y = apply(g, kind, x);
        if (y < 0) {
            fails++;
            continue;
        }
        y = dt_tame(g, y);
        if ((g->features & DT_FEAT_RESIZE) && dt_chance(&g->frng, 0.3)) dt_feature_resize(g, y);
        if (x != g->n_vals - 2 && x != y) dt_cover(g, "branch (older value read)");
        step++;
    }
    if (g->features) dt_feature_int8(g);
    if (g->features) dt_feature_head(g);
    if (g->features) dt_feature_dynq(g);
    if (g->features) dt_feature_qop(g);
    if (g->features) dt_feature_index(g);
    if (g->features) dt_feature_if(g);
    if (g->features) dt_feature_einsum(g);
    korch_status st = g->w.status;
    if (st == KORCH_OK) st = dt_finish(g, path, info);
    for (size_t i = 0; i < g->w.n_blocks; i++) free(g->w.blocks[i]);
    free(g->w.blocks);
    free(g->w.nodes);
    free(g->w.inits);
    free(g->w.infos);
    korch_strmap_free(&g->w.used);
    free(g);
    return st;
}
