// Problem sets: values, lists, geometric ranges and derived parameters, their grid, the refusals
// of what cannot be a set, and the order in which a family is tuned.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "ktune/error.h"
#include "ktune/problem_set.h"

namespace ktune {
namespace {

using ::testing::HasSubstr;

std::vector<Problem> grid(const std::vector<std::pair<std::string, std::string>>& texts) {
  ProblemSet set;
  for (const auto& [name, text] : texts) set.set(name, text, "--problem");
  return set.problems();
}

std::vector<std::int64_t> values(const std::string& text) {
  std::vector<std::int64_t> out;
  for (const Problem& p : grid({{"n", text}})) out.push_back(p.at("n"));
  return out;
}

void expect_refused(const std::vector<std::pair<std::string, std::string>>& texts,
                    const std::string& message) {
  try {
    (void)grid(texts);
    ADD_FAILURE() << "accepted: " << texts.back().second;
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kUsage);
    EXPECT_THAT(e.what(), HasSubstr(message)) << texts.back().second;
  }
}

TEST(ProblemSet, AValueAListAndRanges) {
  EXPECT_EQ(values("2**20"), (std::vector<std::int64_t>{1 << 20}));
  EXPECT_EQ(values("[2**18, 2**20, 3000]"), (std::vector<std::int64_t>{1 << 18, 1 << 20, 3000}));
  EXPECT_EQ(values(" [ 7 ] "), (std::vector<std::int64_t>{7}));
  EXPECT_EQ(values("2**18..2**22"),
            (std::vector<std::int64_t>{1 << 18, 1 << 19, 1 << 20, 1 << 21, 1 << 22}));
  EXPECT_EQ(values("2**18..2**24..4"),
            (std::vector<std::int64_t>{1 << 18, 1 << 20, 1 << 22, 1 << 24}));
  // The end is kept only where the factor reaches it.
  EXPECT_EQ(values("1..100..10"), (std::vector<std::int64_t>{1, 10, 100}));
  EXPECT_EQ(values("3..20"), (std::vector<std::int64_t>{3, 6, 12}));
  EXPECT_EQ(values("5..5"), (std::vector<std::int64_t>{5}));
  // Near the top of the 64-bit range the range ends instead of overflowing.
  EXPECT_EQ(values("2**61..9223372036854775807"),
            (std::vector<std::int64_t>{std::int64_t{1} << 61, std::int64_t{1} << 62}));
}

TEST(ProblemSet, TheGridOfSeveralParametersTheLastVaryingFastest) {
  const auto problems = grid({{"rows", "[1, 2]"}, {"cols", "[10, 20, 30]"}});
  ASSERT_EQ(problems.size(), 6u);
  // By name: cols before rows, so rows varies fastest.
  EXPECT_EQ(problems[0], (Problem{{"cols", 10}, {"rows", 1}}));
  EXPECT_EQ(problems[1], (Problem{{"cols", 10}, {"rows", 2}}));
  EXPECT_EQ(problems[5], (Problem{{"cols", 30}, {"rows", 2}}));
}

TEST(ProblemSet, ADerivedParameterFollowsTheOthers) {
  const auto square = grid({{"rows", "1024..4096"}, {"cols", "rows"}});
  ASSERT_EQ(square.size(), 3u);
  for (const Problem& p : square) EXPECT_EQ(p.at("cols"), p.at("rows"));
  const auto conv = grid({{"h", "[512, 1024]"}, {"w", "2 * h"}, {"f", "15"}});
  ASSERT_EQ(conv.size(), 2u);
  EXPECT_EQ(conv[1], (Problem{{"f", 15}, {"h", 1024}, {"w", 2048}}));
  // A later value for a parameter replaces the earlier one (the command line over a job file).
  ProblemSet set;
  set.set("n", "[1, 2, 3]", "job.toml: problem");
  set.set("n", std::int64_t{8});
  EXPECT_EQ(set.problems(), (std::vector<Problem>{{{"n", 8}}}));
}

TEST(ProblemSet, WhatCannotBeASetIsRefusedByName) {
  expect_refused({{"n", "[]"}}, "--problem n: an empty list");
  expect_refused({{"n", "[1, , 2]"}}, "--problem n: a value is missing");
  expect_refused({{"n", "[1.5]"}}, "--problem n: 1.5 is not a 64-bit integer");
  expect_refused({{"n", "0..8"}}, "a range starts at 1 or more, not 0");
  expect_refused({{"n", "8..4"}}, "the range 8..4 does not increase");
  expect_refused({{"n", "1..8..1"}}, "a range's factor is 2 or more, not 1");
  expect_refused({{"n", "1..8..2..3"}}, "expected FROM..TO or FROM..TO..FACTOR");
  expect_refused({{"n", "1.."}}, "a value is missing");
  expect_refused({{"n", "abc"}}, "--problem n:");
  expect_refused({{"n", "2**"}}, "--problem n:");
  expect_refused({{"rows", "[1, 2]"}, {"cols", "depth"}}, "unknown name 'depth'");
  // A derived parameter may not lean on another derived one.
  expect_refused({{"a", "4"}, {"b", "a"}, {"c", "b"}}, "--problem");
  // Sizes: a list or range of more than the limit, and a grid past it.
  expect_refused({{"n", "[" + std::string(2000, '1').insert(1, ",") + "]"}}, "--problem n:");
  expect_refused({{"a", "1..2**40"}, {"b", "1..2**40"}}, "more than 1024 problems");
}

TEST(FamilyOrder, StartsInTheMiddleAndGrowsToTheNearest) {
  std::vector<Problem> sizes;
  for (int e : {18, 20, 22, 24, 26, 28}) sizes.push_back({{"n", std::int64_t{1} << e}});
  const std::vector<std::size_t> order = family_order(sizes);
  ASSERT_EQ(order.size(), sizes.size());
  // The medoid of six evenly spaced sizes is the third (ties to the earlier); then each next one
  // is a neighbour of what was tuned, the earlier of two as near.
  EXPECT_EQ(order.front(), 2u);
  std::vector<bool> seen(sizes.size(), false);
  for (std::size_t i : order) {
    EXPECT_FALSE(seen[i]);
    seen[i] = true;
  }
  EXPECT_EQ(order, (std::vector<std::size_t>{2, 1, 0, 3, 4, 5}));
  EXPECT_TRUE(family_order({}).empty());
  EXPECT_EQ(family_order({{{"n", 5}}}), (std::vector<std::size_t>{0}));
  // The nearest tuned problem, in log2 of each parameter.
  EXPECT_EQ(nearest_problem({{"n", 1 << 21}}, {{{"n", 1 << 18}}, {{"n", 1 << 22}}}), 1u);
  EXPECT_EQ(nearest_problem({{"n", 1}}, {}), 0u);
}

}  // namespace
}  // namespace ktune
