#include "ops/reference.h"

#include <stdlib.h>
#include <string.h>

#include "ops/op.h"

static korch_status check_input(const korch_graph *g, int i, const korch_tensor *t) {
    const korch_value *val = &g->values[g->inputs[i]];
    char vbuf[160], a[96], b[96];
    if (t->dtype != val->dtype || !korch_shape_equal(&t->shape, &val->shape))
        return korch_error(KORCH_ERR_SHAPE, "input \"%s\": got %s %s, the prepared model expects %s %s",
                           korch_printable(val->name, vbuf, sizeof vbuf), korch_dtype_name(t->dtype),
                           korch_shape_format(&t->shape, a, sizeof a), korch_dtype_name(val->dtype),
                           korch_shape_format(&val->shape, b, sizeof b));
    if (!t->data && korch_shape_numel(&t->shape) > 0)
        return korch_error(KORCH_ERR_INVALID_ARGUMENT, "input \"%s\" has no data",
                           korch_printable(val->name, vbuf, sizeof vbuf));
    return KORCH_OK;
}

/* into != NULL: graph outputs made by nodes are written straight into the
 * caller's tensors into[i]; outputs that are inputs or constants are copied
 * there at the end. into == NULL: outputs[i] receive owned copies. */
static korch_status run(const korch_graph *g, const korch_tensor *inputs, korch_tensor *const *captures,
                        korch_tensor *outputs, korch_tensor *into, korch_value_observer observer, void *user,
                        uint64_t jitter_seed) {
    korch_status st = KORCH_OK;
    int *order = malloc(((size_t)g->n_nodes + 1) * sizeof *order);
    int *uses = calloc((size_t)g->n_values + 1, sizeof *uses);
    korch_tensor *vals = calloc((size_t)g->n_values + 1, sizeof *vals);
    int *out_of = malloc(((size_t)g->n_values + 1) * sizeof *out_of); /* value -> graph output index */
    if (!order || !uses || !vals || !out_of) {
        st = korch_error(KORCH_ERR_OUT_OF_MEMORY, "reference executor: out of memory");
        goto done;
    }
    for (int i = 0; outputs && i < g->n_outputs; i++) outputs[i] = (korch_tensor){0};
    for (int v = 0; v < g->n_values; v++) out_of[v] = -1;
    for (int i = 0; i < g->n_outputs; i++) out_of[g->outputs[i]] = i;
    int count = 0;
    st = korch_graph_toposort(g, order, &count);
    if (st != KORCH_OK) goto done;

    for (int v = 0; v < g->n_values; v++) {
        const korch_value *val = &g->values[v];
        if (val->is_constant) vals[v] = (korch_tensor){.dtype = val->constant.dtype, .shape = val->constant.shape,
                                                       .data = val->constant.data};
    }
    for (int i = 0; i < g->n_inputs; i++) {
        st = check_input(g, i, &inputs[i]);
        if (st != KORCH_OK) goto done;
        vals[g->inputs[i]] = (korch_tensor){.dtype = inputs[i].dtype, .shape = inputs[i].shape, .data = inputs[i].data};
    }
    /* a subgraph's outer-scope values, borrowed like inputs (those that
     * were constant at load are constants of the subgraph already) */
    for (int c = 0; c < g->n_captures; c++) {
        int v = g->captures[c];
        if (g->values[v].is_constant) continue;
        const korch_tensor *t = captures ? captures[c] : NULL;
        if (!t || t->dtype != g->values[v].dtype || !korch_shape_equal(&t->shape, &g->values[v].shape)) {
            st = korch_error(KORCH_ERR_INTERNAL, "subgraph value \"%s\" from the enclosing graph is missing or mistyped",
                             g->values[v].name);
            goto done;
        }
        vals[v] = (korch_tensor){.dtype = t->dtype, .shape = t->shape, .data = t->data};
    }
    for (int i = 0; i < count; i++) {
        const korch_node *n = &g->nodes[order[i]];
        for (int k = 0; k < n->n_inputs; k++)
            if (n->inputs[k] >= 0) uses[n->inputs[k]]++;
    }
    for (int i = 0; i < g->n_outputs; i++) uses[g->outputs[i]]++; /* never freed early */

    for (int i = 0; i < count && st == KORCH_OK; i++) {
        const korch_node *n = &g->nodes[order[i]];
        korch_tensor *ins[64] = {0}, *outs[64] = {0};
        if (n->n_inputs > 64 || n->n_outputs > 64) {
            st = korch_error(KORCH_ERR_UNSUPPORTED, "node \"%s\" has too many inputs", n->name);
            break;
        }
        for (int k = 0; k < n->n_inputs; k++)
            if (n->inputs[k] >= 0) ins[k] = &vals[n->inputs[k]];
        for (int k = 0; k < n->n_outputs && st == KORCH_OK; k++) {
            int v = n->outputs[k];
            if (v < 0) continue;
            int out_index = into ? out_of[v] : -1;
            if (out_index >= 0) /* borrowed: never freed below */
                vals[v] = (korch_tensor){.dtype = g->values[v].dtype, .shape = g->values[v].shape,
                                         .data = into[out_index].data};
            else st = korch_tensor_alloc(&vals[v], g->values[v].dtype, &g->values[v].shape);
            outs[k] = &vals[v];
        }
        if (st != KORCH_OK) break;
        /* korch_reference_run_jittered: a quantizer's computed x moved first */
        korch_tensor moved = {0};
        if (jitter_seed && !strcmp(n->op_type, "QuantizeLinear") && ins[0] && ins[0]->dtype == KORCH_DTYPE_FLOAT32 &&
            !g->values[n->inputs[0]].is_constant) {
            st = korch_tensor_clone(ins[0], &moved);
            if (st != KORCH_OK) break;
            korch_tensor_jitter(&moved, jitter_seed ^ ((uint64_t)n->inputs[0] << 32));
            ins[0] = &moved;
        }
        korch_op_ctx ctx = {.graph = g, .node = n, .n_inputs = n->n_inputs, .inputs = ins,
                            .n_outputs = n->n_outputs, .outputs = outs};
        st = n->def->run(&ctx);
        korch_tensor_free(&moved);
        if (st != KORCH_OK) break;
        if (observer)
            for (int k = 0; k < n->n_outputs; k++)
                if (n->outputs[k] >= 0) observer(user, g, n->outputs[k], &vals[n->outputs[k]]);
        for (int k = 0; k < n->n_inputs; k++) {
            int v = n->inputs[k];
            if (v >= 0 && --uses[v] == 0) korch_tensor_free(&vals[v]);
        }
        /* outputs nobody reads (optional extras like Dropout's mask) */
        for (int k = 0; k < n->n_outputs; k++) {
            int v = n->outputs[k];
            if (v >= 0 && uses[v] == 0) korch_tensor_free(&vals[v]);
        }
    }
    for (int i = 0; i < g->n_outputs && st == KORCH_OK; i++) {
        int v = g->outputs[i];
        /* The same value may be listed once only (the loader checks), but it can
         * be a constant or an input: always hand back an owned copy. */
        if (!into) st = korch_tensor_clone(&vals[v], &outputs[i]);
        else if (vals[v].data != into[i].data) memcpy(into[i].data, vals[v].data, korch_tensor_bytes(&into[i]));
    }
    if (st != KORCH_OK && outputs)
        for (int i = 0; i < g->n_outputs; i++) korch_tensor_free(&outputs[i]);
done:
    if (vals)
        for (int v = 0; v < g->n_values; v++) korch_tensor_free(&vals[v]);
    free(vals);
    free(uses);
    free(order);
    free(out_of);
    return st;
}

korch_status korch_reference_run_observed(const korch_graph *g, const korch_tensor *inputs, korch_tensor *outputs,
                                          korch_value_observer observer, void *user) {
    return run(g, inputs, NULL, outputs, NULL, observer, user, 0);
}

korch_status korch_reference_run(const korch_graph *g, const korch_tensor *inputs, korch_tensor *outputs) {
    return run(g, inputs, NULL, outputs, NULL, NULL, NULL, 0);
}

korch_status korch_reference_run_into(const korch_graph *g, const korch_tensor *inputs, korch_tensor *outputs) {
    char vbuf[160], a[96], b[96];
    for (int i = 0; i < g->n_outputs; i++) {
        const korch_value *val = &g->values[g->outputs[i]];
        if (outputs[i].dtype != val->dtype || !korch_shape_equal(&outputs[i].shape, &val->shape) ||
            (!outputs[i].data && korch_shape_numel(&val->shape) > 0))
            return korch_error(KORCH_ERR_SHAPE, "output \"%s\": storage is %s %s, the prepared model makes %s %s",
                               korch_printable(val->name, vbuf, sizeof vbuf), korch_dtype_name(outputs[i].dtype),
                               korch_shape_format(&outputs[i].shape, a, sizeof a), korch_dtype_name(val->dtype),
                               korch_shape_format(&val->shape, b, sizeof b));
    }
    return run(g, inputs, NULL, NULL, outputs, NULL, NULL, 0);
}

korch_status korch_reference_run_subgraph(const korch_graph *g, const korch_tensor *inputs,
                                          korch_tensor *const *captures, korch_tensor *outputs) {
    return run(g, inputs, captures, NULL, outputs, NULL, NULL, 0);
}

korch_status korch_reference_run_jittered(const korch_graph *g, const korch_tensor *inputs, korch_tensor *outputs,
                                          uint64_t seed) {
    return run(g, inputs, NULL, outputs, NULL, NULL, NULL, seed | 1);
}
