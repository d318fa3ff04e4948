// The migration runner: embedded migrations are numbered 1..N, opening a current database is a
// no-op, and a later migration is applied once to an older database (or rolled back whole).
#include <SQLiteCpp/Database.h>
#include <SQLiteCpp/Statement.h>

#include <string>
#include <vector>

#include "../db/src/migrate.h"
#include "store/store_test_util.h"

namespace ktune::test {
namespace {

using detail::Migration;
using StoreMigrate = StoreTest;

int count(SQLite::Database& db, const std::string& sql) { return db.execAndGet(sql).getInt(); }

std::vector<Migration> with_second(std::string_view sql, const std::string& name = "add_notes") {
  std::vector<Migration> list = {detail::embedded_migrations().at(0)};
  list.push_back(Migration{2, name, sql});
  return list;
}

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

TEST_F(StoreMigrate, RunnerBuildsSchemaOneAndOpenAcceptsIt) {
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
    EXPECT_EQ(store.schema_version(), 1);
  }
  SQLite::Database db(db_path_.string(), SQLite::OPEN_READONLY);
  EXPECT_EQ(count(db, "SELECT count(*) FROM schema_migrations"), 1);
  EXPECT_EQ(db.execAndGet("SELECT applied_at FROM schema_migrations").getString(), applied_at);
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

TEST_F(StoreMigrate, ALaterMigrationIsAppliedToAVersionOneDatabase) {
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
            db, with_second("ALTER TABLE trials ADD COLUMN notes TEXT NOT NULL DEFAULT ''"), "t"),
        2);
    EXPECT_EQ(detail::read_schema_version(db, "t"), 2);
    SQLite::Statement m(db, "SELECT version, description FROM schema_migrations ORDER BY version");
    ASSERT_TRUE(m.executeStep());
    EXPECT_EQ(m.getColumn(0).getInt(), 1);
    EXPECT_EQ(m.getColumn(1).getString(), "initial");
    ASSERT_TRUE(m.executeStep());
    EXPECT_EQ(m.getColumn(0).getInt(), 2);
    EXPECT_EQ(m.getColumn(1).getString(), "add_notes");
    EXPECT_FALSE(m.executeStep());
    EXPECT_EQ(db.execAndGet("SELECT notes FROM trials WHERE config_key = 'a'").getString(), "");
    EXPECT_EQ(db.execAndGet("PRAGMA foreign_keys").getInt(), 1) << "runner restores foreign keys";
  }
  EXPECT_EQ(meta_value(db_path_, "schema_version"), "2");
  // To this ktune, which knows only schema 1, the migrated file is now from a newer ktune.
  expect_error(ErrorKind::kDatabase, "was written by a newer ktune (schema 2",
               [&] { Store::open(db_path_); });
}

TEST_F(StoreMigrate, AFailingMigrationRollsBackWhole) {
  { Store store = Store::open(db_path_); }
  SQLite::Database db(db_path_.string(), SQLite::OPEN_READWRITE);
  expect_error(ErrorKind::kDatabase, "t: migration 2 (broken) failed", [&] {
    detail::apply_migrations(
        db, with_second("CREATE TABLE half (a); SELECT * FROM nowhere", "broken"), "t");
  });
  EXPECT_EQ(detail::read_schema_version(db, "t"), 1);
  EXPECT_FALSE(db.tableExists("half"));
  EXPECT_EQ(count(db, "SELECT count(*) FROM schema_migrations"), 1);
}

TEST_F(StoreMigrate, AMigrationThatBreaksAReferenceIsRolledBack) {
  { Store store = Store::open(db_path_); }
  SQLite::Database db(db_path_.string(), SQLite::OPEN_READWRITE);
  expect_error(ErrorKind::kDatabase, "leaves a broken reference in table problems_v2", [&] {
    detail::apply_migrations(db,
                             with_second("CREATE TABLE problems_v2 (id INTEGER PRIMARY KEY, "
                                         "kernel_id INTEGER REFERENCES kernels (id)); "
                                         "INSERT INTO problems_v2 VALUES (1, 999)",
                                         "dangling"),
                             "t");
  });
  EXPECT_EQ(detail::read_schema_version(db, "t"), 1);
  EXPECT_FALSE(db.tableExists("problems_v2"));
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
