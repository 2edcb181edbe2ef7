/* The clean-up driver and dead-code removal. Passes run in rounds until a
 * round changes nothing: constant propagation, layout simplification,
 * common-subexpression elimination, dead code. */
#include <stdlib.h>
#include <string.h>

#include "fission/cleanup_internal.h"

korch_cleanup_options korch_cleanup_options_default(void) {
    return (korch_cleanup_options){.constant_propagation = true,
                                   .layout_simplification = true,
                                   .common_subexpressions = true,
                                   .dead_code = true,
                                   .fold_max_bytes = 1 << 20};
}

korch_status korch_value_repl_init(korch_value_repl *r, const korch_pgraph *pg) {
    r->n = pg->n_values;
    r->to = malloc(((size_t)r->n + 1) * sizeof *r->to);
    if (!r->to) return korch_error(KORCH_ERR_OUT_OF_MEMORY, "clean-up: out of memory");
    for (int v = 0; v < r->n; v++) r->to[v] = -1;
    return KORCH_OK;
}

void korch_value_repl_free(korch_value_repl *r) {
    free(r->to);
    r->to = NULL;
}

int korch_value_repl_resolve(const korch_value_repl *r, int v) {
    while (v >= 0 && v < r->n && r->to[v] >= 0) v = r->to[v];
    return v;
}

void korch_value_repl_node(const korch_value_repl *r, korch_pgraph *pg, int ni) {
    korch_pnode *n = &pg->nodes[ni];
    for (int k = 0; k < n->n_inputs; k++) n->inputs[k] = korch_value_repl_resolve(r, n->inputs[k]);
}

void korch_value_repl_apply(const korch_value_repl *r, korch_pgraph *pg) {
    for (int i = 0; i < pg->n_nodes; i++)
        if (!pg->nodes[i].dead) korch_value_repl_node(r, pg, i);
    for (int i = 0; i < pg->n_outputs; i++) pg->outputs[i] = korch_value_repl_resolve(r, pg->outputs[i]);
}

korch_status korch_cleanup_order(const korch_pgraph *pg, int **order, int *count) {
    *order = malloc(((size_t)pg->n_nodes + 1) * sizeof **order);
    if (!*order) return korch_error(KORCH_ERR_OUT_OF_MEMORY, "clean-up: out of memory");
    korch_status st = korch_pgraph_toposort(pg, *order, count);
    if (st != KORCH_OK) {
        free(*order);
        *order = NULL;
    }
    return st;
}

bool *korch_cleanup_output_flags(const korch_pgraph *pg) {
    bool *flags = calloc((size_t)pg->n_values + 1, sizeof *flags);
    if (flags)
        for (int i = 0; i < pg->n_outputs; i++) flags[pg->outputs[i]] = true;
    return flags;
}

int *korch_cleanup_use_counts(const korch_pgraph *pg) {
    int *uses = calloc((size_t)pg->n_values + 1, sizeof *uses);
    if (!uses) return NULL;
    for (int i = 0; i < pg->n_nodes; i++) {
        const korch_pnode *n = &pg->nodes[i];
        if (n->dead) continue;
        for (int k = 0; k < n->n_inputs; k++) uses[n->inputs[k]]++;
    }
    for (int i = 0; i < pg->n_outputs; i++) uses[pg->outputs[i]]++;
    return uses;
}

/* Marks every node that no graph output depends on as dead. */
korch_status korch_cleanup_dead_code(korch_pgraph *pg, int *changed) {
    *changed = 0;
    int *order = NULL, count = 0;
    KORCH_TRY(korch_cleanup_order(pg, &order, &count));
    bool *needed = korch_cleanup_output_flags(pg);
    if (!needed) {
        free(order);
        return korch_error(KORCH_ERR_OUT_OF_MEMORY, "clean-up: out of memory");
    }
    for (int i = count - 1; i >= 0; i--) {
        korch_pnode *n = &pg->nodes[order[i]];
        bool live = false;
        for (int k = 0; k < n->n_outputs; k++)
            if (n->outputs[k] >= 0 && needed[n->outputs[k]]) live = true;
        if (!live) {
            n->dead = true;
            (*changed)++;
            continue;
        }
        for (int k = 0; k < n->n_inputs; k++) needed[n->inputs[k]] = true;
    }
    free(needed);
    free(order);
    return KORCH_OK;
}

typedef enum pass_kind { PASS_CONSTANTS, PASS_LAYOUTS, PASS_CSE, PASS_DEAD_CODE } pass_kind;

static korch_status run_pass(korch_pgraph *pg, const korch_cleanup_options *o, korch_fission_stats *stats,
                             pass_kind kind, int *changed) {
    static const char *const names[] = {"constant propagation", "layout simplification", "common subexpressions",
                                        "dead code"};
    const char *name = names[kind];
    int before = korch_pgraph_live_nodes(pg);
    int c = 0;
    switch (kind) {
    case PASS_CONSTANTS: KORCH_TRY(korch_cleanup_constants(pg, o->fold_max_bytes, &c)); break;
    case PASS_LAYOUTS: KORCH_TRY(korch_cleanup_layouts(pg, &c)); break;
    case PASS_CSE: KORCH_TRY(korch_cleanup_cse(pg, &c)); break;
    case PASS_DEAD_CODE: KORCH_TRY(korch_cleanup_dead_code(pg, &c)); break;
    }
    *changed += c;
    if (stats && stats->n_passes < KORCH_FISSION_MAX_PASSES)
        stats->passes[stats->n_passes++] = (korch_fission_pass_stat){name, before, korch_pgraph_live_nodes(pg)};
    return KORCH_OK;
}

korch_status korch_pgraph_cleanup(korch_pgraph *pg, const korch_cleanup_options *options,
                                  korch_fission_stats *stats) {
    korch_cleanup_options o = options ? *options : korch_cleanup_options_default();
    /* Each round can expose work for the others (a folded transpose makes two
     * constants equal, a cancelled reshape pair makes two nodes equal); a
     * handful of rounds reaches the fixed point on every graph we have seen. */
    for (int round = 0; round < 6; round++) {
        int changed = 0;
        if (o.constant_propagation) KORCH_TRY(run_pass(pg, &o, stats, PASS_CONSTANTS, &changed));
        if (o.layout_simplification) KORCH_TRY(run_pass(pg, &o, stats, PASS_LAYOUTS, &changed));
        if (o.common_subexpressions) KORCH_TRY(run_pass(pg, &o, stats, PASS_CSE, &changed));
        if (o.dead_code) KORCH_TRY(run_pass(pg, &o, stats, PASS_DEAD_CODE, &changed));
        if (!changed) break;
    }
    KORCH_TRY(korch_pgraph_finalize_outputs(pg));
    if (o.dead_code) {
        int c = 0;
        KORCH_TRY(korch_cleanup_dead_code(pg, &c));
    }
    KORCH_TRY(korch_pgraph_compact(pg));
    if (stats) korch_fission_count(pg, stats, true);
    return KORCH_OK;
}
