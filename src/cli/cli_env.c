/* The environment, read in this one place (docs/cli.md, "Environment"):
 * the library takes every setting through its options structs, so a C API
 * caller's process environment never changes what korch does. The CLI turns
 * each KORCH_* variable into an option (korch_cli_env_profile) or, for the
 * test pin KORCH_PROFILE_STATE, into a profiling hook. tests/layers checks
 * that no file outside src/cli reads a KORCH_* variable. */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "profile/profile.h"

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

/* A whole positive number (the full text) up to max, else 0. */
static long long strict(const char *name, long long max) {
    const char *v = var(name);
    if (!v) return 0;
    char *end = NULL;
    long long x = strtoll(v, &end, 10);
    return end && *end == '\0' && x > 0 && x <= max ? x : 0;
}

/* KORCH_PROFILE_STATE=quiet|busy: the machine state given instead of
 * measured around profiles, so tests of whole commands do not depend on how
 * busy the machine is (docs/profiling.md, "Profile quality"). */
static void pinned_state(void *user, double *probe, double *wait) {
    bool busy = user != NULL;
    *probe = busy ? 2.0 : 1.0;
    *wait = busy ? 0.5 : 0.0;
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
    env.cc = var("KORCH_CC");
    env.cc_opt = var("KORCH_CC_OPT");
    env.cc_jobs = positive("KORCH_CC_JOBS");
    env.cg_stream_min_bytes = strict("KORCH_CG_STREAM_MIN_BYTES", (long long)1 << 62);
    /* anything but a whole number of MiB in 1..4096 leaves the scrub off */
    env.scrub_mib = (int)strict("KORCH_PROFILE_SCRUB_MB", KORCH_SCRUB_MAX_MIB);
    env.db_busy_ms = positive("KORCH_DB_BUSY_MS");
    env.dnnl_variants = var("KORCH_DNNL_VARIANTS");
    env.dnnl_log = var("KORCH_DNNL_LOG") != NULL;
    const char *state = var("KORCH_PROFILE_STATE");
    if (state && (strcmp(state, "quiet") == 0 || strcmp(state, "busy") == 0)) {
        korch_profile_hooks h = {.state = pinned_state, .user = strcmp(state, "busy") == 0 ? (void *)&env : NULL};
        korch_profile_set_hooks(&h);
    } else if (state) {
        fprintf(stderr, "korch: warning: KORCH_PROFILE_STATE=%s is neither quiet nor busy; ignored\n", state);
    }
    return &env;
}

void korch_cli_env_profile(korch_profile_options *o) {
    const korch_cli_env *e = korch_cli_env_get();
    o->tune_trials = e->tune_trials;
    o->tune_explore = e->tune_explore;
    o->tune_log = e->tune_log;
    o->busy_us = e->busy_us;
    o->cc = e->cc;
    o->cc_opt = e->cc_opt;
    o->cc_jobs = e->cc_jobs;
    o->cg_stream_min_bytes = e->cg_stream_min_bytes;
    o->scrub_mib = e->scrub_mib;
    o->db_busy_ms = e->db_busy_ms;
    o->dnnl_variants = e->dnnl_variants;
    o->dnnl_log = e->dnnl_log;
}
