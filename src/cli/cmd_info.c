#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "frontend/onnx_load.h"
#include "ops/op.h"

static void help(void) {
    printf("usage: korch info MODEL [--input-shape NAME=DIMS]...\n\n"
           "Prints the model's inputs and outputs with shapes, an operator histogram,\n"
           "parameter bytes and the FLOPs of one run.\n");
}

static void print_value(const korch_value *v, const char *kind) {
    char name[200], shape[128];
    printf("  %-6s %-40s %-8s %s\n", kind, korch_printable(v->name, name, sizeof name), korch_dtype_name(v->dtype),
           korch_shape_format(&v->shape, shape, sizeof shape));
}

typedef struct op_count {
    const char *op;
    int count;
    int64_t flops;
} op_count;

static int by_count(const void *a, const void *b) {
    const op_count *x = a, *y = b;
    if (x->count != y->count) return y->count - x->count;
    return strcmp(x->op, y->op);
}

/* FLOPs of a live node from its inferred shapes. */
static int64_t node_flops(const korch_graph *g, const korch_node *n) {
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

int korch_cmd_info(int argc, char **argv) {
    const char *model = NULL;
    korch_cli_shapes shapes = {0};
    int rc = korch_cli_model_args(argc, argv, "info", help, &model, &shapes);
    if (rc != 0) return rc < 0 ? 0 : rc;
    /* parameter bytes come from the file's initializers, before folding */
    korch_graph *raw = NULL;
    if (korch_onnx_load_file(model, &raw) != KORCH_OK) {
        korch_cli_shapes_free(&shapes);
        return korch_cli_fail();
    }
    int64_t param_bytes = 0, param_count = 0;
    for (int v = 0; v < raw->n_values; v++)
        if (raw->values[v].is_constant) {
            param_bytes += (int64_t)korch_tensor_bytes(&raw->values[v].constant);
            param_count += korch_tensor_numel(&raw->values[v].constant);
        }
    int n_nodes_file = raw->n_nodes;
    op_count *hist = calloc((size_t)raw->n_nodes + 1, sizeof *hist);
    int n_hist = 0;
    for (int i = 0; hist && i < raw->n_nodes; i++) {
        int j = 0;
        while (j < n_hist && strcmp(hist[j].op, raw->nodes[i].op_type) != 0) j++;
        if (j == n_hist) hist[n_hist++].op = raw->nodes[i].op_type;
        hist[j].count++;
    }

    korch_graph *g = NULL;
    korch_status st = korch_frontend_load(model, shapes.items, shapes.count, &g);
    korch_cli_shapes_free(&shapes);
    if (st != KORCH_OK || !hist) {
        free(hist);
        korch_graph_free(raw);
        return korch_cli_fail();
    }
    char name[200];
    printf("model: %s\n", korch_printable(model, name, sizeof name));
    printf("graph: \"%s\", IR version %lld, ONNX opset %lld\n", korch_printable(g->name, name, sizeof name),
           (long long)g->ir_version, (long long)korch_graph_opset(g, ""));
    for (int i = 0; i < g->n_inputs; i++) print_value(&g->values[g->inputs[i]], "input");
    for (int i = 0; i < g->n_outputs; i++) print_value(&g->values[g->outputs[i]], "output");

    int64_t flops = 0;
    int live = 0;
    for (int i = 0; i < g->n_nodes; i++) {
        const korch_node *n = &g->nodes[i];
        if (n->dead) continue;
        live++;
        int64_t f = node_flops(g, n);
        flops += f;
        for (int j = 0; j < n_hist; j++)
            if (strcmp(hist[j].op, n->op_type) == 0) hist[j].flops += f;
    }
    printf("nodes: %d in the file, %d after constant folding\n", n_nodes_file, live);
    printf("parameters: %lld (%.2f MiB)\n", (long long)param_count, (double)param_bytes / (1024.0 * 1024.0));
    printf("FLOPs: %.3f G per run\n", (double)flops / 1e9);
    qsort(hist, (size_t)n_hist, sizeof *hist, by_count);
    printf("operators:\n");
    for (int j = 0; j < n_hist; j++)
        printf("  %-24s %6d  %10.3f GFLOPs\n", korch_printable(hist[j].op, name, 40), hist[j].count,
               (double)hist[j].flops / 1e9);
    free(hist);
    korch_graph_free(raw);
    korch_graph_free(g);
    return 0;
}
