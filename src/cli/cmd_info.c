#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "frontend/summary.h"

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

int korch_cmd_info(int argc, char **argv) {
    const char *model = NULL;
    korch_cli_shapes shapes = {0};
    int rc = korch_cli_model_args(argc, argv, "info", help, &model, &shapes);
    if (rc != 0) return rc < 0 ? 0 : rc;
    korch_model_summary s;
    korch_status st = korch_model_summary_load(model, shapes.items, shapes.count, &s);
    korch_cli_shapes_free(&shapes);
    if (st != KORCH_OK) return korch_cli_fail();
    const korch_graph *g = s.graph;
    char name[200];
    printf("model: %s\n", korch_printable(model, name, sizeof name));
    printf("graph: \"%s\", IR version %lld, ONNX opset %lld\n", korch_printable(g->name, name, sizeof name),
           (long long)g->ir_version, (long long)korch_graph_opset(g, ""));
    for (int i = 0; i < g->n_inputs; i++) print_value(&g->values[g->inputs[i]], "input");
    for (int i = 0; i < g->n_outputs; i++) print_value(&g->values[g->outputs[i]], "output");
    printf("nodes: %d in the file, %d after constant folding\n", s.nodes_in_file, s.nodes_live);
    printf("parameters: %lld (%.2f MiB)\n", (long long)s.param_count, (double)s.param_bytes / (1024.0 * 1024.0));
    printf("FLOPs: %.3f G per run\n", (double)s.flops / 1e9);
    printf("operators:\n");
    for (int j = 0; j < s.n_ops; j++)
        printf("  %-24s %6d  %10.3f GFLOPs\n", korch_printable(s.ops[j].op, name, 40), s.ops[j].count,
               (double)s.ops[j].flops / 1e9);
    korch_model_summary_free(&s);
    return 0;
}
