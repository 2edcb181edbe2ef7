/* Subgraphs of control-flow nodes (If, Loop, Scan): how a subgraph reads
 * values of the graphs around it, and how its shapes are inferred.
 *
 * A subgraph is a korch_graph of its own (an attribute of its node). Values
 * it reads but does not define are its captures (is_outer_scope). Its node
 * in the enclosing graph lists them as implicit inputs, after its ONNX
 * inputs, so that topological order, liveness in the executors and fission
 * all see the dependency; capture_slots[c] says which node input carries
 * capture c. Slots are positions, not names, so the enclosing graph may
 * rename its values (inlining does) without breaking the link.
 * docs/control-flow.md describes the whole design. */
#include <stdlib.h>
#include <string.h>

#include "frontend/frontend.h"
#include "frontend/onnx_load.h"
#include "frontend/subgraph.h"
#include "ops/op.h"

korch_status korch_subgraph_find_captures(korch_graph *sub) {
    int count = 0;
    for (int v = 0; v < sub->n_values; v++) {
        korch_value *val = &sub->values[v];
        if (val->producer < 0 && !val->is_constant && !val->is_graph_input) {
            val->is_outer_scope = true;
            count++;
        }
    }
    sub->captures = malloc(((size_t)count + 1) * sizeof *sub->captures);
    sub->capture_slots = malloc(((size_t)count + 1) * sizeof *sub->capture_slots);
    if (!sub->captures || !sub->capture_slots) return korch_error(KORCH_ERR_OUT_OF_MEMORY, "out of memory");
    for (int v = 0; v < sub->n_values; v++)
        if (sub->values[v].is_outer_scope) {
            sub->capture_slots[sub->n_captures] = -1;
            sub->captures[sub->n_captures++] = v;
        }
    return KORCH_OK;
}

korch_status korch_subgraph_link_captures(korch_graph *g, int ni) {
    korch_node *n = &g->nodes[ni];
    int total = 0;
    for (int a = 0; a < n->n_attrs; a++)
        if (n->attrs[a].graph) total += n->attrs[a].graph->n_captures;
    if (!total) return KORCH_OK;
    int *inputs = realloc(n->inputs, ((size_t)n->n_inputs + (size_t)total + 1) * sizeof *inputs);
    if (!inputs) return korch_error(KORCH_ERR_OUT_OF_MEMORY, "out of memory");
    n->inputs = inputs;
    for (int a = 0; a < n->n_attrs; a++) {
        korch_graph *sub = n->attrs[a].graph;
        if (!sub) continue;
        for (int c = 0; c < sub->n_captures; c++) {
            const char *name = sub->values[sub->captures[c]].name;
            int slot = -1;
            for (int k = n->n_inputs - n->n_implicit_inputs; k < n->n_inputs && slot < 0; k++)
                if (strcmp(g->values[n->inputs[k]].name, name) == 0) slot = k;
            if (slot < 0) {
                int v = korch_graph_intern_value(g, name);
                if (v < 0) return korch_error(KORCH_ERR_OUT_OF_MEMORY, "out of memory");
                slot = n->n_inputs++;
                n->inputs[slot] = v;
                n->n_implicit_inputs++;
            }
            sub->capture_slots[c] = slot;
        }
    }
    return KORCH_OK;
}

/* Binds one value of a subgraph (a formal input or a capture) to `t`'s type;
 * a capture whose outer value is constant becomes a constant that borrows
 * the outer data, so the subgraph folds what depends only on it. */
static korch_status bind_value(korch_graph *sub, int v, const korch_tensor *t, bool borrow_constant,
                               const char *what) {
    korch_value *val = &sub->values[v];
    char vbuf[160], a[96], b[96];
    korch_printable(val->name, vbuf, sizeof vbuf);
    if (val->declared_dtype != KORCH_DTYPE_UNDEFINED && val->declared_dtype != t->dtype)
        return korch_error(KORCH_ERR_INVALID_MODEL, "%s \"%s\" is declared %s but receives %s", what, vbuf,
                           korch_dtype_name(val->declared_dtype), korch_dtype_name(t->dtype));
    if (val->has_declared_shape) {
        bool same = val->declared_shape.rank == t->shape.rank;
        for (int d = 0; same && d < t->shape.rank; d++)
            if (val->declared_shape.dims[d] >= 0 && val->declared_shape.dims[d] != t->shape.dims[d]) same = false;
        if (!same)
            return korch_error(KORCH_ERR_SHAPE, "%s \"%s\" is declared %s but receives %s", what, vbuf,
                               korch_shape_format(&val->declared_shape, a, sizeof a),
                               korch_shape_format(&t->shape, b, sizeof b));
    }
    val->dtype = t->dtype;
    val->shape = t->shape;
    val->has_shape = true;
    if (borrow_constant && t->data && !val->is_constant) {
        val->is_constant = true;
        val->constant = (korch_tensor){.dtype = t->dtype, .shape = t->shape, .data = t->data, .owns_data = false};
    }
    return KORCH_OK;
}

korch_status korch_subgraph_infer(korch_graph *sub, const korch_tensor *formal, int n_formal,
                                  korch_tensor *const *node_inputs) {
    if (n_formal != sub->n_inputs)
        return korch_error(KORCH_ERR_INVALID_MODEL, "the subgraph has %d inputs, the operator gives it %d",
                           sub->n_inputs, n_formal);
    for (int i = 0; i < n_formal; i++) KORCH_TRY(bind_value(sub, sub->inputs[i], &formal[i], true, "subgraph input"));
    for (int c = 0; c < sub->n_captures; c++) {
        int slot = sub->capture_slots[c];
        korch_value *val = &sub->values[sub->captures[c]];
        if (slot < 0) {
            if (!val->is_constant)
                return korch_error(KORCH_ERR_INTERNAL, "subgraph capture \"%s\" is not bound", val->name);
            continue;
        }
        if (!node_inputs[slot])
            return korch_error(KORCH_ERR_INTERNAL, "subgraph capture \"%s\" has no value", val->name);
        KORCH_TRY(bind_value(sub, sub->captures[c], node_inputs[slot], true, "outer-scope value"));
    }
    return korch_graph_infer_nodes(sub);
}

korch_status korch_subgraph_drop_constant_captures(korch_graph *g, int ni) {
    korch_node *n = &g->nodes[ni];
    int first = n->n_inputs - n->n_implicit_inputs;
    int *new_slot = malloc(((size_t)n->n_inputs + 1) * sizeof *new_slot);
    if (!new_slot) return korch_error(KORCH_ERR_OUT_OF_MEMORY, "out of memory");
    int w = first;
    for (int k = 0; k < n->n_inputs; k++) {
        if (k < first) {
            new_slot[k] = k;
            continue;
        }
        const korch_value *val = &g->values[n->inputs[k]];
        if (val->is_constant) {
            new_slot[k] = -1;
            continue;
        }
        new_slot[k] = w;
        n->inputs[w++] = n->inputs[k];
    }
    n->n_implicit_inputs -= n->n_inputs - w;
    n->n_inputs = w;
    for (int a = 0; a < n->n_attrs; a++) {
        korch_graph *sub = n->attrs[a].graph;
        if (!sub) continue;
        for (int c = 0; c < sub->n_captures; c++)
            if (sub->capture_slots[c] >= 0) sub->capture_slots[c] = new_slot[sub->capture_slots[c]];
    }
    free(new_slot);
    return KORCH_OK;
}

/* The first graph input that `v` depends on, or -1 (breadth-first over
 * producers; visited marks values). */
static int graph_input_behind(const korch_graph *g, int v) {
    int *queue = malloc(((size_t)g->n_values + 1) * sizeof *queue);
    char *seen = calloc((size_t)g->n_values + 1, 1);
    int found = -1, head = 0, tail = 0;
    if (!queue || !seen) goto done;
    queue[tail++] = v;
    seen[v] = 1;
    while (head < tail && found < 0) {
        int u = queue[head++];
        const korch_value *val = &g->values[u];
        if (val->is_graph_input || val->is_outer_scope) {
            found = u;
            break;
        }
        if (val->producer < 0) continue;
        const korch_node *p = &g->nodes[val->producer];
        for (int k = 0; k < p->n_inputs; k++) {
            int w = p->inputs[k];
            if (w >= 0 && !seen[w]) {
                seen[w] = 1;
                queue[tail++] = w;
            }
        }
    }
done:
    free(queue);
    free(seen);
    return found;
}

int korch_graph_report_control_flow(const korch_graph *g, FILE *f) {
    int count = 0;
    for (int i = 0; i < g->n_nodes; i++) {
        const korch_node *n = &g->nodes[i];
        char nbuf[160], vbuf[160], why[400];
        if (n->if_converted) {
            fprintf(f,
                    "korch: note: node \"%s\" (If): its condition is known only at run time; its branches are small "
                    "and cannot fail, so both are computed and a Where per output picks the result (if-conversion): "
                    "they are optimized with the rest of the graph\n",
                    korch_printable(n->name, nbuf, sizeof nbuf));
            continue;
        }
        if (n->dead || !n->def) continue;
        bool is_if = strcmp(n->op_type, "If") == 0;
        if (!is_if && strcmp(n->op_type, "Loop") != 0 && strcmp(n->op_type, "Scan") != 0) continue;
        count++;
        korch_printable(n->name, nbuf, sizeof nbuf);
        if (is_if) {
            for (int b = 0; b < 2; b++) {
                const korch_graph *br = korch_node_subgraph(n, b ? "else_branch" : "then_branch");
                if (br && br->unusable)
                    fprintf(f,
                            "korch: note: node \"%s\" (If): its %s cannot run at these input shapes, so running "
                            "it is an error (%s)\n",
                            nbuf, b ? "else_branch" : "then_branch", br->unusable);
            }
            const char *refusal = korch_graph_if_conversion_refusal(g, i, why, sizeof why);
            if (refusal) fprintf(f, "korch: note: node \"%s\" (If): not if-converted: %s\n", nbuf, refusal);
            int src = n->inputs[0] >= 0 ? graph_input_behind(g, n->inputs[0]) : -1;
            if (src >= 0)
                fprintf(f,
                        "korch: note: node \"%s\" (If): its condition depends on graph input \"%s\", which is not a "
                        "constant (not even when --input fixes its value at optimize time), so the If is not "
                        "resolved at load; it runs as one opaque kernel whose branches run in the reference "
                        "executor (not optimized). korch optimize --specialize %s=VALUE makes a plan for one "
                        "value, which refuses any other at run time\n",
                        nbuf, korch_printable(g->values[src].name, vbuf, sizeof vbuf), vbuf);
            else
                fprintf(f,
                        "korch: note: node \"%s\" (If): its condition is not known at load, so the If is not "
                        "resolved; it runs as one opaque kernel whose branches run in the reference executor "
                        "(not optimized)\n",
                        nbuf);
        } else {
            fprintf(f,
                    "korch: note: node \"%s\" (%s): runs as one opaque kernel whose body runs in the reference "
                    "executor (not optimized)\n",
                    nbuf, n->op_type);
        }
    }
    return count;
}
