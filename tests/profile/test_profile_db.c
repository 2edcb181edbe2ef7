/* The profile database: round trips, and the failure policy for corrupt,
 * read-only and locked files. */
#include <sqlite3.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "profile/profile.h"
#include "test.h"

static char dir[256];

static void path_of(const char *name, char *buf, size_t size) { snprintf(buf, size, "%s/%s", dir, name); }

static void test_round_trip(void) {
    char path[300];
    path_of("a.db", path, sizeof path);
    korch_profile_db *db = NULL;
    CHECK_OK(korch_profile_db_open(path, 0, &db));
    if (!db) return;
    CHECK(!korch_profile_db_readonly(db));
    korch_profile_record rec = {.latency_ms = 1.25, .spread_ms = 0.5, .default_ms = 2.0, .trials = 17};
    snprintf(rec.schedule, sizeof rec.schedule, "p1.g0.v1.u1.t0.o0.r1");
    CHECK_OK(korch_profile_db_put_best(db, "cgen", "sigA", "m1", &rec));
    CHECK_OK(korch_profile_db_put_trial(db, "cgen", "sigA", "p0.g0.v0.u1.t0.o0.r0", "m1", 3.5, 0.25));
    korch_profile_db_close(db);
    /* reopen: data persisted; other machine / backend / signature: absent */
    CHECK_OK(korch_profile_db_open(path, 0, &db));
    korch_profile_record got;
    bool found = false;
    CHECK_OK(korch_profile_db_get_best(db, "cgen", "sigA", "m1", &got, &found));
    CHECK(found && got.latency_ms == 1.25 && got.trials == 17 && strcmp(got.schedule, rec.schedule) == 0);
    CHECK_OK(korch_profile_db_get_best(db, "cgen", "sigA", "m2", &got, &found));
    CHECK(!found);
    CHECK_OK(korch_profile_db_get_best(db, "dnnl", "sigA", "m1", &got, &found));
    CHECK(!found);
    double ms = 0, spread = 0;
    CHECK_OK(korch_profile_db_get_trial(db, "cgen", "sigA", "p0.g0.v0.u1.t0.o0.r0", "m1", &ms, &spread, &found));
    CHECK(found && ms == 3.5 && spread == 0.25);
    korch_profile_db_close(db);
}

static void test_corrupt(void) {
    char path[300], aside[320];
    path_of("corrupt.db", path, sizeof path);
    FILE *f = fopen(path, "wb");
    for (int i = 0; i < 4096; i++) fputc((i * 7919) & 0xff, f);
    fclose(f);
    korch_profile_db *db = NULL;
    CHECK_OK(korch_profile_db_open(path, 0, &db)); /* rebuilt, with a warning */
    snprintf(aside, sizeof aside, "%s.corrupt", path);
    CHECK(access(aside, F_OK) == 0);
    if (db) {
        korch_profile_record got;
        bool found = true;
        CHECK_OK(korch_profile_db_get_best(db, "cgen", "x", "m", &got, &found));
        CHECK(!found);
        korch_profile_db_close(db);
    }
    /* a damaged row (negative latency) reads as absent, never as a result */
    CHECK_OK(korch_profile_db_open(path, 0, &db));
    if (!db) return;
    korch_profile_record bad = {.latency_ms = -1};
    snprintf(bad.schedule, sizeof bad.schedule, "p0.g0.v0.u1.t0.o0.r0");
    CHECK_OK(korch_profile_db_put_best(db, "cgen", "neg", "m", &bad));
    korch_profile_record got;
    bool found = true;
    CHECK_OK(korch_profile_db_get_best(db, "cgen", "neg", "m", &got, &found));
    CHECK(!found);
    korch_profile_db_close(db);
}

static void test_readonly(void) {
    if (geteuid() == 0) {
        /* root ignores file permissions: open read-only explicitly instead */
    }
    char path[300];
    path_of("ro.db", path, sizeof path);
    korch_profile_db *db = NULL;
    CHECK_OK(korch_profile_db_open(path, 0, &db));
    korch_profile_record rec = {.latency_ms = 2.5};
    snprintf(rec.schedule, sizeof rec.schedule, "p0.g0.v0.u1.t0.o0.r0");
    if (db) {
        CHECK_OK(korch_profile_db_put_best(db, "cgen", "s", "m", &rec));
        /* leave WAL mode so a read-only open needs no -shm file */
        korch_profile_db_close(db);
    }
    sqlite3 *raw = NULL;
    sqlite3_open(path, &raw);
    sqlite3_exec(raw, "PRAGMA journal_mode=DELETE;", NULL, NULL, NULL);
    sqlite3_close(raw);
    chmod(path, 0444);
    if (geteuid() != 0) {
        CHECK_OK(korch_profile_db_open(path, 0, &db));
        if (db) {
            CHECK(korch_profile_db_readonly(db));
            korch_profile_record got;
            bool found = false;
            CHECK_OK(korch_profile_db_get_best(db, "cgen", "s", "m", &got, &found));
            CHECK(found && got.latency_ms == 2.5);
            CHECK_OK(korch_profile_db_put_best(db, "cgen", "t", "m", &rec)); /* silently not saved */
            korch_profile_db_close(db);
        }
    }
    chmod(path, 0644);
}

static void test_locked(void) {
    char path[300];
    path_of("locked.db", path, sizeof path);
    korch_profile_db *db = NULL;
    CHECK_OK(korch_profile_db_open(path, 0, &db));
    korch_profile_db_close(db);
    /* another connection holds an exclusive lock: opening waits, then fails clearly */
    sqlite3 *raw = NULL;
    sqlite3_open(path, &raw);
    sqlite3_exec(raw, "PRAGMA locking_mode=EXCLUSIVE; BEGIN EXCLUSIVE;", NULL, NULL, NULL);
    korch_status st = korch_profile_db_open(path, 200, &db); /* korch_profile_options.db_busy_ms */
    CHECK_MSG(st == KORCH_ERR_IO, "status %d", st);
    CHECK_MSG(strstr(korch_last_error(), "locked") != NULL, "message: %s", korch_last_error());
    if (st == KORCH_OK) korch_profile_db_close(db);
    sqlite3_exec(raw, "COMMIT;", NULL, NULL, NULL);
    sqlite3_close(raw);
}

int main(void) {
    snprintf(dir, sizeof dir, "/tmp/korch-test-db-%d", (int)getpid());
    mkdir(dir, 0755);
    test_round_trip();
    test_corrupt();
    test_readonly();
    test_locked();
    char cmd[300];
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    CHECK(system(cmd) == 0);
    TEST_MAIN_END();
}
