// `ktune tune` over a family of problems, on the recordings of several sizes (db/recordings/sizes,
// replayed: no GPU): the order, one run each, the transfer from the problems tuned before, the
// JSON, and the refusals of what a family cannot take.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <vector>

#include "cli_test_util.h"
#include "ktune/error.h"
#include "ktune/family.h"
#include "ktune/store.h"

namespace ktune {
namespace {

namespace fs = std::filesystem;
using test::contains;

std::string sized(const std::string& name) {
  return (fs::path(KTUNE_SOURCE_DIR) / "db" / "recordings" / "sizes" / name).string();
}

class Family : public ::testing::Test {
 protected:
  test::CliResult run(std::vector<std::string> args) {
    return test::run_ktune(args, dir_.path(), dir_ / "cache");
  }
  std::vector<std::string> reduce_family(const std::string& problem) {
    return {"tune",
            "--config",
            (fs::path(KTUNE_SOURCE_DIR) / "configs" / "reduce.toml").string(),
            "--problem",
            problem,
            "--replay",
            sized("reduce-NVIDIA_H200-n=262144.json.gz"),
            "--replay",
            sized("reduce-NVIDIA_H200-n=1048576.json.gz"),
            "--replay",
            sized("reduce-NVIDIA_H200-n=4194304.json.gz"),
            "--strategy",
            "random",
            "--budget-evals",
            "40",
            "--db",
            "family.db"};
  }
  test::TempDir dir_;
};

TEST_F(Family, EachProblemIsTunedOnceInFamilyOrderWithTheOthersAsItsOpening) {
  std::vector<std::string> args = reduce_family("n=2**18..2**22..4");
  args.push_back("--json");
  const test::CliResult r = run(args);
  ASSERT_EQ(r.code, 0) << r;
  const nlohmann::json j = nlohmann::json::parse(r.out);
  const nlohmann::json& members = j.at("family");
  ASSERT_EQ(members.size(), 3u) << j.dump();
  // The middle size first, then its neighbours.
  EXPECT_EQ(members[0].at("problem"), "n=1048576");
  EXPECT_EQ(members[1].at("problem"), "n=262144");
  EXPECT_EQ(members[2].at("problem"), "n=4194304");
  for (const auto& m : members) {
    EXPECT_EQ(m.at("trials"), 40) << m.dump();
    EXPECT_EQ(m.at("recording").at("device"), "NVIDIA H200");
    EXPECT_TRUE(m.contains("best")) << m.dump();
  }
  // One run each; the first has nothing to transfer from, the others open with what the runs
  // before them found.
  Store store = Store::open(dir_ / "family.db", Store::Mode::kReadOnly);
  std::vector<RunRecord> runs;
  for (RunRecord& run : store.runs())
    if (run.strategy != "listed") runs.push_back(std::move(run));  // the cross-measurement's
  ASSERT_EQ(runs.size(), 3u);
  std::vector<std::size_t> warm;
  for (const RunRecord& run : runs) {
    std::size_t n = 0;
    for (const TrialRecord& t : store.trials_of_run(run.id)) n += t.kind == TrialKind::kWarmStart;
    warm.push_back(n);
  }
  EXPECT_EQ(warm[0], 0u);
  EXPECT_GT(warm[1], 0u);
  EXPECT_GT(warm[2], 0u);
}

TEST_F(Family, TheTableSaysEachProblemsBest) {
  const test::CliResult r = run(reduce_family("n=[2**18, 2**22]"));
  ASSERT_EQ(r.code, 0) << r;
  EXPECT_TRUE(contains(r.out, "family of 2 problems of reduce, tuned in this order:")) << r;
  EXPECT_TRUE(contains(r.out, "[n=262144]")) << r;
  EXPECT_TRUE(contains(r.out, "[n=4194304]")) << r;
  EXPECT_TRUE(contains(r.err, "family 1/2: replaying reduce")) << r;
  EXPECT_TRUE(contains(r.err, "family 2/2: replaying reduce")) << r;
}

TEST_F(Family, WhatAFamilyCannotTakeIsRefusedBeforeAnythingIsWritten) {
  // A problem without its recording.
  auto r = run(reduce_family("n=[2**18, 2**24]"));
  EXPECT_EQ(r.code, 2) << r;
  EXPECT_TRUE(contains(r.err, "none of the 3 recordings holds the problem [n=16777216]")) << r;
  // A timeline is of one run.
  auto args = reduce_family("n=[2**18, 2**20]");
  args.insert(args.end(), {"--trace", "t.json"});
  r = run(args);
  EXPECT_EQ(r.code, 2) << r;
  EXPECT_TRUE(contains(r.err, "--trace takes one problem")) << r;
  // Several recordings for one problem.
  r = run(reduce_family("n=2**18"));
  EXPECT_EQ(r.code, 2) << r;
  EXPECT_TRUE(contains(r.err, "several recordings are for a family of problems")) << r;
  // A set where a command takes one problem; a malformed set.
  r = run({"space", "reduce", "--arch", "sm_90", "--problem", "n=[2**18,2**20]"});
  EXPECT_EQ(r.code, 2) << r;
  EXPECT_TRUE(contains(r.err, "2 problems given; several are for `ktune tune`")) << r;
  r = run({"tune", "reduce", "--problem", "n=2**20..2**18", "--db", "x.db"});
  EXPECT_EQ(r.code, 2) << r;
  EXPECT_TRUE(contains(r.err, "--problem n: the range 1048576..262144 does not increase")) << r;
  EXPECT_FALSE(fs::exists(dir_ / "family.db"));
  EXPECT_FALSE(fs::exists(dir_ / "x.db"));
}

TEST_F(Family, ItsCandidatesAreMeasuredAtEveryProblemAndItsSelectorAnswersTheOthers) {
  std::vector<std::string> args = reduce_family("n=2**18..2**22..4");
  args.push_back("--json");
  const test::CliResult r = run(args);
  ASSERT_EQ(r.code, 0) << r;
  const nlohmann::json sel = nlohmann::json::parse(r.out).at("selector");
  EXPECT_EQ(sel.at("problems"), 3);
  EXPECT_GE(sel.at("candidates").get<int>(), 3);
  EXPECT_LE(sel.at("candidates").get<int>(), 24);  // at most 8 of each problem
  EXPECT_GT(sel.at("held_out_mean").get<double>(), 0.0);
  EXPECT_LE(sel.at("held_out_mean").get<double>(), 1.0);

  // One run of the listed strategy per problem, proposing every candidate valid there.
  Store store = Store::open(dir_ / "family.db", Store::Mode::kReadOnly);
  const auto selector = store.selector("reduce", store.devices().at(0).id);
  ASSERT_TRUE(selector);
  EXPECT_TRUE(selector->replayed);
  std::size_t listed = 0;
  for (const RunRecord& run : store.runs()) {
    if (run.strategy != "listed") continue;
    ++listed;
    EXPECT_EQ(run.status, RunStatus::kFinished);
  }
  EXPECT_EQ(listed, 3u);
  for (const SelectorRow& row : selector->selector.rows)
    for (double t : row.time_ms) EXPECT_TRUE(std::isfinite(t)) << row.key;

  // An untuned problem within the range: the selector's pick; beyond it, nothing.
  const test::CliResult inside =
      run({"best", "reduce", "--problem", "n=2**19", "--db", "family.db", "--json"});
  ASSERT_EQ(inside.code, 0) << inside;
  const nlohmann::json answer = nlohmann::json::parse(inside.out).at("results").at(0);
  EXPECT_EQ(answer.at("match"), "selector");
  const auto& candidates = selector->selector.candidates;
  EXPECT_NE(std::find(candidates.begin(), candidates.end(), answer.at("key").get<std::string>()),
            candidates.end());
  const test::CliResult text = run({"best", "reduce", "--problem", "n=2**21", "--db", "family.db"});
  ASSERT_EQ(text.code, 0) << text;
  EXPECT_TRUE(contains(text.out, "not tuned; the selector of the 3 tuned problems picks")) << text;
  const test::CliResult beyond =
      run({"best", "reduce", "--problem", "n=2**23", "--db", "family.db"});
  EXPECT_EQ(beyond.code, 1) << beyond;
  EXPECT_TRUE(contains(beyond.err, "no best configuration of reduce for [n=8388608]")) << beyond;
  EXPECT_TRUE(contains(beyond.err, "; its family on NVIDIA H200 covers n=262144..4194304"))
      << beyond;

  // A merged database answers the same.
  ASSERT_EQ(run({"merge", "family.db", "-o", "fleet.db"}).code, 0);
  const test::CliResult merged =
      run({"best", "reduce", "--problem", "n=2**19", "--db", "fleet.db", "--json"});
  ASSERT_EQ(merged.code, 0) << merged;
  EXPECT_EQ(nlohmann::json::parse(merged.out).at("results").at(0).at("key"), answer.at("key"));
}

TEST_F(Family, TheReportShowsEachSizesBestAndThePickWithItLeftOut) {
  ASSERT_EQ(run(reduce_family("n=2**18..2**22..4")).code, 0);
  const test::CliResult r = run({"report", "--db", "family.db", "--format", "json"});
  ASSERT_EQ(r.code, 0) << r;
  const nlohmann::json families = nlohmann::json::parse(r.out).at("families");
  ASSERT_EQ(families.size(), 1u) << r.out;
  EXPECT_EQ(families[0].at("kernel"), "reduce");
  EXPECT_EQ(families[0].at("size"), "n");
  const nlohmann::json& sizes = families[0].at("sizes");
  ASSERT_EQ(sizes.size(), 3u);
  EXPECT_EQ(sizes[0].at("problem"), "n=262144");  // by size
  EXPECT_EQ(sizes[2].at("problem"), "n=4194304");
  for (const auto& s : sizes) {
    EXPECT_GT(s.at("best_ms").get<double>(), 0.0);
    EXPECT_GT(s.at("held_out_performance").get<double>(), 0.0);
    EXPECT_LE(s.at("held_out_performance").get<double>(), 1.0);
  }
  const test::CliResult html = run({"report", "--db", "family.db", "-o", "report.html"});
  ASSERT_EQ(html.code, 0) << html;
  const std::string page = test::read_file(dir_ / "report.html");
  EXPECT_TRUE(contains(page, "data-kind=\"family-times\"")) << "the plot of the best times";
  EXPECT_TRUE(contains(page, "data-kind=\"family-held-out\"")) << "the plot of the held-out picks";
}

TEST_F(Family, NoSelectorTunesTheProblemsAlone) {
  std::vector<std::string> args = reduce_family("n=2**18..2**22..4");
  args.insert(args.end(), {"--no-selector", "--json"});
  const test::CliResult r = run(args);
  ASSERT_EQ(r.code, 0) << r;
  EXPECT_FALSE(nlohmann::json::parse(r.out).contains("selector"));
  Store store = Store::open(dir_ / "family.db", Store::Mode::kReadOnly);
  EXPECT_EQ(store.runs().size(), 3u);
  EXPECT_FALSE(store.selector("reduce", store.devices().at(0).id));
  EXPECT_EQ(run({"best", "reduce", "--problem", "n=2**19", "--db", "family.db"}).code, 1);
}

TEST_F(Family, AJobFileMayHoldTheFamily) {
  const std::string job = (dir_ / "family.toml").string();
  test::write_file(job,
                   "kernel = 'transpose'\n[problem]\nrows = [1024, 2048]\ncols = 'rows'\n"
                   "[strategy]\nname = 'brute_force'\n");
  std::vector<std::string> args = {"tune", "--config", job, "--db", "t.db", "--json"};
  for (const char* name : {"transpose-NVIDIA_H200-rows=1024,cols=1024.json.gz",
                           "transpose-NVIDIA_H200-rows=2048,cols=2048.json.gz"})
    args.insert(args.end(), {"--replay", sized(name)});
  const test::CliResult r = run(args);
  ASSERT_EQ(r.code, 0) << r;
  const nlohmann::json j = nlohmann::json::parse(r.out);
  ASSERT_EQ(j.at("family").size(), 2u);
  std::set<std::string> problems;
  for (const auto& m : j.at("family")) {
    problems.insert(m.at("problem").get<std::string>());
    EXPECT_EQ(m.at("trials"), 48);
  }
  EXPECT_EQ(problems, (std::set<std::string>{"rows=1024,cols=1024", "rows=2048,cols=2048"}));
  // A command of one problem takes the job narrowed to one.
  const test::CliResult one =
      run({"space", "--config", job, "--arch", "sm_90", "--problem", "rows=1024"});
  EXPECT_EQ(one.code, 0) << one;
  const test::CliResult many = run({"space", "--config", job, "--arch", "sm_90"});
  EXPECT_EQ(many.code, 2) << many;
  EXPECT_TRUE(contains(many.err, "a family of 2 problems")) << many;
}

// Each run's trials in the order the family ran them: the tuning runs, then the listed runs of
// the cross-measurement.
std::vector<std::vector<TrialRecord>> trials_by_run(const Store& store, bool listed) {
  std::vector<std::vector<TrialRecord>> out;
  for (const RunRecord& run : store.runs())
    if ((run.strategy == "listed") == listed) out.push_back(store.trials_of_run(run.id));
  return out;
}

std::size_t retimed(const std::vector<TrialRecord>& trials) {
  return static_cast<std::size_t>(std::count_if(
      trials.begin(), trials.end(), [](const auto& t) { return t.kind == TrialKind::kRetime; }));
}

TEST_F(Family, TheFinalistsAreRetimedOnceAtTheCrossMeasurement) {
  ASSERT_EQ(run(reduce_family("n=2**18..2**22..4")).code, 0);
  {
    Store store = Store::open(dir_ / "family.db", Store::Mode::kReadOnly);
    for (const auto& trials : trials_by_run(store, false)) EXPECT_EQ(retimed(trials), 0u);
    const auto cross = trials_by_run(store, true);
    ASSERT_EQ(cross.size(), 3u);
    for (const auto& trials : cross) EXPECT_EQ(retimed(trials), 5u);  // --retime-top's default
  }
  // Without the cross-measurement each tuning run re-times its own.
  std::vector<std::string> args = reduce_family("n=2**18..2**22..4");
  args.back() = "alone.db";
  args.push_back("--no-selector");
  ASSERT_EQ(run(args).code, 0);
  Store store = Store::open(dir_ / "alone.db", Store::Mode::kReadOnly);
  for (const auto& trials : trials_by_run(store, false)) EXPECT_EQ(retimed(trials), 5u);
}

TEST_F(Family, AFamilyBudgetIsSharedByItsTuningRuns) {
  std::vector<std::string> args = reduce_family("n=2**18..2**22..4");
  args.insert(args.end(), {"--family-budget-evals", "100", "--json"});
  const test::CliResult r = run(args);  // --budget-evals 40 per problem as well
  ASSERT_EQ(r.code, 0) << r;
  std::vector<int> trials;
  const nlohmann::json j = nlohmann::json::parse(r.out);
  for (const auto& m : j.at("family")) trials.push_back(m.at("trials").get<int>());
  EXPECT_EQ(trials, (std::vector<int>{33, 33, 34}));

  // Fewer evaluations than problems; a family budget for one problem.
  args = reduce_family("n=2**18..2**22..4");
  args.back() = "refused.db";
  args.insert(args.end(), {"--family-budget-evals", "2"});
  auto refused = run(args);
  EXPECT_EQ(refused.code, 2) << refused;
  EXPECT_TRUE(contains(refused.err,
                       "a family of 3 problems needs at least one evaluation per "
                       "problem"))
      << refused;
  refused = run({"tune", "reduce", "--family-budget-time", "10", "--db", "refused.db"});
  EXPECT_EQ(refused.code, 2) << refused;
  EXPECT_TRUE(contains(refused.err, "is for a family of problems; this tunes one")) << refused;
  EXPECT_FALSE(fs::exists(dir_ / "refused.db"));
}

TEST(FamilyBudget, EachRunGetsAnEqualShareOfWhatTheRunsBeforeItLeft) {
  Budget per_problem;
  per_problem.evaluations = 50;
  FamilyBudget evals(100, std::nullopt, 4);
  EXPECT_EQ(evals.next(per_problem).evaluations, 25u);
  evals.spent(10, 1);  // the first stopped early: the other three share 90
  EXPECT_EQ(evals.next(per_problem).evaluations, 30u);
  evals.spent(30, 1);
  evals.spent(30, 1);
  EXPECT_EQ(evals.next(per_problem).evaluations, 30u);
  EXPECT_EQ(FamilyBudget(1000, std::nullopt, 4).next(per_problem).evaluations, 50u);  // the cap

  FamilyBudget time(std::nullopt, 40.0, 4);
  EXPECT_DOUBLE_EQ(time.next(Budget{}).seconds, 10.0);
  time.spent(1, 39.5);  // overran: the rest get at least a tenth of an equal split each
  EXPECT_DOUBLE_EQ(time.next(Budget{}).seconds, 1.0);
  EXPECT_THROW(FamilyBudget(std::nullopt, 0.0, 2), Error);
  EXPECT_THROW(FamilyBudget(1, std::nullopt, 2), Error);
}

}  // namespace
}  // namespace ktune
