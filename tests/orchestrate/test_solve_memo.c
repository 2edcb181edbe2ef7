/* Identical partitions share one solve (orchestrate/solve_memo.c), and the
 * shared choice is still the optimum.
 *
 * The graph is a chain of identical blocks (a diamond of four elementwise
 * primitives, as an unrolled recurrent cell gives), cut into one partition
 * per block. Latencies come from each kernel's signature, as real profiles
 * do (identical kernels share a profile), so every block's program is the
 * same to the bit and all but the first reuse the first's solution. The
 * plan must equal the optimum found by exhaustive search over kernel
 * sequences (the search of test_blp_exhaustive.c, restated here small), and
 * a block with another operation in it must be solved on its own. */
#include <math.h>
#include <string.h>

#include "ir/nodeset.h"
#include "orchestrate/fake_oracle.h"
#include "orchestrate/pgraph_gen.h"
#include "test.h"

enum { BLOCKS = 3, BLOCK_NODES = 4 };

/* a kernel's latency from its signature alone: equal kernels, equal cost
 * (korch profiles each distinct signature once) */
static double sig_latency(const korch_kernel_spec *spec) {
    uint64_t h = fake_hash(17, korch_kernel_signature(spec));
    double base = 0.3 * spec->n_nodes;
    double factor = spec->n_nodes == 1 ? 1.0 : 0.35 + 0.9 * (double)(h % 1000) / 1000.0;
    return base * factor;
}

static korch_status sig_profile(void *user, korch_backend_kind kind, const korch_kernel_spec *specs, int n,
                                double budget_s, bool quick, korch_profile_result *results) {
    (void)user;
    (void)budget_s;
    (void)quick;
    for (int i = 0; i < n; i++) {
        memset(&results[i], 0, sizeof results[i]);
        results[i].status = KORCH_OK;
        results[i].latency_ms = sig_latency(&specs[i]);
        snprintf(results[i].schedule, sizeof results[i].schedule, "fake");
        snprintf(results[i].impl, sizeof results[i].impl, "fake %s", korch_backend_name(kind));
    }
    return KORCH_OK;
}

/* odd_block (-1: none) ends in another operation: its program differs */
static korch_pgraph *chain_of_blocks(int odd_block) {
    korch_pgraph *pg = NULL;
    korch_pgraph_create(NULL, &pg);
    int x = gen_input(pg, 4, 4);
    for (int b = 0; b < BLOCKS; b++) {
        int t1 = gen_unary(pg, KORCH_EW_TANH, x);
        int t2 = gen_unary(pg, KORCH_EW_SIGMOID, t1);
        int t3 = gen_binary(pg, KORCH_EW_MUL, t1, t2);
        x = gen_unary(pg, b == odd_block ? KORCH_EW_ABS : KORCH_EW_RELU, t3);
    }
    gen_output(pg, x);
    return pg;
}

/* the cheapest sequence of candidate kernels computing the output, over sets
 * of computed node values (Dijkstra over at most 2^12 states) */
static double exhaustive(const korch_pgraph *pg, const korch_candidate_set *set) {
    int n = pg->n_nodes;
    size_t states = (size_t)1 << n;
    double *dist = malloc(states * sizeof *dist);
    bool *done = calloc(states, sizeof *done);
    for (size_t s = 0; s < states; s++) dist[s] = INFINITY;
    dist[0] = 0;
    uint32_t goal = 1u << pg->values[pg->outputs[0]].producer;
    double best = INFINITY;
    for (;;) {
        size_t u = states;
        for (size_t s = 0; s < states; s++)
            if (!done[s] && dist[s] < INFINITY && (u == states || dist[s] < dist[u])) u = s;
        if (u == states) break;
        done[u] = true;
        if ((u & goal) == goal && dist[u] < best) best = dist[u];
        for (int i = 0; i < set->n_candidates; i++) {
            const korch_candidate *c = &set->candidates[i];
            if (!c->profiled || c->rejected) continue;
            uint32_t need = 0, make = 0;
            for (int j = 0; j < c->n_inputs; j++)
                if (pg->values[c->inputs[j]].producer >= 0) need |= 1u << pg->values[c->inputs[j]].producer;
            for (int j = 0; j < c->n_outputs; j++) make |= 1u << pg->values[c->outputs[j]].producer;
            if ((u & need) != need) continue;
            size_t v = u | make;
            if (dist[u] + c->latency_ms < dist[v]) dist[v] = dist[u] + c->latency_ms;
        }
    }
    free(dist);
    free(done);
    return best;
}

static void run(int odd_block) {
    korch_pgraph *pg = chain_of_blocks(odd_block);
    korch_kernel_oracle oracle = {.supports = fake_supports, .profile = sig_profile};
    korch_orchestrate_options o = test_orchestrate_options(1);
    o.candidates.max_kernel_nodes = BLOCK_NODES;
    o.candidates.max_partition_nodes = BLOCK_NODES;
    o.prune_by_bound = false;
    korch_orchestrator *orch = NULL;
    korch_plan *plan = NULL;
    CHECK_OK(korch_orchestrator_create(pg, &oracle, &o, KORCH_STRATEGY_OPTIMAL, &orch));
    CHECK_OK(korch_orchestrator_profile(orch));
    CHECK_OK(korch_orchestrator_solve(orch, KORCH_STRATEGY_OPTIMAL, &plan));
    const korch_candidate_set *set = korch_orchestrator_candidates(orch);
    const korch_blp_stats *st = korch_orchestrator_blp_stats(orch);
    CHECK_MSG(set->n_partitions == BLOCKS, "%d partitions for %d blocks", set->n_partitions, BLOCKS);
    int want = odd_block < 0 ? BLOCKS - 1 : BLOCKS - 2;
    CHECK_MSG(st->reused == want, "odd block %d: %d partitions reused a solution, expected %d", odd_block, st->reused,
              want);
    CHECK(st->optimal);
    double exact = exhaustive(pg, set), got = plan ? plan->predicted_ms : NAN;
    CHECK_MSG(fabs(got - exact) <= 1e-9 * (1 + exact), "odd block %d: plan %.9f, exhaustive %.9f", odd_block, got,
              exact);
    printf("odd block %2d: %d of %d partitions reused a solution; plan %.4f = exhaustive %.4f\n", odd_block,
           st->reused, set->n_partitions, got, exact);
    korch_plan_free(plan);
    korch_orchestrator_free(orch);
    korch_pgraph_free(pg);
}

int main(void) {
    run(-1); /* identical blocks: the first is solved, the others reuse it */
    run(1);  /* the middle block differs: solved on its own, the last reuses the first */
    TEST_MAIN_END();
}
