/* The linear primitives the post-op class tests put chains after: the
 * convolutions real models have (1x1, 3x3, depthwise, grouped, strided, a
 * 7x7 stem), channels-last (what the layout pass produces) and
 * channels-first, with and without a bias; matmuls (2-D and batched,
 * constant and run-time weights, batch broadcasting) and Gemm as fission
 * writes it (transposed operands, alpha, beta * C). Shapes are large
 * enough that oneDNN picks the implementations real models get
 * (brgconv_1x1, brgconv, jit:avx512_core, jit_dw, gemm:jit, brg matmul).
 *
 * Weights are scaled by 1/sqrt(K) so the linear output is O(1); the
 * output's actual range is measured once per base (the interpreter on the
 * same inputs) and starts the interval the chain steps track. A "positive"
 * base (positive inputs, weights and bias) gives an output away from zero,
 * so steps that need a positive argument (s/x, log, sqrt) can come first. */
#ifndef KORCH_TESTS_DNNL_POSTOP_BASES_H
#define KORCH_TESTS_DNNL_POSTOP_BASES_H

#include "fission/fission.h"
#include "postop_check.h"

typedef enum pc_op { PC_CONV, PC_DECONV, PC_MATMUL, PC_GEMM } pc_op;

typedef struct pc_base_def {
    const char *name;
    pc_op op;
    bool nhwc, bias, positive;
    /* convolutions: N, C -> M, H x W input, k x k kernel, stride, pad, groups */
    int64_t n, c, m, h, w, k, stride, pad, group;
    /* matmul: A [a0.., M, K] (rank ra), B [b0.., K, N] (rank rb); w_const;
     * gemm: trans_a, trans_b, alpha, beta (C is per column) */
    int ra, rb;
    int64_t a[4], b[4];
    bool w_const, trans_a, trans_b;
    float alpha, beta;
} pc_base_def;

/* A built base: the graph so far and where its value is. */
typedef struct pc_base {
    const pc_base_def *def;
    pc_graph g;
    int y;             /* value after the linear primitive (and the bias) */
    korch_shape out;   /* its shape */
    int channel_axis;  /* pgraph axis of output channels / matmul columns */
    int row_axis;      /* matmul rows, -1 for convolutions */
    int64_t K;         /* reduction length */
    double lo, hi;     /* measured range of y */
    pc_ref ref;        /* y, computed once (pc_base_cache) */
} pc_base;

/* What a base's first build measures, for the later ones. */
typedef struct pc_base_cache {
    bool ready;
    double lo, hi;
    korch_tensor y;
} pc_base_cache;

static inline void pc_base_cache_free(pc_base_cache *c) {
    korch_tensor_free(&c->y);
    memset(c, 0, sizeof *c);
}

/* Fission's Gemm: transposes of A and B, the matmul, y * alpha, + C * beta;
 * then the default clean-up (which folds a constant B's transpose and
 * C * beta, as for a real model). Returns the output value. */
static inline int pc_gemm(pc_base *b) {
    const pc_base_def *d = b->def;
    pc_graph *g = &b->g;
    korch_pgraph *pg = g->pg;
    int64_t M = d->a[0], K = d->a[1], N = d->b[1];
    double wr = 2.0 / sqrt((double)K), lo = d->positive ? 0.1 : -1;
    int64_t ad[2] = {d->trans_a ? K : M, d->trans_a ? M : K}, bd[2] = {d->trans_b ? N : K, d->trans_b ? K : N};
    int A = pc_input(g, 2, ad, lo, 1.0);
    double wlo = d->positive ? 0.05 : -wr;
    int B = d->w_const ? pc_constant(g, 2, bd, wlo, wr) : pc_input(g, 2, bd, wlo, wr);
    static const int64_t swap[2] = {1, 0};
    if (d->trans_a) A = korch_pgraph_transpose(pg, A, swap);
    if (d->trans_b) B = korch_pgraph_transpose(pg, B, swap);
    korch_prim_linear p = {.op = KORCH_LINEAR_MATMUL};
    int y = korch_pgraph_linear(pg, &p, A, B);
    if (d->alpha != 1.0f) y = dc_ew2(pg, KORCH_EW_MUL, y, korch_pgraph_add_scalar(pg, d->alpha));
    if (d->beta != 0.0f) {
        int c = pc_constant(g, 1, (int64_t[]){N}, d->positive ? 0 : -0.5, 0.5);
        if (d->beta != 1.0f) c = dc_ew2(pg, KORCH_EW_MUL, c, korch_pgraph_add_scalar(pg, d->beta));
        y = dc_ew2(pg, KORCH_EW_ADD, y, c);
    }
    korch_pgraph_add_output(pg, y);
    korch_cleanup_options o = korch_cleanup_options_default();
    CHECK_OK(korch_pgraph_cleanup(pg, &o, NULL));
    y = pg->outputs[0];
    pg->n_outputs = 0;
    pg->values[y].graph_output = -1;
    return y;
}

static inline int pc_conv(pc_base *b) {
    const pc_base_def *d = b->def;
    pc_graph *g = &b->g;
    bool tr = d->op == PC_DECONV;
    korch_prim_linear p = {.op = tr ? KORCH_LINEAR_CONV_TRANSPOSE : KORCH_LINEAR_CONV, .spatial = 2,
                           .group = d->group, .channels_last = d->nhwc, .strides = {d->stride, d->stride},
                           .dilations = {1, 1}, .pads_begin = {d->pad, d->pad}, .pads_end = {d->pad, d->pad}};
    int64_t xn[4] = {d->n, d->c, d->h, d->w}, xl[4] = {d->n, d->h, d->w, d->c};
    int64_t wd[4] = {tr ? d->c : d->m, tr ? d->m / d->group : d->c / d->group, d->k, d->k};
    /* every output sums C/g * k*k products (a transposed one about a
     * stride^2-th of them) */
    double K = (double)(d->c / d->group * d->k * d->k) / (tr ? (double)(d->stride * d->stride) : 1.0);
    double wr = 2.0 / sqrt(K);
    int x = pc_input(g, 4, d->nhwc ? xl : xn, d->positive ? 0.1 : -1, 1);
    int y = korch_pgraph_linear(g->pg, &p, x, pc_constant(g, 4, wd, d->positive ? 0.05 : -wr, wr));
    b->K = (int64_t)(K + 0.5);
    return y;
}

static inline int pc_matmul(pc_base *b) {
    const pc_base_def *d = b->def;
    pc_graph *g = &b->g;
    int64_t K = d->a[d->ra - 1];
    double wr = 2.0 / sqrt((double)K);
    int x = pc_input(g, d->ra, d->a, d->positive ? 0.1 : -1, 1);
    int w = d->w_const ? pc_constant(g, d->rb, d->b, d->positive ? 0.05 : -wr, wr)
                       : pc_input(g, d->rb, d->b, d->positive ? 0.05 : -wr, wr);
    korch_prim_linear p = {.op = KORCH_LINEAR_MATMUL};
    b->K = K;
    return korch_pgraph_linear(g->pg, &p, x, w);
}

/* The per-channel shape of a base: (C,1,1) channels-first, (C) channels-last
 * and for matmul columns. */
static inline korch_shape pc_channel_shape(const pc_base *b) {
    int64_t c = b->out.dims[b->channel_axis];
    bool conv = b->def->op != PC_MATMUL && b->def->op != PC_GEMM;
    if (conv && !b->def->nhwc) return korch_shape_make(3, (int64_t[]){c, 1, 1});
    return korch_shape_make(1, (int64_t[]){c});
}

/* Builds base `def` (deterministic: its own seed); the first build of a
 * base fills *cache with its output and range. */
static inline pc_base pc_base_build(const pc_base_def *def, uint64_t seed, pc_base_cache *cache) {
    pc_base b = {.def = def, .g = {.pg = dc_graph(), .rng = {seed}}, .row_axis = -1};
    int y;
    if (def->op == PC_MATMUL) y = pc_matmul(&b);
    else if (def->op == PC_GEMM) {
        y = pc_gemm(&b);
        b.K = def->a[1];
    } else y = pc_conv(&b);
    b.out = b.g.pg->values[y].shape;
    int r = b.out.rank;
    bool mm = def->op == PC_MATMUL || def->op == PC_GEMM;
    b.channel_axis = mm || def->nhwc ? r - 1 : 1;
    if (mm) b.row_axis = r - 2;
    if (def->bias) {
        korch_shape s = pc_channel_shape(&b);
        y = dc_ew2(b.g.pg, KORCH_EW_ADD, y, pc_constant(&b.g, s.rank, s.dims, def->positive ? 0 : -0.5, 0.5));
    }
    b.y = y;
    if (!cache->ready) {
        korch_tensor *ins = pc_make_inputs(&b.g);
        korch_pgraph_add_output(b.g.pg, y);
        CHECK_OK(korch_pgraph_interpret(b.g.pg, ins, &cache->y));
        double a = INFINITY, z = -INFINITY;
        const float *p = cache->y.data;
        for (int64_t i = 0; p && i < korch_tensor_numel(&cache->y); i++) a = fmin(a, p[i]), z = fmax(z, p[i]);
        cache->lo = a;
        cache->hi = z;
        cache->ready = true;
        b.g.pg->n_outputs = 0;
        b.g.pg->values[y].graph_output = -1;
        pc_free_inputs(&b.g, ins);
    }
    b.lo = cache->lo;
    b.hi = cache->hi;
    b.ref = (pc_ref){.value = y, .n_nodes = b.g.pg->n_nodes, .data = cache->y.data ? &cache->y : NULL};
    return b;
}

/* $KORCH_POSTOP_BASE (a substring of base names) restricts a run to some
 * bases, for investigating a failure. */
static inline bool pc_base_selected(const pc_base_def *def) {
    const char *only = getenv("KORCH_POSTOP_BASE");
    return !only || !*only || strstr(def->name, only) != NULL;
}

/* ---- the bases ------------------------------------------------------------- */

#define CONVN(nm, N, nhwc_, bias_, C, M, H, K, S, P, G)                                                             \
    {.name = nm, .op = PC_CONV, .nhwc = nhwc_, .bias = bias_, .n = N, .c = C, .m = M, .h = H, .w = H, .k = K,         \
     .stride = S, .pad = P, .group = G}
#define CONV(nm, nhwc_, bias_, C, M, H, K, S, P, G) CONVN(nm, 1, nhwc_, bias_, C, M, H, K, S, P, G)
#define CONV4(nm, C, M, H, K, S, P, G)                                                                                \
    CONV(nm " nhwc", true, false, C, M, H, K, S, P, G), CONV(nm " nhwc bias", true, true, C, M, H, K, S, P, G),      \
        CONV(nm " nchw", false, false, C, M, H, K, S, P, G), CONV(nm " nchw bias", false, true, C, M, H, K, S, P, G)

static const pc_base_def pc_conv_bases[] = {
    CONV4("conv1x1 64->64 28x28", 64, 64, 28, 1, 1, 0, 1),
    CONV4("conv3x3 32->32 16x16", 32, 32, 16, 3, 1, 1, 1),
    CONV4("dwconv3x3 32 16x16", 32, 32, 16, 3, 1, 1, 32),
    CONV4("grouped3x3 32->64 g4 14x14", 32, 64, 14, 3, 1, 1, 4),
    CONV4("conv3x3/2 32->48 17x17", 32, 48, 17, 3, 2, 1, 1),
    CONV4("conv1x1/2 64->32 14x14", 64, 32, 14, 1, 2, 0, 1),
    CONV4("stem7x7/2 3->16 32x32", 3, 16, 32, 7, 2, 3, 1),
    CONVN("conv3x3 32->32 12x12 N=2 nhwc", 2, true, false, 32, 32, 12, 3, 1, 1, 1),
    CONVN("conv3x3 32->32 12x12 N=2 nchw bias", 2, false, true, 32, 32, 12, 3, 1, 1, 1),
    {.name = "deconv4x4/2 16->16 8x8 nhwc bias", .op = PC_DECONV, .nhwc = true, .bias = true, .n = 1, .c = 16,
     .m = 16, .h = 8, .w = 8, .k = 4, .stride = 2, .pad = 1, .group = 1},
};

#define MM(nm, bias_, RA, A0, A1, A2, RB, B0, B1, B2, WC)                                                             \
    {.name = nm, .op = PC_MATMUL, .bias = bias_, .ra = RA, .a = {A0, A1, A2}, .rb = RB, .b = {B0, B1, B2},          \
     .w_const = WC}

static const pc_base_def pc_matmul_bases[] = {
    MM("matmul 64x96x80 const", false, 2, 64, 96, 0, 2, 96, 80, 0, true),
    MM("matmul 64x96x80 const bias", true, 2, 64, 96, 0, 2, 96, 80, 0, true),
    MM("matmul 64x96x80 run-time weights", false, 2, 64, 96, 0, 2, 96, 80, 0, false),
    MM("matmul [2,32,96]x[96,64] const bias", true, 3, 2, 32, 96, 2, 96, 64, 0, true),
    MM("matmul [2,32,96]x[96,64] const", false, 3, 2, 32, 96, 2, 96, 64, 0, true),
    MM("bmm [4,24,32]x[4,32,40]", false, 3, 4, 24, 32, 3, 4, 32, 40, false),
    MM("bmm [4,24,32]x[32,40] run-time", false, 3, 4, 24, 32, 2, 32, 40, 0, false),
    {.name = "gemm transB alpha beta", .op = PC_GEMM, .a = {48, 64}, .b = {64, 80}, .w_const = true, .trans_b = true,
     .alpha = 0.5f, .beta = 1.0f},
    {.name = "gemm transB beta=0.7", .op = PC_GEMM, .a = {48, 64}, .b = {64, 80}, .w_const = true, .trans_b = true,
     .alpha = 1.0f, .beta = 0.7f},
};

/* Positive variants for chains that start with s/x, log, sqrt. */
static const pc_base_def pc_positive_bases[] = {
    {.name = "conv1x1 64->64 28x28 nhwc bias positive", .op = PC_CONV, .nhwc = true, .bias = true, .positive = true,
     .n = 1, .c = 64, .m = 64, .h = 28, .w = 28, .k = 1, .stride = 1, .pad = 0, .group = 1},
    {.name = "conv3x3 32->32 16x16 nchw positive", .op = PC_CONV, .nhwc = false, .positive = true, .n = 1, .c = 32,
     .m = 32, .h = 16, .w = 16, .k = 3, .stride = 1, .pad = 1, .group = 1},
    {.name = "matmul 64x96x80 const positive", .op = PC_MATMUL, .positive = true, .ra = 2, .a = {64, 96}, .rb = 2,
     .b = {96, 80}, .w_const = true},
};

#undef CONVN
#undef CONV
#undef CONV4
#undef MM

/* A base by its exact name. */
static inline const pc_base_def *pc_find_base(const char *name) {
    const pc_base_def *lists[] = {pc_conv_bases, pc_matmul_bases, pc_positive_bases};
    size_t counts[] = {sizeof pc_conv_bases / sizeof pc_conv_bases[0],
                       sizeof pc_matmul_bases / sizeof pc_matmul_bases[0],
                       sizeof pc_positive_bases / sizeof pc_positive_bases[0]};
    for (int l = 0; l < 3; l++)
        for (size_t i = 0; i < counts[l]; i++)
            if (strcmp(lists[l][i].name, name) == 0) return &lists[l][i];
    return NULL;
}

#endif
