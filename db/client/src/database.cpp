// The client's read-only SQLite connection: open and inspect (refusing what is not a ktune
// database of a readable schema), cached statements, and SQLite errors as ktune errors.
#include "database.h"

#include <unistd.h>

#include <charconv>
#include <cmath>
#include <limits>
#include <system_error>

namespace ktune::detail {

namespace {

// "file:" URI text of a path: only the characters a URI parser would take apart are escaped.
std::string uri_path(const std::string& path) {
  std::string out;
  for (const char c : path) {
    if (c == '%' || c == '?' || c == '#') {
      static constexpr char kHex[] = "0123456789abcdef";
      out += '%';
      out += kHex[(static_cast<unsigned char>(c) >> 4) & 0xf];
      out += kHex[static_cast<unsigned char>(c) & 0xf];
    } else {
      out += c;
    }
  }
  return out;
}

}  // namespace

Query::Query(Database& db, sqlite3_stmt* statement, const char* op)
    : db_(db), statement_(statement), op_(op) {}

Query::~Query() {
  sqlite3_reset(statement_);
  sqlite3_clear_bindings(statement_);
}

Query& Query::bind(int index, std::string_view text) {
  const int rc = sqlite3_bind_text(statement_, index, text.data(), static_cast<int>(text.size()),
                                   SQLITE_STATIC);
  if (rc != SQLITE_OK) db_.fail(op_, rc);
  return *this;
}

Query& Query::bind(int index, std::int64_t value) {
  const int rc = sqlite3_bind_int64(statement_, index, value);
  if (rc != SQLITE_OK) db_.fail(op_, rc);
  return *this;
}

bool Query::step() {
  const int rc = sqlite3_step(statement_);
  if (rc == SQLITE_ROW) return true;
  if (rc == SQLITE_DONE) return false;
  db_.fail(op_, rc);
}

std::int64_t Query::integer(int column) const { return sqlite3_column_int64(statement_, column); }

double Query::real(int column) const {
  if (is_null(column)) return std::numeric_limits<double>::quiet_NaN();
  return sqlite3_column_double(statement_, column);
}

std::string Query::text(int column) const { return std::string(text_view(column)); }

std::string_view Query::text_view(int column) const {
  const auto* data = reinterpret_cast<const char*>(sqlite3_column_text(statement_, column));
  const int size = sqlite3_column_bytes(statement_, column);
  return data ? std::string_view(data, static_cast<std::size_t>(size)) : std::string_view();
}

std::string Query::blob(int column) const {
  const auto* data = static_cast<const char*>(sqlite3_column_blob(statement_, column));
  const int size = sqlite3_column_bytes(statement_, column);
  return data ? std::string(data, static_cast<std::size_t>(size)) : std::string();
}

bool Query::is_null(int column) const {
  return sqlite3_column_type(statement_, column) == SQLITE_NULL;
}

Database::Database(const std::filesystem::path& path, std::chrono::milliseconds busy_timeout,
                   int max_schema)
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
  open(where_, SQLITE_OPEN_READONLY | SQLITE_OPEN_NOMUTEX);
  try {
    inspect(max_schema);
  } catch (const Error&) {
    // A WAL database needs its -shm file; a reader that may not create it (a read-only
    // directory) cannot read the file at all. When nobody can write the file either, the
    // immutable flag reads it without -shm, which is then safe.
    const int code = sqlite3_extended_errcode(db_) & 0xff;
    if (code != SQLITE_CANTOPEN && code != SQLITE_READONLY) throw;
    if (::access(where_.c_str(), W_OK) == 0) throw;
    statements_.clear();
    sqlite3_close_v2(db_);
    db_ = nullptr;
    open("file:" + uri_path(std::filesystem::absolute(path).string()) + "?immutable=1",
         SQLITE_OPEN_READONLY | SQLITE_OPEN_NOMUTEX | SQLITE_OPEN_URI);
    inspect(max_schema);
  }
}

Database::~Database() {
  statements_.clear();  // statements are finalised before the connection closes
  if (db_) sqlite3_close_v2(db_);
}

void Database::open(const std::string& filename, int flags) {
  flags_ = flags;
  const int rc = sqlite3_open_v2(filename.c_str(), &db_, flags, nullptr);
  if (rc != SQLITE_OK) {
    const std::string message = db_ ? sqlite3_errmsg(db_) : sqlite3_errstr(rc);
    sqlite3_close_v2(db_);
    db_ = nullptr;
    throw Error(ErrorKind::kDatabase, where_ + ": cannot open (" + message + ")");
  }
  sqlite3_extended_result_codes(db_, 1);
  sqlite3_busy_timeout(db_, static_cast<int>(busy_timeout_.count()));
  // Belt and braces: the connection is read-only already; this refuses writes in SQL as well.
  char* error = nullptr;
  if (sqlite3_exec(db_, "PRAGMA query_only = 1", nullptr, nullptr, &error) != SQLITE_OK) {
    sqlite3_free(error);
    fail("open", sqlite3_extended_errcode(db_));
  }
}

void Database::inspect(int max_schema) {
  // Preparing reads the schema: a file that is not SQLite fails here (NOTADB), a locked one
  // after the busy timeout (BUSY); a missing ktune_meta is an SQLITE_ERROR.
  sqlite3_stmt* raw = nullptr;
  const char* sql =
      "SELECT key, value FROM ktune_meta WHERE key IN ('application', 'schema_version')";
  int rc = sqlite3_prepare_v3(db_, sql, -1, 0, &raw, nullptr);
  if (rc != SQLITE_OK) {
    sqlite3_finalize(raw);
    if ((rc & 0xff) != SQLITE_ERROR) fail("", rc);
    sqlite3_stmt* count = nullptr;
    if (sqlite3_prepare_v3(db_, "SELECT count(*) FROM sqlite_master", -1, 0, &count, nullptr) !=
        SQLITE_OK) {
      fail("", sqlite3_extended_errcode(db_));
    }
    rc = sqlite3_step(count);
    const std::int64_t objects = rc == SQLITE_ROW ? sqlite3_column_int64(count, 0) : -1;
    sqlite3_finalize(count);
    if (rc != SQLITE_ROW) fail("", rc);
    if (objects == 0) {
      throw Error(
          ErrorKind::kDatabase,
          where_ + ": empty database (no ktune schema yet); nothing has been tuned into it");
    }
    throw Error(ErrorKind::kDatabase,
                where_ + ": not a ktune database (it has tables but no ktune_meta)");
  }
  std::unique_ptr<sqlite3_stmt, Finalize> meta(raw);
  std::string application, version_text;
  bool has_version = false;
  while ((rc = sqlite3_step(raw)) == SQLITE_ROW) {
    const std::string key = reinterpret_cast<const char*>(sqlite3_column_text(raw, 0));
    const auto* value = reinterpret_cast<const char*>(sqlite3_column_text(raw, 1));
    if (key == "application") application = value ? value : "";
    if (key == "schema_version") {
      version_text = value ? value : "";
      has_version = true;
    }
  }
  if (rc != SQLITE_DONE) fail("", rc);
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
  if (version < max_schema) {
    throw Error(ErrorKind::kDatabase,
                where_ + ": database has schema " + std::to_string(version) +
                    " but this client needs " + std::to_string(max_schema) +
                    "; open it once read-write (any ktune command that writes) to migrate it");
  }
  schema_version_ = version;
}

Query Database::query(const char* op, std::string_view sql) {
  auto it = statements_.find(std::string(sql));
  if (it == statements_.end()) {
    sqlite3_stmt* raw = nullptr;
    const int rc = sqlite3_prepare_v3(db_, sql.data(), static_cast<int>(sql.size()),
                                      SQLITE_PREPARE_PERSISTENT, &raw, nullptr);
    if (rc != SQLITE_OK) {
      sqlite3_finalize(raw);
      fail(op, rc);
    }
    it = statements_.emplace(std::string(sql), std::unique_ptr<sqlite3_stmt, Finalize>(raw)).first;
  }
  return Query(*this, it->second.get(), op);
}

void Database::begin() {
  Query q = query("begin", "BEGIN");
  q.step();
}

void Database::end() noexcept {
  if (sqlite3_get_autocommit(db_) == 0) sqlite3_exec(db_, "COMMIT", nullptr, nullptr, nullptr);
}

bool Database::read_only() const { return sqlite3_db_readonly(db_, "main") == 1; }

void Database::fail(const char* op, int code) const {
  const std::string where = where_ + (op && *op ? std::string(": ") + op : std::string());
  const std::string message = db_ ? sqlite3_errmsg(db_) : sqlite3_errstr(code);
  switch (code & 0xff) {
    case SQLITE_BUSY:
    case SQLITE_LOCKED:
      throw Error(ErrorKind::kDatabase,
                  where +
                      ": database is locked by another process (still busy after the busy "
                      "timeout); try again when it has finished");
    case SQLITE_NOTADB:
      throw Error(ErrorKind::kDatabase, where + ": file is not a database");
    case SQLITE_CORRUPT:
      throw Error(ErrorKind::kDatabase, where + ": database is corrupt (" + message + ")");
    case SQLITE_CANTOPEN:
      throw Error(ErrorKind::kDatabase, where + ": cannot open (" + message + ")");
    default:
      throw Error(ErrorKind::kDatabase, where + ": " + message);
  }
}

}  // namespace ktune::detail
