/* Node sets of a primitive graph: who reads each value, which nodes are
 * live, and a set's inputs and outputs -- the one rule candidates, the
 * greedy strategy and plan kernels share (ir/nodeset.h). */
#include <stdlib.h>
#include <string.h>

#include "ir/nodeset.h"

korch_status korch_pgraph_uses_build(const korch_pgraph *pg, korch_pgraph_uses *u) {
    memset(u, 0, sizeof *u);
    u->n_values = pg->n_values;
    u->n_nodes = pg->n_nodes;
    u->live = calloc((size_t)pg->n_nodes + 1, sizeof *u->live);
    u->consumer_start = calloc((size_t)pg->n_values + 2, sizeof *u->consumer_start);
    int *stack = malloc(((size_t)pg->n_nodes + 1) * sizeof *stack);
    if (!u->live || !u->consumer_start || !stack) {
        free(stack);
        korch_pgraph_uses_free(u);
        return korch_error(KORCH_ERR_OUT_OF_MEMORY, "pgraph uses: out of memory");
    }
    /* live: ancestors of graph outputs (the nodes whose work is needed) */
    int sp = 0;
    for (int i = 0; i < pg->n_outputs; i++) {
        int p = pg->values[pg->outputs[i]].producer;
        if (p >= 0 && !pg->nodes[p].dead && !u->live[p]) {
            u->live[p] = true;
            stack[sp++] = p;
        }
    }
    while (sp > 0) {
        const korch_pnode *n = &pg->nodes[stack[--sp]];
        for (int k = 0; k < n->n_inputs; k++) {
            int p = pg->values[n->inputs[k]].producer;
            if (p >= 0 && !pg->nodes[p].dead && !u->live[p]) {
                u->live[p] = true;
                stack[sp++] = p;
            }
        }
    }
    free(stack);
    /* consumers (CSR), each node once per value even if it reads it twice */
    int total = 0;
    for (int i = 0; i < pg->n_nodes; i++) {
        if (!u->live[i]) continue;
        const korch_pnode *n = &pg->nodes[i];
        for (int k = 0; k < n->n_inputs; k++) {
            bool seen = false;
            for (int j = 0; j < k; j++) seen |= n->inputs[j] == n->inputs[k];
            if (!seen) {
                u->consumer_start[n->inputs[k] + 1]++;
                total++;
            }
        }
    }
    for (int v = 0; v < pg->n_values; v++) u->consumer_start[v + 1] += u->consumer_start[v];
    u->consumers = malloc(((size_t)total + 1) * sizeof *u->consumers);
    int *fill = calloc((size_t)pg->n_values + 1, sizeof *fill);
    if (!u->consumers || !fill) {
        free(fill);
        korch_pgraph_uses_free(u);
        return korch_error(KORCH_ERR_OUT_OF_MEMORY, "pgraph uses: out of memory");
    }
    for (int i = 0; i < pg->n_nodes; i++) {
        if (!u->live[i]) continue;
        const korch_pnode *n = &pg->nodes[i];
        for (int k = 0; k < n->n_inputs; k++) {
            bool seen = false;
            for (int j = 0; j < k; j++) seen |= n->inputs[j] == n->inputs[k];
            if (!seen) {
                int v = n->inputs[k];
                u->consumers[u->consumer_start[v] + fill[v]++] = i;
            }
        }
    }
    free(fill);
    return KORCH_OK;
}

void korch_pgraph_uses_free(korch_pgraph_uses *u) {
    free(u->live);
    free(u->consumer_start);
    free(u->consumers);
    memset(u, 0, sizeof *u);
}

void korch_node_set_io(const korch_pgraph *pg, const korch_pgraph_uses *uses, int n_nodes, const int *nodes,
                       bool *in_set, int *inputs, int *n_inputs, int *outputs, int *n_outputs) {
    *n_inputs = *n_outputs = 0;
    for (int i = 0; i < n_nodes; i++) in_set[nodes[i]] = true;
    for (int i = 0; i < n_nodes; i++) {
        const korch_pnode *n = &pg->nodes[nodes[i]];
        for (int k = 0; k < n->n_inputs; k++) {
            int v = n->inputs[k], p = pg->values[v].producer;
            if (p >= 0 && in_set[p]) continue;
            bool seen = false;
            for (int j = 0; j < *n_inputs && !seen; j++) seen = inputs[j] == v;
            if (!seen) inputs[(*n_inputs)++] = v;
        }
        for (int k = 0; k < n->n_outputs; k++) {
            int v = n->outputs[k];
            if (v < 0) continue;
            bool escapes = pg->values[v].graph_output >= 0;
            for (int j = uses->consumer_start[v]; j < uses->consumer_start[v + 1] && !escapes; j++)
                escapes = !in_set[uses->consumers[j]];
            if (escapes) outputs[(*n_outputs)++] = v;
        }
    }
    for (int i = 0; i < n_nodes; i++) in_set[nodes[i]] = false;
}
