// The `bayes` strategy beyond the shared contract (test_strategy_conformance.cpp runs its first
// stage): the hand-over to every second stage without a configuration proposed twice, under a
// lookahead and out-of-order tells; determinism across the hand-over; options checked; the
// model doing its job on a smooth space, and with its kernel fitted, on a comb.
#include <gtest/gtest.h>

#include <cmath>
#include <memory>

#include "ktune/error.h"
#include "ktune/strategy.h"
#include "strategy_test_util.h"

namespace ktune {
namespace {

using test::DriveOptions;
using test::RecordedSpace;
using test::TellOrder;
using test::Trace;

const RecordedSpace& subset() { return test::convolution_subset(); }

// Four parameters of eight values, fastest at (5, 2, 6, 3), slower with the squared distance;
// one corner fails.
const RecordedSpace& bowl() {
  static const RecordedSpace r =
      test::synthetic_space("bowl", 4, 8, [](const Config& c) -> std::optional<double> {
        if (c[0] == 0 && c[1] == 0) return std::nullopt;
        const double target[] = {5, 2, 6, 3};
        double d2 = 0;
        for (std::size_t i = 0; i < 4; ++i)
          d2 += (static_cast<double>(c[i]) - target[i]) * (static_cast<double>(c[i]) - target[i]);
        return 1.0 + d2;
      });
  return r;
}

Trace run(const RecordedSpace& r, const DriveOptions& o) {
  auto s = make_strategy("bayes");
  return test::drive(*s, r, o);
}

TEST(BayesStrategy, HandsOverToEverySecondStageWithoutProposingAnythingTwice) {
  for (const std::string then :
       {"genetic_algorithm", "greedy_ils", "greedy_mls", "mls", "annealing"}) {
    for (const TellOrder order : {TellOrder::kFifo, TellOrder::kShuffled}) {
      DriveOptions o;
      o.budget = 120;
      o.lookahead = 8;
      o.order = order;
      o.options = {{"switch", "30"}, {"then", then}, {"elite", "10"}};
      const Trace t = run(subset(), o);
      EXPECT_EQ(t.invalid, 0u) << then;
      EXPECT_EQ(t.over_asked, 0u) << then;
      EXPECT_FALSE(t.stalled) << then;
      EXPECT_EQ(t.told, o.budget) << then;
      EXPECT_EQ(t.distinct.size(), t.asked.size()) << then << ": a configuration proposed twice";
    }
  }
}

TEST(BayesStrategy, IsDeterministicAcrossTheHandOver) {
  DriveOptions o;
  o.budget = 90;
  o.lookahead = 16;
  o.order = TellOrder::kShuffled;
  o.seed = 7;
  o.options = {{"switch", "25"}};
  const Trace a = run(subset(), o);
  const Trace b = run(subset(), o);
  EXPECT_EQ(a.asked, b.asked);
  EXPECT_EQ(a.asked.size(), o.budget);
}

TEST(BayesStrategy, TheSecondStageStartsFromTheBestOfTheFirst) {
  // The second stage never does worse than the first: the best of the first `switch`
  // evaluations is its warm start, and the run's best can only improve on it.
  DriveOptions first;
  first.budget = 30;
  first.options = {{"switch", "30"}};
  DriveOptions both = first;
  both.budget = 80;
  for (const std::uint64_t seed : {1, 2, 3}) {
    first.seed = both.seed = seed;
    const Trace a = run(subset(), first);
    const Trace b = run(subset(), both);
    ASSERT_TRUE(a.best_ms && b.best_ms);
    EXPECT_LE(*b.best_ms, *a.best_ms) << seed;
    // The first 30 proposals are the same: the hand-over changes nothing before it.
    ASSERT_GE(b.asked.size(), a.asked.size());
    EXPECT_TRUE(std::equal(a.asked.begin(), a.asked.end(), b.asked.begin())) << seed;
  }
}

TEST(BayesStrategy, AWarmStartIsFollowedByItsOwnRandomSample) {
  // The warm start's configurations come first and join the model; the random sample still
  // follows them, so two seeds go on differently (fed the warm start alone, the model would
  // make the same proposals for every seed, around the other GPUs' favourites only).
  DriveOptions o;
  o.budget = 20;
  o.lookahead = 1;
  const std::vector<Config> all = subset().space.enumerate();
  o.warm_start = {all[3], all[40], all[77], all[120], all[200], all[333]};
  std::vector<Trace> traces;
  for (const std::uint64_t seed : {1, 2}) {
    o.seed = seed;
    traces.push_back(run(subset(), o));
    const Trace& t = traces.back();
    ASSERT_GE(t.asked.size(), o.warm_start.size() + 5);
    EXPECT_TRUE(std::equal(o.warm_start.begin(), o.warm_start.end(), t.asked.begin())) << seed;
  }
  const auto after = static_cast<std::ptrdiff_t>(o.warm_start.size());
  EXPECT_FALSE(std::equal(traces[0].asked.begin() + after, traces[0].asked.begin() + after + 5,
                          traces[1].asked.begin() + after));
}

TEST(BayesStrategy, TheModelFindsTheOptimumOfASmoothSpaceQuickly) {
  // 4,096 configurations; random search would need about 2,000 evaluations on average.
  // Asked ahead, the outstanding proposals join the model at their predicted times. The model
  // alone, without the stall margin: with it (the default), a run that stalls next to the
  // optimum explores until proposal `stall_until` before it exploits (with 100 proposals, the
  // default until 2026-11-28, one of these ten runs found the optimum only at 101).
  for (const std::size_t lookahead : {1u, 8u}) {
    for (const std::uint64_t seed : {1, 2, 3, 4, 5}) {
      DriveOptions o;
      o.seed = seed;
      o.budget = 60;
      o.lookahead = lookahead;
      o.options = {{"xi_stall", "0"}};
      const Trace t = run(bowl(), o);
      ASSERT_TRUE(t.best_ms.has_value());
      EXPECT_EQ(t.best_key, bowl().optimum)
          << "lookahead " << lookahead << ", seed " << seed << ": best " << *t.best_ms;
    }
  }
}

// Four parameters of ten values: a bowl in p1 to p3, and in p0 a comb (even values three times
// faster than odd ones), so that p0's neighbouring values say nothing about each other; the
// fastest at (6, 7, 4, 2).
const RecordedSpace& comb() {
  static const RecordedSpace r =
      test::synthetic_space("comb", 4, 10, [](const Config& c) -> std::optional<double> {
        const auto at = [&](std::size_t p, double v) { return static_cast<double>(c[p]) - v; };
        const double teeth = (c[0] % 2 == 0 ? 1.0 : 3.0) + 0.02 * std::fabs(at(0, 6));
        return teeth *
               (1.0 + 0.1 * (at(1, 7) * at(1, 7) + at(2, 4) * at(2, 4) + at(3, 2) * at(3, 2)));
      });
  return r;
}

TEST(BayesStrategy, FittingEachParametersWidthFindsTheOptimumOfACombQuickly) {
  // 10,000 configurations. The fixed kernel takes p0 for smooth and misses the optimum within
  // 80 evaluations for 3 of these 10 seeds; fitted per parameter, p0's width goes to "the same
  // value or not" and every seed finds it within 35 (13 to 33 when this was written). Without
  // the stall margin, which would send some of these runs exploring until proposal
  // `stall_until` (4 of them when that was 100).
  for (const std::uint64_t seed : {1, 2, 3, 4, 5, 6, 7, 8, 9, 10}) {
    DriveOptions o;
    o.seed = seed;
    o.budget = 35;
    o.lookahead = 1;
    o.options = {{"fit", "5"}, {"fit_each", "1"}, {"xi_stall", "0"}};
    const Trace t = run(comb(), o);
    ASSERT_TRUE(t.best_ms.has_value());
    EXPECT_EQ(t.best_key, comb().optimum) << "seed " << seed << ": best " << *t.best_ms;
  }
}

// Four parameters of ten values. Where p0 and p1 are both at least 5 (2,500 configurations), a
// plateau: 1.3 to 1.33, whatever p2 and p3. Elsewhere a bowl around (2, 2, 5, 5) from 1.0 up to
// about 5.
const RecordedSpace& plateau() {
  static const RecordedSpace r =
      test::synthetic_space("plateau", 4, 10, [](const Config& c) -> std::optional<double> {
        const auto x = [&](std::size_t p) { return static_cast<double>(c[p]); };
        if (c[0] >= 5 && c[1] >= 5)
          return 1.3 + 0.001 * static_cast<double>((c[2] * 7 + c[3] * 3) % 31);
        const double d2 = (x(0) - 2) * (x(0) - 2) + (x(1) - 2) * (x(1) - 2) +
                          (x(2) - 5) * (x(2) - 5) + (x(3) - 5) * (x(3) - 5);
        return 1.0 + 0.05 * d2;
      });
  return r;
}

TEST(BayesStrategy, AStalledSearchLeavesAPlateauAndFindsTheBowlBeyondIt) {
  // Without the stall margin the model settles on the plateau (as wide as it is flat) for 7 of
  // these 10 seeds and never leaves it; with it (the defaults: 0.1 per stalled result for the
  // first 50 proposals), the search looks where the model is unsure while it stalls, and 6
  // seeds find the optimum within 130 evaluations (7 with the margin for the first 100
  // proposals, the default until 2026-11-28).
  const auto found = [](const char* xi_stall) {
    int hits = 0;
    for (std::uint64_t seed = 1; seed <= 10; ++seed) {
      DriveOptions o;
      o.seed = seed;
      o.budget = 130;
      o.lookahead = 1;
      if (xi_stall) o.options = {{"xi_stall", xi_stall}};
      const Trace t = run(plateau(), o);
      if (t.best_key == plateau().optimum) ++hits;
    }
    return hits;
  };
  EXPECT_LE(found("0"), 4);
  EXPECT_GE(found(nullptr), 6);
}

TEST(BayesStrategy, AFittedKernelStillProposesNothingTwiceAndIsDeterministic) {
  // The shape is refitted as results arrive, under a lookahead and out-of-order tells: the model
  // is rebuilt with the outstanding proposals at their believed times.
  DriveOptions o;
  o.budget = 120;
  o.lookahead = 8;
  o.order = TellOrder::kShuffled;
  o.seed = 3;
  o.options = {{"fit", "5"}, {"fit_each", "1"}, {"fit_range", "2"}, {"switch", "80"}};
  const Trace a = run(subset(), o);
  const Trace b = run(subset(), o);
  EXPECT_EQ(a.invalid, 0u);
  EXPECT_FALSE(a.stalled);
  EXPECT_EQ(a.told, o.budget);
  EXPECT_EQ(a.distinct.size(), a.asked.size()) << "a configuration proposed twice";
  EXPECT_EQ(a.asked, b.asked);
}

TEST(BayesStrategy, RefusesBadOptionsByName) {
  const std::vector<std::pair<std::map<std::string, std::string>, std::string>> cases = {
      {{{"then", "bayes"}}, "then"},        {{{"switch", "0"}}, "switch"},
      {{{"additive", "1.5"}}, "additive"},  {{{"lengthscale", "-1"}}, "lengthscale"},
      {{{"kernel", "cubic"}}, "kernel"},    {{{"fit_range", "9"}}, "fit_range"},
      {{{"fit_each", "2"}}, "fit_each"},    {{{"xi_stall", "-0.1"}}, "xi_stall"},
      {{{"stall_cap", "-1"}}, "stall_cap"}, {{{"stall_until", "x"}}, "stall_until"},
  };
  for (const auto& [options, name] : cases) {
    auto s = make_strategy("bayes");
    StrategyContext context;
    context.space = &subset().space;
    context.options = options;
    try {
      s->start(context);
      ADD_FAILURE() << name << ": accepted";
    } catch (const Error& e) {
      EXPECT_EQ(e.kind(), ErrorKind::kUsage);
      EXPECT_NE(std::string(e.what()).find("'" + name + "'"), std::string::npos) << e.what();
    }
  }
}

}  // namespace
}  // namespace ktune
