// `--strategy auto`, the default of `ktune tune`: brute force without a budget, random order over
// the whole space when it fits within the evaluation budget, otherwise kAutoSearchStrategy,
// proposal for proposal;
// registered for the CLI and job files; options refused by name.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <set>

#include "cli_test_util.h"
#include "ktune/effort.h"
#include "ktune/error.h"
#include "ktune/job.h"
#include "ktune/registry.h"
#include "ktune/setup.h"
#include "ktune/store.h"
#include "ktune/strategy.h"
#include "strategy_test_util.h"

namespace ktune {
namespace {

namespace fs = std::filesystem;
using test::contains;
using test::DriveOptions;
using test::RecordedSpace;
using test::Trace;

const RecordedSpace& subset() {
  static const RecordedSpace r = test::load_recorded_space("convolution_a100_subset.json");
  return r;
}

constexpr double kNoTime = std::numeric_limits<double>::infinity();

TEST(AutoStrategy, ChoosesBruteForceWithoutABudget) {
  const AutoChoice c = choose_auto_strategy(subset().space, UINT64_MAX, kNoTime);
  EXPECT_EQ(c.strategy, "brute_force");
  EXPECT_TRUE(contains(c.reason, "no budget")) << c.reason;
}

TEST(AutoStrategy, MeasuresTheWholeSpaceInRandomOrderWhenItFitsTheBudget) {
  const std::uint64_t valid = subset().valid_count();
  ASSERT_GT(valid, 20u);
  for (const std::uint64_t budget : {valid, valid + 1, 10 * valid}) {
    const AutoChoice c = choose_auto_strategy(subset().space, budget, kNoTime);
    EXPECT_EQ(c.strategy, "random") << budget;
    EXPECT_TRUE(contains(c.reason, std::to_string(valid) + " valid configurations")) << c.reason;
  }
  // A time budget as well changes nothing: the evaluations fit.
  EXPECT_EQ(choose_auto_strategy(subset().space, valid, 60.0).strategy, "random");
}

TEST(AutoStrategy, ChoosesTheSearchStrategyWhenTheBudgetIsSmallerThanTheSpace) {
  const std::uint64_t valid = subset().valid_count();
  for (const std::uint64_t budget : {std::uint64_t{1}, std::uint64_t{20}, valid - 1}) {
    const AutoChoice c = choose_auto_strategy(subset().space, budget, kNoTime);
    EXPECT_EQ(c.strategy, kAutoSearchStrategy) << budget;
    EXPECT_TRUE(contains(c.reason, "budget of " + std::to_string(budget) + " evaluations"))
        << c.reason;
  }
  // Only a time budget: how many evaluations fit is unknown, so search.
  const AutoChoice t = choose_auto_strategy(subset().space, UINT64_MAX, 600.0);
  EXPECT_EQ(t.strategy, kAutoSearchStrategy);
  EXPECT_TRUE(contains(t.reason, "time budget of 600 s")) << t.reason;
}

TEST(AutoStrategy, TheSearchStrategyIsANativeOneThatIsRegistered) {
  const auto names = strategy_names();
  EXPECT_NE(std::find(names.begin(), names.end(), "auto"), names.end());
  EXPECT_NE(std::find(names.begin(), names.end(), kAutoSearchStrategy), names.end());
  EXPECT_EQ(make_strategy("auto")->name(), "auto");
}

// Runs `name` and auto with the same seed, budget and tells: the proposals must be the same.
void expect_same_proposals(const std::string& name, std::uint64_t budget,
                           double seconds = kNoTime) {
  const RecordedSpace& r = subset();
  DriveOptions o;
  o.budget = budget;
  o.seed = 5;
  o.order = test::TellOrder::kShuffled;
  auto expected = make_strategy(name);
  auto chosen = make_strategy("auto");
  Trace a, b;
  if (std::isfinite(seconds)) {
    // drive() passes no time budget; start the strategies here with one and drive them on.
    o.budget = 60;
    StrategyContext c;
    c.space = &r.space;
    c.seed = o.seed;
    c.budget_seconds = seconds;
    expected->start(c);
    chosen->start(c);
    for (int i = 0; i < 5; ++i) {
      const auto x = expected->ask(4), y = chosen->ask(4);
      ASSERT_EQ(x, y) << "ask " << i;
      for (const Config& cfg : x) {
        expected->tell(cfg, r.outcome(cfg));
        chosen->tell(cfg, r.outcome(cfg));
      }
    }
    return;
  }
  a = test::drive(*expected, r, o);
  b = test::drive(*chosen, r, o);
  EXPECT_EQ(a.asked, b.asked) << name << " with a budget of " << budget;
  EXPECT_EQ(a.exhausted, b.exhausted);
  EXPECT_FALSE(b.stalled);
  EXPECT_EQ(b.invalid, 0u);
}

TEST(AutoStrategy, RunsExactlyWhatItChose) {
  const std::uint64_t valid = subset().valid_count();
  expect_same_proposals(kAutoSearchStrategy, 40);
  expect_same_proposals(kAutoSearchStrategy, valid - 1);
  expect_same_proposals("random", valid);
  expect_same_proposals("random", 3 * valid);
  expect_same_proposals(kAutoSearchStrategy, UINT64_MAX, 120.0);
}

TEST(AutoStrategy, RefusesOptionsAndSaysWhichStrategyToName) {
  auto s = make_strategy("auto");
  StrategyContext c;
  c.space = &subset().space;
  c.options = {{"popsize", "10"}};
  try {
    s->start(c);
    FAIL() << "an option was accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kUsage);
    EXPECT_TRUE(contains(e.what(), "'popsize'")) << e.what();
    EXPECT_TRUE(contains(e.what(), std::string("--strategy ") + kAutoSearchStrategy)) << e.what();
  }
}

TEST(AutoStrategy, WarmStartComesFirstWhicheverItChooses) {
  const RecordedSpace& r = subset();
  const std::vector<Config> all = r.space.enumerate();
  for (const std::uint64_t budget : {std::uint64_t{30}, std::uint64_t{UINT64_MAX}}) {
    DriveOptions o;
    o.budget = budget == UINT64_MAX ? r.valid_count() : budget;
    o.warm_start = {all[all.size() / 2], all[all.size() / 3]};
    auto s = make_strategy("auto");
    const Trace t = test::drive(*s, r, o);
    ASSERT_GE(t.asked.size(), 2u);
    EXPECT_EQ(t.asked[0], o.warm_start[0]);
    EXPECT_EQ(t.asked[1], o.warm_start[1]);
  }
}

// --part I/K (what `tune --devices` gives each worker): brute force and random search take every
// K-th configuration of their order from the I-th first, then the other parts' stripes, so K
// parts first measure disjoint shares that cover the space; a native search is seeded apart.
std::vector<Config> proposals(const std::string& name, std::uint32_t part, std::uint32_t parts,
                              std::size_t count) {
  auto s = make_strategy(name);
  StrategyContext c;
  c.space = &subset().space;
  c.seed = 7;
  c.part = part;
  c.parts = parts;
  s->start(c);
  std::vector<Config> out;
  while (out.size() < count && !s->exhausted()) {
    const std::vector<Config> got = s->ask(1);
    if (got.empty()) break;
    out.push_back(got[0]);
    s->tell(got[0], Outcome{});
  }
  return out;
}

TEST(StrategyParts, ListStrategiesTakeTheirStripeFirstThenTheOthers) {
  const std::size_t valid = subset().valid_count();
  for (const std::string name : {"brute_force", "random"}) {
    const std::vector<Config> whole = proposals(name, 0, 1, valid);
    ASSERT_EQ(whole.size(), valid) << name;
    std::set<std::string> firsts;  // what the parts measure before going into the others'
    for (std::uint32_t part = 0; part < 3; ++part) {
      const std::vector<Config> mine = proposals(name, part, 3, valid);
      ASSERT_EQ(mine.size(), valid) << name;
      std::set<std::string> all;
      for (const Config& c : mine) all.insert(subset().space.key(c));
      EXPECT_EQ(all.size(), valid) << name << ": every configuration once";
      const std::size_t share = (valid - part + 2) / 3;  // positions part, part + 3, ...
      for (std::size_t i = 0; i < share; ++i) {
        EXPECT_EQ(mine[i], whole[part + 3 * i]) << name << " part " << part + 1 << " at " << i;
        firsts.insert(subset().space.key(mine[i]));
      }
      EXPECT_EQ(mine[share], whole[(part + 1) % 3]) << name << ": then the next part's stripe";
    }
    EXPECT_EQ(firsts.size(), valid) << name << ": the stripes cover the space";
  }
}

TEST(ListedStrategy, ProposesTheValidConfigurationsItWasGivenOnceEachThenNothing) {
  std::vector<Parameter> params(2);
  params[0].name = "a";
  params[1].name = "b";
  for (std::int64_t v : {1, 2, 3}) params[0].values.emplace_back(v);
  for (std::int64_t v : {1, 2}) params[1].values.emplace_back(v);
  const SearchSpace space(params, {"a != 2"});
  const Config a1 = space.from_assignments({{"a", "1"}}), a3 = space.from_assignments({{"a", "3"}});
  const Config a2 = space.from_assignments({{"a", "2"}});
  ASSERT_FALSE(space.is_valid(a2));
  auto s = make_listed_strategy({a3, a1, a3, a2});
  EXPECT_EQ(s->name(), "listed");
  StrategyContext context;
  context.space = &space;
  s->start(context);
  EXPECT_TRUE(s->fixed_order());
  EXPECT_EQ(s->ask(10), (std::vector<Config>{a3, a1}));  // in order, once each, valid only
  EXPECT_TRUE(s->exhausted());
  EXPECT_TRUE(s->ask(10).empty());
  context.options["x"] = "1";
  EXPECT_THROW(s->start(context), Error);
}

TEST(StrategyParts, ASearchIsSeededApartPerPart) {
  const auto a = proposals(kAutoSearchStrategy, 0, 2, 30);
  EXPECT_EQ(a, proposals(kAutoSearchStrategy, 0, 1, 30));  // part 1 keeps the seed's search
  EXPECT_NE(a, proposals(kAutoSearchStrategy, 1, 2, 30));
}

class AutoStrategyCli : public ::testing::Test {
 protected:
  test::TempDir dir_;
  test::CliResult run(const std::vector<std::string>& args) {
    return test::run_ktune(args, dir_.path(), dir_ / "cache");
  }
  static std::string conv() {
    return std::string(KTUNE_TEST_DATA_DIR) + "/replay/convolution_A100_small.json.gz";
  }
};

TEST_F(AutoStrategyCli, IsTheDefaultOfTuneAndSaysWhatItRuns) {
  auto r = run({"tune", "--help"});
  ASSERT_EQ(r.code, 0) << r;
  EXPECT_TRUE(contains(r.out, "(=auto)")) << r;
  EXPECT_TRUE(contains(r.out, "strategies: auto, brute_force")) << r;

  // No budget: the default effort's, which the whole recorded space (274 valid
  // configurations) fits in: each is measured.
  r = run({"tune", "--replay", conv(), "--db", "a.db"});
  ASSERT_EQ(r.code, 0) << r;
  EXPECT_TRUE(contains(r.err,
                       "strategy auto (random: all 274 valid configurations fit within the "
                       "budget of 300 evaluations"))
      << r;
  EXPECT_TRUE(contains(r.err, "(the default effort's budget)")) << r;
  EXPECT_TRUE(contains(r.out, "274 trials")) << r;
  // A budget below the space: the search strategy.
  r = run({"tune", "--replay", conv(), "--budget-evals", "30", "--db", "b.db", "--json"});
  ASSERT_EQ(r.code, 0) << r;
  const auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j.at("strategy"), "auto");
  EXPECT_EQ(j.at("strategy_chosen"), kAutoSearchStrategy);
  EXPECT_EQ(j.at("trials"), 30);
  {
    Store store = Store::open(dir_ / "b.db", Store::Mode::kReadOnly);
    ASSERT_EQ(store.runs().size(), 1u);
    // auto is resolved once: the run row keeps what was asked and what ran, apart.
    EXPECT_EQ(store.runs()[0].strategy, "auto");
    EXPECT_EQ(store.runs()[0].strategy_chosen, kAutoSearchStrategy);
    EXPECT_EQ(store.runs()[0].strategy_text(), std::string("auto (") + kAutoSearchStrategy + ")");
  }
  // A budget the space fits in: all of it, in random order.
  r = run({"tune", "--replay", conv(), "--budget-evals", "274", "--db", "c.db"});
  ASSERT_EQ(r.code, 0) << r;
  EXPECT_TRUE(
      contains(r.err,
               "strategy auto (random: all 274 valid configurations fit within the budget of "
               "274 evaluations: each is measured, in a seeded random order)"))
      << r;
  EXPECT_TRUE(contains(r.out, "274 trials")) << r;
  // Options go to a named strategy.
  r = run({"tune", "--replay", conv(), "--budget-evals", "30", "--strategy-option", "popsize=8",
           "--db", "d.db"});
  EXPECT_EQ(r.code, 2) << r;
  EXPECT_TRUE(contains(r.err, "strategy 'auto' has no option 'popsize'")) << r;
}

// An effort level sets the budget and the stagnation stop of a search that has none; what the
// user gives wins; an unknown level is refused before anything is written.
TEST_F(AutoStrategyCli, AnEffortLevelSetsTheBudgetAndStagnationStopOfASearch) {
  const EffortLevel& quick = effort_level("quick");
  ASSERT_LT(quick.evaluations, 274u);  // the recorded space is larger than quick's budget
  auto r = run({"tune", "--replay", conv(), "--effort", "quick", "--db", "q.db", "--json"});
  ASSERT_EQ(r.code, 0) << r;
  auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j.at("effort"), "quick");
  EXPECT_EQ(j.at("strategy_chosen"), kAutoSearchStrategy);
  const auto trials = j.at("trials").get<std::uint64_t>();
  EXPECT_LE(trials, quick.evaluations);
  EXPECT_TRUE(j.at("stagnated").get<bool>() || trials == quick.evaluations) << r.out;
  {
    Store store = Store::open(dir_ / "q.db", Store::Mode::kReadOnly);
    const auto budget = nlohmann::json::parse(store.runs().at(0).budget);
    EXPECT_EQ(budget.at("evaluations"), quick.evaluations);
    EXPECT_EQ(budget.at("stagnation"), quick.stagnation);
  }
  // Without the stagnation stop, the whole budget.
  r = run({"tune", "--replay", conv(), "--effort", "quick", "--budget-stagnation", "0", "--db",
           "q0.db", "--json"});
  ASSERT_EQ(r.code, 0) << r;
  EXPECT_EQ(nlohmann::json::parse(r.out).at("trials"), quick.evaluations);
  // A budget of the user's: no stagnation stop unless asked for.
  r = run({"tune", "--replay", conv(), "--effort", "quick", "--budget-evals", "40", "--db", "b.db",
           "--json"});
  ASSERT_EQ(r.code, 0) << r;
  j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j.at("trials"), 40);
  EXPECT_FALSE(j.at("stagnated").get<bool>());
  // A named strategy runs as asked.
  r = run({"tune", "--replay", conv(), "--effort", "quick", "--strategy", "brute_force", "--db",
           "n.db"});
  ASSERT_EQ(r.code, 0) << r;
  EXPECT_TRUE(contains(r.out, "274 trials")) << r;
  // thorough's budget holds the whole space: each configuration, no stagnation stop.
  r = run({"tune", "--replay", conv(), "--effort", "thorough", "--db", "t.db", "--json"});
  ASSERT_EQ(r.code, 0) << r;
  j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j.at("trials"), 274);
  EXPECT_FALSE(j.at("stagnated").get<bool>());
  // A job file may set it; --effort wins.
  const std::string restrictions = test::read_file(fs::path(KTUNE_SOURCE_DIR) / "configs" /
                                                   "replay" / "convolution_kernel.toml");
  test::write_file(dir_ / "quick.toml", "effort = \"quick\"\n" + restrictions);
  r = run({"tune", "--config", "quick.toml", "--replay", conv(), "--db", "jq.db"});
  ASSERT_EQ(r.code, 0) << r;
  EXPECT_TRUE(contains(r.err, fmt::format("(the quick effort's budget, ending after {} "
                                          "evaluations without an improvement beyond the noise)",
                                          quick.stagnation)))
      << r;
  r = run({"tune", "--config", "quick.toml", "--effort", "thorough", "--replay", conv(), "--db",
           "jt.db"});
  ASSERT_EQ(r.code, 0) << r;
  EXPECT_TRUE(contains(r.out, "274 trials")) << r;
  // Unknown levels: a usage error on the command line, an input error in a job file.
  r = run({"tune", "--replay", conv(), "--effort", "fast", "--db", "x.db"});
  EXPECT_EQ(r.code, 2) << r;
  EXPECT_TRUE(contains(r.err, "--effort 'fast': expected quick, default, thorough")) << r;
  EXPECT_FALSE(fs::exists(dir_ / "x.db"));
  test::write_file(dir_ / "slow.toml", "effort = \"slow\"\n" + restrictions);
  r = run({"tune", "--config", "slow.toml", "--replay", conv(), "--db", "y.db"});
  EXPECT_EQ(r.code, 3) << r;
  EXPECT_TRUE(contains(r.err, "slow.toml: effort 'slow': expected quick, default, thorough")) << r;
  EXPECT_FALSE(fs::exists(dir_ / "y.db"));
  test::write_file(dir_ / "neg.toml", restrictions + "[budget]\nstagnation = -1\n");
  r = run({"tune", "--config", "neg.toml", "--replay", conv(), "--db", "z.db"});
  EXPECT_EQ(r.code, 3) << r;
  EXPECT_TRUE(contains(r.err, "budget.stagnation")) << r;
}

TEST_F(AutoStrategyCli, AJobFileMayNameItAndAnUnknownNameIsAnInputError) {
  // The replay job's restrictions, so that the space is the recorded one, plus strategy and budget.
  const std::string restrictions = test::read_file(fs::path(KTUNE_SOURCE_DIR) / "configs" /
                                                   "replay" / "convolution_kernel.toml");
  test::write_file(dir_ / "auto.toml",
                   restrictions + "[strategy]\nname = \"auto\"\n[budget]\nevaluations = 25\n");
  EXPECT_EQ(load_job((dir_ / "auto.toml").string()).strategy, "auto");
  auto r = run({"tune", "--config", "auto.toml", "--replay", conv(), "--db", "j.db"});
  ASSERT_EQ(r.code, 0) << r;
  EXPECT_TRUE(
      contains(r.err, std::string("strategy auto (") + kAutoSearchStrategy + ": a budget of 25"))
      << r;
  EXPECT_TRUE(contains(r.out, "25 trials")) << r;
  // The command line says the same as the library, with the input error's exit code.
  test::write_file(dir_ / "typo.toml", "kernel = \"reduce\"\n[strategy]\nname = \"genetic\"\n");
  r = run({"tune", "--config", "typo.toml", "--db", "t.db"});
  EXPECT_EQ(r.code, 3) << r;
  EXPECT_TRUE(contains(r.err, "strategy.name 'genetic' is not a strategy; did you mean")) << r;
  EXPECT_FALSE(fs::exists(dir_ / "t.db"));

  test::write_file(dir_ / "bad.toml",
                   "kernel = \"reduce\"\n[strategy]\nname = \"simulated_anealing\"\n");
  // The file reads; resolving the job refuses the name, naming the file.
  const JobFile bad = load_job((dir_ / "bad.toml").string());
  EXPECT_EQ(bad.strategy, "simulated_anealing");
  try {
    Registry registry;
    register_builtin_kernels(registry);
    (void)resolve_job(registry, bad, JobOverrides{});
    FAIL() << "an unknown strategy was accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kInput);
    EXPECT_TRUE(contains(e.what(), "bad.toml")) << e.what();
    EXPECT_TRUE(contains(e.what(), "'simulated_anealing'")) << e.what();
    EXPECT_TRUE(contains(e.what(), "auto, brute_force")) << e.what();
  }
}

}  // namespace
}  // namespace ktune
