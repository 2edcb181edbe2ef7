/* korch optimize: model -> candidates -> profiles -> choice -> plan file. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "cli/cli_files.h"
#include "cli/cli_orchestrate.h"

#ifdef _OPENMP
#include <omp.h>
#endif

static void help(void) {
    printf("usage: korch optimize MODEL|PLAN -o PLAN [--db PATH] [--threads N] [--strategy S]\n"
           "                      [--budget SECONDS] [--input-shape NAME=DIMS]... [--no-embed]\n\n"
           "Finds the fastest set of kernels for MODEL on this machine and writes it as a\n"
           "plan file (docs/plan-format.md) for 'korch run PLAN' and 'korch explain PLAN'.\n"
           "The plan carries the model's graph and weights: copied alone to another\n"
           "machine, it runs there. Given a plan instead of MODEL, optimises the plan's\n"
           "model again (for this machine, when the plan was made on another).\n\n"
           "  -o, --output PLAN        the plan file to write\n"
           "  --no-embed               name MODEL by path instead of carrying it (for huge\n"
           "                           models; the plan then needs MODEL, unchanged)\n"
           "  --strategy S             optimal (default): the binary linear program;\n"
           "                           greedy: TVM-style rule-based fusion;\n"
           "                           none: one kernel per primitive\n"
           "  --db PATH                profile database (default $XDG_CACHE_HOME/korch/profile.db)\n"
           "  --threads N              threads kernels are tuned and run with (default: all cores)\n"
           "  --budget SECONDS         bound on the total kernel tuning time\n"
           "  --input-shape NAME=DIMS  fix a symbolic input dimension\n");
    korch_cli_orchestrate_help();
}

int korch_cmd_optimize(int argc, char **argv) {
    korch_cli_orchestrate_args args;
    korch_cli_orchestrate_args_init(&args);
    const char *output = NULL;
    bool embed = true;
    korch_strategy strategy = KORCH_STRATEGY_OPTIMAL;
    int rc = 0;
    for (int i = 1; i < argc && rc == 0; i++) {
        const char *a = argv[i], *v = NULL;
        int used = 0;
        if (korch_cli_is_help(a)) {
            help();
            korch_cli_orchestrate_args_free(&args);
            return 0;
        } else if (strcmp(a, "-o") == 0 || strcmp(a, "--output") == 0) {
            if (!(output = korch_cli_value(argc, argv, &i, "optimize"))) rc = 2;
        } else if (strcmp(a, "--no-embed") == 0) {
            embed = false;
        } else if (strcmp(a, "--strategy") == 0) {
            if (!(v = korch_cli_value(argc, argv, &i, "optimize"))) rc = 2;
            else if (!korch_strategy_parse(v, &strategy))
                rc = korch_cli_usage_error("optimize", "--strategy expects none, greedy or optimal");
        } else if ((rc = korch_cli_orchestrate_option(&args, argc, argv, &i, "optimize", &used)) != 0 || used) {
            continue;
        } else if (a[0] == '-') {
            rc = korch_cli_usage_error("optimize", "unknown option %s", a);
        } else if (!args.model) {
            args.model = a;
        } else {
            rc = korch_cli_usage_error("optimize", "more than one model given");
        }
    }
    if (rc == 0 && !args.model) rc = korch_cli_usage_error("optimize", "no model given");
    if (rc == 0 && !output && !args.dry_run) rc = korch_cli_usage_error("optimize", "no output plan given (-o PLAN)");
    /* before any work: the model is a model, and the plan can be written */
    if (rc == 0) rc = korch_cli_expect_model_or_plan(args.model, "optimize");
    if (rc == 0 && output && !args.dry_run) rc = korch_cli_check_output_file("-o", output);
    if (rc) {
        korch_cli_orchestrate_args_free(&args);
        return rc;
    }
    double t0 = korch_now_ms();
    korch_cli_session session;
    korch_plan *plan = NULL;
    rc = korch_cli_orchestrate_begin(&args, strategy, &session);
    if (rc == 0 && args.dry_run) {
        korch_cli_orchestrate_end(&session);
        korch_cli_orchestrate_args_free(&args);
        return 0;
    }
    if (rc == 0 && korch_cli_orchestrate_solve(&args, &session, strategy, &plan) != KORCH_OK) rc = korch_cli_fail();
    if (rc == 0 && korch_cli_orchestrate_finish_plan(&args, &session, plan) != KORCH_OK) rc = korch_cli_fail();
    if (rc == 0 && korch_plan_write(plan, output, &session.model, args.model, embed) != KORCH_OK) rc = korch_cli_fail();
    if (rc == 0 && !args.quiet) {
        int fused = 0;
        for (int k = 0; k < plan->n_kernels; k++) fused += plan->kernels[k].n_nodes > 1;
        printf("plan: %s strategy, %d kernels (%d fused) for %d primitives, predicted %.4f ms", plan->strategy,
               plan->n_kernels, fused, session.model.pg->n_nodes, plan->predicted_ms);
        if (plan->measured_ms > 0) printf(", measured %.4f ms in place", plan->measured_ms);
        printf("; written to %s\n", output);
        printf("optimize time: %.1f s\n", (korch_now_ms() - t0) / 1e3);
    }
    korch_plan_free(plan);
    korch_cli_orchestrate_end(&session);
    korch_cli_orchestrate_args_free(&args);
    return rc;
}
