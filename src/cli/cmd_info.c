#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "frontend/summary.h"
#include "runtime/plan.h"

static void help(void) {
    printf("usage: korch info MODEL|PLAN [--input-shape NAME=DIMS]...\n\n"
           "Prints the model's inputs and outputs with shapes, an operator histogram,\n"
           "parameter bytes and the FLOPs of one run. For a plan: of the model it was\n"
           "made for (its own when embedded), at the plan's input shapes. Inputs with\n"
           "symbolic dimensions (dynamic axes) are shown by name; FLOPs need them fixed\n"
           "with --input-shape NAME=DIMS.\n");
}

/* inferred: the shape as inferred; else as the file declares it, symbolic
 * dimensions by name */
static void print_value(const korch_value *v, const char *kind, bool inferred) {
    char name[200], shape[256];
    korch_dtype dt = inferred ? v->dtype : v->declared_dtype;
    printf("  %-6s %-40s %-8s %s\n", kind, korch_printable(v->name, name, sizeof name), korch_dtype_name(dt),
           inferred ? korch_shape_format(&v->shape, shape, sizeof shape)
                    : korch_value_declared_format(v, shape, sizeof shape));
}

/* The summary of a loaded plan's model at the plan's shapes; *plan stays
 * loaded (the graphs may borrow its weights). */
static korch_status load_plan_summary(const char *path, const korch_cli_shapes *shapes, korch_plan **plan,
                                      korch_model_summary *s, char *buckets, size_t size) {
    /* a bucketed plan: the list of its buckets, and the model at the one
     * --input-shape chooses (the first without it) */
    buckets[0] = '\0';
    size_t used = 0;
    for (int b = 0; b < (*plan)->n_buckets && used < size; b++) {
        char one[1024];
        int w = snprintf(buckets + used, size - used, "  bucket %d: %s\n", b + 1,
                         korch_plan_shapes_format((*plan)->buckets[b], one, sizeof one));
        if (w < 0) break;
        used += (size_t)w;
    }
    if ((*plan)->n_buckets && shapes->count)
        KORCH_TRY(korch_plan_bucket_choose(plan, path, shapes->items, shapes->count));
    else if ((*plan)->n_buckets)
        *plan = korch_plan_bucket_take(*plan, 0);
    korch_graph *raw = NULL, *graph = NULL;
    KORCH_TRY(korch_plan_load_graph(*plan, path, &raw));
    korch_status st = korch_plan_load_inferred(*plan, path, &graph);
    if (st != KORCH_OK) {
        korch_graph_free(raw);
        return st;
    }
    return korch_model_summary_build(raw, graph, s);
}

int korch_cmd_info(int argc, char **argv) {
    const char *model = NULL;
    korch_cli_shapes shapes = {0};
    int rc = korch_cli_model_or_plan_args(argc, argv, "info", help, &model, &shapes);
    if (rc != 0) return rc < 0 ? 0 : rc;
    korch_model_summary s;
    korch_plan *plan = NULL;
    korch_status st = KORCH_OK;
    char buckets[8192] = "";
    if (korch_plan_file_is_plan(model)) {
        st = korch_plan_load(model, &plan);
        if (st == KORCH_OK && shapes.count && plan->n_buckets == 0) {
            korch_cli_shapes_free(&shapes);
            korch_plan_free(plan);
            return korch_cli_usage_error("info", "--input-shape: a plan's input shapes are fixed (korch explain PLAN "
                                                 "lists them; a plan with shape buckets takes it to choose one)");
        }
        if (st == KORCH_OK) st = load_plan_summary(model, &shapes, &plan, &s, buckets, sizeof buckets);
    } else {
        st = korch_model_summary_load(model, shapes.items, shapes.count, &s);
    }
    korch_cli_shapes_free(&shapes);
    if (st != KORCH_OK) {
        korch_plan_free(plan);
        return korch_cli_fail();
    }
    const korch_graph *g = s.graph;
    char name[200];
    printf("model: %s\n", korch_printable(model, name, sizeof name));
    if (plan && plan->embedded) printf("plan: format %d, the model embedded (made from %s)\n", plan->version,
                                       korch_printable(plan->model_path, name, sizeof name));
    else if (plan) printf("plan: format %d, for the model %s\n", plan->version,
                          korch_printable(plan->model_path, name, sizeof name));
    if (plan && buckets[0]) {
        char shown[1024];
        int n = 0;
        for (const char *c = buckets; *c; c++) n += *c == '\n';
        printf("shape buckets: %d (a plan per input shape; shown: %s, --input-shape chooses another)\n%s", n,
               korch_plan_shapes_format(plan, shown, sizeof shown), buckets);
    }
    printf("graph: \"%s\", IR version %lld, ONNX opset %lld\n", korch_printable(g->name, name, sizeof name),
           (long long)g->ir_version, (long long)korch_graph_opset(g, ""));
    bool inferred = s.open_inputs == 0;
    for (int i = 0; i < g->n_inputs; i++) print_value(&g->values[g->inputs[i]], "input", inferred);
    for (int i = 0; i < g->n_outputs; i++) print_value(&g->values[g->outputs[i]], "output", inferred);
    if (inferred) printf("nodes: %d in the file, %d after constant folding\n", s.nodes_in_file, s.nodes_live);
    else printf("nodes: %d in the file\n", s.nodes_in_file);
    printf("parameters: %lld (%.2f MiB)\n", (long long)s.param_count, (double)s.param_bytes / (1024.0 * 1024.0));
    if (inferred) printf("FLOPs: %.3f G per run\n", (double)s.flops / 1e9);
    else printf("shapes: %d input%s with symbolic dimensions; FLOPs and constant folding need them fixed "
                "(--input-shape NAME=DIMS)\n", s.open_inputs, s.open_inputs == 1 ? "" : "s");
    printf("operators:\n");
    for (int j = 0; j < s.n_ops; j++) {
        if (inferred)
            printf("  %-24s %6d  %10.3f GFLOPs\n", korch_printable(s.ops[j].op, name, 40), s.ops[j].count,
                   (double)s.ops[j].flops / 1e9);
        else
            printf("  %-24s %6d\n", korch_printable(s.ops[j].op, name, 40), s.ops[j].count);
    }
    korch_model_summary_free(&s); /* before the plan: an embedded plan's graphs borrow its weights */
    korch_plan_free(plan);
    return 0;
}
