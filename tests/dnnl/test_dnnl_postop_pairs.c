/* Every ordered pair of post-op steps (postop_steps.h, pc_pair_steps: each
 * scalar and tensor binary op in both orders, every activation, "the same
 * step again"), each pair after one of the main bases (1x1, 3x3, depthwise,
 * grouped and strided convolutions in both layouts, 2-D and batched
 * matmuls, Gemm; a positive base when the first step needs a positive
 * argument), against the interpreter. Pairs are where oneDNN 2.6's
 * repeated-algorithm defect shows (dnnl_quirks.c), and a pair of steps is
 * the smallest chain that exercises the lowering's composition and renaming
 * of post-ops. */
#include "postop_steps.h"

static const char *const main_names[] = {
    "conv1x1 64->64 28x28 nhwc bias",  /* brgconv_1x1 */
    "conv3x3 32->32 16x16 nhwc",       /* brgconv */
    "dwconv3x3 32 16x16 nhwc bias",    /* brdgmm_dw, jit_dw */
    "grouped3x3 32->64 g4 14x14 nchw", /* gemm:jit, jit:avx512_core */
    "conv3x3/2 32->48 17x17 nchw bias",
    "matmul 64x96x80 const",           /* brg */
    "matmul [2,32,96]x[96,64] const bias",
    "gemm transB alpha beta",
};
#define N_MAIN ((int)(sizeof main_names / sizeof main_names[0]))
#define N_POS ((int)(sizeof pc_positive_bases / sizeof pc_positive_bases[0]))

int main(int argc, char **argv) {
    (void)argc;
    pc_passive_wait(argv);
    pc_step steps[128];
    int n = pc_pair_steps(steps, 128);
    pc_base_cache cache[N_MAIN + N_POS] = {{0}};
    const pc_base_def *main_bases[N_MAIN];
    for (int i = 0; i < N_MAIN; i++) {
        main_bases[i] = pc_find_base(main_names[i]);
        if (!main_bases[i]) {
            CHECK_MSG(false, "no base \"%s\"", main_names[i]);
            TEST_MAIN_END();
        }
    }
    for (int i = 0; i < n; i++)
        for (int j = 0; j < n; j++)
            {
                /* each base gets every step first and second, with varying partners */
                int bi = (i + 3 * j) % N_MAIN; /* 3 is prime to N_MAIN */
                /* a first step that needs a positive argument (log, s/x, ...)
                 * gets a positive base */
                bool positive = pc_step_needs_positive(&steps[i]);
                int ci = positive ? N_MAIN + bi % N_POS : bi;
                const pc_base_def *def = positive ? &pc_positive_bases[bi % N_POS] : main_bases[bi];
                if (!pc_base_selected(def)) continue;
                pc_base b = pc_base_build(def, 0x9a125000u + (uint64_t)ci, &cache[ci]);
                b.g.rng.s = (uint64_t)i * 131 + (uint64_t)j + 0x77;
                pc_chain c = pc_chain_start(&b);
                if (!pc_apply(&c, &steps[i]) || !pc_apply(&c, &steps[j])) {
                    pc_st.skipped++;
                    korch_pgraph_free(b.g.pg);
                    continue;
                }
                dc_output(b.g.pg, c.v);
                char what[800];
                snprintf(what, sizeof what, "%s:%s", def->name, c.text);
                pc_check(&b.g, &b.ref, (double)b.K, c.err, false, what);
                korch_pgraph_free(b.g.pg);
            }
    for (int i = 0; i < N_MAIN + N_POS; i++) pc_base_cache_free(&cache[i]);
    printf("%d steps, %d ordered pairs, each after one of %d bases\n", n, n * n, N_MAIN);
    pc_report();
    pc_check_coverage();
    CHECK(pc_st.cases + pc_st.skipped == n * n);
    TEST_MAIN_END();
}
