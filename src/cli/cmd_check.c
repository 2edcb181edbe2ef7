#include <stdio.h>
#include <string.h>

#include "cli/cli.h"
#include "frontend/onnx_load.h"
#include "frontend/subgraph.h"
#include "runtime/plan.h"

static void help(void) {
    printf("usage: korch check MODEL|PLAN [--input-shape NAME=DIMS]...\n\n"
           "Parses and validates MODEL (structure, operator support, dtypes, shapes,\n"
           "constant folding) without running it. Exits 0 only if korch can run the\n"
           "model; otherwise prints one line naming the fault and exits 1. Inputs with\n"
           "symbolic dimensions (dynamic axes) and no --input-shape: everything but\n"
           "shapes is checked, and the inputs to fix are listed. A plan is checked\n"
           "whole: checksums, its model, and its kernels against that model.\n\n"
           "  --input-shape NAME=DIMS  fix a symbolic input shape, e.g. input=1x3x224x224\n");
}

/* A plan: loaded (text, checksums, sections), its model loaded and
 * lowered, and its kernels validated against the primitive graph; nothing
 * is built or run. */
static int check_one(const korch_plan *plan, const char *path, int bucket);

static int check_plan(const char *path) {
    korch_plan *plan = NULL;
    if (korch_plan_load(path, &plan) != KORCH_OK) return korch_cli_fail();
    int rc = 0;
    /* a plan with shape buckets: every bucket against the model at its shapes */
    for (int b = 0; b < plan->n_buckets && rc == 0; b++) rc = check_one(plan->buckets[b], path, b + 1);
    if (plan->n_buckets == 0) rc = check_one(plan, path, 0);
    korch_plan_free(plan);
    return rc;
}

static int check_one(const korch_plan *plan, const char *path, int bucket) {
    korch_plan_model m;
    if (korch_plan_model_open(plan, path, &m) != KORCH_OK) return korch_cli_fail();
    int rc = 0;
    if (korch_plan_validate(plan, m.pg) != KORCH_OK) {
        char printable[256];
        korch_error_prefix(KORCH_ERR_INVALID_MODEL, "plan \"%s\"", korch_printable(path, printable, sizeof printable));
        rc = korch_cli_fail();
    } else if (bucket) {
        char shapes[1024];
        printf("ok: bucket %d (%s): plan of %d kernels for %d primitives, %s\n", bucket,
               korch_plan_shapes_format(plan, shapes, sizeof shapes), plan->n_kernels, m.pg->n_nodes,
               plan->embedded ? "its model embedded" : "its model unchanged");
    } else {
        printf("ok: plan of %d kernels for %d primitives, %s\n", plan->n_kernels, m.pg->n_nodes,
               plan->embedded ? "its model embedded" : "its model unchanged");
    }
    korch_plan_model_close(&m);
    return rc;
}

/* Inputs with symbolic dimensions: the structure, operators and dtypes are
 * checked (korch_graph_validate); shapes cannot be until they are fixed.
 * Exit 0: korch runs the model once they are (run takes them from its
 * input files; optimize from --input-shape). */
static int report_open(const korch_graph *g) {
    printf("ok: %d nodes, %d inputs, %d outputs; structure, operators and dtypes checked; shapes not checked: "
           "symbolic input dimensions\n",
           g->n_nodes, g->n_inputs, g->n_outputs);
    char name[200], shape[256], first[200] = "";
    for (int i = 0; i < g->n_inputs; i++) {
        const korch_value *v = &g->values[g->inputs[i]];
        if (v->is_constant || !korch_value_shape_open(v)) continue;
        korch_printable(v->name, name, sizeof name);
        if (!first[0]) snprintf(first, sizeof first, "%s", name);
        printf("  input %-32s %s\n", name, korch_value_declared_format(v, shape, sizeof shape));
    }
    printf("fix them to check shapes too (korch check MODEL --input-shape %s=DIMS); korch run takes them from its "
           "--input files, korch optimize needs --input-shape\n",
           first);
    return 0;
}

int korch_cmd_check(int argc, char **argv) {
    const char *model = NULL;
    korch_cli_shapes shapes = {0};
    int rc = korch_cli_model_or_plan_args(argc, argv, "check", help, &model, &shapes);
    if (rc != 0) return rc < 0 ? 0 : rc;
    if (korch_plan_file_is_plan(model)) {
        bool fixed = shapes.count > 0;
        korch_cli_shapes_free(&shapes);
        if (fixed) return korch_cli_usage_error("check", "--input-shape: a plan's input shapes are fixed");
        return check_plan(model);
    }
    korch_graph *g = NULL;
    korch_status st = korch_onnx_load_file(model, &g);
    if (st == KORCH_OK) st = korch_graph_validate(g);
    if (st == KORCH_OK && korch_graph_open_inputs(g, shapes.items, shapes.count) > 0 &&
        (st = korch_graph_check_input_types(g)) == KORCH_OK) {
        korch_cli_shapes_free(&shapes);
        int rc = report_open(g);
        korch_graph_free(g);
        return rc;
    }
    if (st == KORCH_OK) st = korch_graph_infer(g, shapes.items, shapes.count);
    korch_cli_shapes_free(&shapes);
    if (st != KORCH_OK) {
        korch_graph_free(g);
        return korch_cli_fail();
    }
    int live = 0;
    for (int i = 0; i < g->n_nodes; i++) live += !g->nodes[i].dead;
    printf("ok: %d nodes (%d after constant folding), %d inputs, %d outputs\n", g->n_nodes, live, g->n_inputs,
           g->n_outputs);
    korch_graph_report_control_flow(g, stdout); /* what stays control flow, and why */
    korch_graph_free(g);
    return 0;
}
