// Transfer between GPUs: the consensus ranking over other devices' measurements, the warm start
// it gives the search (library, bench-strategies --transfer, and tune --warm-start-from and
// --warm-start from a database of another GPU).
#include <gtest/gtest.h>

#include <cmath>
#include <nlohmann/json.hpp>

#include "ktune/bench_strategies.h"
#include "ktune/store.h"
#include "ktune/transfer.h"
#include "tuner/cli_test_util.h"

namespace ktune {
namespace {

using test::contains;

std::string fixture(const std::string& name) {
  return std::string(KTUNE_TEST_DATA_DIR) + "/replay/" + name;
}

const double kNaN = std::nan("");

TransferSource source(std::vector<std::string> params, std::vector<std::vector<Value>> rows,
                      std::vector<double> times) {
  return {"test", std::move(params), std::move(rows), std::move(times)};
}

std::vector<Value> ints(std::initializer_list<std::int64_t> v) {
  std::vector<Value> out;
  for (auto x : v) out.emplace_back(x);
  return out;
}

TEST(Transfer, ConsensusIsTheMeanNormalisedRank) {
  const SearchSpace space({{"x", ints({1, 2, 3, 4}), 0}}, {});
  // a: 1 < 2 < 3, 4 unmeasured. b: 2 < 4 < 1, 3 failed. Mean ranks (a, b over three working):
  // x=1 (0 + 2/3) / 2, x=2 (1/3 + 0) / 2, x=3 (2/3 + 1) / 2, x=4 (1 + 1/3) / 2.
  const auto a = source({"x"}, {ints({1}), ints({2}), ints({3})}, {1.0, 2.0, 3.0});
  const auto b = source({"x"}, {ints({1}), ints({2}), ints({3}), ints({4})}, {3.0, 1.0, kNaN, 2.0});
  EXPECT_EQ(consensus_top(space, {a, b}, 10), (std::vector<Config>{{1}, {0}, {3}, {2}}));
  EXPECT_EQ(consensus_top(space, {a, b}, 2), (std::vector<Config>{{1}, {0}}));
  // Only valid configurations of the target take part.
  const SearchSpace restricted({{"x", ints({1, 2, 3, 4}), 0}}, {"x != 2"});
  EXPECT_EQ(consensus_top(restricted, {a, b}, 10), (std::vector<Config>{{0}, {3}, {2}}));
  EXPECT_TRUE(consensus_top(space, {}, 10).empty());
}

TEST(Transfer, SourcesOfOtherParametersMapByName) {
  // The target has y (default 8) that the source lacks; the source has z the target lacks, and
  // a value of x (5) the target does not have.
  const SearchSpace space({{"x", ints({1, 2}), 0}, {"y", ints({4, 8}), 1}}, {});
  const auto s = source({"z", "x"}, {ints({0, 5}), ints({0, 2}), ints({0, 1})}, {1.0, 2.0, 3.0});
  EXPECT_EQ(consensus_top(space, {s}, 10), (std::vector<Config>{{1, 1}, {0, 1}}));
}

BenchSpace fixture_space(const std::string& name) {
  return bench_space_from_recording(read_kt_cache(fixture(name)), nullptr, name);
}

double fraction_after(const BenchSpace& space, const std::string& strategy, std::uint64_t seed,
                      std::size_t evaluations) {
  BenchOptions options;
  const BenchRun run = run_strategy(space, strategy, seed, 30, options);
  const double best = run.best.at(evaluations - 1);
  return std::isnan(best) ? 0 : space.optimum() / best;
}

TEST(Transfer, TwoOtherGpusStartTheSearchNearTheOptimum) {
  // Dedispersion on an MI250X from an A100 and an RTX A4000: the same sub-space on three GPUs.
  BenchSpace target = fixture_space("dedispersion_MI250X_small.json");
  const Recording a100 = read_kt_cache(fixture("dedispersion_A100_small.json"));
  const Recording a4000 = read_kt_cache(fixture("dedispersion_A4000_small.json"));
  const std::vector<TransferSource> from = {transfer_source(a100), transfer_source(a4000)};
  double cold = 0, cold_30 = 0, warm_30 = 0;
  for (std::uint64_t seed = 1; seed <= 10; ++seed) {
    cold += fraction_after(target, kAutoSearchStrategy, seed, 5) / 10;
    cold_30 += fraction_after(target, kAutoSearchStrategy, seed, 30) / 10;
  }
  target.warm_start = consensus_top(*target.space, from, 5);
  ASSERT_EQ(target.warm_start.size(), 5u);
  for (std::uint64_t seed = 1; seed <= 10; ++seed) {
    // The warm start comes first whatever the seed: 0.977 of the optimum after 5 evaluations
    // (the consensus computed in Python from the fixtures).
    EXPECT_GT(fraction_after(target, kAutoSearchStrategy, seed, 5), 0.97) << seed;
    warm_30 += fraction_after(target, kAutoSearchStrategy, seed, 30) / 10;
  }
  EXPECT_LT(cold, 0.9);
  EXPECT_GE(warm_30, cold_30 - 0.01);  // and no worse later on
}

class TransferCli : public ::testing::Test {
 protected:
  test::CliResult run(const std::vector<std::string>& args) {
    return test::run_ktune(args, dir_.path(), dir_ / "cache");
  }
  test::TempDir dir_;
};

TEST_F(TransferCli, BenchStrategiesLeavesOneGpuOut) {
  const auto r =
      run({"bench-strategies", "--transfer", "5", "--strategies", "greedy_ils", "--seeds", "3",
           "--budgets", "5,30", "--replay", fixture("dedispersion_MI250X_small.json"),
           fixture("dedispersion_A100_small.json"), fixture("dedispersion_A4000_small.json"),
           fixture("pnpoly_small.json.gz"), "--json"});
  ASSERT_EQ(r.code, 0) << r;
  const auto j = nlohmann::json::parse(r.out);
  ASSERT_EQ(j.at("spaces").size(), 3u);  // pnpoly has no other GPU: left out
  EXPECT_EQ(j.at("spaces").at(0).at("name"),
            "dedispersion_MI250X_small <- dedispersion_A100_small+dedispersion_A4000_small");
  EXPECT_GT(j.at("results").at(0).at("fractions").at(0).at("fraction").get<double>(), 0.97);
}

TEST_F(TransferCli, TuneWarmStartsFromARecordingOrADatabaseOfAnotherGpu) {
  const std::string target = fixture("dedispersion_MI250X_small.json");
  auto r = run({"tune", "--replay", target, "--warm-start-from",
                fixture("dedispersion_A100_small.json"), "--warm-start-from",
                fixture("dedispersion_A4000_small.json"), "--budget-evals", "12", "--db", "a.db"});
  ASSERT_EQ(r.code, 0) << r;
  {
    Store store = Store::open(dir_ / "a.db", Store::Mode::kReadOnly);
    const auto trials = store.trials_of_run(store.runs().at(0).id);
    ASSERT_GE(trials.size(), 10u);
    for (std::size_t i = 0; i < 10; ++i) EXPECT_EQ(trials[i].kind, TrialKind::kWarmStart) << i;
    double best = INFINITY;
    for (std::size_t i = 0; i < 5; ++i) best = std::min(best, trials[i].time_ms);
    EXPECT_LT(best, 49.775 / 0.97);  // the recorded optimum of the MI250X fixture, by median
  }
  // From a database: an A100 run brute-forced into b.db, then the MI250X warm-started there.
  r = run({"tune", "--replay", fixture("dedispersion_A100_small.json"), "--db", "b.db"});
  ASSERT_EQ(r.code, 0) << r;
  r = run({"tune", "--replay", target, "--warm-start", "--budget-evals", "12", "--db", "b.db"});
  ASSERT_EQ(r.code, 0) << r;
  Store store = Store::open(dir_ / "b.db", Store::Mode::kReadOnly);
  const auto a100 = store.trials_of_run(store.runs().at(0).id);
  const auto mi250x = store.trials_of_run(store.runs().at(1).id);
  // The first warm-start trial is the A100's fastest configuration.
  const auto fastest = std::min_element(
      a100.begin(), a100.end(), [](const auto& x, const auto& y) { return x.time_ms < y.time_ms; });
  ASSERT_FALSE(mi250x.empty());
  EXPECT_EQ(mi250x.front().kind, TrialKind::kWarmStart);
  EXPECT_EQ(mi250x.front().config_key, fastest->config_key);
}

}  // namespace
}  // namespace ktune
