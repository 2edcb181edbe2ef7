#include <stdio.h>
#include <string.h>

#include "cli/cli.h"
#include "frontend/subgraph.h"

static void help(void) {
    printf("usage: korch check MODEL [--input-shape NAME=DIMS]...\n\n"
           "Parses and validates MODEL (structure, operator support, dtypes, shapes,\n"
           "constant folding) without running it. Exits 0 only if korch can run the\n"
           "model; otherwise prints one line naming the fault and exits 1.\n\n"
           "  --input-shape NAME=DIMS  fix a symbolic input shape, e.g. input=1x3x224x224\n");
}

int korch_cmd_check(int argc, char **argv) {
    const char *model = NULL;
    korch_cli_shapes shapes = {0};
    int rc = korch_cli_model_args(argc, argv, "check", help, &model, &shapes);
    if (rc != 0) return rc < 0 ? 0 : rc;
    korch_graph *g = NULL;
    korch_status st = korch_frontend_load(model, shapes.items, shapes.count, &g);
    korch_cli_shapes_free(&shapes);
    if (st != KORCH_OK) return korch_cli_fail();
    int live = 0;
    for (int i = 0; i < g->n_nodes; i++) live += !g->nodes[i].dead;
    printf("ok: %d nodes (%d after constant folding), %d inputs, %d outputs\n", g->n_nodes, live, g->n_inputs,
           g->n_outputs);
    korch_graph_report_control_flow(g, stdout); /* what stays control flow, and why */
    korch_graph_free(g);
    return 0;
}
