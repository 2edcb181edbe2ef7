/* Random post-op chains (1 to 4 steps of every kind, fixed seeds) after
 * every base of postop_bases.h, against the interpreter. See postop_check.h
 * for what a case checks and postop_steps.h for the steps. */
#include "postop_steps.h"

static pc_step steps[256];
static int n_steps;

static void chains(const pc_base_def *defs, int n_defs, int per_base, uint64_t seed) {
    for (int i = 0; i < n_defs; i++) {
        if (!pc_base_selected(&defs[i])) continue;
        pc_base_cache cache = {0};
        for (int j = 0; j < per_base; j++) {
            pc_base b = pc_base_build(&defs[i], seed + 7919u * (uint64_t)i, &cache);
            b.g.rng.s = seed ^ (0x1000u * (uint64_t)i + (uint64_t)j + 1) * 0x9e3779b97f4a7c15ull;
            pc_chain c = pc_chain_start(&b);
            int len = 1 + pc_int(&b.g.rng, 4);
            for (int pos = 0; pos < len; pos++)
                for (int tries = 0; tries < 40; tries++)
                    if (pc_apply(&c, &steps[pc_int(&b.g.rng, n_steps)])) break;
            if (c.steps == 0) {
                pc_st.skipped++;
                korch_pgraph_free(b.g.pg);
                continue;
            }
            dc_output(b.g.pg, c.v);
            char what[800];
            snprintf(what, sizeof what, "%s:%s", defs[i].name, c.text);
            pc_check(&b.g, &b.ref, (double)b.K, c.err, j % 4 == 0, what);
            korch_pgraph_free(b.g.pg);
        }
        pc_base_cache_free(&cache);
    }
}

int main(int argc, char **argv) {
    (void)argc;
    pc_passive_wait(argv);
    n_steps = pc_all_steps(steps, 256);
    const char *env = getenv("KORCH_POSTOP_CHAINS");
    int per = env ? atoi(env) : 48;
    chains(pc_conv_bases, (int)(sizeof pc_conv_bases / sizeof pc_conv_bases[0]), per, 0x5eed0001);
    chains(pc_matmul_bases, (int)(sizeof pc_matmul_bases / sizeof pc_matmul_bases[0]), per, 0x5eed0002);
    chains(pc_positive_bases, (int)(sizeof pc_positive_bases / sizeof pc_positive_bases[0]), per, 0x5eed0003);
    pc_report();
    pc_check_coverage();
    TEST_MAIN_END();
}
