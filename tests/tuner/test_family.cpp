// `ktune tune` over a family of problems, on the recordings of several sizes (db/recordings/sizes,
// replayed: no GPU): the order, one run each, the transfer from the problems tuned before, the
// JSON, and the refusals of what a family cannot take.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <vector>

#include "cli_test_util.h"
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
  const std::vector<RunRecord> runs = store.runs();
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

}  // namespace
}  // namespace ktune
