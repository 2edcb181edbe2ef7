/* Multi-output kernels that deadlock, and the cut that prevents it.
 *
 *     a = relu(x)   c = tanh(x)
 *     b = a * c     d = c + a        outputs: b, d
 *
 * K1 = {a, b} and K2 = {c, d} are both convex, but K1 needs c (made only by
 * K2) and K2 needs a (made only by K1). They are made very cheap, so the
 * binary program without the acyclicity cut picks exactly them. The best
 * valid plan recomputes one value: K1 + K2 + {a} (or + {c}) = 0.1+0.1+1.0.
 *
 * A property test checks the other half of the argument: a set of
 * single-output kernels that satisfies the program's rows always schedules. */
#include <math.h>
#include <string.h>

#include "backend/ref/ref_backend.h"
#include "orchestrate/fake_oracle.h"
#include "orchestrate/pgraph_gen.h"
#include "runtime/executor.h"
#include "test.h"

/* latency by node set (bits over pgraph node indices) */
static korch_status table_profile(void *user, korch_backend_kind kind, const korch_kernel_spec *specs, int n,
                                  double budget_s, bool quick, korch_profile_result *results) {
    (void)user;
    (void)kind;
    (void)budget_s;
    (void)quick;
    for (int i = 0; i < n; i++) {
        uint32_t m = 0;
        for (int j = 0; j < specs[i].n_nodes; j++) m |= 1u << specs[i].nodes[j];
        memset(&results[i], 0, sizeof results[i]);
        results[i].status = KORCH_OK;
        /* nodes: 0 = a, 1 = c, 2 = b, 3 = d */
        double lat;
        if (m == 0x5 /* a,b */ || m == 0xA /* c,d */) lat = 0.1;
        else if (specs[i].n_nodes == 1) lat = 1.0;
        else lat = 0.9 * specs[i].n_nodes + 0.5;
        results[i].latency_ms = lat;
        snprintf(results[i].schedule, sizeof results[i].schedule, "ref");
    }
    return KORCH_OK;
}

static korch_pgraph *cross_graph(void) {
    korch_pgraph *pg = NULL;
    korch_pgraph_create(NULL, &pg);
    int x = gen_input(pg, 4, 4);
    int a = gen_unary(pg, KORCH_EW_RELU, x);
    int c = gen_unary(pg, KORCH_EW_TANH, x);
    int b = gen_binary(pg, KORCH_EW_MUL, a, c);
    int d = gen_binary(pg, KORCH_EW_ADD, c, a);
    gen_output(pg, b);
    gen_output(pg, d);
    return pg;
}

static void test_cross(bool pairwise) {
    korch_pgraph *pg = cross_graph();
    korch_kernel_oracle oracle = {.supports = fake_supports, .profile = table_profile, .user = NULL};
    korch_orchestrate_options o = test_orchestrate_options(1);
    o.pairwise_cuts = pairwise;
    o.prune_by_bound = false;
    o.candidates.force_backend = KORCH_BACKEND_REF;
    korch_orchestrator *orch = NULL;
    korch_plan *plan = NULL;
    CHECK_OK(korch_orchestrator_create(pg, &oracle, &o, KORCH_STRATEGY_OPTIMAL, &orch));
    CHECK_OK(korch_orchestrator_profile(orch));
    CHECK_OK(korch_orchestrator_solve(orch, KORCH_STRATEGY_OPTIMAL, &plan));
    const korch_blp_stats *st = korch_orchestrator_blp_stats(orch);
    CHECK(plan != NULL);
    if (!plan) return;
    CHECK_NEAR(plan->predicted_ms, 1.2, 1e-9);
    CHECK(plan->n_kernels == 3);
    /* a and c have third producers ({a}, {c}, ...), so the 2-cycle row is
     * not a pure exclusion and is not pre-added: the cut loop finds it */
    CHECK(st->cuts >= 1 && st->rounds >= 2 && st->pair_cuts == 0);
    CHECK(st->optimal);
    printf("cross (pairwise %d): objective %.3f after %d rounds, %d cuts, %d pair cuts\n", pairwise, st->objective,
           st->rounds, st->cuts, st->pair_cuts);
    /* the plan runs and matches the interpreter */
    korch_executor *ex = NULL;
    CHECK_OK(korch_executor_create(plan, pg, NULL, &ex));
    korch_tensor *in = gen_inputs(pg, 3);
    korch_tensor want[2], got[2];
    CHECK_OK(korch_pgraph_interpret(pg, in, want));
    for (int i = 0; i < 2; i++) korch_tensor_alloc(&got[i], KORCH_DTYPE_FLOAT32, &want[i].shape);
    if (ex) CHECK_OK(korch_executor_run(ex, in, got));
    for (int i = 0; i < 2; i++) {
        CHECK(memcmp(got[i].data, want[i].data, korch_tensor_bytes(&want[i])) == 0);
        korch_tensor_free(&got[i]);
        korch_tensor_free(&want[i]);
    }
    gen_free_tensors(in, pg->n_inputs);
    korch_executor_destroy(ex);
    korch_plan_free(plan);
    korch_orchestrator_free(orch);
    korch_pgraph_free(pg);
}

/* Same graph, but a and c feed only K1 and K2 (no third producer exists):
 * now x_K1 + x_K2 <= 1 is a pure exclusion and is added up front. */
static void test_pure_pair(void) {
    korch_pgraph *pg = cross_graph();
    korch_kernel_oracle oracle = {.supports = fake_supports, .profile = table_profile, .user = NULL};
    korch_orchestrate_options o = test_orchestrate_options(1);
    o.prune_by_bound = false;
    korch_orchestrator *orch = NULL;
    CHECK_OK(korch_orchestrator_create(pg, &oracle, &o, KORCH_STRATEGY_OPTIMAL, &orch));
    CHECK_OK(korch_orchestrator_profile(orch));
    /* remove the singletons {a} and {c} from the program, and every other set
     * making a or c, except K1 and K2 */
    korch_candidate_set *set = korch_orchestrator_candidates(orch);
    for (int i = 0; i < set->n_candidates; i++) {
        korch_candidate *c = &set->candidates[i];
        uint32_t m = 0;
        for (int j = 0; j < c->n_nodes; j++) m |= 1u << c->nodes[j];
        bool makes_a_or_c = (m & 0x3) != 0;
        if (makes_a_or_c && m != 0x5 && m != 0xA && m != 0xF) c->rejected = true;
    }
    korch_plan *plan = NULL;
    CHECK_OK(korch_orchestrator_solve(orch, KORCH_STRATEGY_OPTIMAL, &plan));
    const korch_blp_stats *st = korch_orchestrator_blp_stats(orch);
    CHECK(st->pair_cuts >= 1);
    CHECK(st->cuts == 0 && st->rounds == 1);
    /* only the whole graph remains possible: 0.9 * 4 + 0.5 */
    CHECK(plan && fabs(plan->predicted_ms - 4.1) < 1e-9);
    korch_plan_free(plan);
    korch_orchestrator_free(orch);
    korch_pgraph_free(pg);
}

/* Random single-output kernel sets closed under "every input produced":
 * they always schedule (docs/orchestration.md, single-output lemma). */
static void test_single_output_never_deadlocks(void) {
    int sets = 0, stuck = 0;
    for (uint64_t seed = 1; seed <= 60; seed++) {
        korch_pgraph *pg = gen_random_pgraph(seed * 7 + 1, 12, true);
        korch_candidate_options co = korch_candidate_options_default();
        korch_candidate_set *set = NULL;
        CHECK_OK(korch_candidates_build(pg, &co, &set));
        if (!set) continue;
        int single[4096], n_single = 0;
        for (int i = 0; i < set->n_candidates && n_single < 4096; i++)
            if (set->candidates[i].n_outputs == 1) single[n_single++] = i;
        gen_rng r = {seed};
        for (int trial = 0; trial < 40; trial++) {
            bool chosen[4096] = {0};
            /* random start, then add a random single-output producer for
             * every missing input until closed */
            for (int i = 0; i < n_single; i++) chosen[i] = gen_below(&r, 6) == 0;
            for (bool changed = true; changed;) {
                changed = false;
                for (int i = 0; i < n_single; i++) {
                    if (!chosen[i]) continue;
                    const korch_candidate *c = &set->candidates[single[i]];
                    for (int j = 0; j < c->n_inputs; j++) {
                        int v = c->inputs[j];
                        if (pg->values[v].producer < 0) continue;
                        bool made = false;
                        int options[4096], n_opt = 0;
                        for (int q = 0; q < n_single; q++) {
                            if (set->candidates[single[q]].outputs[0] != v) continue;
                            made |= chosen[q];
                            options[n_opt++] = q;
                        }
                        if (!made && n_opt > 0) {
                            chosen[options[gen_below(&r, n_opt)]] = true;
                            changed = true;
                        }
                    }
                }
            }
            korch_sched_kernel k[4096];
            int idx[4096], order[4096], n = 0;
            for (int i = 0; i < n_single; i++) {
                const korch_candidate *c = &set->candidates[single[i]];
                k[i] = (korch_sched_kernel){c->n_inputs, c->inputs, c->n_outputs, c->outputs};
                if (chosen[i]) idx[n++] = i;
            }
            bool *avail = calloc((size_t)pg->n_values, sizeof *avail);
            for (int v = 0; v < pg->n_values; v++) avail[v] = pg->values[v].producer < 0;
            int ran = korch_schedule_simulate(k, idx, n, avail, order);
            free(avail);
            stuck += ran != n;
            sets++;
        }
        korch_candidates_free(set);
        korch_pgraph_free(pg);
    }
    printf("single-output sets: %d closed random sets, %d stuck\n", sets, stuck);
    CHECK(sets > 1000 && stuck == 0);
}

int main(void) {
    test_cross(false);
    test_cross(true);
    test_pure_pair();
    test_single_output_never_deadlocks();
    TEST_MAIN_END();
}
