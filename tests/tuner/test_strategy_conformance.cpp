// The contract every strategy keeps, checked for each name strategy_names() returns (so a
// strategy added later is covered without touching this file), on recorded spaces from
// tests/data/strategies/ and on synthetic ones: only valid proposals, asks and budgets kept,
// deterministic under a seed, warm start first, unknown options rejected, out-of-order tells,
// neighbourhoods that all fail, small spaces that end the run, and the optimum of a tiny space
// found through the real tuning loop. A strategy that cannot start here (an optional dependency
// is missing) is skipped with the reason.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <memory>

#include "ktune/backend.h"
#include "ktune/error.h"
#include "ktune/instance.h"
#include "ktune/kernel.h"
#include "ktune/store.h"
#include "ktune/strategy.h"
#include "ktune/tuner.h"
#include "strategy_test_util.h"

namespace ktune {
namespace {

namespace fs = std::filesystem;
using test::DriveOptions;
using test::RecordedSpace;
using test::TellOrder;
using test::Trace;

const RecordedSpace& subset() {
  static const RecordedSpace r = test::load_recorded_space("convolution_a100_subset.json");
  return r;
}
const RecordedSpace& tiny() {
  static const RecordedSpace r = test::load_recorded_space("convolution_a100_tiny.json");
  return r;
}
// Only the diagonal works: every Hamming or adjacent neighbour of a working configuration fails.
const RecordedSpace& diagonal() {
  static const RecordedSpace r =
      test::synthetic_space("diagonal", 3, 4, [](const Config& c) -> std::optional<double> {
        if (c[0] != c[1] || c[1] != c[2]) return std::nullopt;
        return 1.0 + 0.5 * (3 - c[0]);  // fastest at (3, 3, 3)
      });
  return r;
}

// Replays a recorded space for tune(): failures keep their recorded status.
class RecordedBackend final : public Backend {
 public:
  explicit RecordedBackend(const RecordedSpace& r) : r_(r) {}
  std::string name() const override { return "recorded"; }
  DeviceInfo device() const override {
    DeviceInfo d;
    d.name = "Recorded A100";
    d.arch = "sm_80";
    d.cc_major = 8;
    return d;
  }
  bool needs_compilation() const override { return false; }
  void prepare(const KernelInstance&, const MeasureOptions&) override {}
  Measurement evaluate(const Config& config, const CompileResult*) override {
    ++evaluations;
    const Outcome o = r_.outcome(config);
    Measurement m;
    m.status = o.status;
    if (o.status == TrialStatus::kOk) {
      m.time_ms = m.time_min_ms = m.time_mean_ms = o.time_ms;
      m.samples_ms = {o.time_ms};
    } else {
      m.error = "recorded failure";
    }
    return m;
  }
  std::vector<Measurement> retime(const std::vector<RetimeCandidate>& candidates, int) override {
    std::vector<Measurement> out;
    for (const auto& c : candidates) out.push_back(evaluate(c.config, nullptr));
    return out;
  }
  std::uint64_t evaluations = 0;

 private:
  const RecordedSpace& r_;
};

// A kernel whose space is the recorded one (the launch geometry adds no restriction).
KernelSpec recorded_kernel(const RecordedSpace& r) {
  KernelSpec k;
  k.name = "recorded_convolution";
  k.source = "// answered from a recording";
  k.entry = "convolution_kernel";
  k.params = r.params;
  k.restrictions = r.restrictions;
  return k;
}

class StrategyConformance : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    try {
      auto probe = make_strategy(GetParam());
      StrategyContext context;
      context.space = &tiny().space;
      probe->start(context);
    } catch (const std::exception& e) {
      // Only a missing Python module is the machine's business; anything else is a bug.
      const std::string what = e.what();
      if (what.find("ModuleNotFoundError") == std::string::npos) throw;
      GTEST_SKIP() << "strategy '" << GetParam() << "' cannot run here: " << what;
    }
  }
  std::unique_ptr<Strategy> fresh() const { return make_strategy(GetParam()); }
  Trace run(const RecordedSpace& r, const DriveOptions& o) const {
    auto s = fresh();
    return test::drive(*s, r, o);
  }
};

TEST_P(StrategyConformance, ProposesOnlyValidConfigurationsAndKeepsAsksAndBudget) {
  for (const std::size_t lookahead : {1u, 8u, 64u}) {
    DriveOptions o;
    o.budget = 60;
    o.lookahead = lookahead;
    const Trace t = run(subset(), o);
    EXPECT_EQ(t.invalid, 0u) << "lookahead " << lookahead;
    EXPECT_EQ(t.over_asked, 0u) << "lookahead " << lookahead;
    EXPECT_FALSE(t.stalled) << "nothing proposed with nothing outstanding, lookahead " << lookahead;
    EXPECT_EQ(t.told, o.budget) << "lookahead " << lookahead;
    EXPECT_TRUE(t.best_ms.has_value());
  }
}

TEST_P(StrategyConformance, IsDeterministicUnderASeed) {
  DriveOptions o;
  o.budget = 50;
  o.order = TellOrder::kShuffled;
  o.seed = 42;
  const Trace a = run(subset(), o);
  const Trace b = run(subset(), o);
  EXPECT_EQ(a.asked, b.asked);
  o.seed = 43;
  const Trace c = run(subset(), o);
  EXPECT_EQ(c.invalid, 0u);
}

TEST_P(StrategyConformance, HandlesOutOfOrderTells) {
  for (const TellOrder order : {TellOrder::kLifo, TellOrder::kShuffled}) {
    DriveOptions o;
    o.budget = 70;
    o.lookahead = 16;
    o.order = order;
    const Trace t = run(subset(), o);
    EXPECT_EQ(t.invalid, 0u);
    EXPECT_FALSE(t.stalled);
    EXPECT_EQ(t.told, o.budget);
  }
}

TEST_P(StrategyConformance, ProposesTheWarmStartFirst) {
  const SearchSpace& space = subset().space;
  DriveOptions o;
  o.budget = 20;
  o.warm_start = {space.parse_key("block_size_x=64,block_size_y=2,tile_size_x=2,tile_size_y=3,"
                                  "read_only=1,use_padding=0,use_shmem=1,use_cmem=1,"
                                  "filter_height=15,filter_width=15"),
                  space.parse_key("block_size_x=48,block_size_y=4,tile_size_x=1,tile_size_y=4,"
                                  "read_only=0,use_padding=1,use_shmem=1,use_cmem=1,"
                                  "filter_height=15,filter_width=15")};
  for (const Config& c : o.warm_start) ASSERT_TRUE(space.is_valid(c));
  const Trace t = run(subset(), o);
  ASSERT_GE(t.asked.size(), 2u);
  EXPECT_EQ(t.asked[0], o.warm_start[0]);
  EXPECT_EQ(t.asked[1], o.warm_start[1]);
}

TEST_P(StrategyConformance, RejectsAnUnknownOptionByName) {
  auto s = fresh();
  StrategyContext context;
  context.space = &tiny().space;
  context.options = {{"surely_not_an_option", "1"}};
  try {
    s->start(context);
    FAIL() << "an unknown option was accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kUsage);
    EXPECT_NE(std::string(e.what()).find("surely_not_an_option"), std::string::npos) << e.what();
  }
}

TEST_P(StrategyConformance, HandlesNeighbourhoodsThatAllFail) {
  DriveOptions o;
  o.budget = 4 * diagonal().valid_count();
  o.lookahead = 8;
  o.order = TellOrder::kShuffled;
  const Trace t = run(diagonal(), o);
  EXPECT_EQ(t.invalid, 0u);
  EXPECT_FALSE(t.stalled);
  ASSERT_TRUE(t.best_ms.has_value());
  EXPECT_EQ(t.best_key, diagonal().optimum);
  EXPECT_DOUBLE_EQ(*t.best_ms, diagonal().optimum_ms());
}

TEST_P(StrategyConformance, TerminatesOnASpaceSmallerThanTheBudget) {
  for (const std::size_t lookahead : {1u, 64u}) {
    DriveOptions o;
    o.budget = 1000;
    o.lookahead = lookahead;
    const Trace t = run(tiny(), o);
    EXPECT_FALSE(t.stalled);
    EXPECT_LE(t.told, o.budget);
    EXPECT_TRUE(t.exhausted || t.told == o.budget);
    if (t.exhausted) {
      EXPECT_EQ(t.distinct.size(), tiny().valid_count());
    }
  }
}

// Through tune(): the loop's budget is kept, every proposal is run (none is invalid), and a
// generous budget finds the optimum of a tiny space.
class StrategyInTheLoop : public StrategyConformance {
 protected:
  void SetUp() override {
    StrategyConformance::SetUp();
    if (IsSkipped()) return;
    dir_ = fs::temp_directory_path() /
           ("ktune-conformance-" + std::to_string(::getpid()) + "-" + GetParam());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override {
    if (!dir_.empty()) fs::remove_all(dir_);
  }
  fs::path dir_;
};

TEST_P(StrategyInTheLoop, KeepsTheBudgetAndProposesNothingInvalid) {
  const RecordedSpace& r = subset();
  KernelInstance instance(recorded_kernel(r), {}, DeviceLimits::for_arch(80));
  ASSERT_EQ(instance.space().enumerate().size(), r.valid_count());
  RecordedBackend backend(r);
  Store store = Store::open(dir_ / "t.db");
  auto strategy = fresh();
  TuneOptions options;
  options.strategy = GetParam();
  options.budget.evaluations = 40;
  options.retime_top = 0;
  const TuneSummary s = tune(instance, backend, store, *strategy, options, nullptr);
  EXPECT_EQ(s.status, RunStatus::kFinished);
  EXPECT_EQ(s.trials, 40u);
  EXPECT_EQ(s.by_status.count("invalid"), 0u);
  EXPECT_EQ(s.measured + s.from_database, s.trials);
  ASSERT_TRUE(s.best.has_value());
}

TEST_P(StrategyInTheLoop, FindsTheOptimumOfATinySpace) {
  const RecordedSpace& r = tiny();
  KernelInstance instance(recorded_kernel(r), {}, DeviceLimits::for_arch(80));
  RecordedBackend backend(r);
  Store store = Store::open(dir_ / "t.db");
  auto strategy = fresh();
  TuneOptions options;
  options.strategy = GetParam();
  options.budget.evaluations = 10 * r.valid_count();
  options.retime_top = 0;
  options.seed = 7;
  const TuneSummary s = tune(instance, backend, store, *strategy, options, nullptr);
  EXPECT_EQ(s.status, RunStatus::kFinished);
  EXPECT_LE(s.trials, options.budget.evaluations);
  EXPECT_EQ(s.by_status.count("invalid"), 0u);
  ASSERT_TRUE(s.best.has_value());
  EXPECT_DOUBLE_EQ(s.best->time_ms, r.optimum_ms());
}

std::string printable(const ::testing::TestParamInfo<std::string>& info) {
  std::string s = info.param;
  for (char& c : s)
    if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
  return s;
}

INSTANTIATE_TEST_SUITE_P(Every, StrategyConformance, ::testing::ValuesIn(strategy_names()),
                         printable);
INSTANTIATE_TEST_SUITE_P(Every, StrategyInTheLoop, ::testing::ValuesIn(strategy_names()),
                         printable);

}  // namespace
}  // namespace ktune
