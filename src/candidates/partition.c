/* Automatic partitioning at narrow cuts.
 *
 * 1. A topological order of the live nodes in which every requested group is
 *    contiguous (Kahn's algorithm over groups, smallest node index first, so
 *    the order follows the model's own order and finishes one branch region
 *    before the next).
 * 2. The width of the cut between positions b-1 and b is the number of
 *    non-constant values produced before b and read at or after b.
 * 3. A dynamic program over cut positions picks segments of at most
 *    max_partition_nodes nodes minimising the total width of the cuts it
 *    makes (ties: fewer partitions). Between the blocks of a network the
 *    width is 1 (the residual stream), so cuts land there without any
 *    hand-written cut points. One preference: not inside a quantized
 *    kernel, from the dequantization of an 8-bit tensor through a linear
 *    primitive to the quantizer that reads its result (quantizer.c): a cut
 *    of the same width before or after it is taken instead, so that an int8
 *    convolution with its 8-bit destination can be one candidate.
 *
 * Segments of a topological order are convex: a path between two nodes of a
 * segment only visits nodes whose positions lie between theirs. */
#include <stdlib.h>
#include <string.h>

#include "candidates/candidates.h"

typedef struct heap {
    int *key; /* unit -> priority */
    int *items;
    int n;
} heap;

static void heap_push(heap *h, int u) {
    int i = h->n++;
    h->items[i] = u;
    while (i > 0) {
        int parent = (i - 1) / 2;
        if (h->key[h->items[parent]] <= h->key[h->items[i]]) break;
        int t = h->items[parent];
        h->items[parent] = h->items[i];
        h->items[i] = t;
        i = parent;
    }
}

static int heap_pop(heap *h) {
    int top = h->items[0];
    h->items[0] = h->items[--h->n];
    int i = 0;
    for (;;) {
        int l = 2 * i + 1, r = l + 1, m = i;
        if (l < h->n && h->key[h->items[l]] < h->key[h->items[m]]) m = l;
        if (r < h->n && h->key[h->items[r]] < h->key[h->items[m]]) m = r;
        if (m == i) break;
        int t = h->items[m];
        h->items[m] = h->items[i];
        h->items[i] = t;
        i = m;
    }
    return top;
}

/* Topological order of live nodes with groups contiguous. unit_of[node] is
 * the node's unit (its group, or itself); units are ordered by Kahn. */
static korch_status grouped_order(const korch_candidate_set *set, const int *group_of, int *order, int *count) {
    const korch_pgraph *pg = set->pg;
    int n = pg->n_nodes;
    korch_status st = KORCH_OK;
    int *unit_of = malloc(((size_t)n + 1) * sizeof *unit_of);
    int *key = malloc(((size_t)n + 1) * sizeof *key);
    int *indeg = calloc((size_t)n + 1, sizeof *indeg);
    int *items = malloc(((size_t)n + 1) * sizeof *items);
    int *topo = malloc(((size_t)n + 1) * sizeof *topo);
    int *pos = malloc(((size_t)n + 2) * sizeof *pos);
    int *members = malloc(((size_t)n + 1) * sizeof *members);
    int *size_of = calloc((size_t)n + 1, sizeof *size_of);
    int *group_unit = NULL;
    int max_group = -1;
    if (group_of)
        for (int i = 0; i < n; i++)
            if (set->uses.live[i] && group_of[i] > max_group) max_group = group_of[i];
    group_unit = malloc(((size_t)max_group + 2) * sizeof *group_unit);
    if (!unit_of || !key || !indeg || !items || !topo || !pos || !members || !size_of || !group_unit) {
        st = korch_error(KORCH_ERR_OUT_OF_MEMORY, "partition: out of memory");
        goto done;
    }
    for (int g = 0; g <= max_group; g++) group_unit[g] = -1;
    /* a unit is named by its smallest node index, which is also its priority */
    for (int i = 0; i < n; i++) {
        unit_of[i] = -1;
        if (!set->uses.live[i]) continue;
        int g = group_of ? group_of[i] : -1;
        if (g < 0) {
            unit_of[i] = i;
        } else {
            if (group_unit[g] < 0) group_unit[g] = i;
            unit_of[i] = group_unit[g];
        }
        key[i] = unit_of[i];
        size_of[unit_of[i]]++;
    }
    /* edges between units (counted once per consuming node and value) */
    for (int i = 0; i < n; i++) {
        if (unit_of[i] < 0) continue;
        const korch_pnode *node = &pg->nodes[i];
        for (int k = 0; k < node->n_inputs; k++) {
            int p = pg->values[node->inputs[k]].producer;
            if (p >= 0 && unit_of[p] >= 0 && unit_of[p] != unit_of[i]) indeg[unit_of[i]]++;
        }
    }
    /* within a unit, nodes follow a plain topological order: bucket the
     * topological order by unit (CSR in `members`, starts in `pos`) */
    int n_topo = 0;
    st = korch_pgraph_toposort(pg, topo, &n_topo);
    if (st != KORCH_OK) goto done;
    for (int i = 0; i <= n; i++) pos[i] = 0;
    for (int t = 0; t < n_topo; t++)
        if (unit_of[topo[t]] >= 0) pos[unit_of[topo[t]]]++;
    for (int i = 0, sum = 0; i <= n; i++) {
        int c = pos[i];
        pos[i] = sum;
        sum += c;
    }
    for (int t = 0; t < n_topo; t++)
        if (unit_of[topo[t]] >= 0) members[pos[unit_of[topo[t]]]++] = topo[t];
    /* pos[u] is now the end of unit u's bucket; its size is size_of[u] */
    heap h = {.key = key, .items = items, .n = 0};
    for (int i = 0; i < n; i++)
        if (unit_of[i] == i && indeg[i] == 0) heap_push(&h, i);
    int written = 0, live_count = 0;
    for (int i = 0; i < n; i++) live_count += unit_of[i] >= 0;
    while (h.n > 0) {
        int u = heap_pop(&h);
        int first = written;
        for (int m = pos[u] - size_of[u]; m < pos[u]; m++) order[written++] = members[m];
        for (int w = first; w < written; w++) {
            const korch_pnode *node = &pg->nodes[order[w]];
            for (int k = 0; k < node->n_outputs; k++) {
                int v = node->outputs[k];
                if (v < 0) continue;
                for (int j = set->uses.consumer_start[v]; j < set->uses.consumer_start[v + 1]; j++) {
                    int c = set->uses.consumers[j];
                    if (unit_of[c] == u) continue;
                    /* one decrement per input slot that reads v, as counted */
                    const korch_pnode *cn = &pg->nodes[c];
                    for (int m = 0; m < cn->n_inputs; m++)
                        if (cn->inputs[m] == v && --indeg[unit_of[c]] == 0) heap_push(&h, unit_of[c]);
                }
            }
        }
    }
    if (written != live_count)
        st = korch_error(KORCH_ERR_INTERNAL, "partition: the requested groups form a cycle (%d of %d nodes ordered)",
                         written, live_count);
    *count = written;
done:
    free(unit_of);
    free(key);
    free(indeg);
    free(items);
    free(topo);
    free(pos);
    free(members);
    free(size_of);
    free(group_unit);
    return st;
}

static void fill_reachability(korch_partition *part) {
    for (int i = 0; i < part->n_nodes; i++) {
        part->anc[i] = 0;
        for (int j = 0; j < i; j++)
            if ((part->pred[i] >> j) & 1u) part->anc[i] |= part->anc[j] | ((korch_nodemask)1 << j);
    }
    for (int i = part->n_nodes - 1; i >= 0; i--) {
        part->desc[i] = 0;
        for (int j = i + 1; j < part->n_nodes; j++)
            if ((part->succ[i] >> j) & 1u) part->desc[i] |= part->desc[j] | ((korch_nodemask)1 << j);
    }
}

/* The first node of the quantized kernel ending at `node` (whose output a
 * quantizer reads): up through its elementwise epilogue, the linear
 * primitive and a transpose of its source to the CAST of an 8-bit tensor
 * that dequantizes it,
 * each value on the way read once; `node` itself when there is no such
 * chain (the quantizer then stays with the value's producer). */
static int quantized_start(const korch_pgraph *pg, const korch_pgraph_uses *u, int node) {
    int at = node;
    for (int depth = 0; depth < 12; depth++) {
        const korch_pnode *n = &pg->nodes[at];
        if (n->kind == KORCH_PRIM_ELEMENTWISE && n->u.ew.op == KORCH_EW_CAST && n->n_inputs == 1) {
            korch_dtype t = pg->values[n->inputs[0]].dtype;
            if (t == KORCH_DTYPE_UINT8 || t == KORCH_DTYPE_INT8) return at;
        }
        if (n->kind != KORCH_PRIM_ELEMENTWISE && n->kind != KORCH_PRIM_LINEAR && n->kind != KORCH_PRIM_LAYOUT) break;
        int next = -1;
        for (int k = 0; k < n->n_inputs && next < 0; k++) {
            int v = n->inputs[k], p = pg->values[v].producer;
            if (pg->values[v].is_constant || p < 0) continue;
            if (u->consumer_start[v + 1] - u->consumer_start[v] == 1) next = p;
        }
        if (next < 0) break;
        at = next;
    }
    return node;
}

korch_status korch_partition_graph(korch_candidate_set *set, const korch_candidate_options *options) {
    const korch_pgraph *pg = set->pg;
    int n = pg->n_nodes, cap = options->max_partition_nodes;
    korch_status st = KORCH_OK;
    int *order = malloc(((size_t)n + 1) * sizeof *order);
    int *position = malloc(((size_t)n + 1) * sizeof *position);
    long *width = calloc((size_t)n + 2, sizeof *width);
    long *held = calloc((size_t)n + 2, sizeof *held); /* > 0: the boundary splits a value from its quantizer
                                                        * or from its precision cast */
    double *best = malloc(((size_t)n + 1) * sizeof *best);
    int *from = malloc(((size_t)n + 1) * sizeof *from);
    set->partition_of = malloc(((size_t)n + 1) * sizeof *set->partition_of);
    set->local_of = malloc(((size_t)n + 1) * sizeof *set->local_of);
    if (!order || !position || !width || !held || !best || !from || !set->partition_of || !set->local_of) {
        st = korch_error(KORCH_ERR_OUT_OF_MEMORY, "partition: out of memory");
        goto done;
    }
    int count = 0;
    st = grouped_order(set, options->group_of, order, &count);
    if (st != KORCH_OK) goto done;
    for (int i = 0; i < n; i++) {
        position[i] = -1;
        set->partition_of[i] = -1;
        set->local_of[i] = -1;
    }
    for (int i = 0; i < count; i++) position[order[i]] = i;
    /* width[b]: values crossing the boundary before position b */
    for (int i = 0; i < count; i++) {
        const korch_pnode *node = &pg->nodes[order[i]];
        for (int k = 0; k < node->n_outputs; k++) {
            int v = node->outputs[k], last = -1;
            if (v < 0) continue;
            for (int j = set->uses.consumer_start[v]; j < set->uses.consumer_start[v + 1]; j++)
                if (position[set->uses.consumers[j]] > last) last = position[set->uses.consumers[j]];
            if (last > i) {
                width[i + 1]++;
                width[last + 1]--;
            }
        }
    }
    for (int b = 1; b <= count; b++) width[b] += width[b - 1];
    for (int i = 0; i < count; i++) {
        const korch_pnode *node = &pg->nodes[order[i]];
        int tail[8], nt = node->n_outputs == 1 && node->outputs[0] >= 0
                              ? korch_quantizer_tail(pg, &set->uses, node->outputs[0], tail)
                              : 0;
        int last = i, first = nt ? quantized_start(pg, &set->uses, order[i]) : order[i];
        for (int t = 0; t < nt; t++)
            if (position[tail[t]] > last) last = position[tail[t]];
        if (nt && last > position[first]) {
            held[position[first] + 1]++;
            held[last + 1]--;
        }
        /* a value stored in bfloat16 (ir/precision.c): its cast goes with
         * its producer when the cut costs the same either side, so that the
         * producer's kernel may write the 16 bits itself */
        int pp = korch_pnode_is_precision_cast(pg, order[i]) ? pg->values[node->inputs[0]].producer : -1;
        if (pp >= 0 && position[pp] >= 0 && position[pp] < i) {
            held[position[pp] + 1]++;
            held[i + 1]--;
        }
    }
    for (int b = 1; b <= count; b++) held[b] += held[b - 1];
    /* DP over boundaries: best[b] = cheapest way to cut positions [0, b) */
    best[0] = 0;
    for (int b = 1; b <= count; b++) {
        best[b] = -1;
        from[b] = -1;
        bool cut_ok = b == count || options->group_of == NULL || options->group_of[order[b - 1]] < 0 ||
                      options->group_of[order[b - 1]] != options->group_of[order[b]];
        if (!cut_ok) continue;
        /* width first, then not splitting a quantizer (or a precision
         * cast) from its value, then fewer parts */
        double here = b == count ? 0.0 : (double)width[b] * 1000.0 + 1.0 + (held[b] > 0 ? 0.5 : 0.0);
        for (int a = b - 1; a >= 0 && b - a <= cap; a--) {
            if (best[a] < 0) continue;
            double cost = best[a] + here;
            if (best[b] < 0 || cost < best[b]) {
                best[b] = cost;
                from[b] = a;
            }
        }
    }
    if (count > 0 && best[count] < 0) {
        st = korch_error(KORCH_ERR_INVALID_ARGUMENT,
                         "partition: a fusion group has more than %d nodes, the partition size limit", cap);
        goto done;
    }
    int n_parts = 0;
    for (int b = count; b > 0; b = from[b]) n_parts++;
    set->partitions = calloc((size_t)n_parts + 1, sizeof *set->partitions);
    set->stats = calloc((size_t)n_parts + 1, sizeof *set->stats);
    if (!set->partitions || !set->stats) {
        st = korch_error(KORCH_ERR_OUT_OF_MEMORY, "partition: out of memory");
        goto done;
    }
    set->n_partitions = n_parts;
    int p = n_parts;
    for (int b = count; b > 0; b = from[b]) {
        korch_partition *part = &set->partitions[--p];
        int a = from[b];
        part->n_nodes = b - a;
        part->cut_width = b == count ? 0 : (int)width[b];
        for (int i = a; i < b; i++) {
            part->nodes[i - a] = order[i];
            set->partition_of[order[i]] = p;
            set->local_of[order[i]] = i - a;
        }
    }
    for (p = 0; p < n_parts; p++) {
        korch_partition *part = &set->partitions[p];
        for (int i = 0; i < part->n_nodes; i++) {
            const korch_pnode *node = &pg->nodes[part->nodes[i]];
            for (int k = 0; k < node->n_inputs; k++) {
                int q = pg->values[node->inputs[k]].producer;
                if (q >= 0 && set->partition_of[q] == p) {
                    part->pred[i] |= (korch_nodemask)1 << set->local_of[q];
                    part->succ[set->local_of[q]] |= (korch_nodemask)1 << i;
                }
            }
        }
        fill_reachability(part);
    }
done:
    free(order);
    free(position);
    free(width);
    free(held);
    free(best);
    free(from);
    return st;
}
