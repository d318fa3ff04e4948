// The client's read-only SQLite connection (internal, not API), on SQLiteCpp as the store's:
// opening with the refusals of docs/client.md, cached prepared statements with bound parameters
// only, and SQLite failures as Error(kDatabase) messages that start with the path (the store's
// one translation, detail::database_error).
#pragma once

#include <SQLiteCpp/Database.h>
#include <SQLiteCpp/Statement.h>

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>

#include "ktune/error.h"

namespace ktune::detail {

class Database;

// One use of a cached statement: binds, steps, reads columns; resets the statement (and drops
// its bindings) when it goes out of scope, so no read transaction stays open behind it.
class Query {
 public:
  Query(Database& db, SQLite::Statement& statement, const char* op);
  ~Query();
  Query(const Query&) = delete;
  Query& operator=(const Query&) = delete;

  Query& bind(int index, std::string_view text);
  Query& bind(int index, std::int64_t value);
  // True while there is a row; throws Error(kDatabase) for a failure.
  bool step();

  std::int64_t integer(int column) const;
  double real(int column) const;  // NULL, text and blobs read as NaN
  std::string text(int column) const;
  std::string_view text_view(int column) const;  // valid until the next step
  std::string blob(int column) const;
  bool is_null(int column) const;

 private:
  Database& db_;
  SQLite::Statement& statement_;
  const char* op_;
};

// SQL that holds for a trial `t` whose time can be a best: a finite number above zero. A best
// row whose trial is damaged (a negative time, or text where the time belongs) never answers.
inline constexpr const char* kUsableTrialTime =
    "typeof(t.time_ms) IN ('integer', 'real') AND t.time_ms > 0 AND t.time_ms < 9e999";

class Database {
 public:
  // Opens read-only and checks that the file is a ktune database of a schema this client reads
  // (Error(kDatabase) otherwise): from `min_schema` (the oldest with every column the client
  // reads) to `max_schema`.
  Database(const std::filesystem::path& path, std::chrono::milliseconds busy_timeout,
           int min_schema, int max_schema);
  ~Database();
  Database(const Database&) = delete;
  Database& operator=(const Database&) = delete;

  // A query on the statement of `sql`, prepared on first use and kept.
  Query query(const char* op, std::string_view sql);
  // BEGIN / COMMIT of a read transaction, so several queries see one snapshot.
  void begin();
  void end() noexcept;

  const std::filesystem::path& path() const { return path_; }
  const std::string& where() const { return where_; }
  int open_flags() const { return flags_; }
  bool read_only() const;
  int schema_version() const { return schema_version_; }

  // Error(kDatabase) "<path>: <op>: <what SQLite said>", naming the cases a user can act on.
  [[noreturn]] void fail(const char* op, const SQLite::Exception& e) const;

 private:
  void open(const std::string& filename, int flags);
  void inspect(int min_schema, int max_schema);

  std::filesystem::path path_;
  std::string where_;
  std::chrono::milliseconds busy_timeout_;
  int flags_ = 0;
  int schema_version_ = 0;
  // Declaration order: statements are finalised before the connection closes.
  std::unique_ptr<SQLite::Database> db_;
  std::unordered_map<std::string, std::unique_ptr<SQLite::Statement>> statements_;
};

// Scoped read transaction.
class ReadTransaction {
 public:
  explicit ReadTransaction(Database& db) : db_(db) { db_.begin(); }
  ~ReadTransaction() { db_.end(); }
  ReadTransaction(const ReadTransaction&) = delete;
  ReadTransaction& operator=(const ReadTransaction&) = delete;

 private:
  Database& db_;
};

}  // namespace ktune::detail
