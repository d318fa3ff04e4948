// Transfer between GPUs: the opening that races other devices' measurements (TransferSearch),
// the search after it (library, bench-strategies --transfer, and tune --warm-start-from and
// --warm-start from a database of another GPU).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <nlohmann/json.hpp>
#include <set>

#include "ktune/bench_strategies.h"
#include "ktune/error.h"
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

// The configurations a TransferSearch (opening of `opening`, then brute force) proposes in
// order for `budget` evaluations, each told the time `time` gives it, asked `batch` at a time.
std::vector<Config> proposals(const SearchSpace& space, const std::vector<TransferSource>& from,
                              std::size_t opening, std::uint64_t budget,
                              const std::function<double(const Config&)>& time,
                              std::size_t batch = 1) {
  auto inner = make_strategy("brute_force");
  TransferSearch search(*inner, from, opening);
  StrategyContext context;
  context.space = &space;
  context.budget = budget;
  search.start(context);
  std::vector<Config> out;
  while (out.size() < budget && !search.exhausted()) {
    const auto asked = search.ask(batch);
    if (asked.empty()) break;
    for (const Config& c : asked) {
      out.push_back(c);
      search.tell(c, Outcome{TrialStatus::kOk, time(c)});
    }
  }
  return out;
}

TEST(Transfer, TheOpeningMeasuresEachArmsFavouriteFirst) {
  const SearchSpace space({{"x", ints({1, 2, 3, 4}), 0}}, {});
  // a: 1 < 2 < 3, 4 unmeasured. b: 2 < 4 < 1, 3 failed. Mean ranks (a, b over three working):
  // x=1 (0 + 2/3) / 2, x=2 (1/3 + 0) / 2, x=3 (2/3 + 1) / 2, x=4 (1 + 1/3) / 2. The consensus
  // arm's favourite is x=2, a's x=1, b's x=2 again (measured once, credited to both).
  const auto a = source({"x"}, {ints({1}), ints({2}), ints({3})}, {1.0, 2.0, 3.0});
  const auto b = source({"x"}, {ints({1}), ints({2}), ints({3}), ints({4})}, {3.0, 1.0, kNaN, 2.0});
  const auto flat = [](const Config&) { return 1.0; };
  const auto got = proposals(space, {a, b}, 2, 2, flat);
  EXPECT_EQ(got, (std::vector<Config>{{1}, {0}}));
  // Only valid configurations of the target take part.
  const SearchSpace restricted({{"x", ints({1, 2, 3, 4}), 0}}, {"x != 2"});
  EXPECT_EQ(proposals(restricted, {a, b}, 2, 2, flat), (std::vector<Config>{{0}, {3}}));
  // Without sources the inner search runs alone.
  EXPECT_EQ(proposals(space, {}, 2, 2, flat), (std::vector<Config>{{0}, {1}}));
}

TEST(Transfer, SourcesOfOtherParametersMapByName) {
  // The target has y (default 8) that the source lacks; the source has z the target lacks, and
  // a value of x (5) the target does not have. Its favourite is x=2, y=8; one parameter away,
  // the configuration it measured (x=1, y=8) ranks above one it did not (x=2, y=4).
  const SearchSpace space({{"x", ints({1, 2}), 0}, {"y", ints({4, 8}), 1}}, {});
  const auto s = source({"z", "x"}, {ints({0, 5}), ints({0, 2}), ints({0, 1})}, {1.0, 2.0, 3.0});
  EXPECT_EQ(proposals(space, {s}, 2, 2, [](const Config&) { return 1.0; }),
            (std::vector<Config>{{1, 1}, {0, 1}}));
}

// A 10 x 10 space; a source fast around (fx, fy).
SearchSpace grid_space() {
  return SearchSpace({{"x", ints({0, 1, 2, 3, 4, 5, 6, 7, 8, 9}), 0},
                      {"y", ints({0, 1, 2, 3, 4, 5, 6, 7, 8, 9}), 0}},
                     {});
}
TransferSource bowl(std::int64_t fx, std::int64_t fy) {
  TransferSource s;
  s.name = "bowl";
  s.params = {"x", "y"};
  for (std::int64_t x = 0; x < 10; ++x)
    for (std::int64_t y = 0; y < 10; ++y) {
      s.configs.push_back(ints({x, y}));
      s.times.push_back(1.0 + static_cast<double>((x - fx) * (x - fx) + 2 * (y - fy) * (y - fy)));
    }
  return s;
}

TEST(Transfer, TheOpeningFollowsTheSourceThatResemblesTheNewDevice) {
  // Two sources, fast at (2, 2) and at (7, 7); the new device resembles the second, its
  // optimum one step further, at (8, 7). The favourites come first (the consensus's, in the
  // middle, then each source's); the arm of the second source wins the race and climbs to the
  // optimum within the opening, whatever the batch size the loop asks for.
  const SearchSpace space = grid_space();
  const auto target = [](const Config& c) {
    const double x = c[0], y = c[1];
    return 1.0 + (x - 8) * (x - 8) + 3 * (y - 7) * (y - 7);
  };
  for (std::size_t batch : {1, 4}) {
    const auto got = proposals(space, {bowl(2, 2), bowl(7, 7)}, 10, 10, target, batch);
    ASSERT_EQ(got.size(), 10u);
    EXPECT_EQ(got[1], (Config{2, 2})) << batch;
    EXPECT_EQ(got[2], (Config{7, 7})) << batch;
    EXPECT_NE(std::find(got.begin(), got.end(), Config{8, 7}), got.end()) << batch;
    EXPECT_EQ(std::set<Config>(got.begin(), got.end()).size(), got.size()) << "a repeat";
  }
}

TEST(Transfer, ASingleSourcesRankingTakesTurnsWithTheClimb) {
  // One source (another problem size, say): fastest at (2, 2), second at (7, 7), then by
  // distance from (2, 2). The new problem is fastest at (7, 7). Nothing to race: after the
  // favourite, the climb around it and the source's next in rank alternate, so (7, 7) comes
  // third instead of after the whole neighbourhood of (2, 2).
  TransferSource s = bowl(2, 2);
  for (std::size_t r = 0; r < s.configs.size(); ++r)
    if (s.configs[r] == ints({7, 7})) s.times[r] = 1.5;
  const auto got = proposals(grid_space(), {s}, 10, 10, [](const Config& c) {
    return c == Config{7, 7} ? 0.5 : 10.0 - 0.1 * c[0];
  });
  ASSERT_EQ(got.size(), 10u);
  EXPECT_EQ(got[0], (Config{2, 2}));
  EXPECT_EQ(got[2], (Config{7, 7}));
}

TEST(Transfer, TheInnerSearchGetsTheRestAndNeverMeasuresTheOpeningAgain) {
  // Brute force after an opening of 12: it proposes all 100 configurations, the opening's 12
  // are answered from the opening, so the 100 evaluations are 100 different configurations.
  const SearchSpace space = grid_space();
  const auto got = proposals(space, {bowl(2, 2), bowl(7, 7)}, 12, 100,
                             [](const Config& c) { return 1.0 + c[0] + c[1]; });
  EXPECT_EQ(got.size(), 100u);
  EXPECT_EQ(std::set<Config>(got.begin(), got.end()).size(), 100u);
  // The opening spends what the budget allows and no more.
  EXPECT_EQ(
      proposals(space, {bowl(2, 2), bowl(7, 7)}, 12, 4, [](const Config&) { return 1.0; }).size(),
      4u);
}

TEST(Transfer, TheInnerStrategysOptionsAreCheckedAtStart) {
  const SearchSpace space = grid_space();
  auto inner = make_strategy("bayes");
  TransferSearch search(*inner, {bowl(2, 2)});
  StrategyContext context;
  context.space = &space;
  context.options = {{"no_such_option", "1"}};
  EXPECT_THROW(search.start(context), Error);
  EXPECT_EQ(search.name(), "bayes");
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
  double cold = 0, cold_30 = 0, warm = 0, warm_30 = 0;
  for (std::uint64_t seed = 1; seed <= 10; ++seed) {
    cold += fraction_after(target, kAutoSearchStrategy, seed, 10) / 10;
    cold_30 += fraction_after(target, kAutoSearchStrategy, seed, 30) / 10;
  }
  target.transfer = from;
  target.transfer_opening = 10;
  for (std::uint64_t seed = 1; seed <= 10; ++seed) {
    // The opening comes first whatever the seed: the sources' favourites (0.67 of the optimum
    // after 3), then the race finds the optimum within 10.
    EXPECT_GT(fraction_after(target, kAutoSearchStrategy, seed, 10), 0.97) << seed;
    warm += fraction_after(target, kAutoSearchStrategy, seed, 10) / 10;
    warm_30 += fraction_after(target, kAutoSearchStrategy, seed, 30) / 10;
  }
  EXPECT_GT(warm, cold + 0.02);        // 1.0 against 0.964 without the sources
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
      run({"bench-strategies", "--transfer", "10", "--strategies", "greedy_ils", "--seeds", "3",
           "--budgets", "10,30", "--replay", fixture("dedispersion_MI250X_small.json"),
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
    for (std::size_t i = 0; i < 10; ++i) best = std::min(best, trials[i].time_ms);
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
