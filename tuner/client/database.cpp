// The client's read-only SQLite connection: open and inspect (refusing what is not a ktune
// database of a readable schema), cached statements, and SQLite errors as ktune errors.
#include "client/database.h"

#include <SQLiteCpp/Exception.h>
#include <sqlite3.h>

#include <charconv>
#include <limits>
#include <system_error>

#include "ktune/database_error.h"

namespace ktune::detail {

namespace {

// A plain read-only open failed for want of a -shm (cannot_take_shm).
struct ShmUnavailable {};

}  // namespace

Query::Query(Database& db, SQLite::Statement& statement, const char* op)
    : db_(db), statement_(statement), op_(op) {}

Query::~Query() {
  statement_.tryReset();
  try {
    statement_.clearBindings();
  } catch (...) {
    // Only a misuse could fail here, and destructors never throw.
  }
}

Query& Query::bind(int index, std::string_view text) {
  try {
    statement_.bind(index, std::string(text));
  } catch (const SQLite::Exception& e) {
    db_.fail(op_, e);
  }
  return *this;
}

Query& Query::bind(int index, std::int64_t value) {
  try {
    statement_.bind(index, static_cast<int64_t>(value));
  } catch (const SQLite::Exception& e) {
    db_.fail(op_, e);
  }
  return *this;
}

bool Query::step() {
  try {
    return statement_.executeStep();
  } catch (const SQLite::Exception& e) {
    db_.fail(op_, e);
  }
}

std::int64_t Query::integer(int column) const { return statement_.getColumn(column).getInt64(); }

double Query::real(int column) const {
  const SQLite::Column c = statement_.getColumn(column);
  // NaN for NULL, and for a text or blob that a damaged row holds where a number belongs.
  return c.isInteger() || c.isFloat() ? c.getDouble() : std::numeric_limits<double>::quiet_NaN();
}

std::string Query::text(int column) const { return std::string(text_view(column)); }

std::string_view Query::text_view(int column) const {
  const SQLite::Column c = statement_.getColumn(column);
  const char* data = c.getText(nullptr);
  return data ? std::string_view(data, static_cast<std::size_t>(c.getBytes())) : std::string_view();
}

std::string Query::blob(int column) const {
  const SQLite::Column c = statement_.getColumn(column);
  const auto* data = static_cast<const char*>(c.getBlob());
  return data ? std::string(data, static_cast<std::size_t>(c.getBytes())) : std::string();
}

bool Query::is_null(int column) const { return statement_.getColumn(column).isNull(); }

Database::Database(const std::filesystem::path& path, std::chrono::milliseconds busy_timeout,
                   int min_schema, int max_schema)
    : path_(path), where_(path.string()), busy_timeout_(busy_timeout) {
  std::error_code ec;
  const auto status = std::filesystem::status(path, ec);
  if (std::filesystem::is_directory(status)) {
    throw Error(ErrorKind::kDatabase, where_ + ": is a directory, not a database file");
  }
  if (!std::filesystem::exists(status)) {
    throw Error(ErrorKind::kDatabase,
                where_ + ": no such database (the client opens read-only and never creates one)");
  }
  // NOMUTEX: the Client serialises its own use of the connection.
  open(where_, SQLite::OPEN_READONLY | SQLite::OPEN_NOMUTEX);
  try {
    inspect(min_schema, max_schema);
  } catch (const ShmUnavailable&) {
    // A folder that cannot take the -shm (a read-only folder or file system): read the file as
    // immutable where it alone holds the committed state, else say it cannot be read here.
    statements_.clear();
    db_.reset();
    open(immutable_read_uri(path, where_),
         SQLite::OPEN_READONLY | SQLite::OPEN_NOMUTEX | SQLite::OPEN_URI);
    inspect(min_schema, max_schema);
  }
}

Database::~Database() = default;

void Database::open(const std::string& filename, int flags) {
  flags_ = flags;
  try {
    db_ = std::make_unique<SQLite::Database>(filename, flags,
                                             static_cast<int>(busy_timeout_.count()));
    sqlite3_extended_result_codes(db_->getHandle(), 1);
    // Belt and braces: the connection is read-only already; this refuses writes in SQL as well.
    db_->exec("PRAGMA query_only = 1");
  } catch (const SQLite::Exception& e) {
    if (!db_) throw Error(ErrorKind::kDatabase, where_ + ": cannot open (" + e.what() + ")");
    fail("open", e);
  }
}

void Database::inspect(int min_schema, int max_schema) {
  std::string application, version_text;
  bool has_version = false;
  try {
    // Preparing reads the schema: a file that is not SQLite fails here (NOTADB), a locked one
    // after the busy timeout (BUSY); a missing ktune_meta is an SQLITE_ERROR.
    std::unique_ptr<SQLite::Statement> meta;
    try {
      meta = std::make_unique<SQLite::Statement>(
          *db_, "SELECT key, value FROM ktune_meta WHERE key IN ('application', 'schema_version')");
    } catch (const SQLite::Exception& e) {
      if ((e.getErrorCode() & 0xff) != SQLITE_ERROR) throw;
      if (db_->execAndGet("SELECT count(*) FROM sqlite_master").getInt64() == 0) {
        throw Error(
            ErrorKind::kDatabase,
            where_ + ": empty database (no ktune schema yet); nothing has been tuned into it");
      }
      throw Error(ErrorKind::kDatabase,
                  where_ + ": not a ktune database (it has tables but no ktune_meta)");
    }
    while (meta->executeStep()) {
      const std::string key = meta->getColumn(0).getString();
      if (key == "application") application = meta->getColumn(1).getString();
      if (key == "schema_version") {
        version_text = meta->getColumn(1).getString();
        has_version = true;
      }
    }
  } catch (const SQLite::Exception& e) {
    const int code = e.getErrorCode() & 0xff;
    if (!(flags_ & SQLite::OPEN_URI) && (code == SQLITE_CANTOPEN || code == SQLITE_READONLY) &&
        cannot_take_shm(path_))
      throw ShmUnavailable{};
    fail("", e);
  }
  if (application != "ktune") {
    throw Error(ErrorKind::kDatabase, where_ +
                                          ": not a ktune database (ktune_meta.application is '" +
                                          application + "', not 'ktune')");
  }
  int version = 0;
  const auto [end, ec] =
      std::from_chars(version_text.data(), version_text.data() + version_text.size(), version);
  if (!has_version || ec != std::errc() || end != version_text.data() + version_text.size() ||
      version < 1) {
    throw Error(
        ErrorKind::kDatabase,
        where_ + ": damaged ktune database (ktune_meta.schema_version is '" + version_text + "')");
  }
  if (version > max_schema) {
    throw Error(ErrorKind::kDatabase, where_ + ": was written by a newer ktune (schema " +
                                          std::to_string(version) + ", this client reads up to " +
                                          std::to_string(max_schema) +
                                          "); upgrade the ktune client");
  }
  if (version < min_schema) {
    throw Error(ErrorKind::kDatabase,
                where_ + ": database has schema " + std::to_string(version) +
                    " but this client needs " + std::to_string(min_schema) +
                    "; open it once read-write (any ktune command that writes) to migrate it");
  }
  schema_version_ = version;
}

Query Database::query(const char* op, std::string_view sql) {
  auto it = statements_.find(std::string(sql));
  if (it == statements_.end()) {
    try {
      it = statements_
               .emplace(std::string(sql),
                        std::make_unique<SQLite::Statement>(*db_, std::string(sql)))
               .first;
    } catch (const SQLite::Exception& e) {
      fail(op, e);
    }
  }
  return Query(*this, *it->second, op);
}

void Database::begin() {
  try {
    db_->exec("BEGIN");
  } catch (const SQLite::Exception& e) {
    fail("begin", e);
  }
}

void Database::end() noexcept {
  if (sqlite3_get_autocommit(db_->getHandle()) == 0) {
    try {
      db_->exec("COMMIT");
    } catch (...) {
      // A read transaction has nothing to lose.
    }
  }
}

bool Database::read_only() const { return sqlite3_db_readonly(db_->getHandle(), "main") == 1; }

void Database::fail(const char* op, const SQLite::Exception& e) const {
  const std::string where = where_ + (op && *op ? std::string(": ") + op : std::string());
  if ((e.getErrorCode() & 0xff) == SQLITE_CANTOPEN)
    throw Error(ErrorKind::kDatabase, where + ": cannot open (" + e.what() + ")");
  throw database_error(where, e, true);
}

}  // namespace ktune::detail
