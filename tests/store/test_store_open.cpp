// What Store::open accepts and refuses (each refusal leaves the file byte-for-byte as it was),
// read-only mode, locking, and two writers on one file.
#include <SQLiteCpp/Database.h>
#include <SQLiteCpp/Statement.h>

#include <atomic>
#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include "common/as_another_user.h"
#include "store/store_test_util.h"

namespace ktune::test {
namespace {

using namespace std::chrono_literals;
using StoreOpen = StoreTest;

bool contains_text(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

// Expects open() in `mode` to throw Error(kDatabase) containing `needle` and to leave the
// file's bytes exactly as they were.
void expect_refused(const std::filesystem::path& path, Store::Mode mode,
                    const std::string& needle) {
  const std::string before = read_bytes(path);
  const std::string message =
      expect_error(ErrorKind::kDatabase, needle, [&] { Store::open(path, mode, 200ms); });
  EXPECT_EQ(message.rfind(path.string() + ": ", 0), 0u) << "context first: " << message;
  EXPECT_NE(message.back(), '.') << message;
  EXPECT_EQ(read_bytes(path), before) << "refused file was modified: " << path;
}

void expect_refused_in_both_modes(const std::filesystem::path& path, const std::string& needle) {
  expect_refused(path, Store::Mode::kReadWrite, needle);
  expect_refused(path, Store::Mode::kReadOnly, needle);
}

// A ktune database with enough rows to span many pages.
void fill_database(const std::filesystem::path& path, int trials) {
  Store store = Store::open(path);
  Seeded s = seed(store);
  for (int i = 0; i < trials; ++i) {
    TrialRecord t = make_trial(s, "config=" + std::to_string(i), 1.0 + i);
    t.compile_log = std::string(1500, static_cast<char>('a' + i % 26));
    store.add_trial(t);
  }
}

TEST_F(StoreOpen, RefusesATextFile) {
  std::string text;
  for (int i = 0; i < 200; ++i) text += "this is a results file, but not a database\n";
  write_bytes(db_path_, text);
  expect_refused_in_both_modes(db_path_, "file is not a database");
}

TEST_F(StoreOpen, RefusesAForeignSqliteDatabase) {
  {
    SQLite::Database db(db_path_.string(), SQLite::OPEN_READWRITE | SQLite::OPEN_CREATE);
    db.exec(
        "CREATE TABLE photos (id INTEGER PRIMARY KEY, title TEXT); "
        "INSERT INTO photos (title) VALUES ('holiday')");
  }
  const std::string message = expect_error(
      ErrorKind::kDatabase, "", [&] { Store::open(db_path_, Store::Mode::kReadWrite, 200ms); });
  EXPECT_EQ(message,
            db_path_.string() + ": not a ktune database (it has tables but no ktune_meta)");
  expect_refused_in_both_modes(db_path_, "not a ktune database (it has tables but no ktune_meta)");
}

TEST_F(StoreOpen, RefusesAForeignKtuneMeta) {
  {
    SQLite::Database db(db_path_.string(), SQLite::OPEN_READWRITE | SQLite::OPEN_CREATE);
    db.exec(
        "CREATE TABLE ktune_meta (key TEXT PRIMARY KEY, value TEXT); "
        "INSERT INTO ktune_meta VALUES ('application', 'ktunes-cousin'), "
        "('schema_version', '1')");
  }
  expect_refused_in_both_modes(db_path_,
                               "not a ktune database (ktune_meta.application is "
                               "'ktunes-cousin', not 'ktune')");
}

TEST_F(StoreOpen, InitialisesAnEmptyFile) {
  write_bytes(db_path_, "");
  Store store = Store::open(db_path_);
  EXPECT_EQ(store.schema_version(), Store::latest_schema_version());
  EXPECT_EQ(meta_value(db_path_, "application"), "ktune");
}

TEST_F(StoreOpen, InitialisesAnSqliteDatabaseWithoutTables) {
  {
    SQLite::Database db(db_path_.string(), SQLite::OPEN_READWRITE | SQLite::OPEN_CREATE);
    db.exec("PRAGMA user_version = 5");
  }
  ASSERT_GT(std::filesystem::file_size(db_path_), 0u);
  Store store = Store::open(db_path_);
  EXPECT_EQ(store.schema_version(), Store::latest_schema_version());
}

TEST_F(StoreOpen, RefusesAnEmptyFileReadOnly) {
  write_bytes(db_path_, "");
  expect_refused(db_path_, Store::Mode::kReadOnly, "empty database (no ktune schema yet)");
}

TEST_F(StoreOpen, RefusesANewerSchema) {
  fill_database(db_path_, 3);
  const int newer = Store::latest_schema_version() + 1;
  {
    SQLite::Database db(db_path_.string(), SQLite::OPEN_READWRITE);
    db.exec("UPDATE ktune_meta SET value = '" + std::to_string(newer) +
            "' WHERE key = 'schema_version'");
  }
  const std::string expected = db_path_.string() + ": was written by a newer ktune (schema " +
                               std::to_string(newer) + ", this ktune knows up to " +
                               std::to_string(Store::latest_schema_version()) + "); upgrade ktune";
  expect_refused_in_both_modes(db_path_, expected);
}

TEST_F(StoreOpen, RefusesADamagedSchemaVersion) {
  fill_database(db_path_, 1);
  {
    SQLite::Database db(db_path_.string(), SQLite::OPEN_READWRITE);
    db.exec("UPDATE ktune_meta SET value = 'one' WHERE key = 'schema_version'");
  }
  expect_refused_in_both_modes(db_path_,
                               "damaged ktune database (ktune_meta.schema_version is "
                               "'one')");
}

TEST_F(StoreOpen, RefusesACorruptDatabase) {
  fill_database(db_path_, 400);
  std::string bytes = read_bytes(db_path_);
  const std::size_t page = 4096;
  ASSERT_GT(bytes.size(), 40 * page) << "too small to corrupt in the middle";
  // Garbage over a few pages in the middle, leaving the header and schema page intact.
  const std::size_t start = (bytes.size() / page / 2) * page;
  for (std::size_t i = start; i < start + 4 * page; ++i) bytes[i] = static_cast<char>(i * 131 + 7);
  write_bytes(db_path_, bytes);
  expect_refused_in_both_modes(db_path_, "database is corrupt");
}

TEST_F(StoreOpen, RefusesATruncatedDatabase) {
  fill_database(db_path_, 400);
  std::string bytes = read_bytes(db_path_);
  bytes.resize(bytes.size() / 2);
  write_bytes(db_path_, bytes);
  expect_refused_in_both_modes(db_path_, "database is corrupt");
}

TEST_F(StoreOpen, ReadOnlyRefusesAMissingFileAndCreatesNothing) {
  expect_error(ErrorKind::kDatabase, db_path_.string() + ": no such database",
               [&] { Store::open(db_path_, Store::Mode::kReadOnly); });
  EXPECT_FALSE(std::filesystem::exists(db_path_));
}

TEST_F(StoreOpen, RefusesADirectory) {
  expect_error(ErrorKind::kDatabase, "is a directory", [&] { Store::open(dir_); });
}

// SQLite opens "" as a private temporary database; ktune refuses it by name.
TEST_F(StoreOpen, RefusesAnEmptyPath) {
  expect_error(ErrorKind::kDatabase, "empty path", [&] { Store::open(""); });
  expect_error(ErrorKind::kDatabase, "empty path",
               [&] { Store::open("", Store::Mode::kReadOnly); });
}

TEST_F(StoreOpen, ReadOnlyReadsButNeverWrites) {
  fill_database(db_path_, 5);
  const std::string before = read_bytes(db_path_);
  {
    Store store = Store::open(db_path_, Store::Mode::kReadOnly);
    EXPECT_EQ(store.schema_version(), Store::latest_schema_version());
    ASSERT_EQ(store.devices().size(), 1u);
    EXPECT_EQ(store.trials_for(1, 1, 1).size(), 5u);
    Seeded s{1, 1, 1, 1};
    const std::string ro = "database is open read-only";
    expect_error(ErrorKind::kDatabase, ro, [&] { store.upsert_device(h200()); });
    expect_error(ErrorKind::kDatabase, ro, [&] { store.upsert_kernel(reduce_kernel()); });
    expect_error(ErrorKind::kDatabase, ro, [&] { store.upsert_problem(problem_n(1)); });
    expect_error(ErrorKind::kDatabase, ro, [&] { store.begin_run(RunRecord{}); });
    expect_error(ErrorKind::kDatabase, ro,
                 [&] { store.finish_run(1, RunStatus::kFinished, "{}"); });
    expect_error(ErrorKind::kDatabase, ro, [&] { store.add_trial(make_trial(s, "x", 1)); });
    expect_error(ErrorKind::kDatabase, ro, [&] { store.set_best(1); });
    expect_error(ErrorKind::kDatabase, ro, [&] { store.put_binary("k", "sm_90", "f", "b"); });
  }
  EXPECT_EQ(read_bytes(db_path_), before);
}

TEST_F(StoreOpen, ReadOnlySeesAnotherWritersCommits) {
  Store writer = Store::open(db_path_);
  Seeded s = seed(writer);
  Store reader = Store::open(db_path_, Store::Mode::kReadOnly);
  EXPECT_FALSE(reader.find_trial(s.kernel, s.device, s.problem, "a"));
  writer.add_trial(make_trial(s, "a", 1.0));
  EXPECT_TRUE(reader.find_trial(s.kernel, s.device, s.problem, "a"));
}

// A folder that cannot take the -shm a reader of a WAL database needs (a read-only folder or
// file system): a file that holds every committed change is read (and merged from); one whose
// -wal holds changes is refused by name, never answered from its older state.
TEST_F(StoreOpen, AFolderThatCannotTakeAShmIsReadOnlyWhereTheFileHoldsEveryChange) {
  namespace fs = std::filesystem;
  const fs::path cold = dir_ / "cold", hot = dir_ / "hot", out = dir_ / "out";
  for (const fs::path& p : {cold, hot, out}) fs::create_directories(p);
  fs::permissions(out, fs::perms::all, fs::perm_options::replace);
  {
    Store store = Store::open(cold / "r.db");
    const Seeded s = seed(store);
    store.set_best(store.add_trial(make_trial(s, "b=64", 0.25)));
  }
  {
    {
      Store store = Store::open(hot / "w.db");
      const Seeded s = seed(store);
      store.set_best(store.add_trial(make_trial(s, "b=64", 0.25)));
    }
    Store writer = Store::open(hot / "w.db");
    const Seeded s = seed(writer);
    writer.set_best(writer.add_trial(make_trial(s, "b=128", 0.123)));
    // A writer killed now: its newest best is in the -wal only.
    fs::copy_file(hot / "w.db", hot / "r.db");
    fs::copy_file(hot / "w.db-wal", hot / "r.db-wal");
  }
  for (const char* suffix : {"", "-wal", "-shm"}) fs::remove(hot / (std::string("w.db") + suffix));
  const auto best_of = [](const fs::path& path) -> std::string {
    try {
      Store store = Store::open(path, Store::Mode::kReadOnly);
      const auto b = store.best("reduce", "n=1048576", store.devices().at(0).id);
      return b ? b->trial.config_key : "no best";
    } catch (const Error& e) {
      return std::string("error: ") + e.what();
    }
  };
  std::string why;
  const auto read = in_read_only_folder(
      cold,
      [&] {
        std::string merged;
        try {
          Store fleet = Store::open(out / "fleet.db");
          fleet.merge_from(cold / "r.db");
          merged = fleet.best("reduce", "n=1048576", fleet.devices().at(0).id)->trial.config_key;
        } catch (const Error& e) {
          merged = std::string("error: ") + e.what();
        }
        return best_of(cold / "r.db") + " | " + merged;
      },
      why);
  if (!read) GTEST_SKIP() << why;
  EXPECT_EQ(*read, "b=64 | b=64");
  EXPECT_FALSE(fs::exists(cold / "r.db-shm"));
  const std::string main_before = read_bytes(hot / "r.db"),
                    wal_before = read_bytes(hot / "r.db-wal");
  const auto hot_read = in_read_only_folder(
      hot, [&] { return best_of(hot / "r.db"); }, why);
  ASSERT_TRUE(hot_read) << why;
  EXPECT_EQ(hot_read->rfind("error: " + (hot / "r.db").string() + ": cannot be read here", 0), 0u)
      << *hot_read;
  EXPECT_TRUE(contains_text(*hot_read, "-wal holds changes")) << *hot_read;
  EXPECT_EQ(read_bytes(hot / "r.db"), main_before);
  EXPECT_EQ(read_bytes(hot / "r.db-wal"), wal_before);
  EXPECT_FALSE(fs::exists(hot / "r.db-shm"));
  EXPECT_EQ(best_of(hot / "r.db"), "b=128") << "where the folder takes a -shm, the -wal is read";
}

// A best row whose trial, device or kernel version a damaged file no longer holds is an error
// naming the best, not a crash (found by fuzz_database).
TEST_F(StoreOpen, ABestNamingARowTheFileDoesNotHoldIsAnError) {
  {
    Store store = Store::open(db_path_);
    const Seeded s = seed(store);
    store.set_best(store.add_trial(make_trial(s, "b=64", 0.25)));
  }
  {
    SQLite::Database raw(db_path_.string(), SQLite::OPEN_READWRITE);
    raw.exec("PRAGMA foreign_keys = OFF");
    raw.exec("DELETE FROM devices");
  }
  const Store store = Store::open(db_path_, Store::Mode::kReadOnly);
  expect_error(ErrorKind::kDatabase,
               "damaged database: the best of reduce [n=1048576] names device",
               [&] { store.bests(); });
  expect_error(ErrorKind::kDatabase, "names device 1, which it does not hold",
               [&] { store.best("reduce", "n=1048576", 1); });
}

TEST_F(StoreOpen, RefusesADatabaseLockedByAnotherProcess) {
  fill_database(db_path_, 2);
  // Exclusive locking mode in WAL keeps every other connection out, even readers.
  SQLite::Database holder(db_path_.string(), SQLite::OPEN_READWRITE);
  holder.exec("PRAGMA locking_mode = EXCLUSIVE");
  holder.exec("BEGIN EXCLUSIVE");
  holder.exec("INSERT INTO ktune_meta VALUES ('holder', 'x')");
  const std::string before = read_bytes(db_path_);
  const auto start = std::chrono::steady_clock::now();
  const std::string message = expect_error(ErrorKind::kDatabase, "locked by another process", [&] {
    Store::open(db_path_, Store::Mode::kReadWrite, 150ms);
  });
  EXPECT_GE(std::chrono::steady_clock::now() - start, 100ms) << "gave up before the timeout";
  EXPECT_EQ(message.rfind(db_path_.string() + ": ", 0), 0u) << message;
  expect_error(ErrorKind::kDatabase, "locked by another process",
               [&] { Store::open(db_path_, Store::Mode::kReadOnly, 50ms); });
  EXPECT_EQ(read_bytes(db_path_), before);
  holder.exec("ROLLBACK");
}

TEST_F(StoreOpen, AWriteWaitsForALockThenReportsIt) {
  Store store = Store::open(db_path_, Store::Mode::kReadWrite, 100ms);
  Seeded s = seed(store);
  SQLite::Database other(db_path_.string(), SQLite::OPEN_READWRITE);
  other.exec("BEGIN IMMEDIATE");
  expect_error(ErrorKind::kDatabase, db_path_.string() + ": add_trial: database is locked",
               [&] { store.add_trial(make_trial(s, "a", 1.0)); });
  // Readers are not blocked by a writer in WAL mode.
  EXPECT_EQ(store.devices().size(), 1u);
  other.exec("COMMIT");
  EXPECT_GT(store.add_trial(make_trial(s, "a", 1.0)), 0);
}

TEST_F(StoreOpen, TwoStoresInterleaveTrials) {
  Store a = Store::open(db_path_);
  Store b = Store::open(db_path_);
  Seeded s = seed(a);
  std::vector<std::int64_t> ids;
  for (int i = 0; i < 20; ++i) {
    Store& writer = i % 2 == 0 ? a : b;
    ids.push_back(writer.add_trial(make_trial(s, "c" + std::to_string(i), i)));
  }
  for (Store* store : {&a, &b}) {
    auto all = store->trials_for(s.kernel, s.device, s.problem);
    ASSERT_EQ(all.size(), 20u);
    for (int i = 0; i < 20; ++i) {
      EXPECT_EQ(all[i].id, ids[i]);
      EXPECT_EQ(all[i].config_key, "c" + std::to_string(i));
    }
  }
  EXPECT_EQ(b.find_trial(s.kernel, s.device, s.problem, "c18")->id, ids[18]);
}

TEST_F(StoreOpen, ConcurrentWritersLoseNoTrial) {
  Seeded s;
  {
    Store setup = Store::open(db_path_);
    s = seed(setup);
  }
  constexpr int kThreads = 4;
  constexpr int kTrials = 50;
  std::atomic<int> failures{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      try {
        Store store = Store::open(db_path_);
        for (int i = 0; i < kTrials; ++i) {
          store.add_trial(make_trial(s, std::to_string(t) + ":" + std::to_string(i), i));
        }
      } catch (const std::exception& e) {
        ++failures;
        ADD_FAILURE() << e.what();
      }
    });
  }
  for (std::thread& thread : threads) thread.join();
  EXPECT_EQ(failures.load(), 0);
  Store store = Store::open(db_path_, Store::Mode::kReadOnly);
  EXPECT_EQ(store.trials_for(s.kernel, s.device, s.problem).size(),
            static_cast<std::size_t>(kThreads * kTrials));
  for (int t = 0; t < kThreads; ++t) {
    EXPECT_TRUE(store.find_trial(s.kernel, s.device, s.problem, std::to_string(t) + ":49"));
  }
}

}  // namespace
}  // namespace ktune::test
