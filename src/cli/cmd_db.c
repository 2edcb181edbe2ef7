/* korch db: look after the profile database (statistics, suspect rows,
 * pruning, clearing). The queries live in src/profile/db_admin.c; this file
 * parses the command line and works out which rows are this korch's and
 * this machine's. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/backend.h"
#include "cli/cli.h"
#include "profile/db_admin.h"
#include "verify/verify.h"

static void help(void) {
    printf("usage: korch db stats|check|prune|clear [--db PATH] [options]\n\n"
           "Looks after the profile database (docs/profiling.md, \"Profile quality\").\n\n"
           "  stats                    rows per table and machine, provisional counts, ages,\n"
           "                           spreads, the machine-state probe's idle references\n"
           "  check                    lists suspect rows: provisional (measured while the machine\n"
           "                           was disturbed), of unknown quality, huge spread,\n"
           "                           inconsistent with their own trial, damaged, verdicts of\n"
           "                           another korch version\n"
           "  prune                    deletes the rows check lists\n"
           "  clear                    deletes every row (the file stays)\n\n"
           "  --db PATH                the database (default $XDG_CACHE_HOME/korch/profile.db)\n"
           "  --limit N                check: rows listed (default 50; all are counted)\n"
           "  --older-than DAYS        prune: also rows measured more than DAYS ago\n"
           "  --dry-run                prune: count, delete nothing\n"
           "  --machine                clear: only this machine's rows (this CPU and ISA, any\n"
           "                           thread count, compiler or library version)\n");
}

/* The verification fingerprints this korch stores verdicts under
 * (korch_verify_fingerprint) for every backend and thread count.
 * tests/cli/test_db_cli.c checks that a verdict `korch optimize` stored is
 * not taken for a foreign one. */
#define MAX_THREADS 1024
static char **verdict_keys(int *n) {
    *n = 0;
    korch_profile_options build = {0}; /* the compiler and flags this environment builds with */
    korch_cli_env_profile(&build);
    char **keys = calloc((size_t)(KORCH_BACKEND_COUNT + 1) * MAX_THREADS, sizeof *keys);
    if (!keys) return NULL;
    for (int k = 0; k < KORCH_BACKEND_COUNT; k++) {
        char hash[33];
        for (int t = 1; t <= MAX_THREADS; t++) {
            if (korch_verify_fingerprint((korch_backend_kind)k, t, &build, hash) != KORCH_OK) continue;
            keys[*n] = strdup(hash);
            if (keys[*n]) (*n)++;
        }
    }
    /* remembered plan checks (verify/plan_verdict.c) carry all backends' fingerprints in one */
    for (int t = 1; t <= MAX_THREADS; t++) {
        char hash[65];
        if (!korch_plan_verdict_machine(t, &build, hash)) continue;
        keys[*n] = strdup(hash);
        if (keys[*n]) (*n)++;
    }
    return keys;
}

/* "cpu=<model>;isa=<flags>;": the part of every fingerprint that names this machine */
static bool machine_prefix(char *out, size_t size) {
    char hash[33], text[2048];
    if (korch_machine_fingerprint(1, "none", 0, hash, text, sizeof text) != KORCH_OK) return false;
    char *threads = strstr(text, ";threads=");
    if (!threads) return false;
    size_t len = (size_t)(threads - text) + 1;
    if (len >= size) return false;
    memcpy(out, text, len);
    out[len] = '\0';
    return true;
}

static bool parse_days(const char *text, double *out) {
    char *end = NULL;
    double v = strtod(text, &end);
    if (!*text || *end || !(v > 0) || v > 1e6) return false;
    *out = v;
    return true;
}

int korch_cmd_db(int argc, char **argv) {
    const char *sub = NULL, *db_path = NULL, *v = NULL;
    long limit = 50;
    double older = 0;
    bool dry_run = false, this_machine = false;
    int rc = 0;
    for (int i = 1; i < argc && rc == 0; i++) {
        const char *a = argv[i];
        if (korch_cli_is_help(a)) {
            help();
            return 0;
        } else if (strcmp(a, "--db") == 0) {
            if (!(db_path = korch_cli_value(argc, argv, &i, "db"))) rc = 2;
        } else if (strcmp(a, "--limit") == 0) {
            if (!(v = korch_cli_value(argc, argv, &i, "db"))) rc = 2;
            else if (!korch_cli_parse_int(v, 1, 100000000L, &limit))
                rc = korch_cli_usage_error("db", "--limit expects a positive count");
        } else if (strcmp(a, "--older-than") == 0) {
            if (!(v = korch_cli_value(argc, argv, &i, "db"))) rc = 2;
            else if (!parse_days(v, &older)) rc = korch_cli_usage_error("db", "--older-than expects days (> 0)");
        } else if (strcmp(a, "--dry-run") == 0) {
            dry_run = true;
        } else if (strcmp(a, "--machine") == 0) {
            this_machine = true;
        } else if (a[0] == '-') {
            rc = korch_cli_usage_error("db", "unknown option %s", a);
        } else if (!sub) {
            sub = a;
        } else {
            rc = korch_cli_usage_error("db", "one subcommand only (got %s after %s)", a, sub);
        }
    }
    if (rc) return rc;
    if (!sub) return korch_cli_usage_error("db", "no subcommand (stats, check, prune or clear)");
    bool stats = strcmp(sub, "stats") == 0, check = strcmp(sub, "check") == 0, prune = strcmp(sub, "prune") == 0,
         clear = strcmp(sub, "clear") == 0;
    if (!stats && !check && !prune && !clear)
        return korch_cli_usage_error("db", "unknown subcommand \"%.40s\" (stats, check, prune or clear)", sub);
    if (limit != 50 && !check) return korch_cli_usage_error("db", "--limit is a check option");
    if ((older > 0 || dry_run) && !prune) return korch_cli_usage_error("db", "--older-than and --dry-run are prune options");
    if (this_machine && !clear) return korch_cli_usage_error("db", "--machine is a clear option");

    korch_profile_db *db = NULL;
    if (korch_db_admin_open(db_path, korch_cli_env_get()->db_busy_ms, &db) != KORCH_OK) {
        char buf[600];
        fprintf(stderr, "korch: error: %s%s\n", db_path ? "--db: " : "",
                korch_printable(korch_last_error(), buf, sizeof buf));
        return 1;
    }
    korch_db_admin_options o = {.limit = (int)limit, .older_than_days = older};
    int n_keys = 0;
    char **keys = NULL, prefix[2048];
    if (check || prune || clear) {
        keys = verdict_keys(&n_keys);
        if (!keys) rc = korch_cli_fail();
        o.verdict_keys = (const char *const *)keys;
        o.n_verdict_keys = n_keys;
    }
    if (rc == 0 && this_machine) {
        if (!machine_prefix(prefix, sizeof prefix)) rc = korch_cli_fail();
        o.machine_prefix = prefix;
    }
    long n = 0;
    korch_status st = KORCH_OK;
    if (rc == 0) {
        if (stats) st = korch_db_stats(db, stdout);
        else if (check) st = korch_db_check(db, &o, stdout, &n);
        else if (prune) st = korch_db_prune(db, &o, dry_run, stdout, &n);
        else st = korch_db_clear(db, &o, stdout, &n);
        if (st != KORCH_OK) rc = korch_cli_fail();
    }
    for (int i = 0; keys && i < n_keys; i++) free(keys[i]);
    free(keys);
    korch_profile_db_close(db);
    return rc;
}
