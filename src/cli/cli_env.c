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

const korch_cli_env *korch_cli_env_get(void) {
    if (env_read) return &env;
    env_read = true;
    env.layout = KORCH_LAYOUT_DEFAULT;
    const char *layout = var("KORCH_LAYOUT");
    if (layout && !korch_layout_strategy_parse(layout, &env.layout))
        fprintf(stderr, "korch: warning: KORCH_LAYOUT=%s is neither nchw nor nhwc; using %s\n", layout,
                korch_layout_strategy_token(env.layout));
    return &env;
}
