/* korch explain: what a plan runs, kernel by kernel. Reads only the plan
 * file (which carries the primitive and ONNX node names), so it works
 * without the model. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "cli/cli_files.h"
#include "runtime/arena.h"
#include "runtime/plan.h"

static void help(void) {
    printf("usage: korch explain PLAN [--top N] [--input-shape NAME=DIMS]...\n\n"
           "Prints every kernel of PLAN in execution order: its primitives, the ONNX\n"
           "nodes it covers, its implementation, its profiled latency and its share of\n"
           "the total; then totals per backend, the N slowest kernels (default 10), and\n"
           "the memory plan (peak arena bytes; this part loads the plan's model).\n"
           "A plan with shape buckets: lists them, then explains the one --input-shape\n"
           "chooses (default: the first).\n\n"
           "  --top N                  the N slowest kernels (default 10)\n"
           "  --input-shape NAME=DIMS  the bucket to explain, in a plan with shape buckets\n");
}

/* Memory needs the value sizes, so the model is loaded and lowered (no kernel
 * is built); a plan whose model is gone still explains, without this part. */
static void print_memory(const korch_plan *plan, const char *path) {
    korch_plan_model m;
    korch_memory_plan mp;
    char buf[400];
    if (korch_plan_model_open(plan, path, &m) != KORCH_OK) {
        printf("\nmemory: unknown (%s)\n", korch_printable(korch_last_error(), buf, sizeof buf));
        return;
    }
    if (korch_plan_validate(plan, m.pg) == KORCH_OK && korch_memory_plan_build(plan, m.pg, &mp) == KORCH_OK) {
        size_t weights = 0;
        for (int v = 0; v < m.pg->n_values; v++)
            if (m.pg->values[v].is_constant) weights += korch_tensor_bytes(&m.pg->values[v].constant);
        printf("\nmemory:\n");
        printf("  peak arena bytes: %zu (%.2f MiB) for %d intermediate values, %d kernels in place\n",
               mp.arena_bytes, mp.arena_bytes / 1048576.0, mp.n_buffers, mp.n_in_place);
        printf("  lower bound:      %zu (most bytes live at one kernel)\n", mp.peak_live_bytes);
        printf("  without reuse:    %zu (one slot per value)\n", mp.unshared_bytes);
        printf("  constants:        %zu (%.2f MiB)\n", weights, weights / 1048576.0);
        korch_memory_plan_free(&mp);
    } else {
        printf("\nmemory: unknown (%s)\n", korch_printable(korch_last_error(), buf, sizeof buf));
    }
    korch_plan_model_close(&m);
}

static int by_latency(const void *a, const void *b) {
    const korch_plan_kernel *x = *(const korch_plan_kernel *const *)a, *y = *(const korch_plan_kernel *const *)b;
    return (y->latency_ms > x->latency_ms) - (y->latency_ms < x->latency_ms);
}

/* ONNX node names, one per line in the plan: printed comma-separated */
static void print_onnx(const char *names) {
    char buf[200];
    const char *p = names;
    bool first = true;
    while (p && *p) {
        const char *nl = strchr(p, '\n');
        size_t len = nl ? (size_t)(nl - p) : strlen(p);
        char name[512];
        snprintf(name, sizeof name, "%.*s", (int)(len < sizeof name - 1 ? len : sizeof name - 1), p);
        printf("%s%s", first ? "" : ", ", korch_printable(name, buf, sizeof buf));
        first = false;
        p = nl ? nl + 1 : NULL;
    }
    if (first) printf("-");
}

/* A plan with shape buckets: one line per bucket, then the bucket the
 * shapes choose (the first without any) replaces the plan. */
static korch_status explain_buckets(korch_plan **plan, const char *path, const korch_cli_shapes *shapes) {
    korch_plan *c = *plan;
    char buf[1024];
    printf("shape buckets: %d, sharing the model (%s) and the machine; a run picks the bucket whose shapes equal "
           "its inputs'\n",
           c->n_buckets, c->embedded ? "its graph and weights stored once" : "named once");
    for (int b = 0; b < c->n_buckets; b++) {
        const korch_plan *k = c->buckets[b];
        double total = 0;
        for (int i = 0; i < k->n_kernels; i++) total += k->kernels[i].latency_ms;
        printf("  bucket %d: %s: %d kernels, predicted %.4f ms%s\n", b + 1,
               korch_plan_shapes_format(k, buf, sizeof buf), k->n_kernels, total,
               k->verified ? ", verified" : ", not verified");
    }
    if (shapes->count) KORCH_TRY(korch_plan_bucket_choose(plan, path, shapes->items, shapes->count));
    else *plan = korch_plan_bucket_take(c, 0);
    printf("explained below: %s\n\n", korch_plan_shapes_format(*plan, buf, sizeof buf));
    return KORCH_OK;
}

int korch_cmd_explain(int argc, char **argv) {
    const char *path = NULL;
    long top = 10;
    korch_cli_shapes shapes = {0};
    for (int i = 1; i < argc; i++) {
        const char *v = NULL;
        if (korch_cli_is_help(argv[i])) {
            help();
            return 0;
        } else if (strcmp(argv[i], "--top") == 0) {
            if (!(v = korch_cli_value(argc, argv, &i, "explain"))) return korch_cli_shapes_free(&shapes), 2;
            if (!korch_cli_parse_int(v, 0, 1000000, &top))
                return korch_cli_shapes_free(&shapes), korch_cli_usage_error("explain", "--top expects a count");
        } else if (strcmp(argv[i], "--input-shape") == 0) {
            int rc = (v = korch_cli_value(argc, argv, &i, "explain")) ? korch_cli_shapes_add(&shapes, v, "explain") : 2;
            if (rc) {
                korch_cli_shapes_free(&shapes);
                return rc;
            }
        } else if (argv[i][0] == '-') {
            return korch_cli_shapes_free(&shapes), korch_cli_usage_error("explain", "unknown option %s", argv[i]);
        } else if (!path) {
            path = argv[i];
        } else {
            return korch_cli_shapes_free(&shapes), korch_cli_usage_error("explain", "more than one plan given");
        }
    }
    if (!path) return korch_cli_shapes_free(&shapes), korch_cli_usage_error("explain", "no plan given");
    if (korch_cli_expect_plan(path, "explain") != 0) return korch_cli_shapes_free(&shapes), 1;
    korch_plan *plan = NULL;
    korch_status lst = korch_plan_load(path, &plan);
    if (lst == KORCH_OK && plan->n_buckets) lst = explain_buckets(&plan, path, &shapes);
    else if (lst == KORCH_OK && shapes.count)
        lst = korch_error(KORCH_ERR_INVALID_ARGUMENT,
                          "--input-shape chooses a shape bucket; plan \"%s\" has one shape (listed below its input "
                          "lines)",
                          path);
    korch_cli_shapes_free(&shapes);
    if (lst != KORCH_OK) {
        korch_plan_free(plan);
        return korch_cli_fail();
    }
    char buf[400], dims[160];
    double total = 0;
    for (int i = 0; i < plan->n_kernels; i++) total += plan->kernels[i].latency_ms;
    printf("plan: %s (format %d)\n", korch_printable(path, buf, sizeof buf), plan->version);
    if (plan->embedded)
        printf("model: embedded (graph %zu bytes, weights %zu bytes), made from %s (sha256 %.16s...)\n",
               plan->sections.graph_size, plan->sections.weights_size,
               korch_printable(plan->model_path, buf, sizeof buf), plan->model_sha256);
    else
        printf("model: %s (sha256 %.16s...)\n", korch_printable(plan->model_path, buf, sizeof buf), plan->model_sha256);
    if (plan->machine_cpu[0]) {
        char why[512];
        bool foreign = korch_plan_machine_is_foreign(plan, why, sizeof why);
        printf("tuned on: %s%s%s\n", korch_printable(plan->machine_cpu, buf, sizeof buf),
               foreign ? "; foreign here: " : " (this machine's CPU)", foreign ? why : "");
    }
    for (int i = 0; i < plan->n_input_shapes; i++) {
        const korch_tensor *guard = plan->input_shapes[i].specialized;
        printf("input: %s %s", korch_printable(plan->input_shapes[i].name, buf, sizeof buf),
               korch_shape_format(&plan->input_shapes[i].shape, dims, sizeof dims));
        if (guard) {
            char values[200];
            /* a guarded input (docs/control-flow.md, "Guarded specialization") */
            printf(", specialized for %s %s: every run checks it, and refuses any other value",
                   korch_dtype_name(guard->dtype), korch_tensor_values_format(guard, values, sizeof values));
        }
        printf("\n");
    }
    printf("strategy: %s, %d threads, lowered by %s (%d primitives)%s", plan->strategy, plan->threads,
           plan->fission_version, plan->pgraph_nodes,
           plan->precision == KORCH_PRECISION_BF16 ? ", precision bf16 (linear primitives)" : "");
    if (plan->n_fp32_linear > 0) /* docs/precision.md, "Where bf16 pays" */
        printf(", %d linear primitive%s kept in float32 where bf16 did not pay", plan->n_fp32_linear,
               plan->n_fp32_linear == 1 ? "" : "s");
    printf("\n");
    printf("predicted: %.4f ms in %d kernels\n", total, plan->n_kernels);
    if (plan->measured_ms > 0)
        printf("measured in place after solving: %.4f ms (%.3fx the prediction; korch optimize --closed-loop)\n",
               plan->measured_ms, total > 0 ? plan->measured_ms / total : 0.0);
    if (!plan->verified) {
        printf("verification: none recorded (a plan of format 1, or made with --no-verify); check it with 'korch run "
               "PLAN --verify'\n");
    } else {
        printf("verification: matched the reference executor on seeded inputs (seed %llu)%s\n",
               (unsigned long long)plan->verify_seed, plan->verify_given ? " and on the inputs given to optimize" : "");
        if (plan->precision == KORCH_PRECISION_BF16)
            printf("  precision: bf16 (convolutions and matmuls on bfloat16 operands, float32 sums): the plan was "
                   "compared with the bf16 primitive graph, and its float32 graph with the reference\n");
        for (int i = 0; i < plan->n_output_checks; i++)
            korch_cli_print_output_check(&plan->output_checks[i], plan->precision == KORCH_PRECISION_BF16);
        printf("  %d candidate kernel%s excluded while choosing: %s\n", plan->excluded, plan->excluded == 1 ? " was" : "s were",
               plan->excluded == 1 ? "its outputs differed from the interpreter's" : plan->excluded ? "their outputs differed from the interpreter's" : "none");
        for (int i = 0; i < plan->n_excluded_kernels; i++)
            printf("  excluded: %s: %s\n", korch_printable(plan->excluded_kernels[i].impl, buf, sizeof buf),
                   plan->excluded_kernels[i].detail);
    }
    printf("\n");
    for (int i = 0; i < plan->n_kernels; i++) {
        const korch_plan_kernel *k = &plan->kernels[i];
        printf("kernel %d: %s, %.4f ms (%.1f%%), %d primitive%s, %d input%s, %d output%s\n", i,
               korch_backend_name(k->backend), k->latency_ms, total > 0 ? 100.0 * k->latency_ms / total : 0.0,
               k->n_nodes, k->n_nodes == 1 ? "" : "s", k->n_inputs, k->n_inputs == 1 ? "" : "s", k->n_outputs,
               k->n_outputs == 1 ? "" : "s");
        printf("  primitives: %s\n",
               korch_printable(k->primitives && *k->primitives ? k->primitives : "-", buf, sizeof buf));
        printf("  onnx: ");
        print_onnx(k->onnx_nodes);
        printf("\n  implementation: %s\n", korch_printable(*k->impl ? k->impl : "-", buf, sizeof buf));
        if (k->measured_ms > 0) printf("  measured in place: %.4f ms\n", k->measured_ms);
        if (k->verify_ratio >= 0)
            printf("  verified: %s (worst error/tolerance %.3g)\n",
                   k->backend == KORCH_BACKEND_REF ? "the interpreter itself" : "against the interpreter",
                   k->verify_ratio);
    }
    printf("\nper backend:\n");
    for (int b = 0; b < KORCH_BACKEND_COUNT; b++) {
        int count = 0, prims = 0;
        double ms = 0;
        for (int i = 0; i < plan->n_kernels; i++)
            if ((int)plan->kernels[i].backend == b) {
                count++;
                prims += plan->kernels[i].n_nodes;
                ms += plan->kernels[i].latency_ms;
            }
        if (count)
            printf("  %-5s %5d kernels %6d primitives %10.4f ms %5.1f%%\n", korch_backend_name((korch_backend_kind)b),
                   count, prims, ms, total > 0 ? 100.0 * ms / total : 0.0);
    }
    if (top > 0 && plan->n_kernels > 0) {
        const korch_plan_kernel **sorted = malloc((size_t)plan->n_kernels * sizeof *sorted);
        if (!sorted) {
            korch_plan_free(plan);
            return korch_cli_fail();
        }
        for (int i = 0; i < plan->n_kernels; i++) sorted[i] = &plan->kernels[i];
        qsort(sorted, (size_t)plan->n_kernels, sizeof *sorted, by_latency);
        printf("\nslowest kernels:\n");
        for (int i = 0; i < plan->n_kernels && i < top; i++)
            printf("  kernel %-5d %10.4f ms %5.1f%%  %s\n", (int)(sorted[i] - plan->kernels), sorted[i]->latency_ms,
                   total > 0 ? 100.0 * sorted[i]->latency_ms / total : 0.0,
                   korch_printable(sorted[i]->primitives ? sorted[i]->primitives : "-", buf, 80));
        free(sorted);
    }
    print_memory(plan, path);
    korch_plan_free(plan);
    return 0;
}
