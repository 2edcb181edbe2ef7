/* The candidate set: uses of values, candidate construction, lookup. */
#include "candidates/candidates.h"

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

const char *korch_reject_reason_name(korch_reject_reason r) {
    static const char *const names[] = {
        [KORCH_REJECT_NOT_CONVEX] = "not convex",
        [KORCH_REJECT_TOO_BIG] = "too big",
        [KORCH_REJECT_TWO_LINEAR] = "two linear primitives",
        [KORCH_REJECT_OPAQUE] = "opaque node",
        [KORCH_REJECT_UNSUPPORTED] = "backend cannot implement it",
        [KORCH_REJECT_SET_CAP] = "enumeration budget",
        [KORCH_REJECT_BOUND] = "pruned by bound",
        [KORCH_REJECT_PROFILE] = "profiling failed",
        [KORCH_REJECT_WRONG] = "wrong results",
    };
    _Static_assert(sizeof names / sizeof names[0] == KORCH_REJECT_COUNT, "reject reason names out of step");
    return (unsigned)r < KORCH_REJECT_COUNT ? names[r] : "?";
}

korch_candidate_options korch_candidate_options_default(void) {
    korch_candidate_options o = {
        .max_kernel_nodes = 10,
        .max_partition_nodes = 48,
        .max_sets_per_partition = 6000,
        .enumerate = true,
        .force_backend = -1,
    };
    return o;
}

/* ---- candidates ---------------------------------------------------------- */

korch_backend_kind korch_candidate_backend_for(const korch_pgraph *pg, int n, const int *nodes, int force_backend) {
    bool linear = false;
    for (int i = 0; i < n; i++) {
        if (pg->nodes[nodes[i]].kind == KORCH_PRIM_OPAQUE) return KORCH_BACKEND_REF; /* only REF runs operators */
        linear |= pg->nodes[nodes[i]].kind == KORCH_PRIM_LINEAR;
    }
    if (force_backend >= 0 && force_backend < KORCH_BACKEND_COUNT) return (korch_backend_kind)force_backend;
    return linear ? KORCH_BACKEND_DNNL : KORCH_BACKEND_CGEN;
}

static bool in_candidate(const korch_candidate *c, int node) {
    for (int i = 0; i < c->n_nodes; i++)
        if (c->nodes[i] == node) return true;
    return false;
}

int korch_candidate_second_backend(const korch_pgraph *pg, const korch_candidate *c) {
    if (c->backend != KORCH_BACKEND_DNNL) return -1;
    bool linear = false;
    for (int i = 0; i < c->n_nodes; i++) {
        const korch_pnode *n = &pg->nodes[c->nodes[i]];
        if (n->kind != KORCH_PRIM_LINEAR) continue;
        /* grouped float32 convolutions: the generator takes the depthwise ones
         * (backend/cgen/expand.c) and says no to the rest when asked */
        if (n->u.linear.op != KORCH_LINEAR_CONV || n->u.linear.group < 2 || n->u.linear.bf16) return -1;
        /* a channels-last one only with the layout primitive that feeds it
         * (the layout pass's transpose): the generator folds that into
         * channels-first loops; over a channels-last tensor its window sums
         * read with a stride of C and measured several times slower than
         * oneDNN on every model tried, so timing them only cost optimise
         * time (EfficientViT +8%; docs/codegen.md) */
        if (n->u.linear.channels_last) {
            int from = pg->values[n->inputs[0]].producer;
            if (from < 0 || pg->nodes[from].kind != KORCH_PRIM_LAYOUT || !in_candidate(c, from)) return -1;
        }
        linear = true;
    }
    return linear ? KORCH_BACKEND_CGEN : -1;
}

korch_kernel_spec korch_candidate_spec(const korch_candidate_set *set, const korch_candidate *c) {
    korch_kernel_spec s = {.pg = set->pg,
                           .n_nodes = c->n_nodes,
                           .nodes = c->nodes,
                           .n_inputs = c->n_inputs,
                           .inputs = c->inputs,
                           .n_outputs = c->n_outputs,
                           .outputs = c->outputs};
    return s;
}

/* Open-addressing index over (partition, mask); rebuilt on growth. */
static uint64_t key_hash(int p, korch_nodemask mask) {
    uint64_t h = mask ^ ((uint64_t)(unsigned)p * 0x9E3779B97F4A7C15ull);
    h ^= h >> 33;
    h *= 0xff51afd7ed558ccdull;
    h ^= h >> 33;
    return h;
}

struct korch_candidate_index {
    int *slots; /* candidate index + 1, 0 empty */
    size_t cap;
};

static bool index_insert(korch_candidate_set *set, int ci) {
    struct korch_candidate_index *ix = set->index;
    if ((size_t)(set->n_candidates + 1) * 2 > ix->cap) {
        size_t cap = ix->cap ? ix->cap * 2 : 1024;
        while ((size_t)(set->n_candidates + 1) * 2 > cap) cap *= 2;
        int *slots = calloc(cap, sizeof *slots);
        if (!slots) return false;
        free(ix->slots);
        ix->slots = slots;
        ix->cap = cap;
        for (int i = 0; i < set->n_candidates; i++) {
            if (i == ci) continue;
            const korch_candidate *c = &set->candidates[i];
            size_t h = key_hash(c->partition, c->mask) & (cap - 1);
            while (slots[h]) h = (h + 1) & (cap - 1);
            slots[h] = i + 1;
        }
    }
    const korch_candidate *c = &set->candidates[ci];
    size_t h = key_hash(c->partition, c->mask) & (ix->cap - 1);
    while (ix->slots[h]) h = (h + 1) & (ix->cap - 1);
    ix->slots[h] = ci + 1;
    return true;
}

int korch_candidate_find(const korch_candidate_set *set, int p, korch_nodemask mask) {
    const struct korch_candidate_index *ix = set->index;
    if (!ix || !ix->cap) return -1;
    size_t h = key_hash(p, mask) & (ix->cap - 1);
    while (ix->slots[h]) {
        const korch_candidate *c = &set->candidates[ix->slots[h] - 1];
        if (c->partition == p && c->mask == mask) return ix->slots[h] - 1;
        h = (h + 1) & (ix->cap - 1);
    }
    return -1;
}

size_t korch_candidate_scratch_ints(int n_nodes) { return (size_t)n_nodes * (1 + 2 * (KORCH_MAX_RANK + 8)) + 1; }

uint64_t korch_candidate_signature(const korch_candidate_set *set, const korch_candidate *c) {
    korch_kernel_spec spec = korch_candidate_spec(set, c);
    return korch_kernel_signature(&spec);
}

korch_kernel_spec korch_candidate_describe(korch_candidate_set *set, int p, korch_nodemask mask, int *buf) {
    const korch_partition *part = &set->partitions[p];
    int n = __builtin_popcountll(mask), max_io = n * (KORCH_MAX_RANK + 8);
    int *nodes = buf, *inputs = buf + n, *outputs = buf + n + max_io;
    int n_nodes = 0, n_inputs = 0, n_outputs = 0;
    for (int i = 0; i < part->n_nodes; i++)
        if ((mask >> i) & 1u) nodes[n_nodes++] = part->nodes[i];
    korch_node_set_io(set->pg, &set->uses, n_nodes, nodes, set->in_set, inputs, &n_inputs, outputs, &n_outputs);
    korch_kernel_spec spec = {.pg = set->pg,
                              .n_nodes = n_nodes,
                              .nodes = nodes,
                              .n_inputs = n_inputs,
                              .inputs = inputs,
                              .n_outputs = n_outputs,
                              .outputs = outputs};
    return spec;
}

int korch_candidate_add(korch_candidate_set *set, int p, korch_nodemask mask, korch_candidate_origin origin) {
    const korch_pgraph *pg = set->pg;
    int existing = korch_candidate_find(set, p, mask);
    if (existing >= 0) {
        if (origin == KORCH_ORIGIN_FORCED) set->candidates[existing].forced = true;
        return existing;
    }
    if (set->n_candidates == set->cap_candidates) {
        int cap = set->cap_candidates ? set->cap_candidates * 2 : 256;
        korch_candidate *c = realloc(set->candidates, (size_t)cap * sizeof *c);
        if (!c) {
            korch_error(KORCH_ERR_OUT_OF_MEMORY, "candidates: out of memory");
            return -1;
        }
        set->candidates = c;
        set->cap_candidates = cap;
    }
    int n = __builtin_popcountll(mask);
    int *buf = malloc(korch_candidate_scratch_ints(n) * sizeof *buf);
    if (!buf) {
        korch_error(KORCH_ERR_OUT_OF_MEMORY, "candidates: out of memory");
        return -1;
    }
    korch_candidate *c = &set->candidates[set->n_candidates];
    memset(c, 0, sizeof *c);
    c->partition = p;
    c->mask = mask;
    c->origin = origin;
    c->forced = origin == KORCH_ORIGIN_FORCED;
    korch_kernel_spec spec = korch_candidate_describe(set, p, mask, buf);
    c->nodes = buf;
    c->n_nodes = spec.n_nodes;
    c->inputs = (int *)spec.inputs;
    c->n_inputs = spec.n_inputs;
    c->outputs = (int *)spec.outputs;
    c->n_outputs = spec.n_outputs;
    c->backend = korch_candidate_backend_for(pg, c->n_nodes, c->nodes, set->force_backend);
    c->signature = korch_candidate_signature(set, c);
    int ci = set->n_candidates++;
    if (!index_insert(set, ci)) {
        set->n_candidates--;
        free(buf);
        korch_error(KORCH_ERR_OUT_OF_MEMORY, "candidates: out of memory");
        return -1;
    }
    set->stats[p].candidates++;
    return ci;
}

int korch_partition_required(const korch_candidate_set *set, int p, int *out, int cap) {
    const korch_partition *part = &set->partitions[p];
    int count = 0;
    for (int i = 0; i < part->n_nodes; i++) {
        const korch_pnode *n = &set->pg->nodes[part->nodes[i]];
        for (int k = 0; k < n->n_outputs; k++) {
            int v = n->outputs[k];
            if (v < 0) continue;
            bool needed = set->pg->values[v].graph_output >= 0;
            for (int j = set->uses.consumer_start[v]; j < set->uses.consumer_start[v + 1] && !needed; j++)
                needed = set->partition_of[set->uses.consumers[j]] != p;
            if (needed && count < cap) out[count++] = v;
        }
    }
    return count;
}

/* ---- the builder ----------------------------------------------------------- */

korch_status korch_candidates_build(const korch_pgraph *pg, const korch_candidate_options *options,
                                    korch_candidate_set **out) {
    *out = NULL;
    korch_candidate_options defaults = korch_candidate_options_default();
    if (!options) options = &defaults;
    if (options->max_partition_nodes < 1 || options->max_partition_nodes > KORCH_PARTITION_MAX_NODES ||
        options->max_kernel_nodes < 1)
        return korch_error(KORCH_ERR_INVALID_ARGUMENT, "candidates: partition size must be 1..%d and kernel size >= 1",
                           KORCH_PARTITION_MAX_NODES);
    korch_candidate_set *set = calloc(1, sizeof *set);
    if (set) set->index = calloc(1, sizeof *set->index);
    if (!set || !set->index) {
        free(set);
        return korch_error(KORCH_ERR_OUT_OF_MEMORY, "candidates: out of memory");
    }
    set->pg = pg;
    set->force_backend = options->force_backend;
    korch_status st = korch_pgraph_uses_build(pg, &set->uses);
    if (st == KORCH_OK && !(set->in_set = calloc((size_t)pg->n_nodes + 1, sizeof *set->in_set)))
        st = korch_error(KORCH_ERR_OUT_OF_MEMORY, "candidates: out of memory");
    if (st == KORCH_OK) st = korch_partition_graph(set, options);
    for (int p = 0; p < set->n_partitions && st == KORCH_OK; p++) {
        const korch_partition *part = &set->partitions[p];
        set->stats[p].nodes = part->n_nodes;
        set->stats[p].size_cap = options->enumerate ? options->max_kernel_nodes : 1;
        for (int i = 0; i < part->n_nodes && st == KORCH_OK; i++) {
            int ci = korch_candidate_add(set, p, (korch_nodemask)1 << i, KORCH_ORIGIN_SINGLETON);
            if (ci < 0) {
                st = KORCH_ERR_OUT_OF_MEMORY;
                break;
            }
            /* every primitive must run somewhere: a single primitive its backend
             * rejects runs on the reference backend */
            korch_candidate *c = &set->candidates[ci];
            korch_kernel_spec spec = korch_candidate_spec(set, c);
            char reason[256] = "";
            if (options->supports && c->backend != KORCH_BACKEND_REF &&
                !options->supports(options->supports_user, c->backend, &spec, reason, sizeof reason)) {
                c->backend = KORCH_BACKEND_REF;
                set->ref_fallbacks++;
                korch_candidates_note_refusal(set, reason);
            }
        }
        if (st == KORCH_OK && options->enumerate) st = korch_enumerate_partition(set, p, options);
        /* requested groups (greedy): the partitioner kept each one inside a partition */
        if (st == KORCH_OK && options->group_of) {
            korch_nodemask groups[KORCH_PARTITION_MAX_NODES] = {0};
            int ids[KORCH_PARTITION_MAX_NODES], n_groups = 0;
            for (int i = 0; i < part->n_nodes; i++) {
                int g = options->group_of[part->nodes[i]];
                if (g < 0) continue;
                int j = 0;
                while (j < n_groups && ids[j] != g) j++;
                if (j == n_groups) {
                    ids[n_groups] = g;
                    groups[n_groups++] = 0;
                }
                groups[j] |= (korch_nodemask)1 << i;
            }
            for (int j = 0; j < n_groups && st == KORCH_OK; j++)
                if (korch_candidate_add(set, p, groups[j], KORCH_ORIGIN_FORCED) < 0) st = KORCH_ERR_OUT_OF_MEMORY;
        }
    }
    if (st != KORCH_OK) {
        korch_candidates_free(set);
        return st;
    }
    *out = set;
    return KORCH_OK;
}

void korch_candidates_free(korch_candidate_set *set) {
    if (!set) return;
    for (int i = 0; i < set->n_candidates; i++) free(set->candidates[i].nodes);
    free(set->candidates);
    free(set->partitions);
    free(set->stats);
    free(set->partition_of);
    free(set->local_of);
    free(set->in_set);
    korch_pgraph_uses_free(&set->uses);
    if (set->index) free(set->index->slots);
    free(set->index);
    free(set);
}

/* The category of a refusal: node numbers, quoted names and parenthesised
 * details dropped, so "node 12 (ew.ERF of "/blk/Erf") has no post-op" and
 * "node 40 (ew.ERF of "/x") has no post-op" count together. */
static void refusal_category(const char *reason, char *out, size_t size) {
    size_t j = 0;
    int depth = 0;
    bool quoted = false, digits = false;
    for (const char *p = reason; *p && j + 2 < size; p++) {
        char c = *p;
        if (c == '"') {
            quoted = !quoted;
            continue;
        }
        if (quoted) continue;
        if (c == '(') depth++;
        if (depth > 0) {
            if (c == ')') depth--;
            continue;
        }
        if (c >= '0' && c <= '9') {
            if (!digits) out[j++] = '#';
            digits = true;
            continue;
        }
        digits = false;
        if (c == ' ' && j > 0 && out[j - 1] == ' ') continue;
        out[j++] = c;
    }
    while (j > 0 && out[j - 1] == ' ') j--;
    out[j] = '\0';
}

void korch_candidates_note_refusal(korch_candidate_set *set, const char *reason) {
    char text[sizeof set->refusals[0].text];
    refusal_category(reason && *reason ? reason : "no reason given", text, sizeof text);
    for (int i = 0; i < set->n_refusals; i++)
        if (strcmp(set->refusals[i].text, text) == 0) {
            set->refusals[i].count++;
            return;
        }
    int slot = set->n_refusals < KORCH_REFUSAL_KINDS ? set->n_refusals++ : KORCH_REFUSAL_KINDS;
    korch_refusal *r = &set->refusals[slot];
    if (r->count == 0) snprintf(r->text, sizeof r->text, "%s", slot == KORCH_REFUSAL_KINDS ? "other reasons" : text);
    r->count++;
}

static int by_count_desc(const void *a, const void *b) {
    const korch_refusal *x = a, *y = b;
    return (y->count > x->count) - (y->count < x->count);
}

static void report_refusals(const korch_candidate_set *set, FILE *out) {
    korch_refusal sorted[KORCH_REFUSAL_KINDS + 1];
    int n = set->n_refusals;
    memcpy(sorted, set->refusals, (size_t)n * sizeof *sorted);
    if (set->refusals[KORCH_REFUSAL_KINDS].count) sorted[n++] = set->refusals[KORCH_REFUSAL_KINDS];
    if (n == 0) return;
    qsort(sorted, (size_t)n, sizeof *sorted, by_count_desc);
    fprintf(out, "  backend refusals (candidates no backend can implement, by reason):\n");
    for (int i = 0; i < n; i++) fprintf(out, "    %6ld  %s\n", sorted[i].count, sorted[i].text);
    if (set->ref_fallbacks)
        fprintf(out, "  %ld single primitives run on the reference backend (see the reasons above)\n",
                set->ref_fallbacks);
}

void korch_candidates_report(const korch_candidate_set *set, FILE *out) {
    long total_sets = 0, total_kept = 0, total_cands = 0, rejected[KORCH_REJECT_COUNT] = {0};
    fprintf(out, "candidates: %d partitions\n", set->n_partitions);
    for (int p = 0; p < set->n_partitions; p++) {
        const korch_partition_stats *s = &set->stats[p];
        fprintf(out, "  partition %3d: %2d nodes, cut %d, size cap %2d, %6ld sets, %5d candidates, %5d kept", p,
                s->nodes, set->partitions[p].cut_width, s->size_cap, s->sets, s->candidates, s->kept);
        bool any = false;
        for (int r = 0; r < KORCH_REJECT_COUNT; r++) {
            rejected[r] += s->rejected[r];
            if (!s->rejected[r]) continue;
            fprintf(out, "%s%s %ld", any ? ", " : "; rejected: ", korch_reject_reason_name((korch_reject_reason)r),
                    s->rejected[r]);
            any = true;
        }
        fprintf(out, "\n");
        total_sets += s->sets;
        total_kept += s->kept;
        total_cands += s->candidates;
    }
    fprintf(out, "  total: %ld sets, %ld candidates, %ld kept", total_sets, total_cands, total_kept);
    bool any = false;
    for (int r = 0; r < KORCH_REJECT_COUNT; r++) {
        if (!rejected[r]) continue;
        fprintf(out, "%s%s %ld", any ? ", " : "; rejected: ", korch_reject_reason_name((korch_reject_reason)r),
                rejected[r]);
        any = true;
    }
    fprintf(out, "\n");
    report_refusals(set, out);
}
