/* Profile quality (docs/profiling.md, "Profile quality"): the rules, with a
 * fake timer and a fake machine state, so that nothing here depends on how
 * fast or how busy the machine is.
 *
 * - the timer's statistics (median, interquartile range) on given run times;
 * - a measurement on a disturbed machine is provisional, on a quiet one clean;
 * - the database: a provisional row never replaces a clean one, a clean one
 *   replaces anything; a provisional row reads as absent while the machine is
 *   quiet and is answered while it is busy; --reprofile's fresh_after;
 *   a database of an older korch gains the columns, keeps its rows, and they
 *   read as provisional;
 * - every backend end to end (reference, generated C tuned and quick,
 *   oneDNN): profiled under load -> provisional and reused while the load
 *   lasts; the first quiet call measures it again and replaces it; a later
 *   busy measurement does not replace the clean one; --reprofile measures
 *   again whatever is stored. */
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "backend/backend.h"
#include "profile/profile.h"
#include "test.h"

static char dir[] = "/tmp/korch-quality-XXXXXX";

/* ---- the fake machine ------------------------------------------------------ */

typedef struct fake {
    bool busy;
    double idle_ms;      /* what every timed run takes on the quiet machine */
    double slowdown;     /* ... and how much longer under load */
    const double *cycle; /* or: these run times in turn (NULL: idle_ms) */
    int n_cycle, next;
    double probe, wait; /* when probe > 0: the machine state itself, whatever busy says */
} fake;

static double fake_run_ms(void *user, double measured_ms) {
    (void)measured_ms;
    fake *f = user;
    if (f->cycle) return f->cycle[f->next++ % f->n_cycle];
    return f->busy ? f->idle_ms * f->slowdown : f->idle_ms;
}

static void fake_state(void *user, double *probe, double *wait) {
    fake *f = user;
    *probe = f->probe > 0 ? f->probe : f->busy ? 1.8 : 1.02;
    *wait = f->probe > 0 ? f->wait : f->busy ? 0.45 : 0.01;
}

static void install(fake *f) {
    korch_profile_hooks h = {.run_ms = fake_run_ms, .state = fake_state, .user = f};
    korch_profile_set_hooks(&h);
}

static korch_status nothing(void *ctx, int iteration) {
    (void)ctx;
    (void)iteration;
    return KORCH_OK;
}

/* ---- the timer -------------------------------------------------------------- */

static void test_timer_statistics(void) {
    /* 8 runs: sorted 1..8, median 4.5, quartiles at 2.75 and 6.25 */
    static const double runs[] = {5, 1, 8, 3, 7, 2, 6, 4};
    fake f = {.cycle = runs, .n_cycle = 8};
    install(&f);
    korch_timer_options o = {.warmup_runs = 0, .min_repeats = 8, .max_repeats = 8, .target_ms = 0};
    korch_timing t;
    CHECK_OK(korch_profile_time(nothing, NULL, &o, &t));
    CHECK_MSG(t.repeats == 8 && t.median_ms == 4.5 && t.min_ms == 1 && t.max_ms == 8, "median %g of %d", t.median_ms,
              t.repeats);
    CHECK_MSG(t.quality.iqr_ms == 3.5, "iqr %g, want 6.25 - 2.75", t.quality.iqr_ms);
    CHECK(!t.quality.provisional && t.quality.wait == -1); /* no monitor: not assessed */
    korch_profile_set_hooks(NULL);
}

static void test_monitor_verdicts(void) {
    fake f = {.idle_ms = 1.0, .slowdown = 3.0};
    install(&f);
    korch_profile_monitor *m = NULL;
    CHECK_OK(korch_profile_monitor_open(NULL, 2, &m));
    korch_timer_options o = {.warmup_runs = 1, .min_repeats = 5, .max_repeats = 5, .monitor = m};
    korch_timing t;
    CHECK_OK(korch_profile_time(nothing, NULL, &o, &t));
    CHECK(!t.quality.provisional && t.median_ms == 1.0 && t.quality.probe == 1.02 && t.quality.wait == 0.01);
    CHECK(korch_profile_monitor_quiet(m));
    f.busy = true;
    CHECK_OK(korch_profile_time(nothing, NULL, &o, &t));
    CHECK(t.quality.provisional && t.median_ms == 3.0);
    CHECK(!korch_profile_monitor_quiet(m));
    /* the thresholds, one signal at a time */
    CHECK(!korch_profile_disturbed(KORCH_PROBE_LIMIT, KORCH_WAIT_LIMIT));
    CHECK(korch_profile_disturbed(KORCH_PROBE_LIMIT * 1.01, 0));
    CHECK(korch_profile_disturbed(1.0, KORCH_WAIT_LIMIT + 0.01));
    CHECK(!korch_profile_disturbed(0, -1)); /* nothing known: not disturbed */
    korch_profile_monitor_close(m);
    korch_profile_set_hooks(NULL);
}

/* ---- the database rules ----------------------------------------------------- */

static korch_profile_record row(double ms, bool provisional) {
    korch_profile_record r = {.latency_ms = ms, .spread_ms = ms / 10, .default_ms = ms, .trials = 1,
                              .quality = {.iqr_ms = ms / 20, .probe = provisional ? 1.8 : 1.0,
                                          .wait = provisional ? 0.4 : 0.0, .provisional = provisional}};
    snprintf(r.schedule, sizeof r.schedule, "s1");
    return r;
}

static void test_database_rules(void) {
    char path[300];
    snprintf(path, sizeof path, "%s/rules.db", dir);
    korch_profile_db *db = NULL;
    CHECK_OK(korch_profile_db_open(path, &db));
    if (!db) return;
    korch_profile_record got, r;
    bool found = false;
    /* a clean row is not replaced by a provisional measurement ... */
    r = row(1.0, false);
    CHECK_OK(korch_profile_db_put_best(db, "cgen", "A", "m", &r));
    r = row(3.0, true);
    CHECK_OK(korch_profile_db_put_best(db, "cgen", "A", "m", &r));
    CHECK_OK(korch_profile_db_get_best(db, "cgen", "A", "m", &got, &found));
    CHECK(found && got.latency_ms == 1.0 && !got.quality.provisional && got.quality.iqr_ms == 0.05);
    /* ... a provisional one is, by a clean one */
    r = row(3.0, true);
    CHECK_OK(korch_profile_db_put_best(db, "cgen", "B", "m", &r));
    CHECK_OK(korch_profile_db_get_best(db, "cgen", "B", "m", &got, &found));
    CHECK(found && got.latency_ms == 3.0 && got.quality.provisional && got.quality.wait == 0.4);
    r = row(1.5, false);
    CHECK_OK(korch_profile_db_put_best(db, "cgen", "B", "m", &r));
    CHECK_OK(korch_profile_db_get_best(db, "cgen", "B", "m", &got, &found));
    CHECK(found && got.latency_ms == 1.5 && !got.quality.provisional);
    /* the same for trials */
    r = row(2.0, false);
    CHECK_OK(korch_profile_db_put_trial_record(db, "cgen", "A", "m", &r));
    r = row(6.0, true);
    CHECK_OK(korch_profile_db_put_trial_record(db, "cgen", "A", "m", &r));
    CHECK_OK(korch_profile_db_get_trial_record(db, "cgen", "A", "s1", "m", &got, &found));
    CHECK(found && got.latency_ms == 2.0 && !got.quality.provisional && got.created > 1.6e9);

    /* with a monitor: a provisional row reads as absent while the machine is
     * quiet (measure it again), and is answered while it is busy */
    r = row(3.0, true);
    CHECK_OK(korch_profile_db_put_best(db, "cgen", "P", "m", &r));
    fake f = {.busy = true};
    install(&f);
    korch_profile_monitor *m = NULL;
    korch_profile_db_reuse before = korch_profile_db_reuse_counts(db);
    CHECK_OK(korch_profile_db_watch(db, 2, 0, &m));
    CHECK_OK(korch_profile_db_get_best(db, "cgen", "P", "m", &got, &found));
    CHECK(found && got.quality.provisional);
    f.busy = false;
    CHECK_OK(korch_profile_db_get_best(db, "cgen", "P", "m", &got, &found));
    CHECK(!found);
    CHECK_OK(korch_profile_db_get_best(db, "cgen", "A", "m", &got, &found)); /* clean: always answered */
    CHECK(found);
    korch_profile_db_reuse u = korch_profile_db_reuse_counts(db);
    CHECK(u.provisional_used == before.provisional_used + 1 && u.remeasure == before.remeasure + 1 && u.stale == 0);
    /* still disturbed, but markedly quieter than when the row was measured
     * (probe 1.8, wait 0.4): measured again; about as busy: answered */
    r = row(3.0, true);
    CHECK_OK(korch_profile_db_put_best(db, "cgen", "Q", "m", &r));
    f = (fake){.probe = 1.3, .wait = 0.3};
    CHECK(korch_profile_disturbed(1.3, 0.3));
    CHECK_OK(korch_profile_db_get_best(db, "cgen", "Q", "m", &got, &found));
    CHECK_MSG(!found, "a row measured at probe 1.8 answered at probe 1.3");
    f = (fake){.probe = 1.6, .wait = 0.3};
    CHECK_OK(korch_profile_db_get_best(db, "cgen", "Q", "m", &got, &found));
    CHECK_MSG(found, "a row measured at probe 1.8, wait 0.4 not answered at probe 1.6, wait 0.3");
    f = (fake){.probe = 1.7, .wait = 0.05};
    CHECK_OK(korch_profile_db_get_best(db, "cgen", "Q", "m", &got, &found));
    CHECK_MSG(!found, "a row measured waiting 40%% answered when nothing waits and the probe is no worse");
    u = korch_profile_db_reuse_counts(db);
    CHECK(u.provisional_used == before.provisional_used + 2 && u.remeasure == before.remeasure + 3);
    korch_profile_db_unwatch(db, m);
    korch_profile_set_hooks(NULL);

    /* fresh_after (--reprofile): older rows read as absent, and any new
     * measurement replaces them, even a provisional one a clean row */
    korch_profile_db_set_fresh_after(db, korch_wall_s() + 1);
    CHECK_OK(korch_profile_db_get_best(db, "cgen", "A", "m", &got, &found));
    CHECK(!found && korch_profile_db_reuse_counts(db).stale == 1);
    r = row(4.0, true);
    CHECK_OK(korch_profile_db_put_best(db, "cgen", "A", "m", &r));
    korch_profile_db_set_fresh_after(db, 0);
    CHECK_OK(korch_profile_db_get_best(db, "cgen", "A", "m", &got, &found));
    CHECK(found && got.latency_ms == 4.0 && got.quality.provisional);

    /* the probe reference keeps the fastest */
    CHECK_OK(korch_profile_db_put_probe(db, "probe-m", 0.6, 1));
    CHECK_OK(korch_profile_db_put_probe(db, "probe-m", 0.5, 2));
    CHECK_OK(korch_profile_db_put_probe(db, "probe-m", 0.7, 1));
    double idle = 0;
    int samples = 0;
    CHECK_OK(korch_profile_db_get_probe(db, "probe-m", &idle, &samples, &found));
    CHECK(found && idle == 0.5 && samples == 4);
    korch_profile_db_close(db);
}

/* A database written by a korch before profile quality: the old tables. */
static void test_old_database(void) {
    char path[300];
    snprintf(path, sizeof path, "%s/old.db", dir);
    sqlite3 *raw = NULL;
    CHECK(sqlite3_open(path, &raw) == SQLITE_OK);
    CHECK(sqlite3_exec(raw,
                       "CREATE TABLE meta(key TEXT PRIMARY KEY, value TEXT);"
                       "CREATE TABLE machines(machine TEXT PRIMARY KEY, description TEXT);"
                       "CREATE TABLE trials(backend TEXT, sig TEXT, schedule TEXT, machine TEXT, latency_ms REAL,"
                       " spread_ms REAL, created INTEGER, PRIMARY KEY(backend, sig, schedule, machine));"
                       "CREATE TABLE best(backend TEXT, sig TEXT, machine TEXT, schedule TEXT, latency_ms REAL,"
                       " spread_ms REAL, default_ms REAL, trials INTEGER, created INTEGER,"
                       " PRIMARY KEY(backend, sig, machine));"
                       "INSERT INTO meta VALUES('schema_version', '1');"
                       "INSERT INTO best VALUES('cgen', 'old', 'm', 's1', 12.5, 1.0, 13.0, 5, 1700000000);"
                       "INSERT INTO trials VALUES('cgen', 'old', 's1', 'm', 12.5, 1.0, 1700000000);",
                       NULL, NULL, NULL) == SQLITE_OK);
    sqlite3_close(raw);
    korch_profile_db *db = NULL;
    CHECK_OK(korch_profile_db_open(path, &db)); /* migrated in place, not moved aside */
    char aside[320];
    snprintf(aside, sizeof aside, "%s.corrupt", path);
    CHECK(access(aside, F_OK) != 0);
    if (!db) return;
    korch_profile_record got;
    bool found = false;
    CHECK_OK(korch_profile_db_get_best(db, "cgen", "old", "m", &got, &found));
    CHECK(found && got.latency_ms == 12.5 && got.quality.provisional && got.created == 1700000000);
    /* the old row is provisional: a clean measurement replaces it */
    korch_profile_record r = row(4.0, false);
    CHECK_OK(korch_profile_db_put_best(db, "cgen", "old", "m", &r));
    CHECK_OK(korch_profile_db_get_best(db, "cgen", "old", "m", &got, &found));
    CHECK(found && got.latency_ms == 4.0 && !got.quality.provisional);
    CHECK_OK(korch_profile_db_get_trial_record(db, "cgen", "old", "s1", "m", &got, &found));
    CHECK(found && got.quality.provisional);
    korch_profile_db_close(db);
}

/* ---- a backend end to end ------------------------------------------------ */

/* The same sequence for every backend: the rules live in the database
 * layer and the timer, and each backend must route its measurements
 * through them (trials, best rows and quick schedules alike). */
static void backend_rules(korch_backend_kind kind, const korch_kernel_spec *spec, bool quick) {
    char path[300], cache[300];
    snprintf(path, sizeof path, "%s/%s%s.db", dir, korch_backend_name(kind), quick ? "-quick" : "");
    snprintf(cache, sizeof cache, "%s/kernels", dir);
    /* the rules, not the tuner: few schedules, quietly */
    korch_profile_options o = {.threads = 2, .db_path = path, .cache_dir = cache, .quick = quick, .tune_trials = 4,
                               .tune_log = -1};
    fake f = {.busy = true, .idle_ms = 0.25, .slowdown = 4.0};
    install(&f);
    const char *name = korch_backend_name(kind);
    korch_profile_result r;
    /* under load: measured 4x too slow, provisional */
    CHECK_OK(korch_backend_profile(kind, spec, 1, &o, &r));
    CHECK_MSG(r.status == KORCH_OK && !r.from_database && r.provisional && r.latency_ms == 1.0,
              "%s busy: status %d, %g ms, from db %d, provisional %d (%s)", name, (int)r.status, r.latency_ms,
              r.from_database, r.provisional, r.reason);
    /* still under load: reused as it is (measuring again would not be better) */
    CHECK_OK(korch_backend_profile(kind, spec, 1, &o, &r));
    CHECK_MSG(r.from_database && r.provisional && r.latency_ms == 1.0, "%s busy again", name);
    /* quiet: measured again, and the clean profile replaces the poisoned one */
    f.busy = false;
    CHECK_OK(korch_backend_profile(kind, spec, 1, &o, &r));
    CHECK_MSG(!r.from_database && !r.provisional && r.latency_ms == 0.25, "%s quiet: %g ms, from db %d, provisional %d",
              name, r.latency_ms, r.from_database, r.provisional);
    CHECK_OK(korch_backend_profile(kind, spec, 1, &o, &r));
    CHECK_MSG(r.from_database && !r.provisional && r.latency_ms == 0.25, "%s quiet again", name);
    /* busy again: the clean profile is answered, never re-measured under load */
    f.busy = true;
    CHECK_OK(korch_backend_profile(kind, spec, 1, &o, &r));
    CHECK_MSG(r.from_database && !r.provisional && r.latency_ms == 0.25, "%s busy after quiet", name);
    /* --reprofile: measured again even though clean; under load the new
     * (provisional) measurement replaces it, as asked */
    o.fresh_after = korch_wall_s() + 1;
    CHECK_OK(korch_backend_profile(kind, spec, 1, &o, &r));
    CHECK_MSG(!r.from_database && r.provisional && r.latency_ms == 1.0, "%s reprofile", name);
    o.fresh_after = 0;
    f.busy = false;
    CHECK_OK(korch_backend_profile(kind, spec, 1, &o, &r)); /* and quiet fixes it again */
    CHECK_MSG(!r.from_database && !r.provisional && r.latency_ms == 0.25, "%s quiet after reprofile", name);
    korch_profile_set_hooks(NULL);
}

static void test_backend_rules(void) {
    korch_pgraph *pg = NULL;
    CHECK_OK(korch_pgraph_create(NULL, &pg));
    if (!pg) return;
    int64_t dims[2] = {16, 16};
    korch_shape s = korch_shape_make(2, dims);
    int x = korch_pgraph_add_input(pg, KORCH_DTYPE_FLOAT32, &s), w = korch_pgraph_add_input(pg, KORCH_DTYPE_FLOAT32, &s);
    int y = korch_pgraph_elementwise(pg, KORCH_EW_RELU, 1, &x, 0, 0, KORCH_DTYPE_UNDEFINED);
    korch_prim_linear mm = {.op = KORCH_LINEAR_MATMUL};
    int z = korch_pgraph_linear(pg, &mm, x, w);
    korch_pgraph_add_output(pg, y);
    korch_pgraph_add_output(pg, z);
    int relu = pg->values[y].producer, matmul = pg->values[z].producer, xw[2] = {x, w};
    korch_kernel_spec ew = {.pg = pg, .n_nodes = 1, .nodes = &relu, .n_inputs = 1, .inputs = &x, .n_outputs = 1,
                            .outputs = &pg->outputs[0]};
    korch_kernel_spec lin = {.pg = pg, .n_nodes = 1, .nodes = &matmul, .n_inputs = 2, .inputs = xw, .n_outputs = 1,
                             .outputs = &pg->outputs[1]};
    backend_rules(KORCH_BACKEND_REF, &ew, false);
    backend_rules(KORCH_BACKEND_CGEN, &ew, false); /* tuned: trials and the best row */
    backend_rules(KORCH_BACKEND_CGEN, &ew, true);  /* quick: the default schedule's trial */
    backend_rules(KORCH_BACKEND_DNNL, &lin, false);
    korch_pgraph_free(pg);
}

int main(void) {
    if (!mkdtemp(dir)) return 1;
    test_timer_statistics();
    test_monitor_verdicts();
    test_database_rules();
    test_old_database();
    test_backend_rules();
    if (test_failures == 0) {
        char cmd[400];
        snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
        if (system(cmd) != 0) printf("could not remove %s\n", dir);
    }
    TEST_MAIN_END();
}
