// The migration runner and the SQLite-to-ktune error translation shared by the store.
#include "store/migrate.h"

#include <SQLiteCpp/Statement.h>
#include <SQLiteCpp/Transaction.h>
#include <sqlite3.h>
#include <unistd.h>

#include <charconv>
#include <iterator>

#include "ktune/store.h"

// One symbol pair per db/migrations/NNN_name.sql, embedded by db/CMakeLists.txt.
#define KTUNE_MIGRATION(index, name)                \
  extern const char* const ktune_migration_##index; \
  extern const std::size_t ktune_migration_##index##_size;
#include "ktune_migrations.inc"
#undef KTUNE_MIGRATION

namespace {

struct EmbeddedMigration {
  const char* name;
  const char* const* text;
  const std::size_t* size;
};

#define KTUNE_MIGRATION(index, name) \
  {name, &ktune_migration_##index, &ktune_migration_##index##_size},
const EmbeddedMigration kEmbeddedMigrations[] = {
#include "ktune_migrations.inc"
};
#undef KTUNE_MIGRATION
static_assert(std::size(kEmbeddedMigrations) == KTUNE_MIGRATION_COUNT);

}  // namespace

namespace ktune::detail {

const std::vector<Migration>& embedded_migrations() {
  static const std::vector<Migration> migrations = [] {
    std::vector<Migration> list;
    int version = 0;
    for (const EmbeddedMigration& m : kEmbeddedMigrations) {
      list.push_back(Migration{++version, m.name, std::string_view(*m.text, *m.size)});
    }
    return list;
  }();
  return migrations;
}

Error database_error(const std::string& where, const SQLite::Exception& e, bool read_only) {
  const int code = e.getErrorCode() & 0xff;
  switch (code) {
    case SQLITE_BUSY:
    case SQLITE_LOCKED:
      return Error(ErrorKind::kDatabase,
                   where +
                       ": database is locked by another process (still busy after the busy "
                       "timeout); try again when it has finished");
    case SQLITE_NOTADB:
      return Error(ErrorKind::kDatabase, where + ": file is not a database");
    case SQLITE_CORRUPT:
      return Error(ErrorKind::kDatabase, where + ": database is corrupt (" + e.what() + ")");
    case SQLITE_READONLY:
      return Error(ErrorKind::kDatabase,
                   where + (read_only ? ": database is open read-only" : ": cannot write: ") +
                       (read_only ? "" : e.what()));
    default:
      return Error(ErrorKind::kDatabase, where + ": " + e.what());
  }
}

bool cannot_take_shm(const std::filesystem::path& path) {
  std::error_code ec;
  const std::filesystem::path file = std::filesystem::absolute(path, ec);
  if (ec || std::filesystem::exists(file.string() + "-shm", ec)) return false;
  return ::access(file.parent_path().c_str(), W_OK) != 0;
}

std::string sqlite_uri(const std::filesystem::path& path, const std::string& query) {
  std::error_code ec;
  const std::filesystem::path file = std::filesystem::absolute(path, ec);
  std::string uri = "file://";  // an empty authority, then the absolute path
  for (const char c : (ec ? path : file).string()) {
    if (c == '%' || c == '?' || c == '#') {
      static constexpr char kHex[] = "0123456789abcdef";
      uri += '%';
      uri += kHex[(static_cast<unsigned char>(c) >> 4) & 0xf];
      uri += kHex[static_cast<unsigned char>(c) & 0xf];
    } else {
      uri += c;
    }
  }
  return query.empty() ? uri : uri + "?" + query;
}

std::string immutable_read_uri(const std::filesystem::path& path, const std::string& where) {
  std::error_code ec;
  const auto wal_bytes = std::filesystem::file_size(path.string() + "-wal", ec);
  if (!ec && wal_bytes > 0)
    throw Error(ErrorKind::kDatabase,
                where +
                    ": cannot be read here: its -wal holds changes that are not in the file yet "
                    "(a writer stopped before its checkpoint), and reading them needs a -shm "
                    "file that its folder cannot take; copy the file and its -wal into a "
                    "folder that can be written, or open it once where it can");
  return sqlite_uri(path, "immutable=1");
}

std::string sqlite_file_name(const std::filesystem::path& path) {
  const std::string name = path.string();
  return name.rfind("file:", 0) == 0 ? "./" + name : name;
}

int read_schema_version(SQLite::Database& db, const std::string& where) {
  if (!db.tableExists("ktune_meta")) return 0;
  SQLite::Statement query(db, "SELECT value FROM ktune_meta WHERE key = 'schema_version'");
  if (!query.executeStep() || query.getColumn(0).isNull()) {
    throw Error(ErrorKind::kDatabase, where +
                                          ": damaged ktune database (ktune_meta has no "
                                          "schema_version)");
  }
  const std::string text = query.getColumn(0).getString();
  int version = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), version);
  if (ec != std::errc() || end != text.data() + text.size() || version < 1) {
    throw Error(ErrorKind::kDatabase,
                where + ": damaged ktune database (ktune_meta.schema_version is '" + text + "')");
  }
  return version;
}

namespace {

// PRAGMA foreign_keys is a no-op inside a transaction, so it brackets the whole run.
class ForeignKeysOff {
 public:
  explicit ForeignKeysOff(SQLite::Database& db) : db_(db) { db_.exec("PRAGMA foreign_keys = OFF"); }
  ~ForeignKeysOff() {
    try {
      db_.exec("PRAGMA foreign_keys = ON");
    } catch (...) {
      // Destructors never throw; the store sets it again after migrating.
    }
  }
  ForeignKeysOff(const ForeignKeysOff&) = delete;
  ForeignKeysOff& operator=(const ForeignKeysOff&) = delete;

 private:
  SQLite::Database& db_;
};

}  // namespace

int apply_migrations(SQLite::Database& db, const std::vector<Migration>& migrations,
                     const std::string& where) {
  for (std::size_t i = 0; i < migrations.size(); ++i) {
    if (migrations[i].version != static_cast<int>(i) + 1) {
      throw Error(ErrorKind::kInternal, where + ": migration list is not numbered 1..N (entry " +
                                            std::to_string(i) + " has version " +
                                            std::to_string(migrations[i].version) + ")");
    }
  }
  ForeignKeysOff fk_off(db);
  int version = 0;
  for (const Migration& m : migrations) {
    const std::string step = "migration " + std::to_string(m.version) + " (" + m.description + ")";
    try {
      SQLite::Transaction tx(db, SQLite::TransactionBehavior::IMMEDIATE);
      // Re-read under the write lock: another process may have migrated since we looked.
      version = read_schema_version(db, where);
      if (version >= m.version) continue;
      if (version == 0 && db.execAndGet("SELECT count(*) FROM sqlite_master").getInt() != 0) {
        // Tables appeared since open() saw an empty file: someone else's, so not ours to extend.
        throw Error(ErrorKind::kDatabase,
                    where + ": not a ktune database (it has tables but no ktune_meta)");
      }
      if (version != m.version - 1) {
        throw Error(ErrorKind::kDatabase,
                    where + ": schema " + std::to_string(version) + " cannot take " + step);
      }
      db.exec(std::string(m.sql));
      SQLite::Statement fk_check(db, "PRAGMA foreign_key_check");
      if (fk_check.executeStep()) {
        throw Error(ErrorKind::kDatabase, where + ": " + step +
                                              " leaves a broken reference in table " +
                                              fk_check.getColumn(0).getString());
      }
      SQLite::Statement record(
          db, "INSERT INTO schema_migrations (version, description, applied_at) VALUES (?, ?, ?)");
      record.bind(1, m.version);
      record.bind(2, m.description);
      record.bind(3, utc_now());
      record.exec();
      SQLite::Statement meta(db,
                             "INSERT INTO ktune_meta (key, value) VALUES ('application', 'ktune'), "
                             "('schema_version', ?) ON CONFLICT (key) DO UPDATE SET value = "
                             "excluded.value");
      meta.bind(1, std::to_string(m.version));
      meta.exec();
      tx.commit();
      version = m.version;
    } catch (const SQLite::Exception& e) {
      const int code = e.getErrorCode() & 0xff;
      if (code == SQLITE_BUSY || code == SQLITE_LOCKED) throw database_error(where, e);
      throw Error(ErrorKind::kDatabase, where + ": " + step + " failed: " + e.what());
    }
  }
  return version;
}

}  // namespace ktune::detail
