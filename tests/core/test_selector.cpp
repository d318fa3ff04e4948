// The run-time choice over problem sizes (ktune/selector.h): what it covers, what it picks
// between and beyond the tuned problems, its held-out picks, its JSON, and the candidates.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <nlohmann/json.hpp>

#include "ktune/error.h"
#include "ktune/selector.h"

namespace ktune {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

// Three candidates over n = 2^20 .. 2^28: "small" is the fastest at the small sizes, "large" at
// the large ones, "middle" never the fastest but never far off.
Selector two_regimes() {
  Selector s;
  s.candidates = {"small", "large", "middle"};
  s.configs = {R"({"c": 0})", R"({"c": 1})", R"({"c": 2})"};
  const double rows[][3] = {
      {1.0, 2.0, 1.2}, {1.0, 1.8, 1.2}, {1.5, 1.0, 1.2}, {2.0, 1.0, 1.2}, {2.5, 1.0, 1.2}};
  int n = 20;
  for (const auto& t : rows) {
    SelectorRow r;
    r.problem = {{"n", std::int64_t{1} << n}, {"m", 4}};
    r.key = "n=" + std::to_string(std::int64_t{1} << n) + ",m=4";
    r.time_ms = {t[0], t[1], t[2]};
    s.rows.push_back(r);
    n += 2;
  }
  s.held_out = s.leave_one_out();
  return s;
}

TEST(Selector, CoversTheFamilysRangeAndItsFixedParametersOnly) {
  const Selector s = two_regimes();
  EXPECT_TRUE(s.covers({{"n", 1 << 20}, {"m", 4}}));
  EXPECT_TRUE(s.covers({{"n", 3 << 22}, {"m", 4}}));
  EXPECT_TRUE(s.covers({{"n", 1 << 28}, {"m", 4}}));
  EXPECT_FALSE(s.covers({{"n", 1 << 19}, {"m", 4}}));            // below the range
  EXPECT_FALSE(s.covers({{"n", (1 << 28) + 1}, {"m", 4}}));      // above it
  EXPECT_FALSE(s.covers({{"n", 1 << 24}, {"m", 8}}));            // m is the same in every row
  EXPECT_FALSE(s.covers({{"n", 1 << 24}}));                      // a name missing
  EXPECT_FALSE(s.covers({{"n", 1 << 24}, {"m", 4}, {"k", 1}}));  // one more
  Selector one = s;
  one.rows.resize(1);
  EXPECT_FALSE(one.covers({{"n", 1 << 20}, {"m", 4}}));  // a family needs two problems
}

TEST(Selector, PicksEachRegimesBestAndTheTunedProblemsOwn) {
  const Selector s = two_regimes();
  EXPECT_EQ(s.candidates[s.pick({{"n", 1 << 20}, {"m", 4}})], "small");
  EXPECT_EQ(s.candidates[s.pick({{"n", 1 << 21}, {"m", 4}})], "small");
  EXPECT_EQ(s.candidates[s.pick({{"n", 1 << 27}, {"m", 4}})], "large");
  EXPECT_EQ(s.candidates[s.pick({{"n", 1 << 28}, {"m", 4}})], "large");
  // At each tuned problem, the fastest there.
  EXPECT_EQ(s.candidates[s.pick(s.rows[1].problem)], "small");
  EXPECT_EQ(s.candidates[s.pick(s.rows[3].problem)], "large");
}

TEST(Selector, ACandidateMissingAtAProblemIsNotPickedNearIt) {
  Selector s = two_regimes();
  for (SelectorRow& r : s.rows) r.time_ms[0] = kNaN;  // "small" never ran
  EXPECT_NE(s.candidates[s.pick({{"n", 1 << 20}, {"m", 4}})], "small");
  EXPECT_EQ(s.nearest_row({{"n", 1 << 20}, {"m", 4}}, 0), s.rows.size());
  EXPECT_EQ(s.nearest_row({{"n", 1 << 21}, {"m", 4}}, 1), 0u);
  EXPECT_EQ(s.nearest_row({{"n", 3 << 26}, {"m", 4}}, 1), 4u);
}

TEST(Selector, LeavesEachProblemOutAndSaysHowFastItsPickWasThere) {
  const Selector s = two_regimes();
  ASSERT_EQ(s.held_out.size(), 5u);
  EXPECT_EQ(s.held_out[0].problem_key, "n=1048576,m=4");
  for (const HeldOutPick& h : s.held_out) {
    EXPECT_GT(h.performance, 0.0);
    EXPECT_LE(h.performance, 1.0);
  }
  // Left out, the ends are answered by their neighbour's regime: exact there.
  EXPECT_DOUBLE_EQ(s.held_out[0].performance, 1.0);
  EXPECT_DOUBLE_EQ(s.held_out[4].performance, 1.0);
  EXPECT_LE(s.held_out_worst(), s.held_out_mean());
  EXPECT_TRUE(std::isnan(Selector{}.held_out_mean()));
  Selector two = s;
  two.rows.resize(2);
  EXPECT_TRUE(two.leave_one_out().empty());  // nothing to learn from with one left
}

TEST(Selector, ReadsBackWhatItWritesAndRefusesWhatIsNotASelector) {
  const Selector s = two_regimes();
  const Selector back = Selector::from_json(s.to_json(), "test");
  EXPECT_EQ(back.candidates, s.candidates);
  EXPECT_EQ(back.configs, s.configs);
  ASSERT_EQ(back.rows.size(), s.rows.size());
  EXPECT_EQ(back.rows[2].key, s.rows[2].key);
  EXPECT_EQ(back.rows[2].time_ms, s.rows[2].time_ms);
  EXPECT_DOUBLE_EQ(back.held_out_mean(), s.held_out_mean());
  Selector missing = s;
  missing.rows[1].time_ms[2] = kNaN;
  EXPECT_TRUE(std::isnan(Selector::from_json(missing.to_json(), "t").rows[1].time_ms[2]));

  const auto refused = [](nlohmann::json j, const std::string& what) {
    try {
      Selector::from_json(j, "db.sqlite: selector 3");
      ADD_FAILURE() << "accepted " << j.dump();
    } catch (const Error& e) {
      EXPECT_EQ(e.kind(), ErrorKind::kInput);
      EXPECT_NE(std::string(e.what()).find("db.sqlite: selector 3"), std::string::npos);
      EXPECT_NE(std::string(e.what()).find(what), std::string::npos) << e.what();
    }
  };
  nlohmann::json j = s.to_json();
  refused(nlohmann::json::object(), "unreadable selector");
  j["method"] = "tree";
  refused(j, "unknown selector method 'tree'");
  j = s.to_json();
  j["width"] = 0;
  refused(j, "width must be > 0");
  j = s.to_json();
  j["rows"][1]["time_ms"].erase(0);
  refused(j, "one time per candidate");
  j = s.to_json();
  j["rows"][1]["problem"] = {{"n", 4}};
  refused(j, "different problem parameters");
  j = s.to_json();
  j["held_out"][0]["pick"] = 7;
  refused(j, "names no candidate");
}

TEST(Selector, CandidatesAreEachProblemsBestFirstThenTheNextRanks) {
  const std::vector<std::vector<std::string>> ranked = {{"a", "b", "c"}, {"b", "d"}, {"e"}};
  EXPECT_EQ(selector_candidates(ranked, 8, 64),
            (std::vector<std::string>{"a", "b", "e", "d", "c"}));
  EXPECT_EQ(selector_candidates(ranked, 1, 64), (std::vector<std::string>{"a", "b", "e"}));
  EXPECT_EQ(selector_candidates(ranked, 8, 2), (std::vector<std::string>{"a", "b"}));
  EXPECT_TRUE(selector_candidates({}, 8, 64).empty());
}

}  // namespace
}  // namespace ktune
