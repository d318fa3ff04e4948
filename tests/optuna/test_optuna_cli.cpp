// The Optuna strategies through the `ktune tune` command line, on the replay backend: a study
// kept in Optuna's storage (--study-storage, journal and SQLite) is continued by a later run
// that has only that storage (a fresh results database), and --warm-start puts the best of
// another device first. Skips, with the reason, where Python or Optuna is missing.
#include <gtest/gtest.h>

#include <algorithm>
#include <nlohmann/json.hpp>
#include <set>
#include <string>

#include "ktune/error.h"
#include "ktune/store.h"
#include "optuna/optuna_test_util.h"
#include "strategies/optuna/strategy.h"
#include "tuner/cli_test_util.h"

namespace ktune {
namespace {

namespace fs = std::filesystem;
using test::contains;
using test::TempDir;

using test::conv;
using test::optuna_missing;

// The configuration keys of the trials of every run in a database, in the order they were stored.
std::vector<std::string> trial_keys(const fs::path& db) {
  Store store = Store::open(db, Store::Mode::kReadOnly);
  std::vector<std::string> keys;
  for (const RunRecord& run : store.runs())
    for (const TrialRecord& t : store.trials_of_run(run.id)) keys.push_back(t.config_key);
  return keys;
}

class OptunaCli : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    const std::string why = optuna_missing();
    if (!why.empty()) GTEST_SKIP() << why;
  }
  test::CliResult run(const std::vector<std::string>& args) {
    return test::run_ktune(args, dir_.path(), dir_ / "cache");
  }
  TempDir dir_;
};

TEST_P(OptunaCli, ContinuesAStudyFromItsStorageWithoutTheResultsDatabase) {
  const std::string url = GetParam() == "journal" ? "journal:" + (dir_ / "study.log").string()
                                                  : "sqlite:///" + (dir_ / "study.db").string();
  const auto tune = [&](const std::string& db) {
    // The same seed both times: a study started afresh would propose the same configurations.
    return run({"tune", "convolution_kernel", "--replay", conv(), "--strategy", "optuna:tpe",
                "--study-storage", url, "--strategy-option", "n_startup_trials=5", "--budget-evals",
                "15", "--seed", "3", "--retime-top", "0", "--db", db, "--json"});
  };
  auto r = tune("first.db");
  ASSERT_EQ(r.code, 0) << r;
  auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j.at("trials"), 15);
  EXPECT_EQ(j.at("measured"), 15);
  EXPECT_EQ(j.at("strategy"), "optuna:tpe");
  const std::vector<std::string> first = trial_keys(dir_ / "first.db");
  const std::set<std::string> first_set(first.begin(), first.end());
  ASSERT_EQ(first_set.size(), 15u);

  // A fresh results database: only Optuna's storage knows what was measured.
  r = tune("second.db");
  ASSERT_EQ(r.code, 0) << r;
  j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j.at("measured"), 15);
  const std::vector<std::string> second = trial_keys(dir_ / "second.db");
  ASSERT_EQ(second.size(), 15u);
  for (const std::string& key : second)
    EXPECT_FALSE(first_set.count(key)) << "proposed again: " << key;

  // The run records the storage among its strategy options.
  Store store = Store::open(dir_ / "second.db", Store::Mode::kReadOnly);
  EXPECT_TRUE(contains(store.runs().at(0).strategy_options, url))
      << store.runs().at(0).strategy_options;
}

INSTANTIATE_TEST_SUITE_P(Optuna, OptunaCli, ::testing::Values("journal", "sqlite"));

class OptunaCliOptions : public OptunaCli {};

TEST_F(OptunaCliOptions, StudyStorageIsOnlyForOptunaAndMustAgreeWithTheOption) {
  auto r = run({"tune", "--replay", conv(), "--strategy", "annealing", "--study-storage",
                "journal:x.log", "--budget-evals", "5", "--db", "a.db"});
  EXPECT_EQ(r.code, 2) << r;
  EXPECT_TRUE(contains(r.err,
                       "--study-storage is for the strategies whose study several processes can "
                       "share: optuna, optuna:tpe"))
      << r;
  EXPECT_TRUE(contains(r.err, "not 'annealing'")) << r;
  r = run({"tune", "--replay", conv(), "--strategy", "optuna:random", "--study-storage",
           "journal:x.log", "--strategy-option", "study_storage=journal:y.log", "--budget-evals",
           "5", "--db", "a.db"});
  EXPECT_EQ(r.code, 2) << r;
  EXPECT_TRUE(contains(r.err, "disagree")) << r;
  r = run({"tune", "--replay", conv(), "--strategy", "optuna:random", "--study-storage", "nowhere",
           "--budget-evals", "5", "--db", "a.db"});
  EXPECT_EQ(r.code, 2) << r;
  EXPECT_TRUE(contains(r.err, "journal:PATH")) << r;
}

// A storage that cannot hold the study is a usage error naming it, before anything is written:
// a journal or SQLite file in a folder that does not exist, a directory, a scheme that is no
// storage, a server that does not answer (loopback port 1, where nothing listens), the results
// database itself, and a storage of no name.
TEST_F(OptunaCliOptions, AStorageThatCannotHoldTheStudyIsRefusedBeforeAnythingIsWritten) {
  auto r = run({"tune", "--replay", conv(), "--strategy", "random", "--budget-evals", "3",
                "--retime-top", "0", "--db", "a.db"});
  ASSERT_EQ(r.code, 0) << r;
  fs::create_directories(dir_ / "folder");
  const auto files = [&] {
    std::set<std::string> out;
    for (const auto& e : fs::recursive_directory_iterator(dir_.path()))
      if (e.path().filename() != "cache" && e.path().string().find("/cache/") == std::string::npos)
        out.insert(e.path().lexically_relative(dir_.path()).string());
    return out;
  };
  const std::set<std::string> before = files();
  const std::string db_bytes = test::read_file(dir_ / "a.db");
  const std::string missing = (dir_ / "missing" / "s").string();
  const std::vector<std::pair<std::string, std::string>> refused = {
      {"journal:" + missing + ".log", "does not exist"},
      {"journal:" + (dir_ / "folder").string(), "is a directory"},
      {"sqlite:///" + missing + ".db", "does not exist"},
      {"sqlite:///" + (dir_ / "folder").string(), "is a directory"},
      {"nosuchdb://host/study", "not a storage Optuna knows"},
      {"sqlite:///" + (dir_ / "a.db").string(), "names the results database"},
      {"journal:a.db-wal", "names the results database"},
      {"redis://127.0.0.1:1/0", "redis"},
      {"postgresql://ktune@127.0.0.1:1/study", "postgresql"},
      {"", "names no storage"},
  };
  for (const auto& [url, says] : refused) {
    r = run({"tune", "--replay", conv(), "--strategy", "optuna:random", "--study-storage", url,
             "--budget-evals", "3", "--retime-top", "0", "--db", "a.db"});
    EXPECT_EQ(r.code, 2) << r;
    EXPECT_TRUE(contains(r.err, "study storage '" + url + "'") ||
                contains(r.err, "study_storage '" + url + "'"))
        << r;
    EXPECT_TRUE(contains(r.err, says)) << r;
    EXPECT_FALSE(contains(r.err, "Traceback")) << r;
    EXPECT_EQ(files(), before) << r;
    EXPECT_TRUE(test::read_file(dir_ / "a.db") == db_bytes)
        << "the results database changed: " << r;
  }
}

TEST_F(OptunaCliOptions, WarmStartProposesTheBestOfAnotherDeviceFirst) {
  int i = 0;
  for (const std::string strategy : {"optuna:tpe", "optuna:cmaes", "auto"}) {
    const std::string db = "w" + std::to_string(i++) + ".db";
    // Device A: a short random search stores a best configuration.
    auto r = run({"tune", "--replay", conv(), "--replay-device", "GPU A", "--strategy", "random",
                  "--budget-evals", "30", "--db", db, "--json"});
    ASSERT_EQ(r.code, 0) << r;
    const std::string best_a = nlohmann::json::parse(r.out).at("best").at("key");
    // Device B, the same recording under another name: the search starts from A's best.
    r = run({"tune", "--replay", conv(), "--replay-device", "GPU B", "--strategy", strategy,
             "--warm-start", "--budget-evals", "6", "--db", db, "--json"});
    ASSERT_EQ(r.code, 0) << r;
    Store store = Store::open(dir_ / db, Store::Mode::kReadOnly);
    const auto runs = store.runs();
    ASSERT_EQ(runs.size(), 2u);
    const auto trials = store.trials_of_run(std::max(runs[0].id, runs[1].id));
    ASSERT_FALSE(trials.empty()) << strategy;
    EXPECT_EQ(trials.front().config_key, best_a) << strategy;
  }
}

}  // namespace
}  // namespace ktune
