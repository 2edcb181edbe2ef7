#include "frontend/summary.h"

#include <stdlib.h>
#include <string.h>

#include "frontend/onnx_load.h"
#include "ops/op.h"

static int by_count(const void *a, const void *b) {
    const korch_op_summary *x = a, *y = b;
    if (x->count != y->count) return y->count - x->count;
    return strcmp(x->op, y->op);
}

/* FLOPs of a live node from its inferred shapes (an operator without a FLOP
 * function counts one per output element). */
int64_t korch_node_flops(const korch_graph *g, const korch_node *n) {
    korch_tensor in_store[16], out_store[16];
    korch_tensor *ins[16] = {0}, *outs[16] = {0};
    if (n->n_inputs > 16 || n->n_outputs > 16) return 0;
    for (int k = 0; k < n->n_inputs; k++) {
        if (n->inputs[k] < 0) continue;
        const korch_value *v = &g->values[n->inputs[k]];
        in_store[k] = (korch_tensor){.dtype = v->dtype, .shape = v->shape, .data = v->is_constant ? v->constant.data : NULL};
        ins[k] = &in_store[k];
    }
    int64_t total = 0;
    for (int k = 0; k < n->n_outputs; k++) {
        if (n->outputs[k] < 0) continue;
        const korch_value *v = &g->values[n->outputs[k]];
        out_store[k] = (korch_tensor){.dtype = v->dtype, .shape = v->shape};
        outs[k] = &out_store[k];
        total += korch_shape_numel(&v->shape);
    }
    korch_op_ctx ctx = {.graph = g, .node = n, .n_inputs = n->n_inputs, .inputs = ins, .n_outputs = n->n_outputs,
                        .outputs = outs};
    return n->def->flops ? n->def->flops(&ctx) : total;
}

static korch_status build(korch_graph *raw, korch_graph *graph, bool inferred, korch_model_summary *out);

korch_status korch_model_summary_load(const char *path, const korch_input_shape *shapes, int n_shapes,
                                      korch_model_summary *out) {
    memset(out, 0, sizeof *out);
    /* parameter bytes come from the file's initializers, before folding */
    korch_graph *raw = NULL, *graph = NULL;
    KORCH_TRY(korch_onnx_load_file(path, &raw));
    korch_status st = korch_onnx_load_file(path, &graph);
    if (st == KORCH_OK) st = korch_graph_validate(graph);
    int open = st == KORCH_OK ? korch_graph_open_inputs(graph, shapes, n_shapes) : 0;
    if (open > 0) st = korch_graph_check_input_types(graph);
    if (st == KORCH_OK && open == 0) st = korch_graph_infer(graph, shapes, n_shapes);
    if (st != KORCH_OK) {
        korch_graph_free(graph);
        korch_graph_free(raw);
        return st;
    }
    st = build(raw, graph, open == 0, out);
    if (st == KORCH_OK) out->open_inputs = open;
    return st;
}

korch_status korch_model_summary_build(korch_graph *raw, korch_graph *graph, korch_model_summary *out) {
    return build(raw, graph, true, out);
}

static korch_status build(korch_graph *raw, korch_graph *graph, bool inferred, korch_model_summary *out) {
    memset(out, 0, sizeof *out);
    out->raw = raw;
    out->graph = graph;
    for (int v = 0; v < raw->n_values; v++)
        if (raw->values[v].is_constant) {
            out->param_bytes += (int64_t)korch_tensor_bytes(&raw->values[v].constant);
            out->param_count += korch_tensor_numel(&raw->values[v].constant);
        }
    /* exporters that write weights as Constant nodes (paddle2onnx; older
     * torch.onnx) hold them in a "value" attribute, not in initializers */
    for (int i = 0; i < raw->n_nodes; i++) {
        if (strcmp(raw->nodes[i].op_type, "Constant") != 0) continue;
        const korch_attr *a = korch_node_attr(&raw->nodes[i], "value");
        if (a && a->type == KORCH_ATTR_TENSOR && a->tensor) {
            out->param_bytes += (int64_t)korch_tensor_bytes(a->tensor);
            out->param_count += korch_tensor_numel(a->tensor);
        }
    }
    out->nodes_in_file = raw->n_nodes;
    out->ops = calloc((size_t)raw->n_nodes + 1, sizeof *out->ops);
    if (!out->ops) {
        korch_model_summary_free(out);
        return korch_error(KORCH_ERR_OUT_OF_MEMORY, "out of memory");
    }
    for (int i = 0; i < raw->n_nodes; i++) {
        int j = 0;
        while (j < out->n_ops && strcmp(out->ops[j].op, raw->nodes[i].op_type) != 0) j++;
        if (j == out->n_ops) out->ops[out->n_ops++].op = raw->nodes[i].op_type;
        out->ops[j].count++;
    }
    const korch_graph *g = out->graph;
    if (!inferred) {
        /* no folding, no shapes to count FLOPs on */
        out->nodes_live = -1;
        out->flops = -1;
        for (int j = 0; j < out->n_ops; j++) out->ops[j].flops = -1;
        qsort(out->ops, (size_t)out->n_ops, sizeof *out->ops, by_count);
        return KORCH_OK;
    }
    for (int i = 0; i < g->n_nodes; i++) {
        const korch_node *n = &g->nodes[i];
        if (n->dead) continue;
        out->nodes_live++;
        int64_t f = korch_node_flops(g, n);
        out->flops += f;
        for (int j = 0; j < out->n_ops; j++)
            if (strcmp(out->ops[j].op, n->op_type) == 0) out->ops[j].flops += f;
    }
    qsort(out->ops, (size_t)out->n_ops, sizeof *out->ops, by_count);
    return KORCH_OK;
}

void korch_model_summary_free(korch_model_summary *s) {
    korch_graph_free(s->graph);
    korch_graph_free(s->raw);
    free(s->ops);
    memset(s, 0, sizeof *s);
}
