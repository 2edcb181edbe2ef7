/* Administering a profile database (`korch db`, docs/cli.md): what is in
 * it, which rows are suspect, dropping them, clearing it.
 *
 * Suspect rows (docs/profiling.md, "Profile quality"), in trials and best:
 *   provisional   measured while the machine was disturbed
 *   unknown       measured by a korch before profile quality (no state recorded)
 *   spread        clean, but the interquartile range exceeds
 *                 KORCH_DB_SPREAD_LIMIT x the median
 *   inconsistent  a best row and the trial of its own schedule differ by
 *                 more than KORCH_DB_INCONSISTENT x (both clean): one of the
 *                 two measurements was disturbed in a way the monitor missed
 *   damaged       latency not a positive finite number
 * and in verdicts:
 *   foreign       keyed by a verification fingerprint this korch does not
 *                 compute (another korch version, rule set, backend build,
 *                 thread count or machine): never read again here */
#ifndef KORCH_PROFILE_DB_ADMIN_H
#define KORCH_PROFILE_DB_ADMIN_H

#include <stdio.h>

#include "profile/profile.h"

#define KORCH_DB_SPREAD_LIMIT 0.25
#define KORCH_DB_INCONSISTENT 1.5

typedef struct korch_db_admin_options {
    /* the verification fingerprints this korch reads verdicts under; NULL:
     * verdicts are not judged */
    const char *const *verdict_keys;
    int n_verdict_keys;
    double older_than_days; /* prune: also rows measured longer ago (0: none) */
    int limit;              /* check: rows listed (the rest counted) */
    /* clear --machine: "cpu=...;isa=...;" of this machine; rows of machines
     * whose description starts with it go */
    const char *machine_prefix;
} korch_db_admin_options;

/* The database a command names: path, or the default location. Never
 * creates one: a missing file is an error naming the path. */
korch_status korch_db_admin_open(const char *path, int busy_ms, korch_profile_db **out);

korch_status korch_db_stats(korch_profile_db *db, FILE *out);
/* Lists suspect rows; *n_suspect counts them all. */
korch_status korch_db_check(korch_profile_db *db, const korch_db_admin_options *o, FILE *out, long *n_suspect);
/* Deletes suspect rows (and, with older_than_days, old ones); dry_run only
 * counts. */
korch_status korch_db_prune(korch_profile_db *db, const korch_db_admin_options *o, bool dry_run, FILE *out,
                            long *n_deleted);
/* Deletes every row, or with machine_prefix only this machine's. */
korch_status korch_db_clear(korch_profile_db *db, const korch_db_admin_options *o, FILE *out, long *n_deleted);

#endif
