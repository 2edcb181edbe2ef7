/* korch bench: the three strategies on one model, from one set of profiles:
 * measured end-to-end latency, predicted latency (the sum of the profiled
 * kernel latencies) and kernel count. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli_files.h"
#include "cli/cli_orchestrate.h"
#include "ops/reference.h"
#include "runtime/executor.h"
#include "verify/verify.h"

static void help(void) {
    printf("usage: korch bench MODEL|PLAN [--runs N] [--check] [--db PATH] [--threads N]\n"
           "                   [--budget SECONDS] [--input-shape NAME=DIMS]...\n\n"
           "Optimises MODEL with each strategy (none, greedy, optimal) from the same\n"
           "profiles, runs each plan N times (default 10, after a warm-up run) on seeded\n"
           "random inputs, and prints per strategy the measured median latency, the\n"
           "predicted latency and the kernel count. The plans' outputs are compared with\n"
           "each other; --check also compares them with the reference executor.\n"
           "Given a plan, its model (embedded or named) at the plan's input shapes.\n"
           "The last line is 'none_ms=A greedy_ms=B optimal_ms=C speedup=B/C'.\n");
    korch_cli_orchestrate_help();
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* max |a - b| / max(max |b|, tiny) over float outputs */
static double max_rel_diff(const korch_tensor *a, const korch_tensor *b, int n) {
    double worst = 0;
    for (int i = 0; i < n; i++) {
        if (a[i].dtype != KORCH_DTYPE_FLOAT32) {
            if (memcmp(a[i].data, b[i].data, korch_tensor_bytes(&a[i])) != 0) worst = INFINITY;
            continue;
        }
        const float *x = a[i].data, *y = b[i].data;
        double scale = 1e-30, diff = 0;
        for (int64_t e = 0; e < korch_tensor_numel(&a[i]); e++) {
            if (fabs(y[e]) > scale) scale = fabs(y[e]);
            double d = fabs((double)x[e] - (double)y[e]);
            if (!(d <= diff)) diff = d; /* NaN sticks */
        }
        if (!(diff / scale <= worst)) worst = diff / scale;
    }
    return worst;
}

int korch_cmd_bench(int argc, char **argv) {
    korch_cli_orchestrate_args args;
    korch_cli_orchestrate_args_init(&args);
    long runs = 10;
    bool check = false;
    int rc = 0;
    for (int i = 1; i < argc && rc == 0; i++) {
        const char *a = argv[i], *v = NULL;
        int used = 0;
        if (korch_cli_is_help(a)) {
            help();
            korch_cli_orchestrate_args_free(&args);
            return 0;
        } else if (strcmp(a, "--runs") == 0) {
            if (!(v = korch_cli_value(argc, argv, &i, "bench"))) rc = 2;
            else if (!korch_cli_parse_int(v, 1, 1000000, &runs))
                rc = korch_cli_usage_error("bench", "--runs expects a count");
        } else if (strcmp(a, "--check") == 0) {
            check = true;
        } else if ((rc = korch_cli_orchestrate_option(&args, argc, argv, &i, "bench", &used)) != 0 || used) {
            continue;
        } else if (a[0] == '-') {
            rc = korch_cli_usage_error("bench", "unknown option %s", a);
        } else if (!args.model) {
            args.model = a;
        } else {
            rc = korch_cli_usage_error("bench", "more than one model given");
        }
    }
    if (rc == 0 && !args.model) rc = korch_cli_usage_error("bench", "no model given");
    if (rc == 0) rc = korch_cli_expect_model_or_plan(args.model, "bench");
    if (rc == 0 && args.dry_run) rc = korch_cli_usage_error("bench", "--dry-run is an optimize option");
    if (rc) {
        korch_cli_orchestrate_args_free(&args);
        return rc;
    }
    korch_cli_session s;
    rc = korch_cli_orchestrate_begin(&args, KORCH_STRATEGY_OPTIMAL, &s);
    if (rc) {
        korch_cli_orchestrate_end(&s);
        korch_cli_orchestrate_args_free(&args);
        return rc;
    }
    const korch_pgraph *pg = s.model.pg;
    korch_tensor *inputs = calloc((size_t)pg->n_inputs + 1, sizeof *inputs);
    korch_tensor *outputs[KORCH_STRATEGY_COUNT] = {0}, *reference = NULL;
    double *times = calloc((size_t)runs, sizeof *times);
    double measured[KORCH_STRATEGY_COUNT] = {0}, predicted[KORCH_STRATEGY_COUNT] = {0};
    int kernels[KORCH_STRATEGY_COUNT] = {0};
    if (rc == 0 && (!inputs || !times)) rc = korch_cli_fail();
    if (rc == 0 && korch_verify_seeded_inputs(s.model.graph, 0, inputs) != KORCH_OK) rc = korch_cli_fail();
    if (rc == 0 && check) {
        reference = calloc((size_t)pg->n_outputs + 1, sizeof *reference);
        if (!reference || korch_reference_run(s.model.graph, inputs, reference) != KORCH_OK) rc = korch_cli_fail();
    }
    korch_cli_omp_note();
    for (int strat = 0; strat < KORCH_STRATEGY_COUNT && rc == 0; strat++) {
        korch_plan *plan = NULL;
        korch_executor *ex = NULL;
        if (korch_cli_orchestrate_solve(&args, &s, (korch_strategy)strat, &plan) != KORCH_OK ||
            korch_cli_orchestrate_finish_plan(&args, &s, plan) != KORCH_OK ||
            korch_executor_create(plan, pg, &s.profile, &ex) != KORCH_OK) {
            rc = korch_cli_fail();
        }
        outputs[strat] = calloc((size_t)pg->n_outputs + 1, sizeof *outputs[strat]);
        if (rc == 0 && !outputs[strat]) rc = korch_cli_fail();
        for (int i = 0; i < pg->n_outputs && rc == 0; i++)
            if (korch_tensor_alloc(&outputs[strat][i], pg->values[pg->outputs[i]].dtype,
                                   &pg->values[pg->outputs[i]].shape) != KORCH_OK)
                rc = korch_cli_fail();
        if (rc == 0 && korch_executor_run(ex, inputs, outputs[strat]) != KORCH_OK) rc = korch_cli_fail(); /* warm-up */
        for (long r = 0; r < runs && rc == 0; r++) {
            double t0 = korch_now_ms();
            if (korch_executor_run(ex, inputs, outputs[strat]) != KORCH_OK) rc = korch_cli_fail();
            times[r] = korch_now_ms() - t0;
        }
        if (rc == 0) {
            qsort(times, (size_t)runs, sizeof *times, cmp_double);
            measured[strat] = runs % 2 ? times[runs / 2] : 0.5 * (times[runs / 2 - 1] + times[runs / 2]);
            predicted[strat] = plan->predicted_ms;
            kernels[strat] = plan->n_kernels;
        }
        korch_executor_destroy(ex);
        korch_plan_free(plan);
    }
    if (rc == 0) {
        printf("\n%-9s %12s %13s %8s %10s %14s\n", "strategy", "measured ms", "predicted ms", "kernels", "meas/pred",
               check ? "vs reference" : "vs none");
        for (int strat = 0; strat < KORCH_STRATEGY_COUNT; strat++) {
            double diff = check ? max_rel_diff(outputs[strat], reference, pg->n_outputs)
                                : max_rel_diff(outputs[strat], outputs[KORCH_STRATEGY_NONE], pg->n_outputs);
            printf("%-9s %12.4f %13.4f %8d %10.3f %14.2e\n", korch_strategy_name((korch_strategy)strat),
                   measured[strat], predicted[strat], kernels[strat],
                   predicted[strat] > 0 ? measured[strat] / predicted[strat] : 0.0, diff);
        }
        printf("none_ms=%.4f greedy_ms=%.4f optimal_ms=%.4f speedup=%.3f\n", measured[KORCH_STRATEGY_NONE],
               measured[KORCH_STRATEGY_GREEDY], measured[KORCH_STRATEGY_OPTIMAL],
               measured[KORCH_STRATEGY_OPTIMAL] > 0 ? measured[KORCH_STRATEGY_GREEDY] / measured[KORCH_STRATEGY_OPTIMAL]
                                                    : 0.0);
    }
    for (int strat = 0; strat < KORCH_STRATEGY_COUNT; strat++)
        if (outputs[strat]) {
            for (int i = 0; i < pg->n_outputs; i++) korch_tensor_free(&outputs[strat][i]);
            free(outputs[strat]);
        }
    if (reference) {
        for (int i = 0; i < pg->n_outputs; i++) korch_tensor_free(&reference[i]);
        free(reference);
    }
    for (int i = 0; inputs && i < pg->n_inputs; i++) korch_tensor_free(&inputs[i]);
    free(inputs);
    free(times);
    korch_cli_orchestrate_end(&s);
    korch_cli_orchestrate_args_free(&args);
    return rc;
}
