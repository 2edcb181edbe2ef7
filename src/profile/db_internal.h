/* Internal to src/profile: the SQLite handle behind a profile database, for
 * the files that add tables or administer it (db_quality.c, db_admin.c). */
#ifndef KORCH_PROFILE_DB_INTERNAL_H
#define KORCH_PROFILE_DB_INTERNAL_H

#include <sqlite3.h>

#include "profile/profile.h"

sqlite3 *korch_profile_db_sqlite(korch_profile_db *db);
/* Adds what profile quality needs to a database of an older korch: columns
 * of trials and best, the probes table. Additive, so the schema version
 * stays and older rows stay (their quality reads as unknown: provisional).
 * Returns an SQLite result code. */
int korch_profile_db_migrate(sqlite3 *db);
/* true when trials and best have the quality columns */
bool korch_profile_db_has_quality(sqlite3 *db);

#endif
