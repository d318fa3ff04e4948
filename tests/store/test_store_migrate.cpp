// The migration runner: embedded migrations are numbered 1..N, opening a current database is a
// no-op, and a later migration is applied once to an older database (or rolled back whole).
#include <SQLiteCpp/Database.h>
#include <SQLiteCpp/Statement.h>

#include <string>
#include <vector>

#include "store/migrate.h"
#include "store/store_test_util.h"

namespace ktune::test {
namespace {

using detail::Migration;
using StoreMigrate = StoreTest;

int count(SQLite::Database& db, const std::string& sql) { return db.execAndGet(sql).getInt(); }

// The embedded migrations and one more, as a later ktune would have them.
std::vector<Migration> with_next(std::string_view sql, const std::string& name = "add_notes") {
  std::vector<Migration> list = detail::embedded_migrations();
  list.push_back(Migration{static_cast<int>(list.size()) + 1, name, sql});
  return list;
}

const int kLatest = Store::latest_schema_version();
const std::string kNext = std::to_string(kLatest + 1);

TEST(EmbeddedMigrations, AreNumberedFromOneWithNames) {
  const auto& migrations = detail::embedded_migrations();
  ASSERT_FALSE(migrations.empty());
  EXPECT_EQ(static_cast<int>(migrations.size()), Store::latest_schema_version());
  for (std::size_t i = 0; i < migrations.size(); ++i) {
    EXPECT_EQ(migrations[i].version, static_cast<int>(i) + 1);
    EXPECT_FALSE(migrations[i].description.empty());
    EXPECT_FALSE(migrations[i].sql.empty());
  }
  EXPECT_EQ(migrations[0].description, "initial");
  EXPECT_NE(migrations[0].sql.find("CREATE TABLE trials"), std::string_view::npos);
}

TEST_F(StoreMigrate, RunnerBuildsSchemaOneAndOpenMigratesIt) {
  {
    SQLite::Database db(db_path_.string(), SQLite::OPEN_READWRITE | SQLite::OPEN_CREATE);
    EXPECT_EQ(detail::apply_migrations(db, {detail::embedded_migrations().at(0)}, "t"), 1);
    EXPECT_EQ(detail::read_schema_version(db, "t"), 1);
    // Applying again is a no-op: the version is re-read inside each step's transaction.
    EXPECT_EQ(detail::apply_migrations(db, {detail::embedded_migrations().at(0)}, "t"), 1);
    EXPECT_EQ(count(db, "SELECT count(*) FROM schema_migrations"), 1);
  }
  std::string applied_at;
  {
    SQLite::Database db(db_path_.string(), SQLite::OPEN_READONLY);
    applied_at = db.execAndGet("SELECT applied_at FROM schema_migrations").getString();
  }
  {
    Store store = Store::open(db_path_);
    EXPECT_EQ(store.schema_version(), kLatest);
  }
  SQLite::Database db(db_path_.string(), SQLite::OPEN_READONLY);
  EXPECT_EQ(count(db, "SELECT count(*) FROM schema_migrations"), kLatest);
  // Step 1 was not applied again.
  EXPECT_EQ(db.execAndGet("SELECT applied_at FROM schema_migrations WHERE version = 1").getString(),
            applied_at);
}

TEST_F(StoreMigrate, ReopeningACurrentDatabaseChangesNoByte) {
  {
    Store store = Store::open(db_path_);
    Seeded s = seed(store);
    store.add_trial(make_trial(s, "a", 1.0));
  }
  const std::string before = read_bytes(db_path_);
  {
    Store store = Store::open(db_path_);
    EXPECT_EQ(store.schema_version(), Store::latest_schema_version());
  }
  EXPECT_EQ(read_bytes(db_path_), before);
}

TEST_F(StoreMigrate, ALaterMigrationIsAppliedToACurrentDatabase) {
  Seeded s;
  {
    Store store = Store::open(db_path_);
    s = seed(store);
    store.add_trial(make_trial(s, "a", 1.0));
  }
  {
    SQLite::Database db(db_path_.string(), SQLite::OPEN_READWRITE);
    EXPECT_EQ(
        detail::apply_migrations(
            db, with_next("ALTER TABLE trials ADD COLUMN notes TEXT NOT NULL DEFAULT ''"), "t"),
        kLatest + 1);
    EXPECT_EQ(detail::read_schema_version(db, "t"), kLatest + 1);
    SQLite::Statement m(db, "SELECT version, description FROM schema_migrations ORDER BY version");
    ASSERT_TRUE(m.executeStep());
    EXPECT_EQ(m.getColumn(0).getInt(), 1);
    EXPECT_EQ(m.getColumn(1).getString(), "initial");
    for (int v = 2; v <= kLatest; ++v) ASSERT_TRUE(m.executeStep());
    ASSERT_TRUE(m.executeStep());
    EXPECT_EQ(m.getColumn(0).getInt(), kLatest + 1);
    EXPECT_EQ(m.getColumn(1).getString(), "add_notes");
    EXPECT_FALSE(m.executeStep());
    EXPECT_EQ(db.execAndGet("SELECT notes FROM trials WHERE config_key = 'a'").getString(), "");
    EXPECT_EQ(db.execAndGet("PRAGMA foreign_keys").getInt(), 1) << "runner restores foreign keys";
  }
  EXPECT_EQ(meta_value(db_path_, "schema_version"), kNext);
  // To this ktune the migrated file is now from a newer ktune.
  expect_error(ErrorKind::kDatabase, "was written by a newer ktune (schema " + kNext,
               [&] { Store::open(db_path_); });
}

TEST_F(StoreMigrate, AFailingMigrationRollsBackWhole) {
  { Store store = Store::open(db_path_); }
  SQLite::Database db(db_path_.string(), SQLite::OPEN_READWRITE);
  expect_error(ErrorKind::kDatabase, "t: migration " + kNext + " (broken) failed", [&] {
    detail::apply_migrations(
        db, with_next("CREATE TABLE half (a); SELECT * FROM nowhere", "broken"), "t");
  });
  EXPECT_EQ(detail::read_schema_version(db, "t"), kLatest);
  EXPECT_FALSE(db.tableExists("half"));
  EXPECT_EQ(count(db, "SELECT count(*) FROM schema_migrations"), kLatest);
}

TEST_F(StoreMigrate, AMigrationThatBreaksAReferenceIsRolledBack) {
  { Store store = Store::open(db_path_); }
  SQLite::Database db(db_path_.string(), SQLite::OPEN_READWRITE);
  expect_error(ErrorKind::kDatabase, "leaves a broken reference in table problems_v2", [&] {
    detail::apply_migrations(db,
                             with_next("CREATE TABLE problems_v2 (id INTEGER PRIMARY KEY, "
                                       "kernel_id INTEGER REFERENCES kernels (id)); "
                                       "INSERT INTO problems_v2 VALUES (1, 999)",
                                       "dangling"),
                             "t");
  });
  EXPECT_EQ(detail::read_schema_version(db, "t"), kLatest);
  EXPECT_FALSE(db.tableExists("problems_v2"));
}

// Schema 1 kept state in text: the final re-timing was the trials whose error began with
// "re-timed interleaved", a text replay then copied into search trials; replayed devices had
// arch "replay"; a killed run stayed "running". Schema 2 types all of it.
TEST_F(StoreMigrate, SchemaTwoTypesWhatSchemaOneKeptInText) {
  {
    SQLite::Database db(db_path_.string(), SQLite::OPEN_READWRITE | SQLite::OPEN_CREATE);
    ASSERT_EQ(detail::apply_migrations(db, {detail::embedded_migrations().at(0)}, "t"), 1);
    db.exec(
        "INSERT INTO devices VALUES (1, 'NVIDIA H100 80GB HBM3', 'replay', 9, 0, 0, 0, 0, 0, "
        "'13.0', 'x', 'x');"
        "INSERT INTO kernels VALUES (1, 'reduce', 'h', 's', 'src', 'e', '{}', 'x');"
        "INSERT INTO problems VALUES (1, 'reduce', 'n=1', '{\"n\": 1}');"
        "INSERT INTO runs VALUES (1, 1, 1, 1, 'replay', 'brute_force', '{}', '{}', 'running', "
        "'x', '', '0.1.0', '13.0', 0, 'h', 'c', 1, '');");
    const auto trial = [&](int id, const char* key, int status, const char* error) {
      db.exec(std::string("INSERT INTO trials (id, run_id, kernel_id, device_id, problem_id, "
                          "config_key, config_json, status, error, sample_count, samples_ms, "
                          "registers, local_bytes, spill_bytes, static_shared_bytes, "
                          "dynamic_shared_bytes, max_threads_per_block, arch, compile_options, "
                          "compile_log, cubin_hash, created_at) VALUES (") +
              std::to_string(id) + ", 1, 1, 1, 1, '" + key + "', '{}', " + std::to_string(status) +
              ", '" + error + "', 0, '[]', -1, -1, -1, -1, -1, -1, '', '', '', '', 'x')");
    };
    const char* copied = "re-timed interleaved with the other finalists";
    trial(1, "a", 0, "");
    trial(2, "b", 0, copied);  // a search trial that replay copied the text into
    trial(3, "c", 2, "NVRTC_ERROR_COMPILATION");
    trial(4, "d", 0, "");
    trial(5, "a", 0, copied);  // the re-timing: the block at the end
    trial(6, "d", 0, copied);
  }
  Store store = Store::open(db_path_);
  EXPECT_EQ(store.schema_version(), kLatest);
  const auto trials = store.trials_of_run(1);
  ASSERT_EQ(trials.size(), 6u);
  const TrialKind expected[] = {TrialKind::kSearch, TrialKind::kSearch, TrialKind::kSearch,
                                TrialKind::kSearch, TrialKind::kRetime, TrialKind::kRetime};
  for (std::size_t i = 0; i < trials.size(); ++i) {
    EXPECT_EQ(trials[i].kind, expected[i]) << trials[i].id;
    if (trials[i].status == TrialStatus::kOk) {
      EXPECT_EQ(trials[i].error, "") << trials[i].id;
    }
  }
  EXPECT_EQ(trials[2].error, "NVRTC_ERROR_COMPILATION");
  const auto run = store.run(1);
  ASSERT_TRUE(run);
  EXPECT_TRUE(run->replayed);
  EXPECT_EQ(run->status, RunStatus::kInterrupted);
  EXPECT_EQ(store.device(1)->arch, "sm_90");
  // Resume reads past the re-timing to the search trial.
  const auto a = store.find_trial(1, 1, 1, "a", true);
  ASSERT_TRUE(a);
  EXPECT_EQ(a->id, 1);
  EXPECT_FALSE(store.find_trial(1, 1, 1, "a", false)) << "replayed trials answer replays only";
}

// Schema 6 keeps what auto chose apart from the strategy asked for; a run written before it, as
// "auto (bayes)" in runs.strategy, is split, and a named strategy is left alone.
TEST_F(StoreMigrate, SchemaSixSplitsWhatAutoChoseFromTheStrategy) {
  {
    SQLite::Database db(db_path_.string(), SQLite::OPEN_READWRITE | SQLite::OPEN_CREATE);
    std::vector<Migration> five = detail::embedded_migrations();
    ASSERT_GE(five.size(), 6u);
    five.resize(5);
    ASSERT_EQ(detail::apply_migrations(db, five, "t"), 5);
    db.exec(
        "INSERT INTO devices (id, name, arch, cc_major, cc_minor, sm_count, memory_bytes, "
        "l2_bytes, driver_version, nvrtc_version, created_at, updated_at) VALUES (1, 'GPU', "
        "'sm_90', 9, 0, 1, 1, 0, 0, '13.0', 'x', 'x');"
        "INSERT INTO kernels (id, name, source_hash, space_hash, source, entry, spec_json, "
        "created_at) VALUES (1, 'reduce', 'h', 's', 'src', 'e', '{}', 'x');"
        "INSERT INTO problems VALUES (1, 'reduce', 'n=1', '{\"n\": 1}');");
    for (const auto& [id, strategy] : std::vector<std::pair<int, std::string>>{
             {1, "auto (bayes)"}, {2, "auto (brute_force)"}, {3, "random"}, {4, "optuna:tpe"}})
      db.exec(
          "INSERT INTO runs (id, kernel_id, device_id, problem_id, backend, strategy, "
          "strategy_options, budget, status, started_at, finished_at, ktune_version, "
          "nvrtc_version, driver_version, host, command_line, seed, summary) VALUES (" +
          std::to_string(id) + ", 1, 1, 1, 'cuda', '" + strategy +
          "', '{}', '{}', 'finished', 'x', 'y', '0.1.0', '13.0', 0, 'h', 'c', 1, '')");
  }
  Store store = Store::open(db_path_);
  EXPECT_EQ(store.schema_version(), kLatest);
  const auto runs = store.runs();
  ASSERT_EQ(runs.size(), 4u);
  EXPECT_EQ(runs[0].strategy, "auto");
  EXPECT_EQ(runs[0].strategy_chosen, "bayes");
  EXPECT_EQ(runs[0].strategy_text(), "auto (bayes)");
  EXPECT_EQ(runs[1].strategy, "auto");
  EXPECT_EQ(runs[1].strategy_chosen, "brute_force");
  EXPECT_EQ(runs[2].strategy, "random");
  EXPECT_EQ(runs[2].strategy_chosen, "");
  EXPECT_EQ(runs[3].strategy_text(), "optuna:tpe");
}

TEST_F(StoreMigrate, RunnerRefusesToInitialiseAForeignDatabase) {
  SQLite::Database db(db_path_.string(), SQLite::OPEN_READWRITE | SQLite::OPEN_CREATE);
  db.exec("CREATE TABLE photos (id INTEGER PRIMARY KEY)");
  expect_error(ErrorKind::kDatabase, "t: not a ktune database",
               [&] { detail::apply_migrations(db, detail::embedded_migrations(), "t"); });
  EXPECT_FALSE(db.tableExists("ktune_meta"));
}

TEST_F(StoreMigrate, RefusesAListWithAGap) {
  SQLite::Database db(db_path_.string(), SQLite::OPEN_READWRITE | SQLite::OPEN_CREATE);
  std::vector<Migration> gap = {detail::embedded_migrations().at(0), Migration{3, "x", "SELECT 1"}};
  expect_error(ErrorKind::kInternal, "not numbered 1..N",
               [&] { detail::apply_migrations(db, gap, "t"); });
  EXPECT_FALSE(db.tableExists("ktune_meta"));
}

}  // namespace
}  // namespace ktune::test
