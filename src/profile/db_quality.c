/* The profile database's additions for profile quality (docs/profiling.md,
 * "Profile quality"): four columns on trials and best (iqr_ms, probe, wait,
 * provisional) and a probes table (the idle time of the machine-state probe
 * per probe fingerprint). Added with ALTER TABLE to databases of an older
 * korch instead of a schema version bump, which would move the whole
 * database aside: old rows stay usable, read as provisional (their quality
 * is unknown) and are replaced by the next clean measurement. */
#include <stdio.h>
#include <string.h>

#include "profile/db_internal.h"

static const char *const quality_columns[] = {"iqr_ms REAL", "probe REAL", "wait REAL", "provisional INTEGER", NULL};

static bool has_column(sqlite3 *db, const char *table, const char *column) {
    char sql[128];
    snprintf(sql, sizeof sql, "PRAGMA table_info(%s);", table);
    sqlite3_stmt *st = NULL;
    if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK) return false;
    bool found = false;
    size_t n = strcspn(column, " ");
    while (!found && sqlite3_step(st) == SQLITE_ROW) {
        const char *name = (const char *)sqlite3_column_text(st, 1);
        found = name && strlen(name) == n && strncmp(name, column, n) == 0;
    }
    sqlite3_finalize(st);
    return found;
}

int korch_profile_db_migrate(sqlite3 *db) {
    static const char *const tables[] = {"trials", "best"};
    for (int t = 0; t < 2; t++)
        for (int c = 0; quality_columns[c]; c++) {
            if (has_column(db, tables[t], quality_columns[c])) continue;
            char sql[160];
            snprintf(sql, sizeof sql, "ALTER TABLE %s ADD COLUMN %s;", tables[t], quality_columns[c]);
            int rc = sqlite3_exec(db, sql, NULL, NULL, NULL);
            /* another process may have added it in between */
            if (rc != SQLITE_OK && !has_column(db, tables[t], quality_columns[c])) return rc;
        }
    return sqlite3_exec(db,
                        "CREATE TABLE IF NOT EXISTS probes(machine TEXT PRIMARY KEY, idle_ms REAL, samples INTEGER,"
                        " updated REAL);",
                        NULL, NULL, NULL);
}

bool korch_profile_db_has_quality(sqlite3 *db) {
    for (int c = 0; quality_columns[c]; c++)
        if (!has_column(db, "trials", quality_columns[c]) || !has_column(db, "best", quality_columns[c])) return false;
    return true;
}

korch_status korch_profile_db_get_probe(korch_profile_db *p, const char *machine, double *idle_ms, int *samples,
                                        bool *found) {
    sqlite3 *db = korch_profile_db_sqlite(p);
    *found = false;
    sqlite3_stmt *st = NULL;
    /* a read-only database of an older korch has no probes table: no reference */
    if (sqlite3_prepare_v2(db, "SELECT idle_ms, samples FROM probes WHERE machine=?1;", -1, &st, NULL) != SQLITE_OK)
        return KORCH_OK;
    sqlite3_bind_text(st, 1, machine, -1, SQLITE_TRANSIENT);
    int rc = sqlite3_step(st);
    if (rc == SQLITE_ROW) {
        *idle_ms = sqlite3_column_double(st, 0);
        *samples = sqlite3_column_int(st, 1);
        *found = *idle_ms > 0 && *idle_ms < 1e6;
    }
    sqlite3_finalize(st);
    if (rc != SQLITE_ROW && rc != SQLITE_DONE)
        return korch_error(KORCH_ERR_IO, "profile database %s: reading the probe reference: %s",
                           korch_profile_db_path(p), sqlite3_errmsg(db));
    return KORCH_OK;
}

korch_status korch_profile_db_put_probe(korch_profile_db *p, const char *machine, double idle_ms, int samples) {
    if (korch_profile_db_readonly(p)) return KORCH_OK;
    sqlite3 *db = korch_profile_db_sqlite(p);
    sqlite3_stmt *st = NULL;
    /* the fastest quiet probe of every process that used this database */
    if (sqlite3_prepare_v2(db,
                           "INSERT INTO probes VALUES(?1, ?2, ?3, ?4) ON CONFLICT(machine) DO UPDATE SET"
                           " idle_ms=min(probes.idle_ms, excluded.idle_ms), samples=probes.samples + excluded.samples,"
                           " updated=excluded.updated;",
                           -1, &st, NULL) != SQLITE_OK)
        return korch_error(KORCH_ERR_IO, "profile database %s: storing the probe reference: %s",
                           korch_profile_db_path(p), sqlite3_errmsg(db));
    sqlite3_bind_text(st, 1, machine, -1, SQLITE_TRANSIENT);
    sqlite3_bind_double(st, 2, idle_ms);
    sqlite3_bind_int(st, 3, samples);
    sqlite3_bind_double(st, 4, korch_wall_s());
    int rc = sqlite3_step(st);
    sqlite3_finalize(st);
    return rc == SQLITE_DONE ? KORCH_OK
                             : korch_error(KORCH_ERR_IO, "profile database %s: storing the probe reference: %s",
                                           korch_profile_db_path(p), sqlite3_errmsg(db));
}
