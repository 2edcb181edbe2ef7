/* `korch db`: statistics, suspect rows, pruning and clearing of a profile
 * database (db_admin.h has the categories). Every category is one SQL
 * condition, shared by check (which lists) and prune (which deletes), so
 * the two never disagree. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "profile/db_admin.h"
#include "profile/db_internal.h"

typedef struct category {
    const char *name;  /* one word, in check's output */
    const char *label; /* what it means */
    const char *where; /* SQL condition on a row of trials or best (%s: the table) */
    bool best_only;
} category;

#define VALID "latency_ms > 0 AND latency_ms < 1e9"
/* clean rows whose interquartile range is more than 0.25 x the median
 * (KORCH_DB_SPREAD_LIMIT) */
/* the SQL takes the thresholds' own spelling, so the two cannot drift apart */
#define STR_(x) #x
#define STR(x) STR_(x)
#define SPREAD "iqr_ms > " STR(KORCH_DB_SPREAD_LIMIT) " * latency_ms"
/* a best row and the trial of its own schedule (dnnl best schedules append
 * " impl=..." to the variant) more than 1.5x apart (KORCH_DB_INCONSISTENT) */
#define OWN_TRIAL                                                                                                     \
    "FROM trials t WHERE t.backend = best.backend AND t.sig = best.sig AND t.machine = best.machine AND"             \
    " (t.schedule = best.schedule OR substr(best.schedule, 1, length(t.schedule) + 1) = t.schedule || ' ') AND"      \
    " t.provisional = 0 AND (t.latency_ms > " STR(KORCH_DB_INCONSISTENT) " * best.latency_ms OR best.latency_ms > " \
    STR(KORCH_DB_INCONSISTENT) " * t.latency_ms)"


static const category categories[] = {
    {"damaged", "latency not a positive finite number", "NOT (" VALID ")", false},
    {"unknown", "quality unknown: measured by a korch before profile quality", VALID " AND provisional IS NULL", false},
    {"provisional", "measured while the machine was disturbed", VALID " AND provisional = 1", false},
    {"spread", "interquartile range above 25% of the median", VALID " AND provisional = 0 AND " SPREAD, false},
    {"inconsistent", "its schedule's trial differs by more than 1.5x",
     VALID " AND provisional = 0 AND NOT (" SPREAD ") AND EXISTS (SELECT 1 " OWN_TRIAL ")", true},
};
#define N_CATEGORIES (int)(sizeof categories / sizeof categories[0])
static const char *const tables[] = {"best", "trials"};

static korch_status sql_fail(korch_profile_db *db, const char *what) {
    return korch_error(KORCH_ERR_IO, "profile database %s: %s: %s", korch_profile_db_path(db), what,
                       sqlite3_errmsg(korch_profile_db_sqlite(db)));
}

static korch_status prepare(korch_profile_db *db, const char *sql, sqlite3_stmt **st) {
    if (sqlite3_prepare_v2(korch_profile_db_sqlite(db), sql, -1, st, NULL) != SQLITE_OK) return sql_fail(db, sql);
    return KORCH_OK;
}

static korch_status exec(korch_profile_db *db, const char *sql) {
    if (sqlite3_exec(korch_profile_db_sqlite(db), sql, NULL, NULL, NULL) != SQLITE_OK) return sql_fail(db, sql);
    return KORCH_OK;
}

static long count_where(korch_profile_db *db, const char *table, const char *where, korch_status *st) {
    char sql[1200];
    snprintf(sql, sizeof sql, "SELECT count(*) FROM %s WHERE %s;", table, where);
    sqlite3_stmt *s = NULL;
    if ((*st = prepare(db, sql, &s)) != KORCH_OK) return 0;
    long n = sqlite3_step(s) == SQLITE_ROW ? sqlite3_column_int64(s, 0) : 0;
    sqlite3_finalize(s);
    return n;
}

korch_status korch_db_admin_open(const char *path, int busy_ms, korch_profile_db **out) {
    *out = NULL;
    char buf[4096];
    if (!path || !*path) {
        const char *xdg = getenv("XDG_CACHE_HOME"), *home = getenv("HOME");
        if (xdg && *xdg) snprintf(buf, sizeof buf, "%s/korch/profile.db", xdg);
        else if (home && *home) snprintf(buf, sizeof buf, "%s/.cache/korch/profile.db", home);
        else return korch_error(KORCH_ERR_IO, "no profile database location: set XDG_CACHE_HOME or HOME, or pass --db");
        path = buf;
    }
    struct stat sb;
    if (stat(path, &sb) != 0)
        return korch_error(KORCH_ERR_IO, "profile database %s: %s", path,
                           errno == ENOENT ? "no such file (nothing profiled there yet, or a wrong --db)"
                                           : strerror(errno));
    if (!S_ISREG(sb.st_mode)) return korch_error(KORCH_ERR_IO, "profile database %s: not a regular file", path);
    return korch_profile_db_open(path, busy_ms, out);
}

/* ---- stats ------------------------------------------------------------------ */

static void machine_text(korch_profile_db *db, const char *machine, char *out, size_t size) {
    snprintf(out, size, "(not described)");
    sqlite3_stmt *s = NULL;
    if (prepare(db, "SELECT description FROM machines WHERE machine=?1;", &s) != KORCH_OK) {
        korch_error_clear();
        return;
    }
    sqlite3_bind_text(s, 1, machine, -1, SQLITE_TRANSIENT);
    if (sqlite3_step(s) == SQLITE_ROW && sqlite3_column_text(s, 0)) {
        /* the ISA list is long and the same for every row of one CPU: the
         * rest (threads, compiler or library) tells rows apart */
        const char *d = (const char *)sqlite3_column_text(s, 0), *isa = strstr(d, ";isa="), *rest = NULL;
        if (isa) rest = strchr(isa + 1, ';');
        if (isa && rest) snprintf(out, size, "%.*s%s", (int)(isa - d), d, rest);
        else snprintf(out, size, "%s", d);
    }
    sqlite3_finalize(s);
}

static korch_status table_stats(korch_profile_db *db, const char *table, double now, FILE *out) {
    char sql[1200];
    snprintf(sql, sizeof sql,
             "SELECT machine, count(*), sum(provisional = 1), sum(provisional IS NULL), min(created), max(created),"
             " avg(CASE WHEN provisional IS NOT NULL AND " VALID " THEN iqr_ms / latency_ms END),"
             " max(CASE WHEN provisional IS NOT NULL AND " VALID " THEN iqr_ms / latency_ms END),"
             " sum(provisional = 0 AND " VALID " AND " SPREAD ")"
             " FROM %s GROUP BY machine ORDER BY count(*) DESC;",
             table);
    sqlite3_stmt *s = NULL;
    KORCH_TRY(prepare(db, sql, &s));
    int rows = 0;
    while (sqlite3_step(s) == SQLITE_ROW) {
        rows++;
        const char *m = (const char *)sqlite3_column_text(s, 0);
        long n = sqlite3_column_int64(s, 1);
        char desc[1024];
        machine_text(db, m ? m : "", desc, sizeof desc);
        double oldest = (now - sqlite3_column_double(s, 4)) / 86400, newest = (now - sqlite3_column_double(s, 5)) / 86400;
        char ages[40], iqr[40];
        snprintf(ages, sizeof ages, "%.1f-%.1f", newest < 0 ? 0 : newest, oldest < 0 ? 0 : oldest);
        if (sqlite3_column_type(s, 6) == SQLITE_NULL) snprintf(iqr, sizeof iqr, "-");
        else snprintf(iqr, sizeof iqr, "%.1f%%/%.1f%%", 100 * sqlite3_column_double(s, 6), 100 * sqlite3_column_double(s, 7));
        fprintf(out, "  %-6s %-16.16s %7ld %6lld %7lld %6lld %15s %16s  %.160s\n", table, m ? m : "?", n,
                sqlite3_column_int64(s, 2), sqlite3_column_int64(s, 3), sqlite3_column_int64(s, 8), ages, iqr, desc);
    }
    sqlite3_finalize(s);
    if (rows == 0) fprintf(out, "  %-6s (empty)\n", table);
    return KORCH_OK;
}

korch_status korch_db_stats(korch_profile_db *db, FILE *out) {
    double now = korch_wall_s();
    struct stat sb;
    const char *path = korch_profile_db_path(db);
    fprintf(out, "profile database %s (%.1f MiB)%s\n", path, stat(path, &sb) == 0 ? (double)sb.st_size / 1048576 : 0.0,
            korch_profile_db_readonly(db) ? ", read-only" : "");
    korch_status st = KORCH_OK;
    static const char *const all[] = {"best", "trials", "verdicts", "probes", "machines"};
    fprintf(out, "rows:");
    for (int t = 0; t < 5 && st == KORCH_OK; t++) fprintf(out, " %s %ld", all[t], count_where(db, all[t], "1", &st));
    fprintf(out, "\n");
    if (st != KORCH_OK) return st;
    fprintf(out, "profiles per machine (prov.: provisional; unknown: measured before profile quality; spread: "
                 "IQR > 25%% of the median; age: days since measured, newest-oldest; IQR/median: mean/max):\n");
    fprintf(out, "  %-6s %-16s %7s %6s %7s %6s %15s %16s  %s\n", "table", "machine", "rows", "prov.", "unknown",
            "spread", "age days", "IQR/median", "machine (ISA flags left out)");
    for (int t = 0; t < 2; t++) KORCH_TRY(table_stats(db, tables[t], now, out));
    sqlite3_stmt *s = NULL;
    KORCH_TRY(prepare(db, "SELECT verdict, count(*), min(created), max(created) FROM verdicts GROUP BY verdict;", &s));
    while (sqlite3_step(s) == SQLITE_ROW)
        fprintf(out, "verdicts: %lld %s, measured %.1f-%.1f days ago\n", sqlite3_column_int64(s, 1),
                sqlite3_column_text(s, 0) ? (const char *)sqlite3_column_text(s, 0) : "?",
                (now - sqlite3_column_double(s, 3)) / 86400, (now - sqlite3_column_double(s, 2)) / 86400);
    sqlite3_finalize(s);
    /* a database of an older korch opened read-only has no probes table */
    if (prepare(db, "SELECT machine, idle_ms, samples, updated FROM probes;", &s) != KORCH_OK) {
        korch_error_clear();
        return KORCH_OK;
    }
    while (sqlite3_step(s) == SQLITE_ROW) {
        char desc[1024];
        const char *m = (const char *)sqlite3_column_text(s, 0);
        machine_text(db, m ? m : "", desc, sizeof desc);
        fprintf(out, "probe %.16s: idle %.3f ms (%lld quiet samples, last %.1f days ago)  %.100s\n", m ? m : "?",
                sqlite3_column_double(s, 1), sqlite3_column_int64(s, 2), (now - sqlite3_column_double(s, 3)) / 86400,
                desc);
    }
    sqlite3_finalize(s);
    return KORCH_OK;
}

/* ---- check and prune --------------------------------------------------------- */

/* temp.korch_keys: the verification fingerprints this korch reads */
static korch_status load_keys(korch_profile_db *db, const korch_db_admin_options *o) {
    KORCH_TRY(exec(db, "CREATE TEMP TABLE IF NOT EXISTS korch_keys(machine TEXT PRIMARY KEY);"
                       "DELETE FROM temp.korch_keys;"));
    sqlite3_stmt *s = NULL;
    KORCH_TRY(prepare(db, "INSERT OR IGNORE INTO temp.korch_keys VALUES(?1);", &s));
    for (int i = 0; i < o->n_verdict_keys; i++) {
        sqlite3_reset(s);
        sqlite3_bind_text(s, 1, o->verdict_keys[i], -1, SQLITE_TRANSIENT);
        if (sqlite3_step(s) != SQLITE_DONE) {
            sqlite3_finalize(s);
            return sql_fail(db, "remembering verification fingerprints");
        }
    }
    sqlite3_finalize(s);
    return KORCH_OK;
}

#define FOREIGN "machine NOT IN (SELECT machine FROM temp.korch_keys)"

static void list_rows(korch_profile_db *db, const char *table, const category *c, double now, int limit, FILE *out) {
    char sql[1600];
    snprintf(sql, sizeof sql,
             "SELECT backend, sig, schedule, machine, latency_ms, iqr_ms, probe, wait, created, %s FROM %s WHERE %s"
             " ORDER BY created LIMIT %d;",
             c->best_only ? "(SELECT t.latency_ms " OWN_TRIAL " LIMIT 1)" : "NULL", table, c->where, limit);
    sqlite3_stmt *s = NULL;
    if (prepare(db, sql, &s) != KORCH_OK) {
        korch_error_clear();
        return;
    }
    while (sqlite3_step(s) == SQLITE_ROW) {
        const char *b = (const char *)sqlite3_column_text(s, 0), *sig = (const char *)sqlite3_column_text(s, 1);
        const char *sched = (const char *)sqlite3_column_text(s, 2), *m = (const char *)sqlite3_column_text(s, 3);
        double ms = sqlite3_column_double(s, 4), age = (now - sqlite3_column_double(s, 8)) / 86400;
        fprintf(out, "%-12s %-6s %-4s %-16.16s %-8.8s %10.4f ms  %5.1f d  %.40s", c->name, table, b ? b : "?",
                sig ? sig : "?", m ? m : "?", ms, age < 0 ? 0 : age, sched ? sched : "");
        if (strcmp(c->name, "provisional") == 0)
            fprintf(out, "  (probe %.2f, waited %.0f%%)", sqlite3_column_double(s, 6), 100 * sqlite3_column_double(s, 7));
        else if (strcmp(c->name, "spread") == 0)
            fprintf(out, "  (IQR %.0f%% of the median)", ms > 0 ? 100 * sqlite3_column_double(s, 5) / ms : 0.0);
        else if (c->best_only)
            fprintf(out, "  (its trial %.4f ms)", sqlite3_column_double(s, 9));
        fputc('\n', out);
    }
    sqlite3_finalize(s);
}

korch_status korch_db_check(korch_profile_db *db, const korch_db_admin_options *o, FILE *out, long *n_suspect) {
    *n_suspect = 0;
    double now = korch_wall_s();
    int limit = o->limit > 0 ? o->limit : 50, listed = 0;
    long counts[N_CATEGORIES + 1] = {0};
    korch_status st = KORCH_OK;
    for (int c = 0; c < N_CATEGORIES && st == KORCH_OK; c++)
        for (int t = 0; t < 2 && st == KORCH_OK; t++) {
            if (categories[c].best_only && strcmp(tables[t], "best") != 0) continue;
            long n = count_where(db, tables[t], categories[c].where, &st);
            counts[c] += n;
            if (n > 0 && listed < limit) {
                list_rows(db, tables[t], &categories[c], now, limit - listed, out);
                listed += n < limit - listed ? (int)n : limit - listed;
            }
        }
    if (st == KORCH_OK && o->verdict_keys) {
        st = load_keys(db, o);
        long n = st == KORCH_OK ? count_where(db, "verdicts", FOREIGN, &st) : 0;
        counts[N_CATEGORIES] = n;
        sqlite3_stmt *s = NULL;
        if (st == KORCH_OK && n > 0 && listed < limit) {
            char sql[300];
            snprintf(sql, sizeof sql, "SELECT backend, sig, schedule, machine, verdict, created FROM verdicts WHERE "
                     FOREIGN " ORDER BY created LIMIT %d;", limit - listed);
            st = prepare(db, sql, &s);
            while (st == KORCH_OK && sqlite3_step(s) == SQLITE_ROW) {
                listed++;
                const char *b = (const char *)sqlite3_column_text(s, 0), *sig = (const char *)sqlite3_column_text(s, 1);
                const char *m = (const char *)sqlite3_column_text(s, 3), *v = (const char *)sqlite3_column_text(s, 4);
                fprintf(out, "%-12s %-6s %-4s %-16.16s %-8.8s %13s  %5.1f d  %.40s\n", "foreign", "verdict",
                        b ? b : "?", sig ? sig : "?", m ? m : "?", v ? v : "?",
                        (now - sqlite3_column_double(s, 5)) / 86400,
                        sqlite3_column_text(s, 2) ? (const char *)sqlite3_column_text(s, 2) : "");
            }
            sqlite3_finalize(s);
        }
    }
    if (st != KORCH_OK) return st;
    for (int c = 0; c <= N_CATEGORIES; c++) *n_suspect += counts[c];
    if (*n_suspect > listed) fprintf(out, "... and %ld more\n", *n_suspect - listed);
    fprintf(out, "%ld suspect rows in %s:", *n_suspect, korch_profile_db_path(db));
    for (int c = 0; c < N_CATEGORIES; c++) fprintf(out, " %ld %s,", counts[c], categories[c].name);
    if (o->verdict_keys) fprintf(out, " %ld foreign verdicts\n", counts[N_CATEGORIES]);
    else fprintf(out, " (verdicts not judged)\n");
    for (int c = 0; c < N_CATEGORIES; c++)
        if (counts[c]) fprintf(out, "  %s: %s\n", categories[c].name, categories[c].label);
    if (counts[N_CATEGORIES])
        fprintf(out, "  foreign: a verdict of another korch version, rule set, backend build, thread count or machine "
                     "(never read by this korch)\n");
    return KORCH_OK;
}

static korch_status writable(korch_profile_db *db, const char *what) {
    if (korch_profile_db_readonly(db))
        return korch_error(KORCH_ERR_IO, "profile database %s is read-only: cannot %s", korch_profile_db_path(db), what);
    return KORCH_OK;
}

static korch_status delete_where(korch_profile_db *db, const char *table, const char *where, bool dry_run, long *n) {
    korch_status st = KORCH_OK;
    *n = count_where(db, table, where, &st);
    if (st != KORCH_OK || dry_run || *n == 0) return st;
    char sql[1300];
    snprintf(sql, sizeof sql, "DELETE FROM %s WHERE %s;", table, where);
    return exec(db, sql);
}

/* machines rows nothing refers to any more */
static korch_status drop_orphan_machines(korch_profile_db *db, bool dry_run, long *n) {
    return delete_where(db, "machines",
                        "machine NOT IN (SELECT machine FROM trials UNION SELECT machine FROM best UNION SELECT machine"
                        " FROM probes)",
                        dry_run, n);
}

korch_status korch_db_prune(korch_profile_db *db, const korch_db_admin_options *o, bool dry_run, FILE *out,
                            long *n_deleted) {
    *n_deleted = 0;
    if (!dry_run) KORCH_TRY(writable(db, "prune"));
    if (o->verdict_keys) KORCH_TRY(load_keys(db, o));
    if (!dry_run) KORCH_TRY(exec(db, "BEGIN IMMEDIATE;"));
    korch_status st = KORCH_OK;
    long per_table[3] = {0}, n = 0;
    /* inconsistent best rows first: the condition reads trials */
    for (int c = N_CATEGORIES - 1; c >= 0 && st == KORCH_OK; c--)
        for (int t = 0; t < 2 && st == KORCH_OK; t++) {
            if (categories[c].best_only && strcmp(tables[t], "best") != 0) continue;
            st = delete_where(db, tables[t], categories[c].where, dry_run, &n);
            per_table[t] += n;
        }
    if (st == KORCH_OK && o->verdict_keys) {
        st = delete_where(db, "verdicts", FOREIGN, dry_run, &n);
        per_table[2] += n;
    }
    if (st == KORCH_OK && o->older_than_days > 0) {
        char where[96];
        snprintf(where, sizeof where, "created < %.3f", korch_wall_s() - o->older_than_days * 86400);
        static const char *const all[3] = {"best", "trials", "verdicts"};
        for (int t = 0; t < 3 && st == KORCH_OK; t++) {
            st = delete_where(db, all[t], where, dry_run, &n);
            per_table[t] += n;
        }
    }
    long machines = 0;
    if (st == KORCH_OK) st = drop_orphan_machines(db, dry_run, &machines);
    if (!dry_run) {
        if (st == KORCH_OK) st = exec(db, "COMMIT;");
        else sqlite3_exec(korch_profile_db_sqlite(db), "ROLLBACK;", NULL, NULL, NULL);
    }
    if (st != KORCH_OK) return st;
    *n_deleted = per_table[0] + per_table[1] + per_table[2];
    fprintf(out, "%s %ld rows from %s: best %ld, trials %ld, verdicts %ld (and %ld machine descriptions nothing uses)\n",
            dry_run ? "would delete" : "deleted", *n_deleted, korch_profile_db_path(db), per_table[0], per_table[1],
            per_table[2], machines);
    return KORCH_OK;
}

korch_status korch_db_clear(korch_profile_db *db, const korch_db_admin_options *o, FILE *out, long *n_deleted) {
    *n_deleted = 0;
    KORCH_TRY(writable(db, "clear"));
    if (o->machine_prefix && o->verdict_keys) KORCH_TRY(load_keys(db, o));
    KORCH_TRY(exec(db, "BEGIN IMMEDIATE;"));
    korch_status st = KORCH_OK;
    static const char *const all[] = {"best", "trials", "probes", "verdicts", "machines"};
    long n[5] = {0};
    char *ours = NULL;
    if (o->machine_prefix) {
        /* this machine: any thread count, compiler or library, by description */
        ours = sqlite3_mprintf("machine IN (SELECT machine FROM machines WHERE substr(description, 1, %d) = %Q)",
                               (int)strlen(o->machine_prefix), o->machine_prefix);
        if (!ours) st = korch_error(KORCH_ERR_OUT_OF_MEMORY, "korch db clear: out of memory");
    }
    for (int t = 0; t < 5 && st == KORCH_OK; t++) {
        const char *where = "1";
        char *own = NULL;
        if (ours && strcmp(all[t], "verdicts") == 0)
            where = o->verdict_keys ? "machine IN (SELECT machine FROM temp.korch_keys)" : "0";
        else if (ours && strcmp(all[t], "machines") == 0)
            where = own = sqlite3_mprintf("substr(description, 1, %d) = %Q", (int)strlen(o->machine_prefix),
                                          o->machine_prefix);
        else if (ours)
            where = ours;
        st = where ? delete_where(db, all[t], where, false, &n[t])
                   : korch_error(KORCH_ERR_OUT_OF_MEMORY, "korch db clear: out of memory");
        sqlite3_free(own);
    }
    sqlite3_free(ours);
    if (st == KORCH_OK) st = exec(db, "COMMIT;");
    else sqlite3_exec(korch_profile_db_sqlite(db), "ROLLBACK;", NULL, NULL, NULL);
    if (st != KORCH_OK) return st;
    *n_deleted = n[0] + n[1] + n[2] + n[3];
    fprintf(out, "deleted %ld rows%s from %s: best %ld, trials %ld, probes %ld, verdicts %ld (and %ld machine "
                 "descriptions)\n",
            *n_deleted, o->machine_prefix ? " of this machine" : "", korch_profile_db_path(db), n[0], n[1], n[2], n[3],
            n[4]);
    return KORCH_OK;
}
