/* Export tests: export a plan into a folder, build it with the generated
 * Makefile (-Werror), run model_run on .npy inputs and read its outputs. */
#ifndef KORCH_TESTS_EXPORT_HARNESS_H
#define KORCH_TESTS_EXPORT_HARNESS_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "export/export.h"
#include "io/npy.h"

static inline int harness_sh(const char *fmt, const char *a, const char *b) {
    char cmd[2048];
    snprintf(cmd, sizeof cmd, fmt, a, b);
    return system(cmd);
}

/* Exports, builds (make CFLAGS_EXTRA=-Werror, output in DIR/build.log) and
 * runs DIR/model_run with inputs written as DIR/in<i>.npy; outputs[i] are
 * read from DIR/out/<output name>.npy (generated names: output<i>). Returns
 * a short reason on failure, NULL on success. */
static inline const char *harness_export_run(const korch_plan *plan, const korch_pgraph *pg, const char *dir,
                                             const korch_export_options *options, const korch_tensor *inputs,
                                             korch_tensor *outputs) {
    static char why[600];
    korch_export_stats stats;
    if (korch_export_write(plan, pg, dir, options, &stats) != KORCH_OK) {
        snprintf(why, sizeof why, "export: %s", korch_last_error());
        return why;
    }
    if (harness_sh("make -s -C %s CFLAGS_EXTRA=-Werror >%s/build.log 2>&1", dir, dir) != 0) {
        snprintf(why, sizeof why, "the export in %s does not build with -Werror (see build.log)", dir);
        return why;
    }
    char cmd[4096], path[1024];
    int n = snprintf(cmd, sizeof cmd, "%s/model_run --output-dir %s/out", dir, dir);
    for (int i = 0; i < pg->n_inputs; i++) {
        snprintf(path, sizeof path, "%s/in%d.npy", dir, i);
        if (korch_npy_write(path, &inputs[i]) != KORCH_OK) return "cannot write an input";
        n += snprintf(cmd + n, sizeof cmd - (size_t)n, " --input input%d=%s", i, path);
    }
    snprintf(cmd + n, sizeof cmd - (size_t)n, " >%s/run.log 2>&1", dir);
    if (system(cmd) != 0) {
        snprintf(why, sizeof why, "model_run failed in %s (see run.log)", dir);
        return why;
    }
    for (int i = 0; i < pg->n_outputs; i++) {
        snprintf(path, sizeof path, "%s/out/output%d.npy", dir, i);
        if (korch_npy_read(path, &outputs[i]) != KORCH_OK) {
            snprintf(why, sizeof why, "cannot read %.300s: %.280s", path, korch_last_error());
            return why;
        }
    }
    return NULL;
}

#endif
