// The strategy benchmark: calculated random search against exhaustive counts, the in-memory
// loop's semantics (duplicates free, failures told, the proposal cap), the scores of the two
// baseline strategies on recorded fixtures, and `ktune bench-strategies` through the binary.
#include <gtest/gtest.h>

#include <cmath>
#include <nlohmann/json.hpp>
#include <random>

#include "ktune/bench_strategies.h"
#include "ktune/stagnation.h"
#include "tuner/cli_test_util.h"

namespace ktune {
namespace {

namespace fs = std::filesystem;
using test::contains;

std::string fixture(const std::string& name) {
  return std::string(KTUNE_TEST_DATA_DIR) + "/replay/" + name;
}

BenchSpace fixture_space(const std::string& name) {
  return bench_space_from_recording(read_kt_cache(fixture(name)), nullptr, name);
}

// Expected minimum of b draws without replacement, by enumerating every subset.
double exhaustive_expected_min(const std::vector<double>& v, unsigned b) {
  const unsigned n = static_cast<unsigned>(v.size());
  double sum = 0;
  std::uint64_t count = 0;
  for (std::uint32_t mask = 0; mask < (1u << n); ++mask) {
    if (static_cast<unsigned>(__builtin_popcount(mask)) != b) continue;
    double m = INFINITY;
    for (unsigned i = 0; i < n; ++i)
      if (mask & (1u << i)) m = std::min(m, v[i]);
    sum += m;
    ++count;
  }
  return sum / static_cast<double>(count);
}

TEST(BenchStrategies, ExpectedRandomBestMatchesEveryDraw) {
  const std::vector<double> values = {1.0, 1.5, 2.0, 2.0, 3.5, 4.0, 7.0, 7.5, 9.0, 12.0, 12.0};
  for (unsigned b = 1; b <= values.size(); ++b)
    EXPECT_NEAR(expected_random_best(values, b), exhaustive_expected_min(values, b), 1e-12)
        << "b = " << b;
  EXPECT_DOUBLE_EQ(expected_random_best({1, 2, 3, 4, 5}, 2), 2.0);  // (1*4 + 2*3 + 3*2 + 4*1) / 10
  EXPECT_DOUBLE_EQ(expected_random_best({1, 2, 3}, 10), 1.0);
  EXPECT_TRUE(std::isnan(expected_random_best({}, 1)));
}

// Proposes a fixed list, then nothing; remembers what it was told.
class Scripted final : public Strategy {
 public:
  explicit Scripted(std::vector<Config> script, bool repeat_last = false)
      : script_(std::move(script)), repeat_last_(repeat_last) {}
  std::string name() const override { return "scripted"; }
  void start(const StrategyContext&) override {}
  std::vector<Config> ask(std::size_t) override {
    if (next_ < script_.size()) return {script_[next_++]};
    if (repeat_last_ && !script_.empty()) return {script_.back()};
    return {};
  }
  void tell(const Config& c, const Outcome& o) override { told.emplace_back(c, o); }
  bool exhausted() const override { return !repeat_last_ && next_ >= script_.size(); }
  std::vector<std::pair<Config, Outcome>> told;

 private:
  std::vector<Config> script_;
  std::size_t next_ = 0;
  bool repeat_last_;
};

TEST(BenchStrategies, DuplicatesAreFreeFailuresAreToldAndRepeatersEnd) {
  const BenchSpace s = fixture_space("pnpoly_small.json.gz");
  ASSERT_EQ(s.configs.size(), 72u);
  std::size_t failed = 0, fast = 0;
  for (std::size_t i = 0; i < s.outcomes.size(); ++i) {
    if (s.outcomes[i].status != TrialStatus::kOk) failed = i;
    if (s.outcomes[i].status == TrialStatus::kOk &&
        s.outcomes[i].time_ms < s.outcomes[fast].time_ms)
      fast = i;
  }
  ASSERT_NE(s.outcomes[failed].status, TrialStatus::kOk);
  BenchOptions options;
  Scripted script({s.configs[failed], s.configs[failed], s.configs[fast], s.configs[failed]});
  const BenchRun run = run_strategy(s, script, 1, 10, options);
  EXPECT_EQ(run.evaluations, 2u);
  EXPECT_EQ(run.duplicates, 2u);
  EXPECT_EQ(run.proposals, 4u);
  EXPECT_EQ(run.stopped, "exhausted");
  ASSERT_EQ(script.told.size(), 4u);
  EXPECT_EQ(script.told[0].second.status, s.outcomes[failed].status);  // a failure, told as one
  EXPECT_FALSE(script.told[0].second.from_cache);
  EXPECT_TRUE(script.told[1].second.from_cache);
  EXPECT_TRUE(std::isnan(run.best[0]));  // nothing found by the failed first evaluation
  EXPECT_DOUBLE_EQ(run.best[1], s.outcomes[fast].time_ms);
  EXPECT_DOUBLE_EQ(run.best[9], s.outcomes[fast].time_ms);  // carried to the end of the budget

  Scripted repeater({s.configs[fast]}, /*repeat_last=*/true);
  options.proposal_factor = 20;
  const BenchRun stuck = run_strategy(s, repeater, 1, 5, options);
  EXPECT_EQ(stuck.evaluations, 1u);
  EXPECT_EQ(stuck.proposals, 100u);
  EXPECT_EQ(stuck.stopped, "proposal cap");

  // A proposal outside the valid space costs an evaluation and is answered invalid.
  Config bogus = s.configs[0];
  bogus[0] = 99;
  Scripted outside({bogus});
  const BenchRun o = run_strategy(s, outside, 1, 3, options);
  EXPECT_EQ(o.evaluations, 1u);
  EXPECT_EQ(outside.told[0].second.status, TrialStatus::kInvalid);
}

TEST(BenchStrategies, BaselinesScoreAsTheyShouldOnRecordedSpaces) {
  std::vector<BenchSpace> spaces;
  spaces.push_back(fixture_space("convolution_A100_small.json.gz"));
  spaces.push_back(fixture_space("pnpoly_small.json.gz"));
  spaces.push_back(fixture_space("gemm_small.json"));
  BenchOptions options;
  options.strategies = {"brute_force", "random"};
  options.seeds = 200;
  options.budgets = {1, 10, 25, 50, 100, 300};
  const BenchReport report = bench_strategies(spaces, options);
  ASSERT_EQ(report.spaces.size(), 3u);
  ASSERT_EQ(report.results.size(), 2u * 4u);
  for (const auto& s : report.spaces) {
    EXPECT_GT(s.cutoff_budget, 0u) << s.name;
    EXPECT_LE(s.cutoff_budget, s.configs) << s.name;
    EXPECT_LT(s.cutoff_ms, s.median_ms);
    EXPECT_GT(s.cutoff_ms, s.optimum_ms);
  }
  EXPECT_EQ(report.spaces[0].configs, 274u);
  EXPECT_EQ(report.spaces[0].ok, 262u);
  EXPECT_DOUBLE_EQ(report.spaces[0].optimum_ms, 0.8284159898757935);
  for (const auto& r : report.results) {
    SCOPED_TRACE(r.strategy + " on " + r.space);
    for (std::size_t i = 1; i < r.fraction.size(); ++i)
      EXPECT_GE(r.fraction[i], r.fraction[i - 1] - 1e-12);
    for (double f : r.fraction) {
      EXPECT_GE(f, 0.0);
      EXPECT_LE(f, 1.0 + 1e-12);
    }
    if (r.space == "overall") continue;
    const auto& space = *std::find_if(report.spaces.begin(), report.spaces.end(),
                                      [&](const SpaceSummary& s) { return s.name == r.space; });
    // Every space here is smaller than the largest budget: both strategies end on the optimum.
    ASSERT_LE(space.configs, 300u);
    EXPECT_DOUBLE_EQ(r.fraction.back(), 1.0);
    if (r.strategy == "random") {
      // The calculated baseline is random search's expectation: its score is about 0.
      EXPECT_NEAR(r.score, 0.0, 0.12);
      EXPECT_GT(r.score_stddev, 0.0);
    } else {
      // One path for every seed, in enumeration order, which knows nothing of speed: no better
      // than random unless that order happens to reach the optimum before the cut-off budget
      // (it does in the pnpoly fixture: its optimum is the 16th of 72 configurations, the cut-off
      // budget 34).
      EXPECT_NEAR(r.score_stddev, 0.0, 1e-9);
      const BenchSpace& bs = *std::find_if(spaces.begin(), spaces.end(),
                                           [&](const BenchSpace& b) { return b.name == r.space; });
      std::size_t position = 0;
      while (!(bs.outcomes[position].status == TrialStatus::kOk &&
               bs.outcomes[position].time_ms == space.optimum_ms))
        ++position;
      if (position + 1 <= space.cutoff_budget / 2) {
        EXPECT_GT(r.score, 0.3);
      } else {
        EXPECT_LT(r.score, 0.1);
      }
    }
  }
  // Random's measured fraction follows the calculated one (optimum / expected best is a lower
  // bound of the expected optimum / best, by Jensen's inequality).
  for (std::size_t k = 0; k < report.results.size(); ++k) {
    const auto& r = report.results[k];
    if (r.strategy != "random" || r.space == "overall") continue;
    const auto& space = *std::find_if(report.spaces.begin(), report.spaces.end(),
                                      [&](const SpaceSummary& s) { return s.name == r.space; });
    for (std::size_t i = 0; i < r.fraction.size(); ++i)
      EXPECT_GE(r.fraction[i], space.random_fraction[i] - 0.03);
  }
  const std::string table = format_bench_report(report);
  EXPECT_TRUE(contains(table, "overall")) << table;
  EXPECT_TRUE(contains(table, "(random, calculated)")) << table;
  const auto j = nlohmann::json::parse(bench_report_json(report));
  EXPECT_EQ(j.at("results").size(), 8u);
  EXPECT_EQ(j.at("spaces").at(0).at("configs"), 274);
  EXPECT_EQ(j.at("options").at("seeds"), 200);
}

TEST(BenchStrategies, BadOptionsAreUsageErrors) {
  std::vector<BenchSpace> spaces;
  spaces.push_back(fixture_space("pnpoly_small.json.gz"));
  BenchOptions options;
  options.strategies = {"no_such_strategy"};
  test::expect_error(ErrorKind::kUsage, {"no_such_strategy"},
                     [&] { bench_strategies(spaces, options); });
  options.strategies = {"random"};
  options.budgets = {0};
  test::expect_error(ErrorKind::kUsage, {"budgets"}, [&] { bench_strategies(spaces, options); });
}

TEST(BenchStrategies, ASpaceAStrategyFailsOnIsLeftOutOfEveryResult) {
  // The middle space stands for one a strategy cannot run on: it has outcomes but no search
  // space, which the native strategies refuse in start().
  std::vector<BenchSpace> spaces;
  spaces.push_back(fixture_space("pnpoly_small.json.gz"));
  spaces.push_back(fixture_space("pnpoly_small.json.gz"));
  spaces.push_back(fixture_space("gemm_small.json"));
  spaces[1].name = "broken";
  spaces[1].space.reset();
  BenchOptions options;
  options.strategies = {"greedy_ils", "genetic_algorithm"};
  options.seeds = 2;
  options.budgets = {5, 10};
  const BenchReport report = bench_strategies(spaces, options);
  ASSERT_EQ(report.failed.size(), 1u);
  EXPECT_EQ(report.failed[0].space, "broken");
  EXPECT_EQ(report.failed[0].error, "greedy_ils: no search space");
  ASSERT_EQ(report.spaces.size(), 2u);
  EXPECT_EQ(report.spaces[0].name, "pnpoly_small.json.gz");
  EXPECT_EQ(report.spaces[1].name, "gemm_small.json");
  // Both strategies on the same two spaces, and overall.
  ASSERT_EQ(report.results.size(), 2u * 3u);
  for (const auto& r : report.results) EXPECT_NE(r.space, "broken") << r.strategy;
  const auto j = nlohmann::json::parse(bench_report_json(report));
  ASSERT_EQ(j.at("failed").size(), 1u);
  EXPECT_EQ(j.at("failed").at(0).at("space"), "broken");

  // When every space fails, the failure is the benchmark's.
  const std::vector<BenchSpace> only = {spaces[1]};
  test::expect_error(ErrorKind::kInternal, {"greedy_ils: no search space"},
                     [&] { bench_strategies(only, options); });
}

// The stagnation stop is scored from the same runs: a window no shorter than the budget never
// stops a run early, a short one stops it where the best-so-far curve stayed flat (within the
// noise) for that many evaluations, and never with a better best than the whole run.
TEST(BenchStrategies, TheStagnationStopIsScoredFromTheSameRuns) {
  std::vector<BenchSpace> spaces;
  spaces.push_back(fixture_space("convolution_A100_small.json.gz"));
  BenchOptions options;
  options.strategies = {"random"};
  options.seeds = 5;
  options.budgets = {20, 60};
  options.stagnation = {5, 60};
  const BenchReport report = bench_strategies(spaces, options);
  const StrategyResult& r = report.results.at(0);
  ASSERT_EQ(r.stopped.size(), 4u);  // windows x budgets, window first
  const auto at = [&](std::uint64_t w, std::uint64_t b) -> const StoppedResult& {
    for (const auto& st : r.stopped)
      if (st.window == w && st.budget == b) return st;
    ADD_FAILURE() << "no result for window " << w << ", budget " << b;
    return r.stopped.front();
  };
  EXPECT_DOUBLE_EQ(at(60, 20).evaluations, 20.0);
  EXPECT_DOUBLE_EQ(at(60, 60).evaluations, 60.0);
  EXPECT_DOUBLE_EQ(at(60, 20).fraction, r.fraction[0]);
  EXPECT_DOUBLE_EQ(at(60, 60).fraction, r.fraction[1]);
  EXPECT_LT(at(5, 60).evaluations, 60.0);
  EXPECT_GE(at(5, 60).evaluations, 6.0);  // the first ok time, then five without improvement
  EXPECT_LE(at(5, 60).fraction, r.fraction[1]);
  EXPECT_LE(at(5, 60).worst, at(5, 60).fraction);

  // Each seed's stop, worked out from its run: the same mean.
  double evaluations = 0;
  for (std::uint64_t seed = 1; seed <= options.seeds; ++seed) {
    const BenchRun run = run_strategy(spaces[0], "random", seed, 60, options);
    StagnationWatch watch(5);
    std::uint64_t e = 1;
    for (; e <= 60; ++e) {
      watch.tell(run.best[e - 1]);
      if (watch.stagnant()) break;
    }
    evaluations += static_cast<double>(std::min<std::uint64_t>(e, 60));
  }
  EXPECT_DOUBLE_EQ(at(5, 60).evaluations, evaluations / static_cast<double>(options.seeds));

  const auto j = nlohmann::json::parse(bench_report_json(report));
  EXPECT_EQ(j.at("results").at(0).at("stopped").size(), 4u);
  EXPECT_EQ(j.at("options").at("stagnation"), nlohmann::json::array({5, 60}));
  EXPECT_TRUE(contains(format_bench_report(report), "With the stagnation stop after 5"));
  options.stagnation = {0};
  test::expect_error(ErrorKind::kUsage, {"stagnation"}, [&] { bench_strategies(spaces, options); });
}

class BenchCli : public ::testing::Test {
 protected:
  test::CliResult run(const std::vector<std::string>& args) {
    return test::run_ktune(args, dir_.path(), dir_ / "cache");
  }
  test::TempDir dir_;
};

TEST_F(BenchCli, RunsAndWritesJson) {
  const auto r = run({"bench-strategies", "--strategies", "brute_force,random", "--replay",
                      fixture("pnpoly_small.json.gz"), fixture("dedispersion_MI250X_small.json"),
                      "--seeds", "5", "--budgets", "5,20", "-o", "out.json"});
  ASSERT_EQ(r.code, 0) << r;
  EXPECT_TRUE(contains(r.out, "pnpoly_small")) << r;
  EXPECT_TRUE(contains(r.out, "overall")) << r;
  EXPECT_TRUE(contains(r.err, "restrictions of cn_pnpoly from")) << r;
  const auto j = nlohmann::json::parse(test::read_file(dir_ / "out.json"));
  EXPECT_EQ(j.at("results").size(), 6u);
  EXPECT_EQ(j.at("options").at("budgets"), nlohmann::json::array({5, 20}));
  const auto stdout_json = run({"bench-strategies", "--strategies", "random", "--replay",
                                fixture("pnpoly_small.json.gz"), "--seeds", "2", "--json"});
  ASSERT_EQ(stdout_json.code, 0) << stdout_json;
  EXPECT_EQ(nlohmann::json::parse(stdout_json.out).at("results").size(), 2u);
  EXPECT_TRUE(stdout_json.err.empty()) << stdout_json;
  // -q: only errors, yet -o still writes.
  const auto quiet = run({"bench-strategies", "--strategies", "random", "--replay",
                          fixture("pnpoly_small.json.gz"), "--seeds", "2", "-q", "-o", "q.json"});
  ASSERT_EQ(quiet.code, 0) << quiet;
  EXPECT_TRUE(quiet.out.empty()) << quiet;
  EXPECT_TRUE(quiet.err.empty()) << quiet;
  EXPECT_EQ(nlohmann::json::parse(test::read_file(dir_ / "q.json")).at("results").size(), 2u);
}

TEST_F(BenchCli, ASpaceThatFailsIsReportedAndTheOthersRun) {
  // Among good recordings: a missing file, a damaged one, a directory, and a cache of a
  // registered kernel that cannot be replayed as it (its problem is not the kernel's). Each is
  // named with its error and left out; the others are benchmarked and written; exit code 1.
  test::write_file(dir_ / "broken.json", "{\"kernel_name\": \"k\"");
  fs::create_directories(dir_ / "adir");
  test::write_file(dir_ / "reduce_other.json",
                   R"({"device_name": "GPU", "kernel_name": "reduce", "problem_size": 1024,
                       "tune_params_keys": ["block_size"], "tune_params": {"block_size": [64, 128]},
                       "cache": {"64": {"block_size": 64, "time": 1.5, "times": [1.5]},
                                 "128": {"block_size": 128, "time": 1.0, "times": [1.0]}}})");
  const auto r =
      run({"bench-strategies", "--strategies", "random", "--seeds", "2", "--budgets", "5",
           "--replay", "missing.json", fixture("pnpoly_small.json.gz"), "broken.json", "adir",
           "reduce_other.json", fixture("convolution_no_shmem_small.json"), "-o", "o.json"});
  ASSERT_EQ(r.code, 1) << r;
  EXPECT_TRUE(contains(r.err, "error: missing: missing.json: no such file (space left out)")) << r;
  EXPECT_TRUE(contains(r.err, "error: broken: broken.json: ")) << r;
  EXPECT_TRUE(contains(r.err, "error: adir: adir: is a directory")) << r;
  EXPECT_TRUE(
      contains(r.err, "error: reduce_other: reduce: unknown problem parameter 'problem_size'"))
      << r;
  EXPECT_TRUE(contains(r.err, "warning: 4 of 6 recordings left out")) << r;
  EXPECT_TRUE(contains(r.err, "does not fit this recording")) << r;
  EXPECT_TRUE(contains(r.out, "pnpoly_small")) << r;
  EXPECT_TRUE(contains(r.out, "convolution_no_shmem_small")) << r;
  const auto j = nlohmann::json::parse(test::read_file(dir_ / "o.json"));
  ASSERT_EQ(j.at("spaces").size(), 2u);
  EXPECT_EQ(j.at("spaces").at(1).at("configs"), 170);
  EXPECT_EQ(j.at("results").size(), 3u);  // random on both spaces, and overall
  ASSERT_EQ(j.at("failed").size(), 4u);
  EXPECT_EQ(j.at("failed").at(0).at("space"), "missing");
  EXPECT_EQ(j.at("failed").at(3).at("space"), "reduce_other");
  // -q: the errors still, no warning; the exit code says some were left out.
  const auto quiet = run({"bench-strategies", "--strategies", "random", "--seeds", "2", "--budgets",
                          "5", "--replay", "adir", fixture("pnpoly_small.json.gz"), "-q"});
  EXPECT_EQ(quiet.code, 1) << quiet;
  EXPECT_TRUE(quiet.out.empty()) << quiet;
  EXPECT_EQ(quiet.err, "error: adir: adir: is a directory, not a file (space left out)\n") << quiet;
}

TEST_F(BenchCli, ErrorsHaveTheirExitCodes) {
  auto r = run(
      {"bench-strategies", "--strategies", "nope", "--replay", fixture("pnpoly_small.json.gz")});
  EXPECT_EQ(r.code, 2) << r;
  EXPECT_TRUE(contains(r.err, "unknown strategy 'nope'")) << r;
  r = run({"bench-strategies", "--strategies", "random", "--budgets", "10,x", "--replay",
           fixture("pnpoly_small.json.gz")});
  EXPECT_EQ(r.code, 2) << r;
  r = run({"bench-strategies", "--strategies", "random"});
  EXPECT_EQ(r.code, 2) << r;
  r = run({"bench-strategies", "--strategies", "random", "--replay", "missing.json.gz"});
  EXPECT_EQ(r.code, 3) << r;
  EXPECT_TRUE(contains(r.err, "missing.json.gz: no such file")) << r;
}

}  // namespace
}  // namespace ktune
