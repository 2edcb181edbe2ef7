/* Candidate enumeration against brute force over all node subsets, plus the
 * caps, rejection reasons and partitioning at narrow cuts. */
#include <string.h>

#include "candidates/candidates.h"
#include "orchestrate/pgraph_gen.h"
#include "test.h"

/* reach[a][b]: a path a -> ... -> b of length >= 1 (computed by DFS here,
 * independently of the partition masks) */
static void reachability(const korch_pgraph *pg, bool reach[64][64]) {
    memset(reach, 0, sizeof(bool) * 64 * 64);
    for (int a = 0; a < pg->n_nodes; a++) {
        int stack[64], sp = 0;
        stack[sp++] = a;
        while (sp) {
            int u = stack[--sp];
            for (int c = 0; c < pg->n_nodes; c++) {
                bool edge = false;
                for (int k = 0; k < pg->nodes[c].n_inputs; k++)
                    edge |= pg->values[pg->nodes[c].inputs[k]].producer == u;
                if (edge && !reach[a][c]) {
                    reach[a][c] = true;
                    stack[sp++] = c;
                }
            }
        }
    }
}

static bool brute_valid(const korch_pgraph *pg, bool reach[64][64], uint32_t s) {
    int linear = 0;
    for (int i = 0; i < pg->n_nodes; i++)
        if ((s >> i) & 1u) linear += pg->nodes[i].kind == KORCH_PRIM_LINEAR;
    if (linear > 1) return false;
    /* convex */
    for (int w = 0; w < pg->n_nodes; w++) {
        if ((s >> w) & 1u) continue;
        bool below = false, above = false;
        for (int i = 0; i < pg->n_nodes; i++) {
            if (!((s >> i) & 1u)) continue;
            below |= reach[i][w];
            above |= reach[w][i];
        }
        if (below && above) return false;
    }
    /* connected (undirected, inside s) */
    uint32_t seen = s & (~s + 1), frontier = seen;
    while (frontier) {
        uint32_t next = 0;
        for (int u = 0; u < pg->n_nodes; u++) {
            if (!((frontier >> u) & 1u)) continue;
            for (int c = 0; c < pg->n_nodes; c++) {
                if (!((s >> c) & 1u)) continue;
                bool adj = false;
                for (int k = 0; k < pg->nodes[c].n_inputs; k++) adj |= pg->values[pg->nodes[c].inputs[k]].producer == u;
                for (int k = 0; k < pg->nodes[u].n_inputs; k++) adj |= pg->values[pg->nodes[u].inputs[k]].producer == c;
                if (adj) next |= 1u << c;
            }
        }
        frontier = next & ~seen;
        seen |= next;
    }
    return seen == s;
}

static uint32_t node_mask(const korch_candidate *c) {
    uint32_t m = 0;
    for (int i = 0; i < c->n_nodes; i++) m |= 1u << c->nodes[i];
    return m;
}

static void test_against_brute_force(void) {
    int graphs = 0, total = 0, mismatches = 0;
    for (uint64_t seed = 1; seed <= 150; seed++) {
        int n = 3 + (int)(seed % 10);
        korch_pgraph *pg = gen_random_pgraph(seed, n, true);
        korch_candidate_options o = korch_candidate_options_default();
        o.max_kernel_nodes = 64;
        o.max_partition_nodes = 64;
        o.max_sets_per_partition = 1000000;
        korch_candidate_set *set = NULL;
        CHECK_OK(korch_candidates_build(pg, &o, &set));
        if (!set) continue;
        CHECK(set->n_partitions == 1);
        bool reach[64][64];
        reachability(pg, reach);
        uint32_t full = (1u << pg->n_nodes) - 1;
        bool *found = calloc((size_t)full + 2, sizeof *found);
        for (int i = 0; i < set->n_candidates; i++) {
            uint32_t m = node_mask(&set->candidates[i]);
            CHECK_MSG(!found[m], "seed %llu: candidate 0x%x listed twice", (unsigned long long)seed, m);
            found[m] = true;
            if (!brute_valid(pg, reach, m)) {
                mismatches++;
                CHECK_MSG(false, "seed %llu: enumerated 0x%x is not a valid candidate", (unsigned long long)seed, m);
            }
        }
        for (uint32_t s = 1; s <= full; s++)
            if (brute_valid(pg, reach, s) && !found[s]) {
                mismatches++;
                CHECK_MSG(false, "seed %llu: valid set 0x%x was not enumerated", (unsigned long long)seed, s);
            }
        total += set->n_candidates;
        graphs++;
        free(found);
        korch_candidates_free(set);
        korch_pgraph_free(pg);
    }
    printf("enumeration: %d graphs, %d candidates, %d mismatches against brute force\n", graphs, total, mismatches);
}

/* Inputs and outputs of every candidate, recomputed here by definition. */
static void test_candidate_io(void) {
    korch_pgraph *pg = gen_random_pgraph(77, 10, true);
    korch_candidate_set *set = NULL;
    CHECK_OK(korch_candidates_build(pg, NULL, &set));
    for (int ci = 0; set && ci < set->n_candidates; ci++) {
        const korch_candidate *c = &set->candidates[ci];
        uint32_t m = node_mask(c);
        int n_in = 0, n_out = 0;
        for (int v = 0; v < pg->n_values; v++) {
            int p = pg->values[v].producer;
            bool inside = p >= 0 && ((m >> p) & 1u);
            bool read_inside = false, read_outside = false;
            for (int u = 0; u < pg->n_nodes; u++)
                for (int k = 0; k < pg->nodes[u].n_inputs; k++)
                    if (pg->nodes[u].inputs[k] == v) {
                        if ((m >> u) & 1u) read_inside = true;
                        else read_outside = true;
                    }
            bool is_in = false, is_out = false;
            for (int j = 0; j < c->n_inputs; j++) is_in |= c->inputs[j] == v;
            for (int j = 0; j < c->n_outputs; j++) is_out |= c->outputs[j] == v;
            CHECK(is_in == (!inside && read_inside));
            CHECK(is_out == (inside && (read_outside || pg->values[v].graph_output >= 0)));
            n_in += is_in;
            n_out += is_out;
        }
        CHECK(n_in == c->n_inputs && n_out == c->n_outputs);
    }
    korch_candidates_free(set);
    korch_pgraph_free(pg);
}

static bool reject_add(void *user, korch_backend_kind kind, const korch_kernel_spec *spec, char *reason, size_t size) {
    (void)user;
    (void)kind;
    for (int i = 0; i < spec->n_nodes; i++) {
        const korch_pnode *n = &spec->pg->nodes[spec->nodes[i]];
        if (n->kind == KORCH_PRIM_ELEMENTWISE && n->u.ew.op == KORCH_EW_ADD) {
            snprintf(reason, size, "no ADD");
            return false;
        }
    }
    return true;
}

static void test_caps_and_reasons(void) {
    korch_pgraph *pg = gen_random_pgraph(6, 12, true);
    korch_candidate_options o = korch_candidate_options_default();
    o.max_kernel_nodes = 3;
    korch_candidate_set *set = NULL;
    CHECK_OK(korch_candidates_build(pg, &o, &set));
    long too_big = 0;
    for (int p = 0; set && p < set->n_partitions; p++) too_big += set->stats[p].rejected[KORCH_REJECT_TOO_BIG];
    for (int i = 0; set && i < set->n_candidates; i++) CHECK(set->candidates[i].n_nodes <= 3);
    CHECK(too_big > 0);
    korch_candidates_free(set);

    /* a tiny enumeration budget shrinks the size cap and says so */
    o = korch_candidate_options_default();
    o.max_sets_per_partition = 14;
    CHECK_OK(korch_candidates_build(pg, &o, &set));
    CHECK(set && set->stats[0].size_cap < o.max_kernel_nodes && set->stats[0].rejected[KORCH_REJECT_SET_CAP] > 0);
    korch_candidates_free(set);

    /* unsupported sets are reported, singletons fall back to REF */
    o = korch_candidate_options_default();
    o.supports = reject_add;
    CHECK_OK(korch_candidates_build(pg, &o, &set));
    bool has_add = false;
    for (int i = 0; i < pg->n_nodes; i++)
        has_add |= pg->nodes[i].kind == KORCH_PRIM_ELEMENTWISE && pg->nodes[i].u.ew.op == KORCH_EW_ADD;
    long unsupported = 0;
    for (int p = 0; set && p < set->n_partitions; p++) unsupported += set->stats[p].rejected[KORCH_REJECT_UNSUPPORTED];
    for (int i = 0; set && i < set->n_candidates; i++) {
        const korch_candidate *c = &set->candidates[i];
        bool add = false;
        for (int j = 0; j < c->n_nodes; j++)
            add |=
                pg->nodes[c->nodes[j]].kind == KORCH_PRIM_ELEMENTWISE && pg->nodes[c->nodes[j]].u.ew.op == KORCH_EW_ADD;
        if (add) CHECK(c->n_nodes == 1 && c->backend == KORCH_BACKEND_REF);
    }
    CHECK(has_add && unsupported > 0);
    korch_candidates_report(set, stdout);
    korch_candidates_free(set);
    korch_pgraph_free(pg);
}

/* Blocks of four nodes joined by one value: with partitions of at most four
 * nodes the only cuts of width 1 are the block boundaries. */
static void test_partition_cuts(void) {
    korch_pgraph *pg = NULL;
    CHECK_OK(korch_pgraph_create(NULL, &pg));
    int x = gen_input(pg, 4, 4);
    for (int b = 0; b < 5; b++) {
        int a = gen_unary(pg, KORCH_EW_RELU, x);
        int n = gen_unary(pg, KORCH_EW_NEG, x);
        int s = gen_binary(pg, KORCH_EW_ADD, a, n);
        x = gen_binary(pg, KORCH_EW_MUL, s, x);
    }
    gen_output(pg, x);
    korch_candidate_options o = korch_candidate_options_default();
    o.max_partition_nodes = 4;
    korch_candidate_set *set = NULL;
    CHECK_OK(korch_candidates_build(pg, &o, &set));
    CHECK(set && set->n_partitions == 5);
    for (int p = 0; set && p < set->n_partitions; p++) {
        const korch_partition *part = &set->partitions[p];
        CHECK(part->n_nodes == 4);
        CHECK(p == set->n_partitions - 1 ? part->cut_width == 0 : part->cut_width == 1);
        for (int i = 0; i < part->n_nodes; i++) CHECK(part->nodes[i] / 4 == p); /* block b is nodes 4b..4b+3 */
    }
    /* every candidate stays inside its partition and each partition's required value is its block output */
    for (int p = 0; set && p < set->n_partitions; p++) {
        int req[8];
        int n = korch_partition_required(set, p, req, 8);
        CHECK(n == 1 && req[0] == pg->nodes[4 * p + 3].outputs[0]);
    }
    korch_candidates_free(set);

    /* larger partitions: still contiguous, convex and complete */
    o.max_partition_nodes = 7;
    CHECK_OK(korch_candidates_build(pg, &o, &set));
    int covered = 0;
    bool reach[64][64];
    reachability(pg, reach);
    for (int p = 0; set && p < set->n_partitions; p++) {
        const korch_partition *part = &set->partitions[p];
        CHECK(part->n_nodes <= 7);
        covered += part->n_nodes;
        /* convex in the whole graph: no outside node both below and above it */
        for (int w = 0; w < pg->n_nodes; w++) {
            if (set->partition_of[w] == p) continue;
            bool below = false, above = false;
            for (int i = 0; i < part->n_nodes; i++) {
                below |= reach[part->nodes[i]][w];
                above |= reach[w][part->nodes[i]];
            }
            CHECK(!(below && above));
        }
    }
    CHECK(covered == 20);
    korch_candidates_free(set);
    korch_pgraph_free(pg);
}

int main(void) {
    test_against_brute_force();
    test_candidate_io();
    test_caps_and_reasons();
    test_partition_cuts();
    TEST_MAIN_END();
}
