/* Pruning by the lower bound keeps the optimum when latencies respect the
 * bound. The machine model here has a 200-byte "cache" and a very slow
 * memory beyond it, so fused candidates (more bytes than the cache) get large
 * bounds and many are pruned; latencies are the bound times (1 + a random
 * factor), never below it. */
#include <math.h>

#include "orchestrate/fake_oracle.h"
#include "orchestrate/pgraph_gen.h"
#include "test.h"

static double solve(korch_pgraph *pg, uint64_t seed, bool prune, long *pruned, long *profiled) {
    fake_oracle f = {.seed = seed, .respect_bound = true};
    f.machine = (korch_machine_model){.peak_gflops = 1, .cache_gbps = 10, .dram_gbps = 0.5, .cache_bytes = 200};
    korch_kernel_oracle oracle = fake_oracle_make(&f);
    korch_orchestrate_options o = test_orchestrate_options(1);
    o.machine = f.machine;
    o.prune_by_bound = prune;
    o.candidates.max_kernel_nodes = 12;
    korch_orchestrator *orch = NULL;
    korch_plan *plan = NULL;
    CHECK_OK(korch_orchestrator_create(pg, &oracle, &o, KORCH_STRATEGY_OPTIMAL, &orch));
    CHECK_OK(korch_orchestrator_profile(orch));
    CHECK_OK(korch_orchestrator_solve(orch, KORCH_STRATEGY_OPTIMAL, &plan));
    const korch_candidate_set *set = korch_orchestrator_candidates(orch);
    for (int p = 0; p < set->n_partitions; p++) *pruned += set->stats[p].rejected[KORCH_REJECT_BOUND];
    *profiled += f.profiled;
    double best = plan ? plan->predicted_ms : NAN;
    korch_plan_free(plan);
    korch_orchestrator_free(orch);
    return best;
}

int main(void) {
    long pruned = 0, unpruned_pruned = 0, profiled_with = 0, profiled_without = 0;
    int instances = 0;
    for (uint64_t seed = 1; seed <= 60; seed++) {
        korch_pgraph *pg = gen_random_pgraph(seed * 17 + 9, 4 + (int)(seed % 9), true);
        double with = solve(pg, seed, true, &pruned, &profiled_with);
        double without = solve(pg, seed, false, &unpruned_pruned, &profiled_without);
        CHECK_MSG(fabs(with - without) <= 1e-9 * (1 + without), "seed %llu: pruned %.9f, unpruned %.9f",
                  (unsigned long long)seed, with, without);
        instances++;
        korch_pgraph_free(pg);
    }
    printf("bound pruning: %d instances, %ld candidates pruned, %ld vs %ld kernels timed, same optimum\n", instances,
           pruned, profiled_with, profiled_without);
    CHECK(pruned > 100 && unpruned_pruned == 0 && profiled_with < profiled_without);
    TEST_MAIN_END();
}
