// Opening a database with the client: every refusal is Error(kDatabase) with the path first and
// leaves the file as it was; a read-only file works; the client never writes (open flags, file
// bytes) and reads the schema the store writes.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sqlite3.h>

#include <chrono>

#include "client_test_util.h"
#include "common/as_another_user.h"

namespace ktune::test {
namespace {

using namespace std::chrono_literals;
using ::testing::HasSubstr;
using ::testing::StartsWith;

class Open : public ClientTest {
 protected:
  // A database with one best of reduce on an H200.
  void fill() {
    Store store = Store::open(db_path_);
    BestSpec b;
    b.kernel_id = store.upsert_kernel(reduce_record());
    b.device = h200();
    b.problem = {{"n", 1 << 24}};
    b.binary_key = "cubin-key-1";
    add_best(store, b);
    store.put_binary("cubin-key-1", "sm_90", "_Z6reduceILj256ELi9ELi8EiEvPKT2_PS0_j",
                     "\x7f"
                     "ELF fake cubin");
  }

  void exec(const std::string& sql) {
    sqlite3* db = nullptr;
    ASSERT_EQ(sqlite3_open(db_path_.c_str(), &db), SQLITE_OK);
    char* error = nullptr;
    EXPECT_EQ(sqlite3_exec(db, sql.c_str(), nullptr, nullptr, &error), SQLITE_OK)
        << (error ? error : "");
    sqlite3_free(error);
    sqlite3_close(db);
  }

  std::string open_error(const std::string& needle, std::chrono::milliseconds timeout = 1000ms) {
    ClientOptions o;
    o.busy_timeout = timeout;
    const std::string message = expect_error(ErrorKind::kDatabase, needle,
                                             [&] { Client c(db_path_, client_device(h200()), o); });
    EXPECT_THAT(message, StartsWith(db_path_.string() + ": "));
    return message;
  }
};

TEST_F(Open, MissingDatabaseIsRefusedAndNotCreated) {
  open_error("no such database (the client opens read-only and never creates one)");
  EXPECT_FALSE(std::filesystem::exists(db_path_));
}

TEST_F(Open, DirectoryIsRefused) {
  std::filesystem::create_directory(db_path_);
  open_error("is a directory, not a database file");
}

TEST_F(Open, NotAnSqliteFile) {
  const std::string junk(4096, 'x');
  write_bytes(db_path_, junk);
  open_error("file is not a database");
  EXPECT_EQ(read_bytes(db_path_), junk);
}

TEST_F(Open, EmptyFile) {
  write_bytes(db_path_, "");
  open_error("empty database (no ktune schema yet)");
  EXPECT_EQ(read_bytes(db_path_), "");
}

TEST_F(Open, AnotherApplicationsDatabase) {
  exec("CREATE TABLE photos (id INTEGER PRIMARY KEY)");
  const std::string before = read_bytes(db_path_);
  open_error("not a ktune database (it has tables but no ktune_meta)");
  EXPECT_EQ(read_bytes(db_path_), before);
  exec(
      "CREATE TABLE ktune_meta (key TEXT PRIMARY KEY, value TEXT); "
      "INSERT INTO ktune_meta VALUES ('application', 'photos'), ('schema_version', '1')");
  open_error("not a ktune database (ktune_meta.application is 'photos', not 'ktune')");
}

TEST_F(Open, NewerSchemaIsRefused) {
  fill();
  const std::string newer = std::to_string(Client::kSchemaVersion + 1);
  exec("UPDATE ktune_meta SET value = '" + newer + "' WHERE key = 'schema_version'");
  const std::string before = read_bytes(db_path_);
  open_error("was written by a newer ktune (schema " + newer + ", this client reads up to " +
             std::to_string(Client::kSchemaVersion) +
             "); upgrade the ktune "
             "client");
  EXPECT_EQ(read_bytes(db_path_), before);
}

TEST_F(Open, DamagedSchemaVersion) {
  fill();
  exec("UPDATE ktune_meta SET value = 'two' WHERE key = 'schema_version'");
  open_error("damaged ktune database (ktune_meta.schema_version is 'two')");
}

TEST_F(Open, TheClientReadsTheSchemaTheStoreWrites) {
  EXPECT_EQ(Client::kSchemaVersion, Store::latest_schema_version())
      << "a new migration: teach the client the new schema, then raise kSchemaVersion";
  fill();
  Client c(db_path_, client_device(h200()));
  EXPECT_EQ(c.schema_version(), Store::latest_schema_version());
}

TEST_F(Open, LockedDatabaseIsAnErrorAfterTheBusyTimeout) {
  fill();
  // Exclusive locking mode in WAL keeps every other connection out, even readers.
  sqlite3* holder = nullptr;
  ASSERT_EQ(sqlite3_open(db_path_.c_str(), &holder), SQLITE_OK);
  ASSERT_EQ(sqlite3_exec(holder,
                         "PRAGMA locking_mode = EXCLUSIVE; BEGIN EXCLUSIVE; "
                         "INSERT INTO ktune_meta VALUES ('holder', 'x')",
                         nullptr, nullptr, nullptr),
            SQLITE_OK);
  const auto start = std::chrono::steady_clock::now();
  open_error("database is locked by another process (still busy after the busy timeout)", 150ms);
  EXPECT_GE(std::chrono::steady_clock::now() - start, 100ms) << "gave up before the timeout";
  sqlite3_exec(holder, "ROLLBACK", nullptr, nullptr, nullptr);
  sqlite3_close(holder);
  Client c(db_path_, client_device(h200()));
  EXPECT_TRUE(c.best("reduce", {{"n", 1 << 24}}));
}

TEST_F(Open, ALockTakenAfterOpeningFailsTheQueryWithTheSameError) {
  fill();
  // In WAL (as the store leaves it) an open reader keeps exclusive lockers out; a file someone
  // switched to the rollback journal can be locked under a reader's feet.
  exec("PRAGMA journal_mode = DELETE");
  ClientOptions o;
  o.busy_timeout = 100ms;
  Client c(db_path_, client_device(h200()), o);
  sqlite3* holder = nullptr;
  ASSERT_EQ(sqlite3_open(db_path_.c_str(), &holder), SQLITE_OK);
  ASSERT_EQ(sqlite3_exec(holder, "BEGIN EXCLUSIVE; INSERT INTO ktune_meta VALUES ('holder', 'x')",
                         nullptr, nullptr, nullptr),
            SQLITE_OK);
  const std::string message =
      expect_error(ErrorKind::kDatabase, "database is locked by another process", [&] {
        (void)c.best("reduce", {{"n", 1 << 24}});
      });
  EXPECT_THAT(message, StartsWith(db_path_.string() + ": best: "));
  sqlite3_exec(holder, "ROLLBACK", nullptr, nullptr, nullptr);
  sqlite3_close(holder);
  // Nothing was cached from the failed query; the next one answers.
  EXPECT_TRUE(c.best("reduce", {{"n", 1 << 24}}));
}

TEST_F(Open, AReadOnlyFileWorks) {
  fill();
  std::filesystem::permissions(db_path_,
                               std::filesystem::perms::owner_read |
                                   std::filesystem::perms::group_read |
                                   std::filesystem::perms::others_read,
                               std::filesystem::perm_options::replace);
  Client c(db_path_, client_device(h200()));
  EXPECT_TRUE(c.best("reduce", {{"n", 1 << 24}}));
  EXPECT_TRUE(c.read_only());
}

// In a folder that cannot take a -shm, the client reads a file that holds every committed
// change, and refuses one whose -wal holds changes rather than answer from its older state.
TEST_F(Open, AFolderThatCannotTakeAShmNeverGivesAnOlderBest) {
  namespace fs = std::filesystem;
  const fs::path hot = dir_ / "hot";
  fs::create_directories(hot);
  const auto add = [&](Store& store, const std::string& key, double ms) {
    BestSpec b;
    b.kernel_id = store.upsert_kernel(reduce_record());
    b.device = h200();
    b.problem = {{"n", 1 << 24}};
    b.config_key = key;
    b.time_ms = ms;
    add_best(store, b);
  };
  {
    Store store = Store::open(hot / "w.db");
    add(store, "block_size=64,variant=9,elements_per_thread=8", 0.25);
  }
  {
    Store writer = Store::open(hot / "w.db");
    add(writer, "block_size=128,variant=9,elements_per_thread=8", 0.123);
    fs::copy_file(hot / "w.db", hot / "r.db");  // as a killed writer leaves it
    fs::copy_file(hot / "w.db-wal", hot / "r.db-wal");
  }
  fs::copy_file(hot / "w.db", dir_ / "cold.db");
  for (const char* suffix : {"", "-wal", "-shm"}) fs::remove(hot / (std::string("w.db") + suffix));
  fs::create_directories(dir_ / "cold");
  fs::rename(dir_ / "cold.db", dir_ / "cold" / "r.db");
  const auto answer = [](const fs::path& path) -> std::string {
    try {
      Client c(path, client_device(h200()));
      const LookupResult r = c.best("reduce", {{"n", 1 << 24}});
      return r ? std::to_string(r->measurement.time_ms) : "no answer: " + r.message;
    } catch (const Error& e) {
      return std::string("error: ") + e.what();
    }
  };
  std::string why;
  const auto cold = in_read_only_folder(
      dir_ / "cold", [&] { return answer(dir_ / "cold" / "r.db"); }, why);
  if (!cold) GTEST_SKIP() << why;
  EXPECT_EQ(*cold, std::to_string(0.123));
  const auto stale = in_read_only_folder(
      hot, [&] { return answer(hot / "r.db"); }, why);
  ASSERT_TRUE(stale) << why;
  EXPECT_THAT(*stale, StartsWith("error: " + (hot / "r.db").string() + ": cannot be read here"));
  EXPECT_FALSE(fs::exists(hot / "r.db-shm"));
  EXPECT_EQ(answer(hot / "r.db"), std::to_string(0.123)) << "a folder that takes a -shm";
}

TEST_F(Open, TheClientNeverWrites) {
  fill();
  const std::string before = read_bytes(db_path_);
  {
    Client c(db_path_, client_device(h200()));
    const int flags = c.open_flags();
    EXPECT_TRUE(flags & SQLITE_OPEN_READONLY);
    EXPECT_FALSE(flags & SQLITE_OPEN_READWRITE);
    EXPECT_FALSE(flags & SQLITE_OPEN_CREATE);
    EXPECT_TRUE(c.read_only());
    for (std::int64_t n : {1 << 20, 1 << 24, 1 << 28}) {
      const LookupResult r = c.best("reduce", {{"n", n}});
      ASSERT_TRUE(r);
      const auto bin = c.binary(*r);
      EXPECT_EQ(bin->origin, KernelOrigin::kStoredBinary);
    }
    (void)c.best("nothing", {});
    c.clear_cache();
    (void)c.best("reduce", {});
  }
  EXPECT_EQ(read_bytes(db_path_), before);
}

TEST_F(Open, StoredBinaryIsReadWithoutNvrtcWhenItRunsOnTheDevice) {
  fill();
  Client c(db_path_, client_device(h200()));
  const LookupResult r = c.best("reduce", {{"n", 1 << 24}});
  ASSERT_TRUE(r);
  EXPECT_EQ(r->provenance.binary_key, "cubin-key-1");
  const auto bin = c.binary(*r);
  EXPECT_EQ(bin->origin, KernelOrigin::kStoredBinary);
  EXPECT_EQ(bin->cubin,
            "\x7f"
            "ELF fake cubin");
  EXPECT_EQ(bin->lowered_name, "_Z6reduceILj256ELi9ELi8EiEvPKT2_PS0_j");
  EXPECT_EQ(bin->arch, "sm_90");
  EXPECT_EQ(bin->key, "cubin-key-1");
  EXPECT_TRUE(bin->reason.empty());
  EXPECT_GE(bin->obtain_ms, 0);
  EXPECT_EQ(c.binary(*r).get(), bin.get()) << "the second call answers from memory";
  EXPECT_EQ(to_string(bin->origin), "stored binary");
}

}  // namespace
}  // namespace ktune::test
