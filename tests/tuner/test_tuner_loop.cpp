// The tuning loop on a fake backend: every trial stored and told, budgets, Ctrl-C, resume
// from the database, failures never crowned, re-timing, compile errors kept as data.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <set>
#include <thread>

#include "ktune/backend.h"
#include "ktune/error.h"
#include "ktune/registry.h"
#include "ktune/strategy.h"
#include "ktune/trace.h"
#include "ktune/tuner.h"

namespace ktune {
namespace {

namespace fs = std::filesystem;

// Times are a deterministic function of the config; chosen configs fail with a chosen status.
class FakeBackend final : public Backend {
 public:
  explicit FakeBackend(const KernelInstance& instance, bool compiles = false)
      : instance_(instance), compiles_(compiles) {}
  std::string name() const override { return "fake"; }
  DeviceInfo device() const override {
    DeviceInfo d;
    d.name = "Fake GPU";
    d.arch = "sm_90";
    d.cc_major = 9;
    d.sm_count = 132;
    d.memory_bytes = 80ll << 30;
    d.l2_bytes = 50ll << 20;
    return d;
  }
  bool needs_compilation() const override { return compiles_; }
  void prepare(const KernelInstance&, const MeasureOptions&) override { ++prepares; }
  Measurement evaluate(const Config& config, const CompileResult* compiled) override {
    if (compiles_) {
      EXPECT_TRUE(compiled != nullptr && compiled->ok);
    }
    if (delay.count() > 0) std::this_thread::sleep_for(delay);
    const std::string key = instance_.space().key(config);
    evaluated.push_back(key);
    Measurement m;
    if (auto it = failures.find(key); it != failures.end()) {
      m.status = it->second;
      m.error = "fake failure";
      return m;
    }
    m.time_ms = time_of(config);
    m.samples_ms = {m.time_ms, m.time_ms * 1.01, m.time_ms * 0.99};
    m.time_min_ms = m.time_ms * 0.99;
    m.time_mean_ms = m.time_ms;
    m.gpu_ms = 3 * m.time_ms;
    m.timed_ms = 3 * m.time_ms;
    return m;
  }
  std::vector<Measurement> retime(const std::vector<RetimeCandidate>& candidates,
                                  int rounds) override {
    retimed = candidates.size();
    std::vector<Measurement> out;
    for (std::size_t i = 0; i < candidates.size(); ++i) {
      Measurement m;
      // Re-timing reverses the search's ranking: the winner must come from here.
      m.time_ms = retime_reverses ? 10.0 - static_cast<double>(i) : time_of(candidates[i].config);
      m.samples_ms.assign(static_cast<std::size_t>(rounds), m.time_ms);
      // The rounds that rank the finalists disagree with those that time them: the ranking
      // puts the second candidate first, and the stored time must come from the timing rounds.
      if (rank_apart) m.rank_ms = i == 1 ? 0.5 : 5.0 + static_cast<double>(i);
      out.push_back(m);
    }
    return out;
  }
  double time_of(const Config& c) const {
    double t = 1.0;
    for (std::size_t i = 0; i < c.size(); ++i)
      t += static_cast<double>((c[i] * 7 + i * 3) % 5) * 0.1;
    return t;
  }

  std::map<std::string, TrialStatus> failures;
  std::vector<std::string> evaluated;
  std::chrono::milliseconds delay{0};
  bool retime_reverses = false;
  bool rank_apart = false;
  std::size_t retimed = 0;
  int prepares = 0;

 private:
  const KernelInstance& instance_;
  bool compiles_;
};

// Remembers what it was told.
class Recording final : public Strategy {
 public:
  explicit Recording(std::unique_ptr<Strategy> inner) : inner_(std::move(inner)) {}
  std::string name() const override { return inner_->name(); }
  void start(const StrategyContext& c) override { inner_->start(c); }
  std::vector<Config> ask(std::size_t n) override { return inner_->ask(n); }
  void tell(const Config& c, const Outcome& o) override {
    told.emplace_back(c, o);
    inner_->tell(c, o);
  }
  bool exhausted() const override { return inner_->exhausted(); }
  std::vector<std::pair<Config, Outcome>> told;

 private:
  std::unique_ptr<Strategy> inner_;
};

class TunerLoop : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("ktune-loop-" + std::to_string(::getpid()) + "-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    register_builtin_kernels(registry_);
    registry_.load_manifest(std::string(KTUNE_TEST_DATA_DIR) + "/compile_error/broken.toml");
    // A small reduce space: 6 block sizes x variant 7 x 3 elements per thread.
    instance_ = std::make_unique<KernelInstance>(restricted_reduce(), Problem{{"n", 1 << 20}},
                                                 DeviceLimits::for_arch(90));
    store_ = std::make_unique<Store>(Store::open(dir_ / "t.db"));
  }
  void TearDown() override {
    store_.reset();
    fs::remove_all(dir_);
  }
  KernelSpec restricted_reduce() const {
    KernelSpec k = registry_.get("reduce");
    for (auto& p : k.params) {
      if (p.name == "variant") p.values = {Value(7)}, p.default_index = 0;
      if (p.name == "elements_per_thread")
        p.values = {Value(2), Value(4), Value(8)}, p.default_index = 0;
      if (p.name == "unroll" || p.name == "maxrregcount" || p.name == "launch_bounds" ||
          p.name == "blocks_per_sm")
        p.values = {p.values[0]}, p.default_index = 0;
    }
    return k;
  }
  std::size_t valid_count() const { return instance_->space().enumerate().size(); }

  Registry registry_;
  fs::path dir_;
  std::unique_ptr<KernelInstance> instance_;
  std::unique_ptr<Store> store_;
};

TEST_F(TunerLoop, BruteForceEvaluatesEveryValidConfigOnceAndStoresTheBest) {
  FakeBackend backend(*instance_);
  Recording strategy(make_strategy("brute_force"));
  TuneOptions options;
  options.retime_top = 0;
  const TuneSummary s = tune(*instance_, backend, *store_, strategy, options, nullptr);
  EXPECT_EQ(s.status, RunStatus::kFinished);
  EXPECT_EQ(s.trials, valid_count());
  EXPECT_EQ(s.measured, valid_count());
  EXPECT_EQ(std::set<std::string>(backend.evaluated.begin(), backend.evaluated.end()).size(),
            valid_count());
  EXPECT_EQ(strategy.told.size(), valid_count());
  EXPECT_EQ(store_->trials_of_run(s.run_id).size(), valid_count());
  ASSERT_TRUE(s.best.has_value());
  double fastest = 1e9;
  for (const auto& c : instance_->space().enumerate())
    fastest = std::min(fastest, backend.time_of(c));
  EXPECT_DOUBLE_EQ(s.best->time_ms, fastest);
  const auto stored = store_->best("reduce", instance_->problem_key(), s.best->device_id);
  ASSERT_TRUE(stored.has_value());
  EXPECT_EQ(stored->trial.config_key, s.best->config_key);
  const auto run = store_->run(s.run_id);
  ASSERT_TRUE(run.has_value());
  EXPECT_EQ(run->status, RunStatus::kFinished);
  EXPECT_EQ(run->backend, "fake");
}

TEST_F(TunerLoop, FailuresAreToldAsFailuresAndNeverBecomeTheBest) {
  FakeBackend backend(*instance_);
  std::vector<Config> all = instance_->space().enumerate();
  // Make the fastest config wrong, the second crash.
  std::sort(all.begin(), all.end(), [&](const Config& a, const Config& b) {
    return backend.time_of(a) < backend.time_of(b);
  });
  backend.failures[instance_->space().key(all[0])] = TrialStatus::kWrongResult;
  backend.failures[instance_->space().key(all[1])] = TrialStatus::kCrashed;
  Recording strategy(make_strategy("brute_force"));
  TuneOptions options;
  options.retime_top = 0;
  const TuneSummary s = tune(*instance_, backend, *store_, strategy, options, nullptr);
  EXPECT_EQ(s.by_status.at("wrong_result"), 1u);
  EXPECT_EQ(s.by_status.at("crashed"), 1u);
  int failures_told = 0;
  for (const auto& [c, o] : strategy.told) failures_told += o.status != TrialStatus::kOk;
  EXPECT_EQ(failures_told, 2);
  ASSERT_TRUE(s.best.has_value());
  EXPECT_NE(s.best->config_key, instance_->space().key(all[0]));
  EXPECT_NE(s.best->config_key, instance_->space().key(all[1]));
  EXPECT_EQ(s.best->status, TrialStatus::kOk);
}

TEST_F(TunerLoop, EvaluationBudgetStopsTheRun) {
  FakeBackend backend(*instance_);
  auto strategy = make_strategy("random");
  TuneOptions options;
  options.budget.evaluations = 5;
  options.retime_top = 0;
  const TuneSummary s = tune(*instance_, backend, *store_, *strategy, options, nullptr);
  EXPECT_EQ(s.trials, 5u);
  EXPECT_EQ(backend.evaluated.size(), 5u);
  EXPECT_EQ(s.status, RunStatus::kFinished);
}

TEST_F(TunerLoop, TimeBudgetStopsTheRun) {
  FakeBackend backend(*instance_);
  backend.delay = std::chrono::milliseconds(20);
  auto strategy = make_strategy("brute_force");
  TuneOptions options;
  options.budget.seconds = 0.1;
  options.retime_top = 0;
  const TuneSummary s = tune(*instance_, backend, *store_, *strategy, options, nullptr);
  EXPECT_GE(s.trials, 1u);
  EXPECT_LT(s.trials, valid_count());
}

TEST_F(TunerLoop, StopFlagEndsCleanlyKeepingWhatWasMeasured) {
  FakeBackend backend(*instance_);
  auto strategy = make_strategy("brute_force");
  TuneOptions options;
  std::atomic<bool> stop{false};
  ProgressObserver watch([&](const Progress& p) {
    if (p.done == 4) stop = true;
  });
  const TuneSummary s =
      tune(*instance_, backend, *store_, *strategy, options, nullptr, &watch, &stop);
  EXPECT_EQ(s.status, RunStatus::kInterrupted);
  EXPECT_EQ(s.trials, 4u);
  EXPECT_EQ(store_->trials_of_run(s.run_id).size(), 4u);
  EXPECT_EQ(store_->run(s.run_id)->status, RunStatus::kInterrupted);
  EXPECT_EQ(backend.retimed, 0u);   // no re-timing after Ctrl-C
  EXPECT_TRUE(s.best.has_value());  // the best of what was measured is kept
}

TEST_F(TunerLoop, ResumeAnswersKnownConfigsFromTheDatabase) {
  {
    FakeBackend backend(*instance_);
    auto strategy = make_strategy("random");
    TuneOptions options;
    options.budget.evaluations = 7;
    options.retime_top = 0;
    tune(*instance_, backend, *store_, *strategy, options, nullptr);
  }
  FakeBackend backend(*instance_);
  auto strategy = make_strategy("brute_force");
  TuneOptions options;
  options.retime_top = 0;
  const TuneSummary s = tune(*instance_, backend, *store_, *strategy, options, nullptr);
  EXPECT_EQ(s.from_database, 7u);
  EXPECT_EQ(s.measured, valid_count() - 7);
  EXPECT_EQ(backend.evaluated.size(), valid_count() - 7);

  // --no-reuse measures everything again.
  FakeBackend again(*instance_);
  auto strategy2 = make_strategy("brute_force");
  options.reuse = false;
  const TuneSummary r = tune(*instance_, again, *store_, *strategy2, options, nullptr);
  EXPECT_EQ(r.measured, valid_count());
}

TEST_F(TunerLoop, NothingToMeasureStartsNoBackend) {
  FakeBackend first(*instance_);
  auto s1 = make_strategy("brute_force");
  TuneOptions options;
  options.retime_top = 0;
  tune(*instance_, first, *store_, *s1, options, nullptr);
  FakeBackend second(*instance_);
  auto s2 = make_strategy("brute_force");
  const TuneSummary s = tune(*instance_, second, *store_, *s2, options, nullptr);
  EXPECT_EQ(s.measured, 0u);
  EXPECT_EQ(second.prepares, 0);
}

TEST_F(TunerLoop, RetimingPicksTheWinner) {
  FakeBackend backend(*instance_);
  backend.retime_reverses = true;
  auto strategy = make_strategy("brute_force");
  TuneOptions options;
  options.retime_top = 4;
  const TuneSummary s = tune(*instance_, backend, *store_, *strategy, options, nullptr);
  EXPECT_EQ(backend.retimed, 4u);
  ASSERT_EQ(s.finalists.size(), 4u);
  ASSERT_TRUE(s.best.has_value());
  // The fake reverses the ranking: the search's fourth is the re-timed winner.
  std::vector<Config> all = instance_->space().enumerate();
  std::stable_sort(all.begin(), all.end(), [&](const Config& a, const Config& b) {
    return backend.time_of(a) < backend.time_of(b);
  });
  EXPECT_DOUBLE_EQ(s.best->time_ms, 7.0);
  EXPECT_EQ(s.best->sample_count, options.retime_rounds);
  const auto stored = store_->best("reduce", instance_->problem_key(), s.best->device_id);
  ASSERT_TRUE(stored.has_value());
  EXPECT_EQ(stored->trial_id, s.best->id);
}

TEST_F(TunerLoop, TheWinnerIsRankedOnOtherRoundsThanTheOnesThatTimeIt) {
  FakeBackend backend(*instance_);
  backend.retime_reverses = true;  // times 10, 9, 8, 7 for the search's first four
  backend.rank_apart = true;       // ranks the search's second first
  auto strategy = make_strategy("brute_force");
  TuneOptions options;
  options.retime_top = 4;
  const TuneSummary s = tune(*instance_, backend, *store_, *strategy, options, nullptr);
  ASSERT_EQ(s.finalists.size(), 4u);
  ASSERT_TRUE(s.best.has_value());
  // Not the fastest time (7.0, the fourth), but the ranking's first, stored with its own time
  // from the timing rounds, not the 0.5 it was ranked on.
  EXPECT_DOUBLE_EQ(s.best->time_ms, 9.0);
  EXPECT_DOUBLE_EQ(s.finalists.front().time_ms, 9.0);
  const auto stored = store_->best("reduce", instance_->problem_key(), s.best->device_id);
  ASSERT_TRUE(stored.has_value());
  EXPECT_EQ(stored->trial_id, s.best->id);
  // The others follow the ranking: 5 + i for the first, third and fourth.
  EXPECT_DOUBLE_EQ(s.finalists[1].time_ms, 10.0);
  EXPECT_DOUBLE_EQ(s.finalists[2].time_ms, 8.0);
  EXPECT_DOUBLE_EQ(s.finalists[3].time_ms, 7.0);
}

// An objective of each trial that ranks configurations otherwise than their time: the time,
// but higher is better, so the slowest wins.
double per_ms(const TrialRecord& t) { return t.time_ms; }

TEST_F(TunerLoop, AnotherObjectiveRanksTheSearchAndTheBestAndIsRecordedWithIt) {
  FakeBackend backend(*instance_);
  Recording strategy(make_strategy("brute_force"));
  TuneOptions options;
  options.retime_top = 3;
  options.objective = {"slowness", true};
  options.objective_value = per_ms;
  const TuneSummary s = tune(*instance_, backend, *store_, strategy, options, nullptr);
  ASSERT_TRUE(s.best.has_value());
  // The best by the objective, not by time.
  double top = 0, fastest = 1e9;
  for (const TrialRecord& t : store_->trials_of_run(s.run_id)) {
    if (t.kind != TrialKind::kSearch) continue;
    EXPECT_DOUBLE_EQ(t.objective, per_ms(t)) << t.config_key;
    top = std::max(top, t.objective);
    fastest = std::min(fastest, t.time_ms);
  }
  EXPECT_DOUBLE_EQ(s.best->objective, top);
  EXPECT_GT(s.best->time_ms, fastest);
  // The strategy was told the inverse of the value, a lower-is-better score like a time.
  for (const auto& [config, outcome] : strategy.told)
    EXPECT_DOUBLE_EQ(outcome.time_ms, 1.0 / backend.time_of(config));
  // The finalists were re-timed and ranked by the objective too.
  ASSERT_EQ(s.finalists.size(), 3u);
  EXPECT_GE(s.finalists[0].objective, s.finalists[1].objective);
  EXPECT_GE(s.finalists[1].objective, s.finalists[2].objective);
  // The database records the objective with the run and the best.
  const auto stored = store_->best("reduce", instance_->problem_key(), s.best->device_id);
  ASSERT_TRUE(stored.has_value());
  EXPECT_EQ(stored->trial_id, s.best->id);
  EXPECT_EQ(stored->objective, "slowness");
  EXPECT_TRUE(stored->objective_higher_is_better);
  EXPECT_EQ(store_->run(s.run_id)->ranked_by(), (Objective{"slowness", true}));
}

TEST_F(TunerLoop, ATrialWithoutAValueOfTheObjectiveIsAFailureToTheSearchAndNeverTheBest) {
  FakeBackend backend(*instance_);
  Recording strategy(make_strategy("brute_force"));
  TuneOptions options;
  options.retime_top = 0;
  options.objective = {"slowness", true};
  // The largest block has no value (NaN), the next a negative one.
  options.objective_value = [](const TrialRecord& t) {
    const double block = nlohmann::json::parse(t.config_json).at("block_size").get<double>();
    return block == 1024 ? std::nan("") : block == 512 ? -1.0 : block / t.time_ms;
  };
  const TuneSummary s = tune(*instance_, backend, *store_, strategy, options, nullptr);
  ASSERT_TRUE(s.best.has_value());
  EXPECT_LT(nlohmann::json::parse(s.best->config_json).at("block_size").get<int>(), 512);
  int failed = 0;
  for (const auto& [config, outcome] : strategy.told) {
    const bool without = instance_->space().to_json(config).at("block_size").get<int>() >= 512;
    EXPECT_EQ(outcome.status != TrialStatus::kOk, without) << instance_->space().key(config);
    failed += without;
  }
  EXPECT_GT(failed, 0);
}

TEST_F(TunerLoop, ARunByTimeAfterOneByAnotherObjectiveStoresTheFastestAgain) {
  FakeBackend backend(*instance_);
  TuneOptions by_value;
  by_value.retime_top = 0;
  by_value.objective = {"slowness", true};
  by_value.objective_value = per_ms;
  auto first = make_strategy("brute_force");
  const TuneSummary a = tune(*instance_, backend, *store_, *first, by_value, nullptr);
  TuneOptions by_time;
  by_time.retime_top = 0;
  auto second = make_strategy("brute_force");
  const TuneSummary b = tune(*instance_, backend, *store_, *second, by_time, nullptr);
  ASSERT_TRUE(a.best && b.best);
  EXPECT_LT(b.best->time_ms, a.best->time_ms);
  const auto stored = store_->best("reduce", instance_->problem_key(), b.best->device_id);
  ASSERT_TRUE(stored.has_value());
  EXPECT_EQ(stored->trial.config_key, b.best->config_key);
  EXPECT_EQ(stored->objective, "time");
  EXPECT_FALSE(stored->objective_higher_is_better);
}

// A strategy that proposes an invalid configuration once.
class Misbehaving final : public Strategy {
 public:
  std::string name() const override { return "misbehaving"; }
  void start(const StrategyContext& c) override { space_ = c.space; }
  std::vector<Config> ask(std::size_t) override {
    if (done_) return {};
    done_ = true;
    Config c = space_->default_config();
    c[space_->param_index("block_size")] = 5;    // 1024 ...
    c[space_->param_index("maxrregcount")] = 3;  // ... with 128 registers: over the register file
    return {c};
  }
  void tell(const Config&, const Outcome& o) override { last = o.status; }
  bool exhausted() const override { return done_; }
  TrialStatus last = TrialStatus::kOk;

 private:
  const SearchSpace* space_ = nullptr;
  bool done_ = false;
};

// A strategy whose ask has a fixed cost (a shared Optuna study) asks for a batch: once work is
// queued, the loop waits for room for ask_batch() configurations before asking again; the run
// still measures every configuration once.
class Batched final : public Strategy {
 public:
  std::string name() const override { return "batched"; }
  void start(const StrategyContext& c) override { inner_->start(c); }
  std::vector<Config> ask(std::size_t n) override {
    std::vector<Config> out = inner_->ask(n);
    if (!out.empty()) sizes.push_back(out.size());
    return out;
  }
  void tell(const Config& c, const Outcome& o) override { inner_->tell(c, o); }
  bool exhausted() const override { return inner_->exhausted(); }
  std::size_t ask_batch() const override { return batch; }
  std::size_t batch = 4;
  std::vector<std::size_t> sizes;

 private:
  std::unique_ptr<Strategy> inner_ = make_strategy("brute_force");
};

TEST_F(TunerLoop, AStrategyThatPrefersBatchesIsAskedForBatches) {
  for (const std::size_t batch : {std::size_t{1}, std::size_t{4}}) {
    FakeBackend backend(*instance_);
    Batched strategy;
    strategy.batch = batch;
    TuneOptions options;
    options.retime_top = 0;
    options.reuse = false;
    options.lookahead = 8;
    const TuneSummary s = tune(*instance_, backend, *store_, strategy, options, nullptr);
    EXPECT_EQ(s.trials, valid_count());
    EXPECT_EQ(std::set<std::string>(backend.evaluated.begin(), backend.evaluated.end()).size(),
              valid_count());
    ASSERT_GE(strategy.sizes.size(), 2u);
    EXPECT_EQ(strategy.sizes.front(), 8u);  // an empty queue is filled
    // After the first, every ask but the space's last is for at least a batch; with a batch of
    // 1 the loop asks as each slot frees.
    const auto smallest = *std::min_element(strategy.sizes.begin() + 1, strategy.sizes.end() - 1);
    if (batch == 1)
      EXPECT_EQ(smallest, 1u);
    else
      EXPECT_GE(smallest, batch);
  }
}

TEST_F(TunerLoop, InvalidProposalsAreRecordedWithoutRunning) {
  KernelInstance full(registry_.get("reduce"), {{"n", 1 << 20}}, DeviceLimits::for_arch(90));
  FakeBackend backend(full);
  Misbehaving strategy;
  TuneOptions options;
  const TuneSummary s = tune(full, backend, *store_, strategy, options, nullptr);
  EXPECT_EQ(s.trials, 1u);
  EXPECT_EQ(strategy.last, TrialStatus::kInvalid);
  EXPECT_TRUE(backend.evaluated.empty());
  EXPECT_FALSE(s.best.has_value());
}

TEST_F(TunerLoop, CompileErrorsAreTrialsWithTheirLog) {
  KernelInstance broken(registry_.get("broken"), {}, DeviceLimits::for_arch(90));
  FakeBackend backend(broken, /*compiles=*/true);
  auto strategy = make_strategy("brute_force");
  auto cache = std::make_shared<CompileCache>(dir_ / "cache");
  CompilePool pool(2, cache);
  TuneOptions options;
  options.retime_top = 2;
  const TuneSummary s = tune(broken, backend, *store_, *strategy, options, &pool);
  EXPECT_EQ(s.trials, 12u);
  EXPECT_EQ(s.by_status.at("compile_failed"), 6u);
  EXPECT_EQ(s.by_status.at("ok"), 6u);
  for (const auto& t : store_->trials_of_run(s.run_id)) {
    if (t.status != TrialStatus::kCompileFailed) continue;
    EXPECT_EQ(t.config_key.rfind("bad=1", 0), 0u);
    EXPECT_NE(t.compile_log.find("deliberately broken"), std::string::npos) << t.compile_log;
    EXPECT_NE(t.compile_options.find("--gpu-architecture=sm_90"), std::string::npos);
    EXPECT_EQ(t.arch, "sm_90");
  }
  EXPECT_GT(s.compile_seconds, 0);
}

}  // namespace
}  // namespace ktune

namespace ktune {
namespace {

// A fake that keeps two evaluations in flight, like the CUDA backend.
class PipelinedFake final : public Backend {
 public:
  explicit PipelinedFake(const KernelInstance& instance) : inner_(instance) {}
  std::string name() const override { return "fake"; }
  DeviceInfo device() const override { return inner_.device(); }
  bool needs_compilation() const override { return false; }
  void prepare(const KernelInstance& i, const MeasureOptions& m) override { inner_.prepare(i, m); }
  Measurement evaluate(const Config& c, const CompileResult* r) override {
    return inner_.evaluate(c, r);
  }
  std::size_t pipeline_depth() const override { return 2; }
  void submit(const Config& c, const CompileResult* r) override {
    max_in_flight = std::max(max_in_flight, ++in_flight);
    pending_.push_back(inner_.evaluate(c, r));
  }
  Measurement collect() override {
    --in_flight;
    Measurement m = pending_.front();
    pending_.erase(pending_.begin());
    return m;
  }
  std::vector<Measurement> retime(const std::vector<RetimeCandidate>& c, int rounds) override {
    return inner_.retime(c, rounds);
  }
  FakeBackend inner_;
  int in_flight = 0;
  int max_in_flight = 0;

 private:
  std::vector<Measurement> pending_;
};

TEST_F(TunerLoop, PipelinedBackendKeepsTwoInFlightAndResumesEverything) {
  TuneOptions options;
  options.strategy = "random";
  options.budget.evaluations = 12;
  {
    PipelinedFake backend(*instance_);
    auto strategy = make_strategy("random");
    const TuneSummary s = tune(*instance_, backend, *store_, *strategy, options, nullptr);
    EXPECT_EQ(s.trials, 12u);
    EXPECT_EQ(s.measured, 12u);
    EXPECT_EQ(backend.max_in_flight, 2);
    EXPECT_EQ(backend.in_flight, 0);
  }
  PipelinedFake backend(*instance_);
  auto strategy = make_strategy("random");
  options.retime_top = 0;
  const TuneSummary r = tune(*instance_, backend, *store_, *strategy, options, nullptr);
  EXPECT_EQ(r.from_database, 12u);
  EXPECT_EQ(r.measured, 0u);
  EXPECT_TRUE(backend.inner_.evaluated.empty());
}

}  // namespace
}  // namespace ktune

namespace ktune {
namespace {

// The slow configuration (slow=1) comes first in the space's order and takes NVRTC ~35 times as
// long as each of the four quick ones; a pool of two compile threads finishes the quick ones
// while it compiles.
class SlowCompile : public TunerLoop {
 protected:
  std::vector<std::string> evaluated_order(std::unique_ptr<Strategy> strategy,
                                           const std::string& cache_dir) {
    registry_.load_manifest(std::string(KTUNE_TEST_DATA_DIR) + "/slow_compile/slow.toml");
    KernelInstance slow(registry_.get("slow_compile"), {}, DeviceLimits::for_arch(90));
    FakeBackend backend(slow, /*compiles=*/true);
    CompilePool pool(2, std::make_shared<CompileCache>(dir_ / cache_dir));
    TuneOptions options;
    options.retime_top = 0;
    const TuneSummary s = tune(slow, backend, *store_, *strategy, options, &pool);
    EXPECT_EQ(s.by_status.at("ok"), 5u);
    return backend.evaluated;
  }
};

TEST_F(SlowCompile, AFixedOrderStrategyMeasuresWhicheverCompilationIsDoneFirst) {
  const std::vector<std::string> order = evaluated_order(make_strategy("brute_force"), "a");
  ASSERT_EQ(order.size(), 5u);
  EXPECT_EQ(order.back(), "slow=1,block_size=64") << "the quick ones went first";
  EXPECT_EQ(order.front().rfind("slow=0", 0), 0u);
}

// --trace: the timeline holds every compile batch on its compile thread's row, every measured
// trial on the GPU's row in the order measured, the preparation, the in-flight counter and the
// search; the pool stops reporting to it when the run ends.
TEST_F(SlowCompile, TheTimelineShowsEveryBatchAndEveryTrial) {
  registry_.load_manifest(std::string(KTUNE_TEST_DATA_DIR) + "/slow_compile/slow.toml");
  KernelInstance slow(registry_.get("slow_compile"), {}, DeviceLimits::for_arch(90));
  FakeBackend backend(slow, /*compiles=*/true);
  backend.delay = std::chrono::milliseconds(2);
  CompilePool pool(2, std::make_shared<CompileCache>(dir_ / "trace-cache"));
  auto strategy = make_strategy("brute_force");
  TuneOptions options;
  options.retime_top = 2;
  const auto trace = std::make_shared<Trace>();
  TraceObserver drawing(trace);
  const TuneSummary s = tune(slow, backend, *store_, *strategy, options, &pool, &drawing);
  ASSERT_EQ(s.measured, 5u);

  const nlohmann::json j = trace->to_json();
  std::map<int, std::string> lanes;
  for (const auto& e : j.at("traceEvents"))
    if (e.at("ph") == "M" && e.at("name") == "thread_name")
      lanes[e.at("tid").get<int>()] = e.at("args").at("name").get<std::string>();
  std::size_t compiled = 0, batches = 0, counters = 0;
  std::vector<std::string> gpu_keys;
  std::set<std::string> compile_lanes, run_spans;
  double gpu_end = -1;
  bool prepared = false;
  for (const auto& e : j.at("traceEvents")) {
    if (e.at("ph") == "C") {
      ++counters;
      EXPECT_EQ(e.at("name"), "measurements in flight");
      continue;
    }
    if (e.at("ph") != "X") continue;
    EXPECT_GE(e.at("dur").get<double>(), 0.0);
    const std::string lane = lanes.at(e.at("tid").get<int>());
    if (lane.rfind("compile ", 0) == 0) {
      compile_lanes.insert(lane);
      ++batches;
      compiled += e.at("args").at("compiled").get<std::size_t>();
    } else if (lane == "GPU worker" && e.at("name") == "prepare") {
      prepared = true;
    } else if (lane == "GPU worker") {
      gpu_keys.push_back(e.at("name").get<std::string>());
      // One trial at a time: each begins after the one before ended.
      EXPECT_GE(e.at("ts").get<double>() + 1e-3, gpu_end);
      gpu_end = e.at("ts").get<double>() + e.at("dur").get<double>();
    } else if (lane == "run") {
      run_spans.insert(e.at("name").get<std::string>());
    }
  }
  EXPECT_EQ(compiled, 5u) << "every configuration compiled once, each in some batch";
  EXPECT_GE(batches, 2u);
  EXPECT_LE(compile_lanes.size(), 2u);
  EXPECT_EQ(gpu_keys, backend.evaluated) << "the GPU's row lists the trials in measured order";
  EXPECT_TRUE(prepared);
  EXPECT_EQ(counters, 2 * gpu_keys.size()) << "one value at each submit and each collect";
  EXPECT_TRUE(run_spans.count("search"));
  EXPECT_TRUE(run_spans.count("re-time the finalists"));
  EXPECT_TRUE(run_spans.count("the best and the run's record"));

  // The pool no longer reports to the finished run's timeline.
  const std::size_t events = trace->size();
  CompileRequest request = render(slow, slow.space().enumerate().front(), "sm_90");
  request.source += "\n// another source, so that it is compiled again\n";
  EXPECT_TRUE(pool.submit(request).get().ok);
  EXPECT_EQ(trace->size(), events);

  // Written and read back: the same events.
  const fs::path file = dir_ / "run.trace.json";
  trace->write(file);
  std::ifstream in(file);
  EXPECT_EQ(nlohmann::json::parse(in), j);
  EXPECT_THROW(trace->write(dir_ / "no-such-folder" / "t.json"), Error);
}

TEST_F(SlowCompile, AStrategyThatLearnsIsAnsweredInTheOrderItAsked) {
  // Recording wraps brute force without declaring a fixed order: the loop keeps the order.
  const std::vector<std::string> order =
      evaluated_order(std::make_unique<Recording>(make_strategy("brute_force")), "b");
  ASSERT_EQ(order.size(), 5u);
  EXPECT_EQ(order.front(), "slow=1,block_size=64");
}

}  // namespace
}  // namespace ktune
