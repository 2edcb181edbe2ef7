/* Plans executed with the REF backend against the primitive interpreter, for
 * all three strategies on random graphs (fused multi-output kernels
 * included), plus a graph whose outputs are an input and a constant. */
#include <math.h>
#include <string.h>

#include "orchestrate/fake_oracle.h"
#include "orchestrate/pgraph_gen.h"
#include "runtime/executor.h"
#include "test.h"

static bool same_tensor(const korch_tensor *a, const korch_tensor *b) {
    if (korch_tensor_bytes(a) != korch_tensor_bytes(b)) return false;
    const float *x = a->data, *y = b->data;
    for (int64_t i = 0; i < korch_tensor_numel(a); i++)
        if (!(fabsf(x[i] - y[i]) <= 1e-6f * (1.0f + fabsf(y[i])))) return false;
    return true;
}

/* runs plan on pg and compares with the interpreter; returns kernels with >1 node */
static int check_plan(const korch_pgraph *pg, const korch_plan *plan, uint64_t seed) {
    korch_executor *ex = NULL;
    CHECK_OK(korch_executor_create(plan, pg, NULL, &ex));
    if (!ex) return 0;
    korch_tensor *in = gen_inputs(pg, seed);
    korch_tensor *want = calloc((size_t)pg->n_outputs, sizeof *want);
    korch_tensor *got = calloc((size_t)pg->n_outputs, sizeof *got);
    CHECK_OK(korch_pgraph_interpret(pg, in, want));
    for (int i = 0; i < pg->n_outputs; i++)
        korch_tensor_alloc(&got[i], pg->values[pg->outputs[i]].dtype, &pg->values[pg->outputs[i]].shape);
    /* twice: the arena and bindings must be reusable */
    for (int rep = 0; rep < 2; rep++) {
        CHECK_OK(korch_executor_run(ex, in, got));
        for (int i = 0; i < pg->n_outputs; i++)
            CHECK_MSG(same_tensor(&got[i], &want[i]), "seed %llu strategy %s output %d differs",
                      (unsigned long long)seed, plan->strategy, i);
    }
    int fused = 0;
    for (int k = 0; k < plan->n_kernels; k++) fused += plan->kernels[k].n_nodes > 1;
    gen_free_tensors(in, pg->n_inputs);
    gen_free_tensors(want, pg->n_outputs);
    gen_free_tensors(got, pg->n_outputs);
    korch_executor_destroy(ex);
    return fused;
}

static void test_random_plans(void) {
    int plans = 0, fused = 0, multi_output = 0;
    for (uint64_t seed = 1; seed <= 40; seed++) {
        korch_pgraph *pg = gen_random_pgraph(seed * 13 + 3, 4 + (int)(seed % 9), true);
        fake_oracle f = {.seed = seed, .multi_output_factor = 0.5};
        korch_kernel_oracle oracle = fake_oracle_make(&f);
        korch_orchestrate_options o = test_orchestrate_options(1);
        o.candidates.force_backend = KORCH_BACKEND_REF;
        o.candidates.max_partition_nodes = seed % 2 ? 5 : 48;
        o.prune_by_bound = false;
        korch_orchestrator *orch = NULL;
        CHECK_OK(korch_orchestrator_create(pg, &oracle, &o, KORCH_STRATEGY_OPTIMAL, &orch));
        if (!orch) continue;
        CHECK_OK(korch_orchestrator_profile(orch));
        for (int s = 0; s < KORCH_STRATEGY_COUNT; s++) {
            korch_plan *plan = NULL;
            CHECK_OK(korch_orchestrator_solve(orch, (korch_strategy)s, &plan));
            if (!plan) continue;
            if (s == KORCH_STRATEGY_NONE) CHECK(plan->n_kernels == pg->n_nodes);
            for (int k = 0; k < plan->n_kernels; k++) multi_output += plan->kernels[k].n_outputs > 1;
            fused += check_plan(pg, plan, seed);
            plans++;
            korch_plan_free(plan);
        }
        korch_orchestrator_free(orch);
        korch_pgraph_free(pg);
    }
    printf("executor: %d plans matched the interpreter (%d fused kernels, %d multi-output kernels)\n", plans, fused,
           multi_output);
    CHECK(fused > 20 && multi_output > 0);
}

/* outputs that no kernel makes: a graph input and a constant */
static void test_passthrough_outputs(void) {
    korch_pgraph *pg = NULL;
    CHECK_OK(korch_pgraph_create(NULL, &pg));
    gen_rng r = {1};
    int x = gen_input(pg, 4, 4);
    int c = gen_constant(pg, &r);
    int y = gen_binary(pg, KORCH_EW_ADD, x, c);
    int z = gen_unary(pg, KORCH_EW_RELU, y);
    gen_output(pg, z);
    gen_output(pg, x);
    gen_output(pg, c);
    gen_output(pg, y); /* read inside and a graph output */
    fake_oracle f = {.seed = 2};
    korch_kernel_oracle oracle = fake_oracle_make(&f);
    korch_orchestrate_options o = test_orchestrate_options(1);
    o.candidates.force_backend = KORCH_BACKEND_REF;
    korch_orchestrator *orch = NULL;
    korch_plan *plan = NULL;
    CHECK_OK(korch_orchestrator_create(pg, &oracle, &o, KORCH_STRATEGY_OPTIMAL, &orch));
    CHECK_OK(korch_orchestrator_profile(orch));
    CHECK_OK(korch_orchestrator_solve(orch, KORCH_STRATEGY_OPTIMAL, &plan));
    if (plan) check_plan(pg, plan, 5);
    korch_plan_free(plan);
    korch_orchestrator_free(orch);
    korch_pgraph_free(pg);
}

/* broken plans are refused with a message naming the kernel */
static void test_validation(void) {
    korch_pgraph *pg = gen_random_pgraph(3, 6, false);
    korch_pgraph_uses uses;
    CHECK_OK(korch_pgraph_uses_build(pg, &uses));
    korch_plan *plan = korch_plan_new();
    plan->pgraph_nodes = pg->n_nodes;
    /* reverse topological order: the first kernel reads what the last makes */
    int order[64], count = 0;
    CHECK_OK(korch_pgraph_toposort(pg, order, &count));
    for (int i = count - 1; i >= 0; i--) korch_plan_add_kernel(plan, pg, &uses, 1, &order[i]);
    CHECK(korch_plan_validate(plan, pg) == KORCH_ERR_INVALID_MODEL);
    CHECK(strstr(korch_last_error(), "kernel 0 reads value") != NULL);
    korch_plan_free(plan);
    /* a missing output */
    plan = korch_plan_new();
    plan->pgraph_nodes = pg->n_nodes;
    for (int i = 0; i < count - 1; i++) korch_plan_add_kernel(plan, pg, &uses, 1, &order[i]);
    CHECK(korch_plan_validate(plan, pg) == KORCH_ERR_INVALID_MODEL);
    CHECK(strstr(korch_last_error(), "no kernel produces graph output") != NULL);
    korch_plan_free(plan);
    /* a node out of range */
    plan = korch_plan_new();
    plan->pgraph_nodes = pg->n_nodes;
    int bad = pg->n_nodes + 5;
    korch_plan_kernel *k = korch_plan_add_kernel(plan, pg, &uses, 1, &order[0]);
    if (k) k->nodes[0] = bad;
    CHECK(korch_plan_validate(plan, pg) == KORCH_ERR_INVALID_MODEL);
    CHECK(strstr(korch_last_error(), "not a live primitive") != NULL);
    korch_plan_free(plan);
    korch_pgraph_uses_free(&uses);
    korch_pgraph_free(pg);
}

int main(void) {
    test_random_plans();
    test_passthrough_outputs();
    test_validation();
    TEST_MAIN_END();
}
