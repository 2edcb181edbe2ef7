#include <stdlib.h>
#include <string.h>

#include "frontend/frontend.h"
#include "ops/op.h"

static bool is_default_domain(const char *d) { return !d || !*d || strcmp(d, "ai.onnx") == 0; }

static korch_status check_opsets(const korch_graph *g) {
    int64_t v = korch_graph_opset(g, "");
    if (v < 0) {
        /* a model that only uses custom domains; nodes will be refused below */
        return KORCH_OK;
    }
    if (v < KORCH_OPSET_MIN || v > KORCH_OPSET_MAX)
        return korch_error(KORCH_ERR_UNSUPPORTED, "the model imports ONNX opset %lld; korch supports opsets %d to %d",
                           (long long)v, KORCH_OPSET_MIN, KORCH_OPSET_MAX);
    return KORCH_OK;
}

/* Attribute names whose type is the same in every default-domain operator of
 * opsets 1-18 (checked against the onnx.defs schemas of onnx 1.12; "value",
 * "to", "seed" and "p" differ between operators and are left to the ops).
 * The attribute getters fall back to the default on a type mismatch, so a
 * mistyped attribute would otherwise be silently ignored. */
static const struct {
    const char *name;
    korch_attr_type type;
} attr_types[] = {
    {"alpha", KORCH_ATTR_FLOAT}, {"allowzero", KORCH_ATTR_INT}, {"auto_pad", KORCH_ATTR_STRING},
    {"axes", KORCH_ATTR_INTS}, {"axis", KORCH_ATTR_INT}, {"batch_dims", KORCH_ATTR_INT},
    {"beta", KORCH_ATTR_FLOAT}, {"bias", KORCH_ATTR_FLOAT}, {"blocksize", KORCH_ATTR_INT},
    {"broadcast", KORCH_ATTR_INT}, {"ceil_mode", KORCH_ATTR_INT}, {"coordinate_transformation_mode", KORCH_ATTR_STRING},
    {"count_include_pad", KORCH_ATTR_INT}, {"cubic_coeff_a", KORCH_ATTR_FLOAT}, {"dilations", KORCH_ATTR_INTS},
    {"dtype", KORCH_ATTR_INT}, {"end", KORCH_ATTR_INT}, {"ends", KORCH_ATTR_INTS},
    {"epsilon", KORCH_ATTR_FLOAT}, {"exclude_outside", KORCH_ATTR_INT}, {"exclusive", KORCH_ATTR_INT},
    {"extrapolation_value", KORCH_ATTR_FLOAT}, {"fmod", KORCH_ATTR_INT}, {"gamma", KORCH_ATTR_FLOAT},
    {"group", KORCH_ATTR_INT}, {"k", KORCH_ATTR_INT}, {"keepdims", KORCH_ATTR_INT},
    {"kernel_shape", KORCH_ATTR_INTS}, {"lambd", KORCH_ATTR_FLOAT}, {"largest", KORCH_ATTR_INT},
    {"max", KORCH_ATTR_FLOAT}, {"min", KORCH_ATTR_FLOAT}, {"mode", KORCH_ATTR_STRING},
    {"momentum", KORCH_ATTR_FLOAT}, {"nearest_mode", KORCH_ATTR_STRING}, {"noop_with_empty_axes", KORCH_ATTR_INT},
    {"output_padding", KORCH_ATTR_INTS}, {"output_shape", KORCH_ATTR_INTS}, {"pads", KORCH_ATTR_INTS},
    {"perm", KORCH_ATTR_INTS}, {"reduction", KORCH_ATTR_STRING}, {"reverse", KORCH_ATTR_INT},
    {"scale", KORCH_ATTR_FLOAT}, {"scales", KORCH_ATTR_FLOATS}, {"select_last_index", KORCH_ATTR_INT},
    {"shape", KORCH_ATTR_INTS}, {"size", KORCH_ATTR_INT}, {"sorted", KORCH_ATTR_INT},
    {"spatial", KORCH_ATTR_INT}, {"split", KORCH_ATTR_INTS}, {"start", KORCH_ATTR_INT},
    {"starts", KORCH_ATTR_INTS}, {"stash_type", KORCH_ATTR_INT}, {"storage_order", KORCH_ATTR_INT},
    {"strides", KORCH_ATTR_INTS}, {"training_mode", KORCH_ATTR_INT}, {"transA", KORCH_ATTR_INT},
    {"transB", KORCH_ATTR_INT}, {"upper", KORCH_ATTR_INT}, {"value_float", KORCH_ATTR_FLOAT},
    {"value_floats", KORCH_ATTR_FLOATS}, {"value_int", KORCH_ATTR_INT}, {"value_ints", KORCH_ATTR_INTS},
    {"value_string", KORCH_ATTR_STRING}, {"value_strings", KORCH_ATTR_STRINGS},
};

static const char *attr_type_name(korch_attr_type t) {
    static const char *const names[] = {"UNDEFINED", "FLOAT", "INT", "STRING", "TENSOR",
                                        "GRAPH", "FLOATS", "INTS", "STRINGS"};
    return (unsigned)t < sizeof names / sizeof names[0] ? names[t] : "an unsupported kind";
}

static korch_status check_attr_types(const korch_node *n) {
    char nbuf[160], obuf[96], abuf[96];
    for (int a = 0; a < n->n_attrs; a++)
        for (size_t k = 0; k < sizeof attr_types / sizeof attr_types[0]; k++)
            if (strcmp(n->attrs[a].name, attr_types[k].name) == 0 && n->attrs[a].type != attr_types[k].type)
                return korch_error(KORCH_ERR_INVALID_MODEL, "node \"%s\" (%s): attribute \"%s\" has type %s, expected %s",
                                   korch_printable(n->name, nbuf, sizeof nbuf),
                                   korch_printable(n->op_type, obuf, sizeof obuf),
                                   korch_printable(n->attrs[a].name, abuf, sizeof abuf),
                                   attr_type_name(n->attrs[a].type), attr_type_name(attr_types[k].type));
    return KORCH_OK;
}

static korch_status resolve_node(korch_graph *g, korch_node *n) {
    char nbuf[160], dbuf[96], obuf[96];
    korch_printable(n->name, nbuf, sizeof nbuf);
    korch_printable(n->op_type, obuf, sizeof obuf);
    if (!is_default_domain(n->domain))
        return korch_error(KORCH_ERR_UNSUPPORTED, "unsupported operator %s from custom domain \"%s\" (node \"%s\")", obuf,
                           korch_printable(n->domain, dbuf, sizeof dbuf), nbuf);
    if (n->opset < 0)
        return korch_error(KORCH_ERR_INVALID_MODEL, "node \"%s\" (%s): the model imports no opset for its domain", nbuf,
                           obuf);
    const korch_op_def *def = korch_op_find(n->op_type);
    if (!def)
        return korch_error(KORCH_ERR_UNSUPPORTED, "unsupported operator %s (node \"%s\", opset %d)", obuf, nbuf,
                           n->opset);
    if (n->opset < def->opset_min || n->opset > def->opset_max)
        return korch_error(KORCH_ERR_UNSUPPORTED, "unsupported operator %s at opset %d (node \"%s\"; korch supports %s at opsets %d-%d)",
                           obuf, n->opset, nbuf, obuf, def->opset_min, def->opset_max);
    int present = korch_node_input_count(n);
    int onnx_inputs = n->n_inputs - n->n_implicit_inputs; /* subgraph captures are not ONNX inputs */
    if (present < def->min_inputs || onnx_inputs > def->max_inputs)
        return korch_error(KORCH_ERR_INVALID_MODEL, "node \"%s\" (%s): has %d inputs, expected %d to %d", nbuf, obuf,
                           onnx_inputs, def->min_inputs, def->max_inputs);
    for (int i = 0; i < def->min_inputs; i++)
        if (n->inputs[i] < 0)
            return korch_error(KORCH_ERR_INVALID_MODEL, "node \"%s\" (%s): required input %d is empty", nbuf, obuf, i);
    if (n->n_outputs < def->min_outputs || n->n_outputs > def->max_outputs)
        return korch_error(KORCH_ERR_INVALID_MODEL, "node \"%s\" (%s): has %d outputs, expected %d to %d", nbuf, obuf,
                           n->n_outputs, def->min_outputs, def->max_outputs);
    for (int i = 0; i < def->min_outputs; i++)
        if (n->outputs[i] < 0)
            return korch_error(KORCH_ERR_INVALID_MODEL, "node \"%s\" (%s): required output %d is empty", nbuf, obuf, i);
    n->def = def;
    (void)g;
    return KORCH_OK;
}

/* Each subgraph is validated as a graph of its own (recursion bounded by
 * KORCH_MAX_SUBGRAPH_DEPTH at load). */
static korch_status validate_subgraphs(const korch_node *n) {
    char nbuf[160], abuf[96];
    for (int a = 0; a < n->n_attrs; a++) {
        if (!n->attrs[a].graph) continue;
        korch_status st = korch_graph_validate(n->attrs[a].graph);
        if (st != KORCH_OK)
            return korch_error_prefix(st, "node \"%s\" (%s) attribute \"%s\"", korch_printable(n->name, nbuf, sizeof nbuf),
                                      n->op_type, korch_printable(n->attrs[a].name, abuf, sizeof abuf));
    }
    return KORCH_OK;
}

korch_status korch_graph_validate(korch_graph *g) {
    char nbuf[160], vbuf[160];
    KORCH_TRY(check_opsets(g));
    for (int i = 0; i < g->n_nodes; i++) {
        korch_node *n = &g->nodes[i];
        if (n->dead) continue;
        for (int k = 0; k < n->n_inputs; k++) {
            int v = n->inputs[k];
            if (v < 0) continue;
            const korch_value *val = &g->values[v];
            if (val->producer < 0 && !val->is_constant && !val->is_graph_input && !val->is_outer_scope)
                return korch_error(KORCH_ERR_INVALID_MODEL,
                                   "node \"%s\" (%s) reads tensor \"%s\", which is neither a graph input, an "
                                   "initializer nor any node's output",
                                   korch_printable(n->name, nbuf, sizeof nbuf), n->op_type,
                                   korch_printable(val->name, vbuf, sizeof vbuf));
        }
    }
    for (int i = 0; i < g->n_outputs; i++) {
        const korch_value *val = &g->values[g->outputs[i]];
        if (val->producer < 0 && !val->is_constant && !val->is_graph_input && !val->is_outer_scope)
            return korch_error(KORCH_ERR_INVALID_MODEL, "graph output \"%s\" is not produced by any node",
                               korch_printable(val->name, vbuf, sizeof vbuf));
    }
    int *order = malloc(((size_t)g->n_nodes + 1) * sizeof *order);
    if (!order) return korch_error(KORCH_ERR_OUT_OF_MEMORY, "out of memory");
    int count = 0;
    korch_status st = korch_graph_toposort(g, order, &count);
    free(order);
    KORCH_TRY(st);
    /* Operator support is checked in model order so that the first unsupported
     * node a user sees is the first one in their file. */
    for (int i = 0; i < g->n_nodes; i++)
        if (!g->nodes[i].dead) {
            KORCH_TRY(korch_graph_lower_contrib(g, i)); /* contrib.c: ONNX Runtime's, as standard ONNX */
            KORCH_TRY(resolve_node(g, &g->nodes[i]));
            KORCH_TRY(check_attr_types(&g->nodes[i]));
            KORCH_TRY(validate_subgraphs(&g->nodes[i]));
        }
    return KORCH_OK;
}
