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
    printf("usage: korch optimize MODEL -o PLAN [--db PATH] [--threads N] [--strategy S]\n"
           "                      [--budget SECONDS] [--input-shape NAME=DIMS]...\n\n"
           "Finds the fastest set of kernels for MODEL on this machine and writes it as a\n"
           "plan file (docs/plan-format.md) for 'korch run PLAN' and 'korch explain PLAN'.\n\n"
           "  -o, --output PLAN        the plan file to write\n"
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
    if (rc == 0) rc = korch_cli_expect_model(args.model, "optimize");
    if (rc == 0 && output && !args.dry_run) rc = korch_cli_check_output_file("-o", output);
    if (rc) {
        korch_cli_orchestrate_args_free(&args);
        return rc;
    }
    korch_cli_session session;
    korch_plan *plan = NULL;
    rc = korch_cli_orchestrate_begin(&args, strategy, &session);
    if (rc == 0 && args.dry_run) {
        korch_cli_orchestrate_end(&session);
        korch_cli_orchestrate_args_free(&args);
        return 0;
    }
    if (rc == 0 && korch_cli_orchestrate_solve(&args, &session, strategy, &plan) != KORCH_OK) rc = korch_cli_fail();
    /* records the model, writes the plan and says so (as korch_optimize does) */
    if (rc == 0 && korch_pipeline_write(&session, args.model, plan, output) != KORCH_OK) rc = korch_cli_fail();
    korch_plan_free(plan);
    korch_cli_orchestrate_end(&session);
    korch_cli_orchestrate_args_free(&args);
    return rc;
}
