/* Enumeration of convex, connected node sets inside one partition.
 *
 * Level by level: the sets of size s+1 are the sets of size s grown by one
 * neighbouring node. This reaches every convex connected set: any such set T
 * with |T| >= 2 has a node whose removal leaves a set that is still convex
 * and connected (take a leaf block of T's block-cut tree; its topologically
 * last or first node other than the cut vertex is a sink or a source of T
 * and not a cut vertex; removing a source or a sink keeps convexity), so T is
 * a one-node growth of some set of the previous level. The restrictions are
 * hereditary (at most one linear, no opaque node in a set of two or more), so
 * pruning a set never loses a valid superset. Sets holding a linear primitive
 * grow only while their backend accepts them: a linear kernel with an
 * epilogue the backend cannot express does not become expressible by adding
 * more nodes. The proof is in docs/orchestration.md. One exception is added
 * on purpose: a quantizer, which a backend takes only whole
 * (quantizer.c, try_quantizer_tail). */
#include <stdlib.h>
#include <string.h>

#include "candidates/candidates.h"

bool korch_mask_is_convex(const korch_partition *part, korch_nodemask mask) {
    korch_nodemask anc = 0, desc = 0;
    for (korch_nodemask m = mask; m; m &= m - 1) {
        int i = __builtin_ctzll(m);
        anc |= part->anc[i];
        desc |= part->desc[i];
    }
    /* a node outside that is both below and above the set lies on a path that leaves and re-enters */
    return (anc & desc & ~mask) == 0;
}

korch_nodemask korch_mask_component(const korch_partition *part, korch_nodemask mask) {
    korch_nodemask reached = mask & (~mask + 1), frontier = reached;
    while (frontier) {
        korch_nodemask next = 0;
        for (korch_nodemask m = frontier; m; m &= m - 1) {
            int i = __builtin_ctzll(m);
            next |= (part->pred[i] | part->succ[i]) & mask;
        }
        frontier = next & ~reached;
        reached |= next;
    }
    return reached;
}

bool korch_mask_is_connected(const korch_partition *part, korch_nodemask mask) {
    return mask && korch_mask_component(part, mask) == mask;
}

/* A set of masks (open addressing; 0 marks an empty slot, masks are never 0). */
typedef struct mask_set {
    korch_nodemask *slots;
    size_t cap, count;
} mask_set;

static uint64_t mix(uint64_t h) {
    h ^= h >> 33;
    h *= 0xff51afd7ed558ccdull;
    h ^= h >> 33;
    h *= 0xc4ceb9fe1a85ec53ull;
    h ^= h >> 33;
    return h;
}

/* Returns 1 if inserted, 0 if present, -1 on allocation failure. */
static int mask_set_insert(mask_set *s, korch_nodemask m) {
    if ((s->count + 1) * 2 > s->cap) {
        size_t cap = s->cap ? s->cap * 2 : 4096;
        korch_nodemask *slots = calloc(cap, sizeof *slots);
        if (!slots) return -1;
        for (size_t i = 0; i < s->cap; i++) {
            if (!s->slots[i]) continue;
            size_t h = mix(s->slots[i]) & (cap - 1);
            while (slots[h]) h = (h + 1) & (cap - 1);
            slots[h] = s->slots[i];
        }
        free(s->slots);
        s->slots = slots;
        s->cap = cap;
    }
    size_t h = mix(m) & (s->cap - 1);
    while (s->slots[h]) {
        if (s->slots[h] == m) return 0;
        h = (h + 1) & (s->cap - 1);
    }
    s->slots[h] = m;
    s->count++;
    return 1;
}

typedef struct mask_list {
    korch_nodemask *items;
    bool *grow; /* may this set be grown further */
    long n, cap;
} mask_list;

static bool mask_list_push(mask_list *l, korch_nodemask m) {
    if (l->n == l->cap) {
        long cap = l->cap ? l->cap * 2 : 256;
        korch_nodemask *items = realloc(l->items, (size_t)cap * sizeof *items);
        if (!items) return false;
        l->items = items;
        bool *grow = realloc(l->grow, (size_t)cap * sizeof *grow);
        if (!grow) return false;
        l->grow = grow;
        l->cap = cap;
    }
    l->grow[l->n] = true;
    l->items[l->n++] = m;
    return true;
}

/* An accepted set T with a linear primitive and one output read by a
 * whole quantizer inside the partition: T plus the quantizer, when its
 * backend takes it (quantizer.c). Returns false on allocation failure. */
static bool try_quantizer_tail(korch_candidate_set *set, int p, korch_nodemask T, const korch_kernel_spec *spec,
                               mask_set *seen, int *scratch, const korch_candidate_options *options,
                               korch_partition_stats *stats) {
    int tail[8], n;
    if (spec->n_outputs != 1 || !(n = korch_quantizer_tail(set->pg, &set->uses, spec->outputs[0], tail))) return true;
    korch_nodemask U = T;
    for (int i = 0; i < n; i++) {
        if (set->partition_of[tail[i]] != p) return true;
        U |= (korch_nodemask)1 << set->local_of[tail[i]];
    }
    if (!korch_mask_is_convex(&set->partitions[p], U)) return true;
    int fresh = mask_set_insert(seen, U);
    if (fresh <= 0) return fresh == 0;
    stats->sets++;
    korch_kernel_spec big = korch_candidate_describe(set, p, U, scratch);
    korch_backend_kind kind = korch_candidate_backend_for(set->pg, big.n_nodes, big.nodes, set->force_backend);
    char reason[256] = "";
    if (options->supports && !options->supports(options->supports_user, kind, &big, reason, sizeof reason)) {
        stats->rejected[KORCH_REJECT_UNSUPPORTED]++;
        return true;
    }
    return korch_candidate_add(set, p, U, KORCH_ORIGIN_ENUMERATED) >= 0;
}

korch_status korch_enumerate_partition(korch_candidate_set *set, int p, const korch_candidate_options *options) {
    const korch_partition *part = &set->partitions[p];
    const korch_pgraph *pg = set->pg;
    korch_partition_stats *stats = &set->stats[p];
    korch_nodemask linear = 0, opaque = 0;
    for (int i = 0; i < part->n_nodes; i++) {
        korch_prim_kind kind = pg->nodes[part->nodes[i]].kind;
        if (kind == KORCH_PRIM_LINEAR) linear |= (korch_nodemask)1 << i;
        if (kind == KORCH_PRIM_OPAQUE) opaque |= (korch_nodemask)1 << i;
    }
    korch_status st = KORCH_OK;
    mask_set seen = {0};
    mask_list level = {0}, next = {0};
    /* + 8: a set grown by a quantizer tail */
    int *scratch = malloc(korch_candidate_scratch_ints(options->max_kernel_nodes + 9) * sizeof *scratch);
    if (!scratch) {
        st = korch_error(KORCH_ERR_OUT_OF_MEMORY, "enumerate: out of memory");
        goto done;
    }
    stats->sets = 0;
    for (int i = 0; i < part->n_nodes; i++) {
        korch_nodemask m = (korch_nodemask)1 << i;
        if (mask_set_insert(&seen, m) < 0 || !mask_list_push(&level, m)) {
            st = korch_error(KORCH_ERR_OUT_OF_MEMORY, "enumerate: out of memory");
            goto done;
        }
        stats->sets++;
        /* a linear singleton its backend rejects runs on the reference backend
         * and is never grown */
        if (m & opaque) level.grow[level.n - 1] = false;
        if ((m & linear) && options->supports) {
            int ci = korch_candidate_find(set, p, m);
            int node = part->nodes[i];
            if (ci >= 0 && set->candidates[ci].backend != korch_candidate_backend_for(pg, 1, &node, set->force_backend))
                level.grow[level.n - 1] = false;
        }
    }
    stats->size_cap = options->max_kernel_nodes;
    for (int size = 1; size <= options->max_kernel_nodes && level.n > 0; size++) {
        next.n = 0;
        for (long s = 0; s < level.n; s++) {
            if (!level.grow[s]) continue;
            korch_nodemask S = level.items[s], nb = 0;
            for (korch_nodemask m = S; m; m &= m - 1) {
                int i = __builtin_ctzll(m);
                nb |= part->pred[i] | part->succ[i];
            }
            nb &= ~S;
            for (; nb; nb &= nb - 1) {
                korch_nodemask T = S | (nb & (~nb + 1));
                int fresh = mask_set_insert(&seen, T);
                if (fresh < 0) {
                    st = korch_error(KORCH_ERR_OUT_OF_MEMORY, "enumerate: out of memory");
                    goto done;
                }
                if (!fresh) continue;
                if (T & opaque) stats->rejected[KORCH_REJECT_OPAQUE]++;
                else if (__builtin_popcountll(T & linear) > 1) stats->rejected[KORCH_REJECT_TWO_LINEAR]++;
                else if (!korch_mask_is_convex(part, T)) stats->rejected[KORCH_REJECT_NOT_CONVEX]++;
                else if (size + 1 > options->max_kernel_nodes) stats->rejected[KORCH_REJECT_TOO_BIG]++;
                else if (!mask_list_push(&next, T)) {
                    st = korch_error(KORCH_ERR_OUT_OF_MEMORY, "enumerate: out of memory");
                    goto done;
                }
            }
        }
        if (next.n == 0) break;
        if (stats->sets + next.n > options->max_sets_per_partition) {
            /* the budget cannot hold this level: the size cap of this partition shrinks */
            stats->rejected[KORCH_REJECT_SET_CAP] += next.n;
            stats->size_cap = size;
            break;
        }
        stats->sets += next.n;
        for (long s = 0; s < next.n; s++) {
            korch_nodemask T = next.items[s];
            korch_kernel_spec spec = korch_candidate_describe(set, p, T, scratch);
            korch_backend_kind kind = korch_candidate_backend_for(pg, spec.n_nodes, spec.nodes, set->force_backend);
            char reason[256] = "";
            bool ok =
                !options->supports || options->supports(options->supports_user, kind, &spec, reason, sizeof reason);
            if (!ok) {
                stats->rejected[KORCH_REJECT_UNSUPPORTED]++;
                korch_candidates_note_refusal(set, reason);
                if (T & linear) next.grow[s] = false;
                continue;
            }
            if (korch_candidate_add(set, p, T, KORCH_ORIGIN_ENUMERATED) < 0 ||
                ((T & linear) && !try_quantizer_tail(set, p, T, &spec, &seen, scratch, options, stats))) {
                st = KORCH_ERR_OUT_OF_MEMORY;
                goto done;
            }
        }
        mask_list swap = level;
        level = next;
        next = swap;
    }
done:
    free(seen.slots);
    free(level.items);
    free(level.grow);
    free(next.items);
    free(next.grow);
    free(scratch);
    return st;
}
