#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "frontend/frontend.h"
#include "frontend/onnx_load.h"
#include "frontend/subgraph.h"
#include "ops/op.h"

korch_status korch_input_shapes_parse(char *text, korch_input_shape *out, int cap, int *count) {
    int n = 0;
    char *save = NULL;
    for (char *item = strtok_r(text, ";", &save); item; item = strtok_r(NULL, ";", &save)) {
        char *eq = strrchr(item, '=');
        if (!eq || eq == item)
            return korch_error(KORCH_ERR_INVALID_ARGUMENT, "bad input shape \"%s\": expected NAME=DIMS, e.g. x=1x3x224x224",
                               item);
        *eq = '\0';
        if (n >= cap) return korch_error(KORCH_ERR_INVALID_ARGUMENT, "too many input shapes (at most %d)", cap);
        if (!korch_shape_parse(eq + 1, &out[n].shape))
            return korch_error(KORCH_ERR_INVALID_ARGUMENT, "bad dimensions \"%s\" for input \"%s\": expected e.g. 1x3x224x224",
                               eq + 1, item);
        out[n].name = item;
        n++;
    }
    *count = n;
    return KORCH_OK;
}

korch_status korch_graph_infer_bind(korch_graph *g, const korch_input_shape *ov, int n_ov) {
    char vbuf[160], sbuf[160];
    for (int k = 0; k < n_ov; k++) {
        int v = korch_graph_find_value(g, ov[k].name);
        if (v < 0 || !g->values[v].is_graph_input)
            return korch_error(KORCH_ERR_INVALID_ARGUMENT, "--input-shape names \"%s\", which is not a graph input",
                               korch_printable(ov[k].name, vbuf, sizeof vbuf));
    }
    for (int i = 0; i < g->n_inputs; i++) {
        korch_value *val = &g->values[g->inputs[i]];
        korch_printable(val->name, vbuf, sizeof vbuf);
        if (val->declared_dtype == KORCH_DTYPE_UNDEFINED)
            return korch_error(KORCH_ERR_INVALID_MODEL, "graph input \"%s\" has no element type", vbuf);
        val->dtype = val->declared_dtype;
        if (korch_dtype_size(val->dtype) == 0 || val->dtype == KORCH_DTYPE_STRING)
            return korch_error(KORCH_ERR_UNSUPPORTED, "graph input \"%s\" has unsupported dtype %s", vbuf,
                               korch_dtype_name(val->dtype));
        const korch_input_shape *o = NULL;
        for (int k = 0; k < n_ov; k++)
            if (strcmp(ov[k].name, val->name) == 0) o = &ov[k];
        if (o) {
            if (val->has_declared_shape && val->declared_shape.rank != o->shape.rank)
                return korch_error(KORCH_ERR_SHAPE, "--input-shape %s=%s has rank %d, the model declares rank %d", vbuf,
                                   korch_shape_format(&o->shape, sbuf, sizeof sbuf), o->shape.rank,
                                   val->declared_shape.rank);
            if (val->has_declared_shape)
                for (int d = 0; d < o->shape.rank; d++)
                    if (val->declared_shape.dims[d] >= 0 && val->declared_shape.dims[d] != o->shape.dims[d])
                        return korch_error(KORCH_ERR_SHAPE,
                                           "--input-shape %s=%s: dimension %d is fixed to %lld by the model", vbuf,
                                           korch_shape_format(&o->shape, sbuf, sizeof sbuf), d,
                                           (long long)val->declared_shape.dims[d]);
            val->shape = o->shape;
        } else {
            if (!val->has_declared_shape)
                return korch_error(KORCH_ERR_SHAPE, "graph input \"%s\" has no shape; give one with --input-shape %s=...",
                                   vbuf, vbuf);
            for (int d = 0; d < val->declared_shape.rank; d++)
                if (val->declared_shape.dims[d] < 0) {
                    char pbuf[96];
                    if (!val->dim_params[d] || !val->dim_params[d][0])
                        return korch_error(KORCH_ERR_SHAPE,
                                           "graph input \"%s\" has unknown dimension %d (the model writes it as "
                                           "dim_value -1, an empty dim_param or no value); fix it with "
                                           "--input-shape %s=...",
                                           vbuf, d, vbuf);
                    return korch_error(KORCH_ERR_SHAPE,
                                       "graph input \"%s\" has symbolic dimension %d (\"%s\"); fix it with "
                                       "--input-shape %s=...",
                                       vbuf, d,
                                       korch_printable(val->dim_params[d] ? val->dim_params[d] : "?", pbuf, sizeof pbuf),
                                       vbuf);
                }
            val->shape = val->declared_shape;
        }
        if (korch_shape_numel(&val->shape) < 0)
            return korch_error(KORCH_ERR_SHAPE, "graph input \"%s\" is too large", vbuf);
        val->has_shape = true;
    }
    return KORCH_OK;
}

/* Checks an inferred output and records it on its value. */
static korch_status accept_output(korch_graph *g, const korch_node *n, int k, korch_tensor *t) {
    char nbuf[160], vbuf[160], sbuf[160];
    korch_value *val = &g->values[n->outputs[k]];
    korch_printable(n->name, nbuf, sizeof nbuf);
    korch_printable(val->name, vbuf, sizeof vbuf);
    if (t->dtype == KORCH_DTYPE_UNDEFINED)
        return korch_error(KORCH_ERR_INTERNAL, "node \"%s\" (%s): shape inference left output \"%s\" untyped", nbuf,
                           n->op_type, vbuf);
    if (t->shape.rank < 0 || t->shape.rank > KORCH_MAX_RANK)
        return korch_error(KORCH_ERR_UNSUPPORTED, "node \"%s\" (%s): output \"%s\" has rank %d", nbuf, n->op_type, vbuf,
                           t->shape.rank);
    if (korch_shape_numel(&t->shape) < 0)
        return korch_error(KORCH_ERR_SHAPE, "node \"%s\" (%s): output \"%s\" has a negative or absurd shape %s", nbuf,
                           n->op_type, vbuf, korch_shape_format(&t->shape, sbuf, sizeof sbuf));
    if (val->declared_dtype != KORCH_DTYPE_UNDEFINED && val->declared_dtype != t->dtype)
        return korch_error(KORCH_ERR_INVALID_MODEL, "node \"%s\" (%s): output \"%s\" is %s, but the model declares %s",
                           nbuf, n->op_type, vbuf, korch_dtype_name(t->dtype), korch_dtype_name(val->declared_dtype));
    val->dtype = t->dtype;
    val->shape = t->shape;
    val->has_shape = true;
    return KORCH_OK;
}

static korch_status infer_node(korch_graph *g, int ni, size_t *fold_budget) {
    korch_node *n = &g->nodes[ni];
    korch_tensor in_store[64], out_store[64];
    korch_tensor *ins[64] = {0}, *outs[64] = {0};
    char nbuf[160];
    if (n->n_inputs > 64 || n->n_outputs > 64) /* as the reference executor */
        return korch_error(KORCH_ERR_UNSUPPORTED, "node \"%s\" (%s) has too many inputs or outputs",
                           korch_printable(n->name, nbuf, sizeof nbuf), n->op_type);
    bool all_constant = true;
    for (int k = 0; k < n->n_inputs; k++) {
        int v = n->inputs[k];
        if (v < 0) continue;
        korch_value *val = &g->values[v];
        if (!val->has_shape)
            return korch_error(KORCH_ERR_INTERNAL, "node \"%s\" (%s): input %d has no shape",
                               korch_printable(n->name, nbuf, sizeof nbuf), n->op_type, k);
        in_store[k] = (korch_tensor){.dtype = val->dtype, .shape = val->shape,
                                     .data = val->is_constant ? val->constant.data : NULL};
        ins[k] = &in_store[k];
        if (!val->is_constant) all_constant = false;
    }
    for (int k = 0; k < n->n_outputs; k++) {
        if (n->outputs[k] < 0) continue;
        out_store[k] = (korch_tensor){0};
        outs[k] = &out_store[k];
    }
    korch_op_ctx ctx = {.graph = g, .node = n, .n_inputs = n->n_inputs, .inputs = ins,
                        .n_outputs = n->n_outputs, .outputs = outs, .infer_subgraph = korch_subgraph_infer};
    korch_status st = n->def->infer(&ctx);
    for (int k = 0; k < n->n_outputs && st == KORCH_OK; k++)
        if (outs[k]) st = accept_output(g, n, k, outs[k]);

    /* Fold: a node whose inputs are all constant is run now, once. Outputs
     * that inference already computed (Shape) are constants too. Outputs
     * larger than KORCH_FOLD_MAX_BYTES, or beyond what is left of the
     * graph's KORCH_FOLD_TOTAL_BYTES, stay unfolded: the node then runs with
     * the model, and hostile shapes cannot make inference allocate. */
    bool outputs_known = true;
    size_t fold_bytes = 0;
    for (int k = 0; k < n->n_outputs; k++)
        if (outs[k] && !outs[k]->data) {
            outputs_known = false;
            if (st == KORCH_OK) fold_bytes += korch_tensor_bytes(outs[k]);
        }
    if (st == KORCH_OK && all_constant && !outputs_known && fold_bytes <= KORCH_FOLD_MAX_BYTES &&
        fold_bytes <= *fold_budget) {
        *fold_budget -= fold_bytes;
        for (int k = 0; k < n->n_outputs && st == KORCH_OK; k++) {
            if (!outs[k]) continue;
            korch_tensor_free(outs[k]);
            st = korch_tensor_alloc(outs[k], outs[k]->dtype, &outs[k]->shape);
        }
        if (st == KORCH_OK) st = n->def->run(&ctx);
        outputs_known = st == KORCH_OK;
    }
    if (st == KORCH_OK && outputs_known) {
        for (int k = 0; k < n->n_outputs; k++) {
            if (!outs[k]) continue;
            korch_value *val = &g->values[n->outputs[k]];
            val->constant = *outs[k];
            outs[k]->owns_data = false; /* ownership moved to the value */
            val->is_constant = true;
            val->producer = -1;
        }
        n->dead = true;
    }
    for (int k = 0; k < n->n_outputs; k++)
        if (outs[k]) korch_tensor_free(outs[k]);
    return st;
}

/* An If whose condition is a constant by now is replaced by its branch
 * (inline_if.c); the branch's nodes are appended, so the order is taken
 * again and inference goes on with the nodes not yet inferred. */
static int constant_if_condition(const korch_graph *g, const korch_node *n) {
    if (strcmp(n->op_type, "If") != 0 || n->n_inputs < 1 || n->inputs[0] < 0) return -1;
    const korch_value *c = &g->values[n->inputs[0]];
    if (!c->is_constant || c->constant.dtype != KORCH_DTYPE_BOOL || korch_shape_numel(&c->constant.shape) != 1)
        return -1;
    return ((const uint8_t *)c->constant.data)[0] != 0;
}

korch_status korch_graph_infer_nodes(korch_graph *g) {
    g->infer_subgraph = korch_subgraph_infer; /* for control flow that infers a subgraph again when it runs */
    size_t fold_budget = KORCH_FOLD_TOTAL_BYTES;
    char *done = NULL;
    int *order = NULL;
    int done_cap = 0;
    korch_status st = KORCH_OK;
    for (bool again = true; again && st == KORCH_OK;) {
        again = false;
        free(order);
        order = malloc(((size_t)g->n_nodes + 1) * sizeof *order);
        if (g->n_nodes > done_cap) {
            char *grown = realloc(done, (size_t)g->n_nodes + 1);
            if (grown) memset(grown + done_cap, 0, (size_t)(g->n_nodes - done_cap) + 1);
            if (grown) done = grown, done_cap = g->n_nodes;
            else st = korch_error(KORCH_ERR_OUT_OF_MEMORY, "out of memory");
        }
        if (!order) st = korch_error(KORCH_ERR_OUT_OF_MEMORY, "out of memory");
        int count = 0;
        if (st == KORCH_OK) st = korch_graph_toposort(g, order, &count);
        for (int i = 0; i < count && st == KORCH_OK && !again; i++) {
            int ni = order[i];
            if (done[ni]) continue;
            done[ni] = 1;
            int branch = constant_if_condition(g, &g->nodes[ni]);
            if (branch >= 0) {
                st = korch_graph_inline_if(g, ni, branch == 1);
                again = true;
                continue;
            }
            bool unrolled = false;
            st = korch_graph_unroll_loop(g, ni, &unrolled);
            if (st != KORCH_OK) break;
            if (unrolled) {
                again = true;
                continue;
            }
            st = infer_node(g, ni, &fold_budget);
            if (st == KORCH_OK && !g->nodes[ni].dead && g->nodes[ni].n_implicit_inputs)
                st = korch_subgraph_drop_constant_captures(g, ni);
            bool converted = false; /* a run-time If whose branches are small and cannot fail */
            if (st == KORCH_OK && !g->keep_run_time_ifs) st = korch_graph_if_convert(g, ni, &converted);
            if (converted) again = true;
        }
    }
    free(order);
    free(done);
    return st;
}

korch_status korch_graph_infer(korch_graph *g, const korch_input_shape *overrides, int n_overrides) {
    KORCH_TRY(korch_graph_widen_half(g));
    KORCH_TRY(korch_graph_infer_bind(g, overrides, n_overrides));
    return korch_graph_infer_nodes(g);
}

static korch_status load(const char *path, const korch_input_shape *overrides, int n_overrides, bool keep_ifs,
                         korch_graph **out) {
    korch_graph *g = NULL;
    KORCH_TRY(korch_onnx_load_file(path, &g));
    g->keep_run_time_ifs = keep_ifs;
    korch_status st = korch_graph_validate(g);
    if (st == KORCH_OK) st = korch_graph_infer(g, overrides, n_overrides);
    if (st != KORCH_OK) {
        korch_graph_free(g);
        return st;
    }
    *out = g;
    return KORCH_OK;
}

korch_status korch_frontend_load(const char *path, const korch_input_shape *overrides, int n_overrides,
                                 korch_graph **out) {
    return load(path, overrides, n_overrides, false, out);
}

korch_status korch_frontend_load_keeping_ifs(const char *path, korch_graph **out) {
    return load(path, NULL, 0, true, out);
}
