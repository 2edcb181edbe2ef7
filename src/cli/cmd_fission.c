/* korch fission: op graph -> primitive graph; writes it as ONNX and/or prints
 * statistics. */
#include <stdio.h>
#include <string.h>

#include "cli/cli.h"
#include "cli/cli_files.h"
#include "fission/pgraph_onnx.h"
#include "fission/fission.h"

static void help(void) {
    printf("usage: korch fission MODEL [-o OUT.onnx] [--stats] [--dump] [--no-cleanup]\n"
           "                     [--input-shape NAME=DIMS]...\n\n"
           "Splits every operator of MODEL into primitives (elementwise, reduce, layout,\n"
           "linear, opaque), runs the clean-ups (constant propagation, layout\n"
           "simplification, common subexpressions, dead code) and writes the result as\n"
           "a standard ONNX model that runs in ONNX Runtime and in 'korch run' with the\n"
           "same outputs as MODEL. See docs/fission.md.\n\n"
           "  -o, --output OUT.onnx    write the primitive graph as ONNX\n"
           "  --stats                  primitives per kind and per original operator, node\n"
           "                           counts before and after each clean-up, opaque nodes\n"
           "                           and why (the default when -o is not given)\n"
           "  --dump                   print the primitive graph, one node per line\n"
           "  --no-cleanup             skip the clean-up passes\n"
           "  --input-shape NAME=DIMS  fix a symbolic input dimension\n");
}

int korch_cmd_fission(int argc, char **argv) {
    const char *model = NULL, *out = NULL;
    bool stats_wanted = false, dump = false, cleanup = true;
    korch_cli_shapes shapes = {0};
    int rc = 0;
    for (int i = 1; i < argc && rc == 0; i++) {
        const char *a = argv[i], *v = NULL;
        if (korch_cli_is_help(a)) {
            help();
            korch_cli_shapes_free(&shapes);
            return 0;
        } else if (strcmp(a, "-o") == 0 || strcmp(a, "--output") == 0) {
            if (!(out = korch_cli_value(argc, argv, &i, "fission"))) rc = 2;
        } else if (strcmp(a, "--stats") == 0) {
            stats_wanted = true;
        } else if (strcmp(a, "--dump") == 0) {
            dump = true;
        } else if (strcmp(a, "--no-cleanup") == 0) {
            cleanup = false;
        } else if (strcmp(a, "--input-shape") == 0) {
            if (!(v = korch_cli_value(argc, argv, &i, "fission"))) rc = 2;
            else rc = korch_cli_shapes_add(&shapes, v, "fission");
        } else if (a[0] == '-') {
            rc = korch_cli_usage_error("fission", "unknown option %s", a);
        } else if (!model) {
            model = a;
        } else {
            rc = korch_cli_usage_error("fission", "more than one model given");
        }
    }
    if (rc == 0 && !model) rc = korch_cli_usage_error("fission", "no model given");
    if (rc == 0) rc = korch_cli_expect_model(model, "fission");
    if (rc == 0 && out) rc = korch_cli_check_output_file("-o", out);
    if (rc) {
        korch_cli_shapes_free(&shapes);
        return rc;
    }
    if (!out && !dump) stats_wanted = true;

    korch_graph *g = NULL;
    korch_pgraph *pg = NULL;
    korch_fission_stats stats;
    korch_status st = korch_frontend_load(model, shapes.items, shapes.count, &g);
    if (st == KORCH_OK) st = cleanup ? korch_fission(g, &pg, &stats) : korch_fission_raw(g, &pg, &stats);
    if (st == KORCH_OK && !cleanup) korch_fission_count(pg, &stats, true);
    if (st == KORCH_OK && out) st = korch_pgraph_export_onnx(pg, out);
    if (st == KORCH_OK) {
        if (stats_wanted) korch_fission_stats_print(pg, &stats, stdout);
        if (dump) korch_pgraph_dump(pg, stdout);
        if (out) fprintf(stderr, "korch: wrote %s (%d primitives)\n", out, korch_pgraph_live_nodes(pg));
    }
    rc = st == KORCH_OK ? 0 : korch_cli_fail();
    korch_pgraph_free(pg);
    korch_graph_free(g);
    korch_cli_shapes_free(&shapes);
    return rc;
}
