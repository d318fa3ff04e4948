// Resume finishes the search: for every registered strategy (Optuna's are in tests/optuna), a run
// whose budget is extended, or that is interrupted at random points and resumed, goes on asking
// after its answers from the database until the budget is spent, and ends where an
// uninterrupted run with the same seed ends.
#include <gtest/gtest.h>

#include <atomic>
#include <memory>
#include <random>

#include "ktune/replay.h"
#include "ktune/store.h"
#include "ktune/strategy.h"
#include "ktune/tuner.h"
#include "tuner/cli_test_util.h"

namespace ktune::test {
namespace {

std::vector<std::string> resumable_strategies() {
  std::vector<std::string> out;
  for (const auto& s : strategy_names())
    if (s.rfind("optuna", 0) != 0) out.push_back(s);
  return out;
}

class Resume : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    recording_ = std::make_shared<Recording>(
        read_kt_cache(std::string(KTUNE_TEST_DATA_DIR) + "/replay/convolution_A100_small.json.gz"));
    target_ = std::make_unique<ReplayTarget>(replay_target(*recording_, nullptr));
    instance_ =
        std::make_unique<KernelInstance>(target_->kernel, target_->problem, target_->limits);
  }

  // One run of the strategy on `db`; `stop_after` > 0 interrupts it after that many measured
  // trials, as a kill would.
  TuneSummary run(const fs::path& db, std::uint64_t budget, std::uint64_t stop_after = 0) {
    Store store = Store::open(db);
    ReplayBackend backend(recording_);
    auto strategy = make_strategy(GetParam());
    TuneOptions options;
    options.strategy = GetParam();
    options.seed = 7;
    options.budget.evaluations = budget;
    options.retime_top = 0;
    std::atomic<bool> stop{false};
    ProgressObserver watch([&](const Progress& p) {
      if (stop_after > 0 && p.measured >= stop_after) stop = true;
    });
    return tune(*instance_, backend, store, *strategy, options, nullptr, &watch, &stop);
  }

  TempDir dir_;
  std::shared_ptr<Recording> recording_;
  std::unique_ptr<ReplayTarget> target_;
  std::unique_ptr<KernelInstance> instance_;
};

TEST_P(Resume, ExtendingTheBudgetOfAFinishedRunGoesOnSearching) {
  const TuneSummary first = run(dir_ / "r.db", 30);
  EXPECT_EQ(first.status, RunStatus::kFinished);
  EXPECT_EQ(first.trials, 30u);
  const TuneSummary second = run(dir_ / "r.db", 150);
  EXPECT_EQ(second.status, RunStatus::kFinished);
  EXPECT_EQ(second.trials, 150u) << "the extended run stopped with budget left";
  EXPECT_GE(second.from_database, 1u);
  EXPECT_GE(second.measured, 150u - 30u);
}

TEST_P(Resume, AnInterruptedRunResumesToTheEndOfAnUninterruptedOne) {
  const TuneSummary whole = run(dir_ / "whole.db", 150);
  ASSERT_TRUE(whole.best);
  std::mt19937_64 rng(std::hash<std::string>()(GetParam()));
  TuneSummary last;
  int runs = 0;
  do {
    last = run(dir_ / "pieces.db", 150, 5 + rng() % 40);  // stopped after 5..44 trials
    ASSERT_LT(++runs, 60) << "resuming never finished";
  } while (last.status == RunStatus::kInterrupted);
  EXPECT_EQ(last.trials, 150u);
  ASSERT_TRUE(last.best);
  EXPECT_LE(last.best->time_ms, whole.best->time_ms) << "resumed " << runs << " times";
}

INSTANTIATE_TEST_SUITE_P(Strategies, Resume, ::testing::ValuesIn(resumable_strategies()),
                         [](const auto& info) { return info.param; });

}  // namespace
}  // namespace ktune::test
