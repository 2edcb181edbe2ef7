/* Every binary post-op (add, sub, mul, div, max, min; both operand orders
 * for sub and div, alternating for the others)
 * with an operand of every broadcast class (scalar shapes, run-time scalar,
 * per-channel in both spellings, run-time per-channel, per-row / per-position,
 * per-batch, full constant and run-time), alone or (every other case)
 * followed by a second binary step of a random op and class, after every
 * base, against the interpreter. */
#include "postop_steps.h"

static void sweep(const pc_base_def *defs, int n_defs, uint64_t seed) {
    for (int i = 0; i < n_defs; i++) {
        if (!pc_base_selected(&defs[i])) continue;
        pc_base_cache cache = {0};
        int j = 0;
        for (size_t o = 0; o < sizeof pc_bin_ops / sizeof pc_bin_ops[0]; o++)
            for (int sv = 0; sv < 2; sv++)
                for (int k = 0; k < PC_NCLS; k++, j++) {
                    /* the order matters to the lowering of sub and div (s - x is
                     * -x + s, s / x is x^-1 * s); the others alternate */
                    bool ordered = pc_bin_ops[o] == KORCH_EW_SUB || pc_bin_ops[o] == KORCH_EW_DIV;
                    if (!ordered && sv != (k + (int)o) % 2) continue;
                    pc_base b = pc_base_build(&defs[i], seed + 7919u * (uint64_t)i, &cache);
                    b.g.rng.s = seed ^ (0x1000u * (uint64_t)i + (uint64_t)j + 1) * 0x9e3779b97f4a7c15ull;
                    pc_chain c = pc_chain_start(&b);
                    pc_step s = {.kind = PC_BIN, .op = pc_bin_ops[o], .sv = sv, .cls = (pc_cls)k};
                    /* s / x after |x| + 1 on a base whose output spans zero */
                    bool ok = (!pc_step_needs_positive(&s) || pc_make_positive(&c)) && pc_apply(&c, &s);
                    /* a second binary step of a class drawn at random */
                    pc_step t = {.kind = PC_BIN, .op = pc_bin_ops[pc_int(&b.g.rng, 6)],
                                 .cls = (pc_cls)pc_int(&b.g.rng, PC_NCLS)};
                    if (ok && j % 2) pc_apply(&c, &t);
                    if (!ok) {
                        pc_st.skipped++;
                        korch_pgraph_free(b.g.pg);
                        continue;
                    }
                    dc_output(b.g.pg, c.v);
                    char what[800];
                    snprintf(what, sizeof what, "%s:%s", defs[i].name, c.text);
                    pc_check(&b.g, &b.ref, (double)b.K, c.err, false, what);
                    korch_pgraph_free(b.g.pg);
                }
        pc_base_cache_free(&cache);
    }
}

int main(int argc, char **argv) {
    (void)argc;
    pc_passive_wait(argv);
    sweep(pc_conv_bases, (int)(sizeof pc_conv_bases / sizeof pc_conv_bases[0]), 0x0be0001);
    sweep(pc_matmul_bases, (int)(sizeof pc_matmul_bases / sizeof pc_matmul_bases[0]), 0x0be0002);
    sweep(pc_positive_bases, (int)(sizeof pc_positive_bases / sizeof pc_positive_bases[0]), 0x0be0003);
    pc_report();
    pc_check_coverage();
    TEST_MAIN_END();
}
