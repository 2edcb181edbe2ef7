/* korch export PLAN -o DIR: the plan as standalone C (docs/export.md). */
#include <stdio.h>
#include <string.h>

#include "cli/cli.h"
#include "cli/cli_files.h"
#include "export/export.h"
#include "runtime/plan.h"

static void help(void) {
    printf("usage: korch export PLAN -o DIR\n\n"
           "Writes PLAN (made by 'korch optimize') as a folder that builds on its own:\n"
           "  model.c, model.h   the plan's kernels and their call sequence, behind an API\n"
           "                     shaped like korch's C API (load, sessions, zero-copy run)\n"
           "  model.weights      the constants (read at load time; header with a checksum)\n"
           "  model_run.c        a runner: --input NAME=FILE.npy, --output-dir DIR, --bench N\n"
           "  Makefile           builds libmodel.so and model_run (make CFLAGS_EXTRA=-Werror)\n"
           "The result needs libc, libm and libgomp (and libdnnl for oneDNN kernels), not\n"
           "korch. The plan's model must be unchanged since 'korch optimize'.\n\n"
           "A plan with shape buckets exports one bucket: the one --input-shape chooses\n"
           "(exported C runs one shape; a dispatcher over buckets is not written).\n\n"
           "  -o, --output DIR          the folder to write (created if missing)\n"
           "  --input-shape NAME=DIMS   the bucket to export, in a plan with shape buckets\n"
           "  -q, --quiet               no summary\n");
}

/* A plan with shape buckets: the bucket --input-shape names; without it, an
 * error listing the buckets and naming the option. */
static korch_status choose_bucket(korch_plan **plan, const char *plan_path, const korch_cli_shapes *shapes) {
    if ((*plan)->n_buckets == 0) {
        if (!shapes->count) return KORCH_OK;
        return korch_error(KORCH_ERR_INVALID_ARGUMENT,
                           "--input-shape chooses a shape bucket; plan \"%s\" has one shape (korch explain lists it)",
                           plan_path);
    }
    if (shapes->count) return korch_plan_bucket_choose(plan, plan_path, shapes->items, shapes->count);
    char list[4096] = "", one[1024];
    size_t used = 0;
    for (int b = 0; b < (*plan)->n_buckets && used < sizeof list; b++) {
        int w = snprintf(list + used, sizeof list - used, "%s%s", b ? ", " : "",
                         korch_plan_shapes_format((*plan)->buckets[b], one, sizeof one));
        if (w < 0) break;
        used += (size_t)w;
    }
    return korch_error(KORCH_ERR_UNSUPPORTED,
                       "plan \"%s\" holds %d shape buckets (%s); korch export writes one: choose it with "
                       "--input-shape NAME=DIMS (e.g. --input-shape %s)",
                       plan_path, (*plan)->n_buckets, list, korch_plan_shapes_format((*plan)->buckets[0], one, sizeof one));
}

static int export_main(int argc, char **argv, korch_cli_shapes *shapes) {
    const char *plan_path = NULL, *dir = NULL;
    bool quiet = false;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (korch_cli_is_help(a)) {
            help();
            return 0;
        } else if (strcmp(a, "-o") == 0 || strcmp(a, "--output") == 0) {
            if (!(dir = korch_cli_value(argc, argv, &i, "export"))) return 2;
        } else if (strcmp(a, "-q") == 0 || strcmp(a, "--quiet") == 0) {
            quiet = true;
        } else if (strcmp(a, "--input-shape") == 0) {
            const char *v = korch_cli_value(argc, argv, &i, "export");
            int rc = v ? korch_cli_shapes_add(shapes, v, "export") : 2;
            if (rc) return rc;
        } else if (a[0] == '-') {
            return korch_cli_usage_error("export", "unknown option %s", a);
        } else if (!plan_path) {
            plan_path = a;
        } else {
            return korch_cli_usage_error("export", "more than one plan given");
        }
    }
    if (!plan_path) return korch_cli_usage_error("export", "no plan given");
    if (!dir) return korch_cli_usage_error("export", "no output folder given (-o DIR)");
    if (korch_cli_expect_plan(plan_path, "export") != 0) return 1;
    /* every missing level, as run --output-dir does, before any work */
    if (korch_cli_make_output_dir("-o", dir) != 0) return 1;
    korch_plan *plan = NULL;
    if (korch_plan_load(plan_path, &plan) != KORCH_OK) return korch_cli_fail();
    if (choose_bucket(&plan, plan_path, shapes) != KORCH_OK) {
        korch_plan_free(plan);
        return korch_cli_fail();
    }
    korch_export_stats stats;
    korch_status st = korch_export_plan(plan, plan_path, dir, &stats);
    korch_plan_free(plan);
    if (st != KORCH_OK) return korch_cli_fail();
    if (!quiet) {
        char buf[300];
        printf("exported %d kernels (%d generated C, %d reference, %d oneDNN; %d functions) to %s\n", stats.kernels,
               stats.cgen, stats.ref, stats.dnnl, stats.functions, korch_printable(dir, buf, sizeof buf));
        printf("model.c %zu bytes, model.weights %llu bytes + 64-byte header, arena %llu bytes, model id %016llx\n",
               stats.source_bytes, (unsigned long long)stats.weights_bytes, (unsigned long long)stats.arena_bytes,
               (unsigned long long)stats.model_id);
        printf("build: make -C %s CFLAGS_EXTRA=-Werror\n", korch_printable(dir, buf, sizeof buf));
    }
    return 0;
}

int korch_cmd_export(int argc, char **argv) {
    korch_cli_shapes shapes = {0};
    int rc = export_main(argc, argv, &shapes);
    korch_cli_shapes_free(&shapes);
    return rc;
}
