/* The binary program's optimum against exhaustive search, on random primitive
 * graphs of at most 12 nodes with random latencies.
 *
 * Two searches, written here independently of src/orchestrate:
 *  - shortest path over "sets of computed values": a plan is a sequence of
 *    kernels, each runnable once its inputs exist; the cheapest sequence
 *    reaching every graph output is the optimum over all valid kernel sets;
 *  - for small candidate counts, every subset of candidates, kept when a
 *    simulation runs all of it and the graph outputs get produced.
 * Both use the candidates and latencies the orchestrator used, all of them:
 * the program leaves out candidates dominated by their splits (solve.c),
 * the searches do not, so a domination rule that lost the optimum fails
 * here. */
#include <math.h>
#include <string.h>

#include "orchestrate/fake_oracle.h"
#include "orchestrate/pgraph_gen.h"
#include "test.h"

typedef struct search_kernel {
    uint32_t need, make; /* bits over computed values */
    double cost;
} search_kernel;

/* bit index of each node output (values not produced by nodes are free) */
static int value_bits(const korch_pgraph *pg, int *bit_of) {
    int n = 0;
    for (int v = 0; v < pg->n_values; v++) bit_of[v] = pg->values[v].producer >= 0 ? n++ : -1;
    return n;
}

static int build_kernels(const korch_candidate_set *set, const int *bit_of, search_kernel *k) {
    int n = 0;
    for (int i = 0; i < set->n_candidates; i++) {
        const korch_candidate *c = &set->candidates[i];
        if (!c->profiled || c->rejected) continue;
        k[n] = (search_kernel){0, 0, c->latency_ms};
        for (int j = 0; j < c->n_inputs; j++)
            if (bit_of[c->inputs[j]] >= 0) k[n].need |= 1u << bit_of[c->inputs[j]];
        for (int j = 0; j < c->n_outputs; j++) k[n].make |= 1u << bit_of[c->outputs[j]];
        n++;
    }
    return n;
}

static double shortest_path(const search_kernel *k, int n, int bits, uint32_t goal) {
    size_t states = (size_t)1 << bits;
    double *dist = malloc(states * sizeof *dist);
    bool *done = calloc(states, sizeof *done);
    for (size_t s = 0; s < states; s++) dist[s] = INFINITY;
    dist[0] = 0;
    double best = INFINITY;
    for (;;) {
        size_t u = states;
        for (size_t s = 0; s < states; s++)
            if (!done[s] && dist[s] < INFINITY && (u == states || dist[s] < dist[u])) u = s;
        if (u == states) break;
        done[u] = true;
        if (((uint32_t)u & goal) == goal) {
            best = dist[u];
            break;
        }
        for (int i = 0; i < n; i++) {
            if ((k[i].need & ~(uint32_t)u) != 0) continue;
            size_t w = u | k[i].make;
            if (dist[u] + k[i].cost < dist[w]) dist[w] = dist[u] + k[i].cost;
        }
    }
    free(dist);
    free(done);
    return best;
}

static double all_subsets(const search_kernel *k, int n, uint32_t goal) {
    double best = INFINITY;
    for (uint32_t subset = 1; subset < (1u << n); subset++) {
        double cost = 0;
        for (int i = 0; i < n; i++)
            if ((subset >> i) & 1u) cost += k[i].cost;
        if (cost >= best) continue;
        uint32_t have = 0, ran = 0;
        for (bool progress = true; progress;) {
            progress = false;
            for (int i = 0; i < n; i++)
                if (((subset >> i) & 1u) && !((ran >> i) & 1u) && (k[i].need & ~have) == 0) {
                    ran |= 1u << i;
                    have |= k[i].make;
                    progress = true;
                }
        }
        if (ran == subset && (have & goal) == goal) best = cost;
    }
    return best;
}

int main(void) {
    int instances = 0, subset_checked = 0, with_cuts = 0, mismatches = 0, multi_partition = 0;
    long total_vars = 0, total_rows = 0, max_vars = 0, max_rows = 0, total_dominated = 0;
    double total_time = 0, max_time = 0;
    for (uint64_t seed = 1; seed <= 160; seed++) {
        int n_nodes = 3 + (int)(seed % 10); /* 3..12 */
        korch_pgraph *pg = gen_random_pgraph(seed * 31 + 5, n_nodes, true);
        for (int variant = 0; variant < 3; variant++) {
            fake_oracle f = {.seed = seed * 1000 + (uint64_t)variant,
                             .multi_output_factor = variant == 2 ? 0.12
                                                    : variant    ? 0.3
                                                                 : 0};
            korch_kernel_oracle oracle = fake_oracle_make(&f);
            korch_orchestrate_options o = test_orchestrate_options(1);
            o.candidates.max_kernel_nodes = 12;
            /* variants 1 and 2: no pre-added 2-cycle cuts and cheap
             * multi-output kernels, so the deadlock loop gets work; variant 1
             * also cuts the graph into partitions of at most 4 nodes */
            o.candidates.max_partition_nodes = variant == 1 ? 4 : 64;
            o.pairwise_cuts = variant == 0;
            o.prune_by_bound = false;
            korch_orchestrator *orch = NULL;
            korch_plan *plan = NULL;
            CHECK_OK(korch_orchestrator_create(pg, &oracle, &o, KORCH_STRATEGY_OPTIMAL, &orch));
            if (!orch) continue;
            CHECK_OK(korch_orchestrator_profile(orch));
            CHECK_OK(korch_orchestrator_solve(orch, KORCH_STRATEGY_OPTIMAL, &plan));
            const korch_candidate_set *set = korch_orchestrator_candidates(orch);
            const korch_blp_stats *st = korch_orchestrator_blp_stats(orch);
            int bit_of[256];
            int bits = value_bits(pg, bit_of);
            uint32_t goal = 0;
            for (int i = 0; i < pg->n_outputs; i++) goal |= 1u << bit_of[pg->outputs[i]];
            search_kernel *k = malloc((size_t)set->n_candidates * sizeof *k);
            int nk = build_kernels(set, bit_of, k);
            double exact = shortest_path(k, nk, bits, goal);
            double got = plan ? plan->predicted_ms : NAN;
            bool same = fabs(got - exact) <= 1e-9 * (1 + exact);
            if (!same) mismatches++;
            CHECK_MSG(same, "seed %llu variant %d: program %.9f, exhaustive %.9f", (unsigned long long)seed, variant,
                      got, exact);
            CHECK(st->optimal);
            if (nk <= 16) {
                double subset_best = all_subsets(k, nk, goal);
                CHECK_MSG(fabs(subset_best - exact) <= 1e-9 * (1 + exact), "seed %llu: subsets %.9f, paths %.9f",
                          (unsigned long long)seed, subset_best, exact);
                subset_checked++;
            }
            instances++;
            with_cuts += st->cuts > 0;
            multi_partition += set->n_partitions > 1;
            total_vars += st->variables;
            total_dominated += st->dominated;
            total_rows += st->rows;
            total_time += st->seconds;
            if (st->variables > max_vars) max_vars = st->variables;
            if (st->rows > max_rows) max_rows = st->rows;
            if (st->seconds > max_time) max_time = st->seconds;
            free(k);
            korch_plan_free(plan);
            korch_orchestrator_free(orch);
        }
        korch_pgraph_free(pg);
    }
    printf(
        "binary program vs exhaustive search: %d instances (%d also by all subsets, %d partitioned), %d mismatches\n",
        instances, subset_checked, multi_partition, mismatches);
    printf("  %d instances needed deadlock cuts; %ld candidates left out as dominated by their splits\n", with_cuts,
           total_dominated);
    printf("  variables: mean %.1f max %ld; rows: mean %.1f max %ld; solve time: mean %.4f s max %.4f s\n",
           (double)total_vars / instances, max_vars, (double)total_rows / instances, max_rows, total_time / instances,
           max_time);
    CHECK(instances >= 300 && with_cuts > 0 && total_dominated > 0);
    TEST_MAIN_END();
}
