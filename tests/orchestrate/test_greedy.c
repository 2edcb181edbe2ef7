/* The greedy (TVM FuseOps style) groups on hand-built patterns, each with the
 * grouping the rules prescribe. */
#include <string.h>

#include "orchestrate/fake_oracle.h"
#include "orchestrate/pgraph_gen.h"
#include "test.h"

/* groups as a canonical string: nodes sorted, "0,1,2|3|4" */
static void groups_of(const korch_pgraph *pg, char *out, size_t size,
                      bool (*supports)(void *, korch_backend_kind, const korch_kernel_spec *, char *, size_t)) {
    korch_pgraph_uses uses;
    korch_pgraph_uses_build(pg, &uses);
    int group_of[64];
    CHECK_OK(korch_greedy_groups(pg, &uses, supports, NULL, 48, -1, group_of));
    out[0] = '\0';
    bool used[64] = {0};
    for (int i = 0; i < pg->n_nodes; i++) {
        if (used[i] || group_of[i] < 0) continue;
        if (out[0]) strncat(out, "|", size - strlen(out) - 1);
        bool first = true;
        for (int j = i; j < pg->n_nodes; j++)
            if (group_of[j] == group_of[i]) {
                char num[16];
                snprintf(num, sizeof num, first ? "%d" : ",%d", j);
                strncat(out, num, size - strlen(out) - 1);
                used[j] = true;
                first = false;
            }
    }
    korch_pgraph_uses_free(&uses);
}

static bool no_reduce_in_cgen(void *user, korch_backend_kind kind, const korch_kernel_spec *spec, char *reason,
                              size_t size) {
    (void)user;
    (void)kind;
    for (int i = 0; i < spec->n_nodes; i++)
        if (spec->pg->nodes[spec->nodes[i]].kind == KORCH_PRIM_REDUCE && spec->n_nodes > 1) {
            snprintf(reason, size, "no fused reductions");
            return false;
        }
    return true;
}

static void expect(korch_pgraph *pg, const char *want, const char *what) {
    char got[256];
    groups_of(pg, got, sizeof got, fake_supports);
    CHECK_MSG(strcmp(got, want) == 0, "%s: groups %s, expected %s", what, got, want);
    korch_pgraph_free(pg);
}

int main(void) {
    korch_pgraph *pg;
    gen_rng r = {3};
    int x, y, w, b;

    /* linear + elementwise epilogue; the reduction stays alone and does not
     * start a fusion with the exp after it */
    korch_pgraph_create(NULL, &pg);
    x = gen_input(pg, 4, 4);
    w = gen_constant(pg, &r);
    b = gen_constant(pg, &r);
    y = gen_matmul(pg, x, w); /* 0 */
    y = gen_binary(pg, KORCH_EW_ADD, y, b); /* 1 */
    y = gen_unary(pg, KORCH_EW_RELU, y); /* 2 */
    y = korch_pgraph_reduce(pg, KORCH_REDUCE_SUM, y, 2, true); /* 3 */
    y = gen_unary(pg, KORCH_EW_EXP, y); /* 4 */
    gen_output(pg, y);
    expect(pg, "0,1,2|3|4", "linear epilogue, reduction");

    /* an elementwise chain fuses into the reduction that consumes it */
    korch_pgraph_create(NULL, &pg);
    x = gen_input(pg, 4, 4);
    y = gen_unary(pg, KORCH_EW_NEG, x); /* 0 */
    y = gen_unary(pg, KORCH_EW_ABS, y); /* 1 */
    y = korch_pgraph_reduce(pg, KORCH_REDUCE_SUM, y, 2, true); /* 2 */
    gen_output(pg, y);
    expect(pg, "0,1,2", "elementwise into reduction");

    /* injective chains: transpose -> relu -> transpose is one group */
    korch_pgraph_create(NULL, &pg);
    x = gen_input(pg, 4, 4);
    y = gen_transpose(pg, x); /* 0 */
    y = gen_unary(pg, KORCH_EW_RELU, y); /* 1 */
    y = gen_transpose(pg, y); /* 2 */
    gen_output(pg, y);
    expect(pg, "0,1,2", "injective chain");

    /* a diamond fuses into its post-dominator */
    korch_pgraph_create(NULL, &pg);
    x = gen_input(pg, 4, 4);
    int a = gen_unary(pg, KORCH_EW_RELU, x); /* 0 */
    int n = gen_unary(pg, KORCH_EW_NEG, x); /* 1 */
    y = gen_binary(pg, KORCH_EW_ADD, a, n); /* 2 */
    gen_output(pg, y);
    expect(pg, "0,1,2", "diamond");

    /* a value read by two graph outputs: no post-dominator, no fusion */
    korch_pgraph_create(NULL, &pg);
    x = gen_input(pg, 4, 4);
    y = gen_unary(pg, KORCH_EW_RELU, x); /* 0 */
    gen_output(pg, gen_unary(pg, KORCH_EW_NEG, y)); /* 1 */
    gen_output(pg, gen_unary(pg, KORCH_EW_ABS, y)); /* 2 */
    expect(pg, "0|1|2", "fan-out to outputs");

    /* two linear kernels each keep their own epilogue; elementwise nodes do
     * not fuse into a linear group as a prologue */
    korch_pgraph_create(NULL, &pg);
    x = gen_input(pg, 4, 4);
    w = gen_constant(pg, &r);
    y = gen_unary(pg, KORCH_EW_NEG, x); /* 0 */
    y = gen_matmul(pg, y, w); /* 1 */
    y = gen_unary(pg, KORCH_EW_RELU, y); /* 2 */
    y = gen_matmul(pg, y, w); /* 3 */
    y = gen_unary(pg, KORCH_EW_TANH, y); /* 4 */
    gen_output(pg, y);
    expect(pg, "0|1,2|3,4", "two linear groups");

    /* a group the backend refuses is split into its primitives */
    korch_pgraph_create(NULL, &pg);
    x = gen_input(pg, 4, 4);
    y = gen_unary(pg, KORCH_EW_NEG, x);
    y = korch_pgraph_reduce(pg, KORCH_REDUCE_SUM, y, 2, true);
    gen_output(pg, y);
    char got[256];
    groups_of(pg, got, sizeof got, no_reduce_in_cgen);
    CHECK_MSG(strcmp(got, "0|1") == 0, "refused group: %s", got);
    korch_pgraph_free(pg);

    /* an orchestrator prepared for "none" profiles single primitives only */
    {
        pg = gen_random_pgraph(77, 10, true);
        fake_oracle f = {.seed = 1};
        korch_kernel_oracle oracle = fake_oracle_make(&f);
        korch_orchestrate_options o = test_orchestrate_options(1);
        korch_orchestrator *orch = NULL;
        korch_plan *plan = NULL;
        CHECK_OK(korch_orchestrator_create(pg, &oracle, &o, KORCH_STRATEGY_NONE, &orch));
        CHECK_OK(korch_orchestrator_profile(orch));
        const korch_candidate_set *set = korch_orchestrator_candidates(orch);
        CHECK(set->n_candidates == pg->n_nodes && f.profiled <= pg->n_nodes);
        for (int i = 0; i < set->n_candidates; i++) CHECK(set->candidates[i].n_nodes == 1);
        CHECK(korch_orchestrator_solve(orch, KORCH_STRATEGY_GREEDY, &plan) == KORCH_ERR_INVALID_ARGUMENT);
        CHECK_OK(korch_orchestrator_solve(orch, KORCH_STRATEGY_NONE, &plan));
        CHECK(plan && plan->n_kernels == pg->n_nodes);
        korch_plan_free(plan);
        korch_orchestrator_free(orch);
        korch_pgraph_free(pg);
    }

    /* greedy plans always schedule (single-output groups) and run */
    for (uint64_t seed = 1; seed <= 40; seed++) {
        pg = gen_random_pgraph(seed * 5 + 2, 12, true);
        fake_oracle f = {.seed = seed};
        korch_kernel_oracle oracle = fake_oracle_make(&f);
        korch_orchestrate_options o = test_orchestrate_options(1);
        korch_orchestrator *orch = NULL;
        korch_plan *plan = NULL;
        CHECK_OK(korch_orchestrator_create(pg, &oracle, &o, KORCH_STRATEGY_GREEDY, &orch));
        CHECK_OK(korch_orchestrator_profile(orch));
        CHECK_OK(korch_orchestrator_solve(orch, KORCH_STRATEGY_GREEDY, &plan));
        for (int k = 0; plan && k < plan->n_kernels; k++) CHECK(plan->kernels[k].n_outputs == 1);
        korch_plan_free(plan);
        korch_orchestrator_free(orch);
        korch_pgraph_free(pg);
    }
    TEST_MAIN_END();
}
