/* split(C): the cheapest known way to run a candidate's nodes as two or more
 * smaller kernels, under a cost function over candidates.
 *
 * A convex set is split by peeling one source or one sink node (the rest
 * stays convex, docs/orchestration.md section 1) or, when it is not
 * connected, into its components (each convex). best(S) is the cheaper of
 * S's own cost (when S is a usable candidate) and split(S); it is memoised
 * per (partition, mask). Both users rely on the same replacement argument:
 * a plan that runs C stays valid, and gets no slower, when C is replaced by
 * the kernels of a split that costs no more than C.
 *   - phase1_profile.c, before timing: a candidate whose roofline bound is not
 *     below its split is never timed (pruning by a lower bound);
 *   - solve.c, before solving: a candidate whose cost is not below its split
 *     is not a variable (it is dominated). */
#include <math.h>
#include <stdlib.h>

#include "orchestrate/orchestrate.h"

static uint64_t mix(uint64_t h, int p) {
    h ^= (uint64_t)(unsigned)p * 0x9E3779B97F4A7C15ull;
    h ^= h >> 33;
    h *= 0xff51afd7ed558ccdull;
    h ^= h >> 33;
    return h;
}

static bool memo_get(const korch_split_memo *m, int p, korch_nodemask mask, double *out) {
    if (!m->cap) return false;
    size_t h = mix(mask, p) & (m->cap - 1);
    while (m->keys[h]) {
        if (m->keys[h] == mask && m->parts[h] == p) {
            *out = m->values[h];
            return true;
        }
        h = (h + 1) & (m->cap - 1);
    }
    return false;
}

/* false when out of memory: the value is then recomputed on the next ask */
static bool memo_put(korch_split_memo *m, int p, korch_nodemask mask, double value) {
    if ((m->count + 1) * 2 > m->cap) {
        size_t cap = m->cap ? m->cap * 2 : 4096;
        uint64_t *keys = calloc(cap, sizeof *keys);
        int *parts = calloc(cap, sizeof *parts);
        double *values = calloc(cap, sizeof *values);
        if (!keys || !parts || !values) {
            free(keys);
            free(parts);
            free(values);
            return false;
        }
        for (size_t i = 0; i < m->cap; i++) {
            if (!m->keys[i]) continue;
            size_t h = mix(m->keys[i], m->parts[i]) & (cap - 1);
            while (keys[h]) h = (h + 1) & (cap - 1);
            keys[h] = m->keys[i];
            parts[h] = m->parts[i];
            values[h] = m->values[i];
        }
        free(m->keys);
        free(m->parts);
        free(m->values);
        m->keys = keys;
        m->parts = parts;
        m->values = values;
        m->cap = cap;
    }
    size_t h = mix(mask, p) & (m->cap - 1);
    while (m->keys[h] && !(m->keys[h] == mask && m->parts[h] == p)) h = (h + 1) & (m->cap - 1);
    if (!m->keys[h]) m->count++;
    m->keys[h] = mask;
    m->parts[h] = p;
    m->values[h] = value;
    return true;
}

void korch_split_init(korch_split_memo *m, const korch_candidate_set *set, korch_split_cost_fn cost, void *user) {
    *m = (korch_split_memo){.set = set, .cost = cost, .user = user};
}

void korch_split_free(korch_split_memo *m) {
    free(m->keys);
    free(m->parts);
    free(m->values);
    *m = (korch_split_memo){0};
}

static double best_of(korch_split_memo *m, int p, korch_nodemask mask) {
    double cached;
    if (memo_get(m, p, mask, &cached)) return cached;
    double best = INFINITY;
    int ci = korch_candidate_find(m->set, p, mask);
    if (ci >= 0) best = m->cost(m->user, &m->set->candidates[ci]);
    double split = korch_split_cost(m, p, mask);
    if (split < best) best = split;
    memo_put(m, p, mask, best);
    return best;
}

double korch_split_cost(korch_split_memo *m, int p, korch_nodemask mask) {
    const korch_partition *part = &m->set->partitions[p];
    if (__builtin_popcountll(mask) < 2) return INFINITY;
    if (!korch_mask_is_connected(part, mask)) {
        double sum = 0;
        korch_nodemask rest = mask;
        while (rest) {
            korch_nodemask comp = korch_mask_component(part, rest);
            sum += best_of(m, p, comp);
            rest &= ~comp;
        }
        return sum;
    }
    double best = INFINITY;
    for (korch_nodemask f = mask; f; f &= f - 1) {
        int i = __builtin_ctzll(f);
        korch_nodemask bit = (korch_nodemask)1 << i;
        bool source = (part->pred[i] & mask) == 0, sink = (part->succ[i] & mask) == 0;
        if (!source && !sink) continue;
        double cost = best_of(m, p, bit) + best_of(m, p, mask & ~bit);
        if (cost < best) best = cost;
    }
    return best;
}
