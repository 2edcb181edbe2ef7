/* The fission driver: walks the op graph in topological order and applies
 * each operator's rule (fission_table.c), falling back to an opaque primitive
 * when a rule declines. */
#include "fission/fission.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fission/rules.h"

typedef struct fission_state {
    const korch_graph *g;
    korch_pgraph *pg;
    int *vmap; /* op-graph value -> pvalue, -1 until known */
} fission_state;

/* pvalue of an op-graph value: graph inputs are mapped up front, node
 * outputs when their node is fissioned, constants on first use (borrowed). */
static int map_value(fission_state *s, int v) {
    if (s->vmap[v] >= 0) return s->vmap[v];
    const korch_value *val = &s->g->values[v];
    char buf[160];
    if (!val->is_constant) {
        korch_error(KORCH_ERR_INTERNAL, "fission: value \"%s\" is used before it is computed",
                    korch_printable(val->name, buf, sizeof buf));
        return -1;
    }
    int pv = korch_pgraph_add_constant_ref(s->pg, &val->constant);
    if (pv < 0) return -1;
    s->pg->values[pv].source_value = v;
    s->vmap[v] = pv;
    return pv;
}

static korch_status make_opaque(fission_state *s, int ni, const int *in, int *out, const char *reason) {
    const korch_node *n = &s->g->nodes[ni];
    int present[KORCH_MAX_RANK], count = 0, total = 0;
    char buf[160];
    for (int k = 0; k < n->n_inputs; k++) total += n->inputs[k] >= 0;
    /* more inputs than a primitive holds: the constant ones are read from
     * the op graph (korch_opaque_input) */
    uint32_t from_source = 0;
    for (int k = 0; k < n->n_inputs; k++) {
        if (n->inputs[k] < 0) continue;
        if (total > KORCH_MAX_RANK && k < 32 && s->g->values[n->inputs[k]].is_constant &&
            s->g->values[n->inputs[k]].constant.data) {
            from_source |= 1u << k;
            continue;
        }
        if (count == KORCH_MAX_RANK)
            return korch_error(KORCH_ERR_UNSUPPORTED,
                               "node \"%s\" (%s) cannot be fissioned (%s) and has more than %d non-constant inputs "
                               "for an opaque primitive",
                               korch_printable(n->name, buf, sizeof buf), n->op_type, reason, KORCH_MAX_RANK);
        present[count++] = in[k];
    }
    int live = korch_opaque_live_outputs(s->g, ni);
    if (n->n_outputs > KORCH_PNODE_MAX_OUTPUTS || live > KORCH_PNODE_MAX_LIVE_OUTPUTS)
        return korch_error(KORCH_ERR_UNSUPPORTED,
                           "node \"%s\" (%s) cannot be fissioned (%s) and has %d outputs, %d of them read; an opaque "
                           "primitive holds %d outputs, %d read",
                           korch_printable(n->name, buf, sizeof buf), n->op_type, reason, n->n_outputs, live,
                           KORCH_PNODE_MAX_OUTPUTS, KORCH_PNODE_MAX_LIVE_OUTPUTS);
    int pn = korch_pgraph_opaque(s->pg, ni, count, present);
    if (pn < 0) return korch_error_prefix(KORCH_ERR_INTERNAL, "node \"%s\"", korch_printable(n->name, buf, sizeof buf));
    s->pg->nodes[pn].u.opaque.reason = reason;
    s->pg->nodes[pn].u.opaque.from_source = from_source;
    for (int k = 0; k < n->n_outputs; k++) out[k] = s->pg->nodes[pn].outputs[k];
    return KORCH_OK;
}

/* The rule's outputs must be exactly what shape inference said. */
static korch_status check_outputs(const fission_state *s, const korch_node *n, const int *out) {
    char nbuf[160], a[96], b[96];
    for (int k = 0; k < n->n_outputs; k++) {
        if (n->outputs[k] < 0) continue;
        const korch_value *val = &s->g->values[n->outputs[k]];
        /* an opaque operator with more outputs than a primitive holds gives
         * values for the ones read only (korch_pgraph_opaque) */
        if (out[k] < 0 && n->n_outputs > KORCH_PNODE_MAX_LIVE_OUTPUTS) continue;
        if (out[k] < 0)
            return korch_error(KORCH_ERR_INTERNAL, "node \"%s\" (%s): fission rule left output %d unset",
                               korch_printable(n->name, nbuf, sizeof nbuf), n->op_type, k);
        const korch_pvalue *pv = &s->pg->values[out[k]];
        if (pv->dtype != val->dtype || !korch_shape_equal(&pv->shape, &val->shape))
            return korch_error(KORCH_ERR_INTERNAL,
                               "node \"%s\" (%s): fission rule gives output %d as %s %s, inference says %s %s",
                               korch_printable(n->name, nbuf, sizeof nbuf), n->op_type, k, korch_dtype_name(pv->dtype),
                               korch_shape_format(&pv->shape, a, sizeof a), korch_dtype_name(val->dtype),
                               korch_shape_format(&val->shape, b, sizeof b));
    }
    return KORCH_OK;
}

static korch_status fission_node(fission_state *s, int ni) {
    const korch_node *n = &s->g->nodes[ni];
    korch_pgraph *pg = s->pg;
    char nbuf[160];
    int *in = malloc(((size_t)n->n_inputs + 1) * sizeof *in);
    int *out = malloc(((size_t)n->n_outputs + 1) * sizeof *out);
    if (!in || !out) {
        free(in);
        free(out);
        return korch_error(KORCH_ERR_OUT_OF_MEMORY, "fission: out of memory");
    }
    korch_status st = KORCH_OK;
    for (int k = 0; k < n->n_inputs && st == KORCH_OK; k++) {
        in[k] = n->inputs[k] >= 0 ? map_value(s, n->inputs[k]) : -1;
        if (n->inputs[k] >= 0 && in[k] < 0) st = KORCH_ERR_INTERNAL;
    }
    for (int k = 0; k < n->n_outputs; k++) out[k] = -1;
    int first_node = pg->n_nodes;
    if (st == KORCH_OK) {
        korch_fission_ctx ctx = {.pg = pg, .g = s->g, .node_index = ni, .node = n, .n_inputs = n->n_inputs,
                                 .in = in, .n_outputs = n->n_outputs, .out = out, .vmap = s->vmap};
        korch_fission_rule rule = korch_fission_rules[n->def->kind];
        st = rule(&ctx);
        if (st == KORCH_ERR_UNSUPPORTED && ctx.decline_reason) {
            for (int i = first_node; i < pg->n_nodes; i++) pg->nodes[i].dead = true;
            first_node = pg->n_nodes;
            for (int k = 0; k < n->n_outputs; k++) out[k] = -1;
            st = make_opaque(s, ni, in, out, ctx.decline_reason);
        } else if (st != KORCH_OK) {
            st = korch_error_prefix(st, "fission of node \"%s\" (%s, opset %d)",
                                    korch_printable(n->name, nbuf, sizeof nbuf), n->op_type, n->opset);
        }
    }
    if (st == KORCH_OK) st = check_outputs(s, n, out);
    if (st == KORCH_OK) {
        for (int i = first_node; i < pg->n_nodes; i++)
            if (pg->nodes[i].source_node < 0) pg->nodes[i].source_node = ni;
        for (int k = 0; k < n->n_outputs; k++) {
            if (n->outputs[k] < 0 || out[k] < 0) continue;
            s->vmap[n->outputs[k]] = out[k];
            if (pg->values[out[k]].source_value < 0) pg->values[out[k]].source_value = n->outputs[k];
        }
    }
    free(in);
    free(out);
    return st;
}

static korch_status fission_graph(fission_state *s) {
    const korch_graph *g = s->g;
    korch_pgraph *pg = s->pg;
    pg->inputs = malloc(((size_t)g->n_inputs + 1) * sizeof *pg->inputs);
    pg->outputs = malloc(((size_t)g->n_outputs + 1) * sizeof *pg->outputs);
    int *order = malloc(((size_t)g->n_nodes + 1) * sizeof *order);
    if (!pg->inputs || !pg->outputs || !order) {
        free(order);
        return korch_error(KORCH_ERR_OUT_OF_MEMORY, "fission: out of memory");
    }
    for (int i = 0; i < g->n_inputs; i++) {
        const korch_value *val = &g->values[g->inputs[i]];
        int v = korch_pgraph_add_value(pg, val->dtype, &val->shape);
        if (v < 0) {
            free(order);
            return KORCH_ERR_OUT_OF_MEMORY;
        }
        pg->values[v].graph_input = i;
        pg->values[v].source_value = g->inputs[i];
        pg->inputs[pg->n_inputs++] = v;
        s->vmap[g->inputs[i]] = v;
    }
    int count = 0;
    korch_status st = korch_graph_toposort(g, order, &count);
    for (int i = 0; i < count && st == KORCH_OK; i++) st = fission_node(s, order[i]);
    free(order);
    for (int i = 0; i < g->n_outputs && st == KORCH_OK; i++) {
        int v = map_value(s, g->outputs[i]);
        if (v < 0) return KORCH_ERR_INTERNAL;
        pg->outputs[pg->n_outputs++] = v;
    }
    if (st == KORCH_OK) st = korch_pgraph_finalize_outputs(pg);
    return st;
}

korch_status korch_fission_raw(const korch_graph *g, korch_pgraph **out, korch_fission_stats *stats) {
    *out = NULL;
    for (int i = 0; i < g->n_nodes; i++)
        if (!g->nodes[i].dead && !g->nodes[i].def)
            return korch_error(KORCH_ERR_INVALID_ARGUMENT, "fission needs a validated and inferred op graph");
    korch_pgraph *pg = NULL;
    KORCH_TRY(korch_pgraph_create(g, &pg));
    fission_state s = {.g = g, .pg = pg, .vmap = malloc(((size_t)g->n_values + 1) * sizeof(int))};
    if (!s.vmap) {
        korch_pgraph_free(pg);
        return korch_error(KORCH_ERR_OUT_OF_MEMORY, "fission: out of memory");
    }
    for (int v = 0; v < g->n_values; v++) s.vmap[v] = -1;
    korch_status st = fission_graph(&s);
    free(s.vmap);
    if (st == KORCH_OK) st = korch_pgraph_compact(pg);
    if (st != KORCH_OK) {
        korch_pgraph_free(pg);
        return st;
    }
    if (stats) {
        memset(stats, 0, sizeof *stats);
        for (int i = 0; i < g->n_nodes; i++) {
            if (g->nodes[i].dead) continue;
            stats->op_nodes++;
            stats->op_count[g->nodes[i].def->kind]++;
        }
        korch_fission_count(pg, stats, false);
    }
    *out = pg;
    return KORCH_OK;
}

korch_status korch_fission(const korch_graph *g, korch_pgraph **out, korch_fission_stats *stats) {
    korch_pgraph *pg = NULL;
    KORCH_TRY(korch_fission_raw(g, &pg, stats));
    korch_cleanup_options options = korch_cleanup_options_default();
    korch_status st = korch_pgraph_cleanup(pg, &options, stats);
    if (st != KORCH_OK) {
        korch_pgraph_free(pg);
        return st;
    }
    *out = pg;
    return KORCH_OK;
}

korch_status korch_pgraph_finalize_outputs(korch_pgraph *pg) {
    for (int v = 0; v < pg->n_values; v++) pg->values[v].graph_output = -1;
    for (int i = 0; i < pg->n_outputs; i++) {
        int v = pg->outputs[i];
        korch_pvalue *pv = &pg->values[v];
        bool produced = pv->producer >= 0 && !pg->nodes[pv->producer].dead;
        if (produced && pv->graph_output < 0 && pv->graph_input < 0) {
            pv->graph_output = i;
            /* an output is named after the op-graph output it is (it may also
             * equal an intermediate, e.g. through Identity) */
            if (pg->source) pv->source_value = pg->source->outputs[i];
            continue;
        }
        int copy = korch_pgraph_elementwise(pg, KORCH_EW_COPY, 1, &v, 0, 0, KORCH_DTYPE_UNDEFINED);
        if (copy < 0) return korch_error_prefix(KORCH_ERR_INTERNAL, "graph output %d", i);
        int src = pg->values[v].producer;
        pg->nodes[pg->values[copy].producer].source_node = src >= 0 ? pg->nodes[src].source_node : -1;
        pg->values[copy].graph_output = i;
        pg->values[copy].source_value = pg->source ? pg->source->outputs[i] : -1;
        pg->outputs[i] = copy;
    }
    return KORCH_OK;
}

void korch_fission_count(const korch_pgraph *pg, korch_fission_stats *stats, bool after_cleanup) {
    int *per_op = after_cleanup ? stats->prims_per_op : stats->fissioned_per_op;
    int *per_kind = after_cleanup ? stats->prims_per_kind : stats->fissioned_per_kind;
    int *total = after_cleanup ? &stats->prims : &stats->fissioned;
    memset(per_op, 0, sizeof stats->prims_per_op);
    memset(per_kind, 0, sizeof stats->prims_per_kind);
    *total = 0;
    if (!after_cleanup) memset(stats->opaque_per_op, 0, sizeof stats->opaque_per_op);
    for (int i = 0; i < pg->n_nodes; i++) {
        const korch_pnode *n = &pg->nodes[i];
        if (n->dead) continue;
        (*total)++;
        per_kind[n->kind]++;
        if (n->source_node >= 0 && pg->source) {
            int kind = pg->source->nodes[n->source_node].def->kind;
            per_op[kind]++;
            /* opaque nodes are decided by fission; clean-ups only drop dead ones */
            if (n->kind == KORCH_PRIM_OPAQUE && !after_cleanup) stats->opaque_per_op[kind]++;
        }
    }
}

void korch_fission_stats_print(const korch_pgraph *pg, const korch_fission_stats *stats, void *file) {
    FILE *f = file;
    fprintf(f, "operators: %d nodes\n", stats->op_nodes);
    fprintf(f, "primitives: %d after fission, %d after clean-up\n", stats->fissioned, stats->prims);
    fprintf(f, "\nprimitives per kind (after fission -> after clean-up):\n");
    for (int k = 0; k < KORCH_PRIM_KIND_COUNT; k++)
        fprintf(f, "  %-12s %6d -> %6d\n", korch_prim_kind_name(k), stats->fissioned_per_kind[k],
                stats->prims_per_kind[k]);
    fprintf(f, "\nprimitives per operator (nodes: after fission -> after clean-up):\n");
    for (int k = 0; k < KORCH_OP_COUNT; k++) {
        if (!stats->op_count[k]) continue;
        fprintf(f, "  %-24s %5d nodes: %6d -> %6d", korch_op_table[k]->op_type, stats->op_count[k],
                stats->fissioned_per_op[k], stats->prims_per_op[k]);
        if (stats->opaque_per_op[k]) fprintf(f, "  (%d opaque)", stats->opaque_per_op[k]);
        fprintf(f, "\n");
    }
    fprintf(f, "\nclean-up passes (live primitives before -> after):\n");
    for (int p = 0; p < stats->n_passes; p++)
        fprintf(f, "  %-2d %-24s %6d -> %6d\n", p + 1, stats->passes[p].name, stats->passes[p].before,
                stats->passes[p].after);
    int opaque = stats->prims_per_kind[KORCH_PRIM_OPAQUE];
    fprintf(f, "\nopaque primitives: %d\n", opaque);
    if (!pg) return;
    char nbuf[160];
    for (int i = 0; i < pg->n_nodes; i++) {
        const korch_pnode *n = &pg->nodes[i];
        if (n->dead || n->kind != KORCH_PRIM_OPAQUE) continue;
        const korch_node *src = &pg->source->nodes[n->u.opaque.source_node];
        fprintf(f, "  %s \"%s\": %s\n", src->op_type, korch_printable(src->name, nbuf, sizeof nbuf),
                n->u.opaque.reason ? n->u.opaque.reason : "(no reason recorded)");
    }
}
