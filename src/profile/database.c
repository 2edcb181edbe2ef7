/* The profile database (SQLite): measured latencies keyed by backend, kernel
 * signature, schedule and machine fingerprint, so identical kernels are
 * tuned once across models and runs.
 *
 *   trials(backend, sig, schedule, machine) -> latency, spread
 *   best(backend, sig, machine)             -> schedule, latency, spread,
 *                                              default latency, trials
 *   machines(machine)                       -> readable fingerprint
 *   verdicts(backend, sig, schedule, machine) -> verified / wrong, worst
 *                                              error, detail (src/verify;
 *                                              machine: the verification
 *                                              fingerprint)
 *
 * WAL mode and a busy timeout let several korch processes share one file.
 * Failure policy: a file that is not a database or is corrupt is moved aside
 * and rebuilt (the data is only a cache of measurements); a read-only file is
 * used for lookups only; a lock held past the timeout is an error. A bad
 * database can cost time, never correctness: it holds latencies and
 * schedules, and every schedule is re-validated when a kernel is built. */
#include <errno.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "profile/profile.h"

#define SCHEMA_VERSION "1"

struct korch_profile_db {
    sqlite3 *db;
    bool readonly;
    bool has_quality; /* trials and best have the quality columns (db_quality.c) */
    korch_profile_monitor *monitor;
    double fresh_after;
    korch_profile_db_reuse reuse;
    char path[4096];
};

#include "profile/db_internal.h"

static const char *const schema =
    "CREATE TABLE IF NOT EXISTS meta(key TEXT PRIMARY KEY, value TEXT);"
    "CREATE TABLE IF NOT EXISTS machines(machine TEXT PRIMARY KEY, description TEXT);"
    "CREATE TABLE IF NOT EXISTS trials(backend TEXT, sig TEXT, schedule TEXT, machine TEXT, latency_ms REAL,"
    " spread_ms REAL, created INTEGER, PRIMARY KEY(backend, sig, schedule, machine));"
    "CREATE TABLE IF NOT EXISTS best(backend TEXT, sig TEXT, machine TEXT, schedule TEXT, latency_ms REAL,"
    " spread_ms REAL, default_ms REAL, trials INTEGER, created INTEGER, PRIMARY KEY(backend, sig, machine));"
    "CREATE TABLE IF NOT EXISTS verdicts(backend TEXT, sig TEXT, schedule TEXT, machine TEXT, verdict TEXT,"
    " worst REAL, max_abs REAL, detail TEXT, created INTEGER, PRIMARY KEY(backend, sig, schedule, machine));"
    "INSERT OR IGNORE INTO meta VALUES('schema_version', '" SCHEMA_VERSION "');";

static korch_status default_path(char *buf, size_t size) {
    const char *xdg = getenv("XDG_CACHE_HOME"), *home = getenv("HOME");
    char dir[4096];
    if (xdg && *xdg) snprintf(dir, sizeof dir, "%s/korch", xdg);
    else if (home && *home) snprintf(dir, sizeof dir, "%s/.cache/korch", home);
    else return korch_error(KORCH_ERR_IO, "no profile database location: set XDG_CACHE_HOME or HOME, or pass --db");
    /* create the two levels (…/korch and its parent) */
    char parent[4096];
    snprintf(parent, sizeof parent, "%s", dir);
    char *slash = strrchr(parent, '/');
    if (slash && slash != parent) {
        *slash = '\0';
        mkdir(parent, 0755);
    }
    if (mkdir(dir, 0755) != 0 && errno != EEXIST)
        return korch_error(KORCH_ERR_IO, "cannot create %s: %s", dir, strerror(errno));
    if (snprintf(buf, size, "%s/profile.db", dir) >= (int)size) return korch_error(KORCH_ERR_IO, "path too long");
    return KORCH_OK;
}

/* Opens and checks; returns the SQLite result code of the first failure. */
static int try_open(korch_profile_db *p, bool readonly) {
    int flags = readonly ? SQLITE_OPEN_READONLY : SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE;
    int rc = sqlite3_open_v2(p->path, &p->db, flags, NULL);
    if (rc != SQLITE_OK) return rc;
    /* KORCH_DB_BUSY_MS shortens the wait (tests) */
    const char *busy = getenv("KORCH_DB_BUSY_MS");
    int busy_ms = busy && atoi(busy) > 0 ? atoi(busy) : 10000;
    sqlite3_busy_timeout(p->db, busy_ms);
    p->readonly = readonly || sqlite3_db_readonly(p->db, "main") == 1;
    /* touching the schema detects "not a database" and most corruption */
    rc = sqlite3_exec(p->db, "SELECT count(*) FROM sqlite_master;", NULL, NULL, NULL);
    if (rc != SQLITE_OK) return rc;
    if (!p->readonly) {
        rc = sqlite3_exec(p->db, "PRAGMA journal_mode=WAL;", NULL, NULL, NULL);
        if (rc == SQLITE_OK) rc = sqlite3_exec(p->db, schema, NULL, NULL, NULL);
        if (rc == SQLITE_OK) rc = korch_profile_db_migrate(p->db);
        if (rc != SQLITE_OK) return rc;
    }
    p->has_quality = korch_profile_db_has_quality(p->db);
    sqlite3_stmt *st = NULL;
    rc = sqlite3_prepare_v2(p->db, "SELECT value FROM meta WHERE key='schema_version';", -1, &st, NULL);
    if (rc != SQLITE_OK) return rc;
    rc = sqlite3_step(st);
    if (rc == SQLITE_ROW && strcmp((const char *)sqlite3_column_text(st, 0), SCHEMA_VERSION) != 0) rc = SQLITE_MISMATCH;
    else rc = (rc == SQLITE_ROW || rc == SQLITE_DONE) ? SQLITE_OK : rc;
    sqlite3_finalize(st);
    return rc;
}

static void close_db(korch_profile_db *p) {
    if (p->db) sqlite3_close_v2(p->db);
    p->db = NULL;
}

korch_status korch_profile_db_open(const char *path, korch_profile_db **out) {
    *out = NULL;
    korch_profile_db *p = calloc(1, sizeof *p);
    if (!p) return korch_error(KORCH_ERR_OUT_OF_MEMORY, "profile database: out of memory");
    korch_status st = KORCH_OK;
    if (path && *path) {
        if (snprintf(p->path, sizeof p->path, "%s", path) >= (int)sizeof p->path)
            st = korch_error(KORCH_ERR_IO, "profile database path too long");
    } else {
        st = default_path(p->path, sizeof p->path);
    }
    if (st != KORCH_OK) {
        free(p);
        return st;
    }
    int rc = try_open(p, false);
    if (rc == SQLITE_READONLY || rc == SQLITE_CANTOPEN) {
        close_db(p);
        if (access(p->path, F_OK) == 0 && try_open(p, true) == SQLITE_OK) rc = SQLITE_OK;
    }
    if (rc == SQLITE_NOTADB || rc == SQLITE_CORRUPT || rc == SQLITE_MISMATCH) {
        close_db(p);
        char aside[4200];
        snprintf(aside, sizeof aside, "%s.corrupt", p->path);
        fprintf(stderr, "korch: warning: profile database %s is %s; moved to %s and starting a new one\n", p->path,
                rc == SQLITE_MISMATCH ? "of another schema version" : "corrupt", aside);
        if (rename(p->path, aside) != 0) unlink(p->path);
        char side[4200];
        snprintf(side, sizeof side, "%s-wal", p->path);
        unlink(side);
        snprintf(side, sizeof side, "%s-shm", p->path);
        unlink(side);
        rc = try_open(p, false);
    }
    if (rc != SQLITE_OK) {
        if (rc == SQLITE_BUSY || rc == SQLITE_LOCKED)
            st = korch_error(KORCH_ERR_IO, "profile database %s is locked by another process (gave up after the busy timeout)", p->path);
        else
            st = korch_error(KORCH_ERR_IO, "cannot open profile database %s: %s", p->path,
                             p->db ? sqlite3_errmsg(p->db) : sqlite3_errstr(rc));
        close_db(p);
        free(p);
        return st;
    }
    if (p->readonly)
        fprintf(stderr, "korch: warning: profile database %s is read-only; new measurements will not be saved\n", p->path);
    *out = p;
    return KORCH_OK;
}

void korch_profile_db_close(korch_profile_db *db) {
    if (!db) return;
    close_db(db);
    free(db);
}

const char *korch_profile_db_path(const korch_profile_db *db) { return db->path; }
bool korch_profile_db_readonly(const korch_profile_db *db) { return db->readonly; }

static korch_status sql_error(korch_profile_db *db, const char *what) {
    return korch_error(KORCH_ERR_IO, "profile database %s: %s: %s", db->path, what, sqlite3_errmsg(db->db));
}

static korch_status exec(korch_profile_db *db, const char *sql) {
    if (db->readonly) return KORCH_OK;
    if (sqlite3_exec(db->db, sql, NULL, NULL, NULL) != SQLITE_OK) return sql_error(db, sql);
    return KORCH_OK;
}

korch_status korch_profile_db_begin(korch_profile_db *db) { return exec(db, "BEGIN IMMEDIATE;"); }
korch_status korch_profile_db_commit(korch_profile_db *db) { return exec(db, "COMMIT;"); }

/* Binds text parameters 1..n, steps once. */
static korch_status run(korch_profile_db *db, const char *sql, int n, const char *const *text, int nd,
                        const double *dbl, sqlite3_stmt **keep) {
    sqlite3_stmt *st = NULL;
    if (sqlite3_prepare_v2(db->db, sql, -1, &st, NULL) != SQLITE_OK) return sql_error(db, "prepare");
    for (int i = 0; i < n; i++) sqlite3_bind_text(st, i + 1, text[i], -1, SQLITE_TRANSIENT);
    for (int i = 0; i < nd; i++) sqlite3_bind_double(st, n + i + 1, dbl[i]);
    int rc = sqlite3_step(st);
    if (rc != SQLITE_ROW && rc != SQLITE_DONE) {
        korch_status s = sql_error(db, "query");
        sqlite3_finalize(st);
        return s;
    }
    if (keep && rc == SQLITE_ROW) {
        *keep = st;
        return KORCH_OK;
    }
    if (keep) *keep = NULL;
    sqlite3_finalize(st);
    return KORCH_OK;
}

sqlite3 *korch_profile_db_sqlite(korch_profile_db *db) { return db->db; }

void korch_profile_db_set_monitor(korch_profile_db *db, korch_profile_monitor *m) { db->monitor = m; }
void korch_profile_db_set_fresh_after(korch_profile_db *db, double unix_s) { db->fresh_after = unix_s; }
korch_profile_db_reuse korch_profile_db_reuse_counts(const korch_profile_db *db) { return db->reuse; }

/* The reuse rules of a row just read (profile.h): false makes it read as
 * absent, so that it is measured again. */
static bool reusable(korch_profile_db *db, const korch_profile_record *rec) {
    if (db->fresh_after > 0 && rec->created < db->fresh_after) {
        db->reuse.stale++;
        return false;
    }
    if (!rec->quality.provisional) return true;
    if (db->monitor) {
        double probe = 0, wait = -1;
        korch_profile_monitor_state(db->monitor, &probe, &wait);
        if (!korch_profile_disturbed(probe, wait) ||
            korch_profile_quieter(probe, wait, rec->quality.probe, rec->quality.wait)) {
            db->reuse.remeasure++;
            return false;
        }
    }
    db->reuse.provisional_used++;
    return true;
}

/* columns 0.. of a SELECT of QUALITY_COLUMNS: iqr, probe, wait, provisional,
 * created; NULL (a row of a korch before profile quality) is provisional */
#define QUALITY_COLUMNS "iqr_ms, probe, wait, provisional, created"
#define LEGACY_COLUMNS "0, 0, -1, NULL, created"
static void read_quality(sqlite3_stmt *row, int col, korch_profile_record *rec) {
    rec->quality.iqr_ms = sqlite3_column_double(row, col);
    rec->quality.probe = sqlite3_column_double(row, col + 1);
    rec->quality.wait = sqlite3_column_type(row, col + 2) == SQLITE_NULL ? -1 : sqlite3_column_double(row, col + 2);
    rec->quality.provisional =
        sqlite3_column_type(row, col + 3) == SQLITE_NULL || sqlite3_column_int(row, col + 3) != 0;
    rec->created = sqlite3_column_double(row, col + 4);
}

korch_status korch_profile_db_get_best(korch_profile_db *db, const char *backend, const char *sig, const char *machine,
                                       korch_profile_record *rec, bool *found) {
    const char *t[3] = {backend, sig, machine};
    sqlite3_stmt *row = NULL;
    *found = false;
    KORCH_TRY(run(db,
                  db->has_quality ? "SELECT schedule, latency_ms, spread_ms, default_ms, trials, " QUALITY_COLUMNS
                                    " FROM best WHERE backend=?1 AND sig=?2 AND machine=?3;"
                                  : "SELECT schedule, latency_ms, spread_ms, default_ms, trials, " LEGACY_COLUMNS
                                    " FROM best WHERE backend=?1 AND sig=?2 AND machine=?3;",
                  3, t, 0, NULL, &row));
    if (!row) return KORCH_OK;
    const unsigned char *s = sqlite3_column_text(row, 0);
    snprintf(rec->schedule, sizeof rec->schedule, "%s", s ? (const char *)s : "");
    rec->latency_ms = sqlite3_column_double(row, 1);
    rec->spread_ms = sqlite3_column_double(row, 2);
    rec->default_ms = sqlite3_column_double(row, 3);
    rec->trials = sqlite3_column_int(row, 4);
    read_quality(row, 5, rec);
    sqlite3_finalize(row);
    /* a latency that is not a positive finite number is damage, not data */
    *found = s && rec->latency_ms > 0 && rec->latency_ms < 1e9 && reusable(db, rec);
    return KORCH_OK;
}

/* Stores a row of `table` with quality under the put rule: a provisional
 * measurement never replaces a clean row (unless that row is older than
 * fresh_after). */
static korch_status put_row(korch_profile_db *db, bool best, const char *backend, const char *sig,
                            const char *machine, const korch_profile_record *rec) {
    if (db->readonly) return KORCH_OK;
    if (!db->has_quality) return korch_error(KORCH_ERR_IO, "profile database %s: no quality columns", db->path);
    const char *sql =
        best ? "INSERT INTO best(backend, sig, machine, schedule, latency_ms, spread_ms, default_ms, trials, created,"
               " iqr_ms, probe, wait, provisional) VALUES(?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13)"
               " ON CONFLICT(backend, sig, machine) DO UPDATE SET schedule=excluded.schedule,"
               " latency_ms=excluded.latency_ms, spread_ms=excluded.spread_ms, default_ms=excluded.default_ms,"
               " trials=excluded.trials, created=excluded.created, iqr_ms=excluded.iqr_ms, probe=excluded.probe,"
               " wait=excluded.wait, provisional=excluded.provisional"
               " WHERE excluded.provisional = 0 OR coalesce(best.provisional, 1) != 0 OR best.created < ?14;"
             : "INSERT INTO trials(backend, sig, machine, schedule, latency_ms, spread_ms, created, iqr_ms, probe,"
               " wait, provisional) VALUES(?1, ?2, ?3, ?4, ?5, ?6, ?9, ?10, ?11, ?12, ?13)"
               " ON CONFLICT(backend, sig, schedule, machine) DO UPDATE SET latency_ms=excluded.latency_ms,"
               " spread_ms=excluded.spread_ms, created=excluded.created, iqr_ms=excluded.iqr_ms,"
               " probe=excluded.probe, wait=excluded.wait, provisional=excluded.provisional"
               " WHERE excluded.provisional = 0 OR coalesce(trials.provisional, 1) != 0 OR trials.created < ?14;";
    /* (trials leave ?7 and ?8, default_ms and trials, unused) */
    sqlite3_stmt *st = NULL;
    if (sqlite3_prepare_v2(db->db, sql, -1, &st, NULL) != SQLITE_OK) return sql_error(db, "prepare");
    const char *text[4] = {backend, sig, machine, rec->schedule};
    for (int i = 0; i < 4; i++) sqlite3_bind_text(st, i + 1, text[i], -1, SQLITE_TRANSIENT);
    double created = korch_wall_s();
    double d[6] = {rec->latency_ms, rec->spread_ms, rec->default_ms, (double)rec->trials, created,
                   rec->quality.iqr_ms};
    for (int i = 0; i < 6; i++) sqlite3_bind_double(st, 5 + i, d[i]);
    sqlite3_bind_double(st, 11, rec->quality.probe);
    sqlite3_bind_double(st, 12, rec->quality.wait);
    sqlite3_bind_int(st, 13, rec->quality.provisional ? 1 : 0);
    sqlite3_bind_double(st, 14, db->fresh_after);
    int rc = sqlite3_step(st);
    sqlite3_finalize(st);
    return rc == SQLITE_DONE ? KORCH_OK : sql_error(db, best ? "storing a profile" : "storing a trial");
}

korch_status korch_profile_db_put_best(korch_profile_db *db, const char *backend, const char *sig, const char *machine,
                                       const korch_profile_record *rec) {
    return put_row(db, true, backend, sig, machine, rec);
}

korch_status korch_profile_db_get_trial_record(korch_profile_db *db, const char *backend, const char *sig,
                                               const char *schedule, const char *machine, korch_profile_record *rec,
                                               bool *found) {
    const char *t[4] = {backend, sig, schedule, machine};
    sqlite3_stmt *row = NULL;
    *found = false;
    KORCH_TRY(run(db,
                  db->has_quality ? "SELECT latency_ms, spread_ms, " QUALITY_COLUMNS " FROM trials"
                                    " WHERE backend=?1 AND sig=?2 AND schedule=?3 AND machine=?4;"
                                  : "SELECT latency_ms, spread_ms, " LEGACY_COLUMNS " FROM trials"
                                    " WHERE backend=?1 AND sig=?2 AND schedule=?3 AND machine=?4;",
                  4, t, 0, NULL, &row));
    if (!row) return KORCH_OK;
    memset(rec, 0, sizeof *rec);
    snprintf(rec->schedule, sizeof rec->schedule, "%s", schedule);
    rec->latency_ms = sqlite3_column_double(row, 0);
    rec->spread_ms = sqlite3_column_double(row, 1);
    read_quality(row, 2, rec);
    sqlite3_finalize(row);
    *found = rec->latency_ms > 0 && rec->latency_ms < 1e9 && reusable(db, rec);
    return KORCH_OK;
}

korch_status korch_profile_db_put_trial_record(korch_profile_db *db, const char *backend, const char *sig,
                                               const char *machine, const korch_profile_record *rec) {
    return put_row(db, false, backend, sig, machine, rec);
}

korch_status korch_profile_db_get_trial(korch_profile_db *db, const char *backend, const char *sig, const char *schedule,
                                        const char *machine, double *latency_ms, double *spread_ms, bool *found) {
    korch_profile_record rec;
    KORCH_TRY(korch_profile_db_get_trial_record(db, backend, sig, schedule, machine, &rec, found));
    if (*found) {
        *latency_ms = rec.latency_ms;
        *spread_ms = rec.spread_ms;
    }
    return KORCH_OK;
}

korch_status korch_profile_db_put_trial(korch_profile_db *db, const char *backend, const char *sig, const char *schedule,
                                        const char *machine, double latency_ms, double spread_ms) {
    korch_profile_record rec = {.latency_ms = latency_ms, .spread_ms = spread_ms, .quality = {.wait = -1}};
    snprintf(rec.schedule, sizeof rec.schedule, "%s", schedule);
    return put_row(db, false, backend, sig, machine, &rec);
}

korch_status korch_profile_db_put_machine(korch_profile_db *db, const char *machine, const char *text) {
    if (db->readonly) return KORCH_OK;
    const char *t[2] = {machine, text};
    return run(db, "INSERT OR REPLACE INTO machines VALUES(?1, ?2);", 2, t, 0, NULL, NULL);
}

korch_status korch_profile_db_get_verdict(korch_profile_db *db, const char *backend, const char *sig,
                                          const char *schedule, const char *machine, korch_verdict_record *rec,
                                          bool *found) {
    const char *t[4] = {backend, sig, schedule, machine};
    sqlite3_stmt *row = NULL;
    *found = false;
    KORCH_TRY(run(db,
                  "SELECT verdict, worst, max_abs, detail FROM verdicts"
                  " WHERE backend=?1 AND sig=?2 AND schedule=?3 AND machine=?4;",
                  4, t, 0, NULL, &row));
    if (!row) return KORCH_OK;
    const unsigned char *v = sqlite3_column_text(row, 0), *d = sqlite3_column_text(row, 3);
    snprintf(rec->verdict, sizeof rec->verdict, "%s", v ? (const char *)v : "");
    rec->worst_ratio = sqlite3_column_double(row, 1);
    rec->max_abs = sqlite3_column_double(row, 2);
    snprintf(rec->detail, sizeof rec->detail, "%s", d ? (const char *)d : "");
    sqlite3_finalize(row);
    /* anything but the two known words is damage: check again */
    *found = strcmp(rec->verdict, "verified") == 0 || strcmp(rec->verdict, "wrong") == 0;
    return KORCH_OK;
}

korch_status korch_profile_db_put_verdict(korch_profile_db *db, const char *backend, const char *sig,
                                          const char *schedule, const char *machine, const korch_verdict_record *rec) {
    if (db->readonly) return KORCH_OK;
    const char *t[6] = {backend, sig, schedule, machine, rec->verdict, rec->detail};
    /* SQLite stores an infinite REAL as Inf; NaN would become NULL */
    double worst = rec->worst_ratio == rec->worst_ratio ? rec->worst_ratio : 1e308;
    double d[3] = {worst, rec->max_abs == rec->max_abs ? rec->max_abs : 1e308, (double)time(NULL)};
    sqlite3_stmt *st = NULL;
    if (sqlite3_prepare_v2(db->db,
                           "INSERT OR REPLACE INTO verdicts(backend, sig, schedule, machine, verdict, detail, worst,"
                           " max_abs, created) VALUES(?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9);",
                           -1, &st, NULL) != SQLITE_OK)
        return sql_error(db, "prepare");
    for (int i = 0; i < 6; i++) sqlite3_bind_text(st, i + 1, t[i], -1, SQLITE_TRANSIENT);
    for (int i = 0; i < 3; i++) sqlite3_bind_double(st, 7 + i, d[i]);
    int rc = sqlite3_step(st);
    sqlite3_finalize(st);
    return rc == SQLITE_DONE ? KORCH_OK : sql_error(db, "storing a verdict");
}
