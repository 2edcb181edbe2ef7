#include <stdio.h>
#include <string.h>

#include "cli/cli.h"

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
    int rc = 0;
    for (int i = 1; i < argc && rc == 0; i++) {
        if (korch_cli_is_help(argv[i])) {
            help();
            korch_cli_shapes_free(&shapes);
            return 0;
        } else if (strcmp(argv[i], "--input-shape") == 0) {
            const char *v = korch_cli_value(argc, argv, &i, "check");
            rc = v ? korch_cli_shapes_add(&shapes, v, "check") : 2;
        } else if (argv[i][0] == '-') {
            rc = korch_cli_usage_error("check", "unknown option %s", argv[i]);
        } else if (!model) {
            model = argv[i];
        } else {
            rc = korch_cli_usage_error("check", "more than one model given");
        }
    }
    if (rc == 0 && !model) rc = korch_cli_usage_error("check", "no model given");
    if (rc) {
        korch_cli_shapes_free(&shapes);
        return rc;
    }
    korch_graph *g = NULL;
    korch_status st = korch_frontend_load(model, shapes.items, shapes.count, &g);
    korch_cli_shapes_free(&shapes);
    if (st != KORCH_OK) return korch_cli_fail();
    int live = 0;
    for (int i = 0; i < g->n_nodes; i++) live += !g->nodes[i].dead;
    printf("ok: %d nodes (%d after constant folding), %d inputs, %d outputs\n", g->n_nodes, live, g->n_inputs,
           g->n_outputs);
    korch_graph_free(g);
    return 0;
}
