/* A kernel spec's nodes as a primitive graph of their own, rebuilt through
 * the pgraph constructors (so every operand is checked again): what the
 * reference backend runs, what verification interprets on perturbed
 * inputs, and what the code generator rewrites its depthwise convolutions
 * in (a rewrite hook replaces a node by primitives of the caller's). */
#include <stdlib.h>
#include <string.h>

#include "ir/nodeset.h"

static korch_status copy_maps(const korch_prim_layout *l, korch_index_map **out) {
    korch_index_map *maps = calloc((size_t)(l->n_maps ? l->n_maps : 1), sizeof *maps);
    if (!maps) return korch_error(KORCH_ERR_OUT_OF_MEMORY, "extract: out of memory");
    memcpy(maps, l->maps, (size_t)l->n_maps * sizeof *maps);
    for (int p = 0; p < l->n_maps; p++)
        for (int k = 0; k < KORCH_MAX_RANK; k++) {
            korch_index_term *t = &maps[p].terms[k];
            if (!t->table) continue;
            int64_t *table = malloc((size_t)(t->table_size > 0 ? t->table_size : 1) * sizeof *table);
            if (!table) {
                for (int q = 0; q <= p; q++)
                    for (int j = 0; j < KORCH_MAX_RANK; j++)
                        if (q < p || j < k) free(maps[q].terms[j].table);
                free(maps);
                return korch_error(KORCH_ERR_OUT_OF_MEMORY, "extract: out of memory");
            }
            memcpy(table, t->table, (size_t)t->table_size * sizeof *table);
            t->table = table;
        }
    *out = maps;
    return KORCH_OK;
}

static bool append_int(int **items, int *n, int value) {
    int *grown = realloc(*items, ((size_t)*n + 1) * sizeof *grown);
    if (!grown) return false;
    grown[(*n)++] = value;
    *items = grown;
    return true;
}

/* Adds node `node` of the source graph to `sub`, or the caller's rewrite
 * of it; map[] translates values. */
static korch_status add_node(korch_pgraph *sub, const korch_pgraph *pg, const korch_pnode *node, int *map,
                             korch_extract_rewrite rewrite, void *user) {
    int ins[KORCH_MAX_RANK];
    for (int k = 0; k < node->n_inputs; k++) {
        ins[k] = map[node->inputs[k]];
        if (ins[k] < 0) return korch_error(KORCH_ERR_INTERNAL, "extract: kernel spec misses an input");
    }
    int y = -1;
    if (rewrite) KORCH_TRY(rewrite(user, sub, pg, node, ins, &y));
    if (y >= 0) goto check;
    switch (node->kind) {
    case KORCH_PRIM_ELEMENTWISE:
        y = korch_pgraph_elementwise(sub, node->u.ew.op, node->n_inputs, ins, node->u.ew.alpha, node->u.ew.beta,
                                     pg->values[node->outputs[0]].dtype);
        break;
    case KORCH_PRIM_REDUCE:
        y = korch_pgraph_reduce(sub, node->u.reduce.op, ins[0], node->u.reduce.axes, node->u.reduce.keepdims);
        break;
    case KORCH_PRIM_LAYOUT: {
        korch_index_map *maps = NULL;
        KORCH_TRY(copy_maps(&node->u.layout, &maps));
        y = korch_pgraph_layout(sub, node->u.layout.tag, node->n_inputs, ins, &pg->values[node->outputs[0]].shape, maps,
                                node->u.layout.pad_value);
        if (y < 0)
            for (int p = 0; p < node->u.layout.n_maps; p++)
                for (int k = 0; k < KORCH_MAX_RANK; k++) free(maps[p].terms[k].table);
        else {
            sub->nodes[sub->n_nodes - 1].u.layout.axis = node->u.layout.axis;
            memcpy(sub->nodes[sub->n_nodes - 1].u.layout.perm, node->u.layout.perm, sizeof node->u.layout.perm);
        }
        free(maps);
        break;
    }
    case KORCH_PRIM_LINEAR: y = korch_pgraph_linear(sub, &node->u.linear, ins[0], ins[1]); break;
    case KORCH_PRIM_OPAQUE: {
        int ni = korch_pgraph_opaque(sub, node->u.opaque.source_node, node->n_inputs, ins);
        if (ni < 0) return KORCH_ERR_INTERNAL;
        sub->nodes[ni].u.opaque.from_source = node->u.opaque.from_source;
        for (int k = 0; k < node->n_outputs; k++)
            if (node->outputs[k] >= 0) map[node->outputs[k]] = sub->nodes[ni].outputs[k];
        return KORCH_OK;
    }
    default: return korch_error(KORCH_ERR_INTERNAL, "extract: unknown primitive kind %d", node->kind);
    }
    if (y < 0) return korch_error_prefix(KORCH_ERR_INTERNAL, "extract: rebuilding a primitive");
check:;
    const korch_pvalue *want = &pg->values[node->outputs[0]], *got = &sub->values[y];
    if (want->dtype != got->dtype || !korch_shape_equal(&want->shape, &got->shape))
        return korch_error(KORCH_ERR_INTERNAL, "extract: a rebuilt primitive changed its output type");
    map[node->outputs[0]] = y;
    return KORCH_OK;
}

korch_status korch_pgraph_extract(const korch_kernel_spec *spec, korch_extract_rewrite rewrite, void *user,
                                  korch_pgraph **out) {
    const korch_pgraph *pg = spec->pg;
    *out = NULL;
    korch_pgraph *sub = NULL;
    KORCH_TRY(korch_pgraph_create(pg->source, &sub));
    int *map = malloc(((size_t)pg->n_values + 1) * sizeof *map);
    korch_status st = map ? KORCH_OK : korch_error(KORCH_ERR_OUT_OF_MEMORY, "extract: out of memory");
    for (int v = 0; map && v < pg->n_values; v++) map[v] = -1;
    for (int i = 0; i < spec->n_inputs && st == KORCH_OK; i++) {
        const korch_pvalue *pv = &pg->values[spec->inputs[i]];
        int v = korch_pgraph_add_value(sub, pv->dtype, &pv->shape);
        if (v < 0) {
            st = KORCH_ERR_OUT_OF_MEMORY;
            break;
        }
        if (pv->is_constant) {
            /* borrowed view: the sub-graph never frees it */
            sub->values[v].is_constant = true;
            sub->values[v].constant = pv->constant;
            sub->values[v].constant.owns_data = false;
        } else {
            sub->values[v].graph_input = sub->n_inputs;
            if (!append_int(&sub->inputs, &sub->n_inputs, v))
                st = korch_error(KORCH_ERR_OUT_OF_MEMORY, "out of memory");
        }
        map[spec->inputs[i]] = v;
    }
    for (int i = 0; i < spec->n_nodes && st == KORCH_OK; i++) st = add_node(sub, pg, &pg->nodes[spec->nodes[i]], map, rewrite, user);
    for (int i = 0; i < spec->n_outputs && st == KORCH_OK; i++) {
        int v = map[spec->outputs[i]];
        if (v < 0) {
            st = korch_error(KORCH_ERR_INTERNAL, "extract: output value %d is not produced by the kernel",
                             spec->outputs[i]);
            break;
        }
        sub->values[v].graph_output = sub->n_outputs;
        if (!append_int(&sub->outputs, &sub->n_outputs, v)) st = korch_error(KORCH_ERR_OUT_OF_MEMORY, "out of memory");
    }
    free(map);
    if (st != KORCH_OK) {
        korch_pgraph_free(sub);
        return st;
    }
    *out = sub;
    return KORCH_OK;
}
