// The schema migration runner of the results database (internal, not API): numbered steps
// applied in order, each in its own transaction that also records it, so a database is always
// at exactly one schema version. Tests drive it with their own migration lists.
#pragma once

#include <SQLiteCpp/Database.h>
#include <SQLiteCpp/Exception.h>

#include <string>
#include <string_view>
#include <vector>

#include "ktune/database_error.h"
#include "ktune/error.h"

namespace ktune::detail {

struct Migration {
  int version = 0;          // 1, 2, ...: its position in db/migrations
  std::string description;  // file name without the number: "initial"
  std::string_view sql;
};

// The migrations compiled into this ktune from db/migrations, version 1 first.
const std::vector<Migration>& embedded_migrations();

// ktune_meta.schema_version of a ktune database; 0 when the database has no ktune_meta table
// (an empty database about to be initialised). Throws Error(kDatabase) when the value is not
// a positive integer. Does not check ktune_meta.application: open() does that first.
int read_schema_version(SQLite::Database& db, const std::string& where);

// Brings the database to the last version in `migrations` (which must be numbered 1..N) and
// returns it. Each pending migration runs in its own BEGIN IMMEDIATE transaction together with
// its schema_migrations row and the new ktune_meta.schema_version, after re-reading the version
// inside that transaction, so two processes migrating at once apply each step once. Foreign
// keys are off while migrating (table rebuilds need it) and checked before each commit. A
// failing step rolls back whole and throws Error(kDatabase); earlier steps stay committed.
int apply_migrations(SQLite::Database& db, const std::vector<Migration>& migrations,
                     const std::string& where);

}  // namespace ktune::detail
