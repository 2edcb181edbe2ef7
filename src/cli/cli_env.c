/* The environment, read in this one place (docs/cli.md, "Environment"):
 * the library takes every setting through its options structs, so a C API
 * caller's process environment never changes what korch does. */
#include <stdio.h>
#include <stdlib.h>

#include "cli/cli.h"

static korch_cli_env env;
static bool env_read;

static const char *var(const char *name) {
    const char *v = getenv(name);
    return v && *v ? v : NULL;
}

/* A positive integer, or 0 (the library's default) when unset or not one. */
static int positive(const char *name) {
    const char *v = var(name);
    int x = v ? atoi(v) : 0;
    return x > 0 ? x : 0;
}

const korch_cli_env *korch_cli_env_get(void) {
    if (env_read) return &env;
    env_read = true;
    env.layout = KORCH_LAYOUT_DEFAULT;
    const char *layout = var("KORCH_LAYOUT");
    if (layout && !korch_layout_strategy_parse(layout, &env.layout))
        fprintf(stderr, "korch: warning: KORCH_LAYOUT=%s is neither nchw nor nhwc; using %s\n", layout,
                korch_layout_strategy_token(env.layout));
    env.tune_trials = positive("KORCH_TUNE_TRIALS");
    env.tune_explore = positive("KORCH_TUNE_EXPLORE");
    env.busy_us = positive("KORCH_BUSY_US");
    const char *log = var("KORCH_TUNE_LOG");
    if (log) env.tune_log = atoi(log) > 0 ? atoi(log) : -1;
    return &env;
}
